//! Catenae's paths staged by hand on `testing::Net` (gcp3: EU, US, AS; coordinators
//! on nodes 0, 4, 8): the non-conflicting path (one WAN trip after the epoch), the
//! conflicting path (a majority of equal execution results: one RTT), a DC that
//! executed two conflicting transactions the other way round and catches up, and a
//! program without declared keys refused by the client.

use super::*;
use crate::testing::{call, ycsb_call, ycsb_env, ycsb_registry, Net};
use meridian_core::{Layout, Topology};
use std::cell::RefCell;
use std::rc::Rc;

const CLIENT: NodeId = NodeId(12);

fn env() -> Env {
    let mut layout = Layout::new(Topology::preset("gcp3").unwrap(), Placement::Full).unwrap();
    assert_eq!(layout.add_client(DcId(0)), CLIENT);
    ycsb_env(Arc::new(layout))
}

/// Zero-cost accesses so the hand-driven net needs no hold timers.
fn proto() -> Catenae {
    Catenae {
        access_base: 0,
        per_byte: 0,
        jitter: 0.0,
        ..Catenae::default()
    }
}

fn net() -> Net<Catenae> {
    let (p, e) = (proto(), env());
    Net::new((0..12).map(|n| p.server(&e, NodeId(n))).collect())
}

fn txn(seq: u32) -> TxnId {
    TxnId { client: seq, seq: 1 }
}

/// The hand-played client submits `ops` as `txn(i)` to the coordinator on node `coord`.
fn submit(net: &mut Net<Catenae>, coord: u32, i: u32, ops: &[(&str, &[u8])]) {
    let call = ycsb_call(ops);
    net.send(CLIENT, NodeId(coord), Msg::Submit { txn: txn(i), call });
}

/// T1 at EU's coordinator and T2 at US's, both writing key `k`: one epoch's conflict.
fn submit_two_conflicting(net: &mut Net<Catenae>) {
    submit(net, 0, 1, &[("k", b"1")]);
    submit(net, 4, 2, &[("k", b"2")]);
}

/// Fires every coordinator's epoch boundary once (10 ms) and delivers what follows.
fn epoch(net: &mut Net<Catenae>) {
    net.run_for(ms(10.0), ms(10.0), ServerTimer::Epoch);
}

/// The outcomes the hand-played client got: txn → (committed?, hops).
fn outcomes(net: &Net<Catenae>) -> BTreeMap<TxnId, (bool, u32)> {
    net.outside
        .iter()
        .filter_map(|(_, to, m)| match m {
            Msg::Outcome { txn, result, hops } if *to == CLIENT => Some((*txn, (result.is_ok(), *hops))),
            _ => None,
        })
        .collect()
}

/// The hand-played client was told that each of `txns` committed, after `hops` one-way
/// WAN trips.
fn assert_committed(net: &Net<Catenae>, txns: &[u32], hops: u32) {
    let o = outcomes(net);
    for &i in txns {
        assert_eq!(o.get(&txn(i)), Some(&(true, hops)), "T{i}: {o:?}");
    }
}

/// The first key `k0`, `k1`, ... whose shard passes `pick`.
fn key_on(pick: impl Fn(u32) -> bool) -> Key {
    let l = env().layout;
    (0..)
        .map(|i| Key::new(format!("k{i}")))
        .find(|k| pick(l.shard_of(k).0))
        .unwrap()
}

/// A key as the text a YCSB call names it by.
fn name(k: &Key) -> String {
    String::from_utf8(k.as_bytes().to_vec()).unwrap()
}

fn stat(net: &Net<Catenae>, coord: usize, name: &str) -> f64 {
    net.servers[coord]
        .coord
        .as_ref()
        .unwrap()
        .stats()
        .into_iter()
        .find(|(k, _)| k == name)
        .unwrap()
        .1
}

fn snapshots_agree(net: &Net<Catenae>) {
    for s in 0..4 {
        let a = net.servers[s].snapshot().keys;
        for dc in 1..3 {
            assert_eq!(a, net.servers[dc * 4 + s].snapshot().keys, "shard server {s}, DC {dc}");
        }
    }
}

/// §VI-D1: a transaction alone in its epoch is non-conflicting; its home DC answers
/// as soon as it executed it, one WAN trip after the epoch boundary (it waited for
/// the other DCs' epoch messages), with no validation round.
#[test]
fn non_conflicting_commits_one_wan_trip_after_the_epoch() {
    let mut net = net();
    submit(&mut net, 0, 1, &[("a", b"1"), ("b", b"")]);
    epoch(&mut net);
    assert_committed(&net, &[1], 1);
    // The dominant result reaches the other DCs with the next epoch message.
    epoch(&mut net);
    assert_eq!(stat(&net, 4, "dominant_checked"), 1.0);
    assert_eq!(stat(&net, 4, "dominant_mismatch"), 0.0);
    snapshots_agree(&net);
}

