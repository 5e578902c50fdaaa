//! Dense lookups for a large history: transaction id → record, version → position in
//! its key's version order. A Meridian history numbers each client's transactions 1, 2,
//! 3, … and each transaction's writes 0, 1, …, so both maps are arrays indexed by those
//! numbers; an id that does not fit (another system's history, a huge client number) falls
//! back to a hash map. At a million transactions this replaces several million hash
//! lookups with cache-friendly array reads (docs/MEASUREMENTS.md, "checker").

use meridian_core::{TxnId, TxnRecord, VersionId};
use rustc_hash::FxHashMap as HashMap;

const NONE: u32 = u32::MAX;
/// Clients numbered below this are indexed densely.
const DENSE_CLIENTS: u32 = 1 << 16;
/// Writes numbered below this are indexed densely.
const DENSE_WRITES: u32 = 1 << 10;

/// Transaction id → index of its record in `History::txns` (an id listed twice: its
/// last record).
pub(crate) struct TxnIndex {
    /// Per client, per sequence number.
    dense: Vec<Vec<u32>>,
    sparse: HashMap<TxnId, u32>,
}

impl TxnIndex {
    pub fn new(txns: &[TxnRecord]) -> Self {
        // A client's row is dense when its highest sequence number is not far above its
        // number of transactions; otherwise its ids go to the hash map.
        let mut count: Vec<u32> = vec![];
        let mut max_seq: Vec<u32> = vec![];
        for t in txns {
            let c = t.id.client;
            if c < DENSE_CLIENTS {
                let c = c as usize;
                if c >= count.len() {
                    count.resize(c + 1, 0);
                    max_seq.resize(c + 1, 0);
                }
                count[c] += 1;
                max_seq[c] = max_seq[c].max(t.id.seq);
            }
        }
        let mut dense: Vec<Vec<u32>> = count
            .iter()
            .zip(&max_seq)
            .map(|(&n, &m)| {
                if n > 0 && (m as u64) < 4 * n as u64 + 64 {
                    vec![NONE; m as usize + 1]
                } else {
                    vec![]
                }
            })
            .collect();
        let mut sparse = HashMap::default();
        for (i, t) in txns.iter().enumerate() {
            match dense.get_mut(t.id.client as usize).filter(|r| !r.is_empty()) {
                Some(row) => row[t.id.seq as usize] = i as u32,
                None => {
                    sparse.insert(t.id, i as u32);
                }
            }
        }
        TxnIndex { dense, sparse }
    }

    pub fn get(&self, id: TxnId) -> Option<usize> {
        let i = match self.dense.get(id.client as usize).filter(|r| !r.is_empty()) {
            Some(row) => *row.get(id.seq as usize)?,
            None => *self.sparse.get(&id)?,
        };
        (i != NONE).then_some(i as usize)
    }
}

/// Version → position in its key's version order, for the versions that have one.
/// Versions are found through their writer's record: `slots[off[i] + seq]`.
pub(crate) struct VersionPos {
    off: Vec<u32>,
    slots: Vec<u32>,
    /// Versions whose writer has no record or whose number is past the record's writes
    /// (a foreign history, or a writer whose records are incomplete).
    extra: HashMap<VersionId, u32>,
}

impl VersionPos {
    pub fn new(txns: &[TxnRecord]) -> Self {
        let mut off = Vec::with_capacity(txns.len() + 1);
        let mut total = 0u32;
        for t in txns {
            off.push(total);
            let n = t
                .writes
                .iter()
                .map(|w| w.version.seq.saturating_add(1))
                .filter(|&s| s <= DENSE_WRITES)
                .max()
                .unwrap_or(0);
            total += n;
        }
        off.push(total);
        VersionPos {
            off,
            slots: vec![NONE; total as usize],
            extra: HashMap::default(),
        }
    }

    fn slot(&self, writer: Option<usize>, v: VersionId) -> Option<usize> {
        let i = writer?;
        let s = self.off[i] as usize + v.seq as usize;
        (v.seq < DENSE_WRITES && s < self.off[i + 1] as usize).then_some(s)
    }

    /// Records `v`'s position; `writer` is its writer's record (`TxnIndex::get`).
    pub fn insert(&mut self, writer: Option<usize>, v: VersionId, p: usize) {
        match self.slot(writer, v) {
            Some(s) => self.slots[s] = p as u32,
            None => {
                self.extra.insert(v, p as u32);
            }
        }
    }

    /// Forgets `v`'s position.
    pub fn remove(&mut self, writer: Option<usize>, v: VersionId) {
        match self.slot(writer, v) {
            Some(s) => self.slots[s] = NONE,
            None => {
                self.extra.remove(&v);
            }
        }
    }

    pub fn get(&self, writer: Option<usize>, v: VersionId) -> Option<usize> {
        let p = match self.slot(writer, v) {
            Some(s) => self.slots[s],
            None => *self.extra.get(&v)?,
        };
        (p != NONE).then_some(p as usize)
    }
}

