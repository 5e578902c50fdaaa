//! Execution at a group leader: reads under locks (wound-wait), the last operation with
//! its writes, the vote, and replication of the transaction context before voting.

use super::*;

impl Server {
    pub(super) fn on_read(&mut self, from: NodeId, m: Read, cx: &mut Ctx<'_, Msg>) {
        let Read {
            txn,
            ts,
            shard,
            key,
            shards,
        } = m;
        cx.charge_ops(1);
        if !self.is_leader(shard) {
            return self.not_leader(from, txn, shard, cx);
        }
        if self.tombstones.contains_key(&(shard, txn)) || self.done.contains_key(&(shard, txn)) {
            let result = Err(AbortReason::AbortedHere);
            return cx.send(from, Msg::ReadReply { txn, key, result });
        }
        if self.forgotten(shard, txn, ts) {
            let result = Err(AbortReason::OlderThanForgotten);
            return cx.send(from, Msg::ReadReply { txn, key, result });
        }
        let now = cx.now();
        let known = self.txns.contains_key(&(shard, txn));
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
        if !known {
            t.stage = Stage::Active;
        }
        if !matches!(t.stage, Stage::Active) {
            // A duplicate after the last operation, or recovery has taken over.
            let result = Err(AbortReason::NoLongerExecuting);
            return cx.send(from, Msg::ReadReply { txn, key, result });
        }
        t.client = Some(from);
        t.shards = shards;
        t.last_seen = now;
        if self.rc {
            return self.reply_read(from, txn, key, cx.hops(), cx);
        }
        let prio = t.prio;
        match self.locks.acquire(txn, prio, &key, LockMode::Shared) {
            Acquired::Granted => self.reply_read(from, txn, key, cx.hops(), cx),
            Acquired::Waiting { wound } => {
                let hops = cx.hops();
                self.mark_blocking(&key, cx.now());
                if let Some(t) = self.txns.get_mut(&(shard, txn)) {
                    t.pending_reads.wait(from, key, hops);
                }
                self.wound(wound, cx);
            }
            Acquired::Denied | Acquired::TookOver { .. } => unreachable!("wound-wait never denies"),
        }
    }

    pub(super) fn reply_read(&mut self, to: NodeId, txn: TxnId, key: Key, hops: u32, cx: &mut Ctx<'_, Msg>) {
        let (v, val) = self.store.latest(&key);
        let result = Ok((v, val.cloned()));
        cx.send_on_chain(to, Msg::ReadReply { txn, key, result }, hops);
    }

    /// Aborts wounded transactions that have not voted (their shards are those this
    /// node leads; a lock is per key, so the shard is the key's).
    pub(super) fn wound(&mut self, victims: Vec<TxnId>, cx: &mut Ctx<'_, Msg>) {
        for v in victims.iter().copied() {
            // Voted here: only its client (the coordinator) may still abort it. Without
            // this, two transactions each voted at one leader and waiting at the
            // other's deadlock until the client's 3 s vote timeout.
            let voted = self.txns.iter().find(|((_, t), x)| {
                *t == v && matches!(x.stage, Stage::Replicating { .. } | Stage::Voted) && x.client.is_some()
            });
            if let Some((_, x)) = voted {
                cx.send(x.client.expect("checked"), Msg::Wound { txn: v });
            }
        }
        for v in victims {
            self.abort_unvoted_where(|(_, t)| *t == v, AbortReason::Wounded, cx);
        }
    }

    /// Someone waits for a lock on `key`: every transaction holding it that is
    /// executing (unvoted) or voted notes when it began to block someone since its
    /// client was last heard (`Txn::blocking`). If the client then stays silent for
    /// the fail-over time, the sweep aborts it (unvoted: this leader promised nothing)
    /// or recovers it (voted) then rather than after `idle`: a client cut off by a
    /// partition would otherwise keep its keys locked, and everyone on the majority
    /// side waiting behind them, for `idle` (10 s).
    pub(super) fn mark_blocking(&mut self, key: &Key, now: Time) {
        let shard = self.env.layout.shard_of(key);
        for (h, _) in self.locks.holders(key) {
            if let Some(t) = self.txns.get_mut(&(shard, h)) {
                let holds = matches!(t.stage, Stage::Active | Stage::Replicating { .. } | Stage::Voted);
                if holds && t.blocking.is_none_or(|b| t.last_seen > b) {
                    t.blocking = Some(now);
                }
            }
        }
    }

