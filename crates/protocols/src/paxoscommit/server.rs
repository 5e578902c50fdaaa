//! A server: the data-server role every server plays (its shards' replica in its DC),
//! and, on the DC's first server, the coordinator role; its state, its housekeeping
//! sweep, its message dispatch (`receive`) and its crash and restart rules
//! (`kit::server::server_frame!` writes the `Actor` wiring).

use super::*;
use crate::kit::vote::{Due, Round};

pub(crate) use crate::kit::server::SweepTimer as ServerTimer;

/// The home coordinator's view of a transaction it runs (volatile: lost in a crash).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct HTxn {
    pub(super) client: NodeId,
    pub(super) exec: Execution,
    pub(super) prio: Prio,
    /// Reads so far: key, version, timestamp.
    pub(super) reads: Vec<(Key, Option<VersionId>, u64)>,
    /// Largest committed timestamp reported for a key locked for writing.
    pub(super) seen_ts: u64,
    /// 2PL, pre-declared program: the declared keys' values read under the locks of
    /// the first round (the newest of a majority of DCs), served to the program's reads.
    pub(super) pre: BTreeMap<Key, ReadAnswer>,
    /// 2PL, pre-declared program: keys already locked exclusively at a majority.
    pub(super) xlocked: BTreeSet<Key>,
    pub(super) phase: HPhase,
    /// When the current wait (reads, write locks) began.
    pub(super) since: Time,
}

/// A DC's answer to a read: version, its commit timestamp, value.
pub(super) type ReadAnswer = (Option<VersionId>, u64, Option<Value>);

/// What a home coordinator's transaction waits for.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum HPhase {
    /// 2PL, pre-declared program: every declared key locked (exclusively if it may be
    /// written) and read at every DC in one round, before the program runs; per key,
    /// whether it is locked exclusively and the answers so far (DC → version, ts, value).
    Prelocking {
        keys: BTreeMap<Key, (bool, BTreeMap<DcId, ReadAnswer>)>,
    },
    /// Reads of one batch: per key, the answers so far (DC → version, ts, value).
    Reading {
        keys: BTreeMap<Key, BTreeMap<DcId, ReadAnswer>>,
    },
    /// 2PL: exclusive locks on the final writes; per key, the DCs holding it.
    Locking {
        writes: Vec<(Key, VersionId, Value)>,
        write_recs: Vec<WriteRec>,
        granted: BTreeMap<Key, BTreeSet<DcId>>,
    },
    /// The commit round runs (the server's `acc` has the rest).
    Committing,
}

/// What a lock request asks of a DC's coordinator (see `Msg::Lock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Want {
    /// A shared lock, then the key's value (a read).
    Read,
    /// An exclusive lock, reported with the key's newest commit timestamp (a write).
    Write,
    /// An exclusive lock, then the key's value (a pre-declared key that may be written).
    ReadWrite,
}

impl Want {
    pub(super) fn of(exclusive: bool, read: bool) -> Want {
        match (exclusive, read) {
            (false, _) => Want::Read,
            (true, false) => Want::Write,
            (true, true) => Want::ReadWrite,
        }
    }
    pub(super) fn mode(self) -> LockMode {
        match self {
            Want::Read => LockMode::Shared,
            Want::Write | Want::ReadWrite => LockMode::Exclusive,
        }
    }
}

/// A lock holder or waiter at a coordinator, before its DC voted on it (volatile).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Holder {
    pub(super) home: NodeId,
    pub(super) last: Time,
    /// Requests waiting for a grant: key, what was asked, the request's WAN-hop chain.
    pub(super) waiting: Vec<(Key, Want, u32)>,
}

