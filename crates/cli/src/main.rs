//! The `meridian` command: `sim` (one simulation), `compare` (every protocol side by
//! side, or a named experiment), `check` (verify a history file).

mod bench;
mod campaign;
mod cluster;
mod compare;
mod experiments;
mod explore;
mod ledger;
mod names;
mod report;

/// mimalloc: the simulator allocates many small messages and keys; paired runs of
/// simbench were faster with it than with the system allocator on every try.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use meridian_core::time::parse_duration;
use meridian_core::{HomeRule, Topology};
use meridian_sim::{SimConfig, SimOutput};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "meridian",
    version,
    about = "Geo-distributed transaction protocols: simulate, compare, check."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one simulation and check its history.
    #[command(after_help = "Examples:
  meridian sim --protocol rc --topology rc5 --workload ycsb --txns 2000
  meridian sim --protocol hacommit --topology us3 --workload bank --faults 'crash:node=2,at=1s,for=2s'
  meridian sim --protocol crossstitch --workload tpcc:mix=standard --history h.jsonl --json")]
    Sim(SimArgs),
    /// Run every protocol on one topology and workload (or a named experiment) and compare.
    #[command(after_help = "Examples:
  meridian compare
  meridian compare --topology us3 --workload bank --json
  meridian compare --experiment list
  meridian compare --experiment rc-fig5")]
    Compare(CompareArgs),
    /// Run one node of a cluster (see `meridian cluster up`).
    Server(cluster::ServerArgs),
    /// Start or stop a local cluster: one process per node on loopback ports.
    Cluster {
        #[command(subcommand)]
        cmd: cluster::ClusterCmd,
    },
    /// Run closed-loop clients against a cluster and check the history.
    #[command(after_help = "Examples:
  meridian cluster up --protocol replog --topology us3 --dir D
  meridian bench --cluster D/cluster.toml --workload bank --clients 16 --duration 10s --history h.jsonl
  meridian bench --cluster D/cluster.toml --json --metrics 127.0.0.1:9100
  meridian bench --cluster D/cluster.toml --save before.json   # then, after a change:
  meridian bench --cluster D/cluster.toml --baseline before.json")]
    Bench(bench::BenchArgs),
    /// Many seeded simulations per protocol under drawn faults; failing seeds are
    /// printed as the command that replays them, and shrunk.
    #[command(after_help = "Examples:
  meridian campaign --protocol all --seeds 100 --jobs 2
  meridian campaign --protocol crossstitch --seeds 10000 --first-seed 1 --json")]
    Campaign(campaign::CampaignArgs),
    /// Exhaustive search of a small configuration: every interleaving, and every drop,
    /// duplicate, early timeout and crash point within a budget, checked at every
    /// state; a violation prints as the shortest path to it.
    #[command(after_help = "Examples:
  meridian explore --protocol 2pc-2pl
  meridian explore --protocol hacommit --shards 2 --dcs 3 --txns 2 --faults crash=1,drop=1 --depth 40
  meridian explore --protocol rc --faults timeouts=1 --replay d0,d1,t6

Exit codes: 0 nothing found (the first line says whether the search was exhaustive to
its depth), 2 bad usage, 3 a violation (printed with its path and a replay command).")]
    Explore(explore::ExploreArgs),
    /// Run every paper experiment (in parallel) and write docs/EVALUATION.md, its data
    /// (evaluation.json) and its figures (figures/*.svg).
    #[command(after_help = "Examples:
  meridian report                       # every experiment, writes docs/
  meridian report --quick --out /tmp/r  # a fast smoke run
  meridian report --only hacommit,rc-fig5
  meridian report --no-run              # re-render from docs/evaluation.json")]
    Report(report::ReportArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell), e.g.
    /// `meridian completions bash > ~/.local/share/bash-completion/completions/meridian`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Check a history file: Meridian's JSON lines, or another tool's (see the README).
    #[command(after_help = "Formats (--format auto tells them apart):
  --format meridian      JSON lines from `sim --history` or `bench --history`: one meta
                         line, one txn line per transaction, one replica line per server
  --format jepsen-edn    a Jepsen history.edn: one operation map per line, or a vector
  --format jepsen-json   the same as JSON objects, one per line or one array
  --format flat          {\"sessions\": [[{\"status\": ..., \"ops\": [[\"r\", k, v], ...]}]]}
  An operation is a transaction by its value's shape (a vector of [f k v] with f one of
  r, w, append), as in Elle, whatever its :f.

