//! Each server's write-ahead log: votes and decisions (coordinator role), installed
//! writes (data-server role); compaction, and the replay that rebuilds a restarted
//! coordinator's undecided votes, their locks and its decisions.

use super::*;
use crate::kit::vote::Round;

/// A log record.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) enum Rec {
    /// Coordinator: its DC's vote (forced before it is sent), with the value.
    Voted {
        txn: TxnId,
        accept: bool,
        value: Option<Arc<TxnValue>>,
    },
    /// Coordinator: the outcome (forced for commits).
    Decided {
        txn: TxnId,
        commit: bool,
        value: Option<Arc<TxnValue>>,
    },
    /// Coordinator: every DC installed the commit.
    Ended { txn: TxnId },
    /// Data server: committed writes installed (forced before acknowledging).
    Installed {
        txn: TxnId,
        ts: u64,
        writes: Vec<(Key, VersionId, Value)>,
    },
}

fn writes_size(w: &[(Key, VersionId, Value)]) -> u64 {
    w.iter().map(|(k, _, v)| 16 + (k.len() + v.0.len()) as u64).sum()
}

fn value_size(v: &Option<Arc<TxnValue>>) -> u64 {
    v.as_ref().map_or(0, |v| {
        writes_size(&v.writes) + v.reads.iter().map(|(k, _, _)| 24 + k.len() as u64).sum::<u64>()
    })
}

impl LogRecord for Rec {
    fn size(&self) -> u64 {
        match self {
            Rec::Voted { value, .. } | Rec::Decided { value, .. } => 32 + value_size(value),
            Rec::Installed { writes, .. } => 24 + writes_size(writes),
            Rec::Ended { .. } => 16,
        }
    }
}

impl Server {
    /// Checkpoint: installed writes are in the store, ended transactions shrink to the
    /// bare decision.
    pub(super) fn compact(&mut self) {
        let mut ended = rustc_hash::FxHashSet::default();
        for r in self.log.records() {
            match r {
                Rec::Ended { txn } | Rec::Decided { txn, commit: false, .. } => {
                    ended.insert(*txn);
                }
                _ => {}
            }
        }
        self.log.retain(|r| match r {
            Rec::Installed { .. } => false,
            Rec::Voted { txn, .. } => !ended.contains(txn),
            Rec::Decided { .. } => true,
            Rec::Ended { txn } => !ended.contains(txn),
        });
        // A home keeps its own transactions' values: a client whose answer was lost
        // (or whose home restarted) asks again and must learn what it read and wrote.
        let me = self.me;
        self.log.rewrite(
            |r| matches!(r, Rec::Decided { txn, value: Some(v), .. } if ended.contains(txn) && v.home != me),
            |r| {
                if let Rec::Decided { value, .. } = r {
                    *value = None;
                }
            },
        );
    }

    pub(super) fn replay(&mut self, cx: &mut Ctx<'_, Msg>) {
        let recs = self.log.records().cloned().collect::<Vec<_>>();
        let now = cx.now();
        for r in recs {
            match r {
                Rec::Installed { ts, writes, .. } => {
                    for (k, v, val) in writes {
                        self.store.replay_install(&k, v, val, ts);
                    }
                }
                Rec::Voted { txn, accept, value } => {
                    let a = self.acc.entry(txn).or_insert_with(|| Round::new(None, now));
                    a.restore_vote(self.dc, accept, value);
                }
                Rec::Decided { txn, commit, value } => {
                    self.done.insert(txn, commit);
                    match value {
                        Some(v) if commit => {
                            for (k, _, _) in &v.writes {
                                let l = self.latest.entry(k.clone()).or_insert(0);
                                *l = (*l).max(v.ts);
                            }
                            if v.home == self.me {
                                self.answers.insert(txn, (v.clone(), now));
                            }
                            let a = self.acc.entry(txn).or_insert_with(|| Round::new(None, now));
                            a.restore_commit(v);
                        }
                        _ => {
                            self.acc.remove(&txn);
                        }
                    }
                }
                Rec::Ended { txn } => {
                    self.acc.remove(&txn);
                }
            }
        }
        // Accepted and undecided: the DC promised these locks; take them again.
        let mut undecided: Vec<TxnId> = self
            .acc
            .iter()
            .filter(|(_, a)| a.decided.is_none())
            .map(|(t, _)| *t)
            .collect();
        undecided.sort();
        for txn in &undecided {
            let a = &self.acc[txn];
            if a.my_vote != Some(true) {
                continue;
            }
            let Some(v) = a.value.clone() else { continue };
            for (k, _, _) in &v.reads {
                self.locks.acquire(*txn, (0, *txn), k, LockMode::Shared);
            }
            for (k, _, _) in &v.writes {
                self.locks.acquire(*txn, (0, *txn), k, LockMode::Exclusive);
            }
        }
        for txn in undecided {
            self.check_decision(txn, cx);
        }
    }
}
