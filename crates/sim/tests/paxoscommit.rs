//! The Paxos-commit baselines of catenae.md §VII-A (`pc-2pl`, `pc-occ`), end to end in
//! the simulator: the WAN trips of their message pattern, clean histories under
//! contention, a DC outage and crash-restart schedules.

use meridian_core::{secs, Outcome, Topology, TxnId, DEFAULT_INTRA_RTT_MS};
use meridian_protocols::paxoscommit::RETRY_BIT;
use meridian_sim::{run_named, SimConfig, SimOutput};

mod common;
use common::assert_clean_and_live;

fn sim(p: &str, c: &SimConfig) -> SimOutput {
    run_named(p, c, &mut |_, _| {}).unwrap()
}

/// Three DCs, every pair 100 ms apart.
fn uniform3() -> Topology {
    Topology::uniform("uniform3", &["A", "B", "C"], 100.0, DEFAULT_INTRA_RTT_MS, 4, 4)
}

/// gcp3 (catenae.md §VII-B) with `clients` clients over every DC running `txns`
/// transactions of `workload`.
fn gcp3(workload: &str, clients: u32, txns: u64) -> SimConfig {
    let mut c = SimConfig::new(Topology::preset("gcp3").unwrap(), workload);
    c.clients = clients;
    c.txns = txns;
    c
}

