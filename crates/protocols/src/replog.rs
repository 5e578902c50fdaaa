//! Two-phase commit over Paxos-replicated logs (`replog`), the Spanner-style baseline of
//! replicated-commit.md §2 and §5.
//!
//! # The protocol
//!
//! Every DC holds every shard (placement `Full`). Each shard is a multi-Paxos group of
//! its replicas with a long-lived leader; the leader holds the shard's lock table
//! (two-phase locking) and its log. Leaders are placed per shard (`leaders=C/V/O`, the
//! paper's `R/R/R` notation; default: shard `s` in DC `s mod #DCs`).
//!
//! - **Reads** go to the shard leader, which takes a shared lock and answers with the
//!   latest committed version. Writes are buffered at the client.
//! - **Commit** (Fig. 1): the client sends `Prepare` to the leader of every shard it
//!   touched, naming the shard of its first write as coordinator. Each leader takes
//!   exclusive locks, checks its shared locks are still held and replicates a PREPARE
//!   entry through its group (one WAN round trip to a majority); once it is chosen a
//!   cohort tells the coordinator (`Prepared`). With its own PREPARE chosen and every
//!   cohort prepared, the coordinator replicates COMMIT, then answers the client and
//!   sends `Decide` to the cohorts, which replicate COMMIT and only then install their
//!   writes and release their locks. An abort is not replicated by the coordinator
//!   (presumed abort); cohorts log it and release at once.
//! - One-way WAN trips from the client's `Prepare` to its decision: 7 with leaders in
//!   different DCs, 6 with leaders in one DC (and the client elsewhere). Cohort
//!   exclusive locks are held 8 trips (leaders apart) or 6 (together).
//! - **Groups**: multi-Paxos with a stable leader. The leader force-logs and sends
//!   `Accept` for each entry; an entry is chosen on a majority (leader included) and
//!   applied in slot order by every replica, so every replica installs a key's versions
//!   in the same order. Followers learn the chosen prefix from later accepts and
//!   heartbeats, and fetch entries they missed (`CatchUp`).
//! - **Leases and failover**: the leader heartbeats every sweep; a follower that has not
//!   heard from a leader for the lease (10 s by default, as in Spanner) — plus a random
//!   back-off — runs Paxos phase 1 with a higher ballot; acceptors refuse to promise
//!   while their current leader's lease may still hold. The new leader re-proposes every
//!   unchosen slot with its ballot (filling holes with no-ops), rebuilds the locks of
//!   prepared transactions from the log and resumes their 2PC: cohorts re-send their
//!   `Prepared` votes; coordinators answer with the decision. A leader serves reads only
//!   while a majority has acknowledged a heartbeat within the lease.
//!
//! # Departures and choices
//!
//! - Deadlocks are prevented by wound-wait (as in `2pc-2pl`) rather than detected; the
//!   paper says only that deadlocked transactions abort at once. `locks=no-wait`
//!   aborts on every lock conflict instead (closer to the abort rates of the paper's
//!   Fig. 7; see docs/EVALUATION.md).
//! - Votes and decisions between leaders are sent to every replica of the target shard
//!   (only the leader acts on them), so a cohort does not need to know who leads the
//!   coordinator's group after a failover.
//! - A group's log is never truncated (no snapshots); fine for runs of tens of
//!   thousands of transactions.
//! - The paper counts 7 lock-holding trips for co-located leaders; the message pattern
//!   it describes gives 6 (2 + 0 + 2 + 0 + 2), which is what this module measures.
//! - **One node, several shards.** A node may lead several shards a transaction
//!   touches (by placement, or after a fail-over moves a second shard's lead to it).
//!   Participant state is therefore keyed by (transaction, shard) and each shard has
//!   its own lock table: each share prepares, commits and releases on its own.
//! - **Elections.** A candidate whose own promise is a majority (a group of one
//!   replica) wins at once; a leader's lease blocks other candidates but not the lease
//!   holder standing again. A coordinator aborts a transaction only while it is
//!   undecided and not committing (a sweep's list of expired votes can go stale while
//!   it is worked through).

use crate::{ClientRole, Env, HoldStats, Protocol, Replica};
use meridian_core::{
    Actor, ClientId, Ctx, DcId, HomeRule, Key, NodeId, Outcome, Placement, ReadRec, ReplicaSnapshot, ShardId, Time,
    TimerId, TxnId, TxnRecord, Value, VersionId,
};
use meridian_storage::{Acquired, Grant, LockMode, LockTable, MvStore, Policy, Prio};
use meridian_txn::{Arg, Call, Execution, Step};
use rand::Rng as _;
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[cfg(test)]
mod tests;

/// A Paxos ballot: (round, proposer); larger wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Ballot {
    /// Round.
    pub round: u64,
    /// Proposer.
    pub node: NodeId,
}

/// A transaction's share at one shard, as its PREPARE entry records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrepareEntry {
    /// Transaction.
    pub txn: TxnId,
    /// Priority timestamp (start time).
    pub ts: Time,
    /// Coordinator shard.
    pub coord: ShardId,
    /// Every shard taking part.
    pub parts: Vec<ShardId>,
    /// The client.
    pub client: NodeId,
    /// Keys read here.
    pub reads: Vec<Key>,
    /// Writes here.
    pub writes: Vec<(Key, VersionId, Value)>,
}

/// A log entry of a shard's group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Entry {
    /// 2PC prepare of a transaction at this shard.
    Prepare(Arc<PrepareEntry>),
    /// The transaction committed: install its writes.
    Commit(TxnId),
    /// The transaction aborted.
    Abort(TxnId),
    /// Fills a hole after a leader change.
    Noop,
}

/// Replicated-log messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Client → shard leader: read under a shared lock.
    Read {
        /// Transaction.
        txn: TxnId,
        /// Priority.
        ts: Time,
        /// Key.
        key: Key,
    },
    /// Leader → client.
    ReadReply {
        /// Transaction.
        txn: TxnId,
        /// Key.
        key: Key,
        /// Version and value, or why not.
        result: Result<(Option<VersionId>, Option<Value>), String>,
        /// Who leads the shard, as far as the replier knows.
        hint: Option<NodeId>,
    },
    /// Client → leaders: aborted before commit.
    Release {
        /// Transaction.
        txn: TxnId,
    },
    /// Client → each participant leader: 2PC prepare.
    Prepare {
        /// Shard.
        shard: ShardId,
        /// The share.
        entry: Arc<PrepareEntry>,
    },
    /// Participant leader → every replica of the coordinator shard: vote.
    Prepared {
        /// Transaction.
        txn: TxnId,
        /// Coordinator shard.
        coord: ShardId,
        /// Voting shard.
        shard: ShardId,
        /// Prepared?
        yes: bool,
        /// Why not.
        reason: Option<String>,
    },
    /// Coordinator leader → every replica of a cohort shard: decision.
    Decide {
        /// Transaction.
        txn: TxnId,
        /// Target shard.
        shard: ShardId,
        /// Commit?
        commit: bool,
    },
    /// Coordinator leader → client.
    Outcome {
        /// Transaction.
        txn: TxnId,
        /// Committed?
        commit: bool,
        /// Why not.
        reason: Option<String>,
    },
    /// Client → replicas of the coordinator shard: outcome?
    Status {
        /// Transaction.
        txn: TxnId,
        /// Coordinator shard.
        shard: ShardId,
    },
    /// Leader → follower: accept an entry (phase 2a), with the chosen prefix.
    Accept {
        /// Shard.
        shard: ShardId,
        /// Ballot.
        ballot: Ballot,
        /// Slot.
        slot: u64,
        /// Entry.
        entry: Entry,
        /// Slots below this are chosen.
        chosen: u64,
    },
    /// Follower → leader (phase 2b).
    Accepted {
        /// Shard.
        shard: ShardId,
        /// Ballot.
        ballot: Ballot,
        /// Slot.
        slot: u64,
    },
    /// Acceptor → proposer: refused, a higher ballot was promised.
    Nack {
        /// Shard.
        shard: ShardId,
        /// The promised ballot.
        promised: Ballot,
    },
    /// Leader → followers: lease renewal and chosen prefix.
    Heartbeat {
        /// Shard.
        shard: ShardId,
        /// Ballot.
        ballot: Ballot,
        /// Chosen prefix.
        chosen: u64,
        /// When the leader sent it.
        sent: Time,
    },
    /// Follower → leader.
    HeartbeatAck {
        /// Shard.
        shard: ShardId,
        /// Ballot.
        ballot: Ballot,
        /// Echo of `sent`.
        sent: Time,
    },
    /// Candidate → replicas: phase 1a.
    Elect {
        /// Shard.
        shard: ShardId,
        /// Ballot.
        ballot: Ballot,
        /// Send accepted entries from this slot on.
        from: u64,
    },
    /// Acceptor → candidate: phase 1b.
    Promise {
        /// Shard.
        shard: ShardId,
        /// Ballot promised.
        ballot: Ballot,
        /// Accepted entries from the requested slot.
        entries: Vec<(u64, Ballot, Entry)>,
    },
    /// Follower → leader: send me the chosen entries from `from`.
    CatchUp {
        /// Shard.
        shard: ShardId,
        /// First missing slot.
        from: u64,
    },
    /// Leader → follower: chosen entries.
    Chosen {
        /// Shard.
        shard: ShardId,
        /// Leader's ballot.
        ballot: Ballot,
        /// First slot.
        from: u64,
        /// Entries.
        entries: Vec<Entry>,
    },
}

