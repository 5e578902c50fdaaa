//! ESSAY

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

use crate::{ClientRole, Env, HoldStats, Protocol, Replica};
use meridian_core::{
    AbortReason, Actor, ClientId, Ctx, DcId, HomeRule, Key, Layout, NodeId, Outcome, Placement, ReadRec,
    ReplicaSnapshot, Time, TimerId, TxnId, TxnRecord, Value, VersionId, WriteRec,
};
use meridian_storage::{Acquired, Grant, LockMode, LockTable, Log, LogRecord, MvStore, Policy, Prio};
use meridian_txn::{Call, Execution, Step};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Concurrency control of the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cc {
    /// `pc-2pl`: locks at a majority of DCs during execution, wound-wait.
    Locking,
    /// `pc-occ`: local execution, versions validated by every DC at commit, one retry.
    Optimistic,
}

/// The Paxos-commit baselines of catenae.md §VII-A (`pc-2pl`, `pc-occ`).
#[derive(Clone, Copy, Debug)]
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
/// bits so that timestamps are unique.
pub fn commit_ts(now: Time, floor: u64, last: u64, node: NodeId) -> u64 {
    let base = now.max((floor >> TS_NODE_BITS) + 1).max((last >> TS_NODE_BITS) + 1);
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
    fn placement(&self, _home: HomeRule) -> Placement {
        Placement::Full
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        Server::new(env.clone(), node, self.cc)
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id, self.cc)
    }
}

#[cfg(test)]
mod tests;
