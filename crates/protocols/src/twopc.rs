//! Flat two-phase commit, the baseline every paper measures against
//! (`2pc-2pl` and `2pc-occ`).
//!
//! # The protocol
//!
//! The client runs the program interactively: every read goes to the primary of the
//! key's shard, writes are buffered at the client. When the program finishes the client
//! sends `Commit` (reads with the versions seen, final writes, grouped per participant
//! node) to a coordinator: a server in the client's own DC. The coordinator sends
//! `Prepare` to every participant node (one per node, however many of its shards the
//! transaction touches); each votes; on all-yes the coordinator force-logs COMMIT,
//! answers the client and sends `Decide` to the participants, which apply, log, release
//! and `Ack`. That is the client's critical path: remote reads (one round trip each),
//! then one commit round trip between the coordinator and the farthest participant.
//!
//! Concurrency control:
//! - `2pc-2pl`: reads take shared locks, prepare takes exclusive locks, under
//!   WOUND_WAIT with the transaction's start time as priority (so there are no
//!   deadlocks; a wounded transaction that has not prepared aborts, a prepared one is
//!   never wounded). Prepare also checks that every shared lock is still held.
//! - `2pc-occ`: reads take no locks and return the latest committed version; prepare
//!   validates that each read version is still the latest and takes NO_WAIT locks on
//!   the read and write sets until the decision, so validation and commit are atomic.
//!
//! # Logging and failures
//!
//! Presumed abort. A participant force-logs PREPARED (with its writes) before voting
//! yes, and COMMITTED before acknowledging (installing the writes in the same step); the coordinator force-logs COMMIT before
//! telling anyone. A restarted node replays its log: committed writes are re-installed
//! in log order, prepared-but-undecided transactions re-take their locks and ask the
//! coordinator (`Query`) until they learn the outcome; a restarted coordinator
//! re-sends logged COMMIT decisions and answers ABORT for every transaction it has no
//! COMMIT record of (it cannot have told anyone COMMIT). Lost messages are covered by
//! timeouts: a client aborts a read that gets no answer and asks the coordinator for a
//! lost outcome (`Status`); a coordinator aborts when votes do not arrive; a
//! participant aborts an active transaction whose client went silent and re-asks about
//! a prepared one. Duplicates are harmless: every handler is idempotent.
//!
//! The committed store stands for the node's checkpointed on-disk data: a commit's
//! writes are installed in the same step that forces its COMMITTED record, so the store
//! never holds anything the log has not made durable, and it survives a crash. This
//! lets housekeeping drop finished transactions' log records (a checkpoint) instead of
//! keeping every PREPARED record forever.
//!
//! # Departures
//!
//! - Write replication is optional: by default each shard has one copy, on its home
//!   DC's node (`Home { k: 1 }`). With `copies=2` (CrossStitch's baseline, §5.1) each
//!   shard has a second copy on the next node of its home DC: reads still go to the
//!   primary, and every write is part of the commit at both copies (each prepares,
//!   locks and logs it like any participant), so the copies install the same versions
//!   in the same order at no extra round trip.
//! - Reads the program issues together ([`meridian_txn::Tx::read_batch`], the
//!   "futures" of crossstitch.md §5.1) are sent in parallel: one round trip per batch.
//! - A transaction whose coordinator crashes before deciding is aborted (presumed
//!   abort); 2PC blocks participants only until the coordinator restarts.
//! - A read-only transaction still runs both phases (so its read locks/versions are
//!   validated at one point in time); the papers' baselines do the same.

use crate::{ClientRole, Env, Protocol, Replica};
use meridian_core::{
    Actor, ClientId, Ctx, DcId, HomeRule, Key, NodeId, Outcome, Placement, ReadRec, ReplicaSnapshot, Time, TimerId,
    TxnId, TxnRecord, Value, VersionId,
};
use meridian_storage::{Acquired, Grant, LockMode, LockTable, Log, LogRecord, MvStore, Policy, Prio};
use meridian_txn::{Arg, Call, Execution, Step};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Concurrency control used under 2PC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cc {
    /// Two-phase locking, wound-wait.
    Locking,
    /// Optimistic, validation at prepare.
    Optimistic,
    /// No concurrency control at all: reads take no locks and prepare validates
    /// nothing. Deliberately incorrect; not offered on the command line. It exists so
    /// tests can show the checker catches a protocol that is wrong.
    Unsafe,
}

