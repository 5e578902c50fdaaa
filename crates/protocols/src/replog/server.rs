//! A replica of the replicated log: its state per group and per transaction, its
//! sweep (heartbeats, elections, vote timeouts), its message dispatch (`receive`) and
//! its crash rule (`kit::server::server_frame!` writes the `Actor` wiring).

use super::*;

pub(crate) use crate::kit::server::SweepTimer as ServerTimer;
pub(super) const CATCHUP_BATCH: u64 = 512;
/// Log slots a replica keeps behind its applied point by default (`replog:keep`).
pub const DEFAULT_KEEP: u64 = 10_000;
/// Lock-acquisition chain of transactions rebuilt after a failover (not measured).
pub(super) const UNKNOWN_HOPS: u32 = u32::MAX;

/// A shard's part of a transaction at commit: keys read, writes.
pub(super) type Share = (Vec<Key>, Vec<(Key, VersionId, Value)>);

/// Accepted entries an acceptor reports in phase 1b: (slot, ballot, entry).
pub(super) type Accepted = Vec<(u64, Ballot, Entry)>;

/// One shard's Paxos group as seen from one replica.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Group {
    pub(super) replicas: Vec<NodeId>,
    // --- durable (acceptor state and applied data) ---
    pub(super) promised: Ballot,
    /// A persistent map (imbl), so that a copy of the server (a real cluster's
    /// checkpoint) shares it rather than copying every slot; ordered as a `BTreeMap`.
    pub(super) log: imbl::OrdMap<u64, (Ballot, Entry)>,
    /// Slots below this are truncated from `log` (applied here; `snapshot.rs`).
    pub(super) log_start: u64,
    pub(super) applied: u64,
    /// Writes of applied PREPARE entries not yet committed or aborted.
    pub(super) writes: HashMap<TxnId, Arc<PrepareEntry>>,
    /// The decisions applied (COMMIT and ABORT entries) and not yet forgotten
    /// (`forget.rs`), with when this replica applied each.
    pub(super) decided: crate::kit::aging::Aging<TxnId, Decision>,
    /// The largest start timestamp of a transaction whose decision was forgotten (of
    /// those whose PREPARE this shard applied), if any was.
    pub(super) forgot_ts: Option<Time>,
    // --- volatile ---
    pub(super) leader: Option<NodeId>,
    pub(super) last_heard: Time,
    /// Until then (a lease from its start), this replica pre-votes for and promises no
    /// candidate but the holder of the ballot it last promised: back from a crash, it
    /// does not know whose lease it supported before (`election.rs`).
    pub(super) quiet_until: Time,
    /// Chosen prefix known (for followers: as announced under `known_ballot`).
    pub(super) chosen: u64,
    pub(super) known_ballot: Ballot,
    pub(super) asked_catchup: Time,
    pub(super) leading: bool,
    pub(super) next_slot: u64,
    pub(super) votes: BTreeMap<u64, BTreeSet<NodeId>>,
    pub(super) acks: BTreeMap<NodeId, Time>,
    pub(super) lease_until: Time,
    pub(super) election: Option<(Ballot, BTreeMap<NodeId, Accepted>)>,
    pub(super) elect_after: Time,
    /// A pre-vote in progress: the ballot this node would stand with and the replicas
    /// that said they would promise it (see `election.rs`).
    pub(super) prevote: Option<(Ballot, BTreeSet<NodeId>)>,
    /// Leader: the slot of its FORGET entry not yet chosen, if one is out.
    pub(super) forgetting: Option<u64>,
    /// Leader: when it last asked cohorts whether they settled (`forget.rs`).
    pub(super) settle_asked: Time,
}

impl Group {
    pub(super) fn majority(&self) -> usize {
        self.replicas.len() / 2 + 1
    }

    /// The leader this replica follows, if heard from within the fail-over time: the
    /// hint a follower gives a client. A leader silent for longer may be down, and a
    /// client sent to it would wait out another fail-over time for nothing.
    pub(super) fn live_leader(&self, now: Time, env: &Env) -> Option<NodeId> {
        self.leader
            .filter(|_| !self.leading && now.saturating_sub(self.last_heard) <= env.timeouts.failover)
    }

