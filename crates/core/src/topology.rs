//! Topologies (DCs, RTT matrix, nodes per DC, shards), the named presets of docs/DESIGN.md,
//! TOML topology files, placement policies, and the resolved [`Layout`] that maps keys
//! to shards, shards to replica nodes, and nodes to DCs.
//!
//! # TOML format
//!
//! ```toml
//! name = "mine"                 # optional, defaults to the file stem
//! dcs = ["A", "B", "C"]
//! nodes_per_dc = 3              # data-server nodes in every DC
//! shards = 3
//! intra_rtt_ms = 0.5            # optional, RTT between two nodes of one DC
//! # either a full, symmetric matrix in `dcs` order ...
//! rtt_ms = [[0, 50, 60], [50, 0, 70], [60, 70, 0]]
//! # ... or one [[link]] per DC pair
//! # [[link]]
//! # a = "A"
//! # b = "B"
//! # rtt_ms = 50
//! ```
//!
//! # Sharding
//!
//! A key belongs to shard `fnv1a(key) mod shards`, except a key that starts with
//! `#N/` (N decimal), which belongs to shard `N mod shards`: workloads use this to put
//! keys in a chosen shard (and so a chosen DC).

use crate::ids::{DcId, NodeId, ShardId};
use crate::key::Key;
use crate::time::{ms, Time};
use serde::Deserialize;
use std::path::Path;

/// A bad topology or placement, with the problem named.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TopologyError {
    /// The TOML could not be parsed or a field is missing or mistyped.
    #[error("topology file {file}: {msg}")]
    Parse {
        /// File name.
        file: String,
        /// Parser message.
        msg: String,
    },
    /// A DC named in a link or flag is not in `dcs` (the second field lists them).
    #[error("unknown DC `{0}` (the topology's DCs: {1})")]
    UnknownDc(String, String),
    /// The same DC is listed twice.
    #[error("DC `{0}` is listed twice")]
    DuplicateDc(String),
    /// RTT(a,b) differs from RTT(b,a).
    #[error("asymmetric RTT: {a}->{b} is {ab} ms but {b}->{a} is {ba} ms")]
    Asymmetric {
        /// First DC.
        a: String,
        /// Second DC.
        b: String,
        /// RTT a->b.
        ab: f64,
        /// RTT b->a.
        ba: f64,
    },
    /// A negative or non-finite RTT.
    #[error("bad RTT between {a} and {b}: {v} ms (must be a finite number >= 0)")]
    BadRtt {
        /// First DC.
        a: String,
        /// Second DC.
        b: String,
        /// The value.
        v: f64,
    },
    /// No RTT given for a pair of DCs.
    #[error("no RTT given between {0} and {1}")]
    MissingRtt(String, String),
    /// The matrix has the wrong number of rows or columns.
    #[error("rtt_ms matrix must be {n}x{n} (one row and column per DC), got {got}")]
    MatrixShape {
        /// Number of DCs.
        n: usize,
        /// What was found.
        got: String,
    },
    /// Any other structural problem.
    #[error("{0}")]
    Invalid(String),
    /// Not a preset and not a readable file.
    #[error("unknown topology `{0}`: not a preset ({presets}) nor a readable file", presets = Topology::PRESETS.join(", "))]
    Unknown(String),
}

/// A set of DCs with their RTTs, nodes per DC and shard count.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Name (preset name or file stem).
    pub name: String,
    /// DC names, indexed by [`DcId`].
    pub dcs: Vec<String>,
    /// Symmetric RTT matrix in milliseconds (diagonal unused).
    pub rtt_ms: Vec<Vec<f64>>,
    /// RTT between two nodes of the same DC, in milliseconds.
    pub intra_rtt_ms: f64,
    /// Data-server nodes in every DC.
    pub nodes_per_dc: u32,
    /// Number of shards.
    pub shards: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    a: String,
    b: String,
    rtt_ms: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    name: Option<String>,
    dcs: Vec<String>,
    nodes_per_dc: u32,
    shards: u32,
    intra_rtt_ms: Option<f64>,
    rtt_ms: Option<Vec<Vec<f64>>>,
    link: Option<Vec<RawLink>>,
}

/// Default intra-DC RTT for the WAN presets: a typical same-region RTT.
pub const DEFAULT_INTRA_RTT_MS: f64 = 0.5;