/// §VI-D2, E: two transactions of one epoch writing one key conflict; every DC
/// executes them in the same order, each votes, and the home DC commits once a
/// majority's results are in: one RTT (two one-way trips).
#[test]
fn conflicting_commits_after_a_majority_one_rtt() {
    let mut net = net();
    submit_two_conflicting(&mut net);
    epoch(&mut net);
    assert!(
        outcomes(&net).is_empty(),
        "conflicting transactions wait for validation"
    );
    epoch(&mut net);
    assert_committed(&net, &[1, 2], 2);
    assert_eq!(stat(&net, 0, "identical"), 2.0);
    assert_eq!(stat(&net, 0, "caught_up"), 0.0);
    snapshots_agree(&net);
}

/// §VI-E "Transaction Catch Up", §VIII-A: DC AS executes the two transactions the other
/// way round (T1's forward pass there is held back until T2 pre-committed). The
/// majority (EU, US) decides; AS is in the minority for both and catches up, installing
/// the majority's order; every DC ends with the same versions. The decision still
/// takes two one-way trips: the minority re-applies locally (module docs).
#[test]
fn a_minority_dc_catches_up_with_the_majority_order() {
    let mut net = net();
    let k = Key::from("k");
    let as_server = env().layout.replicas(env().layout.shard_of(&k))[2];
    let held: Rc<RefCell<Option<(NodeId, NodeId, Msg)>>> = Rc::default();
    let h = held.clone();
    net.drop_once = Some(Box::new(move |from, to, m| {
        let hit = to == as_server && matches!(m, Msg::Forward { chain, .. } if chain.id == txn(1));
        if hit {
            *h.borrow_mut() = Some((from, to, m.clone()));
        }
        hit
    }));
    submit_two_conflicting(&mut net);
    epoch(&mut net);
    let (from, to, m) = held.borrow_mut().take().expect("T1's forward pass in AS was held back");
    net.send(from, to, m);
    epoch(&mut net);
    epoch(&mut net);
    assert_committed(&net, &[1, 2], 2);
    assert_eq!(stat(&net, 8, "caught_up"), 2.0, "AS executed both against the majority");
    assert_eq!(stat(&net, 0, "caught_up"), 0.0);
    snapshots_agree(&net);
    // The majority's order: T2 after T1, so T2's version is the latest everywhere.
    let ks = net.servers[as_server.0 as usize].snapshot().keys;
    let latest = ks.get(&k).unwrap().versions.last().copied().unwrap();
    assert_eq!(latest.txn, txn(2));
}

/// §VI-E "Transaction Abort": three transactions of one epoch on one key, executed in
/// three different orders (T1 T2 T3 in EU, T2 T3 T1 in US, T3 T1 T2 in AS): no
/// dependency set has a majority for any of them, so all three abort, everywhere,
/// and nothing is installed.
#[test]
fn no_majority_aborts() {
    let mut net = net();
    let l = env().layout;
    // A key off shard 0, so its chain servers are not the coordinators.
    let k = key_on(|s| s != 0);
    let kname = name(&k);
    let (us, asia) = (l.replicas(l.shard_of(&k))[1], l.replicas(l.shard_of(&k))[2]);
    net.down.insert(us);
    net.down.insert(asia);
    for (i, coord) in [(1, 0), (2, 4), (3, 8)] {
        submit(&mut net, coord, i, &[(&kname, b"v")]);
    }
    epoch(&mut net);
    net.down.clear();
    for (server, coord, order) in [(us, 4, [2, 3, 1]), (asia, 8, [3, 1, 2])] {
        net.send(NodeId(coord), server, Msg::Manifest { counts: vec![(0, 3)] });
        for i in order {
            let chain = Arc::new(ChainTxn {
                id: txn(i),
                eid: 0,
                servers: vec![server],
                keys: vec![vec![(k.clone(), true)]],
                coord: NodeId(coord),
                term: 0,
                call: ycsb_call(&[(&kname, b"v")]),
            });
            net.send(NodeId(coord), server, Msg::Forward { chain, pos: 0, hops: 1 });
        }
    }
    for _ in 0..3 {
        epoch(&mut net);
    }
    let o = outcomes(&net);
    assert_eq!(o.len(), 3, "{o:?}");
    assert!(o.values().all(|(committed, hops)| !committed && *hops == 2), "{o:?}");
    for c in [0, 4, 8] {
        assert_eq!(stat(&net, c, "no_majority"), 3.0, "coordinator {c}");
        assert_eq!(stat(&net, c, "committed"), 0.0);
    }
    snapshots_agree(&net);
    assert!(net.servers[us.0 as usize]
        .snapshot()
        .keys
        .get(&k)
        .is_none_or(|s| s.versions.is_empty()));
    assert_eq!(net.servers[us.0 as usize].chain.unresolved_keys(), 0);
}

