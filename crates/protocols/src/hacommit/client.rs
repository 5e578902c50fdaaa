//! The HACommit client: executes the transaction, sends the last operation, collects
//! votes, and proposes the decision to every participant's replicas as ballot-0
//! Paxos proposer (it is the coordinator).

use super::*;
use crate::kit::client::Next;

crate::kit::timers::timers! {
    /// A HACommit client's timers.
    pub(crate) enum ClientTimer {
        Read = 1,
        Vote = 2,
        Resend = 3,
        Idle = 4,
        /// A read unanswered for `failover` is re-sent to the group's next replica (the
        /// believed leader may be cut off; its group elects another within `failover`),
        /// while `ClientTimer::Read` still bounds the whole wait. (A last operation is
        /// not: re-sent to a new leader while the old one's vote reached some
        /// followers, it was voted twice with two version sequence numbers, and
        /// replicas ordered the versions differently: campaign seeds 1798 and 1986 of
        /// that try.) Whichever replica answers first is taken: the leader that votes
        /// checks that the version read is still the key's latest under the
        /// transaction's lock there (`ReadVersionChanged` otherwise), so an answer from
        /// a replaced leader cannot be committed on.
        ///
        /// While voting, every `failover` each shard whose vote has not come is asked
        /// for it at the group's next replica (`Msg::VoteQuery`): the leader that got
        /// the last operation may have failed with it, and the new leader answers from
        /// its replicated state or decides no (`Server::on_vote_query`), long before
        /// `ClientTimer::Vote`.
        Retry = 5,
    }
}

#[derive(Clone, Debug)]
pub(super) enum Phase {
    /// An interactive transaction waits for its caller's next operations.
    Waiting,
    Reading {
        key: Key,
        shard: ShardId,
        redirects: u32,
    },
    Voting {
        lasts: BTreeMap<ShardId, LastShare>,
        yes: BTreeSet<ShardId>,
        redirects: u32,
        /// Shards asked for their vote (`ClientTimer::Retry`): a redirect for one of
        /// them is followed by the question, never by the last operation.
        queried: BTreeSet<ShardId>,
    },
    Deciding {
        commit: bool,
        reason: Option<AbortReason>,
        acks: BTreeMap<ShardId, BTreeSet<NodeId>>,
        /// Replicas that answered that they forgot the transaction (it is older than
        /// their mark and unknown there).
        forgot: BTreeMap<ShardId, BTreeSet<NodeId>>,
    },
}

crate::kit::client::client_struct! {
    /// A HACommit client: runs one transaction at a time and is the initial Paxos proposer
    /// of its commit.
    pub struct Client {
        /// A deliberately broken variant (tests only; see [`crate::Mutant`]).
        pub(super) mutant: crate::Mutant,
        /// Believed leader of each shard.
        pub(super) leaders: HashMap<ShardId, NodeId>,
    }
    /// A transaction in flight.
    pub(super) struct Current {
        /// The configuration: every shard touched so far.
        pub(super) shards: BTreeSet<ShardId>,
    }
}

impl Client {
    /// A client on `node`.
    pub fn new(env: Env, node: NodeId, id: ClientId) -> Self {
        let who = crate::kit::client::Who::of(&env, node, id);
        Client {
            mutant: crate::Mutant::None,
            env,
            who,
            leaders: HashMap::default(),
            cur: None,
        }
    }

    pub(super) fn leader(&self, s: ShardId) -> NodeId {
        self.leaders
            .get(&s)
            .copied()
            .unwrap_or_else(|| self.env.layout.primary(s))
    }

    /// The believed leader of `s` did not answer: try the next replica of the group next
    /// time (a live replica answers with a `NotLeader` hint if it is not the leader).
    pub(super) fn suspect(&mut self, s: ShardId) {
        let reps = self.env.layout.replicas(s);
        let cur = self.leader(s);
        let i = reps.iter().position(|r| *r == cur).unwrap_or(0);
        self.leaders.insert(s, reps[(i + 1) % reps.len()]);
    }

