//! The data node (§III-B2–4): snapshot reads over the multi-version store, commit
//! requests that keep writes as tentative versions, decisions that make them final or
//! discard them, reads blocked on tentative versions; and `2pc-deferred`'s
//! participant side (votes, results, cooperative termination).

use super::server::{BTreeMap, Blocked, Prep, Rec};
use super::*;
use meridian_core::{Ctx, Key, NodeId, TxnId, Value, VersionId};

impl Server {
    /// §III-B2: a snapshot read. The first read of a transaction sets the snapshot to
    /// this node's clock (at least the client's floor).
    pub(super) fn on_read(
        &mut self,
        from: NodeId,
        txn: TxnId,
        key: Key,
        snap: Option<u64>,
        floor: u64,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let s = snap.unwrap_or_else(|| self.clock.max(floor));
        // Every timestamp this node validates from now on is above `s`.
        self.bump_clock(s, cx);
        let b = Blocked {
            from,
            txn,
            key,
            snap: s,
            hops: cx.hops(),
        };
        if let Some(b) = self.serve(b, cx) {
            self.blocked.push(b);
        }
    }

    /// Answers a read, or hands it back if the version it must read is tentative.
    pub(super) fn serve(&mut self, b: Blocked, cx: &mut Ctx<'_, Msg>) -> Option<Blocked> {
        self.charge(1, cx);
        let versions = self.store.versions(&b.key);
        let at = versions.iter().rev().find(|v| v.wts <= b.snap);
        if at.is_some_and(|v| v.tentative) {
            return Some(b);
        }
        let newer = versions.iter().any(|v| !v.tentative && v.wts > b.snap);
        let (version, value) = match at {
            Some(v) => (Some(v.id), Some(v.value.clone())),
            None => (None, None),
        };
        cx.send_on_chain(
            b.from,
            Msg::ReadReply {
                txn: b.txn,
                key: b.key,
                version,
                value,
                snap: b.snap,
                newer,
            },
            b.hops,
        );
        None
    }

    /// Re-serves the reads blocked on `keys`.
    fn unblock(&mut self, keys: &[Key], cx: &mut Ctx<'_, Msg>) {
        if self.blocked.is_empty() {
            return;
        }
        let (wake, keep): (Vec<Blocked>, Vec<Blocked>) = std::mem::take(&mut self.blocked)
            .into_iter()
            .partition(|b| keys.contains(&b.key));
        self.blocked = keep;
        for b in wake {
            if let Some(b) = self.serve(b, cx) {
                self.blocked.push(b);
            }
        }
    }

    /// §III-B4: a commit request (or `2pc-deferred`'s prepare).
    pub(super) fn on_commit(&mut self, from: NodeId, c: Commit, cx: &mut Ctx<'_, Msg>) {
        let (txn, snap) = (c.txn, c.snap);
        let two_pc = self.sh.p.mode == Mode::TwoPc;
        if let Some(p) = self.prepared.get(&txn) {
            // A duplicate: repeat the vote (2PC) or ignore.
            if two_pc {
                let ts = p.ts;
                cx.send(from, Msg::Vote { txn, ok: true, ts });
            }
            return;
        }
        if let Some(&(commit, _)) = self.done.get(&txn) {
            if two_pc {
                cx.send(from, Msg::Vote { txn, ok: commit, ts: 0 });
            } else if c.nodes.len() == 1 {
                cx.send(from, Msg::Outcome { txn, commit, ts: 0 });
            }
            return;
        }
        let local = c.nodes.len() == 1;
        // The level of the transaction's decider (`hier-ts` only; `None`: local).
        let decider = if self.sh.p.mode == Mode::Ts {
            self.decider_level(&c.nodes)
        } else {
            None
        };
        let ts = self.leaf_validate(txn, snap, &c.reads, &c.writes, decider, cx);
        let Some(ts) = ts else {
            // Validation failed: nothing is kept; the "no" travels like a yes would.
            self.done.insert(txn, (false, 0));
            if local || two_pc {
                if two_pc && !local {
                    cx.send(from, Msg::Vote { txn, ok: false, ts: 0 });
                } else {
                    cx.send(
                        from,
                        Msg::Outcome {
                            txn,
                            commit: false,
                            ts: 0,
                        },
                    );
                }
            } else {
                self.leaf_up(c, from, false, 0, cx);
            }
            return;
        };
        if local {
            // A local transaction: the leaf validates and decides alone (§III-B5).
            self.install(txn, &c.writes, ts, cx);
            self.locks.release_all(txn);
            self.done.insert(txn, (true, ts));
            self.outcomes.push((txn, true));
            cx.send(from, Msg::Outcome { txn, commit: true, ts });
            let keys: Vec<Key> = c.writes.iter().map(|w| w.0.clone()).collect();
            self.unblock(&keys, cx);
            return;
        }
        for (k, v, val) in &c.writes {
            self.store.write_tentative(k, *v, val.clone(), snap + 1);
        }
        self.charge_validation(c.writes.len(), cx);
        self.log.append_sync(
            Rec::Prepared {
                txn,
                snap,
                ts,
                reads: c.reads.clone(),
                writes: c.writes.clone(),
                nodes: c.nodes.clone(),
                client: from,
            },
            cx,
        );
        if let Some(level) = decider {
            self.pending.add(txn, level, &c.reads, &c.writes);
        }
        self.prepared.insert(
            txn,
            Prep {
                snap,
                ts,
                reads: c.reads.clone(),
                writes: c.writes.clone(),
                nodes: c.nodes.clone(),
                client: from,
                since: cx.now(),
                frozen: false,
                peers: BTreeMap::new(),
            },
        );
        if two_pc {
            cx.send(from, Msg::Vote { txn, ok: true, ts });
        } else {
            self.leaf_up(c, from, true, ts, cx);
        }
    }

