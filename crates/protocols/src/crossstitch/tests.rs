//! Hand-driven scenarios of §4.1: a tiny in-test network where the test decides which
//! messages arrive and when servers fail, so each failure point of the pipelined
//! commit (before the ack, after the ack, after the precommit, the last server) is
//! staged exactly.
//!
//! The chain: one DC of 8 nodes, 8 shards, two copies each (shard s on node s, its
//! replica on s+1). The program reads `#0/a`, writes `#2/b`, reads `#4/c`, writes
//! `#6/d`: positions 1..4 are nodes 0, 2, 4, 6; their replicas 1, 3, 5, 7.

use super::client::ClientTimer;
use super::*;
use crate::testing::{self, call, deliver};
use meridian_core::{ms, Actor, DcId, Layout, Topology};
use meridian_txn::Arg;

const CLIENT: NodeId = NodeId(8);

/// The shared test network with both clients on node `CLIENT` (a message goes to its
/// transaction's client).
struct Net {
    net: testing::Net<CrossStitch>,
}

impl std::ops::Deref for Net {
    type Target = testing::Net<CrossStitch>;
    fn deref(&self) -> &Self::Target {
        &self.net
    }
}

impl std::ops::DerefMut for Net {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.net
    }
}

fn call_args() -> Call {
    let k = |s: &str| Arg::Key(Key::from(s));
    let w = Arg::Bytes(vec![7; 4]);
    let r = Arg::Bytes(vec![]);
    Call {
        program: "ycsb".into(),
        args: vec![
            Arg::U64(4),
            k("#0/a"),
            r.clone(),
            k("#2/b"),
            w.clone(),
            k("#4/c"),
            r,
            k("#6/d"),
            w,
        ],
    }
}

impl Net {
    fn new() -> Net {
        let mut layout = Layout::new(
            Topology::preset("lan").unwrap(),
            Placement::Home {
                home: HomeRule::Spread,
                k: 2,
            },
        )
        .unwrap();
        assert_eq!(layout.add_client(DcId(0)), CLIENT);
        let env = testing::ycsb_env(Arc::new(layout));
        let servers: Vec<Server> = (0..8).map(|n| Server::new(env.clone(), NodeId(n))).collect();
        let clients = vec![
            Client::new(env.clone(), CLIENT, ClientId(0)),
            Client::new(env, CLIENT, ClientId(1)),
        ];
        let route = |m: &Msg| m.txn().map_or(0, |t| t.client as usize);
        Net {
            net: testing::Net::new(servers).with_clients(CLIENT, clients, route),
        }
    }

    fn start(&mut self) {
        self.net.submit(0, TxnId { client: 0, seq: 1 }, call_args());
    }

    /// Advances time in sweep-sized steps, firing every live server's sweep, and the
    /// clients' timers each second.
    fn run_for(&mut self, d: Time) {
        self.net.run_for_with_clients(
            d,
            ms(250.0),
            ServerTimer::Sweep,
            Some((ClientTimer::Status, ms(1000.0))),
        );
    }

    fn crash(&mut self, n: u32) {
        self.net.crash(NodeId(n));
    }

    fn restart(&mut self, n: u32) {
        self.net.restart(NodeId(n));
    }

    /// The client's outcome, and every outcome applied by a live server (which must
    /// agree); also that no server holds an uncommitted version any more.
    fn settle(&mut self) -> Outcome {
        self.run_for(ms(30_000.0));
        assert_eq!(self.records.len(), 1, "the client learned exactly one outcome");
        assert_eq!(self.records[0].id, TxnId { client: 0, seq: 1 });
        let out = self.records[0].outcome;
        let want = out == Outcome::Committed;
        for s in &self.servers {
            if self.down.contains(&s.me) {
                continue;
            }
            for (t, c) in s.outcomes().unwrap() {
                assert_eq!(c, want, "{:?} applied {t} as {c}, the client saw {out:?}", s.me);
            }
            assert_eq!(s.locked_keys(), Some(0), "{:?} still holds uncommitted versions", s.me);
        }
        out
    }

    /// Whether node `n` holds `key` committed.
    fn has(&self, n: u32, key: &str) -> bool {
        self.servers[n as usize].snapshot().keys.contains_key(&Key::from(key))
    }
}

fn is_exec_to(pos: u32) -> impl Fn(&Msg) -> bool {
    move |m| matches!(m, Msg::Exec(Exec { chain, .. }) if chain.len() as u32 == pos)
}

#[test]
fn no_failure_commits_everywhere_with_both_copies() {
    let mut n = Net::new();
    n.start();
    assert_eq!(n.settle(), Outcome::Committed);
    for node in [2, 3, 6, 7] {
        assert!(n.has(node, if node < 4 { "#2/b" } else { "#6/d" }), "node {node}");
    }
    let r = &n.records[0];
    assert_eq!(r.reads.len(), 2);
    assert_eq!(r.writes.len(), 2);
}

