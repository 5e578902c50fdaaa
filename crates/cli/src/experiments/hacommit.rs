//! `meridian compare --experiment hacommit-*`: hacommit.md §VII reproduced side by side
//! with the paper. Every run is a full simulation that ends with the checker; a failed
//! check makes the experiment exit 3.
//!
//! The paper's setup (§VII-A): eight in-memory servers on one LAN (RTT about 0.1 ms),
//! each running a server and a test client of 10 threads; three replicas for HACommit
//! and Replicated Commit, none for 2PC (which logs instead); YCSB-like transactions over
//! 10 million uniformly accessed records. Here: the `lan` preset (8 nodes, 0.1 ms RTT),
//! 80 closed-loop clients, `ycsb` with half reads over 10,000,000 keys. Replicated
//! Commit needs one replica per DC, so it runs on `lan3`: three "DCs" of three nodes
//! with the same 0.1 ms RTT everywhere (9 nodes, not 8).
//!
//! Costs the simulator charges (the defaults, stated in every header): 10 µs of CPU per
//! message, 2 µs per key operation (a lock, a read, a version installed: "apply"), and
//! 0.5 ms per forced log write with group commit (a datacenter SSD's flush; forces that
//! arrive during a flush share the next one). HACommit forces nothing; 2PC forces
//! PREPARED at each participant and COMMIT at the coordinator; Replicated Commit forces
//! PREPARED and the vote in every DC.
//!
//! Figs. 2 and 6/7 run twice: with the run's costs and with "8-core" costs (1.25 µs per
//! message, 0.25 µs per key operation, the same fsync), since the paper's servers have
//! 8 cores and the simulator serves one input at a time; a claim that holds only with
//! the 8-core costs is "partly".
//!
//! The paper's Figs. 2-7 are charts whose values the text gives only in words (one
//! number: 2PC's commit takes five times HACommit's at 64 operations), so the charts
//! here carry our series alone, plus that one point, and most claims are shapes.

use super::{f, ok, Claim, Ctx, Experiment, Figure, Source, Status};
use anyhow::Result;
use meridian_core::{secs, Outcome, Time, Topology};
use meridian_sim::{SimConfig, SimOutput};

/// The paper's file under `../shared/papers/`, for claims.
const PAPER: &str = "hacommit.md";

/// Three LAN "DCs" of three nodes, 0.1 ms apart: where Replicated Commit (one replica
/// per DC) runs in the LAN experiments.
pub fn lan3() -> Topology {
    Topology::uniform("lan3", &["L1", "L2", "L3"], 0.1, 0.1, 3, 8)
}

/// Five LAN "DCs" of one node each, 0.1 ms apart: five replicas that can be cut off from
/// each other (the fault experiment).
fn lan5() -> Topology {
    Topology::uniform("lan5", &["R1", "R2", "R3", "R4", "R5"], 0.1, 0.1, 1, 5)
}

/// This paper's experiments, as `--experiment list` shows them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "hacommit-fig2",
        about: "hacommit.md Fig. 2: commit latency vs operations per transaction, hacommit vs 2pc-2pl vs rc (LAN)",
        run: fig2,
        sim: true,
    },
    Experiment {
        name: "hacommit-fig6",
        about: "hacommit.md Figs. 6/7: throughput and latency vs operations per transaction, hacommit vs rc (LAN)",
        run: fig6,
        sim: true,
    },
    Experiment {
        name: "hacommit-faults",
        about: "hacommit.md §VII-C, Figs. 3/4: five replicas lose one, two, then three; commits per second",
        run: faults,
        sim: true,
    },
    Experiment {
        name: "hacommit-fig5",
        about:
            "hacommit.md §VII-C, Fig. 5: clients crash mid-transaction; recovery proposers finish their transactions",
        run: fig5,
        sim: true,
    },
];

fn costs(c: &SimConfig) -> String {
    format!(
        "CPU {} us/msg + {} us/key op, fsync {} us with group commit",
        c.cpu.per_msg as f64 / 1000.0,
        c.cpu.per_op as f64 / 1000.0,
        c.cpu.fsync as f64 / 1000.0
    )
}

fn workload(ops: u32) -> String {
    format!("ycsb:ops={ops},reads=0.5,keys=10000000")
}

/// The paper's servers have 8 cores and the simulator serves one input at a time: an
/// eighth of the default per-message and per-key costs approximates them (the fsync
/// stays).
fn eight_core(c: &mut SimConfig) {
    c.cpu.per_msg = 1_250;
    c.cpu.per_op = 250;
}

