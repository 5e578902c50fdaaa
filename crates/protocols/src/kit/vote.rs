//! The messages of a commit round among DCs' coordinators, where each DC votes on a
//! transaction's value and every coordinator learns the outcome from a majority of
//! votes: Replicated Commit's Paxos accept round (§4 of its paper) and the Paxos Commit
//! baseline's round among DCs. Both protocols exchange the same two messages; each
//! carries its own transaction value `V`.

use meridian_core::{AbortReason, DcId, TxnId};
use serde::{Deserialize, Serialize};
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
