//! Impostors against a cluster that runs mutual TLS (issue 55): a process without a
//! certificate, with one of another cluster, a valid node certificate claiming another
//! node, a forged protocol message on an authenticated connection, a client
//! certificate sending admin frames, and expired or not-yet-valid certificates. Each
//! is refused and logged, and the servers' committed state is the same before and
//! after.

mod common;

use common::LogBuf;
use meridian_core::{NodeId, Topology, TxnId};
use meridian_net::cluster::Cluster;
use meridian_net::host::{self, ClientHost, ServerOptions};
use meridian_net::tls::{self, Credentials, Role, Security, Validity};
use meridian_net::wire::{Envelope, NodeReport, Wire};
use meridian_net::{encode, FrameReader};
use meridian_protocols::Protocol;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A 2pc-2pl cluster on us3 (six servers in this process), mutual TLS, with a few
/// committed writes; shared by the tests of this file.
struct Fixture {
    rt: tokio::runtime::Runtime,
    cluster: Arc<Cluster>,
    certs: PathBuf,
    logs: LogBuf,
    /// Node 0's metrics endpoint: HTTPS, bearer token [`TOKEN`].
    metrics: std::net::SocketAddr,
    _dir: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let logs = LogBuf::capture();
        let dir = tempfile::tempdir().unwrap();
        let t = Topology::preset("us3").unwrap();
        let base = loop {
            let b = 20_000 + (std::process::id() % 500) * 13;
            if (0..6).all(|i| std::net::TcpListener::bind(("127.0.0.1", (b + i) as u16)).is_ok()) {
                break b as u16;
            }
        };
        let mut f = Cluster::local("2pc-2pl", &t, "us3", base);
        f.delay = false;
        let certs = dir.path().join("certs");
        tls::issue_cluster(&certs, f.epoch_ns, 6, Validity::days(1)).unwrap();
        f.tls_dir = Some(certs.clone());
        let cluster = Arc::new(Cluster::validate(f, &dir.path().join("cluster.toml")).unwrap());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let metrics = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        struct Serve(Arc<Cluster>, std::net::SocketAddr);
        impl meridian_sim::WithProtocol for Serve {
            type Out = ();
            fn with<P: Protocol>(self, p: P) {
                for n in 0..6 {
                    let (c, p) = (self.0.clone(), p.clone());
                    let mut opts = ServerOptions::default();
                    if n == 0 {
                        opts.metrics = Some(self.1);
                        opts.metrics_tls = true;
                        opts.metrics_token = Some(meridian_net::metrics::Token(TOKEN.into()));
                    }
                    tokio::spawn(async move { host::serve(p, c, NodeId(n), opts).await.unwrap() });
                }
            }
        }
        let _g = rt.enter();
        meridian_sim::with_protocol(
            "2pc-2pl",
            &cluster.topology,
            cluster.home,
            Serve(cluster.clone(), metrics),
        )
        .unwrap();
        let fx = Fixture {
            rt,
            cluster,
            certs,
            logs,
            metrics,
            _dir: dir,
        };
        fx.write_some();
        fx
    })
}

const TOKEN: &str = "s3cret-token";

impl Fixture {
    fn sec(&self, role: Role) -> Security {
        self.cluster.security(role).unwrap()
    }

