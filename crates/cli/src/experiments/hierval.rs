//! `meridian compare --experiment hv-*`: hierarchical-validation.md §III-E and §IV
//! reproduced side by side with the paper. Every run is a full simulation that ends
//! with the checker; a failed check makes the experiment exit 3.
//!
//! # The setting (§IV-A) and the CPU model
//!
//! One DC, 8 data nodes (2 cores each) and one root validator node (4 cores,
//! `SimConfig::cores`), 100% distributed transactions of 8 read-modify-writes on
//! distinct data nodes over 800k objects of 1000 bytes (`rmw`). The paper's prototypes
//! keep no logs, so `fsync` is 0 here. Two constants are calibrated on the paper's
//! 2PC baseline, and every other figure is then a prediction:
//!
//! - the intra-DC round trip, 3.2 ms: Riak KV's request path on the paper's VMs
//!   (Erlang scheduling, vnode hand-offs, Basho Bench) is what makes a transaction of
//!   8 sequential reads and a 2PC commit (10 round trips) take 33 ms unloaded (§IV-B2),
//!   not the wire; it costs latency, not the node's CPU;
//! - the CPU per input, 120 µs per core-message (60 µs on a 2-core data node) and a fifth
//!   of it per key operation: with 3 inputs per transaction at every data node under 2PC
//!   (read, prepare, decision), that caps 2PC at ~5.5k transactions/s, which a closed
//!   loop reaches at 180 clients x 33 ms, the paper's saturation point (Fig. 2/3).
//!   The fifth is not calibrated, and with validation off it is all that batching's
//!   unpacking costs, so hv-fig2 prints batching's gain as a function of it (from 0 to
//!   a whole message) and the cost the paper's +23% implies (about 0.4 of a message).
//!   Fig. 2 sweeps on to 600 clients and reads each maximum where the system has
//!   saturated (the last step gains under 3%), as the paper does.
//!
//! Why it is realistic: the saturated resource in §IV-B is "the maximum number of
//! messages [a node] can process per unit of time"; the model charges exactly per
//! message handled, plus a small per-item cost for each item unpacked from a batch,
//! which is what batching amortizes (§III-D). The simulator does not charge bytes, so

use super::{f, ok, Claim, Ctx, Experiment, Figure, Source};
use anyhow::Result;
use meridian_core::{DcId, Topology};
use meridian_sim::{CpuModel, SimConfig, SimOutput};

/// The paper's file, for claims.
const PAPER: &str = "hierarchical-validation.md";

/// The §IV workload.
const PAPER_WORKLOAD: &str = "rmw:ops=8,keys=800000,value=1000,distinct-shards=1";

/// This paper's experiments, as `--experiment list` shows them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "hv-analysis",
        about: "hierarchical-validation.md §III-E: formula vs counted messages, 2PC vs hierarchy, unbatched and batched",
        run: analysis,
        sim: true,
    },
    Experiment {
        name: "hv-fig2",
        about: "hierarchical-validation.md Fig. 2: throughput vs clients, validation off, 2PC and hier-lock/hier-ts at batch 1/10/50",
        run: fig2,
        sim: true,
    },
    Experiment {
        name: "hv-fig3",
        about: "hierarchical-validation.md Fig. 3: latency vs clients, validation off, the seven systems of §IV-B",
        run: fig3,
        sim: true,
    },
    Experiment {
        name: "hv-fig4",
        about: "hierarchical-validation.md Fig. 4: latency vs batch size at 100 clients",
        run: fig4,
        sim: true,
    },
    Experiment {
        name: "hv-fig5",
        about: "hierarchical-validation.md Fig. 5: throughput vs clients, validation on, serial (paper) and pipelined (beyond it)",
        run: fig5,
        sim: true,
    },
    Experiment {
        name: "hv-fig6",
        about: "hierarchical-validation.md Fig. 6: latency vs clients, validation on, serial and pipelined",
        run: fig6,
        sim: true,
    },
];

