//! The coordinator of each DC as lock manager and Paxos acceptor/learner: grants locks
//! under wound-wait (2PL), validates a proposed transaction against its DC's committed
//! state and locks and force-logs its DC's vote (phase 2b), learns the outcome from a
//! majority of votes, has its DC's data servers install committed writes, and keeps
//! telling the DCs that have not installed them.

use super::*;
use crate::kit::vote::{DcVote, Decided, Round};

impl Server {
    /// Newest committed timestamp of `key` decided in this DC.
    pub(super) fn latest_ts(&self, key: &Key) -> u64 {
        self.latest.get(key).copied().unwrap_or(0)
    }

    // ------------------------------------------------------------ locks (2PL)

    pub(super) fn on_lock(
        &mut self,
        from: NodeId,
        txn: TxnId,
        prio: Prio,
        key: Key,
        want: Want,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if self.done.contains_key(&txn) || self.acc.contains_key(&txn) || self.refused.contains_key(&txn) {
            return; // finished, in its commit round, or its locks dropped: a late or repeated request
        }
        cx.charge_ops(1);
        let now = cx.now();
        let hops = cx.hops();
        let h = self.holders.entry(txn).or_insert_with(|| Holder {
            home: from,
            last: now,
            waiting: vec![],
        });
        h.last = now;
        match self.locks.acquire(txn, prio, &key, want.mode()) {
            Acquired::Granted | Acquired::TookOver { .. } => self.grant(txn, key, want, hops, cx),
            Acquired::Waiting { wound } => {
                if let Some(h) = self.holders.get_mut(&txn) {
                    h.waiting.retain(|(k, _, _)| *k != key);
                    h.waiting.push((key, want, hops));
                }
                for w in wound {
                    if self.acc.contains_key(&w) {
                        continue; // voted on here: it finishes without more locks
                    }
                    if let Some(wh) = self.holders.get(&w) {
                        cx.send(wh.home, Msg::Wound { txn: w });
                    }
                }
            }
            Acquired::Denied => {} // not under wound-wait
        }
    }

    /// A lock is held: a shared one is read at this DC's data server (which answers the
    /// home), an exclusive one is reported to the home, or read like a shared one when
    /// the value was asked for too (a pre-declared key: the read's answer tells the home
    /// the lock is held). Both continue the request's causal chain, not the chain of
    /// whatever released the lock.
    pub(super) fn grant(&mut self, txn: TxnId, key: Key, want: Want, hops: u32, cx: &mut Ctx<'_, Msg>) {
        let Some(home) = self.holders.get(&txn).map(|h| h.home) else {
            return;
        };
        match want {
            Want::Read => {
                let ds = data_server(&self.env.layout, &key, self.dc);
                cx.send_on_chain(ds, Msg::Read { txn, key, home }, hops);
            }
            Want::ReadWrite => {
                self.held_since.entry(txn).or_insert(hops);
                let ds = data_server(&self.env.layout, &key, self.dc);
                cx.send_on_chain(ds, Msg::Read { txn, key, home }, hops);
            }
            Want::Write => {
                self.held_since.entry(txn).or_insert(hops);
                let latest = self.latest_ts(&key);
                cx.send_on_chain(home, Msg::Locked { txn, key, latest }, hops);
            }
        }
    }

    pub(super) fn on_grants(&mut self, grants: Vec<Grant>, cx: &mut Ctx<'_, Msg>) {
        for g in grants {
            let Some(h) = self.holders.get_mut(&g.txn) else {
                continue;
            };
            let Some(i) = h.waiting.iter().position(|(k, _, _)| *k == g.key) else {
                continue;
            };
            let (_, want, hops) = h.waiting.remove(i);
            self.grant(g.txn, g.key, want, hops, cx);
        }
    }

