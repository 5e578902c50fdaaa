//! HACommit: logless one-phase commit (hacommit.md §III–VI), as `hacommit` (two-phase
//! locking, serializable) and `hacommit-rc` (read committed, §VII-D: no read locks).
//!
//! # The protocol
//!
//! Every shard lives on a replica group of `k` servers (3 by default, `replicas=5` in
//! the fault experiments), spread over DCs by [`Placement::Groups`]. One replica leads
//! the group (the *participant*); the others follow.
//!
//! - **Execution.** The client runs the program interactively: every read goes to the
//!   leader of the key's shard and takes a shared lock there (wound-wait, start time as
//!   priority; `hacommit-rc` takes none). Writes are buffered at the client. Every
//!   operation carries the transaction's configuration so far: the ids of the shards it
//!   touched (§V-E).
//! - **The last operation (§IV).** When the program finishes, its buffered writes are
//!   the last operation. The client sends `Last` to the leader of every shard in the
//!   final configuration: the writes that shard holds (an empty last operation for a
//!   shard it only read), the keys read there, and the full shard list. The leader
//!   checks locally (its shared locks are still held; it takes the exclusive locks),
//!   then replicates its vote and the transaction context (id, shard ids, relevant
//!   writes, read keys, a version sequence number) to its followers, and only after a
//!   majority of the group holds them answers the client with its vote. A NO vote is
//!   answered at once and not replicated: ABORT is the default outcome of recovery
//!   anyway.
//! - **Commit (§V).** The client is the only initial proposer of a one-instance Paxos
//!   whose acceptors are the replicas of every participant. It sends phase 2 with
//!   ballot 0 and its decision (COMMIT only if every vote was yes; it may always abort)
//!   to every replica of every participant. Each replica records the ballot and
//!   decision and acknowledges; the client ends the transaction once a majority of
//!   every participant's group has acknowledged: one round trip from its decision, and
//!   no log write anywhere.
//! - **Client failure (§VI-A).** A replica holding a transaction's context whose
//!   proposer has been silent for `idle` becomes a recovery proposer, after a back-off
//!   of `query` per place it stands after the group's current leader, plus a random
//!   part under one `sweep`: it runs full Paxos from phase 1
//!   with a ballot above any it has seen, to every replica of every shard in the
//!   context's configuration, and proposes the highest-ballot accepted decision, or
//!   ABORT if no response carries one. Competing proposers are resolved by ballots
//!   and the back-off.
//! - **Replica failure (§VI-B).** The leader sends heartbeats every `sweep`; a follower
//!   that misses them for `failover` (plus a rank stagger) starts a view change: the
//!   candidate collects the pending contexts, accepted decisions and recently decided
//!   transactions from a majority of the group, merges them, re-takes the locks of
//!   every voted transaction and starts serving. Without a majority the group stalls
//!   and stays consistent.
//!
//! # Where the paper is vague, and what this module does
//!
//! - **When a decision becomes visible.** The paper lets a participant apply the
//!   decision as soon as it receives phase 2. In Paxos a value accepted by one acceptor
//!   is not chosen: if the client crashes after its phase 2 reached only the leader of
//!   a group, a recovery proposer whose phase-1 quorum misses that leader proposes
//!   ABORT, while the leader has already exposed the writes. So here a decision is
//!   *chosen* once a majority of one participant's group has accepted it (each replica
//!   reports its acceptance to its leader as well as to the proposer); phase 1 of
//!   recovery needs a majority of *every* group, which intersects any such majority. The
//!   leader applies the writes and releases the locks when it learns the decision is
//!   chosen, which is the moment the client ends too (the followers' acknowledgements
//!   reach the client and the leader in the same trip when the client is near the
//!   leader). Followers apply when the leader tells them (`Decided`, re-sent until they
//!   confirm). A ballot-0 ABORT is final at once (the client never proposes COMMIT
//!   too), so aborts release their locks without waiting.
//! - **Locks of a new leader.** A vote is replicated before it is sent so that it "can
//!   be kept consistent during the change of leaders" (§VI-B); under 2PL that includes
//!   its locks. The old leader granted them one after the other, so the merged voted
//!   transactions may conflict among themselves (one committed, the next voted on the
//!   version it wrote, neither known as chosen yet). The new leader therefore installs
//!   every voted transaction's locks as held at once ([`LockTable::hold`]), not as
//!   requests: queued behind the first, the others could be passed by an older
//!   newcomer (wound-wait orders the queue by age), which would read a version a
//!   committed transaction is still to overwrite here (campaign seed 6874, a G-single
//!   after a 20 s partition). A newcomer waits until every voted transaction holding a
//!   conflicting lock on the key is decided.
//! - **Version order.** The leader gives each yes vote a sequence number, replicated
//!   with the context; every replica installs versions ordered by it, so replicas that
//!   learn decisions in different orders still agree. A new leader continues above the
//!   largest sequence number a majority has seen.
//! - **No memory survives a crash** (that is what *logless* means), but for two durable
//!   words. A restarted replica copies its shards' data, pending contexts and acceptor
//!   state (promises and acceptances) from a majority of its group other than itself
//!   before it serves: any decision chosen, or promise given, before the crash
//!   involved a majority, which meets them. Two things escape that copy, and the
//!   replica must know which transactions they may concern:
//!   - **What it did itself.** It keeps a watermark above the start time of every
//!     transaction it has voted for, held a vote of, or promised or accepted a ballot
//!     of, raised with a synced write *before* it acts on one at or above it (two
//!     sweeps' worth at a time, so the write is rare: about two a second), and the
//!     same for the ballots it promised or accepted. After a restart it never votes or
//!     holds a vote for a transaction below its watermark ("forgotten"), accepts the
//!     client's ballot 0 for none, and promises or accepts for one only ballots above
//!     its ballot watermark.
//!   - **What was in flight.** An acceptance of the client's ballot 0 (or of an old
//!     recovery ballot) that reaches another replica only after that replica answered
//!     the re-sync would complete, with this replica's forgotten acceptance, a
//!     majority the copy never saw (test
//!     `a_restarted_replica_never_completes_a_recovery_majority_for_what_it_forgot`; an
//!     earlier rule let a recovery choose ABORT over such a COMMIT). So the re-sync
//!     request carries both watermarks as a *fence*: before answering, each peer
//!     durably promises the ballot watermark for every transaction of the shard that
//!     started below the start-time watermark, known to it or not, so such a late
//!     acceptance is refused. A fenced client ballot 0 makes the peer start recovery
//!     at once, as a forgotten one does at the restarted replica.
//!
//!   The rule compares start times with start times and ballots with ballots and reads
//!   no clock, so it holds under any skew between clients and servers (the rule it
//!   replaces compared start times with the replica's restart time plus a 1 s margin).
//!   A client whose clock is behind a restarted replica's watermark is refused there
//!   until its clock passes it: skew costs liveness, never safety. Departure: the
//!   paper's replicas keep nothing; these keep 16 bytes. Both words are 1 from the
//!   first start, so a replica that never promised a recovery ballot restarts with a
//!   ballot floor of 1 (any recovery ballot passes, the client's 0 does not). A
//!   process restarted with no disk at all (a real cluster without `--durable`) finds
//!   0, has no watermark and falls back to its own clock (transactions started before
//!   its restart, ballots issued before it plus the fail-over time), the only place
//!   the rule reads a clock. Concurrent
//!   failures of a majority of a group are beyond what the paper tolerates: that group
//!   stalls.
//! - **When a silent client's locks go.** The paper aborts an unvoted transaction, or
//!   starts a recovery proposer for a voted one, when its client is suspected failed,
//!   without saying after how long. Here a leader waits `idle` (10 s) for a silent
//!   client, except for a transaction another one waits behind: the leader notes when
//!   it began to block someone since its client was last heard, and if the client is
//!   still silent the fail-over time (1 s) later, aborts it (unvoted: the leader
//!   promised nothing) or recovers it (voted). A client cut off by a partition
//!   otherwise kept its keys locked, and every transaction on the majority side that
//!   touched them waiting, for 10 s. Recovering a live client's transaction is safe
//!   (Paxos; the client learns the outcome from its phase 2), at worst an abort it
//!   could have avoided; a word from the client after the block cancels the early
//!   rule. A replica that refuses the client's ballot 0 because a recovery promised a
//!   higher ballot, and runs no recovery of it itself, arms one: a recovery that
//!   stalled in a partition is dropped, and the client's re-sends would otherwise
//!   keep everyone from ever thinking it silent (campaign seed 258 of this rule).
//! - **Recovery's configuration.** A recovery proposes over the largest configuration
//!   its node knows, and the client's phase-2 message (which carries the final one)
//!   replaces a partial one learnt from a read: a replica that started recovery with
//!   the configuration of a read it merged while re-syncing proposed ABORT to one
//!   shard while the others committed (campaign seed 909 of the fence's first
//!   version).
//! - **Who speaks for a view.** Only a view's leader sends its heartbeats, vote
//!   replication and new-view state, and only after merging a majority's state: a
//!   message for a view from anyone else is ignored, a message of a later view makes a
//!   leader step down (its unvoted transactions abort, its locks go), and a candidate
//!   leads only through its own merge. A replica that led its view before a crash
//!   stands for a new view once re-synced instead of resuming the old one (it holds
//!   none of that view's locks).
//! - **Ballot 0 refused.** A replica that restarted after a transaction began refuses
//!   the client's ballot 0 (it may have forgotten a promise). When it refuses, it starts
//!   recovery of that transaction itself: the client, still re-sending to the replicas
//!   that have not answered, keeps everyone else from thinking it silent, and may never
//!   again ask the replica that knows the outcome.
//! - **Message economy.** The client sends one phase-2 message per replica *node*,
//!   covering every participant shard that node holds (one per replica of the paper's
//!   pattern, not one per shard replica). Leaders tell followers which decisions are
//!   chosen in one batch per sweep, re-sent until confirmed; followers serve no reads,
//!   so this only delays their catching up, not anyone's critical path.
//! - **Retransmission.** Leaders re-send unacknowledged vote replication, followers
//!   re-report their acceptance to the leader until they learn the outcome, recovery
//!   proposers re-send their current phase, and clients re-send phase 2 to replicas
//!   that have not answered. A client whose request to a shard's leader times out tries
//!   the next replica of the group next time, and a read unanswered for the fail-over
//!   time is re-sent to the next replica at once (the believed leader may be cut off
//!   while its group elects another), the read timeout still bounding the whole wait.
//!   The client then follows whichever replica answers (only a replica that holds
//!   itself the leader answers a read or votes): the first one may have been alive,
//!   only making the read wait for a lock, and a last operation sent to the guessed,
//!   cut-off replica stalled the vote, and everyone behind the transaction's locks,
//!   for the vote timeout (a cut-off DC's majority side fell below 1% of its rate in
//!   7 of 50 seeds of a sweep). Hints that go round in a circle while a group changes
//!   view (followers naming a leader that is down, a re-syncing replica naming
//!   itself) are followed up to a limit and then left for a sweep, the read timeout
//!   still bounding the wait, rather than aborting the transaction at once.
//! - **A vote that does not come (§VI-B).** A last operation is never re-sent to
//!   another replica: sent to a new leader while the old leader's vote had reached
//!   some followers, it was voted twice, with two version sequence numbers, and
//!   replicas ordered the versions differently (campaign seeds 1798 and 1986 of that
//!   try). Instead, a shard whose vote has not come within the fail-over time is asked
//!   for it (`VoteQuery`, then every sweep until the vote timeout) at the group's next
//!   replica, following hints. The paper keeps a replicated vote through a change of
//!   leaders and lets a new leader "make a new decision for the vote" when the old
//!   one failed before replicating it. Here the new decision is always no: a yes
//!   would need the reads validated again under locks that died with the old leader,
//!   and the client, holding no vote from the shard, has not proposed COMMIT, so a no
//!   is safe whatever the old leader did. A leader confirms only a vote it replicated
//!   itself in its current view (its answer was lost); a context merged in a view
//!   change may have reached only a minority of the old view while the group went on
//!   without it, so it is answered no as well (campaign seed 137 of this rule's first
//!   version, which re-replicated and confirmed a merged context: a lost update). A
//!   transaction a leader never saw is tombstoned with its no, so a late copy of the
//!   last operation is refused. Before, the client waited for the vote timeout (3 s)
//!   while the transaction's other shards held its locks.
//! - **Telling a refused client.** A replica that refused the client's ballot 0 (a
//!   restarted peer's fence, a higher promise) tells the client the decision when it
//!   applies it, instead of leaving it to the client's next re-send a `status` (1 s)
//!   later; and a replica learns a decision from any phase-2 answer that reports it
//!   chosen, also when its own proposal has already given way to a higher ballot.
//! - **Reads validated at the vote (departure).** After such a re-send the client takes
//!   whichever answer comes first, and it may come from a leader that was replaced in
//!   the meantime, while the shared lock the vote counts is the new leader's: an update
//!   committed through the new view between the two would be lost. (A first version,
//!   validating only the locks, lost updates in the fault campaign: seeds 1279, 1972
//!   and 1618, kept as a sim test.) So the last operation carries the version of every
//!   key read, and the leader votes yes only if it still holds the shared lock *and*
//!   that version is still the key's latest there (`ReadVersionChanged` otherwise);
//!   under the lock the latest version cannot change before the decision, so every read
//!   is valid at the vote. The paper's participants check only their locks; the
//!   version check costs nothing on the common path (the version read under the lock
//!   is the latest).
//! - **Configuration messages.** The paper has the client send the growing configuration
//!   to every participant contacted so far on each operation. Here each operation
//!   carries it to the participant it goes to, and the last operation carries the final
//!   one to every participant. A participant that has not voted aborts unilaterally
//!   when its client goes silent (it promised nothing), so a stale configuration is
//!   never used to decide; recovery always uses a voted context's final configuration.
//! - **Read-only transactions** still send the (empty) last operation and the phase-2
//!   message, so their reads are validated under locks at one point in time.
//! - **Forgetting decided transactions** (issue 53, bounded state; the paper's
//!   replicas keep nothing, but a replica here keeps each decided transaction's entry,
//!   `done`, to answer late messages, a recovery's phase 1 and a follower's report).
//!   Kept for ever, these entries grew a server's state and checkpoint image by
//!   about 8 KB/s on a loaded cluster. Writes go after the tombstone period as
//!   before; the entry goes once it is `forget` old (`hacommit:forget=DUR`, 120 s by
//!   default) **and every replica of every participant shard has settled it**: each
//!   replica holding the entry asks the replicas of the transaction's shards
//!   (`SettleQuery`, batched, at most once a `query`) and forgets it when every one
//!   has answered `Settled`. A replica of a shard says so when it serves the shard
//!   and has applied the decision (a leader: and every follower confirmed applying
//!   it, `pushing`), or has itself forgotten it. So no replica forgets a transaction
//!   while another may still hold it undecided (its context, an acceptance, a
//!   recovery) or lack its writes: whoever could still ask has its answer. A replica
//!   that is down keeps every decision of its shards: the others keep them until it
//!   is back (re-synced, it has them or forgot them with the rest).
//!
//!   Forgetting raises the shard's mark (`Group::forgot_ts`: the largest start time
//!   forgotten; a restarted replica takes the largest its re-sync brings). A
//!   transaction of the shard that is unknown at a replica and started at or below
//!   the mark may be one it forgot, so the replica keeps no state for it from a
//!   message that could decide it anew: a read is refused and a last operation
//!   voted no (`OlderThanForgotten`), a leader ignores a follower's `Accepted` of it,
//!   a recovery's phase 1 gets no promise (`P1b::forgotten`; a promise would be fresh
//!   state from which a recovery could choose ABORT for a committed transaction), and
//!   a phase 2 is refused (`P2bPart::forgotten`), all but the client's ballot-0
//!   ABORT, which is always safe to take (the client proposes one value; an ABORT
//!   is never the value of a committed transaction). A proposer re-asks a replica
//!   that answered "forgotten" with its next re-send: the transaction may be live
//!   and its context on the way there. A client that gets that answer
//!   from a majority of one participant group knows that the group decided and
//!   forgot the transaction before the client heard the outcome (it was cut off
//!   longer than `forget`), and reports the outcome as **unknown**, never as an
//!   abort (a minority may say it of a live transaction whose context it never got;
//!   the majority that holds the context answers). A leader's replication of such a
//!   transaction is refused too (a second review: a copy of the replication delayed
//!   past the forgetting period gave a follower a context that a view change spread
//!   through the group, whose recovery then chose ABORT for the committed
//!   transaction); a live transaction that old votes only if the rest of its group
//!   holds it, and its writes reach the refusing follower with the leader's push. A
//!   pending copy in a view change's state is adopted all the same: it comes from a
//!   replica that took the replication, so the transaction is live there, and a new
//!   leader that skipped it never applied its writes (campaign seed 1394099 of that
//!   try, `forget=1s`: not-durable). A syncing replica applies none of these rules
//!   until it serves (its mark rises with its first peer's answer, before the peer
//!   that holds a transaction has answered).
//!
//!   Safety does not rest on timing: an entry goes only after everyone settled it,
//!   and a forgotten transaction is never voted, promised, accepted or decided again
//!   where it was forgotten. (A review found the first version unsafe: a late phase
//!   1 made fresh promises, and a recovery from them chose ABORT for a committed
//!   transaction; a second try, giving a recovery up once a majority of one group
//!   answered "forgotten", dropped a live transaction whose vote was still being
//!   replicated, and lost its writes at a replica: `forget=1s` campaign seeds
//!   1390017 and 1390234.) Liveness does: `forget` should exceed the longest a
//!   message is delayed, the longest a
//!   transaction runs until it is decided, recovery included (the idle time and a
//!   vote timeout, 13 s by default: a recovery's phase 1 gets no promise from a
//!   replica whose mark passed the transaction while it knew nothing of it, so a
//!   client that died before its last operation reached a group, recovered after a
//!   forgotten newer transaction raised that group's mark, leaves its keys locked:
//!   30 of 2,000 campaign runs at `forget=1s` and 4 at `forget=10s` stalled so, none
//!   at the default; with the default it takes a transaction undecided for two
//!   minutes, a client that died in a long partition), and the skew of the
//!   clients' clocks (a client whose clock is behind the start time of a forgotten
//!   transaction by more than `forget` has its transactions refused until its clock
//!   passes it: skew costs aborts, never safety). The settled-everywhere rule also
//!   assumes, as the view change already did, that a decision reaches every live
//!   replica within the tombstone period: a new leader re-pushes only the decisions
//!   of that period.

