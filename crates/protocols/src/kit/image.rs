//! A server's image: its whole state as bytes, so that a runtime can checkpoint a
//! node and later rebuild it without replaying every input since it first started
//! (see [`crate::Protocol::image`]).
//!
//! An image holds everything the server would otherwise rebuild by replay, volatile
//! state included (locks held, transactions in flight, queued reads): the runtime
//! replays the inputs after the checkpoint on top of it, and those inputs were
//! handled by a server that had all of that state. What it leaves out is what every
//! server of a cluster shares and the runtime hands back: the [`Env`] (layout,
//! programs, timeouts) and a protocol's configuration. Such fields are
//! `#[serde(skip, default = "...")]` and filled from [`env()`] while [`decode`] runs.
//!
//! The simulator's `image_every` option round-trips every server through its image
//! every so many events: the `images_change_nothing` tests hold each protocol to an
//! identical run, so a field an image forgets (or restores wrongly) fails them.

use crate::Env;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cell::RefCell;

thread_local! {
    static ENV: RefCell<Option<Env>> = const { RefCell::new(None) };
}

/// Encodes a server's state.
pub fn encode<T: Serialize>(t: &T) -> Vec<u8> {
    postcard::to_stdvec(t).expect("server state serializes")
}

/// Decodes a server's state, with `env` standing in for the fields an image skips.
pub fn decode<T: DeserializeOwned>(env: &Env, bytes: &[u8]) -> Result<T, String> {
    struct Reset(Option<Env>);
    impl Drop for Reset {
        fn drop(&mut self) {
            ENV.with(|e| *e.borrow_mut() = self.0.take());
        }
    }
    let _reset = Reset(ENV.with(|e| e.borrow_mut().replace(env.clone())));
    postcard::from_bytes(bytes).map_err(|e| format!("unreadable server image: {e}"))
}

/// The environment of the image [`decode`] is reading (the `default` of a skipped
/// `env` field).
///
/// # Panics
///
/// Outside [`decode`]: only a server type's `Deserialize` may call it.
pub fn env() -> Env {
    ENV.with(|e| e.borrow().clone())
        .expect("kit::image::env is read only while kit::image::decode runs")
}

/// [`crate::Protocol::image`] and [`crate::Protocol::restore`] for a protocol whose
/// server state is serde (every field, or skipped as the module docs say).
macro_rules! serde_image {
    () => {
        fn image(&self, s: &Self::Server) -> Option<Vec<u8>> {
            Some($crate::kit::image::encode(s))
        }
        fn has_image(&self) -> bool {
            true
        }
        fn restore(
            &self,
            env: &$crate::Env,
            _node: meridian_core::NodeId,
            image: &[u8],
        ) -> Result<Self::Server, String> {
            $crate::kit::image::decode(env, image)
        }
    };
}
pub(crate) use serde_image;