Exit codes:
  0  every verdict the history's claims need holds (read committed or serializability,
     strict serializability if claimed, and durability where final states are recorded)
  2  bad usage, or a file that cannot be read (one line says where)
  3  an anomaly
  4  a verdict the claims need is unknown (a version order the history does not fix, a
     file cut short, a replica's final state missing): never a pass
  5  nothing checked: no transactions, or most operations skipped

Verdicts print as true, false or unknown, in the text and in --json alike.

Examples:
  meridian check h.jsonl
  meridian check jepsen-history.edn --format jepsen-edn --json")]
    Check {
        /// History file: written by `meridian sim --history` or `bench --history`, or a
        /// Jepsen (EDN/JSON) or flat JSON transaction history.
        file: PathBuf,
        /// Print the verdict as JSON.
        #[arg(long)]
        json: bool,
        /// History format: auto, meridian, jepsen-edn, jepsen-json or flat.
        #[arg(long, default_value = "auto")]
        format: String,
    },
}

/// Flags shared by `sim` and `compare`.
#[derive(Args, Clone, Debug)]
pub struct RunArgs {
    /// Topology preset (rc5, us3, world3, far3, two50, lan, gcp3) or TOML file.
    #[arg(long, default_value = "rc5")]
    topology: String,
    /// Workload, NAME:key=value,... (ycsb, bank, dependent-reads, chain, tpcc, script, rmw, micro).
    #[arg(long, default_value = "ycsb", value_parser = crate::names::WORKLOADS, hide_possible_values = true)]
    workload: String,
    /// Transactions to run.
    #[arg(long, default_value_t = 2000)]
    txns: u64,
    /// Closed-loop clients.
    #[arg(long, default_value_t = 16)]
    clients: u32,
    /// Seed for everything random.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Faults, e.g. `random` or `crash:node=2,at=1s,for=2s;loss:p=0.01` (see
    /// docs/SIMULATOR.md; default: none).
    #[arg(long, default_value = "", hide_default_value = true)]
    faults: String,
    /// DC(s) clients live in, comma-separated (default: spread over all DCs).
    #[arg(long)]
    client_dc: Option<String>,
    /// Home DC of every shard (default: shard s lives in DC s mod #DCs).
    #[arg(long)]
    data_dc: Option<String>,
    /// Open-loop target rate in transactions per second (default: closed loop).
    #[arg(long)]
    rate: Option<f64>,
    /// Closed-loop think time between a client's transactions, e.g. 10ms.
    #[arg(long, default_value = "0ms")]
    think: String,
    /// Maximum network jitter as a fraction of the one-way delay.
    #[arg(long, default_value_t = 0.02)]
    jitter: f64,
    /// Override the topology's shard count.
    #[arg(long)]
    shards: Option<u32>,
    /// Override the topology's data-server nodes per DC.
    #[arg(long)]
    nodes_per_dc: Option<u32>,
    /// Server CPU cost of handling any message or timer.
    #[arg(long, default_value = "10us")]
    cpu_msg: String,
    /// Server CPU cost per key operation.
    #[arg(long, default_value = "2us")]
    cpu_op: String,
    /// Cost of one synchronous log write (fsync).
    #[arg(long, default_value = "500us")]
    fsync: String,
    /// Stop the run at this much virtual time even if transactions are left, e.g.
    /// 1h (default: no limit; a run this stops says so and exits 4).
    #[arg(long)]
    max_time: Option<String>,
    /// Version GC: a superseded version is collected after this much virtual time, in
    /// the protocols that collect (`off`: never). The simulator keeps the collected
    /// versions' ids, so the checker sees every chain whole either way.
    #[arg(long, default_value = "1s")]
    version_ttl: String,
    /// No progress on stderr (it is drawn only on a terminal in any case).
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct SimArgs {
    /// Protocol spec, NAME or NAME:key=value,...: 2pc-2pl, 2pc-occ, rc, replog, hacommit, hacommit-rc, crossstitch, pc-2pl, pc-occ, hier-lock, hier-ts, 2pc-deferred, catenae. Parameters: 2pc-2pl, 2pc-occ, crossstitch `copies=N`; rc `forget=120s`; replog `leaders=C/V/O,locks=wound-wait|no-wait,lease=2s,keep=10000,forget=120s`; hacommit, hacommit-rc `replicas=5,forget=120s`; hier-lock `batch=N,flush=10ms,validate=on|off,pipeline=on|off` (hier-ts also `fanout=F`; 2pc-deferred only validate, pipeline); catenae `epoch=10ms,tolerance=5,jitter=0.2,access=20us,per-byte=50ns,stall=500ms,majority=on,delay-tolerance=D,secondary=on,failover=D`.
    #[arg(long, value_parser = crate::names::PROTOCOLS, hide_possible_values = true)]
    protocol: String,
    #[command(flatten)]
    run: RunArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Write the history as JSON lines to this file.
    #[arg(long)]
    history: Option<PathBuf>,
}

#[derive(Args)]
struct CompareArgs {
    /// A named experiment instead of the default comparison (`list` shows them).
    #[arg(long)]
    experiment: Option<String>,
    /// Print the default comparison as one JSON array of `sim --json` reports.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    run: RunArgs,
}

impl RunArgs {
    /// The flags' defaults (what `meridian sim` runs with no flag given).
    pub fn defaults() -> RunArgs {
        #[derive(Parser)]
        struct Only {
            #[command(flatten)]
            run: RunArgs,
        }
        Only::parse_from(["meridian"]).run
    }