#[test]
fn server_failing_before_its_ack_aborts_the_transaction() {
    // Position 3 (node 4) is down when the transaction reaches it: it never acks,
    // so position 2 never precommits and aborts on its own after `vote`.
    let mut n = Net::new();
    n.crash(4);
    n.start();
    let p2 = n.servers[2]
        .parts
        .get(&(TxnId { client: 0, seq: 1 }, 2))
        .map(|p| p.phase);
    assert_eq!(p2, Some(Phase::Executed), "no ack, no precommit");
    assert_eq!(n.settle(), Outcome::Aborted);
    assert!(
        !n.has(2, "#2/b") && !n.has(3, "#2/b"),
        "the aborted put is gone at both copies"
    );
}

#[test]
fn server_failing_after_its_ack_before_precommit_aborts_through_the_query_to_i_plus_2() {
    // Position 3 (node 4) executes, acks and forwards, then crashes before it gets
    // position 2's precommit. Position 2 precommitted (it had the ack), so it cannot
    // abort alone: it finds node 4 silent and asks position 4, which has not
    // precommitted and aborts on its behalf.
    let mut n = Net::new();
    n.crash_after = Some((NodeId(4), Box::new(is_exec_to(3))));
    n.start();
    assert!(n.down.contains(&NodeId(4)));
    let p2 = n.servers[2]
        .parts
        .get(&(TxnId { client: 0, seq: 1 }, 2))
        .map(|p| p.phase);
    assert_eq!(p2, Some(Phase::Precommitted), "position 2 had the ack and precommitted");
    assert_eq!(n.settle(), Outcome::Aborted);
    let why = n.records[0]
        .abort_reason
        .as_ref()
        .map(|r| r.to_string())
        .unwrap_or_default();
    assert!(why.contains("query") || why.contains("timed out"), "{why}");
}

/// A client's abort reaches a position only before anything precommitted (it is sent
/// when the first server never acknowledged). One that arrives where a position has
/// precommitted, as a client certificate posing as a decider would send it, is ignored:
/// the position keeps its precommit and applies no outcome.
#[test]
fn a_clients_abort_of_a_precommitted_position_is_ignored() {
    let mut n = Net::new();
    let txn = TxnId { client: 0, seq: 1 };
    n.crash_after = Some((NodeId(4), Box::new(is_exec_to(3))));
    n.start();
    let phase = |n: &Net| n.servers[2].parts.get(&(txn, 2)).map(|p| p.phase);
    assert_eq!(phase(&n), Some(Phase::Precommitted));
    let forged = Msg::Decide {
        txn,
        commit: false,
        rec: None,
        reason: Some(AbortReason::FirstServerTimeout),
    };
    n.send(CLIENT, NodeId(2), forged);
    n.pump();
    assert_eq!(
        phase(&n),
        Some(Phase::Precommitted),
        "a client's abort undid a precommit"
    );
    assert!(
        !n.servers[2].outcomes().unwrap().iter().any(|(t, _)| *t == txn),
        "node 2 applied an outcome from a client's abort"
    );
}

#[test]
fn server_failing_after_precommit_does_not_stop_the_commit() {
    // Position 3 (node 4) precommits, delegating the decision to position 4, and then
    // crashes: the last server commits; after a restart node 4 copies its data back.
    let mut n = Net::new();
    n.crash_after = Some((NodeId(4), Box::new(|m| matches!(m, Msg::Precommit { pos: 3, .. }))));
    n.start();
    assert!(n.down.contains(&NodeId(4)));
    assert_eq!(n.settle(), Outcome::Committed);
    n.restart(4);
    n.run_for(ms(5_000.0));
    assert!(n.has(6, "#6/d") && n.has(7, "#6/d") && n.has(2, "#2/b") && n.has(3, "#2/b"));
}

#[test]
fn last_server_failing_after_a_replica_accepted_commits_by_recovery() {
    // The last server (node 6) gets its COMMIT accepted by one transaction replica and
    // crashes before telling anyone: position 3 finds it silent and asks the
    // transaction replicas, whose recovery finds the accepted COMMIT.
    let mut n = Net::new();
    n.crash_before = Some((NodeId(6), Box::new(|m| matches!(m, Msg::Accepted { ok: true, .. }))));
    n.start();
    assert!(n.down.contains(&NodeId(6)));
    assert!(n.records.is_empty(), "nobody was told yet");
    assert_eq!(n.settle(), Outcome::Committed);
}

#[test]
fn last_server_failing_before_its_proposal_aborts_by_recovery() {
    // The last server crashes on receiving the precommit, before proposing: recovery
    // at its transaction replicas finds nothing accepted and decides ABORT.
    let mut n = Net::new();
    n.crash_before = Some((NodeId(6), Box::new(|m| matches!(m, Msg::Precommit { pos: 4, .. }))));
    n.start();
    assert!(n.down.contains(&NodeId(6)));
    assert_eq!(n.settle(), Outcome::Aborted);
}

