//! CrossStitch (crossstitch.md §3–4): transactions as chains of states, executed by
//! shipping the program from server to server, with the pipelined commit protocol
//! (PLC) running alongside.
//!
//! # Execution (§3.1, §3.5.1)
//!
//! A transaction is a program ([`meridian_txn::Execution`], replayed against the reads
//! made so far, which is how DESIGN.md lets a program "travel"). Each key operation is
//! a state executed at the primary of the key's shard. A server that receives the
//! transaction (`Exec`) runs every operation it can serve itself: reads, and the
//! program's writes in program order ([`meridian_txn::Execution::step_ops`]), each one
//! a CrossStitch put. Adjacent states on one server therefore form one *logical state*
//! (§3.5.1). When the next operation's key lives elsewhere the server forwards the
//! execution, with the intermediate data (the reads made and the versions they saw),
//! to that key's primary. The client only runs the start state (which computes the
//! first key), sends the transaction to the first server and receives the result. The
//! workloads order states so that one DC's keys are adjacent (§3.4).
//!
//! # Concurrency control (§3.2)
//!
//! Multi-version timestamp ordering with a client-chosen timestamp (its clock, made
//! unique by the client id). A read returns the version with the largest write
//! timestamp at or below the transaction's and raises that version's read timestamp;
//! a write is refused (abort) when the version it would follow was read by a later
//! timestamp. Uncommitted versions are readable: the reader then *depends* on the
//! writer, and does not precommit at that server until the writer has committed there.
//! If the writer aborts, the reader — never yet precommitted there — aborts with it
//! (a cascading abort). Dependencies follow timestamp order, so they cannot cycle.
//!
//! # Pipelined commit (§3.3, §4)
//!
//! Positions: the client is position 0, the servers of the logical states 1..n.
//!
//! - Server i+1, on receiving and running its state, sends `Ack` to server i naming
//!   server i+2 (or saying that it is the last one). The client's first server acks
//!   the client.
//! - A server sends `Precommit` to its successor once it has executed its state, has
//!   the previous position's precommit (the client precommits as soon as it is
//!   acked), has the successor's ack, has the replication notifies it is owed and has
//!   no unresolved dependency. From then on it cannot abort on its own.
//! - Until then it can: an MVTO refusal, a user abort, a cascading abort or a time-out
//!   aborts the transaction there. The aborting server tells every position before
//!   it (and their replicas, and the client) and sends `ForwardAbort` down the chain.
//!   No later position can have precommitted, so no one can commit.
//! - The last server is the final coordinator. With the previous precommit (and its
//!   notifies) it runs Paxos commit with two *transaction replicas* (the two servers
//!   nearest to it): acceptors are itself and the two replicas, it proposes COMMIT at
//!   ballot 0, and the transaction is committed once two of the three have accepted.
//!   It then tells the client (with the history record) and every participant and
//!   replica.
//!
//! Failures (§4.1). A position waiting for an ack or a precommit re-sends what it sent
//! and, not being precommitted, aborts after `vote`. A precommitted position waiting
//! for the outcome queries its successor every `query`, re-sends its precommit and, if
//! the successor stays silent, queries the position after it (known from the ack): a
//! position that has not precommitted aborts on that query, one that has answers
//! "pending", one that knows the outcome answers it. When the silent successor was the
//! last server, the querier asks the transaction replicas, which run Paxos recovery:
//! phase 1 with a higher ballot on a majority of the three acceptors, then the highest
//! accepted value or ABORT. Whoever learns an outcome passes it to its predecessor and
//! its replicas.
//!
//! # Replication (§3.5)
//!
//! Each shard lives on two servers of its home DC: the primary and its replica. A
//! server that performed puts sends them (`Replicate`) to the shards' replicas with the
//! identity of the next position; each replica installs them as tentative versions
//! and sends `Notify` to that next server (or back to the last server itself), which
//! waits for every notify before it precommits. Decisions reach replicas too; a replica
//! holding an undecided put asks the primary and the next position.
//!
//! # Where this departs from the paper, and why
//!
//! - **Who sends a put to the replica.** The paper has server i send the transaction to
//!   both the put's primary and its replica, and the replica re-runs the next state's
//!   computation to learn whom to notify. With logical states (several reads and puts on
//!   one server) a replica cannot run that computation without the reads, so here the
//!   primary sends its puts to the replica together with the next position's identity.
//!   The notify path is one intra-DC hop longer; WAN trips are the same.
//! - **Servers forget on a crash** (the paper keeps data in memory and relies on the
//!   replica). A restarted server copies its shards from their other replica before it
//!   serves, resolves copied uncommitted versions by asking, refuses to execute or
//!   accept for transactions that started before it crashed (it may have forgotten
//!   what it did for them), answers queries about them with "unknown" (never
//!   "aborted"), and refuses writes below its restart time (the read timestamps it
//!   lost cannot be trusted). To know when it crashed it keeps one durable word, a
//!   watermark "alive until", rewritten every sweep.
//! - **Forgetful acceptors.** Restarted servers re-sync data, not acceptor state, so
//!   in a recovery's phase 1 a server stays silent about transactions that began before
//!   its crash: its "nothing accepted" could otherwise complete a majority that misses
//!   a COMMIT chosen by the final server and one replica before the crash. The
//!   watermark is written at start, not at the first sweep. Queries and recoveries
//!   started from re-synced tentative versions carry the transaction's timestamp (the
//!   versions' write timestamp), without which every restarted acceptor stays silent.
//! - **Recovery back-off.** Askers re-ask every sweep, faster than a WAN round trip; a
//!   recovery that meets a higher ballot waits `query` plus a random part of it before
//!   the next, or two transaction replicas pre-empt each other forever.
//! - **A client that aborts alone** (its first server silent) tells the replicas of the
//!   first server's shards as well: they may hold that server's tentative puts, and no
//!   one else may ever tell them.
//! - **Fault model.** The paper argues liveness under a single silent failure per
//!   transaction (§4). The simulator counts a second failure within 5 s of the previous
//!   restart, or two copies of a shard down together, as beyond it: safety still
//!   holds, a stall is allowed (and the loss of both copies' memory is a loss).
//! - **No fail-over of keys.** While a shard's primary is down, transactions reaching it
//!   abort by time-out (liveness holds, availability of that shard does not); while its
//!   replica is down, puts to it cannot be notified and abort likewise. The paper
//!   sketches fail-over to the replica but not its protocol.
//! - **Shipping cost.** Receiving a shipped transaction is charged one key operation per
//!   KiB of execution state (the program's arguments and the values read so far), the
//!   "marshalling and unmarshalling" overhead §5.2.1 observes.

use crate::{ClientRole, Env, Protocol, Replica};
use meridian_core::{
    Actor, ClientId, Ctx, DcId, HomeRule, Key, NodeId, Outcome, Placement, ReadRec, ReplicaSnapshot, Time, TimerId,
    TxnId, TxnRecord, Value, VersionId, WriteRec,
};
use meridian_storage::MvStore;
use meridian_txn::{Call, Execution, Step};
use rand::Rng as _;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[cfg(test)]
mod tests;

/// MVTO timestamps are the client's clock in nanoseconds times this, plus the client id
/// modulo this (unique per client).
pub const TS_SCALE: u64 = 1024;

/// A Paxos ballot for the commit decision: 0 is the final server's; recovery ballots
/// are `round << 20 | node + 1` with `round` the issue time in milliseconds.
pub type Ballot = u64;

/// The history record a committed transaction reports to its client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rec {
    /// Reads with the versions seen.
    pub reads: Vec<ReadRec>,
    /// Writes in program order.
    pub writes: Vec<WriteRec>,
}

/// One position of a chain: the server and the replicas its puts went to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hop {
    /// The server (or, at position 0, the client).
    pub node: NodeId,
    /// Replicas holding this position's puts.
    pub replicas: Vec<NodeId>,
}

/// What the final coordinator proposes (and recovery may find accepted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Commit or abort.
    pub commit: bool,
    /// The record for the client (commit only).
    pub rec: Option<Arc<Rec>>,
    /// Every position (with replicas), to tell the outcome to.
    pub chain: Vec<Hop>,
}

/// What a queried position knows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Status {
    /// Committed (with the record, if known here).
    Committed(Option<Arc<Rec>>),
    /// Aborted, and why.
    Aborted(String),
    /// Precommitted here, outcome not known yet: keep waiting.
    Pending,
    /// This server may have forgotten the transaction (it restarted).
    Unknown,
}

