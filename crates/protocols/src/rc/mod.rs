//! Replicated Commit (`rc`), replicated-commit.md §3.
//!
//! # The protocol
//!
//! Every DC holds every shard (placement `Full`), sharded over its servers; there are no
//! leader replicas and every server has its own lock table (policy `Takeover`: a
//! conflicting request is denied, except that an exclusive lock takes over shared ones).
//!
//! - **Reads** (§3.2.1): the client sends `Read` to the key's replica in *every* DC.
//!   Each places a shared lock and answers with its latest version (and that version's
//!   timestamp), or is denied. Once a majority of DCs granted, the client uses the most
//!   recent version; if a majority denied, the transaction aborts. Writes are buffered.
//! - **Commit** (§3.2.2, Algorithm 1): the client is the sole Paxos proposer; it appoints
//!   the shard of a key it writes (the smallest; first read if read-only) as coordinator and sends
//!   `Accept` (the read and write sets) to that shard's server in every DC. Each
//!   coordinator runs 2PC prepare inside its DC (`Prepare` to every cohort, itself
//!   included); a cohort acquires exclusive locks, checks that its shared locks are still
//!   held, force-logs PREPARED and answers. When all cohorts prepared, the coordinator
//!   accepts (otherwise it rejects: a faulty acceptor), force-logs its vote and sends it
//!   to the client and to the coordinators of the other DCs (`Vote`). Client and
//!   coordinators are learners: a majority of accepts commits, a majority of rejects
//!   aborts. A coordinator that learns the outcome runs 2PC commit in its DC (`Commit`:
//!   install, force-log, release) — so a lock is held from prepare for one WAN trip.
//!
//! Critical path: the commit takes 2 one-way WAN trips from the client's `Accept` to its
//! decision (to the nearest majority of DCs and back), and exclusive locks are held for 1.
//!
//! # Where the paper is vague, and what this module does
//!
//! - **One version order at every replica.** A DC outside the accepting majority still
//!   has to install a committed transaction's writes, and every DC must install the
//!   versions of a key in the same order, or replicas diverge. The paper relies on "the
//!   majority quorum protocol" and reads that pick "the value with the highest
//!   timestamp" (§4.1) without saying where timestamps come from. Here the Paxos value
//!   carries a commit timestamp `ts` chosen by the client (its clock, made larger than
//!   every version it read, with the client id in the low bits so it is unique), and
//!   every replica orders a key's versions by `ts`. For that order to be one the locks
//!   agree with, a cohort's prepare also checks, besides the paper's lock rules:
//!   every read version is still the newest here (nothing newer installed since), the
//!   transaction's `ts` is above the key's newest version and above the timestamps of
//!   transactions that prepared reading it (a per-key read timestamp, kept with the
//!   store). With these rules every edge of the serialization graph goes forward in
//!   `ts` at any DC in the intersection of two majorities, so the one-copy history is
//!   serializable in `ts` order; a transaction whose timestamp arrives too late is
//!   rejected (AbortReason::StaleTimestamp), an abort the paper's protocol does not have.
//! - **Learners carry the value.** A coordinator's accept vote carries the Paxos value
//!   (read and write sets), so a DC that never got the client's `Accept` (lost message,
//!   client crash) can still prepare and vote, or install the writes once the outcome
//!   is known. Undecided coordinators re-send their vote to silent peers and ask for
//!   theirs; a coordinator with no vote after the vote timeout rejects. While it
//!   prepares, it sends PREPARE again every fail-over time to a cohort of its DC that
//!   has not answered (lost with a crash); the paper names no timeout inside a DC.
//! - **Read-only transactions** also run the accept phase, so that their shared locks
//!   are validated at one point (otherwise a read-only transaction could see half of
//!   another's writes).
//! - **Durability.** Cohorts force PREPARED before answering and COMMITTED (with the
//!   writes) before acknowledging; coordinators force their DC's vote before sending it,
//!   so a restarted coordinator never votes twice differently. A cohort's committed
//!   store and its read timestamps are its checkpointed on-disk data (installed in the
//!   same step as the forced record, as in `twopc`). A restarted coordinator that is
//!   asked about a transaction it never voted on rejects it (it cannot have accepted).
//! - The client waits for a majority of DCs for reads and commit; a DC outage only moves
//!   the majority farther away (Fig. 10). If no majority can be reached (partition),
//!   the client keeps asking and the transaction stays undecided — never decided twice.
//!   With one DC of three cut off, a transaction whose two reachable DCs split (one
//!   accepts, the other rejects) waits for the third's vote until the heal, and its
//!   prepared exclusive locks deny reads of its keys in the accepting DC meanwhile: on
//!   hot keys (the bank workload's 100 accounts) the majority side then commits little
//!   (docs/MEASUREMENTS.md, stop 41). That is the paper's vote rule, kept as is.
//! - **One dead server** (issue 53). A DC's vote is its coordinator's alone, so a
//!   dead coordinator leaves its DC silent; with one server of us3 down for good the
//!   simulator's throughput fell from 70 to 3 txn/s (split votes of the other two DCs
//!   wait for it, holding locks; reads one DC denied waited out the 5 s read timeout),
//!   and the DC's live servers never installed the commits it coordinated. Three
//!   departures, none of which the paper rules out: (1) the client suspects a server
//!   that left a read or accept request unanswered for the fail-over time (until it
//!   speaks again) and appoints a coordinator shard whose servers all answer — another
//!   shard of the transaction, or failing that any shard (the coordinator then only
//!   prepares its DC's cohorts; a dead cohort makes its DC reject at the vote timeout,
//!   a vote that settles a split; the paper's choice stands while no server of it
//!   is suspected, and another shard is appointed only if each of its servers spoke
//!   to the client within two fail-over times, or failing that, if every server of
//!   it spoke after the suspect fell silent: a dead server's DC-mate that waits out
//!   its vote timeout is suspected too, and without this the dead server's own shards
//!   were appointed again); (2) a
//!   coordinator whose commit a peer DC has not confirmed sends it, besides the
//!   decision to that DC's coordinator, directly to that DC's cohorts (installing a
//!   decided commit needs no prepare), and counts their acknowledgements; re-sends
//!   back off to one per 8 s; (3) a prepared cohort whose coordinator left two
//!   queries unanswered asks the coordinator shard's servers of the other DCs, which
//!   answer with a decision they know (never with a vote). A transaction whose
//!   coordinator died after it may have voted still waits for its restart on a split:
//!   Paxos cannot know that vote without it. A read that one DC denied while the dead
//!   server's DC is the only one left still waits for the read timeout (5 s): aborting
//!   it at once moved Fig. 10's "I's clients barely affected" from 172 to 229 ms, and
//!   asking the refusing DC again after a randomized back-off (§3.2.1's other choice,
//!   tried at stop 64) cut the majority side's rate through a whole-DC cut below a
//!   third of its rate before it (`rc_and_replog_with_a_short_lease_keep_committing_
//!   through_a_cut_off_dc`), so neither is in.
//! - **Forgetting decisions** (issue 53, bounded state; the paper keeps its Paxos
//!   log for ever). A coordinator's decisions (`done`, and their `Decided` records)
//!   were never dropped, so a server's state and checkpoint images grew with every
//!   transaction it coordinated. A decision is now forgotten `forget_after` (the
//!   tombstone period, 120 s; `rc:forget=DUR`) after the last one who could ask
//!   about it has its answer: a commit once every DC applied it **and every other
//!   DC's coordinator confirmed it** (`Applied`, which a coordinator sends only once
//!   its own decision is on disk: `Log::sync`); an abort once each cohort of this DC
//!   acknowledged it (a cohort now forces its abort record before acknowledging; the
//!   sweep tells the abort again to a cohort that has not). A DC counted through its
//!   cohorts' direct acknowledgements alone is told the decision again until its
//!   coordinator confirms; an abort decided before its value came is kept. Forgetting
//!   raises `forgot_ts` (kept on disk), the largest commit timestamp forgotten. Every
//!   message about a transaction names its timestamp (the value, or `ts` in a reject
//!   vote and a cohort's query), and a coordinator keeps **no state** for a
//!   transaction unknown here at or below `forgot_ts`, since a round opened for it
//!   could decide anew: it never prepares or accepts one (nor one whose round was
//!   opened before its timestamp was known); another DC's coordinator asking for its
//!   vote gets a reject that is not logged (the same for ever: safe, as only aborts,
//!   which a majority rejected, and commits every coordinator confirmed are
//!   forgotten); a client gets `OutcomeForgotten` and reports its outcome as unknown,
//!   never as an abort; a query gets no answer. A decision arriving again (a peer
//!   re-sending a commit after a long cut) is applied again, which installs nothing
//!   twice. `forgot_ts` is forced to disk when it rises (`Rec::Forgot`): the answers
//!   given on it must hold after a crash. Safety rests on none of the timing;
//!   liveness does: `forget_after` must exceed the vote timeout (3 s: a
//!   coordinator that crashed before voting must not find, once restarted, that it
//!   forgot a newer transaction), the clients' clock skew (a client
//!   whose clock is behind the one that wrote the largest forgotten timestamp by
//!   more than that sees its transactions refused, as unknown), the longest a
//!   message is delayed, and the longest a prepared cohort goes without hearing from
//!   anyone (a cohort prepared for a transaction every DC forgot stays prepared, its
//!   keys locked). A coordinator that restarted no longer knows which cohorts
//!   acknowledged an abort: it forgets its aborts `forget_after` after the restart.
//!   While a DC's coordinator has not confirmed a commit, the round stays and tells
//!   it again (with back-off, as above): while a server is dead, the other DCs keep
//!   the commits it was its DC's coordinator of, and its DC's coordinators the
//!   aborts it never acknowledged as a cohort.
//! - **An abort decided before the value arrived.** A DC's coordinator can learn the
//!   abort from the other DCs' rejects before the client's `Accept` reaches it (they
//!   travel on other connections); it then knows no cohorts to tell, and its DC's
//!   read locks stayed until the idle timeout (10 s). When the `Accept` arrives after
//!   such a decision, the coordinator sends the abort to the cohorts it names.

