//! HACommit's messages: client ↔ replica (reads, the last operation, votes, the
//! client's phase-2 proposal) and replica ↔ replica (replication of transaction
//! contexts, recovery's phase 1 and 2, view change, sync after restart).

use super::*;

/// A Paxos ballot: 0 is the client's; recovery ballots are `round << 20 | node + 1`, with
/// `round` above every round the proposer has seen and at least its clock in
/// milliseconds (so a replica restarted with no disk can tell ballots issued after its
/// restart from ones that may have been in flight before it).
pub type Ballot = u64;

/// The replicated transaction context of one participant (§IV, §V-E).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TCtx {
    /// Transaction.
    pub txn: TxnId,
    /// Start time (lock priority; acceptor restart rule).
    pub ts: Time,
    /// Every shard the transaction operates on: the Paxos configuration.
    pub shards: Vec<ShardId>,
    /// Keys read at this participant (re-locked by a new leader).
    pub reads: Vec<Key>,
    /// Relevant writes: this participant's share.
    pub writes: Vec<(Key, VersionId, Value)>,
    /// Position of the writes in the group's version order.
    pub seq: u64,
}

/// What one replica knows about an undecided transaction (view changes, state transfer).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingInfo {
    /// Transaction.
    pub txn: TxnId,
    /// Start time.
    pub ts: Time,
    /// Configuration, if known.
    pub shards: Vec<ShardId>,
    /// Replicated context (a yes vote), if held.
    pub ctx: Option<TCtx>,
    /// Highest ballot promised.
    pub promised: Ballot,
    /// Accepted ballot and decision.
    pub accepted: Option<(Ballot, bool)>,
}

/// A decided transaction a replica still remembers with its writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoneInfo {
    /// Transaction.
    pub txn: TxnId,
    /// Committed?
    pub commit: bool,
    /// Its context (for commits; a re-sync sends commits past the tombstone period
    /// without it, their versions being in the same answer's store copy).
    pub ctx: Option<TCtx>,
    /// Its configuration, if known (who must settle it before it is forgotten).
    pub shards: Vec<ShardId>,
    /// Its start time, if known (0: not), for the forgetting mark.
    pub ts: Time,
}

/// One shard's answer to phase 2.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct P2bPart {
    /// Shard.
    pub shard: ShardId,
    /// Accepted?
    pub ok: bool,
    /// Highest ballot promised (`u64::MAX`: this replica may not act as an acceptor).
    pub promised: Ballot,
    /// The decision, if known to be chosen.
    pub chosen: Option<bool>,
    /// The replica forgot the transaction (module docs, "Forgetting decided
    /// transactions"): a majority of a group saying so tells the client that the
    /// outcome is lost to it.
    pub forgotten: bool,
}

/// [`Msg::Read`]: read `key` of `shard`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Read {
    /// Transaction.
    pub txn: TxnId,
    /// Start time (priority).
    pub ts: Time,
    /// Shard.
    pub shard: ShardId,
    /// Key.
    pub key: Key,
    /// Configuration so far.
    pub shards: Vec<ShardId>,
}

/// [`Msg::P1a`]: Paxos phase 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct P1a {
    /// Transaction.
    pub txn: TxnId,
    /// Start time.
    pub ts: Time,
    /// Shard of the addressed replica.
    pub shard: ShardId,
    /// Ballot.
    pub ballot: Ballot,
    /// Configuration.
    pub shards: Vec<ShardId>,
}

/// [`Msg::Accepted`]: a group member accepted (ballot, decision).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Accepted {
    /// Transaction.
    pub txn: TxnId,
    /// Shard.
    pub shard: ShardId,
    /// Ballot.
    pub ballot: Ballot,
    /// Decision.
    pub commit: bool,
    /// Configuration.
    pub shards: Vec<ShardId>,
    /// The transaction's start time (a leader that forgot the transaction refuses it).
    pub ts: Time,
}

/// [`Msg::SyncReq`]: a restarted replica's request for its group's state, and its fence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyncReq {
    /// Shard.
    pub shard: ShardId,
    /// The restarted replica's start-time watermark at its restart.
    pub below: Time,
    /// Its ballot watermark at its restart.
    pub floor: Ballot,
}

