//! Hand-driven tests on `testing::Net`: exact messages per transaction against the
//! paper's formulas (3) and (7), snapshot reads, tentative-version waits, §III-C2's
//! timestamps, and the failure cases (lost votes, a crashed decider, a crashed data
//! node, a silent 2PC client).

use super::server::ServerTimer;
use super::*;
use crate::testing::{call, deliver, ycsb_call, ycsb_env, Net};
use crate::{Env, Protocol, Replica};
use meridian_core::{
    ms, secs, AbortReason, ClientId, DcId, Key, Layout, NodeId, Outcome, Placement, Topology, TxnId, Value, VersionId,
};

use super::client::ClientTimer;

/// One DC, 8 shards on nodes 0..8, `nodes - 8` spare nodes for inner validators, and a
/// client node right after the servers.
pub(super) fn env(nodes: u32) -> Env {
    let t = Topology::uniform("t", &["L"], 0.0, 0.1, nodes, 8);
    let mut layout = Layout::new(
        t,
        Placement::Home {
            home: meridian_core::HomeRule::Spread,
            k: 1,
        },
    )
    .unwrap();
    layout.add_client(DcId(0));
    ycsb_env(Arc::new(layout))
}

pub(super) fn proto(spec: &str) -> HierVal {
    let s = meridian_core::spec::parse_spec(spec).unwrap();
    crate::named::hierval_for(&s).unwrap()
}

/// A net of `nodes` servers with one client (node `nodes`).
pub(super) fn net(p: &HierVal, nodes: u32) -> Net<HierVal> {
    let env = env(nodes);
    let servers = (0..nodes).map(|i| p.server(&env, NodeId(i))).collect();
    let client = p.client(&env, NodeId(nodes), ClientId(0));
    Net::new(servers).with_clients(NodeId(nodes), vec![client], |_| 0)
}

/// A net of `nodes` servers and no client actor: the test plays the client (node
/// `nodes`), whose messages land in `outside`.
pub(super) fn bare(p: &HierVal, nodes: u32) -> Net<HierVal> {
    let env = env(nodes);
    Net::new((0..nodes).map(|i| p.server(&env, NodeId(i))).collect())
}

pub(super) fn txn(seq: u32) -> TxnId {
    TxnId { client: 0, seq }
}

pub(super) fn vid(t: TxnId) -> VersionId {
    VersionId { txn: t, seq: 0 }
}

/// A commit request for `t` at snapshot 0 that writes `value` to `key` (as `t`'s
/// version) and reads nothing, `nodes` being every data node involved.
pub(super) fn write_req(t: TxnId, key: &str, value: &[u8], nodes: &[u32]) -> Commit {
    Commit {
        txn: t,
        snap: 0,
        reads: vec![],
        writes: vec![(Key::from(key), vid(t), Value(value.to_vec()))],
        nodes: nodes.iter().map(|&n| NodeId(n)).collect(),
    }
}

/// [`write_req`] that also reads `key` first.
fn rmw_req(t: TxnId, key: &str, nodes: &[u32]) -> Msg {
    Msg::Commit(Commit {
        reads: vec![Key::from(key)],
        ..write_req(t, key, b"x", nodes)
    })
}

/// Advances 2 s in sweeps every 250 ms, the client asking about its transaction every
/// second.
fn run_with_status_queries(n: &mut Net<HierVal>) {
    n.run_for_with_clients(
        secs(2.0),
        ms(250.0),
        ServerTimer::Sweep,
        Some((ClientTimer::Status, secs(1.0))),
    );
}

/// The one transaction on `#1/a` and `#2/b` aborted and left nothing behind: no lock,
/// no prepared state, no version of `#1/a`.
fn assert_aborted_without_a_trace(n: &Net<HierVal>, spec: &str) {
    assert_eq!(n.records.len(), 1, "{spec}");
    assert_eq!(n.records[0].outcome, Outcome::Aborted, "{spec}");
    for s in &n.servers {
        assert_eq!(s.locked_keys(), Some(0), "{spec}");
        assert!(s.prepared.is_empty(), "{spec}");
    }
    assert!(n.servers[1].store.versions(&Key::from("#1/a")).is_empty(), "{spec}");
}

