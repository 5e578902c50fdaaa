//! The direct serialization graph over the committed transactions, its cycles, and
//! real-time order.

use super::*;

impl<'h> Checker<'h> {
    pub(crate) fn build_graph(&mut self) -> Graph {
        let n = self.txn_of.len();
        let mut g = Graph::new(n);
        // ww edges
        for &ki in &self.sorted_keys {
            for w in self.order_of(ki).windows(2) {
                if let (Some(a), Some(b)) = (self.node_of(w[0].txn), self.node_of(w[1].txn)) {
                    if a != b {
                        g.add(a, b, EdgeKind::Ww, ki);
                    }
                }
            }
        }
        // Partly ordered keys: every pair the history orders is a ww path in any
        // allowed order, and a reader of a version precedes (through an rw edge and ww
        // edges) the writer of every later version.
        let mut readers: HashMap<u32, Vec<usize>> = self.partial.iter().map(|p| (p.0, vec![])).collect();
        if !readers.is_empty() {
            for ti in 0..self.txn_of.len() {
                for (_, k) in self.reads_at(self.rec_of[ti] as usize) {
                    if let Some(rs) = readers.get_mut(&k) {
                        if rs.last() != Some(&ti) {
                            rs.push(ti);
                        }
                    }
                }
            }
        }
        for (ki, vs, before) in &self.partial {
            let ki = *ki;
            let writer: Vec<Option<usize>> = vs.iter().map(|v| self.node_of(v.txn)).collect();
            for (a, row) in before.iter().enumerate() {
                for (b, &is_before) in row.iter().enumerate() {
                    if let (true, Some(x), Some(y)) = (is_before, writer[a], writer[b]) {
                        if x != y {
                            g.add(x, y, EdgeKind::Ww, ki);
                        }
                    }
                }
            }
            for &ti in &readers[&ki] {
                let t = self.txn_of[ti];
                for (r, _) in self.reads_at(self.rec_of[ti] as usize).filter(|(_, k)| *k == ki) {
                    let later: Vec<usize> = match r.version {
                        None => (0..vs.len()).collect(),
                        Some(v) if v.txn == t.id => continue,
                        Some(v) => match vs.iter().position(|x| *x == v) {
                            Some(a) => (0..vs.len()).filter(|b| before[a][*b]).collect(),
                            None => continue,
                        },
                    };
                    for b in later {
                        if let Some(y) = writer[b].filter(|y| *y != ti) {
                            g.add(ti, y, EdgeKind::Rw, ki);
                        }
                    }
                }
            }
        }
        let h = self.h;
        let mut read_pos: Vec<(u32, Option<Option<usize>>)> = vec![];
        let mut unlisted = 0;
        let mut found = vec![];
        // wr and rw edges, G1a/G1b, fractured reads
        for (ti, &t) in self.txn_of.iter().enumerate() {
            // What t saw of each key: the initial state, a version at a known position,
            // or a version no replica holds (position unknown: no fractured-read
            // judgement can rest on it).
            let rec = self.rec_of[ti] as usize;
            read_pos.clear();
            read_pos.extend(self.reads_at(rec).map(|(r, k)| {
                let seen = match r.version {
                    None => Some(None),
                    Some(v) => self.pos_of(v).map(Some),
                };
                (k, seen)
            }));
            // Few reads (the common case): a linear search beats hashing.
            let read_map: Option<HashMap<u32, Option<Option<usize>>>> =
                (read_pos.len() > 16).then(|| read_pos.iter().copied().collect());
            let seen_of = |k: u32| -> Option<Option<Option<usize>>> {
                match &read_map {
                    Some(m) => m.get(&k).copied(),
                    None => read_pos.iter().find(|(rk, _)| *rk == k).map(|(_, s)| *s),
                }
            };
            for (r, ki) in self.reads_at(rec) {
                let order = self.order_of(ki);
                let next = match r.version {
                    None => order.first(),
                    Some(v) => {
                        if v.txn == t.id {
                            continue;
                        }
                        let wi = self.ix(v.txn);
                        match wi.map(|i| (i, &h.txns[i])) {
                            None if self.incomplete => {
                                unlisted += 1;
                                continue;
                            }
                            None => {
                                found.push((
                                    Kind::G1a,
                                    vec![t.id],
                                    format!("{} read {}={v}, written by no recorded transaction", t.id, r.key),
                                ));
                                continue;
                            }
                            Some((wi, w)) => {
                                let Some(wn) = self.node_at(wi) else {
                                    found.push((
                                        Kind::G1a,
                                        vec![t.id, w.id],
                                        format!("{} read {}={v} written by {} which did not commit", t.id, r.key, w.id),
                                    ));
                                    continue;
                                };
                                if self.final_at(wi, ki) != Some(v) {
                                    found.push((
                                        Kind::G1b,
                                        vec![t.id, w.id],
                                        format!("{} read {}={v}, an intermediate write of {}", t.id, r.key, w.id),
                                    ));
                                    continue;
                                }
                                g.add(wn, ti, EdgeKind::Wr, ki);
                                // fractured read: t saw w's write to r.key but an older
                                // version of another key w wrote
                                for &(k2, v2) in self.finals.of(wi) {
                                    if let Some(Some(seen)) = seen_of(k2) {
                                        // the initial state is older than any write
                                        let older = match (seen, self.pos_of(v2)) {
                                            (None, _) => true,
                                            (Some(p), Some(wpos)) => p < wpos,
                                            (Some(_), None) => false,
                                        };
                                        if older {
                                            found.push((
                                                Kind::FracturedRead,
                                                vec![t.id, w.id],
                                                format!(
                                                    "{} read {}={v} of {} but an older version of {} than {v2}",
                                                    t.id,
                                                    r.key,
                                                    w.id,
                                                    self.keys.key(k2)
                                                ),
                                            ));
                                        }
                                    }
                                }
                                match self.pos_of(v) {
                                    Some(p) => order.get(p + 1),
                                    None => None,
                                }
                            }
                        }
                    }
                };
                if let Some(nv) = next {
                    if let Some(x) = self.node_of(nv.txn) {
                        if x != ti {
                            g.add(ti, x, EdgeKind::Rw, ki);
                        }
                    }
                }
            }
        }
        self.unlisted += unlisted;
        for (k, t, d) in found {
            self.push(k, t, d);
        }
        g
    }

