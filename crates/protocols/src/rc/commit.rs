//! Paxos across DCs (replicated-commit.md §4.2): each DC's coordinator accepts the
//! client's value, prepares its shards, and votes; a majority of DCs decides; the
//! decision is applied everywhere; queries resolve in-doubt transactions.

use super::*;
use crate::kit::vote::{DcVote, Decided};

impl Server {
    pub(super) fn peers(&self, coord: ShardId) -> Vec<NodeId> {
        self.env
            .layout
            .replicas(coord)
            .iter()
            .copied()
            .filter(|n| *n != self.me)
            .collect()
    }

    pub(super) fn on_accept(&mut self, from: NodeId, txn: TxnId, value: Arc<TxnValue>, cx: &mut Ctx<'_, Msg>) {
        if let Some(&commit) = self.done.get(&txn) {
            let value = self.ctxns.get(&txn).and_then(|c| c.value.clone()).filter(|_| commit);
            cx.send(from, Msg::Decided(Decided { txn, commit, value }));
            return;
        }
        let now = cx.now();
        let c = self
            .ctxns
            .entry(txn)
            .or_insert_with(|| CTxn::new(value.coord, Some(value.clone()), now));
        if c.value.is_none() {
            c.value = Some(value);
        }
        if let Some(accept) = c.my_vote {
            let (dc, reason) = (self.dc, c.reason.clone());
            let value = if accept { c.value.clone() } else { None };
            cx.send(
                from,
                Msg::Vote(DcVote {
                    txn,
                    dc,
                    accept,
                    reason,
                    value,
                    reply: false,
                }),
            );
            return;
        }
        if !c.preparing {
            self.start_prepare(txn, cx);
        }
    }

    /// Runs 2PC prepare inside this DC.
    pub(super) fn start_prepare(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        let Some(value) = c.value.clone() else { return };
        c.preparing = true;
        c.since = cx.now();
        let cohorts = value.cohorts(&self.env.layout, self.dc);
        c.cohorts = cohorts.keys().map(|n| (*n, false)).collect();
        if cohorts.is_empty() {
            self.cast_vote(txn, true, None, cx);
            return;
        }
        for (node, share) in cohorts {
            cx.send(
                node,
                Msg::Prepare {
                    txn,
                    ts: value.ts,
                    coord: value.coord,
                    share,
                },
            );
        }
    }

    pub(super) fn on_prepared(
        &mut self,
        from: NodeId,
        txn: TxnId,
        yes: bool,
        reason: Option<AbortReason>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        if c.my_vote.is_some() || c.decided.is_some() || !c.preparing {
            return;
        }
        if !yes {
            let why = reason.unwrap_or(AbortReason::CohortDidNotPrepare);
            self.cast_vote(txn, false, Some(why), cx);
            return;
        }
        if let Some(p) = c.cohorts.get_mut(&from) {
            *p = true;
        }
        if c.cohorts.values().all(|p| *p) {
            self.cast_vote(txn, true, None, cx);
        }
    }

    /// Force-logs this DC's vote and tells the client and the other DCs.
    pub(super) fn cast_vote(&mut self, txn: TxnId, accept: bool, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let dc = self.dc;
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        c.my_vote = Some(accept);
        c.preparing = false;
        c.reason = reason.clone();
        c.votes.insert(dc, accept);
        c.since = cx.now();
        let value = if accept { c.value.clone() } else { None };
        let coord = c.coord;
        let client = c.value.as_ref().map(|v| v.client);
        self.log.append_sync(
            Rec::Voted {
                txn,
                accept,
                coord,
                value: value.clone(),
            },
            cx,
        );
        let vote = Msg::Vote(DcVote {
            txn,
            dc,
            accept,
            reason,
            value,
            reply: false,
        });
        if let Some(cl) = client {
            cx.send(cl, vote.clone());
        }
        for p in self.peers(coord) {
            cx.send(p, vote.clone());
        }
        self.check_decision(txn, cx);
    }

    pub(super) fn on_vote(&mut self, from: NodeId, v: DcVote<TxnValue>, cx: &mut Ctx<'_, Msg>) {
        let DcVote {
            txn,
            dc,
            accept,
            value,
            reply,
            ..
        } = v;
        if let Some(&commit) = self.done.get(&txn) {
            if reply {
                let value = self.ctxns.get(&txn).and_then(|c| c.value.clone()).filter(|_| commit);
                cx.send(from, Msg::Decided(Decided { txn, commit, value }));
            }
            return;
        }
        let now = cx.now();
        let Some(coord) = value
            .as_ref()
            .map(|v| v.coord)
            .or_else(|| self.ctxns.get(&txn).map(|c| c.coord))
            .or_else(|| {
                // A reject from a peer about a transaction unknown here: the peer's node
                // index in its DC is the coordinator shard's.
                let npd = self.env.layout.topology.nodes_per_dc;
                Some(ShardId(from.0 % npd))
            })
        else {
            return;
        };
        let c = self
            .ctxns
            .entry(txn)
            .or_insert_with(|| CTxn::new(coord, value.clone(), now));
        if c.value.is_none() {
            c.value = value;
        }
        c.votes.insert(dc, accept);
        if reply {
            if let Some(mine) = c.my_vote {
                let v = if mine { c.value.clone() } else { None };
                let msg = Msg::Vote(DcVote {
                    txn,
                    dc: self.dc,
                    accept: mine,
                    reason: c.reason.clone(),
                    value: v,
                    reply: false,
                });
                cx.send(from, msg);
            }
        }
        // A DC that never got the client's request prepares once it learns the value.
        if c.my_vote.is_none() && !c.preparing && c.value.is_some() {
            self.start_prepare(txn, cx);
        }
        self.check_decision(txn, cx);
    }

