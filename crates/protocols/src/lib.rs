//! Commit protocols as pure state machines (sans-IO actors).
//!
//! Each protocol module holds its messages, its roles and its tests, and implements
//! [`Protocol`], which tells a runtime how to build its server and client actors.
//! Runtimes (the simulator, the TCP runtime) only deliver messages and fire timers.

pub mod catenae;
pub mod crossstitch;
pub mod hacommit;
pub mod hierval;
pub mod kit;
pub mod named;
pub mod paxoscommit;
pub mod rc;
pub mod replog;
pub mod testing;
pub mod twopc;

use meridian_core::{
    Actor, ClientId, Ctx, HomeRule, Layout, NodeId, Placement, ReplicaSnapshot, Time, TxnId, TxnRecord,
};
pub use meridian_storage::Retention;
use meridian_txn::{Arg, Call, Registry};
use std::fmt::Debug;
use std::sync::Arc;

/// Names of the protocols that exist, as accepted by `--protocol`.
pub const PROTOCOLS: [&str; 13] = [
    "2pc-2pl",
    "2pc-occ",
    "rc",
    "replog",
    "hacommit",
    "hacommit-rc",
    "crossstitch",
    "pc-2pl",
    "pc-occ",
    "hier-lock",
    "hier-ts",
    "2pc-deferred",
    "catenae",
];

/// A deliberately broken variant of a protocol (`--protocol NAME:mutant=M`), accepted
/// only in builds with the `mutants` feature (the tests'): each breaks one rule its
/// paper depends on, so a test can show the fault campaign catches it (issue 19).
/// `None` everywhere else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mutant {
    /// The protocol as specified.
    #[default]
    None,
    /// `2pc-2pl`: a participant releases its locks as soon as it votes yes, before the
    /// decision (2PL's second phase starts too early).
    EarlyRelease,
    /// `replog`: a coordinator announces an abort before its ABORT entry is chosen.
    EarlyAbort,
    /// `hacommit`: the client ends on one acceptance per group, not a majority.
    Minority,
    /// `crossstitch`: a position precommits without the next position's ack.
    NoAck,
    /// `hacommit`: a candidate leads its new view on its own state, before merging a
    /// majority's (the bug H1 of docs/MEASUREMENTS.md: leadership taken before the
    /// merge).
    LeadBeforeMerge,
    /// `crossstitch`: a server serves a read or a write below the versions its version
    /// GC kept (without the `MvtoTooOld` refusal).
    ReadCollected,
}

impl Mutant {
    /// The `mutant=` value and the protocol it applies to.
    pub const ALL: [(&'static str, &'static str, Mutant); 6] = [
        ("early-release", "2pc-2pl", Mutant::EarlyRelease),
        ("early-abort", "replog", Mutant::EarlyAbort),
        ("minority", "hacommit", Mutant::Minority),
        ("no-ack", "crossstitch", Mutant::NoAck),
        ("lead-before-merge", "hacommit", Mutant::LeadBeforeMerge),
        ("read-collected", "crossstitch", Mutant::ReadCollected),
    ];
}

/// Timeouts shared by protocols (virtual or real nanoseconds).
#[derive(Clone, Debug)]
pub struct Timeouts {
    /// Client gives up on a read (and aborts) after this long.
    pub read: Time,
    /// Client re-asks for a commit outcome this often.
    pub status: Time,
    /// Coordinator aborts a transaction whose votes have not all arrived after this.
    pub vote: Time,
    /// Participant asks the coordinator about an undecided prepared transaction this often;
    /// coordinator re-sends undelivered decisions this often.
    pub query: Time,
    /// Participant aborts an active (unprepared) transaction idle this long.
    pub idle: Time,
    /// Period of each server's housekeeping timer.
    pub sweep: Time,
    /// How long aborted-transaction tombstones are kept.
    pub tombstone: Time,
    /// Leader lease of replicated-log groups (Spanner: 10 s); a new leader is elected
    /// only after the old one has been silent this long.
    pub lease: Time,
    /// HACommit replica groups: a follower that has not heard its leader for this long
    /// starts a view change (leaders send heartbeats every `sweep`).
    pub failover: Time,
}

impl Default for Timeouts {
    fn default() -> Self {
        use meridian_core::{ms, secs};
        Timeouts {
            read: secs(5.0),
            status: secs(1.0),
            vote: secs(3.0),
            query: secs(1.0),
            idle: secs(10.0),
            sweep: ms(250.0),
            tombstone: secs(120.0),
            lease: secs(10.0),
            failover: secs(1.0),
        }
    }
}

/// What every actor of a deployment shares: layout, programs, timeouts.
#[derive(Clone, Debug)]
pub struct Env {
    /// Nodes, DCs and shard placement.
    pub layout: Arc<Layout>,
    /// Registered programs.
    pub registry: Arc<Registry>,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// How long superseded versions are kept (version GC, in the protocols that
    /// collect; docs/CLUSTER.md "Version GC").
    pub retention: Retention,
}

