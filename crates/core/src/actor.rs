//! The sans-IO actor contract (docs/DESIGN.md, "The actor contract").
//!
//! Every protocol role is a plain struct implementing [`Actor`]. It never touches a
//! socket, a clock or a thread: inputs arrive through `on_*` calls, and everything it
//! wants done (send, set or cancel a timer, record a history entry, charge CPU work)
//! goes into the [`Ctx`] it is handed. A runtime (the simulator or the TCP runtime)
//! drains the context after each call.

use crate::history::TxnRecord;
use crate::ids::{NodeId, TxnId};
use crate::key::Value;
use crate::time::Time;
use rand::SeedableRng;

/// The deterministic random generator every runtime hands to actors.
pub type Rng = rand_xoshiro::Xoshiro256PlusPlus;

/// Builds a [`Rng`] from a seed and a stream number (e.g. a node id), so each actor
/// gets an independent, reproducible stream.
pub fn rng_for(seed: u64, stream: u64) -> Rng {
    let mut r = Rng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
    for _ in 0..(stream % 7) {
        let _ = rand::RngCore::next_u64(&mut r);
    }
    Rng::seed_from_u64(rand::RngCore::next_u64(&mut r) ^ stream.wrapping_mul(0xa076_1d64_78bd_642f))
}

/// A timer name chosen by the actor; setting a timer with an id that is already armed
/// re-arms it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerId(pub u64);

/// An effect requested by an actor.
#[derive(Debug, Clone)]
pub enum Command<M> {
    /// Send `msg` to node `to`.
    Send {
        /// Destination.
        to: NodeId,
        /// Payload.
        msg: M,
        /// WAN-hop count of the causal chain this send continues, when it is not the
        /// input being handled (a deferred reply); `None`: the current input's chain.
        chain: Option<u32>,
    },
    /// Fire `on_timer(id)` after `after` nanoseconds (replacing an armed timer `id`).
    SetTimer {
        /// Timer name.
        id: TimerId,
        /// Delay from now.
        after: Time,
    },
    /// Disarm timer `id` if armed.
    CancelTimer {
        /// Timer name.
        id: TimerId,
    },
    /// Something an operator should read in the node's log at INFO (a leader elected, a
    /// view changed): what the protocol did about a fault. The simulator ignores it.
    Note {
        /// One line, naming the shard or transaction it concerns.
        what: String,
    },
    /// A client's interactive transaction `txn` ran every operation its caller sent and
    /// waits for more (`output`: the last read's value). Runtimes pass it to the caller.
    AwaitInput {
        /// The transaction.
        txn: TxnId,
        /// The last read's value (`None`: the key is absent).
        output: Option<Value>,
    },
}

/// CPU work an actor reports while handling one input; the simulator turns it into
/// service time (per message + per key operation + per log sync).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Key operations performed (reads, writes, lock acquisitions, validations).
    pub key_ops: u32,
    /// Synchronous log writes (fsyncs).
    pub log_syncs: u32,
    /// Bytes appended to logs.
    pub log_bytes: u64,
    /// Key operations that must run on the node's one serial thread (a single-threaded
    /// validator): the simulator does not divide them by the node's cores.
    pub serial_ops: u32,
}

/// The context an actor acts through while handling one input.
pub struct Ctx<'a, M> {
    now: Time,
    me: NodeId,
    hops: u32,
    rng: &'a mut Rng,
    out: &'a mut Vec<Command<M>>,
    records: &'a mut Vec<TxnRecord>,
    work: Work,
}

