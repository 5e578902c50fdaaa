//! CrossStitch's messages: the execution chain (exec, put, ack, precommit), the
//! per-transaction Paxos commit among the last server and the transaction replicas,
//! replication to each server's backups, queries and recovery, and sync after restart.

use super::*;

/// MVTO timestamps are the client's clock in nanoseconds times this, plus the client id
/// modulo this (unique per client).
pub const TS_SCALE: u64 = 1024;

/// A Paxos ballot for the commit decision: 0 is the final server's; recovery ballots
/// are `round << 20 | node + 1` with `round` the issue time in milliseconds.
pub type Ballot = u64;

/// The history record a committed transaction reports to its client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rec {
    /// Reads with the versions seen.
    pub reads: Vec<ReadRec>,
    /// Writes in program order.
    pub writes: Vec<WriteRec>,
}

/// One position of a chain: the server and the replicas its puts went to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hop {
    /// The server (or, at position 0, the client).
    pub node: NodeId,
    /// Replicas holding this position's puts.
    pub replicas: Vec<NodeId>,
}

/// What the final coordinator proposes (and recovery may find accepted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Commit or abort.
    pub commit: bool,
    /// The record for the client (commit only).
    pub rec: Option<Arc<Rec>>,
    /// Every position (with replicas), to tell the outcome to.
    pub chain: Vec<Hop>,
}

/// What a queried position knows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Status {
    /// Committed (with the record, if known here).
    Committed(Option<Arc<Rec>>),
    /// Aborted, and why.
    Aborted(AbortReason),
    /// Precommitted here, outcome not known yet: keep waiting.
    Pending,
    /// This server may have forgotten the transaction (it restarted).
    Unknown,
}

/// One shard's configuration (fail-over, §4.1): its acting primary and the copies that
/// hold its data (primary included, in the layout's copy order). View 0 is the
/// layout's: the first copy primary, every copy a member. Each change is agreed at the
/// shard's witness ([`witness_of`]) by compare-and-set on `view`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardView {
    /// The shard.
    pub shard: u32,
    /// Its number (0, 1, ...): each change adds one.
    pub view: u32,
    /// The copy that executes the shard's states.
    pub primary: NodeId,
    /// The copies holding its data (the primary's puts are replicated to the others).
    pub members: Vec<NodeId>,
}

