//! Paxos commit over two-phase locking (`pc-2pl`) and over optimistic concurrency
//! control (`pc-occ`): the baselines Catenae is measured against (catenae.md §VII-A),
//! with Gray and Lamport's Paxos Commit ("Consensus on transaction commit", TODS 2006)
//! among the DCs.
//!
//! # Deployment
//!
//! Every DC holds a full replica (`Placement::Full`), sharded over its servers (the
//! data servers, four per DC on `gcp3` as in §VII-B). One server per DC, its first, is
//! also the DC's **coordinator** (the paper gives the coordinator its own machine; here
//! it shares the first data server's CPU, so its load is charged to that node: a
//! departure in cost, not in messages). Clients send their call to their own DC's
//! coordinator, the transaction's *home*, which runs the program (the registry is shared)
//! and answers with the outcome and what the transaction read and wrote.
//!
//! # `pc-2pl` (§VII-A, "2PL")
//!
//! Each coordinator holds its DC's lock table (wound-wait, priority = the time the home
//! received the transaction, then its id).
//! - **Pre-declared programs** (every workload's programs declare their keys, as
//!   Catenae requires): before the program runs, the home locks every declared key at
//!   every DC in one round, shared or, for a key the program may write, exclusively,
//!   and each DC's data server answers with the key's newest committed version once
//!   the lock is held there; with a majority of answers per key the program runs
//!   against the newest of each, and a write to a declared key needs no second round.
//!   This is what a 2PL implementer does with pre-declared transactions (issue 54:
//!   reading key by key took ~7.7 one-way WAN trips before the commit round of a
//!   micro transaction and ~47 for a TPC-C NewOrder). A declared *range* (rows named
//!   by a value read) is not locked up front: the rows inside it are read and written
//!   as below. Locking a written key up front holds it longer than locking it at the
//!   end would (conservative 2PL), which is the usual price.
//! - **Other reads**: the home sends `Lock` (shared) for the key (or the batch of keys the
//!   program reads together) to every DC's coordinator; each, once the lock is granted
//!   (at once or after waiting), has its DC's data server answer the home with the
//!   newest committed version. "The coordinator is able to lock a data partition when
//!   the majority of DCs are able to lock \[it\]": the home waits for a majority of
//!   answers per key and uses the version with the largest commit timestamp.
//! - **Writes** are buffered by the program; when it finishes, the home locks every
//!   written key the first round did not lock exclusively at every DC the same way
//!   (`Lock`/`Locked`, a majority per key): this is phase 1 of Paxos commit (each DC
//!   "accepting" that the partition is prepared). The temporary values travel with the commit round's value rather
//!   than to the data servers during execution (same WAN pattern; see departures).
//! - **Wound-wait**: an older request wounds younger holders; their home aborts them
//!   unless they are already in the commit round (then the older waits). A home that
//!   has waited [`LOCK_WAIT`] (1 s; the paper sets "a timeout on waiting for locks"
//!   without its value) for a majority of grants aborts the transaction. An abort
//!   sends `Release` to every DC.
//!
//! # `pc-occ` (§VII-A, "OCC")
//!
//! The home runs the program against its own DC's data servers (no locks), recording
//! the version and commit timestamp of every read; the commit round validates them at
//! every DC. An aborted call is retried once before the abort is returned: the client
//! runs the same call again as a **new transaction** (same client, `seq` with
//! [`RETRY_BIT`] set, so its own versions), and both attempts are in the history: the
//! first as the abort it was (ending before the retry starts), the second with its own
//! outcome. A program's own abort is not retried.
//!
//! # The commit round (both; Paxos commit's second phase)
//!
//! The home picks a commit timestamp above every version it read or locked (its clock,
//! its node id in the low bits), has its own DC vote, and sends `Accept` with the value
//! (reads with versions, final writes, timestamp) to every other DC's coordinator
//! (phase 2a at ballot 0, the leader's privilege in Paxos Commit). Each coordinator
//! validates against its DC and **force-logs its vote** before sending it to every other
//! coordinator (the home included): 2PL checks that it holds every lock the
//! transaction asked for; OCC takes no-wait locks on the read and write sets until the
//! outcome (a conflict with a transaction accepted here and undecided rejects); both
//! check that every version read is still the newest committed here and that the
//! timestamp is above every committed version of a written key and every accepted
//! reader of it. A majority of accepting DCs commits, a majority of rejecting ones
//! aborts ("a transaction is committed when a majority of DC commit"). Every
//! coordinator is a learner: on the outcome it force-logs a commit, releases the locks,
//! and has its DC's data servers install the writes (forced, acknowledged) in
//! timestamp order, so every DC installs the same versions in the same order.
//!
//! Critical path from the home, in one-way WAN trips (nearest majority = the home's DC
//! plus the nearest other): 2PL with a pre-declared program: 2 for the first round,
//! plus 2 per read batch and 2 for the write locks outside the declared keys (ranges),
//! plus 2 for the commit round; OCC: 2 (the commit round). Asserted exactly in
//! `crates/sim/tests/paxoscommit.rs` (write-only 4 / 2, one read 4 / 2, bank transfer
//! 4 / 2).
//!
//! # Choices the paper leaves open
//!
//! - **Where OCC executes** (a departure, labelled; issue 54): §VII-A's OCC distributes
//!   each transaction to every DC, which executes it against its own data servers and
//!   buffers temporary values there, and the coordinators vote on those results. Ours
//!   executes at the home only and has every DC validate the home's read versions in
//!   the commit round. Both take one round trip to the nearest majority (the paper's:
//!   the transaction out, the results and votes back; ours: the accept request out,
//!   the votes back), so latency is the same; they differ in what aborts: ours aborts
//!   when the home's DC lags a committed write (the retry then sees it), the paper's
//!   when the DCs' executions disagree. cat-fig5 and cat-fig7 run this variant.
//!
//! - **What a read returns** (2PL): the newest committed version among a majority of
//!   DCs that granted the shared lock. A DC outside a commit's majority may lag; any
//!   majority includes a DC that held the writer's exclusive lock until it installed
//!   the write, so the newest version is among the answers. OCC reads the home DC only,
//!   which may lag; the validation at a majority then rejects (and the retry usually
//!   sees the installed version).
//! - **Why timestamps and the validation at commit under 2PL**: locks taken during
//!   execution are volatile. A coordinator that restarts has lost them and could grant
//!   a conflicting lock; the commit round's validation (locks still held, versions still
//!   newest, timestamp order) makes such a transaction fail at that DC, and a majority
//!   is needed. This is Replicated Commit's argument (`rc`): every serialization edge
//!   goes forward in timestamp order at any DC in the intersection of two majorities.
//!   Read-only transactions also run the commit round (the paper: "2PL needs to check
//!   and obtain read locks across DCs while OCC requires to validate the read values
//!   across DCs").
//! - **How the commit reaches the minority DC**: votes go to every coordinator, and the
//!   value travels with every vote, so a DC that missed the accept request votes when
//!   it hears a vote, and a DC that missed the outcome gets it from a peer's re-sent
//!   `Decided` (every `query` interval until the DC confirms it installed: `Applied`).
//!   Undecided coordinators re-send their vote to silent peers, asking for theirs.
//! - **A DC's vote is its own decision** (as in `rc`): each DC's vote is written once,
//!   force-logged, never changed; there is no recovery proposer with higher ballots.
//!   With the `Durable` fault model every crashed server restarts, so a transaction
//!   whose votes are split or missing resolves when the silent DC returns: a restarted
//!   coordinator that never voted on a value it hears about votes then (and, having lost
//!   its pre-vote locks, 2PL rejects).
//! - **The home coordinator crashes**: before its DC voted, nothing has left for any
//!   other DC (its forced vote holds the accept requests back), so the transaction
//!   cannot commit; the client keeps asking its home (`Status` every second) and the
//!   restarted home, which does not know it, aborts it for good (forced) and releases
//!   its locks everywhere; other DCs also drop locks of a transaction whose home has
//!   been silent for [`LOCK_WAIT`] plus the fail-over time (a live home renews them
//!   within `LOCK_WAIT`: its next lock round, its commit round or its abort; the
//!   interactive idle time, 10 s, used before, stalled the other DCs' transactions
//!   queued behind a dead home's locks). Dropping locks is not a decision: such a DC
//!   refuses further lock requests for the transaction, votes no if its commit round
//!   still reaches it, and learns and installs the outcome the others decided (a DC
//!   cut off from its peers for 20 s used to record the drop as an abort and never
//!   install their commit). After its DC voted, the other DCs decide
//!   without it; the restarted home replays its vote, learns the outcome from its
//!   peers and answers the client. Nothing committed is lost: votes and commits are
//!   forced, installed writes are forced before they are acknowledged, and the store
//!   and committed timestamps are the checkpoint installed in the same step. The
//!   clients of a DC whose coordinator is down wait until it returns (the baselines
//!   have no fail-over); the other DCs' clients keep committing through the remaining
//!   majority, with one limit below.
//! - **A split vote waits for the silent DC.** With one of three DCs down, two
//!   transactions that conflict and come from the two other DCs each validate first at
//!   their home and are refused at the other: one yes and one no each, and neither can
//!   be decided without the third DC's vote (a DC's vote is its own decision, above).
//!   Under `pc-occ` they keep their validation locks, every transaction that touches
//!   those keys is refused at one DC and accepted at the other, and the hot keys stall
//!   until the DC returns (bank, 100 accounts, NY out for 15 s on three DCs 0.2 ms
//!   apart: CA and TX commit nothing until NY is back). Gray and Lamport's Paxos Commit
//!   avoids this with acceptors for each participant's vote and a recovery leader that
//!   can choose "aborted" for a silent one; this baseline has no such recovery.
//!   `pc-2pl` does not split this way: wound-wait orders conflicting transactions the
//!   same way at every DC.
//! - **One retry, counted honestly** (OCC): see above. A client that crashes while the
//!   retry runs reports the retry as unknown; the first attempt's record is lost with
//!   the client (it aborted and installed nothing).
//!
//! # Departures
//!
//! - The temporary writes are not sent to the data servers during execution: the
//!   exclusive-lock round (2PL) and the commit round carry them, every DC's vote logs
//!   them, and the data servers install them on commit. Same messages across the WAN.
//! - OCC executes at the home DC only; the paper distributes execution to every DC.
//!   Validating the versions read at every DC is what makes the outcome the same.
//! - Coordinator and first data server share a node (see Deployment).

