//! A whole cluster inside this process, on loopback: for an application's tests and
//! for the examples in these docs (which run as doctests, so they cannot rot).
//!
//! Every server is a full TCP server, exactly as `meridian server` runs it (the same
//! code, the same wire, mutual TLS with the cluster's own CA), with no added WAN delay
//! and no journal. The cluster file and the certificates are
//! written into a temporary directory, so [`Client::connect`](crate::Client::connect)
//! takes it like any other:
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), meridian_client::Error> {
//! use meridian_client::{local::LocalCluster, Client, Options};
//! let local = LocalCluster::start("2pc-2pl", "us3").await?;
//! let db = Client::connect(local.file(), Options::default()).await?;
//! assert_eq!(db.info().name, "2pc-2pl");
//! # Ok(()) }
//! ```
//!
//! The servers run as tasks on the caller's tokio runtime and stop when the
//! [`LocalCluster`] is dropped.

use crate::Error;
use meridian_core::{NodeId, Topology};
use meridian_net::cluster::Cluster;
use meridian_net::host::{self, ServerOptions};
use meridian_protocols::named::{with_protocol, WithProtocol};
use meridian_protocols::Protocol;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A cluster of in-process servers (see the module docs).
pub struct LocalCluster {
    cluster: Arc<Cluster>,
    file: PathBuf,
    servers: Vec<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl LocalCluster {
    /// Starts every server of a `protocol` cluster (a spec as `meridian cluster up`
    /// takes it, e.g. `replog` or `hacommit:replicas=5`) on a topology preset or
    /// file, on free loopback ports. Must be called inside a tokio runtime.
    pub async fn start(protocol: &str, topology: &str) -> Result<LocalCluster, Error> {
        let t = Topology::load(topology).map_err(|e| Error::Invalid(e.to_string()))?;
        let dir = tempfile::tempdir().map_err(|e| Error::Invalid(format!("a temporary directory: {e}")))?;
        let n = t.num_dcs() as u32 * t.nodes_per_dc;
        let base = free_ports(n)?;
        let mut f = Cluster::local(protocol, &t, topology, base);
        f.delay = false;
        // Mutual TLS, as `meridian cluster up` sets a cluster up.
        let certs = dir.path().join("certs");
        meridian_net::tls::issue_cluster(&certs, f.epoch_ns, n, meridian_net::tls::Validity::days(1))
            .map_err(|e| Error::Invalid(e.to_string()))?;
        f.tls_dir = Some(PathBuf::from("certs"));
        let file = dir.path().join("cluster.toml");
        let text = toml::to_string(&f).map_err(|e| Error::Invalid(format!("writing the cluster file: {e}")))?;
        std::fs::write(&file, text).map_err(|e| Error::Invalid(format!("{}: {e}", file.display())))?;
        let cluster = Arc::new(Cluster::load(&file)?);
        struct Serve(Arc<Cluster>);
        impl WithProtocol for Serve {
            type Out = Vec<tokio::task::JoinHandle<()>>;
            fn with<P: Protocol>(self, p: P) -> Self::Out {
                (0..self.0.num_servers())
                    .map(|n| {
                        let (c, p) = (self.0.clone(), p.clone());
                        tokio::spawn(async move {
                            if let Err(e) = host::serve(p, c, NodeId(n), ServerOptions::default()).await {
                                tracing::error!(node = n, "local server stopped: {e}");
                            }
                        })
                    })
                    .collect()
            }
        }
        let servers = with_protocol(
            &cluster.file.protocol,
            &cluster.topology,
            cluster.home,
            Serve(cluster.clone()),
        )
        .map_err(|e| Error::Invalid(e.to_string()))?;
        Ok(LocalCluster {
            cluster,
            file,
            servers,
            _dir: dir,
        })
    }

    /// The cluster file (in a temporary directory removed with the cluster).
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The cluster, loaded (for [`Client::connect_to`](crate::Client::connect_to)).
    pub fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for s in &self.servers {
            s.abort();
        }
    }
}

/// A base port with `n` free loopback ports after it, below Linux's ephemeral range
/// (32768..), where outgoing connections take their source ports. Different for each
/// call in this process.
fn free_ports(n: u32) -> Result<u16, Error> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    for _ in 0..2000 {
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let b = 10_000 + ((std::process::id() % 83) * 131 + k * (n + 3)) % 20_000;
        if (0..n).all(|i| std::net::TcpListener::bind(("127.0.0.1", (b + i) as u16)).is_ok()) {
            return Ok(b as u16);
        }
    }
    Err(Error::Unavailable(format!("no {n} free loopback ports in a row")))
}