    /// Installs a commit's writes at `ts` (abort the tentative versions first) with a
    /// forced APPLIED record, and moves the clock past `ts`.
    fn install(&mut self, txn: TxnId, writes: &[(Key, VersionId, Value)], ts: u64, cx: &mut Ctx<'_, Msg>) {
        for (k, v, val) in writes {
            self.store.abort_tentative(k, *v);
            self.store.install(k, *v, val.clone(), ts);
        }
        self.charge_validation(writes.len(), cx);
        self.log.append_sync(Rec::Applied { txn, commit: true, ts }, cx);
        self.bump_clock(ts, cx);
    }

    /// A decision reaches the data node: tentative versions become final at the commit
    /// timestamp or are discarded, locks are released, blocked reads re-served.
    pub(super) fn apply(&mut self, from: NodeId, txn: TxnId, commit: bool, ts: u64, cx: &mut Ctx<'_, Msg>) {
        let two_pc = self.sh.p.mode == Mode::TwoPc;
        let client = self.prepared.get(&txn).map(|p| p.client);
        if let Some(p) = self.prepared.get(&txn) {
            if p.frozen && two_pc && from == p.client {
                // Frozen by cooperative termination: the peers decide, not the client.
                return;
            }
            let p = self.prepared.remove(&txn).expect("present");
            if commit {
                self.install(txn, &p.writes, ts, cx);
            } else {
                for (k, v, _) in &p.writes {
                    self.store.abort_tentative(k, *v);
                }
                let rec = Rec::Applied {
                    txn,
                    commit: false,
                    ts: 0,
                };
                if two_pc && from == self.me {
                    // Taken in cooperative termination: it leaves this node (to the
                    // client and the peers, below), so it binds this node for good. Kept
                    // in memory only, a crash would leave the transaction prepared and
                    // unfrozen here, free to take a commit its peers have aborted on.
                    self.log.append_sync(rec, cx);
                } else {
                    self.log.append(rec, cx);
                }
            }
            self.locks.release_all(txn);
            self.pending.remove(txn, &p.reads, &p.writes);
            self.done.insert(txn, (commit, ts));
            self.outcomes.push((txn, commit));
            let keys: Vec<Key> = p.writes.iter().map(|w| w.0.clone()).collect();
            self.unblock(&keys, cx);
        } else if let Some(&(was, _)) = self.done.get(&txn) {
            if was != commit && !(two_pc && from != self.me) {
                // Must never happen: reported to the runtime as a split decision.
                self.outcomes.push((txn, commit));
            }
        } else {
            // Decided before the commit request arrived (it was lost or is late).
            self.done.insert(txn, (commit, ts));
        }
        // `2pc-deferred`: the result goes to whoever sent the decision; a decision this
        // node took in cooperative termination (`from` is itself) goes to the client,
        // which may still be collecting votes and would otherwise learn the abort only
        // when it sends its commit request again, a fail-over time later.
        let to = if from == self.me { client } else { Some(from) };
        if let (true, Some(to)) = (two_pc, to) {
            let commit = self.done.get(&txn).is_some_and(|d| d.0);
            cx.send(to, Msg::Ack { txn, commit });
        }
    }

    /// Housekeeping: a transaction prepared for longer than the query timeout asks its
    /// decider (`2pc-deferred`: its client, then its peers).
    pub(super) fn sweep(&mut self, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let q = self.env.timeouts.query;
        let mut due: Vec<(TxnId, Prep)> = self
            .prepared
            .iter()
            .filter(|(_, p)| now.saturating_sub(p.since) >= q)
            .map(|(t, p)| (*t, p.clone()))
            .collect();
        due.sort_by_key(|(t, _)| *t);
        for (txn, p) in due {
            if let Some(pp) = self.prepared.get_mut(&txn) {
                pp.since = now;
            }
            self.ask_decision(txn, &p, true, cx);
        }
    }

