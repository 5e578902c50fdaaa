//! `meridian bench`: closed-loop clients against a running cluster. Prints the same
//! report as `meridian sim` and can write the history for `meridian check`.

use anyhow::{bail, Context, Result};
use clap::Args;
use meridian_check::{History, Meta};
use meridian_client::{Client, Options};
use meridian_core::{rng_for, DcId, NodeId, Outcome, TxnRecord};
use meridian_net::host;
use meridian_net::wire::{NodeReport, Wire};
use meridian_protocols::HoldStats;
use meridian_sim::report::{self, SimReport};
use meridian_sim::SimConfig;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `meridian bench` flags.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// The cluster file (`meridian cluster up` writes DIR/cluster.toml).
    #[arg(long)]
    pub cluster: PathBuf,
    /// Workload, NAME:key=value,... (as for `meridian sim`).
    #[arg(long, default_value = "ycsb", value_parser = crate::names::WORKLOADS, hide_possible_values = true)]
    pub workload: String,
    /// Closed-loop clients (spread over the DCs, one client slot each).
    #[arg(long, default_value_t = 16)]
    pub clients: u32,
    /// How long clients start new transactions, with a unit (30s, 500ms, 2m).
    #[arg(long, default_value = "30s")]
    pub duration: String,
    /// DC(s) the clients live in, comma-separated (default: all DCs).
    #[arg(long)]
    pub client_dc: Option<String>,
    /// First client slot to try (slots another process holds are skipped).
    #[arg(long, default_value_t = 0)]
    pub first_slot: u32,
    /// Seed of the workload's random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// After the last transaction ends, wait this long for decisions to reach every
    /// replica before reading the servers' state (with a unit: 3s, 500ms).
    #[arg(long, default_value = "3s")]
    pub settle: String,
    /// How long to wait for transactions still running when the duration ends (with
    /// a unit).
    #[arg(long, default_value = "30s")]
    pub drain: String,
    /// Write the history (JSON lines) here, for `meridian check`.
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the report as JSON to this file (for a later `--baseline`).
    #[arg(long)]
    pub save: Option<PathBuf>,
    /// A report an earlier run saved (`--save`, or `--json` output): after the run,
    /// print this run's txn/s, latencies and server CPU per transaction as ratios to
    /// it (on stderr, so `--json` output stays one object).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Serve the run's client-side Prometheus metrics at http://ADDR/metrics while it
    /// runs: transactions by outcome and abort cause, and latency histograms (the
    /// servers' own endpoints are `cluster up --metrics-base-port`).
    #[arg(long)]
    pub metrics: Option<std::net::SocketAddr>,
}

/// The client-side metrics of a run (`--metrics`): counters and histograms that the
/// transaction tasks update and each scrape encodes.
struct BenchMetrics {
    registry: prometheus_client::registry::Registry,
    txns: Family<Labels, Counter>,
    latency: Histograms,
}

/// Labels of a metric series.
type Labels = Vec<(String, String)>;
/// Latency histograms by label.
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

use prometheus_client::metrics::{counter::Counter, family::Family, histogram::Histogram};

/// Latency buckets: 0.5 ms doubling to about 16 s.
fn latency_histogram() -> Histogram {
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.0005, 2.0, 16,
    ))
}

impl BenchMetrics {
    fn new() -> BenchMetrics {
        let mut registry = prometheus_client::registry::Registry::with_prefix("meridian_client");
        let txns: Family<Labels, Counter> = Family::default();
        let latency: Histograms = Family::new_with_constructor(latency_histogram);
        registry.register(
            "transactions",
            "Transactions this bench finished, by outcome and abort cause (AbortReason variant)",
            txns.clone(),
        );
        registry.register(
            "latency_seconds",
            "Transaction latency from start to outcome, by outcome",
            latency.clone(),
        );
        BenchMetrics {
            registry,
            txns,
            latency,
        }
    }

