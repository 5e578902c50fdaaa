//! What the simulator's integration tests share.

#![allow(dead_code)] // each test binary uses its own part

use meridian_check::History;
use meridian_core::{Outcome, Topology, TxnRecord, DEFAULT_INTRA_RTT_MS};
use meridian_sim::SimReport;

/// Fails unless the run checked clean: no anomaly (every level the protocol claims:
/// serializable, strictly so if claimed, or read committed), atomic, durable, the
/// workload's invariant held. The message names the run and what went wrong.
pub fn assert_clean(r: &SimReport) {
    assert!(
        r.check.ok() && r.check.atomic && r.check.durable,
        "{} {} seed {} faults {:?}: {:?} {:?}",
        r.protocol,
        r.workload,
        r.seed,
        r.faults,
        r.check.anomalies,
        r.check.invariant
    );
}

/// [`assert_clean`] for a run whose faults are within the protocol's stated
/// tolerance, which must also be live (every transaction resolved, nothing locked).
pub fn assert_clean_and_live(what: &str, r: &SimReport) {
    assert!(
        r.within_tolerance == Some(true),
        "{what}: the faults are within {}'s tolerance",
        r.protocol
    );
    assert!(
        r.check.live,
        "{what}: {} seed {} stalled: {:?}",
        r.protocol, r.seed, r.check.stalls
    );
    assert_clean(r);
}

/// Five DCs, every pair 100 ms apart: the trip counts of Replicated Commit (§2, §4.2)
/// and HACommit hold exactly on a topology where no detour is shorter than the direct
/// path (rc5's Table 1 violates the triangle inequality: S→C→O is faster than S→O).
pub fn uniform5() -> Topology {
    Topology::uniform(
        "uniform5",
        &["C", "V", "O", "I", "S"],
        100.0,
        DEFAULT_INTRA_RTT_MS,
        3,
        3,
    )
}

/// Three DCs 0.2 ms apart, two servers each, six shards (`us3fast.toml` of
/// docs/MEASUREMENTS.md): contention and fail-over without the WAN's waits.
pub fn us3fast() -> Topology {
    Topology::from_toml(
        "dcs = [\"NY\", \"CA\", \"TX\"]\nnodes_per_dc = 2\nshards = 6\nintra_rtt_ms = 0.1\n\
         rtt_ms = [[0, 0.2, 0.2], [0.2, 0, 0.2], [0.2, 0.2, 0]]\n",
        "us3fast",
    )
    .expect("us3fast parses")
}

/// The commits of `h` that `keep` selects and that ended in the window `from..to`
/// (seconds), and the longest stretch of the window without one of them (seconds): how
/// many committed during an outage, and how long commits stopped.
pub fn commits_and_longest_gap(h: &History, from: f64, to: f64, keep: impl Fn(&TxnRecord) -> bool) -> (usize, f64) {
    let mut ends: Vec<f64> = h
        .txns
        .iter()
        .filter(|t| t.outcome == Outcome::Committed && keep(t))
        .filter_map(|t| t.end)
        .map(|e| e as f64 / 1e9)
        .filter(|e| (from..to).contains(e))
        .collect();
    ends.sort_by(f64::total_cmp);
    let mut gap: f64 = 0.0;
    let mut last = from;
    for e in ends.iter().chain([to].iter()) {
        gap = gap.max(e - last);
        last = *e;
    }
    (ends.len(), gap)
}