    /// Commits a write to a key of every shard through a client with the client role.
    fn write_some(&self) {
        struct Start(Arc<Cluster>, Security);
        impl meridian_sim::WithProtocol for Start {
            type Out = ClientHost;
            fn with<P: Protocol>(self, p: P) -> ClientHost {
                ClientHost::start(p, self.0, &[0], self.1).unwrap()
            }
        }
        let _g = self.rt.enter();
        let host = meridian_sim::with_protocol(
            "2pc-2pl",
            &self.cluster.topology,
            self.cluster.home,
            Start(self.cluster.clone(), self.sec(Role::Client)),
        )
        .unwrap();
        self.rt.block_on(async {
            for shard in 0..6 {
                let call = meridian_txn::Call {
                    program: "rmw".into(),
                    args: vec![
                        meridian_txn::Arg::U64(1),
                        meridian_txn::Arg::U64(8),
                        meridian_txn::Arg::Key(meridian_core::Key::new(format!("#{shard}/sec"))),
                    ],
                };
                // Generous: the servers are still connecting to each other.
                let mut committed = false;
                for _ in 0..100 {
                    if let Ok(r) = host.run_timeout(call.clone(), None, Duration::from_secs(20)).await {
                        if r.outcome == meridian_core::Outcome::Committed {
                            committed = true;
                            break;
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                assert!(committed, "a write to shard {shard} did not commit");
            }
        });
    }

    /// Every server's committed state, asked with the admin role.
    fn dump(&self) -> Vec<String> {
        let admin = self.sec(Role::Admin);
        self.rt.block_on(async {
            let mut out = vec![];
            for n in 0..6 {
                match host::ask::<()>(
                    &self.cluster,
                    &admin,
                    NodeId(n),
                    Wire::ReportReq,
                    Duration::from_secs(20),
                )
                .await
                {
                    Ok(Wire::Report(r)) => out.push(state(&r)),
                    other => panic!("node {n}: no report: {:?}", other.err()),
                }
            }
            out
        })
    }

    /// Sends `frames` to node 0 on a connection secured by `sec` as `peer` (or plain
    /// TCP), and returns what came back before the server closed it (or a short wait
    /// passed): the frames it answered and how the connection ended.
    fn send(&self, tcp_only: bool, sec: &Security, frames: Vec<u8>) -> (Vec<Wire<()>>, String) {
        let addr = self.cluster.addrs[0];
        self.rt.block_on(async {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            let mut s: Box<dyn Stream> = if tcp_only {
                Box::new(tcp)
            } else {
                match connect(sec, tcp).await {
                    Ok(s) => s,
                    Err(e) => return (vec![], e),
                }
            };
            if let Err(e) = s.write_all(&frames).await {
                return (vec![], format!("write: {e}"));
            }
            let _ = s.flush().await;
            let mut fr = FrameReader::new();
            let mut got = vec![];
            let mut buf = vec![0u8; 4096];
            let end = tokio::time::timeout(Duration::from_secs(5), async {
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) => return "closed".to_string(),
                        Ok(n) => fr.push(&buf[..n]),
                        Err(e) => return format!("error: {e}"),
                    }
                    while let Ok(Some(b)) = fr.next_frame() {
                        if let Ok(w) = meridian_net::decode::<Wire<()>>(&b) {
                            got.push(w);
                        }
                    }
                }
            })
            .await
            .unwrap_or_else(|_| "still open".into());
            (got, end)
        })
    }

