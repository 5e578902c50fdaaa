//! Transaction size and load: `rc-fig5` (latency against operations per transaction)
//! and `rc-fig6` (throughput against clients).

use super::common::{committed, span, PAPER, RC5};
use crate::experiments::{f, ok, Claim, Ctx, Figure, Source};
use anyhow::Result;
use meridian_core::Topology;
use meridian_protocols::rc::crossover_reads;
use meridian_sim::SimOutput;

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

pub(super) fn fig5(cx: &mut Ctx) -> Result<()> {
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
    cx.say("The paper gives Fig. 5's latencies only as a figure (no values in its text): the chart draws ours and marks the paper's crossing at 25 ops, which a claim below compares.");
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
        .ours("replog V/O/I", pts.iter().map(|p| (p.0, p.2)).collect())
        .mark(25.0, 25.0, " paper: the curves cross at 25 ops")
        .no_paper_values(
            "\"As the number of operations increase, the transaction latency increases too for both protocols\", and the curves cross \"at the expected point, i.e., 25 operations per transaction\" (§5, Fig. 5), marked.",
        ),
    );
    Ok(())
}

pub(super) fn fig6(cx: &mut Ctx) -> Result<()> {
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