/// A read-modify-write of each key (read, then write).
fn rmw(keys: &[&str]) -> meridian_txn::Call {
    let mut ops: Vec<(&str, &[u8])> = vec![];
    for k in keys {
        ops.push((k, b""));
        ops.push((k, b"v"));
    }
    ycsb_call(&ops)
}

/// Runs one read-modify-write transaction over `keys` and returns the messages its
/// commit took (all messages minus the two per read).
fn commit_messages(p: &HierVal, nodes: u32, keys: &[&str]) -> u64 {
    let mut n = net(p, nodes);
    let before = n.delivered;
    n.submit(0, txn(1), rmw(keys));
    assert_eq!(n.records.len(), 1);
    assert_eq!(n.records[0].outcome, Outcome::Committed, "{:?}", n.records[0]);
    n.delivered - before - 2 * keys.len() as u64
}

/// Formula (3): 2PC's messages for N data nodes.
fn formula_2pc(n: u64) -> u64 {
    if n == 1 {
        2
    } else {
        4 * n
    }
}

/// Formula (7): the hierarchy's messages for N data nodes decided at level H, batch B.
fn formula_hier(n: f64, h: f64, b: f64) -> f64 {
    if n == 1.0 {
        2.0
    } else {
        n + (h * n + n) / b + 1.0
    }
}

#[test]
fn test_local_transaction_takes_two_messages_in_every_variant() {
    for spec in ["hier-lock", "hier-ts", "hier-ts:fanout=2", "2pc-deferred"] {
        let m = commit_messages(&proto(spec), 9, &["#3/a"]);
        assert_eq!(m, 2, "{spec}");
        assert_eq!(m as f64, formula_hier(1.0, 1.0, 1.0));
        assert_eq!(m, formula_2pc(1));
    }
}

#[test]
fn test_two_node_transaction_matches_formulas_3_and_7() {
    // Root on its own node (9 nodes): N = 2, H = 1: 2 + (2 + 2) + 1 = 7; 2PC: 4N = 8.
    for spec in ["hier-lock", "hier-ts"] {
        let m = commit_messages(&proto(spec), 9, &["#1/a", "#2/b"]);
        assert_eq!(m as f64, formula_hier(2.0, 1.0, 1.0), "{spec}");
        assert_eq!(m, 7);
    }
    assert_eq!(
        commit_messages(&proto("2pc-deferred"), 9, &["#1/a", "#2/b"]),
        formula_2pc(2)
    );
    assert_eq!(
        commit_messages(&proto("2pc-deferred"), 9, &["#1/a", "#2/b", "#5/c", "#6/d"]),
        16
    );
    // With 8 nodes the root is hosted by node 0: its leaf's vote and decision are local
    // hand-offs, so a transaction on node 0 saves two messages.
    assert_eq!(commit_messages(&proto("hier-lock"), 8, &["#1/a", "#2/b"]), 7);
    assert_eq!(commit_messages(&proto("hier-lock"), 8, &["#0/a", "#2/b"]), 5);
}

#[test]
fn test_three_level_tree_counts_level_one_and_root_level_transactions() {
    // hier-ts:fanout=4 on 8 leaves: two level-1 validators (leaves 0-3, 4-7) and a root
    // (§III-E's 3-level hierarchy); 11 nodes give each validator a node of its own.
    let p = proto("hier-ts:fanout=4");
    let t = Tree::build(&env(11).layout, Some(4));
    assert_eq!(t.levels(), 3);
    assert_eq!(t.inner.iter().map(|i| i.host.0).collect::<Vec<_>>(), vec![8, 9, 10]);
    assert_eq!(t.decider(&[NodeId(0), NodeId(3)]), Some(Vid(0)));
    assert_eq!(t.decider(&[NodeId(1), NodeId(5)]), Some(Vid(2)));
    // Level 1, N = 4 (§III-E's transactions): 4 + (4 + 4) + 1 = 13, as formula (7).
    let m = commit_messages(&p, 11, &["#0/a", "#1/b", "#2/c", "#3/d"]);
    assert_eq!(m as f64, formula_hier(4.0, 1.0, 1.0));
    assert_eq!(m, 13);
    // Root level, N = 2 (one leaf in each half): 2 + (2 + 2 + 2) + 1 = 9 = formula (7)
    // with H = 2.
    let m = commit_messages(&p, 11, &["#1/a", "#5/b"]);
    assert_eq!(m as f64, formula_hier(2.0, 2.0, 1.0));
    // Root level, N = 4 (two leaves per half): each level-1 validator sends one message
    // up, not two, so 4 + (4 + 2 + 4) + 1 = 15, under the formula's worst case of 17.
    let m = commit_messages(&p, 11, &["#0/a", "#1/b", "#4/c", "#5/d"]);
    assert_eq!(m, 15);
    assert_eq!(formula_hier(4.0, 2.0, 1.0), 17.0);
}