    /// Waits (generously) until the server's log holds `what`.
    fn logged(&self, what: &str) -> bool {
        for _ in 0..100 {
            if self.logs.text().contains(what) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Stream for T {}

/// A TLS connection to node 0 as a process with `sec`'s identity would make it.
async fn connect(sec: &Security, tcp: tokio::net::TcpStream) -> Result<Box<dyn Stream>, String> {
    sec.connect(tcp, NodeId(0))
        .await
        .map(|(r, w)| Box::new(tokio::io::join(r, w)) as Box<dyn Stream>)
}

/// A TLS connector of our own (not the library's, which checks its own certificate
/// first): trusts `ca`, presents `cert` and `key` if given.
fn raw_connector(ca: &Path, cert: Option<(&Path, &Path)>) -> tokio_rustls::TlsConnector {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let b = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let cfg = match cert {
        None => b.with_no_client_auth(),
        Some((c, k)) => b
            .with_client_auth_cert(
                CertificateDer::pem_file_iter(c).unwrap().map(|c| c.unwrap()).collect(),
                PrivateKeyDer::from_pem_file(k).unwrap(),
            )
            .unwrap(),
    };
    tokio_rustls::TlsConnector::from(Arc::new(cfg))
}

impl Fixture {
    /// Like [`Fixture::send`], through [`raw_connector`].
    fn send_raw(&self, connector: tokio_rustls::TlsConnector, frames: Vec<u8>) -> (usize, String) {
        self.rt.block_on(async {
            let tcp = tokio::net::TcpStream::connect(self.cluster.addrs[0]).await.unwrap();
            let name = rustls::pki_types::ServerName::try_from("node-0.meridian").unwrap();
            let mut s = match connector.connect(name, tcp).await {
                Ok(s) => s,
                Err(e) => return (0, format!("handshake: {e}")),
            };
            if let Err(e) = s.write_all(&frames).await {
                return (0, format!("write: {e}"));
            }
            let _ = s.flush().await;
            let mut n = 0;
            let mut buf = vec![0u8; 4096];
            let end = tokio::time::timeout(Duration::from_secs(5), async {
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) => return "closed".to_string(),
                        Ok(k) => n += k,
                        Err(e) => return format!("error: {e}"),
                    }
                }
            })
            .await
            .unwrap_or_else(|_| "still open".into());
            (n, end)
        })
    }
}

fn state(r: &NodeReport) -> String {
    format!("{:?} {:?} {:?}", r.snapshot, r.locked, r.outcomes)
}

fn hello(nodes: Vec<NodeId>) -> Vec<u8> {
    encode(&Wire::<()>::Hello {
        cluster: fixture().cluster.id(),
        nodes,
    })
}

/// A 2PC decision to commit, "from" `from` to node 0.
fn forged_decide(from: NodeId) -> Vec<u8> {
    encode(&Wire::Msg(Envelope {
        from,
        to: NodeId(0),
        hops: 0,
        sent_at: 0,
        msg: meridian_protocols::twopc::Msg::Decide {
            txn: TxnId { client: 7, seq: 1 },
            commit: true,
        },
    }))
}

/// Credentials of another cluster (its own CA), for `role`.
fn other_cluster(role: Role) -> (tempfile::TempDir, Credentials) {
    let d = tempfile::tempdir().unwrap();
    tls::issue_cluster(d.path(), 99, 6, Validity::days(1)).unwrap();
    let c = Credentials::in_dir(d.path(), role);
    (d, c)
}

/// `role`'s certificate issued anew by this cluster's CA with `v`, in a directory of
/// its own (with this cluster's CA certificate beside it).
fn reissued(f: &Fixture, role: Role, v: Validity) -> (tempfile::TempDir, Credentials) {
    let d = tempfile::tempdir().unwrap();
    for file in ["ca.pem", "ca.key"] {
        std::fs::copy(f.certs.join(file), d.path().join(file)).unwrap();
    }
    let mut c = tls::issue(d.path(), f.cluster.id(), role, v).unwrap();
    c.ca = d.path().join("ca.pem");
    (d, c)
}

fn refused_with(got: &[Wire<()>], what: &str) -> bool {
    got.iter()
        .any(|w| matches!(w, Wire::Refused { reason } if reason.contains(what)))
}

#[test]
fn a_process_without_a_certificate_is_refused() {
    let f = fixture();
    let before = f.dump();
    // Plain TCP, as the audit's Python socket: a Hello claiming node 1 and a forged
    // decision. The server expects a TLS handshake and gets neither.
    let mut frames = hello(vec![NodeId(1)]);
    frames.extend(forged_decide(NodeId(1)));
    let (got, end) = f.send(true, &Security::Insecure, frames);
    assert!(got.is_empty(), "answered a plaintext peer: {got:?}");
    assert_ne!(end, "still open", "the connection stayed open");
    assert!(
        f.logged("refusing connection: TLS handshake failed"),
        "{}",
        f.logs.text()
    );
    // TLS, trusting the cluster's CA, but presenting no certificate.
    let mut frames = hello(vec![NodeId(1)]);
    frames.extend(forged_decide(NodeId(1)));
    let (got, end) = f.send_raw(raw_connector(&f.certs.join("ca.pem"), None), frames);
    assert_eq!(got, 0, "read {got} bytes of answer ({end})");
    assert!(end.contains("CertificateRequired"), "{end}");
    assert!(f.logged("peer sent no certificates"), "{}", f.logs.text());
    assert_eq!(f.dump(), before, "the committed state changed");
}

