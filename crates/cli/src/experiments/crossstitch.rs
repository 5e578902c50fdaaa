//! `meridian compare --experiment cs-*`: crossstitch.md §5 reproduced side by side with
//! the paper. Every run is a full simulation that ends with the checker; a failed check
//! makes the experiment exit 3.
//!
//! The paper's setup (§5.1): servers in groups per DC (eight servers for two DCs), `tc`
//! adding the DC round-trip latency; the baseline is a flat 2PC system whose
//! coordinator is in the client's DC, that reads remotely (one round trip per dependent
//! read) and replicates writes to two servers. Here: `crossstitch` against
//! `2pc-2pl:copies=2` (each shard on two servers of its home DC for both), two DCs of
//! four servers (eight shards) unless stated, the simulator's default costs (10 µs of
//! CPU per message, 2 µs per key operation, 0.5 ms per forced log write with group
//! commit: 2PC logs, CrossStitch does not), and no jitter where a figure is about
//! round trips. "Completion time" is the client's transaction latency.
//!
//! The paper gives numbers only for Fig. 12 (a table of round trips) and in its text
//! (Fig. 8: CrossStitch "always twice" the RTT, 2PC five round trips; Figs. 13/14 by
//! Fig. 12's analysis; Fig. 15: six remote DCs cost CrossStitch 4 round trips and code
//! shipping with R* commit 10); Figs. 4, 5, 6, 7, 9, 10 and 11 are described only
//! qualitatively, so their charts carry our series alone and their claims are shapes.
//!
//! Choices where the paper is vague:
//!
//! - **Fig. 5** is in §5.2.1 (one DC): eight servers, one client, ten operations, the
//!   read share swept 0..100%.
//! - **Figs. 6/7** ("increase the number of concurrent clients until we saturate"): per
//!   size, closed-loop clients double along a ladder until a step gains under 5%, and
//!   the best step is the point (one DC: 64..1024 clients, 10 transactions each; two
//!   DCs: 2048..8192, 3 each, to keep the run short). One shard per server; two DCs
//!   split the servers evenly (8, 14, 20: the paper's range, three sizes). Throughput
//!   is the report's committed transactions per virtual second, first start to last
//!   end, as in cs-fig11. With 3 transactions per client the ramp at both ends weighs
//!   more and it underestimates the steady state, 2PC more than CrossStitch (4096
//!   clients, 20 servers: 6 per client read about 7% higher for CrossStitch, 18% for
//!   2PC), so the two-DC CS / 2PC ratios lean towards CrossStitch. (Fig. 6's first
//!   version found that the two lowest-numbered servers of a DC were the transaction
//!   replicas of every final server, which capped CrossStitch's growth; the protocol
//!   now spreads them, see `crossstitch::txn_replicas`.) Fig. 7 adds both
//!   protocols' one-DC growth at its end sizes, which "largely unaffected by the
//!   50 ms" and "2PC does not scale" are judged against.
//! - **Figs. 9/10** ("enough clients to saturate", eight servers, 50..150 ms): one run
//!   per latency and protocol with 2048 clients at 50 ms (about where Fig. 7's ladder
//!   levels off on eight servers) and in proportion to the RTT above it, so the
//!   offered concurrency keeps up with longer transactions (Little's law), rather than
//!   a ladder per latency; 3 transactions per client. "Out of 1000" is committed per
//!   1000 issued. The two experiments run the same sweep (each its own runs).
//! - **Fig. 15** (the paper's analysis, §5.4): the client in a DC of its own with no
//!   data, D = 1..6 remote DCs of one shard each, all 100 ms apart, no jitter; the
//!   workload `chain:ops=k*D,reads=1,keys=k*D` makes every transaction read exactly k
//!   keys in each remote DC, one DC after the other (keys = ops, so all are chosen).
//!   All reads, because the paper counts a round trip per key access and our 2PC
//!   buffers writes (no trip). Round trips are measured: one-way WAN trips on the
//!   decision's causal chain / 2, as cs-fig12. CrossStitch is `crossstitch`; the "flat
//!   transaction processing" line is the §5.1 2PC system, `2pc-2pl:copies=2`. Code
//!   shipping with R* commit has no counterpart here (no protocol of ours ships code
//!   and commits along a tree; `hier-*` validate along a tree but read remotely one
//!   key at a time), so its line is left out and its stated value is only quoted.

use super::{f, ok, Claim, Ctx, Experiment, Figure, Source, Status};
use anyhow::Result;
use meridian_core::{HomeRule, Topology, DEFAULT_INTRA_RTT_MS};
use meridian_sim::{SimConfig, SimOutput};

/// The 2PC baseline of §5.1.
const TWO_PC: &str = "2pc-2pl:copies=2";

/// The paper's file under `../shared/papers/`, for claims.
const PAPER: &str = "crossstitch.md";

/// This paper's experiments, as `--experiment list` shows them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "cs-fig12",
        about: "crossstitch.md Fig. 12: worst-case round trips of order-status and stock-level, 2PC vs crossstitch",
        run: fig12,
        sim: true,
    },
    Experiment {
        name: "cs-fig4",
        about: "crossstitch.md Fig. 4: one-DC completion time vs chain length, crossstitch vs 2PC",
        run: fig4,
        sim: true,
    },
    Experiment {
        name: "cs-fig5",
        about: "crossstitch.md Fig. 5: one-DC completion time vs percentage of reads in a ten-operation chain",
        run: fig5,
        sim: true,
    },
    Experiment {
        name: "cs-fig6",
        about: "crossstitch.md Fig. 6: one-DC saturated committed throughput vs number of servers (8..20)",
        run: fig6,
        sim: true,
    },
    Experiment {
        name: "cs-fig7",
        about: "crossstitch.md Fig. 7: two-DC (50 ms) saturated committed throughput vs number of servers (8..20)",
        run: fig7,
        sim: true,
    },
    Experiment {
        name: "cs-fig8",
        about: "crossstitch.md Fig. 8: completion time vs DC round-trip latency 50..150 ms on two DCs",
        run: fig8,
        sim: true,
    },
    Experiment {
        name: "cs-fig9",
        about: "crossstitch.md Fig. 9: successful transactions per 1000 vs DC latency 50..150 ms, saturating clients",
        run: fig9,
        sim: true,
    },
    Experiment {
        name: "cs-fig10",
        about: "crossstitch.md Fig. 10: committed throughput vs DC latency 50..150 ms, saturating clients",
        run: fig10,
        sim: true,
    },
    Experiment {
        name: "cs-fig11",
        about: "crossstitch.md Fig. 11: committed throughput on us3, world3, far3",
        run: fig11,
        sim: true,
    },
    Experiment {
        name: "cs-fig13",
        about: "crossstitch.md Fig. 13: TPC-C order-status completion time vs DC latency",
        run: |cx| tpcc_latency(cx, "order-status", 13, 4.0),
        sim: true,
    },
    Experiment {
        name: "cs-fig14",
        about: "crossstitch.md Fig. 14: TPC-C stock-level (single item) completion time vs DC latency",
        run: |cx| tpcc_latency(cx, "stock-level", 14, 5.0),
        sim: true,
    },
    Experiment {
        name: "cs-fig15",
        about: "crossstitch.md Fig. 15: WAN round trips vs remote DCs travelled, per operations per DC",
        run: fig15,
        sim: true,
    },
];

