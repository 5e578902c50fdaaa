//! Shards and the read/write mix: `rc-fig8` (commit latency against shards per DC) and
//! `rc-fig9` (latency and commits against the share of writes).

use super::common::{rc_and_replog, span, PAPER, PAPER_WORKLOAD, RC5};
use crate::experiments::{f, ok, Claim, Ctx, Figure, Source};
use anyhow::Result;
use meridian_core::Topology;

/// Fig. 8: the data split over 1, 2 or 3 shards per DC (one server per shard), every
/// DC with clients for rc and the leader DCs for replog (leaders V, V/O, V/O/I: the
/// default placement cut to the shards there are).
pub(super) fn fig8(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    cx.say("Fig. 8: mean commit latency (ms) vs shards per DC; 2500 txns, ycsb 5 ops 1:1, 3000 items, 10 txn/s per DC");
    cx.say("rc: clients in all five DCs; replog: leaders V, V/O, V/O/I (first 1..3 of the default), clients in the leader DCs");
    cx.table(&[
        "shards",
        "leaders",
        "rc",
        "replog",
        "replog / rc",
        "rc commits",
        "rl commits",
        "check",
    ]);
    // Per point: (shards, rc ms, replog ms).
    let mut pts: Vec<(f64, f64, f64)> = vec![];
    for k in cx.sweep(&[1u32, 2, 3]) {
        let mut topo = rc5.clone();
        topo.shards = k;
        topo.nodes_per_dc = k;
        let leaders = ["V", "O", "I"][..k as usize].join("/");
        let (rc, rl) = rc_and_replog(cx, &topo, PAPER_WORKLOAD, &RC5, &leaders)?;
        let (a, b) = (rc.report.commit_latency_ms.mean, rl.report.commit_latency_ms.mean);
        cx.row(vec![
            k.to_string(),
            leaders,
            f(a, 1),
            f(b, 1),
            f(b / a, 2),
            rc.report.committed.to_string(),
            rl.report.committed.to_string(),
            format!("{}/{}", ok(&rc), ok(&rl)),
        ]);
        pts.push((k as f64, a, b));
    }
    let (first, last) = (pts[0], pts[pts.len() - 1]);
    let rc_cause = "our rc's commit is one majority round from the client's DC plus intra-DC 2PC; \
                    the paper's prototype adds ~6 ms of per-DC processing (see Fig. 3)";
    for (claim, paper, ours) in [
        ("rc commit latency, 1 shard", 133.0, first.1),
        ("rc commit latency, 3 shards", 138.0, last.1),
    ] {
        cx.claim(Claim::numeric(PAPER, "Fig. 8", claim, paper, ours, "ms", 0.15).because(rc_cause));
    }
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 8",
        "rc: more shards change its commit latency only slightly (here: within 1.15x)",
        "133 -> 138 ms",
        format!("{:.1} -> {:.1} ms", first.1, last.1),
        last.1 <= 1.15 * first.1 && first.1 <= 1.15 * last.1,
        "",
    ));
    cx.claim(
        Claim::numeric(
            PAPER,
            "Fig. 8",
            "replog: commit latency with 1 shard / with 3 shards ('almost half')",
            0.5,
            first.2 / last.2,
            "x",
            0.15,
        )
        .because(
            "replog's one-shard commit still replicates through a WAN majority of its leader's group; \
         three shards add the 2PC among leaders, which costs less here than half",
        ),
    );
    cx.claim(
        Claim::numeric(
            PAPER,
            "Fig. 8",
            "1 shard: rc's commit latency below replog's (1 - rc/replog)",
            28.8,
            100.0 * (1.0 - first.1 / first.2),
            "%",
            0.15,
        )
        .because(
            "with one shard replog's commit still replicates PREPARE and then COMMIT through its leader's \
         group, two WAN majority rounds against rc's one; the paper's rc paid more per-DC overhead (Fig. 3)",
        ),
    );
    cx.say(
        "The paper states only the values quoted in the claims; Fig. 8's other points are drawn from our runs alone.",
    );
    cx.figure(
        Figure::new(
            "rc-fig8",
            "Fig. 8: commit latency vs shards per DC",
            "shards per DC",
            "mean commit latency (ms)",
        )
        .ours("rc", pts.iter().map(|p| (p.0, p.1)).collect())
        .ours("replog", pts.iter().map(|p| (p.0, p.2)).collect())
        .paper("paper rc", Source::PaperText, vec![(1.0, 133.0), (3.0, 138.0)])
        .of("rc"),
    );
    Ok(())
}

