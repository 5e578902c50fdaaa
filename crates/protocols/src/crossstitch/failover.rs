//! Fail-over of keys (crossstitch.md §4.1: "the keys that Server_{i+1} is hosting will
//! failover to Server_{i+1}'s replica"; the recovered server "will also synchronize
//! itself with its replica before resuming its original role").
//!
//! The paper names the fail-over but not its protocol; this is the one a careful
//! implementer needs for it to be safe when a "failed" server is only cut off:
//!
//! - **Views.** Each shard has a view ([`ShardView`]): its acting primary and the
//!   copies (members) that hold its data. A primary replicates its puts to the other
//!   members and the next position waits for their notifies, as in §3.5. View 0 is the
//!   layout's.
//! - **A witness per shard.** Two copies cannot tell a dead partner from a cut link, so
//!   a third server, the shard's witness ([`witness_of`], the nearest server holding no
//!   copy), orders view changes by compare-and-set on the view number: a replica that
//!   takes the shard over from a silent primary and a primary that drops a silent
//!   replica cannot both win. The witness keeps its table durably (one synced write per
//!   change, like the watermarks); a witness restarted with no state at all (a real
//!   cluster without a journal) agrees to nothing more, which costs fail-over, never
//!   safety.
//! - **Read floors instead of time leases.** A primary may serve a read at timestamp
//!   `ts` only once every other member has promised a floor above `ts` (`Lease` /
//!   `LeaseAck`, every sweep as a heartbeat, asked for ahead of the clock so reads
//!   rarely wait). A member that takes the shard over refuses writes below the highest
//!   floor it promised, so a deposed primary still serving reads below it cannot be
//!   contradicted by a write the new primary lets in. No clock is compared across
//!   servers: skew costs liveness, never safety.
//! - **Writes need the members.** A member refuses a put replicated in an older view or
//!   by a node that is not its view's primary (`ReplicaRefused`), so a deposed primary
//!   cannot commit a write. A primary that dropped a replica waives that replica's
//!   notifies for puts already sent (`Waive`): they live on the primary alone.
//! - **Who fails over.** A member that has not heard its primary's lease for
//!   `failover` proposes itself as primary without the old one; a primary that has not
//!   heard a member for `failover` proposes to drop it. The winner tells every node
//!   (`View`); positions (and clients) whose forward went to a primary that lost the
//!   shard and that have not been acknowledged abort at once (they could at their vote
//!   timeout), and new transactions go to the new primary.
//! - **Coming back.** A server that restarted, or learns it was dropped, re-syncs from
//!   the shard's primary; the primary first adds it back as a member at the witness,
//!   then sends its data, so every later put reaches it.
//! - **Hand-back.** The layout's primary of a shard, a member again with the data whole
//!   and no view change for `failover`, takes its role back ("before resuming its
//!   original role"): it stops raising the read floor it promises the acting primary
//!   (`handing`), waits for its clock to pass that floor, then proposes itself as
//!   primary with the acting primary kept as its replica. That is the take-over above
//!   with the old primary kept, so the same floor covers the reads the old primary
//!   served, and the same refusals stop its late puts; the wait only spares the
//!   transactions in flight a refusal by that floor. The acting primary parks
//!   executions above the last floor for the witness's round trip.

use super::*;

/// The witness of shard `s`: the server holding no copy of it that is nearest to its
/// first copy (`by_nearness`). `None` when every server holds a copy: the shard then
/// cannot fail over.
pub fn witness_of(layout: &meridian_core::Layout, s: meridian_core::ShardId) -> Option<NodeId> {
    let reps = layout.replicas(s);
    by_nearness(layout, reps[0]).into_iter().find(|x| !reps.contains(x))
}

/// The acting primary of shard `s` by the views known (the layout's first copy if
/// none is known).
pub(super) fn primary_in(views: &BTreeMap<u32, ShardView>, layout: &meridian_core::Layout, s: u32) -> NodeId {
    views
        .get(&s)
        .map_or_else(|| layout.primary(meridian_core::ShardId(s)), |v| v.primary)
}

/// The layout's view of shard `s` (view 0).
pub(super) fn first_view(layout: &meridian_core::Layout, s: u32) -> ShardView {
    let reps = layout.replicas(meridian_core::ShardId(s));
    ShardView {
        shard: s,
        view: 0,
        primary: reps[0],
        members: reps.to_vec(),
    }
}

