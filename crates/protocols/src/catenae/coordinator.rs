//! The coordinator (§V, §VI-A, B): epochs and epoch messages with their distribution
//! and validation payloads, scheduling of complete epochs and the forward dispatch of
//! transaction chains. What it does with the execution results (votes, decisions,
//! commit and abort) is in `validate.rs`.

pub(super) use super::declare::{declared, server_of};
use super::*;

/// Epochs one answer to an `EpochNack` carries at most.
const NACK_BATCH: usize = 1024;

/// A DC's vote as heard: its value (`None`: it abstained) and the WAN hops behind it.
pub(super) type Vote = (Option<Vec<TxnId>>, u32);

/// A transaction the coordinator scheduled.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct CoTxn {
    pub(super) entry: TxnEntry,
    pub(super) eid: u64,
    pub(super) comp: u64,
    pub(super) keys: Vec<(Key, bool)>,
    pub(super) chain: Option<Arc<ChainTxn>>,
    /// Dependencies it executed with here (same component), once finished.
    pub(super) local: Option<Vec<TxnId>>,
    /// Commit with these dependencies, or abort.
    pub(super) decision: Option<Result<Vec<TxnId>, AbortReason>>,
    /// WAN hops on its causal chain here.
    pub(super) hops: u32,
    /// When it was scheduled here (for the abstention timeout).
    pub(super) sched: Time,
    /// This DC's vote for it went into an epoch payload (an execution result or an
    /// abstention): it never votes again.
    pub(super) voted: bool,
    /// This DC's speculative execution of it (chain servers), once finished, if the
    /// program ran to its end there.
    #[serde(default)]
    pub(super) spec: Option<Arc<SpecResult>>,
    /// Decided, and still not executed here `abstain_after` after it was scheduled, or
    /// at once when its chain visits a server suspected down: it commits without this
    /// DC's execution (`validate.rs`, `give_up_stale`).
    #[serde(default)]
    pub(super) unexecuted: bool,
}

/// Transactions of one epoch connected by conflicting accesses (the "conflicting
/// set" of the light-weight static analysis of §V-B); a lone one is non-conflicting.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Comp {
    pub(super) eid: u64,
    pub(super) members: Vec<TxnId>,
    pub(super) keys: Vec<Key>,
    /// When every member was decided and executed here while an earlier epoch's
    /// component on one of its keys was not finalized yet (it waits for that one).
    #[serde(default)]
    pub(super) blocked_since: Option<Time>,
    /// Once every member is decided and executed here: the members still to commit, in
    /// commit order with their timestamps (a catch-up waiting for another DC's
    /// update operations holds the rest).
    #[serde(default)]
    pub(super) plan: Option<Vec<(TxnId, u64)>>,
    /// The most WAN hops behind a member committed so far.
    #[serde(default)]
    pub(super) hops: u32,
}

/// Counters the experiments read.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Stats {
    pub(super) scheduled: u64,
    pub(super) non_conflicting: u64,
    pub(super) conflicting_voted_all: u64,
    pub(super) identical: u64,
    pub(super) committed: u64,
    pub(super) no_majority: u64,
    pub(super) cycles: u64,
    pub(super) caught_up: u64,
    pub(super) dominant_checked: u64,
    pub(super) dominant_mismatch: u64,
    pub(super) nacks: u64,
    pub(super) abstained: u64,
    /// Decided transactions committed or aborted here without this DC's execution (a
    /// chain server of this DC down: `give_up_stale`).
    pub(super) unexecuted: u64,
    /// Non-conflicting transactions committed here.
    pub(super) lone_committed: u64,
    /// Members of conflict sets resolved here (committed or aborted): the
    /// transactions whose speculative execution needed validating (cat-fig1).
    pub(super) spec_needed: u64,
    /// Of those, the ones committed with the same dependencies voted by every DC
    /// (their speculation held everywhere, cat-fig1).
    pub(super) spec_held: u64,
    /// Transactions finalized after waiting, decided and executed here, for an earlier
    /// epoch's component on a shared key, and the sum of those waits in ms (cat-fig5).
    pub(super) blocked: u64,
    pub(super) blocked_ms: f64,
    /// Committed (or aborted by their program) with this DC's speculative result: every
    /// value it read speculatively is the committed one.
    #[serde(default)]
    pub(super) spec_valid: u64,
    /// Re-executed here at commit: this DC's execution had the chosen dependencies
    /// (or none were voted on) but read a value that is not the committed one (a
    /// dependency caught up, or the stall valve), or did not run to its end.
    #[serde(default)]
    pub(super) spec_redone: u64,
    /// Catch-ups whose answerer no longer kept the result: re-executed here.
    #[serde(default)]
    pub(super) catch_up_gone: u64,
    /// Catch-ups whose fetched update operations differ from what re-executing here
    /// gives (a safety bug if ever non-zero: the DCs' programs are deterministic).
    #[serde(default)]
    pub(super) catch_up_divergent: u64,
    /// Non-conflicting transactions of another home DC whose speculative result here
    /// did not stand (a value read was not the committed one, or the execution had no
    /// result): this DC re-executed, which gives the home DC's dominant result
    /// (§VI-D1; `dominant_mismatch` checks the digests).
    #[serde(default)]
    pub(super) dominant_spec_mismatch: u64,
    /// Executions reported here without a result: the program needed a row of a range
    /// on a server the pass had left, or a successor coordinator learned of a chain
    /// that finished under its predecessor.
    #[serde(default)]
    pub(super) spec_incomplete: u64,
}

