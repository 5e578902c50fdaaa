//! The checker's verdict: anomaly kinds, anomalies, levels and the report.

use super::*;

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
    /// search out of budget, an incomplete file). JSON: `true`, `false`, `"unknown"`.
    #[serde(serialize_with = "ser_level", deserialize_with = "de_level", default)]
    pub holds: Option<bool>,
    /// For a level that fails, the smallest counterexample found: the anomaly's name,
    /// its transactions and edges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counterexample: Option<String>,
}

/// Why a verdict could not be decided. Which verdicts it leaves open follows from its
/// variant ([`Unknown::opens_order`], [`Unknown::opens_strict`],
/// [`Unknown::opens_durability`]), never from its wording.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "kebab-case")]
pub enum Unknown {
    /// A key's version order that neither the replicas nor the history fix (and the
    /// search did not decide): every order-dependent level is open.
    Order {
        /// The key.
        key: String,
        /// What is missing.
        why: String,
    },
    /// Reads or installed versions of transactions an incomplete history does not list.
    Unlisted(usize),
    /// The file is cut short (its last record ends early): everything it lacks is open.
    Cut(String),
    /// The search for a serial order that respects real time ran out of budget.
    RealTime(String),
    /// Replicas whose final state the history does not record: durability is open.
    NoFinalState(String),
    /// Causal consistency was not judged (the history is too large for it).
    Causal(String),
}

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unknown::Order { key, why } => write!(f, "key {key}: {why}"),
            Unknown::Unlisted(n) => write!(
                f,
                "{n} reads or installed versions of transactions the incomplete history does not list"
            ),
            Unknown::Cut(w) | Unknown::RealTime(w) | Unknown::NoFinalState(w) | Unknown::Causal(w) => f.write_str(w),
        }
    }
}

impl Unknown {
    /// Whether it leaves serializability and every order-dependent level open.
    pub fn opens_order(&self) -> bool {
        matches!(self, Unknown::Order { .. } | Unknown::Unlisted(_) | Unknown::Cut(_))
    }
    /// Whether it leaves strict serializability open.
    pub fn opens_strict(&self) -> bool {
        self.opens_order() || matches!(self, Unknown::RealTime(_))
    }
    /// Whether it leaves durability open.
    pub fn opens_durability(&self) -> bool {
        matches!(self, Unknown::NoFinalState(_) | Unknown::Cut(_))
    }
}

/// A verdict as the text and JSON print it: `true`, `false` or `"unknown"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Shown to hold.
    Holds,
    /// Shown to fail.
    Fails,
    /// Not decided.
    Unknown,
}

impl Verdict {
    /// `b`, unless `unknown`.
    pub fn of(b: bool, unknown: bool) -> Verdict {
        match (b, unknown) {
            (_, true) => Verdict::Unknown,
            (true, false) => Verdict::Holds,
            (false, false) => Verdict::Fails,
        }
    }
    /// A level's `holds`.
    pub fn of_level(holds: Option<bool>) -> Verdict {
        holds.map_or(Verdict::Unknown, |b| Verdict::of(b, false))
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Holds => "true",
            Verdict::Fails => "false",
            Verdict::Unknown => "unknown",
        })
    }
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Verdict::Holds => s.serialize_bool(true),
            Verdict::Fails => s.serialize_bool(false),
            Verdict::Unknown => s.serialize_str("unknown"),
        }
    }
}

/// Reads `true`, `false` or `"unknown"` (or null) as a verdict.
#[derive(Deserialize)]
#[serde(untagged)]
enum VerdictIn {
    Bool(bool),
    Text(String),
}

/// A verdict read: `Some(b)`, or `None` for `"unknown"` (or null).
fn read_verdict<E: serde::de::Error>(v: Option<VerdictIn>) -> Result<Option<bool>, E> {
    match v {
        None => Ok(None),
        Some(VerdictIn::Bool(b)) => Ok(Some(b)),
        Some(VerdictIn::Text(t)) if t == "unknown" => Ok(None),
        Some(VerdictIn::Text(t)) => Err(E::custom(format!("verdict `{t}` (true, false or \"unknown\")"))),
    }
}

/// A report's boolean field from its JSON verdict: `"unknown"` reads as `true` (no
/// anomaly found; the `unknown` list says why it is open).
fn de_verdict<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(read_verdict(Some(VerdictIn::deserialize(d)?))?.unwrap_or(true))
}

