//! §III-D batching: items for one destination (a validator's host or a data node) are
//! packed into one network message of `batch` items. The paper does not say what
//! happens to a partial batch; here a flush timer (`flush=`, default 10 ms) armed when
//! the first item of an empty buffer arrives sends every partial batch when it fires,
//! so no item waits longer than `flush`. With `batch=1` every item leaves at once.

use super::server::ServerTimer;
use super::{Item, Msg};
use meridian_core::{Ctx, NodeId, Time};
use std::collections::BTreeMap;

/// Per-destination buffers of batched items.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Batcher {
    size: usize,
    flush: Time,
    queues: BTreeMap<NodeId, Vec<Item>>,
    armed: bool,
}

impl Batcher {
    /// Batches of `size` items, partial ones flushed after `flush`.
    pub(super) fn new(size: u32, flush: Time) -> Self {
        Batcher {
            size: size.max(1) as usize,
            flush,
            queues: BTreeMap::new(),
            armed: false,
        }
    }

    /// Queues `item` for `to`; sends the batch when it is full.
    pub(super) fn push(&mut self, to: NodeId, item: Item, cx: &mut Ctx<'_, Msg>) {
        let q = self.queues.entry(to).or_default();
        q.push(item);
        if q.len() >= self.size {
            let items = std::mem::take(q);
            cx.send(to, Msg::Batch(items));
        } else if !self.armed {
            self.armed = true;
            cx.set_timer(self.flush, ServerTimer::Flush);
        }
    }

    /// The flush timer fired: sends every partial batch.
    pub(super) fn flush(&mut self, cx: &mut Ctx<'_, Msg>) {
        self.armed = false;
        for (to, q) in self.queues.iter_mut() {
            if !q.is_empty() {
                cx.send(*to, Msg::Batch(std::mem::take(q)));
            }
        }
    }

    /// A crash loses the buffers (the items are volatile; queries recover).
    pub(super) fn clear(&mut self) {
        self.queues.clear();
        self.armed = false;
    }
}
