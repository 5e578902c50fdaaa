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
pub mod foreign;
mod graph;
mod index;
pub mod jsonl;
mod search;

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

/// Anomaly class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// Dirty write: cycle of ww edges.
    G0,
    /// Aborted read.
    G1a,
    /// Intermediate read.
    G1b,
    /// Circular information flow: cycle of ww/wr edges.
    G1c,
    /// Read skew: cycle with exactly one rw edge.
    #[serde(rename = "G-single")]
    GSingle,
    /// Write skew: cycle with two or more rw edges.
    G2,
    /// Two transactions read the same version and both overwrote it.
    #[serde(rename = "lost-update")]
    LostUpdate,
    /// A transaction saw part of another's writes.
    #[serde(rename = "fractured-read")]
    FracturedRead,
    /// Real-time order violated (strict serializability).
    #[serde(rename = "real-time")]
    RealTime,
    /// An acknowledged commit is missing from a replica.
    #[serde(rename = "not-durable")]
    NotDurable,
    /// Replicas of a key disagree.
    Divergent,
    /// A replica holds a version no transaction wrote.
    #[serde(rename = "unexplained-version")]
    UnexplainedVersion,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = serde_json::to_value(self).ok();
        let name = s.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
        f.write_str(name)
    }
}

impl Kind {
    /// Whether this anomaly breaks serializability.
    pub fn breaks_serializability(self) -> bool {
        use Kind::*;
        matches!(self, G0 | G1a | G1b | G1c | GSingle | G2 | LostUpdate | FracturedRead)
    }
    /// Whether this anomaly breaks atomicity.
    pub fn breaks_atomicity(self) -> bool {
        matches!(self, Kind::G1a | Kind::G1b | Kind::FracturedRead)
    }
    /// Whether this anomaly breaks durability or convergence.
    pub fn breaks_durability(self) -> bool {
        matches!(self, Kind::NotDurable | Kind::Divergent | Kind::UnexplainedVersion)
    }
}

/// One anomaly found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anomaly {
    /// Its class.
    pub kind: Kind,
    /// Transactions involved.
    pub txns: Vec<TxnId>,
    /// Human-readable evidence (the cycle, the key, the node).
    pub detail: String,
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.detail)
    }
}

/// One isolation level's verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// `read-committed`, `read-atomic`, `causal`, `snapshot-isolation`, `serializable`,
    /// `strict-serializable`.
    pub name: String,
    /// Whether it holds; `None`: the history cannot decide (no version order, a
    /// search out of budget, an incomplete file).
    pub holds: Option<bool>,
    /// For a level that fails, the smallest counterexample found: the anomaly's name,
    /// its transactions and edges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counterexample: Option<String>,
}

/// The checker's verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// No serializability anomaly.
    pub serializable: bool,
    /// No real-time violation either (computed whether or not the protocol claims it).
    pub strict_serializable: bool,
    /// No atomicity anomaly.
    pub atomic: bool,
    /// Every acknowledged commit present at every replica that should hold it, and
    /// replicas agree.
    pub durable: bool,
    /// Everything found that breaks the protocol's claims (real-time anomalies only if
    /// it claims strictness; only G0/G1 and durability if it claims read committed).
    pub anomalies: Vec<Anomaly>,
    /// Committed transactions checked.
    pub committed: usize,
    /// Why a verdict above could not be decided (a key's version order that neither
    /// the replicas nor the history fix, a replica whose final state is missing): a
    /// verdict reported `true` then means "no anomaly found", not "holds".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
    /// How verdicts were reached where the history gave no version order (the search
    /// for one, and what it spent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The isolation levels the history satisfies, weakest first (whatever the
    /// protocol claims).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<Level>,
}

