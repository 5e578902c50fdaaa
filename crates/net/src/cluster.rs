//! The cluster file: which protocol a cluster runs, on which topology, and where each
//! server node listens.
//!
//! ```toml
//! protocol = "rc"            # any `--protocol` spec, e.g. "replog:leaders=C/V/O"
//! topology = "rc5"           # a preset or a topology TOML file (relative to this file)
//! epoch_ns = 1795000000000000000  # the cluster's time origin (Unix ns); actors' clocks count from it
//! delay = true               # hold messages between DCs for the topology's one-way delay
//! seed = 1                   # seeds the actors' random generators
//! client_slots = 256         # client nodes the layout reserves (slot i lives in DC i mod #DCs)
//! data_dir = "data"          # optional: each server journals its inputs under data_dir/n<ID>
//! tls_dir = "certs"          # the cluster's CA and certificates (mutual TLS; see crate::tls)
//! # insecure = true          # instead of tls_dir: plaintext, no authentication (benchmarks only)
//!
//! [[node]]
//! id = 0
//! dc = "C"
//! addr = "127.0.0.1:7000"
//! ```
//!
//! Server nodes are numbered DC-major as in the simulator (`dc * nodes_per_dc + i`);
//! the file must list every one exactly once, in its DC. Client nodes are not listed:
//! a client process claims client slots when it connects. Every way a file can be wrong
//! is one [`ClusterError`] naming the problem.

use meridian_core::{DcId, HomeRule, Layout, NodeId, Placement, Topology, TopologyError};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// At most this many client slots (CrossStitch's timestamps keep 10 bits of client id).
pub const MAX_CLIENT_SLOTS: u32 = 1024;

/// A cluster file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The file cannot be read.
    #[error("cannot read cluster file {path}: {err}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        err: std::io::Error,
    },
    /// The file is not valid TOML for a cluster.
    #[error("cluster file {path}: {err}")]
    Parse {
        /// The file.
        path: String,
        /// The TOML error (with line and column).
        err: String,
    },
    /// The topology is unknown or invalid.
    #[error("cluster file {path}: {err}")]
    Topology {
        /// The file.
        path: String,
        /// Why.
        err: TopologyError,
    },
    /// The file parsed but does not describe a usable cluster.
    #[error("cluster file {path}: {msg}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        msg: String,
    },
}

/// One server node as the file lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    /// Node id (DC-major numbering).
    pub id: u32,
    /// DC name, as in the topology.
    pub dc: String,
    /// Listen address, `host:port`.
    pub addr: String,
}

/// The file as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterFile {
    /// `--protocol` spec.
    pub protocol: String,
    /// Topology preset or TOML file.
    pub topology: String,
    /// Time origin, Unix nanoseconds.
    pub epoch_ns: u64,
    /// Emulate WAN delay between DCs.
    #[serde(default = "yes")]
    pub delay: bool,
    /// Seed for the actors' random generators.
    #[serde(default = "one")]
    pub seed: u64,
    /// Client nodes reserved in the layout.
    #[serde(default = "slots")]
    pub client_slots: u32,
    /// Home DC of every shard (default: shard s in DC s mod #DCs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dc: Option<String>,
    /// Directory for the servers' journals (none: servers keep nothing on disk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// Checkpoint each server's journal every this many inputs (none:
    /// [`crate::host::CHECKPOINT_EVERY`]; 0: never). See [`crate::journal`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_every: Option<u64>,
    /// Version GC: how long a superseded version is kept, as a duration (`"5s"`, the
    /// default; `"off"`: never collect). docs/CLUSTER.md, "Version GC".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_ttl: Option<String>,
    /// Plaintext connections with no authentication (`cluster up --insecure`): anyone
    /// who can reach a port can act as any node. Exclusive with `tls_dir`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub insecure: bool,
    /// The directory of the cluster's CA and certificates ([`crate::tls`]): every
    /// connection is mutual TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_dir: Option<PathBuf>,
    /// Server nodes.
    #[serde(rename = "node", default)]
    pub nodes: Vec<NodeEntry>,
}

fn is_false(b: &bool) -> bool {
    !*b
}
fn yes() -> bool {
    true
}
fn one() -> u64 {
    1
}
fn slots() -> u32 {
    256
}

