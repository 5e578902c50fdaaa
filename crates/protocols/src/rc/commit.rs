//! Paxos across DCs (replicated-commit.md §4.2): each DC's coordinator accepts the
//! client's value, prepares its shards, and votes; a majority of DCs decides; the
//! decision is applied everywhere; queries resolve in-doubt transactions.

use super::*;
use crate::kit::vote::{DcVote, Decided};

impl Server {
    pub(super) fn peers(&self, coord: ShardId) -> Vec<NodeId> {
        self.env
            .layout
            .replicas(coord)
            .iter()
            .copied()
            .filter(|n| *n != self.me)
            .collect()
    }

    pub(super) fn on_accept(&mut self, from: NodeId, txn: TxnId, value: Arc<TxnValue>, cx: &mut Ctx<'_, Msg>) {
        if let Some(outcome) = self.outcome(txn) {
            if !outcome.commit {
                // The other DCs' rejects overtook the client's request (they travel on
                // other connections) and the abort was decided here without the value:
                // nothing told this DC's cohorts, which may hold the transaction's read
                // locks until the idle timeout, denying every writer meanwhile (issue 53:
                // 1-5 keys locked after 3 of 10 loopback benches). The value names them.
                send_decision(txn, false, &value, &self.env.layout, self.dc, |_| false, cx);
                if !self.aborting.contains_key(&txn) {
                    self.await_abort_acks(txn, &value, cx.now());
                }
            }
            cx.send(from, Msg::Decided(outcome));
            return;
        }
        if self.forgotten(txn, Some(value.ts)) {
            // Older than a decision forgotten here: it may be one (module docs,
            // "Forgetting decisions"). The client learns that its outcome is lost to
            // this DC, not a vote it could count.
            cx.send(from, Msg::Vote(self.forgotten_vote(txn, value.ts)));
            return;
        }
        let Some(c) = self.ctxn(txn, Some(value), None, cx.now()) else {
            return;
        };
        let preparing = c.preparing;
        if let Some(vote) = self.my_ballot(txn, false) {
            cx.send(from, Msg::Vote(vote));
            return;
        }
        if !preparing {
            self.start_prepare(txn, cx);
        }
    }

    /// Whether `txn`, unknown here, is at or below the timestamp of a decision this
    /// coordinator forgot (`ts`, if the message named it): it may have been decided
    /// here and forgotten, so this DC keeps no state for it (a round opened for it
    /// could decide anew), never prepares or accepts it, and answers at most with
    /// [`Self::forgotten_vote`].
    pub(super) fn forgotten(&self, txn: TxnId, ts: Option<u64>) -> bool {
        ts.is_some_and(|ts| ts <= self.forgot_ts) && self.unknown(txn)
    }

    /// Whether this coordinator holds nothing of `txn` (no round, no decision).
    fn unknown(&self, txn: TxnId) -> bool {
        !self.done.contains_key(&txn) && !self.ctxns.contains_key(&txn)
    }

    /// This DC's answer about a transaction it may have forgotten: a reject that is
    /// not logged (it is the same for ever: `forgot_ts` only grows and is kept on
    /// disk), whose reason tells a client that the outcome is lost here.
    pub(super) fn forgotten_vote(&self, txn: TxnId, ts: u64) -> DcVote<TxnValue> {
        DcVote::cast(txn, self.dc, false, Some(AbortReason::OutcomeForgotten), None).with_ts(Some(ts))
    }

    /// The outcome of `txn` if this coordinator decided it, with the value if committed
    /// and still known here.
    fn outcome(&self, txn: TxnId) -> Option<Decided<TxnValue>> {
        let commit = *self.done.get(&txn)?;
        let value = self
            .ctxns
            .get(&txn)
            .and_then(|c| c.round.value.clone())
            .filter(|_| commit);
        Some(Decided { txn, commit, value })
    }

    /// The coordinator's state of `txn` (created if new) once it learned `value`. The
    /// transaction's coordinator shard comes from the value, the state already here, or
    /// `guess`; without any of them there is nothing to create.
    fn ctxn(
        &mut self,
        txn: TxnId,
        value: Option<Arc<TxnValue>>,
        guess: Option<ShardId>,
        now: Time,
    ) -> Option<&mut CTxn> {
        let coord = value
            .as_ref()
            .map(|v| v.coord)
            .or_else(|| self.ctxns.get(&txn).map(|c| c.coord))
            .or(guess)?;
        let c = self
            .ctxns
            .entry(txn)
            .or_insert_with(|| CTxn::new(coord, value.clone(), now));
        c.round.learn(value);
        Some(c)
    }

