//! Applying a decision at a chain position: commit installs the tentative versions,
//! abort discards them and cascades to readers; the backward acknowledgements and
//! forward aborts that walk the chain.

use super::*;

impl Server {
    pub(super) fn record_done(
        &mut self,
        txn: TxnId,
        commit: bool,
        rec: Option<Arc<Rec>>,
        reason: Option<AbortReason>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if let Some(prev) = self.applied.get(&txn) {
            if *prev != commit {
                self.contradicted.push((txn, commit));
            }
        } else {
            self.applied.insert(txn, commit);
        }
        match self.done.get_mut(&txn) {
            Some(e) => {
                if e.rec.is_none() {
                    e.rec = rec;
                }
            }
            None => self.done.insert(txn, Done { commit, rec, reason }, cx.now()),
        }
    }

    /// Applies an outcome at this server: every position, replica copy and orphan.
    /// Aborted positions that forwarded pass a `ForwardAbort` on; with `push` (the
    /// outcome was learned off the broadcast path) each position also tells its
    /// predecessor and its replicas.
    pub(super) fn decided(
        &mut self,
        txn: TxnId,
        commit: bool,
        rec: Option<Arc<Rec>>,
        reason: Option<AbortReason>,
        push: bool,
        cx: &mut Ctx<'_, Msg>,
    ) {
        // Idempotent: whatever is still held for the transaction here is resolved.
        self.record_done(txn, commit, rec, reason.clone(), cx);
        let mut positions: Vec<u32> = self.parts.keys().filter(|(t, _)| *t == txn).map(|(_, p)| *p).collect();
        // In position order, not the hash table's (which a server rebuilt from its
        // image does not share): every run of the same inputs acts alike.
        positions.sort_unstable();
        let rec = self.done.get(&txn).and_then(|d| d.rec.clone());
        for pos in positions {
            let p = self.parts.remove(&(txn, pos)).expect("listed");
            for (k, v, _) in &p.puts {
                self.settle(k, *v, commit);
            }
            self.unlink_deps(txn, pos, &p.deps);
            if let Some(next) = p.next.filter(|_| !commit && p.phase == Phase::Executed) {
                cx.send(
                    next,
                    Msg::ForwardAbort {
                        txn,
                        pos: pos + 1,
                        reason: reason.clone().unwrap_or(AbortReason::Aborted),
                    },
                );
            }
            if !push {
                continue;
            }
            // Pass the outcome to our replicas and our predecessor (it may be waiting).
            let mut to: Vec<NodeId> = p.chain[pos as usize].replicas.clone();
            to.push(p.chain[pos as usize - 1].node);
            for n in to {
                cx.send(
                    n,
                    Msg::Decide {
                        txn,
                        commit,
                        rec: rec.clone(),
                        reason: if commit { None } else { reason.clone() },
                    },
                );
            }
        }
        if let Some(b) = self.backups.remove(&txn) {
            for (k, v) in b.puts {
                self.settle(&k, v, commit);
            }
        }
        if let Some(o) = self.orphans.remove(&txn) {
            for (k, v) in o.puts {
                self.settle(&k, v, commit);
            }
            if commit {
                for (k, v, val) in o.below {
                    self.store.install(&k, v, val, o.ts);
                }
            }
        }
        if commit {
            self.release_readers(txn, cx);
        } else {
            self.cascade(txn, cx);
        }
    }

    /// Makes a tentative version of `key` here committed, or drops it.
    fn settle(&mut self, key: &Key, v: VersionId, commit: bool) {
        if commit {
            self.store.commit_tentative(key, v);
        } else {
            self.store.abort_tentative(key, v);
        }
    }

    /// The writer committed here: its readers no longer depend on it.
    pub(super) fn release_readers(&mut self, writer: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(rs) = self.readers.remove(&writer) else {
            return;
        };
        for (t, pos) in rs {
            if let Some(p) = self.parts.get_mut(&(t, pos)) {
                p.deps.remove(&writer);
                self.try_precommit(t, pos, cx);
            }
        }
    }

