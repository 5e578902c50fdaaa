//! The explorer finds what a deliberately broken protocol variant breaks (a search
//! that finds nothing proves little unless it can find something), the same search
//! finds nothing in the protocol as specified, and the printed path replays.

use meridian_explore::{explore, Budget, Config, Report, Step, Strategy};

fn cfg(protocol: &str, workload: &str, txns: u32, faults: &str) -> Config {
    Config {
        protocol: protocol.into(),
        workload: workload.into(),
        txns,
        faults: Budget::parse(faults).unwrap(),
        max_states: 400_000,
        ..Config::default()
    }
}

/// Explores, expects a violation of `kind`, and replays its path to the same verdict.
fn caught(c: &Config, kind: &str) -> Report {
    let r = explore(c, None).unwrap();
    let v = r
        .violation
        .clone()
        .unwrap_or_else(|| panic!("{}: no violation in {} states", r.config, r.states));
    assert_eq!(v.kind, kind, "{}: {}", r.config, v.what);
    assert!(!v.trace.is_empty() && v.trace.len() == v.steps.len());
    let steps: Vec<Step> = v.steps.iter().map(|s| s.parse().unwrap()).collect();
    let again = explore(c, Some(&steps)).unwrap();
    let w = again.violation.expect("the printed path replays to the violation");
    assert_eq!(w.kind, v.kind);
    r
}

/// 2PC whose participants release their locks when they vote, before the decision:
/// three bank transfers on two accounts, two reorderings, no other fault.
#[test]
fn early_lock_release_is_caught_as_a_serializability_anomaly() {
    let c = cfg("2pc-2pl:mutant=early-release", "bank:accounts=2", 3, "reorder=2");
    let r = caught(&c, "safety");
    assert!(r.violation.unwrap().what.contains("serializable=false"));
    let ok = explore(&cfg("2pc-2pl", "bank:accounts=2", 3, "reorder=2"), None).unwrap();
    assert!(ok.violation.is_none(), "{:?}", ok.violation);
    assert!(ok.exhaustive && ok.ends_checked > 0);
}

/// CrossStitch whose positions precommit without the next position's ack: one lost
/// message leaves a transaction that never resolves.
#[test]
fn crossstitch_precommit_without_ack_is_caught_as_a_stall() {
    let c = cfg("crossstitch:mutant=no-ack", "ycsb:keys=4,ops=2", 2, "reorder=2,drop=1");
    caught(&c, "liveness");
    let ok = explore(&cfg("crossstitch", "ycsb:keys=4,ops=2", 2, "reorder=2,drop=1"), None).unwrap();
    assert!(ok.violation.is_none(), "{:?}", ok.violation);
    assert!(ok.exhaustive);
}

#[test]
fn budgets_and_steps_parse_or_say_why_not() {
    let b = Budget::parse("crash=1,drop=2,dup=0,timeouts=1,reorder=3").unwrap();
    assert_eq!((b.crash, b.drop, b.dup, b.timeouts, b.reorder), (1, 2, 0, 1, 3));
    assert_eq!(Budget::parse(&b.to_string()).unwrap(), b);
    assert_eq!(Budget::parse("none").unwrap().reorder, meridian_explore::ANY);
    for bad in ["crash", "crash=x", "flood=1", "drop=-1"] {
        let e = Budget::parse(bad).unwrap_err();
        assert!(e.starts_with("--faults:"), "{bad}: {e}");
    }
    for s in ["d12", "t3", "x2", "r2", "l7", "u9"] {
        assert_eq!(s.parse::<Step>().unwrap().to_string(), s);
    }
    for bad in ["", "d", "q1", "dx", "t99999999999"] {
        assert!(bad.parse::<Step>().is_err(), "{bad}");
    }
    // A replayed step that is not possible says which and why.
    let c = cfg("2pc-2pl", "ycsb:keys=4,ops=2", 2, "none");
    let e = explore(&c, Some(&["d999".parse().unwrap()])).unwrap_err().to_string();
    assert!(e.contains("step 1 of 1") && e.contains("no such message"), "{e}");
    let e = explore(&c, Some(&["x0".parse().unwrap()])).unwrap_err().to_string();
    assert!(e.contains("no crash left"), "{e}");
}

