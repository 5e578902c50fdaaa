//! An append-only log with a synced prefix.
//!
//! `append` adds a record that is lost if the node crashes before the next sync;
//! `append_sync` adds one and syncs everything before it (one fsync charged).
//! [`Log::crash`] drops the unsynced tail, which is what a crash does to a real log.
//! The in-memory form here is what the simulator uses; the cost of each call is
//! charged to the actor's context so that the simulator bills it.
//!
//! Records are kept in a persistent vector ([`imbl::Vector`]) of [`Arc`]s, so that
//! copying a log (a real cluster's checkpoint copies the server on its event loop and
//! encodes the copy on a second thread) shares its nodes instead of copying every
//! record, and a later change (a compaction's `retain`, which rebuilds the vector)
//! copies pointers, not records. It encodes as a sequence of records, as a `Vec`
//! would.

use meridian_core::Ctx;
use std::sync::Arc;

/// A log record that knows its encoded size (for cost accounting).
pub trait LogRecord {
    /// Approximate encoded size in bytes.
    fn size(&self) -> u64;
}

/// The log of one node.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(bound(deserialize = "R: serde::Deserialize<'de>"))]
pub struct Log<R> {
    records: imbl::Vector<Arc<R>>,
    synced: usize,
}

impl<R> Default for Log<R> {
    fn default() -> Self {
        Log {
            records: imbl::Vector::new(),
            synced: 0,
        }
    }
}

impl<R: LogRecord + Clone> Log<R> {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends without syncing (lost on crash unless a sync follows).
    pub fn append<M>(&mut self, rec: R, cx: &mut Ctx<'_, M>) {
        cx.charge_log_append(rec.size());
        self.records.push_back(Arc::new(rec));
    }

    /// Appends and syncs (the record and everything before it survive a crash).
    pub fn append_sync<M>(&mut self, rec: R, cx: &mut Ctx<'_, M>) {
        cx.charge_log_sync(rec.size());
        self.records.push_back(Arc::new(rec));
        self.synced = self.records.len();
    }

    /// Syncs what was appended so far (one fsync charged, however little is pending):
    /// for a message that must not go out before an earlier, unforced record is on
    /// disk.
    pub fn sync<M>(&mut self, cx: &mut Ctx<'_, M>) {
        if self.synced < self.records.len() {
            cx.charge_log_sync(0);
            self.synced = self.records.len();
        }
    }

    /// All records, oldest first.
    pub fn records(&self) -> impl DoubleEndedIterator<Item = &R> + ExactSizeIterator + '_ {
        self.records.iter().map(|r| &**r)
    }

    /// Number of records in the synced prefix (those a crash keeps).
    pub fn synced_len(&self) -> usize {
        self.synced
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// A crash: the unsynced tail is lost.
    pub fn crash(&mut self) {
        self.records.truncate(self.synced);
    }

    /// Drops records that are no longer needed (checkpointing); keeps order.
    pub fn retain(&mut self, mut keep: impl FnMut(&R) -> bool) {
        let mut synced = 0;
        let mut i = 0;
        let old_synced = self.synced;
        self.records.retain(|r| {
            let k = keep(&**r);
            if k && i < old_synced {
                synced += 1;
            }
            i += 1;
            k
        });
        self.synced = synced;
    }

    /// Rewrites with `f` the records `which` picks, in place (checkpointing that shrinks
    /// records); keeps order and the synced prefix. A picked record that a copy of the
    /// log still shares is copied (with the pointers of its node); no other record is.
    pub fn rewrite(&mut self, mut which: impl FnMut(&R) -> bool, mut f: impl FnMut(&mut R)) {
        let picked: Vec<usize> = self
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| which(r))
            .map(|(i, _)| i)
            .collect();
        for i in picked {
            f(Arc::make_mut(self.records.get_mut(i).expect("an index of the log")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meridian_core::{rng_for, NodeId, Work};
    use proptest::prelude::*;

    impl LogRecord for u32 {
        fn size(&self) -> u64 {
            4
        }
    }

    proptest! {
        /// After a crash exactly the records up to the last sync remain, and every sync
        /// is charged once.
        #[test]
        fn crash_keeps_synced_prefix(ops in proptest::collection::vec(any::<bool>(), 0..40)) {
            let mut log = Log::<u32>::new();
            let mut rng = rng_for(1, 1);
            let (mut out, mut rec) = (Vec::<meridian_core::Command<()>>::new(), vec![]);
            let mut cx = Ctx::new(0, NodeId(0), &mut rng, &mut out, &mut rec);
            let mut last_sync = 0;
            for (i, sync) in ops.iter().enumerate() {
                if *sync { log.append_sync(i as u32, &mut cx); last_sync = i + 1; } else { log.append(i as u32, &mut cx); }
            }
            let syncs = ops.iter().filter(|s| **s).count() as u32;
            prop_assert_eq!(cx.work(), Work { key_ops: 0, log_syncs: syncs, log_bytes: 4 * ops.len() as u64, serial_ops: 0 });
            log.crash();
            prop_assert_eq!(log.records().copied().collect::<Vec<_>>(), (0..last_sync as u32).collect::<Vec<_>>());
        }
    }
}
