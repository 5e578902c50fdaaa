//! Helpers for driving actors by hand in unit tests.

use meridian_core::{rng_for, Actor, Command, Ctx, NodeId, Time, TimerId, TxnRecord, Work};

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
pub fn fire<A: Actor>(a: &mut A, now: Time, me: NodeId, t: TimerId) -> Effects<A::Msg> {
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

/// A hand-driven network of server actors for protocol-level tests: the test decides
/// what is delivered, dropped, and when nodes crash. Messages to nodes outside
/// `nodes` (clients) are collected in `outside`.
pub struct Net<A: Actor> {
    /// The servers, indexed by node id.
    pub nodes: Vec<A>,
    /// Current time.
    pub now: Time,
    q: std::collections::VecDeque<(NodeId, NodeId, A::Msg)>,
    /// Messages sent to nodes that are not servers, in order.
    pub outside: Vec<(NodeId, NodeId, A::Msg)>,
    /// Crashed servers (they receive nothing and their timers do not fire).
    pub down: std::collections::BTreeSet<NodeId>,
}

impl<A: Actor> Net<A> {
    /// Starts every server at time 0.
    pub fn new(mut nodes: Vec<A>) -> Self {
        let mut q = std::collections::VecDeque::new();
        for (i, a) in nodes.iter_mut().enumerate() {
            let me = NodeId(i as u32);
            let e = call(a, 0, me, |a, cx| a.on_start(cx));
            q.extend(e.into_sends(me));
        }
        let mut net = Net {
            nodes,
            now: 0,
            q,
            outside: vec![],
            down: Default::default(),
        };
        net.pump();
        net
    }
    /// Sends `m` from `from` to `to` and delivers everything it causes.
    pub fn send(&mut self, from: NodeId, to: NodeId, m: A::Msg) {
        self.q.push_back((from, to, m));
        self.pump();
    }
    /// Delivers queued messages until none is left.
    pub fn pump(&mut self) {
        while let Some((from, to, m)) = self.q.pop_front() {
            if to.0 as usize >= self.nodes.len() {
                self.outside.push((from, to, m));
                continue;
            }
            if self.down.contains(&to) {
                continue;
            }
            let e = deliver(&mut self.nodes[to.0 as usize], self.now, to, from, m);
            self.q.extend(e.into_sends(to));
        }
    }
    /// Advances time by `d` in steps of `step`, firing timer `t` on every live server
    /// at each step (a periodic housekeeping timer).
    pub fn run_for(&mut self, d: Time, step: Time, t: TimerId) {
        let end = self.now + d;
        while self.now < end {
            self.now += step;
            for i in 0..self.nodes.len() {
                let me = NodeId(i as u32);
                if self.down.contains(&me) {
                    continue;
                }
                let e = fire(&mut self.nodes[i], self.now, me, t);
                self.q.extend(e.into_sends(me));
            }
            self.pump();
        }
    }
    /// Crashes server `n` (its volatile state goes).
    pub fn crash(&mut self, n: NodeId) {
        self.down.insert(n);
        self.nodes[n.0 as usize].on_crash();
    }
    /// Restarts server `n` from what survived its crash.
    pub fn restart(&mut self, n: NodeId) {
        self.down.remove(&n);
        let e = call(&mut self.nodes[n.0 as usize], self.now, n, |a, cx| a.on_recover(cx));
        self.q.extend(e.into_sends(n));
        self.pump();
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
