//! An in-memory multi-version store.
//!
//! Each key has a chain of versions ordered by write timestamp (`wts`); the implicit
//! initial version has `wts = 0`, no value and no id. Committed versions are visible
//! to plain reads; tentative ones only to MVTO reads that choose to see them. The chain
//! order is the per-key version order the checker uses.
//!
//! # Version GC
//!
//! [`MvStore::collect`] drops the versions nobody can read any more: a committed
//! version whose committed successor was installed at least `ttl` ago (by the store's
//! clock, [`MvStore::tick`]), from the front of the chain, never past a tentative
//! version and never the newest committed one. The rule suits protocols whose reads
//! see only the newest committed version of a key (lock-based and validation-based
//! ones): for them a superseded version is garbage at once, and the `ttl` only keeps
//! a window of recent chains for whoever inspects them (the bench's checker, an
//! operator's state dump). A protocol that reads older versions (MVTO, snapshots at a
//! timestamp) must not call it without its own low-water mark; which protocols
//! collect, and why that is safe for each, is in docs/CLUSTER.md ("Version GC").
//!
//! What was collected is remembered per key as a count, or, with
//! [`Retention::record`] (the simulator), as the collected ids themselves, so a
//! snapshot lists the whole chain and the checker judges it as if nothing had gone.
//! The values are dropped either way. Collection never changes what a protocol reads:
//! `contains` and every read look at the versions still held.
//!
//! # Installs below the floor
//!
//! [`MvStore::install`] at a write timestamp at or below the newest collected one's
//! (the key's floor) installs nothing: the version is either one collected already (a
//! decision applied again) or a late one that newer versions superseded long ago (a
//! commit that reached a replica late). No read may see either. A late one is counted
//! as collected (with recorded ids, it joins them in its place); the store cannot tell
//! a re-delivered one from it without the ids, so a protocol must keep re-deliveries
//! from reaching `install` once its version may be collected (they would be counted
//! twice), and a log replayed over the store that survived a crash goes through
//! [`MvStore::replay_install`], which never counts. [`MvStore::install_latest`] has no
//! timestamp to compare: a version it installs again would land on top of newer ones,
//! so protocols that use it must never install a version twice. With recorded ids, a
//! version installed twice is listed twice, and the checker reports it as divergent:
//! that is how the simulator's campaigns test each protocol's idempotence against
//! collection.

use meridian_core::{Key, KeyState, Value, VersionId};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

/// One version of a key.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Version {
    /// Who wrote it.
    pub id: VersionId,
    /// The value.
    pub value: Value,
    /// Write timestamp (position in the version order).
    pub wts: u64,
    /// Largest timestamp that read it (MVTO).
    pub rts: u64,
    /// Written but not yet committed.
    pub tentative: bool,
    /// When it was installed (the store's clock, [`MvStore::tick`]).
    pub at: u64,
}

#[derive(Default, Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Chain {
    versions: Vec<Version>,
    /// Read timestamp of the implicit initial version.
    init_rts: u64,
    /// What version GC took from the front of this chain (none: `None`).
    collected: Option<Box<Collected>>,
}

/// The versions collected from the front of one key's chain.
#[derive(Default, Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Collected {
    /// How many.
    pub count: u64,
    /// The write timestamp of the newest one: a version installed later at or below
    /// it belongs to the collected part (module docs, "Installs below the floor").
    pub floor: u64,
    /// Their ids and write timestamps, oldest first, when the store records them
    /// ([`Retention::record`]).
    pub ids: Vec<(VersionId, u64)>,
}

impl Collected {
    /// Takes note of version `id` at `wts`, at or below the floor, installed live: new
    /// and superseded already, or (recorded ids tell) one of the collected.
    fn below_floor(&mut self, id: VersionId, wts: u64, record: bool) {
        if !record || self.record(id, wts) {
            self.count += 1;
        }
    }

    /// Records id `id` at `wts` in its place among the recorded ids, unless it is
    /// there already; whether it was new.
    fn record(&mut self, id: VersionId, wts: u64) -> bool {
        if self.ids.iter().any(|(v, _)| *v == id) {
            return false;
        }
        let at = self.ids.partition_point(|(_, w)| *w <= wts);
        self.ids.insert(at, (id, wts));
        true
    }

