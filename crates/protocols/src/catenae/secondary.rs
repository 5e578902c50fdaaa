//! The secondary coordinator (`catenae:secondary=on`, catenae.md §IV: "an optional
//! secondary coordinator for each DC that stands by the coordinator in that DC ... It
//! becomes primary coordinator when the coordinator fails").
//!
//! # What the paper leaves open, and what we chose
//!
//! The paper gives the secondary duplicated epoch messages and the primary's role when
//! the primary fails, and nothing more. A successor that acts on a different picture
//! than its predecessor breaks the one thing Catenae relies on: every DC schedules each
//! epoch with the *same* messages. So the hand-over is built as a small consensus, with
//! the other DCs' coordinators as the witnesses of what this DC's coordinator said:
//!
//! - **Terms.** Each DC's coordinatorship has a term; the coordinator of term `t` is the
//!   DC's node `t % 2` (node 0 starts as coordinator at term 0, node 1 is its standby).
//!   Epoch messages carry their sender's term; a DC that answered a takeover of term
//!   `t` refuses that DC's messages of older terms (`Deposed`).
//! - **Nothing is used before someone else holds it.** A coordinator sends its epoch
//!   messages at once, but uses its own epoch's payload (schedules the epoch with it,
//!   counts its own votes in it) only once its standby (`Held`, inside the DC) or another
//!   DC (the `acks` runs of its epoch messages) holds that payload. The standby almost
//!   always answers first, so this costs one intra-DC round trip per epoch.
//! - **The standby mirrors what its coordinator did**, rather than taking the other DCs'
//!   epoch messages itself (our departure from "duplicated epoch messages"): a message
//!   straight from another DC might be one its coordinator never used, so the
//!   coordinator relays each scheduled epoch with the payloads it used (`Scheduled`) and
//!   each chain that finished here (`Local`). The standby runs the same scheduling,
//!   decisions and commits on them without sending anything, so its state is its
//!   coordinator's, one intra-DC hop behind, except where either went on without the
//!   DC's execution of a decided transaction on its own clock (`give_up_stale`): the
//!   same writes at the same place in the order, committed a little earlier or later.
//! - **Takeover.** A standby that heard nothing from its coordinator for `failover`
//!   (default: the runtime's fail-over timeout) takes the next term: it asks every other
//!   DC's coordinator (`TakeOver`) to refuse the old term and to send what it holds of
//!   this DC's payloads (and its own) from the first epoch the standby has not
//!   scheduled. With every DC's answer it knows every payload its predecessor used or
//!   any DC may use (each was held by the standby or by an answering DC); it adopts
//!   those, seals the epochs nobody holds as empty, re-dispatches the chains that had
//!   not finished here (chain servers follow the newest term's dispatch, and answer a
//!   chain they already resolved as finished), re-sends unacknowledged commits and
//!   goes on. Waiting for every DC matches the default mode, where an epoch already
//!   waits for every DC. A takeover costs the fail-over timeout plus one round trip
//!   to the farthest DC; clients re-send to the other coordinator node after their
//!   status timeout, and follow whichever node answers them.
//! - **A restarted coordinator** first asks its DC's other node for the current term
//!   (`Probe`) and steps down if it was replaced; a coordinator told of a newer term by
//!   anyone steps down too, dropping its unused payloads (their clients re-send).
//!
//! # Limits (stated, not hidden)
//!
//! - Not combined with majority mode: a successor would not know the abandonment
//!   promises its predecessor made (refused at parse time).
//! - Failure detection is a timeout: a coordinator alive but cut off from its own
//!   standby for the whole fail-over time while still reaching other DCs (a partition
//!   inside a DC, which neither the simulator nor `cluster partition` makes) is fenced
//!   by every DC that answered the takeover, but a node of another DC could still
//!   answer a later takeover of its own DC with the stale picture. A restarted one
//!   probes before acting, so crashes are covered.
//! - A standby more than `SCHED_KEEP` epochs behind its coordinator (163 s at 10 ms
//!   epochs) cannot be brought up to date by `SchedNack`, and a takeover needs the
//!   other DCs to still hold the DC's payloads from the standby's position.

