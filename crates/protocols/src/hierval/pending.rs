//! `hier-ts` without locks (§III-B5 "Distributed Transactions", §III-C2): what a leaf
//! knows of the distributed transactions it validated and whose decision has not reached
//! it ([`Pending`]), and what an inner validator knows of the transactions it validated
//! (per key: the largest write and read timestamps, [`Server::inner_check`]).
//!
//! # The rules, and why they are safe
//!
//! A transaction T has a snapshot `s` and, at every level, a commit timestamp: the
//! leaf's pre-assigned one, then at each inner validator the maximum of its children's
//! (so it only grows on the way up). T is serializable at its final timestamp `c` when
//! no key it read has a committed version in `(s, c)`.
//!
//! **At a leaf** (the paper: "the validation nodes assume that transactions that were
//! successfully validated locally will be successfully validated in the levels above"),
//! a newcomer T with snapshot `s` fails when, on a key it reads or writes,
//! 1. a committed version is newer than `s` (the paper's check);
//! 2. a pending transaction writes it: its write is assumed to commit, above `s` or
//!    (raised) above T's own timestamp. While a write of a key is pending at a leaf,
//!    its tentative version is the key's newest, so a read at or above it waits (§III-B2)
//!    instead of reading past it. Stop 72's first version refused only a pending write
//!    with a leaf timestamp above `s`; that let a blind write commit above a pending
//!    writer's tentative version, and a later read at a snapshot between the two read
//!    the blind write, missing the pending write that then committed above it: a
//!    campaign found it (G-single, `hier-ts` on two50, seed 949787);
//! 3. T writes a key a pending transaction P read, and T is local or will be decided
//!    below P's decider. P's final timestamp is not known here and may be raised above
//!    T's, which would make P's read stale; only P's decider can order the two, so T may
//!    pass only if its own validation reaches that validator. A local writer cannot
//!    (it is decided here at once), so it aborts: this is the paper's "other concurrent
//!    transactions might be aborted as well". A distributed writer that goes at least as
//!    high as P's decider passes the leaf, where `hier-lock` would have refused it.
//!
//! Rule 3 is not in the paper, which says nothing of local writers of keys a pending
//! transaction read; without it, a local transaction could commit between a pending
//! transaction's leaf timestamp and its raised final one, on a key that transaction read,
//! and no validator above would know. (No locks: there is no wait and no lock table; the
//! leaf keeps an index of pending reads and writes per key.)
//!
//! **At an inner validator V**, when every involved child has answered, with `c` the
//! maximum timestamp (the paper's re-validation "with this new commit timestamp"), T
//! fails when
//! - (a) a key T reads or writes has a write timestamp at V above `s`: a transaction V
//!   committed, or passed up (assumed to commit, at a timestamp at least the one it had
//!   at V), wrote it after T's snapshot;
//! - (b) a key T writes has a read timestamp at V above `c`: a transaction V committed at
//!   a higher timestamp read it, and T's write would slip under that read.
//!
//! When T passes, V notes `c` as the write timestamp of T's writes, and, if V decides T,
//! as the read timestamp of T's reads. Why this catches every pair a leaf let through
//! (rule 3): P read k and is pending at leaf B, writer W passes B, and V = P's decider is
//! on both paths. If P completes at V first, it is decided and W meets (b) at V: W goes on
//! only if its timestamp there, a lower bound of its final one, is above P's. If W
//! completes at V first, it leaves a write timestamp at least W's leaf timestamp, which is
//! above B's clock when P read (reads move the clock), so P meets (a) and aborts: an
//! abort at a level above the leaves, the behaviour §III-B5 describes.
//!
//! **The rest of the argument** (a review's points, stop 72). Final timestamps are
//! unique (each is some leaf's own pre-assigned one, and a leaf's clock only rises, across
//! restarts too through its reservation), so write-write and write-read edges run forward
//! in timestamp order, and (b)'s strict `>` loses nothing; what needs the rules is the
//! read-write edge: P read k at leaf B at snapshot `s`, W writes k, and W's version must
//! land above P's final timestamp. At B, W was validated either
//! - before P's commit request arrived: P meets rule 1 (W committed above `s`) or rule 2
//!   (W pending); if W's version is at or below `s`, P's read waited for it (below);
//! - while P was pending there: rule 3, then P's decider orders the two (above);
//! - after P's decision reached B: `apply` moved B's clock past P's final timestamp (it
//!   does so even when P wrote nothing at B: `install` bumps the clock), so W's is above.
//!
//! The other half of "serializable at `c`", that a read at a snapshot at or above `c`
//! sees T's writes: T's tentative version sits at its snapshot + 1, a read whose
//! newest version at or below its snapshot is tentative waits for the decision
//! (§III-B2), rule 2 keeps a pending write the key's newest version, and a read moves
//! the clock, so anything validated later is above it.
//!
//! **Crashes** (the paper considers none): an inner validator's timestamps are load
//! bearing, so each validation that passes is logged (`Rec::Validated`), forced before
//! the result leaves (a decider's is forced with its decision) and replayed on restart.
//! A record that goes stale (a writer passed up and aborted above) only aborts more.

