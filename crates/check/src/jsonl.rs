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
pub fn read(r: impl BufRead) -> Result<History, HistoryError> {
    let mut meta = None;
    let (mut txns, mut replicas) = (vec![], vec![]);
    for (i, l) in r.lines().enumerate() {
        let l = l?;
        if l.trim().is_empty() {
            continue;
        }
        let parsed: Line = serde_json::from_str(&l).map_err(|e| HistoryError::Line {
            line: i + 1,
            msg: e.to_string(),
        })?;
        match parsed {
            Line::Meta(m) => {
                if meta.replace(m).is_some() {
                    return Err(HistoryError::Line {
                        line: i + 1,
                        msg: "second `meta` line".into(),
                    });
                }
            }
            Line::Txn(t) => txns.push(t),
            Line::Replica(r) => replicas.push(r),
        }
    }
    Ok(History {
        meta: meta.ok_or(HistoryError::NoMeta)?,
        txns,
        replicas,
    })
}
