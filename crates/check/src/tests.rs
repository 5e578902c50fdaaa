//! Known-bad histories, one per anomaly class, each expecting that exact anomaly; and
//! a property test that serial executions are always judged clean.

use super::*;
use meridian_core::{ClientId, DcId, KeyState, ReadRec, Value, WriteRec};
use proptest::prelude::*;
use std::collections::BTreeMap;

pub(crate) fn tid(c: u32) -> TxnId {
    TxnId { client: c, seq: 1 }
}
pub(crate) fn v(c: u32, w: u32) -> VersionId {
    VersionId { txn: tid(c), seq: w }
}

/// A transaction `c` with reads (key, version) and writes (keys, numbered in order).
pub(crate) fn txn(c: u32, reads: &[(&str, Option<VersionId>)], writes: &[&str]) -> TxnRecord {
    TxnRecord {
        id: tid(c),
        client: ClientId(c),
        node: NodeId(100 + c),
        dc: DcId(0),
        program: "t".into(),
        start: c as u64 * 10,
        commit_start: None,
        end: Some(c as u64 * 10 + 5),
        outcome: Outcome::Committed,
        abort_reason: None,
        reads: reads
            .iter()
            .map(|(k, v)| ReadRec {
                key: Key::from(*k),
                version: *v,
            })
            .collect(),
        writes: writes
            .iter()
            .enumerate()
            .map(|(i, k)| WriteRec {
                key: Key::from(*k),
                version: v(c, i as u32),
            })
            .collect(),
        wan_trips: 0,
    }
}

pub(crate) fn replica(node: u32, order: &[(&str, &[VersionId])]) -> ReplicaSnapshot {
    ReplicaSnapshot {
        node: NodeId(node),
        keys: order
            .iter()
            .map(|(k, vs)| {
                (
                    Key::from(*k),
                    KeyState {
                        versions: vs.to_vec(),
                        value: Some(Value::default()),
                    },
                )
            })
            .collect::<BTreeMap<_, _>>(),
        pruned: BTreeMap::new(),
    }
}

pub(crate) fn hist(txns: Vec<TxnRecord>, order: &[(&str, &[VersionId])]) -> History {
    History {
        meta: Meta {
            protocol: "test".into(),
            strict: true,
            shards: 1,
            shard_replicas: vec![vec![NodeId(0)]],
            read_committed: false,
        },
        txns,
        replicas: vec![replica(0, order)],
    }
}

pub(crate) fn kinds(h: &History) -> Vec<Kind> {
    check(h).kinds()
}

#[test]
fn clean_history_is_clean() {
    let h = hist(
        vec![
            txn(1, &[], &["x"]),
            txn(2, &[("x", Some(v(1, 0)))], &["y"]),
            txn(3, &[("y", Some(v(2, 0))), ("x", Some(v(1, 0)))], &[]),
        ],
        &[("x", &[v(1, 0)]), ("y", &[v(2, 0)])],
    );
    let r = check(&h);
    assert!(r.ok(), "{:?}", r.anomalies);
    assert!(r.serializable && r.strict_serializable && r.atomic && r.durable);
    assert_eq!(r.committed, 3);
}

#[test]
fn g0_dirty_write() {
    let h = hist(
        vec![txn(1, &[], &["x", "y"]), txn(2, &[], &["x", "y"])],
        &[("x", &[v(1, 0), v(2, 0)]), ("y", &[v(2, 1), v(1, 1)])],
    );
    let r = check(&h);
    assert_eq!(r.kinds(), vec![Kind::G0]);
    assert!(!r.serializable);
    assert!(r.anomalies[0].detail.contains("-ww(x)->"), "{}", r.anomalies[0].detail);
}

#[test]
fn g1a_aborted_read() {
    let mut t1 = txn(1, &[], &["x"]);
    t1.outcome = Outcome::Aborted;
    let h = hist(vec![t1, txn(2, &[("x", Some(v(1, 0)))], &[])], &[]);
    let r = check(&h);
    assert_eq!(r.kinds(), vec![Kind::G1a]);
    assert!(!r.atomic && !r.serializable);
}

#[test]
fn g1a_aborted_version_installed() {
    let mut t1 = txn(1, &[], &["x"]);
    t1.outcome = Outcome::Aborted;
    let h = hist(vec![t1], &[("x", &[v(1, 0)])]);
    assert_eq!(kinds(&h), vec![Kind::G1a]);
}

#[test]
fn g1b_intermediate_read() {
    let h = hist(
        vec![txn(1, &[], &["x", "x"]), txn(2, &[("x", Some(v(1, 0)))], &[])],
        &[("x", &[v(1, 1)])],
    );
    assert_eq!(kinds(&h), vec![Kind::G1b]);
}