/// CrossStitch messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Position `pos - 1` → position `pos`: run your state(s) of this transaction.
    Exec {
        /// Transaction.
        txn: TxnId,
        /// MVTO timestamp.
        ts: u64,
        /// The program and the values read so far.
        exec: Execution,
        /// How many of the program's writes have been performed.
        writes_done: u32,
        /// Reads made so far, with versions.
        reads: Vec<ReadRec>,
        /// Writes performed so far.
        writes: Vec<WriteRec>,
        /// Positions 0..pos (0 is the client).
        chain: Vec<Hop>,
        /// Notifies the receiver must collect (its predecessor's replicas).
        notifies: u32,
    },
    /// Position `pos` → `pos - 1`: executed; the position after me is `next` (`None`:
    /// I am the last).
    Ack {
        /// Transaction.
        txn: TxnId,
        /// My position.
        pos: u32,
        /// Position `pos + 1`, if any.
        next: Option<NodeId>,
    },
    /// Position `pos - 1` → `pos`: I vote commit and delegate the decision to you.
    Precommit {
        /// Transaction.
        txn: TxnId,
        /// The receiver's position.
        pos: u32,
    },
    /// An earlier position aborted: abort (and pass it on).
    ForwardAbort {
        /// Transaction.
        txn: TxnId,
        /// The receiver's position.
        pos: u32,
        /// Why.
        reason: String,
    },
    /// Primary → replica: hold these puts; notify `notify` (position `pos`).
    Replicate {
        /// Transaction.
        txn: TxnId,
        /// MVTO timestamp.
        ts: u64,
        /// The puts (key, version, value).
        puts: Vec<(Key, VersionId, Value)>,
        /// Who to notify.
        notify: NodeId,
        /// The notified server's position.
        pos: u32,
        /// Nodes of the chain so far (to ask for the outcome if the primary forgets).
        chain: Vec<NodeId>,
    },
    /// Replica → position `pos`: the puts of your predecessor are replicated here.
    Notify {
        /// Transaction.
        txn: TxnId,
        /// The receiver's position.
        pos: u32,
    },
    /// The outcome, to the client, a participant or a replica.
    Decide {
        /// Transaction.
        txn: TxnId,
        /// Committed?
        commit: bool,
        /// Record (commit, to the client).
        rec: Option<Arc<Rec>>,
        /// Why it aborted.
        reason: Option<String>,
    },
    /// What is the state of `txn` at position `pos`? (`pos` = 0: at any position.)
    Query {
        /// Transaction.
        txn: TxnId,
        /// Its timestamp.
        ts: u64,
        /// Position asked about.
        pos: u32,
        /// Abort there if that position has not precommitted (the query to position
        /// i + 2 when i + 1 is silent, §4.1).
        kill: bool,
    },
    /// To a transaction replica: the last server `last` is silent; resolve the outcome
    /// (Paxos recovery) and tell me.
    Recover {
        /// Transaction.
        txn: TxnId,
        /// Its timestamp.
        ts: u64,
        /// The last server of the chain (the first acceptor).
        last: NodeId,
    },
    /// Answer to a `Query`.
    StatusReply {
        /// Transaction.
        txn: TxnId,
        /// The position the question was about (0: any the server holds).
        pos: u32,
        /// What the answering server knows.
        status: Status,
    },
    /// Paxos commit phase 2: accept `decision` at `ballot`.
    Accept {
        /// Transaction.
        txn: TxnId,
        /// Its timestamp (restart rule).
        ts: u64,
        /// Ballot.
        ballot: Ballot,
        /// The value.
        decision: Decision,
    },
    /// Acceptor → proposer: accepted (or refused, with the ballot promised).
    Accepted {
        /// Transaction.
        txn: TxnId,
        /// Ballot answered.
        ballot: Ballot,
        /// Accepted?
        ok: bool,
    },
    /// Paxos recovery phase 1.
    Prepare {
        /// Transaction.
        txn: TxnId,
        /// Its timestamp.
        ts: u64,
        /// Ballot.
        ballot: Ballot,
    },
    /// Acceptor → recovery proposer.
    Promise {
        /// Transaction.
        txn: TxnId,
        /// Ballot answered.
        ballot: Ballot,
        /// Promised?
        ok: bool,
        /// The highest accepted (ballot, value).
        accepted: Option<(Ballot, Decision)>,
    },
    /// Restarted server → the other replica of its shards: send me your data.
    SyncReq,
    /// The versions of the shards the two servers share (committed and tentative).
    SyncState {
        /// (key, version, value, wts, tentative).
        versions: Vec<(Key, VersionId, Value, u64, bool)>,
        /// For each transaction with a tentative version: nodes to ask its outcome,
        /// and its last server if known (whose transaction replicas can recover it).
        askers: Vec<(TxnId, Vec<NodeId>, Option<NodeId>)>,
    },
}

impl Msg {
    fn txn(&self) -> Option<TxnId> {
        use Msg::*;
        match self {
            Exec { txn, .. }
            | Ack { txn, .. }
            | Precommit { txn, .. }
            | ForwardAbort { txn, .. }
            | Replicate { txn, .. }
            | Notify { txn, .. }
            | Decide { txn, .. }
            | Query { txn, .. }
            | Recover { txn, .. }
            | StatusReply { txn, .. }
            | Accept { txn, .. }
            | Accepted { txn, .. }
            | Prepare { txn, .. }
            | Promise { txn, .. } => Some(*txn),
            SyncReq | SyncState { .. } => None,
        }
    }
}

const T_SWEEP: TimerId = TimerId(1);
const T_CLIENT: TimerId = TimerId(2);

/// The other servers holding a copy of any shard `n` holds (whom it re-syncs from).
fn partners_of(layout: &meridian_core::Layout, n: NodeId) -> BTreeSet<NodeId> {
    let mut out = BTreeSet::new();
    for s in layout.shards_of(n) {
        out.extend(layout.replicas(s).iter().filter(|r| **r != n));
    }
    out
}

/// The two transaction replicas of final server `f`: the other servers nearest to it
/// (lowest RTT, then lowest id).
pub fn txn_replicas(layout: &meridian_core::Layout, f: NodeId) -> [NodeId; 2] {
    let dc = layout.dc_of(f);
    let mut others: Vec<NodeId> = (0..layout.num_servers()).map(NodeId).filter(|n| *n != f).collect();
    others.sort_by(|a, b| {
        let ra = layout.topology.rtt(dc, layout.dc_of(*a));
        let rb = layout.topology.rtt(dc, layout.dc_of(*b));
        ra.partial_cmp(&rb)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.0.cmp(&b.0))
    });
    [others[0], others[1 % others.len()]]
}

/// Where a position is in PLC (Fig. 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Executed its state, may still abort alone.
    Executed,
    /// Delegated the decision (the last server: proposed COMMIT).
    Precommitted,
}

/// One position of a transaction at this server.
#[derive(Debug)]
struct Part {
    ts: u64,
    pos: u32,
    phase: Phase,
    /// Positions 0..=pos.
    chain: Vec<Hop>,
    /// Position pos + 1 (None: not known yet, or this is the last).
    next: Option<NodeId>,
    last: bool,
    /// From the ack: position pos + 2 (`Some(None)`: pos + 1 is the last).
    after_next: Option<Option<NodeId>>,
    acked: bool,
    prev_precommit: bool,
    notifies_needed: u32,
    notifies: BTreeSet<NodeId>,
    /// Uncommitted writers whose versions this position read.
    deps: BTreeSet<TxnId>,
    /// Tentative versions this position installed.
    puts: Vec<(Key, VersionId, Value)>,
    /// The forwarded execution (re-sent until acked).
    forward: Option<Msg>,
    /// This position's puts as sent to each replica (re-sent until the outcome).
    replicate: Vec<(NodeId, Msg)>,
    /// When this position last re-sent or queried (at most once per `query`).
    poked: Time,
    /// Record so far (the last position: the full record).
    rec: Option<Arc<Rec>>,
    since: Time,
    /// Last time the successor answered a query.
    heard_next: Time,
}

/// A replica's copy of another server's puts.
#[derive(Debug)]
struct Backup {
    ts: u64,
    primary: NodeId,
    notify: NodeId,
    chain: Vec<NodeId>,
    puts: Vec<(Key, VersionId)>,
    since: Time,
    /// The primary answered that it may have forgotten the transaction (restarted).
    primary_forgot: bool,
}

/// Tentative versions copied while re-syncing, whose outcome is being asked.
#[derive(Debug)]
struct Orphan {
    /// The transaction's timestamp (its versions' write timestamp): queries and
    /// recoveries must carry it, or a restarted acceptor cannot tell whether it may
    /// have forgotten the transaction and stays silent.
    ts: u64,
    puts: Vec<(Key, VersionId)>,
    since: Time,
    ask: Vec<NodeId>,
    last: Option<NodeId>,
}

/// Acceptor state of one transaction (this server as final server or transaction
/// replica).
#[derive(Debug, Clone)]
struct Acceptor {
    promised: Ballot,
    accepted: Option<(Ballot, Decision)>,
    since: Time,
}

