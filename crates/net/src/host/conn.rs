//! Connections: dialling servers, accepting connections (the `Hello` and what it may
//! claim), reading and writing frames, and one-off control questions ([`ask`]).

use super::*;
use crate::tls::{Rd, Role, Security, Wr};

/// Which control frames a connection may send (the certificate's grant, [`Grant`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct May {
    /// `StatusReq`.
    pub(super) observe: bool,
    /// `ReportReq` (the committed-state dump) and `Cut` (partition, heal).
    pub(super) administer: bool,
}

/// Why a read failed: a TLS alert from the peer is a refusal (a certificate it did not
/// take: expired, of another cluster, none), which a client reports at once.
fn read_error(e: std::io::Error) -> String {
    // A TLS peer that closes its socket without a close_notify (a process that exits,
    // a `kill -9`): as a TCP close, nothing to warn about.
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        return "closed by peer".into();
    }
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(t) => format!("refused by peer: TLS: {t}"),
        None => format!("read error: {e}"),
    }
}

/// Who may send what on a connection: the nodes its `Hello` introduced, which of them
/// are client slots, and what those may send.
struct Senders<M> {
    nodes: Vec<NodeId>,
    clients: Vec<NodeId>,
    /// The node of client slot 0 (slot s is node `first_slot + s`).
    first_slot: u32,
    client_rule: ClientRule<M>,
}

/// Reads frames from a connection and feeds the event loop. Returns why it stopped.
async fn read_loop<M: serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static>(
    mut rd: Rd,
    mut fr: FrameReader,
    may: May,
    from: Senders<M>,
    hosted: Arc<Vec<NodeId>>,
    inbox: mpsc::Sender<Event<M>>,
    reply: mpsc::Sender<Vec<u8>>,
) -> String {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        loop {
            let body = match fr.next_frame() {
                Ok(Some(b)) => b,
                Ok(None) => break,
                Err(e) => return format!("bad frame: {e}"),
            };
            let w: Wire<M> = match crate::decode(&body) {
                Ok(w) => w,
                Err(e) => return format!("bad frame: {e}"),
            };
            let ev = match w {
                Wire::Msg(e) => {
                    if !from.nodes.contains(&e.from) {
                        return format!("message from {}, which this connection did not introduce", e.from);
                    }
                    if from.clients.contains(&e.from) {
                        // A client certificate does not make its holder a server, nor
                        // another client: a client id is `session * MAX_CLIENT_SLOTS +
                        // slot` (host/client.rs), so its slot is the sender's.
                        use meridian_protocols::ClientSend;
                        let slot = e.from.0 - from.first_slot;
                        match (from.client_rule)(&e.msg) {
                            ClientSend::Refused => {
                                return format!(
                                    "client slot {} sent a message only servers send ({}): refused",
                                    e.from,
                                    msg_name(&e.msg)
                                )
                            }
                            ClientSend::Own(t) if t.client % crate::cluster::MAX_CLIENT_SLOTS != slot => {
                                return format!(
                                    "client slot {} sent a message ({}) about transaction {t}, which is not its own: refused",
                                    e.from,
                                    msg_name(&e.msg)
                                )
                            }
                            ClientSend::Own(_) | ClientSend::Free => {}
                        }
                    }
                    if !hosted.contains(&e.to) {
                        return format!("message for {}, which this process does not host", e.to);
                    }
                    Event::Net(e)
                }
                Wire::StatusReq if !may.observe => {
                    return refusal(&reply, "StatusReq needs the observer or admin role")
                }
                Wire::ReportReq | Wire::Cut { .. } if !may.administer => {
                    return refusal(&reply, &format!("{} needs the admin role", wire_name(&w)))
                }
                Wire::StatusReq => Event::Status(reply.clone()),
                Wire::ReportReq => Event::Report(reply.clone()),
                Wire::Cut { pairs, until } => Event::Cut(pairs, until, reply.clone()),
                Wire::Refused { reason } => return format!("refused by peer: {reason}"),
                other => return format!("unexpected {} frame", wire_name(&other)),
            };
            if inbox.send(ev).await.is_err() {
                return "process stopping".into();
            }
        }
        match rd.read(&mut buf).await {
            Ok(0) => return "closed by peer".into(),
            Ok(n) => fr.push(&buf[..n]),
            Err(e) => return read_error(e),
        }
    }
}

