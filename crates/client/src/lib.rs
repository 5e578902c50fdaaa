//! The Meridian client library: connect to a cluster with its cluster file and run
//! transactions.
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), meridian_client::Error> {
//! # let local = meridian_client::local::LocalCluster::start("2pc-2pl", "us3").await?;
//! # let cluster_file = local.file(); // e.g. "meridian-cluster/cluster.toml"
//! use meridian_client::{Arg, Client, Key, Options};
//! let db = Client::connect(cluster_file, Options::default()).await?;
//! // The bank workload's `transfer`: from, to, amount, and the balance an account
//! // that was never written starts with.
//! let args = vec![Arg::Key(Key::from("alice")), Arg::Key(Key::from("bob")), Arg::U64(10), Arg::U64(100)];
//! let done = db.run("transfer", args).await?;
//! println!("{} committed in {:?}", done.txn, done.latency);
//! # Ok(()) }
//! ```
//!
//! A [`Client`] is a client process of the cluster: it hosts the protocol's own client
//! actors (one per *client slot*, see the cluster file) and runs them on the TCP
//! runtime, so a transaction follows exactly the message pattern the protocol
//! prescribes. `Options::clients` slots run transactions concurrently; more
//! concurrent calls wait for a free slot.
//!
//! Transactions are registered programs (`meridian_workload::registry()`) run whole
//! with [`Client::run`], or interactive transactions whose operations come from the
//! caller one at a time:
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), meridian_client::Error> {
//! # let local = meridian_client::local::LocalCluster::start("replog", "us3").await?;
//! # let db = meridian_client::Client::connect(local.file(), Default::default()).await?;
//! use meridian_client::{Key, Value};
//! let mut t = db.begin().await?;
//! let n = t.read(&Key::from("visits")).await?.and_then(|v| v.as_u64()).unwrap_or(0);
//! t.write(Key::from("visits"), Value::from_u64(n + 1));
//! t.commit().await?;
//! # Ok(()) }
//! ```
//!
//! [`Client::transact`] runs such a transaction and, when it aborts for a reason a
//! retry helps (a conflict, a failure), runs it again, with a bound and back-off:
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), meridian_client::Error> {
//! # let local = meridian_client::local::LocalCluster::start("2pc-2pl", "us3").await?;
//! # let db = meridian_client::Client::connect(local.file(), Default::default()).await?;
//! use meridian_client::{Key, Value};
//! let visits = Key::from("visits");
//! let (n, _committed) = db
//!     .transact(|t| {
//!         let visits = visits.clone();
//!         Box::pin(async move {
//!             let n = t.read(&visits).await?.and_then(|v| v.as_u64()).unwrap_or(0) + 1;
//!             t.write(visits, Value::from(n));
//!             Ok(n)
//!         })
//!     })
//!     .await?;
//! assert_eq!(n, 1);
//! # Ok(()) }
//! ```
//!
//! An interactive transaction is the [`meridian_txn::script`] program: each `read`
//! sends the operations buffered so far to the client actor, which runs them through
//! the protocol (locks, majority reads, leader reads, as the protocol does) and pauses
//! until the next ones arrive; `commit` sends the rest and runs the protocol's commit.
//! Protocols whose client role executes the transaction itself offer this (2PC,
//! Replicated Commit, the replicated log, HACommit: see [`ProtocolInfo::interactive`]);
//! CrossStitch ships the whole program to the servers, so [`Client::begin`] answers
//! [`Error::Unsupported`] there. Aborted interactive transactions are not retried:
//! what the caller did depended on what it read.
//!
//! An abort carries a typed [`AbortReason`]; [`Error::retry_helps`] says whether
//! running the same transaction again can commit (a conflict, a time-out or a failure:
//! yes; a program that aborted itself: no). [`Client::run`] with [`Options::retry`]
//! retries only aborts for which it helps.

pub mod local;

use meridian_core::DcId;
pub use meridian_core::{AbortReason, Key, Outcome, TxnId, TxnRecord, Value};
use meridian_net::cluster::{Cluster, ClusterError};
use meridian_net::host::{self, ClientHost, Interactive, Progress, RunError};
use meridian_protocols::named::{with_protocol, WithProtocol};
use meridian_protocols::Protocol;
use meridian_txn::script::{self, Op};
pub use meridian_txn::Arg;
use meridian_txn::{Call, Registry};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The future a [`Client::transact`] body returns: boxed, `Send`, borrowing the
/// transaction it runs in.
pub type TxFuture<'t, T> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, Error>> + Send + 't>>;

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cluster file cannot be used.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The request or the options are wrong (unknown program, no such DC, ...).
    #[error("{0}")]
    Invalid(String),
    /// The transaction aborted (after every retry, if retries were asked for).
    #[error("transaction {txn} aborted: {reason}")]
    Aborted {
        /// The last attempt.
        txn: TxnId,
        /// Why, as the protocol said ([`AbortReason::retry_helps`] tells whether
        /// running it again can commit).
        reason: AbortReason,
        /// Attempts made.
        attempts: u32,
    },
    /// No outcome arrived in time. The transaction may still commit.
    #[error("no outcome within {0:?}; the transaction may still commit")]
    TimedOut(Duration),
    /// The cluster cannot be reached (or refuses this client).
    #[error("cluster unavailable: {0}")]
    Unavailable(String),
    /// Not something the cluster's protocol can do.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// This client's credentials cannot be used (missing, unreadable, a key others
    /// can read), or the cluster refused them (expired, of another cluster).
    #[error("credentials: {0}")]
    Credentials(String),
}

