//! The chain server (§VI-C): footprints of the forward pass, the backward pass under
//! Rule 1 and Rule 2, the resolver's implicit dependencies, the modelled time a
//! transaction holds a record, and the committed multi-versioned store. The
//! speculative execution of the programs along the backward pass is in `spec.rs`.

use super::*;
use rand::Rng as _;

mod spec;

/// Where a transaction stands at this chain server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum St {
    /// Forward pass left its footprints; the backward pass has not come back.
    Footprint,
    /// The backward pass arrived and waits (Rule 1 / Rule 2 / an earlier epoch).
    Waiting,
    /// Waiting for the resolver's answer.
    Resolving,
    /// Accessing its records here (a timer models the access time).
    Holding,
    /// Pre-committed here; it stays ordered here until commit or abort.
    Precommitted,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct CTxn {
    chain: Arc<ChainTxn>,
    pos: usize,
    st: St,
    deps: BTreeSet<TxnId>,
    implicit: BTreeSet<TxnId>,
    resolved: bool,
    stalled: bool,
    hops: u32,
    timer: u64,
    /// The values it read at the servers its backward pass left and here (§VI-C).
    #[serde(default)]
    pre: Vec<RoRead>,
    /// Its speculative execution as far as it went (here or before).
    #[serde(default)]
    spec: Spec,
    /// Its temporary versions of this server's keys are known (the program ran to its
    /// end): transactions ordered behind it may read them (Rule 2 with values).
    #[serde(default)]
    valued: bool,
    /// Those temporary versions.
    #[serde(default)]
    tmp: Vec<(Key, VersionId, Value)>,
    /// Waiting for a writer's value: how many times the writers' values were asked for
    /// (`TempReq`), and whether that check is armed.
    #[serde(default)]
    value_asks: u32,
    #[serde(default)]
    value_timer: bool,
}

impl CTxn {
    fn keys(&self) -> &[(Key, bool)] {
        &self.chain.keys[self.pos]
    }
}

/// The transactions on one key: footprints (epoch, write?) and, in the order they
/// started accessing it, the unresolved ones that did.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct KeyQ {
    fps: BTreeMap<TxnId, (u64, bool)>,
    started: Vec<TxnId>,
    /// The members of `started`, for constant-time membership (under a hot key
    /// `started` holds every unresolved transaction that touched it, and Rule 1's scan
    /// asks about each footprint).
    started_set: HashSet<TxnId>,
}

/// Passes the forward pass on from position `pos` to the next server of the chain.
fn pass_forward(chain: &Arc<ChainTxn>, pos: usize, hops: u32, cx: &mut Ctx<'_, Msg>) {
    let m = Msg::Forward {
        chain: chain.clone(),
        pos: pos + 1,
        hops,
    };
    cx.send(chain.servers[pos + 1], m);
}

/// A chain server.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Chain {
    cfg: Arc<Catenae>,
    /// The cluster's environment (the program registry): not in an image.
    #[serde(skip, default = "crate::kit::image::env")]
    env: Env,
    pub(super) me: NodeId,
    /// Committed versions, ordered by commit timestamp.
    pub(super) store: MvStore,
    keys: HashMap<Key, KeyQ>,
    txns: HashMap<TxnId, CTxn>,
    /// Per epoch: footprints expected here (once the manifest came) and arrived.
    manifest: BTreeMap<u64, (Option<u32>, u32)>,
    /// Every epoch below this has all its footprints here.
    complete_below: u64,
    /// Backward passes waiting here, in arrival order.
    waiting: Vec<TxnId>,
    timers: HashMap<u64, TxnId>,
    next_timer: u64,
    /// Transactions resolved here (so a duplicate forward pass is recognised).
    done: HashSet<TxnId>,
    /// Transactions that went ahead after waiting `stall` (the safety valve).
    pub(super) stalls: u64,
    /// Resolver queries sent.
    pub(super) resolves: u64,
    /// Readers that went ahead without the value of a writer ahead of them, having
    /// waited `VALUE_CHECKS` checks for it.
    #[serde(default)]
    pub(super) value_waits_cut: u64,
    /// With a secondary coordinator: both coordinator nodes of the DC, each told when a
    /// commit or abort is applied (the standby keeps what its successor would re-send).
    acks_to: Vec<NodeId>,
    /// Read-only reads at a snapshot whose footprints are not all here yet, and when
    /// each arrived: answered as soon as the epoch is complete here, or refused (the
    /// client retries) after `RO_RETRY`. The snapshot is the coordinator's last
    /// scheduled epoch, whose chains are still being dispatched for up to an epoch:
    /// refusing at once made the client retry 50 ms later at the then-newest epoch,
    /// with the same result, so read-only transactions spun (issue 54: p50 204 ms at
    /// 300 clients on cat-fig5, nearly all with no concurrent writer).
    #[serde(default)]
    ro_parked: Vec<(SnapRead, Time)>,
}