/// A claim that holds under the default costs (reproduced), only under the 8-core
/// costs (partly, `partly` says why), or under neither (not reproduced, `not`).
fn by_costs(c: Claim, holds_8core: bool, partly: &str, not: &str) -> Claim {
    if c.status == Status::Reproduced {
        c
    } else if holds_8core {
        c.with_status(Status::Partly, partly)
    } else {
        c.with_status(Status::NotReproduced, not)
    }
}

/// One size of the LAN sweeps (Figs. 2 and 6/7), `ops` operations per transaction: 80
/// clients on `lan`, and 81 on [`lan3`] (for rc); with the 8-core costs when `eight`.
fn sweep_cfgs(cx: &Ctx, lan: &Topology, ops: u32, eight: bool) -> Result<(SimConfig, SimConfig)> {
    let txns = if ops >= 32 { 1500 } else { 3000 };
    let mut c = cx.cfg(lan, &workload(ops), txns, 80, &[])?;
    let mut c3 = cx.cfg(&lan3(), &workload(ops), txns, 81, &[])?;
    if eight {
        eight_core(&mut c);
        eight_core(&mut c3);
    }
    Ok((c, c3))
}

/// The `lan` preset and, as headers state them, its default costs and the 8-core ones.
fn lan_and_costs(cx: &Ctx) -> Result<(Topology, String, String)> {
    let lan = Topology::preset("lan").expect("preset");
    let probe = cx.cfg(&lan, &workload(1), 1, 1, &[])?;
    let mut probe8 = probe.clone();
    eight_core(&mut probe8);
    Ok((lan, costs(&probe), costs(&probe8)))
}

/// One size of Fig. 2: mean commit and whole-transaction latency (ms) per protocol.
struct Fig2Point {
    ops: u32,
    /// Commit latency: hacommit (from the decision), 2pc-2pl and rc (from the request).
    h: f64,
    t: f64,
    r: f64,
    /// Whole-transaction latency, first operation to the end.
    hx: f64,
    tx: f64,
    rx: f64,
}

/// Fig. 2's sweep as a table, with the default costs or the 8-core ones.
fn fig2_sweep(cx: &mut Ctx, lan: &Topology, eight: bool) -> Result<Vec<Fig2Point>> {
    cx.table(&[
        "ops",
        "hacommit",
        "2pc-2pl",
        "rc(lan3)",
        "2pc/ha",
        "ha txn mean",
        "2pc txn mean",
        "rc txn mean",
        "2pc/ha txn",
        "check",
    ]);
    let mut pts = vec![];
    for ops in cx.sweep(&[1u32, 2, 4, 8, 16, 20, 32, 64]) {
        let (c, c3) = sweep_cfgs(cx, lan, ops, eight)?;
        let ha = cx.run("hacommit", &c)?;
        let tp = cx.run("2pc-2pl", &c)?;
        let rc = cx.run("rc", &c3)?;
        // HACommit's last operation (vote + replication) is execution in the paper's
        // accounting; whole-transaction latency shows what that leaves out.
        let p = Fig2Point {
            ops,
            h: ha.report.commit_latency_ms.mean,
            t: tp.report.commit_latency_ms.mean,
            r: rc.report.commit_latency_ms.mean,
            hx: ha.report.latency_ms.mean,
            tx: tp.report.latency_ms.mean,
            rx: rc.report.latency_ms.mean,
        };
        cx.row(vec![
            ops.to_string(),
            f(p.h, 3),
            f(p.t, 3),
            f(p.r, 3),
            f(p.t / p.h, 2),
            f(p.hx, 3),
            f(p.tx, 3),
            f(p.rx, 3),
            f(p.tx / p.hx, 2),
            format!("{}/{}/{}", ok(&ha), ok(&tp), ok(&rc)),
        ]);
        pts.push(p);
    }
    Ok(pts)
}

