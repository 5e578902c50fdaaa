//! HACommit: logless one-phase commit (hacommit.md §III–VI), as `hacommit` (two-phase
//! locking, serializable) and `hacommit-rc` (read committed, §VII-D: no read locks).
//!
//! # The protocol
//!
//! Every shard lives on a replica group of `k` servers (3 by default, `replicas=5` in
//! the fault experiments), spread over DCs by [`Placement::Groups`]. One replica leads
//! the group (the *participant*); the others follow.
//!
//! - **Execution.** The client runs the program interactively: every read goes to the
//!   leader of the key's shard and takes a shared lock there (wound-wait, start time as
//!   priority; `hacommit-rc` takes none). Writes are buffered at the client. Every
//!   operation carries the transaction's configuration so far: the ids of the shards it
//!   touched (§V-E).
//! - **The last operation (§IV).** When the program finishes, its buffered writes are
//!   the last operation. The client sends `Last` to the leader of every shard in the
//!   final configuration: the writes that shard holds (an empty last operation for a
//!   shard it only read), the keys read there, and the full shard list. The leader
//!   checks locally (its shared locks are still held; it takes the exclusive locks),
//!   then replicates its vote and the transaction context (id, shard ids, relevant
//!   writes, read keys, a version sequence number) to its followers, and only after a
//!   majority of the group holds them answers the client with its vote. A NO vote is
//!   answered at once and not replicated: ABORT is the default outcome of recovery
//!   anyway.
//! - **Commit (§V).** The client is the only initial proposer of a one-instance Paxos
//!   whose acceptors are the replicas of every participant. It sends phase 2 with
//!   ballot 0 and its decision (COMMIT only if every vote was yes; it may always abort)
//!   to every replica of every participant. Each replica records the ballot and
//!   decision and acknowledges; the client ends the transaction once a majority of
//!   every participant's group has acknowledged: one round trip from its decision, and
//!   no log write anywhere.
//! - **Client failure (§VI-A).** A replica holding a transaction's context whose
//!   proposer has been silent for `idle` becomes a recovery proposer, after a random
//!   back-off that grows with its rank in the group: it runs full Paxos from phase 1
//!   with a ballot above any it has seen, to every replica of every shard in the
//!   context's configuration, and proposes the highest-ballot accepted decision, or
//!   ABORT if no response carries one. Competing proposers are resolved by ballots
//!   and the back-off.
//! - **Replica failure (§VI-B).** The leader sends heartbeats every `sweep`; a follower
//!   that misses them for `failover` (plus a rank stagger) starts a view change: the
//!   candidate collects the pending contexts, accepted decisions and recently decided
//!   transactions from a majority of the group, merges them, re-takes the locks of
//!   every voted transaction and starts serving. Without a majority the group stalls
//!   and stays consistent.
//!
//! # Where the paper is vague, and what this module does
//!
//! - **When a decision becomes visible.** The paper lets a participant apply the
//!   decision as soon as it receives phase 2. In Paxos a value accepted by one acceptor
//!   is not chosen: if the client crashes after its phase 2 reached only the leader of
//!   a group, a recovery proposer whose phase-1 quorum misses that leader proposes
//!   ABORT, while the leader has already exposed the writes. So here a decision is
//!   *chosen* once a majority of one participant's group has accepted it (each replica
//!   reports its acceptance to its leader as well as to the proposer); phase 1 of
//!   recovery needs a majority of *every* group, which intersects any such majority. The
//!   leader applies the writes and releases the locks when it learns the decision is
//!   chosen, which is the moment the client ends too (the followers' acknowledgements
//!   reach the client and the leader in the same trip when the client is near the
//!   leader). Followers apply when the leader tells them (`Decided`, re-sent until they
//!   confirm). A ballot-0 ABORT is final at once (the client never proposes COMMIT
//!   too), so aborts release their locks without waiting.
//! - **Version order.** The leader gives each yes vote a sequence number, replicated
//!   with the context; every replica installs versions ordered by it, so replicas that
//!   learn decisions in different orders still agree. A new leader continues above the
//!   largest sequence number a majority has seen.
//! - **No memory survives a crash** (that is what *logless* means). A restarted replica
//!   copies its shards' data, pending contexts and acceptor state (promises and
//!   acceptances) from a majority of its group other than itself before it serves: any
//!   decision chosen, or promise given, before the crash involved a majority, which
//!   meets them. It never votes for a transaction that began before its restart, and
//!   for such a transaction it answers only ballots issued after its restart (recovery
//!   ballots carry their issue time): the client's ballot 0, or an older recovery
//!   ballot, may still meet a promise it forgot. Concurrent failures of a majority of a
//!   group are beyond what the paper tolerates: that group stalls.
//! - **Who speaks for a view.** Only a view's leader sends its heartbeats, vote
//!   replication and new-view state, and only after merging a majority's state: a
//!   message for a view from anyone else is ignored, a message of a later view makes a
//!   leader step down (its unvoted transactions abort, its locks go), and a candidate
//!   leads only through its own merge. A replica that led its view before a crash
//!   stands for a new view once re-synced instead of resuming the old one (it holds
//!   none of that view's locks).
//! - **Ballot 0 refused.** A replica that restarted after a transaction began refuses
//!   the client's ballot 0 (it may have forgotten a promise). When it refuses, it starts
//!   recovery of that transaction itself: the client, still re-sending to the replicas
//!   that have not answered, keeps everyone else from thinking it silent, and may never
//!   again ask the replica that knows the outcome.
//! - **Message economy.** The client sends one phase-2 message per replica *node*,
//!   covering every participant shard that node holds (one per replica of the paper's
//!   pattern, not one per shard replica). Leaders tell followers which decisions are
//!   chosen in one batch per sweep, re-sent until confirmed; followers serve no reads,
//!   so this only delays their catching up, not anyone's critical path.
//! - **Retransmission.** Leaders re-send unacknowledged vote replication, followers
//!   re-report their acceptance to the leader until they learn the outcome, recovery
//!   proposers re-send their current phase, and clients re-send phase 2 to replicas
//!   that have not answered. A client whose request to a shard's leader times out tries
//!   the next replica of the group next time.
//! - **Configuration messages.** The paper has the client send the growing configuration
//!   to every participant contacted so far on each operation. Here each operation
//!   carries it to the participant it goes to, and the last operation carries the final
//!   one to every participant. A participant that has not voted aborts unilaterally
//!   when its client goes silent (it promised nothing), so a stale configuration is
//!   never used to decide; recovery always uses a voted context's final configuration.
//! - **Read-only transactions** still send the (empty) last operation and the phase-2
//!   message, so their reads are validated under locks at one point in time.

use crate::{ClientRole, Env, HoldStats, Protocol, Replica};
use meridian_core::{
    Actor, ClientId, Ctx, DcId, HomeRule, Key, NodeId, Outcome, Placement, ReadRec, ReplicaSnapshot, ShardId, Time,
    TimerId, TxnId, TxnRecord, Value, VersionId,
};
use meridian_storage::{Acquired, Grant, LockMode, LockTable, MvStore, Policy, Prio};
use meridian_txn::{Arg, Call, Execution, Step};
use rand::Rng as _;
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The `hacommit` / `hacommit-rc` protocol.
#[derive(Clone, Copy, Debug)]
pub struct HaCommit {
    /// Replicas per shard group.
    pub replicas: u32,
    /// Read committed (`hacommit-rc`): reads take no locks and are not validated.
    pub read_committed: bool,
}

impl Default for HaCommit {
    fn default() -> Self {
        HaCommit {
            replicas: 3,
            read_committed: false,
        }
    }
}

/// A Paxos ballot: 0 is the client's; recovery ballots are `round << 20 | node + 1`, with
/// `round` at least the issue time in milliseconds (so a restarted replica can tell
/// ballots issued after its restart from ones that may have been in flight before it).
pub type Ballot = u64;

/// The replicated transaction context of one participant (§IV, §V-E).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TCtx {
    /// Transaction.
    pub txn: TxnId,
    /// Start time (lock priority; acceptor restart rule).
    pub ts: Time,
    /// Every shard the transaction operates on: the Paxos configuration.
    pub shards: Vec<ShardId>,
    /// Keys read at this participant (re-locked by a new leader).
    pub reads: Vec<Key>,
    /// Relevant writes: this participant's share.
    pub writes: Vec<(Key, VersionId, Value)>,
    /// Position of the writes in the group's version order.
    pub seq: u64,
}

/// What one replica knows about an undecided transaction (view changes, state transfer).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingInfo {
    /// Transaction.
    pub txn: TxnId,
    /// Start time.
    pub ts: Time,
    /// Configuration, if known.
    pub shards: Vec<ShardId>,
    /// Replicated context (a yes vote), if held.
    pub ctx: Option<TCtx>,
    /// Highest ballot promised.
    pub promised: Ballot,
    /// Accepted ballot and decision.
    pub accepted: Option<(Ballot, bool)>,
}

/// A decided transaction a replica still remembers with its writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoneInfo {
    /// Transaction.
    pub txn: TxnId,
    /// Committed?
    pub commit: bool,
    /// Its context (for commits).
    pub ctx: Option<TCtx>,
}

/// One shard's answer to phase 2.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct P2bPart {
    /// Shard.
    pub shard: ShardId,
    /// Accepted?
    pub ok: bool,
    /// Highest ballot promised (`u64::MAX`: this replica may not act as an acceptor).
    pub promised: Ballot,
    /// The decision, if known to be chosen.
    pub chosen: Option<bool>,
}

/// The fields of a `P2a` message.
struct P2a {
    txn: TxnId,
    ts: Time,
    targets: Vec<ShardId>,
    ballot: Ballot,
    commit: bool,
    shards: Vec<ShardId>,
}