    /// Takes on what a peer collected from the same key: the higher floor and count,
    /// and the union of the recorded ids.
    fn merge(&mut self, from: &Collected) {
        self.floor = self.floor.max(from.floor);
        self.count = self.count.max(from.count);
        for &(id, wts) in &from.ids {
            self.record(id, wts);
        }
        self.count = self.count.max(self.ids.len() as u64);
    }
}

/// How long superseded versions are kept, and whether collected ids are recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Retention {
    /// A committed version is collected once its committed successor has been
    /// installed this long (nanoseconds of the store's clock). `u64::MAX`: never.
    pub ttl: u64,
    /// Keep the ids of collected versions (not their values), so snapshots list every
    /// chain whole. The simulator does; a real server does not (bounded state).
    pub record: bool,
}

impl Default for Retention {
    /// 5 s, ids not recorded: a real server's default.
    fn default() -> Self {
        Retention {
            ttl: 5_000_000_000,
            record: false,
        }
    }
}

impl Retention {
    /// Never collect.
    pub const KEEP_ALL: Retention = Retention {
        ttl: u64::MAX,
        record: false,
    };
}

/// The store's clock and collection bookkeeping.
#[derive(Default, Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Gc {
    /// The time of the last [`MvStore::tick`].
    now: u64,
    /// Versions held (committed and tentative).
    live: u64,
    /// Versions installed since the last collection pass.
    fresh: u64,
    /// Versions collected so far, over every key.
    collected: u64,
    /// The last pass recorded collected ids ([`Retention::record`]).
    record: bool,
    /// The store's clock at the last pass.
    last_pass: u64,
}

impl Chain {
    /// Inserts a new version written at `wts` (and read at it) after every version
    /// written at or before `wts`, keeping the chain in write-timestamp order.
    fn insert(&mut self, id: VersionId, value: Value, wts: u64, tentative: bool, at: u64) {
        let pos = self.versions.partition_point(|v| v.wts <= wts);
        self.versions.insert(
            pos,
            Version {
                id,
                value,
                wts,
                rts: wts,
                tentative,
                at,
            },
        );
    }

    /// Drops the collectable versions at the front (see the module docs): those whose
    /// committed successor was installed at or before `cutoff` and was written at or
    /// below `wts_floor`; how many.
    fn collect(&mut self, cutoff: u64, wts_floor: u64, record: bool) -> usize {
        let n = self
            .versions
            .windows(2)
            .take_while(|w| !w[0].tentative && !w[1].tentative && w[1].at <= cutoff && w[1].wts <= wts_floor)
            .count();
        if n > 0 {
            let c = self.collected.get_or_insert_with(Default::default);
            c.count += n as u64;
            c.floor = c.floor.max(self.versions[n - 1].wts);
            if record {
                c.ids.extend(self.versions[..n].iter().map(|v| (v.id, v.wts)));
            }
            self.versions.drain(..n);
        }
        n
    }

    /// Whether an install at `wts` falls in the collected part of the chain.
    fn below_floor(&self, wts: u64) -> bool {
        self.collected.as_deref().is_some_and(|c| wts <= c.floor)
    }
}

/// The result of an MVTO read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MvtoRead {
    /// Version read (`None`: the initial version).
    pub version: Option<VersionId>,
    /// Its value.
    pub value: Option<Value>,
    /// Whether that version is still tentative (the reader depends on its writer).
    pub tentative: bool,
}

/// The multi-version store of one node.
#[derive(Default, Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct MvStore {
    keys: HashMap<Key, Chain>,
    gc: Gc,
    /// The keys that held two versions or more at some install since the last pass:
    /// the only ones a pass visits (most keys of a large run hold one version).
    multi: rustc_hash::FxHashSet<Key>,
}