crate::kit::server::server_struct! {
    /// A Paxos-commit baseline server.
    pub struct Server {
        pub(super) me: NodeId,
        pub(super) dc: DcId,
        pub(super) cc: Cc,
        /// Whether this server is its DC's coordinator.
        pub(super) is_coord: bool,
        // --- durable (log, and the checkpointed data installed with forced records) ---
        pub(super) log: Log<Rec>,
        /// Data server: committed versions ordered by commit timestamp.
        pub(super) store: MvStore,
        /// Coordinator: newest committed timestamp per key decided in this DC.
        pub(super) latest: HashMap<Key, u64>,
        /// Coordinator: largest timestamp of a transaction this DC accepted reading a key.
        pub(super) rts: HashMap<Key, u64>,
        // --- volatile ---
        /// Coordinator: the DC's lock table (wound-wait for 2PL; no-wait validation
        /// locks for OCC).
        pub(super) locks: LockTable,
        pub(super) holders: HashMap<TxnId, Holder>,
        /// Coordinator: transactions in their commit round (acceptor and learner).
        pub(super) acc: HashMap<TxnId, Round<TxnValue>>,
        /// Coordinator: outcomes known here (decisions only: a commit round's outcome, or
        /// the home's own abort).
        pub(super) done: HashMap<TxnId, bool>,
        /// Coordinator: transactions whose locks this DC dropped before voting on them
        /// (their home aborted them, or went silent), with when: a late lock request for
        /// one is not granted again. Not an outcome: this DC has not voted, and votes no
        /// (its locks are gone) if a commit round for it still arrives.
        pub(super) refused: HashMap<TxnId, Time>,
        /// Home coordinator: transactions it runs.
        pub(super) home: HashMap<TxnId, HTxn>,
        /// Home coordinator: decided transactions' values, to answer a client that asks
        /// again (kept for the tombstone time).
        pub(super) answers: HashMap<TxnId, (Arc<TxnValue>, Time)>,
        /// Home coordinator: the last commit timestamp it chose.
        pub(super) last_ts: u64,
        pub(super) holds: HoldStats,
        /// WAN-hop chain of the input that made each accepted transaction's locks durable.
        pub(super) held_since: HashMap<TxnId, u32>,
        pub(super) compact_at: crate::kit::server::Compaction,
    }
}

impl Server {
    /// A fresh server.
    pub fn new(env: Env, me: NodeId, cc: Cc) -> Self {
        let dc = env.layout.dc_of(me);
        let is_coord = coordinator_of(&env.layout, dc) == me;
        let policy = match cc {
            Cc::Locking => Policy::WoundWait,
            Cc::Optimistic => Policy::NoWait,
        };
        Server {
            env,
            me,
            dc,
            cc,
            is_coord,
            log: Log::new(),
            store: MvStore::new(),
            latest: HashMap::default(),
            rts: HashMap::default(),
            locks: LockTable::new(policy),
            holders: HashMap::default(),
            acc: HashMap::default(),
            done: HashMap::default(),
            refused: HashMap::default(),
            home: HashMap::default(),
            answers: HashMap::default(),
            last_ts: 0,
            holds: HoldStats::default(),
            held_since: HashMap::default(),
            compact_at: Default::default(),
        }
    }

    pub(super) fn ndcs(&self) -> usize {
        self.env.layout.topology.num_dcs()
    }

    pub(super) fn majority(&self) -> usize {
        self.ndcs() / 2 + 1
    }

    /// Every DC's coordinator, this one included, in DC order.
    pub(super) fn coordinators(&self) -> Vec<NodeId> {
        (0..self.ndcs())
            .map(|d| coordinator_of(&self.env.layout, DcId(d as u16)))
            .collect()
    }

    /// The other DCs' coordinators.
    pub(super) fn peers(&self) -> Vec<NodeId> {
        self.coordinators().into_iter().filter(|n| *n != self.me).collect()
    }

