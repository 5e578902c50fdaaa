//! Replicated Commit (`rc`), replicated-commit.md §3.
//!
//! # The protocol
//!
//! Every DC holds every shard (placement `Full`), sharded over its servers; there are no
//! leader replicas and every server has its own lock table (policy `Takeover`: a
//! conflicting request is denied, except that an exclusive lock takes over shared ones).
//!
//! - **Reads** (§3.2.1): the client sends `Read` to the key's replica in *every* DC.
//!   Each places a shared lock and answers with its latest version (and that version's
//!   timestamp), or is denied. Once a majority of DCs granted, the client uses the most
//!   recent version; if a majority denied, the transaction aborts. Writes are buffered.
//! - **Commit** (§3.2.2, Algorithm 1): the client is the sole Paxos proposer; it appoints
//!   the shard of its first write (first read if read-only) as coordinator and sends
//!   `Accept` (the read and write sets) to that shard's server in every DC. Each
//!   coordinator runs 2PC prepare inside its DC (`Prepare` to every cohort, itself
//!   included); a cohort acquires exclusive locks, checks that its shared locks are still
//!   held, force-logs PREPARED and answers. When all cohorts prepared, the coordinator
//!   accepts (otherwise it rejects: a faulty acceptor), force-logs its vote and sends it
//!   to the client and to the coordinators of the other DCs (`Vote`). Client and
//!   coordinators are learners: a majority of accepts commits, a majority of rejects
//!   aborts. A coordinator that learns the outcome runs 2PC commit in its DC (`Commit`:
//!   install, force-log, release) — so a lock is held from prepare for one WAN trip.
//!
//! Critical path: the commit takes 2 one-way WAN trips from the client's `Accept` to its
//! decision (to the nearest majority of DCs and back), and exclusive locks are held for 1.
//!
//! # Where the paper is vague, and what this module does
//!
//! - **One version order at every replica.** A DC outside the accepting majority still
//!   has to install a committed transaction's writes, and every DC must install the
//!   versions of a key in the same order, or replicas diverge. The paper relies on "the
//!   majority quorum protocol" and reads that pick "the value with the highest
//!   timestamp" (§4.1) without saying where timestamps come from. Here the Paxos value
//!   carries a commit timestamp `ts` chosen by the client (its clock, made larger than
//!   every version it read, with the client id in the low bits so it is unique), and
//!   every replica orders a key's versions by `ts`. For that order to be one the locks
//!   agree with, a cohort's prepare also checks, besides the paper's lock rules:
//!   every read version is still the newest here (nothing newer installed since), the
//!   transaction's `ts` is above the key's newest version and above the timestamps of
//!   transactions that prepared reading it (a per-key read timestamp, kept with the
//!   store). With these rules every edge of the serialization graph goes forward in
//!   `ts` at any DC in the intersection of two majorities, so the one-copy history is
//!   serializable in `ts` order; a transaction whose timestamp arrives too late is
//!   rejected ("stale timestamp"), an abort the paper's protocol does not have.
//! - **Learners carry the value.** A coordinator's accept vote carries the Paxos value
//!   (read and write sets), so a DC that never got the client's `Accept` (lost message,
//!   client crash) can still prepare and vote, or install the writes once the outcome
//!   is known. Undecided coordinators re-send their vote to silent peers and ask for
//!   theirs; a coordinator with no vote after the vote timeout rejects.
//! - **Read-only transactions** also run the accept phase, so that their shared locks
//!   are validated at one point (otherwise a read-only transaction could see half of
//!   another's writes).
//! - **Durability.** Cohorts force PREPARED before answering and COMMITTED (with the
//!   writes) before acknowledging; coordinators force their DC's vote before sending it,
//!   so a restarted coordinator never votes twice differently. A cohort's committed
//!   store and its read timestamps are its checkpointed on-disk data (installed in the
//!   same step as the forced record, as in `twopc`). A restarted coordinator that is
//!   asked about a transaction it never voted on rejects it (it cannot have accepted).
//! - The client waits for a majority of DCs for reads and commit; a DC outage only moves
//!   the majority farther away (Fig. 10). If no majority can be reached (partition),
//!   the client keeps asking and the transaction stays undecided — never decided twice.

use crate::{ClientRole, Env, HoldStats, Protocol, Replica};
use meridian_core::{
    Actor, ClientId, Ctx, DcId, HomeRule, Key, Layout, NodeId, Outcome, Placement, ReadRec, ReplicaSnapshot, ShardId,
    Time, TimerId, TxnId, TxnRecord, Value, VersionId,
};
use meridian_storage::{Acquired, LockMode, LockTable, Log, LogRecord, MvStore, Policy};
use meridian_txn::{Arg, Call, Execution, Step};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Low bits of a commit timestamp that hold the client id (keeps timestamps unique).
const TS_CLIENT_BITS: u32 = 20;

/// The commit timestamp a client picks at time `now` after reading versions up to `max_read`.
pub fn commit_ts(now: Time, max_read: u64, client: ClientId) -> u64 {
    let base = now.max((max_read >> TS_CLIENT_BITS) + 1);
    (base << TS_CLIENT_BITS) | (client.0 as u64 & ((1 << TS_CLIENT_BITS) - 1))
}

/// The §4.3 crossover: the number of reads per transaction at which Replicated Commit
/// and Replicated Log take equally long, given the mean latency of one read (`tr_*`) and
/// of the commit (`tc_*`) under each. Solving `tr_rc·N + tc_rc = tr_rl·N + tc_rl` gives
/// `N = (tc_rl − tc_rc) / (tr_rc − tr_rl)`. With `tr_rl = (1 − 1/N_dc)·RTT`,
/// `tc_rl = 3.5·RTT` and `tr_rc = tc_rc = RTT` this is `2.5·N_dc`. (The paper prints the
/// numerator with a typo, `T_r^rl − T_e^rc`.)
pub fn crossover_reads(tr_rc: f64, tc_rc: f64, tr_rl: f64, tc_rl: f64) -> f64 {
    (tc_rl - tc_rc) / (tr_rc - tr_rl)
}

