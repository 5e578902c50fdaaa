//! `meridian server` (one node of a cluster) and `meridian cluster up|down` (a local
//! cluster of one process per node on loopback ports).

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use meridian_core::{NodeId, Topology};
use meridian_net::cluster::{Cluster, ClusterFile};
use meridian_net::host::{self, ServerOptions};
use meridian_net::tls::{Role, Security};
use meridian_net::wire::Wire;
use meridian_protocols::Protocol;
use meridian_sim::{with_protocol, WithProtocol};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod certs;
mod compose;
mod nemesis;
mod server;

pub use certs::CertsArgs;
use certs::{certs, secure, security_line, write_token};
use compose::compose;
pub use compose::ComposeArgs;
pub use nemesis::NemesisArgs;
pub use server::{server, ServerArgs};

/// `meridian cluster` subcommands.
#[derive(Subcommand, Debug)]
pub enum ClusterCmd {
    /// Write a cluster file, start one server process per node on loopback, wait until
    /// every node is connected to every other.
    Up(UpArgs),
    /// Stop the processes `cluster up` started.
    Down {
        /// The directory `cluster up` used.
        #[arg(long, default_value = "meridian-cluster")]
        dir: PathBuf,
    },
    /// Ask every server how it is: up or down, DC, role, peers, locks, load, traffic.
    Status {
        /// The directory `cluster up` used (its cluster.toml).
        #[arg(long, default_value = "meridian-cluster")]
        dir: PathBuf,
        /// A cluster file instead of `--dir`.
        #[arg(long)]
        cluster: Option<PathBuf>,
        /// Print one JSON object (an array of nodes).
        #[arg(long)]
        json: bool,
        /// First wait (up to this long, with a unit: 60s) until every server answers and
        /// is connected to every other one; for a cluster that is still starting.
        #[arg(long)]
        wait: Option<String>,
    },
    /// Cut the links between DCs of a running cluster (every server drops messages
    /// across them, clients' included), for a while or until `cluster heal`.
    Partition(PartitionArgs),
    /// Heal every link `cluster partition` cut.
    Heal {
        /// The directory `cluster up` used (its cluster.toml).
        #[arg(long, default_value = "meridian-cluster")]
        dir: PathBuf,
        /// A cluster file instead of `--dir`.
        #[arg(long)]
        cluster: Option<PathBuf>,
    },
    /// Write a cluster file and a Docker Compose file that run the cluster in
    /// containers, one per server, on a private network (image: scripts/docker-image.sh).
    Compose(ComposeArgs),
    /// Run a bench against a compose cluster (`cluster compose`) while real faults hit
    /// its containers: network cuts (nftables), kill -9 and restart, pause, slow links
    /// (netem), on a schedule given or drawn from a seed; then check the history.
    /// Needs root and Docker.
    Nemesis(NemesisArgs),
    /// Issue certificates from the cluster's CA (in the cluster file's `tls_dir`): for
    /// a node or a client role, every one (`--all`), or a new CA (`--new-ca`).
    Certs(CertsArgs),
}
/// `meridian cluster partition` flags.
#[derive(Args, Debug)]
pub struct PartitionArgs {
    /// The directory `cluster up` used (its cluster.toml).
    #[arg(long, default_value = "meridian-cluster")]
    dir: PathBuf,
    /// A cluster file instead of `--dir`.
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// Cut this DC off from every other DC.
    #[arg(long, conflicts_with = "between")]
    isolate: Option<String>,
    /// Cut the link between two DCs: `A,B` (repeatable).
    #[arg(long)]
    between: Vec<String>,
    /// Heal by itself after this long (with a unit: 10s); default: until `cluster heal`.
    #[arg(long = "for")]
    for_: Option<String>,
    /// Print one JSON object: the links cut and the cut's start and end in cluster time.
    #[arg(long)]
    json: bool,
}
/// `meridian cluster up` flags.
#[derive(Args, Debug)]
pub struct UpArgs {
    /// Protocol spec (see `meridian sim --help`).
    #[arg(long, value_parser = crate::names::PROTOCOLS, hide_possible_values = true)]
    protocol: String,
    /// Topology preset or TOML file.
    #[arg(long, default_value = "rc5")]
    topology: String,
    /// Directory for the cluster file, the logs (`n<ID>.log`) and the journals.
    #[arg(long, default_value = "meridian-cluster")]
    dir: PathBuf,
    /// First port; node i listens on base_port + i.
    #[arg(long, default_value_t = 7400)]
    base_port: u16,
    /// Deliver messages between DCs without the topology's delay.
    #[arg(long)]
    no_delay: bool,
    /// Keep each server's input journal on disk (`DIR/data/n<ID>`), so a killed node
    /// that is restarted recovers.
    #[arg(long)]
    durable: bool,
    /// With --durable: checkpoint each journal every N inputs (written to the cluster
    /// file; default 100000, 0: never).
    #[arg(long, value_name = "N", requires = "durable")]
    checkpoint_every: Option<u64>,
    /// Version GC: a superseded version is dropped once its successor is this old, e.g.
    /// 5s (the default), or `off` (written to the cluster file as `version_ttl`).
    #[arg(long, value_name = "DURATION")]
    version_ttl: Option<String>,
    /// Home DC of every shard (default: shard s in DC s mod #DCs).
    #[arg(long)]
    data_dc: Option<String>,
    /// Client slots the cluster reserves (client processes' nodes; slot i lives in DC
    /// i mod #DCs): how many clients may run at once over all processes, at most
    /// 1024.
    #[arg(long, default_value_t = 256)]
    client_slots: u32,
    /// How long to wait for the cluster to come up (with a unit: 20s).
    #[arg(long, default_value = "30s")]
    timeout: String,
    /// Print what was started as one JSON object.
    #[arg(long)]
    json: bool,
    /// Serve each node's Prometheus metrics at http://127.0.0.1:(P+i)/metrics.
    #[arg(long)]
    metrics_base_port: Option<u16>,
    /// With --metrics-base-port: serve the metrics over HTTPS with each node's
    /// certificate, to a scrape with the bearer token `up` writes to
    /// DIR/certs/metrics.token (mode 0600).
    #[arg(long, requires = "metrics_base_port", conflicts_with = "insecure")]
    metrics_secure: bool,
    /// No TLS and no authentication: plaintext connections, and anyone who reaches a
    /// port can act as any node, forge decisions, partition the cluster and read its
    /// data. For benchmarks on a closed machine. By default `up` creates the cluster's
    /// CA and certificates in DIR/certs and every connection is mutual TLS.
    #[arg(long)]
    insecure: bool,
}
/// A tokio runtime for the commands that need one.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
/// Loads a cluster file, with the path in the error.
pub fn load(path: &Path) -> Result<Arc<Cluster>> {
    Ok(Arc::new(Cluster::load(path)?))
}
/// `meridian cluster ...`.
pub fn cluster(c: &ClusterCmd) -> Result<std::process::ExitCode> {
    match c {
        ClusterCmd::Nemesis(a) => nemesis::nemesis(a),
        other => cluster_cmd(other).map(|()| std::process::ExitCode::SUCCESS),
    }
}
fn cluster_cmd(c: &ClusterCmd) -> Result<()> {
    match c {
        // (`cluster` runs it, for its exit code)
        ClusterCmd::Nemesis(a) => nemesis::nemesis(a).map(|_| ()),
        ClusterCmd::Up(a) => up(a),
        ClusterCmd::Down { dir } => down(dir),
        ClusterCmd::Status {
            dir,
            cluster,
            json,
            wait,
        } => {
            let path = cluster_file(dir, cluster);
            let wait = wait
                .as_deref()
                .map(|w| meridian_core::time::parse_duration(w).map_err(anyhow::Error::msg))
                .transpose()?;
            if let Some(w) = wait {
                let c = load(&path)?;
                wait_ready(&c, Duration::from_nanos(w), &mut || None)?;
            }
            status(&path, *json)
        }
        ClusterCmd::Compose(a) => compose(a),
        ClusterCmd::Certs(a) => certs(a),
        ClusterCmd::Partition(a) => partition(a),
        ClusterCmd::Heal { dir, cluster } => {
            let path = cluster_file(dir, cluster);
            let c = load(&path)?;
            send_cut(&c, vec![], 0)?;
            println!("cluster heal: every link restored");
            Ok(())
        }
    }
}
/// One server's answer to `cluster status`.
#[derive(serde::Serialize)]
struct NodeStatus {
    node: u32,
    dc: String,
    addr: String,
    up: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<meridian_net::wire::Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}
