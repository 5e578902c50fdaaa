//! A CrossStitch server: its state (parts of transactions at their chain positions,
//! backups, acceptors, proposers, tombstones), its sweep (timeouts, queries,
//! recovery), its message dispatch (`receive`, to the file of each concern) and its
//! crash and restart rules (`kit::server::server_frame!` writes the `Actor` wiring).

use super::*;

pub(crate) use crate::kit::server::SweepTimer as ServerTimer;

/// The other servers holding a copy of any shard `n` holds (whom it re-syncs from).
pub(super) fn partners_of(layout: &meridian_core::Layout, n: NodeId) -> BTreeSet<NodeId> {
    let mut out = BTreeSet::new();
    for s in layout.shards_of(n) {
        out.extend(layout.replicas(s).iter().filter(|r| **r != n));
    }
    out
}

/// The servers other than `f`, nearest to it first (lowest RTT), among equally near
/// ones those that follow `f` in id order, wrapping around (`f + 1`, `f + 2`, … of its
/// DC).
pub(super) fn by_nearness(layout: &meridian_core::Layout, f: NodeId) -> Vec<NodeId> {
    let dc = layout.dc_of(f);
    let n = layout.num_servers();
    let after = |a: NodeId| (a.0 + n - f.0) % n;
    let mut others: Vec<NodeId> = (0..n).map(NodeId).filter(|x| *x != f).collect();
    others.sort_by(|a, b| {
        let ra = layout.topology.rtt(dc, layout.dc_of(*a));
        let rb = layout.topology.rtt(dc, layout.dc_of(*b));
        ra.partial_cmp(&rb)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(after(*a).cmp(&after(*b)))
    });
    others
}

/// The two transaction replicas of final server `f`: the two nearest other servers
/// (`by_nearness`). The paper does not say which servers they are; following `f`
/// among equally near ones spreads the acceptor work over a DC's servers. An earlier
/// choice, the lowest ids, made two servers of each DC the acceptors of almost every
/// transaction and capped one DC's throughput there (cs-fig6).
pub fn txn_replicas(layout: &meridian_core::Layout, f: NodeId) -> [NodeId; 2] {
    let others = by_nearness(layout, f);
    [others[0], others[1 % others.len()]]
}

/// Where a position is in PLC (Fig. 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Phase {
    /// Executed its state, may still abort alone.
    Executed,
    /// Delegated the decision (the last server: proposed COMMIT).
    Precommitted,
}

/// One position of a transaction at this server.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Part {
    pub(super) ts: u64,
    pub(super) pos: u32,
    pub(super) phase: Phase,
    /// Positions 0..=pos.
    pub(super) chain: Vec<Hop>,
    /// Position pos + 1 (None: not known yet, or this is the last).
    pub(super) next: Option<NodeId>,
    pub(super) last: bool,
    /// From the ack: position pos + 2 (`Some(None)`: pos + 1 is the last).
    pub(super) after_next: Option<Option<NodeId>>,
    pub(super) acked: bool,
    pub(super) prev_precommit: bool,
    pub(super) notifies_needed: u32,
    pub(super) notifies: BTreeSet<NodeId>,
    /// Uncommitted writers whose versions this position read.
    pub(super) deps: BTreeSet<TxnId>,
    /// Tentative versions this position installed.
    pub(super) puts: Vec<(Key, VersionId, Value)>,
    /// The forwarded execution (re-sent until acked).
    pub(super) forward: Option<Msg>,
    /// This position's puts as sent to each replica (re-sent until the outcome).
    pub(super) replicate: Vec<(NodeId, Msg)>,
    /// When this position last re-sent or queried (at most once per `query`).
    pub(super) poked: Time,
    /// Record so far (the last position: the full record).
    pub(super) rec: Option<Arc<Rec>>,
    pub(super) since: Time,
    /// Last time the successor answered a query.
    pub(super) heard_next: Time,
}

/// A replica's copy of another server's puts.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Backup {
    pub(super) ts: u64,
    pub(super) primary: NodeId,
    pub(super) notify: NodeId,
    pub(super) chain: Vec<NodeId>,
    pub(super) puts: Vec<(Key, VersionId)>,
    pub(super) since: Time,
    /// The primary answered that it may have forgotten the transaction (restarted).
    pub(super) primary_forgot: bool,
}

