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
        /// The commit timestamp (a reject has no value to carry it): a restarted
        /// coordinator's votes name it (module docs, "Forgetting decisions").
        #[serde(default)]
        ts: Option<u64>,
    },
    Decided {
        txn: TxnId,
        commit: bool,
        value: Option<Arc<TxnValue>>,
        /// The commit timestamp, where a replay queues the decision to be forgotten:
        /// an abort's from the start, when its value was known (a restarted
        /// coordinator, which no longer knows which cohorts acknowledged it, forgets it
        /// `forget_after` after the restart: a prepared cohort asks every query
        /// period); a commit's written in by the compaction that drops its `Ended`.
        #[serde(default)]
        forget: Option<u64>,
    },
    /// Decisions at or below this commit timestamp may have been forgotten (forced
    /// when it rises; the largest is kept): `Server::forgot_ts`.
    Forgot {
        ts: u64,
    },
    /// A commit applied by every DC, or an abort acknowledged by this DC's cohorts.
    Ended {
        txn: TxnId,
        /// The commit timestamp, if the decision may be forgotten: a commit every
        /// other DC's coordinator confirmed, or an abort.
        #[serde(default)]
        forget: Option<u64>,
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
        let mut ended: HashMap<TxnId, Option<u64>> = HashMap::default();
        for r in self.log.records() {
            match r {
                Rec::Committed { txn, .. } | Rec::Aborted { txn } => {
                    finished.insert(*txn);
                }
                Rec::Ended { txn, forget } => {
                    ended.insert(*txn, *forget);
                }
                Rec::Decided { txn, commit: false, .. } => {
                    ended.entry(*txn).or_insert(None);
                }
                _ => {}
            }
        }
        let done = &self.done;
        let forgot = self.forgot_ts;
        self.log.retain(|r| match r {
            Rec::Prepared { txn, .. } | Rec::Committed { txn, .. } | Rec::Aborted { txn } => !finished.contains(txn),
            Rec::Voted { txn, .. } => !ended.contains_key(txn),
            // A decision forgotten (`forget`) goes; so does the rest of its records.
            Rec::Decided { txn, .. } => done.contains_key(txn),
            Rec::Ended { txn, .. } => !ended.contains_key(txn),
            // The largest is what counts; a new one is written whenever it rises.
            Rec::Forgot { ts } => *ts >= forgot,
        });
        self.log.rewrite(
            |r| match r {
                Rec::Decided { txn, value, forget, .. } => ended
                    .get(txn)
                    .is_some_and(|f| value.is_some() || (forget.is_none() && f.is_some())),
                _ => false,
            },
            |r| {
                if let Rec::Decided { txn, value, forget, .. } = r {
                    *value = None;
                    if forget.is_none() {
                        *forget = ended.get(txn).copied().flatten();
                    }
                }
            },
        );
    }

    /// Forgets the decisions queued in `forgetting` `forget_after` ago (module docs,
    /// "Forgetting decisions"); their records go at the next compaction.
    pub(super) fn forget(&mut self, cx: &mut Ctx<'_, Msg>) {
        let (now, ttl) = (cx.now(), self.forget_after);
        let mut raised = self.forgot_ts;
        while let Some((at, _, _)) = self.forgetting.front() {
            if now.saturating_sub(*at) < ttl {
                break;
            }
            let Some((_, txn, ts)) = self.forgetting.pop_front() else {
                break;
            };
            // Decided again since (a late copy of the decision re-opened it): the
            // newer round queues it again when it ends.
            if self.ctxns.contains_key(&txn) {
                continue;
            }
            if self.done.remove(&txn).is_some() {
                raised = raised.max(ts);
            }
        }
        if raised > self.forgot_ts {
            // Forced: answers given on it (unlogged rejects, no answer) must hold
            // after a crash, or a restarted coordinator could accept what it refused.
            self.forgot_ts = raised;
            self.log.append_sync(Rec::Forgot { ts: raised }, cx);
        }
    }

    /// Queues `txn`'s decision (commit timestamp `ts`) to be forgotten `forget_after`
    /// after `now`.
    pub(super) fn may_forget(&mut self, txn: TxnId, ts: u64, now: Time) {
        self.forgetting.push_back((now, txn, ts));
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
                    self.applied.insert(txn, true, now);
                }
                Rec::Aborted { txn } => {
                    prepared.remove(&txn);
                    self.applied.insert(txn, false, now);
                }
                Rec::Voted {
                    txn,
                    accept,
                    coord,
                    value,
                    ts,
                } => {
                    let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(coord, None, 0));
                    c.round.restore_vote(self.dc, accept, value);
                    c.ts = c.ts.or(ts);
                }
                Rec::Forgot { ts } => {
                    self.forgot_ts = self.forgot_ts.max(ts);
                }
                Rec::Decided {
                    txn,
                    commit,
                    value,
                    forget,
                } => {
                    self.done.insert(txn, commit);
                    if let Some(ts) = forget {
                        self.may_forget(txn, ts, now);
                    }
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
                Rec::Ended { txn, forget } => {
                    self.ctxns.remove(&txn);
                    if let Some(ts) = forget {
                        self.may_forget(txn, ts, now);
                    }
                }
            }
        }
        for (txn, r) in prepared {
            let Rec::Prepared {
                ts,
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
                    ts,
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
