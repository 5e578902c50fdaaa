//! The history checker (docs/DESIGN.md, "Checker").
//!
//! Input: a [`History`]: every transaction's reads (key → version observed) and writes
//! (key → version created), its outcome and real-time interval, and the committed state
//! of every replica at the end of the run. Every version is unique (`VersionId` =
//! writer + write index), so a read identifies exactly which write it saw.
//!
//! The per-key **version order** is the order of versions in the replicas' chains (all
//! replicas of a key must agree; disagreement is reported as [`Kind::Divergent`]).
//! From it the checker builds Adya's direct serialization graph over the committed
//! transactions, with
//! `ww` (consecutive versions), `wr` (writer → reader) and `rw` (reader of a version →
//! writer of the next version) edges, and reports:
//!
//! - **G0** a cycle of `ww` edges (dirty write);
//! - **G1a** a read of an aborted (or never-installed) write; also an aborted
//!   transaction's version found installed;
//! - **G1b** a read of a transaction's intermediate (non-final) write;
//! - **G1c** a cycle of `ww`/`wr` edges (circular information flow);
//! - **G-single** a cycle with exactly one `rw` edge (read skew); a two-transaction
//!   G-single where both read the same version of a key and both wrote it is reported
//!   as **lost update**;
//! - **G2** a cycle with two or more `rw` edges (write skew);
//! - **fractured read**: a transaction saw one write of another transaction but an
//!   older version of a key that the other also wrote (atomic visibility broken);
//! - **real-time**: with real-time edges added (T1 ended before T2 started), a cycle
//!   appears; reported only when the protocol claims strict serializability;
//! - **not durable**: an acknowledged commit's version is missing from a replica that
//!   should hold the key; **divergent**: replicas of a key order its versions
//!   differently (a replica that only lacks versions is reported as not durable).
//!
//! Each cycle is printed as the cycle itself, e.g. `1:3 -rw(x)-> 2:5 -wr(y)-> 1:3`.
//!
//! Transactions whose outcome is unknown (client crashed, run cut off) count as
//! committed if any of their versions is installed at some replica or was read by a
//! committed transaction, else as aborted. Their write records may be incomplete (a
//! shipped execution's client learns what its transaction wrote only with the
//! outcome), so their installed and read versions are taken as their final writes;
//! their reads, if unrecorded, add no edges. Once counted committed, all their writes
//! must be held like an acknowledged commit's.
//!
//! Without replica records (a history from another system), a key's version order is
//! first inferred from what the history fixes (`infer_orders`), then, where it stays
//! open, searched for (search.rs): an order found decides the verdict, an exhausted
//! search proves that none exists, and a search out of budget leaves it "unknown"
//! (never "holds").
//!
//! A version that was read but is held by no replica (every copy lost it) has no
//! position in the version order: it adds its `wr` edge but no `ww`/`rw` edge, and no
//! fractured-read judgement rests on it; its loss is reported as not durable.

mod causal;
mod dsg;
mod durability;
pub mod foreign;
mod graph;
mod index;
pub mod jsonl;
mod order;
mod report;
mod search;

pub use report::{Anomaly, Kind, Level, Report, Unknown, Verdict};

use graph::{Edge, EdgeKind, Graph};
use meridian_core::{shard_of, Key, NodeId, Outcome, ReadRec, ReplicaSnapshot, TxnId, TxnRecord, VersionId};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// Run-wide facts the checker needs besides the transactions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// Protocol that produced the history.
    pub protocol: String,
    /// Whether the protocol claims strict serializability (real-time order).
    pub strict: bool,
    /// Number of shards (keys map to shards by [`meridian_core::shard_of`]).
    pub shards: u32,
    /// Nodes that must hold each shard at the end of the run.
    pub shard_replicas: Vec<Vec<NodeId>>,
    /// The protocol claims only read committed (Adya's PL-2): the verdict then counts
    /// G0, G1a, G1b and G1c (and durability); cycles with anti-dependency edges, lost
    /// updates and fractured reads are still computed into `serializable` but allowed.
    #[serde(default)]
    pub read_committed: bool,
}

