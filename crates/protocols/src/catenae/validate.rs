//! Validation and commit at a coordinator (catenae.md §VI-D, E): this DC's execution
//! results as votes (Paxos phase 2 among the coordinators) and abstentions, the
//! decision of each conflicting transaction, and the commit of a conflict set in its
//! decided order, or its abort.
//!
//! # What a commit installs (§VI-D, E)
//!
//! Each member of a conflict set commits, in the decided order, with:
//! - this DC's speculative result, when its execution had the chosen dependencies
//!   (or it was non-conflicting) and every value it read speculatively is the one
//!   committed before it (`spec_valid`): the temporary versions become committed;
//! - else, when its execution had the chosen dependencies but read a value that
//!   changed (a dependency caught up, so "the transaction will need to catch up as
//!   well", or it went ahead through the stall valve) or its program did not run to
//!   its end at the chain, the program re-executed here against the committed state
//!   (`spec_redone`);
//! - else (its execution lost the vote) the update operations of a DC that voted the
//!   chosen dependencies, asked for with `CatchUp` (`catchup.rs`): the paper's catch
//!   up, one more round trip, so a home DC whose execution lost answers its client
//!   after two RTTs (§VIII-A). A standby coordinator re-executes instead.
//!
//! Safety does not rest on the speculation: every DC commits the same members in the
//! same order, and a speculative result stands only where its reads equal the
//! committed state, so what it installs is what a serial run in timestamp order gives.

use super::coordinator::{server_of, CoTxn, Coordinator, Vote};
use super::*;
use std::hash::{Hash, Hasher};

impl Coordinator {
    pub(super) fn on_finished(&mut self, txn: TxnId, deps: Vec<TxnId>, hops: u32, spec: Spec, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.txns.get_mut(&txn) else { return };
        if t.local.is_some() {
            return;
        }
        t.hops = t.hops.max(hops);
        t.spec = spec.result().cloned();
        if t.spec.is_none() {
            self.stats.spec_incomplete += 1;
        }
        self.unfinished.remove(&txn);
        let comp = &self.comps[&t.comp];
        let mut local: Vec<TxnId> = deps.into_iter().filter(|d| comp.members.contains(d)).collect();
        local.sort();
        local.dedup();
        t.local = Some(local.clone());
        let (eid, c, multi) = (t.eid, t.comp, comp.members.len() > 1);
        if self.sec.on {
            cx.send(
                self.peer(),
                Msg::Local {
                    term: self.sec.term,
                    txn,
                    deps: local.clone(),
                    spec,
                },
            );
        }
        if multi && !self.voted(txn) {
            // This DC's execution result: its vote, carried by the next epoch message
            // (with a secondary, counted here once that message is held elsewhere).
            // Not when this DC already abstained: a DC votes once.
            self.cast_vote(txn, eid, Some(local), hops, cx);
        }
        self.catch_up_early(txn, cx);
        self.try_finalize(c, cx);
    }

    /// Marks `txn` finished here with same-component dependencies `deps` (no vote).
    pub(super) fn set_local(&mut self, txn: TxnId, deps: Vec<TxnId>, spec: Spec, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.txns.get_mut(&txn) else { return };
        if t.local.is_some() {
            return;
        }
        t.spec = spec.result().cloned();
        self.unfinished.remove(&txn);
        let comp = &self.comps[&t.comp];
        let mut local: Vec<TxnId> = deps.into_iter().filter(|d| comp.members.contains(d)).collect();
        local.sort();
        local.dedup();
        t.local = Some(local);
        let c = t.comp;
        self.catch_up_early(txn, cx);
        self.try_finalize(c, cx);
    }

    /// Epochs until every DC is expected to have this DC's execution result.
    pub(super) fn decision_delay(&self) -> u64 {
        let max_one_way = (0..self.n_dcs())
            .map(|d| self.env.layout.topology.one_way(self.dc, DcId(d as u16)))
            .max()
            .unwrap_or(0);
        max_one_way.div_ceil(self.cfg.epoch) + 1
    }

    /// Whether this DC's vote for `txn` was cast (here or, known here, by a predecessor).
    pub(super) fn voted(&self, txn: TxnId) -> bool {
        self.txns.get(&txn).is_some_and(|t| t.voted) || self.votes.get(&txn).is_some_and(|v| v.contains_key(&self.dc))
    }

