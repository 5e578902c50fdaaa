//! Catenae (`catenae`), catenae.md §IV–VI and §VIII.
//!
//! # Roles (§IV, §VII-B)
//!
//! Every DC holds a full replica (`Placement::Full`): each of its nodes is the chain
//! server of the shards it holds (shard = partition), and node 0 of each DC is also
//! the DC's coordinator and transaction resolver. Clients submit to their DC's
//! coordinator. With `secondary=on` the DC's second node is a secondary coordinator
//! that mirrors the first and takes over when it fails (`secondary.rs`).
//!
//! # Message pattern and critical path
//!
//! - **Epochs (§V).** Each coordinator cuts time into epochs (`epoch`, default 10 ms,
//!   aligned on the runtime's clock) and at each boundary sends every other coordinator
//!   one epoch message: the distribution payload (transactions received this epoch, with
//!   receive timestamps), the validation payload (votes of conflicting transactions that
//!   finished here, dominant results of non-conflicting ones) and the previous two
//!   epochs' payloads. An epoch is scheduled once its payloads from every DC are in,
//!   lower epochs first, in one order everywhere (receive time, then id); a missing
//!   epoch is asked for again (`EpochNack`) after the farthest one-way delay plus 5 epochs.
//! - **Chains (§VI-B, C).** Keys come from the program's declaration; a transaction's
//!   chain visits its partitions in ascending shard order. A declared entry may be a
//!   *range* (`meridian_txn::key_range`: every key with a prefix, on one shard) where a
//!   row's name depends on a value read (TPC-C new-order's order id): the range is one
//!   unit of footprints and conflicts, as transaction chains declare a hop by the table
//!   fragment it touches, and the commit-time run may touch any key it covers. The forward pass leaves
//!   footprints; the last server turns it into the backward pass. At each server the
//!   transaction waits (Rule 2) while a conflicting transaction is in the middle of
//!   accessing one of its keys, or while a dependency (Rule 1), an implicit dependency
//!   or a transaction of an earlier epoch has a footprint there and has not accessed it
//!   yet, or while a writer ahead of it on one of its keys has no temporary value yet
//!   (Rule 2 with values); then every conflicting transaction that accessed the key
//!   before becomes a dependency, and it holds its records for the modelled access
//!   time. The resolver
//!   is asked when the Fig. 4 pattern forms (a transaction with dependencies about to
//!   precede footprints of its own epoch); it answers with the candidates its
//!   repository orders before it (implicit dependencies).
//! - **Execution speed is modelled:** a record's access time is `access + per-byte ×
//!   size(key)` (sizes 64 B..4 KiB drawn from the key, the same in every DC) times a
//!   per-access CPU jitter from the node's rng (±`jitter`). Orders differ between DCs
//!   only through those jitters and the network's; nothing sets the success rate.
//! - **Speculative execution (§VI-C).** Chains execute the programs: at each server a
//!   transaction reads its declared keys as its place in their order there has them
//!   (the temporary version of the last unresolved writer ahead of it, else the newest
//!   committed version), the values travel with the backward pass, and the program is
//!   run against them until it ends; its writes are then the transaction's temporary
//!   versions at its chain servers (`chain/spec.rs`). What the DC computed is its
//!   result, reported with the dependencies when the pass ends.
//! - **Validation (§VI-D, E).** A transaction alone in its epoch's conflict set (a static
//!   analysis of the batch, the same in every DC) needs no validation: its home DC
//!   answers with its own result as soon as it committed it, and sends a dominant
//!   result (a digest of its writes) that the others check (`dominant_mismatch` must
//!   stay 0; `dominant_spec_mismatch` counts DCs whose own speculation differed and
//!   that re-executed). A transaction of a conflict set is voted on: each DC's vote is
//!   the set of same-epoch dependencies it executed with (Paxos phase 2 among
//!   coordinators; a DC accepts one value, its own execution); a value with a
//!   majority is chosen, and when none can reach a majority the transaction aborts.
//!   A DC whose execution lost catches up: it applies the update operations of a DC
//!   that voted the chosen dependencies, asked for as soon as the transaction is
//!   decided (`catchup.rs`; one more round trip).
//! - **Commit.** A conflict set commits once all its members are decided and executed
//!   here (or gone on without this DC's execution: below) and every earlier epoch's
//!   transactions on its keys are done. Its members are
//!   ordered by a topological sort of the decided dependencies (ties by id); members on
//!   a cycle of decided dependencies abort. The commit timestamp is (epoch, rank).
//!   Each transaction commits with this DC's speculative result where that execution
//!   had the chosen dependencies and every value it read is the committed one; with
//!   the program re-executed against the committed state where it had the chosen
//!   dependencies but read a value that changed (a dependency caught up: "the
//!   transaction will need to catch up as well"); with another DC's update operations
//!   where its execution lost (`validate.rs` module docs). The writes go to the chain
//!   servers, which install them by timestamp in their multi-version store (the
//!   replica the checker reads) and drop the temporary versions.
//! - **Read-only (§VI-F)** transactions read, concurrently at the local chain servers,
//!   the snapshot of the last scheduled epoch; a key with an unresolved writer of an
//!   epoch up to the snapshot (inside its decision period) makes the client retry
//!   after 50 ms. That epoch's chains are still being dispatched for up to an epoch,
//!   so a chain server holds a read until every footprint of the snapshot's epochs is
//!   in (refused at once, the client retried at the then-newest epoch, just as
//!   incomplete, and read-only transactions spun: issue 54); one held for 50 ms is
//!   refused and retried as before. A declared range is checked the same way in that first round; the
//!   rows the program then reads inside it are fetched at the same snapshot from the
//!   range's server (same shard), where every writer up to the snapshot is installed.
//!
//! Critical path (WAN one-way trips, asserted in tests): read-only 0; non-conflicting 1
//! (the other DCs' epoch messages, then local execution); conflicting 2 (the home's
//! epoch message out, the other DCs' votes back: one RTT to the nearest majority);
//! conflicting where the home DC's execution lost the vote, or read a dependency's
//! value that a catch-up changed, 4 (§VIII-A's two RTTs: the vote, then the update
//! operations of a DC of the majority).
//!
//! # Where this departs from the paper, and why
//!
//! - **A speculative result stands only where its reads are the committed values.**
//!   The paper commits a DC's temporary values once the chosen dependencies equal its
//!   own and its dependencies committed; here the coordinator checks each value the
//!   execution read against the committed state (the same condition, made exact: a
//!   stalled transaction or a dependency that caught up shows as a changed read) and
//!   re-executes the program otherwise. The commit order is a deterministic function of
//!   the batches and the chosen votes, so every DC installs the same versions in the
//!   same order, and the history is a serial execution in timestamp order, whatever
//!   the speculation did.
//! - **Chain servers read every declared key at access** (they cannot know which keys a
//!   program reads before it ran), so a blind writer waits for the value of the writer
//!   ahead of it too; a program reading a row of a range on a server its pass already
//!   left has no speculative result (`chain/spec.rs`).
//! - **Rule 2 holds a key until the writer's value exists**, which can be after the
//!   writer's remaining backward pass (the paper releases it at pre-commit, with values
//!   computed per partition). A reader asks again for a value it waited an epoch for
//!   (a lost `Temp`), and after three epochs goes ahead reading what is older
//!   (`value_waits_cut`): a writer held by a Rule 1 or resolver wait would otherwise
//!   spread that wait, up to the 500 ms stall bound, to every key it already left.
//! - **A reader of an aborted dependency re-executes** at commit (§VI-E aborts it
//!   unless it only write-depends on it): its reads are checked against the committed
//!   state like any other, so the abort is not needed for safety.
//! - **The catch-up's round trip is the paper's, not a necessity here:** programs are
//!   deterministic and every DC commits the same transactions in the same order, so a
//!   DC whose execution lost could re-execute at no WAN cost (the fetched answer is
//!   checked against exactly that, `catch_up_divergent`). We ask a DC of the majority
//!   as §VI-E and §VIII-A describe, so the figures show what a disagreement costs in the
//!   paper. A standby coordinator (`secondary=on`) re-executes instead of asking.
//! - **Votes carry same-epoch dependencies only**, and across epochs a chain server
//!   keeps transactions in epoch order on a shared key (each server learns per epoch how
//!   many footprints to expect: `Manifest`). Across-epoch orders are therefore equal in
//!   every DC by construction; speculation (and Fig. 1's success rate) is about the
//!   races inside an epoch. The paper leaves cross-epoch races to validation.
//! - **Decision periods** are computed (current epoch plus the farthest one-way delay,
//!   width `tolerance`) and travel with votes, but the commit timestamp is (scheduled
//!   epoch, rank) rather than the maximum epoch of their intersection, which would be
//!   unsafe here: (1) a transaction is decided on a majority of votes, so the DCs
//!   deciding it hold different sets of decision periods and would compute different
//!   timestamps, and install the same versions at different places in their
//!   multi-version stores; (2) a transaction scheduled later on a key can have votes
//!   with smaller periods (its voters were less loaded) and so a lower timestamp than
//!   the writer it is ordered behind, so a snapshot between the two would see the
//!   later write without the earlier one. (epoch, rank) is the same in every DC and
//!   grows along every key's commit order by construction. Read-only snapshots use
//!   epoch ids; the decision periods remain in the votes, unused.
//! - **Acyclicity.** Rule 1 waits and the resolver's implicit dependencies keep each DC's
//!   order acyclic in the common case; the resolver stores only edges it enforces.
//!   Because its repository is updated asynchronously a cycle can still form; a
//!   transaction that waits at one server longer than `stall` (500 ms) goes ahead, and
//!   any cycle in the *decided* graph aborts its members deterministically at commit.
//! - **Failures of a DC (§VIII-B).** By default an epoch waits for every DC's message:
//!   a DC outage blocks scheduling until the DC is back, as the paper describes. With
//!   `majority=on` a DC whose coordinator was silent for `delay-tolerance` (default
//!   200 ms) has its epoch messages abandoned by Paxos among the other coordinators
//!   and the epochs go on without it (`majority.rs`). Departure: the paper proceeds on
//!   any majority of messages and lets validation fix what diverged; here every DC
//!   must schedule an epoch with the same batch, so leaving a message out is agreed
//!   first, and a DC's own transactions wait for one acknowledgement of its message
//!   (no extra latency from EU on gcp3; about one more one-way trip to the nearest DC
//!   from US and AS). A DC whose message for an epoch was abandoned abstains on that
//!   epoch's conflicting transactions, so a split of the others aborts instead of
//!   waiting for a DC that is cut off. With fewer than three DCs majority mode is the
//!   default mode.
//! - **Abstentions (not in the paper).** A DC votes with its own execution, so a DC
//!   that cannot execute a conflicting transaction (one of its chain servers is down or
//!   cut off; the paper gives chain servers no fail-over) never votes. When the other
//!   two of three DCs executed it differently, neither value can reach a majority
//!   without that vote, and the transaction, then every later one on its keys, waits
//!   in every DC until the server is back. So a coordinator whose DC has not finished a
//!   conflicting transaction `abstain_after` after scheduling it (the runtime's
//!   fail-over timeout, at least twice `stall`), while the other DCs' votes are in and
//!   none can reach a majority without its own, votes an abstention: a value no
//!   execution equals, counted as a vote cast and never toward a value, so the split
//!   is decided (abort). A DC that is merely slow, with no one waiting on its vote,
//!   keeps its transactions (a lone DC abstaining would only abort them). It is the DC's
//!   one ballot-zero acceptance, like any vote: a DC that abstained never votes its
//!   execution later (`CoTxn::voted`; with a secondary, a successor knows an abstention
//!   once it is held). Two DCs that agree still commit; a split now aborts.
//! - **Going on without this DC's execution (not in the paper).** A decided
//!   transaction that this DC has not finished executing `abstain_after` after
//!   scheduling it, or at once when its chain visits a server suspected down (one that
//!   owes acknowledgements and has been silent that long), commits here without the
//!   chain: with the update operations of a DC that voted the chosen dependencies (a
//!   catch-up) or, non-conflicting or on a standby, with the program re-executed
//!   against the committed state; the servers its forward pass never reached count it
//!   for the epoch's manifest from the commit or abort (which carries the epoch).
//!   Before this, one dead chain server stopped its DC's commits for good: every later
//!   transaction on a key of one that touched it waited behind it, the DC's clients
//!   got no answer and its live servers installed nothing more (issue 53, NY's node 0
//!   killed for good under `secondary=on`). The dead server's own records get the
//!   commits when it is back (re-sent until acknowledged; they accumulate meanwhile).
//! - **The secondary coordinator (§IV)** is optional (`secondary=on`, default off,
//!   as in the paper). Without it a crashed coordinator resumes from its forced state
//!   and its DC (and, by default, every DC) waits meanwhile. With it the DC's second
//!   node takes over after the fail-over timeout; because every DC must schedule each
//!   epoch with the same messages, the hand-over is a consensus with the other DCs'
//!   coordinators as witnesses, and the secondary mirrors its coordinator's schedule
//!   rather than taking other DCs' epoch messages directly (`secondary.rs` gives the
//!   argument and its limits). Not combined with majority mode.
//! - **Durability.** Servers are modelled as forcing their state to a log before acting
//!   (`on_crash` keeps it; not charged as log writes in the simulator, whose figures
//!   would otherwise carry an fsync per step the paper does not measure; on the real
//!   cluster a journalled server fsyncs before every batch of messages leaves,
//!   `forces_every_step`); lost timers are re-armed on
//!   recovery, missed epochs are sealed empty, and coordinators retransmit unfinished
//!   chains, unacknowledged commits/aborts and manifests. `fault_model` is `Durable`.
//! - **Not strict:** a read-only transaction may miss a commit another DC already
//!   acknowledged (its snapshot is this DC's last scheduled epoch).