impl Error {
    /// Whether trying the same transaction again can succeed: an abort for a conflict,
    /// a time-out or a failure (see [`AbortReason::retry_helps`]), or no outcome in
    /// time; not a transaction that aborted itself, a wrong request or an unsupported
    /// one.
    pub fn retry_helps(&self) -> bool {
        match self {
            Error::Aborted { reason, .. } => reason.retry_helps(),
            Error::TimedOut(_) | Error::Unavailable(_) => true,
            Error::Cluster(_) | Error::Invalid(_) | Error::Unsupported(_) | Error::Credentials(_) => false,
        }
    }
}

/// Retrying aborted transactions (only those whose [`AbortReason::retry_helps`]).
#[derive(Clone, Debug)]
pub struct Retry {
    /// Attempts in all (at least 1).
    pub attempts: u32,
    /// Wait before the second attempt; doubled for each one after (with jitter).
    pub backoff: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 5,
            backoff: Duration::from_millis(20),
        }
    }
}

/// Connection options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Client slots to claim: how many transactions run at once.
    pub clients: u32,
    /// First slot to try; slots another process holds are skipped unless
    /// `exact_slots`.
    pub first_slot: u32,
    /// Claim exactly the slots from `first_slot`, and fail if another process holds
    /// one (instead of moving on to free ones).
    pub exact_slots: bool,
    /// Claim only slots in this DC (the client's location), by name.
    pub dc: Option<String>,
    /// How long a transaction may take before [`Error::TimedOut`].
    pub timeout: Duration,
    /// How long [`Client::connect`] waits for every server. It goes on sooner with the
    /// servers it reached (at least one) once every other one has refused a few dials in
    /// a row (down: about 0.4 s); this bound is for servers that neither answer nor
    /// refuse (a silent network). The others are re-dialled in the background.
    pub connect_timeout: Duration,
    /// Retry aborted transactions (`None`: report the first abort).
    pub retry: Option<Retry>,
    /// The client's certificate, key and the cluster's CA (`None`: the `client`
    /// credentials in the cluster file's `tls_dir`; unused if the cluster runs
    /// `insecure`).
    pub credentials: Option<meridian_net::tls::Credentials>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            clients: 1,
            first_slot: 0,
            exact_slots: false,
            dc: None,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            retry: None,
            credentials: None,
        }
    }
}

/// A committed transaction.
#[derive(Clone, Debug)]
pub struct Committed {
    /// Its id.
    pub txn: TxnId,
    /// From the start of the attempt that committed to its commit.
    pub latency: Duration,
    /// Attempts it took.
    pub attempts: u32,
    /// What it read and wrote.
    pub record: TxnRecord,
}

/// A server's refusal: of this client's certificate (a credentials error), or of
/// something else (a slot in use: the cluster is unavailable to it).
fn refusal(r: String) -> Error {
    if r.contains("TLS") || r.contains("certificate") || r.contains(" role") {
        Error::Credentials(r)
    } else {
        Error::Unavailable(r)
    }
}

