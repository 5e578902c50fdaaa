//! The replicated-log client: reads from leaders, buffers writes, and sends the commit
//! request to the coordinator leader.

use super::*;
use crate::kit::client::Next;

crate::kit::timers::timers! {
    /// A replicated-log client's timers.
    pub(crate) enum ClientTimer { Read = 1, Status = 2, Idle = 3, Follow = 4 }
}

#[derive(Clone, Debug)]
pub(super) enum Phase {
    Reading(Key, u32),
    /// An interactive transaction waits for its caller's next operations.
    Waiting,
    Committing(ShardId),
}

crate::kit::client::client_struct! {
    /// A replicated-log client: reads at leaders, 2PC among leaders.
    pub struct Client {
        /// Believed leader of each shard.
        pub(super) leaders: Vec<NodeId>,
    }
    /// A transaction in flight.
    pub(super) struct Current {
        pub(super) touched: BTreeSet<NodeId>,
        /// The PREPARE sent for each shard (re-sent to the leader a redirect names).
        pub(super) prepares: BTreeMap<ShardId, Arc<PrepareEntry>>,
        /// Redirects followed so far (bounded: a leaderless shard is left to the
        /// coordinator's vote timeout).
        pub(super) redirects: u32,
        /// The replicas the current read went to that did not answer within the fail-over
        /// time: the next try goes to another (a hint from a follower that heard from one
        /// of them since is still followed).
        pub(super) suspects: BTreeSet<NodeId>,
    }
}

impl Client {
    /// A client on `node`.
    pub fn new(env: Env, node: NodeId, id: ClientId, leaders: &[NodeId]) -> Self {
        let who = crate::kit::client::Who::of(&env, node, id);
        Client {
            env,
            who,
            leaders: leaders.to_vec(),
            cur: None,
        }
    }

    /// Sends the read of `key` to the shard's believed leader (`first`: a new read, not
    /// one re-sent to another replica).
    pub(super) fn send_read(&mut self, key: Key, tries: u32, first: bool, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let s = self.env.layout.shard_of(&key);
        let node = self.leaders[s.0 as usize];
        cur.touched.insert(node);
        cur.phase = Phase::Reading(key.clone(), tries);
        let (txn, ts) = (cur.t.rec.id, cur.t.rec.start);
        cx.send(node, Msg::Read(LockedRead { txn, ts, key }));
        if first {
            // The read's deadline, over every replica it is sent to.
            cur.suspects.clear();
            cx.set_timer(self.env.timeouts.read, ClientTimer::Read);
        }
        cx.set_timer(self.env.timeouts.failover, ClientTimer::Follow);
    }

    /// The read of `key` went unanswered for the fail-over time: its leader may be
    /// down or cut off, and its group may have elected another (replicated-commit.md
    /// §4.1: a group waits out its leader's lease). The read goes to the next replica
    /// not yet tried, which serves it if it leads now or names the leader it knows.
    fn follow(&mut self, key: Key, tries: u32, cx: &mut Ctx<'_, Msg>) {
        let s = self.env.layout.shard_of(&key);
        let Some(cur) = self.cur.as_mut() else { return };
        cur.suspects.insert(self.leaders[s.0 as usize]);
        if self.env.layout.replicas(s).iter().all(|r| cur.suspects.contains(r)) {
            cur.suspects.clear();
        }
        let suspects = cur.suspects.clone();
        // Some replica is not suspected, so this ends.
        self.guess_next_leader(s);
        while suspects.contains(&self.leaders[s.0 as usize]) {
            self.guess_next_leader(s);
        }
        self.send_read(key, tries, false, cx);
    }

    /// Takes the program's next step (the frame's `step` runs the program to it).
    fn on_step(&mut self, next: Next, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match next {
            Next::Read(key) => self.send_read(key, 0, true, cx),
            Next::Abort(reason) => self.abort(reason, cx),
            Next::Done(writes) => {
                let txn = cur.t.rec.id;
                let finals = cur.t.to_commit(writes, ClientTimer::Read, cx);
                let layout = &self.env.layout;
                let mut shares: BTreeMap<ShardId, Share> = BTreeMap::new();
                for r in &cur.t.rec.reads {
                    shares.entry(layout.shard_of(&r.key)).or_default().0.push(r.key.clone());
                }
                let coord = finals
                    .keys()
                    .next()
                    .map(|k| layout.shard_of(k))
                    .or_else(|| shares.keys().next().copied());
                for (k, (v, val)) in finals {
                    shares.entry(layout.shard_of(&k)).or_default().1.push((k, v, val));
                }
                let Some(coord) = coord else {
                    self.finish(Outcome::Committed, None, cx);
                    return;
                };
                let parts: Vec<ShardId> = shares.keys().copied().collect();
                for (s, (reads, writes)) in shares {
                    let entry = Arc::new(PrepareEntry {
                        txn,
                        ts: cur.t.rec.start,
                        coord,
                        parts: parts.clone(),
                        client: cx.me(),
                        reads,
                        writes,
                    });
                    cx.send(
                        self.leaders[s.0 as usize],
                        Msg::Prepare {
                            shard: s,
                            entry: entry.clone(),
                        },
                    );
                    cur.prepares.insert(s, entry);
                }
                cur.phase = Phase::Committing(coord);
                cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
            }
        }
    }

