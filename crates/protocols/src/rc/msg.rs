//! Replicated Commit's messages: reads from a majority of DCs, the client's accept
//! request (the transaction as the Paxos value), prepare inside each DC, votes,
//! decisions, queries.

use super::*;
pub use crate::kit::vote::Prepared;

/// The Paxos value of one transaction: what every DC prepares and, on commit, installs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TxnValue {
    /// The client (proposer).
    pub client: NodeId,
    /// Commit timestamp: the position of the writes in every key's version order.
    pub ts: u64,
    /// The coordinator shard (its server in each DC coordinates there).
    pub coord: ShardId,
    /// Reads, with the timestamp of the version read.
    pub reads: Vec<(Key, u64)>,
    /// Final writes.
    pub writes: Vec<(Key, VersionId, Value)>,
}

impl TxnValue {
    /// The cohorts of DC `dc`, each with its reads and writes.
    pub(super) fn cohorts(&self, layout: &Layout, dc: DcId) -> BTreeMap<NodeId, Share> {
        let mut out: BTreeMap<NodeId, Share> = BTreeMap::new();
        let node = |k: &Key| layout.replicas(layout.shard_of(k))[dc.0 as usize];
        for (k, t) in &self.reads {
            out.entry(node(k)).or_default().reads.push((k.clone(), *t));
        }
        for (k, v, val) in &self.writes {
            out.entry(node(k))
                .or_default()
                .writes
                .push((k.clone(), *v, val.clone()));
        }
        out
    }
}

/// One cohort's share of a transaction.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// Reads with the timestamp of the version read.
    pub reads: Vec<(Key, u64)>,
    /// Writes.
    pub writes: Vec<(Key, VersionId, Value)>,
}

/// A read's answer: version, its timestamp, value.
pub type ReadResult = Result<(Option<VersionId>, u64, Option<Value>), AbortReason>;

/// Replicated Commit messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Client → the key's replica in every DC: shared-lock and read.
    Read {
        /// Transaction.
        txn: TxnId,
        /// Key.
        key: Key,
    },
    /// Replica → client.
    ReadReply {
        /// Transaction.
        txn: TxnId,
        /// Key.
        key: Key,
        /// Latest version, its timestamp and value, or why the lock was denied.
        result: ReadResult,
    },
    /// Client → replicas it read from: the transaction aborted; drop its locks.
    Release {
        /// Transaction.
        txn: TxnId,
    },
    /// Client (or a peer relaying) → coordinator of a DC: Paxos accept request.
    Accept {
        /// Transaction.
        txn: TxnId,
        /// The value.
        value: Arc<TxnValue>,
    },
    /// Coordinator → cohort in its DC: 2PC prepare.
    Prepare {
        /// Transaction.
        txn: TxnId,
        /// Commit timestamp.
        ts: u64,
        /// Coordinator shard.
        coord: ShardId,
        /// This cohort's share.
        share: Share,
    },
    /// Cohort → coordinator: prepared or not.
    Prepared(Prepared),
    /// Coordinator → client and the other DCs' coordinators: this DC's Paxos vote.
    Vote(crate::kit::vote::DcVote<TxnValue>),
    /// Coordinator → whoever asked after the outcome was decided.
    Decided(crate::kit::vote::Decided<TxnValue>),
    /// Coordinator → cohort: 2PC commit (with the cohort's writes) or abort.
    Commit {
        /// Transaction.
        txn: TxnId,
        /// Commit?
        commit: bool,
        /// Commit timestamp.
        ts: u64,
        /// The cohort's writes.
        writes: Vec<(Key, VersionId, Value)>,
    },
    /// Cohort → coordinator: outcome applied.
    Ack {
        /// Transaction.
        txn: TxnId,
    },
    /// Coordinator → the other DCs' coordinators: every cohort of this DC applied the
    /// commit (they stop re-sending `Decided`).
    Applied {
        /// Transaction.
        txn: TxnId,
    },
    /// Prepared cohort → coordinator: what was decided?
    Query {
        /// Transaction.
        txn: TxnId,
        /// Coordinator shard.
        coord: ShardId,
        /// The transaction's commit timestamp (a coordinator that forgot decisions
        /// this old answers nothing rather than re-open it).
        ts: u64,
    },
}

impl Msg {
    /// Whether a client may send this (`Protocol::client_may_send`): reads, the release of
    /// an aborted transaction's locks and the Paxos accept request to each DC's
    /// coordinator; never a prepare, vote or commit.
    /// Every variant is named, so a new one needs a decision here.
    pub(crate) fn client_may_send(&self) -> crate::ClientSend {
        use crate::ClientSend;
        match self {
            Msg::Read { txn, .. } | Msg::Release { txn } | Msg::Accept { txn, .. } => ClientSend::Own(*txn),
            Msg::ReadReply { .. }
            | Msg::Prepare { .. }
            | Msg::Prepared(..)
            | Msg::Vote(..)
            | Msg::Decided(..)
            | Msg::Commit { .. }
            | Msg::Ack { .. }
            | Msg::Applied { .. }
            | Msg::Query { .. } => ClientSend::Refused,
        }
    }
}
