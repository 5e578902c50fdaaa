//! One global state of a small deployment and the steps that lead out of it.
//!
//! A [`World`] holds every actor (cloned, not rebuilt: protocol roles are `Clone`), the
//! messages in flight, each node's armed timers and random generator, the clients'
//! progress through their transactions and the fault budget left. [`World::steps`]
//! lists every step the explorer may take from it and [`World::apply`] takes one.
//!
//! **Time is abstract.** A message takes no time: delivering one leaves the clock where
//! it is. Only a timer moves the clock, to its deadline if that is later. So two
//! interleavings of the same deliveries reach the same clock, and a timer that fires
//! while messages are still in flight models those messages being slower than the
//! timeout, which the budget's `timeouts` bounds (see [`Budget`]).

use meridian_core::{Actor, Command, Ctx, NodeId, Outcome, Rng, Time, TimerId, TxnId, TxnRecord};
use meridian_protocols::{ClientRole, Protocol, Replica};
use meridian_txn::Call;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::step::{Budget, Step, ANY};

/// The most virtual time one timer step spans (a quiet network's timers, or one
/// node's early ones, fired until one acts).
const MACRO_SPAN: Time = 30_000_000_000;

/// `MERIDIAN_DEBUG_MSGS=PATTERN`: every delivered message whose `Debug` text contains
/// PATTERN is printed to stderr (as `meridian sim` does), the fair schedule at a
/// path's end included, so a replayed path can be followed.
fn debug_msgs() -> Option<&'static str> {
    static PAT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PAT.get_or_init(|| std::env::var("MERIDIAN_DEBUG_MSGS").ok().filter(|s| !s.is_empty()))
        .as_deref()
}

/// A message in flight.
#[derive(Clone, Debug)]
pub(crate) struct Envelope<M> {
    pub(crate) seq: u64,
    pub(crate) from: NodeId,
    pub(crate) to: NodeId,
    pub(crate) msg: M,
    /// Hash of (from, to, message), for the state's fingerprint.
    hash: u64,
}

/// What every world of one exploration shares.
pub(crate) struct Shared<P: Protocol> {
    pub(crate) proto: P,
    /// The workload (for its invariant on the final state).
    pub(crate) workload: Box<dyn meridian_workload::Workload>,
    /// The transactions each client runs, in order.
    pub(crate) calls: Vec<Vec<Call>>,
    pub(crate) servers: u32,
}

/// One global state. The actors and the records are shared between a state and the
/// states taken from it until a step changes them (copy on write, `Arc::make_mut`): a
/// step changes one node, so a copy of the world copies that node's actor only, where
/// it used to copy every actor and record (most of a step's cost, by a profile).
#[derive(Clone)]
pub(crate) struct World<P: Protocol> {
    pub(crate) servers: Vec<Arc<P::Server>>,
    pub(crate) clients: Vec<Arc<P::Client>>,
    /// Per server: up (not crashed).
    pub(crate) up: Vec<bool>,
    /// Per node (servers, then clients).
    rngs: Vec<Rng>,
    /// Per node: armed timers and their deadlines.
    pub(crate) timers: Vec<BTreeMap<TimerId, Time>>,
    /// In flight, in send order.
    pub(crate) net: Vec<Envelope<P::Msg>>,
    next_seq: u64,
    pub(crate) now: Time,
    /// Every outcome the clients recorded, in order.
    pub(crate) records: Arc<Vec<TxnRecord>>,
    /// Hash of the records, in order (kept up to date as they are appended).
    records_hash: u64,
    /// Per client: transactions submitted so far.
    submitted: Vec<u32>,
    /// Per client: whether a transaction is in flight.
    busy: Vec<bool>,
    pub(crate) left: Budget,
    /// Timer steps that moved the clock forward (a quiet network's, or early ones)
    /// left on this path: periodic timers (heartbeats, sweeps) would otherwise make
    /// every path endless.
    pub(crate) clock_steps: u32,
    /// Per node: hash of its state (kept up to date after every input it handles).
    node_hash: Vec<u64>,
    /// Whether to keep `node_hash` up to date (off for the fair schedule at a path's
    /// end, whose states are never compared: hashing a server's image is most of a
    /// step's cost).
    pub(crate) hashing: bool,
}

fn hash_of(x: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    x.hash(&mut h);
    h.finish()
}