/// The Paxos value of one transaction: what every DC prepares and, on commit, installs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TxnValue {
    /// The client (proposer).
    pub client: NodeId,
    /// Commit timestamp: the position of the writes in every key's version order.
    pub ts: u64,
    /// The coordinator shard (its server in each DC coordinates there).
    pub coord: ShardId,
    /// Reads, with the timestamp of the version read.
    pub reads: Vec<(Key, u64)>,
    /// Final writes.
    pub writes: Vec<(Key, VersionId, Value)>,
}

impl TxnValue {
    /// The cohorts of DC `dc`, each with its reads and writes.
    fn cohorts(&self, layout: &Layout, dc: DcId) -> BTreeMap<NodeId, Share> {
        let mut out: BTreeMap<NodeId, Share> = BTreeMap::new();
        let node = |k: &Key| layout.replicas(layout.shard_of(k))[dc.0 as usize];
        for (k, t) in &self.reads {
            out.entry(node(k)).or_default().reads.push((k.clone(), *t));
        }
        for (k, v, val) in &self.writes {
            out.entry(node(k))
                .or_default()
                .writes
                .push((k.clone(), *v, val.clone()));
        }
        out
    }
}

/// One cohort's share of a transaction.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// Reads with the timestamp of the version read.
    pub reads: Vec<(Key, u64)>,
    /// Writes.
    pub writes: Vec<(Key, VersionId, Value)>,
}

/// A read's answer: version, its timestamp, value.
pub type ReadResult = Result<(Option<VersionId>, u64, Option<Value>), String>;