/// A complete history: metadata, transactions, final replica states.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// Run-wide facts.
    pub meta: Meta,
    /// Every transaction started.
    pub txns: Vec<TxnRecord>,
    /// Final committed state of every server.
    pub replicas: Vec<ReplicaSnapshot>,
}

/// A key whose versions the history orders only partly: the versions and
/// `before[a][b]` (version a precedes b in every order the history allows).
type Partial = (u32, Vec<VersionId>, Vec<Vec<bool>>);

/// `Checker::holds`: a replica holds a key's whole version order, or a part of it.
const FULL: u8 = 1;
const PART: u8 = 2;

/// Most versions of one key whose order the checker infers (the closure is cubic).
const MAX_INFERRED: usize = 2000;

/// Placements the search for a version order may spend, per level (strict, plain).
pub const SEARCH_BUDGET: u64 = 1_000_000;

/// Upper bound on anomalies of one kind listed in a report (the verdict is unaffected).
const MAX_PER_KIND: usize = 20;

struct Checker<'h> {
    h: &'h History,
    /// Index into `h.txns` of each transaction id (for an id listed twice, its last
    /// record), so that one lookup finds a transaction's record, finals and node.
    tix: index::TxnIndex,
    /// Each id's index among the committed transactions (`txn_of`), `u32::MAX` if not
    /// counted committed; by `tix`.
    node: Vec<u32>,
    /// The committed (or installed-unknown) transactions: the graph's nodes.
    txn_of: Vec<&'h TxnRecord>,
    /// Each node's index in `h.txns`.
    rec_of: Vec<u32>,
    /// Every key the history names, numbered: first the keys each record writes and
    /// reads, in record order, then the keys only replicas hold. The checker works with
    /// these numbers and turns them back into keys only to print.
    keys: graph::KeyIds<'h>,
    /// The key numbers of the record at `i`'s reads: `read_keys[read_off[i]..read_off[i + 1]]`.
    read_off: Vec<u32>,
    read_keys: Vec<u32>,
    /// Each transaction's final write per key number (computed once), by `tix`.
    finals: index::Finals,
    /// Per key number: version order (from the replicas, or inferred from the history).
    order: Vec<Option<Cow<'h, [VersionId]>>>,
    /// Per replica (as in `h.replicas`), per key number: whether it holds the key's
    /// whole version order (`FULL`), a part of it (`PART`) or nothing (0).
    holds: Vec<Vec<u8>>,
    /// Per key number: its order from the replicas is only the end of the key's chain
    /// (every replica's chain is, for version GC collected its start without keeping
    /// ids: `ReplicaSnapshot::pruned`); every version it lacks comes before it.
    suffix: Vec<bool>,
    /// Keys whose versions no replica orders and the history orders only partly:
    /// the versions and `before[a][b]` (version a precedes b in every order the
    /// history allows).
    partial: Vec<Partial>,
    /// Keys with too many versions to order partly: their versions (the search
    /// orders them).
    big: Vec<(u32, Vec<VersionId>)>,
    /// Version-order prefixes the history's reads fix (list-append reads of a foreign
    /// history): the versions listed come first, in order, before every other.
    chains: &'h [(Key, Vec<VersionId>)],
    /// Version orders found by the search, used instead of inferring.
    given: HashMap<&'h Key, Vec<VersionId>>,
    /// The graph's edges between transactions, kept for the search (only when some
    /// key's order is not fixed).
    edges: Vec<(usize, usize)>,
    /// Of `edges`, the dependencies (ww and wr): an order of the transactions that
    /// follows them gives version orders under which read committed holds.
    dep_edges: Vec<(usize, usize)>,
    /// A cycle snapshot isolation forbids (no two adjacent `rw` edges), printed.
    si_violation: Option<String>,
    /// A causal-consistency violation (causal.rs), printed.
    causal_violation: Option<String>,
    /// Why causal consistency was not judged (too large).
    causal_unknown: Option<String>,
    /// Why a verdict could not be decided.
    unknown: Vec<Unknown>,
    /// The history is known to be incomplete (a file cut short).
    incomplete: bool,
    /// Reads and installed versions whose writer an incomplete history does not list.
    unlisted: usize,
    /// The numbers of the keys with a version order, ascending.
    sorted_keys: Vec<u32>,
    /// Position of a version in its key's order (`pos_of`).
    pos: index::VersionPos,
    /// Transactions of unknown outcome whose writes a committed transaction read.
    seen_unknown: HashSet<TxnId>,
    anomalies: Vec<Anomaly>,
}