    /// Asks for the decision on `txn`, prepared here: `2pc-deferred` asks its client
    /// (which re-sends its decision if it has one) and, with `decide`, starts
    /// cooperative termination with the peers; the others ask the decider, which
    /// answers with its logged decision and, with `decide`, decides abort if it has
    /// none. Without `decide` (a restart: the decision may have been taken, and its
    /// message lost, while this node was down) the question has no side effect.
    pub(super) fn ask_decision(&mut self, txn: TxnId, p: &Prep, decide: bool, cx: &mut Ctx<'_, Msg>) {
        match self.sh.p.mode {
            Mode::TwoPc => {
                cx.send(
                    p.client,
                    Msg::Query(Query {
                        txn,
                        vid: None,
                        nodes: p.nodes.clone(),
                        client: p.client,
                        from_client: false,
                        decide,
                    }),
                );
                if decide {
                    for n in &p.nodes {
                        if *n != self.me {
                            cx.send(*n, Msg::Peer { txn });
                        }
                    }
                }
            }
            Mode::Lock | Mode::Ts => {
                let vid = self.sh.tree.decider(&p.nodes);
                if let Some(v) = vid {
                    let host = self.sh.tree.inner[v.0 as usize].host;
                    let q = Query {
                        txn,
                        vid,
                        nodes: p.nodes.clone(),
                        client: p.client,
                        from_client: false,
                        decide,
                    };
                    if host == self.me {
                        self.on_query(self.me, q, cx);
                    } else {
                        cx.send(host, Msg::Query(q));
                    }
                }
            }
        }
    }

    /// `2pc-deferred` termination: a peer asks what this node knows.
    ///
    /// Both answers bind this node for good, so both are forced to the log before they
    /// leave: the peers may abort on them. An "undecided" freezes the transaction here
    /// (`Rec::Frozen`); a "never prepared" is an abort (`Rec::Applied`), which refuses a
    /// late prepare. Stop 49: both were kept in memory only, and a node restarted after
    /// answering could take its client's commit while its peers had aborted.
    pub(super) fn on_peer(&mut self, from: NodeId, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let state = if self.prepared.contains_key(&txn) {
            self.freeze(txn, cx);
            None
        } else if let Some(&d) = self.done.get(&txn) {
            Some(d)
        } else {
            // Never prepared here: it can never commit (a late prepare is refused).
            self.done.insert(txn, (false, 0));
            self.log.append_sync(
                Rec::Applied {
                    txn,
                    commit: false,
                    ts: 0,
                },
                cx,
            );
            Some((false, 0))
        };
        cx.send(from, Msg::PeerState { txn, state });
    }

    /// `2pc-deferred` termination: prepared `txn` refuses its client's decision from now
    /// on, across a restart too.
    fn freeze(&mut self, txn: TxnId, cx: &mut Ctx<'_, Msg>) {
        let Some(p) = self.prepared.get_mut(&txn) else { return };
        if !p.frozen {
            p.frozen = true;
            self.log.append_sync(Rec::Frozen { txn }, cx);
        }
    }

    /// `2pc-deferred` termination: a peer's answer. Any decision is followed; when every
    /// peer is frozen and undecided, none can apply the client's decision any more and
    /// none has, so abort is safe.
    pub(super) fn on_peer_state(
        &mut self,
        from: NodeId,
        txn: TxnId,
        state: Option<(bool, u64)>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let me = self.me;
        if !self.prepared.contains_key(&txn) {
            return;
        }
        match state {
            Some((c, ts)) => self.apply(me, txn, c, ts, cx),
            None => {
                self.freeze(txn, cx);
                let Some(p) = self.prepared.get_mut(&txn) else { return };
                p.peers.insert(from, None);
                let all = p.nodes.iter().filter(|n| **n != me).all(|n| p.peers.contains_key(n));
                if all {
                    // Every peer is frozen: none takes the client's decision, so each
                    // would hold its locks until its own termination, a query timeout
                    // later. They are told the abort now (it is forced first, in
                    // `apply`); a frozen peer follows a peer's decision.
                    let peers: Vec<NodeId> = p.nodes.iter().copied().filter(|n| *n != me).collect();
                    self.apply(me, txn, false, 0, cx);
                    for n in peers {
                        cx.send(
                            n,
                            Msg::PeerState {
                                txn,
                                state: Some((false, 0)),
                            },
                        );
                    }
                }
            }
        }
    }
}
