//! Sync after restart: a server restarts empty (no log) and re-fetches committed
//! state from its partners; until then it refuses what it may have forgotten.

use super::*;

impl Server {
    pub(super) fn partners(&self) -> BTreeSet<NodeId> {
        partners_of(&self.env.layout, self.me)
    }

    pub(super) fn on_sync_req(&mut self, from: NodeId, cx: &mut Ctx<'_, Msg>) {
        if self.restarting() {
            return; // nothing trustworthy to give
        }
        // Only shards this server is a member of: its copy of a shard it was dropped
        // from is stale.
        let shared: HashSet<u32> = self
            .env
            .layout
            .shards_of(self.me)
            .into_iter()
            .filter(|s| {
                self.env.layout.replicas(*s).contains(&from)
                    && self.members(s.0).contains(&self.me)
                    && !self.stale.contains(&s.0)
            })
            .map(|s| s.0)
            .collect();
        let mut shared_sorted: Vec<u32> = shared.iter().copied().collect();
        shared_sorted.sort_unstable();
        // Fail-over: a copy that is not a member of a shard this server is primary of
        // (it was dropped, or the shard failed over while it was down) is added back
        // at the witness first, then sent the data, so every later put reaches it.
        // It asks again every sweep; the answer waits for the new view.
        let mut adding = false;
        for s in &shared_sorted {
            let v = self.view(*s);
            if v.primary == self.me && !v.members.contains(&from) {
                adding = true;
                if !self.cas.contains_key(s) {
                    let copies = self.env.layout.replicas(meridian_core::ShardId(*s));
                    let members = copies
                        .iter()
                        .copied()
                        .filter(|c| v.members.contains(c) || *c == from)
                        .collect();
                    let new = ShardView {
                        shard: *s,
                        view: v.view + 1,
                        primary: self.me,
                        members,
                    };
                    self.propose(v.view, new, cx);
                }
            }
        }
        if adding {
            return;
        }
        let views: Vec<ShardView> = shared_sorted.iter().map(|s| self.view(*s)).collect();
        let floor = self.mark_ts.max(self.lease_floor);
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
        cx.send(
            from,
            Msg::SyncState {
                versions,
                askers,
                views,
                floor,
            },
        );
    }

    pub(super) fn on_sync_state(
        &mut self,
        from: NodeId,
        versions: Vec<(Key, VersionId, Value, u64, bool)>,
        askers: Vec<(TxnId, Vec<NodeId>, Option<NodeId>)>,
        views: Vec<ShardView>,
        floor: Time,
        cx: &mut Ctx<'_, Msg>,
    ) {
        // Expected from every partner after a restart, and from the primary of a shard
        // this server was dropped from (which sends it once it took it back).
        let rejoining = self.stale.iter().any(|s| self.primary(*s) == from);
        if !self.syncing.remove(&from) && !rejoining {
            return;
        }
        let sent: BTreeMap<u32, u32> = views.iter().map(|v| (v.shard, v.view)).collect();
        for v in views {
            let s = v.shard;
            // The sender is a member of every view it sends: its data is the shard's.
            let with_data = v.members.contains(&from);
            if with_data && self.check_sync {
                self.synced_in.insert(s, v.view);
            }
            self.install_view(v, false, with_data, cx);
            if self.primary(s) == from && self.mine.contains(&s) {
                // The sender may have served reads below its floor: a take-over from
                // it refuses writes below that.
                let g = self.granted.entry(s).or_insert(0);
                *g = (*g).max(floor);
            }
        }
        // Dropped shards whose primary sent its data in the view this server now holds,
        // with this server a member, are fresh (the data installed below is all of it
        // up to the view change that took this server back; every later put of that
        // view is replicated here).
        let fresh: Vec<u32> = self
            .stale
            .iter()
            .copied()
            .filter(|s| {
                let v = self.view(*s);
                v.members.contains(&from) && v.members.contains(&self.me) && sent.get(s) == Some(&v.view)
            })
            .collect();
        for s in fresh {
            self.stale.remove(&s);
        }
        self.restart_done(cx);
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
