//! Hand-driven scenarios: a tiny in-test network where the test decides which replica
//! receives what, so the paper's failure cases (§VI, Fig. 5) can be staged exactly.

use super::*;
use crate::testing::{self, call, deliver};
use crate::ClientRole;
use meridian_core::{secs, DcId, Layout, Topology};
use meridian_txn::Registry;
use std::sync::Arc;

/// The shared test network with the client played by hand: what the servers send it
/// is in `outside`.
struct Net {
    net: testing::Net<HaCommit>,
    client: NodeId,
    layout: Arc<Layout>,
}

impl std::ops::Deref for Net {
    type Target = testing::Net<HaCommit>;
    fn deref(&self) -> &Self::Target {
        &self.net
    }
}

impl std::ops::DerefMut for Net {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.net
    }
}

/// The `lan` layout (8 nodes, 8 shards) in groups of `k` with `registry`, and a
/// client node in DC 0.
fn lan_env(k: u32, registry: Registry) -> (Env, NodeId) {
    let mut layout = Layout::new(
        Topology::preset("lan").unwrap(),
        Placement::Groups {
            home: HomeRule::Spread,
            k,
        },
    )
    .unwrap();
    let client = layout.add_client(DcId(0));
    let env = Env {
        layout: Arc::new(layout),
        registry: Arc::new(registry),
        timeouts: Default::default(),
        retention: Default::default(),
    };
    (env, client)
}

impl Net {
    /// `lan` (8 nodes, 8 shards), groups of `k`.
    fn new(k: u32) -> Net {
        let (env, client) = lan_env(k, Registry::new());
        let layout = env.layout.clone();
        let servers: Vec<Server> = (0..8).map(|n| Server::new(env.clone(), NodeId(n), false)).collect();
        let mut net = testing::Net::new(servers);
        // A crashed replica's messages in flight are lost with it (the scenarios
        // below stage crashes at exact points).
        net.drop_from_down = true;
        Net { net, client, layout }
    }
    fn client_sends(&mut self, to: NodeId, m: Msg) {
        let from = self.client;
        self.net.send(from, to, m);
    }
    /// What the servers sent the client.
    fn to_client(&self) -> impl Iterator<Item = &Msg> {
        self.net.outside.iter().map(|(_, _, m)| m)
    }
    /// Advances time by `d` in sweep-sized steps, running every live server's sweep.
    fn run_for(&mut self, d: Time) {
        self.net.run_for(d, ms_(250), ServerTimer::Sweep);
    }
    fn crash(&mut self, n: u32) {
        self.net.crash(NodeId(n));
    }
    fn restart(&mut self, n: u32) {
        self.net.restart(NodeId(n));
    }
    fn replicas(&self, s: u32) -> Vec<NodeId> {
        self.layout.replicas(ShardId(s)).to_vec()
    }
    /// Sends the last operation of `txn` (one write to shard `a`, one to shard `b`) to
    /// both leaders; returns the votes received.
    fn last_op(&mut self, txn: TxnId, a: u32, b: u32) -> Vec<(ShardId, bool)> {
        self.outside.clear();
        let shards = vec![ShardId(a), ShardId(b)];
        for s in [a, b] {
            let leader = self
                .servers
                .iter()
                .find(|x| x.is_leader(ShardId(s)) && !self.down.contains(&x.me))
                .map_or(self.layout.primary(ShardId(s)), |x| x.me);
            let m = Self::last_of(txn, self.now, s, &shards);
            self.client_sends(leader, m);
        }
        self.to_client()
            .filter_map(|m| match m {
                Msg::Vote { shard, yes, .. } => Some((*shard, *yes)),
                _ => None,
            })
            .collect()
    }
    /// `txn`'s last operation at shard `s` as `last_op` sends it: one write to a key of
    /// `s` named after the transaction.
    fn last_of(txn: TxnId, ts: Time, s: u32, shards: &[ShardId]) -> Msg {
        let key = Key::from(format!("#{s}/k{}", txn.seq).as_str());
        let w = (key, VersionId { txn, seq: s }, Value::from_u64(7));
        Msg::Last(LastOp {
            txn,
            ts,
            shard: ShardId(s),
            shards: shards.to_vec(),
            reads: vec![],
            writes: vec![w],
        })
    }
    fn p2a(&mut self, txn: TxnId, shards: &[u32], to: &[NodeId], commit: bool, ts: Time) {
        for s in shards {
            for r in self.replicas(*s) {
                if !to.contains(&r) {
                    continue;
                }
                let m = Msg::P2a(P2a {
                    txn,
                    ts,
                    targets: vec![ShardId(*s)],
                    ballot: 0,
                    commit,
                    shards: vec![ShardId(shards[0]), ShardId(shards[1])],
                });
                self.client_sends(r, m);
            }
        }
    }
    /// The outcome replica `n` applied for `txn` in `shard`, if any.
    fn outcome(&self, n: NodeId, shard: u32, txn: TxnId) -> Option<bool> {
        self.servers[n.0 as usize]
            .done
            .get(&(ShardId(shard), txn))
            .map(|d| d.commit)
    }
    fn has_version(&self, n: NodeId, shard: u32, txn: TxnId) -> bool {
        let key = Key::from(format!("#{shard}/k{}", txn.seq).as_str());
        self.servers[n.0 as usize]
            .store
            .contains(&key, VersionId { txn, seq: shard })
    }
}

impl Net {
    /// Groups of 3, and T1 voted yes by the leaders of shards A = 0 and B = 4 (its
    /// votes replicated): the start of the leader-failure scenarios.
    fn voted() -> (Net, u32, u32) {
        let mut net = Net::new(3);
        let (a, b) = (0, 4);
        let votes = net.last_op(t(1), a, b);
        assert!(votes.len() == 2 && votes.iter().all(|(_, y)| *y), "{votes:?}");
        (net, a, b)
    }
}

