//! 2PC roles driven by hand: the message pattern, the log-before-send rules, wound-wait,
//! validation, and recovery from the log.

use super::client::ClientTimer;
use super::*;
use crate::testing::{call, deliver, fire, Effects};
use crate::ClientRole;
use meridian_core::{Command, DcId, Layout, Topology};
use std::sync::Arc;

/// two50 with every shard in B; n0,n1 in A; n2,n3 in B; client node 4 in A.
fn env() -> Env {
    let t = Topology::preset("two50").unwrap();
    let b = t.dc("B").unwrap();
    let mut l = Layout::new(
        t.clone(),
        Placement::Home {
            home: HomeRule::Dc(b),
            k: 1,
        },
    )
    .unwrap();
    l.add_client(t.dc("A").unwrap());
    Env {
        layout: Arc::new(l),
        registry: Arc::new(meridian_workload::registry()),
        timeouts: crate::Timeouts::default(),
    }
}

fn tid(c: u32, s: u32) -> TxnId {
    TxnId { client: c, seq: s }
}

fn key_on(env: &Env, node: NodeId) -> Key {
    (0..)
        .map(|i| Key::new(format!("k{i}")))
        .find(|k| env.layout.primary(env.layout.shard_of(k)) == node)
        .unwrap()
}

fn sent(e: &Effects<Msg>) -> Vec<(NodeId, Msg)> {
    e.sent().into_iter().map(|(n, m)| (n, m.clone())).collect()
}

fn part(node: NodeId, reads: Vec<(Key, Option<VersionId>)>, writes: Vec<(Key, VersionId, Value)>) -> Part {
    Part { node, reads, writes }
}

fn vid(t: TxnId) -> VersionId {
    VersionId { txn: t, seq: 0 }
}

/// Coordinator `from` asks participant `s` (on `me`) at time `at` to prepare `txn` with
/// timestamp `ts` and its share `part`.
fn prepare(s: &mut Server, at: Time, me: NodeId, from: NodeId, txn: TxnId, ts: Time, part: Part) -> Effects<Msg> {
    deliver(s, at, me, from, Msg::Prepare { txn, ts, part })
}

#[test]
fn test_client_reads_from_primary_and_commits_through_a_coordinator_in_its_dc() {
    let env = env();
    let me = NodeId(4);
    let mut c = Client::new(env.clone(), me, ClientId(0));
    let call_ = meridian_txn::Call {
        program: "chain".into(),
        args: vec![
            meridian_txn::Arg::U64(1),
            meridian_txn::Arg::U64(1),
            meridian_txn::Arg::U64(10),
            meridian_txn::Arg::U64(7),
        ],
    };
    let e = call(&mut c, 0, me, |c, cx| c.submit(tid(0, 1), call_, cx));
    let s = sent(&e);
    assert_eq!(s.len(), 1);
    let (to, Msg::Read { key, .. }) = &s[0] else {
        panic!("{s:?}")
    };
    assert_eq!(*to, env.layout.primary(env.layout.shard_of(key)));
    assert_eq!(env.layout.dc_of(*to), DcId(1));
    let reply = Msg::ReadReply {
        txn: tid(0, 1),
        key: key.clone(),
        result: Ok((None, None)),
    };
    let e = deliver(&mut c, 50, me, *to, reply);
    let s = sent(&e);
    let (coord, Msg::Commit { parts, .. }) = &s[0] else {
        panic!("{s:?}")
    };
    assert_eq!(
        env.layout.dc_of(*coord),
        DcId(0),
        "coordinator lives in the client's DC"
    );
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].writes.len(), 1);
    let e = deliver(
        &mut c,
        100,
        me,
        *coord,
        Msg::Outcome {
            txn: tid(0, 1),
            commit: true,
            reason: None,
        },
    );
    assert_eq!(e.records.len(), 1);
    assert_eq!(e.records[0].outcome, Outcome::Committed);
    assert_eq!(e.records[0].reads.len(), 1);
}