impl Topology {
    /// The preset names.
    pub const PRESETS: [&'static str; 7] = ["rc5", "us3", "world3", "far3", "two50", "lan", "gcp3"];

    /// Builds a topology from DC names and the upper triangle of RTTs given as pairs.
    fn from_pairs(
        name: &str,
        dcs: &[&str],
        pairs: &[(&str, &str, f64)],
        nodes_per_dc: u32,
        shards: u32,
        intra: f64,
    ) -> Topology {
        let n = dcs.len();
        let mut m = vec![vec![0.0; n]; n];
        for (a, b, r) in pairs {
            let ia = dcs.iter().position(|d| d == a).expect("preset DC");
            let ib = dcs.iter().position(|d| d == b).expect("preset DC");
            m[ia][ib] = *r;
            m[ib][ia] = *r;
        }
        Topology {
            name: name.to_string(),
            dcs: dcs.iter().map(|s| s.to_string()).collect(),
            rtt_ms: m,
            intra_rtt_ms: intra,
            nodes_per_dc,
            shards,
        }
    }

    /// DCs that are all `rtt_ms` apart (the triangle inequality holds exactly), with
    /// `intra_rtt_ms` inside each: the topology on which the papers' trip counts hold
    /// exactly, or a LAN split into "DCs" that faults can cut apart.
    pub fn uniform(
        name: &str,
        dcs: &[&str],
        rtt_ms: f64,
        intra_rtt_ms: f64,
        nodes_per_dc: u32,
        shards: u32,
    ) -> Topology {
        let n = dcs.len();
        let rtt = (0..n)
            .map(|a| (0..n).map(|b| if a == b { 0.0 } else { rtt_ms }).collect())
            .collect();
        Topology {
            name: name.to_string(),
            dcs: dcs.iter().map(|s| s.to_string()).collect(),
            rtt_ms: rtt,
            intra_rtt_ms,
            nodes_per_dc,
            shards,
        }
    }

    /// A named preset of docs/DESIGN.md, or `None`.
    pub fn preset(name: &str) -> Option<Topology> {
        let t = match name {
            // replicated-commit.md Table 1; 3 shards over 3 nodes per DC (§5).
            "rc5" => Self::from_pairs(
                "rc5",
                &["C", "V", "O", "I", "S"],
                &[
                    ("C", "O", 21.0),
                    ("C", "V", 86.0),
                    ("C", "I", 159.0),
                    ("C", "S", 173.0),
                    ("O", "V", 101.0),
                    ("O", "I", 169.0),
                    ("O", "S", 205.0),
                    ("V", "I", 99.0),
                    ("V", "S", 260.0),
                    ("I", "S", 341.0),
                ],
                3,
                3,
                DEFAULT_INTRA_RTT_MS,
            ),
            // crossstitch.md §5.2.4 configurations 1-3.
            "us3" => Self::from_pairs(
                "us3",
                &["NY", "CA", "TX"],
                &[("NY", "CA", 70.0), ("CA", "TX", 40.0), ("TX", "NY", 50.0)],
                2,
                6,
                DEFAULT_INTRA_RTT_MS,
            ),
            "world3" => Self::from_pairs(
                "world3",
                &["LON", "CA", "HK"],
                &[("LON", "CA", 140.0), ("CA", "HK", 164.0), ("HK", "LON", 308.0)],
                2,
                6,
                DEFAULT_INTRA_RTT_MS,
            ),
            "far3" => Self::from_pairs(
                "far3",
                &["BNE", "SHA", "PAR"],
                &[("BNE", "SHA", 463.0), ("SHA", "PAR", 546.0), ("PAR", "BNE", 318.0)],
                2,
                6,
                DEFAULT_INTRA_RTT_MS,
            ),
            // crossstitch.md §5.2.2: two groups, 50 ms apart.
            "two50" => Self::from_pairs("two50", &["A", "B"], &[("A", "B", 50.0)], 2, 4, DEFAULT_INTRA_RTT_MS),
            // catenae.md §VII-B: europe-west1, us-central1, asia-east1 with four storage
            // servers per DC. The paper gives no RTTs; these are approximate published
            // median inter-region RTTs of Google Cloud (us-central1-europe-west1 ~105 ms,
            // us-central1-asia-east1 ~155 ms, europe-west1-asia-east1 ~255 ms).
            "gcp3" => Self::from_pairs(
                "gcp3",
                &["EU", "US", "AS"],
                &[("US", "EU", 105.0), ("US", "AS", 155.0), ("EU", "AS", 255.0)],
                4,
                4,
                DEFAULT_INTRA_RTT_MS,
            ),
            // hacommit.md §VII-A: one DC, 0.1 ms between nodes, 8 nodes.
            "lan" => Self::from_pairs("lan", &["L"], &[], 8, 8, 0.1),
            _ => return None,
        };
        Some(t)
    }

    /// A preset name or a TOML file path.
    pub fn load(spec: &str) -> Result<Topology, TopologyError> {
        if let Some(t) = Self::preset(spec) {
            return Ok(t);
        }
        let path = Path::new(spec);
        let text = std::fs::read_to_string(path).map_err(|_| TopologyError::Unknown(spec.into()))?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| spec.to_string());
        Self::from_toml(&text, &stem)
    }

