//! Hierarchical deferred validation (hierarchical-validation.md §III): `hier-lock`,
//! `hier-ts`, and the paper's baseline "2PC+Locking" as `2pc-deferred`.
//!
//! # What is implemented
//!
//! - **Deferred execution** (§III-B1–4, `client.rs`, `data.rs`). The client reads from
//!   data nodes over a global snapshot set by its first read; later reads return the
//!   newest version at or below it. A read whose newest committed version is newer than
//!   the snapshot is answered in the past and flagged; a tentative version at or below
//!   the snapshot blocks the read until it is final or discarded. Writes are buffered at
//!   the client (the program's own reads of them and repeated reads come from the
//!   client-side cache, `Execution`). Commit sends each involved data node its keys read
//!   and its writes, which it keeps as tentative versions.
//! - **Validator tree** (§III-A, B5, `validator.rs`). Each data node's actor is also its
//!   leaf validator. A local transaction (one data node) is validated and decided there:
//!   2 messages, 2 steps (formulas (6), (7) for N = 1). A distributed one is partially
//!   validated at each leaf, which sends its result and timestamp up; each inner
//!   validator waits for the children that cover involved nodes; the lowest validator
//!   whose subtree covers every involved node decides and tells the client (one
//!   message) and every involved data node. A "no" is passed up at once and the decider
//!   aborts at once (§III-B5: "a violation ... can be informed immediately").
//!   - `hier-lock`: NO_WAIT locks at the leaves (shared for reads, exclusive for
//!     writes) held until the decision; two levels (leaves and one root); commit
//!     timestamp = max of the children's; leaves generate `max(clock, snapshot) + 1`
//!     (§III-C1).
//!   - `hier-ts`: no locks; any depth (`fanout=F`: F children per inner validator,
//!     built bottom up); leaves validate against committed versions and *assume* that
//!     the pending distributed transactions they validated commit (§III-B5), with
//!     pre-assigned round-robin timestamps (leaf i of L owns i+1, i+1+L, ...;
//!     §III-C2); every inner validator re-validates with the max timestamp of its
//!     children against the writes and reads it validated, and may abort there
//!     (`pending.rs` gives the rules and why they are serializable). Its messages up
//!     the tree carry the keys read and written (the paper's bigger messages).
//!   - Every data node moves its clock past every commit timestamp it applies
//!     (§III-C1); the clock also moves past every snapshot it serves (see below).
//! - **Batching** (§III-D, `batch.rs`): on validator → validator and validator →
//!   data node paths, per destination, `batch=N` items per network message, with a
//!   flush timeout (`flush=`, default 10 ms) so a partial batch never waits forever.
//! - **Pipelined validation** (`pipeline=on`, beyond the paper; §IV-C/D found its
//!   prototypes limited by validating serially). The state machine is the same: leaf
//!   validation takes per-key NO_WAIT locks (`hier-ts`: looks up and updates a per-key
//!   index of pending reads and writes), so conflicting transactions are ordered per
//!   key and non-conflicting ones share nothing; what changes is where the work runs. Off (the paper), validation and commit work is charged on the node's one
//!   serial thread (`Ctx::charge_serial_ops`); on, it is spread over the node's cores
//!   like message handling (in a multi-threaded server: per-key latches taken in key
//!   order, the clock a shared atomic maximum).
//! - **`2pc-deferred`** (§II-B, §IV-A3): the same execution; the client is the 2PC
//!   coordinator: prepare (lock + validate at each data node), prepare result with a
//!   proposed timestamp, commit/abort with the max, result: 4 messages and 4 steps per
//!   distributed transaction (formulas (2), (3)); one node: 2 and 2.
//!
//! # Critical path
//!
//! On the paper's one-DC setting: local transaction: client → data node → client.
//! Distributed, decided at level H: client → leaves, H validator hops, decider →
//! client: 2 + H steps without batching. `2pc-deferred`: 4 steps. The tests assert the
//! exact messages per transaction against formulas (3) and (7) (the formula is a worst
//! case: an inner validator sends one message up per transaction, not one per leaf).
//!
//! # Where validators live
//!
//! Leaves share their data node's actor. Inner validators are hosted by server nodes
//! that hold no shard (e.g. 9 nodes for 8 shards gives the root a node of its own, as in
//! §IV-A3), in tree order; when there are not enough spare nodes, an inner validator is
//! hosted by the first data node of its subtree (so `meridian sim --topology lan`,
//! 8 nodes / 8 shards, runs with the root on node 0). A message between a validator
//! and a role on its own host is a local hand-off, not a network message.
//!
//! # Departures from the paper, and why
//!
//! - **The snapshot** is the first read's data node's clock (at least the client's
//!   largest seen timestamp), not the version of the object read: a snapshot equal to an
//!   old object's version would make every later read of a more recently written key
//!   abort (and a never-written key gives snapshot 0). The node's clock is at least the
//!   version of any object it holds, so this only moves the snapshot later.
//! - **Reads move the clock.** A data node serving a read at snapshot s moves its clock
//!   to at least s, so any transaction it validates later gets a timestamp above s.
//!   Without this, a transaction validated later at a node whose clock lags could commit
//!   below a snapshot that already read past it, and a reader's stale read would pass
//!   validation (the paper does not say; it is the classic Clock-SI rule).
//! - **`hier-ts`: a writer of a key a pending transaction read** (the paper is silent).
//!   A local writer, or one decided below the pending reader's decider, is aborted at
//!   the leaf: otherwise it could commit between the reader's leaf timestamp and its
//!   raised final one, and no validator above would know. A distributed writer that
//!   goes at least as high passes, and the reader's decider orders the two
//!   (`pending.rs`). Until stop 72, `hier-ts`'s leaves held locks like `hier-lock`'s,
//!   so its re-validation could never abort and the variant behaved like `hier-lock`.
//! - **`hier-ts`'s inner validators log what they validated** (`Rec::Validated`),
//!   forced before a result is passed up (a decider's goes with its forced decision):
//!   their per-key timestamps are what makes the re-validation safe, so they survive a
//!   crash. This is one forced write per transaction per level below its decider, for
//!   trees of more than two levels (the paper considers no crashes).
//! - **Read-only transactions** cannot be known in advance (programs are code): a read
//!   answered in the past marks the transaction; if it ends with writes it aborts
//!   before any commit message, if it ends read-only it commits with no commit
//!   messages, serialized at its snapshot. So histories are serializable but not
//!   strictly serializable (`strict()` is false): a read-only transaction may miss a
//!   transaction that finished before it started.
//! - **Tentative versions** are written only when the leaf's validation passes (the data
//!   node and its leaf share an actor, so "write tentative, then validate" and
//!   "validate, then write" differ only in the failed case, where the tentative would be
//!   discarded at once).
//! - **`validate=off`** (§IV-B): the paper disables all logic but the messages and every
//!   transaction commits. Skipping the checks would let a rare conflicting pair both
//!   commit, and the checker would rightly fail the run. So here the checks still run,
//!   but cost nothing in the CPU model (no key operations are charged for locking,
//!   validation, reads or installs): what is measured is the message cost alone, as in
//!   the paper, and every history stays checkable. A conflict still aborts (reported
//!   as an abort; on the §IV workload, 8 keys out of 800,000, they are rare).
//! - **Faults** (the paper considers none). Data nodes force-log PREPARED (writes,
//!   snapshot, timestamp) before their leaf votes, and install commits in the same step
//!   as a forced APPLIED record, so the store is the checkpoint. Deciders force-log every
//!   decision before telling anyone. A prepared data node that waits longer than the
//!   query timeout asks the decider; an undecided decider (its children's votes lost, a
//!   crashed inner validator) then decides abort. A data node restarted with prepared
//!   transactions asks at once, without that effect (`Query::decide` false: only a
//!   decision taken while it was down is answered). A client asks the decider for a lost
//!   outcome the same way. The clock survives a crash through a forced reservation
//!   record (the clock never passes the reserved value without forcing a new one).
//!   `2pc-deferred`'s coordinator is the client, which sends its commit request again
//!   to a participant that has not voted within the fail-over time (lost with a
//!   crashed node; a duplicate is answered with the same vote); a prepared participant whose client
//!   went silent runs cooperative termination with its peers (a peer that answers
//!   "undecided" is frozen and refuses the client's decision; all frozen → abort). Both
//!   binding answers, "undecided" and "never prepared here", are forced to the log
//!   before they leave, so a restart does not undo them. An abort taken in termination
//!   is forced too, then sent to the client (which may still be collecting votes: it
//!   aborts at once and tells every participant) and to the frozen peers, which follow
//!   it instead of waiting for their own termination.
//!   The fault model is `Durable`.
//! - **Batches and WAN trips**: a batch continues the causal chain of the input that
//!   filled or flushed it; the paper's setting is one DC, where this does not matter.
//! - **`fanout=F` is counted bottom up** (F children per inner validator): 8 leaves
//!   with `fanout=4` give §III-E's 3 levels (two level-1 validators of 4 data nodes and
//!   a root); `fanout=2` gives 4 levels. Without it, one root over every leaf (§IV-A3).
//! - **`2pc-deferred`'s client reports a commit after every participant's result**
//!   (§II-B counts 4 steps: prepare, prepare result, commit, result); an abort is
//!   reported at once. A one-node transaction is decided by its node (2 messages).
//! - Tombstones of finished transactions (`done`, decisions, and what an inner validator
//!   passed up, `finished`) are kept for the run.
//!
//! # CPU work charged (the simulator's cost model)
//!
//! Every input costs one message. Key operations on top: a read served 1; leaf
//! validation 1 per distinct key read or written (one lock and one version check: a
//! key both read and written is locked exclusive once, not shared and then upgraded;
//! until stop 33 it was charged twice); 1 per tentative version and 1 per installed
//! write; `hier-ts`'s leaf checks are charged like the lock variant's (1 per distinct
//! key: one index lookup and one version check); `hier-ts`'s re-validation 1 per distinct key at each inner validator; and,
//! for a batch of more than one item, 1 per item unpacked. Validation
//! and commit work (all but reads and unpacking) is serial unless `pipeline=on`. With
//! `validate=off` only the unpacking is charged (it is message handling).

