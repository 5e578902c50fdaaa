//! The Replicated Commit client: reads from a majority of DCs, buffers writes, sends
//! the accept request to every DC and counts votes.

use super::*;
use crate::kit::client::Next;
use crate::kit::vote::{DcVote, Decided};

pub(crate) use crate::kit::client::ClientTimer;

#[derive(Clone, Debug)]
pub(super) enum Phase {
    /// Waiting for a majority of DCs to answer a read.
    Reading {
        key: Key,
        granted: BTreeMap<DcId, (Option<VersionId>, u64, Option<Value>)>,
        denied: BTreeSet<DcId>,
        why: Option<AbortReason>,
    },
    /// An interactive transaction waits for its caller's next operations.
    Waiting,
    /// Waiting for a majority of DCs' votes.
    Committing {
        value: Arc<TxnValue>,
        votes: BTreeMap<DcId, bool>,
        why: Option<AbortReason>,
    },
}

crate::kit::client::client_struct! {
    /// A Replicated Commit client: reads from majorities, proposes the commit.
    pub struct Client {
        /// Servers asked (a read or an accept request) that have not answered since:
        /// when the first unanswered request went. One silent for the fail-over time is
        /// suspected down until it speaks again (see `pick_coordinator`).
        pub(super) silent_since: BTreeMap<NodeId, Time>,
        /// When each server last sent this client anything.
        pub(super) heard: BTreeMap<NodeId, Time>,
    }
    /// A transaction in flight.
    pub(super) struct Current {
        /// Keys read with the timestamp of the version used.
        pub(super) reads: Vec<(Key, u64)>,
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
            silent_since: BTreeMap::new(),
            heard: BTreeMap::new(),
        }
    }

    /// A request went to `n`: it owes an answer from now on (unless it owed one).
    fn asked(&mut self, n: NodeId, now: Time) {
        self.silent_since.entry(n).or_insert(now);
    }

    /// Whether `n` has left a request unanswered for the fail-over time.
    fn suspected(&self, n: NodeId, now: Time) -> bool {
        self.silent_since
            .get(&n)
            .is_some_and(|t| now.saturating_sub(*t) >= self.env.timeouts.failover)
    }

    /// The coordinator shard: the shard of the smallest key written (first read if read-only),
    /// as §3.2.2 has it, unless a server of that shard is suspected down. A DC's vote
    /// comes from its coordinator alone, so a dead coordinator leaves its DC silent for
    /// good: a split vote of the other two DCs then waits for its restart, holding its
    /// locks (issue 53: with one server of us3 dead, throughput fell from 70 to 3 txn/s
    /// in the simulator). The client then appoints another shard of the transaction
    /// whose servers all answer, or failing that any shard whose servers all answer
    /// (a departure: a coordinator need not hold a key of the transaction; it prepares
    /// the cohorts of its DC, and a dead cohort there makes its DC reject at the vote
    /// timeout, a vote that settles a split).
    pub(super) fn pick_coordinator(&self, involved: &[ShardId], now: Time) -> ShardId {
        let layout = &self.env.layout;
        // Alive: every server of the shard spoke to this client within two fail-over
        // times or was asked something less than a fail-over time ago, and none is
        // suspected. Not merely "not suspected": in a DC outage a
        // dead server this client has not asked yet is not suspected, and appointing
        // its shard (often one the transaction does not touch) gains nothing and
        // costs every DC a round of prepares (rc-fig10: a quarter fewer commits).
        let recent = |n: &NodeId| {
            self.heard
                .get(n)
                .is_some_and(|t| now.saturating_sub(*t) <= 2 * self.env.timeouts.failover)
        };
        let alive = |s: &ShardId| {
            layout
                .replicas(*s)
                .iter()
                .all(|n| (recent(n) || self.silent_since.contains_key(n)) && !self.suspected(*n, now))
        };
        let first = involved[0];
        if !layout.replicas(first).iter().any(|n| self.suspected(*n, now)) {
            // No evidence of trouble: the paper's choice, whatever else is known.
            return first;
        }
        if let Some(s) = involved.iter().find(|s| alive(s)) {
            return *s;
        }
        // Failing that, a shard whose every server spoke to this client after the
        // suspected one fell silent (those of the transaction first), even one that
        // owes an answer now: appointing the suspected shard risks a split vote that
        // waits for the dead server for good, holding its locks. Seen with bank and one
        // server of us3 dead: a transfer between accounts of the dead server's shards
        // appointed it because its DC-mate was suspected too (a coordinator answers
        // only after its vote timeout when a cohort of its DC is dead), so no shard
        // was "alive"; 4 clients blocked until the restart. A server not heard since
        // then (in a DC outage, the dead DC's others) is no better than the suspect.
        let silent_from = layout
            .replicas(first)
            .iter()
            .filter(|n| self.suspected(**n, now))
            .filter_map(|n| self.silent_since.get(n))
            .min()
            .copied()
            .unwrap_or(now);
        let spoke_since = |s: &ShardId| {
            layout
                .replicas(*s)
                .iter()
                .all(|n| self.heard.get(n).is_some_and(|t| *t > silent_from))
        };
        (0..layout.topology.shards)
            .map(ShardId)
            .find(|s| alive(s))
            .or_else(|| involved.iter().copied().find(|s| spoke_since(s)))
            .or_else(|| (0..layout.topology.shards).map(ShardId).find(|s| spoke_since(s)))
            .unwrap_or(first)
    }

    pub(super) fn majority(&self) -> usize {
        self.env.layout.topology.num_dcs() / 2 + 1
    }

    /// Sends the current read to every replica of its shard whose DC has not answered
    /// it (all of them at first; a re-send: [`crate::kit::client::read_sent`]).
    fn send_read(&mut self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        let Phase::Reading {
            key, granted, denied, ..
        } = &cur.phase
        else {
            return;
        };
        let mut sent = vec![];
        for n in self.env.layout.replicas(self.env.layout.shard_of(key)) {
            let dc = self.env.layout.dc_of(*n);
            if !granted.contains_key(&dc) && !denied.contains(&dc) {
                let (txn, key) = (cur.t.rec.id, key.clone());
                cx.send(*n, Msg::Read { txn, key });
                sent.push(*n);
            }
        }
        for n in sent {
            self.asked(n, cx.now());
        }
    }

    /// Takes the program's next step (the frame's `step` runs the program to it).
    fn on_step(&mut self, next: Next, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match next {
            Next::Read(key) => {
                cur.phase = Phase::Reading {
                    key,
                    granted: BTreeMap::new(),
                    denied: BTreeSet::new(),
                    why: None,
                };
                self.send_read(cx);
                crate::kit::client::read_sent(&self.env, cx);
            }
            Next::Abort(reason) => self.abort(reason, cx),
            Next::Done(writes) => {
                let txn = cur.t.rec.id;
                let finals = cur.t.to_commit(writes, ClientTimer::Read, cx);
                if finals.is_empty() && cur.reads.is_empty() {
                    self.finish(Outcome::Committed, None, cx);
                    return;
                }
                // The shards of the keys written, then of those read: the first is the
                // paper's choice (the smallest key written, or the first read).
                let mut involved: Vec<ShardId> = vec![];
                for k in finals.keys().chain(cur.reads.iter().map(|(k, _)| k)) {
                    let s = self.env.layout.shard_of(k);
                    if !involved.contains(&s) {
                        involved.push(s);
                    }
                }
                let coord = self.pick_coordinator(&involved, cx.now());
                let Some(cur) = self.cur.as_mut() else { return };
                let max_read = cur.reads.iter().map(|(_, t)| *t).max().unwrap_or(0);
                let value = Arc::new(TxnValue {
                    client: cx.me(),
                    ts: commit_ts(cx.now(), max_read, self.who.id),
                    coord,
                    reads: cur.reads.clone(),
                    writes: finals.into_iter().map(|(k, (v, val))| (k, v, val)).collect(),
                });
                let to = self.env.layout.replicas(coord).to_vec();
                for n in to {
                    cx.send(
                        n,
                        Msg::Accept {
                            txn,
                            value: value.clone(),
                        },
                    );
                    self.asked(n, cx.now());
                }
                let Some(cur) = self.cur.as_mut() else { return };
                cur.phase = Phase::Committing {
                    value,
                    votes: BTreeMap::new(),
                    why: None,
                };
                cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
            }
        }
    }

    pub(super) fn abort(&mut self, reason: AbortReason, cx: &mut Ctx<'_, Msg>) {
        if let Some(cur) = &self.cur {
            let mut keys: Vec<&Key> = cur.reads.iter().map(|(k, _)| k).collect();
            if let Phase::Reading { key, .. } = &cur.phase {
                keys.push(key);
            }
            let mut nodes = BTreeSet::new();
            for k in keys {
                nodes.extend(self.env.layout.replicas(self.env.layout.shard_of(k)).iter().copied());
            }
            for n in nodes {
                cx.send(n, Msg::Release { txn: cur.t.rec.id });
            }
        }
        self.finish(Outcome::Aborted, Some(reason), cx);
    }

    pub(super) fn on_read_reply(
        &mut self,
        from: NodeId,
        txn: TxnId,
        key: Key,
        result: ReadResult,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let (n, maj) = (self.env.layout.topology.num_dcs(), self.majority());
        let dc = self.env.layout.dc_of(from);
        let Some(cur) = self.cur.as_mut().filter(|c| c.t.rec.id == txn) else {
            return;
        };
        let Phase::Reading {
            key: want,
            granted,
            denied,
            why,
        } = &mut cur.phase
        else {
            return;
        };
        if *want != key {
            return;
        }
        match result {
            Ok(r) => {
                granted.insert(dc, r);
            }
            Err(e) => {
                denied.insert(dc);
                why.get_or_insert(e);
            }
        }
        if granted.len() >= maj {
            let (version, ts, value) = granted
                .values()
                .max_by_key(|(_, ts, _)| *ts)
                .cloned()
                .expect("a majority answered");
            crate::kit::client::reads_in(cx);
            cur.t.rec.reads.push(ReadRec {
                key: key.clone(),
                version,
            });
            cur.reads.push((key.clone(), ts));
            cur.t.exec.supply(key, value);
            self.step(cx);
        } else if denied.len() > n - maj {
            let why = why.clone().unwrap_or(AbortReason::ReadDenied);
            self.abort(why, cx);
        }
    }

    pub(super) fn on_vote(
        &mut self,
        from: NodeId,
        txn: TxnId,
        accept: bool,
        reason: Option<AbortReason>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let n = self.env.layout.topology.num_dcs();
        let dc = self.env.layout.dc_of(from);
        let Some(cur) = self.cur.as_mut().filter(|c| c.t.rec.id == txn) else {
            return;
        };
        let Phase::Committing { votes, why, .. } = &mut cur.phase else {
            return;
        };
        if reason == Some(AbortReason::OutcomeForgotten) {
            // A DC forgot decisions this old: the transaction may have committed, and
            // this answer is no vote to count (module docs, "Forgetting decisions").
            self.finish(Outcome::Unknown, None, cx);
            return;
        }
        votes.insert(dc, accept);
        if !accept {
            if let Some(r) = reason {
                why.get_or_insert(r);
            }
        }
        // The client has the value (it proposed it).
        match crate::kit::vote::verdict(votes, true, n) {
            Some(true) => self.finish(Outcome::Committed, None, cx),
            Some(false) => {
                let why = why.clone().unwrap_or(AbortReason::MajorityRejected);
                self.finish(Outcome::Aborted, Some(why), cx);
            }
            None => {}
        }
    }
}