#[test]
fn test_participant_forces_prepare_before_vote_and_commit_before_ack() {
    let env = env();
    let me = NodeId(2);
    let coord = NodeId(0);
    let mut s = Server::new(env.clone(), Cc::Locking, me);
    let k = key_on(&env, me);
    let t = tid(0, 1);
    let e = deliver(
        &mut s,
        0,
        me,
        NodeId(4),
        Msg::Read {
            txn: t,
            ts: 0,
            key: k.clone(),
        },
    );
    assert!(matches!(
        &sent(&e)[0].1,
        Msg::ReadReply {
            result: Ok((None, None)),
            ..
        }
    ));
    let p = part(
        me,
        vec![(k.clone(), None)],
        vec![(k.clone(), vid(t), Value::from_u64(5))],
    );
    let e = prepare(&mut s, 10, me, coord, t, 0, p);
    assert_eq!(e.work.log_syncs, 1, "PREPARED is forced before the vote");
    assert_eq!(
        sent(&e),
        vec![(
            coord,
            Msg::Vote {
                txn: t,
                yes: true,
                reason: None
            }
        )]
    );
    let e = deliver(&mut s, 20, me, coord, Msg::Decide { txn: t, commit: true });
    assert_eq!(e.work.log_syncs, 1, "COMMITTED is forced before the ack");
    assert_eq!(sent(&e), vec![(coord, Msg::Ack { txn: t })]);
    assert_eq!(s.snapshot().keys[&k].versions, vec![vid(t)]);
}

#[test]
fn test_participant_wound_wait_older_prepare_wounds_younger_reader() {
    let env = env();
    let me = NodeId(2);
    let mut s = Server::new(env.clone(), Cc::Locking, me);
    let k = key_on(&env, me);
    let (old, young) = (tid(1, 1), tid(2, 1));
    deliver(
        &mut s,
        0,
        me,
        NodeId(4),
        Msg::Read {
            txn: young,
            ts: 100,
            key: k.clone(),
        },
    );
    let p = part(me, vec![], vec![(k.clone(), vid(old), Value::from_u64(1))]);
    let e = prepare(&mut s, 10, me, NodeId(0), old, 50, p);
    assert!(
        sent(&e).contains(&(
            NodeId(0),
            Msg::Vote {
                txn: old,
                yes: true,
                reason: None
            }
        )),
        "{:?}",
        sent(&e)
    );
    // the wounded reader's later prepare is refused
    let p = part(me, vec![(k.clone(), None)], vec![]);
    let e = prepare(&mut s, 20, me, NodeId(0), young, 100, p);
    assert!(matches!(&sent(&e)[0].1, Msg::Vote { yes: false, .. }));
    // a younger reader now waits behind the prepared writer, and gets the new value
    let r = tid(3, 1);
    let e = deliver(
        &mut s,
        30,
        me,
        NodeId(4),
        Msg::Read {
            txn: r,
            ts: 200,
            key: k.clone(),
        },
    );
    assert!(sent(&e).is_empty());
    let e = deliver(&mut s, 40, me, NodeId(0), Msg::Decide { txn: old, commit: true });
    assert!(sent(&e).iter().any(
        |(_, m)| matches!(m, Msg::ReadReply { txn, result: Ok((Some(v), _)), .. } if *txn == r && *v == vid(old))
    ));
}