#[test]
fn g1c_circular_information_flow() {
    let h = hist(
        vec![
            txn(1, &[("y", Some(v(2, 0)))], &["x"]),
            txn(2, &[("x", Some(v(1, 0)))], &["y"]),
        ],
        &[("x", &[v(1, 0)]), ("y", &[v(2, 0)])],
    );
    let r = check(&h);
    assert_eq!(r.kinds(), vec![Kind::G1c]);
    let d = &r.anomalies[0].detail;
    assert!(d.contains("-wr(x)->") && d.contains("-wr(y)->"), "{d}");
}

#[test]
fn g_single_read_skew() {
    // T1 reads x before T2 and y after T2.
    let h = hist(
        vec![
            txn(1, &[("x", None), ("y", Some(v(2, 1)))], &[]),
            txn(2, &[], &["x", "y"]),
        ],
        &[("x", &[v(2, 0)]), ("y", &[v(2, 1)])],
    );
    let r = check(&h);
    // a read skew is also, precisely, a fractured read of T2's writes
    assert_eq!(r.kinds(), vec![Kind::FracturedRead, Kind::GSingle]);
    let g = r.anomalies.iter().find(|a| a.kind == Kind::GSingle).unwrap();
    assert_eq!(g.detail.matches("-rw(").count(), 1, "{}", g.detail);
}

#[test]
fn g2_write_skew() {
    let h = hist(
        vec![
            txn(1, &[("x", None), ("y", None)], &["x"]),
            txn(2, &[("x", None), ("y", None)], &["y"]),
        ],
        &[("x", &[v(1, 0)]), ("y", &[v(2, 0)])],
    );
    let r = check(&h);
    assert_eq!(r.kinds(), vec![Kind::G2]);
    assert_eq!(r.anomalies[0].detail.matches("-rw(").count(), 2);
}

#[test]
fn lost_update() {
    let h = hist(
        vec![txn(1, &[("x", None)], &["x"]), txn(2, &[("x", None)], &["x"])],
        &[("x", &[v(1, 0), v(2, 0)])],
    );
    assert_eq!(kinds(&h), vec![Kind::LostUpdate]);
}

#[test]
fn fractured_read_is_an_atomicity_violation() {
    // T3 sees T1's x but the initial y although T1 also wrote y.
    let h = hist(
        vec![
            txn(1, &[], &["x", "y"]),
            txn(3, &[("x", Some(v(1, 0))), ("y", None)], &[]),
        ],
        &[("x", &[v(1, 0)]), ("y", &[v(1, 1)])],
    );
    let r = check(&h);
    assert!(r.kinds().contains(&Kind::FracturedRead));
    assert!(!r.atomic);
}

#[test]
fn stale_read_after_commit_breaks_only_strictness() {
    // T1 commits x in [10,15]; T2 starts at 20 and reads the initial x.
    let h = hist(
        vec![txn(1, &[], &["x"]), txn(2, &[("x", None)], &[])],
        &[("x", &[v(1, 0)])],
    );
    let r = check(&h);
    assert!(r.serializable);
    assert!(!r.strict_serializable);
    assert_eq!(r.kinds(), vec![Kind::RealTime]);
    let mut lax = h.clone();
    lax.meta.strict = false;
    let r = check(&lax);
    assert!(r.ok() && !r.strict_serializable);
}

#[test]
fn overlapping_transactions_are_not_real_time_ordered() {
    let mut t1 = txn(1, &[], &["x"]);
    let mut t2 = txn(2, &[("x", None)], &[]);
    t1.start = 0;
    t1.end = Some(30);
    t2.start = 30; // touches, does not follow
    t2.end = Some(40);
    let h = hist(vec![t1, t2], &[("x", &[v(1, 0)])]);
    assert!(check(&h).ok());
}

#[test]
fn lost_commit_is_not_durable_and_divergence_is_caught() {
    let mut h = hist(vec![txn(1, &[], &["x"])], &[]);
    h.meta.shard_replicas = vec![vec![NodeId(0), NodeId(1)]];
    h.replicas = vec![replica(0, &[("x", &[v(1, 0)])]), replica(1, &[])];
    let r = check(&h);
    assert_eq!(r.kinds(), vec![Kind::NotDurable]);
    assert!(!r.durable && r.serializable);
    h.replicas[1] = replica(1, &[("x", &[v(1, 0), v(1, 0)])]);
    assert!(check(&h).kinds().contains(&Kind::Divergent));
}

#[test]
fn unknown_outcomes_count_by_what_was_installed() {
    let mut t1 = txn(1, &[], &["x"]);
    t1.outcome = Outcome::Unknown;
    t1.end = None;
    let t2 = txn(2, &[("x", Some(v(1, 0)))], &[]);
    let h = hist(vec![t1.clone(), t2.clone()], &[("x", &[v(1, 0)])]);
    assert!(check(&h).ok());
    // Read by a committed transaction but held by nobody: T1 counts as committed
    // and its write as lost (the other explanation, T2 reading an aborted write, is
    // no better); either way the history is not clean.
    let h = hist(vec![t1, t2], &[]);
    assert_eq!(kinds(&h), vec![Kind::NotDurable]);
}

