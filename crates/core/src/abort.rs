//! Why a transaction aborted: one typed reason per cause, shown (and written into
//! histories) as a fixed sentence, so the history format stays plain text and a reader
//! of another system's history gets [`AbortReason::Other`] for a sentence it does not
//! know. [`AbortReason::retry_helps`] tells a client whether running the same
//! transaction again can commit.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

macro_rules! reasons {
    ($( $(#[$m:meta])* $v:ident => $s:literal, )*) => {
        /// Why a transaction aborted.
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum AbortReason {
            $( $(#[$m])* $v, )*
            /// The program aborted itself (its own words).
            User(String),
            /// The program was called wrongly or misbehaved (bad arguments,
            /// non-determinism).
            ProgramFault(String),
            /// The program could not be run at all (e.g. it is not registered).
            Unrunnable(String),
            /// A sentence this version does not know (a history from elsewhere).
            Other(String),
        }

        impl AbortReason {
            fn sentence(&self) -> Option<&'static str> {
                match self {
                    $( AbortReason::$v => Some($s), )*
                    _ => None,
                }
            }
            /// A short, stable name of the cause (the variant's name; the program's
            /// own words are left out), for metric labels and counts by cause.
            pub fn code(&self) -> &'static str {
                match self {
                    $( AbortReason::$v => stringify!($v), )*
                    AbortReason::User(_) => "User",
                    AbortReason::ProgramFault(_) => "ProgramFault",
                    AbortReason::Unrunnable(_) => "Unrunnable",
                    AbortReason::Other(_) => "Other",
                }
            }
            fn from_sentence(s: &str) -> Option<AbortReason> {
                match s {
                    $( $s => Some(AbortReason::$v), )*
                    _ => None,
                }
            }
        }
    };
}

reasons! {
    // ---- the client
    /// No answer to a read within the read timeout.
    ReadTimedOut => "read timed out",
    /// Replicated Commit: no majority of DCs answered a read in time.
    ReadNoMajority => "read timed out (no majority answered)",
    /// Replicated Commit: a majority of DCs denied a read lock.
    ReadDenied => "read denied",
    /// No shard leader could be found after following redirects. (No protocol gives
    /// it since HACommit's clients wait out a circle of redirects instead, stop 48;
    /// kept so that older histories read back.)
    NoLeader => "no leader for a shard",
    /// CrossStitch: the first server of the chain never acknowledged.
    FirstServerTimeout => "client timed out waiting for the first server",
    /// CrossStitch: the chain did not precommit in time.
    PipelineTimeout => "pipelined commit timed out before precommit",
    /// Replicated Commit: a majority of DCs voted against the commit.
    MajorityRejected => "a majority of DCs rejected",
    /// Replicated Commit: a DC's coordinator no longer knows the transaction's outcome
    /// (it forgot decisions this old); a client that hears it reports the outcome as
    /// unknown, never as an abort.
    OutcomeForgotten => "the outcome is older than a DC remembers",
    /// A participant voted no (without saying why).
    ParticipantVotedNo => "participant voted no",
    /// HACommit: a recovery proposer decided abort.
    RecoveryAborted => "aborted by a recovery proposer",
    /// An interactive transaction's caller sent nothing for too long.
    IdleInteractive => "interactive transaction idle: no operation from its caller",
    /// A script stopped for input on a protocol without interactive transactions.
    NotInteractive => "this protocol does not run interactive transactions (send the whole script)",
    // ---- locks
    /// Wound-wait: an older transaction wounded this one.
    Wounded => "wounded by an older transaction",
    /// A shared lock was refused.
    ReadLockDenied => "read lock denied",
    /// An exclusive lock was refused.
    WriteLockDenied => "write lock denied",
    /// A shared lock taken for a read was lost before commit.
    ReadLockLost => "a read lock was lost",
    /// HACommit: a shared lock was lost (wounded, or the leader changed).
    ReadLockLostOrLeaderChanged => "a read lock was lost (wounded, or the leader changed)",
    /// Replicated Commit: a shared lock was lost before commit.
    ReadLockGone => "read lock lost",
    /// The participant had already aborted the transaction (wounded or timed out).
    AbortedHere => "already aborted here (wounded or timed out)",
    /// The participant had already aborted the transaction.
    AlreadyAbortedHere => "already aborted here",
    /// HACommit: the participant had already aborted the transaction.
    AlreadyAborted => "already aborted",
    /// HACommit: recovery of the transaction started before it voted.
    RecoveryStarted => "recovery started",
    /// The participant no longer runs the transaction (its last operation arrived, or
    /// recovery took over).
    NoLongerExecuting => "transaction no longer executing here",
    /// Replicated Commit: a read arrived after the transaction finished or prepared.
    FinishedOrPreparing => "transaction already finished or preparing here",
    // ---- validation
    /// OCC: a version read was overwritten before validation (also HACommit, whose
    /// leader checks the versions read at its vote: a read may have been answered by a
    /// leader replaced since).
    ReadVersionChanged => "validation failed: a read version changed",
    /// OCC: a key read is locked by a transaction that is preparing.
    LockedByPreparing => "validation failed: a key is locked by a preparing transaction",
    /// Replicated Commit: a newer version was installed since the read.
    NewerVersionInstalled => "a newer version was installed since the read",
    /// Replicated Commit: the commit timestamp is below a version already installed.
    StaleTimestamp => "stale timestamp",
    /// CrossStitch MVTO: a write below a restarted server's restart time.
    MvtoBelowRestart => "mvto: write below the restart time of the server",
    /// CrossStitch MVTO: a later transaction read this transaction's earlier write.
    MvtoLaterReadOfEarlierWrite => "mvto: a later transaction read this transaction's earlier write",
    /// CrossStitch MVTO: the write arrives after a later transaction read the key.
    MvtoWriteAfterLaterRead => "mvto: write arrives after a later read",
    /// CrossStitch MVTO: the transaction is older than the server's low-water mark
    /// for a key, whose versions it would read or follow were collected (version GC).
    MvtoTooOld => "mvto: the versions a transaction this old would see were collected",
    /// CrossStitch: this transaction read an uncommitted write that aborted.
    CascadingAbort => "cascading abort: read an uncommitted write that aborted",
    // ---- coordination, time-outs and failures
    /// Not every vote arrived in time.
    VoteTimeout => "vote timeout",
    /// HACommit: not every vote arrived in time.
    VoteTimedOut => "vote timed out",
    /// Replicated Commit: a DC's prepare did not finish in time.
    PrepareTimedOut => "prepare timed out",
    /// The client went silent before the transaction was decided.
    ClientSilent => "client silent",
    /// The client released the transaction (it aborted).
    ReleasedByClient => "released by client",
    /// The coordinator decided abort.
    AbortedByCoordinator => "aborted by coordinator",
    /// The decision was abort (no more detail travels with it).
    Aborted => "aborted",
    /// The client asked for the outcome and the answer was abort.
    AbortedQueried => "aborted (outcome queried)",
    /// The coordinator restarted without a decision.
    CoordinatorRestarted => "coordinator restarted",
    /// Replicated Commit: a DC's coordinator restarted before voting.
    CoordinatorRestartedBeforeVoting => "coordinator restarted before voting",
    /// The replicated log's coordinator never received its own shard's prepare.
    CoordinatorNeverPrepared => "coordinator never received the prepare",
    /// Replicated Commit: a cohort in a DC did not prepare.
    CohortDidNotPrepare => "a cohort did not prepare",
    /// The replicated log: a participant shard did not prepare.
    ParticipantDidNotPrepare => "a participant did not prepare",
    /// The replicated log: asked for its vote, a cohort shard's leader had never
    /// received the transaction's PREPARE (it was lost with a failed leader, or is
    /// late), so it voted no.
    PrepareLost => "the shard's leader never received the prepare",
    /// The shard's leader changed while the transaction ran.
    LeaderChanged => "leader changed",
    /// HACommit: the participant lost leadership of its group.
    ParticipantLostLeadership => "participant lost leadership",
    /// HACommit: asked for its vote, the shard's leader had never voted on the
    /// transaction (its last operation was lost, with a failed leader or on the way),
    /// so it decided no.
    LastOpLost => "the shard's leader never received the last operation",
    /// HACommit: the participant restarted after the transaction began.
    ParticipantRestarted => "participant restarted since the transaction began",
    /// HACommit: the transaction is no newer than decided transactions a replica has
    /// forgotten, and unknown there (a client whose clock is far behind, or a
    /// transaction that outlived the forgetting period).
    OlderThanForgotten => "older than the decisions a replica has forgotten",
    /// HACommit: recovery took over the participant's state; it cannot vote.
    NoVotePossible => "no vote possible (state taken over by recovery)",
    /// The request reached a replica that does not lead the shard.
    NotLeader => "not the leader",
    /// The replicated log: the leader's lease lapsed.
    LeaseNotHeld => "leader lease not held",
    /// The request reached a node that does not hold the shard.
    ShardNotHeld => "shard not held here",
    /// The server is re-syncing after a restart and serves nothing yet.
    Resyncing => "server re-syncing after a restart",
    /// CrossStitch recovery: no commit had been accepted.
    RecoveryNoCommit => "recovery: no commit was accepted",
    /// CrossStitch: a query found a position that had not precommitted.
    QueryNotPrecommitted => "aborted on a query: the position had not precommitted",
    /// CrossStitch: a query found a position that never received the transaction.
    QueryNeverReceived => "aborted on a query: the position never received the transaction",
    /// CrossStitch: the next position restarted and may have acted on the transaction
    /// before its crash, so it will not run it.
    NextPositionRestarted => "the next position restarted and may have forgotten the transaction",
    /// CrossStitch: a replica of the previous position's puts restarted and may have
    /// acted on the transaction before its crash, so it will not hold them.
    ReplicaRestarted => "a replica of the puts restarted and may have forgotten the transaction",
    /// CrossStitch: the shard's primary was replaced (its keys failed over to its
    /// replica) before the transaction got past it.
    PrimaryFailedOver => "the shard's primary failed over to its replica",
    // ---- Catenae
    /// Catenae: the program does not pre-declare its keys (catenae.md §VI-B).
    Undeclared => "the protocol runs only pre-declared transactions and this program declares no key set",
    /// Catenae: the program touched a key outside its declared set.
    UndeclaredKey => "the program touched a key it did not declare",
    /// Catenae: no majority of DCs executed the transaction with the same dependencies.
    NoMajorityExecution => "no majority of DCs executed it with the same dependencies",
    /// Catenae: the dependencies the DCs decided form a cycle through the transaction.
    DependencyCycle => "the decided dependencies form a cycle",
    /// Catenae, majority mode: the epoch message carrying it reached no majority of DCs
    /// within the delay tolerance, and a majority abandoned it (catenae.md §VIII-B).
    EpochAbandoned => "its epoch message was late beyond the delay tolerance and a majority of DCs abandoned it",
}

impl AbortReason {
    /// Whether running the same transaction again can commit: false when the program
    /// itself decided (a user abort) or cannot run as called; true for conflicts,
    /// time-outs and failures, which a retry may not meet again.
    pub fn retry_helps(&self) -> bool {
        !matches!(
            self,
            AbortReason::User(_)
                | AbortReason::ProgramFault(_)
                | AbortReason::Unrunnable(_)
                | AbortReason::NotInteractive
                | AbortReason::Undeclared
                | AbortReason::UndeclaredKey
        )
    }
}

impl fmt::Display for AbortReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbortReason::User(r) => write!(f, "user abort: {r}"),
            AbortReason::ProgramFault(r) => write!(f, "program fault: {r}"),
            AbortReason::Unrunnable(r) | AbortReason::Other(r) => f.write_str(r),
            known => f.write_str(known.sentence().expect("a unit reason has a sentence")),
        }
    }
}