/// Issue 19: a younger transaction prepared here (voted yes) blocks an older one's
/// prepare. The participant cannot abort it any more, so it asks the younger one's
/// coordinator to (wound-wait across participants); that coordinator, still waiting
/// for another vote, decides abort, and the older one gets its lock. Before, both
/// waited for the 3 s vote timeout whenever the younger one also waited on the older
/// one at another participant.
#[test]
fn test_a_prepared_younger_transaction_is_wounded_through_its_coordinator() {
    let env = env();
    let me = NodeId(2);
    let mut s = Server::new(env.clone(), Cc::Locking, me);
    let k = key_on(&env, me);
    let (old, young) = (tid(1, 1), tid(2, 1));
    let (c_old, c_young) = (NodeId(0), NodeId(1));
    let e = prepare(
        &mut s,
        0,
        me,
        c_young,
        young,
        100,
        part(me, vec![], vec![(k.clone(), vid(young), Value::from_u64(2))]),
    );
    assert!(
        matches!(&sent(&e)[..], [(_, Msg::Vote { yes: true, .. })]),
        "{:?}",
        sent(&e)
    );
    let e = prepare(
        &mut s,
        10,
        me,
        c_old,
        old,
        50,
        part(me, vec![], vec![(k.clone(), vid(old), Value::from_u64(1))]),
    );
    assert_eq!(sent(&e), vec![(c_young, Msg::Wound { txn: young })]);
    // The younger one's coordinator, still waiting for a vote elsewhere, aborts it.
    let mut coord = Server::new(env.clone(), Cc::Locking, c_young);
    let other = NodeId(3);
    deliver(
        &mut coord,
        0,
        c_young,
        NodeId(4),
        Msg::Commit {
            txn: young,
            ts: 100,
            parts: vec![
                part(me, vec![], vec![(k.clone(), vid(young), Value::from_u64(2))]),
                part(
                    other,
                    vec![],
                    vec![(key_on(&env, other), vid(young), Value::from_u64(2))],
                ),
            ],
        },
    );
    deliver(
        &mut coord,
        5,
        c_young,
        me,
        Msg::Vote {
            txn: young,
            yes: true,
            reason: None,
        },
    );
    let e = deliver(&mut coord, 20, c_young, me, Msg::Wound { txn: young });
    assert!(
        sent(&e).contains(&(
            me,
            Msg::Decide {
                txn: young,
                commit: false
            }
        )),
        "{:?}",
        sent(&e)
    );
    // Its abort releases the lock: the older one votes yes.
    let e = deliver(
        &mut s,
        30,
        me,
        c_young,
        Msg::Decide {
            txn: young,
            commit: false,
        },
    );
    assert!(
        sent(&e).contains(&(
            c_old,
            Msg::Vote {
                txn: old,
                yes: true,
                reason: None
            }
        )),
        "{:?}",
        sent(&e)
    );
}

/// Issue 19: under OCC a read of a key that a prepared transaction writes waits for
/// its decision. Answered at once it returned the old version although the writer's
/// client may already have been told "committed" (the coordinator answers the client
/// as it sends the decision), so a read could miss an acknowledged commit.
#[test]
fn test_occ_read_of_a_prepared_write_waits_for_the_decision() {
    let env = env();
    let me = NodeId(2);
    let mut s = Server::new(env.clone(), Cc::Optimistic, me);
    let k = key_on(&env, me);
    let (w, r) = (tid(1, 1), tid(2, 1));
    let e = prepare(
        &mut s,
        0,
        me,
        NodeId(0),
        w,
        10,
        part(me, vec![], vec![(k.clone(), vid(w), Value::from_u64(7))]),
    );
    assert!(
        matches!(&sent(&e)[..], [(_, Msg::Vote { yes: true, .. })]),
        "{:?}",
        sent(&e)
    );
    let e = deliver(
        &mut s,
        5,
        me,
        NodeId(4),
        Msg::Read {
            txn: r,
            ts: 20,
            key: k.clone(),
        },
    );
    assert!(
        sent(&e).is_empty(),
        "answered before the writer's decision: {:?}",
        sent(&e)
    );
    let e = deliver(&mut s, 9, me, NodeId(0), Msg::Decide { txn: w, commit: true });
    assert!(
        sent(&e).iter().any(|(to, m)| *to == NodeId(4)
            && matches!(m, Msg::ReadReply { txn, result: Ok((Some(v), _)), .. } if *txn == r && *v == vid(w))),
        "{:?}",
        sent(&e)
    );
}