    /// The writer aborted here: every position that read its versions aborts.
    pub(super) fn cascade(&mut self, writer: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(rs) = self.readers.remove(&writer) else {
            return;
        };
        for (t, pos) in rs {
            if self.parts.get(&(t, pos)).is_some_and(|p| p.phase == Phase::Executed) {
                // One reason string per cause (reports group aborts by reason).
                let why = AbortReason::CascadingAbort;
                self.abort_here(t, pos, why, cx);
            }
        }
    }

    /// Aborts a transaction at a position that has not precommitted.
    pub(super) fn abort_here(&mut self, txn: TxnId, pos: u32, reason: AbortReason, cx: &mut Ctx<'_, Msg>) {
        let Some(p) = self.parts.get(&(txn, pos)) else {
            return;
        };
        debug_assert_eq!(p.phase, Phase::Executed);
        let chain = p.chain.clone();
        self.tell_abort_backward(txn, &chain, pos, reason.clone(), cx);
        self.decided(txn, false, None, Some(reason.clone()), false, cx);
    }

    // ----- PLC messages --------------------------------------------------------

    pub(super) fn on_ack(&mut self, from: NodeId, txn: TxnId, pos: u32, next: Option<NodeId>, cx: &mut Ctx<'_, Msg>) {
        if pos == 0 {
            return;
        }
        let Some(p) = self.parts.get_mut(&(txn, pos - 1)) else {
            return;
        };
        if p.next != Some(from) {
            return;
        }
        p.acked = true;
        p.after_next = Some(next);
        p.forward = None;
        p.heard_next = cx.now();
        self.try_precommit(txn, pos - 1, cx);
    }

    /// The next position will not run the transaction (it restarted and may have acted
    /// on it before): abort it here, as at a vote timeout, unless this position has
    /// precommitted (then the refusal is a stale duplicate: its ack came first).
    pub(super) fn on_refused(&mut self, from: NodeId, txn: TxnId, pos: u32, cx: &mut Ctx<'_, Msg>) {
        if pos == 0 {
            return;
        }
        let refused = self
            .parts
            .get(&(txn, pos - 1))
            .is_some_and(|p| p.phase == Phase::Executed && p.next == Some(from) && !p.acked);
        if refused {
            self.abort_here(txn, pos - 1, AbortReason::NextPositionRestarted, cx);
        }
    }

    pub(super) fn on_precommit(&mut self, txn: TxnId, pos: u32, cx: &mut Ctx<'_, Msg>) {
        match self.parts.get_mut(&(txn, pos)) {
            Some(p) => {
                p.prev_precommit = true;
                self.try_precommit(txn, pos, cx);
            }
            None => {
                // Already decided here: the sender is waiting for the outcome.
            }
        }
    }

    /// A client's abort of its transaction, sent when its first server never
    /// acknowledged the execution, so that no position can have precommitted (the
    /// precommit starts from the client, after that acknowledgement). Where a position
    /// here did precommit, or the outcome is already decided, the abort is not the
    /// client's to give (a client certificate posing as a decider) and is ignored, as
    /// `on_forward_abort` ignores one for a precommitted position.
    pub(super) fn on_client_abort(&mut self, txn: TxnId, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let precommitted = self
            .parts
            .iter()
            .any(|((t, _), p)| *t == txn && p.phase == Phase::Precommitted);
        if precommitted || self.done.get(&txn).is_some_and(|d| d.commit) {
            return;
        }
        self.decided(txn, false, None, reason, false, cx);
    }

    pub(super) fn on_forward_abort(&mut self, txn: TxnId, pos: u32, reason: AbortReason, cx: &mut Ctx<'_, Msg>) {
        match self.parts.get(&(txn, pos)) {
            Some(p) if p.phase == Phase::Executed => self.decided(txn, false, None, Some(reason), true, cx),
            Some(_) => {} // precommitted: cannot be (an earlier position would have had to precommit)
            None => {
                if !self.done.contains_key(&txn) {
                    // Arrived before the execution: remember, so it is refused.
                    self.record_done(txn, false, None, Some(reason), cx);
                }
            }
        }
    }
}
