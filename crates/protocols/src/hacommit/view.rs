//! View change inside a replica group (leader fail-over): a follower that misses
//! heartbeats stands for a new view, merges a majority's state, and only then leads.

use super::*;

impl Server {
    /// This replica's state of `shard` for a view change or (`sync`) a restarted peer:
    /// its undecided transactions, and its decisions: those of the tombstone period;
    /// for a re-sync every decision not yet forgotten, the commits past the tombstone
    /// period without their writes (the store copy of the same answer holds them). A restarted replica must be able to say it settled them, or
    /// the others keep them for ever on a shard whose mark does not move.
    pub(super) fn my_state(&self, shard: ShardId, now: Time, sync: bool) -> (Vec<PendingInfo>, Vec<DoneInfo>, u64) {
        let mut pending: Vec<PendingInfo> = self
            .txns
            .iter()
            .filter(|((s, _), t)| *s == shard && (t.ctx.is_some() || t.accepted.is_some() || t.promised > 0))
            .map(|((_, id), t)| t.info(*id))
            .collect();
        pending.sort_by_key(|p| p.txn);
        let keep = self.env.timeouts.tombstone;
        let mut done: Vec<DoneInfo> = self
            .done
            .iter()
            .filter(|((s, _), d)| *s == shard && (sync || now.saturating_sub(d.at) < keep))
            .map(|((_, id), d)| DoneInfo {
                txn: *id,
                commit: d.commit,
                ctx: d.ctx.as_deref().cloned(),
                shards: d.shards.clone(),
                ts: d.ts,
            })
            .collect();
        done.sort_by_key(|d| d.txn);
        (pending, done, self.groups[&shard].seq)
    }

    pub(super) fn heartbeat_and_failover(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let to = self.env.timeouts.clone();
        let shards: Vec<ShardId> = self.groups.keys().copied().collect();
        for shard in shards {
            let me = self.me;
            let g = self.groups.get_mut(&shard).expect("group");
            match g.status {
                Status::Syncing => {
                    let (below, floor) = (self.forgot_before, self.ballot_floor);
                    for p in g.replicas.clone() {
                        if p != me {
                            cx.send(p, Msg::SyncReq(SyncReq { shard, below, floor }));
                        }
                    }
                }
                Status::Normal if g.leader() == me => {
                    let view = g.view;
                    for p in g.replicas.clone() {
                        if p != me {
                            cx.send(p, Msg::Heartbeat { shard, view });
                        }
                    }
                    // Decisions followers have not confirmed, in one batch each.
                    self.push_decided(shard, cx);
                }
                Status::Normal | Status::Candidate { .. } => {
                    let since = match g.status {
                        Status::Candidate { since } => since,
                        _ => g.last_hb,
                    };
                    let n = g.replicas.len() as u64;
                    let my_idx = g.replicas.iter().position(|r| *r == me).unwrap_or(0) as u64;
                    // The next view I would lead, and how far down the line I am.
                    let mut target = g.view + 1;
                    while target % n != my_idx {
                        target += 1;
                    }
                    let rank = target - g.view - 1;
                    let wait = to.failover + rank * to.failover / 2;
                    if now.saturating_sub(since) < wait {
                        continue;
                    }
                    self.stand(shard, target, cx);
                }
            }
        }
    }

    /// Becomes the candidate for `view` (one this replica leads): asks the group for
    /// its state and leads only once a majority's state is merged.
    pub(super) fn stand(&mut self, shard: ShardId, view: u64, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let me = self.me;
        let g = self.groups.get_mut(&shard).expect("group");
        g.view = view;
        g.status = Status::Candidate { since: now };
        g.states.clear();
        let st = self.my_state(shard, cx.now(), false);
        let g = self.groups.get_mut(&shard).expect("group");
        g.states.insert(me, st.clone());
        for p in g.replicas.clone() {
            if p != me {
                cx.send(p, Msg::ViewChange { shard, view });
            }
        }
        self.step_down(shard, cx);
        if self.mutant == crate::Mutant::LeadBeforeMerge {
            let (pending, done, seq) = st;
            let m = ViewState {
                shard,
                view,
                pending,
                done,
                seq,
            };
            self.on_view_state(me, m, cx);
        }
    }

    /// This replica no longer leads `shard`: unvoted transactions abort, locks go (a
    /// follower holds none).
    pub(super) fn step_down(&mut self, shard: ShardId, cx: &mut Ctx<'_, Msg>) {
        self.abort_unvoted_where(|(s, _)| *s == shard, AbortReason::ParticipantLostLeadership, cx);
        let mut voted: Vec<TxnId> = self
            .txns
            .iter_mut()
            .filter(|((s, _), _)| *s == shard)
            .map(|((_, id), t)| {
                if matches!(t.stage, Stage::Replicating { .. }) {
                    t.stage = Stage::Voted;
                }
                t.locked_at = None;
                *id
            })
            .collect();
        voted.sort();
        for id in voted {
            self.release(shard, id, cx);
        }
        if let Some(g) = self.groups.get_mut(&shard) {
            g.pushing.clear();
        }
    }