const T_SWEEP: TimerId = TimerId(1);
const CATCHUP_BATCH: u64 = 512;
/// Lock-acquisition chain of transactions rebuilt after a failover (not measured).
const UNKNOWN_HOPS: u32 = u32::MAX;

/// A shard's part of a transaction at commit: keys read, writes.
type Share = (Vec<Key>, Vec<(Key, VersionId, Value)>);

/// Accepted entries an acceptor reports in phase 1b: (slot, ballot, entry).
type Accepted = Vec<(u64, Ballot, Entry)>;

/// One shard's Paxos group as seen from one replica.
#[derive(Debug)]
struct Group {
    replicas: Vec<NodeId>,
    // --- durable (acceptor state and applied data) ---
    promised: Ballot,
    log: BTreeMap<u64, (Ballot, Entry)>,
    applied: u64,
    /// Writes of applied PREPARE entries not yet committed or aborted.
    writes: HashMap<TxnId, Arc<PrepareEntry>>,
    // --- volatile ---
    leader: Option<NodeId>,
    last_heard: Time,
    /// Chosen prefix known (for followers: as announced under `known_ballot`).
    chosen: u64,
    known_ballot: Ballot,
    asked_catchup: Time,
    leading: bool,
    next_slot: u64,
    votes: BTreeMap<u64, BTreeSet<NodeId>>,
    acks: BTreeMap<NodeId, Time>,
    lease_until: Time,
    election: Option<(Ballot, BTreeMap<NodeId, Accepted>)>,
    elect_after: Time,
}

impl Group {
    fn majority(&self) -> usize {
        self.replicas.len() / 2 + 1
    }
}

/// Participant-side state at a leader.
#[derive(Debug)]
enum PState {
    Active,
    /// Waiting for exclusive locks.
    Locking {
        entry: Arc<PrepareEntry>,
        waiting: usize,
        hops: u32,
    },
    /// PREPARE entry being replicated.
    Proposed {
        hops: u32,
    },
    /// PREPARE chosen; waiting for the decision.
    Prepared {
        asked: Time,
        hops: u32,
    },
    /// COMMIT or ABORT being replicated.
    Finishing {
        hops: u32,
    },
}

/// A transaction's part at one shard: participant state is keyed by transaction *and*
/// shard, since after a fail-over one node can lead several shards a transaction
/// touches, and each share prepares, commits and releases its locks on its own.
type Part = (TxnId, ShardId);

#[derive(Debug)]
struct PTxn {
    prio: Prio,
    state: PState,
    last_seen: Time,
    pending_reads: Vec<(NodeId, Key, u32)>,
    entry: Option<Arc<PrepareEntry>>,
}

#[derive(Debug)]
struct CTxn {
    coord: ShardId,
    parts: Vec<ShardId>,
    client: Option<NodeId>,
    yes: BTreeSet<ShardId>,
    committing: bool,
    since: Time,
}

impl CTxn {
    fn new(coord: ShardId, now: Time) -> Self {
        CTxn {
            coord,
            parts: vec![],
            client: None,
            yes: BTreeSet::new(),
            committing: false,
            since: now,
        }
    }
}

/// A replicated-log server: a replica of each shard it holds, leader of some.
#[derive(Debug)]
pub struct Server {
    env: Env,
    me: NodeId,
    /// Initial leader of each shard.
    leaders: Arc<Vec<NodeId>>,
    groups: BTreeMap<ShardId, Group>,
    /// Durable: committed data of every shard held here.
    store: MvStore,
    // --- volatile (leader role) ---
    /// One lock table per shard led here, so a shard's share releases only its locks.
    locks: BTreeMap<ShardId, LockTable>,
    policy: Policy,
    ptxns: HashMap<Part, PTxn>,
    tombstones: HashMap<TxnId, Time>,
    ctxns: HashMap<TxnId, CTxn>,
    done: HashMap<TxnId, bool>,
    holds: HoldStats,
}

impl Server {
    /// A fresh server; `leaders[s]` is shard `s`'s initial leader.
    pub fn new(env: Env, me: NodeId, leaders: Arc<Vec<NodeId>>, policy: Policy) -> Self {
        let mut groups = BTreeMap::new();
        for s in env.layout.shards_of(me) {
            let leader = leaders[s.0 as usize];
            let replicas = env.layout.replicas(s).to_vec();
            // A group of one holds its lease alone; others until a majority's acks.
            let lease_until = if replicas.len() == 1 {
                Time::MAX
            } else {
                env.timeouts.lease
            };
            groups.insert(
                s,
                Group {
                    replicas,
                    promised: Ballot { round: 1, node: leader },
                    log: BTreeMap::new(),
                    applied: 0,
                    writes: HashMap::default(),
                    leader: Some(leader),
                    last_heard: 0,
                    chosen: 0,
                    known_ballot: Ballot { round: 1, node: leader },
                    asked_catchup: 0,
                    leading: leader == me,
                    next_slot: 0,
                    votes: BTreeMap::new(),
                    acks: BTreeMap::new(),
                    lease_until,
                    election: None,
                    elect_after: 0,
                },
            );
        }
        Server {
            env,
            me,
            leaders,
            groups,
            store: MvStore::new(),
            locks: BTreeMap::new(),
            policy,
            ptxns: HashMap::default(),
            tombstones: HashMap::default(),
            ctxns: HashMap::default(),
            done: HashMap::default(),
            holds: HoldStats::default(),
        }
    }

    fn leads(&self, s: ShardId) -> bool {
        self.groups.get(&s).is_some_and(|g| g.leading)
    }

    /// Shard `s`'s lock table.
    fn locks(&mut self, s: ShardId) -> &mut LockTable {
        let policy = self.policy;
        self.locks.entry(s).or_insert_with(|| LockTable::new(policy))
    }

    /// Releases every lock of `txn`'s share at shard `s` and serves the waiters.
    fn release(&mut self, txn: TxnId, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let grants = self.locks(s).release_all(txn);
        self.on_grants(s, grants, cx);
    }

    // ------------------------------------------------------------ Paxos