#[test]
fn bad_configurations_are_refused() {
    for (c, what) in [
        (
            Config {
                txns: 0,
                ..Config::default()
            },
            "at least 1",
        ),
        (
            Config {
                dcs: 9,
                ..Config::default()
            },
            "small configurations",
        ),
        (
            Config {
                protocol: "nope".into(),
                ..Config::default()
            },
            "unknown protocol",
        ),
        (
            Config {
                workload: "ycsb:keys=1,ops=2".into(),
                ..Config::default()
            },
            "--workload",
        ),
    ] {
        let e = explore(&c, None).unwrap_err().to_string();
        assert!(e.contains(what), "{e}");
    }
}

/// Every protocol, as specified, passes a small exhaustive search: two conflicting
/// transactions on two shards and three DCs, one message reordered, one lost.
#[test]
fn every_protocol_passes_a_small_exhaustive_search() {
    for p in meridian_protocols::PROTOCOLS {
        let r = explore(&cfg(p, "ycsb:keys=4,ops=2", 2, "reorder=1,drop=1"), None).unwrap();
        assert!(r.violation.is_none(), "{p}: {:?}", r.violation);
        assert!(r.exhaustive && r.ends_checked > 0, "{p}: {} states", r.states);
        eprintln!("{p}: {} states, {} ends, {:.1} s", r.states, r.ends_checked, r.wall_s);
    }
}

/// Depth first and random walks find the mutants breadth first finds, and their
/// paths replay; depth first of the protocol as specified is exhaustive and clean.
#[test]
fn depth_first_and_random_walks_catch_the_mutants_too() {
    let mut c = cfg("2pc-2pl:mutant=early-release", "bank:accounts=2", 3, "reorder=2");
    c.strategy = Strategy::Dfs;
    caught(&c, "safety");
    let mut ok = cfg("2pc-2pl", "bank:accounts=2", 3, "reorder=2");
    ok.strategy = Strategy::Dfs;
    let r = explore(&ok, None).unwrap();
    assert!(r.violation.is_none() && r.exhaustive, "{:?}", r.violation);
    let mut c = cfg("crossstitch:mutant=no-ack", "ycsb:keys=4,ops=2", 2, "reorder=2,drop=1");
    c.strategy = Strategy::Random { walks: 20_000 };
    caught(&c, "liveness");
}

/// Mutants the fault campaign catches and breadth first did not reach within 200,000
/// states (a timeout has to fire at one particular point while the messages it races
/// are in flight): random walks that take a fault one step in eight find them, each
/// replayed from its printed path: replog's coordinator announcing an abort before its
/// ABORT entry is chosen (a bug fixed in issue 19), a HACommit client ending on one
/// acceptance per group, and a HACommit candidate leading on its own state before
/// merging a majority's (bug H1). The same walks of the protocols as specified find
/// nothing.
#[test]
fn random_walks_catch_the_replog_and_hacommit_mutants() {
    let walks = |protocol: &str, walks: u64| {
        let mut c = cfg(protocol, "bank:accounts=2", 3, "crash=1,drop=1,timeouts=2");
        c.clock_steps = 10;
        c.max_states = u64::MAX;
        c.strategy = Strategy::Random { walks };
        c
    };
    for mutant in [
        "replog:mutant=early-abort",
        "hacommit:mutant=minority",
        "hacommit:mutant=lead-before-merge",
    ] {
        let mut c = walks(mutant, 12_000);
        if mutant.starts_with("replog") {
            // Since replog re-sends votes only under a lease (stop 81) the path is
            // rarer: about one walk in 10,000 at 10 or 20 clock steps (seed 1: 9,341
            // walks at 20 steps, none in 12,000 at 10; seed 3: none in 20,000). Walks
            // are deterministic: seed 2 at 20 steps finds it after 2,898.
            c.seed = 2;
            c.clock_steps = 20;
        }
        let r = caught(&c, "safety");
        eprintln!("{mutant}: caught after {} walks, {:.1} s", r.ends_checked, r.wall_s);
    }
    for specified in ["replog", "hacommit"] {
        let ok = explore(&walks(specified, 3_000), None).unwrap();
        assert!(ok.violation.is_none(), "{specified}: {:?}", ok.violation);
        assert_eq!(ok.ends_checked, 3_000);
    }
}
