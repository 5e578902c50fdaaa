//! A HACommit replica: its per-transaction and per-group state, its housekeeping sweep
//! (heartbeats, fail-over, recovery of silent transactions, tombstones) and its
//! message dispatch (`receive`, to the file of each concern) and its crash and restart
//! rules (`kit::server::server_frame!` writes the `Actor` wiring).

use super::*;

pub(crate) use crate::kit::server::SweepTimer as ServerTimer;

/// Where a transaction is at this replica of one shard.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum Stage {
    /// Leader: reading (2PL: holding shared locks).
    Active,
    /// Leader: waiting for exclusive locks for the last operation (`hops`: its chain).
    Locking {
        waiting: usize,
        hops: u32,
        reads: Vec<Key>,
        writes: Vec<(Key, VersionId, Value)>,
    },
    /// Leader: yes vote sent to followers, waiting for a majority.
    Replicating { hops: u32, acks: BTreeSet<NodeId> },
    /// Voted yes (leader) or holding a replicated context / acceptor state (follower).
    Voted,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Txn {
    pub(super) prio: Prio,
    pub(super) client: Option<NodeId>,
    pub(super) shards: Vec<ShardId>,
    pub(super) stage: Stage,
    pub(super) ctx: Option<TCtx>,
    pub(super) promised: Ballot,
    pub(super) accepted: Option<(Ballot, bool)>,
    /// The acceptance this replica itself made (highest ballot), as opposed to one it
    /// adopted from a peer's report in a view change or a re-sync (`accepted` holds
    /// either, for phase 1). Only its own acceptance is reported to the leader as
    /// `Accepted` or counted toward a majority: reporting an adopted one counted the
    /// same acceptance twice, and a value accepted by one replica of three was taken
    /// as chosen (campaign seed 801023: a split decision, shard 2 committing a
    /// transaction shards 0, 1 and 3 aborted).
    #[serde(default)]
    pub(super) own: Option<(Ballot, bool)>,
    /// Leader: acceptances reported by the group, per ballot.
    pub(super) acc: BTreeMap<Ballot, (bool, BTreeSet<NodeId>)>,
    /// Known chosen but not applicable yet (commit without the context).
    pub(super) chosen: Option<bool>,
    pub(super) last_seen: Time,
    pub(super) pending_reads: crate::kit::reads::PendingReads,
    /// WAN-hop chain when the exclusive locks were taken.
    pub(super) locked_at: Option<u32>,
    /// When this replica will start recovering the transaction.
    pub(super) recover_at: Option<Time>,
    /// Leader: when another transaction began to wait for a lock this one holds (since
    /// its client was last heard).
    pub(super) blocking: Option<Time>,
    /// Follower: when it last reported its acceptance to the leader.
    pub(super) reported: Time,
    /// When it last asked its group for the context of a chosen COMMIT it lacks.
    pub(super) ctx_asked: Option<Time>,
    /// The client whose ballot-0 proposal this replica refused (a restarted peer's
    /// fence, a higher promise): it is told the decision when it is applied here.
    pub(super) refused_client: Option<NodeId>,
    /// Leader: the view in which it replicated its own yes vote to a majority (so the
    /// vote may be sent again in that view; `Server::on_vote_query`).
    pub(super) voted_in: Option<u64>,
}

impl Txn {
    pub(super) fn new(txn: TxnId, ts: Time, now: Time) -> Self {
        Txn {
            prio: (ts, txn),
            client: None,
            shards: vec![],
            stage: Stage::Voted,
            ctx: None,
            promised: 0,
            accepted: None,
            own: None,
            acc: BTreeMap::new(),
            chosen: None,
            last_seen: now,
            pending_reads: Default::default(),
            locked_at: None,
            recover_at: None,
            blocking: None,
            reported: 0,
            ctx_asked: None,
            refused_client: None,
            voted_in: None,
        }
    }
    pub(super) fn info(&self, txn: TxnId) -> PendingInfo {
        PendingInfo {
            txn,
            ts: self.prio.0,
            shards: self.shards.clone(),
            ctx: self.ctx.clone(),
            promised: self.promised,
            accepted: self.accepted,
        }
    }
    /// Whether this replica may have to finish the transaction by recovery: it holds a
    /// voted context or Paxos state (an unvoted leader transaction aborts unilaterally).
    /// Whether an acceptor may promise or accept `ballot` here: at least its promise,
    /// and above `fenced` (a restarted peer's fence, 0 for none, see
    /// [`Server::fence_of`]). Refused, the fence becomes part of its promise.
    pub(super) fn may_take(&mut self, ballot: Ballot, fenced: Ballot) -> bool {
        let ok = ballot >= self.promised && (fenced == 0 || ballot > fenced);
        if !ok {
            self.promised = self.promised.max(fenced);
        }
        ok
    }