/// Tentative versions copied while re-syncing, whose outcome is being asked.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Orphan {
    /// The transaction's timestamp (its versions' write timestamp): queries and
    /// recoveries must carry it, or a restarted acceptor cannot tell whether it may
    /// have forgotten the transaction and stays silent.
    pub(super) ts: u64,
    pub(super) puts: Vec<(Key, VersionId)>,
    /// Copied versions at or below what this server collected of their key: not in
    /// the store, installed (among the collected) if the transaction commits.
    pub(super) below: Vec<(Key, VersionId, Value)>,
    pub(super) since: Time,
    pub(super) ask: Vec<NodeId>,
    pub(super) last: Option<NodeId>,
}

/// Acceptor state of one transaction (this server as final server or transaction
/// replica), kept for the tombstone period from its first promise or acceptance.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Acceptor {
    pub(super) promised: Ballot,
    pub(super) accepted: Option<(Ballot, Decision)>,
}

/// A Paxos proposer for one transaction's decision (the final server at ballot 0, or a
/// transaction replica recovering).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Proposer {
    pub(super) ts: u64,
    pub(super) ballot: Ballot,
    pub(super) acceptors: [NodeId; 3],
    /// Phase 1 answers (recovery only).
    pub(super) promises: BTreeMap<NodeId, Option<(Ballot, Decision)>>,
    /// Phase 2 value, once chosen to propose.
    pub(super) value: Option<Decision>,
    pub(super) accepted: BTreeSet<NodeId>,
    /// Who asked (to answer when decided).
    pub(super) waiters: BTreeSet<NodeId>,
    pub(super) since: Time,
}

/// An outcome this server knows (kept for the tombstone period from when it learned
/// it).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Done {
    pub(super) commit: bool,
    pub(super) rec: Option<Arc<Rec>>,
    pub(super) reason: Option<AbortReason>,
}