/// Actor state as text or bytes, hashed.
fn state_hash<P: Protocol>(sh: &Shared<P>, w: &World<P>, node: usize) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    // The generator by its next four outputs (a copy's): its Debug text, hashed
    // before, was a tenth of the search's time.
    let mut rng = w.rngs[node].clone();
    for _ in 0..4 {
        rand::RngCore::next_u64(&mut rng).hash(&mut h);
    }
    w.timers[node].hash(&mut h);
    if node < sh.servers as usize {
        w.up[node].hash(&mut h);
        match sh.proto.image(&w.servers[node]) {
            Some(bytes) => bytes.hash(&mut h),
            None => format!("{:?}", w.servers[node]).hash(&mut h),
        }
    } else {
        let c = node - sh.servers as usize;
        format!("{:?}", w.clients[c]).hash(&mut h);
        (w.submitted[c], w.busy[c]).hash(&mut h);
    }
    h.finish()
}

impl<P: Protocol> World<P> {
    /// The initial state: every server started, every client's first transaction
    /// submitted.
    pub(crate) fn new(
        sh: &Shared<P>,
        servers: Vec<P::Server>,
        clients: Vec<P::Client>,
        rngs: Vec<Rng>,
        left: Budget,
        clock_steps: u32,
    ) -> World<P> {
        let nodes = rngs.len();
        let nc = clients.len();
        let mut w = World {
            up: vec![true; servers.len()],
            servers: servers.into_iter().map(Arc::new).collect(),
            clients: clients.into_iter().map(Arc::new).collect(),
            rngs,
            timers: vec![BTreeMap::new(); nodes],
            net: vec![],
            next_seq: 0,
            now: 0,
            records: Arc::new(vec![]),
            records_hash: 0,
            submitted: vec![0; nc],
            busy: vec![false; nc],
            left,
            clock_steps,
            node_hash: vec![0; nodes],
            hashing: true,
        };
        for n in 0..sh.servers {
            w.dispatch(sh, NodeId(n), |a, cx| match a {
                Role::S(s) => s.on_start(cx),
                Role::C(c) => c.on_start(cx),
            });
        }
        for c in 0..nc {
            let node = NodeId(sh.servers + c as u32);
            w.dispatch(sh, node, |a, cx| {
                if let Role::C(c) = a {
                    c.on_start(cx)
                }
            });
            w.submit_next(sh, c);
        }
        for n in 0..nodes {
            w.node_hash[n] = state_hash(sh, &w, n);
        }
        w
    }

    /// Every transaction answered, nothing in flight, every server up: only a crash
    /// (and what follows from it) can still go wrong.
    pub(crate) fn finished(&self, sh: &Shared<P>) -> bool {
        self.all_resolved(sh) && self.net.is_empty() && self.up.iter().all(|u| *u)
    }

    /// Every transaction of every client recorded, with a known outcome.
    pub(crate) fn all_resolved(&self, sh: &Shared<P>) -> bool {
        let total: usize = sh.calls.iter().map(Vec::len).sum();
        self.records.len() >= total && self.unresolved(sh).is_empty()
    }

    /// What is wrong with the clients' records: transactions without a known outcome,
    /// and any recorded more than once (a client must record each exactly once).
    pub(crate) fn unresolved(&self, sh: &Shared<P>) -> Vec<String> {
        let mut out = vec![];
        for (c, calls) in sh.calls.iter().enumerate() {
            for seq in 1..=calls.len() as u32 {
                let id = TxnId { client: c as u32, seq };
                let recs: Vec<&TxnRecord> = self.records.iter().filter(|r| r.id == id).collect();
                match recs.as_slice() {
                    [] => out.push(format!("{id:?} unanswered")),
                    [r] if r.outcome == Outcome::Unknown => out.push(format!("{id:?} of unknown outcome")),
                    [_] => {}
                    more => out.push(format!(
                        "{id:?} recorded {} times ({:?})",
                        more.len(),
                        more.iter().map(|r| r.outcome).collect::<Vec<_>>()
                    )),
                }
            }
        }
        // Records of other ids (a protocol's own retry of an aborted attempt under a
        // new id, such as Paxos Commit's) are fine, each once, of a client that exists.
        for (i, r) in self.records.iter().enumerate() {
            let c = r.id.client as usize;
            let expected = c < sh.calls.len() && r.id.seq >= 1 && r.id.seq as usize <= sh.calls[c].len();
            if expected {
                continue;
            }
            if c >= sh.calls.len() {
                out.push(format!("{:?} recorded by a client that does not exist", r.id));
            } else if self.records[..i].iter().any(|o| o.id == r.id) {
                out.push(format!("{:?} recorded more than once", r.id));
            } else if r.outcome == Outcome::Unknown {
                out.push(format!("{:?} of unknown outcome", r.id));
            }
        }
        out
    }

