//! Each server's write-ahead log: what it records (prepares, votes, decisions), how it
//! compacts, and the replay that rebuilds locks and decisions after a restart.

use super::*;

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) enum Rec {
    Prepared {
        txn: TxnId,
        ts: u64,
        coord: NodeId,
        coord_shard: ShardId,
        reads: Vec<Key>,
        writes: Vec<(Key, VersionId, Value)>,
    },
    Committed {
        txn: TxnId,
        ts: u64,
        writes: Vec<(Key, VersionId, Value)>,
    },
    Aborted {
        txn: TxnId,
    },
    Voted {
        txn: TxnId,
        accept: bool,
        coord: ShardId,
        value: Option<Arc<TxnValue>>,
    },
    Decided {
        txn: TxnId,
        commit: bool,
        value: Option<Arc<TxnValue>>,
    },
    Ended {
        txn: TxnId,
    },
}

pub(super) fn writes_size(w: &[(Key, VersionId, Value)]) -> u64 {
    w.iter().map(|(k, _, v)| 16 + (k.len() + v.0.len()) as u64).sum()
}

impl LogRecord for Rec {
    fn size(&self) -> u64 {
        match self {
            Rec::Prepared { reads, writes, .. } => {
                48 + reads.iter().map(|k| k.len() as u64).sum::<u64>() + writes_size(writes)
            }
            Rec::Committed { writes, .. } => 24 + writes_size(writes),
            Rec::Voted { value: Some(v), .. } | Rec::Decided { value: Some(v), .. } => 32 + writes_size(&v.writes),
            _ => 24,
        }
    }
}

impl Server {
    /// Checkpoint: finished cohort transactions' records go (their writes are in the
    /// store); coordinator records of ended transactions shrink to the bare decision.
    pub(super) fn compact(&mut self) {
        let mut finished = rustc_hash::FxHashSet::default();
        let mut ended = rustc_hash::FxHashSet::default();
        for r in self.log.records() {
            match r {
                Rec::Committed { txn, .. } | Rec::Aborted { txn } => {
                    finished.insert(*txn);
                }
                Rec::Ended { txn } | Rec::Decided { txn, commit: false, .. } => {
                    ended.insert(*txn);
                }
                _ => {}
            }
        }
        self.log.retain(|r| match r {
            Rec::Prepared { txn, .. } | Rec::Committed { txn, .. } | Rec::Aborted { txn } => !finished.contains(txn),
            Rec::Voted { txn, .. } => !ended.contains(txn),
            Rec::Decided { .. } => true,
            Rec::Ended { txn } => !ended.contains(txn),
        });
        self.log.rewrite(
            |r| matches!(r, Rec::Decided { txn, value: Some(_), .. } if ended.contains(txn)),
            |r| {
                if let Rec::Decided { value, .. } = r {
                    *value = None;
                }
            },
        );
    }

    pub(super) fn replay(&mut self, cx: &mut Ctx<'_, Msg>) {
        let recs = self.log.records().cloned().collect::<Vec<_>>();
        let mut prepared: BTreeMap<TxnId, Rec> = BTreeMap::new();
        let now = cx.now();
        for r in recs {
            match r {
                Rec::Prepared { txn, .. } => {
                    prepared.insert(txn, r);
                }
                Rec::Committed { txn, ts, writes } => {
                    prepared.remove(&txn);
                    for (k, v, val) in writes {
                        self.store.replay_install(&k, v, val, ts);
                    }
                    self.applied.insert(txn, (true, now));
                }
                Rec::Aborted { txn } => {
                    prepared.remove(&txn);
                    self.applied.insert(txn, (false, now));
                }
                Rec::Voted {
                    txn,
                    accept,
                    coord,
                    value,
                } => {
                    let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(coord, None, 0));
                    c.round.restore_vote(self.dc, accept, value);
                }
                Rec::Decided { txn, commit, value } => {
                    self.done.insert(txn, commit);
                    match value {
                        Some(v) if commit => {
                            let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(v.coord, None, 0));
                            c.round.restore_commit(v);
                        }
                        _ => {
                            self.ctxns.remove(&txn);
                        }
                    }
                }
                Rec::Ended { txn } => {
                    self.ctxns.remove(&txn);
                }
            }
        }
        for (txn, r) in prepared {
            let Rec::Prepared {
                coord,
                coord_shard,
                reads,
                writes,
                ..
            } = r
            else {
                continue;
            };
            for k in &reads {
                self.locks.acquire(txn, (0, txn), k, LockMode::Shared);
            }
            for (k, _, _) in &writes {
                self.locks.acquire(txn, (0, txn), k, LockMode::Exclusive);
            }
            self.prepared.insert(
                txn,
                Prep {
                    coord,
                    coord_shard,
                    writes,
                    asked: 0,
                    hops: cx.hops(),
                    queries: 0,
                },
            );
        }
        // A vote logged without its decision (decisions are not forced): the logged
        // votes may already decide it (with one DC, our own vote is a majority), and
        // nothing else would, since peers are asked only for the votes we lack.
        let mut undecided: Vec<TxnId> = self
            .ctxns
            .iter()
            .filter(|(_, c)| c.round.decided.is_none() && c.round.my_vote.is_some())
            .map(|(t, _)| *t)
            .collect();
        undecided.sort();
        for txn in undecided {
            self.check_decision(txn, cx);
        }
    }
}
