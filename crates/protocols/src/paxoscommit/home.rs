//! The home coordinator (the coordinator of the client's DC): runs the transaction's
//! program, reads (2PL: under shared locks granted by a majority of DCs; OCC: from its
//! own DC), locks the final writes at a majority of DCs (2PL), picks the commit
//! timestamp and proposes the transaction to every DC (phase 2a at ballot 0), and
//! answers the client once the outcome is known.

use super::*;

impl Server {
    pub(super) fn on_submit(&mut self, from: NodeId, txn: TxnId, call: Call, cx: &mut Ctx<'_, Msg>) {
        if self.done.contains_key(&txn) {
            self.send_result(from, txn, cx);
            return;
        }
        if self.home.contains_key(&txn) || self.acc.contains_key(&txn) {
            return; // a duplicate
        }
        let now = cx.now();
        let pre = match self.cc {
            Cc::Locking => declared(&self.env, &call),
            Cc::Optimistic => vec![],
        };
        self.home.insert(
            txn,
            HTxn {
                client: from,
                exec: Execution::new(call),
                prio: (now, txn),
                reads: vec![],
                seen_ts: 0,
                pre: BTreeMap::new(),
                xlocked: BTreeSet::new(),
                phase: HPhase::Reading { keys: BTreeMap::new() },
                since: now,
            },
        );
        if pre.is_empty() {
            self.home_step(txn, cx);
            return;
        }
        // 2PL with a pre-declared program: every declared key locked and read at every
        // DC in one round, as a 2PL implementer with pre-declared transactions would
        // (issue 54: reading key by key took ~7.7 one-way WAN trips before the commit
        // round of a micro transaction, where one round takes 2).
        let h = self.home.get_mut(&txn).expect("inserted");
        h.phase = HPhase::Prelocking {
            keys: pre.iter().map(|(k, x)| (k.clone(), (*x, BTreeMap::new()))).collect(),
        };
        let prio = h.prio;
        for (key, exclusive) in pre {
            self.lock_everywhere(txn, prio, key, exclusive, true, cx);
        }
    }

    /// Runs the program until it needs reads, finishes or aborts.
    pub(super) fn home_step(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(h) = self.home.get_mut(&txn) else { return };
        // Reads of keys locked and read in the first round are served from there; the
        // rest of a read (`keys`) goes out under new locks (or, OCC, to this DC).
        let (step, keys) = loop {
            let step = crate::kit::client::next_step(&mut h.exec, &self.env.registry);
            let Step::Read(key) = &step else { break (step, vec![]) };
            let batch = if h.exec.batch().is_empty() {
                vec![key.clone()]
            } else {
                h.exec.batch().to_vec()
            };
            let rest = h.serve_first_round(batch);
            if !rest.is_empty() {
                break (step, rest);
            }
        };
        let now = cx.now();
        match step {
            Step::Read(_) => {
                h.since = now;
                h.phase = HPhase::Reading {
                    keys: keys.iter().map(|k| (k.clone(), BTreeMap::new())).collect(),
                };
                let prio = h.prio;
                for key in keys {
                    match self.cc {
                        Cc::Locking => self.lock_everywhere(txn, prio, key, false, false, cx),
                        Cc::Optimistic => {
                            let ds = data_server(&self.env.layout, &key, self.dc);
                            cx.send(
                                ds,
                                Msg::Read {
                                    txn,
                                    key,
                                    home: self.me,
                                },
                            );
                        }
                    }
                }
            }
            Step::Abort(reason) => self.home_abort(txn, reason, cx),
            Step::Wait { .. } => self.home_abort(txn, AbortReason::NotInteractive, cx),
            Step::Done { writes, .. } => {
                let (write_recs, finals) = crate::kit::client::numbered(txn, writes);
                let finals: Vec<(Key, VersionId, Value)> = finals.into_iter().map(|(k, (v, x))| (k, v, x)).collect();
                if finals.is_empty() && h.reads.is_empty() {
                    // Nothing read or written: nothing to agree on. Locks the first
                    // round took for declared keys go everywhere now (stop 68's
                    // review: they stayed until the idle release).
                    let client = h.client;
                    let prelocked = !h.pre.is_empty();
                    self.home.remove(&txn);
                    if prelocked {
                        for p in self.peers() {
                            cx.send(p, Msg::Release { txn });
                        }
                        self.release(txn, cx);
                    }
                    self.done.insert(txn, true);
                    cx.send(
                        client,
                        Msg::Result(TxnResult {
                            txn,
                            commit: true,
                            reason: None,
                            reads: vec![],
                            writes: vec![],
                            commit_start: Some(now),
                        }),
                    );
                    return;
                }
                let unlocked: Vec<Key> = finals
                    .iter()
                    .map(|(k, _, _)| k.clone())
                    .filter(|k| !h.xlocked.contains(k))
                    .collect();
                if self.cc == Cc::Locking && !unlocked.is_empty() {
                    h.since = now;
                    h.phase = HPhase::Locking {
                        writes: finals.clone(),
                        write_recs,
                        granted: unlocked.iter().map(|k| (k.clone(), BTreeSet::new())).collect(),
                    };
                    let prio = h.prio;
                    for key in unlocked {
                        self.lock_everywhere(txn, prio, key, true, false, cx);
                    }
                } else {
                    self.propose(txn, finals, write_recs, cx);
                }
            }
        }
    }