mod acceptor;
mod client;
mod execution;
mod forget;
mod msg;
mod recovery;
mod replication;
mod server;
mod sync;
mod view;

pub use client::Client;
pub use msg::*;
pub use server::Server;
use server::*;

use crate::{Env, HoldStats, Protocol};
use meridian_core::{
    AbortReason, ClientId, Ctx, HomeRule, Key, NodeId, Outcome, Placement, ShardId, Time, TxnId, Value, VersionId,
};
use meridian_storage::{Acquired, Grant, LockMode, LockTable, MvStore, Policy, Prio};
use rand::Rng as _;
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The `hacommit` / `hacommit-rc` protocol.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct HaCommit {
    /// Replicas per shard group.
    pub replicas: u32,
    /// Read committed (`hacommit-rc`): reads take no locks and are not validated.
    pub read_committed: bool,
    /// A deliberately broken variant (tests only).
    pub mutant: crate::Mutant,
    /// How long after its decision a replica forgets a settled transaction (`None`:
    /// the tombstone period, 120 s): module docs, "Forgetting decided transactions".
    pub forget: Option<Time>,
}

impl Default for HaCommit {
    fn default() -> Self {
        HaCommit {
            replicas: 3,
            read_committed: false,
            mutant: crate::Mutant::None,
            forget: None,
        }
    }
}