    /// Leader: appends an entry to the group's log and replicates it.
    fn propose(&mut self, s: ShardId, entry: Entry, cx: &mut Ctx<'_, Msg>) {
        let me = self.me;
        let g = self.groups.get_mut(&s).expect("group");
        let slot = g.next_slot;
        g.next_slot += 1;
        self.send_accept(s, slot, entry, cx);
        let g = self.groups.get_mut(&s).expect("group");
        g.votes.entry(slot).or_default().insert(me);
        self.check_chosen(s, slot, cx);
    }

    fn send_accept(&mut self, s: ShardId, slot: u64, entry: Entry, cx: &mut Ctx<'_, Msg>) {
        let me = self.me;
        let g = self.groups.get_mut(&s).expect("group");
        let ballot = g.promised;
        cx.charge_log_sync(64 + entry_size(&entry));
        g.log.insert(slot, (ballot, entry.clone()));
        let chosen = g.chosen;
        for r in g.replicas.clone() {
            if r != me {
                cx.send(
                    r,
                    Msg::Accept {
                        shard: s,
                        ballot,
                        slot,
                        entry: entry.clone(),
                        chosen,
                    },
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_accept(
        &mut self,
        from: NodeId,
        s: ShardId,
        ballot: Ballot,
        slot: u64,
        entry: Entry,
        chosen: u64,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let now = cx.now();
        let Some(g) = self.groups.get_mut(&s) else { return };
        if ballot < g.promised {
            let promised = g.promised;
            cx.send(from, Msg::Nack { shard: s, promised });
            return;
        }
        if ballot > g.promised || g.leader != Some(ballot.node) {
            self.follow(s, ballot, cx);
        }
        let g = self.groups.get_mut(&s).expect("group");
        g.last_heard = now;
        g.elect_after = 0;
        cx.charge_log_sync(64 + entry_size(&entry));
        g.log.insert(slot, (ballot, entry));
        cx.send(from, Msg::Accepted { shard: s, ballot, slot });
        self.learn(s, ballot, chosen, cx);
    }

    /// Adopts `ballot`'s proposer as leader (stepping down if this node led).
    fn follow(&mut self, s: ShardId, ballot: Ballot, cx: &mut Ctx<'_, Msg>) {
        let was_leading = self.leads(s);
        let g = self.groups.get_mut(&s).expect("group");
        g.promised = ballot;
        g.leader = Some(ballot.node);
        g.leading = false;
        g.election = None;
        g.votes.clear();
        if was_leading {
            self.drop_leader_state(s, cx);
        }
    }

    /// Follower: slots below `chosen` accepted under `ballot` are chosen; apply them.
    fn learn(&mut self, s: ShardId, ballot: Ballot, chosen: u64, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let g = self.groups.get_mut(&s).expect("group");
        if g.leading {
            return;
        }
        if ballot > g.known_ballot || chosen > g.chosen {
            g.known_ballot = g.known_ballot.max(ballot);
            g.chosen = g.chosen.max(chosen);
        }
        loop {
            let g = self.groups.get_mut(&s).expect("group");
            if g.applied >= g.chosen {
                break;
            }
            match g.log.get(&g.applied) {
                Some((b, e)) if *b == g.known_ballot => {
                    let e = e.clone();
                    self.apply(s, e, cx);
                }
                _ => {
                    if now.saturating_sub(g.asked_catchup) >= self.env.timeouts.sweep {
                        g.asked_catchup = now;
                        if let Some(l) = g.leader {
                            let from = g.applied;
                            cx.send(l, Msg::CatchUp { shard: s, from });
                        }
                    }
                    break;
                }
            }
        }
    }

    fn on_accepted(&mut self, from: NodeId, s: ShardId, ballot: Ballot, slot: u64, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get_mut(&s) else { return };
        if !g.leading || ballot != g.promised || slot < g.chosen {
            return;
        }
        g.votes.entry(slot).or_default().insert(from);
        self.check_chosen(s, slot, cx);
    }

    fn check_chosen(&mut self, s: ShardId, _slot: u64, cx: &mut Ctx<'_, Msg>) {
        loop {
            let g = self.groups.get_mut(&s).expect("group");
            let maj = g.majority();
            let slot = g.chosen;
            if g.votes.get(&slot).is_none_or(|v| v.len() < maj) {
                break;
            }
            g.votes.remove(&slot);
            g.chosen += 1;
            let entry = g.log[&slot].1.clone();
            self.apply(s, entry, cx);
        }
    }

    /// Applies the next chosen entry (every replica, in slot order).
    fn apply(&mut self, s: ShardId, entry: Entry, cx: &mut Ctx<'_, Msg>) {
        let g = self.groups.get_mut(&s).expect("group");
        g.applied += 1;
        let leading = g.leading;
        match entry {
            Entry::Prepare(p) => {
                g.writes.insert(p.txn, p.clone());
                if leading {
                    self.prepare_chosen(s, p, cx);
                }
            }
            Entry::Commit(txn) => {
                if let Some(p) = g.writes.remove(&txn) {
                    cx.charge_ops(p.writes.len() as u32);
                    for (k, v, val) in &p.writes {
                        if !self.store.contains(k, *v) {
                            self.store.install_latest(k, *v, val.clone());
                        }
                    }
                }
                if leading {
                    self.finished(s, txn, true, cx);
                }
            }
            Entry::Abort(txn) => {
                g.writes.remove(&txn);
                if leading {
                    self.finished(s, txn, false, cx);
                }
            }
            Entry::Noop => {}
        }
    }

    fn on_catchup(&mut self, from: NodeId, s: ShardId, start: u64, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get(&s) else { return };
        if !g.leading {
            return;
        }
        let end = g.chosen.min(start + CATCHUP_BATCH);
        let entries: Vec<Entry> = (start..end)
            .filter_map(|i| g.log.get(&i).map(|e| e.1.clone()))
            .collect();
        if entries.len() as u64 != end.saturating_sub(start) {
            return;
        }
        let ballot = g.promised;
        cx.send(
            from,
            Msg::Chosen {
                shard: s,
                ballot,
                from: start,
                entries,
            },
        );
    }

    fn on_chosen(&mut self, s: ShardId, ballot: Ballot, start: u64, entries: Vec<Entry>, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get_mut(&s) else { return };
        if g.leading || ballot < g.promised || start > g.applied {
            return;
        }
        for (i, e) in entries.into_iter().enumerate() {
            let slot = start + i as u64;
            let g = self.groups.get_mut(&s).expect("group");
            if slot < g.applied {
                continue;
            }
            g.log.insert(slot, (ballot, e.clone()));
            g.chosen = g.chosen.max(slot + 1);
            self.apply(s, e, cx);
        }
        let g = self.groups.get_mut(&s).expect("group");
        g.asked_catchup = 0;
        g.known_ballot = g.known_ballot.max(ballot);
    }

    // ------------------------------------------------------------ leases and elections

    fn heartbeat(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let me = self.me;
        let g = self.groups.get_mut(&s).expect("group");
        for r in g.replicas.clone() {
            if r != me {
                cx.send(
                    r,
                    Msg::Heartbeat {
                        shard: s,
                        ballot: g.promised,
                        chosen: g.chosen,
                        sent: now,
                    },
                );
            }
        }
    }

    /// Leader: re-sends `Accept` for slots not yet chosen to replicas that have not
    /// accepted them (lost messages, a replica that was down).
    fn resend_unchosen(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let me = self.me;
        let g = &self.groups[&s];
        let ballot = g.promised;
        for slot in g.chosen..g.next_slot {
            let Some((_, entry)) = g.log.get(&slot) else { continue };
            let voted = g.votes.get(&slot);
            for r in &g.replicas {
                if *r != me && !voted.is_some_and(|v| v.contains(r)) {
                    cx.send(
                        *r,
                        Msg::Accept {
                            shard: s,
                            ballot,
                            slot,
                            entry: entry.clone(),
                            chosen: g.chosen,
                        },
                    );
                }
            }
        }
    }

    fn on_heartbeat(
        &mut self,
        from: NodeId,
        s: ShardId,
        ballot: Ballot,
        chosen: u64,
        sent: Time,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let now = cx.now();
        let Some(g) = self.groups.get_mut(&s) else { return };
        if ballot < g.promised {
            let promised = g.promised;
            cx.send(from, Msg::Nack { shard: s, promised });
            return;
        }
        if ballot > g.promised || g.leader != Some(ballot.node) || g.leading {
            self.follow(s, ballot, cx);
        }
        let g = self.groups.get_mut(&s).expect("group");
        g.last_heard = now;
        g.elect_after = 0;
        cx.send(from, Msg::HeartbeatAck { shard: s, ballot, sent });
        self.learn(s, ballot, chosen, cx);
    }

    fn on_heartbeat_ack(&mut self, from: NodeId, s: ShardId, ballot: Ballot, sent: Time) {
        let lease = self.env.timeouts.lease;
        let me = self.me;
        let Some(g) = self.groups.get_mut(&s) else { return };
        if !g.leading || ballot != g.promised {
            return;
        }
        let a = g.acks.entry(from).or_insert(0);
        *a = (*a).max(sent);
        // The lease holds until `lease` after the heartbeat a majority has acknowledged.
        let mut times: Vec<Time> = g.acks.iter().filter(|(n, _)| **n != me).map(|(_, t)| *t).collect();
        times.sort_unstable_by(|a, b| b.cmp(a));
        let need = g.majority() - 1;
        if need == 0 {
            g.lease_until = Time::MAX;
        } else if times.len() >= need {
            g.lease_until = g.lease_until.max(times[need - 1] + lease);
        }
    }

    fn on_nack(&mut self, s: ShardId, promised: Ballot, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get(&s) else { return };
        if promised > g.promised {
            self.follow(s, promised, cx);
            let now = cx.now();
            let g = self.groups.get_mut(&s).expect("group");
            g.last_heard = now;
        }
    }

    fn maybe_elect(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let lease = self.env.timeouts.lease;
        let me = self.me;
        let g = self.groups.get_mut(&s).expect("group");
        if g.leading || now.saturating_sub(g.last_heard) <= lease {
            return;
        }
        // Candidates stagger by their rank after the silent leader in replica order (the
        // next DC goes first), plus a little randomness, so they rarely duel.
        let n = g.replicas.len();
        let old = g
            .leader
            .or(Some(g.promised.node))
            .and_then(|l| g.replicas.iter().position(|r| *r == l));
        let mine = g.replicas.iter().position(|r| *r == me).unwrap_or(0);
        let rank = old.map_or(mine, |o| (mine + n - o - 1) % n) as u64;
        if g.elect_after == 0 {
            g.elect_after = now + rank * 500_000_000 + cx.rng().gen_range(0..100_000_000u64);
            return;
        }
        if now < g.elect_after {
            return;
        }
        g.elect_after = now + 3_000_000_000 + rank * 500_000_000 + cx.rng().gen_range(0..100_000_000u64);
        let ballot = Ballot {
            round: g.promised.round + 1,
            node: me,
        };
        g.promised = ballot;
        g.leader = None;
        let from = g.applied;
        let mine: Vec<(u64, Ballot, Entry)> = g.log.range(from..).map(|(i, (b, e))| (*i, *b, e.clone())).collect();
        let mut promises = BTreeMap::new();
        promises.insert(me, mine);
        g.election = Some((ballot, promises));
        cx.charge_log_sync(16);
        for r in g.replicas.clone() {
            if r != me {
                cx.send(r, Msg::Elect { shard: s, ballot, from });
            }
        }
        // Our own promise may already be a majority (a group of one replica).
        self.try_win(s, cx);
    }

    fn on_elect(&mut self, from: NodeId, s: ShardId, ballot: Ballot, start: u64, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let lease = self.env.timeouts.lease;
        let Some(g) = self.groups.get_mut(&s) else { return };
        // A lease that may still hold blocks other candidates, not the lease holder
        // itself standing again (after it stepped down, say): refusing it would leave
        // the group without a leader until the lease ran out.
        let lease_may_hold = g.leader.is_some_and(|l| l != from) && now.saturating_sub(g.last_heard) <= lease;
        if ballot <= g.promised || lease_may_hold || g.leading {
            let promised = g.promised;
            cx.send(from, Msg::Nack { shard: s, promised });
            return;
        }
        g.promised = ballot;
        g.leader = None;
        g.election = None;
        // Give this candidate time to finish before standing ourselves.
        g.elect_after = now + 3_000_000_000;
        cx.charge_log_sync(16);
        let entries = g.log.range(start..).map(|(i, (b, e))| (*i, *b, e.clone())).collect();
        cx.send(
            from,
            Msg::Promise {
                shard: s,
                ballot,
                entries,
            },
        );
    }

    fn on_promise(
        &mut self,
        from: NodeId,
        s: ShardId,
        ballot: Ballot,
        entries: Vec<(u64, Ballot, Entry)>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(g) = self.groups.get_mut(&s) else { return };
        let Some((b, promises)) = g.election.as_mut() else {
            return;
        };
        if *b != ballot {
            return;
        }
        promises.insert(from, entries);
        self.try_win(s, cx);
    }

    /// Candidate: once a majority (itself included) has promised, takes the lead.
    fn try_win(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let g = self.groups.get_mut(&s).expect("group");
        if g.election.as_ref().is_none_or(|(_, p)| p.len() < g.majority()) {
            return;
        }
        // Phase 1 done: for each slot take the value accepted with the highest ballot.
        let (_, promises) = g.election.take().expect("election");
        let mut merged: BTreeMap<u64, (Ballot, Entry)> = BTreeMap::new();
        for es in promises.into_values() {
            for (i, b, e) in es {
                if merged.get(&i).is_none_or(|(mb, _)| b > *mb) {
                    merged.insert(i, (b, e));
                }
            }
        }
        let start = g.applied;
        let end = merged.keys().next_back().map_or(start, |m| m + 1).max(start);
        g.leading = true;
        g.leader = Some(self.me);
        g.chosen = start;
        g.next_slot = end;
        g.votes.clear();
        g.acks.clear();
        // A group of one needs no one's acknowledgement to hold its lease.
        g.lease_until = if g.majority() == 1 { Time::MAX } else { 0 };
        g.elect_after = 0;
        for slot in start..end {
            let e = merged.remove(&slot).map_or(Entry::Noop, |(_, e)| e);
            self.send_accept(s, slot, e, cx);
            let me = self.me;
            let g = self.groups.get_mut(&s).expect("group");
            g.votes.entry(slot).or_default().insert(me);
        }
        self.rebuild_leader_state(s, cx);
        self.heartbeat(s, cx);
        self.check_chosen(s, start, cx);
    }

    // ------------------------------------------------------------ 2PC at leaders

    /// Leader lost: transactions it was serving abort (their clients time out).
    fn drop_leader_state(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let mut mine: Vec<TxnId> = self.ptxns.keys().filter(|(_, sh)| *sh == s).map(|(t, _)| *t).collect();
        mine.sort();
        for id in mine {
            if let Some(t) = self.ptxns.remove(&(id, s)) {
                for (client, key, hops) in t.pending_reads {
                    cx.send_on_chain(
                        client,
                        Msg::ReadReply {
                            txn: id,
                            key,
                            result: Err("leader changed".into()),
                            hint: None,
                        },
                        hops,
                    );
                }
                self.release(id, s, cx);
            }
        }
        let coord: Vec<TxnId> = self
            .ctxns
            .iter()
            .filter(|(_, c)| c.coord == s)
            .map(|(id, _)| *id)
            .collect();
        for id in coord {
            self.ctxns.remove(&id);
        }
    }

    /// New leader: prepared transactions (PREPARE in the log, no outcome applied) keep
    /// their exclusive locks and resume 2PC.
    fn rebuild_leader_state(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let g = &self.groups[&s];
        let mut open: BTreeMap<TxnId, Arc<PrepareEntry>> = BTreeMap::new();
        let mut closing: BTreeSet<TxnId> = BTreeSet::new();
        for (slot, (_, e)) in &g.log {
            let applied = *slot < g.applied;
            match e {
                Entry::Prepare(p) => {
                    open.insert(p.txn, p.clone());
                }
                Entry::Commit(t) | Entry::Abort(t) if applied => {
                    open.remove(t);
                    self.done.insert(*t, matches!(e, Entry::Commit(_)));
                }
                Entry::Commit(t) | Entry::Abort(t) => {
                    closing.insert(*t);
                }
                Entry::Noop => {}
            }
        }
        let prepared: BTreeSet<TxnId> = g.writes.keys().copied().collect();
        for (txn, p) in open {
            let prio = (p.ts, txn);
            let locks = self.locks(s);
            for k in &p.reads {
                locks.acquire(txn, prio, k, LockMode::Shared);
            }
            for (k, _, _) in &p.writes {
                locks.acquire(txn, prio, k, LockMode::Exclusive);
            }
            let hops = UNKNOWN_HOPS;
            let state = if closing.contains(&txn) {
                PState::Finishing { hops }
            } else if prepared.contains(&txn) {
                PState::Prepared { asked: 0, hops }
            } else {
                PState::Proposed { hops }
            };
            self.ptxns.insert(
                (txn, s),
                PTxn {
                    prio,
                    state,
                    last_seen: now,
                    pending_reads: vec![],
                    entry: Some(p.clone()),
                },
            );
            if p.coord == s {
                let c = self.ctxn(txn, &p, now);
                c.committing = closing.contains(&txn);
                if prepared.contains(&txn) {
                    c.yes.insert(s);
                }
            }
        }
    }

    fn ctxn(&mut self, txn: TxnId, p: &PrepareEntry, now: Time) -> &mut CTxn {
        let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(p.coord, now));
        c.parts = p.parts.clone();
        c.client = Some(p.client);
        c
    }

    fn on_read(&mut self, from: NodeId, txn: TxnId, ts: Time, key: Key, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops(1);
        let s = self.env.layout.shard_of(&key);
        let now = cx.now();
        let refuse = |why: &str, hint: Option<NodeId>, cx: &mut Ctx<'_, Msg>| {
            cx.send(
                from,
                Msg::ReadReply {
                    txn,
                    key: key.clone(),
                    result: Err(why.to_string()),
                    hint,
                },
            );
        };
        let Some(g) = self.groups.get(&s) else {
            return refuse("shard not held here", None, cx);
        };
        if !g.leading {
            return refuse("not the leader", g.leader, cx);
        }
        if now >= g.lease_until {
            return refuse("leader lease not held", None, cx);
        }
        if self.tombstones.contains_key(&txn) {
            return refuse("already aborted here", None, cx);
        }
        let t = self.ptxns.entry((txn, s)).or_insert_with(|| PTxn {
            prio: (ts, txn),
            state: PState::Active,
            last_seen: now,
            pending_reads: vec![],
            entry: None,
        });
        t.last_seen = now;
        if !matches!(t.state, PState::Active) {
            return;
        }
        let prio = t.prio;
        match self.locks(s).acquire(txn, prio, &key, LockMode::Shared) {
            Acquired::Granted => self.reply_read(from, txn, key, cx.hops(), cx),
            Acquired::Waiting { wound } => {
                let hops = cx.hops();
                if let Some(t) = self.ptxns.get_mut(&(txn, s)) {
                    // A duplicated read already waiting is answered by the same grant.
                    if !t.pending_reads.iter().any(|(_, k, _)| *k == key) {
                        t.pending_reads.push((from, key, hops));
                    }
                }
                self.wound(s, wound, cx);
            }
            _ => {
                let why = "read lock denied";
                self.abort_local((txn, s), why, cx);
                cx.send(
                    from,
                    Msg::ReadReply {
                        txn,
                        key,
                        result: Err(why.into()),
                        hint: None,
                    },
                );
            }
        }
    }

    fn reply_read(&mut self, to: NodeId, txn: TxnId, key: Key, hops: u32, cx: &mut Ctx<'_, Msg>) {
        let (v, val) = self.store.latest(&key);
        let result = Ok((v, val.cloned()));
        cx.send_on_chain(
            to,
            Msg::ReadReply {
                txn,
                key,
                result,
                hint: None,
            },
            hops,
        );
    }

    /// Wound-wait at shard `s`: the younger holders of a lock an older transaction
    /// waits for abort their share there, unless it is already being prepared.
    fn wound(&mut self, s: ShardId, victims: Vec<TxnId>, cx: &mut Ctx<'_, Msg>) {
        for v in victims {
            let can = self
                .ptxns
                .get(&(v, s))
                .is_some_and(|t| matches!(t.state, PState::Active | PState::Locking { .. }));
            if can {
                self.abort_local((v, s), "wounded by an older transaction", cx);
            }
        }
    }

    /// Aborts a transaction's share that has not replicated its PREPARE here (the
    /// tombstone is per transaction: once one share aborted, the transaction will).
    fn abort_local(&mut self, (txn, s): Part, why: &str, cx: &mut Ctx<'_, Msg>) {
        self.tombstones.insert(txn, cx.now());
        let Some(t) = self.ptxns.remove(&(txn, s)) else { return };
        for (client, key, hops) in t.pending_reads {
            cx.send_on_chain(
                client,
                Msg::ReadReply {
                    txn,
                    key,
                    result: Err(why.to_string()),
                    hint: None,
                },
                hops,
            );
        }
        if let PState::Locking { entry, hops, .. } = &t.state {
            self.send_vote(entry.coord, txn, s, false, Some(why.to_string()), *hops, cx);
        }
        self.release(txn, s, cx);
    }

    #[allow(clippy::too_many_arguments)]
    fn send_vote(
        &mut self,
        coord: ShardId,
        txn: TxnId,
        shard: ShardId,
        yes: bool,
        reason: Option<String>,
        hops: u32,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if coord == shard && self.leads(shard) {
            self.on_prepared(txn, coord, shard, yes, reason, cx);
            return;
        }
        for r in self.env.layout.replicas(coord).to_vec() {
            cx.send_on_chain(
                r,
                Msg::Prepared {
                    txn,
                    coord,
                    shard,
                    yes,
                    reason: reason.clone(),
                },
                hops,
            );
        }
    }

    fn on_grants(&mut self, s: ShardId, grants: Vec<Grant>, cx: &mut Ctx<'_, Msg>) {
        for g in grants {
            let Some(t) = self.ptxns.get_mut(&(g.txn, s)) else {
                continue;
            };
            if let Some(i) = t.pending_reads.iter().position(|(_, k, _)| *k == g.key) {
                let (client, key, hops) = t.pending_reads.remove(i);
                self.reply_read(client, g.txn, key, hops, cx);
            } else if let PState::Locking { waiting, .. } = &mut t.state {
                *waiting -= 1;
                if *waiting == 0 {
                    self.locked((g.txn, s), cx);
                }
            }
        }
    }

    fn on_prepare(&mut self, s: ShardId, p: Arc<PrepareEntry>, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops((p.reads.len() + p.writes.len()) as u32);
        if !self.leads(s) {
            return; // a stale guess of the client's; the coordinator's vote timeout aborts
        }
        let txn = p.txn;
        let now = cx.now();
        if self.tombstones.contains_key(&txn) || self.done.get(&txn) == Some(&false) {
            return self.send_vote(
                p.coord,
                txn,
                s,
                false,
                Some("already aborted here".into()),
                cx.hops(),
                cx,
            );
        }
        if p.coord == s {
            self.ctxn(txn, &p, now);
        }
        let t = self.ptxns.entry((txn, s)).or_insert_with(|| PTxn {
            prio: (p.ts, txn),
            state: PState::Active,
            last_seen: now,
            pending_reads: vec![],
            entry: None,
        });
        t.last_seen = now;
        if !matches!(t.state, PState::Active) {
            return; // duplicate
        }
        let prio = t.prio;
        if p.reads.iter().any(|k| !self.locks(s).holds(txn, k, LockMode::Shared)) {
            let why = "a read lock was lost";
            let hops = cx.hops();
            self.abort_local((txn, s), why, cx);
            return self.send_vote(p.coord, txn, s, false, Some(why.into()), hops, cx);
        }
        let mut waiting = 0;
        let mut wounded = vec![];
        for (k, _, _) in &p.writes {
            match self.locks(s).acquire(txn, prio, k, LockMode::Exclusive) {
                Acquired::Granted => {}
                Acquired::Waiting { wound } => {
                    waiting += 1;
                    wounded.extend(wound);
                }
                _ => {
                    let why = "write lock denied";
                    let hops = cx.hops();
                    self.abort_local((txn, s), why, cx);
                    return self.send_vote(p.coord, txn, s, false, Some(why.into()), hops, cx);
                }
            }
        }
        let hops = cx.hops();
        if let Some(t) = self.ptxns.get_mut(&(txn, s)) {
            t.state = PState::Locking {
                entry: p.clone(),
                waiting,
                hops,
            };
            t.entry = Some(p);
        }
        if waiting == 0 {
            self.locked((txn, s), cx);
        } else {
            self.wound(s, wounded, cx);
        }
    }

    /// All exclusive locks of a share held: replicate its PREPARE.
    fn locked(&mut self, part: Part, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.ptxns.get_mut(&part) else { return };
        let PState::Locking { entry, hops, .. } = std::mem::replace(&mut t.state, PState::Active) else {
            return;
        };
        t.state = PState::Proposed { hops };
        self.propose(part.1, Entry::Prepare(entry), cx);
    }

    /// Leader: a PREPARE entry was chosen.
    fn prepare_chosen(&mut self, s: ShardId, p: Arc<PrepareEntry>, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        if let Some(t) = self.ptxns.get_mut(&(p.txn, s)) {
            if let PState::Proposed { hops } = t.state {
                t.state = PState::Prepared { asked: now, hops };
            }
        }
        self.send_vote(p.coord, p.txn, s, true, None, cx.hops(), cx);
    }

    /// Coordinator leader: a vote arrived.
    fn on_prepared(
        &mut self,
        txn: TxnId,
        coord: ShardId,
        shard: ShardId,
        yes: bool,
        reason: Option<String>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let now = cx.now();
        if let Some(&commit) = self.done.get(&txn) {
            // Decided already: tell the asking shard again.
            self.send_decide(txn, &[shard], commit, cx);
            return;
        }
        let c = self.ctxns.entry(txn).or_insert_with(|| CTxn::new(coord, now));
        if c.committing {
            return;
        }
        if !yes {
            let why = reason.unwrap_or_else(|| "a participant did not prepare".into());
            self.decide_abort(txn, why, cx);
            return;
        }
        c.yes.insert(shard);
        self.maybe_commit(txn, cx);
    }

    fn maybe_commit(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(c) = self.ctxns.get_mut(&txn) else { return };
        if c.committing || c.parts.is_empty() || !c.parts.iter().all(|p| c.yes.contains(p)) {
            return;
        }
        c.committing = true;
        let s = c.coord;
        if !self.leads(s) {
            return;
        }
        if let Some(t) = self.ptxns.get_mut(&(txn, s)) {
            if let PState::Prepared { hops, .. } = t.state {
                t.state = PState::Finishing { hops };
            }
        }
        self.propose(s, Entry::Commit(txn), cx);
    }

    fn decide_abort(&mut self, txn: TxnId, why: String, cx: &mut Ctx<'_, Msg>) {
        // Only an undecided coordinator transaction that is not committing may abort.
        // What led here may be stale: a sweep lists the expired votes first and aborts
        // them one by one, and aborting one frees locks that can let a listed one
        // prepare and commit in the same sweep; aborting it then would contradict the
        // COMMIT already chosen and announced.
        if self.done.contains_key(&txn) || self.ctxns.get(&txn).is_none_or(|c| c.committing) {
            return;
        }
        self.done.insert(txn, false);
        let Some(c) = self.ctxns.remove(&txn) else { return };
        // Tell every shard known to take part, and every shard that voted.
        let mut parts: BTreeSet<ShardId> = c.parts.into_iter().collect();
        parts.extend(c.yes);
        parts.remove(&c.coord);
        let parts: Vec<ShardId> = parts.into_iter().collect();
        let client = c.client;
        // The coordinator's own share: abort it too.
        self.on_decide(txn, c.coord, false, cx);
        if let Some(cl) = client {
            cx.send(
                cl,
                Msg::Outcome {
                    txn,
                    commit: false,
                    reason: Some(why),
                },
            );
        }
        self.send_decide(txn, &parts, false, cx);
    }

    fn send_decide(&mut self, txn: TxnId, parts: &[ShardId], commit: bool, cx: &mut Ctx<'_, Msg>) {
        for &p in parts {
            if self.leads(p) {
                self.on_decide(txn, p, commit, cx);
                continue;
            }
            for r in self.env.layout.replicas(p).to_vec() {
                cx.send(r, Msg::Decide { txn, shard: p, commit });
            }
        }
    }

    /// Cohort leader: the decision arrived.
    fn on_decide(&mut self, txn: TxnId, s: ShardId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        if !self.leads(s) {
            return;
        }
        let Some(t) = self.ptxns.get_mut(&(txn, s)) else { return };
        match t.state {
            PState::Prepared { hops, .. } | PState::Proposed { hops } => {
                t.state = PState::Finishing { hops };
                if commit {
                    self.propose(s, Entry::Commit(txn), cx);
                } else {
                    self.propose(s, Entry::Abort(txn), cx);
                    self.release(txn, s, cx);
                }
            }
            PState::Finishing { .. } => {}
            PState::Active | PState::Locking { .. } => {
                if !commit {
                    self.abort_local((txn, s), "aborted by coordinator", cx);
                }
            }
        }
    }

    /// Leader: a COMMIT or ABORT entry was chosen.
    fn finished(&mut self, s: ShardId, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        self.done.insert(txn, commit);
        if let Some(t) = self.ptxns.remove(&(txn, s)) {
            if let PState::Finishing { hops } = t.state {
                // Cohorts' holdings (the paper's count; the coordinator's ends earlier).
                let cohort = t.entry.as_ref().is_some_and(|p| !p.writes.is_empty() && p.coord != s);
                if cohort && hops != UNKNOWN_HOPS {
                    self.holds.add(hops, cx.hops());
                }
            }
            self.release(txn, s, cx);
        }
        if !commit || self.ctxns.get(&txn).is_none_or(|c| c.coord != s) {
            return;
        }
        // The coordinator's own COMMIT: tell the client and the cohorts.
        if let Some(c) = self.ctxns.remove(&txn) {
            if let Some(cl) = c.client {
                cx.send(
                    cl,
                    Msg::Outcome {
                        txn,
                        commit: true,
                        reason: None,
                    },
                );
            }
            let others: Vec<ShardId> = c.parts.iter().copied().filter(|p| *p != s).collect();
            self.send_decide(txn, &others, true, cx);
        }
    }

    fn on_status(&mut self, from: NodeId, txn: TxnId, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        if !self.leads(s) {
            return;
        }
        if let Some(&commit) = self.done.get(&txn) {
            let reason = (!commit).then(|| "aborted".to_string());
            cx.send(from, Msg::Outcome { txn, commit, reason });
            return;
        }
        if self.ctxns.contains_key(&txn) || self.ptxns.contains_key(&(txn, s)) {
            return; // in progress
        }
        // Unknown to the coordinator: its Prepare never arrived. Presumed abort.
        self.done.insert(txn, false);
        self.tombstones.insert(txn, cx.now());
        cx.send(
            from,
            Msg::Outcome {
                txn,
                commit: false,
                reason: Some("coordinator never received the prepare".into()),
            },
        );
    }

    /// The client aborted: every share of `txn` here that has not begun preparing
    /// aborts; a tombstone refuses its late arrivals.
    fn on_release(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        self.tombstones.insert(txn, cx.now());
        let mut open: Vec<ShardId> = self
            .ptxns
            .iter()
            .filter(|((t, _), p)| *t == txn && matches!(p.state, PState::Active | PState::Locking { .. }))
            .map(|((_, s), _)| *s)
            .collect();
        open.sort();
        for s in open {
            self.abort_local((txn, s), "released by client", cx);
        }
    }

    fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let to = self.env.timeouts.clone();
        let shards: Vec<ShardId> = self.groups.keys().copied().collect();
        for s in shards {
            if self.leads(s) {
                self.heartbeat(s, cx);
                self.resend_unchosen(s, cx);
            } else {
                self.maybe_elect(s, cx);
            }
        }
        let mut idle = vec![];
        let mut ask = vec![];
        for (&(id, shard), t) in self.ptxns.iter_mut() {
            let silent = now.saturating_sub(t.last_seen) > to.idle && t.pending_reads.is_empty();
            match &mut t.state {
                PState::Active | PState::Locking { .. } if silent => idle.push((id, shard)),
                PState::Prepared { asked, .. } if now.saturating_sub(*asked) >= to.query => {
                    *asked = now;
                    if let Some(p) = &t.entry {
                        ask.push((id, p.coord, shard));
                    }
                }
                _ => {}
            }
        }
        idle.sort();
        ask.sort();
        for part in idle {
            self.abort_local(part, "client silent", cx);
        }
        for (txn, coord, shard) in ask {
            // Re-send the vote: the coordinator answers with the decision if it has one.
            if coord != shard {
                self.send_vote(coord, txn, shard, true, None, 0, cx);
            }
        }
        let mut expired: Vec<TxnId> = self
            .ctxns
            .iter()
            .filter(|(_, c)| !c.committing && now.saturating_sub(c.since) > to.vote)
            .map(|(id, _)| *id)
            .collect();
        expired.sort();
        for id in expired {
            self.decide_abort(id, "vote timeout".into(), cx);
        }
        self.tombstones.retain(|_, t| now.saturating_sub(*t) < to.tombstone);
        cx.set_timer(to.sweep, T_SWEEP);
    }
}

fn entry_size(e: &Entry) -> u64 {
    match e {
        Entry::Prepare(p) => {
            48 + p.reads.iter().map(|k| k.len() as u64).sum::<u64>()
                + p.writes
                    .iter()
                    .map(|(k, _, v)| 16 + (k.len() + v.0.len()) as u64)
                    .sum::<u64>()
        }
        _ => 16,
    }
}

impl Actor for Server {
    type Msg = Msg;

