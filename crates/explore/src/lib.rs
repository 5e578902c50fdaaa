//! Bounded exhaustive exploration of one small configuration (issue 58).
//!
//! Random campaigns draw fault schedules; what they almost never draw (a crash between
//! two particular sends, a duplicate delivered into a later view, a timeout firing
//! just before the reply it waits for) is where a commit protocol's remaining bugs
//! live. The explorer takes the protocols' own sans-IO actors (no second
//! specification) and searches, breadth first, every schedule of a small deployment up
//! to a depth:
//!
//! - **State** (`world.rs`): every server and client (cloned), every node's random
//!   generator and armed timers, the messages in flight, the clock, the clients'
//!   outcomes and the fault budget left. States with equal fingerprints (a hash over
//!   all of that; servers by their image) are explored once, so interleavings of
//!   independent deliveries collapse.
//! - **Steps**: deliver any message in flight (in any order: links are not FIFO), fire
//!   a node's earliest timer, and within the budget ([`Budget`]) lose or duplicate a
//!   message, fire a timer early (messages still in flight), crash a server; restart a
//!   crashed one at any later step.
//! - **Properties at every state**: no transaction committed at one server and aborted
//!   at another, nor acknowledged to its client against what a server applied.
//! - **At the end of every path** (the depth bound, or every transaction answered with
//!   nothing in flight): every fault heals (crashed servers restart), a fair schedule
//!   (oldest message first, else the earliest timer) runs for up to a minute of virtual
//!   time, then two query periods more (up to an idle timeout more while keys are locked); then every transaction must have resolved
//!   (liveness), nothing may be left locked, and the history (clients' records and the
//!   servers' committed state) must pass the same checker as every simulation.
//!
//! A violation comes back as the shortest path to it (breadth first), as steps that
//! `meridian explore --replay` runs again with every message printed.
//!
//! Choices made where the issue is open: time is abstract (a message takes no time,
//! only timers move the clock; see `world.rs`); a message to a crashed server is lost
//! (its connections die with it); clients do not crash; liveness is judged after the
//! faults heal, with the fair schedule above, not as "no terminal state", because
//! every protocol's periodic timers mean no state is terminal.

mod step;
mod strategy;
mod world;

pub use step::{Budget, Step, ANY};

use meridian_check::{History, Meta};
use meridian_core::{rng_for, secs, ClientId, DcId, HomeRule, Layout, NodeId, Time, Topology, TxnRecord};
use meridian_protocols::named::{with_protocol, WithProtocol};
use meridian_protocols::{Env, FaultModel, Protocol, Replica, Timeouts};
use rustc_hash::FxHashSet;
use std::sync::Arc;
use world::{Shared, World};

/// What to explore.
#[derive(Clone, Debug)]
pub struct Config {
    /// `--protocol` spec.
    pub protocol: String,
    /// Shards.
    pub shards: u32,
    /// DCs (one replica of each shard in each, for the protocols that replicate).
    pub dcs: u32,
    /// Clients (one per DC, round robin).
    pub clients: u32,
    /// Transactions in all (dealt to the clients round robin; each client runs its
    /// own in order, one at a time).
    pub txns: u32,
    /// Workload spec the transactions are drawn from.
    pub workload: String,
    /// Faults per path.
    pub faults: Budget,
    /// Steps per path.
    pub depth: u32,
    /// Timer steps that move the clock per path (a quiet network's next timers, or a
    /// node's early timeout): what bounds paths that periodic timers would make
    /// endless. The fair schedule at a path's end has no such bound.
    pub clock_steps: u32,
    /// Distinct states at most (the search stops there and says so).
    pub max_states: u64,
    /// Seed (the workload's draws and the actors' random generators).
    pub seed: u64,
    /// Virtual time the fair schedule at the end of a path runs for at most.
    pub settle: Time,
    /// How the state space is searched.
    pub strategy: Strategy,
}

/// How the explorer searches (`--strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Breadth first: exhaustive within the bounds, and the first violation found is
    /// a shortest path. Memory grows with the widest level.
    Bfs,
    /// Depth first with a state bound: exhaustive within the depth bound too (a state
    /// reached again by a shorter path is explored again from there), memory grows
    /// with the depth times the branching; the first violation is not the shortest.
    Dfs,
    /// This many random walks from the initial state, each step drawn uniformly from
    /// the steps possible there (faults included, within the budget), each walk
    /// judged at its end: no claim to exhaustiveness, but it reaches deep schedules a
    /// breadth-first search cannot afford.
    Random {
        /// Walks to take.
        walks: u64,
    },
}

