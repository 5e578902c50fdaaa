//! Malformed input sent to a live server never crashes it: random bytes, truncated
//! frames, frames of another version, and well-framed messages whose protocol payload
//! is random. The server drops each bad connection with a logged reason and goes on
//! answering.

mod common;

use common::LogBuf;
use meridian_core::{NodeId, Topology};
use meridian_net::cluster::Cluster;
use meridian_net::host::{self, ServerOptions};
use meridian_net::wire::{Envelope, Wire};
use meridian_net::{encode, VERSION};
use meridian_protocols::Protocol;
use proptest::prelude::*;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

static PANICS: AtomicUsize = AtomicUsize::new(0);

struct Server {
    rt: tokio::runtime::Runtime,
    addr: SocketAddr,
    id: u64,
    cluster: Arc<Cluster>,
    logs: LogBuf,
    client: NodeId,
}

/// One server of each protocol under test, started once for the whole file.
fn server(protocol: &'static str) -> &'static Server {
    static SERVERS: OnceLock<Mutex<Vec<(&'static str, &'static Server)>>> = OnceLock::new();
    let m = SERVERS.get_or_init(|| {
        let logs = LogBuf::capture();
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |i| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            prev(i)
        }));
        LOGS.set(logs).ok();
        Mutex::new(vec![])
    });
    let mut v = m.lock().unwrap();
    if let Some((_, s)) = v.iter().find(|(p, _)| *p == protocol) {
        return s;
    }
    let s: &'static Server = Box::leak(Box::new(start(protocol)));
    v.push((protocol, s));
    s
}

static LOGS: OnceLock<LogBuf> = OnceLock::new();