#[test]
fn test_batching_packs_items_per_destination_and_the_flush_timer_sends_partial_batches() {
    // batch=2: the two leaves' votes go to the root as separate batches (one item each,
    // from different nodes) only when flushed; nothing leaves before the flush timer.
    let p = proto("hier-lock:batch=2");
    let mut n = net(&p, 9);
    n.submit(0, txn(1), rmw(&["#1/a", "#2/b"]));
    assert!(n.records.is_empty(), "a partial batch waits for the flush timer");
    n.run_for(ms(10.0), ms(10.0), ServerTimer::Flush);
    // Votes flushed: the root decided and told the client (one direct message); its
    // decisions to nodes 1 and 2 are partial batches, waiting for the next flush.
    assert_eq!(n.records.len(), 1);
    assert_eq!(n.records[0].outcome, Outcome::Committed);
    assert!(n.servers[1].prepared.contains_key(&txn(1)));
    n.run_for(ms(10.0), ms(10.0), ServerTimer::Flush);
    assert!(n.servers[1].prepared.is_empty() && n.servers[2].prepared.is_empty());
    // Two transactions from two clients: each leaf's two votes share one message.
    let env = env(9);
    let servers = (0..9).map(|i| p.server(&env, NodeId(i))).collect();
    let clients = vec![
        p.client(&env, NodeId(9), ClientId(0)),
        p.client(&env, NodeId(9), ClientId(1)),
    ];
    let mut n: Net<HierVal> = Net::new(servers).with_clients(NodeId(9), clients, |m| match m {
        Msg::ReadReply { txn, .. } | Msg::Outcome { txn, .. } => txn.client as usize,
        _ => 0,
    });
    n.submit(0, TxnId { client: 0, seq: 1 }, rmw(&["#1/a", "#2/b"]));
    let before = n.delivered;
    n.submit(1, TxnId { client: 1, seq: 1 }, rmw(&["#1/c", "#2/d"]));
    // Second transaction: 4 read messages, 2 commit requests, then both leaves' batches
    // fill (2 votes each) and go to the root: 2 messages for 4 votes; the root's
    // decisions (2 per data node) fill a batch per node: 2 messages for 4 decisions;
    // plus the 2 outcomes.
    assert_eq!(n.delivered - before, 4 + 2 + 2 + 2 + 2);
    assert_eq!(n.records.len(), 2);
    assert!(n.records.iter().all(|r| r.outcome == Outcome::Committed));
}

/// Delivers the client's sends to the net; returns what came back to the client.
fn shuttle(n: &mut Net<HierVal>, cn: NodeId, sent: Vec<(NodeId, Msg)>) -> Vec<(NodeId, Msg)> {
    for (to, m) in sent {
        n.send(cn, to, m);
    }
    std::mem::take(&mut n.outside)
        .into_iter()
        .filter(|(_, to, _)| *to == cn)
        .map(|(from, _, m)| (from, m))
        .collect()
}

