//! Hand-staged scenarios on the shared test network ([`crate::testing::Net`]): three
//! DCs of two servers each (`Topology::uniform`), every DC a full replica with its
//! coordinator on its first server, clients in the first DC played by the real client
//! actor.

use super::*;
use crate::kit::vote::{DcVote, Decided};
use crate::testing::{self, ycsb_call, Net, Pred};
use crate::Replica;
use meridian_core::{secs, Topology};

fn net(cc: Cc, clients: u32) -> (Net<PaxosCommit>, Arc<Layout>) {
    let topo = Topology::uniform("u3", &["A", "B", "C"], 100.0, 0.5, 2, 2);
    let mut layout = Layout::new(topo, Placement::Full).unwrap();
    let node = layout.add_client(DcId(0));
    let layout = Arc::new(layout);
    let env = testing::ycsb_env(layout.clone());
    let servers = (0..layout.num_servers())
        .map(|n| Server::new(env.clone(), NodeId(n), cc))
        .collect();
    let cls = (0..clients)
        .map(|i| Client::new(env.clone(), node, ClientId(i), cc))
        .collect();
    let route = |m: &Msg| match m {
        Msg::Result(TxnResult { txn, .. }) => txn.client as usize,
        _ => 0,
    };
    (Net::new(servers).with_clients(node, cls, route), layout)
}

fn run(net: &mut Net<PaxosCommit>, d: Time) {
    net.run_for_with_clients(
        d,
        ms(250),
        ServerTimer::Sweep,
        Some((client::ClientTimer::Status, ms(1000))),
    );
}

fn ms(v: u64) -> Time {
    v * 1_000_000
}

fn dc_nodes(layout: &Layout, dc: u16) -> Vec<NodeId> {
    layout.servers_in(DcId(dc)).collect()
}

fn t(client: u32, seq: u32) -> TxnId {
    TxnId { client, seq }
}

/// §VII-A's message pattern for 2PL with a pre-declared program: the client's DC's
/// coordinator locks both keys at every DC in one round (the read key shared, the
/// written one exclusively; a majority suffices), each lock read at the data server of
/// the DC that granted it, then runs the commit round among the coordinators; every
/// DC installs the write, and no lock is left anywhere. A duplicated accept request
/// changes nothing.
#[test]
fn two_pl_reads_and_locks_at_a_majority_then_commits_everywhere() {
    let (mut net, layout) = net(Cc::Locking, 1);
    net.duplicate_once = Some(Box::new(|_, _, m| matches!(m, Msg::Accept { .. })));
    let trace = tracer(&mut net);
    net.submit(0, t(0, 1), ycsb_call(&[("x", b""), ("y", b"v1")]));
    let seen: Vec<(&str, NodeId, NodeId)> = trace.borrow().clone();
    let count = |k: &str| seen.iter().filter(|(n, _, _)| *n == k).count();
    let first = |k: &str| seen.iter().position(|(n, _, _)| *n == k).unwrap();
    let coords: BTreeSet<NodeId> = (0..3).map(|d| coordinator_of(&layout, DcId(d))).collect();
    // One shared lock request per DC for x, one exclusive per DC for y, all to the
    // coordinators and in one round; each granted lock is read at that DC's data
    // server, whose answer tells the home it is held (no separate `Locked`).
    assert_eq!(count("Lock"), 6, "{seen:?}");
    assert!(seen
        .iter()
        .filter(|(n, _, _)| *n == "Lock")
        .all(|(_, _, to)| coords.contains(to)));
    assert_eq!((count("Read"), count("ReadReply")), (6, 6));
    assert_eq!(count("Locked"), 0);
    let last = |k: &str| seen.iter().rposition(|(n, _, _)| *n == k).unwrap();
    assert!(
        last("Lock") < first("ReadReply"),
        "one round: every lock asked before any answer"
    );
    // The commit round starts only after the first round: the home's accept requests
    // to the two other DCs (one of them duplicated by the network), each DC's vote to
    // the two others, then installs in every DC and `Applied` among them.
    assert!(first("Accept") > first("ReadReply"));
    assert_eq!(count("Accept"), 3);
    assert!(count("Vote") >= 6);
    assert_eq!((count("Install"), count("Installed"), count("Applied")), (3, 3, 6));
    assert_eq!(count("Result"), 1);
    run(&mut net, secs(2.0));
    assert_eq!(net.records.len(), 1);
    let r = &net.records[0];
    assert_eq!(r.outcome, Outcome::Committed, "{r:?}");
    assert_eq!(r.reads.len(), 1);
    assert_eq!(r.writes.len(), 1);
    assert_eq!(net.holders(&layout, "y", t(0, 1)), vec![true; 3]);
    for s in &net.servers {
        assert_eq!(s.locked_keys(), Some(0), "{:?} released its locks", s.me);
        assert!(
            s.acc.is_empty() && s.home.is_empty() && s.holders.is_empty(),
            "{:?}",
            s.me
        );
        let k = Key::from("y");
        if let Some(ks) = s.snapshot().keys.get(&k) {
            assert_eq!(ks.versions.len(), 1, "installed once");
        }
    }
}

