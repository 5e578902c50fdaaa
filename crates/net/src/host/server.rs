//! A server process: binding, the journal's replay or the protocol's recovery, and the
//! event loop until SIGTERM or SIGINT.

use super::conn::{accept_conn, dial_servers, Acceptor};
use super::*;
use crate::tls::Security;

/// Options of a server process.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// Write the journal here and replay it at start (overrides the cluster file's
    /// `data_dir`).
    pub data_dir: Option<std::path::PathBuf>,
    /// Serve Prometheus metrics over HTTP here (`GET /metrics`).
    pub metrics: Option<std::net::SocketAddr>,
    /// Checkpoint the journal every this many inputs (`None`: the cluster file's
    /// `checkpoint_every`, else [`CHECKPOINT_EVERY`]; 0: never).
    pub checkpoint_every: Option<u64>,
    /// Require `Authorization: Bearer TOKEN` of metrics scrapes.
    pub metrics_token: Option<crate::metrics::Token>,
    /// Serve metrics over HTTPS with the node's certificate (needs TLS).
    pub metrics_tls: bool,
    /// Run without TLS even though the cluster file does not say `insecure = true`
    /// (`meridian server --insecure`); refused if the file names certificates.
    pub insecure: bool,
    /// Rebuild the node from its peers: move its data directory aside and start with
    /// no state (`meridian server --resync`; forgetful protocols only).
    pub resync: bool,
}

