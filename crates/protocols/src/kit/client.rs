//! Client-side bookkeeping every protocol's client shares: the history record of a
//! transaction from start to outcome, stepping its program, recording its reads,
//! numbering its writes as versions, interactive transactions, and the end.
//!
//! Each protocol keeps its own `Current` (what it tracks besides: shards touched,
//! phase, votes, ...); these functions take the parts they need.

use meridian_core::{
    AbortReason, ClientId, Ctx, DcId, Key, Outcome, ReadRec, Time, TimerId, TxnId, TxnRecord, Value, VersionId,
    WriteRec,
};
use meridian_txn::{Arg, Call, Execution, Registry, Step};
use std::collections::BTreeMap;

/// The record of transaction `txn` of `client` (in `dc`), starting now.
pub fn new_record<M>(txn: TxnId, client: ClientId, dc: DcId, call: &Call, cx: &Ctx<'_, M>) -> TxnRecord {
    TxnRecord {
        id: txn,
        client,
        node: cx.me(),
        dc,
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
    let txn = rec.id;
    let version = |i: usize| VersionId { txn, seq: i as u32 };
    rec.writes = writes
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
    finals
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

/// An interactive transaction stops for its caller: arms the idle timer (`idle` after
/// `after`) and hands the caller the program's output so far.
pub fn wait_for_caller<M>(
    txn: TxnId,
    output: Option<Value>,
    after: Time,
    idle: impl Into<TimerId>,
    cx: &mut Ctx<'_, M>,
) {
    cx.set_timer(after, idle);
    cx.await_input(txn, output);
}

/// What [`extend`] needs of a client's current transaction.
pub trait Interactive {
    /// The transaction's id.
    fn txn(&self) -> TxnId;
    /// Whether it waits for its caller's next operations.
    fn waiting(&self) -> bool;
    /// Its program's execution.
    fn exec_mut(&mut self) -> &mut Execution;
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

/// The parts of [`crate::ClientRole`] every interactive client writes the same way,
/// for a client whose transaction is `self.cur: Option<Current>` (with `rec`, `exec`
/// and a `phase` that has a `Waiting` state) and whose `step` runs the program:
/// `in_flight` and `extend` (inside the `impl ClientRole`), and, with `current`, the
/// [`Interactive`] impl of `Current` (outside it).
macro_rules! interactive_client {
    (role, $idle:expr) => {
        fn in_flight(&self) -> Option<meridian_core::TxnRecord> {
            self.cur.as_ref().map(|c| c.rec.clone())
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
    };
    (current) => {
        impl $crate::kit::client::Interactive for Current {
            fn txn(&self) -> meridian_core::TxnId {
                self.rec.id
            }
            fn waiting(&self) -> bool {
                matches!(self.phase, Phase::Waiting)
            }
            fn exec_mut(&mut self) -> &mut meridian_txn::Execution {
                &mut self.exec
            }
        }
    };
}
pub(crate) use interactive_client;
