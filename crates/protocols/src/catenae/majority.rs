//! Majority-only mode (`catenae:majority=on`, catenae.md §VIII-B): an epoch is
//! scheduled without a DC whose epoch message is later than the delay tolerance.
//!
//! # Why abandoning needs agreement here
//!
//! The paper proceeds on a majority of epoch messages and lets the validation phase
//! correct the divergent executions. Our coordinators commit in an order that is a
//! function of each epoch's batch (module docs of `catenae`), so every DC must
//! schedule an epoch with the *same* batch: a late message may be left out only if
//! every DC leaves it out. Each DC's message for epoch `e` is therefore a consensus slot
//! `(owner, e)`, as in Mencius: the owner proposes its message at ballot zero (sending
//! it is the proposal, receiving it before any promise is the acceptance), and a
//! coordinator that waited longer than the delay tolerance runs Paxos over the late
//! slots with a higher ballot, proposing what a majority holds or, where none holds
//! anything, "abandoned" (an empty message).
//!
//! - A slot counts as decided at a coordinator when a revocation told it the chosen
//!   value, when its owner said it had not started yet (`Started`), or when a majority
//!   accepted the message at ballot zero: the owner, this coordinator if it received
//!   it, and every coordinator whose acknowledgements (`Epoch::acks`, piggybacked on
//!   epoch messages) cover it. With three DCs receiving a message is enough; the owner's
//!   own message needs one acknowledgement, so in this mode a DC waits one more one-way
//!   trip (to its nearest DC and back) before it schedules an epoch holding its own
//!   transactions.
//! - An owner never promises for its own slots; a coordinator that promised a ballot
//!   for a slot ignores that slot's message afterwards (its votes still count: a vote
//!   is its DC's one execution result, re-sent if the message carrying it is
//!   abandoned).
//! - Transactions of an abandoned message of this DC abort at home with
//!   `EpochAbandoned`; no DC schedules them.
//! - A DC is taken for failed when nothing came from its coordinator for the delay
//!   tolerance, by the local clock (a skewed clock does not make a live DC late). Its
//!   slots are then abandoned ahead: those that a revocation round takes plus one more
//!   tolerance, and again before they run out while it stays silent. The coordinator
//!   right after it in DC order revokes first; each next one waits one revocation
//!   round longer, and a refused or unanswered revocation is retried after a random
//!   extra wait, so two revokers do not keep pre-empting each other.
//! - A slot that blocks scheduling for a revocation round longer than the tolerance
//!   while later slots of its DC are already here (promised to a revocation that did
//!   not finish, or held everywhere with its acknowledgements lost) is decided by a
//!   revocation of its own, which keeps a message a majority holds.
//! - Decisions are kept (and answered to `SlotNack`s) for `KEEP` slots, and received
//!   messages likewise, so a slow coordinator's revocation still learns every value a
//!   majority holds. A revocation of a slot older than that is refused.
//!
//! Conflicting transactions still need a majority of equal votes. A DC whose message
//! for epoch `e` was abandoned abstains on `e`'s conflicting transactions: every DC
//! learns the slot's decision before it schedules `e` (that DC included, before it
//! could execute and vote), so all count the same abstention. So does a DC for the
//! epochs before its coordinator started (`Started`): such a slot may be decided here
//! by a revocation (abandoned) and there by `Started` (empty), and the owner itself
//! counts it empty without learning of any revocation. Without it, a transaction
//! of `e` that the two other DCs of three executed differently waited for the vote of a
//! DC cut off for good (it cannot schedule `e` while cut off), and every later
//! transaction on its keys behind it: the majority stopped committing until the cut
//! healed. The paper (§VIII-B) proceeds on a majority's messages and corrects with
//! the majority's dependencies; it does not say what a left-out DC votes, nor what a
//! split of the rest does; here the left-out DC is out of that epoch's validation and
//! a split aborts (§VI-E: no majority). Still open: a transaction of an epoch just
//! before a cut (its message not abandoned) whose vote the cut DC sent after the cut
//! and that the other two split on waits for that vote (it may exist).