/// Records every message the network delivers (kind, from, to), through the
/// network's drop filter (which never drops).
type Trace = std::rc::Rc<std::cell::RefCell<Vec<(&'static str, NodeId, NodeId)>>>;

fn tracer(net: &mut Net<PaxosCommit>) -> Trace {
    let trace: Trace = Default::default();
    let t = trace.clone();
    net.drop_once = Some(Box::new(move |from, to, m| {
        let kind = match m {
            Msg::Submit { .. } => "Submit",
            Msg::Status { .. } => "Status",
            Msg::Result(TxnResult { .. }) => "Result",
            Msg::Lock { .. } => "Lock",
            Msg::Locked { .. } => "Locked",
            Msg::Wound { .. } => "Wound",
            Msg::Release { .. } => "Release",
            Msg::Read { .. } => "Read",
            Msg::ReadReply(ReadReply { .. }) => "ReadReply",
            Msg::Accept { .. } => "Accept",
            Msg::Vote(DcVote { .. }) => "Vote",
            Msg::Decided(Decided { .. }) => "Decided",
            Msg::Applied { .. } => "Applied",
            Msg::Install { .. } => "Install",
            Msg::Installed { .. } => "Installed",
        };
        t.borrow_mut().push((kind, from, to));
        false
    }));
    trace
}

/// OCC's pattern: the read goes to the home DC's data server only, no lock anywhere;
/// then the same commit round as 2PL.
#[test]
fn occ_reads_at_home_and_validates_in_the_commit_round() {
    let (mut net, layout) = net(Cc::Optimistic, 1);
    let trace = tracer(&mut net);
    net.submit(0, t(0, 1), ycsb_call(&[("x", b""), ("y", b"v1")]));
    let seen = trace.borrow().clone();
    let count = |k: &str| seen.iter().filter(|(n, _, _)| *n == k).count();
    assert_eq!((count("Lock"), count("Locked")), (0, 0));
    let reads: Vec<_> = seen.iter().filter(|(n, _, _)| *n == "Read").collect();
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].2, data_server(&layout, &Key::from("x"), DcId(0)));
    assert_eq!(count("Accept"), 2);
    assert_eq!(count("Result"), 1);
    assert_eq!(net.records[0].outcome, Outcome::Committed);
}