/// §III-E: the formulas (2)/(3) and (6)/(7) over 100 transactions of N data nodes
/// decided at level H with batch B (turnaround steps, total messages).
fn formula(two_pc: bool, n: f64, h: f64, b: f64, txns: f64) -> (f64, f64) {
    if two_pc {
        (4.0 * txns, 4.0 * n * txns)
    } else {
        ((2.0 + h / b) * txns, (n + (h * n + n) / b + 1.0) * txns)
    }
}

fn pct(a: f64, base: f64) -> String {
    format!("{:+.0}%", 100.0 * (a / base - 1.0))
}

/// `a` below `base`, in percent (a reduction).
fn reduction(a: f64, base: f64) -> f64 {
    100.0 * (1.0 - a / base)
}

/// §III-E: 8 data nodes, a 3-level hierarchy (fanout 4: two level-1 validators over
/// four data nodes each, and a root), 100 transactions each touching the 4 data nodes
/// under one level-1 validator (H = 1). Messages are counted by the simulator; the
/// transactions' 4 reads (2 messages each) are subtracted, since the formulas count
/// the commit only.
fn analysis(cx: &mut Ctx) -> Result<()> {
    let topo = Topology::uniform("hv11", &["L"], 0.0, 0.1, 11, 8);
    let wl = "rmw:ops=4,span=4,keys=800000,value=8";
    let txns = cx.n(100);
    cx.say(format!(
        "§III-E: 8 data nodes, 3 levels (hier-ts:fanout=4), {txns} transactions on 4 data nodes validated at level 1"
    ));
    cx.say(format!("{txns} concurrent clients, one transaction each (so batches can fill); counted = simulator's messages - 8 read messages per transaction"));
    cx.say("formula: §II-B (2)/(3) for 2PC, §III-E (6)/(7) for the hierarchy, with N = 4, H = 1 and B = 1 or 25");
    cx.table(&[
        "system",
        "formula steps",
        "formula msgs",
        "counted msgs",
        "counted / formula",
        "check",
    ]);
    // The paper's batched figures (-49%, -67%) follow from formula (6)/(7) with B = 25.
    let rows: [(&str, bool, f64); 5] = [
        ("2pc-deferred", true, 1.0),
        ("hier-ts:fanout=4", false, 1.0),
        ("hier-lock", false, 1.0),
        ("hier-ts:fanout=4,batch=25", false, 25.0),
        ("hier-lock:batch=25", false, 25.0),
    ];
    let mut counted = vec![];
    for (p, two_pc, b) in rows {
        let c = cx.cfg(&topo, wl, txns, txns as u32, &[])?;
        let o = cx.run(p, &c)?;
        let r = &o.report;
        let m = r.messages.total as f64 - 8.0 * txns as f64;
        let (fs, fm) = formula(two_pc, 4.0, 1.0, b, txns as f64);
        counted.push((p, fs, fm, m, r.committed));
        cx.row(vec![
            p.to_string(),
            f(fs, 0),
            f(fm, 0),
            f(m, 0),
            f(m / fm, 2),
            format!("{} ({} committed)", ok(&o), r.committed),
        ]);
    }
    let (_, s2, m2, c2, _) = counted[0];
    cx.table(&[
        "reduction vs 2PC",
        "paper steps",
        "formula steps",
        "paper msgs",
        "formula msgs",
        "counted msgs",
    ]);
    for (i, paper) in [(1usize, ("-25%", "-18%")), (3, ("-49%", "-67%"))] {
        let (p, s, m, c, _) = counted[i];
        cx.row(vec![
            p.to_string(),
            paper.0.to_string(),
            pct(s, s2),
            paper.1.to_string(),
            pct(m, m2),
            pct(c, c2),
        ]);
    }
    // Steps on the critical path, measured: every node in a DC of its own, so each
    // message is one counted hop; minus the 8 read steps.
    cx.say("critical-path steps per transaction, measured as hops (one node per DC, 1 client, 20 transactions):");
    let names: Vec<String> = (0..12).map(|i| format!("D{i}")).collect();
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let spread = Topology::uniform("hv-steps", &refs, 10.0, 0.1, 1, 8);
    cx.table(&["system", "formula steps", "measured hops", "check"]);
    let mut hops = vec![];
    for (p, steps) in [
        ("2pc-deferred", 4.0),
        ("hier-ts:fanout=4", 3.0),
        ("hier-ts:fanout=4,batch=25", 2.04),
    ] {
        let mut c = cx.cfg(&spread, wl, 20, 1, &[])?;
        c.client_dcs = vec![DcId(11)];
        c.jitter = 0.0;
        let o = cx.run(p, &c)?;
        let h = o.report.wan_trips.mean - 8.0;
        hops.push(h);
        cx.row(vec![p.to_string(), f(steps, 2), f(h, 2), ok(&o).to_string()]);
    }
    cx.say("formula (6)'s H/B amortizes one message over B transactions; a batched transaction still takes the H hops on its own path (plus the wait to fill the batch).");

    // Claims: the paper's four reductions (§III-E), then formulas (3) and (7) against
    // the counted messages.
    let (steps_unb, steps_b) = (reduction(hops[1], hops[0]), reduction(hops[2], hops[0]));
    let (msgs_unb, msgs_b) = (reduction(counted[1].3, c2), reduction(counted[3].3, c2));
    cx.claim(
        Claim::numeric(
            PAPER,
            "§III-E",
            "turnaround steps vs 2PC, unbatched (N = 4, H = 1): reduction, measured as hops",
            25.0,
            steps_unb,
            "%",
            0.02,
        )
        .because("the hierarchy's commit path is not 3 hops against 2PC's 4"),
    );
    cx.claim(
        Claim::numeric(
            PAPER,
            "§III-E",
            "total messages vs 2PC, unbatched: reduction, counted (formula (7) gives 18.75%, the paper says 18%)",
            18.0,
            msgs_unb,
            "%",
            0.05,
        )
        .because("counted messages differ from formulas (3) and (7)"),
    );
    cx.claim(Claim::numeric(
        PAPER,
        "§III-E",
        "turnaround steps vs 2PC, batch 25: reduction, measured as hops",
        49.0,
        steps_b,
        "%",
        0.02,).because("formula (6)'s H/B amortizes one message over B transactions, not a latency: a batched transaction still travels its H hops (3 vs 2PC's 4)"));
    cx.claim(
        Claim::numeric(
            PAPER,
            "§III-E",
            "total messages vs 2PC, batch 25: reduction, counted",
            67.0,
            msgs_b,
            "%",
            0.02,
        )
        .because("partial batches: the transactions split unevenly over the two level-1 validators"),
    );
    for (i, at, what) in [
        (0usize, "§II-B (3)", "2PC"),
        (1, "§III-E (7)", "hierarchy, unbatched"),
        (3, "§III-E (7)", "hierarchy, batch 25"),
    ] {
        let (_, _, fm, m, _) = counted[i];
        cx.claim(
            Claim::numeric(
                PAPER,
                at,
                &format!("{what}: messages for {txns} commits (N = 4, H = 1), paper's formula vs counted"),
                fm,
                m,
                "msgs",
                0.02,
            )
            .because("partial batches: the transactions split unevenly over the two level-1 validators"),
        );
    }
    cx.figure(
        Figure::new(
            "hv-analysis",
            "§III-E: reduction against 2PC (8 data nodes, N = 4, H = 1)",
            "quantity",
            "reduction vs 2PC (%)",
        )
        .categories(&[
            "steps, unbatched",
            "messages, unbatched",
            "steps, batch 25",
            "messages, batch 25",
        ])
        .paper(
            "§III-E, stated",
            Source::PaperText,
            vec![(0.0, 25.0), (1.0, 18.0), (2.0, 49.0), (3.0, 67.0)],
        )
        .ours(
            "ours: steps as measured hops, messages counted",
            vec![(0.0, steps_unb), (1.0, msgs_unb), (2.0, steps_b), (3.0, msgs_b)],
        ),
    );
    Ok(())
}

