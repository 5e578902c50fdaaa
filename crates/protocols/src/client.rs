//! Client-side bookkeeping every protocol's client shares: the history record of a
//! transaction from start to outcome, and the numbering of its writes as versions.

use meridian_core::{ClientId, Ctx, DcId, Key, Outcome, TxnId, TxnRecord, Value, VersionId, WriteRec};
use meridian_txn::Call;
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
pub fn close<M>(mut rec: TxnRecord, outcome: Outcome, reason: Option<String>, cx: &mut Ctx<'_, M>) {
    rec.outcome = outcome;
    rec.abort_reason = reason;
    rec.end = Some(cx.now());
    cx.record(rec);
}

/// Why a client aborts an interactive transaction whose caller went silent (after
/// `Timeouts::idle`).
pub const IDLE_ABORT: &str = "interactive transaction idle: no operation from its caller";

/// Why a client role without interactive transactions aborts a script that stops for
/// its caller's input.
pub const NOT_INTERACTIVE: &str = "this protocol does not run interactive transactions (send the whole script)";
