//! Version GC on a real cluster (issue 53, 2; docs/CLUSTER.md "Version GC"): servers
//! with a 1 s `version_ttl` collect superseded versions under a bench, a node killed
//! with `kill -9` comes back from a checkpoint that holds only what was not collected,
//! and every bench checks clean and durable against chains whose start was collected.

mod common;

use common::cluster::*;
use std::time::Duration;

/// Versions held and collected, per server, from `cluster status --json`.
fn versions(c: &Local) -> Vec<(u64, u64)> {
    let (_, s) = c.status();
    s.as_array()
        .expect("status is a list")
        .iter()
        .map(|n| {
            let v = &n["status"]["versions"];
            (v[0].as_u64().unwrap_or(0), v[1].as_u64().unwrap_or(0))
        })
        .collect()
}

#[test]
fn rc_collects_restarts_from_a_checkpoint_and_checks_clean() {
    let c = Local::up(
        "rc",
        "us3",
        &[
            "--no-delay",
            "--durable",
            "--checkpoint-every",
            "300",
            "--version-ttl",
            "1s",
        ],
    );
    let b = c.workload_bench("bank", 6, "8s", "1s");
    let deadline = std::time::Instant::now() + Duration::from_secs(7);
    while !c.log(2).contains("checkpointed the journal") && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    c.kill9_after(2, Duration::ZERO);
    std::thread::sleep(Duration::from_millis(700));
    c.restart_with(2, &[]);
    let r = finish(&c, b);
    assert_eq!(r["check"]["anomalies"].as_array().unwrap().len(), 0, "{r}");
    assert!(r["check"]["durable"].as_bool().unwrap(), "{r}");
    assert_eq!(r["check"]["invariant"], serde_json::Value::Null, "{r}");
    let v = versions(&c);
    assert_eq!(v.len(), 6, "{v:?}");
    // Every server collected (a bank of 100 accounts, written hundreds of times a
    // second): what each holds is at most a few seconds' writes and one per account.
    for (i, (held, collected)) in v.iter().enumerate() {
        assert!(*collected > 0, "node {i} collected nothing: {v:?}\n{}", c.log_tails());
        assert!(held < collected, "node {i} holds {held}, collected {collected}");
    }
    // A second bench: the first's acknowledged commits are in the ledger, their
    // versions mostly collected; the count covers them.
    let r = finish(&c, c.workload_bench("bank", 4, "2s", "1s"));
    assert_eq!(r["check"]["anomalies"].as_array().unwrap().len(), 0, "{r}");
    assert!(r["check"]["durable"].as_bool().unwrap(), "{r}");
}

/// CrossStitch reads at timestamps, so it collects below a low-water mark of the
/// timestamps it still serves (the TTL or the vote timeout, 3 s, behind the clients'):
/// under a bench its servers collect, a server killed with `kill -9` comes back by
/// re-syncing from its partners (their versions and what they collected, so it refuses
/// the timestamps they would), and both benches check clean and durable.
#[test]
fn crossstitch_collects_below_its_timestamp_mark_and_a_restarted_server_resyncs() {
    let c = Local::up("crossstitch", "us3", &["--no-delay", "--version-ttl", "1s"]);
    let b = c.workload_bench("bank", 6, "12s", "1s");
    // Into the bench past the horizon, so the partners have collected when node 2
    // comes back.
    std::thread::sleep(Duration::from_secs(6));
    c.kill9_after(2, Duration::ZERO);
    std::thread::sleep(Duration::from_millis(700));
    c.restart_with(2, &[]);
    let r = finish(&c, b);
    assert_eq!(r["check"]["anomalies"].as_array().unwrap().len(), 0, "{r}");
    assert!(r["check"]["durable"].as_bool().unwrap(), "{r}");
    assert_eq!(r["check"]["invariant"], serde_json::Value::Null, "{r}");
    let v = versions(&c);
    assert_eq!(v.len(), 6, "{v:?}");
    for (i, (held, collected)) in v.iter().enumerate() {
        assert!(*collected > 0, "node {i} collected nothing: {v:?}\n{}", c.log_tails());
        // The restarted one took on its partners' collections, but its own mark
        // starts from nothing: what it holds is not compared.
        if i != 2 {
            assert!(held < collected, "node {i} holds {held}, collected {collected}");
        }
    }
    let r = finish(&c, c.workload_bench("bank", 4, "2s", "1s"));
    assert_eq!(r["check"]["anomalies"].as_array().unwrap().len(), 0, "{r}");
    assert!(r["check"]["durable"].as_bool().unwrap(), "{r}");
}