/// Asks the witness of every shard that `ask` picks for its current view (answered
/// with a `CasReply`): a node whose forward to a primary went unanswered may have
/// missed the `View` that moved the primary's shards elsewhere, and would send every
/// later transaction of those shards to a dead server.
pub(super) fn ask_witnesses(env: &Env, ask: impl Fn(u32) -> bool, cx: &mut Ctx<'_, Msg>) {
    let layout = &env.layout;
    for s in (0..layout.topology.shards).filter(|s| ask(*s)) {
        if let Some(w) = witness_of(layout, meridian_core::ShardId(s)) {
            cx.send(w, Msg::ViewReq { shard: s });
        }
    }
}

impl Server {
    /// Shard `s`'s view as this server knows it.
    pub(super) fn view(&self, s: u32) -> ShardView {
        self.views
            .get(&s)
            .cloned()
            .unwrap_or_else(|| first_view(&self.env.layout, s))
    }

    /// The acting primary of shard `s`.
    pub(super) fn primary(&self, s: u32) -> NodeId {
        primary_in(&self.views, &self.env.layout, s)
    }

    /// The members of shard `s` (copies holding its data).
    pub(super) fn members(&self, s: u32) -> &[NodeId] {
        match self.views.get(&s) {
            Some(v) => &v.members,
            None => self.env.layout.replicas(meridian_core::ShardId(s)),
        }
    }

    /// Writes below this timestamp are refused on shard `s`: before the restart
    /// watermark (read timestamps lost in a crash) or below the floor promised to a
    /// primary this server took the shard over from.
    pub(super) fn write_floor(&self, s: u32) -> u64 {
        (self.forgot_before * TS_SCALE).max(self.shard_floor.get(&s).copied().unwrap_or(0))
    }

    /// Whether every other member of every shard this server is primary of has
    /// promised a read floor above `ts` (a stale shard serves nothing anyway: its
    /// missing promises must not hold up the others).
    pub(super) fn may_serve(&self, ts: u64) -> bool {
        let t = ts / TS_SCALE;
        self.mine.iter().all(|s| {
            self.primary(*s) != self.me
                || self.stale.contains(s)
                || self
                    .members(*s)
                    .iter()
                    .filter(|r| **r != self.me)
                    .all(|r| self.floor_acked.get(&(*s, *r)).is_some_and(|f| *f > t))
        })
    }

    /// Holds an execution until the members promise a floor above its timestamp, and
    /// asks them for one now.
    pub(super) fn park(&mut self, from: NodeId, m: Exec, cx: &mut Ctx<'_, Msg>) {
        let pos = m.chain.len();
        let want = m.ts / TS_SCALE + 2 * self.env.timeouts.sweep;
        if !self
            .parked
            .iter()
            .any(|(_, e, _)| e.txn == m.txn && e.chain.len() == pos)
        {
            self.parked.push((from, m, cx.now()));
        }
        if want > self.lease_floor {
            self.lease_floor = want;
            self.send_leases(cx);
        }
    }

    /// Runs the parked executions again (each parks again if still not covered).
    pub(super) fn unpark(&mut self, cx: &mut Ctx<'_, Msg>) {
        if self.parked.is_empty() {
            return;
        }
        for (from, m, _) in std::mem::take(&mut self.parked) {
            self.on_exec(from, m, cx);
        }
    }

    /// Asks every other member of the shards this server is primary of for the read
    /// floor (also the primary's heartbeat).
    pub(super) fn send_leases(&mut self, cx: &mut Ctx<'_, Msg>) {
        if self.restarting() {
            return;
        }
        let mut to: BTreeMap<NodeId, Vec<(u32, u32)>> = BTreeMap::new();
        for s in &self.mine {
            let v = self.view(*s);
            if v.primary == self.me && !self.stale.contains(s) {
                for r in v.members.iter().filter(|r| **r != self.me) {
                    to.entry(*r).or_default().push((*s, v.view));
                }
            }
        }
        for (r, views) in to {
            cx.send(
                r,
                Msg::Lease {
                    views,
                    floor: self.lease_floor,
                },
            );
        }
    }

