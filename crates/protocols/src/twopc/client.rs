//! The 2PC client: reads, buffers writes, and hands the commit to a coordinator.

use super::*;

crate::kit::timers::timers! {
    /// A 2PC client's timers.
    pub(crate) enum ClientTimer {
        Read = 1,
        Status = 2,
        Idle = 3,
    }
}

#[derive(Debug)]
pub(super) enum Phase {
    /// Reads outstanding (one, or a batch sent together).
    Reading(Vec<Key>),
    /// An interactive transaction waits for its caller's next operations.
    Waiting,
    Committing,
}

#[derive(Debug)]
pub(super) struct Current {
    pub(super) ts: Time,
    pub(super) exec: Execution,
    pub(super) rec: TxnRecord,
    pub(super) touched: BTreeSet<NodeId>,
    pub(super) phase: Phase,
}

/// A 2PC client: runs one transaction at a time interactively.
#[derive(Debug)]
pub struct Client {
    pub(super) env: Env,
    pub(super) id: ClientId,
    pub(super) dc: DcId,
    pub(super) coord: NodeId,
    pub(super) cur: Option<Current>,
}

impl Client {
    /// A client on `node`.
    pub fn new(env: Env, node: NodeId, id: ClientId) -> Self {
        let dc = env.layout.dc_of(node);
        let coord = env.layout.server(dc, id.0);
        Client {
            env,
            id,
            dc,
            coord,
            cur: None,
        }
    }

    pub(super) fn step(&mut self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let step = crate::kit::client::next_step(&mut cur.exec, &self.env.registry);
        match step {
            Step::Read(key) => {
                let keys = if cur.exec.batch().is_empty() {
                    vec![key]
                } else {
                    cur.exec.batch().to_vec()
                };
                for key in &keys {
                    let node = self.env.layout.primary(self.env.layout.shard_of(key));
                    cur.touched.insert(node);
                    cx.send(
                        node,
                        Msg::Read {
                            txn: cur.rec.id,
                            ts: cur.ts,
                            key: key.clone(),
                        },
                    );
                }
                cur.phase = Phase::Reading(keys);
                cx.set_timer(self.env.timeouts.read, ClientTimer::Read);
            }
            Step::Abort(reason) => self.abort(reason, cx),
            Step::Wait { output } => {
                cur.phase = Phase::Waiting;
                crate::kit::client::wait_for_caller(cur.rec.id, output, self.env.timeouts.idle, ClientTimer::Idle, cx);
            }
            Step::Done { writes, .. } => {
                let txn = cur.rec.id;
                let finals = crate::kit::client::number_writes(&mut cur.rec, writes);
                let layout = &self.env.layout;
                let mut parts: BTreeMap<NodeId, Part> = BTreeMap::new();
                for r in &cur.rec.reads {
                    part_for(&mut parts, layout, &r.key)
                        .reads
                        .push((r.key.clone(), r.version));
                }
                for (k, (v, val)) in finals {
                    for node in layout.replicas(layout.shard_of(&k)) {
                        part_on(&mut parts, *node).writes.push((k.clone(), v, val.clone()));
                    }
                }
                cx.cancel_timer(ClientTimer::Read);
                cur.rec.commit_start = Some(cx.now());
                if parts.is_empty() {
                    self.finish(Outcome::Committed, None, cx);
                    return;
                }
                cur.phase = Phase::Committing;
                cx.send(
                    self.coord,
                    Msg::Commit {
                        txn,
                        ts: cur.ts,
                        parts: parts.into_values().collect(),
                    },
                );
                cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
            }
        }
    }

    pub(super) fn abort(&mut self, reason: AbortReason, cx: &mut Ctx<'_, Msg>) {
        if let Some(cur) = &self.cur {
            for n in &cur.touched {
                cx.send(*n, Msg::Release { txn: cur.rec.id });
            }
        }
        self.finish(Outcome::Aborted, Some(reason), cx);
    }

    pub(super) fn finish(&mut self, outcome: Outcome, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.take() else { return };
        crate::kit::client::finish(cur.rec, ClientTimer::ALL, outcome, reason, cx);
    }
}

/// The share of the participant that serves `key` (its shard's primary), created empty.
pub(super) fn part_for<'a>(
    parts: &'a mut BTreeMap<NodeId, Part>,
    layout: &meridian_core::Layout,
    key: &Key,
) -> &'a mut Part {
    part_on(parts, layout.primary(layout.shard_of(key)))
}

/// The share of participant `node`, created empty.
pub(super) fn part_on(parts: &mut BTreeMap<NodeId, Part>, node: NodeId) -> &mut Part {
    parts.entry(node).or_insert_with(|| Part {
        node,
        reads: vec![],
        writes: vec![],
    })
}

impl Actor for Client {
    type Msg = Msg;

    fn on_message(&mut self, _from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match msg {
            Msg::ReadReply { txn, key, result } if txn == cur.rec.id => {
                let Phase::Reading(waiting) = &mut cur.phase else {
                    return; // stale
                };
                let Some(i) = waiting.iter().position(|k| *k == key) else {
                    return; // duplicate
                };
                waiting.swap_remove(i);
                let all_in = waiting.is_empty();
                match result {
                    Ok((version, value)) => {
                        crate::kit::client::supply_read(&mut cur.rec, &mut cur.exec, key, version, value);
                        if all_in {
                            cx.cancel_timer(ClientTimer::Read);
                            self.step(cx);
                        }
                    }
                    Err(why) => self.abort(why, cx),
                }
            }
            Msg::Outcome { txn, commit, reason } if txn == cur.rec.id && matches!(cur.phase, Phase::Committing) => {
                let outcome = if commit { Outcome::Committed } else { Outcome::Aborted };
                self.finish(outcome, reason, cx);
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        match (ClientTimer::of(t), &cur.phase) {
            (Some(ClientTimer::Read), Phase::Reading(_)) => self.abort(AbortReason::ReadTimedOut, cx),
            (Some(ClientTimer::Idle), Phase::Waiting) => self.abort(AbortReason::IdleInteractive, cx),
            (Some(ClientTimer::Status), Phase::Committing) => {
                cx.send(
                    self.coord,
                    Msg::Status {
                        txn: cur.rec.id,
                        ts: cur.ts,
                    },
                );
                cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
            }
            _ => {}
        }
    }

    fn on_crash(&mut self) {
        self.cur = None;
    }
}

impl ClientRole for Client {
    fn submit(&mut self, txn: TxnId, call: Call, cx: &mut Ctx<'_, Msg>) {
        let rec = crate::kit::client::new_record(txn, self.id, self.dc, &call, cx);
        self.cur = Some(Current {
            ts: cx.now(),
            exec: Execution::new(call),
            rec,
            touched: BTreeSet::new(),
            phase: Phase::Committing,
        });
        self.step(cx);
    }

    crate::kit::client::interactive_client!(role, ClientTimer::Idle);
}

crate::kit::client::interactive_client!(current);