/// The version GC of a cluster file's `version_ttl` (none: 5 s; `off`: never).
pub fn retention_of(ttl: Option<&str>) -> Result<meridian_protocols::Retention, String> {
    let ttl = match ttl.map(str::trim) {
        None => return Ok(meridian_protocols::Retention::default()),
        Some("off") => u64::MAX,
        Some(t) => meridian_core::time::parse_duration(t)
            .map_err(|e| format!("version_ttl `{t}`: {e} (a duration such as `60s`, or `off`)"))?,
    };
    Ok(meridian_protocols::Retention { ttl, record: false })
}

/// A validated cluster file.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// The file's contents.
    pub file: ClusterFile,
    /// Where it was read from (relative paths in it are resolved against its directory).
    pub path: PathBuf,
    /// The topology.
    pub topology: Topology,
    /// Where shards live.
    pub home: HomeRule,
    /// Listen address of each server node, by id.
    pub addrs: Vec<SocketAddr>,
}

/// The kernel's id of this boot (`/proc/sys/kernel/random/boot_id`; containers share
/// the host's). `MERIDIAN_BOOT_ID` overrides it, so a test can stand in for a reboot.
pub fn boot_id() -> Option<String> {
    if let Ok(id) = std::env::var("MERIDIAN_BOOT_ID") {
        return Some(id);
    }
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_string())
}

