//! `meridian compare --experiment rc-figN`: replicated-commit.md §5 reproduced side by
//! side with the paper. Every run is a full simulation that ends with the checker; a
//! failed check makes the experiment exit 3.
//!
//! The paper's setup (§5): the `rc5` DCs (Table 1), 3 shards on 3 servers per DC, YCSB
//! transactions of 5 operations with reads:writes 1:1 on 3000 items, 2500 transactions,
//! 5 traffic generators per DC at 50 operations per second per DC (10 transactions/s).
//! Replicated Log clients live only in DCs that hold a leader (§5); `replog` uses the
//! leader placement the paper names for each figure (`V/O/I` by default).

use super::ok;
use super::Experiment;
use anyhow::Result;
use meridian_core::{secs, Outcome, Time, Topology};
use meridian_protocols::rc::crossover_reads;
use meridian_sim::{SimConfig, SimOutput};

const PAPER_WORKLOAD: &str = "ycsb:ops=5,reads=0.5,keys=3000";

use super::Ctx;

/// The paper's load: 5 generators and 10 transactions/s per client DC.
fn paper_load(cfg: &mut SimConfig, dcs: usize) {
    cfg.clients = 5 * dcs as u32;
    cfg.rate = Some(10.0 * dcs as f64);
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
        name: "rc-fig10",
        about: "replicated-commit.md Fig. 10: DC C goes down for a minute; commit latency of C's clients",
        run: fig10,
        sim: true,
    },
];

fn fig3(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    println!("Fig. 3: mean commit latency (ms) by DC set; 2500 txns, ycsb 5 ops 1:1, 3000 items, 10 txn/s per DC");
    println!(
        "{:6} {:7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}  check",
        "DCs", "leaders", "paper rc", "paper rl", "rc", "replog", "paper x", "ours x", "ratio"
    );
    // (DC set, replog leaders, paper rc ms, paper replog ms, paper replog/rc ratio)
    type Row<'a> = (&'a str, &'a str, Option<f64>, Option<f64>, Option<f64>);
    let rows: [Row; 5] = [
        ("C", "C/C/C", Some(5.8), Some(14.8), None),
        ("CV", "C/C/V", Some(90.0), Some(267.0), None),
        ("CVO", "C/V/O", None, None, None),
        ("CVOI", "V/O/I", None, None, Some(3.41)),
        ("CVOIS", "V/O/I", None, None, Some(2.89)),
    ];
    for (set, leaders, prc, prl, px) in rows {
        let names: Vec<String> = set.chars().map(|c| c.to_string()).collect();
        let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        let topo = rc5.subset(&names)?;
        let mut c_rc = cx.cfg(&topo, PAPER_WORKLOAD, 2500, 0, &names)?;
        paper_load(&mut c_rc, names.len());
        let lead = distinct(leaders);
        let mut c_rl = cx.cfg(&topo, PAPER_WORKLOAD, 2500, 0, &lead)?;
        paper_load(&mut c_rl, names.len());
        c_rl.clients = c_rc.clients;
        let rc = cx.run("rc", &c_rc)?;
        let rl = cx.run(&format!("replog:leaders={leaders}"), &c_rl)?;
        let (a, b) = (rc.report.commit_latency_ms.mean, rl.report.commit_latency_ms.mean);
        let paper_x = px.or(prl.zip(prc).map(|(l, r)| l / r));
        let ours_x = b / a;
        println!(
            "{:6} {:7} {:>9} {:>9} {:>9.1} {:>9.1} {:>9} {:>9.2} {:>7}  {}/{}",
            set,
            leaders,
            fmt_opt(prc),
            fmt_opt(prl),
            a,
            b,
            paper_x.map_or("-".into(), |x| format!("{x:.2}")),
            ours_x,
            paper_x.map_or("-".into(), |x| format!("{:.2}", ours_x / x)),
            ok(&rc),
            ok(&rl)
        );
    }
    println!("x = replog / rc commit latency; ratio = ours x / paper x. CVOI and CVOIS: the paper gives only \"241% and 189% higher\".");
    Ok(())
}

fn fmt_opt(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.1}"))
}