mod batch;
mod client;
mod data;
mod msg;
mod pending;
mod server;
mod validator;

pub use client::Client;
pub use msg::*;
pub use server::Server;

use crate::{Env, Protocol};
use meridian_core::{ms, ClientId, HomeRule, Layout, NodeId, Placement, Time};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Which protocol of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    /// `hier-lock`: locks at the leaves, two levels.
    Lock,
    /// `hier-ts`: timestamps, any depth, re-validation at each level.
    Ts,
    /// `2pc-deferred`: 2PC with locks at the data nodes, client as coordinator.
    TwoPc,
}

/// An inner validator's index in the [`Tree`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Vid(pub u32);

/// The `hier-lock` / `hier-ts` / `2pc-deferred` protocol and its parameters.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct HierVal {
    /// Variant.
    pub mode: Mode,
    /// Items per batch on validator paths (1: no batching).
    pub batch: u32,
    /// Children per inner validator (`hier-ts` only; `None`: one root over all leaves).
    pub fanout: Option<u32>,
    /// Whether validation work is charged to the CPU model (`validate=off`: §IV-B).
    pub validate: bool,
    /// How long a partial batch may wait.
    pub flush: Time,
    /// Pipelined validation (beyond the paper, §IV-D): validation and commit work of
    /// non-conflicting transactions runs concurrently on the node's cores; off (the
    /// paper's prototypes), it runs on one serial thread.
    pub pipeline: bool,
}