    /// Whether it has blocked someone for `failover` without a word from its client
    /// (`Server::mark_blocking`).
    pub(super) fn blocked_silent(&self, now: Time, failover: Time) -> bool {
        self.blocking
            .is_some_and(|b| self.last_seen <= b && now.saturating_sub(b) > failover)
    }

    /// Whether this replica, leading `view`, voted yes itself in that view, its vote
    /// replicated to a majority (not a context adopted in a view change, nor one voted
    /// in an earlier view and perhaps replicated to a minority only).
    pub(super) fn voted_here(&self, view: u64) -> bool {
        matches!(self.stage, Stage::Voted) && self.ctx.is_some() && self.voted_in == Some(view)
    }

    pub(super) fn needs_recovery(&self) -> bool {
        matches!(self.stage, Stage::Voted | Stage::Replicating { .. })
            && (self.ctx.is_some() || self.accepted.is_some() || self.promised > 0)
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Done {
    pub(super) commit: bool,
    /// Shared, so that a change to the map copies a pointer per decided transaction
    /// in the nodes it touches, not its reads and writes (an image stores it whole).
    pub(super) ctx: Option<std::sync::Arc<TCtx>>,
    pub(super) at: Time,
    /// The transaction's start time (0: unknown here; such an entry is never
    /// forgotten), for the forgetting mark.
    pub(super) ts: Time,
    /// Its configuration (empty if never learnt here): whose replicas must have settled
    /// it before this replica forgets it.
    pub(super) shards: Vec<ShardId>,
}

/// A decided transaction this replica asks about before forgetting it (module docs,
/// "Forgetting decided transactions").
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Settling {
    /// When it last asked (0: never).
    pub(super) asked: Time,
    /// The (shard, replica) pairs that said the transaction is settled there.
    pub(super) answered: BTreeSet<(ShardId, NodeId)>,
}

/// Decided transactions, in a persistent map: a copy of the server (a real
/// cluster's checkpoint takes one on its event loop and encodes it on a second
/// thread) shares the map's nodes instead of copying a hundred thousand entries, and
/// a later change copies only the path to what it changes. A B-tree (ordered, so
/// iteration is deterministic for the simulator) rather than imbl's hash trie, whose
/// sparse nodes grew a ten-minute cluster run's six servers to 3.47 GB of resident
/// memory, still rising, where the B-tree's level off at 0.84-1.19 GB (the whole
/// processes, not the map alone: docs/MEASUREMENTS.md, "Checkpoint pauses").
pub(super) type DoneMap = imbl::OrdMap<(ShardId, TxnId), Done>;

/// Every decided transaction, oldest first, with the time it was decided: once the
/// shorter of the tombstone period and the forgetting period has passed, the sweep
/// takes it from the front, to `settling` (which drops its writes after the
/// tombstone period and the entry once settled everywhere) if the forgetting period
/// has passed, else dropping its writes, to `unsettled` until it has; without
/// visiting every decided transaction (which, in a persistent map, would also copy
/// every node).
pub(super) type Expiring = imbl::Vector<(Time, (ShardId, TxnId))>;

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) enum Status {
    /// Serving in `view` (as leader or follower).
    Normal,
    /// Candidate for `view`: states collected so far.
    Candidate { since: Time },
    /// Restarted: waiting for the leader's state.
    Syncing,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Group {
    pub(super) replicas: Vec<NodeId>,
    pub(super) view: u64,
    pub(super) status: Status,
    pub(super) states: BTreeMap<NodeId, (Vec<PendingInfo>, Vec<DoneInfo>, u64)>,
    pub(super) last_hb: Time,
    pub(super) seq: u64,
    /// Leader: decided transactions not yet applied by these followers.
    pub(super) pushing: BTreeMap<TxnId, (BTreeSet<NodeId>, Time)>,
    /// Restarted: peers whose state has been merged so far.
    pub(super) synced_from: BTreeSet<NodeId>,
    /// The largest start time of a decided transaction of the shard this replica forgot
    /// (or was told of in a re-sync): it keeps no state for, and refuses, a transaction
    /// of the shard it does not know that started at or below it.
    pub(super) forgot_ts: Time,
}

impl Group {
    pub(super) fn leader(&self) -> NodeId {
        self.replicas[(self.view % self.replicas.len() as u64) as usize]
    }
    pub(super) fn majority(&self) -> usize {
        self.replicas.len() / 2 + 1
    }
}

/// A recovery proposer's round for one transaction (§VI-A).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Proposal {
    pub(super) ts: Time,
    pub(super) ballot: Ballot,
    pub(super) shards: Vec<ShardId>,
    /// Phase 2 value once chosen to propose.
    pub(super) value: Option<bool>,
    pub(super) promises: BTreeMap<ShardId, BTreeSet<NodeId>>,
    pub(super) best: Option<(Ballot, bool)>,
    pub(super) accepts: BTreeMap<ShardId, BTreeSet<NodeId>>,
    pub(super) since: Time,
}

crate::kit::server::server_struct! {
    /// A HACommit server: a replica of every shard group it belongs to, leader of some.
    pub struct Server {
        pub(super) me: NodeId,
        pub(super) rc: bool,
        pub(super) store: MvStore,
        pub(super) locks: LockTable,
        pub(super) groups: BTreeMap<ShardId, Group>,
        pub(super) txns: HashMap<(ShardId, TxnId), Txn>,
        pub(super) done: DoneMap,
        pub(super) expiring: Expiring,
        /// Decided transactions past the tombstone period (writes dropped) waiting for
        /// the forgetting period, when that is the longer (oldest first).
        pub(super) unsettled: Expiring,
        /// Decided transactions old enough to be forgotten once settled everywhere.
        pub(super) settling: BTreeMap<(ShardId, TxnId), Settling>,
        /// Where the last sweep's pass over `settling` stopped.
        pub(super) settle_cursor: Option<(ShardId, TxnId)>,
        /// How long after its decision a transaction is forgotten, once settled
        /// (`hacommit:forget=DUR`; default the tombstone period).
        pub(super) forget_after: Time,
        pub(super) tombstones: HashMap<(ShardId, TxnId), Time>,
        pub(super) proposals: HashMap<TxnId, Proposal>,
        pub(super) max_ballot: Ballot,
        /// Set when restarted after a crash.
        pub(super) restarted_at: Option<Time>,
        /// A small durable watermark, kept across a crash (the one departure from
        /// "logless", see the module essay): every transaction this replica has voted
        /// for, held a replicated vote of, or promised or accepted a ballot of has a start
        /// time below it. It is raised, with a synced write, before the replica acts on a
        /// transaction at or above it ([`Server::admit`]), two sweeps' worth at a time. It is
        /// compared only with transactions' start times, never with this replica's clock,
        /// so clients may be skewed against servers by any amount.
        pub(super) mark_ts: Time,
        /// The same for ballots: every ballot this replica promised or accepted is below it.
        pub(super) mark_ballot: Ballot,
        /// `mark_ts` at the last restart: transactions that started below it may have been
        /// acted on here and forgotten.
        pub(super) forgot_before: Time,
        /// `mark_ballot` at the last restart: for a forgotten transaction, only higher
        /// ballots may be accepted.
        pub(super) ballot_floor: Ballot,
        /// Fences set by restarted peers' re-syncs, per shard: every transaction that
        /// started before `.0` is treated as promised `.1` (so an acceptance of a lower
        /// ballot still in flight from before the peer's crash cannot complete a majority
        /// behind the state the peer merged). Merged as the largest of each.
        pub(super) fences: BTreeMap<ShardId, (Time, Ballot)>,
        pub(super) holds: HoldStats,
        /// A deliberately broken variant (tests only; not in an image).
        #[serde(skip)]
        pub(super) mutant: crate::Mutant,
    }
}

pub(super) fn majority_of(n: usize) -> usize {
    n / 2 + 1
}

impl Server {
    /// A fresh replica.
    pub fn new(env: Env, me: NodeId, rc: bool) -> Self {
        let groups = env
            .layout
            .shards_of(me)
            .into_iter()
            .map(|s| {
                (
                    s,
                    Group {
                        replicas: env.layout.replicas(s).to_vec(),
                        view: 0,
                        status: Status::Normal,
                        states: BTreeMap::new(),
                        last_hb: 0,
                        seq: 0,
                        pushing: BTreeMap::new(),
                        synced_from: BTreeSet::new(),
                        forgot_ts: 0,
                    },
                )
            })
            .collect();
        Server {
            forget_after: env.timeouts.tombstone,
            env,
            me,
            rc,
            store: MvStore::new(),
            locks: LockTable::new(Policy::WoundWait),
            groups,
            txns: HashMap::default(),
            done: DoneMap::default(),
            expiring: Expiring::new(),
            unsettled: Expiring::new(),
            settling: BTreeMap::new(),
            settle_cursor: None,
            tombstones: HashMap::default(),
            proposals: HashMap::default(),
            max_ballot: 0,
            restarted_at: None,
            mark_ts: 0,
            mark_ballot: 0,
            forgot_before: 0,
            ballot_floor: 0,
            fences: BTreeMap::new(),
            holds: HoldStats::default(),
            mutant: crate::Mutant::None,
        }
    }