fn ms_(x: u64) -> Time {
    x * 1_000_000
}

fn t(seq: u32) -> TxnId {
    TxnId { client: 0, seq }
}

/// Fig. 5: the client crashes with ten voted transactions; it had sent its COMMIT for
/// the tenth to three of shard A's five replicas only. The recovery proposers abort the
/// nine with no accepted decision and commit the tenth everywhere (shard B's replicas
/// never heard from the client); afterwards nothing is locked anywhere.
#[test]
fn client_crash_recovery_aborts_the_unaccepted_and_commits_the_accepted() {
    let mut net = Net::new(5);
    let (a, b) = (0, 3);
    for i in 1..=10 {
        let votes = net.last_op(t(i), a, b);
        assert_eq!(votes.len(), 2, "txn {i}: {votes:?}");
        assert!(votes.iter().all(|(_, y)| *y), "txn {i}: {votes:?}");
    }
    let ra = net.replicas(a);
    net.p2a(t(10), &[a, b], &ra[..3], true, 0);
    // Replica quorum of A accepted: A's leader learnt the commit and applied it already.
    assert_eq!(net.outcome(ra[0], a, t(10)), Some(true));
    assert!(net.has_version(ra[0], a, t(10)));
    // B never heard the decision: its leader still holds T10's lock.
    let rb = net.replicas(b);
    assert_eq!(net.outcome(rb[0], b, t(10)), None);
    assert!(!net.servers[rb[0].0 as usize].locks.is_empty());
    // The client is gone. Past the idle timeout, recovery proposers take over.
    net.run_for(secs(40.0));
    for i in 1..=10 {
        for (s, reps) in [(a, &ra), (b, &rb)] {
            for r in reps.iter() {
                let want = i == 10;
                assert_eq!(net.outcome(*r, s, t(i)), Some(want), "txn {i} shard {s} at {r:?}");
                assert_eq!(net.has_version(*r, s, t(i)), want, "txn {i} shard {s} at {r:?}");
            }
        }
    }
    for s in &net.servers {
        assert!(s.locks.is_empty(), "n{} still holds locks", s.me.0);
        assert!(s.proposals.is_empty(), "n{} still proposing", s.me.0);
    }
}

/// A participant leader fails after its vote was replicated and after the client's
/// COMMIT reached its followers: a follower takes over from the replicated context and
/// the accepted decision, applies the commit and frees the locks; the failed replica
/// restarts with no memory and copies the data back from the new leader.
#[test]
fn leader_failure_is_covered_by_the_replicated_vote() {
    let (mut net, a, b) = Net::voted();
    let ra = net.replicas(a);
    net.crash(ra[0].0);
    let mut all: Vec<NodeId> = net.replicas(a);
    all.extend(net.replicas(b));
    net.p2a(t(1), &[a, b], &all, true, 0);
    // The client got a majority of acknowledgements from both groups: it has ended.
    let acks_a = net
        .to_client()
        .flat_map(|m| match m {
            Msg::P2b { parts, .. } => parts.clone(),
            _ => vec![],
        })
        .filter(|p| p.ok && p.shard == ShardId(a))
        .count();
    assert_eq!(acks_a, 2);
    net.run_for(secs(5.0));
    let new_leader = net
        .servers
        .iter()
        .find(|s| s.is_leader(ShardId(a)) && !net.down.contains(&s.me))
        .map(|s| s.me)
        .unwrap();
    assert_ne!(new_leader, ra[0]);
    assert_eq!(net.outcome(new_leader, a, t(1)), Some(true));
    assert!(net.has_version(new_leader, a, t(1)));
    assert!(net.servers[new_leader.0 as usize].locks.is_empty());
    net.restart(ra[0].0);
    net.run_for(secs(3.0));
    assert!(
        net.has_version(ra[0], a, t(1)),
        "restarted replica copied the data back"
    );
    // And the group takes new transactions again.
    let votes = net.last_op(t(2), a, b);
    assert!(votes.len() == 2 && votes.iter().all(|(_, y)| *y), "{votes:?}");
}

/// Three of five replicas of a shard fail: the group has no quorum, so nothing commits
/// and nothing is applied anywhere; when the failed replicas come back without memory
/// the group still refuses to decide (they may have forgotten an acceptance), and no
/// replica ever applies a decision the others contradict.
#[test]
fn losing_a_majority_stalls_without_inconsistency() {
    let mut net = Net::new(5);
    let (a, b) = (0, 3);
    let votes = net.last_op(t(1), a, b);
    assert!(votes.iter().all(|(_, y)| *y));
    let ra = net.replicas(a);
    for r in &ra[..3] {
        net.crash(r.0);
    }
    let mut all = ra.clone();
    all.extend(net.replicas(b));
    net.p2a(t(1), &[a, b], &all, true, 0);
    net.run_for(secs(30.0));
    // B's group is whole: it learnt COMMIT from its own majority and applied it.
    for r in net.replicas(b) {
        if !net.down.contains(&r) {
            assert_eq!(net.outcome(r, b, t(1)), Some(true));
        }
    }
    // A's survivors accepted but never became a quorum with a leader: no new leader, and
    // recovery there can never choose ABORT (phase 1 needs a majority of A).
    for r in &ra[3..] {
        assert!(!net.servers[r.0 as usize].is_leader(ShardId(a)));
        assert_ne!(net.outcome(*r, a, t(1)), Some(false));
    }
    // A new transaction on A gets no vote.
    let votes = net.last_op(t(2), a, b);
    assert!(!votes.iter().any(|(s, y)| *s == ShardId(a) && *y), "{votes:?}");
}