#[test]
fn lost_messages_are_recovered_by_retransmission() {
    // Drop one of each kind of message once; the transaction still commits.
    for kind in ["exec", "ack", "precommit", "notify", "accept", "decide"] {
        let mut n = Net::new();
        n.drop_once = Some(Box::new(move |_, _, m| match kind {
            "exec" => matches!(m, Msg::Exec(Exec { chain, .. }) if chain.len() == 2),
            "ack" => matches!(m, Msg::Ack { pos: 2, .. }),
            "precommit" => matches!(m, Msg::Precommit { pos: 2, .. }),
            "notify" => matches!(m, Msg::Notify { .. }),
            "accept" => matches!(m, Msg::Accept { .. }),
            _ => matches!(m, Msg::Decide { .. }),
        }));
        n.start();
        let out = n.settle();
        assert_eq!(
            out,
            Outcome::Committed,
            "dropping one {kind}: {:?}",
            n.records[0].abort_reason
        );
    }
}

/// Starts T1 (the standard chain), then T2 from a second client: it reads `#2/b`
/// (T1's uncommitted put, at a later timestamp) and writes `#4/c`. Returns T2's id.
fn dirty_reader(n: &mut Net) -> TxnId {
    n.start();
    n.now += ms(10.0);
    let call2 = Call {
        program: "ycsb".into(),
        args: vec![
            Arg::U64(2),
            Arg::Key(Key::from("#2/b")),
            Arg::Bytes(vec![]),
            Arg::Key(Key::from("#4/c")),
            Arg::Bytes(vec![9; 4]),
        ],
    };
    let t2 = TxnId { client: 1, seq: 1 };
    n.net.submit(1, t2, call2);
    let p = n.servers[2].parts.get(&(t2, 1)).expect("T2 ran at node 2");
    assert_eq!(p.deps.len(), 1, "T2 read T1's uncommitted put");
    assert_eq!(p.phase, Phase::Executed, "and may not precommit before T1 resolves");
    t2
}

fn outcome_at(n: &Net, node: usize, t: TxnId) -> Option<bool> {
    n.servers[node]
        .outcomes()
        .unwrap()
        .into_iter()
        .find(|(x, _)| *x == t)
        .map(|x| x.1)
}

#[test]
fn a_dirty_reader_waits_for_its_writer_and_aborts_with_it() {
    // T1's first position never precommits (node 0 dies as the client's precommit
    // arrives), so T1 aborts at position 2 after `vote`; T2 read T1's put there.
    let mut n = Net::new();
    n.crash_before = Some((NodeId(0), Box::new(|m| matches!(m, Msg::Precommit { pos: 1, .. }))));
    let t2 = dirty_reader(&mut n);
    n.run_for(ms(30_000.0));
    assert_eq!(outcome_at(&n, 2, TxnId { client: 0, seq: 1 }), Some(false));
    assert_eq!(outcome_at(&n, 2, t2), Some(false), "cascading abort");
    assert_eq!(outcome_at(&n, 4, t2), Some(false), "at every position of T2");
    assert_eq!(n.servers[2].locked_keys(), Some(0));
    assert_eq!(n.servers[4].locked_keys(), Some(0));
}

#[test]
fn a_dirty_reader_commits_after_its_writer_commits() {
    let mut n = Net::new();
    n.drop_once = Some(Box::new(|_, to, m| {
        to == NodeId(2) && matches!(m, Msg::Precommit { pos: 2, .. })
    }));
    let t2 = dirty_reader(&mut n);
    n.run_for(ms(30_000.0));
    assert_eq!(outcome_at(&n, 2, TxnId { client: 0, seq: 1 }), Some(true));
    assert_eq!(outcome_at(&n, 2, t2), Some(true));
    assert_eq!(outcome_at(&n, 4, t2), Some(true));
    let outs: Vec<(TxnId, Outcome)> = n.records.iter().map(|r| (r.id, r.outcome)).collect();
    assert!(outs.contains(&(t2, Outcome::Committed)), "{outs:?}");
}

/// Issue 14, C1: a server that crashes before its first sweep must still know it may
/// have forgotten what it did. The watermark was first written at the first sweep
/// (250 ms), so a crash before that left "alive until 0" and the restarted server
/// believed it had forgotten nothing.
#[test]
fn a_crash_before_the_first_sweep_still_marks_earlier_transactions_forgotten() {
    let n = Net::new();
    let mut s = Server::new(n.servers[0].env.clone(), NodeId(0));
    call(&mut s, 0, NodeId(0), |s, cx| s.on_start(cx));
    // A transaction that began at 50 ms, handled here, then a crash at 100 ms.
    let ts = ms(50.0) * TS_SCALE;
    let txn = TxnId { client: 3, seq: 1 };
    call(&mut s, ms(60.0), NodeId(0), |s, cx| {
        s.admit(txn, ts, cx);
    });
    s.on_crash();
    call(&mut s, ms(1_000.0), NodeId(0), |s, cx| s.on_recover(cx));
    assert!(s.forgot(txn, ts), "a transaction of 50 ms may have been forgotten");
    assert!(!s.may_accept_ballot(txn, ts, 0), "its ballot 0 must be refused");
    // One it never acted on, far beyond the reserve, is not refused.
    assert!(!s.forgot(txn, ms(5_000.0) * TS_SCALE));
}

