//! `meridian compare --experiment rc-figN`: replicated-commit.md §5 reproduced side by
//! side with the paper. Every run is a full simulation that ends with the checker; a
//! failed check makes the experiment exit 3.
//!
//! The paper's setup (§5): the `rc5` DCs (Table 1), 3 shards on 3 servers per DC, YCSB
//! transactions of 5 operations with reads:writes 1:1 on 3000 items, 2500 transactions,
//! 5 traffic generators per DC at 50 operations per second per DC (10 transactions/s).
//! Replicated Log clients live only in DCs that hold a leader (§5); `replog` uses the
//! leader placement the paper names for each figure (`V/O/I` by default).

use super::{f, fo, ok, Claim, Experiment, Figure, Source};
use anyhow::Result;
use meridian_core::{secs, Outcome, Time, Topology, TxnRecord};
use meridian_protocols::rc::crossover_reads;
use meridian_sim::{SimConfig, SimOutput};

const PAPER_WORKLOAD: &str = "ycsb:ops=5,reads=0.5,keys=3000";

/// The DCs of `rc5` in Table 1's order.
const RC5: [&str; 5] = ["C", "V", "O", "I", "S"];

use super::Ctx;

/// The paper's run on `topo`: 2500 transactions of `workload` at the paper's load for
/// every DC of `topo` (5 generators and 10 transactions/s per DC), issued from
/// `client_dcs` (names; empty: every DC).
fn paper_cfg(cx: &Ctx, topo: &Topology, workload: &str, client_dcs: &[&str]) -> Result<SimConfig> {
    let mut c = cx.cfg(topo, workload, 2500, 0, client_dcs)?;
    let dcs = topo.num_dcs();
    c.clients = 5 * dcs as u32;
    c.rate = Some(10.0 * dcs as f64);
    Ok(c)
}

/// The committed transactions of `o` with their commit request and end times (those
/// without either left out).
fn committed(o: &SimOutput) -> impl Iterator<Item = (&TxnRecord, Time, Time)> {
    o.history
        .txns
        .iter()
        .filter(|t| t.outcome == Outcome::Committed)
        .filter_map(|t| Some((t, t.commit_start?, t.end?)))
}

/// rc with clients in `rc_dcs` and replog with `leaders` and clients in the leader DCs,
/// both at the paper's load on `topo` ([`paper_cfg`]). Returns (rc, replog).
fn rc_and_replog(
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

fn distinct(leaders: &str) -> Vec<&str> {
    let mut v: Vec<&str> = vec![];
    for d in leaders.split('/') {
        if !v.contains(&d) {
            v.push(d);
        }
    }
    v
}

/// This paper's experiments, as `--experiment list` shows them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "rc-fig3",
        about: "replicated-commit.md Fig. 3: commit latency for DC sets C .. CVOIS, rc vs replog",
        run: fig3,
        sim: true,
    },
    Experiment {
        name: "rc-fig4",
        about: "replicated-commit.md Fig. 4: replog leader placements C/C/C, C/V/O, V/O/I, S/S/S vs rc",
        run: fig4,
        sim: true,
    },
    Experiment {
        name: "rc-fig5",
        about: "replicated-commit.md Fig. 5 and §4.3: transaction latency vs operations per transaction, crossover",
        run: fig5,
        sim: true,
    },
    Experiment {
        name: "rc-fig6",
        about: "replicated-commit.md Fig. 6: throughput (committed ops/s) vs number of clients",
        run: fig6,
        sim: true,
    },
    Experiment {
        name: "rc-fig7",
        about: "replicated-commit.md Fig. 7: contention, commits out of 2500 for 150..6000 items",
        run: fig7,
        sim: true,
    },
    Experiment {
        name: "rc-fig8",
        about: "replicated-commit.md Fig. 8: commit latency vs number of shards (1..3), rc vs replog",
        run: fig8,
        sim: true,
    },
    Experiment {
        name: "rc-fig9",
        about: "replicated-commit.md Fig. 9: commit and transaction latency, commits, vs write:read ratio",
        run: fig9,
        sim: true,
    },
    Experiment {
        name: "rc-fig10",
        about: "replicated-commit.md Fig. 10: DC C goes down for a minute; commit latency of C's clients",
        run: fig10,
        sim: true,
    },
    Experiment {
        name: "rc-fig11",
        about: "replicated-commit.md Fig. 11: read latency against commit latency, clients in V and I",
        run: fig11,
        sim: true,
    },
];

/// The paper's file, as claims name it.
const PAPER: &str = "replicated-commit.md";

