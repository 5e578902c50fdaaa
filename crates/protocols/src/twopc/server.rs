//! A 2PC server (participant and, for the transactions it coordinates, coordinator):
//! its state, its sweep (timeouts, queries, resends), its message dispatch (`receive`)
//! and its crash and restart rules (`kit::server::server_frame!` writes the `Actor`
//! wiring).

use super::*;

pub(crate) use crate::kit::server::SweepTimer as ServerTimer;

/// Participant-side state of one transaction.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) enum PState {
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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct PTxn {
    pub(super) prio: Prio,
    pub(super) state: PState,
    pub(super) last_seen: Time,
    /// Reads waiting for a lock: (client, key, the request's WAN-hop chain).
    pub(super) pending_reads: crate::kit::reads::PendingReads,
}

/// Coordinator-side state of one transaction.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct CTxn {
    pub(super) client: NodeId,
    pub(super) parts: Vec<NodeId>,
    pub(super) yes: BTreeSet<NodeId>,
    pub(super) decided: Option<bool>,
    pub(super) acks: BTreeSet<NodeId>,
    pub(super) since: Time,
    /// The transaction's timestamp and each participant's share, as PREPARE sent them:
    /// sent again to a participant that has not voted after the fail-over time (a
    /// PREPARE lost with a crashed participant otherwise waits for the vote timeout).
    /// Empty for a commit rebuilt from the log.
    pub(super) ts: Time,
    pub(super) shares: Vec<Part>,
    /// When PREPARE last went out.
    pub(super) asked: Time,
}

crate::kit::server::server_struct! {
    /// A 2PC server: participant for the shards it holds, coordinator for clients of its DC.
    pub struct Server {
        /// A deliberately broken variant (tests only; see [`crate::Mutant`]).
        pub(super) mutant: crate::Mutant,
        pub(super) cc: Cc,
        pub(super) me: NodeId,
        // --- durable ---
        pub(super) log: Log<Rec>,
        /// Coordinator COMMIT decisions whose DECIDED and ENDED records were both synced,
        /// folded out of the log at a checkpoint: after a restart each is only a decided
        /// outcome to answer late questions with, so its transaction id is all it keeps.
        pub(super) ended: Vec<TxnId>,
        // --- volatile ---
        pub(super) store: MvStore,
        pub(super) locks: LockTable,
        pub(super) ptxns: HashMap<TxnId, PTxn>,
        pub(super) tombstones: HashMap<TxnId, Time>,
        /// Participant: transactions committed here, kept as long as a tombstone, so that
        /// a PREPARE that comes back after the commit (a late duplicate, or the
        /// coordinator's re-send overtaken by its decision) is answered without preparing
        /// the transaction again.
        pub(super) committed: HashMap<TxnId, Time>,
        pub(super) ctxns: HashMap<TxnId, CTxn>,
        /// Decided outcomes, so duplicates and late questions get the same answer.
        pub(super) done: HashMap<TxnId, bool>,
        /// When this incarnation started: transactions begun earlier that it has no COMMIT
        /// record of are aborted (presumed abort). A first start has no earlier incarnation
        /// whose transactions to presume aborted: it stays 0. (It used to be this node's
        /// clock reading at start, which a client clock running behind it made look
        /// "earlier": under 2 s of skew 140 of 300 transactions aborted as `coordinator
        /// restarted` without any crash.)
        pub(super) started_at: Time,
        /// Log length that triggers the next checkpoint.
        pub(super) compact_at: crate::kit::server::Compaction,
        /// OCC: reads of keys a prepared transaction will write, answered once it is decided
        /// (client, transaction, key, the read's causal chain).
        pub(super) occ_waiting: Vec<(NodeId, TxnId, Key, u32)>,
    }
}