    /// This DC's vote on `txn`, if it voted: an accept carries the value (a DC that
    /// missed the client's request prepares on it); a reject carries none.
    fn my_ballot(&self, txn: TxnId, reply: bool) -> Option<DcVote<TxnValue>> {
        let c = self.ctxns.get(&txn)?;
        let r = &c.round;
        let value = r.value.clone().filter(|_| r.my_vote == Some(true));
        Some(r.my_ballot(txn, self.dc, value, reply)?.with_ts(c.ts()))
    }

    /// Runs 2PC prepare inside this DC.
    pub(super) fn start_prepare(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        let Some(value) = c.round.value.clone() else { return };
        if value.ts <= self.forgot_ts {
            // It may have been decided here and forgotten, and this DC may have
            // answered it with an unlogged reject since: never prepared, rejected
            // (module docs, "Forgetting decisions"). Its round may have been opened by
            // a message without the value, which names no timestamp.
            self.cast_vote(txn, false, Some(AbortReason::OutcomeForgotten), cx);
            return;
        }
        c.preparing = true;
        c.round.since = cx.now();
        c.asked = cx.now();
        let cohorts = value.cohorts(&self.env.layout, self.dc);
        c.cohorts = cohorts.keys().map(|n| (*n, false)).collect();
        if cohorts.is_empty() {
            self.cast_vote(txn, true, None, cx);
            return;
        }
        self.send_prepare(txn, &value, |_| true, cx);
    }

    /// Sends PREPARE again to the cohorts of this DC that have not answered for the
    /// fail-over time (the sweep calls it while preparing). A cohort that crashed lost
    /// it, and the DC's vote waited for its vote timeout (3 s) although the cohort was
    /// back within a second: on a split vote of the other DCs the transaction, and the
    /// locks it held in every DC, waited with it (stop 47: half the throughput for 2 s
    /// after a one-second crash). A cohort answers a repeated PREPARE from what it
    /// holds: prepared, or the outcome it applied; one that lost its read locks in the
    /// crash refuses, and the DC rejects at once.
    pub(super) fn prepare_silent_cohorts(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get(&txn) else { return };
        let Some(value) = c.round.value.clone() else { return };
        let silent: BTreeSet<NodeId> = c.cohorts.iter().filter(|(_, p)| !**p).map(|(n, _)| *n).collect();
        self.send_prepare(txn, &value, |n| silent.contains(&n), cx);
    }

    /// Sends `txn`'s PREPARE to each cohort of this DC that `to` picks.
    fn send_prepare(&self, txn: TxnId, value: &TxnValue, to: impl Fn(NodeId) -> bool, cx: &mut Ctx<'_, Msg>) {
        for (node, share) in value.cohorts(&self.env.layout, self.dc) {
            if to(node) {
                let (ts, coord) = (value.ts, value.coord);
                cx.send(node, Msg::Prepare { txn, ts, coord, share });
            }
        }
    }

    pub(super) fn on_prepared(&mut self, from: NodeId, p: Prepared, cx: &mut Ctx<'_, Msg>) {
        let Prepared { txn, yes, reason } = p;
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        if c.round.my_vote.is_some() || c.round.decided.is_some() || !c.preparing {
            return;
        }
        if !yes {
            let why = reason.unwrap_or(AbortReason::CohortDidNotPrepare);
            self.cast_vote(txn, false, Some(why), cx);
            return;
        }
        if let Some(p) = c.cohorts.get_mut(&from) {
            *p = true;
        }
        if c.cohorts.values().all(|p| *p) {
            self.cast_vote(txn, true, None, cx);
        }
    }

