//! Catenae's messages: client requests, epoch messages among coordinators (transaction
//! distribution and validation payloads), the two passes of a transaction chain, the
//! resolver's queries, commits and read-only reads.

use super::*;

/// Key, version read, value read: one read of a read-only transaction.
pub type RoRead = (Key, Option<VersionId>, Option<Value>);
/// A committed execution: reads (key, version) and writes (program order).
pub type Executed = (Vec<(Key, Option<VersionId>)>, Vec<(Key, Value)>);

/// One DC's speculative execution of a read-write transaction at its chain servers
/// (§VI-C): what the program read there (in program order, with the version and
/// value each read saw, speculative writes of the dependencies included) and what it
/// wrote, or why the program stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpecResult {
    /// The program's reads, in the order it made them.
    pub reads: Vec<RoRead>,
    /// Its writes in program order, or the abort its program ended in.
    pub outcome: Result<Vec<(Key, Value)>, AbortReason>,
}

/// Where a transaction's speculative execution stands as its backward pass moves on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Spec {
    /// The program still needs reads from servers further down the pass.
    #[default]
    Running,
    /// The program ran to its end.
    Done(Arc<SpecResult>),
    /// The program needs a row (inside a declared range) of a server the pass already
    /// left, or the execution is not known (a coordinator's successor learning that a
    /// chain finished under its predecessor): no result here; the commit re-executes.
    Incomplete,
}

impl Spec {
    /// The result, once the program ran to its end.
    pub fn result(&self) -> Option<&Arc<SpecResult>> {
        match self {
            Spec::Done(r) => Some(r),
            _ => None,
        }
    }
}

/// One transaction as the transaction-distribution payload carries it (§V-A).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TxnEntry {
    /// The transaction.
    pub id: TxnId,
    /// The program and its arguments.
    pub call: Call,
    /// The client to answer (home DC only).
    pub client: NodeId,
    /// The DC whose coordinator received it.
    pub home: DcId,
    /// When the home coordinator received it (its physical clock, §V-C).
    pub recv: Time,
    /// WAN hops on the transaction's causal chain when the home coordinator received it.
    pub hops: u32,
}

/// One DC's execution result of a conflicting transaction (§V-B): the dependencies it
/// executed with (its same-epoch predecessors, sorted). It is that DC's Paxos phase-2
/// accept of the value "commit with these dependencies".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteEntry {
    /// The transaction.
    pub txn: TxnId,
    /// Its epoch.
    pub eid: u64,
    /// The dependencies it executed with in the voting DC; `None`: the voting DC
    /// abstains, having not finished executing it within the abstention timeout
    /// (its vote is a value no execution equals, so it can never be chosen).
    pub deps: Option<Vec<TxnId>>,
    /// The voter's decision period `[lo, hi]` in epochs (§VI-E).
    pub period: (u64, u64),
    /// WAN hops on the transaction's causal chain when the voter finished it.
    pub hops: u32,
}

/// The home DC's dominant result of a non-conflicting transaction (§VI-D1): it committed
/// without validation; `digest` summarizes its writes so other DCs can check theirs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DominantEntry {
    /// The transaction.
    pub txn: TxnId,
    /// Hash of its installed writes (keys, versions, values).
    pub digest: u64,
}

/// What a coordinator says about one epoch of its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Payload {
    /// The epoch id.
    pub eid: u64,
    /// Transactions received in this epoch (distribution payload).
    pub txns: Vec<TxnEntry>,
    /// Conflicting transactions that finished in this epoch, with their dependencies.
    pub votes: Vec<VoteEntry>,
    /// Dominant results of non-conflicting transactions committed in this epoch.
    pub dominant: Vec<DominantEntry>,
}

/// A Paxos ballot of majority mode: rounds ordered first, the proposer's DC breaks ties.
/// Ballot zero is the owner's own epoch message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Ballot {
    /// Round.
    pub round: u64,
    /// Proposer's DC.
    pub dc: u16,
}

