//! The commit phase at a replica (hacommit.md §IV-B): every replica is an acceptor of
//! the transaction's Paxos instance; it accepts the client's ballot-0 proposal or a
//! recovery proposer's higher ballot, and applies a chosen decision.

use super::*;

impl Server {
    pub(super) fn on_p1a(&mut self, from: NodeId, m: P1a, cx: &mut Ctx<'_, Msg>) {
        let P1a {
            txn,
            ts,
            shard,
            ballot,
            shards,
        } = m;
        if !self.groups.contains_key(&shard) {
            return;
        }
        self.max_ballot = self.max_ballot.max(ballot);
        if let Some(d) = self.done.get(&(shard, txn)) {
            let reply = Msg::P1b(P1b {
                txn,
                shard,
                ballot,
                ok: false,
                promised: 0,
                accepted: None,
                chosen: Some(d.commit),
                ctx: d.ctx.as_deref().cloned(),
                forgotten: false,
            });
            return cx.send(from, reply);
        }
        if self.groups[&shard].status != Status::Syncing && self.forgotten(shard, txn, ts) {
            // Forgotten here (or older than what this replica forgot, and never seen):
            // no promise and no state, or a late phase 1 would bring the transaction
            // back and a recovery could decide it anew (module docs).
            let reply = Msg::P1b(P1b {
                txn,
                shard,
                ballot,
                ok: false,
                promised: 0,
                accepted: None,
                chosen: None,
                ctx: None,
                forgotten: true,
            });
            return cx.send(from, reply);
        }
        let acceptor = self.may_promise(ts, ballot) && self.groups[&shard].status != Status::Syncing;
        let fenced = self.fence_of(shard, ts);
        let now = cx.now();
        if ballot == 0 || !acceptor {
            let t = self.txns.get(&(shard, txn));
            let reply = Msg::P1b(P1b {
                txn,
                shard,
                ballot,
                ok: false,
                promised: t.map_or(0, |t| t.promised),
                accepted: if acceptor { t.and_then(|t| t.accepted) } else { None },
                chosen: t.and_then(|t| t.chosen),
                ctx: t.and_then(|t| t.ctx.clone()),
                forgotten: false,
            });
            return cx.send(from, reply);
        }
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
        if t.shards.is_empty() {
            t.shards = shards;
        }
        t.last_seen = now;
        let ok = t.may_take(ballot, fenced);
        if ok {
            t.promised = ballot;
            if matches!(t.stage, Stage::Active | Stage::Locking { .. }) {
                // A leader that has not voted yet never will now: the transaction is
                // being recovered, and recovery proposes ABORT unless some acceptor took
                // a COMMIT, which would have needed this leader's yes vote.
                let shards = t.shards.clone();
                self.abort_unvoted((shard, txn), AbortReason::RecoveryStarted, cx);
                let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
                t.promised = ballot;
                t.shards = shards;
            }
        }
        let t = &self.txns[&(shard, txn)];
        let reply = Msg::P1b(P1b {
            txn,
            shard,
            ballot,
            ok,
            promised: t.promised,
            accepted: t.accepted,
            chosen: t.chosen,
            ctx: t.ctx.clone(),
            forgotten: false,
        });
        cx.send(from, reply);
    }

    pub(super) fn on_p2a(&mut self, from: NodeId, m: P2a, cx: &mut Ctx<'_, Msg>) {
        let parts: Vec<P2bPart> = m.targets.iter().filter_map(|s| self.p2a_one(&m, *s, cx)).collect();
        if m.ballot == 0 {
            // The client waits for the decision where its ballot was refused: tell it
            // once the decision is applied here (`try_apply_chosen`), rather than at its
            // next re-send, a whole `status` later.
            for p in parts.iter().filter(|p| !p.ok && p.chosen.is_none()) {
                if let Some(t) = self.txns.get_mut(&(p.shard, m.txn)) {
                    t.refused_client = Some(from);
                }
            }
        }
        if !parts.is_empty() {
            let reply = Msg::P2b {
                txn: m.txn,
                ballot: m.ballot,
                parts,
            };
            cx.send(from, reply);
        }
    }