    /// Moves the believed leader of `s` to the replica after it (the leader may be
    /// gone; a wrong guess costs one redirect).
    pub(super) fn guess_next_leader(&mut self, s: ShardId) {
        let reps = self.env.layout.replicas(s);
        let i = reps.iter().position(|n| *n == self.leaders[s.0 as usize]).unwrap_or(0);
        self.leaders[s.0 as usize] = reps[(i + 1) % reps.len()];
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

impl Client {
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match msg {
            Msg::ReadReply {
                answer: ReadAnswer { txn, key, result },
                hint,
            } if txn == cur.t.rec.id => {
                let tries = match &cur.phase {
                    Phase::Reading(k, t) if *k == key => *t,
                    _ => return,
                };
                let s = self.env.layout.shard_of(&key).0 as usize;
                match result {
                    Ok((version, value)) => {
                        cx.cancel_timer(ClientTimer::Read);
                        cx.cancel_timer(ClientTimer::Follow);
                        // The replica that served the read leads the shard.
                        self.leaders[s] = from;
                        crate::kit::client::supply_read(&mut cur.t.rec, &mut cur.t.exec, key, version, value);
                        self.step(cx);
                    }
                    Err(why) => match hint {
                        // A follower names only a leader it heard from within the
                        // fail-over time, so the hint is followed even to a replica this
                        // read suspected (a leader back from a crash that stood again).
                        Some(h) if h != self.leaders[s] && tries < 3 => {
                            self.leaders[s] = h;
                            cur.suspects.remove(&h);
                            self.send_read(key, tries + 1, false, cx);
                        }
                        // A follower that knows no live leader: the group is electing
                        // one (or the old one is still within its lease). The next
                        // replica is tried a sweep later, until the read's deadline,
                        // rather than aborting a transaction that a leader elected
                        // within the deadline would serve. (Waiting the whole fail-over
                        // time again cost a second after every restart: a restarted
                        // leader wins its group a round trip after the follower said
                        // it knew none.)
                        _ if why == AbortReason::NotLeader => {
                            cx.set_timer(self.env.timeouts.sweep, ClientTimer::Follow);
                        }
                        _ => self.abort(why, cx),
                    },
                }
            }
            Msg::Redirect { txn, shard, leader }
                if txn == cur.t.rec.id && matches!(cur.phase, Phase::Committing(_)) =>
            {
                let s = shard.0 as usize;
                let limit = 2 * self.env.layout.replicas(shard).len() as u32;
                let Some(entry) = cur.prepares.get(&shard).cloned() else {
                    return;
                };
                if cur.redirects >= limit {
                    return;
                }
                cur.redirects += 1;
                // The named leader, or else the next replica (which names it, if it knows).
                match leader {
                    Some(l) => self.leaders[s] = l,
                    None => self.guess_next_leader(shard),
                }
                cx.send(self.leaders[s], Msg::Prepare { shard, entry });
            }
            Msg::Outcome { txn, commit, reason }
                if txn == cur.t.rec.id && matches!(cur.phase, Phase::Committing(_)) =>
            {
                let o = if commit { Outcome::Committed } else { Outcome::Aborted };
                if matches!(
                    reason,
                    Some(AbortReason::VoteTimeout | AbortReason::CoordinatorNeverPrepared)
                ) {
                    // A share's PREPARE reached no leader (the guessed one may be down,
                    // and a down node redirects nobody): guess the next replica of
                    // every shard next time; a wrong guess costs one redirect.
                    let shards: Vec<ShardId> = cur.prepares.keys().copied().collect();
                    for s in shards {
                        self.guess_next_leader(s);
                    }
                }
                self.finish(o, reason, cx);
            }
            Msg::Forgotten { txn } if txn == cur.t.rec.id && matches!(cur.phase, Phase::Committing(_)) => {
                // The coordinator forgot the decision (this client was silent for longer
                // than the forgetting period): the outcome cannot be told.
                self.finish(Outcome::Unknown, None, cx);
            }
            _ => {}
        }
    }

    fn on_tick(&mut self, t: ClientTimer, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        match (t, &cur.phase) {
            (ClientTimer::Read, Phase::Reading(key, _)) => {
                // The leader may be gone: guess the next replica next time.
                let s = self.env.layout.shard_of(key);
                self.guess_next_leader(s);
                self.abort(AbortReason::ReadTimedOut, cx);
            }
            (ClientTimer::Follow, Phase::Reading(key, tries)) => {
                let (key, tries) = (key.clone(), *tries);
                self.follow(key, tries, cx);
            }
            (ClientTimer::Idle, Phase::Waiting) => self.abort(AbortReason::IdleInteractive, cx),
            (ClientTimer::Status, Phase::Committing(coord)) => {
                for r in self.env.layout.replicas(*coord) {
                    cx.send(
                        *r,
                        Msg::Status {
                            txn: cur.t.rec.id,
                            shard: *coord,
                            ts: cur.t.rec.start,
                        },
                    );
                }
                cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
            }
            _ => {}
        }
    }
}

crate::kit::client::client_frame!(ClientTimer, interactive: ClientTimer::Idle, begin: |t| Current {
    t,
    touched: BTreeSet::new(),
    phase: Phase::Committing(ShardId(0)),
    prepares: BTreeMap::new(),
    redirects: 0,
    suspects: BTreeSet::new(),
});