/// Runs a hand-held client until it records; between its first and second read,
/// `meanwhile` runs on the net.
fn run_client(
    p: &HierVal,
    n: &mut Net<HierVal>,
    call_: meridian_txn::Call,
    mut meanwhile: impl FnMut(&mut Net<HierVal>),
) -> (meridian_core::TxnRecord, Vec<Msg>) {
    let cn = NodeId(n.servers.len() as u32);
    let env = env(n.servers.len() as u32);
    let mut c = p.client(&env, cn, ClientId(0));
    let e = call(&mut c, 0, cn, |c, cx| crate::ClientRole::submit(c, txn(1), call_, cx));
    let mut all_sent: Vec<Msg> = vec![];
    let mut pending: Vec<(NodeId, Msg)> = e.sent().into_iter().map(|(t, m)| (t, m.clone())).collect();
    let mut reads = 0;
    loop {
        all_sent.extend(pending.iter().map(|(_, m)| m.clone()));
        let back = shuttle(n, cn, std::mem::take(&mut pending));
        for (from, m) in back {
            if matches!(m, Msg::ReadReply { .. }) {
                reads += 1;
                if reads == 1 {
                    meanwhile(n);
                }
            }
            let e = deliver(&mut c, 0, cn, from, m);
            if let Some(r) = e.records.first() {
                return (r.clone(), all_sent);
            }
            pending.extend(e.sent().into_iter().map(|(t, m)| (t, m.clone())));
        }
        assert!(!pending.is_empty(), "the client is stuck");
    }
}

/// Another transaction commits a blind write of `key` on its node (a local commit).
fn commit_blind(n: &mut Net<HierVal>, t: TxnId, key: &str, node: u32) {
    let from = NodeId(100);
    n.send(from, NodeId(node), Msg::Commit(write_req(t, key, b"w", &[node])));
    let out = std::mem::take(&mut n.outside);
    assert!(
        out.iter()
            .any(|(_, _, m)| matches!(m, Msg::Outcome { commit: true, .. })),
        "{out:?}"
    );
}

#[test]
fn test_a_read_newer_than_the_snapshot_aborts_a_read_write_transaction_before_commit() {
    for spec in ["hier-lock", "hier-ts", "2pc-deferred"] {
        let p = proto(spec);
        let mut n = bare(&p, 9);
        // T1 reads #1/a (snapshot 0), then #2/b, then writes #1/a. Between its reads,
        // T2 commits a write of #2/b at a timestamp above T1's snapshot.
        let program = ycsb_call(&[("#1/a", b""), ("#2/b", b""), ("#1/a", b"v")]);
        let t2 = TxnId { client: 9, seq: 1 };
        let (rec, sent) = run_client(&p, &mut n, program, |n| commit_blind(n, t2, "#2/b", 2));
        assert_eq!(rec.outcome, Outcome::Aborted, "{spec}");
        assert_eq!(rec.abort_reason.as_deref(), Some(&AbortReason::NewerVersionInstalled));
        // The read of #2/b was answered in the past (the initial version), and no
        // commit request was sent.
        assert_eq!(rec.reads[1].version, None);
        assert!(!sent.iter().any(|m| matches!(m, Msg::Commit(Commit { .. }))), "{spec}");
    }
}

#[test]
fn test_a_read_only_transaction_reads_in_the_past_and_commits() {
    let p = proto("hier-lock");
    let mut n = bare(&p, 9);
    let t2 = TxnId { client: 9, seq: 1 };
    let program = ycsb_call(&[("#1/a", b""), ("#2/b", b"")]);
    let (rec, sent) = run_client(&p, &mut n, program, |n| commit_blind(n, t2, "#2/b", 2));
    assert_eq!(rec.outcome, Outcome::Committed);
    assert_eq!(rec.reads[1].version, None, "serialized before T2, at its snapshot");
    assert!(!sent.iter().any(|m| matches!(m, Msg::Commit(Commit { .. }))));
}

