//! A server node: a data node with its leaf validator (if it holds shards), the inner
//! validators it hosts, its log, its message dispatch (`receive`) and its crash and
//! restart rules (`kit::server::server_frame!` writes the `Actor` wiring).

use super::batch::Batcher;
use super::*;
use crate::Env;
use meridian_core::{Ctx, Key, NodeId, TxnId, Value, VersionId};
use meridian_storage::{LockTable, Log, LogRecord, MvStore, Policy};
use rustc_hash::FxHashMap as HashMap;

crate::kit::timers::timers! {
    /// A hierarchical-validation server's timers (a validator's batch flush and the housekeeping sweep).
    pub(crate) enum ServerTimer {
        /// The flush timer.
        Flush = 11,
        /// The housekeeping timer (queries for long-prepared transactions).
        Sweep = 12,
    }
}

/// Clock values reserved per forced reservation record.
pub(super) const RESERVE: u64 = 1 << 20;

/// Records in a server's log.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum Rec {
    /// The clock may reach this value (forced before the clock passes the previous one).
    Reserve(u64),
    /// The data node prepared (leaf validation passed), forced before its vote leaves.
    Prepared {
        /// Transaction.
        txn: TxnId,
        /// Its snapshot.
        snap: u64,
        /// The leaf's timestamp.
        ts: u64,
        /// Keys read here.
        reads: Vec<Key>,
        /// Writes here.
        writes: Vec<(Key, VersionId, Value)>,
        /// Every involved node.
        nodes: Vec<NodeId>,
        /// The client.
        client: NodeId,
    },
    /// The data node applied a decision (forced for a commit, whose writes are
    /// installed in the same step).
    Applied {
        /// Transaction.
        txn: TxnId,
        /// Committed.
        commit: bool,
        /// Commit timestamp.
        ts: u64,
    },
    /// `2pc-deferred`: the data node answered a peer "undecided" (or heard that
    /// answer) for this prepared transaction and so refuses its client's decision from
    /// now on; forced before the answer leaves, since the peers may abort on it.
    Frozen {
        /// Transaction.
        txn: TxnId,
    },
    /// A decider's decision, forced before anyone is told.
    Decided {
        /// Transaction.
        txn: TxnId,
        /// Committed.
        commit: bool,
        /// Commit timestamp.
        ts: u64,
    },
    /// `hier-ts`: inner validator `vid` validated `txn` at `ts` (forced before it is
    /// passed up; a decider's is forced with its `Decided`). Replayed into the
    /// validator's per-key timestamps (`pending.rs`).
    Validated {
        /// The validator.
        vid: Vid,
        /// Transaction.
        txn: TxnId,
        /// Its timestamp at `vid`.
        ts: u64,
        /// `vid` decides it.
        decides: bool,
        /// Keys it read below `vid`.
        reads: Vec<Key>,
        /// Keys it wrote below `vid`.
        writes: Vec<Key>,
    },
}

impl LogRecord for Rec {
    fn size(&self) -> u64 {
        match self {
            Rec::Prepared { reads, writes, .. } => {
                64 + reads.iter().map(|k| k.len() as u64).sum::<u64>()
                    + writes
                        .iter()
                        .map(|(k, _, v)| 16 + (k.len() + v.0.len()) as u64)
                        .sum::<u64>()
            }
            Rec::Validated { reads, writes, .. } => {
                40 + reads.iter().chain(writes).map(|k| k.len() as u64).sum::<u64>()
            }
            _ => 24,
        }
    }
}

/// A transaction prepared at this data node, waiting for its decision.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Prep {
    pub(super) snap: u64,
    pub(super) ts: u64,
    /// Keys read here (`hier-ts` keeps them in its pending index until the decision).
    pub(super) reads: Vec<Key>,
    pub(super) writes: Vec<(Key, VersionId, Value)>,
    pub(super) nodes: Vec<NodeId>,
    pub(super) client: NodeId,
    /// When it prepared (or restarted); queries start `timeouts.query` later.
    pub(super) since: meridian_core::Time,
    /// `2pc-deferred` cooperative termination: answered "undecided" to a peer, so it
    /// refuses the client's decision.
    pub(super) frozen: bool,
    /// Peers' answers during termination (node → known decision).
    pub(super) peers: BTreeMap<NodeId, Option<bool>>,
}