crate::kit::server::server_struct! {
    /// A CrossStitch data server (primary of some shards, replica of others, final
    /// coordinator and transaction replica of transactions).
    pub struct Server {
        /// A deliberately broken variant (tests only; see [`crate::Mutant`]).
        pub(super) mutant: crate::Mutant,
        pub(super) me: NodeId,
        pub(super) store: MvStore,
        pub(super) parts: HashMap<(TxnId, u32), Part>,
        /// Notifies that arrived before the execution they are about (over a real network
        /// the replica's notify can overtake the primary's forward): kept until the
        /// position exists, dropped after `idle`.
        pub(super) early_notifies: HashMap<(TxnId, u32), (Time, BTreeSet<NodeId>)>,
        pub(super) backups: HashMap<TxnId, Backup>,
        /// writer → readers (txn, pos) that read its uncommitted versions here.
        pub(super) readers: HashMap<TxnId, Vec<(TxnId, u32)>>,
        /// Acceptor state and outcomes, one per transaction for the tombstone period:
        /// the largest parts of a server, in persistent maps, so that a checkpoint's
        /// copy of the server shares them instead of copying every entry.
        pub(super) acceptors: Aging<TxnId, Acceptor>,
        pub(super) proposers: HashMap<TxnId, Proposer>,
        pub(super) done: Aging<TxnId, Done>,
        /// Tentative versions copied while re-syncing, whose outcome is being asked.
        pub(super) orphans: HashMap<TxnId, Orphan>,
        /// Recoveries that met a higher ballot: no new one for the transaction before
        /// this time (a randomized back-off, so two replicas asked to recover the same
        /// transaction do not pre-empt each other's ballots forever).
        pub(super) backoff: HashMap<TxnId, Time>,
        /// Set when restarted after a crash.
        pub(super) restarted_at: Option<Time>,
        /// A small durable watermark, kept across a crash: every transaction this server
        /// has acted on has a timestamp (in clock units, `ts / TS_SCALE`) below it. It is
        /// raised, with a synced write, before the server acts on a transaction at or
        /// above it ([`Server::admit`]), two sweeps' worth of timestamps at a time; no
        /// clock pushes it (a server clock ahead would make a restarted server refuse
        /// transactions it never saw, which cost a campaign run its liveness). It is compared
        /// only with transaction timestamps, never with this server's clock, so clients'
        /// clocks may be skewed against the servers' by any amount.
        pub(super) mark_ts: Time,
        /// The same for ballots: every ballot this server promised or accepted is below it.
        pub(super) mark_ballot: Ballot,
        /// Watermarks per client (client id → mark in clock units of that client's
        /// timestamps, and when this server last acted for it): raised like `mark_ts`,
        /// with a synced write, before this server acts in any role (chain position,
        /// replica of puts, asked party, acceptor) on a transaction of that client.
        /// `mark_ts` is one word over every client, so a client whose clock runs
        /// seconds ahead lifts it seconds past every other client's transactions, and
        /// a server that judged by it after a restart counted as possibly forgotten
        /// transactions that began seconds after it came back: as an acceptor it stayed
        /// silent in phase 1 (campaign seed 661262: both transaction replicas restarted
        /// so, no recovery reached a majority), and as a chain server it refused the
        /// execution and answered `Unknown` to every query, so a precommitted position
        /// heard only `Unknown` and never resolved (seed 700227). A client's own
        /// timestamps only grow, so its own mark bounds exactly what this server may
        /// have acted on for it. `mark_ts` still bounds the read timestamps a crash
        /// lost, which every client's writes must respect ([`Server::write_floor`]).
        /// An entry idle for `tombstone` goes, its mark folded into `client_floor`.
        pub(super) client_marks: HashMap<u32, (Time, Time)>,
        /// The largest mark of the `client_marks` entries dropped (durable, like them): a
        /// restarted server counts as forgetful below it for every client, so that
        /// dropping an idle client's entry never forgets what it guarded (a transaction
        /// left undecided for long, its asker silent, and the server restarted again).
        /// It is at most the idle client's clock a `tombstone` ago (120 s by default),
        /// below what the other clients send now as long as no client's clock is behind
        /// another's by anything near `tombstone`, so it costs them nothing. A limit
        /// (stop 68's review): with clocks that far apart, a restarted server would
        /// again count a slow client's new transactions as forgotten (refused, never
        /// aborted wrongly: the floor only errs towards caution); the campaigns skew
        /// clocks by up to 5 s.
        pub(super) client_floor: Time,
        /// `client_marks` at the last restart (the marks alone).
        pub(super) client_forgot: HashMap<u32, Time>,
        /// `client_floor` at the last restart.
        pub(super) client_forgot_floor: Time,
        /// `mark_ts` at the last restart: reads below it may have been served and
        /// forgotten (the write floor), and, with no watermark at all, the restart time.
        pub(super) forgot_before: Time,
        /// `mark_ballot` at the last restart: a forgetful acceptor takes only higher ballots.
        pub(super) ballot_floor: Ballot,
        /// Partners a restarted server still needs the data of.
        pub(super) syncing: BTreeSet<NodeId>,
        /// Version GC's low-water mark (transaction timestamp units): every version
        /// whose committed successor was written at or below it may be collected
        /// (`Server::collect_versions`). Not durable.
        pub(super) gc_floor: u64,
        /// Outcomes applied here (for the split-decision check; on a real server kept
        /// as long as `done`).
        pub(super) applied: imbl::OrdMap<TxnId, bool>,
        /// Decisions that contradicted one applied here (must stay empty).
        pub(super) contradicted: Vec<(TxnId, bool)>,
        /// Fail-over (§4.1; see failover.rs): every shard's view this server knows, when
        /// not the layout's view 0.
        pub(super) views: BTreeMap<u32, ShardView>,
        /// Shards this server holds a copy of.
        pub(super) mine: Vec<u32>,
        /// As primary: the read floor (clock units) each other member promised, per
        /// (shard, member).
        pub(super) floor_acked: BTreeMap<(u32, NodeId), Time>,
        /// As primary: when each other member last promised.
        pub(super) member_heard: BTreeMap<(u32, NodeId), Time>,
        /// As a member: when the shard's primary last asked for a promise.
        pub(super) primary_heard: BTreeMap<u32, Time>,
        /// As a member: the highest read floor promised per shard (to any primary).
        pub(super) granted: BTreeMap<u32, Time>,
        /// As a primary that took a shard over: writes below this timestamp are refused
        /// (the deposed primary may have served reads below it).
        pub(super) shard_floor: BTreeMap<u32, u64>,
        /// The highest read floor this server asked its members for.
        pub(super) lease_floor: Time,
        /// Silence is counted from here at the earliest (start, restart, sync, new view).
        pub(super) watch_since: Time,
        /// View changes proposed to a witness and not answered yet: (expect, new, sent).
        pub(super) cas: BTreeMap<u32, (u32, ShardView)>,
        /// As witness: the views of the shards it witnesses, when not view 0. Durable (it
        /// survives a crash as the watermarks do, with a synced write per change).
        pub(super) witnessed: BTreeMap<u32, ShardView>,
        /// As witness: restarted with no durable state at all (a real cluster without a
        /// journal): it no longer knows the views it agreed to, so it agrees to none.
        pub(super) witness_amnesiac: bool,
        /// After a restart: shards whose current view the witness has not confirmed yet
        /// (the partners' views may be old, the witness's is the one agreed).
        pub(super) unsure: BTreeSet<u32>,
        /// After a restart: the view in which a member sent each shard's data.
        pub(super) synced_in: BTreeMap<u32, u32>,
        /// Restarted, and not yet checked which shards' data came whole
        /// ([`Server::restart_done`]).
        pub(super) check_sync: bool,
        /// Shards this server was dropped from and has not had the primary's data for
        /// since: it asks for it every sweep, holds no puts and takes nothing over for
        /// them, even once a view lists it as a member again.
        pub(super) stale: BTreeSet<u32>,
        /// Executions waiting for the members' promise of a read floor above their
        /// timestamp (sender, execution, when parked).
        pub(super) parked: Vec<(NodeId, Exec, Time)>,
        /// As the layout's primary, back as a member: shards it is taking its role back
        /// for. It promises the acting primary no higher read floor for them, and proposes
        /// the hand-back once its clock passed the last one promised.
        pub(super) handing: BTreeSet<u32>,
    }
}