    /// Builds the simulator configuration, with one clear error on bad input.
    pub fn config(&self) -> Result<SimConfig> {
        if self.quiet {
            QUIET.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let mut topo = Topology::load(&self.topology)?;
        if let Some(s) = self.shards {
            if s == 0 {
                bail!("--shards must be at least 1");
            }
            topo.shards = s;
        }
        if let Some(n) = self.nodes_per_dc {
            if n == 0 {
                bail!("--nodes-per-dc must be at least 1");
            }
            topo.nodes_per_dc = n;
        }
        let mut cfg = SimConfig::new(topo.clone(), &self.workload);
        cfg.txns = self.txns;
        cfg.clients = self.clients;
        cfg.seed = self.seed;
        cfg.faults = self.faults.clone();
        cfg.rate = self.rate;
        cfg.think = parse_duration(&self.think)
            .map_err(anyhow::Error::msg)
            .context("--think")?;
        if !(0.0..=10.0).contains(&self.jitter) {
            bail!("--jitter must be a fraction between 0 and 10");
        }
        cfg.jitter = self.jitter;
        if let Some(m) = &self.max_time {
            cfg.max_time = parse_duration(m).map_err(anyhow::Error::msg).context("--max-time")?;
            if cfg.max_time == 0 {
                bail!("--max-time must be more than 0");
            }
        }
        let dur = |flag: &str, v: &str| {
            parse_duration(v)
                .map_err(anyhow::Error::msg)
                .with_context(|| flag.to_string())
        };
        cfg.version_ttl = match self.version_ttl.trim() {
            "off" => u64::MAX,
            v => dur("--version-ttl", v)?,
        };
        cfg.cpu = meridian_sim::CpuModel {
            per_msg: dur("--cpu-msg", &self.cpu_msg)?,
            per_op: dur("--cpu-op", &self.cpu_op)?,
            fsync: dur("--fsync", &self.fsync)?,
        };
        if let Some(dcs) = &self.client_dc {
            cfg.client_dcs = dcs.split(',').map(|d| topo.dc(d.trim())).collect::<Result<_, _>>()?;
        }
        if let Some(d) = &self.data_dc {
            cfg.home = HomeRule::Dc(topo.dc(d)?);
        }
        Ok(cfg)
    }

    /// The flags that reproduce this run, for failure messages.
    pub fn repro(&self, protocol: &str) -> String {
        let mut s = format!(
            "meridian sim --protocol {protocol} --topology {} --workload '{}' --txns {} --clients {} --seed {}",
            self.topology, self.workload, self.txns, self.clients, self.seed
        );
        if !self.faults.is_empty() {
            s += &format!(" --faults '{}'", self.faults);
        }
        for (flag, v) in [("--client-dc", &self.client_dc), ("--data-dc", &self.data_dc)] {
            if let Some(v) = v {
                s += &format!(" {flag} {v}");
            }
        }
        if let Some(r) = self.rate {
            s += &format!(" --rate {r}");
        }
        if let Some(m) = &self.max_time {
            s += &format!(" --max-time {m}");
        }
        if self.think != "0ms" {
            s += &format!(" --think {}", self.think);
        }
        if self.version_ttl != "1s" {
            s += &format!(" --version-ttl {}", self.version_ttl);
        }
        if self.jitter != 0.02 {
            s += &format!(" --jitter {}", self.jitter);
        }
        if let Some(v) = self.shards {
            s += &format!(" --shards {v}");
        }
        if let Some(v) = self.nodes_per_dc {
            s += &format!(" --nodes-per-dc {v}");
        }
        for (flag, v, d) in [
            ("--cpu-msg", &self.cpu_msg, "10us"),
            ("--cpu-op", &self.cpu_op, "2us"),
            ("--fsync", &self.fsync, "500us"),
        ] {
            if v != d {
                s += &format!(" {flag} {v}");
            }
        }
        s
    }
}

/// Set by `--quiet`: no progress bars.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether progress is drawn: on a terminal, without `--quiet`.
pub fn show_progress() -> bool {
    std::io::stderr().is_terminal() && !QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// A progress bar on a terminal, nothing otherwise.
pub fn progress(label: &str) -> impl FnMut(u64, u64) {
    // Drawn only on a terminal, and only once the total is known (a bar of 0/0 would
    // show full).
    let tty = show_progress();
    let label = label.to_string();
    let mut bar: Option<ProgressBar> = None;
    move |done, total| {
        if !tty || total == 0 {
            return;
        }
        let b = bar.get_or_insert_with(|| {
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} txns, {per_sec}, eta {eta} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            b.set_prefix(label.clone());
            b
        });
        b.set_length(total);
        b.set_position(done);
        if done >= total {
            b.finish_and_clear();
        }
    }
}

/// Prints a run's report: the JSON object, or a few readable lines.
pub fn print_report(r: &meridian_sim::SimReport, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(r)?);
    } else {
        println!(
            "{} on {} with {} (seed {}{})",
            r.protocol,
            r.topology,
            r.workload,
            r.seed,
            if r.faults.is_empty() {
                String::new()
            } else {
                format!(", faults {}", r.faults)
            }
        );
        println!(
            "  committed {}  aborted {}  unknown {}",
            r.committed, r.aborted, r.unknown
        );
        println!(
            "  latency ms        mean {:.1}  p50 {:.1}  p99 {:.1}",
            r.latency_ms.mean, r.latency_ms.p50, r.latency_ms.p99
        );
        println!(
            "  commit latency ms mean {:.1}  p50 {:.1}  p99 {:.1}",
            r.commit_latency_ms.mean, r.commit_latency_ms.p50, r.commit_latency_ms.p99
        );
        println!(
            "  throughput {:.1} txn/s   WAN trips mean {:.2} max {}",
            r.throughput_tps, r.wan_trips.mean, r.wan_trips.max
        );
        println!(
            "  messages {} ({} WAN, {:.1}/txn)   {} events in {:.2}s wall",
            r.messages.total, r.messages.wan, r.messages.per_txn, r.events, r.wall_s
        );
        for (why, n) in r.abort_reasons.iter().take(5) {
            println!("  abort: {why} x{n}");
        }
        if let (Some(cpu), Some(n)) = (
            r.protocol_stats.get(bench::SERVER_CPU_S),
            r.protocol_stats.get(bench::SERVER_PROCESSES),
        ) {
            let per = r.protocol_stats.get(bench::SERVER_CPU_MS_PER_COMMITTED);
            println!(
                "  server CPU {cpu:.2} s over {n} processes{}",
                per.map(|p| format!(", {p:.3} ms per committed transaction"))
                    .unwrap_or_default()
            );
        }
        let c = &r.check;
        println!(
            "  check: serializable={} strict={} atomic={} durable={}{}",
            c.serializable,
            c.strict_serializable,
            c.atomic,
            c.durable,
            c.invariant
                .as_ref()
                .map(|i| format!(" invariant: {i}"))
                .unwrap_or_default()
        );
        // (A bench has no fault schedule, and judges no stalls: no such line.)
        if r.within_tolerance == Some(false) && !r.faults.is_empty() {
            println!("  faults beyond the protocol's stated tolerance: a stall is reported, not a failure");
        }
        for s in &c.stalls {
            println!("  stall: {s}");
        }
    }
    Ok(())
}

