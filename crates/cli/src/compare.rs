//! `meridian compare`: every protocol side by side, or a named experiment that prints
//! paper figures next to measured ones.

use crate::{progress, RunArgs};
use anyhow::{bail, Result};
use meridian_protocols::PROTOCOLS;
use meridian_sim::SimReport;
use std::process::ExitCode;

/// Named experiments: (name, what it reproduces).
pub const EXPERIMENTS: [(&str, &str); 19] = [
    (
        "2pc-round-trips",
        "crossstitch.md §5.2.2 / Fig. 12, 2PC column: k dependent remote reads + 1 commit = k+1 WAN round trips",
    ),
    (
        "rc-fig3",
        "replicated-commit.md Fig. 3: commit latency for DC sets C .. CVOIS, rc vs replog",
    ),
    (
        "rc-fig4",
        "replicated-commit.md Fig. 4: replog leader placements C/C/C, C/V/O, V/O/I, S/S/S vs rc",
    ),
    (
        "rc-fig5",
        "replicated-commit.md Fig. 5 and §4.3: transaction latency vs operations per transaction, crossover",
    ),
    (
        "rc-fig6",
        "replicated-commit.md Fig. 6: throughput (committed ops/s) vs number of clients",
    ),
    (
        "rc-fig7",
        "replicated-commit.md Fig. 7: contention, commits out of 2500 for 150..6000 items",
    ),
    (
        "rc-fig10",
        "replicated-commit.md Fig. 10: DC C goes down for a minute; commit latency of C's clients",
    ),
    (
        "hacommit-fig2",
        "hacommit.md Fig. 2: commit latency vs operations per transaction, hacommit vs 2pc-2pl vs rc (LAN)",
    ),
    (
        "hacommit-fig6",
        "hacommit.md Figs. 6/7: throughput and latency vs operations per transaction, hacommit vs rc (LAN)",
    ),
    (
        "hacommit-faults",
        "hacommit.md §VII-C, Figs. 3/4: five replicas lose one, two, then three; commits per second",
    ),
    (
        "hacommit-fig5",
        "hacommit.md §VII-C, Fig. 5: clients crash mid-transaction; recovery proposers finish their transactions",
    ),
    (
        "cs-fig12",
        "crossstitch.md Fig. 12: worst-case round trips of order-status and stock-level, 2PC vs crossstitch",
    ),
    (
        "cs-fig4",
        "crossstitch.md Fig. 4: one-DC completion time vs chain length, crossstitch vs 2PC",
    ),
    (
        "cs-fig8",
        "crossstitch.md Fig. 8: completion time vs DC round-trip latency 50..150 ms on two DCs",
    ),
    (
        "cs-fig11",
        "crossstitch.md Fig. 11: committed throughput on us3, world3, far3",
    ),
    (
        "cs-fig13",
        "crossstitch.md Fig. 13: TPC-C order-status completion time vs DC latency",
    ),
    (
        "cs-fig14",
        "crossstitch.md Fig. 14: TPC-C stock-level (single item) completion time vs DC latency",
    ),
    (
        "cluster-loopback",
        "real local clusters, no added delay: throughput and p50/p99 per protocol, one DC and three",
    ),
    (
        "cluster-rc5",
        "real local clusters with rc5's delays emulated: commit latency next to the simulator's",
    ),
];

pub fn run(experiment: Option<&str>, args: &RunArgs) -> Result<ExitCode> {
    match experiment {
        None => default_compare(args),
        Some("list") => {
            for (n, d) in EXPERIMENTS {
                println!("{n:18} {d}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Some("2pc-round-trips") => round_trips(args),
        Some(e) if e.starts_with("rc-fig") => crate::rcexp::run(e, args),
        Some(e) if e.starts_with("hacommit-") => crate::haexp::run(e, args),
        Some(e) if e.starts_with("cs-") => crate::csexp::run(e, args),
        Some(e) if e.starts_with("cluster-") => crate::netexp::run(e, args),
        Some(other) => bail!(
            "unknown experiment `{other}` (known: {})",
            EXPERIMENTS.iter().map(|e| e.0).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn verdict(r: &SimReport) -> String {
    if r.check.ok() {
        "ok".into()
    } else {
        format!("FAIL ({})", r.check.anomalies.len())
    }
}

fn default_compare(args: &RunArgs) -> Result<ExitCode> {
    let cfg = args.config()?;
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
        "{:10} {:>9} {:>8} {:>9} {:>9} {:>11} {:>9} {:>8} {:>9}  check",
        "protocol", "committed", "aborted", "p50 ms", "p99 ms", "commit p50", "tput/s", "WAN trips", "msgs/txn"
    );
    let mut code = ExitCode::SUCCESS;
    for p in PROTOCOLS {
        let out = meridian_sim::run_named(p, &cfg, &mut progress(p))?;
        let r = &out.report;
        println!(
            "{:10} {:>9} {:>8} {:>9.1} {:>9.1} {:>11.1} {:>9.1} {:>9.2} {:>9.1}  {}",
            p,
            r.committed,
            r.aborted,
            r.latency_ms.p50,
            r.latency_ms.p99,
            r.commit_latency_ms.p50,
            r.throughput_tps,
            r.wan_trips.mean,
            r.messages.per_txn,
            verdict(r)
        );
        if !r.check.ok() {
            eprintln!("{p}: check FAILED; reproduce with: {}", args.repro(p));
            code = ExitCode::from(3);
        }
    }
    Ok(code)
}

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
            verdict(&out.report)
        );
        if !out.report.check.ok() {
            code = ExitCode::from(3);
        }
    }
    Ok(code)
}
