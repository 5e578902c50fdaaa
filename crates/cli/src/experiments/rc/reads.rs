//! Reads: `rc-fig11` (read latency against commit latency, single-read transactions).

use super::common::{committed, levels, paper_cfg, PAPER, PAPER_WORKLOAD, RC5};
use crate::experiments::{f, ok, Claim, Ctx, Figure, Source};
use anyhow::Result;
use meridian_core::Topology;

/// Fig. 11: each point one read: its latency against its transaction's commit latency.
/// The simulator records a transaction's start, commit request and outcome, not each
/// read, so the points are the committed transactions with exactly one read: with
/// writes buffered at the client, the time from start to commit request is that read.
pub(super) fn fig11(cx: &mut Ctx) -> Result<()> {
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
    cx.say("The paper states levels and typical values in its text, not points: the chart draws rc's two clusters as the text gives them (about 100 ms for V, just below 200 ms for I, a bound) and names replog's levels in its note.");
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
    // §5's text on Fig. 11 gives rc's two clusters; replog's levels come without the
    // commit latency they pair with, so they are in the note, not points.
    let fig = fig
        .paper("paper: rc V, read and commit close to 100 ms", Source::PaperText, vec![(100.0, 100.0)])
        .of("rc V")
        .paper("paper: rc I, just below 200 ms (a bound)", Source::PaperText, vec![(200.0, 200.0)])
        .of("rc I")
        .note("The paper's replog points are given as levels without the latency they pair with: I's reads at 0, about 100 and up to 200 ms, its commits about 350 ms for two shards and over 400 ms for three; V's reads at two levels, the higher about 100 ms (§5, Fig. 11).");
    cx.figure(fig);
    Ok(())
}