/// Fig. 2: commit latency against operations per transaction, under the paper's
/// definition (HACommit from the client's decision) and over the whole transaction,
/// with the default costs and the 8-core ones.
fn fig2(cx: &mut Ctx) -> Result<()> {
    let (lan, costs1, costs8) = lan_and_costs(cx)?;
    cx.say("Fig. 2: mean commit latency (ms) vs operations per transaction; lan, 80 clients, ycsb 1:1 over 10M keys");
    cx.say(format!(
        "  {costs1}; commit = client's commit request (2PC, rc) or decision (HACommit) to the end"
    ));
    cx.say(
        "  (the paper's definition: HACommit's vote and its replication are part of the last operation; \
         \"txn mean\" is the whole transaction, first operation to the end, for every protocol)",
    );
    let d = fig2_sweep(cx, &lan, false)?;
    cx.say(format!(
        "8-core costs (the paper's servers have 8 cores; the simulator serves one input at a time): {costs8}"
    ));
    let e = fig2_sweep(cx, &lan, true)?;

    let series = |v: &[Fig2Point], k: fn(&Fig2Point) -> f64| v.iter().map(|p| (p.ops as f64, k(p))).collect();
    cx.figure(
        Figure::new(
            "hacommit-fig2-a",
            "HACommit Fig. 2: commit latency vs operations per transaction (paper's definition)",
            "operations per transaction",
            "mean commit latency (ms)",
        )
        .ours("hacommit (from the decision)", series(&d, |p| p.h))
        .ours("2pc-2pl (from the commit request)", series(&d, |p| p.t))
        .ours("rc on lan3 (from the commit request)", series(&d, |p| p.r))
        .ours("hacommit, 8-core costs", series(&e, |p| p.h))
        .ours("2pc-2pl, 8-core costs", series(&e, |p| p.t))
        .ours("rc on lan3, 8-core costs", series(&e, |p| p.r))
        .paper(
            "paper: HACommit commits in under 1 ms (a bound, §I)",
            Source::PaperText,
            vec![(1.0, 1.0), (64.0, 1.0)],
        )
        .of("hacommit (from the decision)")
        .note("The paper's only absolute value on commit latency is that bound (\"HACommit can commit in less than a millisecond\", §I), drawn over the whole sweep as it does not say at which size; its 5x at 64 operations is chart b's."),
    );
    let at = |v: &[Fig2Point], ops: u32| v.iter().position(|p| p.ops == ops);
    let mut fig_b = Figure::new(
        "hacommit-fig2-b",
        "HACommit Fig. 2: 2PC / HACommit latency ratio, both definitions",
        "operations per transaction",
        "2PC latency / HACommit latency (x)",
    )
    .log_y()
    .ours("commit (paper's definition)", series(&d, |p| p.t / p.h))
    .ours("whole transaction", series(&d, |p| p.tx / p.hx))
    .ours("commit, 8-core costs", series(&e, |p| p.t / p.h))
    .ours("whole transaction, 8-core costs", series(&e, |p| p.tx / p.hx));
    if at(&d, 64).is_some() {
        fig_b = fig_b
            .paper("paper: \"one fifth\" at 64 ops", Source::PaperText, vec![(64.0, 5.0)])
            .of("commit (paper's definition)");
    }
    cx.figure(fig_b);
    cx.say("  (the paper's Fig. 2 gives no values beyond the 5x at 64 operations; chart a draws its one absolute bound, under 1 ms)");

    // Quick mode runs only 1 and 64 operations: the claim on 20 needs the full sweep.
    let (Some(i1), Some(i64)) = (at(&d, 1), at(&d, 64)) else {
        return Ok(());
    };
    let (p1, p64, q1, q64) = (&d[i1], &d[i64], &e[i1], &e[i64]);
    let (x, xt) = (p64.t / p64.h, p64.tx / p64.hx);
    let (x8, xt8) = (q64.t / q64.h, q64.tx / q64.hx);
    cx.say(format!(
        "paper: 2PC / HACommit at 64 ops = 5 (\"one fifth\"); ours = {x:.2} (ratio {:.2}); 8-core costs {x8:.2}",
        x / 5.0
    ));
    let growth = at(&d, 20).map(|i20| (d[i20].h / p1.h, e[i20].h / q1.h));
    if let Some((g, g8)) = growth {
        cx.say(format!(
            "paper: HACommit grows only slightly up to 20 ops; ours {:.3} -> {:.3} ms ({g:.2}x); 8-core costs {g8:.2}x",
            p1.h,
            p1.h * g
        ));
    }
    cx.say(format!(
        "whole transaction (first operation to the end, HACommit's reads and vote replication included): \
         2PC / HACommit at 64 ops = {xt:.2}; 8-core costs {xt8:.2}"
    ));
    cx.claim(
        Claim::numeric(
            PAPER,
            "Fig. 2, §VII-B",
            "2PC / HACommit commit latency at 64 ops (HACommit's from the client's decision: the paper's clock)",
            5.0,
            x,
            "x",
            0.15,
        )
        .because(&format!(
            "set by 2PC's group-committed 0.5 ms fsyncs against HACommit's 0.1 ms RTT plus its CPU queueing on one \
             simulated core (the 5x implies ~0.2 ms fsyncs); 8-core costs give {x8:.1}x"
        )),
    );
    cx.claim(
        Claim::numeric(
            PAPER,
            "Fig. 2, §VII-B",
            "2PC / HACommit latency at 64 ops by the whole-transaction clock (first operation to the end for both)",
            5.0,
            xt,
            "x",
            0.15,
        )
        .because(&format!(
            "by this clock HACommit pays its reads and its last operation's vote replication, which the paper's \
             commit clock leaves out; 8-core costs give {xt8:.2}x"
        )),
    );
    if let Some((g, g8)) = growth {
        cx.claim(by_costs(
            Claim::shape(
                PAPER,
                "Fig. 2, §VII-B",
                "HACommit's commit latency grows only slightly from 1 to 20 ops",
                "\"slightly\"",
                format!("{g:.2}x; 8-core costs {g8:.2}x"),
                g <= 1.5,
                "",
            ),
            g8 <= 1.5,
            "holds with 8-core costs; with one simulated core at 80 clients HACommit is CPU-bound (more messages \
             than unreplicated 2PC), so its commit latency is queueing that grows with load",
            "HACommit's commit latency is CPU queueing that grows with load under both cost models",
        ));
    }
    let (r1, r18) = (p1.t / p1.h, q1.t / q1.h);
    cx.claim(by_costs(
        Claim::shape(
            PAPER,
            "Fig. 2, §VII-B",
            "HACommit's advantage over 2PC grows with operations per transaction",
            "grows",
            format!("2pc/ha {r1:.2} at 1 op -> {x:.2} at 64; 8-core costs {r18:.1} -> {x8:.1}"),
            x > r1,
            "",
        ),
        x8 > r18,
        "holds with 8-core costs; with one simulated core 2PC's commit is flat in ops (fsyncs shared by group \
         commit) while HACommit's grows with CPU queueing",
        "2PC's commit is flat in ops (fsyncs shared by group commit) while HACommit's grows with CPU queueing",
    ));
    let lowest = |v: &[Fig2Point]| v.iter().all(|p| p.h < p.t && p.h < p.r);
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 2, §VII-B",
        "HACommit commits faster than 2PC and RCommit at every size",
        "lower at 1..64 ops",
        format!(
            "lowest at every size: {}; 8-core costs: {}",
            if lowest(&d) { "yes" } else { "no" },
            if lowest(&e) { "yes" } else { "no" }
        ),
        lowest(&d),
        "HACommit's commit is above 2PC's or rc's at some size",
    ));
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 2, §VII-B",
        "2PC and RCommit commit latencies grow with operations per transaction",
        "grow",
        format!("2pc {:.3} -> {:.3} ms, rc {:.3} -> {:.3} ms", p1.t, p64.t, p1.r, p64.r),
        p64.t > p1.t && p64.r > p1.r,
        "2PC's or rc's commit latency does not grow with operations",
    ));
    cx.claim(by_costs(
        Claim::shape(
            PAPER,
            "Fig. 2, §VII-B",
            "2PC's commit latency is above RCommit's",
            "2pc > rc",
            format!(
                "at 64 ops 2pc {:.3} vs rc {:.3} ms; 8-core costs {:.3} vs {:.3}",
                p64.t, p64.r, q64.t, q64.r
            ),
            p64.t > p64.r,
            "",
        ),
        q64.t > q64.r,
        "our rc forces PREPARED and its vote (group-committed 0.5 ms fsyncs) like 2PC, where the paper's RCommit \
         relied on replication; 2PC is above only with 8-core costs",
        "our rc forces PREPARED and its vote (group-committed 0.5 ms fsyncs) like 2PC, where the paper's RCommit \
         relied on replication",
    ));
    Ok(())
}

