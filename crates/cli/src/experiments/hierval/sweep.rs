//! What the §IV figures share: the setting and its CPU model (module docs), the seven
//! systems of §IV-B and their indices, the client counts, and the sweep of every system
//! over them, printed as tables into a [`Group`] (runs, maximum throughputs, knees).

use super::PAPER;
use crate::experiments::{f, Claim, Ctx, Figure};
use anyhow::Result;
use meridian_core::Topology;
use meridian_sim::{CpuModel, SimConfig, SimOutput};

/// The §IV workload.
const PAPER_WORKLOAD: &str = "rmw:ops=8,keys=800000,value=1000,distinct-shards=1";

/// The CPU charged per message handled (ns): calibrated on the paper's 2PC (module docs).
pub(super) const PER_MSG_NS: u64 = 120_000;
/// The CPU charged per key operation and per item unpacked from a batch (ns): a fifth of
/// a message, not calibrated (hv-fig2 shows what batching gains as a function of it).
pub(super) const PER_ITEM_NS: u64 = 24_000;

/// §IV-A: 8 two-core data nodes and a four-core root validator in one DC, the CPU model
/// of the module docs; `flush` for batched runs.
pub(super) fn paper_cfg(cx: &Ctx, clients: u32) -> Result<SimConfig> {
    paper_cfg_item(cx, clients, PER_ITEM_NS)
}

/// [`paper_cfg`] with `per_item` ns per key operation and per unpacked batch item.
pub(super) fn paper_cfg_item(cx: &Ctx, clients: u32, per_item: u64) -> Result<SimConfig> {
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
pub(super) fn systems(validate: bool, pipeline: bool) -> Vec<String> {
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
pub(super) const TWO_PC: usize = 0;
pub(super) const LOCK1: usize = 1;
pub(super) const LOCK10: usize = 2;
pub(super) const LOCK50: usize = 3;
pub(super) const TS50: usize = 6;

/// A legend name: `hier-lock b10` for `hier-lock:batch=10,validate=off`.
pub(super) fn label(system: &str) -> String {
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

pub(super) const CLIENTS: [u32; 8] = [20, 60, 100, 140, 180, 220, 260, 300];

/// Client counts of Fig. 2 (validation off) and of the pipelined runs (beyond the
/// paper): on to 600, because at 300 (the paper's last point) neither 2PC nor the
/// batched hierarchy has saturated (both still gain throughput there), and a maximum
/// throughput, which the paper reads where each system saturates, needs saturation.
pub(super) const CLIENTS_TO_SATURATION: [u32; 11] = [20, 60, 100, 140, 180, 220, 260, 300, 400, 500, 600];

/// One system's runs: (system, [(clients, run)]).
type Runs = (String, Vec<(u32, SimOutput)>);

/// One printed group: every system's runs, and its (system, max throughput, knee).
pub(super) struct Group {
    pub(super) runs: Vec<Runs>,
    pub(super) best: Vec<(String, f64, u32)>,
}

impl Group {
    /// Max throughput of system `i` over 2PC's.
    pub(super) fn gain(&self, i: usize) -> f64 {
        self.best[i].1 / self.best[TWO_PC].1
    }

    /// The claim that system `i`'s max throughput over 2PC's ([`Group::gain`]) is `paper`.
    pub(super) fn gain_claim(&self, at: &str, claim: &str, paper: f64, i: usize, cause: &str) -> Claim {
        Claim::numeric(PAPER, at, claim, paper, self.gain(i), "× 2PC", 0.15).because(cause)
    }

    /// The claim that system `i` saturates (its knee) at `paper` clients.
    pub(super) fn knee_claim(&self, at: &str, claim: &str, paper: f64, i: usize, cause: &str) -> Claim {
        Claim::numeric(PAPER, at, claim, paper, self.best[i].2 as f64, "clients", 0.15).because(cause)
    }

    /// Mean latency of system `i` at each client count.
    pub(super) fn lat(&self, i: usize) -> Vec<(f64, f64)> {
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
    pub(super) fn plot(&self, mut fig: Figure, tput: bool, which: &[usize]) -> Figure {
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
pub(super) fn knee_at(runs: &[(u32, SimOutput)]) -> Option<u32> {
    let base = runs[0].1.report.latency_ms.mean;
    runs.iter()
        .find(|(_, o)| o.report.latency_ms.mean > 1.25 * base)
        .map(|r| r.0)
}

/// Runs and prints one group; returns its runs and each system's max throughput and
/// knee.
pub(super) fn table(cx: &mut Ctx, what: &str, validate: bool, pipeline: bool, points: &[u32]) -> Result<Group> {
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