/// A Paxos proposer for one transaction's decision (the final server at ballot 0, or a
/// transaction replica recovering).
#[derive(Debug)]
struct Proposer {
    ts: u64,
    ballot: Ballot,
    acceptors: [NodeId; 3],
    /// Phase 1 answers (recovery only).
    promises: BTreeMap<NodeId, Option<(Ballot, Decision)>>,
    /// Phase 2 value, once chosen to propose.
    value: Option<Decision>,
    accepted: BTreeSet<NodeId>,
    /// Who asked (to answer when decided).
    waiters: BTreeSet<NodeId>,
    since: Time,
}

/// An outcome this server knows.
#[derive(Clone, Debug)]
struct Done {
    commit: bool,
    rec: Option<Arc<Rec>>,
    reason: String,
    at: Time,
}

/// A CrossStitch data server (primary of some shards, replica of others, final
/// coordinator and transaction replica of transactions).
#[derive(Debug)]
pub struct Server {
    env: Env,
    me: NodeId,
    store: MvStore,
    parts: HashMap<(TxnId, u32), Part>,
    /// Notifies that arrived before the execution they are about (over a real network
    /// the replica's notify can overtake the primary's forward): kept until the
    /// position exists, dropped after `idle`.
    early_notifies: HashMap<(TxnId, u32), (Time, BTreeSet<NodeId>)>,
    backups: HashMap<TxnId, Backup>,
    /// writer → readers (txn, pos) that read its uncommitted versions here.
    readers: HashMap<TxnId, Vec<(TxnId, u32)>>,
    acceptors: HashMap<TxnId, Acceptor>,
    proposers: HashMap<TxnId, Proposer>,
    done: HashMap<TxnId, Done>,
    /// Tentative versions copied while re-syncing, whose outcome is being asked.
    orphans: HashMap<TxnId, Orphan>,
    /// Recoveries that met a higher ballot: no new one for the transaction before
    /// this time (a randomized back-off, so two replicas asked to recover the same
    /// transaction do not pre-empt each other's ballots forever).
    backoff: HashMap<TxnId, Time>,
    /// Set when restarted after a crash.
    restarted_at: Option<Time>,
    /// A small durable watermark: this server was alive (and may have run
    /// transactions started) up to this time. Written once per sweep, kept across a
    /// crash, so a restarted server knows which transactions it cannot have seen.
    alive_until: Time,
    /// The watermark at the last restart: transactions started before it may have
    /// been forgotten.
    forgot_before: Time,
    /// Partners a restarted server still needs the data of.
    syncing: BTreeSet<NodeId>,
    /// Outcomes applied here (for the split-decision check).
    applied: HashMap<TxnId, bool>,
    /// Decisions that contradicted one applied here (must stay empty).
    contradicted: Vec<(TxnId, bool)>,
}

impl Server {
    /// The server on `me`.
    pub fn new(env: Env, me: NodeId) -> Self {
        Server {
            env,
            me,
            store: MvStore::new(),
            parts: HashMap::default(),
            early_notifies: HashMap::default(),
            backups: HashMap::default(),
            readers: HashMap::default(),
            acceptors: HashMap::default(),
            proposers: HashMap::default(),
            done: HashMap::default(),
            orphans: HashMap::default(),
            backoff: HashMap::default(),
            restarted_at: None,
            alive_until: 0,
            forgot_before: 0,
            syncing: BTreeSet::new(),
            applied: HashMap::default(),
            contradicted: vec![],
        }
    }

    fn primary_of(&self, key: &Key) -> NodeId {
        self.env.layout.primary(self.env.layout.shard_of(key))
    }

    /// Whether this server may have forgotten what it did for a transaction of `ts`:
    /// it started before the server last crashed (by the durable watermark).
    fn forgot(&self, ts: u64) -> bool {
        ts / TS_SCALE < self.forgot_before
    }

    /// Whether this server may act as an acceptor of `ballot` for a transaction of
    /// `ts`: always, unless it may have forgotten a promise for it (it started before
    /// the crash); then only ballots issued after the restart (with a margin of
    /// `failover` for clocks) are safe, never the last server's ballot 0.
    fn may_accept_ballot(&self, ts: u64, ballot: Ballot) -> bool {
        match self.restarted_at {
            None => true,
            Some(_) if !self.forgot(ts) => true,
            Some(r) => ballot != 0 && (ballot >> 20) * 1_000_000 > r + self.env.timeouts.failover,
        }
    }