fn fig3(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    cx.say("Fig. 3: mean commit latency (ms) by DC set; 2500 txns, ycsb 5 ops 1:1, 3000 items, 10 txn/s per DC");
    cx.table(&[
        "DCs", "leaders", "paper rc", "paper rl", "rc", "replog", "paper x", "ours x", "ratio", "check",
    ]);
    // (DC set, replog leaders, paper rc ms, paper replog ms, paper replog/rc ratio)
    type Row<'a> = (&'a str, &'a str, Option<f64>, Option<f64>, Option<f64>);
    let rows: Vec<Row> = cx.sweep(&[
        ("C", "C/C/C", Some(5.8), Some(14.8), None),
        ("CV", "C/C/V", Some(90.0), Some(267.0), None),
        ("CVO", "C/V/O", None, None, None),
        ("CVOI", "V/O/I", None, None, Some(3.41)),
        ("CVOIS", "V/O/I", None, None, Some(2.89)),
    ]);
    // Per DC set: (set, rc ms, replog ms).
    let mut got: Vec<(&str, f64, f64)> = vec![];
    let (mut paper_rc, mut paper_rl, mut paper_ratio) = (vec![], vec![], vec![]);
    // Why the one-DC and the intercontinental rows differ from the paper (EVALUATION.md).
    let one_dc = "the paper's 5.8/14.8 ms are the EC2 prototype's per-message processing and intra-DC hops; \
                  the simulator charges 0.25 ms per intra-DC hop and 10 us per message";
    let far = "our rc is faster than the paper's: a coordinator's accept vote carries the transaction, so a DC \
               may prepare from a peer's vote before the client's own request arrives; the paper's rc pays ~6 ms \
               per-DC overhead on top";
    // Claims follow the table (live output prints a table once the next block starts).
    let mut claims = vec![];
    for (i, (set, leaders, prc, prl, px)) in rows.iter().copied().enumerate() {
        let names: Vec<String> = set.chars().map(|c| c.to_string()).collect();
        let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        let topo = rc5.subset(&names)?;
        let (rc, rl) = rc_and_replog(cx, &topo, PAPER_WORKLOAD, &names, leaders)?;
        let (a, b) = (rc.report.commit_latency_ms.mean, rl.report.commit_latency_ms.mean);
        let paper_x = px.or(prl.zip(prc).map(|(l, r)| l / r));
        let ours_x = b / a;
        if let Some(x) = paper_x {
            paper_ratio.push((i as f64, x));
        }
        cx.row(vec![
            set.to_string(),
            leaders.to_string(),
            fmt_opt(prc),
            fmt_opt(prl),
            f(a, 1),
            f(b, 1),
            fo(paper_x, 2),
            f(ours_x, 2),
            fo(paper_x.map(|x| ours_x / x), 2),
            format!("{}/{}", ok(&rc), ok(&rl)),
        ]);
        got.push((set, a, b));
        if let Some(p) = prc {
            paper_rc.push((i as f64, p));
        }
        if let Some(p) = prl {
            paper_rl.push((i as f64, p));
        }
        let cause = if set == "C" { one_dc } else { "" };
        if let (Some(p), Some(q)) = (prc, prl) {
            claims.push(
                Claim::numeric(
                    PAPER,
                    "Fig. 3",
                    &format!("DC set {set}: rc mean commit latency"),
                    p,
                    a,
                    "ms",
                    0.15,
                )
                .because(cause),
            );
            claims.push(
                Claim::numeric(
                    PAPER,
                    "Fig. 3",
                    &format!("DC set {set}: replog ({leaders}) mean commit latency"),
                    q,
                    b,
                    "ms",
                    0.15,
                )
                .because(cause),
            );
        }
        if let Some(x) = px {
            claims.push(
                Claim::numeric(
                    PAPER,
                    "Fig. 3",
                    &format!(
                        "DC set {set}: replog / rc commit latency (\"{:.0}% higher\")",
                        100.0 * (x - 1.0)
                    ),
                    x,
                    ours_x,
                    "x",
                    0.15,
                )
                .because(far),
            );
        }
    }
    cx.say("x = replog / rc commit latency; ratio = ours x / paper x. CVOI and CVOIS: the paper gives only \"241% and 189% higher\".");
    for c in claims {
        cx.claim(c);
    }
    let by = |s: &str| got.iter().find(|g| g.0 == s).copied();
    if let (Some(cv), Some(cvo)) = (by("CV"), by("CVO")) {
        cx.claim(Claim::shape(
            PAPER,
            "Fig. 3",
            "CVO below CV for both protocols (a closer majority)",
            "yes",
            format!("rc {:.1} < {:.1}, replog {:.1} < {:.1} ms", cvo.1, cv.1, cvo.2, cv.2),
            cvo.1 < cv.1 && cvo.2 < cv.2,
            "",
        ));
    }
    let multi: Vec<_> = got.iter().filter(|g| g.0.len() > 1).collect();
    if !multi.is_empty() {
        let worst = multi.iter().map(|g| g.2 / g.1).fold(f64::INFINITY, f64::min);
        cx.claim(Claim::shape(
            PAPER,
            "Fig. 3",
            "rc below replog at every multi-DC set",
            "yes",
            format!("smallest replog/rc {worst:.2}"),
            worst > 1.0,
            "",
        ));
    }
    let cats: Vec<&str> = got.iter().map(|g| g.0).collect();
    cx.figure(
        Figure::new(
            "rc-fig3",
            "Fig. 3: commit latency by DC set",
            "DC set",
            "mean commit latency (ms)",
        )
        .categories(&cats)
        .log_y()
        .ours("rc", got.iter().enumerate().map(|(i, g)| (i as f64, g.1)).collect())
        .ours("replog", got.iter().enumerate().map(|(i, g)| (i as f64, g.2)).collect())
        .paper("paper rc", Source::PaperText, paper_rc)
        .paper("paper replog", Source::PaperText, paper_rl),
    );
    // The paper states CVOI's and CVOIS's gap only as a ratio ("241% and 189% higher").
    cx.figure(
        Figure::new(
            "rc-fig3-ratio",
            "Fig. 3: replog / rc commit latency by DC set",
            "DC set",
            "replog / rc commit latency (x)",
        )
        .categories(&cats)
        .ours(
            "replog / rc",
            got.iter().enumerate().map(|(i, g)| (i as f64, g.2 / g.1)).collect(),
        )
        .paper("paper replog / rc", Source::PaperText, paper_ratio),
    );
    Ok(())
}