    /// Takes the program's next step (the frame's `step` runs the program to it).
    fn on_step(&mut self, next: Next, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match next {
            Next::Read(key) => {
                let shard = self.env.layout.shard_of(&key);
                cur.shards.insert(shard);
                cur.phase = Phase::Reading {
                    key,
                    shard,
                    redirects: 0,
                };
                self.send_read(cx);
                cx.set_timer(self.env.timeouts.read, ClientTimer::Read);
            }
            Next::Abort(reason) => self.decide(false, Some(reason), cx),
            Next::Done(writes) => {
                let finals = crate::kit::client::number_writes(&mut cur.t.rec, writes);
                let layout = &self.env.layout;
                let mut lasts: BTreeMap<ShardId, LastShare> = BTreeMap::new();
                for r in &cur.t.rec.reads {
                    lasts
                        .entry(layout.shard_of(&r.key))
                        .or_default()
                        .0
                        .push((r.key.clone(), r.version));
                }
                for (k, (v, val)) in finals {
                    lasts.entry(layout.shard_of(&k)).or_default().1.push((k, v, val));
                }
                cur.shards.extend(lasts.keys().copied());
                if lasts.is_empty() {
                    cur.t.rec.commit_start = Some(cx.now());
                    return self.finish(Outcome::Committed, None, cx);
                }
                cur.phase = Phase::Voting {
                    lasts,
                    yes: BTreeSet::new(),
                    redirects: 0,
                    queried: BTreeSet::new(),
                };
                cx.cancel_timer(ClientTimer::Read);
                cx.cancel_timer(ClientTimer::Retry);
                let shards: Vec<ShardId> = self.cur.as_ref().expect("cur").shards.iter().copied().collect();
                for s in shards {
                    self.send_last(s, cx);
                }
                cx.set_timer(self.env.timeouts.vote, ClientTimer::Vote);
                cx.set_timer(self.env.timeouts.failover, ClientTimer::Retry);
            }
        }
    }

    /// Asks the believed leader of `s` for its vote (`Msg::VoteQuery`).
    pub(super) fn query_vote(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let Phase::Voting { queried, .. } = &mut cur.phase else {
            return;
        };
        queried.insert(s);
        let txn = cur.t.rec.id;
        cx.send(self.leader(s), Msg::VoteQuery { txn, shard: s });
    }

    pub(super) fn send_read(&mut self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        let Phase::Reading { key, shard, .. } = &cur.phase else {
            return;
        };
        let m = Msg::Read(Read {
            txn: cur.t.rec.id,
            ts: cur.t.rec.start,
            shard: *shard,
            key: key.clone(),
            shards: cur.shards.iter().copied().collect(),
        });
        let to = self.leader(*shard);
        cx.send(to, m);
        cx.set_timer(self.env.timeouts.failover, ClientTimer::Retry);
    }

    pub(super) fn send_last(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        let Phase::Voting { lasts, .. } = &cur.phase else {
            return;
        };
        let (reads, writes) = lasts.get(&s).cloned().unwrap_or_default();
        let m = Msg::Last(LastOp {
            txn: cur.t.rec.id,
            ts: cur.t.rec.start,
            shard: s,
            shards: cur.shards.iter().copied().collect(),
            reads,
            writes,
        });
        let to = self.leader(s);
        cx.send(to, m);
    }

    /// The client's decision: phase 2 of Paxos with ballot 0 to every replica of every
    /// participant.
    pub(super) fn decide(&mut self, commit: bool, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        cx.cancel_timer(ClientTimer::Read);
        cx.cancel_timer(ClientTimer::Retry);
        cx.cancel_timer(ClientTimer::Vote);
        cur.t.rec.commit_start = Some(cx.now());
        if cur.shards.is_empty() {
            let outcome = if commit { Outcome::Committed } else { Outcome::Aborted };
            return self.finish(outcome, reason, cx);
        }
        cur.phase = Phase::Deciding {
            commit,
            reason,
            acks: BTreeMap::new(),
            forgot: BTreeMap::new(),
        };
        self.send_p2a(cx);
        cx.set_timer(self.env.timeouts.status, ClientTimer::Resend);
    }

    pub(super) fn send_p2a(&mut self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        let Phase::Deciding { commit, acks, .. } = &cur.phase else {
            return;
        };
        let shards: Vec<ShardId> = cur.shards.iter().copied().collect();
        let proposal = P2a {
            txn: cur.t.rec.id,
            ts: cur.t.rec.start,
            targets: shards.clone(),
            ballot: 0,
            commit: *commit,
            shards,
        };
        let msgs = p2a_by_node(&self.env.layout, &proposal, |s, r| {
            acks.get(&s).is_some_and(|a| a.contains(&r))
        });
        for (n, m) in msgs {
            cx.send(n, m);
        }
    }

