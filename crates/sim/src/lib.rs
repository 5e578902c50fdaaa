//! The deterministic WAN simulator (docs/DESIGN.md, "Simulator").
//!
//! One process, virtual time in nanoseconds, an event queue ordered by
//! (time, sequence number) so ties break deterministically: one seed → one run, bit for
//! bit. It drives the same protocol actors as the TCP runtime.
//!
//! - **Latency**: one-way delay = RTT/2 between the two nodes' DCs (intra-DC RTT/2
//!   inside one), plus seeded jitter of up to `jitter` × that delay. Links are FIFO
//!   (like TCP) unless a `reorder` fault picks a message.
//! - **CPU**: each server handles one input at a time; handling costs `per_msg` +
//!   `per_op` × key operations (the actor reports the work through its `Ctx`). Inputs
//!   that arrive while a node is busy wait in its inbox, so throughput saturates and
//!   queues build. Clients cost nothing.
//! - **Log device**: a handler that forced the log (synchronous writes) has its output
//!   held until its records are on disk. Each node's log device flushes with group
//!   commit: one flush takes `fsync`, and every force requested while a flush is in
//!   progress joins the next one, so concurrent forces share a flush instead of
//!   queueing one fsync each. The CPU keeps serving other inputs meanwhile.
//! - **WAN trips**: every envelope carries the number of cross-DC one-way hops on its
//!   causal chain; whatever an actor sends while handling an input inherits that count
//!   (+1 if it crosses DCs); a timer inherits the count of the input that armed it; a
//!   new transaction starts at 0. The count on the message that decides a transaction
//!   at its client is stored in the history as its `wan_trips`.
//! - **Faults**: see [`faults`]. The run has a *safety phase* (clients run, faults
//!   strike) and then a *liveness phase*: once every transaction has been issued and
//!   answered (or the time cap is hit), every fault heals, crashed servers restart, and
//!   the system runs `settle` more virtual time so that in-flight work finishes.
//! - **Clients**: closed-loop (each client runs one transaction at a time, with
//!   optional think time) or open-loop (Poisson arrivals at a target rate over the
//!   client pool; an arrival waits for a free client).
//! - Every run records a history and ends with the checker's verdict.

mod config;
pub mod faults;
mod net;
mod queue;
pub mod report;

pub use faults::{Fault, FaultPlan};
pub use report::{CheckSummary, Latency, Messages, SimReport, WanTrips};

use meridian_check::{History, Meta};
use meridian_core::{
    ms, rng_for, secs, Actor, ClientId, Command, Ctx, DcId, HomeRule, Layout, NodeId, Rng, Time, TimerId, Topology,
    TxnId, TxnRecord,
};
use meridian_protocols::{ClientRole, Env, Protocol, Replica, Timeouts};
use meridian_workload::Workload;
use rand::Rng as _;
use rustc_hash::FxHashMap as HashMap;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::sync::Arc;

pub use config::{CpuModel, SimConfig, SimError, SimOutput};

/// Runs the protocol named `name` (one of [`meridian_protocols::PROTOCOLS`]), optionally
/// with parameters: `replog:leaders=C/V/O` places shard `s`'s leader in the `s`-th DC
/// of the list (the paper's `R/R/R` notation); `replog:locks=no-wait` aborts on lock
/// conflicts instead of wound-wait.
pub fn run_named(name: &str, cfg: &SimConfig, progress: &mut dyn FnMut(u64, u64)) -> Result<SimOutput, SimError> {
    struct Run<'a, 'b>(&'a SimConfig, &'b mut dyn FnMut(u64, u64));
    impl WithProtocol for Run<'_, '_> {
        type Out = Result<SimOutput, SimError>;
        fn with<P: Protocol>(self, p: P) -> Self::Out {
            run(p, self.0, self.1)
        }
    }
    with_protocol(name, &cfg.topology, cfg.home, Run(cfg, progress))?
}

pub use meridian_protocols::named::{with_protocol, WithProtocol};