/// Checks a history.
pub fn check(h: &History) -> Report {
    check_history(h, &[], false, SEARCH_BUDGET)
}

/// Checks a history another tool wrote ([`foreign`]): its reads' version-order chains
/// join what the history fixes, and, with no replica states, durability is unknown.
pub fn check_foreign(f: &foreign::Foreign) -> Report {
    let mut r = check_history(&f.history, &f.chains, false, SEARCH_BUDGET);
    r.unknown.push(Unknown::NoFinalState(
        "no final state recorded (a history from another system): durability is not judged".into(),
    ));
    r.notes.extend(f.notes.iter().cloned());
    r
}

/// Checks a history known to be incomplete (a file cut short): a read or an installed
/// version whose writer the history does not list is then unknown, not an anomaly.
pub fn check_incomplete(h: &History) -> Report {
    check_history(h, &[], true, SEARCH_BUDGET)
}

fn check_history<'h>(h: &'h History, chains: &'h [(Key, Vec<VersionId>)], incomplete: bool, budget: u64) -> Report {
    let run = |given: HashMap<&'h Key, Vec<VersionId>>| {
        let mut c = Checker::new(h);
        c.incomplete = incomplete;
        c.chains = chains;
        c.given = given;
        c.run();
        c
    };
    let c = run(HashMap::default());
    // Version orders for the weaker levels the verdict below may leave open (taken
    // now: `decide` consumes the checker).
    let candidate = if incomplete { None } else { c.dependency_order() };
    let mut r = decide(c, &run, budget);
    if let Some(given) = candidate {
        if r.levels.iter().take(4).any(|l| l.holds.is_none()) {
            settle_levels(&mut r, &run(given));
        }
    }
    r
}

/// Levels that hold under some version order the history allows hold (a level is a
/// claim that such an order exists): the open ones among read committed, read atomic,
/// causal and snapshot isolation are judged again under the order of `c2`, a
/// topological order of the history's fixed dependencies (issue 52: a lost update
/// without version records is read committed, whatever order its writes took).
fn settle_levels(r: &mut Report, c2: &Checker<'_>) {
    let mut settled = vec![];
    for (l, cand) in r.levels.iter_mut().zip(levels(c2)).take(4) {
        if l.holds.is_none() && cand.holds == Some(true) {
            settled.push(cand.name.clone());
            *l = cand;
        }
    }
    if !settled.is_empty() {
        r.notes.push(format!(
            "{}: hold under a version order the history allows (one that follows its ww and wr dependencies)",
            settled.join(", ")
        ));
    }
}