impl Server {
    /// The server on `me`.
    pub fn new(env: Env, me: NodeId) -> Self {
        let mine = env.layout.shards_of(me).into_iter().map(|s| s.0).collect();
        Server {
            mutant: crate::Mutant::None,
            env,
            me,
            store: MvStore::new(),
            parts: HashMap::default(),
            early_notifies: HashMap::default(),
            backups: HashMap::default(),
            readers: HashMap::default(),
            acceptors: Aging::default(),
            proposers: HashMap::default(),
            done: Aging::default(),
            orphans: HashMap::default(),
            backoff: HashMap::default(),
            restarted_at: None,
            mark_ts: 0,
            mark_ballot: 0,
            client_marks: HashMap::default(),
            client_floor: 0,
            client_forgot: HashMap::default(),
            client_forgot_floor: 0,
            forgot_before: 0,
            ballot_floor: 0,
            syncing: BTreeSet::new(),
            gc_floor: 0,
            applied: imbl::OrdMap::new(),
            contradicted: vec![],
            views: BTreeMap::new(),
            mine,
            floor_acked: BTreeMap::new(),
            member_heard: BTreeMap::new(),
            primary_heard: BTreeMap::new(),
            granted: BTreeMap::new(),
            shard_floor: BTreeMap::new(),
            lease_floor: 0,
            watch_since: 0,
            cas: BTreeMap::new(),
            witnessed: BTreeMap::new(),
            witness_amnesiac: false,
            stale: BTreeSet::new(),
            unsure: BTreeSet::new(),
            synced_in: BTreeMap::new(),
            check_sync: false,
            parked: vec![],
            handing: BTreeSet::new(),
        }
    }

    pub(super) fn primary_of(&self, key: &Key) -> NodeId {
        self.view(self.env.layout.shard_of(key).0).primary
    }

    /// Whether this server may have acted on `txn` (of `ts`), in any role, before it
    /// last crashed, and forgotten it: by its client's mark (see `client_marks`), or,
    /// for a server that lost even its watermark word, by its own clock at restart.
    pub(super) fn forgot(&self, txn: TxnId, ts: u64) -> bool {
        if self.restarted_at.is_none() {
            false
        } else if self.witness_amnesiac {
            ts / TS_SCALE < self.forgot_before
        } else {
            let mark = self.client_forgot.get(&txn.client).copied().unwrap_or(0);
            ts / TS_SCALE < mark.max(self.client_forgot_floor)
        }
    }