    pub(super) fn on_lease(&mut self, from: NodeId, views: Vec<(u32, u32)>, floor: Time, cx: &mut Ctx<'_, Msg>) {
        if self.restarting() {
            // What it promised before a restart is gone: it promises again once the
            // primary's data (and floor) are here.
            return;
        }
        let now = cx.now();
        // Promises by floor: a shard being handed back keeps the floor promised.
        let mut agreed: BTreeMap<Time, Vec<(u32, u32)>> = BTreeMap::new();
        for (s, v) in views {
            if !self.mine.contains(&s) {
                continue;
            }
            let my = self.view(s);
            if my.view == v && my.primary == from && my.members.contains(&self.me) {
                let g = self.granted.entry(s).or_insert(0);
                if !self.handing.contains(&s) {
                    *g = (*g).max(floor);
                }
                let promised = *g;
                self.primary_heard.insert(s, now);
                agreed.entry(promised).or_default().push((s, v));
            } else if my.view > v {
                // The sender lost the shard: tell it.
                cx.send(from, Msg::View(my));
            }
        }
        for (floor, views) in agreed {
            cx.send(from, Msg::LeaseAck { views, floor });
        }
    }

    pub(super) fn on_lease_ack(&mut self, from: NodeId, views: Vec<(u32, u32)>, floor: Time, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        for (s, v) in views {
            let my = self.view(s);
            if my.view == v && my.primary == self.me && my.members.contains(&from) {
                let f = self.floor_acked.entry((s, from)).or_insert(0);
                *f = (*f).max(floor);
                self.member_heard.insert((s, from), now);
            }
        }
        self.unpark(cx);
    }

    /// Proposes view `new` of a shard to its witness (re-sent every sweep until it
    /// answers).
    pub(super) fn propose(&mut self, expect: u32, new: ShardView, cx: &mut Ctx<'_, Msg>) {
        let Some(w) = witness_of(&self.env.layout, meridian_core::ShardId(new.shard)) else {
            return;
        };
        cx.send(
            w,
            Msg::Cas {
                expect,
                new: new.clone(),
            },
        );
        self.cas.insert(new.shard, (expect, new));
    }

    /// The fail-over part of the sweep: heartbeats, and view changes for silent
    /// partners.
    pub(super) fn sweep_failover(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let t = self.env.timeouts.clone();
        // A parked execution whose predecessor gave up on it by now is dropped.
        self.parked.retain(|(_, _, at)| now.saturating_sub(*at) < t.vote);
        if self.restarting() {
            return;
        }
        // A copy dropped from a shard asks the shard's primary, every sweep, to take it
        // back and send it its data (it keeps serving the shards it is still a member
        // of). A view that lists it again is not enough: the data must have come.
        let ask: BTreeSet<NodeId> = self
            .stale
            .iter()
            .map(|s| self.primary(*s))
            .filter(|p| *p != self.me)
            .collect();
        for n in ask {
            cx.send(n, Msg::SyncReq);
        }
        self.lease_floor = self.lease_floor.max(now + 2 * t.sweep);
        self.send_leases(cx);
        let quiet = |heard: Option<&Time>, since: Time| {
            now.saturating_sub(heard.copied().unwrap_or(0).max(since)) >= t.failover
        };
        for s in self.mine.clone() {
            if let Some((expect, new)) = self.cas.get(&s).cloned() {
                self.propose(expect, new, cx);
                continue;
            }
            let v = self.view(s);
            if !v.members.contains(&self.me) || self.stale.contains(&s) {
                continue;
            }
            let new = if v.primary == self.me {
                let silent: Vec<NodeId> = v
                    .members
                    .iter()
                    .copied()
                    .filter(|r| *r != self.me && quiet(self.member_heard.get(&(s, *r)), self.watch_since))
                    .collect();
                if silent.is_empty() {
                    continue;
                }
                ShardView {
                    shard: s,
                    view: v.view + 1,
                    primary: self.me,
                    members: v.members.iter().copied().filter(|r| !silent.contains(r)).collect(),
                }
            } else if !quiet(self.primary_heard.get(&s), self.watch_since) {
                // Hand-back (§4.1, "before resuming its original role"): the layout's
                // primary, back as a member holding the data whole and with no view
                // change for `failover`, takes its role back from a live acting
                // primary, which stays a member. It is a take-over that keeps the old
                // primary, so the same floor covers the reads the old one served. It
                // first stops raising the floor it promises and waits for its clock to
                // pass it: its writes then start above every read the old primary
                // served, and transactions in flight are not refused by that floor.
                let home = first_view(&self.env.layout, s).primary == self.me;
                if !home || now.saturating_sub(self.watch_since) < t.failover || !v.members.contains(&v.primary) {
                    self.handing.remove(&s);
                    continue;
                }
                if self.handing.insert(s) || now <= self.granted.get(&s).copied().unwrap_or(0) {
                    continue;
                }
                ShardView {
                    shard: s,
                    view: v.view + 1,
                    primary: self.me,
                    members: v.members.clone(),
                }
            } else {
                self.handing.remove(&s);
                ShardView {
                    shard: s,
                    view: v.view + 1,
                    primary: self.me,
                    members: v.members.iter().copied().filter(|r| *r != v.primary).collect(),
                }
            };
            self.propose(v.view, new, cx);
        }
    }

