//! Optimistic concurrency control helpers.

use crate::mvstore::MvStore;
use meridian_core::{Key, VersionId};

/// Validates a read set: every key's latest committed version must still be the one
/// read. Returns the first key that changed.
pub fn validate_reads<'a>(
    store: &MvStore,
    reads: impl IntoIterator<Item = (&'a Key, Option<VersionId>)>,
) -> Result<(), Key> {
    for (k, seen) in reads {
        if store.latest(k).0 != seen {
            return Err(k.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use meridian_core::{TxnId, Value};
    use proptest::prelude::*;

    proptest! {
        /// Validation succeeds iff no read key got a new version after it was read.
        #[test]
        fn validation_detects_exactly_the_overwritten_reads(
            writes_before in proptest::collection::vec(0u8..5, 0..10),
            reads in proptest::collection::btree_set(0u8..5, 0..5),
            writes_after in proptest::collection::vec(0u8..5, 0..4),
        ) {
            let mut s = MvStore::new();
            let mut n = 0;
            let mut w = |s: &mut MvStore, k: u8| {
                n += 1;
                s.install_latest(&Key::new(vec![k]), VersionId { txn: TxnId { client: 0, seq: n }, seq: 0 }, Value::default());
            };
            for k in &writes_before { w(&mut s, *k); }
            let seen: Vec<(Key, Option<VersionId>)> = reads.iter().map(|k| { let key = Key::new(vec![*k]); let v = s.latest(&key).0; (key, v) }).collect();
            for k in &writes_after { w(&mut s, *k); }
            let ok = validate_reads(&s, seen.iter().map(|(k, v)| (k, *v))).is_ok();
            let conflict = writes_after.iter().any(|k| reads.contains(k));
            prop_assert_eq!(ok, !conflict);
        }
    }
}