    fn on_start(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        for g in self.groups.values_mut() {
            g.last_heard = now;
        }
        cx.set_timer(self.env.timeouts.sweep, T_SWEEP);
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Read { txn, ts, key } => self.on_read(from, txn, ts, key, cx),
            Msg::Release { txn } => self.on_release(txn, cx),
            Msg::Prepare { shard, entry } => self.on_prepare(shard, entry, cx),
            Msg::Prepared {
                txn,
                coord,
                shard,
                yes,
                reason,
            } => {
                if self.leads(coord) {
                    self.on_prepared(txn, coord, shard, yes, reason, cx);
                }
            }
            Msg::Decide { txn, shard, commit } => self.on_decide(txn, shard, commit, cx),
            Msg::Status { txn, shard } => self.on_status(from, txn, shard, cx),
            Msg::Accept {
                shard,
                ballot,
                slot,
                entry,
                chosen,
            } => self.on_accept(from, shard, ballot, slot, entry, chosen, cx),
            Msg::Accepted { shard, ballot, slot } => self.on_accepted(from, shard, ballot, slot, cx),
            Msg::Nack { shard, promised } => self.on_nack(shard, promised, cx),
            Msg::Heartbeat {
                shard,
                ballot,
                chosen,
                sent,
            } => self.on_heartbeat(from, shard, ballot, chosen, sent, cx),
            Msg::HeartbeatAck { shard, ballot, sent } => self.on_heartbeat_ack(from, shard, ballot, sent),
            Msg::Elect { shard, ballot, from: f } => self.on_elect(from, shard, ballot, f, cx),
            Msg::Promise { shard, ballot, entries } => self.on_promise(from, shard, ballot, entries, cx),
            Msg::CatchUp { shard, from: f } => self.on_catchup(from, shard, f, cx),
            Msg::Chosen {
                shard,
                ballot,
                from: f,
                entries,
            } => self.on_chosen(shard, ballot, f, entries, cx),
            Msg::ReadReply { .. } | Msg::Outcome { .. } => {}
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        if t == T_SWEEP {
            self.sweep(cx);
        }
    }

