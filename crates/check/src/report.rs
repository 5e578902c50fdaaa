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