/// Replicated Commit messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Client → the key's replica in every DC: shared-lock and read.
    Read {
        /// Transaction.
        txn: TxnId,
        /// Key.
        key: Key,
    },
    /// Replica → client.
    ReadReply {
        /// Transaction.
        txn: TxnId,
        /// Key.
        key: Key,
        /// Latest version, its timestamp and value, or why the lock was denied.
        result: ReadResult,
    },
    /// Client → replicas it read from: the transaction aborted; drop its locks.
    Release {
        /// Transaction.
        txn: TxnId,
    },
    /// Client (or a peer relaying) → coordinator of a DC: Paxos accept request.
    Accept {
        /// Transaction.
        txn: TxnId,
        /// The value.
        value: Arc<TxnValue>,
    },
    /// Coordinator → cohort in its DC: 2PC prepare.
    Prepare {
        /// Transaction.
        txn: TxnId,
        /// Commit timestamp.
        ts: u64,
        /// Coordinator shard.
        coord: ShardId,
        /// This cohort's share.
        share: Share,
    },
    /// Cohort → coordinator: prepared or not.
    Prepared {
        /// Transaction.
        txn: TxnId,
        /// Prepared?
        yes: bool,
        /// Why not.
        reason: Option<String>,
    },
    /// Coordinator → client and the other DCs' coordinators: this DC's Paxos vote.
    Vote {
        /// Transaction.
        txn: TxnId,
        /// The voting DC.
        dc: DcId,
        /// Accepted?
        accept: bool,
        /// Why not.
        reason: Option<String>,
        /// The value (with accepts, so learners can install it).
        value: Option<Arc<TxnValue>>,
        /// The sender wants the receiver's vote back.
        reply: bool,
    },
    /// Coordinator → whoever asked after the outcome was decided.
    Decided {
        /// Transaction.
        txn: TxnId,
        /// Committed?
        commit: bool,
        /// The value, if committed (so a peer can install it).
        value: Option<Arc<TxnValue>>,
    },
    /// Coordinator → cohort: 2PC commit (with the cohort's writes) or abort.
    Commit {
        /// Transaction.
        txn: TxnId,
        /// Commit?
        commit: bool,
        /// Commit timestamp.
        ts: u64,
        /// The cohort's writes.
        writes: Vec<(Key, VersionId, Value)>,
    },
    /// Cohort → coordinator: outcome applied.
    Ack {
        /// Transaction.
        txn: TxnId,
    },
    /// Coordinator → the other DCs' coordinators: every cohort of this DC applied the
    /// commit (they stop re-sending `Decided`).
    Applied {
        /// Transaction.
        txn: TxnId,
    },
    /// Prepared cohort → coordinator: what was decided?
    Query {
        /// Transaction.
        txn: TxnId,
        /// Coordinator shard.
        coord: ShardId,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum Rec {
    Prepared {
        txn: TxnId,
        ts: u64,
        coord: NodeId,
        coord_shard: ShardId,
        reads: Vec<Key>,
        writes: Vec<(Key, VersionId, Value)>,
    },
    Committed {
        txn: TxnId,
        ts: u64,
        writes: Vec<(Key, VersionId, Value)>,
    },
    Aborted {
        txn: TxnId,
    },
    Voted {
        txn: TxnId,
        accept: bool,
        coord: ShardId,
        value: Option<Arc<TxnValue>>,
    },
    Decided {
        txn: TxnId,
        commit: bool,
        value: Option<Arc<TxnValue>>,
    },
    Ended {
        txn: TxnId,
    },
}

fn writes_size(w: &[(Key, VersionId, Value)]) -> u64 {
    w.iter().map(|(k, _, v)| 16 + (k.len() + v.0.len()) as u64).sum()
}

impl LogRecord for Rec {
    fn size(&self) -> u64 {
        match self {
            Rec::Prepared { reads, writes, .. } => {
                48 + reads.iter().map(|k| k.len() as u64).sum::<u64>() + writes_size(writes)
            }
            Rec::Committed { writes, .. } => 24 + writes_size(writes),
            Rec::Voted { value: Some(v), .. } | Rec::Decided { value: Some(v), .. } => 32 + writes_size(&v.writes),
            _ => 24,
        }
    }
}

const T_SWEEP: TimerId = TimerId(1);
const COMPACT_AT: usize = 1024;

/// A cohort's prepared transaction.
#[derive(Debug)]
struct Prep {
    coord: NodeId,
    coord_shard: ShardId,
    writes: Vec<(Key, VersionId, Value)>,
    asked: Time,
    /// WAN-hop chain of the Prepare that took the exclusive locks.
    hops: u32,
}

/// A coordinator's view of one transaction.
#[derive(Debug)]
struct CTxn {
    value: Option<Arc<TxnValue>>,
    coord: ShardId,
    /// Cohorts of this DC and whether each prepared (only while preparing).
    cohorts: BTreeMap<NodeId, bool>,
    preparing: bool,
    my_vote: Option<bool>,
    votes: BTreeMap<DcId, bool>,
    reason: Option<String>,
    decided: Option<bool>,
    acks: BTreeSet<NodeId>,
    /// DCs known to have applied the commit.
    applied: BTreeSet<DcId>,
    since: Time,
}

impl CTxn {
    fn new(coord: ShardId, value: Option<Arc<TxnValue>>, now: Time) -> Self {
        CTxn {
            value,
            coord,
            cohorts: BTreeMap::new(),
            preparing: false,
            my_vote: None,
            votes: BTreeMap::new(),
            reason: None,
            decided: None,
            acks: BTreeSet::new(),
            applied: BTreeSet::new(),
            since: now,
        }
    }
}

/// A Replicated Commit server: replica (cohort) of its shards in its DC, and coordinator
/// for transactions that appoint one of its shards.
#[derive(Debug)]
pub struct Server {
    env: Env,
    me: NodeId,
    dc: DcId,
    // --- durable ---
    log: Log<Rec>,
    /// Checkpointed data: committed versions ordered by commit timestamp.
    store: MvStore,
    /// Checkpointed: largest timestamp of a transaction that prepared reading each key.
    rts: HashMap<Key, u64>,
    // --- volatile ---
    locks: LockTable,
    /// Transactions holding shared locks from reads, not prepared: last seen.
    readers: HashMap<TxnId, Time>,
    prepared: HashMap<TxnId, Prep>,
    /// Outcomes this cohort applied (kept for `tombstone`): answers duplicates.
    applied: HashMap<TxnId, (bool, Time)>,
    ctxns: HashMap<TxnId, CTxn>,
    /// Coordinator decisions.
    done: HashMap<TxnId, bool>,
    holds: HoldStats,
    compact_at: usize,
    unchecked: bool,
}

impl Server {
    /// A fresh server.
    pub fn new(env: Env, me: NodeId) -> Self {
        let dc = env.layout.dc_of(me);
        Server {
            env,
            me,
            dc,
            log: Log::new(),
            store: MvStore::new(),
            rts: HashMap::default(),
            locks: LockTable::new(Policy::Takeover),
            readers: HashMap::default(),
            prepared: HashMap::default(),
            applied: HashMap::default(),
            ctxns: HashMap::default(),
            done: HashMap::default(),
            holds: HoldStats::default(),
            compact_at: COMPACT_AT,
            unchecked: false,
        }
    }

    fn ndcs(&self) -> usize {
        self.env.layout.topology.num_dcs()
    }

    fn majority(&self) -> usize {
        self.ndcs() / 2 + 1
    }

    fn latest_ts(&self, k: &Key) -> u64 {
        self.store.versions(k).last().map_or(0, |v| v.wts)
    }

    // ------------------------------------------------------------ cohort

    fn on_read(&mut self, from: NodeId, txn: TxnId, key: Key, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops(1);
        let result = if self.applied.contains_key(&txn) || self.prepared.contains_key(&txn) {
            Err("transaction already finished or preparing here".to_string())
        } else {
            match self.locks.acquire(txn, (0, txn), &key, LockMode::Shared) {
                Acquired::Granted => {
                    self.readers.insert(txn, cx.now());
                    let (v, val) = self.store.latest(&key);
                    Ok((v, self.latest_ts(&key), val.cloned()))
                }
                _ => Err("read lock denied".to_string()),
            }
        };
        cx.send(from, Msg::ReadReply { txn, key, result });
    }

    fn on_release(&mut self, txn: TxnId) {
        if self.readers.remove(&txn).is_some() {
            self.locks.release_all(txn);
        }
    }

    fn on_prepare(&mut self, from: NodeId, txn: TxnId, ts: u64, coord: ShardId, share: Share, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops((share.reads.len() + share.writes.len()) as u32);
        let answer = |yes: bool, reason: Option<String>, cx: &mut Ctx<'_, Msg>| {
            cx.send(from, Msg::Prepared { txn, yes, reason });
        };
        if let Some((commit, _)) = self.applied.get(&txn) {
            let c = *commit;
            return answer(c, (!c).then(|| "already aborted here".into()), cx);
        }
        if self.prepared.contains_key(&txn) {
            return answer(true, None, cx);
        }
        if let Err(why) = self.check_prepare(txn, ts, &share) {
            self.readers.remove(&txn);
            self.locks.release_all(txn);
            return answer(false, Some(why), cx);
        }
        for (k, _) in &share.reads {
            let r = self.rts.entry(k.clone()).or_insert(0);
            *r = (*r).max(ts);
        }
        self.readers.remove(&txn);
        self.log.append_sync(
            Rec::Prepared {
                txn,
                ts,
                coord: from,
                coord_shard: coord,
                reads: share.reads.iter().map(|(k, _)| k.clone()).collect(),
                writes: share.writes.clone(),
            },
            cx,
        );
        self.prepared.insert(
            txn,
            Prep {
                coord: from,
                coord_shard: coord,
                writes: share.writes,
                asked: cx.now(),
                hops: cx.hops(),
            },
        );
        answer(true, None, cx);
    }

    /// The paper's prepare rules plus the timestamp rules of the module docs; takes the
    /// exclusive locks on success.
    fn check_prepare(&mut self, txn: TxnId, ts: u64, share: &Share) -> Result<(), String> {
        for (k, read_ts) in share.reads.iter().filter(|_| !self.unchecked) {
            if !self.locks.holds(txn, k, LockMode::Shared) {
                return Err("read lock lost".to_string());
            }
            if self.latest_ts(k) > *read_ts {
                return Err("a newer version was installed since the read".to_string());
            }
        }
        for (k, _, _) in &share.writes {
            let rts = if self.unchecked {
                0
            } else {
                self.rts.get(k).copied().unwrap_or(0)
            };
            if ts <= self.latest_ts(k) || ts <= rts {
                return Err("stale timestamp".to_string());
            }
        }
        for (k, _, _) in &share.writes {
            match self.locks.acquire(txn, (0, txn), k, LockMode::Exclusive) {
                Acquired::Granted | Acquired::TookOver { .. } => {}
                _ => return Err("write lock denied".to_string()),
            }
        }
        Ok(())
    }

    fn on_commit(
        &mut self,
        from: NodeId,
        txn: TxnId,
        commit: bool,
        ts: u64,
        writes: Vec<(Key, VersionId, Value)>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if self.applied.contains_key(&txn) {
            cx.send(from, Msg::Ack { txn });
            return;
        }
        let prep = self.prepared.remove(&txn);
        self.readers.remove(&txn);
        if commit {
            cx.charge_ops(writes.len() as u32);
            for (k, v, val) in &writes {
                self.store.install(k, *v, val.clone(), ts);
            }
            self.log.append_sync(Rec::Committed { txn, ts, writes }, cx);
        } else if prep.is_some() {
            self.log.append(Rec::Aborted { txn }, cx);
        }
        if let Some(p) = prep {
            if !p.writes.is_empty() {
                self.holds.add(p.hops, cx.hops());
            }
        }
        self.locks.release_all(txn);
        self.applied.insert(txn, (commit, cx.now()));
        cx.send(from, Msg::Ack { txn });
    }

    // ------------------------------------------------------------ coordinator

    fn peers(&self, coord: ShardId) -> Vec<NodeId> {
        self.env
            .layout
            .replicas(coord)
            .iter()
            .copied()
            .filter(|n| *n != self.me)
            .collect()
    }

    fn on_accept(&mut self, from: NodeId, txn: TxnId, value: Arc<TxnValue>, cx: &mut Ctx<'_, Msg>) {
        if let Some(&commit) = self.done.get(&txn) {
            let value = self.ctxns.get(&txn).and_then(|c| c.value.clone()).filter(|_| commit);
            cx.send(from, Msg::Decided { txn, commit, value });
            return;
        }
        let now = cx.now();
        let c = self
            .ctxns
            .entry(txn)
            .or_insert_with(|| CTxn::new(value.coord, Some(value.clone()), now));
        if c.value.is_none() {
            c.value = Some(value);
        }
        if let Some(accept) = c.my_vote {
            let (dc, reason) = (self.dc, c.reason.clone());
            let value = if accept { c.value.clone() } else { None };
            cx.send(
                from,
                Msg::Vote {
                    txn,
                    dc,
                    accept,
                    reason,
                    value,
                    reply: false,
                },
            );
            return;
        }
        if !c.preparing {
            self.start_prepare(txn, cx);
        }
    }

    /// Runs 2PC prepare inside this DC.
    fn start_prepare(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        let Some(value) = c.value.clone() else { return };
        c.preparing = true;
        c.since = cx.now();
        let cohorts = value.cohorts(&self.env.layout, self.dc);
        c.cohorts = cohorts.keys().map(|n| (*n, false)).collect();
        if cohorts.is_empty() {
            self.cast_vote(txn, true, None, cx);
            return;
        }
        for (node, share) in cohorts {
            cx.send(
                node,
                Msg::Prepare {
                    txn,
                    ts: value.ts,
                    coord: value.coord,
                    share,
                },
            );
        }
    }

    fn on_prepared(&mut self, from: NodeId, txn: TxnId, yes: bool, reason: Option<String>, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        if c.my_vote.is_some() || c.decided.is_some() || !c.preparing {
            return;
        }
        if !yes {
            let why = reason.unwrap_or_else(|| "a cohort did not prepare".into());
            self.cast_vote(txn, false, Some(why), cx);
            return;
        }
        if let Some(p) = c.cohorts.get_mut(&from) {
            *p = true;
        }
        if c.cohorts.values().all(|p| *p) {
            self.cast_vote(txn, true, None, cx);
        }
    }

    /// Force-logs this DC's vote and tells the client and the other DCs.
    fn cast_vote(&mut self, txn: TxnId, accept: bool, reason: Option<String>, cx: &mut Ctx<'_, Msg>) {
        let dc = self.dc;
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        c.my_vote = Some(accept);
        c.preparing = false;
        c.reason = reason.clone();
        c.votes.insert(dc, accept);
        c.since = cx.now();
        let value = if accept { c.value.clone() } else { None };
        let coord = c.coord;
        let client = c.value.as_ref().map(|v| v.client);
        self.log.append_sync(
            Rec::Voted {
                txn,
                accept,
                coord,
                value: value.clone(),
            },
            cx,
        );
        let vote = Msg::Vote {
            txn,
            dc,
            accept,
            reason,
            value,
            reply: false,
        };
        if let Some(cl) = client {
            cx.send(cl, vote.clone());
        }
        for p in self.peers(coord) {
            cx.send(p, vote.clone());
        }
        self.check_decision(txn, cx);
    }

    #[allow(clippy::too_many_arguments)]
    fn on_vote(
        &mut self,
        from: NodeId,
        txn: TxnId,
        dc: DcId,
        accept: bool,
        value: Option<Arc<TxnValue>>,
        reply: bool,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if let Some(&commit) = self.done.get(&txn) {
            if reply {
                let value = self.ctxns.get(&txn).and_then(|c| c.value.clone()).filter(|_| commit);
                cx.send(from, Msg::Decided { txn, commit, value });
            }
            return;
        }
        let now = cx.now();
        let Some(coord) = value
            .as_ref()
            .map(|v| v.coord)
            .or_else(|| self.ctxns.get(&txn).map(|c| c.coord))
            .or_else(|| {
                // A reject from a peer about a transaction unknown here: the peer's node
                // index in its DC is the coordinator shard's.
                let npd = self.env.layout.topology.nodes_per_dc;
                Some(ShardId(from.0 % npd))
            })
        else {
            return;
        };
        let c = self
            .ctxns
            .entry(txn)
            .or_insert_with(|| CTxn::new(coord, value.clone(), now));
        if c.value.is_none() {
            c.value = value;
        }
        c.votes.insert(dc, accept);
        if reply {
            if let Some(mine) = c.my_vote {
                let v = if mine { c.value.clone() } else { None };
                let msg = Msg::Vote {
                    txn,
                    dc: self.dc,
                    accept: mine,
                    reason: c.reason.clone(),
                    value: v,
                    reply: false,
                };
                cx.send(from, msg);
            }
        }
        // A DC that never got the client's request prepares once it learns the value.
        if c.my_vote.is_none() && !c.preparing && c.value.is_some() {
            self.start_prepare(txn, cx);
        }
        self.check_decision(txn, cx);
    }

    fn on_decided(
        &mut self,
        from: NodeId,
        txn: TxnId,
        commit: bool,
        value: Option<Arc<TxnValue>>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if self.done.contains_key(&txn) {
            let mine_applied = self.ctxns.get(&txn).is_none_or(|c| c.applied.contains(&self.dc));
            if commit && mine_applied {
                cx.send(from, Msg::Applied { txn });
            }
            return;
        }
        let now = cx.now();
        let Some(coord) = value
            .as_ref()
            .map(|v| v.coord)
            .or_else(|| self.ctxns.get(&txn).map(|c| c.coord))
        else {
            return;
        };
        let c = self
            .ctxns
            .entry(txn)
            .or_insert_with(|| CTxn::new(coord, value.clone(), now));
        if c.value.is_none() {
            c.value = value;
        }
        if commit && c.value.is_none() {
            return; // cannot install without the value; a later answer will carry it
        }
        self.decide(txn, commit, cx);
    }

    fn check_decision(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let (n, maj) = (self.ndcs(), self.majority());
        let Some(c) = self.ctxns.get(&txn) else { return };
        if c.decided.is_some() {
            return;
        }
        let yes = c.votes.values().filter(|v| **v).count();
        let no = c.votes.len() - yes;
        if yes >= maj && c.value.is_some() {
            self.decide(txn, true, cx);
        } else if no > n - maj {
            self.decide(txn, false, cx);
        }
    }

    /// The outcome is known: run 2PC commit (or abort) in this DC.
    fn decide(&mut self, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        let dc = self.dc;
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        c.decided = Some(commit);
        c.preparing = false;
        c.since = cx.now();
        self.done.insert(txn, commit);
        let value = c.value.clone();
        self.log.append(
            Rec::Decided {
                txn,
                commit,
                value: value.clone().filter(|_| commit),
            },
            cx,
        );
        let Some(value) = value else {
            self.ctxns.remove(&txn);
            return;
        };
        let cohorts = value.cohorts(&self.env.layout, dc);
        for (node, share) in cohorts {
            let writes = if commit { share.writes } else { vec![] };
            cx.send(
                node,
                Msg::Commit {
                    txn,
                    commit,
                    ts: value.ts,
                    writes,
                },
            );
        }
        if !commit {
            self.ctxns.remove(&txn);
        }
    }

    fn on_ack(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let dc = self.dc;
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        if c.decided != Some(true) {
            return;
        }
        c.acks.insert(from);
        let all = c
            .value
            .as_ref()
            .map(|v| v.cohorts(&self.env.layout, dc).keys().all(|n| c.acks.contains(n)))
            .unwrap_or(true);
        if all && c.applied.insert(dc) {
            let coord = c.coord;
            for p in self.peers(coord) {
                cx.send(p, Msg::Applied { txn });
            }
            self.maybe_end(txn, cx);
        }
    }

    fn on_applied(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let dc = self.env.layout.dc_of(from);
        if let Some(c) = self.ctxns.get_mut(&txn) {
            c.applied.insert(dc);
            self.maybe_end(txn, cx);
        }
    }

    /// A committed transaction is forgotten once every DC has applied it.
    fn maybe_end(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let n = self.ndcs();
        if self.ctxns.get(&txn).is_some_and(|c| c.applied.len() == n) {
            self.ctxns.remove(&txn);
            self.log.append(Rec::Ended { txn }, cx);
        }
    }

    fn on_query(&mut self, from: NodeId, txn: TxnId, coord: ShardId, cx: &mut Ctx<'_, Msg>) {
        if let Some(&commit) = self.done.get(&txn) {
            let c = self.ctxns.get(&txn);
            let (ts, writes) = match c.and_then(|c| c.value.clone()) {
                Some(v) if commit => {
                    let share = v.cohorts(&self.env.layout, self.dc).remove(&from).unwrap_or_default();
                    (v.ts, share.writes)
                }
                _ if commit => return, // value not known here yet
                _ => (0, vec![]),
            };
            cx.send(
                from,
                Msg::Commit {
                    txn,
                    commit,
                    ts,
                    writes,
                },
            );
            return;
        }
        let now = cx.now();
        let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(coord, None, now));
        if c.my_vote.is_none() && !c.preparing {
            // Never voted (this coordinator restarted before voting): it cannot have
            // accepted, so rejecting is safe; the peers' votes will settle the outcome.
            self.cast_vote(txn, false, Some("coordinator restarted before voting".into()), cx);
            self.ask_peers(txn, cx);
        }
    }

    /// Re-sends this DC's vote to the peers not heard from, asking for theirs.
    fn ask_peers(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get(&txn) else { return };
        let Some(mine) = c.my_vote else { return };
        let value = if mine { c.value.clone() } else { None };
        for p in self.peers(c.coord) {
            if c.votes.contains_key(&self.env.layout.dc_of(p)) {
                continue;
            }
            cx.send(
                p,
                Msg::Vote {
                    txn,
                    dc: self.dc,
                    accept: mine,
                    reason: c.reason.clone(),
                    value: value.clone(),
                    reply: true,
                },
            );
        }
    }

    // ------------------------------------------------------------ housekeeping

    fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let to = self.env.timeouts.clone();
        let mut idle: Vec<TxnId> = self
            .readers
            .iter()
            .filter(|(_, t)| now.saturating_sub(**t) > to.idle)
            .map(|(id, _)| *id)
            .collect();
        idle.sort();
        for id in idle {
            self.on_release(id);
        }
        let mut ask = vec![];
        for (id, p) in self.prepared.iter_mut() {
            if now.saturating_sub(p.asked) >= to.query {
                p.asked = now;
                ask.push((p.coord, *id, p.coord_shard));
            }
        }
        ask.sort();
        for (coord, txn, cs) in ask {
            cx.send(coord, Msg::Query { txn, coord: cs });
        }
        self.applied.retain(|_, (_, t)| now.saturating_sub(*t) < to.tombstone);
        let mut expire = vec![];
        let mut nudge = vec![];
        let mut resend = vec![];
        for (id, c) in self.ctxns.iter_mut() {
            match (c.decided, c.my_vote) {
                (None, None) if now.saturating_sub(c.since) > to.vote => expire.push(*id),
                (None, Some(_)) if now.saturating_sub(c.since) >= to.query => {
                    c.since = now;
                    nudge.push(*id);
                }
                (Some(true), _) if now.saturating_sub(c.since) >= to.query => {
                    c.since = now;
                    resend.push(*id);
                }
                _ => {}
            }
        }
        expire.sort();
        nudge.sort();
        resend.sort();
        for id in expire {
            self.cast_vote(id, false, Some("prepare timed out".into()), cx);
        }
        for id in nudge {
            self.ask_peers(id, cx);
        }
        for id in resend {
            let Some(c) = self.ctxns.get(&id) else { continue };
            let Some(v) = c.value.clone() else { continue };
            // DCs that have not applied the commit (down, cut off, or never told) are
            // told again until they confirm.
            for p in self.peers(c.coord) {
                if !c.applied.contains(&self.env.layout.dc_of(p)) {
                    cx.send(
                        p,
                        Msg::Decided {
                            txn: id,
                            commit: true,
                            value: Some(v.clone()),
                        },
                    );
                }
            }
            if c.applied.contains(&self.dc) {
                continue;
            }
            for (node, share) in v.cohorts(&self.env.layout, self.dc) {
                if !c.acks.contains(&node) {
                    cx.send(
                        node,
                        Msg::Commit {
                            txn: id,
                            commit: true,
                            ts: v.ts,
                            writes: share.writes,
                        },
                    );
                }
            }
        }
        if self.log.len() >= self.compact_at {
            self.compact();
            self.compact_at = (2 * self.log.len()).max(COMPACT_AT);
        }
        cx.set_timer(to.sweep, T_SWEEP);
    }

    /// Checkpoint: finished cohort transactions' records go (their writes are in the
    /// store); coordinator records of ended transactions shrink to the bare decision.
    fn compact(&mut self) {
        let mut finished = rustc_hash::FxHashSet::default();
        let mut ended = rustc_hash::FxHashSet::default();
        for r in self.log.records() {
            match r {
                Rec::Committed { txn, .. } | Rec::Aborted { txn } => {
                    finished.insert(*txn);
                }
                Rec::Ended { txn } | Rec::Decided { txn, commit: false, .. } => {
                    ended.insert(*txn);
                }
                _ => {}
            }
        }
        self.log.retain(|r| match r {
            Rec::Prepared { txn, .. } | Rec::Committed { txn, .. } | Rec::Aborted { txn } => !finished.contains(txn),
            Rec::Voted { txn, .. } => !ended.contains(txn),
            Rec::Decided { .. } => true,
            Rec::Ended { txn } => !ended.contains(txn),
        });
        self.log.rewrite(|r| {
            if let Rec::Decided { txn, value, .. } = r {
                if ended.contains(txn) {
                    *value = None;
                }
            }
        });
    }

    fn replay(&mut self, cx: &mut Ctx<'_, Msg>) {
        let recs = self.log.records().to_vec();
        let mut prepared: BTreeMap<TxnId, Rec> = BTreeMap::new();
        let now = cx.now();
        for r in recs {
            match r {
                Rec::Prepared { txn, .. } => {
                    prepared.insert(txn, r);
                }
                Rec::Committed { txn, ts, writes } => {
                    prepared.remove(&txn);
                    for (k, v, val) in writes {
                        self.store.install(&k, v, val, ts);
                    }
                    self.applied.insert(txn, (true, now));
                }
                Rec::Aborted { txn } => {
                    prepared.remove(&txn);
                    self.applied.insert(txn, (false, now));
                }
                Rec::Voted {
                    txn,
                    accept,
                    coord,
                    value,
                } => {
                    let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(coord, None, 0));
                    if value.is_some() {
                        c.value = value;
                    }
                    c.my_vote = Some(accept);
                    c.votes.insert(self.dc, accept);
                }
                Rec::Decided { txn, commit, value } => {
                    self.done.insert(txn, commit);
                    if commit && value.is_some() {
                        let coord = value.as_ref().map(|v| v.coord).unwrap_or(ShardId(0));
                        let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(coord, None, 0));
                        c.value = value;
                        c.decided = Some(true);
                    } else {
                        self.ctxns.remove(&txn);
                    }
                }
                Rec::Ended { txn } => {
                    self.ctxns.remove(&txn);
                }
            }
        }
        for (txn, r) in prepared {
            let Rec::Prepared {
                coord,
                coord_shard,
                reads,
                writes,
                ..
            } = r
            else {
                continue;
            };
            for k in &reads {
                self.locks.acquire(txn, (0, txn), k, LockMode::Shared);
            }
            for (k, _, _) in &writes {
                self.locks.acquire(txn, (0, txn), k, LockMode::Exclusive);
            }
            self.prepared.insert(
                txn,
                Prep {
                    coord,
                    coord_shard,
                    writes,
                    asked: 0,
                    hops: cx.hops(),
                },
            );
        }
        // A vote logged without its decision (decisions are not forced): the logged
        // votes may already decide it (with one DC, our own vote is a majority), and
        // nothing else would, since peers are asked only for the votes we lack.
        let mut undecided: Vec<TxnId> = self
            .ctxns
            .iter()
            .filter(|(_, c)| c.decided.is_none() && c.my_vote.is_some())
            .map(|(t, _)| *t)
            .collect();
        undecided.sort();
        for txn in undecided {
            self.check_decision(txn, cx);
        }
    }
}