impl HierVal {
    /// The variant with the paper's defaults (no batching, two levels, validation on).
    pub fn new(mode: Mode) -> Self {
        HierVal {
            mode,
            batch: 1,
            fanout: None,
            validate: true,
            flush: ms(10.0),
            pipeline: false,
        }
    }

    /// Parses `batch=N`, `fanout=F`, `validate=on|off`, `flush=DURATION`,
    /// `pipeline=on|off`.
    pub fn with_params<'a>(mut self, params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, String> {
        let name = self.name();
        for (k, v) in params {
            match (k, self.mode) {
                ("batch", Mode::Lock | Mode::Ts) => match v.parse::<u32>() {
                    Ok(n) if (1..=10_000).contains(&n) => self.batch = n,
                    _ => return Err(format!("{name}: batch={v} (expected 1..=10000 items per batch)")),
                },
                ("flush", Mode::Lock | Mode::Ts) => match meridian_core::time::parse_duration(v) {
                    Ok(t) if t > 0 => self.flush = t,
                    _ => return Err(format!("{name}: flush={v} (expected a positive duration, e.g. 5ms)")),
                },
                ("fanout", Mode::Ts) => match v.parse::<u32>() {
                    Ok(n) if n >= 2 => self.fanout = Some(n),
                    _ => return Err(format!("{name}: fanout={v} (expected at least 2 children per validator)")),
                },
                ("fanout", Mode::Lock) => {
                    return Err(format!(
                        "{name}: fanout is not a parameter of hier-lock (its hierarchy has two levels, §III-B5; use hier-ts)"
                    ))
                }
                ("pipeline", _) => match v {
                    "on" => self.pipeline = true,
                    "off" => self.pipeline = false,
                    _ => return Err(format!("{name}: pipeline={v} (expected on or off)")),
                },
                ("validate", _) => match v {
                    "on" => self.validate = true,
                    "off" => self.validate = false,
                    _ => return Err(format!("{name}: validate={v} (expected on or off)")),
                },
                (other, _) => {
                    let known = match self.mode {
                        Mode::Lock => "batch, flush, validate, pipeline",
                        Mode::Ts => "batch, flush, fanout, validate, pipeline",
                        Mode::TwoPc => "validate, pipeline",
                    };
                    return Err(format!("{name}: unknown parameter `{other}` (known: {known})"));
                }
            }
        }
        Ok(self)
    }
}

