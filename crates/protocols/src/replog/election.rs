//! Leader election with leases: a candidate runs phase 1 over its group once the
//! leader's lease ran out, merges the accepted entries it learns, and rebuilds the
//! leader's per-transaction state from the log before it leads.
//!
//! **Pre-vote** (as Raft's PreVote, Ongaro's thesis §9.6; the papers name no election
//! protocol): before it raises its ballot a candidate asks its group whether a majority
//! would promise it (`PreElect` / `PreVote`, no state changes). A replica cut off from
//! its group used to raise its promised ballot at every try; when the cut healed, its
//! `Nack` of the healthy leader's next heartbeat made that leader step down and follow
//! it, and the in-flight transactions of the leader's shares waited out their vote
//! timeout (a 3 s stall of the whole majority side after a 10 s DC cut with a 2 s
//! lease). Now a candidate no majority would follow never raises its ballot.

use super::*;

impl Server {
    pub(super) fn maybe_elect(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let lease = self.env.timeouts.lease;
        let me = self.me;
        let g = self.groups.get_mut(&s).expect("group");
        if g.leading || !Self::may_stand(g, me, now, lease) {
            return;
        }
        // Candidates stagger by their rank after the silent leader in replica order (the
        // next DC goes first), plus a little randomness, so they rarely duel. The lease
        // holder standing again goes first.
        let n = g.replicas.len();
        let old = g
            .leader
            .or(Some(g.promised.node))
            .and_then(|l| g.replicas.iter().position(|r| *r == l));
        let mine = g.replicas.iter().position(|r| *r == me).unwrap_or(0);
        let back = Self::lease_holder_back(g, me);
        let rank = if back {
            0
        } else {
            old.map_or(mine, |o| (mine + n - o - 1) % n) as u64
        };
        // The lease holder back from a crash stands at once (no one else may stand
        // before its lease runs out, so there is no duel to stagger against): waiting
        // for the sweep after next kept its shards without a leader, and every
        // transaction on them waiting, for half a second after each restart.
        if g.elect_after == 0 && !back {
            g.elect_after = now + rank * 500_000_000 + cx.rng().gen_range(0..100_000_000u64);
            return;
        }
        if now < g.elect_after {
            return;
        }
        g.elect_after = now + 3_000_000_000 + rank * 500_000_000 + cx.rng().gen_range(0..100_000_000u64);
        let ballot = Ballot {
            round: g.promised.round + 1,
            node: me,
        };
        g.prevote = Some((ballot, BTreeSet::from([me])));
        for r in g.replicas.clone() {
            if r != me {
                cx.send(
                    r,
                    Msg::PreElect {
                        shard: s,
                        ballot,
                        applied: g.applied,
                    },
                );
            }
        }
        self.try_stand(s, cx);
    }

    /// Whether this replica may run for leader of its group now: it has heard from no
    /// leader for the lease, or it is the lease holder back from a crash.
    fn may_stand(g: &Group, me: NodeId, now: Time, lease: Time) -> bool {
        now.saturating_sub(g.last_heard) > lease || Self::lease_holder_back(g, me)
    }

    /// Whether this replica is back from a crash after it last promised its own ballot
    /// (it led, or stood, under the highest ballot it knows): it follows no one and runs
    /// no election or pre-vote. The others refuse every other candidate while its lease
    /// may hold but would promise it again ([`Self::would_promise`]), so it stands at
    /// once instead of waiting out the lease it held (10 s by default): a one-second
    /// crash of a leader used to leave its shard without one for the whole lease. A
    /// ballot it missed while down makes its pre-vote fail; it then waits for the lease
    /// like any follower (the failed pre-vote stays recorded) and follows the leader
    /// that holds that ballot as soon as it hears from it.
    fn lease_holder_back(g: &Group, me: NodeId) -> bool {
        !g.leading && g.leader.is_none() && g.promised.node == me && g.election.is_none() && g.prevote.is_none()
    }

    /// Whether this replica would promise `ballot` from `from` now: not while it leads,
    /// while the leader it follows may hold its lease, or for a ballot not above its
    /// promise.
    pub(super) fn would_promise(g: &Group, from: NodeId, ballot: Ballot, now: Time, lease: Time) -> bool {
        // A lease that may still hold blocks other candidates, not the lease holder
        // itself standing again (after it stepped down, say): refusing it would leave
        // the group without a leader until the lease ran out.
        let lease_may_hold = g.leader.is_some_and(|l| l != from) && now.saturating_sub(g.last_heard) <= lease;
        // Back from a crash, a replica no longer knows whom it followed (`leader` is
        // volatile), but a lease built on its acknowledgements before the crash may
        // still hold: for a lease from its start it supports only the holder of the
        // ballot it last promised. Without this a leader elected with its promise
        // could choose a PREPARE its predecessor, still leasing, does not know of, and
        // the predecessor would tell a coordinator the transaction settled there
        // (`forget.rs`) or answer a vote question for it.
        let quiet = now < g.quiet_until && from != g.promised.node;
        ballot > g.promised && !lease_may_hold && !quiet && !g.leading
    }