/// A read waiting for a tentative version to become final or be discarded.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Blocked {
    pub(super) from: NodeId,
    pub(super) txn: TxnId,
    pub(super) key: Key,
    pub(super) snap: u64,
    pub(super) hops: u32,
}

/// An inner validator's state for one transaction it has not passed on yet.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Gather {
    pub(super) got: BTreeSet<Child>,
    pub(super) ok: bool,
    pub(super) ts: u64,
    pub(super) snap: u64,
    pub(super) nodes: Vec<NodeId>,
    pub(super) client: NodeId,
    /// `hier-ts`: keys read and keys written in the subtrees heard from so far.
    pub(super) reads: Vec<Key>,
    pub(super) writes: Vec<Key>,
}

crate::kit::server::server_struct! {
    /// A server node of `hier-lock`, `hier-ts` or `2pc-deferred`.
    pub struct Server {
        pub(super) sh: Arc<Shared>,
        pub(super) me: NodeId,
        /// Index of this node among the leaves (`None`: not a data node).
        pub(super) leaf: Option<u32>,
        // --- data node and leaf validator ---
        pub(super) store: MvStore,
        pub(super) log: Log<Rec>,
        pub(super) clock: u64,
        pub(super) reserved: u64,
        pub(super) locks: LockTable,
        pub(super) prepared: HashMap<TxnId, Prep>,
        pub(super) blocked: Vec<Blocked>,
        /// Outcomes this data node applied or refused (tombstones: a late commit request or
        /// decision for them changes nothing).
        pub(super) done: HashMap<TxnId, (bool, u64)>,
        pub(super) outcomes: Vec<(TxnId, bool)>,
        // --- inner validators hosted here ---
        pub(super) gathers: HashMap<(Vid, TxnId), Gather>,
        /// Decisions taken here (as decider), from the log.
        pub(super) decisions: HashMap<TxnId, (bool, u64)>,
        /// Transactions an inner validator hosted here passed up (or refused and passed
        /// the "no" up) below their decider: tombstones, so that a late or duplicated
        /// vote neither validates them again (`hier-ts` would find its own write
        /// timestamp and send a false "no") nor starts a gather that never completes.
        pub(super) finished: rustc_hash::FxHashSet<(Vid, TxnId)>,
        /// `hier-ts` leaf: the pending distributed transactions' reads and writes.
        pub(super) pending: super::pending::Pending,
        /// `hier-ts` inner re-validation: per validator and key, the largest timestamp
        /// of a write it validated (committed, or passed up: assumed to commit).
        pub(super) written: HashMap<(Vid, Key), u64>,
        /// `hier-ts` inner re-validation: per validator and key, the largest commit
        /// timestamp of a read it decided.
        pub(super) read_ts: HashMap<(Vid, Key), u64>,
        pub(super) ts_stats: super::pending::TsStats,
        pub(super) batcher: Batcher,
    }
}

impl Server {
    /// The server actor of `me`.
    pub(crate) fn new(env: Env, sh: Arc<Shared>, me: NodeId) -> Self {
        let leaf = sh.tree.leaves.binary_search(&me).ok().map(|i| i as u32);
        let batcher = Batcher::new(sh.p.batch, sh.p.flush);
        Server {
            env,
            sh,
            me,
            leaf,
            store: MvStore::new(),
            log: Log::new(),
            clock: 0,
            reserved: 0,
            locks: LockTable::new(Policy::NoWait),
            prepared: HashMap::default(),
            blocked: vec![],
            done: HashMap::default(),
            outcomes: vec![],
            gathers: HashMap::default(),
            decisions: HashMap::default(),
            finished: Default::default(),
            pending: Default::default(),
            written: HashMap::default(),
            read_ts: HashMap::default(),
            ts_stats: Default::default(),
            batcher,
        }
    }