    pub(crate) fn fmt_cycle(&self, cyc: &[Edge]) -> String {
        let mut s = String::new();
        for (i, e) in cyc.iter().enumerate() {
            if i == 0 {
                s.push_str(&self.txn_of[e.from].id.to_string());
            }
            if e.kind == EdgeKind::So {
                s.push_str(&format!(" -so-> {}", self.txn_of[e.to].id));
            } else {
                s.push_str(&format!(
                    " -{}({})-> {}",
                    e.kind,
                    self.keys.key(e.key),
                    self.txn_of[e.to].id
                ));
            }
        }
        s
    }

    /// Reports the worst cycle of every strongly connected component and returns the
    /// components (the real-time pass needs them).
    pub(crate) fn cycles(&mut self, g: &Graph) -> Vec<Vec<usize>> {
        let comps = g.sccs(|_| true);
        for comp in &comps {
            let comp = comp.as_slice();
            let (kind, cyc) = if let Some(c) = g.cycle_within(comp, |k| k == EdgeKind::Ww) {
                (Kind::G0, c)
            } else if let Some(c) = g.cycle_within(comp, |k| k != EdgeKind::Rw) {
                (Kind::G1c, c)
            } else if let Some(c) = g.single_rw_cycle(comp) {
                let kind = if self.is_lost_update(&c) {
                    Kind::LostUpdate
                } else {
                    Kind::GSingle
                };
                (kind, c)
            } else if let Some(c) = g.cycle_within(comp, |_| true) {
                // Two anti-dependencies on one key between two transactions that read
                // the same version of it and both wrote it: their writes are not
                // ordered (no replica records the key, or one of the writes), but every
                // order makes it a lost update, which snapshot isolation forbids too.
                if self.is_lost_update(&c) {
                    if self.si_violation.is_none() {
                        self.si_violation = Some(format!("lost-update: {}", self.fmt_cycle(&c)));
                    }
                    (Kind::LostUpdate, c)
                } else {
                    (Kind::G2, c)
                }
            } else {
                continue;
            };
            let txns = cyc.iter().map(|e| self.txn_of[e.from].id).collect();
            let d = self.fmt_cycle(&cyc);
            self.push(kind, txns, d);
            if self.si_violation.is_none() {
                if let Some(c) = g.si_cycle(comp) {
                    let rws = c.iter().filter(|e| e.kind == EdgeKind::Rw).count();
                    let kind = if rws == 0 {
                        "G1c"
                    } else if c.len() == 2 && self.is_lost_update(&c) {
                        "lost-update"
                    } else if rws == 1 {
                        "G-single (read skew)"
                    } else {
                        // Two or more anti-dependencies, none adjacent: two readers saw
                        // two writes in opposite orders.
                        "long fork"
                    };
                    self.si_violation = Some(format!("{kind}: {}", self.fmt_cycle(&c)));
                }
            }
        }
        comps
    }

