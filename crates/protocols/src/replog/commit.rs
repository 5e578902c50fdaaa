//! Two-phase commit between the leaders of the shards a transaction touched: the
//! coordinator collects votes, logs the decision, and tells every cohort, which logs
//! it too and releases its locks.

use super::*;

impl Server {
    /// Coordinator leader: a vote arrived.
    pub(super) fn on_prepared(&mut self, v: Prepared, cx: &mut Ctx<'_, Msg>) {
        let Prepared {
            txn,
            coord,
            shard,
            yes,
            reason,
            again,
            ts,
        } = v;
        let now = cx.now();
        if let Some(commit) = self.decision(txn) {
            // Decided already: tell the asking shard again.
            self.send_decide(txn, &[shard], commit, cx);
            return;
        }
        // A vote names its transaction's timestamp; 0 is a vote that does not (a no
        // answered from nothing), never taken for an old one.
        let forgotten = ts != 0
            && self
                .groups
                .get(&coord)
                .is_some_and(|g| g.forgot_ts.is_some_and(|mark| ts <= mark));
        if forgotten && !self.ctxns.contains_key(&txn) {
            // Unknown here and as old as decisions forgotten: a vote the network
            // delayed (or a cohort re-sent) past the forgetting of a decided
            // transaction, or one whose own PREPARE this shard dropped as too old
            // (`execution.rs`). No decision is logged: an ABORT entry could contradict
            // a forgotten COMMIT (a client still asking would hear abort). A cohort
            // that holds the transaction prepared is told abort, unlogged, and only
            // by a leader that holds its lease (review of stop 82: a deposed leader
            // cut off from its group but not from the cohort, whose mark ran ahead of
            // its successor's, could abort a transaction its successor was still
            // preparing). It cannot be a committed one, since a commit is forgotten
            // only once every cohort has nothing of it pending (`forget.rs`).
            if yes && self.holds_lease(coord, now) {
                self.send_decide(txn, &[shard], false, cx);
            }
            return;
        }
        let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(coord, now));
        if c.committing {
            return;
        }
        if !yes {
            let why = reason.unwrap_or(AbortReason::ParticipantDidNotPrepare);
            self.decide_abort(txn, why, cx);
            return;
        }
        c.yes.insert(shard);
        if again && c.parts.is_empty() && !self.ptxns.contains_key(&(txn, coord)) {
            // A cohort has waited a query period for the decision, and this shard's
            // own PREPARE (sent with the cohort's, and the only one that names the
            // shards) never arrived: it was lost with a crashed leader. Presumed abort,
            // now rather than at the client's next status query: the cohorts hold
            // their locks until they hear it.
            self.decide_abort(txn, AbortReason::CoordinatorNeverPrepared, cx);
            return;
        }
        self.maybe_commit(txn, cx);
    }

    pub(super) fn maybe_commit(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        if c.committing || c.parts.is_empty() || !c.parts.iter().all(|p| c.yes.contains(p)) {
            return;
        }
        c.committing = true;
        let s = c.coord;
        if !self.leads(s) {
            return;
        }
        if let Some(t) = self.ptxns.get_mut(&(txn, s)) {
            if let PState::Prepared { hops, .. } = t.state {
                t.state = PState::Finishing { hops };
            }
        }
        self.propose(s, Entry::Commit(txn), cx);
    }

    /// Coordinator leader: `txn`, prepared at a cohort, blocks an older transaction
    /// there. Aborted if undecided (no COMMIT or ABORT entry on its way yet).
    pub(super) fn on_wound(&mut self, txn: TxnId, coord: ShardId, cx: &mut Ctx<'_, Msg>) {
        if self.leads(coord) && self.ctxns.get(&txn).is_some_and(|c| c.coord == coord) {
            self.decide_abort(txn, AbortReason::Wounded, cx);
        }
    }

    pub(super) fn decide_abort(&mut self, txn: TxnId, why: AbortReason, cx: &mut Ctx<'_, Msg>) {
        // Only an undecided coordinator transaction that is not committing may abort.
        // What led here may be stale: a sweep lists the expired votes first and aborts
        // them one by one, and aborting one frees locks that can let a listed one
        // prepare and commit in the same sweep; aborting it then would contradict the
        // COMMIT already chosen and announced.
        if self.decision(txn).is_some() || self.ctxns.get(&txn).is_none_or(|c| c.committing) {
            return;
        }
        let s = self.ctxns[&txn].coord;
        if !self.leads(s) {
            return;
        }
        if self.mutant == crate::Mutant::EarlyAbort {
            // The old behaviour: decided in memory, announced at once.
            self.mutant_done.insert(txn, false);
            let Some(c) = self.ctxns.remove(&txn) else { return };
            let mut parts: BTreeSet<ShardId> = c.parts.into_iter().collect();
            parts.extend(c.yes);
            parts.remove(&c.coord);
            let parts: Vec<ShardId> = parts.into_iter().collect();
            self.on_decide(txn, c.coord, false, cx);
            if let Some(cl) = c.client {
                cx.send(
                    cl,
                    Msg::Outcome {
                        txn,
                        commit: false,
                        reason: Some(why),
                    },
                );
            }
            self.send_decide(txn, &parts, false, cx);
            return;
        }
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        // The decision is the ABORT entry in the coordinator shard's log, not this
        // node's memory: a new leader rebuilt from a chosen PREPARE would otherwise
        // resume the transaction and could commit it. So nobody hears of the abort
        // until the entry is chosen ([`Server::finished`] announces it).
        c.committing = true;
        c.aborting = Some(why.clone());
        let unprepared = match self.ptxns.get_mut(&(txn, s)) {
            Some(t) => match t.state {
                PState::Prepared { hops, .. } | PState::Proposed { hops } => {
                    t.state = PState::Finishing { hops };
                    false
                }
                PState::Finishing { .. } => false,
                PState::Active | PState::Locking { .. } => true,
            },
            None => false,
        };
        if unprepared {
            self.abort_local((txn, s), why, cx);
        }
        self.propose(s, Entry::Abort(txn), cx);
    }

    pub(super) fn send_decide(&mut self, txn: TxnId, parts: &[ShardId], commit: bool, cx: &mut Ctx<'_, Msg>) {
        for &p in parts {
            if self.leads(p) {
                self.on_decide(txn, p, commit, cx);
                continue;
            }
            for r in self.env.layout.replicas(p).to_vec() {
                cx.send(r, Msg::Decide { txn, shard: p, commit });
            }
        }
    }

    /// Cohort leader: the decision arrived.
    pub(super) fn on_decide(&mut self, txn: TxnId, s: ShardId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        if !self.leads(s) {
            return;
        }
        let Some(t) = self.ptxns.get_mut(&(txn, s)) else {
            if !commit {
                // An abort of a share this leader never saw (its PREPARE lost, or still
                // on its way): tombstoned, so the PREPARE, should it come, is refused
                // rather than lock and log until the coordinator answers again.
                self.tombstones.insert(txn, cx.now());
            }
            return;
        };
        match t.state {
            PState::Prepared { hops, .. } | PState::Proposed { hops } => {
                t.state = PState::Finishing { hops };
                if commit {
                    self.propose(s, Entry::Commit(txn), cx);
                } else {
                    self.propose(s, Entry::Abort(txn), cx);
                    self.release(txn, s, cx);
                }
            }
            PState::Finishing { .. } => {}
            PState::Active | PState::Locking { .. } => {
                if !commit {
                    self.abort_local((txn, s), AbortReason::AbortedByCoordinator, cx);
                }
            }
        }
    }

    /// Leader: a COMMIT or ABORT entry was chosen.
    pub(super) fn finished(&mut self, s: ShardId, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        if let Some(t) = self.ptxns.remove(&(txn, s)) {
            if let PState::Finishing { hops } = t.state {
                // Cohorts' holdings (the paper's count; the coordinator's ends earlier).
                let cohort = t.entry.as_ref().is_some_and(|p| !p.writes.is_empty() && p.coord != s);
                if cohort && hops != UNKNOWN_HOPS {
                    self.holds.add(hops, cx.hops());
                }
            }
            self.release(txn, s, cx);
        }
        if self.ctxns.get(&txn).is_none_or(|c| c.coord != s) {
            return;
        }
        // The coordinator's own COMMIT or ABORT: tell the client and every shard known
        // to take part (with an abort, also those that only voted).
        if let Some(c) = self.ctxns.remove(&txn) {
            let reason = (!commit).then(|| c.aborting.unwrap_or(AbortReason::Aborted));
            let mut others: BTreeSet<ShardId> = c.parts.into_iter().collect();
            if !commit {
                others.extend(c.yes);
            }
            others.remove(&s);
            self.announce(txn, commit, reason, c.client, others, cx);
        }
    }

    /// Coordinator leader: tells the client (if known) and the shards `others` the
    /// outcome of `txn`, chosen in its shard's log.
    pub(super) fn announce(
        &mut self,
        txn: TxnId,
        commit: bool,
        reason: Option<AbortReason>,
        client: Option<NodeId>,
        others: BTreeSet<ShardId>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if let Some(cl) = client {
            cx.send(cl, Msg::Outcome { txn, commit, reason });
        }
        let others: Vec<ShardId> = others.into_iter().collect();
        self.send_decide(txn, &others, commit, cx);
    }

    pub(super) fn on_status(&mut self, from: NodeId, txn: TxnId, s: ShardId, ts: Time, cx: &mut Ctx<'_, Msg>) {
        if !self.leads(s) {
            return;
        }
        if let Some(commit) = self.decision(txn) {
            let reason = (!commit).then_some(AbortReason::Aborted);
            cx.send(from, Msg::Outcome { txn, commit, reason });
            return;
        }
        if self.ptxns.contains_key(&(txn, s)) {
            return; // in progress
        }
        if let Some(c) = self.ctxns.get_mut(&txn) {
            if !c.parts.is_empty() {
                return; // in progress
            }
            // Known here only from cohorts' votes: this shard's own PREPARE, which
            // names the shards, never arrived (it was lost with a crashed leader).
            if c.committing {
                // An abort on its way (a no vote came first): told once chosen.
                c.client = Some(from);
                return;
            }
        }
        if self.groups[&s].forgot_ts.is_some_and(|mark| ts <= mark) {
            // Unknown, and as old as decisions forgotten here: it may be one of them,
            // committed (`forget.rs`). Its outcome is lost; presuming an abort could
            // contradict a commit.
            cx.send(from, Msg::Forgotten { txn });
            return;
        }
        // Unknown to the coordinator: its PREPARE never arrived here. Presumed abort,
        // decided like any abort: by an ABORT entry in this shard's log, answered once
        // chosen ([`Server::finished`]). A leader cut off from its group, unaware that
        // a successor prepared and committed the transaction, never gets it chosen and
        // so never answers (it answered at once, and the client heard abort for a
        // transaction the new leader committed).
        let now = cx.now();
        self.tombstones.insert(txn, now);
        let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(s, now));
        c.client = Some(from);
        c.committing = true;
        c.aborting = Some(AbortReason::CoordinatorNeverPrepared);
        self.propose(s, Entry::Abort(txn), cx);
    }

    /// Coordinator leader: asks cohort shard `shard` for its vote on `txn` (`decide`:
    /// the fail-over time has passed, so a leader that never received the PREPARE votes
    /// no). The question goes to the shard's leader if this node replicates the shard
    /// and heard from its leader lately (under overload many transactions wait that
    /// long for locks, and a question to every replica costs each of them), else to
    /// every replica (only the leader answers).
    pub(super) fn ask_vote(&mut self, txn: TxnId, coord: ShardId, shard: ShardId, decide: bool, cx: &mut Ctx<'_, Msg>) {
        if self.leads(shard) {
            let me = self.me;
            return self.on_vote_query(me, txn, coord, shard, decide, cx);
        }
        let now = cx.now();
        let to = match self.groups.get(&shard).and_then(|g| g.live_leader(now, &self.env)) {
            Some(l) => vec![l],
            None => self.env.layout.replicas(shard).to_vec(),
        };
        for r in to {
            cx.send(
                r,
                Msg::VoteQuery {
                    txn,
                    coord,
                    shard,
                    decide,
                },
            );
        }
    }

    /// Cohort leader: the coordinator lacks shard `s`'s vote on `txn`. A prepared share
    /// says yes again (the vote may have been lost, or it reached a leader that has
    /// since failed); an aborted one no again; a share still locking or replicating
    /// its PREPARE will vote when it can. With `decide` (the coordinator has waited
    /// the fail-over time) a transaction this leader never heard of (its PREPARE was
    /// lost with a crashed leader before it was chosen, or is very late) gets a no, and
    /// a tombstone that refuses the PREPARE should it come. A no is safe whoever leads:
    /// a yes is sent only once the PREPARE is chosen, and every later leader holds a
    /// chosen PREPARE ([`Server::rebuild_leader_state`]), so a leader that does not
    /// know the transaction never voted yes for it; and the coordinator decides once,
    /// on the first no or on every yes. The answer goes to the asking coordinator
    /// leader alone (a vote goes to every replica of the coordinator shard only
    /// because a cohort does not know which leads it).
    pub(super) fn on_vote_query(
        &mut self,
        from: NodeId,
        txn: TxnId,
        coord: ShardId,
        s: ShardId,
        decide: bool,
        cx: &mut Ctx<'_, Msg>,
    ) {
        // Only under a lease: a leader that may have been replaced could be behind
        // (see `Server::send_vote`).
        if !self.holds_lease(s, cx.now()) {
            return;
        }
        let aborted = self.tombstones.contains_key(&txn) || self.decision(txn) == Some(false);
        let answer = match self.ptxns.get(&(txn, s)) {
            Some(t) if matches!(t.state, PState::Prepared { .. }) => Prepared::yes(txn, coord, s).again().at(t.prio.0),
            Some(_) => return,
            // Committed here: the coordinator has decided, and the decision reached us.
            None if self.decision(txn) == Some(true) => return,
            None if aborted => Prepared::no(txn, coord, s, AbortReason::AlreadyAbortedHere),
            None if decide => {
                self.tombstones.insert(txn, cx.now());
                Prepared::no(txn, coord, s, AbortReason::PrepareLost)
            }
            None => return,
        };
        if from == self.me {
            self.on_prepared(answer, cx);
        } else {
            cx.send(from, Msg::Prepared(answer));
        }
    }

    /// The client aborted: every share of `txn` here that has not begun preparing
    /// aborts; a tombstone refuses its late arrivals.
    pub(super) fn on_release(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        self.tombstones.insert(txn, cx.now());
        let mut open: Vec<ShardId> = self
            .ptxns
            .iter()
            .filter(|((t, _), p)| *t == txn && matches!(p.state, PState::Active | PState::Locking { .. }))
            .map(|((_, s), _)| *s)
            .collect();
        open.sort();
        for s in open {
            self.abort_local((txn, s), AbortReason::ReleasedByClient, cx);
        }
    }
}