use super::coordinator::Coordinator;
use super::*;
use rand::Rng as _;

/// Slots of received messages and decisions kept for answering revocations.
const KEEP: usize = 1 << 18;
/// Slots one revocation covers at most.
const MAX_RANGE: u64 = 1024;
/// Epochs an acknowledgement run reaches back at most.
const ACK_SCAN: u64 = 4096;

/// A slot's value as an acceptor reports it: the ballot it was accepted at, and the
/// message (`None`: abandoned).
type Held = (Ballot, Option<Arc<Payload>>);

/// A revocation this coordinator runs.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Revocation {
    lo: u64,
    hi: u64,
    ballot: Ballot,
    started: Time,
    /// Give up and retry this long after `started`.
    retry_after: Time,
    /// Phase 1 answers: DC → held values.
    #[allow(clippy::type_complexity)]
    promises: BTreeMap<DcId, Vec<(u64, Ballot, Option<Arc<Payload>>)>>,
    /// Phase 2: the values proposed, and who accepted.
    proposed: Option<Vec<Option<Arc<Payload>>>>,
    accepted: BTreeSet<DcId>,
}

/// Majority mode's state at one coordinator.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Slots {
    /// Highest ballot promised per slot (absent: none, so ballot zero is accepted).
    promised: BTreeMap<(DcId, u64), Ballot>,
    /// Values accepted at a ballot above zero.
    accepted: BTreeMap<(DcId, u64), Held>,
    /// Decided by a revocation (`None`: abandoned).
    pub(super) decided: BTreeMap<(DcId, u64), Option<Arc<Payload>>>,
    /// Other DCs' messages received at ballot zero.
    held: BTreeMap<(DcId, u64), Arc<Payload>>,
    /// Acknowledgements heard: acks[y][d] = (from, below): y accepted d's messages of
    /// every epoch in `from..below` at ballot zero.
    acks: BTreeMap<DcId, BTreeMap<DcId, (u64, u64)>>,
    /// When each other DC's coordinator was last heard from (this node's clock).
    pub(super) heard: BTreeMap<DcId, Time>,
    /// Per other DC: its first undecided slot here, and since when it is the first.
    blocked: BTreeMap<DcId, (u64, Time)>,
    /// Revocations running, by owner.
    running: BTreeMap<DcId, Revocation>,
    /// Last round used.
    round: u64,
    /// When this coordinator last started or recovered: it judges lateness only of
    /// messages due after that (a recovered coordinator fetches older ones instead).
    pub(super) up_since: Time,
    /// Slots abandoned (counter for the experiments).
    pub(super) abandoned: u64,
    /// Per other DC, the last acknowledgement run computed, `(top, from)`: every epoch
    /// in `from..=top` was held or empty then. Only `held` growing and `empty_before`
    /// rising happen between two computations, so the next one need look only above
    /// `top` and below `from`; dropping an entry from `held` clears this.
    runs: BTreeMap<DcId, (u64, u64)>,
}

impl Coordinator {
    fn mj_coords_all(&self) -> Vec<(DcId, NodeId)> {
        (0..self.n_dcs())
            .map(|d| (DcId(d as u16), self.env.layout.server(DcId(d as u16), 0)))
            .collect()
    }

    /// The acknowledgements this coordinator's epoch messages carry: per other DC, the
    /// run of its epochs accepted here at ballot zero that ends at the newest one.
    pub(super) fn mj_acks(&mut self) -> Vec<(DcId, u64, u64)> {
        if !self.cfg.majority {
            return vec![];
        }
        let mut out = vec![];
        for d in 0..self.n_dcs() {
            let d = DcId(d as u16);
            if d == self.dc {
                continue;
            }
            let Some((&(_, top), _)) = self.slots.held.range((d, 0)..=(d, u64::MAX)).next_back() else {
                continue;
            };
            let from = self.ack_run_from(d, top);
            self.slots.runs.insert(d, (top, from));
            out.push((d, from, top + 1));
        }
        out
    }