#[test]
fn test_2pl_prepare_votes_no_without_its_read_locks() {
    let env = env();
    let me = NodeId(2);
    let mut s = Server::new(env.clone(), Cc::Locking, me);
    let k = key_on(&env, me);
    let p = part(me, vec![(k, None)], vec![]);
    let e = prepare(&mut s, 0, me, NodeId(0), tid(0, 1), 0, p);
    assert!(matches!(&sent(&e)[0].1, Msg::Vote { yes: false, .. }));
}

#[test]
fn test_occ_prepare_rejects_a_stale_read() {
    let env = env();
    let me = NodeId(2);
    let mut s = Server::new(env.clone(), Cc::Optimistic, me);
    let k = key_on(&env, me);
    let (a, b) = (tid(1, 1), tid(2, 1));
    // both read the initial version; a commits a write first
    let pa = part(
        me,
        vec![(k.clone(), None)],
        vec![(k.clone(), vid(a), Value::from_u64(1))],
    );
    let e = prepare(&mut s, 0, me, NodeId(0), a, 0, pa);
    assert!(matches!(&sent(&e)[0].1, Msg::Vote { yes: true, .. }));
    deliver(&mut s, 1, me, NodeId(0), Msg::Decide { txn: a, commit: true });
    let pb = part(
        me,
        vec![(k.clone(), None)],
        vec![(k.clone(), vid(b), Value::from_u64(2))],
    );
    let e = prepare(&mut s, 2, me, NodeId(0), b, 0, pb);
    assert!(matches!(&sent(&e)[0].1, Msg::Vote { yes: false, .. }));
}

#[test]
fn test_coordinator_forces_commit_before_telling_anyone_and_aborts_on_a_no() {
    let env = env();
    let me = NodeId(0);
    let mut s = Server::new(env.clone(), Cc::Locking, me);
    let (p2, p3) = (NodeId(2), NodeId(3));
    let t = tid(0, 1);
    let parts = vec![part(p2, vec![], vec![]), part(p3, vec![], vec![])];
    let e = deliver(&mut s, 0, me, NodeId(4), Msg::Commit { txn: t, ts: 0, parts });
    assert_eq!(
        sent(&e)
            .iter()
            .filter(|(_, m)| matches!(m, Msg::Prepare { .. }))
            .count(),
        2
    );
    let e = deliver(
        &mut s,
        10,
        me,
        p2,
        Msg::Vote {
            txn: t,
            yes: true,
            reason: None,
        },
    );
    assert!(sent(&e).is_empty());
    let e = deliver(
        &mut s,
        20,
        me,
        p3,
        Msg::Vote {
            txn: t,
            yes: true,
            reason: None,
        },
    );
    assert_eq!(e.work.log_syncs, 1);
    let s_ = sent(&e);
    assert_eq!(
        s_[0],
        (
            NodeId(4),
            Msg::Outcome {
                txn: t,
                commit: true,
                reason: None
            }
        )
    );
    assert_eq!(s_.len(), 3);
    // a second transaction with a no vote aborts without a forced write
    let t2 = tid(0, 2);
    deliver(
        &mut s,
        30,
        me,
        NodeId(4),
        Msg::Commit {
            txn: t2,
            ts: 30,
            parts: vec![part(p2, vec![], vec![])],
        },
    );
    let e = deliver(
        &mut s,
        40,
        me,
        p2,
        Msg::Vote {
            txn: t2,
            yes: false,
            reason: Some(AbortReason::Other("x".into())),
        },
    );
    assert_eq!(e.work.log_syncs, 0);
    assert!(matches!(&sent(&e)[0].1, Msg::Outcome { commit: false, .. }));
    // duplicates get the same answer
    let e = deliver(
        &mut s,
        50,
        me,
        NodeId(4),
        Msg::Commit {
            txn: t,
            ts: 0,
            parts: vec![],
        },
    );
    assert!(matches!(&sent(&e)[0].1, Msg::Outcome { commit: true, .. }));
}