    // ----- execution -----------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    fn on_exec(
        &mut self,
        from: NodeId,
        txn: TxnId,
        ts: u64,
        mut exec: Execution,
        mut writes_done: u32,
        mut reads: Vec<ReadRec>,
        mut writes: Vec<WriteRec>,
        mut chain: Vec<Hop>,
        notifies: u32,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let pos = chain.len() as u32;
        if let Some(p) = self.parts.get(&(txn, pos)) {
            // A re-sent execution: our ack was lost.
            let next = if p.last { None } else { p.next };
            cx.send(from, Msg::Ack { txn, pos, next });
            return;
        }
        if let Some(d) = self.done.get(&txn) {
            let (commit, rec, reason) = (d.commit, d.rec.clone(), d.reason.clone());
            cx.send(
                from,
                Msg::Decide {
                    txn,
                    commit,
                    rec,
                    reason: Some(reason),
                },
            );
            return;
        }
        if self.forgot(ts) {
            return; // may have run it before the crash: stay silent, the sender times out
        }
        if !self.syncing.is_empty() {
            self.abort_new(txn, &chain, "server re-syncing after a restart", cx);
            return;
        }
        // Unmarshalling the shipped transaction.
        let bytes: usize = exec
            .reads()
            .iter()
            .map(|(k, v)| k.len() + v.as_ref().map_or(0, |v| v.0.len()))
            .sum::<usize>()
            + exec
                .call
                .args
                .iter()
                .map(|a| match a {
                    meridian_txn::Arg::Bytes(b) => b.len(),
                    _ => 8,
                })
                .sum::<usize>();
        cx.charge_ops(bytes.div_ceil(1024) as u32);
        chain.push(Hop {
            node: self.me,
            replicas: vec![],
        });
        let mut part = Part {
            ts,
            pos,
            phase: Phase::Executed,
            chain,
            next: None,
            last: false,
            after_next: None,
            acked: false,
            prev_precommit: false,
            notifies_needed: notifies,
            notifies: self.early_notifies.remove(&(txn, pos)).map(|e| e.1).unwrap_or_default(),
            deps: BTreeSet::new(),
            puts: vec![],
            forward: None,
            replicate: vec![],
            poked: cx.now(),
            rec: None,
            since: cx.now(),
            heard_next: cx.now(),
        };
        // Read timestamps set before the crash are lost: refuse writes below it.
        let floor = self.forgot_before * TS_SCALE;
        // Run every state this server can serve.
        let outcome: Result<Option<NodeId>, String> = loop {
            let (step, ws) = match exec.step_ops(&self.env.registry) {
                Ok(s) => s,
                Err(e) => break Err(e.to_string()),
            };
            let mut moved = None;
            let mut refused = None;
            while (writes_done as usize) < ws.len() {
                let (key, value) = ws[writes_done as usize].clone();
                let owner = self.primary_of(&key);
                if owner != self.me {
                    moved = Some(owner);
                    break;
                }
                let id = VersionId { txn, seq: writes_done };
                if let Err(why) = self.put(ts, floor, &key, id, &value, &mut part) {
                    refused = Some(why);
                    break;
                }
                cx.charge_ops(1);
                writes.push(WriteRec { key, version: id });
                writes_done += 1;
            }
            if let Some(owner) = moved {
                break Ok(Some(owner));
            }
            if let Some(why) = refused {
                break Err(why);
            }
            match step {
                Step::Read(key) => {
                    let owner = self.primary_of(&key);
                    if owner != self.me {
                        break Ok(Some(owner));
                    }
                    let r = self.store.mvto_read(&key, ts, true);
                    cx.charge_ops(1);
                    if r.tentative {
                        if let Some(v) = r.version {
                            part.deps.insert(v.txn);
                            self.readers.entry(v.txn).or_default().push((txn, pos));
                        }
                    }
                    reads.push(ReadRec {
                        key: key.clone(),
                        version: r.version,
                    });
                    exec.supply(key, r.value);
                }
                Step::Done { .. } => break Ok(None),
                Step::Abort(reason) => break Err(format!("user abort: {reason}")),
                Step::Wait { .. } => break Err(crate::client::NOT_INTERACTIVE.into()),
            }
        };
        let rec_so_far = Rec { reads, writes };
        match outcome {
            Err(reason) => {
                // Abort here: nothing was forwarded.
                let chain = part.chain.clone();
                for (k, v, _) in std::mem::take(&mut part.puts) {
                    self.store.abort_tentative(&k, v);
                }
                self.unlink_deps(txn, pos, &part.deps);
                self.tell_abort_backward(txn, &chain, pos - 1, &reason, cx);
                self.decided(txn, false, None, reason, false, cx);
            }
            Ok(next) => {
                let prev = part.chain[pos as usize - 1].node;
                // Replicate this position's puts.
                let target = next.unwrap_or(self.me);
                let mut by_replica: BTreeMap<NodeId, Vec<(Key, VersionId, Value)>> = BTreeMap::new();
                for (k, v, val) in &part.puts {
                    let s = self.env.layout.shard_of(k);
                    for r in self.env.layout.replicas(s).iter().filter(|r| **r != self.me) {
                        by_replica.entry(*r).or_default().push((k.clone(), *v, val.clone()));
                    }
                }
                let replicas: Vec<NodeId> = by_replica.keys().copied().collect();
                part.chain[pos as usize].replicas = replicas.clone();
                let chain_nodes: Vec<NodeId> = part.chain.iter().map(|h| h.node).collect();
                for (r, puts) in by_replica {
                    let m = Msg::Replicate {
                        txn,
                        ts,
                        puts,
                        notify: target,
                        pos: if next.is_some() { pos + 1 } else { pos },
                        chain: chain_nodes.clone(),
                    };
                    cx.send(r, m.clone());
                    part.replicate.push((r, m));
                }
                match next {
                    Some(n) => {
                        part.next = Some(n);
                        let fwd = Msg::Exec {
                            txn,
                            ts,
                            exec,
                            writes_done,
                            reads: rec_so_far.reads,
                            writes: rec_so_far.writes,
                            chain: part.chain.clone(),
                            notifies: replicas.len() as u32,
                        };
                        cx.send(n, fwd.clone());
                        part.forward = Some(fwd);
                    }
                    None => {
                        part.last = true;
                        part.acked = true;
                        part.notifies_needed += replicas.len() as u32;
                        part.rec = Some(Arc::new(rec_so_far));
                    }
                }
                cx.send(
                    prev,
                    Msg::Ack {
                        txn,
                        pos,
                        next: part.next.filter(|_| !part.last),
                    },
                );
                self.parts.insert((txn, pos), part);
                self.try_precommit(txn, pos, cx);
            }
        }
    }

    /// One MVTO put of this transaction (replacing its own earlier put of the key).
    #[allow(clippy::too_many_arguments)]
    fn put(
        &mut self,
        ts: u64,
        floor: u64,
        key: &Key,
        id: VersionId,
        value: &Value,
        part: &mut Part,
    ) -> Result<(), String> {
        if ts < floor {
            return Err("mvto: write below the restart time of the server".into());
        }
        if let Some(i) = part.puts.iter().position(|(k, _, _)| k == key) {
            let old = part.puts[i].1;
            let read_since = self.store.versions(key).iter().any(|v| v.id == old && v.rts > ts);
            if read_since {
                return Err("mvto: a later transaction read this transaction's earlier write".into());
            }
            self.store.abort_tentative(key, old);
            part.puts.remove(i);
        }
        if !self.store.mvto_can_write(key, ts) {
            return Err("mvto: write arrives after a later read".into());
        }
        self.store.write_tentative(key, id, value.clone(), ts);
        part.puts.push((key.clone(), id, value.clone()));
        Ok(())
    }

    /// A transaction this server never ran: refuse it and tell the chain so far.
    fn abort_new(&mut self, txn: TxnId, chain: &[Hop], reason: &str, cx: &mut Ctx<'_, Msg>) {
        let pos = chain.len() as u32;
        self.record_done(txn, false, None, reason.to_string(), cx);
        self.tell_abort_backward(txn, chain, pos, reason, cx);
    }

    /// Tells positions `0..pos` (and their replicas) that the transaction aborted.
    fn tell_abort_backward(&mut self, txn: TxnId, chain: &[Hop], pos: u32, reason: &str, cx: &mut Ctx<'_, Msg>) {
        let upto = chain.len().min(pos as usize + 1);
        for n in self.others_of(&chain[..upto]) {
            cx.send(
                n,
                Msg::Decide {
                    txn,
                    commit: false,
                    rec: None,
                    reason: Some(reason.to_string()),
                },
            );
        }
    }

    /// Every node of these positions and their replicas, but this server.
    fn others_of(&self, hops: &[Hop]) -> BTreeSet<NodeId> {
        let mut to: BTreeSet<NodeId> = hops
            .iter()
            .flat_map(|h| std::iter::once(h.node).chain(h.replicas.iter().copied()))
            .collect();
        to.remove(&self.me);
        to
    }

    fn unlink_deps(&mut self, txn: TxnId, pos: u32, deps: &BTreeSet<TxnId>) {
        for w in deps {
            if let Some(rs) = self.readers.get_mut(w) {
                rs.retain(|r| *r != (txn, pos));
                if rs.is_empty() {
                    self.readers.remove(w);
                }
            }
        }
    }

    /// Sends the precommit (or, at the last position, starts Paxos commit) when every
    /// condition holds.
    fn try_precommit(&mut self, txn: TxnId, pos: u32, cx: &mut Ctx<'_, Msg>) {
        let Some(p) = self.parts.get_mut(&(txn, pos)) else {
            return;
        };
        if p.phase != Phase::Executed
            || !p.acked
            || !p.prev_precommit
            || (p.notifies.len() as u32) < p.notifies_needed
            || !p.deps.is_empty()
        {
            return;
        }
        p.phase = Phase::Precommitted;
        p.heard_next = cx.now();
        if !p.last {
            let next = p.next.expect("acked position has a successor");
            cx.send(next, Msg::Precommit { txn, pos: pos + 1 });
            return;
        }
        // The final coordinator: Paxos commit with two transaction replicas.
        let decision = Decision {
            commit: true,
            rec: p.rec.clone(),
            chain: p.chain.clone(),
        };
        let ts = p.ts;
        let acceptors = self.acceptor_set();
        let mut prop = Proposer {
            ts,
            ballot: 0,
            acceptors,
            promises: BTreeMap::new(),
            value: Some(decision.clone()),
            accepted: BTreeSet::new(),
            waiters: BTreeSet::new(),
            since: cx.now(),
        };
        // Accept locally first (the final server is one of the three acceptors).
        if self.accept(txn, ts, 0, &decision, cx.now()) {
            prop.accepted.insert(self.me);
        }
        for a in acceptors.iter().filter(|a| **a != self.me) {
            cx.send(
                *a,
                Msg::Accept {
                    txn,
                    ts,
                    ballot: 0,
                    decision: decision.clone(),
                },
            );
        }
        self.proposers.insert(txn, prop);
    }

    fn acceptor_set(&self) -> [NodeId; 3] {
        let [a, b] = txn_replicas(&self.env.layout, self.me);
        [self.me, a, b]
    }

    // ----- acceptor ------------------------------------------------------------

    fn acceptor(&mut self, txn: TxnId, now: Time) -> &mut Acceptor {
        self.acceptors.entry(txn).or_insert(Acceptor {
            promised: 0,
            accepted: None,
            since: now,
        })
    }

    /// Accepts `decision` at `ballot` if allowed; returns whether it did.
    fn accept(&mut self, txn: TxnId, ts: u64, ballot: Ballot, decision: &Decision, now: Time) -> bool {
        if !self.may_accept_ballot(ts, ballot) || !self.syncing.is_empty() {
            return false;
        }
        let a = self.acceptor(txn, now);
        if ballot < a.promised {
            return false;
        }
        a.promised = ballot;
        a.accepted = Some((ballot, decision.clone()));
        true
    }

    fn on_accept(
        &mut self,
        from: NodeId,
        txn: TxnId,
        ts: u64,
        ballot: Ballot,
        decision: Decision,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let ok = self.accept(txn, ts, ballot, &decision, cx.now());
        cx.send(from, Msg::Accepted { txn, ballot, ok });
    }

    fn on_prepare(&mut self, from: NodeId, txn: TxnId, ts: u64, ballot: Ballot, cx: &mut Ctx<'_, Msg>) {
        // Silent for a transaction that began before our crash: we may have accepted a
        // decision for it and forgotten it, and a promise saying "nothing accepted"
        // would count as one of the majority that lets recovery pick ABORT over a
        // COMMIT already chosen (by the final server, before it crashed, and one
        // replica). Restarted servers re-sync data, not acceptor state, so a
        // forgetful acceptor is an absent one in phase 1; it may still accept a
        // later ballot in phase 2 (see `may_accept_ballot`).
        if self.forgot(ts) || !self.may_accept_ballot(ts, ballot) || !self.syncing.is_empty() {
            return;
        }
        let a = self.acceptor(txn, cx.now());
        let ok = ballot > a.promised;
        if ok {
            a.promised = ballot;
        }
        let accepted = a.accepted.clone();
        cx.send(
            from,
            Msg::Promise {
                txn,
                ballot,
                ok,
                accepted,
            },
        );
    }

    // ----- proposer ------------------------------------------------------------

    fn on_accepted(&mut self, from: NodeId, txn: TxnId, ballot: Ballot, ok: bool, cx: &mut Ctx<'_, Msg>) {
        let Some(p) = self.proposers.get_mut(&txn) else {
            return;
        };
        if p.ballot != ballot {
            return;
        }
        if !ok {
            // A recovery holds a higher ballot (or an acceptor restarted): stop
            // proposing; the outcome is asked for (the last server) or retried (a
            // recovering replica, when asked again, after a back-off).
            self.proposers.remove(&txn);
            if ballot != 0 {
                self.back_off(txn, cx);
            }
            return;
        }
        p.accepted.insert(from);
        if p.accepted.len() >= 2 {
            let p = self.proposers.remove(&txn).expect("present");
            let d = p.value.expect("phase 2 has a value");
            let reason = if d.commit {
                String::new()
            } else {
                "recovery: no commit was accepted".to_string()
            };
            for w in &p.waiters {
                cx.send(
                    *w,
                    Msg::StatusReply {
                        txn,
                        pos: 0,
                        status: if d.commit {
                            Status::Committed(d.rec.clone())
                        } else {
                            Status::Aborted(reason.clone())
                        },
                    },
                );
            }
            self.decided(txn, d.commit, d.rec.clone(), reason.clone(), false, cx);
            self.broadcast(txn, &d, &reason, cx);
        }
    }

    /// Tells every position and replica of a chain (and the client) the outcome.
    fn broadcast(&mut self, txn: TxnId, d: &Decision, reason: &str, cx: &mut Ctx<'_, Msg>) {
        let mut to = self.others_of(&d.chain);
        if let Some(last) = d.chain.last() {
            if self.env.layout.is_server(last.node) {
                to.extend(txn_replicas(&self.env.layout, last.node));
            }
        }
        to.remove(&self.me);
        for n in to {
            cx.send(
                n,
                Msg::Decide {
                    txn,
                    commit: d.commit,
                    rec: d.rec.clone(),
                    reason: (!d.commit).then(|| reason.to_string()),
                },
            );
        }
    }

    /// A recovery of `txn` lost to a higher ballot: wait `query` plus a random part of
    /// it before starting another. Askers re-ask every sweep, faster than a WAN round
    /// trip, so without it two transaction replicas asked to recover the same
    /// transaction pre-empt each other's phase 2 forever.
    fn back_off(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let q = self.env.timeouts.query;
        let until = cx.now() + q + cx.rng().gen_range(0..q.max(1));
        self.backoff.insert(txn, until);
    }

    /// Starts (or joins) recovery of `txn` as a transaction replica.
    fn recover(&mut self, asker: NodeId, txn: TxnId, ts: u64, final_server: NodeId, cx: &mut Ctx<'_, Msg>) {
        if let Some(p) = self.proposers.get_mut(&txn) {
            p.waiters.insert(asker);
            return;
        }
        if self.backoff.get(&txn).is_some_and(|until| cx.now() < *until) {
            return; // the asker asks again
        }
        let [a, b] = txn_replicas(&self.env.layout, final_server);
        let round = cx.now() / 1_000_000 + 1;
        let ballot = (round << 20) | (self.me.0 as u64 + 1);
        let p = Proposer {
            ts,
            ballot,
            acceptors: [final_server, a, b],
            promises: BTreeMap::new(),
            value: None,
            accepted: BTreeSet::new(),
            waiters: BTreeSet::from([asker]),
            since: cx.now(),
        };
        for n in p.acceptors {
            cx.send(n, Msg::Prepare { txn, ts, ballot });
        }
        self.proposers.insert(txn, p);
    }

    fn on_promise(
        &mut self,
        from: NodeId,
        txn: TxnId,
        ballot: Ballot,
        ok: bool,
        accepted: Option<(Ballot, Decision)>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(p) = self.proposers.get_mut(&txn) else {
            return;
        };
        if p.ballot != ballot || p.value.is_some() {
            return;
        }
        if !ok {
            // Someone holds a higher ballot: retry later with a higher one.
            let waiters = std::mem::take(&mut p.waiters);
            self.proposers.remove(&txn);
            self.back_off(txn, cx);
            for w in waiters {
                cx.send(
                    w,
                    Msg::StatusReply {
                        txn,
                        pos: 0,
                        status: Status::Pending,
                    },
                );
            }
            return;
        }
        p.promises.insert(from, accepted);
        if p.promises.len() < 2 {
            return;
        }
        let best = p
            .promises
            .values()
            .flatten()
            .max_by_key(|(b, _)| *b)
            .map(|(_, d)| d.clone());
        let value = best.unwrap_or(Decision {
            commit: false,
            rec: None,
            chain: vec![],
        });
        p.value = Some(value.clone());
        let (ts, acceptors) = (p.ts, p.acceptors);
        for n in acceptors {
            cx.send(
                n,
                Msg::Accept {
                    txn,
                    ts,
                    ballot,
                    decision: value.clone(),
                },
            );
        }
    }

    // ----- outcomes ------------------------------------------------------------

    fn record_done(&mut self, txn: TxnId, commit: bool, rec: Option<Arc<Rec>>, reason: String, cx: &mut Ctx<'_, Msg>) {
        if let Some(prev) = self.applied.get(&txn) {
            if *prev != commit {
                self.contradicted.push((txn, commit));
            }
        } else {
            self.applied.insert(txn, commit);
        }
        let e = self.done.entry(txn).or_insert(Done {
            commit,
            rec: None,
            reason: reason.clone(),
            at: cx.now(),
        });
        if e.rec.is_none() {
            e.rec = rec;
        }
    }

    /// Applies an outcome at this server: every position, replica copy and orphan.
    /// Aborted positions that forwarded pass a `ForwardAbort` on; with `push` (the
    /// outcome was learned off the broadcast path) each position also tells its
    /// predecessor and its replicas.
    fn decided(
        &mut self,
        txn: TxnId,
        commit: bool,
        rec: Option<Arc<Rec>>,
        reason: String,
        push: bool,
        cx: &mut Ctx<'_, Msg>,
    ) {
        // Idempotent: whatever is still held for the transaction here is resolved.
        self.record_done(txn, commit, rec, reason.clone(), cx);
        let positions: Vec<u32> = self.parts.keys().filter(|(t, _)| *t == txn).map(|(_, p)| *p).collect();
        let rec = self.done.get(&txn).and_then(|d| d.rec.clone());
        for pos in positions {
            let p = self.parts.remove(&(txn, pos)).expect("listed");
            for (k, v, _) in &p.puts {
                if commit {
                    self.store.commit_tentative(k, *v);
                } else {
                    self.store.abort_tentative(k, *v);
                }
            }
            self.unlink_deps(txn, pos, &p.deps);
            if let Some(next) = p.next.filter(|_| !commit && p.phase == Phase::Executed) {
                cx.send(
                    next,
                    Msg::ForwardAbort {
                        txn,
                        pos: pos + 1,
                        reason: reason.clone(),
                    },
                );
            }
            if !push {
                continue;
            }
            // Pass the outcome to our replicas and our predecessor (it may be waiting).
            let mut to: Vec<NodeId> = p.chain[pos as usize].replicas.clone();
            to.push(p.chain[pos as usize - 1].node);
            for n in to {
                cx.send(
                    n,
                    Msg::Decide {
                        txn,
                        commit,
                        rec: rec.clone(),
                        reason: (!commit).then(|| reason.clone()),
                    },
                );
            }
        }
        if let Some(b) = self.backups.remove(&txn) {
            for (k, v) in b.puts {
                if commit {
                    self.store.commit_tentative(&k, v);
                } else {
                    self.store.abort_tentative(&k, v);
                }
            }
        }
        if let Some(o) = self.orphans.remove(&txn) {
            for (k, v) in o.puts {
                if commit {
                    self.store.commit_tentative(&k, v);
                } else {
                    self.store.abort_tentative(&k, v);
                }
            }
        }
        if commit {
            self.release_readers(txn, cx);
        } else {
            self.cascade(txn, cx);
        }
    }

    /// The writer committed here: its readers no longer depend on it.
    fn release_readers(&mut self, writer: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(rs) = self.readers.remove(&writer) else {
            return;
        };
        for (t, pos) in rs {
            if let Some(p) = self.parts.get_mut(&(t, pos)) {
                p.deps.remove(&writer);
                self.try_precommit(t, pos, cx);
            }
        }
    }

    /// The writer aborted here: every position that read its versions aborts.
    fn cascade(&mut self, writer: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(rs) = self.readers.remove(&writer) else {
            return;
        };
        for (t, pos) in rs {
            if self.parts.get(&(t, pos)).is_some_and(|p| p.phase == Phase::Executed) {
                // One reason string per cause (reports group aborts by reason).
                let why = "cascading abort: read an uncommitted write that aborted";
                self.abort_here(t, pos, why, cx);
            }
        }
    }

    /// Aborts a transaction at a position that has not precommitted.
    fn abort_here(&mut self, txn: TxnId, pos: u32, reason: &str, cx: &mut Ctx<'_, Msg>) {
        let Some(p) = self.parts.get(&(txn, pos)) else {
            return;
        };
        debug_assert_eq!(p.phase, Phase::Executed);
        let chain = p.chain.clone();
        self.tell_abort_backward(txn, &chain, pos, reason, cx);
        self.decided(txn, false, None, reason.to_string(), false, cx);
    }

    // ----- PLC messages --------------------------------------------------------

    fn on_ack(&mut self, from: NodeId, txn: TxnId, pos: u32, next: Option<NodeId>, cx: &mut Ctx<'_, Msg>) {
        if pos == 0 {
            return;
        }
        let Some(p) = self.parts.get_mut(&(txn, pos - 1)) else {
            return;
        };
        if p.next != Some(from) {
            return;
        }
        p.acked = true;
        p.after_next = Some(next);
        p.forward = None;
        p.heard_next = cx.now();
        self.try_precommit(txn, pos - 1, cx);
    }

    fn on_precommit(&mut self, txn: TxnId, pos: u32, cx: &mut Ctx<'_, Msg>) {
        match self.parts.get_mut(&(txn, pos)) {
            Some(p) => {
                p.prev_precommit = true;
                self.try_precommit(txn, pos, cx);
            }
            None => {
                // Already decided here: the sender is waiting for the outcome.
            }
        }
    }

    fn on_forward_abort(&mut self, txn: TxnId, pos: u32, reason: String, cx: &mut Ctx<'_, Msg>) {
        match self.parts.get(&(txn, pos)) {
            Some(p) if p.phase == Phase::Executed => self.decided(txn, false, None, reason, true, cx),
            Some(_) => {} // precommitted: cannot be (an earlier position would have had to precommit)
            None => {
                if !self.done.contains_key(&txn) {
                    // Arrived before the execution: remember, so it is refused.
                    self.record_done(txn, false, None, reason, cx);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_replicate(
        &mut self,
        from: NodeId,
        txn: TxnId,
        ts: u64,
        puts: Vec<(Key, VersionId, Value)>,
        notify: NodeId,
        pos: u32,
        chain: Vec<NodeId>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if let Some(d) = self.done.get(&txn) {
            if d.commit {
                // Late copy of a committed transaction's puts: install them.
                for (k, v, val) in puts {
                    if !self.store.contains(&k, v) {
                        self.store.install(&k, v, val, ts);
                    }
                }
            }
            cx.send(notify, Msg::Notify { txn, pos });
            return;
        }
        if self.forgot(ts) || !self.syncing.is_empty() {
            return;
        }
        let b = self.backups.entry(txn).or_insert(Backup {
            ts,
            primary: from,
            notify,
            chain,
            puts: vec![],
            since: cx.now(),
            primary_forgot: false,
        });
        for (k, v, val) in puts {
            if !b.puts.iter().any(|(k2, v2)| *k2 == k && *v2 == v) {
                // The primary replaced an earlier put of this key: so does the copy.
                if let Some(i) = b.puts.iter().position(|(k2, _)| *k2 == k) {
                    let (k2, v2) = b.puts.remove(i);
                    self.store.abort_tentative(&k2, v2);
                }
                self.store.write_tentative(&k, v, val, ts);
                b.puts.push((k, v));
            }
        }
        cx.charge_ops(b.puts.len() as u32);
        cx.send(notify, Msg::Notify { txn, pos });
    }

    fn on_notify(&mut self, from: NodeId, txn: TxnId, pos: u32, cx: &mut Ctx<'_, Msg>) {
        if let Some(p) = self.parts.get_mut(&(txn, pos)) {
            p.notifies.insert(from);
            self.try_precommit(txn, pos, cx);
        } else if !self.done.contains_key(&txn) {
            let e = self
                .early_notifies
                .entry((txn, pos))
                .or_insert((cx.now(), BTreeSet::new()));
            e.1.insert(from);
        }
    }

    fn on_decide(
        &mut self,
        txn: TxnId,
        commit: bool,
        rec: Option<Arc<Rec>>,
        reason: Option<String>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        self.decided(txn, commit, rec, reason.unwrap_or_default(), false, cx);
    }

    #[allow(clippy::too_many_arguments)]
    fn on_query(&mut self, from: NodeId, txn: TxnId, ts: u64, pos: u32, kill: bool, cx: &mut Ctx<'_, Msg>) {
        let status = if let Some(d) = self.done.get(&txn) {
            if d.commit {
                Status::Committed(d.rec.clone())
            } else {
                Status::Aborted(d.reason.clone())
            }
        } else {
            let mine: Vec<(u32, Phase)> = self
                .parts
                .iter()
                .filter(|((t, p), _)| *t == txn && (pos == 0 || *p == pos))
                .map(|(_, p)| (p.pos, p.phase))
                .collect();
            if mine.iter().any(|(_, ph)| *ph == Phase::Precommitted) {
                Status::Pending
            } else if let Some((p, _)) = mine.first() {
                if kill {
                    let why = "aborted on a query: the position had not precommitted";
                    self.abort_here(txn, *p, why, cx);
                    Status::Aborted(why.into())
                } else {
                    Status::Pending
                }
            } else if self.forgot(ts) || !self.syncing.is_empty() || !kill {
                Status::Unknown
            } else {
                // Never reached here: refuse it from now on.
                let why = "aborted on a query: the position never received the transaction".to_string();
                self.record_done(txn, false, None, why.clone(), cx);
                Status::Aborted(why)
            }
        };
        cx.send(from, Msg::StatusReply { txn, pos, status });
    }

    fn on_recover_req(&mut self, from: NodeId, txn: TxnId, ts: u64, last: NodeId, cx: &mut Ctx<'_, Msg>) {
        match self.done.get(&txn) {
            Some(d) => {
                let status = if d.commit {
                    Status::Committed(d.rec.clone())
                } else {
                    Status::Aborted(d.reason.clone())
                };
                cx.send(from, Msg::StatusReply { txn, pos: 0, status });
            }
            None => self.recover(from, txn, ts, last, cx),
        }
    }

    fn on_status(&mut self, from: NodeId, txn: TxnId, asked: u32, status: Status, cx: &mut Ctx<'_, Msg>) {
        match status {
            Status::Committed(rec) => self.decided(txn, true, rec, String::new(), true, cx),
            Status::Aborted(r) => self.decided(txn, false, None, r, true, cx),
            Status::Pending => {
                // The chain after a position is alive if its successor (or the one
                // after) says so about that very position; other answers do not count:
                // our own as a replica, or a server that also holds an earlier position
                // of the same chain (still precommitted there) answering a question about
                // another one.
                let now = cx.now();
                for ((t, pos), p) in self.parts.iter_mut() {
                    let successor = p.next == Some(from) && asked == pos + 1;
                    let after = p.after_next == Some(Some(from)) && asked == pos + 2;
                    if *t == txn && (successor || after) {
                        p.heard_next = now;
                    }
                }
            }
            Status::Unknown => {
                if let Some(b) = self.backups.get_mut(&txn) {
                    if b.primary == from {
                        b.primary_forgot = true;
                    }
                }
            }
        }
    }

    // ----- re-sync after a restart ----------------------------------------------

    fn partners(&self) -> BTreeSet<NodeId> {
        partners_of(&self.env.layout, self.me)
    }

    fn on_sync_req(&mut self, from: NodeId, cx: &mut Ctx<'_, Msg>) {
        if !self.syncing.is_empty() {
            return; // nothing trustworthy to give
        }
        let shared: HashSet<u32> = self
            .env
            .layout
            .shards_of(self.me)
            .into_iter()
            .filter(|s| self.env.layout.replicas(*s).contains(&from))
            .map(|s| s.0)
            .collect();
        let mut versions = vec![];
        for (k, vs) in self.store.iter() {
            if shared.contains(&self.env.layout.shard_of(k).0) {
                for v in vs {
                    versions.push((k.clone(), v.id, v.value.clone(), v.wts, v.tentative));
                }
            }
        }
        cx.charge_ops(versions.len() as u32);
        let mut askers: BTreeMap<TxnId, (BTreeSet<NodeId>, Option<NodeId>)> = BTreeMap::new();
        for (_, id, _, _, tentative) in &versions {
            if *tentative {
                let e = askers.entry(id.txn).or_default();
                e.0.insert(self.me);
                if let Some(b) = self.backups.get(&id.txn) {
                    e.0.extend(b.chain.iter().copied());
                    e.0.insert(b.notify);
                    if b.notify == b.primary {
                        e.1 = Some(b.primary);
                    }
                }
                for ((t, _), p) in &self.parts {
                    if *t == id.txn {
                        e.0.extend(p.chain.iter().map(|h| h.node));
                        e.0.extend(p.next);
                        if p.last {
                            e.1 = Some(self.me);
                        }
                    }
                }
            }
        }
        let askers = askers
            .into_iter()
            .map(|(t, (n, last))| (t, n.into_iter().collect(), last))
            .collect();
        cx.send(from, Msg::SyncState { versions, askers });
    }

    fn on_sync_state(
        &mut self,
        from: NodeId,
        versions: Vec<(Key, VersionId, Value, u64, bool)>,
        askers: Vec<(TxnId, Vec<NodeId>, Option<NodeId>)>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if !self.syncing.remove(&from) {
            return;
        }
        let askers: HashMap<TxnId, (Vec<NodeId>, Option<NodeId>)> =
            askers.into_iter().map(|(t, n, l)| (t, (n, l))).collect();
        for (k, id, val, wts, tentative) in versions {
            if self.store.contains(&k, id) {
                continue;
            }
            if tentative {
                if let Some(d) = self.done.get(&id.txn) {
                    if d.commit {
                        self.store.install(&k, id, val, wts);
                    }
                    continue;
                }
                self.store.write_tentative(&k, id, val, wts);
                let (ask, last) = askers.get(&id.txn).cloned().unwrap_or_else(|| (vec![from], None));
                let e = self.orphans.entry(id.txn).or_insert(Orphan {
                    ts: wts,
                    puts: vec![],
                    since: cx.now(),
                    ask,
                    last,
                });
                e.puts.push((k, id));
            } else {
                self.store.install(&k, id, val, wts);
            }
        }
    }

    // ----- housekeeping ------------------------------------------------------------

    fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let t = self.env.timeouts.clone();
        // The watermark covers the next period (one small durable write per sweep).
        self.alive_until = now + 2 * t.sweep;
        cx.charge_log_append(8);
        if !self.syncing.is_empty() {
            for n in self.syncing.clone() {
                cx.send(n, Msg::SyncReq);
            }
        }
        self.early_notifies
            .retain(|_, (at, _)| now.saturating_sub(*at) < t.idle);
        // Positions.
        let keys: Vec<(TxnId, u32)> = self.parts.keys().copied().collect();
        for (txn, pos) in keys {
            let Some(p) = self.parts.get_mut(&(txn, pos)) else {
                continue;
            };
            match p.phase {
                Phase::Executed => {
                    if now.saturating_sub(p.since) >= t.vote {
                        self.abort_here(txn, pos, "pipelined commit timed out before precommit", cx);
                        continue;
                    }
                    if now.saturating_sub(p.poked) < t.query {
                        continue;
                    }
                    p.poked = now;
                    if let Some(f) = p.forward.clone() {
                        cx.send(p.next.expect("forwarded"), f);
                    }
                    for (r, m) in &p.replicate {
                        cx.send(*r, m.clone());
                    }
                }
                Phase::Precommitted => {
                    if now.saturating_sub(p.poked) < t.query {
                        continue;
                    }
                    p.poked = now;
                    for (r, m) in &p.replicate {
                        cx.send(*r, m.clone());
                    }
                    let ts = p.ts;
                    if p.last {
                        if !self.proposers.contains_key(&txn) {
                            // Our ballot-0 proposal was refused: a recovery decides.
                            for r in txn_replicas(&self.env.layout, self.me) {
                                cx.send(r, Msg::Recover { txn, ts, last: self.me });
                            }
                        }
                        continue;
                    }
                    let next = p.next.expect("precommitted has a successor");
                    cx.send(next, Msg::Precommit { txn, pos: pos + 1 });
                    cx.send(
                        next,
                        Msg::Query {
                            txn,
                            ts,
                            pos: pos + 1,
                            kill: false,
                        },
                    );
                    if now.saturating_sub(p.heard_next) >= 2 * t.query {
                        // The successor left a query unanswered for a whole period:
                        // it is silent, ask the position after it (§4.1).
                        match p.after_next {
                            Some(Some(n2)) => cx.send(
                                n2,
                                Msg::Query {
                                    txn,
                                    ts,
                                    pos: pos + 2,
                                    kill: true,
                                },
                            ),
                            Some(None) => {
                                for r in txn_replicas(&self.env.layout, next) {
                                    cx.send(r, Msg::Recover { txn, ts, last: next });
                                }
                            }
                            None => {}
                        }
                    }
                }
            }
        }
        // Proposers: re-send the current phase.
        for (txn, p) in self.proposers.iter_mut() {
            if now.saturating_sub(p.since) < t.query {
                continue;
            }
            p.since = now;
            match &p.value {
                Some(v) => {
                    for a in p.acceptors.iter().filter(|a| !p.accepted.contains(a)) {
                        cx.send(
                            *a,
                            Msg::Accept {
                                txn: *txn,
                                ts: p.ts,
                                ballot: p.ballot,
                                decision: v.clone(),
                            },
                        );
                    }
                }
                None => {
                    for a in p.acceptors.iter().filter(|a| !p.promises.contains_key(a)) {
                        cx.send(
                            *a,
                            Msg::Prepare {
                                txn: *txn,
                                ts: p.ts,
                                ballot: p.ballot,
                            },
                        );
                    }
                }
            }
        }
        // Replica copies and orphans whose outcome has not arrived: ask the primary,
        // the next position and every node of the chain (one of them decided it, or
        // heard the outcome, unless a failure took more than one of them).
        // When the primary was the last server and has forgotten the transaction (it
        // restarted), its transaction replicas resolve the outcome by recovery; while
        // it remembers, it decides (recovery would only race its proposal).
        // When the primary has forgotten the transaction and was not the last server,
        // the transaction can only have committed if the next position precommitted:
        // once a vote timeout has passed, that position is asked to abort it if it has
        // not (the paper's query to position i+2 when i+1 is silent, §3.3). Otherwise
        // nobody may be left to decide: the client may have crashed too, and the next
        // position may never have received the transaction.
        // (transaction, timestamp, whom to ask, last server to recover at, whom to ask
        // to abort).
        type Ask = (TxnId, u64, BTreeSet<NodeId>, Option<NodeId>, Option<NodeId>);
        let mut asks: Vec<Ask> = vec![];
        for (txn, b) in &self.backups {
            if now.saturating_sub(b.since) >= t.query {
                let mut to: BTreeSet<NodeId> = b.chain.iter().copied().collect();
                to.insert(b.primary);
                to.insert(b.notify);
                let last = (b.notify == b.primary && b.primary_forgot).then_some(b.primary);
                let kill = (b.notify != b.primary && b.primary_forgot && now.saturating_sub(b.since) >= t.vote)
                    .then_some(b.notify);
                asks.push((*txn, b.ts, to, last, kill));
            }
        }
        for (txn, o) in &self.orphans {
            if now.saturating_sub(o.since) >= t.query {
                let last = o.last.filter(|l| *l == self.me);
                asks.push((*txn, o.ts, o.ask.iter().copied().collect(), last, None));
            }
        }
        for (txn, ts, mut to, last, kill) in asks {
            if let Some(last) = last {
                if now.saturating_sub(self.restarted_at.unwrap_or(0)) >= t.query {
                    for r in txn_replicas(&self.env.layout, last) {
                        cx.send(r, Msg::Recover { txn, ts, last });
                    }
                }
            }
            to.remove(&self.me);
            for n in to.into_iter().filter(|n| self.env.layout.is_server(*n)) {
                cx.send(
                    n,
                    Msg::Query {
                        txn,
                        ts,
                        pos: 0,
                        kill: kill == Some(n),
                    },
                );
            }
        }
        self.backoff.retain(|_, until| now < *until);
        // Forget old outcomes and acceptor state.
        self.done.retain(|_, d| now.saturating_sub(d.at) < t.tombstone);
        self.acceptors.retain(|_, a| now.saturating_sub(a.since) < t.tombstone);
        cx.set_timer(t.sweep, T_SWEEP);
    }

    /// Keys with an uncommitted version here.
    fn pending_tentatives(&self) -> usize {
        self.store
            .iter()
            .filter(|(_, vs)| vs.iter().any(|v| v.tentative))
            .count()
    }
}

impl Actor for Server {
    type Msg = Msg;

    fn on_start(&mut self, cx: &mut Ctx<'_, Msg>) {
        // The watermark covers this server's first period too: written before it
        // handles anything, not at the first sweep, or a crash before that sweep (at
        // start, or soon after a restart) would leave a watermark that claims nothing
        // was seen since (an older) one.
        self.alive_until = cx.now() + 2 * self.env.timeouts.sweep;
        cx.charge_log_sync(8);
        cx.set_timer(self.env.timeouts.sweep, T_SWEEP);
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Exec {
                txn,
                ts,
                exec,
                writes_done,
                reads,
                writes,
                chain,
                notifies,
            } => self.on_exec(from, txn, ts, exec, writes_done, reads, writes, chain, notifies, cx),
            Msg::Ack { txn, pos, next } => self.on_ack(from, txn, pos, next, cx),
            Msg::Precommit { txn, pos } => self.on_precommit(txn, pos, cx),
            Msg::ForwardAbort { txn, pos, reason } => self.on_forward_abort(txn, pos, reason, cx),
            Msg::Replicate {
                txn,
                ts,
                puts,
                notify,
                pos,
                chain,
            } => self.on_replicate(from, txn, ts, puts, notify, pos, chain, cx),
            Msg::Notify { txn, pos } => self.on_notify(from, txn, pos, cx),
            Msg::Decide {
                txn,
                commit,
                rec,
                reason,
            } => self.on_decide(txn, commit, rec, reason, cx),
            Msg::Query { txn, ts, pos, kill } => self.on_query(from, txn, ts, pos, kill, cx),
            Msg::Recover { txn, ts, last } => self.on_recover_req(from, txn, ts, last, cx),
            Msg::StatusReply { txn, pos, status } => self.on_status(from, txn, pos, status, cx),
            Msg::Accept {
                txn,
                ts,
                ballot,
                decision,
            } => self.on_accept(from, txn, ts, ballot, decision, cx),
            Msg::Accepted { txn, ballot, ok } => self.on_accepted(from, txn, ballot, ok, cx),
            Msg::Prepare { txn, ts, ballot } => self.on_prepare(from, txn, ts, ballot, cx),
            Msg::Promise {
                txn,
                ballot,
                ok,
                accepted,
            } => self.on_promise(from, txn, ballot, ok, accepted, cx),
            Msg::SyncReq => self.on_sync_req(from, cx),
            Msg::SyncState { versions, askers } => self.on_sync_state(from, versions, askers, cx),
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        if t == T_SWEEP {
            self.sweep(cx);
        }
    }

    fn on_crash(&mut self) {
        // Nothing survives but the watermark: the data lives on in the shards' other
        // replicas.
        let alive_until = self.alive_until;
        *self = Server::new(self.env.clone(), self.me);
        self.alive_until = alive_until;
    }

    fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.restarted_at = Some(cx.now());
        self.forgot_before = self.alive_until.min(cx.now());
        self.syncing = self.partners();
        for n in self.syncing.clone() {
            cx.send(n, Msg::SyncReq);
        }
        self.on_start(cx);
    }
}

impl Replica for Server {
    fn snapshot(&self) -> ReplicaSnapshot {
        ReplicaSnapshot {
            node: self.me,
            keys: self.store.snapshot(),
        }
    }
    /// Keys holding an uncommitted version (a transaction not yet resolved here).
    fn locked_keys(&self) -> Option<usize> {
        Some(self.pending_tentatives())
    }
    fn outcomes(&self) -> Option<Vec<(TxnId, bool)>> {
        let mut v: Vec<(TxnId, bool)> = self.applied.iter().map(|(t, c)| (*t, *c)).collect();
        v.extend(self.contradicted.iter().copied());
        Some(v)
    }
}

// ---------------------------------------------------------------------------------
// client

#[derive(Debug)]
struct Current {
    ts: u64,
    rec: TxnRecord,
    call: Call,
    first: NodeId,
    /// From the first server's ack: position 2 (`Some(None)`: position 1 is last).
    after_first: Option<Option<NodeId>>,
    acked: bool,
    heard: Time,
    since: Time,
}

/// A CrossStitch client: runs the start state, ships the transaction, is position 0 of
/// its chain.
#[derive(Debug)]
pub struct Client {
    env: Env,
    id: ClientId,
    dc: DcId,
    cur: Option<Current>,
}

impl Client {
    /// A client on `node`.
    pub fn new(env: Env, node: NodeId, id: ClientId) -> Self {
        let dc = env.layout.dc_of(node);
        Client { env, id, dc, cur: None }
    }

    fn exec_msg(&self, cur: &Current, me: NodeId) -> Msg {
        Msg::Exec {
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
        }
    }

    fn finish(&mut self, outcome: Outcome, rec: Option<Arc<Rec>>, reason: Option<String>, cx: &mut Ctx<'_, Msg>) {
        let Some(mut cur) = self.cur.take() else { return };
        cx.cancel_timer(T_CLIENT);
        if let Some(r) = rec {
            cur.rec.reads = r.reads.clone();
            cur.rec.writes = r.writes.clone();
        }
        crate::client::close(cur.rec, outcome, reason, cx);
    }
}

impl Actor for Client {
    type Msg = Msg;

    fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
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
                    self.tell_abort(txn, first, true, &r, cx);
                    self.finish(Outcome::Aborted, None, Some(r), cx)
                }
                Status::Pending => cur.heard = cx.now(),
                Status::Unknown => {}
            },
            _ => {}
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        if t != T_CLIENT {
            return;
        }
        let me = cx.me();
        let Some(cur) = self.cur.as_ref() else { return };
        let tm = &self.env.timeouts;
        let now = cx.now();
        let txn = cur.rec.id;
        if !cur.acked {
            if now.saturating_sub(cur.since) >= tm.vote {
                // Not precommitted: the client may abort alone.
                let first = cur.first;
                let why = "client timed out waiting for the first server";
                cx.send(
                    first,
                    Msg::ForwardAbort {
                        txn,
                        pos: 1,
                        reason: why.into(),
                    },
                );
                self.tell_abort(txn, first, false, why, cx);
                self.finish(
                    Outcome::Aborted,
                    None,
                    Some("client timed out waiting for the first server".into()),
                    cx,
                );
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
        cx.set_timer(tm.status, T_CLIENT);
    }

    fn on_crash(&mut self) {
        self.cur = None;
    }
}