#[test]
fn a_certificate_of_another_cluster_is_refused() {
    let f = fixture();
    let before = f.dump();
    // Node 1's certificate of another cluster, trusting this cluster's CA (so that
    // the server's refusal, not the client's, is what is tested).
    let (_d, c) = other_cluster(Role::Node(NodeId(1)));
    let mut frames = hello(vec![NodeId(1)]);
    frames.extend(forged_decide(NodeId(1)));
    let (got, end) = f.send_raw(raw_connector(&f.certs.join("ca.pem"), Some((&c.cert, &c.key))), frames);
    assert_eq!(got, 0, "{end}");
    assert!(end.contains("UnknownCA"), "{end}");
    assert!(f.logged("UnknownIssuer"), "{}", f.logs.text());
    // And a process of the other cluster does not trust this one's servers.
    let (_d2, c2) = other_cluster(Role::Client);
    let sec2 = Security::load(&c2, Role::Client).unwrap();
    let (_, end) = f.send(false, &sec2, hello(vec![]));
    assert!(end.contains("UnknownIssuer"), "{end}");
    assert_eq!(f.dump(), before, "the committed state changed");
}

#[test]
fn a_node_certificate_claiming_another_node_is_refused_and_logged() {
    let f = fixture();
    let before = f.dump();
    let node2 = f.sec(Role::Node(NodeId(2)));
    let mut frames = hello(vec![NodeId(1)]);
    frames.extend(forged_decide(NodeId(1)));
    let (got, end) = f.send(false, &node2, frames);
    assert!(
        refused_with(&got, "the certificate of node-2 claims node 1"),
        "{got:?} {end}"
    );
    assert_ne!(end, "still open");
    let log = f.logs.text();
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains("peer=127.0.0.1:") && l.contains("claims node 1")),
        "{log}"
    );
    assert_eq!(f.dump(), before, "the committed state changed");
}

#[test]
fn a_forged_message_on_another_nodes_authenticated_connection_is_never_acted_on() {
    let f = fixture();
    let before = f.dump();
    let node2 = f.sec(Role::Node(NodeId(2)));
    // Node 2 introduces itself truthfully, then sends a decision "from node 1".
    let mut frames = hello(vec![NodeId(2)]);
    frames.extend(forged_decide(NodeId(1)));
    let (_, end) = f.send(false, &node2, frames);
    assert_ne!(end, "still open", "the connection stayed open after a forged message");
    assert!(
        f.logged("message from n1, which this connection did not introduce"),
        "{}",
        f.logs.text()
    );
    assert_eq!(f.dump(), before, "the committed state changed");
}