    /// Drops the locks of a transaction that aborted before this DC voted on it (or
    /// whose home went silent). A transaction this DC accepted keeps its locks until
    /// the outcome is known.
    pub(super) fn release(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if self
            .acc
            .get(&txn)
            .is_some_and(|a| a.my_vote == Some(true) && a.decided.is_none())
        {
            return;
        }
        self.holders.remove(&txn);
        if !self.acc.contains_key(&txn) && !self.done.contains_key(&txn) {
            // Not a decision: a commit round for it may still be under way among the
            // other DCs (this DC was cut off from its home), and its outcome must be
            // learned and installed here like any other (it used to be recorded as an
            // abort, so this DC refused the commit and never installed it).
            self.refused.insert(txn, cx.now());
        }
        if let Some(h) = self.held_since.remove(&txn) {
            self.holds.add(h, cx.hops());
        }
        let grants = self.locks.release_all(txn);
        self.on_grants(grants, cx);
    }

    // ------------------------------------------------------------ acceptor

    pub(super) fn on_accept(&mut self, from: NodeId, txn: TxnId, value: Arc<TxnValue>, cx: &mut Ctx<'_, Msg>) {
        if let Some(&commit) = self.done.get(&txn) {
            if from != self.me {
                let value = commit.then_some(value);
                cx.send(from, Msg::Decided(Decided { txn, commit, value }));
            }
            return;
        }
        let here = self.dc;
        let a = self.round(txn, Some(value), cx.now());
        if let Some(vote) = a.my_ballot(txn, here, a.value.clone(), false) {
            if from != self.me {
                cx.send(from, Msg::Vote(vote));
            }
            return;
        }
        self.vote_on(txn, cx);
    }

    /// The commit round of `txn` (begun if new), once it learned `value`.
    fn round(&mut self, txn: TxnId, value: Option<Arc<TxnValue>>, now: Time) -> &mut Round<TxnValue> {
        let a = self.acc.entry(txn).or_insert_with(|| Round::new(None, now));
        a.learn(value);
        a
    }

    /// Validates the transaction against this DC and casts the DC's vote.
    pub(super) fn vote_on(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(value) = self.acc.get(&txn).and_then(|a| a.value.clone()) else {
            return;
        };
        cx.charge_ops((value.reads.len() + value.writes.len()) as u32);
        match self.validate(txn, &value) {
            Ok(()) => {
                for (k, _, _) in &value.reads {
                    let r = self.rts.entry(k.clone()).or_insert(0);
                    *r = (*r).max(value.ts);
                }
                self.holders.remove(&txn);
                if !value.writes.is_empty() {
                    self.held_since.entry(txn).or_insert(cx.hops());
                }
                self.cast_vote(txn, true, None, cx);
            }
            Err(why) => {
                self.holders.remove(&txn);
                if let Some(h) = self.held_since.remove(&txn) {
                    self.holds.add(h, cx.hops());
                }
                let grants = self.locks.release_all(txn);
                self.on_grants(grants, cx);
                self.cast_vote(txn, false, Some(why), cx);
            }
        }
    }

    /// This DC's check of a proposed transaction. 2PL: every lock it asked for is held
    /// here. OCC: no transaction accepted here and undecided conflicts with it (its
    /// read and write sets are locked, no-wait, until the outcome). Both: every version
    /// read is still the newest committed here, and the commit timestamp is above every
    /// committed version of a written key and every accepted reader of it.
    pub(super) fn validate(&mut self, txn: TxnId, value: &TxnValue) -> Result<(), AbortReason> {
        match self.cc {
            Cc::Locking => {
                for (k, _, _) in &value.reads {
                    if !self.locks.holds(txn, k, LockMode::Shared) {
                        return Err(AbortReason::ReadLockGone);
                    }
                }
                for (k, _, _) in &value.writes {
                    if !self.locks.holds(txn, k, LockMode::Exclusive) {
                        return Err(AbortReason::WriteLockDenied);
                    }
                }
            }
            Cc::Optimistic => {
                let prio = (0, txn);
                for (k, _, _) in &value.reads {
                    if self.locks.acquire(txn, prio, k, LockMode::Shared) != Acquired::Granted {
                        return Err(AbortReason::LockedByPreparing);
                    }
                }
                for (k, _, _) in &value.writes {
                    if self.locks.acquire(txn, prio, k, LockMode::Exclusive) != Acquired::Granted {
                        return Err(AbortReason::LockedByPreparing);
                    }
                }
            }
        }
        for (k, _, read_ts) in &value.reads {
            if self.latest_ts(k) > *read_ts {
                return Err(match self.cc {
                    Cc::Locking => AbortReason::NewerVersionInstalled,
                    Cc::Optimistic => AbortReason::ReadVersionChanged,
                });
            }
        }
        for (k, _, _) in &value.writes {
            if value.ts <= self.latest_ts(k) || value.ts <= self.rts.get(k).copied().unwrap_or(0) {
                return Err(AbortReason::StaleTimestamp);
            }
        }
        Ok(())
    }

