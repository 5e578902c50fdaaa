//! The 2PC client: reads, buffers writes, and hands the commit to a coordinator.

use super::*;
use crate::kit::client::Next;

pub(crate) use crate::kit::client::ClientTimer;

#[derive(Clone, Debug)]
pub(super) enum Phase {
    /// Reads outstanding (one, or a batch sent together).
    Reading(Vec<Key>),
    /// An interactive transaction waits for its caller's next operations.
    Waiting,
    Committing,
}

crate::kit::client::client_struct! {
    /// A 2PC client: runs one transaction at a time interactively.
    pub struct Client {
        pub(super) coord: NodeId,
    }
    /// A transaction in flight.
    pub(super) struct Current {
        pub(super) touched: BTreeSet<NodeId>,
    }
}

impl Client {
    /// A client on `node`.
    pub fn new(env: Env, node: NodeId, id: ClientId) -> Self {
        let who = crate::kit::client::Who::of(&env, node, id);
        let coord = env.layout.server(who.dc, id.0);
        Client {
            env,
            who,
            coord,
            cur: None,
        }
    }

    /// Takes the program's next step (the frame's `step` runs the program to it).
    fn on_step(&mut self, next: Next, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match next {
            Next::Read(key) => {
                let keys = if cur.t.exec.batch().is_empty() {
                    vec![key]
                } else {
                    cur.t.exec.batch().to_vec()
                };
                send_reads(&self.env, cur, &keys, cx);
                cur.phase = Phase::Reading(keys);
                crate::kit::client::read_sent(&self.env, cx);
            }
            Next::Abort(reason) => self.abort(reason, cx),
            Next::Done(writes) => {
                let finals = cur.t.to_commit(writes, ClientTimer::Read, cx);
                let parts = commit_parts(&self.env.layout, &cur.t.rec.reads, finals);
                if parts.is_empty() {
                    self.finish(Outcome::Committed, None, cx);
                    return;
                }
                cur.phase = Phase::Committing;
                cx.send(
                    self.coord,
                    Msg::Commit {
                        txn: cur.t.rec.id,
                        ts: cur.t.rec.start,
                        parts,
                    },
                );
                cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
            }
        }
    }

    pub(super) fn abort(&mut self, reason: AbortReason, cx: &mut Ctx<'_, Msg>) {
        if let Some(cur) = &self.cur {
            for n in &cur.touched {
                cx.send(*n, Msg::Release { txn: cur.t.rec.id });
            }
        }
        self.finish(Outcome::Aborted, Some(reason), cx);
    }
}

/// Sends the reads of `keys` to their shards' primaries (a first send, or a re-send of
/// those unanswered: [`crate::kit::client::read_sent`]).
fn send_reads(env: &Env, cur: &mut Current, keys: &[Key], cx: &mut Ctx<'_, Msg>) {
    for key in keys {
        let node = env.layout.primary(env.layout.shard_of(key));
        cur.touched.insert(node);
        let (txn, ts, key) = (cur.t.rec.id, cur.t.rec.start, key.clone());
        cx.send(node, Msg::Read(LockedRead { txn, ts, key }));
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

/// The commit request's share of each participant, in node order: each key read goes
/// to its shard's primary (with the version read), each final write to every replica of
/// its shard.
fn commit_parts(
    layout: &meridian_core::Layout,
    reads: &[meridian_core::ReadRec],
    finals: BTreeMap<Key, (meridian_core::VersionId, meridian_core::Value)>,
) -> Vec<Part> {
    let mut parts: BTreeMap<NodeId, Part> = BTreeMap::new();
    for r in reads {
        part_for(&mut parts, layout, &r.key)
            .reads
            .push((r.key.clone(), r.version));
    }
    for (k, (v, val)) in finals {
        for node in layout.replicas(layout.shard_of(&k)) {
            part_on(&mut parts, *node).writes.push((k.clone(), v, val.clone()));
        }
    }
    parts.into_values().collect()
}

/// The share of participant `node`, created empty.
pub(super) fn part_on(parts: &mut BTreeMap<NodeId, Part>, node: NodeId) -> &mut Part {
    parts.entry(node).or_insert_with(|| Part {
        node,
        reads: vec![],
        writes: vec![],
    })
}

impl Client {
    pub(super) fn receive(&mut self, _from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match msg {
            Msg::ReadReply(ReadAnswer { txn, key, result }) if txn == cur.t.rec.id => {
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
                        crate::kit::client::supply_read(&mut cur.t.rec, &mut cur.t.exec, key, version, value);
                        if all_in {
                            crate::kit::client::reads_in(cx);
                            self.step(cx);
                        }
                    }
                    Err(why) => self.abort(why, cx),
                }
            }
            Msg::Outcome { txn, commit, reason } if txn == cur.t.rec.id && matches!(cur.phase, Phase::Committing) => {
                if commit {
                    self.finish(Outcome::Committed, reason, cx);
                } else if let Some(why @ (AbortReason::AbortedQueried | AbortReason::CoordinatorRestarted)) = reason {
                    // The coordinator never got the Commit (lost, or lost with its
                    // crash) and presumed the abort when asked, or got it after its
                    // restart and presumed the abort of a transaction begun before: it
                    // told no participant, and the servers the client read at would hold
                    // its shared locks until `idle` (10 s). The client releases them
                    // (stop 46; the restart case stop 47: a one-second crash of node 0
                    // cost 2PC-2PL ten seconds, writers waiting behind such a lock).
                    self.abort(why, cx);
                } else {
                    self.finish(Outcome::Aborted, reason, cx);
                }
            }
            _ => {}
        }
    }

    fn on_tick(&mut self, t: ClientTimer, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match (t, &cur.phase) {
            (ClientTimer::Read, Phase::Reading(_)) => self.abort(AbortReason::ReadTimedOut, cx),
            (ClientTimer::Resend, Phase::Reading(keys)) => {
                let keys = keys.clone();
                send_reads(&self.env, cur, &keys, cx);
                cx.set_timer(self.env.timeouts.failover, ClientTimer::Resend);
            }
            (ClientTimer::Idle, Phase::Waiting) => self.abort(AbortReason::IdleInteractive, cx),
            (ClientTimer::Status, Phase::Committing) => {
                cx.send(
                    self.coord,
                    Msg::Status {
                        txn: cur.t.rec.id,
                        ts: cur.t.rec.start,
                    },
                );
                cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
            }
            _ => {}
        }
    }
}

crate::kit::client::client_frame!(ClientTimer, interactive: ClientTimer::Idle, begin: |t| Current {
    t,
    touched: BTreeSet::new(),
    phase: Phase::Committing,
});