fn fmt_opt(x: Option<f64>) -> String {
    fo(x, 1)
}

fn fig4(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    let all = RC5;
    cx.say("Fig. 4: mean commit latency (ms) by replog leader placement, rc5, paper workload");
    let c_rc = paper_cfg(cx, &rc5, PAPER_WORKLOAD, &all)?;
    let rc = cx.run("rc", &c_rc)?;
    let rc_ms = rc.report.commit_latency_ms.mean;
    cx.table(&["leaders", "paper", "measured", "ratio", "check"]);
    cx.row(vec![
        "rc".into(),
        "< all".into(),
        f(rc_ms, 1),
        "-".into(),
        ok(&rc).into(),
    ]);
    let placements = cx.sweep(&[
        ("C/C/C", Some(206.0)),
        ("C/V/O", None),
        ("V/O/I", Some(387.0)),
        ("S/S/S", None),
    ]);
    let mut got: Vec<(&str, f64)> = vec![];
    let mut paper_pts = vec![];
    // Claims follow the table (live output prints a table once the next block starts).
    let mut claims = vec![];
    for (i, (leaders, paper)) in placements.iter().copied().enumerate() {
        let c = paper_cfg(cx, &rc5, PAPER_WORKLOAD, &distinct(leaders))?;
        let rl = cx.run(&format!("replog:leaders={leaders}"), &c)?;
        let m = rl.report.commit_latency_ms.mean;
        cx.row(vec![
            leaders.to_string(),
            fmt_opt(paper),
            f(m, 1),
            fo(paper.map(|p| m / p), 2),
            ok(&rl).into(),
        ]);
        got.push((leaders, m));
        if let Some(p) = paper {
            paper_pts.push((i as f64, p));
            claims.push(Claim::numeric(
                PAPER,
                "Fig. 4",
                &format!("replog {leaders} mean commit latency"),
                p,
                m,
                "ms",
                0.15,
            ));
        }
    }
    for c in claims {
        cx.claim(c);
    }
    let lowest = got.iter().map(|g| g.1).fold(f64::INFINITY, f64::min);
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 4",
        "rc below every replog placement, even C/C/C",
        "yes",
        format!("rc {rc_ms:.1} ms, best placement {lowest:.1} ms"),
        rc_ms < lowest,
        "",
    ));
    let by = |s: &str| got.iter().find(|g| g.0 == s).map(|g| g.1);
    if let Some(ccc) = by("C/C/C") {
        cx.claim(Claim::shape(
            PAPER,
            "Fig. 4",
            "C/C/C is the best replog placement",
            "yes",
            format!("C/C/C {ccc:.1} ms, lowest {lowest:.1} ms"),
            ccc <= lowest,
            "",
        ));
        if let Some(sss) = by("S/S/S") {
            cx.claim(Claim::shape(
                PAPER,
                "Fig. 4",
                "S/S/S much higher than C/C/C (a farther majority), here: above 1.5x",
                "yes",
                format!("{sss:.1} vs {ccc:.1} ms ({:.2}x)", sss / ccc),
                sss > 1.5 * ccc,
                "",
            ));
        }
    }
    let cats: Vec<&str> = got.iter().map(|g| g.0).collect();
    cx.figure(
        Figure::new(
            "rc-fig4",
            "Fig. 4: commit latency by replog leader placement (rc5)",
            "replog leader placement (shards X/Y/Z)",
            "mean commit latency (ms)",
        )
        .categories(&cats)
        .ours("replog", got.iter().enumerate().map(|(i, g)| (i as f64, g.1)).collect())
        .ours(
            "rc (no leaders; same run at every x)",
            (0..got.len()).map(|i| (i as f64, rc_ms)).collect(),
        )
        .paper("paper replog", Source::PaperText, paper_pts),
    );
    Ok(())
}

/// Mean read latency (ms per read) and mean commit latency (ms) of committed transactions.
fn read_and_commit(o: &SimOutput) -> (f64, f64) {
    let (mut r, mut n, mut c, mut k) = (0.0, 0usize, 0.0, 0usize);
    for (t, cs, end) in committed(o) {
        if !t.reads.is_empty() {
            r += (cs - t.start) as f64 / 1e6;
            n += t.reads.len();
        }
        c += (end - cs) as f64 / 1e6;
        k += 1;
    }
    (r / n.max(1) as f64, c / k.max(1) as f64)
}

/// (min, max) of `v`.
fn span(v: impl Iterator<Item = f64>) -> (f64, f64) {
    v.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)))
}