    /// Force-logs this DC's vote, then tells the other DCs' coordinators.
    pub(super) fn cast_vote(&mut self, txn: TxnId, accept: bool, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let dc = self.dc;
        let now = cx.now();
        let Some(a) = self.acc.get_mut(&txn) else { return };
        a.my_vote = Some(accept);
        a.votes.insert(dc, accept);
        if !accept {
            a.reason
                .get_or_insert(reason.clone().unwrap_or(AbortReason::MajorityRejected));
        }
        a.since = now;
        let value = a.value.clone();
        self.log.append_sync(
            Rec::Voted {
                txn,
                accept,
                value: value.clone(),
            },
            cx,
        );
        let vote = Msg::Vote(DcVote::cast(txn, dc, accept, reason, value));
        for p in self.peers() {
            cx.send(p, vote.clone());
        }
        self.check_decision(txn, cx);
    }

    pub(super) fn on_vote(&mut self, from: NodeId, v: DcVote<TxnValue>, cx: &mut Ctx<'_, Msg>) {
        let DcVote {
            txn,
            dc,
            accept,
            reason,
            value,
            reply,
            ..
        } = v;
        if let Some(&commit) = self.done.get(&txn) {
            if reply {
                let value = if commit {
                    self.acc.get(&txn).and_then(|a| a.value.clone()).or(value)
                } else {
                    None
                };
                cx.send(from, Msg::Decided(Decided { txn, commit, value }));
            }
            return;
        }
        let here = self.dc;
        let a = self.round(txn, value, cx.now());
        a.votes.insert(dc, accept);
        if !accept {
            if let Some(r) = reason {
                a.reason.get_or_insert(r);
            }
        }
        if let Some(mine) = a.my_ballot(txn, here, a.value.clone(), false).filter(|_| reply) {
            // The reason stays with this DC: the asker needs the vote only.
            cx.send(from, Msg::Vote(DcVote { reason: None, ..mine }));
        }
        // A DC that never got the accept request votes once it learns the value.
        if a.my_vote.is_none() && a.value.is_some() {
            self.vote_on(txn, cx);
        }
        self.check_decision(txn, cx);
    }

    pub(super) fn check_decision(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if let Some(commit) = self.acc.get(&txn).and_then(|a| a.verdict(self.ndcs())) {
            self.decide(txn, commit, cx);
        }
    }

