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

use super::ok;
use super::Experiment;
use anyhow::Result;
use meridian_core::{HomeRule, Topology, DEFAULT_INTRA_RTT_MS};
use meridian_sim::{SimConfig, SimOutput};

/// The 2PC baseline of §5.1.
const TWO_PC: &str = "2pc-2pl:copies=2";

use super::Ctx;

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
        name: "cs-fig8",
        about: "crossstitch.md Fig. 8: completion time vs DC round-trip latency 50..150 ms on two DCs",
        run: fig8,
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

/// Fig. 12: worst-case round trips, measured (WAN one-way trips / 2).
fn fig12(cx: &mut Ctx) -> Result<()> {
    println!("Fig. 12: worst-case WAN round trips, client in A, all data in B (two DCs, 100 ms)");
    println!(
        "{:<14} {:>12} {:>10} {:>12} {:>10} {:>8}  check",
        "transaction", "paper 2PC", "ours 2PC", "paper CS", "ours CS", "ratio"
    );
    for (txn, paper_2pc) in [("order-status", 4.0), ("stock-level", 5.0)] {
        let c = remote(cx, 100.0, &format!("tpcc:txn={txn}"), 200)?;
        let cs = cx.run("crossstitch", &c)?;
        let tp = cx.run(TWO_PC, &c)?;
        let (o_cs, o_tp) = (cs.report.wan_trips.mean / 2.0, tp.report.wan_trips.mean / 2.0);
        println!(
            "{:<14} {:>12} {:>10.1} {:>12} {:>10.1} {:>8}  {}/{}",
            txn,
            format!("{}+1", paper_2pc - 1.0),
            o_tp,
            2,
            o_cs,
            format!("{:.2}/{:.2}", o_tp / paper_2pc, o_cs / 2.0),
            ok(&tp),
            ok(&cs)
        );
    }
    println!("ratio = ours / paper (2PC / CrossStitch)");
    Ok(())
}

/// Fig. 4: one DC, completion time against the number of operations.
fn fig4(cx: &mut Ctx) -> Result<()> {
    let topo = Topology::uniform("one", &["A"], 0.0, DEFAULT_INTRA_RTT_MS, 8, 8);
    println!(
        "Fig. 4: completion time (ms) vs operations per transaction, one DC (8 servers, {DEFAULT_INTRA_RTT_MS} ms RTT), one client, chain 80% reads"
    );
    println!("paper: both grow linearly; CrossStitch slightly slower (marshalling the shipped transaction)");
    println!("{:>4} {:>10} {:>10} {:>8}  check", "ops", "cs", "2pc", "cs/2pc");
    for ops in [2u32, 4, 6, 8, 10, 14, 20] {
        let c = cx.cfg(&topo, &format!("chain:ops={ops},reads=0.8,keys=100000"), 300, 1, &[])?;
        let cs = cx.run("crossstitch", &c)?;
        let tp = cx.run(TWO_PC, &c)?;
        let (a, b) = (cs.report.latency_ms.mean, tp.report.latency_ms.mean);
        println!("{ops:>4} {a:>10.3} {b:>10.3} {:>8.2}  {}/{}", a / b, ok(&cs), ok(&tp));
    }
    Ok(())
}

/// Fig. 8: two DCs, completion time against their round-trip latency.
fn fig8(cx: &mut Ctx) -> Result<()> {
    println!("Fig. 8: completion time (ms) vs DC round-trip latency; two DCs of 4 servers, one client per DC, chain:ops=10,reads=0.8 (local states first)");
    println!("paper: CrossStitch ~ 2 x RTT, 2PC ~ 5 x RTT (4 remote dependent reads + commit)");
    println!(
        "{:>6} {:>9} {:>9} {:>8} {:>8} {:>12} {:>12}  check",
        "rtt", "cs", "2pc", "cs/rtt", "2pc/rtt", "cs/paper", "2pc/paper"
    );
    for rtt in [50.0, 75.0, 100.0, 125.0, 150.0] {
        let mut c = cx.cfg(&two(rtt), "chain:ops=10,reads=0.8,keys=100000", 400, 2, &[])?;
        c.jitter = 0.0;
        let cs = cx.run("crossstitch", &c)?;
        let tp = cx.run(TWO_PC, &c)?;
        let (a, b) = (cs.report.latency_ms.mean / rtt, tp.report.latency_ms.mean / rtt);
        println!(
            "{:>6} {:>9.1} {:>9.1} {:>8.2} {:>8.2} {:>12.2} {:>12.2}  {}/{}",
            rtt,
            cs.report.latency_ms.mean,
            tp.report.latency_ms.mean,
            a,
            b,
            a / 2.0,
            b / 5.0,
            ok(&cs),
            ok(&tp)
        );
    }
    println!("cs/paper = (cs/rtt) / 2, 2pc/paper = (2pc/rtt) / 5");
    Ok(())
}

