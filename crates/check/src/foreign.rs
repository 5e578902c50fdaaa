//! Histories written by other tools (issue 20), read into a [`History`] plus what
//! they say about version order.
//!
//! - **Jepsen transaction histories**, in EDN (`history.edn`: one operation map per
//!   line, or one vector of them) or in JSON (one object per line, or one array):
//!   `{:type :invoke|:ok|:fail|:info, :f :txn, :process P, :time T, :value [...]}` with
//!   micro-operations `[:r k v]`, `[:w k v]` (registers) and `[:append k v]`,
//!   `[:r k [v1 v2 ...]]` (list-append). An invocation is paired with the next
//!   completion of the same process: `:ok` is a commit (its value carries the reads),
//!   `:fail` an abort, `:info` or no completion an unknown outcome (its writes are the
//!   invocation's). Operations of other `:f`s and of the nemesis are skipped. With
//!   invocations, `:time` (or, without it, the position in the file) gives each
//!   transaction's real-time interval; a history of completions only has none.
//! - **Flat JSON**: `{"sessions": [[{"status": "committed"|"aborted"|"unknown",
//!   "ops": [["r", k, v], ["w", k, v], ["append", k, v]], "start": T, "end": T}, ...],
//!   ...]}`: a list of sessions, each a list of transactions in order. `start`/`end`
//!   are optional; session order is not taken as a constraint.
//!
//! Reads identify what they saw the way Elle does: a register read by its value
//! (written values must be unique per key, else the file is refused), a list read by
//! its last element, and a list read also fixes the order of every element it lists:
//! the list is a prefix of the key's final list (appends only extend it), so its
//! elements come in its order and before every append it does not list (Elle's
//! inference). Each read list becomes a version-order prefix for the checker. A read of a value that no
//! transaction wrote points at a version of no recorded transaction (reported as G1a).
//! Reads that follow the transaction's own write of the key are its own and skipped.
//! There are no replica states: durability is not judged.

use crate::History;
use meridian_core::{ClientId, DcId, Key, NodeId, Outcome, ReadRec, TxnId, TxnRecord, VersionId, WriteRec};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

/// A history format `meridian check` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `meridian sim --history` JSON lines.
    Meridian,
    /// Jepsen, EDN.
    JepsenEdn,
    /// Jepsen, JSON.
    JepsenJson,
    /// Flat JSON sessions.
    Flat,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "meridian" => Format::Meridian,
            "jepsen-edn" | "edn" => Format::JepsenEdn,
            "jepsen-json" => Format::JepsenJson,
            "flat" | "flat-json" => Format::Flat,
            _ => {
                return Err(format!(
                    "unknown history format '{s}' (expected meridian, jepsen-edn, jepsen-json or flat)"
                ))
            }
        })
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::Meridian => "meridian",
            Format::JepsenEdn => "jepsen-edn",
            Format::JepsenJson => "jepsen-json",
            Format::Flat => "flat",
        })
    }
}

/// Guesses the format from the text's start.
pub fn detect(text: &str) -> Format {
    let t = text.trim_start();
    let first = t.lines().next().unwrap_or("");
    if t.starts_with(';') || first.contains("{:") || first.starts_with("[{:") || first.starts_with("[:") {
        Format::JepsenEdn
    } else if first.contains("\"sessions\"") {
        Format::Flat
    } else if first.contains("\"type\":\"meta\"") || first.contains("\"type\": \"meta\"") {
        Format::Meridian
    } else {
        Format::JepsenJson
    }
}

/// A foreign history: the transactions, and the version-order chains its reads fix.
#[derive(Debug)]
pub struct Foreign {
    /// The history (no replica records).
    pub history: History,
    /// Per key, prefixes of its version order that the history fixes (list-append
    /// reads): the versions listed come first, in this order, before every other.
    pub chains: Vec<(Key, Vec<VersionId>)>,
    /// Operations skipped, and why.
    pub notes: Vec<String>,
    /// Operations in the file, and how many of them were skipped (not transactions, or
    /// the nemesis's): a file that yields nothing to check is never a pass.
    pub ops: usize,
    /// See `ops`.
    pub skipped: usize,
}

/// One error, naming where.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {what}")]
pub struct ForeignError {
    /// Where: "line N", "line N, field :value", "session S, transaction T".
    pub at: String,
    /// What is wrong.
    pub what: String,
}