use super::coordinator::Coordinator;
use super::*;

/// Scheduled epochs whose payload sets a coordinator keeps (for its standby's
/// `SchedNack` and other DCs' takeovers).
pub(super) const SCHED_KEEP: usize = 1 << 14;
/// Epochs one `Scheduled` re-send covers at most.
const RESEND: usize = 256;
/// Epochs between re-sends of a takeover, probe or `SchedNack`.
const RETRY_EPOCHS: u64 = 5;

/// A coordinator node's part in its DC's coordinatorship.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Role {
    /// The DC's coordinator.
    Leader,
    /// Mirrors the coordinator and watches it.
    Standby,
    /// Taking the next term: waiting for every other DC's answer.
    TakingOver,
    /// Restarted as coordinator: asking the other node whether it was replaced.
    Probing,
}

/// Answers to a takeover, by DC: (answerer's term, taker's payloads, answerer's
/// payloads, (answerer's first epoch, taker's DC's first epoch)).
type Answer = (u32, Vec<Arc<Payload>>, Vec<Arc<Payload>>, (u64, u64));

/// Secondary-coordinator state of a coordinator node.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Sec {
    /// Whether `secondary=on`.
    pub on: bool,
    pub role: Role,
    /// This DC's coordinator term as this node knows it.
    pub term: u32,
    /// Standby: when its coordinator was last heard.
    pub heard: Time,
    /// Own payloads sealed but not yet held by anyone else (not usable yet).
    pub unreleased: BTreeSet<u64>,
    /// Other DCs' coordinator terms (messages of older terms are refused).
    pub fence: BTreeMap<DcId, u32>,
    /// Coordinator: the payload sets of the newest scheduled epochs.
    pub sched_kept: BTreeMap<u64, Vec<(DcId, Arc<Payload>)>>,
    /// Standby: `Scheduled` epochs that arrived ahead of a missing one.
    pending_sched: BTreeMap<u64, Vec<(DcId, Arc<Payload>)>>,
    /// Standby: acknowledgements of commits it has not made yet.
    pub applied_early: HashMap<TxnId, BTreeSet<NodeId>>,
    /// Taking over: from which epoch, when last asked, and the answers so far.
    from: u64,
    asked: u64,
    answers: BTreeMap<DcId, Answer>,
    /// Takeovers this node completed.
    pub takeovers: u64,
}

impl Sec {
    /// The state of a coordinator node (`standby`: the DC's second node).
    pub fn new(on: bool, standby: bool) -> Sec {
        Sec {
            on,
            role: if standby { Role::Standby } else { Role::Leader },
            term: 0,
            heard: 0,
            unreleased: BTreeSet::new(),
            fence: BTreeMap::new(),
            sched_kept: BTreeMap::new(),
            pending_sched: BTreeMap::new(),
            applied_early: HashMap::default(),
            from: 0,
            asked: 0,
            answers: BTreeMap::new(),
            takeovers: 0,
        }
    }
}

impl Coordinator {
    /// Whether this node acts as its DC's coordinator (always, without a secondary).
    pub(super) fn leads(&self) -> bool {
        !self.sec.on || self.sec.role == Role::Leader
    }

    /// The coordinator node of DC `d` as this node knows it.
    pub(super) fn coord_of(&self, d: DcId) -> NodeId {
        if !self.sec.on {
            return self.env.layout.server(d, 0);
        }
        let t = if d == self.dc {
            self.sec.term
        } else {
            self.sec.fence.get(&d).copied().unwrap_or(0)
        };
        self.env.layout.server(d, t % 2)
    }

    /// The other coordinator node of this DC.
    pub(super) fn peer(&self) -> NodeId {
        let a = self.env.layout.server(self.dc, 0);
        if a == self.me {
            self.env.layout.server(self.dc, 1)
        } else {
            a
        }
    }

