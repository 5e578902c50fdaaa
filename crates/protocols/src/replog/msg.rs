//! The replicated log's messages: client reads and commit requests, Multi-Paxos within
//! a shard's group (accept, chosen, catch-up, heartbeats, election), and two-phase
//! commit between group leaders; and the log entries themselves.

use super::*;
pub use crate::kit::reads::{LockedRead, ReadAnswer};

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
    /// The leader's choice to forget these decided transactions (every replica drops
    /// them from its record of decisions when it applies this; `forget.rs`).
    Forget(Vec<TxnId>),
}

/// Replicated-log messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Client → shard leader: read under a shared lock.
    Read(LockedRead),
    /// Leader → client.
    ReadReply {
        /// The read's answer.
        answer: ReadAnswer,
        /// Who leads the shard: the leader the replier follows, if it heard from it
        /// within the fail-over time.
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
    Prepared(Prepared),
    /// Coordinator leader → every replica of a cohort shard: decision.
    Decide {
        /// Transaction.
        txn: TxnId,
        /// Target shard.
        shard: ShardId,
        /// Commit?
        commit: bool,
    },
    /// A replica that does not lead `shard` → the client whose PREPARE it got: the
    /// leader it knows of, if any (the client re-sends the PREPARE there).
    Redirect {
        /// Transaction.
        txn: TxnId,
        /// The shard.
        shard: ShardId,
        /// Its leader, as this replica knows it.
        leader: Option<NodeId>,
    },
    /// Coordinator leader → client.
    Outcome {
        /// Transaction.
        txn: TxnId,
        /// Committed?
        commit: bool,
        /// Why not.
        reason: Option<AbortReason>,
    },
    /// Coordinator leader → a cohort shard whose vote it lacks (its leader, if the
    /// coordinator's node replicates the shard and heard from that leader lately; else
    /// every replica): what is your vote? Sent by a new leader for the transactions it
    /// rebuilt (the votes that had reached its predecessor are gone), and for a vote
    /// that has not come within the fail-over time. Only the leader answers, to the
    /// asker alone: again with its yes if its share is prepared, with a no if it
    /// aborted it; nothing while the share is still locking or replicating its PREPARE.
    VoteQuery {
        /// Transaction.
        txn: TxnId,
        /// Coordinator shard.
        coord: ShardId,
        /// The cohort shard asked.
        shard: ShardId,
        /// The coordinator has waited the fail-over time for this vote: a leader that
        /// never received the PREPARE (lost with a failed leader) votes no.
        decide: bool,
    },
    /// Client → replicas of the coordinator shard: outcome?
    Status {
        /// Transaction.
        txn: TxnId,
        /// Coordinator shard.
        shard: ShardId,
        /// The transaction's start timestamp (its PREPAREs' `ts`): a coordinator that
        /// does not know it and has forgotten decisions of transactions as old says
        /// so ([`Msg::Forgotten`]) instead of presuming an abort.
        ts: Time,
    },
    /// Coordinator leader → client: this transaction is unknown here and as old as
    /// decisions forgotten here; its outcome cannot be told (the client records it as
    /// unknown).
    Forgotten {
        /// Transaction.
        txn: TxnId,
    },
    /// Coordinator leader → a cohort shard (its leader if known, else every replica):
    /// have you applied the decisions of these transactions? Asked for commits
    /// decided here at least the forgetting period ago (`forget.rs`).
    SettleQuery {
        /// Coordinator shard.
        coord: ShardId,
        /// Cohort shard asked.
        shard: ShardId,
        /// Transactions.
        txns: Vec<TxnId>,
    },
    /// Cohort leader → the asking coordinator leader: of the transactions asked about,
    /// those with nothing pending here (decided and applied, or long gone).
    Settled {
        /// Coordinator shard.
        coord: ShardId,
        /// Cohort shard.
        shard: ShardId,
        /// Transactions.
        txns: Vec<TxnId>,
    },
    /// Leader → a follower whose catch-up starts below the leader's truncated log: the
    /// shard's state at the leader's applied point, to resume from (`snapshot.rs`).
    Snapshot(Box<Snapshot>),
    /// Leader → follower: accept an entry (phase 2a), with the chosen prefix.
    Accept(Accept),
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
    /// Candidate → replicas: would you promise `ballot` (a pre-vote; nothing changes)?
    PreElect {
        /// Shard.
        shard: ShardId,
        /// The ballot the candidate would stand with.
        ballot: Ballot,
        /// The candidate's applied prefix: a replica whose log was truncated above it
        /// would not promise (it could not report the slots in between).
        applied: u64,
    },
    /// Replica → candidate: the pre-vote's answer.
    PreVote {
        /// Shard.
        shard: ShardId,
        /// The ballot asked about.
        ballot: Ballot,
        /// Whether this replica would promise it now.
        ok: bool,
    },
    /// Cohort leader → the coordinator shard's replicas: `txn`, prepared here, holds a
    /// lock an older transaction waits for; wound-wait aborts it if still undecided.
    Wound {
        /// Transaction.
        txn: TxnId,
        /// Its coordinator shard.
        coord: ShardId,
    },
}

