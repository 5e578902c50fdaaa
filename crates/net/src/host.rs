//! The TCP runtime: one process hosts one server actor (`meridian server`) or many
//! client actors (the client library), and delivers their messages over TCP.
//!
//! # Shape
//!
//! - **One event loop per process** owns the actors and is the only code that calls
//!   them, exactly as the simulator does: an input (a message or a timer) goes in, the
//!   context's commands come out. Protocol code is not touched or copied.
//! - **One thread per server.** `meridian server` runs this loop, every connection's
//!   reader and writer and the timers on one current-thread tokio runtime, so a message
//!   is read, handled and answered without waking another thread. On a multi-threaded
//!   runtime each message crossed two threads, and a busy node spent most of its time
//!   in futex and scheduler work (issue 22; the figures are in docs/MEASUREMENTS.md).
//!   The client library runs on whatever runtime its caller gives it.
//! - **Connections.** Every process dials every server it may send to and keeps one
//!   outgoing connection per server, re-dialled with exponential back-off (50 ms to 2 s)
//!   when it fails. Server-to-server traffic goes only on the sender's own outgoing
//!   connection. Client processes have no address, so a server answers a client on the
//!   connection the client dialled; the client's `Hello` names the slots it hosts.
//! - **Frames** are [`crate::encode`]d [`Wire`] values. A frame that does not parse, a
//!   message from a node the connection did not introduce or for a node not hosted
//!   here drops the connection with a logged reason.
//! - **WAN delay.** A message carries its send time; the receiver holds it until send
//!   time + the topology's one-way delay between the two nodes' DCs (no jitter). With
//!   `delay = false` in the cluster file, messages are delivered as they arrive. The
//!   delay is constant per pair of nodes, so per-pair FIFO order is kept.
//! - **Timers** come from tokio's clock. Actors see cluster time: nanoseconds since
//!   the cluster file's `epoch_ns`, read from the system clock once at start and
//!   advanced by a monotonic clock after (processes on one machine agree on it).
//! - **Bounded queues.** Each connection's outgoing queue holds [`QUEUE`] frames; the
//!   event loop never waits on it: a frame that finds it full is dropped and counted
//!   (every protocol re-sends what it must, as it does under the simulator's message
//!   loss; blocking instead could deadlock two busy nodes that send to each other).
//!   The inbound queue from connections to the event loop is bounded too, and readers
//!   wait on it, so a node that cannot keep up stops reading its sockets and TCP flow
//!   control pushes back on the senders.
//! - **WAN hops** are counted as in the simulator, so `wan_trips` means the same in a
//!   bench report as in a simulation.

use crate::cluster::Cluster;
use crate::journal::{Entry, Journal};
use crate::wire::{Counters, Envelope, NodeReport, Status, Wire};
use crate::{encode, FrameReader};
use meridian_core::{
    rng_for, Actor, ClientId, Command, Ctx, DcId, Layout, NodeId, Rng, Time, TimerId, TxnId, TxnRecord, Value,
};
use meridian_protocols::{ClientRole, Env, Protocol, Replica, Timeouts};
use meridian_txn::{script, Call, Registry};
use rustc_hash::FxHashMap as HashMap;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};

/// Frames an outgoing connection queues before new ones are dropped.
pub const QUEUE: usize = 65_536;
/// Inputs the connections queue for the event loop before they stop reading.
const INBOX: usize = 8192;
/// First re-dial delay; doubles up to [`BACKOFF_MAX`].
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// Dials in a row that must fail before a server counts as unreachable (with the
/// back-off, about 0.4 s after the first).
const DOWN_AFTER: u32 = 3;
/// A dialling process must introduce itself within this long.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// Cluster time: nanoseconds since the cluster's epoch.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    base_instant: Instant,
    base_time: Time,
}

impl Clock {
    /// A clock for a cluster whose epoch is `epoch_ns` (Unix nanoseconds).
    pub fn new(epoch_ns: u64) -> Clock {
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Clock {
            base_instant: Instant::now(),
            base_time: unix.saturating_sub(epoch_ns),
        }
    }
    /// Now, in cluster time.
    pub fn now(&self) -> Time {
        self.base_time + self.base_instant.elapsed().as_nanos() as Time
    }
    /// The instant at which it will be cluster time `t`.
    pub fn instant(&self, t: Time) -> Instant {
        self.base_instant + Duration::from_nanos(t.saturating_sub(self.base_time))
    }
}

/// Where frames for a node go: the queue of one connection's writer.
#[derive(Clone)]
struct Route {
    conn: u64,
    tx: mpsc::Sender<Vec<u8>>,
}

/// Routes shared between the event loop (which sends) and the connection tasks
/// (which add and remove them).
#[derive(Clone, Default)]
struct Routes(Arc<Mutex<HashMap<NodeId, Route>>>);

impl Routes {
    fn get(&self, n: NodeId) -> Option<Route> {
        self.0.lock().expect("routes lock").get(&n).cloned()
    }
    fn insert(&self, n: NodeId, r: Route) {
        self.0.lock().expect("routes lock").insert(n, r);
    }
    /// Claims `nodes` for connection `conn` unless another live connection holds one.
    fn claim(&self, nodes: &[NodeId], r: &Route) -> Result<(), NodeId> {
        let mut m = self.0.lock().expect("routes lock");
        if let Some(n) = nodes.iter().find(|n| m.get(n).is_some_and(|x| !x.tx.is_closed())) {
            return Err(*n);
        }
        for n in nodes {
            m.insert(*n, r.clone());
        }
        Ok(())
    }
    fn release(&self, conn: u64) {
        self.0.lock().expect("routes lock").retain(|_, r| r.conn != conn);
    }
}

/// An input for the event loop from a connection.
pub(crate) enum Event<M> {
    Net(Envelope<M>),
    Status(mpsc::Sender<Vec<u8>>),
    Report(mpsc::Sender<Vec<u8>>),
    Cut(Vec<(u32, u32)>, Time, mpsc::Sender<Vec<u8>>),
}

/// Something scheduled for a moment of cluster time.
enum Due<M> {
    Deliver {
        from: NodeId,
        to: NodeId,
        hops: u32,
        msg: M,
    },
    Timer {
        node: NodeId,
        id: TimerId,
        gen: u64,
    },
}

enum Role<P: Protocol> {
    Server(P::Server),
    Client(P::Client),
}

struct Local<P: Protocol> {
    role: Role<P>,
    rng: Rng,
    timers: HashMap<TimerId, u64>,
}

