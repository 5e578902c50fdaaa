//! CrossStitch (crossstitch.md §3–4): transactions as chains of states, executed by
//! shipping the program from server to server, with the pipelined commit protocol
//! (PLC) running alongside.
//!
//! # Execution (§3.1, §3.5.1)
//!
//! A transaction is a program ([`meridian_txn::Execution`], replayed against the reads
//! made so far, which is how docs/DESIGN.md lets a program "travel"). Each key operation is
//! a state executed at the primary of the key's shard. A server that receives the
//! transaction (`Exec`) runs every operation it can serve itself: reads, and the
//! program's writes in program order ([`meridian_txn::Execution::step_ops`]), each one
//! a CrossStitch put. Adjacent states on one server therefore form one *logical state*
//! (§3.5.1). When the next operation's key lives elsewhere the server forwards the
//! execution, with the intermediate data (the reads made and the versions they saw),
//! to that key's primary. The client only runs the start state (which computes the
//! first key), sends the transaction to the first server and receives the result. The
//! workloads order states so that one DC's keys are adjacent (§3.4).
//!
//! # Concurrency control (§3.2)
//!
//! Multi-version timestamp ordering with a client-chosen timestamp (its clock, made
//! unique by the client id). A read returns the version with the largest write
//! timestamp at or below the transaction's and raises that version's read timestamp;
//! a write is refused (abort) when the version it would follow was read by a later
//! timestamp. Uncommitted versions are readable: the reader then *depends* on the
//! writer, and does not precommit at that server until the writer has committed there.
//! If the writer aborts, the reader — never yet precommitted there — aborts with it
//! (a cascading abort). Dependencies follow timestamp order, so they cannot cycle.
//!
//! # Pipelined commit (§3.3, §4)
//!
//! Positions: the client is position 0, the servers of the logical states 1..n.
//!
//! - Server i+1, on receiving and running its state, sends `Ack` to server i naming
//!   server i+2 (or saying that it is the last one). The client's first server acks
//!   the client.
//! - A server sends `Precommit` to its successor once it has executed its state, has
//!   the previous position's precommit (the client precommits as soon as it is
//!   acked), has the successor's ack, has the replication notifies it is owed and has
//!   no unresolved dependency. From then on it cannot abort on its own.
//! - Until then it can: an MVTO refusal, a user abort, a cascading abort or a time-out
//!   aborts the transaction there. The aborting server tells every position before
//!   it (and their replicas, and the client) and sends `ForwardAbort` down the chain.
//!   No later position can have precommitted, so no one can commit.
//! - The last server is the final coordinator. With the previous precommit (and its
//!   notifies) it runs Paxos commit with two *transaction replicas* (the two servers
//!   nearest to it): acceptors are itself and the two replicas, it proposes COMMIT at
//!   ballot 0, and the transaction is committed once two of the three have accepted.
//!   It then tells the client (with the history record) and every participant and
//!   replica.
//!
//! Failures (§4.1). A position waiting for an ack or a precommit re-sends what it sent
//! and, not being precommitted, aborts after `vote`. A precommitted position waiting
//! for the outcome queries its successor every `query`, re-sends its precommit and, if
//! the successor stays silent, queries the position after it (known from the ack): a
//! position that has not precommitted aborts on that query, one that has answers
//! "pending", one that knows the outcome answers it. When the silent successor was the
//! last server, the querier asks the transaction replicas, which run Paxos recovery:
//! phase 1 with a higher ballot on a majority of the three acceptors, then the highest
//! accepted value or ABORT. Whoever learns an outcome passes it to its predecessor and
//! its replicas.
//!
//! # Replication (§3.5)
//!
//! Each shard lives on two servers of its home DC: the primary and its replica. A
//! server that performed puts sends them (`Replicate`) to the shards' replicas with the
//! identity of the next position; each replica installs them as tentative versions
//! and sends `Notify` to that next server (or back to the last server itself), which
//! waits for every notify before it precommits. Decisions reach replicas too; a replica
//! holding an undecided put asks the primary and the next position. "Primary" and
//! "replica" are the shard's current view (fail-over, below), the layout's first copy
//! and its other copy until a failure.
//!
//! # Where this departs from the paper, and why
//!
//! - **Who sends a put to the replica.** The paper has server i send the transaction to
//!   both the put's primary and its replica, and the replica re-runs the next state's
//!   computation to learn whom to notify. With logical states (several reads and puts on
//!   one server) a replica cannot run that computation without the reads, so here the
//!   primary sends its puts to the replica together with the next position's identity.
//!   The notify path is one intra-DC hop longer; WAN trips are the same.
//! - **Servers forget on a crash** (the paper keeps data in memory and relies on the
//!   replica). A restarted server copies its shards from their other replica before it
//!   serves, resolves copied uncommitted versions by asking, refuses to execute or
//!   accept for transactions that started before it crashed (it may have forgotten
//!   what it did for them), answers queries about them with "unknown" (never
//!   AbortReason::Aborted), and refuses writes below them (the read timestamps it
//!   lost cannot be trusted). To know which transactions it may have acted on it keeps
//!   two durable words: a watermark above every transaction timestamp it has acted on,
//!   raised with a synced write *before* it acts on one at or above it (reserving two
//!   sweeps' worth of timestamps, so about two writes a second), and the same for the
//!   ballots it promised. Nothing else raises it: a restarted server refuses exactly
//!   the timestamps it may have acted on, which keeps the refusals of transactions it
//!   never saw short. The rule compares transaction
//!   timestamps with transaction timestamps only: it reads no clock, so it holds under
//!   any skew between clients and servers (a first version compared the clients'
//!   timestamps with the server's own clock and lost updates under 2 s of skew). A
//!   client whose clock is behind a restarted server's watermark is refused there
//!   until its clock passes it: skew costs liveness for that long, never safety.
//!   A restarted server that will not run a forwarded transaction for this reason
//!   says so (`Refused`), and a predecessor that has not precommitted aborts at once
//!   instead of at its vote timeout (seed 6049 of the campaign stalled when that
//!   predecessor crashed just before its timeout). And a recovery's outcome goes to
//!   the three acceptors as well as to whoever asked (seed 7344 stalled once the
//!   asker crashed with it). A replica whose primary forgot a put asks the next
//!   position to abort it, itself included when it is that position (seeds 4286 and
//!   9757 stalled when it skipped itself). An acceptor answers a re-sent prepare of
//!   the ballot it already promised with the same promise (seed 8087 stalled when a
//!   proposer whose own promise was lost was refused by its own acceptor).
//! - **Forgetful acceptors.** Restarted servers re-sync data, not acceptor state, so
//!   in a recovery's phase 1 a server stays silent about transactions it may have acted
//!   on before its crash: its "nothing accepted" could otherwise complete a majority
//!   that misses a COMMIT chosen by the final server and one replica before the crash;
//!   in phase 2 it accepts only ballots above its ballot watermark. Which
//!   transactions it may have acted on *as an acceptor* is judged per client: a third
//!   durable record, one mark per client over that client's timestamps, raised the
//!   same way before it promises or accepts. With the one word, a client whose clock
//!   ran 5 s ahead lifted it past every other client's timestamps, so a restarted
//!   replica stayed silent for transactions begun seconds after it came back, and
//!   with both replicas of a last server restarted so no recovery reached a majority
//!   (seed 661262). A client's own timestamps only grow, so its mark bounds what the
//!   acceptor did for it exactly. The watermark is
//!   written at start, not at the first sweep. Queries and recoveries
//!   started from re-synced tentative versions carry the transaction's timestamp (the
//!   versions' write timestamp), without which every restarted acceptor stays silent.
//! - **Recovery back-off.** Askers re-ask every sweep, faster than a WAN round trip; a
//!   recovery that meets a higher ballot waits `query` plus a random part of it before
//!   the next, or two transaction replicas pre-empt each other forever.
//! - **A client that aborts alone** (its first server silent) tells the replicas of the
//!   first server's shards as well: they may hold that server's tentative puts, and no
//!   one else may ever tell them.
//! - **Fault model.** The paper argues liveness under a single silent failure per
//!   transaction (§4). The simulator counts a second failure within 5 s of the previous
//!   restart (or of the end of a partition that fell while a server was down or
//!   re-syncing), or two copies of a shard down together, as beyond it: safety still
//!   holds, a stall is allowed (and the loss of both copies' memory is a loss; since
//!   fail-over, a copy that holds a shard alone and forgets before the other has
//!   re-synced loses what it committed alone). A transaction whose final server and a transaction replica both restarted while it
//!   was undecided has two forgetful acceptors of three; no recovery can then decide
//!   it safely, and it waits.
//! - **Fail-over of keys** (§4.1, protocol in `failover.rs`). The paper says that "the
//!   keys that Server_{i+1} is hosting will failover to Server_{i+1}'s replica" and that
//!   the recovered server synchronizes "before resuming its original role", without a
//!   protocol. Here
//!   each shard has a view (acting primary, member copies) that changes only by
//!   compare-and-set at a third server, the shard's witness: two copies alone cannot
//!   tell a dead partner from a cut link, and a replica taking over while its primary
//!   drops it would split the shard. A primary serves a read only below a timestamp
//!   floor its members promised (the promise doubles as the heartbeat), and a member
//!   that takes over refuses writes below it; no clock is compared across servers.
//!   A silent primary's keys move to its replica after `failover` (1 s); a silent
//!   replica is dropped and its primary goes on alone (its owed notifies waived). A
//!   restarted or dropped copy is taken back and re-synced as a replica; a restarted
//!   layout primary then takes its role back ("before resuming its original role") once
//!   no view changed for `failover`: it stops raising the floor it promises, waits for
//!   its clock to pass it and proposes itself as primary with the acting one kept as
//!   replica (a take-over that keeps the old primary; the paper names no hand-over
//!   protocol, this one needs none beyond the take-over's). A
//!   shard whose only remaining copy forgot (a second failure) stays unserved: a
//!   stall, never a wrong answer.
//! - **Version GC** (not in the paper, which keeps every version in memory). MVTO
//!   reads at the transaction's timestamp, so a superseded version is garbage only
//!   once no transaction that could read it (or write after it) will come. Each
//!   server keeps a low-water mark of timestamps (`Server::collect_versions`): the
//!   lowest recent timestamp of the clients active at it within a horizon (the
//!   version TTL, at least the vote timeout), less the horizon; a version goes once
//!   its committed successor was written at or below the mark (and installed a TTL
//!   ago, the window every collecting protocol keeps). Safety does not rest on the
//!   mark: a server refuses (`MvtoTooOld`) a read or a write of a key at a timestamp
//!   below the first version it still holds of that key, once anything of the key
//!   was collected, because what that read would see (or that write must check) is
//!   gone, or what it finds there sits at or below the collected part; a replica
//!   refuses a put that would land in the collected part of a chain
//!   (`ReplicaRefused`); a restarted server takes on what its partners collected with
//!   their data (a rejoining one, for the shards it rejoins only: adopting drops what
//!   is held below the partner's floor), and keeps a copied uncommitted version that
//!   falls in its own collected part out of the store, installing it among the
//!   collected ones if it commits (a review found that holding it let a read above
//!   the floor see it instead of the collected version after it). So a transaction is refused only when it is older than the
//!   horizon (it outlived the vote timeout) or its client's clock is behind the
//!   others' by more than the horizon and it was away from the server long enough
//!   for the mark to pass it; a skewed client then waits until its clock passes the
//!   mark, as with the restart watermark: skew costs liveness, never safety.
//! - **Shipping cost.** Receiving a shipped transaction is charged one key operation per
//!   KiB of execution state (the program's arguments and the values read so far), the
//!   "marshalling and unmarshalling" overhead §5.2.1 observes.

