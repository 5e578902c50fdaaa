//! Hand-staged scenarios on the shared test network ([`crate::testing::Net`]).

use super::*;
use crate::testing::Net;
use meridian_core::{ms, secs, Layout, Topology};
use meridian_txn::Registry;

/// Builds every server of `topo` (placement `Full`) with `leader(s)` leading shard `s`;
/// returns the network and the first client's node id.
fn net(topo: &str, leader: impl Fn(&Layout, ShardId) -> NodeId) -> (Net<ReplicatedLog>, NodeId) {
    let mut layout = Layout::new(Topology::preset(topo).unwrap(), Placement::Full).unwrap();
    let client = layout.add_client(DcId(0));
    let layout = Arc::new(layout);
    let leaders: Arc<Vec<NodeId>> = Arc::new(
        (0..layout.topology.shards)
            .map(|s| leader(&layout, ShardId(s)))
            .collect(),
    );
    let env = Env {
        layout: layout.clone(),
        registry: Arc::new(Registry::new()),
        timeouts: Default::default(),
        retention: Default::default(),
    };
    let servers = (0..layout.num_servers())
        .map(|n| Server::new(env.clone(), NodeId(n), leaders.clone(), Policy::WoundWait))
        .collect();
    (Net::new(servers), client)
}

/// Sends `txn`'s PREPARE for each (shard, key) written, the first shard coordinating.
fn prepare(net: &mut Net<ReplicatedLog>, client: NodeId, txn: TxnId, shares: &[(u32, &str)]) {
    prepare_to(net, client, txn, ShardId(shares[0].0), shares);
}

/// Sends `txn`'s PREPARE for each (shard, key) written, in that order, shard `coord`
/// coordinating.
fn prepare_to(net: &mut Net<ReplicatedLog>, client: NodeId, txn: TxnId, coord: ShardId, shares: &[(u32, &str)]) {
    let parts: Vec<ShardId> = shares.iter().map(|(s, _)| ShardId(*s)).collect();
    let ts = net.now;
    for share in shares {
        prepare_share(net, client, (txn, ts), coord, &parts, *share);
    }
}

/// Sends the PREPARE of one share `(shard, key written)` of transaction `txn` (priority
/// `ts`) on `parts`, shard `coord` coordinating, to the shard's leader.
fn prepare_share(
    net: &mut Net<ReplicatedLog>,
    client: NodeId,
    (txn, ts): (TxnId, Time),
    coord: ShardId,
    parts: &[ShardId],
    (s, k): (u32, &str),
) {
    let entry = Arc::new(PrepareEntry {
        txn,
        ts,
        coord,
        parts: parts.to_vec(),
        client,
        reads: vec![],
        writes: vec![(Key::from(k), VersionId { txn, seq: s }, Value::from_u64(7))],
    });
    let leader = leader_of(net, ShardId(s));
    net.send(
        client,
        leader,
        Msg::Prepare {
            shard: ShardId(s),
            entry,
        },
    );
}

/// The live server that leads shard `s`.
fn leader_of(net: &Net<ReplicatedLog>, s: ShardId) -> NodeId {
    (0..net.servers.len() as u32)
        .map(NodeId)
        .find(|n| net.servers[n.0 as usize].leads(s) && !net.down.contains(n))
        .expect("a leader")
}

/// No server holds a lock.
fn assert_no_locks(net: &Net<ReplicatedLog>) {
    for n in &net.servers {
        assert_eq!(n.locked_keys(), Some(0), "n{} holds locks", n.me.0);
    }
}

fn outcome(net: &Net<ReplicatedLog>, txn: TxnId) -> Option<bool> {
    net.outside.iter().find_map(|(_, _, m)| match m {
        Msg::Outcome { txn: t, commit, .. } if *t == txn => Some(*commit),
        _ => None,
    })
}

/// Issue 14, R1: one node leads two shards a transaction writes (as after a fail-over
/// moved a second shard's lead to it). Participant state was keyed by transaction
/// alone, so the second shard's share was taken for a duplicate of the first (or,
/// when rebuilt after a fail-over, overwrote it) and its COMMIT never happened while
/// the locks of both were released. Each share must prepare, commit and release on
/// its own.
#[test]
fn one_leader_of_two_shards_commits_each_share() {
    // us3: shards 0 and 2 both live on the first node of each DC; both led by node 0.
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    let layout = net.servers[0].env.layout.clone();
    assert!(net.servers[0].leads(ShardId(0)) && net.servers[0].leads(ShardId(2)));
    let txn = TxnId { client: 0, seq: 1 };
    prepare(&mut net, client, txn, &[(0, "#0/a"), (2, "#2/b")]);
    assert_eq!(outcome(&net, txn), Some(true));
    // Followers learn the chosen prefix from the next heartbeat.
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    for (s, k) in [(0, "#0/a"), (2, "#2/b")] {
        for r in layout.replicas(ShardId(s)) {
            assert!(
                net.servers[r.0 as usize]
                    .store
                    .contains(&Key::from(k), VersionId { txn, seq: s }),
                "shard {s}'s write missing at {r:?}"
            );
        }
    }
    assert_no_locks(&net);
}