/// One size of Figs. 6/7: throughput (txn/s) and mean latency (ms) of both protocols.
struct Fig6Point {
    ops: u32,
    ht: f64,
    rt: f64,
    hl: f64,
    rl: f64,
}

/// Figs. 6/7's sweep as a table, with the default costs or the 8-core ones.
fn fig6_sweep(cx: &mut Ctx, lan: &Topology, eight: bool) -> Result<Vec<Fig6Point>> {
    cx.table(&["ops", "ha tps", "rc tps", "ha/rc", "ha ms", "rc ms", "rc/ha", "check"]);
    let mut pts = vec![];
    for ops in cx.sweep(&[2u32, 4, 8, 16, 32, 64]) {
        let (c, c3) = sweep_cfgs(cx, lan, ops, eight)?;
        let ha = cx.run("hacommit", &c)?;
        let rc = cx.run("rc", &c3)?;
        let p = Fig6Point {
            ops,
            ht: ha.report.throughput_tps,
            rt: rc.report.throughput_tps,
            hl: ha.report.latency_ms.mean,
            rl: rc.report.latency_ms.mean,
        };
        cx.row(vec![
            ops.to_string(),
            f(p.ht, 0),
            f(p.rt, 0),
            f(p.ht / p.rt, 2),
            f(p.hl, 3),
            f(p.rl, 3),
            f(p.rl / p.hl, 2),
            format!("{}/{}", ok(&ha), ok(&rc)),
        ]);
        pts.push(p);
    }
    Ok(pts)
}