    /// Phase 2 at this replica of `shard`: the answer to the proposer, if this node
    /// holds the shard.
    pub(super) fn p2a_one(&mut self, m: &P2a, shard: ShardId, cx: &mut Ctx<'_, Msg>) -> Option<P2bPart> {
        let (txn, ts, ballot, commit, shards) = (m.txn, m.ts, m.ballot, m.commit, &m.shards[..]);
        let g = self.groups.get(&shard)?;
        self.max_ballot = self.max_ballot.max(ballot);
        if let Some(d) = self.done.get(&(shard, txn)) {
            return Some(P2bPart {
                shard,
                ok: false,
                promised: 0,
                chosen: Some(d.commit),
                forgotten: false,
            });
        }
        let syncing = g.status == Status::Syncing;
        // (A syncing replica's mark may have risen with a first peer's answer before
        // the peer that holds the transaction answered: it is no acceptor yet anyway.)
        if !syncing && (ballot != 0 || commit) && self.forgotten(shard, txn, ts) {
            // A transaction older than what this replica forgot, and unknown here: a
            // late copy of a forgotten one's phase 2, or a live one this replica holds
            // no context or promise of (a group that voted holds the context at a
            // majority, which accept). Only the client's ABORT is taken, always safe.
            // (module docs, "Forgetting decided transactions").
            return Some(P2bPart {
                shard,
                ok: false,
                promised: Ballot::MAX,
                chosen: None,
                forgotten: true,
            });
        }
        if !self.may_accept_ballot(ts, ballot) || syncing {
            if ballot == 0 && !syncing && !self.proposals.contains_key(&txn) {
                // The client's ballot 0 reached a replica that restarted after the
                // transaction began and may have forgotten it. The client may never
                // gather a majority here (its re-sends skip replicas that already
                // acknowledged, such as a leader that has since learnt the outcome),
                // and while it keeps re-sending no one thinks it silent. Recover the
                // transaction now with a ballot this replica may answer: phase 1
                // meets whoever knows the outcome or accepted the client's value, and
                // the client's next re-send here is answered with the decision.
                let now = cx.now();
                let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
                if t.shards.is_empty() || ballot == 0 {
                    t.shards = shards.to_vec();
                }
                self.start_recovery(txn, cx);
            }
            // A recovery ballot at or below the floor: say how high to go, so the
            // proposer's next ballot is one this replica can accept.
            let promised = if ballot != 0 && !syncing {
                self.ballot_floor
            } else {
                Ballot::MAX
            };
            return Some(P2bPart {
                shard,
                ok: false,
                promised,
                chosen: None,
                forgotten: false,
            });
        }
        let leader = g.leader();
        let i_lead = self.is_leader(shard);
        let now = cx.now();
        let fenced = self.fence_of(shard, ts);
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
        if t.shards.is_empty() || ballot == 0 {
            t.shards = shards.to_vec();
        }
        t.last_seen = now;
        let ok = t.may_take(ballot, fenced);
        if ok {
            t.promised = ballot;
            t.accepted = Some((ballot, commit));
            t.own = Some((ballot, commit));
        }
        let part = P2bPart {
            shard,
            ok,
            promised: t.promised,
            chosen: None,
            forgotten: false,
        };
        if !ok {
            if ballot == 0 && fenced > 0 && !self.proposals.contains_key(&txn) {
                // The client's ballot 0 for a transaction a restarted peer fenced: it
                // cannot be chosen now; recover the transaction rather than leave the
                // client re-sending until someone thinks it silent.
                self.start_recovery(txn, cx);
            } else if ballot == 0 && !self.proposals.contains_key(&txn) {
                // Refused because a recovery promised a higher ballot, and that
                // recovery runs nowhere here: it may have been dropped (it stalled in a
                // partition), and the client's re-sends keep this replica from ever
                // thinking the transaction silent. Recover it (after the usual
                // back-off) so that the client's next re-send learns the outcome (a
                // campaign stall with the early recovery of blocking transactions).
                if self.txns.get(&(shard, txn)).is_some_and(|t| t.recover_at.is_none()) {
                    self.arm_recovery((shard, txn), cx);
                }
            }
            return Some(part);
        }
        if ballot == 0 && !commit {
            // The client's ABORT: COMMIT can never be chosen (only the client proposes
            // it, at ballot 0), so it is final now.
            self.learn(shard, txn, false, cx);
            return Some(part);
        }
        if i_lead {
            self.count_accept(shard, txn, self.me, ballot, commit, cx);
        } else {
            if let Some(t) = self.txns.get_mut(&(shard, txn)) {
                t.reported = now;
            }
            cx.send(
                leader,
                Msg::Accepted(Accepted {
                    txn,
                    shard,
                    ballot,
                    commit,
                    shards: shards.to_vec(),
                    ts,
                }),
            );
        }
        Some(part)
    }

    /// Leader: a group member accepted (ballot, decision); a majority makes it chosen.
    pub(super) fn count_accept(
        &mut self,
        shard: ShardId,
        txn: TxnId,
        from: NodeId,
        ballot: Ballot,
        commit: bool,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(g) = self.groups.get(&shard) else { return };
        let need = g.majority();
        let Some(t) = self.txns.get_mut(&(shard, txn)) else {
            return;
        };
        let mine = t.own == Some((ballot, commit));
        let e = t.acc.entry(ballot).or_insert_with(|| (commit, BTreeSet::new()));
        e.1.insert(from);
        if mine {
            // Our own acceptance counts too, even one made before we led the group.
            e.1.insert(self.me);
        }
        if e.1.len() >= need {
            let v = e.0;
            self.learn(shard, txn, v, cx);
        }
    }

