//! Two-phase commit's messages: client reads and commit request, prepare, votes,
//! decisions, acknowledgements, queries.

use super::*;
pub use crate::kit::reads::{LockedRead, ReadAnswer};
pub use crate::kit::vote::Prepared;

/// One participant node's share of a transaction (every shard it serves for it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// The participant (primary of the shards involved).
    pub node: NodeId,
    /// Reads on this node with the versions seen.
    pub reads: Vec<(Key, Option<VersionId>)>,
    /// Final writes on this node.
    pub writes: Vec<(Key, VersionId, Value)>,
}

/// 2PC messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Client → participant: read `key` (2PL: under a shared lock).
    Read(LockedRead),
    /// Participant → client: the read's result.
    ReadReply(ReadAnswer),
    /// Client → participant: the transaction aborted before commit; drop its state.
    Release {
        /// Transaction.
        txn: TxnId,
    },
    /// Client → coordinator: commit this transaction.
    Commit {
        /// Transaction.
        txn: TxnId,
        /// Priority timestamp.
        ts: Time,
        /// Shards involved.
        parts: Vec<Part>,
    },
    /// Client → coordinator: what happened to `txn`?
    Status {
        /// Transaction.
        txn: TxnId,
        /// Priority timestamp.
        ts: Time,
    },
    /// Coordinator → client: the decision.
    Outcome {
        /// Transaction.
        txn: TxnId,
        /// Committed?
        commit: bool,
        /// Why not, if not.
        reason: Option<AbortReason>,
    },
    /// Coordinator → participant: prepare.
    Prepare {
        /// Transaction.
        txn: TxnId,
        /// Priority timestamp.
        ts: Time,
        /// This participant's share.
        part: Part,
    },
    /// Participant → coordinator: vote.
    Vote(Prepared),
    /// Coordinator → participant: the decision.
    Decide {
        /// Transaction.
        txn: TxnId,
        /// Commit?
        commit: bool,
    },
    /// Participant → coordinator: decision applied.
    Ack {
        /// Transaction.
        txn: TxnId,
    },
    /// Participant → coordinator: what was decided for `txn`?
    Query {
        /// Transaction.
        txn: TxnId,
    },
    /// Participant → coordinator: an older transaction waits for locks `txn` holds
    /// here prepared (so the participant cannot abort it); abort it if still undecided.
    Wound {
        /// The younger transaction.
        txn: TxnId,
    },
}

impl Msg {
    /// Whether a client may send this (`Protocol::client_may_send`): reads, the release of
    /// an aborted transaction, the commit request and the status question; never a prepare,
    /// vote or decision.
    /// Every variant is named, so a new one needs a decision here.
    pub(crate) fn client_may_send(&self) -> crate::ClientSend {
        use crate::ClientSend;
        match self {
            Msg::Read(r) => ClientSend::Own(r.txn),
            Msg::Release { txn } | Msg::Commit { txn, .. } | Msg::Status { txn, .. } => ClientSend::Own(*txn),
            Msg::ReadReply(..)
            | Msg::Outcome { .. }
            | Msg::Prepare { .. }
            | Msg::Vote(..)
            | Msg::Decide { .. }
            | Msg::Ack { .. }
            | Msg::Query { .. }
            | Msg::Wound { .. } => ClientSend::Refused,
        }
    }
}
