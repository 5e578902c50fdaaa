//! Histories as JSON lines: one `meta` line, one `txn` line per transaction, one
//! `replica` line per server. The format is documented in the README.

use crate::{History, Meta};
use meridian_core::{ReplicaSnapshot, TxnRecord};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Line {
    Meta(Meta),
    Txn(TxnRecord),
    Replica(ReplicaSnapshot),
}

/// A history file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// I/O failure.
    #[error("reading history: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not valid.
    #[error("history line {line}: {msg}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// No meta line.
    #[error("history has no `meta` line")]
    NoMeta,
    /// The file ends in the middle of a record.
    #[error("history: {0}")]
    Cut(String),
}

/// Writes a history as JSON lines.
pub fn write(h: &History, mut w: impl Write) -> std::io::Result<()> {
    let mut line = |l: &Line| -> std::io::Result<()> {
        serde_json::to_writer(&mut w, l)?;
        w.write_all(b"\n")
    };
    line(&Line::Meta(h.meta.clone()))?;
    for t in &h.txns {
        line(&Line::Txn(t.clone()))?;
    }
    for r in &h.replicas {
        line(&Line::Replica(r.clone()))?;
    }
    Ok(())
}

/// Reads a history written by [`write()`] (or by anyone following the format).
/// A file cut short is an error here; [`read_lenient`] reads what it holds.
pub fn read(r: impl BufRead) -> Result<History, HistoryError> {
    match read_lenient(r)? {
        (h, None) => Ok(h),
        (_, Some(cut)) => Err(HistoryError::Cut(cut)),
    }
}

/// Like [`read()`], but a file cut short (its last line is a record that ends early,
/// as when the writer was killed) is read up to that line: the second value says
/// where it was cut, so the caller reports the history as incomplete rather than
/// failing on it.
pub fn read_lenient(r: impl BufRead) -> Result<(History, Option<String>), HistoryError> {
    read_with(r, Values::Keep)
}

/// Like [`read_lenient`], for the checker: the replicas' values (the last value of every
/// key at every server) are not kept, since no verdict depends on them. At a million
/// transactions they are millions of small allocations (docs/MEASUREMENTS.md).
pub fn read_for_check(r: impl BufRead) -> Result<(History, Option<String>), HistoryError> {
    read_with(r, Values::Skip)
}

/// Whether a replica line's values are kept.
#[derive(Clone, Copy, PartialEq)]
enum Values {
    Keep,
    Skip,
}

fn read_with(r: impl BufRead, values: Values) -> Result<(History, Option<String>), HistoryError> {
    let mut meta = None;
    let (mut txns, mut replicas) = (vec![], vec![]);
    // A record that ends early is a cut only if nothing but blank lines follows it.
    let mut cut: Option<(usize, String)> = None;
    let mut lines_of: rustc_hash::FxHashMap<meridian_core::TxnId, usize> = Default::default();
    parse_lines(r, values, |i, parsed| {
        let parsed = match parsed {
            Parsed::Blank => return Ok(()),
            _ if cut.is_some() => {
                // A bad record with more after it: not a cut, an error.
                let (line, msg) = cut.take().expect("checked");
                return Err(HistoryError::Line { line, msg });
            }
            Parsed::Eof(msg) => {
                cut = Some((i, msg));
                return Ok(());
            }
            Parsed::Bad(msg) => return Err(HistoryError::Line { line: i, msg }),
            Parsed::Line(l) => l,
        };
        match parsed {
            Line::Meta(m) => {
                if meta.replace(m).is_some() {
                    return Err(HistoryError::Line {
                        line: i,
                        msg: "second `meta` line".into(),
                    });
                }
            }
            Line::Txn(t) => {
                // Two records of one transaction: which one is the truth? The last
                // used to win, and a lost update could hide behind it.
                if let Some(first) = lines_of.insert(t.id, i) {
                    return Err(HistoryError::Line {
                        line: i,
                        msg: format!(
                            "transaction {} is recorded twice (lines {first} and {i}): refused",
                            t.id
                        ),
                    });
                }
                txns.push(t)
            }
            Line::Replica(r) => replicas.push(r),
        }
        Ok(())
    })?;
    let cut = cut.map(|(line, _)| format!("the file is cut short: line {line} ends mid-record"));
    Ok((
        History {
            meta: meta.ok_or(HistoryError::NoMeta)?,
            txns,
            replicas,
        },
        cut,
    ))
}

/// One line of a history file, parsed.
enum Parsed {
    Blank,
    Line(Line),
    /// The line ends mid-record (a cut, if it is the last).
    Eof(String),
    Bad(String),
}

/// Lines read per batch handed to a parsing thread, at most.
const BATCH: usize = 2048;
/// Bytes of text per batch, about: a batch ends at the line that reaches this, so that
/// a history's replica lines (megabytes each) are parsed one per batch, on all threads,
/// and their text is freed as each is parsed, not all at the end in one batch.
const BATCH_BYTES: usize = 1 << 20;