/// Tells the peer why its frame is refused; returns the reason for the log.
fn refusal(reply: &mpsc::Sender<Vec<u8>>, reason: &str) -> String {
    let _ = reply.try_send(encode(&Wire::<()>::Refused { reason: reason.into() }));
    format!("{REFUSED}{reason}")
}

/// How [`read_loop`]'s reason starts when it refused a frame (the refusal is queued
/// for the writer, which is let finish).
const REFUSED: &str = "refused a frame: ";

/// A protocol message's kind (its variant's name), for a log line.
fn msg_name(m: &impl std::fmt::Debug) -> String {
    let text = format!("{m:?}");
    let end = text
        .find(|c: char| !c.is_alphanumeric() && c != '_')
        .unwrap_or(text.len());
    text[..end].to_string()
}

fn wire_name<M>(w: &Wire<M>) -> &'static str {
    match w {
        Wire::Hello { .. } => "Hello",
        Wire::Refused { .. } => "Refused",
        Wire::Msg(_) => "Msg",
        Wire::StatusReq => "StatusReq",
        Wire::Status(_) => "Status",
        Wire::ReportReq => "ReportReq",
        Wire::Report(_) => "Report",
        Wire::Cut { .. } => "Cut",
    }
}

/// Makes the kernel give up on `s` when data it sent stays unacknowledged for
/// [`USER_TIMEOUT`] (see there); the connection's reader or writer then fails and the
/// dialler re-dials. Best effort: a platform without the option keeps TCP's own
/// (minutes-long) give-up time.
pub(super) fn fail_fast(s: &TcpStream) {
    if let Err(e) = socket2::SockRef::from(s).set_tcp_user_timeout(Some(USER_TIMEOUT)) {
        debug!("cannot set TCP_USER_TIMEOUT: {e}");
    }
}

/// Writes queued frames to a connection until it fails or the queue closes. Frames are
/// batched into one `write` while more are queued.
async fn write_loop(wr: &mut Wr, rx: &mut mpsc::Receiver<Vec<u8>>) -> Result<(), String> {
    let mut batch = Vec::with_capacity(64 * 1024);
    while let Some(f) = rx.recv().await {
        batch.clear();
        batch.extend_from_slice(&f);
        while batch.len() < 256 * 1024 {
            match rx.try_recv() {
                Ok(f) => batch.extend_from_slice(&f),
                Err(_) => break,
            }
        }
        wr.write_all(&batch).await.map_err(|e| format!("write error: {e}"))?;
        // TLS holds records until flushed (a no-op on plain TCP).
        wr.flush().await.map_err(|e| format!("write error: {e}"))?;
    }
    Ok(())
}