    pub(super) fn is_leader(&self, shard: ShardId) -> bool {
        self.groups
            .get(&shard)
            .is_some_and(|g| g.status == Status::Normal && g.leader() == self.me)
    }

    /// Whether this replica may have acted on a transaction started at `ts` before it
    /// last crashed, and forgotten it (by the durable watermark).
    pub(super) fn forgot(&self, ts: Time) -> bool {
        self.restarted_at.is_some() && ts < self.forgot_before
    }

    /// Whether this replica may vote or hold a replicated vote for a transaction
    /// started at `ts` (a restarted replica may have forgotten a vote it gave).
    pub(super) fn may_accept(&self, ts: Time) -> bool {
        !self.forgot(ts)
    }

    /// Whether this replica may promise `ballot` in phase 1 for a transaction started at
    /// `ts` (once re-synced). For a forgotten one only above its ballot watermark: it
    /// may have promised anything below. Its acceptor state for such a transaction is
    /// what it merged from a majority while re-syncing, and that majority fenced
    /// (promised `ballot_floor` to) every transaction older than its watermark before
    /// answering, so no value chosen at a ballot at or below the floor escaped the
    /// merge: an acceptance still in flight from before the crash is refused.
    pub(super) fn may_promise(&self, ts: Time, ballot: Ballot) -> bool {
        !self.forgot(ts) || ballot > self.ballot_floor
    }

