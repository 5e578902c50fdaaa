//! §IV-B, validation off (the paper's network-only mode): `hv-fig2` (throughput against
//! clients, read where each system saturates, and batching's gain against the per-item
//! CPU cost), `hv-fig3` (latency against clients) and `hv-fig4` (latency against batch
//! size).

use super::sweep::{
    knee_at, label, paper_cfg, paper_cfg_item, systems, table, Group, CLIENTS, CLIENTS_TO_SATURATION, LOCK1, LOCK10,
    LOCK50, PER_ITEM_NS, PER_MSG_NS, TS50, TWO_PC,
};
use super::{pct, PAPER};
use crate::experiments::{f, ok, Claim, Ctx, Figure, Source, Status};
use anyhow::Result;
use meridian_sim::SimOutput;

/// Validation off: hier-ts at batch 1 and 10 lie on hier-lock's curves.
const OFF: [usize; 5] = [TWO_PC, LOCK1, LOCK10, LOCK50, TS50];
/// Says which validation-off series the chart leaves out.
const OFF_NOTE: &str = "hier-ts at batch 1 and 10 measures within 0.2% of hier-lock (table) and would hide its curves, so the chart leaves them out.";

/// Why hier-ts costs what hier-lock does here.
const PER_MSG: &str =
    "the simulator charges per message, not per byte, so hier-ts's bigger messages cost what hier-lock's do";

/// The root's per-message cap at batch 1 (EVALUATION.md, Figs. 2 and 3).
const ROOT_CAP: &str = "the root handles 8 votes per transaction, one message each, one input at a time: at 4 cores it caps batch 1 below 2PC; batch 10 already lifts that cap";
/// Why batch 10 saturates later than the paper's (hv-fig3's batch-10 claim had
/// [`ROOT_CAP`]'s text, which is about batch 1, until stop 72).
const BATCH10_LATER: &str = "batch 10 packs the root's 8 votes per transaction into a tenth of the messages, so the root no longer saturates first: latency passes +25% only at 260 clients; the paper's batch 10 saturates with 2PC, so its cost per item unpacked may be higher than our uncalibrated fifth of a message (hv-fig2's sensitivity table)";

/// Whether a sweep reached saturation: its best throughput is not at its last client
/// count, or the last step gained less than 3%.
fn saturated(runs: &[(u32, SimOutput)]) -> bool {
    let t: Vec<f64> = runs.iter().map(|(_, o)| o.report.throughput_tps).collect();
    let best = t.iter().copied().fold(0.0, f64::max);
    match t.as_slice() {
        [.., a, b] => *b < best || *b < 1.03 * *a,
        _ => false,
    }
}

/// Says where each of `which` reached its maximum throughput, and whether it had
/// saturated there (the paper reads its gains at saturation, §IV-B1).
fn saturation(cx: &mut Ctx, g: &Group, which: &[usize]) {
    let parts: Vec<String> = which
        .iter()
        .map(|&i| {
            let runs = &g.runs[i].1;
            let (n, best) = runs
                .iter()
                .map(|(n, o)| (*n, o.report.throughput_tps))
                .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
            let sat = if saturated(runs) { "saturated" } else { "NOT saturated" };
            format!("{} {best:.0} at {n} ({sat})", label(&g.runs[i].0))
        })
        .collect();
    cx.say(format!(
        "Max throughput read where each system saturates (the paper's reading): {}.",
        parts.join("; ")
    ));
}

/// Per-item costs (ns per unpacked batch item or key operation) of the sensitivity table.
const ITEM_COSTS: [u64; 6] = [0, 6_000, 12_000, 24_000, 48_000, 120_000];
/// Client counts at which the sensitivity runs look for a system's maximum.
const ITEM_CLIENTS: [u32; 4] = [300, 400, 500, 600];

