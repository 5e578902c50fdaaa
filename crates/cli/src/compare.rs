//! `meridian compare`: every protocol side by side, or a named experiment that prints
//! paper figures next to measured ones.

use crate::experiments;
use crate::{progress, RunArgs};
use anyhow::{bail, Result};
use meridian_protocols::PROTOCOLS;
use meridian_sim::SimReport;
use std::process::ExitCode;

pub fn run(experiment: Option<&str>, args: &RunArgs, json: bool) -> Result<ExitCode> {
    if json && experiment.is_some() {
        bail!("--json prints the default comparison; an experiment prints its paper tables (`meridian report` writes them as docs/EVALUATION.md and evaluation.json)");
    }
    match experiment {
        None => default_compare(args, json),
        Some("list") => {
            for e in experiments::all() {
                println!("{:18} {}", e.name, e.about);
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(name) => match experiments::all().into_iter().find(|e| e.name == name) {
            Some(e) => experiments::run_live(e, args),
            None => bail!(
                "unknown experiment `{name}` (known: {})",
                experiments::all().iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
            ),
        },
    }
}

pub fn verdict(r: &SimReport) -> String {
    if r.check.ok() {
        "ok".into()
    } else {
        format!("FAIL ({})", r.check.anomalies.len())
    }
}

fn default_compare(args: &RunArgs, json: bool) -> Result<ExitCode> {
    let cfg = args.config()?;
    // `--json`: the reports, printed together once every protocol ran.
    let mut reports = vec![];
    if !json {
        print_header(&cfg)?;
    }
    let mut code = ExitCode::SUCCESS;
    let mut notes = vec![];
    for p in PROTOCOLS {
        let out = meridian_sim::run_named(p, &cfg, &mut progress(p))?;
        let r = out.report;
        if !r.check.ok() {
            if !json {
                eprintln!("{p}: check FAILED; reproduce with: {}", args.repro(p));
            }
            code = ExitCode::from(3);
        }
        let attempts = r.committed + r.aborted + r.unknown;
        if attempts > r.txns {
            notes.push(format!(
                "{p}: {attempts} transactions for the {} asked: the protocol's client retries an aborted attempt as a new transaction, and each attempt counts",
                r.txns
            ));
        }
        if json {
            reports.push(r);
        } else {
            print_row(p, &r);
        }
    }
    if json {
        println!("{}", serde_json::to_string(&reports)?);
    } else {
        for n in notes {
            println!("note: {n}");
        }
    }
    Ok(code)
}

fn print_header(cfg: &meridian_sim::SimConfig) -> Result<()> {
    println!(
        "topology {}  workload {}  txns {}  clients {}  seed {}{}",
        cfg.topology.name,
        meridian_workload::build(&cfg.workload)?.spec(),
        cfg.txns,
        cfg.clients,
        cfg.seed,
        if cfg.faults.is_empty() {
            String::new()
        } else {
            format!("  faults {}", cfg.faults)
        }
    );
    println!(
        "{:w$} {:>9} {:>8} {:>9} {:>9} {:>11} {:>9} {:>9} {:>9}  check",
        "protocol",
        "committed",
        "aborted",
        "p50 ms",
        "p99 ms",
        "commit p50",
        "tput/s",
        "WAN trips",
        "msgs/txn",
        w = name_width()
    );
    Ok(())
}

/// The protocol column's width: the longest protocol name.
fn name_width() -> usize {
    PROTOCOLS.iter().map(|p| p.len()).max().unwrap_or(8)
}

fn print_row(p: &str, r: &SimReport) {
    println!(
        "{:w$} {:>9} {:>8} {:>9.1} {:>9.1} {:>11.1} {:>9.1} {:>9.2} {:>9.1}  {}",
        p,
        r.committed,
        r.aborted,
        r.latency_ms.p50,
        r.latency_ms.p99,
        r.commit_latency_ms.p50,
        r.throughput_tps,
        r.wan_trips.mean,
        r.messages.per_txn,
        verdict(r),
        w = name_width()
    );
}
