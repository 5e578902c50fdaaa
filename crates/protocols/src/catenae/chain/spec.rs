//! Speculative execution at the chain servers (catenae.md §VI-C: "it attempts to
//! read/write temporary values on a chain server").
//!
//! A transaction reads when it starts accessing its records at a server: each declared
//! key there is read as its order at that server has it, the temporary version of the
//! last writer ahead of it if that writer is still unresolved, else the newest
//! committed version. The values read travel with the backward pass (`pre`), and at
//! each server the program is run from the top against them (programs are
//! deterministic) until it needs a key of a server further down the pass, or ends.
//! Once it ends, its writes are the transaction's temporary versions: the servers it
//! still visits take theirs from the pass, and those it already left are sent theirs
//! (`Temp`). A transaction ordered behind a writer starts only once that writer's
//! temporary versions are known here (Rule 2 with values; the stall valve lets it go
//! ahead without them, reading what is older).
//!
//! Choices where the paper is silent:
//! - Every declared key is read at access, written or not: a chain server cannot tell
//!   which keys the program reads before it has run, so a blind writer also waits
//!   for the value of the writer ahead of it.
//! - A row inside a declared range is read when the program asks for it, at the
//!   range's server, as the range's order there has it. A program that asks for a row
//!   of a server its pass already left (its chain visits shards in ascending order,
//!   backward passes descending) has no speculative result (`Spec::Incomplete`); the
//!   commit re-executes it. No shipped read-write program does.
//! - What the DC computed is its result (`Finished::spec`); validation at commit
//!   decides whether it stands (`validate.rs`).

use super::*;

/// Checks of a reader waiting for a writer's value before it goes ahead without it: at
/// one epoch it asks for the value again (a lost `Temp`), at three it goes ahead.
pub(super) const VALUE_CHECKS: u32 = 2;

impl Chain {
    /// `id` started accessing its records here: read its declared keys, run its program
    /// as far as the values read allow, and note its temporary versions of this
    /// server's keys once it ran to its end (telling the servers its pass left).
    pub(super) fn execute(&mut self, id: TxnId, cx: &mut Ctx<'_, Msg>) {
        let t = self.txns.get_mut(&id).expect("started");
        let chain = t.chain.clone();
        let pos = t.pos;
        let mut pre = std::mem::take(&mut t.pre);
        let was = std::mem::take(&mut t.spec);
        for (k, _) in &chain.keys[pos] {
            if !meridian_txn::is_range(k) && !pre.iter().any(|(p, ..)| p == k) {
                let (v, val) = self.spec_value(id, k, k);
                pre.push((k.clone(), v, val));
            }
        }
        let became_final = matches!(was, Spec::Running);
        let spec = match was {
            Spec::Running => self.run_program(id, &chain, pos, &mut pre),
            other => other,
        };
        let t = self.txns.get_mut(&id).expect("started");
        t.pre = pre;
        t.spec = spec.clone();
        if matches!(spec, Spec::Running) {
            return; // its temporary versions come with `Temp`
        }
        t.valued = true;
        t.tmp = share(&chain, pos, &spec);
        if became_final {
            // The servers the pass left learn their temporary versions now (those
            // still ahead take them from the pass).
            for p in pos + 1..chain.servers.len() {
                cx.send(
                    chain.servers[p],
                    Msg::Temp {
                        txn: id,
                        writes: share(&chain, p, &spec),
                    },
                );
            }
        }
    }

    /// A chain server that the pass left learns `txn`'s temporary versions of its keys.
    pub(super) fn on_temp(&mut self, txn: TxnId, writes: Vec<(Key, VersionId, Value)>, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.txns.get_mut(&txn) else { return };
        if t.valued {
            return;
        }
        t.valued = true;
        t.tmp = writes;
        let keys: Vec<Key> = t.keys().iter().map(|(k, _)| k.clone()).collect();
        self.retry_touching(keys, cx);
    }

    /// Arms the check on `id`, waiting here for a writer's value, unless armed: after an
    /// epoch, doubling up to the stall bound.
    pub(super) fn arm_value_check(&mut self, id: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.txns.get_mut(&id) else { return };
        if t.value_timer {
            return;
        }
        t.value_timer = true;
        let after = (self.cfg.epoch << t.value_asks.min(16)).min(self.cfg.stall);
        let n = self.next_timer;
        self.next_timer += 1;
        self.timers.insert(T_VALUE + n, id);
        cx.set_timer(after, TimerId(T_VALUE + n));
    }

    /// `id` has waited for a writer's value since the check was armed: every writer
    /// ahead of it without its value here is asked for it at the first server of its
    /// chain (the `Temp` may have been lost; the stall valve would otherwise be the
    /// only way on), and the check is armed again.
    pub(super) fn value_check(&mut self, id: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.txns.get_mut(&id) else { return };
        t.value_timer = false;
        if t.st != St::Waiting {
            return;
        }
        t.value_asks += 1;
        if t.value_asks >= VALUE_CHECKS {
            // Waited long enough: the writer ahead is itself held (a Rule 1 or resolver
            // wait, up to the stall bound). Go ahead reading what is older, rather than
            // spread that wait to every key it left; the commit re-executes if the
            // writer's value was needed.
            self.value_waits_cut += 1;
            self.try_start(id, cx);
            return;
        }
        let keys: Vec<Key> = t.keys().iter().map(|(k, _)| k.clone()).collect();
        let mut asked: BTreeSet<TxnId> = BTreeSet::new();
        for k in &keys {
            let Some(q) = self.keys.get(k) else { continue };
            for x in &q.started {
                let Some(w) = self.txns.get(x) else { continue };
                if *x != id && !w.valued && q.fps.get(x).is_some_and(|f| f.1) && asked.insert(*x) {
                    let first = w.chain.servers[0];
                    if first != self.me {
                        cx.send(first, Msg::TempReq { txn: *x });
                    }
                }
            }
        }
        if !asked.is_empty() {
            self.arm_value_check(id, cx);
        }
    }

