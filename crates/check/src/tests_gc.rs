//! Replica chains whose start version GC collected without keeping ids (a real
//! cluster's state dump, `ReplicaSnapshot::pruned`): the chain is the end of the key's
//! order; the versions it lacks are taken as collected while they are no more than the
//! replica says it collected, and come before it in the order.

use super::tests::{hist, txn, v};
use super::*;

/// Read-modify-write of `x` by 1..=n in turn: each reads its predecessor's version.
fn rmw(n: u32) -> Vec<TxnRecord> {
    (1..=n)
        .map(|c| {
            let prev = if c == 1 { None } else { Some(v(c - 1, 0)) };
            txn(c, &[("x", prev)], &["x"])
        })
        .collect()
}

fn collected(order: &[VersionId], pruned: u64, txns: Vec<TxnRecord>) -> History {
    let mut h = hist(txns, &[("x", order)]);
    h.replicas[0].pruned.insert(Key::from("x"), pruned);
    h
}

#[test]
fn a_collected_start_is_durable_and_the_order_is_inferred_before_the_chain() {
    // Five versions; the replica holds the last two and collected three.
    let h = collected(&[v(4, 0), v(5, 0)], 3, rmw(5));
    let r = check(&h);
    assert!(r.ok(), "{:?}", r.anomalies);
    assert!(r.durable && r.serializable, "{r:?}");
    assert!(
        r.unknown.is_empty(),
        "reads-from fixes the collected versions' order: {:?}",
        r.unknown
    );
}

#[test]
fn a_replica_that_lacks_more_than_it_collected_is_not_durable() {
    // Five versions; it lists the last one and says it collected only two: two of
    // the four it lacks were lost.
    let h = collected(&[v(5, 0)], 2, rmw(5));
    let r = check(&h);
    assert!(!r.durable, "{r:?}");
    assert!(r.kinds().iter().all(|k| *k == Kind::NotDurable), "{:?}", r.anomalies);
    assert!(
        r.anomalies[0]
            .detail
            .contains("4 of the key's committed versions are not there, and it collected only 2"),
        "{}",
        r.anomalies[0].detail
    );
    // Without the count, each lacking version is reported as before.
    let mut h = h;
    h.replicas[0].pruned.clear();
    let r = check(&h);
    assert_eq!(
        r.anomalies.iter().filter(|a| a.kind == Kind::NotDurable).count(),
        4,
        "{:?}",
        r.anomalies
    );
}

#[test]
fn a_collected_start_does_not_hide_a_lost_update() {
    // 3 and 2 both read 1's version and wrote x: a lost update, whatever the order of
    // the collected versions. The replica holds only 3's version and collected two.
    let txns = vec![
        txn(1, &[("x", None)], &["x"]),
        txn(2, &[("x", Some(v(1, 0)))], &["x"]),
        txn(3, &[("x", Some(v(1, 0)))], &["x"]),
    ];
    let h = collected(&[v(3, 0)], 2, txns);
    let r = check(&h);
    assert!(!r.serializable, "{r:?}");
    assert!(r.durable, "{:?}", r.anomalies);
}

#[test]
fn the_versions_a_chain_lacks_come_before_it() {
    // 1 and 2 write x blindly, 2 writes y too; 3 reads y from 2 but x from 1. The
    // replica holds 2's version of x and collected one: 1's came before it, so 3 read
    // a version 2 had overwritten after reading from 2, a cycle. Only the count says
    // so: taken as a subsequence, the chain would allow 1's version last.
    let txns = vec![
        txn(1, &[], &["x"]),
        txn(2, &[], &["x", "y"]),
        txn(3, &[("y", Some(v(2, 1))), ("x", Some(v(1, 0)))], &[]),
    ];
    let mut h = collected(&[v(2, 0)], 1, txns);
    h.replicas[0].keys.insert(
        Key::from("y"),
        meridian_core::KeyState {
            versions: vec![v(2, 1)],
            value: None,
        },
    );
    let r = check(&h);
    assert!(!r.serializable, "{r:?}");
    assert!(r.durable, "{:?}", r.anomalies);
}

#[test]
fn replicas_that_collected_different_amounts_agree_and_the_lagging_one_lacks_the_newest() {
    // x: 1..=6, each read-modify-write. Replica 0 collected two and holds [3, 4, 5]:
    // it lost 6. Replica 1 collected four and holds [5, 6]. They agree (the order is
    // taken from replica 1, which reaches furthest), and 0's loss is reported.
    let mut h = collected(&[v(3, 0), v(4, 0), v(5, 0)], 2, rmw(6));
    h.meta.shard_replicas = vec![vec![NodeId(0), NodeId(1)]];
    let mut r1 = h.replicas[0].clone();
    r1.node = NodeId(1);
    r1.keys.get_mut(&Key::from("x")).unwrap().versions = vec![v(5, 0), v(6, 0)];
    r1.pruned.insert(Key::from("x"), 4);
    h.replicas.push(r1);
    let r = check(&h);
    assert!(!r.kinds().contains(&Kind::Divergent), "{:?}", r.anomalies);
    // It lacks three (1, 2 and 6) and collected two: which two it cannot say, so each
    // of the three is reported, 6 among them.
    assert!(r.kinds().iter().all(|k| *k == Kind::NotDurable), "{:?}", r.anomalies);
    assert_eq!(r.anomalies.len(), 3, "{:?}", r.anomalies);
    assert!(
        r.anomalies.iter().all(|a| a.detail.contains("replica n0 lacks it")),
        "{:?}",
        r.anomalies
    );
    assert!(
        r.anomalies.iter().any(|a| a.detail.contains(&format!("x={}", v(6, 0)))),
        "{:?}",
        r.anomalies
    );
}