/// Creates an output file before any work starts, so a bad path fails at once.
pub(crate) fn create_output(path: Option<&std::path::Path>) -> Result<Option<std::fs::File>> {
    path.map(|p| std::fs::File::create(p).with_context(|| format!("cannot write {}", p.display())))
        .transpose()
}

/// Watches `kinds` of signal on a thread of its own (a current-thread runtime) and
/// calls `on` with how many of them have come so far, one call per signal; returns
/// once the handlers are in place, so the run that follows is covered. Where the
/// signals cannot be watched, nothing is called.
pub fn watch_signals(kinds: Vec<tokio::signal::unix::SignalKind>, mut on: impl FnMut(u32) + Send + 'static) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            let _ = ready_tx.send(());
            return;
        };
        rt.block_on(async move {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            for k in kinds {
                let Ok(mut sig) = tokio::signal::unix::signal(k) else {
                    let _ = ready_tx.send(());
                    return;
                };
                let tx = tx.clone();
                tokio::spawn(async move {
                    while sig.recv().await.is_some() {
                        let _ = tx.send(());
                    }
                });
            }
            let _ = ready_tx.send(());
            let mut n = 0;
            while rx.recv().await.is_some() {
                n += 1;
                on(n);
            }
        });
    });
    let _ = ready_rx.recv();
}