    /// The ballot a restarted peer's fence makes this replica treat as promised for a
    /// transaction of `shard` started at `ts` (0: none).
    pub(super) fn fence_of(&self, shard: ShardId, ts: Time) -> Ballot {
        match self.fences.get(&shard) {
            Some(&(below, floor)) if ts < below => floor,
            _ => 0,
        }
    }

    /// Whether this replica may accept `ballot` in phase 2 for a transaction started at
    /// `ts`: always, unless it may have forgotten a promise for it; then only ballots
    /// above every ballot it may have promised before the crash (a proposer of such a
    /// ballot had a majority's promises, and this replica promised nothing as high),
    /// never the client's ballot 0.
    pub(super) fn may_accept_ballot(&self, ts: Time, ballot: Ballot) -> bool {
        !self.forgot(ts) || (ballot != 0 && ballot > self.ballot_floor)
    }

    /// Records, durably and before acting, that this replica may act on a transaction
    /// started at `ts`: raises the watermark past it (by a reserve of two sweeps, so the
    /// synced write is rare) when it is not already.
    pub(super) fn admit(&mut self, ts: Time, cx: &mut Ctx<'_, Msg>) {
        let reserve = 2 * self.env.timeouts.sweep;
        crate::kit::marks::raise(&mut self.mark_ts, ts, reserve, cx);
    }

    /// The same for a recovery ballot this replica is about to promise or accept.
    pub(super) fn admit_ballot(&mut self, ballot: Ballot, cx: &mut Ctx<'_, Msg>) {
        use crate::kit::marks::{raise, BALLOT_RESERVE};
        raise(&mut self.mark_ballot, ballot, BALLOT_RESERVE, cx);
    }

    pub(super) fn not_leader(&self, to: NodeId, txn: TxnId, shard: ShardId, cx: &mut Ctx<'_, Msg>) {
        let leader = self.groups.get(&shard).map_or(to, |g| g.leader());
        cx.send(to, Msg::NotLeader { txn, shard, leader });
    }