/// A history of `progs` run one after another (transaction i is client i + 1), each
/// program a list of (key number, is a write); `adjust` may change each record
/// (times, outcome) before it is added. Version orders are the execution order.
fn serially(progs: &[Vec<(u8, bool)>], mut adjust: impl FnMut(usize, &mut TxnRecord)) -> History {
    let mut state: BTreeMap<String, Vec<VersionId>> = BTreeMap::new();
    let mut txns = vec![];
    for (i, ops) in progs.iter().enumerate() {
        let c = i as u32 + 1;
        let mut t = txn(c, &[], &[]);
        let mut wrote: BTreeMap<String, VersionId> = BTreeMap::new();
        for (k, is_write) in ops {
            let key = format!("k{k}");
            if *is_write {
                let ver = v(c, t.writes.len() as u32);
                t.writes.push(WriteRec {
                    key: Key::from(key.as_str()),
                    version: ver,
                });
                wrote.insert(key, ver);
            } else if !wrote.contains_key(&key) {
                let seen = state.get(&key).and_then(|vs| vs.last().copied());
                t.reads.push(ReadRec {
                    key: Key::from(key.as_str()),
                    version: seen,
                });
            }
        }
        for (k, ver) in wrote {
            state.entry(k).or_default().push(ver);
        }
        adjust(i, &mut t);
        txns.push(t);
    }
    let order: Vec<(String, Vec<VersionId>)> = state.into_iter().collect();
    let order_ref: Vec<(&str, &[VersionId])> = order.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
    hist(txns, &order_ref)
}

proptest! {
    /// Any serial execution of random read/write transactions checks clean: no false
    /// positives.
    #[test]
    fn serial_histories_are_clean(
        progs in proptest::collection::vec(
            proptest::collection::vec((0u8..4, any::<bool>()), 1..6), 1..25)
    ) {
        let h = serially(&progs, |_, _| {});
        let r = check(&h);
        prop_assert!(r.ok(), "{:?}", r.anomalies);
    }

    /// The real-time check without a real-time graph (a topological sort) agrees with
    /// the one through the graph, on serial executions given random intervals (so some
    /// contradict real time and some do not).
    #[test]
    fn real_time_order_agrees_with_the_real_time_graph(
        progs in proptest::collection::vec(
            (proptest::collection::vec((0u8..3, any::<bool>()), 1..5), 0u64..30, 0u64..12, 0u8..8), 1..14)
    ) {
        let ops: Vec<Vec<(u8, bool)>> = progs.iter().map(|p| p.0.clone()).collect();
        let h = serially(&ops, |i, t| {
            let (_, start, len, outcome) = &progs[i];
            t.start = *start;
            t.end = Some(start + len);
            // now and then an outcome the client never learned (no end)
            if *outcome == 0 {
                t.outcome = Outcome::Unknown;
            }
        });
        let mut c = Checker::new(&h);
        c.version_order();
        c.read_evidence();
        c.committed_set();
        c.infer_orders();
        let mut g = c.build_graph();
        prop_assert!(g.sccs(|_| true).is_empty(), "a serial execution's graph is acyclic");
        let fast = c.real_time_order(&g);
        let slow = c.real_time_graph(&mut g, &[]);
        prop_assert_eq!(fast, slow);
        prop_assert_eq!(slow, !c.anomalies.iter().any(|a| a.kind == Kind::RealTime));
        // the graph pass leaves the graph as it found it
        prop_assert_eq!(c.real_time_order(&g), fast);
    }
}

#[test]
fn read_committed_claims_allow_anti_dependency_cycles_but_not_g1() {
    // Write skew and a lost update are allowed under read committed (and still reported
    // as not serializable); an aborted read and a ww/wr cycle are not.
    let mut skew = hist(
        vec![
            txn(1, &[("x", None), ("y", None)], &["x"]),
            txn(2, &[("x", None), ("y", None)], &["y"]),
        ],
        &[("x", &[v(1, 0)]), ("y", &[v(2, 0)])],
    );
    skew.meta.read_committed = true;
    let r = check(&skew);
    assert!(r.ok() && !r.serializable, "{r:?}");
    let mut lost = hist(
        vec![txn(1, &[("x", None)], &["x"]), txn(2, &[("x", None)], &["x"])],
        &[("x", &[v(1, 0), v(2, 0)])],
    );
    lost.meta.read_committed = true;
    assert!(check(&lost).ok());
    let mut t1 = txn(1, &[], &["x"]);
    t1.outcome = Outcome::Aborted;
    let mut dirty = hist(vec![t1, txn(2, &[("x", Some(v(1, 0)))], &[])], &[]);
    dirty.meta.read_committed = true;
    assert_eq!(check(&dirty).kinds(), vec![Kind::G1a]);
}

