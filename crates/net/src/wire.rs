//! What travels in a frame: protocol messages between nodes, and the few control
//! messages the runtime itself needs (who is on a connection, status, end-of-run state).

use meridian_core::{NodeId, ReplicaSnapshot, Time, TxnId};
use meridian_protocols::HoldStats;
use serde::{Deserialize, Serialize};

/// A protocol message between two nodes, as it travels between processes and as the
/// receiving process schedules it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Envelope<M> {
    /// Sender (must be a node the connection's `Hello` named).
    pub from: NodeId,
    /// Destination (must be hosted by the receiving process).
    pub to: NodeId,
    /// WAN hops on the message's causal chain (as in the simulator).
    pub hops: u32,
    /// When it was sent (cluster time): the receiver delivers it one one-way delay later.
    pub sent_at: Time,
    /// The message.
    pub msg: M,
}

/// One frame's payload.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Wire<M> {
    /// The first frame on every connection, from the side that dialed: the cluster it
    /// belongs to and the nodes it hosts (a server: itself; a client process: its
    /// client slots; an admin tool: none).
    Hello {
        /// [`crate::cluster::Cluster::id`].
        cluster: u64,
        /// Nodes hosted by the dialing process.
        nodes: Vec<NodeId>,
    },
    /// The listener will not take this connection (wrong cluster, slot in use, ...).
    Refused {
        /// Why.
        reason: String,
    },
    /// A protocol message.
    Msg(Envelope<M>),
    /// Asks a server for its [`Status`].
    StatusReq,
    /// A server's status.
    Status(Status),
    /// Asks a server for its [`NodeReport`].
    ReportReq,
    /// A server's committed state and counters.
    Report(Box<NodeReport>),
    /// Cuts the links between these pairs of DCs (indices into the topology's DC
    /// list) until cluster time `until`, replacing any earlier cut; an empty list
    /// heals. The server drops every message it would send across a cut link and
    /// every message that arrives across one (clients' included); connections stay
    /// open. Answered with the server's [`Status`].
    Cut {
        /// Pairs of DCs that cannot talk.
        pairs: Vec<(u32, u32)>,
        /// Cluster time at which the cut heals by itself.
        until: Time,
    },
}

/// A server's liveness as the launcher sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The node.
    pub node: NodeId,
    /// The protocol it runs.
    pub protocol: String,
    /// Other servers it has a live outgoing connection to.
    pub peers_connected: u32,
    /// Inputs it replayed from its journal at start.
    pub replayed: u64,
    /// Its role now (leader/follower/primary/replica of which shards), if the protocol
    /// has roles that change.
    #[serde(default)]
    pub role: Option<String>,
    /// Keys it holds or awaits locks on (or holds uncommitted versions of).
    #[serde(default)]
    pub locked: Option<u64>,
    /// Messages and timers waiting in its event loop (its load).
    #[serde(default)]
    pub queued: u64,
    /// Milliseconds since the process started.
    #[serde(default)]
    pub uptime_ms: u64,
    /// Its traffic counters.
    #[serde(default)]
    pub counters: Counters,
    /// Outcomes it applied: (committed, aborted), if the protocol tracks them.
    #[serde(default)]
    pub applied: Option<(u64, u64)>,
    /// Entries in its input journal (with `--durable`).
    #[serde(default)]
    pub journal_entries: Option<u64>,
    /// Times its journal was fsynced since it started (with `--durable`).
    #[serde(default)]
    pub journal_syncs: Option<u64>,
    /// Versions its store holds and versions version GC has collected from it (a
    /// restart from its journal carries the count on), where the protocol keeps a
    /// multi-version store.
    #[serde(default)]
    pub versions: Option<(u64, u64)>,
}

/// A server's state at the end of a benchmark: what the checker needs, and counters.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeReport {
    /// Committed state.
    pub snapshot: ReplicaSnapshot,
    /// Keys locked or awaited (see `Replica::locked_keys`).
    pub locked: Option<u64>,
    /// Outcomes applied (see `Replica::outcomes`).
    pub outcomes: Option<Vec<(TxnId, bool)>>,
    /// Lock holding times.
    pub holds: Option<HoldStats>,
    /// Counters since the process started.
    pub counters: Counters,
}

/// A process's traffic counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Actor calls (messages and timers handled).
    pub inputs: u64,
    /// Messages sent.
    pub sent: u64,
    /// Messages sent to another DC.
    pub sent_wan: u64,
    /// Messages dropped because a queue was full or no route existed.
    pub dropped: u64,
    /// Messages dropped because their link was cut (`meridian cluster partition`).
    pub cut: u64,
}

impl Counters {
    /// `self - before`, counter by counter.
    pub fn since(&self, before: &Counters) -> Counters {
        Counters {
            inputs: self.inputs.saturating_sub(before.inputs),
            sent: self.sent.saturating_sub(before.sent),
            sent_wan: self.sent_wan.saturating_sub(before.sent_wan),
            dropped: self.dropped.saturating_sub(before.dropped),
            cut: self.cut.saturating_sub(before.cut),
        }
    }
    /// Adds another's counters.
    pub fn add(&mut self, o: &Counters) {
        self.inputs += o.inputs;
        self.sent += o.sent;
        self.sent_wan += o.sent_wan;
        self.dropped += o.dropped;
        self.cut += o.cut;
    }
}