    // ------------------------------------------------------------ execution
}

impl Server {
    /// Schedules this replica's recovery of a transaction, after a back-off that grows
    /// with its rank in the group (`query` per place after the leader) plus a random
    /// part under one `sweep` (competing proposers resolve by ballots; the back-off
    /// keeps them from pre-empting each other).
    pub(super) fn arm_recovery(&mut self, key: (ShardId, TxnId), cx: &mut Ctx<'_, Msg>) {
        let to = &self.env.timeouts;
        let (query, sweep) = (to.query, to.sweep);
        // Rank counted from the group's current leader, which holds the locks and
        // sees who waits for them: after a view change the replica listed first may
        // be the one that is cut off, and counting from it delayed the live leader's
        // recovery by a whole `query`.
        let rank = self
            .groups
            .get(&key.0)
            .and_then(|g| {
                let n = g.replicas.len();
                let me = g.replicas.iter().position(|r| *r == self.me)?;
                Some((me + n - (g.view % n as u64) as usize) % n)
            })
            .unwrap_or(0) as u64;
        let jitter = cx.rng().gen_range(0..sweep.max(1));
        let now = cx.now();
        if let Some(t) = self.txns.get_mut(&key) {
            t.recover_at = Some(now + rank * query + jitter);
        }
    }

    pub(super) fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        crate::kit::server::collect(&mut self.store, &self.env);
        let to = self.env.timeouts.clone();
        self.heartbeat_and_failover(cx);
        // Leaders: unvoted transactions whose client went silent abort unilaterally
        // (after `idle`, or after the fail-over time once they block someone).
        let mut idle: Vec<(ShardId, TxnId)> = self
            .txns
            .iter()
            .filter(|(_, t)| {
                matches!(t.stage, Stage::Active)
                    && t.pending_reads.is_empty()
                    && (now.saturating_sub(t.last_seen) > to.idle || t.blocked_silent(now, to.failover))
            })
            .map(|(k, _)| *k)
            .collect();
        idle.sort();
        crate::kit::note_silent(
            cx,
            idle.iter().map(|(_, t)| *t),
            to.failover.min(to.idle),
            "aborted, locks released",
        );
        for k in idle {
            self.abort_unvoted(k, AbortReason::ClientSilent, cx);
        }
        // Voted transactions whose proposer went silent: become a recovery proposer
        // after a back-off that grows with this replica's rank in the group.
        let mut start = vec![];
        let mut arm = vec![];
        for ((shard, id), t) in self.txns.iter() {
            if !t.needs_recovery() || self.proposals.contains_key(id) {
                continue;
            }
            if let Some(at) = t.recover_at {
                if now >= at {
                    start.push(*id);
                }
            } else if now.saturating_sub(t.last_seen) > to.idle || t.blocked_silent(now, to.failover) {
                // Silent for `idle`; or, sooner, silent for the fail-over time since
                // another transaction began to wait for its locks (`mark_blocking`).
                arm.push((*shard, *id));
            }
        }
        arm.sort();
        for k in arm {
            self.arm_recovery(k, cx);
        }
        start.sort();
        start.dedup();
        for id in start {
            for t in self.txns.iter_mut().filter(|((_, x), _)| *x == id) {
                t.1.recover_at = None;
                t.1.last_seen = now;
            }
            self.start_recovery(id, cx);
        }
        // Leaders re-send votes whose replication has not reached a majority yet.
        let mut again: Vec<(ShardId, TxnId)> = self
            .txns
            .iter()
            .filter(|(_, t)| {
                matches!(t.stage, Stage::Replicating { .. }) && now.saturating_sub(t.last_seen) >= to.query
            })
            .map(|(k, _)| *k)
            .collect();
        again.sort();
        for (shard, txn) in again {
            let Some(g) = self.groups.get(&shard) else { continue };
            if g.status != Status::Normal || g.leader() != self.me {
                continue;
            }
            let view = g.view;
            let reps = g.replicas.clone();
            let Some(t) = self.txns.get_mut(&(shard, txn)) else {
                continue;
            };
            let (Stage::Replicating { acks, .. }, Some(ctx)) = (&t.stage, &t.ctx) else {
                continue;
            };
            for r in reps.iter().filter(|r| !acks.contains(r)) {
                cx.send(
                    *r,
                    Msg::Replicate {
                        shard,
                        view,
                        ctx: ctx.clone(),
                    },
                );
            }
        }
        // Followers keep reporting an accepted decision to their leader until they learn
        // the outcome: the leader learns that a decision is chosen only from these
        // reports, and a lost one must not leave it undecided until recovery.
        let mut report = vec![];
        for ((shard, id), t) in self.txns.iter_mut() {
            let Some((ballot, commit)) = t.own else { continue };
            if t.chosen.is_some() || now.saturating_sub(t.reported) < to.query {
                continue;
            }
            let g = &self.groups[shard];
            if g.status != Status::Normal || g.leader() == self.me {
                continue;
            }
            t.reported = now;
            report.push((
                g.leader(),
                Msg::Accepted(Accepted {
                    txn: *id,
                    shard: *shard,
                    ballot,
                    commit,
                    shards: t.shards.clone(),
                    ts: t.prio.0,
                }),
            ));
        }
        report.sort_by_key(|(n, m)| match m {
            Msg::Accepted(Accepted { txn, shard, .. }) => (*n, *shard, *txn),
            _ => unreachable!(),
        });
        for (n, m) in report {
            cx.send(n, m);
        }
        // Proposals that stall are dropped (the idle rule tries again later); the others
        // re-send their current phase to the replicas that have not answered.
        let mut stale: Vec<TxnId> = vec![];
        let mut resend: Vec<TxnId> = vec![];
        for (t, p) in &self.proposals {
            if now.saturating_sub(p.since) > to.vote {
                stale.push(*t);
            } else if now.saturating_sub(p.since) >= to.query {
                resend.push(*t);
            }
        }
        stale.sort();
        resend.sort();
        for t in stale {
            self.proposals.remove(&t);
        }
        for t in resend {
            self.resend_proposal(t, cx);
        }
        self.tombstones.retain(|_, t| now.saturating_sub(*t) < to.tombstone);
        // Decided transactions keep their writes while a new leader might need them
        // (the tombstone period), and their entry until every replica of every
        // participant has settled them (`settle`).
        let first = to.tombstone.min(self.forget_after);
        while let Some(&(at, key)) = self.expiring.front() {
            if now.saturating_sub(at) < first {
                break;
            }
            self.expiring.pop_front();
            // (Decided again later: that entry's own turn comes.)
            if self.done.get(&key).is_none_or(|d| d.at != at) {
                continue;
            }
            if now.saturating_sub(at) >= self.forget_after {
                self.settling.entry(key).or_default();
            } else {
                // Forgotten later than the tombstone period: its writes go now, and
                // it waits its turn to be settled without them.
                if let Some(d) = self.done.get_mut(&key) {
                    d.ctx = None;
                }
                self.unsettled.push_back((at, key));
            }
        }
        while let Some(&(at, key)) = self.unsettled.front() {
            if now.saturating_sub(at) < self.forget_after {
                break;
            }
            self.unsettled.pop_front();
            if self.done.get(&key).is_some_and(|d| d.at == at) {
                self.settling.entry(key).or_default();
            }
        }
        self.settle(cx);
    }
}