/// Stop 67's review: an idle client's acceptor mark is dropped after `tombstone`, and
/// dropping it outright let a server restarted once more answer "nothing accepted" for
/// a transaction it did accept before its first crash (one left undecided for long).
/// The dropped mark now goes into a floor that every restart keeps.
#[test]
fn a_dropped_client_mark_still_counts_after_the_next_restart() {
    let n = Net::new();
    let env = n.servers[0].env.clone();
    let mut s = Server::new(env.clone(), NodeId(0));
    call(&mut s, 0, NodeId(0), |s, cx| s.on_start(cx));
    let txn = TxnId { client: 4, seq: 1 };
    let ts = ms(50.0) * TS_SCALE;
    call(&mut s, ms(60.0), NodeId(0), |s, cx| {
        s.admit(txn, ts, cx);
    });
    // Client 4 goes quiet; long after, a sweep drops its entry.
    let late = ms(60.0) + 2 * env.timeouts.tombstone;
    call(&mut s, late, NodeId(0), |s, cx| s.sweep(cx));
    assert!(!s.client_marks.contains_key(&4), "the idle entry is dropped");
    s.on_crash();
    call(&mut s, late + ms(10.0), NodeId(0), |s, cx| s.on_recover(cx));
    assert!(s.forgot(txn, ts), "what it acted on is still counted forgotten");
    assert!(!s.may_accept_ballot(txn, ts, 0));
}

/// Campaign seed 661262 (5 s of clock skew): a client whose clock ran seconds ahead
/// lifted the one watermark seconds past every other client's timestamps, so each
/// transaction replica, once restarted, stayed silent in phase 1 for transactions that
/// began long after it came back; with both replicas of a last server restarted so, no
/// recovery reached a majority and the transaction never resolved. An acceptor now
/// counts as forgetful only for a client it may have acted for, below that client's
/// own mark.
#[test]
fn a_client_clock_far_ahead_does_not_make_an_acceptor_forget_other_clients() {
    let n = Net::new();
    let mut s = Server::new(n.servers[0].env.clone(), NodeId(0));
    call(&mut s, 0, NodeId(0), |s, cx| s.on_start(cx));
    // Client 1's clock is 5 s ahead; client 2's is right. Both are acted for at 60 ms.
    let (fast, slow) = (TxnId { client: 1, seq: 1 }, TxnId { client: 2, seq: 1 });
    let (fast_ts, slow_ts) = (ms(5_060.0) * TS_SCALE, ms(60.0) * TS_SCALE);
    call(&mut s, ms(60.0), NodeId(0), |s, cx| {
        for (t, ts) in [(fast, fast_ts), (slow, slow_ts)] {
            s.admit(t, ts, cx);
        }
    });
    s.on_crash();
    call(&mut s, ms(1_000.0), NodeId(0), |s, cx| s.on_recover(cx));
    // What it acted on is still counted forgotten, whichever the client.
    assert!(s.forgot(fast, fast_ts) && s.forgot(slow, slow_ts));
    assert!(!s.may_accept_ballot(slow, slow_ts, 0));
    // Client 2's transaction of 2 s (after the restart, by its clock) is below the
    // one watermark (client 1 lifted it past 5 s) but not below client 2's own mark:
    // the acceptor takes part in it. So does a client never acted for.
    let later = TxnId { client: 2, seq: 2 };
    let later_ts = ms(2_000.0) * TS_SCALE;
    assert!(s.forgot_before > later_ts / TS_SCALE, "the one mark is above it");
    assert!(!s.forgot(later, later_ts));
    assert!(s.may_accept_ballot(later, later_ts, 0));
    assert!(!s.forgot(TxnId { client: 9, seq: 1 }, slow_ts));
}

