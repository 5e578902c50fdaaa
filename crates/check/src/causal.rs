//! Causal consistency, the level between read atomic and snapshot isolation.
//!
//! The definition is Cerone, Bernardi and Gotsman's ("A framework for transactional
//! consistency models with atomic visibility", CONCUR 2015), checked the way Biswas and
//! Enea do ("On the complexity of checking transactional consistency", OOPSLA 2019):
//! *happens-before* is `hb = (so ∪ wr)+`, session order (each client's transactions in
//! the order it ran them) with reads-from. A history is causal iff some total order of
//! its committed transactions contains `hb` and each key's version order, and every read
//! returns the last write before it in that order among the writes visible to it. That
//! holds iff
//!
//! 1. `so ∪ wr ∪ ww` has no cycle (an order containing `hb` and the version orders
//!    exists), and
//! 2. no transaction reads a version of a key older than a version written by a
//!    transaction that happens before it (it would then not see a visible write).
//!
//! The first is a cycle search on its own graph; the second uses a vector clock per
//! transaction (one entry per session: how many of that session's transactions happen
//! before it), filled in topological order of `so ∪ wr`, and per key and session the
//! highest position in the version order written so far.
//!
//! Unlike the snapshot isolation and serializability levels of this checker (Adya's,
//! without session order), causal consistency includes session order: a client that does
//! not see its own earlier write breaks it even in a history that is serializable.
//!
//! Only keys whose version order is fixed take part: a violation found is one in every
//! order the history allows, and where some key's order is open, "no violation" stays
//! unknown (the caller decides). A history that is serializable with session order (its
//! dependency graph stays acyclic when session order is added) is causal; the caller
//! skips the check then, which is the common case and costs one more cycle search.

use super::{fmt_versions, Checker};
use crate::graph::{EdgeKind, Graph};
use meridian_core::ClientId;
use rustc_hash::FxHashMap as HashMap;

/// Most vector-clock cells (transactions × sessions) the check keeps: 64 Mi cells,
/// 256 MiB. Beyond it the level is reported unknown.
const CELLS: usize = 64 << 20;

/// What the check found.
pub(crate) enum Causal {
    /// No violation among the keys with a fixed order.
    NoViolation,
    /// A violation, printed.
    Violation(String),
    /// Too large to check.
    TooLarge(String),
}

/// Adds an `so` edge between each session's consecutive transactions; returns the
/// nodes it added one from, in order (for [`Graph::pop`]).
pub(crate) fn add_session_order(g: &mut Graph, members: &[Vec<usize>]) -> Vec<usize> {
    let mut from = vec![];
    for m in members {
        for w in m.windows(2) {
            g.add(w[0], w[1], EdgeKind::So, u32::MAX);
            from.push(w[0]);
        }
    }
    from
}

impl<'h> Checker<'h> {
    /// Each session's committed transactions in session order (start time, then id).
    pub(crate) fn session_members(&self) -> Vec<Vec<usize>> {
        let mut ix: HashMap<ClientId, usize> = HashMap::default();
        let mut members: Vec<Vec<usize>> = vec![];
        for (i, t) in self.txn_of.iter().enumerate() {
            let s = *ix.entry(t.client).or_insert_with(|| {
                members.push(vec![]);
                members.len() - 1
            });
            members[s].push(i);
        }
        for m in members.iter_mut() {
            m.sort_by_key(|&i| (self.txn_of[i].start, self.txn_of[i].id));
        }
        members
    }

    /// Each committed transaction's session and its index in it, given the sessions'
    /// members in order ([`Checker::session_members`]).
    fn sessions(&self, members: &[Vec<usize>]) -> (Vec<u32>, Vec<u32>) {
        let n = self.txn_of.len();
        let (mut sess, mut idx) = (vec![0u32; n], vec![0u32; n]);
        for (s, m) in members.iter().enumerate() {
            for (k, &i) in m.iter().enumerate() {
                sess[i] = s as u32;
                idx[i] = k as u32;
            }
        }
        (sess, idx)
    }

