//! `meridian server`: one node of a cluster, its flags and its runtime.

use super::*;

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
    /// is damaged, or lost): the data directory is moved aside to `DIR.resync-NANOS`,
    /// never deleted, and the node starts with no state and re-syncs as after a
    /// reboot. For protocols whose replicas are designed to forget (hacommit,
    /// hacommit-rc, crossstitch), within their fault tolerance (the other replicas of
    /// the node's shards up); refused for the others, whose nodes need their own log,
    /// and for a node with no sign of having run (no data directory, no started marker).
    #[arg(long)]
    resync: bool,
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