/// Issue 14, C2: COMMIT is chosen at ballot 0 by the final server and one transaction
/// replica; the final server crashes and forgets. A recovery by the other replica must
/// not count the restarted (empty) final server as an acceptor that accepted nothing:
/// with its promise and its own, it would have a majority without the COMMIT and
/// propose ABORT, a split decision (the client was told COMMIT).
#[test]
fn recovery_does_not_count_a_forgetful_acceptor_as_one_that_accepted_nothing() {
    let n = Net::new();
    let env = n.servers[0].env.clone();
    let fin = NodeId(6);
    let [a, b] = txn_replicas(&env.layout, fin);
    let mut servers: BTreeMap<NodeId, Server> = [fin, a, b]
        .into_iter()
        .map(|id| {
            let mut s = Server::new(env.clone(), id);
            call(&mut s, 0, id, |s, cx| s.on_start(cx));
            (id, s)
        })
        .collect();
    let txn = TxnId { client: 0, seq: 1 };
    let ts = ms(100.0) * TS_SCALE;
    let commit = Decision {
        commit: true,
        rec: None,
        chain: vec![],
    };
    // Ballot 0: the final server (which ran the transaction: its `Exec` raised the
    // watermark) and replica `a` accept COMMIT (chosen).
    let now = ms(150.0);
    call(servers.get_mut(&fin).unwrap(), now, fin, |s, cx| {
        s.admit(txn, ts, cx);
    });
    assert!(servers.get_mut(&fin).unwrap().accept(txn, ts, 0, &commit, now));
    let m = Msg::Accept {
        txn,
        ts,
        ballot: 0,
        decision: commit.clone(),
    };
    let e = deliver(servers.get_mut(&a).unwrap(), now, a, fin, m);
    assert!(e
        .sent()
        .iter()
        .any(|(_, m)| matches!(m, Msg::Accepted { ok: true, .. })));
    // The final server crashes, restarts and finishes re-syncing its data.
    let f = servers.get_mut(&fin).unwrap();
    f.on_crash();
    call(f, ms(500.0), fin, |s, cx| s.on_recover(cx));
    f.syncing.clear();
    // Replica `b` recovers well after the restart: phase 1 to all three acceptors, the
    // answers of `b` itself and of the final server arriving first.
    let now = ms(5_000.0);
    let e = call(servers.get_mut(&b).unwrap(), now, b, |s, cx| {
        s.recover(fin, txn, ts, fin, cx)
    });
    let prepares: Vec<(NodeId, Msg)> = e.sent().into_iter().map(|(t, m)| (t, m.clone())).collect();
    let mut promises = vec![];
    for to in [b, fin, a] {
        let (_, m) = prepares
            .iter()
            .find(|(t, _)| *t == to)
            .expect("a prepare to each acceptor");
        let e = deliver(servers.get_mut(&to).unwrap(), now, to, b, m.clone());
        promises.extend(e.sent().into_iter().map(|(_, m)| (to, m.clone())));
    }
    let mut proposed = vec![];
    for (from, m) in promises {
        let e = deliver(servers.get_mut(&b).unwrap(), now, b, from, m);
        for (_, m) in e.sent() {
            if let Msg::Accept { decision, .. } = m {
                proposed.push(decision.commit);
            }
        }
    }
    assert!(!proposed.is_empty(), "recovery reached phase 2");
    assert!(
        proposed.iter().all(|c| *c),
        "recovery must propose the chosen COMMIT: {proposed:?}"
    );
}

/// Client 0's transaction at 100 ms, committed: node 3 (the replica of position 2's
/// put of `#2/b`) handles it, which raises its watermarks past 100 ms. Then node 3
/// crashes, restarts and finishes re-syncing.
fn node_3_restarted_after_a_first_transaction() -> Net {
    let mut n = Net::new();
    n.run_for(ms(100.0));
    n.start();
    assert_eq!(n.records.len(), 1);
    assert_eq!(n.records[0].outcome, Outcome::Committed);
    n.crash(3);
    n.restart(3);
    n.run_for(ms(250.0));
    assert!(n.servers[3].syncing.is_empty(), "node 3 re-synced");
    n
}

/// A replica that restarted refuses a put of a transaction below its watermark, and
/// says so: the position waiting for its notify aborts at once. It used to drop the
/// put silently, so that position waited for its vote timeout (3 s), and a crash of the
/// last server in that window left a transaction whose acceptors were two forgetful
/// servers, undecidable (faults.rs seed 7344 once the sweep acted in position order).
#[test]
fn a_restarted_replica_refusing_a_put_aborts_the_waiting_position_at_once() {
    let mut n = node_3_restarted_after_a_first_transaction();
    // A second transaction of the same client whose timestamp is below node 3's
    // watermark for that client.
    let second = TxnId { client: 0, seq: 2 };
    assert!(
        n.servers[3].forgot(second, n.now * TS_SCALE),
        "node 3 may have acted on it"
    );
    n.submit(0, second, call_args());
    // No time passes: the abort comes from the refusal, not from a timeout.
    let r = n
        .records
        .iter()
        .find(|r| r.id == second)
        .expect("the second transaction resolved at once");
    assert_eq!(r.outcome, Outcome::Aborted);
    assert_eq!(r.abort_reason.as_deref(), Some(&AbortReason::ReplicaRestarted));
    n.run_for(ms(1_000.0));
    for s in n.servers.iter() {
        assert_eq!(s.locked_keys(), Some(0), "{:?} still holds uncommitted versions", s.me);
    }
}