/// The verdict of `c` (run with only the orders the history fixes), searching for a
/// version order where the history does not fix one.
fn decide<'h>(c: Checker<'h>, run: &impl Fn(HashMap<&'h Key, Vec<VersionId>>) -> Checker<'h>, budget: u64) -> Report {
    let decided = c.anomalies.iter().any(|a| a.kind.breaks_serializability());
    if (c.partial.is_empty() && c.big.is_empty()) || decided {
        return finish(c);
    }
    // First the order that follows the history's ww and wr dependencies (ties by
    // commit time), where it keeps every constraint the history and the replicas fix
    // (`dependency_order` checks each key's): if every level holds under it, it is a
    // serial order that respects real time, and no search is needed. A bench on a
    // cluster whose replicas collected the start of their chains leaves thousands of
    // versions partly ordered (blind writers, earlier runs' records without reads),
    // which the search may not place within its budget.
    if c.big.is_empty() {
        if let Some(given) = c.dependency_order() {
            let c2 = run(given);
            let clean = !c2
                .anomalies
                .iter()
                .any(|a| a.kind.breaks_serializability() || a.kind == Kind::RealTime)
                && c2.causal_violation.is_none()
                && c2.si_violation.is_none()
                && !c2.unknown.iter().any(|u| matches!(u, Unknown::Order { .. }));
            if clean {
                let keys = c.partial.len();
                let mut r = finish(c2);
                r.notes.push(format!(
                    "version order of {keys} key(s) no replica records whole: the order of the history's dependencies, under which it is serializable"
                ));
                return r;
            }
        }
    }
    // Some key's version order is fixed neither by the replicas nor by the history:
    // search for one (search.rs), first respecting real time, then not.
    let (versions, inputs) = c.search_input();
    let start: Vec<u64> = c.txn_of.iter().map(|t| t.start).collect();
    let end: Vec<Option<u64>> = c
        .txn_of
        .iter()
        .map(|t| t.end.filter(|_| t.outcome == Outcome::Committed))
        .collect();
    let inp = search::Input {
        n: c.txn_of.len(),
        edges: &c.edges,
        keys: &inputs,
        start: &start,
        end: &end,
    };
    let keys = versions.len();
    // Causal consistency judged under the one order the search chose: a violation
    // that the history's fixed edges alone do not show may vanish under another order
    // it allows, so it is unknown, never false (issue 52). (One that holds under the
    // chosen order holds: that order is allowed.)
    let causal_of_chosen = |mut c2: Checker<'h>| {
        if c2.causal_violation.is_some() && c.causal_violation.is_none() {
            c2.causal_violation = None;
            let why =
                "causal: violated under the version order the search chose, not under every order the history allows"
                    .to_string();
            c2.unknown.push(Unknown::Causal(why.clone()));
            c2.causal_unknown = Some(why);
        }
        c2
    };
    let (strict, spent_strict) = search::search(&inp, true, budget);
    if let search::Outcome::Found(o) = &strict {
        let mut r = finish(causal_of_chosen(run(c.orders_from(o, &versions))));
        r.notes.push(format!(
            "version order of {keys} key(s) no replica records: found by search, a serial order that respects real time ({spent_strict} placements)"
        ));
        return r;
    }
    let (plain, spent) = search::search(&inp, false, budget);
    let no_rt_order = || Anomaly {
        kind: Kind::RealTime,
        txns: vec![],
        detail: format!("no serial order respects real time (exhaustive search, {spent_strict} placements)"),
    };
    match plain {
        search::Outcome::Found(o) => {
            let mut c2 = causal_of_chosen(run(c.orders_from(&o, &versions)));
            match strict {
                search::Outcome::Budget => {
                    c2.anomalies.retain(|a| a.kind != Kind::RealTime);
                    c2.unknown.push(Unknown::RealTime(format!(
                        "real time: the search for a serial order that respects it ran out of budget ({spent_strict} placements)"
                    )));
                }
                _ if !c2.anomalies.iter().any(|a| a.kind == Kind::RealTime) => c2.anomalies.push(no_rt_order()),
                _ => {}
            }
            let mut r = finish(c2);
            r.notes.push(format!(
                "version order of {keys} key(s) no replica records: found by search, a serial order ({spent} placements)"
            ));
            r
        }
        search::Outcome::Exhausted => {
            // No order makes the history serializable: show the cycle under one. Under
            // an order that follows the history's ww and wr dependencies where one
            // exists: under any other (commit times, say) the cycles shown may include a
            // G0 or G1c that no replica recorded and an allowed order avoids, which a
            // read-committed protocol's verdict would count (campaign seed 804959 of
            // hacommit-rc, every replica forgotten: a G1c from two versions ordered by
            // their clients' end times, against the leader's sequence numbers).
            let (given, shown) = match c.dependency_order() {
                Some(g) => (g, "an order that follows the ww and wr dependencies"),
                None => {
                    let mut by_end: Vec<usize> = (0..c.txn_of.len()).collect();
                    by_end.sort_by_key(|i| (end[*i].unwrap_or(start[*i]), *i));
                    (c.orders_from(&by_end, &versions), "the order of commit times")
                }
            };
            let mut c2 = run(given);
            if !c2.anomalies.iter().any(|a| a.kind.breaks_serializability()) {
                c2.anomalies.push(Anomaly {
                    kind: Kind::G2,
                    txns: vec![],
                    detail: format!(
                        "no version order makes the history serializable (exhaustive search, {spent} placements)"
                    ),
                });
            }
            let mut r = finish(c2);
            // Under the order chosen, weaker levels may fail where another order would
            // satisfy them: keep only what the history alone shows.
            let alone = levels(&c);
            for (l, a) in r.levels.iter_mut().zip(alone).take(4) {
                *l = a;
            }
            r.notes.push(format!(
                "version order of {keys} key(s) no replica records: no order makes the history serializable (exhaustive search, {spent} placements); the cycles shown are under {shown}"
            ));
            r
        }
        search::Outcome::Budget => {
            let mut c = c;
            if matches!(strict, search::Outcome::Exhausted) {
                c.anomalies.push(no_rt_order());
            }
            let mut r = finish(c);
            r.notes.push(format!(
                "version order of {keys} key(s) no replica records: the search ran out of budget ({spent} placements), serializability unknown"
            ));
            r
        }
    }
}

