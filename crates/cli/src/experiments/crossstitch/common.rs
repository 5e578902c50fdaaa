//! What the CrossStitch figures share: the baseline's name, two DCs at a round-trip
//! latency, both protocols run on one configuration, and the helpers for charts and
//! claims described only in words.

use crate::experiments::{f, Claim, Ctx, Figure};
use anyhow::Result;
use meridian_core::{HomeRule, Topology, DEFAULT_INTRA_RTT_MS};
use meridian_sim::{SimConfig, SimOutput};

/// The 2PC baseline of §5.1.
pub(super) const TWO_PC: &str = "2pc-2pl:copies=2";

/// The paper's file under `../shared/papers/`, for claims.
pub(super) const PAPER: &str = "crossstitch.md";

/// Two DCs `rtt_ms` apart, four servers each, eight shards.
pub(super) fn two(rtt_ms: f64) -> Topology {
    Topology::uniform(&format!("two{rtt_ms}"), &["A", "B"], rtt_ms, DEFAULT_INTRA_RTT_MS, 4, 8)
}

/// One client in A, every shard homed in B: the "client in a different DC from the
/// data" of §5.3.1.
pub(super) fn remote(cx: &Ctx, rtt_ms: f64, workload: &str, txns: u64) -> Result<SimConfig> {
    let topo = two(rtt_ms);
    let mut c = cx.cfg(&topo, workload, txns, 1, &["A"])?;
    c.home = HomeRule::Dc(topo.dc("B")?);
    c.jitter = 0.0;
    Ok(c)
}

/// CrossStitch, then the 2PC baseline, on `c`: (CrossStitch's run, 2PC's).
pub(super) fn both(cx: &mut Ctx, c: &SimConfig) -> Result<(SimOutput, SimOutput)> {
    let cs = cx.run("crossstitch", c)?;
    let tp = cx.run(TWO_PC, c)?;
    Ok((cs, tp))
}

/// `fig` with our two series: CrossStitch's and the 2PC baseline's (named by protocol).
pub(super) fn ours_both(fig: Figure, cs: Vec<(f64, f64)>, tp: Vec<(f64, f64)>) -> Figure {
    fig.ours("crossstitch", cs).ours(TWO_PC, tp)
}

/// Fig. `fig`, which the paper describes only in words (no values): says so, then charts
/// our two series alone (`cs-fig{fig}`, titled `CrossStitch Fig. {fig}: {title}`, axes
/// `x` and `y` from `[title, x, y]`), with a note quoting what the text `says`.
pub(super) fn words_only(
    cx: &mut Ctx,
    fig: u32,
    [title, x, y]: [&str; 3],
    says: &str,
    cs: Vec<(f64, f64)>,
    tp: Vec<(f64, f64)>,
) {
    cx.say(format!(
        "The paper's Fig. {fig} is described only in words (no values), so the chart shows our runs alone."
    ));
    cx.figure(
        ours_both(
            Figure::new(
                &format!("cs-fig{fig}"),
                &format!("CrossStitch Fig. {fig}: {title}"),
                x,
                y,
            ),
            cs,
            tp,
        )
        .no_paper_values(says),
    );
}

/// The claim that CrossStitch's value is above 2PC's at every point, `ratios` being
/// CrossStitch's over 2PC's.
pub(super) fn above_everywhere(at: &str, claim: &str, ratios: &[f64], cause: &str) -> Claim {
    Claim::shape(
        PAPER,
        at,
        claim,
        "CS / 2PC > 1",
        format!("CS / 2PC {}", span(ratios, 2)),
        ratios.iter().all(|r| *r > 1.0),
        cause,
    )
}

/// CrossStitch's value over 2PC's at each point (`cs` and `tp` over the same x).
pub(super) fn ratios(cs: &[(f64, f64)], tp: &[(f64, f64)]) -> Vec<f64> {
    cs.iter().zip(tp).map(|(a, b)| a.1 / b.1).collect()
}

/// `min–max` of `v` with `d` decimals (a single value if they agree).
pub(super) fn span(v: &[f64], d: usize) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if f(lo, d) == f(hi, d) {
        f(lo, d)
    } else {
        format!("{}–{}", f(lo, d), f(hi, d))
    }
}

pub(super) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Fig. 15: `d` remote DCs (one shard each) and the client's DC C (no data), all
/// `rtt_ms` apart, two servers per DC.
pub(super) fn remote_dcs(d: u32, rtt_ms: f64) -> Topology {
    let names: Vec<String> = (1..=d).map(|i| format!("R{i}")).chain(["C".to_string()]).collect();
    let refs: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
    Topology::uniform(&format!("remote{d}"), &refs, rtt_ms, DEFAULT_INTRA_RTT_MS, 2, d)
}

/// §5.2's synthetic transaction: ten dependent operations, 80% reads, 100,000 keys.
pub(super) const CHAIN: &str = "chain:ops=10,reads=0.8,keys=100000";

/// What one closed-loop run delivered.
#[derive(Clone, Copy, Debug)]
pub(super) struct Load {
    pub(super) clients: u32,
    /// Committed transactions per second.
    pub(super) tps: f64,
    /// Committed per 1000 issued.
    pub(super) per1000: f64,
    /// Mean completion time of the committed ones.
    pub(super) latency_ms: f64,
    pub(super) ok: bool,
}

impl Load {
    pub(super) fn of(o: &SimOutput, clients: u32) -> Load {
        let r = &o.report;
        Load {
            clients,
            tps: r.throughput_tps,
            per1000: 1000.0 * r.committed as f64 / r.txns.max(1) as f64,
            latency_ms: r.latency_ms.mean,
            ok: r.check.ok(),
        }
    }
}

/// One DC of `servers` servers (one shard each), 0.5 ms apart.
pub(super) fn one(servers: u32) -> Topology {
    Topology::uniform(
        &format!("one{servers}"),
        &["A"],
        0.0,
        DEFAULT_INTRA_RTT_MS,
        servers,
        servers,
    )
}

pub(super) fn check(a: &Load, b: &Load) -> String {
    let v = |l: &Load| if l.ok { "ok" } else { "FAIL" };
    format!("{}/{}", v(a), v(b))
}