/// Two DCs `rtt_ms` apart, four servers each, eight shards.
fn two(rtt_ms: f64) -> Topology {
    Topology::uniform(&format!("two{rtt_ms}"), &["A", "B"], rtt_ms, DEFAULT_INTRA_RTT_MS, 4, 8)
}

/// One client in A, every shard homed in B: the "client in a different DC from the
/// data" of §5.3.1.
fn remote(cx: &Ctx, rtt_ms: f64, workload: &str, txns: u64) -> Result<SimConfig> {
    let topo = two(rtt_ms);
    let mut c = cx.cfg(&topo, workload, txns, 1, &["A"])?;
    c.home = HomeRule::Dc(topo.dc("B")?);
    c.jitter = 0.0;
    Ok(c)
}

/// CrossStitch, then the 2PC baseline, on `c`: (CrossStitch's run, 2PC's).
fn both(cx: &mut Ctx, c: &SimConfig) -> Result<(SimOutput, SimOutput)> {
    let cs = cx.run("crossstitch", c)?;
    let tp = cx.run(TWO_PC, c)?;
    Ok((cs, tp))
}

/// `fig` with our two series: CrossStitch's and the 2PC baseline's (named by protocol).
fn ours_both(fig: Figure, cs: Vec<(f64, f64)>, tp: Vec<(f64, f64)>) -> Figure {
    fig.ours("crossstitch", cs).ours(TWO_PC, tp)
}

/// Fig. `fig`, which the paper describes only in words (no values): says so, then charts
/// our two series alone (`cs-fig{fig}`, titled `CrossStitch Fig. {fig}: {title}`).
fn words_only(cx: &mut Ctx, fig: u32, title: &str, x: &str, y: &str, cs: Vec<(f64, f64)>, tp: Vec<(f64, f64)>) {
    cx.say(format!(
        "The paper's Fig. {fig} is described only in words (no values), so the chart shows our runs alone."
    ));
    cx.figure(ours_both(
        Figure::new(
            &format!("cs-fig{fig}"),
            &format!("CrossStitch Fig. {fig}: {title}"),
            x,
            y,
        ),
        cs,
        tp,
    ));
}

/// The claim that CrossStitch's value is above 2PC's at every point, `ratios` being
/// CrossStitch's over 2PC's.
fn above_everywhere(at: &str, claim: &str, ratios: &[f64], cause: &str) -> Claim {
    Claim::shape(
        PAPER,
        at,
        claim,
        "CS / 2PC > 1",
        format!("CS / 2PC {}", span(ratios, 2)),
        ratios.iter().all(|r| *r > 1.0),
        cause,
    )
}

/// CrossStitch's value over 2PC's at each point (`cs` and `tp` over the same x).
fn ratios(cs: &[(f64, f64)], tp: &[(f64, f64)]) -> Vec<f64> {
    cs.iter().zip(tp).map(|(a, b)| a.1 / b.1).collect()
}