impl Protocol for HaCommit {
    type Msg = Msg;
    type Server = Server;
    type Client = Client;

    fn name(&self) -> &'static str {
        if self.read_committed {
            "hacommit-rc"
        } else {
            "hacommit"
        }
    }
    fn strict(&self) -> bool {
        !self.read_committed
    }
    fn read_committed(&self) -> bool {
        self.read_committed
    }
    fn interactive(&self) -> bool {
        true
    }
    fn client_may_send(&self, m: &Msg) -> crate::ClientSend {
        m.client_may_send()
    }

    fn placement(&self, home: HomeRule) -> Placement {
        Placement::Groups { home, k: self.replicas }
    }
    /// Replicas forget everything in a crash and re-sync from a majority (§V): a group
    /// of 2f+1 survives f of its replicas down or re-syncing at a time.
    fn fault_model(&self) -> crate::FaultModel {
        crate::FaultModel::Forgetful {
            per_group: (self.replicas as usize - 1) / 2,
            global: false,
            resync: meridian_core::secs(2.0),
        }
    }
    fn server(&self, env: &Env, node: NodeId) -> Server {
        Server {
            mutant: self.mutant,
            forget_after: self.forget.unwrap_or(env.timeouts.tombstone),
            ..Server::new(env.clone(), node, self.read_committed)
        }
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Client {
        Client {
            mutant: self.mutant,
            ..Client::new(env.clone(), node, id)
        }
    }
    crate::kit::image::serde_image!();
}

#[cfg(test)]
mod tests;
