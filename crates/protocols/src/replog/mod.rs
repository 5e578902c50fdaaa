//! Two-phase commit over Paxos-replicated logs (`replog`), the Spanner-style baseline of
//! replicated-commit.md §2 and §5.
//!
//! # The protocol
//!
//! Every DC holds every shard (placement `Full`). Each shard is a multi-Paxos group of
//! its replicas with a long-lived leader; the leader holds the shard's lock table
//! (two-phase locking) and its log. Leaders are placed per shard (`leaders=C/V/O`, the
//! paper's `R/R/R` notation; default: shard `s` in DC `s mod #DCs`).
//!
//! - **Reads** go to the shard leader, which takes a shared lock and answers with the
//!   latest committed version. Writes are buffered at the client.
//! - **Commit** (Fig. 1): the client sends `Prepare` to the leader of every shard it
//!   touched, naming the shard of its first write as coordinator. Each leader takes
//!   exclusive locks, checks its shared locks are still held and replicates a PREPARE
//!   entry through its group (one WAN round trip to a majority); once it is chosen a
//!   cohort tells the coordinator (`Prepared`). With its own PREPARE chosen and every
//!   cohort prepared, the coordinator replicates COMMIT, then answers the client and
//!   sends `Decide` to the cohorts, which replicate COMMIT and only then install their
//!   writes and release their locks. An abort is not replicated by the coordinator
//!   (presumed abort); cohorts log it and release at once.
//! - One-way WAN trips from the client's `Prepare` to its decision: 7 with leaders in
//!   different DCs, 6 with leaders in one DC (and the client elsewhere). Cohort
//!   exclusive locks are held 8 trips (leaders apart) or 6 (together).
//! - **Groups**: multi-Paxos with a stable leader. The leader force-logs and sends
//!   `Accept` for each entry; an entry is chosen on a majority (leader included) and
//!   applied in slot order by every replica, so every replica installs a key's versions
//!   in the same order. Followers learn the chosen prefix from later accepts and
//!   heartbeats, and fetch entries they missed (`CatchUp`).
//! - **One proposer per ballot.** Only a leader proposes, under its own ballot; an
//!   acceptor takes `Accept` and `Heartbeat` only from the node that owns the ballot.
//!   A leader that steps down drops its shares and the shard's lock table at once
//!   (not lock by lock, which granted locks to shares still waiting and had them
//!   propose from a deposed leader, under the successor's ballot, into slots the
//!   successor had chosen), so a chosen entry is never replaced.
//! - **Leases and failover**: the leader heartbeats every sweep; a follower that has not
//!   heard from a leader for the lease (10 s by default, as in Spanner; `replog:lease=2s`
//!   sets another, e.g. for a cluster that should resume within seconds on the
//!   majority side of a cut: the paper's point against replog is exactly that a group
//!   waits out its leader's lease, replicated-commit.md §4.1 and §5) — plus a random
//!   back-off — runs Paxos phase 1 with a higher ballot; acceptors refuse to promise
//!   while their current leader's lease may still hold. The new leader re-proposes every
//!   unchosen slot with its ballot (filling holes with no-ops), rebuilds the locks of
//!   prepared transactions from the log and resumes their 2PC: cohorts re-send their
//!   `Prepared` votes; coordinators answer with the decision. A new coordinator leader
//!   also asks the cohorts of each transaction it rebuilt for their votes
//!   (`VoteQuery`) rather than wait a query period for their re-sends. A leader serves
//!   reads only while a majority has acknowledged a heartbeat within the lease.
//!
//! # Departures and choices
//!
//! - Deadlocks are prevented by wound-wait (as in `2pc-2pl`) rather than detected; the
//!   paper says only that deadlocked transactions abort at once. A wounded share that
//!   has not logged its PREPARE aborts at its leader; one whose PREPARE is logged (or on
//!   its way) is reported to its coordinator shard (`Msg::Wound`), which aborts the
//!   transaction if still undecided. `locks=no-wait`
//!   aborts on every lock conflict instead (closer to the abort rates of the paper's
//!   Fig. 7; see docs/EVALUATION.md).
//! - Votes and decisions between leaders are sent to every replica of the target shard
//!   (only the leader acts on them), so a cohort does not need to know who leads the
//!   coordinator's group after a failover.
//! - **Bounded state** (not in the paper): a replica truncates its log `keep` slots
//!   behind its applied point and a follower that falls further behind gets a
//!   snapshot of the shard from its leader (`snapshot.rs`, with the election
//!   restriction this needs); decisions are kept in a record of their own and
//!   forgotten through the log once settled and `forget` old (`forget.rs`).
//! - The paper counts 7 lock-holding trips for co-located leaders; the message pattern
//!   it describes gives 6 (2 + 0 + 2 + 0 + 2), which is what this module measures.
//! - **One node, several shards.** A node may lead several shards a transaction
//!   touches (by placement, or after a fail-over moves a second shard's lead to it).
//!   Participant state is therefore keyed by (transaction, shard) and each shard has
//!   its own lock table: each share prepares, commits and releases on its own.
//! - **Elections.** A candidate whose own promise is a majority (a group of one
//!   replica) wins at once; a leader's lease blocks other candidates but not the lease
//!   holder standing again. A leader back from a crash stands at once rather than
//!   waiting out its own lease (the papers do not say; Spanner's leases are
//!   extended by the same leader, and no other can be elected before they run out, so
//!   a careful implementer lets the only replica that can lead soon do so): a
//!   one-second crash of a leader cost its shard ten seconds without one. It stands
//!   on its restart, not at a sweep. A follower
//!   names its leader to a client only if it heard from it within the fail-over time;
//!   a client whose read meets a follower that knows no live leader tries the next
//!   replica a sweep later instead of aborting. A coordinator aborts a transaction only while it is
//!   undecided and not committing (a sweep's list of expired votes can go stale while
//!   it is worked through).
//! - **A PREPARE lost with a crashed leader** (the papers do not say; a careful 2PC
//!   coordinator does not wait for its vote timeout when it can ask). A coordinator
//!   that has waited the fail-over time for a cohort's vote asks that shard, and again
//!   every fail-over time (`VoteQuery`); its leader answers yes again if its share is prepared, and votes no
//!   (`PrepareLost`) for a transaction it never heard of, tombstoning it so the PREPARE
//!   is refused should it come late. That no is safe: a cohort votes yes only once its
//!   PREPARE is chosen, and every later leader holds every chosen entry. The
//!   coordinator shard's own PREPARE lost: the cohorts' votes name no shards, so the
//!   coordinator cannot ask; a vote a cohort sends again (`Prepared::again`, after a
//!   query period) for a transaction whose own PREPARE never arrived is a presumed
//!   abort, as is a client's status query for it.