/// A DC's coordinator.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Coordinator {
    pub(super) cfg: Arc<Catenae>,
    /// The cluster's environment: not in an image (see [`crate::kit::image`]).
    #[serde(skip, default = "crate::kit::image::env")]
    pub(super) env: Env,
    pub(super) me: NodeId,
    pub(super) dc: DcId,
    /// The resolver, co-located (§VII-B).
    pub resolver: Resolver,
    /// The open epoch.
    pub(super) cur: u64,
    pub(super) open: Payload,
    /// Own sealed payloads.
    pub(super) mine: BTreeMap<u64, Arc<Payload>>,
    /// Payloads received for epochs not yet scheduled.
    pub(super) got: BTreeMap<u64, BTreeMap<DcId, Arc<Payload>>>,
    pub(super) next_sched: u64,
    pub(super) seen: HashSet<TxnId>,
    pub(super) outcomes: HashMap<TxnId, Msg>,
    pub(super) txns: HashMap<TxnId, CoTxn>,
    /// Votes heard per transaction: DC → (its value, hops); `None` is an abstention.
    pub(super) votes: HashMap<TxnId, BTreeMap<DcId, Vote>>,
    /// Conflict-set members committed (by a majority's vote) before every DC's vote
    /// was in: whether their speculation held everywhere (`Stats::spec_held`) is
    /// decided by the last vote.
    #[serde(default)]
    pub(super) held_pending: HashSet<TxnId>,
    pub(super) comps: HashMap<u64, Comp>,
    pub(super) next_comp: u64,
    pub(super) pending: HashMap<Key, BTreeSet<(u64, u64)>>,
    /// The committed state, as the chain servers will hold it once commits arrive.
    pub(super) view: HashMap<Key, (VersionId, Value)>,
    pub(super) dispatch: HashMap<u64, Vec<Arc<ChainTxn>>>,
    pub(super) next_timer: u64,
    /// Digests of committed writes, and dominant digests heard before commit here.
    pub(super) digests: HashMap<TxnId, u64>,
    pub(super) dominant_heard: HashMap<TxnId, u64>,
    pub(super) last_nack: BTreeMap<DcId, u64>,
    /// Per DC (this one included): its epochs below this are empty, because its
    /// coordinator started later (`Msg::Started`). Epoch ids are clock readings, so a
    /// coordinator whose clock runs ahead starts at a later epoch than the others; every
    /// coordinator schedules from epoch 0 and counts the epochs before another's start
    /// as empty (without this, a clock 200 ms ahead made the others wait forever for
    /// its first 20 epochs, and it dropped their transactions of those epochs).
    pub(super) empty_before: BTreeMap<DcId, u64>,
    /// Scheduled transactions not finished here yet: when the chain was last started.
    pub(super) unfinished: BTreeMap<TxnId, Time>,
    /// Commits and aborts not yet acknowledged by a chain server: when sent, and what.
    pub(super) unacked: BTreeMap<TxnId, (Time, BTreeMap<NodeId, Msg>)>,
    /// Manifest counts of the newest scheduled epochs.
    pub(super) manifests: BTreeMap<u64, BTreeMap<NodeId, u32>>,
    /// When each chain server of this DC was last heard from.
    #[serde(default)]
    pub(super) heard: BTreeMap<NodeId, Time>,
    /// Chain servers of this DC suspected down: commits or aborts to them went
    /// unacknowledged and nothing was heard from them for `abstain_after`
    /// (`give_up_stale`).
    #[serde(default)]
    pub(super) suspects: BTreeSet<NodeId>,
    pub(super) stats: Stats,
    /// Catch-ups (`catchup.rs`).
    #[serde(default)]
    pub(super) catch: super::catchup::CatchUps,
    /// Majority mode's consensus slots (`majority.rs`).
    pub(super) slots: super::majority::Slots,
    /// The secondary coordinator's state (`secondary.rs`).
    pub(super) sec: super::secondary::Sec,
}