fn fig5(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    cx.say("Fig. 5: transaction latency (ms) vs operations per transaction; clients in V, 50000 items, replog V/O/I");
    cx.table(&["ops", "rc txn", "replog txn", "rc read", "rl read", "check"]);
    let mut prev: Option<(u32, f64)> = None;
    let mut crossing = None;
    let mut first = None;
    // Per point: (ops, rc txn, replog txn, rc read, rc commit, replog read, replog commit).
    let mut pts: Vec<(f64, f64, f64, f64, f64, f64, f64)> = vec![];
    let sweep = cx.sweep(&[5u32, 10, 15, 20, 25, 30, 35, 40, 45]);
    for &ops in &sweep {
        let w = format!("ycsb:ops={ops},reads=0.5,keys=50000");
        let c = cx.cfg(&rc5, &w, 300, 5, &["V"])?;
        let rc = cx.run("rc", &c)?;
        let rl = cx.run("replog:leaders=V/O/I", &c)?;
        let (a, b) = (rc.report.latency_ms.mean, rl.report.latency_ms.mean);
        let (rra, rca) = read_and_commit(&rc);
        let (rrb, rcb) = read_and_commit(&rl);
        if first.is_none() {
            first = Some((rra, rca, rrb, rcb));
        }
        cx.row(vec![
            ops.to_string(),
            f(a, 1),
            f(b, 1),
            f(rra, 1),
            f(rrb, 1),
            format!("{}/{}", ok(&rc), ok(&rl)),
        ]);
        pts.push((ops as f64, a, b, rra, rca, rrb, rcb));
        let d = b - a;
        if let Some((po, pd)) = prev {
            if crossing.is_none() && pd > 0.0 && d <= 0.0 {
                crossing = Some(po as f64 + (ops - po) as f64 * pd / (pd - d));
            }
        }
        prev = Some((ops, d));
    }
    let (tr_rc, tc_rc, tr_rl, tc_rl) = first.expect("ran");
    let formula = 2.0 * crossover_reads(tr_rc, tc_rc, tr_rl, tc_rl);
    let (lo, hi) = (sweep[0], sweep[sweep.len() - 1]);
    cx.say(format!(
        "crossover (ops): paper 25 (2.5 x N reads, N=5, half the ops are reads); measured {}; formula (§4.3, fed the measured 5-op read/commit latencies; not a measurement): {:.1}",
        crossing.map_or(format!("none in {lo}..{hi}"), |x| format!("{x:.1}")),
        formula
    ));
    cx.say("The paper gives Fig. 5's latencies only as a figure (no values in its text): the chart draws ours alone; the paper's crossing at 25 ops is a claim below.");
    let cause = format!(
        "the paper's 2.5 N assumes equal RTTs; from V reads take {tr_rc:.0} ms (rc, nearest majority) \
         and {tr_rl:.0} ms (replog, leaders V/O/I), so the break-even comes earlier"
    );
    match crossing {
        Some(x) => cx.claim(
            Claim::numeric(
                PAPER,
                "Fig. 5, §4.3",
                "transaction latencies cross at 2.5 N reads = 25 ops (measured crossing of the sweep)",
                25.0,
                x,
                "ops",
                0.15,
            )
            .because(&cause),
        ),
        None => cx.claim(Claim::shape(
            PAPER,
            "Fig. 5, §4.3",
            "transaction latencies cross at 2.5 N reads = 25 ops (measured crossing of the sweep)",
            "25 ops",
            format!("no crossing in {lo}..{hi} ops"),
            false,
            "replog's transaction latency stays above rc's over the whole sweep",
        )),
    }
    let (rr, rl) = (span(pts.iter().map(|p| p.3)), span(pts.iter().map(|p| p.5)));
    let (cr, cl) = (span(pts.iter().map(|p| p.4)), span(pts.iter().map(|p| p.6)));
    let flat = |(lo, hi): (f64, f64)| hi <= 1.1 * lo;
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 5",
        "read and commit latency stay the same as ops grow (here: max within 1.1x of min)",
        "yes",
        format!(
            "read rc {:.1}-{:.1}, replog {:.1}-{:.1}; commit rc {:.1}-{:.1}, replog {:.1}-{:.1} ms",
            rr.0, rr.1, rl.0, rl.1, cr.0, cr.1, cl.0, cl.1
        ),
        flat(rr) && flat(rl) && flat(cr) && flat(cl),
        "",
    ));
    if let Some(last) = pts.last() {
        let gap = last.1 - last.2;
        let widest = pts.iter().map(|p| p.1 - p.2).fold(f64::NEG_INFINITY, f64::max);
        cx.claim(Claim::shape(
            PAPER,
            "Fig. 5",
            "past the crossing the gap (rc - replog) grows with ops",
            "yes",
            format!("rc - replog {gap:.1} ms at {hi} ops, the widest of the sweep"),
            crossing.is_some() && gap > 0.0 && gap >= widest,
            "no crossing in the sweep",
        ));
    }
    cx.figure(
        Figure::new(
            "rc-fig5",
            "Fig. 5: transaction latency vs operations per transaction (clients in V)",
            "operations per transaction",
            "mean transaction latency (ms)",
        )
        .ours("rc", pts.iter().map(|p| (p.0, p.1)).collect())
        .ours("replog V/O/I", pts.iter().map(|p| (p.0, p.2)).collect()),
    );
    Ok(())
}

