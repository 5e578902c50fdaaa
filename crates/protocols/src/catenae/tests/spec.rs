//! Speculative execution at the chain servers and its validation (§VI-C, D, E;
//! §VIII-A), staged on the hand-driven net: reads see the temporary versions of the
//! dependencies they were ordered behind; a DC whose execution lost the vote catches
//! up with another DC's update operations (two RTTs at a home DC); a DC whose
//! execution had the chosen dependencies but read a value that changed re-executes.

use super::*;

/// Holds back, once, the forward pass of `txn(i)` to the chain server of `k` in DC
/// `dc`; returns where the held message is kept.
type Held = Rc<RefCell<Option<(NodeId, NodeId, Msg)>>>;
fn hold_forward(net: &mut Net<Catenae>, k: &Key, dc: usize, i: u32) -> Held {
    let server = env().layout.replicas(env().layout.shard_of(k))[dc];
    let held: Held = Rc::default();
    let h = held.clone();
    net.drop_once = Some(Box::new(move |from, to, m| {
        let hit = to == server && matches!(m, Msg::Forward { chain, .. } if chain.id == txn(i));
        if hit {
            *h.borrow_mut() = Some((from, to, m.clone()));
        }
        hit
    }));
    held
}

fn release(net: &mut Net<Catenae>, held: &Held) {
    let (from, to, m) = held.borrow_mut().take().expect("the forward pass was held back");
    net.send(from, to, m);
}

/// The versions each transaction's committed reads saw, as its client was told.
fn reads_of(net: &Net<Catenae>, i: u32) -> Vec<(Key, Option<VersionId>)> {
    net.outside
        .iter()
        .find_map(|(_, _, m)| match m {
            Msg::Outcome {
                txn: t,
                result: Ok((reads, _)),
                ..
            } if *t == txn(i) => Some(reads.clone()),
            _ => None,
        })
        .expect("committed")
}

/// T1 writes `k`, T2 reads it, in one epoch: every DC orders T2 behind T1, so T2 reads
/// T1's temporary version at the chain server, before T1 committed anywhere, and that
/// speculative result is what every DC commits (no re-execution).
#[test]
fn a_read_sees_the_temporary_version_of_the_writer_ahead() {
    let mut net = net();
    submit(&mut net, 0, 1, &[("k", b"1")]);
    submit(&mut net, 4, 2, &[("k", b"")]);
    epoch(&mut net);
    epoch(&mut net);
    assert_committed(&net, &[1, 2], 2);
    let t1 = VersionId { txn: txn(1), seq: 0 };
    assert_eq!(reads_of(&net, 2), vec![(Key::from("k"), Some(t1))]);
    for coord in [0, 4, 8] {
        assert_eq!(stat(&net, coord, "spec_valid"), 2.0, "DC of node {coord}");
        assert_eq!(stat(&net, coord, "spec_redone"), 0.0, "DC of node {coord}");
        assert_eq!(stat(&net, coord, "caught_up"), 0.0, "DC of node {coord}");
    }
    snapshots_agree(&net);
}

/// §VIII-A: EU executes T1 and T2 the other way round (T1's forward pass there is held
/// back), so EU's execution of both loses the vote. EU is T1's home: it answers T1's
/// client after catching up with the update operations of the nearest DC of the
/// majority, two RTTs (four one-way trips) in all; T2's home (US) was in the majority
/// and answers after one RTT.
#[test]
fn a_home_dc_whose_execution_lost_catches_up_in_two_rtts() {
    let mut net = net();
    let held = hold_forward(&mut net, &Key::from("k"), 0, 1);
    submit_two_conflicting(&mut net);
    epoch(&mut net);
    release(&mut net, &held);
    for _ in 0..3 {
        epoch(&mut net);
    }
    assert_committed(&net, &[1], 4);
    assert_committed(&net, &[2], 2);
    assert_eq!(stat(&net, 0, "caught_up"), 2.0, "EU fetched both");
    assert_eq!(stat(&net, 0, "catch_up_divergent"), 0.0);
    assert_eq!(stat(&net, 0, "catch_up_gone"), 0.0);
    assert_eq!(stat(&net, 4, "caught_up"), 0.0);
    assert_eq!(stat(&net, 4, "spec_valid"), 2.0);
    snapshots_agree(&net);
    let k = Key::from("k");
    let eu = env().layout.replicas(env().layout.shard_of(&k))[0];
    let ks = net.servers[eu.0 as usize].snapshot().keys;
    let latest = ks.get(&k).unwrap().versions.last().copied().unwrap();
    assert_eq!(latest.txn, txn(2), "the majority's order: T2 after T1");
}

