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

use super::{f, fo, ok, Claim, Ctx, Experiment, Figure, Source};
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
        name: "cat-fig7",
        about: "catenae.md Fig. 7: TPC-C NewOrder and OrderStatus; latency, throughput, abort rate vs clients; catenae, pc-2pl, pc-occ",
        run: fig7,
        sim: true,
    },
    Experiment {
        name: "cat-outage",
        about: "catenae.md §VIII-B: commits per second through a 10 s outage of AS, waiting for every DC vs majority mode",
        run: outage,
        sim: true,
    },
    Experiment {
        name: "cat-failover",
        about: "catenae.md §IV: commits per second through a 10 s crash of EU's coordinator, without and with a secondary coordinator",
        run: failover,
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

/// Speculation success as §III-B defines it: a transaction whose execution
/// dependencies are the same in every DC. Counted only where that execution also
/// committed (a transaction every DC executed alike and then aborted on a cycle of
/// dependencies did not succeed): the non-conflicting transactions committed (alone
/// in their epoch's conflict set, their dependencies are empty everywhere) plus the
/// conflict-set members committed with every DC's identical vote, over every
/// read-write transaction scheduled (read-only ones are not executed speculatively).
fn success(o: &SimOutput) -> f64 {
    (stat(o, "lone_committed") + stat(o, "spec_held")) / stat(o, "scheduled").max(1.0)
}

/// The same over the transactions that needed validating only (conflict-set
/// members); `None` where there were none.
fn success_needed(o: &SimOutput) -> Option<f64> {
    let n = stat(o, "spec_needed");
    (n > 0.0).then(|| stat(o, "spec_held") / n)
}

/// The fraction of commits, counted in every DC, that installed that DC's own
/// speculative result (the values its chain servers computed) as it was: the rest
/// were re-executed (a value read changed) or caught up with another DC's update
/// operations (the DC's execution lost the vote).
fn values_held(o: &SimOutput) -> f64 {
    let v = stat(o, "spec_valid");
    v / (v + stat(o, "spec_redone") + stat(o, "caught_up")).max(1.0)
}

/// Before stop 68 (labelled "old" in the table): identical votes counted as successes
/// even when the transaction then aborted, non-conflicting ones always.
fn success_old(o: &SimOutput) -> f64 {
    let nc = stat(o, "non_conflicting");
    (nc + stat(o, "identical")) / (nc + stat(o, "conflicting_voted_all")).max(1.0)
}

/// Aborted over resolved transactions.
fn abort_rate(o: &SimOutput) -> f64 {
    let r = &o.report;
    r.aborted as f64 / ((r.committed + r.aborted) as f64).max(1.0)
}

/// The paper's file, as claims name it.
const PAPER: &str = "catenae.md";

/// Fig. 1: open-loop Poisson arrivals at 1,000..11,000 transactions per second, every
/// DC executing the same sequence (every DC executes every transaction).
fn fig1(cx: &mut Ctx) -> Result<()> {
    let txns = 3_000;
    cx.say(format!("Fig. 1: speculation success rate vs arrival rate; micro:records=10000,parts=1-4 (reads 0.5, updates 0.5), Poisson arrivals, {} transactions per point", cx.n(txns)));
    cx.say("paper: above 80% uniform, above 60% zipf 1, low at zipf 2");
    cx.say("success: transactions committed with the same execution dependencies in every DC, over all read-write transactions (§III-B's definition; an identical execution that then aborted on a dependency cycle is not a success); needed: the same over conflict-set members only (the transactions whose speculation needed validating); values: the commits, counted in every DC, that installed the values that DC's chain servers computed speculatively (the rest were re-executed because a value read changed, or caught up with another DC's update operations); old: this figure's metric before stop 68, which counted identical votes as successes even when the transaction aborted");
    cx.table(&[
        "txn/s",
        "uniform",
        "zipf1",
        "zipf2",
        "needed u/z1/z2",
        "values u/z1/z2",
        "aborts u/z1/z2",
        "old u/z1/z2",
        "unif/0.8",
        "zipf1/0.6",
        "check",
    ]);
    // Per rate: (rate, success uniform, zipf 1, zipf 2), fractions.
    let mut pts: Vec<(f64, [f64; 3])> = vec![];
    for rate in cx.sweep(&[1000.0, 3000.0, 5000.0, 7000.0, 9000.0, 11000.0]) {
        let mut row = vec![];
        let (mut needed, mut values, mut aborts, mut old) = (vec![], vec![], vec![], vec![]);
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
            needed.push(success_needed(&o).map_or("-".into(), |v| format!("{:.0}%", 100.0 * v)));
            values.push(format!("{:.0}%", 100.0 * values_held(&o)));
            aborts.push(format!("{:.1}%", 100.0 * abort_rate(&o)));
            old.push(format!("{:.0}%", 100.0 * success_old(&o)));
            checks.push(ok(&o));
        }
        cx.row(vec![
            format!("{rate}"),
            format!("{:.1}%", 100.0 * row[0]),
            format!("{:.1}%", 100.0 * row[1]),
            format!("{:.1}%", 100.0 * row[2]),
            needed.join("/"),
            values.join("/"),
            aborts.join("/"),
            old.join("/"),
            f(row[0] / 0.8, 2),
            f(row[1] / 0.6, 2),
            checks.join("/"),
        ]);
        pts.push((rate, [row[0], row[1], row[2]]));
    }
    cx.say("ratio = ours / the paper's lower bound (80% uniform, 60% zipf 1)");
    let min = |i: usize| pts.iter().map(|p| p.1[i]).fold(f64::INFINITY, f64::min);
    let at = "§III-B, Fig. 1";
    for (i, name, bound) in [(0, "uniform", 80), (1, "zipf 1", 60)] {
        cx.claim(Claim::shape(
            PAPER,
            at,
            &format!("{name}: speculation succeeds above {bound}% at every rate"),
            &format!("> {bound}%"),
            format!("lowest {:.1}%", 100.0 * min(i)),
            min(i) > bound as f64 / 100.0,
            "",
        ));
    }
    let lowest_everywhere = pts.iter().all(|p| p.1[2] <= p.1[0] && p.1[2] <= p.1[1]);
    let (top_rate, top) = pts.last().map(|p| (p.0, p.1[2])).expect("ran");
    cx.claim(Claim::shape(
        PAPER,
        at,
        "zipf 2: speculation fails (here: lowest of the three at every rate, below 50% at the highest rate)",
        "low",
        format!("{:.1}% at {top_rate} txn/s", 100.0 * top),
        lowest_everywhere && top < 0.5,
        "cross-epoch orders are equal in every DC by construction; only races inside an epoch can diverge",
    ));
    cx.say("The paper's Fig. 1 gives its curves only as bounds in the text (above 80%, above 60%, low): the chart draws ours alone.");
    let series = |i: usize| pts.iter().map(|p| (p.0, 100.0 * p.1[i])).collect::<Vec<_>>();
    cx.figure(
        Figure::new(
            "cat-fig1",
            "Fig. 1: speculation success rate vs arrival rate (gcp3, 10,000 records)",
            "arrival rate (txn/s)",
            "speculation success (% of transactions)",
        )
        .ours("uniform", series(0))
        .ours("zipf 1", series(1))
        .ours("zipf 2", series(2))
        .paper("paper: uniform above 80% (a bound)", Source::PaperText, vec![(1000.0, 80.0), (11000.0, 80.0)])
        .of("uniform")
        .paper("paper: zipf 1 above 60% (a bound)", Source::PaperText, vec![(1000.0, 60.0), (11000.0, 60.0)])
        .of("zipf 1")
        .note("The paper's text gives bounds, not values: \"above 80%\" for uniform and \"above 60%\" for zipf 1 over its 1,000 to 11,000 requests per second, and for zipf 2 only that speculation \"will fail\" (§III-B); drawn as lines over the whole range."),
    );
    Ok(())
}