    /// Parses and validates a TOML topology (see the module docs).
    pub fn from_toml(text: &str, default_name: &str) -> Result<Topology, TopologyError> {
        let raw: RawTopology = toml::from_str(text).map_err(|e| {
            // Name the line and column of the problem, counted from 1.
            let at = e.span().map(|sp| {
                let before = &text[..sp.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!("line {line}, column {col}: ")
            });
            TopologyError::Parse {
                file: default_name.to_string(),
                msg: format!("{}{}", at.unwrap_or_default(), e.message().trim().replace('\n', "; ")),
            }
        })?;
        let n = raw.dcs.len();
        if n == 0 {
            return Err(TopologyError::Invalid("`dcs` is empty".into()));
        }
        for (i, d) in raw.dcs.iter().enumerate() {
            if d.is_empty() {
                return Err(TopologyError::Invalid("a DC name is empty".into()));
            }
            if raw.dcs[..i].contains(d) {
                return Err(TopologyError::DuplicateDc(d.clone()));
            }
        }
        let idx = |name: &str| {
            raw.dcs
                .iter()
                .position(|d| d == name)
                .ok_or_else(|| TopologyError::UnknownDc(name.to_string(), raw.dcs.join(", ")))
        };
        let rtt = match (raw.rtt_ms, raw.link) {
            (Some(_), Some(_)) => {
                return Err(TopologyError::Invalid(
                    "give either `rtt_ms` (matrix) or [[link]] entries, not both".into(),
                ))
            }
            (None, None) if n > 1 => {
                return Err(TopologyError::Invalid(
                    "missing RTTs: give `rtt_ms` (matrix) or [[link]] entries".into(),
                ))
            }
            (None, None) => vec![vec![0.0]],
            (Some(m), None) => {
                if m.len() != n || m.iter().any(|r| r.len() != n) {
                    let got = format!(
                        "{} rows of lengths {:?}",
                        m.len(),
                        m.iter().map(|r| r.len()).collect::<Vec<_>>()
                    );
                    return Err(TopologyError::MatrixShape { n, got });
                }
                if let Some(i) = (0..n).find(|i| m[*i][*i] != 0.0) {
                    return Err(TopologyError::Invalid(format!(
                        "rtt_ms[{i}][{i}] is {} ms: a DC's RTT to itself must be 0 (set the RTT inside a DC with intra_rtt_ms)",
                        m[i][i]
                    )));
                }
                m
            }
            (None, Some(links)) => {
                let mut m = vec![vec![f64::NAN; n]; n];
                for l in &links {
                    let (a, b) = (idx(&l.a)?, idx(&l.b)?);
                    if a == b {
                        return Err(TopologyError::Invalid(format!(
                            "link from `{}` to itself (use intra_rtt_ms)",
                            l.a
                        )));
                    }
                    for (x, y) in [(a, b), (b, a)] {
                        if !m[x][y].is_nan() && m[x][y] != l.rtt_ms {
                            return Err(TopologyError::Asymmetric {
                                a: raw.dcs[x].clone(),
                                b: raw.dcs[y].clone(),
                                ab: m[x][y],
                                ba: l.rtt_ms,
                            });
                        }
                        m[x][y] = l.rtt_ms;
                    }
                }
                for (a, row) in m.iter_mut().enumerate() {
                    row[a] = 0.0;
                }
                m
            }
        };
        for (a, row) in rtt.iter().enumerate() {
            for (b, &v) in row.iter().enumerate() {
                if a == b {
                    continue;
                }
                if v.is_nan() {
                    return Err(TopologyError::MissingRtt(raw.dcs[a].clone(), raw.dcs[b].clone()));
                }
                if !v.is_finite() || v < 0.0 {
                    return Err(TopologyError::BadRtt {
                        a: raw.dcs[a].clone(),
                        b: raw.dcs[b].clone(),
                        v,
                    });
                }
                if rtt[b][a] != v {
                    return Err(TopologyError::Asymmetric {
                        a: raw.dcs[a].clone(),
                        b: raw.dcs[b].clone(),
                        ab: v,
                        ba: rtt[b][a],
                    });
                }
            }
        }
        let intra = raw.intra_rtt_ms.unwrap_or(DEFAULT_INTRA_RTT_MS);
        if !intra.is_finite() || intra < 0.0 {
            return Err(TopologyError::Invalid(format!(
                "intra_rtt_ms must be a finite number >= 0, got {intra}"
            )));
        }
        if raw.nodes_per_dc == 0 {
            return Err(TopologyError::Invalid("nodes_per_dc must be at least 1".into()));
        }
        if raw.shards == 0 {
            return Err(TopologyError::Invalid("shards must be at least 1".into()));
        }
        Ok(Topology {
            name: raw.name.unwrap_or_else(|| default_name.to_string()),
            dcs: raw.dcs,
            rtt_ms: rtt,
            intra_rtt_ms: intra,
            nodes_per_dc: raw.nodes_per_dc,
            shards: raw.shards,
        })
    }

    /// The id of a DC by name.
    pub fn dc(&self, name: &str) -> Result<DcId, TopologyError> {
        self.dcs
            .iter()
            .position(|d| d.eq_ignore_ascii_case(name))
            .map(|i| DcId(i as u16))
            .ok_or_else(|| TopologyError::UnknownDc(name.to_string(), self.dcs.join(", ")))
    }

    /// Number of DCs.
    pub fn num_dcs(&self) -> usize {
        self.dcs.len()
    }

    /// RTT in ms between two DCs (intra-DC RTT when equal).
    pub fn rtt(&self, a: DcId, b: DcId) -> f64 {
        if a == b {
            self.intra_rtt_ms
        } else {
            self.rtt_ms[a.0 as usize][b.0 as usize]
        }
    }

    /// One-way delay (RTT/2) between two DCs, without jitter.
    pub fn one_way(&self, a: DcId, b: DcId) -> Time {
        ms(self.rtt(a, b) / 2.0)
    }

    /// A copy restricted to the named DCs (in the given order), e.g. `C,V,O` of `rc5`.
    pub fn subset(&self, names: &[&str]) -> Result<Topology, TopologyError> {
        let ids = names.iter().map(|n| self.dc(n)).collect::<Result<Vec<_>, _>>()?;
        let mut t = self.clone();
        t.name = format!("{}[{}]", self.name, names.join(""));
        t.dcs = ids.iter().map(|d| self.dcs[d.0 as usize].clone()).collect();
        t.rtt_ms = ids
            .iter()
            .map(|a| ids.iter().map(|b| self.rtt_ms[a.0 as usize][b.0 as usize]).collect())
            .collect();
        Ok(t)
    }
}

/// The shard of `key` among `shards` shards (see the module docs).
pub fn shard_of(key: &Key, shards: u32) -> ShardId {
    let n = shards.max(1) as u64;
    let b = key.as_bytes();
    if b.first() == Some(&b'#') {
        if let Some(end) = b.iter().position(|&c| c == b'/') {
            if let Some(v) = std::str::from_utf8(&b[1..end]).ok().and_then(|s| s.parse::<u64>().ok()) {
                return ShardId((v % n) as u32);
            }
        }
    }
    ShardId((key.stable_hash() % n) as u32)
}

/// Which DC is a shard's home, for [`Placement::Home`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HomeRule {
    /// Shard `s` lives in DC `s mod #DCs`.
    Spread,
    /// Every shard lives in this DC.
    Dc(DcId),
}