    /// A two-transaction cycle on one key `k` (`a -rw(k)-> b -ww(k)-> a`, or two `rw`
    /// edges where the writes' order is open) where both read the same version of `k`
    /// and both wrote it.
    pub(crate) fn is_lost_update(&self, cyc: &[Edge]) -> bool {
        if cyc.len() != 2 || cyc[0].key != cyc[1].key {
            return false;
        }
        let key = self.keys.key(cyc[0].key);
        let (a, b) = (self.txn_of[cyc[0].from], self.txn_of[cyc[0].to]);
        let read = |t: &TxnRecord| t.reads.iter().find(|r| &r.key == key).map(|r| r.version);
        let wrote = |t: &TxnRecord| t.writes.iter().any(|w| &w.key == key);
        matches!((read(a), read(b)), (Some(x), Some(y)) if x == y) && wrote(a) && wrote(b)
    }

    /// Whether an order of the transactions respects both the acyclic dependency graph
    /// `g` and real time, found without building the real-time graph: Kahn's
    /// topological sort, where a transaction is ready when its dependencies are placed
    /// and every transaction that ended before it started is placed. Among those whose
    /// dependencies are placed, the one that started first is the likeliest to be
    /// ready; if even it is not, none is, and a cycle through real time exists (the
    /// caller then builds the graph to find and print it). False also for a
    /// transaction that ended before it started, which the graph pass judges.
    pub(crate) fn real_time_order(&self, g: &Graph) -> bool {
        use std::cmp::Reverse;
        let n = self.txn_of.len();
        let end: Vec<u64> = self
            .txn_of
            .iter()
            .map(|t| match (t.outcome, t.end) {
                (Outcome::Committed, Some(e)) => e,
                _ => u64::MAX,
            })
            .collect();
        if self.txn_of.iter().zip(&end).any(|(t, &e)| e < t.start) {
            return false;
        }
        let mut indeg = vec![0u32; n];
        for v in 0..n {
            for w in g.succ(v) {
                indeg[w] += 1;
            }
        }
        let mut by_end: Vec<u32> = (0..n as u32).collect();
        by_end.sort_unstable_by_key(|&i| end[i as usize]);
        let mut placed = vec![false; n];
        let mut first_open = 0;
        let mut ready: std::collections::BinaryHeap<Reverse<(u64, u32)>> = (0..n)
            .filter(|&i| indeg[i] == 0)
            .map(|i| Reverse((self.txn_of[i].start, i as u32)))
            .collect();
        let mut count = 0;
        while let Some(Reverse((start, i))) = ready.pop() {
            while first_open < n && placed[by_end[first_open] as usize] {
                first_open += 1;
            }
            // the earliest end among transactions not yet placed
            if first_open < n && end[by_end[first_open] as usize] < start {
                return false;
            }
            placed[i as usize] = true;
            count += 1;
            for w in g.succ(i as usize) {
                indeg[w] -= 1;
                if indeg[w] == 0 {
                    ready.push(Reverse((self.txn_of[w].start, w as u32)));
                }
            }
        }
        count == n
    }