    /// Where epoch messages and `Started` go: the other DCs' coordinators, and with a
    /// secondary this DC's standby too.
    pub(super) fn recipients(&self) -> Vec<NodeId> {
        let mut v: Vec<NodeId> = (0..self.n_dcs())
            .map(|d| DcId(d as u16))
            .filter(|d| *d != self.dc)
            .map(|d| self.coord_of(d))
            .collect();
        if self.sec.on {
            v.push(self.peer());
        }
        v
    }

    fn failover(&self) -> Time {
        self.cfg.failover.unwrap_or(self.env.timeouts.failover)
    }

    /// An own payload this node knows was sealed by its DC's coordinator: kept for
    /// nacks and takeovers, and its transactions are not accepted again.
    fn own_payload(&mut self, p: Arc<Payload>) {
        for t in &p.txns {
            self.seen.insert(t.id);
        }
        self.mine.insert(p.eid, p);
    }

    /// Coordinator: its own payload of epoch `e` is held elsewhere, so it may use it.
    pub(super) fn sec_release(&mut self, e: u64, cx: &mut Ctx<'_, Msg>) {
        if !self.sec.unreleased.remove(&e) {
            return;
        }
        let Some(p) = self.mine.get(&e).cloned() else { return };
        if e >= self.next_sched {
            self.got.entry(e).or_default().insert(self.dc, p.clone());
        }
        for v in &p.votes {
            self.record_vote(self.dc, v.txn, v.deps.clone(), v.hops, cx);
        }
    }

    /// Runs of each DC's payloads this coordinator holds (scheduled and kept, or
    /// received): the `acks` of its epoch messages with a secondary.
    pub(super) fn sec_acks(&self) -> Vec<(DcId, u64, u64)> {
        if !self.sec.on {
            return vec![];
        }
        let lo = self.sec.sched_kept.keys().next().copied().unwrap_or(self.next_sched);
        (0..self.n_dcs())
            .map(|d| DcId(d as u16))
            .filter(|d| *d != self.dc)
            .map(|d| {
                let mut below = self.next_sched;
                while self.got.get(&below).is_some_and(|m| m.contains_key(&d)) || self.is_empty_epoch(d, below) {
                    below += 1;
                    if below > self.cur + 1000 {
                        break;
                    }
                }
                (d, lo.min(below), below)
            })
            .collect()
    }

    /// Coordinator: another DC's runs of held payloads release our own in them.
    fn sec_on_acks(&mut self, acks: &[(DcId, u64, u64)], cx: &mut Ctx<'_, Msg>) {
        for &(d, lo, below) in acks {
            if d != self.dc {
                continue;
            }
            let es: Vec<u64> = self.sec.unreleased.range(lo..below).copied().collect();
            for e in es {
                self.sec_release(e, cx);
            }
        }
    }

    /// Handles an epoch message with a secondary; returns whether its payloads are to
    /// be taken as usual (a coordinator receiving another DC's current term).
    pub(super) fn sec_on_epoch(
        &mut self,
        from: NodeId,
        dc: DcId,
        payloads: &[Arc<Payload>],
        acks: &[(DcId, u64, u64)],
        term: u32,
        cx: &mut Ctx<'_, Msg>,
    ) -> bool {
        if dc == self.dc {
            // From this DC's other node.
            if term < self.sec.term {
                cx.send(from, Msg::Deposed { term: self.sec.term });
                return false;
            }
            if term > self.sec.term {
                self.step_down(term, cx);
            }
            if self.sec.role != Role::Standby {
                return false;
            }
            self.sec.heard = cx.now();
            let mut eids = vec![];
            for p in payloads {
                eids.push(p.eid);
                if !self.mine.contains_key(&p.eid) {
                    for v in &p.votes {
                        self.record_vote(self.dc, v.txn, v.deps.clone(), v.hops, cx);
                    }
                    self.own_payload(p.clone());
                }
            }
            cx.send(from, Msg::Held { term, eids });
            return false;
        }
        let fence = self.sec.fence.entry(dc).or_insert(0);
        if term < *fence {
            let t = *fence;
            cx.send(from, Msg::Deposed { term: t });
            return false;
        }
        *fence = term;
        // A standby takes no other DC's message (it mirrors its coordinator's); a node
        // taking over keeps them for when it coordinates.
        if !matches!(self.sec.role, Role::Leader | Role::TakingOver) {
            return false;
        }
        self.sec_on_acks(acks, cx);
        true
    }

