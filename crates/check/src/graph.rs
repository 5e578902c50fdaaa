//! A compact directed graph with typed edges, iterative Tarjan SCCs, and cycle
//! extraction restricted to edge kinds.

use meridian_core::Key;
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;
use std::fmt;

/// Dependency type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum EdgeKind {
    Ww,
    Wr,
    Rw,
    /// Real-time order (through time points).
    Rt,
    /// Session order (the causal check's own graph).
    So,
}

impl fmt::Display for EdgeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EdgeKind::Ww => "ww",
            EdgeKind::Wr => "wr",
            EdgeKind::Rw => "rw",
            EdgeKind::Rt => "rt",
            EdgeKind::So => "so",
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Edge {
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
    pub key: u32,
}

/// Numbers keys: the checker works with a key's number (edges name it too) and turns
/// it back into the key only to print.
#[derive(Default)]
pub(crate) struct KeyIds<'h> {
    ix: HashMap<&'h Key, u32>,
    keys: Vec<&'h Key>,
}

impl<'h> KeyIds<'h> {
    /// `k`'s number, given on first sight.
    pub fn id(&mut self, k: &'h Key) -> u32 {
        *self.ix.entry(k).or_insert_with(|| {
            self.keys.push(k);
            self.keys.len() as u32 - 1
        })
    }
    /// `k`'s number, if it has one.
    pub fn get(&self, k: &Key) -> Option<u32> {
        self.ix.get(k).copied()
    }
    /// The key numbered `i`.
    pub fn key(&self, i: u32) -> &'h Key {
        self.keys[i as usize]
    }
    /// How many keys are numbered.
    pub fn len(&self) -> usize {
        self.keys.len()
    }
}

#[derive(Clone, Default)]
pub(crate) struct Graph {
    adj: Vec<Vec<(u32, EdgeKind, u32)>>,
}

/// Limit on rw edges tried when looking for a G-single cycle in one component.
const SINGLE_RW_TRIES: usize = 512;

