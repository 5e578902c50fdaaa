//! The CrossStitch client: ships the whole transaction to its first server and waits
//! for the last server's decision (or asks, and tells the first server's replicas of an
//! abort).

use super::*;

pub(crate) use crate::kit::client::ClientTimer;

#[derive(Clone, Debug)]
pub(super) struct Current {
    pub(super) ts: u64,
    pub(super) rec: TxnRecord,
    pub(super) call: Call,
    pub(super) first: NodeId,
    /// From the first server's ack: position 2 (`Some(None)`: position 1 is last).
    pub(super) after_first: Option<Option<NodeId>>,
    pub(super) acked: bool,
    pub(super) heard: Time,
    pub(super) since: Time,
}

crate::kit::client::client_struct! {
    /// A CrossStitch client: runs the start state, ships the transaction, is position 0 of
    /// its chain.
    pub struct Client {
        /// Shards whose keys failed over (§4.1): their view as last told (`Msg::View`).
        pub(super) views: BTreeMap<u32, ShardView>,
    }
}

impl Client {
    /// A client on `node`.
    pub fn new(env: Env, node: NodeId, id: ClientId) -> Self {
        let who = crate::kit::client::Who::of(&env, node, id);
        Client {
            env,
            who,
            cur: None,
            views: BTreeMap::new(),
        }
    }

    pub(super) fn exec_msg(&self, cur: &Current, me: NodeId) -> Msg {
        Msg::Exec(Exec {
            txn: cur.rec.id,
            ts: cur.ts,
            exec: Execution::new(cur.call.clone()),
            writes_done: 0,
            reads: vec![],
            writes: vec![],
            chain: vec![Hop {
                node: me,
                replicas: vec![],
            }],
            notifies: 0,
        })
    }

    pub(super) fn finish(
        &mut self,
        outcome: Outcome,
        rec: Option<Arc<Rec>>,
        reason: Option<AbortReason>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(mut cur) = self.cur.take() else { return };
        cx.cancel_timer(ClientTimer::Status);
        if let Some(r) = rec {
            cur.rec.reads = r.reads.clone();
            cur.rec.writes = r.writes.clone();
        }
        crate::kit::client::close(cur.rec, outcome, reason, cx);
    }
}

impl Client {
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        if let Msg::View(v) | Msg::CasReply { view: v, .. } = msg {
            self.on_view(v, cx);
            return;
        }
        let Some(cur) = self.cur.as_mut() else { return };
        if msg.txn() != Some(cur.rec.id) {
            return;
        }
        match msg {
            Msg::Ack { txn, pos: 1, next } if from == cur.first => {
                cur.heard = cx.now();
                if !cur.acked {
                    cur.acked = true;
                    cur.after_first = Some(next);
                    cur.rec.commit_start = Some(cx.now());
                    cx.send(from, Msg::Precommit { txn, pos: 1 });
                }
            }
            Msg::Decide {
                commit, rec, reason, ..
            } => {
                if commit {
                    self.finish(Outcome::Committed, rec, None, cx);
                } else {
                    self.finish(Outcome::Aborted, None, reason, cx);
                }
            }
            Msg::StatusReply { status, .. } => match status {
                Status::Committed(Some(rec)) => self.finish(Outcome::Committed, Some(rec), None, cx),
                Status::Committed(None) => {} // the record will come from the last server
                Status::Aborted(r) => {
                    // Learnt by asking (the first server silent, the one after it
                    // killed the transaction): tell the first position too.
                    let (txn, first) = (cur.rec.id, cur.first);
                    self.tell_abort(txn, first, true, r.clone(), cx);
                    self.finish(Outcome::Aborted, None, Some(r), cx)
                }
                Status::Pending => cur.heard = cx.now(),
                Status::Unknown => {}
            },
            _ => {}
        }
    }

    fn on_tick(&mut self, t: ClientTimer, cx: &mut Ctx<'_, Msg>) {
        if t != ClientTimer::Status {
            return;
        }
        let me = cx.me();
        let Some(cur) = self.cur.as_ref() else { return };
        let tm = &self.env.timeouts;
        let now = cx.now();
        let txn = cur.rec.id;
        if !cur.acked {
            if now.saturating_sub(cur.since) >= tm.vote {
                // Not precommitted: the client may abort alone. Its first server was
                // silent: perhaps it lost its shards in a view change this client
                // missed; the witnesses say.
                let first = cur.first;
                failover::ask_witnesses(&self.env, |s| self.primary(s) == first, cx);
                self.abort_alone(AbortReason::FirstServerTimeout, cx);
                return;
            }
            let m = self.exec_msg(cur, me);
            cx.send(cur.first, m);
        } else {
            let ts = cur.ts;
            cx.send(cur.first, Msg::Precommit { txn, pos: 1 });
            cx.send(
                cur.first,
                Msg::Query {
                    txn,
                    ts,
                    pos: 1,
                    kill: false,
                },
            );
            if now.saturating_sub(cur.heard) >= 2 * tm.status {
                // The first server left a query unanswered for a whole period.
                match cur.after_first {
                    Some(Some(n2)) => cx.send(
                        n2,
                        Msg::Query {
                            txn,
                            ts,
                            pos: 2,
                            kill: true,
                        },
                    ),
                    Some(None) => {
                        for r in txn_replicas(&self.env.layout, cur.first) {
                            cx.send(
                                r,
                                Msg::Recover {
                                    txn,
                                    ts,
                                    last: cur.first,
                                },
                            );
                        }
                    }
                    None => {}
                }
            }
        }
        cx.set_timer(tm.status, ClientTimer::Status);
    }
}

