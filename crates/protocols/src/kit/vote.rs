//! The messages of a commit round among DCs' coordinators, where each DC votes on a
//! transaction's value and every coordinator learns the outcome from a majority of
//! votes: Replicated Commit's Paxos accept round (§4 of its paper) and the Paxos Commit
//! baseline's round among DCs. Both protocols exchange the same two messages; each
//! carries its own transaction value `V`.

use meridian_core::{AbortReason, DcId, TxnId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

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