fn err(at: impl Into<String>, what: impl Into<String>) -> ForeignError {
    ForeignError {
        at: at.into(),
        what: what.into(),
    }
}

/// A scalar or a list, from EDN or JSON.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Nil,
    Atom(String),
    List(Vec<String>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum MKind {
    R,
    W,
    Append,
}

#[derive(Clone, Debug)]
struct MOp {
    kind: MKind,
    key: String,
    val: Val,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Type {
    Invoke,
    Ok,
    Fail,
    Info,
}

/// One operation as read from the file.
#[derive(Clone, Debug)]
struct Op {
    at: String,
    process: Option<String>,
    typ: Type,
    txn: bool,
    ops: Vec<MOp>,
    time: Option<u64>,
}

/// One transaction, before version ids are resolved.
struct Pending {
    client: u32,
    start: u64,
    end: Option<u64>,
    outcome: Outcome,
    ops: Vec<MOp>,
    /// Whether the reads are known (a completed `:ok`).
    reads_known: bool,
    at: String,
}

/// Reads `text` in `format` (not [`Format::Meridian`], which `jsonl` reads).
pub fn read(text: &str, format: Format) -> Result<Foreign, ForeignError> {
    match format {
        Format::JepsenEdn => jepsen(edn_ops(text)?),
        Format::JepsenJson => jepsen(json_ops(text)?),
        Format::Flat => flat(text),
        Format::Meridian => Err(err("format", "a Meridian history is read by jsonl::read")),
    }
}

// ----- EDN --------------------------------------------------------------------

fn edn_ops(text: &str) -> Result<Vec<Op>, ForeignError> {
    use edn_format::{parse_str, Value};
    // One vector of operations, or one operation per line.
    let whole = parse_str(text.trim());
    let mut out = vec![];
    match whole {
        Ok(Value::Vector(vs)) | Ok(Value::List(vs)) if vs.iter().all(|v| matches!(v, Value::Map(_))) => {
            for (i, v) in vs.iter().enumerate() {
                out.push(edn_op(v, format!("operation {}", i + 1))?);
            }
        }
        _ => {
            for (i, line) in text.lines().enumerate() {
                let l = line.trim();
                if l.is_empty() || l.starts_with(';') {
                    continue;
                }
                let at = format!("line {}", i + 1);
                let v = parse_str(l).map_err(|e| err(&at, format!("not EDN: {e}")))?;
                out.push(edn_op(&v, at)?);
            }
        }
    }
    Ok(out)
}

fn edn_str(v: &edn_format::Value) -> Option<String> {
    use edn_format::Value;
    Some(match v {
        Value::Integer(i) => i.to_string(),
        Value::BigInt(i) => i.to_string(),
        Value::String(s) => s.clone(),
        Value::Keyword(k) => k.name().to_string(),
        Value::Symbol(s) => s.name().to_string(),
        Value::Character(c) => c.to_string(),
        Value::Boolean(b) => b.to_string(),
        _ => return None,
    })
}

fn edn_op(v: &edn_format::Value, at: String) -> Result<Op, ForeignError> {
    use edn_format::{Keyword, Value};
    let Value::Map(m) = v else {
        return Err(err(at, "expected an operation map {:type ... :f ... :value ...}"));
    };
    let get = |name: &str| m.get(&Value::Keyword(Keyword::from_name(name)));
    let field = |name: &str| format!("{at}, field :{name}");
    let typ = op_type(get("type").and_then(edn_str).as_deref(), field("type"))?;
    // Elle's rule: an operation is a transaction by its value's shape (a vector of
    // [f k v] micro-operations with f one of r, w, append), whatever its :f; `:f :txn`
    // with another shape is an error below.
    let txn = get("f").and_then(edn_str).as_deref() == Some("txn") || get("value").is_some_and(edn_txn_shape);
    let process = get("process").and_then(edn_str);
    let time = match get("time") {
        None | Some(Value::Nil) => None,
        Some(Value::Integer(t)) if *t >= 0 => Some(*t as u64),
        Some(_) => return Err(err(field("time"), "expected a non-negative integer")),
    };
    let mut ops = vec![];
    if txn {
        let Some(Value::Vector(mops)) = get("value") else {
            return Err(err(field("value"), "expected a vector of micro-operations"));
        };
        for (j, mop) in mops.iter().enumerate() {
            let (Value::Vector(parts) | Value::List(parts)) = mop else {
                return Err(err(field("value"), format!("micro-operation {} is not [f k v]", j + 1)));
            };
            let bad = || err(field("value"), format!("micro-operation {} is not [f k v]", j + 1));
            let [f, k, val] = parts.as_slice() else {
                return Err(bad());
            };
            let kind = mkind(edn_str(f).as_deref()).ok_or_else(|| {
                err(
                    field("value"),
                    format!(
                        "micro-operation {}: '{}' is not r, w or append",
                        j + 1,
                        edn_format::emit_str(f)
                    ),
                )
            })?;
            let key = edn_str(k).ok_or_else(bad)?;
            let val = match val {
                Value::Nil => Val::Nil,
                Value::Vector(xs) | Value::List(xs) => Val::List(
                    xs.iter()
                        .map(|x| edn_str(x).ok_or_else(bad))
                        .collect::<Result<_, _>>()?,
                ),
                x => Val::Atom(edn_str(x).ok_or_else(bad)?),
            };
            ops.push(MOp { kind, key, val });
        }
    }
    Ok(Op {
        at,
        process,
        typ,
        txn,
        ops,
        time,
    })
}

/// Whether an EDN value is a non-empty vector of `[f k v]` micro-operations with `f`
/// one of r, w, append (Elle's test for a transaction).
fn edn_txn_shape(v: &edn_format::Value) -> bool {
    use edn_format::Value;
    let Value::Vector(mops) = v else { return false };
    !mops.is_empty()
        && mops.iter().all(|m| match m {
            Value::Vector(p) | Value::List(p) => p.len() == 3 && mkind(edn_str(&p[0]).as_deref()).is_some(),
            _ => false,
        })
}

/// The same test for a JSON value.
fn json_txn_shape(v: &serde_json::Value) -> bool {
    let Some(mops) = v.as_array() else { return false };
    !mops.is_empty()
        && mops.iter().all(|m| {
            m.as_array()
                .is_some_and(|p| p.len() == 3 && mkind(json_str(&p[0]).as_deref()).is_some())
        })
}

/// An operation's `:type` (EDN) or `"type"` (JSON); `at` names the field.
fn op_type(t: Option<&str>, at: String) -> Result<Type, ForeignError> {
    match t {
        Some("invoke") => Ok(Type::Invoke),
        Some("ok") => Ok(Type::Ok),
        Some("fail") => Ok(Type::Fail),
        Some("info") => Ok(Type::Info),
        Some(t) => Err(err(at, format!("'{t}' is not invoke, ok, fail or info"))),
        None => Err(err(at, "missing")),
    }
}

fn mkind(f: Option<&str>) -> Option<MKind> {
    match f? {
        "r" | "read" => Some(MKind::R),
        "w" | "write" => Some(MKind::W),
        "append" => Some(MKind::Append),
        _ => None,
    }
}

// ----- JSON -------------------------------------------------------------------

fn json_ops(text: &str) -> Result<Vec<Op>, ForeignError> {
    use serde_json::Value;
    let mut out = vec![];
    let t = text.trim_start();
    if t.starts_with('[') {
        let v: Value =
            serde_json::from_str(t).map_err(|e| err(format!("line {}", e.line()), format!("not JSON: {e}")))?;
        for (i, op) in v.as_array().into_iter().flatten().enumerate() {
            out.push(json_op(op, format!("operation {}", i + 1))?);
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let at = format!("line {}", i + 1);
            let v: Value = serde_json::from_str(line).map_err(|e| err(&at, format!("not JSON: {e}")))?;
            out.push(json_op(&v, at)?);
        }
    }
    Ok(out)
}

fn json_str(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match v {
        Value::String(s) => Some(s.strip_prefix(':').unwrap_or(s).to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn json_mops(v: Option<&serde_json::Value>, field: &str) -> Result<Vec<MOp>, ForeignError> {
    use serde_json::Value;
    let Some(Value::Array(mops)) = v else {
        return Err(err(field, "expected an array of micro-operations"));
    };
    let mut ops = vec![];
    for (j, mop) in mops.iter().enumerate() {
        let bad = || err(field, format!("micro-operation {} is not [f, k, v]", j + 1));
        let Some([f, k, val]) = mop.as_array().map(Vec::as_slice) else {
            return Err(bad());
        };
        let kind = mkind(json_str(f).as_deref())
            .ok_or_else(|| err(field, format!("micro-operation {}: {f} is not r, w or append", j + 1)))?;
        let key = json_str(k).ok_or_else(bad)?;
        let val = match val {
            Value::Null => Val::Nil,
            Value::Array(xs) => Val::List(
                xs.iter()
                    .map(|x| json_str(x).ok_or_else(bad))
                    .collect::<Result<_, _>>()?,
            ),
            x => Val::Atom(json_str(x).ok_or_else(bad)?),
        };
        ops.push(MOp { kind, key, val });
    }
    Ok(ops)
}

fn json_op(v: &serde_json::Value, at: String) -> Result<Op, ForeignError> {
    let field = |name: &str| format!("{at}, field \"{name}\"");
    let Some(m) = v.as_object() else {
        return Err(err(
            at,
            "expected an operation object {\"type\": ..., \"f\": ..., \"value\": ...}",
        ));
    };
    let typ = op_type(m.get("type").and_then(json_str).as_deref(), field("type"))?;
    // Elle's rule, as for EDN.
    let txn = m.get("f").and_then(json_str).as_deref() == Some("txn") || m.get("value").is_some_and(json_txn_shape);
    let time = match m.get("time") {
        None | Some(serde_json::Value::Null) => None,
        Some(t) => Some(
            t.as_u64()
                .ok_or_else(|| err(field("time"), "expected a non-negative integer"))?,
        ),
    };
    let ops = if txn {
        json_mops(m.get("value"), &field("value"))?
    } else {
        vec![]
    };
    Ok(Op {
        process: m.get("process").and_then(json_str),
        at,
        typ,
        txn,
        ops,
        time,
    })
}

// ----- Jepsen pairing -----------------------------------------------------------

fn jepsen(ops: Vec<Op>) -> Result<Foreign, ForeignError> {
    let mut notes = vec![];
    let total = ops.len();
    let skipped = ops
        .iter()
        .filter(|o| !o.txn || o.process.as_deref() == Some("nemesis"))
        .count();
    if skipped > 0 {
        notes.push(format!(
            "{skipped} operation(s) that are not transactions (or are the nemesis's) skipped"
        ));
    }
    let has_invokes = ops.iter().any(|o| o.typ == Type::Invoke);
    let mut clients: HashMap<String, u32> = HashMap::default();
    let mut open: HashMap<String, usize> = HashMap::default();
    let mut txns: Vec<Pending> = vec![];
    for (i, o) in ops.into_iter().enumerate() {
        if !o.txn || o.process.as_deref() == Some("nemesis") {
            continue;
        }
        let p = o.process.clone().unwrap_or_default();
        let n = clients.len() as u32;
        let client = *clients.entry(p.clone()).or_insert(n);
        let time = o.time.unwrap_or(i as u64 + 1);
        match o.typ {
            Type::Invoke => {
                // A process that invokes again without completing leaves the earlier
                // transaction's outcome unknown (it stays `Outcome::Unknown`).
                open.insert(p, txns.len());
                txns.push(Pending {
                    client,
                    start: time,
                    end: None,
                    outcome: Outcome::Unknown,
                    ops: o.ops,
                    reads_known: false,
                    at: o.at,
                });
            }
            typ => {
                let outcome = match typ {
                    Type::Ok => Outcome::Committed,
                    Type::Fail => Outcome::Aborted,
                    _ => Outcome::Unknown,
                };
                match open.remove(&p) {
                    Some(ix) => {
                        let t = &mut txns[ix];
                        t.outcome = outcome;
                        t.end = (outcome != Outcome::Unknown).then_some(time);
                        if typ == Type::Ok {
                            t.ops = o.ops;
                            t.reads_known = true;
                        }
                    }
                    None if has_invokes => {
                        return Err(err(o.at, format!("a completion of process {p} that invoked nothing")));
                    }
                    None => txns.push(Pending {
                        client,
                        start: 0,
                        end: Some(time),
                        outcome,
                        reads_known: typ == Type::Ok,
                        ops: o.ops,
                        at: o.at,
                    }),
                }
            }
        }
    }
    let mut f = build(txns, notes, "jepsen")?;
    (f.ops, f.skipped) = (total, skipped);
    Ok(f)
}

// ----- flat JSON ------------------------------------------------------------------

fn flat(text: &str) -> Result<Foreign, ForeignError> {
    use serde_json::Value;
    let v: Value =
        serde_json::from_str(text).map_err(|e| err(format!("line {}", e.line()), format!("not JSON: {e}")))?;
    let Some(sessions) = v.get("sessions").and_then(Value::as_array) else {
        return Err(err("field \"sessions\"", "expected an array of sessions"));
    };
    let mut txns = vec![];
    let mut n = 0u64;
    for (s, sess) in sessions.iter().enumerate() {
        let Some(list) = sess.as_array() else {
            return Err(err(format!("session {}", s + 1), "expected an array of transactions"));
        };
        for (t, tx) in list.iter().enumerate() {
            n += 1;
            let at = format!("session {}, transaction {}", s + 1, t + 1);
            let outcome = match tx.get("status").and_then(Value::as_str) {
                None | Some("committed") | Some("ok") => Outcome::Committed,
                Some("aborted") | Some("fail") => Outcome::Aborted,
                Some("unknown") | Some("info") => Outcome::Unknown,
                Some(x) => {
                    return Err(err(
                        format!("{at}, field \"status\""),
                        format!("'{x}' is not committed, aborted or unknown"),
                    ))
                }
            };
            let ops = json_mops(tx.get("ops"), &format!("{at}, field \"ops\""))?;
            let start = tx.get("start").and_then(Value::as_u64).unwrap_or(0);
            let end = tx.get("end").and_then(Value::as_u64).unwrap_or(n);
            txns.push(Pending {
                client: s as u32,
                start,
                end: (outcome != Outcome::Unknown).then_some(end.max(start)),
                outcome,
                reads_known: outcome == Outcome::Committed,
                ops,
                at,
            });
        }
    }
    let n = txns.len();
    let mut f = build(txns, vec![], "flat")?;
    f.ops = n;
    Ok(f)
}

// ----- resolving versions -------------------------------------------------------

fn build(txns: Vec<Pending>, notes: Vec<String>, source: &str) -> Result<Foreign, ForeignError> {
    let mut seqs: HashMap<u32, u32> = HashMap::default();
    let ids: Vec<TxnId> = txns
        .iter()
        .map(|t| {
            let s = seqs.entry(t.client).or_default();
            *s += 1;
            TxnId {
                client: t.client,
                seq: *s,
            }
        })
        .collect();
    // Every written value's version: (key, value) -> version, unique per key.
    let mut written: HashMap<(String, String), VersionId> = HashMap::default();
    for (t, id) in txns.iter().zip(&ids) {
        let mut seq = 0u32;
        for m in &t.ops {
            if matches!(m.kind, MKind::W | MKind::Append) {
                let Val::Atom(v) = &m.val else {
                    return Err(err(&t.at, format!("a write of key {} without a single value", m.key)));
                };
                let vid = VersionId { txn: *id, seq };
                seq += 1;
                if written.insert((m.key.clone(), v.clone()), vid).is_some() {
                    return Err(err(
                        &t.at,
                        format!(
                            "value {v} written to key {} twice: values must be unique per key",
                            m.key
                        ),
                    ));
                }
            }
        }
    }
    // A value no one wrote: a version of no recorded transaction.
    let mut phantom = 0u32;
    let mut resolve = |key: &str, v: &str| -> VersionId {
        written
            .get(&(key.to_string(), v.to_string()))
            .copied()
            .unwrap_or_else(|| {
                phantom += 1;
                VersionId {
                    txn: TxnId {
                        client: u32::MAX,
                        seq: phantom,
                    },
                    seq: 0,
                }
            })
    };
    let mut chains: BTreeMap<String, Vec<Vec<VersionId>>> = BTreeMap::new();
    let mut out = vec![];
    for (t, id) in txns.iter().zip(&ids) {
        let mut reads = vec![];
        let mut writes = vec![];
        let mut own: HashMap<&str, Vec<String>> = HashMap::default();
        let mut seq = 0u32;
        for m in &t.ops {
            match m.kind {
                MKind::W | MKind::Append => {
                    let Val::Atom(v) = &m.val else {
                        unreachable!("checked above")
                    };
                    writes.push(WriteRec {
                        key: Key::from(m.key.as_str()),
                        version: VersionId { txn: *id, seq },
                    });
                    seq += 1;
                    own.entry(&m.key).or_default().push(v.clone());
                }
                MKind::R if t.reads_known => {
                    let mine = own.get(m.key.as_str());
                    let version = match &m.val {
                        Val::Nil => None,
                        Val::Atom(v) => {
                            if mine.is_some() {
                                continue; // its own write
                            }
                            Some(resolve(&m.key, v))
                        }
                        Val::List(xs) => {
                            let chain: Vec<VersionId> = xs.iter().map(|x| resolve(&m.key, x)).collect();
                            if !chain.is_empty() {
                                chains.entry(m.key.clone()).or_default().push(chain);
                            }
                            // Its own appends end the list; what it read is before
                            // them (if they do not, the whole list is judged as read).
                            let mine: &[String] = mine.map_or(&[], |v| &v[..]);
                            let external = if xs.ends_with(mine) {
                                &xs[..xs.len() - mine.len()]
                            } else {
                                &xs[..]
                            };
                            external.last().map(|x| resolve(&m.key, x))
                        }
                    };
                    reads.push(ReadRec {
                        key: Key::from(m.key.as_str()),
                        version,
                    });
                }
                MKind::R => {}
            }
        }
        out.push(TxnRecord {
            id: *id,
            client: ClientId(t.client),
            node: NodeId(0),
            dc: DcId(0),
            program: "txn".into(),
            start: t.start,
            commit_start: None,
            end: t.end,
            outcome: t.outcome,
            abort_reason: None,
            reads,
            writes,
            wan_trips: 0,
        });
    }
    let chains = chains
        .into_iter()
        .flat_map(|(k, cs)| {
            let key = Key::from(k.as_str());
            cs.into_iter().map(move |c| (key.clone(), c))
        })
        .collect();
    Ok(Foreign {
        history: History {
            meta: crate::Meta {
                protocol: source.into(),
                strict: false,
                shards: 1,
                shard_replicas: vec![vec![]],
                read_committed: false,
            },
            txns: out,
            replicas: vec![],
        },
        chains,
        notes,
        ops: 0,
        skipped: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{check_foreign, Kind};

    fn verdict(text: &str) -> crate::Report {
        let f = read(text, detect(text)).unwrap();
        check_foreign(&f)
    }

    #[test]
    fn formats_are_detected() {
        assert_eq!(detect("{:type :ok}"), Format::JepsenEdn);
        assert_eq!(detect("[{:type :ok}]"), Format::JepsenEdn);
        assert_eq!(detect("{\"type\":\"ok\"}"), Format::JepsenJson);
        assert_eq!(detect("{\"sessions\": []}"), Format::Flat);
        assert_eq!(detect("{\"type\":\"meta\",\"protocol\":\"rc\"}"), Format::Meridian);
    }

    #[test]
    fn jepsen_edn_register_write_skew_is_g2() {
        let r = verdict(
            "{:type :invoke, :f :txn, :value [[:r :x nil] [:r :y nil] [:w :x 1]], :process 0, :time 10}\n\
             {:type :invoke, :f :txn, :value [[:r :x nil] [:r :y nil] [:w :y 1]], :process 1, :time 11}\n\
             {:type :ok, :f :txn, :value [[:r :x nil] [:r :y nil] [:w :x 1]], :process 0, :time 20}\n\
             {:type :ok, :f :txn, :value [[:r :x nil] [:r :y nil] [:w :y 1]], :process 1, :time 21}\n\
             {:type :info, :f :kill, :value nil, :process :nemesis, :time 22}\n",
        );
        assert!(!r.serializable);
        assert_eq!(r.kinds(), vec![Kind::G2]);
        assert!(r.durability_unknown());
    }

    #[test]
    fn list_append_reads_fix_the_order_and_find_g_single() {
        // T1 appends 1 to x and 1 to y; T2 appends 2 to x and 2 to y; T3 reads
        // x = [1 2] (after T2) but y = [1] (before T2): read skew (G-single).
        let r = verdict(
            "[{:type :ok, :f :txn, :value [[:append :x 1] [:append :y 1]], :process 0}\n\
              {:type :ok, :f :txn, :value [[:append :x 2] [:append :y 2]], :process 1}\n\
              {:type :ok, :f :txn, :value [[:r :x [1 2]] [:r :y [1]] [:r :y [1 2]]], :process 2}]",
        );
        assert!(!r.serializable, "{:?}", r.anomalies);
        // ... and the same reads in a consistent order are serializable, decided.
        let r = verdict(
            "[{:type :ok, :f :txn, :value [[:append :x 1] [:append :y 1]], :process 0}\n\
              {:type :ok, :f :txn, :value [[:append :x 2] [:append :y 2]], :process 1}\n\
              {:type :ok, :f :txn, :value [[:r :x [1 2]] [:r :y [1 2]]], :process 2}]",
        );
        assert!(
            r.ok() && r.serializable && !r.order_unknown(),
            "{:?} {:?}",
            r.anomalies,
            r.unknown
        );
    }

    /// Issue 52: a list read is a prefix of the key's list, so an append it does not
    /// list comes after every one it lists, even with one element read (Elle's
    /// inference). The shape of Elle's `si-without-g-single` history: every cycle has
    /// two adjacent anti-dependencies, so snapshot isolation holds, decided, while
    /// serializability fails (G2).
    #[test]
    fn a_list_read_is_a_prefix_and_decides_snapshot_isolation() {
        let r = verdict(
            "{:type :ok, :f :txn, :value [[:append :k 10]], :process 0}\n\
             {:type :ok, :f :txn, :value [[:append :j 1] [:r :k nil]], :process 1}\n\
             {:type :ok, :f :txn, :value [[:r :i nil] [:r :j nil] [:append :k 20]], :process 2}\n\
             {:type :ok, :f :txn, :value [[:append :i 3] [:r :k [10]]], :process 3}\n",
        );
        assert!(!r.order_unknown(), "{:?}", r.unknown);
        let level = |n: &str| r.levels.iter().find(|l| l.name == n).and_then(|l| l.holds);
        assert_eq!(level("snapshot-isolation"), Some(true), "{:?}", r.levels);
        assert_eq!(level("serializable"), Some(false), "{:?}", r.levels);
        assert_eq!(r.kinds(), vec![Kind::G2]);
        for l in ["read-committed", "read-atomic", "causal"] {
            assert_eq!(level(l), Some(true), "{l}: {:?}", r.levels);
        }
    }

    #[test]
    fn list_append_read_of_an_aborted_append_is_g1a() {
        let r = verdict(
            "{\"type\":\"invoke\",\"f\":\"txn\",\"value\":[[\"append\",1,1]],\"process\":0,\"time\":1}\n\
             {\"type\":\"fail\",\"f\":\"txn\",\"value\":[[\"append\",1,1]],\"process\":0,\"time\":2}\n\
             {\"type\":\"invoke\",\"f\":\"txn\",\"value\":[[\"r\",1,null]],\"process\":1,\"time\":3}\n\
             {\"type\":\"ok\",\"f\":\"txn\",\"value\":[[\"r\",1,[1]]],\"process\":1,\"time\":4}\n",
        );
        assert_eq!(r.kinds(), vec![Kind::G1a]);
    }

    #[test]
    fn flat_json_lost_update_is_found() {
        let r = verdict(
            r#"{"sessions": [[{"ops": [["w","acct",10]]}],
                             [{"ops": [["r","acct",10],["w","acct",20]]}],
                             [{"ops": [["r","acct",10],["w","acct",30]], "status": "committed"}]]}"#,
        );
        assert!(!r.serializable, "{:?}", r.anomalies);
    }

    #[test]
    fn a_read_of_a_value_nobody_wrote_is_g1a() {
        let r = verdict(r#"{"sessions": [[{"ops": [["r","x",7]]}]]}"#);
        assert_eq!(r.kinds(), vec![Kind::G1a]);
    }

    #[test]
    fn malformed_files_get_one_error_naming_line_and_field() {
        let e = read("{:type :ok, :f :txn, :value [[:r 1]], :process 0}\n", Format::JepsenEdn).unwrap_err();
        assert_eq!(e.to_string(), "line 1, field :value: micro-operation 1 is not [f k v]");
        let e = read(
            "{\"type\":\"ok\",\"f\":\"txn\",\"value\":[],\"process\":0}\n{\"type\":\"done\",\"f\":\"txn\"}\n",
            Format::JepsenJson,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2, field \"type\": 'done' is not invoke, ok, fail or info"
        );
        let e = read(
            "{:type :ok, :f :txn, :value [[:r 1 nil]] :process 0\n",
            Format::JepsenEdn,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("line 1: not EDN"), "{e}");
        let e = read(
            r#"{"sessions": [[{"ops": [["w","x",1]]}, {"ops": [["w","x",1]]}]]}"#,
            Format::Flat,
        )
        .unwrap_err();
        assert!(e.to_string().contains("written to key x twice"), "{e}");
        let e = read(r#"{"sessions": 3}"#, Format::Flat).unwrap_err();
        assert!(e.to_string().contains("sessions"), "{e}");
    }
}
