//! Real clusters under faults done to the processes themselves: `kill -9` and a
//! restart (from the journal, a checkpoint, or the peers), a server never restarted,
//! whole-cluster restarts, SIGSTOP (the node is unreachable: its sockets stay open but
//! nothing is read or answered) and `cluster partition`.

mod common;

use common::cluster::*;
use common::text;
use std::path::Path;
use std::time::Duration;

/// `kill -9` a server in the middle of a benchmark, restart it from its journal: no
/// acknowledged commit is lost (the checker's durability verdict covers every
/// replica, the restarted one included) and the history checks clean.
fn kill9(protocol: &str, node: u32, settle: &str) {
    kill9_with(protocol, node, settle, "bank");
}

/// [`kill9`] under a chosen workload (read committed breaks the bank's invariant).
fn kill9_with(protocol: &str, node: u32, settle: &str, workload: &str) {
    kill9_up(protocol, node, settle, workload, &[]);
}

/// [`kill9_with`] on a cluster brought up with `extra` arguments; returns the cluster.
fn kill9_up(protocol: &str, node: u32, settle: &str, workload: &str, extra: &[&str]) -> Local {
    let mut args = vec!["--no-delay", "--durable"];
    args.extend_from_slice(extra);
    let c = Local::up(protocol, "us3", &args);
    let r = bench_through_a_kill9(&c, node, workload, settle, &[]);
    assert!(r["committed"].as_u64().unwrap() >= 20, "{r}");
    let log = c.log(node);
    assert!(
        log.contains("replayed the journal"),
        "node {node} did not recover from its journal:\n{log}"
    );
    c
}

/// A 5 s bench of `workload` by 6 clients (then `settle`) on `c`, with `kill -9` of
/// server `node` 1.5 s in and its restart by the documented command, with extra
/// environment variables `env`, 0.7 s later: the history checks clean and durable.
/// Returns the bench's report.
fn bench_through_a_kill9(
    c: &Local,
    node: u32,
    workload: &str,
    settle: &str,
    env: &[(&str, &str)],
) -> serde_json::Value {
    let b = c.workload_bench(workload, 6, "5s", settle);
    c.kill9_and_restart(node, env);
    let r = finish(c, b);
    assert!(r["check"]["durable"].as_bool().unwrap(), "{r}");
    r
}

/// A journal that checkpoints every 300 inputs: the killed server is rebuilt from its
/// latest checkpoint plus the inputs after it (not from every input since it started),
/// by the documented restart command, which reads the cadence from the cluster file.
/// The history checks clean, restarted replica included. `then` is what the node logs
/// after restoring: a durable protocol recovers; HACommit's journalled replica resumes
/// where it stopped.
fn kill9_from_a_checkpoint(protocol: &str, then: &str) {
    let c = Local::up(
        protocol,
        "us3",
        &["--no-delay", "--durable", "--checkpoint-every", "300"],
    );
    let b = c.workload_bench("bank", 6, "8s", "1s");
    // Kill once node 2 has checkpointed: how soon it has 300 inputs depends on the
    // machine (a fixed 1.5 s was not always enough on a busy one).
    let deadline = std::time::Instant::now() + Duration::from_secs(7);
    while !c.log(2).contains("checkpointed the journal") && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        c.log(2).contains("checkpointed the journal"),
        "node 2 did not checkpoint within 7 s of an 8 s bench:\n{}",
        c.log(2)
    );
    c.kill9_after(2, Duration::ZERO);
    std::thread::sleep(Duration::from_millis(700));
    c.restart_with(2, &[]);
    let r = finish(&c, b);
    assert!(r["check"]["durable"].as_bool().unwrap(), "{r}");
    assert!(r["committed"].as_u64().unwrap() >= 20, "{r}");
    let log = c.log(2);
    let (before, after) = log.split_once("restored the checkpoint").unwrap_or_else(|| {
        panic!("node 2 did not restore a checkpoint:\n{log}");
    });
    assert!(before.contains("checkpointed the journal"), "{log}");
    assert!(after.contains(then), "{log}");
}

#[test]
fn kill9_2pc_2pl_restart_recovers_from_a_checkpoint() {
    kill9_from_a_checkpoint("2pc-2pl", "replayed the journal; recovering");
}

#[test]
fn kill9_hacommit_restart_resumes_from_a_checkpoint() {
    kill9_from_a_checkpoint("hacommit", "resuming where it stopped");
}