    pub(super) fn on_vote(&mut self, shard: ShardId, yes: bool, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let Phase::Voting { yes: ys, .. } = &mut cur.phase else {
            return;
        };
        if !yes {
            return self.decide(false, Some(reason.unwrap_or(AbortReason::ParticipantVotedNo)), cx);
        }
        ys.insert(shard);
        if ys.len() == cur.shards.len() {
            self.decide(true, None, cx);
        }
    }

    /// A replica of `shard` forgot the transaction, or never knew it and it is older
    /// than what the replica forgot. Once a majority of the group says so, the group
    /// most likely decided, settled and forgot it before this client heard the outcome
    /// (the client was cut off longer than the forgetting period); it may also be a
    /// transaction so old that a majority of the group never got its context while it
    /// ran. Either way the outcome is reported as unknown, never as an abort. (A
    /// minority may say so of a live transaction whose context it never received; the
    /// majority that holds it answers.)
    pub(super) fn on_forgotten(&mut self, from: NodeId, shard: ShardId, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let Phase::Deciding { forgot, .. } = &mut cur.phase else {
            return;
        };
        let answered = forgot.entry(shard).or_default();
        answered.insert(from);
        if answered.len() >= majority_of(self.env.layout.replicas(shard).len()) {
            self.finish(Outcome::Unknown, None, cx);
        }
    }

    pub(super) fn on_p2b(
        &mut self,
        from: NodeId,
        shard: ShardId,
        ok: bool,
        chosen: Option<bool>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(cur) = self.cur.as_mut() else { return };
        let Phase::Deciding {
            commit, reason, acks, ..
        } = &mut cur.phase
        else {
            return;
        };
        if let Some(v) = chosen {
            // Decided already (by us, or by a recovery proposer that overtook us).
            let why = if v {
                None
            } else {
                Some(reason.take().unwrap_or(AbortReason::RecoveryAborted))
            };
            let outcome = if v { Outcome::Committed } else { Outcome::Aborted };
            return self.finish(outcome, why, cx);
        }
        if !ok {
            return; // a higher ballot is running: wait for the chosen decision
        }
        acks.entry(shard).or_default().insert(from);
        let layout = &self.env.layout;
        let quorum = |n: usize| {
            if self.mutant == crate::Mutant::Minority {
                1
            } else {
                majority_of(n)
            }
        };
        let all = cur
            .shards
            .iter()
            .all(|s| acks.get(s).map_or(0, |a| a.len()) >= quorum(layout.replicas(*s).len()));
        if all {
            let outcome = if *commit { Outcome::Committed } else { Outcome::Aborted };
            let why = reason.take();
            self.finish(outcome, why, cx);
        }
    }
}