#[test]
fn test_a_read_waits_for_a_tentative_version_until_it_is_final() {
    let p = proto("hier-lock");
    let mut n = bare(&p, 9);
    let c = NodeId(100);
    let t1 = txn(1);
    let commit = |key: &str| Msg::Commit(write_req(t1, key, b"t1", &[1, 2]));
    // T1's commit request reaches node 1 only: a tentative version at snapshot + 1.
    n.send(c, NodeId(1), commit("#1/a"));
    assert!(n.servers[1].store.versions(&Key::from("#1/a"))[0].tentative);
    let read = |t: u32, snap: u64| Msg::Read {
        txn: TxnId { client: 5, seq: t },
        key: Key::from("#1/a"),
        snap: Some(snap),
        floor: 0,
    };
    // A reader whose snapshot is below the tentative version reads past it at once.
    n.send(c, NodeId(1), read(1, 0));
    let out = std::mem::take(&mut n.outside);
    assert!(
        matches!(&out[..], [(_, _, Msg::ReadReply { version: None, .. })]),
        "{out:?}"
    );
    // A reader at snapshot 5 blocks.
    n.send(c, NodeId(1), read(2, 5));
    assert!(n.outside.is_empty(), "blocked on the tentative version");
    // T1 reaches node 2; the root decides commit at timestamp 1 and the read returns
    // T1's version.
    n.send(c, NodeId(2), commit("#2/b"));
    let out = std::mem::take(&mut n.outside);
    assert!(out.iter().any(|(_, _, m)| matches!(
        m,
        Msg::Outcome {
            commit: true,
            ts: 1,
            ..
        }
    )));
    let got: Vec<_> = out
        .iter()
        .filter_map(|(_, _, m)| match m {
            Msg::ReadReply { version, .. } => Some(*version),
            _ => None,
        })
        .collect();
    assert_eq!(got, vec![Some(vid(t1))]);
}

#[test]
fn test_hier_ts_leaves_use_round_robin_timestamps() {
    // §III-C2's example: 8 leaves, a transaction with snapshot 3 validated at the second
    // leaf, whose clock is 0, gets timestamp 10.
    let p = proto("hier-ts");
    let mut n = bare(&p, 9);
    assert_eq!(n.servers[1].gen_ts(3), 10);
    assert_eq!(n.servers[0].gen_ts(3), 9);
    assert_eq!(n.servers[7].gen_ts(3), 8);
    n.send(
        NodeId(100),
        NodeId(1),
        Msg::Commit(Commit {
            snap: 3,
            ..write_req(txn(1), "#1/a", b"x", &[1])
        }),
    );
    assert!(matches!(
        n.outside[..],
        [(
            _,
            _,
            Msg::Outcome {
                commit: true,
                ts: 10,
                ..
            }
        )]
    ));
    // The clock moved past it: the next one is 18.
    assert_eq!(n.servers[1].gen_ts(3), 18);
}

#[test]
fn test_conflicting_pending_transactions_abort_at_the_leaf() {
    for spec in ["hier-lock", "hier-ts"] {
        let p = proto(spec);
        let mut n = bare(&p, 9);
        let c = NodeId(100);
        // T1 is pending at leaf 1 (node 2's part never arrives).
        n.send(c, NodeId(1), rmw_req(txn(1), "#1/a", &[1, 2]));
        // T2, a local transaction on the same key, is refused at once.
        n.send(c, NodeId(1), rmw_req(txn(2), "#1/a", &[1]));
        let out = std::mem::take(&mut n.outside);
        assert!(
            matches!(&out[..], [(_, _, Msg::Outcome { commit: false, .. })]),
            "{spec}: {out:?}"
        );
    }
}

#[test]
fn test_a_lost_vote_ends_in_abort_through_the_query() {
    for spec in ["hier-lock", "hier-ts:fanout=2"] {
        let p = proto(spec);
        let mut n = net(&p, 9);
        n.drop_once = Some(Box::new(|from, _, m| from == NodeId(1) && matches!(m, Msg::Batch(_))));
        n.submit(0, txn(1), rmw(&["#1/a", "#2/b"]));
        assert!(n.records.is_empty());
        n.run_for(secs(2.0), ms(250.0), ServerTimer::Sweep);
        assert_aborted_without_a_trace(&n, spec);
    }
}