/// §IV-A: 8 two-core data nodes and a four-core root validator in one DC, the CPU model
/// of the module docs; `flush` for batched runs.
/// The CPU charged per message handled (ns): calibrated on the paper's 2PC (module docs).
const PER_MSG_NS: u64 = 120_000;
/// The CPU charged per key operation and per item unpacked from a batch (ns): a fifth of
/// a message, not calibrated (hv-fig2 shows what batching gains as a function of it).
const PER_ITEM_NS: u64 = 24_000;

fn paper_cfg(cx: &Ctx, clients: u32) -> Result<SimConfig> {
    paper_cfg_item(cx, clients, PER_ITEM_NS)
}

/// [`paper_cfg`] with `per_item` ns per key operation and per unpacked batch item.
fn paper_cfg_item(cx: &Ctx, clients: u32, per_item: u64) -> Result<SimConfig> {
    let topo = Topology::uniform("hv9", &["L"], 0.0, 3.2, 9, 8);
    let txns = (20 * clients as u64).max(2000);
    let mut c = cx.cfg(&topo, PAPER_WORKLOAD, txns, clients, &[])?;
    c.cpu = CpuModel {
        per_msg: PER_MSG_NS,
        per_op: per_item,
        fsync: 0,
    };
    c.cores = vec![2, 2, 2, 2, 2, 2, 2, 2, 4];
    Ok(c)
}