impl std::str::FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Strategy, String> {
        match s {
            "bfs" => Ok(Strategy::Bfs),
            "dfs" => Ok(Strategy::Dfs),
            "random" => Ok(Strategy::Random { walks: 1000 }),
            _ => Err(format!("--strategy: unknown strategy `{s}` (bfs, dfs or random)")),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            protocol: "2pc-2pl".into(),
            shards: 2,
            dcs: 3,
            clients: 2,
            txns: 2,
            workload: "ycsb:keys=4,ops=2".into(),
            faults: Budget::default(),
            depth: 200,
            clock_steps: 6,
            max_states: 200_000,
            seed: 1,
            settle: secs(60.0),
            strategy: Strategy::Bfs,
        }
    }
}

/// Why a path is wrong.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Violation {
    /// `safety` (seen at a state) or `liveness` (after the faults healed).
    pub kind: &'static str,
    /// What is wrong.
    pub what: String,
    /// The steps from the initial state, for `--replay`.
    pub steps: Vec<String>,
    /// The steps, each described.
    pub trace: Vec<String>,
}

/// What an exploration found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    /// Protocol spec.
    pub protocol: String,
    /// The configuration, in the command's flags.
    pub config: String,
    /// Distinct states reached.
    pub states: u64,
    /// Steps taken (including those that reached a state already seen).
    pub transitions: u64,
    /// Paths ended and checked (heal, fair schedule, history check).
    pub ends_checked: u64,
    /// The deepest level searched.
    pub depth_reached: u32,
    /// Whether every state within the depth was explored (no state limit hit).
    pub exhaustive: bool,
    /// Paths cut by the depth bound with steps still possible (their ends were checked
    /// with the fair schedule, but the steps beyond were not explored).
    pub cut_by_depth: u64,
    /// Paths whose end exceeded the protocol's crash tolerance (liveness and
    /// durability not judged there).
    pub beyond_tolerance: u64,
    /// `--replay`: every step, described as it was taken.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replayed: Vec<String>,
    /// The first violation found (shortest path), if any.
    pub violation: Option<Violation>,
    /// Wall-clock seconds.
    pub wall_s: f64,
}

/// A configuration the explorer cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    /// Bad flags.
    #[error("{0}")]
    Invalid(String),
}