impl Coordinator {
    /// The coordinator on `me`.
    pub fn new(cfg: Arc<Catenae>, env: Env, me: NodeId) -> Coordinator {
        let dc = env.layout.dc_of(me);
        let secondary = cfg.secondary;
        let standby = secondary && env.layout.server(dc, 0) != me;
        // With fewer than three DCs a majority is every DC: nothing can be abandoned,
        // so majority mode is the default mode there.
        let cfg = if cfg.majority && env.layout.topology.num_dcs() < 3 {
            Arc::new(Catenae {
                majority: false,
                ..(*cfg).clone()
            })
        } else {
            cfg
        };
        Coordinator {
            cfg,
            env,
            me,
            dc,
            resolver: Resolver::default(),
            cur: 0,
            open: Payload::default(),
            mine: BTreeMap::new(),
            got: BTreeMap::new(),
            next_sched: 0,
            seen: HashSet::default(),
            outcomes: HashMap::default(),
            txns: HashMap::default(),
            votes: HashMap::default(),
            held_pending: HashSet::default(),
            comps: HashMap::default(),
            next_comp: 0,
            pending: HashMap::default(),
            view: HashMap::default(),
            dispatch: HashMap::default(),
            next_timer: 0,
            digests: HashMap::default(),
            dominant_heard: HashMap::default(),
            last_nack: BTreeMap::new(),
            empty_before: BTreeMap::new(),
            unfinished: BTreeMap::new(),
            unacked: BTreeMap::new(),
            manifests: BTreeMap::new(),
            heard: BTreeMap::new(),
            suspects: BTreeSet::new(),
            stats: Stats::default(),
            catch: Default::default(),
            slots: Default::default(),
            sec: super::secondary::Sec::new(secondary, standby),
        }
    }

    pub(super) fn n_dcs(&self) -> usize {
        self.env.layout.topology.num_dcs()
    }

    pub(super) fn majority(&self) -> usize {
        self.n_dcs() / 2 + 1
    }

    /// The counters, as [`Replica::stats`] reports them.
    pub fn stats(&self) -> Vec<(String, f64)> {
        let s = &self.stats;
        vec![
            ("scheduled".into(), s.scheduled as f64),
            ("non_conflicting".into(), s.non_conflicting as f64),
            ("conflicting_voted_all".into(), s.conflicting_voted_all as f64),
            ("identical".into(), s.identical as f64),
            ("committed".into(), s.committed as f64),
            ("no_majority".into(), s.no_majority as f64),
            ("abstained".into(), s.abstained as f64),
            ("unexecuted".into(), s.unexecuted as f64),
            ("cycles".into(), s.cycles as f64),
            ("caught_up".into(), s.caught_up as f64),
            ("dominant_checked".into(), s.dominant_checked as f64),
            ("dominant_mismatch".into(), s.dominant_mismatch as f64),
            ("nacks".into(), s.nacks as f64),
            ("lone_committed".into(), s.lone_committed as f64),
            ("spec_needed".into(), s.spec_needed as f64),
            ("spec_held".into(), s.spec_held as f64),
            ("blocked".into(), s.blocked as f64),
            ("blocked_ms".into(), s.blocked_ms),
            ("spec_valid".into(), s.spec_valid as f64),
            ("spec_redone".into(), s.spec_redone as f64),
            ("catch_up_gone".into(), s.catch_up_gone as f64),
            ("catch_up_divergent".into(), s.catch_up_divergent as f64),
            ("dominant_spec_mismatch".into(), s.dominant_spec_mismatch as f64),
            ("spec_incomplete".into(), s.spec_incomplete as f64),
            ("implicit".into(), self.resolver.implicit as f64),
            ("abandoned".into(), self.slots.abandoned as f64),
            ("takeovers".into(), self.sec.takeovers as f64),
        ]
    }

    pub(super) fn on_start(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.slots.up_since = cx.now();
        self.sec.heard = cx.now();
        self.cur = epoch_of(cx.now(), self.cfg.epoch);
        if self.cur > 0 && self.leads() {
            self.empty_before.insert(self.dc, self.cur);
            for c in self.recipients() {
                cx.send_on_chain(
                    c,
                    Msg::Started {
                        dc: self.dc,
                        first: self.cur,
                    },
                    0,
                );
            }
        }
        self.arm(cx);
        cx.set_timer(self.env.timeouts.sweep, ServerTimer::Sweep);
    }

