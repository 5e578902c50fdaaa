//! History records: what a run did, as the checker sees it.

use crate::ids::{ClientId, DcId, NodeId, TxnId, VersionId};
use crate::key::{Key, Value};
use crate::time::Time;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a transaction ended, as its client knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Acknowledged as committed.
    Committed,
    /// Acknowledged as aborted (its writes must never be visible).
    Aborted,
    /// Never acknowledged (client crashed or run ended): may or may not have committed.
    Unknown,
}

/// One read: the key and the version observed (`None` is the initial, unwritten version).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadRec {
    /// Key read.
    pub key: Key,
    /// Version observed; `None` for the initial version.
    pub version: Option<VersionId>,
}

/// One write, in program order; a transaction's last write to a key is the one installed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteRec {
    /// Key written.
    pub key: Key,
    /// The version this write creates.
    pub version: VersionId,
}

/// Everything the checker needs to know about one transaction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TxnRecord {
    /// Transaction id.
    pub id: TxnId,
    /// Client that ran it.
    pub client: ClientId,
    /// Client node.
    pub node: NodeId,
    /// Client's datacenter.
    pub dc: DcId,
    /// Program name.
    pub program: String,
    /// When the client started it.
    pub start: Time,
    /// When the client asked to commit (if it got that far).
    pub commit_start: Option<Time>,
    /// When the client learned the outcome (`None` if never).
    pub end: Option<Time>,
    /// Outcome as acknowledged to the client.
    pub outcome: Outcome,
    /// Why it aborted, if it did. Boxed: a million records keep 24 bytes each fewer
    /// for the few that abort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_reason: Option<Box<crate::AbortReason>>,
    /// Reads with the versions observed (reads of its own writes are not listed).
    pub reads: Vec<ReadRec>,
    /// Writes in program order.
    pub writes: Vec<WriteRec>,
    /// Cross-DC one-way hops on the causal chain of the message that decided it
    /// (filled in by the runtime).
    pub wan_trips: u32,
}

impl TxnRecord {
    /// The version this transaction installs for each key (its last write to it).
    pub fn final_writes(&self) -> BTreeMap<&Key, VersionId> {
        let mut m = BTreeMap::new();
        for w in &self.writes {
            m.insert(&w.key, w.version);
        }
        m
    }
}

/// The state of one key at one replica at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyState {
    /// Installed versions, oldest first (the per-key version order).
    pub versions: Vec<VersionId>,
    /// The latest value, if any.
    pub value: Option<Value>,
}

/// The committed state of one replica (node) at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaSnapshot {
    /// The node.
    pub node: NodeId,
    /// Every key it holds.
    pub keys: BTreeMap<Key, KeyState>,
    /// Per key, how many of its oldest versions the replica collected (superseded
    /// long enough ago to be garbage, docs/CLUSTER.md "Version GC") without keeping
    /// their ids: its `versions` are then the end of its chain, after that many
    /// others. Empty where nothing was collected or the ids were kept (the simulator
    /// keeps them, so its checker sees every chain whole).
    #[serde(default)]
    pub pruned: BTreeMap<Key, u64>,
}