/// The report of a checker that has run.
fn finish(mut c: Checker<'_>) -> Report {
    let h = c.h;
    if c.unlisted > 0 {
        c.unknown.push(Unknown::Unlisted(c.unlisted));
    }
    let levels = levels(&c);
    let mut anomalies = c.anomalies;
    let strict_ok = !anomalies.iter().any(|a| a.kind == Kind::RealTime);
    if !h.meta.strict {
        anomalies.retain(|a| a.kind != Kind::RealTime);
    }
    let serializable_all = !anomalies.iter().any(|a| a.kind.breaks_serializability());
    if h.meta.read_committed {
        use Kind::*;
        anomalies.retain(|a| !matches!(a.kind, GSingle | G2 | LostUpdate | FracturedRead | RealTime));
    }
    // keep the report bounded
    let mut per: HashMap<Kind, usize> = HashMap::default();
    anomalies.retain(|a| {
        let n = per.entry(a.kind).or_default();
        *n += 1;
        *n <= MAX_PER_KIND
    });
    let serializable = serializable_all;
    Report {
        serializable,
        strict_serializable: serializable && strict_ok,
        atomic: !anomalies.iter().any(|a| a.kind.breaks_atomicity()),
        durable: !anomalies.iter().any(|a| a.kind.breaks_durability()),
        anomalies,
        committed: c.txn_of.len(),
        committed_of_unknown_outcome: c.txn_of.iter().filter(|t| t.outcome == Outcome::Unknown).count(),
        unknown: c.unknown,
        notes: vec![],
        levels,
    }
}

/// Which levels hold, from the anomalies found (before a protocol's claims filter
/// them). Read committed is Adya's PL-2 (no G0, G1a, G1b, G1c); read atomic adds no
/// fractured reads; causal adds causal consistency with session order (causal.rs);
/// snapshot isolation adds to read atomic no cycle without two adjacent `rw` edges;
/// serializable, no cycle; strict serializable, none with real-time edges either.
/// Snapshot isolation and serializability here ignore session order (Adya's), so a
/// history whose client missed its own earlier write can be serializable and not
/// causal; strict serializability includes it when sessions are sequential.
/// Without a version order for every key (or with an incomplete file), a level not
/// shown to fail is unknown.
fn levels(c: &Checker<'_>) -> Vec<Level> {
    use Kind::*;
    let first = |kinds: &[Kind]| {
        c.anomalies
            .iter()
            .find(|a| kinds.contains(&a.kind))
            .map(|a| a.to_string())
    };
    let open = c.unknown.iter().any(|u| matches!(u, Unknown::Order { .. })) || c.incomplete;
    let strict_open = open || c.unknown.iter().any(|u| matches!(u, Unknown::RealTime(_)));
    let rc = first(&[G0, G1a, G1b, G1c]);
    let ra = rc.clone().or_else(|| first(&[FracturedRead]));
    let causal = ra.clone().or_else(|| c.causal_violation.clone());
    let causal_open = open || c.causal_unknown.is_some();
    let si = ra.clone().or_else(|| c.si_violation.clone());
    let ser = si.clone().or_else(|| first(&[GSingle, G2, LostUpdate]));
    let sser = ser.clone().or_else(|| first(&[RealTime]));
    let level = |name: &str, bad: Option<String>, open: bool| Level {
        name: name.into(),
        holds: match (&bad, open) {
            (Some(_), _) => Some(false),
            (None, true) => None,
            (None, false) => Some(true),
        },
        counterexample: bad,
    };
    vec![
        level("read-committed", rc, open),
        level("read-atomic", ra, open),
        level("causal", causal, causal_open),
        level("snapshot-isolation", si, open),
        level("serializable", ser, open),
        level("strict-serializable", sser, strict_open),
    ]
}