impl Ballot {
    /// The owner's own proposal: its epoch message.
    pub const ZERO: Ballot = Ballot { round: 0, dc: 0 };
    /// A value known decided.
    pub const MAX: Ballot = Ballot {
        round: u64::MAX,
        dc: u16::MAX,
    };
}

/// A transaction as its chain servers see it: the servers in chain order (ascending
/// shard) and each one's keys with their access mode (true = write).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChainTxn {
    /// The transaction.
    pub id: TxnId,
    /// Its epoch.
    pub eid: u64,
    /// Chain servers, in chain order.
    pub servers: Vec<NodeId>,
    /// Keys at each server (same index), sorted, with `true` for a write.
    pub keys: Vec<Vec<(Key, bool)>>,
    /// The coordinator of this DC.
    pub coord: NodeId,
    /// The term of the DC's coordinator that dispatched it (`secondary=on`: a chain
    /// server follows the dispatch of the newest term, so a successor's passes reach
    /// it; always 0 otherwise).
    pub term: u32,
    /// The program and its arguments: the chain servers execute it speculatively.
    pub call: Call,
}

/// Catenae messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Client → its DC's coordinator: run this read-write transaction.
    Submit {
        /// Transaction.
        txn: TxnId,
        /// Program call.
        call: Call,
    },
    /// Coordinator → client: the outcome, with the reads (versions) and the writes
    /// (program order) of the committed execution.
    Outcome {
        /// Transaction.
        txn: TxnId,
        /// Reads and writes if committed, or why not.
        result: Result<Executed, AbortReason>,
        /// WAN hops on the transaction's causal chain at the decision (what the
        /// simulator also counts; here so hand-driven tests can see it).
        hops: u32,
    },
    /// Client → coordinator: a read-only transaction over these keys (§VI-F).
    ReadOnly {
        /// Transaction.
        txn: TxnId,
        /// Attempt number (a retry after 50 ms is a new attempt).
        attempt: u32,
        /// Declared keys.
        keys: Vec<Key>,
    },
    /// Coordinator → chain server: read these keys at a snapshot epoch and answer the
    /// client directly.
    RoRead(SnapRead),
    /// Chain server → client: the values, or `None` when a key is inside an
    /// uncommitted writer's decision period (the client retries after 50 ms).
    RoReply {
        /// Transaction.
        txn: TxnId,
        /// Attempt number.
        attempt: u32,
        /// The snapshot it answers.
        snap: u64,
        /// Key, version, value.
        reads: Option<Vec<RoRead>>,
    },
    /// Coordinator → every other coordinator at each epoch boundary: this epoch's
    /// payload and the previous two (redundancy, §V-C).
    Epoch {
        /// Sender's DC.
        dc: DcId,
        /// Payloads, oldest first.
        payloads: Vec<Arc<Payload>>,
        /// Majority mode: per other DC `(dc, from, below)`, the sender accepted that
        /// DC's epoch messages of every epoch in `from..below` at ballot zero (its
        /// acknowledgements; empty otherwise). With `secondary=on`: the runs of each
        /// DC's messages the sender holds (kept for a successor's takeover).
        acks: Vec<(DcId, u64, u64)>,
        /// The sender's coordinator term (`secondary=on`; 0 otherwise): a message of an
        /// older term than a takeover this DC answered is refused (`Deposed`).
        term: u32,
    },
    /// Coordinator → every other coordinator, when it starts after epoch 0 (a clock
    /// ahead of the others', or a later start): its epochs before `first` are empty,
    /// as it had not started. Re-sent in answer to a nack for one of them.
    Started {
        /// Sender's DC.
        dc: DcId,
        /// Its first epoch.
        first: u64,
    },
    /// Coordinator → a coordinator whose epoch `eid` never arrived: send it again.
    EpochNack {
        /// The first missing epoch.
        eid: u64,
    },
    /// Majority mode, Paxos phase 1a over the slots `lo..=hi` of `owner`'s epoch
    /// messages, whose delay tolerance ran out: promise `ballot`, report what you hold.
    Abandon {
        /// The DC whose epoch messages are late.
        owner: DcId,
        /// First epoch.
        lo: u64,
        /// Last epoch.
        hi: u64,
        /// The proposer's ballot.
        ballot: Ballot,
    },
    /// Phase 1b: promised, with the values held.
    AbandonPromise(AbandonPromise),
    /// Phase 2a: accept these values.
    AbandonAccept(AbandonAccept),
    /// Phase 2b.
    AbandonAccepted(AbandonAccepted),
    /// The chosen values of `owner`'s slots from `lo` on, one per epoch in order.
    SlotsDecided {
        /// Owner.
        owner: DcId,
        /// First epoch.
        lo: u64,
        /// Values (`None`: abandoned).
        values: Vec<Option<Arc<Payload>>>,
    },
    /// Majority mode: `owner`'s slots from `eid` on are undecided here for long; send
    /// what you know decided.
    SlotNack {
        /// Owner.
        owner: DcId,
        /// First undecided epoch.
        eid: u64,
    },
    /// Coordinator → chain server: epoch `eid` was scheduled and `count` transactions
    /// of it have this server on their chain.
    Manifest {
        /// (epoch, transactions of it whose chain visits this server), for the newest
        /// scheduled epochs (redundancy against loss, as with epoch messages).
        counts: Vec<(u64, u32)>,
    },
    /// Forward pass (§VI-C1): leave footprints at `chain.servers[pos]`, go on.
    Forward {
        /// The transaction's chain.
        chain: Arc<ChainTxn>,
        /// Position of the receiving server.
        pos: usize,
        /// WAN hops of the transaction's chain in this DC.
        hops: u32,
    },
    /// Backward pass (§VI-C2) arriving at `chain.servers[pos]`.
    Backward {
        /// The transaction's chain.
        chain: Arc<ChainTxn>,
        /// Position of the receiving server.
        pos: usize,
        /// Dependencies gathered so far (Rule 1).
        deps: Vec<TxnId>,
        /// WAN hops.
        hops: u32,
        /// The values read so far: every declared key of the servers passed, as each
        /// saw it when the transaction accessed it.
        pre: Vec<RoRead>,
        /// The speculative execution so far.
        spec: Spec,
    },
    /// First chain server → coordinator: the backward pass ended; these dependencies.
    Finished {
        /// Transaction.
        txn: TxnId,
        /// Every dependency it executed with here.
        deps: Vec<TxnId>,
        /// WAN hops.
        hops: u32,
        /// This DC's speculative execution.
        spec: Spec,
    },
    /// Chain server → a chain server the backward pass already left: the program ran to
    /// its end, and these are its temporary versions of your keys (possibly none: then
    /// readers behind it read what it found). Readers ordered behind a writer wait for
    /// this (Rule 2 with values).
    Temp {
        /// Transaction.
        txn: TxnId,
        /// Its writes of the receiver's keys.
        writes: Vec<(Key, VersionId, Value)>,
    },
    /// Chain server → the first server of `txn`'s chain (the last of its backward
    /// pass, where its execution is final): a reader here has waited for its temporary
    /// versions for a while (the `Temp` may have been lost); send them again.
    TempReq {
        /// The writer.
        txn: TxnId,
    },
    /// Coordinator → a coordinator whose DC voted `txn`'s chosen dependencies (§VI-E
    /// catch up): send the update operations it committed.
    CatchUp {
        /// Transaction.
        txn: TxnId,
        /// WAN hops on the asker's chain.
        hops: u32,
    },
    /// Answer to `CatchUp`: the committed execution (reads and writes), or the abort
    /// its program ended in; `None` when the answerer no longer keeps it.
    CaughtUp {
        /// Transaction.
        txn: TxnId,
        /// The committed result.
        result: Option<Result<Executed, AbortReason>>,
        /// WAN hops.
        hops: u32,
    },
    /// Chain server → resolver: `txn` was ordered after `deps` (repository update).
    Edges {
        /// The later transaction.
        txn: TxnId,
        /// Those it is ordered after.
        deps: Vec<TxnId>,
    },
    /// Chain server → resolver: the Fig. 4 pattern formed; may `txn` go ahead of
    /// `candidates` (footprints on its keys it would precede)?
    Resolve {
        /// The transaction about to pre-commit.
        txn: TxnId,
        /// Its explicit dependencies so far.
        deps: Vec<TxnId>,
        /// Transactions it would be ordered before.
        candidates: Vec<TxnId>,
    },
    /// Resolver → chain server: `txn` must wait for `wait_for` (implicit dependencies).
    Resolved {
        /// Transaction.
        txn: TxnId,
        /// Implicit dependencies.
        wait_for: Vec<TxnId>,
    },
    /// Coordinator → chain server: commit with timestamp `ts`, installing `writes`.
    Commit {
        /// Transaction.
        txn: TxnId,
        /// Commit timestamp (epoch in the high bits, rank in the low bits).
        ts: u64,
        /// This server's share of the writes.
        writes: Vec<(Key, VersionId, Value)>,
    },
    /// Coordinator → chain server: the transaction aborted; drop its footprints.
    Abort {
        /// Transaction.
        txn: TxnId,
        /// Its epoch: a server its forward pass never reached counts it for that
        /// epoch's manifest (`chain.rs`, a coordinator that gave up executing it).
        eid: u64,
    },
    /// Chain server → coordinator: the manifests from epoch `eid` on never arrived.
    ManifestNack {
        /// The first missing epoch.
        eid: u64,
    },
    /// Chain server → coordinator: the commit or abort was applied here.
    Applied {
        /// Transaction.
        txn: TxnId,
    },
    /// Standby → its DC's coordinator (`secondary=on`): it holds these epochs' payloads
    /// of the coordinator's term `term`, so the coordinator may use them.
    Held {
        /// The coordinator term the standby follows.
        term: u32,
        /// Epochs held.
        eids: Vec<u64>,
    },
    /// Coordinator → its standby: epoch `eid` was scheduled with these payloads (the
    /// standby schedules exactly what its coordinator did).
    Scheduled {
        /// Coordinator term.
        term: u32,
        /// The epoch.
        eid: u64,
        /// Its payloads, by DC.
        payloads: Vec<(DcId, Arc<Payload>)>,
    },
    /// Standby → its coordinator: the `Scheduled` of epoch `eid` on never arrived.
    SchedNack {
        /// The first missing epoch.
        eid: u64,
    },
    /// Coordinator → its standby: the chain of `txn` finished here with `deps`.
    Local {
        /// Coordinator term.
        term: u32,
        /// Transaction.
        txn: TxnId,
        /// Same-component dependencies it executed with here.
        deps: Vec<TxnId>,
        /// This DC's speculative execution of it.
        spec: Spec,
    },
    /// Standby taking over (`secondary=on`) → every other DC's coordinator nodes and its
    /// old coordinator: refuse this DC's messages of older terms, and send what you hold
    /// of this DC's epochs from `from` on (and your own).
    TakeOver {
        /// The new term.
        term: u32,
        /// The first epoch the standby has not scheduled.
        from: u64,
    },
    /// Answer to `TakeOver`, from a DC's coordinator.
    TakeOverOk {
        /// The term being taken (echoed).
        term: u32,
        /// The answering coordinator's own term.
        own_term: u32,
        /// The taker's DC's payloads the answerer holds, from `from` on.
        yours: Vec<Arc<Payload>>,
        /// The answerer's own payloads from `from` on.
        mine: Vec<Arc<Payload>>,
        /// The answerer's first epoch (epochs before it are empty) and the taker's DC's.
        started: (u64, u64),
    },
    /// Answer to a message of a term older than one this node knows for its DC.
    Deposed {
        /// The newer term.
        term: u32,
    },
    /// A restarted coordinator node (`secondary=on`) → the other coordinator node of its
    /// DC: which term is current? Answered with `ProbeReply`.
    Probe {
        /// The asker's term.
        term: u32,
    },
    /// Answer to `Probe`.
    ProbeReply {
        /// The answerer's term.
        term: u32,
    },
}