#[test]
fn unknown_outcome_without_a_write_record_counts_by_its_installed_versions() {
    // T1's client crashed before learning what its shipped execution wrote.
    let mut t1 = txn(1, &[], &[]);
    t1.outcome = Outcome::Unknown;
    t1.end = None;
    let h = hist(
        vec![t1.clone(), txn(2, &[("x", Some(v(1, 0)))], &[])],
        &[("x", &[v(1, 0)])],
    );
    let r = check(&h);
    assert!(r.ok(), "{:?}", r.anomalies);
    assert_eq!(r.committed, 2, "installed, so it counts as committed");
    assert_eq!(
        r.committed_of_unknown_outcome, 1,
        "and is told apart from the clients' commits"
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["committed_of_unknown_outcome"], 1);
    // Still caught: an installed version of an aborted transaction beside it.
    let mut t3 = txn(3, &[], &["y"]);
    t3.outcome = Outcome::Aborted;
    let h = hist(vec![t1, t3], &[("x", &[v(1, 0)]), ("y", &[v(3, 0)])]);
    assert_eq!(kinds(&h), vec![Kind::G1a]);
}

#[test]
fn unknown_outcome_read_by_a_committed_transaction_counts_committed() {
    // T1's client crashed; its shipped execution wrote x and y (no write records).
    // Every copy of y lost T1's version, but T2 (committed) read it: T1 committed, its
    // y is simply lost. Before, the checker rebuilt T1's writes from x alone and called
    // T2's read of y an intermediate write (G1b).
    let mut t1 = txn(1, &[], &[]);
    t1.outcome = Outcome::Unknown;
    t1.end = None;
    let t2 = txn(2, &[("y", Some(v(1, 1)))], &[]);
    let h = hist(vec![t1.clone(), t2.clone()], &[("x", &[v(1, 0)])]);
    assert_eq!(kinds(&h), vec![Kind::NotDurable]);
    let r = check(&h);
    assert!(r.serializable && r.atomic && !r.durable);
    assert_eq!(r.committed, 2);
    assert_eq!(r.committed_of_unknown_outcome, 1);
}

#[test]
fn a_lost_version_is_not_read_as_an_older_one() {
    // T1 wrote x and y; every copy of x lost T1's version (the replicas' order of x is
    // empty). T2 read both of T1's writes: not a fractured read, only a lost write.
    let t1 = txn(1, &[], &["x", "y"]);
    let t2 = txn(2, &[("x", Some(v(1, 0))), ("y", Some(v(1, 1)))], &[]);
    let h = hist(vec![t1.clone(), t2.clone()], &[("y", &[v(1, 1)])]);
    assert_eq!(kinds(&h), vec![Kind::NotDurable]);
    // Still caught: T3 sees T1's y and the initial x, T1's write to x being lost.
    let t3 = txn(3, &[("x", None), ("y", Some(v(1, 1)))], &[]);
    let h = hist(vec![t1, t3], &[("y", &[v(1, 1)])]);
    assert!(kinds(&h).contains(&Kind::FracturedRead), "{:?}", kinds(&h));
}

#[test]
fn a_replica_lacking_a_version_is_not_durable_one_reordering_diverges() {
    let mut h = hist(vec![txn(1, &[], &["x"]), txn(2, &[("x", Some(v(1, 0)))], &["x"])], &[]);
    h.meta.shard_replicas = vec![vec![NodeId(0), NodeId(1)]];
    // n1 lacks T2's version: lost there, not an order of its own.
    h.replicas = vec![
        replica(0, &[("x", &[v(1, 0), v(2, 0)])]),
        replica(1, &[("x", &[v(1, 0)])]),
    ];
    assert_eq!(kinds(&h), vec![Kind::NotDurable]);
    // The same versions in another order: divergent.
    h.replicas[1] = replica(1, &[("x", &[v(2, 0), v(1, 0)])]);
    assert!(kinds(&h).contains(&Kind::Divergent), "{:?}", kinds(&h));
}

/// The same history with no replica records (as another system's history would come).
fn no_order(mut h: History) -> History {
    h.replicas.clear();
    h
}

#[test]
fn without_replica_records_write_skew_is_still_found() {
    // The example: T1 reads x, y and writes x; T2 reads x, y and writes y.
    let h = no_order(hist(
        vec![
            txn(1, &[("x", None), ("y", None)], &["x"]),
            txn(2, &[("x", None), ("y", None)], &["y"]),
        ],
        &[],
    ));
    let r = check(&h);
    assert!(!r.serializable, "{:?}", r.anomalies);
    assert_eq!(r.kinds(), vec![Kind::G2]);
    assert!(
        r.unknown.iter().any(|u| u.to_string().contains("no final state")),
        "{:?}",
        r.unknown
    );
    assert!(r.durable, "a missing replica record is not a lost commit");
}