    /// The state's fingerprint: two states with equal fingerprints are explored once.
    /// It covers every actor's state, random generator and timers, the messages in
    /// flight (as a multiset), the clock, the clients' outcomes and the budget left.
    pub(crate) fn fingerprint(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.now.hash(&mut h);
        self.node_hash.hash(&mut h);
        // In flight: a multiset when every order may be delivered, but in order under
        // a reorder bound (only the oldest is delivered for free, so the order matters).
        let mut msgs: Vec<u64> = self.net.iter().map(|e| e.hash).collect();
        if self.left.reorder == ANY {
            msgs.sort_unstable();
        }
        msgs.hash(&mut h);
        // The whole records: two paths that leave the same actors may still differ in
        // what their transactions read, which the history check at the end judges.
        self.records_hash.hash(&mut h);
        (self.left, self.clock_steps).hash(&mut h);
        h.finish()
    }

    /// The earliest armed timer of `node`.
    fn next_timer(&self, node: usize) -> Option<(TimerId, Time)> {
        self.timers[node]
            .iter()
            .map(|(i, t)| (*i, *t))
            .min_by_key(|(i, t)| (*t, *i))
    }

    /// Every step the explorer may take from here, in a fixed order.
    pub(crate) fn steps(&self, sh: &Shared<P>) -> Vec<Step> {
        let mut out = vec![];
        let deliverable = if self.left.reorder > 0 { self.net.len() } else { 1 };
        for e in self.net.iter().take(deliverable) {
            out.push(Step::Deliver(e.seq));
        }
        // Timers: in a quiet network the earliest fires (with those after it, until
        // one acts); with messages in flight a due timer fires for free, and an early
        // one costs budget.
        if self.net.is_empty() {
            let first = self.earliest_timer();
            let due = first
                .and_then(|n| self.next_timer(n))
                .is_some_and(|(_, t)| t <= self.now);
            if self.clock_steps > 0 || due {
                out.extend(first.map(|n| Step::Timer(NodeId(n as u32))));
            }
        } else {
            for n in 0..self.timers.len() {
                let Some((_, t)) = self.next_timer(n) else { continue };
                if t <= self.now || (self.left.timeouts > 0 && self.clock_steps > 0) {
                    // (A due timer fires alone; another moves the clock, see `apply`.)
                    out.push(Step::Timer(NodeId(n as u32)));
                }
            }
        }
        for n in 0..sh.servers as usize {
            if self.up[n] && self.left.crash > 0 {
                out.push(Step::Crash(NodeId(n as u32)));
            }
            if !self.up[n] {
                out.push(Step::Restart(NodeId(n as u32)));
            }
        }
        if self.left.drop > 0 {
            out.extend(self.net.iter().map(|e| Step::Drop(e.seq)));
        }
        if self.left.dup > 0 {
            out.extend(self.net.iter().map(|e| Step::Dup(e.seq)));
        }
        out
    }

    /// Whether the path can still go on without a fault: a delivery or a timer.
    pub(crate) fn can_progress(steps: &[Step]) -> bool {
        steps.iter().any(|s| matches!(s, Step::Deliver(_) | Step::Timer(_)))
    }

