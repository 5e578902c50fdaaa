//! The client frame and the bookkeeping every protocol's client shares: the history
//! record of a transaction from start to outcome, stepping its program, recording its
//! reads, numbering its writes as versions, interactive transactions, and the end.
//!
//! `client_struct!` declares a role's `Client` (and, for an interactive role, its
//! `Current`) with the fields the frame works on. `client_frame!` writes what every
//! client role does the same way: its `Actor`
//! entry points (a crash forgets the transaction in flight) and, for an interactive
//! client, `submit`, `in_flight`, `extend`, `step` and `finish`. Each protocol keeps
//! its own `Current` (a [`Txn`] `t` and what it tracks besides: shards touched, phase,
//! votes, ...) and writes only what its paper specifies: what it does with each step of
//! the program (`on_step`), its messages (`receive`) and timers (`on_tick`).

use meridian_core::{
    AbortReason, ClientId, Ctx, DcId, Key, NodeId, Outcome, ReadRec, TimerId, TxnId, TxnRecord, Value, VersionId,
    WriteRec,
};
use meridian_txn::{Arg, Call, Execution, Registry, Step};
use std::collections::BTreeMap;

/// A client's transaction as every protocol keeps it: its history record and its
/// program's execution. Each protocol's `Current` holds one as `t`, beside what that
/// protocol tracks (its phase, shards touched, votes, ...).
#[derive(Clone, Debug)]
pub struct Txn {
    /// The history record, from start to outcome.
    pub rec: TxnRecord,
    /// The program, stepped as its reads come in.
    pub exec: Execution,
}

impl Txn {
    /// The program finished and the transaction goes to commit: numbers its writes
    /// ([`number_writes`]), disarms the client's read timer `read` and stamps the
    /// commit's start now. Returns each key's final write.
    pub fn to_commit<M>(
        &mut self,
        writes: Vec<(Key, Value)>,
        read: impl Into<TimerId>,
        cx: &mut Ctx<'_, M>,
    ) -> BTreeMap<Key, (VersionId, Value)> {
        let finals = number_writes(&mut self.rec, writes);
        cx.cancel_timer(read);
        self.rec.commit_start = Some(cx.now());
        finals
    }
}

crate::kit::timers::timers! {
    /// The timers of a client that reads, hands its commit on and asks for the
    /// outcome, and runs interactive transactions (2PC, Replicated Commit,
    /// hierarchical validation): a read unanswered (`Read`, the whole wait), an
    /// outcome late (`Status`), a caller idle (`Idle`), a read to send again
    /// (`Resend`, see [`read_sent`]). A client that ships its whole transaction and
    /// asks for the outcome (CrossStitch, Paxos Commit) arms only `Status`.
    pub enum ClientTimer {
        Read = 1,
        Status = 2,
        Idle = 3,
        Resend = 4,
    }
}

/// A read (or a batch of reads) went out: arms the read's deadline (`Read`, after
/// `env.timeouts.read`) and its re-send (`Resend`, after `env.timeouts.failover`).
///
/// A read unanswered for the fail-over time is sent again to the servers that have not
/// answered, every fail-over time, until the deadline. A read to a server that crashed
/// was lost with it; without the re-send, a server back within a second left every
/// client that had read from it waiting out the whole deadline (5 s; issue found at
/// stop 46, `a_short_server_crash_costs_no_read_deadline` in the simulator's fault
/// tests). Servers answer a repeated read once more (a lock already held or queued is
/// not taken twice: [`crate::kit::reads::PendingReads`]); the client takes the first
/// answer per key.
pub fn read_sent<M>(env: &crate::Env, cx: &mut Ctx<'_, M>) {
    cx.set_timer(env.timeouts.read, ClientTimer::Read);
    cx.set_timer(env.timeouts.failover, ClientTimer::Resend);
}

/// Every read of the batch is in: disarms the read's deadline and re-send.
pub fn reads_in<M>(cx: &mut Ctx<'_, M>) {
    cx.cancel_timer(ClientTimer::Read);
    cx.cancel_timer(ClientTimer::Resend);
}

/// Which client runs a transaction, and in which DC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Who {
    /// The client.
    pub id: ClientId,
    /// Its DC.
    pub dc: DcId,
}