/// Ctrl-C (SIGINT) sets the returned flag instead of killing the process, so a long
/// run can stop issuing, finish what is in flight and report what it did; a second
/// Ctrl-C exits at once (130). Watched on a thread of its own.
pub fn interrupt_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    watch_signals(vec![tokio::signal::unix::SignalKind::interrupt()], move |n| {
        if n == 1 {
            f.store(true, Ordering::Relaxed);
            eprintln!("\ninterrupted: finishing the transactions in flight and reporting (Ctrl-C again to quit now)");
        } else {
            std::process::exit(130);
        }
    });
    flag
}

/// Exit status of a run the user interrupted (128 + SIGINT, as a shell reports it).
pub const INTERRUPTED: u8 = 130;

fn run_sim(a: &SimArgs) -> Result<ExitCode> {
    let mut cfg = a.run.config()?;
    let interrupt = interrupt_flag();
    cfg.interrupt = Some(interrupt.clone());
    let file = create_output(a.history.as_deref())?;
    let out: SimOutput = meridian_sim::run_named(&a.protocol, &cfg, &mut progress(&a.protocol))?;
    if let (Some(path), Some(f)) = (&a.history, file) {
        let mut w = std::io::BufWriter::new(f);
        meridian_check::jsonl::write(&out.history, &mut w).with_context(|| format!("writing {}", path.display()))?;
    }
    let r = &out.report;
    print_report(r, a.json)?;
    if let Some(why) = &r.cut_short {
        eprintln!("run cut short: {why}");
    }
    // An anomaly outranks the interruption (3), which outranks a limit (4).
    let code = if r.check.ok() {
        if interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            ExitCode::from(INTERRUPTED)
        } else if r.cut_short.is_some() {
            ExitCode::from(4)
        } else {
            ExitCode::SUCCESS
        }
    } else {
        for a in r.check.anomalies.iter().take(10) {
            eprintln!("anomaly: {a}");
        }
        eprintln!("check FAILED; reproduce with: {}", a.run.repro(&a.protocol));
        ExitCode::from(3)
    };
    // The process ends after this: freeing a large run's history record by record
    // (seconds at a million transactions) would only delay the exit.
    std::mem::forget(out);
    Ok(code)
}

