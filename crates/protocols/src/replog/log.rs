//! Multi-Paxos for one shard's log (replicated-commit.md §4.1, Spanner-style): the
//! leader proposes entries into slots, followers accept, a majority chooses, every
//! replica applies chosen entries in slot order; catch-up and heartbeats.

use super::*;

impl Server {
    /// Leader: appends an entry to the group's log and replicates it.
    ///
    /// Only the leader proposes: a node that does not lead has no slot to assign and
    /// no ballot of its own (its `promised` is its leader's), so a proposal from it is
    /// dropped, never sent under another node's ballot.
    pub(super) fn propose(&mut self, s: ShardId, entry: Entry, cx: &mut Ctx<'_, Msg>) {
        let me = self.me;
        let g = self.groups.get_mut(&s).expect("group");
        if !g.leading {
            return;
        }
        let slot = g.next_slot;
        g.next_slot += 1;
        self.send_accept(s, slot, entry, cx);
        let g = self.groups.get_mut(&s).expect("group");
        g.votes.entry(slot).or_default().insert(me);
        self.check_chosen(s, slot, cx);
    }

    pub(super) fn send_accept(&mut self, s: ShardId, slot: u64, entry: Entry, cx: &mut Ctx<'_, Msg>) {
        let me = self.me;
        let g = self.groups.get_mut(&s).expect("group");
        let ballot = g.promised;
        cx.charge_log_sync(64 + entry_size(&entry));
        g.log.insert(slot, (ballot, entry.clone()));
        for r in g.replicas.iter().filter(|r| **r != me) {
            cx.send(*r, g.accept(s, slot, &entry));
        }
    }

    pub(super) fn on_accept(&mut self, from: NodeId, a: Accept, cx: &mut Ctx<'_, Msg>) {
        let Accept {
            shard: s,
            ballot,
            slot,
            entry,
            chosen,
        } = a;
        if !self.hear_leader(from, s, ballot, false, cx) {
            return;
        }
        let g = self.groups.get_mut(&s).expect("group");
        cx.charge_log_sync(64 + entry_size(&entry));
        g.log.insert(slot, (ballot, entry));
        cx.send(from, Msg::Accepted { shard: s, ballot, slot });
        self.learn(s, ballot, chosen, cx);
    }

    /// Shard `s` hears its leader `from` under `ballot` (an `Accept` or a heartbeat); false
    /// if the message is not to be acted on.
    ///
    /// A ballot has one proposer: a message under it from anyone else is not the
    /// leader's (an `Accept` must not replace what the leader put in that slot, possibly
    /// a chosen entry). A ballot below this replica's promise is refused with a `Nack`.
    /// A newer ballot or another leader is followed, as is any heartbeat that reaches a
    /// node that leads (`step_down`). The leader was heard: the election clock restarts.
    fn hear_leader(
        &mut self,
        from: NodeId,
        s: ShardId,
        ballot: Ballot,
        step_down: bool,
        cx: &mut Ctx<'_, Msg>,
    ) -> bool {
        let now = cx.now();
        let Some(g) = self.groups.get(&s) else { return false };
        if from != ballot.node {
            return false;
        }
        if ballot < g.promised {
            let promised = g.promised;
            cx.send(from, Msg::Nack { shard: s, promised });
            return false;
        }
        if ballot > g.promised || g.leader != Some(ballot.node) || (step_down && g.leading) {
            self.follow(s, ballot, cx);
        }
        let g = self.groups.get_mut(&s).expect("group");
        g.last_heard = now;
        g.elect_after = 0;
        true
    }

    /// Adopts `ballot`'s proposer as leader (stepping down if this node led).
    pub(super) fn follow(&mut self, s: ShardId, ballot: Ballot, cx: &mut Ctx<'_, Msg>) {
        let was_leading = self.leads(s);
        let g = self.groups.get_mut(&s).expect("group");
        g.promised = ballot;
        g.leader = Some(ballot.node);
        g.leading = false;
        g.election = None;
        g.votes.clear();
        if was_leading {
            self.drop_leader_state(s, cx);
        }
    }

