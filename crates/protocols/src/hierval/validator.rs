//! Validators (§III-B5, §III-C): the leaf validator each data node runs (locks,
//! validation against the snapshot, commit timestamps), the inner validators that
//! gather their children's partial validations, re-validate (`hier-ts`) and decide,
//! and the decider's answers to queries.

use super::server::{Gather, Rec};
use super::*;
use meridian_core::{Ctx, Key, NodeId, TxnId, Value, VersionId};
use meridian_storage::{Acquired, LockMode};

impl Server {
    /// The leaf validation of §III-B5. `hier-lock` and `2pc-deferred`: lock every key
    /// read (shared) and written (exclusive), NO_WAIT, and check that no key has a
    /// committed version newer than the snapshot. `hier-ts`: no locks; the same check
    /// and the checks against pending transactions of `pending.rs`. Then generate the
    /// leaf's commit timestamp (§III-C). Returns the timestamp, or `None` (locks
    /// released) when the transaction must abort.
    pub(super) fn leaf_validate(
        &mut self,
        txn: TxnId,
        snap: u64,
        reads: &[Key],
        writes: &[(Key, VersionId, Value)],
        decider: Option<u32>,
        cx: &mut Ctx<'_, Msg>,
    ) -> Option<u64> {
        // One lock and one version check per distinct key: a key both read and
        // written (a read-modify-write) is locked exclusive once, not shared and then
        // upgraded, and its versions are checked once (the check is the same).
        let written = |k: &Key| writes.iter().any(|(w, _, _)| w == k);
        let read_only = reads.iter().filter(|k| !written(k));
        self.charge_validation(read_only.clone().count() + writes.len(), cx);
        if self.sh.p.mode == Mode::Ts {
            if !self.ts_leaf_check(snap, reads, writes, decider) {
                if decider.is_some() {
                    self.ts_stats.leaf_aborts += 1;
                }
                return None;
            }
            let ts = self.gen_ts(snap);
            self.bump_clock(ts, cx);
            return Some(ts);
        }
        let prio = (snap, txn);
        let mut ok = true;
        for (k, mode) in read_only
            .map(|k| (k, LockMode::Shared))
            .chain(writes.iter().map(|(k, _, _)| (k, LockMode::Exclusive)))
        {
            if !matches!(self.locks.acquire(txn, prio, k, mode), Acquired::Granted) {
                ok = false;
                break;
            }
            // A committed version above the snapshot: the transaction's read (or the
            // version its write would follow) is stale.
            if self.store.versions(k).iter().any(|v| !v.tentative && v.wts > snap) {
                ok = false;
                break;
            }
        }
        if !ok {
            self.locks.release_all(txn);
            return None;
        }
        let ts = self.gen_ts(snap);
        self.bump_clock(ts, cx);
        Some(ts)
    }

    /// §III-C: `hier-lock` and `2pc-deferred`: the smallest timestamp above the clock
    /// and the snapshot; `hier-ts`: the smallest of this leaf's pre-assigned timestamps
    /// (leaf i of L owns i+1, i+1+L, ...) above both.
    pub(super) fn gen_ts(&self, snap: u64) -> u64 {
        let floor = self.clock.max(snap);
        match self.sh.p.mode {
            Mode::Lock | Mode::TwoPc => floor + 1,
            Mode::Ts => {
                let l = self.sh.tree.leaves.len().max(1) as u64;
                let r = self.leaf.unwrap_or(0) as u64 + 1; // residue of this leaf
                                                           // smallest t > floor with t ≡ r (mod l)
                let base = floor + 1;
                let off = (r % l + l - base % l) % l;
                base + off
            }
        }
    }

    /// A leaf sends its partial validation of commit request `c` from `client` up
    /// (§III-B5).
    pub(super) fn leaf_up(&mut self, c: Commit, client: NodeId, ok: bool, ts: u64, cx: &mut Ctx<'_, Msg>) {
        let Some(to) = self.sh.tree.parent_of_leaf(self.me) else {
            return;
        };
        let (reads, writes) = if self.sh.p.mode == Mode::Ts {
            (c.reads.clone(), c.writes.iter().map(|w| w.0.clone()).collect())
        } else {
            (vec![], vec![])
        };
        self.ts_stats.keys_up += (reads.len() + writes.len()) as u64;
        self.ts_stats.votes_up += 1;
        let host = self.sh.tree.inner[to.0 as usize].host;
        let item = Item::Up(Up {
            to,
            from: Child::Leaf(self.me),
            txn: c.txn,
            ok,
            ts,
            snap: c.snap,
            nodes: c.nodes,
            client,
            reads,
            writes,
        });
        self.route(host, item, cx);
    }