    /// Force-logs this DC's vote and tells the client and the other DCs.
    pub(super) fn cast_vote(&mut self, txn: TxnId, accept: bool, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let dc = self.dc;
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        c.round.my_vote = Some(accept);
        c.preparing = false;
        c.round.reason = reason.clone();
        c.round.votes.insert(dc, accept);
        c.round.since = cx.now();
        let value = if accept { c.round.value.clone() } else { None };
        let coord = c.coord;
        let ts = c.ts();
        let client = c.round.value.as_ref().map(|v| v.client);
        self.log.append_sync(
            Rec::Voted {
                txn,
                accept,
                coord,
                value: value.clone(),
                ts,
            },
            cx,
        );
        let vote = Msg::Vote(DcVote::cast(txn, dc, accept, reason, value).with_ts(ts));
        if let Some(cl) = client {
            cx.send(cl, vote.clone());
        }
        for p in self.peers(coord) {
            cx.send(p, vote.clone());
        }
        self.check_decision(txn, cx);
    }

    pub(super) fn on_vote(&mut self, from: NodeId, v: DcVote<TxnValue>, cx: &mut Ctx<'_, Msg>) {
        let (txn, dc, accept, reply, value) = (v.txn, v.dc, v.accept, v.reply, v.value);
        let ts = value.as_ref().map(|v| v.ts).or(v.ts);
        if let Some(outcome) = self.outcome(txn) {
            if reply {
                cx.send(from, Msg::Decided(outcome));
            }
            return;
        }
        if self.unknown(txn) && ts.is_none_or(|ts| ts <= self.forgot_ts) {
            // Another DC's coordinator asks about a transaction that may have been
            // decided here and forgotten: this DC rejects it. That is safe whatever it
            // was: an abort had a majority of rejects already, and a commit is
            // forgotten only once every coordinator confirmed it, so none asks. A vote
            // naming no timestamp (every vote names it, or carries the value) cannot
            // be told apart from one: it opens no round either, and gets no answer.
            if let Some(ts) = ts.filter(|_| reply) {
                cx.send(from, Msg::Vote(self.forgotten_vote(txn, ts)));
            }
            return;
        }
        // A reject from a peer about a transaction unknown here: the peer's node index
        // in its DC is the coordinator shard's.
        let guess = ShardId(from.0 % self.env.layout.topology.nodes_per_dc);
        let Some(c) = self.ctxn(txn, value, Some(guess), cx.now()) else {
            return;
        };
        c.ts = c.ts.or(ts);
        c.round.votes.insert(dc, accept);
        // A DC that never got the client's request prepares once it learns the value.
        let prepare = c.round.my_vote.is_none() && !c.preparing && c.round.value.is_some();
        if let Some(mine) = self.my_ballot(txn, false).filter(|_| reply) {
            cx.send(from, Msg::Vote(mine));
        }
        if prepare {
            self.start_prepare(txn, cx);
        }
        self.check_decision(txn, cx);
    }

    pub(super) fn on_decided(&mut self, from: NodeId, d: Decided<TxnValue>, cx: &mut Ctx<'_, Msg>) {
        let Decided { txn, commit, value } = d;
        if self.done.contains_key(&txn) {
            let mine_applied = self.ctxns.get(&txn).is_none_or(|c| c.round.applied.contains(&self.dc));
            if commit && mine_applied {
                // A confirmation lets the peer forget the decision: ours is on disk first.
                self.log.sync(cx);
                cx.send(from, Msg::Applied { txn });
            }
            return;
        }
        let Some(c) = self.ctxn(txn, value, None, cx.now()) else {
            return;
        };
        if commit && c.round.value.is_none() {
            return; // cannot install without the value; a later answer will carry it
        }
        self.decide(txn, commit, cx);
    }

    pub(super) fn check_decision(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if let Some(commit) = self.ctxns.get(&txn).and_then(|c| c.round.verdict(self.ndcs())) {
            self.decide(txn, commit, cx);
        }
    }

    /// The outcome is known: run 2PC commit (or abort) in this DC.
    pub(super) fn decide(&mut self, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        let dc = self.dc;
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        c.round.decided = Some(commit);
        c.preparing = false;
        c.round.since = cx.now();
        self.done.insert(txn, commit);
        let value = c.round.value.clone();
        self.log.append(
            Rec::Decided {
                txn,
                commit,
                value: value.clone().filter(|_| commit),
                forget: value.as_ref().map(|v| v.ts).filter(|_| !commit),
            },
            cx,
        );
        let Some(value) = value else {
            self.ctxns.remove(&txn);
            return;
        };
        send_decision(txn, commit, &value, &self.env.layout, dc, |_| false, cx);
        if !commit {
            self.ctxns.remove(&txn);
            self.await_abort_acks(txn, &value, cx.now());
        }
    }