impl Client {
    /// The client ends a transaction as aborted without the chain's help (its first
    /// server silent): the replicas of the first server's shards (and, with
    /// `first_too`, the first server) are told directly. Otherwise tentative puts the
    /// first server replicated before going silent wait for an outcome no one gives:
    /// the first server may restart having forgotten them, and the position after it
    /// may never have received the transaction.
    fn tell_abort(&self, txn: TxnId, first: NodeId, first_too: bool, why: &str, cx: &mut Ctx<'_, Msg>) {
        let mut to = partners_of(&self.env.layout, first);
        if first_too {
            to.insert(first);
        }
        for n in to {
            let m = Msg::Decide {
                txn,
                commit: false,
                rec: None,
                reason: Some(why.to_string()),
            };
            cx.send(n, m);
        }
    }
}

impl ClientRole for Client {
    fn submit(&mut self, txn: TxnId, call: Call, cx: &mut Ctx<'_, Msg>) {
        let rec = crate::client::new_record(txn, self.id, self.dc, &call, cx);
        let ts = cx.now() * TS_SCALE + (self.id.0 as u64 % TS_SCALE);
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
                    crate::client::close(rec, Outcome::Committed, None, cx);
                    return;
                }
            },
            Ok((Step::Abort(r), _)) => {
                crate::client::close(rec, Outcome::Aborted, Some(format!("user abort: {r}")), cx);
                return;
            }
            Ok((Step::Wait { .. }, _)) => {
                crate::client::close(rec, Outcome::Aborted, Some(crate::client::NOT_INTERACTIVE.into()), cx);
                return;
            }
            Err(e) => {
                crate::client::close(rec, Outcome::Aborted, Some(e.to_string()), cx);
                return;
            }
        };
        let first = self.env.layout.primary(self.env.layout.shard_of(&first_key));
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
        cx.set_timer(self.env.timeouts.status, T_CLIENT);
    }

    fn in_flight(&self) -> Option<TxnRecord> {
        self.cur.as_ref().map(|c| c.rec.clone())
    }
}