    /// The lowest `from` such that every epoch of `d` in `from..=top` is held or empty,
    /// reaching back at most `ACK_SCAN` epochs. Walks only the epochs that may have
    /// changed since the last run computed for `d` (`Slots::runs`): those above its
    /// top and below its start.
    fn ack_run_from(&self, d: DcId, top: u64) -> u64 {
        let lo = top.saturating_sub(ACK_SCAN);
        let ok = |e: u64| self.slots.held.contains_key(&(d, e)) || self.is_empty_epoch(d, e);
        let mut from = top;
        let last = self.slots.runs.get(&d).copied().filter(|&(t, _)| t <= top);
        if let Some((t, f)) = last {
            while from > t && from > lo && ok(from - 1) {
                from -= 1;
            }
            if from == t {
                // Everything in `f..=t` is still held or empty.
                from = f.max(lo);
            }
        }
        while from > lo && ok(from - 1) {
            from -= 1;
        }
        from
    }

    /// Acknowledgements from `dc`'s epoch message (any ever heard stays true: an
    /// acceptance at ballot zero is never undone; the newest run is kept). A message
    /// from `dc` also shows it is up again.
    pub(super) fn mj_on_acks(&mut self, dc: DcId, acks: Vec<(DcId, u64, u64)>) {
        if !self.cfg.majority {
            return;
        }
        let m = self.slots.acks.entry(dc).or_default();
        for (d, from, below) in acks {
            let x = m.entry(d).or_insert((0, 0));
            if below > x.1 || (below == x.1 && from < x.0) {
                *x = (from, below);
            }
        }
    }

    /// Whether the message of `dc` for epoch `e` may be taken as received (majority
    /// mode: not after a promise for its slot). Records it as held.
    pub(super) fn mj_take(&mut self, dc: DcId, p: &Arc<Payload>) -> bool {
        if !self.cfg.majority {
            return true;
        }
        let slot = (dc, p.eid);
        if self.slots.promised.contains_key(&slot) || self.slots.decided.contains_key(&slot) {
            return false;
        }
        self.slots.held.insert(slot, p.clone());
        while self.slots.held.len() > KEEP {
            self.slots.held.pop_first();
            self.slots.runs.clear();
        }
        true
    }

    /// Whether slot `(d, e)` is decided here, so epoch `e` may count on it. Outside
    /// majority mode: whether the message arrived.
    pub(super) fn mj_decided(&self, d: DcId, e: u64, have: bool) -> bool {
        if self.is_empty_epoch(d, e) {
            return true;
        }
        if !self.cfg.majority {
            return have;
        }
        if self.slots.decided.contains_key(&(d, e)) {
            return true;
        }
        if !have {
            return false;
        }
        // Accepted at ballot zero by the owner, by us (we hold it), and by those whose
        // acknowledgements cover it.
        let mut n = 1 + usize::from(d != self.dc);
        for (y, m) in &self.slots.acks {
            if *y != d && *y != self.dc && m.get(&d).is_some_and(|(f, b)| *f <= e && e < *b) {
                n += 1;
            }
        }
        n >= self.majority()
    }

