//! Primary → backup replication of each position's writes, so a backup can take over
//! its primary's keys, and the notifies that tell the next position they are held (the
//! decision reaches a backup as a `Decide`, applied by `decided` in `decide.rs`).

use super::*;

impl Server {
    pub(super) fn on_replicate(&mut self, from: NodeId, m: Replicate, cx: &mut Ctx<'_, Msg>) {
        let Replicate {
            txn,
            ts,
            puts,
            notify,
            pos,
            chain,
            views,
        } = m;
        if let Some(d) = self.done.get(&txn) {
            if d.commit {
                // Late copy of a committed transaction's puts: install them.
                for (k, v, val) in puts {
                    // Not again if held or collected (a collected one would be
                    // counted twice).
                    if !self.store.has_or_collected(&k, v, ts) {
                        self.store.install(&k, v, val, ts);
                    }
                }
            }
            cx.send(notify, Msg::Notify { txn, pos });
            return;
        }
        // Fail-over: hold puts only from the primary of this server's view, as a
        // member. A put of an older view (its sender lost the shard, or dropped this
        // server) is refused out loud, so the waiting position aborts; one of a newer
        // view is dropped until this server has learned it (the sender re-sends).
        let mut newer = false;
        for (s, v) in &views {
            let my = self.view(*s);
            if *v > my.view {
                newer = true;
            } else if *v < my.view || my.primary != from || !my.members.contains(&self.me) || self.stale.contains(s) {
                cx.send(from, Msg::View(my));
                cx.send(notify, Msg::ReplicaRefused { txn, pos });
                return;
            }
        }
        if newer {
            return;
        }
        if self.forgot(txn, ts) {
            // It may have held these puts before its crash: it will not hold them now.
            // Say so, or the notified position waits for this notify until its vote
            // timeout, and a crash in that window left a transaction whose acceptors
            // were two forgetful servers (faults.rs seed 7344 once the sweep acted in
            // position order).
            cx.send(notify, Msg::ReplicaRefused { txn, pos });
            return;
        }
        if self.restarting() {
            // The primary re-sends until the outcome: take it once the data is here.
            return;
        }
        if puts
            .iter()
            .any(|(k, v, _)| !self.store.contains(k, *v) && self.store.in_collected(k, ts))
        {
            // Version GC here collected past this timestamp (this copy's low-water mark
            // ran ahead of the primary's): the put would land out of its place in the
            // key's order. Refused out loud, like a put this server may have forgotten.
            cx.send(notify, Msg::ReplicaRefused { txn, pos });
            return;
        }
        let b = self.backups.entry(txn).or_insert(Backup {
            ts,
            primary: from,
            notify,
            chain,
            puts: vec![],
            since: cx.now(),
            primary_forgot: false,
        });
        for (k, v, val) in puts {
            if !b.puts.iter().any(|(k2, v2)| *k2 == k && *v2 == v) {
                // The primary replaced an earlier put of this key: so does the copy.
                if let Some(i) = b.puts.iter().position(|(k2, _)| *k2 == k) {
                    let (k2, v2) = b.puts.remove(i);
                    self.store.abort_tentative(&k2, v2);
                }
                self.store.write_tentative(&k, v, val, ts);
                b.puts.push((k, v));
            }
        }
        cx.charge_ops(b.puts.len() as u32);
        cx.send(notify, Msg::Notify { txn, pos });
    }

    /// A replica of the previous position's puts will not hold them: abort here unless
    /// this position has precommitted or already has that replica's notify (then the
    /// refusal answers a re-sent copy after the replica restarted, and changes nothing).
    pub(super) fn on_replica_refused(&mut self, from: NodeId, txn: TxnId, pos: u32, cx: &mut Ctx<'_, Msg>) {
        let refused = self
            .parts
            .get(&(txn, pos))
            .is_some_and(|p| p.phase == Phase::Executed && !p.notifies.contains(&from));
        if refused {
            self.abort_here(txn, pos, AbortReason::ReplicaRestarted, cx);
        }
    }

    pub(super) fn on_notify(&mut self, from: NodeId, txn: TxnId, pos: u32, cx: &mut Ctx<'_, Msg>) {
        self.count_notify(txn, pos, from, cx);
    }

    /// Counts `replica`'s notify (or its waiver) for position `pos`, or keeps it for
    /// a position not executed here yet.
    pub(super) fn count_notify(&mut self, txn: TxnId, pos: u32, replica: NodeId, cx: &mut Ctx<'_, Msg>) {
        if let Some(p) = self.parts.get_mut(&(txn, pos)) {
            p.notifies.insert(replica);
            self.try_precommit(txn, pos, cx);
        } else if !self.done.contains_key(&txn) {
            let e = self
                .early_notifies
                .entry((txn, pos))
                .or_insert((cx.now(), BTreeSet::new()));
            e.1.insert(replica);
        }
    }
}