/// A majority of DCs commits: with the third DC down the transaction commits in the
/// other two; when it comes back, the coordinators' re-sent decision has it install
/// the same version.
#[test]
fn one_dc_down_commits_with_the_other_two_and_it_catches_up() {
    for cc in [Cc::Locking, Cc::Optimistic] {
        let (mut net, layout) = net(cc, 1);
        for n in dc_nodes(&layout, 2) {
            net.crash(n);
        }
        net.submit(0, t(0, 1), ycsb_call(&[("x", b""), ("x", b"v1")]));
        run(&mut net, secs(2.0));
        assert_eq!(net.records.len(), 1);
        assert_eq!(
            net.records[0].outcome,
            Outcome::Committed,
            "{cc:?} {:?}",
            net.records[0]
        );
        assert_eq!(net.holders(&layout, "x", t(0, 1)), vec![true, true, false]);
        for n in dc_nodes(&layout, 2) {
            net.restart(n);
        }
        run(&mut net, secs(3.0));
        assert_eq!(net.holders(&layout, "x", t(0, 1)), vec![true; 3], "{cc:?}");
        for s in &net.servers {
            assert_eq!(s.locked_keys(), Some(0));
            assert!(s.acc.is_empty(), "{cc:?} {:?} still tracks {:?}", s.me, s.acc.keys());
        }
    }
}

/// With two DCs of three down no majority can vote: the transaction stays undecided
/// (never decided twice) until one returns, then commits.
#[test]
fn without_a_majority_nothing_is_decided_until_a_dc_returns() {
    let (mut net, layout) = net(Cc::Optimistic, 1);
    for dc in [1, 2] {
        for n in dc_nodes(&layout, dc) {
            net.crash(n);
        }
    }
    net.submit(0, t(0, 1), ycsb_call(&[("x", b"v1")]));
    run(&mut net, secs(3.0));
    assert!(net.records.is_empty(), "{:?}", net.records);
    for n in dc_nodes(&layout, 1) {
        net.restart(n);
    }
    run(&mut net, secs(3.0));
    assert_eq!(net.records.len(), 1);
    assert_eq!(net.records[0].outcome, Outcome::Committed);
    assert_eq!(net.holders(&layout, "x", t(0, 1)), vec![true, true, false]);
}

/// Wound-wait at a DC's lock table: a younger holder is wounded (its home is told)
/// when an older transaction asks for the lock; the older one gets it once the
/// younger's locks are released; a younger requester simply waits.
#[test]
fn wound_wait_wounds_the_younger_holder_and_the_older_gets_the_lock() {
    let (mut net, layout) = net(Cc::Locking, 0);
    let coord = coordinator_of(&layout, DcId(1));
    let (h_old, h_young) = (NodeId(90), NodeId(91));
    let (old, young) = (t(1, 1), t(2, 1));
    let lock = |txn: TxnId, prio: u64| Msg::Lock {
        txn,
        prio: (prio, txn),
        key: Key::from("x"),
        exclusive: true,
        read: false,
    };
    net.send(h_young, coord, lock(young, 5));
    assert!(matches!(net.outside.last(), Some((_, to, Msg::Locked { txn, .. })) if *to == h_young && *txn == young));
    net.send(h_old, coord, lock(old, 1));
    assert!(
        matches!(net.outside.last(), Some((_, to, Msg::Wound { txn })) if *to == h_young && *txn == young),
        "{:?}",
        net.outside.last()
    );
    // A third, younger still, waits without wounding anyone.
    let n = net.outside.len();
    net.send(NodeId(92), coord, lock(t(3, 1), 9));
    assert_eq!(net.outside.len(), n, "the youngest waits silently");
    net.send(h_young, coord, Msg::Release { txn: young });
    assert!(matches!(net.outside.last(), Some((_, to, Msg::Locked { txn, .. })) if *to == h_old && *txn == old));
    // A late lock request of the released transaction is not granted again.
    let n = net.outside.len();
    net.send(h_young, coord, lock(young, 5));
    assert_eq!(net.outside.len(), n);
}

