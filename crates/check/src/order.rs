//! Version orders: from the replicas, from what the history's reads fix, and from the
//! search where neither decides.

use super::*;

/// Whether `chain` agrees with `order`, a chain whose start was collected: the versions
/// of `chain` that `order` lists are in its order, and those it does not list come
/// first (`order`'s replica collected them; this one has not yet).
fn collected_start_agrees(chain: &[VersionId], order: &[VersionId]) -> bool {
    let listed = |v: &VersionId| order.contains(v);
    let start = chain.iter().take_while(|v| !listed(v)).count();
    let rest = &chain[start..];
    rest.iter().all(listed) && is_subsequence(rest, order) && !has_duplicate(chain)
}

/// What a known chain of a key's versions is of its order.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Its first versions (a list-append read).
    Prefix,
    /// Its last versions (the replicas collected the start).
    Suffix,
    /// Some of them, in order (a replica that lacks some).
    Sub,
}

impl<'h> Checker<'h> {
    /// Version order per key from the replicas; replicas of a key must agree. The
    /// longest chain is the order; a replica whose chain is a subsequence of it merely
    /// lacks versions (a lost or not-yet-applied write, which the durability check
    /// reports for every committed one); one whose chain orders versions differently,
    /// or holds a version twice, diverges. Where replicas collected the start of their
    /// chains without ids, the chain that reaches furthest (listed plus collected) is
    /// the order's end, and another agrees if what it lists beyond it comes first.
    pub(crate) fn version_order(&mut self) {
        let h = self.h;
        // Each replica's keys by number, in its order.
        let ids: Vec<Vec<u32>> = h
            .replicas
            .iter()
            .map(|r| r.keys.keys().map(|k| self.keys.id(k)).collect())
            .collect();
        let n = self.keys.len();
        // The chain that reaches furthest: the most versions listed plus collected (a
        // replica that collected more may list fewer and still be the most recent).
        let mut first: Vec<Option<(NodeId, &'h [VersionId])>> = vec![None; n];
        let mut reach = vec![0u64; n];
        self.suffix = vec![false; n];
        for (r, ids) in h.replicas.iter().zip(&ids) {
            for ((key, st), &k) in r.keys.iter().zip(ids) {
                let pruned = if r.pruned.is_empty() {
                    0
                } else {
                    r.pruned.get(key).copied().unwrap_or(0)
                };
                let total = st.versions.len() as u64 + pruned;
                let f = &mut first[k as usize];
                if f.is_none() || total > reach[k as usize] {
                    *f = Some((r.node, &st.versions));
                    reach[k as usize] = total;
                    self.suffix[k as usize] = pruned > 0;
                }
            }
        }
        let mut divergent = vec![false; n];
        self.holds = Vec::with_capacity(h.replicas.len());
        for (r, ids) in h.replicas.iter().zip(&ids) {
            let mut holds = vec![0u8; n];
            for ((key, st), &k) in r.keys.iter().zip(ids) {
                let (n0, v0) = first[k as usize].expect("every replica key has a longest chain");
                let same = v0 == st.versions.as_slice();
                // A chain whose start was collected is never the whole order.
                let whole = same && !r.pruned.contains_key(key) && !self.suffix[k as usize];
                holds[k as usize] = if whole { FULL } else { PART };
                let agrees = same
                    || (is_subsequence(&st.versions, v0) && !has_duplicate(v0))
                    || (self.suffix[k as usize] && collected_start_agrees(&st.versions, v0));
                if !agrees && !divergent[k as usize] {
                    divergent[k as usize] = true;
                    let d = format!(
                        "key {}: {n0} has [{}] but {} has [{}]",
                        self.keys.key(k),
                        fmt_versions(v0),
                        r.node,
                        fmt_versions(&st.versions)
                    );
                    self.push(Kind::Divergent, vec![], d);
                }
            }
            self.holds.push(holds);
        }
        for (k, f) in first.iter().enumerate() {
            if let Some((n0, v0)) = f {
                if has_duplicate(v0) && !divergent[k] {
                    let d = format!(
                        "key {}: {n0} has [{}], a version twice",
                        self.keys.key(k as u32),
                        fmt_versions(v0)
                    );
                    self.push(Kind::Divergent, vec![], d);
                }
            }
        }
        self.order = vec![None; n];
        for (k, f) in first.into_iter().enumerate() {
            let Some((_, vs)) = f else { continue };
            let k = k as u32;
            for (i, v) in vs.iter().enumerate() {
                self.set_pos(*v, i);
                // A client whose transaction's outcome is unknown may not know what it
                // wrote (a shipped execution learns its writes with the outcome): an
                // installed version of such a transaction is taken as its final write.
                if let Some(i) = self.ix(v.txn) {
                    if self.h.txns[i].outcome == Outcome::Unknown {
                        self.finals.add(i, k, *v);
                    }
                }
            }
            self.order[k as usize] = Some(Cow::Borrowed(vs));
            self.sorted_keys.push(k);
        }
    }

    /// A committed transaction's read of a version written by a transaction whose
    /// outcome is unknown is evidence too: the writer counts as committed (the
    /// protocol let its write be seen), and the version read is its final write to that
    /// key if its records do not say otherwise (a crashed shipped client's records may
    /// lack it). If no replica holds such a version, the durability check reports it:
    /// either the writer committed and the version was lost, or the reader saw an
    /// aborted write; the history is wrong either way, and "lost" is the explanation
    /// that needs no other anomaly.
    pub(crate) fn read_evidence(&mut self) {
        let h = self.h;
        let mut seen = vec![];
        for (j, t) in h
            .txns
            .iter()
            .enumerate()
            .filter(|(_, t)| t.outcome == Outcome::Committed)
        {
            for (r, k) in self.reads_at(j) {
                let Some(v) = r.version else { continue };
                if v.txn == t.id {
                    continue;
                }
                match self.ix(v.txn) {
                    Some(i) if h.txns[i].outcome == Outcome::Unknown => seen.push((i, k, v)),
                    _ => continue,
                };
            }
        }
        for (i, k, v) in seen {
            self.seen_unknown.insert(v.txn);
            self.finals.add(i, k, v);
        }
    }

    /// Version orders the replicas do not give (a history from elsewhere, or one whose
    /// replica records are missing): what the history itself fixes. Every order starts
    /// at the initial state; a committed transaction that read version `r` of a key and
    /// wrote it (its final write `u`) puts `r` before `u` (reads-from and the
    /// transaction's own order). Real time is not used: it is a constraint of strict
    /// serializability only, and would make a plain-serializability verdict unsound.
    /// A key whose constraints fix one order gets it; otherwise its versions are only
    /// partly ordered, the graph gets the edges every allowed order implies, and the
    /// serializability verdict is "unknown" unless a cycle is found anyway.
    pub(crate) fn infer_orders(&mut self) {
        let reopened = self.reopen_orders_missing_commits();
        // Per key without an order: its versions, and the transactions that wrote it.
        let mut writes: BTreeMap<u32, (Vec<VersionId>, Vec<usize>)> = BTreeMap::new();
        for (ti, t) in self.txn_of.iter().enumerate() {
            for &(k, v) in self.finals_of(t.id) {
                if self.order[k as usize].is_none() {
                    let e = writes.entry(k).or_default();
                    e.0.push(v);
                    e.1.push(ti);
                }
            }
        }
        if writes.is_empty() {
            return;
        }
        // A list-append read lists the key's first versions (a prefix); a replica's
        // chain is only a subsequence of the order, or its end where the replicas
        // collected the start (a suffix).
        let mut chains: HashMap<u32, Vec<(&[VersionId], Part)>> = HashMap::default();
        for (k, c) in self.chains {
            if let Some(k) = self.keys.get(k) {
                chains.entry(k).or_default().push((c, Part::Prefix));
            }
        }
        for (k, c) in &reopened {
            let part = if self.suffix[*k as usize] {
                Part::Suffix
            } else {
                Part::Sub
            };
            chains.entry(*k).or_default().push((c, part));
        }
        for (k, (mut vs, writers)) in writes {
            vs.sort_unstable();
            vs.dedup();
            if let Some(order) = self.given.remove(self.keys.key(k)) {
                debug_assert_eq!(order.len(), vs.len(), "a found order holds every version");
                for (i, v) in order.iter().enumerate() {
                    self.set_pos(*v, i);
                }
                self.order[k as usize] = Some(Cow::Owned(order));
                self.sorted_keys.push(k);
                continue;
            }
            let n = vs.len();
            let ix: HashMap<VersionId, usize> = vs.iter().enumerate().map(|(i, v)| (*v, i)).collect();
            let mut before = vec![vec![false; n]; n];
            for (chain, part) in chains.get(&k).into_iter().flatten() {
                // Consecutive among the versions being ordered (a replica's chain may
                // hold versions of writers not counted committed).
                let known: Vec<usize> = chain.iter().filter_map(|v| ix.get(v).copied()).collect();
                for w in known.windows(2) {
                    before[w[0]][w[1]] = true;
                }
                let mut listed = vec![false; n];
                for &a in &known {
                    listed[a] = true;
                }
                match part {
                    // Every version it does not list comes after the ones it does.
                    Part::Prefix => {
                        if let Some(&last) = known.last() {
                            for b in (0..n).filter(|b| !listed[*b]) {
                                before[last][b] = true;
                            }
                        }
                    }
                    // Every version it does not list comes before the ones it does.
                    Part::Suffix => {
                        if let Some(&head) = known.first() {
                            for a in (0..n).filter(|a| !listed[*a]) {
                                before[a][head] = true;
                            }
                        }
                    }
                    Part::Sub => {}
                }
            }
            for ti in writers {
                let t = self.txn_of[ti];
                let Some(u) = self.final_of(t.id, k).and_then(|u| ix.get(&u).copied()) else {
                    continue;
                };
                for (r, _) in self.reads_at(self.rec_of[ti] as usize).filter(|(_, rk)| *rk == k) {
                    if let Some(a) = r.version.filter(|v| v.txn != t.id).and_then(|v| ix.get(&v).copied()) {
                        if a != u {
                            before[a][u] = true;
                        }
                    }
                }
            }
            if n > MAX_INFERRED {
                self.unknown.push(Unknown::Order {
                    key: self.keys.key(k).to_string(),
                    why: format!("{n} versions and no recorded order (more than {MAX_INFERRED} to infer)"),
                });
                self.big.push((k, vs));
                continue;
            }
            // transitive closure
            for m in 0..n {
                let via = before[m].clone();
                for row in before.iter_mut() {
                    if row[m] {
                        for (b, _) in via.iter().enumerate().filter(|(_, x)| **x) {
                            row[b] = true;
                        }
                    }
                }
            }
            let total = (0..n).all(|a| (0..n).all(|b| a == b || before[a][b] || before[b][a]));
            let cyclic = (0..n).any(|a| before[a][a]);
            if total && !cyclic {
                let mut order = vs.clone();
                order.sort_by_key(|v| (0..n).filter(|a| before[*a][ix[v]]).count());
                for (i, v) in order.iter().enumerate() {
                    self.set_pos(*v, i);
                }
                self.order[k as usize] = Some(Cow::Owned(order));
                self.sorted_keys.push(k);
            } else {
                if !cyclic {
                    let why = if self.suffix[k as usize] {
                        format!(
                            "its replicas collected the start of its chain (version GC) without ids, and the history does not fix the order of its {n} versions"
                        )
                    } else if reopened.contains_key(&k) {
                        format!(
                            "a committed write is in no replica's record of it, and the history does not fix the order of its {n} versions"
                        )
                    } else {
                        format!("the history does not fix the order of its {n} versions (no replica records it)")
                    };
                    self.unknown.push(Unknown::Order {
                        key: self.keys.key(k).to_string(),
                        why,
                    });
                }
                // A cycle among reads-from constraints is itself found as a cycle of
                // the graph below (each constraint is a wr then rw path).
                self.partial.push((k, vs, before));
            }
        }
        self.sorted_keys.sort_unstable();
    }

    /// Keys whose replica order lacks a committed transaction's final write (every copy
    /// lost it, or no replica that holds the key had to): the write is never dropped.
    /// The key's order is opened again, to be inferred (or searched for) from the
    /// replicas' chain plus what the history fixes, so the missing version takes its
    /// place in the graph (a lost update hid there: issue 52); every replica of the key
    /// then holds only part of its order, so the durability check judges the write
    /// where a replica must hold it. Returns the opened keys with their replica chain.
    fn reopen_orders_missing_commits(&mut self) -> HashMap<u32, Vec<VersionId>> {
        let mut keys: Vec<u32> = vec![];
        for t in &self.txn_of {
            for &(k, v) in self.finals_of(t.id) {
                if self.order[k as usize].is_some() && self.pos_of(v).is_none() {
                    keys.push(k);
                }
            }
        }
        keys.sort_unstable();
        keys.dedup();
        let mut opened = HashMap::default();
        if !keys.is_empty() {
            self.sorted_keys.retain(|x| keys.binary_search(x).is_err());
        }
        for k in keys {
            let chain = self.order[k as usize].take().expect("ordered").into_owned();
            for v in &chain {
                self.pos.remove(self.ix(v.txn), *v);
            }
            for h in &mut self.holds {
                if h[k as usize] == FULL {
                    h[k as usize] = PART;
                }
            }
            opened.insert(k, chain);
        }
        opened
    }

    /// The keys whose order the history does not fix (partly ordered, then too big to
    /// order), with their versions.
    fn open_versions(&self) -> Vec<(&'h Key, Vec<VersionId>)> {
        self.partial
            .iter()
            .map(|(k, vs, _)| (self.keys.key(*k), vs.clone()))
            .chain(self.big.iter().map(|(k, vs)| (self.keys.key(*k), vs.clone())))
            .collect()
    }

    /// The keys whose order is not fixed, their versions, and what the search needs
    /// of each.
    #[allow(clippy::type_complexity)]
    pub(crate) fn search_input(&self) -> (Vec<(&'h Key, Vec<VersionId>)>, Vec<search::KeyInput>) {
        let nums: Vec<u32> = self
            .partial
            .iter()
            .map(|p| p.0)
            .chain(self.big.iter().map(|b| b.0))
            .collect();
        let keys = self.open_versions();
        let key_ix: HashMap<u32, usize> = nums.iter().enumerate().map(|(i, k)| (*k, i)).collect();
        let mut inputs: Vec<search::KeyInput> = keys
            .iter()
            .map(|(_, vs)| search::KeyInput {
                writers: vs.iter().map(|v| self.node_of(v.txn)).collect(),
                readers: vec![vec![]; vs.len()],
                init_readers: vec![],
            })
            .collect();
        let ver_ix: Vec<HashMap<VersionId, usize>> = keys
            .iter()
            .map(|(_, vs)| vs.iter().enumerate().map(|(i, v)| (*v, i)).collect())
            .collect();
        for (ti, t) in self.txn_of.iter().enumerate() {
            for (r, k) in self.reads_at(self.rec_of[ti] as usize) {
                let Some(&ki) = key_ix.get(&k) else { continue };
                match r.version {
                    None => inputs[ki].init_readers.push(ti),
                    Some(v) if v.txn == t.id => {}
                    Some(v) => {
                        if let Some(&vi) = ver_ix[ki].get(&v) {
                            inputs[ki].readers[vi].push(ti);
                        }
                    }
                }
            }
        }
        (keys, inputs)
    }

    /// Version orders for the keys the history does not order, following a
    /// topological order of its fixed dependencies (ww and wr edges; ties by commit
    /// time): under them the ww and wr edges stay acyclic, so read committed holds
    /// unless G1a/G1b do not. `None` if every key is ordered, the dependencies are
    /// cyclic, or an order would break a constraint the history fixes.
    pub(crate) fn dependency_order(&self) -> Option<HashMap<&'h Key, Vec<VersionId>>> {
        use std::cmp::Reverse;
        if self.partial.is_empty() && self.big.is_empty() {
            return None;
        }
        let n = self.txn_of.len();
        let mut indeg = vec![0u32; n];
        let mut succ: Vec<Vec<usize>> = vec![vec![]; n];
        for &(a, b) in &self.dep_edges {
            if a != b {
                succ[a].push(b);
                indeg[b] += 1;
            }
        }
        let key = |i: usize| {
            let t = self.txn_of[i];
            Reverse((t.end.unwrap_or(t.start), i))
        };
        let mut ready: std::collections::BinaryHeap<_> = (0..n).filter(|i| indeg[*i] == 0).map(key).collect();
        let mut topo = Vec::with_capacity(n);
        while let Some(Reverse((_, i))) = ready.pop() {
            topo.push(i);
            for &b in &succ[i] {
                indeg[b] -= 1;
                if indeg[b] == 0 {
                    ready.push(key(b));
                }
            }
        }
        if topo.len() < n {
            return None;
        }
        let given = self.orders_from(&topo, &self.open_versions());
        for (k, vs, before) in &self.partial {
            let order = given.get(self.keys.key(*k))?;
            let at: HashMap<VersionId, usize> = order.iter().enumerate().map(|(i, v)| (*v, i)).collect();
            for (a, row) in before.iter().enumerate() {
                for (b, _) in row.iter().enumerate().filter(|(_, x)| **x) {
                    if at.get(&vs[a])? > at.get(&vs[b])? {
                        return None;
                    }
                }
            }
        }
        Some(given)
    }

    /// Version orders of `keys` that follow the serial order `serial`.
    pub(crate) fn orders_from(
        &self,
        serial: &[usize],
        keys: &[(&'h Key, Vec<VersionId>)],
    ) -> HashMap<&'h Key, Vec<VersionId>> {
        let mut at = vec![usize::MAX; self.txn_of.len()];
        for (i, t) in serial.iter().enumerate() {
            at[*t] = i;
        }
        keys.iter()
            .map(|(k, vs)| {
                let mut o = vs.clone();
                o.sort_by_key(|v| (self.node_of(v.txn).map_or(usize::MAX, |x| at[x]), *v));
                (*k, o)
            })
            .collect()
    }
}
