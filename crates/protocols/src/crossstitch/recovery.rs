//! Recovery of a transaction whose last server is silent (crossstitch.md §3.5): a
//! transaction replica runs phase 1 at a higher ballot; and the queries with which a
//! chain position asks its neighbours what became of a transaction.

use super::*;

impl Server {
    /// Starts (or joins) recovery of `txn` as a transaction replica.
    pub(super) fn recover(&mut self, asker: NodeId, txn: TxnId, ts: u64, final_server: NodeId, cx: &mut Ctx<'_, Msg>) {
        if let Some(p) = self.proposers.get_mut(&txn) {
            p.waiters.insert(asker);
            return;
        }
        if self.backoff.get(&txn).is_some_and(|until| cx.now() < *until) {
            return; // the asker asks again
        }
        let [a, b] = txn_replicas(&self.env.layout, final_server);
        let round = cx.now() / 1_000_000 + 1;
        let ballot = (round << 20) | (self.me.0 as u64 + 1);
        let p = Proposer {
            ts,
            ballot,
            acceptors: [final_server, a, b],
            promises: BTreeMap::new(),
            value: None,
            accepted: BTreeSet::new(),
            waiters: BTreeSet::from([asker]),
            since: cx.now(),
        };
        for n in p.acceptors {
            cx.send(n, Msg::Prepare { txn, ts, ballot });
        }
        self.proposers.insert(txn, p);
    }

    pub(super) fn on_promise(
        &mut self,
        from: NodeId,
        txn: TxnId,
        ballot: Ballot,
        ok: bool,
        accepted: Option<(Ballot, Decision)>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(p) = self.proposers.get_mut(&txn) else {
            return;
        };
        if p.ballot != ballot || p.value.is_some() {
            return;
        }
        if !ok {
            // Someone holds a higher ballot: retry later with a higher one.
            let waiters = std::mem::take(&mut p.waiters);
            self.proposers.remove(&txn);
            self.back_off(txn, cx);
            for w in waiters {
                cx.send(
                    w,
                    Msg::StatusReply {
                        txn,
                        pos: 0,
                        status: Status::Pending,
                    },
                );
            }
            return;
        }
        p.promises.insert(from, accepted);
        if p.promises.len() < 2 {
            return;
        }
        let best = p
            .promises
            .values()
            .flatten()
            .max_by_key(|(b, _)| *b)
            .map(|(_, d)| d.clone());
        let value = best.unwrap_or(Decision {
            commit: false,
            rec: None,
            chain: vec![],
        });
        p.value = Some(value.clone());
        let (ts, acceptors) = (p.ts, p.acceptors);
        for n in acceptors {
            cx.send(
                n,
                Msg::Accept {
                    txn,
                    ts,
                    ballot,
                    decision: value.clone(),
                },
            );
        }
    }

    // ----- outcomes ------------------------------------------------------------
}

impl Server {
    pub(super) fn on_query(&mut self, from: NodeId, txn: TxnId, ts: u64, pos: u32, kill: bool, cx: &mut Ctx<'_, Msg>) {
        let status = if let Some(d) = self.done.get(&txn) {
            if d.commit {
                Status::Committed(d.rec.clone())
            } else {
                Status::Aborted(d.reason.clone().unwrap_or(AbortReason::Aborted))
            }
        } else {
            let mut mine: Vec<(u32, Phase)> = self
                .parts
                .iter()
                .filter(|((t, p), _)| *t == txn && (pos == 0 || *p == pos))
                .map(|(_, p)| (p.pos, p.phase))
                .collect();
            // In position order, not the hash table's (see `decided`): a kill aborts the
            // first position held here.
            mine.sort_unstable_by_key(|(p, _)| *p);
            if mine.iter().any(|(_, ph)| *ph == Phase::Precommitted) {
                Status::Pending
            } else if let Some((p, _)) = mine.first() {
                if kill {
                    let why = AbortReason::QueryNotPrecommitted;
                    self.abort_here(txn, *p, why.clone(), cx);
                    Status::Aborted(why)
                } else {
                    Status::Pending
                }
            } else if self.forgot(txn, ts) || self.restarting() || !kill {
                Status::Unknown
            } else {
                // Never reached here: refuse it from now on.
                let why = AbortReason::QueryNeverReceived;
                self.record_done(txn, false, None, Some(why.clone()), cx);
                Status::Aborted(why)
            }
        };
        cx.send(from, Msg::StatusReply { txn, pos, status });
    }

    pub(super) fn on_recover_req(&mut self, from: NodeId, txn: TxnId, ts: u64, last: NodeId, cx: &mut Ctx<'_, Msg>) {
        match self.done.get(&txn) {
            Some(d) => {
                let status = if d.commit {
                    Status::Committed(d.rec.clone())
                } else {
                    Status::Aborted(d.reason.clone().unwrap_or(AbortReason::Aborted))
                };
                cx.send(from, Msg::StatusReply { txn, pos: 0, status });
            }
            None => self.recover(from, txn, ts, last, cx),
        }
    }

    pub(super) fn on_status(&mut self, from: NodeId, txn: TxnId, asked: u32, status: Status, cx: &mut Ctx<'_, Msg>) {
        match status {
            Status::Committed(rec) => self.decided(txn, true, rec, None, true, cx),
            Status::Aborted(r) => self.decided(txn, false, None, Some(r), true, cx),
            Status::Pending => {
                // The chain after a position is alive if its successor (or the one
                // after) says so about that very position; other answers do not count:
                // our own as a replica, or a server that also holds an earlier position
                // of the same chain (still precommitted there) answering a question about
                // another one.
                let now = cx.now();
                for ((t, pos), p) in self.parts.iter_mut() {
                    let successor = p.next == Some(from) && asked == pos + 1;
                    let after = p.after_next == Some(Some(from)) && asked == pos + 2;
                    if *t == txn && (successor || after) {
                        p.heard_next = now;
                    }
                }
            }
            Status::Unknown => {
                if let Some(b) = self.backups.get_mut(&txn) {
                    if b.primary == from {
                        b.primary_forgot = true;
                    }
                }
            }
        }
    }

    // ----- re-sync after a restart ----------------------------------------------
}