/// HACommit messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Client → leader: read `key` of `shard` (a shared lock under `hacommit`).
    Read {
        /// Transaction.
        txn: TxnId,
        /// Start time (priority).
        ts: Time,
        /// Shard.
        shard: ShardId,
        /// Key.
        key: Key,
        /// Configuration so far.
        shards: Vec<ShardId>,
    },
    /// Leader → client: the read's result.
    ReadReply {
        /// Transaction.
        txn: TxnId,
        /// Key.
        key: Key,
        /// Version and value, or why the transaction must abort.
        result: Result<(Option<VersionId>, Option<Value>), String>,
    },
    /// Non-leader → client: ask `leader` instead.
    NotLeader {
        /// Transaction.
        txn: TxnId,
        /// Shard.
        shard: ShardId,
        /// Best guess of the leader.
        leader: NodeId,
    },
    /// Client → leader: the last operation.
    Last {
        /// Transaction.
        txn: TxnId,
        /// Start time.
        ts: Time,
        /// Shard.
        shard: ShardId,
        /// Final configuration.
        shards: Vec<ShardId>,
        /// Keys read at this shard.
        reads: Vec<Key>,
        /// Writes to this shard (empty: an empty last operation).
        writes: Vec<(Key, VersionId, Value)>,
    },
    /// Leader → client: the vote (after replicating a yes vote to a majority).
    Vote {
        /// Transaction.
        txn: TxnId,
        /// Shard.
        shard: ShardId,
        /// Yes?
        yes: bool,
        /// Why not.
        reason: Option<String>,
    },
    /// Leader → follower: replicate a yes vote and its context.
    Replicate {
        /// Shard.
        shard: ShardId,
        /// Leader's view.
        view: u64,
        /// The context.
        ctx: TCtx,
    },
    /// Follower → leader: context stored.
    Replicated {
        /// Shard.
        shard: ShardId,
        /// View.
        view: u64,
        /// Transaction.
        txn: TxnId,
    },
    /// Proposer → replica: Paxos phase 1 (ballot 0: a query that promises nothing).
    P1a {
        /// Transaction.
        txn: TxnId,
        /// Start time.
        ts: Time,
        /// Shard of the addressed replica.
        shard: ShardId,
        /// Ballot.
        ballot: Ballot,
        /// Configuration.
        shards: Vec<ShardId>,
    },
    /// Replica → proposer: promise (or refusal), with what it accepted.
    P1b {
        /// Transaction.
        txn: TxnId,
        /// Shard.
        shard: ShardId,
        /// Ballot answered.
        ballot: Ballot,
        /// Promised?
        ok: bool,
        /// Highest ballot promised.
        promised: Ballot,
        /// Accepted ballot and decision.
        accepted: Option<(Ballot, bool)>,
        /// The decision, if known to be chosen.
        chosen: Option<bool>,
        /// The context, if held.
        ctx: Option<TCtx>,
    },
    /// Proposer → replica node: Paxos phase 2 for every participant shard it holds.
    P2a {
        /// Transaction.
        txn: TxnId,
        /// Start time.
        ts: Time,
        /// Shards of the addressed node this phase 2 is for.
        targets: Vec<ShardId>,
        /// Ballot.
        ballot: Ballot,
        /// Decision proposed.
        commit: bool,
        /// Configuration.
        shards: Vec<ShardId>,
    },
    /// Replica node → proposer: accepted (or refused), per shard.
    P2b {
        /// Transaction.
        txn: TxnId,
        /// Ballot answered.
        ballot: Ballot,
        /// One answer per shard.
        parts: Vec<P2bPart>,
    },
    /// Replica → its leader: I accepted (ballot, decision).
    Accepted {
        /// Transaction.
        txn: TxnId,
        /// Shard.
        shard: ShardId,
        /// Ballot.
        ballot: Ballot,
        /// Decision.
        commit: bool,
        /// Configuration.
        shards: Vec<ShardId>,
    },
    /// Leader → follower: these decisions are chosen; apply them (batched per sweep).
    Decided {
        /// Shard.
        shard: ShardId,
        /// The decisions and contexts.
        done: Vec<DoneInfo>,
    },
    /// Follower → leader: decisions applied.
    Applied {
        /// Shard.
        shard: ShardId,
        /// Transactions.
        txns: Vec<TxnId>,
    },
    /// Leader → followers: I lead `view`.
    Heartbeat {
        /// Shard.
        shard: ShardId,
        /// View.
        view: u64,
    },
    /// Candidate → group: join view `view` (whose leader is the sender).
    ViewChange {
        /// Shard.
        shard: ShardId,
        /// Proposed view.
        view: u64,
    },
    /// Replica → candidate: my state, for the merge.
    ViewState {
        /// Shard.
        shard: ShardId,
        /// View joined.
        view: u64,
        /// Undecided transactions.
        pending: Vec<PendingInfo>,
        /// Recently decided transactions.
        done: Vec<DoneInfo>,
        /// Largest version sequence number seen.
        seq: u64,
    },
    /// New leader → group: the merged state of `view`.
    NewView {
        /// Shard.
        shard: ShardId,
        /// View.
        view: u64,
        /// Undecided transactions.
        pending: Vec<PendingInfo>,
        /// Recently decided transactions.
        done: Vec<DoneInfo>,
        /// Largest sequence number.
        seq: u64,
    },
    /// Restarted replica → group: send me your state.
    SyncReq {
        /// Shard.
        shard: ShardId,
    },
    /// Peer → restarted replica: the shard's data and pending state.
    SyncState {
        /// Shard.
        shard: ShardId,
        /// Sender's view.
        view: u64,
        /// Every committed version of the shard's keys, with its sequence number.
        versions: Vec<(Key, VersionId, Value, u64)>,
        /// Undecided transactions.
        pending: Vec<PendingInfo>,
        /// Recently decided transactions.
        done: Vec<DoneInfo>,
        /// Largest sequence number.
        seq: u64,
    },
}

// ---------------------------------------------------------------- server state

const T_SWEEP: TimerId = TimerId(1);