/// What §VII-C's text says of Fig. 5's chart `stem`-`metric` (it gives no values).
fn fig5_says(stem: &str, metric: &str) -> &'static str {
    match (stem, metric) {
        ("rw-uniform", "latency") => "\"The performance of Catenae, 2PL and OCC is comparable under uniform read-write workload\"; Catenae commits \"non-conflicting read-write transactions with a little more than a half RTT and ... conflicting read-write transactions with slightly more than a single RTT\" (§VII-C; its RTTs are not given in ms).",
        ("rw-uniform", _) => "\"The performance of Catenae, 2PL and OCC is comparable under uniform read-write workload\" (§VII-C).",
        ("rw-zipf1", _) => "\"The throughput of 2PL and OCC start to struggle and plateau with the increasing number of clients under zipfian read-write workload ... OCC observes significant abort rate\", while Catenae \"scales nearly linearly\" (§VII-C).",
        _ => "for read-only transactions Catenae \"observes more than three times performance gains in both latency and throughput\" (§VII-C): a ratio without a base value, compared in the claims.",
    }
}

/// Fig. 6: commit latency against the epoch length, uniform read-write.
fn fig6(cx: &mut Ctx) -> Result<()> {
    let clients = 150;
    cx.say(format!("Fig. 6: commit latency (ms) vs epoch length; micro:records=100000,parts=1-5,dist=uniform,reads=0.5; {clients} clients over 3 DCs"));
    cx.say("paper: flat up to 20 ms, rising beyond (transactions wait for the epoch boundary)");
    cx.table(&["epoch", "mean", "p50", "p99", "vs 10ms", "check"]);
    let mut base = None;
    // Per epoch: (ms, mean, p50).
    let mut pts: Vec<(f64, f64, f64)> = vec![];
    for e in cx.sweep(&[5, 10, 15, 20, 25, 30]) {
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
        cx.row(vec![
            format!("{e}ms"),
            f(l.mean, 1),
            f(l.p50, 1),
            f(l.p99, 1),
            fo(base.map(|b| l.mean / b), 2),
            ok(&o).into(),
        ]);
        pts.push((e as f64, l.mean, l.p50));
    }
    // Flat: every epoch up to 20 ms (the paper's "up to": 20 is on the flat side) within
    // 20% of the 10 ms mean (the first point's in quick mode); rising: every epoch above
    // 20 ms at least 15% above it. Until stop 72, 20 ms was on neither side.
    let b = base.unwrap_or(pts[0].1);
    let below: Vec<f64> = pts.iter().filter(|p| p.0 <= 20.0).map(|p| p.1 / b).collect();
    let above: Vec<f64> = pts.iter().filter(|p| p.0 > 20.0).map(|p| p.1 / b).collect();
    let holds = below.iter().all(|r| (r - 1.0).abs() <= 0.2) && !above.is_empty() && above.iter().all(|r| *r >= 1.15);
    let list = |v: &[f64]| v.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", ");
    cx.claim(Claim::shape(
        PAPER,
        "§VII-C, Fig. 6",
        "commit latency flat up to 20 ms epochs, higher beyond (here: within 20% of 10 ms up to 20, >= 1.15x above)",
        "yes",
        format!("mean / 10 ms: up to 20 ms {}; above {}", list(&below), list(&above)),
        holds,
        &format!(
            "no knee: the mean grows steadily, {:.2} ms per ms of epoch from {:.0} to {:.0} ms (a transaction waits \
             for its epoch to close before its message leaves, and read-only ones no longer spin, issue 54), so it \
             stays flat enough up to 20 ms but rises less than 15% above; the paper names no cost that starts at 20 ms",
            slope(&pts),
            pts[0].0,
            pts[pts.len() - 1].0
        ),
    ));
    cx.say("The paper's Fig. 6 values are described only qualitatively: the chart draws ours alone.");
    cx.figure(
        Figure::new(
            "cat-fig6",
            "Fig. 6: commit latency vs epoch length (uniform read-write, 150 clients)",
            "epoch length (ms)",
            "commit latency (ms)",
        )
        .ours("catenae mean", pts.iter().map(|p| (p.0, p.1)).collect())
        .ours("catenae p50", pts.iter().map(|p| (p.0, p.2)).collect())
        .mark(10.0, 10.0, " paper's epoch")
        .mark(20.0, 20.0, " paper: rises beyond")
        .no_paper_values("\"transaction commit latency starts to increase steadily with epoch length more than 20 ms\", and it chose 10 ms (§VII-B), both marked; its run had 75 clients per server, ours 150 clients in all."),
    );
    Ok(())
}