/// A level's `holds` from its JSON verdict (`"unknown"` or null: `None`).
fn de_level<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    read_verdict(Option::<VerdictIn>::deserialize(d)?)
}

fn ser_level<S: serde::Serializer>(h: &Option<bool>, s: S) -> Result<S::Ok, S::Error> {
    Verdict::of_level(*h).serialize(s)
}

/// The checker's verdict. In JSON each verdict field (`serializable`,
/// `strict_serializable`, `atomic`, `durable`, each level's `holds`) is `true`, `false`
/// or `"unknown"`, as the text prints it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Report {
    /// No serializability anomaly.
    #[serde(deserialize_with = "de_verdict")]
    pub serializable: bool,
    /// No real-time violation either (computed whether or not the protocol claims it).
    #[serde(deserialize_with = "de_verdict")]
    pub strict_serializable: bool,
    /// No atomicity anomaly.
    #[serde(deserialize_with = "de_verdict")]
    pub atomic: bool,
    /// Every acknowledged commit present at every replica that should hold it, and
    /// replicas agree.
    #[serde(deserialize_with = "de_verdict")]
    pub durable: bool,
    /// Everything found that breaks the protocol's claims (real-time anomalies only if
    /// it claims strictness; only G0/G1 and durability if it claims read committed).
    pub anomalies: Vec<Anomaly>,
    /// Committed transactions checked.
    pub committed: usize,
    /// Of `committed`, transactions whose client never learned the outcome (recorded
    /// unknown) but that count as committed because a replica holds one of their writes
    /// or a committed transaction read one. A runtime's own count of commits (the
    /// clients' answers) is `committed` less these.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub committed_of_unknown_outcome: usize,
    /// Why a verdict above could not be decided (a key's version order that neither
    /// the replicas nor the history fix, a replica whose final state is missing): a
    /// verdict reported `true` then means "no anomaly found", not "holds".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<Unknown>,
    /// How verdicts were reached where the history gave no version order (the search
    /// for one, and what it spent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The isolation levels the history satisfies, weakest first (whatever the
    /// protocol claims).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<Level>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            serializable: Verdict,
            strict_serializable: Verdict,
            atomic: Verdict,
            durable: Verdict,
            anomalies: &'a [Anomaly],
            committed: usize,
            #[serde(skip_serializing_if = "is_zero")]
            committed_of_unknown_outcome: usize,
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            unknown: &'a [Unknown],
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            notes: &'a [String],
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            levels: &'a [Level],
        }
        Out {
            serializable: self.serializable_verdict(),
            strict_serializable: self.strict_verdict(),
            atomic: Verdict::of(self.atomic, false),
            durable: self.durable_verdict(),
            anomalies: &self.anomalies,
            committed: self.committed,
            committed_of_unknown_outcome: self.committed_of_unknown_outcome,
            unknown: &self.unknown,
            notes: &self.notes,
            levels: &self.levels,
        }
        .serialize(s)
    }
}

impl Report {
    /// Whether the history is clean for the protocol's claims.
    pub fn ok(&self) -> bool {
        self.anomalies.is_empty()
    }
    /// Whether serializability could not be decided: a key's version order is not
    /// fixed, and no cycle was found anyway.
    pub fn order_unknown(&self) -> bool {
        self.serializable && self.unknown.iter().any(Unknown::opens_order)
    }
    /// Whether strict serializability could not be decided: serializability could not,
    /// or the search for an order that respects real time ran out of budget.
    pub fn strict_unknown(&self) -> bool {
        self.strict_serializable && self.unknown.iter().any(Unknown::opens_strict)
    }
    /// Whether durability could not be decided: a replica's final state is missing.
    pub fn durability_unknown(&self) -> bool {
        self.durable && self.unknown.iter().any(Unknown::opens_durability)
    }
    /// Serializability as printed: `true`, `false` or `unknown`.
    pub fn serializable_verdict(&self) -> Verdict {
        Verdict::of(self.serializable, self.order_unknown())
    }
    /// Strict serializability as printed.
    pub fn strict_verdict(&self) -> Verdict {
        Verdict::of(self.strict_serializable, self.strict_unknown())
    }
    /// Durability as printed.
    pub fn durable_verdict(&self) -> Verdict {
        Verdict::of(self.durable, self.durability_unknown())
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