fn start(protocol: &'static str) -> Server {
    let t = Topology::preset("us3").unwrap();
    let base = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    // Only node 0 runs; its dials to the others fail and back off, which is fine.
    // Plaintext: under TLS these bytes would end at the handshake, and the frame parser
    // is what is tested here (a peer with a valid certificate can send it anything).
    let mut file = Cluster::local(protocol, &t, "us3", base);
    file.insecure = true;
    let cluster = Arc::new(Cluster::validate(file, std::path::Path::new("/tmp/fuzz.toml")).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    struct Serve(Arc<Cluster>);
    impl meridian_sim::WithProtocol for Serve {
        type Out = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>>;
        fn with<P: Protocol>(self, p: P) -> Self::Out {
            Box::pin(host::serve(p, self.0, NodeId(0), ServerOptions::default()))
        }
    }
    let fut = meridian_sim::with_protocol(protocol, &cluster.topology, cluster.home, Serve(cluster.clone())).unwrap();
    rt.spawn(async move {
        if let Err(e) = fut.await {
            panic!("server failed: {e}");
        }
    });
    let s = Server {
        addr: cluster.addrs[0],
        id: cluster.id(),
        cluster: cluster.clone(),
        logs: LOGS.get().cloned().unwrap_or_default(),
        client: cluster.slot_node(0),
        rt,
    };
    assert!(alive(&s), "the server did not start");
    s
}

fn alive(s: &Server) -> bool {
    s.rt.block_on(async {
        for _ in 0..50 {
            if let Ok(Wire::Status(st)) = host::ask::<()>(
                &s.cluster,
                &meridian_net::tls::Security::Insecure,
                NodeId(0),
                Wire::StatusReq,
                Duration::from_secs(2),
            )
            .await
            {
                return st.node == NodeId(0);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    })
}

/// Sends `bytes` on a fresh connection, then reads until the server closes it (or a
/// short wait passes).
fn send(s: &Server, bytes: &[u8]) {
    s.rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let Ok(mut c) = tokio::net::TcpStream::connect(s.addr).await else {
            panic!("server not accepting");
        };
        let _ = c.write_all(bytes).await;
        let mut buf = [0u8; 4096];
        let _ = tokio::time::timeout(Duration::from_millis(30), async {
            while let Ok(n) = c.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        })
        .await;
    });
}

fn hello(s: &Server, nodes: Vec<NodeId>) -> Vec<u8> {
    encode(&Wire::<()>::Hello { cluster: s.id, nodes })
}

/// A frame with a correct length and version around `payload`.
fn framed(payload: &[u8]) -> Vec<u8> {
    let mut out = ((payload.len() + 1) as u32).to_be_bytes().to_vec();
    out.push(VERSION);
    out.extend_from_slice(payload);
    out
}

/// A well-framed protocol message from client slot 0 to node 0 whose payload is `tail`.
fn msg_with(s: &Server, tail: &[u8]) -> Vec<u8> {
    // Encode the header with an empty message, then put the random payload in its place.
    let mut head = postcard::to_stdvec(&Wire::Msg(Envelope {
        from: s.client,
        to: NodeId(0),
        hops: 0,
        sent_at: 0,
        msg: (),
    }))
    .unwrap();
    head.extend_from_slice(tail);
    framed(&head)
}

const PROTOCOLS: [&str; 4] = ["2pc-2pl", "rc", "hacommit", "crossstitch"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_crash_a_server(p in 0..PROTOCOLS.len(), bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let s = server(PROTOCOLS[p]);
        send(s, &bytes);
        let mut with_hello = hello(s, vec![]);
        with_hello.extend_from_slice(&bytes);
        send(s, &with_hello);
        prop_assert_eq!(PANICS.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn random_protocol_payloads_never_crash_a_server(p in 0..PROTOCOLS.len(), tail in proptest::collection::vec(any::<u8>(), 0..200)) {
        let s = server(PROTOCOLS[p]);
        let mut b = hello(s, vec![s.client]);
        b.extend_from_slice(&msg_with(s, &tail));
        send(s, &b);
        prop_assert_eq!(PANICS.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn truncated_frames_never_crash_a_server(p in 0..PROTOCOLS.len(), cut in 0usize..40, extra in proptest::collection::vec(any::<u8>(), 0..20)) {
        let s = server(PROTOCOLS[p]);
        let mut b = hello(s, vec![]);
        let req = encode(&Wire::<()>::StatusReq);
        b.extend_from_slice(&req[..cut.min(req.len())]);
        b.extend_from_slice(&extra);
        send(s, &b);
        prop_assert_eq!(PANICS.load(Ordering::SeqCst), 0);
    }
}

/// Real 2PC messages from client slot 0, for mutation.
fn real_2pc(s: &Server) -> Vec<Vec<u8>> {
    use meridian_core::{Key, TxnId, Value, VersionId};
    use meridian_protocols::twopc::{LockedRead, Msg, Part};
    let txn = TxnId { client: 0, seq: 1 };
    let msgs = vec![
        Msg::Read(LockedRead {
            txn,
            ts: 5,
            key: Key::new(b"k1"),
        }),
        Msg::Commit {
            txn,
            ts: 5,
            parts: vec![Part {
                node: NodeId(0),
                reads: vec![(Key::new(b"k1"), None)],
                writes: vec![(Key::new(b"k2"), VersionId { txn, seq: 0 }, Value(b"v".to_vec()))],
            }],
        },
        Msg::Status { txn, ts: 5 },
        Msg::Release { txn },
    ];
    msgs.into_iter()
        .map(|msg| {
            encode(&Wire::Msg(Envelope {
                from: s.client,
                to: NodeId(0),
                hops: 0,
                sent_at: 0,
                msg,
            }))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, .. ProptestConfig::default() })]

    /// Valid 2PC messages with one byte changed (which often still decodes: another
    /// node id, key, timestamp or participant list) reach the actor; none crashes it.
    #[test]
    fn mutated_real_messages_never_crash_a_server(which in 0usize..4, at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let s = server("2pc-2pl");
        let mut m = real_2pc(s)[which].clone();
        let i = 5 + at.index(m.len() - 5);
        m[i] = byte;
        let mut b = hello(s, vec![s.client]);
        b.extend_from_slice(&m);
        send(s, &b);
        prop_assert_eq!(PANICS.load(Ordering::SeqCst), 0);
    }
}

#[test]
fn bad_connections_are_dropped_with_a_logged_reason_and_the_server_goes_on() {
    let s = server("2pc-2pl");
    // too large, another version, a message before Hello, another cluster, a spoofed sender
    send(s, &u32::MAX.to_be_bytes());
    let mut v2 = hello(s, vec![]);
    v2.extend_from_slice(&[0, 0, 0, 2, 99, 0]);
    send(s, &v2);
    send(s, &encode(&Wire::<()>::StatusReq));
    send(
        s,
        &encode(&Wire::<()>::Hello {
            cluster: 7,
            nodes: vec![],
        }),
    );
    let mut spoof = hello(s, vec![]);
    spoof.extend_from_slice(&encode(&Wire::Msg(Envelope {
        from: s.client,
        to: NodeId(0),
        hops: 0,
        sent_at: 0,
        msg: meridian_protocols::twopc::Msg::Release {
            txn: meridian_core::TxnId { client: 0, seq: 1 },
        },
    })));
    send(s, &spoof);
    assert!(alive(s), "the server stopped answering");
    std::thread::sleep(Duration::from_millis(100));
    let logs = s.logs.text();
    for want in [
        "exceeds the limit",
        "unsupported wire version 99",
        "expected Hello, got StatusReq",
        "is not this cluster",
        "which this connection did not introduce",
    ] {
        assert!(logs.contains(want), "no `{want}` in the server's log:\n{logs}");
    }
    assert_eq!(PANICS.load(Ordering::SeqCst), 0);
}