/// Campaign seed 700227 (5 s of clock skew): a restarted server judged what it may
/// have forgotten by its one watermark, which every client's timestamps raise, so it
/// refused (as a replica and as a chain server) transactions of other clients that
/// began after it came back, and answered `Unknown` to every query about them; a
/// precommitted position that heard only `Unknown` (its next server refused the
/// execution, the one after had crashed) never resolved. Each role now judges by the
/// transaction's client's own mark: the same refusal as above, for another client's
/// transaction, is a commit with both copies, and a query about a transaction of a
/// client it never acted for is answered.
#[test]
fn a_restarted_server_judges_what_it_forgot_by_the_transactions_client() {
    let mut n = node_3_restarted_after_a_first_transaction();
    // Client 1's transaction is below the one watermark, but client 1 never reached
    // node 3: nothing about it can have been forgotten there.
    let other = TxnId { client: 1, seq: 1 };
    let ts = n.now * TS_SCALE;
    assert!(n.servers[3].forgot_before > n.now, "below the one watermark");
    assert!(!n.servers[3].forgot(other, ts));
    // Asked to kill a transaction it never saw, it refuses it rather than `Unknown`.
    let q = Msg::Query {
        txn: TxnId { client: 1, seq: 9 },
        ts,
        pos: 0,
        kill: true,
    };
    let now = n.now;
    let e = deliver(&mut n.servers[3], now, NodeId(3), NodeId(2), q);
    let answers: Vec<&Status> = e
        .sent()
        .iter()
        .filter_map(|(_, m)| match m {
            Msg::StatusReply { status, .. } => Some(status),
            _ => None,
        })
        .collect();
    assert!(
        matches!(answers[..], [Status::Aborted(AbortReason::QueryNeverReceived)]),
        "{answers:?}"
    );
    n.submit(1, other, call_args());
    n.run_for(ms(5_000.0));
    let r = n.records.iter().find(|r| r.id == other).expect("resolved");
    assert_eq!(r.outcome, Outcome::Committed, "{:?}", r.abort_reason);
    assert!(n.has(2, "#2/b") && n.has(3, "#2/b"), "both copies hold the write");
}

/// In one DC the transaction replicas of each final server are the two servers after
/// it (wrapping), so every server is an acceptor for exactly two final servers instead
/// of the two lowest ids serving all of them (the cs-fig6 bottleneck).
#[test]
fn transaction_replicas_spread_over_the_dc() {
    let n = Net::new();
    let layout = &n.servers[0].env.layout;
    let servers = layout.num_servers();
    assert_eq!(servers, 8, "the lan preset: one DC of 8 servers");
    let mut load = vec![0; servers as usize];
    for f in 0..servers {
        let [a, b] = txn_replicas(layout, NodeId(f));
        assert_eq!([a, b], [NodeId((f + 1) % servers), NodeId((f + 2) % servers)]);
        load[a.0 as usize] += 1;
        load[b.0 as usize] += 1;
    }
    assert!(load.iter().all(|&l| l == 2), "{load:?}");
}

// ----- fail-over of keys (§4.1; failover.rs) -------------------------------------

/// Shard `shard`'s view at `node`: (primary, members).
fn view_at(n: &Net, node: u32, shard: u32) -> (NodeId, Vec<NodeId>) {
    let v = n.servers[node as usize].view(shard);
    (v.primary, v.members)
}

/// The execution a client sends its first server: a transaction reading `key` alone.
fn first_exec(txn: TxnId, ts: u64, key: &str) -> Msg {
    Msg::Exec(Exec {
        txn,
        ts,
        exec: Execution::new(testing::ycsb_call(&[(key, b"")])),
        writes_done: 0,
        reads: vec![],
        writes: vec![],
        chain: vec![Hop {
            node: CLIENT,
            replicas: vec![],
        }],
        notifies: 0,
    })
}

/// The view of `shard` its witness agreed to last.
fn witnessed(n: &Net, shard: u32) -> Option<ShardView> {
    let w = witness_of(&n.servers[0].env.layout, meridian_core::ShardId(shard)).expect("a witness");
    n.servers[w.0 as usize].witnessed.get(&shard).cloned()
}

/// §4.1: "the keys that Server_{i+1} is hosting will failover to Server_{i+1}'s
/// replica". Node 2 (primary of shard 2, position 2 of the chain) is down; after the
/// failure timeout its replica, node 3, holds shard 2 alone, as agreed at the shard's
/// witness, and the transaction commits with its put made at node 3. Without
/// fail-over it aborted: position 1 forwarded to a silent node 2 until its vote
/// timeout.
#[test]
fn a_silent_primary_fails_over_to_its_replica_and_the_transaction_commits_there() {
    let mut n = Net::new();
    n.crash(2);
    n.run_for(ms(2_000.0));
    assert_eq!(view_at(&n, 3, 2), (NodeId(3), vec![NodeId(3)]));
    assert_eq!(view_at(&n, 0, 2), (NodeId(3), vec![NodeId(3)]), "told to every node");
    assert_eq!(witnessed(&n, 2).map(|v| v.primary), Some(NodeId(3)));
    n.start();
    assert_eq!(n.settle(), Outcome::Committed);
    assert!(n.has(3, "#2/b"));
}

/// The other direction: node 3, the replica of shard 2, is down; its primary drops it
/// at the witness and commits puts on its own copy (no notify owed by node 3).
#[test]
fn a_primary_drops_a_silent_replica_and_commits_alone() {
    let mut n = Net::new();
    n.crash(3);
    n.run_for(ms(2_000.0));
    assert_eq!(view_at(&n, 2, 2), (NodeId(2), vec![NodeId(2)]));
    n.start();
    assert_eq!(n.settle(), Outcome::Committed);
    assert!(n.has(2, "#2/b"));
}