impl Who {
    /// Client `id` on `node`.
    pub fn of(env: &crate::Env, node: NodeId, id: ClientId) -> Who {
        Who {
            id,
            dc: env.layout.dc_of(node),
        }
    }
}

/// The record of transaction `txn` of client `who`, starting now.
pub fn new_record<M>(txn: TxnId, who: Who, call: &Call, cx: &Ctx<'_, M>) -> TxnRecord {
    TxnRecord {
        id: txn,
        client: who.id,
        node: cx.me(),
        dc: who.dc,
        program: call.program.clone(),
        start: cx.now(),
        commit_start: None,
        end: None,
        outcome: Outcome::Unknown,
        abort_reason: None,
        reads: vec![],
        writes: vec![],
        wan_trips: 0,
    }
}

/// Numbers a finished program's writes as versions `txn:i` (recorded in `rec.writes`, in
/// program order) and returns each key's final write: what the transaction installs.
pub fn number_writes(rec: &mut TxnRecord, writes: Vec<(Key, Value)>) -> BTreeMap<Key, (VersionId, Value)> {
    let (recs, finals) = numbered(rec.id, writes);
    rec.writes = recs;
    finals
}

/// Transaction `txn`'s writes numbered as versions `txn:i`: the history's write records,
/// in program order, and each key's final write.
pub fn numbered(txn: TxnId, writes: Vec<(Key, Value)>) -> (Vec<WriteRec>, BTreeMap<Key, (VersionId, Value)>) {
    let version = |i: usize| VersionId { txn, seq: i as u32 };
    let recs = writes
        .iter()
        .enumerate()
        .map(|(i, (k, _))| WriteRec {
            key: k.clone(),
            version: version(i),
        })
        .collect();
    let mut finals = BTreeMap::new();
    for (i, (k, v)) in writes.into_iter().enumerate() {
        finals.insert(k, (version(i), v));
    }
    (recs, finals)
}

/// Ends a transaction's record with its outcome, now, and hands it to the runtime.
pub fn close<M>(mut rec: TxnRecord, outcome: Outcome, reason: Option<AbortReason>, cx: &mut Ctx<'_, M>) {
    rec.outcome = outcome;
    rec.abort_reason = reason.map(Box::new);
    rec.end = Some(cx.now());
    cx.record(rec);
}

/// The program's next step; a program error aborts the transaction with its message.
pub fn next_step(exec: &mut Execution, registry: &Registry) -> Step {
    match exec.step(registry) {
        Ok(s) => s,
        Err(e) => Step::Abort(AbortReason::Unrunnable(e.to_string())),
    }
}

/// Records that the transaction read `version` of `key` and hands the value to its
/// program.
pub fn supply_read(
    rec: &mut TxnRecord,
    exec: &mut Execution,
    key: Key,
    version: Option<VersionId>,
    value: Option<Value>,
) {
    rec.reads.push(ReadRec {
        key: key.clone(),
        version,
    });
    exec.supply(key, value);
}

/// An interactive client's next step: the program's next step (a program error aborts
/// the transaction with its message), except that a stop for the caller is taken here
/// and gives `None`: the transaction waits ([`Interactive::pause`]), its idle timer
/// (`idle`, after `env.timeouts.idle`) armed, and its caller has the program's output
/// so far.
pub fn advance<C: Interactive, M>(
    cur: &mut C,
    env: &crate::Env,
    idle: impl Into<TimerId>,
    cx: &mut Ctx<'_, M>,
) -> Option<Next> {
    match next_step(cur.exec_mut(), &env.registry) {
        Step::Read(key) => Some(Next::Read(key)),
        Step::Done { writes, .. } => Some(Next::Done(writes)),
        Step::Abort(reason) => Some(Next::Abort(reason)),
        Step::Wait { output } => {
            cur.pause();
            cx.set_timer(env.timeouts.idle, idle);
            cx.await_input(cur.txn(), output);
            None
        }
    }
}

/// What an interactive client does next ([`advance`]): a [`Step`] other than a stop for
/// the caller.
#[derive(Debug)]
pub enum Next {
    /// Read this key and supply its value ([`supply_read`]).
    Read(Key),
    /// The program finished; commit these writes (program order: [`number_writes`]).
    Done(Vec<(Key, Value)>),
    /// The program aborted itself (or faulted).
    Abort(AbortReason),
}