    /// Follower: slots below `chosen` accepted under `ballot` are chosen; apply them.
    pub(super) fn learn(&mut self, s: ShardId, ballot: Ballot, chosen: u64, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let g = self.groups.get_mut(&s).expect("group");
        if g.leading {
            return;
        }
        if ballot > g.known_ballot || chosen > g.chosen {
            g.known_ballot = g.known_ballot.max(ballot);
            g.chosen = g.chosen.max(chosen);
        }
        loop {
            let g = self.groups.get_mut(&s).expect("group");
            if g.applied >= g.chosen {
                break;
            }
            match g.log.get(&g.applied) {
                Some((b, e)) if *b == g.known_ballot => {
                    let e = e.clone();
                    self.apply(s, e, cx);
                }
                _ => {
                    if now.saturating_sub(g.asked_catchup) >= self.env.timeouts.sweep {
                        g.asked_catchup = now;
                        if let Some(l) = g.leader {
                            let from = g.applied;
                            cx.send(l, Msg::CatchUp { shard: s, from });
                        }
                    }
                    break;
                }
            }
        }
    }

    pub(super) fn on_accepted(&mut self, from: NodeId, s: ShardId, ballot: Ballot, slot: u64, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get_mut(&s) else { return };
        if !g.leading || ballot != g.promised || slot < g.chosen {
            return;
        }
        g.votes.entry(slot).or_default().insert(from);
        self.check_chosen(s, slot, cx);
    }

    pub(super) fn check_chosen(&mut self, s: ShardId, _slot: u64, cx: &mut Ctx<'_, Msg>) {
        loop {
            let g = self.groups.get_mut(&s).expect("group");
            let maj = g.majority();
            let slot = g.chosen;
            if g.votes.get(&slot).is_none_or(|v| v.len() < maj) {
                break;
            }
            g.votes.remove(&slot);
            g.chosen += 1;
            let entry = g.log[&slot].1.clone();
            self.apply(s, entry, cx);
        }
    }

    /// Applies the next chosen entry (every replica, in slot order).
    pub(super) fn apply(&mut self, s: ShardId, entry: Entry, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let g = self.groups.get_mut(&s).expect("group");
        g.applied += 1;
        let leading = g.leading;
        match entry {
            // A PREPARE chosen after its transaction's outcome (a coordinator's ABORT
            // can precede its own share's late PREPARE) is moot: its writes are not
            // kept (they would wait for a decision that came already).
            Entry::Prepare(p) if g.decided.contains_key(&p.txn) => {}
            Entry::Prepare(p) => {
                g.writes.insert(p.txn, p.clone());
                if leading {
                    self.prepare_chosen(s, p, cx);
                }
            }
            Entry::Commit(txn) => {
                let p = g.writes.remove(&txn);
                g.record_decision(s, txn, true, p.as_deref(), now);
                if let Some(p) = p {
                    cx.charge_ops(p.writes.len() as u32);
                    for (k, v, val) in &p.writes {
                        if !self.store.contains(k, *v) {
                            self.store.install_latest(k, *v, val.clone());
                        }
                    }
                }
                if leading {
                    self.finished(s, txn, true, cx);
                }
            }
            Entry::Abort(txn) => {
                let p = g.writes.remove(&txn);
                g.record_decision(s, txn, false, p.as_deref(), now);
                if leading {
                    self.finished(s, txn, false, cx);
                }
            }
            Entry::Forget(txns) => {
                g.forget(&txns);
            }
            Entry::Noop => {}
        }
    }

    pub(super) fn on_catchup(&mut self, from: NodeId, s: ShardId, start: u64, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get(&s) else { return };
        if !g.leading {
            return;
        }
        if start < g.log_start {
            return self.send_snapshot(from, s, cx);
        }
        let end = g.chosen.min(start + CATCHUP_BATCH);
        let entries: Vec<Entry> = (start..end)
            .filter_map(|i| g.log.get(&i).map(|e| e.1.clone()))
            .collect();
        if entries.len() as u64 != end.saturating_sub(start) {
            return;
        }
        let ballot = g.promised;
        cx.send(
            from,
            Msg::Chosen {
                shard: s,
                ballot,
                from: start,
                entries,
            },
        );
    }

