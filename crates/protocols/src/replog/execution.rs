//! Execution at a shard leader: reads under two-phase locks (wound-wait), the prepare
//! entry with its writes, logged through Paxos before the shard votes.

use super::*;

impl Server {
    pub(super) fn ctxn(&mut self, txn: TxnId, p: &PrepareEntry, now: Time) -> &mut CTxn {
        let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(p.coord, now));
        c.parts = p.parts.clone();
        c.client = Some(p.client);
        c
    }

    pub(super) fn on_read(&mut self, from: NodeId, read: LockedRead, cx: &mut Ctx<'_, Msg>) {
        let LockedRead { txn, ts, key } = read;
        cx.charge_ops(1);
        let s = self.env.layout.shard_of(&key);
        let now = cx.now();
        let refuse = |why: AbortReason, hint: Option<NodeId>, cx: &mut Ctx<'_, Msg>| {
            let answer = ReadAnswer::refused(txn, key.clone(), why.clone());
            cx.send(from, Msg::ReadReply { answer, hint });
        };
        let Some(g) = self.groups.get(&s) else {
            return refuse(AbortReason::ShardNotHeld, None, cx);
        };
        if !g.leading {
            return refuse(AbortReason::NotLeader, g.live_leader(now, &self.env), cx);
        }
        if now >= g.lease_until {
            return refuse(AbortReason::LeaseNotHeld, None, cx);
        }
        if self.tombstones.contains_key(&txn) || self.decision(txn) == Some(false) {
            return refuse(AbortReason::AlreadyAbortedHere, None, cx);
        }
        if self.decision(txn) == Some(true) {
            // Committed: a read the network delayed past the outcome. Its client is done
            // with it; begun again, it would hold a shared lock with the transaction's
            // old (oldest) priority that younger writers wait behind.
            return;
        }
        let fresh = !self.ptxns.contains_key(&(txn, s));
        if fresh && self.groups[&s].forgot_ts.is_some_and(|mark| ts <= mark) {
            // As for a PREPARE (below): unknown here and as old as decisions forgotten,
            // it may be a decided transaction's read the network delayed past the
            // forgetting period. Refused: begun again, it would hold a lock that only
            // its client's silence (`idle`) releases.
            return refuse(AbortReason::OlderThanForgotten, None, cx);
        }
        let t = self.seen((txn, s), ts, now);
        if !matches!(t.state, PState::Active) {
            return;
        }
        let prio = t.prio;
        match self.locks(s).acquire(txn, prio, &key, LockMode::Shared) {
            Acquired::Granted => self.reply_read(from, txn, key, cx.hops(), cx),
            Acquired::Waiting { wound } => {
                let hops = cx.hops();
                self.mark_blocking(s, &key, now);
                if let Some(t) = self.ptxns.get_mut(&(txn, s)) {
                    t.pending_reads.wait(from, key, hops);
                }
                self.wound(s, wound, cx);
            }
            _ => {
                let why = AbortReason::ReadLockDenied;
                self.abort_local((txn, s), why.clone(), cx);
                let answer = ReadAnswer::refused(txn, key, why);
                cx.send(from, Msg::ReadReply { answer, hint: None });
            }
        }
    }

    pub(super) fn reply_read(&mut self, to: NodeId, txn: TxnId, key: Key, hops: u32, cx: &mut Ctx<'_, Msg>) {
        let answer = ReadAnswer::latest(txn, key, &self.store);
        cx.send_on_chain(to, Msg::ReadReply { answer, hint: None }, hops);
    }

    /// Wound-wait at shard `s`: the younger holders of a lock an older transaction
    /// waits for abort their share there, unless it is already being prepared.
    pub(super) fn wound(&mut self, s: ShardId, victims: Vec<TxnId>, cx: &mut Ctx<'_, Msg>) {
        for v in victims {
            let Some(t) = self.ptxns.get(&(v, s)) else { continue };
            match (&t.state, &t.entry) {
                (PState::Active | PState::Locking { .. }, _) => self.abort_local((v, s), AbortReason::Wounded, cx),
                // Its PREPARE is logged (or on its way): only its coordinator may still
                // abort it. Without this, two transactions each prepared at one shard
                // and waiting at the other's deadlock until the vote timeout (wound-wait
                // prevents deadlock only if a wounded transaction can always be
                // aborted), as in 2PC.
                (PState::Proposed { .. } | PState::Prepared { .. }, Some(p)) => {
                    let coord = p.coord;
                    if self.leads(coord) {
                        self.on_wound(v, coord, cx);
                    } else {
                        for r in self.env.layout.replicas(coord).to_vec() {
                            cx.send(r, Msg::Wound { txn: v, coord });
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Someone waits for a lock on `key` at shard `s`: every executing share holding it
    /// notes when it began to block someone since its client was last heard. If the
    /// client then stays silent for the fail-over time, the sweep aborts the share (its
    /// leader promised nothing yet) rather than after `idle`, as HACommit's leaders do.
    fn mark_blocking(&mut self, s: ShardId, key: &Key, now: Time) {
        for (h, _) in self.locks(s).holders(key) {
            if let Some(t) = self.ptxns.get_mut(&(h, s)) {
                if matches!(t.state, PState::Active) && t.blocking.is_none_or(|b| t.last_seen > b) {
                    t.blocking = Some(now);
                }
            }
        }
    }

    /// The state of a transaction's share here (begun, with priority `ts`, if new), seen
    /// at `now`.
    fn seen(&mut self, (txn, s): Part, ts: Time, now: Time) -> &mut PTxn {
        let t = self.ptxns.entry((txn, s)).or_insert_with(|| PTxn {
            prio: (ts, txn),
            state: PState::Active,
            last_seen: now,
            pending_reads: Default::default(),
            entry: None,
            blocking: None,
        });
        t.last_seen = now;
        t
    }

    /// Aborts a transaction's share that has not replicated its PREPARE here (the
    /// tombstone is per transaction: once one share aborted, the transaction will).
    pub(super) fn abort_local(&mut self, (txn, s): Part, why: AbortReason, cx: &mut Ctx<'_, Msg>) {
        self.tombstones.insert(txn, cx.now());
        let Some(t) = self.ptxns.remove(&(txn, s)) else { return };
        t.pending_reads.refuse_all(cx, |key| Msg::ReadReply {
            answer: ReadAnswer::refused(txn, key, why.clone()),
            hint: None,
        });
        if let PState::Locking { entry, hops, .. } = &t.state {
            self.send_vote(Prepared::no(txn, entry.coord, s, why.clone()).at(entry.ts), *hops, cx);
        }
        self.release(txn, s, cx);
    }

    /// Sends cohort shard `v.shard`'s vote to its coordinator shard's replicas (or
    /// takes it here, when this server leads both).
    pub(super) fn send_vote(&mut self, v: Prepared, hops: u32, cx: &mut Ctx<'_, Msg>) {
        if (v.again || !v.yes) && !self.holds_lease(v.shard, cx.now()) {
            // A vote sent again, or a no, only from a leader that holds its lease: one
            // that may have been replaced could be behind its successor, which may
            // have prepared and committed the transaction since; after the
            // coordinator forgot that commit (`forget.rs`) it would take this vote for
            // one about an unknown transaction and presume an abort. The vote is
            // re-sent at a later sweep, or the coordinator's vote timeout decides.
            return;
        }
        if v.coord == v.shard && self.leads(v.shard) {
            self.on_prepared(v, cx);
            return;
        }
        for r in self.env.layout.replicas(v.coord).to_vec() {
            cx.send_on_chain(r, Msg::Prepared(v.clone()), hops);
        }
    }

    pub(super) fn on_grants(&mut self, s: ShardId, grants: Vec<Grant>, cx: &mut Ctx<'_, Msg>) {
        for g in grants {
            let Some(t) = self.ptxns.get_mut(&(g.txn, s)) else {
                continue;
            };
            if let Some(r) = t.pending_reads.granted(&g.key) {
                self.reply_read(r.client, g.txn, r.key, r.hops, cx);
            } else if let PState::Locking { waiting, .. } = &mut t.state {
                *waiting -= 1;
                if *waiting == 0 {
                    self.locked((g.txn, s), cx);
                }
            }
        }
    }

    pub(super) fn on_prepare(&mut self, s: ShardId, p: Arc<PrepareEntry>, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops((p.reads.len() + p.writes.len()) as u32);
        if !self.leads(s) {
            // A stale guess of the client's (after a fail-over): say who leads, so the
            // client re-sends there instead of waiting for the coordinator's vote
            // timeout, transaction after transaction.
            let leader = self.groups.get(&s).and_then(|g| g.leader).filter(|l| *l != self.me);
            cx.send(
                p.client,
                Msg::Redirect {
                    txn: p.txn,
                    shard: s,
                    leader,
                },
            );
            return;
        }
        let txn = p.txn;
        let now = cx.now();
        let known = self.decision(txn).is_some() || self.ctxns.contains_key(&txn) || self.ptxns.contains_key(&(txn, s));
        if !known && self.groups[&s].forgot_ts.is_some_and(|mark| p.ts <= mark) {
            // Unknown here, and as old as decisions this shard forgot: it may be one of
            // them, decided (a PREPARE later than the forgetting period), and must not
            // begin again (`forget.rs`). A cohort votes no (a coordinator that knows
            // the transaction aborts it); the coordinator's own share is dropped (its
            // client learns the outcome is lost, or the votes' timeout aborts it).
            if p.coord == s {
                return;
            }
            let why = AbortReason::OlderThanForgotten;
            return self.send_vote(Prepared::no(txn, p.coord, s, why).at(p.ts), cx.hops(), cx);
        }
        if p.coord == s {
            if let Some(commit) = self.decision(txn) {
                // Decided before its own PREPARE reached the coordinator (a cohort's
                // no vote came first): the client and the shards learn it now, from
                // this PREPARE, which is the first to name them.
                let others = p.parts.iter().copied().filter(|p| *p != s).collect();
                let reason = (!commit).then_some(AbortReason::Aborted);
                return self.announce(txn, commit, reason, Some(p.client), others, cx);
            }
            // The coordinator's record (client, shards) comes first, so that an abort
            // decided below, or already on its way, is announced to all of them.
            self.ctxn(txn, &p, now);
        }
        // Refused once aborted, and while the coordinator's ABORT entry is on its way
        // (a PREPARE logged after it would be rebuilt as open by a new leader).
        let aborting = self.ctxns.get(&txn).is_some_and(|c| c.aborting.is_some());
        if self.tombstones.contains_key(&txn) || self.decision(txn) == Some(false) || aborting {
            return self.send_vote(
                Prepared::no(txn, p.coord, s, AbortReason::AlreadyAbortedHere).at(p.ts),
                cx.hops(),
                cx,
            );
        }
        if self.decision(txn) == Some(true) {
            // Committed (every share had voted yes): a PREPARE delayed past the outcome.
            // Begun again, it would lock the keys and log a second PREPARE.
            return;
        }
        let t = self.seen((txn, s), p.ts, now);
        if !matches!(t.state, PState::Active) {
            return; // duplicate
        }
        let prio = t.prio;
        if p.reads.iter().any(|k| !self.locks(s).holds(txn, k, LockMode::Shared)) {
            let why = AbortReason::ReadLockLost;
            let hops = cx.hops();
            self.abort_local((txn, s), why.clone(), cx);
            return self.send_vote(Prepared::no(txn, p.coord, s, why).at(p.ts), hops, cx);
        }
        let mut waiting = 0;
        let mut wounded = vec![];
        let mut blocked_on = vec![];
        for (k, _, _) in &p.writes {
            match self.locks(s).acquire(txn, prio, k, LockMode::Exclusive) {
                Acquired::Granted => {}
                Acquired::Waiting { wound } => {
                    waiting += 1;
                    wounded.extend(wound);
                    blocked_on.push(k.clone());
                }
                _ => {
                    let why = AbortReason::WriteLockDenied;
                    let hops = cx.hops();
                    self.abort_local((txn, s), why.clone(), cx);
                    return self.send_vote(Prepared::no(txn, p.coord, s, why).at(p.ts), hops, cx);
                }
            }
        }
        for k in &blocked_on {
            self.mark_blocking(s, k, now);
        }
        let hops = cx.hops();
        if let Some(t) = self.ptxns.get_mut(&(txn, s)) {
            t.state = PState::Locking {
                entry: p.clone(),
                waiting,
                hops,
            };
            t.entry = Some(p);
        }
        if waiting == 0 {
            self.locked((txn, s), cx);
        } else {
            self.wound(s, wounded, cx);
        }
    }

    /// All exclusive locks of a share held: replicate its PREPARE.
    pub(super) fn locked(&mut self, part: Part, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.ptxns.get_mut(&part) else { return };
        let PState::Locking { entry, hops, .. } = std::mem::replace(&mut t.state, PState::Active) else {
            return;
        };
        t.state = PState::Proposed { hops };
        self.propose(part.1, Entry::Prepare(entry), cx);
    }

    /// Leader: a PREPARE entry was chosen.
    pub(super) fn prepare_chosen(&mut self, s: ShardId, p: Arc<PrepareEntry>, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        if let Some(t) = self.ptxns.get_mut(&(p.txn, s)) {
            if let PState::Proposed { hops } = t.state {
                t.state = PState::Prepared { asked: now, hops };
            }
        }
        self.send_vote(Prepared::yes(p.txn, p.coord, s).at(p.ts), cx.hops(), cx);
    }
}