    pub(super) fn on_heartbeat(&mut self, from: NodeId, shard: ShardId, view: u64, cx: &mut Ctx<'_, Msg>) {
        self.adopt_view(shard, view, from, cx);
    }

    /// A message from `from` speaking as the leader of `view` of `shard`'s group
    /// (heartbeat, vote replication, new view). Only the view's own leader speaks for
    /// it, and only after merging a majority's state, so: a message for an older view,
    /// or from anyone but that view's leader, is refused (`false`); a later view is
    /// adopted (a candidate gives up, a leader steps down: its unvoted transactions
    /// abort and its locks go). A candidate becomes leader only through its own merge
    /// ([`Server::on_view_state`]), never because a message names its view.
    pub(super) fn adopt_view(&mut self, shard: ShardId, view: u64, from: NodeId, cx: &mut Ctx<'_, Msg>) -> bool {
        let me = self.me;
        let Some(g) = self.groups.get_mut(&shard) else {
            return false;
        };
        let leader_of = g.replicas[(view % g.replicas.len() as u64) as usize];
        if g.status == Status::Syncing || view < g.view || from != leader_of || from == me {
            return false;
        }
        let was_leader = g.status == Status::Normal && g.leader() == me;
        if view > g.view || matches!(g.status, Status::Candidate { .. }) {
            g.view = view;
            g.status = Status::Normal;
        }
        g.last_hb = cx.now();
        if was_leader && g.leader() != me {
            self.step_down(shard, cx);
        }
        true
    }

    pub(super) fn on_view_change(&mut self, from: NodeId, shard: ShardId, view: u64, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get_mut(&shard) else { return };
        let candidate_of = g.replicas[(view % g.replicas.len() as u64) as usize];
        if g.status == Status::Syncing || view <= g.view || from != candidate_of {
            return;
        }
        let was_leader = g.status == Status::Normal && g.leader() == self.me;
        g.view = view;
        g.status = Status::Normal;
        g.last_hb = cx.now();
        if was_leader {
            self.step_down(shard, cx);
        }
        let (pending, done, seq) = self.my_state(shard, cx.now(), false);
        cx.send(
            from,
            Msg::ViewState(ViewState {
                shard,
                view,
                pending,
                done,
                seq,
            }),
        );
    }

    pub(super) fn on_view_state(&mut self, from: NodeId, m: ViewState, cx: &mut Ctx<'_, Msg>) {
        let ViewState {
            shard,
            view,
            pending,
            done,
            seq,
        } = m;
        let Some(g) = self.groups.get_mut(&shard) else { return };
        if g.view != view || !matches!(g.status, Status::Candidate { .. }) {
            return;
        }
        g.states.insert(from, (pending, done, seq));
        let need = if self.mutant == crate::Mutant::LeadBeforeMerge {
            1
        } else {
            g.majority()
        };
        if g.states.len() < need {
            return;
        }
        let states = std::mem::take(&mut g.states);
        g.status = Status::Normal;
        g.last_hb = cx.now();
        // Merge: contexts from anyone, highest promise and acceptance, every decision.
        let mut merged: BTreeMap<TxnId, PendingInfo> = BTreeMap::new();
        let mut dones: BTreeMap<TxnId, DoneInfo> = BTreeMap::new();
        let mut max_seq = 0;
        for (_, (p, d, s)) in states {
            max_seq = max_seq.max(s);
            for x in p {
                merge_pending(&mut merged, x);
            }
            for x in d {
                dones.entry(x.txn).or_insert(x);
            }
        }
        let pending: Vec<PendingInfo> = merged.into_values().filter(|p| !dones.contains_key(&p.txn)).collect();
        let done: Vec<DoneInfo> = dones.into_values().collect();
        for p in self.groups[&shard].replicas.clone() {
            if p != self.me {
                let m = Msg::NewView(ViewState {
                    shard,
                    view,
                    pending: pending.clone(),
                    done: done.clone(),
                    seq: max_seq,
                });
                cx.send(p, m);
            }
        }
        cx.note(format!(
            "hacommit: leads shard {}'s replica group in view {view} ({} transactions pending, {} decided)",
            shard.0,
            pending.len(),
            done.len()
        ));
        self.install_state(shard, pending, done, max_seq, cx);
        // Lead: re-take the locks of every voted transaction, resolve accepted ones soon,
        // and make sure every follower has every recent decision.
        let mut voted: Vec<(TxnId, TCtx)> = self
            .txns
            .iter()
            .filter(|((s, _), t)| *s == shard && t.chosen.is_none())
            .filter_map(|((_, id), t)| t.ctx.clone().map(|c| (*id, c)))
            .collect();
        voted.sort_by_key(|(id, _)| *id);
        let now = cx.now();
        let soon = self.env.timeouts.sweep;
        // The locks are held at once, not requested: the old leader granted them one
        // after the other, so two voted transactions may conflict (the earlier one
        // committed, but not known as chosen here yet). Queued behind the first, the
        // others could be passed by an older newcomer (wound-wait orders the queue by
        // age), which would then read or overwrite a key a committed transaction is
        // still to write here. Held, they keep every newcomer waiting until all of them
        // are decided.
        for (id, c) in voted {
            let prio = (c.ts, id);
            if !self.rc {
                for k in &c.reads {
                    self.locks.hold(id, prio, k, LockMode::Shared);
                }
            }
            for (k, _, _) in &c.writes {
                self.locks.hold(id, prio, k, LockMode::Exclusive);
            }
            if let Some(t) = self.txns.get_mut(&(shard, id)) {
                if t.accepted.is_some() {
                    t.recover_at = Some(now + soon);
                }
            }
        }
        let followers: BTreeSet<NodeId> = self.groups[&shard]
            .replicas
            .iter()
            .copied()
            .filter(|n| *n != self.me)
            .collect();
        let mut recent: Vec<TxnId> = self
            .done
            .iter()
            .filter(|((s, _), d)| *s == shard && now.saturating_sub(d.at) < self.env.timeouts.tombstone)
            .map(|((_, t), _)| *t)
            .collect();
        recent.sort();
        let g = self.groups.get_mut(&shard).expect("group");
        for t in recent {
            g.pushing.insert(t, (followers.clone(), 0));
        }
    }