    /// At each epoch boundary: revoke other DCs' slots late beyond the delay tolerance,
    /// retry revocations that stalled, and ask for decisions missing for long.
    pub(super) fn mj_tick(&mut self, cx: &mut Ctx<'_, Msg>) {
        if !self.cfg.majority {
            return;
        }
        let now = cx.now();
        let n = self.n_dcs();
        let retry_after = 2 * self.max_rtt() + self.cfg.delay_tolerance;
        let ahead = retry_after.div_ceil(self.cfg.epoch);
        for d in 0..n {
            let d = DcId(d as u16);
            if d == self.dc {
                continue;
            }
            if let Some(r) = self.slots.running.get(&d) {
                // A stalled revocation (a duel, a lost answer) is retried after a random
                // extra wait, so two revokers do not keep pre-empting each other.
                if now.saturating_sub(r.started) < r.retry_after {
                    continue;
                }
                self.slots.running.remove(&d);
            }
            // A DC is taken for failed when nothing came from its coordinator for the
            // delay tolerance (by this node's clock, so clock skew between DCs does not
            // count as lateness). The DC right after it in order revokes first; each
            // next one also gives the one before it time to finish.
            let rank = ((self.dc.0 as usize + n - d.0 as usize) % n) as u64; // 1..n-1
            let wait = self.cfg.delay_tolerance + (rank - 1) * retry_after;
            let heard = self.slots.heard.get(&d).copied().unwrap_or(0).max(self.slots.up_since);
            let silent = now.saturating_sub(heard) >= wait;
            let have = |e: u64| self.got.get(&e).is_some_and(|m| m.contains_key(&d));
            let Some(lo) = (self.next_sched..self.cur + ahead).find(|e| !self.mj_decided(d, *e, have(*e))) else {
                continue;
            };
            // A slot can stay undecided though its DC is heard: promised here to a
            // revocation that did not finish (its owner's message is refused now), or
            // held everywhere with its acknowledgements lost. One that blocked this
            // DC's scheduling for longer than `wait` plus a revocation round is decided
            // by a revocation of its own (which keeps a message a majority holds).
            let since = match self.slots.blocked.get(&d) {
                Some((e, t)) if *e == lo => *t,
                _ => {
                    self.slots.blocked.insert(d, (lo, now));
                    now
                }
            };
            // Only a hole behind the owner's progress: under clock skew a live DC's
            // next messages are merely later, and are not taken for stuck.
            let past = self.slots.held.range((d, lo + 1)..=(d, u64::MAX)).next().is_some()
                || self.slots.decided.range((d, lo + 1)..=(d, u64::MAX)).next().is_some();
            let stuck = lo < self.cur && past && now.saturating_sub(since) >= wait + retry_after;
            let decided = |e: u64| self.mj_decided(d, e, have(e));
            let hi = if silent && lo <= self.cur + ahead / 2 {
                // Its slots are abandoned ahead (the epochs a revocation takes and a
                // tolerance more), and again before those run out while it stays silent.
                self.cur + ahead
            } else if stuck {
                let mut hi = lo;
                while hi + 1 < self.cur && hi + 1 - lo < MAX_RANGE && !decided(hi + 1) {
                    hi += 1;
                }
                hi
            } else {
                continue;
            }
            .min(lo + MAX_RANGE - 1);
            let extra = cx.rng().gen_range(0..=retry_after);
            self.mj_start(d, lo, hi, retry_after + extra, cx);
        }
    }

    fn max_rtt(&self) -> Time {
        (0..self.n_dcs())
            .map(|d| 2 * self.env.layout.topology.one_way(self.dc, DcId(d as u16)))
            .max()
            .unwrap_or(0)
    }

    fn mj_start(&mut self, owner: DcId, lo: u64, hi: u64, retry_after: Time, cx: &mut Ctx<'_, Msg>) {
        self.slots.round += 1;
        let ballot = Ballot {
            round: self.slots.round,
            dc: self.dc.0,
        };
        self.slots.running.insert(
            owner,
            Revocation {
                lo,
                hi,
                ballot,
                started: cx.now(),
                retry_after,
                promises: BTreeMap::new(),
                proposed: None,
                accepted: BTreeSet::new(),
            },
        );
        self.mj_to_acceptors(owner, Msg::Abandon { owner, lo, hi, ballot }, cx);
    }

    /// Sends a revocation message to every coordinator but `owner`'s (an owner never
    /// promises for its own slots), in DC order.
    fn mj_to_acceptors(&mut self, owner: DcId, m: Msg, cx: &mut Ctx<'_, Msg>) {
        for (d, node) in self.mj_coords_all() {
            if d != owner {
                self.mj_send(node, m.clone(), cx);
            }
        }
    }