/// A client certificate does not make its holder a server, nor another client: from
/// its own client slot it may send what a 2PC client sends (a status question here)
/// about its own transactions, but a participant's decision, or a question about
/// another slot's transaction, is refused, logged, and the connection dropped
/// (CLUSTER.md, "Security").
#[test]
fn a_client_certificate_cannot_send_what_only_servers_send() {
    let f = fixture();
    let before = f.dump();
    let client = f.sec(Role::Client);
    let slot = f.cluster.slot_node(6);
    let mut frames = hello(vec![slot]);
    frames.extend(forged_decide(slot));
    let (_, end) = f.send(false, &client, frames);
    assert_ne!(
        end, "still open",
        "the connection stayed open after a client sent a decision"
    );
    assert!(
        f.logged(&format!(
            "client slot {slot} sent a message only servers send (Decide): refused"
        )),
        "{}",
        f.logs.text()
    );
    // What a client does send passes, about its own transaction: a client id is
    // `session * 1024 + slot`.
    let status = |client: u32| {
        encode(&Wire::Msg(Envelope {
            from: slot,
            to: NodeId(0),
            hops: 0,
            sent_at: 0,
            msg: meridian_protocols::twopc::Msg::Status {
                txn: TxnId { client, seq: 1 },
                ts: 1,
            },
        }))
    };
    let mut frames = hello(vec![slot]);
    frames.extend(status(5 * 1024 + 6));
    let (_, end) = f.send(false, &client, frames);
    assert_eq!(end, "still open", "a client's status question was refused");
    // About another client's transaction (slot 7's), it is refused.
    let mut frames = hello(vec![slot]);
    frames.extend(status(5 * 1024 + 7));
    let (_, end) = f.send(false, &client, frames);
    assert_ne!(end, "still open", "a client asked about another client's transaction");
    assert!(
        f.logged(&format!(
            "client slot {slot} sent a message (Status) about transaction 5127:1, which is not its own"
        )),
        "{}",
        f.logs.text()
    );
    assert_eq!(f.dump(), before, "the committed state changed");
}

#[test]
fn client_and_observer_certificates_cannot_send_admin_frames() {
    let f = fixture();
    let before = f.dump();
    let cut = encode(&Wire::<()>::Cut {
        pairs: vec![(0, 1), (0, 2)],
        until: u64::MAX,
    });
    for role in [Role::Client, Role::Observer] {
        let sec = f.sec(role);
        let mut frames = hello(vec![]);
        frames.extend(&cut);
        let (got, _) = f.send(false, &sec, frames);
        assert!(refused_with(&got, "Cut needs the admin role"), "{role}: {got:?}");
        let mut frames = hello(vec![]);
        frames.extend(encode(&Wire::<()>::ReportReq));
        let (got, _) = f.send(false, &sec, frames);
        assert!(refused_with(&got, "ReportReq needs the admin role"), "{role}: {got:?}");
        assert!(
            !got.iter().any(|w| matches!(w, Wire::Report(_))),
            "{role} got the state dump"
        );
    }
    assert!(f.logged("Cut needs the admin role"), "{}", f.logs.text());
    // No link was cut: every server still reaches every other, and a client runs.
    let st = f.rt.block_on(host::ask::<()>(
        &f.cluster,
        &f.sec(Role::Observer),
        NodeId(0),
        Wire::StatusReq,
        Duration::from_secs(10),
    ));
    match st {
        Ok(Wire::Status(s)) => assert_eq!(s.counters.cut, 0, "messages were dropped on a cut link"),
        other => panic!("the observer got no status: {:?}", other.err()),
    }
    // A client may not ask for status either (observer, admin or a node).
    let mut frames = hello(vec![]);
    frames.extend(encode(&Wire::<()>::StatusReq));
    let (got, _) = f.send(false, &f.sec(Role::Client), frames);
    assert!(
        refused_with(&got, "StatusReq needs the observer or admin role"),
        "{got:?}"
    );
    // And an observer may not host client slots.
    let (got, _) = f.send(false, &f.sec(Role::Observer), hello(vec![f.cluster.slot_node(5)]));
    assert!(refused_with(&got, "may not host client slots"), "{got:?}");
    assert_eq!(f.dump(), before, "the committed state changed");
}