use net::debug_msgs;
use queue::{Ev, Input, Queue};

struct NodeRt<M> {
    up: bool,
    /// Incarnation: bumped on crash so stale timers and arrivals are dropped.
    inc: u32,
    busy: bool,
    /// Frozen (a `pause` fault) until then: it stays busy, and what arrives waits.
    paused_until: Time,
    /// When the one `Free` that counts for this busy node is due (an earlier one that
    /// the end of a pause replaced is skipped).
    free_at: Time,
    inbox: VecDeque<(Input<M>, u32)>,
    timers: HashMap<TimerId, u64>,
    timer_gen: u64,
    rng: Rng,
    /// The node's log device (group commit): end of the flush in progress, and end of
    /// the next flush if requests are already waiting for it.
    flush_end: Time,
    next_flush_end: Option<Time>,
}

impl<M> NodeRt<M> {
    /// A synchronous log write requested at `t`: returns when it is on disk. Group
    /// commit: a request joins the next flush, which starts when the flush in progress
    /// ends and carries every request that arrived meanwhile; an idle device starts a
    /// flush at once. The CPU is not held during the flush.
    fn log_sync(&mut self, t: Time, fsync: Time) -> Time {
        if let Some(next) = self.next_flush_end {
            if t >= self.flush_end {
                // The queued flush started when the previous one ended.
                self.flush_end = next;
                self.next_flush_end = None;
            }
        }
        if t >= self.flush_end {
            self.flush_end = t + fsync;
            return self.flush_end;
        }
        *self.next_flush_end.get_or_insert(self.flush_end + fsync)
    }
}

struct Sim<'a, P: Protocol> {
    cfg: &'a SimConfig,
    /// The protocol and environment (for [`SimConfig::image_every`]).
    proto: P,
    env: Env,
    /// Server inputs handled (for [`SimConfig::image_every`]).
    server_inputs: u64,
    layout: Arc<Layout>,
    servers: Vec<P::Server>,
    clients: Vec<P::Client>,
    rt: Vec<NodeRt<P::Msg>>,
    queue: Queue<P::Msg>,
    now: Time,
    net_rng: Rng,
    wl_rng: Rng,
    workload: Box<dyn Workload>,
    plan: FaultPlan,
    /// Each node's clock offset (clock skew faults; empty without): an actor reads
    /// `now + offset`; the history's times are corrected back to true time.
    clock_off: Vec<Time>,
    /// Cuts in force: (DC, DC, until, clients' messages dropped too).
    partitions: Vec<(DcId, DcId, Time, bool)>,
    /// FIFO links: the latest arrival time queued on each link, so a later message
    /// never overtakes an earlier one. Every link has a server at one end (clients
    /// talk only to servers): `fifo[x * servers + s]` is the link from node `x` to
    /// server `s` for every node `x`, and after those, the link from server `s` to
    /// client `c`. A dense table: one of these per message was a hash lookup.
    fifo: Vec<Time>,
    /// Links between two clients (none of the protocols sends on one).
    fifo_other: HashMap<(u32, u32), Time>,
    /// One-way delay between each pair of DCs (`Topology::one_way`, computed once).
    one_way: Vec<Time>,
    healed: bool,
    /// The latest arrival of a duplicate drawn in the safety phase (0: none).
    last_late: Time,
    // clients
    client_seq: Vec<u32>,
    client_busy: Vec<bool>,
    client_dead: Vec<bool>,
    dead_clients: u32,
    issued: u64,
    backlog: u64,
    /// Transactions submitted and not yet answered, on live clients.
    in_flight: u64,
    // output
    records: Vec<TxnRecord>,
    out: Vec<Command<P::Msg>>,
    recs: Vec<TxnRecord>,
    events: u64,
    msgs_total: u64,
    msgs_wan: u64,
    /// Transactions of live clients still unanswered when the run ended.
    unresolved: u64,
    /// Why the run was cut short by a message storm (`SimConfig::max_pending`).
    runaway: Option<String>,
    /// Why the run stopped before its transactions were done (a limit it hit).
    cut_short: Option<String>,
    /// When the last scheduled fault has struck and healed.
    faults_over: Time,
    /// When a transaction last finished.
    last_done: Time,
}