/// The mean's growth per ms of epoch, first point to last (0 with one point).
fn slope(pts: &[(f64, f64, f64)]) -> f64 {
    match (pts.first(), pts.last()) {
        (Some(a), Some(b)) if b.0 > a.0 => (b.1 - a.1) / (b.0 - a.0),
        _ => 0.0,
    }
}

/// One Fig. 5 or Fig. 7 point: (clients, mean latency ms, p50 ms, txn/s, abort fraction).
type Point = (f64, f64, f64, f64, f64);

/// The three systems of Figs. 5 and 7.
const PROTOCOLS: [&str; 3] = ["catenae", "pc-2pl", "pc-occ"];

/// Figs. 5 and 7's table for one workload: each of [`PROTOCOLS`] in this build on gcp3
/// with `w`, at each client count of `sweep` (spread over the 3 DCs, 20 transactions
/// each). Returns each protocol's points (a protocol not in this build has none and a
/// row that says so).
fn by_clients(cx: &mut Ctx, w: &str, sweep: &[u32]) -> Result<Vec<(&'static str, Vec<Point>)>> {
    cx.table(&["protocol", "clients", "lat mean", "lat p50", "tps", "abort", "check"]);
    let mut per = vec![];
    for p in PROTOCOLS {
        if !meridian_protocols::PROTOCOLS.contains(&p) {
            cx.row(vec![p.into(), "(not in this build)".into()]);
            continue;
        }
        let mut pts = vec![];
        for &clients in sweep {
            let c = cx.cfg(&gcp3(), w, 20 * clients as u64, clients, &[])?;
            let o = cx.run(p, &c)?;
            let r = &o.report;
            let abort = r.aborted as f64 / (r.committed + r.aborted).max(1) as f64;
            cx.row(vec![
                p.into(),
                clients.to_string(),
                f(r.latency_ms.mean, 1),
                f(r.latency_ms.p50, 1),
                f(r.throughput_tps, 1),
                format!("{:.1}%", 100.0 * abort),
                ok(&o).into(),
            ]);
            pts.push((
                clients as f64,
                r.latency_ms.mean,
                r.latency_ms.p50,
                r.throughput_tps,
                abort,
            ));
        }
        per.push((p, pts));
    }
    Ok(per)
}

/// `fg` with one series per protocol of `per` (as [`by_clients`] returns it): `pick` of
/// each point against its clients.
fn per_protocol(mut fg: Figure, per: &[(&str, Vec<Point>)], pick: &dyn Fn(&Point) -> f64) -> Figure {
    for (p, pts) in per {
        fg = fg.ours(p, pts.iter().map(|q| (q.0, pick(q))).collect());
    }
    fg
}

/// Per workload of `all` (each as [`by_clients`] returns it): the points of Catenae,
/// pc-2pl and pc-occ; `None` when the baselines are not in this build.
fn systems<'a>(all: &'a [Vec<(&str, Vec<Point>)>]) -> Option<Vec<[&'a [Point]; 3]>> {
    all.iter()
        .map(|per| {
            let get = |p: &str| per.iter().find(|x| x.0 == p).map(|x| x.1.as_slice());
            let (l, o) = (get("pc-2pl")?, get("pc-occ")?);
            Some([get("catenae").expect("catenae"), l, o])
        })
        .collect()
}