    pub(super) fn on_new_view(&mut self, from: NodeId, m: ViewState, cx: &mut Ctx<'_, Msg>) {
        if !self.adopt_view(m.shard, m.view, from, cx) {
            return;
        }
        self.install_state(m.shard, m.pending, m.done, m.seq, cx);
    }

    /// Merges another replica's view of the group: decisions are applied, pending
    /// contexts and acceptor state adopted.
    pub(super) fn install_state(
        &mut self,
        shard: ShardId,
        pending: Vec<PendingInfo>,
        done: Vec<DoneInfo>,
        seq: u64,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if let Some(g) = self.groups.get_mut(&shard) {
            g.seq = g.seq.max(seq);
        }
        for d in done {
            self.absorb_done(shard, d, cx);
        }
        let now = cx.now();
        for p in pending {
            // (Adopted even where the transaction is below the forgetting mark and
            // unknown: a live transaction whose replication this replica refused (the
            // group voted without it) must reach a new leader, which applies its
            // writes. A forgotten one is held pending by no one: its replication is
            // refused where it was forgotten, a late copy included.)
            if self.done.contains_key(&(shard, p.txn)) {
                continue;
            }
            let t = self
                .txns
                .entry((shard, p.txn))
                .or_insert_with(|| Txn::new(p.txn, p.ts, now));
            if t.prio.0 == 0 {
                t.prio = (p.ts, p.txn);
            }
            let key = (shard, p.txn);
            // Adopted even by a restarted replica: reporting a (ballot, decision) some
            // acceptor really accepted keeps phase 1 safe, and it is how what a
            // forgotten acceptance helped choose survives the next crash.
            adopt(&mut t.shards, &mut t.ctx, &mut t.promised, &mut t.accepted, p);
            t.last_seen = now;
            self.try_apply_chosen(key, cx);
        }
    }
}

/// Merges one replica's report of an undecided transaction into `m`.
pub(super) fn merge_pending(m: &mut BTreeMap<TxnId, PendingInfo>, x: PendingInfo) {
    match m.get_mut(&x.txn) {
        None => {
            m.insert(x.txn, x);
        }
        Some(p) => adopt(&mut p.shards, &mut p.ctx, &mut p.promised, &mut p.accepted, x),
    }
}

/// Adopts what a replica reports of an undecided transaction into what is known of it
/// here (the fields a [`Txn`] and a [`PendingInfo`] both hold): the configuration and
/// the context where missing, the higher promise, and the acceptance of the higher
/// ballot.
fn adopt(
    shards: &mut Vec<ShardId>,
    ctx: &mut Option<TCtx>,
    promised: &mut Ballot,
    accepted: &mut Option<(Ballot, bool)>,
    x: PendingInfo,
) {
    if shards.is_empty() {
        *shards = x.shards;
    }
    if ctx.is_none() {
        *ctx = x.ctx;
    }
    *promised = (*promised).max(x.promised);
    if x.accepted.is_some_and(|a| accepted.is_none_or(|b| a.0 > b.0)) {
        *accepted = x.accepted;
    }
}