fn run_check(file: &PathBuf, json: bool, format: &str) -> Result<ExitCode> {
    use meridian_check::foreign::{self, Format};
    let format: Option<Format> = match format {
        "auto" => None,
        f => Some(f.parse().map_err(anyhow::Error::msg)?),
    };
    // A Meridian history is read line by line from the file (it can be larger than
    // the memory its records need); the format is told from its first bytes.
    let head = {
        use std::io::Read;
        let mut b = Vec::with_capacity(64 << 10);
        std::fs::File::open(file)
            .with_context(|| format!("reading {}", file.display()))?
            .take(64 << 10)
            .read_to_end(&mut b)
            .with_context(|| format!("reading {}", file.display()))?;
        String::from_utf8_lossy(&b).into_owned()
    };
    let given = format;
    let format = given.unwrap_or_else(|| foreign::detect(&head));
    if format == Format::Meridian {
        let f = std::fs::File::open(file).with_context(|| format!("reading {}", file.display()))?;
        let (h, cut) = meridian_check::jsonl::read_for_check(std::io::BufReader::with_capacity(1 << 20, f))?;
        return check_meridian(h, cut, json);
    }
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    // (Told again from the whole text: a first line longer than the head.)
    let format = given.unwrap_or_else(|| foreign::detect(&text));
    if format != Format::Meridian {
        let f = foreign::read(&text, format).with_context(|| format!("reading {} as {format}", file.display()))?;
        let r = meridian_check::check_foreign(&f);
        let mostly_skipped = (f.skipped * 2 > f.ops).then(|| {
            format!(
                "{} of the file's {} operations are not transactions (or are the nemesis's) and were skipped",
                f.skipped, f.ops
            )
        });
        return print_check(&f.history, &r, json, true, mostly_skipped);
    }
    let (h, cut) = meridian_check::jsonl::read_for_check(text.as_bytes())?;
    check_meridian(h, cut, json)
}

/// Checks a Meridian history read (`cut`: where a file cut short ends).
fn check_meridian(h: meridian_check::History, cut: Option<String>, json: bool) -> Result<ExitCode> {
    let mut r = if cut.is_some() {
        meridian_check::check_incomplete(&h)
    } else {
        meridian_check::check(&h)
    };
    if let Some(c) = cut {
        // An incomplete history: what it lacks is unknown, not an anomaly.
        r.unknown.insert(0, meridian_check::Unknown::Cut(c));
    }
    let code = print_check(&h, &r, json, false, None);
    // The process ends after this: freeing a large history record by record (half a
    // second at a million transactions) would only delay the exit.
    std::mem::forget(h);
    code
}