    /// The leader's `Accept` of `entry` at `slot` of shard `s`, under the ballot this
    /// replica promised, announcing the chosen prefix it knows.
    pub(super) fn accept(&self, s: ShardId, slot: u64, entry: &Entry) -> Msg {
        Msg::Accept(Accept {
            shard: s,
            ballot: self.promised,
            slot,
            entry: entry.clone(),
            chosen: self.chosen,
        })
    }
}

/// Participant-side state at a leader.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum PState {
    Active,
    /// Waiting for exclusive locks.
    Locking {
        entry: Arc<PrepareEntry>,
        waiting: usize,
        hops: u32,
    },
    /// PREPARE entry being replicated.
    Proposed {
        hops: u32,
    },
    /// PREPARE chosen; waiting for the decision.
    Prepared {
        asked: Time,
        hops: u32,
    },
    /// COMMIT or ABORT being replicated.
    Finishing {
        hops: u32,
    },
}

/// A transaction's part at one shard: participant state is keyed by transaction *and*
/// shard, since after a fail-over one node can lead several shards a transaction
/// touches, and each share prepares, commits and releases its locks on its own.
pub(super) type Part = (TxnId, ShardId);

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct PTxn {
    pub(super) prio: Prio,
    pub(super) state: PState,
    pub(super) last_seen: Time,
    pub(super) pending_reads: crate::kit::reads::PendingReads,
    pub(super) entry: Option<Arc<PrepareEntry>>,
    /// Since when this share, executing, holds a lock another transaction waits for
    /// (noted again once its client is heard after it: `Server::mark_blocking`).
    pub(super) blocking: Option<Time>,
}

