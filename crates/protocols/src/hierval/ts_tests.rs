//! `hier-ts` without locks (`pending.rs`): where it differs from `hier-lock`. A
//! distributed writer passes a leaf over a pending reader, and the validator that
//! decides the reader orders the two by timestamp: it commits both, or aborts the
//! reader (an abort above the leaves, §III-B5) or the writer.

use super::tests::{bare, proto, txn, vid, write_req};
use super::*;
use crate::Replica;
use meridian_core::{Key, NodeId, TxnId};

const CLIENT: NodeId = NodeId(100);

/// T1 reads `#1/a` (node 1) and writes `#2/b` (node 2).
fn reader(node2_snap: u64) -> (Msg, Msg) {
    let t = txn(1);
    let at1 = Commit {
        txn: t,
        snap: node2_snap,
        reads: vec![Key::from("#1/a")],
        writes: vec![],
        nodes: vec![NodeId(1), NodeId(2)],
    };
    let at2 = Commit {
        snap: node2_snap,
        ..write_req(t, "#2/b", b"t1", &[1, 2])
    };
    (Msg::Commit(at1), Msg::Commit(at2))
}

/// T2 reads and writes `#1/a` (node 1) and writes `#3/c` (node 3).
fn writer() -> (Msg, Msg) {
    let t = txn(2);
    let at1 = Commit {
        reads: vec![Key::from("#1/a")],
        ..write_req(t, "#1/a", b"t2", &[1, 3])
    };
    (Msg::Commit(at1), Msg::Commit(write_req(t, "#3/c", b"t2", &[1, 3])))
}

/// The outcomes the client heard, by transaction sequence number.
fn outcomes(n: &mut crate::testing::Net<HierVal>) -> Vec<(u32, bool, u64)> {
    let mut v: Vec<(u32, bool, u64)> = std::mem::take(&mut n.outside)
        .into_iter()
        .filter_map(|(_, _, m)| match m {
            Msg::Outcome { txn, commit, ts } => Some((txn.seq, commit, ts)),
            _ => None,
        })
        .collect();
    v.sort();
    v
}

fn stat(n: &crate::testing::Net<HierVal>, name: &str) -> f64 {
    n.servers
        .iter()
        .filter_map(|s| s.stats())
        .flatten()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v)
        .sum()
}

/// Moves node 2's clock to 100 (a read at snapshot 100 there).
fn clock_ahead(n: &mut crate::testing::Net<HierVal>) {
    let read = Msg::Read {
        txn: TxnId { client: 9, seq: 1 },
        key: Key::from("#2/z"),
        snap: Some(100),
        floor: 0,
    };
    n.send(CLIENT, NodeId(2), read);
    n.outside.clear();
}

/// The reader's part at node 1, then the writer's there (the reader is pending), then
/// the rest: the reader's part at node 2 first if `reader_first` (the reader completes at
/// the root first), else the writer's at node 3 first.
fn race(n: &mut crate::testing::Net<HierVal>, reader_first: bool) {
    let (r1, r2) = reader(0);
    let (w1, w3) = writer();
    n.send(CLIENT, NodeId(1), r1);
    n.send(CLIENT, NodeId(1), w1);
    if reader_first {
        n.send(CLIENT, NodeId(2), r2);
        n.send(CLIENT, NodeId(3), w3);
    } else {
        n.send(CLIENT, NodeId(3), w3);
        n.send(CLIENT, NodeId(2), r2);
    }
}

