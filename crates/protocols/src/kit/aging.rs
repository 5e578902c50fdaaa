//! Maps whose entries are dropped a fixed time after they were put in (tombstones:
//! the outcomes a server applied, the readers it released), kept in persistent
//! structures so that a copy of the server (a real cluster's checkpoint takes one on
//! its event loop) shares their nodes instead of copying every entry, and expired
//! from the front of a queue in insertion order instead of by a pass over every
//! entry (which a persistent map would also pay by copying each node it visits).

use meridian_core::Time;
use serde::{Deserialize, Serialize};

/// A map from `K` to `V` whose entries expire `ttl` after their last insert
/// ([`Aging::expire`]). Ordered (a B-tree), so that iteration is deterministic for the
/// simulator.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(
    serialize = "K: Ord + Clone + Serialize, V: Clone + Serialize",
    deserialize = "K: Ord + Clone + Deserialize<'de>, V: Clone + Deserialize<'de>"
))]
pub struct Aging<K: Ord + Clone, V: Clone> {
    /// Each entry with the time it was put in.
    map: imbl::OrdMap<K, (V, Time)>,
    /// Every insert's key, oldest first. An entry removed or put in again leaves its
    /// old place behind; expiry skips it (the time no longer matches).
    queue: imbl::Vector<(Time, K)>,
}

impl<K: Ord + Clone, V: Clone> Default for Aging<K, V> {
    fn default() -> Self {
        Aging {
            map: imbl::OrdMap::new(),
            queue: imbl::Vector::new(),
        }
    }
}

impl<K: Ord + Clone, V: Clone> Aging<K, V> {
    /// Puts `k` in (or again) at time `now`, with `v`.
    pub fn insert(&mut self, k: K, v: V, now: Time) {
        self.queue.push_back((now, k.clone()));
        self.map.insert(k, (v, now));
    }

    /// The value of `k`, if it is here.
    pub fn get(&self, k: &K) -> Option<&V> {
        self.map.get(k).map(|(v, _)| v)
    }