    /// Aborts every transaction not voted for yet (executing or locking) whose key
    /// `which` picks, in key order, not the table's (a rebuilt table iterates in
    /// another: the image test caught it once blocked transactions were released early).
    pub(super) fn abort_unvoted_where(
        &mut self,
        which: impl Fn(&(ShardId, TxnId)) -> bool,
        why: AbortReason,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let mut keys: Vec<(ShardId, TxnId)> = self
            .txns
            .iter()
            .filter(|(k, t)| which(k) && matches!(t.stage, Stage::Active | Stage::Locking { .. }))
            .map(|(k, _)| *k)
            .collect();
        keys.sort();
        for k in keys {
            self.abort_unvoted(k, why.clone(), cx);
        }
    }

    /// A leader aborts a transaction it has not voted yes for: releases its locks,
    /// answers its waiting reads, votes no if the last operation was waiting.
    pub(super) fn abort_unvoted(&mut self, key: (ShardId, TxnId), why: AbortReason, cx: &mut Ctx<'_, Msg>) {
        let (shard, txn) = key;
        let Some(t) = self.txns.get(&key) else { return };
        if !matches!(t.stage, Stage::Active | Stage::Locking { .. }) {
            return;
        }
        let t = self.txns.remove(&key).expect("present");
        self.tombstones.insert(key, cx.now());
        t.pending_reads.refuse_all(cx, |key| Msg::ReadReply {
            txn,
            key,
            result: Err(why.clone()),
        });
        if let (Stage::Locking { hops, .. }, Some(client)) = (t.stage, t.client) {
            let reason = Some(why.clone());
            cx.send_on_chain(client, Msg::vote(txn, shard, false, reason), hops);
        }
        self.release(shard, txn, cx);
    }

    /// Releases every lock (and queued request) of `txn` on keys of `shard`, and serves
    /// whoever was waiting. (A node may hold other shards of the same transaction.)
    pub(super) fn release(&mut self, shard: ShardId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let layout = self.env.layout.clone();
        let mut keys = self.locks.keys_of(txn);
        keys.retain(|k| layout.shard_of(k) == shard);
        keys.sort();
        for k in keys {
            let g = self.locks.release(txn, &k);
            self.on_grants(g, cx);
        }
    }

    pub(super) fn on_grants(&mut self, grants: Vec<Grant>, cx: &mut Ctx<'_, Msg>) {
        for g in grants {
            let shard = self.env.layout.shard_of(&g.key);
            let Some(t) = self.txns.get_mut(&(shard, g.txn)) else {
                continue;
            };
            if let Some(r) = t.pending_reads.granted(&g.key) {
                self.reply_read(r.client, g.txn, r.key, r.hops, cx);
            } else if let Stage::Locking { waiting, .. } = &mut t.stage {
                *waiting -= 1;
                if *waiting == 0 {
                    self.locked((shard, g.txn), cx);
                }
            }
        }
    }