    pub(super) fn on_chosen(
        &mut self,
        s: ShardId,
        ballot: Ballot,
        start: u64,
        entries: Vec<Entry>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(g) = self.groups.get_mut(&s) else { return };
        if g.leading || ballot < g.promised || start > g.applied {
            return;
        }
        for (i, e) in entries.into_iter().enumerate() {
            let slot = start + i as u64;
            let g = self.groups.get_mut(&s).expect("group");
            if slot < g.applied {
                continue;
            }
            g.log.insert(slot, (ballot, e.clone()));
            g.chosen = g.chosen.max(slot + 1);
            self.apply(s, e, cx);
        }
        let g = self.groups.get_mut(&s).expect("group");
        g.asked_catchup = 0;
        g.known_ballot = g.known_ballot.max(ballot);
    }

    // ------------------------------------------------------------ leases and elections

    pub(super) fn heartbeat(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let me = self.me;
        let g = self.groups.get_mut(&s).expect("group");
        for r in g.replicas.clone() {
            if r != me {
                cx.send(
                    r,
                    Msg::Heartbeat {
                        shard: s,
                        ballot: g.promised,
                        chosen: g.chosen,
                        sent: now,
                    },
                );
            }
        }
    }

    /// Leader: re-sends `Accept` for slots not yet chosen to replicas that have not
    /// accepted them (lost messages, a replica that was down).
    pub(super) fn resend_unchosen(&mut self, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let me = self.me;
        let g = &self.groups[&s];
        for slot in g.chosen..g.next_slot {
            let Some((_, entry)) = g.log.get(&slot) else { continue };
            let voted = g.votes.get(&slot);
            for r in &g.replicas {
                if *r != me && !voted.is_some_and(|v| v.contains(r)) {
                    cx.send(*r, g.accept(s, slot, entry));
                }
            }
        }
    }

    pub(super) fn on_heartbeat(
        &mut self,
        from: NodeId,
        s: ShardId,
        ballot: Ballot,
        chosen: u64,
        sent: Time,
        cx: &mut Ctx<'_, Msg>,
    ) {
        if !self.hear_leader(from, s, ballot, true, cx) {
            return;
        }
        cx.send(from, Msg::HeartbeatAck { shard: s, ballot, sent });
        self.learn(s, ballot, chosen, cx);
    }

    pub(super) fn on_heartbeat_ack(&mut self, from: NodeId, s: ShardId, ballot: Ballot, sent: Time) {
        let lease = self.env.timeouts.lease;
        let me = self.me;
        let Some(g) = self.groups.get_mut(&s) else { return };
        if !g.leading || ballot != g.promised {
            return;
        }
        let a = g.acks.entry(from).or_insert(0);
        *a = (*a).max(sent);
        // The lease holds until `lease` after the heartbeat a majority has acknowledged.
        let mut times: Vec<Time> = g.acks.iter().filter(|(n, _)| **n != me).map(|(_, t)| *t).collect();
        times.sort_unstable_by(|a, b| b.cmp(a));
        let need = g.majority() - 1;
        if need == 0 {
            g.lease_until = Time::MAX;
        } else if times.len() >= need {
            g.lease_until = g.lease_until.max(times[need - 1] + lease);
        }
    }

    pub(super) fn on_nack(&mut self, s: ShardId, promised: Ballot, cx: &mut Ctx<'_, Msg>) {
        let Some(g) = self.groups.get(&s) else { return };
        if promised > g.promised {
            self.follow(s, promised, cx);
            let now = cx.now();
            let g = self.groups.get_mut(&s).expect("group");
            g.last_heard = now;
        }
    }
}

pub(super) fn entry_size(e: &Entry) -> u64 {
    match e {
        Entry::Prepare(p) => {
            48 + p.reads.iter().map(|k| k.len() as u64).sum::<u64>()
                + p.writes
                    .iter()
                    .map(|(k, _, v)| 16 + (k.len() + v.0.len()) as u64)
                    .sum::<u64>()
        }
        Entry::Forget(t) => 16 + 16 * t.len() as u64,
        _ => 16,
    }
}
