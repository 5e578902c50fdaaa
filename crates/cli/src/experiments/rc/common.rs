//! What the Replicated Commit figures share: the paper's workload and load, the DCs of
//! `rc5`, rc run beside replog, and small helpers over a run's committed transactions.

use crate::experiments::Ctx;
use anyhow::Result;
use meridian_core::{Outcome, Time, Topology, TxnRecord};
use meridian_sim::{SimConfig, SimOutput};

/// The paper's file, as claims name it.
pub(super) const PAPER: &str = "replicated-commit.md";

pub(super) const PAPER_WORKLOAD: &str = "ycsb:ops=5,reads=0.5,keys=3000";

/// The DCs of `rc5` in Table 1's order.
pub(super) const RC5: [&str; 5] = ["C", "V", "O", "I", "S"];

/// The paper's run on `topo`: 2500 transactions of `workload` at the paper's load for
/// every DC of `topo` (5 generators and 10 transactions/s per DC), issued from
/// `client_dcs` (names; empty: every DC).
pub(super) fn paper_cfg(cx: &Ctx, topo: &Topology, workload: &str, client_dcs: &[&str]) -> Result<SimConfig> {
    let mut c = cx.cfg(topo, workload, 2500, 0, client_dcs)?;
    let dcs = topo.num_dcs();
    c.clients = 5 * dcs as u32;
    c.rate = Some(10.0 * dcs as f64);
    Ok(c)
}

/// The committed transactions of `o` with their commit request and end times (those
/// without either left out).
pub(super) fn committed(o: &SimOutput) -> impl Iterator<Item = (&TxnRecord, Time, Time)> {
    o.history
        .txns
        .iter()
        .filter(|t| t.outcome == Outcome::Committed)
        .filter_map(|t| Some((t, t.commit_start?, t.end?)))
}

/// rc with clients in `rc_dcs` and replog with `leaders` and clients in the leader DCs,
/// both at the paper's load on `topo` ([`paper_cfg`]). Returns (rc, replog).
pub(super) fn rc_and_replog(
    cx: &mut Ctx,
    topo: &Topology,
    workload: &str,
    rc_dcs: &[&str],
    leaders: &str,
) -> Result<(SimOutput, SimOutput)> {
    let c_rc = paper_cfg(cx, topo, workload, rc_dcs)?;
    let c_rl = paper_cfg(cx, topo, workload, &distinct(leaders))?;
    let rc = cx.run("rc", &c_rc)?;
    let rl = cx.run(&format!("replog:leaders={leaders}"), &c_rl)?;
    Ok((rc, rl))
}

pub(super) fn distinct(leaders: &str) -> Vec<&str> {
    let mut v: Vec<&str> = vec![];
    for d in leaders.split('/') {
        if !v.contains(&d) {
            v.push(d);
        }
    }
    v
}

/// (min, max) of `v`.
pub(super) fn span(v: impl Iterator<Item = f64>) -> (f64, f64) {
    v.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)))
}

/// Centres of the clusters of `v` (sorted), a new cluster wherever two neighbouring
/// values are more than 20 ms apart; clusters of fewer than 2% of the values are noise
/// and dropped.
pub(super) fn levels(v: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = v.collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let mut out = vec![];
    let mut cur: Vec<f64> = vec![];
    for x in v {
        if cur.last().is_some_and(|l| x - l > 20.0) {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(x);
    }
    out.push(cur);
    out.into_iter()
        .filter(|c| !c.is_empty() && c.len() * 50 >= n)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect()
}