/// Figs. 6 and 7: throughput and mean latency against operations per transaction, with
/// the default costs and the 8-core ones.
fn fig6(cx: &mut Ctx) -> Result<()> {
    let (lan, costs1, costs8) = lan_and_costs(cx)?;
    cx.say("Figs. 6/7: committed txn/s and mean latency (ms) vs operations per transaction; 80 clients, ycsb 1:1 over 10M keys");
    cx.say(format!("  {costs1}; rc on lan3"));
    let d = fig6_sweep(cx, &lan, false)?;
    cx.say(format!("8-core costs: {costs8}"));
    let e = fig6_sweep(cx, &lan, true)?;
    cx.say("paper: HACommit has the higher throughput and the lower latency in every workload, the gap widening with operations");
    let series = |v: &[Fig6Point], k: fn(&Fig6Point) -> f64| v.iter().map(|p| (p.ops as f64, k(p))).collect();
    // Both protocols, with both costs: `ha` and `rc` pick HACommit's and rc's value.
    let fig = |file: &str, title: &str, y: &str, ha: fn(&Fig6Point) -> f64, rc: fn(&Fig6Point) -> f64| {
        Figure::new(file, title, "operations per transaction", y)
            .log_y()
            .ours("hacommit", series(&d, ha))
            .ours("rc on lan3", series(&d, rc))
            .ours("hacommit, 8-core costs", series(&e, ha))
            .ours("rc on lan3, 8-core costs", series(&e, rc))
    };
    cx.figure(
        fig(
            "hacommit-fig6-a",
            "HACommit Fig. 6: throughput vs operations per transaction",
            "throughput (txn/s)",
            |p| p.ht,
            |p| p.rt,
        )
        .no_paper_values(
            "\"The HACommit implementation has larger transaction throughputs than the RCommit implementation in all workloads\" (§VII-D).",
        ),
    );
    cx.figure(
        fig(
            "hacommit-fig6-b",
            "HACommit Fig. 7: mean transaction latency vs operations per transaction",
            "mean transaction latency (ms)",
            |p| p.hl,
            |p| p.rl,
        )
        .no_paper_values(
            "\"HACommit has lower transaction latencies than RCommit in all workloads. HACommit's advantage on transaction latency increases as the number of operations in a transaction increases\" (§VII-D).",
        ),
    );
    cx.say("  (the paper's Figs. 6/7 give no values, only their order and trend: the charts draw ours alone)");
    let range = |v: &[Fig6Point], k: fn(&Fig6Point) -> f64| {
        let lo = v.iter().map(k).fold(f64::INFINITY, f64::min);
        let hi = v.iter().map(k).fold(f64::NEG_INFINITY, f64::max);
        format!("{lo:.2}-{hi:.2}")
    };
    let partly = "holds with 8-core costs; with one simulated core HACommit's cost is messages (growing with \
                  participants) and rc's its group-committed fsyncs (flat in ops), so rc leads at some sizes";
    let not = "HACommit's cost is messages (growing with participants), rc's its group-committed fsyncs (flat in ops)";
    // HACommit ahead of rc at every size: `ratio` is its advantage at a size (label
    // `label`), `wins` whether it is ahead there.
    let ahead = |at: &str,
                 claim: &str,
                 paper: &str,
                 label: &str,
                 ratio: fn(&Fig6Point) -> f64,
                 wins: fn(&Fig6Point) -> bool| {
        let everywhere = |v: &[Fig6Point]| v.iter().all(wins);
        by_costs(
            Claim::shape(
                PAPER,
                at,
                claim,
                paper,
                format!("{label} {}; 8-core costs {}", range(&d, ratio), range(&e, ratio)),
                everywhere(&d),
                "",
            ),
            everywhere(&e),
            partly,
            not,
        )
    };
    cx.claim(ahead(
        "Fig. 6, §VII-D",
        "HACommit's throughput is above RCommit's in every workload",
        "above at every size",
        "ha/rc",
        |p| p.ht / p.rt,
        |p| p.ht > p.rt,
    ));
    cx.claim(ahead(
        "Fig. 7, §VII-D",
        "HACommit's mean latency is below RCommit's in every workload",
        "below at every size",
        "rc/ha",
        |p| p.rl / p.hl,
        |p| p.hl < p.rl,
    ));
    if let (Some(a), Some(b), Some(a8), Some(b8)) = (d.first(), d.last(), e.first(), e.last()) {
        let widens = |a: &Fig6Point, b: &Fig6Point| b.rl / b.hl > a.rl / a.hl;
        cx.claim(by_costs(
            Claim::shape(
                PAPER,
                "Fig. 7, §VII-D",
                "HACommit's latency advantage over RCommit grows with operations",
                "grows",
                format!(
                    "rc/ha {:.2} at {} ops -> {:.2} at {}; 8-core costs {:.2} -> {:.2}",
                    a.rl / a.hl,
                    a.ops,
                    b.rl / b.hl,
                    b.ops,
                    a8.rl / a8.hl,
                    b8.rl / b8.hl
                ),
                widens(a, b),
                "",
            ),
            widens(a8, b8),
            "holds with 8-core costs only",
            "the gap narrows: rc's cost is its fsyncs (flat in ops), HACommit's its messages (growing); the paper \
             credits rc logging more bytes, which our log device does not charge",
        ));
    }
    Ok(())
}