#[test]
fn without_replica_records_a_lost_update_is_still_found() {
    let h = no_order(hist(
        vec![txn(1, &[("x", None)], &["x"]), txn(2, &[("x", None)], &["x"])],
        &[],
    ));
    let r = check(&h);
    assert!(!r.serializable, "{:?}", r.anomalies);
    assert!(
        r.kinds().iter().any(|k| matches!(k, Kind::LostUpdate | Kind::G2)),
        "{:?}",
        r.kinds()
    );
}

#[test]
fn without_replica_records_the_history_fixes_what_it_can() {
    // T1 writes x; T2 reads T1's x and writes x; T3 reads T2's x: the order is fixed
    // (init, T1, T2) and the history is serializable, decided.
    let h = no_order(hist(
        vec![
            txn(1, &[], &["x"]),
            txn(2, &[("x", Some(v(1, 0)))], &["x"]),
            txn(3, &[("x", Some(v(2, 0)))], &[]),
        ],
        &[],
    ));
    let r = check(&h);
    assert!(r.ok(), "{:?}", r.anomalies);
    assert!(
        !r.unknown.iter().any(|u| u.to_string().contains("order")),
        "{:?}",
        r.unknown
    );
    // A read against that inferred order is judged: T4 sees T2's y but T1's x,
    // which T2 overwrote (T2 -wr-> T4 on y, T4 -rw-> T2 on x).
    let h = no_order(hist(
        vec![
            txn(1, &[], &["x"]),
            txn(2, &[("x", Some(v(1, 0)))], &["x", "y"]),
            txn(4, &[("x", Some(v(1, 0))), ("y", Some(v(2, 1)))], &[]),
        ],
        &[],
    ));
    let r = check(&h);
    assert!(!r.serializable, "{:?}", r.anomalies);
}

#[test]
fn an_order_the_history_does_not_fix_is_found_by_search_or_unknown_never_holds() {
    // Two blind writes of x and a reader of one of them: either order is possible
    // from the history alone; the search finds one (T2 before T1, or T1 after T3).
    // In real time T1, T2, T3 follow each other, so T2 hides T1's x from T3: not
    // strict (the protocol here does not claim it).
    let mut h = no_order(hist(
        vec![
            txn(1, &[], &["x"]),
            txn(2, &[], &["x"]),
            txn(3, &[("x", Some(v(1, 0)))], &[]),
        ],
        &[],
    ));
    h.meta.strict = false;
    let r = check(&h);
    assert!(r.ok() && r.serializable, "{:?}", r.anomalies);
    assert!(!r.order_unknown(), "{:?}", r.unknown);
    assert!(!r.strict_serializable && !r.strict_unknown());
    assert!(r.notes.iter().any(|n| n.contains("found by search")), "{:?}", r.notes);
    // With no budget the search cannot answer: unknown, not "holds".
    let r = check_history(&h, &[], false, 0);
    assert!(r.ok(), "{:?}", r.anomalies);
    assert!(r.order_unknown(), "{:?}", r.unknown);
    assert!(
        r.unknown
            .iter()
            .any(|u| u.to_string().contains("key x") && u.to_string().contains("order")),
        "{:?}",
        r.unknown
    );
}

/// Issue 20: a history whose order the history alone does not fix, and that no order
/// makes serializable: T1 and T2 each write x and y blindly; T3 reads T1's x and
/// T2's y. Whichever of T1, T2 comes second hides the other's write of one key from
/// T3: no serial order. The graph's forced edges alone (two `wr` edges) do not show it.
#[test]
fn no_version_order_makes_it_serializable_is_found_by_exhaustive_search() {
    let h = no_order(hist(
        vec![
            txn(1, &[], &["x", "y"]),
            txn(2, &[], &["x", "y"]),
            txn(3, &[("x", Some(v(1, 0))), ("y", Some(v(2, 1)))], &[]),
        ],
        &[],
    ));
    let r = check(&h);
    assert!(!r.serializable, "{:?} {:?}", r.anomalies, r.notes);
    assert!(!r.order_unknown());
    assert!(r.notes.iter().any(|n| n.contains("no order")), "{:?}", r.notes);
}