fn fig6(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    let all = RC5;
    // The paper's peaks come from its c1.medium servers saturating; with the default
    // 10 us per message the simulated servers never saturate below 360 clients, so the
    // experiment charges 400 us per message unless --cpu-msg says otherwise.
    let per_msg = if cx.args.cpu_msg == "10us" {
        meridian_core::time::parse_duration("400us").map_err(anyhow::Error::msg)?
    } else {
        cx.cfg(&rc5, "ycsb", 1, 1, &[])?.cpu.per_msg
    };
    cx.say(format!(
        "Fig. 6: throughput (committed ops/s) vs clients; closed loop, 50000 items, replog V/O/I; {} us of CPU per message (--cpu-msg overrides)",
        per_msg / 1000
    ));
    cx.table(&["clients", "rc", "replog", "check"]);
    let (mut best_rc, mut best_rl) = ((0.0, 0), (0.0, 0));
    let (mut s_rc, mut s_rl) = (vec![], vec![]);
    for clients in cx.sweep(&[15u32, 45, 75, 165, 255, 360]) {
        let w = "ycsb:ops=5,reads=0.5,keys=50000";
        let txns = clients as u64 * 12;
        let mut c_rc = cx.cfg(&rc5, w, txns, clients, &all)?;
        let mut c_rl = cx.cfg(&rc5, w, txns, clients, &["V", "O", "I"])?;
        c_rc.cpu.per_msg = per_msg;
        c_rl.cpu.per_msg = per_msg;
        let rc = cx.run("rc", &c_rc)?;
        let rl = cx.run("replog:leaders=V/O/I", &c_rl)?;
        let (a, b) = (rc.report.throughput_tps * 5.0, rl.report.throughput_tps * 5.0);
        if a > best_rc.0 {
            best_rc = (a, clients);
        }
        if b > best_rl.0 {
            best_rl = (b, clients);
        }
        s_rc.push((clients as f64, a));
        s_rl.push((clients as f64, b));
        cx.row(vec![
            clients.to_string(),
            f(a, 0),
            f(b, 0),
            format!("{}/{}", ok(&rc), ok(&rl)),
        ]);
    }
    cx.say(format!(
        "peak: rc {:.0} ops/s at {} clients (paper 1570 at 165), replog {:.0} at {} (paper 594 at 75); rc/replog peak ratio {:.2} (paper 2.64)",
        best_rc.0,
        best_rc.1,
        best_rl.0,
        best_rl.1,
        best_rc.0 / best_rl.0,
    ));
    let cause = "the per-message CPU cost is one knob standing in for everything the EC2 machines spent; \
         the absolute peaks depend on that calibration";
    for (claim, paper, ours, unit) in [
        ("rc peak throughput (paper: at 165 clients)", 1570.0, best_rc.0, "ops/s"),
        (
            "replog peak throughput (paper: at 75 clients)",
            594.0,
            best_rl.0,
            "ops/s",
        ),
        (
            "rc / replog peak throughput",
            1570.0 / 594.0,
            best_rc.0 / best_rl.0,
            "x",
        ),
    ] {
        cx.claim(Claim::numeric(PAPER, "Fig. 6", claim, paper, ours, unit, 0.15).because(cause));
    }
    let last_rl = s_rl.last().map_or(0.0, |p| p.1);
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 6",
        "replog peaks at fewer clients than rc, then declines",
        "rc peak at 165 clients, replog at 75",
        format!(
            "rc peak at {} clients, replog at {} ({:.0} ops/s at the last point)",
            best_rc.1, best_rl.1, last_rl
        ),
        best_rl.1 < best_rc.1 && last_rl < best_rl.0,
        cause,
    ));
    cx.figure(
        Figure::new(
            "rc-fig6",
            "Fig. 6: throughput vs clients (closed loop)",
            "clients",
            "throughput (committed ops/s)",
        )
        .ours("rc", s_rc)
        .ours("replog V/O/I", s_rl)
        .paper("paper rc peak", Source::PaperText, vec![(165.0, 1570.0)])
        .paper("paper replog peak", Source::PaperText, vec![(75.0, 594.0)]),
    );
    Ok(())
}

