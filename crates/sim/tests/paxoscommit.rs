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

#[test]
fn explore() {
    for p in ["pc-2pl", "pc-occ"] {
        for w in ["ycsb:ops=4,reads=0.5,keys=1000,theta=0.99", "bank", "tpcc:txn=new-order", "tpcc:txn=order-status"] {
            let mut c = SimConfig::new(Topology::preset("gcp3").unwrap(), w);
            c.txns = 600;
            c.clients = 24;
            let r = sim(p, &c).report;
            eprintln!("{p} {w}: committed {} aborted {} unknown {} wan {:?} lat {:?} tput {:?} live {} anomalies {:?} locked {:?}", r.committed, r.aborted, r.unknown, r.wan_trips, r.latency_ms.p50, r.throughput_tps, r.check.live, r.check.anomalies, r.locked_at_end);
        }
        for f in ["outage:dc=EU,at=2s,for=5s", "crash:node=0,at=2s,for=3s", "crash:node=5,at=1s,for=2s", "random:crashes=5,client-crashes=2,partitions=2,outages=1,loss=0.03,dup=0.03,reorder=0.1"] {
            for seed in 1..=3 {
                let mut c = SimConfig::new(Topology::preset("gcp3").unwrap(), "bank");
                c.txns = 400;
                c.clients = 12;
                c.seed = seed;
                c.faults = f.into();
                let r = sim(p, &c).report;
                eprintln!("{p} {f} {seed}: committed {} aborted {} unknown {} unresolved {:?} live {} tol {} anomalies {:?} stalls {:?} locked {:?} reasons {:?}", r.committed, r.aborted, r.unknown, r.unresolved, r.check.live, r.within_tolerance, r.check.anomalies, r.check.stalls, r.locked_at_end, r.abort_reasons);
            }
        }
    }
}