/// A replica that dies holding a put it never notified: when its primary drops it,
/// the primary waives that notify for the next position, which precommits without
/// it, so the transaction commits instead of aborting at the vote timeout.
#[test]
fn a_dropped_replicas_notify_is_waived_and_the_transaction_commits() {
    let mut n = Net::new();
    n.crash_before = Some((NodeId(3), Box::new(|m| matches!(m, Msg::Replicate(_)))));
    n.start();
    assert!(n.down.contains(&NodeId(3)));
    n.run_for(ms(2_000.0));
    assert_eq!(view_at(&n, 2, 2), (NodeId(2), vec![NodeId(2)]));
    assert_eq!(n.settle(), Outcome::Committed);
}

/// Both copies of shard 2 alive but cut off from each other: each suspects the other,
/// the witness lets exactly one view follow view 0, and the loser learns it. After the
/// link heals the loser is taken back as a member and re-synced, and a transaction
/// commits with both copies holding its put.
#[test]
fn a_cut_between_two_copies_leaves_one_primary_and_heals_into_two_copies() {
    let mut n = Net::new();
    n.cut_between(NodeId(2), NodeId(3));
    n.run_for(ms(2_000.0));
    let won = witnessed(&n, 2).expect("a view change");
    assert_eq!(won.view, 1);
    assert_eq!(won.members, vec![won.primary], "one copy alone");
    for node in [2, 3] {
        let (p, _) = view_at(&n, node, 2);
        assert_eq!(p, won.primary, "node {node} follows the witness");
    }
    n.heal();
    n.run_for(ms(2_000.0));
    let (p, members) = view_at(&n, 2, 2);
    assert_eq!(members.len(), 2, "the loser is a member again");
    assert_eq!(view_at(&n, 3, 2), (p, members));
    n.start();
    assert_eq!(n.settle(), Outcome::Committed);
    assert!(n.has(2, "#2/b") && n.has(3, "#2/b"));
}

/// The deposed primary, cut off and not knowing it, cannot commit a write: the new
/// primary refuses a put replicated in the old view out loud, so the waiting position
/// aborts at once.
#[test]
fn a_member_refuses_a_put_replicated_in_an_older_view() {
    let mut n = Net::new();
    n.crash(2);
    n.run_for(ms(2_000.0));
    assert_eq!(view_at(&n, 3, 2).0, NodeId(3));
    let txn = TxnId { client: 5, seq: 1 };
    let put = Msg::Replicate(Replicate {
        txn,
        ts: n.now * TS_SCALE,
        puts: vec![(Key::from("#2/b"), VersionId { txn, seq: 0 }, Value(vec![1]))],
        notify: NodeId(4),
        pos: 3,
        chain: vec![CLIENT, NodeId(0), NodeId(2)],
        views: vec![(2, 0)],
    });
    let now = n.now;
    let e = deliver(&mut n.servers[3], now, NodeId(3), NodeId(2), put);
    let sent = e.sent();
    assert!(
        sent.iter()
            .any(|(to, m)| *to == NodeId(4) && matches!(m, Msg::ReplicaRefused { pos: 3, .. })),
        "{sent:?}"
    );
    assert!(!n.servers[3].backups.contains_key(&txn), "the put is not held");
}

/// A primary serves a read only below the floor its replica promised: cut off from
/// the replica, it holds a transaction above that floor (parked) instead of running
/// it, so nothing it reads can be contradicted by a write the replica lets in after
/// taking the shard over below that floor.
#[test]
fn a_primary_cut_off_from_its_replica_serves_nothing_above_the_promised_floor() {
    let mut n = Net::new();
    // Node 3 (replica of shard 2) promised a floor at the start; cut it off, and the
    // witness too, so that node 2 neither hears it nor learns of a new view.
    let w = witness_of(&n.servers[0].env.layout, meridian_core::ShardId(2)).unwrap();
    n.cut_between(NodeId(2), NodeId(3));
    n.cut_between(NodeId(2), w);
    let floor = n.servers[3].granted.get(&2).copied().expect("a floor promised");
    n.run_for(ms(2_000.0));
    assert_eq!(view_at(&n, 3, 2).0, NodeId(3), "node 3 took the shard over");
    assert!(n.servers[3].write_floor(2) >= floor * TS_SCALE);
    // Node 2 still believes it is primary; an execution reaching it now is above the
    // floor and waits for a promise that cannot come.
    assert_eq!(view_at(&n, 2, 2).0, NodeId(2));
    let txn = TxnId { client: 0, seq: 9 };
    let exec = first_exec(txn, n.now * TS_SCALE, "#2/b");
    n.send(CLIENT, NodeId(2), exec);
    assert!(n.servers[2].parts.is_empty(), "nothing ran");
    assert_eq!(n.servers[2].parked.len(), 1);
}

