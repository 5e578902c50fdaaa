//! One DC: `cs-fig4` (completion time against chain length) and `cs-fig5` (completion
//! time against the share of reads).

use super::common::{above_everywhere, both, one, ratios, span, words_only, PAPER};
use crate::experiments::{f, ok, Claim, Ctx, Status};
use anyhow::Result;
use meridian_core::{Topology, DEFAULT_INTRA_RTT_MS};

/// Fig. 4: one DC, completion time against the number of operations.
pub(super) fn fig4(cx: &mut Ctx) -> Result<()> {
    let topo = Topology::uniform("one", &["A"], 0.0, DEFAULT_INTRA_RTT_MS, 8, 8);
    cx.say(format!(
        "Fig. 4: completion time (ms) vs operations per transaction, one DC (8 servers, {DEFAULT_INTRA_RTT_MS} ms RTT), one client, chain 80% reads"
    ));
    cx.say("paper: both grow linearly; CrossStitch slightly slower (marshalling the shipped transaction)");
    cx.table(&["ops", "cs", "2pc", "cs/2pc", "check"]);
    let (mut cs_pts, mut tp_pts) = (vec![], vec![]);
    for ops in cx.sweep(&[2u32, 4, 6, 8, 10, 14, 20]) {
        let c = cx.cfg(&topo, &format!("chain:ops={ops},reads=0.8,keys=100000"), 300, 1, &[])?;
        let (cs, tp) = both(cx, &c)?;
        let (a, b) = (cs.report.latency_ms.mean, tp.report.latency_ms.mean);
        cx.row(vec![
            ops.to_string(),
            f(a, 3),
            f(b, 3),
            f(a / b, 2),
            format!("{}/{}", ok(&cs), ok(&tp)),
        ]);
        cs_pts.push((ops as f64, a));
        tp_pts.push((ops as f64, b));
    }
    words_only(
        cx,
        4,
        ["completion time vs chain length, one DC", "operations per transaction", "completion time (ms)"],
        "\"the completion time of CrossStitch and the tradition system increase linearly. CrossStitch introduces a small increase in completion time per operation\" (§5.2.1).",
        cs_pts.clone(),
        tp_pts.clone(),
    );

    // "both increase linearly": the slope over the sweep's second half against its
    // first (1 = a straight line).
    let bend = |p: &[(f64, f64)]| -> Option<f64> {
        if p.len() < 3 {
            return None;
        }
        let (a, m, z) = (p[0], p[p.len() / 2], p[p.len() - 1]);
        Some(((z.1 - m.1) / (z.0 - m.0)) / ((m.1 - a.1) / (m.0 - a.0)))
    };
    let straight = |r: f64| (0.75..=1.33).contains(&r);
    let linear = match (bend(&cs_pts), bend(&tp_pts)) {
        (Some(c), Some(t)) => {
            let ours = format!("slope 2nd half / 1st half: CS {c:.2}, 2PC {t:.2}");
            let claim = Claim::shape(
                PAPER,
                "Fig. 4",
                "completion time grows linearly with operations, CrossStitch and 2PC",
                "both linear (slope ratio 1)",
                ours,
                straight(c) && straight(t),
                "",
            );
            if straight(c) && straight(t) {
                claim
            } else if straight(t) {
                claim.with_status(
                    Status::Partly,
                    "2PC linear; CrossStitch grows with distinct shards (8), not operations: chains group each shard's operations into one hop",
                )
            } else {
                claim.with_status(Status::NotReproduced, "2PC's slope changes over the sweep")
            }
        }
        _ => Claim::shape(
            PAPER,
            "Fig. 4",
            "completion time grows linearly with operations, CrossStitch and 2PC",
            "both linear (slope ratio 1)",
            "two points (quick mode)".into(),
            false,
            "",
        )
        .with_status(Status::NotApplicable, "quick mode: two points cannot show a shape"),
    };
    cx.claim(linear);

    let ratios = ratios(&cs_pts, &tp_pts);
    cx.claim(above_everywhere(
        "Fig. 4",
        "one DC: CrossStitch slightly slower than 2PC (marshalling the shipped transaction)",
        &ratios,
        "no cost term large enough for marshalling (2 µs CPU per KiB shipped); 2PC pays a round trip per read and two log forces",
    ));
    Ok(())
}