/// The validator tree over a layout's data nodes.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Tree {
    /// Data nodes (leaves), sorted.
    pub leaves: Vec<NodeId>,
    /// Inner validators, children before parents (the root is last).
    pub inner: Vec<Inner>,
    /// Each leaf's parent (indexed like `leaves`); `None` with a single leaf.
    pub leaf_parent: Vec<Option<Vid>>,
}

/// An inner validator.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Inner {
    /// The node that runs it.
    pub host: NodeId,
    /// Its parent (`None`: the root).
    pub parent: Option<Vid>,
    /// Its children.
    pub children: Vec<Child>,
    /// Data nodes its subtree covers.
    pub covers: BTreeSet<NodeId>,
    /// Its level (leaves are level 0).
    pub level: u32,
}

impl Tree {
    /// Builds the tree: leaves are the nodes holding shards; inner validators group
    /// `fanout` children (all leaves under one root if `None`) level by level.
    pub fn build(layout: &Layout, fanout: Option<u32>) -> Tree {
        let leaves: Vec<NodeId> = (0..layout.num_servers())
            .map(NodeId)
            .filter(|n| !layout.shards_of(*n).is_empty())
            .collect();
        let mut spare: Vec<NodeId> = (0..layout.num_servers())
            .map(NodeId)
            .filter(|n| layout.shards_of(*n).is_empty())
            .collect();
        spare.reverse();
        let mut tree = Tree {
            leaf_parent: vec![None; leaves.len()],
            leaves: leaves.clone(),
            inner: vec![],
        };
        if leaves.len() < 2 {
            return tree;
        }
        let f = fanout.unwrap_or(leaves.len() as u32).max(2) as usize;
        let mut level: Vec<(Child, BTreeSet<NodeId>)> =
            leaves.iter().map(|n| (Child::Leaf(*n), BTreeSet::from([*n]))).collect();
        let mut depth = 1;
        while level.len() > 1 {
            let mut next = vec![];
            for group in level.chunks(f) {
                let vid = Vid(tree.inner.len() as u32);
                let covers: BTreeSet<NodeId> = group.iter().flat_map(|(_, c)| c.iter().copied()).collect();
                let host = spare.pop().unwrap_or(*covers.iter().next().expect("non-empty"));
                for (c, _) in group {
                    match c {
                        Child::Leaf(n) => {
                            let i = tree.leaves.binary_search(n).expect("leaf");
                            tree.leaf_parent[i] = Some(vid);
                        }
                        Child::Inner(v) => tree.inner[v.0 as usize].parent = Some(vid),
                    }
                }
                tree.inner.push(Inner {
                    host,
                    parent: None,
                    children: group.iter().map(|(c, _)| *c).collect(),
                    covers: covers.clone(),
                    level: depth,
                });
                next.push((Child::Inner(vid), covers));
            }
            level = next;
            depth += 1;
        }
        tree
    }