mod client;
mod coordinator;
mod data;
mod home;
mod log;
mod msg;
mod server;

pub use client::Client;
pub use msg::*;
pub use server::Server;
use {log::*, server::*};

use crate::{ClientRole, Env, FaultModel, HoldStats, Protocol};
use meridian_core::{
    AbortReason, ClientId, Ctx, DcId, HomeRule, Key, Layout, NodeId, Outcome, Placement, ReadRec, Time, TxnId,
    TxnRecord, Value, VersionId, WriteRec,
};
use meridian_storage::{Acquired, Grant, LockMode, LockTable, Log, LogRecord, MvStore, Policy, Prio};
use meridian_txn::{Call, Execution, Step};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Concurrency control of the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Cc {
    /// `pc-2pl`: locks at a majority of DCs during execution, wound-wait.
    Locking,
    /// `pc-occ`: local execution, versions validated by every DC at commit, one retry.
    Optimistic,
}

/// The Paxos-commit baselines of catenae.md §VII-A (`pc-2pl`, `pc-occ`).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct PaxosCommit {
    /// Concurrency control.
    pub cc: Cc,
}

/// How long the home coordinator lets a transaction wait for locks (a majority of
/// grants for every key it asked for) before aborting it (the paper sets "a timeout
/// on waiting for locks" without its value). Checked by the housekeeping sweep.
pub const LOCK_WAIT: Time = 1_000_000_000;