mod catchup;
mod chain;
mod client;
mod coordinator;
mod declare;
mod majority;
mod msg;
mod resolver;
mod secondary;
mod validate;

pub use chain::Chain;
pub use client::Client;
pub use coordinator::Coordinator;
pub use msg::*;
pub use resolver::Resolver;

use crate::{ClientRole, Env, Protocol, Replica};
use meridian_core::{
    ms, AbortReason, Actor, ClientId, Ctx, DcId, HomeRule, Key, NodeId, Outcome, Placement, ReadRec, ReplicaSnapshot,
    Time, TimerId, TxnId, TxnRecord, Value, VersionId,
};
use meridian_storage::MvStore;
use meridian_txn::{Call, Execution, Step};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Bits of a commit timestamp below the epoch id (the rank inside the epoch).
pub const RANK_BITS: u32 = 24;

/// The `catenae` protocol and its options (`catenae:epoch=10ms,...`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Catenae {
    /// Epoch length (§V; default 10 ms).
    pub epoch: Time,
    /// Fixed cost of accessing one record at a chain server.
    pub access_base: Time,
    /// Cost per byte of a record (record sizes are drawn from the key, §III-B).
    pub per_byte: Time,
    /// Per-access CPU jitter of a chain server, as a fraction (uniform in ±jitter).
    pub jitter: f64,
    /// Width of a decision period in epochs (the delay tolerance of §VI-E).
    pub tolerance: u64,
    /// Longest wait of a transaction at one chain server before it goes ahead anyway
    /// (a safety valve against a dependency cycle the resolver did not see in time).
    pub stall: Time,
    /// Majority-only mode (§VIII-B): the epoch messages of a DC whose coordinator was
    /// silent for `delay_tolerance` are abandoned by a majority of coordinators and the
    /// epochs scheduled without them, instead of waiting for the DC.
    pub majority: bool,
    /// The delay tolerance of majority mode (§VIII-B).
    pub delay_tolerance: Time,
    /// A secondary coordinator on each DC's second node that takes over when the
    /// coordinator fails (§IV, `secondary.rs`).
    pub secondary: bool,
    /// How long the secondary waits for a silent coordinator before taking over
    /// (default: the runtime's fail-over timeout).
    pub failover: Option<Time>,
}