/// A connection to a cluster.
pub struct Client {
    host: ClientHost,
    cluster: Arc<Cluster>,
    registry: Registry,
    opts: Options,
    info: ProtocolInfo,
}

/// What a client knows about the cluster's protocol.
#[derive(Clone, Debug)]
pub struct ProtocolInfo {
    /// The protocol's name.
    pub name: String,
    /// Whether it claims strict serializability.
    pub strict: bool,
    /// Whether it claims only read committed.
    pub read_committed: bool,
    /// The nodes holding each shard.
    pub shard_replicas: Vec<Vec<meridian_core::NodeId>>,
    /// Whether it runs interactive transactions ([`Client::begin`]).
    pub interactive: bool,
}

impl Client {
    /// Reads a cluster file and connects.
    pub async fn connect(path: impl AsRef<Path>, opts: Options) -> Result<Client, Error> {
        let cluster = Arc::new(Cluster::load(path.as_ref())?);
        Self::connect_to(cluster, opts).await
    }

    /// Connects to a cluster already loaded. Client slots already in use by another
    /// process are skipped (unless [`Options::exact_slots`]): the next free block of
    /// `clients` slots is taken, so any number of processes can connect without
    /// splitting the slots by hand.
    pub async fn connect_to(cluster: Arc<Cluster>, opts: Options) -> Result<Client, Error> {
        let mut o = opts.clone();
        loop {
            match Self::connect_slots(cluster.clone(), o.clone()).await {
                Err(Error::Unavailable(m)) if m.contains("is in use") && !o.exact_slots => {
                    // Try the slots after the ones just refused.
                    let last = slots(&cluster, &o)?.last().copied().unwrap_or(o.first_slot);
                    o.first_slot = last + 1;
                    if slots(&cluster, &o).is_err() {
                        return Err(Error::Unavailable(format!(
                            "{m}, and no {} free client slots are left after it (the cluster file reserves {})",
                            o.clients, cluster.file.client_slots
                        )));
                    }
                }
                r => {
                    return r.map(|mut c| {
                        c.opts = opts.clone();
                        c
                    })
                }
            }
        }
    }