#[test]
fn test_coordinator_recovery_resends_logged_commits_and_presumes_abort() {
    let env = env();
    let me = NodeId(0);
    let mut s = Server::new(env.clone(), Cc::Locking, me);
    call(&mut s, 0, me, |s, cx| s.on_start(cx));
    let (t1, t2) = (tid(0, 1), tid(0, 2));
    deliver(
        &mut s,
        0,
        me,
        NodeId(4),
        Msg::Commit {
            txn: t1,
            ts: 0,
            parts: vec![part(NodeId(2), vec![], vec![])],
        },
    );
    deliver(
        &mut s,
        1,
        me,
        NodeId(2),
        Msg::Vote {
            txn: t1,
            yes: true,
            reason: None,
        },
    );
    deliver(
        &mut s,
        2,
        me,
        NodeId(4),
        Msg::Commit {
            txn: t2,
            ts: 2,
            parts: vec![part(NodeId(3), vec![], vec![])],
        },
    );
    s.on_crash();
    let now = 5_000_000_000;
    call(&mut s, now, me, |s, cx| s.on_recover(cx));
    let e = fire(&mut s, now + 1, me, ServerTimer::Sweep);
    assert!(
        sent(&e).contains(&(NodeId(2), Msg::Decide { txn: t1, commit: true })),
        "{:?}",
        sent(&e)
    );
    let e = deliver(&mut s, now + 2, me, NodeId(3), Msg::Query { txn: t2 });
    assert_eq!(sent(&e), vec![(NodeId(3), Msg::Decide { txn: t2, commit: false })]);
    let e = deliver(
        &mut s,
        now + 3,
        me,
        NodeId(4),
        Msg::Commit {
            txn: tid(0, 3),
            ts: 3,
            parts: vec![part(NodeId(3), vec![], vec![])],
        },
    );
    assert!(
        matches!(&sent(&e)[0].1, Msg::Outcome { commit: false, .. }),
        "begun before the restart: presumed aborted"
    );
}

#[test]
fn test_coordinator_checkpoint_folds_ended_commits_and_still_answers_them_after_a_restart() {
    let env = env();
    let me = NodeId(0);
    let p = NodeId(2);
    let mut s = Server::new(env.clone(), Cc::Locking, me);
    call(&mut s, 0, me, |s, cx| s.on_start(cx));
    let n = COMPACT_AT as u32;
    // n commits decided and acknowledged, then one more whose ENDED record is the
    // log's unsynced tail.
    for i in 1..=n + 1 {
        let (t, at) = (tid(0, i), u64::from(i) * 3);
        let commit = Msg::Commit {
            txn: t,
            ts: at,
            parts: vec![part(p, vec![], vec![])],
        };
        deliver(&mut s, at, me, NodeId(4), commit);
        let vote = Msg::Vote {
            txn: t,
            yes: true,
            reason: None,
        };
        deliver(&mut s, at + 1, me, p, vote);
        deliver(&mut s, at + 2, me, p, Msg::Ack { txn: t });
    }
    assert_eq!(s.log.len(), 2 * (n as usize + 1));
    fire(&mut s, 10_000, me, ServerTimer::Sweep);
    assert_eq!(s.ended.len(), n as usize, "every synced DECIDED/ENDED pair is folded");
    assert_eq!(s.log.len(), 2, "the last pair stays: its ENDED was not synced");
    s.on_crash();
    let now = 5_000_000_000;
    call(&mut s, now, me, |s, cx| s.on_recover(cx));
    let e = fire(&mut s, now + 1, me, ServerTimer::Sweep);
    let last = tid(0, n + 1);
    assert!(
        sent(&e).contains(&(
            p,
            Msg::Decide {
                txn: last,
                commit: true
            }
        )),
        "a decision whose ENDED was lost is delivered again: {:?}",
        sent(&e)
    );
    for t in [tid(0, 1), tid(0, n)] {
        let e = deliver(&mut s, now + 2, me, p, Msg::Query { txn: t });
        assert_eq!(
            sent(&e),
            vec![(p, Msg::Decide { txn: t, commit: true })],
            "folded {t:?}"
        );
    }
}