/// Explores protocol `cfg.protocol`; `replay`: run only these steps, then check the
/// path's end (the trace is the report's violation, or empty).
pub fn explore(cfg: &Config, replay: Option<&[Step]>) -> Result<Report, ExploreError> {
    if cfg.shards == 0 || cfg.dcs == 0 || cfg.clients == 0 || cfg.txns == 0 {
        return Err(ExploreError::Invalid(
            "--shards, --dcs, --clients and --txns must be at least 1".into(),
        ));
    }
    if cfg.shards > 8 || cfg.dcs > 5 || cfg.clients > 8 || cfg.txns > 16 {
        return Err(ExploreError::Invalid(
            "exploration is for small configurations: at most 8 shards, 5 DCs, 8 clients, 16 transactions".into(),
        ));
    }
    let names: Vec<String> = (0..cfg.dcs).map(|i| format!("D{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let topology = Topology::uniform("explore", &names, 10.0, 1.0, cfg.shards, cfg.shards);
    struct Run<'a>(&'a Config, Topology, Option<&'a [Step]>);
    impl WithProtocol for Run<'_> {
        type Out = Result<Report, ExploreError>;
        fn with<P: Protocol>(self, p: P) -> Self::Out {
            run(p, self.0, self.1, self.2)
        }
    }
    with_protocol(
        &cfg.protocol,
        &topology,
        HomeRule::Spread,
        Run(cfg, topology.clone(), replay),
    )
    .map_err(|e| ExploreError::Invalid(e.to_string()))?
}

/// The command line that reruns a configuration.
fn flags(cfg: &Config) -> String {
    let strategy = match cfg.strategy {
        Strategy::Bfs => String::new(),
        Strategy::Dfs => " --strategy dfs".into(),
        Strategy::Random { walks } => format!(" --strategy random --walks {walks}"),
    };
    format!(
        "--protocol {} --shards {} --dcs {} --clients {} --txns {} --workload '{}' --faults {} --depth {} --clock-steps {} --seed {}{strategy}",
        cfg.protocol, cfg.shards, cfg.dcs, cfg.clients, cfg.txns, cfg.workload, cfg.faults, cfg.depth, cfg.clock_steps, cfg.seed
    )
}

fn run<P: Protocol>(p: P, cfg: &Config, topology: Topology, replay: Option<&[Step]>) -> Result<Report, ExploreError> {
    let wall = std::time::Instant::now();
    let bad = |e: String| ExploreError::Invalid(e);
    let mut layout = Layout::new(topology.clone(), p.placement(HomeRule::Spread)).map_err(|e| bad(e.to_string()))?;
    let client_nodes: Vec<NodeId> = (0..cfg.clients)
        .map(|i| layout.add_client(DcId((i % cfg.dcs) as u16)))
        .collect();
    let layout = Arc::new(layout);
    let mut workload = meridian_workload::build(&cfg.workload).map_err(|e| bad(format!("--workload: {e}")))?;
    let mut wl_rng = rng_for(cfg.seed, u64::MAX - 3);
    let mut calls = vec![vec![]; cfg.clients as usize];
    for i in 0..cfg.txns {
        let c = (i % cfg.clients) as usize;
        let site = meridian_workload::Site {
            client_dc: layout.dc_of(client_nodes[c]).0 as u32,
            dcs: cfg.dcs,
            shards: cfg.shards,
        };
        calls[c].push(workload.next_call_at(&mut wl_rng, &site));
    }
    let sh = Shared {
        proto: p.clone(),
        workload,
        calls,
        servers: layout.num_servers(),
    };
    let mut ex = Explorer {
        sh: &sh,
        cfg,
        layout: &layout,
        tree: vec![(u32::MAX, Step::Deliver(0))],
        report: Report {
            protocol: cfg.protocol.clone(),
            config: flags(cfg),
            states: 1,
            transitions: 0,
            ends_checked: 0,
            depth_reached: 0,
            exhaustive: true,
            cut_by_depth: 0,
            beyond_tolerance: 0,
            replayed: vec![],
            violation: None,
            wall_s: 0.0,
        },
    };
    let root = ex.root();
    match replay {
        Some(steps) => ex.replay(root, steps)?,
        None => match cfg.strategy {
            Strategy::Bfs => ex.search(root),
            Strategy::Dfs => ex.dfs(root),
            Strategy::Random { walks } => ex.random_walks(root, walks),
        },
    }
    ex.report.wall_s = wall.elapsed().as_secs_f64();
    Ok(ex.report)
}

/// One step of the fair schedule at a path's end, checked for a split decision:
/// `Ok(false)` when nothing is left to do.
fn fair_step_checked<P: Protocol>(sh: &Shared<P>, c: &mut World<P>, events: &mut u64) -> Result<bool, String> {
    if !c.fair_step(sh) {
        return Ok(false);
    }
    *events += 1;
    match c.split_decision() {
        Some(what) => Err(format!("{what} (during the fair schedule after the faults healed)")),
        None => Ok(true),
    }
}

struct Explorer<'a, P: Protocol> {
    sh: &'a Shared<P>,
    cfg: &'a Config,
    layout: &'a Layout,
    /// The search tree: each state's parent and the step from it.
    tree: Vec<(u32, Step)>,
    report: Report,
}