    /// The outcome is known here: log it (forced for a commit: the DC's committed
    /// timestamps move with it), release the locks, have the data servers install the
    /// writes, and answer the client if this is the home.
    pub(super) fn decide(&mut self, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        let dc = self.dc;
        let now = cx.now();
        let Some(a) = self.acc.get_mut(&txn) else { return };
        a.decided = Some(commit);
        a.since = now;
        let value = a.value.clone();
        let reason = a.reason.clone();
        self.done.insert(txn, commit);
        self.refused.remove(&txn);
        self.holders.remove(&txn);
        let rec = Rec::Decided {
            txn,
            commit,
            value: value.clone().filter(|_| commit),
        };
        if commit {
            self.log.append_sync(rec, cx);
        } else {
            self.log.append(rec, cx);
        }
        if let Some(held) = self.held_since.remove(&txn) {
            self.holds.add(held, cx.hops());
        }
        let grants = self.locks.release_all(txn);
        let mut installs = BTreeMap::new();
        if let (true, Some(v)) = (commit, &value) {
            for (k, _, _) in &v.writes {
                let l = self.latest.entry(k.clone()).or_insert(0);
                *l = (*l).max(v.ts);
            }
            installs = v.installs(&self.env.layout, dc);
            for (node, writes) in &installs {
                cx.send(
                    *node,
                    Msg::Install {
                        txn,
                        ts: v.ts,
                        writes: writes.clone(),
                    },
                );
            }
        }
        self.on_grants(grants, cx);
        if let Some(v) = &value {
            if v.home == self.me {
                self.home.remove(&txn);
                self.answers.insert(txn, (v.clone(), now));
                cx.send(
                    v.client,
                    Msg::Result(TxnResult {
                        txn,
                        commit,
                        reason: (!commit).then(|| reason.unwrap_or(AbortReason::MajorityRejected)),
                        reads: v.read_recs(),
                        writes: v.write_recs.clone(),
                        commit_start: Some(v.commit_start),
                    }),
                );
            }
        }
        if !commit || installs.is_empty() {
            // Nothing to install: peers learn the outcome by asking.
            self.acc.remove(&txn);
        }
    }

    pub(super) fn on_decided(&mut self, from: NodeId, d: Decided<TxnValue>, cx: &mut Ctx<'_, Msg>) {
        let Decided { txn, commit, value } = d;
        if self.done.contains_key(&txn) {
            let installed = self.acc.get(&txn).is_none_or(|a| a.applied.contains(&self.dc));
            if commit && installed {
                cx.send(from, Msg::Applied { txn });
            }
            return;
        }
        let a = self.round(txn, value, cx.now());
        if commit && a.value.is_none() {
            return; // cannot install without the value; a later message carries it
        }
        self.decide(txn, commit, cx);
    }

    pub(super) fn on_installed(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let (dc, layout) = (self.dc, &self.env.layout);
        let Some(a) = self.acc.get_mut(&txn) else { return };
        if a.installed(from, dc, |v| v.installs(layout, dc).into_keys()) {
            for p in self.peers() {
                cx.send(p, Msg::Applied { txn });
            }
            self.maybe_end(txn, cx);
        }
    }

    pub(super) fn on_applied(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let dc = self.env.layout.dc_of(from);
        if let Some(a) = self.acc.get_mut(&txn) {
            a.applied.insert(dc);
            self.maybe_end(txn, cx);
        }
    }

    /// A committed transaction is forgotten once every DC installed it.
    pub(super) fn maybe_end(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let n = self.ndcs();
        if self.acc.get(&txn).is_some_and(|a| a.applied.len() == n) {
            self.acc.remove(&txn);
            self.log.append(Rec::Ended { txn }, cx);
        }
    }

    /// Re-sends a commit to the DCs (and this DC's data servers) that have not
    /// confirmed installing it.
    pub(super) fn resend_commit(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(a) = self.acc.get(&txn) else { return };
        let Some(v) = a.value.clone() else { return };
        for (p, d) in a.tell_again(txn, self.peers(), |p| self.env.layout.dc_of(p)) {
            cx.send(p, Msg::Decided(d));
        }
        if a.applied.contains(&self.dc) {
            return;
        }
        for (node, writes) in v.installs(&self.env.layout, self.dc) {
            if !a.acks.contains(&node) {
                cx.send(node, Msg::Install { txn, ts: v.ts, writes });
            }
        }
    }

    /// Re-sends this DC's vote (with the value) to the peers not heard from, asking for
    /// theirs: covers lost accept requests and votes.
    pub(super) fn ask_peers(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(a) = self.acc.get(&txn) else { return };
        let Some(vote) = a.my_ballot(txn, self.dc, a.value.clone(), true) else {
            return;
        };
        for p in self.peers() {
            if !a.votes.contains_key(&self.env.layout.dc_of(p)) {
                cx.send(p, Msg::Vote(vote.clone()));
            }
        }
    }
}