    /// Puts this DC's one vote for `txn` (an execution result, or `None`: an
    /// abstention) in the open epoch's payload; without a secondary it counts here
    /// at once, with one once that payload is held elsewhere.
    pub(super) fn cast_vote(
        &mut self,
        txn: TxnId,
        eid: u64,
        deps: Option<Vec<TxnId>>,
        hops: u32,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if let Some(t) = self.txns.get_mut(&txn) {
            t.voted = true;
        }
        let lo = self.cur + self.decision_delay();
        self.open.votes.push(VoteEntry {
            txn,
            eid,
            deps: deps.clone(),
            period: (lo, lo + self.cfg.tolerance),
            hops,
        });
        if !self.sec.on {
            self.record_vote(self.dc, txn, deps, hops, cx);
        }
    }

    /// Abstentions (sweep): a conflicting transaction that has not finished executing
    /// here `abstain_after` after it was scheduled (one of this DC's chain servers is
    /// down or cut off), and whose other DCs' votes are in but cannot reach a majority
    /// without this DC's, gets an abstention as this DC's vote, which decides it
    /// (abort). Without it, two DCs that executed it differently wait for the third's
    /// vote until its server is back, and every later transaction on its keys waits
    /// behind it. Only then: a DC that is merely slow (or the only DC) keeps its
    /// transactions, since abstaining would abort them and help no one.
    pub(super) fn abstain_stale(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let after = self.abstain_after();
        let mut stale: Vec<(TxnId, u64, u32)> = self
            .txns
            .iter()
            .filter(|(id, t)| {
                t.local.is_none()
                    && t.decision.is_none()
                    && !t.voted
                    && now.saturating_sub(t.sched) >= after
                    && self.comps.get(&t.comp).is_some_and(|c| c.members.len() > 1)
                    && self.abstention_decides(**id)
            })
            .map(|(id, t)| (*id, t.eid, t.hops))
            .collect();
        stale.sort();
        for (id, eid, hops) in stale {
            // Its component first: the abstention may decide it, and with members that
            // went on unexecuted (`give_up_stale`) finalize it, before `cast_vote`
            // returns.
            let Some(c) = self.txns.get(&id).filter(|t| t.decision.is_none()).map(|t| t.comp) else {
                continue;
            };
            self.stats.abstained += 1;
            self.cast_vote(id, eid, None, hops, cx);
            self.try_finalize(c, cx);
        }
    }

    /// Decided transactions not executed here `abstain_after` after they were scheduled
    /// (a chain server of this DC is down or cut off) go on without this DC's
    /// execution: they commit with the update operations of a DC that voted the chosen
    /// dependencies (a catch-up, as for a lost vote) or, non-conflicting or on a
    /// standby, with the program re-executed against the committed state, which gives
    /// the same writes (every DC commits the same transactions in the same order); an
    /// abort needs nothing. Without it one dead chain server stops its DC's commits for
    /// good: every later transaction on a key of one that touched the dead server
    /// waits behind it, its clients get no answer, and the DC's live servers never
    /// install what the other DCs commit (issue 53: `catenae:secondary=on` with NY's
    /// first node killed for good). The live chain servers resolve its footprints with
    /// the commit or abort; the dead one gets it when it is back (re-sent until
    /// acknowledged), and a forward pass that reaches a server after it is answered as
    /// resolved (a re-dispatch by a successor coordinator) or dropped. A slow DC gives
    /// up the same way, which is safe (the commit does not rest on the execution) and
    /// costs it its speculation and, for a conflicting transaction, a catch-up round
    /// trip. A chain server that owes acknowledgements and has been silent for as long
    /// is suspected down, and a decided transaction whose chain visits it goes on at
    /// once (here or in `try_finalize`).
    pub(super) fn give_up_stale(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let after = self.abstain_after();
        // Suspects: chain servers owed commits or aborts and silent for `after` (one
        // never heard from is timed from now).
        let owed: BTreeSet<NodeId> = self.unacked.values().flat_map(|(_, m)| m.keys().copied()).collect();
        for n in &owed {
            self.heard.entry(*n).or_insert(now);
        }
        let suspects: BTreeSet<NodeId> = owed
            .into_iter()
            .filter(|n| now.saturating_sub(self.heard[n]) >= after)
            .collect();
        if suspects != self.suspects {
            // For the operator (INFO on a cluster): which chain servers this DC now goes
            // on without.
            let names = |s: &BTreeSet<NodeId>| s.iter().map(|n| format!("n{}", n.0)).collect::<Vec<_>>().join(",");
            cx.note(format!(
                "chain servers suspected down: [{}] (were [{}]); decided transactions visiting them commit here without this DC's execution",
                names(&suspects),
                names(&self.suspects)
            ));
        }
        self.suspects = suspects;
        let mut stale: Vec<(TxnId, u64)> = self
            .txns
            .iter()
            .filter(|(_, t)| Self::may_give_up(t) && (now.saturating_sub(t.sched) >= after || self.visits_suspect(t)))
            .map(|(id, t)| (*id, t.comp))
            .collect();
        // In id order, not the hash table's: a server rebuilt from its image must act
        // the same (tests/images.rs caught it).
        stale.sort();
        for (id, c) in stale {
            self.give_up(id, cx);
            self.try_finalize(c, cx);
        }
    }

