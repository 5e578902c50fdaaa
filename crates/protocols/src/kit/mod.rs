//! What the protocols share, written once: the rule is that only logic that is really
//! the same in every protocol using it lives here; anything a paper specifies
//! differently stays in that protocol's folder.
//!
//! - [`client`]: the client frame (`client_frame!`: a client's `Actor` impl and, for an
//!   interactive client, its `ClientRole` impl) and a client's bookkeeping of its
//!   transaction: the history record from start to outcome, stepping the program,
//!   recording reads, numbering writes as versions, interactive transactions (`extend`,
//!   the idle stop) and `finish`.
//! - [`image`]: a server's whole state as bytes, for a runtime's checkpoints.
//! - [`reads`]: reads waiting at a server for a shared lock, each answered exactly once.
//! - [`marks`]: the durable watermarks of replicas that forget on a crash.
//! - [`snapshot`]: the committed state a server reports to the checker.
//! - [`timers`]: a role's timers as a named enum.
//! - [`vote`]: the vote and outcome messages of a commit round among DCs (Replicated
//!   Commit and Paxos Commit).

pub mod client;
pub mod image;
pub mod marks;
pub mod reads;
pub mod timers;
pub mod vote;

use meridian_core::{NodeId, ReplicaSnapshot};
use meridian_storage::MvStore;

/// The committed state of `store` at node `me`, as [`crate::Replica::snapshot`] reports it.
pub fn snapshot(me: NodeId, store: &MvStore) -> ReplicaSnapshot {
    ReplicaSnapshot {
        node: me,
        keys: store.snapshot(),
    }
}