impl FromStr for AbortReason {
    type Err = std::convert::Infallible;
    /// Reads a sentence back; one this version does not know is [`AbortReason::Other`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(if let Some(r) = AbortReason::from_sentence(s) {
            r
        } else if let Some(r) = s.strip_prefix("user abort: ") {
            AbortReason::User(r.to_string())
        } else if let Some(r) = s.strip_prefix("program fault: ") {
            AbortReason::ProgramFault(r.to_string())
        } else {
            AbortReason::Other(s.to_string())
        })
    }
}

impl Serialize for AbortReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for AbortReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(s.parse().expect("infallible"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_reads_back_as_itself() {
        let samples = [
            AbortReason::Wounded,
            AbortReason::VoteTimeout,
            AbortReason::QueryNeverReceived,
            AbortReason::User("insufficient funds".into()),
            AbortReason::ProgramFault("argument 0".into()),
            AbortReason::Other("deadlock victim".into()),
        ];
        for r in samples {
            let s = r.to_string();
            assert_eq!(s.parse::<AbortReason>().unwrap(), r, "{s}");
            let j = serde_json::to_string(&r).unwrap();
            assert_eq!(j, format!("{s:?}"), "written as its sentence");
            assert_eq!(serde_json::from_str::<AbortReason>(&j).unwrap(), r);
        }
        assert!(AbortReason::Wounded.retry_helps());
        assert!(!AbortReason::User("no".into()).retry_helps());
    }

    /// A metric label names the cause, never a program's own words.
    #[test]
    fn codes_name_the_cause_without_the_programs_words() {
        assert_eq!(AbortReason::ReadTimedOut.code(), "ReadTimedOut");
        assert_eq!(AbortReason::Wounded.code(), "Wounded");
        assert_eq!(AbortReason::User("insufficient funds".into()).code(), "User");
        assert_eq!(AbortReason::Other("x".into()).code(), "Other");
    }
}