impl Net {
    /// The live leader of shard `s`.
    fn leader_of(&self, s: u32) -> Option<NodeId> {
        self.servers
            .iter()
            .find(|x| x.is_leader(ShardId(s)) && !self.down.contains(&x.me))
            .map(|x| x.me)
    }
    /// A one-shard last operation of `txn` writing `key` (of shard `s`) at `s`'s live
    /// leader; returns the votes the client received.
    fn last_write(&mut self, txn: TxnId, ts: Time, s: u32, key: &str) -> Vec<(TxnId, bool)> {
        self.outside.clear();
        let w = (Key::from(key), VersionId { txn, seq: 0 }, Value::from_u64(7));
        let leader = self.leader_of(s).expect("a leader");
        self.client_sends(
            leader,
            Msg::Last(LastOp {
                txn,
                ts,
                shard: ShardId(s),
                shards: vec![ShardId(s)],
                reads: vec![],
                writes: vec![w],
            }),
        );
        self.votes()
    }
    fn votes(&self) -> Vec<(TxnId, bool)> {
        self.to_client()
            .filter_map(|m| match m {
                Msg::Vote { txn, yes, .. } => Some((*txn, *yes)),
                _ => None,
            })
            .collect()
    }
    /// Delivers one hand-made message and everything it causes.
    fn inject(&mut self, from: NodeId, to: NodeId, m: Msg) {
        self.net.send(from, to, m);
    }
}

fn ctx_of(txn: TxnId, s: u32, seq: u64) -> TCtx {
    TCtx {
        txn,
        ts: 0,
        shards: vec![ShardId(s)],
        reads: vec![],
        writes: vec![],
        seq,
    }
}

/// Issue 14, H1: a candidate must not lead because a message names its view. Replica
/// ra[1] stands for view 1 (which it leads) and has merged nobody's state yet; a
/// `Replicate` for view 1 from another replica (an old leader that had adopted view 1
/// without stepping down) made it leader without the merge, so it never re-took the
/// locks of voted transactions nor learnt recent commits.
#[test]
fn a_candidate_leads_only_through_its_own_merge() {
    let mut net = Net::new(3);
    let a = 0;
    let ra = net.replicas(a);
    let now = net.now;
    let _ = call(&mut net.servers[ra[1].0 as usize], now, ra[1], |s, cx| {
        s.stand(ShardId(a), 1, cx)
    });
    let m = Msg::Replicate {
        shard: ShardId(a),
        view: 1,
        ctx: ctx_of(t(9), a, 1),
    };
    let _ = deliver(&mut net.servers[ra[1].0 as usize], now, ra[1], ra[0], m);
    assert!(
        !net.servers[ra[1].0 as usize].is_leader(ShardId(a)),
        "a candidate became leader without merging a majority's state"
    );
}

/// Issue 14, H1: an old leader that hears from the leader of a later view steps down:
/// its unvoted transactions abort and it keeps no locks. Before, adopting the view
/// from a `Replicate` kept them, and when the waiting transaction got its lock the old
/// leader replicated its vote under the new view's number.
#[test]
fn an_old_leader_steps_down_on_a_later_views_replication() {
    let mut net = Net::new(3);
    let a = 0;
    let ra = net.replicas(a);
    assert_eq!(net.leader_of(a), Some(ra[0]));
    // T1 (older) votes and holds #0/x; T2 (younger) waits for it.
    assert_eq!(net.last_write(t(1), 1, a, "#0/x"), vec![(t(1), true)]);
    assert_eq!(net.last_write(t(2), 2, a, "#0/x"), vec![]);
    // ra[2], leader of view 2, replicates to the old leader.
    let m = Msg::Replicate {
        shard: ShardId(a),
        view: 2,
        ctx: ctx_of(t(3), a, 5),
    };
    net.outside.clear();
    net.inject(ra[2], ra[0], m);
    let old = &net.servers[ra[0].0 as usize];
    assert!(!old.is_leader(ShardId(a)));
    assert!(old.locks.is_empty(), "a follower holds no locks");
    assert_eq!(net.votes(), vec![(t(2), false)], "the waiting transaction aborted");
}

/// Issue 14, H2: a leader that crashes and restarts before anyone replaced it must not
/// resume leading its old view: it forgot the locks of voted, undecided transactions.
/// It re-syncs, then leads only through a view change whose merge re-takes them, so a
/// younger transaction writing the same key waits instead of voting yes.
#[test]
fn a_restarted_leader_retakes_the_locks_of_voted_transactions() {
    let mut net = Net::new(3);
    let a = 0;
    let ra = net.replicas(a);
    assert_eq!(net.last_write(t(1), 1, a, "#0/x"), vec![(t(1), true)]);
    net.crash(ra[0].0);
    net.restart(ra[0].0);
    let votes = net.last_write(t(2), 2, a, "#0/x");
    assert!(
        !votes.contains(&(t(2), true)),
        "T2 voted yes on #0/x while T1 is voted and undecided: {votes:?}"
    );
    let leader = net.leader_of(a).expect("the group has a leader again");
    assert!(
        !net.servers[leader.0 as usize].locks.is_empty(),
        "T1's lock was re-taken"
    );
}

/// Issue 14, L1 (a guard, not the failing interleaving: the seed test in
/// `crates/sim/tests/faults.rs` is the one that failed before the fix): the client's
/// COMMIT (ballot 0) was accepted by the leader and one follower of group A (chosen)
/// but only the leader's answer reached the client. Both followers then restart one
/// after the other, and each refuses ballot 0 for a transaction older than its
/// restart. The client, alive, keeps re-sending to the two replicas that have not
/// answered; its re-sends must be answered with the outcome.
#[test]
fn a_ballot_zero_refused_by_restarted_replicas_ends_by_recovery() {
    let (mut net, a, b) = Net::voted();
    let ra = net.replicas(a);
    let mut to = ra[..2].to_vec();
    to.extend(net.replicas(b));
    net.p2a(t(1), &[a, b], &to, true, 0);
    assert_eq!(net.outcome(ra[0], a, t(1)), Some(true), "chosen by ra[0] and ra[1]");
    net.run_for(secs(1.0));
    net.crash(ra[1].0);
    net.restart(ra[1].0);
    net.run_for(secs(2.0));
    net.crash(ra[2].0);
    net.restart(ra[2].0);
    let mut told = None;
    for _ in 0..30 {
        net.outside.clear();
        net.p2a(t(1), &[a, b], &ra[1..], true, 0);
        told = net.to_client().find_map(|m| match m {
            Msg::P2b { parts, .. } => parts.iter().find_map(|p| p.chosen),
            _ => None,
        });
        if told.is_some() {
            break;
        }
        net.run_for(secs(1.0));
    }
    assert_eq!(
        told,
        Some(true),
        "the client's re-sends were never answered with the outcome"
    );
}

