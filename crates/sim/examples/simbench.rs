//! Simulator speed and memory for a large run:
//! `cargo run --release -p meridian-sim --example simbench -- [TXNS] [PROTOCOL] [TOPOLOGY] [WORKLOAD] [CLIENTS]`
//! (defaults: 1000000 2pc-2pl rc5 ycsb:keys=1000000 256). Prints events/s, simulated txns/s, the time
//! split between simulating and checking (each timed inside the run; the checker runs
//! once, as part of the run), and peak resident memory (Linux VmHWM).

use meridian_core::Topology;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use meridian_sim::{run_named, SimConfig};
use std::time::Instant;

fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let txns: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let protocol = args.get(1).map_or("2pc-2pl", |s| s.as_str());
    let topo = args.get(2).map_or("rc5", |s| s.as_str());
    let workload = args.get(3).map_or("ycsb:keys=1000000", |s| s.as_str());
    let Some(t) = Topology::preset(topo) else {
        eprintln!("unknown topology preset `{topo}`");
        std::process::exit(2);
    };
    let mut cfg = SimConfig::new(t, workload);
    cfg.txns = txns;
    cfg.clients = match args.get(4).map(|s| s.parse::<u32>()) {
        None => 256,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("CLIENTS must be a positive number, not `{}`", args[4]);
            std::process::exit(2);
        }
    };
    let start = Instant::now();
    let out = match run_named(protocol, &cfg, &mut |_, _| {}) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let total = start.elapsed().as_secs_f64();
    let (sim_s, check_s) = (out.wall_simulate_s.max(1e-9), out.wall_check_s);
    let r = &out.report;
    println!(
        "{protocol} {topo} {workload}, {} clients: {} txns, {} committed, check ok={}",
        cfg.clients,
        txns,
        r.committed,
        r.check.ok()
    );
    println!("events            {}", r.events);
    println!(
        "wall total        {total:.2} s (simulate {sim_s:.2} s, check {check_s:.2} s, set-up, history and report {:.2} s)",
        total - sim_s - check_s
    );
    println!("events/s          {:.0} (simulation only)", r.events as f64 / sim_s);
    println!(
        "txns/s            {:.0} (simulation only), {:.0} for the whole run",
        txns as f64 / sim_s,
        txns as f64 / total
    );
    if let Some(m) = peak_rss_mib() {
        println!("peak RSS          {m:.0} MiB");
    }
    // Exit without freeing the history record by record: it would only delay the exit.
    std::process::exit(0);
}