impl Chain {
    /// The chain server on `me`.
    pub fn new(cfg: Arc<Catenae>, env: Env, me: NodeId, acks_to: Vec<NodeId>) -> Chain {
        Chain {
            cfg,
            env,
            me,
            store: MvStore::new(),
            keys: HashMap::default(),
            txns: HashMap::default(),
            manifest: BTreeMap::new(),
            complete_below: 0,
            waiting: vec![],
            timers: HashMap::default(),
            next_timer: 0,
            done: HashSet::default(),
            stalls: 0,
            resolves: 0,
            value_waits_cut: 0,
            acks_to,
            ro_parked: vec![],
        }
    }

    /// Keys with a footprint or an unresolved access here.
    pub fn unresolved_keys(&self) -> usize {
        self.keys
            .values()
            .filter(|q| !q.fps.is_empty() || !q.started.is_empty())
            .count()
    }

    pub(super) fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Manifest { counts } => {
                let first = counts.iter().map(|(e, _)| *e).min();
                for (eid, count) in counts {
                    if eid >= self.complete_below {
                        self.manifest.entry(eid).or_insert((None, 0)).0 = Some(count);
                    }
                }
                self.advance_manifest();
                self.ro_unpark(false, cx);
                let known = self.manifest.get(&self.complete_below).is_some_and(|m| m.0.is_some());
                if first.is_some_and(|f| f > self.complete_below) && !known {
                    // Manifests of older epochs were lost (e.g. while this node was
                    // down): ask for them.
                    cx.send(
                        from,
                        Msg::ManifestNack {
                            eid: self.complete_below,
                        },
                    );
                }
                self.retry_waiting(cx);
            }
            Msg::Forward { chain, pos, hops } => self.on_forward(chain, pos, hops, cx),
            Msg::Backward {
                chain,
                pos,
                deps,
                hops,
                pre,
                spec,
            } => self.on_backward(chain, pos, deps, hops, (pre, spec), cx),
            Msg::Temp { txn, writes } => self.on_temp(txn, writes, cx),
            Msg::TempReq { txn } => self.on_temp_req(from, txn, cx),
            Msg::Resolved { txn, wait_for } => {
                if let Some(t) = self.txns.get_mut(&txn) {
                    if t.st == St::Resolving {
                        t.implicit.extend(wait_for);
                        t.resolved = true;
                        t.st = St::Waiting;
                        self.try_start(txn, cx);
                    }
                }
            }
            Msg::Commit { txn, ts, writes } => {
                cx.charge_ops(writes.len().max(1) as u32);
                let unseen = self.unseen(txn);
                for (k, v, val) in writes {
                    self.store.install(&k, v, val, ts);
                }
                self.resolve(txn, cx);
                if unseen {
                    self.count_unseen(ts >> RANK_BITS, cx);
                }
                self.applied(from, txn, cx);
            }
            Msg::Abort { txn, eid } => {
                let unseen = self.unseen(txn);
                self.resolve(txn, cx);
                if unseen {
                    self.count_unseen(eid, cx);
                }
                self.applied(from, txn, cx);
            }
            Msg::RoRead(r) => {
                cx.charge_ops(r.keys.len() as u32);
                if self.complete_below <= r.snap {
                    // Its epoch's footprints are on their way: answer once they are in.
                    if self.ro_parked.is_empty() {
                        cx.set_timer(super::client::RO_RETRY, TimerId(T_RO_PARK));
                    }
                    self.ro_parked.push((r, cx.now()));
                    return;
                }
                self.ro_answer(r, cx);
            }
            _ => {}
        }
    }

    /// Whether a commit or abort of `txn` arrives before its forward pass reached this
    /// server (its coordinator gave up executing it: a server before this one on its
    /// chain is down).
    fn unseen(&self, txn: TxnId) -> bool {
        !self.txns.contains_key(&txn) && !self.done.contains(&txn)
    }

    /// Such an unseen transaction of epoch `eid` counts for the epoch's manifest as its
    /// footprint would have, or every later epoch would wait here for the stall valve,
    /// one transaction at a time. Counted only once its writes are installed: the
    /// epoch it completes may release parked read-only reads of that snapshot, which
    /// must see them (a review's finding). (A commit reaches only servers on the chain:
    /// a declared range is on its rows' shard, `meridian_txn::key_range`.)
    fn count_unseen(&mut self, eid: u64, cx: &mut Ctx<'_, Msg>) {
        if eid < self.complete_below {
            return;
        }
        self.manifest.entry(eid).or_insert((None, 0)).1 += 1;
        let below = self.complete_below;
        self.advance_manifest();
        if self.complete_below != below {
            self.ro_unpark(false, cx);
            self.retry_waiting(cx);
        }
    }

    fn applied(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        cx.send(from, Msg::Applied { txn });
        for n in &self.acks_to {
            if *n != from {
                cx.send(*n, Msg::Applied { txn });
            }
        }
    }

    fn ro_answer(&self, r: SnapRead, cx: &mut Ctx<'_, Msg>) {
        let reads = self.ro_read(r.snap, &r.keys);
        cx.send(
            r.client,
            Msg::RoReply {
                txn: r.txn,
                attempt: r.attempt,
                snap: r.snap,
                reads,
            },
        );
    }

    /// Answers the parked read-only reads whose epoch is now complete here, and, with
    /// `expire`, refuses those parked for `RO_RETRY` (the client retries); re-arms the
    /// check while any is left.
    fn ro_unpark(&mut self, expire: bool, cx: &mut Ctx<'_, Msg>) {
        if self.ro_parked.is_empty() {
            return;
        }
        let now = cx.now();
        let retry = super::client::RO_RETRY;
        let (go, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.ro_parked)
            .into_iter()
            .partition(|(r, at)| r.snap < self.complete_below || (expire && now.saturating_sub(*at) >= retry));
        self.ro_parked = keep;
        for (r, _) in go {
            self.ro_answer(r, cx);
        }
        if expire {
            if let Some(first) = self.ro_parked.iter().map(|(_, at)| *at).min() {
                cx.set_timer((first + retry).saturating_sub(now).max(1), TimerId(T_RO_PARK));
            }
        }
    }

    /// §VI-F: the committed versions below snapshot epoch `snap`, unless a key has an
    /// unresolved writer of an epoch up to `snap` (inside its decision period) or the
    /// footprints of those epochs are not all here yet: then `None` (retry).
    fn ro_read(&self, snap: u64, keys: &[Key]) -> Option<Vec<RoRead>> {
        if self.complete_below <= snap {
            return None;
        }
        let bound = (snap + 1) << RANK_BITS;
        let mut out = vec![];
        for k in keys {
            if let Some(q) = self.keys.get(k) {
                if q.fps.values().any(|(e, w)| *w && *e <= snap) {
                    return None;
                }
            }
            let v = self
                .store
                .versions(k)
                .iter()
                .rev()
                .find(|v| v.wts < bound && !v.tentative);
            out.push((k.clone(), v.map(|v| v.id), v.map(|v| v.value.clone())));
        }
        Some(out)
    }

    fn advance_manifest(&mut self) {
        while let Some((Some(n), got)) = self.manifest.get(&self.complete_below).copied() {
            if got < n {
                break;
            }
            self.manifest.remove(&self.complete_below);
            self.complete_below += 1;
        }
    }

    fn on_forward(&mut self, chain: Arc<ChainTxn>, pos: usize, hops: u32, cx: &mut Ctx<'_, Msg>) {
        let id = chain.id;
        if self.done.contains(&id) {
            if chain.term > 0 {
                // A successor coordinator re-dispatched a chain its predecessor already
                // committed or aborted here: it finished (the decision was made without
                // this DC's vote counting, so the empty dependency set decides nothing).
                cx.send_on_chain(
                    chain.coord,
                    Msg::Finished {
                        txn: id,
                        deps: vec![],
                        hops,
                        spec: Spec::Incomplete,
                    },
                    hops,
                );
            }
            return; // resolved here already
        }
        if let Some(t) = self.txns.get_mut(&id) {
            if chain.term > t.chain.term {
                // The DC's coordinator changed: passes and reports go to the new one.
                t.chain = chain.clone();
            }
            // A re-sent forward pass (the coordinator's retransmission after a loss):
            // pass on whatever this server already did.
            let (st, deps, h) = (t.st, t.deps.iter().copied().collect::<Vec<_>>(), t.hops);
            let (pre, spec) = (t.pre.clone(), t.spec.clone());
            match st {
                St::Footprint if pos + 1 < chain.servers.len() => pass_forward(&chain, pos, hops, cx),
                St::Precommitted if pos > 0 => cx.send_on_chain(
                    chain.servers[pos - 1],
                    Msg::Backward {
                        chain: chain.clone(),
                        pos: pos - 1,
                        deps,
                        hops: h,
                        pre,
                        spec,
                    },
                    h,
                ),
                St::Precommitted => cx.send_on_chain(
                    chain.coord,
                    Msg::Finished {
                        txn: id,
                        deps,
                        hops: h,
                        spec,
                    },
                    h,
                ),
                _ => {}
            }
            return;
        }
        cx.charge_ops(1);
        for (k, w) in &chain.keys[pos] {
            self.keys.entry(k.clone()).or_default().fps.insert(id, (chain.eid, *w));
        }
        self.manifest.entry(chain.eid).or_insert((None, 0)).1 += 1;
        self.txns.insert(
            id,
            CTxn {
                chain: chain.clone(),
                pos,
                st: St::Footprint,
                deps: BTreeSet::new(),
                implicit: BTreeSet::new(),
                resolved: false,
                stalled: false,
                hops,
                timer: 0,
                pre: vec![],
                spec: Spec::Running,
                valued: false,
                tmp: vec![],
                value_asks: 0,
                value_timer: false,
            },
        );
        let below = self.complete_below;
        self.advance_manifest();
        if pos + 1 < chain.servers.len() {
            pass_forward(&chain, pos, hops, cx);
        } else {
            // The last server of the chain turns the forward pass into the backward pass.
            self.on_backward(chain, pos, vec![], hops, (vec![], Spec::Running), cx);
        }
        // A new footprint only adds constraints, so a waiting transaction can start
        // now only if the epoch boundary moved (see `retry_touching`).
        if self.complete_below != below {
            self.ro_unpark(false, cx);
            self.retry_waiting(cx);
        }
    }

    fn on_backward(
        &mut self,
        chain: Arc<ChainTxn>,
        pos: usize,
        deps: Vec<TxnId>,
        hops: u32,
        (pre, spec): (Vec<RoRead>, Spec),
        cx: &mut Ctx<'_, Msg>,
    ) {
        let id = chain.id;
        let Some(t) = self.txns.get_mut(&id) else { return };
        if t.st != St::Footprint || t.pos != pos {
            return; // a duplicate
        }
        t.deps.extend(deps);
        t.pre = pre;
        t.spec = spec;
        t.hops = t.hops.max(hops);
        t.st = St::Waiting;
        self.waiting.push(id);
        let n = self.next_timer;
        self.next_timer += 1;
        self.timers.insert(T_STALL + n, id);
        cx.set_timer(self.cfg.stall, TimerId(T_STALL + n));
        self.try_start(id, cx);
    }

    /// Rule 1 and Rule 2: may `id` start accessing its records here?
    fn try_start(&mut self, id: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.txns.get(&id) else { return };
        if t.st != St::Waiting {
            return;
        }
        let eid = t.chain.eid;
        if self.complete_below < eid && !t.stalled {
            return; // footprints of an earlier epoch may still be on their way here
        }
        let mut candidates: BTreeSet<TxnId> = BTreeSet::new();
        for (k, w) in t.keys() {
            let Some(q) = self.keys.get(k) else { continue };
            for x in &q.started {
                let xw = q.fps.get(x).map(|f| f.1).unwrap_or(true);
                if *x != id && (*w || xw) && self.txns.get(x).is_some_and(|o| o.st == St::Holding) {
                    return; // Rule 2: a transaction in the middle of accessing the key
                }
                let value_wait = !t.stalled && t.value_asks < spec::VALUE_CHECKS;
                if *x != id && xw && value_wait && self.txns.get(x).is_some_and(|o| !o.valued) {
                    // Rule 2 with values: a writer ahead whose program has not run to
                    // its end has no temporary version to read yet.
                    self.arm_value_check(id, cx);
                    return;
                }
            }
            for (x, (xe, xw)) in &q.fps {
                if *x == id || !(*w || *xw) || q.started_set.contains(x) {
                    continue;
                }
                let must_follow = *xe < eid || t.deps.contains(x) || t.implicit.contains(x);
                if must_follow && !t.stalled {
                    return; // Rule 1: stay ordered behind a dependency (or an earlier epoch)
                }
                if *xe == eid {
                    candidates.insert(*x);
                }
            }
        }
        // The Fig. 4 pattern: a transaction with dependencies is about to be ordered
        // before others that left footprints here; ask the resolver.
        if !t.deps.is_empty() && !candidates.is_empty() && !t.resolved && !t.stalled {
            let coord = t.chain.coord;
            let deps: Vec<TxnId> = t.deps.iter().copied().collect();
            let t = self.txns.get_mut(&id).expect("present");
            t.st = St::Resolving;
            self.resolves += 1;
            cx.send(
                coord,
                Msg::Resolve {
                    txn: id,
                    deps,
                    candidates: candidates.into_iter().collect(),
                },
            );
            return;
        }
        // Start: every conflicting transaction that accessed a key before becomes a
        // dependency (Rule 1); all of them have pre-committed here (Rule 2).
        let keys: Vec<(Key, bool)> = t.keys().to_vec();
        let mut new_deps = vec![];
        let mut hold: Time = 0;
        for (k, w) in &keys {
            let q = self.keys.entry(k.clone()).or_default();
            for x in &q.started {
                let xw = q.fps.get(x).map(|f| f.1).unwrap_or(true);
                if *x != id && (*w || xw) {
                    new_deps.push(*x);
                }
            }
            if q.started_set.insert(id) {
                q.started.push(id);
            }
            let j = self.cfg.jitter;
            let f = if j > 0.0 { 1.0 + cx.rng().gen_range(-j..j) } else { 1.0 };
            hold += (self.cfg.access_time(k) as f64 * f) as Time;
        }
        cx.charge_ops(keys.len() as u32);
        let n = self.next_timer;
        self.next_timer += 1;
        let t = self.txns.get_mut(&id).expect("present");
        t.deps.extend(new_deps);
        if !t.deps.is_empty() {
            cx.send(
                t.chain.coord,
                Msg::Edges {
                    txn: id,
                    deps: t.deps.iter().copied().collect(),
                },
            );
        }
        t.st = St::Holding;
        t.timer = T_HOLD + n;
        self.timers.insert(T_HOLD + n, id);
        self.waiting.retain(|w| *w != id);
        // It reads its keys here as they are now (its place in their order is taken)
        // and runs its program as far as the values read so far allow.
        self.execute(id, cx);
        if hold == 0 {
            // A zero-cost access model (unit tests): pre-commit at once.
            self.timers.remove(&(T_HOLD + n));
            self.precommit(id, cx);
        } else {
            cx.set_timer(hold, TimerId(T_HOLD + n));
        }
    }

    pub(super) fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        if t.0 == T_RO_PARK {
            self.ro_unpark(true, cx);
            return;
        }
        if t.0 >= T_VALUE {
            if let Some(id) = self.timers.remove(&t.0) {
                self.value_check(id, cx);
            }
            return;
        }
        let Some(id) = self.timers.remove(&t.0) else { return };
        if t.0 >= T_STALL {
            if let Some(x) = self.txns.get_mut(&id) {
                if matches!(x.st, St::Waiting | St::Resolving) {
                    self.stalls += 1;
                    x.stalled = true;
                    x.st = St::Waiting;
                    self.try_start(id, cx);
                }
            }
            return;
        }
        if self
            .txns
            .get(&id)
            .is_some_and(|x| x.st == St::Holding && x.timer == t.0)
        {
            self.precommit(id, cx);
        }
    }

    /// The access ended: pre-committed here, the backward pass moves on (or ends at
    /// the coordinator).
    fn precommit(&mut self, id: TxnId, cx: &mut Ctx<'_, Msg>) {
        let x = self.txns.get_mut(&id).expect("holding");
        x.st = St::Precommitted;
        let deps: Vec<TxnId> = x.deps.iter().copied().collect();
        let (chain, pos, hops) = (x.chain.clone(), x.pos, x.hops);
        let (pre, spec) = (x.pre.clone(), x.spec.clone());
        if !deps.is_empty() {
            cx.send(
                chain.coord,
                Msg::Edges {
                    txn: id,
                    deps: deps.clone(),
                },
            );
        }
        if pos > 0 {
            cx.send_on_chain(
                chain.servers[pos - 1],
                Msg::Backward {
                    chain: chain.clone(),
                    pos: pos - 1,
                    deps,
                    hops,
                    pre,
                    spec,
                },
                hops,
            );
        } else {
            cx.send_on_chain(
                chain.coord,
                Msg::Finished {
                    txn: id,
                    deps,
                    hops,
                    spec,
                },
                hops,
            );
        }
        let keys: Vec<Key> = chain.keys[pos].iter().map(|(k, _)| k.clone()).collect();
        self.retry_touching(keys, cx);
    }

    /// The coordinator committed or aborted `id`: its footprints and order go.
    fn resolve(&mut self, id: TxnId, cx: &mut Ctx<'_, Msg>) {
        // Done even if its forward pass has not reached this server: a coordinator that
        // gave up executing it (`give_up_stale`) commits it without the chain, and a
        // forward pass arriving later must not leave a footprint no one resolves.
        self.done.insert(id);
        let Some(t) = self.txns.remove(&id) else { return };
        let touched: Vec<Key> = t.keys().iter().map(|(k, _)| k.clone()).collect();
        for (k, _) in t.keys() {
            if let Some(q) = self.keys.get_mut(k) {
                q.fps.remove(&id);
                if q.started_set.remove(&id) {
                    q.started.retain(|x| *x != id);
                }
                if q.fps.is_empty() && q.started.is_empty() {
                    self.keys.remove(k);
                }
            }
        }
        self.waiting.retain(|w| *w != id);
        self.retry_touching(touched, cx);
    }

    /// Retries, in `waiting` order, the waiting transactions on one of `keys` (or on a
    /// key of a transaction that starts during the pass). A waiting transaction is
    /// blocked as of its last try, and only four things unblock one: a conflicting
    /// holder pre-commits or a footprint is resolved (both on the keys passed here),
    /// the epoch boundary moves (`retry_waiting`, every transaction), or its own stall
    /// timer or resolver answer (which retry it alone). So the others would fail again
    /// and are skipped: the same outcome as `retry_waiting`, without its cost of every
    /// waiting transaction times every transaction on a hot key.
    fn retry_touching(&mut self, keys: Vec<Key>, cx: &mut Ctx<'_, Msg>) {
        let mut touched: HashSet<Key> = keys.into_iter().collect();
        let ws: Vec<TxnId> = self.waiting.clone();
        for w in ws {
            let hit = self
                .txns
                .get(&w)
                .is_some_and(|t| t.st == St::Waiting && t.keys().iter().any(|(k, _)| touched.contains(k)));
            if !hit {
                continue;
            }
            self.try_start(w, cx);
            if let Some(t) = self.txns.get(&w) {
                if t.st != St::Waiting {
                    touched.extend(t.keys().iter().map(|(k, _)| k.clone()));
                }
            }
        }
    }

    fn retry_waiting(&mut self, cx: &mut Ctx<'_, Msg>) {
        let ws: Vec<TxnId> = self.waiting.clone();
        for w in ws {
            self.try_start(w, cx);
        }
    }

    pub(super) fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        // Timers were lost: restart holds and stall checks.
        let mut ids: Vec<TxnId> = self
            .txns
            .iter()
            .filter(|(_, t)| matches!(t.st, St::Holding | St::Waiting | St::Resolving))
            .map(|(id, _)| *id)
            .collect();
        ids.sort();
        self.timers.clear();
        if !self.ro_parked.is_empty() {
            cx.set_timer(super::client::RO_RETRY, TimerId(T_RO_PARK));
        }
        for id in ids {
            let n = self.next_timer;
            self.next_timer += 1;
            let t = self.txns.get_mut(&id).expect("present");
            t.value_timer = false;
            match t.st {
                St::Holding => {
                    t.timer = T_HOLD + n;
                    self.timers.insert(T_HOLD + n, id);
                    cx.set_timer(self.cfg.access_base, TimerId(T_HOLD + n));
                }
                _ => {
                    t.st = St::Waiting;
                    t.resolved = false;
                    self.timers.insert(T_STALL + n, id);
                    cx.set_timer(self.cfg.stall, TimerId(T_STALL + n));
                }
            }
        }
        self.retry_waiting(cx);
    }
}