/// CrossStitch messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Position `pos - 1` → position `pos`: run your state(s) of this transaction.
    Exec(Exec),
    /// Position `pos` → `pos - 1`: executed; the position after me is `next` (`None`:
    /// I am the last).
    Ack {
        /// Transaction.
        txn: TxnId,
        /// My position.
        pos: u32,
        /// Position `pos + 1`, if any.
        next: Option<NodeId>,
    },
    /// Position `pos` → `pos - 1`: I will not run this transaction: I restarted, and its
    /// timestamp is below my watermark, so I may have acted on it before my crash. The
    /// receiver aborts it if it has not precommitted (it could at its vote timeout
    /// anyway); otherwise it ignores this.
    Refused {
        /// Transaction.
        txn: TxnId,
        /// My position.
        pos: u32,
    },
    /// Position `pos - 1` → `pos`: I vote commit and delegate the decision to you.
    Precommit {
        /// Transaction.
        txn: TxnId,
        /// The receiver's position.
        pos: u32,
    },
    /// An earlier position aborted: abort (and pass it on).
    ForwardAbort {
        /// Transaction.
        txn: TxnId,
        /// The receiver's position.
        pos: u32,
        /// Why.
        reason: AbortReason,
    },
    /// Primary → replica: hold these puts; notify `notify` (position `pos`).
    Replicate(Replicate),
    /// Replica → position `pos`: the puts of your predecessor are replicated here.
    Notify {
        /// Transaction.
        txn: TxnId,
        /// The receiver's position.
        pos: u32,
    },
    /// Replica → position `pos`: I will not hold your predecessor's puts (I restarted,
    /// and the transaction's timestamp is below my watermark, so I may have acted on it
    /// before my crash), so the notify you wait for will never come. The receiver
    /// aborts if it has not precommitted and has not had my notify; otherwise it
    /// ignores this.
    ReplicaRefused {
        /// Transaction.
        txn: TxnId,
        /// The receiver's position.
        pos: u32,
    },
    /// The outcome, to the client, a participant or a replica.
    Decide {
        /// Transaction.
        txn: TxnId,
        /// Committed?
        commit: bool,
        /// Record (commit, to the client).
        rec: Option<Arc<Rec>>,
        /// Why it aborted.
        reason: Option<AbortReason>,
    },
    /// What is the state of `txn` at position `pos`? (`pos` = 0: at any position.)
    Query {
        /// Transaction.
        txn: TxnId,
        /// Its timestamp.
        ts: u64,
        /// Position asked about.
        pos: u32,
        /// Abort there if that position has not precommitted (the query to position
        /// i + 2 when i + 1 is silent, §4.1).
        kill: bool,
    },
    /// To a transaction replica: the last server `last` is silent; resolve the outcome
    /// (Paxos recovery) and tell me.
    Recover {
        /// Transaction.
        txn: TxnId,
        /// Its timestamp.
        ts: u64,
        /// The last server of the chain (the first acceptor).
        last: NodeId,
    },
    /// Answer to a `Query`.
    StatusReply {
        /// Transaction.
        txn: TxnId,
        /// The position the question was about (0: any the server holds).
        pos: u32,
        /// What the answering server knows.
        status: Status,
    },
    /// Paxos commit phase 2: accept `decision` at `ballot`.
    Accept {
        /// Transaction.
        txn: TxnId,
        /// Its timestamp (restart rule).
        ts: u64,
        /// Ballot.
        ballot: Ballot,
        /// The value.
        decision: Decision,
    },
    /// Acceptor → proposer: accepted (or refused, with the ballot promised).
    Accepted {
        /// Transaction.
        txn: TxnId,
        /// Ballot answered.
        ballot: Ballot,
        /// Accepted?
        ok: bool,
    },
    /// Paxos recovery phase 1.
    Prepare {
        /// Transaction.
        txn: TxnId,
        /// Its timestamp.
        ts: u64,
        /// Ballot.
        ballot: Ballot,
    },
    /// Acceptor → recovery proposer.
    Promise {
        /// Transaction.
        txn: TxnId,
        /// Ballot answered.
        ballot: Ballot,
        /// Promised?
        ok: bool,
        /// The highest accepted (ballot, value).
        accepted: Option<(Ballot, Decision)>,
    },
    /// Restarted server → the other replica of its shards: send me your data.
    SyncReq,
    /// The versions of the shards the two servers share (committed and tentative).
    SyncState(SyncState),
    /// Primary → the other members of its shards (every sweep, and when a read needs
    /// it): I am your primary in these (shard, view)s and may serve reads below
    /// `floor` (clock units); promise to refuse writes below it if you take over.
    Lease {
        /// (shard, view) pairs.
        views: Vec<(u32, u32)>,
        /// The floor asked for.
        floor: Time,
    },
    /// Member → primary: promised, for the (shard, view)s it agrees with.
    LeaseAck {
        /// (shard, view) pairs agreed.
        views: Vec<(u32, u32)>,
        /// The floor promised.
        floor: Time,
    },
    /// Copy → the shard's witness: replace view `expect` by `new` (its `view` is
    /// `expect + 1`, its primary the sender).
    Cas {
        /// The view the sender holds.
        expect: u32,
        /// The view proposed.
        new: ShardView,
    },
    /// Witness → copy: the shard's view at the witness now (`ok`: it is the proposed
    /// one).
    CasReply {
        /// Whether the proposal was taken.
        ok: bool,
        /// The witness's view.
        view: ShardView,
    },
    /// A new view, told to every node by the copy that installed it.
    View(ShardView),
    /// Restarted copy → the shard's witness: which view is current? (Answered with a
    /// `CasReply` that is not `ok`.)
    ViewReq {
        /// The shard.
        shard: u32,
    },
    /// Primary → position `pos`: the notify of `replica` is waived, the replica was
    /// dropped from the shards of your predecessor's puts (they live on the primary
    /// alone now).
    Waive {
        /// Transaction.
        txn: TxnId,
        /// The receiver's position.
        pos: u32,
        /// The replica whose notify is waived.
        replica: NodeId,
    },
}

impl Msg {
    pub(super) fn txn(&self) -> Option<TxnId> {
        use Msg::*;
        match self {
            Exec(self::Exec { txn, .. })
            | Ack { txn, .. }
            | Refused { txn, .. }
            | Precommit { txn, .. }
            | ForwardAbort { txn, .. }
            | Replicate(self::Replicate { txn, .. })
            | Notify { txn, .. }
            | ReplicaRefused { txn, .. }
            | Decide { txn, .. }
            | Query { txn, .. }
            | Recover { txn, .. }
            | StatusReply { txn, .. }
            | Accept { txn, .. }
            | Accepted { txn, .. }
            | Prepare { txn, .. }
            | Promise { txn, .. }
            | Waive { txn, .. } => Some(*txn),
            SyncReq
            | SyncState(_)
            | Lease { .. }
            | LeaseAck { .. }
            | Cas { .. }
            | CasReply { .. }
            | View(_)
            | ViewReq { .. } => None,
        }
    }
}