/// A request to a client process's event loop.
pub enum Request {
    /// Run `call` on a free client slot (in `dc` if given); the reply is its record.
    Submit(Job),
    /// Append the caller's next operations to interactive transaction `txn`, which
    /// waits for them.
    Extend {
        /// The transaction.
        txn: TxnId,
        /// Its script's next operations ([`meridian_txn::script::encode`]).
        args: Vec<meridian_txn::Arg>,
    },
    /// The process's counters.
    Counters(oneshot::Sender<Counters>),
    /// Records (outcome unknown) of the transactions still running.
    InFlight(oneshot::Sender<Vec<TxnRecord>>),
}

/// A transaction to run on a client slot.
pub struct Job {
    /// The transaction.
    pub call: Call,
    /// The DC whose clients may run it.
    pub dc: Option<DcId>,
    /// Where the record goes.
    pub reply: oneshot::Sender<TxnRecord>,
    /// For an interactive transaction: where its pauses go (the transaction and the
    /// last read's value) each time it waits for the caller's next operations.
    pub pauses: Option<mpsc::UnboundedSender<(TxnId, Option<Value>)>>,
}

/// Shared counters, readable while the loop runs.
#[derive(Default)]
struct Stats {
    inputs: AtomicU64,
    sent: AtomicU64,
    sent_wan: AtomicU64,
    dropped: AtomicU64,
    cut: AtomicU64,
    peers: AtomicU32,
    /// Servers whose last [`DOWN_AFTER`] dials in a row failed (none answered since).
    unreachable: AtomicU32,
    /// Why a server last refused a connection of this process.
    refused: Mutex<Option<String>>,
    /// Records of attempts a call made before its last one (a protocol that retries an
    /// aborted call as a new transaction, `pc-occ`, records both): history, not the
    /// call's answer.
    earlier_attempts: Mutex<Vec<TxnRecord>>,
}

impl Stats {
    fn snapshot(&self) -> Counters {
        Counters {
            inputs: self.inputs.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            sent_wan: self.sent_wan.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            cut: self.cut.load(Ordering::Relaxed),
        }
    }
}

/// What a journal checkpoint holds of a server node: everything a replay of the
/// inputs before it would have rebuilt.
#[derive(serde::Serialize, serde::Deserialize)]
struct Checkpoint {
    /// The protocol's server image ([`Protocol::image`]).
    server: Vec<u8>,
    /// The node's random generator.
    rng: Rng,
    /// Its armed timers and when each fires.
    timers: Vec<(u64, Time)>,
}

/// Inputs between two checkpoints of a server's journal, by default.
pub const CHECKPOINT_EVERY: u64 = 100_000;

/// The event loop's state.
struct Core<P: Protocol> {
    proto: P,
    cluster: Arc<Cluster>,
    layout: Arc<Layout>,
    clock: Clock,
    locals: BTreeMap<NodeId, Local<P>>,
    due: BTreeMap<(Time, u64), Due<P::Msg>>,
    seq: u64,
    routes: Routes,
    stats: Arc<Stats>,
    out: Vec<Command<P::Msg>>,
    recs: Vec<TxnRecord>,
    /// Frames waiting for the end of the batch (and its journal sync).
    outbox: Vec<(NodeId, Vec<u8>)>,
    journal: Option<Journal>,
    /// Checkpoint the journal every this many inputs (0: never).
    checkpoint_every: u64,
    /// Replaying the journal: effects are discarded.
    replaying: bool,
    need_sync: bool,
    /// The protocol treats every step as forced (`Protocol::forces_every_step`): the
    /// journal is synced before every batch that sends.
    forces_every_step: bool,
    /// Journal fsyncs so far.
    syncs: u64,
    replayed: u64,
    /// Timers the replayed inputs left armed (node, id, deadline): re-armed when a
    /// node resumes where it stopped.
    replay_timers: BTreeMap<(NodeId, TimerId), Time>,
    // client processes
    free: Vec<NodeId>,
    waiting: VecDeque<Job>,
    busy: HashMap<TxnId, (NodeId, oneshot::Sender<TxnRecord>)>,
    /// Interactive transactions running: where their pauses go.
    pauses: HashMap<TxnId, mpsc::UnboundedSender<(TxnId, Option<Value>)>>,
    next_seq: HashMap<NodeId, u32>,
    client_ids: HashMap<NodeId, ClientId>,
    drop_warned: u64,
    started: std::time::Instant,
    /// DC pairs whose links are cut (`meridian cluster partition`), until a time.
    cut: Vec<(DcId, DcId)>,
    cut_until: Time,
}

/// The environment every actor of a cluster shares.
pub fn env_for<P: Protocol>(p: &P, cluster: &Cluster) -> Result<Env, String> {
    let layout = cluster.layout(p.placement(cluster.home)).map_err(|e| e.to_string())?;
    Ok(Env {
        layout: Arc::new(layout),
        registry: Arc::new(registry()),
        timeouts: Timeouts::default(),
    })
}

/// The programs every process knows (the workloads' registered programs).
pub fn registry() -> Registry {
    meridian_workload::registry()
}

impl<P: Protocol> Core<P> {
    fn new(proto: P, cluster: Arc<Cluster>, env: &Env, stats: Arc<Stats>, routes: Routes) -> Self {
        Core {
            proto,
            layout: env.layout.clone(),
            clock: Clock::new(cluster.file.epoch_ns),
            cluster,
            locals: BTreeMap::new(),
            due: BTreeMap::new(),
            seq: 0,
            routes,
            stats,
            out: vec![],
            recs: vec![],
            outbox: vec![],
            journal: None,
            checkpoint_every: 0,
            replaying: false,
            need_sync: false,
            forces_every_step: false,
            syncs: 0,
            replayed: 0,
            replay_timers: BTreeMap::new(),
            free: vec![],
            waiting: VecDeque::new(),
            busy: HashMap::default(),
            pauses: HashMap::default(),
            next_seq: HashMap::default(),
            client_ids: HashMap::default(),
            drop_warned: 0,
            started: std::time::Instant::now(),
            cut: vec![],
            cut_until: 0,
        }
    }

    fn schedule(&mut self, at: Time, d: Due<P::Msg>) {
        self.seq += 1;
        self.due.insert((at, self.seq), d);
    }