/// `--resync`: checks that protocol `p` can rebuild a node from its peers and that the
/// node ran in this cluster before, and moves the node's data directory (if any) aside
/// to `DIR.resync-NANOS`, so that the node starts with no state and its protocol's
/// recovery re-syncs it from the other replicas (the path of a restart after a
/// reboot). Nothing is deleted: the operator may still want what the damaged journal
/// holds. A node with no sign of having run (no data directory, no started marker: a
/// replaced disk that took `run/` too, say) is refused rather than started as new,
/// which would serve as a replica that never voted.
fn resync<P: Protocol>(p: &P, cluster: &Cluster, node: NodeId, dir: Option<&std::path::Path>) -> Result<(), String> {
    if !matches!(p.fault_model(), meridian_protocols::FaultModel::Forgetful { .. }) {
        return Err(format!(
            "node {}: --resync: {} cannot rebuild a node from its peers: its nodes need their own log (a node \
             started empty would serve as one that never voted or committed). Restore the node's data \
             directory from a backup, or start a new cluster",
            node.0,
            p.name()
        ));
    }
    // `d/` and `d` are one directory (the suffix must not go inside it).
    let dir: Option<std::path::PathBuf> = dir.map(|d| d.components().collect());
    let Some(dir) = dir.filter(|d| d.exists()) else {
        if !cluster.started_before(node) {
            return Err(format!(
                "node {}: --resync: this node shows no sign of having run in this cluster (no data directory, no \
                 {}): if it is new, start it without --resync",
                node.0,
                cluster.started_marker(node).display()
            ));
        }
        info!(
            node = node.0,
            "--resync: no data directory to move aside; recovering from the other replicas"
        );
        return Ok(());
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut aside = dir.as_os_str().to_owned();
    aside.push(format!(".resync-{nanos}"));
    let aside = std::path::PathBuf::from(aside);
    std::fs::rename(&dir, &aside).map_err(|e| {
        format!(
            "node {}: --resync: cannot move {} aside to {}: {e}",
            node.0,
            dir.display(),
            aside.display()
        )
    })?;
    warn!(
        node = node.0,
        from = %dir.display(),
        to = %aside.display(),
        "--resync: moved the journal aside; starting with no state and recovering from the other replicas"
    );
    Ok(())
}

/// How server `node` secures its connections (and says so when it does not).
pub fn server_security(cluster: &Cluster, node: NodeId, insecure: bool) -> Result<Security, String> {
    let sec = match (insecure, cluster.tls_dir()) {
        (true, Some(d)) => {
            return Err(format!(
                "--insecure, but the cluster file names certificates ({}): its other nodes speak TLS only; \
                 drop --insecure (or `tls_dir` from the cluster file, on every node)",
                d.display()
            ))
        }
        (true, None) => Security::Insecure,
        (false, _) => cluster
            .security(crate::tls::Role::Node(node))
            .map_err(|e| format!("node {}: {e}", node.0))?,
    };
    if sec.is_insecure() {
        warn!(
            node = node.0,
            "INSECURE: no TLS and no authentication; anyone who can reach this port can act as any node, \
             forge decisions, partition the cluster and read its data (for benchmarks on a closed machine only)"
        );
    }
    Ok(sec)
}

/// How a server with no state to replay begins.
#[derive(Debug, PartialEq, Eq)]
enum Begin {
    /// It never ran in this cluster: a fresh start.
    Start,
    /// It ran before and forgot everything: its protocol's recovery re-syncs it.
    Recover,
}

/// A server with nothing to replay (no journal, or an empty one) either starts for the
/// first time in this cluster, or restarts having forgotten everything. A protocol whose
/// replicas are designed to forget (HACommit, CrossStitch) then recovers, re-syncing
/// from its partners; one that needs its log across a restart (2PC, RC, replog) is
/// refused: starting it as new would serve as if it had never voted or committed.
fn begin_without_state<P: Protocol>(p: &P, cluster: &Cluster, node: NodeId, resynced: bool) -> Result<Begin, String> {
    // `--resync` checked that the node ran before (its data directory, if not its marker).
    if !resynced && !cluster.started_before(node) {
        return Ok(Begin::Start);
    }
    match p.fault_model() {
        meridian_protocols::FaultModel::Forgetful { .. } => {
            info!(
                node = node.0,
                "restarted with no state: recovering from the other replicas"
            );
            Ok(Begin::Recover)
        }
        meridian_protocols::FaultModel::Durable => Err(format!(
            "node {} already ran in this cluster ({}) and has no journal to recover from: {} needs its \
             log across a restart, and starting it empty would lose what it voted and committed. Run the \
             cluster with journals (`meridian cluster up --durable`, or `data_dir` in the cluster file), \
             or start a new cluster",
            node.0,
            cluster.started_marker(node).display(),
            p.name()
        )),
    }
}

/// Runs server `node` of `cluster` until the process is stopped. Binds its address
/// first, then replays its journal (if it keeps one), then starts its actor.
pub async fn serve<P: Protocol>(p: P, cluster: Arc<Cluster>, node: NodeId, opts: ServerOptions) -> Result<(), String> {
    if node.0 >= cluster.num_servers() {
        return Err(format!(
            "node {} does not exist: the cluster has server nodes 0..{}",
            node.0,
            cluster.num_servers() - 1
        ));
    }
    let env = env_for(&p, &cluster)?;
    let sec = server_security(&cluster, node, opts.insecure)?;
    let addr = cluster.addrs[node.0 as usize];
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("node {}: cannot listen on {addr}: {e}", node.0))?;
    let routes = Routes::default();
    let stats = Arc::new(Stats::default());
    let (inbox_tx, inbox_rx) = mpsc::channel(INBOX);
    let hosted = Arc::new(vec![node]);
    let mut core: Core<P> = Core::new(p.clone(), cluster.clone(), &env, stats.clone(), routes.clone());
    core.locals.insert(
        node,
        Local {
            role: Role::Server(p.server(&env, node)),
            rng: rng_for(cluster.file.seed, node.0 as u64),
            timers: HashMap::default(),
        },
    );
    let dir = opts.data_dir.or_else(|| cluster.data_dir(node));
    if opts.resync {
        resync(&p, &cluster, node, dir.as_deref())?;
    }
    let now = core.clock.now();
    match dir {
        Some(dir) => {
            let header = crate::journal::Header::new(&cluster.file.protocol, node, cluster.id());
            // A journal that cannot be read: where the protocol keeps other copies, the
            // error says how to rebuild the node from them.
            let hint = match p.fault_model() {
                meridian_protocols::FaultModel::Forgetful { .. } => format!(
                    ". {} keeps other copies: while the other replicas of this node's shards are up, `meridian \
                     server --cluster {} --node {} --resync` moves the directory aside and rebuilds the node \
                     from them",
                    p.name(),
                    cluster.path.display(),
                    node.0
                ),
                meridian_protocols::FaultModel::Durable => String::new(),
            };
            let journal = Journal::open(&dir, &header).map_err(|e| match e {
                crate::journal::JournalError::Mismatch(why) => {
                    format!("node {}: refusing the journal in {}: {why}", node.0, dir.display())
                }
                crate::journal::JournalError::Damaged(why) => format!("node {}: {why}{hint}", node.0),
                // An I/O error (permissions, a full disk) is no reason to throw a journal away.
                e @ crate::journal::JournalError::Store(fjall::Error::Io(_)) => {
                    format!("journal in {}: {e}", dir.display())
                }
                e => format!("journal in {}: {e}{hint}", dir.display()),
            })?;
            let restored = core
                .restore(&env, node, &journal)
                .map_err(|e| format!("node {}: journal in {}: {e}{hint}", node.0, dir.display()))?;
            core.replaying = true;
            journal
                .replay(|e: Entry<P::Msg>| {
                    core.replayed += 1;
                    core.replay(node, e);
                })
                .map_err(|e| format!("journal in {}: {e}{hint}", dir.display()))?;
            core.replaying = false;
            core.journal = Some(journal);
            core.forces_every_step = p.forces_every_step();
            core.checkpoint_every = opts
                .checkpoint_every
                .or(cluster.file.checkpoint_every)
                .unwrap_or(CHECKPOINT_EVERY);
            let forgetful = matches!(p.fault_model(), meridian_protocols::FaultModel::Forgetful { .. });
            // State to resume from: a checkpoint, inputs, or both.
            let has_state = restored || core.replayed > 0;
            if has_state && forgetful && !cluster.same_boot_as_last_start(node) {
                info!(
                    node = node.0,
                    inputs = core.replayed,
                    "replayed the journal, but the machine rebooted since this node started (its unsynced \
                     tail may be lost): forgetting, and recovering from the other replicas"
                );
            }
            if has_state && forgetful && cluster.same_boot_as_last_start(node) {
                // A protocol whose replicas are designed to forget (HACommit,
                // CrossStitch) recovers a forgotten replica from the others. Had this
                // node done so here, a restart of every replica at once (a killed
                // cluster, `docker-compose down` and `up`) would leave no one to
                // recover from, and the cluster would stay re-syncing for ever. With a
                // journal it need not forget: every message it sent left after the
                // inputs that caused it were handed to the OS, which kept them, since
                // the machine has not rebooted since the node last started. So the
                // replayed state covers everything it told anyone, and it resumes
                // where it stopped, as after a pause in which every message to it was
                // lost (a partition, which the protocol tolerates), with the timers its
                // inputs left armed firing now if their time has passed. After a
                // reboot the journal's unsynced tail may be gone, so it forgets and
                // re-syncs as the paper says (the branch below).
                info!(
                    node = node.0,
                    inputs = core.replayed,
                    "replayed the journal; resuming where it stopped"
                );
                let timers: Vec<((NodeId, TimerId), Time)> =
                    std::mem::take(&mut core.replay_timers).into_iter().collect();
                for ((n, id), at) in timers {
                    core.seq += 1;
                    let gen = core.seq;
                    if let Some(l) = core.locals.get_mut(&n) {
                        l.timers.insert(id, gen);
                    }
                    core.schedule(at.max(now), Due::Timer { node: n, id, gen });
                }
            } else if has_state {
                info!(
                    node = node.0,
                    inputs = core.replayed,
                    "replayed the journal; recovering"
                );
                core.replay_timers.clear();
                core.journal_input(node, Entry::Restart { now });
                core.call(node, 0, now, |r, _| {
                    if let Role::Server(s) = r {
                        s.on_crash()
                    }
                });
                if let Some(l) = core.locals.get_mut(&node) {
                    l.timers.clear();
                }
                core.call(node, 0, now, |r, cx| {
                    if let Role::Server(s) = r {
                        s.on_recover(cx)
                    }
                });
            } else if begin_without_state(&p, &cluster, node, opts.resync)? == Begin::Recover {
                core.journal_input(node, Entry::Restart { now });
                core.call(node, 0, now, |r, cx| {
                    if let Role::Server(s) = r {
                        s.on_recover(cx)
                    }
                });
            } else {
                core.journal_input(node, Entry::Start { now });
                core.call(node, 0, now, |r, cx| {
                    if let Role::Server(s) = r {
                        s.on_start(cx)
                    }
                });
            }
            core.need_sync = true;
        }
        None => {
            if begin_without_state(&p, &cluster, node, opts.resync)? == Begin::Recover {
                core.call(node, 0, now, |r, cx| {
                    if let Role::Server(s) = r {
                        s.on_recover(cx)
                    }
                })
            } else {
                core.call(node, 0, now, |r, cx| {
                    if let Role::Server(s) = r {
                        s.on_start(cx)
                    }
                })
            }
        }
    }
    cluster.mark_started(node).map_err(|e| {
        format!(
            "node {}: cannot write {}: {e}",
            node.0,
            cluster.started_marker(node).display()
        )
    })?;
    dial_servers::<P::Msg>(&cluster, Some(node), &routes, &hosted, &inbox_tx, &stats, &sec);
    let acceptor = Acceptor {
        cluster_id: cluster.id(),
        layout: env.layout.clone(),
        hosted: hosted.clone(),
        routes: routes.clone(),
        inbox: inbox_tx.clone(),
        servers_in: Default::default(),
        sec: sec.clone(),
        client_rule: {
            let p = p.clone();
            Arc::new(move |m: &P::Msg| p.client_may_send(m))
        },
    };
    tokio::spawn(async move {
        let mut conn = 0u64;
        loop {
            match listener.accept().await {
                Ok((s, a)) => {
                    conn += 1;
                    super::conn::fail_fast(&s);
                    tokio::spawn(accept_conn::<P::Msg>(s, a, conn, acceptor.clone()));
                }
                Err(e) => {
                    warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    if let Some(maddr) = opts.metrics {
        let ml = TcpListener::bind(maddr)
            .await
            .map_err(|e| format!("node {}: cannot serve metrics on {maddr}: {e}", node.0))?;
        let tls = match (opts.metrics_tls, sec.metrics_acceptor()) {
            (false, _) => None,
            (true, Some(a)) => Some(a),
            (true, None) => {
                return Err(format!(
                    "node {}: --metrics-tls needs the cluster's certificates (this cluster runs insecure)",
                    node.0
                ))
            }
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        if tls.is_none() && opts.metrics_token.is_some() {
            warn!(
                node = node.0,
                "the metrics bearer token travels in clear without --metrics-tls: anyone on the path can read it"
            );
        }
        info!(
            node = node.0,
            addr = %maddr,
            bearer_token = opts.metrics_token.is_some(),
            "metrics on {scheme}://{maddr}/metrics"
        );
        let auth = crate::metrics::MetricsAuth {
            token: opts.metrics_token.clone(),
            tls,
        };
        tokio::spawn(crate::metrics::serve::<P::Msg>(ml, inbox_tx.clone(), node, auth));
    }
    info!(node = node.0, %addr, protocol = %cluster.file.protocol, "serving");
    drop(inbox_tx);
    core.end_batch();
    let journalled = core.journal.is_some();
    if let Some(why) = core.run(inbox_rx, None, Some(Box::pin(stop_signal()))).await {
        info!(
            node = node.0,
            journal = if journalled { "forced to disk" } else { "none" },
            "{why}: stopped"
        );
    }
    Ok(())
}

/// Resolves when the process is asked to stop (SIGTERM or SIGINT), naming which.
async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        },
        // No signal handling to be had: never asked to stop this way.
        _ => std::future::pending().await,
    }
}

impl<P: Protocol> Core<P> {
    /// Rebuilds server `node` from the journal's checkpoint, if it has one: the
    /// protocol's image, the random generator, and the armed timers (re-armed as
    /// replayed ones are). Returns whether there was one.
    fn restore(&mut self, env: &Env, node: NodeId, journal: &Journal) -> Result<bool, String> {
        let Some(bytes) = journal.image().map_err(|e| e.to_string())? else {
            return Ok(false);
        };
        let ck: Checkpoint =
            postcard::from_bytes(&bytes).map_err(|e| format!("unreadable checkpoint ({} bytes): {e}", bytes.len()))?;
        let server = self.proto.restore(env, node, &ck.server)?;
        let local = self.locals.get_mut(&node).expect("the server node is hosted here");
        local.role = Role::Server(server);
        local.rng = ck.rng;
        self.replay_timers = ck
            .timers
            .into_iter()
            .map(|(id, at)| ((node, TimerId(id)), at))
            .collect();
        info!(node = node.0, bytes = bytes.len(), "restored the checkpoint");
        Ok(true)
    }

    /// Re-applies one journalled input (effects discarded).
    fn replay(&mut self, node: NodeId, e: Entry<P::Msg>) {
        match e {
            Entry::Start { now } => self.call(node, 0, now, |r, cx| {
                if let Role::Server(s) = r {
                    s.on_start(cx)
                }
            }),
            Entry::Msg { from, hops, now, msg } => self.call(node, hops, now, move |r, cx| {
                if let Role::Server(s) = r {
                    s.on_message(from, msg, cx)
                }
            }),
            Entry::Timer { id, now } => {
                self.replay_timers.remove(&(node, TimerId(id)));
                self.call(node, 0, now, move |r, cx| {
                    if let Role::Server(s) = r {
                        s.on_timer(TimerId(id), cx)
                    }
                })
            }
            Entry::Restart { now } => {
                self.replay_timers.retain(|(n, _), _| *n != node);
                self.call(node, 0, now, |r, _| {
                    if let Role::Server(s) = r {
                        s.on_crash()
                    }
                });
                self.call(node, 0, now, |r, cx| {
                    if let Role::Server(s) = r {
                        s.on_recover(cx)
                    }
                });
            }
        }
    }
}