    /// A server where `txn` is waited on asks for its temporary versions again: answered
    /// once its execution is final here (the first server of its chain).
    pub(super) fn on_temp_req(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.txns.get(&txn) else { return };
        if matches!(t.spec, Spec::Running) {
            return;
        }
        if let Some(p) = t.chain.servers.iter().position(|n| *n == from) {
            cx.send(
                from,
                Msg::Temp {
                    txn,
                    writes: share(&t.chain, p, &t.spec),
                },
            );
        }
    }

    /// The value of `key` (declared as `decl` here: the key itself or a range covering
    /// it) as `id`'s place in `decl`'s order has it: the temporary version of the last
    /// unresolved writer ahead of it that wrote the key, else the newest committed one.
    /// A writer ahead whose program has not ended is passed over (only a stalled
    /// transaction reads past one).
    fn spec_value(&self, id: TxnId, decl: &Key, key: &Key) -> (Option<VersionId>, Option<Value>) {
        if let Some(q) = self.keys.get(decl) {
            let end = q.started.iter().position(|x| *x == id).unwrap_or(q.started.len());
            for x in q.started[..end].iter().rev() {
                if !q.fps.get(x).is_some_and(|f| f.1) {
                    continue; // a reader
                }
                let Some(xt) = self.txns.get(x).filter(|xt| xt.valued) else {
                    continue;
                };
                if let Some((_, v, val)) = xt.tmp.iter().find(|(k, ..)| k == key) {
                    return (Some(*v), Some(val.clone()));
                }
            }
        }
        match self.store.versions(key).iter().rev().find(|v| !v.tentative) {
            Some(v) => (Some(v.id), Some(v.value.clone())),
            None => (None, None),
        }
    }

    /// Runs `id`'s program from the top against the values read so far, reading here
    /// the rows it asks for inside this server's declared ranges.
    fn run_program(&self, id: TxnId, chain: &ChainTxn, pos: usize, pre: &mut Vec<RoRead>) -> Spec {
        let mut exec = Execution::new(chain.call.clone());
        let mut reads: Vec<RoRead> = vec![];
        let declared_at = |p: usize, k: &Key| chain.keys[p].iter().find(|(d, _)| meridian_txn::covers(d, k)).cloned();
        loop {
            match crate::kit::client::next_step(&mut exec, &self.env.registry) {
                Step::Read(first) => {
                    let mut batch: Vec<Key> = exec.batch().to_vec();
                    if batch.is_empty() {
                        batch.push(first);
                    }
                    let mut progressed = false;
                    for k in batch {
                        let read = if let Some(r) = pre.iter().find(|(p, ..)| *p == k) {
                            r.clone()
                        } else if let Some((decl, _)) = declared_at(pos, &k) {
                            let (v, val) = self.spec_value(id, &decl, &k);
                            pre.push((k.clone(), v, val.clone()));
                            (k.clone(), v, val)
                        } else if (0..pos).any(|p| declared_at(p, &k).is_some()) {
                            continue; // read further down the pass
                        } else if (pos + 1..chain.servers.len()).any(|p| declared_at(p, &k).is_some()) {
                            return Spec::Incomplete; // a row of a server the pass left
                        } else {
                            return done(reads, Err(AbortReason::UndeclaredKey));
                        };
                        exec.supply(k, read.2.clone());
                        reads.push(read);
                        progressed = true;
                    }
                    if !progressed {
                        return Spec::Running;
                    }
                }
                Step::Done { writes, .. } => {
                    let undeclared = writes.iter().any(|(k, _)| {
                        !chain
                            .keys
                            .iter()
                            .flatten()
                            .any(|(d, w)| *w && meridian_txn::covers(d, k))
                    });
                    if undeclared {
                        return done(reads, Err(AbortReason::UndeclaredKey));
                    }
                    return done(reads, Ok(writes));
                }
                Step::Abort(r) => return done(reads, Err(r)),
                Step::Wait { .. } => return done(reads, Err(AbortReason::NotInteractive)),
            }
        }
    }
}

fn done(reads: Vec<RoRead>, outcome: Result<Vec<(Key, Value)>, AbortReason>) -> Spec {
    Spec::Done(Arc::new(SpecResult { reads, outcome }))
}

/// The temporary versions a final speculative execution leaves at the chain's server
/// `pos`: its last write of each key declared there (the version a commit would
/// install: `seq` is the write's place in program order).
fn share(chain: &ChainTxn, pos: usize, spec: &Spec) -> Vec<(Key, VersionId, Value)> {
    let Some(Ok(writes)) = spec.result().map(|r| &r.outcome) else {
        return vec![];
    };
    let mut finals: BTreeMap<&Key, (VersionId, &Value)> = BTreeMap::new();
    for (i, (k, v)) in writes.iter().enumerate() {
        if chain.keys[pos].iter().any(|(d, w)| *w && meridian_txn::covers(d, k)) {
            finals.insert(
                k,
                (
                    VersionId {
                        txn: chain.id,
                        seq: i as u32,
                    },
                    v,
                ),
            );
        }
    }
    finals
        .into_iter()
        .map(|(k, (v, val))| (k.clone(), v, val.clone()))
        .collect()
}
