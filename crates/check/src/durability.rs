//! Which transactions count as committed, and whether every committed write is held
//! where it must be.

use super::*;

impl<'h> Checker<'h> {
    pub(crate) fn committed_set(&mut self) {
        let h = self.h;
        for (j, t) in h.txns.iter().enumerate() {
            let counts = match t.outcome {
                Outcome::Committed => true,
                Outcome::Aborted => false,
                Outcome::Unknown => {
                    self.seen_unknown.contains(&t.id) || self.finals_of(t.id).iter().any(|(_, v)| self.installed(v))
                }
            };
            if counts {
                let i = self.ix(t.id).expect("every record is indexed");
                self.node[i] = self.txn_of.len() as u32;
                self.txn_of.push(t);
                self.rec_of.push(j as u32);
            }
        }
        // installed versions must belong to committed transactions' final writes
        let mut bad = vec![];
        let mut unlisted = 0;
        for &k in &self.sorted_keys {
            let vs = self.order_of(k);
            let key = self.keys.key(k);
            for v in vs.iter() {
                match self.rec(v.txn) {
                    None if self.incomplete => unlisted += 1,
                    None => bad.push((
                        Kind::UnexplainedVersion,
                        vec![],
                        format!("key {key}: version {v} written by no recorded transaction"),
                    )),
                    Some(t) if t.outcome == Outcome::Aborted => bad.push((
                        Kind::G1a,
                        vec![t.id],
                        format!("key {key}: version {v} of aborted transaction {} is installed", t.id),
                    )),
                    Some(t) => {
                        if self.final_of(t.id, k) != Some(*v) {
                            bad.push((
                                Kind::G1b,
                                vec![t.id],
                                format!("key {key}: intermediate version {v} of {} is installed", t.id),
                            ));
                        }
                    }
                }
            }
        }
        self.unlisted += unlisted;
        for (k, t, d) in bad {
            self.push(k, t, d);
        }
    }

    pub(crate) fn durability(&mut self) {
        let h = self.h;
        let replica_of: HashMap<NodeId, usize> = h.replicas.iter().enumerate().map(|(i, r)| (r.node, i)).collect();
        // A replica that holds only part of a long chain answers through a set, built
        // on first use.
        let mut part_sets: HashMap<(usize, u32), HashSet<VersionId>> = HashMap::default();
        let mut shards: Vec<u32> = vec![u32::MAX; self.keys.len()];
        let mut found = vec![];
        let mut missing: std::collections::BTreeSet<NodeId> = Default::default();
        // Per (replica, key) whose chain's start was collected without ids: the
        // committed versions it does not list, taken as collected while they are no
        // more than it says it collected.
        let mut collected: BTreeMap<(usize, u32), Vec<(TxnId, String)>> = BTreeMap::new();
        // Acknowledged commits, and unknown outcomes counted as committed (installed
        // somewhere, or read by a committed transaction): all their writes must be held.
        for t in &self.txn_of {
            let inferred = if t.outcome == Outcome::Unknown {
                " (outcome unknown, counted committed)"
            } else {
                ""
            };
            for &(k, v) in self.finals_of(t.id) {
                let key = self.keys.key(k);
                let s = &mut shards[k as usize];
                if *s == u32::MAX {
                    *s = shard_of(key, h.meta.shards).0;
                }
                let Some(nodes) = h.meta.shard_replicas.get(*s as usize) else {
                    continue;
                };
                for n in nodes {
                    let Some(&ri) = replica_of.get(n) else {
                        // No final state recorded for this replica: nothing to judge.
                        missing.insert(*n);
                        continue;
                    };
                    let held = match self.holds[ri][k as usize] {
                        // The replica's chain is the key's version order.
                        FULL => {
                            let o = self.order_of(k);
                            self.pos_of(v).is_some_and(|p| o.get(p) == Some(&v)) || o.contains(&v)
                        }
                        PART => {
                            let vs = &h.replicas[ri].keys[key].versions;
                            if vs.len() <= 32 {
                                vs.contains(&v)
                            } else {
                                part_sets
                                    .entry((ri, k))
                                    .or_insert_with(|| vs.iter().copied().collect())
                                    .contains(&v)
                            }
                        }
                        _ => false,
                    };
                    let what = || format!("committed {}{inferred} wrote {key}={v} but replica {n} lacks it", t.id);
                    if held {
                        continue;
                    }
                    if h.replicas[ri].pruned.get(key).is_some_and(|p| *p > 0) {
                        collected.entry((ri, k)).or_default().push((t.id, what()));
                    } else {
                        found.push((t.id, what()));
                    }
                }
            }
        }
        for ((ri, k), lacks) in collected {
            let key = self.keys.key(k);
            let p = h.replicas[ri].pruned[key];
            let m = lacks.len();
            if m as u64 > p {
                for (t, d) in lacks {
                    found.push((
                        t,
                        format!("{d} ({m} of the key's committed versions are not there, and it collected only {p})"),
                    ));
                }
            }
        }
        for (t, d) in found {
            self.push(Kind::NotDurable, vec![t], d);
        }
        if !missing.is_empty() {
            let ns: Vec<String> = missing.iter().map(|n| n.to_string()).collect();
            self.unknown.push(Unknown::NoFinalState(format!(
                "no final state recorded for replica(s) {}: their durability is not judged",
                ns.join(", ")
            )));
        }
    }
}
