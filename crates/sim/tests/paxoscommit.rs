//! The Paxos-commit baselines of catenae.md §VII-A (`pc-2pl`, `pc-occ`), end to end in
//! the simulator: the WAN trips of their message pattern, clean histories under
//! contention, a DC outage and crash-restart schedules.

use meridian_core::{Outcome, Topology, DEFAULT_INTRA_RTT_MS};
use meridian_sim::{run_named, SimConfig, SimOutput};

mod common;
use common::{assert_clean, assert_clean_and_live};

fn sim(p: &str, c: &SimConfig) -> SimOutput {
    run_named(p, c, &mut |_, _| {}).unwrap()
}

/// Three DCs, every pair 100 ms apart.
fn uniform3() -> Topology {
    Topology::uniform("uniform3", &["A", "B", "C"], 100.0, DEFAULT_INTRA_RTT_MS, 4, 4)
}

/// One client in DC A, no jitter, no contention.
fn one_client(workload: &str, txns: u64) -> SimConfig {
    let mut c = SimConfig::new(uniform3(), workload);
    c.client_dcs = vec![c.topology.dc("A").unwrap()];
    c.clients = 1;
    c.txns = txns;
    c.jitter = 0.0;
    c
}

#[test]
fn smoke() {
    for p in ["pc-2pl", "pc-occ"] {
        let r = sim(p, &one_client("ycsb:ops=2,reads=0.5,keys=100000", 50)).report;
        eprintln!("{p}: committed {} aborted {} wan {:?} lat {:?}", r.committed, r.aborted, r.wan_trips, r.latency_ms);
        assert_clean(&r);
    }
}
