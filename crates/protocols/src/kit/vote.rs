//! The messages of a commit round among DCs' coordinators, where each DC votes on a
//! transaction's value and every coordinator learns the outcome from a majority of
//! votes: Replicated Commit's Paxos accept round (§4 of its paper) and the Paxos Commit
//! baseline's round among DCs. Both protocols exchange the same two messages, each
//! with its own transaction value `V`, and keep the same state of a round at each DC's
//! coordinator ([`Round`]). What differs stays in the protocol: how a DC reaches its
//! vote (RC prepares its shards, Paxos Commit validates against its lock table), what
//! a vote carries, and what installing a commit in a DC means.

use meridian_core::{AbortReason, DcId, NodeId, Time, TxnId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A participant's answer to a two-phase commit's PREPARE, to its coordinator: the 2PC
/// baseline's vote (`twopc::Msg::Vote`), and a cohort's answer inside a DC in Replicated
/// Commit (`rc::Msg::Prepared`), whose DC vote is a 2PC among its shards.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prepared {
    /// Transaction.
    pub txn: TxnId,
    /// Prepared (a yes vote)?
    pub yes: bool,
    /// Why not.
    pub reason: Option<AbortReason>,
}

impl Prepared {
    /// A yes vote on `txn`.
    pub fn yes(txn: TxnId) -> Self {
        Prepared {
            txn,
            yes: true,
            reason: None,
        }
    }

    /// A no vote on `txn`, for `reason`.
    pub fn no(txn: TxnId, reason: AbortReason) -> Self {
        Prepared {
            txn,
            yes: false,
            reason: Some(reason),
        }
    }
}

/// A DC's vote, sent by its coordinator to the client or the other DCs' coordinators.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DcVote<V> {
    /// Transaction.
    pub txn: TxnId,
    /// The voting DC.
    pub dc: DcId,
    /// Accepted?
    pub accept: bool,
    /// Why not.
    pub reason: Option<AbortReason>,
    /// The value (with accepts, so a DC that lost the accept request can vote and
    /// learners can install it).
    pub value: Option<Arc<V>>,
    /// The sender wants the receiver's vote back.
    pub reply: bool,
    /// The transaction's commit timestamp, where the protocol has one and the sender
    /// knows it (Replicated Commit: a reject names it, so that a coordinator that
    /// forgot decisions this old recognises the transaction without its value).
    #[serde(default)]
    pub ts: Option<u64>,
}

impl<V> DcVote<V> {
    /// The same vote, naming the transaction's commit timestamp.
    pub fn with_ts(self, ts: Option<u64>) -> Self {
        DcVote { ts, ..self }
    }

    /// A DC's vote as it is cast, for the DCs (and the client) that wait for it: no
    /// answer wanted back.
    pub fn cast(txn: TxnId, dc: DcId, accept: bool, reason: Option<AbortReason>, value: Option<Arc<V>>) -> Self {
        DcVote {
            txn,
            dc,
            accept,
            reason,
            value,
            reply: false,
            ts: None,
        }
    }
}

/// The outcome, from a coordinator that knows it to whoever asked after it was decided
/// (or has not applied it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decided<V> {
    /// Transaction.
    pub txn: TxnId,
    /// Committed?
    pub commit: bool,
    /// The value, if committed (so a peer can install it).
    pub value: Option<Arc<V>>,
}

/// A DC coordinator's state of one transaction's commit round: acceptor (its DC's
/// vote), learner (the votes heard, the outcome) and the install that follows a commit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Round<V> {
    /// The transaction's value, once known here.
    pub value: Option<Arc<V>>,
    /// This DC's vote, once cast (force-logged before it is sent).
    pub my_vote: Option<bool>,
    /// Votes known here, this DC's included: DC → accepted?
    pub votes: BTreeMap<DcId, bool>,
    /// Why this DC (or a peer) refused.
    pub reason: Option<AbortReason>,
    /// The outcome, once learned.
    pub decided: Option<bool>,
    /// Nodes of this DC that installed the commit.
    pub acks: BTreeSet<NodeId>,
    /// DCs known to have installed the commit.
    pub applied: BTreeSet<DcId>,
    /// When the round last moved (or was last nudged): the sweep's clock.
    pub since: Time,
}

/// What a coordinator's sweep owes a round that has waited (see [`Round::due`]), in
/// the order a sweep serves them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Due {
    /// This DC never voted within the vote timeout: it votes no.
    Expire,
    /// Voted, undecided: ask the peers not heard from for their votes.
    Nudge,
    /// Committed, not installed everywhere: tell again those that have not.
    Resend,
}

impl<V> Round<V> {
    /// A round that knows `value` (if anything) from time `now`.
    pub fn new(value: Option<Arc<V>>, now: Time) -> Self {
        Round {
            value,
            my_vote: None,
            votes: BTreeMap::new(),
            reason: None,
            decided: None,
            acks: BTreeSet::new(),
            applied: BTreeSet::new(),
            since: now,
        }
    }