/// The seven systems of §IV-B, in this order: 2PC, then hier-lock and hier-ts at batch
/// 1, 10 and 50 (see the indices below).
fn systems(validate: bool, pipeline: bool) -> Vec<String> {
    let v = match (validate, pipeline) {
        (false, _) => "validate=off",
        (true, false) => "",
        (true, true) => "pipeline=on",
    };
    let join = |p: &str, b: u32| {
        let mut s = p.to_string();
        let mut params = vec![];
        if b > 1 {
            params.push(format!("batch={b}"));
        }
        if !v.is_empty() {
            params.push(v.to_string());
        }
        if !params.is_empty() {
            s.push(':');
            s.push_str(&params.join(","));
        }
        s
    };
    let mut out = vec![join("2pc-deferred", 1)];
    for p in ["hier-lock", "hier-ts"] {
        for b in [1, 10, 50] {
            out.push(join(p, b));
        }
    }
    out
}

/// Indices into [`systems`].
const TWO_PC: usize = 0;
const LOCK1: usize = 1;
const LOCK10: usize = 2;
const LOCK50: usize = 3;
const TS50: usize = 6;

/// Every system, hier-ts batch 50 fifth so that its colour matches the paper's fifth
/// series where there is one (Fig. 3).
const ALL: [usize; 7] = [TWO_PC, LOCK1, LOCK10, LOCK50, TS50, 4, 5];
/// Validation off: hier-ts at batch 1 and 10 lie on hier-lock's curves.
const OFF: [usize; 5] = [TWO_PC, LOCK1, LOCK10, LOCK50, TS50];
/// Says which validation-off series the chart leaves out.
const OFF_NOTE: &str = "hier-ts at batch 1 and 10 measures within 0.2% of hier-lock (table) and would hide its curves, so the chart leaves them out.";

/// A legend name: `hier-lock b10` for `hier-lock:batch=10,validate=off`.
fn label(system: &str) -> String {
    let (p, params) = system.split_once(':').unwrap_or((system, ""));
    let b = params
        .split(',')
        .find_map(|kv| kv.strip_prefix("batch="))
        .unwrap_or("1");
    if p.starts_with("2pc") {
        "2PC".into()
    } else {
        format!("{p} b{b}")
    }
}

const CLIENTS: [u32; 8] = [20, 60, 100, 140, 180, 220, 260, 300];

/// Client counts of Fig. 2 (validation off) and of the pipelined runs (beyond the
/// paper): on to 600, because at 300 (the paper's last point) neither 2PC nor the
/// batched hierarchy has saturated (both still gain throughput there), and a maximum
/// throughput, which the paper reads where each system saturates, needs saturation.
const CLIENTS_TO_SATURATION: [u32; 11] = [20, 60, 100, 140, 180, 220, 260, 300, 400, 500, 600];