/// Catenae's throughput over the better baseline's, per client count.
fn tps_over_best([cat, l, o]: [&[Point]; 3]) -> Vec<f64> {
    (0..cat.len()).map(|i| cat[i].3 / l[i].3.max(o[i].3)).collect()
}

/// Fig. 5: the three systems against the number of clients.
fn fig5(cx: &mut Ctx) -> Result<()> {
    cx.say("Fig. 5: micro:records=100000,parts=1-5 on gcp3; latency (ms), throughput (txn/s), abort rate vs clients (spread over the 3 DCs)");
    cx.say("paper: catenae read-write commits in a little more than half an RTT (non-conflicting) or one RTT (conflicting); 2PL/OCC plateau under zipf 1 while catenae scales; read-only > 3x better for catenae");
    cx.say("RTTs: EU-US 105, US-AS 155, EU-AS 255 ms");
    cx.say("Baselines: pc-2pl locks and reads a transaction's declared keys at a majority of DCs in one round, then runs the commit round; pc-occ executes at the home DC and has every DC validate its reads in the commit round (the paper's OCC executes at every DC first: the same one round trip, see the paxoscommit module docs)");
    let workloads = [
        (
            "read-write uniform",
            "rw-uniform",
            "micro:records=100000,parts=1-5,dist=uniform,reads=0.5",
        ),
        (
            "read-write zipf1",
            "rw-zipf1",
            "micro:records=100000,parts=1-5,dist=zipf1,reads=0.5",
        ),
        (
            "read-only uniform",
            "ro-uniform",
            "micro:records=100000,parts=1-5,dist=uniform,reads=1",
        ),
        (
            "read-only zipf1",
            "ro-zipf1",
            "micro:records=100000,parts=1-5,dist=zipf1,reads=1",
        ),
    ];
    let sweep = cx.sweep(&[15u32, 60, 150, 300]);
    // Per workload, per protocol (absent: not in this build).
    let mut all: Vec<Vec<(&str, Vec<Point>)>> = vec![];
    for (label, _, w) in workloads {
        cx.say(format!("{label}:"));
        all.push(by_clients(cx, w, &sweep)?);
    }
    let why = zipf1_diagnosis(cx, workloads[1].2, &sweep)?;
    fig5_claims(cx, &all, &why);
    cx.say("The paper's Fig. 5 values are described only qualitatively (its text): the charts draw ours alone.");
    for ((label, stem, _), per) in workloads.iter().zip(&all) {
        let read_only = stem.starts_with("ro");
        let fig = |metric: &str, y: &str, pick: &dyn Fn(&Point) -> f64| {
            let mut fg = Figure::new(
                &format!("cat-fig5-{stem}-{metric}"),
                &format!("Fig. 5, {label}: {y} vs clients"),
                "clients (over 3 DCs)",
                y,
            );
            if read_only && metric != "abort" {
                // Catenae's local reads sit two orders of magnitude from the baselines.
                fg = fg.log_y();
            }
            per_protocol(fg, per, pick).no_paper_values(fig5_says(stem, metric))
        };
        let lat = fig("latency", "mean latency (ms)", &|q| q.1);
        let tps = fig("tps", "throughput (txn/s)", &|q| q.3);
        cx.figure(lat);
        cx.figure(tps);
        if !read_only {
            let abort = fig("abort", "abort rate (%)", &|q| 100.0 * q.4);
            cx.figure(abort);
        }
    }
    Ok(())
}

/// Where Catenae's zipf 1 latency goes as clients grow (issue 54 asked for a measured
/// cause of its sub-linear scaling): the same runs as the table's, read through the
/// coordinators' counters (summed over the three DCs). Returns the cause text.
fn zipf1_diagnosis(cx: &mut Ctx, w: &str, sweep: &[u32]) -> Result<String> {
    cx.say("read-write zipf1, where Catenae's time goes (counters summed over the three coordinators; blocked: decided and executed here, then waiting for an earlier epoch's conflict set on a shared key to commit first; catch-ups: commits that waited for another DC's update operations, their DC's execution having lost the vote, one more round trip; re-executed: commits whose speculative reads were no longer the committed values, re-run locally)");
    cx.table(&[
        "clients",
        "lat mean",
        "blocked",
        "wait when blocked",
        "wait per txn",
        "stall valves",
        "cycle aborts",
        "no majority",
        "catch-ups",
        "re-executed",
    ]);
    let mut rows = vec![];
    for &clients in sweep {
        let c = cx.cfg(&gcp3(), w, 20 * clients as u64, clients, &[])?;
        let o = cx.run("catenae", &c)?;
        let sched = stat(&o, "scheduled").max(1.0);
        let (b, bms) = (stat(&o, "blocked"), stat(&o, "blocked_ms"));
        let row = (
            clients,
            o.report.latency_ms.mean,
            b / sched,
            bms / b.max(1.0),
            bms / sched,
            stat(&o, "stalls"),
            stat(&o, "cycles"),
            stat(&o, "no_majority"),
            stat(&o, "caught_up"),
        );
        cx.row(vec![
            clients.to_string(),
            f(row.1, 1),
            format!("{:.1}%", 100.0 * row.2),
            format!("{:.1} ms", row.3),
            format!("{:.1} ms", row.4),
            format!("{}", row.5),
            format!("{}", row.6),
            format!("{}", row.7),
            format!("{}", row.8),
            format!("{}", stat(&o, "spec_redone")),
        ]);
        rows.push(row);
    }
    let (Some(a), Some(z)) = (rows.first(), rows.last()) else {
        return Ok(String::new());
    };
    Ok(format!(
        "measured: from {} to {} clients the mean latency rises {:.0} -> {:.0} ms; waiting, decided and executed, \
         for an earlier epoch's conflict set on a shared hot key accounts for {:.0} ms of that per transaction \
         ({:.0}% of transactions wait, {:.0} ms each); the tail comes with {} catch-ups (a DC whose execution \
         lost the vote waits one more round trip for a majority DC's update operations, and every later \
         conflict set on its keys waits behind it), {} stall-valve firings (500 ms each) and {} dependency-cycle \
         and {} no-majority aborts (against {}, {}, {} and {} at {} clients)",
        a.0,
        z.0,
        a.1,
        z.1,
        z.4 - a.4,
        100.0 * z.2,
        z.3,
        z.8,
        z.5,
        z.6,
        z.7,
        a.8,
        a.5,
        a.6,
        a.7,
        a.0
    ))
}

