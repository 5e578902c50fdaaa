//! Version GC (issue 53, 2; `MvStore::collect`) changes nothing a protocol does: the
//! collecting protocols read only a key's newest committed version, so a run that
//! collects superseded versions after a tenth of a second of virtual time is the run
//! that never collects, message for message, and its replicas' chains (with the
//! collected ids the simulator records) are the same. A protocol that read a collected
//! version, or installed one again after collecting it (a decision applied twice, a
//! log replayed over the store), would differ here or list a version twice.

use meridian_core::Topology;
use meridian_sim::{run_named, SimConfig, SimReport};

fn strip(r: &SimReport) -> String {
    let mut r = r.clone();
    r.wall_s = 0.0;
    r.protocol_stats.remove("versions_collected");
    serde_json::to_string(&r).unwrap()
}

fn collection_changes_nothing(p: &str) {
    for (topo, wl, seed) in [("us3", "ycsb:theta=0.9,keys=100", 1), ("rc5", "bank", 2)] {
        let mut c = SimConfig::new(Topology::preset(topo).unwrap(), wl);
        c.txns = 600;
        c.clients = 16;
        c.seed = seed;
        c.faults = "random:crashes=2,partitions=1,loss=0.02,dup=0.05,reorder=0.1".into();
        c.version_ttl = u64::MAX;
        let kept = run_named(p, &c, &mut |_, _| {}).unwrap();
        assert!(
            kept.report.check.serializable && kept.report.check.durable,
            "{p} {topo}: {}",
            strip(&kept.report)
        );
        assert!(!kept.report.protocol_stats.contains_key("versions_collected"));
        c.version_ttl = 100_000_000;
        let collected = run_named(p, &c, &mut |_, _| {}).unwrap();
        let n = collected
            .report
            .protocol_stats
            .get("versions_collected")
            .copied()
            .unwrap_or(0.0);
        assert!(n > 100.0, "{p} {topo}: only {n} versions collected");
        assert_eq!(strip(&kept.report), strip(&collected.report), "{p} {topo}");
        assert_eq!(kept.history, collected.history, "{p} {topo}");
    }
}

/// HACommit's re-sync sends what a peer collected in place of its old versions, and
/// a Paxos Commit data server does not log a re-sent install whose versions fall where
/// it collected: their runs collecting are cheaper, so their timing differs, and the
/// test is that they collect and check clean (a version listed twice is divergent).
fn collection_checks_clean(p: &str) {
    // Read committed (`hacommit-rc`) may break bank's invariant by design.
    let bank = if p.ends_with("-rc") {
        "ycsb:theta=0.5,keys=50"
    } else {
        "bank"
    };
    for (topo, wl, seed) in [
        ("us3", "ycsb:theta=0.9,keys=100", 1),
        ("rc5", bank, 2),
        ("us3", bank, 3),
    ] {
        let mut c = SimConfig::new(Topology::preset(topo).unwrap(), wl);
        c.txns = 600;
        c.clients = 16;
        c.seed = seed;
        c.faults = "random:crashes=2,partitions=1,loss=0.02,dup=0.05,reorder=0.1".into();
        c.version_ttl = 100_000_000;
        let r = run_named(p, &c, &mut |_, _| {}).unwrap().report;
        let n = r.protocol_stats.get("versions_collected").copied().unwrap_or(0.0);
        assert!(n > 100.0, "{p} {topo}: only {n} versions collected");
        assert!(
            r.check.anomalies.is_empty() && r.check.durable,
            "{p} {topo}: {}",
            strip(&r)
        );
    }
}

/// CrossStitch reads at timestamps (MVTO), so its version GC keeps what a read at the
/// oldest timestamp still served may see, and refuses a transaction older than that
/// (`MvtoTooOld`). A client whose clock is 10 s behind the others' runs transactions
/// older than the others': while it is active at a server it holds that server's mark
/// back, but with its DC cut off for 5 s it is not at the other DCs' servers, and back it is
/// refused there at keys
/// whose older versions were collected, until its clock passes the mark; the history
/// checks clean; the mutant that serves them anyway reads versions
/// that are not the ones at its timestamp, which the checker catches.
#[test]
fn crossstitch_collects_and_refuses_transactions_older_than_what_it_kept() {
    let mut c = SimConfig::new(Topology::preset("us3").unwrap(), "ycsb:theta=0.9,keys=100");
    c.txns = 1500;
    c.clients = 16;
    c.seed = 4;
    c.faults = "skew:client=0,by=-10s;partition:a=NY,b=CA,at=2s,for=5s;partition:a=NY,b=TX,at=2s,for=5s".into();
    c.version_ttl = 100_000_000;
    let r = run_named("crossstitch", &c, &mut |_, _| {}).unwrap().report;
    let n = r.protocol_stats.get("versions_collected").copied().unwrap_or(0.0);
    assert!(n > 100.0, "only {n} versions collected");
    assert!(r.check.anomalies.is_empty() && r.check.durable, "{}", strip(&r));
    let too_old = meridian_core::AbortReason::MvtoTooOld.to_string();
    assert!(
        r.abort_reasons.get(&too_old).copied().unwrap_or(0) > 0,
        "no transaction refused as too old: {:?}",
        r.abort_reasons
    );
    let m = run_named("crossstitch:mutant=read-collected", &c, &mut |_, _| {})
        .unwrap()
        .report;
    assert!(
        !m.check.anomalies.is_empty() || !m.check.serializable,
        "the mutant served collected versions unnoticed: {}",
        strip(&m)
    );
}

macro_rules! each_protocol {
    ($how:ident; $($test:ident: $p:expr,)*) => {
        $(
            #[test]
            fn $test() {
                $how($p);
            }
        )*
    };
}

each_protocol! {collection_checks_clean;
    collection_checks_clean_hacommit: "hacommit",
    collection_checks_clean_hacommit_rc: "hacommit-rc",
    collection_checks_clean_pc_2pl: "pc-2pl",
    collection_checks_clean_pc_occ: "pc-occ",
    collection_checks_clean_crossstitch: "crossstitch",
}

each_protocol! {collection_changes_nothing;
    collection_changes_nothing_2pc_2pl_two_copies: "2pc-2pl:copies=2",
    collection_changes_nothing_2pc_2pl: "2pc-2pl",
    collection_changes_nothing_2pc_occ: "2pc-occ",
    collection_changes_nothing_rc: "rc",
    collection_changes_nothing_replog: "replog",
}
