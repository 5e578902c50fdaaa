//! Storage and concurrency-control building blocks shared by every protocol
//! (docs/DESIGN.md, "Storage and concurrency control"):
//!
//! - [`MvStore`]: an in-memory multi-version store with write and read timestamps per
//!   version and tentative versions (for MVTO and deferred validation);
//! - [`LockTable`]: shared/exclusive locks under NO_WAIT, WAIT_DIE, WOUND_WAIT, or
//!   "exclusive takes over shared" (replicated-commit.md §3.2.1);
//! - [`occ`]: optimistic read-set validation;
//! - [`Log`]: an append-only log whose synced prefix survives a crash; appends and
//!   syncs are charged to the actor's [`meridian_core::Ctx`], so the simulator bills
//!   their cost.

pub mod locks;
pub mod log;
pub mod mvstore;
pub mod occ;

pub use locks::{Acquired, Grant, LockMode, LockTable, Policy, Prio};
pub use log::{Log, LogRecord};
pub use mvstore::{Collected, MvStore, MvtoRead, Retention, Version};
