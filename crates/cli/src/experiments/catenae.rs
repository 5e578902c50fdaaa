//! `meridian compare --experiment cat-*`: catenae.md §III-B and §VII reproduced side by
//! side with the paper. Every run is a full simulation on `gcp3` (EU, US, AS; four
//! chain servers per DC, the coordinator and resolver on the first) that ends with the
//! checker; a failed check makes the experiment exit 3.
//!
//! Speculation success (Fig. 1) is measured from the coordinators' counters: a
//! transaction succeeds when every DC executed it with the same dependencies (a
//! transaction alone in its epoch's conflict set trivially does). The baselines
//! `pc-2pl` and `pc-occ` are run when this build has them (`meridian_protocols::PROTOCOLS`);
//! otherwise their rows say so.

use super::ok;
use super::{Ctx, Experiment};
use anyhow::Result;
use meridian_core::Topology;
use meridian_sim::SimOutput;

/// This paper's experiments, as `--experiment list` shows them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "cat-fig1",
        about: "catenae.md Fig. 1: speculation success rate vs arrival rate (uniform, zipf 1, zipf 2; 10,000 records)",
        run: fig1,
        sim: true,
    },
    Experiment {
        name: "cat-fig5",
        about: "catenae.md Fig. 5: latency, throughput, abort rate vs clients; read-only/read-write, uniform/zipf 1; catenae, pc-2pl, pc-occ",
        run: fig5,
        sim: true,
    },
    Experiment {
        name: "cat-fig6",
        about: "catenae.md Fig. 6: commit latency vs epoch length 5..30 ms (uniform read-write)",
        run: fig6,
        sim: true,
    },
];

fn gcp3() -> Topology {
    Topology::preset("gcp3").expect("preset")
}

fn stat(o: &SimOutput, k: &str) -> f64 {
    o.report.protocol_stats.get(k).copied().unwrap_or(0.0)
}

/// The fraction of transactions every DC executed with the same dependencies.
fn success(o: &SimOutput) -> f64 {
    let nc = stat(o, "non_conflicting");
    (nc + stat(o, "identical")) / (nc + stat(o, "conflicting_voted_all")).max(1.0)
}

/// Fig. 1: open-loop Poisson arrivals at 1,000..11,000 transactions per second, every
/// DC executing the same sequence (every DC executes every transaction).
fn fig1(cx: &mut Ctx) -> Result<()> {
    let txns = 3_000;
    println!("Fig. 1: speculation success rate vs arrival rate; micro:records=10000,parts=1-4 (reads 0.5, updates 0.5), Poisson arrivals, {txns} transactions per point");
    println!("paper: above 80% uniform, above 60% zipf 1, low at zipf 2");
    println!(
        "{:>7} {:>10} {:>10} {:>10}   {:>10} {:>10}  check",
        "txn/s", "uniform", "zipf1", "zipf2", "unif/0.8", "zipf1/0.6"
    );
    for rate in [1000.0, 3000.0, 5000.0, 7000.0, 9000.0, 11000.0] {
        let mut row = vec![];
        let mut checks = vec![];
        for dist in ["uniform", "zipf1", "zipf2"] {
            let mut c = cx.cfg(
                &gcp3(),
                &format!("micro:records=10000,parts=1-4,dist={dist},reads=0.5"),
                txns,
                // Enough open-loop clients that none is busy when its arrival comes.
                (rate as u32) / 2,
                &[],
            )?;
            c.rate = Some(rate);
            let o = cx.run("catenae", &c)?;
            row.push(success(&o));
            checks.push(ok(&o));
        }
        println!(
            "{:>7} {:>9.1}% {:>9.1}% {:>9.1}%   {:>10.2} {:>10.2}  {}",
            rate,
            100.0 * row[0],
            100.0 * row[1],
            100.0 * row[2],
            row[0] / 0.8,
            row[1] / 0.6,
            checks.join("/")
        );
    }
    println!("ratio = ours / the paper's lower bound (80% uniform, 60% zipf 1)");
    Ok(())
}

/// Fig. 6: commit latency against the epoch length, uniform read-write.
fn fig6(cx: &mut Ctx) -> Result<()> {
    let clients = 150;
    println!("Fig. 6: commit latency (ms) vs epoch length; micro:records=100000,parts=1-5,dist=uniform,reads=0.5; {clients} clients over 3 DCs");
    println!("paper: flat up to 20 ms, rising beyond (transactions wait for the epoch boundary)");
    println!(
        "{:>6} {:>10} {:>10} {:>10} {:>10}  check",
        "epoch", "mean", "p50", "p99", "vs 10ms"
    );
    let mut base = None;
    for e in [5, 10, 15, 20, 25, 30] {
        let c = cx.cfg(
            &gcp3(),
            "micro:records=100000,parts=1-5,dist=uniform,reads=0.5",
            3000,
            clients,
            &[],
        )?;
        let o = cx.run(&format!("catenae:epoch={e}ms"), &c)?;
        let l = &o.report.commit_latency_ms;
        if e == 10 {
            base = Some(l.mean);
        }
        let rel = base.map(|b| format!("{:.2}", l.mean / b)).unwrap_or_else(|| "-".into());
        println!(
            "{:>4}ms {:>10.1} {:>10.1} {:>10.1} {:>10}  {}",
            e,
            l.mean,
            l.p50,
            l.p99,
            rel,
            ok(&o)
        );
    }
    Ok(())
}

/// Fig. 5: the three systems against the number of clients.
fn fig5(cx: &mut Ctx) -> Result<()> {
    let protocols = ["catenae", "pc-2pl", "pc-occ"];
    println!("Fig. 5: micro:records=100000,parts=1-5 on gcp3; latency (ms), throughput (txn/s), abort rate vs clients (spread over the 3 DCs)");
    println!("paper: catenae read-write commits in a little more than half an RTT (non-conflicting) or one RTT (conflicting); 2PL/OCC plateau under zipf 1 while catenae scales; read-only > 3x better for catenae");
    println!("RTTs: EU-US 105, US-AS 155, EU-AS 255 ms");
    for (label, w) in [
        (
            "read-write uniform",
            "micro:records=100000,parts=1-5,dist=uniform,reads=0.5",
        ),
        (
            "read-write zipf1",
            "micro:records=100000,parts=1-5,dist=zipf1,reads=0.5",
        ),
        (
            "read-only uniform",
            "micro:records=100000,parts=1-5,dist=uniform,reads=1",
        ),
        ("read-only zipf1", "micro:records=100000,parts=1-5,dist=zipf1,reads=1"),
    ] {
        println!();
        println!("{label}:");
        println!(
            "{:<9} {:>7} {:>10} {:>10} {:>10} {:>8}  check",
            "protocol", "clients", "lat mean", "lat p50", "tps", "abort"
        );
        for p in protocols {
            if !meridian_protocols::PROTOCOLS.contains(&p) {
                println!("{p:<9} (not in this build)");
                continue;
            }
            for clients in [15, 60, 150, 300] {
                let c = cx.cfg(&gcp3(), w, 20 * clients as u64, clients, &[])?;
                let o = cx.run(p, &c)?;
                let r = &o.report;
                let abort = r.aborted as f64 / (r.committed + r.aborted).max(1) as f64;
                println!(
                    "{:<9} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>7.1}%  {}",
                    p,
                    clients,
                    r.latency_ms.mean,
                    r.latency_ms.p50,
                    r.throughput_tps,
                    100.0 * abort,
                    ok(&o)
                );
            }
        }
    }
    Ok(())
}