#[test]
fn kill9_crossstitch_restart_resumes_from_a_checkpoint() {
    kill9_from_a_checkpoint("crossstitch", "resuming where it stopped");
}

/// Issue 16: a HACommit server killed and *not* restarted (the leader of some groups,
/// a follower of others) under `bench --workload bank`: its groups elect new leaders,
/// clients re-send reads to them, and the run checks clean, the bank's invariant
/// included (it was reported broken, wrongly, when the killed server was a shard's
/// first replica: the bench read that shard from the missing snapshot as never
/// written). Commits go on after the kill.
#[test]
fn kill9_hacommit_server_not_restarted_the_others_go_on_and_check_clean() {
    let logs = kill9_not_restarted("hacommit");
    // Issue 53: the fail-over is in the operators' logs at INFO.
    assert!(
        logs.iter().any(|l| l.contains("hacommit: leads shard")),
        "no survivor logged the view change: {logs:?}"
    );
}

/// Issue 16, crossstitch.md §4.1: a CrossStitch server killed and not restarted (the
/// primary of some shards, the replica of others). Its keys fail over to their
/// replicas, the shards it was the replica of go on with their primary alone, and the
/// history checks clean. Commits go on after the kill (before fail-over, every
/// transaction touching the dead server's shards aborted by time-out: 3.8 commits/s
/// against 38.6 before, scripts/kill-stall.sh).
#[test]
fn kill9_crossstitch_server_not_restarted_the_others_go_on_and_check_clean() {
    kill9_not_restarted("crossstitch");
}

/// Issue 53, replicated-commit.md §5 (fault tolerance): an rc server killed and never
/// restarted. Its DC's vote on the transactions it coordinated is gone for good: the
/// other DCs must go on committing, and its DC's live server must hold every commit
/// (before, a live replica lacked 20 committed writes and keys stayed locked, because
/// only the dead coordinator would have installed them there).
#[test]
fn kill9_rc_server_not_restarted_the_others_go_on_and_check_clean() {
    kill9_not_restarted("rc");
}

/// Issue 53, catenae.md §IV: NY's coordinator (node 0, also the chain server of half
/// NY's shards) killed and never restarted, `secondary=on`. The standby takes over,
/// NY's clients follow it and keep committing, and NY's live server installs every
/// commit. Before NY's coordinator went on without executing what it could not
/// (catenae `validate.rs`, `give_up_stale`), NY committed nothing after the kill, node
/// 1 lacked 21 committed writes and 50 keys stayed locked (scripts/fault-table.sh).
#[test]
fn kill9_catenae_coordinator_not_restarted_the_standby_serves_its_dc() {
    let c = Local::up("catenae:secondary=on", "us3", &["--no-delay"]);
    let b = c.bank_bench(6, "8s", "2s");
    let killed = c.kill9_after(0, Duration::from_millis(1500));
    let r = finish(&c, b);
    assert!(r["check"]["durable"].as_bool().unwrap(), "{r}");
    assert!(r["check"]["live"].as_bool().unwrap(), "{r}");
    let epoch = c.epoch_ns();
    let after = commits_between(&c, (killed + 3_000_000_000).saturating_sub(epoch), u64::MAX);
    assert!(
        after[0] > 0,
        "NY committed nothing after its coordinator was killed: {after:?} {r}"
    );
}

/// `kill -9` of node 0 of a `us3` cluster of `protocol` 1.5 s into an 8 s `bank`
/// benchmark, never restarted: the history must check clean and something must commit
/// from 3 s after the kill on (a view change, a fail-over or a read re-send each take
/// about the 1 s failure timeout). Returns the survivors' logs.
fn kill9_not_restarted(protocol: &str) -> Vec<String> {
    let c = Local::up(protocol, "us3", &["--no-delay"]);
    let b = c.bank_bench(6, "8s", "2s");
    let killed = c.kill9_after(0, Duration::from_millis(1500));
    let r = finish(&c, b);
    assert!(r["check"]["durable"].as_bool().unwrap(), "{r}");
    let epoch = c.epoch_ns();
    let after = commits_between(&c, (killed + 3_000_000_000).saturating_sub(epoch), u64::MAX);
    assert!(
        after.iter().sum::<u64>() > 0,
        "{protocol}: nothing committed after node 0 was killed: {r}"
    );
    (1..6).map(|n| c.log(n)).collect()
}