/// A safety phase in which nothing finishes for this long after the last fault healed
/// has stalled (beyond its protocol's tolerance, or a liveness bug): it ends, so that
/// the liveness phase can tell, instead of running to the time cap.
const STALL: Time = 60_000_000_000;

/// The liveness phase runs at least this long after the last late duplicate drawn in
/// the safety phase arrives, so that whatever that copy started is seen at the end:
/// nothing a late copy of a finished transaction's message may start lasts this long
/// (a lock it took again would be held until the 10 s idle timeout, and must be found
/// still held), while the work it may legitimately cause (an answer, a re-sent vote)
/// ends within a few round trips of any preset topology.
const AFTER_LAST_LATE: Time = 5_000_000_000;

/// The most closed-loop clients a simulation takes (a million clients with ten
/// transactions each need about 0.8 GB).
pub const MAX_CLIENTS: u32 = 1_000_000;

/// Runs one simulation of protocol `p`.
pub fn run<P: Protocol>(p: P, cfg: &SimConfig, progress: &mut dyn FnMut(u64, u64)) -> Result<SimOutput, SimError> {
    let wall = std::time::Instant::now();
    if cfg.clients == 0 {
        return Err(SimError::Invalid("--clients must be at least 1".into()));
    }
    if cfg.clients > MAX_CLIENTS {
        return Err(SimError::Invalid(format!(
            "--clients must be at most {MAX_CLIENTS} (each simulated client costs memory; {} asked)",
            cfg.clients
        )));
    }
    if cfg.txns == 0 {
        return Err(SimError::Invalid("--txns must be at least 1".into()));
    }
    if let Some(r) = cfg.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(SimError::Invalid(
                "--rate must be a positive number of transactions per second".into(),
            ));
        }
    }
    let workload = meridian_workload::build(&cfg.workload)?;
    let mut layout = Layout::new(cfg.topology.clone(), p.placement(cfg.home))?;
    let dcs: Vec<DcId> = if cfg.client_dcs.is_empty() {
        (0..cfg.topology.num_dcs() as u16).map(DcId).collect()
    } else {
        cfg.client_dcs.clone()
    };
    let client_nodes: Vec<NodeId> = (0..cfg.clients)
        .map(|i| layout.add_client(dcs[i as usize % dcs.len()]))
        .collect();
    let layout = Arc::new(layout);
    let env = Env {
        layout: layout.clone(),
        registry: Arc::new(meridian_workload::registry()),
        timeouts: cfg.timeouts.clone(),
        retention: meridian_protocols::Retention {
            ttl: cfg.version_ttl,
            record: true,
        },
    };
    let mut fault_rng = rng_for(cfg.seed, u64::MAX - 2);
    let plan = FaultPlan::parse(
        &cfg.faults,
        &cfg.topology,
        layout.num_servers(),
        cfg.clients,
        &mut fault_rng,
    )?;
    if std::env::var_os("MERIDIAN_DEBUG_FAULTS").is_some() {
        // In `--faults` syntax, to paste back: the whole plan, then one item a line.
        eprintln!("faults: {}", plan.explicit(&cfg.topology));
        for (t, f) in &plan.events {
            eprintln!("fault: {}", FaultPlan::event_spec(*t, f, &cfg.topology));
        }
        for (s, r) in layout.shard_replicas.iter().enumerate() {
            eprintln!("shard {s}: {r:?}");
        }
    }
    let servers: Vec<P::Server> = (0..layout.num_servers()).map(|n| p.server(&env, NodeId(n))).collect();
    // A real cluster checkpoints only a protocol that says it has an image
    // (`Protocol::has_image`): every run holds the two to agree, so a hand-written
    // `image` without `has_image` cannot go unnoticed (its journal would grow forever).
    if let Some(s) = servers.first() {
        assert_eq!(
            p.has_image(),
            p.image(s).is_some(),
            "{}: Protocol::has_image disagrees with Protocol::image",
            p.name()
        );
    }
    if cfg.image_every > 0 && !p.has_image() {
        return Err(SimError::Invalid(format!(
            "{} has no server image to rebuild its servers from",
            p.name()
        )));
    }
    let clients = client_nodes
        .iter()
        .enumerate()
        .map(|(i, n)| p.client(&env, *n, ClientId(i as u32)))
        .collect();
    let rt = (0..layout.num_nodes())
        .map(|n| NodeRt {
            up: true,
            inc: 0,
            busy: false,
            paused_until: 0,
            free_at: 0,
            inbox: VecDeque::new(),
            timers: HashMap::default(),
            timer_gen: 0,
            rng: rng_for(cfg.seed, n as u64),
            flush_end: 0,
            next_flush_end: None,
        })
        .collect();
    let mut sim: Sim<P> = Sim {
        cfg,
        proto: p.clone(),
        env: env.clone(),
        server_inputs: 0,
        layout: layout.clone(),
        servers,
        clients,
        rt,
        queue: Queue::new(),
        now: 0,
        net_rng: rng_for(cfg.seed, u64::MAX - 1),
        wl_rng: rng_for(cfg.seed, u64::MAX - 3),
        workload,
        clock_off: plan.clock_offsets(layout.num_servers(), cfg.clients),
        plan,
        partitions: vec![],
        fifo: vec![0; (2 * layout.num_nodes() - layout.num_servers()) as usize * layout.num_servers() as usize],
        fifo_other: HashMap::default(),
        one_way: {
            let t = &layout.topology;
            let dcs = (0..t.num_dcs() as u16).map(DcId);
            dcs.clone()
                .flat_map(|a| dcs.clone().map(move |b| t.one_way(a, b)))
                .collect()
        },
        healed: false,
        last_late: 0,
        client_seq: vec![0; cfg.clients as usize],
        client_busy: vec![false; cfg.clients as usize],
        client_dead: vec![false; cfg.clients as usize],
        dead_clients: 0,
        issued: 0,
        backlog: 0,
        in_flight: 0,
        records: Vec::with_capacity(cfg.txns.min(1 << 20) as usize),
        out: vec![],
        recs: vec![],
        events: 0,
        msgs_total: 0,
        msgs_wan: 0,
        unresolved: 0,
        runaway: None,
        cut_short: None,
        faults_over: 0,
        last_done: 0,
    };
    sim.faults_over = sim.plan.healed_by();
    let within_tolerance = sim.plan.within(p.fault_model(), &layout);
    let sim_wall = std::time::Instant::now();
    sim.start();
    let end = sim.main_loop(progress);
    let wall_simulate_s = sim_wall.elapsed().as_secs_f64();
    // What the report needs from the servers, read before the history takes their
    // state: from there on each server is dropped once its snapshot is taken (the
    // clients and the event queue, with its pending timeouts, go first), so that a
    // large run's peak memory does not hold the live servers, their snapshots and the
    // checker's graph at once.
    let holds = {
        let mut h = meridian_protocols::HoldStats::default();
        let mut any = false;
        for s in &sim.servers {
            if let Some(x) = s.lock_holds() {
                h.merge(x);
                any = true;
            }
        }
        any.then_some(h)
    };
    let locked_at_end = {
        let live = sim.servers.iter().enumerate().filter(|(i, _)| sim.rt[*i].up);
        let counts: Vec<usize> = live.filter_map(|(_, s)| s.locked_keys()).collect();
        (!counts.is_empty()).then(|| counts.iter().sum::<usize>() as u64)
    };
    let split_decisions = {
        let mut seen: HashMap<TxnId, (bool, bool)> = HashMap::default();
        let mut any = false;
        for s in &sim.servers {
            if let Some(v) = s.outcomes() {
                any = true;
                for (t, c) in v {
                    let e = seen.entry(t).or_default();
                    if c {
                        e.0 = true;
                    } else {
                        e.1 = true;
                    }
                }
            }
        }
        any.then(|| seen.values().filter(|(c, a)| *c && *a).count() as u64)
    };
    let stats = {
        let mut m = BTreeMap::new();
        let mut collected = 0;
        for s in &sim.servers {
            for (k, v) in s.stats().unwrap_or_default() {
                *m.entry(k).or_insert(0.0) += v;
            }
            collected += s.versions().map_or(0, |(_, c)| c);
        }
        // Version GC (the protocols that collect), where it collected anything.
        if collected > 0 {
            m.insert("versions_collected".into(), collected as f64);
        }
        m
    };
    sim.clients = vec![];
    sim.queue = Queue::new();
    let history = sim.history(&p);
    let check_wall = std::time::Instant::now();
    let check = meridian_check::check(&history);
    let wall_check_s = check_wall.elapsed().as_secs_f64();
    let invariant = {
        let layout = &layout;
        let snaps: HashMap<NodeId, &meridian_core::ReplicaSnapshot> =
            history.replicas.iter().map(|r| (r.node, r)).collect();
        sim.workload.check_final(&|k| {
            let n = layout.primary(layout.shard_of(k));
            snaps.get(&n).and_then(|r| r.keys.get(k)).and_then(|s| s.value.clone())
        })
    };
    let mut report = report::summarize(
        p.name(),
        cfg,
        sim.workload.spec(),
        &history,
        &check,
        invariant.err(),
        report::Counters {
            events: sim.events,
            msgs_total: sim.msgs_total,
            msgs_wan: sim.msgs_wan,
            virtual_end: end,
            holds,
            locked_at_end,
            split_decisions,
            unresolved: sim.unresolved,
            runaway: sim.runaway.clone(),
            within_tolerance: Some(within_tolerance),
            stats,
            wall_s: wall.elapsed().as_secs_f64(),
        },
    );
    report.fault_schedule = sim.plan.explicit(&cfg.topology);
    report.cut_short = sim.cut_short.clone();
    Ok(SimOutput {
        report,
        history,
        check,
        wall_simulate_s,
        wall_check_s,
    })
}

