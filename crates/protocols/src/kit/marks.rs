//! Durable watermarks of replicas that otherwise forget on a crash (HACommit,
//! CrossStitch): a word above every transaction timestamp (and one above every ballot)
//! the replica has acted on, raised with a synced write *before* it acts at or above
//! it, so that after a restart it knows, without reading a clock, which transactions
//! it may have acted on and forgotten. Each protocol's essay says what counts as
//! acting and what a restarted replica refuses below its marks.

use meridian_core::Ctx;

/// Raise a ballot mark by this many ballots (about a second of recovery rounds, whose
/// round is a millisecond count in the bits above 20): the synced write is rare.
pub const BALLOT_RESERVE: u64 = 1_000 << 20;

/// Raises `mark` past `value` (to `value + reserve`) when `value` is at or above it,
/// charging the synced 8-byte write that must reach the disk before the replica acts
/// on `value`.
pub fn raise<M>(mark: &mut u64, value: u64, reserve: u64, cx: &mut Ctx<'_, M>) {
    if value >= *mark {
        *mark = value + reserve;
        cx.charge_log_sync(8);
    }
}