/// One system's runs: (system, [(clients, run)]).
type Runs = (String, Vec<(u32, SimOutput)>);

/// One printed group: every system's runs, and its (system, max throughput, knee).
struct Group {
    runs: Vec<Runs>,
    best: Vec<(String, f64, u32)>,
}

impl Group {
    /// Max throughput of system `i` over 2PC's.
    fn gain(&self, i: usize) -> f64 {
        self.best[i].1 / self.best[TWO_PC].1
    }

    /// The claim that system `i`'s max throughput over 2PC's ([`Group::gain`]) is `paper`.
    fn gain_claim(&self, at: &str, claim: &str, paper: f64, i: usize, cause: &str) -> Claim {
        Claim::numeric(PAPER, at, claim, paper, self.gain(i), "× 2PC", 0.15).because(cause)
    }

    /// The claim that system `i` saturates (its knee) at `paper` clients.
    fn knee_claim(&self, at: &str, claim: &str, paper: f64, i: usize, cause: &str) -> Claim {
        Claim::numeric(PAPER, at, claim, paper, self.best[i].2 as f64, "clients", 0.15).because(cause)
    }

    /// Mean latency of system `i` at each client count.
    fn lat(&self, i: usize) -> Vec<(f64, f64)> {
        self.runs[i]
            .1
            .iter()
            .map(|(n, o)| (*n as f64, o.report.latency_ms.mean))
            .collect()
    }

    /// Throughput of system `i` at each client count.
    fn tput(&self, i: usize) -> Vec<(f64, f64)> {
        self.runs[i]
            .1
            .iter()
            .map(|(n, o)| (*n as f64, o.report.throughput_tps))
            .collect()
    }

    /// Our series `which` (indices into [`systems`]), `tput` or latency, in a figure.
    fn plot(&self, mut fig: Figure, tput: bool, which: &[usize]) -> Figure {
        for &i in which {
            let pts = if tput { self.tput(i) } else { self.lat(i) };
            fig = fig.ours(&label(&self.runs[i].0), pts);
        }
        fig
    }
}

/// Runs every system at every client count.
fn sweep(cx: &mut Ctx, validate: bool, pipeline: bool, points: &[u32]) -> Result<Vec<Runs>> {
    let clients = cx.sweep(points);
    let mut out = vec![];
    for p in systems(validate, pipeline) {
        let mut runs = vec![];
        for &n in &clients {
            let c = paper_cfg(cx, n)?;
            runs.push((n, cx.run(&p, &c)?));
        }
        out.push((p, runs));
    }
    Ok(out)
}

/// The saturation point: the first client count whose mean latency is 25% above the
/// 20-client one (the last client count if none is).
fn knee(runs: &[(u32, SimOutput)]) -> u32 {
    knee_at(runs).unwrap_or(runs.last().map_or(0, |r| r.0))
}

/// The saturation point, if latency passes it within the sweep.
fn knee_at(runs: &[(u32, SimOutput)]) -> Option<u32> {
    let base = runs[0].1.report.latency_ms.mean;
    runs.iter()
        .find(|(_, o)| o.report.latency_ms.mean > 1.25 * base)
        .map(|r| r.0)
}