/// §4.1: "Upon recovering from its failure, Server_{i+1} ... will also synchronize
/// itself with its replica before resuming its original role". The restarted primary
/// of shard 2 is first taken back by the acting primary (node 3) as its replica and
/// re-synced; then, with no view change for the failure timeout, it takes its primary
/// role back at the witness, node 3 staying its replica, and both hold every later put.
#[test]
fn a_restarted_server_re_syncs_as_a_replica_then_takes_its_role_back() {
    let mut n = Net::new();
    n.crash(2);
    n.run_for(ms(2_000.0));
    n.restart(2);
    let mut as_replica = false;
    for _ in 0..16 {
        n.run_for(ms(250.0));
        let (p, members) = view_at(&n, 3, 2);
        if p == NodeId(3) && members.contains(&NodeId(2)) && n.servers[2].stale.is_empty() {
            as_replica = true;
        }
        if p == NodeId(2) {
            break;
        }
    }
    assert!(as_replica, "re-synced as a replica first");
    let (p, mut members) = view_at(&n, 3, 2);
    members.sort();
    assert_eq!((p, members), (NodeId(2), vec![NodeId(2), NodeId(3)]));
    assert_eq!(view_at(&n, 2, 2), view_at(&n, 3, 2));
    assert_eq!(witnessed(&n, 2).map(|v| v.primary), Some(NodeId(2)));
    assert!(n.servers[2].stale.is_empty() && n.servers[2].syncing.is_empty());
    n.start();
    assert_eq!(n.settle(), Outcome::Committed);
    assert!(n.has(2, "#2/b") && n.has(3, "#2/b"));
}

/// A copy that learns a view listing it as a member, having missed the view that
/// dropped it (and the puts its primary committed alone meanwhile), must not count its
/// data as whole: it marks the shard stale, holds no put and takes nothing over until
/// the primary sent its data. Found by a loss-only simulation (seed 2, `loss:p=0.5`):
/// a copy that skipped such a view took the shard over and lost committed writes.
#[test]
fn a_copy_that_skipped_the_view_that_dropped_it_re_syncs_before_it_counts() {
    let mut n = Net::new();
    let w = witness_of(&n.servers[0].env.layout, meridian_core::ShardId(2)).unwrap();
    n.cut_between(NodeId(3), NodeId(2));
    n.cut_between(NodeId(3), w);
    n.run_for(ms(2_000.0));
    assert_eq!(view_at(&n, 2, 2), (NodeId(2), vec![NodeId(2)]));
    assert_eq!(view_at(&n, 3, 2).1.len(), 2, "node 3 missed its drop");
    n.start();
    n.run_for(ms(2_000.0));
    assert_eq!(n.records.len(), 1);
    assert_eq!(n.records[0].outcome, Outcome::Committed);
    assert!(!n.has(3, "#2/b"));
    // Node 3 hears of a later view that lists it again, without the data.
    let later = ShardView {
        shard: 2,
        view: 2,
        primary: NodeId(2),
        members: vec![NodeId(2), NodeId(3)],
    };
    n.send(NodeId(0), NodeId(3), Msg::View(later));
    assert!(n.servers[3].stale.contains(&2));
    n.heal();
    n.run_for(ms(2_000.0));
    assert!(n.servers[3].stale.is_empty());
    assert!(n.has(3, "#2/b"), "re-synced from the primary");
}

/// A client that missed the `View` moving a shard to its replica sends its next
/// transaction to the dead primary; at its vote timeout it aborts, asks the shard's
/// witness, and sends the one after to the acting primary, where it commits.
#[test]
fn a_client_that_missed_a_fail_over_learns_it_from_the_witness() {
    let mut n = Net::new();
    n.crash(2);
    n.cut_between(NodeId(3), CLIENT);
    n.run_for(ms(2_000.0));
    n.heal();
    assert_eq!(view_at(&n, 3, 2).0, NodeId(3));
    let first = |seq| TxnId { client: 0, seq };
    n.submit(0, first(1), testing::ycsb_call(&[("#2/b", b"x")]));
    n.run_for(ms(4_000.0));
    assert_eq!(n.records.len(), 1);
    assert_eq!(
        n.records[0].abort_reason.as_deref(),
        Some(&AbortReason::FirstServerTimeout)
    );
    n.submit(0, first(2), testing::ycsb_call(&[("#2/b", b"y")]));
    n.run_for(ms(2_000.0));
    assert_eq!(n.records.len(), 2);
    assert_eq!(n.records[1].outcome, Outcome::Committed);
    assert!(n.has(3, "#2/b"));
}

/// A primary holding a shard it has not the whole data of (stale: it serves none of
/// it) does not wait for its members' read-floor promises for that shard before
/// running anything else: an execution passing through it goes on. It used to park
/// every execution, so the loss of one shard (both copies forgot) stopped the node.
#[test]
fn a_stale_shard_does_not_hold_up_the_rest_of_its_primary() {
    let mut n = Net::new();
    n.servers[2].stale.insert(2);
    n.servers[2].floor_acked.clear();
    let txn = TxnId { client: 0, seq: 9 };
    let exec = first_exec(txn, n.now * TS_SCALE + 1, "#4/c");
    n.cut_between(NodeId(2), NodeId(3)); // no fresh promise for shard 2
    n.send(CLIENT, NodeId(2), exec);
    assert!(n.servers[2].parked.is_empty());
    assert!(n.servers[2].parts.contains_key(&(txn, 1)), "forwarded on");
}