/// Fig. 5's claims (§VII-C's text), from the points of every workload and protocol;
/// `why` is the measured cause of Catenae's zipf 1 scaling.
fn fig5_claims(cx: &mut Ctx, all: &[Vec<(&str, Vec<Point>)>], why: &str) {
    let Some(s) = systems(all) else {
        return; // the baselines are not in this build
    };
    let at = "§VII-C, Fig. 5";
    let list = |v: &[f64]| v.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", ");
    for (w, name, cause) in [
        (
            0,
            "read-write uniform",
            "pc-occ's closed-loop clients wait one RTT to the nearest majority (EU-US 105 ms) where Catenae's \
             median waits for the farthest DC's epoch message (EU-AS 127.5 ms one way, plus the epoch)",
        ),
        (1, "read-write zipf 1", ""),
    ] {
        let x = tps_over_best(s[w]);
        cx.claim(Claim::shape(
            PAPER,
            at,
            &format!("{name}: Catenae's throughput above 2PL's and OCC's at every client count"),
            "yes",
            format!("Catenae / best baseline: {}", list(&x)),
            x.iter().all(|r| *r > 1.0),
            cause,
        ));
    }
    let scale = |pts: &[Point]| pts[pts.len() - 1].3 / pts[0].3;
    let [cat, l, occ] = s[1];
    let clients_x = cat[cat.len() - 1].0 / cat[0].0;
    let (cs, ls, os) = (scale(cat), scale(l), scale(occ));
    cx.claim(Claim::shape(
        PAPER,
        at,
        "read-write zipf 1: Catenae scales nearly linearly while 2PL and OCC plateau (here: Catenae's throughput \
         grows >= 0.75x as much as the clients and more than either baseline's)",
        "yes",
        format!("throughput x{cs:.1} (Catenae), x{ls:.1} (2PL), x{os:.1} (OCC) for x{clients_x:.0} clients"),
        cs >= 0.75 * clients_x && cs > ls.max(os),
        &format!(
            "Catenae's zipf 1 p50 latency rises with load ({:.0} to {:.0} ms) while pc-occ's clients keep a \
             one-RTT cycle, so its throughput keeps growing despite its aborts; {why}",
            cat[0].2,
            cat[cat.len() - 1].2
        ),
    ));
    let cat_max = cat.iter().map(|q| q.4).fold(0.0, f64::max);
    let occ_min = occ.iter().map(|q| q.4).fold(f64::INFINITY, f64::min);
    let occ_max = occ.iter().map(|q| q.4).fold(0.0, f64::max);
    cx.claim(Claim::shape(
        PAPER,
        at,
        "read-write zipf 1: Catenae keeps a low abort rate where OCC's is significant (here: Catenae < 10%, \
         OCC > 20% at every client count)",
        "yes",
        format!(
            "Catenae <= {:.1}%, OCC {:.1}-{:.1}%",
            100.0 * cat_max,
            100.0 * occ_min,
            100.0 * occ_max
        ),
        cat_max < 0.1 && occ_min > 0.2,
        "",
    ));
    // Read-only: > 3x in latency and throughput over the better baseline, both workloads.
    let (mut tps_x, mut lat_x) = (f64::INFINITY, f64::INFINITY);
    for w in [2, 3] {
        let [cat, l, o] = s[w];
        for i in 0..cat.len() {
            tps_x = tps_x.min(cat[i].3 / l[i].3.max(o[i].3));
            lat_x = lat_x.min(l[i].1.min(o[i].1) / cat[i].1);
        }
    }
    cx.claim(Claim::shape(
        PAPER,
        at,
        "read-only: Catenae more than 3x better than 2PL and OCC in latency and throughput",
        "> 3x",
        format!("at least {tps_x:.1}x throughput, {lat_x:.1}x mean latency"),
        tps_x > 3.0 && lat_x > 3.0,
        "",
    ));
}