/// §VI-E: "if the dependent transactions need to catch up, the transaction will need
/// to catch up as well". AS runs T2, then T1, then T3, which reads `k` (its chain
/// server is cut off while the epoch is dispatched, and the passes are replayed in
/// that order): AS's execution of T3 has the chosen dependencies {T1, T2}, but it
/// read T1's temporary version where the chosen order (T1, T2) gives T2's. AS catches
/// up T1 and T2 with EU's update operations, then re-executes T3 (its speculative read
/// is not the committed value), so T3's client, at AS, hears after two RTTs.
#[test]
fn a_dependency_that_caught_up_makes_its_reader_re_execute() {
    let mut net = net();
    let l = env().layout;
    // A key off shard 0, so its chain servers are not the coordinators.
    let k = key_on(|s| s != 0);
    let kname = name(&k);
    let asia = l.replicas(l.shard_of(&k))[2];
    net.down.insert(asia);
    submit(&mut net, 0, 1, &[(&kname, b"1")]);
    submit(&mut net, 4, 2, &[(&kname, b"2")]);
    submit(&mut net, 8, 3, &[(&kname, b"")]);
    epoch(&mut net);
    net.down.clear();
    net.send(NodeId(8), asia, Msg::Manifest { counts: vec![(0, 3)] });
    for (i, v) in [(2, &b"2"[..]), (1, b"1"), (3, b"")] {
        let chain = Arc::new(ChainTxn {
            id: txn(i),
            eid: 0,
            servers: vec![asia],
            keys: vec![vec![(k.clone(), !v.is_empty())]],
            coord: NodeId(8),
            term: 0,
            call: ycsb_call(&[(&kname, v)]),
        });
        net.send(NodeId(8), asia, Msg::Forward { chain, pos: 0, hops: 1 });
    }
    for _ in 0..3 {
        epoch(&mut net);
    }
    assert_committed(&net, &[1, 2], 2);
    assert_committed(&net, &[3], 4);
    let t2 = VersionId { txn: txn(2), seq: 0 };
    assert_eq!(reads_of(&net, 3), vec![(k.clone(), Some(t2))], "T3 reads T2's write");
    assert_eq!(stat(&net, 8, "caught_up"), 2.0, "AS fetched T1 and T2");
    assert_eq!(stat(&net, 8, "spec_redone"), 1.0, "AS re-executed T3");
    assert_eq!(stat(&net, 8, "spec_valid"), 0.0);
    assert_eq!(stat(&net, 0, "spec_valid"), 3.0);
    snapshots_agree(&net);
}

