//! The Catenae client (§IV "Transaction Client"): it checks that the program is
//! pre-declared, sends a read-write transaction to its DC's coordinator, and runs a
//! read-only one against the chain servers' snapshot, retrying after 50 ms (§VI-F).

use super::*;

const T_STATUS: TimerId = TimerId(1);
const T_RETRY: TimerId = TimerId(2);

/// Delay before a read-only transaction that met an uncommitted writer retries.
pub const RO_RETRY: Time = 50_000_000;

#[derive(Debug)]
enum Phase {
    /// Read-write: waiting for the coordinator's outcome.
    Submitted,
    /// Read-only: waiting for the chain servers of `expect`.
    Reading {
        attempt: u32,
        expect: BTreeSet<NodeId>,
        got: BTreeMap<NodeId, Vec<RoRead>>,
        retry: bool,
    },
}

#[derive(Debug)]
struct Current {
    rec: TxnRecord,
    call: Call,
    keys: Vec<Key>,
    phase: Phase,
}

/// A Catenae client.
#[derive(Debug)]
pub struct Client {
    env: Env,
    id: ClientId,
    dc: DcId,
    coord: NodeId,
    cur: Option<Current>,
}

impl Client {
    /// A client on `node`.
    pub fn new(env: Env, node: NodeId, id: ClientId) -> Self {
        let dc = env.layout.dc_of(node);
        let coord = env.layout.server(dc, 0);
        Client {
            env,
            id,
            dc,
            coord,
            cur: None,
        }
    }

    fn finish(&mut self, outcome: Outcome, reason: Option<AbortReason>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.take() else { return };
        crate::kit::client::finish(cur.rec, &[T_STATUS, T_RETRY], outcome, reason, cx);
    }

    fn send_read_only(&mut self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        let Phase::Reading {
            attempt,
            expect,
            got,
            retry,
        } = &mut cur.phase
        else {
            return;
        };
        *attempt += 1;
        got.clear();
        *retry = false;
        *expect = cur
            .keys
            .iter()
            .map(|k| coordinator::server_of(&self.env, self.dc, k))
            .collect();
        cx.send(
            self.coord,
            Msg::ReadOnly {
                txn: cur.rec.id,
                attempt: *attempt,
                keys: cur.keys.clone(),
            },
        );
        cx.set_timer(self.env.timeouts.status, T_STATUS);
    }

    fn on_ro_reply(&mut self, from: NodeId, txn: TxnId, att: u32, reads: Option<Vec<RoRead>>, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_mut() else { return };
        if cur.rec.id != txn {
            return;
        }
        let Phase::Reading {
            attempt,
            expect,
            got,
            retry,
        } = &mut cur.phase
        else {
            return;
        };
        if *attempt != att || *retry {
            return;
        }
        let Some(reads) = reads else {
            // Inside an uncommitted writer's decision period: retry after 50 ms.
            *retry = true;
            cx.cancel_timer(T_STATUS);
            cx.set_timer(RO_RETRY, T_RETRY);
            return;
        };
        got.insert(from, reads);
        if got.len() < expect.len() || !expect.iter().all(|n| got.contains_key(n)) {
            return;
        }
        let mut values: BTreeMap<Key, (Option<VersionId>, Option<Value>)> = BTreeMap::new();
        for rs in got.values() {
            for (k, v, val) in rs {
                values.insert(k.clone(), (*v, val.clone()));
            }
        }
        let mut exec = Execution::new(cur.call.clone());
        let result = loop {
            match crate::kit::client::next_step(&mut exec, &self.env.registry) {
                Step::Read(k) => {
                    let Some((v, val)) = values.get(&k) else {
                        break Err(AbortReason::UndeclaredKey);
                    };
                    cur.rec.reads.push(ReadRec {
                        key: k.clone(),
                        version: *v,
                    });
                    exec.supply(k, val.clone());
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

impl Actor for Client {
    type Msg = Msg;

    fn on_message(&mut self, from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Outcome { txn, result, .. } => self.on_outcome(txn, result, cx),
            Msg::RoReply {
                txn, attempt, reads, ..
            } => self.on_ro_reply(from, txn, attempt, reads, cx),
            _ => {}
        }
    }

    fn on_timer(&mut self, t: TimerId, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = self.cur.as_ref() else { return };
        match (t, &cur.phase) {
            (T_STATUS, Phase::Submitted) => {
                // The coordinator de-duplicates; a lost submit or outcome is re-sent.
                cx.send(
                    self.coord,
                    Msg::Submit {
                        txn: cur.rec.id,
                        call: cur.call.clone(),
                    },
                );
                cx.set_timer(self.env.timeouts.status, T_STATUS);
            }
            (T_STATUS, Phase::Reading { .. }) | (T_RETRY, Phase::Reading { .. }) => self.send_read_only(cx),
            _ => {}
        }
    }

    fn on_crash(&mut self) {
        self.cur = None;
    }
}

impl ClientRole for Client {
    fn submit(&mut self, txn: TxnId, call: Call, cx: &mut Ctx<'_, Msg>) {
        let mut rec = crate::kit::client::new_record(txn, self.id, self.dc, &call, cx);
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
            Phase::Reading {
                attempt: 0,
                expect: BTreeSet::new(),
                got: BTreeMap::new(),
                retry: false,
            }
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
            cx.set_timer(self.env.timeouts.status, T_STATUS);
        }
    }

    fn in_flight(&self) -> Option<TxnRecord> {
        self.cur.as_ref().map(|c| c.rec.clone())
    }
}