    /// `txn` goes on without this DC's execution (`give_up_stale`).
    fn give_up(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        self.unfinished.remove(&txn);
        let Some(t) = self.txns.get_mut(&txn).filter(|t| Self::may_give_up(t)) else {
            return;
        };
        t.unexecuted = true;
        let c = t.comp;
        self.stats.unexecuted += 1;
        let multi = self.comps.get(&c).is_some_and(|c| c.members.len() > 1);
        if multi && self.leads() && self.lost_vote(txn) {
            self.ask_catch_up(txn, cx);
        }
    }

    /// Whether `t` is decided and neither executed here nor given up yet.
    fn may_give_up(t: &CoTxn) -> bool {
        t.decision.is_some() && t.local.is_none() && !t.unexecuted
    }

    /// Whether `t`'s chain visits a chain server suspected down.
    fn visits_suspect(&self, t: &CoTxn) -> bool {
        !self.suspects.is_empty()
            && t.chain
                .as_ref()
                .is_some_and(|c| c.servers.iter().any(|n| self.suspects.contains(n)))
    }

    /// Whether other DCs voted on `txn` (none of them for this DC), and no value could
    /// reach a majority once this DC abstains: its vote is what they wait for.
    fn abstention_decides(&self, txn: TxnId) -> bool {
        let Some(vs) = self.votes.get(&txn) else { return false };
        if vs.is_empty() || vs.contains_key(&self.dc) {
            return false;
        }
        let best = tally(vs).values().map(|(c, _)| *c).max().unwrap_or(0);
        // After the abstention, `n - len - 1` DCs would still be to vote.
        best + (self.n_dcs() - vs.len() - 1) < self.majority()
    }

    /// How long a conflicting transaction may stay unfinished here before this DC
    /// abstains: the runtime's fail-over timeout, and at least twice the stall bound
    /// after which a waiting transaction goes ahead at its chain server.
    pub(super) fn abstain_after(&self) -> Time {
        self.env.timeouts.failover.max(2 * self.cfg.stall)
    }

    /// Whether every DC voted for `txn`, all with the same execution (dependencies).
    fn unanimous(&self, txn: TxnId) -> bool {
        self.votes.get(&txn).is_some_and(|vs| {
            let first = vs.values().next().map(|v| &v.0);
            vs.len() == self.n_dcs() && first.is_some_and(|f| f.is_some() && vs.values().all(|(d, _)| d == f))
        })
    }

    pub(super) fn record_vote(
        &mut self,
        dc: DcId,
        txn: TxnId,
        deps: Option<Vec<TxnId>>,
        hops: u32,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let n = self.n_dcs();
        let vs = self.votes.entry(txn).or_default();
        if vs.contains_key(&dc) {
            return;
        }
        vs.insert(dc, (deps, hops));
        if vs.len() == n {
            self.stats.conflicting_voted_all += 1;
            let same = u64::from(self.unanimous(txn));
            self.stats.identical += same;
            if self.held_pending.remove(&txn) {
                self.stats.spec_held += same;
            }
        }
        if let Some(c) = self.txns.get(&txn).map(|t| t.comp) {
            self.check_decision(txn);
            self.catch_up_early(txn, cx);
            self.try_finalize(c, cx);
        }
    }