impl Default for Catenae {
    fn default() -> Self {
        Catenae {
            epoch: ms(10.0),
            access_base: 20_000,
            per_byte: 50,
            jitter: 0.2,
            tolerance: 5,
            stall: ms(500.0),
            majority: false,
            delay_tolerance: ms(200.0),
            secondary: false,
            failover: None,
        }
    }
}

impl Catenae {
    /// Parses `catenae` options: `epoch=10ms`, `access=20us`, `per-byte=50ns`,
    /// `jitter=0.2`, `tolerance=5` (epochs), `stall=500ms`, `majority=on|off`,
    /// `delay-tolerance=200ms` (majority mode only), `secondary=on|off`, `failover=1s`
    /// (with a secondary only).
    pub fn from_params<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Catenae, String> {
        let mut c = Catenae::default();
        let mut delay_given = false;
        let on_off = |k: &str, v: &str| match v {
            "on" | "true" | "1" => Ok(true),
            "off" | "false" | "0" => Ok(false),
            _ => Err(format!("catenae: {k}={v} (expected on or off)")),
        };
        for (k, v) in params {
            match k {
                "majority" => c.majority = on_off(k, v)?,
                "secondary" => c.secondary = on_off(k, v)?,
                "failover" => {
                    let t = parse_time(k, v)?;
                    if t == 0 {
                        return Err("catenae: failover must be positive".into());
                    }
                    c.failover = Some(t);
                }
                "delay-tolerance" => {
                    c.delay_tolerance = parse_time(k, v)?;
                    delay_given = true;
                }
                "epoch" => c.epoch = parse_time(k, v)?,
                "access" => c.access_base = parse_time(k, v)?,
                "per-byte" => c.per_byte = parse_time(k, v)?,
                "stall" => c.stall = parse_time(k, v)?,
                "jitter" => {
                    c.jitter = v
                        .parse::<f64>()
                        .ok()
                        .filter(|j| (0.0..1.0).contains(j))
                        .ok_or_else(|| format!("catenae: jitter={v} (expected a fraction in [0, 1))"))?
                }
                "tolerance" => {
                    c.tolerance = v
                        .parse::<u64>()
                        .ok()
                        .filter(|t| (1..=1000).contains(t))
                        .ok_or_else(|| format!("catenae: tolerance={v} (expected 1..=1000 epochs)"))?
                }
                other => {
                    return Err(format!(
                    "catenae: unknown parameter `{other}` (known: epoch, access, per-byte, jitter, tolerance, stall, majority, delay-tolerance, secondary, failover)"
                ))
                }
            }
        }
        if c.epoch < ms(0.1) || c.epoch > ms(1000.0) {
            return Err(format!(
                "catenae: epoch must be between 0.1 ms and 1 s, got {} ms",
                c.epoch as f64 / 1e6
            ));
        }
        if c.stall == 0 {
            return Err("catenae: stall must be positive".into());
        }
        if delay_given && !c.majority {
            return Err(
                "catenae: delay-tolerance applies to majority mode only (add majority=on); without it an epoch \
                 waits for every DC's message"
                    .into(),
            );
        }
        if c.failover.is_some() && !c.secondary {
            return Err("catenae: failover applies to a secondary coordinator only (add secondary=on)".into());
        }
        if c.secondary && c.majority {
            return Err(
                "catenae: secondary=on and majority=on cannot be combined (a successor would not know the \
                 abandonment promises its coordinator made; see the secondary module's docs)"
                    .into(),
            );
        }
        if c.majority && c.delay_tolerance < c.epoch {
            return Err(format!(
                "catenae: delay-tolerance must be at least one epoch ({} ms)",
                c.epoch as f64 / 1e6
            ));
        }
        Ok(c)
    }

