//! The server frame most protocols share: a periodic sweep, messages handed to the
//! room's `receive`, and a crash that keeps only what the protocol names as durable.
//!
//! What a crash keeps and what a restart does (replay a log, raise a watermark, ask
//! peers) is each paper's own; the frame writes only the wiring that is the same
//! everywhere, and a server's `on_crash` and `on_recover` stay in its room, passed to
//! `server_frame!` as items.

/// The [`meridian_core::Actor`] impl of a protocol's `Server` whose timers are the enum
/// `$timer` (declared with [`crate::kit::timers::timers!`]) with a `Sweep`:
///
/// - `on_message` hands every message to the server's `receive(from, msg, cx)`;
/// - the sweep runs every `env.timeouts.sweep`: `self.sweep(cx)`, then re-armed;
/// - `server_frame!($timer; items)`: `on_start` arms the sweep, and nothing else;
/// - `server_frame!($timer, start; items)`: `on_start` is the server's own
///   `start(cx)`, which arms the sweep itself where its order of effects wants it;
/// - `server_frame!($timer, tick; items)`: as the first form, and the role's other
///   timers go to its `on_tick(t: $timer, cx)`;
/// - the items after the `;` are the impl's other methods: `on_crash` (what survives,
///   usually through `keep_only!`) and `on_recover` (the restart rule).
macro_rules! server_frame {
    (@start $timer:ident start) => {
        fn on_start(&mut self, cx: &mut meridian_core::Ctx<'_, Msg>) {
            self.start(cx);
        }
    };
    (@start $timer:ident $($form:ident)?) => {
        fn on_start(&mut self, cx: &mut meridian_core::Ctx<'_, Msg>) {
            cx.set_timer(self.env.timeouts.sweep, $timer::Sweep);
        }
    };
    (@timer $timer:ident tick) => {
        fn on_timer(&mut self, t: meridian_core::TimerId, cx: &mut meridian_core::Ctx<'_, Msg>) {
            $crate::kit::server::tick(&mut self.store, &self.env, cx.now());
            match $timer::of(t) {
                Some($timer::Sweep) => {
                    self.sweep(cx);
                    cx.set_timer(self.env.timeouts.sweep, $timer::Sweep);
                }
                Some(t) => self.on_tick(t, cx),
                None => {}
            }
        }
    };
    (@timer $timer:ident $($form:ident)?) => {
        fn on_timer(&mut self, t: meridian_core::TimerId, cx: &mut meridian_core::Ctx<'_, Msg>) {
            $crate::kit::server::tick(&mut self.store, &self.env, cx.now());
            if $timer::of(t) == Some($timer::Sweep) {
                self.sweep(cx);
                cx.set_timer(self.env.timeouts.sweep, $timer::Sweep);
            }
        }
    };
    ($timer:ident $(, $form:ident)?; $($extra:item)*) => {
        impl meridian_core::Actor for Server {
            type Msg = Msg;

            fn on_message(&mut self, from: meridian_core::NodeId, msg: Msg, cx: &mut meridian_core::Ctx<'_, Msg>) {
                $crate::kit::server::tick(&mut self.store, &self.env, cx.now());
                self.receive(from, msg, cx);
            }

            $crate::kit::server::server_frame!(@start $timer $($form)?);
            $crate::kit::server::server_frame!(@timer $timer $($form)?);
            $($extra)*
        }
    };
}
pub(crate) use server_frame;

/// Sets the store's clock for version GC (`MvStore::tick`), where the deployment
/// collects (a TTL other than "never"): every input a server handles does, so each
/// version carries the time it was installed.
pub fn tick(store: &mut meridian_storage::MvStore, env: &crate::Env, now: meridian_core::Time) {
    if env.retention.ttl != u64::MAX {
        store.tick(now, &env.retention);
    }
}

/// One version GC pass where one is due (`MvStore::collect`), from the sweep of a
/// server whose protocol reads only the newest committed version of a key (the
/// collecting protocols: docs/CLUSTER.md, "Version GC").
pub fn collect(store: &mut meridian_storage::MvStore, env: &crate::Env) {
    store.collect(&env.retention);
}

/// A crash: `$server` starts over as `$fresh` (a server built anew) but for the fields
/// named, which it keeps as they were (its disk, and anything else the protocol says
/// survives). `keep_only!(self = Server::new(env, me); log, store)`.
macro_rules! keep_only {
    ($server:ident = $fresh:expr; $($field:ident),+ $(,)?) => {{
        let fresh = $fresh;
        let old = std::mem::replace($server, fresh);
        $($server.$field = old.$field;)+
    }};
}
pub(crate) use keep_only;

/// Declares the role's `Server` struct with the `env` field the frame reads (the
/// cluster's environment, first and outside every image: see [`crate::kit::image`]),
/// ahead of the role's own fields, and derives `Debug` and serde for its image. The
/// role's fields keep their order, which is the image's.
macro_rules! server_struct {
    (
        $(#[$attr:meta])*
        pub struct Server {
            $($(#[$fattr:meta])* $vis:vis $field:ident : $ty:ty),* $(,)?
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
        pub struct Server {
            /// The cluster's environment: not in an image (see [`crate::kit::image`]).
            #[serde(skip, default = "crate::kit::image::env")]
            pub(super) env: $crate::Env,
            $($(#[$fattr])* $vis $field: $ty,)*
        }
    };
}
pub(crate) use server_struct;

crate::kit::timers::timers! {
    /// The timers of a server whose only timer is the frame's sweep.
    pub(crate) enum SweepTimer {
        Sweep = 1,
    }
}

/// The records a server's log holds before its first compaction, and the fewest it
/// may hold before any later one.
pub(crate) const COMPACT_AT: usize = 1024;

/// When a server with a log compacts it (a checkpoint of what the log must still
/// replay): at [`COMPACT_AT`] records, then once the log has doubled since the last
/// compaction. Amortized: what a checkpoint keeps (prepared transactions, decisions
/// still being delivered) can be most of the log, and a fixed threshold would rescan
/// it every sweep.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Compaction {
    at: usize,
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction { at: COMPACT_AT }
    }
}

impl Compaction {
    /// Whether a log of `len` records is due for compaction.
    pub(crate) fn due(&self, len: usize) -> bool {
        len >= self.at
    }

    /// A compaction left `len` records: the next is due when they have doubled.
    pub(crate) fn done(&mut self, len: usize) {
        self.at = (2 * len).max(COMPACT_AT);
    }
}