impl MvStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys with at least one version.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The latest committed version of a key and its value.
    pub fn latest(&self, key: &Key) -> (Option<VersionId>, Option<&Value>) {
        match self
            .keys
            .get(key)
            .and_then(|c| c.versions.iter().rev().find(|v| !v.tentative))
        {
            Some(v) => (Some(v.id), Some(&v.value)),
            None => (None, None),
        }
    }

    /// Write timestamp of the latest version (committed or tentative), 0 if none.
    pub fn last_wts(&self, key: &Key) -> u64 {
        self.keys.get(key).and_then(|c| c.versions.last()).map_or(0, |v| v.wts)
    }

    /// Installs a committed version after every existing one (for protocols whose
    /// version order is their commit order). The caller guarantees `id` was never
    /// installed here: [`Self::contains`] cannot tell, since a collected version is no
    /// longer held (module docs). This keeps commits O(1) on hot keys.
    pub fn install_latest(&mut self, key: &Key, id: VersionId, value: Value) {
        let chain = match self.keys.get_mut(key) {
            Some(c) => c,
            None => self.keys.entry(key.clone()).or_default(),
        };
        let wts = chain.versions.last().map_or(0, |v| v.wts) + 1;
        // Most keys of a large run hold one version: room for exactly one, not the
        // four a first `push` allocates (a quarter of a 1M-transaction run's memory).
        if chain.versions.capacity() == 0 {
            chain.versions.reserve_exact(1);
        }
        chain.versions.push(Version {
            id,
            value,
            wts,
            rts: wts,
            tentative: false,
            at: self.gc.now,
        });
        let held = chain.versions.len();
        self.added(key, held);
    }

    /// Whether `key` has version `id` at `wts`, or a version at `wts` would fall in the
    /// part of its chain version GC collected (module docs, "Installs below the floor"):
    /// for an idempotence check before [`Self::install`], which would install nothing.
    pub fn has_or_collected(&self, key: &Key, id: VersionId, wts: u64) -> bool {
        self.keys
            .get(key)
            .is_some_and(|c| c.below_floor(wts) || c.versions.iter().any(|v| v.id == id))
    }

    /// Whether `key` has version `id` (committed or tentative).
    pub fn contains(&self, key: &Key, id: VersionId) -> bool {
        self.keys
            .get(key)
            .is_some_and(|c| c.versions.iter().any(|v| v.id == id))
    }

    /// Installs a committed version at write timestamp `wts` (kept sorted). Idempotent
    /// for a version held; one at or below the key's floor is counted as collected
    /// (module docs, "Installs below the floor").
    pub fn install(&mut self, key: &Key, id: VersionId, value: Value, wts: u64) {
        self.install_as(key, id, value, wts, true);
    }

    /// [`Self::install`] for a log replayed over the store that survived the crash:
    /// every version it installs was installed before, so one at or below the floor
    /// was collected already and is not counted again.
    pub fn replay_install(&mut self, key: &Key, id: VersionId, value: Value, wts: u64) {
        self.install_as(key, id, value, wts, false);
    }

    fn install_as(&mut self, key: &Key, id: VersionId, value: Value, wts: u64, live: bool) {
        let chain = self.keys.entry(key.clone()).or_default();
        if let Some(v) = chain.versions.iter_mut().find(|v| v.id == id) {
            if v.tentative {
                v.tentative = false;
                v.at = self.gc.now;
            }
            return;
        }
        if chain.below_floor(wts) {
            if live {
                let record = self.gc.record;
                chain
                    .collected
                    .as_deref_mut()
                    .expect("a floor")
                    .below_floor(id, wts, record);
            }
            return;
        }
        chain.insert(id, value, wts, false, self.gc.now);
        let held = chain.versions.len();
        self.added(key, held);
    }

    /// MVTO read at timestamp `ts`: the version with the largest `wts <= ts` (tentative
    /// included when `see_tentative`), raising its read timestamp to `ts`.
    pub fn mvto_read(&mut self, key: &Key, ts: u64, see_tentative: bool) -> MvtoRead {
        let chain = self.keys.entry(key.clone()).or_default();
        let found = chain
            .versions
            .iter_mut()
            .rev()
            .find(|v| v.wts <= ts && (see_tentative || !v.tentative));
        match found {
            Some(v) => {
                v.rts = v.rts.max(ts);
                MvtoRead {
                    version: Some(v.id),
                    value: Some(v.value.clone()),
                    tentative: v.tentative,
                }
            }
            None => {
                chain.init_rts = chain.init_rts.max(ts);
                MvtoRead {
                    version: None,
                    value: None,
                    tentative: false,
                }
            }
        }
    }

    /// Whether an MVTO write at `ts` is allowed: no version has `wts == ts`, and the
    /// version it would follow has not been read by a later timestamp.
    pub fn mvto_can_write(&self, key: &Key, ts: u64) -> bool {
        let Some(chain) = self.keys.get(key) else {
            return true;
        };
        if chain.versions.iter().any(|v| v.wts == ts) {
            return false;
        }
        let prev_rts = chain
            .versions
            .iter()
            .rev()
            .find(|v| v.wts < ts)
            .map_or(chain.init_rts, |v| v.rts);
        prev_rts <= ts
    }

    /// Adds a tentative version at `ts` (call [`Self::mvto_can_write`] first).
    /// Idempotent: a version id is unique, so if `key` already has version `id`
    /// (tentative or committed) nothing changes.
    pub fn write_tentative(&mut self, key: &Key, id: VersionId, value: Value, ts: u64) {
        let chain = self.keys.entry(key.clone()).or_default();
        if chain.versions.iter().any(|v| v.id == id) {
            return;
        }
        chain.insert(id, value, ts, true, self.gc.now);
        let held = chain.versions.len();
        self.added(key, held);
    }

    /// Makes a tentative version committed.
    pub fn commit_tentative(&mut self, key: &Key, id: VersionId) -> bool {
        match self
            .keys
            .get_mut(key)
            .and_then(|c| c.versions.iter_mut().find(|v| v.id == id))
        {
            Some(v) => {
                if v.tentative {
                    v.tentative = false;
                    v.at = self.gc.now;
                }
                true
            }
            None => false,
        }
    }

    /// Removes a tentative version (abort).
    pub fn abort_tentative(&mut self, key: &Key, id: VersionId) -> bool {
        let Some(chain) = self.keys.get_mut(key) else {
            return false;
        };
        let before = chain.versions.len();
        chain.versions.retain(|v| !(v.id == id && v.tentative));
        let gone = before - chain.versions.len();
        self.gc.live -= gone as u64;
        gone > 0
    }

    /// Bookkeeping after a version was added to `key`'s chain, which now holds `held`:
    /// one more version held and installed since the last pass, and a key that reaches
    /// two versions is one the next pass visits.
    fn added(&mut self, key: &Key, held: usize) {
        if held == 2 {
            self.multi.insert(key.clone());
        }
        self.gc.live += 1;
        self.gc.fresh += 1;
    }

    /// Sets the store's clock (versions installed from now on carry this time) and
    /// whether it records collected ids. Protocols that collect tick it with every
    /// input they handle.
    pub fn tick(&mut self, now: u64, r: &Retention) {
        self.gc.now = now;
        self.gc.record = r.record;
    }

    /// Version GC (module docs): drops every committed version whose committed
    /// successor was installed at least `r.ttl` before the store's clock. A pass visits
    /// every key, so it runs only once at least 64 versions were installed since the
    /// last pass, and either half as many as are held or `r.ttl / 2` has passed since:
    /// amortized, a constant per install, and what is held stays within about one and
    /// a half `ttl`s' worth of writes (plus one version per key). Returns how many
    /// versions it dropped.
    pub fn collect(&mut self, r: &Retention) -> usize {
        self.collect_below(r, u64::MAX)
    }

    /// [`Self::collect`] for a protocol that reads at timestamps (MVTO): a version goes
    /// only if, besides, its committed successor was written at or below `wts_floor`,
    /// the protocol's low-water mark of the timestamps it still serves. A read or a
    /// write at a timestamp below a key's first held version, once something of that
    /// key was collected, would need what was collected: the protocol must refuse it
    /// ([`Self::too_old`]).
    pub fn collect_below(&mut self, r: &Retention, wts_floor: u64) -> usize {
        let due = self.gc.fresh * 2 >= self.gc.live || self.gc.now.saturating_sub(self.gc.last_pass) >= r.ttl / 2;
        if r.ttl == u64::MAX || self.gc.fresh < 64 || !due {
            return 0;
        }
        self.gc.fresh = 0;
        self.gc.last_pass = self.gc.now;
        self.gc.record = r.record;
        let Some(cutoff) = self.gc.now.checked_sub(r.ttl) else {
            return 0;
        };
        let mut n = 0;
        let keys = &mut self.keys;
        self.multi.retain(|k| match keys.get_mut(k) {
            Some(c) => {
                if c.versions.len() > 1 {
                    n += c.collect(cutoff, wts_floor, r.record);
                }
                c.versions.len() > 1
            }
            None => false,
        });
        self.gc.live -= n as u64;
        self.gc.collected += n as u64;
        n
    }

    /// Whether an MVTO read or write of `key` at `ts` would need a version GC
    /// collected: something of the key's chain was collected, and the version a read
    /// at `ts` sees (or a write at `ts` follows, whose read timestamp it must check)
    /// is not held above the collected part: none is held at or below `ts` (the one
    /// it needs is gone), or the one held there was written at or below the newest
    /// collected one (it sits out of its place: the collected version after it is
    /// the one to see). With nothing held after a collection, every timestamp is.
    pub fn too_old(&self, key: &Key, ts: u64) -> bool {
        let Some(c) = self.keys.get(key) else {
            return false;
        };
        let Some(col) = c.collected.as_deref() else {
            return false;
        };
        c.versions
            .iter()
            .rev()
            .find(|v| v.wts <= ts)
            .is_none_or(|v| v.wts <= col.floor)
    }

    /// Whether a version of `key` written at `wts` would fall in the collected part of
    /// its chain (at or below the newest collected version): installing it would put
    /// it out of its place in the key's order (module docs, "Installs below the floor").
    pub fn in_collected(&self, key: &Key, wts: u64) -> bool {
        self.keys.get(key).is_some_and(|c| c.below_floor(wts))
    }

    /// Versions held now (committed and tentative), over every key.
    pub fn live(&self) -> u64 {
        self.gc.live
    }

    /// Versions version GC has dropped so far, over every key.
    pub fn collected(&self) -> u64 {
        self.gc.collected
    }

    /// What GC took from the front of `key`'s chain, if anything.
    pub fn collected_of(&self, key: &Key) -> Option<&Collected> {
        self.keys.get(key).and_then(|c| c.collected.as_deref())
    }

    /// Every key with something collected, with what.
    pub fn collected_keys(&self) -> impl Iterator<Item = (&Key, &Collected)> {
        self.keys
            .iter()
            .filter_map(|(k, c)| c.collected.as_deref().map(|x| (k, x)))
    }

    /// What was collected from the keys `which` picks, in key order: what a replica
    /// sends with its versions to a peer that rebuilds from them
    /// ([`Self::adopt_collected`]).
    pub fn collected_for(&self, mut which: impl FnMut(&Key) -> bool) -> Vec<(Key, Collected)> {
        let mut out: Vec<(Key, Collected)> = self
            .collected_keys()
            .filter(|(k, _)| which(k))
            .map(|(k, c)| (k.clone(), c.clone()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Takes on a peer's record of what was collected from `key`'s chain (a replica
    /// rebuilt from a peer's versions, which lack what the peer collected): the higher
    /// floor and count, the union of the recorded ids; what it holds at or below the
    /// floor goes (the peer collected it, or it is older still), and where ids are
    /// recorded it joins them: the peer may never have held it (it learned the
    /// decision later than this store's other source), and a committed version must
    /// stay accounted for. Without recorded ids the peer's count is taken to cover it.
    pub fn adopt_collected(&mut self, key: &Key, from: &Collected) {
        let record = self.gc.record;
        let chain = self.keys.entry(key.clone()).or_default();
        let c = chain.collected.get_or_insert_with(Default::default);
        c.merge(from);
        let floor = c.floor;
        let before = chain.versions.len();
        let mut gone = vec![];
        chain.versions.retain(|v| {
            let keep = v.wts > floor;
            if !keep && !v.tentative {
                gone.push((v.id, v.wts));
            }
            keep
        });
        if record {
            let c = chain.collected.as_deref_mut().expect("a floor");
            for (id, wts) in gone {
                c.below_floor(id, wts, true);
            }
        }
        self.gc.live -= (before - chain.versions.len()) as u64;
    }

    /// Every key with its versions (committed and tentative), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &[Version])> {
        self.keys.iter().map(|(k, c)| (k, c.versions.as_slice()))
    }

    /// All versions of a key, oldest first.
    pub fn versions(&self, key: &Key) -> &[Version] {
        self.keys.get(key).map_or(&[], |c| &c.versions)
    }

    /// The committed state of every key: version order (the collected versions' ids
    /// first, where recorded) and latest value.
    pub fn snapshot(&self) -> BTreeMap<Key, KeyState> {
        self.keys
            .iter()
            .filter_map(|(k, c)| {
                let committed: Vec<&Version> = c.versions.iter().filter(|v| !v.tentative).collect();
                let last = committed.last()?;
                let before = c.collected.as_deref().map_or(&[][..], |x| &x.ids[..]);
                Some((
                    k.clone(),
                    KeyState {
                        versions: before
                            .iter()
                            .map(|(v, _)| *v)
                            .chain(committed.iter().map(|v| v.id))
                            .collect(),
                        value: Some(last.value.clone()),
                    },
                ))
            })
            .collect()
    }

    /// The snapshot of a replica at node `me`: [`Self::snapshot`], with the count of
    /// collected versions whose ids were not recorded, per key.
    pub fn replica(&self, me: meridian_core::NodeId) -> meridian_core::ReplicaSnapshot {
        meridian_core::ReplicaSnapshot {
            node: me,
            keys: self.snapshot(),
            pruned: self
                .collected_keys()
                .filter(|(_, c)| c.count > c.ids.len() as u64)
                .map(|(k, c)| (k.clone(), c.count - c.ids.len() as u64))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meridian_core::TxnId;
    use proptest::prelude::*;

    fn vid(c: u32) -> VersionId {
        VersionId {
            txn: TxnId { client: c, seq: 1 },
            seq: 0,
        }
    }

    #[test]
    fn latest_skips_tentative() {
        let mut s = MvStore::new();
        let k = Key::from("k");
        assert_eq!(s.latest(&k), (None, None));
        s.install_latest(&k, vid(1), Value::from_u64(1));
        s.write_tentative(&k, vid(2), Value::from_u64(2), 10);
        assert_eq!(s.latest(&k).0, Some(vid(1)));
        assert!(s.commit_tentative(&k, vid(2)));
        assert_eq!(s.latest(&k).0, Some(vid(2)));
        assert_eq!(s.snapshot()[&k].versions, vec![vid(1), vid(2)]);
    }

    fn vid_n(c: u32, n: u32) -> VersionId {
        VersionId {
            txn: TxnId { client: c, seq: n },
            seq: 0,
        }
    }

    /// Installs versions 1..=n of `k` at times 1..=n seconds (write timestamp = i).
    fn chain(s: &mut MvStore, k: &Key, n: u32) {
        for i in 1..=n {
            s.tick(i as u64 * 1_000_000_000, &Retention::default());
            s.install(k, vid_n(1, i), Value::from_u64(i as u64), i as u64);
        }
    }

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn collection_keeps_the_newest_committed_and_what_was_superseded_within_the_ttl() {
        let mut s = MvStore::new();
        let k = Key::from("k");
        chain(&mut s, &k, 100);
        s.tick(101 * SEC, &Retention::default());
        let r = Retention {
            ttl: 10 * SEC,
            record: false,
        };
        // Versions 1..=90 were superseded by one installed at 91 s or before (the cutoff).
        assert_eq!(s.collect(&r), 90);
        let left: Vec<u64> = s.versions(&k).iter().map(|v| v.wts).collect();
        assert_eq!(left, (91..=100).collect::<Vec<_>>());
        assert_eq!((s.live(), s.collected()), (10, 90));
        assert_eq!(s.latest(&k).0, Some(vid_n(1, 100)));
        // A snapshot lists what is held and counts what was collected.
        let snap = s.replica(meridian_core::NodeId(0));
        assert_eq!(snap.keys[&k].versions.len(), 10);
        assert_eq!(snap.pruned[&k], 90);
        // Long after, everything but the newest goes; the newest never does.
        s.tick(1000 * SEC, &Retention::default());
        for i in 101..=200 {
            s.install(&Key::from("other"), vid_n(2, i), Value::default(), i as u64);
        }
        s.collect(&r);
        assert_eq!(s.versions(&k).len(), 1);
        assert_eq!(s.latest(&k), (Some(vid_n(1, 100)), Some(&Value::from_u64(100))));
    }

    #[test]
    fn an_mvto_collection_stops_at_the_timestamp_floor_and_refuses_reads_below_what_it_kept() {
        let mut s = MvStore::new();
        let k = Key::from("k");
        chain(&mut s, &k, 100);
        s.tick(101 * SEC, &Retention::default());
        let r = Retention {
            ttl: 10 * SEC,
            record: false,
        };
        // The TTL alone would take 1..=90; the floor 50 keeps every version whose
        // successor was written above 50.
        assert_eq!(s.collect_below(&r, 50), 49);
        assert_eq!(s.versions(&k)[0].wts, 50);
        // A read or write at 50 or above finds what it needs; below 50, the version it
        // needs (49, or one before) is gone.
        assert!(!s.too_old(&k, 50) && !s.too_old(&k, 75));
        assert!(s.too_old(&k, 49) && s.too_old(&k, 1));
        assert!(s.in_collected(&k, 49) && !s.in_collected(&k, 50));
        // A key nothing was collected from serves every timestamp.
        let other = Key::from("other");
        s.install(&other, vid_n(2, 1), Value::default(), 7);
        assert!(!s.too_old(&other, 1) && !s.too_old(&Key::from("none"), 1));
        // The mutant without the refusal: a read at 30 would see the initial version,
        // not version 30 (the check a protocol must make).
        assert_eq!(s.mvto_read(&k, 30, false).version, None);
        // A version put in at or below the collected part (a protocol that copies a
        // peer's chain must not, but if it did) is not a version to read: a read at 49
        // would see it instead of the collected 49.
        s.write_tentative(&k, vid_n(3, 1), Value::default(), 45);
        assert!(s.too_old(&k, 49) && s.too_old(&k, 45));
        assert!(!s.too_old(&k, 50));
    }

    #[test]
    fn collection_waits_for_enough_new_versions_and_stops_at_a_tentative_one() {
        let mut s = MvStore::new();
        let k = Key::from("k");
        let r = Retention {
            ttl: SEC,
            record: false,
        };
        chain(&mut s, &k, 10);
        s.tick(100 * SEC, &Retention::default());
        // Ten installs are fewer than a pass needs (64): nothing yet.
        assert_eq!(s.collect(&r), 0);
        s.write_tentative(&k, vid_n(9, 1), Value::default(), 50);
        for i in 11..=100 {
            s.install(&k, vid_n(1, i), Value::from_u64(i as u64), 100 + i as u64);
        }
        s.tick(1000 * SEC, &Retention::default());
        // Versions 1..=9 go; version 10 is followed by the tentative one, which stays.
        assert_eq!(s.collect(&r), 9);
        assert_eq!(s.versions(&k)[0].wts, 10);
        assert!(s.versions(&k)[1].tentative);
        // Never, whatever the load.
        let mut t = MvStore::new();
        chain(&mut t, &k, 200);
        t.tick(u64::MAX / 2, &Retention::default());
        assert_eq!(t.collect(&Retention::KEEP_ALL), 0);
        assert_eq!(t.versions(&k).len(), 200);
    }

    #[test]
    fn recorded_ids_keep_the_snapshot_whole_and_an_install_below_the_floor_installs_nothing() {
        let mut s = MvStore::new();
        let k = Key::from("k");
        chain(&mut s, &k, 100);
        let whole = s.snapshot();
        s.tick(1000 * SEC, &Retention::default());
        let r = Retention { ttl: SEC, record: true };
        assert_eq!(s.collect(&r), 99);
        assert_eq!(s.versions(&k).len(), 1);
        assert_eq!(s.snapshot(), whole, "the collected ids come first, in order");
        assert!(s.replica(meridian_core::NodeId(0)).pruned.is_empty());
        // A version collected already, installed again: nothing changes.
        s.install(&k, vid_n(1, 40), Value::from_u64(40), 40);
        assert_eq!(s.snapshot(), whole);
        assert!(s.has_or_collected(&k, vid_n(1, 40), 40));
        // One never held, superseded long ago: not held, but recorded in its place.
        s.install(&k, vid_n(7, 1), Value::from_u64(7), 40);
        assert_eq!(s.versions(&k).len(), 1);
        let ids = &s.snapshot()[&k].versions;
        assert_eq!(ids.len(), 101);
        assert_eq!(ids[40], vid_n(7, 1));
        assert_eq!(s.latest(&k).0, Some(vid_n(1, 100)));
        // Above the floor, an install is an install.
        assert!(!s.has_or_collected(&k, vid_n(8, 1), 150));
    }

    #[test]
    fn a_replica_rebuilt_from_a_peer_adopts_what_the_peer_collected() {
        let mut peer = MvStore::new();
        let k = Key::from("k");
        chain(&mut peer, &k, 100);
        peer.tick(1000 * SEC, &Retention::default());
        peer.collect(&Retention {
            ttl: SEC,
            record: false,
        });
        let mut fresh = MvStore::new();
        // It had an old version of its own, from before its crash.
        fresh.install(&k, vid_n(1, 3), Value::from_u64(3), 3);
        fresh.adopt_collected(&k, peer.collected_of(&k).unwrap());
        for v in peer.versions(&k) {
            fresh.install(&k, v.id, v.value.clone(), v.wts);
        }
        assert_eq!(fresh.versions(&k).len(), 1, "the old version is below the peer's floor");
        assert_eq!(fresh.live(), 1);
        let snap = fresh.replica(meridian_core::NodeId(1));
        assert_eq!(snap.pruned[&k], 99);
        assert_eq!(snap.keys[&k].versions, vec![vid_n(1, 100)]);
    }

    #[test]
    fn a_version_only_the_rebuilt_replica_held_stays_recorded_below_the_adopted_floor() {
        // Campaign seed 1397885 (hacommit): a restarted replica synced first from a
        // peer that had applied a commit, then from one that had not yet, whose floor
        // was above the commit's version. Adopting the floor dropped the version and
        // recorded it nowhere: the check found a committed write on no replica.
        let r = Retention { ttl: SEC, record: true };
        let k = Key::from("k");
        let mut peer = MvStore::new();
        peer.tick(0, &r);
        chain(&mut peer, &k, 100);
        peer.tick(1000 * SEC, &r);
        peer.collect(&r);
        let floor = peer.collected_of(&k).unwrap().floor;
        let mut fresh = MvStore::new();
        fresh.tick(1000 * SEC, &r);
        // A version the peer never held, below the peer's floor.
        let late = vid_n(9, 1);
        fresh.install(&k, late, Value::from_u64(9), floor - 1);
        fresh.adopt_collected(&k, peer.collected_of(&k).unwrap());
        for v in peer.versions(&k) {
            fresh.install(&k, v.id, v.value.clone(), v.wts);
        }
        assert!(fresh.has_or_collected(&k, late, floor - 1));
        let ids = &fresh.snapshot()[&k].versions;
        assert!(ids.contains(&late), "the dropped version is recorded as collected");
        assert_eq!(ids.len(), peer.snapshot()[&k].versions.len() + 1);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Read(u8, u64),
        Write(u8, u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            // distinct transactions have distinct timestamps: reads even, writes odd
            (0u8..3, 1u64..50).prop_map(|(k, t)| Op::Read(k, 2 * t)),
            (0u8..3, 1u64..50).prop_map(|(k, t)| Op::Write(k, 2 * t + 1)),
        ]
    }

    proptest! {
        /// MVTO: every read returns the version with the largest wts <= ts, and a write
        /// that is admitted never invalidates a read already made (no read at a later
        /// timestamp would now see a different version).
        #[test]
        fn mvto_reads_stay_valid(ops in proptest::collection::vec(op(), 1..60)) {
            let mut s = MvStore::new();
            let mut reads: Vec<(Key, u64, Option<VersionId>)> = vec![];
            for (i, o) in ops.iter().enumerate() {
                match *o {
                    Op::Read(k, ts) => {
                        let key = Key::new(vec![k]);
                        let r = s.mvto_read(&key, ts, true);
                        let expect = s.versions(&key).iter().rev().find(|v| v.wts <= ts).map(|v| v.id);
                        prop_assert_eq!(r.version, expect);
                        reads.push((key, ts, r.version));
                    }
                    Op::Write(k, ts) => {
                        let key = Key::new(vec![k]);
                        if s.mvto_can_write(&key, ts) {
                            s.write_tentative(&key, VersionId { txn: TxnId { client: 0, seq: i as u32 }, seq: 0 }, Value::default(), ts);
                        }
                    }
                }
                for (key, ts, seen) in &reads {
                    let now = s.versions(key).iter().rev().find(|v| v.wts <= *ts).map(|v| v.id);
                    prop_assert_eq!(now, *seen);
                }
            }
        }

        /// Installs keep the chain sorted by wts and are idempotent.
        #[test]
        fn install_sorted_and_idempotent(ts in proptest::collection::vec(1u64..100, 1..30)) {
            let mut s = MvStore::new();
            let k = Key::from("k");
            for (i, t) in ts.iter().enumerate() {
                let id = VersionId { txn: TxnId { client: 1, seq: i as u32 }, seq: 0 };
                s.install(&k, id, Value::default(), *t);
                s.install(&k, id, Value::default(), *t);
            }
            let v = s.versions(&k);
            prop_assert_eq!(v.len(), ts.len());
            prop_assert!(v.windows(2).all(|w| w[0].wts <= w[1].wts));
        }
    }
}