impl Report {
    /// Whether the history is clean for the protocol's claims.
    pub fn ok(&self) -> bool {
        self.anomalies.is_empty()
    }
    /// Whether serializability could not be decided: a key's version order is not
    /// fixed, and no cycle was found anyway.
    pub fn order_unknown(&self) -> bool {
        self.serializable
            && self
                .unknown
                .iter()
                .any(|u| u.starts_with("key ") || u.contains("does not list") || u.contains("cut short"))
    }
    /// Whether strict serializability could not be decided: serializability could not,
    /// or the search for an order that respects real time ran out of budget.
    pub fn strict_unknown(&self) -> bool {
        self.strict_serializable && (self.order_unknown() || self.unknown.iter().any(|u| u.starts_with("real time")))
    }
    /// Whether durability could not be decided: a replica's final state is missing.
    pub fn durability_unknown(&self) -> bool {
        self.durable
            && self
                .unknown
                .iter()
                .any(|u| u.starts_with("no final state") || u.contains("cut short"))
    }
    /// Anomaly kinds found, deduplicated, in order of first appearance.
    pub fn kinds(&self) -> Vec<Kind> {
        let mut v = vec![];
        for a in &self.anomalies {
            if !v.contains(&a.kind) {
                v.push(a.kind);
            }
        }
        v
    }
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
    finals: Vec<Vec<(u32, VersionId)>>,
    /// Per key number: version order (from the replicas, or inferred from the history).
    order: Vec<Option<Cow<'h, [VersionId]>>>,
    /// Per replica (as in `h.replicas`), per key number: whether it holds the key's
    /// whole version order (`FULL`), a part of it (`PART`) or nothing (0).
    holds: Vec<Vec<u8>>,
    /// Keys whose versions no replica orders and the history orders only partly:
    /// the versions and `before[a][b]` (version a precedes b in every order the
    /// history allows).
    partial: Vec<Partial>,
    /// Keys with too many versions to order partly: their versions (the search
    /// orders them).
    big: Vec<(u32, Vec<VersionId>)>,
    /// Version-order chains the history's reads fix (list-append reads of a foreign
    /// history).
    chains: &'h [(Key, Vec<VersionId>)],
    /// Version orders found by the search, used instead of inferring.
    given: HashMap<&'h Key, Vec<VersionId>>,
    /// The graph's edges between transactions, kept for the search (only when some
    /// key's order is not fixed).
    edges: Vec<(usize, usize)>,
    /// A cycle snapshot isolation forbids (no two adjacent `rw` edges), printed.
    si_violation: Option<String>,
    /// A causal-consistency violation (causal.rs), printed.
    causal_violation: Option<String>,
    /// Why causal consistency was not judged (too large).
    causal_unknown: Option<String>,
    /// Why a verdict could not be decided.
    unknown: Vec<String>,
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
    r.unknown
        .push("no final state recorded (a history from another system): durability is not judged".into());
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
    let decided = c.anomalies.iter().any(|a| a.kind.breaks_serializability());
    if (c.partial.is_empty() && c.big.is_empty()) || decided {
        return finish(c);
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
    let (strict, spent_strict) = search::search(&inp, true, budget);
    if let search::Outcome::Found(o) = &strict {
        let mut r = finish(run(c.orders_from(o, &versions)));
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
            let mut c2 = run(c.orders_from(&o, &versions));
            match strict {
                search::Outcome::Budget => {
                    c2.anomalies.retain(|a| a.kind != Kind::RealTime);
                    c2.unknown.push(format!(
                        "real time: the search for a serial order that respects it ran out of budget ({spent_strict} placements)"
                    ));
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
            // No order makes the history serializable: show the cycle under one.
            let mut by_end: Vec<usize> = (0..c.txn_of.len()).collect();
            by_end.sort_by_key(|i| (end[*i].unwrap_or(start[*i]), *i));
            let mut c2 = run(c.orders_from(&by_end, &versions));
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
                "version order of {keys} key(s) no replica records: no order makes the history serializable (exhaustive search, {spent} placements); the cycles shown are under the order of commit times"
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
        c.unknown.push(format!(
            "{} reads or installed versions of transactions the incomplete history does not list",
            c.unlisted
        ));
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
    let open = c.unknown.iter().any(|u| u.starts_with("key ")) || c.incomplete;
    let strict_open = open || c.unknown.iter().any(|u| u.starts_with("real time"));
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
        let mut finals = Vec::with_capacity(h.txns.len());
        for t in &h.txns {
            finals.push(final_writes(t, &mut keys));
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
            node: vec![u32::MAX; h.txns.len()],
            txn_of: vec![],
            finals,
            order: vec![],
            partial: vec![],
            big: vec![],
            chains: &[],
            given: HashMap::default(),
            edges: vec![],
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
        self.durability();
        let g = self.build_graph();
        if !self.partial.is_empty() || !self.big.is_empty() {
            self.edges = g.pairs(self.txn_of.len());
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
        let open = self.unknown.iter().any(|u| u.starts_with("key ")) || self.incomplete;
        if clean && !open && session_serial {
            return;
        }
        match self.causal(sessions) {
            causal::Causal::NoViolation => {}
            causal::Causal::Violation(v) => self.causal_violation = Some(v),
            causal::Causal::TooLarge(why) => {
                self.unknown.push(why.clone());
                self.causal_unknown = Some(why);
            }
        }
    }

    /// Version order per key from the replicas; replicas of a key must agree. The
    /// longest chain is the order; a replica whose chain is a subsequence of it merely
    /// lacks versions (a lost or not-yet-applied write, which the durability check
    /// reports for every committed one); one whose chain orders versions differently,
    /// or holds a version twice, diverges.
    fn version_order(&mut self) {
        let h = self.h;
        // Each replica's keys by number, in its order.
        let ids: Vec<Vec<u32>> = h
            .replicas
            .iter()
            .map(|r| r.keys.keys().map(|k| self.keys.id(k)).collect())
            .collect();
        let n = self.keys.len();
        let mut first: Vec<Option<(NodeId, &'h [VersionId])>> = vec![None; n];
        for (r, ids) in h.replicas.iter().zip(&ids) {
            for (st, &k) in r.keys.values().zip(ids) {
                let f = &mut first[k as usize];
                if f.is_none_or(|(_, v0)| st.versions.len() > v0.len()) {
                    *f = Some((r.node, &st.versions));
                }
            }
        }
        let mut divergent = vec![false; n];
        self.holds = Vec::with_capacity(h.replicas.len());
        for (r, ids) in h.replicas.iter().zip(&ids) {
            let mut holds = vec![0u8; n];
            for (st, &k) in r.keys.values().zip(ids) {
                let (n0, v0) = first[k as usize].expect("every replica key has a longest chain");
                let same = v0 == st.versions.as_slice();
                holds[k as usize] = if same { FULL } else { PART };
                let agrees = same || (is_subsequence(&st.versions, v0) && !has_duplicate(v0));
                if !agrees && !divergent[k as usize] {
                    divergent[k as usize] = true;
                    let d = format!(
                        "key {}: {n0} has [{}] but {} has [{}]",
                        self.keys.key(k),
                        fmt_versions(v0),
                        r.node,
                        fmt_versions(&st.versions)
                    );
                    self.push(Kind::Divergent, vec![], d);
                }
            }
            self.holds.push(holds);
        }
        for (k, f) in first.iter().enumerate() {
            if let Some((n0, v0)) = f {
                if has_duplicate(v0) && !divergent[k] {
                    let d = format!(
                        "key {}: {n0} has [{}], a version twice",
                        self.keys.key(k as u32),
                        fmt_versions(v0)
                    );
                    self.push(Kind::Divergent, vec![], d);
                }
            }
        }
        self.order = vec![None; n];
        for (k, f) in first.into_iter().enumerate() {
            let Some((_, vs)) = f else { continue };
            let k = k as u32;
            for (i, v) in vs.iter().enumerate() {
                self.set_pos(*v, i);
                // A client whose transaction's outcome is unknown may not know what it
                // wrote (a shipped execution learns its writes with the outcome): an
                // installed version of such a transaction is taken as its final write.
                if let Some(i) = self.ix(v.txn) {
                    if self.h.txns[i].outcome == Outcome::Unknown {
                        let f = &mut self.finals[i];
                        if !f.iter().any(|(key, _)| *key == k) {
                            f.push((k, *v));
                        }
                    }
                }
            }
            self.order[k as usize] = Some(Cow::Borrowed(vs));
            self.sorted_keys.push(k);
        }
    }

    /// A committed transaction's read of a version written by a transaction whose
    /// outcome is unknown is evidence too: the writer counts as committed (the
    /// protocol let its write be seen), and the version read is its final write to that
    /// key if its records do not say otherwise (a crashed shipped client's records may
    /// lack it). If no replica holds such a version, the durability check reports it:
    /// either the writer committed and the version was lost, or the reader saw an
    /// aborted write; the history is wrong either way, and "lost" is the explanation
    /// that needs no other anomaly.
    fn read_evidence(&mut self) {
        let h = self.h;
        let mut seen = vec![];
        for (j, t) in h
            .txns
            .iter()
            .enumerate()
            .filter(|(_, t)| t.outcome == Outcome::Committed)
        {
            for (r, k) in self.reads_at(j) {
                let Some(v) = r.version else { continue };
                if v.txn == t.id {
                    continue;
                }
                match self.ix(v.txn) {
                    Some(i) if h.txns[i].outcome == Outcome::Unknown => seen.push((i, k, v)),
                    _ => continue,
                };
            }
        }
        for (i, k, v) in seen {
            self.seen_unknown.insert(v.txn);
            let f = &mut self.finals[i];
            if !f.iter().any(|(key, _)| *key == k) {
                f.push((k, v));
            }
        }
    }

    /// Version orders the replicas do not give (a history from elsewhere, or one whose
    /// replica records are missing): what the history itself fixes. Every order starts
    /// at the initial state; a committed transaction that read version `r` of a key and
    /// wrote it (its final write `u`) puts `r` before `u` (reads-from and the
    /// transaction's own order). Real time is not used: it is a constraint of strict
    /// serializability only, and would make a plain-serializability verdict unsound.
    /// A key whose constraints fix one order gets it; otherwise its versions are only
    /// partly ordered, the graph gets the edges every allowed order implies, and the
    /// serializability verdict is "unknown" unless a cycle is found anyway.
    fn infer_orders(&mut self) {
        // Per key without an order: its versions, and the transactions that wrote it.
        let mut writes: BTreeMap<u32, (Vec<VersionId>, Vec<usize>)> = BTreeMap::new();
        for (ti, t) in self.txn_of.iter().enumerate() {
            for &(k, v) in self.finals_of(t.id) {
                if self.order[k as usize].is_none() {
                    let e = writes.entry(k).or_default();
                    e.0.push(v);
                    e.1.push(ti);
                }
            }
        }
        if writes.is_empty() {
            return;
        }
        let mut chains: HashMap<u32, Vec<&[VersionId]>> = HashMap::default();
        for (k, c) in self.chains {
            if let Some(k) = self.keys.get(k) {
                chains.entry(k).or_default().push(c);
            }
        }
        for (k, (mut vs, writers)) in writes {
            vs.sort_unstable();
            vs.dedup();
            if let Some(order) = self.given.remove(self.keys.key(k)) {
                debug_assert_eq!(order.len(), vs.len(), "a found order holds every version");
                for (i, v) in order.iter().enumerate() {
                    self.set_pos(*v, i);
                }
                self.order[k as usize] = Some(Cow::Owned(order));
                self.sorted_keys.push(k);
                continue;
            }
            let n = vs.len();
            let ix: HashMap<VersionId, usize> = vs.iter().enumerate().map(|(i, v)| (*v, i)).collect();
            let mut before = vec![vec![false; n]; n];
            for chain in chains.get(&k).into_iter().flatten() {
                for w in chain.windows(2) {
                    if let (Some(&a), Some(&b)) = (ix.get(&w[0]), ix.get(&w[1])) {
                        before[a][b] = true;
                    }
                }
            }
            for ti in writers {
                let t = self.txn_of[ti];
                let Some(u) = self.final_of(t.id, k).and_then(|u| ix.get(&u).copied()) else {
                    continue;
                };
                for (r, _) in self.reads_at(self.rec_of[ti] as usize).filter(|(_, rk)| *rk == k) {
                    if let Some(a) = r.version.filter(|v| v.txn != t.id).and_then(|v| ix.get(&v).copied()) {
                        if a != u {
                            before[a][u] = true;
                        }
                    }
                }
            }
            if n > MAX_INFERRED {
                self.unknown.push(format!(
                    "key {}: {n} versions and no recorded order (more than {MAX_INFERRED} to infer)",
                    self.keys.key(k)
                ));
                self.big.push((k, vs));
                continue;
            }
            // transitive closure
            for m in 0..n {
                let via = before[m].clone();
                for row in before.iter_mut() {
                    if row[m] {
                        for (b, _) in via.iter().enumerate().filter(|(_, x)| **x) {
                            row[b] = true;
                        }
                    }
                }
            }
            let total = (0..n).all(|a| (0..n).all(|b| a == b || before[a][b] || before[b][a]));
            let cyclic = (0..n).any(|a| before[a][a]);
            if total && !cyclic {
                let mut order = vs.clone();
                order.sort_by_key(|v| (0..n).filter(|a| before[*a][ix[v]]).count());
                for (i, v) in order.iter().enumerate() {
                    self.set_pos(*v, i);
                }
                self.order[k as usize] = Some(Cow::Owned(order));
                self.sorted_keys.push(k);
            } else {
                if !cyclic {
                    self.unknown.push(format!(
                        "key {}: the history does not fix the order of its {n} versions (no replica records it)",
                        self.keys.key(k)
                    ));
                }
                // A cycle among reads-from constraints is itself found as a cycle of
                // the graph below (each constraint is a wr then rw path).
                self.partial.push((k, vs, before));
            }
        }
        self.sorted_keys.sort_unstable();
    }

    /// The keys whose order is not fixed, their versions, and what the search needs
    /// of each.
    #[allow(clippy::type_complexity)]
    fn search_input(&self) -> (Vec<(&'h Key, Vec<VersionId>)>, Vec<search::KeyInput>) {
        let nums: Vec<u32> = self
            .partial
            .iter()
            .map(|p| p.0)
            .chain(self.big.iter().map(|b| b.0))
            .collect();
        let keys: Vec<(&'h Key, Vec<VersionId>)> = self
            .partial
            .iter()
            .map(|(k, vs, _)| (self.keys.key(*k), vs.clone()))
            .chain(self.big.iter().map(|(k, vs)| (self.keys.key(*k), vs.clone())))
            .collect();
        let key_ix: HashMap<u32, usize> = nums.iter().enumerate().map(|(i, k)| (*k, i)).collect();
        let mut inputs: Vec<search::KeyInput> = keys
            .iter()
            .map(|(_, vs)| search::KeyInput {
                writers: vs.iter().map(|v| self.node_of(v.txn)).collect(),
                readers: vec![vec![]; vs.len()],
                init_readers: vec![],
            })
            .collect();
        let ver_ix: Vec<HashMap<VersionId, usize>> = keys
            .iter()
            .map(|(_, vs)| vs.iter().enumerate().map(|(i, v)| (*v, i)).collect())
            .collect();
        for (ti, t) in self.txn_of.iter().enumerate() {
            for (r, k) in self.reads_at(self.rec_of[ti] as usize) {
                let Some(&ki) = key_ix.get(&k) else { continue };
                match r.version {
                    None => inputs[ki].init_readers.push(ti),
                    Some(v) if v.txn == t.id => {}
                    Some(v) => {
                        if let Some(&vi) = ver_ix[ki].get(&v) {
                            inputs[ki].readers[vi].push(ti);
                        }
                    }
                }
            }
        }
        (keys, inputs)
    }

    /// Version orders of `keys` that follow the serial order `serial`.
    fn orders_from(&self, serial: &[usize], keys: &[(&'h Key, Vec<VersionId>)]) -> HashMap<&'h Key, Vec<VersionId>> {
        let mut at = vec![usize::MAX; self.txn_of.len()];
        for (i, t) in serial.iter().enumerate() {
            at[*t] = i;
        }
        keys.iter()
            .map(|(k, vs)| {
                let mut o = vs.clone();
                o.sort_by_key(|v| (self.node_of(v.txn).map_or(usize::MAX, |x| at[x]), *v));
                (*k, o)
            })
            .collect()
    }

    /// The version `t` installs for key number `k` (its last write to it), if it wrote it.
    fn final_of(&self, t: TxnId, k: u32) -> Option<VersionId> {
        self.final_at(self.ix(t)?, k)
    }

    /// The version the record at `i` of `h.txns` installs for key number `k`, if it
    /// wrote it.
    fn final_at(&self, i: usize, k: u32) -> Option<VersionId> {
        self.finals[i].iter().find(|(key, _)| *key == k).map(|(_, v)| *v)
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
        self.ix(id).map_or(&[], |i| &self.finals[i])
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

    fn committed_set(&mut self) {
        let h = self.h;
        for (j, t) in h.txns.iter().enumerate() {
            let counts = match t.outcome {
                Outcome::Committed => true,
                Outcome::Aborted => false,
                Outcome::Unknown => {
                    self.seen_unknown.contains(&t.id) || self.finals_of(t.id).iter().any(|(_, v)| self.installed(v))
                }
            };
            if counts {
                let i = self.ix(t.id).expect("every record is indexed");
                self.node[i] = self.txn_of.len() as u32;
                self.txn_of.push(t);
                self.rec_of.push(j as u32);
            }
        }
        // installed versions must belong to committed transactions' final writes
        let mut bad = vec![];
        let mut unlisted = 0;
        for &k in &self.sorted_keys {
            let vs = self.order_of(k);
            let key = self.keys.key(k);
            for v in vs.iter() {
                match self.rec(v.txn) {
                    None if self.incomplete => unlisted += 1,
                    None => bad.push((
                        Kind::UnexplainedVersion,
                        vec![],
                        format!("key {key}: version {v} written by no recorded transaction"),
                    )),
                    Some(t) if t.outcome == Outcome::Aborted => bad.push((
                        Kind::G1a,
                        vec![t.id],
                        format!("key {key}: version {v} of aborted transaction {} is installed", t.id),
                    )),
                    Some(t) => {
                        if self.final_of(t.id, k) != Some(*v) {
                            bad.push((
                                Kind::G1b,
                                vec![t.id],
                                format!("key {key}: intermediate version {v} of {} is installed", t.id),
                            ));
                        }
                    }
                }
            }
        }
        self.unlisted += unlisted;
        for (k, t, d) in bad {
            self.push(k, t, d);
        }
    }

    fn durability(&mut self) {
        let h = self.h;
        let replica_of: HashMap<NodeId, usize> = h.replicas.iter().enumerate().map(|(i, r)| (r.node, i)).collect();
        // A replica that holds only part of a long chain answers through a set, built
        // on first use.
        let mut part_sets: HashMap<(usize, u32), HashSet<VersionId>> = HashMap::default();
        let mut shards: Vec<u32> = vec![u32::MAX; self.keys.len()];
        let mut found = vec![];
        let mut missing: std::collections::BTreeSet<NodeId> = Default::default();
        // Acknowledged commits, and unknown outcomes counted as committed (installed
        // somewhere, or read by a committed transaction): all their writes must be held.
        for t in &self.txn_of {
            let inferred = if t.outcome == Outcome::Unknown {
                " (outcome unknown, counted committed)"
            } else {
                ""
            };
            for &(k, v) in self.finals_of(t.id) {
                let key = self.keys.key(k);
                let s = &mut shards[k as usize];
                if *s == u32::MAX {
                    *s = shard_of(key, h.meta.shards).0;
                }
                let Some(nodes) = h.meta.shard_replicas.get(*s as usize) else {
                    continue;
                };
                for n in nodes {
                    let Some(&ri) = replica_of.get(n) else {
                        // No final state recorded for this replica: nothing to judge.
                        missing.insert(*n);
                        continue;
                    };
                    let held = match self.holds[ri][k as usize] {
                        // The replica's chain is the key's version order.
                        FULL => {
                            let o = self.order_of(k);
                            self.pos_of(v).is_some_and(|p| o.get(p) == Some(&v)) || o.contains(&v)
                        }
                        PART => {
                            let vs = &h.replicas[ri].keys[key].versions;
                            if vs.len() <= 32 {
                                vs.contains(&v)
                            } else {
                                part_sets
                                    .entry((ri, k))
                                    .or_insert_with(|| vs.iter().copied().collect())
                                    .contains(&v)
                            }
                        }
                        _ => false,
                    };
                    if !held {
                        found.push((
                            t.id,
                            format!("committed {}{inferred} wrote {key}={v} but replica {n} lacks it", t.id),
                        ));
                    }
                }
            }
        }
        for (t, d) in found {
            self.push(Kind::NotDurable, vec![t], d);
        }
        if !missing.is_empty() {
            let ns: Vec<String> = missing.iter().map(|n| n.to_string()).collect();
            self.unknown.push(format!(
                "no final state recorded for replica(s) {}: their durability is not judged",
                ns.join(", ")
            ));
        }
    }

    fn build_graph(&mut self) -> Graph {
        let n = self.txn_of.len();
        let mut g = Graph::new(n);
        // ww edges
        for &ki in &self.sorted_keys {
            for w in self.order_of(ki).windows(2) {
                if let (Some(a), Some(b)) = (self.node_of(w[0].txn), self.node_of(w[1].txn)) {
                    if a != b {
                        g.add(a, b, EdgeKind::Ww, ki);
                    }
                }
            }
        }
        // Partly ordered keys: every pair the history orders is a ww path in any
        // allowed order, and a reader of a version precedes (through an rw edge and ww
        // edges) the writer of every later version.
        let mut readers: HashMap<u32, Vec<usize>> = self.partial.iter().map(|p| (p.0, vec![])).collect();
        if !readers.is_empty() {
            for ti in 0..self.txn_of.len() {
                for (_, k) in self.reads_at(self.rec_of[ti] as usize) {
                    if let Some(rs) = readers.get_mut(&k) {
                        if rs.last() != Some(&ti) {
                            rs.push(ti);
                        }
                    }
                }
            }
        }
        for (ki, vs, before) in &self.partial {
            let ki = *ki;
            let writer: Vec<Option<usize>> = vs.iter().map(|v| self.node_of(v.txn)).collect();
            for (a, row) in before.iter().enumerate() {
                for (b, &is_before) in row.iter().enumerate() {
                    if let (true, Some(x), Some(y)) = (is_before, writer[a], writer[b]) {
                        if x != y {
                            g.add(x, y, EdgeKind::Ww, ki);
                        }
                    }
                }
            }
            for &ti in &readers[&ki] {
                let t = self.txn_of[ti];
                for (r, _) in self.reads_at(self.rec_of[ti] as usize).filter(|(_, k)| *k == ki) {
                    let later: Vec<usize> = match r.version {
                        None => (0..vs.len()).collect(),
                        Some(v) if v.txn == t.id => continue,
                        Some(v) => match vs.iter().position(|x| *x == v) {
                            Some(a) => (0..vs.len()).filter(|b| before[a][*b]).collect(),
                            None => continue,
                        },
                    };
                    for b in later {
                        if let Some(y) = writer[b].filter(|y| *y != ti) {
                            g.add(ti, y, EdgeKind::Rw, ki);
                        }
                    }
                }
            }
        }
        let h = self.h;
        let mut read_pos: Vec<(u32, Option<Option<usize>>)> = vec![];
        let mut unlisted = 0;
        let mut found = vec![];
        // wr and rw edges, G1a/G1b, fractured reads
        for (ti, &t) in self.txn_of.iter().enumerate() {
            // What t saw of each key: the initial state, a version at a known position,
            // or a version no replica holds (position unknown: no fractured-read
            // judgement can rest on it).
            let rec = self.rec_of[ti] as usize;
            read_pos.clear();
            read_pos.extend(self.reads_at(rec).map(|(r, k)| {
                let seen = match r.version {
                    None => Some(None),
                    Some(v) => self.pos_of(v).map(Some),
                };
                (k, seen)
            }));
            // Few reads (the common case): a linear search beats hashing.
            let read_map: Option<HashMap<u32, Option<Option<usize>>>> =
                (read_pos.len() > 16).then(|| read_pos.iter().copied().collect());
            let seen_of = |k: u32| -> Option<Option<Option<usize>>> {
                match &read_map {
                    Some(m) => m.get(&k).copied(),
                    None => read_pos.iter().find(|(rk, _)| *rk == k).map(|(_, s)| *s),
                }
            };
            for (r, ki) in self.reads_at(rec) {
                let order = self.order_of(ki);
                let next = match r.version {
                    None => order.first(),
                    Some(v) => {
                        if v.txn == t.id {
                            continue;
                        }
                        let wi = self.ix(v.txn);
                        match wi.map(|i| (i, &h.txns[i])) {
                            None if self.incomplete => {
                                unlisted += 1;
                                continue;
                            }
                            None => {
                                found.push((
                                    Kind::G1a,
                                    vec![t.id],
                                    format!("{} read {}={v}, written by no recorded transaction", t.id, r.key),
                                ));
                                continue;
                            }
                            Some((wi, w)) => {
                                let Some(wn) = self.node_at(wi) else {
                                    found.push((
                                        Kind::G1a,
                                        vec![t.id, w.id],
                                        format!("{} read {}={v} written by {} which did not commit", t.id, r.key, w.id),
                                    ));
                                    continue;
                                };
                                if self.final_at(wi, ki) != Some(v) {
                                    found.push((
                                        Kind::G1b,
                                        vec![t.id, w.id],
                                        format!("{} read {}={v}, an intermediate write of {}", t.id, r.key, w.id),
                                    ));
                                    continue;
                                }
                                g.add(wn, ti, EdgeKind::Wr, ki);
                                // fractured read: t saw w's write to r.key but an older
                                // version of another key w wrote
                                for &(k2, v2) in &self.finals[wi] {
                                    if let Some(Some(seen)) = seen_of(k2) {
                                        // the initial state is older than any write
                                        let older = match (seen, self.pos_of(v2)) {
                                            (None, _) => true,
                                            (Some(p), Some(wpos)) => p < wpos,
                                            (Some(_), None) => false,
                                        };
                                        if older {
                                            found.push((
                                                Kind::FracturedRead,
                                                vec![t.id, w.id],
                                                format!(
                                                    "{} read {}={v} of {} but an older version of {} than {v2}",
                                                    t.id,
                                                    r.key,
                                                    w.id,
                                                    self.keys.key(k2)
                                                ),
                                            ));
                                        }
                                    }
                                }
                                match self.pos_of(v) {
                                    Some(p) => order.get(p + 1),
                                    None => None,
                                }
                            }
                        }
                    }
                };
                if let Some(nv) = next {
                    if let Some(x) = self.node_of(nv.txn) {
                        if x != ti {
                            g.add(ti, x, EdgeKind::Rw, ki);
                        }
                    }
                }
            }
        }
        self.unlisted += unlisted;
        for (k, t, d) in found {
            self.push(k, t, d);
        }
        g
    }

    fn fmt_cycle(&self, cyc: &[Edge]) -> String {
        let mut s = String::new();
        for (i, e) in cyc.iter().enumerate() {
            if i == 0 {
                s.push_str(&self.txn_of[e.from].id.to_string());
            }
            if e.kind == EdgeKind::So {
                s.push_str(&format!(" -so-> {}", self.txn_of[e.to].id));
            } else {
                s.push_str(&format!(
                    " -{}({})-> {}",
                    e.kind,
                    self.keys.key(e.key),
                    self.txn_of[e.to].id
                ));
            }
        }
        s
    }

    /// Reports the worst cycle of every strongly connected component and returns the
    /// components (the real-time pass needs them).
    fn cycles(&mut self, g: &Graph) -> Vec<Vec<usize>> {
        let comps = g.sccs(|_| true);
        for comp in &comps {
            let comp = comp.as_slice();
            let (kind, cyc) = if let Some(c) = g.cycle_within(comp, |k| k == EdgeKind::Ww) {
                (Kind::G0, c)
            } else if let Some(c) = g.cycle_within(comp, |k| k != EdgeKind::Rw) {
                (Kind::G1c, c)
            } else if let Some(c) = g.single_rw_cycle(comp) {
                let kind = if self.is_lost_update(&c) {
                    Kind::LostUpdate
                } else {
                    Kind::GSingle
                };
                (kind, c)
            } else if let Some(c) = g.cycle_within(comp, |_| true) {
                (Kind::G2, c)
            } else {
                continue;
            };
            let txns = cyc.iter().map(|e| self.txn_of[e.from].id).collect();
            let d = self.fmt_cycle(&cyc);
            self.push(kind, txns, d);
            if self.si_violation.is_none() {
                if let Some(c) = g.si_cycle(comp) {
                    let rws = c.iter().filter(|e| e.kind == EdgeKind::Rw).count();
                    let kind = if rws == 0 {
                        "G1c"
                    } else if c.len() == 2 && self.is_lost_update(&c) {
                        "lost-update"
                    } else if rws == 1 {
                        "G-single (read skew)"
                    } else {
                        // Two or more anti-dependencies, none adjacent: two readers saw
                        // two writes in opposite orders.
                        "long fork"
                    };
                    self.si_violation = Some(format!("{kind}: {}", self.fmt_cycle(&c)));
                }
            }
        }
        comps
    }

    /// A two-transaction cycle `a -rw(k)-> b -ww(k)-> a` where both read the same
    /// version of `k`.
    fn is_lost_update(&self, cyc: &[Edge]) -> bool {
        if cyc.len() != 2 || cyc[0].key != cyc[1].key {
            return false;
        }
        let key = self.keys.key(cyc[0].key);
        let (a, b) = (self.txn_of[cyc[0].from], self.txn_of[cyc[0].to]);
        let read = |t: &TxnRecord| t.reads.iter().find(|r| &r.key == key).map(|r| r.version);
        let wrote = |t: &TxnRecord| t.writes.iter().any(|w| &w.key == key);
        matches!((read(a), read(b)), (Some(x), Some(y)) if x == y) && wrote(a) && wrote(b)
    }

    /// Whether an order of the transactions respects both the acyclic dependency graph
    /// `g` and real time, found without building the real-time graph: Kahn's
    /// topological sort, where a transaction is ready when its dependencies are placed
    /// and every transaction that ended before it started is placed. Among those whose
    /// dependencies are placed, the one that started first is the likeliest to be
    /// ready; if even it is not, none is, and a cycle through real time exists (the
    /// caller then builds the graph to find and print it). False also for a
    /// transaction that ended before it started, which the graph pass judges.
    fn real_time_order(&self, g: &Graph) -> bool {
        use std::cmp::Reverse;
        let n = self.txn_of.len();
        let end: Vec<u64> = self
            .txn_of
            .iter()
            .map(|t| match (t.outcome, t.end) {
                (Outcome::Committed, Some(e)) => e,
                _ => u64::MAX,
            })
            .collect();
        if self.txn_of.iter().zip(&end).any(|(t, &e)| e < t.start) {
            return false;
        }
        let mut indeg = vec![0u32; n];
        for v in 0..n {
            for w in g.succ(v) {
                indeg[w] += 1;
            }
        }
        let mut by_end: Vec<u32> = (0..n as u32).collect();
        by_end.sort_unstable_by_key(|&i| end[i as usize]);
        let mut placed = vec![false; n];
        let mut first_open = 0;
        let mut ready: std::collections::BinaryHeap<Reverse<(u64, u32)>> = (0..n)
            .filter(|&i| indeg[i] == 0)
            .map(|i| Reverse((self.txn_of[i].start, i as u32)))
            .collect();
        let mut count = 0;
        while let Some(Reverse((start, i))) = ready.pop() {
            while first_open < n && placed[by_end[first_open] as usize] {
                first_open += 1;
            }
            // the earliest end among transactions not yet placed
            if first_open < n && end[by_end[first_open] as usize] < start {
                return false;
            }
            placed[i as usize] = true;
            count += 1;
            for w in g.succ(i as usize) {
                indeg[w] -= 1;
                if indeg[w] == 0 {
                    ready.push(Reverse((self.txn_of[w].start, w as u32)));
                }
            }
        }
        count == n
    }

    /// Whether each session's consecutive transactions are ordered by real time: the
    /// earlier one committed and its outcome came before the later one started.
    fn sessions_in_real_time(&self, sessions: &[Vec<usize>]) -> bool {
        sessions.iter().all(|m| {
            m.windows(2).all(|w| {
                let (a, b) = (self.txn_of[w[0]], self.txn_of[w[1]]);
                a.outcome == Outcome::Committed && a.end.is_some_and(|e| e < b.start)
            })
        })
    }

    /// Looks for cycles that need real-time edges: first by a topological sort that
    /// needs no real-time graph (`real_time_order`, the common acyclic case), else
    /// through the graph with real-time edges added through a chain of time points (so
    /// it stays linear in size), which are taken out again after. Returns whether the
    /// graph with real time is acyclic. Consecutive starts share one
    /// time point, and so do consecutive ends: a point is entered only from the one
    /// before it, so sharing changes no path between transactions.
    fn real_time(&mut self, g: &mut Graph, dsg_comps: &[Vec<usize>]) -> bool {
        (dsg_comps.is_empty() && self.real_time_order(g)) || self.real_time_graph(g, dsg_comps)
    }

    /// The real-time pass over the graph with real-time edges through time points:
    /// reports each cycle that needs them; returns whether there is none.
    fn real_time_graph(&mut self, g: &mut Graph, dsg_comps: &[Vec<usize>]) -> bool {
        let n = self.txn_of.len();
        // events: (time, 0 = start / 1 = end, txn index); starts sort before ends at
        // equal times so that touching intervals are not ordered.
        let mut ev: Vec<(u64, u8, u32)> = Vec::with_capacity(2 * n);
        for (i, t) in self.txn_of.iter().enumerate() {
            ev.push((t.start, 0, i as u32));
            if let (Outcome::Committed, Some(e)) = (t.outcome, t.end) {
                ev.push((e, 1, i as u32));
            }
        }
        ev.sort_unstable();
        let runs = ev.chunk_by(|a, b| a.1 == b.1).count();
        let dsg_cyclic: HashSet<usize> = dsg_comps.iter().flatten().copied().collect();
        let rt = g;
        rt.grow(runs);
        for (p, run) in ev.chunk_by(|a, b| a.1 == b.1).enumerate() {
            let tp = n + p;
            if p + 1 < runs {
                rt.add(tp, tp + 1, EdgeKind::Rt, 0);
            }
            for &(_, kind, i) in run {
                if kind == 0 {
                    rt.add(tp, i as usize, EdgeKind::Rt, 0);
                } else {
                    rt.add(i as usize, tp, EdgeKind::Rt, 0);
                }
            }
        }
        let comps = rt.sccs(|_| true);
        for comp in &comps {
            let txns: Vec<usize> = comp.iter().copied().filter(|&x| x < n).collect();
            if txns.len() < 2 || txns.iter().all(|x| dsg_cyclic.contains(x)) {
                continue;
            }
            let Some(cyc) = rt.cycle_within(comp, |_| true) else {
                continue;
            };
            let path: Vec<String> = cyc
                .iter()
                .filter(|e| e.from < n)
                .map(|e| {
                    let t = self.txn_of[e.from];
                    format!("{} [{}..{}]", t.id, t.start, t.end.unwrap_or(0))
                })
                .collect();
            let ids = cyc
                .iter()
                .filter(|e| e.from < n)
                .map(|e| self.txn_of[e.from].id)
                .collect();
            self.push(
                Kind::RealTime,
                ids,
                format!("serialization order contradicts real time: {}", path.join(" -> ")),
            );
        }
        // Each transaction that ended got one edge, added last.
        for &(_, kind, i) in &ev {
            if kind == 1 {
                rt.pop(i as usize);
            }
        }
        rt.truncate(n);
        comps.is_empty()
    }
}

/// The version a transaction installs for each key number (its last write to it), by
/// key number: [`TxnRecord::final_writes`] without a map per transaction.
fn final_writes<'h>(t: &'h TxnRecord, keys: &mut graph::KeyIds<'h>) -> Vec<(u32, VersionId)> {
    let mut f: Vec<(u32, VersionId)> = Vec::with_capacity(t.writes.len());
    for w in &t.writes {
        let k = keys.id(&w.key);
        match f.iter_mut().find(|(x, _)| *x == k) {
            Some(e) => e.1 = w.version,
            None => f.push((k, w.version)),
        }
    }
    f.sort_unstable_by_key(|e| e.0);
    f
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