/// Committed transactions and their mean latency per `bucket` of end time.
fn timeline(o: &SimOutput, bucket: Time, until: Time) -> Vec<(u64, f64)> {
    let n = until.div_ceil(bucket) as usize;
    let mut count = vec![0u64; n];
    let mut lat = vec![0f64; n];
    for t in &o.history.txns {
        if t.outcome != Outcome::Committed {
            continue;
        }
        let Some(end) = t.end else { continue };
        let i = (end / bucket) as usize;
        if i < n {
            count[i] += 1;
            lat[i] += (end - t.start) as f64 / 1e6;
        }
    }
    count
        .into_iter()
        .zip(lat)
        .map(|(c, l)| (c, if c > 0 { l / c as f64 } else { 0.0 }))
        .collect()
}

/// Seconds as a label: no trailing zeros (`15`, `0.75`).
fn sec_label(s: f64) -> String {
    let t = format!("{s:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// §VII-C, Figs. 3/4: five replicas; one fails, then a second (transactions go on),
/// then a third is cut off (no quorum: progress stops); then it comes back. Quick mode
/// runs the same schedule, time-outs included, fifty times faster (1.2 s instead of 60).
fn faults(cx: &mut Ctx) -> Result<()> {
    let topo = lan5();
    // Time scale: every instant and duration of the schedule is `k` times the full one.
    let k = if cx.quick { 0.02 } else { 1.0 };
    let s = |t: f64| sec_label(t * k);
    let mut c = cx.cfg(&topo, &workload(4), 1_000_000, 10, &[])?;
    c.client_dcs = vec![topo.dc("R1")?];
    c.max_time = secs(60.0 * k);
    if cx.quick {
        // The clients' and replicas' time-outs shrink with the schedule, or the first
        // crash's 5 s read time-out would outlast the whole quick run.
        let t = &mut c.timeouts;
        for x in [
            &mut t.read,
            &mut t.status,
            &mut t.vote,
            &mut t.query,
            &mut t.idle,
            &mut t.sweep,
            &mut t.lease,
            &mut t.failover,
        ] {
            *x = (*x as f64 * k) as Time;
        }
    }
    // R5 and R4 crash for good (they restart only when the run heals, and copy their data
    // back from the survivors); R3 is cut off from R1 and R2 for 10 s: with two of five
    // replicas reachable no group has a quorum. A crash would do the same, but a replica
    // that loses its memory while a majority is gone can never rejoin safely (that is
    // what logless means), so the third failure is a partition the run can heal.
    c.faults = format!(
        "crash:node=4,at={t15}s,for={t60}s;crash:node=3,at={t30}s,for={t60}s;\
         partition:a=R3,b=R1,at={t45}s,for={t10}s;partition:a=R3,b=R2,at={t45}s,for={t10}s",
        t15 = s(15.0),
        t30 = s(30.0),
        t45 = s(45.0),
        t60 = s(60.0),
        t10 = s(10.0)
    );
    cx.say("§VII-C, Figs. 3/4: five replicas (lan5: 5 nodes, 0.1 ms apart, every shard on all five),");
    cx.say(format!(
        "  10 clients in R1, ycsb 4 ops 1:1; R5 crashes at {} s, R4 at {} s, R3 unreachable {}-{} s",
        s(15.0),
        s(30.0),
        s(45.0),
        s(55.0)
    ));
    let o = cx.run("hacommit:replicas=5", &c)?;
    cx.table(&["time s", "commits/s", "latency ms"]);
    let width = 5.0 * k;
    let tl = timeline(&o, secs(width), secs(60.0 * k));
    let (mut tput, mut lat) = (vec![], vec![]);
    for (i, &(n, l)) in tl.iter().enumerate() {
        let rate = n as f64 / width;
        cx.row(vec![
            format!("{}-{}", sec_label(i as f64 * width), sec_label((i + 1) as f64 * width)),
            f(rate, 0),
            f(l, 3),
        ]);
        let mid = (i as f64 + 0.5) * width;
        tput.push((mid, rate));
        // No commit in the window: a gap in the latency line, not a bridge over it.
        lat.push((mid, if n > 0 { l } else { f64::NAN }));
    }
    cx.say(format!(
        "check: {} (serializable {}, atomic {}, durable {}); keys locked at the end: {}",
        ok(&o),
        o.report.check.serializable,
        o.report.check.atomic,
        o.report.check.durable,
        o.report.locked_at_end.map_or("-".into(), |n| n.to_string())
    ));
    cx.say("paper: throughput goes on after one and two failures and drops to zero at the third");
    let x = format!(
        "time (s; failures at {}, {}, {}-{})",
        s(15.0),
        s(30.0),
        s(45.0),
        s(55.0)
    );
    // The three failures, marked on both charts.
    let failures = |fg: Figure| {
        fg.mark(15.0 * k, 15.0 * k, " R5 crashes")
            .mark(30.0 * k, 30.0 * k, " R4 crashes")
            .mark(45.0 * k, 55.0 * k, " R3 cut off")
    };
    cx.figure(failures(
        Figure::new(
            "hacommit-faults-a",
            "HACommit Fig. 3: mean latency while five replicas lose one, two, then three",
            &x,
            "mean transaction latency (ms)",
        )
        .ours("hacommit, 5 replicas (buckets with commits)", lat)
        .no_paper_values(&format!(
            "\"At 50 and 100 seconds, the average transaction latency decreases and the throughput increases\" (§VII-C); its failures at 50, 100 and 180 s are ours at {} s, {} s and {} s.",
            s(15.0),
            s(30.0),
            s(45.0)
        )),
    ));
    cx.figure(failures(
        Figure::new(
            "hacommit-faults-b",
            "HACommit Fig. 4: throughput while five replicas lose one, two, then three",
            &x,
            "throughput (commits/s)",
        )
        .ours("hacommit, 5 replicas", tput)
        .paper(
            "paper: zero after the third failure",
            Source::PaperText,
            vec![(45.0 * k, 0.0), (55.0 * k, 0.0)],
        )
        .of("hacommit, 5 replicas")
        .note(&format!(
            "The paper's one value: \"The throughput drops to zero immediately\" when a third replica fails (its 180 s, our {} s; its replica stays dead, our cut heals at {} s, so the zero is drawn over the cut only). Before that its text says only that throughput rises at the first two failures (§VII-C); our copy of the paper has no image of the figure to read more off.",
            s(45.0),
            s(55.0)
        )),
    ));
    cx.say(
        "  (the paper's Figs. 3/4 are described only in words, with failures at 50, 100 and 180 s, but for \
         zero throughput at the third: the charts draw ours and that zero)",
    );

    // Claims over the 5-s buckets: 0-15 s before any failure, 15-20 and 30-35 the
    // buckets of the two crashes, 20-30 and 40-45 the steady states after them, 45-55
    // the partition.
    let rate = |r: std::ops::Range<usize>| {
        let n: u64 = tl[r.clone()].iter().map(|b| b.0).sum();
        n as f64 / (r.len() as f64 * width)
    };
    let mean_lat = |r: std::ops::Range<usize>| {
        let (n, sum) = tl[r]
            .iter()
            .fold((0u64, 0.0), |(n, s), b| (n + b.0, s + b.1 * b.0 as f64));
        if n > 0 {
            sum / n as f64
        } else {
            0.0
        }
    };
    let (before, after1, after2) = (rate(0..3), rate(4..6), rate(8..9));
    let (lat0, lat1, lat2) = (mean_lat(0..3), mean_lat(4..6), mean_lat(8..9));
    let (dip1, dip2) = (rate(3..4), rate(6..7));
    let cut = rate(9..11);
    let goes_on = after1 > 0.0 && after2 > 0.0;
    let dip = dip1.min(dip2);
    let mut c1 = Claim::shape(
        PAPER,
        "Figs. 3/4, §VII-C",
        "transactions go on, unblocked, after one and then two of five replicas fail",
        "no transaction blocked",
        format!(
            "{after1:.0} and {after2:.0} commits/s after; {dip1:.0} and {dip2:.0} in the {} s of each crash \
             ({before:.0} before)",
            s(5.0)
        ),
        goes_on,
        "transactions stop after a failure",
    );
    if goes_on && dip < 0.5 * before {
        c1 = c1.with_status(
            Status::Partly,
            "each leader crash stalls R1's clients until their read, re-sent after the 1 s fail-over time, \
             reaches the group's new leader (a 1 s view change); the paper reads from a quorum, not a leader, \
             and shows no dip",
        );
    }
    cx.claim(c1);
    let up1 = after1 > before && lat1 < lat0;
    let up2 = after2 > before && lat2 < lat0;
    cx.claim(Claim::shape(
        PAPER,
        "Figs. 3/4, §VII-C",
        "after each failure throughput rises and latency falls (fewer replicas to read)",
        "rises / falls",
        format!(
            "{:+.0}% / {:+.0}% after the first, {:+.0}% / {:+.0}% after the second",
            100.0 * (after1 / before - 1.0),
            100.0 * (lat1 / lat0 - 1.0),
            100.0 * (after2 / before - 1.0),
            100.0 * (lat2 / lat0 - 1.0)
        ),
        up1 && up2,
        "our clients read from the group leader, not a quorum, so a lost replica removes no read work",
    ));
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 4, §VII-C",
        "throughput drops to zero when a third of five replicas fails (no quorum)",
        "0 commits/s",
        format!("{cut:.1} commits/s while R3 is cut off ({before:.0} before)"),
        cut < 0.01 * before,
        "transactions still commit without a quorum",
    ));
    Ok(())
}