impl<'a, M> Ctx<'a, M> {
    /// Creates a context (runtimes only).
    pub fn new(
        now: Time,
        me: NodeId,
        rng: &'a mut Rng,
        out: &'a mut Vec<Command<M>>,
        records: &'a mut Vec<TxnRecord>,
    ) -> Self {
        Ctx {
            now,
            me,
            hops: 0,
            rng,
            out,
            records,
            work: Work::default(),
        }
    }
    /// Sets the WAN-hop count of the input being handled (runtimes only).
    pub fn with_hops(mut self, hops: u32) -> Self {
        self.hops = hops;
        self
    }
    /// The WAN-hop count of the input being handled: an actor that answers a request
    /// later (after a lock wait, say) keeps it and replies with [`Ctx::send_on_chain`],
    /// so the reply continues the requester's chain, not the one that unblocked it.
    pub fn hops(&self) -> u32 {
        self.hops
    }
    /// Current time.
    pub fn now(&self) -> Time {
        self.now
    }
    /// The node this actor runs as.
    pub fn me(&self) -> NodeId {
        self.me
    }
    /// Deterministic randomness.
    pub fn rng(&mut self) -> &mut Rng {
        self.rng
    }
    /// Sends a message.
    pub fn send(&mut self, to: NodeId, msg: M) {
        self.out.push(Command::Send { to, msg, chain: None });
    }
    /// Sends a message continuing the causal chain whose hop count is `hops`.
    pub fn send_on_chain(&mut self, to: NodeId, msg: M, hops: u32) {
        self.out.push(Command::Send {
            to,
            msg,
            chain: Some(hops),
        });
    }
    /// Arms (or re-arms) a timer.
    pub fn set_timer(&mut self, after: Time, id: impl Into<TimerId>) {
        self.out.push(Command::SetTimer { id: id.into(), after });
    }
    /// Disarms a timer.
    pub fn cancel_timer(&mut self, id: impl Into<TimerId>) {
        self.out.push(Command::CancelTimer { id: id.into() });
    }
    /// Tells the caller of interactive transaction `txn` that it waits for the next
    /// operations (client roles only).
    pub fn await_input(&mut self, txn: TxnId, output: Option<Value>) {
        self.out.push(Command::AwaitInput { txn, output });
    }
    /// Notes for the node's operator what the protocol did about a fault (see
    /// [`Command::Note`]); rare events only, never per transaction.
    pub fn note(&mut self, what: impl Into<String>) {
        self.out.push(Command::Note { what: what.into() });
    }
    /// Records a finished (or abandoned) transaction in the history.
    pub fn record(&mut self, rec: TxnRecord) {
        self.records.push(rec);
    }
    /// Charges `n` key operations of CPU work.
    pub fn charge_ops(&mut self, n: u32) {
        self.work.key_ops += n;
    }
    /// Charges `n` key operations that run on the node's one serial thread (see
    /// [`Work::serial_ops`]).
    pub fn charge_serial_ops(&mut self, n: u32) {
        self.work.serial_ops += n;
    }
    /// Charges one synchronous log write of `bytes` bytes.
    pub fn charge_log_sync(&mut self, bytes: u64) {
        self.work.log_syncs += 1;
        self.work.log_bytes += bytes;
    }
    /// Charges an asynchronous (not synced) log append of `bytes` bytes.
    pub fn charge_log_append(&mut self, bytes: u64) {
        self.work.log_bytes += bytes;
    }
    /// The work charged so far (runtimes read it after the call returns).
    pub fn work(&self) -> Work {
        self.work
    }
}

/// A protocol role: a deterministic state machine driven by messages and timers.
pub trait Actor {
    /// The protocol's message enum.
    type Msg;
    /// Called once when the node starts.
    fn on_start(&mut self, _cx: &mut Ctx<'_, Self::Msg>) {}
    /// Called for every delivered message.
    fn on_message(&mut self, from: NodeId, msg: Self::Msg, cx: &mut Ctx<'_, Self::Msg>);
    /// Called when an armed timer fires.
    fn on_timer(&mut self, _timer: TimerId, _cx: &mut Ctx<'_, Self::Msg>) {}
    /// The node crashed: drop every piece of volatile state, keep only what is on the
    /// (simulated) disk, i.e. the logs. Armed timers are discarded by the runtime.
    fn on_crash(&mut self) {}
    /// The node restarted after a crash: rebuild from the logs.
    fn on_recover(&mut self, cx: &mut Ctx<'_, Self::Msg>) {
        self.on_start(cx)
    }
}
