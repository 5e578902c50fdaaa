//! Messages of `hier-lock`, `hier-ts` and `2pc-deferred`.

use super::Vid;
use meridian_core::{Key, NodeId, TxnId, Value, VersionId};
use serde::{Deserialize, Serialize};

/// A message between clients, data nodes and validators.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Msg {
    /// Client → data node: a snapshot read of `key`. `snap: None` is the transaction's
    /// first read, which sets the snapshot (at least `floor`, the largest timestamp the
    /// client has seen).
    Read {
        /// Transaction.
        txn: TxnId,
        /// Key to read.
        key: Key,
        /// The transaction's snapshot, if set.
        snap: Option<u64>,
        /// The client's largest seen timestamp (used when `snap` is `None`).
        floor: u64,
    },
    /// Data node → client: the newest version at or below `snap`.
    ReadReply {
        /// Transaction.
        txn: TxnId,
        /// Key read.
        key: Key,
        /// Version read (`None`: the initial version).
        version: Option<VersionId>,
        /// Its value.
        value: Option<Value>,
        /// The snapshot the read used (the one it set, for a first read).
        snap: u64,
        /// A committed version newer than the snapshot exists (§III-B2: a read-write
        /// transaction must abort; a read-only one is serialized in the past).
        newer: bool,
    },
    /// Client → data node: the commit request of §III-B4 (hierarchy) or the prepare of
    /// 2PC (`2pc-deferred`): the keys read and the writes on this node, and every node
    /// the transaction involves.
    Commit(Commit),
    /// `2pc-deferred` data node → client: the prepare result with the node's proposed
    /// commit timestamp.
    Vote {
        /// Transaction.
        txn: TxnId,
        /// Prepared (locks held, validation passed).
        ok: bool,
        /// Proposed commit timestamp.
        ts: u64,
    },
    /// The final decision to a data node: `2pc-deferred`'s commit/abort from the client,
    /// or a validator's answer to a [`Msg::Query`] (the hierarchy sends decisions in
    /// [`Msg::Batch`]).
    Decide {
        /// Transaction.
        txn: TxnId,
        /// Commit or abort.
        commit: bool,
        /// Commit timestamp.
        ts: u64,
    },
    /// `2pc-deferred` data node → client: the commit/abort result (the outcome the
    /// node applied: an abort if cooperative termination aborted it first).
    Ack {
        /// Transaction.
        txn: TxnId,
        /// Whether the node committed it.
        commit: bool,
    },
    /// Decider (validator, or the single data node of a local transaction) → client.
    Outcome {
        /// Transaction.
        txn: TxnId,
        /// Committed.
        commit: bool,
        /// Commit timestamp (0 on abort).
        ts: u64,
    },
    /// Validator → validator or data node: batched items (§III-D).
    Batch(Vec<Item>),
    /// A prepared data node that waited too long for the decision asks the decider
    /// (validator `vid`, or in `2pc-deferred` the client); a client asks for a lost
    /// outcome. An undecided decider then decides abort.
    Query(Query),
    /// `2pc-deferred` cooperative termination: a prepared participant whose client went
    /// silent asks its peers what they know.
    Peer {
        /// Transaction.
        txn: TxnId,
    },
    /// Answer to [`Msg::Peer`]: `Some(decision)` if known, `None` if prepared and
    /// undecided (the answerer then refuses the client's decision: it is frozen).
    PeerState {
        /// Transaction.
        txn: TxnId,
        /// What the answerer knows: the decision and commit timestamp.
        state: Option<(bool, u64)>,
    },
}

/// One item of a validator's batch.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Item {
    /// A child's (partial) validation of a distributed transaction, for validator `to`.
    Up(Up),
    /// The final decision, for the data node the batch goes to.
    Decide {
        /// Transaction.
        txn: TxnId,
        /// Commit or abort.
        commit: bool,
        /// Commit timestamp.
        ts: u64,
    },
}

/// A validator's child.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Child {
    /// The leaf validator of a data node.
    Leaf(NodeId),
    /// An inner validator.
    Inner(Vid),
}

/// [`Msg::Commit`]: a commit request or prepare.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Commit {
    /// Transaction.
    pub txn: TxnId,
    /// Snapshot.
    pub snap: u64,
    /// Keys read on this node.
    pub reads: Vec<Key>,
    /// Writes on this node (key, version, value).
    pub writes: Vec<(Key, VersionId, Value)>,
    /// Every involved data node, sorted.
    pub nodes: Vec<NodeId>,
}

/// [`Msg::Query`]: a question to the decider.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Query {
    /// Transaction.
    pub txn: TxnId,
    /// The deciding validator (`None`: the data node itself, a local transaction,
    /// or `2pc-deferred`'s client).
    pub vid: Option<Vid>,
    /// Every involved data node.
    pub nodes: Vec<NodeId>,
    /// The transaction's client node.
    pub client: NodeId,
    /// Asked by the client (answer with [`Msg::Outcome`]) rather than a data node.
    pub from_client: bool,
    /// An undecided decider decides abort (the asker has waited the query or status
    /// timeout). A data node back from a crash asks first without it: only a decision
    /// already taken is answered.
    pub decide: bool,
}

/// [`Item::Up`]: a (partial) validation passed up the tree.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Up {
    /// Validator it is for.
    pub to: Vid,
    /// Sender: a leaf (data node) or an inner validator.
    pub from: Child,
    /// Transaction.
    pub txn: TxnId,
    /// Validated so far.
    pub ok: bool,
    /// Commit timestamp so far (the max over the subtree).
    pub ts: u64,
    /// Snapshot.
    pub snap: u64,
    /// Every involved data node.
    pub nodes: Vec<NodeId>,
    /// The client node.
    pub client: NodeId,
    /// Keys only read in the sender's subtree (`hier-ts` re-validates them; `hier-lock`
    /// sends none).
    pub reads: Vec<Key>,
    /// Keys written in the sender's subtree (`hier-ts`; `hier-lock` sends none).
    pub writes: Vec<Key>,
}

impl Msg {
    /// Whether a client may send this (`Protocol::client_may_send`): reads, the commit
    /// request, a status question marked as the client's, and under `2pc-deferred` only
    /// (the client coordinates) the decision; never a validator's batch or a decision under
    /// the hierarchy.
    /// Every variant is named, so a new one needs a decision here.
    pub(crate) fn client_may_send(&self, mode: super::Mode) -> crate::ClientSend {
        use crate::ClientSend;
        match self {
            Msg::Read { txn, .. } => ClientSend::Own(*txn),
            Msg::Commit(c) => ClientSend::Own(c.txn),
            Msg::Decide { txn, .. } if mode == super::Mode::TwoPc => ClientSend::Own(*txn),
            Msg::Query(q) if q.from_client => ClientSend::Own(q.txn),
            Msg::Decide { .. } | Msg::Query(..) => ClientSend::Refused,
            Msg::ReadReply { .. }
            | Msg::Vote { .. }
            | Msg::Ack { .. }
            | Msg::Outcome { .. }
            | Msg::Batch(..)
            | Msg::Peer { .. }
            | Msg::PeerState { .. } => ClientSend::Refused,
        }
    }
}