    /// The size in bytes of the record under `key`: drawn deterministically from the
    /// key (64 B to 4 KiB), so every DC's copy of a record costs the same to access.
    pub fn record_size(key: &Key) -> u64 {
        let h = key.stable_hash().wrapping_mul(0x9E37_79B9_7F4A_7C15);
        64 + (h >> 40) % 4033
    }

    /// The modelled time to access `key` once, before CPU jitter.
    pub fn access_time(&self, key: &Key) -> Time {
        self.access_base + self.per_byte * Self::record_size(key)
    }
}

/// Parses `10ms`, `500us`, `50ns`, `1s` or a bare number of milliseconds.
fn parse_time(k: &str, v: &str) -> Result<Time, String> {
    let bad = || format!("catenae: {k}={v} (expected a duration such as 10ms, 50us, 100ns)");
    let (num, unit) = match v.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&v[..i], &v[i..]),
        None => (v, "ms"),
    };
    let x: f64 = num.trim().parse().map_err(|_| bad())?;
    if !x.is_finite() || x < 0.0 {
        return Err(bad());
    }
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(bad()),
    };
    Ok((x * scale) as Time)
}

/// The epoch a time falls in.
pub(crate) fn epoch_of(t: Time, len: Time) -> u64 {
    t / len
}

crate::kit::timers::timers! {
    /// A Catenae server's fixed timers (its per-dispatch, per-hold and per-stall timers
    /// are numbered families from [`T_DISPATCH`], [`T_HOLD`] and [`T_STALL`]).
    pub(crate) enum ServerTimer {
        /// Timer of the coordinator's epoch boundary.
        Epoch = 1,
        /// Timer of the coordinator's retransmission sweep.
        Sweep = 2,
    }
}

