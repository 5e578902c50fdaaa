//! The coordinator role: collects votes, logs and sends the decision, answers queries
//! from in-doubt participants and clients.

use super::*;

impl Server {
    pub(super) fn on_commit(&mut self, client: NodeId, txn: TxnId, ts: Time, parts: Vec<Part>, cx: &mut Ctx<'_, Msg>) {
        if let Some(&commit) = self.done.get(&txn) {
            let reason = (!commit).then_some(AbortReason::Aborted);
            cx.send(client, Msg::Outcome { txn, commit, reason });
            return;
        }
        if self.ctxns.contains_key(&txn) {
            return; // duplicate while in progress
        }
        if ts < self.started_at {
            // Begun before this coordinator restarted; presumed aborted.
            self.done.insert(txn, false);
            let reason = Some(AbortReason::CoordinatorRestarted);
            cx.send(
                client,
                Msg::Outcome {
                    txn,
                    commit: false,
                    reason,
                },
            );
            return;
        }
        self.ctxns.insert(
            txn,
            CTxn {
                client,
                parts: parts.iter().map(|p| p.node).collect(),
                yes: BTreeSet::new(),
                decided: None,
                acks: BTreeSet::new(),
                since: cx.now(),
                ts,
                shares: parts.clone(),
                asked: cx.now(),
            },
        );
        for p in parts {
            cx.send(p.node, Msg::Prepare { txn, ts, part: p });
        }
    }

    pub(super) fn on_vote(&mut self, from: NodeId, vote: Prepared, cx: &mut Ctx<'_, Msg>) {
        let Prepared { txn, yes, reason } = vote;
        let Some(c) = self.ctxns.get_mut(&txn) else {
            return;
        };
        if c.decided.is_some() {
            return;
        }
        if !yes {
            let why = reason.unwrap_or(AbortReason::ParticipantVotedNo);
            self.decide(txn, false, Some(why), cx);
            return;
        }
        if !c.parts.contains(&from) {
            return;
        }
        c.yes.insert(from);
        if c.yes.len() == c.parts.len() {
            self.decide(txn, true, None, cx);
        }
    }

    /// A participant reports that `txn`, prepared there, blocks an older transaction:
    /// wound-wait aborts it, if it is still undecided.
    pub(super) fn on_wound(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if self.ctxns.get(&txn).is_some_and(|c| c.decided.is_none()) {
            self.decide(txn, false, Some(AbortReason::Wounded), cx);
        }
    }

    pub(super) fn decide(&mut self, txn: TxnId, commit: bool, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else {
            return;
        };
        if c.decided.is_some() {
            return; // decided once, never again (a caller's view may be stale)
        }
        c.decided = Some(commit);
        c.since = cx.now();
        c.shares = vec![]; // no PREPARE goes out again
        self.done.insert(txn, commit);
        let (client, parts) = (c.client, c.parts.clone());
        if commit {
            self.log.append_sync(
                Rec::Decided {
                    txn,
                    client,
                    parts: parts.clone(),
                },
                cx,
            );
        }
        cx.send(client, Msg::Outcome { txn, commit, reason });
        for node in &parts {
            cx.send(*node, Msg::Decide { txn, commit });
        }
        if !commit {
            // Presumed abort: nothing to wait for.
            self.ctxns.remove(&txn);
        }
    }

    pub(super) fn on_ack(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else {
            return;
        };
        if c.decided != Some(true) || !c.parts.contains(&from) {
            return;
        }
        c.acks.insert(from);
        if c.acks.len() == c.parts.len() {
            self.ctxns.remove(&txn);
            self.log.append(Rec::Ended { txn }, cx);
        }
    }

    pub(super) fn on_query(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if self.ctxns.get(&txn).is_some_and(|c| c.decided.is_none()) {
            return; // still collecting votes; the decision will come
        }
        let commit = *self.done.entry(txn).or_insert(false);
        cx.send(from, Msg::Decide { txn, commit });
    }

    pub(super) fn on_status(&mut self, client: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if self.ctxns.get(&txn).is_some_and(|c| c.decided.is_none()) {
            return;
        }
        // Unknown here means the Commit was lost or this coordinator restarted: abort,
        // and remember it so a late Commit gets the same answer.
        let commit = *self.done.entry(txn).or_insert(false);
        let reason = (!commit).then_some(AbortReason::AbortedQueried);
        cx.send(client, Msg::Outcome { txn, commit, reason });
    }

    // ------------------------------------------------------------ housekeeping
}