/// The `2pc-2pl` / `2pc-occ` protocol.
#[derive(Clone, Copy, Debug)]
pub struct TwoPc {
    /// Concurrency control variant.
    pub cc: Cc,
    /// Copies of each shard in its home DC (`2pc-2pl:copies=2`, crossstitch.md §5.1:
    /// "each value is stored on two servers"). Reads go to the first (the primary);
    /// writes are prepared and committed at every copy.
    pub copies: u32,
}

impl TwoPc {
    /// The protocol with one copy per shard.
    pub fn new(cc: Cc) -> Self {
        TwoPc { cc, copies: 1 }
    }
}

/// One participant node's share of a transaction (every shard it serves for it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// The participant (primary of the shards involved).
    pub node: NodeId,
    /// Reads on this node with the versions seen.
    pub reads: Vec<(Key, Option<VersionId>)>,
    /// Final writes on this node.
    pub writes: Vec<(Key, VersionId, Value)>,
}

/// 2PC messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Client → participant: read `key` (2PL: under a shared lock).
    Read {
        /// Transaction.
        txn: TxnId,
        /// Priority timestamp (start time) for wound-wait.
        ts: Time,
        /// Key.
        key: Key,
    },
    /// Participant → client: the read's result.
    ReadReply {
        /// Transaction.
        txn: TxnId,
        /// Key.
        key: Key,
        /// Version and value, or why the transaction was aborted.
        result: Result<(Option<VersionId>, Option<Value>), String>,
    },
    /// Client → participant: the transaction aborted before commit; drop its state.
    Release {
        /// Transaction.
        txn: TxnId,
    },
    /// Client → coordinator: commit this transaction.
    Commit {
        /// Transaction.
        txn: TxnId,
        /// Priority timestamp.
        ts: Time,
        /// Shards involved.
        parts: Vec<Part>,
    },
    /// Client → coordinator: what happened to `txn`?
    Status {
        /// Transaction.
        txn: TxnId,
        /// Priority timestamp.
        ts: Time,
    },
    /// Coordinator → client: the decision.
    Outcome {
        /// Transaction.
        txn: TxnId,
        /// Committed?
        commit: bool,
        /// Why not, if not.
        reason: Option<String>,
    },
    /// Coordinator → participant: prepare.
    Prepare {
        /// Transaction.
        txn: TxnId,
        /// Priority timestamp.
        ts: Time,
        /// This participant's share.
        part: Part,
    },
    /// Participant → coordinator: vote.
    Vote {
        /// Transaction.
        txn: TxnId,
        /// Yes?
        yes: bool,
        /// Why not, if not.
        reason: Option<String>,
    },
    /// Coordinator → participant: the decision.
    Decide {
        /// Transaction.
        txn: TxnId,
        /// Commit?
        commit: bool,
    },
    /// Participant → coordinator: decision applied.
    Ack {
        /// Transaction.
        txn: TxnId,
    },
    /// Participant → coordinator: what was decided for `txn`?
    Query {
        /// Transaction.
        txn: TxnId,
    },
}

/// Records in a server's log.
#[derive(Clone, Debug, PartialEq)]
enum Rec {
    /// Participant prepared (forced before voting yes).
    Prepared {
        txn: TxnId,
        ts: Time,
        coord: NodeId,
        reads: Vec<Key>,
        writes: Vec<(Key, VersionId, Value)>,
    },
    /// Participant applied a commit (forced before acking).
    Committed { txn: TxnId },
    /// Participant aborted a prepared transaction (not forced).
    Aborted { txn: TxnId },
    /// Coordinator decided commit (forced before anyone is told).
    Decided {
        txn: TxnId,
        client: NodeId,
        parts: Vec<NodeId>,
    },
    /// Coordinator collected every ack (not forced).
    Ended { txn: TxnId },
}

impl LogRecord for Rec {
    fn size(&self) -> u64 {
        match self {
            Rec::Prepared { reads, writes, .. } => {
                48 + reads.iter().map(|k| k.len() as u64).sum::<u64>()
                    + writes
                        .iter()
                        .map(|(k, _, v)| 16 + (k.len() + v.0.len()) as u64)
                        .sum::<u64>()
            }
            Rec::Decided { parts, .. } => 32 + 8 * parts.len() as u64,
            _ => 24,
        }
    }
}

const T_SWEEP: TimerId = TimerId(1);

/// Log length at which housekeeping checkpoints (drops finished transactions' records).
const COMPACT_AT: usize = 1024;