    /// Keeps `value` if none is known yet (every copy of a transaction's value is the
    /// same: the first one learned stays).
    pub fn learn(&mut self, value: Option<Arc<V>>) {
        if self.value.is_none() {
            self.value = value;
        }
    }

    /// Replays this DC's logged vote (with the value it was cast on, if logged).
    pub fn restore_vote(&mut self, dc: DcId, accept: bool, value: Option<Arc<V>>) {
        if value.is_some() {
            self.value = value;
        }
        self.my_vote = Some(accept);
        self.votes.insert(dc, accept);
    }

    /// Replays a logged commit with its value.
    pub fn restore_commit(&mut self, value: Arc<V>) {
        self.value = Some(value);
        self.decided = Some(true);
    }

    /// What the votes decide among `dcs` DCs, if the round is not decided yet
    /// ([`verdict`]).
    pub fn verdict(&self, dcs: usize) -> Option<bool> {
        match self.decided {
            Some(_) => None,
            None => verdict(&self.votes, self.value.is_some(), dcs),
        }
    }

    /// Node `from` of DC `dc` installed the commit. `installers` lists the nodes of
    /// `dc` that install it (from the value). True when this completes the DC's install:
    /// the DC is then counted in `applied`, and the caller tells the peers. Ignored
    /// before a commit is decided.
    pub fn installed<I: IntoIterator<Item = NodeId>>(
        &mut self,
        from: NodeId,
        dc: DcId,
        installers: impl FnOnce(&V) -> I,
    ) -> bool {
        if self.decided != Some(true) {
            return false;
        }
        self.acks.insert(from);
        let all = self
            .value
            .as_deref()
            .map(|v| installers(v).into_iter().all(|n| self.acks.contains(&n)))
            .unwrap_or(true);
        all && self.applied.insert(dc)
    }

    /// Whether the round owes the sweep anything at `now`: a vote due `vote` after it
    /// started (only where the protocol expires unvoted rounds), a nudge or a resend
    /// every `query`. A nudge or resend restarts the round's clock.
    pub fn due(&mut self, now: Time, query: Time, vote: Option<Time>) -> Option<Due> {
        let waited = now.saturating_sub(self.since);
        let due = match (self.decided, self.my_vote) {
            (None, None) if vote.is_some_and(|v| waited > v) => return Some(Due::Expire),
            (None, Some(_)) if waited >= query => Due::Nudge,
            (Some(true), _) if waited >= query => Due::Resend,
            _ => return None,
        };
        self.since = now;
        Some(due)
    }

    /// A commit's outcome, with its value, for each of `peers` whose DC (`dc_of`) has
    /// not confirmed installing it: down, cut off, or never told, it is told again until
    /// it confirms.
    pub fn tell_again(
        &self,
        txn: TxnId,
        peers: Vec<NodeId>,
        dc_of: impl Fn(NodeId) -> DcId,
    ) -> Vec<(NodeId, Decided<V>)> {
        let Some(v) = &self.value else { return vec![] };
        peers
            .into_iter()
            .filter(|p| !self.applied.contains(&dc_of(*p)))
            .map(|p| {
                let d = Decided {
                    txn,
                    commit: true,
                    value: Some(v.clone()),
                };
                (p, d)
            })
            .collect()
    }

    /// This DC's vote on `txn`, to send (with `value`, as the protocol's votes carry
    /// it), if it voted.
    pub fn my_ballot(&self, txn: TxnId, dc: DcId, value: Option<Arc<V>>, reply: bool) -> Option<DcVote<V>> {
        let accept = self.my_vote?;
        Some(DcVote {
            txn,
            dc,
            accept,
            reason: self.reason.clone(),
            value,
            reply,
            ts: None,
        })
    }
}

/// What the DCs' `votes` (DC → accepted?) decide among `dcs` DCs, if anything yet: a
/// commit once a majority accepted (and `value_known`: a learner cannot install a
/// value it never got), an abort once more DCs refused than a majority can spare.
pub fn verdict(votes: &BTreeMap<DcId, bool>, value_known: bool, dcs: usize) -> Option<bool> {
    let maj = dcs / 2 + 1;
    let yes = votes.values().filter(|v| **v).count();
    let no = votes.len() - yes;
    if yes >= maj && value_known {
        Some(true)
    } else if no > dcs - maj {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_majority_decides_and_a_commit_needs_the_value() {
        let votes = |v: &[bool]| v.iter().enumerate().map(|(i, a)| (DcId(i as u16), *a)).collect();
        assert_eq!(verdict(&votes(&[true, true]), true, 3), Some(true));
        assert_eq!(verdict(&votes(&[true, true]), false, 3), None);
        assert_eq!(verdict(&votes(&[true, false]), true, 3), None);
        assert_eq!(verdict(&votes(&[false, false]), true, 3), Some(false));
        assert_eq!(verdict(&votes(&[true, true, false]), true, 5), None);
        assert_eq!(verdict(&votes(&[false, false, true]), true, 5), None);
        assert_eq!(verdict(&votes(&[false, false, false]), true, 5), Some(false));
    }
}