/// Keeps one outgoing connection to server `peer` up, re-dialling with back-off, and
/// writes the frames queued for it.
async fn dial_loop<M: serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static>(
    peer: NodeId,
    addr: SocketAddr,
    mut rx: mpsc::Receiver<Vec<u8>>,
    d: Arc<Dial<M>>,
) {
    let Dial {
        hello,
        hosted,
        inbox,
        stats,
        sec,
    } = &*d;
    let mut backoff = BACKOFF_MIN;
    let mut failures = 0u32;
    // Whether a connection to the peer was up and failed: then what was queued for it
    // while it was down is dropped when it is back, as a partition loses what crosses
    // it. Delivered late instead, seconds of it at once (up to [`QUEUE`] frames),
    // it was a flood the peer and this node had to work through, stale, before
    // anything current.
    let mut lost = false;
    loop {
        if rx.is_closed() {
            if failures >= DOWN_AFTER {
                stats.unreachable.fetch_sub(1, Ordering::Relaxed);
            }
            return; // the process stopped sending: nothing left to deliver
        }
        let dialled = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(r) => r,
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no connection within {CONNECT_TIMEOUT:?}"),
            )),
        };
        match dialled {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                fail_fast(&s);
                if failures > 0 {
                    info!(%peer, %addr, "connected after {failures} failed attempts");
                }
                if failures >= DOWN_AFTER {
                    stats.unreachable.fetch_sub(1, Ordering::Relaxed);
                }
                failures = 0;
                backoff = BACKOFF_MIN;
                let s = match sec.connect(s, peer).await {
                    Ok(s) => s,
                    Err(e) => {
                        // Reached, but its certificate is not one this process takes
                        // (or ours not one it takes): a configuration error, reported
                        // (a client fails with it) and retried slowly.
                        warn!(%peer, %addr, "{e}; re-dialling");
                        *stats.refused.lock().expect("stats lock") = Some(format!("{peer}: {e}"));
                        tokio::time::sleep(BACKOFF_MAX).await;
                        continue;
                    }
                };
                let (rd, mut wr) = s;
                if wr.write_all(hello).await.is_err() || wr.flush().await.is_err() {
                    continue;
                }
                // Up again (TLS and the Hello through): what waited is stale.
                if lost {
                    let mut stale = 0u64;
                    while rx.try_recv().is_ok() {
                        stale += 1;
                    }
                    if stale > 0 {
                        stats.dropped.fetch_add(stale, Ordering::Relaxed);
                        info!(%peer, %addr, stale, "dropped the messages queued while the connection was down");
                    }
                }
                stats.peers.fetch_add(1, Ordering::Relaxed);
                // The server answers clients on this connection; it may also refuse it.
                let (dummy_tx, _) = mpsc::channel(1);
                // The server dialled answers; it asks this process nothing (without
                // TLS, as before: anything goes).
                let may = May {
                    observe: sec.is_insecure(),
                    administer: sec.is_insecure(),
                };
                // The peer is the server dialled: no client slots.
                let from = Senders {
                    nodes: vec![peer],
                    clients: vec![],
                    first_slot: u32::MAX,
                    client_rule: Arc::new(|_: &M| meridian_protocols::ClientSend::Refused),
                };
                let mut reader = tokio::spawn(read_loop::<M>(
                    rd,
                    FrameReader::new(),
                    may,
                    from,
                    hosted.clone(),
                    inbox.clone(),
                    dummy_tx,
                ));
                let why = tokio::select! {
                    r = write_loop(&mut wr, &mut rx) => match r {
                        Ok(()) => { reader.abort(); stats.peers.fetch_sub(1, Ordering::Relaxed); return; }
                        Err(e) => e,
                    },
                    r = &mut reader => r.unwrap_or_else(|e| format!("reader failed: {e}")),
                };
                reader.abort();
                stats.peers.fetch_sub(1, Ordering::Relaxed);
                lost = true;
                warn!(%peer, %addr, "connection lost: {why}; re-dialling");
                if let Some(r) = why.strip_prefix("refused by peer: ") {
                    *stats.refused.lock().expect("stats lock") = Some(format!("{peer} refused the connection: {r}"));
                    // Refused (slot in use, another cluster): do not hammer the server.
                    tokio::time::sleep(BACKOFF_MAX).await;
                }
            }
            Err(e) => {
                failures += 1;
                if failures == DOWN_AFTER {
                    stats.unreachable.fetch_add(1, Ordering::Relaxed);
                }
                if failures == 1 || failures.is_power_of_two() {
                    debug!(%peer, %addr, "dial failed ({failures} times): {e}");
                }
                let jitter = (peer.0 as u64 * 7919 + failures as u64 * 104_729) % (backoff.as_millis() as u64 / 4 + 1);
                tokio::time::sleep(backoff + Duration::from_millis(jitter)).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}

