//! The run summary: the JSON object of `meridian sim --json` (docs/DESIGN.md CLI contract).

use crate::SimConfig;
use meridian_check::History;
use meridian_core::time::to_ms;
use meridian_core::{Outcome, Time};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Mean and percentiles in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// WAN trips on the deciding message's causal chain, over committed transactions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WanTrips {
    /// Mean.
    pub mean: f64,
    /// Maximum.
    pub max: u32,
}

/// Message counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Messages {
    /// Every message sent.
    pub total: u64,
    /// Messages crossing DCs.
    pub wan: u64,
    /// Messages per finished transaction.
    pub per_txn: f64,
}

/// The checker's verdict in short.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    /// No serializability anomaly.
    pub serializable: bool,
    /// Real-time order respected too.
    pub strict_serializable: bool,
    /// No atomicity anomaly.
    pub atomic: bool,
    /// No lost commit, replicas converge.
    pub durable: bool,
    /// The workload's invariant (e.g. bank balance), `null` when it holds.
    pub invariant: Option<String>,
    /// Liveness: every transaction of a live client resolved and nothing stayed
    /// locked after the liveness phase. A run whose faults went beyond the protocol's
    /// stated tolerance may stall without failing: then this is `false` and the
    /// stall is listed in `stalls`, not in `anomalies`.
    #[serde(default = "yes")]
    pub live: bool,
    /// Stalls of a run beyond the protocol's fault tolerance (not failures).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<String>,
    /// Anomalies, one line each.
    pub anomalies: Vec<String>,
}

fn yes() -> bool {
    true
}

fn some_yes() -> Option<bool> {
    Some(true)
}

impl CheckSummary {
    /// Whether everything checked out.
    pub fn ok(&self) -> bool {
        self.anomalies.is_empty() && self.invariant.is_none()
    }
}

/// One simulation's summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimReport {
    /// Protocol.
    pub protocol: String,
    /// Topology name.
    pub topology: String,
    /// Workload spec with defaults filled in.
    pub workload: String,
    /// Seed.
    pub seed: u64,
    /// Fault spec.
    pub faults: String,
    /// The faults that struck, as an explicit `--faults` spec (every `random` item
    /// drawn): the same run with `--faults` set to it. Empty without faults.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fault_schedule: String,
    /// Clients.
    pub clients: u32,
    /// Transactions asked for.
    pub txns: u64,
    /// Set when a limit ([`SimConfig::max_time`]) stopped the run before every
    /// transaction asked for was issued and answered: which limit, and how far the run
    /// got. The CLI prints it and exits 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<String>,
    /// Committed.
    pub committed: u64,
    /// Aborted.
    pub aborted: u64,
    /// Never answered.
    pub unknown: u64,
    /// Abort reasons with counts.
    pub abort_reasons: BTreeMap<String, u64>,
    /// Committed transactions, start to end.
    pub latency_ms: Latency,
    /// Committed transactions, commit request to decision.
    pub commit_latency_ms: Latency,
    /// Commits per virtual second, first start to last end.
    pub throughput_tps: f64,
    /// WAN trips on the critical path.
    pub wan_trips: WanTrips,
    /// Exclusive-lock holding time in WAN trips (protocols that track it), over
    /// every lock holding that ended in a commit or abort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_wan_trips: Option<WanTrips>,
    /// Keys still locked on live servers when the run ended (protocols that report it):
    /// 0 means no transaction was left holding locks after the liveness phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_at_end: Option<u64>,
    /// Transactions committed at one participant and aborted at another (protocols
    /// that report their outcomes): must be 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_decisions: Option<u64>,
    /// Transactions of live clients that had no outcome when the run ended (after the
    /// liveness phase): must be 0 when the faults were within the protocol's tolerance.
    #[serde(default)]
    pub unresolved: u64,
    /// The longest any answered transaction (committed or aborted) waited for its
    /// outcome, start to end, in milliseconds: the run's liveness bound.
    #[serde(default)]
    pub slowest_ms: f64,
    /// Whether the fault plan stayed within the protocol's stated fault tolerance
    /// ([`meridian_protocols::FaultModel`]). Absent (`None`) for a bench: it injects no
    /// faults and has no liveness phase, so its stalls are reported, not judged.
    #[serde(default = "some_yes", skip_serializing_if = "Option::is_none")]
    pub within_tolerance: Option<bool>,
    /// Protocol-specific counters summed over servers ([`meridian_protocols::Replica::stats`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub protocol_stats: BTreeMap<String, f64>,
    /// Message counts.
    pub messages: Messages,
    /// Checker verdict.
    pub check: CheckSummary,
    /// Simulator events processed.
    pub events: u64,
    /// Virtual time at the end, seconds.
    pub virtual_s: f64,
    /// Wall-clock seconds (the only field that differs between identical runs).
    pub wall_s: f64,
}