mod acceptor;
mod chain;
mod client;
mod decide;
mod failover;
mod msg;
mod recovery;
mod replication;
mod server;
mod sync;

pub use client::Client;
pub use failover::witness_of;
pub use msg::*;
use server::*;
pub use server::{txn_replicas, Server};

use crate::kit::aging::Aging;
use crate::{ClientRole, Env, Protocol, Replica};
use meridian_core::{
    AbortReason, ClientId, Ctx, HomeRule, Key, NodeId, Outcome, Placement, ReadRec, ReplicaSnapshot, Time, TxnId,
    TxnRecord, Value, VersionId, WriteRec,
};
use meridian_storage::MvStore;
use meridian_txn::{Call, Execution, Step};
use rand::Rng as _;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[cfg(test)]
mod tests;

/// The `crossstitch` protocol.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct CrossStitch {
    /// Copies of each shard (primary + replicas) in its home DC: 2 in the paper.
    pub copies: u32,
    /// A deliberately broken variant (tests only).
    pub mutant: crate::Mutant,
}

impl Default for CrossStitch {
    fn default() -> Self {
        CrossStitch {
            copies: 2,
            mutant: crate::Mutant::None,
        }
    }
}

impl Protocol for CrossStitch {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;
    fn name(&self) -> &'static str {
        "crossstitch"
    }
    fn strict(&self) -> bool {
        false
    }
    fn client_may_send(&self, m: &Msg) -> crate::ClientSend {
        m.client_may_send()
    }

    fn placement(&self, home: HomeRule) -> Placement {
        Placement::Home { home, k: self.copies }
    }
    /// Servers forget everything but the watermark in a crash and re-sync from the
    /// shard's other copy. The paper (§4) argues liveness "in the presence of a single,
    /// silent failure" per transaction, and the commit's acceptors (last server and two
    /// transaction replicas) may be any servers: so one server at a time may be down,
    /// and a second failure must wait until the transactions the first one hit have
    /// resolved (vote and query timeouts, 4 s; counted as 5 s after the restart). Two
    /// copies of a shard share a DC, so a DC outage is beyond what either the paper or
    /// this implementation survives.
    fn fault_model(&self) -> crate::FaultModel {
        crate::FaultModel::Forgetful {
            per_group: 1,
            global: true,
            resync: meridian_core::secs(5.0),
        }
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        Server {
            mutant: self.mutant,
            ..Server::new(env.clone(), node)
        }
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id)
    }
    // A server image: the state is serde, and every place that walks a hash table
    // (the positions resolved at a decision, the sweep's positions, the proposers it
    // re-sends, the queries it asks, the versions a re-sync ships) sorts first, so a
    // server rebuilt from its image acts as the original (crates/sim/tests/images.rs).
    crate::kit::image::serde_image!();
}
