//! Execution along the chain (crossstitch.md §3.2–3.3): a server runs its piece of the
//! transaction under MVTO, installs tentative versions, forwards the chain to the next
//! server, and precommits once the chain behind it precommitted and its dependencies
//! resolved.

use super::*;

impl Server {
    pub(super) fn on_exec(&mut self, from: NodeId, m: Exec, cx: &mut Ctx<'_, Msg>) {
        let fresh = !self.parts.contains_key(&(m.txn, m.chain.len() as u32)) && !self.done.contains_key(&m.txn);
        if fresh && !self.forgot(m.txn, m.ts) && !self.restarting() && !self.may_serve(m.ts) {
            // Fail-over: the members have not promised a read floor above it yet.
            self.park(from, m, cx);
            return;
        }
        let Exec {
            txn,
            ts,
            mut exec,
            mut writes_done,
            mut reads,
            mut writes,
            mut chain,
            notifies,
        } = m;
        let pos = chain.len() as u32;
        if let Some(p) = self.parts.get(&(txn, pos)) {
            // A re-sent execution: our ack was lost.
            let next = if p.last { None } else { p.next };
            cx.send(from, Msg::Ack { txn, pos, next });
            return;
        }
        if let Some(d) = self.done.get(&txn) {
            let (commit, rec, reason) = (d.commit, d.rec.clone(), d.reason.clone());
            cx.send(
                from,
                Msg::Decide {
                    txn,
                    commit,
                    rec,
                    reason,
                },
            );
            return;
        }
        if self.forgot(txn, ts) {
            // It may have run it before the crash: neither run it nor ack it. Tell the
            // sender, which aborts it if it has not precommitted, at once rather than
            // at its vote timeout: a sender that crashed within that timeout left a
            // transaction no one could decide (campaign seed 6049).
            cx.send(from, Msg::Refused { txn, pos });
            return;
        }
        if self.restarting() {
            self.abort_new(txn, &chain, AbortReason::Resyncing, cx);
            return;
        }
        // Unmarshalling the shipped transaction.
        let bytes: usize = exec
            .reads()
            .iter()
            .map(|(k, v)| k.len() + v.as_ref().map_or(0, |v| v.0.len()))
            .sum::<usize>()
            + exec
                .call
                .args
                .iter()
                .map(|a| match a {
                    meridian_txn::Arg::Bytes(b) => b.len(),
                    _ => 8,
                })
                .sum::<usize>();
        cx.charge_ops(bytes.div_ceil(1024) as u32);
        chain.push(Hop {
            node: self.me,
            replicas: vec![],
        });
        let mut part = Part {
            ts,
            pos,
            phase: Phase::Executed,
            chain,
            next: None,
            last: false,
            after_next: None,
            acked: false,
            prev_precommit: false,
            notifies_needed: notifies,
            notifies: self.early_notifies.remove(&(txn, pos)).map(|e| e.1).unwrap_or_default(),
            deps: BTreeSet::new(),
            puts: vec![],
            forward: None,
            replicate: vec![],
            poked: cx.now(),
            rec: None,
            since: cx.now(),
            heard_next: cx.now(),
        };
        // Run every state this server can serve.
        let outcome: Result<Option<NodeId>, AbortReason> = loop {
            let (step, ws) = match exec.step_ops(&self.env.registry) {
                Ok(s) => s,
                Err(e) => break Err(AbortReason::Unrunnable(e.to_string())),
            };
            let mut moved = None;
            let mut refused = None;
            while (writes_done as usize) < ws.len() {
                let (key, value) = ws[writes_done as usize].clone();
                let owner = self.primary_of(&key);
                if owner != self.me {
                    moved = Some(owner);
                    break;
                }
                if self.stale.contains(&self.env.layout.shard_of(&key).0) {
                    // Primary of a shard whose data it does not hold whole.
                    refused = Some(AbortReason::Resyncing);
                    break;
                }
                let id = VersionId { txn, seq: writes_done };
                // Read timestamps set before a crash, or by a primary this server took
                // the shard over from, are not here: refuse writes below them.
                let floor = self.write_floor(self.env.layout.shard_of(&key).0);
                if let Err(why) = self.put(ts, floor, &key, id, &value, &mut part) {
                    refused = Some(why);
                    break;
                }
                cx.charge_ops(1);
                writes.push(WriteRec { key, version: id });
                writes_done += 1;
            }
            if let Some(owner) = moved {
                break Ok(Some(owner));
            }
            if let Some(why) = refused {
                break Err(why);
            }
            match step {
                Step::Read(key) => {
                    let owner = self.primary_of(&key);
                    if owner != self.me {
                        break Ok(Some(owner));
                    }
                    if self.stale.contains(&self.env.layout.shard_of(&key).0) {
                        break Err(AbortReason::Resyncing);
                    }
                    if self.store.too_old(&key, ts) && self.mutant != crate::Mutant::ReadCollected {
                        // The version this read would see was collected.
                        break Err(AbortReason::MvtoTooOld);
                    }
                    let r = self.store.mvto_read(&key, ts, true);
                    cx.charge_ops(1);
                    if r.tentative {
                        if let Some(v) = r.version {
                            part.deps.insert(v.txn);
                            self.readers.entry(v.txn).or_default().push((txn, pos));
                        }
                    }
                    reads.push(ReadRec {
                        key: key.clone(),
                        version: r.version,
                    });
                    exec.supply(key, r.value);
                }
                Step::Done { .. } => break Ok(None),
                Step::Abort(reason) => break Err(reason),
                Step::Wait { .. } => break Err(AbortReason::NotInteractive),
            }
        };
        let rec_so_far = Rec { reads, writes };
        match outcome {
            Err(reason) => {
                // Abort here: nothing was forwarded.
                let chain = part.chain.clone();
                for (k, v, _) in std::mem::take(&mut part.puts) {
                    self.store.abort_tentative(&k, v);
                }
                self.unlink_deps(txn, pos, &part.deps);
                self.tell_abort_backward(txn, &chain, pos - 1, reason.clone(), cx);
                self.decided(txn, false, None, Some(reason), false, cx);
            }
            Ok(next) => {
                let prev = part.chain[pos as usize - 1].node;
                // Replicate this position's puts.
                let target = next.unwrap_or(self.me);
                type Copy = (Vec<(Key, VersionId, Value)>, Vec<(u32, u32)>);
                let mut by_replica: BTreeMap<NodeId, Copy> = BTreeMap::new();
                for (k, v, val) in &part.puts {
                    let s = self.env.layout.shard_of(k).0;
                    let view = self.views.get(&s).map_or(0, |v| v.view);
                    for r in self.members(s).iter().filter(|r| **r != self.me) {
                        let e = by_replica.entry(*r).or_default();
                        e.0.push((k.clone(), *v, val.clone()));
                        if !e.1.contains(&(s, view)) {
                            e.1.push((s, view));
                        }
                    }
                }
                let replicas: Vec<NodeId> = by_replica.keys().copied().collect();
                part.chain[pos as usize].replicas = replicas.clone();
                let chain_nodes: Vec<NodeId> = part.chain.iter().map(|h| h.node).collect();
                for (r, (puts, views)) in by_replica {
                    let m = Msg::Replicate(Replicate {
                        txn,
                        ts,
                        puts,
                        notify: target,
                        pos: if next.is_some() { pos + 1 } else { pos },
                        chain: chain_nodes.clone(),
                        views,
                    });
                    cx.send(r, m.clone());
                    part.replicate.push((r, m));
                }
                match next {
                    Some(n) => {
                        part.next = Some(n);
                        let fwd = Msg::Exec(Exec {
                            txn,
                            ts,
                            exec,
                            writes_done,
                            reads: rec_so_far.reads,
                            writes: rec_so_far.writes,
                            chain: part.chain.clone(),
                            notifies: replicas.len() as u32,
                        });
                        cx.send(n, fwd.clone());
                        part.forward = Some(fwd);
                    }
                    None => {
                        part.last = true;
                        part.acked = true;
                        part.notifies_needed += replicas.len() as u32;
                        part.rec = Some(Arc::new(rec_so_far));
                    }
                }
                cx.send(
                    prev,
                    Msg::Ack {
                        txn,
                        pos,
                        next: part.next.filter(|_| !part.last),
                    },
                );
                self.parts.insert((txn, pos), part);
                self.try_precommit(txn, pos, cx);
            }
        }
    }