/// Runs `p` on `c`, checked clean and live.
fn checked(p: &str, c: &SimConfig) -> SimOutput {
    let out = sim(p, c);
    assert_clean_and_live(p, &out.report);
    out
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

/// The critical paths counted by hand on three DCs 100 ms apart, from the client in DC
/// A (one-way WAN trips; the nearest majority is A plus one other DC):
///
/// | transaction | `pc-2pl` | `pc-occ` |
/// |---|---|---|
/// | write-only | 2 (write locks) + 2 (commit) = 4 | 2 (commit) |
/// | read-only, one read | 2 (read under a majority of locks) + 2 = 4 | 0 (local read) + 2 = 2 |
/// | bank transfer: two reads, two writes | 2 (both accounts locked exclusively and read, one round: the program is pre-declared) + 2 = 4 | 2 |
///
/// The commit round is one round trip to the nearest majority (≈ 100 ms).
#[test]
fn test_pc_wan_trips_on_uniform_three_dcs() {
    for (w, two_pl, occ) in [
        ("ycsb:ops=1,reads=0,keys=100000", 4, 2),
        ("ycsb:ops=1,reads=1,keys=100000", 4, 2),
        ("bank", 4, 2),
    ] {
        for (p, want) in [("pc-2pl", two_pl), ("pc-occ", occ)] {
            let r = checked(p, &one_client(w, 40)).report;
            assert_eq!(r.committed, 40, "{p} {w}");
            assert_eq!((r.wan_trips.mean, r.wan_trips.max), (want as f64, want), "{p} {w}");
            let c = r.commit_latency_ms.p50;
            assert!(c > 100.0 && c < 105.0, "{p} {w}: commit round {c} ms");
            let l = r.latency_ms.p50;
            let hand = 50.0 * want as f64;
            assert!(l > hand && l < hand + 10.0, "{p} {w}: latency {l} ms, {hand} by hand");
        }
    }
}

/// gcp3 (catenae.md §VII-B) with clients in every DC under heavy contention (zipfian
/// θ = 0.99 over 1,000 keys, and bank transfers over few accounts): histories check
/// clean (strictly serializable, atomic, durable, replicas identical, bank balance
/// conserved), every transaction resolves, nothing stays locked; contention shows as
/// aborts (wounds and lock time-outs for 2PL, validation failures for OCC), and OCC's
/// retries appear as new transactions right after their first attempt's abort.
#[test]
fn test_pc_contention_on_gcp3_checks_clean() {
    for p in ["pc-2pl", "pc-occ"] {
        for w in ["ycsb:ops=4,reads=0.5,keys=1000,theta=0.99", "bank"] {
            let out = checked(p, &gcp3(w, 24, 600));
            let r = &out.report;
            assert_eq!(r.locked_at_end, Some(0));
            assert!(r.committed > 250, "{p} {w}: {r:?}");
            assert!(r.aborted > 20, "{p} {w}: contention should abort some: {r:?}");
            let retries: Vec<_> = out.history.txns.iter().filter(|t| t.id.seq & RETRY_BIT != 0).collect();
            if p == "pc-occ" {
                assert!(!retries.is_empty(), "{w}: OCC retries");
                for t in &retries {
                    let first = TxnId {
                        client: t.id.client,
                        seq: t.id.seq & !RETRY_BIT,
                    };
                    let f = out
                        .history
                        .txns
                        .iter()
                        .find(|x| x.id == first)
                        .expect("first attempt recorded");
                    assert_eq!(f.outcome, Outcome::Aborted, "{first:?}");
                    assert!(f.end.unwrap() <= t.start);
                }
                assert!(
                    retries.iter().any(|t| t.outcome == Outcome::Committed),
                    "{w}: some retries commit"
                );
            } else {
                assert!(retries.is_empty(), "2PL does not retry");
            }
        }
    }
}

/// TPC-C NewOrder and OrderStatus (catenae.md §VII-D) run on gcp3 with clients in
/// every DC and check clean (the warehouse's year-to-date and order ids consistent).
#[test]
fn test_pc_tpcc_on_gcp3_checks_clean() {
    for p in ["pc-2pl", "pc-occ"] {
        for w in ["tpcc:txn=new-order", "tpcc:txn=order-status"] {
            let r = checked(p, &gcp3(w, 12, 300)).report;
            assert!(r.committed > 50, "{p} {w}: {r:?}");
        }
    }
}

/// A DC outage (every server of AS down for 20 s): the clients of EU and US keep
/// committing through the majority {EU, US} without a pause; AS's clients wait for
/// their coordinator and resolve once it returns; AS installs everything it missed.
#[test]
fn test_pc_dc_outage_majority_keeps_committing() {
    for p in ["pc-2pl", "pc-occ"] {
        let mut c = gcp3("ycsb:ops=4,reads=0.5,keys=100000", 12, 1_000_000);
        c.faults = "outage:dc=AS,at=5s,for=20s".into();
        c.max_time = secs(35.0);
        c.settle = secs(10.0);
        let out = checked(p, &c);
        assert_eq!(out.report.locked_at_end, Some(0));
        let as_dc = c.topology.dc("AS").unwrap();
        let (commits, gap) = common::commits_and_longest_gap(&out.history, 5.0, 25.0, |t| t.dc != as_dc);
        assert!(commits > 200, "{p}: {commits} commits during the outage");
        assert!(gap < 1.5, "{p}: EU/US commits stopped for {gap:.1} s");
    }
}

/// Crash-restart schedules: a coordinator (node 0, EU's), a data server, and random
/// crashes with loss, duplication, reordering, partitions and client crashes. Nothing
/// committed is lost, every DC installs the same versions, every transaction of a live
/// client resolves and no lock is left.
#[test]
fn test_pc_crash_restart_and_random_faults_check_clean() {
    let plans = [
        "crash:node=0,at=2s,for=3s",
        "crash:node=5,at=1s,for=2s",
        "random:crashes=5,client-crashes=2,partitions=2,outages=1,loss=0.03,dup=0.03,reorder=0.1",
    ];
    let mut hurt = 0;
    for p in ["pc-2pl", "pc-occ"] {
        for f in plans {
            for seed in 1..=3 {
                let mut c = gcp3("bank", 12, 400);
                c.seed = seed;
                c.faults = f.into();
                let r = checked(p, &c).report;
                assert_eq!(r.locked_at_end, Some(0), "{p} {f} seed {seed}");
                assert!(r.committed > 150, "{p} {f} seed {seed}: {r:?}");
                let reasons = r.abort_reasons.keys().cloned().collect::<Vec<_>>().join(",");
                if reasons.contains("coordinator restarted") || reasons.contains("timed out") || r.unknown > 0 {
                    hurt += 1;
                }
            }
        }
    }
    assert!(hurt > 6, "the faults should have cost some transactions ({hurt} runs)");
}

/// Same seed, same run.
#[test]
fn test_pc_is_deterministic() {
    for p in ["pc-2pl", "pc-occ"] {
        let mut c = gcp3("bank", 16, 300);
        c.faults = "random".into();
        assert_eq!(sim(p, &c).history, sim(p, &c).history, "{p}");
    }
}

/// Found by `meridian campaign` (pc-2pl, seeds 102 and 105 of the first 2,000): a DC
/// cut off from the others for 20 s dropped the locks of a transaction whose home had
/// gone silent and recorded that as an *abort*; the other two DCs committed it, and
/// when the partition healed the cut-off DC answered their re-sent commit with nothing
/// (it "knew" the outcome) and never installed the writes: `not-durable` on its
/// replicas. Dropping locks is not a decision; the DC now learns the outcome.
#[test]
fn test_pc_a_dc_cut_off_from_its_peers_installs_what_they_committed() {
    let cases = [
        (
            "world3",
            "ycsb:reads=0",
            16,
            105,
            "partition:a=LON,b=CA,at=1s,for=20s;partition:a=LON,b=HK,at=1s,for=20s",
        ),
        (
            "rc5",
            "chain",
            32,
            102,
            "partition:a=C,b=V,at=1s,for=20s;partition:a=C,b=O,at=1s,for=20s;\
             partition:a=C,b=I,at=1s,for=20s;partition:a=C,b=S,at=1s,for=20s",
        ),
    ];
    for (topo, wl, clients, seed, faults) in cases {
        let mut c = SimConfig::new(Topology::preset(topo).unwrap(), wl);
        c.txns = 300;
        c.clients = clients;
        c.seed = seed;
        c.faults = faults.into();
        let r = sim("pc-2pl", &c).report;
        assert_clean_and_live(&format!("pc-2pl {topo} seed {seed}"), &r);
        assert!(r.committed > 100, "{topo}: {}", r.committed);
    }
}