/// Whether a client may send a message: the protocol's rule
/// ([`meridian_protocols::Protocol::client_may_send`]).
pub(super) type ClientRule<M> = Arc<dyn Fn(&M) -> meridian_protocols::ClientSend + Send + Sync>;

/// What each connection a process accepts is checked against and delivered to.
pub(super) struct Acceptor<M> {
    /// The cluster a peer's `Hello` must name.
    pub(super) cluster_id: u64,
    pub(super) layout: Arc<Layout>,
    /// The nodes this process hosts (frames for any other are refused).
    pub(super) hosted: Arc<Vec<NodeId>>,
    /// Where replies to a client slot go.
    pub(super) routes: Routes,
    /// The event loop.
    pub(super) inbox: mpsc::Sender<Event<M>>,
    /// Servers connected to this process, by the node id their `Hello` claimed, and
    /// from where (a second claim of one id is logged: a restart, or an impostor).
    pub(super) servers_in: Arc<std::sync::Mutex<HashMap<NodeId, (u64, SocketAddr)>>>,
    /// How connections are secured and who they are.
    pub(super) sec: Security,
    /// What a client slot may send.
    pub(super) client_rule: ClientRule<M>,
}

impl<M> Clone for Acceptor<M> {
    fn clone(&self) -> Self {
        Acceptor {
            cluster_id: self.cluster_id,
            layout: self.layout.clone(),
            hosted: self.hosted.clone(),
            routes: self.routes.clone(),
            inbox: self.inbox.clone(),
            servers_in: self.servers_in.clone(),
            sec: self.sec.clone(),
            client_rule: self.client_rule.clone(),
        }
    }
}

/// Takes one accepted connection (number `conn`): reads the `Hello`, registers routes
/// to the client slots it names, then reads until it closes.
pub(super) async fn accept_conn<
    M: serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