    /// Takes one step (one of [`World::steps`]; an error names a step that is not).
    pub(crate) fn apply(&mut self, sh: &Shared<P>, step: Step) -> Result<(), String> {
        let missing = || format!("step {step}: no such message in flight");
        match step {
            Step::Deliver(seq) => {
                let i = self.net.iter().position(|e| e.seq == seq).ok_or_else(missing)?;
                if i > 0 && self.left.reorder != ANY {
                    if self.left.reorder == 0 {
                        return Err(format!("step {step}: a reordering, and the budget has none left"));
                    }
                    self.left.reorder -= 1;
                }
                let e = self.net.remove(i);
                if let Some(pat) = debug_msgs() {
                    let text = format!("{:?}", e.msg);
                    if text.contains(pat) {
                        eprintln!(
                            "{:>10.6}s d{} {} -> {}: {text}",
                            self.now as f64 / 1e9,
                            e.seq,
                            e.from.0,
                            e.to.0
                        );
                    }
                }
                let (from, msg) = (e.from, e.msg);
                self.dispatch(sh, e.to, move |a, cx| match a {
                    Role::S(s) => s.on_message(from, msg, cx),
                    Role::C(c) => c.on_message(from, msg, cx),
                });
            }
            Step::Timer(node) => {
                let n = node.0 as usize;
                let (_, t) = self
                    .timers
                    .get(n)
                    .and_then(|_| self.next_timer(n))
                    .ok_or_else(|| format!("step {step}: node {} has no timer armed", node.0))?;
                let start = self.now;
                if t > self.now {
                    if self.clock_steps == 0 {
                        return Err(format!(
                            "step {step}: moves the clock, and this path has no clock step left"
                        ));
                    }
                    self.clock_steps -= 1;
                }
                if t <= self.now {
                    // Due now (armed with no delay): fires alone, the clock stays.
                    self.fire(sh, n);
                } else {
                    // The clock moves to the node's next deadline, and every timer due
                    // by then fires, in deadline order; it keeps moving from deadline
                    // to deadline of that node (of any node, on a quiet network) until
                    // a timer acts.
                    if !self.net.is_empty() {
                        if self.left.timeouts == 0 {
                            return Err(format!("step {step}: an early timeout, and the budget has none left"));
                        }
                        self.left.timeouts -= 1;
                    }
                    let quiet = self.net.is_empty();
                    loop {
                        let next = if quiet { self.earliest_timer() } else { Some(n) };
                        let Some(until) = next.and_then(|m| self.next_timer(m)).map(|(_, t)| t) else {
                            break;
                        };
                        if self.run_clock(sh, until) || self.now > start + MACRO_SPAN {
                            break;
                        }
                    }
                }
            }
            Step::Crash(node) => {
                let n = node.0 as usize;
                if n >= self.up.len() || !self.up[n] || self.left.crash == 0 {
                    return Err(format!("step {step}: not an up server, or no crash left in the budget"));
                }
                self.left.crash -= 1;
                self.crash(sh, n);
            }
            Step::Restart(node) => {
                let n = node.0 as usize;
                if n >= self.up.len() || self.up[n] {
                    return Err(format!("step {step}: not a crashed server"));
                }
                self.up[n] = true;
                self.dispatch(sh, node, |a, cx| {
                    if let Role::S(s) = a {
                        s.on_recover(cx)
                    }
                });
            }
            Step::Drop(seq) => {
                let i = self.net.iter().position(|e| e.seq == seq).ok_or_else(missing)?;
                if self.left.drop == 0 {
                    return Err(format!("step {step}: no drop left in the budget"));
                }
                self.left.drop -= 1;
                self.net.remove(i);
            }
            Step::Dup(seq) => {
                let i = self.net.iter().position(|e| e.seq == seq).ok_or_else(missing)?;
                if self.left.dup == 0 {
                    return Err(format!("step {step}: no duplicate left in the budget"));
                }
                self.left.dup -= 1;
                let mut e = self.net[i].clone();
                e.seq = self.next_seq;
                self.next_seq += 1;
                self.net.push(e);
            }
        }
        Ok(())
    }

    /// The node whose armed timer is the earliest of all.
    fn earliest_timer(&self) -> Option<usize> {
        (0..self.timers.len())
            .filter_map(|n| self.next_timer(n).map(|(id, t)| (t, id, n)))
            .min()
            .map(|(_, _, n)| n)
    }

    /// Moves the clock to `until`, firing every timer due by then in deadline order;
    /// whether any of them acted.
    fn run_clock(&mut self, sh: &Shared<P>, until: Time) -> bool {
        let mut acted = false;
        for _ in 0..10_000 {
            let Some(n) = self.earliest_timer() else { break };
            let Some((_, t)) = self.next_timer(n) else { break };
            if t > until {
                break;
            }
            acted |= self.fire(sh, n);
        }
        self.now = self.now.max(until);
        acted
    }

    /// Fires node `n`'s earliest timer; whether it acted (sent a message or ended a
    /// transaction).
    fn fire(&mut self, sh: &Shared<P>, n: usize) -> bool {
        let Some((id, t)) = self.next_timer(n) else {
            return false;
        };
        let (sent, ended) = (self.next_seq, self.records.len());
        self.now = self.now.max(t);
        self.timers[n].remove(&id);
        self.dispatch(sh, NodeId(n as u32), move |a, cx| match a {
            Role::S(s) => s.on_timer(id, cx),
            Role::C(c) => c.on_timer(id, cx),
        });
        self.next_seq != sent || self.records.len() != ended
    }