impl Server {
    /// A fresh server.
    pub fn new(env: Env, cc: Cc, me: NodeId) -> Self {
        let policy = match cc {
            Cc::Locking => Policy::WoundWait,
            Cc::Optimistic | Cc::Unsafe => Policy::NoWait,
        };
        Server {
            mutant: crate::Mutant::None,
            env,
            cc,
            me,
            log: Log::new(),
            ended: vec![],
            store: MvStore::new(),
            locks: LockTable::new(policy),
            ptxns: HashMap::default(),
            tombstones: HashMap::default(),
            committed: HashMap::default(),
            ctxns: HashMap::default(),
            done: HashMap::default(),
            started_at: 0,
            compact_at: Default::default(),
            occ_waiting: vec![],
        }
    }

    // ------------------------------------------------------------ participant
}

impl Server {
    pub(super) fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        crate::kit::server::collect(&mut self.store, &self.env);
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
        crate::kit::note_silent(cx, idle.iter().copied(), to.idle, "aborted, locks released");
        for id in idle {
            self.abort_local(id, AbortReason::ClientSilent, cx);
        }
        for (coord, txn) in ask {
            cx.send(coord, Msg::Query { txn });
        }
        self.tombstones.retain(|_, t| now.saturating_sub(*t) < to.tombstone);
        self.committed.retain(|_, t| now.saturating_sub(*t) < to.tombstone);
        if self.compact_at.due(self.log.len()) {
            self.compact();
            self.compact_at.done(self.log.len());
        }
        // Coordinator: vote timeouts and undelivered decisions.
        let mut expired = vec![];
        let mut resend = vec![];
        let mut prepare = vec![];
        for (id, c) in self.ctxns.iter_mut() {
            match c.decided {
                None if now.saturating_sub(c.since) > to.vote => expired.push(*id),
                None if now.saturating_sub(c.asked) >= to.failover => {
                    c.asked = now;
                    for p in c.shares.iter().filter(|p| !c.yes.contains(&p.node)) {
                        prepare.push((p.node, *id, c.ts, p.clone()));
                    }
                }
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
            self.decide(id, false, Some(AbortReason::VoteTimeout), cx);
        }
        for (n, txn) in resend {
            cx.send(n, Msg::Decide { txn, commit: true });
        }
        // A participant that has not voted may have lost the PREPARE (with a crash, or
        // on the way): a repeated one is answered as the first was, or not at all while
        // it waits for locks (`on_prepare`).
        prepare.sort_by_key(|(n, id, ..)| (*id, *n));
        for (n, txn, ts, part) in prepare {
            cx.send(n, Msg::Prepare { txn, ts, part });
        }
    }
}

impl Server {
    /// Every message, to its handler.
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Read(r) => self.on_read(from, r, cx),
            Msg::Release { txn } => self.on_release(txn, cx),
            Msg::Prepare { txn, ts, part } => self.on_prepare(from, txn, ts, part, cx),
            Msg::Decide { txn, commit } => self.on_decide(from, txn, commit, cx),
            Msg::Commit { txn, ts, parts } => self.on_commit(from, txn, ts, parts, cx),
            Msg::Vote(v) => self.on_vote(from, v, cx),
            Msg::Ack { txn } => self.on_ack(from, txn, cx),
            Msg::Wound { txn } => self.on_wound(txn, cx),
            Msg::Query { txn } => self.on_query(from, txn, cx),
            Msg::Status { txn, .. } => self.on_status(from, txn, cx),
            Msg::ReadReply { .. } | Msg::Outcome { .. } => {} // client messages
        }
    }
}

crate::kit::server::server_frame! {ServerTimer;
    fn on_crash(&mut self) {
        // The committed store is the checkpointed on-disk data (see the module docs).
        self.log.crash();
        crate::kit::server::keep_only!(self = Server::new(self.env.clone(), self.cc, self.me); log, store, ended);
    }

    fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.replay(cx);
        // Transactions begun (by the client's clock) before this restart, with no
        // COMMIT record here, are presumed aborted. Under clock skew a client whose
        // clock runs behind this node's sees its new transactions aborted until its
        // clock passes this reading: a liveness cost bounded by the skew, never a
        // safety one (an abort is always a safe answer from an undecided coordinator).
        self.started_at = cx.now();
        self.on_start(cx);
    }
}

crate::kit::replica!();