>(
    s: TcpStream,
    peer_addr: SocketAddr,
    conn: u64,
    acceptor: Acceptor<M>,
) {
    let Acceptor {
        cluster_id,
        layout,
        hosted,
        routes,
        inbox,
        servers_in,
        sec,
        client_rule,
    } = acceptor;
    let _ = s.set_nodelay(true);
    let (mut rd, mut wr, grant) = match sec.accept(s).await {
        Ok(x) => x,
        Err(e) => {
            warn!(%peer_addr, "refusing connection: {e}");
            return;
        }
    };
    let mut fr = FrameReader::new();
    let mut buf = vec![0u8; 4096];
    let hello = tokio::time::timeout(HELLO_TIMEOUT, async {
        loop {
            match fr.next_frame() {
                Ok(Some(b)) => return crate::decode::<Wire<M>>(&b).map_err(|e| format!("bad frame: {e}")),
                Ok(None) => {}
                Err(e) => return Err(format!("bad frame: {e}")),
            }
            match rd.read(&mut buf).await {
                Ok(0) => return Err("closed before Hello".to_string()),
                Ok(n) => fr.push(&buf[..n]),
                Err(e) => return Err(format!("read error: {e}")),
            }
        }
    })
    .await
    .unwrap_or_else(|_| Err("no Hello within 5 s".into()));
    async fn refuse<M: serde::Serialize>(wr: &mut Wr, peer: SocketAddr, reason: String) {
        warn!(%peer, "refusing connection: {reason}");
        let _ = wr.write_all(&encode(&Wire::<M>::Refused { reason })).await;
        let _ = wr.flush().await;
    }
    let nodes = match hello {
        Ok(Wire::Hello { cluster, nodes }) if cluster == cluster_id => nodes,
        Ok(Wire::Hello { cluster, .. }) => {
            return refuse::<M>(
                &mut wr,
                peer_addr,
                format!("cluster {cluster} is not this cluster ({cluster_id})"),
            )
            .await;
        }
        Ok(other) => {
            return refuse::<M>(&mut wr, peer_addr, format!("expected Hello, got {}", wire_name(&other))).await
        }
        Err(e) => {
            warn!(%peer_addr, "dropping connection: {e}");
            return;
        }
    };
    if let Some(n) = nodes.iter().find(|n| n.0 >= layout.num_nodes()) {
        return refuse::<M>(&mut wr, peer_addr, format!("{n} is not a node of this cluster")).await;
    }
    // A node is who its certificate says, and only a client (or admin) hosts clients.
    let servers_here = layout.num_servers();
    let named: Vec<Role> = (0..servers_here)
        .map(|n| Role::Node(NodeId(n)))
        .chain([Role::Admin, Role::Observer, Role::Client])
        .collect();
    if let Some(n) = nodes
        .iter()
        .find(|n| layout.is_server(**n) && !grant.proves(Role::Node(**n)))
    {
        return refuse::<M>(
            &mut wr,
            peer_addr,
            format!("the certificate of {} claims node {}", grant.who(&named), n.0),
        )
        .await;
    }
    if nodes.iter().any(|n| !layout.is_server(*n)) && !grant.may_run_clients() {
        return refuse::<M>(
            &mut wr,
            peer_addr,
            format!(
                "{} may not host client slots (needs the client or admin role)",
                grant.who(&named)
            ),
        )
        .await;
    }
    let may = May {
        observe: grant.may_observe(servers_here),
        administer: grant.may_administer(),
    };
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(QUEUE);
    let clients: Vec<NodeId> = nodes.iter().copied().filter(|n| !layout.is_server(*n)).collect();
    if !clients.is_empty() {
        if let Err(n) = routes.claim(&clients, &Route { conn, tx: tx.clone() }) {
            return refuse::<M>(
                &mut wr,
                peer_addr,
                format!("client slot {n} is in use by another connection"),
            )
            .await;
        }
    }
    debug!(%peer_addr, ?nodes, "accepted");
    let servers: Vec<NodeId> = nodes.iter().copied().filter(|n| layout.is_server(*n)).collect();
    {
        let mut m = servers_in.lock().expect("servers lock");
        for n in &servers {
            if let Some((_, before)) = m.insert(*n, (conn, peer_addr)) {
                info!(
                    node = n.0,
                    %peer_addr,
                    %before,
                    "a connection claims a server node already connected (a restart whose old connection is not yet closed, or an impostor)"
                );
            }
        }
    }
    let mut writer = tokio::spawn(async move {
        let _ = write_loop(&mut wr, &mut rx).await;
    });
    let from = Senders {
        nodes,
        clients: clients.clone(),
        first_slot: layout.num_servers(),
        client_rule,
    };
    let why = read_loop::<M>(rd, fr, may, from, hosted, inbox, tx).await;
    routes.release(conn);
    {
        let mut m = servers_in.lock().expect("servers lock");
        for n in &servers {
            if m.get(n).is_some_and(|(c, _)| *c == conn) {
                m.remove(n);
            }
        }
    }
    if why.starts_with(REFUSED) {
        // Let the writer send the refusal before the connection closes.
        let _ = tokio::time::timeout(Duration::from_millis(500), &mut writer).await;
    }
    writer.abort();
    if why == "closed by peer" {
        debug!(%peer_addr, "connection closed");
    } else {
        warn!(%peer_addr, "dropping connection: {why}");
    }
}

/// What every dialler of a process shares.
struct Dial<M> {
    /// The process's `Hello`: the cluster and the nodes it hosts.
    hello: Vec<u8>,
    /// The nodes it hosts.
    hosted: Arc<Vec<NodeId>>,
    /// Its event loop.
    inbox: mpsc::Sender<Event<M>>,
    stats: Arc<Stats>,
    /// How its connections are secured.
    sec: Security,
}