/// Issue 19: a younger transaction that voted yes at a leader blocks an older one's
/// last operation there. The leader cannot abort it any more (it voted), so it asks
/// the younger one's client, its coordinator, to; without that, two transactions each
/// voted at one leader and waiting at the other's waited for the 3 s vote timeout.
#[test]
fn a_voted_younger_transaction_is_wounded_through_its_client() {
    let mut net = Net::new(3);
    let (old, young) = (t(1), t(2));
    let v = net.last_write(young, ms_(200), 0, "#0/k");
    assert_eq!(v, vec![(young, true)]);
    let v = net.last_write(old, ms_(100), 0, "#0/k");
    assert!(v.is_empty(), "the older one waits for the lock: {v:?}");
    assert!(
        net.to_client()
            .any(|m| matches!(m, Msg::Wound { txn } if *txn == young)),
        "no wound reached the younger one's client"
    );
}

/// Issue 19 (restart rule without a clock): a one-shard transaction. The client's
/// COMMIT at ballot 0 is accepted by follower R of its group, which crashes and
/// restarts, re-syncing from the other two before either has accepted anything. Only
/// then does the client's COMMIT, in flight all along, reach the third replica, C,
/// which is cut off right after. If C accepts it, COMMIT is chosen (R before its crash,
/// and C) and the client hears two acceptances; a recovery run later without C must
/// then not choose ABORT from R's "nothing accepted" and the leader's. The earlier rule
/// (R answers any ballot issued after its restart plus the fail-over time) did exactly
/// that. Now R's re-sync fences C first, so C refuses the late COMMIT, the client never
/// hears a majority, and either outcome is consistent; every replica must end with
/// the same one, and with COMMIT if the client heard a majority accept it.
#[test]
fn a_restarted_replica_never_completes_a_recovery_majority_for_what_it_forgot() {
    let mut net = Net::new(3);
    let a = 0;
    net.now = secs(5.0);
    let ts = net.now;
    let (txn, shards) = (t(1), vec![ShardId(a)]);
    let ra = net.replicas(a);
    let (leader, r, c) = (ra[0], ra[1], ra[2]);
    let key = Key::from("#0/k1");
    let w = (key, VersionId { txn, seq: 0 }, Value::from_u64(7));
    net.client_sends(
        leader,
        Msg::Last(LastOp {
            txn,
            ts,
            shard: ShardId(a),
            shards: shards.clone(),
            reads: vec![],
            writes: vec![w],
        }),
    );
    assert!(
        net.to_client().any(|m| matches!(m, Msg::Vote { yes: true, .. })),
        "the leader voted yes"
    );
    net.outside.clear();
    let commit = |net: &mut Net, to: NodeId| {
        let m = Msg::P2a(P2a {
            txn,
            ts,
            targets: vec![ShardId(a)],
            ballot: 0,
            commit: true,
            shards: shards.clone(),
        });
        net.client_sends(to, m);
    };
    commit(&mut net, r);
    net.now += ms_(100);
    net.crash(r.0);
    net.restart(r.0);
    net.run_for(ms_(500));
    // The COMMIT that was in flight to C all along; C is cut off at once (its report
    // to the leader lost with it).
    net.drop_once = Some(Box::new(move |from, _, m| {
        from == c && matches!(m, Msg::Accepted(Accepted { .. }))
    }));
    commit(&mut net, c);
    net.down.insert(c);
    let accepted: BTreeSet<NodeId> = net
        .outside
        .iter()
        .filter(|(_, _, m)| matches!(m, Msg::P2b { ballot: 0, parts, .. } if parts.iter().any(|p| p.ok)))
        .map(|(from, _, _)| *from)
        .collect();
    let client_saw_commit = accepted.len() >= 2;
    net.run_for(secs(30.0));
    // C back: everyone ends with one outcome.
    net.down.remove(&c);
    net.run_for(secs(30.0));
    let outcomes: Vec<Option<bool>> = ra.iter().map(|n| net.outcome(*n, a, txn)).collect();
    assert!(
        outcomes.iter().all(|o| o.is_some() && *o == outcomes[0]),
        "replicas disagree or never decided: {outcomes:?}"
    );
    if client_saw_commit {
        assert_eq!(
            outcomes[0],
            Some(true),
            "the client heard {accepted:?} accept its COMMIT, and the replicas aborted"
        );
    }
    assert!(
        !client_saw_commit,
        "C took the late COMMIT although R's re-sync fenced it"
    );
}