    /// Whether this server may act as an acceptor of `ballot` for `txn` (of `ts`):
    /// always, unless it may have forgotten a promise for it (it may have acted on it
    /// before the crash); then only ballots above every ballot it may have promised
    /// before the crash are safe, never the last server's ballot 0.
    pub(super) fn may_accept_ballot(&self, txn: TxnId, ts: u64, ballot: Ballot) -> bool {
        !self.forgot(txn, ts) || (ballot != 0 && ballot > self.ballot_floor)
    }

    /// Records, durably and before acting, that this server may act on `txn` (of
    /// `ts`): raises the one watermark and its client's (see `client_marks`) past it,
    /// by a reserve of two sweeps so the synced write is rare, where they are not
    /// already.
    pub(super) fn admit(&mut self, txn: TxnId, ts: u64, cx: &mut Ctx<'_, Msg>) {
        use crate::kit::marks::raise;
        let reserve = 2 * self.env.timeouts.sweep;
        let now = cx.now();
        raise(&mut self.mark_ts, ts / TS_SCALE, reserve, cx);
        let e = self.client_marks.entry(txn.client).or_insert((0, now));
        raise(&mut e.0, ts / TS_SCALE, reserve, cx);
        e.1 = now;
    }

    /// The same for a ballot this server is about to promise or accept.
    pub(super) fn admit_ballot(&mut self, ballot: Ballot, cx: &mut Ctx<'_, Msg>) {
        use crate::kit::marks::{raise, BALLOT_RESERVE};
        raise(&mut self.mark_ballot, ballot, BALLOT_RESERVE, cx);
    }

    // ----- execution -----------------------------------------------------------
}

