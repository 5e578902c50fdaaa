//! A Replicated Commit server: its state, its sweep (timeouts, queries, resends), its
//! message dispatch (`receive`) and its crash and restart rules
//! (`kit::server::server_frame!` writes the `Actor` wiring).

use super::*;
use crate::kit::aging::Aging;
use crate::kit::vote::{Due, Round};

pub(crate) use crate::kit::server::SweepTimer as ServerTimer;

/// A cohort's prepared transaction.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Prep {
    pub(super) coord: NodeId,
    pub(super) coord_shard: ShardId,
    pub(super) writes: Vec<(Key, VersionId, Value)>,
    pub(super) asked: Time,
    /// WAN-hop chain of the Prepare that took the exclusive locks.
    pub(super) hops: u32,
    /// Queries its coordinator left without a decision: from the second on, the
    /// coordinator shard's servers in the other DCs (learners too) are asked as well,
    /// so a cohort whose coordinator died learns a decision the others reached.
    #[serde(default)]
    pub(super) queries: u32,
    /// The transaction's commit timestamp (named in queries).
    #[serde(default)]
    pub(super) ts: u64,
}

/// A coordinator's view of one transaction: the commit round among DCs (acceptor,
/// learner, install) and the 2PC prepare inside this DC that gives this DC's vote.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct CTxn {
    pub(super) round: Round<TxnValue>,
    pub(super) coord: ShardId,
    /// Cohorts of this DC and whether each prepared (only while preparing).
    pub(super) cohorts: BTreeMap<NodeId, bool>,
    pub(super) preparing: bool,
    /// When PREPARE last went to the cohorts that have not answered (re-sent every
    /// fail-over time while preparing: a cohort that crashed lost it).
    pub(super) asked: Time,
    /// Cohorts of other DCs that acknowledged a commit this coordinator sent them
    /// directly, their own DC's coordinator being silent (`resend_commit`).
    #[serde(default)]
    pub(super) direct: BTreeSet<NodeId>,
    /// Commits re-sent without every DC confirming: each doubles the wait before the
    /// next, up to 8 query periods (8 s), so a DC down for long is not sent every
    /// commit it missed once a second, and one back (restarted, or the cut healed)
    /// catches up within 8 s.
    #[serde(default)]
    pub(super) resends: u32,
    /// Other DCs whose coordinator said it applied the commit (`Applied`, sent once its
    /// decision is on disk): when every other DC's has, no coordinator can ask about
    /// the transaction again, and this one may forget it (module docs, "Forgetting
    /// decisions").
    #[serde(default)]
    pub(super) confirmed: BTreeSet<DcId>,
    /// The commit timestamp, when a message named it before the value came.
    #[serde(default)]
    pub(super) ts: Option<u64>,
}

impl CTxn {
    pub(super) fn new(coord: ShardId, value: Option<Arc<TxnValue>>, now: Time) -> Self {
        CTxn {
            round: Round::new(value, now),
            coord,
            cohorts: BTreeMap::new(),
            preparing: false,
            asked: now,
            direct: BTreeSet::new(),
            resends: 0,
            confirmed: BTreeSet::new(),
            ts: None,
        }
    }

    /// The commit timestamp, if known (from the value, or a message that named it).
    pub(super) fn ts(&self) -> Option<u64> {
        self.round.value.as_ref().map(|v| v.ts).or(self.ts)
    }
}

/// An abort told to this DC's cohorts, not yet acknowledged by all of them.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Aborting {
    /// The transaction's commit timestamp.
    pub(super) ts: u64,
    /// Cohorts that have not acknowledged it.
    pub(super) waiting: BTreeSet<NodeId>,
    /// When it was last sent.
    pub(super) sent: Time,
    /// How often it was sent again (each doubles the wait, up to 8 query periods).
    pub(super) resends: u32,
}

crate::kit::server::server_struct! {
    /// A Replicated Commit server: replica (cohort) of its shards in its DC, and coordinator
    /// for transactions that appoint one of its shards.
    pub struct Server {
        pub(super) me: NodeId,
        pub(super) dc: DcId,
        // --- durable ---
        pub(super) log: Log<Rec>,
        /// Checkpointed data: committed versions ordered by commit timestamp.
        pub(super) store: MvStore,
        /// Checkpointed: largest timestamp of a transaction that prepared reading each key.
        pub(super) rts: HashMap<Key, u64>,
        // --- volatile ---
        pub(super) locks: LockTable,
        /// Transactions holding shared locks from reads, not prepared: last seen.
        pub(super) readers: HashMap<TxnId, Time>,
        pub(super) prepared: HashMap<TxnId, Prep>,
        /// Outcomes this cohort applied (kept for `tombstone`): answers duplicates.
        pub(super) applied: Aging<TxnId, bool>,
        /// Readers whose locks went before they prepared here (their client's release,
        /// or the idle sweep), kept for `tombstone`: a late copy of a read is refused
        /// instead of locking the key again. Only reads consult it: the transaction may
        /// still commit through the other DCs, and its decision must still apply here.
        pub(super) released: Aging<TxnId, ()>,
        pub(super) ctxns: HashMap<TxnId, CTxn>,
        /// Coordinator decisions (persistent: a checkpoint's copy shares it).
        pub(super) done: imbl::OrdMap<TxnId, bool>,
        /// Aborts this coordinator's cohorts have not all acknowledged (only those,
        /// with their timestamps known, are forgotten later).
        pub(super) aborting: BTreeMap<TxnId, Aborting>,
        /// Decisions that may be forgotten `tombstone` after the time given, oldest
        /// first, with their commit timestamps (module docs, "Forgetting decisions").
        pub(super) forgetting: imbl::Vector<(Time, TxnId, u64)>,
        /// The largest commit timestamp of a decision this coordinator forgot
        /// (durable: `Rec::Forgot`, forced when it rises, restores it). A transaction not known here at or below it is never prepared or
        /// accepted: it may be one whose decision was forgotten.
        pub(super) forgot_ts: u64,
        /// How long after it may be forgotten a decision is (`rc:forget`).
        pub(super) forget_after: Time,
        pub(super) holds: HoldStats,
        pub(super) compact_at: crate::kit::server::Compaction,
        pub(super) unchecked: bool,
    }
}