    fn crash(&mut self, sh: &Shared<P>, n: usize) {
        self.up[n] = false;
        self.timers[n].clear();
        // What was on its way to the crashed node is lost with its connections.
        self.net.retain(|e| e.to.0 as usize != n);
        Arc::make_mut(&mut self.servers[n]).on_crash();
        if self.hashing {
            self.node_hash[n] = state_hash(sh, self, n);
        }
    }

    /// Restarts every crashed server (the end of a path: faults heal).
    pub(crate) fn heal(&mut self, sh: &Shared<P>) {
        for n in 0..self.up.len() {
            if !self.up[n] {
                let _ = self.apply(sh, Step::Restart(NodeId(n as u32)));
            }
        }
    }

    /// One step of a fair schedule (the end of a path): the oldest message, else the
    /// earliest timer. `false` when nothing is left to do.
    pub(crate) fn fair_step(&mut self, sh: &Shared<P>) -> bool {
        if let Some(seq) = self.net.first().map(|e| e.seq) {
            return self.apply(sh, Step::Deliver(seq)).is_ok();
        }
        match self.earliest_timer() {
            Some(n) => self.apply(sh, Step::Timer(NodeId(n as u32))).is_ok(),
            None => false,
        }
    }

    /// The sequence number the next message sent will get.
    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The messages still in flight that were sent from sequence number `from` on,
    /// named as a step delivers them (for traces).
    pub(crate) fn sent_since(&self, from: u64) -> Vec<String> {
        self.net
            .iter()
            .filter(|e| e.seq >= from)
            .map(|e| format!("d{}", e.seq))
            .collect()
    }

    /// A one-line description of message `seq` (for traces).
    pub(crate) fn describe(&self, step: Step) -> String {
        let msg = |seq: u64| {
            self.net.iter().find(|e| e.seq == seq).map(|e| {
                let mut t = format!("{:?}", e.msg);
                if t.len() > 160 {
                    let cut = (0..=160).rev().find(|i| t.is_char_boundary(*i)).unwrap_or(0);
                    t.truncate(cut);
                    t.push_str("...");
                }
                format!("{} -> {}: {t}", e.from.0, e.to.0)
            })
        };
        match step {
            Step::Deliver(s) => format!("deliver {}", msg(s).unwrap_or_default()),
            Step::Drop(s) => format!("lose {}", msg(s).unwrap_or_default()),
            Step::Dup(s) => format!("duplicate {}", msg(s).unwrap_or_default()),
            Step::Timer(n) => match self.next_timer(n.0 as usize) {
                Some((id, t)) => format!(
                    "node {} timer {} fires at {:.3} s{}",
                    n.0,
                    id.0,
                    t.max(self.now) as f64 / 1e9,
                    if t > self.now && !self.net.is_empty() {
                        " (early: messages in flight)"
                    } else {
                        ""
                    }
                ),
                None => format!("node {} timer", n.0),
            },
            Step::Crash(n) => format!("crash server {}", n.0),
            Step::Restart(n) => format!("restart server {}", n.0),
        }
    }

    fn submit_next(&mut self, sh: &Shared<P>, c: usize) {
        let k = self.submitted[c] as usize;
        let Some(call) = sh.calls[c].get(k).cloned() else {
            return;
        };
        self.submitted[c] += 1;
        self.busy[c] = true;
        let txn = TxnId {
            client: c as u32,
            seq: self.submitted[c],
        };
        let node = NodeId(sh.servers + c as u32);
        self.dispatch(sh, node, move |a, cx| {
            if let Role::C(cl) = a {
                cl.submit(txn, call, cx)
            }
        });
    }

