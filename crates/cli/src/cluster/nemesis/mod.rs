//! `meridian cluster nemesis`: a bench against a compose cluster (one container per
//! server, `meridian cluster compose`) while real faults hit it, then the history's
//! check. Jepsen's idea on Meridian's containers: the faults are the kernel's and
//! Docker's, not the nodes' own emulation.
//!
//! - **Cuts** (`partition`, `oneway`, `bridge`): nftables rules in the servers' network
//!   namespaces drop the packets (no reset), so TCP connections stall mid-stream.
//! - **Kill** (`kill`): `docker kill --signal KILL`, then `docker start`; the server
//!   recovers from its journal (compose journals unless `--memory-only`).
//! - **Pause** (`pause`): `docker pause` freezes the process; its sockets stay open.
//! - **Slow links** (`slow`): a netem discipline adds delay and loss on one DC pair.
//!
//! The nemesis starts the compose project itself and refuses one that is already up,
//! so its faults reach only the cluster it started; it heals every fault and takes the
//! project down when it ends, on an error or on Ctrl-C too (`--keep` leaves it up).
//!
//! The bench runs in the tools container, outside every cut: a cut separates servers
//! from servers, while every client still reaches every server. A partition that also
//! strands a DC's clients would need one tools container per DC and one history merged
//! from several benches; not built. A fault's rules live in the container's network
//! namespace, which a restarted container replaces: the nemesis applies the cuts and
//! slow links still in force again after it starts a killed container.

mod faults;
mod schedule;

use anyhow::{bail, Context, Result};
use clap::Args;
use faults::{run, Project};
use meridian_check::History;
use meridian_core::{Outcome, Time};
use schedule::{Fault, Shape};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `meridian cluster nemesis` flags.
#[derive(Args, Debug)]
pub struct NemesisArgs {
    /// The directory `cluster compose` wrote (cluster.toml, compose.yml).
    #[arg(long, default_value = "meridian-compose")]
    dir: PathBuf,
    /// The faults, `;`-separated: partition:dc=NAME | partition:node=N |
    /// oneway:from=DC,to=DC | bridge:dc=NAME | kill:node=N | pause:node=N |
    /// slow:a=DC,b=DC,delay=T,loss=P; each with at=T,for=T from the start of the
    /// bench's container (its first transaction comes about 1-2 s later).
    /// Default: a schedule drawn from --seed.
    #[arg(long)]
    schedule: Option<String>,
    /// Seed of the drawn schedule (and of the bench's workload).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How long the bench starts transactions (every fault ends by then).
    #[arg(long, default_value = "40s")]
    duration: String,
    /// Workload (as for `bench`).
    #[arg(long, default_value = "bank")]
    workload: String,
    /// Closed-loop clients.
    #[arg(long, default_value_t = 6)]
    clients: u32,
    /// After the bench, how long decisions may take to reach every replica before the
    /// servers' state is read (as `bench --settle`).
    #[arg(long, default_value = "5s")]
    settle: String,
    /// Leave the cluster running when done (faults healed).
    #[arg(long)]
    keep: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// A compose command this machine has.
fn compose_cmd() -> Option<Vec<String>> {
    let ok = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if ok(&["docker-compose", "version"]) {
        Some(vec!["docker-compose".into()])
    } else if ok(&["docker", "compose", "version"]) {
        Some(vec!["docker".into(), "compose".into()])
    } else {
        None
    }
}

/// What the nemesis needs of the host, each missing piece named.
fn preflight() -> Result<Vec<String>> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        bail!("the nemesis enters the containers' network namespaces (nsenter) and needs root");
    }
    for (prog, arg, pkg) in [
        ("docker", "--version", "Docker"),
        ("nsenter", "--version", "util-linux"),
        ("unshare", "--version", "util-linux"),
        ("nft", "--version", "nftables"),
        ("tc", "-V", "iproute2"),
        ("ip", "-V", "iproute2"),
    ] {
        let ok = Command::new(prog)
            .arg(arg)
            .stdin(Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            bail!("the nemesis needs `{prog}` on this host (from {pkg})");
        }
    }
    run(Command::new("docker").args(["info", "--format", "{{.ServerVersion}}"]))
        .context("the Docker engine does not answer")?;
    compose_cmd().ok_or_else(|| anyhow::anyhow!("the nemesis needs `docker-compose` or `docker compose`"))
}