/// Coordinator → chain server: read these keys at snapshot epoch `snap` and answer
/// `client` directly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapRead {
    /// Transaction.
    pub txn: TxnId,
    /// Attempt number.
    pub attempt: u32,
    /// The client.
    pub client: NodeId,
    /// Snapshot epoch (every transaction of an epoch up to it is visible).
    pub snap: u64,
    /// Keys on this server.
    pub keys: Vec<Key>,
}

/// Majority mode, Paxos phase 1b: promised (`ok`), with each slot's value held: (epoch,
/// the ballot it was accepted at, `Ballot::MAX` when decided here; the payload or `None`
/// for an abandoned slot). Slots holding nothing are left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbandonPromise {
    /// Owner.
    pub owner: DcId,
    /// First epoch.
    pub lo: u64,
    /// Last epoch.
    pub hi: u64,
    /// Ballot answered.
    pub ballot: Ballot,
    /// Whether the promise was made (false: a higher ballot was promised).
    pub ok: bool,
    /// Held values.
    pub values: Vec<(u64, Ballot, Option<Arc<Payload>>)>,
}

/// Majority mode, Paxos phase 2a: accept these values (`None`: the slot is abandoned, as
/// empty).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbandonAccept {
    /// Owner.
    pub owner: DcId,
    /// First epoch.
    pub lo: u64,
    /// Last epoch.
    pub hi: u64,
    /// Ballot.
    pub ballot: Ballot,
    /// One value per epoch of `lo..=hi`, in order.
    pub values: Vec<Option<Arc<Payload>>>,
}