impl Cluster {
    /// Reads and validates a cluster file.
    pub fn load(path: &Path) -> Result<Cluster, ClusterError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|err| ClusterError::Read { path: p.clone(), err })?;
        Self::parse(&text, path)
    }

    /// Parses and validates a cluster file's text (`path` names it in errors and
    /// anchors relative paths).
    pub fn parse(text: &str, path: &Path) -> Result<Cluster, ClusterError> {
        let p = path.display().to_string();
        let file: ClusterFile = toml::from_str(text).map_err(|e| ClusterError::Parse {
            path: p.clone(),
            err: e.to_string().trim_end().to_string(),
        })?;
        Self::validate(file, path)
    }

    /// Validates a parsed file.
    pub fn validate(file: ClusterFile, path: &Path) -> Result<Cluster, ClusterError> {
        let p = path.display().to_string();
        let invalid = |msg: String| ClusterError::Invalid { path: p.clone(), msg };
        let base = path.parent().unwrap_or(Path::new("."));
        let rel = base.join(&file.topology);
        let topo_spec =
            if Topology::preset(&file.topology).is_none() && !Path::new(&file.topology).is_absolute() && rel.exists() {
                rel.display().to_string()
            } else {
                file.topology.clone()
            };
        let topology = Topology::load(&topo_spec).map_err(|err| ClusterError::Topology { path: p.clone(), err })?;
        if file.protocol.trim().is_empty() {
            return Err(invalid("`protocol` is empty".into()));
        }
        if file.client_slots == 0 || file.client_slots > MAX_CLIENT_SLOTS {
            return Err(invalid(format!(
                "client_slots must be 1..={MAX_CLIENT_SLOTS}, got {}",
                file.client_slots
            )));
        }
        if let Err(e) = retention_of(file.version_ttl.as_deref()) {
            return Err(invalid(e));
        }
        let home = match &file.data_dc {
            None => HomeRule::Spread,
            Some(d) => HomeRule::Dc(
                topology
                    .dc(d)
                    .map_err(|err| ClusterError::Topology { path: p.clone(), err })?,
            ),
        };
        let n = topology.num_dcs() as u32 * topology.nodes_per_dc;
        let mut addrs: Vec<Option<SocketAddr>> = vec![None; n as usize];
        for e in &file.nodes {
            if e.id >= n {
                return Err(invalid(format!(
                    "node {} does not exist: topology `{}` has {n} server nodes (0..{})",
                    e.id,
                    topology.name,
                    n - 1
                )));
            }
            let dc = topology
                .dc(&e.dc)
                .map_err(|err| ClusterError::Topology { path: p.clone(), err })?;
            let want = DcId((e.id / topology.nodes_per_dc) as u16);
            if dc != want {
                return Err(invalid(format!(
                    "node {} is in DC {} (nodes are numbered DC-major, {} per DC), not {}",
                    e.id, topology.dcs[want.0 as usize], topology.nodes_per_dc, e.dc
                )));
            }
            let addr: SocketAddr = e.addr.parse().map_err(|_| {
                invalid(format!(
                    "node {}: bad address `{}` (want host:port, e.g. 127.0.0.1:7000)",
                    e.id, e.addr
                ))
            })?;
            if addrs[e.id as usize].replace(addr).is_some() {
                return Err(invalid(format!("node {} is listed twice", e.id)));
            }
        }
        let addrs = addrs
            .into_iter()
            .enumerate()
            .map(|(i, a)| {
                a.ok_or_else(|| {
                    invalid(format!(
                        "node {i} is missing (every server node 0..{} needs an entry)",
                        n - 1
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        for (i, a) in addrs.iter().enumerate() {
            if let Some(j) = addrs[..i].iter().position(|b| b == a) {
                return Err(invalid(format!("nodes {j} and {i} share the address {a}")));
            }
        }
        if file.insecure && file.tls_dir.is_some() {
            return Err(invalid(
                "`insecure = true` and `tls_dir` contradict each other: keep one".into(),
            ));
        }
        Ok(Cluster {
            file,
            path: path.to_path_buf(),
            topology,
            home,
            addrs,
        })
    }

    /// Number of server nodes.
    pub fn num_servers(&self) -> u32 {
        self.addrs.len() as u32
    }

    /// The layout for a placement: the servers, then the client slots.
    pub fn layout(&self, placement: Placement) -> Result<Layout, TopologyError> {
        let mut l = Layout::new(self.topology.clone(), placement)?;
        let ndc = self.topology.num_dcs() as u32;
        for i in 0..self.file.client_slots {
            l.add_client(DcId((i % ndc) as u16));
        }
        Ok(l)
    }

    /// The node id of client slot `slot`.
    pub fn slot_node(&self, slot: u32) -> NodeId {
        NodeId(self.num_servers() + slot)
    }

    /// A number identifying this cluster (its epoch), checked on every connection so
    /// that processes of two clusters never talk.
    pub fn id(&self) -> u64 {
        self.file.epoch_ns
    }

    /// The file that records that server `node` has started in this cluster (it holds
    /// the cluster id): a server that finds it knows it is restarting into a running
    /// cluster, even when it keeps no journal. Next to the cluster file.
    pub fn started_marker(&self, node: NodeId) -> PathBuf {
        self.path
            .parent()
            .unwrap_or(Path::new("."))
            .join("run")
            .join(format!("n{}.started", node.0))
    }

    /// Whether server `node` started in this cluster before (its marker names this
    /// cluster's id).
    pub fn started_before(&self, node: NodeId) -> bool {
        std::fs::read_to_string(self.started_marker(node))
            .is_ok_and(|s| s.lines().next().map(str::trim) == Some(&self.id().to_string()))
    }

    /// Whether the machine has not rebooted since server `node` last started (its
    /// marker holds the kernel's boot id of that start, and it is this boot's). Then
    /// its journal lost nothing the OS was handed: an unsynced write survives a killed
    /// process, not a machine crash. False when either id is unknown.
    pub fn same_boot_as_last_start(&self, node: NodeId) -> bool {
        let Some(now) = boot_id() else { return false };
        std::fs::read_to_string(self.started_marker(node))
            .is_ok_and(|s| s.lines().nth(1).map(str::trim) == Some(now.as_str()))
    }

    /// Records that server `node` started in this cluster, in this boot of the machine.
    pub fn mark_started(&self, node: NodeId) -> std::io::Result<()> {
        let m = self.started_marker(node);
        if let Some(d) = m.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(m, format!("{}\n{}\n", self.id(), boot_id().unwrap_or_default()))
    }

    /// The data directory of server `node`, if the cluster keeps data on disk.
    pub fn data_dir(&self, node: NodeId) -> Option<PathBuf> {
        let d = self.file.data_dir.as_ref()?;
        let d = if d.is_absolute() {
            d.clone()
        } else {
            self.path.parent().unwrap_or(Path::new(".")).join(d)
        };
        Some(d.join(format!("n{}", node.0)))
    }

    /// The directory of the cluster's certificates, if it runs TLS.
    pub fn tls_dir(&self) -> Option<PathBuf> {
        let d = self.file.tls_dir.as_ref()?;
        Some(if d.is_absolute() {
            d.clone()
        } else {
            self.path.parent().unwrap_or(Path::new(".")).join(d)
        })
    }

    /// How a process acting as `role` secures its connections: `role`'s credentials
    /// from the certificate directory, or none if the file says `insecure = true`.
    pub fn security(&self, role: crate::tls::Role) -> Result<crate::tls::Security, String> {
        self.security_with(role, None)
    }

    /// Like [`Cluster::security`], with explicit credentials instead of the
    /// certificate directory's.
    pub fn security_with(
        &self,
        role: crate::tls::Role,
        creds: Option<&crate::tls::Credentials>,
    ) -> Result<crate::tls::Security, String> {
        let dir = match (self.tls_dir(), creds) {
            (_, Some(c)) => return crate::tls::Security::load(c, role).map_err(|e| format!("{role} credentials: {e}")),
            (Some(d), None) => d,
            (None, None) if self.file.insecure => return Ok(crate::tls::Security::Insecure),
            (None, None) => {
                return Err(format!(
                    "cluster file {} names no certificates (`tls_dir`) and does not say `insecure = true`: \
                     create them with `meridian cluster certs --cluster {} --new-ca`, or run \
                     without authentication with `insecure = true`",
                    self.path.display(),
                    self.path.display()
                ))
            }
        };
        let c = crate::tls::Credentials::in_dir(&dir, role);
        crate::tls::Security::load(&c, role).map_err(|e| {
            format!(
                "{role} credentials in {}: {e} (issue them with `meridian cluster certs --cluster {} --role {role}`)",
                dir.display(),
                self.path.display()
            )
        })
    }

    /// Writes a cluster file for `protocol` on `topology` with every server on
    /// loopback, ports `base_port..`.
    pub fn local(protocol: &str, topology: &Topology, topology_spec: &str, base_port: u16) -> ClusterFile {
        let npd = topology.nodes_per_dc;
        let n = topology.num_dcs() as u32 * npd;
        let epoch_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        ClusterFile {
            protocol: protocol.to_string(),
            topology: topology_spec.to_string(),
            epoch_ns,
            delay: true,
            seed: 1,
            client_slots: slots(),
            data_dc: None,
            data_dir: None,
            checkpoint_every: None,
            version_ttl: None,
            insecure: false,
            tls_dir: None,
            nodes: (0..n)
                .map(|i| NodeEntry {
                    id: i,
                    dc: topology.dcs[(i / npd) as usize].clone(),
                    addr: format!("127.0.0.1:{}", base_port as u32 + i),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Cluster, String> {
        Cluster::parse(text, Path::new("/tmp/c.toml")).map_err(|e| e.to_string())
    }

    fn good() -> String {
        let t = Topology::preset("us3").unwrap();
        toml::to_string(&Cluster::local("rc", &t, "us3", 7000)).unwrap()
    }

    #[test]
    fn a_local_file_round_trips() {
        let c = parse(&good()).unwrap();
        assert_eq!(c.num_servers(), 6);
        assert_eq!(c.addrs[4].port(), 7004);
        assert_eq!(c.slot_node(0), NodeId(6));
        let l = c.layout(Placement::Full).unwrap();
        assert_eq!(l.num_nodes(), 6 + 256);
        assert_eq!(l.dc_of(c.slot_node(4)), DcId(1));
    }

    #[test]
    fn bad_files_are_one_clear_error() {
        let g = good();
        let cases: Vec<(String, &str)> = vec![
            ("protocol = ".into(), "cluster file /tmp/c.toml"),
            (
                g.replace("topology = \"us3\"", "topology = \"mars\""),
                "unknown topology `mars`",
            ),
            (
                g.replace("addr = \"127.0.0.1:7003\"", "addr = \"nowhere\""),
                "node 3: bad address `nowhere`",
            ),
            (
                g.replace("addr = \"127.0.0.1:7003\"", "addr = \"127.0.0.1:7002\""),
                "nodes 2 and 3 share",
            ),
            (g.replace("id = 5", "id = 6"), "node 6 does not exist"),
            (
                g.replace("client_slots = 256", "client_slots = 0"),
                "client_slots must be",
            ),
            (
                g.replace("client_slots = 256", "client_slots = 256\nbogus = 1"),
                "unknown field `bogus`",
            ),
            (g.replace("epoch_ns", "epoch"), "unknown field `epoch`"),
        ];
        for (text, want) in cases {
            let e = parse(&text).unwrap_err();
            assert!(e.contains(want), "want `{want}` in `{e}`");
        }
        // a node in the wrong DC, a missing node
        let mut f: ClusterFile = toml::from_str(&g).unwrap();
        f.nodes[0].dc = "CA".into();
        let e = Cluster::validate(f.clone(), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("node 0 is in DC"), "{e}");
        f.nodes.remove(0);
        let e = Cluster::validate(f, Path::new("c.toml")).unwrap_err().to_string();
        assert!(e.contains("node 0 is missing"), "{e}");
    }
}