    /// An inner validator receives a child's partial validation.
    pub(super) fn on_up(&mut self, up: Up, cx: &mut Ctx<'_, Msg>) {
        let (v, txn) = (up.to, up.txn);
        if self.decisions.contains_key(&txn) || self.finished.contains(&(v, txn)) {
            return; // decided or passed up already (an early abort, or a duplicate)
        }
        let tree = &self.sh.tree;
        if tree.inner.get(v.0 as usize).is_none_or(|i| i.host != self.me) {
            return; // not hosted here (a misrouted message)
        }
        let g = self.gathers.entry((v, txn)).or_insert_with(|| Gather {
            got: BTreeSet::new(),
            ok: true,
            ts: 0,
            snap: up.snap,
            nodes: up.nodes.clone(),
            client: up.client,
            reads: vec![],
            writes: vec![],
        });
        if !g.got.insert(up.from) {
            return; // duplicate
        }
        g.ok &= up.ok;
        g.ts = g.ts.max(up.ts);
        g.reads.extend(up.reads);
        g.writes.extend(up.writes);
        let expected = tree.involved_children(v, &g.nodes);
        let complete = expected.iter().all(|c| g.got.contains(c));
        let decider = tree.decider(&g.nodes) == Some(v);
        if !g.ok {
            // A violation: told at once (§III-B5), not after the other children.
            let g = self.gathers.remove(&(v, txn)).expect("present");
            if decider {
                self.decide(txn, false, 0, g.nodes, g.client, cx);
            } else {
                self.pass_up(v, txn, false, 0, g, cx);
            }
            return;
        }
        if !complete {
            return;
        }
        let mut g = self.gathers.remove(&(v, txn)).expect("present");
        if self.sh.p.mode == Mode::Ts {
            // §III-B5: validate again with the new (max) timestamp (`pending.rs`).
            g.ok = self.inner_check(v, &g, cx);
            if g.ok {
                self.inner_record(v, txn, &g, decider, cx);
            }
        }
        if decider {
            let (ok, ts) = (g.ok, g.ts);
            self.decide(txn, ok, if ok { ts } else { 0 }, g.nodes, g.client, cx);
        } else {
            let (ok, ts) = (g.ok, g.ts);
            self.pass_up(v, txn, ok, ts, g, cx);
        }
    }

    fn pass_up(&mut self, v: Vid, txn: TxnId, ok: bool, ts: u64, g: Gather, cx: &mut Ctx<'_, Msg>) {
        self.finished.insert((v, txn));
        let Some(parent) = self.sh.tree.inner[v.0 as usize].parent else {
            return;
        };
        self.ts_stats.keys_up += (g.reads.len() + g.writes.len()) as u64;
        self.ts_stats.votes_up += 1;
        let host = self.sh.tree.inner[parent.0 as usize].host;
        let item = Item::Up(Up {
            to: parent,
            from: Child::Inner(v),
            txn,
            ok,
            ts,
            snap: g.snap,
            nodes: g.nodes,
            client: g.client,
            reads: g.reads,
            writes: g.writes,
        });
        self.route(host, item, cx);
    }

    /// The decider: force-logs the decision, tells the client (one message) and every
    /// involved data node (batched).
    pub(super) fn decide(
        &mut self,
        txn: TxnId,
        commit: bool,
        ts: u64,
        nodes: Vec<NodeId>,
        client: NodeId,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if self.decisions.contains_key(&txn) {
            return;
        }
        self.decisions.insert(txn, (commit, ts));
        self.log.append_sync(Rec::Decided { txn, commit, ts }, cx);
        cx.send(client, Msg::Outcome { txn, commit, ts });
        for n in nodes {
            self.route(n, Item::Decide { txn, commit, ts }, cx);
        }
    }

    /// A data node or client asks the decider: the logged decision, or, if undecided
    /// (votes lost, a validator below crashed, the commit request never arrived), abort
    /// now (unless the question is a restarted node's first, without `decide`). A local
    /// transaction's client asks its data node, which answers the same way.
    pub(super) fn on_query(&mut self, from: NodeId, q: Query, cx: &mut Ctx<'_, Msg>) {
        let Query {
            txn,
            vid,
            nodes,
            client,
            from_client,
            decide,
        } = q;
        match vid {
            None => {
                // A local transaction at this data node.
                if self.prepared.contains_key(&txn) {
                    return; // (cannot happen for a local transaction)
                }
                let (commit, ts) = *self.done.entry(txn).or_insert((false, 0));
                cx.send(from, Msg::Outcome { txn, commit, ts });
            }
            Some(_) => {
                if let Some(&(commit, ts)) = self.decisions.get(&txn) {
                    if from_client {
                        cx.send(from, Msg::Outcome { txn, commit, ts });
                    } else if from == self.me {
                        self.apply(self.me, txn, commit, ts, cx);
                    } else {
                        cx.send(from, Msg::Decide { txn, commit, ts });
                    }
                    return;
                }
                if !decide {
                    return;
                }
                self.gathers.retain(|(_, t), _| *t != txn);
                self.decide(txn, false, 0, nodes, client, cx);
            }
        }
    }
}
