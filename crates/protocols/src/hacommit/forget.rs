//! Forgetting decided transactions (issue 53, bounded state; module docs,
//! "Forgetting decided transactions"): a replica drops a decided transaction's entry
//! once it is `forget_after` old and every replica of every participant shard says it
//! has settled it, and from then on keeps no state for, and refuses, any transaction of
//! the shard it does not know that started at or below its mark.

use super::*;

/// Entries of `settling` a sweep visits at most.
const SETTLE_BATCH: usize = 8192;

impl Server {
    /// Whether `txn` of `shard`, started at `ts`, is one this replica may have decided
    /// and forgotten: unknown here (no entry, no recovery of it) and at or below the
    /// shard's forgetting mark. Such a transaction is not read, voted, replicated,
    /// promised or accepted (but for the client's ABORT) here: no state that a recovery
    /// could decide anew from (module docs, "Forgetting decided transactions").
    pub(super) fn forgotten(&self, shard: ShardId, txn: TxnId, ts: Time) -> bool {
        let Some(g) = self.groups.get(&shard) else { return false };
        g.forgot_ts > 0
            && ts <= g.forgot_ts
            && !self.done.contains_key(&(shard, txn))
            && !self.txns.contains_key(&(shard, txn))
            && !self.proposals.contains_key(&txn)
    }

    /// Whether this replica of `shard` has settled `txn` (started at `ts`): it serves
    /// the shard, and it applied the decision (and, leading the group, every follower
    /// confirmed applying it too), or it forgot the transaction. A replica that never
    /// heard of a transaction above its mark has not settled it: it may hold nothing
    /// yet because the decision has not reached it.
    pub(super) fn settled_here(&self, shard: ShardId, txn: TxnId, ts: Time) -> bool {
        let Some(g) = self.groups.get(&shard) else { return false };
        if g.status != Status::Normal {
            return false;
        }
        if self.done.contains_key(&(shard, txn)) {
            let unconfirmed = g.leader() == self.me && g.pushing.contains_key(&txn);
            return !unconfirmed && !self.proposals.contains_key(&txn);
        }
        self.forgotten(shard, txn, ts)
    }

    /// The sweep's pass over decided transactions old enough to be forgotten: drops
    /// their writes after the tombstone period, asks the replicas of their participants
    /// (at most once a `query`) whether they settled them, and forgets those every one
    /// of them settled.
    pub(super) fn settle(&mut self, cx: &mut Ctx<'_, Msg>) {
        if self.settling.is_empty() {
            return;
        }
        let now = cx.now();
        let (keep, again) = (self.env.timeouts.tombstone, self.env.timeouts.query);
        let layout = self.env.layout.clone();
        // At most `SETTLE_BATCH` entries a sweep, round-robin from where the last
        // sweep stopped: while a replica is down the others hold every decision of its
        // shards, and a sweep must not visit (and ask about) them all each time.
        use std::ops::Bound::{Excluded, Unbounded};
        let from = self.settle_cursor.map_or(Unbounded, Excluded);
        let mut keys: Vec<(ShardId, TxnId)> = self
            .settling
            .range((from, Unbounded))
            .map(|(k, _)| *k)
            .take(SETTLE_BATCH)
            .collect();
        if keys.len() < SETTLE_BATCH {
            let more = SETTLE_BATCH - keys.len();
            let first = keys.first().copied();
            keys.extend(
                self.settling
                    .keys()
                    .copied()
                    .take_while(|k| Some(*k) != first)
                    .take(more),
            );
        }
        self.settle_cursor = keys.last().copied();
        let mut ask: BTreeMap<(NodeId, ShardId), Vec<(TxnId, Time)>> = BTreeMap::new();
        for key in keys {
            let (shard, txn) = key;
            let Some(d) = self.done.get(&key) else {
                self.settling.remove(&key);
                continue;
            };
            let age = now.saturating_sub(d.at);
            if age >= keep && d.ctx.is_some() {
                if let Some(d) = self.done.get_mut(&key) {
                    d.ctx = None;
                }
            }
            let d = &self.done[&key];
            if age < self.forget_after {
                continue;
            }
            let (ts, mut shards) = (d.ts, d.shards.clone());
            if ts == 0 || shards.is_empty() {
                // Without its start time the mark could not cover it, and without its
                // configuration no one knows whom to ask: kept. (Decisions carry both
                // now; a `learn` for a transaction never seen here could still make
                // one without a start time.)
                self.settling.remove(&key);
                continue;
            }
            if !shards.contains(&shard) {
                shards.push(shard);
            }
            shards.sort();
            // This replica's own answers, for every participant shard it holds.
            let mine: Vec<ShardId> = shards
                .iter()
                .copied()
                .filter(|s| self.groups.contains_key(s) && self.settled_here(*s, txn, ts))
                .collect();
            let me = self.me;
            let st = self.settling.get_mut(&key).expect("present");
            for s in mine {
                st.answered.insert((s, me));
            }
            let missing: Vec<(ShardId, NodeId)> = shards
                .iter()
                .flat_map(|s| layout.replicas(*s).iter().map(move |r| (*s, *r)))
                .filter(|p| !st.answered.contains(p))
                .collect();
            if missing.is_empty() {
                self.forget(key, ts);
                continue;
            }
            if st.asked != 0 && now.saturating_sub(st.asked) < again {
                continue;
            }
            st.asked = now.max(1);
            for (s, r) in missing {
                if r != me {
                    ask.entry((r, s)).or_default().push((txn, ts));
                }
            }
        }
        for ((r, shard), txns) in ask {
            cx.send(r, Msg::SettleQuery { shard, txns });
        }
    }

    /// Drops a settled transaction's entry and raises the shard's mark over it.
    fn forget(&mut self, key: (ShardId, TxnId), ts: Time) {
        self.settling.remove(&key);
        self.done.remove(&key);
        if let Some(g) = self.groups.get_mut(&key.0) {
            g.forgot_ts = g.forgot_ts.max(ts);
        }
    }

    pub(super) fn on_settle_query(
        &mut self,
        from: NodeId,
        shard: ShardId,
        txns: Vec<(TxnId, Time)>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let settled: Vec<TxnId> = txns
            .into_iter()
            .filter(|(t, ts)| self.settled_here(shard, *t, *ts))
            .map(|(t, _)| t)
            .collect();
        if !settled.is_empty() {
            cx.send(from, Msg::Settled { shard, txns: settled });
        }
    }

    pub(super) fn on_settled(&mut self, from: NodeId, shard: ShardId, txns: Vec<TxnId>) {
        if !self.env.layout.replicas(shard).contains(&from) {
            return;
        }
        let mine: Vec<ShardId> = self.groups.keys().copied().collect();
        for txn in txns {
            // The answer counts for every entry of the transaction held here (one per
            // shard of it this node holds).
            for s in &mine {
                if let Some(st) = self.settling.get_mut(&(*s, txn)) {
                    st.answered.insert((shard, from));
                }
            }
        }
    }
}