/// A read answered by a leader that is then replaced, while an update to the key
/// commits through the new view: the client (which re-sends an unanswered read to the
/// next replica and takes the first answer) may hold the old answer and the new
/// leader's lock at once. The new leader's vote checks the version read, not only the
/// lock, and votes no; a read answered by the voting leader itself votes yes.
#[test]
fn a_read_answered_by_a_replaced_leader_is_refused_at_the_vote() {
    let mut net = Net::new(3);
    let s = 0;
    let key = Key::from("#0/x");
    let read = |txn: TxnId| {
        Msg::Read(Read {
            txn,
            ts: 0,
            shard: ShardId(s),
            key: key.clone(),
            shards: vec![ShardId(s)],
        })
    };
    let answers = |net: &Net| -> Vec<Option<VersionId>> {
        net.to_client()
            .filter_map(|m| match m {
                Msg::ReadReply { result: Ok((v, _)), .. } => Some(*v),
                _ => None,
            })
            .collect()
    };
    let old = net.leader_of(s).expect("a leader");
    net.client_sends(old, read(t(1)));
    assert_eq!(
        answers(&net),
        vec![None],
        "T1 read the initial version at the old leader"
    );
    // The old leader goes; the group elects another.
    net.crash(old.0);
    net.run_for(secs(5.0));
    let new = net.leader_of(s).expect("a new leader");
    assert_ne!(new, old);
    // T2 writes the key through the new view and commits.
    let ts2 = net.now;
    assert_eq!(net.last_write(t(2), ts2, s, "#0/x"), vec![(t(2), true)]);
    for r in net.replicas(s) {
        if net.down.contains(&r) {
            continue;
        }
        let m = Msg::P2a(P2a {
            txn: t(2),
            ts: ts2,
            targets: vec![ShardId(s)],
            ballot: 0,
            commit: true,
            shards: vec![ShardId(s)],
        });
        net.client_sends(r, m);
    }
    assert_eq!(net.outcome(new, s, t(2)), Some(true));
    let v2 = Some(VersionId { txn: t(2), seq: 0 });
    // T1's re-sent read takes a lock at the new leader (its answer, v2, comes too late:
    // the client already took the old leader's).
    net.outside.clear();
    net.client_sends(new, read(t(1)));
    assert_eq!(answers(&net), vec![v2]);
    let last = |txn: TxnId, v: Option<VersionId>| {
        Msg::Last(LastOp {
            txn,
            ts: 0,
            shard: ShardId(s),
            shards: vec![ShardId(s)],
            reads: vec![(key.clone(), v)],
            writes: vec![],
        })
    };
    net.outside.clear();
    net.client_sends(new, last(t(1), None));
    let why: Vec<_> = net
        .to_client()
        .filter_map(|m| match m {
            Msg::Vote { yes, reason, .. } => Some((*yes, reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(why, vec![(false, Some(AbortReason::ReadVersionChanged))]);
    // The same read answered by the voting leader itself is valid.
    net.outside.clear();
    net.client_sends(new, read(t(3)));
    assert_eq!(answers(&net), vec![v2]);
    net.outside.clear();
    net.client_sends(new, last(t(3), v2));
    assert_eq!(net.votes(), vec![(t(3), true)]);
}

/// A voted transaction whose client went silent (cut off by a partition, say) and that
/// another transaction waits behind is recovered after the fail-over time, not after
/// `idle` (10 s): the waiter gets its lock within a few seconds.
#[test]
fn a_silent_voted_transaction_that_blocks_another_is_recovered_after_the_failover_time() {
    let mut net = Net::new(3);
    let s = 0;
    let ts1 = net.now;
    assert_eq!(net.last_write(t(1), ts1, s, "#0/x"), vec![(t(1), true)]);
    // The client of T1 is never heard again. T2, younger, waits for T1's lock.
    net.run_for(ms_(500));
    let ts2 = net.now;
    assert_eq!(net.last_write(t(2), ts2, s, "#0/x"), vec![]);
    net.outside.clear();
    net.run_for(secs(3.0));
    let leader = net.leader_of(s).expect("a leader");
    assert_eq!(net.outcome(leader, s, t(1)), Some(false), "T1 recovered (aborted)");
    assert_eq!(net.votes(), vec![(t(2), true)], "T2 got the lock and voted");
}

/// A read re-sent after the fail-over time moves the client's guess to the group's
/// next replica; when the first replica, the live leader that only made the read wait
/// for a lock, answers after all, the client follows it: its last operation goes to the
/// replica that answered, not to the guess (which, cut off, would leave the vote
/// unanswered for the vote timeout while the transaction's locks stall others: the
/// cut-off-DC sweep's seed 47).
#[test]
fn a_client_sends_its_last_operation_to_the_replica_that_answered_its_read() {
    let (env, me) = lan_env(3, testing::ycsb_registry());
    let mut c = Client::new(env.clone(), me, ClientId(0));
    let call_ = testing::ycsb_call(&[("#0/x", b""), ("#0/x", b"v")]);
    let e = call(&mut c, 0, me, |c, cx| c.submit(t(1), call_, cx));
    let leader = env.layout.primary(ShardId(0));
    assert!(
        matches!(e.sent()[..], [(to, Msg::Read(Read { .. }))] if to == leader),
        "{:?}",
        e.sent()
    );
    let e = testing::fire(&mut c, secs(1.0), me, client::ClientTimer::Retry);
    let guess = env.layout.replicas(ShardId(0))[1];
    assert!(
        matches!(e.sent()[..], [(to, Msg::Read(Read { .. }))] if to == guess),
        "the read re-sent to the next replica: {:?}",
        e.sent()
    );
    let reply = Msg::ReadReply {
        txn: t(1),
        key: Key::from("#0/x"),
        result: Ok((None, None)),
    };
    let e = deliver(&mut c, secs(1.1), me, leader, reply);
    let lasts: Vec<NodeId> = e
        .sent()
        .iter()
        .filter(|(_, m)| matches!(m, Msg::Last(_)))
        .map(|(to, _)| *to)
        .collect();
    assert_eq!(
        lasts,
        vec![leader],
        "the last operation goes to the replica that answered"
    );
}

impl Net {
    /// The votes for `shard` that `m`, sent by the client to `to`, brings back (with
    /// the reason of a no).
    fn votes_for(&mut self, to: NodeId, shard: u32, m: Msg) -> Vec<(bool, Option<AbortReason>)> {
        self.outside.clear();
        self.client_sends(to, m);
        self.to_client()
            .filter_map(|m| match m {
                Msg::Vote {
                    shard: s, yes, reason, ..
                } if *s == ShardId(shard) => Some((*yes, reason.clone())),
                _ => None,
            })
            .collect()
    }
    /// The client asks `to` for `txn`'s vote at `shard`.
    fn ask_vote(&mut self, to: NodeId, txn: TxnId, shard: u32) -> Vec<(bool, Option<AbortReason>)> {
        let m = Msg::VoteQuery {
            txn,
            shard: ShardId(shard),
        };
        self.votes_for(to, shard, m)
    }
}

/// The leader of shard A fails before the client's last operation reaches it (the
/// message is lost with it). A new leader takes over; asked for its vote (the client's
/// `ClientTimer::Retry` while voting), it decides no, as the paper lets a new leader
/// "make a new decision for the vote" (§VI), and refuses a late copy of the last
/// operation. The client learns within the fail-over time, not at the vote timeout.
#[test]
fn a_new_leader_asked_for_a_vote_it_never_made_decides_no() {
    let mut net = Net::new(3);
    let (a, b) = (0, 4);
    let ra = net.replicas(a);
    net.crash(ra[0].0);
    let votes = net.last_op(t(1), a, b);
    assert_eq!(
        votes,
        vec![(ShardId(b), true)],
        "only B's leader got the last operation"
    );
    net.run_for(secs(2.0));
    let leader = net.leader_of(a).expect("a new leader of A");
    assert_ne!(leader, ra[0]);
    // A follower names the leader.
    let follower = *ra.iter().find(|r| **r != leader && **r != ra[0]).unwrap();
    assert_eq!(net.ask_vote(follower, t(1), a), vec![]);
    assert!(
        net.to_client()
            .any(|m| matches!(m, Msg::NotLeader { leader: l, .. } if *l == leader)),
        "a follower's hint: {:?}",
        net.outside
    );
    let no = |r| vec![(false, Some(r))];
    assert_eq!(net.ask_vote(leader, t(1), a), no(AbortReason::LastOpLost));
    // A late last operation is refused: the decision stands.
    let late = Net::last_of(t(1), 0, a, &[ShardId(a), ShardId(b)]);
    assert_eq!(net.votes_for(leader, a, late), no(AbortReason::AbortedHere));
}

/// The leader of shard A replicated its yes vote and failed before the vote reached the
/// client. Asked for the vote, the new leader answers no from the context it merged in
/// the view change: a merged context may have reached only a minority of the old view
/// (campaign seed 137 confirmed such a one, re-replicated, and lost an update), and
/// the client, which has no vote from A, has not proposed COMMIT, so a no is safe. A
/// leader that replicated its own vote in its view, asked again (its answer was lost),
/// answers yes again.
#[test]
fn a_new_leader_never_confirms_a_vote_it_merged_but_a_leader_repeats_its_own() {
    let (mut net, a, b) = Net::voted();
    let lb = net.leader_of(b).expect("B's leader");
    assert_eq!(net.ask_vote(lb, t(1), b), vec![(true, None)], "B's own vote, again");
    let ra = net.replicas(a);
    net.crash(ra[0].0);
    net.run_for(secs(2.0));
    let leader = net.leader_of(a).expect("a new leader of A");
    assert_ne!(leader, ra[0]);
    assert!(
        net.servers[leader.0 as usize].txns.contains_key(&(ShardId(a), t(1))),
        "merged"
    );
    let lost = vec![(false, Some(AbortReason::ParticipantLostLeadership))];
    assert_eq!(net.ask_vote(leader, t(1), a), lost);
    // A duplicate of the last operation is not confirmed either.
    let dup = Net::last_of(t(1), 0, a, &[ShardId(a), ShardId(b)]);
    assert_eq!(net.votes_for(leader, a, dup), lost);
}

/// A replica whose recovery ballot gave way to a higher one still learns the decision
/// when a later phase-2 answer for its old ballot says it is chosen: the group's
/// leader, which holds the transaction's locks, waited for a recovery of its own
/// before (about two seconds in the one-second crash scan).
#[test]
fn a_chosen_decision_in_a_phase_2_answer_is_learnt_without_a_live_proposal() {
    let (mut net, a, _) = Net::voted();
    let ra = net.replicas(a);
    assert!(net.servers[ra[0].0 as usize].proposals.is_empty());
    let part = P2bPart {
        shard: ShardId(a),
        ok: false,
        promised: 0,
        chosen: Some(true),
        forgotten: false,
    };
    net.inject(
        ra[1],
        ra[0],
        Msg::P2b {
            txn: t(1),
            ballot: 5 << 20 | 2,
            parts: vec![part],
        },
    );
    assert_eq!(net.outcome(ra[0], a, t(1)), Some(true));
    assert!(net.has_version(ra[0], a, t(1)));
}

/// A replica that never promised a recovery ballot restarts with a floor of 1 (every
/// recovery ballot passes; the client's 0 does not): its durable ballot word says so.
/// Before, the word read 0 until a first promise, which means "no disk", and the
/// floor came from the clock, one `failover` ahead, so no recovery of a transaction
/// begun before the restart could win for that second. A process that truly lost the
/// word still takes its floor from the clock.
#[test]
fn a_restarted_replica_that_promised_nothing_fences_with_ballot_1() {
    let mut net = Net::new(3);
    net.run_for(secs(1.0));
    net.crash(1);
    net.run_for(secs(1.0));
    net.restart(1);
    let s = &net.servers[1];
    assert_eq!(s.ballot_floor, 1);
    assert!(s.may_accept_ballot(0, 1 << 20 | 1) && !s.may_accept_ballot(0, 0));
    // No disk at all: a server built anew and recovered.
    let (env, _) = lan_env(3, Registry::new());
    let mut fresh = Server::new(env, NodeId(1), false);
    call(&mut fresh, secs(5.0), NodeId(1), |s, cx| {
        meridian_core::Actor::on_recover(s, cx)
    });
    assert!(fresh.ballot_floor > 5_000 << 20, "{}", fresh.ballot_floor);
}

/// While voting, a shard whose vote has not come within the fail-over time is asked
/// for it at the group's next replica; a redirect is followed by the question again,
/// never by the last operation (which two leaders could then vote on), and a hint
/// naming the replica that sent it (it knows no leader) moves on to the next replica.
#[test]
fn a_client_asks_a_silent_shard_for_its_vote_and_never_resends_the_last_operation() {
    let (env, me) = lan_env(3, testing::ycsb_registry());
    let mut c = Client::new(env.clone(), me, ClientId(0));
    let call_ = testing::ycsb_call(&[("#0/x", b"v")]);
    let e = call(&mut c, 0, me, |c, cx| c.submit(t(1), call_, cx));
    let reps = env.layout.replicas(ShardId(0)).to_vec();
    assert!(
        matches!(e.sent()[..], [(to, Msg::Last(_))] if to == reps[0]),
        "{:?}",
        e.sent()
    );
    let e = testing::fire(&mut c, secs(1.0), me, client::ClientTimer::Retry);
    assert!(
        matches!(e.sent()[..], [(to, Msg::VoteQuery { .. })] if to == reps[1]),
        "asked at the next replica: {:?}",
        e.sent()
    );
    let hint = |leader| Msg::NotLeader {
        txn: t(1),
        shard: ShardId(0),
        leader,
    };
    let e = deliver(&mut c, secs(1.01), me, reps[1], hint(reps[2]));
    assert!(
        matches!(e.sent()[..], [(to, Msg::VoteQuery { .. })] if to == reps[2]),
        "the hint is asked, not sent the last operation: {:?}",
        e.sent()
    );
    let e = deliver(&mut c, secs(1.02), me, reps[2], hint(reps[2]));
    assert!(
        matches!(e.sent()[..], [(to, Msg::VoteQuery { .. })] if to == reps[0]),
        "a replica naming itself: the next one: {:?}",
        e.sent()
    );
    let no = Msg::Vote {
        txn: t(1),
        shard: ShardId(0),
        yes: false,
        reason: Some(AbortReason::LastOpLost),
    };
    let e = deliver(&mut c, secs(1.03), me, reps[0], no);
    assert!(
        e.sent()
            .iter()
            .all(|(_, m)| matches!(m, Msg::P2a(P2a { commit: false, .. }))),
        "the client aborts: {:?}",
        e.sent()
    );
    assert!(!e.sent().is_empty());
}

impl Net {
    /// Groups of 3 whose replicas forget a settled transaction 5 s after its decision,
    /// one second in (so that start times are above 0).
    fn forgetting() -> Net {
        let mut net = Net::new(3);
        for s in net.servers.iter_mut() {
            s.forget_after = secs(5.0);
        }
        net.run_for(secs(1.0));
        net
    }
    /// T's last operation and the client's COMMIT to every replica of shards `a`, `b`
    /// that is up; returns T's start time.
    fn commit(&mut self, txn: TxnId, a: u32, b: u32) -> Time {
        let ts = self.now;
        let votes = self.last_op(txn, a, b);
        assert!(votes.len() == 2 && votes.iter().all(|(_, y)| *y), "{votes:?}");
        let mut all = self.replicas(a);
        all.extend(self.replicas(b));
        self.p2a(txn, &[a, b], &all, true, ts);
        ts
    }
}

/// A decided transaction is forgotten once every replica of every participant settled
/// it (`hacommit:forget`), its writes stay, the shard's mark covers it, and a late copy
/// of its last operation or of the client's COMMIT is refused and leaves no state.
#[test]
fn a_settled_transaction_is_forgotten_and_late_copies_of_it_are_refused() {
    let mut net = Net::forgetting();
    let (a, b) = (0, 4);
    let ts = net.commit(t(1), a, b);
    net.run_for(secs(1.0));
    let mut all: Vec<(u32, NodeId)> = net.replicas(a).into_iter().map(|r| (a, r)).collect();
    all.extend(net.replicas(b).into_iter().map(|r| (b, r)));
    for (s, r) in &all {
        assert_eq!(net.outcome(*r, *s, t(1)), Some(true), "shard {s} at {r:?}");
    }
    net.run_for(secs(10.0));
    for (s, r) in &all {
        let srv = &net.servers[r.0 as usize];
        assert_eq!(net.outcome(*r, *s, t(1)), None, "not forgotten: shard {s} at {r:?}");
        assert!(
            net.has_version(*r, *s, t(1)),
            "its write went with it: shard {s} at {r:?}"
        );
        assert!(srv.groups[&ShardId(*s)].forgot_ts >= ts, "mark below it at {r:?}");
        assert!(srv.settling.is_empty(), "{r:?} still settling");
    }
    // Late copies: the last operation is voted no, the COMMIT accepted nowhere, and no
    // replica keeps anything of T1.
    net.outside.clear();
    let shards = [ShardId(a), ShardId(b)];
    for s in [a, b] {
        let leader = net
            .servers
            .iter()
            .find(|x| x.is_leader(ShardId(s)))
            .expect("a leader")
            .me;
        let m = Net::last_of(t(1), ts, s, &shards);
        net.client_sends(leader, m);
    }
    let votes: Vec<bool> = net
        .to_client()
        .filter_map(|m| match m {
            Msg::Vote { yes, .. } => Some(*yes),
            _ => None,
        })
        .collect();
    assert!(votes.len() == 2 && votes.iter().all(|y| !*y), "{votes:?}");
    let reasons: Vec<_> = net
        .to_client()
        .filter_map(|m| match m {
            Msg::Vote { reason, .. } => reason.clone(),
            _ => None,
        })
        .collect();
    assert!(
        reasons.iter().all(|r| *r == AbortReason::OlderThanForgotten),
        "{reasons:?}"
    );
    let everyone: Vec<NodeId> = all.iter().map(|(_, r)| *r).collect();
    net.p2a(t(1), &[a, b], &everyone, true, ts);
    let accepted = net
        .to_client()
        .flat_map(|m| match m {
            Msg::P2b { parts, .. } => parts.clone(),
            _ => vec![],
        })
        .filter(|p| p.ok || !p.forgotten)
        .count();
    assert_eq!(accepted, 0, "a replica accepted it, or did not say it forgot it");
    net.run_for(secs(5.0));
    for s in &net.servers {
        assert!(s.txns.is_empty(), "n{} holds state for a forgotten transaction", s.me.0);
        assert!(s.done.is_empty(), "n{} decided it again", s.me.0);
        assert!(s.locks.is_empty(), "n{} holds locks", s.me.0);
    }
}

/// A replica that is down when a transaction is decided keeps every other replica from
/// forgetting it (it may hold its context undecided, or lack its writes); once it is
/// back and has the decision, everyone forgets it.
#[test]
fn a_replica_that_is_down_keeps_a_decision_from_being_forgotten() {
    let mut net = Net::forgetting();
    let (a, b) = (0, 4);
    let ra = net.replicas(a);
    net.crash(ra[2].0);
    net.commit(t(1), a, b);
    net.run_for(secs(15.0));
    for r in &ra[..2] {
        assert_eq!(
            net.outcome(*r, a, t(1)),
            Some(true),
            "forgotten at {r:?} while a replica is down"
        );
    }
    for r in net.replicas(b) {
        assert_eq!(
            net.outcome(r, b, t(1)),
            Some(true),
            "forgotten at {r:?} while a replica is down"
        );
    }
    net.restart(ra[2].0);
    net.run_for(secs(20.0));
    for s in &net.servers {
        assert!(
            s.done.is_empty(),
            "n{} still holds it: {:?} {:?}",
            s.me.0,
            s.settling,
            s.done.get(&(ShardId(a), t(1))).map(|d| (d.ts, d.shards.clone(), d.at))
        );
    }
    assert!(net.has_version(ra[2], a, t(1)), "the restarted replica lacks the write");
}

/// After a transaction is forgotten everywhere, late copies of a recovery's phase 1
/// (answered "forgotten") and of its replication bring it back nowhere, also through
/// the view change that follows the leader's crash: ABORT is never chosen for the
/// committed transaction. (Reviews: in the first version the late phase 1 created a
/// promise, and a recovery from it proposed ABORT to replicas that all promised
/// afresh; in the second, a follower took the late replication, and a view change
/// would have spread the context through the group.)
#[test]
fn late_copies_of_a_forgotten_transactions_phase_1_and_replication_decide_nothing() {
    let mut net = Net::forgetting();
    let (a, b) = (0, 4);
    let ts = net.commit(t(1), a, b);
    net.run_for(secs(12.0));
    let ra = net.replicas(a);
    assert!(net.servers.iter().all(|s| s.done.is_empty()), "not forgotten");
    // A recovery's phase 1, late.
    let p1a = Msg::P1a(P1a {
        txn: t(1),
        ts,
        shard: ShardId(a),
        ballot: (99 << 20) | 3,
        shards: vec![ShardId(a), ShardId(b)],
    });
    net.outside.clear();
    net.inject(ra[2], ra[0], p1a);
    assert!(
        net.servers[ra[0].0 as usize].txns.is_empty(),
        "a late phase 1 made state"
    );
    // The vote's replication, late, at a follower: it holds the context and, the
    // client being silent, recovers the transaction after the idle time.
    let follower = ra[2];
    let leader = net
        .servers
        .iter()
        .find(|s| s.is_leader(ShardId(a)))
        .expect("a leader")
        .me;
    let view = net.servers[follower.0 as usize].groups[&ShardId(a)].view;
    let mut ctx = ctx_of(t(1), a, 1);
    ctx.ts = ts;
    ctx.shards = vec![ShardId(a), ShardId(b)];
    net.inject(
        leader,
        follower,
        Msg::Replicate {
            shard: ShardId(a),
            view,
            ctx,
        },
    );
    assert!(
        net.servers[follower.0 as usize].txns.is_empty(),
        "a late replication made state"
    );
    net.crash(leader.0);
    net.run_for(secs(30.0));
    assert!(
        net.servers.iter().any(|s| s.me != leader && s.is_leader(ShardId(a))),
        "no view change"
    );
    for s in net.servers.iter().filter(|s| s.me != leader) {
        assert!(s.done.is_empty(), "n{} decided the forgotten transaction again", s.me.0);
        assert!(s.txns.is_empty(), "n{} took state for it", s.me.0);
    }
    for r in ra.into_iter().filter(|r| *r != leader) {
        assert!(net.has_version(r, a, t(1)), "{r:?} lost the write");
    }
}

/// With a forgetting period longer than the tombstone period, a decided transaction
/// drops its writes at the tombstone period and its entry once forgotten (it waits in
/// `unsettled` meanwhile, not in `settling`, which would hold every such entry).
#[test]
fn a_forgetting_period_past_the_tombstone_drops_the_writes_first() {
    let mut net = Net::forgetting();
    for s in net.servers.iter_mut() {
        s.env.timeouts.tombstone = secs(2.0);
        s.forget_after = secs(6.0);
    }
    let (a, b) = (0, 4);
    net.commit(t(1), a, b);
    net.run_for(secs(4.0));
    let ra = net.replicas(a);
    for r in &ra {
        let s = &net.servers[r.0 as usize];
        let d = s
            .done
            .get(&(ShardId(a), t(1)))
            .expect("kept until the forgetting period");
        assert!(d.ctx.is_none(), "writes kept past the tombstone period at {r:?}");
        assert!(s.settling.is_empty(), "settling before the forgetting period at {r:?}");
    }
    net.run_for(secs(8.0));
    assert!(net.servers.iter().all(|s| s.done.is_empty() && s.unsettled.is_empty()));
}