/// `meridian check`'s exit codes: every verdict the history's claims need holds (0), an
/// anomaly (3), a verdict it needs is unknown (4), nothing (or too little) checked (5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CheckExit {
    Holds = 0,
    Anomaly = 3,
    Unknown = 4,
    NothingChecked = 5,
}

/// The exit of a check and, unless it holds or found an anomaly, why. The claims: read
/// committed or serializability (strict serializability if the history claims it), and
/// durability where the history records final states (a foreign history records none:
/// its durability is not judged and does not count).
fn check_exit(
    h: &meridian_check::History,
    r: &meridian_check::Report,
    foreign: bool,
    skipped: Option<String>,
) -> (CheckExit, Option<String>) {
    use meridian_check::Verdict;
    if h.txns.is_empty() {
        return (
            CheckExit::NothingChecked,
            Some("nothing checked: the history holds no transactions".into()),
        );
    }
    if !r.ok() {
        return (CheckExit::Anomaly, None);
    }
    if let Some(why) = skipped {
        return (CheckExit::NothingChecked, Some(format!("nothing checked: {why}")));
    }
    let iso = if h.meta.read_committed {
        let rc = r.levels.iter().find(|l| l.name == "read-committed").map(|l| l.holds);
        ("read committed", Verdict::of_level(rc.flatten()))
    } else if h.meta.strict {
        ("strict serializability", r.strict_verdict())
    } else {
        ("serializability", r.serializable_verdict())
    };
    let mut open = vec![];
    if iso.1 == Verdict::Unknown {
        open.push(iso.0);
    }
    if !foreign && r.durable_verdict() == Verdict::Unknown {
        open.push("durability");
    }
    if open.is_empty() {
        (CheckExit::Holds, None)
    } else {
        (CheckExit::Unknown, Some(format!("not decided: {}", open.join(", "))))
    }
}

fn print_check(
    h: &meridian_check::History,
    r: &meridian_check::Report,
    json: bool,
    foreign: bool,
    skipped: Option<String>,
) -> Result<ExitCode> {
    let (exit, why) = check_exit(h, r, foreign, skipped);
    if let Some(w) = why.as_ref().filter(|_| json || exit != CheckExit::NothingChecked) {
        eprintln!("{w}");
    }
    if json {
        // The report, plus the overall outcome the exit code gives and why.
        let mut v = serde_json::to_value(r)?;
        if let Some(o) = v.as_object_mut() {
            let outcome = match exit {
                CheckExit::Holds => "holds",
                CheckExit::Anomaly => "anomaly",
                CheckExit::Unknown => "unknown",
                CheckExit::NothingChecked => "nothing-checked",
            };
            o.insert("outcome".into(), outcome.into());
            if let Some(w) = &why {
                o.insert("reason".into(), w.clone().into());
            }
        }
        println!("{v}");
    } else if exit == CheckExit::NothingChecked {
        println!(
            "{} transactions: {}",
            h.txns.len(),
            why.as_deref().unwrap_or("nothing checked")
        );
        for n in &r.notes {
            println!("  note: {n}");
        }
    } else {
        // A verdict the history cannot decide is "unknown", never "true" (the JSON
        // prints the same verdicts).
        let of_unknown = match r.committed_of_unknown_outcome {
            0 => String::new(),
            n => format!(", {n} of them of unknown outcome but written where it shows"),
        };
        println!(
            "{} transactions ({} committed{of_unknown}): serializable={} strict={} atomic={} durable={}",
            h.txns.len(),
            r.committed,
            r.serializable_verdict(),
            r.strict_verdict(),
            r.atomic,
            r.durable_verdict()
        );
        let lv: Vec<String> = r
            .levels
            .iter()
            .map(|l| format!("{}={}", l.name, meridian_check::Verdict::of_level(l.holds)))
            .collect();
        println!("  levels: {}", lv.join(" "));
        for a in &r.anomalies {
            println!("  {a}");
        }
        // The smallest counterexample of each level that fails and that the protocol's
        // claims let pass (the anomalies above are what breaks the claims).
        for l in r.levels.iter().filter(|l| l.holds == Some(false)) {
            if let Some(c) = &l.counterexample {
                if !r.anomalies.iter().any(|a| a.to_string() == *c) {
                    println!("  {} fails: {c}", l.name);
                }
            }
        }
        for u in &r.unknown {
            println!("  unknown: {u}");
        }
        for n in &r.notes {
            println!("  note: {n}");
        }
    }
    Ok(ExitCode::from(exit as u8))
}