/// Issue 14, R2: a group of one replica (one DC) whose only replica restarts must
/// elect itself again: its own promise is a majority. The election message went to
/// nobody and only a reply completed an election, so the shard never had a leader
/// again and every transaction touching it stalled.
#[test]
fn a_group_of_one_elects_its_restarted_replica() {
    let (mut net, client) = net("lan", |l, s| l.replicas(s)[0]);
    let n3 = NodeId(3);
    let s = net.servers[3].env.layout.shards_of(n3)[0];
    net.crash(n3);
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    net.restart(n3);
    net.run_for(secs(30.0), ms(250.0), ServerTimer::Sweep);
    assert!(net.servers[3].leads(s), "the restarted replica leads its shard again");
    let txn = TxnId { client: 0, seq: 1 };
    let key = format!("#{}/x", s.0);
    prepare(&mut net, client, txn, &[(s.0, &key)]);
    assert_eq!(outcome(&net, txn), Some(true));
}

/// A leader down for one second leads its group again about a sweep after it is back,
/// not once its 10 s lease has run out: the others refuse every other candidate for
/// that long but promise it again (election.rs, `lease_holder_back`). It used to wait
/// out its own lease like a follower, and every transaction touching the shard aborted
/// or waited for ten seconds. Its followers name it again to clients once it is heard.
#[test]
fn a_leader_back_from_a_short_crash_leads_again_before_its_lease_ends() {
    let (mut net, client, r0) = us3_settled();
    let s0 = ShardId(0);
    let (leader, follower) = (r0[0], r0[1]);
    assert_eq!(net.servers[0].env.timeouts.lease, secs(10.0));
    net.crash(leader);
    net.run_for(secs(1.0), ms(250.0), ServerTimer::Sweep);
    net.restart(leader);
    // Stop 49: it stands on its restart, not at its second sweep after it (half a
    // second of the shard without a leader, after every restart).
    assert!(net.servers[leader.0 as usize].leads(s0), "leads again on its restart");
    net.run_for(secs(1.0), ms(250.0), ServerTimer::Sweep);
    // 2.5 s: a second after its restart, long before its lease (from 0.5 s) ends.
    assert!(
        net.servers[leader.0 as usize].leads(s0),
        "leads again within a second of its restart"
    );
    // A follower's hint names it, and a transaction on the shard commits.
    assert_eq!(hint_of(&mut net, client, follower, 1), Some(Some(leader)));
    let txn = TxnId { client: 0, seq: 2 };
    prepare(&mut net, client, txn, &[(0, "#0/a")]);
    assert_eq!(outcome(&net, txn), Some(true));
}

/// A follower that has not heard from its leader for the fail-over time names no
/// leader to a client (the leader may be down: a client sent there would wait another
/// fail-over time for nothing); one that heard from it names it.
#[test]
fn a_follower_names_only_a_leader_it_heard_from_lately() {
    let (mut net, client, r0) = us3_settled();
    assert_eq!(hint_of(&mut net, client, r0[1], 1), Some(Some(r0[0])));
    net.crash(r0[0]);
    net.run_for(secs(2.0), ms(250.0), ServerTimer::Sweep);
    assert_eq!(
        hint_of(&mut net, client, r0[1], 2),
        Some(None),
        "silent for two seconds"
    );
}

/// `us3` with every group led by its first replica, after half a second of
/// heartbeats: the net, its client and shard 0's replicas (leader first).
fn us3_settled() -> (Net<ReplicatedLog>, NodeId, Vec<NodeId>) {
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    let r0 = net.servers[0].env.layout.replicas(ShardId(0)).to_vec();
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    (net, client, r0)
}

/// The leader hint in `follower`'s answer to a read of shard 0 by transaction `seq`
/// (`None`: no answer).
fn hint_of(net: &mut Net<ReplicatedLog>, client: NodeId, follower: NodeId, seq: u32) -> Option<Option<NodeId>> {
    let txn = TxnId { client: 0, seq };
    let key = Key::from("#0/a");
    net.outside.clear();
    net.send(client, follower, Msg::Read(LockedRead { txn, ts: net.now, key }));
    net.outside.iter().find_map(|(_, _, m)| match m {
        Msg::ReadReply { hint, .. } => Some(*hint),
        _ => None,
    })
}

/// Issue 19: a PREPARE that reaches a replica which does not lead the shard (the
/// client's guess is stale after a fail-over) is answered with a redirect naming the
/// leader. It was dropped silently, so the coordinator's vote timeout aborted every
/// write-only transaction on that shard, one after another.
#[test]
fn a_prepare_at_a_non_leader_is_redirected_to_the_leader() {
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    let layout = net.servers[0].env.layout.clone();
    // Let followers hear the leaders' heartbeats, so they know who leads.
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    let s = ShardId(0);
    let (leader, follower) = (layout.replicas(s)[0], layout.replicas(s)[1]);
    let txn = TxnId { client: 0, seq: 1 };
    let entry = Arc::new(PrepareEntry {
        txn,
        ts: net.now,
        coord: s,
        parts: vec![s],
        client,
        reads: vec![],
        writes: vec![(Key::from("#0/a"), VersionId { txn, seq: 0 }, Value::from_u64(7))],
    });
    net.send(client, follower, Msg::Prepare { shard: s, entry });
    let redirect = net.outside.iter().find_map(|(_, _, m)| match m {
        Msg::Redirect { txn: t, shard, leader } if *t == txn && *shard == s => Some(*leader),
        _ => None,
    });
    assert_eq!(redirect, Some(Some(leader)), "{:?}", net.outside);
}