impl Actor for Server {
    type Msg = Msg;

    fn on_start(&mut self, cx: &mut Ctx<'_, Msg>) {
        cx.set_timer(self.env.timeouts.sweep, T_SWEEP);
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Read { txn, key } => self.on_read(from, txn, key, cx),
            Msg::Release { txn } => self.on_release(txn),
            Msg::Accept { txn, value } => self.on_accept(from, txn, value, cx),
            Msg::Prepare { txn, ts, coord, share } => self.on_prepare(from, txn, ts, coord, share, cx),
            Msg::Prepared { txn, yes, reason } => self.on_prepared(from, txn, yes, reason, cx),
            Msg::Vote {
                txn,
                dc,
                accept,
                value,
                reply,
                ..
            } => self.on_vote(from, txn, dc, accept, value, reply, cx),
            Msg::Decided { txn, commit, value } => self.on_decided(from, txn, commit, value, cx),
            Msg::Applied { txn } => self.on_applied(from, txn, cx),
            Msg::Commit {
                txn,
                commit,
                ts,
                writes,
            } => self.on_commit(from, txn, commit, ts, writes, cx),
            Msg::Ack { txn } => self.on_ack(from, txn, cx),
            Msg::Query { txn, coord } => self.on_query(from, txn, coord, cx),
            Msg::ReadReply { .. } => {}
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        if t == T_SWEEP {
            self.sweep(cx);
        }
    }