    /// Sends a revocation message to the coordinator on `to`; when that is this one, it
    /// is handled here at once.
    fn mj_send(&mut self, to: NodeId, m: Msg, cx: &mut Ctx<'_, Msg>) {
        if to == self.me {
            self.mj_on_revocation(self.me, m, cx);
        } else {
            cx.send_on_chain(to, m, 0);
        }
    }

    /// A message of a revocation (Paxos over late slots) from the coordinator on `from`.
    pub(super) fn mj_on_revocation(&mut self, from: NodeId, m: Msg, cx: &mut Ctx<'_, Msg>) {
        let from_dc = self.env.layout.dc_of(from);
        match m {
            Msg::Abandon { owner, lo, hi, ballot } => self.mj_on_abandon(from, owner, lo, hi, ballot, cx),
            Msg::AbandonPromise(p) => self.mj_on_promise(from_dc, p, cx),
            Msg::AbandonAccept(a) => self.mj_on_accept(from, a, cx),
            Msg::AbandonAccepted(a) => self.mj_on_accepted(from_dc, a, cx),
            _ => {}
        }
    }

    /// The value held here for a slot, for a phase 1b answer: `Err(())` when the slot
    /// was scheduled so long ago that its value is no longer kept.
    #[allow(clippy::type_complexity)]
    fn mj_held_value(&self, owner: DcId, e: u64) -> Result<Option<(Ballot, Option<Arc<Payload>>)>, ()> {
        let slot = (owner, e);
        if let Some(v) = self.slots.decided.get(&slot) {
            return Ok(Some((Ballot::MAX, v.clone())));
        }
        if self.is_empty_epoch(owner, e) {
            return Ok(Some((Ballot::MAX, None)));
        }
        if let Some(p) = self.slots.held.get(&slot) {
            // Received at ballot zero; decided if its epoch was scheduled here.
            let b = if e < self.next_sched { Ballot::MAX } else { Ballot::ZERO };
            return Ok(Some((b, Some(p.clone()))));
        }
        if e < self.next_sched {
            return Err(()); // scheduled here, value forgotten
        }
        Ok(self.slots.accepted.get(&slot).cloned())
    }

    fn mj_on_abandon(&mut self, from: NodeId, owner: DcId, lo: u64, hi: u64, ballot: Ballot, cx: &mut Ctx<'_, Msg>) {
        if !self.cfg.majority || owner == self.dc || hi < lo || hi - lo >= MAX_RANGE {
            return;
        }
        let mut ok = (lo..=hi).all(|e| self.slots.promised.get(&(owner, e)).is_none_or(|p| *p <= ballot));
        let mut values = vec![];
        if ok {
            for e in lo..=hi {
                match self.mj_held_value(owner, e) {
                    Ok(Some((b, v))) => values.push((e, b, v)),
                    Ok(None) => {}
                    Err(()) => ok = false,
                }
            }
        }
        if ok {
            for e in lo..=hi {
                if !(e < self.next_sched || self.slots.decided.contains_key(&(owner, e))) {
                    self.slots.promised.insert((owner, e), ballot);
                }
            }
        } else {
            values.clear();
        }
        let reply = AbandonPromise {
            owner,
            lo,
            hi,
            ballot,
            ok,
            values,
        };
        self.mj_send(from, Msg::AbandonPromise(reply), cx);
    }

