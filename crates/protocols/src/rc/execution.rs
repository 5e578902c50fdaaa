//! Inside one DC (replicated-commit.md §3): reads under shared locks, and two-phase
//! commit among the DC's shards with exclusive locks before the DC votes.

use super::*;

impl Server {
    pub(super) fn on_read(&mut self, from: NodeId, txn: TxnId, key: Key, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops(1);
        let finished = self.applied.contains_key(&txn) || self.released.contains_key(&txn);
        let result = if finished || self.prepared.contains_key(&txn) {
            Err(AbortReason::FinishedOrPreparing)
        } else {
            match self.locks.acquire(txn, (0, txn), &key, LockMode::Shared) {
                Acquired::Granted => {
                    self.readers.insert(txn, cx.now());
                    let (v, val) = self.store.latest(&key);
                    Ok((v, self.latest_ts(&key), val.cloned()))
                }
                _ => Err(AbortReason::ReadLockDenied),
            }
        };
        cx.send(from, Msg::ReadReply { txn, key, result });
    }

    /// A reader's locks go before it prepared here (its client's release, or the idle
    /// sweep): it is remembered as released (for `tombstone`), so that a read the
    /// network delays past the release is refused rather than lock the key again until
    /// the idle timeout, denying every writer's PREPARE meanwhile. Not as an outcome:
    /// after an idle release the transaction may still commit through a majority of
    /// the other DCs, and its decision must apply here (recorded as aborted, it was
    /// ignored: a lost write on gcp3 with one server down for 10 s).
    pub(super) fn on_client_release(&mut self, txn: TxnId, now: Time) {
        if !self.prepared.contains_key(&txn) && !self.applied.contains_key(&txn) {
            self.released.insert(txn, (), now);
        }
        self.on_release(txn);
    }

    pub(super) fn on_release(&mut self, txn: TxnId) {
        if self.readers.remove(&txn).is_some() {
            self.locks.release_all(txn);
        }
    }

    pub(super) fn on_prepare(
        &mut self,
        from: NodeId,
        txn: TxnId,
        ts: u64,
        coord: ShardId,
        share: Share,
        cx: &mut Ctx<'_, Msg>,
    ) {
        cx.charge_ops((share.reads.len() + share.writes.len()) as u32);
        let answer = |yes: bool, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>| {
            cx.send(from, Msg::Prepared(Prepared { txn, yes, reason }));
        };
        if let Some(commit) = self.applied.get(&txn) {
            let c = *commit;
            return answer(c, (!c).then_some(AbortReason::AlreadyAbortedHere), cx);
        }
        if self.prepared.contains_key(&txn) {
            return answer(true, None, cx);
        }
        if let Err(why) = self.check_prepare(txn, ts, &share) {
            // Remembered as released, like a client's release: a read of it that the
            // network delays past this refusal must not lock the key again (a shared
            // lock left for the idle timeout, found by the campaign with 30 s late
            // duplicates: seed 3861 on gcp3). Only reads consult it; the transaction
            // may still commit through the other DCs and its commit applies here.
            self.on_client_release(txn, cx.now());
            self.locks.release_all(txn);
            return answer(false, Some(why), cx);
        }
        for (k, _) in &share.reads {
            let r = self.rts.entry(k.clone()).or_insert(0);
            *r = (*r).max(ts);
        }
        self.readers.remove(&txn);
        self.log.append_sync(
            Rec::Prepared {
                txn,
                ts,
                coord: from,
                coord_shard: coord,
                reads: share.reads.iter().map(|(k, _)| k.clone()).collect(),
                writes: share.writes.clone(),
            },
            cx,
        );
        self.prepared.insert(
            txn,
            Prep {
                coord: from,
                coord_shard: coord,
                writes: share.writes,
                asked: cx.now(),
                hops: cx.hops(),
                queries: 0,
                ts,
            },
        );
        answer(true, None, cx);
    }

    /// The paper's prepare rules plus the timestamp rules of the module docs; takes the
    /// exclusive locks on success.
    pub(super) fn check_prepare(&mut self, txn: TxnId, ts: u64, share: &Share) -> Result<(), AbortReason> {
        for (k, read_ts) in share.reads.iter().filter(|_| !self.unchecked) {
            if !self.locks.holds(txn, k, LockMode::Shared) {
                return Err(AbortReason::ReadLockGone);
            }
            if self.latest_ts(k) > *read_ts {
                return Err(AbortReason::NewerVersionInstalled);
            }
        }
        for (k, _, _) in &share.writes {
            let rts = if self.unchecked {
                0
            } else {
                self.rts.get(k).copied().unwrap_or(0)
            };
            if ts <= self.latest_ts(k) || ts <= rts {
                return Err(AbortReason::StaleTimestamp);
            }
        }
        for (k, _, _) in &share.writes {
            match self.locks.acquire(txn, (0, txn), k, LockMode::Exclusive) {
                Acquired::Granted | Acquired::TookOver { .. } => {}
                _ => return Err(AbortReason::WriteLockDenied),
            }
        }
        Ok(())
    }

    pub(super) fn on_commit(
        &mut self,
        from: NodeId,
        txn: TxnId,
        commit: bool,
        ts: u64,
        writes: Vec<(Key, VersionId, Value)>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if self.applied.contains_key(&txn) {
            cx.send(from, Msg::Ack { txn });
            return;
        }
        let prep = self.prepared.remove(&txn);
        self.readers.remove(&txn);
        if commit {
            cx.charge_ops(writes.len() as u32);
            for (k, v, val) in &writes {
                self.store.install(k, *v, val.clone(), ts);
            }
            self.log.append_sync(Rec::Committed { txn, ts, writes }, cx);
        } else if prep.is_some() {
            // Forced before the acknowledgement: on it the coordinator may forget the
            // abort (module docs, "Forgetting decisions"), and a cohort that lost this
            // record in a crash would be prepared again with no one to ask.
            self.log.append_sync(Rec::Aborted { txn }, cx);
        }
        if let Some(p) = prep {
            if !p.writes.is_empty() {
                self.holds.add(p.hops, cx.hops());
            }
        }
        self.locks.release_all(txn);
        self.applied.insert(txn, commit, cx.now());
        cx.send(from, Msg::Ack { txn });
    }

    // ------------------------------------------------------------ coordinator
}
