//! Log truncation and snapshot transfer (not in the paper, whose logs grow for ever).
//!
//! A replica keeps its log from `replog:keep` slots (10,000 by default) behind its
//! applied point and drops what is older (`Group::log_start`): what those slots did is
//! in its store, its pending PREPAREs (`Group::writes`) and its record of decisions
//! (`Group::decided`). Two readers of old slots are affected:
//! - **A follower that fell further behind** (down, cut off) asks its leader for slots
//!   the leader no longer holds. The leader sends a snapshot instead (`Msg::Snapshot`:
//!   the shard's committed versions, what version GC collected, pending PREPAREs,
//!   decisions and forgetting mark, as of its applied point); the follower takes it
//!   in place of its own state for the shard and resumes catching up from there.
//! - **A candidate** reports the slots from its applied point on in phase 1. A replica
//!   whose log starts above a candidate's applied point cannot report the slots in
//!   between, some of them chosen: it neither pre-votes for nor promises such a
//!   candidate (the election restriction, as in Raft). Some replica can always win:
//!   the one with the highest applied point among a live majority, since a replica
//!   truncates only slots it applied. The laggard catches up from the new leader.

use super::*;

impl Server {
    /// Drops the log slots more than `keep` behind the applied point (each sweep).
    pub(super) fn truncate(&mut self, s: ShardId) {
        let keep = self.keep;
        let g = self.groups.get_mut(&s).expect("group");
        while g.log_start.saturating_add(keep) < g.applied {
            g.log.remove(&g.log_start);
            g.log_start += 1;
        }
    }

    /// Leader: a follower asks for slots from `start`, below this log's start.
    pub(super) fn send_snapshot(&mut self, to: NodeId, s: ShardId, cx: &mut Ctx<'_, Msg>) {
        let layout = self.env.layout.clone();
        let g = &self.groups[&s];
        let mut versions: Vec<(Key, VersionId, Value, u64)> = vec![];
        for (k, vs) in self.store.iter() {
            if layout.shard_of(k) != s {
                continue;
            }
            for v in vs.iter().filter(|v| !v.tentative) {
                versions.push((k.clone(), v.id, v.value.clone(), v.wts));
            }
        }
        versions.sort_by(|a, b| (&a.0, a.3).cmp(&(&b.0, b.3)));
        let collected = self.store.collected_for(|k| layout.shard_of(k) == s);
        let mut writes: Vec<Arc<PrepareEntry>> = g.writes.values().cloned().collect();
        writes.sort_by_key(|p| p.txn);
        let decided: Vec<(TxnId, Decision)> = g.decided.iter().map(|(t, d)| (*t, d.clone())).collect();
        cx.charge_ops((versions.len() + decided.len()) as u32);
        cx.note(format!(
            "replog: shard {} sends a snapshot at slot {} ({} versions) to node {}",
            s.0,
            g.applied,
            versions.len(),
            to.0
        ));
        cx.send(
            to,
            Msg::Snapshot(Box::new(Snapshot {
                shard: s,
                ballot: g.promised,
                applied: g.applied,
                versions,
                collected,
                writes,
                decided,
                forgot_ts: g.forgot_ts,
            })),
        );
    }

    /// Follower: takes its leader's snapshot of a shard it lags behind on.
    pub(super) fn on_snapshot(&mut self, snap: Snapshot, cx: &mut Ctx<'_, Msg>) {
        let now = cx.now();
        let s = snap.shard;
        let Some(g) = self.groups.get(&s) else { return };
        if g.leading || snap.ballot < g.promised || snap.applied <= g.applied || snap.ballot.node == self.me {
            return;
        }
        if snap.ballot > g.promised || g.leader != Some(snap.ballot.node) {
            self.follow(s, snap.ballot, cx);
        }
        cx.charge_ops((snap.versions.len() + snap.decided.len()) as u32);
        for (k, c) in &snap.collected {
            self.store.adopt_collected(k, c);
        }
        for (k, v, val, wts) in snap.versions {
            self.store.install(&k, v, val, wts);
        }
        let g = self.groups.get_mut(&s).expect("group");
        g.writes = snap.writes.into_iter().map(|p| (p.txn, p)).collect();
        g.decided.clear();
        for (t, d) in snap.decided {
            g.decided.insert(t, d, now);
        }
        g.forgot_ts = g.forgot_ts.max(snap.forgot_ts);
        let old: Vec<u64> = g.log.range(..snap.applied).map(|(i, _)| *i).collect();
        for i in old {
            g.log.remove(&i);
        }
        g.log_start = snap.applied;
        g.applied = snap.applied;
        g.chosen = g.chosen.max(snap.applied);
        g.known_ballot = g.known_ballot.max(snap.ballot);
        g.asked_catchup = 0;
        g.last_heard = now;
        self.snapshots_taken += 1;
        cx.note(format!(
            "replog: shard {} took a snapshot at slot {} from node {}",
            s.0, snap.applied, snap.ballot.node.0
        ));
        let (ballot, chosen) = (g.known_ballot, g.chosen);
        self.learn(s, ballot, chosen, cx);
    }
}