/// Where a transaction is at this replica of one shard.
#[derive(Debug)]
enum Stage {
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

#[derive(Debug)]
struct Txn {
    prio: Prio,
    client: Option<NodeId>,
    shards: Vec<ShardId>,
    stage: Stage,
    ctx: Option<TCtx>,
    promised: Ballot,
    accepted: Option<(Ballot, bool)>,
    /// Leader: acceptances reported by the group, per ballot.
    acc: BTreeMap<Ballot, (bool, BTreeSet<NodeId>)>,
    /// Known chosen but not applicable yet (commit without the context).
    chosen: Option<bool>,
    last_seen: Time,
    pending_reads: Vec<(NodeId, Key, u32)>,
    /// WAN-hop chain when the exclusive locks were taken.
    locked_at: Option<u32>,
    /// When this replica will start recovering the transaction.
    recover_at: Option<Time>,
    /// Follower: when it last reported its acceptance to the leader.
    reported: Time,
}

impl Txn {
    fn new(txn: TxnId, ts: Time, now: Time) -> Self {
        Txn {
            prio: (ts, txn),
            client: None,
            shards: vec![],
            stage: Stage::Voted,
            ctx: None,
            promised: 0,
            accepted: None,
            acc: BTreeMap::new(),
            chosen: None,
            last_seen: now,
            pending_reads: vec![],
            locked_at: None,
            recover_at: None,
            reported: 0,
        }
    }
    fn info(&self, txn: TxnId) -> PendingInfo {
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
    fn needs_recovery(&self) -> bool {
        matches!(self.stage, Stage::Voted | Stage::Replicating { .. })
            && (self.ctx.is_some() || self.accepted.is_some() || self.promised > 0)
    }
}

#[derive(Debug)]
struct Done {
    commit: bool,
    ctx: Option<TCtx>,
    at: Time,
}

#[derive(Debug, PartialEq)]
enum Status {
    /// Serving in `view` (as leader or follower).
    Normal,
    /// Candidate for `view`: states collected so far.
    Candidate { since: Time },
    /// Restarted: waiting for the leader's state.
    Syncing,
}

#[derive(Debug)]
struct Group {
    replicas: Vec<NodeId>,
    view: u64,
    status: Status,
    states: BTreeMap<NodeId, (Vec<PendingInfo>, Vec<DoneInfo>, u64)>,
    last_hb: Time,
    seq: u64,
    /// Leader: decided transactions not yet applied by these followers.
    pushing: BTreeMap<TxnId, (BTreeSet<NodeId>, Time)>,
    /// Restarted: peers whose state has been merged so far.
    synced_from: BTreeSet<NodeId>,
}

impl Group {
    fn leader(&self) -> NodeId {
        self.replicas[(self.view % self.replicas.len() as u64) as usize]
    }
    fn majority(&self) -> usize {
        self.replicas.len() / 2 + 1
    }
}

/// A recovery proposer's round for one transaction (§VI-A).
#[derive(Debug)]
struct Proposal {
    ts: Time,
    ballot: Ballot,
    shards: Vec<ShardId>,
    /// Phase 2 value once chosen to propose.
    value: Option<bool>,
    promises: BTreeMap<ShardId, BTreeSet<NodeId>>,
    best: Option<(Ballot, bool)>,
    accepts: BTreeMap<ShardId, BTreeSet<NodeId>>,
    since: Time,
}

/// A HACommit server: a replica of every shard group it belongs to, leader of some.
#[derive(Debug)]
pub struct Server {
    env: Env,
    me: NodeId,
    rc: bool,
    store: MvStore,
    locks: LockTable,
    groups: BTreeMap<ShardId, Group>,
    txns: HashMap<(ShardId, TxnId), Txn>,
    done: HashMap<(ShardId, TxnId), Done>,
    tombstones: HashMap<(ShardId, TxnId), Time>,
    proposals: HashMap<TxnId, Proposal>,
    max_ballot: Ballot,
    /// Restart time: transactions that started before it get no acceptor answers.
    restarted_at: Option<Time>,
    holds: HoldStats,
}

fn majority_of(n: usize) -> usize {
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
                    },
                )
            })
            .collect();
        Server {
            env,
            me,
            rc,
            store: MvStore::new(),
            locks: LockTable::new(Policy::WoundWait),
            groups,
            txns: HashMap::default(),
            done: HashMap::default(),
            tombstones: HashMap::default(),
            proposals: HashMap::default(),
            max_ballot: 0,
            restarted_at: None,
            holds: HoldStats::default(),
        }
    }

    fn is_leader(&self, shard: ShardId) -> bool {
        self.groups
            .get(&shard)
            .is_some_and(|g| g.status == Status::Normal && g.leader() == self.me)
    }

    /// Whether this replica may vote or hold a replicated vote for a transaction
    /// started at `ts` (a restarted replica may have forgotten a vote it gave).
    fn may_accept(&self, ts: Time) -> bool {
        self.restarted_at.is_none_or(|r| ts >= r)
    }

    /// Whether this replica may act as an acceptor of `ballot` for a transaction started
    /// at `ts`. A restarted replica may have forgotten a promise or an acceptance it made
    /// before the crash; what a majority knew it has merged back while re-syncing, but a
    /// ballot that was in flight then (the client's ballot 0, or a recovery ballot issued
    /// before the restart) may still meet a forgotten promise, so it refuses those for
    /// transactions older than the restart. Ballots issued after the restart (with a
    /// margin of `failover` for clock differences) are safe to answer.
    fn may_accept_ballot(&self, ts: Time, ballot: Ballot) -> bool {
        match self.restarted_at {
            None => true,
            Some(r) if ts >= r => true,
            Some(r) => ballot != 0 && (ballot >> 20) * 1_000_000 > r + self.env.timeouts.failover,
        }
    }

    fn not_leader(&self, to: NodeId, txn: TxnId, shard: ShardId, cx: &mut Ctx<'_, Msg>) {
        let leader = self.groups.get(&shard).map_or(to, |g| g.leader());
        cx.send(to, Msg::NotLeader { txn, shard, leader });
    }

    // ------------------------------------------------------------ execution

    fn on_read(&mut self, from: NodeId, m: (TxnId, Time, ShardId, Key, Vec<ShardId>), cx: &mut Ctx<'_, Msg>) {
        let (txn, ts, shard, key, shards) = m;
        cx.charge_ops(1);
        if !self.is_leader(shard) {
            return self.not_leader(from, txn, shard, cx);
        }
        if self.tombstones.contains_key(&(shard, txn)) || self.done.contains_key(&(shard, txn)) {
            let result = Err("already aborted here (wounded or timed out)".into());
            return cx.send(from, Msg::ReadReply { txn, key, result });
        }
        let now = cx.now();
        let known = self.txns.contains_key(&(shard, txn));
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
        if !known {
            t.stage = Stage::Active;
        }
        if !matches!(t.stage, Stage::Active) {
            // A duplicate after the last operation, or recovery has taken over.
            let result = Err("transaction no longer executing here".into());
            return cx.send(from, Msg::ReadReply { txn, key, result });
        }
        t.client = Some(from);
        t.shards = shards;
        t.last_seen = now;
        if self.rc {
            return self.reply_read(from, txn, key, cx.hops(), cx);
        }
        let prio = t.prio;
        match self.locks.acquire(txn, prio, &key, LockMode::Shared) {
            Acquired::Granted => self.reply_read(from, txn, key, cx.hops(), cx),
            Acquired::Waiting { wound } => {
                let hops = cx.hops();
                if let Some(t) = self.txns.get_mut(&(shard, txn)) {
                    // A duplicated read already waiting is answered by the same grant.
                    if !t.pending_reads.iter().any(|(_, k, _)| *k == key) {
                        t.pending_reads.push((from, key, hops));
                    }
                }
                self.wound(wound, cx);
            }
            Acquired::Denied | Acquired::TookOver { .. } => unreachable!("wound-wait never denies"),
        }
    }

    fn reply_read(&mut self, to: NodeId, txn: TxnId, key: Key, hops: u32, cx: &mut Ctx<'_, Msg>) {
        let (v, val) = self.store.latest(&key);
        let result = Ok((v, val.cloned()));
        cx.send_on_chain(to, Msg::ReadReply { txn, key, result }, hops);
    }

    /// Aborts wounded transactions that have not voted (their shards are those this
    /// node leads; a lock is per key, so the shard is the key's).
    fn wound(&mut self, victims: Vec<TxnId>, cx: &mut Ctx<'_, Msg>) {
        for v in victims {
            let keys: Vec<(ShardId, TxnId)> = self
                .txns
                .iter()
                .filter(|((_, t), x)| *t == v && matches!(x.stage, Stage::Active | Stage::Locking { .. }))
                .map(|(k, _)| *k)
                .collect();
            for k in keys {
                self.abort_unvoted(k, "wounded by an older transaction", cx);
            }
        }
    }

    /// A leader aborts a transaction it has not voted yes for: releases its locks,
    /// answers its waiting reads, votes no if the last operation was waiting.
    fn abort_unvoted(&mut self, key: (ShardId, TxnId), why: &str, cx: &mut Ctx<'_, Msg>) {
        let (shard, txn) = key;
        let Some(t) = self.txns.get(&key) else { return };
        if !matches!(t.stage, Stage::Active | Stage::Locking { .. }) {
            return;
        }
        let t = self.txns.remove(&key).expect("present");
        self.tombstones.insert(key, cx.now());
        for (client, k, hops) in t.pending_reads {
            let result = Err(why.to_string());
            cx.send_on_chain(client, Msg::ReadReply { txn, key: k, result }, hops);
        }
        if let (Stage::Locking { hops, .. }, Some(client)) = (t.stage, t.client) {
            let reason = Some(why.to_string());
            cx.send_on_chain(
                client,
                Msg::Vote {
                    txn,
                    shard,
                    yes: false,
                    reason,
                },
                hops,
            );
        }
        self.release(shard, txn, cx);
    }

    /// Releases every lock (and queued request) of `txn` on keys of `shard`, and serves
    /// whoever was waiting. (A node may hold other shards of the same transaction.)
    fn release(&mut self, shard: ShardId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let layout = self.env.layout.clone();
        let mut keys = self.locks.keys_of(txn);
        keys.retain(|k| layout.shard_of(k) == shard);
        keys.sort();
        for k in keys {
            let g = self.locks.release(txn, &k);
            self.on_grants(g, cx);
        }
    }

    fn on_grants(&mut self, grants: Vec<Grant>, cx: &mut Ctx<'_, Msg>) {
        for g in grants {
            let shard = self.env.layout.shard_of(&g.key);
            let Some(t) = self.txns.get_mut(&(shard, g.txn)) else {
                continue;
            };
            if let Some(i) = t.pending_reads.iter().position(|(_, k, _)| *k == g.key) {
                let (client, key, hops) = t.pending_reads.remove(i);
                self.reply_read(client, g.txn, key, hops, cx);
            } else if let Stage::Locking { waiting, .. } = &mut t.stage {
                *waiting -= 1;
                if *waiting == 0 {
                    self.locked((shard, g.txn), cx);
                }
            }
        }
    }

    fn on_last(&mut self, from: NodeId, m: LastOp, cx: &mut Ctx<'_, Msg>) {
        let LastOp {
            txn,
            ts,
            shard,
            shards,
            reads,
            writes,
        } = m;
        cx.charge_ops((reads.len() + writes.len()) as u32);
        if !self.is_leader(shard) {
            return self.not_leader(from, txn, shard, cx);
        }
        let no = |reason: &str, cx: &mut Ctx<'_, Msg>| {
            let reason = Some(reason.to_string());
            cx.send(
                from,
                Msg::Vote {
                    txn,
                    shard,
                    yes: false,
                    reason,
                },
            );
        };
        if self.tombstones.contains_key(&(shard, txn)) {
            return no("already aborted here (wounded or timed out)", cx);
        }
        if let Some(d) = self.done.get(&(shard, txn)) {
            if !d.commit {
                return no("already aborted", cx);
            }
            return;
        }
        if !self.may_accept(ts) {
            return no("participant restarted since the transaction began", cx);
        }
        let now = cx.now();
        let known = self.txns.contains_key(&(shard, txn));
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
        if !known {
            t.stage = Stage::Active;
        }
        t.last_seen = now;
        match &t.stage {
            Stage::Active => {}
            Stage::Replicating { .. } | Stage::Locking { .. } => return, // duplicate
            Stage::Voted if t.ctx.is_some() => {
                // Duplicate of a vote already replicated: answer again.
                return cx.send(
                    from,
                    Msg::Vote {
                        txn,
                        shard,
                        yes: true,
                        reason: None,
                    },
                );
            }
            _ => return no("no vote possible (state taken over by recovery)", cx),
        }
        t.client = Some(from);
        t.shards = shards;
        // Every read must still be protected by our shared lock (lost on wound or a
        // leader change).
        if !self.rc && reads.iter().any(|k| !self.locks.holds(txn, k, LockMode::Shared)) {
            let why = "a read lock was lost (wounded, or the leader changed)";
            self.abort_unvoted((shard, txn), why, cx);
            return no(why, cx);
        }
        let prio = (ts, txn);
        let mut waiting = 0;
        let mut wounded = vec![];
        for (k, _, _) in &writes {
            match self.locks.acquire(txn, prio, k, LockMode::Exclusive) {
                Acquired::Granted => {}
                Acquired::Waiting { wound } => {
                    waiting += 1;
                    wounded.extend(wound);
                }
                Acquired::Denied | Acquired::TookOver { .. } => unreachable!("wound-wait never denies"),
            }
        }
        let hops = cx.hops();
        if let Some(t) = self.txns.get_mut(&(shard, txn)) {
            t.stage = Stage::Locking {
                waiting,
                hops,
                reads,
                writes,
            };
        }
        if waiting == 0 {
            self.locked((shard, txn), cx);
        } else {
            self.wound(wounded, cx);
        }
    }

    /// Every lock of the last operation is held: vote yes and replicate the vote.
    fn locked(&mut self, key: (ShardId, TxnId), cx: &mut Ctx<'_, Msg>) {
        let (shard, txn) = key;
        let Some(g) = self.groups.get_mut(&shard) else { return };
        let Some(t) = self.txns.get_mut(&key) else { return };
        let Stage::Locking {
            hops, reads, writes, ..
        } = std::mem::replace(&mut t.stage, Stage::Voted)
        else {
            return;
        };
        g.seq += 1;
        let ctx = TCtx {
            txn,
            ts: t.prio.0,
            shards: t.shards.clone(),
            reads,
            writes,
            seq: g.seq,
        };
        t.locked_at = Some(hops);
        t.ctx = Some(ctx.clone());
        t.stage = Stage::Replicating {
            hops,
            acks: BTreeSet::from([self.me]),
        };
        let view = g.view;
        let followers: Vec<NodeId> = g.replicas.iter().copied().filter(|n| *n != self.me).collect();
        for f in followers {
            cx.send_on_chain(
                f,
                Msg::Replicate {
                    shard,
                    view,
                    ctx: ctx.clone(),
                },
                hops,
            );
        }
        self.check_replicated(key, None, cx);
    }

    /// Answers the client once a majority holds the vote. `chain`: the WAN-hop count of
    /// the input that completed the majority (the replication round trip is on the
    /// transaction's critical path); without followers, the last operation's own chain.
    fn check_replicated(&mut self, key: (ShardId, TxnId), chain: Option<u32>, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get(&key.0) else { return };
        let need = g.majority();
        let Some(t) = self.txns.get_mut(&key) else { return };
        let Stage::Replicating { hops, acks } = &t.stage else {
            return;
        };
        if acks.len() < need {
            return;
        }
        let hops = chain.unwrap_or(*hops);
        t.stage = Stage::Voted;
        if let Some(client) = t.client {
            cx.send_on_chain(
                client,
                Msg::Vote {
                    txn: key.1,
                    shard: key.0,
                    yes: true,
                    reason: None,
                },
                hops,
            );
        }
    }

    fn on_replicate(&mut self, from: NodeId, shard: ShardId, view: u64, ctx: TCtx, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops(ctx.writes.len() as u32);
        if self.restarted_at.is_some_and(|r| ctx.ts < r) || !self.adopt_view(shard, view, from, cx) {
            return;
        }
        let g = self.groups.get_mut(&shard).expect("group");
        g.seq = g.seq.max(ctx.seq);
        let txn = ctx.txn;
        if self.done.contains_key(&(shard, txn)) {
            return cx.send(from, Msg::Replicated { shard, view, txn });
        }
        let now = cx.now();
        let t = self
            .txns
            .entry((shard, txn))
            .or_insert_with(|| Txn::new(txn, ctx.ts, now));
        t.shards = ctx.shards.clone();
        t.last_seen = now;
        t.ctx = Some(ctx);
        cx.send(from, Msg::Replicated { shard, view, txn });
        self.try_apply_chosen((shard, txn), cx);
    }

    fn on_replicated(&mut self, from: NodeId, shard: ShardId, view: u64, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if self.groups.get(&shard).is_none_or(|g| g.view != view) {
            return;
        }
        if let Some(t) = self.txns.get_mut(&(shard, txn)) {
            if let Stage::Replicating { acks, .. } = &mut t.stage {
                acks.insert(from);
            }
        }
        self.check_replicated((shard, txn), Some(cx.hops()), cx);
    }

    // ------------------------------------------------------------ Paxos acceptor

    fn on_p1a(&mut self, from: NodeId, m: (TxnId, Time, ShardId, Ballot, Vec<ShardId>), cx: &mut Ctx<'_, Msg>) {
        let (txn, ts, shard, ballot, shards) = m;
        if !self.groups.contains_key(&shard) {
            return;
        }
        self.max_ballot = self.max_ballot.max(ballot);
        if let Some(d) = self.done.get(&(shard, txn)) {
            let reply = Msg::P1b {
                txn,
                shard,
                ballot,
                ok: false,
                promised: 0,
                accepted: None,
                chosen: Some(d.commit),
                ctx: d.ctx.clone(),
            };
            return cx.send(from, reply);
        }
        let acceptor = self.may_accept_ballot(ts, ballot) && self.groups[&shard].status != Status::Syncing;
        let now = cx.now();
        if ballot == 0 || !acceptor {
            let t = self.txns.get(&(shard, txn));
            let reply = Msg::P1b {
                txn,
                shard,
                ballot,
                ok: false,
                promised: t.map_or(0, |t| t.promised),
                accepted: if acceptor { t.and_then(|t| t.accepted) } else { None },
                chosen: t.and_then(|t| t.chosen),
                ctx: t.and_then(|t| t.ctx.clone()),
            };
            return cx.send(from, reply);
        }
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
        if t.shards.is_empty() {
            t.shards = shards;
        }
        t.last_seen = now;
        let ok = ballot >= t.promised;
        if ok {
            t.promised = ballot;
            if matches!(t.stage, Stage::Active | Stage::Locking { .. }) {
                // A leader that has not voted yet never will now: the transaction is
                // being recovered, and recovery proposes ABORT unless some acceptor took
                // a COMMIT, which would have needed this leader's yes vote.
                let shards = t.shards.clone();
                self.abort_unvoted((shard, txn), "recovery started", cx);
                let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
                t.promised = ballot;
                t.shards = shards;
            }
        }
        let t = &self.txns[&(shard, txn)];
        let reply = Msg::P1b {
            txn,
            shard,
            ballot,
            ok,
            promised: t.promised,
            accepted: t.accepted,
            chosen: t.chosen,
            ctx: t.ctx.clone(),
        };
        cx.send(from, reply);
    }

    fn on_p2a(&mut self, from: NodeId, m: P2a, cx: &mut Ctx<'_, Msg>) {
        let parts: Vec<P2bPart> = m
            .targets
            .iter()
            .filter_map(|s| self.p2a_one(m.txn, m.ts, *s, m.ballot, m.commit, &m.shards, cx))
            .collect();
        if !parts.is_empty() {
            let reply = Msg::P2b {
                txn: m.txn,
                ballot: m.ballot,
                parts,
            };
            cx.send(from, reply);
        }
    }

    /// Phase 2 at this replica of `shard`: the answer to the proposer, if this node
    /// holds the shard.
    #[allow(clippy::too_many_arguments)]
    fn p2a_one(
        &mut self,
        txn: TxnId,
        ts: Time,
        shard: ShardId,
        ballot: Ballot,
        commit: bool,
        shards: &[ShardId],
        cx: &mut Ctx<'_, Msg>,
    ) -> Option<P2bPart> {
        let g = self.groups.get(&shard)?;
        self.max_ballot = self.max_ballot.max(ballot);
        if let Some(d) = self.done.get(&(shard, txn)) {
            return Some(P2bPart {
                shard,
                ok: false,
                promised: 0,
                chosen: Some(d.commit),
            });
        }
        if !self.may_accept_ballot(ts, ballot) || g.status == Status::Syncing {
            if ballot == 0 && g.status != Status::Syncing && !self.proposals.contains_key(&txn) {
                // The client's ballot 0 reached a replica that restarted after the
                // transaction began and may have forgotten it. The client may never
                // gather a majority here (its re-sends skip replicas that already
                // acknowledged, such as a leader that has since learnt the outcome),
                // and while it keeps re-sending no one thinks it silent. Recover the
                // transaction now with a ballot this replica may answer: phase 1
                // meets whoever knows the outcome or accepted the client's value, and
                // the client's next re-send here is answered with the decision.
                let now = cx.now();
                let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
                if t.shards.is_empty() {
                    t.shards = shards.to_vec();
                }
                self.start_recovery(txn, cx);
            }
            return Some(P2bPart {
                shard,
                ok: false,
                promised: Ballot::MAX,
                chosen: None,
            });
        }
        let leader = g.leader();
        let i_lead = self.is_leader(shard);
        let now = cx.now();
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
        if t.shards.is_empty() {
            t.shards = shards.to_vec();
        }
        t.last_seen = now;
        let ok = ballot >= t.promised;
        if ok {
            t.promised = ballot;
            t.accepted = Some((ballot, commit));
        }
        let part = P2bPart {
            shard,
            ok,
            promised: t.promised,
            chosen: None,
        };
        if !ok {
            return Some(part);
        }
        if ballot == 0 && !commit {
            // The client's ABORT: COMMIT can never be chosen (only the client proposes
            // it, at ballot 0), so it is final now.
            self.learn(shard, txn, false, cx);
            return Some(part);
        }
        if i_lead {
            self.count_accept(shard, txn, self.me, ballot, commit, cx);
        } else {
            if let Some(t) = self.txns.get_mut(&(shard, txn)) {
                t.reported = now;
            }
            cx.send(
                leader,
                Msg::Accepted {
                    txn,
                    shard,
                    ballot,
                    commit,
                    shards: shards.to_vec(),
                },
            );
        }
        Some(part)
    }

    /// Leader: a group member accepted (ballot, decision); a majority makes it chosen.
    fn count_accept(
        &mut self,
        shard: ShardId,
        txn: TxnId,
        from: NodeId,
        ballot: Ballot,
        commit: bool,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(g) = self.groups.get(&shard) else { return };
        let need = g.majority();
        let Some(t) = self.txns.get_mut(&(shard, txn)) else {
            return;
        };
        let mine = t.accepted == Some((ballot, commit));
        let e = t.acc.entry(ballot).or_insert_with(|| (commit, BTreeSet::new()));
        e.1.insert(from);
        if mine {
            // Our own acceptance counts too, even one made before we led the group.
            e.1.insert(self.me);
        }
        if e.1.len() >= need {
            let v = e.0;
            self.learn(shard, txn, v, cx);
        }
    }

    fn on_accepted(&mut self, from: NodeId, m: (TxnId, ShardId, Ballot, bool, Vec<ShardId>), cx: &mut Ctx<'_, Msg>) {
        let (txn, shard, ballot, commit, shards) = m;
        if !self.is_leader(shard) {
            return;
        }
        if let Some(d) = self.done.get(&(shard, txn)) {
            // Decided already: the follower missed it.
            let done = DoneInfo {
                txn,
                commit: d.commit,
                ctx: d.ctx.clone(),
            };
            return cx.send(
                from,
                Msg::Decided {
                    shard,
                    done: vec![done],
                },
            );
        }
        let now = cx.now();
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, 0, now));
        if t.shards.is_empty() {
            t.shards = shards;
        }
        self.count_accept(shard, txn, from, ballot, commit, cx);
    }

    // ------------------------------------------------------------ learning

    /// The decision of `txn` is chosen: apply it here (once the context is known).
    fn learn(&mut self, shard: ShardId, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        if self.done.contains_key(&(shard, txn)) {
            return;
        }
        let now = cx.now();
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, 0, now));
        t.chosen = Some(commit);
        self.try_apply_chosen((shard, txn), cx);
    }

    fn try_apply_chosen(&mut self, key: (ShardId, TxnId), cx: &mut Ctx<'_, Msg>) {
        let (shard, txn) = key;
        let Some(t) = self.txns.get(&key) else { return };
        let Some(commit) = t.chosen else { return };
        if commit && t.ctx.is_none() {
            // Chosen COMMIT, but this replica never got the writes: ask the group.
            let ts = t.prio.0;
            let shards = t.shards.clone();
            let peers: Vec<NodeId> = self.groups[&shard].replicas.clone();
            for p in peers.into_iter().filter(|p| *p != self.me) {
                let m = Msg::P1a {
                    txn,
                    ts,
                    shard,
                    ballot: 0,
                    shards: shards.clone(),
                };
                cx.send(p, m);
            }
            return;
        }
        let t = self.txns.remove(&key).expect("present");
        let ctx = if commit { t.ctx } else { None };
        if let Some(c) = &ctx {
            cx.charge_ops(c.writes.len() as u32);
            for (k, v, val) in &c.writes {
                self.store.install(k, *v, val.clone(), c.seq);
            }
        }
        for (client, k, hops) in t.pending_reads {
            let result = Err("aborted".to_string());
            cx.send_on_chain(client, Msg::ReadReply { txn, key: k, result }, hops);
        }
        if let Some(h) = t.locked_at {
            self.holds.add(h, cx.hops());
        }
        self.release(shard, txn, cx);
        self.done.insert(
            key,
            Done {
                commit,
                ctx,
                at: cx.now(),
            },
        );
        if self.is_leader(shard) {
            // Followers hear of it with the next sweep's batch.
            let g = self.groups.get_mut(&shard).expect("group");
            let followers: BTreeSet<NodeId> = g.replicas.iter().copied().filter(|n| *n != self.me).collect();
            g.pushing.insert(txn, (followers, 0));
        }
    }

    /// Leader: sends every decision followers have not confirmed, never sent or last
    /// sent at least `query` ago, as one batch per follower.
    fn push_decided(&mut self, shard: ShardId, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let again = self.env.timeouts.query;
        let Some(g) = self.groups.get_mut(&shard) else { return };
        let mut batches: BTreeMap<NodeId, Vec<DoneInfo>> = BTreeMap::new();
        for (txn, (left, at)) in g.pushing.iter_mut() {
            if *at != 0 && now.saturating_sub(*at) < again {
                continue;
            }
            *at = now.max(1);
            let Some(d) = self.done.get(&(shard, *txn)) else {
                continue;
            };
            for f in left.iter() {
                batches.entry(*f).or_default().push(DoneInfo {
                    txn: *txn,
                    commit: d.commit,
                    ctx: d.ctx.clone(),
                });
            }
        }
        for (f, done) in batches {
            cx.send(f, Msg::Decided { shard, done });
        }
    }

    fn on_decided(&mut self, from: NodeId, shard: ShardId, done: Vec<DoneInfo>, cx: &mut Ctx<'_, Msg>) {
        if self.groups.get(&shard).is_none_or(|g| g.status == Status::Syncing) {
            return; // (syncing: the state transfer will carry them; acking now would lose them)
        }
        let mut txns = vec![];
        for d in done {
            let id = d.txn;
            self.absorb_done(shard, d, cx);
            if self.done.contains_key(&(shard, id)) {
                txns.push(id);
            }
        }
        if !txns.is_empty() {
            cx.send(from, Msg::Applied { shard, txns });
        }
    }

    /// Applies a decision learnt from another replica (with its context, if a commit).
    fn absorb_done(&mut self, shard: ShardId, d: DoneInfo, cx: &mut Ctx<'_, Msg>) {
        if self.done.contains_key(&(shard, d.txn)) {
            return;
        }
        let now = cx.now();
        let ts = d.ctx.as_ref().map_or(0, |c| c.ts);
        let t = self
            .txns
            .entry((shard, d.txn))
            .or_insert_with(|| Txn::new(d.txn, ts, now));
        if t.ctx.is_none() {
            t.ctx = d.ctx;
        }
        t.chosen = Some(d.commit);
        self.try_apply_chosen((shard, d.txn), cx);
    }

    fn on_applied(&mut self, from: NodeId, shard: ShardId, txns: Vec<TxnId>) {
        if let Some(g) = self.groups.get_mut(&shard) {
            for txn in txns {
                if let Some((left, _)) = g.pushing.get_mut(&txn) {
                    left.remove(&from);
                    if left.is_empty() {
                        g.pushing.remove(&txn);
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------ recovery proposer

    fn start_recovery(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some((ts, shards)) = self
            .txns
            .iter()
            .filter(|((_, t), x)| *t == txn && !x.shards.is_empty())
            .map(|(_, x)| (x.prio.0, x.shards.clone()))
            .next()
        else {
            return;
        };
        let round = ((self.max_ballot >> 20) + 1).max(cx.now() / 1_000_000 + 1);
        let ballot = (round << 20) | (self.me.0 as u64 + 1);
        self.max_ballot = ballot;
        self.proposals.insert(
            txn,
            Proposal {
                ts,
                ballot,
                shards: shards.clone(),
                value: None,
                promises: BTreeMap::new(),
                best: None,
                accepts: BTreeMap::new(),
                since: cx.now(),
            },
        );
        for s in &shards {
            for r in self.env.layout.replicas(*s).to_vec() {
                let m = Msg::P1a {
                    txn,
                    ts,
                    shard: *s,
                    ballot,
                    shards: shards.clone(),
                };
                cx.send(r, m);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_p1b(
        &mut self,
        from: NodeId,
        txn: TxnId,
        shard: ShardId,
        ballot: Ballot,
        ok: bool,
        promised: Ballot,
        accepted: Option<(Ballot, bool)>,
        chosen: Option<bool>,
        ctx: Option<TCtx>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        self.max_ballot = self.max_ballot.max(promised);
        // Learn a missing context or a chosen decision, whoever asked.
        if let Some(c) = ctx {
            if let Some(t) = self.txns.get_mut(&(shard, txn)) {
                if t.ctx.is_none() && self.groups.contains_key(&shard) {
                    t.ctx = Some(c);
                }
            }
            self.try_apply_chosen((shard, txn), cx);
        }
        if let Some(v) = chosen {
            self.learn_everywhere(txn, v, cx);
        }
        let Some(p) = self.proposals.get_mut(&txn) else {
            return;
        };
        if p.ballot != ballot || p.value.is_some() {
            if let (Some(v), true) = (chosen, p.value.is_none()) {
                p.value = Some(v);
                self.send_p2a(txn, cx);
            }
            return;
        }
        if let Some(v) = chosen {
            // Already decided somewhere: finish propagating that decision.
            p.value = Some(v);
            return self.send_p2a(txn, cx);
        }
        if !ok {
            if promised > ballot {
                // Someone promised a higher ballot: give up this round; the idle rule
                // retries with a higher one.
                self.proposals.remove(&txn);
            }
            // Otherwise a replica that may not act as an acceptor (restarted): no vote.
            return;
        }
        p.promises.entry(shard).or_default().insert(from);
        if let Some(a) = accepted {
            if p.best.is_none_or(|b| a.0 > b.0) {
                p.best = Some(a);
            }
        }
        let layout = &self.env.layout;
        let all = p
            .shards
            .iter()
            .all(|s| p.promises.get(s).map_or(0, |x| x.len()) >= majority_of(layout.replicas(*s).len()));
        if all {
            p.value = Some(p.best.is_some_and(|b| b.1));
            self.send_p2a(txn, cx);
        }
    }

    /// Re-sends a proposal's current phase to replicas that have not answered it.
    fn resend_proposal(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(p) = self.proposals.get(&txn) else { return };
        if p.value.is_some() {
            let accepts = &p.accepts;
            let msgs = self.p2a_msgs(txn, |s, r| accepts.get(&s).is_some_and(|a| a.contains(&r)));
            for (n, m) in msgs {
                cx.send(n, m);
            }
            return;
        }
        for s in &p.shards {
            for r in self.env.layout.replicas(*s) {
                if p.promises.get(s).is_some_and(|a| a.contains(r)) {
                    continue;
                }
                let m = Msg::P1a {
                    txn,
                    ts: p.ts,
                    shard: *s,
                    ballot: p.ballot,
                    shards: p.shards.clone(),
                };
                cx.send(*r, m);
            }
        }
    }

    fn p2a_msgs(&self, txn: TxnId, skip: impl Fn(ShardId, NodeId) -> bool) -> Vec<(NodeId, Msg)> {
        let Some(p) = self.proposals.get(&txn) else {
            return vec![];
        };
        let Some(commit) = p.value else { return vec![] };
        p2a_by_node(&self.env.layout, txn, p.ts, p.ballot, commit, &p.shards, skip)
    }

    fn send_p2a(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        for (n, m) in self.p2a_msgs(txn, |_, _| false) {
            cx.send(n, m);
        }
    }

    fn on_p2b(&mut self, from: NodeId, txn: TxnId, ballot: Ballot, parts: Vec<P2bPart>, cx: &mut Ctx<'_, Msg>) {
        for part in parts {
            self.p2b_one(from, txn, ballot, part, cx);
        }
    }

    fn p2b_one(&mut self, from: NodeId, txn: TxnId, ballot: Ballot, part: P2bPart, cx: &mut Ctx<'_, Msg>) {
        let P2bPart {
            shard,
            ok,
            promised,
            chosen,
        } = part;
        if promised != Ballot::MAX {
            self.max_ballot = self.max_ballot.max(promised);
        }
        let Some(p) = self.proposals.get_mut(&txn) else {
            return;
        };
        if p.ballot != ballot {
            return;
        }
        if chosen.is_some() || ok {
            p.accepts.entry(shard).or_default().insert(from);
        } else if promised != Ballot::MAX && promised > ballot {
            self.proposals.remove(&txn);
            return;
        }
        let layout = &self.env.layout;
        let all = p
            .shards
            .iter()
            .all(|s| p.accepts.get(s).map_or(0, |x| x.len()) >= majority_of(layout.replicas(*s).len()));
        if all {
            // Chosen: every group's leader learns it from its members' acceptances; this
            // replica learns it now.
            let v = p.value.unwrap_or(false);
            self.proposals.remove(&txn);
            self.learn_everywhere(txn, v, cx);
        }
    }

    /// A chosen decision learnt as a proposer or from a peer: apply it for every shard
    /// of the transaction this node holds.
    fn learn_everywhere(&mut self, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        let mut mine: Vec<ShardId> = self.txns.keys().filter(|(_, t)| *t == txn).map(|(s, _)| *s).collect();
        mine.sort();
        for s in mine {
            self.learn(s, txn, commit, cx);
        }
    }

    // ------------------------------------------------------------ replica groups

    fn my_state(&self, shard: ShardId, now: Time) -> (Vec<PendingInfo>, Vec<DoneInfo>, u64) {
        let mut pending: Vec<PendingInfo> = self
            .txns
            .iter()
            .filter(|((s, _), t)| *s == shard && (t.ctx.is_some() || t.accepted.is_some() || t.promised > 0))
            .map(|((_, id), t)| t.info(*id))
            .collect();
        pending.sort_by_key(|p| p.txn);
        let keep = self.env.timeouts.tombstone;
        let mut done: Vec<DoneInfo> = self
            .done
            .iter()
            .filter(|((s, _), d)| *s == shard && now.saturating_sub(d.at) < keep)
            .map(|((_, id), d)| DoneInfo {
                txn: *id,
                commit: d.commit,
                ctx: d.ctx.clone(),
            })
            .collect();
        done.sort_by_key(|d| d.txn);
        (pending, done, self.groups[&shard].seq)
    }

    fn heartbeat_and_failover(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let to = self.env.timeouts.clone();
        let shards: Vec<ShardId> = self.groups.keys().copied().collect();
        for shard in shards {
            let me = self.me;
            let g = self.groups.get_mut(&shard).expect("group");
            match g.status {
                Status::Syncing => {
                    for p in g.replicas.clone() {
                        if p != me {
                            cx.send(p, Msg::SyncReq { shard });
                        }
                    }
                }
                Status::Normal if g.leader() == me => {
                    let view = g.view;
                    for p in g.replicas.clone() {
                        if p != me {
                            cx.send(p, Msg::Heartbeat { shard, view });
                        }
                    }
                    // Decisions followers have not confirmed, in one batch each.
                    self.push_decided(shard, cx);
                }
                Status::Normal | Status::Candidate { .. } => {
                    let since = match g.status {
                        Status::Candidate { since } => since,
                        _ => g.last_hb,
                    };
                    let n = g.replicas.len() as u64;
                    let my_idx = g.replicas.iter().position(|r| *r == me).unwrap_or(0) as u64;
                    // The next view I would lead, and how far down the line I am.
                    let mut target = g.view + 1;
                    while target % n != my_idx {
                        target += 1;
                    }
                    let rank = target - g.view - 1;
                    let wait = to.failover + rank * to.failover / 2;
                    if now.saturating_sub(since) < wait {
                        continue;
                    }
                    self.stand(shard, target, cx);
                }
            }
        }
    }

    /// Becomes the candidate for `view` (one this replica leads): asks the group for
    /// its state and leads only once a majority's state is merged.
    fn stand(&mut self, shard: ShardId, view: u64, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let me = self.me;
        let g = self.groups.get_mut(&shard).expect("group");
        g.view = view;
        g.status = Status::Candidate { since: now };
        g.states.clear();
        let st = self.my_state(shard, now);
        let g = self.groups.get_mut(&shard).expect("group");
        g.states.insert(me, st);
        for p in g.replicas.clone() {
            if p != me {
                cx.send(p, Msg::ViewChange { shard, view });
            }
        }
        self.step_down(shard, cx);
    }

    /// This replica no longer leads `shard`: unvoted transactions abort, locks go (a
    /// follower holds none).
    fn step_down(&mut self, shard: ShardId, cx: &mut Ctx<'_, Msg>) {
        let mut keys: Vec<(ShardId, TxnId)> = self
            .txns
            .iter()
            .filter(|((s, _), t)| *s == shard && matches!(t.stage, Stage::Active | Stage::Locking { .. }))
            .map(|(k, _)| *k)
            .collect();
        keys.sort();
        for k in keys {
            self.abort_unvoted(k, "participant lost leadership", cx);
        }
        let mut voted: Vec<TxnId> = self
            .txns
            .iter_mut()
            .filter(|((s, _), _)| *s == shard)
            .map(|((_, id), t)| {
                if matches!(t.stage, Stage::Replicating { .. }) {
                    t.stage = Stage::Voted;
                }
                t.locked_at = None;
                *id
            })
            .collect();
        voted.sort();
        for id in voted {
            self.release(shard, id, cx);
        }
        if let Some(g) = self.groups.get_mut(&shard) {
            g.pushing.clear();
        }
    }

    fn on_heartbeat(&mut self, from: NodeId, shard: ShardId, view: u64, cx: &mut Ctx<'_, Msg>) {
        self.adopt_view(shard, view, from, cx);
    }

    /// A message from `from` speaking as the leader of `view` of `shard`'s group
    /// (heartbeat, vote replication, new view). Only the view's own leader speaks for
    /// it, and only after merging a majority's state, so: a message for an older view,
    /// or from anyone but that view's leader, is refused (`false`); a later view is
    /// adopted (a candidate gives up, a leader steps down: its unvoted transactions
    /// abort and its locks go). A candidate becomes leader only through its own merge
    /// ([`Server::on_view_state`]), never because a message names its view.
    fn adopt_view(&mut self, shard: ShardId, view: u64, from: NodeId, cx: &mut Ctx<'_, Msg>) -> bool {
        let me = self.me;
        let Some(g) = self.groups.get_mut(&shard) else {
            return false;
        };
        let leader_of = g.replicas[(view % g.replicas.len() as u64) as usize];
        if g.status == Status::Syncing || view < g.view || from != leader_of || from == me {
            return false;
        }
        let was_leader = g.status == Status::Normal && g.leader() == me;
        if view > g.view || matches!(g.status, Status::Candidate { .. }) {
            g.view = view;
            g.status = Status::Normal;
        }
        g.last_hb = cx.now();
        if was_leader && g.leader() != me {
            self.step_down(shard, cx);
        }
        true
    }

    fn on_view_change(&mut self, from: NodeId, shard: ShardId, view: u64, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get_mut(&shard) else { return };
        let candidate_of = g.replicas[(view % g.replicas.len() as u64) as usize];
        if g.status == Status::Syncing || view <= g.view || from != candidate_of {
            return;
        }
        let was_leader = g.status == Status::Normal && g.leader() == self.me;
        g.view = view;
        g.status = Status::Normal;
        g.last_hb = cx.now();
        if was_leader {
            self.step_down(shard, cx);
        }
        let (pending, done, seq) = self.my_state(shard, cx.now());
        cx.send(
            from,
            Msg::ViewState {
                shard,
                view,
                pending,
                done,
                seq,
            },
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn on_view_state(
        &mut self,
        from: NodeId,
        shard: ShardId,
        view: u64,
        pending: Vec<PendingInfo>,
        done: Vec<DoneInfo>,
        seq: u64,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(g) = self.groups.get_mut(&shard) else { return };
        if g.view != view || !matches!(g.status, Status::Candidate { .. }) {
            return;
        }
        g.states.insert(from, (pending, done, seq));
        if g.states.len() < g.majority() {
            return;
        }
        let states = std::mem::take(&mut g.states);
        g.status = Status::Normal;
        g.last_hb = cx.now();
        // Merge: contexts from anyone, highest promise and acceptance, every decision.
        let mut merged: BTreeMap<TxnId, PendingInfo> = BTreeMap::new();
        let mut dones: BTreeMap<TxnId, DoneInfo> = BTreeMap::new();
        let mut max_seq = 0;
        for (_, (p, d, s)) in states {
            max_seq = max_seq.max(s);
            for x in p {
                merge_pending(&mut merged, x);
            }
            for x in d {
                dones.entry(x.txn).or_insert(x);
            }
        }
        let pending: Vec<PendingInfo> = merged.into_values().filter(|p| !dones.contains_key(&p.txn)).collect();
        let done: Vec<DoneInfo> = dones.into_values().collect();
        for p in self.groups[&shard].replicas.clone() {
            if p != self.me {
                let m = Msg::NewView {
                    shard,
                    view,
                    pending: pending.clone(),
                    done: done.clone(),
                    seq: max_seq,
                };
                cx.send(p, m);
            }
        }
        self.install_state(shard, pending, done, max_seq, cx);
        // Lead: re-take the locks of every voted transaction, resolve accepted ones soon,
        // and make sure every follower has every recent decision.
        let mut voted: Vec<(TxnId, TCtx)> = self
            .txns
            .iter()
            .filter(|((s, _), t)| *s == shard && t.chosen.is_none())
            .filter_map(|((_, id), t)| t.ctx.clone().map(|c| (*id, c)))
            .collect();
        voted.sort_by_key(|(id, _)| *id);
        let now = cx.now();
        let soon = self.env.timeouts.sweep;
        for (id, c) in voted {
            let prio = (c.ts, id);
            if !self.rc {
                for k in &c.reads {
                    self.locks.acquire(id, prio, k, LockMode::Shared);
                }
            }
            for (k, _, _) in &c.writes {
                self.locks.acquire(id, prio, k, LockMode::Exclusive);
            }
            if let Some(t) = self.txns.get_mut(&(shard, id)) {
                if t.accepted.is_some() {
                    t.recover_at = Some(now + soon);
                }
            }
        }
        let followers: BTreeSet<NodeId> = self.groups[&shard]
            .replicas
            .iter()
            .copied()
            .filter(|n| *n != self.me)
            .collect();
        let mut recent: Vec<TxnId> = self
            .done
            .iter()
            .filter(|((s, _), d)| *s == shard && now.saturating_sub(d.at) < self.env.timeouts.tombstone)
            .map(|((_, t), _)| *t)
            .collect();
        recent.sort();
        let g = self.groups.get_mut(&shard).expect("group");
        for t in recent {
            g.pushing.insert(t, (followers.clone(), 0));
        }
    }

    fn on_new_view(
        &mut self,
        from: NodeId,
        m: (ShardId, u64, Vec<PendingInfo>, Vec<DoneInfo>, u64),
        cx: &mut Ctx<'_, Msg>,
    ) {
        let (shard, view, pending, done, seq) = m;
        if !self.adopt_view(shard, view, from, cx) {
            return;
        }
        self.install_state(shard, pending, done, seq, cx);
    }

    /// Merges another replica's view of the group: decisions are applied, pending
    /// contexts and acceptor state adopted.
    fn install_state(
        &mut self,
        shard: ShardId,
        pending: Vec<PendingInfo>,
        done: Vec<DoneInfo>,
        seq: u64,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if let Some(g) = self.groups.get_mut(&shard) {
            g.seq = g.seq.max(seq);
        }
        for d in done {
            self.absorb_done(shard, d, cx);
        }
        let now = cx.now();
        for p in pending {
            if self.done.contains_key(&(shard, p.txn)) {
                continue;
            }
            let t = self
                .txns
                .entry((shard, p.txn))
                .or_insert_with(|| Txn::new(p.txn, p.ts, now));
            if t.prio.0 == 0 {
                t.prio = (p.ts, p.txn);
            }
            if t.shards.is_empty() {
                t.shards = p.shards;
            }
            if t.ctx.is_none() {
                t.ctx = p.ctx;
            }
            // Adopted even by a restarted replica: reporting a (ballot, decision) some
            // acceptor really accepted keeps phase 1 safe, and it is how what a
            // forgotten acceptance helped choose survives the next crash.
            t.promised = t.promised.max(p.promised);
            if p.accepted.is_some_and(|a| t.accepted.is_none_or(|b| a.0 > b.0)) {
                t.accepted = p.accepted;
            }
            t.last_seen = now;
            self.try_apply_chosen((shard, p.txn), cx);
        }
    }

    fn on_sync_req(&mut self, from: NodeId, shard: ShardId, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get_mut(&shard) else { return };
        if g.status == Status::Syncing || from == self.me {
            return;
        }
        if g.status == Status::Normal && g.leader() == from {
            // Our leader restarted and forgot everything: elect another one now.
            g.last_hb = 0;
        }
        let view = g.view;
        let layout = self.env.layout.clone();
        let mut versions: Vec<(Key, VersionId, Value, u64)> = vec![];
        for (k, vs) in self.store.iter() {
            if layout.shard_of(k) != shard {
                continue;
            }
            for v in vs.iter().filter(|v| !v.tentative) {
                versions.push((k.clone(), v.id, v.value.clone(), v.wts));
            }
        }
        versions.sort_by(|a, b| (&a.0, a.3).cmp(&(&b.0, b.3)));
        cx.charge_ops(versions.len() as u32);
        let (pending, done, seq) = self.my_state(shard, cx.now());
        cx.send(
            from,
            Msg::SyncState {
                shard,
                view,
                versions,
                pending,
                done,
                seq,
            },
        );
    }

    /// A restarted replica merges a peer's state. It is back once it has the states of a
    /// majority of the group not counting itself: every decision chosen, and every
    /// promise given, before the crash involved a majority, which meets them.
    #[allow(clippy::too_many_arguments)]
    fn on_sync_state(
        &mut self,
        from: NodeId,
        shard: ShardId,
        view: u64,
        versions: Vec<(Key, VersionId, Value, u64)>,
        pending: Vec<PendingInfo>,
        done: Vec<DoneInfo>,
        seq: u64,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(g) = self.groups.get_mut(&shard) else { return };
        if g.status != Status::Syncing || !g.synced_from.insert(from) {
            return;
        }
        g.view = g.view.max(view);
        // Back once a majority of the group other than itself has answered: the leader's
        // state alone could miss an acceptance only another replica holds.
        let back = g.synced_from.len() >= g.majority();
        cx.charge_ops(versions.len() as u32);
        for (k, v, val, wts) in versions {
            self.store.install(&k, v, val, wts);
        }
        // Merge while still syncing (learning only), then serve.
        self.install_state(shard, pending, done, seq, cx);
        if back {
            let me = self.me;
            let g = self.groups.get_mut(&shard).expect("group");
            g.status = Status::Normal;
            g.last_hb = cx.now();
            g.synced_from.clear();
            if g.leader() == me {
                // The view we led before the crash: we hold none of its locks and have
                // not pushed its decisions. Lead again only through a view change,
                // whose merge re-takes the locks of voted transactions.
                let n = g.replicas.len() as u64;
                let view = g.view + n;
                self.stand(shard, view, cx);
            }
            // Decisions merged while syncing could not be applied yet: apply them now.
            let mut ready: Vec<(ShardId, TxnId)> = self
                .txns
                .iter()
                .filter(|((s, _), t)| *s == shard && t.chosen.is_some())
                .map(|(k, _)| *k)
                .collect();
            ready.sort();
            for k in ready {
                self.try_apply_chosen(k, cx);
            }
        }
    }

    // ------------------------------------------------------------ housekeeping

    fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let to = self.env.timeouts.clone();
        self.heartbeat_and_failover(cx);
        // Leaders: unvoted transactions whose client went silent abort unilaterally.
        let mut idle: Vec<(ShardId, TxnId)> = self
            .txns
            .iter()
            .filter(|(_, t)| {
                matches!(t.stage, Stage::Active)
                    && t.pending_reads.is_empty()
                    && now.saturating_sub(t.last_seen) > to.idle
            })
            .map(|(k, _)| *k)
            .collect();
        idle.sort();
        for k in idle {
            self.abort_unvoted(k, "client silent", cx);
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
            } else if now.saturating_sub(t.last_seen) > to.idle {
                let g = &self.groups[shard];
                let rank = g.replicas.iter().position(|r| *r == self.me).unwrap_or(0) as u64;
                arm.push(((*shard, *id), rank));
            }
        }
        arm.sort();
        for (k, rank) in arm {
            let jitter = cx.rng().gen_range(0..to.sweep.max(1) * 4);
            if let Some(t) = self.txns.get_mut(&k) {
                t.recover_at = Some(now + rank * to.query + jitter);
            }
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
            let Some((ballot, commit)) = t.accepted else { continue };
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
                Msg::Accepted {
                    txn: *id,
                    shard: *shard,
                    ballot,
                    commit,
                    shards: t.shards.clone(),
                },
            ));
        }
        report.sort_by_key(|(n, m)| match m {
            Msg::Accepted { txn, shard, .. } => (*n, *shard, *txn),
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
        // Decided transactions keep their writes only while a new leader might need them.
        for d in self.done.values_mut() {
            if d.ctx.is_some() && now.saturating_sub(d.at) >= to.tombstone {
                d.ctx = None;
            }
        }
        cx.set_timer(to.sweep, T_SWEEP);
    }
}

/// Phase-2 messages of one proposal, one per replica node: each carries every shard of
/// the configuration that node holds, except those `skip` says already answered.
#[allow(clippy::too_many_arguments)]
fn p2a_by_node(
    layout: &meridian_core::Layout,
    txn: TxnId,
    ts: Time,
    ballot: Ballot,
    commit: bool,
    shards: &[ShardId],
    skip: impl Fn(ShardId, NodeId) -> bool,
) -> Vec<(NodeId, Msg)> {
    let mut by_node: BTreeMap<NodeId, Vec<ShardId>> = BTreeMap::new();
    for s in shards {
        for r in layout.replicas(*s) {
            if !skip(*s, *r) {
                by_node.entry(*r).or_default().push(*s);
            }
        }
    }
    by_node
        .into_iter()
        .map(|(n, targets)| {
            let m = Msg::P2a {
                txn,
                ts,
                targets,
                ballot,
                commit,
                shards: shards.to_vec(),
            };
            (n, m)
        })
        .collect()
}

/// Merges one replica's report of an undecided transaction into `m`.
fn merge_pending(m: &mut BTreeMap<TxnId, PendingInfo>, x: PendingInfo) {
    match m.get_mut(&x.txn) {
        None => {
            m.insert(x.txn, x);
        }
        Some(p) => {
            if p.ctx.is_none() {
                p.ctx = x.ctx;
            }
            if p.shards.is_empty() {
                p.shards = x.shards;
            }
            p.promised = p.promised.max(x.promised);
            if x.accepted.is_some_and(|a| p.accepted.is_none_or(|b| a.0 > b.0)) {
                p.accepted = x.accepted;
            }
        }
    }
}

/// One participant's share of the last operation: keys read there, writes to it.
type LastShare = (Vec<Key>, Vec<(Key, VersionId, Value)>);

/// The fields of a `Last` message.
struct LastOp {
    txn: TxnId,
    ts: Time,
    shard: ShardId,
    shards: Vec<ShardId>,
    reads: Vec<Key>,
    writes: Vec<(Key, VersionId, Value)>,
}

impl Actor for Server {
    type Msg = Msg;

    fn on_start(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        for g in self.groups.values_mut() {
            g.last_hb = now;
        }
        cx.set_timer(self.env.timeouts.sweep, T_SWEEP);
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Read {
                txn,
                ts,
                shard,
                key,
                shards,
            } => self.on_read(from, (txn, ts, shard, key, shards), cx),
            Msg::Last {
                txn,
                ts,
                shard,
                shards,
                reads,
                writes,
            } => self.on_last(
                from,
                LastOp {
                    txn,
                    ts,
                    shard,
                    shards,
                    reads,
                    writes,
                },
                cx,
            ),
            Msg::Replicate { shard, view, ctx } => self.on_replicate(from, shard, view, ctx, cx),
            Msg::Replicated { shard, view, txn } => self.on_replicated(from, shard, view, txn, cx),
            Msg::P1a {
                txn,
                ts,
                shard,
                ballot,
                shards,
            } => self.on_p1a(from, (txn, ts, shard, ballot, shards), cx),
            Msg::P1b {
                txn,
                shard,
                ballot,
                ok,
                promised,
                accepted,
                chosen,
                ctx,
            } => self.on_p1b(from, txn, shard, ballot, ok, promised, accepted, chosen, ctx, cx),
            Msg::P2a {
                txn,
                ts,
                targets,
                ballot,
                commit,
                shards,
            } => self.on_p2a(
                from,
                P2a {
                    txn,
                    ts,
                    targets,
                    ballot,
                    commit,
                    shards,
                },
                cx,
            ),
            Msg::P2b { txn, ballot, parts } => self.on_p2b(from, txn, ballot, parts, cx),
            Msg::Accepted {
                txn,
                shard,
                ballot,
                commit,
                shards,
            } => self.on_accepted(from, (txn, shard, ballot, commit, shards), cx),
            Msg::Decided { shard, done } => self.on_decided(from, shard, done, cx),
            Msg::Applied { shard, txns } => self.on_applied(from, shard, txns),
            Msg::Heartbeat { shard, view } => self.on_heartbeat(from, shard, view, cx),
            Msg::ViewChange { shard, view } => self.on_view_change(from, shard, view, cx),
            Msg::ViewState {
                shard,
                view,
                pending,
                done,
                seq,
            } => self.on_view_state(from, shard, view, pending, done, seq, cx),
            Msg::NewView {
                shard,
                view,
                pending,
                done,
                seq,
            } => self.on_new_view(from, (shard, view, pending, done, seq), cx),
            Msg::SyncReq { shard } => self.on_sync_req(from, shard, cx),
            Msg::SyncState {
                shard,
                view,
                versions,
                pending,
                done,
                seq,
            } => self.on_sync_state(from, shard, view, versions, pending, done, seq, cx),
            Msg::ReadReply { .. } | Msg::NotLeader { .. } | Msg::Vote { .. } => {} // client messages
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        if t == T_SWEEP {
            self.sweep(cx);
        }
    }

    fn on_crash(&mut self) {
        // Logless: nothing survives.
        *self = Server::new(self.env.clone(), self.me, self.rc);
    }

    fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.restarted_at = Some(cx.now());
        for g in self.groups.values_mut() {
            g.status = Status::Syncing;
        }
        self.on_start(cx);
        self.heartbeat_and_failover(cx);
    }
}

impl Replica for Server {
    fn snapshot(&self) -> ReplicaSnapshot {
        ReplicaSnapshot {
            node: self.me,
            keys: self.store.snapshot(),
        }
    }
    fn lock_holds(&self) -> Option<&HoldStats> {
        Some(&self.holds)
    }
    fn locked_keys(&self) -> Option<usize> {
        Some(self.locks.len())
    }
}

// ---------------------------------------------------------------- client

const T_READ: TimerId = TimerId(1);
const T_VOTE: TimerId = TimerId(2);
const T_RESEND: TimerId = TimerId(3);
const T_IDLE: TimerId = TimerId(4);

#[derive(Debug)]
enum Phase {
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
    },
    Deciding {
        commit: bool,
        reason: Option<String>,
        acks: BTreeMap<ShardId, BTreeSet<NodeId>>,
    },
}

#[derive(Debug)]
struct Current {
    ts: Time,
    exec: Execution,
    rec: TxnRecord,
    /// The configuration: every shard touched so far.
    shards: BTreeSet<ShardId>,
    phase: Phase,
}

/// A HACommit client: runs one transaction at a time and is the initial Paxos proposer
/// of its commit.
#[derive(Debug)]
pub struct Client {
    env: Env,
    id: ClientId,
    dc: DcId,
    /// Believed leader of each shard.
    leaders: HashMap<ShardId, NodeId>,
    cur: Option<Current>,
}

impl Client {
    /// A client on `node`.
    pub fn new(env: Env, node: NodeId, id: ClientId) -> Self {
        let dc = env.layout.dc_of(node);
        Client {
            env,
            id,
            dc,
            leaders: HashMap::default(),
            cur: None,
        }
    }

    fn leader(&self, s: ShardId) -> NodeId {
        self.leaders
            .get(&s)
            .copied()
            .unwrap_or_else(|| self.env.layout.primary(s))
    }

    /// The believed leader of `s` did not answer: try the next replica of the group next
    /// time (a live replica answers with a `NotLeader` hint if it is not the leader).
    fn suspect(&mut self, s: ShardId) {
        let reps = self.env.layout.replicas(s);
        let cur = self.leader(s);
        let i = reps.iter().position(|r| *r == cur).unwrap_or(0);
        self.leaders.insert(s, reps[(i + 1) % reps.len()]);
    }

    fn step(&mut self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let step = match cur.exec.step(&self.env.registry) {
            Ok(s) => s,
            Err(e) => Step::Abort(e.to_string()),
        };
        match step {
            Step::Read(key) => {
                let shard = self.env.layout.shard_of(&key);
                cur.shards.insert(shard);
                cur.phase = Phase::Reading {
                    key,
                    shard,
                    redirects: 0,
                };
                self.send_read(cx);
            }
            Step::Abort(reason) => self.decide(false, Some(reason), cx),
            Step::Wait { output } => {
                cur.phase = Phase::Waiting;
                cx.set_timer(self.env.timeouts.idle, T_IDLE);
                cx.await_input(cur.rec.id, output);
            }
            Step::Done { writes, .. } => {
                let finals = crate::client::number_writes(&mut cur.rec, writes);
                let layout = &self.env.layout;
                let mut lasts: BTreeMap<ShardId, LastShare> = BTreeMap::new();
                for r in &cur.rec.reads {
                    lasts.entry(layout.shard_of(&r.key)).or_default().0.push(r.key.clone());
                }
                for (k, (v, val)) in finals {
                    lasts.entry(layout.shard_of(&k)).or_default().1.push((k, v, val));
                }
                cur.shards.extend(lasts.keys().copied());
                if lasts.is_empty() {
                    cur.rec.commit_start = Some(cx.now());
                    return self.finish(Outcome::Committed, None, cx);
                }
                cur.phase = Phase::Voting {
                    lasts,
                    yes: BTreeSet::new(),
                    redirects: 0,
                };
                cx.cancel_timer(T_READ);
                let shards: Vec<ShardId> = self.cur.as_ref().expect("cur").shards.iter().copied().collect();
                for s in shards {
                    self.send_last(s, cx);
                }
                cx.set_timer(self.env.timeouts.vote, T_VOTE);
            }
        }
    }

    fn send_read(&mut self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        let Phase::Reading { key, shard, .. } = &cur.phase else {
            return;
        };
        let m = Msg::Read {
            txn: cur.rec.id,
            ts: cur.ts,
            shard: *shard,
            key: key.clone(),
            shards: cur.shards.iter().copied().collect(),
        };
        let to = self.leader(*shard);
        cx.send(to, m);
        cx.set_timer(self.env.timeouts.read, T_READ);
    }

    fn send_last(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        let Phase::Voting { lasts, .. } = &cur.phase else {
            return;
        };
        let (reads, writes) = lasts.get(&s).cloned().unwrap_or_default();
        let m = Msg::Last {
            txn: cur.rec.id,
            ts: cur.ts,
            shard: s,
            shards: cur.shards.iter().copied().collect(),
            reads,
            writes,
        };
        let to = self.leader(s);
        cx.send(to, m);
    }

    /// The client's decision: phase 2 of Paxos with ballot 0 to every replica of every
    /// participant.
    fn decide(&mut self, commit: bool, reason: Option<String>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        cx.cancel_timer(T_READ);
        cx.cancel_timer(T_VOTE);
        cur.rec.commit_start = Some(cx.now());
        if cur.shards.is_empty() {
            let outcome = if commit { Outcome::Committed } else { Outcome::Aborted };
            return self.finish(outcome, reason, cx);
        }
        cur.phase = Phase::Deciding {
            commit,
            reason,
            acks: BTreeMap::new(),
        };
        self.send_p2a(cx);
        cx.set_timer(self.env.timeouts.status, T_RESEND);
    }

    fn send_p2a(&mut self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        let Phase::Deciding { commit, acks, .. } = &cur.phase else {
            return;
        };
        let shards: Vec<ShardId> = cur.shards.iter().copied().collect();
        let msgs = p2a_by_node(&self.env.layout, cur.rec.id, cur.ts, 0, *commit, &shards, |s, r| {
            acks.get(&s).is_some_and(|a| a.contains(&r))
        });
        for (n, m) in msgs {
            cx.send(n, m);
        }
    }

    fn finish(&mut self, outcome: Outcome, reason: Option<String>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.take() else { return };
        cx.cancel_timer(T_READ);
        cx.cancel_timer(T_VOTE);
        cx.cancel_timer(T_RESEND);
        cx.cancel_timer(T_IDLE);
        crate::client::close(cur.rec, outcome, reason, cx);
    }

    fn on_vote(&mut self, shard: ShardId, yes: bool, reason: Option<String>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let Phase::Voting { yes: ys, .. } = &mut cur.phase else {
            return;
        };
        if !yes {
            return self.decide(false, Some(reason.unwrap_or_else(|| "participant voted no".into())), cx);
        }
        ys.insert(shard);
        if ys.len() == cur.shards.len() {
            self.decide(true, None, cx);
        }
    }

    fn on_p2b(&mut self, from: NodeId, shard: ShardId, ok: bool, chosen: Option<bool>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let Phase::Deciding { commit, reason, acks } = &mut cur.phase else {
            return;
        };
        if let Some(v) = chosen {
            // Decided already (by us, or by a recovery proposer that overtook us).
            let why = if v {
                None
            } else {
                Some(reason.take().unwrap_or_else(|| "aborted by a recovery proposer".into()))
            };
            let outcome = if v { Outcome::Committed } else { Outcome::Aborted };
            return self.finish(outcome, why, cx);
        }
        if !ok {
            return; // a higher ballot is running: wait for the chosen decision
        }
        acks.entry(shard).or_default().insert(from);
        let layout = &self.env.layout;
        let all = cur
            .shards
            .iter()
            .all(|s| acks.get(s).map_or(0, |a| a.len()) >= majority_of(layout.replicas(*s).len()));
        if all {
            let outcome = if *commit { Outcome::Committed } else { Outcome::Aborted };
            let why = reason.take();
            self.finish(outcome, why, cx);
        }
    }
}

impl Actor for Client {
    type Msg = Msg;

    fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match msg {
            Msg::ReadReply { txn, key, result } if txn == cur.rec.id => {
                if !matches!(&cur.phase, Phase::Reading { key: k, .. } if *k == key) {
                    return;
                }
                cx.cancel_timer(T_READ);
                match result {
                    Ok((version, value)) => {
                        cur.rec.reads.push(ReadRec {
                            key: key.clone(),
                            version,
                        });
                        cur.exec.supply(key, value);
                        self.step(cx);
                    }
                    Err(why) => self.decide(false, Some(why), cx),
                }
            }
            Msg::NotLeader { txn, shard, leader } if txn == cur.rec.id => {
                let limit = 2 * self.env.layout.replicas(shard).len() as u32;
                match &mut cur.phase {
                    Phase::Reading {
                        shard: s, redirects, ..
                    } if *s == shard => {
                        *redirects += 1;
                        if *redirects > limit {
                            return self.decide(false, Some("no leader for a shard".into()), cx);
                        }
                        self.leaders.insert(shard, leader);
                        self.send_read(cx);
                    }
                    Phase::Voting { redirects, .. } => {
                        *redirects += 1;
                        if *redirects > limit * cur.shards.len() as u32 {
                            return self.decide(false, Some("no leader for a shard".into()), cx);
                        }
                        self.leaders.insert(shard, leader);
                        self.send_last(shard, cx);
                    }
                    _ => {}
                }
            }
            Msg::Vote {
                txn,
                shard,
                yes,
                reason,
            } if txn == cur.rec.id => self.on_vote(shard, yes, reason, cx),
            Msg::P2b { txn, ballot: 0, parts } if txn == cur.rec.id => {
                for p in parts {
                    if self.cur.is_none() {
                        break;
                    }
                    self.on_p2b(from, p.shard, p.ok, p.chosen, cx);
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        match (t, &cur.phase) {
            (T_READ, Phase::Reading { shard, .. }) => {
                let s = *shard;
                self.suspect(s);
                self.decide(false, Some("read timed out".into()), cx)
            }
            (T_VOTE, Phase::Voting { yes, .. }) => {
                let silent: Vec<ShardId> = cur.shards.iter().filter(|s| !yes.contains(s)).copied().collect();
                for s in silent {
                    self.suspect(s);
                }
                self.decide(false, Some("vote timed out".into()), cx)
            }
            (T_IDLE, Phase::Waiting) => self.decide(false, Some(crate::client::IDLE_ABORT.into()), cx),
            (T_RESEND, Phase::Deciding { .. }) => {
                self.send_p2a(cx);
                cx.set_timer(self.env.timeouts.status, T_RESEND);
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
        let rec = crate::client::new_record(txn, self.id, self.dc, &call, cx);
        self.cur = Some(Current {
            ts: cx.now(),
            exec: Execution::new(call),
            rec,
            shards: BTreeSet::new(),
            phase: Phase::Deciding {
                commit: false,
                reason: None,
                acks: BTreeMap::new(),
            },
        });
        self.step(cx);
    }

    fn in_flight(&self) -> Option<TxnRecord> {
        self.cur.as_ref().map(|c| c.rec.clone())
    }

    fn extend(&mut self, txn: TxnId, args: Vec<Arg>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        if cur.rec.id != txn || !matches!(cur.phase, Phase::Waiting) {
            return;
        }
        cx.cancel_timer(T_IDLE);
        cur.exec.call.args.extend(args);
        self.step(cx);
    }
}

impl Protocol for HaCommit {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;

    fn name(&self) -> &'static str {
        if self.read_committed {
            "hacommit-rc"
        } else {
            "hacommit"
        }
    }
    fn strict(&self) -> bool {
        !self.read_committed
    }
    fn read_committed(&self) -> bool {
        self.read_committed
    }
    fn interactive(&self) -> bool {
        true
    }
    fn placement(&self, home: HomeRule) -> Placement {
        Placement::Groups { home, k: self.replicas }
    }
    /// Replicas forget everything in a crash and re-sync from a majority (§V): a group
    /// of 2f+1 survives f of its replicas down or re-syncing at a time.
    fn fault_model(&self) -> crate::FaultModel {
        crate::FaultModel::Forgetful {
            per_group: (self.replicas as usize - 1) / 2,
            global: false,
            resync: meridian_core::secs(2.0),
        }
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        Server::new(env.clone(), node, self.read_committed)
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id)
    }
}

#[cfg(test)]
mod tests;