impl Client {
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match msg {
            Msg::ReadReply { txn, key, result } if txn == cur.t.rec.id => {
                if !matches!(&cur.phase, Phase::Reading { key: k, .. } if *k == key) {
                    return;
                }
                cx.cancel_timer(ClientTimer::Read);
                cx.cancel_timer(ClientTimer::Retry);
                // Only a replica that holds itself the group's leader answers a read
                // (a follower sends `NotLeader`): follow it. A read re-sent after
                // `failover` may have moved the belief to a replica that is cut off
                // while this, the live leader, only made the read wait for a lock;
                // the last operation must not follow that guess (campaign of the
                // cut-off-DC sweep, seed 47).
                self.leaders.insert(self.env.layout.shard_of(&key), from);
                match result {
                    Ok((version, value)) => {
                        crate::kit::client::supply_read(&mut cur.t.rec, &mut cur.t.exec, key, version, value);
                        self.step(cx);
                    }
                    Err(why) => self.decide(false, Some(why), cx),
                }
            }
            Msg::Wound { txn } if txn == cur.t.rec.id && matches!(cur.phase, Phase::Voting { .. }) => {
                self.decide(false, Some(AbortReason::Wounded), cx);
            }
            Msg::NotLeader { txn, shard, leader } if txn == cur.t.rec.id => {
                let limit = 2 * self.env.layout.replicas(shard).len() as u32;
                // A replica that names itself (restarted and re-syncing, or standing
                // for a view) knows no leader: try the group's next replica instead
                // of asking it again at once until the redirect limit.
                let leader = if leader == from {
                    let reps = self.env.layout.replicas(shard);
                    let i = reps.iter().position(|r| *r == from).unwrap_or(0);
                    reps[(i + 1) % reps.len()]
                } else {
                    leader
                };
                match &mut cur.phase {
                    Phase::Reading {
                        shard: s, redirects, ..
                    } if *s == shard => {
                        *redirects += 1;
                        if *redirects > limit {
                            // Hints that go round in a circle (followers still naming a
                            // leader that is down, while the group changes view): stop
                            // following them and try again a sweep later, within the
                            // read's own deadline, rather than abort at once.
                            *redirects = 0;
                            return cx.set_timer(self.env.timeouts.sweep, ClientTimer::Retry);
                        }
                        self.leaders.insert(shard, leader);
                        self.send_read(cx);
                    }
                    Phase::Voting { redirects, queried, .. } => {
                        *redirects += 1;
                        if *redirects > limit * cur.shards.len() as u32 {
                            // The same: the next `ClientTimer::Retry` asks again, the
                            // vote timer bounds the wait.
                            return;
                        }
                        let asked = queried.contains(&shard);
                        self.leaders.insert(shard, leader);
                        if asked {
                            self.query_vote(shard, cx);
                        } else {
                            self.send_last(shard, cx);
                        }
                    }
                    _ => {}
                }
            }
            Msg::Vote {
                txn,
                shard,
                yes,
                reason,
            } if txn == cur.t.rec.id => {
                self.leaders.insert(shard, from);
                self.on_vote(shard, yes, reason, cx)
            }
            Msg::P2b { txn, ballot: 0, parts } if txn == cur.t.rec.id => {
                for p in parts {
                    if self.cur.is_none() {
                        break;
                    }
                    if p.forgotten {
                        self.on_forgotten(from, p.shard, cx);
                    } else {
                        self.on_p2b(from, p.shard, p.ok, p.chosen, cx);
                    }
                }
            }
            _ => {}
        }
    }

    fn on_tick(&mut self, t: ClientTimer, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        match (t, &cur.phase) {
            (ClientTimer::Read, Phase::Reading { shard, .. }) => {
                let s = *shard;
                self.suspect(s);
                self.decide(false, Some(AbortReason::ReadTimedOut), cx)
            }
            (ClientTimer::Retry, Phase::Reading { shard, .. }) => {
                let s = *shard;
                self.suspect(s);
                self.send_read(cx);
            }
            (ClientTimer::Retry, Phase::Voting { yes, .. }) => {
                let silent: Vec<ShardId> = cur.shards.iter().filter(|s| !yes.contains(s)).copied().collect();
                if let Some(Current {
                    phase: Phase::Voting { redirects, .. },
                    ..
                }) = self.cur.as_mut()
                {
                    *redirects = 0;
                }
                for s in silent {
                    self.suspect(s);
                    self.query_vote(s, cx);
                }
                // Asked once after `failover`, then every sweep: a new leader answers
                // as soon as its view is installed.
                cx.set_timer(self.env.timeouts.sweep, ClientTimer::Retry);
            }
            (ClientTimer::Vote, Phase::Voting { yes, .. }) => {
                let silent: Vec<ShardId> = cur.shards.iter().filter(|s| !yes.contains(s)).copied().collect();
                for s in silent {
                    self.suspect(s);
                }
                self.decide(false, Some(AbortReason::VoteTimedOut), cx)
            }
            (ClientTimer::Idle, Phase::Waiting) => self.decide(false, Some(AbortReason::IdleInteractive), cx),
            (ClientTimer::Resend, Phase::Deciding { .. }) => {
                self.send_p2a(cx);
                cx.set_timer(self.env.timeouts.status, ClientTimer::Resend);
            }
            _ => {}
        }
    }
}

crate::kit::client::client_frame!(ClientTimer, interactive: ClientTimer::Idle, begin: |t| Current {
    t,
    shards: BTreeSet::new(),
    phase: Phase::Deciding {
        commit: false,
        reason: None,
        acks: BTreeMap::new(),
        forgot: BTreeMap::new(),
    },
});