/// `min–max` of `v` with `d` decimals (a single value if they agree).
fn span(v: &[f64], d: usize) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if f(lo, d) == f(hi, d) {
        f(lo, d)
    } else {
        format!("{}–{}", f(lo, d), f(hi, d))
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Fig. 12: worst-case round trips, measured (WAN one-way trips / 2).
fn fig12(cx: &mut Ctx) -> Result<()> {
    cx.say("Fig. 12: worst-case WAN round trips, client in A, all data in B (two DCs, 100 ms)");
    cx.table(&[
        "transaction",
        "paper 2PC",
        "ours 2PC",
        "paper CS",
        "ours CS",
        "ratio",
        "check",
    ]);
    let txns = cx.sweep(&[("order-status", 4.0), ("stock-level", 5.0)]);
    let mut rows = vec![];
    for &(txn, paper_2pc) in &txns {
        let c = remote(cx, 100.0, &format!("tpcc:txn={txn}"), 200)?;
        let (cs, tp) = both(cx, &c)?;
        let (o_cs, o_tp) = (cs.report.wan_trips.mean / 2.0, tp.report.wan_trips.mean / 2.0);
        cx.row(vec![
            txn.to_string(),
            format!("{}+1", paper_2pc - 1.0),
            f(o_tp, 1),
            "2".into(),
            f(o_cs, 1),
            format!("{:.2}/{:.2}", o_tp / paper_2pc, o_cs / 2.0),
            format!("{}/{}", ok(&tp), ok(&cs)),
        ]);
        rows.push((txn, paper_2pc, o_tp, o_cs));
    }
    cx.say("ratio = ours / paper (2PC / CrossStitch); ours = measured one-way WAN trips / 2");
    for &(txn, paper_2pc, o_tp, o_cs) in &rows {
        cx.claim(Claim::numeric(
            PAPER,
            "Fig. 12",
            &format!("{txn}, client remote from data: 2PC worst-case round trips"),
            paper_2pc,
            o_tp,
            "RTTs",
            0.02,
        ));
        cx.claim(Claim::numeric(
            PAPER,
            "Fig. 12",
            &format!("{txn}, client remote from data: CrossStitch worst-case round trips"),
            2.0,
            o_cs,
            "RTTs",
            0.02,
        ));
    }
    let cats: Vec<&str> = rows.iter().map(|r| r.0).collect();
    // Series by column: 1 paper 2PC, 2 ours 2PC, 3 ours CrossStitch.
    let pts = |col: usize| -> Vec<(f64, f64)> {
        rows.iter()
            .enumerate()
            .map(|(i, r)| (i as f64, [r.1, r.2, r.3][col - 1]))
            .collect()
    };
    cx.figure(
        Figure::new(
            "cs-fig12",
            "CrossStitch Fig. 12: worst-case round trips, client in A, data in B",
            "TPC-C-like transaction",
            "WAN round trips per transaction",
        )
        .categories(&cats)
        .paper("paper: 2PC", Source::PaperText, pts(1))
        .paper(
            "paper: CrossStitch",
            Source::PaperText,
            (0..rows.len()).map(|i| (i as f64, 2.0)).collect(),
        )
        .ours("2pc-2pl:copies=2", pts(2))
        .ours("crossstitch", pts(3)),
    );
    Ok(())
}

/// Fig. 4: one DC, completion time against the number of operations.
fn fig4(cx: &mut Ctx) -> Result<()> {
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
        "completion time vs chain length, one DC",
        "operations per transaction",
        "completion time (ms)",
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

/// Fig. 8: two DCs, completion time against their round-trip latency.
fn fig8(cx: &mut Ctx) -> Result<()> {
    cx.say("Fig. 8: completion time (ms) vs DC round-trip latency; two DCs of 4 servers, one client per DC, chain:ops=10,reads=0.8 (local states first)");
    cx.say("paper: CrossStitch ~ 2 x RTT, 2PC ~ 5 x RTT (4 remote dependent reads + commit)");
    cx.table(&[
        "rtt",
        "cs",
        "2pc",
        "cs/rtt",
        "2pc/rtt",
        "cs/paper",
        "2pc/paper",
        "check",
    ]);
    let (mut cs_pts, mut tp_pts, mut cs_r, mut tp_r) = (vec![], vec![], vec![], vec![]);
    for rtt in cx.sweep(&[50.0, 75.0, 100.0, 125.0, 150.0]) {
        let mut c = cx.cfg(&two(rtt), "chain:ops=10,reads=0.8,keys=100000", 400, 2, &[])?;
        c.jitter = 0.0;
        let (cs, tp) = both(cx, &c)?;
        let (a, b) = (cs.report.latency_ms.mean / rtt, tp.report.latency_ms.mean / rtt);
        cx.row(vec![
            rtt.to_string(),
            f(cs.report.latency_ms.mean, 1),
            f(tp.report.latency_ms.mean, 1),
            f(a, 2),
            f(b, 2),
            f(a / 2.0, 2),
            f(b / 5.0, 2),
            format!("{}/{}", ok(&cs), ok(&tp)),
        ]);
        cs_pts.push((rtt, cs.report.latency_ms.mean));
        tp_pts.push((rtt, tp.report.latency_ms.mean));
        cs_r.push(a);
        tp_r.push(b);
    }
    cx.say("cs/paper = (cs/rtt) / 2, 2pc/paper = (2pc/rtt) / 5");
    let rtts: Vec<f64> = cs_pts.iter().map(|p| p.0).collect();
    let over = format!("mean over RTT {} ms", span(&rtts, 0));
    rtt_claims(
        cx,
        "Fig. 8",
        &format!("CrossStitch completion time / RTT ({over})"),
        &cs_r,
        &format!("2PC completion time / RTT: 4 dependent remote reads + commit ({over})"),
        (5.0, &tp_r),
    );
    cx.figure(ours_both(
        Figure::new(
            "cs-fig8",
            "CrossStitch Fig. 8: completion time vs DC latency, two DCs",
            "DC round-trip latency (ms)",
            "completion time (ms)",
        )
        .paper(
            "paper: CrossStitch 2 x RTT",
            Source::PaperText,
            rtts.iter().map(|r| (*r, 2.0 * r)).collect(),
        )
        .paper(
            "paper: 2PC 5 x RTT",
            Source::PaperText,
            rtts.iter().map(|r| (*r, 5.0 * r)).collect(),
        ),
        cs_pts,
        tp_pts,
    ));
    Ok(())
}

/// Fig. 11: committed-transaction throughput on the three 3-DC configurations.
fn fig11(cx: &mut Ctx) -> Result<()> {
    let clients = 60;
    cx.say(format!("Fig. 11: committed transactions per second, {clients} closed-loop clients over 3 DCs (2 servers each), chain:ops=10,reads=0.8"));
    cx.say("paper: CrossStitch ahead in all three configurations, by more where latency is higher");
    cx.table(&[
        "config",
        "rtts (ms)",
        "cs tps",
        "2pc tps",
        "cs/2pc",
        "cs abort",
        "2pc abort",
        "check",
    ]);
    let mut ratios = vec![];
    let (mut cats, mut cs_pts, mut tp_pts) = (vec![], vec![], vec![]);
    for name in cx.sweep(&["us3", "world3", "far3"]) {
        let topo = Topology::preset(name).expect("preset");
        let c = cx.cfg(&topo, "chain:ops=10,reads=0.8,keys=100000", 1500, clients, &[])?;
        let (cs, tp) = both(cx, &c)?;
        let rtts = format!("{}/{}/{}", topo.rtt_ms[0][1], topo.rtt_ms[1][2], topo.rtt_ms[2][0]);
        let abort = |o: &SimOutput| o.report.aborted as f64 / (o.report.committed + o.report.aborted).max(1) as f64;
        let r = cs.report.throughput_tps / tp.report.throughput_tps;
        ratios.push(r);
        cx.row(vec![
            name.to_string(),
            rtts.clone(),
            f(cs.report.throughput_tps, 1),
            f(tp.report.throughput_tps, 1),
            f(r, 2),
            format!("{:.1}%", 100.0 * abort(&cs)),
            format!("{:.1}%", 100.0 * abort(&tp)),
            format!("{}/{}", ok(&cs), ok(&tp)),
        ]);
        let x = cats.len() as f64;
        cats.push(format!("{name} ({rtts} ms)"));
        cs_pts.push((x, cs.report.throughput_tps));
        tp_pts.push((x, tp.report.throughput_tps));
    }
    let ahead = ratios.iter().all(|r| *r > 1.0);
    let grows = ratios.windows(2).all(|w| w[1] >= w[0]);
    cx.say(format!(
        "CrossStitch ahead in all three: {}; advantage grows with latency: {}",
        if ahead { "yes" } else { "NO" },
        if grows { "yes" } else { "NO" }
    ));
    cx.say("The paper's Fig. 11 is bars without values, so the chart shows our runs alone.");
    let cat_refs: Vec<&str> = cats.iter().map(|c| c.as_str()).collect();
    cx.figure(ours_both(
        Figure::new(
            "cs-fig11",
            "CrossStitch Fig. 11: committed throughput on three 3-DC configurations",
            "DC configuration (RTTs)",
            "throughput (txn/s)",
        )
        .categories(&cat_refs),
        cs_pts,
        tp_pts,
    ));
    let shown = ratios.iter().map(|r| f(*r, 2)).collect::<Vec<_>>().join(" / ");
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 11",
        "CrossStitch's throughput above 2PC's in every 3-DC configuration",
        "CS / 2PC > 1 in all",
        format!("CS / 2PC {shown}"),
        ahead,
        "2PC's throughput is not below CrossStitch's in every configuration",
    ));
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 11",
        "CrossStitch's advantage over 2PC grows with DC latency",
        "CS / 2PC rising us3 → far3",
        format!("CS / 2PC {shown}"),
        grows,
        "flat: both take a fixed number of round trips (CS 2, 2PC ~5), so the closed-loop ratio is independent of RTT",
    ));
    Ok(())
}