/// HACommit messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Client → leader: read `key` of `shard` (a shared lock under `hacommit`).
    Read(Read),
    /// Leader → client: the read's result.
    ReadReply {
        /// Transaction.
        txn: TxnId,
        /// Key.
        key: Key,
        /// Version and value, or why the transaction must abort.
        result: Result<(Option<VersionId>, Option<Value>), AbortReason>,
    },
    /// Leader → client: an older transaction waits for locks `txn` holds here after
    /// voting yes (so the leader cannot abort it); abort it if still undecided.
    Wound {
        /// The younger transaction.
        txn: TxnId,
    },
    /// Non-leader → client: ask `leader` instead.
    NotLeader {
        /// Transaction.
        txn: TxnId,
        /// Shard.
        shard: ShardId,
        /// Best guess of the leader.
        leader: NodeId,
    },
    /// Client → leader: the last operation.
    Last(LastOp),
    /// Leader → client: the vote (after replicating a yes vote to a majority).
    Vote {
        /// Transaction.
        txn: TxnId,
        /// Shard.
        shard: ShardId,
        /// Yes?
        yes: bool,
        /// Why not.
        reason: Option<AbortReason>,
    },
    /// Leader → follower: replicate a yes vote and its context.
    Replicate {
        /// Shard.
        shard: ShardId,
        /// Leader's view.
        view: u64,
        /// The context.
        ctx: TCtx,
    },
    /// Follower → leader: context stored.
    Replicated {
        /// Shard.
        shard: ShardId,
        /// View.
        view: u64,
        /// Transaction.
        txn: TxnId,
    },
    /// Proposer → replica: Paxos phase 1 (ballot 0: a query that promises nothing).
    P1a(P1a),
    /// Replica → proposer: promise (or refusal), with what it accepted.
    P1b(P1b),
    /// Proposer → replica node: Paxos phase 2 for every participant shard it holds.
    P2a(P2a),
    /// Replica node → proposer: accepted (or refused), per shard.
    P2b {
        /// Transaction.
        txn: TxnId,
        /// Ballot answered.
        ballot: Ballot,
        /// One answer per shard.
        parts: Vec<P2bPart>,
    },
    /// Replica → its leader: I accepted (ballot, decision).
    Accepted(Accepted),
    /// Leader → follower: these decisions are chosen; apply them (batched per sweep).
    Decided {
        /// Shard.
        shard: ShardId,
        /// The decisions and contexts.
        done: Vec<DoneInfo>,
    },
    /// Follower → leader: decisions applied.
    Applied {
        /// Shard.
        shard: ShardId,
        /// Transactions.
        txns: Vec<TxnId>,
    },
    /// Leader → followers: I lead `view`.
    Heartbeat {
        /// Shard.
        shard: ShardId,
        /// View.
        view: u64,
    },
    /// Candidate → group: join view `view` (whose leader is the sender).
    ViewChange {
        /// Shard.
        shard: ShardId,
        /// Proposed view.
        view: u64,
    },
    /// Replica → candidate: my state, for the merge.
    ViewState(ViewState),
    /// New leader → group: the merged state of `view`.
    NewView(ViewState),
    /// Restarted replica → group: send me your state, and fence what I may have
    /// forgotten: from now on promise at least `floor` for every transaction of the
    /// shard that started before `below` (see the module essay).
    SyncReq(SyncReq),
    /// Peer → restarted replica: the shard's data and pending state.
    SyncState(SyncState),
    /// Client → a shard's believed leader, when the shard's vote has not come within
    /// the fail-over time (its leader may have failed with the last operation): "what
    /// is your vote?". Answered by the current leader from its replicated state, or by
    /// a new decision, always no (§VI; `Server::on_vote_query`). The client never
    /// re-sends the last operation itself to another replica (see `ClientTimer::Retry`).
    VoteQuery {
        /// Transaction.
        txn: TxnId,
        /// Shard.
        shard: ShardId,
    },
    /// Replica → every replica of a participant shard: have you settled these decided
    /// transactions (each with its start time)? Asked, once a decision is `forget`
    /// old, by every replica that holds it, before it forgets it (module docs,
    /// "Forgetting decided transactions").
    SettleQuery {
        /// The shard asked about.
        shard: ShardId,
        /// Transactions and their start times.
        txns: Vec<(TxnId, Time)>,
    },
    /// Replica → asker: these of the asked transactions are settled at this replica of
    /// `shard` (applied, and if it leads, applied by every follower; or forgotten).
    Settled {
        /// The shard answered for.
        shard: ShardId,
        /// Transactions.
        txns: Vec<TxnId>,
    },
}

impl Msg {
    /// A leader's vote on `txn` for `shard` (`reason`: why not).
    pub(super) fn vote(txn: TxnId, shard: ShardId, yes: bool, reason: Option<AbortReason>) -> Msg {
        Msg::Vote {
            txn,
            shard,
            yes,
            reason,
        }
    }
}

/// Phase-2 messages of one proposal, one per replica node: each carries the shards of
/// `proposal.targets` that node holds, except those `skip` says already answered.
pub(super) fn p2a_by_node(
    layout: &meridian_core::Layout,
    proposal: &P2a,
    skip: impl Fn(ShardId, NodeId) -> bool,
) -> Vec<(NodeId, Msg)> {
    let mut by_node: BTreeMap<NodeId, Vec<ShardId>> = BTreeMap::new();
    for s in &proposal.targets {
        for r in layout.replicas(*s) {
            if !skip(*s, *r) {
                by_node.entry(*r).or_default().push(*s);
            }
        }
    }
    by_node
        .into_iter()
        .map(|(n, targets)| {
            let m = Msg::P2a(P2a {
                txn: proposal.txn,
                ts: proposal.ts,
                targets,
                ballot: proposal.ballot,
                commit: proposal.commit,
                shards: proposal.shards.clone(),
            });
            (n, m)
        })
        .collect()
}

