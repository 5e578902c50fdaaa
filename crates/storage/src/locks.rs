//! A shared/exclusive lock table with the policies the protocols need.
//!
//! Priorities order transactions by age: a smaller [`Prio`] is older. Under WOUND_WAIT
//! waiters are kept in priority order (oldest first) and a request is granted if it is
//! compatible with the holders and no older conflicting request waits, so an older
//! transaction never waits for a younger one. Under WAIT_DIE the queue is FIFO and a
//! request is granted only if nothing conflicting holds or waits, so a younger one never
//! waits for an older one. Either way the waits-for graph stays acyclic (property-tested).
//!
//! - `NoWait`: any conflict with a holder denies the request.
//! - `WaitDie`: an older requester waits; a younger one is denied ("dies").
//! - `WoundWait`: an older requester wounds younger conflicting holders (they are
//!   returned; the caller aborts them unless they can no longer abort, e.g. prepared)
//!   and waits; a younger requester waits.
//! - `Takeover` (replicated-commit.md §3.2.1): shared locks never wait; a conflict is
//!   denied, except that an exclusive request takes over shared holders, which are
//!   returned as revoked (they fail when they later check that their locks are held).

use meridian_core::{Key, TxnId};
use rustc_hash::FxHashMap as HashMap;

/// Transaction priority: (timestamp, id); smaller is older and wins.
pub type Prio = (u64, TxnId);

/// Lock mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum LockMode {
    /// Shared (read).
    Shared,
    /// Exclusive (write).
    Exclusive,
}

/// Conflict policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Policy {
    /// Deny on conflict.
    NoWait,
    /// Older waits, younger dies.
    WaitDie,
    /// Older wounds, younger waits.
    WoundWait,
    /// Exclusive takes over shared; other conflicts denied.
    Takeover,
}

/// The answer to a lock request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// The lock is held now.
    Granted,
    /// The request is queued; `wound` lists younger holders the caller should abort.
    Waiting {
        /// Younger conflicting holders (WOUND_WAIT only).
        wound: Vec<TxnId>,
    },
    /// The request was refused; the requester should abort.
    Denied,
    /// Granted by revoking these shared holders (Takeover only).
    TookOver {
        /// Transactions that lost their shared lock.
        revoked: Vec<TxnId>,
    },
}

/// A queued request that became granted after a release.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Who got it.
    pub txn: TxnId,
    /// On which key.
    pub key: Key,
    /// In which mode.
    pub mode: LockMode,
}

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Req {
    txn: TxnId,
    mode: LockMode,
    prio: Prio,
}

#[derive(Clone, Default, Debug, serde::Serialize, serde::Deserialize)]
struct Entry {
    holders: Vec<Req>,
    waiters: Vec<Req>,
}

fn conflicts(a: LockMode, b: LockMode) -> bool {
    a == LockMode::Exclusive || b == LockMode::Exclusive
}

impl Entry {
    fn holder_conflicts(&self, txn: TxnId, mode: LockMode) -> impl Iterator<Item = &Req> {
        self.holders
            .iter()
            .filter(move |h| h.txn != txn && conflicts(h.mode, mode))
    }
    fn grantable(&self, r: &Req) -> bool {
        self.holder_conflicts(r.txn, r.mode).next().is_none()
    }
    fn grant(&mut self, r: Req) {
        if let Some(h) = self.holders.iter_mut().find(|h| h.txn == r.txn) {
            if r.mode == LockMode::Exclusive {
                h.mode = LockMode::Exclusive;
            }
        } else {
            self.holders.push(r);
        }
    }
}

/// The lock table of one node.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LockTable {
    policy: Policy,
    keys: HashMap<Key, Entry>,
    by_txn: HashMap<TxnId, Vec<Key>>,
}

