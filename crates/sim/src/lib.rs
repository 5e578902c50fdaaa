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

pub mod faults;
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

/// CPU cost model of a server.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuModel {
    /// Cost of handling any input.
    pub per_msg: Time,
    /// Cost per key operation.
    pub per_op: Time,
    /// Cost of one synchronous log write.
    pub fsync: Time,
}

impl Default for CpuModel {
    /// 10 µs per message and 2 µs per key operation (an in-memory store on a modern
    /// core); 0.5 ms per fsync (a datacenter SSD's flush latency).
    fn default() -> Self {
        CpuModel {
            per_msg: 10_000,
            per_op: 2_000,
            fsync: 500_000,
        }
    }
}

/// Everything that defines one simulation.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Topology.
    pub topology: Topology,
    /// Home rule for protocols with one home per shard.
    pub home: HomeRule,
    /// Workload spec.
    pub workload: String,
    /// Transactions to issue.
    pub txns: u64,
    /// Number of clients.
    pub clients: u32,
    /// DCs clients live in, round-robin (empty: spread over all DCs).
    pub client_dcs: Vec<DcId>,
    /// Seed for everything random.
    pub seed: u64,
    /// Fault spec (see [`faults`]).
    pub faults: String,
    /// CPU model.
    pub cpu: CpuModel,
    /// Maximum jitter as a fraction of the one-way delay.
    pub jitter: f64,
    /// Closed-loop think time between a client's transactions.
    pub think: Time,
    /// Open-loop target rate in transactions per second (None: closed loop).
    pub rate: Option<f64>,
    /// Protocol timeouts.
    pub timeouts: Timeouts,
    /// Virtual time at which the safety phase stops even if transactions are left
    /// (default `Time::MAX`: none; the run goes on until every transaction asked for is
    /// answered, or a stall ends it). A run this stops reports it in
    /// [`SimReport::cut_short`]; experiments that measure a time window set it on
    /// purpose.
    pub max_time: Time,
    /// Length of the liveness phase.
    pub settle: Time,
    /// Cores per server node, by node id (missing or 0: 1). A node with k cores
    /// handles an input in 1/k of the CPU model's cost (still one input at a time), as
    /// SIMULATOR.md's "dividing by the core count" does for every node; experiments use
    /// it where a paper's nodes differ (hierarchical-validation.md §IV-A1: 4-core
    /// validators, 2-core data nodes). Work an actor charges as serial
    /// (`Ctx::charge_serial_ops`) is not divided: it runs on one thread.
    pub cores: Vec<u32>,
    /// Most inputs one node may have waiting: a node whose inbox grows past it is in a
    /// message storm (a protocol livelock); the run ends there and is reported as a
    /// runaway instead of growing until the process is killed for memory. (An open-loop
    /// run of millions of transactions far above a node's capacity could reach it too.)
    pub max_pending: usize,
    /// Every this many server inputs (0: never), the server that handled the input is
    /// replaced by one rebuilt from its image ([`Protocol::image`], then
    /// [`Protocol::restore`]), as the TCP runtime does at a checkpoint. A protocol whose
    /// image holds its whole state runs exactly as without (the `images_change_nothing`
    /// tests); one without an image is refused.
    pub image_every: u64,
    /// Set (by a Ctrl-C handler, say) to end the run early: no new transaction starts,
    /// the ones in flight get the liveness phase, and the report says so in
    /// [`SimReport::cut_short`]. The history is that of the shorter run, whole.
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl SimConfig {
    /// Defaults for a topology and workload: 1000 transactions, 16 clients spread over
    /// all DCs, seed 1, no faults, 2% jitter, closed loop.
    pub fn new(topology: Topology, workload: &str) -> Self {
        SimConfig {
            topology,
            home: HomeRule::Spread,
            workload: workload.to_string(),
            txns: 1000,
            clients: 16,
            client_dcs: vec![],
            seed: 1,
            faults: String::new(),
            cpu: CpuModel::default(),
            jitter: 0.02,
            think: 0,
            rate: None,
            timeouts: Timeouts::default(),
            max_time: Time::MAX,
            settle: secs(30.0),
            cores: vec![],
            max_pending: 1 << 20,
            image_every: 0,
            interrupt: None,
        }
    }
}