    /// Charges `n` key operations, unless validation is off (§IV-B's network-only mode:
    /// the logic runs but costs nothing).
    pub(super) fn charge(&self, n: usize, cx: &mut Ctx<'_, Msg>) {
        if self.sh.p.validate {
            cx.charge_ops(n as u32);
        }
    }

    /// Charges `n` key operations of validation or commit work (locks, version checks,
    /// tentative versions, installs, re-validation): on the node's one serial thread,
    /// as in the paper's prototypes (§IV-C), or, with `pipeline=on`, spread over its
    /// cores like any other work. Nothing with validation off.
    pub(super) fn charge_validation(&self, n: usize, cx: &mut Ctx<'_, Msg>) {
        match (self.sh.p.validate, self.sh.p.pipeline) {
            (false, _) => {}
            (true, true) => cx.charge_ops(n as u32),
            (true, false) => cx.charge_serial_ops(n as u32),
        }
    }

    /// Moves the clock to at least `t`, forcing a new reservation first if needed.
    pub(super) fn bump_clock(&mut self, t: u64, cx: &mut Ctx<'_, Msg>) {
        if t > self.clock {
            self.clock = t;
        }
        if self.clock > self.reserved {
            self.reserved = self.clock + RESERVE;
            self.log.append_sync(Rec::Reserve(self.reserved), cx);
        }
    }

    /// Sends `item` to the node hosting its destination: a local hand-off if that is
    /// this node, else through the batcher.
    pub(super) fn route(&mut self, to: NodeId, item: Item, cx: &mut Ctx<'_, Msg>) {
        if to == self.me {
            self.on_item(self.me, item, cx);
        } else {
            self.batcher.push(to, item, cx);
        }
    }

    fn on_item(&mut self, from: NodeId, item: Item, cx: &mut Ctx<'_, Msg>) {
        match item {
            Item::Up(up) => self.on_up(up, cx),
            Item::Decide { txn, commit, ts } => self.apply(from, txn, commit, ts, cx),
        }
    }

    fn recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        let mut preps: BTreeMap<TxnId, Prep> = BTreeMap::new();
        for r in self.log.records() {
            match r {
                Rec::Reserve(v) => self.reserved = self.reserved.max(*v),
                Rec::Prepared {
                    txn,
                    snap,
                    ts,
                    reads,
                    writes,
                    nodes,
                    client,
                } => {
                    preps.insert(
                        *txn,
                        Prep {
                            snap: *snap,
                            ts: *ts,
                            reads: reads.clone(),
                            writes: writes.clone(),
                            nodes: nodes.clone(),
                            client: *client,
                            since: cx.now(),
                            frozen: false,
                            peers: BTreeMap::new(),
                        },
                    );
                }
                Rec::Applied { txn, commit, ts } => {
                    preps.remove(txn);
                    self.done.insert(*txn, (*commit, *ts));
                }
                Rec::Decided { txn, commit, ts } => {
                    self.decisions.insert(*txn, (*commit, *ts));
                }
                Rec::Frozen { txn } => {
                    if let Some(p) = preps.get_mut(txn) {
                        p.frozen = true;
                    }
                }
                Rec::Validated { .. } => {}
            }
        }
        self.replay_validated();
        // The clock restarts at the reservation: above every timestamp and snapshot
        // this node handed out before the crash.
        self.clock = self.reserved;
        let ts_mode = self.sh.p.mode == Mode::Ts;
        for (txn, p) in preps {
            if ts_mode {
                let level = self.decider_level(&p.nodes).unwrap_or(0);
                self.pending.add(txn, level, &p.reads, &p.writes);
            } else {
                for k in &p.reads {
                    let _ = self
                        .locks
                        .acquire(txn, (p.ts, txn), k, meridian_storage::LockMode::Shared);
                }
                for (k, _, _) in &p.writes {
                    let _ = self
                        .locks
                        .acquire(txn, (p.ts, txn), k, meridian_storage::LockMode::Exclusive);
                }
            }
            for (k, v, val) in &p.writes {
                self.store.write_tentative(k, *v, val.clone(), p.snap + 1);
            }
            self.prepared.insert(txn, p);
        }
        self.bump_clock(self.clock + 1, cx);
        // A decision may have been taken while this node was down, its message lost
        // with the crash: ask now, not a query timeout after the restart (the locks and
        // tentative writes above hold every reader of these keys until then).
        let mut open: Vec<(TxnId, Prep)> = self.prepared.iter().map(|(t, p)| (*t, p.clone())).collect();
        open.sort_by_key(|(t, _)| *t);
        for (txn, p) in open {
            self.ask_decision(txn, &p, false, cx);
        }
        cx.set_timer(self.env.timeouts.sweep, ServerTimer::Sweep);
    }
}