impl LockTable {
    /// An empty table with a policy.
    pub fn new(policy: Policy) -> Self {
        LockTable {
            policy,
            keys: HashMap::default(),
            by_txn: HashMap::default(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Requests `mode` on `key` for `txn`.
    pub fn acquire(&mut self, txn: TxnId, prio: Prio, key: &Key, mode: LockMode) -> Acquired {
        let entry = self.keys.entry(key.clone()).or_default();
        if entry
            .holders
            .iter()
            .any(|h| h.txn == txn && (h.mode == LockMode::Exclusive || mode == LockMode::Shared))
        {
            return Acquired::Granted;
        }
        if let Some(i) = entry.waiters.iter().position(|w| w.txn == txn) {
            if mode == LockMode::Shared || entry.waiters[i].mode == LockMode::Exclusive {
                return Acquired::Waiting { wound: vec![] };
            }
            // A queued shared request strengthened to exclusive conflicts with more
            // requests: withdraw it and queue it afresh under the policy's rules.
            entry.waiters.remove(i);
        }
        let req = Req { txn, mode, prio };
        let track = |by_txn: &mut HashMap<TxnId, Vec<Key>>| {
            let keys = by_txn.entry(txn).or_default();
            if !keys.contains(key) {
                keys.push(key.clone());
            }
        };
        let older_waiter = entry.waiters.iter().any(|w| w.prio < prio && conflicts(w.mode, mode));
        let holder_conflict: Vec<Req> = entry.holder_conflicts(txn, mode).copied().collect();
        match self.policy {
            Policy::NoWait => {
                if holder_conflict.is_empty() {
                    entry.grant(req);
                    track(&mut self.by_txn);
                    Acquired::Granted
                } else {
                    Acquired::Denied
                }
            }
            Policy::Takeover => {
                if holder_conflict.is_empty() {
                    entry.grant(req);
                    track(&mut self.by_txn);
                    Acquired::Granted
                } else if mode == LockMode::Exclusive && holder_conflict.iter().all(|h| h.mode == LockMode::Shared) {
                    let revoked: Vec<TxnId> = holder_conflict.iter().map(|h| h.txn).collect();
                    entry.holders.retain(|h| !revoked.contains(&h.txn));
                    entry.grant(req);
                    for r in &revoked {
                        if let Some(ks) = self.by_txn.get_mut(r) {
                            ks.retain(|k| k != key);
                        }
                    }
                    track(&mut self.by_txn);
                    Acquired::TookOver { revoked }
                } else {
                    Acquired::Denied
                }
            }
            Policy::WaitDie => {
                // FIFO queue; grant only when nobody conflicting waits, so that every
                // wait edge goes from an older transaction to a younger one.
                let waiter_conflict: Vec<Prio> = entry
                    .waiters
                    .iter()
                    .filter(|w| conflicts(w.mode, mode))
                    .map(|w| w.prio)
                    .collect();
                if holder_conflict.is_empty() && waiter_conflict.is_empty() {
                    entry.grant(req);
                    track(&mut self.by_txn);
                    return Acquired::Granted;
                }
                if holder_conflict.iter().any(|h| h.prio < prio) || waiter_conflict.iter().any(|w| *w < prio) {
                    return Acquired::Denied;
                }
                entry.waiters.push(req);
                track(&mut self.by_txn);
                Acquired::Waiting { wound: vec![] }
            }
            Policy::WoundWait => {
                // Priority-ordered queue; a request may pass younger waiters (they then
                // wait for an older holder, which wound-wait allows).
                if holder_conflict.is_empty() && !older_waiter {
                    entry.grant(req);
                    track(&mut self.by_txn);
                    return Acquired::Granted;
                }
                let wound = holder_conflict
                    .iter()
                    .filter(|h| h.prio > prio)
                    .map(|h| h.txn)
                    .collect();
                let pos = entry.waiters.partition_point(|w| w.prio < prio);
                entry.waiters.insert(pos, req);
                track(&mut self.by_txn);
                Acquired::Waiting { wound }
            }
        }
    }

    /// Makes `txn` a holder of `key` in `mode` at once, whatever else holds it: for a
    /// transaction that already passed its lock point elsewhere (a vote replicated by a
    /// replica group's old leader, re-installed by the new one). Conflicting holders may
    /// then coexist (the old leader granted them one after the other); every later
    /// request conflicting with any of them waits until all of them are released.
    pub fn hold(&mut self, txn: TxnId, prio: Prio, key: &Key, mode: LockMode) {
        let entry = self.keys.entry(key.clone()).or_default();
        entry.waiters.retain(|w| w.txn != txn);
        entry.grant(Req { txn, mode, prio });
        let keys = self.by_txn.entry(txn).or_default();
        if !keys.contains(key) {
            keys.push(key.clone());
        }
    }

    /// Whether `txn` holds `key` in `mode` (or stronger).
    pub fn holds(&self, txn: TxnId, key: &Key, mode: LockMode) -> bool {
        self.keys.get(key).is_some_and(|e| {
            e.holders
                .iter()
                .any(|h| h.txn == txn && (h.mode == LockMode::Exclusive || mode == LockMode::Shared))
        })
    }

    /// Whether `txn` is waiting for any lock.
    pub fn is_waiting(&self, txn: TxnId) -> bool {
        self.by_txn.get(&txn).is_some_and(|ks| {
            ks.iter()
                .any(|k| self.keys.get(k).is_some_and(|e| e.waiters.iter().any(|w| w.txn == txn)))
        })
    }

    /// Holders of a key, for diagnostics and tests.
    pub fn holders(&self, key: &Key) -> Vec<(TxnId, LockMode)> {
        self.keys
            .get(key)
            .map(|e| e.holders.iter().map(|h| (h.txn, h.mode)).collect())
            .unwrap_or_default()
    }

    /// Keys on which `txn` holds or awaits a lock.
    pub fn keys_of(&self, txn: TxnId) -> Vec<Key> {
        self.by_txn.get(&txn).cloned().unwrap_or_default()
    }

    /// Releases `txn`'s lock (or queued request) on one key; returns new grants.
    pub fn release(&mut self, txn: TxnId, key: &Key) -> Vec<Grant> {
        if let Some(ks) = self.by_txn.get_mut(&txn) {
            ks.retain(|k| k != key);
            if ks.is_empty() {
                self.by_txn.remove(&txn);
            }
        }
        let mut grants = vec![];
        self.release_key(txn, key, &mut grants);
        grants
    }

    /// Releases every lock and queued request of `txn`; returns new grants in order.
    pub fn release_all(&mut self, txn: TxnId) -> Vec<Grant> {
        let mut grants = vec![];
        for k in self.by_txn.remove(&txn).unwrap_or_default() {
            self.release_key(txn, &k, &mut grants);
        }
        grants
    }

    fn release_key(&mut self, txn: TxnId, key: &Key, grants: &mut Vec<Grant>) {
        let Some(e) = self.keys.get_mut(key) else {
            return;
        };
        e.holders.retain(|h| h.txn != txn);
        e.waiters.retain(|w| w.txn != txn);
        while let Some(w) = e.waiters.first().copied() {
            if !e.grantable(&w) {
                break;
            }
            e.waiters.remove(0);
            e.grant(w);
            grants.push(Grant {
                txn: w.txn,
                key: key.clone(),
                mode: w.mode,
            });
        }
        if e.holders.is_empty() && e.waiters.is_empty() {
            self.keys.remove(key);
        }
    }

    /// Number of keys with holders or waiters.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no lock is held or awaited.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Waits-for edges (waiter, holder-or-older-waiter it waits behind), for tests.
    pub fn waits_for(&self) -> Vec<(TxnId, TxnId)> {
        let mut edges = vec![];
        for e in self.keys.values() {
            for (i, w) in e.waiters.iter().enumerate() {
                for h in e.holder_conflicts(w.txn, w.mode) {
                    edges.push((w.txn, h.txn));
                }
                for a in &e.waiters[..i] {
                    if a.txn != w.txn && conflicts(a.mode, w.mode) {
                        edges.push((w.txn, a.txn));
                    }
                }
            }
        }
        edges
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{HashMap, HashSet};

    fn t(n: u32) -> TxnId {
        TxnId { client: n, seq: 1 }
    }
    fn p(n: u32) -> Prio {
        (n as u64, t(n))
    }
    fn k(s: &str) -> Key {
        Key::from(s)
    }
    use LockMode::*;

    #[test]
    fn wound_wait_older_wounds_younger_waits() {
        let mut lt = LockTable::new(Policy::WoundWait);
        assert_eq!(lt.acquire(t(5), p(5), &k("a"), Shared), Acquired::Granted);
        // older asks exclusive: wounds 5, waits
        assert_eq!(
            lt.acquire(t(1), p(1), &k("a"), Exclusive),
            Acquired::Waiting { wound: vec![t(5)] }
        );
        // younger asks: waits, wounds nobody
        assert_eq!(
            lt.acquire(t(9), p(9), &k("a"), Shared),
            Acquired::Waiting { wound: vec![] }
        );
        let g = lt.release_all(t(5));
        assert_eq!(
            g,
            vec![Grant {
                txn: t(1),
                key: k("a"),
                mode: Exclusive
            }]
        );
        let g = lt.release_all(t(1));
        assert_eq!(
            g,
            vec![Grant {
                txn: t(9),
                key: k("a"),
                mode: Shared
            }]
        );
    }

    #[test]
    fn held_locks_block_older_requests_until_all_are_released() {
        let mut lt = LockTable::new(Policy::WoundWait);
        lt.hold(t(5), p(5), &k("a"), Exclusive);
        lt.hold(t(6), p(6), &k("a"), Exclusive);
        assert!(lt.holds(t(5), &k("a"), Exclusive) && lt.holds(t(6), &k("a"), Exclusive));
        // An older request does not pass them: it waits for both.
        assert_eq!(
            lt.acquire(t(1), p(1), &k("a"), Shared),
            Acquired::Waiting {
                wound: vec![t(5), t(6)]
            }
        );
        assert_eq!(lt.release_all(t(5)), vec![]);
        assert_eq!(
            lt.release_all(t(6)),
            vec![Grant {
                txn: t(1),
                key: k("a"),
                mode: Shared
            }]
        );
    }

    #[test]
    fn wait_die_younger_dies() {
        let mut lt = LockTable::new(Policy::WaitDie);
        assert_eq!(lt.acquire(t(5), p(5), &k("a"), Exclusive), Acquired::Granted);
        assert_eq!(lt.acquire(t(9), p(9), &k("a"), Shared), Acquired::Denied);
        assert_eq!(
            lt.acquire(t(1), p(1), &k("a"), Shared),
            Acquired::Waiting { wound: vec![] }
        );
    }

    #[test]
    fn takeover_revokes_shared_and_denies_the_rest() {
        let mut lt = LockTable::new(Policy::Takeover);
        assert_eq!(lt.acquire(t(1), p(1), &k("a"), Shared), Acquired::Granted);
        assert_eq!(lt.acquire(t(2), p(2), &k("a"), Shared), Acquired::Granted);
        assert_eq!(
            lt.acquire(t(3), p(3), &k("a"), Exclusive),
            Acquired::TookOver {
                revoked: vec![t(1), t(2)]
            }
        );
        assert!(!lt.holds(t(1), &k("a"), Shared));
        assert_eq!(lt.acquire(t(1), p(1), &k("a"), Shared), Acquired::Denied);
        assert_eq!(lt.acquire(t(4), p(4), &k("a"), Exclusive), Acquired::Denied);
    }

    #[test]
    fn upgrade_when_sole_holder() {
        let mut lt = LockTable::new(Policy::NoWait);
        assert_eq!(lt.acquire(t(1), p(1), &k("a"), Shared), Acquired::Granted);
        assert_eq!(lt.acquire(t(1), p(1), &k("a"), Exclusive), Acquired::Granted);
        assert!(lt.holds(t(1), &k("a"), Exclusive));
        assert_eq!(lt.acquire(t(2), p(2), &k("a"), Shared), Acquired::Denied);
        lt.release_all(t(1));
        assert!(lt.is_empty());
    }

    #[derive(Debug, Clone)]
    enum Op {
        Acq(u32, u8, bool),
        Rel(u32),
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        proptest::collection::vec(
            prop_oneof![
                4 => (0u32..6, 0u8..4, any::<bool>()).prop_map(|(t, k, x)| Op::Acq(t, k, x)),
                1 => (0u32..6).prop_map(Op::Rel),
            ],
            1..80,
        )
    }

    fn acyclic(edges: &[(TxnId, TxnId)]) -> bool {
        let mut g: HashMap<TxnId, Vec<TxnId>> = HashMap::default();
        for (a, b) in edges {
            g.entry(*a).or_default().push(*b);
        }
        fn dfs(n: TxnId, g: &HashMap<TxnId, Vec<TxnId>>, on: &mut HashSet<TxnId>, done: &mut HashSet<TxnId>) -> bool {
            if done.contains(&n) {
                return true;
            }
            if !on.insert(n) {
                return false;
            }
            for m in g.get(&n).into_iter().flatten() {
                if !dfs(*m, g, on, done) {
                    return false;
                }
            }
            on.remove(&n);
            done.insert(n);
            true
        }
        let (mut on, mut done) = (HashSet::default(), HashSet::default());
        g.keys()
            .copied()
            .collect::<Vec<_>>()
            .into_iter()
            .all(|n| dfs(n, &g, &mut on, &mut done))
    }

    proptest! {
        /// Under every policy: no two conflicting holders, the waits-for graph is acyclic
        /// (wounded transactions are aborted at once, as a protocol would), and
        /// releasing everything leaves the table empty.
        #[test]
        fn lock_table_invariants(ops in ops(), pol in 0usize..4) {
            let policy = [Policy::NoWait, Policy::WaitDie, Policy::WoundWait, Policy::Takeover][pol];
            let mut lt = LockTable::new(policy);
            for op in &ops {
                match *op {
                    Op::Acq(x, key, excl) => {
                        let mode = if excl { Exclusive } else { Shared };
                        if let Acquired::Waiting { wound } = lt.acquire(t(x), p(x), &Key::new(vec![key]), mode) {
                            for w in wound {
                                prop_assert!(w.client > x);
                                lt.release_all(w);
                            }
                        }
                    }
                    Op::Rel(x) => { lt.release_all(t(x)); }
                }
                for key in 0u8..4 {
                    let hs = lt.holders(&Key::new(vec![key]));
                    let x = hs.iter().filter(|h| h.1 == Exclusive).count();
                    prop_assert!(x == 0 || hs.len() == 1, "conflicting holders {:?}", hs);
                }
                let wf = lt.waits_for();
                prop_assert!(acyclic(&wf), "waits-for cycle {:?}", wf);
                if policy == Policy::WoundWait {
                    prop_assert!(wf.iter().all(|(w, h)| w.client > h.client));
                }
                if policy == Policy::WaitDie {
                    prop_assert!(wf.iter().all(|(w, h)| w.client < h.client));
                }
            }
            for x in 0..6 { lt.release_all(t(x)); }
            prop_assert!(lt.is_empty());
        }
    }
}