/// Majority mode, Paxos phase 2b.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbandonAccepted {
    /// Owner.
    pub owner: DcId,
    /// First epoch.
    pub lo: u64,
    /// Last epoch.
    pub hi: u64,
    /// Ballot.
    pub ballot: Ballot,
    /// Whether accepted.
    pub ok: bool,
}

impl Msg {
    /// Whether a client may send this (`Protocol::client_may_send`): a read-write
    /// transaction for its DC's coordinator, a read-only one, and a read-only transaction's
    /// reads at a snapshot (the client asks the chain servers itself once it has the
    /// snapshot); nothing of the coordinators' epochs or the chain servers' passes.
    /// Every variant is named, so a new one needs a decision here.
    pub(crate) fn client_may_send(&self) -> crate::ClientSend {
        use crate::ClientSend;
        match self {
            Msg::Submit { txn, .. } | Msg::ReadOnly { txn, .. } => ClientSend::Own(*txn),
            Msg::RoRead(r) => ClientSend::Own(r.txn),
            Msg::Outcome { .. }
            | Msg::RoReply { .. }
            | Msg::Epoch { .. }
            | Msg::Started { .. }
            | Msg::EpochNack { .. }
            | Msg::Abandon { .. }
            | Msg::AbandonPromise(..)
            | Msg::AbandonAccept(..)
            | Msg::AbandonAccepted(..)
            | Msg::SlotsDecided { .. }
            | Msg::SlotNack { .. }
            | Msg::Manifest { .. }
            | Msg::Forward { .. }
            | Msg::Backward { .. }
            | Msg::Finished { .. }
            | Msg::Temp { .. }
            | Msg::TempReq { .. }
            | Msg::CatchUp { .. }
            | Msg::CaughtUp { .. }
            | Msg::Edges { .. }
            | Msg::Resolve { .. }
            | Msg::Resolved { .. }
            | Msg::Commit { .. }
            | Msg::Abort { .. }
            | Msg::ManifestNack { .. }
            | Msg::Applied { .. }
            | Msg::Held { .. }
            | Msg::Scheduled { .. }
            | Msg::SchedNack { .. }
            | Msg::Local { .. }
            | Msg::TakeOver { .. }
            | Msg::TakeOverOk { .. }
            | Msg::Deposed { .. }
            | Msg::Probe { .. }
            | Msg::ProbeReply { .. } => ClientSend::Refused,
        }
    }
}