/// The TPC-C setting of Fig. 7: 100 districts (ten warehouses' worth under TPC-C's ten
/// per warehouse; the paper names neither), 100,000 items.
const TPCC: &str = "tpcc:districts=100,items=100000";

/// Fig. 7: TPC-C NewOrder and OrderStatus against the number of clients.
fn fig7(cx: &mut Ctx) -> Result<()> {
    cx.say(format!(
        "Fig. 7: {TPCC} on gcp3, NewOrder alone and OrderStatus alone; latency (ms), throughput (txn/s), abort rate vs clients (spread over the 3 DCs)"
    ));
    cx.say("paper: NewOrder: 2PL and OCC reach about half of Catenae's throughput, with about twice its latency; OCC aborts significantly, Catenae rarely; OrderStatus: Catenae more than twice the throughput with nearly 70% less latency");
    cx.say("Baselines as in Fig. 5: pc-2pl locks the declared rows in one round (a declared range's rows as it reads them), pc-occ executes at the home DC and validates at every DC (the paper's OCC executes at every DC first; the same one round trip)");
    cx.say("Catenae declares a NewOrder's order, new-order and order-line rows as its district's ranges (their id is read) and an OrderStatus's orders the same way; each reads its ranges' rows at the snapshot after the range's server found no undecided writer");
    let workloads = [("NewOrder", "new-order"), ("OrderStatus", "order-status")];
    let sweep = cx.sweep(&[15u32, 60, 150, 300]);
    let mut all: Vec<Vec<(&str, Vec<Point>)>> = vec![];
    for (label, txn) in workloads {
        let w = format!("{TPCC},txn={txn}");
        cx.say(format!("{label} (`{w}`):"));
        all.push(by_clients(cx, &w, &sweep)?);
    }
    fig7_claims(cx, &all);
    cx.say("The paper's Fig. 7 values are described only in its text: the charts draw ours alone.");
    for ((label, txn), per) in workloads.iter().zip(&all) {
        let fig = |metric: &str, y: &str, pick: &dyn Fn(&Point) -> f64| {
            let fg = Figure::new(
                &format!("cat-fig7-{txn}-{metric}"),
                &format!("Fig. 7, TPC-C {label}: {y} vs clients"),
                "clients (over 3 DCs)",
                y,
            )
            .log_y();
            per_protocol(fg, per, pick).no_paper_values(if *txn == "new-order" {
                "Catenae \"is able to scale up from 25 clients/server to 100 clients/server\", while 2PL and OCC \"only achieve roughly half of the throughput comparing to Catenae, which causes the doubling of latency\" (§VII-D): ratios without a base value, compared in the claims."
            } else {
                "\"Catenae achieves more than twice the throughput of 2PL and OCC with nearly 70% less commit latency\" (§VII-D): ratios without a base value, compared in the claims."
            })
        };
        cx.figure(fig("latency", "mean latency (ms)", &|q| q.1));
        cx.figure(fig("tps", "throughput (txn/s)", &|q| q.3));
    }
    Ok(())
}

/// Fig. 7's claims (§VII-D's text).
fn fig7_claims(cx: &mut Ctx, all: &[Vec<(&str, Vec<Point>)>]) {
    let Some(s) = systems(all) else {
        return; // the baselines are not in this build
    };
    let at = "§VII-D, Fig. 7";
    let peak = |pts: &[Point]| pts.iter().map(|q| q.3).fold(0.0, f64::max);
    let [cat, l, occ] = s[0];
    let tps_x = peak(cat) / peak(l).max(peak(occ));
    cx.claim(
        Claim::numeric(
            PAPER,
            at,
            "NewOrder: Catenae's peak throughput over the better baseline's (2PL and OCC reach \"roughly half\")",
            2.0,
            tps_x,
            "x",
            0.25,
        )
        .because(&{
            let aborts = |pts: &[Point]| {
                let lo = pts.iter().map(|q| q.4).fold(f64::INFINITY, f64::min);
                let hi = pts.iter().map(|q| q.4).fold(0.0, f64::max);
                format!("{:.0}-{:.0}%", 100.0 * lo, 100.0 * hi)
            };
            format!(
                "both baselines serialize on the 100 districts' rows (each NewOrder takes its district's next order \
                 id): pc-occ aborts {} of NewOrders at validation, and pc-2pl, which locks the declared rows in one \
                 round (about 6 WAN trips), waits or is wounded there ({} aborts, mean latency up to {:.0} ms): both \
                 fall further behind Catenae than the paper's",
                aborts(occ),
                aborts(l),
                l.iter().map(|q| q.1).fold(0.0, f64::max)
            )
        }),
    );
    // Latency at the largest client count: the better baseline's mean over Catenae's.
    let last = cat.len() - 1;
    let lat_x = l[last].1.min(occ[last].1) / cat[last].1;
    cx.claim(
        Claim::numeric(
            PAPER,
            at,
            "NewOrder: the better baseline's mean latency over Catenae's at the most clients (\"doubling of latency\")",
            2.0,
            lat_x,
            "x",
            0.25,
        )
        .because(
            "pc-occ answers after one RTT to the nearest majority (EU-US 105 ms) plus its validation, close to \
         Catenae's one-way trip to the farthest DC's epoch message plus the epoch; the paper's baselines took \
         about twice Catenae's",
        ),
    );
    let cat_max = cat.iter().map(|q| q.4).fold(0.0, f64::max);
    let occ_min = occ.iter().map(|q| q.4).fold(f64::INFINITY, f64::min);
    cx.claim(Claim::shape(
        PAPER,
        at,
        "NewOrder: Catenae keeps a very low abort rate where OCC's is significant (here: Catenae < 5%, OCC > 10% \
         at every client count; TPC-C's 1% rolled-back NewOrders count as aborts)",
        "yes",
        format!("Catenae <= {:.1}%, OCC >= {:.1}%", 100.0 * cat_max, 100.0 * occ_min),
        cat_max < 0.05 && occ_min > 0.1,
        "",
    ));
    let [cat, l, o] = s[1];
    let tps_min = tps_over_best(s[1]).into_iter().fold(f64::INFINITY, f64::min);
    let lat_max = (0..cat.len())
        .map(|i| cat[i].1 / l[i].1.min(o[i].1))
        .fold(0.0f64, f64::max);
    cx.claim(Claim::shape(
        PAPER,
        at,
        "OrderStatus: Catenae more than twice the throughput of 2PL and OCC at every client count",
        "> 2x",
        format!("at least {tps_min:.1}x"),
        tps_min > 2.0,
        "",
    ));
    cx.claim(
        Claim::numeric(
            PAPER,
            at,
            "OrderStatus: Catenae's mean latency over the better baseline's (\"nearly 70% less\"; the largest ratio \
         over the client counts)",
            0.3,
            lat_max,
            "x",
            0.25,
        )
        .because(
            "our read-only transactions take no WAN trip at all (local snapshot reads, tested), so Catenae's \
         latency is a LAN round trip or two against the baselines' WAN round trip: far below the paper's 30%",
        ),
    );
}