#[test]
fn test_participant_recovery_keeps_prepared_locks_and_asks_the_coordinator() {
    let env = env();
    let me = NodeId(2);
    let coord = NodeId(0);
    let mut s = Server::new(env.clone(), Cc::Locking, me);
    let k = key_on(&env, me);
    let (t, committed) = (tid(0, 1), tid(0, 9));
    let p = part(me, vec![], vec![(k.clone(), vid(committed), Value::from_u64(1))]);
    prepare(&mut s, 0, me, coord, committed, 0, p);
    deliver(
        &mut s,
        1,
        me,
        coord,
        Msg::Decide {
            txn: committed,
            commit: true,
        },
    );
    let p = part(me, vec![], vec![(k.clone(), vid(t), Value::from_u64(2))]);
    prepare(&mut s, 2, me, coord, t, 2, p);
    s.on_crash();
    assert_eq!(
        s.snapshot().keys[&k].versions,
        vec![vid(committed)],
        "the checkpointed store survives"
    );
    let now = 3_000_000_000;
    call(&mut s, now, me, |s, cx| s.on_recover(cx));
    assert_eq!(
        s.snapshot().keys[&k].versions,
        vec![vid(committed)],
        "replay does not install twice"
    );
    let e = fire(&mut s, now + 1, me, ServerTimer::Sweep);
    assert!(sent(&e).contains(&(coord, Msg::Query { txn: t })));
    let e = deliver(
        &mut s,
        now + 2,
        me,
        NodeId(4),
        Msg::Read {
            txn: tid(1, 1),
            ts: now,
            key: k.clone(),
        },
    );
    assert!(sent(&e).is_empty(), "the prepared write lock survived the crash");
    let e = deliver(&mut s, now + 3, me, coord, Msg::Decide { txn: t, commit: true });
    assert!(sent(&e)
        .iter()
        .any(|(_, m)| matches!(m, Msg::ReadReply { result: Ok((Some(v), _)), .. } if *v == vid(t))));
}

#[test]
fn test_participant_checkpoint_drops_finished_records_and_keeps_prepared_ones() {
    let env = env();
    let me = NodeId(2);
    let coord = NodeId(0);
    let mut s = Server::new(env.clone(), Cc::Locking, me);
    call(&mut s, 0, me, |s, cx| s.on_start(cx));
    let mut keys = (0..)
        .map(|i| Key::new(format!("k{i}")))
        .filter(|k| env.layout.primary(env.layout.shard_of(k)) == me);
    let (k, k2) = (keys.next().unwrap(), keys.next().unwrap());
    for i in 0..COMPACT_AT as u32 {
        let t = tid(1, i + 1);
        let p = part(me, vec![], vec![(k.clone(), vid(t), Value::from_u64(i as u64))]);
        prepare(&mut s, i as u64, me, coord, t, i as u64, p);
        deliver(&mut s, i as u64, me, coord, Msg::Decide { txn: t, commit: true });
    }
    let open = tid(2, 1);
    let p = part(me, vec![], vec![(k2.clone(), vid(open), Value::from_u64(1))]);
    prepare(&mut s, 5_000, me, coord, open, 5_000, p);
    assert!(s.log.len() > COMPACT_AT);
    fire(&mut s, 10_000, me, ServerTimer::Sweep);
    assert_eq!(s.log.len(), 1, "only the open transaction's PREPARED remains");
    s.on_crash();
    call(&mut s, 20_000, me, |s, cx| s.on_recover(cx));
    assert_eq!(
        s.snapshot().keys[&k].versions.len(),
        COMPACT_AT,
        "checkpointed commits survive"
    );
    let e = deliver(
        &mut s,
        30_000,
        me,
        coord,
        Msg::Decide {
            txn: open,
            commit: true,
        },
    );
    assert_eq!(sent(&e), vec![(coord, Msg::Ack { txn: open })]);
    assert_eq!(s.snapshot().keys[&k2].versions, vec![vid(open)]);
}