    /// One MVTO put of this transaction (replacing its own earlier put of the key).
    pub(super) fn put(
        &mut self,
        ts: u64,
        floor: u64,
        key: &Key,
        id: VersionId,
        value: &Value,
        part: &mut Part,
    ) -> Result<(), AbortReason> {
        if ts < floor {
            return Err(AbortReason::MvtoBelowRestart);
        }
        if self.store.too_old(key, ts) && self.mutant != crate::Mutant::ReadCollected {
            // The version this write would follow (and whose read timestamp it must
            // check) was collected.
            return Err(AbortReason::MvtoTooOld);
        }
        if let Some(i) = part.puts.iter().position(|(k, _, _)| k == key) {
            let old = part.puts[i].1;
            let read_since = self.store.versions(key).iter().any(|v| v.id == old && v.rts > ts);
            if read_since {
                return Err(AbortReason::MvtoLaterReadOfEarlierWrite);
            }
            self.store.abort_tentative(key, old);
            part.puts.remove(i);
        }
        if !self.store.mvto_can_write(key, ts) {
            return Err(AbortReason::MvtoWriteAfterLaterRead);
        }
        self.store.write_tentative(key, id, value.clone(), ts);
        part.puts.push((key.clone(), id, value.clone()));
        Ok(())
    }