/// §VIII-B: AS is out from 2 s to 12 s; clients in EU and US. Without majority mode an
/// epoch waits for every DC's message, so nothing commits while AS is out; with
/// `majority=on` EU and US abandon AS's messages by consensus and go on.
fn outage(cx: &mut Ctx) -> Result<()> {
    let w = "ycsb:keys=10000";
    cx.say(format!(
        "§VIII-B: {w} on gcp3, 12 clients in EU and US, AS out from 2 s to 12 s; committed transactions per second"
    ));
    cx.say("paper: without majority mode scheduling blocks until the failed DC's epoch messages arrive; majority mode lets Catenae operate through failures, at the cost of catching up (no figure)");
    cx.table(&[
        "mode",
        "1-2 s",
        "3-12 s (per s)",
        "13-14 s",
        "abandoned",
        "aborted",
        "check",
    ]);
    let modes = [("every DC", "catenae"), ("majority", "catenae:majority=on")];
    let runs = through_fault(cx, w, 2400, &["EU", "US"], "outage:dc=AS,at=2s,for=10s", &modes)?;
    let mut rates = vec![];
    for (label, o, per) in &runs {
        let during = per[3..12].iter().sum::<u64>() as f64 / 9.0;
        cx.row(vec![
            label.to_string(),
            per[1].to_string(),
            f(during, 1),
            per[13].to_string(),
            f(stat(o, "abandoned"), 0),
            o.report.aborted.to_string(),
            ok(o).into(),
        ]);
        rates.push((per[1] as f64, during));
    }
    let at = "§VIII-B";
    cx.claim(blocked(
        at,
        "without majority mode a DC outage blocks scheduling until the DC is back (here: no commit from 3 s to 12 s)",
        "outage",
        rates[0].1,
    ));
    cx.claim(Claim::shape(
        PAPER,
        at,
        "majority mode keeps operating through a DC failure (here: at least 70% of the rate of the second before it)",
        "yes",
        format!("{:.1} commits/s during against {:.0} before", rates[1].1, rates[1].0),
        rates[1].1 >= 0.7 * rates[1].0,
        "",
    ));
    let fg = Figure::new(
        "cat-outage",
        "§VIII-B: commits per second through a 10 s outage of AS (2-12 s)",
        "time (s)",
        "commits per second",
    )
    .mark(2.0, 12.0, "AS down");
    let fg = fg.beyond_paper("§VIII-B describes in words what an outage does (\"An outage of a DC could cause other DCs to block waiting for its epoch message\"; with majority epochs Catenae goes on \"with a significant overhead for catching up\") and measures nothing.");
    cx.figure(per_second_series(fg, &runs));
    Ok(())
}