impl Server {
    /// Every message, to its handler.
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Read { txn, key, snap, floor } => self.on_read(from, txn, key, snap, floor, cx),
            Msg::Commit(c) => self.on_commit(from, c, cx),
            Msg::Decide { txn, commit, ts } => self.apply(from, txn, commit, ts, cx),
            Msg::Batch(items) => {
                // One network message; in a batch of several, each item costs one key
                // operation to unpack and dispatch (charged even with validation off:
                // it is message handling). A batch of one is just a message.
                if items.len() > 1 {
                    cx.charge_ops(items.len() as u32);
                }
                for it in items {
                    self.on_item(from, it, cx);
                }
            }
            Msg::Query(q) => self.on_query(from, q, cx),
            Msg::Peer { txn } => self.on_peer(from, txn, cx),
            Msg::PeerState { txn, state } => self.on_peer_state(from, txn, state, cx),
            Msg::ReadReply { .. } | Msg::Vote { .. } | Msg::Ack { .. } | Msg::Outcome { .. } => {}
        }
    }

    /// A timer other than the sweep (which the frame runs): the batcher's flush.
    fn on_tick(&mut self, t: ServerTimer, cx: &mut Ctx<'_, Msg>) {
        if t == ServerTimer::Flush {
            self.batcher.flush(cx);
        }
    }
}

crate::kit::server::server_frame! {ServerTimer, tick;
    fn on_crash(&mut self) {
        // What survives: the log's synced prefix and the store (the checkpoint: commits
        // are installed in the same step as their forced APPLIED record, and every
        // tentative version has a forced PREPARED record).
        self.log.crash();
        self.locks = LockTable::new(Policy::NoWait);
        self.prepared.clear();
        self.blocked.clear();
        self.done.clear();
        self.gathers.clear();
        self.decisions.clear();
        self.finished.clear();
        self.pending.clear();
        self.written.clear();
        self.read_ts.clear();
        self.batcher.clear();
        self.clock = 0;
        self.reserved = 0;
    }

    fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.recover(cx);
    }
}

impl crate::Replica for Server {
    fn snapshot(&self) -> meridian_core::ReplicaSnapshot {
        crate::kit::snapshot(self.me, &self.store)
    }
    fn versions(&self) -> Option<(u64, u64)> {
        Some((self.store.live(), self.store.collected()))
    }
    /// Keys locked (`hier-lock`, `2pc-deferred`) or with a pending reader or writer
    /// (`hier-ts`, which holds no locks).
    fn locked_keys(&self) -> Option<usize> {
        Some(self.locks.len() + self.pending.len())
    }
    fn outcomes(&self) -> Option<Vec<(TxnId, bool)>> {
        Some(self.outcomes.clone())
    }
    fn stats(&self) -> Option<Vec<(String, f64)>> {
        (self.sh.p.mode == Mode::Ts).then(|| self.ts_stats.report())
    }
}

pub(super) use std::collections::BTreeMap;