/// [`Msg::Prepared`]: a cohort shard's vote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prepared {
    /// Transaction.
    pub txn: TxnId,
    /// Coordinator shard.
    pub coord: ShardId,
    /// Voting shard.
    pub shard: ShardId,
    /// Prepared?
    pub yes: bool,
    /// Why not.
    pub reason: Option<AbortReason>,
    /// A yes sent again: by a cohort that has waited a query period (`query`) for the
    /// decision since it first voted (the client's PREPAREs, sent together, went out at
    /// least that long ago), or in answer to a coordinator's question (asked only by a
    /// coordinator that holds its own shard's PREPARE).
    pub again: bool,
    /// The transaction's start timestamp, where the voter knows it (0 where it does
    /// not: a no in answer to a coordinator's question about a PREPARE it never saw).
    /// A coordinator that does not know the transaction and has forgotten decisions as
    /// old takes no decision on such a vote (`forget.rs`).
    pub ts: Time,
}

impl Prepared {
    /// Cohort shard `shard` prepared `txn` (coordinated by shard `coord`).
    pub fn yes(txn: TxnId, coord: ShardId, shard: ShardId) -> Self {
        Prepared {
            txn,
            coord,
            shard,
            yes: true,
            reason: None,
            again: false,
            ts: 0,
        }
    }

    /// The same yes, sent again ([`Prepared::again`]).
    pub fn again(self) -> Self {
        Prepared { again: true, ..self }
    }

    /// Cohort shard `shard` refuses `txn` (coordinated by shard `coord`), for `why`.
    pub fn no(txn: TxnId, coord: ShardId, shard: ShardId, why: AbortReason) -> Self {
        Prepared {
            txn,
            coord,
            shard,
            yes: false,
            reason: Some(why),
            again: false,
            ts: 0,
        }
    }

    /// The same vote, naming the transaction's start timestamp ([`Prepared::ts`]).
    pub fn at(self, ts: Time) -> Self {
        Prepared { ts, ..self }
    }
}

/// [`Msg::Snapshot`]: one shard's state at a replica's applied point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Shard.
    pub shard: ShardId,
    /// The sender's ballot (the follower takes it only from the leader it follows).
    pub ballot: Ballot,
    /// Slots below this are applied in the state below.
    pub applied: u64,
    /// Every committed version of the shard's keys held: (key, version, value, write
    /// timestamp).
    pub versions: Vec<(Key, VersionId, Value, u64)>,
    /// What version GC collected from the shard's keys.
    pub collected: Vec<(Key, meridian_storage::Collected)>,
    /// PREPAREs applied and not yet decided.
    pub writes: Vec<Arc<PrepareEntry>>,
    /// The decisions applied and not yet forgotten.
    pub decided: Vec<(TxnId, Decision)>,
    /// The largest start timestamp of a transaction forgotten, if any was.
    pub forgot_ts: Option<Time>,
}

/// A replica's record of one transaction's decision in its shard's log (`forget.rs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Committed?
    pub commit: bool,
    /// The transaction's start timestamp (`None` if its PREPARE never reached this
    /// shard, as for a presumed abort).
    pub ts: Option<Time>,
    /// For a commit this shard coordinated: the cohort shards not yet known to have
    /// applied it (the leader learns it from `Settled`; followers keep the list as
    /// applied).
    pub waiting: Vec<ShardId>,
}

/// [`Msg::Accept`]: phase 2a of a slot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Accept {
    /// Shard.
    pub shard: ShardId,
    /// Ballot.
    pub ballot: Ballot,
    /// Slot.
    pub slot: u64,
    /// Entry.
    pub entry: Entry,
    /// Slots below this are chosen.
    pub chosen: u64,
}

impl Msg {
    /// Whether a client may send this (`Protocol::client_may_send`): reads, the release of
    /// an aborted transaction, the prepare to each participant leader and the status
    /// question; never a vote, decision or a Paxos message.
    /// Every variant is named, so a new one needs a decision here.
    pub(crate) fn client_may_send(&self) -> crate::ClientSend {
        use crate::ClientSend;
        match self {
            Msg::Read(r) => ClientSend::Own(r.txn),
            Msg::Release { txn } | Msg::Status { txn, .. } => ClientSend::Own(*txn),
            Msg::Prepare { entry, .. } => ClientSend::Own(entry.txn),
            Msg::ReadReply { .. }
            | Msg::Prepared(..)
            | Msg::Decide { .. }
            | Msg::Redirect { .. }
            | Msg::Outcome { .. }
            | Msg::VoteQuery { .. }
            | Msg::Accept(..)
            | Msg::Accepted { .. }
            | Msg::Nack { .. }
            | Msg::Heartbeat { .. }
            | Msg::HeartbeatAck { .. }
            | Msg::Elect { .. }
            | Msg::Promise { .. }
            | Msg::CatchUp { .. }
            | Msg::Chosen { .. }
            | Msg::PreElect { .. }
            | Msg::PreVote { .. }
            | Msg::Wound { .. }
            | Msg::Forgotten { .. }
            | Msg::SettleQuery { .. }
            | Msg::Settled { .. }
            | Msg::Snapshot(..) => ClientSend::Refused,
        }
    }
}