impl Client {
    /// The acting primary of shard `s`, as this client was last told.
    fn primary(&self, s: u32) -> NodeId {
        failover::primary_in(&self.views, &self.env.layout, s)
    }

    /// A new view of a shard: later transactions start at its primary, and one sent
    /// to a primary that lost the shard, not yet acknowledged, aborts now rather than
    /// at the vote timeout.
    fn on_view(&mut self, v: ShardView, cx: &mut Ctx<'_, Msg>) {
        let s = v.shard;
        if s >= self.env.layout.topology.shards {
            return;
        }
        let old = self
            .views
            .get(&s)
            .cloned()
            .unwrap_or_else(|| failover::first_view(&self.env.layout, s));
        if v.view <= old.view {
            return;
        }
        let lost = !v.members.contains(&old.primary);
        self.views.insert(s, v);
        if lost && self.cur.as_ref().is_some_and(|c| !c.acked && c.first == old.primary) {
            self.abort_alone(AbortReason::PrimaryFailedOver, cx);
        }
    }

    /// Aborts the transaction in flight, which its first server has not acknowledged
    /// (so no one has precommitted): tells the first server and its partners.
    fn abort_alone(&mut self, why: AbortReason, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        let (txn, first) = (cur.rec.id, cur.first);
        cx.send(
            first,
            Msg::ForwardAbort {
                txn,
                pos: 1,
                reason: why.clone(),
            },
        );
        self.tell_abort(txn, first, false, why.clone(), cx);
        self.finish(Outcome::Aborted, None, Some(why), cx);
    }

    /// The client ends a transaction as aborted without the chain's help (its first
    /// server silent): the replicas of the first server's shards (and, with
    /// `first_too`, the first server) are told directly. Otherwise tentative puts the
    /// first server replicated before going silent wait for an outcome no one gives:
    /// the first server may restart having forgotten them, and the position after it
    /// may never have received the transaction.
    pub(super) fn tell_abort(
        &self,
        txn: TxnId,
        first: NodeId,
        first_too: bool,
        why: AbortReason,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let mut to = partners_of(&self.env.layout, first);
        if first_too {
            to.insert(first);
        }
        for n in to {
            let m = Msg::Decide {
                txn,
                commit: false,
                rec: None,
                reason: Some(why.clone()),
            };
            cx.send(n, m);
        }
    }
}

impl ClientRole for Client {
    fn submit(&mut self, txn: TxnId, call: Call, cx: &mut Ctx<'_, Msg>) {
        let rec = crate::kit::client::new_record(txn, self.who, &call, cx);
        let ts = cx.now() * TS_SCALE + (self.who.id.0 as u64 % TS_SCALE);
        // The start state: compute the first key operation.
        let mut exec = Execution::new(call.clone());
        let first_key = match exec.step_ops(&self.env.registry) {
            Ok((Step::Read(k), ws)) => ws.first().map(|(k, _)| k.clone()).unwrap_or(k),
            Ok((Step::Done { writes, .. }, _)) => match writes.first() {
                Some((k, _)) => k.clone(),
                None => {
                    // No key operation at all: nothing to commit.
                    let mut rec = rec;
                    rec.commit_start = Some(cx.now());
                    crate::kit::client::close(rec, Outcome::Committed, None, cx);
                    return;
                }
            },
            Ok((Step::Abort(r), _)) => {
                crate::kit::client::close(rec, Outcome::Aborted, Some(r), cx);
                return;
            }
            Ok((Step::Wait { .. }, _)) => {
                crate::kit::client::close(rec, Outcome::Aborted, Some(AbortReason::NotInteractive), cx);
                return;
            }
            Err(e) => {
                crate::kit::client::close(rec, Outcome::Aborted, Some(AbortReason::Unrunnable(e.to_string())), cx);
                return;
            }
        };
        let first = self.primary(self.env.layout.shard_of(&first_key).0);
        let cur = Current {
            ts,
            rec,
            call,
            first,
            after_first: None,
            acked: false,
            heard: cx.now(),
            since: cx.now(),
        };
        let m = self.exec_msg(&cur, cx.me());
        cx.send(first, m);
        self.cur = Some(cur);
        cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
    }

    fn in_flight(&self) -> Option<TxnRecord> {
        self.cur.as_ref().map(|c| c.rec.clone())
    }
}

crate::kit::client::client_frame!(ClientTimer);
