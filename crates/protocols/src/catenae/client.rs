//! The Catenae client (§IV "Transaction Client"): it checks that the program is
//! pre-declared, sends a read-write transaction to its DC's coordinator, and runs a
//! read-only one against the chain servers' snapshot, retrying after 50 ms (§VI-F).

use super::*;

crate::kit::timers::timers! {
    /// A Catenae client's timers.
    pub(crate) enum ClientTimer { Status = 1, Retry = 2 }
}

/// Delay before a read-only transaction that met an uncommitted writer retries (also
/// how long a chain server holds a read whose snapshot epoch is still incomplete).
pub const RO_RETRY: Time = 50_000_000;

#[derive(Clone, Debug)]
enum Phase {
    /// Read-write: waiting for the coordinator's outcome.
    Submitted,
    /// Read-only: waiting for the chain servers of `expect`.
    Reading(Box<Reading>),
}

/// A read-only transaction's reads at one snapshot.
#[derive(Clone, Debug, Default)]
struct Reading {
    attempt: u32,
    /// Servers whose answer this round waits for.
    expect: BTreeSet<NodeId>,
    got: BTreeMap<NodeId, Vec<RoRead>>,
    /// Inside a writer's decision period: waiting to retry.
    retry: bool,
    /// The snapshot epoch, once the first answer named it.
    snap: Option<u64>,
    /// Every value read at `snap` so far.
    values: BTreeMap<Key, (Option<VersionId>, Option<Value>)>,
    /// The program, run as far as the values allow.
    exec: Option<Execution>,
}

#[derive(Clone, Debug)]
pub(super) struct Current {
    rec: TxnRecord,
    call: Call,
    keys: Vec<Key>,
    phase: Phase,
}

crate::kit::client::client_struct! {
    /// A Catenae client.
    pub struct Client {
        coord: NodeId,
        /// With a secondary coordinator: the DC's other coordinator node, tried when the
        /// one in `coord` does not answer within the status timeout.
        other: Option<NodeId>,
    }
}

impl Client {
    /// A client on `node` (`secondary`: its DC has a secondary coordinator).
    pub fn new(env: Env, node: NodeId, id: ClientId, secondary: bool) -> Self {
        let who = crate::kit::client::Who::of(&env, node, id);
        let coord = env.layout.server(who.dc, 0);
        let other = Some(env.layout.server(who.dc, 1)).filter(|n| secondary && *n != coord);
        Client {
            env,
            who,
            coord,
            other,
            cur: None,
        }
    }

    /// No answer within the status timeout: with a secondary, the other coordinator
    /// node may have taken over.
    fn switch(&mut self) {
        if let Some(o) = self.other.as_mut() {
            std::mem::swap(o, &mut self.coord);
        }
    }

    /// A coordinator node answered: it is the one to send to.
    fn heard(&mut self, from: NodeId) {
        if self.other == Some(from) {
            self.switch();
        }
    }

    fn finish(&mut self, outcome: Outcome, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.take() else { return };
        crate::kit::client::finish(cur.rec, ClientTimer::ALL, outcome, reason, cx);
    }

    fn send_read_only(&mut self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let Phase::Reading(r) = &mut cur.phase else {
            return;
        };
        let attempt = r.attempt + 1;
        **r = Reading {
            attempt,
            ..Reading::default()
        };
        cur.rec.reads.clear();
        // Declared keys and ranges: a range's server answers whether a writer of a row
        // in it is inside its decision period, before any row of it is read.
        r.expect = cur
            .keys
            .iter()
            .map(|k| coordinator::server_of(&self.env, self.who.dc, k))
            .collect();
        cx.send(
            self.coord,
            Msg::ReadOnly {
                txn: cur.rec.id,
                attempt,
                keys: cur.keys.clone(),
            },
        );
        cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
    }