impl Client {
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        self.silent_since.remove(&from);
        self.heard.insert(from, cx.now());
        match msg {
            Msg::ReadReply { txn, key, result } => self.on_read_reply(from, txn, key, result, cx),
            Msg::Vote(DcVote {
                txn, accept, reason, ..
            }) => self.on_vote(from, txn, accept, reason, cx),
            Msg::Decided(Decided { txn, commit, .. }) => {
                let ok = self
                    .cur
                    .as_ref()
                    .is_some_and(|c| c.t.rec.id == txn && matches!(c.phase, Phase::Committing { .. }));
                if ok {
                    let (o, why) = if commit {
                        (Outcome::Committed, None)
                    } else {
                        (Outcome::Aborted, Some(AbortReason::MajorityRejected))
                    };
                    self.finish(o, why, cx);
                }
            }
            _ => {}
        }
    }

    fn on_tick(&mut self, t: ClientTimer, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        match (t, &cur.phase) {
            (ClientTimer::Read, Phase::Reading { .. }) => self.abort(AbortReason::ReadNoMajority, cx),
            (ClientTimer::Resend, Phase::Reading { .. }) => {
                self.send_read(cx);
                cx.set_timer(self.env.timeouts.failover, ClientTimer::Resend);
            }
            (ClientTimer::Idle, Phase::Waiting) => self.abort(AbortReason::IdleInteractive, cx),
            (ClientTimer::Status, Phase::Committing { value, votes, .. }) => {
                // Ask again the DCs that have not voted (accepts are idempotent).
                for n in self.env.layout.replicas(value.coord) {
                    if !votes.contains_key(&self.env.layout.dc_of(*n)) {
                        cx.send(
                            *n,
                            Msg::Accept {
                                txn: cur.t.rec.id,
                                value: value.clone(),
                            },
                        );
                    }
                }
                cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
            }
            _ => {}
        }
    }
}

crate::kit::client::client_frame!(ClientTimer, interactive: ClientTimer::Idle, begin: |t| Current {
    t,
    reads: vec![],
    phase: Phase::Reading {
        key: Key::new(b""),
        granted: BTreeMap::new(),
        denied: BTreeSet::new(),
        why: None,
    },
});