/// `meridian check F | head` and the like: a reader that goes away ends the process
/// quietly (exit 141, as for other Unix tools) instead of a "Broken pipe" panic.
/// Only for the commands that just print; servers and benchmarks keep Rust's default,
/// where a closed socket is an error to handle.
fn quiet_broken_pipe() {
    // SAFETY: restores the default disposition of one signal before any thread is
    // spawned; no handler is installed, so nothing can run in signal context.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            // clap's whole message: which argument is missing, "a similar argument
            // exists", the usage line (exit status 2).
            e.exit();
        }
    };
    if matches!(
        cli.cmd,
        Cmd::Sim(_)
            | Cmd::Compare(_)
            | Cmd::Check { .. }
            | Cmd::Campaign(_)
            | Cmd::Explore(_)
            | Cmd::Report(_)
            | Cmd::Completions { .. }
            | Cmd::Cluster {
                cmd: cluster::ClusterCmd::Status { .. }
            }
    ) {
        quiet_broken_pipe();
    }
    let res = match &cli.cmd {
        Cmd::Sim(a) => run_sim(a),
        Cmd::Compare(a) => compare::run(a.experiment.as_deref(), &a.run, a.json),
        Cmd::Check { file, json, format } => run_check(file, *json, format),
        Cmd::Campaign(a) => campaign::campaign(a),
        Cmd::Explore(a) => explore::explore(a),
        Cmd::Report(a) => report::report(a),
        Cmd::Server(a) => cluster::server(a).map(|()| ExitCode::SUCCESS),
        Cmd::Cluster { cmd } => cluster::cluster(cmd),
        Cmd::Bench(a) => bench::bench(a),
        Cmd::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(*shell, &mut Cli::command(), "meridian", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("error: {}", chain.join(": "));
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Splits an example line as a shell would (single quotes only, `#` comments).
    fn words(line: &str) -> Vec<String> {
        let line = line.split(" #").next().unwrap_or(line);
        let mut out = vec![];
        let mut cur = String::new();
        let mut quoted = false;
        for ch in line.chars() {
            match ch {
                '\'' => quoted = !quoted,
                ' ' if !quoted => {
                    if !cur.is_empty() {
                        out.push(std::mem::take(&mut cur));
                    }
                }
                c => cur.push(c),
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    }

    /// Every example a command's help shows parses as that command's arguments, so the
    /// examples cannot drift from the flags.
    #[test]
    fn every_help_example_parses() {
        let mut cmd = Cli::command();
        cmd.build();
        let mut seen = 0;
        for sub in cmd.get_subcommands() {
            let Some(after) = sub.get_after_help() else { continue };
            for line in after.to_string().lines() {
                let line = line.trim();
                if !line.starts_with("meridian ") {
                    continue;
                }
                seen += 1;
                if let Err(e) = Cli::try_parse_from(words(line)) {
                    panic!("`{line}` in `meridian {} --help` does not parse: {e}", sub.get_name());
                }
            }
        }
        assert!(seen >= 10, "only {seen} examples found");
    }
}
