//! A cluster of in-process servers on loopback for the client tests: each a full TCP
//! server, as `meridian server` runs it.

use meridian_core::{NodeId, Topology};
use meridian_net::cluster::Cluster;
use meridian_net::host::{self, ServerOptions};
use meridian_protocols::named::{with_protocol, WithProtocol};
use meridian_protocols::Protocol;
use std::sync::Arc;

/// The cluster file of a `us3` cluster (six servers, no added delay) of `protocol`.
pub fn cluster(protocol: &str) -> Arc<Cluster> {
    let t = Topology::preset("us3").unwrap();
    // Six free ports below Linux's ephemeral range (32768..), where outgoing
    // connections take their source ports, different for each test of this run.
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let base = loop {
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let b = 12_000 + ((std::process::id() % 89) * 97 + k * 10) % 8_000;
        if (0..6).all(|i| std::net::TcpListener::bind(("127.0.0.1", (b + i) as u16)).is_ok()) {
            break b as u16;
        }
    };
    let mut f = Cluster::local(protocol, &t, "us3", base);
    f.delay = false;
    // Mutual TLS, as `cluster up` sets a cluster up: its own CA and certificates.
    let certs = tempfile::Builder::new()
        .prefix("meridian-certs")
        .tempdir()
        .unwrap()
        .keep();
    meridian_net::tls::issue_cluster(&certs, f.epoch_ns, 6, meridian_net::tls::Validity::days(1)).unwrap();
    f.tls_dir = Some(certs);
    Arc::new(Cluster::validate(f, std::path::Path::new("/tmp/client-test.toml")).unwrap())
}

/// Starts every server of `c` on this runtime.
pub fn serve_all(c: &Arc<Cluster>) {
    serve_but(c, None);
}

/// Starts every server of `c` but `down`.
#[allow(dead_code)] // not every test binary leaves a server down
pub fn serve_but(c: &Arc<Cluster>, down: Option<u32>) {
    struct Serve(Arc<Cluster>, Option<u32>);
    impl WithProtocol for Serve {
        type Out = ();
        fn with<P: Protocol>(self, p: P) {
            for n in (0..self.0.num_servers()).filter(|n| Some(*n) != self.1) {
                let (c, p) = (self.0.clone(), p.clone());
                tokio::spawn(async move { host::serve(p, c, NodeId(n), ServerOptions::default()).await.unwrap() });
            }
        }
    }
    with_protocol(&c.file.protocol, &c.topology, c.home, Serve(c.clone(), down)).unwrap();
}