/// Figs. 13/14: a TPC-C-like transaction's completion time against DC latency, client
/// in A, data in B (the worst case of Fig. 12).
fn tpcc_latency(cx: &mut Ctx, txn: &str, fig: u32, twopc_rtts: f64) -> Result<()> {
    cx.say(format!(
        "Fig. {fig}: {txn} completion time (ms) vs DC round-trip latency; client in A, data in B"
    ));
    cx.say(format!("paper (Fig. 12 analysis): CrossStitch 2 round trips, 2PC {twopc_rtts}; at 0 ms CrossStitch is slower (shipping overhead)"));
    cx.table(&[
        "rtt",
        "cs",
        "2pc",
        "cs-rtts",
        "2pc-rtts",
        "cs/paper",
        "2pc/paper",
        "check",
    ]);
    let (mut cs_pts, mut tp_pts, mut cs_r, mut tp_r) = (vec![], vec![], vec![], vec![]);
    let mut at_zero = None;
    for rtt in cx.sweep(&[0.0, 50.0, 100.0, 150.0]) {
        let c = remote(cx, rtt, &format!("tpcc:txn={txn}"), 300)?;
        let (cs, tp) = both(cx, &c)?;
        let (a, b) = (cs.report.latency_ms.mean, tp.report.latency_ms.mean);
        let (ra, rb) = if rtt > 0.0 {
            cs_r.push(a / rtt);
            tp_r.push(b / rtt);
            (a / rtt, b / rtt)
        } else {
            at_zero = Some((a, b));
            (f64::NAN, f64::NAN)
        };
        cx.row(vec![
            rtt.to_string(),
            f(a, 2),
            f(b, 2),
            f(ra, 2),
            f(rb, 2),
            f(ra / 2.0, 2),
            f(rb / twopc_rtts, 2),
            format!("{}/{}", ok(&cs), ok(&tp)),
        ]);
        cs_pts.push((rtt, a));
        tp_pts.push((rtt, b));
    }
    cx.say(format!(
        "cs-rtts = completion time / RTT; cs/paper = cs-rtts / 2, 2pc/paper = 2pc-rtts / {twopc_rtts}"
    ));
    let at = format!("Fig. {fig}");
    let rtts: Vec<f64> = cs_pts.iter().map(|p| p.0).filter(|r| *r > 0.0).collect();
    let over = format!("mean over RTT {} ms", span(&rtts, 0));
    rtt_claims(
        cx,
        &at,
        &format!("{txn}, client remote from data: CrossStitch completion time / RTT ({over})"),
        &cs_r,
        &format!("{txn}, client remote from data: 2PC completion time / RTT ({over})"),
        (twopc_rtts, &tp_r),
    );
    if let Some((a, b)) = at_zero {
        cx.claim(Claim::shape(
            PAPER,
            &at,
            &format!("{txn} at 0 ms DC latency: CrossStitch slower than 2PC (shipping overhead)"),
            "CS > 2PC",
            format!("CS {} ms, 2PC {} ms", f(a, 2), f(b, 2)),
            a > b,
            "2PC pays two forced log writes (1 ms); our shipping costs only 2 µs CPU per KiB, no marshalling term",
        ));
    }
    cx.say("The paper's curves are not given as values; its series here are Fig. 12's round trips times the RTT, for RTT > 0.");
    cx.figure(ours_both(
        Figure::new(
            &format!("cs-fig{fig}"),
            &format!("CrossStitch Fig. {fig}: {txn} completion time vs DC latency, client in A, data in B"),
            "DC round-trip latency (ms)",
            "completion time (ms)",
        )
        .log_y()
        .paper(
            "paper: CrossStitch 2 x RTT (Fig. 12)",
            Source::PaperText,
            rtts.iter().map(|r| (*r, 2.0 * r)).collect(),
        )
        .paper(
            &format!("paper: 2PC {twopc_rtts} x RTT (Fig. 12)"),
            Source::PaperText,
            rtts.iter().map(|r| (*r, twopc_rtts * r)).collect(),
        ),
        cs_pts,
        tp_pts,
    ));
    Ok(())
}

/// The two round-trip claims of Figs. 8, 13 and 14: CrossStitch's completion time is 2
/// RTTs, 2PC's `twopc.0`, each the mean of the measured completion time / RTT.
fn rtt_claims(cx: &mut Ctx, at: &str, cs_claim: &str, cs_rtts: &[f64], twopc_claim: &str, twopc: (f64, &[f64])) {
    for (claim, paper, ours) in [(cs_claim, 2.0, cs_rtts), (twopc_claim, twopc.0, twopc.1)] {
        cx.claim(Claim::numeric(PAPER, at, claim, paper, mean(ours), "RTTs", 0.15));
    }
}

/// §5.2's synthetic transaction: ten dependent operations, 80% reads, 100,000 keys.
const CHAIN: &str = "chain:ops=10,reads=0.8,keys=100000";

/// One DC of `servers` servers (one shard each), 0.5 ms apart.
fn one(servers: u32) -> Topology {
    Topology::uniform(
        &format!("one{servers}"),
        &["A"],
        0.0,
        DEFAULT_INTRA_RTT_MS,
        servers,
        servers,
    )
}