/// A configuration the simulator cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Unknown protocol name or bad protocol parameters.
    #[error(transparent)]
    Protocol(#[from] meridian_protocols::named::ProtocolError),
    /// Bad workload.
    #[error(transparent)]
    Workload(#[from] meridian_workload::WorkloadError),
    /// Bad topology or placement.
    #[error(transparent)]
    Topology(#[from] meridian_core::TopologyError),
    /// Bad fault spec.
    #[error(transparent)]
    Faults(#[from] faults::FaultError),
    /// Anything else.
    #[error("{0}")]
    Invalid(String),
}

/// Everything a run produced.
#[derive(Debug)]
pub struct SimOutput {
    /// Summary (the `--json` object).
    pub report: SimReport,
    /// The full history.
    pub history: History,
    /// The checker's full verdict.
    pub check: meridian_check::Report,
    /// Wall-clock seconds spent simulating (from the first event to the last, before
    /// the history is taken); part of `report.wall_s`, as is `wall_check_s`.
    pub wall_simulate_s: f64,
    /// Wall-clock seconds the checker took on this run's history.
    pub wall_check_s: f64,
}

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

/// What a node is handling.
enum Input<M> {
    Msg { from: NodeId, msg: M },
    Timer { id: TimerId, gen: u64 },
}

enum Ev<M> {
    /// A message or timer reaches a node (it may have to wait in the inbox).
    Arrive {
        node: NodeId,
        input: Input<M>,
        hops: u32,
        inc: u32,
    },
    /// A node finished its current input and can take the next from its inbox.
    Free { node: NodeId, inc: u32 },
    /// A closed-loop client starts its next transaction.
    Submit { client: u32 },
    /// An open-loop arrival.
    Arrival,
    /// A fault strikes.
    Fault(Fault),
    /// A crashed server restarts.
    Restart { node: NodeId, inc: u32 },
    /// A partition heals.
    Heal { a: DcId, b: DcId },
}

/// A queued event's key: (time, push sequence number, slab slot).
type QKey = (Time, u64, u32);

/// The event queue: a calendar of time buckets holding small (time, seq, slot) keys,
/// with the events themselves in a slab, so the queue moves 24 bytes, not whole
/// messages. The order is exactly one heap's, (time, push order).
///
/// Time is cut into buckets 2^`BUCKET_BITS` ns wide. The current bucket is two sorted
/// sources popped by merge: `now` (the events already queued when the clock reached
/// the bucket, sorted once, earliest last) and `heap` (events pushed into the current
/// bucket since, usually a handful: CPU completions, intra-DC messages). The next
/// `RING` − 1 buckets are a ring of unsorted vectors, a push into one is a vector
/// push; later buckets wait unsorted in `far`. A run with thousands of clients holds
/// hundreds of thousands of pending timeouts, most of them re-armed since and due
/// seconds ahead: kept in one heap, every pop walked a heap of megabytes (a cache miss
/// per level), and a map of buckets cost a tree search per push.
struct Queue<M> {
    /// The current bucket's events queued before it became current, latest first.
    now: Vec<QKey>,
    /// Events pushed into the current bucket since it became current.
    heap: BinaryHeap<Reverse<QKey>>,
    /// Index of the current bucket (time >> BUCKET_BITS).
    bucket: u64,
    /// `ring[b % RING]` holds the events of bucket `b`, for `bucket < b < bucket + RING`.
    ring: Vec<Vec<QKey>>,
    /// Events in `ring`.
    in_ring: usize,
    /// Buckets at or after `bucket + RING` (when they were pushed).
    far: BTreeMap<u64, Vec<QKey>>,
    /// First key of `far` (u64::MAX when empty).
    far_first: u64,
    /// Emptied vectors, reused.
    spare: Vec<Vec<QKey>>,
    slab: Vec<Option<Ev<M>>>,
    free: Vec<u32>,
    seq: u64,
}

/// Width of one bucket of the event queue: 2^20 ns, about 1 ms.
const BUCKET_BITS: u32 = 20;
/// Buckets in the ring: 4096 of 1 ms, about 4.3 s ahead.
const RING: u64 = 1 << 12;

impl<M> Queue<M> {
    fn new() -> Self {
        Queue {
            now: Vec::new(),
            heap: BinaryHeap::new(),
            bucket: 0,
            ring: (0..RING).map(|_| Vec::new()).collect(),
            in_ring: 0,
            far: BTreeMap::new(),
            far_first: u64::MAX,
            spare: Vec::new(),
            slab: Vec::new(),
            free: Vec::new(),
            seq: 0,
        }
    }

    fn push(&mut self, at: Time, ev: Ev<M>) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(ev);
                i
            }
            None => {
                self.slab.push(Some(ev));
                self.slab.len() as u32 - 1
            }
        };
        let key = (at, self.seq, slot);
        let b = at >> BUCKET_BITS;
        if b <= self.bucket {
            self.heap.push(Reverse(key));
        } else if b - self.bucket < RING {
            let v = &mut self.ring[(b % RING) as usize];
            if v.capacity() == 0 {
                if let Some(s) = self.spare.pop() {
                    *v = s;
                }
            }
            v.push(key);
            self.in_ring += 1;
        } else {
            let spare = &mut self.spare;
            self.far
                .entry(b)
                .or_insert_with(|| spare.pop().unwrap_or_default())
                .push(key);
            self.far_first = self.far_first.min(b);
        }
    }

    fn pop(&mut self) -> Option<(Time, Ev<M>)> {
        let (at, _, slot) = loop {
            match (self.now.last(), self.heap.peek()) {
                (Some(a), Some(Reverse(h))) => {
                    if a < h {
                        break self.now.pop().expect("non-empty");
                    }
                    break self.heap.pop().expect("non-empty").0;
                }
                (Some(_), None) => break self.now.pop().expect("non-empty"),
                (None, Some(_)) => break self.heap.pop().expect("non-empty").0,
                (None, None) => self.advance()?,
            }
        };
        let ev = self.slab[slot as usize].take().expect("queued event present");
        self.free.push(slot);
        Some((at, ev))
    }

    /// The current bucket is spent: makes the next bucket holding events current.
    fn advance(&mut self) -> Option<()> {
        let mut keys = if self.in_ring == 0 {
            // Nothing in the ring: jump to the first far bucket.
            let (b, keys) = self.far.pop_first()?;
            self.bucket = b;
            keys
        } else {
            loop {
                self.bucket += 1;
                let v = &mut self.ring[(self.bucket % RING) as usize];
                if !v.is_empty() || self.bucket == self.far_first {
                    self.in_ring -= v.len();
                    let mut keys = std::mem::take(v);
                    if self.bucket == self.far_first {
                        let (_, mut more) = self.far.pop_first().expect("far_first is in far");
                        if keys.is_empty() {
                            keys = more;
                        } else {
                            keys.append(&mut more);
                            self.spare.push(more);
                        }
                    }
                    break keys;
                }
            }
        };
        if self.bucket >= self.far_first {
            self.far_first = self.far.first_key_value().map_or(u64::MAX, |(b, _)| *b);
        }
        keys.sort_unstable_by(|a, b| b.cmp(a));
        let done = std::mem::replace(&mut self.now, keys);
        self.spare.push(done);
        Some(())
    }
}

