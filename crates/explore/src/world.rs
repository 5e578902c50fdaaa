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
use std::fmt;
use std::hash::{Hash, Hasher};

/// Faults the explorer may inject along one path, each at most this many times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Budget {
    /// Server crashes (each crashed server may be restarted at any later step, and is
    /// restarted at the end).
    pub crash: u32,
    /// Messages lost.
    pub drop: u32,
    /// Messages duplicated (the copy may be delivered at any later step).
    pub dup: u32,
    /// Timers that fire while messages are in flight and before the clock has reached
    /// their deadline: a node timing out on messages that are merely slow. A timer
    /// that is due, or the earliest timer of a quiet network, fires for free.
    pub timeouts: u32,
    /// Messages delivered while an older message is still in flight ([`ANY`]: no
    /// bound, every order). A small bound is delay-bounded search (Emmi, Qadeer and
    /// Rakamarić, POPL 2011): few reorderings reach most bugs, at a fraction of the
    /// states.
    pub reorder: u32,
}

/// The most virtual time one timer step spans (a quiet network's timers, or one
/// node's early ones, fired until one acts).
const MACRO_SPAN: Time = 30_000_000_000;

/// No bound on reorderings.
pub const ANY: u32 = u32::MAX;

impl Default for Budget {
    fn default() -> Self {
        Budget {
            crash: 0,
            drop: 0,
            dup: 0,
            timeouts: 0,
            reorder: ANY,
        }
    }
}

impl Budget {
    /// Parses `crash=1,drop=2,dup=1,timeouts=1,reorder=2` (omitted kinds are 0, but
    /// reorderings are unbounded unless given; `none`: no faults).
    pub fn parse(s: &str) -> Result<Budget, String> {
        let mut b = Budget::default();
        let s = s.trim();
        if s.is_empty() || s == "none" {
            return Ok(b);
        }
        for part in s.split(',') {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("--faults: `{part}` is not KIND=N (kinds: {KINDS})"))?;
            let n: u32 = match v.trim() {
                "any" if k.trim() == "reorder" => ANY,
                v => v
                    .parse()
                    .ok()
                    .filter(|n| *n < ANY)
                    .ok_or_else(|| format!("--faults: `{v}` in `{part}` is not a count"))?,
            };
            match k.trim() {
                "crash" | "crashes" => b.crash = n,
                "drop" | "drops" => b.drop = n,
                "dup" | "dups" => b.dup = n,
                "timeouts" | "timeout" => b.timeouts = n,
                "reorder" | "reorders" => b.reorder = n,
                other => return Err(format!("--faults: unknown fault kind `{other}` (kinds: {KINDS})")),
            }
        }
        Ok(b)
    }
}

const KINDS: &str = "crash, drop, dup, timeouts, reorder";

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "crash={},drop={},dup={},timeouts={},reorder=",
            self.crash, self.drop, self.dup, self.timeouts
        )?;
        match self.reorder {
            ANY => write!(f, "any"),
            n => write!(f, "{n}"),
        }
    }
}

/// One step out of a state. Messages are named by the sequence number the explorer
/// gave them when they were sent (the same on every replay of a path).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// Deliver message `n`.
    Deliver(u64),
    /// Fire the node's earliest armed timer.
    Timer(NodeId),
    /// Crash the server.
    Crash(NodeId),
    /// Restart the crashed server (its protocol's recovery).
    Restart(NodeId),
    /// Lose message `n`.
    Drop(u64),
    /// Duplicate message `n`.
    Dup(u64),
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Deliver(n) => write!(f, "d{n}"),
            Step::Timer(n) => write!(f, "t{}", n.0),
            Step::Crash(n) => write!(f, "x{}", n.0),
            Step::Restart(n) => write!(f, "r{}", n.0),
            Step::Drop(n) => write!(f, "l{n}"),
            Step::Dup(n) => write!(f, "u{n}"),
        }
    }
}

impl std::str::FromStr for Step {
    type Err = String;
    fn from_str(s: &str) -> Result<Step, String> {
        let s = s.trim();
        let bad = || {
            format!(
                "`{s}` is not a step (d<msg> deliver, t<node> timer, x<node> crash, r<node> restart, l<msg> lose, u<msg> duplicate)"
            )
        };
        let (k, n) = s.split_at(s.char_indices().nth(1).map(|(i, _)| i).ok_or_else(bad)?);
        let n: u64 = n.parse().map_err(|_| bad())?;
        let node = || u32::try_from(n).map(NodeId).map_err(|_| bad());
        Ok(match k {
            "d" => Step::Deliver(n),
            "t" => Step::Timer(node()?),
            "x" => Step::Crash(node()?),
            "r" => Step::Restart(node()?),
            "l" => Step::Drop(n),
            "u" => Step::Dup(n),
            _ => return Err(bad()),
        })
    }
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
    /// The transactions each client runs, in order.
    pub(crate) calls: Vec<Vec<Call>>,
    pub(crate) servers: u32,
}

/// One global state.
#[derive(Clone)]
pub(crate) struct World<P: Protocol> {
    pub(crate) servers: Vec<P::Server>,
    pub(crate) clients: Vec<P::Client>,
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
    pub(crate) records: Vec<TxnRecord>,
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
}

fn hash_of(x: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    x.hash(&mut h);
    h.finish()
}

/// Actor state as text or bytes, hashed.
fn state_hash<P: Protocol>(sh: &Shared<P>, w: &World<P>, node: usize) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{:?}", w.rngs[node]).hash(&mut h);
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
            servers,
            clients,
            rngs,
            timers: vec![BTreeMap::new(); nodes],
            net: vec![],
            next_seq: 0,
            now: 0,
            records: vec![],
            submitted: vec![0; nc],
            busy: vec![false; nc],
            left,
            clock_steps,
            node_hash: vec![0; nodes],
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
        let mut msgs: Vec<u64> = self.net.iter().map(|e| e.hash).collect();
        msgs.sort_unstable();
        msgs.hash(&mut h);
        for r in &self.records {
            (r.id, r.outcome as u8).hash(&mut h);
        }
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
        self.servers[n].on_crash();
        self.node_hash[n] = state_hash(sh, self, n);
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
                Role::S(&mut self.servers[n])
            } else {
                Role::C(&mut self.clients[n - sh.servers as usize])
            };
            f(role, &mut cx);
        }
        for cmd in out {
            match cmd {
                Command::Send { to, msg, .. } => {
                    let t = to.0 as usize;
                    if t < self.up.len() && !self.up[t] {
                        continue; // no connection to a crashed server
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
                Command::Note { .. } | Command::AwaitInput { .. } => {}
            }
        }
        self.node_hash[n] = state_hash(sh, self, n);
        // A client whose transaction ended takes its next (once, however many records
        // the input produced: a retried attempt is recorded with the final one).
        let mut freed = None;
        for r in recs {
            let c = r.client.0 as usize;
            self.records.push(r);
            if c < self.busy.len() && self.busy[c] {
                self.busy[c] = false;
                freed = Some(c);
            }
        }
        if let Some(c) = freed {
            self.submit_next(sh, c);
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
        for r in &self.records {
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

enum Role<'a, P: Protocol> {
    S(&'a mut P::Server),
    C(&'a mut P::Client),
}
