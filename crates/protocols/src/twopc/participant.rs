//! The participant role: reads under 2PL (wound-wait) or OCC, prepare (lock or
//! validate, log, vote), and applying the coordinator's decision.

use super::*;

impl Server {
    pub(super) fn on_read(&mut self, from: NodeId, read: LockedRead, cx: &mut Ctx<'_, Msg>) {
        let LockedRead { txn, ts, key } = read;
        cx.charge_ops(1);
        if self.tombstones.contains_key(&txn) {
            cx.send(
                from,
                Msg::ReadReply(ReadAnswer::refused(txn, key, AbortReason::AbortedHere)),
            );
            return;
        }
        if self.committed.contains_key(&txn) {
            // Committed here: a read the network delayed past the decision. Its client
            // is done with it, so there is nothing to answer; begun again, it would take
            // a shared lock with the transaction's old (oldest) priority that every
            // younger writer waits behind until the idle timeout.
            return;
        }
        if self.cc != Cc::Locking {
            // OCC reads take no lock, but a read of a key that a prepared transaction
            // will write waits for its decision: answered now, it could miss a commit
            // already acknowledged to that transaction's client (the coordinator
            // answers the client as it sends the decision here), and would only fail
            // validation later anyway.
            if self.cc == Cc::Optimistic && self.prepared_writer(&key) {
                self.occ_waiting.push((from, txn, key, cx.hops()));
                return;
            }
            cx.send(from, Msg::ReadReply(ReadAnswer::latest(txn, key, &self.store)));
            return;
        }
        let t = self.seen(txn, ts, cx.now());
        if !matches!(t.state, PState::Active) {
            return; // a read after prepare is a stale duplicate
        }
        let prio = t.prio;
        match self.locks.acquire(txn, prio, &key, LockMode::Shared) {
            Acquired::Granted => self.reply_read(from, txn, key, cx.hops(), cx),
            Acquired::Waiting { wound } => {
                let hops = cx.hops();
                if let Some(t) = self.ptxns.get_mut(&txn) {
                    t.pending_reads.wait(from, key, hops);
                }
                self.wound(wound, cx);
            }
            Acquired::Denied | Acquired::TookOver { .. } => unreachable!("wound-wait never denies"),
        }
    }

    /// Whether a transaction holds `key` exclusively (OCC: a prepared writer of it).
    fn prepared_writer(&self, key: &Key) -> bool {
        self.locks.holders(key).iter().any(|(_, m)| *m == LockMode::Exclusive)
    }

    /// OCC: answers the waiting reads whose key no prepared transaction holds any more.
    pub(super) fn wake_occ_reads(&mut self, cx: &mut Ctx<'_, Msg>) {
        if self.occ_waiting.is_empty() {
            return;
        }
        let waiting = std::mem::take(&mut self.occ_waiting);
        for (client, txn, key, hops) in waiting {
            if self.prepared_writer(&key) {
                self.occ_waiting.push((client, txn, key, hops));
            } else {
                self.reply_read(client, txn, key, hops, cx);
            }
        }
    }

    /// Answers a read on the requester's causal chain `hops`.
    pub(super) fn reply_read(&mut self, to: NodeId, txn: TxnId, key: Key, hops: u32, cx: &mut Ctx<'_, Msg>) {
        cx.send_on_chain(to, Msg::ReadReply(ReadAnswer::latest(txn, key, &self.store)), hops);
    }

    /// Aborts wounded transactions that can still abort (not prepared).
    pub(super) fn wound(&mut self, victims: Vec<TxnId>, cx: &mut Ctx<'_, Msg>) {
        for v in victims {
            match self.ptxns.get(&v).map(|t| &t.state) {
                None => {}
                // Voted yes here: only its coordinator may still abort it. Without
                // this, two transactions each prepared at one participant and waiting
                // at the other's deadlock until the vote timeout (wound-wait prevents
                // deadlock only if a wounded transaction can always be aborted).
                Some(PState::Prepared { coord, .. }) => cx.send(*coord, Msg::Wound { txn: v }),
                Some(_) => self.abort_local(v, AbortReason::Wounded, cx),
            }
        }
    }