/// Real time decides strictness on an order the search finds: T2 reads the initial x
/// after T1, which wrote x, had ended. Serializable (T2 before T1), not strict.
#[test]
fn strictness_is_decided_on_a_searched_order() {
    let mut t1 = txn(1, &[], &["x"]);
    let mut t2 = txn(2, &[("x", None)], &["y"]);
    let mut t3 = txn(3, &[], &["x"]);
    (t1.start, t1.end) = (0, Some(10));
    (t2.start, t2.end) = (20, Some(30));
    (t3.start, t3.end) = (0, Some(5));
    let mut h = no_order(hist(vec![t1, t2, t3], &[]));
    h.meta.strict = true;
    let r = check(&h);
    assert!(
        r.serializable && !r.order_unknown(),
        "{:?} {:?}",
        r.anomalies,
        r.unknown
    );
    assert!(!r.strict_serializable, "{:?}", r.anomalies);
    assert!(!r.strict_unknown());
}

/// Two writers of different keys, and two readers that each see one write and miss
/// the other: a long fork.
fn long_fork() -> History {
    hist(
        vec![
            txn(1, &[], &["x"]),
            txn(2, &[], &["y"]),
            txn(3, &[("x", Some(v(1, 0))), ("y", None)], &[]),
            txn(4, &[("y", Some(v(2, 0))), ("x", None)], &[]),
        ],
        &[("x", &[v(1, 0)]), ("y", &[v(2, 0)])],
    )
}

/// Transaction `seq` of client `c` (after its first, `txn(c, ..)`), reading only.
fn same_client(c: u32, seq: u32, reads: &[(&str, Option<VersionId>)]) -> TxnRecord {
    let mut t = txn(c, reads, &[]);
    t.id = TxnId { client: c, seq };
    t.start = c as u64 * 10 + 10 * seq as u64;
    t.end = Some(t.start + 5);
    t
}

/// Issue 20: the corpus. One hand-made history per anomaly, with the levels it must
/// satisfy (read committed, read atomic, snapshot isolation, serializable, strict
/// serializable), checked with its version order and without it. Without the order a
/// verdict may be unknown, never a false "holds" — except where the anomaly lives only
/// in the version order (G0: without it, the writes may well have been serial, and
/// the checker says so).
#[test]
fn corpus_levels_with_and_without_the_version_order() {
    let aborted = |mut t: TxnRecord| {
        t.outcome = Outcome::Aborted;
        t
    };
    type Case = (&'static str, History, [bool; 6]);
    let (t, f) = (true, false);
    let cases: Vec<Case> = vec![
        (
            "serial",
            hist(
                vec![txn(1, &[], &["x"]), txn(2, &[("x", Some(v(1, 0)))], &["x"])],
                &[("x", &[v(1, 0), v(2, 0)])],
            ),
            [t, t, t, t, t, t],
        ),
        (
            "G0",
            hist(
                vec![txn(1, &[], &["x", "y"]), txn(2, &[], &["x", "y"])],
                &[("x", &[v(1, 0), v(2, 0)]), ("y", &[v(2, 1), v(1, 1)])],
            ),
            [f, f, f, f, f, f],
        ),
        (
            "G1a",
            hist(
                vec![aborted(txn(1, &[], &["x"])), txn(2, &[("x", Some(v(1, 0)))], &[])],
                &[],
            ),
            [f, f, f, f, f, f],
        ),
        (
            "G1b",
            hist(
                vec![txn(1, &[], &["x", "x"]), txn(2, &[("x", Some(v(1, 0)))], &[])],
                &[("x", &[v(1, 1)])],
            ),
            [f, f, f, f, f, f],
        ),
        (
            "G1c",
            hist(
                vec![
                    txn(1, &[("y", Some(v(2, 0)))], &["x"]),
                    txn(2, &[("x", Some(v(1, 0)))], &["y"]),
                ],
                &[("x", &[v(1, 0)]), ("y", &[v(2, 0)])],
            ),
            [f, f, f, f, f, f],
        ),
        (
            "fractured read",
            hist(
                vec![
                    txn(1, &[], &["x", "y"]),
                    txn(2, &[("x", Some(v(1, 0))), ("y", None)], &[]),
                ],
                &[("x", &[v(1, 0)]), ("y", &[v(1, 1)])],
            ),
            [t, f, f, f, f, f],
        ),
        (
            "read skew (G-single)",
            hist(
                vec![
                    txn(1, &[], &["x"]),
                    txn(2, &[("x", Some(v(1, 0)))], &["y"]),
                    txn(3, &[("y", Some(v(2, 0))), ("x", None)], &[]),
                ],
                &[("x", &[v(1, 0)]), ("y", &[v(2, 0)])],
            ),
            [t, t, f, f, f, f],
        ),
        (
            "lost update",
            hist(
                vec![
                    txn(0, &[], &["x"]),
                    txn(1, &[("x", Some(v(0, 0)))], &["x"]),
                    txn(2, &[("x", Some(v(0, 0)))], &["x"]),
                ],
                &[("x", &[v(0, 0), v(1, 0), v(2, 0)])],
            ),
            [t, t, t, f, f, f],
        ),
        (
            "write skew (G2)",
            hist(
                vec![
                    txn(1, &[("x", None), ("y", None)], &["x"]),
                    txn(2, &[("x", None), ("y", None)], &["y"]),
                ],
                &[("x", &[v(1, 0)]), ("y", &[v(2, 0)])],
            ),
            [t, t, t, t, f, f],
        ),
        ("long fork", long_fork(), [t, t, t, f, f, f]),
        (
            "session order (a client misses its own write)",
            hist(
                vec![txn(1, &[], &["x"]), same_client(1, 2, &[("x", None)])],
                &[("x", &[v(1, 0)])],
            ),
            [t, t, f, t, t, f],
        ),
        (
            "stale read (real time)",
            hist(
                vec![txn(1, &[], &["x"]), txn(2, &[("x", None)], &[])],
                &[("x", &[v(1, 0)])],
            ),
            [t, t, t, t, t, f],
        ),
    ];
    for (name, h, want) in cases {
        let r = check(&h);
        let got: Vec<Option<bool>> = r.levels.iter().map(|l| l.holds).collect();
        let names: Vec<&str> = r.levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "read-committed",
                "read-atomic",
                "causal",
                "snapshot-isolation",
                "serializable",
                "strict-serializable"
            ]
        );
        assert_eq!(got, want.map(Some).to_vec(), "{name}: {:?}", r.levels);
        for l in r.levels.iter().filter(|l| l.holds == Some(false)) {
            assert!(
                l.counterexample.is_some(),
                "{name}: {} fails without a counterexample",
                l.name
            );
        }
        // Without the version records every level is still decided (issue 52): each
        // holds under some order the history allows or fails under every one. G0 is
        // the exception by nature: only a recorded order shows its two keys' writes
        // in opposite orders.
        let without = check(&no_order(h));
        let got: Vec<Option<bool>> = without.levels.iter().map(|l| l.holds).collect();
        let want_without = if name == "G0" { [t; 6] } else { want };
        assert_eq!(
            got,
            want_without.map(Some).to_vec(),
            "{name} without order: {:?}",
            without.levels
        );
    }
}