/// Participant-side state of one transaction.
#[derive(Debug)]
enum PState {
    /// Reading (2PL: holding shared locks).
    Active,
    /// Waiting for exclusive locks before voting (`hops`: the Prepare's chain).
    Preparing {
        coord: NodeId,
        part: Part,
        waiting: usize,
        hops: u32,
    },
    /// Voted yes; waiting for the decision.
    Prepared { coord: NodeId, part: Part, asked: Time },
}

#[derive(Debug)]
struct PTxn {
    prio: Prio,
    state: PState,
    last_seen: Time,
    /// Reads waiting for a lock: (client, key, the request's WAN-hop chain).
    pending_reads: Vec<(NodeId, Key, u32)>,
}

/// Coordinator-side state of one transaction.
#[derive(Debug)]
struct CTxn {
    client: NodeId,
    parts: Vec<NodeId>,
    yes: BTreeSet<NodeId>,
    decided: Option<bool>,
    acks: BTreeSet<NodeId>,
    since: Time,
}

/// A 2PC server: participant for the shards it holds, coordinator for clients of its DC.
#[derive(Debug)]
pub struct Server {
    env: Env,
    cc: Cc,
    me: NodeId,
    // --- durable ---
    log: Log<Rec>,
    // --- volatile ---
    store: MvStore,
    locks: LockTable,
    ptxns: HashMap<TxnId, PTxn>,
    tombstones: HashMap<TxnId, Time>,
    ctxns: HashMap<TxnId, CTxn>,
    /// Decided outcomes, so duplicates and late questions get the same answer.
    done: HashMap<TxnId, bool>,
    /// When this incarnation started: transactions begun earlier that it has no COMMIT
    /// record of are aborted (presumed abort).
    started_at: Time,
    /// Log length that triggers the next checkpoint.
    compact_at: usize,
}

impl Server {
    /// A fresh server.
    pub fn new(env: Env, cc: Cc, me: NodeId) -> Self {
        let policy = match cc {
            Cc::Locking => Policy::WoundWait,
            Cc::Optimistic | Cc::Unsafe => Policy::NoWait,
        };
        Server {
            env,
            cc,
            me,
            log: Log::new(),
            store: MvStore::new(),
            locks: LockTable::new(policy),
            ptxns: HashMap::default(),
            tombstones: HashMap::default(),
            ctxns: HashMap::default(),
            done: HashMap::default(),
            started_at: 0,
            compact_at: COMPACT_AT,
        }
    }

    // ------------------------------------------------------------ participant