/// Starts one dialler (and its queue, as the route) per server of `cluster` but `me`.
/// Its `Hello` names the nodes in `hosted`.
pub(super) fn dial_servers<M: serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static>(
    cluster: &Cluster,
    me: Option<NodeId>,
    routes: &Routes,
    hosted: &Arc<Vec<NodeId>>,
    inbox: &mpsc::Sender<Event<M>>,
    stats: &Arc<Stats>,
    sec: &Security,
) {
    let d = Arc::new(Dial {
        hello: encode(&Wire::<M>::Hello {
            cluster: cluster.id(),
            nodes: hosted.to_vec(),
        }),
        hosted: hosted.clone(),
        inbox: inbox.clone(),
        stats: stats.clone(),
        sec: sec.clone(),
    });
    for (i, a) in cluster.addrs.iter().enumerate() {
        let peer = NodeId(i as u32);
        if Some(peer) == me {
            continue;
        }
        let (tx, rx) = mpsc::channel(QUEUE);
        routes.insert(
            peer,
            Route {
                conn: u64::MAX - i as u64,
                tx,
            },
        );
        tokio::spawn(dial_loop::<M>(peer, *a, rx, d.clone()));
    }
}

/// Asks server `node` of `cluster` one control question (`StatusReq`, `ReportReq` or
/// `Cut`) on a connection of its own, secured by `sec`, and returns the answer.
pub async fn ask<M: serde::Serialize + serde::de::DeserializeOwned>(
    cluster: &Cluster,
    sec: &Security,
    node: NodeId,
    req: Wire<M>,
    timeout: Duration,
) -> Result<Wire<M>, String> {
    let addr = *cluster
        .addrs
        .get(node.0 as usize)
        .ok_or_else(|| format!("{node} is not a server of this cluster"))?;
    tokio::time::timeout(timeout, async {
        let s = TcpStream::connect(addr).await.map_err(|e| format!("{addr}: {e}"))?;
        let (mut rd, mut wr) = sec.connect(s, node).await.map_err(|e| format!("{addr}: {e}"))?;
        let mut out = encode(&Wire::<M>::Hello {
            cluster: cluster.id(),
            nodes: vec![],
        });
        out.extend_from_slice(&encode(&req));
        wr.write_all(&out).await.map_err(|e| format!("{addr}: {e}"))?;
        wr.flush().await.map_err(|e| format!("{addr}: {e}"))?;
        let mut fr = FrameReader::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if let Some(b) = fr.next_frame().map_err(|e| format!("{addr}: {e}"))? {
                let answer = match crate::decode::<Wire<M>>(&b).map_err(|e| format!("{addr}: {e}"))? {
                    Wire::Refused { reason } => Err(format!("{addr} refused: {reason}")),
                    w => Ok(w),
                };
                // Close cleanly (TLS: a close_notify), so the server logs no error.
                let _ = wr.shutdown().await;
                return answer;
            }
            let n = rd
                .read(&mut buf)
                .await
                .map_err(|e| format!("{addr}: {}", read_error(e)))?;
            if n == 0 {
                return Err(format!("{addr} closed the connection"));
            }
            fr.push(&buf[..n]);
        }
    })
    .await
    .unwrap_or_else(|_| Err(format!("{addr}: no answer within {timeout:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ends of a connection get the give-up time: the dialler's own writes and an
    /// accepted connection's replies to a client alike fail once a silent network
    /// leaves them unacknowledged for [`USER_TIMEOUT`], so the dialler re-dials instead
    /// of waiting on TCP's back-off after the network is back.
    #[tokio::test]
    async fn connections_give_up_on_a_silent_network() {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr");
        let (dialled, accepted) = tokio::join!(TcpStream::connect(addr), l.accept());
        let (dialled, (accepted, _)) = (dialled.expect("connect"), accepted.expect("accept"));
        for s in [&dialled, &accepted] {
            let before = socket2::SockRef::from(s).tcp_user_timeout().expect("read the option");
            assert_ne!(before, Some(USER_TIMEOUT), "the kernel's default is none");
            fail_fast(s);
            let after = socket2::SockRef::from(s).tcp_user_timeout().expect("read the option");
            assert_eq!(after, Some(USER_TIMEOUT));
        }
    }
}