    fn on_crash(&mut self) {
        let mut log = std::mem::take(&mut self.log);
        log.crash();
        let store = std::mem::take(&mut self.store);
        let rts = std::mem::take(&mut self.rts);
        let holds = std::mem::take(&mut self.holds);
        let unchecked = self.unchecked;
        *self = Server::new(self.env.clone(), self.me);
        self.unchecked = unchecked;
        self.log = log;
        self.store = store;
        self.rts = rts;
        self.holds = holds;
    }

    fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.replay(cx);
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
    fn lock_holds(&self) -> Option<&HoldStats> {
        Some(&self.holds)
    }
    fn locked_keys(&self) -> Option<usize> {
        Some(self.locks.len())
    }
}

// ---------------------------------------------------------------- client

const T_READ: TimerId = TimerId(1);
const T_STATUS: TimerId = TimerId(2);
const T_IDLE: TimerId = TimerId(3);

#[derive(Debug)]
enum Phase {
    /// Waiting for a majority of DCs to answer a read.
    Reading {
        key: Key,
        granted: BTreeMap<DcId, (Option<VersionId>, u64, Option<Value>)>,
        denied: BTreeSet<DcId>,
        why: Option<String>,
    },
    /// An interactive transaction waits for its caller's next operations.
    Waiting,
    /// Waiting for a majority of DCs' votes.
    Committing {
        value: Arc<TxnValue>,
        votes: BTreeMap<DcId, bool>,
        why: Option<String>,
    },
}