/// `meridian cluster status`: every server's status, or why it did not answer. Exits
/// with an error if any server is down.
fn status(path: &Path, json: bool) -> Result<()> {
    let c = load(path)?;
    let sec = control_security(&c, Role::Observer)?;
    let npd = c.topology.nodes_per_dc;
    let rt = runtime()?;
    let nodes: Vec<NodeStatus> = rt.block_on(async {
        let mut out = vec![];
        for (i, a) in c.addrs.iter().enumerate() {
            let (status, error) =
                match host::ask::<()>(&c, &sec, NodeId(i as u32), Wire::StatusReq, Duration::from_secs(2)).await {
                    Ok(Wire::Status(s)) => (Some(s), None),
                    Ok(_) => (None, Some("unexpected answer".to_string())),
                    Err(e) => (None, Some(e.to_string())),
                };
            out.push(NodeStatus {
                node: i as u32,
                dc: c.topology.dcs[i / npd as usize].clone(),
                addr: a.to_string(),
                up: status.is_some(),
                status,
                error,
            });
        }
        out
    });
    let down = nodes.iter().filter(|n| !n.up).count();
    if json {
        println!("{}", serde_json::to_string(&nodes)?);
    } else {
        println!(
            "{:>4} {:6} {:21} {:5} {:>5} {:>6} {:>6} {:>10} {:>10} {:>9} {:>8}  role",
            "node", "dc", "addr", "state", "peers", "locked", "queued", "inputs", "sent", "versions", "uptime"
        );
        for n in &nodes {
            match &n.status {
                Some(s) => println!(
                    "{:>4} {:6} {:21} {:5} {:>5} {:>6} {:>6} {:>10} {:>10} {:>9} {:>7}s  {}",
                    n.node,
                    n.dc,
                    n.addr,
                    "up",
                    s.peers_connected,
                    s.locked.map_or("-".to_string(), |l| l.to_string()),
                    s.queued,
                    s.counters.inputs,
                    s.counters.sent,
                    s.versions.map_or("-".to_string(), |(live, _)| live.to_string()),
                    s.uptime_ms / 1000,
                    s.role.as_deref().unwrap_or("-")
                ),
                None => println!(
                    "{:>4} {:6} {:21} {:5}  {}",
                    n.node,
                    n.dc,
                    n.addr,
                    "DOWN",
                    n.error.as_deref().unwrap_or("")
                ),
            }
        }
    }
    if !json {
        match c.tls_dir() {
            Some(d) => println!("security: mutual TLS, certificates in {}", d.display()),
            None => println!(
                "security: INSECURE (plaintext, no authentication: anyone who reaches a port can act as any node)"
            ),
        }
    }
    if down > 0 {
        bail!("{down} of {} servers down", nodes.len());
    }
    Ok(())
}
/// The credentials a control command presents: `role`'s, else (where the certificate
/// directory holds no such files) the admin's, which may do everything.
pub fn control_security(c: &Cluster, role: Role) -> Result<Security> {
    match c.security(role) {
        Ok(s) => Ok(s),
        Err(e) if role != Role::Admin => c.security(Role::Admin).map_err(|_| anyhow::anyhow!("{e}")),
        Err(e) => bail!("{e}"),
    }
}
fn up(a: &UpArgs) -> Result<()> {
    let timeout = meridian_core::time::parse_duration(&a.timeout).map_err(anyhow::Error::msg)?;
    let topology = Topology::load(&a.topology)?;
    let topo_spec = if Topology::preset(&a.topology).is_some() {
        a.topology.clone()
    } else {
        std::fs::canonicalize(&a.topology)?.display().to_string()
    };
    std::fs::create_dir_all(&a.dir).with_context(|| format!("cannot create {}", a.dir.display()))?;
    let dir = std::fs::canonicalize(&a.dir)?;
    if dir.join("pids").exists() {
        bail!(
            "{} already holds a running cluster (pids file present); run `meridian cluster down --dir {}` first",
            dir.display(),
            a.dir.display()
        );
    }
    let mut file: ClusterFile = Cluster::local(&a.protocol, &topology, &topo_spec, a.base_port);
    file.delay = !a.no_delay;
    file.client_slots = a.client_slots;
    file.data_dc = a.data_dc.clone();
    if a.durable {
        file.data_dir = Some(PathBuf::from("data"));
    }
    file.checkpoint_every = a.checkpoint_every;
    file.version_ttl = a.version_ttl.clone();
    let path = dir.join("cluster.toml");
    // Validate everything (protocol included) before starting a process.
    let cluster = Cluster::validate(file.clone(), &path)?;
    check_protocol(&cluster)?;
    secure(&mut file, &dir, a.insecure)?;
    std::fs::write(&path, toml::to_string(&file)?).with_context(|| format!("cannot write {}", path.display()))?;
    let cluster = Cluster::validate(file.clone(), &path)?;
    let token_file = dir.join("certs").join("metrics.token");
    if a.metrics_secure {
        write_token(&token_file)?;
    }
    let exe = std::env::current_exe().context("cannot find the meridian binary")?;
    let mut pids = vec![];
    let mut children = vec![];
    for n in 0..cluster.num_servers() {
        let log = std::fs::File::create(dir.join(format!("n{n}.log")))?;
        let child = std::process::Command::new(&exe)
            .args(["server", "--cluster"])
            .arg(&path)
            .args(["--node", &n.to_string()])
            .args(
                a.metrics_base_port
                    .map(|p| vec!["--metrics".to_string(), format!("127.0.0.1:{}", p as u32 + n)])
                    .unwrap_or_default(),
            )
            .args(if a.metrics_secure {
                vec![
                    "--metrics-tls".into(),
                    "--metrics-token-file".into(),
                    token_file.display().to_string(),
                ]
            } else {
                vec![]
            })
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot start node {n}"))?;
        pids.push(child.id());
        children.push(child);
    }
    std::fs::write(
        dir.join("pids"),
        pids.iter().map(|p| format!("{p}\n")).collect::<String>(),
    )?;
    // A node that exits while starting (its port taken, say) ends the wait at once,
    // with the end of its log.
    let mut exited = || {
        for (n, c) in children.iter_mut().enumerate() {
            if let Ok(Some(st)) = c.try_wait() {
                let log = std::fs::read_to_string(dir.join(format!("n{n}.log"))).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(3).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                return Some(format!("node {n} exited ({st}): {}", tail.join(" | ")));
            }
        }
        None
    };
    match wait_ready(&cluster, Duration::from_nanos(timeout), &mut exited) {
        Ok(()) if a.json => {
            let v = serde_json::json!({
                "protocol": cluster.file.protocol,
                "topology": cluster.topology.name,
                "nodes": cluster.addrs.iter().zip(&pids).enumerate().map(|(i, (addr, pid))| serde_json::json!({
                    "node": i, "addr": addr.to_string(), "pid": pid,
                    "dc": cluster.topology.dcs[i / cluster.topology.nodes_per_dc as usize],
                })).collect::<Vec<_>>(),
                "delay": file.delay,
                "durable": a.durable,
                "tls": !a.insecure,
                "cluster_file": path.display().to_string(),
                "dir": dir.display().to_string(),
                "stop": format!("meridian cluster down --dir {}", a.dir.display()),
            });
            println!("{v}");
            Ok(())
        }
        Ok(()) => {
            println!(
                "cluster up: {} on {} ({} nodes, ports {}..{}, WAN delay {}{})\ncluster file: {}\nlogs: {}/n<ID>.log\n{}\nstop: meridian cluster down --dir {}",
                cluster.file.protocol,
                cluster.topology.name,
                cluster.num_servers(),
                a.base_port,
                a.base_port as u32 + cluster.num_servers() - 1,
                if file.delay { "on" } else { "off" },
                if a.durable { ", journals in data/" } else { "" },
                path.display(),
                dir.display(),
                security_line(&file, &dir),
                a.dir.display()
            );
            Ok(())
        }
        Err(e) => {
            let _ = stop(&dir);
            Err(e.context(format!(
                "the cluster did not come up; see the logs in {}",
                dir.display()
            )))
        }
    }
}
/// The cluster file a command names: `--cluster`, else `DIR/cluster.toml`.
fn cluster_file(dir: &Path, cluster: &Option<PathBuf>) -> PathBuf {
    cluster.clone().unwrap_or_else(|| dir.join("cluster.toml"))
}
/// Tells every server to cut `pairs` until `until` (an empty list heals). Fails,
/// naming them, if any server did not take it.
fn send_cut(c: &Cluster, pairs: Vec<(u32, u32)>, until: u64) -> Result<()> {
    let sec = control_security(c, Role::Admin)?;
    let rt = runtime()?;
    let failed: Vec<String> = rt.block_on(async {
        let mut failed = vec![];
        for i in 0..c.addrs.len() {
            let req = Wire::<()>::Cut {
                pairs: pairs.clone(),
                until,
            };
            match host::ask::<()>(c, &sec, NodeId(i as u32), req, Duration::from_secs(2)).await {
                Ok(Wire::Status(_)) => {}
                Ok(_) => failed.push(format!("node {i}: unexpected answer")),
                Err(e) => failed.push(format!("node {i}: {e}")),
            }
        }
        failed
    });
    if !failed.is_empty() {
        bail!(
            "{} of {} servers did not take it (a server that is down keeps its links as they were when it comes back): {}",
            failed.len(),
            c.addrs.len(),
            failed.join("; ")
        );
    }
    Ok(())
}
/// `meridian cluster partition`.
fn partition(a: &PartitionArgs) -> Result<()> {
    let path = cluster_file(&a.dir, &a.cluster);
    let c = load(&path)?;
    let dcs = &c.topology.dcs;
    let dc = |name: &str| -> Result<u32> {
        dcs.iter()
            .position(|d| d == name.trim())
            .map(|i| i as u32)
            .ok_or_else(|| anyhow::anyhow!("unknown DC `{}` (the cluster's DCs: {})", name.trim(), dcs.join(", ")))
    };
    let mut pairs = vec![];
    if let Some(x) = &a.isolate {
        let x = dc(x)?;
        pairs.extend((0..dcs.len() as u32).filter(|y| *y != x).map(|y| (x, y)));
    }
    for b in &a.between {
        let (p, q) = b.split_once(',').ok_or_else(|| {
            anyhow::anyhow!(
                "bad --between `{b}`: want two DCs, e.g. --between {},{}",
                dcs[0],
                dcs[dcs.len().min(2) - 1]
            )
        })?;
        let (p, q) = (dc(p)?, dc(q)?);
        if p == q {
            bail!("bad --between `{b}`: a DC cannot be cut from itself");
        }
        pairs.push((p, q));
    }
    if pairs.is_empty() {
        bail!(
            "say which links to cut: --isolate DC or --between A,B (the cluster's DCs: {})",
            dcs.join(", ")
        );
    }
    let dur = a
        .for_
        .as_deref()
        .map(|d| meridian_core::time::parse_duration(d).map_err(anyhow::Error::msg))
        .transpose()?;
    let start = host::Clock::new(c.file.epoch_ns).now();
    let until = dur.map_or(u64::MAX, |d| start + d);
    send_cut(&c, pairs.clone(), until)?;
    let names: Vec<String> = pairs
        .iter()
        .map(|(p, q)| format!("{}-{}", dcs[*p as usize], dcs[*q as usize]))
        .collect();
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "cut": names,
                "start_ns": start,
                "until_ns": (until != u64::MAX).then_some(until),
            })
        );
    } else {
        println!(
            "cluster partition: cut {} {}",
            names.join(", "),
            match dur {
                Some(d) => format!("for {:.1} s (heals by itself)", d as f64 / 1e9),
                None => "until `meridian cluster heal`".to_string(),
            }
        );
    }
    Ok(())
}
/// Fails if the cluster file's protocol spec does not parse.
pub fn check_protocol(c: &Cluster) -> Result<()> {
    struct Nop;
    impl WithProtocol for Nop {
        type Out = ();
        fn with<P: Protocol>(self, _: P) {}
    }
    with_protocol(&c.file.protocol, &c.topology, c.home, Nop).map_err(|e| anyhow::anyhow!("{e}"))
}
/// Waits until every server answers and is connected to every other server.
pub fn wait_ready(c: &Cluster, timeout: Duration, exited: &mut dyn FnMut() -> Option<String>) -> Result<()> {
    let sec = control_security(c, Role::Observer)?;
    let rt = runtime()?;
    let start = Instant::now();
    let n = c.num_servers();
    rt.block_on(async {
        loop {
            let mut ready = 0;
            let mut last = String::new();
            for i in 0..c.addrs.len() {
                match host::ask::<()>(c, &sec, NodeId(i as u32), Wire::StatusReq, Duration::from_secs(2)).await {
                    Ok(Wire::Status(s)) if s.peers_connected + 1 >= n => ready += 1,
                    Ok(Wire::Status(s)) => {
                        last = format!("node {i}: {} of {} peers connected", s.peers_connected, n - 1)
                    }
                    Ok(_) => last = format!("node {i}: unexpected answer"),
                    Err(e) => last = format!("node {i}: {e}"),
                }
            }
            if ready == n {
                return Ok(());
            }
            if let Some(why) = exited() {
                bail!("{why}");
            }
            if start.elapsed() > timeout {
                bail!("{ready} of {n} nodes ready after {:?} ({last})", timeout);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}
fn down(dir: &Path) -> Result<()> {
    let n = stop(dir)?;
    println!("cluster down: stopped {n} processes");
    Ok(())
}
/// The directory beside a cluster file where each running server leaves its
/// process id (`n<ID>.pid`).
fn run_dir(cluster_file: &Path) -> PathBuf {
    cluster_file.parent().unwrap_or(Path::new(".")).join("run")
}
/// A process on this machine: its pid and its start time (in clock ticks since boot,
/// from /proc), so that a pid reused by another process is not mistaken for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ProcessId {
    pid: u32,
    start: u64,
}
impl ProcessId {
    /// The running process `pid`, if there is one (a zombie, dead but not yet
    /// reaped, is not running).
    fn of(pid: u32) -> Option<ProcessId> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) is in parentheses and may hold spaces.
        let after = &stat[stat.rfind(')')? + 1..];
        let mut fields = after.split_whitespace();
        if fields.next()? == "Z" {
            return None;
        }
        let start = fields.nth(18)?.parse().ok()?;
        Some(ProcessId { pid, start })
    }
    fn parse(s: &str) -> Option<ProcessId> {
        let (p, t) = s.trim().split_once(' ')?;
        Some(ProcessId {
            pid: p.parse().ok()?,
            start: t.parse().ok()?,
        })
    }
    /// Whether this very process still runs.
    fn alive(&self) -> bool {
        ProcessId::of(self.pid) == Some(*self)
    }
}
impl std::fmt::Display for ProcessId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.pid, self.start)
    }
}
/// Stops the processes of `dir/pids` that are still running, and every server that
/// left its process id in `dir/run` (one restarted by hand included): SIGTERM, SIGKILL
/// after 5 s. Removes the pids file; returns how many were running.
fn stop(dir: &Path) -> Result<usize> {
    let pidfile = dir.join("pids");
    let listed = std::fs::read_to_string(&pidfile).ok();
    let mut by_hand = vec![];
    if let Ok(entries) = std::fs::read_dir(run_dir(&dir.join("cluster.toml"))) {
        for e in entries.flatten() {
            if let Some(p) = std::fs::read_to_string(e.path())
                .ok()
                .as_deref()
                .and_then(ProcessId::parse)
            {
                if p.alive() {
                    by_hand.push(p.pid.to_string());
                }
            }
        }
    }
    if listed.is_none() && by_hand.is_empty() {
        bail!("no cluster to stop in {} (no pids file)", dir.display());
    }
    let text = listed.clone().unwrap_or_default();
    let alive = |p: &&str| p.parse().ok().and_then(ProcessId::of).is_some();
    let mut pids: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter(alive)
        .collect();
    for p in &by_hand {
        if !pids.contains(&p.as_str()) {
            pids.push(p);
        }
    }
    let kill = |args: &[&str]| {
        let _ = std::process::Command::new("kill")
            .args(args)
            .stderr(std::process::Stdio::null())
            .status();
    };
    for p in &pids {
        kill(&[p]);
    }
    // wait for them to go (kill -9 after 5 s)
    let start = Instant::now();
    while pids.iter().any(alive) {
        if start.elapsed() > Duration::from_secs(5) {
            for p in &pids {
                kill(&["-9", p]);
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if listed.is_some() {
        std::fs::remove_file(&pidfile)?;
    }
    Ok(pids.len())
}
