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
    let mut meta = None;
    let (mut txns, mut replicas) = (vec![], vec![]);
    let lines: Vec<String> = r.lines().collect::<Result<_, _>>()?;
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    let mut cut = None;
    let mut lines_of: rustc_hash::FxHashMap<meridian_core::TxnId, usize> = Default::default();
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let parsed: Line = match serde_json::from_str(l) {
            Ok(p) => p,
            Err(e) if e.is_eof() && Some(i) == last => {
                cut = Some(format!("the file is cut short: line {} ends mid-record", i + 1));
                break;
            }
            Err(e) => {
                return Err(HistoryError::Line {
                    line: i + 1,
                    msg: e.to_string(),
                })
            }
        };
        match parsed {
            Line::Meta(m) => {
                if meta.replace(m).is_some() {
                    return Err(HistoryError::Line {
                        line: i + 1,
                        msg: "second `meta` line".into(),
                    });
                }
            }
            Line::Txn(t) => {
                // Two records of one transaction: which one is the truth? The last
                // used to win, and a lost update could hide behind it.
                if let Some(first) = lines_of.insert(t.id, i + 1) {
                    return Err(HistoryError::Line {
                        line: i + 1,
                        msg: format!(
                            "transaction {} is recorded twice (lines {first} and {}): refused",
                            t.id,
                            i + 1
                        ),
                    });
                }
                txns.push(t)
            }
            Line::Replica(r) => replicas.push(r),
        }
    }
    Ok((
        History {
            meta: meta.ok_or(HistoryError::NoMeta)?,
            txns,
            replicas,
        },
        cut,
    ))
}