#[derive(Debug)]
struct Current {
    exec: Execution,
    rec: TxnRecord,
    /// Keys read with the timestamp of the version used.
    reads: Vec<(Key, u64)>,
    phase: Phase,
}

/// A Replicated Commit client: reads from majorities, proposes the commit.
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

    fn majority(&self) -> usize {
        self.env.layout.topology.num_dcs() / 2 + 1
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
                for n in self.env.layout.replicas(shard) {
                    cx.send(
                        *n,
                        Msg::Read {
                            txn: cur.rec.id,
                            key: key.clone(),
                        },
                    );
                }
                cur.phase = Phase::Reading {
                    key,
                    granted: BTreeMap::new(),
                    denied: BTreeSet::new(),
                    why: None,
                };
                cx.set_timer(self.env.timeouts.read, T_READ);
            }
            Step::Abort(reason) => self.abort(reason, cx),
            Step::Wait { output } => {
                cur.phase = Phase::Waiting;
                cx.set_timer(self.env.timeouts.idle, T_IDLE);
                cx.await_input(cur.rec.id, output);
            }
            Step::Done { writes, .. } => {
                let txn = cur.rec.id;
                let finals = crate::client::number_writes(&mut cur.rec, writes);
                cx.cancel_timer(T_READ);
                cur.rec.commit_start = Some(cx.now());
                let first = finals.keys().next().or_else(|| cur.reads.first().map(|(k, _)| k));
                let Some(first) = first else {
                    self.finish(Outcome::Committed, None, cx);
                    return;
                };
                let coord = self.env.layout.shard_of(first);
                let max_read = cur.reads.iter().map(|(_, t)| *t).max().unwrap_or(0);
                let value = Arc::new(TxnValue {
                    client: cx.me(),
                    ts: commit_ts(cx.now(), max_read, self.id),
                    coord,
                    reads: cur.reads.clone(),
                    writes: finals.into_iter().map(|(k, (v, val))| (k, v, val)).collect(),
                });
                for n in self.env.layout.replicas(coord) {
                    cx.send(
                        *n,
                        Msg::Accept {
                            txn,
                            value: value.clone(),
                        },
                    );
                }
                cur.phase = Phase::Committing {
                    value,
                    votes: BTreeMap::new(),
                    why: None,
                };
                cx.set_timer(self.env.timeouts.status, T_STATUS);
            }
        }
    }

    fn abort(&mut self, reason: String, cx: &mut Ctx<'_, Msg>) {
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
                cx.send(n, Msg::Release { txn: cur.rec.id });
            }
        }
        self.finish(Outcome::Aborted, Some(reason), cx);
    }

    fn finish(&mut self, outcome: Outcome, reason: Option<String>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.take() else { return };
        cx.cancel_timer(T_READ);
        cx.cancel_timer(T_STATUS);
        cx.cancel_timer(T_IDLE);
        crate::client::close(cur.rec, outcome, reason, cx);
    }

    fn on_read_reply(&mut self, from: NodeId, txn: TxnId, key: Key, result: ReadResult, cx: &mut Ctx<'_, Msg>) {
        let (n, maj) = (self.env.layout.topology.num_dcs(), self.majority());
        let dc = self.env.layout.dc_of(from);
        let Some(cur) = self.cur.as_mut() else { return };
        if cur.rec.id != txn {
            return;
        }
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
            cx.cancel_timer(T_READ);
            cur.rec.reads.push(ReadRec {
                key: key.clone(),
                version,
            });
            cur.reads.push((key.clone(), ts));
            cur.exec.supply(key, value);
            self.step(cx);
        } else if denied.len() > n - maj {
            let why = why.clone().unwrap_or_else(|| "read denied".into());
            self.abort(why, cx);
        }
    }

    fn on_vote(&mut self, from: NodeId, txn: TxnId, accept: bool, reason: Option<String>, cx: &mut Ctx<'_, Msg>) {
        let (n, maj) = (self.env.layout.topology.num_dcs(), self.majority());
        let dc = self.env.layout.dc_of(from);
        let Some(cur) = self.cur.as_mut() else { return };
        if cur.rec.id != txn {
            return;
        }
        let Phase::Committing { votes, why, .. } = &mut cur.phase else {
            return;
        };
        votes.insert(dc, accept);
        if !accept {
            if let Some(r) = reason {
                why.get_or_insert(r);
            }
        }
        let yes = votes.values().filter(|v| **v).count();
        let no = votes.len() - yes;
        if yes >= maj {
            self.finish(Outcome::Committed, None, cx);
        } else if no > n - maj {
            let why = why.clone().unwrap_or_else(|| "a majority of DCs rejected".into());
            self.finish(Outcome::Aborted, Some(why), cx);
        }
    }
}