impl Server {
    /// The start (and each restart, from `on_recover`): the watermark word, the groups' heartbeat clocks, the sweep armed.
    pub(super) fn start(&mut self, cx: &mut Ctx<'_, Msg>) {
        // The watermarks exist from the start (1: nothing acted on yet, no ballot
        // promised), written before anything is handled; only a process that lost even
        // these words (a restart with no disk on a real cluster) finds 0 (see
        // `on_recover`). A ballot mark of 1 after a restart says that this replica
        // promised no recovery ballot before its crash, so the floor its peers fence
        // old transactions with is 1 (every recovery ballot passes, the client's 0 does
        // not). It used to be 0 until a first promise, which read as "no disk": the
        // floor then came from the clock, one `failover` ahead, and no recovery of a
        // transaction begun before the restart could win a ballot for that second.
        self.mark_ts = self.mark_ts.max(1);
        self.mark_ballot = self.mark_ballot.max(1);
        cx.charge_log_sync(8);
        let now = cx.now();
        for g in self.groups.values_mut() {
            g.last_hb = now;
        }
        cx.set_timer(self.env.timeouts.sweep, ServerTimer::Sweep);
    }

    /// Every message, to its handler.
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        // Every message that can make this replica vote, hold a vote or act as an
        // acceptor names the transaction's start time (and ballot): the watermarks
        // cover them before anything is done.
        match &msg {
            Msg::Last(LastOp { ts, .. })
            | Msg::Replicate {
                ctx: TCtx { ts, .. }, ..
            } => self.admit(*ts, cx),
            Msg::P1a(P1a { ts, ballot, .. }) | Msg::P2a(P2a { ts, ballot, .. }) => {
                self.admit(*ts, cx);
                if *ballot != 0 {
                    self.admit_ballot(*ballot, cx);
                }
            }
            Msg::NewView(ViewState { pending, .. }) | Msg::SyncState(SyncState { pending, .. }) => {
                if let Some(ts) = pending.iter().map(|p| p.ts).max() {
                    self.admit(ts, cx);
                }
                if let Some(b) = pending
                    .iter()
                    .map(|p| p.promised.max(p.accepted.map_or(0, |a| a.0)))
                    .max()
                {
                    if b != 0 {
                        self.admit_ballot(b, cx);
                    }
                }
            }
            _ => {}
        }
        match msg {
            Msg::Read(m) => self.on_read(from, m, cx),
            Msg::Last(m) => self.on_last(from, m, cx),
            Msg::Replicate { shard, view, ctx } => self.on_replicate(from, shard, view, ctx, cx),
            Msg::Replicated { shard, view, txn } => self.on_replicated(from, shard, view, txn, cx),
            Msg::P1a(m) => self.on_p1a(from, m, cx),
            Msg::P1b(m) => self.on_p1b(from, m, cx),
            Msg::P2a(m) => self.on_p2a(from, m, cx),
            Msg::P2b { txn, ballot, parts } => self.on_p2b(from, txn, ballot, parts, cx),
            Msg::Accepted(m) => self.on_accepted(from, m, cx),
            Msg::Decided { shard, done } => self.on_decided(from, shard, done, cx),
            Msg::SettleQuery { shard, txns } => self.on_settle_query(from, shard, txns, cx),
            Msg::Settled { shard, txns } => self.on_settled(from, shard, txns),
            Msg::Applied { shard, txns } => self.on_applied(from, shard, txns),
            Msg::Heartbeat { shard, view } => self.on_heartbeat(from, shard, view, cx),
            Msg::ViewChange { shard, view } => self.on_view_change(from, shard, view, cx),
            Msg::ViewState(m) => self.on_view_state(from, m, cx),
            Msg::NewView(m) => self.on_new_view(from, m, cx),
            Msg::SyncReq(m) => self.on_sync_req(from, m, cx),
            Msg::SyncState(m) => self.on_sync_state(from, m, cx),
            Msg::VoteQuery { txn, shard } => self.on_vote_query(from, txn, shard, cx),
            Msg::ReadReply { .. } | Msg::NotLeader { .. } | Msg::Vote { .. } | Msg::Wound { .. } => {} // client messages
        }
    }
}