#[test]
fn test_a_decider_crash_after_deciding_commit_loses_nothing() {
    let p = proto("hier-lock");
    let mut n = net(&p, 9);
    n.drop_from_down = true;
    // The root (node 8) crashes right after the second vote, i.e. after it decided; the
    // outcome and decisions it sent are lost.
    n.crash_after = Some((
        NodeId(8),
        Box::new(
            move |m| matches!(m, Msg::Batch(items) if items.iter().any(|i| matches!(i, Item::Up(Up { from: Child::Leaf(NodeId(2)), .. })))),
        ),
    ));
    n.submit(0, txn(1), rmw(&["#1/a", "#2/b"]));
    assert!(n.down.contains(&NodeId(8)));
    assert!(n.records.is_empty());
    run_with_status_queries(&mut n);
    assert!(n.records.is_empty(), "the decider is down: nothing decided elsewhere");
    n.restart(NodeId(8));
    run_with_status_queries(&mut n);
    assert_eq!(n.records.len(), 1);
    assert_eq!(n.records[0].outcome, Outcome::Committed);
    for (node, key) in [(1, "#1/a"), (2, "#2/b")] {
        let v = n.servers[node].store.versions(&Key::from(key));
        assert!(v.len() == 1 && !v[0].tentative, "{node}: {v:?}");
        assert_eq!(n.servers[node].locked_keys(), Some(0));
    }
}

#[test]
fn test_a_data_node_crash_after_preparing_recovers_its_tentative_writes() {
    let p = proto("hier-lock");
    let mut n = net(&p, 9);
    n.drop_from_down = true;
    n.crash_after = Some((NodeId(1), Box::new(|m| matches!(m, Msg::Commit(Commit { .. })))));
    n.submit(0, txn(1), rmw(&["#1/a", "#2/b"]));
    assert!(n.down.contains(&NodeId(1)));
    n.restart(NodeId(1));
    // Restarted from its log: T1 is prepared again, locks and tentative version back.
    // Its question on the restart decides nothing (stop 49): the decider, undecided,
    // leaves it to the query timeout rather than abort a transaction whose other
    // votes may be on their way.
    assert!(n.servers[1].prepared.contains_key(&txn(1)));
    assert_eq!(n.servers[1].locked_keys(), Some(1));
    assert!(n.records.is_empty(), "undecided");
    run_with_status_queries(&mut n);
    // Its vote was lost with the crash: the root aborts on the first query.
    assert_aborted_without_a_trace(&n, "hier-lock");
}

/// Stop 49: a data node down when its transaction's decision came back, restarted from
/// its log with the transaction prepared. It waited a query timeout (1 s) after its
/// restart to ask the decider, holding the keys' locks and tentative versions, and
/// every reader of those keys waited with it (a one-second crash of any non-root node
/// cost a second more after the restart). It now asks at once; an answered decision
/// is applied before anything else runs.
#[test]
fn test_a_data_node_restarted_after_its_decision_asks_for_it_at_once() {
    for spec in ["hier-lock", "hier-ts:fanout=2"] {
        let p = proto(spec);
        let mut n = net(&p, 9);
        n.crash_before = Some((
            NodeId(1),
            Box::new(|m| matches!(m, Msg::Batch(items) if items.iter().any(|i| matches!(i, Item::Decide { .. })))),
        ));
        n.submit(0, txn(1), rmw(&["#1/a", "#2/b"]));
        assert!(n.down.contains(&NodeId(1)), "{spec}: down when the decision came");
        assert_eq!(n.records.len(), 1, "{spec}");
        assert_eq!(n.records[0].outcome, Outcome::Committed, "{spec}");
        n.restart(NodeId(1));
        assert!(!n.servers[1].prepared.contains_key(&txn(1)), "{spec}: still in doubt");
        assert_eq!(n.servers[1].locked_keys(), Some(0), "{spec}");
        let v = n.servers[1].store.versions(&Key::from("#1/a"));
        assert!(v.len() == 1 && !v[0].tentative, "{spec}: {v:?}");
    }
}

/// `2pc-deferred` on 8 bare servers: transaction 1 writes `#1/a` and `#2/b`, both
/// participants prepared; the test plays the client (returned), whose votes are in
/// `outside`.
fn two_prepared_2pc() -> (Net<HierVal>, NodeId) {
    let p = proto("2pc-deferred");
    let mut n = bare(&p, 8);
    let c = NodeId(8);
    let w = |key: &str| Msg::Commit(write_req(txn(1), key, b"x", &[1, 2]));
    n.send(c, NodeId(1), w("#1/a"));
    n.send(c, NodeId(2), w("#2/b"));
    (n, c)
}