mod client;
mod commit;
mod execution;
mod log;
mod msg;
mod server;

pub use client::Client;
pub use msg::*;
pub use server::Server;
use {log::*, server::*};

use crate::{Env, HoldStats, Protocol};
use meridian_core::{
    AbortReason, ClientId, Ctx, DcId, HomeRule, Key, Layout, NodeId, Outcome, Placement, ReadRec, ShardId, Time, TxnId,
    Value, VersionId,
};
use meridian_storage::{Acquired, LockMode, LockTable, Log, LogRecord, MvStore, Policy};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Low bits of a commit timestamp that hold the client id (keeps timestamps unique).
const TS_CLIENT_BITS: u32 = 20;

/// The commit timestamp a client picks at time `now` after reading versions up to `max_read`:
/// microseconds (nanoseconds shifted by the client bits wrapped after 2^44 ns, 4.9 hours
/// of cluster time, and every later write was refused as stale; microseconds last 203
/// days) above every version read, with the client id in the low bits.
pub fn commit_ts(now: Time, max_read: u64, client: ClientId) -> u64 {
    let base = (now / 1_000).max((max_read >> TS_CLIENT_BITS) + 1);
    (base << TS_CLIENT_BITS) | (client.0 as u64 & ((1 << TS_CLIENT_BITS) - 1))
}