#[test]
fn expired_and_not_yet_valid_certificates_are_refused_saying_which() {
    let f = fixture();
    let before = f.dump();
    let day = 86_400;
    for (v, what) in [
        (
            Validity {
                from_secs: -2 * day,
                until_secs: -day,
            },
            "certificate expired",
        ),
        (
            Validity {
                from_secs: day,
                until_secs: 2 * day,
            },
            "certificate not valid yet",
        ),
    ] {
        let (_d, c) = reissued(f, Role::Client, v);
        // The library refuses to use it, saying which.
        let e = Security::load(&c, Role::Client).expect_err("loaded").to_string();
        assert!(e.contains(what) && e.contains("client.pem"), "{e}");
        // A process that presents it anyway is refused by the server, which says which.
        let (got, end) = f.send_raw(raw_connector(&c.ca, Some((&c.cert, &c.key))), hello(vec![]));
        assert_eq!(got, 0, "{end}");
        assert!(end.contains("CertificateExpired"), "{end}");
        assert!(f.logged(what), "{}", f.logs.text());
    }
    assert_eq!(f.dump(), before, "the committed state changed");
}

/// Node 0's metrics endpoint serves HTTPS with its certificate and wants the bearer
/// token: plain HTTP, no token and a wrong token get nothing.
#[test]
fn the_metrics_endpoint_takes_tls_and_a_bearer_token() {
    let f = fixture();
    let get = |tls: bool, auth: Option<&str>| -> String {
        f.rt.block_on(async {
            let tcp = tokio::net::TcpStream::connect(f.metrics).await.unwrap();
            let req = format!(
                "GET /metrics HTTP/1.1\r\nHost: x\r\n{}\r\n",
                auth.map(|t| format!("Authorization: Bearer {t}\r\n"))
                    .unwrap_or_default()
            );
            let mut out = vec![];
            let r: Result<(), String> = async {
                if tls {
                    let name = rustls::pki_types::ServerName::try_from("node-0.meridian").unwrap();
                    let mut s = raw_connector(&f.certs.join("ca.pem"), None)
                        .connect(name, tcp)
                        .await
                        .map_err(|e| e.to_string())?;
                    s.write_all(req.as_bytes()).await.map_err(|e| e.to_string())?;
                    s.read_to_end(&mut out).await.map_err(|e| e.to_string())?;
                } else {
                    let mut s = tcp;
                    s.write_all(req.as_bytes()).await.map_err(|e| e.to_string())?;
                    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
                }
                Ok(())
            }
            .await;
            match r {
                Ok(()) => String::from_utf8_lossy(&out).into_owned(),
                Err(e) => format!("error: {e}"),
            }
        })
    };
    let ok = get(true, Some(TOKEN));
    assert!(
        ok.starts_with("HTTP/1.1 200") && ok.contains("meridian_inputs_total"),
        "{ok}"
    );
    for (tls, auth) in [(true, None), (true, Some("wrong"))] {
        let r = get(tls, auth);
        assert!(r.starts_with("HTTP/1.1 401"), "{auth:?}: {r}");
        assert!(!r.contains("meridian_inputs_total"), "{r}");
    }
    let plain = get(false, Some(TOKEN));
    assert!(
        !plain.contains("meridian_inputs_total"),
        "served metrics over plain HTTP: {plain}"
    );
}

/// A peer that vanishes during the handshake (a node being killed: its listener takes
/// the connection, then the process dies) is a node down, not a refusal of this
/// process's credentials: the message does not say TLS, so that a client reports the
/// cluster unavailable (degraded) rather than bad credentials. A bench started right
/// after a `kill -9` exited 2 with "credentials: ... Connection reset by peer".
#[test]
fn a_peer_gone_during_the_handshake_is_not_a_credentials_refusal() {
    let f = fixture();
    let sec = f.sec(Role::Client);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let err = rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let drop_it = tokio::spawn(async move {
            let (s, _) = l.accept().await.unwrap();
            drop(s);
        });
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let r = connect(&sec, tcp).await.err().expect("no handshake with a closed peer");
        drop_it.await.unwrap();
        r
    });
    assert!(err.contains("closed the connection during its handshake"), "{err}");
    assert!(!err.contains("TLS"), "{err}");
}