impl PTxn {
    /// Whether the share has blocked someone for the fail-over time without a word
    /// from its client since it began to.
    pub(super) fn blocked_silent(&self, now: Time, failover: Time) -> bool {
        self.blocking
            .is_some_and(|b| self.last_seen <= b && now.saturating_sub(b) > failover)
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct CTxn {
    pub(super) coord: ShardId,
    pub(super) parts: Vec<ShardId>,
    pub(super) client: Option<NodeId>,
    pub(super) yes: BTreeSet<ShardId>,
    /// A COMMIT or ABORT entry is being replicated: the decision is taken, and is
    /// announced once the entry is chosen.
    pub(super) committing: bool,
    /// Why the coordinator decided to abort (with `committing`: an ABORT entry).
    pub(super) aborting: Option<AbortReason>,
    pub(super) since: Time,
    /// When the coordinator last asked the cohorts whose votes it lacks
    /// (`Msg::VoteQuery`): every fail-over time, from `since` on.
    pub(super) asked: Time,
}

impl CTxn {
    pub(super) fn new(coord: ShardId, now: Time) -> Self {
        CTxn {
            coord,
            parts: vec![],
            client: None,
            yes: BTreeSet::new(),
            committing: false,
            aborting: None,
            since: now,
            asked: now,
        }
    }
}

crate::kit::server::server_struct! {
    /// A replicated-log server: a replica of each shard it holds, leader of some.
    pub struct Server {
        /// A deliberately broken variant (tests only; see [`crate::Mutant`]).
        pub(super) mutant: crate::Mutant,
        pub(super) me: NodeId,
        /// Initial leader of each shard.
        pub(super) leaders: Arc<Vec<NodeId>>,
        pub(super) groups: BTreeMap<ShardId, Group>,
        /// Durable: committed data of every shard held here.
        pub(super) store: MvStore,
        // --- volatile (leader role) ---
        /// One lock table per shard led here, so a shard's share releases only its locks.
        pub(super) locks: BTreeMap<ShardId, LockTable>,
        pub(super) policy: Policy,
        pub(super) ptxns: HashMap<Part, PTxn>,
        pub(super) tombstones: HashMap<TxnId, Time>,
        pub(super) ctxns: HashMap<TxnId, CTxn>,
        /// Decisions the `EarlyAbort` mutant took in memory only (tests).
        pub(super) mutant_done: HashMap<TxnId, bool>,
        /// Snapshots this server took from a leader (`snapshot.rs`), since it began.
        pub(super) snapshots_taken: u64,
        /// Log slots kept behind the applied point (`replog:keep`).
        pub(super) keep: u64,
        /// How long after it applied a decision a replica may forget it, once settled
        /// (`replog:forget`; the tombstone period by default).
        pub(super) forget: Time,
        pub(super) holds: HoldStats,
    }
}

impl Server {
    /// A fresh server; `leaders[s]` is shard `s`'s initial leader.
    pub fn new(env: Env, me: NodeId, leaders: Arc<Vec<NodeId>>, policy: Policy) -> Self {
        let env_tombstone = env.timeouts.tombstone;
        let mut groups = BTreeMap::new();
        for s in env.layout.shards_of(me) {
            let leader = leaders[s.0 as usize];
            let replicas = env.layout.replicas(s).to_vec();
            // A group of one holds its lease alone; others until a majority's acks.
            let lease_until = if replicas.len() == 1 {
                Time::MAX
            } else {
                env.timeouts.lease
            };
            groups.insert(
                s,
                Group {
                    replicas,
                    promised: Ballot { round: 1, node: leader },
                    log: imbl::OrdMap::new(),
                    log_start: 0,
                    applied: 0,
                    writes: HashMap::default(),
                    decided: Default::default(),
                    forgot_ts: None,
                    leader: Some(leader),
                    last_heard: 0,
                    quiet_until: 0,
                    chosen: 0,
                    known_ballot: Ballot { round: 1, node: leader },
                    asked_catchup: 0,
                    leading: leader == me,
                    next_slot: 0,
                    votes: BTreeMap::new(),
                    acks: BTreeMap::new(),
                    lease_until,
                    election: None,
                    elect_after: 0,
                    prevote: None,
                    forgetting: None,
                    settle_asked: 0,
                },
            );
        }
        Server {
            mutant: crate::Mutant::None,
            env,
            me,
            leaders,
            groups,
            store: MvStore::new(),
            locks: BTreeMap::new(),
            policy,
            ptxns: HashMap::default(),
            tombstones: HashMap::default(),
            ctxns: HashMap::default(),
            mutant_done: HashMap::default(),
            snapshots_taken: 0,
            keep: DEFAULT_KEEP,
            forget: env_tombstone,
            holds: HoldStats::default(),
        }
    }

    /// The decision of `txn` applied in any shard held here (every shard that logged
    /// one logged the same), or taken in memory by the `EarlyAbort` mutant.
    pub(super) fn decision(&self, txn: TxnId) -> Option<bool> {
        self.groups
            .values()
            .find_map(|g| g.decided.get(&txn).map(|d| d.commit))
            .or_else(|| self.mutant_done.get(&txn).copied())
    }

    /// Whether this node leads shard `s` and holds its lease at `now` (no other leader
    /// can have been elected since a majority last acknowledged it).
    pub(super) fn holds_lease(&self, s: ShardId, now: Time) -> bool {
        self.groups.get(&s).is_some_and(|g| g.leading && now < g.lease_until)
    }

    pub(super) fn leads(&self, s: ShardId) -> bool {
        self.groups.get(&s).is_some_and(|g| g.leading)
    }

    /// Shard `s`'s lock table.
    pub(super) fn locks(&mut self, s: ShardId) -> &mut LockTable {
        let policy = self.policy;
        self.locks.entry(s).or_insert_with(|| LockTable::new(policy))
    }

    /// Releases every lock of `txn`'s share at shard `s` and serves the waiters.
    pub(super) fn release(&mut self, txn: TxnId, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let grants = self.locks(s).release_all(txn);
        self.on_grants(s, grants, cx);
    }

    // ------------------------------------------------------------ Paxos
}

impl Server {
    pub(super) fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        crate::kit::server::collect(&mut self.store, &self.env);
        let to = self.env.timeouts.clone();
        let shards: Vec<ShardId> = self.groups.keys().copied().collect();
        for s in shards {
            if self.leads(s) {
                self.heartbeat(s, cx);
                self.resend_unchosen(s, cx);
                self.forget_settled(s, cx);
            } else {
                self.maybe_elect(s, cx);
            }
            self.truncate(s);
        }
        let mut idle = vec![];
        let mut ask = vec![];
        for (&(id, shard), t) in self.ptxns.iter_mut() {
            let silent = now.saturating_sub(t.last_seen) > to.idle && t.pending_reads.is_empty();
            // Sooner for an executing share that blocks someone: its client silent for
            // the fail-over time since (a client cut off by a partition would keep its
            // keys, and everyone on the majority side waiting behind them, for `idle`).
            let blocked = t.pending_reads.is_empty() && t.blocked_silent(now, to.failover);
            match &mut t.state {
                PState::Active | PState::Locking { .. } if silent => idle.push((id, shard)),
                PState::Active if blocked => idle.push((id, shard)),
                PState::Prepared { asked, .. } if now.saturating_sub(*asked) >= to.query => {
                    *asked = now;
                    if let Some(p) = &t.entry {
                        ask.push((id, p.coord, shard, p.ts));
                    }
                }
                _ => {}
            }
        }
        idle.sort();
        ask.sort();
        crate::kit::note_silent(
            cx,
            idle.iter().map(|(t, _)| *t),
            to.failover.min(to.idle),
            "aborted, locks released",
        );
        for part in idle {
            self.abort_local(part, AbortReason::ClientSilent, cx);
        }
        for (txn, coord, shard, ts) in ask {
            // Re-send the vote: the coordinator answers with the decision if it has one.
            if coord != shard {
                self.send_vote(Prepared::yes(txn, coord, shard).again().at(ts), 0, cx);
            }
        }
        let mut expired: Vec<TxnId> = self
            .ctxns
            .iter()
            .filter(|(_, c)| !c.committing && now.saturating_sub(c.since) > to.vote)
            .map(|(id, _)| *id)
            .collect();
        expired.sort();
        for id in expired {
            self.decide_abort(id, AbortReason::VoteTimeout, cx);
        }
        // A cohort silent for the fail-over time may have lost the PREPARE with a
        // crashed leader: its leader, asked, votes no rather than leave the
        // transaction's locks held everywhere else until the vote timeout. Asked
        // every fail-over time, not every sweep: under overload many transactions
        // wait that long for locks, and the questions cost every replica.
        let mut silent: Vec<(TxnId, ShardId, ShardId)> = vec![];
        for (id, c) in self.ctxns.iter_mut() {
            if c.committing || now.saturating_sub(c.asked) <= to.failover {
                continue;
            }
            c.asked = now;
            let lacking = c.parts.iter().filter(|p| **p != c.coord && !c.yes.contains(p));
            silent.extend(lacking.map(|p| (*id, c.coord, *p)));
        }
        silent.sort();
        for (txn, coord, shard) in silent {
            self.ask_vote(txn, coord, shard, true, cx);
        }
        self.tombstones.retain(|_, t| now.saturating_sub(*t) < to.tombstone);
    }
}

impl Server {
    /// The start (and the default restart): silence counts from now; the sweep armed.
    pub(super) fn start(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let lease = self.env.timeouts.lease;
        for g in self.groups.values_mut() {
            g.last_heard = now;
            g.quiet_until = now.saturating_add(lease);
        }
        // A leader back from a crash stands now, not at its first sweep (on the first
        // start no one may stand: every replica has just heard from its leader).
        let shards: Vec<ShardId> = self.groups.keys().copied().collect();
        for s in shards {
            self.maybe_elect(s, cx);
        }
        cx.set_timer(self.env.timeouts.sweep, ServerTimer::Sweep);
    }