/// What batching gains as a function of the uncalibrated cost of one unpacked batch
/// item, and which cost the paper's own +23% implies (issue 56). With validation off
/// only unpacking is charged per item, so 2PC's maximum does not depend on it.
fn item_cost(cx: &mut Ctx, g: &Group) -> Result<()> {
    let base = g.best[TWO_PC].1;
    let points = cx.sweep(&ITEM_CLIENTS);
    let costs = if cx.quick {
        vec![0, PER_ITEM_NS, PER_MSG_NS]
    } else {
        ITEM_COSTS.to_vec()
    };
    cx.say(format!(
        "Sensitivity: max throughput over 2PC's ({base:.0} txn/s) as the CPU cost of one unpacked batch item varies \
         (the runs above charge {} µs, a fifth of a message; the best of {} clients)",
        PER_ITEM_NS / 1000,
        points.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
    ));
    cx.table(&["item cost µs (of a message)", "hier-lock b10", "hier-lock b50", "check"]);
    let systems = systems(false, false);
    let mut b50 = vec![];
    for &cost in &costs {
        let mut row = vec![format!("{} ({:.2})", cost / 1000, cost as f64 / PER_MSG_NS as f64)];
        let mut all_ok = true;
        for i in [LOCK10, LOCK50] {
            let mut best = 0.0f64;
            for &n in &points {
                let c = paper_cfg_item(cx, n, cost)?;
                let o = cx.run(&systems[i], &c)?;
                all_ok &= o.report.check.ok();
                best = best.max(o.report.throughput_tps);
            }
            row.push(format!("{:.2}", best / base));
            if i == LOCK50 {
                b50.push((cost as f64, best / base));
            }
        }
        row.push(if all_ok { "ok" } else { "FAIL" }.to_string());
        cx.row(row);
    }
    // The cost at which batch 50's gain is the paper's 1.23, between two measured points.
    let implied = b50.windows(2).find_map(|w| {
        let ((c0, g0), (c1, g1)) = (w[0], w[1]);
        ((g0 - 1.23) * (g1 - 1.23) <= 0.0 && g0 != g1).then(|| c0 + (c1 - c0) * (g0 - 1.23) / (g0 - g1))
    });
    cx.say(match implied {
        Some(c) => format!(
            "The paper's +23% for hier-lock batch 50 implies an item cost of about {:.0} µs, {:.2} of a message \
             (linear between the two measured costs around it); at the {} µs charged above, batching gains {} than in the paper.",
            c / 1000.0,
            c / PER_MSG_NS as f64,
            PER_ITEM_NS / 1000,
            if c > PER_ITEM_NS as f64 { "more" } else { "less" }
        ),
        None => "No item cost in the table gives hier-lock batch 50 the paper's +23%: the gain does not cross 1.23 within it.".to_string(),
    });
    Ok(())
}