mod client;
mod commit;
mod election;
mod execution;
mod forget;
mod log;
mod msg;
mod server;
mod snapshot;

pub use client::Client;
pub use msg::*;
pub use server::Server;
use server::*;

use crate::{Env, HoldStats, Protocol, Replica};
use meridian_core::{
    AbortReason, ClientId, Ctx, DcId, HomeRule, Key, NodeId, Outcome, Placement, ReplicaSnapshot, ShardId, Time, TxnId,
    Value, VersionId,
};
use meridian_storage::{Acquired, Grant, LockMode, LockTable, MvStore, Policy, Prio};
use rand::Rng as _;
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[cfg(test)]
mod tests;

/// The `replog` protocol: leader placement per shard (DC of each shard's leader;
/// empty: shard `s` in DC `s mod #DCs`).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ReplicatedLog {
    /// Leader DC per shard.
    pub leader_dcs: Vec<DcId>,
    /// Abort on any lock conflict (`locks=no-wait`) instead of wound-wait.
    pub no_wait: bool,
    /// The leader lease (`lease=2s`) instead of the deployment's (Spanner's 10 s by
    /// default): how long a group whose leader went silent or was cut off waits before
    /// electing another.
    #[serde(default)]
    pub lease: Option<Time>,
    /// Log slots a replica keeps behind its applied point (`keep=N`; default
    /// 10,000, `server::DEFAULT_KEEP`): older ones are truncated (`snapshot.rs`).
    #[serde(default)]
    pub keep: Option<u64>,
    /// How long after a decision a replica may forget it once settled (`forget=DUR`;
    /// default the tombstone period; `forget.rs`).
    #[serde(default)]
    pub forget: Option<Time>,
    /// A deliberately broken variant (tests only).
    pub mutant: crate::Mutant,
}

impl ReplicatedLog {
    fn leaders(&self, env: &Env) -> Arc<Vec<NodeId>> {
        let l = &env.layout;
        let n = l.topology.num_dcs();
        Arc::new(
            (0..l.topology.shards)
                .map(|s| {
                    let dc = self
                        .leader_dcs
                        .get(s as usize)
                        .copied()
                        .unwrap_or(DcId((s as usize % n) as u16));
                    l.replicas(ShardId(s))[dc.0 as usize]
                })
                .collect(),
        )
    }
}

impl Protocol for ReplicatedLog {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;

    fn name(&self) -> &'static str {
        "replog"
    }
    fn strict(&self) -> bool {
        true
    }
    fn interactive(&self) -> bool {
        true
    }
    fn client_may_send(&self, m: &Msg) -> crate::ClientSend {
        m.client_may_send()
    }

    fn placement(&self, _home: HomeRule) -> Placement {
        Placement::Full
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        let leaders = self.leaders(env);
        let mut env = env.clone();
        if let Some(lease) = self.lease {
            env.timeouts.lease = lease;
        }
        let s = Server::new(
            env,
            node,
            leaders,
            if self.no_wait {
                Policy::NoWait
            } else {
                Policy::WoundWait
            },
        );
        Server {
            mutant: self.mutant,
            keep: self.keep.unwrap_or(s.keep),
            forget: self.forget.unwrap_or(s.forget),
            ..s
        }
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id, &self.leaders(env))
    }
    crate::kit::image::serde_image!();
}