    /// Retransmissions: chains that never finished here are started again (chain
    /// servers pass on what they already did), commits and aborts are re-sent until
    /// acknowledged, and the newest manifests go out again.
    fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.catch_up_sweep(cx);
        self.give_up_stale(cx);
        if !self.leads() {
            cx.set_timer(self.env.timeouts.sweep, ServerTimer::Sweep);
            return;
        }
        let (now, after) = (cx.now(), (self.cfg.stall / 2).min(self.env.timeouts.query));
        let stale: Vec<TxnId> = self
            .unfinished
            .iter()
            .filter(|(_, t)| now.saturating_sub(**t) >= after)
            .map(|(id, _)| *id)
            .collect();
        for id in stale {
            if let Some(ch) = self.txns.get(&id).and_then(|t| t.chain.clone()) {
                Self::send_forward(ch, self.txns[&id].hops, cx);
            }
            self.unfinished.insert(id, now);
        }
        for (_, (at, msgs)) in self.unacked.iter_mut() {
            if now.saturating_sub(*at) >= after {
                *at = now;
                for (n, m) in msgs.iter() {
                    cx.send(*n, m.clone());
                }
            }
        }
        self.send_manifests(cx);
        self.abstain_stale(cx);
        cx.set_timer(self.env.timeouts.sweep, ServerTimer::Sweep);
    }

    /// Starts (or restarts) a chain's forward pass at its first server.
    pub(super) fn send_forward(ch: Arc<ChainTxn>, hops: u32, cx: &mut Ctx<'_, Msg>) {
        let first = ch.servers[0];
        cx.send_on_chain(
            first,
            Msg::Forward {
                chain: ch,
                pos: 0,
                hops,
            },
            hops,
        );
    }

    fn send_manifests(&mut self, cx: &mut Ctx<'_, Msg>) {
        let servers: Vec<NodeId> = self.env.layout.servers_in(self.dc).collect();
        for n in servers {
            let counts: Vec<(u64, u32)> = self
                .manifests
                .iter()
                .rev()
                .take(8)
                .map(|(e, m)| (*e, m.get(&n).copied().unwrap_or(0)))
                .collect();
            if !counts.is_empty() {
                cx.send(n, Msg::Manifest { counts });
            }
        }
    }

    fn arm(&mut self, cx: &mut Ctx<'_, Msg>) {
        let end = (self.cur + 1) * self.cfg.epoch;
        cx.set_timer(end.saturating_sub(cx.now()).max(1), ServerTimer::Epoch);
    }

    /// The next epoch boundary by the clock (a node that is not coordinator seals
    /// nothing, so `cur` does not move).
    fn arm_next(&mut self, cx: &mut Ctx<'_, Msg>) {
        let end = (epoch_of(cx.now(), self.cfg.epoch) + 1) * self.cfg.epoch;
        cx.set_timer(end.saturating_sub(cx.now()).max(1), ServerTimer::Epoch);
    }

    pub(super) fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.slots.up_since = cx.now();
        // Silences are timed from now: this node heard nothing while it was down.
        self.heard.clear();
        if self.sec.on {
            self.arm(cx);
            cx.set_timer(self.env.timeouts.sweep, ServerTimer::Sweep);
            self.sec_on_recover(cx);
            return;
        }
        self.seal_missed(cx);
        self.arm(cx);
        cx.set_timer(self.env.timeouts.sweep, ServerTimer::Sweep);
        self.resend_lost(cx);
    }

    /// Acting as coordinator after a restart or a takeover (with a secondary).
    pub(super) fn resume(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.seal_missed(cx);
        self.resend_lost(cx);
    }

    /// Seals (empty) every epoch that passed while this node was not coordinating.
    fn seal_missed(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now_e = epoch_of(cx.now(), self.cfg.epoch);
        while self.cur < now_e {
            self.seal(cx);
        }
    }

    /// Sends the chains whose dispatch timers were lost (and, with a secondary, the
    /// newest manifests, and schedules what is complete).
    fn resend_lost(&mut self, cx: &mut Ctx<'_, Msg>) {
        for (t, chains) in std::mem::take(&mut self.dispatch) {
            let _ = t;
            for c in chains {
                cx.send(
                    c.servers[0],
                    Msg::Forward {
                        chain: c.clone(),
                        pos: 0,
                        hops: 0,
                    },
                );
            }
        }
        if self.sec.on {
            self.send_manifests(cx);
            self.try_schedule(cx);
        }
    }

    pub(super) fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        if ServerTimer::of(t) == Some(ServerTimer::Epoch) && !self.leads() {
            self.arm_next(cx);
            self.sec_tick(cx);
        } else if ServerTimer::of(t) == Some(ServerTimer::Epoch) {
            let now_e = epoch_of(cx.now(), self.cfg.epoch);
            while self.cur < now_e {
                self.seal(cx);
            }
            self.arm(cx);
            self.try_schedule(cx);
            self.mj_tick(cx);
            self.nack_missing(cx);
        } else if ServerTimer::of(t) == Some(ServerTimer::Sweep) {
            self.sweep(cx);
        } else if let Some(chains) = self.dispatch.remove(&t.0).filter(|_| self.leads()) {
            for c in chains {
                let hops = self.txns.get(&c.id).map(|x| x.hops).unwrap_or(0);
                Self::send_forward(c, hops, cx);
            }
        }
    }

    /// The epoch boundary: seal the open epoch's payload and send it, with the two
    /// before it, to every other coordinator (§V-C).
    fn seal(&mut self, cx: &mut Ctx<'_, Msg>) {
        let mut p = std::mem::take(&mut self.open);
        p.eid = self.cur;
        let p = Arc::new(p);
        self.mine.insert(self.cur, p.clone());
        if self.cfg.majority && self.slots.decided.contains_key(&(self.dc, self.cur)) {
            // Majority mode: the other DCs abandoned this epoch of ours ahead (they
            // took us for failed); its transactions abort and its votes go out again.
            self.mj_own_abandoned(self.cur, cx);
        } else if self.sec.on {
            // With a secondary: used once someone else holds it (`sec_release`).
            self.sec.unreleased.insert(self.cur);
        } else if self.cur >= self.next_sched {
            self.got.entry(self.cur).or_default().insert(self.dc, p);
        }
        let payloads: Vec<Arc<Payload>> = self
            .mine
            .range(self.cur.saturating_sub(2)..=self.cur)
            .map(|(_, p)| p.clone())
            .collect();
        let mut acks = self.mj_acks();
        acks.extend(self.sec_acks());
        let peer = self.sec.on.then(|| self.peer());
        for c in self.recipients() {
            let payloads = if Some(c) == peer {
                // The standby is sent every payload it has not acknowledged yet, so a
                // lost acknowledgement or a standby that was down cannot leave one
                // unusable for good.
                let lo = self
                    .sec
                    .unreleased
                    .first()
                    .copied()
                    .unwrap_or(self.cur)
                    .min(self.cur.saturating_sub(2));
                self.mine
                    .range(lo..=self.cur)
                    .take(512)
                    .map(|(_, p)| p.clone())
                    .collect()
            } else {
                payloads.clone()
            };
            cx.send_on_chain(
                c,
                Msg::Epoch {
                    dc: self.dc,
                    payloads,
                    acks: acks.clone(),
                    term: self.sec.term,
                },
                0,
            );
        }
        // Keep a bounded history for re-sends.
        while self.mine.len() > (1 << 20) {
            self.mine.pop_first();
        }
        self.cur += 1;
    }

    /// Asks for an epoch that should have arrived long ago (all three copies lost).
    fn nack_missing(&mut self, cx: &mut Ctx<'_, Msg>) {
        let max_one_way = (0..self.n_dcs())
            .map(|d| self.env.layout.topology.one_way(self.dc, DcId(d as u16)))
            .max()
            .unwrap_or(0);
        let lag = max_one_way / self.cfg.epoch + 5;
        if self.cur <= self.next_sched + lag {
            return;
        }
        // Each DC is asked from its first epoch missing here (not only the DCs missing
        // the next epoch to schedule): a coordinator that was down for a while lacks
        // every DC's epochs, and asking one DC at a time, one batch per round trip,
        // fell behind the epochs still being cut (catenae on rc5 after a 20 s crash of
        // a coordinator: 40 epochs caught up per second against 100 new ones).
        for d in 0..self.n_dcs() {
            let d = DcId(d as u16);
            // Majority mode: this DC's own slots wait for acknowledgements or a
            // decision, which other coordinators may hold.
            if d == self.dc && !self.cfg.majority {
                continue;
            }
            let have = |e: u64| self.got.get(&e).is_some_and(|h| h.contains_key(&d));
            let Some(first) =
                (self.next_sched..self.cur.saturating_sub(lag)).find(|e| !self.mj_decided(d, *e, have(*e)))
            else {
                continue;
            };
            let last = self.last_nack.get(&d).copied().unwrap_or(0);
            if last + lag <= self.cur {
                self.last_nack.insert(d, self.cur);
                self.stats.nacks += 1;
                if d != self.dc && !have(first) {
                    cx.send(self.coord_of(d), Msg::EpochNack { eid: first });
                }
                self.mj_nack(d, first, cx);
            }
        }
    }

    pub(super) fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        let from_dc = self.env.layout.dc_of(from);
        if from_dc != self.dc && self.env.layout.server(from_dc, 0) == from {
            self.slots.heard.insert(from_dc, cx.now());
        }
        if from_dc == self.dc && self.env.layout.servers_in(self.dc).any(|n| n == from) {
            self.heard.insert(from, cx.now());
        }
        if !self.leads() {
            // Not the DC's coordinator: a client's request is answered only when its
            // outcome is known here, else dropped (the client re-sends to the DC's
            // other coordinator node after its status timeout).
            match msg {
                Msg::Submit { txn, .. } if self.outcomes.contains_key(&txn) => {
                    cx.send(from, self.outcomes[&txn].clone());
                    return;
                }
                Msg::Submit { .. } | Msg::ReadOnly { .. } => return,
                Msg::Finished { .. } | Msg::EpochNack { .. } | Msg::ManifestNack { .. } => return,
                _ => {}
            }
        }
        match msg {
            Msg::Submit { txn, call } => self.on_submit(from, txn, call, cx),
            Msg::ReadOnly { txn, attempt, keys } => self.on_read_only(from, txn, attempt, keys, cx),
            Msg::Epoch {
                dc,
                payloads,
                acks,
                term,
            } => {
                cx.charge_ops(1);
                if self.sec.on && !self.sec_on_epoch(from, dc, &payloads, &acks, term, cx) {
                    return;
                }
                self.mj_on_acks(dc, acks);
                for p in payloads {
                    self.on_payload(dc, p, cx);
                }
                self.try_schedule(cx);
            }
            Msg::Started { dc, first } => {
                let e = self.empty_before.entry(dc).or_insert(0);
                *e = (*e).max(first);
                self.try_schedule(cx);
            }
            m @ (Msg::Abandon { .. } | Msg::AbandonPromise(_) | Msg::AbandonAccept(_) | Msg::AbandonAccepted(_)) => {
                self.mj_on_revocation(from, m, cx)
            }
            Msg::SlotsDecided { owner, lo, values } => self.mj_on_decided(owner, lo, values, cx),
            Msg::SlotNack { owner, eid } => self.mj_on_slot_nack(from, owner, eid, cx),
            Msg::EpochNack { eid } if eid < self.empty_before.get(&self.dc).copied().unwrap_or(0) => {
                let first = self.empty_before[&self.dc];
                cx.send_on_chain(from, Msg::Started { dc: self.dc, first }, 0);
            }
            Msg::EpochNack { eid } => {
                // Up to NACK_BATCH epochs per answer: enough to outrun the epochs a
                // lagging coordinator sees cut meanwhile.
                let payloads: Vec<Arc<Payload>> = self
                    .mine
                    .range(eid..)
                    .take(NACK_BATCH)
                    .map(|(_, p)| p.clone())
                    .collect();
                if !payloads.is_empty() {
                    let acks = self.mj_acks();
                    cx.send_on_chain(
                        from,
                        Msg::Epoch {
                            dc: self.dc,
                            payloads,
                            acks,
                            term: self.sec.term,
                        },
                        0,
                    );
                }
            }
            Msg::Finished { txn, deps, hops, spec } => self.on_finished(txn, deps, hops, spec, cx),
            Msg::CatchUp { txn, hops } => self.on_catch_up(from, txn, hops, cx),
            Msg::CaughtUp { txn, result, hops } => self.on_caught_up(txn, result, hops, cx),
            Msg::ManifestNack { eid } => {
                let counts: Vec<(u64, u32)> = self
                    .manifests
                    .range(eid..)
                    .take(512)
                    .map(|(e, m)| (*e, m.get(&from).copied().unwrap_or(0)))
                    .collect();
                cx.send(from, Msg::Manifest { counts });
            }
            Msg::Applied { txn } => {
                if let Some((_, m)) = self.unacked.get_mut(&txn) {
                    m.remove(&from);
                    if m.is_empty() {
                        self.unacked.remove(&txn);
                    }
                } else if self.sec.on && !self.leads() {
                    // A standby hears the acknowledgement before it mirrors the commit.
                    self.sec.applied_early.entry(txn).or_default().insert(from);
                }
            }
            m => {
                if self.sec.on {
                    self.sec_on_message(from, m, cx);
                }
            }
        }
    }

    fn on_submit(&mut self, client: NodeId, txn: TxnId, call: Call, cx: &mut Ctx<'_, Msg>) {
        if let Some(o) = self.outcomes.get(&txn) {
            cx.send(client, o.clone());
            return;
        }
        if !self.seen.insert(txn) {
            return; // already in an epoch
        }
        cx.charge_ops(1);
        self.open.txns.push(TxnEntry {
            id: txn,
            call,
            client,
            home: self.dc,
            recv: cx.now(),
            hops: cx.hops(),
        });
    }

    /// §VI-F: read-only transactions read the snapshot of the last scheduled epoch at
    /// the chain servers, concurrently, answering the client directly.
    fn on_read_only(&mut self, client: NodeId, txn: TxnId, attempt: u32, keys: Vec<Key>, cx: &mut Ctx<'_, Msg>) {
        if self.next_sched == 0 {
            cx.send(
                client,
                Msg::RoReply {
                    txn,
                    attempt,
                    snap: 0,
                    reads: None,
                },
            );
            return;
        }
        let snap = self.next_sched - 1;
        let mut by: BTreeMap<NodeId, Vec<Key>> = BTreeMap::new();
        for k in keys {
            by.entry(server_of(&self.env, self.dc, &k)).or_default().push(k);
        }
        for (n, keys) in by {
            cx.send(
                n,
                Msg::RoRead(SnapRead {
                    txn,
                    attempt,
                    client,
                    snap,
                    keys,
                }),
            );
        }
    }

    pub(super) fn on_payload(&mut self, dc: DcId, p: Arc<Payload>, cx: &mut Ctx<'_, Msg>) {
        if p.eid < self.next_sched {
            return; // already scheduled: we had it
        }
        if self.got.get(&p.eid).is_some_and(|m| m.contains_key(&dc)) {
            return;
        }
        if !self.mj_take(dc, &p) {
            // Majority mode: this slot was promised to a revocation, so its message no
            // longer counts; its votes still do (its DC's one execution result).
            for v in &p.votes {
                self.record_vote(dc, v.txn, v.deps.clone(), v.hops + 1, cx);
            }
            return;
        }
        self.got.entry(p.eid).or_default().insert(dc, p.clone());
        for v in &p.votes {
            self.record_vote(dc, v.txn, v.deps.clone(), v.hops + 1, cx);
        }
        for d in &p.dominant {
            self.stats.dominant_checked += 1;
            match self.digests.get(&d.txn) {
                Some(mine) if *mine != d.digest => self.stats.dominant_mismatch += 1,
                Some(_) => {}
                None => {
                    self.dominant_heard.insert(d.txn, d.digest);
                }
            }
        }
    }

    /// Whether DC `d`'s epoch `e` is known empty because its coordinator started after it.
    pub(super) fn is_empty_epoch(&self, d: DcId, e: u64) -> bool {
        e < self.empty_before.get(&d).copied().unwrap_or(0)
    }

    pub(super) fn try_schedule(&mut self, cx: &mut Ctx<'_, Msg>) {
        if !self.leads() {
            return; // a standby schedules what its coordinator did (`Scheduled`)
        }
        let n = self.n_dcs();
        while self.next_sched < self.cur {
            let e = self.next_sched;
            let have = |d: u16| self.got.get(&e).is_some_and(|m| m.contains_key(&DcId(d)));
            if !(0..n as u16).all(|d| self.mj_decided(DcId(d), e, have(d))) {
                break;
            }
            let ps = self.got.remove(&e).unwrap_or_default();
            self.next_sched += 1;
            self.schedule(e, ps, cx);
        }
    }

    /// §VI-A, B: an epoch whose messages from every DC arrived is scheduled: its
    /// transactions, in one deterministic order (receive time, then id), each chained
    /// over its partitions in ascending order, dispatched with their arrival spacing.
    pub(super) fn schedule(&mut self, e: u64, ps: BTreeMap<DcId, Arc<Payload>>, cx: &mut Ctx<'_, Msg>) {
        let leads = self.leads();
        if self.sec.on && leads {
            let set: Vec<(DcId, Arc<Payload>)> = ps.iter().map(|(d, p)| (*d, p.clone())).collect();
            cx.send(
                self.peer(),
                Msg::Scheduled {
                    term: self.sec.term,
                    eid: e,
                    payloads: set.clone(),
                },
            );
            self.sec.sched_kept.insert(e, set);
            while self.sec.sched_kept.len() > super::secondary::SCHED_KEEP {
                self.sec.sched_kept.pop_first();
            }
        }
        let boundary_hops = u32::from(self.n_dcs() > 1);
        let mut entries: Vec<(TxnEntry, u32)> = vec![];
        for (dc, p) in &ps {
            for t in &p.txns {
                let h = if *dc == self.dc { t.hops } else { t.hops + 1 };
                entries.push((t.clone(), h.max(boundary_hops)));
            }
        }
        entries.sort_by_key(|(t, _)| (t.recv, t.id));
        // Static analysis: union transactions that conflict on a key.
        let mut parent: Vec<usize> = (0..entries.len()).collect();
        fn find(p: &mut [usize], mut i: usize) -> usize {
            while p[i] != i {
                p[i] = p[p[i]];
                i = p[i];
            }
            i
        }
        let mut keysets: Vec<Result<Vec<(Key, bool)>, AbortReason>> = vec![];
        let mut by_key: BTreeMap<Key, Vec<(usize, bool)>> = BTreeMap::new();
        for (i, (t, _)) in entries.iter().enumerate() {
            let ks = declared(&self.env, &t.call);
            if let Ok(ks) = &ks {
                for (k, w) in ks {
                    by_key.entry(k.clone()).or_default().push((i, *w));
                }
            }
            keysets.push(ks);
        }
        for acc in by_key.values() {
            if acc.len() > 1 && acc.iter().any(|(_, w)| *w) {
                for (j, _) in &acc[1..] {
                    let (a, b) = (find(&mut parent, acc[0].0), find(&mut parent, *j));
                    if a != b {
                        parent[a.max(b)] = a.min(b);
                    }
                }
            }
        }
        let mut comp_of: BTreeMap<usize, u64> = BTreeMap::new();
        let mut manifest: BTreeMap<NodeId, u32> = self.env.layout.servers_in(self.dc).map(|n| (n, 0)).collect();
        let e_start = e * self.cfg.epoch;
        for (i, ((t, hops), ks)) in entries.iter().zip(keysets).enumerate() {
            let root = find(&mut parent, i);
            let comp = *comp_of.entry(root).or_insert_with(|| {
                self.next_comp += 1;
                self.next_comp
            });
            let (keys, decision) = match ks {
                Ok(k) => (k, None),
                Err(r) => (vec![], Some(Err(r))),
            };
            let chain = (!keys.is_empty()).then(|| {
                let mut per: BTreeMap<NodeId, Vec<(Key, bool)>> = BTreeMap::new();
                // Ascending partition order: by shard, then key.
                let mut sorted = keys.clone();
                sorted.sort_by_key(|(k, _)| (self.env.layout.shard_of(k), k.clone()));
                let mut servers = vec![];
                for (k, w) in sorted {
                    let n = server_of(&self.env, self.dc, &k);
                    if !servers.contains(&n) {
                        servers.push(n);
                    }
                    per.entry(n).or_default().push((k, w));
                }
                for n in &servers {
                    *manifest.entry(*n).or_insert(0) += 1;
                }
                Arc::new(ChainTxn {
                    id: t.id,
                    eid: e,
                    keys: servers.iter().map(|n| per.remove(n).expect("grouped")).collect(),
                    servers,
                    coord: self.me,
                    term: self.sec.term,
                    call: t.call.clone(),
                })
            });
            let c = self.comps.entry(comp).or_insert_with(|| Comp {
                eid: e,
                members: vec![],
                keys: vec![],
                blocked_since: None,
                plan: None,
                hops: 0,
            });
            c.members.push(t.id);
            for (k, _) in &keys {
                if !c.keys.contains(k) {
                    c.keys.push(k.clone());
                }
            }
            self.stats.scheduled += 1;
            self.txns.insert(
                t.id,
                CoTxn {
                    entry: t.clone(),
                    eid: e,
                    comp,
                    keys,
                    chain: chain.clone(),
                    local: if chain.is_none() { Some(vec![]) } else { None },
                    decision,
                    hops: *hops,
                    sched: cx.now(),
                    voted: false,
                    spec: None,
                    unexecuted: false,
                },
            );
            if let Some(ch) = chain.filter(|_| leads) {
                self.unfinished.insert(t.id, cx.now() + self.cfg.epoch);
                let offset = t.recv.saturating_sub(e_start).min(self.cfg.epoch - 1);
                if offset == 0 {
                    Self::send_forward(ch, *hops, cx);
                } else {
                    let id = T_DISPATCH + self.next_timer;
                    self.next_timer += 1;
                    self.dispatch.entry(id).or_default().push(ch);
                    cx.set_timer(offset, TimerId(id));
                }
            }
        }
        self.manifests.insert(e, manifest);
        if leads {
            self.send_manifests(cx);
        }
        let mut comps: Vec<u64> = comp_of.values().copied().collect();
        comps.sort();
        comps.dedup();
        // Majority mode: a DC whose message for this epoch was abandoned (a decided
        // slot, the same everywhere, known to that DC too before it schedules the
        // epoch), or that started after it, abstains on the epoch's conflicting
        // transactions (`majority.rs`).
        let abstaining: Vec<DcId> = (0..self.n_dcs() as u16)
            .map(DcId)
            .filter(|d| {
                self.cfg.majority
                    && (self.is_empty_epoch(*d, e) || matches!(self.slots.decided.get(&(*d, e)), Some(None)))
            })
            .collect();
        for c in &comps {
            let comp = &self.comps[c];
            for k in &comp.keys {
                self.pending.entry(k.clone()).or_default().insert((e, *c));
            }
            let members = comp.members.clone();
            if members.len() == 1 {
                // Non-conflicting: no validation (§VI-D1).
                self.stats.non_conflicting += 1;
                let t = self.txns.get_mut(&members[0]).expect("scheduled");
                t.decision.get_or_insert(Ok(vec![]));
            } else {
                for m in members {
                    for d in &abstaining {
                        if *d == self.dc {
                            self.txns.get_mut(&m).expect("scheduled").voted = true;
                        }
                        let vs = self.votes.entry(m).or_default();
                        debug_assert!(vs.get(d).is_none_or(|v| v.0.is_none()), "{d:?} voted on {m:?}");
                        vs.entry(*d).or_insert((None, 0));
                    }
                    self.check_decision(m);
                }
            }
        }
        for c in comps {
            self.try_finalize(c, cx);
        }
    }
}