pub(super) fn fig2(cx: &mut Ctx) -> Result<()> {
    cx.say("Fig. 2: throughput (committed txn/s) vs clients, validation off (§IV-B), rmw 8 ops on 8 distinct nodes, 800k objects");
    cx.say("paper: batch 1 and 10 saturate at ~180 clients like 2PC, batch 50 at ~260; max throughput +23% (hier-lock), +15% (hier-ts)");
    let g = table(cx, "tput", false, false, &CLIENTS_TO_SATURATION)?;
    saturation(cx, &g, &OFF);
    let fig = Figure::new(
        "hv-fig2",
        "Fig. 2: throughput vs clients, validation off",
        "clients",
        "throughput (committed txn/s)",
    )
    .mark(180.0, 180.0, " paper: batch 1, 10 saturate")
    .mark(260.0, 260.0, " paper: batch 50 saturates")
    .note("The paper's text gives no throughput values for Fig. 2, only where the systems saturate (marked: batch 1 and 10 \"when 180 clients\", batch 50 \"when 260 clients are used\", §IV-B1) and batching's gain in maximum throughput over 2PC (+23% hier-lock, +15% hier-ts, compared in the claims; 2PC's own throughput is not stated, so the gains cannot be drawn). Our copy of the paper has its caption but not its image, so nothing more can be read off.");
    cx.figure(g.plot(fig, true, &OFF));
    cx.say(OFF_NOTE);
    cx.say("The paper states no throughput values for Fig. 2 (only its saturation points and gains, in the claims below), so the chart shows our runs alone.");
    let at = "Fig. 2, §IV-B1";
    let (lock50, ts50) = (g.gain(LOCK50), g.gain(TS50));
    cx.claim(g.gain_claim(
        at,
        "max throughput, hier-lock batch 50 over 2PC, validation off",
        1.23,
        LOCK50,
        "batching lifts the root's per-message cap further than in the paper, and our 2PC's latency knee comes early (140 clients)",
    ));
    cx.claim(g.gain_claim(
        at,
        "max throughput, hier-ts batch 50 over 2PC, validation off",
        1.15,
        TS50,
        PER_MSG,
    ));
    cx.claim(Claim::shape(
        PAPER,
        at,
        "hier-ts batch 50 below hier-lock batch 50 (bigger messages)",
        "+15% vs +23% over 2PC",
        format!("{} vs {}", pct(ts50, 1.0), pct(lock50, 1.0)),
        ts50 < 0.99 * lock50,
        PER_MSG,
    ));
    for (b, i) in [(1, LOCK1), (10, LOCK10)] {
        let claim = format!("max throughput, hier-lock batch {b} over 2PC (alike: both saturate at ~180 clients)");
        cx.claim(g.gain_claim(at, &claim, 1.0, i, ROOT_CAP));
    }
    item_cost(cx, &g)?;
    Ok(())
}

pub(super) fn fig3(cx: &mut Ctx) -> Result<()> {
    cx.say("Fig. 3: mean latency (ms) vs clients, validation off (§IV-B)");
    cx.say("paper: 2PC ~33 ms and batch 1/10 ~29-31 ms until ~180 clients; batch 50 higher from the start but flat until ~260");
    let g = table(cx, "lat", false, false, &CLIENTS)?;
    // §IV-B2 states the latencies at 100 clients (the setting of Fig. 3, validation off).
    let at100 = |ms: f64| vec![(100.0, ms)];
    let fig = Figure::new(
        "hv-fig3",
        "Fig. 3: latency vs clients, validation off",
        "clients",
        "mean latency (ms)",
    );
    cx.figure(
        g.plot(fig, false, &OFF)
            .paper("2PC at 100 clients", Source::PaperText, at100(33.0))
            .paper("hier-lock b1 & ts b1 at 100 clients", Source::PaperText, at100(29.0))
            .paper("hier-lock b10 & ts b10 at 100 clients", Source::PaperText, at100(31.0))
            .paper("hier-lock b50 at 100 clients", Source::PaperText, at100(40.0))
            .paper("hier-ts b50 at 100 clients", Source::PaperText, at100(45.0)),
    );
    cx.say(OFF_NOTE);
    cx.say("The paper states Fig. 3's latencies only at 100 clients (§IV-B2, the setting of Fig. 4): those are its points here; its curves are described in words.");
    let at = "Fig. 3, §IV-B1";
    cx.claim(g.knee_claim(
        at,
        "2PC saturation point (latency 25% above its 20-client value)",
        180.0,
        TWO_PC,
        "queueing spreads over 8 nodes: our 2PC's latency passes +25% at 140 clients while its throughput keeps rising slowly past 180",
    ));
    cx.claim(g.knee_claim(at, "hier-lock batch 1 saturation point", 180.0, LOCK1, ROOT_CAP));
    cx.claim(g.knee_claim(at, "hier-lock batch 10 saturation point", 180.0, LOCK10, BATCH10_LATER));
    let runs50 = &g.runs[LOCK50].1;
    let last = runs50.last().map_or(0, |r| r.0);
    cx.claim(match knee_at(runs50) {
        Some(k) => Claim::numeric(
            PAPER,
            "Fig. 3, §IV-B1",
            "hier-lock batch 50 saturation point",
            260.0,
            k as f64,
            "clients",
            0.15,).because("batch 50's latency, high from the start (batch filling), stays flat longer than the paper's"),
        None => Claim::shape(
            PAPER,
            "Fig. 3, §IV-B1",
            "hier-lock batch 50 saturation point",
            "~260 clients",
            format!("beyond {last} clients"),
            true,
            "",
        )
        .with_status(
            Status::Partly,
            "batch 50's latency, high from the start (batch filling), stays within 25% of its 20-client value up to the last client count: it saturates after batch 1, as in the paper, but beyond the paper's 260",
        ),
    });
    let (l50, l1) = (g.lat(LOCK50)[0], g.lat(LOCK1)[0]);
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 3, §IV-B1",
        "batch 50's latency higher than batch 1's from the start (time to fill a batch)",
        "higher",
        format!("{:.1} vs {:.1} ms at {} clients", l50.1, l1.1, l1.0),
        l50.1 > l1.1,
        "batches fill without waiting at low load",
    ));
    Ok(())
}