    /// Every message, to its handler.
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Read(r) => self.on_read(from, r, cx),
            Msg::Release { txn } => self.on_release(txn, cx),
            Msg::Prepare { shard, entry } => self.on_prepare(shard, entry, cx),
            Msg::Prepared(v) => {
                if self.leads(v.coord) {
                    self.on_prepared(v, cx);
                }
            }
            Msg::Decide { txn, shard, commit } => self.on_decide(txn, shard, commit, cx),
            Msg::Status { txn, shard, ts } => self.on_status(from, txn, shard, ts, cx),
            Msg::SettleQuery { coord, shard, txns } => self.on_settle_query(from, coord, shard, txns, cx),
            Msg::Settled { coord, shard, txns } => self.on_settled(from, coord, shard, txns),
            Msg::Snapshot(snap) => self.on_snapshot(*snap, cx),
            Msg::VoteQuery {
                txn,
                coord,
                shard,
                decide,
            } => self.on_vote_query(from, txn, coord, shard, decide, cx),
            Msg::Wound { txn, coord } => self.on_wound(txn, coord, cx),
            Msg::Accept(a) => self.on_accept(from, a, cx),
            Msg::Accepted { shard, ballot, slot } => self.on_accepted(from, shard, ballot, slot, cx),
            Msg::Nack { shard, promised } => self.on_nack(shard, promised, cx),
            Msg::Heartbeat {
                shard,
                ballot,
                chosen,
                sent,
            } => self.on_heartbeat(from, shard, ballot, chosen, sent, cx),
            Msg::HeartbeatAck { shard, ballot, sent } => self.on_heartbeat_ack(from, shard, ballot, sent),
            Msg::Elect { shard, ballot, from: f } => self.on_elect(from, shard, ballot, f, cx),
            Msg::Promise { shard, ballot, entries } => self.on_promise(from, shard, ballot, entries, cx),
            Msg::PreElect { shard, ballot, applied } => self.on_pre_elect(from, shard, ballot, applied, cx),
            Msg::PreVote { shard, ballot, ok } => self.on_pre_vote(from, shard, ballot, ok, cx),
            Msg::CatchUp { shard, from: f } => self.on_catchup(from, shard, f, cx),
            Msg::Chosen {
                shard,
                ballot,
                from: f,
                entries,
            } => self.on_chosen(shard, ballot, f, entries, cx),
            Msg::ReadReply { .. } | Msg::Outcome { .. } | Msg::Redirect { .. } | Msg::Forgotten { .. } => {}
        }
    }
}