    /// The parent of leaf `n`.
    pub fn parent_of_leaf(&self, n: NodeId) -> Option<Vid> {
        self.leaves.binary_search(&n).ok().and_then(|i| self.leaf_parent[i])
    }

    /// The validator that decides a transaction over `nodes` (the lowest whose subtree
    /// covers them all); `None` for a local transaction (the leaf decides).
    pub fn decider(&self, nodes: &[NodeId]) -> Option<Vid> {
        if nodes.len() < 2 {
            return None;
        }
        let mut v = self.parent_of_leaf(nodes[0])?;
        loop {
            let inner = &self.inner[v.0 as usize];
            if nodes.iter().all(|n| inner.covers.contains(n)) {
                return Some(v);
            }
            v = inner.parent?;
        }
    }

    /// The children of `v` whose subtrees hold some of `nodes`.
    pub fn involved_children(&self, v: Vid, nodes: &[NodeId]) -> Vec<Child> {
        self.inner[v.0 as usize]
            .children
            .iter()
            .copied()
            .filter(|c| match c {
                Child::Leaf(n) => nodes.contains(n),
                Child::Inner(w) => nodes.iter().any(|n| self.inner[w.0 as usize].covers.contains(n)),
            })
            .collect()
    }

    /// The node a message for child `c` goes to.
    pub fn host_of(&self, c: Child) -> NodeId {
        match c {
            Child::Leaf(n) => n,
            Child::Inner(v) => self.inner[v.0 as usize].host,
        }
    }

    /// Number of levels, leaves included.
    pub fn levels(&self) -> u32 {
        self.inner.last().map_or(1, |r| r.level + 1)
    }
}

/// What every actor of a deployment shares besides [`Env`].
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Shared {
    pub(crate) p: HierVal,
    pub(crate) tree: Tree,
}

impl Protocol for HierVal {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;

    fn name(&self) -> &'static str {
        match self.mode {
            Mode::Lock => "hier-lock",
            Mode::Ts => "hier-ts",
            Mode::TwoPc => "2pc-deferred",
        }
    }
    fn strict(&self) -> bool {
        false
    }
    fn interactive(&self) -> bool {
        true
    }
    fn client_may_send(&self, m: &Msg) -> crate::ClientSend {
        m.client_may_send(self.mode)
    }

    fn placement(&self, home: HomeRule) -> Placement {
        Placement::Home { home, k: 1 }
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        Server::new(env.clone(), self.shared(env), node)
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), self.shared(env), node, id)
    }
    crate::kit::image::serde_image!();
}

impl HierVal {
    fn shared(&self, env: &Env) -> Arc<Shared> {
        let fanout = match self.mode {
            Mode::Ts => self.fanout,
            _ => None,
        };
        Arc::new(Shared {
            p: self.clone(),
            tree: Tree::build(&env.layout, fanout),
        })
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod ts_tests;
