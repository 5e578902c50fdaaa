//! Transaction catch up (catenae.md §VI-E, §VIII-A): a DC whose execution of a
//! conflicting transaction lost the vote applies the update operations of a DC that
//! voted the chosen dependencies, and commits them when the transaction's turn comes
//! here (its dependencies are committed here by then, in the chosen order). The answer
//! is one more round trip, so a home DC whose execution lost answers its client after
//! two RTTs, the paper's figure for a disagreement.
//!
//! Choices where the paper is silent:
//! - The votes carry dependencies, not values (an epoch message carrying every
//!   conflicting transaction's writes to every DC would cost what validation saves),
//!   so the values are asked for once the transaction is decided and known to have
//!   been executed here otherwise (or not at all: `give_up_stale`), from the nearest DC that voted the chosen value
//!   (then the next, on a retry). Asking then rather than at its turn to commit
//!   overlaps the round trip with its wait for earlier transactions on its keys.
//! - The answerer sends what it committed, once it committed it. Its vote is the chosen
//!   value, so it never asks in turn (`lost_vote`): no ring of DCs waits on each other.
//! - A standby coordinator (`secondary=on`) does not ask: it re-executes, which gives
//!   the same writes without a second WAN round; a coordinator that steps down while
//!   it waits for an answer resumes those commits the same way.
//! - A DC keeps what it committed for others' catch-ups for `KEEP` (at least ten
//!   seconds, and four fail-over timeouts); asked later, it says it no longer has it
//!   and the asker re-executes the program against its committed state (counted as
//!   `catch_up_gone`). Re-executing gives the same writes, since every DC commits the
//!   same transactions in the same order and programs are deterministic; each fetched
//!   answer is checked against it (`catch_up_divergent`, zero unless there is a bug).

use super::coordinator::Coordinator;
use super::*;

/// How long a committed result is kept for other DCs' catch-ups, at least.
const KEEP: Time = 10_000_000_000;

/// A coordinator's catch-ups: asked, answered, and kept for others.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct CatchUps {
    /// Asked and not answered yet: when last asked, and how many times.
    asking: BTreeMap<TxnId, (Time, u32)>,
    /// Answers waiting for their transaction's commit (`None`: the answerer no longer
    /// kept it).
    pub(super) fetched: HashMap<TxnId, Option<Result<Executed, AbortReason>>>,
    /// What this DC committed for conflicting transactions: (epoch, result, hops).
    kept: HashMap<TxnId, (u64, Result<Executed, AbortReason>, u32)>,
    kept_by_epoch: BTreeMap<u64, Vec<TxnId>>,
    /// Asked for before it committed here: who asked, and the hops of their chain.
    waiting: HashMap<TxnId, Vec<(NodeId, u32)>>,
}

impl Coordinator {
    /// Asks a DC that voted `txn`'s chosen dependencies for its update
    /// operations; false when no other DC voted the chosen value (it cannot happen for
    /// a decided commit whose vote here differs, but then the commit re-executes).
    pub(super) fn ask_catch_up(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) -> bool {
        if self.catch.asking.contains_key(&txn) || self.catch.fetched.contains_key(&txn) {
            return true; // asked already
        }
        let Some(to) = self.catch_up_target(txn, 0) else {
            return false;
        };
        let hops = self.txns[&txn].hops;
        self.catch.asking.insert(txn, (cx.now(), 0));
        cx.send_on_chain(to, Msg::CatchUp { txn, hops }, hops);
        true
    }

    /// Asks for `txn`'s update operations as soon as it is known to need them (decided,
    /// and executed here with other dependencies), not when its turn to commit comes:
    /// the answerer sends them once it committed, so the round trip overlaps whatever
    /// `txn` waits for here meanwhile (earlier components on its keys).
    pub(super) fn catch_up_early(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.txns.get(&txn) else { return };
        if !matches!(t.decision, Some(Ok(_))) || t.local.is_none() || !self.leads() {
            return;
        }
        if self.comps.get(&t.comp).is_some_and(|c| c.members.len() > 1) && self.lost_vote(txn) {
            self.ask_catch_up(txn, cx);
        }
    }

    /// Whether this DC's execution of the decided `txn` lost: neither its execution
    /// here nor its vote (they differ only after a coordinator's take-over, which may
    /// know the vote without the execution) is the chosen value. A DC whose vote is
    /// the chosen value never asks, so the DCs a catch-up asks never wait on another.
    pub(super) fn lost_vote(&self, txn: TxnId) -> bool {
        let Some(t) = self.txns.get(&txn) else { return false };
        let Some(Ok(chosen)) = &t.decision else { return false };
        let voted = self
            .votes
            .get(&txn)
            .and_then(|v| v.get(&self.dc))
            .is_some_and(|v| v.0.as_ref() == Some(chosen));
        t.local.as_ref() != Some(chosen) && !voted
    }

    /// `txn` aborted here: a catch-up asked for it is moot, and those who asked this DC
    /// are told it has nothing (they abort it too: the decision is the same).
    pub(super) fn catch_up_forget(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        self.catch.asking.remove(&txn);
        self.catch.fetched.remove(&txn);
        for (n, h) in self.catch.waiting.remove(&txn).unwrap_or_default() {
            cx.send_on_chain(
                n,
                Msg::CaughtUp {
                    txn,
                    result: None,
                    hops: h,
                },
                h,
            );
        }
    }