impl<'h> Checker<'h> {
    fn new(h: &'h History) -> Self {
        let mut keys = graph::KeyIds::default();
        let mut read_off = Vec::with_capacity(h.txns.len() + 1);
        let mut read_keys = vec![];
        let mut finals = index::Finals::with_capacity(h.txns.len());
        let mut f = vec![];
        for t in &h.txns {
            final_writes(t, &mut keys, &mut f);
            finals.push(f.iter().copied());
            read_off.push(read_keys.len() as u32);
            read_keys.extend(t.reads.iter().map(|r| keys.id(&r.key)));
        }
        read_off.push(read_keys.len() as u32);
        Checker {
            h,
            tix: index::TxnIndex::new(&h.txns),
            rec_of: vec![],
            keys,
            read_off,
            read_keys,
            holds: vec![],
            suffix: vec![],
            node: vec![u32::MAX; h.txns.len()],
            txn_of: vec![],
            finals,
            order: vec![],
            partial: vec![],
            big: vec![],
            chains: &[],
            given: HashMap::default(),
            edges: vec![],
            dep_edges: vec![],
            si_violation: None,
            causal_violation: None,
            causal_unknown: None,
            unknown: vec![],
            incomplete: false,
            unlisted: 0,
            sorted_keys: vec![],
            pos: index::VersionPos::new(&h.txns),
            seen_unknown: HashSet::default(),
            anomalies: vec![],
        }
    }

    fn push(&mut self, kind: Kind, txns: Vec<TxnId>, detail: String) {
        self.anomalies.push(Anomaly { kind, txns, detail });
    }

    fn run(&mut self) {
        self.version_order();
        self.read_evidence();
        self.committed_set();
        self.infer_orders();
        // Every key the checker will see is numbered by now.
        self.keys.forget_bytes();
        self.durability();
        let g = self.build_graph();
        if !self.partial.is_empty() || !self.big.is_empty() {
            self.edges = g.pairs(self.txn_of.len(), |_| true);
            self.dep_edges = g.pairs(self.txn_of.len(), |k| matches!(k, EdgeKind::Ww | EdgeKind::Wr));
        }
        let comps = self.cycles(&g);
        let mut g = g;
        let sessions = self.session_members();
        let rt_acyclic = self.real_time(&mut g, &comps);
        // Where each session's transactions follow one another in real time, session
        // order is inside real-time order, so a graph acyclic with real time is acyclic
        // with session order too (the common case needs no second pass).
        let session_serial = comps.is_empty()
            && ((rt_acyclic && self.sessions_in_real_time(&sessions)) || self.acyclic_with_sessions(&mut g, &sessions));
        self.judge_causal(session_serial, &sessions);
    }

    /// Whether the dependency graph stays acyclic with session order added: then some
    /// serial order respects every key's version order, every read and every session,
    /// which makes the history causal. The session edges are removed again.
    fn acyclic_with_sessions(&self, g: &mut Graph, sessions: &[Vec<usize>]) -> bool {
        let added = causal::add_session_order(g, sessions);
        let acyclic = g.sccs(|_| true).is_empty();
        for a in added {
            g.pop(a);
        }
        acyclic
    }

    /// Runs the causal check (causal.rs) unless the history is already shown causal:
    /// serializable with session order (`session_serial`: no anomaly, every key's order
    /// fixed, the dependency graph acyclic with session order added).
    fn judge_causal(&mut self, session_serial: bool, sessions: &[Vec<usize>]) {
        use Kind::*;
        let clean = !self
            .anomalies
            .iter()
            .any(|a| matches!(a.kind, G0 | G1a | G1b | G1c | FracturedRead | GSingle | G2 | LostUpdate));
        let open = self.unknown.iter().any(|u| matches!(u, Unknown::Order { .. })) || self.incomplete;
        if clean && !open && session_serial {
            return;
        }
        match self.causal(sessions) {
            causal::Causal::NoViolation => {}
            causal::Causal::Violation(v) => self.causal_violation = Some(v),
            causal::Causal::TooLarge(why) => {
                self.unknown.push(Unknown::Causal(why.clone()));
                self.causal_unknown = Some(why);
            }
        }
    }

