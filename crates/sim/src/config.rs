//! The simulator's configuration, errors and output.

use super::*;

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

/// The simulator's default version TTL: short, so every run of a few seconds
/// collects versions (and its campaigns test each protocol against collection).
pub const DEFAULT_VERSION_TTL: Time = 1_000_000_000;

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
    /// Version GC (in the protocols that collect): how long a superseded version is
    /// kept, in virtual time. The simulator always records the collected ids, so the
    /// replicas' chains reach the checker whole (docs/SIMULATOR.md, "Version GC").
    pub version_ttl: Time,
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
            version_ttl: DEFAULT_VERSION_TTL,
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