fn fig4(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    let all = ["C", "V", "O", "I", "S"];
    println!("Fig. 4: mean commit latency (ms) by replog leader placement, rc5, paper workload");
    let mut c_rc = cx.cfg(&rc5, PAPER_WORKLOAD, 2500, 0, &all)?;
    paper_load(&mut c_rc, 5);
    let rc = cx.run("rc", &c_rc)?;
    println!("{:8} {:>9} {:>9} {:>7}  check", "leaders", "paper", "measured", "ratio");
    println!(
        "{:8} {:>9} {:>9.1} {:>7}  {}",
        "rc",
        "< all",
        rc.report.commit_latency_ms.mean,
        "-",
        ok(&rc)
    );
    for (leaders, paper) in [
        ("C/C/C", Some(206.0)),
        ("C/V/O", None),
        ("V/O/I", Some(387.0)),
        ("S/S/S", None),
    ] {
        let lead = distinct(leaders);
        let mut c = cx.cfg(&rc5, PAPER_WORKLOAD, 2500, 0, &lead)?;
        paper_load(&mut c, 5);
        let rl = cx.run(&format!("replog:leaders={leaders}"), &c)?;
        let m = rl.report.commit_latency_ms.mean;
        println!(
            "{:8} {:>9} {:>9.1} {:>7}  {}",
            leaders,
            fmt_opt(paper),
            m,
            paper.map_or("-".into(), |p| format!("{:.2}", m / p)),
            ok(&rl)
        );
    }
    Ok(())
}

/// Mean read latency (ms per read) and mean commit latency (ms) of committed transactions.
fn read_and_commit(o: &SimOutput) -> (f64, f64) {
    let (mut r, mut n, mut c, mut k) = (0.0, 0usize, 0.0, 0usize);
    for t in o.history.txns.iter().filter(|t| t.outcome == Outcome::Committed) {
        let (Some(cs), Some(end)) = (t.commit_start, t.end) else {
            continue;
        };
        if !t.reads.is_empty() {
            r += (cs - t.start) as f64 / 1e6;
            n += t.reads.len();
        }
        c += (end - cs) as f64 / 1e6;
        k += 1;
    }
    (r / n.max(1) as f64, c / k.max(1) as f64)
}