/// SIGINT, SIGTERM and SIGHUP set the returned flag, however often they come: the
/// nemesis must heal and take its containers down whatever stops it (the CLI's own
/// Ctrl-C handler quits at a second Ctrl-C, which would leave containers paused).
fn stop_flag() -> Arc<AtomicBool> {
    use tokio::signal::unix::SignalKind;
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let kinds = vec![SignalKind::interrupt(), SignalKind::terminate(), SignalKind::hangup()];
    crate::watch_signals(kinds, move |n| {
        f.store(true, Ordering::Relaxed);
        if n == 1 {
            eprintln!("\nnemesis: stopping: healing every fault, interrupting the bench, taking the cluster down");
        }
    });
    flag
}

/// Signals the bench's container(s) of project `name` (INT: the bench writes its
/// history so far and reports; KILL: gone).
fn signal_bench(name: &str, signal: &str) {
    let label = format!("label=com.docker.compose.project={name}");
    let ids = run(Command::new("docker").args([
        "ps",
        "-q",
        "--filter",
        &label,
        "--filter",
        "label=com.docker.compose.oneoff=True",
    ]))
    .unwrap_or_default();
    for id in ids.split_whitespace() {
        let _ = run(Command::new("docker").args(["kill", "--signal", signal, id]));
    }
}

/// `docker-compose down`, retried while Docker still detaches a just-ended `run --rm`
/// container from the network ("active endpoints").
fn down(p: &Project) {
    for _ in 0..15 {
        match run(&mut p.cmd(&["down", "--remove-orphans", "-t", "5"])) {
            Ok(_) => return,
            Err(e) if e.to_string().contains("active endpoints") => std::thread::sleep(Duration::from_secs(2)),
            Err(e) => {
                eprintln!("nemesis: warning: taking the cluster down: {e:#}");
                return;
            }
        }
    }
    eprintln!(
        "nemesis: warning: the cluster's network is still in use; take it down by hand: {} -p {} -f {} down",
        p.compose.join(" "),
        p.name,
        p.file.display()
    );
}

fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Heals what is still in force and takes the project down, however the run ends.
struct Cleanup<'a> {
    p: &'a Project,
    /// The bench, while it runs: stopped if the nemesis fails half way.
    bench: Option<std::process::Child>,
    active: BTreeMap<usize, Fault>,
    keep: bool,
}

impl Cleanup<'_> {
    fn heal_all(&mut self) {
        for (k, f) in std::mem::take(&mut self.active) {
            if let Err(e) = self.p.heal(k, &f) {
                eprintln!("nemesis: warning: {e:#}");
            }
        }
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        if let Some(mut b) = self.bench.take() {
            // The bench's container first (killing `compose run` alone may leave it).
            signal_bench(&self.p.name, "KILL");
            let _ = b.kill();
            let _ = b.wait();
        }
        self.heal_all();
        if !self.keep {
            down(self.p);
        }
    }
}

/// One step as it happened, in cluster time.
#[derive(serde::Serialize)]
struct Done {
    step: String,
    applied: Time,
    healed: Time,
}