/// Runs and prints one group; returns its runs and each system's max throughput and
/// knee.
fn table(cx: &mut Ctx, what: &str, validate: bool, pipeline: bool, points: &[u32]) -> Result<Group> {
    let data = sweep(cx, validate, pipeline, points)?;
    let tput = what == "tput";
    let clients: Vec<String> = data[0].1.iter().map(|(n, _)| n.to_string()).collect();
    let mut header = vec!["system \\ clients"];
    header.extend(clients.iter().map(|s| s.as_str()));
    header.extend(["knee", "max tps", "check"]);
    cx.table(&header);
    let mut best = vec![];
    for (p, runs) in &data {
        let mut row = vec![p.clone()];
        for (_, o) in runs {
            let v = if tput {
                o.report.throughput_tps
            } else {
                o.report.latency_ms.mean
            };
            row.push(f(v, 1));
        }
        let max = runs.iter().map(|(_, o)| o.report.throughput_tps).fold(0.0, f64::max);
        best.push((p.clone(), max, knee(runs)));
        let all_ok = runs.iter().all(|(_, o)| o.report.check.ok());
        row.push(knee(runs).to_string());
        row.push(f(max, 0));
        row.push(if all_ok { "ok" } else { "FAIL" }.to_string());
        cx.row(row);
    }
    let base = best[0].1;
    cx.table(&[
        "max throughput vs 2PC",
        "paper",
        "ours",
        "paper knee",
        "ours knee",
        "ratio",
    ]);
    for (p, max, k) in &best {
        let (paper, pknee) = match (p.as_str(), validate) {
            (s, false) if s.starts_with("2pc") => (Some(0.0), "180"),
            (s, false) if s.contains("batch=50") && s.starts_with("hier-lock") => (Some(23.0), "260"),
            (s, false) if s.contains("batch=50") => (Some(15.0), "260"),
            (_, false) => (None, "180"),
            (s, true) if s.starts_with("2pc") => (Some(0.0), "80"),
            (s, true) if s.contains("batch=") => (None, "100"),
            (_, true) => (None, "80"),
        };
        let ours = 100.0 * (max / base - 1.0);
        cx.row(vec![
            p.clone(),
            paper.map_or("~0%".into(), |x| format!("{x:+.0}%")),
            format!("{ours:.0}%"),
            pknee.to_string(),
            k.to_string(),
            paper.filter(|x| *x > 0.0).map_or("-".into(), |x| {
                format!("{:.2}", (1.0 + ours / 100.0) / (1.0 + x / 100.0))
            }),
        ]);
    }
    cx.say(
        "knee: first client count with mean latency 25% above the 20-client latency; ratio: (1 + ours) / (1 + paper)",
    );
    Ok(Group { runs: data, best })
}

/// Why hier-ts costs what hier-lock does here.
const PER_MSG: &str =
    "the simulator charges per message, not per byte, so hier-ts's bigger messages cost what hier-lock's do";

/// The root's per-message cap at batch 1 (EVALUATION.md, Figs. 2 and 3).
const ROOT_CAP: &str = "the root handles 8 votes per transaction, one message each, one input at a time: at 4 cores it caps batch 1 below 2PC; batch 10 already lifts that cap";

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

