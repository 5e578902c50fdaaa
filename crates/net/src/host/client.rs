//! A client process: client actors on a set of slots, and the handles an application
//! (the client library, the bench) runs transactions through.

use super::conn::dial_servers;
use super::*;

/// A client process: hosts client actors on a set of slots and runs transactions on
/// them. Dropping every [`ClientHost`] clone stops it.
#[derive(Clone)]
pub struct ClientHost {
    tx: mpsc::Sender<Request>,
    stats: Arc<Stats>,
    /// The slots it hosts, as nodes.
    pub nodes: Arc<Vec<NodeId>>,
}

impl ClientHost {
    /// Starts a client process hosting client slots `slots` of `cluster`. Client ids
    /// are made unique across runs from the clock: `(seconds since epoch mod 4e6) * 1024 + slot`.
    /// `sec` is how its connections are secured: `cluster.security(Role::Client)` for
    /// the cluster file's client credentials.
    pub fn start<P: Protocol>(
        p: P,
        cluster: Arc<Cluster>,
        slots: &[u32],
        sec: crate::tls::Security,
    ) -> Result<ClientHost, String> {
        let env = env_for(&p, &cluster)?;
        if let Some(s) = slots.iter().find(|s| **s >= cluster.file.client_slots) {
            return Err(format!(
                "client slot {s} does not exist (the cluster file reserves {})",
                cluster.file.client_slots
            ));
        }
        let routes = Routes::default();
        let stats = Arc::new(Stats::default());
        let (inbox_tx, inbox_rx) = mpsc::channel(INBOX);
        let (req_tx, req_rx) = mpsc::channel(1024);
        let nodes: Vec<NodeId> = slots.iter().map(|s| cluster.slot_node(*s)).collect();
        let hosted = Arc::new(nodes.clone());
        let mut core: Core<P> = Core::new(p.clone(), cluster.clone(), &env, stats.clone(), routes.clone());
        let session = (core.clock.now() / 1_000_000_000 % 4_000_000) as u32;
        for (slot, node) in slots.iter().zip(&nodes) {
            let id = ClientId(session * crate::cluster::MAX_CLIENT_SLOTS + slot);
            core.client_ids.insert(*node, id);
            core.locals.insert(
                *node,
                Local {
                    role: Role::Client(p.client(&env, *node, id)),
                    rng: rng_for(cluster.file.seed ^ session as u64, node.0 as u64),
                    timers: HashMap::default(),
                },
            );
            core.free.push(*node);
        }
        core.free.reverse();
        let now = core.clock.now();
        for n in &nodes {
            core.call(*n, 0, now, |r, cx| {
                if let Role::Client(c) = r {
                    c.on_start(cx)
                }
            });
        }
        dial_servers::<P::Msg>(&cluster, None, &routes, &hosted, &inbox_tx, &stats, &sec);
        drop(inbox_tx);
        tokio::spawn(async move {
            core.end_batch();
            core.run(inbox_rx, Some(req_rx), None).await;
        });
        Ok(ClientHost {
            tx: req_tx,
            stats,
            nodes: hosted,
        })
    }

    /// Hands `call` to the event loop; the receiver gets its record.
    async fn submit(
        &self,
        call: Call,
        dc: Option<DcId>,
        pauses: Option<mpsc::UnboundedSender<(TxnId, Option<Value>)>>,
    ) -> Result<oneshot::Receiver<TxnRecord>, RunError> {
        let (reply, rx) = oneshot::channel();
        let job = Job {
            call,
            dc,
            reply,
            pauses,
        };
        self.tx
            .send(Request::Submit(job))
            .await
            .map_err(|_| RunError::Stopped)?;
        Ok(rx)
    }

    /// Runs `call` on a free slot (in `dc`, if given) and returns its record, whatever
    /// its outcome. `None`: the client process has stopped.
    pub async fn run(&self, call: Call, dc: Option<DcId>) -> Option<TxnRecord> {
        self.submit(call, dc, None).await.ok()?.await.ok()
    }

