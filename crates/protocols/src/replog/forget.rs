//! Forgetting decided transactions (not in the paper, whose logs grow for ever; a
//! store that runs for a day cannot keep every decision).
//!
//! Every replica records each decision its shard's log applies (`Group::decided`):
//! it answers a cohort that re-sends its vote, a client's status question and a late
//! PREPARE, whoever leads. A decision is dropped only through the log: the leader
//! proposes a FORGET entry naming decisions that are
//! - at least `replog:forget` old (the tombstone period by default: a message later
//!   than that is outside what the protocol promises to handle, as for tombstones), and
//! - settled: an abort always (an unknown transaction is presumed aborted, and a
//!   cohort that asks about one gets an ABORT entry again), a commit once every cohort
//!   shard has nothing of it pending. The leader asks each cohort (`SettleQuery`, at
//!   most once a query period); the cohort's leader answers for the transactions that
//!   are neither prepared there nor in its log's unapplied slots, and only while it
//!   holds its lease: a leader that might have been replaced could miss a PREPARE a
//!   successor chose.
//!
//! Every replica applies the FORGET entry in log order, so a new leader rebuilds from
//! the same record. Forgetting raises the shard's mark `forgot_ts`, the largest start
//! timestamp forgotten: a client asking about a transaction unknown here and no newer
//! than the mark is told its outcome is lost (`Msg::Forgotten`; the client records it
//! as unknown) rather than presumed aborted, since it may have committed. A vote for a
//! transaction unknown at its coordinator and no newer than the mark (`Prepared::ts`)
//! logs nothing: an ABORT entry could contradict a forgotten COMMIT; a yes vote is
//! answered with an unlogged abort (`commit.rs`). A replica back from a crash supports
//! no candidate but the one it last promised for a lease (`Group::quiet_until`), so a
//! successor cannot choose a PREPARE behind a leader whose lease still holds.
//!
//! Weak points: a cohort group without a leader keeps its coordinators' commits from
//! being forgotten until it has one; the scan for due decisions looks at most
//! `FORGET_BATCH` of the oldest a sweep, so a long run of unsettled ones at the front
//! delays the others.

use super::*;

/// At most this many due decisions are looked at (and forgotten) per sweep and shard.
pub(super) const FORGET_BATCH: usize = 4096;

impl Group {
    /// Records the decision of `txn` applied here (the first one: a shard's log holds
    /// one decision per transaction). `p` is the shard's PREPARE of it, if applied.
    pub(super) fn record_decision(
        &mut self,
        s: ShardId,
        txn: TxnId,
        commit: bool,
        p: Option<&PrepareEntry>,
        now: Time,
    ) {
        if self.decided.contains_key(&txn) {
            return;
        }
        let waiting = match p {
            Some(p) if commit && p.coord == s => p.parts.iter().copied().filter(|q| *q != s).collect(),
            _ => vec![],
        };
        let ts = p.map(|p| p.ts);
        self.decided.insert(txn, Decision { commit, ts, waiting }, now);
    }

    /// Applies a FORGET entry.
    pub(super) fn forget(&mut self, txns: &[TxnId]) {
        for t in txns {
            if let Some(d) = self.decided.remove(t) {
                self.forgot_ts = self.forgot_ts.max(d.ts);
            }
        }
        self.decided.compact();
    }
}

impl Server {
    /// Leader, each sweep: proposes a FORGET entry for the due decisions that are
    /// settled, and asks the cohorts about the due commits that are not.
    pub(super) fn forget_settled(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let (forget, query) = (self.forget, self.env.timeouts.query);
        let g = self.groups.get_mut(&s).expect("group");
        if g.forgetting.is_some_and(|slot| slot >= g.applied) {
            return; // the last FORGET is not applied yet
        }
        let mut gone = vec![];
        let mut ask: BTreeMap<ShardId, Vec<TxnId>> = BTreeMap::new();
        for t in g.decided.due(now, forget, FORGET_BATCH) {
            let Some(d) = g.decided.get(&t) else { continue };
            if d.waiting.is_empty() {
                gone.push(t);
            } else {
                for c in &d.waiting {
                    ask.entry(*c).or_default().push(t);
                }
            }
        }
        if !ask.is_empty() && now.saturating_sub(g.settle_asked) >= query {
            g.settle_asked = now;
        } else {
            ask.clear();
        }
        if !gone.is_empty() {
            g.forgetting = Some(g.next_slot);
            self.propose(s, Entry::Forget(gone), cx);
        }
        for (c, txns) in ask {
            if self.leads(c) {
                let me = self.me;
                self.on_settle_query(me, s, c, txns, cx);
                continue;
            }
            let to = match self.groups.get(&c).and_then(|g| g.live_leader(now, &self.env)) {
                Some(l) => vec![l],
                None => self.env.layout.replicas(c).to_vec(),
            };
            for r in to {
                cx.send(
                    r,
                    Msg::SettleQuery {
                        coord: s,
                        shard: c,
                        txns: txns.clone(),
                    },
                );
            }
        }
    }

    /// Cohort leader: which of `txns` have nothing pending at shard `s`? Answered only
    /// under a lease (module docs).
    pub(super) fn on_settle_query(
        &mut self,
        from: NodeId,
        coord: ShardId,
        s: ShardId,
        txns: Vec<TxnId>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if !self.holds_lease(s, cx.now()) {
            return;
        }
        let g = &self.groups[&s];
        let unapplied: BTreeSet<TxnId> = g
            .log
            .range(g.applied..)
            .filter_map(|(_, (_, e))| match e {
                Entry::Prepare(p) => Some(p.txn),
                _ => None,
            })
            .collect();
        let settled: Vec<TxnId> = txns
            .into_iter()
            .filter(|t| !g.writes.contains_key(t) && !unapplied.contains(t) && !self.ptxns.contains_key(&(*t, s)))
            .collect();
        cx.charge_ops(settled.len() as u32);
        if from == self.me {
            self.on_settled(from, coord, s, settled);
        } else {
            cx.send(
                from,
                Msg::Settled {
                    coord,
                    shard: s,
                    txns: settled,
                },
            );
        }
    }

    /// Coordinator leader: cohort `shard` has applied the decisions of `txns`.
    pub(super) fn on_settled(&mut self, _from: NodeId, coord: ShardId, shard: ShardId, txns: Vec<TxnId>) {
        let Some(g) = self.groups.get_mut(&coord) else { return };
        if !g.leading {
            return;
        }
        for t in txns {
            if let Some(d) = g.decided.get_mut(&t) {
                d.waiting.retain(|c| *c != shard);
            }
        }
    }
}