/// The §4.3 crossover: the number of reads per transaction at which Replicated Commit
/// and Replicated Log take equally long, given the mean latency of one read (`tr_*`) and
/// of the commit (`tc_*`) under each. Solving `tr_rc·N + tc_rc = tr_rl·N + tc_rl` gives
/// `N = (tc_rl − tc_rc) / (tr_rc − tr_rl)`. With `tr_rl = (1 − 1/N_dc)·RTT`,
/// `tc_rl = 3.5·RTT` and `tr_rc = tc_rc = RTT` this is `2.5·N_dc`. (The paper prints the
/// numerator with a typo, `T_r^rl − T_e^rc`.)
pub fn crossover_reads(tr_rc: f64, tc_rc: f64, tr_rl: f64, tc_rl: f64) -> f64 {
    (tc_rl - tc_rc) / (tr_rc - tr_rl)
}

/// The `rc` protocol.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ReplicatedCommit {
    /// Deliberately incorrect variant for tests: prepare does not validate reads (shared
    /// locks, read versions, read timestamps). Not offered on the command line; it
    /// exists so tests can show the checker catches what the validation prevents.
    pub unchecked: bool,
    /// How long after a decision may be forgotten it is (`rc:forget=DUR`; default the
    /// tombstone period, 120 s): module docs, "Forgetting decisions".
    pub forget: Option<Time>,
}

impl Protocol for ReplicatedCommit {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;

    fn name(&self) -> &'static str {
        "rc"
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
        let mut s = Server::new(env.clone(), node);
        s.unchecked = self.unchecked;
        s.forget_after = self.forget.unwrap_or(env.timeouts.tombstone);
        s
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id)
    }
    crate::kit::image::serde_image!();
}

#[cfg(test)]
mod tests;