/// One participant's share of the last operation: keys read there (with the version
/// read), writes to it.
pub(super) type LastShare = (Vec<(Key, Option<VersionId>)>, Vec<(Key, VersionId, Value)>);

/// Client → leader: the last operation of a transaction at one shard, which the leader
/// votes on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LastOp {
    /// Transaction.
    pub txn: TxnId,
    /// Start time.
    pub ts: Time,
    /// Shard.
    pub shard: ShardId,
    /// Final configuration.
    pub shards: Vec<ShardId>,
    /// Keys read at this shard, each with the version the client was answered (`None`:
    /// the initial version); the leader votes yes only if that is still the key's latest
    /// version under the transaction's shared lock.
    pub reads: Vec<(Key, Option<VersionId>)>,
    /// Writes to this shard (empty: an empty last operation).
    pub writes: Vec<(Key, VersionId, Value)>,
}

/// Replica → proposer: promise (or refusal), with what it accepted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct P1b {
    /// Transaction.
    pub txn: TxnId,
    /// Shard.
    pub shard: ShardId,
    /// Ballot answered.
    pub ballot: Ballot,
    /// Promised?
    pub ok: bool,
    /// Highest ballot promised.
    pub promised: Ballot,
    /// Accepted ballot and decision.
    pub accepted: Option<(Ballot, bool)>,
    /// The decision, if known to be chosen.
    pub chosen: Option<bool>,
    /// The context, if held.
    pub ctx: Option<TCtx>,
    /// The replica forgot the transaction, or never knew it and it is older than what
    /// the replica forgot: it keeps no state for it (module docs, "Forgetting decided
    /// transactions").
    pub forgotten: bool,
}

/// A replica's state of a shard in a view: a member's, sent to the candidate for the
/// merge ([`Msg::ViewState`]), or the merged one, sent by the new leader to the group
/// ([`Msg::NewView`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewState {
    /// Shard.
    pub shard: ShardId,
    /// View joined (or led).
    pub view: u64,
    /// Undecided transactions.
    pub pending: Vec<PendingInfo>,
    /// Recently decided transactions.
    pub done: Vec<DoneInfo>,
    /// Largest version sequence number seen (merged: the largest of the majority).
    pub seq: u64,
}

/// Peer → restarted replica: the shard's data and pending state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyncState {
    /// Shard.
    pub shard: ShardId,
    /// Sender's view.
    pub view: u64,
    /// Every committed version of the shard's keys, with its sequence number.
    pub versions: Vec<(Key, VersionId, Value, u64)>,
    /// What version GC collected from the shard's keys (the versions above lack it).
    pub collected: Vec<(Key, meridian_storage::Collected)>,
    /// Undecided transactions.
    pub pending: Vec<PendingInfo>,
    /// Recently decided transactions.
    pub done: Vec<DoneInfo>,
    /// Largest sequence number.
    pub seq: u64,
    /// The sender's forgetting mark for the shard (`Group::forgot_ts`): the restarted
    /// replica takes the largest it is sent.
    pub forgot_ts: Time,
}

/// Proposer → replica node: Paxos phase 2 for every participant shard it holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct P2a {
    /// Transaction.
    pub txn: TxnId,
    /// Start time.
    pub ts: Time,
    /// Shards of the addressed node this phase 2 is for.
    pub targets: Vec<ShardId>,
    /// Ballot.
    pub ballot: Ballot,
    /// Decision proposed.
    pub commit: bool,
    /// Configuration.
    pub shards: Vec<ShardId>,
}

impl Msg {
    /// Whether a client may send this (`Protocol::client_may_send`): reads, the last
    /// operation, a vote question and the commit decision's Paxos phase 2 at ballot 0
    /// (the client proposes its own transaction's decision); never a higher ballot (a
    /// recovery), a vote, a view or a replica's message.
    /// Every variant is named, so a new one needs a decision here.
    pub(crate) fn client_may_send(&self) -> crate::ClientSend {
        use crate::ClientSend;
        match self {
            Msg::Read(r) => ClientSend::Own(r.txn),
            Msg::Last(l) => ClientSend::Own(l.txn),
            Msg::VoteQuery { txn, .. } => ClientSend::Own(*txn),
            Msg::P2a(p) if p.ballot == 0 => ClientSend::Own(p.txn),
            Msg::P2a(..) => ClientSend::Refused,
            Msg::ReadReply { .. }
            | Msg::Wound { .. }
            | Msg::NotLeader { .. }
            | Msg::Vote { .. }
            | Msg::Replicate { .. }
            | Msg::Replicated { .. }
            | Msg::P1a(..)
            | Msg::P1b(..)
            | Msg::P2b { .. }
            | Msg::Accepted(..)
            | Msg::Decided { .. }
            | Msg::Applied { .. }
            | Msg::Heartbeat { .. }
            | Msg::ViewChange { .. }
            | Msg::ViewState(..)
            | Msg::NewView(..)
            | Msg::SyncReq(..)
            | Msg::SyncState(..)
            | Msg::SettleQuery { .. }
            | Msg::Settled { .. } => ClientSend::Refused,
        }
    }
}