#[test]
fn test_a_writer_passes_a_pending_reader_and_the_reader_aborts_at_the_root() {
    // hier-lock refuses the writer at the leaf and commits the reader; hier-ts lets the
    // writer through, the root decides it first, and the reader, whose read the writer
    // overwrote after its snapshot, aborts there.
    for (spec, expect) in [
        ("hier-lock", vec![(1, true), (2, false)]),
        ("hier-ts", vec![(1, false), (2, true)]),
    ] {
        let mut n = bare(&proto(spec), 9);
        race(&mut n, false);
        let got: Vec<(u32, bool)> = outcomes(&mut n).into_iter().map(|(t, c, _)| (t, c)).collect();
        assert_eq!(got, expect, "{spec}");
        for s in &n.servers {
            assert_eq!(s.locked_keys(), Some(0), "{spec}: nothing pending once decided");
        }
        if spec == "hier-ts" {
            assert_eq!(stat(&n, "passed_pending_readers"), 1.0);
            assert_eq!(stat(&n, "inner_aborts_level_1"), 1.0);
            assert_eq!(stat(&n, "leaf_aborts"), 0.0);
        }
    }
}

#[test]
fn test_a_reader_decided_first_below_the_writer_commits_both() {
    // The reader completes at the root first (timestamp 3: leaves 1 and 2 give 2 and
    // 3); the writer's leaf-1 timestamp is above it (10), so both commit, the writer
    // after the reader.
    let mut n = bare(&proto("hier-ts"), 9);
    race(&mut n, true);
    assert_eq!(outcomes(&mut n), vec![(1, true, 3), (2, true, 10)]);
    let v = n.servers[1].store.versions(&Key::from("#1/a"));
    assert!(v.len() == 1 && !v[0].tentative && v[0].id == vid(txn(2)), "{v:?}");
}

#[test]
fn test_a_writer_that_would_slip_under_a_decided_read_aborts_at_the_root() {
    // Node 2's clock is far ahead (a read at snapshot 100 moved it), so the reader's
    // timestamp is raised to 107 at the root and it commits there first; the writer's
    // timestamp (10) is below that read, so the root refuses the writer.
    let mut n = bare(&proto("hier-ts"), 9);
    clock_ahead(&mut n);
    race(&mut n, true);
    assert_eq!(outcomes(&mut n), vec![(1, true, 107), (2, false, 0)]);
    assert_eq!(stat(&n, "inner_aborts_level_1"), 1.0);
}

#[test]
fn test_a_local_writer_of_a_pending_read_aborts_at_the_leaf_and_a_distributed_one_going_lower_too() {
    // fanout=2 on 8 leaves: level-1 validators over leaves 0-1, 2-3, 4-5, 6-7, level 2
    // over 0-3 and 4-7, the root at level 3. T1 reads #1/a and writes #4/d: decided at
    // the root.
    let mut n = bare(&proto("hier-ts:fanout=2"), 9);
    let t1 = txn(1);
    let r = Commit {
        txn: t1,
        snap: 0,
        reads: vec![Key::from("#1/a")],
        writes: vec![],
        nodes: vec![NodeId(1), NodeId(4)],
    };
    n.send(CLIENT, NodeId(1), Msg::Commit(r));
    // A local writer of #1/a: refused.
    let local = Commit {
        reads: vec![],
        ..write_req(txn(2), "#1/a", b"x", &[1])
    };
    n.send(CLIENT, NodeId(1), Msg::Commit(local));
    // A writer over nodes 0 and 1, decided at level 1, below T1's decider: refused at
    // the leaf, and its level-1 validator aborts it at once.
    let low = Commit {
        reads: vec![],
        ..write_req(txn(3), "#1/a", b"y", &[0, 1])
    };
    n.send(CLIENT, NodeId(1), Msg::Commit(low));
    assert_eq!(outcomes(&mut n), vec![(2, false, 0), (3, false, 0)]);
    assert_eq!(
        stat(&n, "leaf_aborts"),
        1.0,
        "the distributed writer, refused at leaf 1"
    );
    assert_eq!(stat(&n, "passed_pending_readers"), 0.0);
    // A writer over nodes 1 and 5 (decided at the root, T1's decider) passes.
    let high = Commit {
        reads: vec![],
        ..write_req(txn(4), "#1/a", b"z", &[1, 5])
    };
    n.send(CLIENT, NodeId(1), Msg::Commit(high));
    assert_eq!(stat(&n, "passed_pending_readers"), 1.0);
}