    /// As the shard's witness: take `new` if it follows the view held here.
    pub(super) fn on_cas(&mut self, from: NodeId, expect: u32, new: ShardView, cx: &mut Ctx<'_, Msg>) {
        let s = new.shard;
        let Some(cur) = self.witnessed_view(s) else {
            return;
        };
        let layout = &self.env.layout;
        let copies = layout.replicas(meridian_core::ShardId(s));
        let ok = if cur == new {
            true
        } else if cur.view == expect
            && new.view == expect + 1
            && new.primary == from
            && cur.members.contains(&from)
            && new.members.contains(&from)
            && new.members.iter().all(|m| copies.contains(m))
        {
            // Durable before the answer leaves.
            cx.charge_log_sync(32);
            self.witnessed.insert(s, new.clone());
            true
        } else {
            false
        };
        let view = if ok { new } else { cur };
        cx.send(from, Msg::CasReply { ok, view });
    }

    pub(super) fn on_cas_reply(&mut self, ok: bool, view: ShardView, cx: &mut Ctx<'_, Msg>) {
        let s = view.shard;
        let mine = self.cas.get(&s).is_some_and(|(_, new)| *new == view);
        if mine || !ok {
            self.cas.remove(&s);
        }
        self.install_view(view, mine && ok, false, cx);
        if self.unsure.remove(&s) {
            self.restart_done(cx);
        }
    }

    /// As the shard's witness: the view held here, to a restarted copy.
    pub(super) fn on_view_req(&mut self, from: NodeId, s: u32, cx: &mut Ctx<'_, Msg>) {
        if let Some(view) = self.witnessed_view(s) {
            cx.send(from, Msg::CasReply { ok: false, view });
        }
    }

    /// Shard `s`'s view as its witness holds it; `None` if this server is not its
    /// witness (or no longer knows what it agreed to).
    fn witnessed_view(&self, s: u32) -> Option<ShardView> {
        let layout = &self.env.layout;
        let witness = s < layout.topology.shards && witness_of(layout, meridian_core::ShardId(s)) == Some(self.me);
        (witness && !self.witness_amnesiac)
            .then(|| self.witnessed.get(&s).cloned().unwrap_or_else(|| first_view(layout, s)))
    }

    /// Asks the witnesses for the views a restarted server is not sure of.
    pub(super) fn ask_views(&self, cx: &mut Ctx<'_, Msg>) {
        for s in &self.unsure {
            if let Some(w) = witness_of(&self.env.layout, meridian_core::ShardId(*s)) {
                cx.send(w, Msg::ViewReq { shard: *s });
            }
        }
    }

    /// Once a restarted server has its partners' data and its views: a shard it is a
    /// member of but whose data no member sent in the current view (its partner was
    /// not a member then, or sent an older view's) is stale: it asks the primary for
    /// it, and, if it is the primary itself (every other copy dropped while it was the
    /// only one, and it forgot), serves nothing of it. That is the loss of both
    /// copies' memory, beyond the fault model: a stall, never a wrong answer.
    pub(super) fn restart_done(&mut self, cx: &mut Ctx<'_, Msg>) {
        if self.restarting() {
            return;
        }
        self.watch_since = cx.now();
        if !std::mem::take(&mut self.check_sync) {
            return;
        }
        for s in self.mine.clone() {
            let v = self.view(s);
            if v.members.contains(&self.me) && self.synced_in.get(&s) != Some(&v.view) {
                self.stale.insert(s);
            }
        }
        self.synced_in.clear();
    }