#[test]
fn test_2pc_deferred_participants_terminate_when_the_client_goes_silent() {
    let (mut n, c) = two_prepared_2pc();
    let votes = std::mem::take(&mut n.outside);
    assert_eq!(
        votes
            .iter()
            .filter(|(_, _, m)| matches!(m, Msg::Vote { ok: true, .. }))
            .count(),
        2
    );
    // The client never decides. The participants ask it (no answer), then each other:
    // both frozen and undecided, so both abort.
    n.run_for(secs(2.0), ms(250.0), ServerTimer::Sweep);
    for i in [1, 2] {
        assert!(n.servers[i].prepared.is_empty());
        assert_eq!(n.servers[i].locked_keys(), Some(0));
        assert_eq!(n.servers[i].done.get(&txn(1)), Some(&(false, 0)));
    }
    // Each tells the client, which may still be collecting votes.
    let told: Vec<NodeId> = n
        .outside
        .iter()
        .filter(|(_, to, m)| *to == c && matches!(m, Msg::Ack { commit: false, .. }))
        .map(|(from, _, _)| *from)
        .collect();
    assert_eq!(told, vec![NodeId(1), NodeId(2)], "{:?}", n.outside);
    // The client's late commit is refused: the result says aborted.
    n.outside.clear();
    n.send(
        c,
        NodeId(1),
        Msg::Decide {
            txn: txn(1),
            commit: true,
            ts: 1,
        },
    );
    assert!(matches!(n.outside[..], [(_, _, Msg::Ack { commit: false, .. })]));
}

/// Stop 49 (campaign seed 863, `2pc-deferred`, split decision): a participant that
/// answered a peer "undecided" is frozen: it refuses its client's decision, and the
/// peer may abort on that answer. The freeze was kept in memory only; restarted, the
/// participant took the client's commit its peer had already aborted. It is now forced
/// to the log before the answer leaves.
#[test]
fn test_2pc_deferred_a_freeze_survives_a_restart() {
    let (mut n, c) = two_prepared_2pc();
    // Node 1 asks its peer, which is undecided: node 2 freezes, node 1 aborts. The
    // abort node 1 then sends node 2 is lost.
    n.drop_once = Some(Box::new(|_, to, m| {
        to == NodeId(2) && matches!(m, Msg::PeerState { state: Some(_), .. })
    }));
    n.send(NodeId(1), NodeId(2), Msg::Peer { txn: txn(1) });
    assert!(n.drop_once.is_none(), "node 1's abort to node 2 was lost");
    assert_eq!(n.servers[1].done.get(&txn(1)), Some(&(false, 0)));
    n.crash(NodeId(2));
    n.restart(NodeId(2));
    n.outside.clear();
    let commit = Msg::Decide {
        txn: txn(1),
        commit: true,
        ts: 1,
    };
    n.send(c, NodeId(2), commit);
    assert!(
        n.servers[2].prepared.get(&txn(1)).is_some_and(|p| p.frozen),
        "still frozen after the restart: {:?}",
        n.servers[2].done.get(&txn(1))
    );
    // Its own termination then learns the abort from node 1.
    n.run_for(secs(2.0), ms(250.0), ServerTimer::Sweep);
    assert_eq!(n.servers[2].done.get(&txn(1)), Some(&(false, 0)));
    assert_eq!(n.servers[2].locked_keys(), Some(0));
}

/// A `2pc-deferred` participant whose termination aborts (every peer frozen) forces
/// the abort to its log and tells the frozen peers, which follow it at once instead of
/// holding their locks until their own termination, a query timeout later (a crash
/// scan, stop 50: after a one-second crash a frozen participant held a hot key for a
/// second, and every client queued behind it).
#[test]
fn test_2pc_deferred_a_termination_abort_is_forced_and_sent_to_the_frozen_peers() {
    let (mut n, _c) = two_prepared_2pc();
    n.send(NodeId(1), NodeId(2), Msg::Peer { txn: txn(1) });
    for i in [1, 2] {
        assert_eq!(n.servers[i].done.get(&txn(1)), Some(&(false, 0)), "node {i}");
        assert_eq!(n.servers[i].locked_keys(), Some(0), "node {i}");
    }
    // Node 1's abort survives its crash: the transaction is not prepared again there.
    n.crash(NodeId(1));
    n.restart(NodeId(1));
    assert!(n.servers[1].prepared.is_empty());
    assert_eq!(n.servers[1].done.get(&txn(1)), Some(&(false, 0)));
}