    /// An abort told to this DC's cohorts (`value` names them): it may be forgotten
    /// once each has acknowledged it (a cohort that lost it and stays prepared asks
    /// this coordinator, which must still know the answer). The sweep tells it again
    /// to those that have not (`resend_aborts`).
    pub(super) fn await_abort_acks(&mut self, txn: TxnId, value: &TxnValue, now: Time) {
        let waiting: BTreeSet<NodeId> = value.cohorts(&self.env.layout, self.dc).into_keys().collect();
        self.aborting.insert(
            txn,
            Aborting {
                ts: value.ts,
                waiting,
                sent: now,
                resends: 0,
            },
        );
    }

    /// Tells aborts again, every query period, to the cohorts that have not
    /// acknowledged them.
    pub(super) fn resend_aborts(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        for (txn, a) in self.aborting.iter_mut() {
            // Each re-send doubles the wait, up to 8 query periods (as commits').
            let every = self.env.timeouts.query.saturating_mul(1 << a.resends.min(3));
            if now.saturating_sub(a.sent) < every {
                continue;
            }
            a.sent = now;
            a.resends = a.resends.saturating_add(1);
            for n in &a.waiting {
                let (txn, ts) = (*txn, a.ts);
                cx.send(
                    *n,
                    Msg::Commit {
                        txn,
                        commit: false,
                        ts,
                        writes: vec![],
                    },
                );
            }
        }
    }

    pub(super) fn on_ack(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if let Some(a) = self.aborting.get_mut(&txn) {
            a.waiting.remove(&from);
            if a.waiting.is_empty() {
                let ts = a.ts;
                self.aborting.remove(&txn);
                self.log.append(Rec::Ended { txn, forget: Some(ts) }, cx);
                self.may_forget(txn, ts, cx.now());
            }
            return;
        }
        let (dc, layout) = (self.dc, &self.env.layout);
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        let theirs = layout.dc_of(from);
        if theirs != dc {
            // A cohort of another DC installed the commit sent to it directly: once
            // every cohort of that DC has, the DC has applied it.
            c.direct.insert(from);
            let all = c
                .round
                .value
                .as_ref()
                .is_some_and(|v| v.cohorts(layout, theirs).into_keys().all(|n| c.direct.contains(&n)));
            if all && c.round.decided == Some(true) && c.round.applied.insert(theirs) {
                self.maybe_end(txn, cx);
            }
            return;
        }
        if c.round.installed(from, dc, |v| v.cohorts(layout, dc).into_keys()) {
            let coord = c.coord;
            // A confirmation lets the peers forget the decision: ours is on disk first.
            self.log.sync(cx);
            for p in self.peers(coord) {
                cx.send(p, Msg::Applied { txn });
            }
            self.maybe_end(txn, cx);
        }
    }

    pub(super) fn on_applied(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let dc = self.env.layout.dc_of(from);
        if let Some(c) = self.ctxns.get_mut(&txn) {
            c.round.applied.insert(dc);
            c.confirmed.insert(dc);
            self.maybe_end(txn, cx);
        }
    }

    /// A committed transaction's round ends once every DC has applied it and every
    /// other DC's coordinator confirmed it (a DC counted through its cohorts'
    /// acknowledgements alone may have a coordinator that does not know the outcome
    /// yet: it is told again, `resend_commit`); its decision may be forgotten later.
    pub(super) fn maybe_end(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let n = self.ndcs();
        let Some(c) = self
            .ctxns
            .get(&txn)
            .filter(|c| c.round.applied.len() == n && c.confirmed.len() + 1 == n)
        else {
            return;
        };
        let forget = c.round.value.as_ref().map(|v| v.ts);
        self.ctxns.remove(&txn);
        self.log.append(Rec::Ended { txn, forget }, cx);
        if let Some(ts) = forget {
            self.may_forget(txn, ts, cx.now());
        }
    }