impl Server {
    pub(super) fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let t = self.env.timeouts.clone();
        if !self.syncing.is_empty() {
            for n in self.syncing.clone() {
                cx.send(n, Msg::SyncReq);
            }
        }
        self.ask_views(cx);
        self.early_notifies
            .retain(|_, (at, _)| now.saturating_sub(*at) < t.idle);
        self.sweep_failover(cx);
        // Positions.
        let mut keys: Vec<(TxnId, u32)> = self.parts.keys().copied().collect();
        keys.sort_unstable();
        for (txn, pos) in keys {
            let Some(p) = self.parts.get_mut(&(txn, pos)) else {
                continue;
            };
            match p.phase {
                Phase::Executed => {
                    if now.saturating_sub(p.since) >= t.vote {
                        if let Some(next) = p.next.filter(|_| !p.acked) {
                            // Its forward went unanswered: perhaps to a primary that
                            // lost its shards in a view change this server missed.
                            let me = &*self;
                            failover::ask_witnesses(&me.env, |s| me.primary(s) == next, cx);
                        }
                        self.abort_here(txn, pos, AbortReason::PipelineTimeout, cx);
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
        let mut due: Vec<TxnId> = self
            .proposers
            .iter()
            .filter(|(_, p)| now.saturating_sub(p.since) >= t.query)
            .map(|(txn, _)| *txn)
            .collect();
        due.sort_unstable();
        for txn in &due {
            let p = self.proposers.get_mut(txn).expect("listed");
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
        asks.sort_unstable_by_key(|a| a.0);
        for (txn, ts, mut to, last, kill) in asks {
            if let Some(last) = last {
                if now.saturating_sub(self.restarted_at.unwrap_or(0)) >= t.query {
                    for r in txn_replicas(&self.env.layout, last) {
                        cx.send(r, Msg::Recover { txn, ts, last });
                    }
                }
            }
            if kill == Some(self.me) {
                // This replica is itself the next position: ask itself, or no one
                // ever does (the query below skips this server). Seen as a stall: the
                // forward to this server was lost, the primary crashed and forgot, and
                // the copied put stayed tentative for ever.
                self.on_query(self.me, txn, ts, 0, true, cx);
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
        // Forget old outcomes and acceptor state. The outcomes applied (kept for the
        // split-decision check) go with them where the deployment keeps no whole
        // history (a real server: bounded state); the simulator keeps them all.
        let (record, applied) = (self.env.retention.record, &mut self.applied);
        self.done.expire_each(now, t.tombstone, |txn, _| {
            if !record {
                applied.remove(&txn);
            }
        });
        self.acceptors.expire(now, t.tombstone);
        // An idle client's mark goes into the floor, which is never dropped: what it
        // guarded stays guarded across any later restart (reviewed in stop 67: dropping
        // it outright let a third restart forget a COMMIT chosen before the first).
        let floor = &mut self.client_floor;
        self.client_marks.retain(|_, (mark, at)| {
            let keep = now.saturating_sub(*at) < t.tombstone;
            if !keep {
                *floor = (*floor).max(*mark);
            }
            keep
        });
        self.collect_versions(now);
    }

    /// Version GC for MVTO (module docs, "Version GC"): the low-water mark is the
    /// lowest timestamp any client active here within `horizon` (the version TTL, at
    /// least the vote timeout) sent lately, less `horizon`: the oldest a transaction
    /// still running here can be, but for one that has outlived the vote timeout
    /// (refused: `MvtoTooOld`) or a client whose clock is behind the others' by more
    /// than `horizon` (refused until its clock passes the mark). Only the
    /// clients' timestamps are compared, never a clock of this server's. The mark
    /// never falls while the server lives; a restarted server starts from nothing and
    /// takes on what its partners collected with their data.
    fn collect_versions(&mut self, now: Time) {
        let Some(horizon) = self.gc_horizon() else {
            return;
        };
        let reserve = 2 * self.env.timeouts.sweep;
        let lowest = self
            .client_marks
            .values()
            .filter(|(_, at)| now.saturating_sub(*at) < horizon)
            // A client's mark runs up to `reserve` ahead of what it sent.
            .map(|(mark, _)| mark.saturating_sub(reserve))
            .min();
        if let Some(m) = lowest {
            self.gc_floor = self.gc_floor.max(m.saturating_sub(horizon).saturating_mul(TS_SCALE));
        }
        self.store.collect_below(&self.env.retention, self.gc_floor);
    }

    /// How far behind the newest timestamps version GC keeps what a read may see:
    /// the version TTL, at least the vote timeout. None: this deployment keeps every
    /// version.
    pub(super) fn gc_horizon(&self) -> Option<Time> {
        let ttl = self.env.retention.ttl;
        (ttl != u64::MAX).then(|| ttl.max(self.env.timeouts.vote))
    }

    /// Whether this server is still coming back from a restart: waiting for its
    /// partners' data or for its shards' views from their witnesses. It serves nothing
    /// meanwhile.
    pub(super) fn restarting(&self) -> bool {
        !self.syncing.is_empty() || !self.unsure.is_empty()
    }

    /// Keys with an uncommitted version here.
    pub(super) fn pending_tentatives(&self) -> usize {
        self.store
            .iter()
            .filter(|(_, vs)| vs.iter().any(|v| v.tentative))
            .count()
    }
}

impl Server {
    /// The start (and each restart, from `on_recover`): the watermark word, the sweep
    /// armed, and the fail-over watch.
    pub(super) fn start(&mut self, cx: &mut Ctx<'_, Msg>) {
        // The watermark exists from the start (1: nothing acted on yet), written
        // before anything is handled; only a process that lost even this word (a
        // restart with no disk on a real cluster) finds 0, and then assumes it may
        // have acted on anything started before its restart.
        self.mark_ts = self.mark_ts.max(1);
        cx.charge_log_sync(8);
        cx.set_timer(self.env.timeouts.sweep, ServerTimer::Sweep);
        // Fail-over: silence counts from now; the members' read-floor promise is
        // asked for at once, ahead of the clock, so the first reads need not wait.
        self.watch_since = cx.now();
        self.lease_floor = self.lease_floor.max(cx.now() + 2 * self.env.timeouts.sweep);
        self.send_leases(cx);
    }

    /// Every message, to its handler.
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        // Every message that can make this server act on a transaction names its
        // timestamp: the watermark covers it before anything is done.
        match &msg {
            Msg::Exec(Exec { txn, ts, .. })
            | Msg::Replicate(Replicate { txn, ts, .. })
            | Msg::Query { txn, ts, .. }
            | Msg::Recover { txn, ts, .. }
            | Msg::Accept { txn, ts, .. }
            | Msg::Prepare { txn, ts, .. } => self.admit(*txn, *ts, cx),
            _ => {}
        }
        match msg {
            Msg::Exec(m) => self.on_exec(from, m, cx),
            Msg::Ack { txn, pos, next } => self.on_ack(from, txn, pos, next, cx),
            Msg::Refused { txn, pos } => self.on_refused(from, txn, pos, cx),
            Msg::Precommit { txn, pos } => self.on_precommit(txn, pos, cx),
            Msg::ForwardAbort { txn, pos, reason } => self.on_forward_abort(txn, pos, reason, cx),
            Msg::Replicate(m) => self.on_replicate(from, m, cx),
            Msg::Notify { txn, pos } => self.on_notify(from, txn, pos, cx),
            Msg::ReplicaRefused { txn, pos } => self.on_replica_refused(from, txn, pos, cx),
            Msg::Decide {
                txn,
                commit: false,
                reason,
                ..
            } if !self.env.layout.is_server(from) => self.on_client_abort(txn, reason, cx),
            Msg::Decide {
                txn,
                commit,
                rec,
                reason,
            } => self.decided(txn, commit, rec, reason, false, cx),
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
            Msg::SyncState(m) => self.on_sync_state(from, m, cx),
            Msg::Lease { views, floor } => self.on_lease(from, views, floor, cx),
            Msg::LeaseAck { views, floor } => self.on_lease_ack(from, views, floor, cx),
            Msg::Cas { expect, new } => self.on_cas(from, expect, new, cx),
            Msg::CasReply { ok, view } => self.on_cas_reply(ok, view, cx),
            Msg::View(v) => self.install_view(v, false, false, cx),
            Msg::ViewReq { shard } => self.on_view_req(from, shard, cx),
            Msg::Waive { txn, pos, replica } => self.on_waive(from, txn, pos, replica, cx),
        }
    }
}

crate::kit::server::server_frame! {ServerTimer, start;
    fn on_crash(&mut self) {
        // Nothing survives but the watermarks and, as a witness, the views agreed to
        // (each written durably): the data lives on in the shards' other replicas.
        crate::kit::server::keep_only!(self = Server::new(self.env.clone(), self.me); mark_ts, mark_ballot, client_marks, client_floor, witnessed);
    }

    fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.restarted_at = Some(cx.now());
        // No watermark at all (a process restarted with no disk, on a real cluster):
        // it may have seen anything started before now, by its own clock (the only
        // place the restart rule reads a clock; the restart guard of docs/CLUSTER.md
        // asks for `--durable` so that it does not happen).
        self.forgot_before = if self.mark_ts == 0 { cx.now() } else { self.mark_ts };
        // With no watermark, the witness table is gone too: agree to no view change.
        self.witness_amnesiac = self.mark_ts == 0;
        self.ballot_floor = self.mark_ballot;
        self.client_forgot = self.client_marks.iter().map(|(c, (m, _))| (*c, *m)).collect();
        self.client_forgot_floor = self.client_floor;
        self.syncing = self.partners();
        for n in self.syncing.clone() {
            cx.send(n, Msg::SyncReq);
        }
        self.check_sync = true;
        // The views it held are gone: each shard's witness says which is current.
        self.unsure = self
            .mine
            .iter()
            .copied()
            .filter(|s| witness_of(&self.env.layout, meridian_core::ShardId(*s)).is_some())
            .collect();
        self.ask_views(cx);
        self.on_start(cx);
    }
}

impl Replica for Server {
    fn snapshot(&self) -> ReplicaSnapshot {
        crate::kit::snapshot(self.me, &self.store)
    }
    fn versions(&self) -> Option<(u64, u64)> {
        Some((self.store.live(), self.store.collected()))
    }
    fn role(&self) -> Option<String> {
        let l = &self.env.layout;
        let roles = l.shards_of(self.me).into_iter().map(|s| {
            let r = if self.restarting() {
                "re-syncing"
            } else if self.primary(s.0) == self.me {
                "primary"
            } else if self.members(s.0).contains(&self.me) {
                "replica"
            } else {
                "dropped"
            };
            (r, s)
        });
        Some(crate::roles_text(roles))
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