/// Timer base of delayed dispatches (coordinator) and record holds (chain servers).
pub(crate) const T_DISPATCH: u64 = 1 << 40;
/// Timer base of chain-server record holds.
pub(crate) const T_HOLD: u64 = 2 << 40;
/// Timer base of chain-server stall checks.
pub(crate) const T_STALL: u64 = 3 << 40;
/// A chain server's check of read-only reads parked for an incomplete epoch.
pub(crate) const T_RO_PARK: u64 = 4 << 40;
/// Timer base of a chain server's checks on a reader waiting for a writer's value.
pub(crate) const T_VALUE: u64 = 5 << 40;

/// A Catenae server node: a chain server for its shards, and on the first node of each
/// DC also the DC's coordinator and transaction resolver (§VII-B co-locates them).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Server {
    /// Chain server role.
    pub chain: Chain,
    /// Coordinator and resolver roles (node 0 of the DC).
    pub coord: Option<Coordinator>,
}

impl Server {
    /// The server on `node`.
    pub fn new(cfg: Arc<Catenae>, env: Env, node: NodeId) -> Server {
        let dc = env.layout.dc_of(node);
        let first = env.layout.server(dc, 0);
        let second = env.layout.server(dc, 1);
        let is_coord = first == node || (cfg.secondary && second == node && second != first);
        let acks_to = if cfg.secondary { vec![first, second] } else { vec![] };
        Server {
            chain: Chain::new(cfg.clone(), env.clone(), node, acks_to),
            coord: is_coord.then(|| Coordinator::new(cfg, env, node)),
        }
    }
}

