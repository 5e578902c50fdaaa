//! Replication inside a group: a leader ships each transaction context to its followers
//! and learns when a majority holds it; decided transactions are pushed to followers and
//! applied there.

use super::*;

impl Server {
    pub(super) fn on_replicate(&mut self, from: NodeId, shard: ShardId, view: u64, ctx: TCtx, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops(ctx.writes.len() as u32);
        if self.forgot(ctx.ts) || !self.adopt_view(shard, view, from, cx) {
            return;
        }
        if self.forgotten(shard, ctx.txn, ctx.ts) {
            // A copy of a forgotten transaction's replication delayed past the
            // forgetting period (or a live transaction older than the mark, which
            // then cannot vote here: an abort): no state, or a recovery from it could
            // decide the transaction anew (module docs).
            return;
        }
        let g = self.groups.get_mut(&shard).expect("group");
        g.seq = g.seq.max(ctx.seq);
        let txn = ctx.txn;
        if self.done.contains_key(&(shard, txn)) {
            return cx.send(from, Msg::Replicated { shard, view, txn });
        }
        let now = cx.now();
        let t = self
            .txns
            .entry((shard, txn))
            .or_insert_with(|| Txn::new(txn, ctx.ts, now));
        t.shards = ctx.shards.clone();
        t.last_seen = now;
        t.ctx = Some(ctx);
        cx.send(from, Msg::Replicated { shard, view, txn });
        self.try_apply_chosen((shard, txn), cx);
    }

    pub(super) fn on_replicated(&mut self, from: NodeId, shard: ShardId, view: u64, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if self.groups.get(&shard).is_none_or(|g| g.view != view) {
            return;
        }
        if let Some(t) = self.txns.get_mut(&(shard, txn)) {
            if let Stage::Replicating { acks, .. } = &mut t.stage {
                acks.insert(from);
            }
        }
        self.check_replicated((shard, txn), Some(cx.hops()), cx);
    }

    // ------------------------------------------------------------ Paxos acceptor
}

impl Server {
    /// Leader: sends every decision followers have not confirmed, never sent or last
    /// sent at least `query` ago, as one batch per follower.
    pub(super) fn push_decided(&mut self, shard: ShardId, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let again = self.env.timeouts.query;
        let Some(g) = self.groups.get_mut(&shard) else { return };
        let mut batches: BTreeMap<NodeId, Vec<DoneInfo>> = BTreeMap::new();
        for (txn, (left, at)) in g.pushing.iter_mut() {
            if *at != 0 && now.saturating_sub(*at) < again {
                continue;
            }
            *at = now.max(1);
            let Some(d) = self.done.get(&(shard, *txn)) else {
                continue;
            };
            for f in left.iter() {
                batches.entry(*f).or_default().push(DoneInfo {
                    txn: *txn,
                    commit: d.commit,
                    ctx: d.ctx.as_deref().cloned(),
                    shards: d.shards.clone(),
                    ts: d.ts,
                });
            }
        }
        for (f, done) in batches {
            cx.send(f, Msg::Decided { shard, done });
        }
    }

    pub(super) fn on_decided(&mut self, from: NodeId, shard: ShardId, done: Vec<DoneInfo>, cx: &mut Ctx<'_, Msg>) {
        if self.groups.get(&shard).is_none_or(|g| g.status == Status::Syncing) {
            return; // (syncing: the state transfer will carry them; acking now would lose them)
        }
        let mut txns = vec![];
        for d in done {
            let id = d.txn;
            self.absorb_done(shard, d, cx);
            if self.done.contains_key(&(shard, id)) {
                txns.push(id);
            }
        }
        if !txns.is_empty() {
            cx.send(from, Msg::Applied { shard, txns });
        }
    }

    /// Applies a decision learnt from another replica (with its context, if a commit).
    pub(super) fn absorb_done(&mut self, shard: ShardId, d: DoneInfo, cx: &mut Ctx<'_, Msg>) {
        if self.done.contains_key(&(shard, d.txn)) {
            return;
        }
        let now = cx.now();
        let key = (shard, d.txn);
        let syncing = self.groups.get(&shard).is_some_and(|g| g.status == Status::Syncing);
        if d.commit && d.ctx.is_none() && syncing && !self.txns.contains_key(&key) {
            // A commit past the tombstone period, sent by a re-sync without its writes:
            // the store copy of the same answer holds its versions. Recorded as
            // decided, so that this replica can say it settled it, and as old as the
            // tombstone period (it is at least that old at the peer), so that it is
            // never sent on as a recent decision, which a replica that forgot it could
            // not apply without its writes.
            let at = now.saturating_sub(self.env.timeouts.tombstone);
            self.expiring.push_back((at, key));
            self.done.insert(
                key,
                Done {
                    commit: true,
                    ctx: None,
                    at,
                    ts: d.ts,
                    shards: d.shards,
                },
            );
            return;
        }
        if d.commit && d.ctx.is_none() && !self.txns.contains_key(&key) && self.forgotten(shard, d.txn, d.ts) {
            // A commit without its writes, for a transaction forgotten here: nothing to
            // apply, and no state to keep.
            return;
        }
        let ts = d.ctx.as_ref().map_or(d.ts, |c| c.ts);
        let t = self
            .txns
            .entry((shard, d.txn))
            .or_insert_with(|| Txn::new(d.txn, ts, now));
        if t.shards.is_empty() {
            t.shards = d.shards;
        }
        if t.ctx.is_none() {
            t.ctx = d.ctx;
        }
        t.chosen = Some(d.commit);
        self.try_apply_chosen((shard, d.txn), cx);
    }

    pub(super) fn on_applied(&mut self, from: NodeId, shard: ShardId, txns: Vec<TxnId>) {
        if let Some(g) = self.groups.get_mut(&shard) {
            for txn in txns {
                if let Some((left, _)) = g.pushing.get_mut(&txn) {
                    left.remove(&from);
                    if left.is_empty() {
                        g.pushing.remove(&txn);
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------ recovery proposer
}