/// Each record's final write per key number (the version it installs for the key, its
/// last write to it), by index in `History::txns`, in one flat array: a million small
/// vectors were a million allocations. A record that gains a write later (`add`, rare:
/// a transaction of unknown outcome whose version was seen) has its list moved to the
/// end.
pub(crate) struct Finals {
    /// Per record: where its list starts in `items`, and its length.
    span: Vec<(u32, u32)>,
    items: Vec<(u32, VersionId)>,
}

impl Finals {
    pub fn with_capacity(records: usize) -> Self {
        Finals {
            span: Vec::with_capacity(records),
            items: Vec::with_capacity(records * 2),
        }
    }

    /// Appends the next record's list (key numbers distinct).
    pub fn push(&mut self, list: impl IntoIterator<Item = (u32, VersionId)>) {
        let start = self.items.len();
        self.items.extend(list);
        self.span.push((start as u32, (self.items.len() - start) as u32));
    }

    /// The list of the record at `i`.
    pub fn of(&self, i: usize) -> &[(u32, VersionId)] {
        let (s, n) = self.span[i];
        &self.items[s as usize..(s + n) as usize]
    }

    /// Gives the record at `i` the final write `v` of key number `k`, unless it has one.
    pub fn add(&mut self, i: usize, k: u32, v: VersionId) {
        if self.of(i).iter().any(|(key, _)| *key == k) {
            return;
        }
        let (s, n) = self.span[i];
        let start = self.items.len();
        self.items.extend_from_within(s as usize..(s + n) as usize);
        self.items.push((k, v));
        self.span[i] = (start as u32, n + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meridian_core::{Outcome, WriteRec};

    fn rec(client: u32, seq: u32, writes: u32) -> TxnRecord {
        let id = TxnId { client, seq };
        TxnRecord {
            id,
            client: meridian_core::ClientId(client),
            node: meridian_core::NodeId(0),
            dc: meridian_core::DcId(0),
            program: String::new(),
            start: 0,
            commit_start: None,
            end: None,
            outcome: Outcome::Committed,
            abort_reason: None,
            reads: vec![],
            writes: (0..writes)
                .map(|s| WriteRec {
                    key: meridian_core::Key::new(vec![s as u8]),
                    version: VersionId { txn: id, seq: s },
                })
                .collect(),
            wan_trips: 0,
        }
    }

    #[test]
    fn dense_and_sparse_ids_are_both_found() {
        // client 1 dense; client 2 has one huge sequence number (sparse); client 2^20
        // is past the dense range; an id listed twice maps to its last record.
        let txns = vec![
            rec(1, 1, 2),
            rec(1, 2, 0),
            rec(2, 4_000_000_000, 1),
            rec(1 << 20, 7, 1),
            rec(1, 1, 1),
        ];
        let ix = TxnIndex::new(&txns);
        assert_eq!(ix.get(TxnId { client: 1, seq: 1 }), Some(4));
        assert_eq!(ix.get(TxnId { client: 1, seq: 2 }), Some(1));
        assert_eq!(ix.get(TxnId { client: 1, seq: 3 }), None);
        assert_eq!(ix.get(TxnId { client: 1, seq: 0 }), None);
        assert_eq!(
            ix.get(TxnId {
                client: 2,
                seq: 4_000_000_000
            }),
            Some(2)
        );
        assert_eq!(
            ix.get(TxnId {
                client: 1 << 20,
                seq: 7
            }),
            Some(3)
        );
        assert_eq!(ix.get(TxnId { client: 9, seq: 1 }), None);

        let mut pos = VersionPos::new(&txns);
        let v = |c, s, w| VersionId {
            txn: TxnId { client: c, seq: s },
            seq: w,
        };
        pos.insert(Some(0), v(1, 1, 1), 5);
        pos.insert(Some(0), v(1, 1, 7), 6); // past the record's writes
        pos.insert(None, v(3, 3, 0), 7); // no record
        assert_eq!(pos.get(Some(0), v(1, 1, 1)), Some(5));
        assert_eq!(pos.get(Some(0), v(1, 1, 0)), None);
        assert_eq!(pos.get(Some(0), v(1, 1, 7)), Some(6));
        assert_eq!(pos.get(None, v(3, 3, 0)), Some(7));
        assert_eq!(pos.get(Some(1), v(1, 2, 0)), None);
    }

    #[test]
    fn finals_are_found_and_gain_writes() {
        let v = |s, w| VersionId {
            txn: TxnId { client: 1, seq: s },
            seq: w,
        };
        let mut f = Finals::with_capacity(3);
        f.push([(0, v(1, 0)), (2, v(1, 1))]);
        f.push([]);
        f.push([(1, v(3, 0))]);
        assert_eq!(f.of(0), &[(0, v(1, 0)), (2, v(1, 1))]);
        assert_eq!(f.of(1), &[]);
        f.add(1, 4, v(2, 0));
        f.add(0, 2, v(1, 5)); // key 2 has its final write already
        f.add(0, 3, v(1, 2));
        assert_eq!(f.of(0), &[(0, v(1, 0)), (2, v(1, 1)), (3, v(1, 2))]);
        assert_eq!(f.of(1), &[(4, v(2, 0))]);
        assert_eq!(f.of(2), &[(1, v(3, 0))]);
    }
}