/// Issue 20: the causal level and the long-fork name, with their counterexamples: a
/// long fork is causal and not snapshot isolation; a client that misses its own write,
/// and a read skew along reads-from, are not causal; a causality cycle through session
/// order is named as one.
#[test]
fn causal_level_and_long_fork_counterexamples() {
    let level =
        |h: &History, name: &str| -> Level { check(h).levels.into_iter().find(|l| l.name == name).expect("level") };
    let long_fork = long_fork();
    let si = level(&long_fork, "snapshot-isolation");
    assert!(
        si.counterexample.as_deref().unwrap().starts_with("long fork: "),
        "{si:?}"
    );
    assert_eq!(level(&long_fork, "causal").holds, Some(true));

    let own = hist(
        vec![txn(1, &[], &["x"]), same_client(1, 2, &[("x", None)])],
        &[("x", &[v(1, 0)])],
    );
    let c = level(&own, "causal");
    let ce = c.counterexample.as_deref().unwrap();
    assert!(
        ce.contains("1:2 read the initial value of key x") && ce.contains("1:1, which happens before it"),
        "{ce}"
    );

    let skew = hist(
        vec![
            txn(1, &[], &["x"]),
            txn(2, &[("x", Some(v(1, 0)))], &["y"]),
            txn(3, &[("y", Some(v(2, 0))), ("x", None)], &[]),
        ],
        &[("x", &[v(1, 0)]), ("y", &[v(2, 0)])],
    );
    let c = level(&skew, "causal");
    assert!(
        c.counterexample
            .as_deref()
            .unwrap()
            .contains("3:1 read the initial value of key x"),
        "{c:?}"
    );

    // Client 1 writes x, then (session order) reads y from client 2, which had read
    // x's version of client 1's *second* transaction: a cycle so ∪ wr.
    let mut first = txn(1, &[("y", Some(v(2, 0)))], &[]);
    first.id = TxnId { client: 1, seq: 1 };
    let mut second = same_client(1, 2, &[]);
    second.writes = vec![WriteRec {
        key: Key::from("x"),
        version: VersionId { txn: second.id, seq: 0 },
    }];
    let reader = txn(2, &[("x", Some(VersionId { txn: second.id, seq: 0 }))], &["y"]);
    let cyc = hist(
        vec![first, second.clone(), reader],
        &[("x", &[VersionId { txn: second.id, seq: 0 }]), ("y", &[v(2, 0)])],
    );
    let c = level(&cyc, "causal");
    assert!(
        c.counterexample.as_deref().unwrap().starts_with("causality cycle"),
        "{c:?}"
    );
}