    pub(super) fn on_decided(
        &mut self,
        from: NodeId,
        txn: TxnId,
        commit: bool,
        value: Option<Arc<TxnValue>>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if self.done.contains_key(&txn) {
            let mine_applied = self.ctxns.get(&txn).is_none_or(|c| c.applied.contains(&self.dc));
            if commit && mine_applied {
                cx.send(from, Msg::Applied { txn });
            }
            return;
        }
        let now = cx.now();
        let Some(coord) = value
            .as_ref()
            .map(|v| v.coord)
            .or_else(|| self.ctxns.get(&txn).map(|c| c.coord))
        else {
            return;
        };
        let c = self
            .ctxns
            .entry(txn)
            .or_insert_with(|| CTxn::new(coord, value.clone(), now));
        if c.value.is_none() {
            c.value = value;
        }
        if commit && c.value.is_none() {
            return; // cannot install without the value; a later answer will carry it
        }
        self.decide(txn, commit, cx);
    }

    pub(super) fn check_decision(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get(&txn) else { return };
        if c.decided.is_some() {
            return;
        }
        if let Some(commit) = crate::kit::vote::verdict(&c.votes, c.value.is_some(), self.ndcs()) {
            self.decide(txn, commit, cx);
        }
    }

    /// The outcome is known: run 2PC commit (or abort) in this DC.
    pub(super) fn decide(&mut self, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        let dc = self.dc;
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        c.decided = Some(commit);
        c.preparing = false;
        c.since = cx.now();
        self.done.insert(txn, commit);
        let value = c.value.clone();
        self.log.append(
            Rec::Decided {
                txn,
                commit,
                value: value.clone().filter(|_| commit),
            },
            cx,
        );
        let Some(value) = value else {
            self.ctxns.remove(&txn);
            return;
        };
        let cohorts = value.cohorts(&self.env.layout, dc);
        for (node, share) in cohorts {
            let writes = if commit { share.writes } else { vec![] };
            cx.send(
                node,
                Msg::Commit {
                    txn,
                    commit,
                    ts: value.ts,
                    writes,
                },
            );
        }
        if !commit {
            self.ctxns.remove(&txn);
        }
    }

    pub(super) fn on_ack(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let dc = self.dc;
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        if c.decided != Some(true) {
            return;
        }
        c.acks.insert(from);
        let all = c
            .value
            .as_ref()
            .map(|v| v.cohorts(&self.env.layout, dc).keys().all(|n| c.acks.contains(n)))
            .unwrap_or(true);
        if all && c.applied.insert(dc) {
            let coord = c.coord;
            for p in self.peers(coord) {
                cx.send(p, Msg::Applied { txn });
            }
            self.maybe_end(txn, cx);
        }
    }

    pub(super) fn on_applied(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let dc = self.env.layout.dc_of(from);
        if let Some(c) = self.ctxns.get_mut(&txn) {
            c.applied.insert(dc);
            self.maybe_end(txn, cx);
        }
    }

    /// A committed transaction is forgotten once every DC has applied it.
    pub(super) fn maybe_end(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let n = self.ndcs();
        if self.ctxns.get(&txn).is_some_and(|c| c.applied.len() == n) {
            self.ctxns.remove(&txn);
            self.log.append(Rec::Ended { txn }, cx);
        }
    }

    pub(super) fn on_query(&mut self, from: NodeId, txn: TxnId, coord: ShardId, cx: &mut Ctx<'_, Msg>) {
        if let Some(&commit) = self.done.get(&txn) {
            let c = self.ctxns.get(&txn);
            let (ts, writes) = match c.and_then(|c| c.value.clone()) {
                Some(v) if commit => {
                    let share = v.cohorts(&self.env.layout, self.dc).remove(&from).unwrap_or_default();
                    (v.ts, share.writes)
                }
                _ if commit => return, // value not known here yet
                _ => (0, vec![]),
            };
            cx.send(
                from,
                Msg::Commit {
                    txn,
                    commit,
                    ts,
                    writes,
                },
            );
            return;
        }
        let now = cx.now();
        let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(coord, None, now));
        if c.my_vote.is_none() && !c.preparing {
            // Never voted (this coordinator restarted before voting): it cannot have
            // accepted, so rejecting is safe; the peers' votes will settle the outcome.
            self.cast_vote(txn, false, Some(AbortReason::CoordinatorRestartedBeforeVoting), cx);
            self.ask_peers(txn, cx);
        }
    }

    /// Re-sends this DC's vote to the peers not heard from, asking for theirs.
    pub(super) fn ask_peers(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get(&txn) else { return };
        let Some(mine) = c.my_vote else { return };
        let value = if mine { c.value.clone() } else { None };
        for p in self.peers(c.coord) {
            if c.votes.contains_key(&self.env.layout.dc_of(p)) {
                continue;
            }
            cx.send(
                p,
                Msg::Vote(DcVote {
                    txn,
                    dc: self.dc,
                    accept: mine,
                    reason: c.reason.clone(),
                    value: value.clone(),
                    reply: true,
                }),
            );
        }
    }

    // ------------------------------------------------------------ housekeeping
}
