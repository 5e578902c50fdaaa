//! Each server's write-ahead log: what it records (prepares, votes, decisions), how it
//! compacts, and the replay that rebuilds locks and decisions after a restart.

use super::*;

/// Records in a server's log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) enum Rec {
    /// Participant prepared (forced before voting yes). Boxed: the other records,
    /// which a coordinator keeps for good, are then half the size.
    Prepared(Box<PreparedRec>),
    /// Participant applied a commit (forced before acking).
    Committed { txn: TxnId },
    /// Participant aborted a prepared transaction (not forced).
    Aborted { txn: TxnId },
    /// Coordinator decided commit (forced before anyone is told).
    Decided {
        txn: TxnId,
        client: NodeId,
        parts: Vec<NodeId>,
    },
    /// Coordinator collected every ack (not forced).
    Ended { txn: TxnId },
}

/// A participant's PREPARED record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct PreparedRec {
    pub(super) txn: TxnId,
    pub(super) ts: Time,
    pub(super) coord: NodeId,
    pub(super) reads: Vec<Key>,
    pub(super) writes: Vec<(Key, VersionId, Value)>,
}

impl LogRecord for Rec {
    fn size(&self) -> u64 {
        match self {
            Rec::Prepared(p) => {
                let (reads, writes) = (&p.reads, &p.writes);
                48 + reads.iter().map(|k| k.len() as u64).sum::<u64>()
                    + writes
                        .iter()
                        .map(|(k, _, v)| 16 + (k.len() + v.0.len()) as u64)
                        .sum::<u64>()
            }
            Rec::Decided { parts, .. } => 32 + 8 * parts.len() as u64,
            _ => 24,
        }
    }
}

impl Server {
    /// Checkpoint: a finished participant transaction's records (PREPARED with its writes,
    /// COMMITTED or ABORTED) are no longer needed, because its writes are in the store.
    /// A restarted coordinator must still know every COMMIT it decided: a decision still
    /// being delivered keeps its DECIDED record (to re-send it); one whose ENDED record is
    /// synced too is folded into `ended`, the bare transaction id, which is all a
    /// restart needs of it (a decided outcome). Only synced records are folded, so a
    /// crash keeps exactly what it kept before the checkpoint.
    pub(super) fn compact(&mut self) {
        let synced = self.log.synced_len();
        let mut finished: rustc_hash::FxHashSet<TxnId> = Default::default();
        let mut fold: rustc_hash::FxHashSet<TxnId> = Default::default();
        for (i, r) in self.log.records().enumerate() {
            match r {
                Rec::Committed { txn } | Rec::Aborted { txn } => {
                    finished.insert(*txn);
                }
                Rec::Ended { txn } if i < synced => {
                    fold.insert(*txn);
                }
                _ => {}
            }
        }
        self.log.retain(|r| match r {
            Rec::Prepared(p) => !finished.contains(&p.txn),
            Rec::Committed { txn } | Rec::Aborted { txn } => !finished.contains(txn),
            Rec::Decided { txn, .. } => {
                let keep = !fold.contains(txn);
                if !keep {
                    self.ended.push(*txn);
                }
                keep
            }
            Rec::Ended { txn } => !fold.contains(txn),
        });
    }

    /// Rebuilds volatile state from the log.
    pub(super) fn replay(&mut self, cx: &mut Ctx<'_, Msg>) {
        for txn in &self.ended {
            self.done.insert(*txn, true);
        }
        let recs = self.log.records().cloned().collect::<Vec<_>>();
        let mut prepared: BTreeMap<TxnId, PreparedRec> = BTreeMap::new();
        let mut decided: BTreeMap<TxnId, Rec> = BTreeMap::new();
        for r in recs {
            match r {
                Rec::Prepared(p) => {
                    prepared.insert(p.txn, *p);
                }
                Rec::Committed { txn } => {
                    // Still in the log, so recent: a late PREPARE of it may yet come.
                    self.committed.insert(txn, cx.now());
                    // Its writes are in the store, which survived the crash: they
                    // were installed in the step that forced this record. Installing
                    // them again would put a version that version GC collected since
                    // after newer ones (`install_latest` cannot tell it is old).
                    prepared.remove(&txn);
                }
                Rec::Aborted { txn } => {
                    prepared.remove(&txn);
                }
                Rec::Decided { txn, .. } => {
                    self.done.insert(txn, true);
                    decided.insert(txn, r);
                }
                Rec::Ended { txn } => {
                    decided.remove(&txn);
                }
            }
        }
        let now = cx.now();
        for (txn, p) in prepared {
            let PreparedRec {
                ts,
                coord,
                reads,
                writes,
                ..
            } = p;
            let prio = (ts, txn);
            for k in &reads {
                self.locks.acquire(txn, prio, k, LockMode::Shared);
            }
            for (k, _, _) in &writes {
                self.locks.acquire(txn, prio, k, LockMode::Exclusive);
            }
            let part = Part {
                node: cx.me(),
                reads: reads.into_iter().map(|k| (k, None)).collect(),
                writes,
            };
            self.ptxns.insert(
                txn,
                PTxn {
                    prio,
                    state: PState::Prepared { coord, part, asked: 0 },
                    last_seen: now,
                    pending_reads: Default::default(),
                },
            );
        }
        for (txn, r) in decided {
            let Rec::Decided { client, parts, .. } = r else {
                continue;
            };
            self.ctxns.insert(
                txn,
                CTxn {
                    client,
                    parts,
                    yes: BTreeSet::new(),
                    decided: Some(true),
                    acks: BTreeSet::new(),
                    since: 0,
                    ts: 0,
                    shares: vec![],
                    asked: 0,
                },
            );
        }
    }
}