/// `meridian cluster nemesis`.
pub fn nemesis(a: &NemesisArgs) -> Result<ExitCode> {
    let total = Duration::from_nanos(
        meridian_core::time::parse_duration(&a.duration).map_err(|e| anyhow::anyhow!("--duration: {e}"))?,
    );
    meridian_core::time::parse_duration(&a.settle).map_err(|e| anyhow::anyhow!("--settle: {e}"))?;
    let dir = std::fs::canonicalize(&a.dir).with_context(|| format!("no directory {}", a.dir.display()))?;
    let file = dir.join("compose.yml");
    if !file.exists() {
        bail!(
            "{} has no compose.yml: the nemesis runs against a cluster that `meridian cluster compose --dir {}` wrote",
            dir.display(),
            dir.display()
        );
    }
    let cluster = super::load(&dir.join("cluster.toml"))?;
    let shape = Shape {
        dcs: cluster.topology.dcs.clone(),
        per_dc: cluster.topology.nodes_per_dc,
    };
    if shape.servers() != cluster.num_servers() {
        bail!("the cluster file's servers do not match its topology");
    }
    let steps = match &a.schedule {
        Some(s) => schedule::parse(s, &shape, total)?,
        None => schedule::draw(a.seed, &shape, total)?,
    };
    let compose = preflight()?;
    if steps
        .iter()
        .any(|s| matches!(&s.fault, Fault::Slow { delay, .. } if !delay.is_zero()))
        && !faults::kernel_has_netem()
    {
        bail!(
            "this kernel cannot delay packets (it is built without netem, CONFIG_NET_SCH_NETEM): \
             a slow link here can only lose packets (slow:...,loss=P without delay=)"
        );
    }
    let ips = cluster
        .addrs
        .iter()
        .map(|s| match s.ip() {
            std::net::IpAddr::V4(v) => Ok(v),
            other => bail!("server address {other} is not IPv4"),
        })
        .collect::<Result<Vec<_>>>()?;
    let name = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        dir.hash(&mut h);
        format!("meridian-nemesis-{:08x}", h.finish() as u32)
    };
    let mut project = Project {
        compose,
        name,
        file,
        ids: vec![],
        ips,
    };
    let running = run(&mut project.cmd(&["ps", "-q"]))?;
    if !running.trim().is_empty() {
        bail!(
            "compose project {} already has containers: the nemesis runs only against a cluster it starts itself; take it down first ({} -p {} -f {} down)",
            project.name,
            project.compose.join(" "),
            project.name,
            project.file.display()
        );
    }
    let replay = schedule::render(&steps);
    eprintln!(
        "nemesis: {} faults over a {:.0} s bench; replay with --schedule '{replay}'",
        steps.len(),
        total.as_secs_f64()
    );
    let interrupt = stop_flag();
    let started = run(&mut project.cmd(&["up", "-d"]))
        .context("starting the cluster")
        .and_then(|_| {
            let mut ids = vec![];
            for n in 0..shape.servers() {
                let id = run(&mut project.cmd(&["ps", "-q", &format!("n{n}")]))?;
                match id.trim() {
                    "" => bail!("compose started no container for node {n}"),
                    id => ids.push(id.to_string()),
                }
            }
            Ok(ids)
        });
    match started {
        Ok(ids) => project.ids = ids,
        Err(e) => {
            down(&project);
            return Err(e);
        }
    }
    let mut clean = Cleanup {
        p: &project,
        bench: None,
        active: BTreeMap::new(),
        keep: a.keep,
    };
    run(&mut clean.p.cmd(&[
        "run",
        "--rm",
        "-T",
        "meridian",
        "cluster",
        "status",
        "--cluster",
        "cluster.toml",
        "--wait",
        "120s",
    ]))
    .context("waiting for the cluster to come up")?;
    let history = format!("nemesis-{}.jsonl", unix_ns() / 1_000_000_000);
    let bench = clean
        .p
        .cmd(&[
            "run",
            "--rm",
            "-T",
            "meridian",
            "bench",
            "--cluster",
            "cluster.toml",
            "--workload",
            &a.workload,
            "--clients",
            &a.clients.to_string(),
            "--duration",
            &a.duration,
            "--settle",
            &a.settle,
            "--seed",
            &a.seed.to_string(),
            "--history",
            &history,
            "--json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .context("cannot start the bench")?;
    let t0 = Instant::now();
    clean.bench = Some(bench);
    let now = || unix_ns().saturating_sub(cluster.file.epoch_ns);
    // Events in time order: (when, apply?, step index).
    let mut events: Vec<(Duration, bool, usize)> = vec![];
    for (k, s) in steps.iter().enumerate() {
        events.push((s.at, true, k));
        events.push((s.end(), false, k));
    }
    events.sort_by_key(|(t, apply, k)| (*t, *apply, *k));
    let mut done: Vec<Done> = steps
        .iter()
        .map(|s| Done {
            step: s.text.clone(),
            applied: 0,
            healed: 0,
        })
        .collect();
    let mut interrupted = false;
    for (t, apply, k) in events {
        while t0.elapsed() < t {
            if interrupt.load(std::sync::atomic::Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            std::thread::sleep((t - t0.elapsed()).min(Duration::from_millis(100)));
        }
        if interrupted {
            break;
        }
        let s = &steps[k];
        if apply {
            // In force before it is applied: a step applied half way is healed too.
            clean.active.insert(k, s.fault.clone());
            clean
                .p
                .apply(k, &s.fault, None)
                .with_context(|| format!("applying `{}`", s.text))?;
            done[k].applied = now();
            eprintln!("nemesis {:>5.1}s: {}", t0.elapsed().as_secs_f64(), s.text);
        } else if let Some(f) = clean.active.get(&k).cloned() {
            // Healed on every node it reached before it leaves the steps in force.
            clean.p.heal(k, &f).with_context(|| format!("healing `{}`", s.text))?;
            clean.active.remove(&k);
            done[k].healed = now();
            eprintln!("nemesis {:>5.1}s: healed {}", t0.elapsed().as_secs_f64(), s.text);
            // A restarted container came back in a new namespace: the cuts and slow
            // links still in force apply to it again.
            if let Fault::Kill(n) = f {
                for (j, g) in &clean.active {
                    if matches!(g, Fault::Cut(_) | Fault::Slow { .. }) {
                        clean
                            .p
                            .apply(*j, g, Some(n))
                            .with_context(|| format!("applying `{}` again", steps[*j].text))?;
                    }
                }
            }
        }
    }
    if interrupted {
        clean.heal_all();
        for d in done.iter_mut().filter(|d| d.applied > 0 && d.healed == 0) {
            d.healed = now();
        }
        // The bench's own Ctrl-C: it stops issuing, writes the history so far and its
        // partial report. Sent to its container (a signal to `compose run` stops the
        // container instead, and the history is lost).
        signal_bench(&clean.p.name, "INT");
    }
    let bench = clean.bench.take().expect("the bench was started above");
    let out = bench.wait_with_output().context("waiting for the bench")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Option<serde_json::Value> = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str(l).ok());
    let rates = windows(&dir.join(&history), &done);
    let code = out.status.code().unwrap_or(2);
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "schedule": replay,
                "history": dir.join(&history),
                "steps": done,
                "rates": rates.as_ref().ok(),
                "bench": report,
                "bench_exit": code,
                "interrupted": interrupted,
            })
        );
    } else {
        println!("nemesis: schedule {replay}");
        match &rates {
            Ok(r) => print_rates(r),
            Err(e) => println!("nemesis: no commit rates: {e:#}"),
        }
        match &report {
            Some(r) => println!(
                "nemesis: {} committed, {} aborted, {} unknown; check: {} anomalies, durable {}; history {}",
                r["committed"],
                r["aborted"],
                r["unknown"],
                r["check"]["anomalies"].as_array().map_or(0, Vec::len),
                r["check"]["durable"],
                dir.join(&history).display()
            ),
            None => println!("nemesis: the bench gave no report (exit {code}): {}", stdout.trim()),
        }
    }
    drop(clean);
    if interrupted {
        return Ok(ExitCode::from(crate::INTERRUPTED));
    }
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(2)))
}