crate::kit::server::server_frame! {ServerTimer, start;
    fn on_crash(&mut self) {
        // Durable: each group's acceptor state, log, applied prefix, pending PREPARE
        // writes and record of decisions (all derived from forced log writes), and the
        // store built from them.
        let groups = std::mem::take(&mut self.groups);
        let store = std::mem::take(&mut self.store);
        let holds = std::mem::take(&mut self.holds);
        let (keep, forget, mutant, taken) = (self.keep, self.forget, self.mutant, self.snapshots_taken);
        *self = Server::new(self.env.clone(), self.me, self.leaders.clone(), self.policy);
        (self.keep, self.forget, self.mutant, self.snapshots_taken) = (keep, forget, mutant, taken);
        for (s, old) in groups {
            let g = self.groups.get_mut(&s).expect("group");
            g.promised = old.promised;
            g.log = old.log;
            g.log_start = old.log_start;
            g.applied = old.applied;
            g.writes = old.writes;
            g.decided = old.decided;
            g.forgot_ts = old.forgot_ts;
            g.chosen = old.applied;
            g.known_ballot = old.promised;
            g.leader = None;
            g.leading = false;
        }
        self.store = store;
        self.holds = holds;
    }
}

impl Replica for Server {
    fn snapshot(&self) -> ReplicaSnapshot {
        crate::kit::snapshot(self.me, &self.store)
    }
    fn versions(&self) -> Option<(u64, u64)> {
        Some((self.store.live(), self.store.collected()))
    }
    fn lock_holds(&self) -> Option<&HoldStats> {
        Some(&self.holds)
    }
    fn stats(&self) -> Option<Vec<(String, f64)>> {
        let slots: usize = self.groups.values().map(|g| g.log.len()).sum();
        let decided: usize = self.groups.values().map(|g| g.decided.len()).sum();
        Some(vec![
            ("replog_log_slots_held".into(), slots as f64),
            ("replog_decisions_held".into(), decided as f64),
            ("replog_snapshots_taken".into(), self.snapshots_taken as f64),
        ])
    }
    fn locked_keys(&self) -> Option<usize> {
        Some(self.locks.values().map(LockTable::len).sum())
    }
    fn role(&self) -> Option<String> {
        Some(crate::roles_text(
            self.groups
                .keys()
                .map(|s| (if self.leads(*s) { "leader" } else { "follower" }, *s)),
        ))
    }
}