/// The bit of a transaction id's `seq` that marks `pc-occ`'s one retry of a call.
pub const RETRY_BIT: u32 = 1 << 31;

/// Low bits of a commit timestamp that hold the home coordinator's node id.
const TS_NODE_BITS: u32 = 16;

/// The coordinator of DC `dc`: its first server (co-located with that server's data).
pub fn coordinator_of(layout: &Layout, dc: DcId) -> NodeId {
    layout.servers_in(dc).next().expect("every DC has a server")
}

/// The data server holding `key` in DC `dc`.
pub fn data_server(layout: &Layout, key: &Key, dc: DcId) -> NodeId {
    layout.replicas(layout.shard_of(key))[dc.0 as usize]
}

/// The commit timestamp a home coordinator picks at `now`, above every timestamp it
/// has seen (`floor`) and above its previous one (`last`), with its node id in the low
/// bits so that timestamps are unique. In microseconds: nanoseconds shifted by the node
/// bits wrapped after 2^48 ns (78 hours of cluster time); microseconds last 8.9 years.
pub fn commit_ts(now: Time, floor: u64, last: u64, node: NodeId) -> u64 {
    let base = (now / 1_000)
        .max((floor >> TS_NODE_BITS) + 1)
        .max((last >> TS_NODE_BITS) + 1);
    (base << TS_NODE_BITS) | (node.0 as u64 & ((1 << TS_NODE_BITS) - 1))
}

impl Protocol for PaxosCommit {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;

    fn name(&self) -> &'static str {
        match self.cc {
            Cc::Locking => "pc-2pl",
            Cc::Optimistic => "pc-occ",
        }
    }
    fn strict(&self) -> bool {
        true
    }
    /// Votes, commits and installed writes are forced; a restarted server rebuilds its
    /// undecided votes (and their locks) and its decisions from the log.
    fn fault_model(&self) -> FaultModel {
        FaultModel::Durable
    }
    fn client_may_send(&self, m: &Msg) -> crate::ClientSend {
        m.client_may_send()
    }

    fn placement(&self, _home: HomeRule) -> Placement {
        Placement::Full
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        Server::new(env.clone(), node, self.cc)
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id, self.cc)
    }
    crate::kit::image::serde_image!();
}

#[cfg(test)]
mod tests;
