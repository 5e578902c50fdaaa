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
//!   when it fails, and given up when a dial does not connect within
//!   `CONNECT_TIMEOUT` (2 s) or sent data stays unacknowledged for `USER_TIMEOUT` (5 s) (a
//!   network that drops packets silently). Server-to-server traffic goes only on the sender's own outgoing
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
/// A dial that has not connected by then is given up and tried again (after the
/// back-off): a SYN into a network that drops it is otherwise retried by the kernel
/// for two minutes, at growing intervals, long after the network is back.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A connection whose sent data stays unacknowledged this long is closed by the
/// kernel (`TCP_USER_TIMEOUT`) and re-dialled. Without it a connection across a
/// network that silently drops packets (a partition) stays "up" while TCP's
/// retransmissions back off, and after a 30 s cut healed, a DC stayed cut off for 25 s
/// more (the container nemesis, issue 60). On Linux 5.11 and later it also closes a
/// connection whose receiver has kept a zero window that long: a peer that has not
/// read for 5 s (frozen, or so overloaded that its event loop's inbox stayed full)
/// loses its incoming connections, and what was queued for it is dropped as lost
/// (protocols re-send what they must, as under the simulator's loss). A checkpoint's
/// pause (the copy of the server, which grows with its state: under 300 ms in the
/// runs of MEASUREMENTS.md, "State growth") stays well inside it.
const USER_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// How long the event loop paused for the last checkpoint (to copy the server).
    checkpoint_pause: std::time::Duration,
    /// The longest unforced flush of the journal while it was written.
    checkpoint_flush: std::time::Duration,
    /// The longest unforced flush of the journal between two checkpoints.
    idle_flush: std::time::Duration,
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
        retention: crate::cluster::retention_of(cluster.file.version_ttl.as_deref())?,
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
            checkpoint_pause: std::time::Duration::ZERO,
            checkpoint_flush: std::time::Duration::ZERO,
            idle_flush: std::time::Duration::ZERO,
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
    /// an image never checkpoints. The event loop pauses only to copy the server
    /// (the protocol's state, in memory); the image is encoded, written and forced to
    /// disk on a second thread ([`Journal::start_checkpoint`]), and
    /// [`Core::checkpoint_done`] logs it when it is there. No second checkpoint starts
    /// while one is being written.
    fn checkpoint(&mut self) {
        let Some((&node, local)) = self.locals.iter().next() else {
            return;
        };
        let Role::Server(s) = &local.role else { return };
        if !self.proto.has_image() {
            info!(
                protocol = self.proto.name(),
                "this protocol has no server image: its journal is never checkpointed, and a restart \
                 replays every input"
            );
            self.checkpoint_every = 0;
            return;
        }
        if self.journal.as_ref().is_none_or(|j| j.checkpointing()) {
            return;
        }
        let t0 = std::time::Instant::now();
        let mut timers: Vec<(u64, Time)> = self
            .due
            .iter()
            .filter_map(|((at, _), d)| match d {
                Due::Timer { node: n, id, gen } if *n == node && local.timers.get(id) == Some(gen) => Some((id.0, *at)),
                _ => None,
            })
            .collect();
        timers.sort_unstable();
        let (server, rng, proto) = (s.clone(), local.rng.clone(), self.proto.clone());
        let make = move || {
            let ck = Checkpoint {
                server: proto.image(&server).expect("the protocol has an image"),
                rng,
                timers,
            };
            postcard::to_stdvec(&ck).expect("checkpoints serialize")
        };
        let Some(j) = &mut self.journal else { return };
        if let Err(err) = j.start_checkpoint(make) {
            panic_free_exit(&format!("journal checkpoint failed: {err}"));
        }
        self.checkpoint_pause = t0.elapsed();
    }

    /// Logs a checkpoint written in the background once it is on disk (and makes it
    /// the journal's: [`Journal::poll_checkpoint`]).
    fn checkpoint_done(&mut self) {
        let Some(j) = &mut self.journal else { return };
        match j.poll_checkpoint(false) {
            Ok(None) => {}
            Ok(Some(done)) => {
                self.syncs += 1;
                let node = self.locals.keys().next().map_or(0, |n| n.0);
                info!(
                    node,
                    bytes = done.bytes,
                    inputs_dropped = done.inputs_dropped,
                    pause_us = self.checkpoint_pause.as_micros() as u64,
                    flush_max_us = std::mem::take(&mut self.checkpoint_flush).as_micros() as u64,
                    flush_max_between_us = std::mem::take(&mut self.idle_flush).as_micros() as u64,
                    encode_ms = done.make.as_millis() as u64,
                    write_ms = (done.total - done.make).as_millis() as u64,
                    "checkpointed the journal"
                );
            }
            Err(err) => panic_free_exit(&format!("journal checkpoint failed: {err}")),
        }
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
                // How long the loop waits to hand its inputs to the OS while a
                // checkpoint is written beside it, and, for comparison, otherwise
                // (logged with the checkpoint).
                let t0 = std::time::Instant::now();
                let r = j.flush();
                let slot = if j.checkpointing() {
                    &mut self.checkpoint_flush
                } else {
                    &mut self.idle_flush
                };
                *slot = (*slot).max(t0.elapsed());
                r
            };
            if let Err(err) = res {
                panic_free_exit(&format!("journal sync failed: {err}"));
            }
            if j.checkpointing() {
                self.checkpoint_done();
            } else if j.checkpoint_due(self.checkpoint_every) {
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
                    versions: server.and_then(|s| s.versions()),
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

mod client;
mod conn;
mod server;

pub use client::{ClientHost, Interactive, Progress, RunError};
pub use conn::ask;
pub use server::{serve, server_security, ServerOptions};