    fn on_crash(&mut self) {
        // Durable: each group's acceptor state, log, applied prefix and pending PREPARE
        // writes (all derived from forced log writes), and the store built from them.
        let groups = std::mem::take(&mut self.groups);
        let store = std::mem::take(&mut self.store);
        let holds = std::mem::take(&mut self.holds);
        *self = Server::new(self.env.clone(), self.me, self.leaders.clone(), self.policy);
        for (s, old) in groups {
            let g = self.groups.get_mut(&s).expect("group");
            g.promised = old.promised;
            g.log = old.log;
            g.applied = old.applied;
            g.writes = old.writes;
            g.chosen = old.applied;
            g.known_ballot = old.promised;
            g.leader = None;
            g.leading = false;
        }
        self.store = store;
        self.holds = holds;
    }
}

impl Replica for Server {
    fn snapshot(&self) -> ReplicaSnapshot {
        ReplicaSnapshot {
            node: self.me,
            keys: self.store.snapshot(),
        }
    }
    fn lock_holds(&self) -> Option<&HoldStats> {
        Some(&self.holds)
    }
    fn locked_keys(&self) -> Option<usize> {
        Some(self.locks.values().map(LockTable::len).sum())
    }
}

// ---------------------------------------------------------------- client

const T_READ: TimerId = TimerId(1);
const T_STATUS: TimerId = TimerId(2);
const T_IDLE: TimerId = TimerId(3);

#[derive(Debug)]
enum Phase {
    Reading(Key, u32),
    /// An interactive transaction waits for its caller's next operations.
    Waiting,
    Committing(ShardId),
}

#[derive(Debug)]
struct Current {
    ts: Time,
    exec: Execution,
    rec: TxnRecord,
    touched: BTreeSet<NodeId>,
    phase: Phase,
}

/// A replicated-log client: reads at leaders, 2PC among leaders.
#[derive(Debug)]
pub struct Client {
    env: Env,
    id: ClientId,
    dc: DcId,
    /// Believed leader of each shard.
    leaders: Vec<NodeId>,
    cur: Option<Current>,
}

impl Client {
    /// A client on `node`.
    pub fn new(env: Env, node: NodeId, id: ClientId, leaders: &[NodeId]) -> Self {
        let dc = env.layout.dc_of(node);
        Client {
            env,
            id,
            dc,
            leaders: leaders.to_vec(),
            cur: None,
        }
    }