/// End to end: an older transaction asks for the lock a younger one holds for its
/// read; the younger, still executing, is wounded and aborts (recorded as wounded), and
/// the older commits.
#[test]
fn two_pl_a_wounded_younger_transaction_aborts_and_the_older_commits() {
    let (mut net, _) = net(Cc::Locking, 2);
    let node = net.client_node.unwrap();
    // Both requests reach the home at the same instant; ties go to the smaller id, so
    // client 0's transaction is the older. The younger's requests go first.
    let young = ycsb_call(&[("x", b""), ("x", b"young")]);
    let old = ycsb_call(&[("x", b"old")]);
    for (c, txn, call) in [(1usize, t(1, 1), young), (0, t(0, 1), old)] {
        let e = testing::call(&mut net.clients[c], net.now, node, |cl, cx| cl.submit(txn, call, cx));
        for (to, m) in e.sent() {
            net.q.push_back((node, to, m.clone()));
        }
    }
    net.pump();
    run(&mut net, secs(3.0));
    let out: BTreeMap<TxnId, (Outcome, Option<AbortReason>)> = net
        .records
        .iter()
        .map(|r| (r.id, (r.outcome, r.abort_reason.as_deref().cloned())))
        .collect();
    assert_eq!(out[&t(1, 1)], (Outcome::Aborted, Some(AbortReason::Wounded)), "{out:?}");
    assert_eq!(out[&t(0, 1)], (Outcome::Committed, None), "{out:?}");
    for s in &net.servers {
        assert_eq!(s.locked_keys(), Some(0));
    }
}

/// OCC (§VII-A): a transaction whose read is stale at the other DCs fails validation
/// there; it is retried once as a new transaction (its own id, `RETRY_BIT` set), and
/// both attempts are recorded. A program's own abort is not retried.
#[test]
fn occ_validation_failure_is_retried_once_and_both_attempts_are_recorded() {
    let (mut net, layout) = net(Cc::Optimistic, 1);
    // DCs B and C committed a newer x (from a transaction DC A has not heard of yet).
    let x = Key::from("x");
    let newer = VersionId { txn: t(7, 1), seq: 0 };
    for dc in [1u16, 2] {
        let c = coordinator_of(&layout, DcId(dc));
        net.servers[c.0 as usize].latest.insert(x.clone(), 1 << 40);
        let d = data_server(&layout, &x, DcId(dc));
        net.servers[d.0 as usize]
            .store
            .install(&x, newer, Value(b"n".to_vec()), 1 << 40);
    }
    net.submit(0, t(0, 1), ycsb_call(&[("x", b""), ("x", b"v1")]));
    run(&mut net, secs(2.0));
    assert_eq!(net.records.len(), 2, "{:?}", net.records);
    let (a, b) = (&net.records[0], &net.records[1]);
    assert_eq!((a.id, a.outcome), (t(0, 1), Outcome::Aborted));
    assert_eq!(a.abort_reason.as_deref(), Some(&AbortReason::ReadVersionChanged));
    assert_eq!(b.id, t(0, 1 | RETRY_BIT));
    assert_eq!(
        b.outcome,
        Outcome::Aborted,
        "DC A still has the old x: the retry fails too"
    );
    assert!(a.end.unwrap() <= b.start);
    for s in &net.servers {
        assert_eq!(s.locked_keys(), Some(0));
    }
    // Once DC A has the newer version the same call commits at the first attempt.
    let d = data_server(&layout, &x, DcId(0));
    net.servers[d.0 as usize]
        .store
        .install(&x, newer, Value(b"n".to_vec()), 1 << 40);
    let c = coordinator_of(&layout, DcId(0));
    net.servers[c.0 as usize].latest.insert(x.clone(), 1 << 40);
    net.submit(0, t(0, 2), ycsb_call(&[("x", b""), ("x", b"v2")]));
    run(&mut net, secs(2.0));
    assert_eq!(net.records.len(), 3);
    assert_eq!(net.records[2].outcome, Outcome::Committed, "{:?}", net.records[2]);
}