#[test]
fn test_interactive_client_pauses_resumes_and_aborts_when_its_caller_is_idle() {
    use meridian_txn::script::{encode, Op, NAME};
    let env = env();
    let me = NodeId(4);
    let mut c = Client::new(env.clone(), me, ClientId(0));
    let (a, b) = (key_on(&env, NodeId(2)), key_on(&env, NodeId(3)));
    let t = tid(0, 1);
    let start = meridian_txn::Call {
        program: NAME.into(),
        args: encode(&[Op::Read(a.clone())]),
    };
    // The first read goes to a's primary, like any program's.
    let e = call(&mut c, 0, me, |c, cx| c.submit(t, start, cx));
    assert!(matches!(&sent(&e)[..], [(NodeId(2), Msg::Read { key, .. })] if *key == a));
    // Its value is handed to the caller; nothing is sent; the idle timer is armed.
    let reply = Msg::ReadReply {
        txn: t,
        key: a.clone(),
        result: Ok((None, Some(Value::from_u64(4)))),
    };
    let e = deliver(&mut c, 50, me, NodeId(2), reply);
    assert!(sent(&e).is_empty());
    assert!(e.commands.iter().any(|c| matches!(c,
        Command::AwaitInput { txn, output } if *txn == t && *output == Some(Value::from_u64(4)))));
    assert!(e
        .commands
        .iter()
        .any(|c| matches!(c, Command::SetTimer { id, .. } if *id == TimerId::from(ClientTimer::Idle))));
    // An extension for another transaction is ignored.
    let e = call(&mut c, 60, me, |c, cx| c.extend(tid(0, 9), encode(&[Op::Commit]), cx));
    assert!(e.commands.is_empty());
    // The caller writes b and reads it back (own write: no message), then a again
    // (repeatable: no message).
    let more = encode(&[
        Op::Write(b.clone(), Value::from_u64(5)),
        Op::Read(b.clone()),
        Op::Read(a.clone()),
    ]);
    let e = call(&mut c, 70, me, |c, cx| c.extend(t, more, cx));
    assert!(sent(&e).is_empty());
    assert!(e.commands.iter().any(|c| matches!(c,
        Command::AwaitInput { output, .. } if *output == Some(Value::from_u64(4)))));
    // Commit: one Commit to the coordinator in the client's DC, carrying a's read and b's write.
    let e = call(&mut c, 80, me, |c, cx| c.extend(t, encode(&[Op::Commit]), cx));
    let s = sent(&e);
    let [(_, Msg::Commit { parts, .. })] = &s[..] else {
        panic!("{s:?}")
    };
    assert_eq!(parts.len(), 2);
    assert!(e
        .commands
        .iter()
        .any(|c| matches!(c, Command::CancelTimer { id } if *id == TimerId::from(ClientTimer::Idle))));
    assert!(c.in_flight().is_some());

    // A second transaction whose caller goes silent aborts at the idle timer and
    // releases its read lock.
    let mut c = Client::new(env.clone(), me, ClientId(0));
    let t = tid(0, 2);
    let start = meridian_txn::Call {
        program: NAME.into(),
        args: encode(&[Op::Read(a.clone())]),
    };
    call(&mut c, 0, me, |c, cx| c.submit(t, start, cx));
    let reply = Msg::ReadReply {
        txn: t,
        key: a.clone(),
        result: Ok((None, None)),
    };
    deliver(&mut c, 50, me, NodeId(2), reply);
    let e = fire(&mut c, 50 + env.timeouts.idle, me, ClientTimer::Idle);
    assert!(matches!(&sent(&e)[..], [(NodeId(2), Msg::Release { txn })] if *txn == t));
    assert_eq!(e.records.len(), 1);
    assert_eq!(e.records[0].outcome, Outcome::Aborted);
    assert_eq!(
        e.records[0].abort_reason.as_deref(),
        Some(&meridian_core::AbortReason::IdleInteractive)
    );
}