impl<P: Protocol> Explorer<'_, P> {
    /// Breadth first, level by level: the first violation found is a shortest path.
    fn search(&mut self, root: World<P>) {
        let mut seen = FxHashSet::default();
        seen.insert(root.fingerprint());
        let mut frontier = vec![(root, 0u32)];
        for depth in 0..=self.cfg.depth {
            self.report.depth_reached = depth;
            let mut next = vec![];
            for (w, idx) in frontier {
                match self.visit(&w, idx, depth, &mut |fp, _| seen.insert(fp)) {
                    strategy::Visit::Stop => return,
                    strategy::Visit::Next(n) => next.extend(n.into_iter().map(|(c, i, _)| (c, i))),
                }
            }
            if next.is_empty() {
                return;
            }
            frontier = next;
        }
    }

    /// Whether the faults taken on the way to `w` are within what the protocol
    /// promises to survive.
    fn tolerated(&self, w: &World<P>) -> bool {
        match self.sh.proto.fault_model() {
            FaultModel::Durable => true,
            FaultModel::Forgetful { per_group, .. } => (self.cfg.faults.crash - w.left.crash) as usize <= per_group,
        }
    }

    /// The end of a path: heal, run a fair schedule, then judge liveness, locks, the
    /// split-decision rule and the history.
    fn check_end(&mut self, w: &World<P>) -> Option<(&'static str, String)> {
        self.report.ends_checked += 1;
        let tolerated = self.tolerated(w);
        if !tolerated {
            self.report.beyond_tolerance += 1;
        }
        let mut c = w.clone();
        c.clock_steps = u32::MAX;
        c.hashing = false;
        c.heal(self.sh);
        let healed = c.now;
        let limit = c.now + self.cfg.settle;
        let mut events = 0u64;
        const MAX_EVENTS: u64 = 200_000;
        while !(c.all_resolved(self.sh) && c.net.is_empty()) && c.now <= limit && events < MAX_EVENTS {
            match fair_step_checked(self.sh, &mut c, &mut events) {
                Ok(true) => {}
                Ok(false) => break,
                Err(what) => return Some(("safety", what)),
            }
        }
        // A tail, as the simulator's liveness phase (30 s after the faults heal): a
        // protocol catches up what a fault left behind (a replica that missed a
        // commit, a lock held for a transaction nobody will finish) with re-sends that
        // back off. A path that took no fault needs only two query periods (a late
        // recovery action would show); while keys are still locked the tail runs up to
        // an idle timeout and two query periods more.
        let t = Timeouts::default();
        let (l, f) = (c.left, self.cfg.faults);
        let faulted = (l.crash, l.drop, l.dup, l.timeouts) != (f.crash, f.drop, f.dup, f.timeouts);
        let short = if faulted {
            healed + secs(30.0)
        } else {
            c.now + 2 * t.query
        };
        let long = short.max(c.now + t.idle + 2 * t.query);
        // Past two query periods, the tail stops at the first whole second at which the
        // path's end passes every check (a protocol that settled needs no more).
        let mut probe = c.now + 2 * t.query;
        while (c.now <= short || (c.now <= long && c.locked_keys() > 0)) && events < MAX_EVENTS {
            if c.now >= probe {
                probe = c.now + secs(1.0);
                if c.all_resolved(self.sh) && c.locked_keys() == 0 && self.judge(&c, w.now, events, tolerated).is_none()
                {
                    return None;
                }
            }
            match fair_step_checked(self.sh, &mut c, &mut events) {
                Ok(true) => {}
                Ok(false) => break,
                Err(what) => return Some(("safety", what)),
            }
        }
        self.judge(&c, w.now, events, tolerated)
    }

    /// The verdict on a path's end `c` (healed at `since`, `events` fair steps later):
    /// liveness and locks (within the tolerance), the history checker, the workload's
    /// invariant.
    fn judge(&self, c: &World<P>, since: Time, events: u64, tolerated: bool) -> Option<(&'static str, String)> {
        if tolerated {
            if !c.all_resolved(self.sh) {
                return Some((
                    "liveness",
                    format!(
                        "{} {:.0} s after the faults healed (fair schedule, {events} steps)",
                        c.unresolved(self.sh).join(", "),
                        (c.now - since) as f64 / 1e9
                    ),
                ));
            }
            let locked = c.locked_keys();
            if locked > 0 {
                return Some((
                    "liveness",
                    format!(
                        "{locked} keys still locked {:.0} s after every transaction resolved",
                        (c.now - since) as f64 / 1e9
                    ),
                ));
            }
        }
        let mut txns: Vec<TxnRecord> = c.records.to_vec();
        txns.extend(c.in_flight_records());
        txns.sort_by_key(|t| t.id);
        let history = History {
            meta: Meta {
                protocol: self.sh.proto.name().to_string(),
                // Time is abstract (messages take none), so the records' times give
                // no real-time order to judge strictness by: serializability only.
                strict: false,
                shards: self.cfg.shards,
                shard_replicas: self.layout.shard_replicas.clone(),
                read_committed: self.sh.proto.read_committed(),
            },
            txns,
            replicas: c.servers.iter().map(|s| s.snapshot()).collect(),
        };
        let rep = meridian_check::check(&history);
        // Beyond the tolerance a memory-only group may lose what it held: every
        // anomaly but durability's still counts.
        let counted: Vec<&meridian_check::Anomaly> = rep
            .anomalies
            .iter()
            .filter(|a| tolerated || !a.kind.breaks_durability())
            .collect();
        if !counted.is_empty() {
            let what: Vec<String> = counted.iter().map(|a| format!("{a:?}")).collect();
            return Some((
                "safety",
                format!(
                    "the history fails the checker (serializable={}, atomic={}, durable={}): {}",
                    rep.serializable,
                    rep.atomic,
                    rep.durable,
                    what.join("; ")
                ),
            ));
        }
        if tolerated {
            let layout = self.layout;
            let snaps: Vec<&meridian_core::ReplicaSnapshot> = history.replicas.iter().collect();
            let invariant = self.sh.workload.check_final(&|k| {
                let n = layout.primary(layout.shard_of(k));
                snaps
                    .iter()
                    .find(|r| r.node == n)
                    .and_then(|r| r.keys.get(k))
                    .and_then(|s| s.value.clone())
            });
            if let Err(e) = invariant {
                return Some(("safety", format!("the workload's invariant is broken: {e}")));
            }
        }
        None
    }

    fn path(&self, mut idx: u32) -> Vec<Step> {
        let mut steps = vec![];
        while idx != 0 {
            let (parent, s) = self.tree[idx as usize];
            steps.push(s);
            idx = parent;
        }
        steps.reverse();
        steps
    }

    /// Records the violation at tree node `idx`, with its path described.
    fn found(&mut self, idx: u32, kind: &'static str, what: String) {
        let steps = self.path(idx);
        self.found_path(&steps, kind, what);
    }

    /// Records the violation at the end of `steps`, with its path described.
    fn found_path(&mut self, steps: &[Step], kind: &'static str, what: String) {
        self.report.violation = Some(Violation {
            kind,
            what,
            steps: steps.iter().map(|s| s.to_string()).collect(),
            trace: self.describe(steps),
        });
    }

    fn root(&self) -> World<P> {
        let env = Env {
            layout: Arc::new(self.layout.clone()),
            registry: Arc::new(meridian_workload::registry()),
            timeouts: Timeouts::default(),
            // Abstract time: a version's install time would split equal states, and
            // a configuration of a few transactions never reaches a collection pass.
            retention: meridian_protocols::Retention::KEEP_ALL,
        };
        let p = &self.sh.proto;
        let servers = (0..self.layout.num_servers())
            .map(|n| p.server(&env, NodeId(n)))
            .collect();
        let clients = (0..self.cfg.clients)
            .map(|i| p.client(&env, NodeId(self.layout.num_servers() + i), ClientId(i)))
            .collect();
        let rngs = (0..self.layout.num_nodes())
            .map(|n| rng_for(self.cfg.seed, n as u64))
            .collect();
        World::new(self.sh, servers, clients, rngs, self.cfg.faults, self.cfg.clock_steps)
    }

    /// Each step described as it is taken from the initial state.
    fn describe(&self, steps: &[Step]) -> Vec<String> {
        let mut w = self.root();
        let mut out = vec![];
        for s in steps {
            let what = w.describe(*s);
            let from = w.next_seq();
            if let Err(e) = w.apply(self.sh, *s) {
                out.push(format!("{s:>5}  {what}  (cannot replay: {e})"));
                break;
            }
            let sent = w.sent_since(from);
            if sent.is_empty() {
                out.push(format!("{s:>5}  {what}"));
            } else {
                out.push(format!("{s:>5}  {what}  => sends {}", sent.join(" ")));
            }
        }
        out
    }

    fn replay(&mut self, mut w: World<P>, steps: &[Step]) -> Result<(), ExploreError> {
        self.report.depth_reached = steps.len() as u32;
        for (i, s) in steps.iter().enumerate() {
            w.apply(self.sh, *s)
                .map_err(|e| ExploreError::Invalid(format!("--replay, step {} of {}: {e}", i + 1, steps.len())))?;
            self.report.transitions += 1;
            if let Some(what) = w.split_decision() {
                self.report.violation = Some(Violation {
                    kind: "safety",
                    what,
                    steps: steps[..=i].iter().map(|s| s.to_string()).collect(),
                    trace: self.describe(&steps[..=i]),
                });
                return Ok(());
            }
        }
        self.report.replayed = self.describe(steps);
        if let Some((kind, what)) = self.check_end(&w) {
            self.report.violation = Some(Violation {
                kind,
                what,
                steps: steps.iter().map(|s| s.to_string()).collect(),
                trace: self.describe(steps),
            });
        }
        Ok(())
    }
}
