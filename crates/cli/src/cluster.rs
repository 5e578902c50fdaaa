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

/// `meridian server` flags.
#[derive(Args, Debug)]
pub struct ServerArgs {
    /// The cluster file.
    #[arg(long)]
    cluster: PathBuf,
    /// This node's id (as listed in the cluster file).
    #[arg(long)]
    node: u32,
    /// Keep the node's journal here (overrides the cluster file's data_dir).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9400).
    #[arg(long)]
    metrics: Option<std::net::SocketAddr>,
    /// Checkpoint the journal every N inputs, dropping the inputs before it, so that a
    /// restart replays at most N (0: never; protocols without a server image never do).
    /// Overrides the cluster file's `checkpoint_every` (default 100000).
    #[arg(long, value_name = "N")]
    checkpoint_every: Option<u64>,
    /// With --metrics: require `Authorization: Bearer TOKEN` of scrapes, TOKEN read from
    /// this file (mode 0600).
    #[arg(long, value_name = "FILE", requires = "metrics")]
    metrics_token_file: Option<PathBuf>,
    /// With --metrics: serve HTTPS with the node's certificate (scrape with the
    /// cluster's ca.pem and server name node-N.meridian).
    #[arg(long, requires = "metrics")]
    metrics_tls: bool,
    /// Serve without TLS although the cluster file does not say `insecure = true`
    /// (refused if it names certificates): anyone who reaches the port can act as any
    /// node. For benchmarks on a closed machine.
    #[arg(long)]
    insecure: bool,
    /// Rebuild this node from the other replicas instead of from its journal (one that
    /// is damaged, or lost): the data directory is moved aside to `DIR.resync-SECS`,
    /// never deleted, and the node starts with no state and re-syncs as after a
    /// reboot. For protocols whose replicas are designed to forget (hacommit,
    /// hacommit-rc, crossstitch), within their fault tolerance; refused for the others,
    /// whose nodes need their own log.
    #[arg(long)]
    resync: bool,
}

/// `meridian cluster certs` flags.
#[derive(Args, Debug)]
pub struct CertsArgs {
    /// The directory `cluster up` used (its cluster.toml).
    #[arg(long, default_value = "meridian-cluster")]
    dir: PathBuf,
    /// A cluster file instead of `--dir`.
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// Issue a certificate for this identity: `node-N`, `client`, `observer` or
    /// `admin` (repeatable); it replaces the one there.
    #[arg(long = "role", value_name = "ROLE")]
    roles: Vec<String>,
    /// Issue every node's and every role's certificate.
    #[arg(long)]
    all: bool,
    /// First make a new CA (every certificate it signed before stops being trusted
    /// once the servers restart); implies --all.
    #[arg(long)]
    new_ca: bool,
    /// Days the certificates are valid.
    #[arg(long, default_value_t = meridian_net::tls::DEFAULT_DAYS)]
    days: u32,
}

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

/// `meridian cluster compose` flags.
#[derive(Args, Debug)]
pub struct ComposeArgs {
    /// Protocol spec (see `meridian sim --help`).
    #[arg(long, value_parser = crate::names::PROTOCOLS, hide_possible_values = true)]
    protocol: String,
    /// Topology preset or TOML file (a file is copied into DIR).
    #[arg(long, default_value = "us3")]
    topology: String,
    /// Directory for cluster.toml, compose.yml, and (mounted at /cluster in every
    /// container) the journals and restart markers.
    #[arg(long, default_value = "meridian-compose")]
    dir: PathBuf,
    /// The image to run (built by scripts/docker-image.sh).
    #[arg(long, default_value = "meridian:latest")]
    image: String,
    /// The private network, an IPv4 /24 (node i gets address .(10+i), port 7400).
    #[arg(long, default_value = "10.213.7.0/24")]
    subnet: String,
    /// Deliver messages between DCs without the topology's delay.
    #[arg(long)]
    no_delay: bool,
    /// Keep no journals (by default every server journals its inputs under
    /// `DIR/data/n<ID>`, so a container that is restarted or re-created recovers).
    #[arg(long)]
    memory_only: bool,
    /// Home DC of every shard (default: shard s in DC s mod #DCs).
    #[arg(long)]
    data_dc: Option<String>,
    /// Publish node i's Prometheus metrics on the host at 127.0.0.1:(P+i) (every
    /// container serves them on port 9400 of its own address in any case).
    #[arg(long)]
    metrics_base_port: Option<u16>,
    /// Client slots the cluster reserves (client processes' nodes; slot i lives in DC
    /// i mod #DCs): how many clients may run at once over all processes, at most
    /// 1024.
    #[arg(long, default_value_t = 256)]
    client_slots: u32,
    /// No TLS, no authentication (see `cluster up --insecure`).
    #[arg(long)]
    insecure: bool,
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

/// Logs to stderr, filtered by `MERIDIAN_LOG` (default `info`); one JSON object per line
/// with `MERIDIAN_LOG_FORMAT=json`.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MERIDIAN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let _ = if std::env::var("MERIDIAN_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json")) {
        b.json().try_init()
    } else {
        b.try_init()
    };
}