    /// The coordinator of the `attempt`-th nearest other DC that voted `txn`'s chosen
    /// dependencies.
    fn catch_up_target(&self, txn: TxnId, attempt: u32) -> Option<NodeId> {
        let Some(Ok(chosen)) = self.txns.get(&txn).and_then(|t| t.decision.as_ref()) else {
            return None;
        };
        let topo = &self.env.layout.topology;
        let mut voters: Vec<(Time, DcId)> = self
            .votes
            .get(&txn)?
            .iter()
            .filter(|(d, v)| **d != self.dc && v.0.as_ref() == Some(chosen))
            .map(|(d, _)| (topo.one_way(self.dc, *d), *d))
            .collect();
        voters.sort();
        let (_, d) = *voters.get(attempt as usize % voters.len().max(1))?;
        Some(self.coord_of(d))
    }

    /// Another DC asks for `txn`'s update operations.
    pub(super) fn on_catch_up(&mut self, from: NodeId, txn: TxnId, hops: u32, cx: &mut Ctx<'_, Msg>) {
        let h = hops + 1;
        if let Some((_, r, mine)) = self.catch.kept.get(&txn) {
            let hops = h.max(*mine);
            let m = Msg::CaughtUp {
                txn,
                result: Some(r.clone()),
                hops,
            };
            cx.send_on_chain(from, m, hops);
        } else if self.txns.contains_key(&txn) {
            let w = self.catch.waiting.entry(txn).or_default();
            if !w.iter().any(|(n, _)| *n == from) {
                w.push((from, h));
            }
        } else {
            cx.send_on_chain(
                from,
                Msg::CaughtUp {
                    txn,
                    result: None,
                    hops: h,
                },
                h,
            );
        }
    }

    /// The answer to a catch-up: the transaction may commit here now.
    pub(super) fn on_caught_up(
        &mut self,
        txn: TxnId,
        result: Option<Result<Executed, AbortReason>>,
        hops: u32,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if self.catch.asking.remove(&txn).is_none() {
            return; // a duplicate, or an answer to a retry already served
        }
        let Some(t) = self.txns.get_mut(&txn) else { return };
        t.hops = t.hops.max(hops + 1);
        let c = t.comp;
        self.catch.fetched.insert(txn, result);
        self.try_finalize(c, cx);
    }

    /// `txn` committed (or its program aborted) here: kept for other DCs' catch-ups,
    /// and sent to those who asked already.
    pub(super) fn keep_result(
        &mut self,
        txn: TxnId,
        eid: u64,
        run: &Result<Executed, AbortReason>,
        hops: u32,
        cx: &mut Ctx<'_, Msg>,
    ) {
        for (n, h) in self.catch.waiting.remove(&txn).unwrap_or_default() {
            let hops = h.max(hops);
            let m = Msg::CaughtUp {
                txn,
                result: Some(run.clone()),
                hops,
            };
            cx.send_on_chain(n, m, hops);
        }
        // Kept from now (the open epoch), not from the transaction's own epoch: a commit
        // that waited long (an outage) is kept as long as any other.
        let now_e = self.cur.max(eid);
        self.catch.kept.insert(txn, (now_e, run.clone(), hops));
        self.catch.kept_by_epoch.entry(now_e).or_default().push(txn);
    }

    /// From the sweep: unanswered catch-ups are asked again (of the next DC that voted
    /// the chosen value), and results older than the keeping time are dropped.
    pub(super) fn catch_up_sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        if !self.leads() {
            // A standby re-executes (`committed_result`): what this node asked while it
            // led (it stepped down since) is moot, and the commits that waited for it
            // go on now.
            let comps: BTreeSet<u64> = std::mem::take(&mut self.catch.asking)
                .into_keys()
                .filter_map(|t| self.txns.get(&t).map(|x| x.comp))
                .collect();
            for c in comps {
                self.try_finalize(c, cx);
            }
        }
        let max_one_way = (0..self.n_dcs())
            .map(|d| self.env.layout.topology.one_way(self.dc, DcId(d as u16)))
            .max()
            .unwrap_or(0);
        let after = (4 * max_one_way).max(self.env.timeouts.query);
        let stale: Vec<TxnId> = self
            .catch
            .asking
            .iter()
            .filter(|(_, (at, _))| now.saturating_sub(*at) >= after)
            .map(|(t, _)| *t)
            .collect();
        for txn in stale {
            let n = self.catch.asking[&txn].1 + 1;
            let Some(to) = self.catch_up_target(txn, n) else {
                self.catch.asking.remove(&txn); // no longer decided here to commit
                continue;
            };
            let hops = self.txns.get(&txn).map(|t| t.hops).unwrap_or(0);
            self.catch.asking.insert(txn, (now, n));
            cx.send_on_chain(to, Msg::CatchUp { txn, hops }, hops);
        }
        let keep = KEEP.max(4 * self.env.timeouts.failover);
        let below = self.cur.saturating_sub(keep / self.cfg.epoch);
        while let Some(e) = self.catch.kept_by_epoch.first_key_value().map(|(e, _)| *e) {
            if e >= below {
                break;
            }
            for t in self.catch.kept_by_epoch.remove(&e).unwrap_or_default() {
                self.catch.kept.remove(&t);
            }
        }
    }
}