/// With a secondary, a coordinator that steps down drops its open epoch and the
/// payloads nobody holds, with this DC's votes in them: it forgets it cast those votes,
/// so that, coordinating again, it re-votes them (`revote`) instead of taking them for
/// cast. Before, the two transactions stayed `voted` here and were never voted by
/// this DC at all (campaign seed 662022 on two DCs, where every DC's vote is needed).
#[test]
fn a_coordinator_stepping_down_forgets_the_votes_it_drops() {
    let (p, e) = (
        Catenae {
            secondary: true,
            ..proto()
        },
        env(),
    );
    let mut net = Net::new((0..12).map(|n| p.server(&e, NodeId(n))).collect());
    submit_two_conflicting(&mut net);
    // Scheduled, executed, and this DC's votes put in EU's open epoch.
    epoch(&mut net);
    fn eu(net: &Net<Catenae>) -> &coordinator::Coordinator {
        net.servers[0].coord.as_ref().unwrap()
    }
    for i in [1, 2] {
        assert!(eu(&net).voted(txn(i)), "T{i} voted in the open epoch");
        assert!(eu(&net).open.votes.iter().any(|v| v.txn == txn(i)));
    }
    // Told of a newer term: EU's coordinator steps down, dropping its open epoch.
    net.send(NodeId(4), NodeId(0), Msg::Deposed { term: 1 });
    assert!(!eu(&net).leads());
    assert!(eu(&net).open.votes.is_empty());
    for i in [1, 2] {
        assert!(!eu(&net).voted(txn(i)), "T{i}: its dropped vote is not taken for cast");
    }
}

/// A read-only transaction is answered by the local chain servers: no WAN trip.
#[test]
fn read_only_is_local() {
    let mut net = net();
    submit(&mut net, 0, 1, &[("a", b"1")]);
    epoch(&mut net);
    epoch(&mut net);
    let before = net.outside.len();
    net.send(
        CLIENT,
        NodeId(0),
        Msg::ReadOnly {
            txn: txn(2),
            attempt: 1,
            keys: vec![Key::from("a")],
        },
    );
    let replies: Vec<&Msg> = net.outside[before..].iter().map(|(_, _, m)| m).collect();
    assert_eq!(replies.len(), 1);
    match replies[0] {
        Msg::RoReply { reads: Some(r), .. } => {
            assert_eq!(r[0].1.map(|v| v.txn), Some(txn(1)), "it sees the committed write");
        }
        m => panic!("{m:?}"),
    }
    let sent_wan = net.outside[before..]
        .iter()
        .any(|(f, t, _)| env().layout.dc_of(*f) != DcId(0) || (t.0 < 12 && env().layout.dc_of(*t) != DcId(0)));
    assert!(!sent_wan);
}

/// §VI-B: a program that does not declare its keys is refused by the client with a
/// typed reason, and nothing is sent.
#[test]
fn undeclared_program_is_refused() {
    struct Free;
    impl meridian_txn::Program for Free {
        fn name(&self) -> &'static str {
            "free"
        }
        fn run(&self, _: &[meridian_txn::Arg], tx: &mut meridian_txn::Tx<'_>) -> Result<(), meridian_txn::Stop> {
            tx.write(Key::from("x"), Value::from_u64(1));
            Ok(())
        }
    }
    let mut reg = ycsb_registry();
    reg.register(Arc::new(Free));
    let mut e = env();
    e.registry = Arc::new(reg);
    let mut c = proto().client(&e, CLIENT, ClientId(0));
    let fx = call(&mut c, 0, CLIENT, |c, cx| {
        c.submit(
            txn(1),
            Call {
                program: "free".into(),
                args: vec![],
            },
            cx,
        )
    });
    assert!(fx.sent().is_empty());
    assert_eq!(fx.records.len(), 1);
    assert_eq!(fx.records[0].outcome, Outcome::Aborted);
    assert_eq!(fx.records[0].abort_reason.as_deref(), Some(&AbortReason::Undeclared));
}