/// Fig. 11: committed-transaction throughput on the three 3-DC configurations.
fn fig11(cx: &mut Ctx) -> Result<()> {
    let clients = 60;
    println!("Fig. 11: committed transactions per second, {clients} closed-loop clients over 3 DCs (2 servers each), chain:ops=10,reads=0.8");
    println!("paper: CrossStitch ahead in all three configurations, by more where latency is higher");
    println!(
        "{:<8} {:>16} {:>10} {:>10} {:>8} {:>10} {:>10}  check",
        "config", "rtts (ms)", "cs tps", "2pc tps", "cs/2pc", "cs abort", "2pc abort"
    );
    let mut ratios = vec![];
    for name in ["us3", "world3", "far3"] {
        let topo = Topology::preset(name).expect("preset");
        let c = cx.cfg(&topo, "chain:ops=10,reads=0.8,keys=100000", 1500, clients, &[])?;
        let cs = cx.run("crossstitch", &c)?;
        let tp = cx.run(TWO_PC, &c)?;
        let rtts = format!("{}/{}/{}", topo.rtt_ms[0][1], topo.rtt_ms[1][2], topo.rtt_ms[2][0]);
        let abort = |o: &SimOutput| o.report.aborted as f64 / (o.report.committed + o.report.aborted).max(1) as f64;
        let r = cs.report.throughput_tps / tp.report.throughput_tps;
        ratios.push(r);
        println!(
            "{:<8} {:>16} {:>10.1} {:>10.1} {:>8.2} {:>9.1}% {:>9.1}%  {}/{}",
            name,
            rtts,
            cs.report.throughput_tps,
            tp.report.throughput_tps,
            r,
            100.0 * abort(&cs),
            100.0 * abort(&tp),
            ok(&cs),
            ok(&tp)
        );
    }
    let ahead = ratios.iter().all(|r| *r > 1.0);
    let grows = ratios.windows(2).all(|w| w[1] >= w[0]);
    println!();
    println!(
        "CrossStitch ahead in all three: {}; advantage grows with latency: {}",
        if ahead { "yes" } else { "NO" },
        if grows { "yes" } else { "NO" }
    );
    Ok(())
}

/// Figs. 13/14: a TPC-C-like transaction's completion time against DC latency, client
/// in A, data in B (the worst case of Fig. 12).
fn tpcc_latency(cx: &mut Ctx, txn: &str, fig: u32, twopc_rtts: f64) -> Result<()> {
    println!("Fig. {fig}: {txn} completion time (ms) vs DC round-trip latency; client in A, data in B");
    println!("paper (Fig. 12 analysis): CrossStitch 2 round trips, 2PC {twopc_rtts}; at 0 ms CrossStitch is slower (shipping overhead)");
    println!(
        "{:>6} {:>9} {:>9} {:>8} {:>8} {:>10} {:>10}  check",
        "rtt", "cs", "2pc", "cs-rtts", "2pc-rtts", "cs/paper", "2pc/paper"
    );
    for rtt in [0.0, 50.0, 100.0, 150.0] {
        let c = remote(cx, rtt, &format!("tpcc:txn={txn}"), 300)?;
        let cs = cx.run("crossstitch", &c)?;
        let tp = cx.run(TWO_PC, &c)?;
        let (a, b) = (cs.report.latency_ms.mean, tp.report.latency_ms.mean);
        let (ra, rb) = if rtt > 0.0 {
            (a / rtt, b / rtt)
        } else {
            (f64::NAN, f64::NAN)
        };
        println!(
            "{:>6} {:>9.2} {:>9.2} {:>8.2} {:>8.2} {:>10.2} {:>10.2}  {}/{}",
            rtt,
            a,
            b,
            ra,
            rb,
            ra / 2.0,
            rb / twopc_rtts,
            ok(&cs),
            ok(&tp)
        );
    }
    println!("cs-rtts = completion time / RTT; cs/paper = cs-rtts / 2, 2pc/paper = 2pc-rtts / {twopc_rtts}");
    Ok(())
}