/// What [`extend`] and [`advance`] need of a client's current transaction.
pub trait Interactive {
    /// The transaction's id.
    fn txn(&self) -> TxnId;
    /// Whether it waits for its caller's next operations.
    fn waiting(&self) -> bool;
    /// Its program's execution.
    fn exec_mut(&mut self) -> &mut Execution;
    /// It stops to wait for its caller's next operations.
    fn pause(&mut self);
}

/// Hands the caller's next operations to `cur` if it is transaction `txn` and waits
/// for them: disarms the idle timer and returns true (the client then steps the
/// program). Anything else (no transaction, another one, one not waiting: a late or
/// repeated call) changes nothing and returns false.
pub fn extend<C: Interactive, M>(
    cur: Option<&mut C>,
    txn: TxnId,
    args: Vec<Arg>,
    idle: impl Into<TimerId>,
    cx: &mut Ctx<'_, M>,
) -> bool {
    let Some(cur) = cur else { return false };
    if cur.txn() != txn || !cur.waiting() {
        return false;
    }
    cx.cancel_timer(idle);
    cur.exec_mut().call.args.extend(args);
    true
}

/// Ends the client's transaction: disarms its `timers` and records the outcome.
pub fn finish<M, T: Into<TimerId> + Copy>(
    rec: TxnRecord,
    timers: &[T],
    outcome: Outcome,
    reason: Option<AbortReason>,
    cx: &mut Ctx<'_, M>,
) {
    for t in timers {
        cx.cancel_timer(*t);
    }
    close(rec, outcome, reason, cx);
}

/// The client frame every protocol client shares, for a `Client` whose transaction is
/// `self.cur: Option<Current>` and whose timers are the enum `$timer` (declared with
/// [`crate::kit::timers::timers!`]):
///
/// - `client_frame!($timer)`: the [`meridian_core::Actor`] impl. Messages go to the
///   client's `receive(from, msg, cx)`; timers, named, to its `on_tick(t: $timer, cx)`
///   (a timer id that is not the role's is ignored); a crash forgets the transaction
///   in flight (the runtime has taken it from `in_flight` as `Unknown`).
/// - `client_frame!($timer, interactive: $idle, begin: |t| Current { t, .. })`: that,
///   plus, for an interactive client whose `Current` holds a [`Txn`] `t` and a `phase`
///   with a `Waiting` state, and which takes each step of its program in
///   `on_step(next: Next, cx)`: `step` (runs the program to its next step through
///   [`advance`]), `finish` (disarms every `$timer` and records the outcome), the whole
///   [`crate::ClientRole`] impl and the [`Interactive`] impl of `Current`. `submit`
///   starts the record and the program, builds the transaction's state with `begin`
///   and steps it; `in_flight` is the record; `extend` resumes a transaction waiting
///   for its caller (`$idle` is the role's idle timer).
macro_rules! client_frame {
    ($timer:ident) => {
        impl meridian_core::Actor for Client {
            type Msg = Msg;

            fn on_message(&mut self, from: meridian_core::NodeId, msg: Msg, cx: &mut meridian_core::Ctx<'_, Msg>) {
                self.receive(from, msg, cx);
            }

            fn on_timer(&mut self, t: meridian_core::TimerId, cx: &mut meridian_core::Ctx<'_, Msg>) {
                if let Some(t) = $timer::of(t) {
                    self.on_tick(t, cx);
                }
            }

            fn on_crash(&mut self) {
                self.cur = None;
            }
        }
    };
    ($timer:ident, interactive: $idle:expr, begin: |$t:ident| $begin:expr) => {
        $crate::kit::client::client_frame!($timer);

        impl Client {
            /// Runs the transaction's program to its next step and takes it
            /// (`on_step`); a stop for the caller is taken by [`advance`].
            pub(super) fn step(&mut self, cx: &mut meridian_core::Ctx<'_, Msg>) {
                let Some(cur) = self.cur.as_mut() else { return };
                if let Some(next) = $crate::kit::client::advance(cur, &self.env, $idle, cx) {
                    self.on_step(next, cx);
                }
            }

            /// Ends the transaction: disarms every client timer and records `outcome`.
            pub(super) fn finish(
                &mut self,
                outcome: meridian_core::Outcome,
                reason: Option<meridian_core::AbortReason>,
                cx: &mut meridian_core::Ctx<'_, Msg>,
            ) {
                let Some(cur) = self.cur.take() else { return };
                $crate::kit::client::finish(cur.t.rec, $timer::ALL, outcome, reason, cx);
            }
        }

        impl $crate::ClientRole for Client {
            fn submit(
                &mut self,
                txn: meridian_core::TxnId,
                call: meridian_txn::Call,
                cx: &mut meridian_core::Ctx<'_, Msg>,
            ) {
                let $t = $crate::kit::client::Txn {
                    rec: $crate::kit::client::new_record(txn, self.who, &call, cx),
                    exec: meridian_txn::Execution::new(call),
                };
                self.cur = Some($begin);
                self.step(cx);
            }

            fn in_flight(&self) -> Option<meridian_core::TxnRecord> {
                self.cur.as_ref().map(|c| c.t.rec.clone())
            }

            fn extend(
                &mut self,
                txn: meridian_core::TxnId,
                args: Vec<meridian_txn::Arg>,
                cx: &mut meridian_core::Ctx<'_, Msg>,
            ) {
                if $crate::kit::client::extend(self.cur.as_mut(), txn, args, $idle, cx) {
                    self.step(cx);
                }
            }
        }

        impl $crate::kit::client::Interactive for Current {
            fn txn(&self) -> meridian_core::TxnId {
                self.t.rec.id
            }
            fn waiting(&self) -> bool {
                matches!(self.phase, Phase::Waiting)
            }
            fn exec_mut(&mut self) -> &mut meridian_txn::Execution {
                &mut self.t.exec
            }
            fn pause(&mut self) {
                self.phase = Phase::Waiting;
            }
        }
    };
}
pub(crate) use client_frame;