    /// Asks every DC's coordinator for a lock on `key` (2PL), and with `read` for the
    /// key's value once it is held (see `Msg::Lock`).
    fn lock_everywhere(&self, txn: TxnId, prio: Prio, key: Key, exclusive: bool, read: bool, cx: &mut Ctx<'_, Msg>) {
        for c in self.coordinators() {
            let key = key.clone();
            cx.send(
                c,
                Msg::Lock {
                    txn,
                    prio,
                    key,
                    exclusive,
                    read,
                },
            );
        }
    }

    pub(super) fn on_read_reply(&mut self, from: NodeId, r: ReadReply, cx: &mut Ctx<'_, Msg>) {
        let ReadReply {
            txn,
            key,
            version,
            ts,
            value,
        } = r;
        let need = match self.cc {
            Cc::Locking => self.majority(),
            Cc::Optimistic => 1,
        };
        let dc = self.env.layout.dc_of(from);
        let Some(h) = self.home.get_mut(&txn) else { return };
        if let HPhase::Prelocking { keys } = &mut h.phase {
            let Some((_, answers)) = keys.get_mut(&key) else { return };
            answers.insert(dc, (version, ts, value));
            if keys.values().any(|(_, a)| a.len() < need) {
                return;
            }
            // Every declared key is locked and read at a majority: the newest version
            // of each stands, and the program runs against them.
            for (k, (exclusive, answers)) in std::mem::take(keys) {
                let best = answers
                    .into_values()
                    .max_by_key(|(_, t, _)| *t)
                    .expect("answers arrived");
                // A written key's newest version bounds the commit timestamp even if
                // the program never reads it.
                h.seen_ts = h.seen_ts.max(best.1);
                if exclusive {
                    h.xlocked.insert(k.clone());
                }
                h.pre.insert(k, best);
            }
            h.phase = HPhase::Reading { keys: BTreeMap::new() };
            h.since = cx.now();
            self.home_step(txn, cx);
            return;
        }
        let HPhase::Reading { keys } = &mut h.phase else { return };
        let Some(answers) = keys.get_mut(&key) else { return };
        answers.insert(dc, (version, ts, value));
        if keys.values().any(|a| a.len() < need) {
            return;
        }
        // Every key of the batch has its answers: the newest version of each stands.
        let keys = std::mem::take(keys);
        for (k, answers) in keys {
            let (v, t, val) = answers
                .into_values()
                .max_by_key(|(_, t, _)| *t)
                .expect("answers arrived");
            h.reads.push((k.clone(), v, t));
            h.exec.supply(k, val);
        }
        self.home_step(txn, cx);
    }

    pub(super) fn on_locked(&mut self, from: NodeId, txn: TxnId, key: Key, latest: u64, cx: &mut Ctx<'_, Msg>) {
        let maj = self.majority();
        let dc = self.env.layout.dc_of(from);
        let Some(h) = self.home.get_mut(&txn) else { return };
        h.seen_ts = h.seen_ts.max(latest);
        let HPhase::Locking { granted, .. } = &mut h.phase else {
            return;
        };
        let Some(g) = granted.get_mut(&key) else { return };
        g.insert(dc);
        if granted.values().any(|g| g.len() < maj) {
            return;
        }
        let HPhase::Locking { writes, write_recs, .. } = std::mem::replace(&mut h.phase, HPhase::Committing) else {
            return;
        };
        self.propose(txn, writes, write_recs, cx);
    }

    /// Picks the commit timestamp and runs the commit round: this DC votes first (its
    /// forced vote holds the accept requests back until it is on disk), then every other
    /// DC is asked.
    pub(super) fn propose(
        &mut self,
        txn: TxnId,
        writes: Vec<(Key, VersionId, Value)>,
        write_recs: Vec<WriteRec>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(h) = self.home.get_mut(&txn) else { return };
        h.phase = HPhase::Committing;
        let floor = h.reads.iter().map(|(_, _, t)| *t).max().unwrap_or(0).max(h.seen_ts);
        let ts = commit_ts(cx.now(), floor, self.last_ts, self.me);
        self.last_ts = ts;
        let value = Arc::new(TxnValue {
            home: self.me,
            client: h.client,
            ts,
            reads: h.reads.clone(),
            writes,
            write_recs,
            commit_start: cx.now(),
        });
        for p in self.peers() {
            cx.send(
                p,
                Msg::Accept {
                    txn,
                    value: value.clone(),
                },
            );
        }
        let me = self.me;
        self.on_accept(me, txn, value, cx);
    }

