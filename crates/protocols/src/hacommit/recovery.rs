//! The recovery proposer (hacommit.md §IV-C): a replica that finds a transaction's
//! client silent runs phase 1 with a higher ballot over every participant's replicas,
//! proposes the value phase 1 dictates (or abort), and spreads the decision.

use super::*;

impl Server {
    pub(super) fn start_recovery(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        // The largest configuration known here: a participant that only served a read
        // knew the configuration up to that operation, and a later one (the client's
        // last operation, its phase-2 message, a voted context) extends it.
        let Some((ts, shards)) = self
            .txns
            .iter()
            .filter(|((_, t), x)| *t == txn && !x.shards.is_empty())
            .map(|(_, x)| (x.prio.0, x.shards.clone()))
            .max_by_key(|(_, s)| s.len())
        else {
            return;
        };
        let round = ((self.max_ballot >> 20) + 1).max(cx.now() / 1_000_000 + 1);
        let ballot = (round << 20) | (self.me.0 as u64 + 1);
        self.max_ballot = ballot;
        self.proposals.insert(
            txn,
            Proposal {
                ts,
                ballot,
                shards: shards.clone(),
                value: None,
                promises: BTreeMap::new(),
                best: None,
                accepts: BTreeMap::new(),
                since: cx.now(),
            },
        );
        for s in &shards {
            for r in self.env.layout.replicas(*s).to_vec() {
                let m = Msg::P1a(P1a {
                    txn,
                    ts,
                    shard: *s,
                    ballot,
                    shards: shards.clone(),
                });
                cx.send(r, m);
            }
        }
    }

    pub(super) fn on_p1b(&mut self, from: NodeId, m: P1b, cx: &mut Ctx<'_, Msg>) {
        let P1b {
            txn,
            shard,
            ballot,
            ok,
            promised,
            accepted,
            chosen,
            ctx,
            forgotten,
        } = m;
        if forgotten {
            // No promise (and no state there): asked again with the next re-send, by
            // when a live transaction's context may have reached it. A recovery of a
            // forgotten transaction gets no majority of promises from a group that
            // forgot it, so it never decides it anew (module docs).
            return;
        }
        self.max_ballot = self.max_ballot.max(promised);
        // Learn a missing context or a chosen decision, whoever asked.
        if let Some(c) = ctx {
            if let Some(t) = self.txns.get_mut(&(shard, txn)) {
                if t.ctx.is_none() && self.groups.contains_key(&shard) {
                    t.ctx = Some(c);
                }
            }
            self.try_apply_chosen((shard, txn), cx);
        }
        if let Some(v) = chosen {
            self.learn_everywhere(txn, v, cx);
        }
        let Some(p) = self.proposals.get_mut(&txn) else {
            return;
        };
        if p.ballot != ballot || p.value.is_some() {
            if let (Some(v), true) = (chosen, p.value.is_none()) {
                p.value = Some(v);
                self.send_p2a(txn, cx);
            }
            return;
        }
        if let Some(v) = chosen {
            // Already decided somewhere: finish propagating that decision.
            p.value = Some(v);
            return self.send_p2a(txn, cx);
        }
        if !ok {
            if promised > ballot {
                // Someone promised a higher ballot: give up this round; the idle rule
                // retries with a higher one.
                self.proposals.remove(&txn);
            }
            // Otherwise a replica that may not act as an acceptor (restarted): no vote.
            return;
        }
        p.promises.entry(shard).or_default().insert(from);
        if let Some(a) = accepted {
            if p.best.is_none_or(|b| a.0 > b.0) {
                p.best = Some(a);
            }
        }
        if majorities(&self.env.layout, &p.shards, &p.promises) {
            p.value = Some(p.best.is_some_and(|b| b.1));
            self.send_p2a(txn, cx);
        }
    }