    fn on_ro_reply(
        &mut self,
        from: NodeId,
        txn: TxnId,
        att: u32,
        snap: u64,
        reads: Option<Vec<RoRead>>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let Some(cur) = self.cur.as_mut() else { return };
        if cur.rec.id != txn {
            return;
        }
        let Phase::Reading(r) = &mut cur.phase else {
            return;
        };
        if r.attempt != att || r.retry || r.snap.is_some_and(|s| s != snap) {
            return;
        }
        // (A refusal may come from the coordinator, before any epoch was scheduled.)
        let Some(reads) = reads else {
            // Inside an uncommitted writer's decision period: retry after 50 ms.
            r.retry = true;
            cx.cancel_timer(ClientTimer::Status);
            cx.set_timer(RO_RETRY, ClientTimer::Retry);
            return;
        };
        if !r.expect.contains(&from) {
            return;
        }
        r.snap = Some(snap);
        r.got.insert(from, reads);
        if !r.expect.iter().all(|n| r.got.contains_key(n)) {
            return;
        }
        for rs in std::mem::take(&mut r.got).into_values() {
            for (k, v, val) in rs {
                r.values.insert(k, (v, val));
            }
        }
        let exec = r.exec.get_or_insert_with(|| Execution::new(cur.call.clone()));
        let result = loop {
            match crate::kit::client::next_step(exec, &self.env.registry) {
                Step::Read(k) => {
                    if let Some((v, val)) = r.values.get(&k) {
                        crate::kit::client::supply_read(&mut cur.rec, exec, k, *v, val.clone());
                        continue;
                    }
                    // A row inside a declared range: read it (and the rest of its
                    // batch) at the same snapshot, from its chain server. The range's
                    // server found no writer of it up to `snap` undecided, so every
                    // such writer's rows are installed there.
                    let mut want: Vec<Key> = exec.batch().to_vec();
                    if want.is_empty() {
                        want.push(k);
                    }
                    want.retain(|k| !r.values.contains_key(k));
                    if !want.iter().all(|k| cur.keys.iter().any(|d| meridian_txn::covers(d, k))) {
                        break Err(AbortReason::UndeclaredKey);
                    }
                    let mut by: BTreeMap<NodeId, Vec<Key>> = BTreeMap::new();
                    for k in want {
                        by.entry(coordinator::server_of(&self.env, self.who.dc, &k))
                            .or_default()
                            .push(k);
                    }
                    r.expect = by.keys().copied().collect();
                    for (n, keys) in by {
                        cx.send(
                            n,
                            Msg::RoRead(SnapRead {
                                txn,
                                attempt: att,
                                client: cx.me(),
                                snap,
                                keys,
                            }),
                        );
                    }
                    return;
                }
                Step::Done { writes, .. } if writes.is_empty() => break Ok(()),
                Step::Done { .. } => break Err(AbortReason::UndeclaredKey),
                Step::Abort(r) => break Err(r),
                Step::Wait { .. } => break Err(AbortReason::NotInteractive),
            }
        };
        match result {
            Ok(()) => self.finish(Outcome::Committed, None, cx),
            Err(r) => {
                if let Some(c) = self.cur.as_mut() {
                    c.rec.reads.clear();
                }
                self.finish(Outcome::Aborted, Some(r), cx)
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn on_outcome(&mut self, txn: TxnId, result: Result<Executed, AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        if cur.rec.id != txn || !matches!(cur.phase, Phase::Submitted) {
            return;
        }
        match result {
            Ok((reads, writes)) => {
                cur.rec.reads = reads
                    .into_iter()
                    .map(|(key, version)| ReadRec { key, version })
                    .collect();
                crate::kit::client::number_writes(&mut cur.rec, writes);
                self.finish(Outcome::Committed, None, cx);
            }
            Err(r) => self.finish(Outcome::Aborted, Some(r), cx),
        }
    }
}

impl Client {
    pub(super) fn receive(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Outcome { txn, result, .. } => {
                self.heard(from);
                self.on_outcome(txn, result, cx)
            }
            Msg::RoReply {
                txn,
                attempt,
                snap,
                reads,
            } => self.on_ro_reply(from, txn, attempt, snap, reads, cx),
            _ => {}
        }
    }

    fn on_tick(&mut self, t: ClientTimer, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        match (t, &cur.phase) {
            (ClientTimer::Status, Phase::Submitted) => {
                // The coordinator de-duplicates; a lost submit or outcome is re-sent.
                let msg = Msg::Submit {
                    txn: cur.rec.id,
                    call: cur.call.clone(),
                };
                self.switch();
                cx.send(self.coord, msg);
                cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
            }
            (ClientTimer::Status, Phase::Reading(_)) => {
                self.switch();
                self.send_read_only(cx)
            }
            (ClientTimer::Retry, Phase::Reading(_)) => self.send_read_only(cx),
            _ => {}
        }
    }
}

impl ClientRole for Client {
    fn submit(&mut self, txn: TxnId, call: Call, cx: &mut Ctx<'_, Msg>) {
        let mut rec = crate::kit::client::new_record(txn, self.who, &call, cx);
        rec.commit_start = Some(cx.now());
        // §VI-B: only pre-declared transactions run; anything else is refused here.
        let keys = match coordinator::declared(&self.env, &call) {
            Ok(k) => k,
            Err(r) => {
                crate::kit::client::close(rec, Outcome::Aborted, Some(r), cx);
                return;
            }
        };
        let read_only = keys.iter().all(|(_, w)| !w);
        let phase = if read_only {
            Phase::Reading(Box::default())
        } else {
            Phase::Submitted
        };
        self.cur = Some(Current {
            rec,
            call: call.clone(),
            keys: keys.into_iter().map(|(k, _)| k).collect(),
            phase,
        });
        if read_only {
            self.send_read_only(cx);
        } else {
            cx.send(self.coord, Msg::Submit { txn, call });
            cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
        }
    }

    fn in_flight(&self) -> Option<TxnRecord> {
        self.cur.as_ref().map(|c| c.rec.clone())
    }
}

crate::kit::client::client_frame!(ClientTimer);