/// A lost accept request is covered: the home's vote carries the value, so the DC that
/// missed the request votes when the home re-sends its vote, and installs.
#[test]
fn a_lost_accept_request_is_recovered_through_the_votes() {
    let (mut net, layout) = net(Cc::Optimistic, 1);
    let c2 = coordinator_of(&layout, DcId(2));
    for dc in [1u16] {
        for n in dc_nodes(&layout, dc) {
            net.crash(n);
        }
    }
    net.drop_once = Some(Box::new(move |_, to, m| to == c2 && matches!(m, Msg::Accept { .. })));
    net.submit(0, t(0, 1), ycsb_call(&[("y", b"v")]));
    // A's vote also reached C (votes go to every coordinator), so C votes at once.
    run(&mut net, secs(3.0));
    assert_eq!(net.records.len(), 1);
    assert_eq!(net.records[0].outcome, Outcome::Committed);
    assert_eq!(net.holders(&layout, "y", t(0, 1)), vec![true, false, true]);
}

/// The home coordinator crashes. (a) OCC, after its DC voted and the accept requests
/// left: the other DCs decide by themselves (votes go to every coordinator) and
/// install; the restarted home learns the outcome from its logged vote and its peers
/// and answers the waiting client: committed, on every DC. (b) 2PL, while collecting
/// the first round's locks: nothing was proposed, so the restarted home, asked by the
/// client, aborts it for good and releases its locks everywhere.
#[test]
fn a_crashed_home_coordinator_loses_nothing_and_answers_after_restart() {
    for (cc, want) in [(Cc::Optimistic, Outcome::Committed), (Cc::Locking, Outcome::Aborted)] {
        let (mut net, layout) = net(cc, 1);
        let home = coordinator_of(&layout, DcId(0));
        let crash_on: Pred<Msg> = match cc {
            Cc::Optimistic => Box::new(|m| matches!(m, Msg::Submit { .. })),
            Cc::Locking => Box::new(|m| matches!(m, Msg::ReadReply(..))),
        };
        net.crash_after = Some((home, crash_on));
        net.submit(0, t(0, 1), ycsb_call(&[("z", b"v")]));
        run(&mut net, secs(2.0));
        assert!(net.records.is_empty(), "{cc:?}: the client waits for its home");
        let before = net.holders(&layout, "z", t(0, 1));
        net.restart(home);
        run(&mut net, secs(5.0));
        assert_eq!(net.records.len(), 1, "{cc:?}: the client got its answer");
        assert_eq!(net.records[0].outcome, want, "{cc:?} {:?}", net.records[0]);
        if want == Outcome::Committed {
            assert_eq!(
                before,
                vec![false, true, true],
                "the other DCs committed without the home"
            );
            assert_eq!(net.holders(&layout, "z", t(0, 1)), vec![true; 3]);
        } else {
            assert_eq!(net.holders(&layout, "z", t(0, 1)), vec![false; 3]);
        }
        for s in &net.servers {
            assert_eq!(s.locked_keys(), Some(0), "{cc:?} {:?}", s.me);
        }
    }
}

/// Stop 68's review: a pre-declared program that ends having read and written nothing
/// (here a `ycsb` call of zero operations that still names a key) commits at once, and
/// must release the locks its first round took at every DC; it kept them until the
/// idle release, queueing other transactions behind a home that no longer knew it.
#[test]
fn a_program_that_does_nothing_releases_its_first_round_locks() {
    use meridian_txn::Arg;
    let (mut net, _layout) = net(Cc::Locking, 1);
    let call = Call {
        program: "ycsb".into(),
        args: vec![Arg::U64(0), Arg::Key(Key::from("x")), Arg::Bytes(b"v".to_vec())],
    };
    net.submit(0, t(0, 1), call);
    run(&mut net, ms(600));
    assert_eq!(net.records.len(), 1);
    assert_eq!(net.records[0].outcome, Outcome::Committed);
    for s in &net.servers {
        assert_eq!(s.locked_keys(), Some(0), "{:?} still holds a first-round lock", s.me);
    }
}