    fn mj_on_promise(&mut self, from_dc: DcId, p: AbandonPromise, cx: &mut Ctx<'_, Msg>) {
        let (owner, lo, hi, ballot) = (p.owner, p.lo, p.hi, p.ballot);
        let maj = self.majority();
        let Some(r) = self.slots.running.get_mut(&owner) else {
            return;
        };
        if (r.lo, r.hi, r.ballot) != (lo, hi, ballot) || r.proposed.is_some() {
            return;
        }
        if !p.ok {
            // A higher ballot was promised: let the retry pick a higher round.
            self.slots.round = self.slots.round.max(ballot.round);
            return;
        }
        r.promises.insert(from_dc, p.values);
        if r.promises.len() < maj {
            return;
        }
        // Phase 2: per slot the value of the highest ballot reported, else abandoned.
        let mut best: BTreeMap<u64, (Ballot, Option<Arc<Payload>>)> = BTreeMap::new();
        for vs in r.promises.values() {
            for (e, b, v) in vs {
                if best.get(e).is_none_or(|(b0, _)| b > b0) {
                    best.insert(*e, (*b, v.clone()));
                }
            }
        }
        let proposed: Vec<Option<Arc<Payload>>> = (lo..=hi).map(|e| best.remove(&e).and_then(|(_, v)| v)).collect();
        r.proposed = Some(proposed.clone());
        let accept = AbandonAccept {
            owner,
            lo,
            hi,
            ballot,
            values: proposed,
        };
        self.mj_to_acceptors(owner, Msg::AbandonAccept(accept), cx);
    }

    fn mj_on_accept(&mut self, from: NodeId, a: AbandonAccept, cx: &mut Ctx<'_, Msg>) {
        let (owner, lo, hi, ballot, values) = (a.owner, a.lo, a.hi, a.ballot, a.values);
        if !self.cfg.majority || owner == self.dc || values.len() as u64 != hi.saturating_sub(lo) + 1 {
            return;
        }
        let ok = (lo..=hi).all(|e| self.slots.promised.get(&(owner, e)).is_none_or(|p| *p <= ballot));
        if ok {
            for (i, v) in values.into_iter().enumerate() {
                let e = lo + i as u64;
                if e < self.next_sched || self.slots.decided.contains_key(&(owner, e)) {
                    continue;
                }
                self.slots.promised.insert((owner, e), ballot);
                self.slots.accepted.insert((owner, e), (ballot, v));
            }
        }
        let reply = AbandonAccepted {
            owner,
            lo,
            hi,
            ballot,
            ok,
        };
        self.mj_send(from, Msg::AbandonAccepted(reply), cx);
    }

    fn mj_on_accepted(&mut self, from_dc: DcId, a: AbandonAccepted, cx: &mut Ctx<'_, Msg>) {
        let (owner, lo, hi, ballot) = (a.owner, a.lo, a.hi, a.ballot);
        let maj = self.majority();
        let Some(r) = self.slots.running.get_mut(&owner) else {
            return;
        };
        if (r.lo, r.hi, r.ballot) != (lo, hi, ballot) {
            return;
        }
        if !a.ok {
            self.slots.round = self.slots.round.max(ballot.round);
            return;
        }
        r.accepted.insert(from_dc);
        if r.accepted.len() < maj {
            return;
        }
        let Some(r) = self.slots.running.remove(&owner) else {
            return;
        };
        let values = r.proposed.expect("phase 2 ran");
        for (_, node) in self.mj_coords_all() {
            if node != self.me {
                cx.send_on_chain(
                    node,
                    Msg::SlotsDecided {
                        owner,
                        lo,
                        values: values.clone(),
                    },
                    0,
                );
            }
        }
        self.mj_on_decided(owner, lo, values, cx);
    }