    async fn connect_slots(cluster: Arc<Cluster>, opts: Options) -> Result<Client, Error> {
        let slots = slots(&cluster, &opts)?;
        struct Start(Arc<Cluster>, Vec<u32>, Option<meridian_net::tls::Credentials>);
        impl WithProtocol for Start {
            type Out = Result<(ClientHost, ProtocolInfo), Error>;
            fn with<P: Protocol>(self, p: P) -> Self::Out {
                let env = host::env_for(&p, &self.0).map_err(Error::Invalid)?;
                // After the protocol (a wrong spec is the first thing to hear about).
                let sec = self
                    .0
                    .security_with(meridian_net::tls::Role::Client, self.2.as_ref())
                    .map_err(Error::Credentials)?;
                let info = ProtocolInfo {
                    name: p.name().to_string(),
                    strict: p.strict(),
                    read_committed: p.read_committed(),
                    interactive: p.interactive(),
                    shard_replicas: env.layout.shard_replicas.clone(),
                };
                Ok((
                    ClientHost::start(p, self.0, &self.1, sec).map_err(Error::Invalid)?,
                    info,
                ))
            }
        }
        let (host, info) = with_protocol(
            &cluster.file.protocol,
            &cluster.topology,
            cluster.home,
            Start(cluster.clone(), slots, opts.credentials.clone()),
        )
        .map_err(|e| Error::Invalid(format!("cluster file {}: {e}", cluster.path.display())))??;
        let n = cluster.num_servers();
        let start = Instant::now();
        loop {
            if let Some(r) = host.refused() {
                return Err(refusal(r));
            }
            // Every server connected, or, since a server that is down must not keep an
            // application from starting (its shards fail over, or its transactions time
            // out, as the protocol says), every other one refused several dials in a
            // row: the client starts with the ones it has and keeps re-dialling the
            // others. With no server at all there is nothing to talk to.
            let (connected, down) = (host.connected(), host.unreachable());
            if connected == 0 && down >= n {
                // Every address refuses (nothing listens): no server to wait for.
                return Err(Error::Unavailable(format!(
                    "none of the {n} servers accepts a connection (every dial refused): is the cluster up? see `meridian cluster status`"
                )));
            }
            if connected >= n || (connected > 0 && connected + down >= n) {
                // A server refuses (slot in use, wrong cluster) right after the Hello.
                tokio::time::sleep(Duration::from_millis(100)).await;
                if let Some(r) = host.refused() {
                    return Err(refusal(r));
                }
                if connected < n {
                    tracing::warn!(
                        "connected to {connected} of {n} servers; {down} unreachable (re-dialling them in the background)"
                    );
                }
                break;
            }
            if start.elapsed() > opts.connect_timeout {
                if host.connected() == 0 {
                    return Err(Error::Unavailable(format!(
                        "connected to none of {n} servers after {:?}",
                        opts.connect_timeout
                    )));
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Client {
            host,
            cluster,
            registry: host::registry(),
            opts,
            info,
        })
    }

    /// Runs registered program `program` with `args` and returns once it commits
    /// (retrying aborts if [`Options::retry`] asks for it).
    pub async fn run(&self, program: &str, args: Vec<Arg>) -> Result<Committed, Error> {
        let call = Call {
            program: program.to_string(),
            args,
        };
        let retry = self.opts.retry.clone().unwrap_or(Retry {
            attempts: 1,
            backoff: Duration::ZERO,
        });
        let mut backoff = retry.backoff;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let r = self.run_call(call.clone()).await?;
            match r.outcome {
                Outcome::Committed => {
                    return Ok(Committed {
                        txn: r.id,
                        latency: Duration::from_nanos(r.end.unwrap_or(r.start).saturating_sub(r.start)),
                        attempts: attempt,
                        record: r,
                    })
                }
                // A transaction that aborted itself (or cannot run) aborts again.
                Outcome::Aborted
                    if attempt < retry.attempts.max(1) && r.abort_reason.as_ref().is_none_or(|w| w.retry_helps()) =>
                {
                    let jitter = backoff.mul_f64(0.5 * (r.id.seq % 7) as f64 / 7.0);
                    tokio::time::sleep(backoff + jitter).await;
                    backoff *= 2;
                }
                Outcome::Aborted => {
                    let reason = r.abort_reason.map_or(AbortReason::Aborted, |b| *b);
                    // Arguments the program refused are the caller's error, not an
                    // abort (the check before sending catches most of them).
                    if let AbortReason::ProgramFault(why) = &reason {
                        return Err(Error::Invalid(format!("program `{program}`: {why}")));
                    }
                    return Err(Error::Aborted {
                        txn: r.id,
                        reason,
                        attempts: attempt,
                    });
                }
                Outcome::Unknown => return Err(Error::TimedOut(self.opts.timeout)),
            }
        }
    }

    /// Runs one attempt of `call` and returns its record, committed or aborted (the
    /// benchmark driver's entry point). Unknown programs are refused before anything
    /// is sent.
    pub async fn run_call(&self, call: Call) -> Result<TxnRecord, Error> {
        self.run_call_in(call, None).await
    }

    /// Like [`Client::run_call`], on a slot in DC `dc`.
    pub async fn run_call_in(&self, call: Call, dc: Option<DcId>) -> Result<TxnRecord, Error> {
        // Run the program up to its first read, here and against nothing: an unknown
        // program or arguments it refuses before reading are the caller's error, found
        // before anything is sent.
        let mut dry = meridian_txn::Execution::new(call.clone());
        match dry.step(&self.registry) {
            Err(e) => return Err(Error::Invalid(e.to_string())),
            Ok(meridian_txn::Step::Abort(AbortReason::ProgramFault(why))) => {
                return Err(Error::Invalid(format!("program `{}`: {why}", call.program)))
            }
            Ok(_) => {}
        }
        match self.host.run_timeout(call, dc, self.opts.timeout).await {
            Ok(r) => Ok(r),
            Err(RunError::TimedOut) => Err(Error::TimedOut(self.opts.timeout)),
            Err(RunError::Stopped) => Err(Error::Unavailable("the client process stopped".into())),
        }
    }

    /// Begins an interactive transaction (see the crate docs). Nothing is sent until
    /// the first [`Transaction::read`] or [`Transaction::commit`]; the transaction
    /// takes a client slot from then until it ends.
    pub async fn begin(&self) -> Result<Transaction<'_>, Error> {
        if self.info.interactive {
            Ok(Transaction {
                client: self,
                ops: Vec::new(),
                run: None,
                ended: false,
            })
        } else {
            Err(Error::Unsupported(format!(
                "interactive transactions: protocol `{}` ships whole programs to the servers (use Client::run)",
                self.info.name
            )))
        }
    }