    /// Installs a newer view of a shard (`announce`: this server made the change and
    /// tells every node; `with_data`: it comes with the primary's data, in a sync).
    pub(super) fn install_view(&mut self, v: ShardView, announce: bool, with_data: bool, cx: &mut Ctx<'_, Msg>) {
        let s = v.shard;
        if s >= self.env.layout.topology.shards {
            return;
        }
        let old = self.view(s);
        if v.view <= old.view {
            return;
        }
        self.views.insert(s, v.clone());
        self.cas.remove(&s);
        self.handing.remove(&s);
        self.watch_since = cx.now();
        if announce {
            for n in (0..self.env.layout.num_nodes()).map(NodeId).filter(|n| *n != self.me) {
                cx.send(n, Msg::View(v.clone()));
            }
        }
        if self.mine.contains(&s) {
            if old.primary == self.me && v.primary != self.me {
                // Handed over or deposed: promises made to this server as primary must
                // not count again if it becomes primary in a later view.
                self.floor_acked.retain(|(s2, _), _| *s2 != s);
            }
            if v.primary == self.me && old.primary != self.me {
                // Taken over: the old primary may have served reads below the floor
                // promised to it.
                let f = self.granted.get(&s).copied().unwrap_or(0) * TS_SCALE;
                let e = self.shard_floor.entry(s).or_insert(0);
                *e = (*e).max(f);
            }
            if v.members.contains(&self.me) && !with_data && (v.view > old.view + 1 || !old.members.contains(&self.me))
            {
                // A member again, or still, but views were skipped: one of them may
                // have dropped this copy while the primary committed without it. Its
                // data counts only once the primary has sent its own.
                self.stale.insert(s);
            }
            if !v.members.contains(&self.me) {
                // Dropped: the data here is stale until the primary takes this copy
                // back and sends it its data (asked for now and every sweep).
                self.floor_acked.retain(|(s2, _), _| *s2 != s);
                self.stale.insert(s);
                if !self.restarting() {
                    cx.send(v.primary, Msg::SyncReq);
                }
            } else if v.primary == self.me {
                let dropped: Vec<NodeId> = old.members.iter().copied().filter(|r| !v.members.contains(r)).collect();
                self.waive(&dropped, cx);
            }
        }
        // A forward to a primary that lost the shard, not acknowledged: abort now
        // rather than at the vote timeout.
        if !v.members.contains(&old.primary) {
            let mut stuck: Vec<(TxnId, u32)> = self
                .parts
                .iter()
                .filter(|(_, p)| p.phase == Phase::Executed && !p.acked && p.next == Some(old.primary))
                .map(|(k, _)| *k)
                .collect();
            stuck.sort_unstable();
            for (txn, pos) in stuck {
                self.abort_here(txn, pos, AbortReason::PrimaryFailedOver, cx);
            }
        }
        self.unpark(cx);
    }

    /// Replicas dropped from shards this server is primary of: the notifies they owe
    /// for puts already sent are waived, when every shard of those puts dropped them.
    pub(super) fn waive(&mut self, dropped: &[NodeId], cx: &mut Ctx<'_, Msg>) {
        if dropped.is_empty() {
            return;
        }
        let mut keys: Vec<(TxnId, u32)> = self.parts.keys().copied().collect();
        keys.sort_unstable();
        let mut own = vec![];
        for k in keys {
            let p = self.parts.get(&k).expect("listed");
            // (index, transaction, notified position, its server, replica)
            let gone: Vec<(usize, TxnId, u32, NodeId, NodeId)> = p
                .replicate
                .iter()
                .enumerate()
                .filter_map(|(i, (r, m))| match m {
                    Msg::Replicate(rep)
                        if dropped.contains(r) && rep.views.iter().all(|(s, _)| !self.members(*s).contains(r)) =>
                    {
                        Some((i, rep.txn, rep.pos, rep.notify, *r))
                    }
                    _ => None,
                })
                .collect();
            let p = self.parts.get_mut(&k).expect("listed");
            for (i, txn, pos, notify, r) in gone.into_iter().rev() {
                let waive = Msg::Waive { txn, pos, replica: r };
                if notify == self.me {
                    // This (last) position's own puts: nothing to send.
                    p.replicate.remove(i);
                    own.push((txn, pos, r));
                } else {
                    cx.send(notify, waive.clone());
                    // Re-sent by the sweep in place of the copy, until the outcome.
                    p.replicate[i] = (notify, waive);
                }
            }
        }
        for (txn, pos, r) in own {
            if let Some(p) = self.parts.get_mut(&(txn, pos)) {
                p.notifies.insert(r);
                self.try_precommit(txn, pos, cx);
            }
        }
    }

    pub(super) fn on_waive(&mut self, from: NodeId, txn: TxnId, pos: u32, replica: NodeId, cx: &mut Ctx<'_, Msg>) {
        // Only the predecessor (the primary of the puts) waives its replicas' notifies.
        let from_predecessor = self
            .parts
            .get(&(txn, pos))
            .is_none_or(|p| p.chain[pos as usize - 1].node == from);
        if pos > 0 && from_predecessor {
            self.count_notify(txn, pos, replica, cx);
        }
    }
}