impl Server {
    /// A fresh server.
    pub fn new(env: Env, me: NodeId) -> Self {
        let dc = env.layout.dc_of(me);
        let forget_after = env.timeouts.tombstone;
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
            applied: Aging::default(),
            released: Aging::default(),
            ctxns: HashMap::default(),
            done: imbl::OrdMap::new(),
            aborting: BTreeMap::new(),
            forgetting: imbl::Vector::new(),
            forgot_ts: 0,
            forget_after,
            holds: HoldStats::default(),
            compact_at: Default::default(),
            unchecked: false,
        }
    }

    pub(super) fn ndcs(&self) -> usize {
        self.env.layout.topology.num_dcs()
    }

    pub(super) fn latest_ts(&self, k: &Key) -> u64 {
        self.store.versions(k).last().map_or(0, |v| v.wts)
    }

    // ------------------------------------------------------------ cohort
}

impl Server {
    pub(super) fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        crate::kit::server::collect(&mut self.store, &self.env);
        let to = self.env.timeouts.clone();
        let mut idle: Vec<TxnId> = self
            .readers
            .iter()
            .filter(|(_, t)| now.saturating_sub(**t) > to.idle)
            .map(|(id, _)| *id)
            .collect();
        idle.sort();
        crate::kit::note_silent(cx, idle.iter().copied(), to.idle, "read locks released");
        for id in idle {
            // As a client's release: remembered as released (not as an outcome), so that
            // a late copy of its read does not lock the key again.
            self.on_client_release(id, now);
        }
        let mut ask = vec![];
        for (id, p) in self.prepared.iter_mut() {
            if now.saturating_sub(p.asked) >= to.query {
                p.asked = now;
                p.queries = p.queries.saturating_add(1);
                ask.push((p.coord, *id, p.coord_shard, p.queries >= 2, p.ts));
            }
        }
        ask.sort();
        for (coord, txn, cs, wide, ts) in ask {
            cx.send(coord, Msg::Query { txn, coord: cs, ts });
            if wide {
                for p in self
                    .peers(cs)
                    .into_iter()
                    .filter(|p| self.env.layout.dc_of(*p) != self.dc)
                {
                    cx.send(p, Msg::Query { txn, coord: cs, ts });
                }
            }
        }
        self.applied.expire(now, to.tombstone);
        self.released.expire(now, to.tombstone);
        self.forget(cx);
        self.resend_aborts(cx);
        let mut silent: Vec<TxnId> = self
            .ctxns
            .iter_mut()
            .filter(|(_, c)| c.preparing && c.round.my_vote.is_none() && now.saturating_sub(c.asked) >= to.failover)
            .map(|(id, c)| {
                c.asked = now;
                *id
            })
            .collect();
        silent.sort();
        for id in silent {
            self.prepare_silent_cohorts(id, cx);
        }
        let mut due: Vec<(TxnId, Due)> = self
            .ctxns
            .iter_mut()
            .filter_map(|(id, c)| {
                let every = to.query.saturating_mul(1 << c.resends.min(3));
                Some((*id, c.round.due(now, every, Some(to.vote))?))
            })
            .collect();
        due.sort_by_key(|&(id, d)| (d, id));
        for (id, d) in due {
            match d {
                Due::Expire => self.cast_vote(id, false, Some(AbortReason::PrepareTimedOut), cx),
                Due::Nudge => self.ask_peers(id, cx),
                Due::Resend => self.resend_commit(id, cx),
            }
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
            Msg::Read { txn, key } => self.on_read(from, txn, key, cx),
            Msg::Release { txn } => self.on_client_release(txn, cx.now()),
            Msg::Accept { txn, value } => self.on_accept(from, txn, value, cx),
            Msg::Prepare { txn, ts, coord, share } => self.on_prepare(from, txn, ts, coord, share, cx),
            Msg::Prepared(p) => self.on_prepared(from, p, cx),
            Msg::Vote(v) => self.on_vote(from, v, cx),
            Msg::Decided(d) => self.on_decided(from, d, cx),
            Msg::Applied { txn } => self.on_applied(from, txn, cx),
            Msg::Commit {
                txn,
                commit,
                ts,
                writes,
            } => self.on_commit(from, txn, commit, ts, writes, cx),
            Msg::Ack { txn } => self.on_ack(from, txn, cx),
            Msg::Query { txn, coord, ts } => self.on_query(from, txn, coord, ts, cx),
            Msg::ReadReply { .. } => {}
        }
    }
}

crate::kit::server::server_frame! {ServerTimer;
    fn on_crash(&mut self) {
        self.log.crash();
        crate::kit::server::keep_only!(self = Server::new(self.env.clone(), self.me); log, store, rts, forget_after, holds, unchecked);
    }

    fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.replay(cx);
        self.on_start(cx);
    }
}

crate::kit::replica!(holds);