/// Fig. 9: the write:read ratio of the paper's 5-operation transactions from 1:9 to
/// 9:1 (`ycsb:reads=` the read fraction per operation).
pub(super) fn fig9(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    cx.say("Fig. 9: mean commit and transaction latency (ms) and commits of 2500 vs write:read ratio; ycsb 5 ops, 3000 items, 10 txn/s per DC, replog V/O/I");
    cx.table(&[
        "w:r",
        "rc commit",
        "rl commit",
        "rc txn",
        "rl txn",
        "rc commits",
        "rl commits",
        "check",
    ]);
    // Per point: (writes share, rc commit, rl commit, rc txn, rl txn, rc commits, rl commits).
    let mut pts: Vec<[f64; 7]> = vec![];
    let mut labels: Vec<&str> = vec![];
    for (label, w) in cx.sweep(&[("1:9", 1u32), ("3:7", 3), ("1:1", 5), ("7:3", 7), ("9:1", 9)]) {
        let wl = format!("ycsb:ops=5,reads={},keys=3000", (10 - w) as f64 / 10.0);
        let (rc, rl) = rc_and_replog(cx, &rc5, &wl, &RC5, "V/O/I")?;
        let p = [
            w as f64 / 10.0,
            rc.report.commit_latency_ms.mean,
            rl.report.commit_latency_ms.mean,
            rc.report.latency_ms.mean,
            rl.report.latency_ms.mean,
            rc.report.committed as f64,
            rl.report.committed as f64,
        ];
        let mut row = vec![label.to_string()];
        row.extend(p[1..5].iter().map(|x| f(*x, 1)));
        row.push(f(p[5], 0));
        row.push(f(p[6], 0));
        row.push(format!("{}/{}", ok(&rc), ok(&rl)));
        cx.row(row);
        pts.push(p);
        labels.push(label);
    }
    let (ri, wi) = (pts[0], pts[pts.len() - 1]); // read-intensive 1:9, write-intensive 9:1
    let within = |i: usize| {
        let (lo, hi) = span(pts.iter().map(|p| p[i]));
        (lo, hi, hi <= 1.15 * lo)
    };
    for (i, name) in [(1, "rc"), (2, "replog")] {
        let (lo, hi, holds) = within(i);
        cx.claim(Claim::shape(
            PAPER,
            "Fig. 9",
            &format!("{name}: the write:read ratio moves commit latency only slightly (here: within 1.15x)"),
            "slight effect",
            format!("{lo:.1}-{hi:.1} ms"),
            holds,
            "",
        ));
    }
    let (d_rc, d_rl) = (ri[3] - wi[3], ri[4] - wi[4]);
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 9",
        "more reads lengthen rc's transactions more than replog's (majority reads vs leader reads)",
        "rc impacted more",
        format!("1:9 minus 9:1 transaction latency: rc {d_rc:.1} ms, replog {d_rl:.1} ms"),
        d_rc > d_rl,
        "replog's reads go to the nearest leader of each shard, which for clients in O and I is often \
         farther than rc's nearest majority",
    ));
    let drop = |i: usize| 100.0 * (1.0 - wi[i] / ri[i]);
    let (drop_rc, drop_rl) = (drop(5), drop(6));
    let worst = pts
        .iter()
        .flat_map(|p| [p[5], p[6]])
        .map(|c| 100.0 * (1.0 - c / cx.n(2500) as f64))
        .fold(0.0, f64::max);
    let few = format!(
        "at 3000 items and 10 txn/s per DC at most {worst:.1}% of transactions abort in any of our runs, \
         so the ratio has few commits to move"
    );
    let few = few.as_str();
    cx.claim(
        Claim::numeric(
            PAPER,
            "Fig. 9",
            "rc: commits lost from 1:9 to 9:1",
            6.2,
            drop_rc,
            "%",
            0.15,
        )
        .because(few),
    );
    cx.claim(
        Claim::numeric(
            PAPER,
            "Fig. 9",
            "replog: commits lost from 1:9 to 9:1",
            16.2,
            drop_rl,
            "%",
            0.15,
        )
        .because(few),
    );
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 9",
        "write-heavy work costs replog more commits than rc",
        "16.2% vs 6.2%",
        format!("{drop_rl:.1}% vs {drop_rc:.1}%"),
        drop_rl > drop_rc,
        few,
    ));
    let series = |i: usize| pts.iter().map(|p| (p[0] * 100.0, p[i])).collect::<Vec<_>>();
    cx.say(
        "The paper states only the commit losses quoted in the claims; its latencies are drawn from our runs alone.",
    );
    cx.figure(
        Figure::new(
            "rc-fig9-a",
            "Fig. 9: commit and transaction latency vs share of writes",
            "writes (% of operations)",
            "mean latency (ms)",
        )
        .ours("rc commit", series(1))
        .ours("replog commit", series(2))
        .ours("rc transaction", series(3))
        .ours("replog transaction", series(4))
        .no_paper_values(
            "\"a slight effect on commit latency with high write to read ratio for both Replicated Commit and Replicated Log\" (§5, Fig. 9).",
        ),
    );
    cx.figure(
        Figure::new(
            "rc-fig9-b",
            "Fig. 9: transactions committed vs share of writes",
            "writes (% of operations)",
            "committed (of 2500)",
        )
        .ours("rc", series(5))
        .ours("replog", series(6))
        .no_paper_values(
            "\"The number of commits is affected by workloads with more writes than reads\": from 10% to 90% writes, 16.2% fewer for replog and 6.2% fewer for rc (§5, Fig. 9; relative only, the claims compare them).",
        ),
    );
    Ok(())
}