impl Graph {
    pub fn new(n: usize) -> Self {
        Graph { adj: vec![vec![]; n] }
    }
    pub fn grow(&mut self, extra: usize) {
        self.adj.resize(self.adj.len() + extra, vec![]);
    }
    pub fn add(&mut self, a: usize, b: usize, kind: EdgeKind, key: u32) {
        self.adj[a].push((b as u32, kind, key));
    }
    /// Drops every node from `n` on (edges into them from lower nodes are the caller's
    /// to remove).
    pub fn truncate(&mut self, n: usize) {
        self.adj.truncate(n);
    }
    /// The nodes `v` has an edge to (of any kind; a node twice if two edges lead there).
    pub fn succ(&self, v: usize) -> impl Iterator<Item = usize> + '_ {
        self.adj[v].iter().map(|e| e.0 as usize)
    }
    /// Removes the edge last added from `a`.
    pub fn pop(&mut self, a: usize) {
        self.adj[a].pop();
    }

    /// Strongly connected components with more than one node, using only edges whose
    /// kind passes `keep` (iterative Tarjan).
    pub fn sccs(&self, keep: impl Fn(EdgeKind) -> bool) -> Vec<Vec<usize>> {
        let n = self.adj.len();
        let mut index = vec![u32::MAX; n];
        let mut low = vec![0u32; n];
        let mut on = vec![false; n];
        let mut stack = vec![];
        let mut out = vec![];
        let mut next = 0u32;
        for root in 0..n {
            if index[root] != u32::MAX {
                continue;
            }
            let mut call: Vec<(usize, usize)> = vec![(root, 0)];
            index[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root);
            on[root] = true;
            while let Some(&mut (v, ref mut ei)) = call.last_mut() {
                if let Some(&(w, kind, _)) = self.adj[v].get(*ei) {
                    *ei += 1;
                    if !keep(kind) {
                        continue;
                    }
                    let w = w as usize;
                    if index[w] == u32::MAX {
                        index[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on[w] = true;
                        call.push((w, 0));
                    } else if on[w] {
                        low[v] = low[v].min(index[w]);
                    }
                } else {
                    call.pop();
                    if let Some(&(p, _)) = call.last() {
                        low[p] = low[p].min(low[v]);
                    }
                    if low[v] == index[v] {
                        let mut comp = vec![];
                        loop {
                            let w = stack.pop().expect("tarjan stack");
                            on[w] = false;
                            comp.push(w);
                            if w == v {
                                break;
                            }
                        }
                        if comp.len() > 1 {
                            comp.sort_unstable();
                            out.push(comp);
                        }
                    }
                }
            }
        }
        out
    }

    /// Shortest path from `src` to `dst` inside `members` over edges passing `keep`.
    fn path(
        &self,
        src: usize,
        dst: usize,
        members: &HashMap<usize, ()>,
        keep: &impl Fn(EdgeKind) -> bool,
    ) -> Option<Vec<Edge>> {
        let mut prev: HashMap<usize, Edge> = HashMap::default();
        let mut q = VecDeque::from([src]);
        let mut seen: HashMap<usize, ()> = [(src, ())].into_iter().collect();
        while let Some(v) = q.pop_front() {
            for &(w, kind, key) in &self.adj[v] {
                let w = w as usize;
                if !keep(kind) || !members.contains_key(&w) {
                    continue;
                }
                let e = Edge {
                    from: v,
                    to: w,
                    kind,
                    key,
                };
                if w == dst {
                    let mut path = vec![e];
                    let mut cur = v;
                    while cur != src {
                        let pe = prev[&cur];
                        path.push(pe);
                        cur = pe.from;
                    }
                    path.reverse();
                    return Some(path);
                }
                if seen.insert(w, ()).is_none() {
                    prev.insert(w, e);
                    q.push_back(w);
                }
            }
        }
        None
    }

    /// A cycle within `comp` that snapshot isolation forbids: one with no two adjacent
    /// `rw` edges (Cerone and Gotsman, "Analysing snapshot isolation", PODC 2016: a
    /// history is SI iff every cycle of its dependency graph has two adjacent
    /// anti-dependencies). Found as a cycle of the graph whose edges are the `ww`/`wr`
    /// edges and each `ww`/`wr` edge followed by an `rw` edge; returned expanded into
    /// the dependency graph's edges.
    pub fn si_cycle(&self, comp: &[usize]) -> Option<Vec<Edge>> {
        let members: HashMap<usize, ()> = comp.iter().map(|v| (*v, ())).collect();
        let mut h = Graph::new(self.adj.len());
        let mut direct: HashMap<(usize, usize), Edge> = HashMap::default();
        let mut via: HashMap<(usize, usize), (Edge, Edge)> = HashMap::default();
        for &a in comp {
            for &(b, kind, key) in &self.adj[a] {
                let b = b as usize;
                if !members.contains_key(&b) || !matches!(kind, EdgeKind::Ww | EdgeKind::Wr) {
                    continue;
                }
                let d = Edge {
                    from: a,
                    to: b,
                    kind,
                    key,
                };
                h.add(a, b, kind, key);
                direct.entry((a, b)).or_insert(d);
                for &(c, k2, key2) in &self.adj[b] {
                    let c = c as usize;
                    if k2 == EdgeKind::Rw && members.contains_key(&c) {
                        let r = Edge {
                            from: b,
                            to: c,
                            kind: EdgeKind::Rw,
                            key: key2,
                        };
                        if c == a {
                            // a -ww/wr-> b -rw-> a: a cycle of two (a lost update).
                            return Some(vec![d, r]);
                        }
                        h.add(a, c, EdgeKind::Rw, key2);
                        via.entry((a, c)).or_insert((
                            d,
                            Edge {
                                from: b,
                                to: c,
                                kind: EdgeKind::Rw,
                                key: key2,
                            },
                        ));
                    }
                }
            }
        }
        for sub in h.sccs(|_| true) {
            let Some(cyc) = h.cycle_within(&sub, |_| true) else {
                continue;
            };
            let mut out = vec![];
            for e in cyc {
                if e.kind == EdgeKind::Rw {
                    let (d, r) = via[&(e.from, e.to)];
                    out.push(d);
                    out.push(r);
                } else {
                    out.push(direct[&(e.from, e.to)]);
                }
            }
            return Some(out);
        }
        None
    }

    /// Every edge between transactions (`from < n`) whose kind passes `keep`.
    pub fn pairs(&self, n: usize, keep: impl Fn(EdgeKind) -> bool) -> Vec<(usize, usize)> {
        let mut out = vec![];
        for (a, es) in self.adj.iter().enumerate().take(n) {
            out.extend(
                es.iter()
                    .filter(|e| (e.0 as usize) < n && keep(e.1))
                    .map(|e| (a, e.0 as usize)),
            );
        }
        out
    }

    /// A cycle among `comp` using only edges passing `keep`.
    pub fn cycle_within(&self, comp: &[usize], keep: impl Fn(EdgeKind) -> bool) -> Option<Vec<Edge>> {
        let sub = self.sub_sccs(comp, &keep);
        let c = sub.first()?;
        let members: HashMap<usize, ()> = c.iter().map(|&x| (x, ())).collect();
        self.path(c[0], c[0], &members, &keep)
    }

    /// A cycle among `comp` with exactly one rw edge (the rest ww/wr), if one is found.
    pub fn single_rw_cycle(&self, comp: &[usize]) -> Option<Vec<Edge>> {
        let members: HashMap<usize, ()> = comp.iter().map(|&x| (x, ())).collect();
        let no_rw = |k: EdgeKind| k == EdgeKind::Ww || k == EdgeKind::Wr;
        let mut tries = 0;
        for &a in comp {
            for &(b, kind, key) in &self.adj[a] {
                let b = b as usize;
                if kind != EdgeKind::Rw || !members.contains_key(&b) {
                    continue;
                }
                tries += 1;
                if tries > SINGLE_RW_TRIES {
                    return None;
                }
                let first = Edge {
                    from: a,
                    to: b,
                    kind,
                    key,
                };
                if b == a {
                    return Some(vec![first]);
                }
                if let Some(rest) = self.path(b, a, &members, &no_rw) {
                    let mut c = vec![first];
                    c.extend(rest);
                    return Some(c);
                }
            }
        }
        None
    }

    fn sub_sccs(&self, comp: &[usize], keep: &impl Fn(EdgeKind) -> bool) -> Vec<Vec<usize>> {
        // Build a small induced subgraph and run Tarjan on it.
        let ix: HashMap<usize, usize> = comp.iter().enumerate().map(|(i, &x)| (x, i)).collect();
        let mut sub = Graph::new(comp.len());
        for &v in comp {
            for &(w, kind, key) in &self.adj[v] {
                if keep(kind) {
                    if let Some(&j) = ix.get(&(w as usize)) {
                        sub.add(ix[&v], j, kind, key);
                    }
                }
            }
        }
        sub.sccs(|_| true)
            .into_iter()
            .map(|c| c.into_iter().map(|i| comp[i]).collect())
            .collect()
    }
}
