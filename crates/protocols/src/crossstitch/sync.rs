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
        let layout = &self.env.layout;
        let collected = self.store.collected_for(|k| shared.contains(&layout.shard_of(k).0));
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
            Msg::SyncState(SyncState {
                versions,
                askers,
                views,
                floor,
                collected,
            }),
        );
    }

    pub(super) fn on_sync_state(&mut self, from: NodeId, m: SyncState, cx: &mut Ctx<'_, Msg>) {
        let SyncState {
            versions,
            askers,
            views,
            floor,
            collected,
        } = m;
        // Expected from every partner after a restart, and from the primary of a shard
        // this server was dropped from (which sends it once it took it back).
        let rejoining: BTreeSet<u32> = self
            .stale
            .iter()
            .copied()
            .filter(|s| self.primary(*s) == from)
            .collect();
        let restarted = self.syncing.remove(&from);
        if !restarted && rejoining.is_empty() {
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
        // What the sender collected first: its versions start after it, and this
        // server must refuse what the sender would (MvStore::too_old). Only for the
        // shards whose data this server is taking (all of them after a restart, when
        // it holds nothing; only the rejoined ones otherwise): adopting drops what is
        // held at or below the sender's floor, and a shard this server serves meanwhile
        // may hold a tentative version there whose transaction is running.
        for (k, c) in &collected {
            if restarted || rejoining.contains(&self.env.layout.shard_of(k).0) {
                self.store.adopt_collected(k, c);
            }
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
                // At or below what this server collected of the key (its own floor may
                // be above the sender's): held here, it would sit out of its place in
                // the key's order, and a read above the floor could see it instead of
                // the collected version after it. Kept aside, installed among the
                // collected ones if its transaction commits.
                let below = self.store.in_collected(&k, wts);
                if !below {
                    self.store.write_tentative(&k, id, val.clone(), wts);
                }
                let (ask, last) = askers.get(&id.txn).cloned().unwrap_or_else(|| (vec![from], None));
                let e = self.orphans.entry(id.txn).or_insert(Orphan {
                    ts: wts,
                    puts: vec![],
                    below: vec![],
                    since: cx.now(),
                    ask,
                    last,
                });
                if below {
                    e.below.push((k, id, val));
                } else {
                    e.puts.push((k, id));
                }
            } else {
                self.store.install(&k, id, val, wts);
            }
        }
    }

    // ----- housekeeping ------------------------------------------------------------
}