/// §VII-C, Fig. 5: clients crash with transactions in flight; recovery proposers finish
/// them (abort if no decision was accepted anywhere, commit if one was) and nothing stays
/// locked.
fn fig5(cx: &mut Ctx) -> Result<()> {
    let lan = Topology::preset("lan").expect("preset");
    let mut c = cx.cfg(&lan, &workload(4), 40_000, 16, &[])?;
    // Quick mode runs a tenth of the transactions: the crashes come ten times sooner.
    let (at, step) = if cx.quick { (50_000, 370) } else { (500_000, 3_700) };
    c.faults = (0..8)
        .map(|i| format!("client-crash:client={i},at={}us", at + step * i))
        .collect::<Vec<_>>()
        .join(";");
    let (from, to) = if cx.quick { ("0.05", "0.053") } else { ("0.5", "0.53") };
    cx.say(format!(
        "§VII-C, Fig. 5: lan, 16 clients, ycsb 4 ops 1:1; clients 0-7 crash between {from} s and {to} s"
    ));
    cx.say(format!(
        "  (idle timeout {} s before a participant becomes a recovery proposer)",
        c.timeouts.idle / 1_000_000_000
    ));
    let o = cx.run("hacommit", &c)?;
    let installed: std::collections::HashSet<_> = o
        .history
        .replicas
        .iter()
        .flat_map(|r| r.keys.values().flat_map(|k| k.versions.iter().map(|v| v.txn)))
        .collect();
    let unknown: Vec<_> = o
        .history
        .txns
        .iter()
        .filter(|t| t.outcome == Outcome::Unknown)
        .collect();
    let with_writes = unknown.iter().filter(|t| !t.writes.is_empty()).count();
    let committed = unknown.iter().filter(|t| installed.contains(&t.id)).count();
    let aborted = with_writes - committed;
    cx.say(format!(
        "in flight at the crashes: {} ({} with writes): {} committed (their COMMIT had reached the replicas), {} aborted by recovery proposers",
        unknown.len(),
        with_writes,
        committed,
        aborted
    ));
    let staged = "hacommit::tests::client_crash_recovery_aborts_the_unaccepted_and_commits_the_accepted";
    cx.say(format!(
        "  (a simulated client sends its phase 2 to every replica in one step, so a crash never splits it; the\n   commit-if-accepted-anywhere path of Fig. 5 is staged exactly in the unit test\n   {staged})"
    ));
    cx.say(format!(
        "keys locked at the end: {}; check: {} (serializable {}, atomic {}, durable {})",
        o.report.locked_at_end.map_or("-".into(), |n| n.to_string()),
        ok(&o),
        o.report.check.serializable,
        o.report.check.atomic,
        o.report.check.durable
    ));
    if o.report.locked_at_end != Some(0) {
        cx.failed = true;
        eprintln!("hacommit-fig5: locks left held at the end");
    }
    cx.say("paper: the recovering replicas abort the transactions no replica accepted a decision for and commit the one accepted at three replicas");
    cx.say("  (Fig. 5 is a diagram of one run's recovery messages, not a chart: nothing is drawn)");
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 5, §VII-C",
        "after a client crash, participants abort the transactions no replica accepted a decision for; none stays blocked",
        "9 aborted, none blocked",
        format!(
            "{aborted} of {with_writes} with writes aborted, {committed} committed; keys locked at the end: {}",
            o.report.locked_at_end.map_or("-".into(), |n| n.to_string())
        ),
        !unknown.is_empty() && o.report.locked_at_end == Some(0) && o.report.check.ok(),
        "transactions left in flight or locks held after the client crashes",
    ));
    cx.claim(
        Claim::shape(
            PAPER,
            "Fig. 5, §VII-C",
            "a transaction whose commit was accepted at some replicas is committed by recovery",
            "committed (accepted at 3 of 5)",
            format!("not exercised: {committed} committed whose COMMIT reached every replica"),
            false,
            "",
        )
        .with_status(
            Status::NotApplicable,
            &format!("a simulated client sends phase 2 to every replica in one step, so a crash never splits it; staged in the unit test {staged}"),
        ),
    );
    Ok(())
}