    fn on_read(&mut self, from: NodeId, txn: TxnId, ts: Time, key: Key, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops(1);
        if self.tombstones.contains_key(&txn) {
            cx.send(
                from,
                Msg::ReadReply {
                    txn,
                    key,
                    result: Err("already aborted here (wounded or timed out)".into()),
                },
            );
            return;
        }
        if self.cc != Cc::Locking {
            let (v, val) = self.store.latest(&key);
            let result = Ok((v, val.cloned()));
            cx.send(from, Msg::ReadReply { txn, key, result });
            return;
        }
        let now = cx.now();
        let t = self.ptxns.entry(txn).or_insert_with(|| PTxn {
            prio: (ts, txn),
            state: PState::Active,
            last_seen: now,
            pending_reads: vec![],
        });
        t.last_seen = now;
        if !matches!(t.state, PState::Active) {
            return; // a read after prepare is a stale duplicate
        }
        let prio = t.prio;
        match self.locks.acquire(txn, prio, &key, LockMode::Shared) {
            Acquired::Granted => self.reply_read(from, txn, key, cx.hops(), cx),
            Acquired::Waiting { wound } => {
                let hops = cx.hops();
                if let Some(t) = self.ptxns.get_mut(&txn) {
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

    /// Answers a read on the requester's causal chain `hops`.
    fn reply_read(&mut self, to: NodeId, txn: TxnId, key: Key, hops: u32, cx: &mut Ctx<'_, Msg>) {
        let (v, val) = self.store.latest(&key);
        let result = Ok((v, val.cloned()));
        cx.send_on_chain(to, Msg::ReadReply { txn, key, result }, hops);
    }

    /// Aborts wounded transactions that can still abort (not prepared).
    fn wound(&mut self, victims: Vec<TxnId>, cx: &mut Ctx<'_, Msg>) {
        for v in victims {
            let can = self
                .ptxns
                .get(&v)
                .is_some_and(|t| !matches!(t.state, PState::Prepared { .. }));
            if can {
                self.abort_local(v, "wounded by an older transaction", cx);
            }
        }
    }

    /// Aborts an unprepared (or prepared, on an ABORT decision) transaction here:
    /// releases its locks, answers its waiting reads and, if it was preparing, votes no.
    fn abort_local(&mut self, txn: TxnId, why: &str, cx: &mut Ctx<'_, Msg>) {
        self.tombstones.insert(txn, cx.now());
        let Some(t) = self.ptxns.remove(&txn) else {
            return;
        };
        for (client, key, hops) in t.pending_reads {
            cx.send_on_chain(
                client,
                Msg::ReadReply {
                    txn,
                    key,
                    result: Err(why.to_string()),
                },
                hops,
            );
        }
        match t.state {
            PState::Preparing { coord, hops, .. } => {
                cx.send_on_chain(
                    coord,
                    Msg::Vote {
                        txn,
                        yes: false,
                        reason: Some(why.to_string()),
                    },
                    hops,
                );
            }
            PState::Prepared { .. } => self.log.append(Rec::Aborted { txn }, cx),
            PState::Active => {}
        }
        let grants = self.locks.release_all(txn);
        self.on_grants(grants, cx);
    }

    fn on_grants(&mut self, grants: Vec<Grant>, cx: &mut Ctx<'_, Msg>) {
        for g in grants {
            let Some(t) = self.ptxns.get_mut(&g.txn) else {
                continue;
            };
            if let Some(i) = t.pending_reads.iter().position(|(_, k, _)| *k == g.key) {
                let (client, key, hops) = t.pending_reads.remove(i);
                self.reply_read(client, g.txn, key, hops, cx);
            } else if let PState::Preparing { waiting, .. } = &mut t.state {
                *waiting -= 1;
                if *waiting == 0 {
                    self.finish_prepare(g.txn, cx);
                }
            }
        }
    }

    fn on_prepare(&mut self, from: NodeId, txn: TxnId, ts: Time, part: Part, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops((part.reads.len() + part.writes.len()) as u32);
        let no = |reason: String, cx: &mut Ctx<'_, Msg>| {
            cx.send(
                from,
                Msg::Vote {
                    txn,
                    yes: false,
                    reason: Some(reason),
                },
            );
        };
        if self.tombstones.contains_key(&txn) {
            return no("already aborted here (wounded or timed out)".into(), cx);
        }
        let now = cx.now();
        let t = self.ptxns.entry(txn).or_insert_with(|| PTxn {
            prio: (ts, txn),
            state: PState::Active,
            last_seen: now,
            pending_reads: vec![],
        });
        t.last_seen = now;
        match t.state {
            PState::Prepared { .. } => {
                cx.send(
                    from,
                    Msg::Vote {
                        txn,
                        yes: true,
                        reason: None,
                    },
                );
                return;
            }
            PState::Preparing { .. } => return,
            PState::Active => {}
        }
        let prio = t.prio;
        match self.cc {
            Cc::Locking => {
                // Every read must still be protected by our shared lock.
                if part
                    .reads
                    .iter()
                    .any(|(k, _)| !self.locks.holds(txn, k, LockMode::Shared))
                {
                    let why = "a read lock was lost".to_string();
                    self.abort_local(txn, &why, cx);
                    return no(why, cx);
                }
                let mut waiting = 0;
                let mut wounded = vec![];
                for (k, _, _) in &part.writes {
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
                if let Some(t) = self.ptxns.get_mut(&txn) {
                    t.state = PState::Preparing {
                        coord: from,
                        part,
                        waiting,
                        hops,
                    };
                }
                if waiting == 0 {
                    self.finish_prepare(txn, cx);
                } else {
                    self.wound(wounded, cx);
                }
            }
            Cc::Unsafe => self.prepare_now(txn, from, part, cx),
            Cc::Optimistic => {
                let mut ok = part.reads.iter().all(|(k, v)| self.store.latest(k).0 == *v);
                let mut why = (!ok).then(|| "validation failed: a read version changed".to_string());
                if ok {
                    let wanted = part
                        .reads
                        .iter()
                        .map(|(k, _)| (k, LockMode::Shared))
                        .chain(part.writes.iter().map(|(k, _, _)| (k, LockMode::Exclusive)));
                    for (k, m) in wanted {
                        if self.locks.acquire(txn, prio, k, m) != Acquired::Granted {
                            ok = false;
                            why = Some("validation failed: a key is locked by a preparing transaction".into());
                            break;
                        }
                    }
                }
                if ok {
                    self.prepare_now(txn, from, part, cx);
                } else {
                    let why = why.unwrap_or_default();
                    self.ptxns.remove(&txn);
                    self.locks.release_all(txn);
                    self.tombstones.insert(txn, now);
                    no(why, cx);
                }
            }
        }
    }

    /// Prepares a transaction that waits for nothing: force-log and vote yes now.
    fn prepare_now(&mut self, txn: TxnId, coord: NodeId, part: Part, cx: &mut Ctx<'_, Msg>) {
        if let Some(t) = self.ptxns.get_mut(&txn) {
            t.state = PState::Preparing {
                coord,
                part,
                waiting: 0,
                hops: cx.hops(),
            };
        }
        self.finish_prepare(txn, cx);
    }

    fn finish_prepare(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.ptxns.get_mut(&txn) else {
            return;
        };
        let PState::Preparing { coord, part, hops, .. } = std::mem::replace(&mut t.state, PState::Active) else {
            return;
        };
        self.log.append_sync(
            Rec::Prepared {
                txn,
                ts: t.prio.0,
                coord,
                reads: part.reads.iter().map(|(k, _)| k.clone()).collect(),
                writes: part.writes.clone(),
            },
            cx,
        );
        t.state = PState::Prepared {
            coord,
            part,
            asked: cx.now(),
        };
        cx.send_on_chain(
            coord,
            Msg::Vote {
                txn,
                yes: true,
                reason: None,
            },
            hops,
        );
    }

    fn on_decide(&mut self, from: NodeId, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        match self.ptxns.get(&txn).map(|t| &t.state) {
            Some(PState::Prepared { .. }) => {
                if commit {
                    let t = self.ptxns.remove(&txn).expect("present");
                    let PState::Prepared { part, .. } = t.state else {
                        unreachable!()
                    };
                    cx.charge_ops(part.writes.len() as u32);
                    for (k, v, val) in &part.writes {
                        self.store.install_latest(k, *v, val.clone());
                    }
                    self.log.append_sync(Rec::Committed { txn }, cx);
                    let grants = self.locks.release_all(txn);
                    self.on_grants(grants, cx);
                } else {
                    self.abort_local(txn, "aborted by coordinator", cx);
                }
                cx.send(from, Msg::Ack { txn });
            }
            Some(_) if !commit => self.abort_local(txn, "aborted by coordinator", cx),
            Some(_) => {} // commit before our yes vote: impossible; ignore
            None => {
                if !commit {
                    self.tombstones.insert(txn, cx.now());
                }
                // Already applied (duplicate) or never prepared here: acknowledge so the
                // coordinator can finish.
                cx.send(from, Msg::Ack { txn });
            }
        }
    }

    fn on_release(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        match self.ptxns.get(&txn).map(|t| &t.state) {
            Some(PState::Prepared { .. }) => {} // only the coordinator decides now
            Some(_) => self.abort_local(txn, "released by client", cx),
            None => {
                self.tombstones.insert(txn, cx.now());
            }
        }
    }

    // ------------------------------------------------------------ coordinator

    fn on_commit(&mut self, client: NodeId, txn: TxnId, ts: Time, parts: Vec<Part>, cx: &mut Ctx<'_, Msg>) {
        if let Some(&commit) = self.done.get(&txn) {
            let reason = (!commit).then(|| "aborted".to_string());
            cx.send(client, Msg::Outcome { txn, commit, reason });
            return;
        }
        if self.ctxns.contains_key(&txn) {
            return; // duplicate while in progress
        }
        if ts < self.started_at {
            // Begun before this coordinator restarted; presumed aborted.
            self.done.insert(txn, false);
            let reason = Some("coordinator restarted".to_string());
            cx.send(
                client,
                Msg::Outcome {
                    txn,
                    commit: false,
                    reason,
                },
            );
            return;
        }
        self.ctxns.insert(
            txn,
            CTxn {
                client,
                parts: parts.iter().map(|p| p.node).collect(),
                yes: BTreeSet::new(),
                decided: None,
                acks: BTreeSet::new(),
                since: cx.now(),
            },
        );
        for p in parts {
            cx.send(p.node, Msg::Prepare { txn, ts, part: p });
        }
    }

    fn on_vote(&mut self, from: NodeId, txn: TxnId, yes: bool, reason: Option<String>, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else {
            return;
        };
        if c.decided.is_some() {
            return;
        }
        if !yes {
            let why = reason.unwrap_or_else(|| "participant voted no".into());
            self.decide(txn, false, Some(why), cx);
            return;
        }
        if !c.parts.contains(&from) {
            return;
        }
        c.yes.insert(from);
        if c.yes.len() == c.parts.len() {
            self.decide(txn, true, None, cx);
        }
    }

    fn decide(&mut self, txn: TxnId, commit: bool, reason: Option<String>, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else {
            return;
        };
        if c.decided.is_some() {
            return; // decided once, never again (a caller's view may be stale)
        }
        c.decided = Some(commit);
        c.since = cx.now();
        self.done.insert(txn, commit);
        let (client, parts) = (c.client, c.parts.clone());
        if commit {
            self.log.append_sync(
                Rec::Decided {
                    txn,
                    client,
                    parts: parts.clone(),
                },
                cx,
            );
        }
        cx.send(client, Msg::Outcome { txn, commit, reason });
        for node in &parts {
            cx.send(*node, Msg::Decide { txn, commit });
        }
        if !commit {
            // Presumed abort: nothing to wait for.
            self.ctxns.remove(&txn);
        }
    }

    fn on_ack(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else {
            return;
        };
        if c.decided != Some(true) || !c.parts.contains(&from) {
            return;
        }
        c.acks.insert(from);
        if c.acks.len() == c.parts.len() {
            self.ctxns.remove(&txn);
            self.log.append(Rec::Ended { txn }, cx);
        }
    }

    fn on_query(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if self.ctxns.get(&txn).is_some_and(|c| c.decided.is_none()) {
            return; // still collecting votes; the decision will come
        }
        let commit = *self.done.entry(txn).or_insert(false);
        cx.send(from, Msg::Decide { txn, commit });
    }

    fn on_status(&mut self, client: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if self.ctxns.get(&txn).is_some_and(|c| c.decided.is_none()) {
            return;
        }
        // Unknown here means the Commit was lost or this coordinator restarted: abort,
        // and remember it so a late Commit gets the same answer.
        let commit = *self.done.entry(txn).or_insert(false);
        let reason = (!commit).then(|| "aborted (outcome queried)".to_string());
        cx.send(client, Msg::Outcome { txn, commit, reason });
    }

    // ------------------------------------------------------------ housekeeping

    fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let to = self.env.timeouts.clone();
        // Participant: idle active transactions abort; prepared ones ask.
        let mut idle = vec![];
        let mut ask = vec![];
        for (id, t) in self.ptxns.iter_mut() {
            match &mut t.state {
                PState::Active | PState::Preparing { .. } => {
                    if now.saturating_sub(t.last_seen) > to.idle && t.pending_reads.is_empty() {
                        idle.push(*id);
                    }
                }
                PState::Prepared { coord, asked, .. } => {
                    if now.saturating_sub(*asked) >= to.query {
                        *asked = now;
                        ask.push((*coord, *id));
                    }
                }
            }
        }
        idle.sort();
        ask.sort();
        for id in idle {
            self.abort_local(id, "client silent", cx);
        }
        for (coord, txn) in ask {
            cx.send(coord, Msg::Query { txn });
        }
        self.tombstones.retain(|_, t| now.saturating_sub(*t) < to.tombstone);
        if self.log.len() >= self.compact_at {
            self.compact();
            // Amortized: the kept coordinator records make the log grow, so checkpoint
            // again only once it has doubled (otherwise every sweep rescans it).
            self.compact_at = (2 * self.log.len()).max(COMPACT_AT);
        }
        // Coordinator: vote timeouts and undelivered decisions.
        let mut expired = vec![];
        let mut resend = vec![];
        for (id, c) in self.ctxns.iter_mut() {
            match c.decided {
                None if now.saturating_sub(c.since) > to.vote => expired.push(*id),
                Some(true) if now.saturating_sub(c.since) >= to.query => {
                    c.since = now;
                    for n in &c.parts {
                        if !c.acks.contains(n) {
                            resend.push((*n, *id));
                        }
                    }
                }
                _ => {}
            }
        }
        expired.sort();
        resend.sort();
        for id in expired {
            self.decide(id, false, Some("vote timeout".into()), cx);
        }
        for (n, txn) in resend {
            cx.send(n, Msg::Decide { txn, commit: true });
        }
        cx.set_timer(to.sweep, T_SWEEP);
    }

    /// Checkpoint: a finished participant transaction's records (PREPARED with its writes,
    /// COMMITTED or ABORTED) are no longer needed, because its writes are in the store.
    /// Coordinator records are small and kept, so a restarted coordinator still knows
    /// every COMMIT it decided.
    fn compact(&mut self) {
        let finished: rustc_hash::FxHashSet<TxnId> = self
            .log
            .records()
            .iter()
            .filter_map(|r| match r {
                Rec::Committed { txn } | Rec::Aborted { txn } => Some(*txn),
                _ => None,
            })
            .collect();
        self.log.retain(|r| match r {
            Rec::Prepared { txn, .. } | Rec::Committed { txn } | Rec::Aborted { txn } => !finished.contains(txn),
            Rec::Decided { .. } | Rec::Ended { .. } => true,
        });
    }

    /// Rebuilds volatile state from the log.
    fn replay(&mut self, cx: &mut Ctx<'_, Msg>) {
        let recs = self.log.records().to_vec();
        let mut prepared: BTreeMap<TxnId, Rec> = BTreeMap::new();
        let mut decided: BTreeMap<TxnId, Rec> = BTreeMap::new();
        for r in recs {
            match r {
                Rec::Prepared { txn, .. } => {
                    prepared.insert(txn, r);
                }
                Rec::Committed { txn } => {
                    if let Some(Rec::Prepared { writes, .. }) = prepared.remove(&txn) {
                        for (k, v, val) in writes {
                            if !self.store.contains(&k, v) {
                                self.store.install_latest(&k, v, val);
                            }
                        }
                    }
                }
                Rec::Aborted { txn } => {
                    prepared.remove(&txn);
                }
                Rec::Decided { txn, .. } => {
                    self.done.insert(txn, true);
                    decided.insert(txn, r);
                }
                Rec::Ended { txn } => {
                    decided.remove(&txn);
                }
            }
        }
        let now = cx.now();
        for (txn, r) in prepared {
            let Rec::Prepared {
                ts,
                coord,
                reads,
                writes,
                ..
            } = r
            else {
                continue;
            };
            let prio = (ts, txn);
            for k in &reads {
                self.locks.acquire(txn, prio, k, LockMode::Shared);
            }
            for (k, _, _) in &writes {
                self.locks.acquire(txn, prio, k, LockMode::Exclusive);
            }
            let part = Part {
                node: cx.me(),
                reads: reads.into_iter().map(|k| (k, None)).collect(),
                writes,
            };
            self.ptxns.insert(
                txn,
                PTxn {
                    prio,
                    state: PState::Prepared { coord, part, asked: 0 },
                    last_seen: now,
                    pending_reads: vec![],
                },
            );
        }
        for (txn, r) in decided {
            let Rec::Decided { client, parts, .. } = r else {
                continue;
            };
            self.ctxns.insert(
                txn,
                CTxn {
                    client,
                    parts,
                    yes: BTreeSet::new(),
                    decided: Some(true),
                    acks: BTreeSet::new(),
                    since: 0,
                },
            );
        }
    }
}

impl Actor for Server {
    type Msg = Msg;

    fn on_start(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.started_at = cx.now();
        cx.set_timer(self.env.timeouts.sweep, T_SWEEP);
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Read { txn, ts, key } => self.on_read(from, txn, ts, key, cx),
            Msg::Release { txn } => self.on_release(txn, cx),
            Msg::Prepare { txn, ts, part } => self.on_prepare(from, txn, ts, part, cx),
            Msg::Decide { txn, commit } => self.on_decide(from, txn, commit, cx),
            Msg::Commit { txn, ts, parts } => self.on_commit(from, txn, ts, parts, cx),
            Msg::Vote { txn, yes, reason } => self.on_vote(from, txn, yes, reason, cx),
            Msg::Ack { txn } => self.on_ack(from, txn, cx),
            Msg::Query { txn } => self.on_query(from, txn, cx),
            Msg::Status { txn, .. } => self.on_status(from, txn, cx),
            Msg::ReadReply { .. } | Msg::Outcome { .. } => {} // client messages
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
        *self = Server::new(self.env.clone(), self.cc, self.me);
        self.log = log;
        // The committed store is the checkpointed on-disk data (see the module docs).
        self.store = store;
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
    /// Reads outstanding (one, or a batch sent together).
    Reading(Vec<Key>),
    /// An interactive transaction waits for its caller's next operations.
    Waiting,
    Committing,
}

#[derive(Debug)]
struct Current {
    ts: Time,
    exec: Execution,
    rec: TxnRecord,
    touched: BTreeSet<NodeId>,
    phase: Phase,
}

/// A 2PC client: runs one transaction at a time interactively.
#[derive(Debug)]
pub struct Client {
    env: Env,
    id: ClientId,
    dc: DcId,
    coord: NodeId,
    cur: Option<Current>,
}

impl Client {
    /// A client on `node`.
    pub fn new(env: Env, node: NodeId, id: ClientId) -> Self {
        let dc = env.layout.dc_of(node);
        let coord = env.layout.server(dc, id.0);
        Client {
            env,
            id,
            dc,
            coord,
            cur: None,
        }
    }

    fn step(&mut self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let step = match cur.exec.step(&self.env.registry) {
            Ok(s) => s,
            Err(e) => Step::Abort(e.to_string()),
        };
        match step {
            Step::Read(key) => {
                let keys = if cur.exec.batch().is_empty() {
                    vec![key]
                } else {
                    cur.exec.batch().to_vec()
                };
                for key in &keys {
                    let node = self.env.layout.primary(self.env.layout.shard_of(key));
                    cur.touched.insert(node);
                    cx.send(
                        node,
                        Msg::Read {
                            txn: cur.rec.id,
                            ts: cur.ts,
                            key: key.clone(),
                        },
                    );
                }
                cur.phase = Phase::Reading(keys);
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
                let layout = &self.env.layout;
                let mut parts: BTreeMap<NodeId, Part> = BTreeMap::new();
                for r in &cur.rec.reads {
                    part_for(&mut parts, layout, &r.key)
                        .reads
                        .push((r.key.clone(), r.version));
                }
                for (k, (v, val)) in finals {
                    for node in layout.replicas(layout.shard_of(&k)) {
                        part_on(&mut parts, *node).writes.push((k.clone(), v, val.clone()));
                    }
                }
                cx.cancel_timer(T_READ);
                cur.rec.commit_start = Some(cx.now());
                if parts.is_empty() {
                    self.finish(Outcome::Committed, None, cx);
                    return;
                }
                cur.phase = Phase::Committing;
                cx.send(
                    self.coord,
                    Msg::Commit {
                        txn,
                        ts: cur.ts,
                        parts: parts.into_values().collect(),
                    },
                );
                cx.set_timer(self.env.timeouts.status, T_STATUS);
            }
        }
    }

    fn abort(&mut self, reason: String, cx: &mut Ctx<'_, Msg>) {
        if let Some(cur) = &self.cur {
            for n in &cur.touched {
                cx.send(*n, Msg::Release { txn: cur.rec.id });
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
}

/// The share of the participant that serves `key` (its shard's primary), created empty.
fn part_for<'a>(parts: &'a mut BTreeMap<NodeId, Part>, layout: &meridian_core::Layout, key: &Key) -> &'a mut Part {
    part_on(parts, layout.primary(layout.shard_of(key)))
}

/// The share of participant `node`, created empty.
fn part_on(parts: &mut BTreeMap<NodeId, Part>, node: NodeId) -> &mut Part {
    parts.entry(node).or_insert_with(|| Part {
        node,
        reads: vec![],
        writes: vec![],
    })
}

impl Actor for Client {
    type Msg = Msg;

    fn on_message(&mut self, _from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match msg {
            Msg::ReadReply { txn, key, result } if txn == cur.rec.id => {
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
                        cur.rec.reads.push(ReadRec {
                            key: key.clone(),
                            version,
                        });
                        cur.exec.supply(key, value);
                        if all_in {
                            cx.cancel_timer(T_READ);
                            self.step(cx);
                        }
                    }
                    Err(why) => self.abort(why, cx),
                }
            }
            Msg::Outcome { txn, commit, reason } if txn == cur.rec.id && matches!(cur.phase, Phase::Committing) => {
                let outcome = if commit { Outcome::Committed } else { Outcome::Aborted };
                self.finish(outcome, reason, cx);
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        match (t, &cur.phase) {
            (T_READ, Phase::Reading(_)) => self.abort("read timed out".into(), cx),
            (T_IDLE, Phase::Waiting) => self.abort(crate::client::IDLE_ABORT.into(), cx),
            (T_STATUS, Phase::Committing) => {
                cx.send(
                    self.coord,
                    Msg::Status {
                        txn: cur.rec.id,
                        ts: cur.ts,
                    },
                );
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
            ts: cx.now(),
            exec: Execution::new(call),
            rec,
            touched: BTreeSet::new(),
            phase: Phase::Committing,
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

impl Protocol for TwoPc {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;

    fn name(&self) -> &'static str {
        match self.cc {
            Cc::Locking => "2pc-2pl",
            Cc::Optimistic => "2pc-occ",
            Cc::Unsafe => "2pc-unsafe",
        }
    }
    fn strict(&self) -> bool {
        true
    }
    fn interactive(&self) -> bool {
        true
    }
    fn placement(&self, home: HomeRule) -> Placement {
        Placement::Home { home, k: self.copies }
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        Server::new(env.clone(), self.cc, node)
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id)
    }
}

#[cfg(test)]
mod tests;