    /// Paxos phase 2 (§VI-D2): a value (dependency set) accepted by a majority of DCs
    /// is chosen; when no value can reach a majority any more, the transaction aborts.
    pub(super) fn check_decision(&mut self, txn: TxnId) {
        let (n, maj) = (self.n_dcs(), self.majority());
        let Some(t) = self.txns.get(&txn) else { return };
        if t.decision.is_some() {
            return;
        }
        let Some(vs) = self.votes.get(&txn) else { return };
        let count = tally(vs);
        let best = count
            .iter()
            .max_by_key(|(_, (c, _))| *c)
            .map(|(d, c)| ((*d).clone(), *c));
        let (deps, (c, hops)) = best.unwrap_or_default();
        let t = self.txns.get_mut(&txn).expect("present");
        if c >= maj {
            t.decision = Some(Ok(deps));
            t.hops = t.hops.max(hops);
        } else if c + (n - vs.len()) < maj {
            t.decision = Some(Err(AbortReason::NoMajorityExecution));
            t.hops = t.hops.max(vs.values().map(|v| v.1).max().unwrap_or(0));
            self.stats.no_majority += 1;
        }
    }

    /// A component commits once every member is decided and finished here (or gone on
    /// without this DC's execution, `give_up_stale`), and every
    /// earlier epoch's transactions on its keys are done (§VI-E: dependencies first).
    /// A member waiting for a catch-up holds the members after it, and every later
    /// component on its keys.
    pub(super) fn try_finalize(&mut self, first: u64, cx: &mut Ctx<'_, Msg>) {
        let mut work = vec![first];
        while let Some(c) = work.pop() {
            let Some(comp) = self.comps.get(&c) else { continue };
            if comp.plan.is_none() && !self.suspects.is_empty() {
                // A decided member whose chain visits a server suspected down goes on
                // now (`give_up_stale`).
                let gone: Vec<TxnId> = comp
                    .members
                    .iter()
                    .filter(|m| Self::may_give_up(&self.txns[*m]) && self.visits_suspect(&self.txns[*m]))
                    .copied()
                    .collect();
                for m in gone {
                    self.give_up(m, cx);
                }
            }
            let Some(comp) = self.comps.get(&c) else { continue };
            if comp.plan.is_none() {
                let done_here = comp.members.iter().all(|m| {
                    let t = &self.txns[m];
                    t.decision.is_some() && (t.local.is_some() || t.unexecuted)
                });
                let first = comp.keys.iter().all(|k| {
                    self.pending
                        .get(k)
                        .and_then(|s| s.first())
                        .is_some_and(|(e, _)| *e == comp.eid)
                });
                let (since, n) = (comp.blocked_since, comp.members.len());
                if done_here && !first && since.is_none() {
                    let now = cx.now();
                    self.comps.get_mut(&c).expect("present").blocked_since = Some(now);
                }
                if !(done_here && first) {
                    continue;
                }
                if let Some(since) = since {
                    self.stats.blocked += n as u64;
                    self.stats.blocked_ms += n as f64 * (cx.now() - since) as f64 / 1e6;
                }
                let plan = self.plan(c, cx);
                self.comps.get_mut(&c).expect("present").plan = Some(plan);
            }
            if !self.run_plan(c, cx) {
                continue; // a member waits for a catch-up
            }
            let comp = self.comps.remove(&c).expect("present");
            let mut next: BTreeSet<u64> = BTreeSet::new();
            for k in &comp.keys {
                if let Some(s) = self.pending.get_mut(k) {
                    s.remove(&(comp.eid, c));
                    if let Some((_, n)) = s.first() {
                        next.insert(*n);
                    }
                    if s.is_empty() {
                        self.pending.remove(k);
                    }
                }
            }
            work.extend(next.into_iter().rev());
        }
    }