    /// The value of `k` to change in place (its time stays), if it is here.
    pub fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.map.get_mut(k).map(|(v, _)| v)
    }

    /// Every entry, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.map.iter().map(|(k, (v, _))| (k, v))
    }

    /// Whether `k` is here.
    pub fn contains_key(&self, k: &K) -> bool {
        self.map.contains_key(k)
    }

    /// Takes `k` out.
    pub fn remove(&mut self, k: &K) -> Option<V> {
        self.map.remove(k).map(|(v, _)| v)
    }

    /// Drops every entry put in `ttl` or longer before `now` (and not put in again
    /// since). Times are expected not to go backwards; an entry behind a later one in
    /// the queue waits for it.
    pub fn expire(&mut self, now: Time, ttl: Time) {
        self.expire_each(now, ttl, |_, _| {});
    }

    /// [`Self::expire`], handing each entry dropped to `dropped`, oldest first.
    pub fn expire_each(&mut self, now: Time, ttl: Time, mut dropped: impl FnMut(K, V)) {
        while let Some((at, _)) = self.queue.front() {
            if now.saturating_sub(*at) < ttl {
                break;
            }
            let Some((at, k)) = self.queue.pop_front() else { break };
            if self.map.get(&k).is_some_and(|(_, t)| *t == at) {
                if let Some((v, _)) = self.map.remove(&k) {
                    dropped(k, v);
                }
            }
        }
        // Removed and re-inserted keys leave places behind: when they outnumber the
        // entries, the queue is rebuilt from the map (each key once, at its time), so
        // that it stays proportional to what is held.
        if self.queue.len() > 2 * self.map.len() + 64 {
            let mut q: Vec<(Time, K)> = self.map.iter().map(|(k, (_, t))| (*t, k.clone())).collect();
            q.sort_by_key(|(t, _)| *t);
            self.queue = q.into_iter().collect();
        }
    }

    /// Up to `max` keys put in `ttl` or longer before `now` (and not put in again since),
    /// oldest first, without dropping them: for a caller that drops an entry only once
    /// something else allows it ([`Self::remove`]). Places left behind at the front by
    /// removed entries are cleared first, so the scan starts at a live entry.
    pub fn due(&mut self, now: Time, ttl: Time, max: usize) -> Vec<K> {
        while let Some((at, k)) = self.queue.front() {
            if self.map.get(k).is_some_and(|(_, t)| t == at) {
                break;
            }
            self.queue.pop_front();
        }
        let mut out = vec![];
        for (at, k) in self.queue.iter() {
            if out.len() >= max || now.saturating_sub(*at) < ttl {
                break;
            }
            if self.map.get(k).is_some_and(|(_, t)| t == at) {
                out.push(k.clone());
            }
        }
        out
    }

    /// Rebuilds the queue from the map when removed entries' places outnumber the
    /// entries (what [`Self::expire`] does after its drops), for a caller that removes
    /// entries itself.
    pub fn compact(&mut self) {
        self.expire_each(0, Time::MAX, |_, _| {});
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.map = imbl::OrdMap::new();
        self.queue = imbl::Vector::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_in_order_and_a_reinsert_restarts_the_clock() {
        let mut a: Aging<u32, bool> = Aging::default();
        a.insert(1, true, 10);
        a.insert(2, false, 20);
        a.insert(3, true, 30);
        a.insert(1, false, 35); // put in again: lives from 35
        a.expire(50, 20); // drops what was put in at 30 or before
        assert_eq!(a.get(&1), Some(&false), "re-inserted at 35");
        assert!(!a.contains_key(&2));
        assert!(!a.contains_key(&3));
        a.expire(54, 20);
        assert!(a.contains_key(&1));
        a.expire(55, 20);
        assert!(!a.contains_key(&1));
        a.insert(4, true, 60);
        assert_eq!(a.remove(&4), Some(true));
        a.expire(1000, 20);
        assert!(a.is_empty());
    }

    #[test]
    fn a_change_in_place_keeps_the_time_and_expiry_hands_over_what_it_drops() {
        let mut a: Aging<u32, u32> = Aging::default();
        a.insert(1, 10, 0);
        a.insert(2, 20, 5);
        *a.get_mut(&1).expect("held") += 1;
        assert!(a.get_mut(&3).is_none());
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![(&1, &11), (&2, &20)]);
        let mut gone = vec![];
        a.expire_each(12, 10, |k, v| gone.push((k, v)));
        assert_eq!(gone, vec![(1, 11)], "changed in place, still put in at 0");
        assert_eq!(a.len(), 1);
    }

    #[test]
    fn the_queue_stays_proportional_to_the_entries() {
        let mut a: Aging<u32, ()> = Aging::default();
        for t in 0..10_000u64 {
            a.insert(7, (), t); // one key, put in again and again
            a.expire(t, 1_000_000);
        }
        assert_eq!(a.len(), 1);
        assert!(
            a.queue.len() <= 2 * a.len() + 64,
            "{} places for one entry",
            a.queue.len()
        );
    }

    #[test]
    fn due_lists_the_old_entries_without_dropping_them() {
        let mut a: Aging<u32, ()> = Aging::default();
        for (k, t) in [(1, 0), (2, 5), (3, 10), (4, 50)] {
            a.insert(k, (), t);
        }
        a.remove(&1);
        assert_eq!(a.due(30, 20, 10), vec![2, 3]);
        assert_eq!(a.due(30, 20, 1), vec![2]);
        assert_eq!(a.len(), 3, "nothing dropped");
        a.insert(2, (), 40); // put in again: no longer due
        assert_eq!(a.due(30, 20, 10), vec![3]);
        for k in 0..200 {
            a.insert(9, (), k);
        }
        a.compact();
        assert!(a.queue.len() <= 2 * a.len() + 64);
    }

    #[test]
    fn a_copy_is_unaffected_by_later_changes() {
        let mut a: Aging<u32, u32> = Aging::default();
        a.insert(1, 1, 0);
        let b = a.clone();
        a.insert(2, 2, 1);
        a.expire(100, 10);
        assert!(a.is_empty());
        assert_eq!(b.get(&1), Some(&1));
        assert_eq!(b.len(), 1);
        let bytes = postcard::to_allocvec(&b).expect("encodes");
        let c: Aging<u32, u32> = postcard::from_bytes(&bytes).expect("decodes");
        assert_eq!(c.get(&1), Some(&1));
    }
}