impl<P: Protocol> Sim<'_, P> {
    fn push(&mut self, at: Time, ev: Ev<P::Msg>) {
        self.queue.push(at, ev);
    }

    fn is_server(&self, n: NodeId) -> bool {
        self.layout.is_server(n)
    }

    fn start(&mut self) {
        for n in 0..self.layout.num_servers() {
            self.dispatch(NodeId(n), 0, |a, cx| match a {
                Either::S(s) => s.on_start(cx),
                Either::C(c) => c.on_start(cx),
            });
        }
        for (at, f) in self.plan.events.clone() {
            self.push(at, Ev::Fault(f));
        }
        match self.cfg.rate {
            None => {
                for c in 0..self.cfg.clients {
                    self.push(0, Ev::Submit { client: c });
                }
            }
            Some(_) => self.push(0, Ev::Arrival),
        }
    }

    /// All transactions issued and answered (or no live client left).
    fn workload_done(&self) -> bool {
        let all_dead = self.dead_clients == self.cfg.clients;
        all_dead || (self.issued >= self.cfg.txns && self.backlog == 0 && self.in_flight == 0)
    }

    fn main_loop(&mut self, progress: &mut dyn FnMut(u64, u64)) -> Time {
        let mut stop_at = Time::MAX;
        let mut last_progress = 0;
        while let Some((at, ev)) = self.queue.pop() {
            if at > stop_at {
                break;
            }
            let stalled = self.in_flight > 0
                && at > self.faults_over
                && at.saturating_sub(self.last_done.max(self.faults_over)) > STALL;
            let interrupted = !self.healed
                && self.events & 255 == 0
                && self
                    .cfg
                    .interrupt
                    .as_ref()
                    .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed));
            if interrupted {
                self.cut_short = Some(format!(
                    "interrupted at {:.3} s of virtual time with {} of {} transactions issued; those in flight were given the liveness phase",
                    at as f64 / 1e9,
                    self.issued,
                    self.cfg.txns
                ));
            }
            if (at > self.cfg.max_time || stalled || interrupted) && !self.healed {
                if at > self.cfg.max_time && !self.workload_done() {
                    self.cut_short = Some(format!(
                        "the virtual-time limit of {:.3} s stopped the run with {} of {} transactions issued and {} answered",
                        self.cfg.max_time as f64 / 1e9,
                        self.issued,
                        self.cfg.txns,
                        self.records.len()
                    ));
                }
                self.heal();
                stop_at = self.liveness_end();
            }
            self.now = at;
            self.events += 1;
            match ev {
                Ev::Arrive { node, input, hops, inc } => {
                    let rt = &mut self.rt[node.0 as usize];
                    if !rt.up || rt.inc != inc {
                        continue;
                    }
                    if rt.busy {
                        rt.inbox.push_back((input, hops));
                        if rt.inbox.len() > self.cfg.max_pending {
                            self.runaway = Some(format!(
                                "{node} had more than {} inputs waiting at {:.3} s (a message storm); the run was cut short",
                                self.cfg.max_pending,
                                at as f64 / 1e9
                            ));
                            break;
                        }
                    } else {
                        self.handle(node, input, hops);
                    }
                }
                Ev::Free { node, inc } => {
                    let rt = &mut self.rt[node.0 as usize];
                    if rt.inc != inc || !rt.up || rt.free_at != at {
                        continue;
                    }
                    if rt.paused_until > at {
                        // Frozen: the work it finished is done, the next waits.
                        let until = rt.paused_until;
                        rt.free_at = until;
                        self.push(until, Ev::Free { node, inc });
                        continue;
                    }
                    rt.busy = false;
                    // One input, as ever when handling costs CPU time (it makes the
                    // node busy again); all of them when it costs none, which only a
                    // pause lets pile up.
                    while !self.rt[node.0 as usize].busy && self.rt[node.0 as usize].up {
                        let Some((input, hops)) = self.rt[node.0 as usize].inbox.pop_front() else {
                            break;
                        };
                        self.handle(node, input, hops);
                    }
                }
                Ev::Submit { client } => self.submit(client),
                Ev::Arrival => {
                    if self.issued + self.backlog < self.cfg.txns {
                        self.backlog += 1;
                        let rate = self.cfg.rate.unwrap_or(1.0);
                        let gap = -(1.0 - self.net_rng.gen::<f64>()).ln() / rate;
                        let at = self.now + secs(gap);
                        self.push(at, Ev::Arrival);
                        self.drain_backlog();
                    }
                }
                Ev::Fault(f) => self.fault(f),
                Ev::Restart { node, inc } => {
                    if self.rt[node.0 as usize].inc == inc && !self.rt[node.0 as usize].up {
                        self.restart(node);
                    }
                }
                Ev::Heal { a, b } => {
                    let now = self.now;
                    self.partitions
                        .retain(|(x, y, until, _)| !((*x, *y) == (a, b) && *until <= now));
                }
            }
            if self.records.len() as u64 >= last_progress + 1000 {
                last_progress = self.records.len() as u64;
                progress(last_progress, self.cfg.txns);
            }
            if stop_at == Time::MAX && self.workload_done() {
                self.heal();
                stop_at = self.liveness_end();
            }
        }
        progress(self.records.len() as u64, self.cfg.txns);
        // Anything still unanswered is of unknown outcome.
        for (i, c) in self.clients.iter().enumerate() {
            if self.client_busy[i] && !self.client_dead[i] {
                if let Some(r) = c.in_flight() {
                    self.records.push(r);
                    self.unresolved += 1;
                }
            }
        }
        self.now
    }

    /// Ends the safety phase: every fault heals and crashed servers restart.
    /// When the liveness phase that starts now ends: `settle` from now, and at least
    /// [`AFTER_LAST_LATE`] after the last duplicate drawn arrives (duplicates are drawn
    /// only in the safety phase, so none arrives later).
    fn liveness_end(&self) -> Time {
        let settled = self.now + self.cfg.settle;
        if self.last_late == 0 {
            return settled;
        }
        settled.max(self.last_late + AFTER_LAST_LATE)
    }

    fn heal(&mut self) {
        self.healed = true;
        self.partitions.clear();
        // Pauses end too: a frozen node is freed now (its pending `Free` is replaced).
        let now = self.now;
        for n in 0..self.rt.len() {
            let rt = &mut self.rt[n];
            if rt.up && rt.paused_until > now {
                rt.paused_until = 0;
                if rt.busy {
                    rt.free_at = now;
                    let inc = rt.inc;
                    self.push(
                        now,
                        Ev::Free {
                            node: NodeId(n as u32),
                            inc,
                        },
                    );
                }
            }
        }
        for n in 0..self.layout.num_servers() {
            if !self.rt[n as usize].up {
                self.restart(NodeId(n));
            }
        }
    }

    fn submit(&mut self, client: u32) {
        let c = client as usize;
        // After the safety phase (time cap or all issued) no new transaction starts.
        if self.client_dead[c] || self.client_busy[c] || self.issued >= self.cfg.txns || self.healed {
            return;
        }
        self.issued += 1;
        self.in_flight += 1;
        self.client_busy[c] = true;
        self.client_seq[c] += 1;
        let txn = TxnId {
            client,
            seq: self.client_seq[c],
        };
        let node = NodeId(self.layout.num_servers() + client);
        let site = meridian_workload::Site {
            client_dc: self.layout.dc_of(node).0 as u32,
            dcs: self.layout.topology.num_dcs() as u32,
            shards: self.layout.topology.shards,
        };
        let call = self.workload.next_call_at(&mut self.wl_rng, &site);
        self.dispatch(node, 0, move |a, cx| {
            if let Either::C(cl) = a {
                cl.submit(txn, call, cx)
            }
        });
    }

    fn drain_backlog(&mut self) {
        while self.backlog > 0 {
            let Some(c) =
                (0..self.cfg.clients).find(|&c| !self.client_busy[c as usize] && !self.client_dead[c as usize])
            else {
                return;
            };
            self.backlog -= 1;
            self.submit(c);
        }
    }

    fn fault(&mut self, f: Fault) {
        if self.healed {
            return;
        }
        match f {
            Fault::Crash { node, down } => self.crash(node, down),
            Fault::Outage { dc, down } => {
                let nodes: Vec<NodeId> = self.layout.servers_in(dc).collect();
                for n in nodes {
                    self.crash(n, down);
                }
            }
            Fault::ClientCrash { client } => {
                let c = client as usize;
                if self.client_dead[c] {
                    return;
                }
                self.client_dead[c] = true;
                self.dead_clients += 1;
                if self.client_busy[c] {
                    self.in_flight -= 1;
                    if let Some(r) = self.clients[c].in_flight() {
                        self.records.push(r);
                    }
                }
                self.clients[c].on_crash();
                let node = NodeId(self.layout.num_servers() + client);
                let rt = &mut self.rt[node.0 as usize];
                rt.up = false;
                rt.inc += 1;
                rt.inbox.clear();
                rt.timers.clear();
                if self.cfg.rate.is_some() {
                    self.drain_backlog();
                }
            }
            Fault::Pause { node, down } => {
                let now = self.now;
                let rt = &mut self.rt[node.0 as usize];
                if rt.up {
                    rt.paused_until = rt.paused_until.max(now + down);
                    // An idle node is held busy until then; a busy one's next `Free`
                    // is put off to then (one `Free` is pending per busy node).
                    if !rt.busy {
                        rt.busy = true;
                        let (until, inc) = (rt.paused_until, rt.inc);
                        rt.free_at = until;
                        self.push(until, Ev::Free { node, inc });
                    }
                }
            }
            Fault::Partition { a, b, down, clients } => {
                let until = self.now + down;
                self.partitions.push((a, b, until, clients));
                self.push(until, Ev::Heal { a, b });
            }
        }
    }

    fn crash(&mut self, node: NodeId, down: Time) {
        let rt = &mut self.rt[node.0 as usize];
        if !rt.up {
            return;
        }
        rt.up = false;
        rt.busy = false;
        rt.paused_until = 0;
        rt.inc += 1;
        rt.inbox.clear();
        rt.timers.clear();
        let inc = rt.inc;
        self.servers[node.0 as usize].on_crash();
        self.push(self.now + down, Ev::Restart { node, inc });
    }

    fn restart(&mut self, node: NodeId) {
        let rt = &mut self.rt[node.0 as usize];
        rt.up = true;
        rt.busy = false;
        rt.inc += 1;
        self.dispatch(node, 0, |a, cx| {
            if let Either::S(s) = a {
                s.on_recover(cx)
            }
        });
    }

    fn handle(&mut self, node: NodeId, input: Input<P::Msg>, hops: u32) {
        match input {
            Input::Msg { from, msg } => {
                if let Some(pat) = debug_msgs() {
                    let text = format!("{msg:?}");
                    if text.contains(pat) {
                        eprintln!("{:>10.6}s recv {} -> {}: {text}", self.now as f64 / 1e9, from.0, node.0);
                    }
                }
                self.dispatch(node, hops, move |a, cx| match a {
                    Either::S(s) => s.on_message(from, msg, cx),
                    Either::C(c) => c.on_message(from, msg, cx),
                })
            }
            Input::Timer { id, gen } => {
                let rt = &mut self.rt[node.0 as usize];
                if rt.timers.get(&id) != Some(&gen) {
                    // Re-armed or cancelled since: the node is free for its next input.
                    if let Some((input, hops)) = rt.inbox.pop_front() {
                        self.handle(node, input, hops);
                    }
                    return;
                }
                rt.timers.remove(&id);
                self.dispatch(node, hops, move |a, cx| match a {
                    Either::S(s) => s.on_timer(id, cx),
                    Either::C(c) => c.on_timer(id, cx),
                });
            }
        }
    }

    /// Replaces server `node` by one rebuilt from its image.
    fn rebuild_from_image(&mut self, node: NodeId) {
        let ni = node.0 as usize;
        let image = self.proto.image(&self.servers[ni]).expect("checked at the start");
        match self.proto.restore(&self.env, node, &image) {
            Ok(s) => self.servers[ni] = s,
            Err(e) => panic!(
                "node {}: an image of {} bytes does not restore: {e}",
                node.0,
                image.len()
            ),
        }
    }

    /// The run's history. Takes the servers: each is dropped once its snapshot is
    /// taken (nothing after the history reads them).
    fn history(&mut self, p: &P) -> History {
        let replicas = std::mem::take(&mut self.servers)
            .into_iter()
            .map(|s| s.snapshot())
            .collect();
        let mut txns = std::mem::take(&mut self.records);
        // Ids are unique, so an unstable sort gives the same order, in place (a stable
        // sort would borrow a buffer of half the records at the run's peak).
        txns.sort_unstable_by_key(|t| t.id);
        History {
            meta: Meta {
                protocol: p.name().to_string(),
                // Under clock skew real-time order is not promised: timestamps read
                // from skewed clocks may order transactions against real time. The
                // checker still reports `strict`; only serializability is required.
                strict: p.strict() && self.plan.server_skew.is_empty() && self.plan.client_skew.is_empty(),
                shards: self.layout.topology.shards,
                shard_replicas: self.layout.shard_replicas.clone(),
                read_committed: p.read_committed(),
            },
            txns,
            replicas,
        }
    }
}

enum Either<'a, P: Protocol> {
    S(&'a mut P::Server),
    C(&'a mut P::Client),
}