#[test]
fn test_a_restarted_validator_still_knows_the_writes_it_validated() {
    // As in the first test, the root commits the writer (timestamp 10) that passed the
    // pending reader, but leaf 1's vote for the reader is still in the network (here:
    // lost, and sent again by hand) when the root crashes and restarts. Its write
    // timestamps come back from the log (Rec::Validated), so the reader still aborts
    // there. Without the replay it committed at 107 (node 2's clock is ahead): its read
    // of #1/a, overwritten at 10, would be stale, and the history not serializable.
    let mut n = bare(&proto("hier-ts"), 9);
    clock_ahead(&mut n);
    let (r1, r2) = reader(0);
    let (w1, w3) = writer();
    n.cut_between(NodeId(1), NodeId(8));
    n.send(CLIENT, NodeId(1), r1);
    n.heal();
    n.send(CLIENT, NodeId(1), w1);
    n.send(CLIENT, NodeId(3), w3);
    assert_eq!(outcomes(&mut n), vec![(2, true, 10)]);
    n.crash(NodeId(8));
    n.restart(NodeId(8));
    n.send(CLIENT, NodeId(2), r2);
    let vote = Up {
        to: Vid(0),
        from: Child::Leaf(NodeId(1)),
        txn: txn(1),
        ok: true,
        ts: 2,
        snap: 0,
        nodes: vec![NodeId(1), NodeId(2)],
        client: CLIENT,
        reads: vec![Key::from("#1/a")],
        writes: vec![],
    };
    n.send(NodeId(1), NodeId(8), Msg::Batch(vec![Item::Up(vote)]));
    assert_eq!(outcomes(&mut n), vec![(1, false, 0)]);
}

#[test]
fn test_a_blind_write_over_a_pending_write_aborts_even_above_its_timestamp() {
    // T1 writes #1/a (leaf timestamp 2) and is pending at node 1. A local blind write of
    // #1/a at snapshot 5 is above that timestamp, but T1's final one may be raised above
    // the blind write's: then a read at a snapshot between the two would read the blind
    // write and miss T1's, which commits after it. So it is refused. (Stop 72's first
    // version let it through; a campaign found the G-single.)
    let mut n = bare(&proto("hier-ts"), 9);
    n.send(
        CLIENT,
        NodeId(1),
        Msg::Commit(write_req(txn(1), "#1/a", b"t1", &[1, 2])),
    );
    let blind = Commit {
        snap: 5,
        ..write_req(txn(2), "#1/a", b"t2", &[1])
    };
    n.send(CLIENT, NodeId(1), Msg::Commit(blind));
    assert_eq!(outcomes(&mut n), vec![(2, false, 0)]);
}

#[test]
fn test_a_duplicated_vote_below_the_decider_is_not_validated_again() {
    // fanout=2: leaf 1's level-1 validator (on spare node 8) passes T up toward the
    // root. A duplicate of leaf 1's vote reached it again and was re-validated against
    // T's own write timestamp, so a false "no" went up (a reordered network could
    // have delivered it first and aborted T) and a gather could outlive it. Now the
    // validator keeps a tombstone of what it passed up.
    let mut n = bare(&proto("hier-ts:fanout=2"), 9);
    n.duplicate_once = Some(Box::new(|from, to, m| {
        from == NodeId(1) && to == NodeId(8) && matches!(m, Msg::Batch(_))
    }));
    let t = txn(1);
    n.send(CLIENT, NodeId(1), Msg::Commit(write_req(t, "#1/a", b"x", &[1, 4])));
    n.send(CLIENT, NodeId(4), Msg::Commit(write_req(t, "#4/d", b"x", &[1, 4])));
    assert_eq!(outcomes(&mut n), vec![(1, true, 5)]);
    assert_eq!(stat(&n, "inner_aborts_level_1"), 0.0);
    assert_eq!(stat(&n, "inner_aborts_level_2"), 0.0);
    for s in &n.servers {
        assert!(s.gathers.is_empty(), "a gather left at node {}", s.me.0);
    }
}
