//! Paxos-commit baseline messages: the client's request and answer, locking at every
//! DC (2PL), reads at data servers, the commit round among the DCs' coordinators
//! (accept requests, votes, decisions) and installing inside a DC.

use super::*;

/// The value every DC votes on and, if committed, installs: the transaction's read set
/// (with the versions seen), its writes and its commit timestamp.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TxnValue {
    /// The home coordinator (the proposer, in the client's DC).
    pub home: NodeId,
    /// The client that submitted it.
    pub client: NodeId,
    /// Commit timestamp: the position of the writes in every key's version order.
    pub ts: u64,
    /// Reads: key, version seen and its timestamp.
    pub reads: Vec<(Key, Option<VersionId>, u64)>,
    /// Final writes (what every DC installs).
    pub writes: Vec<(Key, VersionId, Value)>,
    /// Every write in program order (the history record's write list).
    pub write_recs: Vec<WriteRec>,
    /// When the home coordinator started the commit round.
    pub commit_start: Time,
}

impl TxnValue {
    /// The writes each data server of DC `dc` installs.
    pub(super) fn installs(&self, layout: &Layout, dc: DcId) -> BTreeMap<NodeId, Vec<(Key, VersionId, Value)>> {
        let mut out: BTreeMap<NodeId, Vec<(Key, VersionId, Value)>> = BTreeMap::new();
        for (k, v, val) in &self.writes {
            out.entry(data_server(layout, k, dc))
                .or_default()
                .push((k.clone(), *v, val.clone()));
        }
        out
    }
    /// The history record's reads.
    pub(super) fn read_recs(&self) -> Vec<ReadRec> {
        self.reads
            .iter()
            .map(|(k, v, _)| ReadRec {
                key: k.clone(),
                version: *v,
            })
            .collect()
    }
}

/// Paxos-commit baseline messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Client → its DC's coordinator: run this call as transaction `txn`.
    Submit {
        /// Transaction.
        txn: TxnId,
        /// The program call.
        call: Call,
    },
    /// Client → its DC's coordinator: what became of `txn`? (lost answers, restarts)
    Status {
        /// Transaction.
        txn: TxnId,
    },
    /// Home coordinator → client: the outcome, with what the transaction read and wrote.
    Result(TxnResult),
    /// Home coordinator → every DC's coordinator (2PL): lock `key` for `txn`.
    Lock {
        /// Transaction.
        txn: TxnId,
        /// Wound-wait priority (start time, id): smaller is older.
        prio: Prio,
        /// Key.
        key: Key,
        /// Exclusive (a write) or shared (a read).
        exclusive: bool,
        /// Exclusive only: also read the key at this DC's data server once the lock is
        /// held (a pre-declared key locked for writing before the program runs; a
        /// shared lock is always read).
        read: bool,
    },
    /// A DC's coordinator → the home coordinator (2PL): the exclusive lock is held here;
    /// `latest` is the timestamp of the key's newest committed version in this DC.
    Locked {
        /// Transaction.
        txn: TxnId,
        /// Key.
        key: Key,
        /// Newest committed timestamp of the key here.
        latest: u64,
    },
    /// A DC's coordinator → the home coordinator of a younger lock holder (2PL): an
    /// older transaction wants the lock; abort unless committing.
    Wound {
        /// The younger transaction.
        txn: TxnId,
    },
    /// Home coordinator → every DC's coordinator: `txn` aborted before its commit round;
    /// drop its locks.
    Release {
        /// Transaction.
        txn: TxnId,
    },
    /// A coordinator (2PL, once the shared lock is held) or the home coordinator (OCC,
    /// in its own DC) → the key's data server: read the newest committed version and
    /// answer the home coordinator.
    Read {
        /// Transaction.
        txn: TxnId,
        /// Key.
        key: Key,
        /// Where the answer goes.
        home: NodeId,
    },
    /// Data server → home coordinator.
    ReadReply(ReadReply),
    /// Home coordinator → every DC's coordinator: phase 2a of the commit (ballot 0,
    /// the home's privilege): vote on this value.
    Accept {
        /// Transaction.
        txn: TxnId,
        /// The value.
        value: Arc<TxnValue>,
    },
    /// A coordinator → the other DCs' coordinators (the home among them): its DC's vote,
    /// force-logged before it is sent.
    Vote(crate::kit::vote::DcVote<TxnValue>),
    /// A coordinator that knows the outcome → a peer that asked or has not applied it.
    Decided(crate::kit::vote::Decided<TxnValue>),
    /// Coordinator → the other coordinators: its DC installed the commit everywhere.
    Applied {
        /// Transaction.
        txn: TxnId,
    },
    /// Coordinator → a data server of its DC: install these committed writes.
    Install {
        /// Transaction.
        txn: TxnId,
        /// Commit timestamp.
        ts: u64,
        /// The data server's writes.
        writes: Vec<(Key, VersionId, Value)>,
    },
    /// Data server → its coordinator: installed (and logged).
    Installed {
        /// Transaction.
        txn: TxnId,
    },
}

/// [`Msg::Result`]: a transaction's outcome with what it read and wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TxnResult {
    /// Transaction.
    pub txn: TxnId,
    /// Committed?
    pub commit: bool,
    /// Why not.
    pub reason: Option<AbortReason>,
    /// Reads (versions seen).
    pub reads: Vec<ReadRec>,
    /// Writes in program order.
    pub writes: Vec<WriteRec>,
    /// When the commit round started, if it did.
    pub commit_start: Option<Time>,
}

/// [`Msg::ReadReply`]: a version read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadReply {
    /// Transaction.
    pub txn: TxnId,
    /// Key.
    pub key: Key,
    /// Version, its commit timestamp, value.
    pub version: Option<VersionId>,
    /// Commit timestamp of the version.
    pub ts: u64,
    /// Value.
    pub value: Option<Value>,
}

impl Msg {
    /// Whether a client may send this (`Protocol::client_may_send`): the transaction for
    /// its DC's coordinator and the status question.
    /// Every variant is named, so a new one needs a decision here.
    pub(crate) fn client_may_send(&self) -> crate::ClientSend {
        use crate::ClientSend;
        match self {
            Msg::Submit { txn, .. } | Msg::Status { txn } => ClientSend::Own(*txn),
            Msg::Result(..)
            | Msg::Lock { .. }
            | Msg::Locked { .. }
            | Msg::Wound { .. }
            | Msg::Release { .. }
            | Msg::Read { .. }
            | Msg::ReadReply(..)
            | Msg::Accept { .. }
            | Msg::Vote(..)
            | Msg::Decided(..)
            | Msg::Applied { .. }
            | Msg::Install { .. }
            | Msg::Installed { .. } => ClientSend::Refused,
        }
    }
}