    /// Runs an interactive transaction to its commit: `body` reads and writes through
    /// the [`Transaction`] it is given, and when it returns `Ok` the transaction
    /// commits. An abort for which a retry helps ([`Error::retry_helps`]: a conflict,
    /// a failure), met by a read, by the commit or returned by `body`, runs `body`
    /// again on a new transaction, up to [`Options::retry`]'s attempts
    /// ([`Retry::default`] if unset) with doubling back-off. `body` may therefore run
    /// more than once: what it does outside the transaction must be safe to repeat.
    /// Returns `body`'s value and the commit.
    ///
    /// A commit that gets no outcome in time ([`Error::TimedOut`] from the commit) is
    /// never retried: it may have committed, and running it again could apply it
    /// twice; the caller decides (by reading what it wrote, say). A read that times out
    /// gives the transaction up (nothing of it commits), so that one is retried.
    ///
    /// `body` returns its future boxed (`Box::pin(async move { … })`), so that the
    /// future `transact` returns is `Send` and can run in a spawned task or a web
    /// handler; values it needs from outside are cloned into each run.
    pub async fn transact<T, F>(&self, mut body: F) -> Result<(T, Committed), Error>
    where
        F: for<'t> FnMut(&'t mut Transaction<'_>) -> TxFuture<'t, T>,
    {
        let retry = self.opts.retry.clone().unwrap_or_default();
        let mut backoff = retry.backoff;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut t = self.begin().await?;
            let err = match body(&mut t).await {
                Ok(v) => match t.commit().await {
                    Ok(mut c) => {
                        c.attempts = attempt;
                        return Ok((v, c));
                    }
                    Err(e @ Error::TimedOut(_)) => return Err(e),
                    Err(e) => e,
                },
                // Dropping an unfinished transaction aborts it.
                Err(e) => e,
            };
            if attempt >= retry.attempts.max(1) || !err.retry_helps() {
                return Err(match err {
                    Error::Aborted { txn, reason, .. } => Error::Aborted {
                        txn,
                        reason,
                        attempts: attempt,
                    },
                    e => e,
                });
            }
            let jitter = backoff.mul_f64(0.5 * (attempt % 7) as f64 / 7.0);
            tokio::time::sleep(backoff + jitter).await;
            backoff *= 2;
        }
    }

    /// The cluster.
    pub fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    /// The client process underneath (slots, counters).
    pub fn host(&self) -> &ClientHost {
        &self.host
    }

    /// The cluster's protocol.
    pub fn info(&self) -> &ProtocolInfo {
        &self.info
    }
}

/// The client slots `opts` asks for.
fn slots(c: &Cluster, opts: &Options) -> Result<Vec<u32>, Error> {
    if opts.clients == 0 {
        return Err(Error::Invalid("clients must be at least 1".into()));
    }
    let ndc = c.topology.num_dcs() as u32;
    let dc = match &opts.dc {
        None => None,
        Some(name) => Some(c.topology.dc(name).map_err(|e| Error::Invalid(e.to_string()))?.0 as u32),
    };
    let v: Vec<u32> = (opts.first_slot..c.file.client_slots)
        .filter(|s| dc.is_none_or(|d| s % ndc == d))
        .take(opts.clients as usize)
        .collect();
    if v.len() < opts.clients as usize {
        return Err(Error::Invalid(format!(
            "{} client slots asked for from slot {}{}, but the cluster file reserves {} slots in all",
            opts.clients,
            opts.first_slot,
            dc.map(|_| " in that DC").unwrap_or(""),
            c.file.client_slots
        )));
    }
    Ok(v)
}