fn fig2(cx: &mut Ctx) -> Result<()> {
    cx.say("Fig. 2: throughput (committed txn/s) vs clients, validation off (§IV-B), rmw 8 ops on 8 distinct nodes, 800k objects");
    cx.say("paper: batch 1 and 10 saturate at ~180 clients like 2PC, batch 50 at ~260; max throughput +23% (hier-lock), +15% (hier-ts)");
    let g = table(cx, "tput", false, false, &CLIENTS_TO_SATURATION)?;
    saturation(cx, &g, &OFF);
    let fig = Figure::new(
        "hv-fig2",
        "Fig. 2: throughput vs clients, validation off",
        "clients",
        "throughput (committed txn/s)",
    );
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

fn fig3(cx: &mut Ctx) -> Result<()> {
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
    for (b, i) in [(1, LOCK1), (10, LOCK10)] {
        cx.claim(g.knee_claim(at, &format!("hier-lock batch {b} saturation point"), 180.0, i, ROOT_CAP));
    }
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
            super::Status::Partly,
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

fn fig5(cx: &mut Ctx) -> Result<()> {
    cx.say("Fig. 5: throughput (committed txn/s) vs clients, validation on (§IV-C): locking, validation, tentative versions and installs charged per key operation");
    cx.say("paper: 2PC saturates at ~80 clients, the batched hierarchy at ~100; no throughput gain (\"the gains nearly disappear\")");
    let (serial, piped) = with_pipelining(cx, "tput")?;
    validation_on_charts(cx, 5, &serial, &piped, true);
    cx.say("The paper states no throughput values for Fig. 5 (only its saturation points, in the claims below), so the charts show our runs alone.");
    const LEAF_WORK: &str = "hier-lock's validation is the leaves' per-key work, which 2PC's participants do as well: serializing it slows both alike, and batching's message savings survive in part";
    const TS_ROOT: &str = "hier-ts's root re-validates every key of every transaction (8 key operations per transaction on one serial thread) on top of the leaves' work; the paper gives no per-key costs for its prototype";
    let at = "Fig. 5, §IV-C";
    cx.claim(serial.knee_claim(
        at,
        "2PC saturation point, validation on",
        80.0,
        TWO_PC,
        "client counts step by 40: latency passes +25% between 60 and 100 clients, which brackets the paper's 80",
    ));
    // The batched hierarchy: (system, index, cause).
    let batch50 = [("hier-lock", LOCK50, LEAF_WORK), ("hier-ts", TS50, TS_ROOT)];
    for (p, i, cause) in batch50 {
        let claim = format!("{p} batch 50 saturation point, validation on");
        cx.claim(serial.knee_claim(at, &claim, 100.0, i, cause));
    }
    for (p, i, cause) in batch50 {
        let claim = format!("max throughput, {p} batch 50 over 2PC, serial validation (\"not larger\")");
        cx.claim(serial.gain_claim(at, &claim, 1.0, i, cause));
    }
    // §IV-D: the gain predicted by §IV-B1 (+23%) is not achieved by the serial
    // prototypes; more concurrency in the data nodes should recover it.
    let (sl, st) = (serial.gain(LOCK50), serial.gain(TS50));
    cx.claim(Claim::shape(
        PAPER,
        "§IV-D",
        "serial validation keeps the batched hierarchy below the +23% gain predicted by §IV-B1",
        "below +23% over 2PC",
        format!("{} (hier-lock b50), {} (hier-ts b50)", pct(sl, 1.0), pct(st, 1.0)),
        sl < 1.23 && st < 1.23,
        "serial validation does not cost the hierarchy its message savings here",
    ));
    for (p, i, paper, gain) in [("hier-lock", LOCK50, 1.23, "+23%"), ("hier-ts", TS50, 1.15, "+15%")] {
        let claim = format!(
            "concurrent (pipelined) validation recovers the predicted gain: {p} batch 50 over pipelined 2PC vs \
             §IV-B1's {gain} (max throughput up to 600 clients, where both saturate)"
        );
        let cause = "pipelined validation does not recover the validation-off gain";
        cx.claim(piped.gain_claim("§IV-D", &claim, paper, i, cause).beyond_paper());
    }
    Ok(())
}

/// Validation on: the paper's serial validation, then pipelined validation (beyond the
/// paper), and the gains of each against 2PC. Returns (serial, pipelined).
fn with_pipelining(cx: &mut Ctx, what: &str) -> Result<(Group, Group)> {
    cx.say("serial validation (the paper's prototypes: one validation thread per node):");
    let serial = table(cx, what, true, false, &CLIENTS)?;
    cx.say("pipelined validation (beyond the paper: validation and commit work of non-conflicting transactions on all cores), on to 600 clients, where it saturates:");
    let piped = table(cx, what, true, true, &CLIENTS_TO_SATURATION)?;
    let base = serial.best[0].1;
    cx.table(&[
        "max tps vs serial 2PC",
        "serial",
        "pipelined",
        "serial gain",
        "pipelined gain",
    ]);
    for ((p, s, _), (_, q, _)) in serial.best.iter().zip(&piped.best) {
        cx.row(vec![
            p.clone(),
            f(*s, 0),
            f(*q, 0),
            pct(*s, base),
            pct(*q, piped.best[0].1),
        ]);
    }
    cx.say("serial gain: over serial 2PC; pipelined gain: over pipelined 2PC (target: at least the +23% of validation off)");
    // The pipelined gains within the paper's client range, for comparison.
    let at300 = |i: usize| {
        piped.runs[i]
            .1
            .iter()
            .filter(|(n, _)| *n <= 300)
            .map(|(_, o)| o.report.throughput_tps)
            .fold(0.0, f64::max)
    };
    cx.say(format!(
        "pipelined gains over pipelined 2PC within the paper's 300 clients: hier-lock b50 {}, hier-ts b50 {}",
        pct(at300(LOCK50), at300(TWO_PC)),
        pct(at300(TS50), at300(TWO_PC))
    ));
    Ok((serial, piped))
}

/// Fig. `fig`'s two charts of every system against clients, validation on: `serial`
/// (the paper's, `hv-fig{fig}-a`) and `piped` (beyond the paper, `hv-fig{fig}-b`);
/// throughput if `tput`, else mean latency.
fn validation_on_charts(cx: &mut Ctx, fig: u32, serial: &Group, piped: &Group, tput: bool) {
    let (what, y) = if tput {
        ("throughput", "throughput (committed txn/s)")
    } else {
        ("latency", "mean latency (ms)")
    };
    let serial_title = format!("Fig. {fig}: {what} vs clients, validation on (serial, the paper's)");
    let piped_title = format!("Fig. {fig} beyond the paper: validation on, pipelined");
    for (g, file, title) in [(serial, "a", serial_title), (piped, "b", piped_title)] {
        let chart = Figure::new(&format!("hv-fig{fig}-{file}"), &title, "clients", y);
        cx.figure(g.plot(chart, tput, &ALL));
    }
}

fn fig6(cx: &mut Ctx) -> Result<()> {
    cx.say("Fig. 6: mean latency (ms) vs clients, validation on (§IV-C)");
    cx.say("paper: latency keeps rising with clients in every system, since each node validates serially");
    let (serial, piped) = with_pipelining(cx, "lat")?;
    validation_on_charts(cx, 6, &serial, &piped, false);
    cx.say("The paper states no latency values for Fig. 6 (its curves are described in words), so the charts show our runs alone.");
    // Latency at the last client count over the first, per system.
    let growth = |g: &Group| -> Vec<f64> {
        (0..g.runs.len())
            .map(|i| {
                let l = g.lat(i);
                l[l.len() - 1].1 / l[0].1
            })
            .collect()
    };
    let gs = growth(&serial);
    let (lo, hi) = gs.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let (first, last) = {
        let l = serial.lat(TWO_PC);
        (l[0].0, l[l.len() - 1].0)
    };
    cx.claim(Claim::shape(
        PAPER,
        "Fig. 6, §IV-C",
        "latency keeps rising with clients in every system (serial validation)",
        "rises in every system",
        format!("×{lo:.2} to ×{hi:.2} from {first} to {last} clients"),
        lo > 1.0,
        "some system's latency does not rise with clients",
    ));
    // §IV-D: serial validation makes transactions wait for each other; concurrency in
    // the data nodes should lower the latency under load.
    // At the serial runs' last client count (the pipelined ones go on further).
    let drops: Vec<f64> = (0..serial.runs.len())
        .map(|i| {
            let (s, p) = (serial.lat(i), piped.lat(i));
            let (n, sl) = s[s.len() - 1];
            let pl = p.iter().find(|(m, _)| *m == n).map_or(f64::NAN, |x| x.1);
            pl / sl
        })
        .collect();
    let (dlo, dhi) = drops
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    cx.claim(Claim::shape(
        PAPER,
        "§IV-D",
        "more concurrency in the data nodes (pipelined validation) lowers latency under load in every system",
        "lower",
        format!("{} to {} at {last} clients", pct(dhi, 1.0), pct(dlo, 1.0)),
        dhi < 1.0,
        "pipelined validation does not lower latency at the highest client count",
    ));
    Ok(())
}

/// Fig. 4: latency against batch size at 100 clients.
fn fig4(cx: &mut Ctx) -> Result<()> {
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