    /// Aborts a transaction before its commit round: its locks are released everywhere.
    pub(super) fn home_abort(&mut self, txn: TxnId, reason: AbortReason, cx: &mut Ctx<'_, Msg>) {
        let Some(h) = self.home.remove(&txn) else { return };
        if self.cc == Cc::Locking {
            for p in self.peers() {
                cx.send(p, Msg::Release { txn });
            }
            self.release(txn, cx);
        }
        self.done.insert(txn, false);
        let reads = h
            .reads
            .iter()
            .map(|(k, v, _)| ReadRec {
                key: k.clone(),
                version: *v,
            })
            .collect();
        cx.send(
            h.client,
            Msg::Result(TxnResult {
                txn,
                commit: false,
                reason: Some(reason),
                reads,
                writes: vec![],
                commit_start: None,
            }),
        );
    }

    pub(super) fn on_wound(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if self
            .home
            .get(&txn)
            .is_some_and(|h| !matches!(h.phase, HPhase::Committing))
        {
            self.home_abort(txn, AbortReason::Wounded, cx);
        }
    }

    pub(super) fn on_status(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        if self.done.contains_key(&txn) {
            self.send_result(from, txn, cx);
            return;
        }
        if self.home.contains_key(&txn) || self.acc.contains_key(&txn) {
            return; // still running
        }
        // Unknown here: the request was lost, or this coordinator restarted before its
        // DC voted (its vote is forced before any accept request leaves), so no DC can
        // have accepted it. Abort it for good (forced, so a late duplicate of the
        // request cannot run it after the client was told).
        self.done.insert(txn, false);
        self.log.append_sync(
            Rec::Decided {
                txn,
                commit: false,
                value: None,
            },
            cx,
        );
        if self.cc == Cc::Locking {
            // Locks it may have taken before the restart go now, not at the idle expiry.
            for p in self.peers() {
                cx.send(p, Msg::Release { txn });
            }
            self.release(txn, cx);
        }
        cx.send(
            from,
            Msg::Result(TxnResult {
                txn,
                commit: false,
                reason: Some(AbortReason::CoordinatorRestarted),
                reads: vec![],
                writes: vec![],
                commit_start: None,
            }),
        );
    }

    /// Answers a client about a decided transaction (a lost or repeated answer).
    pub(super) fn send_result(&mut self, to: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let commit = self.done.get(&txn).copied().unwrap_or(false);
        let value = self.answers.get(&txn).map(|(v, _)| v.clone());
        let (reads, writes, start) = match &value {
            Some(v) => (v.read_recs(), v.write_recs.clone(), Some(v.commit_start)),
            // A commit is only reported with what it read and wrote (the history needs
            // them); the home keeps its transactions' values, so this does not happen.
            None if commit => return,
            None => (vec![], vec![], None),
        };
        let reason = (!commit).then_some(AbortReason::AbortedQueried);
        cx.send(
            to,
            Msg::Result(TxnResult {
                txn,
                commit,
                reason,
                reads,
                writes,
                commit_start: start,
            }),
        );
    }
}

/// A call's declared keys with their mode (true: may be written), for 2PL's first round;
/// empty when the program declares nothing. Ranges are left out: the rows a program
/// reads or writes inside one are locked one batch at a time as it runs.
fn declared(env: &Env, call: &Call) -> Vec<(Key, bool)> {
    let Ok(prog) = env.registry.get(&call.program) else {
        return vec![];
    };
    let (Some(keys), Some(writes)) = (prog.declared_keys(&call.args), prog.declared_writes(&call.args)) else {
        return vec![];
    };
    let mut out: BTreeMap<Key, bool> = keys.into_iter().map(|k| (k, false)).collect();
    for k in writes {
        out.insert(k, true);
    }
    out.retain(|k, _| !meridian_txn::is_range(k));
    out.into_iter().collect()
}

impl HTxn {
    /// Supplies the program the reads of `keys` the first round holds (`pre`), in
    /// order, and returns the keys it does not hold.
    fn serve_first_round(&mut self, keys: Vec<Key>) -> Vec<Key> {
        let (held, rest): (Vec<Key>, Vec<Key>) = keys.into_iter().partition(|k| self.pre.contains_key(k));
        for k in held {
            let (v, t, val) = self.pre[&k].clone();
            self.reads.push((k.clone(), v, t));
            self.exec.supply(k, val);
        }
        rest
    }
}