/// Bad options are one clear error.
#[test]
fn bad_options_are_refused() {
    assert!(Catenae::from_params([("epoch", "0ms")]).unwrap_err().contains("epoch"));
    assert!(Catenae::from_params([("majority", "maybe")])
        .unwrap_err()
        .contains("on or off"));
    assert!(Catenae::from_params([("delay-tolerance", "50ms")])
        .unwrap_err()
        .contains("majority=on"));
    assert!(Catenae::from_params([("majority", "on"), ("delay-tolerance", "1ms")])
        .unwrap_err()
        .contains("at least one epoch"));
    let c = Catenae::from_params([("majority", "on"), ("delay-tolerance", "50ms")]).unwrap();
    assert!(c.majority);
    assert_eq!(c.delay_tolerance, ms(50.0));
    assert!(Catenae::from_params([("bogus", "1")])
        .unwrap_err()
        .contains("unknown parameter"));
    assert!(Catenae::from_params([("jitter", "2")]).is_err());
    assert_eq!(Catenae::from_params([("epoch", "20ms")]).unwrap().epoch, ms(20.0));
    // The secondary coordinator's options.
    assert!(Catenae::from_params([("secondary", "yes")])
        .unwrap_err()
        .contains("on or off"));
    assert!(Catenae::from_params([("failover", "1s")])
        .unwrap_err()
        .contains("secondary=on"));
    assert!(Catenae::from_params([("secondary", "on"), ("failover", "0ms")])
        .unwrap_err()
        .contains("positive"));
    assert!(Catenae::from_params([("secondary", "on"), ("majority", "on")])
        .unwrap_err()
        .contains("cannot be combined"));
    let c = Catenae::from_params([("secondary", "on"), ("failover", "300ms")]).unwrap();
    assert!(c.secondary);
    assert_eq!(c.failover, Some(ms(300.0)));
}

/// A topology with one server per DC has no node for a secondary coordinator.
#[test]
fn a_secondary_needs_two_servers_per_dc() {
    let mut t = meridian_core::Topology::preset("gcp3").unwrap();
    t.nodes_per_dc = 1;
    struct Name;
    impl crate::named::WithProtocol for Name {
        type Out = &'static str;
        fn with<P: crate::Protocol>(self, p: P) -> &'static str {
            p.name()
        }
    }
    let e = crate::named::with_protocol("catenae:secondary=on", &t, meridian_core::HomeRule::Spread, Name)
        .unwrap_err()
        .to_string();
    assert!(e.contains("two servers per DC"), "{e}");
    assert!(crate::named::with_protocol("catenae", &t, meridian_core::HomeRule::Spread, Name).is_ok());
}

/// Issue 54, item 1: a read-only read at an epoch whose footprints are not all at the
/// chain server yet waits there for them instead of being refused at once. Refused, the
/// client retried 50 ms later at the then-newest epoch, which was just as incomplete,
/// so read-only transactions spun (p50 204 ms at 300 clients on cat-fig5). A read left
/// waiting for `RO_RETRY` is still refused, so the client retries as before.
#[test]
fn a_read_only_read_waits_for_its_epoch_to_complete_instead_of_being_refused() {
    use crate::testing::{deliver, fire};
    let e = env();
    let mut s = proto().server(&e, NodeId(1));
    let read = |attempt: u32, snap: u64| {
        Msg::RoRead(SnapRead {
            txn: txn(7),
            attempt,
            client: CLIENT,
            snap,
            keys: vec![Key::from("k")],
        })
    };
    let replies = |sent: Vec<(NodeId, &Msg)>| -> Vec<(u32, bool)> {
        sent.into_iter()
            .filter_map(|(to, m)| match m {
                Msg::RoReply { attempt, reads, .. } if to == CLIENT => Some((*attempt, reads.is_some())),
                _ => None,
            })
            .collect()
    };
    // Epoch 0's footprints have not all arrived: no answer yet, neither yes nor no.
    let eff = deliver(&mut s, ms(1.0), NodeId(1), CLIENT, read(1, 0));
    assert!(replies(eff.sent()).is_empty());
    // The manifest says epoch 0 brings no footprint here: the epoch is complete, and
    // the parked read is answered with the snapshot's values.
    let m = Msg::Manifest { counts: vec![(0, 0)] };
    let eff = deliver(&mut s, ms(3.0), NodeId(1), NodeId(0), m);
    assert_eq!(replies(eff.sent()), vec![(1, true)]);
    // A read at an epoch that stays incomplete is refused once `RO_RETRY` has passed.
    let eff = deliver(&mut s, ms(4.0), NodeId(1), CLIENT, read(2, 5));
    assert!(replies(eff.sent()).is_empty());
    let eff = fire(&mut s, ms(4.0) + client::RO_RETRY, NodeId(1), TimerId(T_RO_PARK));
    assert_eq!(replies(eff.sent()), vec![(2, false)]);
}

mod spec;