    fn record(&self, r: &TxnRecord) {
        let (outcome, reason) = match r.outcome {
            Outcome::Committed => ("committed", ""),
            Outcome::Aborted => ("aborted", r.abort_reason.as_ref().map_or("Unknown", |a| a.code())),
            Outcome::Unknown => ("unknown", ""),
        };
        self.txns
            .get_or_create(&vec![
                ("outcome".into(), outcome.into()),
                ("reason".into(), reason.into()),
            ])
            .inc();
        if let Some(end) = r.end {
            self.latency
                .get_or_create(&vec![("outcome".into(), outcome.into())])
                .observe(end.saturating_sub(r.start) as f64 / 1e9);
        }
    }

    fn render(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

fn dur(flag: &str, v: &str) -> Result<Duration> {
    let t = meridian_core::time::parse_duration(v)
        .map_err(anyhow::Error::msg)
        .with_context(|| flag.to_string())?;
    Ok(Duration::from_nanos(t))
}

/// Every server's report, in node order; an error names the nodes that did not answer.
pub async fn reports(c: &meridian_net::cluster::Cluster) -> (Vec<Option<NodeReport>>, Vec<String>) {
    let mut out = vec![];
    let mut errs = vec![];
    let sec = match crate::cluster::control_security(c, meridian_net::tls::Role::Admin) {
        Ok(s) => s,
        Err(e) => {
            let e = format!("the state dump needs the admin role: {e}");
            return (vec![None; c.addrs.len()], vec![e]);
        }
    };
    for i in 0..c.addrs.len() {
        match host::ask::<()>(
            c,
            &sec,
            meridian_core::NodeId(i as u32),
            Wire::ReportReq,
            Duration::from_secs(20),
        )
        .await
        {
            Ok(Wire::Report(r)) => out.push(Some(*r)),
            Ok(_) => {
                errs.push(format!("node {i}: unexpected answer"));
                out.push(None)
            }
            Err(e) => {
                errs.push(format!("node {i}: {e}"));
                out.push(None)
            }
        }
    }
    (out, errs)
}

/// The outcome of a benchmark: report, history, whether the check passed.
pub struct BenchOutput {
    /// The same object `meridian sim --json` prints.
    pub report: SimReport,
    /// The history.
    pub history: History,
}

/// Runs a benchmark (the body of `meridian bench`).
/// Runs a bench. `interrupt`, once set (Ctrl-C), stops the clients issuing: the
/// transactions in flight get `--drain`, and the report of what ran says it was cut
/// short.
pub fn run_bench(
    a: &BenchArgs,
    show_progress: bool,
    interrupt: Option<Arc<std::sync::atomic::AtomicBool>>,
) -> Result<BenchOutput> {
    let stopped = {
        let i = interrupt.clone();
        move || i.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    };
    let duration = dur("--duration", &a.duration)?;
    if duration.is_zero() {
        bail!("--duration must be longer than 0 (a bench of no time runs no transaction)");
    }
    let settle = dur("--settle", &a.settle)?;
    let drain = dur("--drain", &a.drain)?;
    let cluster = crate::cluster::load(&a.cluster)?;
    // What earlier benches were told was committed (read before the run: a damaged
    // ledger fails now, not after it).
    let ledger = crate::ledger::Ledger::of(&cluster);
    let acked = ledger.read()?;
    let mut workload = meridian_workload::build(&a.workload)?;
    let topo = cluster.topology.clone();
    let dcs: Vec<DcId> = match &a.client_dc {
        None => (0..topo.num_dcs() as u16).map(DcId).collect(),
        Some(s) => s.split(',').map(|d| topo.dc(d.trim())).collect::<Result<_, _>>()?,
    };
    if a.clients == 0 {
        bail!("--clients must be at least 1");
    }
    // Bound before the run, so a busy or bad address fails before any work.
    let metrics_listener = match a.metrics {
        Some(addr) => {
            let l = std::net::TcpListener::bind(addr).with_context(|| format!("--metrics {addr}: cannot listen"))?;
            l.set_nonblocking(true)?;
            Some(l)
        }
        None => None,
    };
    let rt = crate::cluster::runtime()?;
    rt.block_on(async move {
        let wall = Instant::now();
        let metrics = match metrics_listener {
            Some(l) => {
                let m = Arc::new(BenchMetrics::new());
                let l = tokio::net::TcpListener::from_std(l)?;
                let m2 = m.clone();
                tokio::spawn(meridian_net::metrics::serve_text(l, Arc::new(move || m2.render())));
                Some(m)
            }
            None => None,
        };
        // One client process with `clients` slots, taken DC by DC.
        let ndc = topo.num_dcs() as u32;
        let mut per_dc: HashMap<DcId, u32> = HashMap::new();
        let mut task_dc = vec![];
        for i in 0..a.clients {
            let d = dcs[i as usize % dcs.len()];
            *per_dc.entry(d).or_default() += 1;
            task_dc.push(d);
        }
        // Slots: the first `per_dc[d]` slots of each DC from first_slot on.
        let need = per_dc.values().copied().max().unwrap_or(1) * ndc;
        let opts = Options {
            credentials: None,
            clients: need.min(cluster.file.client_slots.saturating_sub(a.first_slot)),
            first_slot: a.first_slot,
            exact_slots: false,
            dc: None,
            timeout: duration + drain,
            connect_timeout: Duration::from_secs(10),
            retry: None,
        };
        let client = Arc::new(Client::connect_to(cluster.clone(), opts).await?);
        for (d, n) in &per_dc {
            let have = client
                .host()
                .nodes
                .iter()
                .filter(|nd| DcId(((nd.0 - cluster.num_servers()) % ndc) as u16) == *d)
                .count() as u32;
            if have < *n {
                bail!(
                    "{n} clients in DC {} need {n} client slots there, but the cluster file's client_slots = {} gives it {have} from slot {} on (slot i lives in DC i mod {ndc}): raise client_slots (`meridian cluster up --client-slots N`, or the cluster file's `client_slots`) or use fewer clients",
                    topo.dcs[d.0 as usize],
                    cluster.file.client_slots,
                    a.first_slot
                );
            }
        }
        let (before, errs) = reports(&cluster).await;
        if !errs.is_empty() {
            // Measuring a degraded cluster is what an operator may want: say so, and
            // go on (what the protocol does with a server down is the measurement).
            eprintln!(
                "warning: the cluster is not fully up ({}); benchmarking it degraded: a server that does not answer is missing from the history",
                errs.join("; ")
            );
        }
        // What earlier runs left behind enters the history as written by earlier
        // (committed) transactions, so this run's history checks on its own.
        let earlier = earlier_writers(&before, &acked);
        if !earlier.is_empty() {
            eprintln!(
                "note: the cluster holds data of {} earlier transactions (or earlier benches were told they committed); the history lists them as `{EARLIER}`",
                earlier.len()
            );
        }
        let client_before = client.host().counters().await;
        let records: Arc<Mutex<Vec<TxnRecord>>> = Arc::new(Mutex::new(vec![]));
        let done = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let committed = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let workload_spec = workload.spec();
        let calls = Arc::new(Mutex::new(std::mem::replace(
            &mut workload,
            meridian_workload::build("ycsb").expect("the ycsb workload builds"),
        )));
        let pids = server_pids(&a.cluster);
        let cpu_before = cpu_seconds(&pids);
        let start = Instant::now();
        let end = start + duration;
        let mut tasks = vec![];
        for (i, d) in task_dc.iter().enumerate() {
            let stopped = stopped.clone();
            let (client, records, calls, done, committed, metrics) = (
                client.clone(),
                records.clone(),
                calls.clone(),
                done.clone(),
                committed.clone(),
                metrics.clone(),
            );
            let d = *d;
            let site = meridian_workload::Site {
                client_dc: d.0 as u32,
                dcs: ndc,
                shards: topo.shards,
            };
            let mut rng = rng_for(a.seed, 1_000 + i as u64);
            tasks.push(tokio::spawn(async move {
                while Instant::now() < end && !stopped() {
                    let call = calls.lock().expect("workload lock").next_call_at(&mut rng, &site);
                    match client.run_call_in(call, Some(d)).await {
                        Ok(r) => {
                            if r.outcome == Outcome::Committed {
                                committed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            if let Some(m) = &metrics {
                                m.record(&r);
                            }
                            records.lock().expect("records lock").push(r);
                        }
                        Err(_) => return,
                    }
                }
            }));
        }
        let tty = std::io::stderr().is_terminal();
        let mut last = Instant::now();
        // Records already counted in an earlier progress line.
        let mut seen = 0usize;
        let mut deadline = end + drain;
        let mut interrupted_at: Option<Duration> = None;
        // Records already in the ledger: appended every second as the run goes, so a
        // bench killed outright leaves its acknowledged commits for the next to check.
        let mut ledgered = 0usize;
        let mut last_ledger = Instant::now();
        let mut ledger_failed = false;
        while !tasks.iter().all(|t| t.is_finished()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if last_ledger.elapsed() >= Duration::from_secs(1) {
                last_ledger = Instant::now();
                let (new, upto): (Vec<TxnRecord>, usize) = {
                    let recs = records.lock().expect("records lock");
                    (recs[ledgered..].to_vec(), recs.len())
                };
                // Counted as in the ledger once written: a failed append is tried
                // again with the next second's.
                match ledger.append(&new) {
                    Ok(()) => ledgered = upto,
                    Err(e) => {
                        if !ledger_failed {
                            eprintln!("warning: {e:#}; trying again (a later bench may not know this run's commits)");
                        }
                        ledger_failed = true;
                    }
                }
            }
            if interrupted_at.is_none() && stopped() {
                interrupted_at = Some(start.elapsed());
                deadline = deadline.min(Instant::now() + drain);
            }
            if Instant::now() > deadline {
                break;
            }
            if show_progress && last.elapsed() >= Duration::from_secs(if tty { 1 } else { 5 }) {
                last = Instant::now();
                let el = start.elapsed().as_secs_f64();
                let c = committed.load(std::sync::atomic::Ordering::Relaxed);
                // Commit latency of the transactions finished since the last line.
                let mut lat: Vec<u64> = {
                    let recs = records.lock().expect("records lock");
                    let new = recs[seen.min(recs.len())..]
                        .iter()
                        .filter(|r| r.outcome == Outcome::Committed)
                        .filter_map(|r| Some(r.end?.saturating_sub(r.start)))
                        .collect();
                    seen = recs.len();
                    new
                };
                lat.sort_unstable();
                let pct = |p: f64| {
                    lat.get(((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len().max(1)) - 1)
                        .map_or("-".to_string(), |ns| format!("{:.1}", *ns as f64 / 1e6))
                };
                eprintln!(
                    "bench {:>5.1}s / {:.0}s: {} done, {} committed ({:.0}/s), latency p50 {} ms p99 {} ms",
                    el,
                    duration.as_secs_f64(),
                    done.load(std::sync::atomic::Ordering::Relaxed),
                    c,
                    c as f64 / el.max(1e-9),
                    pct(0.5),
                    pct(0.99)
                );
            }
        }
        for t in &tasks {
            t.abort();
        }
        let elapsed = start.elapsed();
        let cpu_after = cpu_seconds(&pids);
        let mut txns = std::mem::take(&mut *records.lock().expect("records lock"));
        txns.extend(client.host().take_earlier_attempts());
        txns.extend(client.host().in_flight().await);
        // What the ledger does not hold yet (the records come in the order pushed).
        let unledgered: Vec<TxnRecord> = txns[ledgered.min(txns.len())..].to_vec();
        let client_after = client.host().counters().await;
        tokio::time::sleep(settle).await;
        let (after, errs) = reports(&cluster).await;
        for e in &errs {
            eprintln!("warning: {e}; that replica is missing from the history");
        }
        txns.sort_by_key(|t| t.id);
        let run_txns = txns.len();
        txns.splice(0..0, earlier);
        let info = client.info().clone();
        let history = History {
            meta: Meta {
                protocol: info.name.clone(),
                strict: info.strict,
                shards: topo.shards,
                shard_replicas: info.shard_replicas.clone(),
                read_committed: info.read_committed,
            },
            txns,
            replicas: after
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    r.as_ref().map(|r| {
                        let mut s = r.snapshot.clone();
                        s.node = NodeId(i as u32);
                        s
                    })
                })
                .collect(),
        };
        // The rest of this run's acknowledged commits, for the next bench to hold the
        // servers to.
        if let Err(e) = ledger.append(&unledgered) {
            if !ledger_failed {
                eprintln!("warning: {e:#}; a later bench will not know this run's commits");
            }
        }
        let check = meridian_check::check(&history);
        let invariant = {
            let snaps: HashMap<NodeId, &meridian_core::ReplicaSnapshot> =
                history.replicas.iter().map(|r| (r.node, r)).collect();
            // Each shard's state is read from its first replica that answered (a
            // killed server is missing from the snapshots; reading it as "never
            // written" reported a broken invariant that was not there). Whether the
            // replicas agree is the checker's business. A shard none of whose replicas
            // answered cannot be judged: the invariant is not checked, and says so.
            let shards = info.shard_replicas.clone();
            let from: Vec<Option<NodeId>> = shards
                .iter()
                .map(|g| g.iter().copied().find(|n| snaps.contains_key(n)))
                .collect();
            if let Some(s) = from.iter().position(Option::is_none) {
                eprintln!("warning: no replica of shard {s} answered; the workload's invariant is not checked");
                None
            } else {
                let calls = calls.lock().expect("workload lock");
                calls
                    .check_final(&|k| {
                        let s = meridian_core::shard_of(k, topo.shards);
                        let n = from[s.0 as usize].expect("checked above");
                        snaps.get(&n).and_then(|r| r.keys.get(k)).and_then(|s| s.value.clone())
                    })
                    .err()
            }
        };
        let mut traffic = client_after.since(&client_before);
        let mut holds = HoldStats::default();
        let mut any_holds = false;
        let mut locked: Option<u64> = None;
        let mut split: HashMap<meridian_core::TxnId, (bool, bool)> = HashMap::new();
        let mut any_outcomes = false;
        for (b, r) in before.iter().zip(&after) {
            let Some(r) = r else { continue };
            let base = b.as_ref().map(|b| b.counters).unwrap_or_default();
            traffic.add(&r.counters.since(&base));
            if let Some(h) = &r.holds {
                holds.merge(h);
                any_holds = true;
            }
            if let Some(l) = r.locked {
                *locked.get_or_insert(0) += l;
            }
            if let Some(v) = &r.outcomes {
                any_outcomes = true;
                for (t, c) in v {
                    let e = split.entry(*t).or_default();
                    if *c {
                        e.0 = true
                    } else {
                        e.1 = true
                    }
                }
            }
        }
        let mut cfg = SimConfig::new(topo.clone(), &a.workload);
        cfg.clients = a.clients;
        cfg.txns = run_txns as u64;
        cfg.seed = a.seed;
        // The figures are this run's alone (the summary reads only the transactions).
        let this_run = History {
            meta: history.meta.clone(),
            txns: history.txns.iter().filter(|t| t.program != EARLIER).cloned().collect(),
            replicas: vec![],
        };
        let report = report::summarize(
            &info.name,
            &cfg,
            workload_spec,
            &this_run,
            &check,
            invariant,
            report::Counters {
                events: traffic.inputs,
                msgs_total: traffic.sent,
                msgs_wan: traffic.sent_wan,
                virtual_end: elapsed.as_nanos() as u64,
                holds: any_holds.then_some(holds),
                locked_at_end: locked,
                split_decisions: any_outcomes.then(|| split.values().filter(|(c, a)| *c && *a).count() as u64),
                // A bench ends without a liveness phase (transactions may be in flight
                // and keys locked when it stops), so stalls are reported, not judged.
                unresolved: 0,
                runaway: None,
                within_tolerance: None,
                stats: server_cpu_stats(cpu_before, cpu_after, pids.len(), committed.load(std::sync::atomic::Ordering::Relaxed)),
                wall_s: wall.elapsed().as_secs_f64(),
            },
        );
        let mut report = report;
        if let Some(at) = interrupted_at.filter(|at| *at < duration) {
            report.cut_short = Some(format!(
                "interrupted after {:.1} s of the {:.1} s asked; the transactions in flight were given --drain",
                at.as_secs_f64(),
                duration.as_secs_f64()
            ));
        }
        if traffic.dropped > 0 {
            eprintln!(
                "note: {} messages were dropped (full queues or no connection)",
                traffic.dropped
            );
        }
        Ok(BenchOutput { report, history })
    })
}

/// The cluster's server processes on this machine: the `pids` file that `meridian
/// cluster up` writes beside the cluster file, those still running. Empty for a
/// cluster started otherwise (by hand, in containers, on other hosts).
fn server_pids(cluster_file: &std::path::Path) -> Vec<u32> {
    let dir = cluster_file.parent().unwrap_or(std::path::Path::new("."));
    let Ok(text) = std::fs::read_to_string(dir.join("pids")) else {
        return vec![];
    };
    text.lines()
        .filter_map(|l| l.trim().parse().ok())
        .filter(|p| std::path::Path::new(&format!("/proc/{p}/stat")).exists())
        .collect()
}

/// User plus system CPU seconds of every thread of each process, from
/// `/proc/PID/stat` (fields 14 and 15, in USER_HZ = 100 ticks per second, the unit
/// Linux reports them in); `None` if any cannot be read.
fn cpu_seconds(pids: &[u32]) -> Option<f64> {
    if pids.is_empty() {
        return None;
    }
    let mut ticks = 0u64;
    for p in pids {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        // The command name (field 2) is in parentheses and may hold spaces.
        let rest = &stat[stat.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        // `rest` starts at field 3: utime is field 14, stime 15.
        ticks += f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    }
    Some(ticks as f64 / 100.0)
}

/// The report statistics (`protocol_stats` keys) a bench adds: the servers' CPU
/// seconds over the run, how many server processes, and CPU ms per committed
/// transaction.
pub const SERVER_CPU_S: &str = "server_cpu_s";
pub const SERVER_PROCESSES: &str = "server_processes";
pub const SERVER_CPU_MS_PER_COMMITTED: &str = "server_cpu_ms_per_committed";

/// The servers' CPU over the run, for the report's statistics: total seconds and
/// milliseconds per committed transaction (nothing when it could not be read).
fn server_cpu_stats(
    before: Option<f64>,
    after: Option<f64>,
    servers: usize,
    committed: u64,
) -> std::collections::BTreeMap<String, f64> {
    let mut m = std::collections::BTreeMap::new();
    if let (Some(b), Some(a)) = (before, after) {
        let used = (a - b).max(0.0);
        m.insert(SERVER_CPU_S.to_string(), used);
        m.insert(SERVER_PROCESSES.to_string(), servers as f64);
        if committed > 0 {
            m.insert(
                SERVER_CPU_MS_PER_COMMITTED.to_string(),
                1000.0 * used / committed as f64,
            );
        }
    }
    m
}

/// The program name of the records that stand for earlier runs' transactions.
pub const EARLIER: &str = "(earlier run)";

/// One committed record per transaction whose versions the servers held before this
/// run, or that an earlier bench was told committed (the ledger, [`crate::ledger`]):
/// its writes are those versions (in the order it wrote them), before any of this
/// run's transactions in real time. An acknowledged write no server holds any more is
/// then a committed write the checker finds missing.
///
/// Version GC (docs/CLUSTER.md): an acknowledged write of a key whose replicas had
/// collected the start of its chain before this run, and that none of them held, was
/// collected before the run began; it is left out, since no transaction of this run
/// may read it (one that does reads a version of no recorded writer, which the
/// checker reports) and its durability was judged by the count the servers keep. The
/// versions held before the run keep their order through reads: each record reads the
/// version its write follows in the longest chain held, so the order stays fixed for
/// the checker once the servers collect those versions during this run.
fn earlier_writers(before: &[Option<NodeReport>], acked: &[crate::ledger::Acked]) -> Vec<TxnRecord> {
    use std::collections::{BTreeMap, HashSet};
    let mut chain: BTreeMap<&meridian_core::Key, &[meridian_core::VersionId]> = BTreeMap::new();
    let mut collected: HashSet<&meridian_core::Key> = HashSet::new();
    for r in before.iter().flatten() {
        for (k, st) in &r.snapshot.keys {
            let c = chain.entry(k).or_insert(&[]);
            if st.versions.len() > c.len() {
                *c = &st.versions;
            }
        }
        collected.extend(r.snapshot.pruned.iter().filter(|(_, n)| **n > 0).map(|(k, _)| k));
    }
    // Each version held, with the one before it in its key's longest chain (looked up
    // once per write below: chains of a cluster that keeps every version are long).
    let prev: HashMap<meridian_core::VersionId, Option<meridian_core::VersionId>> = chain
        .values()
        .flat_map(|c| c.iter().enumerate().map(|(i, v)| (*v, i.checked_sub(1).map(|j| c[j]))))
        .collect();
    let mut by_txn: BTreeMap<meridian_core::TxnId, BTreeMap<meridian_core::VersionId, meridian_core::Key>> =
        BTreeMap::new();
    for a in acked {
        for w in &a.writes {
            let gone = collected.contains(&w.key) && !prev.contains_key(&w.version);
            if !gone {
                by_txn.entry(a.txn).or_default().insert(w.version, w.key.clone());
            }
        }
    }
    for r in before.iter().flatten() {
        for (k, st) in &r.snapshot.keys {
            for v in &st.versions {
                by_txn.entry(v.txn).or_default().insert(*v, k.clone());
            }
        }
    }
    by_txn
        .into_iter()
        .map(|(id, writes)| TxnRecord {
            id,
            client: meridian_core::ClientId(id.client),
            node: NodeId(u32::MAX),
            dc: meridian_core::DcId(0),
            program: EARLIER.into(),
            start: 0,
            commit_start: None,
            end: Some(0),
            outcome: meridian_core::Outcome::Committed,
            abort_reason: None,
            reads: writes
                .iter()
                .filter_map(|(v, k)| {
                    let p = (*prev.get(v)?)?;
                    Some(meridian_core::ReadRec {
                        key: k.clone(),
                        version: Some(p),
                    })
                })
                .collect(),
            writes: writes
                .into_iter()
                .map(|(version, key)| meridian_core::WriteRec { key, version })
                .collect(),
            wan_trips: 0,
        })
        .collect()
}

/// `meridian bench`.
pub fn bench(a: &BenchArgs) -> Result<ExitCode> {
    // The baseline is read and the output files opened before the run: a bad file or
    // path fails now, not after it.
    let baseline = a.baseline.as_deref().map(read_baseline).transpose()?;
    let file = crate::create_output(a.history.as_deref())?;
    let save = crate::create_output(a.save.as_deref())?;
    let interrupt = crate::interrupt_flag();
    let out = match run_bench(a, true, Some(interrupt.clone())) {
        Ok(out) => out,
        Err(e) => {
            // Nothing happened: leave no empty output files behind (they were created
            // only so that a bad path fails before the run).
            for p in [&a.history, &a.save].into_iter().flatten() {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
    };
    if let (Some(path), Some(f)) = (&a.history, file) {
        let mut w = std::io::BufWriter::new(f);
        meridian_check::jsonl::write(&out.history, &mut w).with_context(|| format!("writing {}", path.display()))?;
    }
    if let (Some(path), Some(f)) = (&a.save, save) {
        serde_json::to_writer_pretty(std::io::BufWriter::new(f), &out.report)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    crate::print_report(&out.report, a.json)?;
    if let (Some(path), Some(old)) = (&a.baseline, &baseline) {
        eprintln!("against {}: {}", path.display(), against(old, &out.report));
    }
    if !out.report.check.ok() {
        for an in out.report.check.anomalies.iter().take(10) {
            eprintln!("anomaly: {an}");
        }
        eprintln!("check FAILED");
        return Ok(ExitCode::from(3));
    }
    let r = &out.report;
    if let Some(why) = &r.cut_short {
        eprintln!("bench cut short: {why}");
    }
    if let Some(why) = served_nothing(r.txns, r.committed, r.aborted, r.unknown) {
        eprintln!("error: {why}");
        return Ok(ExitCode::from(3));
    }
    if interrupt.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(ExitCode::from(crate::INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// A report saved by an earlier run (`--save` or `--json`).
fn read_baseline(path: &std::path::Path) -> Result<SimReport> {
    let text = std::fs::read_to_string(path).with_context(|| format!("--baseline {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "--baseline {}: not a report written by `meridian bench --save` or `--json`",
            path.display()
        )
    })
}

/// This run against a baseline: each figure as new / old.
fn against(old: &SimReport, new: &SimReport) -> String {
    let ratio = |n: f64, o: f64| {
        if o > 0.0 && n.is_finite() {
            format!("{:.2}x", n / o)
        } else {
            "-".to_string()
        }
    };
    let cpu = |r: &SimReport| r.protocol_stats.get(SERVER_CPU_MS_PER_COMMITTED).copied();
    let mut s = format!(
        "txn/s {} ({:.0} -> {:.0}), p50 {} ({:.2} -> {:.2} ms), p99 {} ({:.2} -> {:.2} ms)",
        ratio(new.throughput_tps, old.throughput_tps),
        old.throughput_tps,
        new.throughput_tps,
        ratio(new.latency_ms.p50, old.latency_ms.p50),
        old.latency_ms.p50,
        new.latency_ms.p50,
        ratio(new.latency_ms.p99, old.latency_ms.p99),
        old.latency_ms.p99,
        new.latency_ms.p99,
    );
    if let (Some(o), Some(n)) = (cpu(old), cpu(new)) {
        s.push_str(&format!(
            ", server CPU per committed txn {} ({o:.3} -> {n:.3} ms)",
            ratio(n, o)
        ));
    }
    if old.protocol != new.protocol || old.workload != new.workload {
        s.push_str(&format!(
            " (note: the baseline ran {} on {}, this run {} on {})",
            old.protocol, old.workload, new.protocol, new.workload
        ));
    }
    s
}

/// A clean history of nothing is not a passing benchmark: the cluster did not serve
/// (a server re-syncing, a group without a leader, every key locked).
fn served_nothing(txns: u64, committed: u64, aborted: u64, unknown: u64) -> Option<String> {
    if txns == 0 {
        return Some("no transaction ran; see `meridian cluster status`".into());
    }
    (committed == 0).then(|| {
        format!(
            "no transaction committed ({aborted} aborted, {unknown} with no outcome when the bench ended); \
             see `meridian cluster status`"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bench_that_committed_nothing_fails() {
        assert!(served_nothing(16, 0, 0, 16).is_some_and(|w| w.contains("no transaction committed")));
        assert!(served_nothing(16, 0, 16, 0).is_some());
        assert_eq!(served_nothing(16, 1, 0, 15), None);
        assert!(served_nothing(0, 0, 0, 0).is_some_and(|w| w.contains("no transaction ran")));
    }
}
