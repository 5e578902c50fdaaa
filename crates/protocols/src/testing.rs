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