    /// Runs one actor call at `now` and applies its effects.
    fn call(&mut self, node: NodeId, hops: u32, now: Time, f: impl FnOnce(&mut Role<P>, &mut Ctx<'_, P::Msg>)) {
        let Some(local) = self.locals.get_mut(&node) else {
            return;
        };
        let mut out = std::mem::take(&mut self.out);
        let mut recs = std::mem::take(&mut self.recs);
        let mut orphans = Vec::new();
        let work = {
            let mut cx = Ctx::new(now, node, &mut local.rng, &mut out, &mut recs).with_hops(hops);
            f(&mut local.role, &mut cx);
            cx.work()
        };
        if !self.replaying {
            self.stats.inputs.fetch_add(1, Ordering::Relaxed);
            if work.log_syncs > 0 {
                self.need_sync = true;
            }
        }
        for cmd in out.drain(..) {
            match cmd {
                Command::Send { to, msg, chain } => self.send(node, to, msg, chain.unwrap_or(hops), now),
                Command::SetTimer { id, after } => {
                    if self.replaying {
                        self.replay_timers.insert((node, id), now + after);
                        continue;
                    }
                    let local = self.locals.get_mut(&node).expect("local node");
                    self.seq += 1;
                    let gen = self.seq;
                    local.timers.insert(id, gen);
                    self.schedule(now + after, Due::Timer { node, id, gen });
                }
                Command::CancelTimer { id } => {
                    if self.replaying {
                        self.replay_timers.remove(&(node, id));
                    }
                    if let Some(l) = self.locals.get_mut(&node) {
                        l.timers.remove(&id);
                    }
                }
                // Replay re-runs what the node did before its restart: noted then.
                Command::Note { what } if !self.replaying => info!(node = node.0, "{what}"),
                Command::Note { .. } => {}
                Command::AwaitInput { txn, output } => match self.pauses.get(&txn) {
                    Some(p) if p.send((txn, output)).is_ok() => {}
                    // A script run whole (or whose caller has gone) that stops for
                    // input has no one to give it more: it aborts.
                    _ => orphans.push(txn),
                },
            }
        }
        // One step may close several records of one call: the attempts it made before
        // the last (a retry under a new id, recorded in the same step). The last is the
        // call's answer; the earlier ones are kept for the history. (The first attempt
        // used to answer the call and free its slot, and the retry's record was lost:
        // its writes were "written by no recorded transaction".)
        let n = recs.len();
        let mut busy_id = None;
        for (i, mut r) in recs.drain(..).enumerate() {
            r.wan_trips = hops;
            if i + 1 < n {
                if self.busy.contains_key(&r.id) {
                    busy_id = Some(r.id);
                }
                self.stats.earlier_attempts.lock().expect("stats lock").push(r);
                continue;
            }
            if let Some(id) = busy_id.filter(|id| *id != r.id && !self.busy.contains_key(&r.id)) {
                if let Some(b) = self.busy.remove(&id) {
                    self.busy.insert(r.id, b);
                }
            }
            self.finished(r);
        }
        self.out = out;
        self.recs = recs;
        for txn in orphans {
            self.pauses.remove(&txn);
            let args = script::encode(&[script::Op::Abort(
                "the script stopped for input and no caller is waiting".into(),
            )]);
            // Boxed: one instantiation of `call`, however deep this recursion goes.
            type Input<P> = Box<dyn FnOnce(&mut Role<P>, &mut Ctx<'_, <P as Protocol>::Msg>)>;
            let f: Input<P> = Box::new(move |r, cx| {
                if let Role::Client(c) = r {
                    c.extend(txn, args, cx)
                }
            });
            self.call(node, hops, now, f);
        }
    }

    /// Whether the link between the DCs of `a` and `b` is cut at `now`.
    fn is_cut(&self, a: NodeId, b: NodeId, now: Time) -> bool {
        if self.cut.is_empty() || now >= self.cut_until {
            return false;
        }
        let (da, db) = (self.layout.dc_of(a), self.layout.dc_of(b));
        da != db && self.cut.iter().any(|&(x, y)| (x, y) == (da, db) || (x, y) == (db, da))
    }

    fn send(&mut self, from: NodeId, to: NodeId, msg: P::Msg, hops: u32, now: Time) {
        if self.replaying || to.0 >= self.layout.num_nodes() {
            return;
        }
        if self.is_cut(from, to, now) {
            self.stats.cut.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.stats.sent.fetch_add(1, Ordering::Relaxed);
        if self.layout.dc_of(from) != self.layout.dc_of(to) {
            self.stats.sent_wan.fetch_add(1, Ordering::Relaxed);
        }
        let e = Envelope {
            from,
            to,
            hops,
            sent_at: now,
            msg,
        };
        if self.locals.contains_key(&to) {
            self.deliver_later(e);
            return;
        }
        let frame = encode(&Wire::Msg(e));
        self.outbox.push((to, frame));
    }

    /// Schedules a message that arrived (or was sent locally) at its delivery time.
    fn deliver_later(&mut self, e: Envelope<P::Msg>) {
        let Envelope {
            from,
            to,
            hops,
            sent_at,
            msg,
        } = e;
        if from.0 >= self.layout.num_nodes() {
            return;
        }
        if self.is_cut(from, to, self.clock.now()) {
            self.stats.cut.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let wan = self.layout.dc_of(from) != self.layout.dc_of(to);
        let at = if self.cluster.file.delay {
            sent_at + self.layout.one_way(from, to)
        } else {
            sent_at
        };
        self.schedule(
            at,
            Due::Deliver {
                from,
                to,
                hops: hops + wan as u32,
                msg,
            },
        );
    }

    fn finished(&mut self, r: TxnRecord) {
        self.pauses.remove(&r.id);
        if let Some((node, reply)) = self.busy.remove(&r.id) {
            let _ = reply.send(r);
            self.free.push(node);
        }
    }

    /// Handles everything due by now, in time order.
    fn run_due(&mut self) {
        loop {
            let now = self.clock.now();
            let Some(entry) = self.due.first_entry() else { break };
            if entry.key().0 > now {
                break;
            }
            match entry.remove() {
                Due::Deliver { from, to, hops, msg } => {
                    self.journal_input(
                        to,
                        Entry::Msg {
                            from,
                            hops,
                            now,
                            msg: msg.clone(),
                        },
                    );
                    self.call(to, hops, now, move |r, cx| match r {
                        Role::Server(s) => s.on_message(from, msg, cx),
                        Role::Client(c) => c.on_message(from, msg, cx),
                    });
                }
                Due::Timer { node, id, gen } => {
                    let armed = self.locals.get(&node).and_then(|l| l.timers.get(&id)) == Some(&gen);
                    if !armed {
                        continue;
                    }
                    if let Some(l) = self.locals.get_mut(&node) {
                        l.timers.remove(&id);
                    }
                    self.journal_input(node, Entry::Timer { id: id.0, now });
                    self.call(node, 0, now, move |r, cx| match r {
                        Role::Server(s) => s.on_timer(id, cx),
                        Role::Client(c) => c.on_timer(id, cx),
                    });
                }
            }
        }
    }

    /// Checkpoints the (only) server node's journal: its image, random generator and
    /// armed timers, after which the inputs before it are dropped. A protocol without
    /// an image never checkpoints.
    fn checkpoint(&mut self) {
        let Some((&node, local)) = self.locals.iter().next() else {
            return;
        };
        let Role::Server(s) = &local.role else { return };
        let t0 = std::time::Instant::now();
        let Some(server) = self.proto.image(s) else {
            info!(
                protocol = self.proto.name(),
                "this protocol has no server image: its journal is never checkpointed, and a restart \
                 replays every input"
            );
            self.checkpoint_every = 0;
            return;
        };
        let mut timers: Vec<(u64, Time)> = self
            .due
            .iter()
            .filter_map(|((at, _), d)| match d {
                Due::Timer { node: n, id, gen } if *n == node && local.timers.get(id) == Some(gen) => Some((id.0, *at)),
                _ => None,
            })
            .collect();
        timers.sort_unstable();
        let ck = Checkpoint {
            server,
            rng: local.rng.clone(),
            timers,
        };
        let bytes = postcard::to_stdvec(&ck).expect("checkpoints serialize");
        let encoded = t0.elapsed();
        let Some(j) = &mut self.journal else { return };
        let dropped = j.since_checkpoint();
        if let Err(err) = j.checkpoint(&bytes) {
            panic_free_exit(&format!("journal checkpoint failed: {err}"));
        }
        self.syncs += 1;
        info!(
            node = node.0,
            bytes = bytes.len(),
            inputs_dropped = dropped,
            ms = t0.elapsed().as_millis() as u64,
            encode_ms = encoded.as_millis() as u64,
            "checkpointed the journal"
        );
    }

    fn journal_input(&mut self, node: NodeId, e: Entry<P::Msg>) {
        if self.replaying
            || !self
                .locals
                .get(&node)
                .is_some_and(|l| matches!(l.role, Role::Server(_)))
        {
            return;
        }
        if let Some(j) = &mut self.journal {
            if let Err(err) = j.append(&e) {
                // A node that cannot keep its journal cannot promise durability.
                panic_free_exit(&format!("journal append failed: {err}"));
            }
        }
    }

    /// Ends a batch: syncs the journal if any handler forced its log, then lets the
    /// batch's frames go.
    fn end_batch(&mut self) {
        if let Some(j) = &mut self.journal {
            let force = std::mem::take(&mut self.need_sync) || (self.forces_every_step && !self.outbox.is_empty());
            let res = if force {
                self.syncs += 1;
                j.sync()
            } else {
                j.flush()
            };
            if let Err(err) = res {
                panic_free_exit(&format!("journal sync failed: {err}"));
            }
            if self.checkpoint_every > 0 && j.since_checkpoint() >= self.checkpoint_every {
                self.checkpoint();
            }
        }
        for (to, frame) in self.outbox.drain(..) {
            let ok = match self.routes.get(to) {
                Some(r) => r.tx.try_send(frame).is_ok(),
                None => false,
            };
            if !ok {
                let n = self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                if n >= self.drop_warned {
                    warn!(%to, dropped = n + 1, "no connection or full queue: dropping a message");
                    self.drop_warned = (n + 1) * 10;
                }
            }
        }
    }

    fn on_event(&mut self, ev: Event<P::Msg>) {
        match ev {
            Event::Net(e) => self.deliver_later(e),
            Event::Cut(pairs, until, reply) => {
                let dcs = self.cluster.topology.num_dcs() as u32;
                self.cut = pairs
                    .into_iter()
                    .filter(|(a, b)| *a < dcs && *b < dcs)
                    .map(|(a, b)| (DcId(a as u16), DcId(b as u16)))
                    .collect();
                self.cut_until = until;
                if self.cut.is_empty() {
                    info!("links healed");
                } else {
                    let names: Vec<String> = self
                        .cut
                        .iter()
                        .map(|(a, b)| {
                            let t = &self.cluster.topology.dcs;
                            format!("{}-{}", t[a.0 as usize], t[b.0 as usize])
                        })
                        .collect();
                    warn!(links = %names.join(","), until_ms = until / 1_000_000, "links cut");
                }
                self.on_event(Event::Status(reply));
            }
            Event::Status(reply) => {
                let node = self.locals.keys().next().copied().unwrap_or(NodeId(u32::MAX));
                let server = match self.locals.values().next() {
                    Some(Local {
                        role: Role::Server(s), ..
                    }) => Some(s),
                    _ => None,
                };
                let st = Status {
                    node,
                    protocol: self.cluster.file.protocol.clone(),
                    peers_connected: self.stats.peers.load(Ordering::Relaxed),
                    replayed: self.replayed,
                    role: server.and_then(|s| s.role()),
                    locked: server.and_then(|s| s.locked_keys()).map(|n| n as u64),
                    queued: self.due.len() as u64,
                    uptime_ms: self.started.elapsed().as_millis() as u64,
                    counters: self.stats.snapshot(),
                    applied: server.and_then(|s| s.outcomes()).map(|o| {
                        let c = o.iter().filter(|(_, c)| *c).count() as u64;
                        (c, o.len() as u64 - c)
                    }),
                    journal_entries: self.journal.as_ref().map(|j| j.len()),
                    journal_syncs: self.journal.as_ref().map(|_| self.syncs),
                };
                let _ = reply.try_send(encode(&Wire::<P::Msg>::Status(st)));
            }
            Event::Report(reply) => {
                let Some(Local {
                    role: Role::Server(s), ..
                }) = self.locals.values().next()
                else {
                    return;
                };
                let rep = NodeReport {
                    snapshot: s.snapshot(),
                    locked: s.locked_keys().map(|n| n as u64),
                    outcomes: s.outcomes(),
                    holds: s.lock_holds().cloned(),
                    counters: self.stats.snapshot(),
                };
                let _ = reply.try_send(encode(&Wire::<P::Msg>::Report(Box::new(rep))));
            }
        }
    }

    fn on_request(&mut self, r: Request) {
        match r {
            Request::Counters(reply) => {
                let _ = reply.send(self.stats.snapshot());
            }
            Request::Submit(job) => self.submit(job),
            Request::Extend { txn, args } => {
                if let Some((node, _)) = self.busy.get(&txn) {
                    let (node, now) = (*node, self.clock.now());
                    self.call(node, 0, now, move |r, cx| {
                        if let Role::Client(c) = r {
                            c.extend(txn, args, cx)
                        }
                    });
                }
            }
            Request::InFlight(reply) => {
                let v = self
                    .locals
                    .values()
                    .filter_map(|l| match &l.role {
                        Role::Client(c) => c.in_flight(),
                        Role::Server(_) => None,
                    })
                    .collect();
                let _ = reply.send(v);
            }
        }
    }

    fn submit(&mut self, job: Job) {
        let pos = self
            .free
            .iter()
            .position(|n| job.dc.is_none_or(|d| self.layout.dc_of(*n) == d));
        let Some(pos) = pos else {
            self.waiting.push_back(job);
            return;
        };
        let Job {
            call, reply, pauses, ..
        } = job;
        let node = self.free.swap_remove(pos);
        let seq = self.next_seq.entry(node).or_insert(0);
        *seq += 1;
        let txn = TxnId {
            client: self.client_ids[&node].0,
            seq: *seq,
        };
        self.busy.insert(txn, (node, reply));
        if let Some(p) = pauses {
            self.pauses.insert(txn, p);
        }
        let now = self.clock.now();
        self.call(node, 0, now, move |r, cx| {
            if let Role::Client(c) = r {
                c.submit(txn, call, cx)
            }
        });
    }

    /// Gives waiting transactions the slots that came free.
    fn serve_waiting(&mut self) {
        let mut n = self.waiting.len();
        while n > 0 && !self.free.is_empty() {
            n -= 1;
            let job = self.waiting.pop_front().expect("waiting");
            if job.reply.is_closed() {
                continue;
            }
            self.submit(job);
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.due.keys().next().map(|(t, _)| self.clock.instant(*t))
    }

    /// The event loop, until its inbox closes or `stop` resolves (a server told to stop
    /// by SIGTERM or SIGINT): then the journal is forced to disk, and the loop returns
    /// what stopped it. Every batch ends (journal flushed, messages sent) before the
    /// loop waits again, so a stop between batches leaves nothing half done.
    async fn run(
        mut self,
        mut inbox: mpsc::Receiver<Event<P::Msg>>,
        mut reqs: Option<mpsc::Receiver<Request>>,
        stop: Option<std::pin::Pin<Box<dyn std::future::Future<Output = &'static str> + Send>>>,
    ) -> Option<&'static str> {
        let mut stop = stop;
        loop {
            let deadline = self.next_deadline();
            tokio::select! {
                why = async { match &mut stop { Some(s) => s.as_mut().await, None => std::future::pending().await } } => {
                    if let Some(j) = &mut self.journal {
                        if let Err(e) = j.sync() {
                            warn!("journal sync at stop failed: {e}");
                        }
                    }
                    return Some(why);
                }
                ev = inbox.recv() => match ev {
                    Some(ev) => self.on_event(ev),
                    None => return None,
                },
                r = async { match &mut reqs { Some(rx) => rx.recv().await, None => std::future::pending().await } } => match r {
                    Some(r) => self.on_request(r),
                    None => return None,
                },
                _ = async { match deadline { Some(d) => tokio::time::sleep_until(d.into()).await, None => std::future::pending().await } } => {}
            }
            for _ in 0..INBOX {
                match inbox.try_recv() {
                    Ok(ev) => self.on_event(ev),
                    Err(_) => break,
                }
            }
            if let Some(rx) = &mut reqs {
                while let Ok(r) = rx.try_recv() {
                    self.on_request(r);
                }
            }
            self.run_due();
            self.serve_waiting();
            self.end_batch();
        }
    }
}

/// Exits the process with a message: the journal is gone, and carrying on would break
/// the durability the node promises. (Not a panic: a clean, logged exit.)
fn panic_free_exit(msg: &str) -> ! {
    tracing::error!("{msg}; stopping");
    eprintln!("error: {msg}; stopping");
    std::process::exit(3)
}

/// Reads frames from a connection and feeds the event loop. Returns why it stopped.
async fn read_loop<M: serde::de::DeserializeOwned + Send + 'static>(
    mut rd: tokio::net::tcp::OwnedReadHalf,
    mut fr: FrameReader,
    allowed_from: Vec<NodeId>,
    hosted: Arc<Vec<NodeId>>,
    inbox: mpsc::Sender<Event<M>>,
    reply: mpsc::Sender<Vec<u8>>,
) -> String {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        loop {
            let body = match fr.next_frame() {
                Ok(Some(b)) => b,
                Ok(None) => break,
                Err(e) => return format!("bad frame: {e}"),
            };
            let w: Wire<M> = match crate::decode(&body) {
                Ok(w) => w,
                Err(e) => return format!("bad frame: {e}"),
            };
            let ev = match w {
                Wire::Msg(e) => {
                    if !allowed_from.contains(&e.from) {
                        return format!("message from {}, which this connection did not introduce", e.from);
                    }
                    if !hosted.contains(&e.to) {
                        return format!("message for {}, which this process does not host", e.to);
                    }
                    Event::Net(e)
                }
                Wire::StatusReq => Event::Status(reply.clone()),
                Wire::ReportReq => Event::Report(reply.clone()),
                Wire::Cut { pairs, until } => Event::Cut(pairs, until, reply.clone()),
                Wire::Refused { reason } => return format!("refused by peer: {reason}"),
                other => return format!("unexpected {} frame", wire_name(&other)),
            };
            if inbox.send(ev).await.is_err() {
                return "process stopping".into();
            }
        }
        match rd.read(&mut buf).await {
            Ok(0) => return "closed by peer".into(),
            Ok(n) => fr.push(&buf[..n]),
            Err(e) => return format!("read error: {e}"),
        }
    }
}

fn wire_name<M>(w: &Wire<M>) -> &'static str {
    match w {
        Wire::Hello { .. } => "Hello",
        Wire::Refused { .. } => "Refused",
        Wire::Msg(_) => "Msg",
        Wire::StatusReq => "StatusReq",
        Wire::Status(_) => "Status",
        Wire::ReportReq => "ReportReq",
        Wire::Report(_) => "Report",
        Wire::Cut { .. } => "Cut",
    }
}

/// Writes queued frames to a connection until it fails or the queue closes. Frames are
/// batched into one `write` while more are queued.
async fn write_loop(wr: &mut tokio::net::tcp::OwnedWriteHalf, rx: &mut mpsc::Receiver<Vec<u8>>) -> Result<(), String> {
    let mut batch = Vec::with_capacity(64 * 1024);
    while let Some(f) = rx.recv().await {
        batch.clear();
        batch.extend_from_slice(&f);
        while batch.len() < 256 * 1024 {
            match rx.try_recv() {
                Ok(f) => batch.extend_from_slice(&f),
                Err(_) => break,
            }
        }
        wr.write_all(&batch).await.map_err(|e| format!("write error: {e}"))?;
    }
    Ok(())
}

/// Keeps one outgoing connection to server `peer` up, re-dialling with back-off, and
/// writes the frames queued for it.
async fn dial_loop<M: serde::de::DeserializeOwned + Send + 'static>(
    peer: NodeId,
    addr: SocketAddr,
    hello: Vec<u8>,
    mut rx: mpsc::Receiver<Vec<u8>>,
    hosted: Arc<Vec<NodeId>>,
    inbox: mpsc::Sender<Event<M>>,
    stats: Arc<Stats>,
) {
    let mut backoff = BACKOFF_MIN;
    let mut failures = 0u32;
    loop {
        if rx.is_closed() {
            if failures >= DOWN_AFTER {
                stats.unreachable.fetch_sub(1, Ordering::Relaxed);
            }
            return; // the process stopped sending: nothing left to deliver
        }
        match TcpStream::connect(addr).await {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                if failures > 0 {
                    info!(%peer, %addr, "connected after {failures} failed attempts");
                }
                if failures >= DOWN_AFTER {
                    stats.unreachable.fetch_sub(1, Ordering::Relaxed);
                }
                failures = 0;
                backoff = BACKOFF_MIN;
                let (rd, mut wr) = s.into_split();
                if wr.write_all(&hello).await.is_err() {
                    continue;
                }
                stats.peers.fetch_add(1, Ordering::Relaxed);
                // The server answers clients on this connection; it may also refuse it.
                let (dummy_tx, _) = mpsc::channel(1);
                let mut reader = tokio::spawn(read_loop::<M>(
                    rd,
                    FrameReader::new(),
                    vec![peer],
                    hosted.clone(),
                    inbox.clone(),
                    dummy_tx,
                ));
                let why = tokio::select! {
                    r = write_loop(&mut wr, &mut rx) => match r {
                        Ok(()) => { reader.abort(); stats.peers.fetch_sub(1, Ordering::Relaxed); return; }
                        Err(e) => e,
                    },
                    r = &mut reader => r.unwrap_or_else(|e| format!("reader failed: {e}")),
                };
                reader.abort();
                stats.peers.fetch_sub(1, Ordering::Relaxed);
                warn!(%peer, %addr, "connection lost: {why}; re-dialling");
                if let Some(r) = why.strip_prefix("refused by peer: ") {
                    *stats.refused.lock().expect("stats lock") = Some(format!("{peer} refused the connection: {r}"));
                    // Refused (slot in use, another cluster): do not hammer the server.
                    tokio::time::sleep(BACKOFF_MAX).await;
                }
            }
            Err(e) => {
                failures += 1;
                if failures == DOWN_AFTER {
                    stats.unreachable.fetch_add(1, Ordering::Relaxed);
                }
                if failures == 1 || failures.is_power_of_two() {
                    debug!(%peer, %addr, "dial failed ({failures} times): {e}");
                }
                let jitter = (peer.0 as u64 * 7919 + failures as u64 * 104_729) % (backoff.as_millis() as u64 / 4 + 1);
                tokio::time::sleep(backoff + Duration::from_millis(jitter)).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}

/// What each connection a process accepts is checked against and delivered to.
struct Acceptor<M> {
    /// The cluster a peer's `Hello` must name.
    cluster_id: u64,
    layout: Arc<Layout>,
    /// The nodes this process hosts (frames for any other are refused).
    hosted: Arc<Vec<NodeId>>,
    /// Where replies to a client slot go.
    routes: Routes,
    /// The event loop.
    inbox: mpsc::Sender<Event<M>>,
    /// Servers connected to this process, by the node id their `Hello` claimed, and
    /// from where (a second claim of one id is logged: a restart, or an impostor).
    servers_in: Arc<std::sync::Mutex<HashMap<NodeId, (u64, SocketAddr)>>>,
}

impl<M> Clone for Acceptor<M> {
    fn clone(&self) -> Self {
        Acceptor {
            cluster_id: self.cluster_id,
            layout: self.layout.clone(),
            hosted: self.hosted.clone(),
            routes: self.routes.clone(),
            inbox: self.inbox.clone(),
            servers_in: self.servers_in.clone(),
        }
    }
}

/// Takes one accepted connection (number `conn`): reads the `Hello`, registers routes
/// to the client slots it names, then reads until it closes.
async fn accept_conn<M: serde::Serialize + serde::de::DeserializeOwned + Send + 'static>(
    s: TcpStream,
    peer_addr: SocketAddr,
    conn: u64,
    acceptor: Acceptor<M>,
) {
    let Acceptor {
        cluster_id,
        layout,
        hosted,
        routes,
        inbox,
        servers_in,
    } = acceptor;
    let _ = s.set_nodelay(true);
    let (mut rd, mut wr) = s.into_split();
    let mut fr = FrameReader::new();
    let mut buf = vec![0u8; 4096];
    let hello = tokio::time::timeout(HELLO_TIMEOUT, async {
        loop {
            match fr.next_frame() {
                Ok(Some(b)) => return crate::decode::<Wire<M>>(&b).map_err(|e| format!("bad frame: {e}")),
                Ok(None) => {}
                Err(e) => return Err(format!("bad frame: {e}")),
            }
            match rd.read(&mut buf).await {
                Ok(0) => return Err("closed before Hello".to_string()),
                Ok(n) => fr.push(&buf[..n]),
                Err(e) => return Err(format!("read error: {e}")),
            }
        }
    })
    .await
    .unwrap_or_else(|_| Err("no Hello within 5 s".into()));
    async fn refuse<M: serde::Serialize>(wr: &mut tokio::net::tcp::OwnedWriteHalf, peer: SocketAddr, reason: String) {
        warn!(%peer, "refusing connection: {reason}");
        let _ = wr.write_all(&encode(&Wire::<M>::Refused { reason })).await;
    }
    let nodes = match hello {
        Ok(Wire::Hello { cluster, nodes }) if cluster == cluster_id => nodes,
        Ok(Wire::Hello { cluster, .. }) => {
            return refuse::<M>(
                &mut wr,
                peer_addr,
                format!("cluster {cluster} is not this cluster ({cluster_id})"),
            )
            .await;
        }
        Ok(other) => {
            return refuse::<M>(&mut wr, peer_addr, format!("expected Hello, got {}", wire_name(&other))).await
        }
        Err(e) => {
            warn!(%peer_addr, "dropping connection: {e}");
            return;
        }
    };
    if let Some(n) = nodes.iter().find(|n| n.0 >= layout.num_nodes()) {
        return refuse::<M>(&mut wr, peer_addr, format!("{n} is not a node of this cluster")).await;
    }
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(QUEUE);
    let clients: Vec<NodeId> = nodes.iter().copied().filter(|n| !layout.is_server(*n)).collect();
    if !clients.is_empty() {
        if let Err(n) = routes.claim(&clients, &Route { conn, tx: tx.clone() }) {
            return refuse::<M>(
                &mut wr,
                peer_addr,
                format!("client slot {n} is in use by another connection"),
            )
            .await;
        }
    }
    debug!(%peer_addr, ?nodes, "accepted");
    let servers: Vec<NodeId> = nodes.iter().copied().filter(|n| layout.is_server(*n)).collect();
    {
        let mut m = servers_in.lock().expect("servers lock");
        for n in &servers {
            if let Some((_, before)) = m.insert(*n, (conn, peer_addr)) {
                info!(
                    node = n.0,
                    %peer_addr,
                    %before,
                    "a connection claims a server node already connected (a restart whose old connection is not yet closed, or an impostor)"
                );
            }
        }
    }
    let writer = tokio::spawn(async move {
        let _ = write_loop(&mut wr, &mut rx).await;
    });
    let why = read_loop::<M>(rd, fr, nodes, hosted, inbox, tx).await;
    routes.release(conn);
    {
        let mut m = servers_in.lock().expect("servers lock");
        for n in &servers {
            if m.get(n).is_some_and(|(c, _)| *c == conn) {
                m.remove(n);
            }
        }
    }
    writer.abort();
    if why == "closed by peer" {
        debug!(%peer_addr, "connection closed");
    } else {
        warn!(%peer_addr, "dropping connection: {why}");
    }
}

/// Starts one dialler (and its queue, as the route) per server of `cluster` but `me`.
fn dial_servers<M: serde::de::DeserializeOwned + Send + 'static>(
    cluster: &Cluster,
    me: Option<NodeId>,
    hello: Vec<u8>,
    routes: &Routes,
    hosted: &Arc<Vec<NodeId>>,
    inbox: &mpsc::Sender<Event<M>>,
    stats: &Arc<Stats>,
) {
    for (i, a) in cluster.addrs.iter().enumerate() {
        let peer = NodeId(i as u32);
        if Some(peer) == me {
            continue;
        }
        let (tx, rx) = mpsc::channel(QUEUE);
        routes.insert(
            peer,
            Route {
                conn: u64::MAX - i as u64,
                tx,
            },
        );
        tokio::spawn(dial_loop::<M>(
            peer,
            *a,
            hello.clone(),
            rx,
            hosted.clone(),
            inbox.clone(),
            stats.clone(),
        ));
    }
}

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
fn begin_without_state<P: Protocol>(p: &P, cluster: &Cluster, node: NodeId) -> Result<Begin, String> {
    if !cluster.started_before(node) {
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
    let now = core.clock.now();
    match dir {
        Some(dir) => {
            let header = crate::journal::Header::new(&cluster.file.protocol, node, cluster.id());
            let journal = Journal::open(&dir, &header).map_err(|e| match e {
                crate::journal::JournalError::Mismatch(why) => {
                    format!("node {}: refusing the journal in {}: {why}", node.0, dir.display())
                }
                crate::journal::JournalError::Damaged(why) => format!("node {}: {why}", node.0),
                e => format!("journal in {}: {e}", dir.display()),
            })?;
            let restored = core
                .restore(&env, node, &journal)
                .map_err(|e| format!("node {}: journal in {}: {e}", node.0, dir.display()))?;
            core.replaying = true;
            journal
                .replay(|e: Entry<P::Msg>| {
                    core.replayed += 1;
                    core.replay(node, e);
                })
                .map_err(|e| format!("journal in {}: {e}", dir.display()))?;
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
            } else if begin_without_state(&p, &cluster, node)? == Begin::Recover {
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
            if begin_without_state(&p, &cluster, node)? == Begin::Recover {
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
    let hello = encode(&Wire::<P::Msg>::Hello {
        cluster: cluster.id(),
        nodes: vec![node],
    });
    dial_servers::<P::Msg>(&cluster, Some(node), hello, &routes, &hosted, &inbox_tx, &stats);
    let acceptor = Acceptor {
        cluster_id: cluster.id(),
        layout: env.layout.clone(),
        hosted: hosted.clone(),
        routes: routes.clone(),
        inbox: inbox_tx.clone(),
        servers_in: Default::default(),
    };
    tokio::spawn(async move {
        let mut conn = 0u64;
        loop {
            match listener.accept().await {
                Ok((s, a)) => {
                    conn += 1;
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
        info!(node = node.0, addr = %maddr, "metrics on http://{maddr}/metrics");
        tokio::spawn(crate::metrics::serve::<P::Msg>(ml, inbox_tx.clone(), node));
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

/// A client process: hosts client actors on a set of slots and runs transactions on
/// them. Dropping every [`ClientHost`] clone stops it.
#[derive(Clone)]
pub struct ClientHost {
    tx: mpsc::Sender<Request>,
    stats: Arc<Stats>,
    /// The slots it hosts, as nodes.
    pub nodes: Arc<Vec<NodeId>>,
}

impl ClientHost {
    /// Starts a client process hosting client slots `slots` of `cluster`. Client ids
    /// are made unique across runs from the clock: `(seconds since epoch mod 4e6) * 1024 + slot`.
    pub fn start<P: Protocol>(p: P, cluster: Arc<Cluster>, slots: &[u32]) -> Result<ClientHost, String> {
        let env = env_for(&p, &cluster)?;
        if let Some(s) = slots.iter().find(|s| **s >= cluster.file.client_slots) {
            return Err(format!(
                "client slot {s} does not exist (the cluster file reserves {})",
                cluster.file.client_slots
            ));
        }
        let routes = Routes::default();
        let stats = Arc::new(Stats::default());
        let (inbox_tx, inbox_rx) = mpsc::channel(INBOX);
        let (req_tx, req_rx) = mpsc::channel(1024);
        let nodes: Vec<NodeId> = slots.iter().map(|s| cluster.slot_node(*s)).collect();
        let hosted = Arc::new(nodes.clone());
        let mut core: Core<P> = Core::new(p.clone(), cluster.clone(), &env, stats.clone(), routes.clone());
        let session = (core.clock.now() / 1_000_000_000 % 4_000_000) as u32;
        for (slot, node) in slots.iter().zip(&nodes) {
            let id = ClientId(session * 1024 + slot);
            core.client_ids.insert(*node, id);
            core.locals.insert(
                *node,
                Local {
                    role: Role::Client(p.client(&env, *node, id)),
                    rng: rng_for(cluster.file.seed ^ session as u64, node.0 as u64),
                    timers: HashMap::default(),
                },
            );
            core.free.push(*node);
        }
        core.free.reverse();
        let now = core.clock.now();
        for n in &nodes {
            core.call(*n, 0, now, |r, cx| {
                if let Role::Client(c) = r {
                    c.on_start(cx)
                }
            });
        }
        let hello = encode(&Wire::<P::Msg>::Hello {
            cluster: cluster.id(),
            nodes: nodes.clone(),
        });
        dial_servers::<P::Msg>(&cluster, None, hello, &routes, &hosted, &inbox_tx, &stats);
        drop(inbox_tx);
        tokio::spawn(async move {
            core.end_batch();
            core.run(inbox_rx, Some(req_rx), None).await;
        });
        Ok(ClientHost {
            tx: req_tx,
            stats,
            nodes: hosted,
        })
    }

    /// Hands `call` to the event loop; the receiver gets its record.
    async fn submit(
        &self,
        call: Call,
        dc: Option<DcId>,
        pauses: Option<mpsc::UnboundedSender<(TxnId, Option<Value>)>>,
    ) -> Result<oneshot::Receiver<TxnRecord>, RunError> {
        let (reply, rx) = oneshot::channel();
        let job = Job {
            call,
            dc,
            reply,
            pauses,
        };
        self.tx
            .send(Request::Submit(job))
            .await
            .map_err(|_| RunError::Stopped)?;
        Ok(rx)
    }

    /// Runs `call` on a free slot (in `dc`, if given) and returns its record, whatever
    /// its outcome. `None`: the client process has stopped.
    pub async fn run(&self, call: Call, dc: Option<DcId>) -> Option<TxnRecord> {
        self.submit(call, dc, None).await.ok()?.await.ok()
    }

    /// Like [`ClientHost::run`], but gives up waiting after `timeout` (the transaction
    /// goes on; its slot is busy until it ends).
    pub async fn run_timeout(&self, call: Call, dc: Option<DcId>, timeout: Duration) -> Result<TxnRecord, RunError> {
        let rx = self.submit(call, dc, None).await?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) => Err(RunError::Stopped),
            Err(_) => Err(RunError::TimedOut),
        }
    }

    /// Starts interactive transaction `call` (a [`script`] program; its first
    /// operations in its arguments) on a free slot (in `dc`, if given). The handle
    /// reports each pause and the end.
    pub async fn start_interactive(&self, call: Call, dc: Option<DcId>) -> Result<Interactive, RunError> {
        let (ptx, pauses) = mpsc::unbounded_channel();
        let done = self.submit(call, dc, Some(ptx)).await?;
        Ok(Interactive {
            tx: self.tx.clone(),
            pauses,
            done,
            txn: None,
        })
    }

    /// Records (outcome unknown) of the transactions still running.
    pub async fn in_flight(&self) -> Vec<TxnRecord> {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Request::InFlight(tx)).await.is_err() {
            return vec![];
        }
        rx.await.unwrap_or_default()
    }

    /// Servers this process has a live connection to.
    pub fn connected(&self) -> u32 {
        self.stats.peers.load(Ordering::Relaxed)
    }

    /// How many servers this process could not reach in its last few dials in a row
    /// (connection refused or timed out: down, or not started yet).
    pub fn unreachable(&self) -> u32 {
        self.stats.unreachable.load(Ordering::Relaxed)
    }

    /// Takes the records of attempts calls made before their last one (see
    /// `Stats::earlier_attempts`): a benchmark adds them to its history.
    pub fn take_earlier_attempts(&self) -> Vec<TxnRecord> {
        std::mem::take(&mut *self.stats.earlier_attempts.lock().expect("stats lock"))
    }

    /// Why a server last refused this process's connection, if one did.
    pub fn refused(&self) -> Option<String> {
        self.stats.refused.lock().expect("stats lock").clone()
    }

    /// The process's traffic counters.
    pub async fn counters(&self) -> Counters {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Request::Counters(tx)).await.is_err() {
            return Counters::default();
        }
        rx.await.unwrap_or_default()
    }
}

/// An interactive transaction running on a client process.
pub struct Interactive {
    tx: mpsc::Sender<Request>,
    pauses: mpsc::UnboundedReceiver<(TxnId, Option<Value>)>,
    done: oneshot::Receiver<TxnRecord>,
    txn: Option<TxnId>,
}

/// Where an interactive transaction has got to.
#[derive(Debug)]
pub enum Progress {
    /// It waits for the caller's next operations; the last read's value.
    Paused(Option<Value>),
    /// It ended (committed or aborted).
    Ended(TxnRecord),
}

impl Interactive {
    /// The transaction's id, once it has paused at least once.
    pub fn txn(&self) -> Option<TxnId> {
        self.txn
    }

    /// Waits up to `timeout` for the next pause or the end.
    pub async fn next(&mut self, timeout: Duration) -> Result<Progress, RunError> {
        let wait = async {
            tokio::select! {
                biased;
                p = self.pauses.recv() => match p {
                    Some((txn, v)) => {
                        self.txn = Some(txn);
                        Ok(Progress::Paused(v))
                    }
                    // The process dropped the transaction's pause channel: it ended.
                    None => (&mut self.done).await.map(Progress::Ended).map_err(|_| RunError::Stopped),
                },
                r = &mut self.done => r.map(Progress::Ended).map_err(|_| RunError::Stopped),
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .unwrap_or(Err(RunError::TimedOut))
    }

    /// Sends the caller's next operations (after a pause).
    pub async fn extend(&mut self, args: Vec<meridian_txn::Arg>) -> Result<(), RunError> {
        let txn = self.txn.ok_or(RunError::Stopped)?;
        self.tx
            .send(Request::Extend { txn, args })
            .await
            .map_err(|_| RunError::Stopped)
    }

    /// Like [`Interactive::extend`], without waiting for room in the process's queue
    /// (for `Drop` impls); `false` if it could not be sent.
    pub fn try_extend(&self, args: Vec<meridian_txn::Arg>) -> bool {
        match self.txn {
            Some(txn) => self.tx.try_send(Request::Extend { txn, args }).is_ok(),
            None => false,
        }
    }
}

/// Why [`ClientHost::run_timeout`] returned no record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunError {
    /// No outcome within the time allowed.
    TimedOut,
    /// The client process has stopped.
    Stopped,
}

/// Asks server `addr` of `cluster` one control question (`StatusReq` or `ReportReq`)
/// on a connection of its own, and returns the answer.
pub async fn ask<M: serde::Serialize + serde::de::DeserializeOwned>(
    cluster_id: u64,
    addr: SocketAddr,
    req: Wire<M>,
    timeout: Duration,
) -> Result<Wire<M>, String> {
    tokio::time::timeout(timeout, async {
        let mut s = TcpStream::connect(addr).await.map_err(|e| format!("{addr}: {e}"))?;
        let mut out = encode(&Wire::<M>::Hello {
            cluster: cluster_id,
            nodes: vec![],
        });
        out.extend_from_slice(&encode(&req));
        s.write_all(&out).await.map_err(|e| format!("{addr}: {e}"))?;
        let mut fr = FrameReader::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if let Some(b) = fr.next_frame().map_err(|e| format!("{addr}: {e}"))? {
                return match crate::decode::<Wire<M>>(&b).map_err(|e| format!("{addr}: {e}"))? {
                    Wire::Refused { reason } => Err(format!("{addr} refused: {reason}")),
                    w => Ok(w),
                };
            }
            let n = s.read(&mut buf).await.map_err(|e| format!("{addr}: {e}"))?;
            if n == 0 {
                return Err(format!("{addr} closed the connection"));
            }
            fr.push(&buf[..n]);
        }
    })
    .await
    .unwrap_or_else(|_| Err(format!("{addr}: no answer within {timeout:?}")))
}