    pub(super) fn on_accepted(&mut self, from: NodeId, m: Accepted, cx: &mut Ctx<'_, Msg>) {
        let Accepted {
            txn,
            shard,
            ballot,
            commit,
            shards,
            ts,
        } = m;
        if !self.is_leader(shard) || self.forgotten(shard, txn, ts) {
            return;
        }
        if let Some(d) = self.done.get(&(shard, txn)) {
            // Decided already: the follower missed it.
            let done = DoneInfo {
                txn,
                commit: d.commit,
                ctx: d.ctx.as_deref().cloned(),
                shards: d.shards.clone(),
                ts: d.ts,
            };
            return cx.send(
                from,
                Msg::Decided {
                    shard,
                    done: vec![done],
                },
            );
        }
        let now = cx.now();
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
        if t.shards.is_empty() {
            t.shards = shards;
        }
        self.count_accept(shard, txn, from, ballot, commit, cx);
    }

    // ------------------------------------------------------------ learning

    /// The decision of `txn` is chosen: apply it here (once the context is known).
    pub(super) fn learn(&mut self, shard: ShardId, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        if self.done.contains_key(&(shard, txn)) {
            return;
        }
        let now = cx.now();
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, 0, now));
        t.chosen = Some(commit);
        self.try_apply_chosen((shard, txn), cx);
    }

    pub(super) fn try_apply_chosen(&mut self, key: (ShardId, TxnId), cx: &mut Ctx<'_, Msg>) {
        let (shard, txn) = key;
        let now = cx.now();
        let sweep = self.env.timeouts.sweep;
        let Some(t) = self.txns.get_mut(&key) else { return };
        let Some(commit) = t.chosen else { return };
        if commit && t.ctx.is_none() {
            // Chosen COMMIT, but this replica never got the writes: ask the group, at
            // most once a sweep. Every answer that says "chosen" comes back here (by
            // `learn`); asking again on each of them made the asks multiply when no
            // peer had the writes either (campaign seed 744: two million answers
            // queued at one replica, and the campaign killed for memory).
            if t.ctx_asked.is_some_and(|at| now < at + sweep) {
                return;
            }
            t.ctx_asked = Some(now);
            let ts = t.prio.0;
            let shards = t.shards.clone();
            let peers: Vec<NodeId> = self.groups[&shard].replicas.clone();
            for p in peers.into_iter().filter(|p| *p != self.me) {
                let m = Msg::P1a(P1a {
                    txn,
                    ts,
                    shard,
                    ballot: 0,
                    shards: shards.clone(),
                });
                cx.send(p, m);
            }
            return;
        }
        let t = self.txns.remove(&key).expect("present");
        if let Some(client) = t.refused_client {
            let part = P2bPart {
                shard,
                ok: false,
                promised: 0,
                chosen: Some(commit),
                forgotten: false,
            };
            cx.send(
                client,
                Msg::P2b {
                    txn,
                    ballot: 0,
                    parts: vec![part],
                },
            );
        }
        let ts = t.ctx.as_ref().map_or(t.prio.0, |c| c.ts);
        let shards = if t.shards.is_empty() {
            t.ctx.as_ref().map(|c| c.shards.clone()).unwrap_or_default()
        } else {
            t.shards.clone()
        };
        let ctx = if commit { t.ctx } else { None };
        if let Some(c) = &ctx {
            cx.charge_ops(c.writes.len() as u32);
            for (k, v, val) in &c.writes {
                self.store.install(k, *v, val.clone(), c.seq);
            }
        }
        t.pending_reads.refuse_all(cx, |key| Msg::ReadReply {
            txn,
            key,
            result: Err(AbortReason::Aborted),
        });
        if let Some(h) = t.locked_at {
            self.holds.add(h, cx.hops());
        }
        self.release(shard, txn, cx);
        self.expiring.push_back((cx.now(), key));
        self.done.insert(
            key,
            Done {
                commit,
                ctx: ctx.map(std::sync::Arc::new),
                at: cx.now(),
                ts,
                shards,
            },
        );
        if self.is_leader(shard) {
            // Followers hear of it with the next sweep's batch.
            let g = self.groups.get_mut(&shard).expect("group");
            let followers: BTreeSet<NodeId> = g.replicas.iter().copied().filter(|n| *n != self.me).collect();
            g.pushing.insert(txn, (followers, 0));
        }
    }
}