/// Raw counters from the run.
pub struct Counters {
    /// Inputs handled (simulator events; the TCP runtime's actor calls).
    pub events: u64,
    /// Messages sent.
    pub msgs_total: u64,
    /// Messages sent between DCs.
    pub msgs_wan: u64,
    /// Length of the run (virtual time in the simulator, elapsed time on a cluster).
    pub virtual_end: Time,
    /// Exclusive-lock holding times, merged over servers.
    pub holds: Option<meridian_protocols::HoldStats>,
    /// Keys still locked on live servers at the end.
    pub locked_at_end: Option<u64>,
    /// Transactions committed at one participant and aborted at another.
    pub split_decisions: Option<u64>,
    /// Transactions of live clients unanswered at the end.
    pub unresolved: u64,
    /// Why the run was cut short by a message storm, if it was.
    pub runaway: Option<String>,
    /// Whether the faults stayed within the protocol's tolerance; `None` for a run
    /// without a fault plan or a liveness phase (a bench), whose stalls are reported
    /// as what was left when it ended and never judged.
    pub within_tolerance: Option<bool>,
    /// Protocol-specific counters summed over servers.
    pub stats: BTreeMap<String, f64>,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
}

fn latency(mut v: Vec<Time>) -> Latency {
    if v.is_empty() {
        return Latency::default();
    }
    v.sort_unstable();
    let pct = |p: f64| to_ms(v[((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1]);
    let mean = v.iter().map(|x| *x as f64).sum::<f64>() / v.len() as f64 / 1e6;
    Latency {
        mean: round3(mean),
        p50: round3(pct(0.50)),
        p99: round3(pct(0.99)),
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub fn summarize(
    protocol: &str,
    cfg: &SimConfig,
    workload: String,
    h: &History,
    check: &meridian_check::Report,
    invariant: Option<String>,
    c: Counters,
) -> SimReport {
    let committed: Vec<_> = h.txns.iter().filter(|t| t.outcome == Outcome::Committed).collect();
    let count = |o| h.txns.iter().filter(|t| t.outcome == o).count() as u64;
    let mut reasons = BTreeMap::new();
    for t in h.txns.iter().filter(|t| t.outcome == Outcome::Aborted) {
        *reasons
            .entry(t.abort_reason.as_ref().map_or_else(|| "?".into(), |r| r.to_string()))
            .or_insert(0) += 1;
    }
    let first = h.txns.iter().map(|t| t.start).min().unwrap_or(0);
    let last = committed.iter().filter_map(|t| t.end).max().unwrap_or(first);
    let span = (last - first) as f64 / 1e9;
    let finished = h.txns.iter().filter(|t| t.outcome != Outcome::Unknown).count().max(1);
    let wan: Vec<u32> = committed.iter().map(|t| t.wan_trips).collect();
    let mut anomalies: Vec<String> = check.anomalies.iter().map(|a| a.to_string()).collect();
    if let Some(i) = &invariant {
        anomalies.push(format!("invariant: {i}"));
    }
    if let Some(n @ 1..) = c.split_decisions {
        anomalies.push(format!(
            "split-decision: {n} transaction(s) committed at one participant and aborted at another"
        ));
    }
    // A message storm is a bug whatever the faults: always an anomaly.
    if let Some(r) = &c.runaway {
        anomalies.push(format!("runaway: {r}"));
    }
    let mut stalls = vec![];
    let when = match c.within_tolerance {
        Some(_) => "after the liveness phase",
        None => "when the run ended (it had no liveness phase to resolve them)",
    };
    if c.unresolved > 0 {
        stalls.push(format!(
            "liveness: {} transaction(s) of live clients unresolved {when}",
            c.unresolved
        ));
    }
    if let Some(n @ 1..) = c.locked_at_end {
        stalls.push(format!("liveness: {n} key(s) still locked {when}"));
    }
    let live = stalls.is_empty();
    if c.within_tolerance == Some(true) {
        anomalies.append(&mut stalls);
    }
    SimReport {
        protocol: protocol.to_string(),
        topology: cfg.topology.name.clone(),
        workload,
        seed: cfg.seed,
        faults: cfg.faults.clone(),
        fault_schedule: String::new(),
        clients: cfg.clients,
        txns: cfg.txns,
        cut_short: None,
        committed: committed.len() as u64,
        aborted: count(Outcome::Aborted),
        unknown: count(Outcome::Unknown),
        abort_reasons: reasons,
        latency_ms: latency(
            committed
                .iter()
                .filter_map(|t| Some(t.end?.saturating_sub(t.start)))
                .collect(),
        ),
        commit_latency_ms: latency(
            committed
                .iter()
                .filter_map(|t| Some(t.end?.saturating_sub(t.commit_start?)))
                .collect(),
        ),
        throughput_tps: if span > 0.0 {
            round3(committed.len() as f64 / span)
        } else {
            0.0
        },
        wan_trips: WanTrips {
            mean: if wan.is_empty() {
                0.0
            } else {
                round3(wan.iter().map(|x| *x as f64).sum::<f64>() / wan.len() as f64)
            },
            max: wan.iter().copied().max().unwrap_or(0),
        },
        lock_wan_trips: c.holds.filter(|h| h.total() > 0).map(|h| WanTrips {
            mean: round3(h.mean()),
            max: h.max(),
        }),
        locked_at_end: c.locked_at_end,
        split_decisions: c.split_decisions,
        unresolved: c.unresolved,
        slowest_ms: h
            .txns
            .iter()
            .filter(|t| t.outcome != Outcome::Unknown)
            .filter_map(|t| Some(t.end?.saturating_sub(t.start)))
            .max()
            .map_or(0.0, |x| round3(to_ms(x))),
        within_tolerance: c.within_tolerance,
        protocol_stats: c.stats,
        messages: Messages {
            total: c.msgs_total,
            wan: c.msgs_wan,
            per_txn: round3(c.msgs_total as f64 / finished as f64),
        },
        check: CheckSummary {
            serializable: check.serializable,
            strict_serializable: check.strict_serializable,
            atomic: check.atomic,
            durable: check.durable,
            invariant,
            live,
            stalls,
            anomalies,
        },
        events: c.events,
        virtual_s: round3(c.virtual_end as f64 / 1e9),
        wall_s: c.wall_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meridian_check::Meta;
    use meridian_core::Topology;

    fn verdict(
        split: Option<u64>,
        unresolved: u64,
        locked: Option<u64>,
        within: impl Into<Option<bool>>,
    ) -> CheckSummary {
        let h = History {
            meta: Meta {
                protocol: "x".into(),
                strict: false,
                shards: 1,
                shard_replicas: vec![],
                read_committed: false,
            },
            txns: vec![],
            replicas: vec![],
        };
        let cfg = SimConfig::new(Topology::preset("lan").unwrap(), "ycsb");
        let check = meridian_check::check(&h);
        let c = Counters {
            events: 0,
            msgs_total: 0,
            msgs_wan: 0,
            virtual_end: 0,
            holds: None,
            locked_at_end: locked,
            split_decisions: split,
            unresolved,
            runaway: None,
            within_tolerance: within.into(),
            stats: BTreeMap::new(),
            wall_s: 0.0,
        };
        summarize("x", &cfg, "ycsb".into(), &h, &check, None, c).check
    }

    #[test]
    fn a_split_decision_is_an_anomaly_whatever_the_faults() {
        assert!(verdict(Some(0), 0, Some(0), true).ok());
        for within in [true, false] {
            let v = verdict(Some(1), 0, Some(0), within);
            assert!(!v.ok() && v.anomalies[0].starts_with("split-decision:"), "{v:?}");
        }
    }

    #[test]
    fn a_stall_fails_within_tolerance_and_is_reported_beyond_it() {
        for (unresolved, locked) in [(1, Some(0)), (0, Some(3))] {
            let v = verdict(None, unresolved, locked, true);
            assert!(
                !v.ok() && !v.live && v.anomalies.iter().all(|a| a.starts_with("liveness:")),
                "{v:?}"
            );
            let v = verdict(None, unresolved, locked, false);
            assert!(v.ok() && !v.live && !v.stalls.is_empty(), "{v:?}");
            // A bench: no tolerance to judge by, no liveness phase to speak of.
            let v = verdict(None, unresolved, locked, None);
            assert!(v.ok() && !v.live, "{v:?}");
            assert!(
                v.stalls
                    .iter()
                    .all(|s| s.contains("when the run ended") && !s.contains("after the liveness phase")),
                "{v:?}"
            );
        }
    }
}
