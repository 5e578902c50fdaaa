//! The simulator's events and its event queue (a calendar of time buckets).

use super::*;

/// What a node is handling.
pub(crate) enum Input<M> {
    Msg { from: NodeId, msg: M },
    Timer { id: TimerId, gen: u64 },
}

pub(crate) enum Ev<M> {
    /// A message or timer reaches a node (it may have to wait in the inbox).
    Arrive {
        node: NodeId,
        input: Input<M>,
        hops: u32,
        inc: u32,
    },
    /// A node finished its current input and can take the next from its inbox.
    Free { node: NodeId, inc: u32 },
    /// A closed-loop client starts its next transaction.
    Submit { client: u32 },
    /// An open-loop arrival.
    Arrival,
    /// A fault strikes.
    Fault(Fault),
    /// A crashed server restarts.
    Restart { node: NodeId, inc: u32 },
    /// A partition heals.
    Heal { a: DcId, b: DcId },
}

/// A queued event's key: (time, push sequence number, slab slot).
pub(crate) type QKey = (Time, u64, u32);

/// The event queue: a calendar of time buckets holding small (time, seq, slot) keys,
/// with the events themselves in a slab, so the queue moves 24 bytes, not whole
/// messages. The order is exactly one heap's, (time, push order).
///
/// Time is cut into buckets 2^`BUCKET_BITS` ns wide. The current bucket is two sorted
/// sources popped by merge: `now` (the events already queued when the clock reached
/// the bucket, sorted once, earliest last) and `heap` (events pushed into the current
/// bucket since, usually a handful: CPU completions, intra-DC messages). The next
/// `RING` − 1 buckets are a ring of unsorted vectors, a push into one is a vector
/// push; later buckets wait unsorted in `far`. A run with thousands of clients holds
/// hundreds of thousands of pending timeouts, most of them re-armed since and due
/// seconds ahead: kept in one heap, every pop walked a heap of megabytes (a cache miss
/// per level), and a map of buckets cost a tree search per push.
pub(crate) struct Queue<M> {
    /// The current bucket's events queued before it became current, latest first.
    now: Vec<QKey>,
    /// Events pushed into the current bucket since it became current.
    heap: BinaryHeap<Reverse<QKey>>,
    /// Index of the current bucket (time >> BUCKET_BITS).
    bucket: u64,
    /// `ring[b % RING]` holds the events of bucket `b`, for `bucket < b < bucket + RING`.
    ring: Vec<Vec<QKey>>,
    /// Events in `ring`.
    in_ring: usize,
    /// Buckets at or after `bucket + RING` (when they were pushed).
    far: BTreeMap<u64, Vec<QKey>>,
    /// First key of `far` (u64::MAX when empty).
    far_first: u64,
    /// Emptied vectors, reused.
    spare: Vec<Vec<QKey>>,
    slab: Vec<Option<Ev<M>>>,
    free: Vec<u32>,
    seq: u64,
}

/// Width of one bucket of the event queue: 2^20 ns, about 1 ms.
const BUCKET_BITS: u32 = 20;
/// Buckets in the ring: 4096 of 1 ms, about 4.3 s ahead.
const RING: u64 = 1 << 12;

impl<M> Queue<M> {
    pub(crate) fn new() -> Self {
        Queue {
            now: Vec::new(),
            heap: BinaryHeap::new(),
            bucket: 0,
            ring: (0..RING).map(|_| Vec::new()).collect(),
            in_ring: 0,
            far: BTreeMap::new(),
            far_first: u64::MAX,
            spare: Vec::new(),
            slab: Vec::new(),
            free: Vec::new(),
            seq: 0,
        }
    }