use super::server::{Gather, Rec};
use super::*;
use meridian_core::{Ctx, Key, TxnId, Value, VersionId};
use rustc_hash::FxHashMap as HashMap;

/// The distributed transactions a leaf validated that await their decision, per key.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Pending {
    keys: HashMap<Key, PendKey>,
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct PendKey {
    /// Pending readers and the level of their decider.
    readers: Vec<(TxnId, u32)>,
    /// Pending writers.
    writers: Vec<TxnId>,
}

/// A commit request's writes (key, version, value); only the keys matter here.
type Writes = [(Key, VersionId, Value)];

impl Pending {
    /// Notes `txn` (decided at `level`) as pending on its keys.
    pub(super) fn add(&mut self, txn: TxnId, level: u32, reads: &[Key], writes: &Writes) {
        for k in reads {
            self.keys.entry(k.clone()).or_default().readers.push((txn, level));
        }
        for (k, _, _) in writes {
            self.keys.entry(k.clone()).or_default().writers.push(txn);
        }
    }

    /// Forgets `txn` on its keys (its decision arrived).
    pub(super) fn remove(&mut self, txn: TxnId, reads: &[Key], writes: &Writes) {
        for k in reads.iter().chain(writes.iter().map(|w| &w.0)) {
            if let Some(e) = self.keys.get_mut(k) {
                e.readers.retain(|(t, _)| *t != txn);
                e.writers.retain(|t| *t != txn);
                if e.readers.is_empty() && e.writers.is_empty() {
                    self.keys.remove(k);
                }
            }
        }
    }

    /// Keys with a pending reader or writer.
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    pub(super) fn clear(&mut self) {
        self.keys.clear();
    }

    /// Rule 2: a pending write of `k`.
    fn write_pending(&self, k: &Key) -> bool {
        self.keys.get(k).is_some_and(|e| !e.writers.is_empty())
    }

    /// Rule 3: a pending reader of `k` whose decider is above `level` (`None`: a local
    /// writer, below every decider).
    fn read_above(&self, k: &Key, level: Option<u32>) -> bool {
        self.keys
            .get(k)
            .is_some_and(|e| e.readers.iter().any(|(_, l)| level.is_none_or(|me| *l > me)))
    }

    /// Whether `k` has a pending reader (any level).
    fn read_pending(&self, k: &Key) -> bool {
        self.keys.get(k).is_some_and(|e| !e.readers.is_empty())
    }
}

/// `hier-ts`'s counters, summed over servers into the run's report.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct TsStats {
    /// Distributed transactions refused by a leaf.
    pub(super) leaf_aborts: u64,
    /// Transactions refused by an inner validator's re-validation, per level (1 = the
    /// validators just above the leaves).
    pub(super) inner_aborts: Vec<u64>,
    /// Distributed writers that passed a leaf over a pending reader (rule 3), where
    /// `hier-lock` would have refused them.
    pub(super) passed_readers: u64,
    /// Keys carried up the tree in votes (the paper's "bigger messages": `hier-lock`'s
    /// votes carry none).
    pub(super) keys_up: u64,
    /// Votes sent up the tree.
    pub(super) votes_up: u64,
}

