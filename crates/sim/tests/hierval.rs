//! Hierarchical deferred validation (`hier-lock`, `hier-ts`) and its baseline
//! `2pc-deferred` (hierarchical-validation.md §II-B, §III) end to end in the simulator:
//! the communication steps of formulas (2) and (6) counted as hops, and clean, live
//! histories under contention and faults.

use meridian_core::{DcId, Topology};
use meridian_sim::{run_named, SimConfig, SimOutput};

mod common;
use common::assert_clean_and_live;

fn sim(p: &str, c: &SimConfig) -> SimOutput {
    run_named(p, c, &mut |_, _| {}).unwrap()
}

/// Every node in a DC of its own, all 100 ms apart: each message is one WAN hop, so a
/// transaction's `wan_trips` is its number of communication steps. Eight data nodes
/// (DCs 0..8), spare nodes for inner validators, the client in the last DC.
fn one_node_per_dc(dcs: usize, workload: &str) -> SimConfig {
    let names: Vec<String> = (0..dcs).map(|i| format!("D{i}")).collect();
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let t = Topology::uniform("steps", &refs, 100.0, 0.1, 1, 8);
    let mut c = SimConfig::new(t, workload);
    c.client_dcs = vec![DcId(dcs as u16 - 1)];
    c.clients = 1;
    c.txns = 40;
    c.jitter = 0.0;
    c
}

#[test]
fn test_commit_steps_match_formulas_2_and_6() {
    // Each read-modify-write reads first: 2 steps per read, then the commit.
    // Local (N = 1): 2 steps in every variant (formulas (2) and (6)).
    for p in ["hier-lock", "hier-ts", "2pc-deferred"] {
        let r = sim(p, &one_node_per_dc(10, "rmw:ops=1,keys=8000,value=8")).report;
        assert_clean_and_live(p, &r);
        assert_eq!(r.committed, 40, "{p}");
        assert_eq!((r.wan_trips.mean, r.wan_trips.max), (4.0, 4), "{p}");
    }
    // Two nodes: 2 + H/B = 3 steps with the root at level 1; 2PC: 4.
    for (p, commit) in [("hier-lock", 3), ("hier-ts", 3), ("2pc-deferred", 4)] {
        let r = sim(p, &one_node_per_dc(10, "rmw:ops=2,keys=8000,value=8")).report;
        assert_clean_and_live(p, &r);
        assert_eq!(r.committed, 40, "{p}");
        assert_eq!(r.wan_trips.max, 4 + commit, "{p}");
        assert_eq!(r.wan_trips.mean, (4 + commit) as f64, "{p}");
    }
    // Three levels (fanout 4): a transaction over both halves is decided at the root,
    // H = 2: 2 + 2 = 4 steps; over one half, H = 1: 3 steps.
    let r = sim("hier-ts:fanout=4", &one_node_per_dc(12, "rmw:ops=2,keys=8000,value=8")).report;
    assert_clean_and_live("hier-ts:fanout=4", &r);
    assert_eq!(r.wan_trips.max, 4 + 4);
    assert!(r.wan_trips.mean > 7.0 && r.wan_trips.mean < 8.0, "{:?}", r.wan_trips);
}

#[test]
fn test_contended_and_faulty_runs_are_clean_and_live() {
    for p in [
        "hier-lock",
        "hier-ts",
        "hier-ts:fanout=2,batch=5",
        "2pc-deferred",
        "hier-lock:pipeline=on,batch=3",
    ] {
        for w in ["ycsb:theta=0.9,keys=200", "bank:accounts=20"] {
            for f in [
                "",
                "random:crashes=3,client-crashes=2,serial=2s",
                "loss:p=0.05;dup:p=0.05;reorder:p=0.2",
            ] {
                let mut c = SimConfig::new(Topology::preset("lan").unwrap(), w);
                c.txns = 400;
                c.clients = 16;
                c.faults = f.into();
                let r = sim(p, &c).report;
                assert_clean_and_live(&format!("{p} {w} {f}"), &r);
                assert!(r.committed > 0, "{p} {w} {f}");
            }
        }
    }
}

#[test]
fn test_validate_off_runs_are_still_checked() {
    // §IV-B's network-only mode: the checks still run (only their CPU is not charged),
    // so even a contended run is serializable; on the paper's workload nothing aborts.
    for p in [
        "hier-lock:validate=off",
        "hier-ts:validate=off,batch=10",
        "2pc-deferred:validate=off",
    ] {
        let mut c = SimConfig::new(Topology::preset("lan").unwrap(), "ycsb:theta=0.9,keys=100");
        c.txns = 300;
        let r = sim(p, &c).report;
        assert_clean_and_live(p, &r);
        assert!(r.aborted > 0, "{p}: conflicts still abort");
        let mut c = SimConfig::new(Topology::preset("lan").unwrap(), "rmw");
        c.txns = 300;
        let r = sim(p, &c).report;
        assert_clean_and_live(p, &r);
        assert_eq!(r.committed, 300, "{p}");
    }
}