    pub(super) fn on_pre_elect(
        &mut self,
        from: NodeId,
        s: ShardId,
        ballot: Ballot,
        applied: u64,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let (now, lease) = (cx.now(), self.env.timeouts.lease);
        let Some(g) = self.groups.get(&s) else { return };
        // A candidate behind this log's start could not learn the slots in between
        // from this replica (`snapshot.rs`).
        let ok = Self::would_promise(g, from, ballot, now, lease) && applied >= g.log_start;
        cx.send(from, Msg::PreVote { shard: s, ballot, ok });
    }

    pub(super) fn on_pre_vote(&mut self, from: NodeId, s: ShardId, ballot: Ballot, ok: bool, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get_mut(&s) else { return };
        match g.prevote.as_mut() {
            Some((b, yes)) if *b == ballot && ok => {
                yes.insert(from);
            }
            _ => return,
        }
        self.try_stand(s, cx);
    }

    /// Once a majority (itself included) would promise: phase 1 with a raised ballot.
    fn try_stand(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let (now, lease, me) = (cx.now(), self.env.timeouts.lease, self.me);
        let g = self.groups.get_mut(&s).expect("group");
        if g.prevote.as_ref().is_none_or(|(_, yes)| yes.len() < g.majority()) {
            return;
        }
        g.prevote = None;
        // A leader heard from meanwhile, or this node leads again: no election.
        if g.leading || !Self::may_stand(g, me, now, lease) {
            return;
        }
        let ballot = Ballot {
            round: g.promised.round + 1,
            node: me,
        };
        g.promised = ballot;
        g.leader = None;
        let from = g.applied;
        let mine: Vec<(u64, Ballot, Entry)> = g.log.range(from..).map(|(i, (b, e))| (*i, *b, e.clone())).collect();
        let mut promises = BTreeMap::new();
        promises.insert(me, mine);
        g.election = Some((ballot, promises));
        cx.charge_log_sync(16);
        for r in g.replicas.clone() {
            if r != me {
                cx.send(r, Msg::Elect { shard: s, ballot, from });
            }
        }
        // Our own promise may already be a majority (a group of one replica).
        self.try_win(s, cx);
    }

    pub(super) fn on_elect(&mut self, from: NodeId, s: ShardId, ballot: Ballot, start: u64, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let lease = self.env.timeouts.lease;
        let Some(g) = self.groups.get_mut(&s) else { return };
        if !Self::would_promise(g, from, ballot, now, lease) {
            let promised = g.promised;
            cx.send(from, Msg::Nack { shard: s, promised });
            return;
        }
        if start < g.log_start {
            // The candidate is behind this log's start: the slots in between, some
            // chosen, cannot be reported; no promise (`snapshot.rs`).
            return;
        }
        g.promised = ballot;
        g.leader = None;
        g.election = None;
        // Our own pre-vote, if one is out, is moot: completed, it would raise the ballot
        // over the candidate just promised and depose it as it begins to lead (under a
        // 2 s lease on far3 two candidates deposed each other this way for the rest of
        // the run, and a cohort's COMMIT was never chosen: issue 51).
        g.prevote = None;
        // Give this candidate time to finish before standing ourselves.
        g.elect_after = now + 3_000_000_000;
        cx.charge_log_sync(16);
        let entries = g.log.range(start..).map(|(i, (b, e))| (*i, *b, e.clone())).collect();
        cx.send(
            from,
            Msg::Promise {
                shard: s,
                ballot,
                entries,
            },
        );
    }

    pub(super) fn on_promise(
        &mut self,
        from: NodeId,
        s: ShardId,
        ballot: Ballot,
        entries: Vec<(u64, Ballot, Entry)>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(g) = self.groups.get_mut(&s) else { return };
        let Some((b, promises)) = g.election.as_mut() else {
            return;
        };
        if *b != ballot {
            return;
        }
        promises.insert(from, entries);
        self.try_win(s, cx);
    }

    /// Candidate: once a majority (itself included) has promised, takes the lead.
    pub(super) fn try_win(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let g = self.groups.get_mut(&s).expect("group");
        if g.election.as_ref().is_none_or(|(_, p)| p.len() < g.majority()) {
            return;
        }
        // Phase 1 done: for each slot take the value accepted with the highest ballot.
        let (_, promises) = g.election.take().expect("election");
        let mut merged: BTreeMap<u64, (Ballot, Entry)> = BTreeMap::new();
        for es in promises.into_values() {
            for (i, b, e) in es {
                if merged.get(&i).is_none_or(|(mb, _)| b > *mb) {
                    merged.insert(i, (b, e));
                }
            }
        }
        let start = g.applied;
        let end = merged.keys().next_back().map_or(start, |m| m + 1).max(start);
        g.leading = true;
        g.leader = Some(self.me);
        g.chosen = start;
        g.next_slot = end;
        g.votes.clear();
        g.acks.clear();
        // A group of one needs no one's acknowledgement to hold its lease.
        g.lease_until = if g.majority() == 1 { Time::MAX } else { 0 };
        g.elect_after = 0;
        cx.note(format!(
            "replog: elected leader of shard {} ({} slots to re-propose)",
            s.0,
            end - start
        ));
        for slot in start..end {
            let e = merged.remove(&slot).map_or(Entry::Noop, |(_, e)| e);
            self.send_accept(s, slot, e, cx);
            let me = self.me;
            let g = self.groups.get_mut(&s).expect("group");
            g.votes.entry(slot).or_default().insert(me);
        }
        self.rebuild_leader_state(s, cx);
        self.heartbeat(s, cx);
        self.check_chosen(s, start, cx);
    }

