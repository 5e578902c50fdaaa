//! The client of deferred execution (§III-B1–4): a global snapshot set by the first
//! read, a read cache and buffered writes (the program's `Execution`), one commit
//! request per involved data node; in `2pc-deferred` the client also coordinates 2PC.

use super::*;
use crate::kit::client as kit;
use crate::kit::client::Next;
use meridian_core::{AbortReason, ClientId, Ctx, Key, NodeId, Outcome};
use std::collections::BTreeMap;

pub(crate) use crate::kit::client::ClientTimer;

/// One data node's share of a commit request: keys read, writes.
type Part = (Vec<Key>, Vec<(Key, meridian_core::VersionId, meridian_core::Value)>);

#[derive(Clone, Debug)]
pub(super) enum Phase {
    /// Reads outstanding.
    Reading(Vec<Key>),
    /// An interactive transaction waits for its caller.
    Waiting,
    /// Waiting for the outcome (hierarchy, or a one-node 2PC).
    Committing,
    /// `2pc-deferred`: collecting prepare results.
    Voting,
    /// `2pc-deferred`: decided commit at `ts`, collecting results.
    Acking(u64),
}

crate::kit::client::client_struct! {
    /// A client of `hier-lock`, `hier-ts` or `2pc-deferred`.
    pub struct Client {
        sh: Arc<Shared>,
        /// The largest timestamp this client has seen (§III-B2: a transaction without
        /// reads uses it as its snapshot; a first read's snapshot is at least it).
        floor: u64,
    }
    /// A transaction in flight.
    pub(super) struct Current {
        snap: Option<u64>,
        /// A read was answered in the past: the transaction can only commit read-only.
        doomed: bool,
        nodes: Vec<NodeId>,
        /// `2pc-deferred`: the commit request sent to each participant, sent again to one
        /// that has not voted within the fail-over time (it may have been lost with a
        /// crashed node; a participant answers a duplicate with its vote again).
        commits: BTreeMap<NodeId, Commit>,
        votes: BTreeMap<NodeId, u64>,
        acks: BTreeSet<NodeId>,
    }
}

impl Client {
    /// A client on `node`.
    pub(crate) fn new(env: Env, sh: Arc<Shared>, node: NodeId, id: ClientId) -> Self {
        let who = crate::kit::client::Who::of(&env, node, id);
        Client {
            env,
            sh,
            who,
            floor: 0,
            cur: None,
        }
    }

    /// Takes the program's next step (the frame's `step` runs the program to it).
    fn on_step(&mut self, next: Next, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match next {
            Next::Read(key) => {
                // Before the snapshot is set only the first read goes out (it sets it).
                let keys = if cur.t.exec.batch().is_empty() || cur.snap.is_none() {
                    vec![key]
                } else {
                    cur.t.exec.batch().to_vec()
                };
                self.send_reads(&keys, cx);
                if let Some(cur) = self.cur.as_mut() {
                    cur.phase = Phase::Reading(keys);
                }
                kit::read_sent(&self.env, cx);
            }
            Next::Abort(reason) => self.finish(Outcome::Aborted, Some(reason), cx),
            Next::Done(writes) => {
                cx.cancel_timer(ClientTimer::Read);
                cur.t.rec.commit_start = Some(cx.now());
                if writes.is_empty() {
                    // Read-only: serialized at its snapshot (in the past if a read was),
                    // no commit messages (§III-B2).
                    self.finish(Outcome::Committed, None, cx);
                    return;
                }
                if cur.doomed {
                    // A read-write transaction read in the past: abort before commit.
                    self.finish(Outcome::Aborted, Some(AbortReason::NewerVersionInstalled), cx);
                    return;
                }
                let finals = kit::number_writes(&mut cur.t.rec, writes);
                let snap = cur.snap.unwrap_or(self.floor);
                cur.snap = Some(snap);
                let mut parts: BTreeMap<NodeId, Part> = BTreeMap::new();
                let layout = &self.env.layout;
                for r in &cur.t.rec.reads {
                    let n = layout.primary(layout.shard_of(&r.key));
                    parts.entry(n).or_default().0.push(r.key.clone());
                }
                for (k, (v, val)) in finals {
                    let n = layout.primary(layout.shard_of(&k));
                    parts.entry(n).or_default().1.push((k, v, val));
                }
                let nodes: Vec<NodeId> = parts.keys().copied().collect();
                let txn = cur.t.rec.id;
                let two_pc = self.sh.p.mode == Mode::TwoPc && nodes.len() > 1;
                for (n, (reads, writes)) in parts {
                    let c = Commit {
                        txn,
                        snap,
                        reads,
                        writes,
                        nodes: nodes.clone(),
                    };
                    if two_pc {
                        cur.commits.insert(n, c.clone());
                    }
                    cx.send(n, Msg::Commit(c));
                }
                cur.phase = if two_pc {
                    cx.set_timer(self.env.timeouts.vote, ClientTimer::Status);
                    cx.set_timer(self.env.timeouts.failover, ClientTimer::Resend);
                    Phase::Voting
                } else {
                    cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
                    Phase::Committing
                };
                cur.nodes = nodes;
            }
        }
    }