/// Two DCs `rtt_ms` apart with `servers` servers split evenly (one shard each).
fn split(servers: u32, rtt_ms: f64) -> Topology {
    Topology::uniform(
        &format!("two{rtt_ms}x{servers}"),
        &["A", "B"],
        rtt_ms,
        DEFAULT_INTRA_RTT_MS,
        servers / 2,
        servers,
    )
}

/// What one closed-loop run delivered.
#[derive(Clone, Copy, Debug)]
struct Load {
    clients: u32,
    /// Committed transactions per second.
    tps: f64,
    /// Committed per 1000 issued.
    per1000: f64,
    /// Mean completion time of the committed ones.
    latency_ms: f64,
    ok: bool,
}

impl Load {
    fn of(o: &SimOutput, clients: u32) -> Load {
        let r = &o.report;
        Load {
            clients,
            tps: r.throughput_tps,
            per1000: 1000.0 * r.committed as f64 / r.txns.max(1) as f64,
            latency_ms: r.latency_ms.mean,
            ok: r.check.ok(),
        }
    }
}

/// `protocol`'s highest committed throughput on `topo` with `CHAIN`: the paper's
/// "increase the number of concurrent clients until we saturate the system" (§5.2.2).
/// Closed-loop clients (spread over every DC) step through `ladder`, each running
/// `per_client` transactions; the search stops after the first step that gains less
/// than 5%. Quick mode: the ladder's first step only. Returns the best point and every
/// step tried.
fn saturate(
    cx: &mut Ctx,
    protocol: &str,
    topo: &Topology,
    ladder: &[u32],
    per_client: u64,
    tweak: &dyn Fn(&mut SimConfig),
) -> Result<(Load, Vec<Load>)> {
    let ladder = if cx.quick { &ladder[..1] } else { ladder };
    let mut tried: Vec<Load> = vec![];
    for &clients in ladder {
        let mut c = cx.cfg(topo, CHAIN, per_client * clients as u64, clients, &[])?;
        tweak(&mut c);
        let o = cx.run(protocol, &c)?;
        let l = Load::of(&o, clients);
        let gain = tried.last().map(|p| l.tps / p.tps);
        tried.push(l);
        if gain.is_some_and(|g| g < 1.05) {
            break;
        }
    }
    let best = *tried
        .iter()
        .max_by(|a, b| a.tps.total_cmp(&b.tps))
        .expect("the ladder has a step");
    Ok((best, tried))
}

