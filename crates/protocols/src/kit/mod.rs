//! What the protocols share, written once: the rule is that only logic that is really
//! the same in every protocol using it lives here; anything a paper specifies
//! differently stays in that protocol's folder.
//!
//! - [`aging`]: maps whose entries expire a fixed time after they were put in
//!   (tombstones), in persistent structures that a checkpoint's copy shares.
//! - [`client`]: the client frame (`client_frame!`: a client's `Actor` impl and, for an
//!   interactive client, its `ClientRole` impl) and a client's bookkeeping of its
//!   transaction: the history record from start to outcome, stepping the program,
//!   recording reads, numbering writes as versions, interactive transactions (`extend`,
//!   the idle stop) and `finish`.
//! - [`image`]: a server's whole state as bytes, for a runtime's checkpoints.
//! - [`reads`]: reads waiting at a server for a shared lock, each answered exactly once
//!   (by its grant, or refused all together when the transaction aborts).
//! - [`marks`]: the durable watermarks of replicas that forget on a crash.
//! - [`server`]: the server frame (`server_frame!`: a server's `Actor` wiring and its
//!   periodic sweep) and `keep_only!`, a crash that keeps only the named durable parts.
//! - [`snapshot`]: the committed state a server reports to the checker.
//! - [`timers`]: a role's timers as a named enum.
//! - [`vote`]: a commit round among DCs (Replicated Commit and Paxos Commit): its vote
//!   and outcome messages, the majority rule, and each coordinator's state of a round
//!   (`Round`: votes, outcome, install acks, what the sweep owes it).

pub mod aging;
pub mod client;
pub mod image;
pub mod marks;
pub mod reads;
pub mod server;
pub mod timers;
pub mod vote;

use meridian_core::{Ctx, NodeId, ReplicaSnapshot, Time};
use meridian_storage::MvStore;

/// The [`crate::Replica`] impl of a protocol's `Server` that keeps its committed data
/// in `self.store` (at node `self.me`) and its locks in one `self.locks` table.
/// `replica!(holds)` also reports the lock-hold statistics in `self.holds`; the items
/// after a `;` are the impl's other methods (a role, outcomes).
macro_rules! replica {
    ($($holds:ident)? $(; $($extra:item)*)?) => {
        impl $crate::Replica for Server {
            fn snapshot(&self) -> meridian_core::ReplicaSnapshot {
                $crate::kit::snapshot(self.me, &self.store)
            }
            fn locked_keys(&self) -> Option<usize> {
                Some(self.locks.len())
            }
            fn versions(&self) -> Option<(u64, u64)> {
                Some((self.store.live(), self.store.collected()))
            }
            $(
                fn lock_holds(&self) -> Option<&$crate::HoldStats> {
                    Some(&self.$holds)
                }
            )?
            $($($extra)*)?
        }
    };
}
pub(crate) use replica;

/// The committed state of `store` at node `me`, as [`crate::Replica::snapshot`] reports it.
pub fn snapshot(me: NodeId, store: &MvStore) -> ReplicaSnapshot {
    store.replica(me)
}

/// Notes for the operator (issue 53, 4) that a sweep gave up on transactions whose
/// client fell silent, releasing what they held: one line per sweep that did, with how
/// many, how long the silence was and the first of them. Rare: it takes a client that
/// crashed or was cut off, or a lock held past the fail-over time while others wait.
pub fn note_silent<M>(
    cx: &mut Ctx<'_, M>,
    ids: impl ExactSizeIterator<Item = meridian_core::TxnId>,
    silent_for: Time,
    what: &str,
) {
    let mut ids = ids;
    let n = ids.len();
    if let Some(first) = ids.next() {
        cx.note(format!(
            "{what}: {n} transaction(s) whose client was silent for {:.1} s or more (first {first})",
            silent_for as f64 / 1e9
        ));
    }
}