    /// The version `t` installs for key number `k` (its last write to it), if it wrote it.
    fn final_of(&self, t: TxnId, k: u32) -> Option<VersionId> {
        self.final_at(self.ix(t)?, k)
    }

    /// The version the record at `i` of `h.txns` installs for key number `k`, if it
    /// wrote it.
    fn final_at(&self, i: usize, k: u32) -> Option<VersionId> {
        self.finals.of(i).iter().find(|(key, _)| *key == k).map(|(_, v)| *v)
    }

    /// The reads of the record at `i` of `h.txns`, each with its key's number.
    fn reads_at(&self, i: usize) -> impl Iterator<Item = (&'h ReadRec, u32)> + use<'h, '_> {
        let h = self.h;
        let ks = &self.read_keys[self.read_off[i] as usize..self.read_off[i + 1] as usize];
        h.txns[i].reads.iter().zip(ks.iter().copied())
    }

    /// Key number `k`'s version order (empty if it has none).
    fn order_of(&self, k: u32) -> &[VersionId] {
        self.order[k as usize].as_deref().unwrap_or(&[])
    }

    /// Where `id`'s record is in `h.txns`.
    fn ix(&self, id: TxnId) -> Option<usize> {
        self.tix.get(id)
    }

    /// `v`'s position in its key's version order, if it has one.
    fn pos_of(&self, v: VersionId) -> Option<usize> {
        self.pos.get(self.ix(v.txn), v)
    }

    fn set_pos(&mut self, v: VersionId, p: usize) {
        self.pos.insert(self.ix(v.txn), v, p);
    }

    /// `id`'s record.
    fn rec(&self, id: TxnId) -> Option<&'h TxnRecord> {
        let h = self.h;
        self.ix(id).map(|i| &h.txns[i])
    }

    /// `id`'s final write per key (none for an unknown id).
    fn finals_of(&self, id: TxnId) -> &[(u32, VersionId)] {
        self.ix(id).map_or(&[], |i| self.finals.of(i))
    }

    /// The committed-graph index of the record at `i` of `h.txns`'s id.
    fn node_at(&self, i: usize) -> Option<usize> {
        let n = self.node[i];
        (n != u32::MAX).then_some(n as usize)
    }

    /// `id`'s index among the committed transactions, if it counts as committed.
    fn node_of(&self, id: TxnId) -> Option<usize> {
        self.ix(id).and_then(|i| self.node_at(i))
    }

    fn installed(&self, v: &VersionId) -> bool {
        self.pos_of(*v).is_some()
    }
}

/// The version a transaction installs for each key number (its last write to it), by
/// key number, into `f` (cleared first): [`TxnRecord::final_writes`] without a map per
/// transaction.
fn final_writes<'h>(t: &'h TxnRecord, keys: &mut graph::KeyIds<'h>, f: &mut Vec<(u32, VersionId)>) {
    f.clear();
    for w in &t.writes {
        let k = keys.id(&w.key);
        match f.iter_mut().find(|(x, _)| *x == k) {
            Some(e) => e.1 = w.version,
            None => f.push((k, w.version)),
        }
    }
    f.sort_unstable_by_key(|e| e.0);
}

/// Whether `a`'s versions appear in `b` in the same order.
fn is_subsequence(a: &[VersionId], b: &[VersionId]) -> bool {
    let mut it = b.iter();
    a.iter().all(|x| it.any(|y| y == x))
}

fn has_duplicate(vs: &[VersionId]) -> bool {
    let mut seen = HashSet::default();
    !vs.iter().all(|v| seen.insert(*v))
}

fn fmt_versions(v: &[VersionId]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_gc;
#[cfg(test)]
mod tests_jsonl;
