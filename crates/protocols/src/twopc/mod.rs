//! Flat two-phase commit, the baseline every paper measures against
//! (`2pc-2pl` and `2pc-occ`).
//!
//! # The protocol
//!
//! The client runs the program interactively: every read goes to the primary of the
//! key's shard, writes are buffered at the client. When the program finishes the client
//! sends `Commit` (reads with the versions seen, final writes, grouped per participant
//! node) to a coordinator: a server in the client's own DC. The coordinator sends
//! `Prepare` to every participant node (one per node, however many of its shards the
//! transaction touches); each votes; on all-yes the coordinator force-logs COMMIT,
//! answers the client and sends `Decide` to the participants, which apply, log, release
//! and `Ack`. That is the client's critical path: remote reads (one round trip each),
//! then one commit round trip between the coordinator and the farthest participant.
//!
//! Concurrency control:
//! - `2pc-2pl`: reads take shared locks, prepare takes exclusive locks, under
//!   WOUND_WAIT with the transaction's start time as priority (so there are no
//!   deadlocks; a wounded transaction that has not prepared aborts there, and one
//!   prepared there is reported to its coordinator (`Msg::Wound`), which aborts it if
//!   still undecided). Prepare also checks that every shared lock is still held.
//! - `2pc-occ`: reads take no locks and return the latest committed version; prepare
//!   validates that each read version is still the latest and takes NO_WAIT locks on
//!   the read and write sets until the decision, so validation and commit are atomic.
//!
//! # Logging and failures
//!
//! Presumed abort. A participant force-logs PREPARED (with its writes) before voting
//! yes, and COMMITTED before acknowledging (installing the writes in the same step); the coordinator force-logs COMMIT before
//! telling anyone. A restarted node replays its log: committed writes are re-installed
//! in log order, prepared-but-undecided transactions re-take their locks and ask the
//! coordinator (`Query`) until they learn the outcome; a restarted coordinator
//! re-sends logged COMMIT decisions and answers ABORT for every transaction it has no
//! COMMIT record of (it cannot have told anyone COMMIT). Lost messages are covered by
//! timeouts: a client re-sends a read unanswered for the fail-over time and aborts one
//! that gets no answer by the read deadline, and asks the coordinator for a lost
//! outcome (`Status`); a client told of an abort its coordinator presumed (it never
//! got the Commit) releases the locks it read under, since that coordinator knows no
//! participant to tell; a coordinator sends PREPARE again to a participant that has not
//! voted after the fail-over time, and aborts when votes do not arrive by the vote
//! timeout; a participant aborts an active transaction whose client went silent and
//! re-asks about a prepared one. Duplicates are harmless: every handler is idempotent
//! (a PREPARE that comes back after its commit is answered yes and changes nothing).
//!
//! The committed store stands for the node's checkpointed on-disk data: a commit's
//! writes are installed in the same step that forces its COMMITTED record, so the store
//! never holds anything the log has not made durable, and it survives a crash. This
//! lets housekeeping drop finished transactions' log records (a checkpoint) instead of
//! keeping every PREPARED record forever.
//!
//! # Departures
//!
//! - Write replication is optional: by default each shard has one copy, on its home
//!   DC's node (`Home { k: 1 }`). With `copies=2` (CrossStitch's baseline, §5.1) each
//!   shard has a second copy on the next node of its home DC: reads still go to the
//!   primary, and every write is part of the commit at both copies (each prepares,
//!   locks and logs it like any participant), so the copies install the same versions
//!   in the same order at no extra round trip.
//! - Reads the program issues together ([`meridian_txn::Tx::read_batch`], the
//!   "futures" of crossstitch.md §5.1) are sent in parallel: one round trip per batch.
//! - A transaction whose coordinator crashes before deciding is aborted (presumed
//!   abort); 2PC blocks participants only until the coordinator restarts.
//! - A read-only transaction still runs both phases (so its read locks/versions are
//!   validated at one point in time); the papers' baselines do the same.

mod client;
mod coordinator;
mod log;
mod msg;
mod participant;
mod server;

pub use client::Client;
pub use msg::*;
pub use server::Server;
use {log::*, server::*};

use crate::{Env, Protocol};
use meridian_core::{
    AbortReason, ClientId, Ctx, HomeRule, Key, NodeId, Outcome, Placement, Time, TxnId, Value, VersionId,
};
use meridian_storage::{Acquired, Grant, LockMode, LockTable, Log, LogRecord, MvStore, Policy, Prio};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Concurrency control used under 2PC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cc {
    /// Two-phase locking, wound-wait.
    Locking,
    /// Optimistic, validation at prepare.
    Optimistic,
    /// No concurrency control at all: reads take no locks and prepare validates
    /// nothing. Deliberately incorrect; not offered on the command line. It exists so
    /// tests can show the checker catches a protocol that is wrong.
    Unsafe,
}

/// The `2pc-2pl` / `2pc-occ` protocol.
#[derive(Clone, Copy, Debug)]
pub struct TwoPc {
    /// Concurrency control variant.
    pub cc: Cc,
    /// Copies of each shard in its home DC (`2pc-2pl:copies=2`, crossstitch.md §5.1:
    /// "each value is stored on two servers"). Reads go to the first (the primary);
    /// writes are prepared and committed at every copy.
    pub copies: u32,
    /// A deliberately broken variant (tests only).
    pub mutant: crate::Mutant,
}

impl TwoPc {
    /// The protocol with one copy per shard.
    pub fn new(cc: Cc) -> Self {
        TwoPc {
            cc,
            copies: 1,
            mutant: crate::Mutant::None,
        }
    }
}

impl Protocol for TwoPc {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;

    fn name(&self) -> &'static str {
        match self.cc {
            Cc::Locking => "2pc-2pl",
            Cc::Optimistic => "2pc-occ",
            Cc::Unsafe => "2pc-unsafe",
        }
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

    fn placement(&self, home: HomeRule) -> Placement {
        Placement::Home { home, k: self.copies }
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        Server {
            mutant: self.mutant,
            ..Server::new(env.clone(), self.cc, node)
        }
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id)
    }
    crate::kit::image::serde_image!();
}

#[cfg(test)]
mod tests;
