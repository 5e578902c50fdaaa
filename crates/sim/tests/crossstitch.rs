//! CrossStitch (crossstitch.md §3–5) end to end in the simulator: Fig. 12's round trips
//! against 2PC, exactly, and §4's liveness and safety under faults over many seeds.

use meridian_core::{HomeRule, Topology, DEFAULT_INTRA_RTT_MS};
use meridian_sim::{run_named, SimConfig, SimOutput};

mod common;
use common::assert_clean;

fn sim(p: &str, c: &SimConfig) -> SimOutput {
    run_named(p, c, &mut |_, _| {}).unwrap()
}

/// Two DCs 100 ms apart (4 servers each); every shard homed in B, one client in A,
/// no jitter: the "client in a different DC from the data" of §5.3.1.
fn remote_data(workload: &str) -> SimConfig {
    let t = Topology::uniform("two100", &["A", "B"], 100.0, DEFAULT_INTRA_RTT_MS, 4, 8);
    let mut c = SimConfig::new(t, workload);
    c.home = HomeRule::Dc(c.topology.dc("B").unwrap());
    c.client_dcs = vec![c.topology.dc("A").unwrap()];
    c.clients = 1;
    c.txns = 100;
    c.jitter = 0.0;
    c
}

/// Round trips (WAN one-way trips / 2) and the p50 latency of a read-only workload.
fn trips(p: &str, workload: &str) -> (f64, u32, f64) {
    let r = sim(p, &remote_data(workload)).report;
    assert_clean(&r);
    assert_eq!(r.committed, 100, "{p} {workload}: {:?}", r.abort_reasons);
    (r.wan_trips.mean / 2.0, r.wan_trips.max, r.latency_ms.p50)
}

/// Fig. 12: order-status, 2PC 3+1 round trips, CrossStitch 2.
#[test]
fn test_fig12_order_status() {
    let (cs, cs_max, cs_ms) = trips("crossstitch", "tpcc:txn=order-status");
    let (tp, tp_max, tp_ms) = trips("2pc-2pl:copies=2", "tpcc:txn=order-status");
    assert_eq!((cs, cs_max), (2.0, 4));
    assert_eq!(
        (tp, tp_max),
        (4.0, 8),
        "3 dependent reads (the lines as one batch) + commit"
    );
    assert!(
        (200.0..203.0).contains(&cs_ms) && (400.0..405.0).contains(&tp_ms),
        "{cs_ms} {tp_ms}"
    );
}

/// Fig. 12: stock-level (single item), 2PC 4+1 round trips, CrossStitch 2.
#[test]
fn test_fig12_stock_level() {
    let (cs, cs_max, _) = trips("crossstitch", "tpcc:txn=stock-level");
    let (tp, tp_max, _) = trips("2pc-2pl:copies=2", "tpcc:txn=stock-level");
    assert_eq!((cs, cs_max), (2.0, 4));
    assert_eq!((tp, tp_max), (5.0, 10));
}

/// §5.2.3: a chain whose first states are in the client's DC and the rest in the
/// other costs CrossStitch two round trips (the crossing, then the ack/precommit
/// exchange across it, then the result), whatever the number of remote operations.
#[test]
fn test_local_then_remote_chain_is_two_round_trips() {
    let t = Topology::uniform("two100", &["A", "B"], 100.0, DEFAULT_INTRA_RTT_MS, 4, 8);
    let mut c = SimConfig::new(t, "chain:ops=10,reads=0.8,keys=100000");
    c.client_dcs = vec![c.topology.dc("A").unwrap()];
    c.clients = 1;
    c.txns = 200;
    c.jitter = 0.0;
    let r = sim("crossstitch", &c).report;
    assert_clean(&r);
    assert_eq!(r.committed, 200);
    // All-local chains take 0 trips, purely remote ones 4, mixed ones 4.
    assert_eq!(r.wan_trips.max, 4);
    assert!(r.wan_trips.mean > 3.9, "{:?}", r.wan_trips);
    let tp = sim("2pc-2pl:copies=2", &c).report;
    assert_clean(&tp);
    assert!(
        tp.latency_ms.p50 > 2.0 * r.latency_ms.p50,
        "2PC {} ms vs CrossStitch {} ms",
        tp.latency_ms.p50,
        r.latency_ms.p50
    );
}

/// §4: servers failing mid-chain, clients failing, partitions, lost, duplicated and
/// reordered messages, one server failure at a time (`serial`, longer than the time a
/// failure's transactions take to resolve). Every history is serializable, atomic and
/// durable, no transaction is committed at one participant and aborted at another, and
/// after the liveness phase nothing is left uncommitted anywhere.
#[test]
fn test_faults_never_lose_or_split_a_commit() {
    let faults = "random:crashes=3,client-crashes=2,partitions=2,loss=0.04,dup=0.04,reorder=0.15,serial=5s";
    let mut runs = 0;
    for (topo, wl) in [
        ("us3", "bank"),
        ("us3", "tpcc:mix=standard"),
        ("world3", "chain:ops=6,keys=2000"),
        ("two50", "ycsb:keys=500"),
    ] {
        for seed in 1..=4 {
            let mut c = SimConfig::new(Topology::preset(topo).unwrap(), wl);
            c.txns = 300;
            c.seed = seed;
            c.faults = faults.into();
            let r = sim("crossstitch", &c).report;
            assert_clean(&r);
            assert_eq!(r.split_decisions, Some(0), "{topo} {wl} seed {seed}");
            assert_eq!(
                r.locked_at_end,
                Some(0),
                "{topo} {wl} seed {seed}: uncommitted versions left"
            );
            assert!(r.committed > 100, "{topo} {wl} seed {seed}: {r:?}");
            assert!(r.unknown <= 2, "only crashed clients may not know: {}", r.unknown);
            runs += 1;
        }
    }
    assert_eq!(runs, 16);
}

/// Both copies of a shard live in its home DC (§3.5), so a whole-DC outage loses what
/// only they held: beyond CrossStitch's one-failure tolerance, and the checker says so.
#[test]
fn test_dc_outage_is_beyond_tolerance_and_caught() {
    let mut lost = 0;
    for seed in 1..=3 {
        let mut c = SimConfig::new(Topology::preset("us3").unwrap(), "bank");
        c.txns = 300;
        c.seed = seed;
        c.faults = "random:crashes=0,client-crashes=0,partitions=0,outages=1,loss=0,dup=0,reorder=0".into();
        let r = sim("crossstitch", &c).report;
        if !r.check.durable {
            lost += 1;
        }
        assert!(r.check.atomic, "an outage may lose data, never split a transaction");
    }
    assert!(lost > 0, "a DC outage should lose the data only that DC held");
}

#[test]
fn test_deterministic() {
    let mut c = SimConfig::new(Topology::preset("us3").unwrap(), "tpcc:mix=standard");
    c.txns = 200;
    c.faults = "random:crashes=2,client-crashes=1,serial=5s".into();
    let a = sim("crossstitch", &c).report;
    let b = sim("crossstitch", &c).report;
    assert_eq!(a.committed, b.committed);
    assert_eq!(a.latency_ms, b.latency_ms);
    assert_eq!(a.messages, b.messages);
}