/// Fig. 4: latency against batch size at 100 clients.
pub(super) fn fig4(cx: &mut Ctx) -> Result<()> {
    cx.say("Fig. 4: mean latency (ms) vs batch size at 100 clients, validation off; flush timeout 10 ms (default) and 100 ms");
    cx.say("paper: 2PC 33 ms; hierarchy 29 ms at batch 1, 31 at 10, 35 at 25, 40 (lock) / 45 (ts) at 50 (+50%), +75% at 75, +150% at 100");
    let c = paper_cfg(cx, 100)?;
    let base = cx.run("2pc-deferred:validate=off", &c)?;
    let two_pc = base.report.latency_ms.mean;
    cx.say(format!("2pc-deferred: {two_pc:.1} ms (paper 33)  {}", ok(&base)));
    let paper = |b: u32| -> &'static str {
        match b {
            1 => "29",
            10 => "31",
            25 => "35",
            50 => "40/45",
            75 => "~51",
            100 => "~73",
            _ => "-",
        }
    };
    cx.table(&[
        "batch",
        "paper",
        "lock 10ms",
        "ts 10ms",
        "lock 100ms",
        "ts 100ms",
        "lock +%",
        "check",
    ]);
    let mut b1 = 0.0;
    // (batch, [lock 10ms, ts 10ms, lock 100ms, ts 100ms]).
    let mut rows: Vec<(u32, Vec<f64>)> = vec![];
    for b in cx.sweep(&[1u32, 10, 25, 50, 75, 100]) {
        let mut row = vec![];
        let mut oks = vec![];
        for flush in ["10ms", "100ms"] {
            for p in ["hier-lock", "hier-ts"] {
                let o = cx.run(&format!("{p}:validate=off,batch={b},flush={flush}"), &c)?;
                row.push(o.report.latency_ms.mean);
                oks.push(ok(&o));
            }
        }
        if b == 1 {
            b1 = row[0];
        }
        cx.row(vec![
            b.to_string(),
            paper(b).to_string(),
            f(row[0], 1),
            f(row[1], 1),
            f(row[2], 1),
            f(row[3], 1),
            pct(row[0], b1),
            if oks.iter().all(|s| *s == "ok") { "ok" } else { "FAIL" }.to_string(),
        ]);
        rows.push((b, row));
    }
    cx.say("lock +%: hier-lock (10 ms flush) over its batch-1 latency; the paper's ~+50% at 50, +75% at 75, +150% at 100 are over the unbatched latency");

    // The paper's Fig. 4 as stated in §IV-B2: 29, 31, 35 ms at batch 1, 10, 25 for both;
    // 40 (lock) and 45 (ts) at 50; +75% and +150% over the unbatched 29 ms at 75 and 100.
    let paper_lock = [
        (1.0, 29.0),
        (10.0, 31.0),
        (25.0, 35.0),
        (50.0, 40.0),
        (75.0, 29.0 * 1.75),
        (100.0, 29.0 * 2.5),
    ];
    let paper_ts = [(1.0, 29.0), (10.0, 31.0), (25.0, 35.0), (50.0, 45.0)];
    let col = |k: usize| -> Vec<(f64, f64)> { rows.iter().map(|(b, r)| (*b as f64, r[k])).collect() };
    let (bmin, bmax) = (rows[0].0 as f64, rows[rows.len() - 1].0 as f64);
    cx.figure(
        Figure::new(
            "hv-fig4",
            "Fig. 4: latency vs batch size at 100 clients, validation off",
            "batch size (transactions per batch)",
            "mean latency (ms)",
        )
        .ours("hier-lock, 10 ms flush", col(0))
        .ours("hier-ts, 10 ms flush", col(1))
        .ours("2PC (no batching)", vec![(bmin, two_pc), (bmax, two_pc)])
        .ours("hier-lock, 100 ms flush", col(2))
        .paper(
            "hier-lock (75, 100: +75%, +150% over 29 ms)",
            Source::PaperText,
            paper_lock.to_vec(),
        )
        .paper("hier-ts", Source::PaperText, paper_ts.to_vec())
        .paper("2PC", Source::PaperText, vec![(1.0, 33.0), (100.0, 33.0)]),
    );
    cx.say("Our hier-ts curves lie on hier-lock's (table): at 10 ms flush hier-ts is drawn over hier-lock, at 100 ms only hier-lock is drawn. The paper's values are those stated in §IV-B2 (+75% and +150% taken over its unbatched 29 ms).");
    let at = "Fig. 4, §IV-B2";
    cx.claim(
        Claim::numeric(
            PAPER,
            at,
            "2PC latency at 100 clients, validation off",
            33.0,
            two_pc,
            "ms",
            0.15,
        )
        .because("our 2PC queues at 100 clients (its latency knee is at 140)"),
    );
    let lat = |b: u32, k: usize| rows.iter().find(|r| r.0 == b).map(|r| r.1[k]);
    if let Some(l1) = lat(1, 0) {
        cx.claim(Claim::shape(
            PAPER,
            at,
            "the hierarchy without batching is faster than 2PC",
            "29 vs 33 ms",
            format!("{l1:.1} vs {two_pc:.1} ms"),
            l1 < two_pc,
            "the hierarchy's commit path is not shorter than 2PC's",
        ));
    }
    const FLUSH: &str = "the 10 ms flush timeout bounds each item's wait per stage (votes up, decisions down); the paper does not say how it flushed partial batches";
    for (b, k, paper, what) in [
        (1u32, 0usize, 29.0, "hier-lock batch 1"),
        (10, 0, 31.0, "hier-lock batch 10"),
        (25, 0, 35.0, "hier-lock batch 25"),
        (50, 0, 40.0, "hier-lock batch 50"),
        (50, 1, 45.0, "hier-ts batch 50"),
        (75, 0, 29.0 * 1.75, "hier-lock batch 75 (+75% over 29 ms)"),
        (100, 0, 29.0 * 2.5, "hier-lock batch 100 (+150% over 29 ms)"),
    ] {
        let Some(ours) = lat(b, k) else { continue };
        let cause = match (b, k) {
            (50, 1) => PER_MSG.to_string(),
            (75, _) => format!("{FLUSH} (with 100 ms: {:.1} ms)", lat(b, 2).unwrap_or(f64::NAN)),
            (100, _) => format!(
                "{FLUSH}; with 100 ms ({:.1} ms), 100 clients fill a batch of 100 exactly and move in lockstep, never waiting for the timeout",
                lat(b, 2).unwrap_or(f64::NAN)
            ),
            _ => FLUSH.to_string(),
        };
        cx.claim(
            Claim::numeric(
                PAPER,
                at,
                &format!("{what}: latency at 100 clients, 10 ms flush"),
                paper,
                ours,
                "ms",
                0.15,
            )
            .because(&cause),
        );
    }
    Ok(())
}