    /// Chosen values of `owner`'s slots from `lo` on.
    pub(super) fn mj_on_decided(
        &mut self,
        owner: DcId,
        lo: u64,
        values: Vec<Option<Arc<Payload>>>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if !self.cfg.majority {
            return;
        }
        for (i, v) in values.into_iter().enumerate() {
            let e = lo + i as u64;
            let slot = (owner, e);
            if self.slots.decided.contains_key(&slot) {
                continue;
            }
            if let Some(p) = &v {
                if p.eid != e {
                    continue; // malformed
                }
            }
            self.slots.decided.insert(slot, v.clone());
            self.slots.promised.remove(&slot);
            self.slots.accepted.remove(&slot);
            if v.is_none() {
                self.slots.abandoned += 1;
            }
            if e >= self.next_sched {
                let p = v.clone().unwrap_or_else(|| {
                    Arc::new(Payload {
                        eid: e,
                        ..Payload::default()
                    })
                });
                self.got.entry(e).or_default().insert(owner, p);
            }
            // The votes of a message decided this way count as if it had arrived (a
            // late copy of it is dropped now that its slot is filled).
            if let Some(p) = &v {
                if owner != self.dc {
                    for vote in &p.votes {
                        self.record_vote(owner, vote.txn, vote.deps.clone(), vote.hops + 1, cx);
                    }
                }
            }
            if owner == self.dc && v.is_none() {
                self.mj_own_abandoned(e, cx);
            }
        }
        while self.slots.decided.len() > KEEP {
            self.slots.decided.pop_first();
        }
        self.try_schedule(cx);
    }

    /// This DC's message for epoch `e` was abandoned: its transactions abort at home,
    /// and its votes go out again with the open epoch.
    pub(super) fn mj_own_abandoned(&mut self, e: u64, cx: &mut Ctx<'_, Msg>) {
        let Some(p) = self.mine.get(&e).cloned() else { return };
        for t in &p.txns {
            if self.outcomes.contains_key(&t.id) {
                continue;
            }
            let msg = Msg::Outcome {
                txn: t.id,
                result: Err(AbortReason::EpochAbandoned),
                hops: t.hops,
            };
            self.outcomes.insert(t.id, msg.clone());
            cx.send_on_chain(t.client, msg, t.hops);
        }
        self.open.votes.extend(p.votes.iter().cloned());
    }

    /// Answers a `SlotNack`: the values of `owner`'s slots from `eid` on that are
    /// decided here: by a revocation, scheduled here (an epoch is scheduled only once
    /// all its slots are decided, so a message held for it was chosen at ballot zero),
    /// or held here at ballot zero with a majority's acceptance known here (with three
    /// DCs: the owner's and ours). The last matters to the owner itself: it counts its
    /// own message decided only from acknowledgements, and an acknowledgement run ends
    /// at the newest message held, so one lost, or a later hole of abandoned slots,
    /// can leave a slot it never covers. Every DC could then wait at the same epoch
    /// for its own slot while the others, holding it, neither revoke it (not late for
    /// them) nor answered for it (not scheduled yet).
    pub(super) fn mj_on_slot_nack(&mut self, from: NodeId, owner: DcId, eid: u64, cx: &mut Ctx<'_, Msg>) {
        if !self.cfg.majority {
            return;
        }
        let mut values = vec![];
        let mut e = eid;
        while (values.len() as u64) < MAX_RANGE {
            let v = if let Some(v) = self.slots.decided.get(&(owner, e)) {
                v.clone()
            } else if e < self.next_sched && self.is_empty_epoch(owner, e) {
                None
            } else if owner != self.dc && (e < self.next_sched || self.mj_decided(owner, e, true)) {
                match self.slots.held.get(&(owner, e)) {
                    Some(p) => Some(p.clone()),
                    None => break,
                }
            } else {
                break;
            };
            values.push(v);
            e += 1;
        }
        if !values.is_empty() {
            cx.send_on_chain(from, Msg::SlotsDecided { owner, lo: eid, values }, 0);
        }
    }

    /// Majority mode: ask every other coordinator for the decisions of slots missing
    /// here for long (a decision broadcast may have been lost, or this node was down).
    pub(super) fn mj_nack(&mut self, d: DcId, first: u64, cx: &mut Ctx<'_, Msg>) {
        if !self.cfg.majority {
            return;
        }
        for (y, node) in self.mj_coords_all() {
            if y != self.dc && y != d {
                cx.send_on_chain(node, Msg::SlotNack { owner: d, eid: first }, 0);
            }
        }
    }
}