    /// Runs one input on `node` and carries out what it asked for.
    fn dispatch(&mut self, sh: &Shared<P>, node: NodeId, f: impl FnOnce(Role<'_, P>, &mut Ctx<'_, P::Msg>)) {
        let n = node.0 as usize;
        let mut out = vec![];
        let mut recs = vec![];
        {
            let mut cx = Ctx::new(self.now, node, &mut self.rngs[n], &mut out, &mut recs);
            let role = if n < sh.servers as usize {
                Role::S(Arc::make_mut(&mut self.servers[n]))
            } else {
                Role::C(Arc::make_mut(&mut self.clients[n - sh.servers as usize]))
            };
            f(role, &mut cx);
        }
        let mut orphans = vec![];
        for cmd in out {
            match cmd {
                Command::Send { to, msg, .. } => {
                    let t = to.0 as usize;
                    if t >= self.rngs.len() || (t < self.up.len() && !self.up[t]) {
                        continue; // no such node, or no connection to a crashed server
                    }
                    if n >= sh.servers as usize {
                        // The simulator's rule: a client sends only what
                        // `client_may_send` allows, about its own transactions.
                        let me = node.0 - sh.servers;
                        let ok = meridian_protocols::client_may_send_as(&sh.proto, &msg, me);
                        assert!(
                            ok,
                            "{}: client {me} sent {msg:?}, which client_may_send refuses",
                            sh.proto.name()
                        );
                    }
                    let hash = hash_of(&(node, to, format!("{msg:?}")));
                    self.net.push(Envelope {
                        seq: self.next_seq,
                        from: node,
                        to,
                        msg,
                        hash,
                    });
                    self.next_seq += 1;
                }
                Command::SetTimer { id, after } => {
                    self.timers[n].insert(id, self.now + after);
                }
                Command::CancelTimer { id } => {
                    self.timers[n].remove(&id);
                }
                // An interactive transaction waiting for its caller: there is none
                // here, so (as in the simulator) its script is ended with an abort.
                Command::AwaitInput { txn, .. } => orphans.push(txn),
                Command::Note { .. } => {}
            }
        }
        self.node_hash[n] = state_hash(sh, self, n);
        // A client whose transaction ended takes its next (once, however many records
        // the input produced: a retried attempt is recorded with the final one).
        let mut freed = None;
        for r in recs {
            let c = r.client.0 as usize;
            // The whole record: two paths that leave the same actors may still differ
            // in what their transactions read, which the history check judges.
            self.records_hash = hash_of(&(self.records_hash, format!("{r:?}")));
            Arc::make_mut(&mut self.records).push(r);
            if c < self.busy.len() && self.busy[c] {
                self.busy[c] = false;
                freed = Some(c);
            }
        }
        if let Some(c) = freed {
            self.submit_next(sh, c);
        }
        for txn in orphans {
            let args = meridian_txn::script::encode(&[meridian_txn::script::Op::Abort(
                "the script stopped for input and no caller is waiting".into(),
            )]);
            let f: Resume<'_, P> = Box::new(move |a, cx| {
                if let Role::C(c) = a {
                    c.extend(txn, args, cx)
                }
            });
            self.dispatch(sh, node, f);
        }
    }

    /// Every server's applied outcomes, and any split decision among them or against
    /// a client's acknowledged outcome.
    pub(crate) fn split_decision(&self) -> Option<String> {
        let mut seen: BTreeMap<TxnId, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
        for (i, s) in self.servers.iter().enumerate() {
            for (t, c) in s.outcomes().unwrap_or_default() {
                let e = seen.entry(t).or_default();
                if c {
                    e.0.push(i as u32);
                } else {
                    e.1.push(i as u32);
                }
            }
        }
        for (t, (c, a)) in &seen {
            if !c.is_empty() && !a.is_empty() {
                return Some(format!(
                    "split decision: {t:?} committed at servers {c:?} and aborted at servers {a:?}"
                ));
            }
        }
        for r in self.records.iter() {
            let Some((c, a)) = seen.get(&r.id) else { continue };
            match r.outcome {
                Outcome::Committed if !a.is_empty() => {
                    return Some(format!(
                        "{:?} acknowledged as committed to its client, but aborted at servers {a:?}",
                        r.id
                    ))
                }
                Outcome::Aborted if !c.is_empty() => {
                    return Some(format!(
                        "{:?} acknowledged as aborted to its client, but committed at servers {c:?}",
                        r.id
                    ))
                }
                _ => {}
            }
        }
        None
    }

    /// Keys still locked at live servers, if the protocol reports it.
    pub(crate) fn locked_keys(&self) -> usize {
        self.servers
            .iter()
            .zip(&self.up)
            .filter(|(_, up)| **up)
            .filter_map(|(s, _)| s.locked_keys())
            .sum()
    }

    /// Records of transactions still unanswered (for the history), as `Unknown`.
    pub(crate) fn in_flight_records(&self) -> Vec<TxnRecord> {
        self.clients
            .iter()
            .zip(&self.busy)
            .filter(|(_, b)| **b)
            .filter_map(|(c, _)| c.in_flight())
            .collect()
    }
}

/// An input to run on a node, boxed (one instantiation of `dispatch` for resumptions).
type Resume<'a, P> = Box<dyn FnOnce(Role<'_, P>, &mut Ctx<'_, <P as Protocol>::Msg>) + 'a>;

enum Role<'a, P: Protocol> {
    S(&'a mut P::Server),
    C(&'a mut P::Client),
}