/// Position `pos - 1` → position `pos`: run your state(s) of this transaction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Exec {
    /// Transaction.
    pub txn: TxnId,
    /// MVTO timestamp.
    pub ts: u64,
    /// The program and the values read so far.
    pub exec: Execution,
    /// How many of the program's writes have been performed.
    pub writes_done: u32,
    /// Reads made so far, with versions.
    pub reads: Vec<ReadRec>,
    /// Writes performed so far.
    pub writes: Vec<WriteRec>,
    /// Positions 0..pos (0 is the client).
    pub chain: Vec<Hop>,
    /// Notifies the receiver must collect (its predecessor's replicas).
    pub notifies: u32,
}

/// Partner → restarted server: the versions of the shards the two share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyncState {
    /// (key, version, value, wts, tentative).
    pub versions: Vec<(Key, VersionId, Value, u64, bool)>,
    /// For each transaction with a tentative version: nodes to ask its outcome,
    /// and its last server if known (whose transaction replicas can recover it).
    pub askers: Vec<(TxnId, Vec<NodeId>, Option<NodeId>)>,
    /// The sender's views of the shards the two share.
    pub views: Vec<ShardView>,
    /// Above every timestamp (clock units) the sender may have served a read at:
    /// the receiver may take a shard over from the sender only refusing writes
    /// below it.
    pub floor: Time,
    /// What version GC collected from the shared shards' keys (the versions above
    /// lack it): the receiver takes it on, so it refuses the timestamps the sender
    /// can no longer serve.
    pub collected: Vec<(Key, meridian_storage::Collected)>,
}

/// Primary → replica: hold these puts; notify `notify` (position `pos`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Replicate {
    /// Transaction.
    pub txn: TxnId,
    /// MVTO timestamp.
    pub ts: u64,
    /// The puts (key, version, value).
    pub puts: Vec<(Key, VersionId, Value)>,
    /// Who to notify.
    pub notify: NodeId,
    /// The notified server's position.
    pub pos: u32,
    /// Nodes of the chain so far (to ask for the outcome if the primary forgets).
    pub chain: Vec<NodeId>,
    /// The (shard, view) of each shard of the puts: a replica holds them only in the
    /// same view, as a member, from the view's primary.
    pub views: Vec<(u32, u32)>,
}

impl Msg {
    /// Whether a client may send this (`Protocol::client_may_send`): what position 0 of a
    /// chain sends: the first execution (a chain of its own hop only), the precommit and
    /// the abort to position 1, an abort decision (never a commit one), status questions,
    /// the recovery request and a view question.
    /// Every variant is named, so a new one needs a decision here.
    pub(crate) fn client_may_send(&self) -> crate::ClientSend {
        use crate::ClientSend;
        match self {
            Msg::Query { txn, .. } | Msg::Recover { txn, .. } => ClientSend::Own(*txn),
            Msg::ViewReq { .. } => ClientSend::Free,
            Msg::Exec(e) if e.chain.len() == 1 => ClientSend::Own(e.txn),
            Msg::Precommit { txn, pos } | Msg::ForwardAbort { txn, pos, .. } if *pos == 1 => ClientSend::Own(*txn),
            Msg::Decide { txn, commit: false, .. } => ClientSend::Own(*txn),
            Msg::Exec(..) | Msg::Precommit { .. } | Msg::ForwardAbort { .. } | Msg::Decide { .. } => {
                ClientSend::Refused
            }
            Msg::Ack { .. }
            | Msg::Refused { .. }
            | Msg::Replicate(..)
            | Msg::Notify { .. }
            | Msg::ReplicaRefused { .. }
            | Msg::StatusReply { .. }
            | Msg::Accept { .. }
            | Msg::Accepted { .. }
            | Msg::Prepare { .. }
            | Msg::Promise { .. }
            | Msg::SyncReq
            | Msg::SyncState(_)
            | Msg::Lease { .. }
            | Msg::LeaseAck { .. }
            | Msg::Cas { .. }
            | Msg::CasReply { .. }
            | Msg::View(..)
            | Msg::Waive { .. } => ClientSend::Refused,
        }
    }
}
