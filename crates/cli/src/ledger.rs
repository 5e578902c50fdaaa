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
//! cut short by a killed bench is skipped with a warning (only the last line can be),
//! and cut off by the next append (completed, if it is whole but for its newline); a
//! damaged line elsewhere, the header included, is an error. Appends hold the file's
//! lock from reading its end to the sync, so two benches run at once against one
//! cluster append whole, one after the other.
//!
//! A bench appends every second as it runs, and the rest when its run ends: a bench
//! killed outright (SIGKILL, a power loss) leaves out at most its last second.

use anyhow::{Context, Result};
use meridian_core::{Outcome, TxnId, TxnRecord, WriteRec};
use meridian_net::cluster::Cluster;
use std::io::{Read, Write};
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
    /// (or one whose header a killed bench was still writing) is empty; one of another
    /// cluster is moved aside (with a note) and read as empty; a damaged one is an
    /// error.
    pub fn read(&self) -> Result<Vec<Acked>> {
        let p = &self.path;
        let mut f = match std::fs::File::open(p) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => {
                return Err(e).with_context(|| format!("reading the ledger of acknowledged commits {}", p.display()))
            }
        };
        // Shared with other readers, not with a bench appending.
        f.lock_shared().with_context(|| format!("locking {}", p.display()))?;
        let mut text = String::new();
        f.read_to_string(&mut text)
            .with_context(|| format!("reading the ledger of acknowledged commits {}", p.display()))?;
        if !text.contains('\n') {
            // Nothing but a header a killed bench was writing: no commit is in it.
            return Ok(vec![]);
        }
        let damaged = |number: usize, why: String| {
            anyhow::anyhow!(
                "{}: line {number} is damaged ({why}); the ledger of acknowledged commits cannot be trusted: \
                 move it aside to run a bench that does not compare against earlier runs",
                p.display()
            )
        };
        let mut lines = text.lines();
        let header: Header =
            serde_json::from_str(lines.next().unwrap_or_default()).map_err(|e| damaged(1, e.to_string()))?;
        if header.cluster != self.cluster || header.format != FORMAT {
            drop(f);
            let aside = p.with_extension("jsonl.old");
            std::fs::rename(p, &aside).with_context(|| format!("moving {} aside", p.display()))?;
            eprintln!(
                "note: {} belonged to another cluster (or format); moved to {} and started anew",
                p.display(),
                aside.display()
            );
            return Ok(vec![]);
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
                Err(e) => return Err(damaged(number, e.to_string())),
            }
        }
        Ok(out)
    }

    /// Appends the committed transactions of `txns` that wrote something, and forces
    /// them to disk, holding the file's lock throughout (two benches appending at once
    /// each append whole, after the other). A last line a killed bench left without
    /// its newline is completed if it is whole, and cut off if it is not (as [`Ledger::read`]
    /// reads it).
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
        f.lock().with_context(|| format!("locking {}", p.display()))?;
        // Only the end is read (a bench appends every second; the ledger grows): the
        // last 64 KiB, or the whole file if its last line is longer.
        let len = f.metadata().with_context(|| format!("reading {}", p.display()))?.len();
        let mut from = len.saturating_sub(64 * 1024);
        let old = loop {
            use std::io::Seek as _;
            let mut tail = vec![];
            f.seek(std::io::SeekFrom::Start(from))
                .and_then(|_| f.read_to_end(&mut tail))
                .with_context(|| format!("reading {}", p.display()))?;
            if from == 0 || tail.contains(&b'\n') {
                break tail;
            }
            from = 0;
        };
        let mut buf = vec![];
        let mut kept = len;
        if !old.is_empty() && !old.ends_with(b"\n") {
            let start = old.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let last = &old[start..];
            let start = from as usize + start;
            let whole = if start == 0 {
                serde_json::from_slice::<Header>(last).is_ok()
            } else {
                serde_json::from_slice::<Acked>(last).is_ok()
            };
            if whole {
                buf.push(b'\n');
            } else {
                f.set_len(start as u64)
                    .with_context(|| format!("cutting the torn line of {}", p.display()))?;
                kept = start as u64;
            }
        }
        if kept == 0 {
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
        if buf.is_empty() {
            return Ok(()); // nothing committed since the last append: no write, no sync
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
        // A last line that is whole but for its newline is completed, not cut.
        text = std::fs::read_to_string(&l.path).expect("ledger");
        std::fs::write(&l.path, text.trim_end()).expect("write");
        assert_eq!(clients(&l), vec![1, 4, 8]);
        l.append(&[rec(9, Outcome::Committed)]).expect("append");
        assert_eq!(clients(&l), vec![1, 4, 8, 9]);
        // A damaged line with lines after it is an error.
        text = std::fs::read_to_string(&l.path).expect("ledger");
        std::fs::write(&l.path, text.replace("\"4:1\"", "\"4:")).expect("write");
        let e = l.read().expect_err("damaged").to_string();
        assert!(e.contains("line 3 is damaged"), "{e}");
        // A damaged header is an error too, not another cluster's ledger.
        std::fs::write(&l.path, text.replacen("{\"cluster\"", "{\"clu", 1)).expect("write");
        let e = l.read().expect_err("damaged header").to_string();
        assert!(e.contains("line 1 is damaged"), "{e}");
        // Another cluster's ledger is set aside.
        std::fs::write(&l.path, &text).expect("write");
        let other = Ledger::at(d.path(), 6);
        assert!(other.read().expect("read").is_empty());
        assert!(!l.path.exists() && l.path.with_extension("jsonl.old").exists());
        // A header a killed bench was writing holds nothing; the next append writes a
        // whole one.
        std::fs::write(&l.path, "{\"cluster\":5,\"for").expect("write");
        assert!(l.read().expect("read").is_empty());
        l.append(&[rec(1, Outcome::Committed)]).expect("append");
        assert_eq!(clients(&l), vec![1]);
    }

    /// An append reads only the ledger's end: past 64 KiB, a torn last line is still
    /// cut off (and one longer than the 64 KiB read is found by reading it all), and an
    /// append of nothing committed writes nothing.
    #[test]
    fn appends_to_a_long_ledger_read_only_its_end() {
        let d = tempfile::tempdir().expect("tmp");
        let l = Ledger::at(d.path(), 5);
        let many: Vec<TxnRecord> = (1..=2000).map(|c| rec(c, Outcome::Committed)).collect();
        l.append(&many).expect("append");
        let size = std::fs::metadata(&l.path).expect("ledger").len();
        assert!(size > 64 * 1024, "{size} bytes");
        l.append(&[rec(1, Outcome::Aborted)]).expect("append nothing");
        assert_eq!(
            std::fs::metadata(&l.path).expect("ledger").len(),
            size,
            "nothing committed: nothing written"
        );
        let count = |l: &Ledger| l.read().expect("read").len();
        let text = std::fs::read_to_string(&l.path).expect("ledger");
        std::fs::write(&l.path, format!("{text}{{\"txn\":\"7:")).expect("write");
        l.append(&[rec(3000, Outcome::Committed)]).expect("append");
        assert_eq!(count(&l), 2001);
        // A torn line longer than the part read.
        let text = std::fs::read_to_string(&l.path).expect("ledger");
        std::fs::write(&l.path, format!("{text}{{\"txn\":\"7:{}", "9".repeat(70 * 1024))).expect("write");
        l.append(&[rec(3001, Outcome::Committed)]).expect("append");
        assert_eq!(count(&l), 2002);
        assert!(std::fs::read_to_string(&l.path).expect("ledger").ends_with("}\n"));
    }
}