/// Where shard replicas live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Every DC holds every shard (one replica per DC).
    Full,
    /// Each shard lives in one home DC, on `k` distinct nodes of that DC (the first is
    /// the primary).
    Home {
        /// Home DC rule.
        home: HomeRule,
        /// Replicas per shard inside the home DC.
        k: u32,
    },
    /// Each shard on a replica group of `k` nodes spread over DCs: replica `j` of shard
    /// `s` lives in DC `(home + j) mod #DCs` (so up to #DCs replicas are in distinct
    /// DCs), on that DC's node `(s + j div #DCs) mod nodes_per_dc`. The first replica is
    /// the group's initial leader. With one DC (`lan`) the group is `k` distinct nodes.
    Groups {
        /// Home DC rule (where replica 0, the initial leader, lives).
        home: HomeRule,
        /// Replicas per shard.
        k: u32,
    },
}

/// A topology with placement resolved: every server and client node, and which nodes
/// hold which shard. Server nodes are numbered DC-major (`dc * nodes_per_dc + i`),
/// clients after them.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The topology.
    pub topology: Topology,
    /// The placement policy.
    pub placement: Placement,
    /// Replica nodes of each shard; the first is the primary (or, for `Full`, the replica
    /// in DC 0).
    pub shard_replicas: Vec<Vec<NodeId>>,
    /// DC of each node (servers then clients).
    node_dc: Vec<DcId>,
    servers: u32,
}

