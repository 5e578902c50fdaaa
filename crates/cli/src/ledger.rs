//! The ledger of acknowledged commits (issue 53, 1): what every `meridian bench` told
//! its clients was committed, kept beside the cluster file so that a later bench can
//! tell when one of them vanished.
//!
//! A bench's history lists earlier runs' data as written by committed transactions of
//! program `(earlier run)`. Built from the servers' state alone, that list trusts the
//! servers: a commit that a damaged or emptied server no longer holds simply was not
//! there, and the next check said `durable=true`. Each bench therefore appends its
//! committed transactions' writes to `run/acknowledged.jsonl` (next to the cluster file,
//! with the other per-cluster run files), and the next bench adds them to the earlier
//! runs' records: every replica of the key's shard that answers must then hold each of
//! them, and the checker's durability check names any that is missing.
//!
//! The file's first line names the cluster (`{"cluster":EPOCH_NS,"format":1}`); a ledger
//! of another cluster (a cluster file brought up again) is set aside, not read. Each
//! further line is one committed transaction, `{"txn":"3:17","writes":[...]}`. A line
//! cut short by a killed bench is skipped with a warning (only the last line can be).
//! Two benches run at once against one cluster append whole lines each (one `write` per
//! run, in append mode), so neither loses the other's.

use anyhow::{Context, Result};
use meridian_core::{Outcome, TxnId, TxnRecord, WriteRec};
use meridian_net::cluster::Cluster;
use std::io::Write;
use std::path::PathBuf;

/// The ledger's format (its header's `format`).
const FORMAT: u32 = 1;

#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    cluster: u64,
    format: u32,
}

/// One acknowledged commit.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Acked {
    /// The transaction.
    pub txn: TxnId,
    /// Its writes, as its record lists them.
    pub writes: Vec<WriteRec>,
}

/// The ledger of one cluster.
pub struct Ledger {
    path: PathBuf,
    cluster: u64,
}

impl Ledger {
    /// The ledger of `cluster`: `run/acknowledged.jsonl` next to its file.
    pub fn of(cluster: &Cluster) -> Ledger {
        Ledger::at(cluster.path.parent().unwrap_or(std::path::Path::new(".")), cluster.id())
    }

    /// The ledger of cluster `id` whose file is in `dir`.
    pub fn at(dir: &std::path::Path, id: u64) -> Ledger {
        Ledger {
            path: dir.join("run").join("acknowledged.jsonl"),
            cluster: id,
        }
    }

    /// Every commit acknowledged to an earlier bench of this cluster. A missing ledger
    /// is empty; one of another cluster is moved aside (with a note) and read as empty.
    pub fn read(&self) -> Result<Vec<Acked>> {
        let p = &self.path;
        let text = match std::fs::read_to_string(p) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => {
                return Err(e).with_context(|| format!("reading the ledger of acknowledged commits {}", p.display()))
            }
        };
        let mut lines = text.lines();
        let header: Option<Header> = lines.next().and_then(|l| serde_json::from_str(l).ok());
        match header {
            Some(h) if h.cluster == self.cluster && h.format == FORMAT => {}
            _ => {
                let aside = p.with_extension("jsonl.old");
                std::fs::rename(p, &aside).with_context(|| format!("moving {} aside", p.display()))?;
                eprintln!(
                    "note: {} belonged to another cluster (or format); moved to {} and started anew",
                    p.display(),
                    aside.display()
                );
                return Ok(vec![]);
            }
        }
        // A last line without its newline is one a killed bench was writing.
        let torn = !text.ends_with('\n');
        let total = text.lines().count();
        let mut out = vec![];
        for (i, l) in lines.enumerate() {
            let number = i + 2;
            match serde_json::from_str::<Acked>(l) {
                Ok(a) => out.push(a),
                Err(_) if torn && number == total => {
                    eprintln!("warning: {}: its last line is cut short; skipped", p.display())
                }
                Err(e) => anyhow::bail!(
                    "{}: line {number} is damaged ({e}); the ledger of acknowledged commits cannot be \
                     trusted: move it aside to run a bench that does not compare against earlier runs",
                    p.display()
                ),
            }
        }
        Ok(out)
    }

    /// Appends the committed transactions of `txns` that wrote something (after
    /// cutting off a last line a killed bench left unfinished), and forces them to disk.
    pub fn append(&self, txns: &[TxnRecord]) -> Result<()> {
        let p = &self.path;
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(p)
            .with_context(|| format!("opening the ledger of acknowledged commits {}", p.display()))?;
        let old = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
        if !old.is_empty() && !old.ends_with(b"\n") {
            let keep = old.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            f.set_len(keep as u64)
                .with_context(|| format!("cutting the torn line of {}", p.display()))?;
        }
        let mut buf = vec![];
        if old.is_empty() {
            serde_json::to_writer(
                &mut buf,
                &Header {
                    cluster: self.cluster,
                    format: FORMAT,
                },
            )?;
            buf.push(b'\n');
        }
        for t in txns {
            if t.outcome != Outcome::Committed || t.writes.is_empty() {
                continue;
            }
            serde_json::to_writer(
                &mut buf,
                &Acked {
                    txn: t.id,
                    writes: t.writes.clone(),
                },
            )?;
            buf.push(b'\n');
        }
        f.write_all(&buf)
            .and_then(|_| f.sync_data())
            .with_context(|| format!("writing {}", p.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(client: u32, outcome: Outcome) -> TxnRecord {
        let id = TxnId { client, seq: 1 };
        TxnRecord {
            id,
            client: meridian_core::ClientId(client),
            node: meridian_core::NodeId(9),
            dc: meridian_core::DcId(0),
            program: "p".into(),
            start: 0,
            commit_start: None,
            end: Some(1),
            outcome,
            abort_reason: None,
            reads: vec![],
            writes: vec![WriteRec {
                key: meridian_core::Key::from("k"),
                version: meridian_core::VersionId { txn: id, seq: 0 },
            }],
            wan_trips: 0,
        }
    }

    #[test]
    fn keeps_committed_writes_of_this_cluster_only() {
        let d = tempfile::tempdir().expect("tmp");
        let l = Ledger::at(d.path(), 5);
        assert!(l.read().expect("read").is_empty());
        l.append(&[
            rec(1, Outcome::Committed),
            rec(2, Outcome::Aborted),
            rec(3, Outcome::Unknown),
        ])
        .expect("append");
        l.append(&[rec(4, Outcome::Committed)]).expect("append");
        let clients = |l: &Ledger| -> Vec<u32> { l.read().expect("read").iter().map(|a| a.txn.client).collect() };
        assert_eq!(clients(&l), vec![1, 4]);
        // A torn last line is skipped, and cut off by the next append.
        let mut text = std::fs::read_to_string(&l.path).expect("ledger");
        std::fs::write(&l.path, format!("{text}{{\"txn\":\"7:")).expect("write");
        assert_eq!(clients(&l), vec![1, 4]);
        l.append(&[rec(8, Outcome::Committed)]).expect("append");
        assert_eq!(clients(&l), vec![1, 4, 8]);
        // A damaged line with lines after it is an error.
        text = std::fs::read_to_string(&l.path).expect("ledger");
        std::fs::write(&l.path, text.replace("\"4:1\"", "\"4:")).expect("write");
        let e = l.read().expect_err("damaged").to_string();
        assert!(e.contains("line 3 is damaged"), "{e}");
        // Another cluster's ledger is set aside.
        let other = Ledger::at(d.path(), 6);
        assert!(other.read().expect("read").is_empty());
        assert!(!l.path.exists() && l.path.with_extension("jsonl.old").exists());
    }
}