crate::kit::server::server_frame! {ServerTimer, start;
    fn on_crash(&mut self) {
        // Logless: nothing survives but the two watermark words (and configuration: the
        // forgetting period and, in test builds, a mutant switch).
        crate::kit::server::keep_only!(self = Server::new(self.env.clone(), self.me, self.rc); mark_ts, mark_ballot, mutant, forget_after);
    }

    fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.restarted_at = Some(cx.now());
        // No watermark at all (a process restarted with no disk, on a real cluster): it
        // may have acted on anything started before now, by its own clock. This is the
        // only place the restart rule reads a clock; with a journal (`--durable`) the
        // words survive and no clock is read.
        self.forgot_before = if self.mark_ts == 0 { cx.now() } else { self.mark_ts };
        self.ballot_floor = if self.mark_ballot == 0 {
            ((cx.now() / 1_000_000 + self.env.timeouts.failover / 1_000_000) << 20) | 0xFFFFF
        } else {
            self.mark_ballot
        };
        for g in self.groups.values_mut() {
            g.status = Status::Syncing;
        }
        self.on_start(cx);
        self.heartbeat_and_failover(cx);
    }
}

crate::kit::replica! {holds;
    fn role(&self) -> Option<String> {
        Some(crate::roles_text(self.groups.iter().map(|(s, g)| {
            let r = match g.status {
                Status::Normal if g.leader() == self.me => "leader",
                Status::Normal => "follower",
                Status::Candidate { .. } => "candidate",
                Status::Syncing => "syncing",
            };
            (r, *s)
        })))
    }
}
