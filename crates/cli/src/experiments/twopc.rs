//! The 2PC baseline's own claim (crossstitch.md §5.2.2, Fig. 12's 2PC column): each
//! dependent remote read costs one WAN round trip, the commit one more.

use super::{f, Claim, Ctx, Experiment, Figure, Source};
use anyhow::Result;

/// This baseline's experiments, as `--experiment list` shows them.
pub const EXPERIMENTS: &[Experiment] = &[Experiment {
    name: "2pc-round-trips",
    about: "crossstitch.md §5.2.2 / Fig. 12, 2PC column: k dependent remote reads + 1 commit = k+1 WAN round trips",
    run: round_trips,
    sim: true,
}];

fn round_trips(cx: &mut Ctx) -> Result<()> {
    cx.say("2PC WAN trips with k dependent reads, client in A, data in B (two50); one-way trips");
    cx.table(&["k", "paper", "measured", "ratio", "check"]);
    let mut ours = vec![];
    for k in 1..=5u32 {
        let mut a = cx.args.clone();
        a.topology = "two50".into();
        a.workload = format!("dependent-reads:k={k}");
        a.client_dc = Some("A".into());
        a.data_dc = Some("B".into());
        a.txns = cx.n(a.txns.min(200));
        a.clients = a.clients.min(4);
        let cfg = a.config()?;
        let out = cx.run("2pc-2pl", &cfg)?;
        let paper = 2.0 * (k as f64 + 1.0);
        let m = out.report.wan_trips.mean;
        ours.push((k as f64, m));
        cx.row(vec![
            k.to_string(),
            f(paper, 1),
            f(m, 2),
            f(m / paper, 3),
            crate::compare::verdict(&out.report),
        ]);
        if k == 5 {
            cx.claim(Claim::numeric(
                "crossstitch.md",
                "§5.2.2, Fig. 12 (2PC)",
                "2PC with 5 dependent remote reads: one-way WAN trips",
                paper,
                m,
                "trips",
                0.02,
            ));
        }
    }
    let paper: Vec<(f64, f64)> = (1..=5).map(|k| (k as f64, 2.0 * (k as f64 + 1.0))).collect();
    cx.figure(
        Figure::new(
            "2pc-round-trips",
            "2PC: WAN trips vs dependent reads",
            "dependent remote reads k",
            "one-way WAN trips per transaction",
        )
        .paper("2(k+1)", Source::PaperText, paper)
        .of("2pc-2pl")
        .ours("2pc-2pl", ours),
    );
    Ok(())
}