/// A client role: accepts transactions to run and records each one's outcome through
/// [`Ctx::record`] exactly once.
pub trait ClientRole: Actor {
    /// Starts running `call` as transaction `txn` (the client runs one at a time).
    fn submit(&mut self, txn: TxnId, call: Call, cx: &mut Ctx<'_, Self::Msg>);
    /// The transaction in flight, with outcome `Unknown` (used when the client crashes).
    fn in_flight(&self) -> Option<TxnRecord>;
    /// Interactive transactions ([`meridian_txn::script`]): appends the caller's next
    /// operations `args` to transaction `txn`, which waits for them (it reported
    /// [`Ctx::await_input`]), and resumes it. Ignored when `txn` is not waiting: it has
    /// ended, or the role does not run interactive transactions (see
    /// [`Protocol::interactive`]), in which case a script that stops for input aborts.
    fn extend(&mut self, _txn: TxnId, _args: Vec<Arg>, _cx: &mut Ctx<'_, Self::Msg>) {}
}

/// What a client may send ([`Protocol::client_may_send`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientSend {
    /// Only servers send this.
    Refused,
    /// A client may send it about its own transaction `TxnId` (a runtime checks that
    /// the id is one of the sending client's).
    Own(TxnId),
    /// A client may send it; it names no transaction.
    Free,
}

/// Whether client `client` (its `ClientId`'s number) may send `msg` under
/// [`Protocol::client_may_send`]: allowed, and about a transaction of its own. The
/// runtimes that drive client actors (the simulator, the explorer) assert it.
pub fn client_may_send_as<P: Protocol>(p: &P, msg: &P::Msg, client: u32) -> bool {
    match p.client_may_send(msg) {
        ClientSend::Refused => false,
        ClientSend::Own(t) => t.client == client,
        ClientSend::Free => true,
    }
}

/// A server role whose committed state can be inspected at the end of a run.
pub trait Replica {
    /// The committed state (version order and latest value per key).
    fn snapshot(&self) -> ReplicaSnapshot;
    /// How long this server held exclusive locks, in WAN trips, if the protocol tracks it.
    fn lock_holds(&self) -> Option<&HoldStats> {
        None
    }
    /// Keys this server holds or awaits locks on, if the protocol reports it.
    fn locked_keys(&self) -> Option<usize> {
        None
    }
    /// Every outcome this server applied (and any later decision contradicting one),
    /// if the protocol tracks it: the runtime checks that no transaction is committed
    /// at one participant and aborted at another.
    fn outcomes(&self) -> Option<Vec<(TxnId, bool)>> {
        None
    }
    /// Versions its store holds, and versions version GC has collected from it (since
    /// the store began: a restart from a checkpoint carries the count on), if the
    /// protocol keeps a multi-version store.
    fn versions(&self) -> Option<(u64, u64)> {
        None
    }
    /// Protocol-specific counters (name, value), summed over servers into the run's
    /// report (e.g. Catenae's speculation outcomes).
    fn stats(&self) -> Option<Vec<(String, f64)>> {
        None
    }
    /// This server's role now, for `meridian cluster status` (e.g. "leader of s0, s3;
    /// follower of s1"), if the protocol has roles that change.
    fn role(&self) -> Option<String> {
        None
    }
}

/// "leader of s0, s3; follower of s1": shards grouped by a role name, in order.
pub fn roles_text(roles: impl IntoIterator<Item = (&'static str, meridian_core::ShardId)>) -> String {
    let mut by: Vec<(&'static str, Vec<String>)> = vec![];
    for (r, s) in roles {
        match by.iter_mut().find(|(n, _)| *n == r) {
            Some((_, v)) => v.push(format!("s{}", s.0)),
            None => by.push((r, vec![format!("s{}", s.0)])),
        }
    }
    by.iter()
        .map(|(r, v)| format!("{r} of {}", v.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Exclusive-lock holding times measured in cross-DC one-way trips: from the input that
/// acquired a transaction's exclusive locks to the input that released them (the WAN-hop
/// counts of the two causal chains, see [`Ctx::hops`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HoldStats {
    /// `counts[h]`: lock holdings that lasted `h` WAN trips.
    pub counts: Vec<u64>,
}

impl HoldStats {
    /// Records one holding from chain `acquired` to chain `released`.
    pub fn add(&mut self, acquired: u32, released: u32) {
        let h = released.saturating_sub(acquired) as usize;
        if self.counts.len() <= h {
            self.counts.resize(h + 1, 0);
        }
        self.counts[h] += 1;
    }
    /// Adds another server's counts.
    pub fn merge(&mut self, o: &HoldStats) {
        if self.counts.len() < o.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
    }
    /// Number of holdings.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
    /// Mean holding in WAN trips (0 if none).
    pub fn mean(&self) -> f64 {
        let n = self.total();
        if n == 0 {
            return 0.0;
        }
        self.counts
            .iter()
            .enumerate()
            .map(|(h, c)| h as f64 * *c as f64)
            .sum::<f64>()
            / n as f64
    }
    /// Longest holding (0 if none).
    pub fn max(&self) -> u32 {
        self.counts.iter().rposition(|c| *c > 0).unwrap_or(0) as u32
    }
}

/// The crashes a protocol promises to survive (the simulator uses it to tell a run
/// whose faults were within the protocol's stated tolerance, where every transaction
/// must resolve with nothing left locked, from one beyond it, which must still be safe
/// but may stall). Partitions, message loss, duplication and reordering heal by the end
/// of every run, and client crashes are survived by every protocol (each has a way to
/// finish a transaction whose client went silent), so only server crashes matter here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultModel {
    /// Servers keep a forced log across a crash: any crash or outage is survived once
    /// the servers restart.
    Durable,
    /// Servers forget everything in a crash and re-sync from their group: at most
    /// `per_group` servers of one replica group (a shard's replicas, or with `global`
    /// all servers) may be down or re-syncing at a time. A restarted server counts as
    /// down for `resync` after its restart.
    Forgetful {
        /// Simultaneous failures tolerated per group.
        per_group: usize,
        /// The group is every server (transaction replicas may be any server).
        global: bool,
        /// How long a restarted server still counts as failed.
        resync: Time,
    },
}

/// A protocol: its message type and how to build its actors.
pub trait Protocol: Clone + Send + Sync + 'static {
    /// Message enum.
    /// Message enum; serde so that the TCP runtime can put it on the wire.
    type Msg: Clone + Debug + Send + serde::Serialize + serde::de::DeserializeOwned + 'static;
    /// Data-server actor (one per server node).
    type Server: Actor<Msg = Self::Msg> + Replica + Clone + Debug + Send + 'static;
    /// Client actor (one per client node).
    type Client: Actor<Msg = Self::Msg> + ClientRole + Clone + Debug + Send + 'static;
    /// The `--protocol` name.
    fn name(&self) -> &'static str;
    /// Whether the protocol claims strict serializability.
    fn strict(&self) -> bool;
    /// Whether the protocol only claims read committed (the checker then looks for
    /// G0/G1 anomalies only).
    fn read_committed(&self) -> bool {
        false
    }
    /// Whether its client role runs interactive transactions: a script program that
    /// stops for its caller's input waits (see [`ClientRole::extend`]) instead of
    /// aborting.
    fn interactive(&self) -> bool {
        false
    }
    /// The crashes this protocol promises to survive.
    fn fault_model(&self) -> FaultModel {
        FaultModel::Durable
    }
    /// Whether its servers treat every state change as forced to stable storage before
    /// they act (their `on_crash` keeps everything) without charging each force as a
    /// log write in the simulator. A journalled server of such a protocol on the real
    /// cluster then fsyncs its journal before every batch of messages leaves, as it
    /// would for a charged forced write.
    fn forces_every_step(&self) -> bool {
        false
    }
    /// Whether a client may send `m`, and about which transaction. A runtime accepts
    /// from a client (a process with a client certificate, through its client slots)
    /// only the messages this allows, each about a transaction of that client's own,
    /// and drops the connection of one that sends anything else: a client certificate
    /// must not let its holder pose as a server (a 2PC `Decide` to a participant, a
    /// Paxos accept, a chain server's reply) nor act for another client. The
    /// simulator asserts that every message a client actor sends passes, naming only
    /// its own transactions, so the rule is checked on every run.
    fn client_may_send(&self, m: &Self::Msg) -> ClientSend;
    /// The placement this protocol runs on, given where shards' homes should be.
    fn placement(&self, home: HomeRule) -> Placement;
    /// Builds the server actor of `node`.
    fn server(&self, env: &Env, node: NodeId) -> Self::Server;
    /// Builds the client actor `id` living on `node`.
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Self::Client;
    /// The server's whole state as bytes ([`kit::image`]), for a runtime's checkpoint,
    /// or `None` if this protocol has no image (a runtime then keeps every input to
    /// replay). [`Protocol::restore`] must rebuild a server that behaves exactly as `s`
    /// would on every later input.
    fn image(&self, _s: &Self::Server) -> Option<Vec<u8>> {
        None
    }
    /// Whether [`Protocol::image`] gives an image (without building one).
    fn has_image(&self) -> bool {
        false
    }
    /// Rebuilds server `node` from an [`image`](Protocol::image) taken in a cluster
    /// with environment `env`.
    fn restore(&self, _env: &Env, node: NodeId, _image: &[u8]) -> Result<Self::Server, String> {
        Err(format!(
            "{} has no server image to restore node {} from",
            self.name(),
            node.0
        ))
    }
}