/// Declares the role's `Client` struct with the three fields [`client_frame!`] and the
/// kit's helpers work on, ahead of the role's own fields:
///
/// - `env`: the cluster's environment;
/// - `who`: which client this is, and in which DC ([`Who`]);
/// - `cur`: the transaction in flight, if any (the role's own `Current`).
///
/// An interactive role (the second form of [`client_frame!`]) declares its `Current`
/// in the same call, and gets the two fields that form works on ahead of its own: `t`
/// (the [`Txn`]) and `phase` (the role's `Phase`, with a `Waiting` state).
///
/// ```text
/// client_struct! {
///     /// A role's client.
///     pub struct Client {
///         /// The role's own state.
///         pub(super) leaders: Vec<NodeId>,
///     }
///     /// A transaction in flight (interactive roles only).
///     pub(super) struct Current {
///         pub(super) touched: BTreeSet<NodeId>,
///     }
/// }
/// ```
macro_rules! client_struct {
    (
        $(#[$attr:meta])*
        pub struct Client {
            $($(#[$fattr:meta])* $vis:vis $field:ident : $ty:ty),* $(,)?
        }
        $(#[$cattr:meta])*
        pub(super) struct Current {
            $($(#[$cfattr:meta])* $cvis:vis $cfield:ident : $cty:ty),* $(,)?
        }
    ) => {
        $crate::kit::client::client_struct! {
            $(#[$attr])*
            pub struct Client {
                $($(#[$fattr])* $vis $field: $ty),*
            }
        }

        $(#[$cattr])*
        #[derive(Clone, Debug)]
        pub(super) struct Current {
            /// The transaction's record and program.
            pub(super) t: $crate::kit::client::Txn,
            /// Where the transaction is.
            pub(super) phase: Phase,
            $($(#[$cfattr])* $cvis $cfield: $cty,)*
        }
    };
    (
        $(#[$attr:meta])*
        pub struct Client {
            $($(#[$fattr:meta])* $vis:vis $field:ident : $ty:ty),* $(,)?
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Debug)]
        pub struct Client {
            /// The cluster's environment.
            pub(super) env: $crate::Env,
            /// Which client this is, and in which DC.
            pub(super) who: $crate::kit::client::Who,
            /// The transaction in flight, if any.
            pub(super) cur: Option<Current>,
            $($(#[$fattr])* $vis $field: $ty,)*
        }
    };
}
pub(crate) use client_struct;