/// A hand-driven chain server of `k` (EU), with a reader `txn(2)` of `k` ordered behind
/// a writer `txn(1)` whose program still needs `a` (a lower shard, later in its
/// backward pass), so the writer has no value here yet. Returns the server, its node,
/// the writer's first server, the armed value check's timer and `k`.
fn reader_behind_an_unvalued_writer() -> (Server, NodeId, NodeId, TimerId, Key) {
    use crate::testing::deliver;
    let (e, l) = (env(), env().layout);
    let (a, k) = (key_on(|s| s == 1), key_on(|s| s == 2));
    let (s0, s1) = (l.replicas(l.shard_of(&a))[0], l.replicas(l.shard_of(&k))[0]);
    let mut s = proto().server(&e, s1);
    deliver(&mut s, 0, s1, NodeId(0), Msg::Manifest { counts: vec![(0, 2)] });
    let writer = Arc::new(ChainTxn {
        id: txn(1),
        eid: 0,
        servers: vec![s0, s1],
        keys: vec![vec![(a.clone(), false)], vec![(k.clone(), true)]],
        coord: NodeId(0),
        term: 0,
        call: ycsb_call(&[(&name(&a), b""), (&name(&k), b"v")]),
    });
    deliver(
        &mut s,
        0,
        s1,
        s0,
        Msg::Forward {
            chain: writer,
            pos: 1,
            hops: 1,
        },
    );
    let reader = Arc::new(ChainTxn {
        id: txn(2),
        eid: 0,
        servers: vec![s1],
        keys: vec![vec![(k.clone(), false)]],
        coord: NodeId(0),
        term: 0,
        call: ycsb_call(&[(&name(&k), b"")]),
    });
    let eff = deliver(
        &mut s,
        0,
        s1,
        NodeId(0),
        Msg::Forward {
            chain: reader,
            pos: 0,
            hops: 1,
        },
    );
    assert!(
        !eff.sent().iter().any(|(_, m)| matches!(m, Msg::Finished { .. })),
        "the reader waits for the writer's value"
    );
    (s, s1, s0, value_timer(&eff.commands), k)
}

/// The value check the reader's server armed.
fn value_timer(commands: &[meridian_core::Command<Msg>]) -> TimerId {
    commands
        .iter()
        .find_map(|c| match c {
            meridian_core::Command::SetTimer { id, .. } if id.0 >= T_VALUE => Some(*id),
            _ => None,
        })
        .expect("a value check is armed")
}

/// The reader's speculative reads, from the `Finished` its server sent.
fn finished_reads(sent: Vec<(NodeId, &Msg)>) -> Option<Vec<RoRead>> {
    sent.into_iter().find_map(|(_, m)| match m {
        Msg::Finished { txn: t, spec, .. } if *t == txn(2) => spec.result().map(|r| r.reads.clone()),
        _ => None,
    })
}

/// A reader waiting for a writer's value asks for it again after an epoch, at the
/// writer's first server (its `Temp` may have been lost), and reads it when it comes:
/// not after the 500 ms stall valve.
#[test]
fn a_reader_asks_again_for_a_value_it_waits_for() {
    use crate::testing::{deliver, fire};
    let (mut s, me, first, t, key) = reader_behind_an_unvalued_writer();
    let eff = fire(&mut s, ms(10.0), me, t);
    let asked: Vec<NodeId> = eff
        .sent()
        .into_iter()
        .filter(|(_, m)| matches!(m, Msg::TempReq { txn: w } if *w == txn(1)))
        .map(|(to, _)| to)
        .collect();
    assert_eq!(asked, vec![first]);
    let v = VersionId { txn: txn(1), seq: 1 };
    let temp = Msg::Temp {
        txn: txn(1),
        writes: vec![(key.clone(), v, Value(b"v".to_vec()))],
    };
    let eff = deliver(&mut s, ms(11.0), me, first, temp);
    assert_eq!(
        finished_reads(eff.sent()),
        Some(vec![(key, Some(v), Some(Value(b"v".to_vec())))])
    );
}

/// A reader whose writer stays without a value (held further down its chain) goes
/// ahead after three epochs, reading what is older, rather than waiting up to the
/// 500 ms stall valve; the commit re-executes it if the value was needed.
#[test]
fn a_reader_goes_ahead_without_a_value_that_does_not_come() {
    use crate::testing::fire;
    let (mut s, me, _, t, _) = reader_behind_an_unvalued_writer();
    let eff = fire(&mut s, ms(10.0), me, t);
    assert!(finished_reads(eff.sent()).is_none(), "one check: it asks, and waits on");
    let eff = fire(&mut s, ms(30.0), me, value_timer(&eff.commands));
    let reads = finished_reads(eff.sent()).expect("it went ahead");
    assert_eq!(reads.len(), 1);
    assert_eq!((reads[0].1, &reads[0].2), (None, &None), "nothing committed yet");
    assert_eq!(s.chain.value_waits_cut, 1);
}
