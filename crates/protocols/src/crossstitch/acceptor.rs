//! The commit decision (crossstitch.md §3.4): the last server proposes at ballot 0 to
//! itself and its two transaction replicas; acceptors accept, refuse, or (having
//! forgotten) stay silent.

use super::*;

impl Server {
    pub(super) fn acceptor_set(&self) -> [NodeId; 3] {
        let [a, b] = txn_replicas(&self.env.layout, self.me);
        [self.me, a, b]
    }

    // ----- acceptor ------------------------------------------------------------

    pub(super) fn acceptor(&mut self, txn: TxnId, now: Time) -> &mut Acceptor {
        if !self.acceptors.contains_key(&txn) {
            let fresh = Acceptor {
                promised: 0,
                accepted: None,
            };
            self.acceptors.insert(txn, fresh, now);
        }
        self.acceptors.get_mut(&txn).expect("just put in")
    }

    /// Accepts `decision` at `ballot` if allowed; returns whether it did.
    pub(super) fn accept(&mut self, txn: TxnId, ts: u64, ballot: Ballot, decision: &Decision, now: Time) -> bool {
        if !self.may_accept_ballot(txn, ts, ballot) || self.restarting() {
            return false;
        }
        let a = self.acceptor(txn, now);
        if ballot < a.promised {
            return false;
        }
        a.promised = ballot;
        a.accepted = Some((ballot, decision.clone()));
        true
    }

    pub(super) fn on_accept(
        &mut self,
        from: NodeId,
        txn: TxnId,
        ts: u64,
        ballot: Ballot,
        decision: Decision,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if ballot != 0 {
            self.admit_ballot(ballot, cx);
        }
        let ok = self.accept(txn, ts, ballot, &decision, cx.now());
        cx.send(from, Msg::Accepted { txn, ballot, ok });
    }

    pub(super) fn on_prepare(&mut self, from: NodeId, txn: TxnId, ts: u64, ballot: Ballot, cx: &mut Ctx<'_, Msg>) {
        // Silent for a transaction we may have acted for before our crash (by its
        // client's mark, `client_marks`): we may have accepted a
        // decision for it and forgotten it, and a promise saying "nothing accepted"
        // would count as one of the majority that lets recovery pick ABORT over a
        // COMMIT already chosen (by the final server, before it crashed, and one
        // replica). Restarted servers re-sync data, not acceptor state, so a
        // forgetful acceptor is an absent one in phase 1; it may still accept a
        // later ballot in phase 2 (see `may_accept_ballot`).
        // (Not forgetful, it may take any ballot: `may_accept_ballot` adds nothing.)
        if self.forgot(txn, ts) || self.restarting() {
            return;
        }
        self.admit_ballot(ballot, cx);
        let a = self.acceptor(txn, cx.now());
        // A re-sent (or duplicated) prepare of the ballot already promised gets the
        // same promise again: ballots are unique to their proposer, so it is the same
        // proposer asking twice. Refusing it (`>` alone) left a proposer whose own
        // promise was lost unable ever to finish phase 1 (seed 8087 stalled so).
        let ok = ballot >= a.promised;
        a.promised = a.promised.max(ballot);
        let accepted = a.accepted.clone();
        cx.send(
            from,
            Msg::Promise {
                txn,
                ballot,
                ok,
                accepted,
            },
        );
    }

    // ----- proposer ------------------------------------------------------------

    pub(super) fn on_accepted(&mut self, from: NodeId, txn: TxnId, ballot: Ballot, ok: bool, cx: &mut Ctx<'_, Msg>) {
        let Some(p) = self.proposers.get_mut(&txn) else {
            return;
        };
        if p.ballot != ballot {
            return;
        }
        if !ok {
            // A recovery holds a higher ballot (or an acceptor restarted): stop
            // proposing; the outcome is asked for (the last server) or retried (a
            // recovering replica, when asked again, after a back-off).
            self.proposers.remove(&txn);
            if ballot != 0 {
                self.back_off(txn, cx);
            }
            return;
        }
        p.accepted.insert(from);
        if p.accepted.len() >= 2 {
            let p = self.proposers.remove(&txn).expect("present");
            let d = p.value.expect("phase 2 has a value");
            let reason = (!d.commit).then_some(AbortReason::RecoveryNoCommit);
            for w in &p.waiters {
                cx.send(
                    *w,
                    Msg::StatusReply {
                        txn,
                        pos: 0,
                        status: if d.commit {
                            Status::Committed(d.rec.clone())
                        } else {
                            Status::Aborted(AbortReason::RecoveryNoCommit)
                        },
                    },
                );
            }
            // The acceptors learn the outcome too: the final server is who the chain
            // asks, and the transaction replicas are who a later recovery asks. A
            // recovered ABORT carries no chain, so without this the waiters alone
            // heard it, and a waiter that crashed took it with it (seed 7344 once
            // stalled so: every position still asking a final server that had
            // restarted and forgotten).
            for n in p.acceptors {
                if n != self.me && !p.waiters.contains(&n) {
                    cx.send(
                        n,
                        Msg::Decide {
                            txn,
                            commit: d.commit,
                            rec: d.rec.clone(),
                            reason: reason.clone(),
                        },
                    );
                }
            }
            self.decided(txn, d.commit, d.rec.clone(), reason.clone(), false, cx);
            self.broadcast(txn, &d, reason, cx);
        }
    }

    /// Tells every position and replica of a chain (and the client) the outcome.
    pub(super) fn broadcast(&mut self, txn: TxnId, d: &Decision, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let mut to = self.others_of(&d.chain);
        if let Some(last) = d.chain.last() {
            if self.env.layout.is_server(last.node) {
                to.extend(txn_replicas(&self.env.layout, last.node));
            }
        }
        to.remove(&self.me);
        for n in to {
            cx.send(
                n,
                Msg::Decide {
                    txn,
                    commit: d.commit,
                    rec: d.rec.clone(),
                    reason: if d.commit { None } else { reason.clone() },
                },
            );
        }
    }

    /// A recovery of `txn` lost to a higher ballot: wait `query` plus a random part of
    /// it before starting another. Askers re-ask every sweep, faster than a WAN round
    /// trip, so without it two transaction replicas asked to recover the same
    /// transaction pre-empt each other's phase 2 forever.
    pub(super) fn back_off(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let q = self.env.timeouts.query;
        let until = cx.now() + q + cx.rng().gen_range(0..q.max(1));
        self.backoff.insert(txn, until);
    }
}