    pub(super) fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        crate::kit::server::collect(&mut self.store, &self.env);
        let to = self.env.timeouts.clone();
        if self.is_coord {
            // Home: transactions waiting too long for locks or reads abort.
            let mut slow: Vec<(TxnId, AbortReason)> = self
                .home
                .iter()
                .filter(|(_, h)| !matches!(h.phase, HPhase::Committing) && now.saturating_sub(h.since) >= LOCK_WAIT)
                .map(|(t, h)| {
                    let why = match (&h.phase, self.cc) {
                        (_, Cc::Optimistic) => AbortReason::ReadTimedOut,
                        (HPhase::Locking { .. }, _) => AbortReason::WriteLockDenied,
                        (HPhase::Prelocking { keys }, _) if keys.values().any(|(x, _)| *x) => {
                            AbortReason::WriteLockDenied
                        }
                        _ => AbortReason::ReadNoMajority,
                    };
                    (*t, why)
                })
                .collect();
            slow.sort();
            for (t, why) in slow {
                self.home_abort(t, why, cx);
            }
            // Locks of transactions whose home went silent (crashed) are dropped. A live
            // home sends its next lock request, its commit round or its abort within
            // `LOCK_WAIT` of the last request (it aborts a transaction that waited that
            // long for a majority of grants), so silence for `LOCK_WAIT` plus the
            // fail-over time means it is down or cut off. (It was the interactive idle
            // time, 10 s: a DC outage stalled the other DCs' transactions queued behind
            // the dead home's locks for that long.)
            let silent = LOCK_WAIT + to.failover;
            let mut idle: Vec<TxnId> = self
                .holders
                .iter()
                .filter(|(t, h)| now.saturating_sub(h.last) > silent && !self.acc.contains_key(t))
                .map(|(t, _)| *t)
                .collect();
            idle.sort();
            crate::kit::note_silent(cx, idle.iter().copied(), silent, "locks released");
            for t in idle {
                self.release(t, cx);
            }
            let mut due: Vec<(TxnId, Due)> = self
                .acc
                .iter_mut()
                .filter_map(|(id, a)| Some((*id, a.due(now, to.query, None)?)))
                .collect();
            due.sort_by_key(|&(id, d)| (d, id));
            for (id, d) in due {
                match d {
                    Due::Resend => self.resend_commit(id, cx),
                    _ => self.ask_peers(id, cx),
                }
            }
            self.answers.retain(|_, (_, t)| now.saturating_sub(*t) < to.tombstone);
            self.refused.retain(|_, t| now.saturating_sub(*t) < to.tombstone);
        }
        if self.compact_at.due(self.log.len()) {
            self.compact();
            self.compact_at.done(self.log.len());
        }
    }
}

impl Server {
    /// Every message, to its handler.
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            // data-server role
            Msg::Read { txn, key, home } => self.on_read(txn, key, home, cx),
            Msg::Install { txn, ts, writes } => self.on_install(from, txn, ts, writes, cx),
            // coordinator roles
            _ if !self.is_coord => {}
            Msg::Submit { txn, call } => self.on_submit(from, txn, call, cx),
            Msg::Status { txn } => self.on_status(from, txn, cx),
            Msg::ReadReply(r) => self.on_read_reply(from, r, cx),
            Msg::Locked { txn, key, latest } => self.on_locked(from, txn, key, latest, cx),
            Msg::Wound { txn } => self.on_wound(txn, cx),
            Msg::Lock {
                txn,
                prio,
                key,
                exclusive,
                read,
            } => self.on_lock(from, txn, prio, key, Want::of(exclusive, read), cx),
            Msg::Release { txn } => self.release(txn, cx),
            Msg::Accept { txn, value } => self.on_accept(from, txn, value, cx),
            Msg::Vote(v) => self.on_vote(from, v, cx),
            Msg::Decided(d) => self.on_decided(from, d, cx),
            Msg::Applied { txn } => self.on_applied(from, txn, cx),
            Msg::Installed { txn } => self.on_installed(from, txn, cx),
            Msg::Result(TxnResult { .. }) => {}
        }
    }
}

crate::kit::server::server_frame! {ServerTimer;
    fn on_crash(&mut self) {
        self.log.crash();
        crate::kit::server::keep_only!(self = Server::new(self.env.clone(), self.me, self.cc); log, store, latest, rts, holds);
    }

    fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.replay(cx);
        self.on_start(cx);
    }
}

crate::kit::replica!(holds);