/// Whether a server's status role (`primary of s0; replica of s3`) names it primary of
/// `shard`.
fn primary_of(role: &str, shard: &str) -> bool {
    role.split("; ").any(|p| {
        p.strip_prefix("primary of ")
            .is_some_and(|l| l.split(", ").any(|s| s == shard))
    })
}

/// crossstitch.md §4.1: node 0 (primary of shard 0) killed with `kill -9` under load:
/// its keys fail over to its replica, node 1; restarted by the documented command, it
/// re-syncs as a replica and then takes its primary role back ("before resuming its
/// original role"), and the history checks clean.
#[test]
fn kill9_crossstitch_restarted_server_takes_its_primary_role_back() {
    let c = Local::up("crossstitch", "us3", &["--no-delay"]);
    let role = |n: usize| -> String { c.status().1[n]["status"]["role"].as_str().unwrap_or("").to_string() };
    let wait_for = |what: &str, ok: &dyn Fn() -> bool| {
        // Generous: a loaded machine may be slow.
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        while !ok() {
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: node 0 {}, node 1 {}",
                role(0),
                role(1)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    assert!(primary_of(&role(0), "s0"), "{}", role(0));
    let b = c.bank_bench(6, "12s", "2s");
    c.kill9_after(0, Duration::from_millis(1500));
    wait_for("shard 0 fails over to node 1", &|| primary_of(&role(1), "s0"));
    c.restart(0);
    wait_for("node 0 takes shard 0 back", &|| primary_of(&role(0), "s0"));
    assert!(!primary_of(&role(1), "s0"), "{}", role(1));
    let r = finish(&c, b);
    assert_eq!(r["check"]["anomalies"].as_array().unwrap().len(), 0, "{r}");
    assert!(r["check"]["durable"].as_bool().unwrap(), "{r}");
}

/// Catenae with a secondary coordinator (catenae.md §IV): `kill -9` of NY's coordinator
/// (node 0) in the middle of a benchmark. Without a secondary every DC waits for NY's
/// epoch messages until it is back; with one, NY's second node takes over after the
/// fail-over timeout, so transactions commit while node 0 is down. The restarted node
/// stands by, and the history checks clean. Node 0 is also a chain server, so NY
/// executes nothing on its records while it is down; under `bank` (100 accounts, 6
/// clients) CA and TX then executed some conflicting transaction differently and
/// waited for NY's vote, and every client was stuck within a second of the kill in 2
/// of 4 runs before NY's coordinator abstained for what it cannot execute (catenae
/// `mod.rs`, "Abstentions"); 0 of 7 since.
#[test]
fn kill9_catenae_coordinator_fails_over_to_the_secondary() {
    let c = Local::up("catenae:secondary=on", "us3", &["--no-delay", "--durable"]);
    let b = c.bank_bench(6, "14s", "2s");
    let killed = c.kill9_after(0, Duration::from_millis(2000));
    // Well past the fail-over timeout (1 s), however slow the machine.
    std::thread::sleep(Duration::from_millis(8000));
    let restarted = unix_ns();
    c.restart(0);
    let r = finish(&c, b);
    assert!(r["check"]["durable"].as_bool().unwrap(), "{r}");
    let epoch = c.epoch_ns();
    // From 2 s after the kill: outcomes already on their way when node 0 died arrive
    // just after it.
    let during = commits_between(&c, killed + 2_000_000_000 - epoch, restarted - epoch);
    assert!(
        during.iter().sum::<u64>() > 0,
        "nothing committed while NY's coordinator was down: no takeover\n{}",
        c.log(1)
    );
}

#[test]
fn kill9_2pc_2pl_restart_recovers_from_the_journal() {
    kill9("2pc-2pl", 2, "1s");
}

#[test]
fn kill9_rc_restart_recovers_from_the_journal() {
    kill9("rc", 1, "1s");
}

/// Node 0 leads shard 0's group. A chosen entry it had not yet told the followers
/// is applied once a leader finishes it: the restarted node only after the lease
/// (10 s) lapses, so the state is read after 12 s.
#[test]
fn kill9_replog_leader_restart_recovers_from_the_journal() {
    kill9("replog", 0, "12s");
}

#[test]
fn kill9_hacommit_restart_resumes_from_the_journal() {
    kill9("hacommit", 2, "1s");
}

#[test]
fn kill9_crossstitch_restart_recovers() {
    kill9("crossstitch", 3, "1s");
}
// Issue 16: every other protocol too, each restarted by the documented command.

#[test]
fn kill9_2pc_occ_restart_recovers_from_the_journal() {
    kill9("2pc-occ", 2, "1s");
}

#[test]
fn kill9_hacommit_rc_restart_resumes_from_the_journal() {
    kill9_with("hacommit-rc", 2, "1s", "ycsb");
}

#[test]
fn kill9_pc_2pl_restart_recovers_from_the_journal() {
    kill9("pc-2pl", 1, "1s");
}

#[test]
fn kill9_pc_occ_restart_recovers_from_the_journal() {
    kill9("pc-occ", 1, "1s");
}

#[test]
fn kill9_hier_lock_restart_recovers_from_the_journal() {
    kill9("hier-lock", 1, "1s");
}

#[test]
fn kill9_hier_ts_restart_recovers_from_the_journal() {
    kill9("hier-ts", 1, "1s");
}

#[test]
fn kill9_2pc_deferred_restart_recovers_from_the_journal() {
    kill9("2pc-deferred", 1, "1s");
}

#[test]
fn kill9_catenae_restart_recovers_from_the_journal() {
    kill9("catenae", 1, "1s");
}

/// Every server of a journalled cluster killed at once and restarted (a power cut, or
/// `docker-compose down` and `up`): the cluster serves again, and nothing committed
/// before is lost. HACommit and CrossStitch replicas are designed to forget and re-sync
/// from the others; with every replica restarting there is no one to re-sync from,
/// so a restart from a journal resumes where the node stopped instead (this used to
/// leave every HACommit replica `syncing` forever).
fn whole_cluster_restart(protocol: &str) {
    let c = Local::up(protocol, "us3", &["--no-delay", "--durable"]);
    let bench = |c: &Local| finish(c, c.bank_bench(4, "2s", "2s"));
    let r = bench(&c);
    assert!(r["committed"].as_u64().unwrap() >= 10, "before: {r}");
    let servers = std::fs::read_to_string(c.dir.path().join("pids"))
        .expect("pids")
        .lines()
        .count() as u32;
    for n in 0..servers {
        signal("-9", &c.pid(n));
    }
    let gone = |n: u32| !Path::new(&format!("/proc/{}", c.pid(n))).exists();
    let start = std::time::Instant::now();
    while !(0..servers).all(gone) && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for n in 0..servers {
        c.restart(n);
    }
    let o = meridian()
        .args(["cluster", "status", "--wait", "60s", "--cluster"])
        .arg(c.file())
        .output()
        .expect("status");
    assert!(o.status.success(), "after the restart: {}", text(&o));
    let r = bench(&c);
    assert!(r["committed"].as_u64().unwrap() >= 10, "after: {r}");
    assert_eq!(r["check"]["anomalies"].as_array().unwrap().len(), 0, "after: {r}");
    assert!(r["check"]["durable"].as_bool().unwrap(), "after: {r}");
}

/// A journalled HACommit server restarted after its machine rebooted (the boot id
/// differs, stood in for by `MERIDIAN_BOOT_ID`) cannot trust its journal's unsynced
/// tail: it forgets, as the paper's replicas do, and re-syncs from the others. The
/// history checks clean and the node's log says why.
#[test]
fn kill9_hacommit_after_a_reboot_forgets_and_resyncs() {
    let c = Local::up("hacommit", "us3", &["--no-delay", "--durable"]);
    let r = bench_through_a_kill9(&c, 2, "bank", "2s", &[("MERIDIAN_BOOT_ID", "another-boot")]);
    assert!(r["committed"].as_u64().unwrap() >= 20, "{r}");
    let log = c.log(2);
    assert!(
        log.contains("machine rebooted") && log.contains("replayed the journal; recovering"),
        "node 2 did not forget after the reboot:\n{log}"
    );
    assert!(!log.contains("resuming where it stopped"), "{log}");
}

#[test]
fn whole_hacommit_cluster_restarted_from_its_journals_serves_again() {
    whole_cluster_restart("hacommit");
}

#[test]
fn whole_crossstitch_cluster_restarted_from_its_journals_serves_again() {
    whole_cluster_restart("crossstitch");
}

/// The documented restart (`meridian server --cluster F --node N`) of a node that
/// keeps no journal: a protocol that needs its log across a restart refuses to start
/// with one clear error naming `--durable` (it would otherwise serve as a new node and
/// lose what it had voted and committed).
#[test]
fn restart_without_a_journal_is_refused_where_the_protocol_needs_its_log() {
    struct Model;
    impl meridian_protocols::named::WithProtocol for Model {
        type Out = bool;
        fn with<P: meridian_protocols::Protocol>(self, p: P) -> bool {
            matches!(p.fault_model(), meridian_protocols::FaultModel::Durable)
        }
    }
    let topo = meridian_core::Topology::preset("us3").unwrap();
    let mut refused = 0;
    // Every protocol that needs its log (the others recover: `kill9_*_without_journal_*`).
    for protocol in meridian_protocols::PROTOCOLS {
        let durable = meridian_protocols::named::with_protocol(protocol, &topo, meridian_core::HomeRule::Spread, Model)
            .expect("protocol");
        if !durable {
            continue;
        }
        refused += 1;
        let c = Local::up(protocol, "us3", &["--no-delay"]);
        signal("-9", &c.pid(1));
        std::thread::sleep(Duration::from_millis(300));
        let o = meridian()
            .args(["server", "--cluster"])
            .arg(c.file())
            .args(["--node", "1"])
            .output()
            .expect("run server");
        assert!(
            !o.status.success(),
            "{protocol}: the restart was not refused: {}",
            text(&o)
        );
        let err = text(&o);
        assert!(err.contains("--durable") && err.contains("node 1"), "{protocol}: {err}");
        assert_eq!(
            err.trim().lines().filter(|l| l.contains("error")).count(),
            1,
            "{protocol}: {err}"
        );
    }
    assert_eq!(refused, 10, "the log-based protocols");
}

#[test]
fn kill9_hacommit_rc_without_journal_resyncs() {
    kill9_memory_only_with("hacommit-rc", 1, "ycsb");
}

/// `kill -9` and the documented restart, without journals, for the protocols whose
/// replicas are designed to forget (HACommit re-syncs from its group, CrossStitch from
/// its partners): the restarted node recovers instead of starting as new, and the
/// history checks clean (serializable, atomic, durable on every replica, invariant).
fn kill9_memory_only(protocol: &str, node: u32) {
    kill9_memory_only_with(protocol, node, "bank");
}

/// [`kill9_memory_only`] under a chosen workload.
fn kill9_memory_only_with(protocol: &str, node: u32, workload: &str) {
    let c = Local::up(protocol, "us3", &["--no-delay"]);
    let r = bench_through_a_kill9(&c, node, workload, "3s", &[]);
    assert_eq!(r["check"]["anomalies"].as_array().unwrap().len(), 0, "{r}");
    assert_eq!(r["check"]["invariant"], serde_json::Value::Null, "{r}");
    let log = c.log(node);
    assert!(
        log.contains("restarted with no state"),
        "node {node} did not recover as a restarted node:\n{log}"
    );
}

#[test]
fn kill9_hacommit_without_journal_resyncs() {
    kill9_memory_only("hacommit", 1);
}

#[test]
fn kill9_crossstitch_without_journal_resyncs() {
    kill9_memory_only("crossstitch", 3);
}

/// A node unreachable for two seconds (SIGSTOP: connections stay open, nothing is read
/// or answered), then back: the history checks clean and work goes on after it.
#[test]
fn unreachable_node_for_a_while() {
    let c = Local::up("hacommit", "us3", &["--no-delay"]);
    let b = c.bank_bench(6, "5s", "2s");
    std::thread::sleep(Duration::from_millis(1000));
    let pid = c.pid(1);
    signal("-STOP", &pid);
    std::thread::sleep(Duration::from_millis(2000));
    signal("-CONT", &pid);
    let r = finish(&c, b);
    assert!(r["committed"].as_u64().unwrap() >= 20, "{r}");
}

/// DC TX cut off from NY and CA for 10 s in the middle of a bench, then healed by
/// itself (`cluster partition --isolate TX --for 10s`): the history checks clean and
/// nothing committed is lost, work goes on after the heal, and (`majority`) clients in
/// NY and CA keep committing while TX is cut off.
fn isolate_a_dc(protocol: &str, majority: bool) {
    let c = Local::up(protocol, "us3", &["--no-delay"]);
    let b = c.bank_bench(6, "18s", "3s");
    std::thread::sleep(Duration::from_secs(2));
    let o = meridian()
        .args([
            "cluster",
            "partition",
            "--isolate",
            "TX",
            "--for",
            "10s",
            "--json",
            "--dir",
        ])
        .arg(c.dir.path())
        .output()
        .expect("partition");
    assert!(o.status.success(), "cluster partition: {}", text(&o));
    let cut: serde_json::Value = serde_json::from_slice(&o.stdout).expect("partition json");
    assert_eq!(cut["cut"], serde_json::json!(["TX-NY", "TX-CA"]), "{cut}");
    let (start, until) = (cut["start_ns"].as_u64().unwrap(), cut["until_ns"].as_u64().unwrap());
    let r = finish(&c, b);
    assert_eq!(r["check"]["anomalies"].as_array().unwrap().len(), 0, "{r}");
    assert!(r["check"]["durable"].as_bool().unwrap(), "{r}");
    let before = commits_between(&c, 0, start);
    let during = commits_between(&c, start, until);
    let after = commits_between(&c, until + 1_000_000_000, u64::MAX);
    eprintln!(
        "{protocol}: commits by DC (NY, CA, TX) before the cut {before:?}, during it {during:?}, from 1 s after the heal {after:?}"
    );
    assert!(after.iter().sum::<u64>() > 0, "no commit after the heal: {r}");
    if majority {
        // After the groups led from TX elected new leaders (about a second), NY and CA
        // keep committing: at least 5% of their rate before the cut (60-115% measured
        // on a 2-core machine; 0.2-1.4% before issue 16's read re-send and early release
        // of a cut-off client's locks). A loose floor, for a loaded machine.
        let late = commits_between(&c, start + 2_000_000_000, until);
        let secs = (until - start - 2_000_000_000) as f64 / 1e9;
        let just_before = commits_between(&c, start.saturating_sub(1_500_000_000), start);
        let rate_before = (just_before[0] + just_before[1]) as f64 / 1.5;
        let rate_during = (late[0] + late[1]) as f64 / secs;
        assert!(
            rate_during >= 0.05 * rate_before,
            "NY and CA committed {rate_during:.0}/s while TX was cut off, {rate_before:.0}/s before: {r}"
        );
    }
}

#[test]
fn hacommit_keeps_committing_on_the_majority_side_of_a_cut_off_dc() {
    isolate_a_dc("hacommit", true);
}

/// Replog's leaders hold a 10 s lease (Spanner), longer than the cut: groups led from
/// TX wait for it, so only safety and the recovery after the heal are asserted.
#[test]
fn replog_survives_a_cut_off_dc() {
    isolate_a_dc("replog", false);
}

/// With a 2 s lease (`replog:lease=2s`) the groups led from TX elect a leader on the
/// majority side within the cut, and NY and CA keep committing.
#[test]
fn replog_with_a_2s_lease_keeps_committing_on_the_majority_side_of_a_cut_off_dc() {
    isolate_a_dc("replog:lease=2s", true);
}

/// Issue 16: Catenae's servers treat every step as forced before they act (its
/// `on_crash` keeps everything) but charge no log writes, so a journalled Catenae server
/// fsyncs its journal before every batch of messages leaves; HACommit forces only its
/// restart watermark, about twice a second (a start time half a second past the last
/// mark), not once per transaction. (Catenae's journal was never fsynced before: a power
/// loss could lose state its messages had told others.)
#[test]
fn catenae_fsyncs_its_journal_before_its_messages_leave() {
    let syncs = |protocol: &str| -> Vec<u64> {
        let c = Local::up(protocol, "us3", &["--no-delay", "--durable"]);
        finish(&c, c.bench(&["--clients", "3", "--duration", "1s", "--settle", "1s"]));
        let (_, v) = c.status();
        v.as_array()
            .unwrap()
            .iter()
            .map(|n| {
                n["status"]["journal_syncs"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("no journal_syncs: {v}"))
            })
            .collect()
    };
    // Every server fsyncs once at start (its first journal entry).
    let cat = syncs("catenae");
    assert!(
        cat.iter().all(|&n| n > 1),
        "catenae servers that fsynced only at start: {cat:?}"
    );
    let ha = syncs("hacommit");
    assert!(
        ha.iter().zip(&cat).all(|(&h, &c)| h >= 1 && h < c),
        "hacommit forces its watermark only, far less often than catenae's every batch: \
         hacommit {ha:?}, catenae {cat:?}"
    );
    eprintln!("journal fsyncs per server after a 1 s bench: catenae {cat:?}, hacommit {ha:?}");
}