    /// Aborts an unprepared (or prepared, on an ABORT decision) transaction here:
    /// releases its locks, answers its waiting reads and, if it was preparing, votes no.
    pub(super) fn abort_local(&mut self, txn: TxnId, why: AbortReason, cx: &mut Ctx<'_, Msg>) {
        self.tombstones.insert(txn, cx.now());
        let Some(t) = self.ptxns.remove(&txn) else {
            return;
        };
        t.pending_reads
            .refuse_all(cx, |key| Msg::ReadReply(ReadAnswer::refused(txn, key, why.clone())));
        match t.state {
            PState::Preparing { coord, hops, .. } => {
                cx.send_on_chain(coord, Msg::Vote(Prepared::no(txn, why.clone())), hops);
            }
            PState::Prepared { .. } => self.log.append(Rec::Aborted { txn }, cx),
            PState::Active => {}
        }
        let grants = self.locks.release_all(txn);
        self.on_grants(grants, cx);
        self.wake_occ_reads(cx);
    }

    pub(super) fn on_grants(&mut self, grants: Vec<Grant>, cx: &mut Ctx<'_, Msg>) {
        for g in grants {
            let Some(t) = self.ptxns.get_mut(&g.txn) else {
                continue;
            };
            if let Some(r) = t.pending_reads.granted(&g.key) {
                self.reply_read(r.client, g.txn, r.key, r.hops, cx);
            } else if let PState::Preparing { waiting, .. } = &mut t.state {
                *waiting -= 1;
                if *waiting == 0 {
                    self.finish_prepare(g.txn, cx);
                }
            }
        }
    }

    /// `txn`'s state here (begun, with priority `ts`, if new), seen at `now`.
    fn seen(&mut self, txn: TxnId, ts: Time, now: Time) -> &mut PTxn {
        let t = self.ptxns.entry(txn).or_insert_with(|| PTxn {
            prio: (ts, txn),
            state: PState::Active,
            last_seen: now,
            pending_reads: Default::default(),
        });
        t.last_seen = now;
        t
    }