    /// Orders a component by its decided dependencies (a topological sort, ties by
    /// transaction id) and aborts what lies on or behind a cycle, or was decided to
    /// abort: the rest, in commit order with timestamps (epoch, rank).
    fn plan(&mut self, c: u64, cx: &mut Ctx<'_, Msg>) -> Vec<(TxnId, u64)> {
        let (members, eid) = {
            let comp = &self.comps[&c];
            (comp.members.clone(), comp.eid)
        };
        let mut indeg: BTreeMap<TxnId, usize> = BTreeMap::new();
        let mut out: BTreeMap<TxnId, Vec<TxnId>> = BTreeMap::new();
        let mut aborts: Vec<(TxnId, AbortReason)> = vec![];
        if members.len() > 1 {
            self.stats.spec_needed += members.len() as u64;
        }
        for m in &members {
            match &self.txns[m].decision {
                Some(Ok(_)) => {
                    indeg.insert(*m, 0);
                }
                Some(Err(r)) => aborts.push((*m, r.clone())),
                None => unreachable!("plan runs on decided components"),
            }
        }
        for m in &members {
            if let Some(Ok(deps)) = &self.txns[m].decision {
                for d in deps {
                    if indeg.contains_key(d) {
                        *indeg.get_mut(m).expect("present") += 1;
                        out.entry(*d).or_default().push(*m);
                    }
                }
            }
        }
        // Transactions on a cycle of decided dependencies abort; the rest (including
        // those that depended on them) are ordered by a topological sort.
        let on_cycle: BTreeSet<TxnId> = indeg.keys().copied().filter(|t| reaches(&out, *t, *t)).collect();
        for t in &on_cycle {
            self.stats.cycles += 1;
            aborts.push((*t, AbortReason::DependencyCycle));
            for s in out.get(t).cloned().unwrap_or_default() {
                if let Some(d) = indeg.get_mut(&s) {
                    *d -= 1;
                }
            }
            indeg.remove(t);
        }
        let mut ready: BTreeSet<TxnId> = indeg.iter().filter(|(_, d)| **d == 0).map(|(t, _)| *t).collect();
        let mut order = vec![];
        while let Some(t) = ready.pop_first() {
            order.push(t);
            for s in out.get(&t).cloned().unwrap_or_default() {
                if let Some(d) = indeg.get_mut(&s) {
                    *d -= 1;
                    if *d == 0 {
                        ready.insert(s);
                    }
                }
            }
        }
        debug_assert_eq!(order.len(), indeg.len(), "only cycle members are left out");
        aborts.sort();
        for (t, r) in aborts {
            self.abort(t, r, cx);
        }
        // Every member whose execution here lost the vote asks for its update
        // operations now, together, rather than each once the one before committed
        // (most asked already, when they were decided).
        if members.len() > 1 {
            for t in &order {
                self.catch_up_early(*t, cx);
            }
        }
        order
            .into_iter()
            .enumerate()
            .map(|(rank, t)| (t, (eid << RANK_BITS) | (rank as u64 + 1)))
            .collect()
    }

    /// Commits the planned members of component `c` in order; false while one waits for
    /// a catch-up.
    fn run_plan(&mut self, c: u64, cx: &mut Ctx<'_, Msg>) -> bool {
        let lone = self.comps[&c].members.len() == 1;
        loop {
            let Some(&(t, ts)) = self.comps[&c].plan.as_ref().and_then(|p| p.first()) else {
                return true;
            };
            // Its commit here comes after the commits before it (a catch-up among them
            // delays it by the round trip it waited for).
            let floor = self.comps[&c].hops;
            if let Some(x) = self.txns.get_mut(&t) {
                x.hops = x.hops.max(floor);
            }
            let Some(h) = self.commit(t, ts, lone, cx) else {
                return false;
            };
            let comp = self.comps.get_mut(&c).expect("planned");
            comp.hops = comp.hops.max(h);
            comp.plan.as_mut().expect("planned").remove(0);
        }
    }

    /// What `txn` commits with here (module docs), or `None` while it waits for the
    /// update operations of another DC (asked for here).
    fn committed_result(
        &mut self,
        txn: TxnId,
        lone: bool,
        cx: &mut Ctx<'_, Msg>,
    ) -> Option<Result<Executed, AbortReason>> {
        let t = &self.txns[&txn];
        assert!(
            matches!(t.decision, Some(Ok(_))),
            "only members decided to commit are planned"
        );
        if !lone && self.lost_vote(txn) {
            // This DC executed it with other dependencies: catch up (§VI-E). A standby
            // (`secondary=on`) mirrors its coordinator without a WAN round of its own:
            // it re-executes, which gives the same writes.
            if !self.leads() {
                self.stats.caught_up += 1;
                return Some(rederive(&self.env, &self.txns[&txn], &self.view));
            }
            return match self.catch.fetched.remove(&txn) {
                Some(Some(theirs)) => {
                    self.stats.caught_up += 1;
                    if rederive(&self.env, t, &self.view) != theirs {
                        self.stats.catch_up_divergent += 1;
                        debug_assert!(
                            false,
                            "{txn:?}: a catch-up fetched other writes than a re-execution gives"
                        );
                    }
                    Some(theirs)
                }
                Some(None) => {
                    self.stats.caught_up += 1;
                    self.stats.catch_up_gone += 1;
                    Some(rederive(&self.env, t, &self.view))
                }
                None if self.ask_catch_up(txn, cx) => None,
                None => {
                    self.stats.caught_up += 1;
                    self.stats.catch_up_gone += 1;
                    Some(rederive(&self.env, &self.txns[&txn], &self.view))
                }
            };
        }
        if let Some(s) = t.spec.as_ref().filter(|s| holds(s, &self.view)) {
            self.stats.spec_valid += 1;
            let reads = s.reads.iter().map(|(k, v, _)| (k.clone(), *v)).collect();
            return Some(s.outcome.clone().map(|w| (reads, w)));
        }
        self.stats.spec_redone += 1;
        if lone && t.entry.home != self.dc && !t.unexecuted {
            // The home DC's dominant result is the committed one (§VI-D1); this DC's
            // speculation differed from it.
            self.stats.dominant_spec_mismatch += 1;
        }
        Some(rederive(&self.env, t, &self.view))
    }