    fn send_read(&mut self, key: Key, tries: u32, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let s = self.env.layout.shard_of(&key);
        let node = self.leaders[s.0 as usize];
        cur.touched.insert(node);
        cur.phase = Phase::Reading(key.clone(), tries);
        cx.send(
            node,
            Msg::Read {
                txn: cur.rec.id,
                ts: cur.ts,
                key,
            },
        );
        cx.set_timer(self.env.timeouts.read, T_READ);
    }

    fn step(&mut self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let step = match cur.exec.step(&self.env.registry) {
            Ok(s) => s,
            Err(e) => Step::Abort(e.to_string()),
        };
        match step {
            Step::Read(key) => self.send_read(key, 0, cx),
            Step::Abort(reason) => self.abort(reason, cx),
            Step::Wait { output } => {
                cur.phase = Phase::Waiting;
                cx.set_timer(self.env.timeouts.idle, T_IDLE);
                cx.await_input(cur.rec.id, output);
            }
            Step::Done { writes, .. } => {
                let txn = cur.rec.id;
                let finals = crate::client::number_writes(&mut cur.rec, writes);
                cx.cancel_timer(T_READ);
                cur.rec.commit_start = Some(cx.now());
                let layout = &self.env.layout;
                let mut shares: BTreeMap<ShardId, Share> = BTreeMap::new();
                for r in &cur.rec.reads {
                    shares.entry(layout.shard_of(&r.key)).or_default().0.push(r.key.clone());
                }
                let coord = finals
                    .keys()
                    .next()
                    .map(|k| layout.shard_of(k))
                    .or_else(|| shares.keys().next().copied());
                for (k, (v, val)) in finals {
                    shares.entry(layout.shard_of(&k)).or_default().1.push((k, v, val));
                }
                let Some(coord) = coord else {
                    self.finish(Outcome::Committed, None, cx);
                    return;
                };
                let parts: Vec<ShardId> = shares.keys().copied().collect();
                for (s, (reads, writes)) in shares {
                    let entry = Arc::new(PrepareEntry {
                        txn,
                        ts: cur.ts,
                        coord,
                        parts: parts.clone(),
                        client: cx.me(),
                        reads,
                        writes,
                    });
                    cx.send(self.leaders[s.0 as usize], Msg::Prepare { shard: s, entry });
                }
                cur.phase = Phase::Committing(coord);
                cx.set_timer(self.env.timeouts.status, T_STATUS);
            }
        }
    }