/// Fig. 5: one DC, one client, a ten-operation chain with a varying share of reads.
pub(super) fn fig5(cx: &mut Ctx) -> Result<()> {
    let topo = one(8);
    cx.say(format!(
        "Fig. 5: completion time (ms) vs share of reads in a ten-operation chain; one DC (8 servers, {DEFAULT_INTRA_RTT_MS} ms RTT), one client"
    ));
    cx.say("paper: CrossStitch largely independent of the read share (replication runs beside the chain); 2PC's reads are synchronous and its writes buffered, so it slows as reads grow; at mostly reads the two are similar");
    cx.table(&["reads %", "cs", "2pc", "cs/2pc", "check"]);
    let (mut cs_pts, mut tp_pts) = (vec![], vec![]);
    for reads in cx.sweep(&[0.0, 0.2, 0.4, 0.6, 0.8, 1.0]) {
        let c = cx.cfg(&topo, &format!("chain:ops=10,reads={reads},keys=100000"), 300, 1, &[])?;
        let (cs, tp) = both(cx, &c)?;
        let (a, b) = (cs.report.latency_ms.mean, tp.report.latency_ms.mean);
        let pct = 100.0 * reads;
        cx.row(vec![
            f(pct, 0),
            f(a, 3),
            f(b, 3),
            f(a / b, 2),
            format!("{}/{}", ok(&cs), ok(&tp)),
        ]);
        cs_pts.push((pct, a));
        tp_pts.push((pct, b));
    }
    words_only(
        cx,
        5,
        ["completion time vs percentage of reads, one DC, ten operations", "read operations (%)", "completion time (ms)"],
        "\"CrossStitch's performance is largely independent of the read percentage\", while \"reads are significantly faster than writes for the 2PC system\" (§5.2.1).",
        cs_pts.clone(),
        tp_pts.clone(),
    );

    let ys = |p: &[(f64, f64)]| p.iter().map(|q| q.1).collect::<Vec<_>>();
    let (cs_y, tp_y) = (ys(&cs_pts), ys(&tp_pts));
    let spread = |v: &[f64]| {
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max) / v.iter().copied().fold(f64::INFINITY, f64::min)
    };
    let (cs_s, tp_s) = (spread(&cs_y), spread(&tp_y));
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 5",
        "CrossStitch's completion time largely independent of the read percentage",
        "flat (max / min ≈ 1)",
        format!("CS max / min {} (2PC {})", f(cs_s, 2), f(tp_s, 2)),
        cs_s <= 1.15,
        "CrossStitch's completion time varies by more than 15% over the sweep",
    ));
    let (first, last) = (tp_y[0], tp_y[tp_y.len() - 1]);
    let rising = tp_y.windows(2).all(|w| w[1] >= w[0]);
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 5",
        "2PC slows as the read share grows (synchronous reads, buffered writes)",
        "2PC rising with reads",
        format!(
            "2PC {} ms at {}% reads, {} ms at {}%",
            f(first, 2),
            f(tp_pts[0].0, 0),
            f(last, 2),
            f(tp_pts[tp_pts.len() - 1].0, 0)
        ),
        rising && last > 1.2 * first,
        "2PC's completion time does not rise with the read share",
    ));
    let mostly: Vec<f64> = cs_pts
        .iter()
        .zip(&tp_pts)
        .filter(|(a, _)| a.0 >= 80.0)
        .map(|(a, b)| a.1 / b.1)
        .collect();
    if !mostly.is_empty() {
        cx.claim(Claim::shape(
            PAPER,
            "Fig. 5",
            "at mostly reads (≥ 80%) CrossStitch performs like 2PC in one DC",
            "CS / 2PC ≈ 1",
            format!("CS / 2PC {}", span(&mostly, 2)),
            mostly.iter().all(|r| (0.8..=1.25).contains(r)),
            "CrossStitch is much faster: 2PC pays an intra-DC round trip per read and two log forces; our shipping charge (a key operation per KiB) is far below the paper's marshalling",
        ));
    }
    Ok(())
}