struct NodeRt<M> {
    up: bool,
    /// Incarnation: bumped on crash so stale timers and arrivals are dropped.
    inc: u32,
    busy: bool,
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
    partitions: Vec<(DcId, DcId, Time)>,
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
    if cfg.image_every > 0 && servers.first().is_some_and(|s| p.image(s).is_none()) {
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
        for s in &sim.servers {
            for (k, v) in s.stats().unwrap_or_default() {
                *m.entry(k).or_insert(0.0) += v;
            }
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
                    if rt.inc != inc || !rt.up {
                        continue;
                    }
                    rt.busy = false;
                    if let Some((input, hops)) = rt.inbox.pop_front() {
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
                        .retain(|(x, y, until)| !((*x, *y) == (a, b) && *until <= now));
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
            Fault::Partition { a, b, down } => {
                let until = self.now + down;
                self.partitions.push((a, b, until));
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

    /// Runs one actor call at `self.now` and applies its effects.
    fn dispatch(&mut self, node: NodeId, hops: u32, f: impl FnOnce(Either<'_, P>, &mut Ctx<'_, P::Msg>)) {
        let ni = node.0 as usize;
        let server = self.is_server(node);
        let mut out = std::mem::take(&mut self.out);
        let mut recs = std::mem::take(&mut self.recs);
        let mut orphans = Vec::new();
        let work = {
            let rt = &mut self.rt[ni];
            let clock = self.now + self.clock_off.get(ni).copied().unwrap_or(0);
            let mut cx = Ctx::new(clock, node, &mut rt.rng, &mut out, &mut recs).with_hops(hops);
            let actor = if server {
                Either::S(&mut self.servers[ni])
            } else {
                Either::C(&mut self.clients[ni - self.layout.num_servers() as usize])
            };
            f(actor, &mut cx);
            cx.work()
        };
        if server && self.cfg.image_every > 0 {
            self.server_inputs += 1;
            if self.server_inputs.is_multiple_of(self.cfg.image_every) {
                self.rebuild_from_image(node);
            }
        }
        let cost = if server {
            let c = &self.cfg.cpu;
            let k = self.cfg.cores.get(ni).copied().unwrap_or(1).max(1) as u64;
            (c.per_msg + c.per_op * work.key_ops as u64) / k + c.per_op * work.serial_ops as u64
        } else {
            0
        };
        // What the handler sent leaves when the CPU is done and, if it forced the log,
        // when the flush carrying its records is on disk.
        let mut depart = self.now + cost;
        if server && work.log_syncs > 0 {
            depart = self.rt[ni].log_sync(depart, self.cfg.cpu.fsync);
        }
        let inc = self.rt[ni].inc;
        if cost > 0 {
            self.rt[ni].busy = true;
            self.push(self.now + cost, Ev::Free { node, inc });
        }
        for cmd in out.drain(..) {
            match cmd {
                Command::Send { to, msg, chain } => self.send(node, to, msg, chain.unwrap_or(hops), depart),
                Command::SetTimer { id, after } => {
                    let rt = &mut self.rt[ni];
                    rt.timer_gen += 1;
                    let gen = rt.timer_gen;
                    rt.timers.insert(id, gen);
                    self.push(
                        depart + after,
                        Ev::Arrive {
                            node,
                            input: Input::Timer { id, gen },
                            hops,
                            inc,
                        },
                    );
                }
                Command::CancelTimer { id } => {
                    self.rt[ni].timers.remove(&id);
                }
                // The simulator's workloads submit whole programs: an interactive
                // script that stops for input has no caller, and aborts (as in a
                // client process whose caller has gone).
                Command::AwaitInput { txn, .. } => orphans.push(txn),
                // An operator's log line: the simulation has no operator.
                Command::Note { .. } => {}
            }
        }
        let off = self.clock_off.get(ni).copied().unwrap_or(0);
        for mut r in recs.drain(..) {
            r.wan_trips = hops;
            if off > 0 {
                // The client read its own (skewed) clock; the history is in true time.
                r.start = r.start.saturating_sub(off);
                r.commit_start = r.commit_start.map(|t| t.saturating_sub(off));
                r.end = r.end.map(|t| t.saturating_sub(off));
            }
            if !self.clock_off.is_empty() {
                // Some protocols report `commit_start` from a server's clock: under
                // skew it may fall outside the client's [start, end]; keep it inside.
                let end = r.end.unwrap_or(Time::MAX);
                r.commit_start = r.commit_start.map(|t| t.clamp(r.start, end.max(r.start)));
            }
            self.last_done = self.now;
            let client = r.id.client as usize;
            self.records.push(r);
            if self.client_busy[client] {
                self.in_flight -= 1;
            }
            self.client_busy[client] = false;
            match self.cfg.rate {
                None => {
                    let at = self.now + self.cfg.think;
                    self.push(at, Ev::Submit { client: client as u32 });
                }
                Some(_) => self.drain_backlog(),
            }
        }
        self.out = out;
        self.recs = recs;
        for txn in orphans {
            let args = meridian_txn::script::encode(&[meridian_txn::script::Op::Abort(
                "the script stopped for input and no caller is waiting".into(),
            )]);
            // Boxed: one instantiation of `dispatch`, however deep this recursion goes.
            type Resume<'a, P> = Box<dyn FnOnce(Either<'_, P>, &mut Ctx<'_, <P as Protocol>::Msg>) + 'a>;
            let f: Resume<'_, P> = Box::new(move |a, cx| {
                if let Either::C(c) = a {
                    c.extend(txn, args, cx)
                }
            });
            self.dispatch(node, hops, f);
        }
    }

    fn send(&mut self, from: NodeId, to: NodeId, msg: P::Msg, hops: u32, depart: Time) {
        if let Some(pat) = debug_msgs() {
            let text = format!("{msg:?}");
            if text.contains(pat) {
                eprintln!("{:>10.6}s send {} -> {}: {text}", depart as f64 / 1e9, from.0, to.0);
            }
        }
        if to.0 >= self.layout.num_nodes() {
            return; // addressed to nobody: dropped, like a packet to a dead address
        }
        let (da, db) = (self.layout.dc_of(from), self.layout.dc_of(to));
        let wan = da != db;
        self.msgs_total += 1;
        if wan {
            self.msgs_wan += 1;
        }
        if self
            .partitions
            .iter()
            .any(|(a, b, _)| (*a, *b) == (da, db) || (*a, *b) == (db, da))
        {
            return;
        }
        let faulty = !self.healed;
        if faulty && self.plan.loss > 0.0 && self.net_rng.gen_bool(self.plan.loss) {
            return;
        }
        let base = self.one_way[da.0 as usize * self.layout.topology.num_dcs() + db.0 as usize];
        let jitter = if self.cfg.jitter > 0.0 {
            (base as f64 * self.cfg.jitter * self.net_rng.gen::<f64>()) as Time
        } else {
            0
        };
        let mut at = depart + base + jitter;
        let hops = hops + wan as u32;
        let reorder = faulty && self.plan.reorder > 0.0 && self.net_rng.gen_bool(self.plan.reorder);
        if reorder {
            at += (base.max(ms(1.0)) as f64 * self.net_rng.gen::<f64>()) as Time;
        } else {
            let last = self.fifo_link(from, to);
            at = at.max(*last);
            *last = at;
        }
        let inc = self.rt[to.0 as usize].inc;
        if faulty && self.plan.dup > 0.0 && self.net_rng.gen_bool(self.plan.dup) {
            let late = self.plan.dup_late.unwrap_or(base.max(ms(1.0)));
            let extra = (late as f64 * self.net_rng.gen::<f64>()) as Time;
            self.last_late = self.last_late.max(at + extra);
            self.push(
                at + extra,
                Ev::Arrive {
                    node: to,
                    input: Input::Msg { from, msg: msg.clone() },
                    hops,
                    inc,
                },
            );
        }
        self.push(
            at,
            Ev::Arrive {
                node: to,
                input: Input::Msg { from, msg },
                hops,
                inc,
            },
        );
    }

    /// The latest arrival queued on the link `from` → `to` (see `fifo`).
    fn fifo_link(&mut self, from: NodeId, to: NodeId) -> &mut Time {
        let (s, n) = (self.layout.num_servers(), self.layout.num_nodes());
        let (f, t) = (from.0 as usize, to.0 as usize);
        if to.0 < s {
            &mut self.fifo[f * s as usize + t]
        } else if from.0 < s {
            &mut self.fifo[(n as usize + (to.0 - s) as usize) * s as usize + f]
        } else {
            self.fifo_other.entry((from.0, to.0)).or_insert(0)
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

/// `MERIDIAN_DEBUG_MSGS=TEXT`: every message whose `Debug` form contains TEXT is printed
/// to stderr when it is sent (`send`, at its departure; a message a fault drops has a
/// `send` line and no `recv` line) and when its receiver handles it (`recv`), with the
/// virtual time, sender and receiver. For following one transaction of a failing
/// seed, e.g. `MERIDIAN_DEBUG_MSGS='client: 1, seq: 48 }'`.
fn debug_msgs() -> Option<&'static str> {
    static PAT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PAT.get_or_init(|| std::env::var("MERIDIAN_DEBUG_MSGS").ok().filter(|s| !s.is_empty()))
        .as_deref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The bucketed queue pops exactly what one heap ordered by (time, push order)
        /// pops: events in the current bucket, in later buckets, far ahead, at the end
        /// of time, and ties, pushed between pops as a simulation does (never before
        /// the last popped time).
        #[test]
        fn queue_pops_in_time_then_push_order(ops in proptest::collection::vec((any::<bool>(), 0u8..16, any::<u64>()), 1..600)) {
            let mut q: Queue<()> = Queue::new();
            let mut model: BinaryHeap<Reverse<(Time, u32)>> = BinaryHeap::new();
            let (mut n, mut now) = (0u32, 0 as Time);
            let id = |ev: Ev<()>| match ev {
                Ev::Submit { client } => client,
                _ => unreachable!(),
            };
            for (pop, kind, r) in ops {
                if pop {
                    let got = q.pop().map(|(t, ev)| (t, id(ev)));
                    let want = model.pop().map(|Reverse(k)| k);
                    prop_assert_eq!(got, want);
                    if let Some((t, _)) = got {
                        now = t;
                    }
                } else {
                    let at = match kind {
                        0..=2 => now,
                        3..=5 => now.saturating_add(r % 1_000),
                        6..=12 => now.saturating_add(r % (1 << (BUCKET_BITS + 2))),
                        13 if r % 2 == 0 => now.saturating_add(r % ((RING + 2) << BUCKET_BITS)),
                        13 | 14 => now.saturating_add(r % 10_000_000_000),
                        _ if r % 8 == 0 => Time::MAX - r % 3,
                        _ => now.saturating_add(r % (1 << 40)),
                    };
                    n += 1;
                    q.push(at, Ev::Submit { client: n });
                    model.push(Reverse((at, n)));
                }
            }
            loop {
                let got = q.pop().map(|(t, ev)| (t, id(ev)));
                let want = model.pop().map(|Reverse(k)| k);
                prop_assert_eq!(got, want);
                if got.is_none() {
                    break;
                }
            }
        }
    }
}