/// `clients:tps` of every step tried, the best marked `*` (a table cell).
fn steps(tried: &[Load], best: &Load) -> String {
    tried
        .iter()
        .map(|l| {
            format!(
                "{}:{:.1}k{}",
                l.clients,
                l.tps / 1000.0,
                if l.clients == best.clients { "*" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn check(a: &Load, b: &Load) -> String {
    let v = |l: &Load| if l.ok { "ok" } else { "FAIL" };
    format!("{}/{}", v(a), v(b))
}

/// Fig. 5: one DC, one client, a ten-operation chain with a varying share of reads.
fn fig5(cx: &mut Ctx) -> Result<()> {
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
        "completion time vs percentage of reads, one DC, ten operations",
        "read operations (%)",
        "completion time (ms)",
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

/// Fig. 6: one DC, saturated committed throughput against the number of servers.
fn fig6(cx: &mut Ctx) -> Result<()> {
    let ladder = [64, 128, 256, 512, 1024];
    cx.say(format!(
        "Fig. 6: saturated committed throughput (txn/s) vs servers; one DC ({DEFAULT_INTRA_RTT_MS} ms RTT), one shard per server, {CHAIN}"
    ));
    cx.say("Each point: closed-loop clients doubled from 64 (10 transactions each) until a step gains under 5%; the best step is shown (clients:ktps, * = best).");
    cx.say(
        "paper: similar scaling for both; CrossStitch slightly below 2PC (marshalling overhead compounds under load)",
    );
    cx.table(&[
        "servers",
        "cs tps",
        "2pc tps",
        "cs/2pc",
        "cs steps",
        "2pc steps",
        "check",
    ]);
    let (mut cs_pts, mut tp_pts) = (vec![], vec![]);
    for servers in cx.sweep(&[8u32, 12, 16, 20]) {
        let topo = one(servers);
        let (a, a_t) = saturate(cx, "crossstitch", &topo, &ladder, 10, &|_| {})?;
        let (b, b_t) = saturate(cx, TWO_PC, &topo, &ladder, 10, &|_| {})?;
        cx.row(vec![
            servers.to_string(),
            f(a.tps, 0),
            f(b.tps, 0),
            f(a.tps / b.tps, 2),
            steps(&a_t, &a),
            steps(&b_t, &b),
            check(&a, &b),
        ]);
        cs_pts.push((servers as f64, a.tps));
        tp_pts.push((servers as f64, b.tps));
    }
    let n = cs_pts.len();
    words_only(
        cx,
        6,
        "saturated committed throughput vs servers, one DC",
        "servers",
        "committed throughput (txn/s)",
        cs_pts.clone(),
        tp_pts.clone(),
    );
    let ratios = ratios(&cs_pts, &tp_pts);
    let below = ratios.iter().all(|r| *r < 1.0);
    let slightly = ratios.iter().all(|r| (0.75..1.0).contains(r));
    let claim = Claim::shape(
        PAPER,
        "Fig. 6",
        "one DC: CrossStitch's saturated throughput slightly below 2PC's at every size",
        "CS / 2PC a little under 1",
        format!("CS / 2PC {}", span(&ratios, 2)),
        slightly,
        "",
    );
    cx.claim(if slightly {
        claim
    } else if below {
        claim.with_status(
            Status::Partly,
            "below 2PC everywhere, by more than slightly: CrossStitch stops gaining at fewer clients than 2PC \
             (the steps columns); the paper names marshalling, which our model charges only per KiB shipped",
        )
    } else {
        claim.with_status(Status::NotReproduced, "CrossStitch not below 2PC at every size")
    });
    if n >= 2 {
        let (gc, gt) = (cs_pts[n - 1].1 / cs_pts[0].1, tp_pts[n - 1].1 / tp_pts[0].1);
        let similar = gc / gt >= 0.8;
        let claim = Claim::shape(
            PAPER,
            "Fig. 6",
            &format!(
                "one DC: CrossStitch's throughput scales like 2PC's from {} to {} servers",
                cs_pts[0].0,
                cs_pts[n - 1].0
            ),
            "similar growth",
            format!("growth CS {}x, 2PC {}x", f(gc, 2), f(gt, 2)),
            similar,
            "",
        );
        let cause = format!(
            "CrossStitch grows {}x where 2PC grows {}x over the same servers",
            f(gc, 2),
            f(gt, 2)
        );
        cx.claim(if similar {
            claim
        } else if gc > 1.1 {
            claim.with_status(Status::Partly, &cause)
        } else {
            claim.with_status(Status::NotReproduced, &cause)
        });
    }
    Ok(())
}

/// Fig. 7: two DCs 50 ms apart, saturated committed throughput against the number of
/// servers (split evenly), with CrossStitch's one-DC growth beside it.
fn fig7(cx: &mut Ctx) -> Result<()> {
    let ladder = [2048, 4096, 8192];
    cx.say(format!(
        "Fig. 7: saturated committed throughput (txn/s) vs servers; two DCs 50 ms apart, servers split evenly, one shard per server, clients in both DCs, {CHAIN} (local states first)"
    ));
    cx.say("Each point: closed-loop clients doubled from 2048 to at most 8192 (3 transactions each) until a step gains under 5%; the best step is shown (clients:ktps, * = best).");
    cx.say("paper: CrossStitch above 2PC; CrossStitch's scaling largely unaffected by the 50 ms; 2PC does not scale");
    cx.table(&[
        "servers",
        "cs tps",
        "2pc tps",
        "cs/2pc",
        "cs ok/1000",
        "2pc ok/1000",
        "cs steps",
        "2pc steps",
        "check",
    ]);
    let (mut cs_pts, mut tp_pts, mut tp_best) = (vec![], vec![], vec![]);
    let sizes = cx.sweep(&[8u32, 14, 20]);
    for &servers in &sizes {
        let topo = split(servers, 50.0);
        let (a, a_t) = saturate(cx, "crossstitch", &topo, &ladder, 3, &|_| {})?;
        let (b, b_t) = saturate(cx, TWO_PC, &topo, &ladder, 3, &|_| {})?;
        cx.row(vec![
            servers.to_string(),
            f(a.tps, 0),
            f(b.tps, 0),
            f(a.tps / b.tps, 2),
            f(a.per1000, 0),
            f(b.per1000, 0),
            steps(&a_t, &a),
            steps(&b_t, &b),
            check(&a, &b),
        ]);
        cs_pts.push((servers as f64, a.tps));
        tp_pts.push((servers as f64, b.tps));
        tp_best.push(b);
    }
    // Both protocols' growth in one DC over the same sizes (as in cs-fig6): "largely
    // unaffected by the 50 ms" is against that.
    let (lo, hi) = (sizes[0], sizes[sizes.len() - 1]);
    let one_dc = [64, 128, 256, 512, 1024];
    let mut g1 = [0.0; 2];
    for (i, p) in ["crossstitch", TWO_PC].into_iter().enumerate() {
        let (l, _) = saturate(cx, p, &one(lo), &one_dc, 10, &|_| {})?;
        let (h, _) = saturate(cx, p, &one(hi), &one_dc, 10, &|_| {})?;
        g1[i] = h.tps / l.tps;
        cx.say(format!(
            "Reference, one DC (as cs-fig6): {p} {} txn/s on {lo} servers, {} on {hi} ({}x).",
            f(l.tps, 0),
            f(h.tps, 0),
            f(g1[i], 2)
        ));
    }
    words_only(
        cx,
        7,
        "saturated committed throughput vs servers, two DCs 50 ms apart",
        "servers",
        "committed throughput (txn/s)",
        cs_pts.clone(),
        tp_pts.clone(),
    );
    let ratios = ratios(&cs_pts, &tp_pts);
    cx.claim(above_everywhere(
        "Fig. 7",
        "two DCs, 50 ms: CrossStitch's saturated throughput above 2PC's at every size",
        &ratios,
        "2PC not below CrossStitch at every size",
    ));
    let n = cs_pts.len();
    if n >= 2 {
        let (gc, gt) = (cs_pts[n - 1].1 / cs_pts[0].1, tp_pts[n - 1].1 / tp_pts[0].1);
        let kept = gc >= 0.8 * g1[0];
        let claim = Claim::shape(
            PAPER,
            "Fig. 7",
            &format!("CrossStitch's growth from {lo} to {hi} servers largely unaffected by 50 ms between DCs"),
            "growth ≈ one DC's",
            format!("growth {}x (one DC {}x)", f(gc, 2), f(g1[0], 2)),
            kept,
            "",
        );
        cx.claim(if kept {
            claim
        } else if gc > 1.1 {
            claim.with_status(
                Status::Partly,
                "grows, but less than in one DC: more shards make longer chains, and more transactions in flight abort",
            )
        } else {
            claim.with_status(
                Status::NotReproduced,
                "CrossStitch does not grow with servers across two DCs",
            )
        });
        // "Does not scale": flat; partly when it grows, but much less than in one DC
        // and less than CrossStitch.
        let claim = Claim::shape(
            PAPER,
            "Fig. 7",
            &format!("two DCs, 50 ms: 2PC's throughput does not scale from {lo} to {hi} servers"),
            "2PC growth ≈ 1",
            format!("2PC growth {}x (one DC {}x; CS {}x)", f(gt, 2), f(g1[1], 2), f(gc, 2)),
            gt <= 1.1,
            "",
        );
        cx.claim(if gt <= 1.1 {
            claim
        } else if gt < gc && gt < 0.8 * g1[1] {
            claim.with_status(
                Status::Partly,
                &format!(
                    "grows a little, far less than in one DC and than CrossStitch, but not flat: more clients mostly buy aborts (2PC commits {}/1000 at its best point on {hi} servers)",
                    f(tp_best[n - 1].per1000, 0)
                ),
            )
        } else {
            claim.with_status(
                Status::NotReproduced,
                "2PC's throughput grows with servers about as in one DC or as CrossStitch's",
            )
        });
    }
    Ok(())
}

/// What Figs. 9 and 10 measure at one DC latency.
struct AtLatency {
    rtt: f64,
    clients: u32,
    cs: Load,
    tp: Load,
    /// CrossStitch's and 2PC's most frequent abort reason, with its share of issued.
    cs_why: String,
    tp_why: String,
}

/// Two DCs of four servers, `rtt` 50..150 ms, clients enough to saturate: 2048 at 50 ms
/// (about where cs-fig7's ladder levels off on eight servers; CrossStitch's completion
/// time there is well above its unloaded 2 RTTs, see cs-fig10's table) and
/// in proportion to the RTT above it, so that the offered concurrency keeps up with the
/// longer transactions (Little's law). Each client runs 3 transactions.
fn latency_load(cx: &mut Ctx) -> Result<Vec<AtLatency>> {
    let mut out = vec![];
    for rtt in cx.sweep(&[50.0, 75.0, 100.0, 125.0, 150.0]) {
        let mut clients = (2048.0 * rtt / 50.0) as u32;
        if cx.quick {
            clients /= 16;
        }
        let c = cx.cfg(&two(rtt), CHAIN, 3 * clients as u64, clients, &[])?;
        let (cs, tp) = both(cx, &c)?;
        let why = |o: &SimOutput| {
            o.report
                .abort_reasons
                .iter()
                .max_by_key(|(_, n)| **n)
                .map_or("-".to_string(), |(r, n)| {
                    format!("{r} ({:.0}/1000)", 1000.0 * *n as f64 / o.report.txns.max(1) as f64)
                })
        };
        out.push(AtLatency {
            rtt,
            clients,
            cs_why: why(&cs),
            tp_why: why(&tp),
            cs: Load::of(&cs, clients),
            tp: Load::of(&tp, clients),
        });
    }
    Ok(out)
}

fn latency_setup(cx: &mut Ctx, fig: u32, what: &str) {
    cx.say(format!(
        "Fig. {fig}: {what} vs DC round-trip latency; two DCs of 4 servers (8 shards), clients in both, {CHAIN} (local states first)"
    ));
    cx.say("Clients: 2048 at 50 ms (about where cs-fig7's ladder levels off on eight servers) and in proportion to the RTT above it (Little's law), so the load stays saturating; 3 transactions each.");
}

/// Fig. 9: successful transactions (per 1000 issued) against DC latency.
fn fig9(cx: &mut Ctx) -> Result<()> {
    latency_setup(cx, 9, "committed transactions per 1000 issued");
    cx.say("paper: CrossStitch completes more than 2PC (shorter transactions overlap less); its completion rate constant until 150 ms");
    let rows = latency_load(cx)?;
    cx.table(&[
        "rtt",
        "clients",
        "cs ok/1000",
        "2pc ok/1000",
        "cs main abort",
        "2pc main abort",
        "check",
    ]);
    for r in &rows {
        cx.row(vec![
            r.rtt.to_string(),
            r.clients.to_string(),
            f(r.cs.per1000, 0),
            f(r.tp.per1000, 0),
            r.cs_why.clone(),
            r.tp_why.clone(),
            check(&r.cs, &r.tp),
        ]);
    }
    words_only(
        cx,
        9,
        "successful transactions vs DC latency, saturating clients",
        "DC round-trip latency (ms)",
        "committed per 1000 issued",
        rows.iter().map(|r| (r.rtt, r.cs.per1000)).collect(),
        rows.iter().map(|r| (r.rtt, r.tp.per1000)).collect(),
    );
    let shown = rows
        .iter()
        .map(|r| format!("{}/{}", f(r.cs.per1000, 0), f(r.tp.per1000, 0)))
        .collect::<Vec<_>>()
        .join(", ");
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 9",
        "CrossStitch's completion rate above 2PC's at every DC latency",
        "CS > 2PC",
        format!("CS/2PC per 1000: {shown}"),
        rows.iter().all(|r| r.cs.per1000 > r.tp.per1000),
        "2PC completes as many as CrossStitch somewhere",
    ));
    let (a, z) = (&rows[0], &rows[rows.len() - 1]);
    let cause = format!(
        "declines gently: with clients in proportion to the RTT more transactions overlap; main abort at {} ms: {}, at {} ms: {}",
        a.rtt, a.cs_why, z.rtt, z.cs_why
    );
    cx.claim(
        Claim::numeric(
            PAPER,
            "Fig. 9",
            &format!(
                "CrossStitch's completion rate constant up to 150 ms: per 1000 at {} ms / at {} ms",
                z.rtt, a.rtt
            ),
            1.0,
            z.cs.per1000 / a.cs.per1000,
            "",
            0.05,
        )
        .because(&cause),
    );
    Ok(())
}

/// Fig. 10: committed throughput against DC latency (the runs of Fig. 9).
fn fig10(cx: &mut Ctx) -> Result<()> {
    latency_setup(cx, 10, "committed throughput (txn/s)");
    cx.say("paper: CrossStitch's completed-transaction throughput above 2PC's; CrossStitch's drops as latency grows (more concurrent transactions, more overhead)");
    let rows = latency_load(cx)?;
    cx.table(&[
        "rtt", "clients", "cs tps", "2pc tps", "cs/2pc", "cs ms", "2pc ms", "check",
    ]);
    for r in &rows {
        cx.row(vec![
            r.rtt.to_string(),
            r.clients.to_string(),
            f(r.cs.tps, 0),
            f(r.tp.tps, 0),
            f(r.cs.tps / r.tp.tps, 2),
            f(r.cs.latency_ms, 0),
            f(r.tp.latency_ms, 0),
            check(&r.cs, &r.tp),
        ]);
    }
    cx.say("cs ms / 2pc ms: mean completion time of the committed transactions under this load.");
    words_only(
        cx,
        10,
        "committed throughput vs DC latency, saturating clients",
        "DC round-trip latency (ms)",
        "committed throughput (txn/s)",
        rows.iter().map(|r| (r.rtt, r.cs.tps)).collect(),
        rows.iter().map(|r| (r.rtt, r.tp.tps)).collect(),
    );
    let ratios: Vec<f64> = rows.iter().map(|r| r.cs.tps / r.tp.tps).collect();
    cx.claim(above_everywhere(
        "Fig. 10",
        "CrossStitch's committed throughput above 2PC's at every DC latency",
        &ratios,
        "2PC not below CrossStitch at every latency",
    ));
    let (a, z) = (&rows[0], &rows[rows.len() - 1]);
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 10",
        "CrossStitch's throughput drops as DC latency grows",
        "lower at 150 ms than at 50 ms",
        format!(
            "{} txn/s at {} ms, {} at {} ms",
            f(a.cs.tps, 0),
            a.rtt,
            f(z.cs.tps, 0),
            z.rtt
        ),
        z.cs.tps < a.cs.tps,
        "no drop: with clients in proportion to the RTT, CrossStitch's throughput stays at its CPU limit",
    ));
    Ok(())
}

/// Fig. 15: `d` remote DCs (one shard each) and the client's DC C (no data), all
/// `rtt_ms` apart, two servers per DC.
fn remote_dcs(d: u32, rtt_ms: f64) -> Topology {
    let names: Vec<String> = (1..=d).map(|i| format!("R{i}")).chain(["C".to_string()]).collect();
    let refs: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
    Topology::uniform(&format!("remote{d}"), &refs, rtt_ms, DEFAULT_INTRA_RTT_MS, 2, d)
}

/// Fig. 15: WAN round trips against the number of remote DCs a transaction visits.
fn fig15(cx: &mut Ctx) -> Result<()> {
    let rtt = 100.0;
    cx.say(format!(
        "Fig. 15: WAN round trips (one-way WAN trips on the critical path / 2) vs remote DCs travelled; client in its own DC C (no data), DCs {rtt} ms apart, no jitter"
    ));
    cx.say("Workload: chain:ops=k*D,reads=1,keys=k*D on D remote DCs of one shard each, so every transaction reads k keys in each remote DC, one DC after the other (k = ops per DC).");
    cx.say("paper: CrossStitch and code shipping pay per group of operations, the flat system per remote key; six remote DCs: CrossStitch 4, code shipping + R* commit 10");
    cx.say("Lines: crossstitch for CrossStitch, 2pc-2pl:copies=2 (§5.1's flat 2PC system: one round trip per dependent remote read, then commit) for flat processing. Code shipping with R* commit has no counterpart among our protocols (none ships code and commits along a tree), so its line is left out.");
    cx.table(&["remote DCs", "ops/DC", "cs", "2pc", "paper cs", "check"]);
    let ks = cx.sweep(&[1u32, 2, 4]);
    let ds = cx.sweep(&[1u32, 2, 3, 4, 5, 6]);
    let mut cs_lines: Vec<Vec<(f64, f64)>> = vec![];
    let mut tp_lines: Vec<Vec<(f64, f64)>> = vec![];
    let mut at_six = None;
    for &k in &ks {
        let (mut cs_pts, mut tp_pts) = (vec![], vec![]);
        for &d in &ds {
            let ops = k * d;
            let mut c = cx.cfg(
                &remote_dcs(d, rtt),
                &format!("chain:ops={ops},reads=1,keys={ops}"),
                40,
                1,
                &["C"],
            )?;
            c.jitter = 0.0;
            let (cs, tp) = both(cx, &c)?;
            let (a, b) = (cs.report.wan_trips.mean / 2.0, tp.report.wan_trips.mean / 2.0);
            cx.row(vec![
                d.to_string(),
                k.to_string(),
                f(a, 1),
                f(b, 1),
                if d == 6 { "4".into() } else { "-".into() },
                format!("{}/{}", ok(&cs), ok(&tp)),
            ]);
            if d == 6 && k == ks[0] {
                at_six = Some(a);
            }
            cs_pts.push((d as f64, a));
            tp_pts.push((d as f64, b));
        }
        cs_lines.push(cs_pts);
        tp_lines.push(tp_pts);
    }
    cx.say("The paper states only the six-DC values; its chart is otherwise drawn from its analysis, so our lines are drawn alone apart from that point.");
    let same = cs_lines.windows(2).all(|w| w[0] == w[1]);
    let mut fig = Figure::new(
        "cs-fig15",
        "CrossStitch Fig. 15: WAN round trips vs remote DCs travelled",
        "remote DCs travelled",
        "WAN round trips per transaction",
    );
    if same {
        fig = fig.ours("crossstitch (any ops/DC)", cs_lines[0].clone());
    } else {
        for (k, l) in ks.iter().zip(&cs_lines) {
            fig = fig.ours(&format!("crossstitch, {k} ops/DC"), l.clone());
        }
    }
    for (k, l) in ks.iter().zip(&tp_lines) {
        fig = fig.ours(&format!("2pc-2pl:copies=2 (flat), {k} ops/DC"), l.clone());
    }
    let cs_name = if same {
        "crossstitch (any ops/DC)".to_string()
    } else {
        format!("crossstitch, {} ops/DC", ks[0])
    };
    fig = fig
        .paper("paper: CrossStitch", Source::PaperText, vec![(6.0, 4.0)])
        .of(&cs_name);
    cx.figure(fig);

    if let Some(a) = at_six {
        cx.claim(Claim::numeric(
            PAPER,
            "Fig. 15",
            "six remote DCs: CrossStitch's round trips",
            4.0,
            a,
            "RTTs",
            0.1,).because("our critical path is D + 3 one-way WAN trips (the shipment, the first server's ack to the client and the client's precommit back, D − 1 hops between DCs, the answer): 4.5 RTTs at D = 6; the same count gives the paper's own 2 at D = 1 (Fig. 12)"));
    }
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 15",
        "CrossStitch's round trips depend on the DCs travelled, not on operations per DC",
        "same for every ops/DC",
        format!(
            "CS {} RTTs over {} remote DCs, for ops/DC {}",
            span(&cs_lines[0].iter().map(|p| p.1).collect::<Vec<_>>(), 1),
            span(&ds.iter().map(|d| *d as f64).collect::<Vec<_>>(), 0),
            ks.iter().map(|k| k.to_string()).collect::<Vec<_>>().join("/")
        ),
        same,
        "CrossStitch's round trips change with operations per DC",
    ));
    // The flat system: one round trip per remote read plus the commit.
    let flat: Vec<(u32, u32, f64)> = ks
        .iter()
        .zip(&tp_lines)
        .flat_map(|(k, l)| l.iter().map(move |p| (*k, p.0 as u32, p.1)))
        .collect();
    let exact = flat.iter().all(|(k, d, r)| (*r - (k * d + 1) as f64).abs() < 0.05);
    let (k_max, d_max) = (ks[ks.len() - 1], ds[ds.len() - 1]);
    let worst = flat.iter().map(|p| p.2).fold(0.0, f64::max);
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 15",
        "the flat system pays a round trip per remote key access (plus its commit)",
        "grows with remote accesses",
        format!(
            "2PC = ops/DC x DCs + 1 everywhere: {}; {} RTTs at {k_max} ops x {d_max} DCs",
            if exact { "yes" } else { "no" },
            f(worst, 1)
        ),
        exact,
        "2PC's round trips are not one per remote read plus one commit",
    ));
    Ok(())
}