    pub(super) fn on_query(&mut self, from: NodeId, txn: TxnId, coord: ShardId, ts: u64, cx: &mut Ctx<'_, Msg>) {
        let theirs = self.env.layout.dc_of(from);
        if let Some(&commit) = self.done.get(&txn) {
            let c = self.ctxns.get(&txn);
            let (ts, writes) = match c.and_then(|c| c.round.value.clone()) {
                Some(v) if commit => {
                    let share = v.cohorts(&self.env.layout, theirs).remove(&from).unwrap_or_default();
                    (v.ts, share.writes)
                }
                _ if commit => return, // value not known here yet
                _ => (0, vec![]),
            };
            cx.send(
                from,
                Msg::Commit {
                    txn,
                    commit,
                    ts,
                    writes,
                },
            );
            return;
        }
        if theirs != self.dc {
            // A cohort of another DC whose coordinator is silent asks the learners: only
            // a decision answers it (this DC's vote is not its DC's).
            return;
        }
        if self.forgotten(txn, Some(ts)) {
            // Decided here and forgotten (then this DC applied it: the query is a late
            // copy), or older than that and never voted on here: a vote cast now could
            // decide it anew. The cohort asks the other DCs after its second query;
            // those waiting for this DC's vote get a reject (`on_vote`).
            return;
        }
        let now = cx.now();
        let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(coord, None, now));
        c.ts = c.ts.or(Some(ts));
        if c.round.my_vote.is_none() && !c.preparing {
            // Never voted (this coordinator restarted before voting): it cannot have
            // accepted, so rejecting is safe; the peers' votes will settle the outcome.
            self.cast_vote(txn, false, Some(AbortReason::CoordinatorRestartedBeforeVoting), cx);
            self.ask_peers(txn, cx);
        }
    }

    /// Re-sends this DC's vote to the peers not heard from, asking for theirs.
    pub(super) fn ask_peers(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get(&txn) else { return };
        let Some(vote) = self.my_ballot(txn, true) else { return };
        for p in self.peers(c.coord) {
            if !c.round.votes.contains_key(&self.env.layout.dc_of(p)) {
                cx.send(p, Msg::Vote(vote.clone()));
            }
        }
    }

    /// Re-sends a commit to the DCs (and this DC's cohorts) that have not confirmed
    /// applying it. A DC that has not confirmed by now may have lost its coordinator
    /// for good (one dead server of a DC leaves the DC's other servers without the
    /// commits it coordinated: issue 53, a live replica 20 writes behind): its cohorts
    /// are sent the commit directly as well, and acknowledge it here. Installing a
    /// decided commit needs no prepare (a DC outside the accepting majority installs
    /// it the same way).
    pub(super) fn resend_commit(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        c.resends = c.resends.saturating_add(1);
        let c = &self.ctxns[&txn];
        let Some(v) = c.round.value.clone() else { return };
        let layout = &self.env.layout;
        // Every DC whose coordinator has not confirmed is told again: its coordinator
        // (it may have been down, and must know before the decision is forgotten
        // here), and, unless the DC applied it already, its cohorts directly.
        // (`confirmed` is a subset of `applied`.)
        for p in self.peers(c.coord) {
            let theirs = layout.dc_of(p);
            if c.confirmed.contains(&theirs) {
                continue;
            }
            let d = crate::kit::vote::Decided {
                txn,
                commit: true,
                value: Some(v.clone()),
            };
            cx.send(p, Msg::Decided(d));
            if !c.round.applied.contains(&theirs) {
                send_decision(txn, true, &v, layout, theirs, |n| c.direct.contains(&n), cx);
            }
        }
        if !c.round.applied.contains(&self.dc) {
            send_decision(txn, true, &v, layout, self.dc, |n| c.round.acks.contains(&n), cx);
        }
    }
}

/// Sends `txn`'s decision (a commit with each cohort's writes, or an abort) to the
/// cohorts of `dc` that `done` does not exclude.
fn send_decision(
    txn: TxnId,
    commit: bool,
    v: &TxnValue,
    layout: &Layout,
    dc: DcId,
    done: impl Fn(NodeId) -> bool,
    cx: &mut Ctx<'_, Msg>,
) {
    for (node, share) in v.cohorts(layout, dc) {
        if !done(node) {
            let (ts, writes) = (v.ts, if commit { share.writes } else { vec![] });
            cx.send(
                node,
                Msg::Commit {
                    txn,
                    commit,
                    ts,
                    writes,
                },
            );
        }
    }
}