/// The `crossstitch` protocol.
#[derive(Clone, Copy, Debug)]
pub struct CrossStitch {
    /// Copies of each shard (primary + replicas) in its home DC: 2 in the paper.
    pub copies: u32,
}

impl Default for CrossStitch {
    fn default() -> Self {
        CrossStitch { copies: 2 }
    }
}

impl Protocol for CrossStitch {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;
    fn name(&self) -> &'static str {
        "crossstitch"
    }
    fn strict(&self) -> bool {
        false
    }
    fn placement(&self, home: HomeRule) -> Placement {
        Placement::Home { home, k: self.copies }
    }
    /// Servers forget everything but the watermark in a crash and re-sync from the
    /// shard's other copy. The paper (§4) argues liveness "in the presence of a single,
    /// silent failure" per transaction, and the commit's acceptors (last server and two
    /// transaction replicas) may be any servers: so one server at a time may be down,
    /// and a second failure must wait until the transactions the first one hit have
    /// resolved (vote and query timeouts, 4 s; counted as 5 s after the restart). Two
    /// copies of a shard share a DC, so a DC outage is beyond what either the paper or
    /// this implementation survives.
    fn fault_model(&self) -> crate::FaultModel {
        crate::FaultModel::Forgetful {
            per_group: 1,
            global: true,
            resync: meridian_core::secs(5.0),
        }
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        Server::new(env.clone(), node)
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id)
    }
}