    fn abort(&mut self, reason: String, cx: &mut Ctx<'_, Msg>) {
        if let Some(cur) = &self.cur {
            for n in &cur.touched {
                cx.send(*n, Msg::Release { txn: cur.rec.id });
            }
        }
        self.finish(Outcome::Aborted, Some(reason), cx);
    }

    fn finish(&mut self, outcome: Outcome, reason: Option<String>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.take() else { return };
        cx.cancel_timer(T_READ);
        cx.cancel_timer(T_STATUS);
        cx.cancel_timer(T_IDLE);
        crate::client::close(cur.rec, outcome, reason, cx);
    }
}

impl Actor for Client {
    type Msg = Msg;

    fn on_message(&mut self, _from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        match msg {
            Msg::ReadReply { txn, key, result, hint } if txn == cur.rec.id => {
                let tries = match &cur.phase {
                    Phase::Reading(k, t) if *k == key => *t,
                    _ => return,
                };
                cx.cancel_timer(T_READ);
                match result {
                    Ok((version, value)) => {
                        cur.rec.reads.push(ReadRec {
                            key: key.clone(),
                            version,
                        });
                        cur.exec.supply(key, value);
                        self.step(cx);
                    }
                    Err(why) => {
                        let s = self.env.layout.shard_of(&key).0 as usize;
                        match hint {
                            Some(h) if h != self.leaders[s] && tries < 3 => {
                                self.leaders[s] = h;
                                self.send_read(key, tries + 1, cx);
                            }
                            _ => self.abort(why, cx),
                        }
                    }
                }
            }
            Msg::Outcome { txn, commit, reason } if txn == cur.rec.id && matches!(cur.phase, Phase::Committing(_)) => {
                let o = if commit { Outcome::Committed } else { Outcome::Aborted };
                self.finish(o, reason, cx);
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        match (t, &cur.phase) {
            (T_READ, Phase::Reading(key, _)) => {
                // The leader may be gone: guess the next replica next time.
                let s = self.env.layout.shard_of(key);
                let reps = self.env.layout.replicas(s);
                let i = reps.iter().position(|n| *n == self.leaders[s.0 as usize]).unwrap_or(0);
                self.leaders[s.0 as usize] = reps[(i + 1) % reps.len()];
                self.abort("read timed out".into(), cx);
            }
            (T_IDLE, Phase::Waiting) => self.abort(crate::client::IDLE_ABORT.into(), cx),
            (T_STATUS, Phase::Committing(coord)) => {
                for r in self.env.layout.replicas(*coord) {
                    cx.send(
                        *r,
                        Msg::Status {
                            txn: cur.rec.id,
                            shard: *coord,
                        },
                    );
                }
                cx.set_timer(self.env.timeouts.status, T_STATUS);
            }
            _ => {}
        }
    }

    fn on_crash(&mut self) {
        self.cur = None;
    }
}

impl ClientRole for Client {
    fn submit(&mut self, txn: TxnId, call: Call, cx: &mut Ctx<'_, Msg>) {
        let rec = crate::client::new_record(txn, self.id, self.dc, &call, cx);
        self.cur = Some(Current {
            ts: cx.now(),
            exec: Execution::new(call),
            rec,
            touched: BTreeSet::new(),
            phase: Phase::Committing(ShardId(0)),
        });
        self.step(cx);
    }

    fn in_flight(&self) -> Option<TxnRecord> {
        self.cur.as_ref().map(|c| c.rec.clone())
    }

    fn extend(&mut self, txn: TxnId, args: Vec<Arg>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        if cur.rec.id != txn || !matches!(cur.phase, Phase::Waiting) {
            return;
        }
        cx.cancel_timer(T_IDLE);
        cur.exec.call.args.extend(args);
        self.step(cx);
    }
}

/// The `replog` protocol: leader placement per shard (DC of each shard's leader;
/// empty: shard `s` in DC `s mod #DCs`).
#[derive(Clone, Debug, Default)]
pub struct ReplicatedLog {
    /// Leader DC per shard.
    pub leader_dcs: Vec<DcId>,
    /// Abort on any lock conflict (`locks=no-wait`) instead of wound-wait.
    pub no_wait: bool,
}

impl ReplicatedLog {
    fn leaders(&self, env: &Env) -> Arc<Vec<NodeId>> {
        let l = &env.layout;
        let n = l.topology.num_dcs();
        Arc::new(
            (0..l.topology.shards)
                .map(|s| {
                    let dc = self
                        .leader_dcs
                        .get(s as usize)
                        .copied()
                        .unwrap_or(DcId((s as usize % n) as u16));
                    l.replicas(ShardId(s))[dc.0 as usize]
                })
                .collect(),
        )
    }
}

impl Protocol for ReplicatedLog {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;

    fn name(&self) -> &'static str {
        "replog"
    }
    fn strict(&self) -> bool {
        true
    }
    fn interactive(&self) -> bool {
        true
    }
    fn placement(&self, _home: HomeRule) -> Placement {
        Placement::Full
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        Server::new(
            env.clone(),
            node,
            self.leaders(env),
            if self.no_wait {
                Policy::NoWait
            } else {
                Policy::WoundWait
            },
        )
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id, &self.leaders(env))
    }
}