    /// A transaction this server never ran: refuse it and tell the chain so far.
    pub(super) fn abort_new(&mut self, txn: TxnId, chain: &[Hop], reason: AbortReason, cx: &mut Ctx<'_, Msg>) {
        let pos = chain.len() as u32;
        self.record_done(txn, false, None, Some(reason.clone()), cx);
        self.tell_abort_backward(txn, chain, pos, reason, cx);
    }

    /// Tells positions `0..pos` (and their replicas) that the transaction aborted.
    pub(super) fn tell_abort_backward(
        &mut self,
        txn: TxnId,
        chain: &[Hop],
        pos: u32,
        reason: AbortReason,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let upto = chain.len().min(pos as usize + 1);
        for n in self.others_of(&chain[..upto]) {
            cx.send(
                n,
                Msg::Decide {
                    txn,
                    commit: false,
                    rec: None,
                    reason: Some(reason.clone()),
                },
            );
        }
    }

    /// Every node of these positions and their replicas, but this server.
    pub(super) fn others_of(&self, hops: &[Hop]) -> BTreeSet<NodeId> {
        let mut to: BTreeSet<NodeId> = hops
            .iter()
            .flat_map(|h| std::iter::once(h.node).chain(h.replicas.iter().copied()))
            .collect();
        to.remove(&self.me);
        to
    }

    pub(super) fn unlink_deps(&mut self, txn: TxnId, pos: u32, deps: &BTreeSet<TxnId>) {
        for w in deps {
            if let Some(rs) = self.readers.get_mut(w) {
                rs.retain(|r| *r != (txn, pos));
                if rs.is_empty() {
                    self.readers.remove(w);
                }
            }
        }
    }

    /// Sends the precommit (or, at the last position, starts Paxos commit) when every
    /// condition holds.
    pub(super) fn try_precommit(&mut self, txn: TxnId, pos: u32, cx: &mut Ctx<'_, Msg>) {
        let Some(p) = self.parts.get_mut(&(txn, pos)) else {
            return;
        };
        if p.phase != Phase::Executed
            || (!p.acked && self.mutant != crate::Mutant::NoAck)
            || !p.prev_precommit
            || (p.notifies.len() as u32) < p.notifies_needed
            || !p.deps.is_empty()
        {
            return;
        }
        p.phase = Phase::Precommitted;
        p.heard_next = cx.now();
        if !p.last {
            let next = p.next.expect("acked position has a successor");
            cx.send(next, Msg::Precommit { txn, pos: pos + 1 });
            return;
        }
        // The final coordinator: Paxos commit with two transaction replicas.
        let decision = Decision {
            commit: true,
            rec: p.rec.clone(),
            chain: p.chain.clone(),
        };
        let ts = p.ts;
        let acceptors = self.acceptor_set();
        let mut prop = Proposer {
            ts,
            ballot: 0,
            acceptors,
            promises: BTreeMap::new(),
            value: Some(decision.clone()),
            accepted: BTreeSet::new(),
            waiters: BTreeSet::new(),
            since: cx.now(),
        };
        // Accept locally first (the final server is one of the three acceptors).
        self.admit(txn, ts, cx);
        if self.accept(txn, ts, 0, &decision, cx.now()) {
            prop.accepted.insert(self.me);
        }
        for a in acceptors.iter().filter(|a| **a != self.me) {
            cx.send(
                *a,
                Msg::Accept {
                    txn,
                    ts,
                    ballot: 0,
                    decision: decision.clone(),
                },
            );
        }
        self.proposers.insert(txn, prop);
    }
}