/// Runs each `(label, protocol)` of `modes` on gcp3 under `faults`: `txns` transactions
/// from 12 clients in `dcs` (at least `txns` in quick mode too, so the runs span the
/// faults). Each run comes with its commits per second.
#[allow(clippy::type_complexity)]
fn through_fault(
    cx: &mut Ctx,
    w: &str,
    txns: u64,
    dcs: &[&str],
    faults: &str,
    modes: &[(&'static str, &str)],
) -> Result<Vec<(&'static str, SimOutput, [u64; 20])>> {
    let mut out = vec![];
    for (label, p) in modes {
        let mut c = cx.cfg(&gcp3(), w, txns, 12, dcs)?;
        c.txns = txns;
        c.faults = faults.into();
        let o = cx.run(p, &c)?;
        let per = per_second(&o);
        out.push((*label, o, per));
    }
    Ok(out)
}

/// The claim that nothing commits during the `fault` (the mode without its remedy):
/// `rate`, the commits per second measured during it, is zero.
fn blocked(at: &str, claim: &str, fault: &str, rate: f64) -> Claim {
    Claim::shape(
        PAPER,
        at,
        claim,
        "yes",
        format!("{rate:.1} commits/s during the {fault}"),
        rate == 0.0,
        "",
    )
}

/// `fg` with one series per run of [`through_fault`]: its commits per second.
fn per_second_series(mut fg: Figure, runs: &[(&'static str, SimOutput, [u64; 20])]) -> Figure {
    for (label, _, per) in runs {
        fg = fg.ours(label, per_second_points(per));
    }
    fg
}

/// Commits per second of a run, over its first 20 s.
fn per_second(o: &SimOutput) -> [u64; 20] {
    let mut per = [0u64; 20];
    for t in &o.history.txns {
        if t.outcome == meridian_core::Outcome::Committed {
            if let Some(e) = t.end {
                if let Some(x) = per.get_mut((e / 1_000_000_000) as usize) {
                    *x += 1;
                }
            }
        }
    }
    per
}

/// [`per_second`] as figure points at each second's middle.
fn per_second_points(per: &[u64]) -> Vec<(f64, f64)> {
    per.iter()
        .enumerate()
        .map(|(i, n)| (i as f64 + 0.5, *n as f64))
        .collect()
}

/// The longest time without a commit between `from` and `to` (ns), from the run's
/// commit times.
fn longest_gap(o: &SimOutput, from: u64, to: u64) -> u64 {
    let mut ends: Vec<u64> = o
        .history
        .txns
        .iter()
        .filter(|t| t.outcome == meridian_core::Outcome::Committed)
        .filter_map(|t| t.end)
        .filter(|e| *e > from && *e < to)
        .collect();
    ends.sort_unstable();
    let mut last = from;
    let mut gap = 0;
    for e in ends.into_iter().chain(std::iter::once(to)) {
        gap = gap.max(e - last);
        last = e;
    }
    gap
}

/// §IV: EU's coordinator (node 0, also a chain server) crashes at 2 s and restarts at
/// 12 s; clients in every DC. Without a secondary every DC waits for EU's epoch
/// messages, so nothing commits until it is back; with `secondary=on` EU's second node
/// takes over after the fail-over timeout (1 s) and one round trip to the other DCs.
fn failover(cx: &mut Ctx) -> Result<()> {
    let w = "ycsb:keys=10000";
    cx.say(format!(
        "§IV: {w} on gcp3, 12 clients in EU, US and AS, EU's coordinator node crashed from 2 s to 12 s; committed transactions per second"
    ));
    cx.say("paper: \"an optional secondary coordinator for each DC that stands by the coordinator in that DC ... becomes primary coordinator when the coordinator fails\" (no figure)");
    cx.table(&[
        "mode",
        "1-2 s",
        "4-12 s (per s)",
        "longest gap (s)",
        "13-14 s",
        "takeovers",
        "check",
    ]);
    let modes = [("no secondary", "catenae"), ("secondary", "catenae:secondary=on")];
    let runs = through_fault(cx, w, 3000, &["EU", "US", "AS"], "crash:node=0,at=2s,for=10s", &modes)?;
    let mut rates = vec![];
    for (label, o, per) in &runs {
        let during = per[4..12].iter().sum::<u64>() as f64 / 8.0;
        let gap = longest_gap(o, 2_000_000_000, 12_000_000_000) as f64 / 1e9;
        cx.row(vec![
            label.to_string(),
            per[1].to_string(),
            f(during, 1),
            f(gap, 2),
            per[13].to_string(),
            f(stat(o, "takeovers"), 0),
            ok(o).into(),
        ]);
        rates.push((per[1] as f64, during, gap));
    }
    let at = "§IV";
    cx.claim(blocked(
        at,
        "without a secondary a coordinator's failure blocks every DC until it is back (here: no commit from 4 s to 12 s)",
        "crash",
        rates[0].1,
    ));
    cx.claim(Claim::shape(
        PAPER,
        at,
        "the secondary becomes coordinator when the coordinator fails (here: commits resume within 2 s and run at \
         half the rate before or more; the crashed node is also a chain server, whose shard waits in EU)",
        "yes",
        format!(
            "{:.1} commits/s during against {:.0} before; longest gap {:.2} s",
            rates[1].1, rates[1].0, rates[1].2
        ),
        rates[1].1 >= 0.5 * rates[1].0 && rates[1].2 < 2.0,
        "",
    ));
    let fg = Figure::new(
        "cat-failover",
        "§IV: commits per second through a crash of EU's coordinator (2-12 s)",
        "time (s)",
        "commits per second",
    )
    .mark(2.0, 12.0, "EU's coordinator down")
    .beyond_paper("§IV names an optional secondary coordinator that \"becomes primary coordinator when the coordinator fails\" and measures nothing.");
    cx.figure(per_second_series(fg, &runs));
    Ok(())
}