    // ------------------------------------------------------------ 2PC at leaders

    /// Leader lost: transactions it was serving abort (their clients time out).
    ///
    /// The shard's lock table goes as a whole, after every share of the shard is
    /// dropped: releasing the locks share by share granted them to shares still waiting,
    /// and a share granted its last lock went on to propose its PREPARE from a node
    /// that no longer led (see [`Server::propose`]).
    pub(super) fn drop_leader_state(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let mut mine: Vec<TxnId> = self.ptxns.keys().filter(|(_, sh)| *sh == s).map(|(t, _)| *t).collect();
        mine.sort();
        for id in mine {
            if let Some(t) = self.ptxns.remove(&(id, s)) {
                t.pending_reads.refuse_all(cx, |key| Msg::ReadReply {
                    answer: ReadAnswer::refused(id, key, AbortReason::LeaderChanged),
                    hint: None,
                });
            }
        }
        self.locks.remove(&s);
        let coord: Vec<TxnId> = self
            .ctxns
            .iter()
            .filter(|(_, c)| c.coord == s)
            .map(|(id, _)| *id)
            .collect();
        for id in coord {
            self.ctxns.remove(&id);
        }
    }

    /// New leader: prepared transactions (PREPARE in the log, no outcome applied) keep
    /// their exclusive locks and resume 2PC.
    pub(super) fn rebuild_leader_state(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let g = &self.groups[&s];
        // Applied PREPAREs without an applied outcome are the shard's pending writes
        // (the log below the applied point may be truncated: `snapshot.rs`); the slots
        // from the applied point on, all in the log, add the PREPAREs not applied yet
        // and the outcomes on their way.
        let mut open: BTreeMap<TxnId, Arc<PrepareEntry>> = g
            .writes
            .iter()
            .filter(|(t, _)| !g.decided.contains_key(t))
            .map(|(t, p)| (*t, p.clone()))
            .collect();
        let mut closing: BTreeSet<TxnId> = BTreeSet::new();
        for (_, (_, e)) in g.log.range(g.applied..) {
            match e {
                // A PREPARE chosen after its transaction's outcome (a coordinator's
                // ABORT can precede its own share's late PREPARE) is moot: it must
                // not reopen the transaction and take its locks again.
                Entry::Prepare(p) if g.decided.contains_key(&p.txn) => {}
                Entry::Prepare(p) => {
                    open.insert(p.txn, p.clone());
                }
                Entry::Commit(t) | Entry::Abort(t) => {
                    closing.insert(*t);
                }
                Entry::Noop | Entry::Forget(_) => {}
            }
        }
        let prepared: BTreeSet<TxnId> = g.writes.keys().copied().collect();
        let mut ask = vec![];
        for (txn, p) in open {
            let prio = (p.ts, txn);
            let locks = self.locks(s);
            for k in &p.reads {
                locks.acquire(txn, prio, k, LockMode::Shared);
            }
            for (k, _, _) in &p.writes {
                locks.acquire(txn, prio, k, LockMode::Exclusive);
            }
            let hops = UNKNOWN_HOPS;
            let state = if closing.contains(&txn) {
                PState::Finishing { hops }
            } else if prepared.contains(&txn) {
                PState::Prepared { asked: 0, hops }
            } else {
                PState::Proposed { hops }
            };
            self.ptxns.insert(
                (txn, s),
                PTxn {
                    prio,
                    state,
                    last_seen: now,
                    pending_reads: Default::default(),
                    entry: Some(p.clone()),
                    blocking: None,
                },
            );
            if p.coord == s {
                let c = self.ctxn(txn, &p, now);
                c.committing = closing.contains(&txn);
                if prepared.contains(&txn) {
                    c.yes.insert(s);
                }
                if !c.committing {
                    ask.extend(p.parts.iter().filter(|q| **q != s).map(|q| (txn, *q)));
                }
            }
        }
        // The cohorts' votes that reached the old leader are gone: ask for them now
        // rather than wait for each cohort's next re-send (up to a query period).
        for (txn, q) in ask {
            self.ask_vote(txn, s, q, false, cx);
        }
    }
}
