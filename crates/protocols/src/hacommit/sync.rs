//! Sync after restart: a replica restarts empty (replicas keep no log) and re-fetches
//! its groups' state from a majority before it serves or votes again.

use super::*;

impl Server {
    pub(super) fn on_sync_req(&mut self, from: NodeId, req: SyncReq, cx: &mut Ctx<'_, Msg>) {
        let SyncReq { shard, below, floor } = req;
        let Some(g) = self.groups.get(&shard) else { return };
        if g.status == Status::Syncing || from == self.me {
            return;
        }
        // The fence, durable before the state leaves (the watermarks cover it: after a
        // crash of this replica every fenced transaction is one it may have forgotten,
        // and it accepts only ballots above the floor for it). Then every transaction of
        // the shard older than `below` is promised `floor` here, known or not.
        if below > 0 {
            self.admit(below, cx);
            self.admit_ballot(floor, cx);
            let f = self.fences.entry(shard).or_insert((0, 0));
            *f = (f.0.max(below), f.1.max(floor));
            for ((s, _), t) in self.txns.iter_mut() {
                if *s == shard && t.prio.0 < below {
                    t.promised = t.promised.max(floor);
                }
            }
        }
        let g = self.groups.get_mut(&shard).expect("group");
        if g.status == Status::Normal && g.leader() == from {
            // Our leader restarted and forgot everything: elect another one now.
            g.last_hb = 0;
        }
        let view = g.view;
        let layout = self.env.layout.clone();
        let mut versions: Vec<(Key, VersionId, Value, u64)> = vec![];
        for (k, vs) in self.store.iter() {
            if layout.shard_of(k) != shard {
                continue;
            }
            for v in vs.iter().filter(|v| !v.tentative) {
                versions.push((k.clone(), v.id, v.value.clone(), v.wts));
            }
        }
        versions.sort_by(|a, b| (&a.0, a.3).cmp(&(&b.0, b.3)));
        let collected = self.store.collected_for(|k| layout.shard_of(k) == shard);
        cx.charge_ops(versions.len() as u32);
        let (pending, done, seq) = self.my_state(shard, cx.now(), true);
        let forgot_ts = self.groups[&shard].forgot_ts;
        cx.send(
            from,
            Msg::SyncState(SyncState {
                forgot_ts,
                shard,
                view,
                versions,
                collected,
                pending,
                done,
                seq,
            }),
        );
    }

    /// A restarted replica merges a peer's state. It is back once it has the states of a
    /// majority of the group not counting itself: every decision chosen, and every
    /// promise given, before the crash involved a majority, which meets them.
    pub(super) fn on_sync_state(&mut self, from: NodeId, m: SyncState, cx: &mut Ctx<'_, Msg>) {
        let shard = m.shard;
        let Some(g) = self.groups.get_mut(&shard) else { return };
        if g.status != Status::Syncing || !g.synced_from.insert(from) {
            return;
        }
        g.view = g.view.max(m.view);
        g.forgot_ts = g.forgot_ts.max(m.forgot_ts);
        // Back once a majority of the group other than itself has answered: the leader's
        // state alone could miss an acceptance only another replica holds.
        let back = g.synced_from.len() >= g.majority();
        cx.charge_ops(m.versions.len() as u32);
        for (k, c) in &m.collected {
            self.store.adopt_collected(k, c);
        }
        for (k, v, val, wts) in m.versions {
            self.store.install(&k, v, val, wts);
        }
        // Merge while still syncing (learning only), then serve.
        self.install_state(shard, m.pending, m.done, m.seq, cx);
        if back {
            let me = self.me;
            let g = self.groups.get_mut(&shard).expect("group");
            g.status = Status::Normal;
            g.last_hb = cx.now();
            g.synced_from.clear();
            if g.leader() == me {
                // The view we led before the crash: we hold none of its locks and have
                // not pushed its decisions. Lead again only through a view change,
                // whose merge re-takes the locks of voted transactions.
                let n = g.replicas.len() as u64;
                let view = g.view + n;
                self.stand(shard, view, cx);
            }
            // Decisions merged while syncing could not be applied yet: apply them now.
            let mut ready: Vec<(ShardId, TxnId)> = self
                .txns
                .iter()
                .filter(|((s, _), t)| *s == shard && t.chosen.is_some())
                .map(|(k, _)| *k)
                .collect();
            ready.sort();
            for k in ready {
                self.try_apply_chosen(k, cx);
            }
        }
    }

    // ------------------------------------------------------------ housekeeping
}
