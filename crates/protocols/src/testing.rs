//! Helpers for driving actors by hand in unit tests.

use crate::{ClientRole, Env, Protocol, Replica};
use meridian_core::{rng_for, Actor, Command, Ctx, Key, Layout, NodeId, Time, TimerId, TxnId, TxnRecord, Work};
use meridian_txn::Call;
use std::collections::{BTreeSet, VecDeque};

/// Everything one call produced.
#[derive(Debug)]
pub struct Effects<M> {
    /// Commands in order.
    pub commands: Vec<Command<M>>,
    /// Records.
    pub records: Vec<TxnRecord>,
    /// Work charged.
    pub work: Work,
}

impl<M> Effects<M> {
    /// The messages sent, in order.
    pub fn sent(&self) -> Vec<(NodeId, &M)> {
        self.commands
            .iter()
            .filter_map(|c| match c {
                Command::Send { to, msg, .. } => Some((*to, msg)),
                _ => None,
            })
            .collect()
    }
}

fn with_ctx<A: Actor>(
    a: &mut A,
    now: Time,
    me: NodeId,
    f: impl FnOnce(&mut A, &mut Ctx<'_, A::Msg>),
) -> Effects<A::Msg> {
    let mut rng = rng_for(0, me.0 as u64);
    let (mut commands, mut records) = (vec![], vec![]);
    let work = {
        let mut cx = Ctx::new(now, me, &mut rng, &mut commands, &mut records);
        f(a, &mut cx);
        cx.work()
    };
    Effects {
        commands,
        records,
        work,
    }
}

/// Delivers one message to `a` running as `me` at time `now`.
pub fn deliver<A: Actor>(a: &mut A, now: Time, me: NodeId, from: NodeId, msg: A::Msg) -> Effects<A::Msg> {
    with_ctx(a, now, me, |a, cx| a.on_message(from, msg, cx))
}

/// Fires a timer.
pub fn fire<A: Actor>(a: &mut A, now: Time, me: NodeId, t: impl Into<TimerId>) -> Effects<A::Msg> {
    let t = t.into();
    with_ctx(a, now, me, |a, cx| a.on_timer(t, cx))
}

/// Runs an arbitrary call with a context (e.g. `submit` or `on_recover`).
pub fn call<A: Actor>(
    a: &mut A,
    now: Time,
    me: NodeId,
    f: impl FnOnce(&mut A, &mut Ctx<'_, A::Msg>),
) -> Effects<A::Msg> {
    with_ctx(a, now, me, f)
}

/// Picks messages in flight (from, to, message).
pub type Filter<M> = Box<dyn FnMut(NodeId, NodeId, &M) -> bool>;
/// Picks messages a node receives.
pub type Pred<M> = Box<dyn Fn(&M) -> bool>;

/// A hand-driven network of one protocol's actors for protocol-level tests: the test
/// decides what is delivered, dropped, duplicated or reordered, and when nodes crash,
/// so a paper's failure case can be staged exactly.
///
/// Servers are nodes `0..servers.len()`. Clients, if any, all run on `client_node`;
/// `route` picks which of them a message is for. Messages to any other node (a client
/// the test plays by hand) are collected in `outside`. Timers are not scheduled: a
/// test advances time with [`Net::run_for`], which fires the periodic timers it names.
pub struct Net<P: Protocol> {
    /// The servers, indexed by node id.
    pub servers: Vec<P::Server>,
    /// Client actors, all on `client_node`.
    pub clients: Vec<P::Client>,
    /// The node the client actors run on.
    pub client_node: Option<NodeId>,
    /// Which client a message to `client_node` is for (index into `clients`).
    pub route: fn(&P::Msg) -> usize,
    /// Current time.
    pub now: Time,
    /// Messages in flight, delivered front first (tests may reorder them).
    pub q: VecDeque<(NodeId, NodeId, P::Msg)>,
    /// Messages sent to nodes without an actor here, in order.
    pub outside: Vec<(NodeId, NodeId, P::Msg)>,
    /// Crashed nodes: they receive nothing and their timers do not fire.
    pub down: BTreeSet<NodeId>,
    /// Whether a crashed node's messages still in flight are lost too (by default they
    /// are delivered, as on a real network).
    pub drop_from_down: bool,
    /// Links that lose every message (from, to): a cut, one direction per entry.
    pub cut: BTreeSet<(NodeId, NodeId)>,
    /// Drops the first message matching, once.
    pub drop_once: Option<Filter<P::Msg>>,
    /// Delivers the first message matching twice, once.
    pub duplicate_once: Option<Filter<P::Msg>>,
    /// Crashes a node right after it handles a matching message.
    pub crash_after: Option<(NodeId, Pred<P::Msg>)>,
    /// Crashes a node when a matching message arrives, before it handles it.
    pub crash_before: Option<(NodeId, Pred<P::Msg>)>,
    /// Transactions the clients recorded, in order.
    pub records: Vec<TxnRecord>,
    /// Messages delivered so far (to servers, clients, or collected in `outside`).
    pub delivered: u64,
}

impl<P: Protocol> Net<P> {
    /// Starts every server at time 0 and delivers what that sends.
    pub fn new(servers: Vec<P::Server>) -> Self {
        let mut net = Net {
            servers,
            clients: vec![],
            client_node: None,
            route: |_| 0,
            now: 0,
            q: VecDeque::new(),
            outside: vec![],
            down: BTreeSet::new(),
            drop_from_down: false,
            cut: BTreeSet::new(),
            drop_once: None,
            duplicate_once: None,
            crash_after: None,
            crash_before: None,
            records: vec![],
            delivered: 0,
        };
        for i in 0..net.servers.len() {
            let me = NodeId(i as u32);
            let e = call(&mut net.servers[i], 0, me, |a: &mut P::Server, cx| a.on_start(cx));
            net.q.extend(e.into_sends(me));
        }
        net.pump();
        net
    }

    /// Adds client actors on `node`, `route` telling which one a message is for.
    pub fn with_clients(mut self, node: NodeId, clients: Vec<P::Client>, route: fn(&P::Msg) -> usize) -> Self {
        self.client_node = Some(node);
        self.clients = clients;
        self.route = route;
        self
    }

    /// Sends `m` from `from` to `to` and delivers everything it causes.
    pub fn send(&mut self, from: NodeId, to: NodeId, m: P::Msg) {
        self.q.push_back((from, to, m));
        self.pump();
    }

    /// Submits a transaction at client `c` and delivers everything it causes.
    pub fn submit(&mut self, c: usize, txn: TxnId, program: Call) {
        let me = self.client_node.expect("a net with clients");
        let e = call(&mut self.clients[c], self.now, me, |cl, cx| cl.submit(txn, program, cx));
        self.absorb(me, e);
        self.pump();
    }

    fn absorb(&mut self, from: NodeId, e: Effects<P::Msg>) {
        self.records.extend(e.records.iter().cloned());
        self.q.extend(e.into_sends(from));
    }

    /// Delivers queued messages until none is left.
    pub fn pump(&mut self) {
        while let Some((from, to, m)) = self.q.pop_front() {
            if let Some(f) = self.duplicate_once.as_mut() {
                if f(from, to, &m) {
                    self.duplicate_once = None;
                    self.q.push_front((from, to, m.clone()));
                }
            }
            if let Some(f) = self.drop_once.as_mut() {
                if f(from, to, &m) {
                    self.drop_once = None;
                    continue;
                }
            }
            if self.down.contains(&to)
                || (self.drop_from_down && self.down.contains(&from))
                || self.cut.contains(&(from, to))
            {
                continue;
            }
            if self.crash_before.as_ref().is_some_and(|(n, f)| *n == to && f(&m)) {
                self.crash_before = None;
                self.crash(to);
                continue;
            }
            self.delivered += 1;
            let crash = self.crash_after.as_ref().is_some_and(|(n, f)| *n == to && f(&m));
            let e = if (to.0 as usize) < self.servers.len() {
                deliver(&mut self.servers[to.0 as usize], self.now, to, from, m)
            } else if Some(to) == self.client_node && !self.clients.is_empty() {
                let c = (self.route)(&m);
                deliver(&mut self.clients[c], self.now, to, from, m)
            } else {
                self.outside.push((from, to, m));
                continue;
            };
            self.absorb(to, e);
            if crash {
                self.crash_after = None;
                self.crash(to);
            }
        }
    }

    /// Advances time by `d` in steps of `step`, firing timer `t` on every live server
    /// at each step (a periodic housekeeping timer), and delivering what that causes.
    pub fn run_for(&mut self, d: Time, step: Time, t: impl Into<TimerId>) {
        self.run_for_with_clients::<TimerId>(d, step, t.into(), None);
    }

    /// [`Net::run_for`], also firing client timer `c.0` on every client each `c.1`.
    pub fn run_for_with_clients<C: Into<TimerId>>(
        &mut self,
        d: Time,
        step: Time,
        t: impl Into<TimerId>,
        c: Option<(C, Time)>,
    ) {
        let (t, c) = (t.into(), c.map(|(ct, every)| (ct.into(), every)));
        let end = self.now + d;
        while self.now < end {
            self.now += step;
            for i in 0..self.servers.len() {
                let me = NodeId(i as u32);
                if self.down.contains(&me) {
                    continue;
                }
                let e = fire(&mut self.servers[i], self.now, me, t);
                self.absorb(me, e);
            }
            if let (Some((ct, every)), Some(me)) = (c, self.client_node) {
                if self.now.is_multiple_of(every) {
                    for i in 0..self.clients.len() {
                        let e = fire(&mut self.clients[i], self.now, me, ct);
                        self.absorb(me, e);
                    }
                }
            }
            self.pump();
        }
    }

    /// Cuts the links between `a` and `b`, both ways (`heal` joins them again).
    pub fn cut_between(&mut self, a: NodeId, b: NodeId) {
        self.cut.insert((a, b));
        self.cut.insert((b, a));
    }

    /// Joins every cut link again.
    pub fn heal(&mut self) {
        self.cut.clear();
    }

    /// Crashes server `n` (its volatile state goes).
    pub fn crash(&mut self, n: NodeId) {
        self.down.insert(n);
        self.servers[n.0 as usize].on_crash();
    }

    /// Restarts server `n` from what survived its crash.
    pub fn restart(&mut self, n: NodeId) {
        self.down.remove(&n);
        let e = call(&mut self.servers[n.0 as usize], self.now, n, |a, cx| a.on_recover(cx));
        self.absorb(n, e);
        self.pump();
    }

    /// Which replicas of `key`'s shard (in `layout`'s order) hold `txn`'s version of it.
    pub fn holders(&self, layout: &Layout, key: &str, txn: TxnId) -> Vec<bool> {
        let k = Key::from(key);
        layout
            .replicas(layout.shard_of(&k))
            .iter()
            .map(|n| {
                self.servers[n.0 as usize]
                    .snapshot()
                    .keys
                    .get(&k)
                    .is_some_and(|s| s.versions.iter().any(|v| v.txn == txn))
            })
            .collect()
    }

    /// Moves the first message in flight that matches to the back of the queue (it is
    /// then delivered after everything sent so far); false if none matched.
    pub fn delay_first(&mut self, mut f: impl FnMut(NodeId, NodeId, &P::Msg) -> bool) -> bool {
        match self.q.iter().position(|(a, b, m)| f(*a, *b, m)) {
            Some(i) => {
                let m = self.q.remove(i).expect("in range");
                self.q.push_back(m);
                true
            }
            None => false,
        }
    }
}

impl<M> Effects<M> {
    fn into_sends(self, from: NodeId) -> impl Iterator<Item = (NodeId, NodeId, M)> {
        self.commands.into_iter().filter_map(move |c| match c {
            Command::Send { to, msg, .. } => Some((from, to, msg)),
            _ => None,
        })
    }
}

/// A registry with one program, the YCSB workload's `ycsb` ([`meridian_txn::ycsb`]): arguments `n`, then `n`
/// pairs of a key and bytes, empty bytes reading the key and other bytes writing them.
pub fn ycsb_registry() -> meridian_txn::Registry {
    let mut r = meridian_txn::Registry::new();
    r.register(std::sync::Arc::new(meridian_txn::ycsb::Ycsb));
    r
}

/// The environment of a test cluster on `layout` that runs [`ycsb_registry`]'s program
/// under the default timeouts.
pub fn ycsb_env(layout: std::sync::Arc<Layout>) -> Env {
    Env {
        layout,
        registry: std::sync::Arc::new(ycsb_registry()),
        timeouts: Default::default(),
        retention: Default::default(),
    }
}

/// A `ycsb` call of [`ycsb_registry`]: each (key, bytes) reads the key if `bytes` is
/// empty and writes them otherwise.
pub fn ycsb_call(ops: &[(&str, &[u8])]) -> Call {
    use meridian_core::Key;
    use meridian_txn::Arg;
    let mut args = vec![Arg::U64(ops.len() as u64)];
    for (k, b) in ops {
        args.push(Arg::Key(Key::from(*k)));
        args.push(Arg::Bytes(b.to_vec()));
    }
    Call {
        program: "ycsb".into(),
        args,
    }
}