impl TsStats {
    pub(super) fn report(&self) -> Vec<(String, f64)> {
        let mut v = vec![
            ("leaf_aborts".to_string(), self.leaf_aborts as f64),
            ("passed_pending_readers".to_string(), self.passed_readers as f64),
            ("keys_up".to_string(), self.keys_up as f64),
            ("votes_up".to_string(), self.votes_up as f64),
        ];
        for (i, n) in self.inner_aborts.iter().enumerate() {
            v.push((format!("inner_aborts_level_{}", i + 1), *n as f64));
        }
        v
    }
}

impl Server {
    /// `hier-ts`'s leaf validation (rules 1–3 above). `decider`: the level of the
    /// transaction's decider (`None`: local).
    pub(super) fn ts_leaf_check(&mut self, snap: u64, reads: &[Key], writes: &Writes, decider: Option<u32>) -> bool {
        let committed_after = |s: &Self, k: &Key| s.store.versions(k).iter().any(|v| !v.tentative && v.wts > snap);
        for k in reads.iter().chain(writes.iter().map(|w| &w.0)) {
            if committed_after(self, k) || self.pending.write_pending(k) {
                return false;
            }
        }
        let mut passed = false;
        for (k, _, _) in writes {
            if self.pending.read_above(k, decider) {
                return false;
            }
            passed |= self.pending.read_pending(k);
        }
        if passed {
            self.ts_stats.passed_readers += 1;
        }
        true
    }

    /// The level of the validator that decides a transaction over `nodes` (`None`:
    /// local).
    pub(super) fn decider_level(&self, nodes: &[meridian_core::NodeId]) -> Option<u32> {
        let tree = &self.sh.tree;
        tree.decider(nodes).map(|v| tree.inner[v.0 as usize].level)
    }

    /// Rules (a) and (b) at inner validator `v` for gathered transaction `g` (timestamp
    /// `g.ts`, the max of its children's). Charges one key operation per distinct key.
    pub(super) fn inner_check(&mut self, v: Vid, g: &Gather, cx: &mut Ctx<'_, Msg>) -> bool {
        let only_written = g.writes.iter().filter(|k| !g.reads.contains(k)).count();
        self.charge_validation(g.reads.len() + only_written, cx);
        let get = |m: &HashMap<(Vid, Key), u64>, k: &Key| m.get(&(v, k.clone())).copied().unwrap_or(0);
        let stale = g.reads.iter().chain(&g.writes).any(|k| get(&self.written, k) > g.snap);
        let under_a_read = g.writes.iter().any(|k| get(&self.read_ts, k) > g.ts);
        if stale || under_a_read {
            let level = self.sh.tree.inner[v.0 as usize].level as usize;
            let a = &mut self.ts_stats.inner_aborts;
            if a.len() < level {
                a.resize(level, 0);
            }
            a[level - 1] += 1;
            return false;
        }
        true
    }

    /// Notes at `v` that `txn` passed its validation there at `ts`: its writes' write
    /// timestamps, and its reads' read timestamps if `v` decides it. Logged; forced
    /// here if it is passed up (a decider's record is forced with its decision).
    pub(super) fn inner_record(&mut self, v: Vid, txn: TxnId, g: &Gather, decides: bool, cx: &mut Ctx<'_, Msg>) {
        note_ts(&mut self.written, v, &g.writes, g.ts);
        if decides {
            note_ts(&mut self.read_ts, v, &g.reads, g.ts);
        }
        let rec = Rec::Validated {
            vid: v,
            txn,
            ts: g.ts,
            decides,
            reads: g.reads.clone(),
            writes: g.writes.clone(),
        };
        if decides {
            self.log.append(rec, cx);
        } else {
            self.log.append_sync(rec, cx);
        }
    }

    /// Rebuilds the inner validators' timestamps from the log (after `decisions`).
    pub(super) fn replay_validated(&mut self) {
        for r in self.log.records() {
            if let Rec::Validated {
                vid,
                txn,
                ts,
                decides,
                reads,
                writes,
            } = r
            {
                note_ts(&mut self.written, *vid, writes, *ts);
                if *decides && self.decisions.get(txn).is_some_and(|d| d.0) {
                    note_ts(&mut self.read_ts, *vid, reads, *ts);
                }
            }
        }
    }
}

fn note_ts(m: &mut HashMap<(Vid, Key), u64>, v: Vid, keys: &[Key], ts: u64) {
    for k in keys {
        let e = m.entry((v, k.clone())).or_insert(0);
        *e = (*e).max(ts);
    }
}