/// A tokio runtime for the commands that need one.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The runtime a server process runs on: one thread. The event loop, every socket's
/// reader and writer and the timers share it, so a message costs no hand-over between
/// threads (with a multi-threaded runtime each message woke a socket worker and the
/// event loop's thread; issue 22 measured 56% of a busy node's samples in the kernel,
/// most of it futex and scheduler work). The node's work is serial anyway: one event
/// loop owns the actor.
pub fn server_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Loads a cluster file, with the path in the error.
pub fn load(path: &Path) -> Result<Arc<Cluster>> {
    Ok(Arc::new(Cluster::load(path)?))
}

/// `meridian server`.
pub fn server(a: &ServerArgs) -> Result<()> {
    init_logging();
    let cluster = load(&a.cluster)?;
    struct Serve(Arc<Cluster>, NodeId, ServerOptions);
    impl WithProtocol for Serve {
        type Out = Result<(), String>;
        fn with<P: Protocol>(self, p: P) -> Self::Out {
            let rt = server_runtime().map_err(|e| e.to_string())?;
            rt.block_on(host::serve(p, self.0, self.1, self.2))
        }
    }
    let opts = ServerOptions {
        data_dir: a.data_dir.clone(),
        metrics: a.metrics,
        checkpoint_every: a.checkpoint_every,
        insecure: a.insecure,
        metrics_token: a
            .metrics_token_file
            .as_deref()
            .map(meridian_net::metrics::Token::from_file)
            .transpose()
            .map_err(anyhow::Error::msg)?,
        metrics_tls: a.metrics_tls,
        resync: a.resync,
    };
    // Beside the cluster file: which process serves this node, so that `cluster down`
    // stops a server however it was started (by `up`, or by hand after a crash).
    let pid_file = run_dir(&a.cluster).join(format!("n{}.pid", a.node));
    let _ = std::fs::create_dir_all(run_dir(&a.cluster));
    if let Some(me) = ProcessId::of(std::process::id()) {
        let _ = std::fs::write(&pid_file, me.to_string());
    }
    struct RemoveOnExit(PathBuf);
    impl Drop for RemoveOnExit {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _pid_file = RemoveOnExit(pid_file);
    with_protocol(
        &cluster.file.protocol,
        &cluster.topology,
        cluster.home,
        Serve(cluster.clone(), NodeId(a.node), opts),
    )
    .map_err(|e| anyhow::anyhow!("cluster file {}: {e}", a.cluster.display()))?
    .map_err(anyhow::Error::msg)
}

/// `meridian cluster up|down`.
pub fn cluster(c: &ClusterCmd) -> Result<()> {
    match c {
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
            "{:>4} {:6} {:21} {:5} {:>5} {:>6} {:>6} {:>10} {:>10} {:>8}  role",
            "node", "dc", "addr", "state", "peers", "locked", "queued", "inputs", "sent", "uptime"
        );
        for n in &nodes {
            match &n.status {
                Some(s) => println!(
                    "{:>4} {:6} {:21} {:5} {:>5} {:>6} {:>6} {:>10} {:>10} {:>7}s  {}",
                    n.node,
                    n.dc,
                    n.addr,
                    "up",
                    s.peers_connected,
                    s.locked.map_or("-".to_string(), |l| l.to_string()),
                    s.queued,
                    s.counters.inputs,
                    s.counters.sent,
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

/// The first host number of the servers on a compose network, and the first one that
/// Docker may hand out to other containers (the tools container): servers take
/// .10 up to .127, Docker's dynamic addresses .128 up.
const COMPOSE_FIRST_HOST: u32 = 10;
const COMPOSE_DYNAMIC_FROM: u32 = 128;

/// Parses `a.b.c.0/24` into its first three octets.
fn parse_subnet24(s: &str) -> Result<[u8; 3]> {
    let bad = || anyhow::anyhow!("bad --subnet `{s}`: want an IPv4 /24 network such as 10.213.7.0/24");
    let (net, len) = s.split_once('/').ok_or_else(bad)?;
    let ip: std::net::Ipv4Addr = net.parse().map_err(|_| bad())?;
    let o = ip.octets();
    if len != "24" || o[3] != 0 {
        return Err(bad());
    }
    Ok([o[0], o[1], o[2]])
}

/// `meridian cluster compose`: a cluster file whose servers sit at fixed addresses of a
/// private Docker network, and a compose file that runs one container per server
/// (image from `scripts/docker-image.sh`) plus a `meridian` tools service for
/// `bench`, `cluster status` and `check` inside that network. The directory is mounted
/// at /cluster in every container, so journals, restart markers and histories stay on
/// the host across `docker-compose down` and `up`.
fn compose(a: &ComposeArgs) -> Result<()> {
    let net = parse_subnet24(&a.subnet)?;
    let topology = Topology::load(&a.topology)?;
    std::fs::create_dir_all(&a.dir).with_context(|| format!("cannot create {}", a.dir.display()))?;
    let dir = std::fs::canonicalize(&a.dir)?;
    let path = dir.join("cluster.toml");
    if path.exists() {
        bail!(
            "{} already exists: a compose cluster lives there (its journals too); remove the directory or pick another --dir",
            path.display()
        );
    }
    let topo_spec = if Topology::preset(&a.topology).is_some() {
        a.topology.clone()
    } else {
        std::fs::copy(&a.topology, dir.join("topology.toml"))
            .with_context(|| format!("cannot copy {} into {}", a.topology, dir.display()))?;
        "topology.toml".to_string()
    };
    let mut file: ClusterFile = Cluster::local(&a.protocol, &topology, &topo_spec, 7400);
    file.client_slots = a.client_slots;
    let servers = file.nodes.len() as u32;
    if COMPOSE_FIRST_HOST + servers > COMPOSE_DYNAMIC_FROM {
        bail!(
            "{} servers do not fit on one compose network (at most {})",
            servers,
            COMPOSE_DYNAMIC_FROM - COMPOSE_FIRST_HOST
        );
    }
    let ip = |i: u32| format!("{}.{}.{}.{}", net[0], net[1], net[2], COMPOSE_FIRST_HOST + i);
    for n in &mut file.nodes {
        n.addr = format!("{}:7400", ip(n.id));
    }
    file.delay = !a.no_delay;
    file.data_dc = a.data_dc.clone();
    if !a.memory_only {
        file.data_dir = Some(PathBuf::from("data"));
    }
    let cluster = Cluster::validate(file.clone(), &path)?;
    check_protocol(&cluster)?;
    secure(&mut file, &dir, a.insecure)?;
    // Files the containers write in the mounted directory belong to its owner.
    let user = {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(&dir)?;
        format!("{}:{}", m.uid(), m.gid())
    };
    // Each server container sees only what it needs: the cluster file, the journals and
    // restart markers, and (with TLS) the CA certificate and its own certificate and
    // key, not every key of the cluster (DIR/node-certs/n<ID>, mounted at certs/).
    for sub in ["run", "data"] {
        std::fs::create_dir_all(dir.join(sub)).with_context(|| format!("cannot create {}/{sub}", dir.display()))?;
    }
    if !a.insecure {
        for n in 0..servers {
            let to = dir.join("node-certs").join(format!("n{n}"));
            std::fs::create_dir_all(&to).with_context(|| format!("cannot create {}", to.display()))?;
            let role = meridian_net::tls::Role::Node(NodeId(n)).name();
            for f in ["ca.pem".to_string(), format!("{role}.pem"), format!("{role}.key")] {
                std::fs::copy(dir.join("certs").join(&f), to.join(&f))
                    .with_context(|| format!("cannot copy {f} into {}", to.display()))?;
            }
        }
    }
    let yml = compose_file(&cluster, a, &user, net, topo_spec == "topology.toml");
    std::fs::write(&path, toml::to_string(&file)?).with_context(|| format!("cannot write {}", path.display()))?;
    let ypath = dir.join("compose.yml");
    std::fs::write(&ypath, yml).with_context(|| format!("cannot write {}", ypath.display()))?;
    let f = ypath.display();
    println!(
        "cluster compose: {} on {} ({} servers at {}..{}, WAN delay {}{})\n\
         cluster file: {}\ncompose file: {f}\n{}\n\
         start:  docker-compose -f {f} up -d\n\
         wait:   docker-compose -f {f} run --rm meridian cluster status --cluster cluster.toml --wait 60s\n\
         bench:  docker-compose -f {f} run --rm meridian bench --cluster cluster.toml --workload ycsb --duration 10s --history h.jsonl\n\
         stop:   docker-compose -f {f} down",
        cluster.file.protocol,
        cluster.topology.name,
        servers,
        ip(0),
        ip(servers - 1),
        if file.delay { "on" } else { "off" },
        if a.memory_only { "" } else { ", journals in data/" },
        path.display(),
        security_line(&file, &dir),
    );
    Ok(())
}

/// Gives a new cluster file its security: the cluster's CA and every certificate in
/// `dir/certs` (mutual TLS), or `insecure = true`, said loudly.
fn secure(file: &mut ClusterFile, dir: &Path, insecure: bool) -> Result<()> {
    if insecure {
        file.insecure = true;
        file.tls_dir = None;
        eprintln!(
            "WARNING: --insecure: no TLS and no authentication; anyone who can reach a port can act as any \
             node, forge commit decisions, partition the cluster and read its data"
        );
        return Ok(());
    }
    let certs = dir.join("certs");
    let servers = file.nodes.len() as u32;
    meridian_net::tls::issue_cluster(
        &certs,
        file.epoch_ns,
        servers,
        meridian_net::tls::Validity::days(meridian_net::tls::DEFAULT_DAYS),
    )
    .with_context(|| format!("cannot create the cluster's certificates in {}", certs.display()))?;
    file.tls_dir = Some(PathBuf::from("certs"));
    Ok(())
}

/// Writes a new random bearer token (32 bytes from the kernel, hex) to `path`, mode 0600.
fn write_token(path: &Path) -> Result<()> {
    use std::io::{Read, Write};
    use std::os::unix::fs::OpenOptionsExt;
    let mut raw = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut raw))
        .context("cannot read /dev/urandom for the metrics token")?;
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    writeln!(f, "{hex}").with_context(|| format!("cannot write {}", path.display()))
}

/// One line saying how the cluster's connections are secured.
fn security_line(file: &ClusterFile, dir: &Path) -> String {
    if file.insecure {
        "security: INSECURE (plaintext, no authentication)".into()
    } else {
        format!(
            "security: mutual TLS; CA and certificates in {}/certs (the CA key ca.key issues more: meridian cluster certs)",
            dir.display()
        )
    }
}

/// `meridian cluster certs`.
fn certs(a: &CertsArgs) -> Result<()> {
    use meridian_net::tls;
    let path = cluster_file(&a.dir, &a.cluster);
    let mut c = load(&path)?;
    if c.file.insecure {
        bail!(
            "cluster file {} says `insecure = true`: its servers run without TLS. To give it \
             certificates, stop the cluster, remove that line and run `meridian cluster certs --cluster {} --new-ca`",
            path.display(),
            path.display()
        );
    }
    if c.tls_dir().is_none() {
        if !a.new_ca {
            bail!(
                "cluster file {} names no certificates (`tls_dir`): there is no CA to issue from; \
                 `--new-ca` makes one in certs/ beside the file and names it there",
                path.display()
            );
        }
        // A file of an earlier build (neither TLS nor `insecure`): it gains a CA.
        let mut f = c.file.clone();
        f.tls_dir = Some(PathBuf::from("certs"));
        std::fs::write(&path, toml::to_string(&f)?).with_context(|| format!("cannot write {}", path.display()))?;
        println!("{}: tls_dir = \"certs\"", path.display());
        c = load(&path)?;
    }
    let dir = c.tls_dir().expect("set above");
    let v = tls::Validity::days(a.days);
    let mut roles = vec![];
    for r in &a.roles {
        match tls::Role::parse(r) {
            Some(tls::Role::Node(n)) if n.0 >= c.num_servers() => {
                bail!("--role {r}: the cluster has server nodes 0..{}", c.num_servers() - 1)
            }
            Some(role) => roles.push(role),
            None => bail!("--role {r}: expected node-N, client, observer or admin"),
        }
    }
    if a.all || a.new_ca {
        roles = (0..c.num_servers())
            .map(|n| tls::Role::Node(NodeId(n)))
            .chain([tls::Role::Client, tls::Role::Observer, tls::Role::Admin])
            .collect();
    }
    if roles.is_empty() {
        bail!("nothing to issue: name a --role, or pass --all or --new-ca");
    }
    if a.new_ca {
        tls::issue_ca(&dir, c.id(), v).with_context(|| format!("cannot create a CA in {}", dir.display()))?;
        println!("new CA: {}", dir.join("ca.pem").display());
    }
    for r in roles {
        let f = tls::issue(&dir, c.id(), r, v).with_context(|| format!("cannot issue {r}'s certificate"))?;
        println!("{r}: {} (key {}, mode 0600)", f.cert.display(), f.key.display());
    }
    println!(
        "valid for {} days; a server reads its certificate when it starts",
        a.days
    );
    Ok(())
}

/// The text of `compose.yml` (Compose file format as docker-compose 1.27+ and
/// `docker compose` read it).
fn compose_file(c: &Cluster, a: &ComposeArgs, user: &str, net: [u8; 3], topology_file: bool) -> String {
    let ip = |i: u32| format!("{}.{}.{}.{}", net[0], net[1], net[2], COMPOSE_FIRST_HOST + i);
    let npd = c.topology.nodes_per_dc;
    let mut y = format!(
        "# Written by `meridian cluster compose --protocol {} --topology {}`.\n\
         # One container per server of cluster.toml. A server's container mounts, under\n\
         # /cluster, the cluster file, data/ (journals), run/ (restart markers) and, read-only\n\
         # as certs/, node-certs/n<ID> (the CA certificate and its own key only); the tools\n\
         # container `meridian` mounts this whole directory.\n\
         #   docker-compose -f compose.yml up -d\n\
         #   docker-compose -f compose.yml run --rm meridian cluster status --cluster cluster.toml --wait 60s\n\
         #   docker-compose -f compose.yml run --rm meridian bench --cluster cluster.toml --workload ycsb --duration 10s --history h.jsonl\n\
         #   docker-compose -f compose.yml run --rm meridian check h.jsonl\n\
         #   docker-compose -f compose.yml down\n\
         services:\n",
        c.file.protocol, a.topology
    );
    for i in 0..c.num_servers() {
        let dc = &c.topology.dcs[(i / npd) as usize];
        y += &format!(
            "  n{i}:\n\
             \x20   # DC {dc}\n\
             \x20   image: {image}\n\
             \x20   command: [\"server\", \"--cluster\", \"/cluster/cluster.toml\", \"--node\", \"{i}\", \"--metrics\", \"0.0.0.0:9400\"]\n\
             \x20   user: \"{user}\"\n\
             \x20   init: true\n\
             \x20   restart: unless-stopped\n\
             \x20   stop_grace_period: 5s\n\
             \x20   volumes: [{volumes}]\n\
             \x20   networks:\n\
             \x20     wan:\n\
             \x20       ipv4_address: {addr}\n",
            image = a.image,
            addr = ip(i),
            volumes = {
                let mut v = vec![
                    "\"./cluster.toml:/cluster/cluster.toml:ro\"".to_string(),
                    "\"./run:/cluster/run\"".into(),
                    "\"./data:/cluster/data\"".into(),
                ];
                if topology_file {
                    v.push("\"./topology.toml:/cluster/topology.toml:ro\"".into());
                }
                if !a.insecure {
                    v.push(format!("\"./node-certs/n{i}:/cluster/certs:ro\""));
                }
                v.join(", ")
            },
        );
        if let Some(p) = a.metrics_base_port {
            y += &format!("    ports: [\"127.0.0.1:{}:9400\"]\n", p as u32 + i);
        }
    }
    y += &format!(
        "  meridian:\n\
         \x20   # The CLI inside the network: docker-compose run --rm meridian ARGS\n\
         \x20   image: {image}\n\
         \x20   profiles: [\"tools\"]\n\
         \x20   user: \"{user}\"\n\
         \x20   init: true\n\
         \x20   working_dir: /cluster\n\
         \x20   volumes: [\"./:/cluster\"]\n\
         \x20   networks: [wan]\n\
         networks:\n\
         \x20 wan:\n\
         \x20   ipam:\n\
         \x20     config:\n\
         \x20       - subnet: {subnet}\n\
         \x20         ip_range: {a0}.{a1}.{a2}.{COMPOSE_DYNAMIC_FROM}/25\n",
        image = a.image,
        subnet = a.subnet,
        a0 = net[0],
        a1 = net[1],
        a2 = net[2],
    );
    y
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
