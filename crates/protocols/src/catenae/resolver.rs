//! The transaction resolver (§VI-C, §VIII-C): a dependency repository of the orders
//! the DC's chain servers reported, queried when a chain server sees the Fig. 4
//! pattern (a transaction with dependencies about to be ordered before others).
//!
//! The answer is a topological sort restricted to what matters: a candidate that
//! the repository already orders before the transaction (an ancestor through explicit
//! or earlier implicit dependencies) must stay before it, so it becomes an implicit
//! dependency; the others may follow it. The implicit dependencies are stored as
//! edges of the repository, so later queries respect them (Fig. 3: `T3 ⇒ T1`). The
//! "others may follow" half of an answer is not stored: nothing enforces it on the
//! other transaction (it asks only if it has dependencies itself), and an unenforced
//! edge made the repository cyclic and the chain servers wait for each other (the
//! first version did; every such wait ended at the stall valve). Entries go when the
//! coordinator resolves a transaction.

use super::*;

/// A DC's dependency repository.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Resolver {
    /// `after[t]`: transactions `t` is ordered after.
    after: HashMap<TxnId, BTreeSet<TxnId>>,
    /// Implicit dependencies handed out so far.
    pub implicit: u64,
}

/// How many repository entries one query may visit (a bound on the search; beyond
/// it the candidate is treated as unordered, which the chain server's stall valve and
/// the validation phase tolerate).
const VISIT_LIMIT: usize = 4096;

impl Resolver {
    /// Records that `txn` was ordered after each of `deps`.
    pub fn add_edges(&mut self, txn: TxnId, deps: &[TxnId]) {
        if deps.is_empty() {
            return;
        }
        self.after.entry(txn).or_default().extend(deps.iter().copied());
    }

    /// Which of `candidates` must `txn` (with explicit dependencies `deps`) wait for?
    pub fn resolve(&mut self, txn: TxnId, deps: &[TxnId], candidates: &[TxnId]) -> Vec<TxnId> {
        self.add_edges(txn, deps);
        let ancestors = self.ancestors(txn);
        let wait: Vec<TxnId> = candidates.iter().copied().filter(|c| ancestors.contains(c)).collect();
        self.implicit += wait.len() as u64;
        self.add_edges(txn, &wait);
        wait
    }

    /// Every transaction `txn` is (transitively) ordered after.
    fn ancestors(&self, txn: TxnId) -> HashSet<TxnId> {
        let mut seen: HashSet<TxnId> = HashSet::default();
        let mut stack = vec![txn];
        while let Some(t) = stack.pop() {
            if seen.len() > VISIT_LIMIT {
                break;
            }
            if let Some(ds) = self.after.get(&t) {
                for d in ds {
                    if *d != txn && seen.insert(*d) {
                        stack.push(*d);
                    }
                }
            }
        }
        seen
    }

    /// The transaction committed or aborted in this DC: it leaves the repository.
    pub fn forget(&mut self, txn: TxnId) {
        self.after.remove(&txn);
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.after.len()
    }

    /// Whether the repository is empty.
    pub fn is_empty(&self) -> bool {
        self.after.is_empty()
    }
}