fn fig7(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    let all = RC5;
    cx.say("Fig. 7: contention; % of 2500 txns committed and mean commit latency of committed txns (ms)");
    cx.say("replog V/O/I with wound-wait (default) and with locks=no-wait (abort on any conflict)");
    cx.table(&[
        "items", "rc %", "rl ww %", "rl nw %", "rc ms", "rl ww ms", "rl nw ms", "check",
    ]);
    // Per point: (items, rc %, ww %, nw %, rc ms, ww ms, nw ms).
    let mut pts: Vec<[f64; 7]> = vec![];
    for items in cx.sweep(&[150u64, 300, 750, 1500, 3000, 6000]) {
        let w = format!("ycsb:ops=5,reads=0.5,keys={items}");
        let c_rc = paper_cfg(cx, &rc5, &w, &all)?;
        let c_rl = paper_cfg(cx, &rc5, &w, &["V", "O", "I"])?;
        let rc = cx.run("rc", &c_rc)?;
        let ww = cx.run("replog:leaders=V/O/I", &c_rl)?;
        let nw = cx.run("replog:leaders=V/O/I,locks=no-wait", &c_rl)?;
        let pct = |o: &SimOutput| 100.0 * o.report.committed as f64 / o.report.txns as f64;
        let p = [
            items as f64,
            pct(&rc),
            pct(&ww),
            pct(&nw),
            rc.report.commit_latency_ms.mean,
            ww.report.commit_latency_ms.mean,
            nw.report.commit_latency_ms.mean,
        ];
        let mut row = vec![items.to_string()];
        row.extend(p[1..].iter().map(|x| f(*x, 1)));
        row.push(format!("{}/{}/{}", ok(&rc), ok(&ww), ok(&nw)));
        cx.row(row);
        pts.push(p);
    }
    cx.say("paper at 150 items: rc 36% vs replog 22.32% committed (ratio 1.61)");
    let p150 = pts[0];
    let rc_cause = "rc denies a read only while another transaction holds the key's exclusive lock, \
                    which lasts one WAN trip; the paper's prototype evidently aborted more";
    let ww_cause = "with wound-wait (our default) replog transactions wait for locks instead of aborting \
                    (the paper says only that deadlocked transactions abort)";
    let nw_cause = "the paper describes replog's conflict handling only as 'deadlocked transactions are \
                    aborted'; no-wait (abort on any conflict) is our closest reading";
    let at = format!("Fig. 7b, {} items", p150[0]);
    for (claim, paper, ours, unit, cause) in [
        ("rc: % of 2500 txns committed", 36.0, p150[1], "%", rc_cause),
        ("replog (wound-wait): % committed", 22.32, p150[2], "%", ww_cause),
        ("replog (no-wait): % committed", 22.32, p150[3], "%", nw_cause),
        (
            "rc / replog (wound-wait) commits",
            36.0 / 22.32,
            p150[1] / p150[2],
            "x",
            ww_cause,
        ),
        (
            "rc / replog (no-wait) commits",
            36.0 / 22.32,
            p150[1] / p150[3],
            "x",
            rc_cause,
        ),
    ] {
        cx.claim(Claim::numeric(PAPER, &at, claim, paper, ours, unit, 0.15).because(cause));
    }
    let (lo, hi) = span(pts.iter().map(|p| p[4]));
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 7a",
        "rc keeps its commit latency (committed txns) under contention (here: within 1.15x)",
        "yes",
        format!("{lo:.1}-{hi:.1} ms"),
        hi <= 1.15 * lo,
        "",
    ));
    let series = |i: usize| pts.iter().map(|p| (p[0], p[i])).collect::<Vec<_>>();
    cx.say("The paper gives Fig. 7a's latencies only as a figure: chart a draws ours alone; chart b adds the paper's two stated points at 150 items.");
    cx.figure(
        Figure::new(
            "rc-fig7-a",
            "Fig. 7a: commit latency of committed transactions vs items",
            "items in the database",
            "mean commit latency of committed txns (ms)",
        )
        .ours("rc", series(4))
        .ours("replog wound-wait", series(5))
        .ours("replog no-wait", series(6)),
    );
    cx.figure(
        Figure::new(
            "rc-fig7-b",
            "Fig. 7b: transactions committed vs items",
            "items in the database",
            "committed (% of 2500 txns)",
        )
        .ours("rc", series(1))
        .ours("replog wound-wait", series(2))
        .ours("replog no-wait", series(3))
        .paper("paper rc", Source::PaperText, vec![(150.0, 36.0)])
        .of("rc")
        .paper("paper replog", Source::PaperText, vec![(150.0, 22.32)])
        .of("replog no-wait"),
    );
    Ok(())
}