    pub(crate) fn push(&mut self, at: Time, ev: Ev<M>) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(ev);
                i
            }
            None => {
                self.slab.push(Some(ev));
                self.slab.len() as u32 - 1
            }
        };
        let key = (at, self.seq, slot);
        let b = at >> BUCKET_BITS;
        if b <= self.bucket {
            self.heap.push(Reverse(key));
        } else if b - self.bucket < RING {
            let v = &mut self.ring[(b % RING) as usize];
            if v.capacity() == 0 {
                if let Some(s) = self.spare.pop() {
                    *v = s;
                }
            }
            v.push(key);
            self.in_ring += 1;
        } else {
            let spare = &mut self.spare;
            self.far
                .entry(b)
                .or_insert_with(|| spare.pop().unwrap_or_default())
                .push(key);
            self.far_first = self.far_first.min(b);
        }
    }

    pub(crate) fn pop(&mut self) -> Option<(Time, Ev<M>)> {
        let (at, _, slot) = loop {
            match (self.now.last(), self.heap.peek()) {
                (Some(a), Some(Reverse(h))) => {
                    if a < h {
                        break self.now.pop().expect("non-empty");
                    }
                    break self.heap.pop().expect("non-empty").0;
                }
                (Some(_), None) => break self.now.pop().expect("non-empty"),
                (None, Some(_)) => break self.heap.pop().expect("non-empty").0,
                (None, None) => self.advance()?,
            }
        };
        let ev = self.slab[slot as usize].take().expect("queued event present");
        self.free.push(slot);
        Some((at, ev))
    }

    /// The current bucket is spent: makes the next bucket holding events current.
    fn advance(&mut self) -> Option<()> {
        let mut keys = if self.in_ring == 0 {
            // Nothing in the ring: jump to the first far bucket.
            let (b, keys) = self.far.pop_first()?;
            self.bucket = b;
            keys
        } else {
            loop {
                self.bucket += 1;
                let v = &mut self.ring[(self.bucket % RING) as usize];
                if !v.is_empty() || self.bucket == self.far_first {
                    self.in_ring -= v.len();
                    let mut keys = std::mem::take(v);
                    if self.bucket == self.far_first {
                        let (_, mut more) = self.far.pop_first().expect("far_first is in far");
                        if keys.is_empty() {
                            keys = more;
                        } else {
                            keys.append(&mut more);
                            self.spare.push(more);
                        }
                    }
                    break keys;
                }
            }
        };
        if self.bucket >= self.far_first {
            self.far_first = self.far.first_key_value().map_or(u64::MAX, |(b, _)| *b);
        }
        keys.sort_unstable_by(|a, b| b.cmp(a));
        let done = std::mem::replace(&mut self.now, keys);
        self.spare.push(done);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The bucketed queue pops exactly what one heap ordered by (time, push order)
        /// pops: events in the current bucket, in later buckets, far ahead, at the end
        /// of time, and ties, pushed between pops as a simulation does (never before
        /// the last popped time).
        #[test]
        fn queue_pops_in_time_then_push_order(ops in proptest::collection::vec((any::<bool>(), 0u8..16, any::<u64>()), 1..600)) {
            let mut q: Queue<()> = Queue::new();
            let mut model: BinaryHeap<Reverse<(Time, u32)>> = BinaryHeap::new();
            let (mut n, mut now) = (0u32, 0 as Time);
            let id = |ev: Ev<()>| match ev {
                Ev::Submit { client } => client,
                _ => unreachable!(),
            };
            for (pop, kind, r) in ops {
                if pop {
                    let got = q.pop().map(|(t, ev)| (t, id(ev)));
                    let want = model.pop().map(|Reverse(k)| k);
                    prop_assert_eq!(got, want);
                    if let Some((t, _)) = got {
                        now = t;
                    }
                } else {
                    let at = match kind {
                        0..=2 => now,
                        3..=5 => now.saturating_add(r % 1_000),
                        6..=12 => now.saturating_add(r % (1 << (BUCKET_BITS + 2))),
                        13 if r % 2 == 0 => now.saturating_add(r % ((RING + 2) << BUCKET_BITS)),
                        13 | 14 => now.saturating_add(r % 10_000_000_000),
                        _ if r % 8 == 0 => Time::MAX - r % 3,
                        _ => now.saturating_add(r % (1 << 40)),
                    };
                    n += 1;
                    q.push(at, Ev::Submit { client: n });
                    model.push(Reverse((at, n)));
                }
            }
            loop {
                let got = q.pop().map(|(t, ev)| (t, id(ev)));
                let want = model.pop().map(|Reverse(k)| k);
                prop_assert_eq!(got, want);
                if got.is_none() {
                    break;
                }
            }
        }
    }
}