impl Layout {
    /// Resolves a placement on a topology.
    pub fn new(topology: Topology, placement: Placement) -> Result<Layout, TopologyError> {
        let npd = topology.nodes_per_dc;
        let ndc = topology.num_dcs() as u32;
        let server = |dc: u32, i: u32| NodeId(dc * npd + i % npd);
        let shard_replicas = (0..topology.shards)
            .map(|s| match placement {
                Placement::Full => Ok((0..ndc).map(|d| server(d, s)).collect()),
                Placement::Home { home, k } => {
                    if k == 0 || k > npd {
                        return Err(TopologyError::Invalid(format!(
                            "placement needs 1..={npd} replicas per shard in its home DC, got {k}"
                        )));
                    }
                    let d = match home {
                        HomeRule::Spread => s % ndc,
                        HomeRule::Dc(d) if (d.0 as u32) < ndc => d.0 as u32,
                        HomeRule::Dc(d) => {
                            return Err(TopologyError::UnknownDc(format!("#{}", d.0), topology.dcs.join(", ")))
                        }
                    };
                    Ok((0..k).map(|j| server(d, s + j)).collect())
                }
                Placement::Groups { home, k } => {
                    if k == 0 || k > ndc * npd {
                        return Err(TopologyError::Invalid(format!(
                            "placement needs 1..={} replicas per shard ({ndc} DCs x {npd} nodes), got {k}",
                            ndc * npd
                        )));
                    }
                    let d0 = match home {
                        HomeRule::Spread => s % ndc,
                        HomeRule::Dc(d) if (d.0 as u32) < ndc => d.0 as u32,
                        HomeRule::Dc(d) => {
                            return Err(TopologyError::UnknownDc(format!("#{}", d.0), topology.dcs.join(", ")))
                        }
                    };
                    Ok((0..k).map(|j| server((d0 + j) % ndc, s + j / ndc)).collect())
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let node_dc = (0..ndc * npd).map(|n| DcId((n / npd) as u16)).collect();
        Ok(Layout {
            servers: ndc * npd,
            topology,
            placement,
            shard_replicas,
            node_dc,
        })
    }

    /// Adds a client node in `dc` and returns its id.
    pub fn add_client(&mut self, dc: DcId) -> NodeId {
        self.node_dc.push(dc);
        NodeId(self.node_dc.len() as u32 - 1)
    }

    /// Number of data-server nodes.
    pub fn num_servers(&self) -> u32 {
        self.servers
    }

    /// Number of nodes, servers and clients.
    pub fn num_nodes(&self) -> u32 {
        self.node_dc.len() as u32
    }

    /// Whether a node is a data server.
    pub fn is_server(&self, n: NodeId) -> bool {
        n.0 < self.servers
    }

    /// The DC of a node.
    pub fn dc_of(&self, n: NodeId) -> DcId {
        self.node_dc[n.0 as usize]
    }

    /// The `i`-th server of a DC (wrapping).
    pub fn server(&self, dc: DcId, i: u32) -> NodeId {
        let npd = self.topology.nodes_per_dc;
        NodeId(dc.0 as u32 * npd + i % npd)
    }

    /// Servers of a DC.
    pub fn servers_in(&self, dc: DcId) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.topology.nodes_per_dc).map(move |i| self.server(dc, i))
    }

    /// The shard a key belongs to (see the module docs).
    pub fn shard_of(&self, key: &Key) -> ShardId {
        shard_of(key, self.topology.shards)
    }

    /// Replica nodes of a shard (primary first).
    pub fn replicas(&self, s: ShardId) -> &[NodeId] {
        &self.shard_replicas[s.0 as usize]
    }

    /// The primary replica of a shard.
    pub fn primary(&self, s: ShardId) -> NodeId {
        self.shard_replicas[s.0 as usize][0]
    }

    /// The replica of a shard closest to `dc` (lowest RTT; ties to the earlier one).
    pub fn nearest_replica(&self, s: ShardId, dc: DcId) -> NodeId {
        let reps = self.replicas(s);
        *reps
            .iter()
            .min_by(|a, b| {
                let ra = self.topology.rtt(self.dc_of(**a), dc);
                let rb = self.topology.rtt(self.dc_of(**b), dc);
                ra.partial_cmp(&rb).unwrap_or(std::cmp::Ordering::Equal)
            })
            .unwrap_or(&reps[0])
    }

    /// Shards a node holds a replica of.
    pub fn shards_of(&self, n: NodeId) -> Vec<ShardId> {
        (0..self.topology.shards)
            .map(ShardId)
            .filter(|s| self.replicas(*s).contains(&n))
            .collect()
    }

    /// One-way delay between two nodes, without jitter.
    pub fn one_way(&self, a: NodeId, b: NodeId) -> Time {
        self.topology.one_way(self.dc_of(a), self.dc_of(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Topology::from_toml(text, "t").unwrap_err().to_string()
    }

    #[test]
    fn presets_are_symmetric_and_match_the_table() {
        for p in Topology::PRESETS {
            let t = Topology::preset(p).unwrap();
            for a in 0..t.num_dcs() {
                for b in 0..t.num_dcs() {
                    assert_eq!(t.rtt_ms[a][b], t.rtt_ms[b][a], "{p}");
                }
            }
        }
        let rc5 = Topology::preset("rc5").unwrap();
        let (c, s) = (rc5.dc("C").unwrap(), rc5.dc("S").unwrap());
        assert_eq!(rc5.rtt(c, s), 173.0);
        assert_eq!(rc5.one_way(c, s), 86_500_000);
        let i = rc5.dc("I").unwrap();
        assert_eq!(rc5.rtt(i, s), 341.0);
        assert_eq!(Topology::preset("far3").unwrap().rtt(DcId(0), DcId(1)), 463.0);
        let gcp3 = Topology::preset("gcp3").unwrap();
        assert_eq!(gcp3.rtt(gcp3.dc("EU").unwrap(), gcp3.dc("AS").unwrap()), 255.0);
    }

    #[test]
    fn toml_matrix_and_links_parse() {
        let a = Topology::from_toml(
            "dcs=[\"A\",\"B\"]\nnodes_per_dc=2\nshards=4\nrtt_ms=[[0,50],[50,0]]\n",
            "x",
        )
        .unwrap();
        let b = Topology::from_toml(
            "dcs=[\"A\",\"B\"]\nnodes_per_dc=2\nshards=4\n[[link]]\na=\"A\"\nb=\"B\"\nrtt_ms=50\n",
            "x",
        )
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.name, "x");
    }

    #[test]
    fn bad_topologies_name_the_problem() {
        let e = err("dcs=[\"A\",\"B\"]\nnodes_per_dc=2\nshards=4\nrtt_ms=[[0,50],[60,0]]\n");
        assert!(e.contains("asymmetric RTT: A->B is 50 ms but B->A is 60 ms"), "{e}");
        let e = err("dcs=[\"A\",\"B\"]\nnodes_per_dc=2\nshards=4\n[[link]]\na=\"A\"\nb=\"Z\"\nrtt_ms=5\n");
        assert_eq!(e, "unknown DC `Z` (the topology's DCs: A, B)");
        // Issue 23: a non-zero diagonal was accepted silently; a syntax error named no
        // line or column.
        let e = err("dcs=[\"A\",\"B\"]\nnodes_per_dc=2\nshards=4\nrtt_ms=[[5,50],[50,0]]\n");
        assert!(e.contains("rtt_ms[0][0] is 5 ms"), "{e}");
        let e = err("dcs=[\"A\",\"B\"]\nnodes_per_dc=2\nshards=4x\nrtt_ms=[[0,50],[50,0]]\n");
        assert!(e.contains("line 3, column 9"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        let e = err("dcs=[\"A\",\"B\"]\nnodes_per_dc=2\nshards=4\nrtt_ms=[[0,-5],[-5,0]]\n");
        assert!(e.contains("bad RTT between A and B: -5 ms"), "{e}");
        let e = err("dcs=[\"A\",\"B\"]\nshards=4\nrtt_ms=[[0,5],[5,0]]\n");
        assert!(e.contains("missing field `nodes_per_dc`"), "{e}");
        let e = err("dcs=[\"A\",\"B\",\"C\"]\nnodes_per_dc=2\nshards=4\n[[link]]\na=\"A\"\nb=\"B\"\nrtt_ms=5\n");
        assert!(e.contains("no RTT given between A and C"), "{e}");
        let e = err("dcs=[\"A\",\"B\"]\nnodes_per_dc=2\nshards=4\nrtt_ms=[[0,5]]\n");
        assert!(e.contains("must be 2x2"), "{e}");
        let e = err("dcs=[\"A\",\"A\"]\nnodes_per_dc=2\nshards=4\nrtt_ms=[[0,5],[5,0]]\n");
        assert!(e.contains("listed twice"), "{e}");
        let e = err("dcs=[\"A\"]\nnodes_per_dc=2\nshards=4\nbogus=1\n");
        assert!(e.contains("unknown field `bogus`"), "{e}");
        assert!(matches!(
            Topology::load("no-such-preset"),
            Err(TopologyError::Unknown(_))
        ));
    }

    #[test]
    fn placement_home_and_full() {
        let t = Topology::preset("two50").unwrap();
        let b = t.dc("B").unwrap();
        let l = Layout::new(
            t.clone(),
            Placement::Home {
                home: HomeRule::Dc(b),
                k: 1,
            },
        )
        .unwrap();
        for s in 0..t.shards {
            assert_eq!(l.dc_of(l.primary(ShardId(s))), b);
        }
        let f = Layout::new(t.clone(), Placement::Full).unwrap();
        assert_eq!(f.replicas(ShardId(0)).len(), 2);
        assert!(Layout::new(
            t,
            Placement::Home {
                home: HomeRule::Spread,
                k: 9
            }
        )
        .is_err());
        assert_eq!(l.shard_of(&Key::from("#3/x")), ShardId(3));
        assert_eq!(l.shard_of(&Key::from("#7/x")), ShardId(3));
    }

    #[test]
    fn placement_groups_are_distinct_nodes_spread_over_dcs() {
        for preset in ["lan", "rc5", "us3"] {
            let t = Topology::preset(preset).unwrap();
            let max = t.num_dcs() as u32 * t.nodes_per_dc;
            for k in [1, 3, 5.min(max)] {
                let home = HomeRule::Spread;
                let l = Layout::new(t.clone(), Placement::Groups { home, k }).unwrap();
                for s in 0..t.shards {
                    let r = l.replicas(ShardId(s));
                    assert_eq!(r.len(), k as usize);
                    let mut d = r.to_vec();
                    d.sort();
                    d.dedup();
                    assert_eq!(d.len(), k as usize, "{preset} k={k} shard {s}: {r:?}");
                    let dcs: std::collections::BTreeSet<_> = r.iter().map(|n| l.dc_of(*n)).collect();
                    assert_eq!(dcs.len(), (k as usize).min(t.num_dcs()), "{preset} k={k}");
                }
            }
            let too_many = Placement::Groups {
                home: HomeRule::Spread,
                k: max + 1,
            };
            assert!(Layout::new(t, too_many).is_err());
        }
    }

    #[test]
    fn uniform_matches_its_toml_spelling() {
        let toml = "dcs = [\"A\", \"B\", \"C\"]\nnodes_per_dc = 3\nshards = 8\nintra_rtt_ms = 0.1\n\
                    rtt_ms = [[0, 0.1, 0.1], [0.1, 0, 0.1], [0.1, 0.1, 0]]\n";
        let t = Topology::from_toml(toml, "u").unwrap();
        assert_eq!(Topology::uniform("u", &["A", "B", "C"], 0.1, 0.1, 3, 8), t);
    }
}