fn fig5(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    println!("Fig. 5: transaction latency (ms) vs operations per transaction; clients in V, 50000 items, replog V/O/I");
    println!(
        "{:>4} {:>10} {:>10} {:>10} {:>10}  check",
        "ops", "rc txn", "replog txn", "rc read", "rl read"
    );
    let mut prev: Option<(u32, f64)> = None;
    let mut crossing = None;
    let mut first = None;
    for ops in [5u32, 10, 15, 20, 25, 30, 35, 40, 45] {
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
        println!(
            "{ops:>4} {a:>10.1} {b:>10.1} {rra:>10.1} {rrb:>10.1}  {}/{}",
            ok(&rc),
            ok(&rl)
        );
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
    println!(
        "crossover (ops): paper 25 (2.5 x N reads, N=5, half the ops are reads); measured {}; §4.3 formula with the measured 5-op read/commit latencies: {:.1}",
        crossing.map_or("none in 5..45".into(), |x| format!("{x:.1}")),
        formula
    );
    Ok(())
}

fn fig6(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    let all = ["C", "V", "O", "I", "S"];
    println!("Fig. 6: throughput (committed ops/s) vs clients; closed loop, 50000 items, replog V/O/I");
    println!("{:>7} {:>10} {:>10}  check", "clients", "rc", "replog");
    let (mut best_rc, mut best_rl) = ((0.0, 0), (0.0, 0));
    for clients in [15u32, 45, 75, 165, 255, 360] {
        let w = "ycsb:ops=5,reads=0.5,keys=50000";
        let txns = clients as u64 * 12;
        let c_rc = cx.cfg(&rc5, w, txns, clients, &all)?;
        let c_rl = cx.cfg(&rc5, w, txns, clients, &["V", "O", "I"])?;
        let rc = cx.run("rc", &c_rc)?;
        let rl = cx.run("replog:leaders=V/O/I", &c_rl)?;
        let (a, b) = (rc.report.throughput_tps * 5.0, rl.report.throughput_tps * 5.0);
        if a > best_rc.0 {
            best_rc = (a, clients);
        }
        if b > best_rl.0 {
            best_rl = (b, clients);
        }
        println!("{clients:>7} {a:>10.0} {b:>10.0}  {}/{}", ok(&rc), ok(&rl));
    }
    println!(
        "peak: rc {:.0} ops/s at {} clients (paper 1570 at 165), replog {:.0} at {} (paper 594 at 75); rc/replog peak ratio {:.2} (paper 2.64)",
        best_rc.0,
        best_rc.1,
        best_rl.0,
        best_rl.1,
        best_rc.0 / best_rl.0,
    );
    Ok(())
}

fn fig7(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    let all = ["C", "V", "O", "I", "S"];
    println!("Fig. 7: contention; % of 2500 txns committed and mean commit latency of committed txns (ms)");
    println!("replog V/O/I with wound-wait (default) and with locks=no-wait (abort on any conflict)");
    println!(
        "{:>6} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8}  check",
        "items", "rc %", "rl ww %", "rl nw %", "rc ms", "rl ww ms", "rl nw ms"
    );
    for items in [150u64, 300, 750, 1500, 3000, 6000] {
        let w = format!("ycsb:ops=5,reads=0.5,keys={items}");
        let mut c_rc = cx.cfg(&rc5, &w, 2500, 0, &all)?;
        paper_load(&mut c_rc, 5);
        let mut c_rl = cx.cfg(&rc5, &w, 2500, 0, &["V", "O", "I"])?;
        paper_load(&mut c_rl, 5);
        let rc = cx.run("rc", &c_rc)?;
        let ww = cx.run("replog:leaders=V/O/I", &c_rl)?;
        let nw = cx.run("replog:leaders=V/O/I,locks=no-wait", &c_rl)?;
        let pct = |o: &SimOutput| 100.0 * o.report.committed as f64 / o.report.txns as f64;
        println!(
            "{items:>6} {:>7.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}  {}/{}/{}",
            pct(&rc),
            pct(&ww),
            pct(&nw),
            rc.report.commit_latency_ms.mean,
            ww.report.commit_latency_ms.mean,
            nw.report.commit_latency_ms.mean,
            ok(&rc),
            ok(&ww),
            ok(&nw)
        );
    }
    println!("paper at 150 items: rc 36% vs replog 22.32% committed (ratio 1.61)");
    Ok(())
}

fn fig10(cx: &mut Ctx) -> Result<()> {
    let rc5 = Topology::preset("rc5").expect("preset");
    println!("Fig. 10: DC C down from 60 s to 120 s; 5 clients in C and 5 in I, closed loop, paper workload");
    println!("replog leaders C/V/O (the paper's point: a lost leader stalls its shard until the 10 s lease expires)");
    println!(
        "{:7} {:4} {:>16} {:>16} {:>16} {:>14}  check",
        "proto", "DC", "0-60s ms (n)", "60-120s ms (n)", "120-180s ms (n)", "longest gap s"
    );
    for proto in ["rc", "replog:leaders=C/V/O"] {
        let mut c = cx.cfg(&rc5, PAPER_WORKLOAD, 1_000_000, 10, &["C", "I"])?;
        c.faults = "outage:dc=C,at=60s,for=60s".into();
        c.max_time = secs(180.0);
        c.settle = secs(5.0);
        let o = cx.run(proto, &c)?;
        for dc_name in ["C", "I"] {
            let dc = rc5.dc(dc_name)?;
            let mut win = [(0.0, 0u64); 3];
            let mut ends: Vec<Time> = vec![];
            for t in o
                .history
                .txns
                .iter()
                .filter(|t| t.dc == dc && t.outcome == Outcome::Committed)
            {
                let (Some(cs), Some(end)) = (t.commit_start, t.end) else {
                    continue;
                };
                let w = (t.start / secs(60.0)) as usize;
                if w < 3 {
                    win[w].0 += (end - cs) as f64 / 1e6;
                    win[w].1 += 1;
                }
                if t.start >= secs(60.0) && t.start < secs(120.0) {
                    ends.push(end);
                }
            }
            ends.sort_unstable();
            let mut gap = 0;
            let mut last = secs(60.0);
            for e in ends.iter().chain(std::iter::once(&secs(120.0))) {
                gap = gap.max(e.saturating_sub(last));
                last = last.max(*e);
            }
            let cell = |(s, n): (f64, u64)| format!("{:.0} ({n})", s / n.max(1) as f64);
            println!(
                "{:7} {:4} {:>16} {:>16} {:>16} {:>14.1}  {}",
                if proto == "rc" { "rc" } else { "replog" },
                dc_name,
                cell(win[0]),
                cell(win[1]),
                cell(win[2]),
                gap as f64 / 1e9,
                ok(&o)
            );
        }
    }
    println!("paper (rc): C's clients ~90 ms before the outage, ~160 ms during it, commits never stop; I's clients ~165 ms, barely affected");
    Ok(())
}
