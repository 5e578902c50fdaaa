//! The client: hands its call to its DC's coordinator, asks again when the answer is
//! late, records the outcome with what the transaction read and wrote, and (`pc-occ`)
//! runs an aborted call once more as a new transaction.

use super::*;

pub(crate) use crate::kit::client::ClientTimer;

/// The client's transaction in flight.
#[derive(Clone, Debug)]
pub(super) struct Current {
    pub(super) call: Call,
    pub(super) rec: TxnRecord,
    /// `pc-occ`: the first attempt's record, closed as aborted, while the retry runs.
    pub(super) first: Option<TxnRecord>,
}

crate::kit::client::client_struct! {
    /// A Paxos-commit baseline client.
    pub struct Client {
        pub(super) cc: Cc,
        pub(super) home: NodeId,
    }
}

impl Client {
    /// A client on `node`.
    pub fn new(env: Env, node: NodeId, id: ClientId, cc: Cc) -> Self {
        let who = crate::kit::client::Who::of(&env, node, id);
        let home = coordinator_of(&env.layout, who.dc);
        Client {
            env,
            who,
            cc,
            home,
            cur: None,
        }
    }

    fn send(&self, cx: &mut Ctx<'_, Msg>) {
        let Some(cur) = &self.cur else { return };
        cx.send(
            self.home,
            Msg::Submit {
                txn: cur.rec.id,
                call: cur.call.clone(),
            },
        );
        cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
    }

    fn on_result(&mut self, r: TxnResult, cx: &mut Ctx<'_, Msg>) {
        let TxnResult {
            txn,
            commit,
            reason,
            reads,
            writes,
            commit_start,
        } = r;
        let Some(cur) = self.cur.as_mut() else { return };
        if cur.rec.id != txn {
            return;
        }
        cur.rec.reads = reads;
        cur.rec.writes = writes;
        cur.rec.commit_start = commit_start;
        let retry = !commit
            && self.cc == Cc::Optimistic
            && cur.first.is_none()
            && reason.as_ref().is_some_and(|r| r.retry_helps());
        if retry {
            // §VII-A: an aborted OCC transaction runs once more before the abort is
            // returned. The first attempt is recorded as the abort it was; the retry
            // is a new transaction (its own id and versions) of the same call.
            let mut first = cur.rec.clone();
            first.outcome = Outcome::Aborted;
            first.abort_reason = reason.map(Box::new);
            first.end = Some(cx.now());
            let id = TxnId {
                client: txn.client,
                seq: txn.seq | RETRY_BIT,
            };
            cur.rec = crate::kit::client::new_record(id, self.who, &cur.call, cx);
            cur.first = Some(first);
            self.send(cx);
            return;
        }
        let Some(cur) = self.cur.take() else { return };
        cx.cancel_timer(ClientTimer::Status);
        if let Some(first) = cur.first {
            cx.record(first);
        }
        let outcome = if commit { Outcome::Committed } else { Outcome::Aborted };
        crate::kit::client::close(cur.rec, outcome, reason.filter(|_| !commit), cx);
    }
}

impl Client {
    pub(super) fn receive(&mut self, _from: NodeId, msg: Msg, cx: &mut Ctx<'_, Msg>) {
        if let Msg::Result(r) = msg {
            self.on_result(r, cx);
        }
    }

    fn on_tick(&mut self, t: ClientTimer, cx: &mut Ctx<'_, Msg>) {
        if t != ClientTimer::Status {
            return;
        }
        let Some(cur) = &self.cur else { return };
        cx.send(self.home, Msg::Status { txn: cur.rec.id });
        cx.set_timer(self.env.timeouts.status, ClientTimer::Status);
    }
}

impl ClientRole for Client {
    fn submit(&mut self, txn: TxnId, call: Call, cx: &mut Ctx<'_, Msg>) {
        let rec = crate::kit::client::new_record(txn, self.who, &call, cx);
        self.cur = Some(Current { call, rec, first: None });
        self.send(cx);
    }

    fn in_flight(&self) -> Option<TxnRecord> {
        self.cur.as_ref().map(|c| c.rec.clone())
    }
}

crate::kit::client::client_frame!(ClientTimer);
