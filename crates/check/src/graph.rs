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
    /// By the key's bytes (not `&Key`: one pointer fewer to follow per lookup, which
    /// at a million keys is a cache miss each).
    ix: HashMap<&'h [u8], u32>,
    keys: Vec<&'h Key>,
    /// `forget_bytes` was called: keys are no longer looked up by their bytes.
    forgotten: bool,
}

impl<'h> KeyIds<'h> {
    /// `k`'s number, given on first sight.
    pub fn id(&mut self, k: &'h Key) -> u32 {
        assert!(!self.forgotten, "a key numbered after forget_bytes");
        *self.ix.entry(k.as_bytes()).or_insert_with(|| {
            self.keys.push(k);
            self.keys.len() as u32 - 1
        })
    }
    /// `k`'s number, if it has one.
    pub fn get(&self, k: &Key) -> Option<u32> {
        assert!(!self.forgotten, "a key looked up after forget_bytes");
        self.ix.get(k.as_bytes()).copied()
    }
    /// Frees the lookup by bytes once every key is numbered (at a million keys it is
    /// tens of megabytes, and the graph built next needs the room); numbers still turn
    /// back into keys.
    pub fn forget_bytes(&mut self) {
        self.ix = HashMap::default();
        self.forgotten = true;
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

/// One edge out of a node, in 8 bytes (a million-transaction history has millions):
/// the node it leads to, and its kind (3 bits) and key number (29 bits) packed.
#[derive(Clone, Copy)]
struct Out {
    to: u32,
    kind_key: u32,
}

/// Key numbers the graph names are below this (29 bits; this value stands for "no key").
pub(crate) const MAX_KEYS: u32 = (1 << 29) - 1;
const NO_KEY: u32 = MAX_KEYS;

/// Every kind, in declaration order (`kind as u32` is its place here).
const KINDS: [EdgeKind; 5] = [EdgeKind::Ww, EdgeKind::Wr, EdgeKind::Rw, EdgeKind::Rt, EdgeKind::So];

impl Out {
    fn new(to: usize, kind: EdgeKind, key: u32) -> Out {
        let k = kind as u32; // its place in KINDS
                             // `u32::MAX` is the callers' "no key" (session and real-time edges).
        assert!(
            key == u32::MAX || key < MAX_KEYS,
            "key number {key} past the graph's {MAX_KEYS}"
        );
        let key = if key == u32::MAX { NO_KEY } else { key };
        Out {
            to: to as u32,
            kind_key: key << 3 | k,
        }
    }
    fn unpack(self) -> (u32, EdgeKind, u32) {
        let key = self.kind_key >> 3;
        let key = if key == NO_KEY { u32::MAX } else { key };
        (self.to, KINDS[(self.kind_key & 7) as usize], key)
    }
}

#[derive(Clone, Default)]
pub(crate) struct Graph {
    adj: Vec<Vec<Out>>,
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
        self.adj[a].push(Out::new(b, kind, key));
    }
    /// Drops every node from `n` on (edges into them from lower nodes are the caller's
    /// to remove).
    pub fn truncate(&mut self, n: usize) {
        self.adj.truncate(n);
    }
    /// The nodes `v` has an edge to (of any kind; a node twice if two edges lead there).
    pub fn succ(&self, v: usize) -> impl Iterator<Item = usize> + '_ {
        self.adj[v].iter().map(|e| e.to as usize)
    }
    /// Removes the edge last added from `a`.
    pub fn pop(&mut self, a: usize) {
        self.adj[a].pop();
    }
    /// `v`'s edges: the node each leads to, its kind and its key number (`u32::MAX`
    /// for none).
    fn out(&self, v: usize) -> impl Iterator<Item = (u32, EdgeKind, u32)> + '_ {
        self.adj[v].iter().map(|e| e.unpack())
    }

    /// Strongly connected components with more than one node, using only edges whose
    /// kind passes `keep` (iterative Tarjan).
    pub fn sccs(&self, keep: impl Fn(EdgeKind) -> bool) -> Vec<Vec<usize>> {
        // Node numbers and edge positions as u32: at a million transactions these
        // arrays and stacks are a large part of the checker's peak memory.
        let n = self.adj.len();
        let mut index = vec![u32::MAX; n];
        let mut low = vec![0u32; n];
        let mut on = vec![false; n];
        let mut stack: Vec<u32> = vec![];
        let mut out = vec![];
        let mut next = 0u32;
        let mut call: Vec<(u32, u32)> = vec![];
        for root in 0..n {
            if index[root] != u32::MAX {
                continue;
            }
            call.push((root as u32, 0));
            index[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root as u32);
            on[root] = true;
            while let Some(&mut (v, ref mut ei)) = call.last_mut() {
                let v = v as usize;
                if let Some((w, kind, _)) = self.adj[v].get(*ei as usize).map(|e| e.unpack()) {
                    *ei += 1;
                    if !keep(kind) {
                        continue;
                    }
                    let wi = w as usize;
                    if index[wi] == u32::MAX {
                        index[wi] = next;
                        low[wi] = next;
                        next += 1;
                        stack.push(w);
                        on[wi] = true;
                        call.push((w, 0));
                    } else if on[wi] {
                        low[v] = low[v].min(index[wi]);
                    }
                } else {
                    call.pop();
                    if let Some(&(p, _)) = call.last() {
                        let p = p as usize;
                        low[p] = low[p].min(low[v]);
                    }
                    if low[v] == index[v] {
                        let mut comp = vec![];
                        loop {
                            let w = stack.pop().expect("tarjan stack") as usize;
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
            for (w, kind, key) in self.out(v) {
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
            for (b, kind, key) in self.out(a) {
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
                for (c, k2, key2) in self.out(b) {
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
                    .map(|e| e.unpack())
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
            for (b, kind, key) in self.out(a) {
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
            for (w, kind, key) in self.out(v) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edge_packs_its_kind_and_key() {
        for kind in KINDS {
            for key in [0, 1, 12_345, MAX_KEYS - 1, u32::MAX] {
                let e = Out::new(7, kind, key);
                assert_eq!(e.unpack(), (7, kind, key), "{kind} {key}");
            }
        }
        assert_eq!(std::mem::size_of::<Out>(), 8);
    }

    #[test]
    #[should_panic(expected = "past the graph's")]
    fn a_key_number_past_29_bits_is_refused() {
        Out::new(0, EdgeKind::Ww, MAX_KEYS);
    }
}