/// Hands each of the file's lines, numbered from 1 and parsed, to `each`, in order,
/// until it returns an error. Parsing (most of a large history's reading time) runs on
/// up to four threads while this one reads the next lines; the threads intern the keys
/// they decode into one shared table (one allocation per key, not one per mention).
fn parse_lines(
    mut r: impl BufRead,
    values: Values,
    mut each: impl FnMut(usize, Parsed) -> Result<(), HistoryError>,
) -> Result<(), HistoryError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let table = std::sync::Arc::new(meridian_core::KeyTable::default());
    std::thread::scope(|s| {
        // Batch b goes to thread b mod n, and its results are taken in that order.
        let mut to = vec![];
        let mut from = vec![];
        for _ in 0..threads {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<String>>(2);
            let (back, back_rx) = std::sync::mpsc::sync_channel::<Vec<Parsed>>(2);
            let table = &table;
            s.spawn(move || {
                let _intern = meridian_core::InternKeys::into(table);
                for batch in rx {
                    if back
                        .send(batch.iter().map(|l| parse_line(l, values)).collect())
                        .is_err()
                    {
                        return;
                    }
                }
            });
            to.push(tx);
            from.push(back_rx);
        }
        let (mut sent, mut got, mut line) = (0usize, 0usize, 0usize);
        let mut take = |got: &mut usize| -> Result<(), HistoryError> {
            let batch: Vec<Parsed> = from[*got % threads]
                .recv()
                .expect("a parsing thread answers every batch");
            *got += 1;
            for p in batch {
                line += 1;
                each(line, p)?;
            }
            Ok(())
        };
        let mut failed = None;
        // Each line is read into one buffer that keeps its size and then copied out at
        // its own length: a replica line is tens of megabytes, and growing a string to
        // that by doubling, line after line, had the kernel zeroing a gigabyte of fresh
        // pages.
        let mut buf = String::new();
        let mut end = false;
        loop {
            let mut batch = Vec::with_capacity(BATCH);
            let mut bytes = 0;
            while batch.len() < BATCH && bytes < BATCH_BYTES {
                buf.clear();
                match r.read_line(&mut buf) {
                    Ok(0) => {
                        end = true;
                        break;
                    }
                    Ok(n) => {
                        bytes += n;
                        batch.push(buf.as_str().to_owned());
                    }
                    Err(e) => {
                        failed = Some(e);
                        end = true;
                        break;
                    }
                }
            }
            if !batch.is_empty() {
                // At most two batches per thread in flight.
                if sent - got >= 2 * threads {
                    take(&mut got)?;
                }
                to[sent % threads]
                    .send(batch)
                    .expect("a parsing thread takes every batch");
                sent += 1;
            }
            if end {
                break;
            }
        }
        drop(to);
        while got < sent {
            take(&mut got)?;
        }
        match failed {
            Some(e) => Err(HistoryError::Io(e)),
            None => Ok(()),
        }
    })
}

fn parse_line(l: &str, values: Values) -> Parsed {
    let mut parsed = parse_record(l, values);
    // A vector read from JSON grows by doubling from four: a transaction's three reads
    // and two writes, or a key's two versions, held twice the room they use. At a
    // million transactions that is over a hundred megabytes (docs/MEASUREMENTS.md).
    match &mut parsed {
        Parsed::Line(Line::Txn(t)) => {
            t.reads.shrink_to_fit();
            t.writes.shrink_to_fit();
        }
        Parsed::Line(Line::Replica(r)) => r.keys.values_mut().for_each(|s| s.versions.shrink_to_fit()),
        _ => {}
    }
    parsed
}

fn parse_record(l: &str, values: Values) -> Parsed {
    if l.trim().is_empty() {
        return Parsed::Blank;
    }
    // The common lines, a transaction or a replica as `write()` puts them (the tag
    // first), are parsed straight into their records: serde reads an internally
    // tagged enum by buffering the whole record into a generic tree first, which was
    // most of the parse time of a large history. The record ignores the `type` field
    // as an unknown one.
    if l.starts_with(r#"{"type":"txn","#) {
        return parse_as(l, Line::Txn);
    }
    if l.starts_with(r#"{"type":"replica","#) {
        return match values {
            Values::Keep => parse_as(l, Line::Replica),
            Values::Skip => parse_as(l, |r: VersionsOnly| Line::Replica(r.into())),
        };
    }
    let mut parsed = parse_as(l, |l| l);
    if let (Values::Skip, Parsed::Line(Line::Replica(r))) = (values, &mut parsed) {
        r.keys.values_mut().for_each(|s| s.value = None);
    }
    parsed
}

/// `l` parsed as a `T`, made a line by `line`.
fn parse_as<T: serde::de::DeserializeOwned>(l: &str, line: impl FnOnce(T) -> Line) -> Parsed {
    match serde_json::from_str::<T>(l) {
        Ok(p) => Parsed::Line(line(p)),
        Err(e) if e.is_eof() => Parsed::Eof(e.to_string()),
        Err(e) => Parsed::Bad(e.to_string()),
    }
}

/// A replica line read without its values (serde skips the unknown `value` fields).
#[derive(Deserialize)]
struct VersionsOnly {
    node: meridian_core::NodeId,
    keys: std::collections::BTreeMap<meridian_core::Key, KeyVersions>,
    #[serde(default)]
    pruned: std::collections::BTreeMap<meridian_core::Key, u64>,
}

#[derive(Deserialize)]
struct KeyVersions {
    versions: Vec<meridian_core::VersionId>,
}

impl From<VersionsOnly> for ReplicaSnapshot {
    fn from(r: VersionsOnly) -> Self {
        ReplicaSnapshot {
            node: r.node,
            keys: r
                .keys
                .into_iter()
                .map(|(k, v)| {
                    let state = meridian_core::KeyState {
                        versions: v.versions,
                        value: None,
                    };
                    (k, state)
                })
                .collect(),
            pruned: r.pruned,
        }
    }
}
