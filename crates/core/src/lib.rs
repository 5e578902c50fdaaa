//! Meridian's bottom layer: identifiers, keys and values, virtual time, topologies and
//! placement, the sans-IO [`Actor`] contract every protocol role implements, and the
//! history records the checker consumes.
//!
//! Nothing here touches a socket, a thread or a wall clock.

pub mod abort;
pub mod actor;
pub mod history;
pub mod ids;
pub mod key;
pub mod spec;
pub mod time;
pub mod topology;

pub use abort::AbortReason;
pub use actor::{rng_for, Actor, Command, Ctx, Rng, TimerId, Work};
pub use history::{KeyState, Outcome, ReadRec, ReplicaSnapshot, TxnRecord, WriteRec};
pub use ids::{ClientId, DcId, NodeId, ShardId, TxnId, VersionId};
pub use key::{InternKeys, Key, KeyTable, Value};
pub use time::{ms, secs, Time};
pub use topology::{shard_of, HomeRule, Layout, Placement, Topology, TopologyError, DEFAULT_INTRA_RTT_MS};