    /// Like [`ClientHost::run`], but gives up waiting after `timeout` (the transaction
    /// goes on; its slot is busy until it ends).
    pub async fn run_timeout(&self, call: Call, dc: Option<DcId>, timeout: Duration) -> Result<TxnRecord, RunError> {
        let rx = self.submit(call, dc, None).await?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) => Err(RunError::Stopped),
            Err(_) => Err(RunError::TimedOut),
        }
    }

    /// Starts interactive transaction `call` (a [`script`] program; its first
    /// operations in its arguments) on a free slot (in `dc`, if given). The handle
    /// reports each pause and the end.
    pub async fn start_interactive(&self, call: Call, dc: Option<DcId>) -> Result<Interactive, RunError> {
        let (ptx, pauses) = mpsc::unbounded_channel();
        let done = self.submit(call, dc, Some(ptx)).await?;
        Ok(Interactive {
            tx: self.tx.clone(),
            pauses,
            done,
            txn: None,
        })
    }

    /// Records (outcome unknown) of the transactions still running.
    pub async fn in_flight(&self) -> Vec<TxnRecord> {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Request::InFlight(tx)).await.is_err() {
            return vec![];
        }
        rx.await.unwrap_or_default()
    }

    /// Servers this process has a live connection to.
    pub fn connected(&self) -> u32 {
        self.stats.peers.load(Ordering::Relaxed)
    }

    /// How many servers this process could not reach in its last few dials in a row
    /// (connection refused or timed out: down, or not started yet).
    pub fn unreachable(&self) -> u32 {
        self.stats.unreachable.load(Ordering::Relaxed)
    }

    /// Takes the records of attempts calls made before their last one (see
    /// `Stats::earlier_attempts`): a benchmark adds them to its history.
    pub fn take_earlier_attempts(&self) -> Vec<TxnRecord> {
        std::mem::take(&mut *self.stats.earlier_attempts.lock().expect("stats lock"))
    }

    /// Why a server last refused this process's connection, if one did.
    pub fn refused(&self) -> Option<String> {
        self.stats.refused.lock().expect("stats lock").clone()
    }

    /// The process's traffic counters.
    pub async fn counters(&self) -> Counters {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Request::Counters(tx)).await.is_err() {
            return Counters::default();
        }
        rx.await.unwrap_or_default()
    }
}

/// An interactive transaction running on a client process.
pub struct Interactive {
    tx: mpsc::Sender<Request>,
    pauses: mpsc::UnboundedReceiver<(TxnId, Option<Value>)>,
    done: oneshot::Receiver<TxnRecord>,
    txn: Option<TxnId>,
}

/// Where an interactive transaction has got to.
#[derive(Debug)]
pub enum Progress {
    /// It waits for the caller's next operations; the last read's value.
    Paused(Option<Value>),
    /// It ended (committed or aborted).
    Ended(TxnRecord),
}

impl Interactive {
    /// The transaction's id, once it has paused at least once.
    pub fn txn(&self) -> Option<TxnId> {
        self.txn
    }

    /// Waits up to `timeout` for the next pause or the end.
    pub async fn next(&mut self, timeout: Duration) -> Result<Progress, RunError> {
        let wait = async {
            tokio::select! {
                biased;
                p = self.pauses.recv() => match p {
                    Some((txn, v)) => {
                        self.txn = Some(txn);
                        Ok(Progress::Paused(v))
                    }
                    // The process dropped the transaction's pause channel: it ended.
                    None => (&mut self.done).await.map(Progress::Ended).map_err(|_| RunError::Stopped),
                },
                r = &mut self.done => r.map(Progress::Ended).map_err(|_| RunError::Stopped),
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .unwrap_or(Err(RunError::TimedOut))
    }

    /// Sends the caller's next operations (after a pause).
    pub async fn extend(&mut self, args: Vec<meridian_txn::Arg>) -> Result<(), RunError> {
        let txn = self.txn.ok_or(RunError::Stopped)?;
        self.tx
            .send(Request::Extend { txn, args })
            .await
            .map_err(|_| RunError::Stopped)
    }

    /// Like [`Interactive::extend`], without waiting for room in the process's queue
    /// (for `Drop` impls); `false` if it could not be sent.
    pub fn try_extend(&self, args: Vec<meridian_txn::Arg>) -> bool {
        match self.txn {
            Some(txn) => self.tx.try_send(Request::Extend { txn, args }).is_ok(),
            None => false,
        }
    }
}

/// Why [`ClientHost::run_timeout`] returned no record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunError {
    /// No outcome within the time allowed.
    TimedOut,
    /// The client process has stopped.
    Stopped,
}