    pub(super) fn on_last(&mut self, from: NodeId, m: LastOp, cx: &mut Ctx<'_, Msg>) {
        let LastOp {
            txn,
            ts,
            shard,
            shards,
            reads,
            writes,
        } = m;
        cx.charge_ops((reads.len() + writes.len()) as u32);
        if !self.is_leader(shard) {
            return self.not_leader(from, txn, shard, cx);
        }
        let no = |reason: AbortReason, cx: &mut Ctx<'_, Msg>| {
            let reason = Some(reason.clone());
            cx.send(from, Msg::vote(txn, shard, false, reason));
        };
        if self.tombstones.contains_key(&(shard, txn)) {
            return no(AbortReason::AbortedHere, cx);
        }
        if let Some(d) = self.done.get(&(shard, txn)) {
            if !d.commit {
                return no(AbortReason::AlreadyAborted, cx);
            }
            return;
        }
        if !self.may_accept(ts) {
            return no(AbortReason::ParticipantRestarted, cx);
        }
        if self.forgotten(shard, txn, ts) {
            return no(AbortReason::OlderThanForgotten, cx);
        }
        let now = cx.now();
        let view = self.groups[&shard].view;
        let known = self.txns.contains_key(&(shard, txn));
        let t = self.txns.entry((shard, txn)).or_insert_with(|| Txn::new(txn, ts, now));
        if !known {
            t.stage = Stage::Active;
        }
        t.last_seen = now;
        match &t.stage {
            Stage::Active => {}
            Stage::Replicating { .. } | Stage::Locking { .. } => return, // duplicate
            _ if t.voted_here(view) => {
                // Duplicate of a vote this leader replicated in this view: answer again.
                // (A context adopted in a view change may have reached only a
                // minority: never confirmed, see `Server::on_vote_query`.)
                return cx.send(from, Msg::vote(txn, shard, true, None));
            }
            Stage::Voted if t.ctx.is_some() => return no(AbortReason::ParticipantLostLeadership, cx),
            _ => return no(AbortReason::NoVotePossible, cx),
        }
        t.client = Some(from);
        t.shards = shards;
        // Every read must still be protected by our shared lock (lost on wound or a
        // leader change), and the version read must still be the key's latest here: a
        // client re-sends an unanswered read to the group's next replica (`ClientTimer::Retry`),
        // so the answer it took may come from a leader that was replaced, while the
        // lock is the new leader's. Under the lock the latest version cannot change
        // until the decision, so the read is valid at the vote.
        if !self.rc {
            let why = if reads.iter().any(|(k, _)| !self.locks.holds(txn, k, LockMode::Shared)) {
                Some(AbortReason::ReadLockLostOrLeaderChanged)
            } else if reads.iter().any(|(k, v)| self.store.latest(k).0 != *v) {
                Some(AbortReason::ReadVersionChanged)
            } else {
                None
            };
            if let Some(why) = why {
                self.abort_unvoted((shard, txn), why.clone(), cx);
                return no(why, cx);
            }
        }
        let reads: Vec<Key> = reads.into_iter().map(|(k, _)| k).collect();
        let prio = (ts, txn);
        let mut waiting = 0;
        let mut wounded = vec![];
        let mut blocked = vec![];
        for (k, _, _) in &writes {
            match self.locks.acquire(txn, prio, k, LockMode::Exclusive) {
                Acquired::Granted => {}
                Acquired::Waiting { wound } => {
                    waiting += 1;
                    wounded.extend(wound);
                    blocked.push(k.clone());
                }
                Acquired::Denied | Acquired::TookOver { .. } => unreachable!("wound-wait never denies"),
            }
        }
        for k in &blocked {
            self.mark_blocking(k, cx.now());
        }
        let hops = cx.hops();
        if let Some(t) = self.txns.get_mut(&(shard, txn)) {
            t.stage = Stage::Locking {
                waiting,
                hops,
                reads,
                writes,
            };
        }
        if waiting == 0 {
            self.locked((shard, txn), cx);
        } else {
            self.wound(wounded, cx);
        }
    }

    /// Every lock of the last operation is held: vote yes and replicate the vote.
    pub(super) fn locked(&mut self, key: (ShardId, TxnId), cx: &mut Ctx<'_, Msg>) {
        let (shard, txn) = key;
        let Some(g) = self.groups.get_mut(&shard) else { return };
        let Some(t) = self.txns.get_mut(&key) else { return };
        let Stage::Locking {
            hops, reads, writes, ..
        } = std::mem::replace(&mut t.stage, Stage::Voted)
        else {
            return;
        };
        g.seq += 1;
        let ctx = TCtx {
            txn,
            ts: t.prio.0,
            shards: t.shards.clone(),
            reads,
            writes,
            seq: g.seq,
        };
        t.locked_at = Some(hops);
        t.ctx = Some(ctx.clone());
        t.stage = Stage::Replicating {
            hops,
            acks: BTreeSet::from([self.me]),
        };
        let view = g.view;
        let followers: Vec<NodeId> = g.replicas.iter().copied().filter(|n| *n != self.me).collect();
        for f in followers {
            cx.send_on_chain(
                f,
                Msg::Replicate {
                    shard,
                    view,
                    ctx: ctx.clone(),
                },
                hops,
            );
        }
        self.check_replicated(key, None, cx);
    }

    /// A client asks for `shard`'s vote: its vote has not come within the fail-over
    /// time. The paper (§VI) keeps a vote through a change of leaders once it is
    /// replicated, and lets a new leader "make a new decision for the vote" when the
    /// old one failed before. The client has no vote from this shard, so it has not
    /// proposed COMMIT, and a no is always safe; a yes only where this leader itself
    /// replicated the vote to a majority in its current view. So:
    /// - not the leader: the usual hint;
    /// - a transaction aborted or tombstoned here: no, again;
    /// - voting in progress (locking or replicating): nothing, the vote follows;
    /// - voted by this leader in this view (`Txn::voted_in`): yes again (the first
    ///   answer was lost);
    /// - a context adopted in a view change, or voted in an earlier view: no. The old
    ///   leader may have replicated it to a minority only (the rest of the group went
    ///   on without it in a later view), so it cannot be confirmed; and telling the two
    ///   apart would take a count no replica has (campaign seed 137: a merged context
    ///   re-replicated and confirmed was a lost update);
    /// - otherwise (unknown here, or executing with no last operation seen): the last
    ///   operation was lost. No, and the transaction is tombstoned, so a late copy of
    ///   the last operation is refused.
    pub(super) fn on_vote_query(&mut self, from: NodeId, txn: TxnId, shard: ShardId, cx: &mut Ctx<'_, Msg>) {
        if !self.is_leader(shard) {
            return self.not_leader(from, txn, shard, cx);
        }
        let key = (shard, txn);
        let vote = |yes: bool, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>| {
            cx.send(from, Msg::vote(txn, shard, yes, reason));
        };
        if self.tombstones.contains_key(&key) {
            return vote(false, Some(AbortReason::AbortedHere), cx);
        }
        if let Some(d) = self.done.get(&key) {
            if !d.commit {
                vote(false, Some(AbortReason::AlreadyAborted), cx);
            }
            return;
        }
        let view = self.groups[&shard].view;
        match self.txns.get(&key) {
            Some(t) if matches!(t.stage, Stage::Locking { .. } | Stage::Replicating { .. }) => {}
            Some(t) if t.voted_here(view) => vote(true, None, cx),
            Some(t) if matches!(t.stage, Stage::Active) => {
                self.abort_unvoted(key, AbortReason::LastOpLost, cx);
                vote(false, Some(AbortReason::LastOpLost), cx);
            }
            Some(t) if t.ctx.is_some() => vote(false, Some(AbortReason::ParticipantLostLeadership), cx),
            Some(_) => vote(false, Some(AbortReason::NoVotePossible), cx),
            None => {
                self.tombstones.insert(key, cx.now());
                vote(false, Some(AbortReason::LastOpLost), cx);
            }
        }
    }

    /// Answers the client once a majority holds the vote. `chain`: the WAN-hop count of
    /// the input that completed the majority (the replication round trip is on the
    /// transaction's critical path); without followers, the last operation's own chain.
    pub(super) fn check_replicated(&mut self, key: (ShardId, TxnId), chain: Option<u32>, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get(&key.0) else { return };
        let need = g.majority();
        let Some(t) = self.txns.get_mut(&key) else { return };
        let Stage::Replicating { hops, acks } = &t.stage else {
            return;
        };
        if acks.len() < need {
            return;
        }
        let hops = chain.unwrap_or(*hops);
        t.stage = Stage::Voted;
        t.voted_in = Some(g.view);
        if let Some(client) = t.client {
            cx.send_on_chain(client, Msg::vote(key.1, key.0, true, None), hops);
        }
    }
}