    pub(crate) fn causal(&self, members: &[Vec<usize>]) -> Causal {
        let n = self.txn_of.len();
        let (sess, idx) = self.sessions(members);
        // so ∪ wr ∪ ww, for condition 1.
        let mut g = Graph::new(n);
        add_session_order(&mut g, members);
        // wr edges (also the predecessors for the vector clocks).
        let mut preds: Vec<Vec<usize>> = vec![vec![]; n];
        for i in 0..self.txn_of.len() {
            if idx[i] > 0 {
                preds[i].push(members[sess[i] as usize][idx[i] as usize - 1]);
            }
            for (r, k) in self.reads_at(self.rec_of[i] as usize) {
                let Some(v) = r.version else { continue };
                match self.node_of(v.txn) {
                    Some(w) if w != i => {
                        g.add(w, i, EdgeKind::Wr, k);
                        preds[i].push(w);
                    }
                    _ => {}
                }
            }
        }
        for &ki in &self.sorted_keys {
            for w in self.order_of(ki).windows(2) {
                if let (Some(a), Some(b)) = (self.node_of(w[0].txn), self.node_of(w[1].txn)) {
                    if a != b {
                        g.add(a, b, EdgeKind::Ww, ki);
                    }
                }
            }
        }
        if let Some(comp) = g.sccs(|_| true).first() {
            if let Some(cyc) = g.cycle_within(comp, |_| true) {
                let s = self.fmt_cycle(&cyc);
                return Causal::Violation(format!(
                    "causality cycle (session order, reads-from and version order): {s}"
                ));
            }
        }
        drop(g);
        // Condition 2: vector clocks in topological order of so ∪ wr (acyclic now).
        let sessions = members.len();
        if n.saturating_mul(sessions) > CELLS {
            return Causal::TooLarge(format!(
                "causal consistency not judged: {n} transactions × {sessions} sessions exceed its budget of {CELLS} vector-clock cells"
            ));
        }
        let mut succs: Vec<Vec<usize>> = vec![vec![]; n];
        let mut indeg = vec![0u32; n];
        for (i, ps) in preds.iter().enumerate() {
            for &p in ps {
                succs[p].push(i);
                indeg[i] += 1;
            }
        }
        let mut queue: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
        let mut vc = vec![0u32; n * sessions];
        let mut tmp = vec![0u32; sessions];
        while let Some(i) = queue.pop() {
            for &p in &preds[i] {
                tmp.copy_from_slice(&vc[p * sessions..(p + 1) * sessions]);
                let row = &mut vc[i * sessions..(i + 1) * sessions];
                for (x, y) in row.iter_mut().zip(&tmp) {
                    *x = (*x).max(*y);
                }
                let s = sess[p] as usize;
                row[s] = row[s].max(idx[p] + 1);
            }
            for &j in &succs[i] {
                indeg[j] -= 1;
                if indeg[j] == 0 {
                    queue.push(j);
                }
            }
        }
        // Per key and session: the session's writes of the key in session order, with
        // the highest version position written up to each (and by whom).
        type Runs = Vec<Vec<(u32, usize, usize)>>;
        let mut writes: HashMap<u32, Runs> = HashMap::default();
        for m in members {
            for &i in m {
                for (k, v) in self.finals_of(self.txn_of[i].id) {
                    let Some(p) = self.pos_of(*v) else { continue };
                    if self.order[*k as usize].is_none() {
                        continue;
                    }
                    let runs = writes.entry(*k).or_insert_with(|| vec![vec![]; sessions]);
                    let run = &mut runs[sess[i] as usize];
                    let best = match run.last() {
                        Some(&(_, bp, bw)) if bp >= p => (bp, bw),
                        _ => (p, i),
                    };
                    run.push((idx[i], best.0, best.1));
                }
            }
        }
        for (i, t) in self.txn_of.iter().enumerate() {
            for (r, k) in self.reads_at(self.rec_of[i] as usize) {
                let Some(runs) = writes.get(&k) else { continue };
                let read_pos = match r.version {
                    None => None,
                    Some(v) if v.txn == t.id => continue,
                    Some(v) => match self.pos_of(v) {
                        Some(p) => Some(p),
                        None => continue,
                    },
                };
                for (s, run) in runs.iter().enumerate() {
                    let limit = vc[i * sessions + s];
                    // Writes of this session that happen before t: index < limit.
                    let upto = run.partition_point(|&(k, _, _)| k < limit);
                    let Some(&(_, p, w)) = upto.checked_sub(1).map(|u| &run[u]) else {
                        continue;
                    };
                    if w != i && read_pos.is_none_or(|rp| p > rp) {
                        let later = self.order_of(k)[p];
                        let saw = r
                            .version
                            .map_or("the initial value".to_string(), |v| fmt_versions(&[v]));
                        return Causal::Violation(format!(
                            "{} read {} of key {} though {}, which happens before it (session order and reads-from), wrote the later version {}",
                            t.id,
                            saw,
                            r.key,
                            self.txn_of[w].id,
                            fmt_versions(&[later])
                        ));
                    }
                }
            }
        }
        Causal::NoViolation
    }
}