    /// Messages only a node with a secondary handles.
    pub(super) fn sec_on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        let peer = from == self.peer();
        match msg {
            Msg::Held { term, eids } if self.leads() && term == self.sec.term => {
                for e in eids {
                    self.sec_release(e, cx);
                }
                self.try_schedule(cx);
            }
            Msg::Scheduled { term, eid, payloads } if peer => self.on_scheduled(term, eid, payloads, cx),
            Msg::Local { term, txn, deps, spec } if peer => self.on_local(term, txn, deps, spec, cx),
            Msg::SchedNack { eid } if self.leads() => {
                for (e, ps) in self.sec.sched_kept.range(eid..).take(RESEND) {
                    cx.send(
                        from,
                        Msg::Scheduled {
                            term: self.sec.term,
                            eid: *e,
                            payloads: ps.clone(),
                        },
                    );
                }
            }
            Msg::TakeOver { term, from: first } => {
                let d = self.env.layout.dc_of(from);
                if d == self.dc {
                    if term > self.sec.term {
                        self.step_down(term, cx);
                    }
                    return;
                }
                let fence = self.sec.fence.entry(d).or_insert(0);
                if term < *fence {
                    return;
                }
                *fence = term;
                if !matches!(self.sec.role, Role::Leader | Role::TakingOver) {
                    return;
                }
                let yours = (first..)
                    .take_while(|e| *e < self.cur.max(self.next_sched) + 1000)
                    .filter_map(|e| {
                        self.sec
                            .sched_kept
                            .get(&e)
                            .and_then(|ps| ps.iter().find(|(x, _)| *x == d).map(|(_, p)| p.clone()))
                            .or_else(|| self.got.get(&e).and_then(|m| m.get(&d).cloned()))
                    })
                    .collect();
                let mine = self.mine.range(first..).map(|(_, p)| p.clone()).collect();
                let started = (
                    self.empty_before.get(&self.dc).copied().unwrap_or(0),
                    self.empty_before.get(&d).copied().unwrap_or(0),
                );
                cx.send_on_chain(
                    from,
                    Msg::TakeOverOk {
                        term,
                        own_term: self.sec.term,
                        yours,
                        mine,
                        started,
                    },
                    0,
                );
            }
            Msg::TakeOverOk {
                term,
                own_term,
                yours,
                mine,
                started,
            } if self.sec.role == Role::TakingOver && term == self.sec.term => {
                let d = self.env.layout.dc_of(from);
                self.sec.answers.insert(d, (own_term, yours, mine, started));
                if self.sec.answers.len() + 1 == self.n_dcs() {
                    self.complete_takeover(cx);
                }
            }
            Msg::Deposed { term } if term > self.sec.term => self.step_down(term, cx),
            Msg::Probe { term } => {
                if term > self.sec.term && self.sec.role != Role::Standby {
                    self.step_down(term, cx);
                }
                if peer && term == self.sec.term && self.sec.role == Role::Standby {
                    self.sec.heard = cx.now();
                }
                cx.send(from, Msg::ProbeReply { term: self.sec.term });
            }
            Msg::ProbeReply { term } if self.sec.role == Role::Probing => {
                if term > self.sec.term {
                    self.step_down(term, cx);
                } else {
                    self.sec.role = Role::Leader;
                    self.resume(cx);
                }
            }
            _ => {}
        }
    }

    /// A standby heard its coordinator (of `term`): whether to act on the message.
    fn standby_hears(&mut self, term: u32, cx: &mut Ctx<'_, Msg>) -> bool {
        if term > self.sec.term {
            self.step_down(term, cx);
        }
        if term < self.sec.term || self.sec.role != Role::Standby {
            return false;
        }
        self.sec.heard = cx.now();
        true
    }

    /// Standby: the coordinator scheduled epoch `eid` with `payloads`: schedule it the
    /// same way (in epoch order; a gap is asked for again).
    fn on_scheduled(&mut self, term: u32, eid: u64, payloads: Vec<(DcId, Arc<Payload>)>, cx: &mut Ctx<'_, Msg>) {
        if !self.standby_hears(term, cx) || eid < self.next_sched {
            return;
        }
        self.sec.pending_sched.insert(eid, payloads);
        while let Some(ps) = self.sec.pending_sched.remove(&self.next_sched) {
            // Kept as the coordinator keeps them: for another DC's takeover, and for
            // this node's own standby once it coordinates.
            self.sec.sched_kept.insert(self.next_sched, ps.clone());
            while self.sec.sched_kept.len() > SCHED_KEEP {
                self.sec.sched_kept.pop_first();
            }
            let mut map = BTreeMap::new();
            for (d, p) in ps {
                let own = d == self.dc;
                for v in &p.votes {
                    let hops = if own { v.hops } else { v.hops + 1 };
                    self.record_vote(d, v.txn, v.deps.clone(), hops, cx);
                }
                if own && !self.mine.contains_key(&p.eid) {
                    self.own_payload(p.clone());
                }
                map.insert(d, p);
            }
            let e = self.next_sched;
            self.next_sched += 1;
            self.got.remove(&e);
            self.schedule(e, map, cx);
        }
        if let Some(first) = self.sec.pending_sched.keys().next().copied() {
            let now_e = epoch_of(cx.now(), self.cfg.epoch);
            if first > self.next_sched && self.sec.asked + RETRY_EPOCHS <= now_e {
                self.sec.asked = now_e;
                cx.send(self.peer(), Msg::SchedNack { eid: self.next_sched });
            }
        }
    }

    /// Standby: the coordinator's chain of `txn` finished with `deps`.
    fn on_local(&mut self, term: u32, txn: TxnId, deps: Vec<TxnId>, spec: Spec, cx: &mut Ctx<'_, Msg>) {
        if self.standby_hears(term, cx) {
            self.set_local(txn, deps, spec, cx);
        }
    }

    /// The coordinator's epoch tick on a node that is not coordinator: the standby's
    /// failure detector, and the retries of a takeover or a probe.
    pub(super) fn sec_tick(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let now_e = epoch_of(now, self.cfg.epoch);
        match self.sec.role {
            Role::Leader => {}
            Role::Standby => {
                if now.saturating_sub(self.sec.heard) >= self.failover() {
                    self.start_takeover(cx);
                } else if !self.sec.pending_sched.is_empty() && self.sec.asked + RETRY_EPOCHS <= now_e {
                    self.sec.asked = now_e;
                    cx.send(self.peer(), Msg::SchedNack { eid: self.next_sched });
                }
            }
            Role::TakingOver => {
                if self.sec.asked + RETRY_EPOCHS <= now_e {
                    self.ask_takeover(cx);
                }
            }
            Role::Probing => {
                if self.sec.asked + RETRY_EPOCHS <= now_e {
                    self.sec.asked = now_e;
                    cx.send(self.peer(), Msg::Probe { term: self.sec.term });
                }
            }
        }
    }

    fn start_takeover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.sec.term += 1;
        self.sec.role = Role::TakingOver;
        self.sec.from = self.next_sched;
        self.sec.answers.clear();
        self.sec.pending_sched.clear();
        self.ask_takeover(cx);
    }

    fn ask_takeover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.sec.asked = epoch_of(cx.now(), self.cfg.epoch);
        let msg = Msg::TakeOver {
            term: self.sec.term,
            from: self.sec.from,
        };
        for d in 0..self.n_dcs() {
            let d = DcId(d as u16);
            if d == self.dc {
                cx.send(self.peer(), msg.clone());
            } else if !self.sec.answers.contains_key(&d) {
                // Both nodes: the answer comes from whichever coordinates that DC.
                for i in 0..2 {
                    cx.send_on_chain(self.env.layout.server(d, i), msg.clone(), 0);
                }
            }
        }
        if self.n_dcs() == 1 {
            self.complete_takeover(cx);
        }
    }

    /// Every other DC answered: adopt every payload of this DC anyone holds, seal the
    /// rest empty, and act as the DC's coordinator.
    fn complete_takeover(&mut self, cx: &mut Ctx<'_, Msg>) {
        let from = self.sec.from;
        self.sec.role = Role::Leader;
        self.sec.takeovers += 1;
        cx.note(format!(
            "catenae: the standby took over as DC {}'s coordinator (term {})",
            self.dc.0, self.sec.term
        ));
        for (d, (term, yours, theirs, (first_theirs, first_ours))) in std::mem::take(&mut self.sec.answers) {
            let f = self.sec.fence.entry(d).or_insert(0);
            *f = (*f).max(term);
            let e = self.empty_before.entry(d).or_insert(0);
            *e = (*e).max(first_theirs);
            let e = self.empty_before.entry(self.dc).or_insert(0);
            *e = (*e).max(first_ours);
            for p in yours {
                if !self.mine.contains_key(&p.eid) {
                    self.own_payload(p);
                }
            }
            for p in theirs {
                self.on_payload(d, p, cx);
            }
        }
        let top = self.mine.keys().next_back().copied().map_or(from, |e| e + 1).max(from);
        for e in from..top {
            let p = match self.mine.get(&e) {
                Some(p) => p.clone(),
                None if self.is_empty_epoch(self.dc, e) => continue,
                None => {
                    let p = Arc::new(Payload {
                        eid: e,
                        ..Payload::default()
                    });
                    self.mine.insert(e, p.clone());
                    p
                }
            };
            if e >= self.next_sched {
                self.got.entry(e).or_default().insert(self.dc, p.clone());
            }
            for v in &p.votes {
                self.record_vote(self.dc, v.txn, v.deps.clone(), v.hops, cx);
            }
        }
        self.cur = top.max(self.next_sched);
        self.open = Payload::default();
        self.sec.unreleased.clear();
        // What this DC said from `from` on, under the new term, to every other DC.
        let payloads: Vec<Arc<Payload>> = self.mine.range(from..).map(|(_, p)| p.clone()).collect();
        let acks = self.sec_acks();
        for n in self.recipients() {
            cx.send_on_chain(
                n,
                Msg::Epoch {
                    dc: self.dc,
                    payloads: payloads.clone(),
                    acks: acks.clone(),
                    term: self.sec.term,
                },
                0,
            );
        }
        self.redispatch(cx);
        self.resume(cx);
    }

    /// A new coordinator: chains that have not finished here under it are dispatched
    /// again under its term (a chain whose vote it knows counts as finished), and every
    /// unacknowledged commit or abort is sent again.
    fn redispatch(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.revote();
        let ids: Vec<TxnId> = self.txns_unfinished();
        for id in ids {
            let own_vote = self.votes.get(&id).and_then(|v| v.get(&self.dc)).map(|v| v.0.clone());
            if let Some(Some(deps)) = own_vote {
                self.set_local(id, deps, Spec::Incomplete, cx);
                continue;
            }
            if let Some((ch, hops)) = self.rechain(id) {
                self.unfinished.insert(id, cx.now());
                Self::send_forward(ch, hops, cx);
            }
        }
        let now = cx.now();
        for (_, (at, msgs)) in self.unacked.iter_mut() {
            *at = now;
            for (n, m) in msgs.iter() {
                cx.send(*n, m.clone());
            }
        }
    }

    /// A new coordinator: the conflicting transactions that finished here under its
    /// predecessor but whose vote nobody holds get that execution result as this DC's
    /// vote, in the next epoch message (the predecessor's vote, unheld, was never
    /// counted anywhere).
    fn revote(&mut self) {
        let lo = self.cur + self.decision_delay();
        let mut ids: Vec<TxnId> = self.txns.keys().copied().collect();
        ids.sort();
        for id in ids {
            let t = &self.txns[&id];
            let (Some(local), None) = (&t.local, &t.decision) else {
                continue;
            };
            if self.comps[&t.comp].members.len() < 2 || self.voted(id) {
                continue;
            }
            self.open.votes.push(VoteEntry {
                txn: id,
                eid: t.eid,
                deps: Some(local.clone()),
                period: (lo, lo + self.cfg.tolerance),
                hops: t.hops,
            });
            self.txns.get_mut(&id).expect("present").voted = true;
        }
    }

    /// Scheduled transactions whose chain has not finished here.
    fn txns_unfinished(&self) -> Vec<TxnId> {
        let mut v: Vec<TxnId> = self
            .txns
            .iter()
            .filter(|(_, t)| t.local.is_none() && !t.unexecuted && t.chain.is_some())
            .map(|(id, _)| *id)
            .collect();
        v.sort();
        v
    }

    /// `txn`'s chain dispatched again by this node under its term, with its hops.
    fn rechain(&mut self, txn: TxnId) -> Option<(Arc<ChainTxn>, u32)> {
        let (me, term) = (self.me, self.sec.term);
        let t = self.txns.get_mut(&txn)?;
        let old = t.chain.as_ref()?;
        let ch = Arc::new(ChainTxn {
            coord: me,
            term,
            ..(**old).clone()
        });
        t.chain = Some(ch.clone());
        Some((ch, t.hops))
    }

    /// Leaves the coordinator's role (or a takeover) for a newer term: unused own
    /// payloads and the open epoch are dropped (their clients re-send), and the node
    /// mirrors the new coordinator from its next epoch to schedule.
    pub(super) fn step_down(&mut self, term: u32, cx: &mut Ctx<'_, Msg>) {
        self.sec.term = term;
        self.sec.heard = cx.now();
        if self.sec.role == Role::Standby {
            return;
        }
        if self.sec.role == Role::Leader {
            cx.note(format!(
                "catenae: stepped down to standby of DC {}'s coordination (term {term})",
                self.dc.0
            ));
        }
        self.sec.role = Role::Standby;
        let mut unvoted = vec![];
        for e in std::mem::take(&mut self.sec.unreleased) {
            if let Some(p) = self.mine.remove(&e) {
                for t in &p.txns {
                    self.seen.remove(&t.id);
                }
                unvoted.extend(p.votes.iter().map(|v| v.txn));
            }
        }
        let open = std::mem::take(&mut self.open);
        for t in open.txns {
            self.seen.remove(&t.id);
        }
        unvoted.extend(open.votes.iter().map(|v| v.txn));
        // The votes of the dropped payloads were never held by anyone this node knows
        // of, so they were never counted: the node forgets it cast them, as a standby
        // that never coordinated would. Else, should it coordinate again, its `revote`
        // would take the unsent vote for cast and skip it, and no one would ever cast
        // it (campaign seed 662022: node 0 finished two conflicting transactions, put
        // its votes in the open epoch and crashed; its successor's re-votes waited
        // unsealed in its own open epoch, and when node 0 took the coordinatorship
        // back, both open epochs had been dropped at the step-downs and node 0 skipped
        // the two as voted; they, and every later transaction on their keys, never
        // resolved). A vote another DC holds is adopted at that takeover, before the
        // re-votes.
        for id in unvoted {
            if let Some(t) = self.txns.get_mut(&id) {
                t.voted = false;
            }
        }
        self.got.clear();
        self.dispatch.clear();
        self.unfinished.clear();
        self.sec.answers.clear();
        self.sec.pending_sched.clear();
    }

    /// A restarted coordinator node with a secondary: a coordinator first asks whether
    /// it was replaced; a standby restarts its failure detector.
    pub(super) fn sec_on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.sec.heard = cx.now();
        match self.sec.role {
            Role::Leader | Role::Probing => {
                self.sec.role = Role::Probing;
                self.sec.asked = epoch_of(cx.now(), self.cfg.epoch);
                cx.send(self.peer(), Msg::Probe { term: self.sec.term });
            }
            Role::TakingOver => self.ask_takeover(cx),
            Role::Standby => {}
        }
    }
}