    pub(super) fn on_prepare(&mut self, from: NodeId, txn: TxnId, ts: Time, part: Part, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops((part.reads.len() + part.writes.len()) as u32);
        let no = |reason: AbortReason, cx: &mut Ctx<'_, Msg>| {
            cx.send(from, Msg::Vote(Prepared::no(txn, reason)));
        };
        if self.tombstones.contains_key(&txn) {
            return no(AbortReason::AbortedHere, cx);
        }
        if self.committed.contains_key(&txn) {
            // Committed here already: a PREPARE the network delayed past the decision.
            // Prepared again, it would hold the keys' locks and, on the coordinator's
            // answer to its query, install the old versions over newer ones (stop 46).
            cx.send(from, Msg::Vote(Prepared::yes(txn)));
            return;
        }
        let now = cx.now();
        let t = self.seen(txn, ts, now);
        match t.state {
            PState::Prepared { .. } => {
                cx.send(from, Msg::Vote(Prepared::yes(txn)));
                return;
            }
            PState::Preparing { .. } => return,
            PState::Active => {}
        }
        let prio = t.prio;
        match self.cc {
            Cc::Locking => {
                // Every read must still be protected by our shared lock.
                if part
                    .reads
                    .iter()
                    .any(|(k, _)| !self.locks.holds(txn, k, LockMode::Shared))
                {
                    let why = AbortReason::ReadLockLost;
                    self.abort_local(txn, why.clone(), cx);
                    return no(why, cx);
                }
                let mut waiting = 0;
                let mut wounded = vec![];
                for (k, _, _) in &part.writes {
                    match self.locks.acquire(txn, prio, k, LockMode::Exclusive) {
                        Acquired::Granted => {}
                        Acquired::Waiting { wound } => {
                            waiting += 1;
                            wounded.extend(wound);
                        }
                        Acquired::Denied | Acquired::TookOver { .. } => unreachable!("wound-wait never denies"),
                    }
                }
                let hops = cx.hops();
                if let Some(t) = self.ptxns.get_mut(&txn) {
                    t.state = PState::Preparing {
                        coord: from,
                        part,
                        waiting,
                        hops,
                    };
                }
                if waiting == 0 {
                    self.finish_prepare(txn, cx);
                } else {
                    self.wound(wounded, cx);
                }
            }
            Cc::Unsafe => self.prepare_now(txn, from, part, cx),
            Cc::Optimistic => {
                let mut ok = part.reads.iter().all(|(k, v)| self.store.latest(k).0 == *v);
                let mut why = (!ok).then_some(AbortReason::ReadVersionChanged);
                if ok {
                    let wanted = part
                        .reads
                        .iter()
                        .map(|(k, _)| (k, LockMode::Shared))
                        .chain(part.writes.iter().map(|(k, _, _)| (k, LockMode::Exclusive)));
                    for (k, m) in wanted {
                        if self.locks.acquire(txn, prio, k, m) != Acquired::Granted {
                            ok = false;
                            why = Some(AbortReason::LockedByPreparing);
                            break;
                        }
                    }
                }
                if ok {
                    self.prepare_now(txn, from, part, cx);
                } else {
                    let why = why.unwrap_or(AbortReason::ReadVersionChanged);
                    self.ptxns.remove(&txn);
                    self.locks.release_all(txn);
                    self.wake_occ_reads(cx);
                    self.tombstones.insert(txn, now);
                    no(why, cx);
                }
            }
        }
    }

    /// Prepares a transaction that waits for nothing: force-log and vote yes now.
    pub(super) fn prepare_now(&mut self, txn: TxnId, coord: NodeId, part: Part, cx: &mut Ctx<'_, Msg>) {
        if let Some(t) = self.ptxns.get_mut(&txn) {
            t.state = PState::Preparing {
                coord,
                part,
                waiting: 0,
                hops: cx.hops(),
            };
        }
        self.finish_prepare(txn, cx);
    }

    pub(super) fn finish_prepare(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.ptxns.get_mut(&txn) else {
            return;
        };
        let PState::Preparing { coord, part, hops, .. } = std::mem::replace(&mut t.state, PState::Active) else {
            return;
        };
        self.log.append_sync(
            Rec::Prepared(Box::new(PreparedRec {
                txn,
                ts: t.prio.0,
                coord,
                reads: part.reads.iter().map(|(k, _)| k.clone()).collect(),
                writes: part.writes.clone(),
            })),
            cx,
        );
        t.state = PState::Prepared {
            coord,
            part,
            asked: cx.now(),
        };
        cx.send_on_chain(coord, Msg::Vote(Prepared::yes(txn)), hops);
        if self.mutant == crate::Mutant::EarlyRelease {
            let grants = self.locks.release_all(txn);
            self.on_grants(grants, cx);
        }
    }

    pub(super) fn on_decide(&mut self, from: NodeId, txn: TxnId, commit: bool, cx: &mut Ctx<'_, Msg>) {
        match self.ptxns.get(&txn).map(|t| &t.state) {
            Some(PState::Prepared { .. }) => {
                if commit {
                    let t = self.ptxns.remove(&txn).expect("present");
                    let PState::Prepared { part, .. } = t.state else {
                        unreachable!()
                    };
                    cx.charge_ops(part.writes.len() as u32);
                    for (k, v, val) in part.writes {
                        self.store.install_latest(&k, v, val);
                    }
                    self.committed.insert(txn, cx.now());
                    self.log.append_sync(Rec::Committed { txn }, cx);
                    let grants = self.locks.release_all(txn);
                    self.on_grants(grants, cx);
                    self.wake_occ_reads(cx);
                } else {
                    self.abort_local(txn, AbortReason::AbortedByCoordinator, cx);
                }
                cx.send(from, Msg::Ack { txn });
            }
            Some(_) if !commit => self.abort_local(txn, AbortReason::AbortedByCoordinator, cx),
            Some(_) => {} // commit before our yes vote: impossible; ignore
            None => {
                if !commit {
                    self.tombstones.insert(txn, cx.now());
                }
                // Already applied (duplicate) or never prepared here: acknowledge so the
                // coordinator can finish.
                cx.send(from, Msg::Ack { txn });
            }
        }
    }

    pub(super) fn on_release(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        match self.ptxns.get(&txn).map(|t| &t.state) {
            Some(PState::Prepared { .. }) => {} // only the coordinator decides now
            Some(_) => self.abort_local(txn, AbortReason::ReleasedByClient, cx),
            None => {
                self.tombstones.insert(txn, cx.now());
            }
        }
    }

    // ------------------------------------------------------------ coordinator
}