/// An interactive transaction (see [`Client::begin`]). Dropping it before it ends
/// aborts it.
pub struct Transaction<'a> {
    client: &'a Client,
    /// Operations not yet sent (writes wait for the next read or the commit).
    ops: Vec<Op>,
    run: Option<Interactive>,
    ended: bool,
}

impl Transaction<'_> {
    /// The transaction's id, once its first read has been answered.
    pub fn id(&self) -> Option<TxnId> {
        self.run.as_ref().and_then(|r| r.txn())
    }

    /// Reads `key` (`None`: absent), through the protocol. A key this transaction
    /// wrote reads as its write; a key read before reads as it did then.
    pub async fn read(&mut self, key: &Key) -> Result<Option<Value>, Error> {
        self.ops.push(Op::Read(key.clone()));
        match self.send().await? {
            Progress::Paused(v) => Ok(v),
            Progress::Ended(r) => Err(self.ended_early(r)),
        }
    }

    /// Buffers a write; it goes to the servers with the commit.
    pub fn write(&mut self, key: Key, value: Value) {
        self.ops.push(Op::Write(key, value));
    }

    /// Commits: runs the protocol's commit over what was read and written.
    pub async fn commit(mut self) -> Result<Committed, Error> {
        self.ops.push(Op::Commit);
        match self.send().await? {
            Progress::Ended(r) if r.outcome == Outcome::Committed => Ok(Committed {
                txn: r.id,
                latency: Duration::from_nanos(r.end.unwrap_or(r.start).saturating_sub(r.start)),
                attempts: 1,
                record: r,
            }),
            Progress::Ended(r) => Err(self.ended_early(r)),
            Progress::Paused(_) => Err(Error::Invalid("the transaction paused after its commit".into())),
        }
    }

    /// Aborts: releases whatever the transaction holds. A transaction that sent
    /// nothing yet has nothing to release.
    pub async fn abort(mut self) -> Result<(), Error> {
        if self.run.is_none() {
            self.ended = true;
            return Ok(());
        }
        self.ops.push(Op::Abort("aborted by the caller".into()));
        match self.send().await? {
            Progress::Ended(_) => Ok(()),
            Progress::Paused(_) => Err(Error::Invalid("the transaction paused after its abort".into())),
        }
    }

    /// Sends the buffered operations and waits for the next pause or the end.
    async fn send(&mut self) -> Result<Progress, Error> {
        if self.ended {
            return Err(Error::Invalid("the transaction has ended".into()));
        }
        let args = script::encode(&std::mem::take(&mut self.ops));
        let c = self.client;
        let stopped = |_| Error::Unavailable("the client process stopped".into());
        match &mut self.run {
            None => {
                let call = Call {
                    program: script::NAME.into(),
                    args,
                };
                self.run = Some(c.host.start_interactive(call, None).await.map_err(stopped)?);
            }
            Some(run) => run.extend(args).await.map_err(stopped)?,
        }
        let run = self.run.as_mut().expect("started");
        match run.next(c.opts.timeout).await {
            Ok(p) => {
                if matches!(p, Progress::Ended(_)) {
                    self.ended = true;
                }
                Ok(p)
            }
            Err(RunError::TimedOut) => {
                // Give up on it so it does not hold its slot and locks: abort it if it
                // waits; if it is still busy, dropping the handle makes its next pause
                // find no caller, and the client process aborts it then.
                self.ended = true;
                run.try_extend(script::encode(&[Op::Abort("the caller timed out".into())]));
                self.run = None;
                Err(Error::TimedOut(c.opts.timeout))
            }
            Err(RunError::Stopped) => {
                self.ended = true;
                Err(Error::Unavailable("the client process stopped".into()))
            }
        }
    }

    fn ended_early(&mut self, r: TxnRecord) -> Error {
        self.ended = true;
        match r.outcome {
            Outcome::Aborted => Error::Aborted {
                txn: r.id,
                reason: r.abort_reason.map_or(AbortReason::Aborted, |b| *b),
                attempts: 1,
            },
            _ => Error::TimedOut(self.client.opts.timeout),
        }
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.ended {
            if let Some(run) = &self.run {
                run.try_extend(script::encode(&[Op::Abort("dropped by the caller".into())]));
            }
        }
    }
}