    /// Commits `txn` at `ts` (or aborts it, if its program aborted), giving the WAN
    /// hops of its causal chain; `None` while it waits for a catch-up.
    fn commit(&mut self, txn: TxnId, ts: u64, lone: bool, cx: &mut Ctx<'_, Msg>) -> Option<u32> {
        let run = self.committed_result(txn, lone, cx)?;
        let t = self.txns.remove(&txn).expect("scheduled");
        self.unfinished.remove(&txn);
        self.resolver.forget(txn);
        cx.charge_ops((t.keys.len() as u32).max(1));
        if !lone {
            self.keep_result(txn, t.eid, &run, t.hops, cx);
        }
        let (reads, writes) = match run {
            Ok(rw) => rw,
            Err(r) => {
                let hops = t.hops;
                self.txns.insert(txn, t);
                self.abort(txn, r, cx);
                return Some(hops);
            }
        };
        self.stats.committed += 1;
        if lone {
            self.stats.lone_committed += 1;
        } else if self.votes.get(&txn).is_some_and(|vs| vs.len() == self.n_dcs()) {
            self.stats.spec_held += u64::from(self.unanimous(txn));
        } else {
            // Decided by a majority: the last vote says whether every DC agreed.
            self.held_pending.insert(txn);
        }
        let mut finals: BTreeMap<Key, (VersionId, Value)> = BTreeMap::new();
        for (i, (k, v)) in writes.iter().enumerate() {
            finals.insert(k.clone(), (VersionId { txn, seq: i as u32 }, v.clone()));
        }
        let mut h = rustc_hash::FxHasher::default();
        for (k, (v, val)) in &finals {
            k.hash(&mut h);
            v.hash(&mut h);
            val.hash(&mut h);
        }
        let digest = h.finish();
        if let Some(d) = self.dominant_heard.remove(&txn) {
            if d != digest {
                self.stats.dominant_mismatch += 1;
            }
        }
        self.digests.insert(txn, digest);
        let mut per: BTreeMap<NodeId, Vec<(Key, VersionId, Value)>> = BTreeMap::new();
        if let Some(ch) = &t.chain {
            for n in &ch.servers {
                per.insert(*n, vec![]);
            }
        }
        for (k, (v, val)) in finals {
            per.entry(server_of(&self.env, self.dc, &k))
                .or_default()
                .push((k.clone(), v, val.clone()));
            self.view.insert(k, (v, val));
        }
        let leads = self.leads();
        let mut msgs = BTreeMap::new();
        for (n, writes) in per {
            let m = Msg::Commit { txn, ts, writes };
            if leads {
                cx.send(n, m.clone());
            }
            msgs.insert(n, m);
        }
        self.track_unacked(txn, msgs, cx);
        if t.entry.home == self.dc {
            if leads && lone && t.local.as_ref().is_some_and(|l| l.is_empty()) && t.chain.is_some() {
                self.open.dominant.push(DominantEntry { txn, digest });
            }
            let msg = Msg::Outcome {
                txn,
                result: Ok((reads, writes)),
                hops: t.hops,
            };
            self.outcomes.insert(txn, msg.clone());
            if leads {
                cx.send_on_chain(t.entry.client, msg, t.hops);
            }
        }
        Some(t.hops)
    }