    /// Sends the reads of `keys` to their shards' primaries, at the transaction's
    /// snapshot once set (a first send, or a re-send of those unanswered:
    /// [`kit::read_sent`]; a re-sent first read may set the snapshot, whichever answer
    /// comes first).
    fn send_reads(&self, keys: &[Key], cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        for k in keys {
            let node = self.env.layout.primary(self.env.layout.shard_of(k));
            cx.send(
                node,
                Msg::Read {
                    txn: cur.t.rec.id,
                    key: k.clone(),
                    snap: cur.snap,
                    floor: self.floor,
                },
            );
        }
    }

    /// `2pc-deferred`: sends the decision to every participant.
    fn send_decision(&self, commit: bool, ts: u64, to: &[NodeId], cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        for n in to {
            cx.send(
                *n,
                Msg::Decide {
                    txn: cur.t.rec.id,
                    commit,
                    ts,
                },
            );
        }
    }
}

impl Client {
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match msg {
            Msg::ReadReply {
                txn,
                key,
                version,
                value,
                snap,
                newer,
            } if txn == cur.t.rec.id => {
                let Phase::Reading(waiting) = &mut cur.phase else {
                    return;
                };
                let Some(i) = waiting.iter().position(|k| *k == key) else {
                    return;
                };
                waiting.swap_remove(i);
                let all_in = waiting.is_empty();
                if cur.snap.is_none() {
                    cur.snap = Some(snap);
                }
                self.floor = self.floor.max(snap);
                cur.doomed |= newer;
                kit::supply_read(&mut cur.t.rec, &mut cur.t.exec, key, version, value);
                if all_in {
                    kit::reads_in(cx);
                    self.step(cx);
                }
            }
            Msg::Outcome { txn, commit, ts } if txn == cur.t.rec.id && matches!(cur.phase, Phase::Committing) => {
                self.floor = self.floor.max(ts);
                let reason = (!commit).then_some(AbortReason::ParticipantVotedNo);
                let outcome = if commit { Outcome::Committed } else { Outcome::Aborted };
                self.finish(outcome, reason, cx);
            }
            Msg::Vote { txn, ok, ts } if txn == cur.t.rec.id && matches!(cur.phase, Phase::Voting) => {
                if !ok {
                    let nodes = cur.nodes.clone();
                    self.send_decision(false, 0, &nodes, cx);
                    self.finish(Outcome::Aborted, Some(AbortReason::ParticipantVotedNo), cx);
                    return;
                }
                cur.votes.insert(from, ts);
                if cur.votes.len() == cur.nodes.len() {
                    let ts = cur.votes.values().copied().max().unwrap_or(0);
                    cur.phase = Phase::Acking(ts);
                    let nodes = cur.nodes.clone();
                    cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
                    self.send_decision(true, ts, &nodes, cx);
                }
            }
            Msg::Ack { txn, commit: false } if txn == cur.t.rec.id => {
                // Cooperative termination aborted it while this client was silent, or
                // still collecting votes (a commit request lost with a crashed
                // participant): the other participants are told at once.
                let (voting, acking) = (
                    matches!(cur.phase, Phase::Voting),
                    matches!(cur.phase, Phase::Acking(_)),
                );
                if voting {
                    let nodes = cur.nodes.clone();
                    self.send_decision(false, 0, &nodes, cx);
                }
                if voting || acking {
                    self.finish(Outcome::Aborted, Some(AbortReason::AbortedQueried), cx);
                }
            }
            Msg::Ack { txn, .. } if txn == cur.t.rec.id => {
                let Phase::Acking(ts) = cur.phase else { return };
                cur.acks.insert(from);
                if cur.acks.len() == cur.nodes.len() {
                    self.floor = self.floor.max(ts);
                    self.finish(Outcome::Committed, None, cx);
                }
            }
            Msg::Query(Query { txn, .. }) if txn == cur.t.rec.id => {
                // A 2PC participant asks for the decision.
                if let Phase::Acking(ts) = cur.phase {
                    cx.send(from, Msg::Decide { txn, commit: true, ts });
                }
            }
            _ => {}
        }
    }

    fn on_tick(&mut self, t: ClientTimer, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        match (t, &cur.phase) {
            (ClientTimer::Read, Phase::Reading(_)) => {
                self.finish(Outcome::Aborted, Some(AbortReason::ReadTimedOut), cx)
            }
            (ClientTimer::Resend, Phase::Reading(keys)) => {
                let keys = keys.clone();
                self.send_reads(&keys, cx);
                cx.set_timer(self.env.timeouts.failover, ClientTimer::Resend);
            }
            (ClientTimer::Idle, Phase::Waiting) => {
                self.finish(Outcome::Aborted, Some(AbortReason::IdleInteractive), cx)
            }
            (ClientTimer::Resend, Phase::Voting) => {
                for (n, c) in &cur.commits {
                    if !cur.votes.contains_key(n) {
                        cx.send(*n, Msg::Commit(c.clone()));
                    }
                }
                cx.set_timer(self.env.timeouts.failover, ClientTimer::Resend);
            }
            (ClientTimer::Status, Phase::Voting) => {
                let nodes = cur.nodes.clone();
                self.send_decision(false, 0, &nodes, cx);
                self.finish(Outcome::Aborted, Some(AbortReason::VoteTimedOut), cx);
            }
            (ClientTimer::Status, Phase::Acking(ts)) => {
                let ts = *ts;
                let missing: Vec<NodeId> = cur.nodes.iter().filter(|n| !cur.acks.contains(n)).copied().collect();
                self.send_decision(true, ts, &missing, cx);
                cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
            }
            (ClientTimer::Status, Phase::Committing) => {
                let vid = self.sh.tree.decider(&cur.nodes);
                let to = match (self.sh.p.mode, vid) {
                    (Mode::TwoPc, _) | (_, None) => cur.nodes[0],
                    (_, Some(v)) => self.sh.tree.inner[v.0 as usize].host,
                };
                let vid = if self.sh.p.mode == Mode::TwoPc { None } else { vid };
                cx.send(
                    to,
                    Msg::Query(Query {
                        txn: cur.t.rec.id,
                        vid,
                        nodes: cur.nodes.clone(),
                        client: cx.me(),
                        from_client: true,
                        decide: true,
                    }),
                );
                cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
            }
            _ => {}
        }
    }
}

crate::kit::client::client_frame!(ClientTimer, interactive: ClientTimer::Idle, begin: |t| Current {
    t,
    snap: None,
    doomed: false,
    phase: Phase::Committing,
    nodes: vec![],
    commits: BTreeMap::new(),
    votes: BTreeMap::new(),
    acks: BTreeSet::new(),
});
