//! The 2PC baseline's own claim (crossstitch.md §5.2.2, Fig. 12's 2PC column): each
//! dependent remote read costs one WAN round trip, the commit one more.

use super::Experiment;
use crate::{progress, RunArgs};
use anyhow::Result;
use std::process::ExitCode;

/// This baseline's experiments, as `--experiment list` shows them.
pub const EXPERIMENTS: &[Experiment] = &[Experiment {
    name: "2pc-round-trips",
    about: "crossstitch.md §5.2.2 / Fig. 12, 2PC column: k dependent remote reads + 1 commit = k+1 WAN round trips",
    run: round_trips,
}];

fn round_trips(args: &RunArgs) -> Result<ExitCode> {
    println!("2PC WAN trips with k dependent reads, client in A, data in B (two50); one-way trips");
    println!("{:>3} {:>12} {:>12} {:>7}  check", "k", "paper", "measured", "ratio");
    let mut code = ExitCode::SUCCESS;
    for k in 1..=5u32 {
        let mut a = args.clone();
        a.topology = "two50".into();
        a.workload = format!("dependent-reads:k={k}");
        a.client_dc = Some("A".into());
        a.data_dc = Some("B".into());
        a.txns = a.txns.min(200);
        a.clients = a.clients.min(4);
        let cfg = a.config()?;
        let out = meridian_sim::run_named("2pc-2pl", &cfg, &mut progress("2pc-2pl"))?;
        let paper = 2.0 * (k as f64 + 1.0);
        let m = out.report.wan_trips.mean;
        println!(
            "{k:>3} {paper:>12.1} {m:>12.2} {:>7.3}  {}",
            m / paper,
            crate::compare::verdict(&out.report)
        );
        if !out.report.check.ok() {
            code = ExitCode::from(3);
        }
    }
    Ok(code)
}