/// Commits per second before the first fault and during each step, and each step's
/// longest stretch without a commit.
#[derive(serde::Serialize)]
struct Rates {
    before: f64,
    steps: Vec<StepRate>,
}

#[derive(serde::Serialize)]
struct StepRate {
    step: String,
    during: f64,
    ratio: f64,
    longest_gap_s: f64,
}

fn windows(path: &std::path::Path, done: &[Done]) -> Result<Rates> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let h: History = meridian_check::jsonl::read(std::io::BufReader::new(f))
        .with_context(|| format!("reading {}", path.display()))?;
    // This run's commits: an earlier run's records carry no start.
    let mut ends: Vec<Time> = h
        .txns
        .iter()
        .filter(|t| t.outcome == Outcome::Committed && t.start > 0)
        .filter_map(|t| t.end)
        .collect();
    ends.sort_unstable();
    let first_start = h
        .txns
        .iter()
        .filter(|t| t.start > 0)
        .map(|t| t.start)
        .min()
        .unwrap_or(0);
    let first_fault = done
        .iter()
        .map(|d| d.applied)
        .filter(|t| *t > 0)
        .min()
        .unwrap_or(first_start);
    let count = |a: Time, b: Time| ends.iter().filter(|e| **e >= a && **e < b).count() as f64;
    let secs = |a: Time, b: Time| (b.saturating_sub(a) as f64 / 1e9).max(1e-9);
    let before = count(first_start, first_fault) / secs(first_start, first_fault);
    let steps = done
        .iter()
        .filter(|d| d.applied > 0 && d.healed > d.applied)
        .map(|d| {
            let during = count(d.applied, d.healed) / secs(d.applied, d.healed);
            let mut last = d.applied;
            let mut gap: Time = 0;
            for e in ends.iter().filter(|e| **e >= d.applied && **e < d.healed) {
                gap = gap.max(e - last);
                last = *e;
            }
            gap = gap.max(d.healed - last);
            StepRate {
                step: d.step.clone(),
                during,
                ratio: if before > 0.0 { during / before } else { 0.0 },
                longest_gap_s: gap as f64 / 1e9,
            }
        })
        .collect();
    Ok(Rates { before, steps })
}

fn print_rates(r: &Rates) {
    println!("nemesis: {:.1} commits/s before the first fault", r.before);
    println!(
        "  {:<48} {:>10} {:>10} {:>12}",
        "fault", "commits/s", "vs before", "longest gap"
    );
    for s in &r.steps {
        println!(
            "  {:<48} {:>10.1} {:>10.2} {:>10.1} s",
            s.step, s.during, s.ratio, s.longest_gap_s
        );
    }
}