impl Actor for Client {
    type Msg = Msg;

    fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::ReadReply { txn, key, result } => self.on_read_reply(from, txn, key, result, cx),
            Msg::Vote {
                txn, accept, reason, ..
            } => self.on_vote(from, txn, accept, reason, cx),
            Msg::Decided { txn, commit, .. } => {
                let ok = self
                    .cur
                    .as_ref()
                    .is_some_and(|c| c.rec.id == txn && matches!(c.phase, Phase::Committing { .. }));
                if ok {
                    let (o, why) = if commit {
                        (Outcome::Committed, None)
                    } else {
                        (Outcome::Aborted, Some("a majority of DCs rejected".to_string()))
                    };
                    self.finish(o, why, cx);
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        match (t, &cur.phase) {
            (T_READ, Phase::Reading { .. }) => self.abort("read timed out (no majority answered)".into(), cx),
            (T_IDLE, Phase::Waiting) => self.abort(crate::client::IDLE_ABORT.into(), cx),
            (T_STATUS, Phase::Committing { value, votes, .. }) => {
                // Ask again the DCs that have not voted (accepts are idempotent).
                for n in self.env.layout.replicas(value.coord) {
                    if !votes.contains_key(&self.env.layout.dc_of(*n)) {
                        cx.send(
                            *n,
                            Msg::Accept {
                                txn: cur.rec.id,
                                value: value.clone(),
                            },
                        );
                    }
                }
                cx.set_timer(self.env.timeouts.status, T_STATUS);
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
            exec: Execution::new(call),
            rec,
            reads: vec![],
            phase: Phase::Reading {
                key: Key::new(b""),
                granted: BTreeMap::new(),
                denied: BTreeSet::new(),
                why: None,
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

/// The `rc` protocol.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplicatedCommit {
    /// Deliberately incorrect variant for tests: prepare does not validate reads (shared
    /// locks, read versions, read timestamps). Not offered on the command line; it
    /// exists so tests can show the checker catches what the validation prevents.
    pub unchecked: bool,
}

impl Protocol for ReplicatedCommit {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;

    fn name(&self) -> &'static str {
        "rc"
    }
    fn strict(&self) -> bool {
        true
    }
    fn interactive(&self) -> bool {
        true
    }
    fn placement(&self, _home: HomeRule) -> Placement {
        Placement::Full
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        let mut s = Server::new(env.clone(), node);
        s.unchecked = self.unchecked;
        s
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id)
    }
}