/// Issue 19 (suspected safety): a coordinator that aborts on a vote timeout must not
/// tell anyone until its ABORT entry is chosen. It told the client and the cohorts at
/// once; if it then lost its leadership before the entry was chosen, the new leader
/// rebuilt the transaction from the chosen PREPARE, collected the late votes and
/// committed it: the client heard both ABORT and COMMIT.
#[test]
fn a_vote_timeout_abort_is_announced_only_once_its_entry_is_chosen() {
    // us3: shard 0 on the first node of each DC, shard 1 on the second; leaders in NY.
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    let layout = net.servers[0].env.layout.clone();
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    let (s0, s1) = (ShardId(0), ShardId(1));
    let r0 = layout.replicas(s0).to_vec();
    assert_ne!(r0[0], layout.replicas(s1)[0], "the two shards' leaders differ");
    let txn = TxnId { client: 0, seq: 1 };
    let entry = |s: ShardId, k: &str| {
        Arc::new(PrepareEntry {
            txn,
            ts: 0,
            coord: s0,
            parts: vec![s0, s1],
            client,
            reads: vec![],
            writes: vec![(Key::from(k), VersionId { txn, seq: s.0 }, Value::from_u64(7))],
        })
    };
    // The coordinator shard prepares; shard 1's PREPARE is held back (a slow link).
    net.send(
        client,
        r0[0],
        Msg::Prepare {
            shard: s0,
            entry: entry(s0, "#0/a"),
        },
    );
    // The coordinator's followers go down: nothing it proposes from now on is chosen.
    net.crash(r0[1]);
    net.crash(r0[2]);
    // The vote timeout passes: the coordinator decides to abort.
    net.run_for(secs(4.0), ms(250.0), ServerTimer::Sweep);
    let told = |net: &Net<ReplicatedLog>| -> Vec<bool> {
        net.outside
            .iter()
            .filter_map(|(_, to, m)| match m {
                Msg::Outcome { txn: t, commit, .. } if *t == txn && *to == client => Some(*commit),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        told(&net),
        Vec::<bool>::new(),
        "an abort announced before its entry was chosen"
    );
    // The leader dies; its followers come back and elect a new one, which rebuilds the
    // transaction from the chosen PREPARE.
    net.crash(r0[0]);
    net.restart(r0[1]);
    net.restart(r0[2]);
    let elected = |net: &Net<ReplicatedLog>| r0[1..].iter().any(|r| net.servers[r.0 as usize].leads(s0));
    for _ in 0..120 {
        if elected(&net) {
            break;
        }
        net.run_for(ms(250.0), ms(250.0), ServerTimer::Sweep);
    }
    assert!(elected(&net), "shard 0 has a new leader");
    // Shard 1's PREPARE finally arrives and its vote reaches the new coordinator leader.
    net.send(
        client,
        layout.replicas(s1)[0],
        Msg::Prepare {
            shard: s1,
            entry: entry(s1, "#1/b"),
        },
    );
    net.run_for(secs(5.0), ms(250.0), ServerTimer::Sweep);
    let told = told(&net);
    assert!(
        told.windows(2).all(|w| w[0] == w[1]) && !told.is_empty(),
        "the client heard {told:?}"
    );
}

/// Pre-vote (election.rs): a follower cut off from its group for twice the lease
/// tries to stand again and again, but no majority answers its pre-vote, so it never
/// raises its ballot; when the cut heals, the leader's heartbeats are taken, and the
/// leader keeps its ballot and its lead. Before the pre-vote the follower raised its
/// ballot at every try, refused the leader's first heartbeat after the heal with that
/// ballot, and the leader stepped down to follow it (its in-flight shares then waited
/// out their vote timeout).
#[test]
fn a_follower_back_from_a_cut_does_not_depose_its_leader() {
    let (mut net, _) = net("us3", |l, s| l.replicas(s)[0]);
    let s0 = ShardId(0);
    let r0 = net.servers[0].env.layout.replicas(s0).to_vec();
    let (leader, cut_off) = (r0[0].0 as usize, r0[2]);
    let ballot = net.servers[leader].groups[&s0].promised;
    for r in &r0[..2] {
        net.cut_between(cut_off, *r);
    }
    net.run_for(secs(20.0), ms(250.0), ServerTimer::Sweep);
    let g = &net.servers[cut_off.0 as usize].groups[&s0];
    assert_eq!(g.promised, ballot, "a pre-vote no majority answered raised no ballot");
    assert!(g.prevote.is_some(), "the cut-off follower tried to stand");
    net.heal();
    net.run_for(secs(2.0), ms(250.0), ServerTimer::Sweep);
    assert!(net.servers[leader].leads(s0), "the leader still leads");
    assert_eq!(net.servers[leader].groups[&s0].promised, ballot);
    assert_eq!(net.servers[cut_off.0 as usize].groups[&s0].leader, Some(r0[0]));
}

/// Transaction `young` reads `key` (under a shared lock, priority 100 ns), then the
/// older `old` (priority 0) prepares a write of it: wound-wait aborts `young`'s share
/// of that shard before `young` has sent any PREPARE.
fn wound_a_reader(net: &mut Net<ReplicatedLog>, client: NodeId, young: TxnId, old: TxnId, key: &str) {
    let s = net.servers[0].env.layout.shard_of(&Key::from(key));
    let leader = leader_of(net, s);
    let read = LockedRead {
        txn: young,
        ts: 100,
        key: Key::from(key),
    };
    net.send(client, leader, Msg::Read(read));
    prepare(net, client, old, &[(s.0, key)]);
    assert_eq!(outcome(net, old), Some(true));
}

/// The coordinator shard's leader had aborted its own share of a transaction (wounded
/// by an older writer) before the transaction's PREPARE reached it. It refused the
/// PREPARE and logged the ABORT, but had not recorded the transaction's client or
/// shards, so once the entry was chosen it told nobody: the client learned at its 1 s
/// status query and the other shard's leader kept its locks until it re-sent its vote
/// 1 s later. Under the bank workload (100 hot accounts, 6 clients, three DCs 0.2 ms
/// apart) this stopped every client for most of each second: 410 commits/s against 2PC's
/// 2,400 (seed 1). The abort must reach the client and every shard at once.
#[test]
fn an_abort_of_the_coordinators_own_share_is_announced_at_once() {
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    assert!(
        !net.servers[0].leads(ShardId(1)),
        "shards 0 and 1 have different leaders"
    );
    let (young, old) = (TxnId { client: 0, seq: 2 }, TxnId { client: 1, seq: 1 });
    wound_a_reader(&mut net, client, young, old, "#0/a");
    prepare(&mut net, client, young, &[(0, "#0/b"), (1, "#1/c")]);
    assert_eq!(outcome(&net, young), Some(false), "the client is told without a timer");
    assert_no_locks(&net);
}

/// The same, when a cohort's no vote (its share was wounded) reaches the coordinator
/// shard before the transaction's own PREPARE there: the ABORT is chosen first, and the
/// PREPARE that arrives after it must still tell the client.
#[test]
fn an_abort_decided_before_the_coordinators_prepare_arrives_is_announced_with_it() {
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    let (young, old) = (TxnId { client: 0, seq: 2 }, TxnId { client: 1, seq: 1 });
    wound_a_reader(&mut net, client, young, old, "#1/a");
    prepare_to(&mut net, client, young, ShardId(0), &[(1, "#1/b"), (0, "#0/c")]);
    assert_eq!(outcome(&net, young), Some(false), "the client is told without a timer");
    assert_no_locks(&net);
}

/// Two transactions write the same two keys, on shards 0 and 1. The younger one's
/// share of shard 0 is prepared first, the older one's of shard 1; then each asks for
/// the lock the other holds. The older one wounds the younger, which being prepared
/// at shard 0 cannot be aborted there: its coordinator must abort it. Wound-wait did
/// nothing for a prepared holder, so both waited for the 3 s vote timeout (YCSB with
/// Zipf 0.99 on three DCs 0.2 ms apart, seed 2: 9 commits/s against 2PC's 1,200).
#[test]
fn a_prepared_younger_holder_is_wounded_through_its_coordinator() {
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    let parts = [ShardId(0), ShardId(1)];
    let (old, young) = ((TxnId { client: 1, seq: 1 }, 10), (TxnId { client: 0, seq: 1 }, 20));
    prepare_share(&mut net, client, young, ShardId(0), &parts, (0, "#0/a"));
    prepare_share(&mut net, client, old, ShardId(1), &parts, (1, "#1/b"));
    prepare_share(&mut net, client, young, ShardId(0), &parts, (1, "#1/b"));
    prepare_share(&mut net, client, old, ShardId(1), &parts, (0, "#0/a"));
    assert_eq!(outcome(&net, young.0), Some(false), "the younger one is wounded");
    assert_eq!(
        outcome(&net, old.0),
        Some(true),
        "the older one commits, without a timer"
    );
    assert_no_locks(&net);
}

/// A client cut off (or gone) after reading a key keeps its shared lock; a younger
/// transaction that needs the key waits behind it. It waited for `idle` (10 s): under
/// a DC cut off for 10 s, TX's clients' reads stopped NY's and CA's hot keys for the
/// whole cut in 4 of 10 seeds (`majority_side_rates`, replog:lease=2s, bank: 16-20
/// commits/s against about 590). Once it blocks someone and its client stays silent
/// for the fail-over time (1 s), the leader aborts the unprepared share, as HACommit's
/// leaders do.
#[test]
fn a_silent_reader_that_blocks_a_writer_is_aborted_after_the_failover_time() {
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    let (silent, writer) = (TxnId { client: 1, seq: 1 }, TxnId { client: 0, seq: 1 });
    let read = LockedRead {
        txn: silent,
        ts: 0,
        key: Key::from("#0/a"),
    };
    net.send(client, NodeId(0), Msg::Read(read));
    net.run_for(ms(100.0), ms(100.0), ServerTimer::Sweep);
    prepare(&mut net, client, writer, &[(0, "#0/a")]);
    assert_eq!(outcome(&net, writer), None, "the writer waits for the reader");
    net.run_for(secs(2.0), ms(250.0), ServerTimer::Sweep);
    assert_eq!(
        outcome(&net, writer),
        Some(true),
        "within the fail-over time, not `idle`"
    );
}

/// The abort reason the client was told for `txn`, if any.
fn abort_reason(net: &Net<ReplicatedLog>, txn: TxnId) -> Option<AbortReason> {
    net.outside.iter().find_map(|(_, _, m)| match m {
        Msg::Outcome {
            txn: t,
            commit: false,
            reason,
        } if *t == txn => reason.clone(),
        _ => None,
    })
}

/// Stop 49: a cohort's PREPARE lost with its crashed leader. The leader is back within
/// a second and leads again, but knows nothing of the transaction, while the
/// coordinator shard holds its locks; it waited for its 3 s vote timeout (every
/// transaction on those keys behind it). The coordinator now asks a cohort silent for
/// the fail-over time for its vote; a leader that never received the PREPARE votes
/// no and tombstones the transaction, so the PREPARE, should it come late, is refused.
#[test]
fn a_prepare_lost_with_a_crashed_cohort_leader_is_voted_no_when_asked() {
    let (mut net, client, r0) = us3_settled();
    let layout = net.servers[0].env.layout.clone();
    let r1 = layout.replicas(ShardId(1)).to_vec();
    assert_ne!(r0[0], r1[0], "the two shards' leaders differ");
    let txn = TxnId { client: 0, seq: 1 };
    let (ts, parts) = (net.now, [ShardId(0), ShardId(1)]);
    prepare_share(&mut net, client, (txn, ts), ShardId(0), &parts, (0, "#0/a"));
    // Shard 1's leader goes down before its PREPARE arrives, and is back in a second.
    net.crash(r1[0]);
    net.send(
        client,
        r1[0],
        Msg::Prepare {
            shard: ShardId(1),
            entry: Arc::new(PrepareEntry {
                txn,
                ts,
                coord: ShardId(0),
                parts: parts.to_vec(),
                client,
                reads: vec![],
                writes: vec![(Key::from("#1/b"), VersionId { txn, seq: 1 }, Value::from_u64(7))],
            }),
        },
    );
    net.run_for(secs(1.0), ms(250.0), ServerTimer::Sweep);
    net.restart(r1[0]);
    assert!(net.servers[r1[0].0 as usize].leads(ShardId(1)));
    assert_eq!(outcome(&net, txn), None);
    // Well inside the 3 s vote timeout.
    net.run_for(ms(750.0), ms(250.0), ServerTimer::Sweep);
    assert_eq!(abort_reason(&net, txn), Some(AbortReason::PrepareLost));
    assert_no_locks(&net);
    // The PREPARE, late, is refused.
    prepare_share(&mut net, client, (txn, ts), ShardId(0), &parts, (1, "#1/b"));
    assert_no_locks(&net);
}

/// Stop 49: the coordinator shard's own PREPARE lost with its crashed leader, the
/// cohort prepared. The restarted leader knew the transaction only from the cohort's
/// votes, which name no shards, and answered the client's status query "in progress";
/// the cohort kept its locks until the vote timeout. Now a vote the cohort sends
/// again (it has waited a query period) for a transaction whose own PREPARE never
/// arrived is a presumed abort, announced to the cohort once chosen, and a status
/// query is answered with it.
#[test]
fn a_coordinators_lost_prepare_is_presumed_aborted_on_the_cohorts_repeated_vote() {
    let (mut net, client, r0) = us3_settled();
    let txn = TxnId { client: 0, seq: 1 };
    let (ts, parts) = (net.now, [ShardId(0), ShardId(1)]);
    net.crash(r0[0]);
    prepare_share(&mut net, client, (txn, ts), ShardId(0), &parts, (1, "#1/b"));
    assert!(
        net.servers.iter().any(|n| n.locked_keys() != Some(0)),
        "the cohort prepared"
    );
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    net.restart(r0[0]);
    assert!(net.servers[r0[0].0 as usize].leads(ShardId(0)));
    // The cohort's vote goes again a query period (1 s) after it prepared: well
    // inside the vote timeout (3 s) of the coordinator that now knows of it.
    net.run_for(ms(750.0), ms(250.0), ServerTimer::Sweep);
    assert_no_locks(&net);
    net.send(
        client,
        r0[0],
        Msg::Status {
            txn,
            shard: ShardId(0),
            ts,
        },
    );
    assert_eq!(abort_reason(&net, txn), Some(AbortReason::Aborted));
}

/// Stop 49: a new coordinator leader rebuilds a transaction from its chosen PREPARE,
/// but the cohorts' votes reached only its predecessor. It waited for each cohort to
/// send its vote again (a query period, 1 s); it now asks them as it takes the lead,
/// and a prepared cohort answers yes at once.
#[test]
fn a_new_coordinator_leader_asks_the_cohorts_for_their_votes() {
    let (mut net, client, r0) = us3_settled();
    let (txn, leader) = (TxnId { client: 0, seq: 1 }, r0[0]);
    // The cohort's vote never reaches the coordinator's leader.
    net.drop_once = Some(Box::new(move |_, to, m| {
        to == leader && matches!(m, Msg::Prepared(v) if v.shard == ShardId(1))
    }));
    prepare(&mut net, client, txn, &[(0, "#0/a"), (1, "#1/b")]);
    assert!(net.drop_once.is_none(), "the vote was dropped");
    assert_eq!(outcome(&net, txn), None);
    net.crash(leader);
    net.restart(leader);
    assert_eq!(outcome(&net, txn), Some(true), "committed as the leader takes over");
}

/// Stop 49: the coordinator shard knows a transaction only from a cohort's vote (its
/// own PREPARE, the one that names the shards, was lost). The client's status query
/// was answered "in progress" and the cohort kept its locks until the vote timeout;
/// now it is a presumed abort, told to the client and the cohort once chosen.
#[test]
fn a_status_query_for_a_transaction_known_only_from_votes_is_a_presumed_abort() {
    let (mut net, client, r0) = us3_settled();
    let txn = TxnId { client: 0, seq: 1 };
    let (ts, parts) = (net.now, [ShardId(0), ShardId(1)]);
    prepare_share(&mut net, client, (txn, ts), ShardId(0), &parts, (1, "#1/b"));
    assert!(
        net.servers.iter().any(|n| n.locked_keys() != Some(0)),
        "the cohort prepared"
    );
    net.send(
        client,
        r0[0],
        Msg::Status {
            txn,
            shard: ShardId(0),
            ts,
        },
    );
    assert_eq!(abort_reason(&net, txn), Some(AbortReason::CoordinatorNeverPrepared));
    assert_no_locks(&net);
}

/// A read and a PREPARE that the network delays past their transaction's commit (late
/// duplicates) must not begin the transaction again at the shard's leader: as a fresh
/// share the read took a shared lock with the transaction's original (oldest) priority,
/// held until the idle timeout when nobody waited for it (issue 51: a key still locked
/// after the liveness phase, 5 of 10 seeds under `dup:p=0.1,late=30s`), and the PREPARE
/// locked the key and logged a second PREPARE entry.
#[test]
fn a_late_read_or_prepare_after_the_commit_takes_no_lock() {
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    let txn = TxnId { client: 0, seq: 1 };
    let read = LockedRead {
        txn,
        ts: 0,
        key: Key::from("#1/a"),
    };
    let leader = leader_of(&net, ShardId(1));
    net.send(client, leader, Msg::Read(read.clone()));
    prepare(&mut net, client, txn, &[(0, "#0/b"), (1, "#1/a")]);
    assert_eq!(outcome(&net, txn), Some(true));
    assert_no_locks(&net);
    let log_len = |net: &Net<ReplicatedLog>| net.servers[leader.0 as usize].groups[&ShardId(1)].log.len();
    let before = log_len(&net);
    net.send(client, leader, Msg::Read(read));
    prepare(&mut net, client, txn, &[(0, "#0/b"), (1, "#1/a")]);
    assert_no_locks(&net);
    assert_eq!(log_len(&net), before, "no second PREPARE entry");
}

/// Issue 51 (`replog:lease=2s` on far3 lost a committed write from its shard's whole
/// group): a replica whose own pre-vote was out promised another candidate's ballot,
/// then its pre-vote completed and it stood with a ballot above the one it had just
/// promised, deposing the new leader as it began to lead. Two candidates did this to
/// each other for the rest of the run, and the cohort's COMMIT entry was never chosen.
/// A promise to another candidate ends this replica's own candidacy.
#[test]
fn a_replica_that_promised_another_candidate_drops_its_own_pre_vote() {
    use crate::testing::{call, deliver, fire};
    use meridian_core::Actor;
    let (net, _) = net("us3", |l, s| l.replicas(s)[0]);
    let s0 = ShardId(0);
    let r0 = net.servers[0].env.layout.replicas(s0).to_vec();
    let (leader, rival, me) = (r0[0], r0[1], r0[2]);
    let mut srv = net.servers.into_iter().nth(me.0 as usize).unwrap();
    call(&mut srv, 0, me, |s, cx| s.on_start(cx));
    // The leader falls silent: sweeps until this replica's pre-vote goes out.
    let mut now = 0;
    let mine = loop {
        now += ms(250.0);
        assert!(now < secs(30.0), "never stood");
        let e = fire(&mut srv, now, me, ServerTimer::Sweep);
        let pre = e.sent().into_iter().find_map(|(_, m)| match m {
            Msg::PreElect { shard, ballot, .. } if *shard == s0 => Some(*ballot),
            _ => None,
        });
        if let Some(b) = pre {
            break b;
        }
    };
    // The rival's election reaches it first: promised.
    let theirs = Ballot {
        round: mine.round,
        node: rival,
    };
    let e = deliver(
        &mut srv,
        now + 1,
        me,
        rival,
        Msg::Elect {
            shard: s0,
            ballot: theirs,
            from: 0,
        },
    );
    assert!(matches!(e.sent()[..], [(_, Msg::Promise { .. })]), "{:?}", e.sent());
    // Then its own pre-vote's majority: it must not stand over the promised rival.
    let e = deliver(
        &mut srv,
        now + 2,
        me,
        leader,
        Msg::PreVote {
            shard: s0,
            ballot: mine,
            ok: true,
        },
    );
    assert!(
        !e.sent().iter().any(|(_, m)| matches!(m, Msg::Elect { .. })),
        "stood over the candidate it promised: {:?}",
        e.sent()
    );
}

/// An ABORT decision for a share this leader never saw (its PREPARE lost, or still on
/// its way) tombstones the transaction: the PREPARE, when it comes, is refused rather
/// than lock the key and log a PREPARE entry for a transaction already aborted.
#[test]
fn an_abort_before_the_share_s_prepare_refuses_it() {
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    let txn = TxnId { client: 0, seq: 1 };
    let leader = leader_of(&net, ShardId(1));
    let log_len = |net: &Net<ReplicatedLog>| net.servers[leader.0 as usize].groups[&ShardId(1)].log.len();
    let before = log_len(&net);
    net.send(
        client,
        leader,
        Msg::Decide {
            txn,
            shard: ShardId(1),
            commit: false,
        },
    );
    let ts = net.now;
    prepare_share(
        &mut net,
        client,
        (txn, ts),
        ShardId(0),
        &[ShardId(0), ShardId(1)],
        (1, "#1/a"),
    );
    assert_no_locks(&net);
    assert_eq!(log_len(&net), before, "no PREPARE entry for an aborted transaction");
}

/// Commits `n` single-shard transactions on shard 0 (keys `#0/t<seq>`), from `seq`.
fn commit_on_shard0(net: &mut Net<ReplicatedLog>, client: NodeId, seqs: std::ops::Range<u32>) {
    for seq in seqs {
        let txn = TxnId { client: 0, seq };
        let key = format!("#0/t{seq}");
        prepare(net, client, txn, &[(0, &key)]);
        assert_eq!(outcome(net, txn), Some(true), "txn {seq} committed");
    }
}

/// Issue 53, 2: a follower down while its group truncated its log (`keep` slots
/// behind the applied point) cannot catch up slot by slot: its leader sends the
/// shard's state instead, and it ends with every committed write.
#[test]
fn a_follower_behind_the_truncated_log_catches_up_from_a_snapshot() {
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    for s in &mut net.servers {
        s.keep = 2;
    }
    let r0 = net.servers[0].env.layout.replicas(ShardId(0)).to_vec();
    let f = r0[2];
    net.crash(f);
    commit_on_shard0(&mut net, client, 1..7);
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    let leader = &net.servers[r0[0].0 as usize];
    let g = &leader.groups[&ShardId(0)];
    assert!(
        g.log_start > 0 && g.log.len() as u64 <= 2,
        "truncated: {} slots from {}",
        g.log.len(),
        g.log_start
    );
    net.restart(f);
    net.run_for(secs(2.0), ms(250.0), ServerTimer::Sweep);
    let fs = &net.servers[f.0 as usize];
    assert_eq!(fs.snapshots_taken, 1);
    assert_eq!(
        fs.groups[&ShardId(0)].applied,
        net.servers[r0[0].0 as usize].groups[&ShardId(0)].applied
    );
    for seq in 1..7 {
        let txn = TxnId { client: 0, seq };
        assert!(
            fs.store
                .contains(&Key::from(format!("#0/t{seq}").as_str()), VersionId { txn, seq: 0 }),
            "txn {seq}"
        );
    }
}

/// Issue 53, 2: the election restriction truncation needs. Five replicas; the two
/// right after the leader (the first to stand when it goes) are down while the others
/// commit and truncate; then the leader dies and the two come back. The first of them
/// to stand would win with one truncated replica's promise, which cannot report the
/// truncated slots, and fill them with no-ops (losing the commits); a replica whose log
/// starts above a candidate's applied point neither pre-votes for it nor promises it,
/// so an up-to-date replica leads and the laggards get a snapshot.
#[test]
fn a_candidate_behind_the_truncated_logs_is_not_elected() {
    let (mut net, client) = net("rc5", |l, s| l.replicas(s)[0]);
    for s in &mut net.servers {
        s.keep = 2;
    }
    let r = net.servers[0].env.layout.replicas(ShardId(0)).to_vec();
    net.crash(r[1]);
    net.crash(r[2]);
    commit_on_shard0(&mut net, client, 1..7);
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    assert!(net.servers[r[3].0 as usize].groups[&ShardId(0)].log_start > 0);
    net.crash(r[0]);
    net.restart(r[1]);
    net.restart(r[2]);
    net.run_for(secs(20.0), ms(250.0), ServerTimer::Sweep);
    let leader = leader_of(&net, ShardId(0));
    assert!(
        leader == r[3] || leader == r[4],
        "an up-to-date replica leads, not n{}",
        leader.0
    );
    for n in &r[1..] {
        let s = &net.servers[n.0 as usize];
        for seq in 1..7 {
            let txn = TxnId { client: 0, seq };
            let key = Key::from(format!("#0/t{seq}").as_str());
            assert!(
                s.store.contains(&key, VersionId { txn, seq: 0 }),
                "n{} lacks txn {seq}",
                n.0
            );
        }
    }
}

/// Issue 53, 2: decisions are forgotten through the log once settled and `forget`
/// old, at every replica; a client asking about one afterwards is told its outcome is
/// lost, not that it aborted, and a late read of one is refused.
#[test]
fn settled_decisions_are_forgotten_everywhere_and_a_late_status_query_gets_forgotten() {
    let (mut net, client) = net("us3", |l, s| l.replicas(s)[0]);
    for s in &mut net.servers {
        s.forget = secs(1.0);
    }
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    let txn = TxnId { client: 0, seq: 1 };
    let ts = net.now;
    prepare(&mut net, client, txn, &[(0, "#0/a"), (1, "#1/b")]);
    assert_eq!(outcome(&net, txn), Some(true));
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    assert!(net.servers.iter().any(|s| s.decision(txn) == Some(true)));
    net.run_for(secs(4.0), ms(250.0), ServerTimer::Sweep);
    for s in &net.servers {
        assert_eq!(s.decision(txn), None, "n{} still holds the decision", s.me.0);
    }
    let coord = leader_of(&net, ShardId(0));
    assert!(net.servers[coord.0 as usize].groups[&ShardId(0)].forgot_ts >= Some(ts));
    assert_status_forgotten(&mut net, client, coord, txn, ts);
    // A read of it the network delayed past the forgetting (campaign seed 1402916):
    // refused, not begun again with a lock only its client's silence would release.
    let key = Key::from("#0/a");
    net.send(client, coord, Msg::Read(LockedRead { txn, ts, key }));
    let refused = |r: &ReadAnswer| r.txn == txn && r.result == Err(AbortReason::OlderThanForgotten);
    assert!(matches!(net.outside.last(), Some((_, _, Msg::ReadReply { answer, .. })) if refused(answer)));
    assert_no_locks(&net);
    // Votes on it the network delayed (a no from a cohort that refused a late PREPARE,
    // a duplicate yes): the coordinator logs no ABORT for the forgotten commit, and a
    // client still asking is not told it aborted (review of stop 81).
    let cohort = leader_of(&net, ShardId(1));
    for v in [
        Prepared::no(txn, ShardId(0), ShardId(1), AbortReason::OlderThanForgotten).at(ts),
        Prepared::yes(txn, ShardId(0), ShardId(1)).at(ts),
    ] {
        net.send(cohort, coord, Msg::Prepared(v));
    }
    // Less than `forget`: an ABORT logged now would still be held.
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    for s in &net.servers {
        assert_eq!(
            s.decision(txn),
            None,
            "n{} decided the forgotten transaction again",
            s.me.0
        );
    }
    assert_status_forgotten(&mut net, client, coord, txn, ts);
    // Review of stop 82: a late yes is answered with an unlogged abort only by a leader
    // that holds its lease (a deposed one, whose mark ran ahead, could abort a live
    // transaction its successor prepares) ...
    let lease = net.servers[coord.0 as usize].groups[&ShardId(0)].lease_until;
    net.servers[coord.0 as usize]
        .groups
        .get_mut(&ShardId(0))
        .unwrap()
        .lease_until = 0;
    let before = net.delivered;
    net.send(
        cohort,
        coord,
        Msg::Prepared(Prepared::yes(txn, ShardId(0), ShardId(1)).at(ts)),
    );
    assert_eq!(
        net.delivered,
        before + 1,
        "a leader without its lease answered the late vote"
    );
    net.servers[coord.0 as usize]
        .groups
        .get_mut(&ShardId(0))
        .unwrap()
        .lease_until = lease;
    // ... and a vote that names no timestamp (0) is never taken for an old one.
    let young = TxnId { client: 0, seq: 99 };
    net.send(
        cohort,
        coord,
        Msg::Prepared(Prepared::yes(young, ShardId(0), ShardId(1))),
    );
    assert!(
        net.servers[coord.0 as usize].ctxns.contains_key(&young),
        "a vote without a timestamp was taken for a forgotten transaction's"
    );
}

/// Review of stop 81: a replica back from a crash does not know whose lease it
/// supported before, so for a lease it pre-votes for and promises no candidate but
/// the holder of the ballot it last promised.
#[test]
fn a_restarted_follower_supports_no_other_candidate_for_a_lease() {
    let (mut net, _client) = net("us3", |l, s| l.replicas(s)[0]);
    net.run_for(ms(500.0), ms(250.0), ServerTimer::Sweep);
    let r = net.servers[0].env.layout.replicas(ShardId(0)).to_vec();
    let lease = net.servers[0].env.timeouts.lease;
    net.crash(r[1]);
    net.restart(r[1]);
    let now = net.now;
    let g = &net.servers[r[1].0 as usize].groups[&ShardId(0)];
    assert_eq!(g.leader, None, "a restarted replica follows no one");
    let other = Ballot {
        round: g.promised.round + 1,
        node: r[2],
    };
    let holder = Ballot {
        round: g.promised.round + 1,
        node: g.promised.node,
    };
    assert_eq!(holder.node, r[0]);
    assert!(
        !Server::would_promise(g, r[2], other, now, lease),
        "another candidate within the lease"
    );
    assert!(
        Server::would_promise(g, r[0], holder, now, lease),
        "the lease holder standing again"
    );
    assert!(
        Server::would_promise(g, r[2], other, now + lease, lease),
        "anyone after the lease"
    );
}

/// A client's status question about `txn` (start `ts`, coordinator shard 0) at `coord`
/// is answered `Forgotten`.
fn assert_status_forgotten(net: &mut Net<ReplicatedLog>, client: NodeId, coord: NodeId, txn: TxnId, ts: Time) {
    let shard = ShardId(0);
    net.send(client, coord, Msg::Status { txn, shard, ts });
    assert!(matches!(net.outside.last(), Some((_, _, Msg::Forgotten { txn: t })) if *t == txn));
}
