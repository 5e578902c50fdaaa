//! Sync after restart: a server restarts empty (no log) and re-fetches committed
//! state from its partners; until then it refuses what it may have forgotten.

use super::*;

impl Server {
    pub(super) fn partners(&self) -> BTreeSet<NodeId> {
        partners_of(&self.env.layout, self.me)
    }

    pub(super) fn on_sync_req(&mut self, from: NodeId, cx: &mut Ctx<'_, Msg>) {
        if !self.syncing.is_empty() {
            return; // nothing trustworthy to give
        }
        let shared: HashSet<u32> = self
            .env
            .layout
            .shards_of(self.me)
            .into_iter()
            .filter(|s| self.env.layout.replicas(*s).contains(&from))
            .map(|s| s.0)
            .collect();
        let mut versions = vec![];
        for (k, vs) in self.store.iter() {
            if shared.contains(&self.env.layout.shard_of(k).0) {
                for v in vs {
                    versions.push((k.clone(), v.id, v.value.clone(), v.wts, v.tentative));
                }
            }
        }
        // In key order (each key's versions in their order), not the hash table's.
        versions.sort_by(|a, b| a.0.cmp(&b.0));
        cx.charge_ops(versions.len() as u32);
        let mut askers: BTreeMap<TxnId, (BTreeSet<NodeId>, Option<NodeId>)> = BTreeMap::new();
        for (_, id, _, _, tentative) in &versions {
            if *tentative {
                let e = askers.entry(id.txn).or_default();
                e.0.insert(self.me);
                if let Some(b) = self.backups.get(&id.txn) {
                    e.0.extend(b.chain.iter().copied());
                    e.0.insert(b.notify);
                    if b.notify == b.primary {
                        e.1 = Some(b.primary);
                    }
                }
                for ((t, _), p) in &self.parts {
                    if *t == id.txn {
                        e.0.extend(p.chain.iter().map(|h| h.node));
                        e.0.extend(p.next);
                        if p.last {
                            e.1 = Some(self.me);
                        }
                    }
                }
            }
        }
        let askers = askers
            .into_iter()
            .map(|(t, (n, last))| (t, n.into_iter().collect(), last))
            .collect();
        cx.send(from, Msg::SyncState { versions, askers });
    }

    pub(super) fn on_sync_state(
        &mut self,
        from: NodeId,
        versions: Vec<(Key, VersionId, Value, u64, bool)>,
        askers: Vec<(TxnId, Vec<NodeId>, Option<NodeId>)>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if !self.syncing.remove(&from) {
            return;
        }
        let askers: HashMap<TxnId, (Vec<NodeId>, Option<NodeId>)> =
            askers.into_iter().map(|(t, n, l)| (t, (n, l))).collect();
        for (k, id, val, wts, tentative) in versions {
            if self.store.contains(&k, id) {
                continue;
            }
            if tentative {
                if let Some(d) = self.done.get(&id.txn) {
                    if d.commit {
                        self.store.install(&k, id, val, wts);
                    }
                    continue;
                }
                self.store.write_tentative(&k, id, val, wts);
                let (ask, last) = askers.get(&id.txn).cloned().unwrap_or_else(|| (vec![from], None));
                let e = self.orphans.entry(id.txn).or_insert(Orphan {
                    ts: wts,
                    puts: vec![],
                    since: cx.now(),
                    ask,
                    last,
                });
                e.puts.push((k, id));
            } else {
                self.store.install(&k, id, val, wts);
            }
        }
    }

    // ----- housekeeping ------------------------------------------------------------
}