    /// Re-sends a proposal's current phase to replicas that have not answered it.
    pub(super) fn resend_proposal(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(p) = self.proposals.get(&txn) else { return };
        if p.value.is_some() {
            let accepts = &p.accepts;
            let msgs = self.p2a_msgs(txn, |s, r| accepts.get(&s).is_some_and(|a| a.contains(&r)));
            for (n, m) in msgs {
                cx.send(n, m);
            }
            return;
        }
        for s in &p.shards {
            for r in self.env.layout.replicas(*s) {
                if p.promises.get(s).is_some_and(|a| a.contains(r)) {
                    continue;
                }
                let m = Msg::P1a(P1a {
                    txn,
                    ts: p.ts,
                    shard: *s,
                    ballot: p.ballot,
                    shards: p.shards.clone(),
                });
                cx.send(*r, m);
            }
        }
    }

    pub(super) fn p2a_msgs(&self, txn: TxnId, skip: impl Fn(ShardId, NodeId) -> bool) -> Vec<(NodeId, Msg)> {
        let Some(p) = self.proposals.get(&txn) else {
            return vec![];
        };
        let Some(commit) = p.value else { return vec![] };
        let proposal = P2a {
            txn,
            ts: p.ts,
            targets: p.shards.clone(),
            ballot: p.ballot,
            commit,
            shards: p.shards.clone(),
        };
        p2a_by_node(&self.env.layout, &proposal, skip)
    }

    pub(super) fn send_p2a(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        for (n, m) in self.p2a_msgs(txn, |_, _| false) {
            cx.send(n, m);
        }
    }

    pub(super) fn on_p2b(
        &mut self,
        from: NodeId,
        txn: TxnId,
        ballot: Ballot,
        parts: Vec<P2bPart>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        for part in parts {
            self.p2b_one(from, txn, ballot, part, cx);
        }
    }

    pub(super) fn p2b_one(&mut self, from: NodeId, txn: TxnId, ballot: Ballot, part: P2bPart, cx: &mut Ctx<'_, Msg>) {
        let P2bPart {
            shard,
            ok,
            promised,
            chosen,
            ..
        } = part;
        if promised != Ballot::MAX {
            self.max_ballot = self.max_ballot.max(promised);
        }
        if let Some(v) = chosen {
            // The replica has applied a chosen decision: final, whichever proposal this
            // answers (as in phase 1). Counted only as an acceptance of a live
            // proposal, it was lost when that proposal had given way to a higher
            // ballot, and this replica (the group's leader, holding the locks) waited
            // for a recovery of its own (the one-second crash scan of stop 48).
            self.proposals.remove(&txn);
            return self.learn_everywhere(txn, v, cx);
        }
        let Some(p) = self.proposals.get_mut(&txn) else {
            return;
        };
        if p.ballot != ballot {
            return;
        }
        if ok {
            p.accepts.entry(shard).or_default().insert(from);
        } else if promised != Ballot::MAX && promised > ballot {
            self.proposals.remove(&txn);
            return;
        }
        if majorities(&self.env.layout, &p.shards, &p.accepts) {
            // Chosen: every group's leader learns it from its members' acceptances; this
            // replica learns it now.
            let v = p.value.unwrap_or(false);
            self.proposals.remove(&txn);
            self.learn_everywhere(txn, v, cx);
        }
    }

    /// A chosen decision learnt as a proposer or from a peer: apply it for every shard
    /// of the transaction this node holds.
    pub(super) fn learn_everywhere(&mut self, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        let mut mine: Vec<ShardId> = self.txns.keys().filter(|(_, t)| *t == txn).map(|(s, _)| *s).collect();
        mine.sort();
        for s in mine {
            self.learn(s, txn, commit, cx);
        }
    }

    // ------------------------------------------------------------ replica groups
}

/// Whether every shard of `shards` has answered from a majority of its replicas.
fn majorities(
    layout: &meridian_core::Layout,
    shards: &[ShardId],
    answered: &BTreeMap<ShardId, BTreeSet<NodeId>>,
) -> bool {
    shards
        .iter()
        .all(|s| answered.get(s).map_or(0, |x| x.len()) >= majority_of(layout.replicas(*s).len()))
}