impl Actor for Server {
    type Msg = Msg;

    fn on_start(&mut self, cx: &mut Ctx<'_, Msg>) {
        if let Some(c) = self.coord.as_mut() {
            c.on_start(cx);
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Forward { .. }
            | Msg::Backward { .. }
            | Msg::Manifest { .. }
            | Msg::Commit { .. }
            | Msg::Abort { .. }
            | Msg::RoRead { .. }
            | Msg::Resolved { .. }
            | Msg::Temp { .. }
            | Msg::TempReq { .. } => self.chain.on_message(from, msg, cx),
            Msg::Edges { txn, deps } => {
                if let Some(c) = self.coord.as_mut() {
                    c.resolver.add_edges(txn, &deps);
                }
            }
            Msg::Resolve { txn, deps, candidates } => {
                if let Some(c) = self.coord.as_mut() {
                    cx.charge_ops(1);
                    let wait_for = c.resolver.resolve(txn, &deps, &candidates);
                    cx.send(from, Msg::Resolved { txn, wait_for });
                }
            }
            Msg::Submit { .. }
            | Msg::ReadOnly { .. }
            | Msg::Epoch { .. }
            | Msg::EpochNack { .. }
            | Msg::Started { .. }
            | Msg::Abandon { .. }
            | Msg::AbandonPromise { .. }
            | Msg::AbandonAccept { .. }
            | Msg::AbandonAccepted { .. }
            | Msg::SlotsDecided { .. }
            | Msg::SlotNack { .. }
            | Msg::Applied { .. }
            | Msg::ManifestNack { .. }
            | Msg::Held { .. }
            | Msg::Scheduled { .. }
            | Msg::SchedNack { .. }
            | Msg::Local { .. }
            | Msg::TakeOver { .. }
            | Msg::TakeOverOk { .. }
            | Msg::Deposed { .. }
            | Msg::Probe { .. }
            | Msg::ProbeReply { .. }
            | Msg::Finished { .. }
            | Msg::CatchUp { .. }
            | Msg::CaughtUp { .. } => {
                if let Some(c) = self.coord.as_mut() {
                    c.on_message(from, msg, cx);
                }
            }
            Msg::Outcome { .. } | Msg::RoReply { .. } => {}
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        if ServerTimer::of(t) == Some(ServerTimer::Epoch)
            || ServerTimer::of(t) == Some(ServerTimer::Sweep)
            || (T_DISPATCH..T_HOLD).contains(&t.0)
        {
            if let Some(c) = self.coord.as_mut() {
                c.on_timer(t, cx);
            }
        } else {
            self.chain.on_timer(t, cx);
        }
    }

    /// Catenae's servers keep their state in a log forced before they act (module
    /// docs): a crash loses only armed timers, which `on_recover` re-arms.
    fn on_crash(&mut self) {}

    fn on_recover(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.chain.on_recover(cx);
        if let Some(c) = self.coord.as_mut() {
            c.on_recover(cx);
        }
    }
}

impl Replica for Server {
    fn snapshot(&self) -> ReplicaSnapshot {
        crate::kit::snapshot(self.chain.me, &self.chain.store)
    }
    fn versions(&self) -> Option<(u64, u64)> {
        Some((self.chain.store.live(), self.chain.store.collected()))
    }
    fn locked_keys(&self) -> Option<usize> {
        Some(self.chain.unresolved_keys())
    }
    fn stats(&self) -> Option<Vec<(String, f64)>> {
        let mut s = self.coord.as_ref().map(|c| c.stats()).unwrap_or_default();
        s.push(("stalls".into(), self.chain.stalls as f64));
        s.push(("resolves".into(), self.chain.resolves as f64));
        s.push(("value_waits_cut".into(), self.chain.value_waits_cut as f64));
        Some(s)
    }
}

impl Protocol for Catenae {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;

    fn forces_every_step(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "catenae"
    }
    /// Serializable, not strict: a read-only transaction reads the snapshot of the
    /// last epoch its DC scheduled, which may miss a transaction another DC already
    /// acknowledged (module docs).
    fn strict(&self) -> bool {
        false
    }
    fn client_may_send(&self, m: &Msg) -> crate::ClientSend {
        m.client_may_send()
    }

    fn placement(&self, _home: HomeRule) -> Placement {
        Placement::Full
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        Server::new(Arc::new(self.clone()), env.clone(), node)
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client::new(env.clone(), node, id, self.secondary)
    }
    crate::kit::image::serde_image!();
}

#[cfg(test)]
mod tests;