    /// Whether each session's consecutive transactions are ordered by real time: the
    /// earlier one committed and its outcome came before the later one started.
    pub(crate) fn sessions_in_real_time(&self, sessions: &[Vec<usize>]) -> bool {
        sessions.iter().all(|m| {
            m.windows(2).all(|w| {
                let (a, b) = (self.txn_of[w[0]], self.txn_of[w[1]]);
                a.outcome == Outcome::Committed && a.end.is_some_and(|e| e < b.start)
            })
        })
    }

    /// Looks for cycles that need real-time edges: first by a topological sort that
    /// needs no real-time graph (`real_time_order`, the common acyclic case), else
    /// through the graph with real-time edges added through a chain of time points (so
    /// it stays linear in size), which are taken out again after. Returns whether the
    /// graph with real time is acyclic. Consecutive starts share one
    /// time point, and so do consecutive ends: a point is entered only from the one
    /// before it, so sharing changes no path between transactions.
    pub(crate) fn real_time(&mut self, g: &mut Graph, dsg_comps: &[Vec<usize>]) -> bool {
        (dsg_comps.is_empty() && self.real_time_order(g)) || self.real_time_graph(g, dsg_comps)
    }

    /// The real-time pass over the graph with real-time edges through time points:
    /// reports each cycle that needs them; returns whether there is none.
    pub(crate) fn real_time_graph(&mut self, g: &mut Graph, dsg_comps: &[Vec<usize>]) -> bool {
        let n = self.txn_of.len();
        // events: (time, 0 = start / 1 = end, txn index); starts sort before ends at
        // equal times so that touching intervals are not ordered.
        let mut ev: Vec<(u64, u8, u32)> = Vec::with_capacity(2 * n);
        for (i, t) in self.txn_of.iter().enumerate() {
            ev.push((t.start, 0, i as u32));
            if let (Outcome::Committed, Some(e)) = (t.outcome, t.end) {
                ev.push((e, 1, i as u32));
            }
        }
        ev.sort_unstable();
        let runs = ev.chunk_by(|a, b| a.1 == b.1).count();
        let dsg_cyclic: HashSet<usize> = dsg_comps.iter().flatten().copied().collect();
        let rt = g;
        rt.grow(runs);
        for (p, run) in ev.chunk_by(|a, b| a.1 == b.1).enumerate() {
            let tp = n + p;
            if p + 1 < runs {
                rt.add(tp, tp + 1, EdgeKind::Rt, 0);
            }
            for &(_, kind, i) in run {
                if kind == 0 {
                    rt.add(tp, i as usize, EdgeKind::Rt, 0);
                } else {
                    rt.add(i as usize, tp, EdgeKind::Rt, 0);
                }
            }
        }
        let comps = rt.sccs(|_| true);
        for comp in &comps {
            let txns: Vec<usize> = comp.iter().copied().filter(|&x| x < n).collect();
            if txns.len() < 2 || txns.iter().all(|x| dsg_cyclic.contains(x)) {
                continue;
            }
            let Some(cyc) = rt.cycle_within(comp, |_| true) else {
                continue;
            };
            let path: Vec<String> = cyc
                .iter()
                .filter(|e| e.from < n)
                .map(|e| {
                    let t = self.txn_of[e.from];
                    format!("{} [{}..{}]", t.id, t.start, t.end.unwrap_or(0))
                })
                .collect();
            let ids = cyc
                .iter()
                .filter(|e| e.from < n)
                .map(|e| self.txn_of[e.from].id)
                .collect();
            self.push(
                Kind::RealTime,
                ids,
                format!("serialization order contradicts real time: {}", path.join(" -> ")),
            );
        }
        // Each transaction that ended got one edge, added last.
        for &(_, kind, i) in &ev {
            if kind == 1 {
                rt.pop(i as usize);
            }
        }
        rt.truncate(n);
        comps.is_empty()
    }
}