/// Issue 52, 1: a lost update whose second write no replica records. The write was
/// ignored when no replica had to hold it (every level true, exit 0), and when one had
/// to, the run failed only as not durable, still `serializable=true`. The write is now
/// placed from what the history fixes: both ways it is a lost update.
#[test]
fn a_committed_write_missing_from_the_replicas_is_placed_not_dropped() {
    let txns = || vec![txn(1, &[("x", None)], &["x"]), txn(2, &[("x", None)], &["x"])];
    // No replica has to hold x: durable, but not serializable.
    let mut h = hist(txns(), &[("x", &[v(1, 0)])]);
    h.meta.shard_replicas = vec![vec![]];
    let r = check(&h);
    assert!(!r.serializable && r.durable, "{:?}", r.anomalies);
    assert!(r.kinds().contains(&Kind::LostUpdate), "{:?}", r.anomalies);
    let si = r.levels.iter().find(|l| l.name == "snapshot-isolation").unwrap();
    assert_eq!(si.holds, Some(false));
    // Replica 0 must hold it: not durable as well, and still a lost update.
    let r = check(&hist(txns(), &[("x", &[v(1, 0)])]));
    assert!(!r.durable && !r.serializable, "{:?}", r.anomalies);
    assert!(r.kinds().contains(&Kind::NotDurable) && r.kinds().contains(&Kind::LostUpdate));
    // A missing write the history orders after the recorded one: placed, serializable,
    // and not durable where it had to be held.
    let r = check(&hist(
        vec![txn(1, &[("x", None)], &["x"]), txn(2, &[("x", Some(v(1, 0)))], &["x"])],
        &[("x", &[v(1, 0)])],
    ));
    assert!(
        r.serializable && !r.order_unknown() && !r.durable,
        "{:?} {:?}",
        r.anomalies,
        r.unknown
    );
}

/// Issue 52, 4: without version records, causal consistency was judged under the one
/// version order the serializability search picked, and a causal history came out
/// `causal=false` with a ww edge the search had chosen. A violation that only the
/// chosen order shows is unknown, never false.
#[test]
fn causal_is_not_judged_on_an_order_the_search_chose() {
    // T1 and T2 write x with nothing fixing their order; one session reads x2 and then
    // x1, which is causal only with x2 before x1. Real time orders T1 before T2, so a
    // search that respects it (or prefers it) picks x1 before x2.
    let mut t3 = txn(3, &[("x", Some(v(2, 0)))], &[]);
    let mut t4 = txn(3, &[("x", Some(v(1, 0)))], &[]);
    t4.id = TxnId { client: 3, seq: 2 };
    (t3.start, t3.end, t4.start, t4.end) = (30, Some(35), 40, Some(45));
    let mut h = hist(vec![txn(1, &[], &["x"]), txn(2, &[], &["x"]), t3, t4], &[]);
    h.replicas.clear();
    h.meta.shard_replicas = vec![vec![]];
    h.meta.strict = false;
    let r = check(&h);
    let causal = r.levels.iter().find(|l| l.name == "causal").unwrap();
    assert_ne!(
        causal.holds,
        Some(false),
        "{:?} {:?} {:?}",
        r.levels,
        r.notes,
        r.unknown
    );
}

/// A report's JSON prints open verdicts as "unknown" and reads back as the same report.
#[test]
fn report_json_round_trips_unknown_verdicts() {
    let mut h = hist(vec![txn(1, &[], &["x"]), txn(2, &[("x", Some(v(1, 0)))], &["x"])], &[]);
    h.replicas.clear();
    let r = check(&h);
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.contains("\"durable\":\"unknown\""), "{text}");
    let back: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r);
    assert!(serde_json::from_str::<Report>(&text.replace("\"unknown\"", "\"maybe\"")).is_err());
}

/// The corpus's lost committed write: T1 and then T2 write x, both acknowledged, and
/// the replica's record of x lacks T1's version. With the record the history is not
/// durable (and no level is falsely failed: T1 then T2 is serial); without replica
/// records durability cannot be judged, and nothing is an anomaly.
#[test]
fn corpus_lost_committed_write_with_and_without_the_records() {
    let h = hist(vec![txn(1, &[], &["x"]), txn(2, &[], &["x"])], &[("x", &[v(2, 0)])]);
    let r = check(&h);
    assert!(!r.durable, "{:?}", r.anomalies);
    assert!(r.kinds().contains(&Kind::NotDurable), "{:?}", r.anomalies);
    assert!(
        r.levels.iter().all(|l| l.holds != Some(false)),
        "a serial history fails no level: {:?}",
        r.levels
    );
    let r = check(&no_order(h));
    assert!(r.anomalies.is_empty(), "{:?}", r.anomalies);
    assert!(r.levels.iter().all(|l| l.holds != Some(false)), "{:?}", r.levels);
}
