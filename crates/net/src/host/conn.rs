//! Connections: dialling servers, accepting connections (the `Hello` and what it may
//! claim), reading and writing frames, and one-off control questions ([`ask`]).

use super::*;

/// Reads frames from a connection and feeds the event loop. Returns why it stopped.
async fn read_loop<M: serde::de::DeserializeOwned + Send + 'static>(
    mut rd: tokio::net::tcp::OwnedReadHalf,
    mut fr: FrameReader,
    allowed_from: Vec<NodeId>,
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
                    if !allowed_from.contains(&e.from) {
                        return format!("message from {}, which this connection did not introduce", e.from);
                    }
                    if !hosted.contains(&e.to) {
                        return format!("message for {}, which this process does not host", e.to);
                    }
                    Event::Net(e)
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
            Err(e) => return format!("read error: {e}"),
        }
    }
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

/// Writes queued frames to a connection until it fails or the queue closes. Frames are
/// batched into one `write` while more are queued.
async fn write_loop(wr: &mut tokio::net::tcp::OwnedWriteHalf, rx: &mut mpsc::Receiver<Vec<u8>>) -> Result<(), String> {
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
    }
    Ok(())
}

/// Keeps one outgoing connection to server `peer` up, re-dialling with back-off, and
/// writes the frames queued for it.
async fn dial_loop<M: serde::de::DeserializeOwned + Send + 'static>(
    peer: NodeId,
    addr: SocketAddr,
    hello: Vec<u8>,
    mut rx: mpsc::Receiver<Vec<u8>>,
    hosted: Arc<Vec<NodeId>>,
    inbox: mpsc::Sender<Event<M>>,
    stats: Arc<Stats>,
) {
    let mut backoff = BACKOFF_MIN;
    let mut failures = 0u32;
    loop {
        if rx.is_closed() {
            if failures >= DOWN_AFTER {
                stats.unreachable.fetch_sub(1, Ordering::Relaxed);
            }
            return; // the process stopped sending: nothing left to deliver
        }
        match TcpStream::connect(addr).await {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                if failures > 0 {
                    info!(%peer, %addr, "connected after {failures} failed attempts");
                }
                if failures >= DOWN_AFTER {
                    stats.unreachable.fetch_sub(1, Ordering::Relaxed);
                }
                failures = 0;
                backoff = BACKOFF_MIN;
                let (rd, mut wr) = s.into_split();
                if wr.write_all(&hello).await.is_err() {
                    continue;
                }
                stats.peers.fetch_add(1, Ordering::Relaxed);
                // The server answers clients on this connection; it may also refuse it.
                let (dummy_tx, _) = mpsc::channel(1);
                let mut reader = tokio::spawn(read_loop::<M>(
                    rd,
                    FrameReader::new(),
                    vec![peer],
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
        }
    }
}

/// Takes one accepted connection (number `conn`): reads the `Hello`, registers routes
/// to the client slots it names, then reads until it closes.
pub(super) async fn accept_conn<M: serde::Serialize + serde::de::DeserializeOwned + Send + 'static>(
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
    } = acceptor;
    let _ = s.set_nodelay(true);
    let (mut rd, mut wr) = s.into_split();
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
    async fn refuse<M: serde::Serialize>(wr: &mut tokio::net::tcp::OwnedWriteHalf, peer: SocketAddr, reason: String) {
        warn!(%peer, "refusing connection: {reason}");
        let _ = wr.write_all(&encode(&Wire::<M>::Refused { reason })).await;
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
    let writer = tokio::spawn(async move {
        let _ = write_loop(&mut wr, &mut rx).await;
    });
    let why = read_loop::<M>(rd, fr, nodes, hosted, inbox, tx).await;
    routes.release(conn);
    {
        let mut m = servers_in.lock().expect("servers lock");
        for n in &servers {
            if m.get(n).is_some_and(|(c, _)| *c == conn) {
                m.remove(n);
            }
        }
    }
    writer.abort();
    if why == "closed by peer" {
        debug!(%peer_addr, "connection closed");
    } else {
        warn!(%peer_addr, "dropping connection: {why}");
    }
}

/// Starts one dialler (and its queue, as the route) per server of `cluster` but `me`.
pub(super) fn dial_servers<M: serde::de::DeserializeOwned + Send + 'static>(
    cluster: &Cluster,
    me: Option<NodeId>,
    hello: Vec<u8>,
    routes: &Routes,
    hosted: &Arc<Vec<NodeId>>,
    inbox: &mpsc::Sender<Event<M>>,
    stats: &Arc<Stats>,
) {
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
        tokio::spawn(dial_loop::<M>(
            peer,
            *a,
            hello.clone(),
            rx,
            hosted.clone(),
            inbox.clone(),
            stats.clone(),
        ));
    }
}

/// Asks server `addr` of `cluster` one control question (`StatusReq` or `ReportReq`)
/// on a connection of its own, and returns the answer.
pub async fn ask<M: serde::Serialize + serde::de::DeserializeOwned>(
    cluster_id: u64,
    addr: SocketAddr,
    req: Wire<M>,
    timeout: Duration,
) -> Result<Wire<M>, String> {
    tokio::time::timeout(timeout, async {
        let mut s = TcpStream::connect(addr).await.map_err(|e| format!("{addr}: {e}"))?;
        let mut out = encode(&Wire::<M>::Hello {
            cluster: cluster_id,
            nodes: vec![],
        });
        out.extend_from_slice(&encode(&req));
        s.write_all(&out).await.map_err(|e| format!("{addr}: {e}"))?;
        let mut fr = FrameReader::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if let Some(b) = fr.next_frame().map_err(|e| format!("{addr}: {e}"))? {
                return match crate::decode::<Wire<M>>(&b).map_err(|e| format!("{addr}: {e}"))? {
                    Wire::Refused { reason } => Err(format!("{addr} refused: {reason}")),
                    w => Ok(w),
                };
            }
            let n = s.read(&mut buf).await.map_err(|e| format!("{addr}: {e}"))?;
            if n == 0 {
                return Err(format!("{addr} closed the connection"));
            }
            fr.push(&buf[..n]);
        }
    })
    .await
    .unwrap_or_else(|_| Err(format!("{addr}: no answer within {timeout:?}")))
}