fn fig10(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    // The paper's minute-long windows; a third of that in quick mode.
    let wsec: u64 = if cx.quick { 20 } else { 60 };
    let win_len = secs(wsec as f64);
    cx.say(format!(
        "Fig. 10: DC C down from {} s to {} s; 5 clients in C and 5 in I, closed loop, paper workload",
        wsec,
        2 * wsec
    ));
    cx.say("replog leaders C/V/O (the paper's point: a lost leader stalls its shard until the 10 s lease expires)");
    let h = |k: u64| format!("{}-{}s ms (n)", k * wsec, (k + 1) * wsec);
    let (h0, h1, h2) = (h(0), h(1), h(2));
    cx.table(&["proto", "DC", &h0, &h1, &h2, "longest gap s", "check"]);
    // Per (protocol, DC): mean commit ms per window, longest gap (s) in the outage.
    let mut got: Vec<(&str, &str, [f64; 3], f64)> = vec![];
    for proto in ["rc", "replog:leaders=C/V/O"] {
        let mut c = cx.cfg(&rc5, PAPER_WORKLOAD, 1_000_000, 10, &["C", "I"])?;
        c.faults = format!("outage:dc=C,at={wsec}s,for={wsec}s");
        c.max_time = 3 * win_len;
        c.settle = secs(5.0);
        let o = cx.run(proto, &c)?;
        for dc_name in ["C", "I"] {
            let dc = rc5.dc(dc_name)?;
            let mut win = [(0.0, 0u64); 3];
            let mut ends: Vec<Time> = vec![];
            for (t, cs, end) in committed(&o).filter(|(t, ..)| t.dc == dc) {
                let w = (t.start / win_len) as usize;
                if w < 3 {
                    win[w].0 += (end - cs) as f64 / 1e6;
                    win[w].1 += 1;
                }
                if t.start >= win_len && t.start < 2 * win_len {
                    ends.push(end);
                }
            }
            ends.sort_unstable();
            let mut gap = 0;
            let mut last = win_len;
            for e in ends.iter().chain(std::iter::once(&(2 * win_len))) {
                gap = gap.max(e.saturating_sub(last));
                last = last.max(*e);
            }
            let mean = |(s, n): (f64, u64)| s / n.max(1) as f64;
            let cell = |(s, n): (f64, u64)| format!("{:.0} ({n})", s / n.max(1) as f64);
            let name = if proto == "rc" { "rc" } else { "replog" };
            cx.row(vec![
                name.into(),
                dc_name.into(),
                cell(win[0]),
                cell(win[1]),
                cell(win[2]),
                f(gap as f64 / 1e9, 1),
                ok(&o).into(),
            ]);
            got.push((name, dc_name, win.map(mean), gap as f64 / 1e9));
        }
    }
    cx.say("paper (rc): C's clients ~90 ms before the outage, ~160 ms during it, commits never stop; I's clients ~165 ms, barely affected");
    let by = |p: &str, d: &str| got.iter().find(|g| g.0 == p && g.1 == d).copied().expect("row");
    let (rc_c, rc_i) = (by("rc", "C"), by("rc", "I"));
    let (rl_c, rl_i) = (by("replog", "C"), by("replog", "I"));
    let at = "Fig. 10";
    for (claim, paper, ours, cause) in [
        ("rc, C's clients before the outage", 90.0, rc_c.2[0], ""),
        ("rc, C's clients during the outage", 160.0, rc_c.2[1], ""),
        ("rc, I's clients before the outage", 165.0, rc_i.2[0], ""),
        // 224 ms before stop 46 (not reproduced; the cause given then, "I's majority
        // of DCs moves farther away", was a guess): 172 ms once clients re-send an
        // unanswered read after the fail-over time.
        (
            "rc, I's clients during the outage: barely affected (~165 ms)",
            165.0,
            rc_i.2[1],
            "",
        ),
    ] {
        cx.claim(Claim::numeric(PAPER, at, claim, paper, ours, "ms", 0.15).because(cause));
    }
    cx.claim(Claim::shape(
        PAPER,
        at,
        "rc: I's clients less affected by the outage than C's",
        "yes",
        format!(
            "C x{:.2}, I x{:.2} (during / before)",
            rc_c.2[1] / rc_c.2[0],
            rc_i.2[1] / rc_i.2[0]
        ),
        rc_i.2[1] / rc_i.2[0] < rc_c.2[1] / rc_c.2[0],
        "",
    ));
    cx.claim(Claim::shape(
        PAPER,
        at,
        "rc: commits never stop during the outage (here: no gap of 2 s)",
        "yes",
        format!("longest gap {:.1} s (C), {:.1} s (I)", rc_c.3, rc_i.3),
        rc_c.3 < 2.0 && rc_i.3 < 2.0,
        "",
    ));
    cx.claim(Claim::shape(
        PAPER,
        "§5 (Fig. 10 text)",
        "replog: a lost leader stalls its shard until the 10 s lease expires",
        "gap >= 10 s",
        format!("longest gap {:.1} s (C), {:.1} s (I)", rl_c.3, rl_i.3),
        rl_c.3 >= 10.0 && rl_i.3 >= 10.0,
        "",
    ));
    let mid = |k: usize| (k as f64 + 0.5) * wsec as f64;
    let line = |g: (&str, &str, [f64; 3], f64)| (0..3).map(|k| (mid(k), g.2[k])).collect::<Vec<_>>();
    cx.figure(
        Figure::new(
            "rc-fig10",
            &format!(
                "Fig. 10: DC C down from {} s to {} s, mean commit latency per window",
                wsec,
                2 * wsec
            ),
            "time (s, middle of each window)",
            "mean commit latency (ms)",
        )
        .ours("rc, C's clients", line(rc_c))
        .ours("rc, I's clients", line(rc_i))
        .ours("replog C/V/O, C's clients", line(rl_c))
        .ours("replog C/V/O, I's clients", line(rl_i))
        .paper(
            "paper rc, C's clients",
            Source::PaperText,
            vec![(mid(0), 90.0), (mid(1), 160.0)],
        )
        .paper("paper rc, I's clients", Source::PaperText, vec![(mid(0), 165.0)])
        .mark(wsec as f64, 2.0 * wsec as f64, " DC C down"),
    );
    cx.say("The paper's Fig. 10 plots every tenth commit; its text gives the levels above (\"around\"), drawn as points at the window middles.");
    Ok(())
}

/// Fig. 8: the data split over 1, 2 or 3 shards per DC (one server per shard), every
/// DC with clients for rc and the leader DCs for replog (leaders V, V/O, V/O/I: the
/// default placement cut to the shards there are).
fn fig8(cx: &mut Ctx) -> Result<()> {
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
fn fig9(cx: &mut Ctx) -> Result<()> {
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
        .ours("replog transaction", series(4)),
    );
    cx.figure(
        Figure::new(
            "rc-fig9-b",
            "Fig. 9: transactions committed vs share of writes",
            "writes (% of operations)",
            "committed (of 2500)",
        )
        .ours("rc", series(5))
        .ours("replog", series(6)),
    );
    Ok(())
}