/// `2pc-deferred` on 8 servers: a client's transaction 1 writes `#1/a` and `#2/b`; its
/// commit request to node 2 is lost, node 1 is prepared.
fn a_lost_commit_request() -> Net<HierVal> {
    let p = proto("2pc-deferred");
    let mut n = net(&p, 8);
    n.drop_once = Some(Box::new(|_, to, m| to == NodeId(2) && matches!(m, Msg::Commit(_))));
    n.submit(0, txn(1), rmw(&["#1/a", "#2/b"]));
    assert!(n.drop_once.is_none(), "the request to node 2 was lost");
    n
}

/// Stop 49: a `2pc-deferred` client whose commit request to one participant was lost
/// (with a crashed node) waited for its 3 s vote timeout, the other participant's locks
/// held meanwhile. It now sends the request again to a participant that has not voted,
/// every fail-over time (here its timer is fired by hand, before the participants'
/// own termination would start).
#[test]
fn test_2pc_deferred_client_sends_a_lost_commit_request_again() {
    let mut n = a_lost_commit_request();
    assert!(n.records.is_empty());
    n.run_for_with_clients(
        ms(500.0),
        ms(500.0),
        ServerTimer::Sweep,
        Some((ClientTimer::Resend, ms(500.0))),
    );
    assert_eq!(n.records.len(), 1);
    assert_eq!(n.records[0].outcome, Outcome::Committed);
}

/// A `2pc-deferred` client still collecting votes (its commit request to node 2 lost,
/// its own re-send not yet due) hears of the abort its participants' cooperative
/// termination took, instead of learning it from its next re-send a fail-over time
/// later (stop 49's note), and tells every participant.
#[test]
fn test_2pc_deferred_termination_tells_a_client_still_collecting_votes() {
    let mut n = a_lost_commit_request();
    // Only the servers' sweeps run: node 1 asks the client (undecided) and node 2
    // (never prepared: an abort), and aborts.
    n.run_for(secs(2.0), ms(250.0), ServerTimer::Sweep);
    assert_eq!(n.servers[1].done.get(&txn(1)), Some(&(false, 0)));
    assert_eq!(n.records.len(), 1, "the client learned the abort");
    assert_eq!(n.records[0].outcome, Outcome::Aborted);
    assert_eq!(n.servers[1].locked_keys(), Some(0));
}

#[test]
fn test_bad_parameters_are_one_clear_error() {
    let bad = |spec: &str| {
        let s = meridian_core::spec::parse_spec(spec).unwrap();
        crate::named::hierval_for(&s).unwrap_err().to_string()
    };
    assert!(bad("hier-lock:fanout=2").contains("not a parameter of hier-lock"));
    assert!(bad("hier-ts:fanout=1").contains("fanout=1"));
    assert!(bad("hier-ts:batch=0").contains("batch=0"));
    assert!(bad("hier-ts:flush=0ms").contains("flush"));
    assert!(bad("2pc-deferred:batch=10").contains("unknown parameter `batch`"));
    assert!(bad("hier-lock:validate=maybe").contains("validate=maybe"));
    assert!(bad("hier-lock:pipeline=2").contains("pipeline=2"));
}

#[test]
fn test_validation_work_is_serial_unless_pipelined_and_free_with_validation_off() {
    // A two-node commit request at a leaf: lock and check 1 key (read and written: one
    // exclusive lock, one version check), 1 tentative version.
    let commit = || rmw_req(txn(1), "#1/a", &[1, 2]);
    let env = env(9);
    for (spec, serial, parallel) in [
        ("hier-lock", 2, 0),
        ("hier-lock:pipeline=on", 0, 2),
        ("hier-lock:validate=off", 0, 0),
        ("2pc-deferred", 2, 0),
        ("2pc-deferred:pipeline=on", 0, 2),
    ] {
        let mut s = proto(spec).server(&env, NodeId(1));
        let e = deliver(&mut s, 0, NodeId(1), NodeId(9), commit());
        assert_eq!((e.work.serial_ops, e.work.key_ops), (serial, parallel), "{spec}");
    }
}