    /// Commit or abort messages sent (or, on a standby, that its coordinator sent) and
    /// not yet acknowledged by every chain server.
    fn track_unacked(&mut self, txn: TxnId, mut msgs: BTreeMap<NodeId, Msg>, cx: &mut Ctx<'_, Msg>) {
        if let Some(early) = self.sec.applied_early.remove(&txn) {
            msgs.retain(|n, _| !early.contains(n));
        }
        if !msgs.is_empty() {
            self.unacked.insert(txn, (cx.now(), msgs));
        }
    }

    fn abort(&mut self, txn: TxnId, reason: AbortReason, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.txns.remove(&txn) else { return };
        self.unfinished.remove(&txn);
        self.resolver.forget(txn);
        self.catch_up_forget(txn, cx);
        let leads = self.leads();
        if let Some(ch) = &t.chain {
            let mut msgs = BTreeMap::new();
            for n in &ch.servers {
                let m = Msg::Abort { txn, eid: t.eid };
                if leads {
                    cx.send(*n, m.clone());
                }
                msgs.insert(*n, m);
            }
            self.track_unacked(txn, msgs, cx);
        }
        if t.entry.home == self.dc {
            let msg = Msg::Outcome {
                txn,
                result: Err(reason),
                hops: t.hops,
            };
            self.outcomes.insert(txn, msg.clone());
            if leads {
                cx.send_on_chain(t.entry.client, msg, t.hops);
            }
        }
    }
}
/// The votes per value (dependency set): how many DCs voted it, and the most WAN hops
/// behind any of those votes. Abstentions count as votes cast, never toward a value.
fn tally(vs: &BTreeMap<DcId, Vote>) -> BTreeMap<&Vec<TxnId>, (usize, u32)> {
    let mut count: BTreeMap<&Vec<TxnId>, (usize, u32)> = BTreeMap::new();
    for (deps, hops) in vs.values() {
        let Some(deps) = deps else { continue };
        let c = count.entry(deps).or_insert((0, 0));
        c.0 += 1;
        c.1 = c.1.max(*hops);
    }
    count
}

/// Whether every value a speculative execution read is the committed one now (the
/// version and the value: a dependency that caught up keeps its version ids).
fn holds(s: &SpecResult, view: &HashMap<Key, (VersionId, Value)>) -> bool {
    s.reads.iter().all(|(k, v, val)| match view.get(k) {
        Some((cv, cval)) => *v == Some(*cv) && val.as_ref() == Some(cval),
        None => v.is_none() && val.is_none(),
    })
}

/// Whether `to` is reachable from `from` by one or more edges of `out`.
fn reaches(out: &BTreeMap<TxnId, Vec<TxnId>>, from: TxnId, to: TxnId) -> bool {
    let mut seen: BTreeSet<TxnId> = BTreeSet::new();
    let mut stack: Vec<TxnId> = out.get(&from).cloned().unwrap_or_default();
    while let Some(t) = stack.pop() {
        if t == to {
            return true;
        }
        if seen.insert(t) {
            stack.extend(out.get(&t).into_iter().flatten().copied());
        }
    }
    false
}

/// Runs the transaction's program against the committed state `view` (reads
/// supplied), refusing any key outside its declaration: its reads (with versions)
/// and its writes in program order.
#[allow(clippy::type_complexity)]
pub(super) fn rederive(env: &Env, t: &CoTxn, view: &HashMap<Key, (VersionId, Value)>) -> Result<Executed, AbortReason> {
    let mut exec = Execution::new(t.entry.call.clone());
    let mut reads = vec![];
    loop {
        match crate::kit::client::next_step(&mut exec, &env.registry) {
            Step::Read(k) => {
                if !t.keys.iter().any(|(d, _)| meridian_txn::covers(d, &k)) {
                    return Err(AbortReason::UndeclaredKey);
                }
                let v = view.get(&k);
                reads.push((k.clone(), v.map(|x| x.0)));
                exec.supply(k, v.map(|x| x.1.clone()));
            }
            Step::Done { writes, .. } => {
                if writes
                    .iter()
                    .any(|(k, _)| !t.keys.iter().any(|(d, w)| *w && meridian_txn::covers(d, k)))
                {
                    return Err(AbortReason::UndeclaredKey);
                }
                return Ok((reads, writes));
            }
            Step::Abort(r) => return Err(r),
            Step::Wait { .. } => return Err(AbortReason::NotInteractive),
        }
    }
}