/// Fig. 11: each point one read: its latency against its transaction's commit latency.
/// The simulator records a transaction's start, commit request and outcome, not each
/// read, so the points are the committed transactions with exactly one read: with
/// writes buffered at the client, the time from start to commit request is that read.
fn fig11(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    cx.say("Fig. 11: read latency vs commit latency (ms) of committed single-read transactions of clients in V and I; paper workload and load, replog V/O/I");
    cx.table(&["proto", "DC", "n", "read ms", "commit ms", "read levels (ms)", "check"]);
    let mut figs: Vec<(String, Vec<(f64, f64)>)> = vec![];
    // Per (protocol, DC): mean read, mean commit, read levels, (shards touched, commit ms).
    type Got<'a> = (&'a str, &'a str, f64, f64, Vec<f64>, Vec<(usize, f64)>);
    let mut got: Vec<Got> = vec![];
    for (proto, dcs) in [("rc", &RC5[..]), ("replog:leaders=V/O/I", &["V", "O", "I"][..])] {
        let c = paper_cfg(cx, &rc5, PAPER_WORKLOAD, dcs)?;
        let o = cx.run(proto, &c)?;
        let shards = o.history.meta.shards;
        for dc_name in ["V", "I"] {
            let dc = rc5.dc(dc_name)?;
            let mut pts: Vec<(f64, f64)> = vec![];
            // commit latency by number of shards the transaction touched
            let mut by_shards: Vec<(usize, f64)> = vec![];
            for (t, cs, end) in committed(&o).filter(|(t, ..)| t.dc == dc) {
                let commit = (end - cs) as f64 / 1e6;
                let mut touched: Vec<u32> = t
                    .reads
                    .iter()
                    .map(|r| &r.key)
                    .chain(t.writes.iter().map(|w| &w.key))
                    .map(|k| meridian_core::shard_of(k, shards).0)
                    .collect();
                touched.sort_unstable();
                touched.dedup();
                by_shards.push((touched.len(), commit));
                if t.reads.len() == 1 {
                    pts.push((commit, (cs - t.start) as f64 / 1e6));
                }
            }
            let n = pts.len().max(1) as f64;
            let read = pts.iter().map(|p| p.1).sum::<f64>() / n;
            let commit = pts.iter().map(|p| p.0).sum::<f64>() / n;
            let lv = levels(pts.iter().map(|p| p.1));
            let short = if proto == "rc" { "rc" } else { "replog" };
            cx.row(vec![
                short.into(),
                dc_name.into(),
                pts.len().to_string(),
                f(read, 1),
                f(commit, 1),
                lv.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(" / "),
                ok(&o).into(),
            ]);
            figs.push((format!("{short} {dc_name}"), pts));
            got.push((short, dc_name, read, commit, lv, by_shards));
        }
    }
    let find = |p: &str, d: &str| got.iter().find(|g| g.0 == p && g.1 == d).expect("ran");
    for (d, paper) in [("V", 100.0), ("I", 200.0)] {
        let cause = if d == "I" {
            "the paper's 'just below 200 ms' is read off a scatter; its Fig. 10 text gives I's commit latency \
             in normal operation as 165 ms, which ours matches"
        } else {
            "our rc reads and commits each take one round to the nearest majority"
        };
        let g = find("rc", d);
        cx.claim(
            Claim::numeric(
                PAPER,
                "Fig. 11",
                &format!("rc {d}: read latency"),
                paper,
                g.2,
                "ms",
                0.15,
            )
            .because(cause),
        );
        cx.claim(
            Claim::numeric(
                PAPER,
                "Fig. 11",
                &format!("rc {d}: commit latency"),
                paper,
                g.3,
                "ms",
                0.15,
            )
            .because(cause),
        );
    }
    for (d, want, what) in [
        ("I", 3usize, "local, next leader, farthest"),
        ("V", 2, "local, then O and I at about the same RTT"),
    ] {
        let g = find("replog", d);
        cx.claim(Claim::shape(
            PAPER,
            "Fig. 11",
            &format!("replog {d}: read latencies fall in {want} levels ({what})"),
            &format!("{want} levels"),
            format!(
                "{} levels: {} ms",
                g.4.len(),
                g.4.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", ")
            ),
            g.4.len() == want,
            "our levels are clusters of single-read transactions' read times more than 20 ms apart",
        ));
    }
    let g = find("replog", "I");
    let mean_of = |k: usize| {
        let v: Vec<f64> = g.5.iter().filter(|x| x.0 == k).map(|x| x.1).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    if let Some(two) = mean_of(2) {
        cx.claim(
            Claim::numeric(
                PAPER,
                "Fig. 11",
                "replog I: commit latency of transactions on two shards",
                350.0,
                two,
                "ms",
                0.15,
            )
            .because(
                "our two-shard commits from I pay 2PC between two leaders (V/O/I) and two replication rounds \
             (PREPARE, COMMIT) in each group; the paper gives 'around 350 ms' in its text",
            ),
        );
    }
    if let Some(three) = mean_of(3) {
        cx.claim(Claim::shape(
            PAPER,
            "Fig. 11",
            "replog I: transactions on all three shards commit in more than 400 ms",
            "> 400 ms",
            format!("{three:.0} ms (mean)"),
            three > 400.0,
            "a commit waits for the farthest leader the transaction touched and its replication",
        ));
    }
    cx.say("The paper states levels and typical values in its text, not points: the chart draws ours alone.");
    let mut fig = Figure::new(
        "rc-fig11",
        "Fig. 11: read latency vs commit latency (single-read transactions)",
        "commit latency (ms)",
        "read latency (ms)",
    )
    .scatter();
    for (name, pts) in figs {
        fig = fig.ours(&name, pts);
    }
    cx.figure(fig);
    Ok(())
}

/// Centres of the clusters of `v` (sorted), a new cluster wherever two neighbouring
/// values are more than 20 ms apart; clusters of fewer than 2% of the values are noise
/// and dropped.
fn levels(v: impl Iterator<Item = f64>) -> Vec<f64> {
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
