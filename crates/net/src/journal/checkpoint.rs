//! Checkpoints: writing a new generation's image, in the background or in place, and
//! deleting what it replaced (module docs of [`super`], "Checkpoints").
//!
//! A checkpoint taken by [`Journal::start_checkpoint`] costs its caller (the node's
//! event loop) only what it takes to capture the state: the image is built, encoded,
//! written and forced to disk on a second thread while the loop goes on appending
//! inputs after the checkpoint's position. Until that thread is done, the previous
//! generation stays current, so a crash meanwhile restarts from it and replays every
//! input since, as if the new checkpoint had never begun. [`Journal::poll_checkpoint`]
//! makes the written image the journal's own once it is on disk, and only then are
//! the inputs before it deleted.

use super::{image_key, Dropped, ImageMeta, Journal, JournalError, IMAGE_CHUNK};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A checkpoint being written on a second thread.
pub(super) struct Writing {
    /// Inputs appended since the last checkpoint when this one was taken.
    inputs: u64,
    handle: JoinHandle<Result<Written, JournalError>>,
}

/// What the second thread wrote.
struct Written {
    gen: u64,
    meta: ImageMeta,
    /// Building and encoding the image.
    make: Duration,
    /// All of it, writing and forcing to disk included.
    total: Duration,
}

/// A checkpoint that reached the disk and is now the journal's.
#[derive(Clone, Debug)]
pub struct CheckpointDone {
    /// Its image's size.
    pub bytes: u64,
    /// Inputs it replaced (deleted from the journal now, on a second thread).
    pub inputs_dropped: u64,
    /// Building and encoding the image (off the caller's thread).
    pub make: Duration,
    /// Everything on the second thread: building, encoding, writing, forcing.
    pub total: Duration,
}

/// Writes `image` as generation `gen`'s, positioned at input `at`, and makes it
/// current, in one atomic batch forced to disk.
fn write_image(
    ks: &fjall::Keyspace,
    meta: &fjall::PartitionHandle,
    images: &fjall::PartitionHandle,
    gen: u64,
    at: u64,
    image: &[u8],
) -> Result<ImageMeta, JournalError> {
    let m = ImageMeta {
        at,
        len: image.len() as u64,
        chunks: image.chunks(IMAGE_CHUNK).count() as u32,
        crc: crc32fast::hash(image),
    };
    let mut b = ks.batch();
    for (i, c) in image.chunks(IMAGE_CHUNK).enumerate() {
        b.insert(images, image_key(gen, i as u32), c);
    }
    b.insert(meta, "image", postcard::to_stdvec(&m).expect("image headers serialize"));
    b.insert(meta, "current", postcard::to_stdvec(&gen).expect("numbers serialize"));
    b.commit()?;
    ks.persist(fjall::PersistMode::SyncAll)?;
    Ok(m)
}

/// Deletes inputs `from..to` and the images of generations before `gen`, in batches,
/// then records it in `meta` (unsynced: a crash before it is durable only means the
/// next open deletes them again).
fn drop_before(
    ks: &fjall::Keyspace,
    meta: &fjall::PartitionHandle,
    inputs: &fjall::PartitionHandle,
    images: &fjall::PartitionHandle,
    from: u64,
    to: u64,
    gen: u64,
) -> Result<(), fjall::Error> {
    const BATCH: u64 = 4096;
    let mut seq = from;
    while seq < to {
        let end = (seq + BATCH).min(to);
        let mut b = ks.batch();
        for k in seq..end {
            b.remove(inputs, k.to_be_bytes());
        }
        b.commit()?;
        seq = end;
    }
    let mut b = ks.batch();
    for kv in images.range(..image_key(gen, 0)) {
        b.remove(images, kv?.0);
    }
    let done = Dropped {
        inputs: to,
        images: gen,
    };
    b.insert(meta, "dropped", postcard::to_stdvec(&done).expect("numbers serialize"));
    b.commit()?;
    ks.persist(fjall::PersistMode::Buffer)?;
    // Seal the memtables (inputs, their tombstones, the image) so that they are
    // flushed and the store's write-ahead log behind them can go: fjall's open
    // replays that log, so without this a restart read every input and tombstone
    // since the last flush (0.5 s after 30 s of load) however recent the checkpoint.
    // `rotate_memtable` is fjall's hidden API (the crate's tests use it); the lock
    // file pins the version.
    for p in [inputs, images, meta] {
        p.rotate_memtable()?;
    }
    Ok(())
}

impl Journal {
    /// Makes `image` (the server's state after every input appended so far) the
    /// journal's checkpoint and drops the inputs before it, on this thread: written
    /// and forced to disk atomically with a new generation of inputs, after which the
    /// previous generation's partitions go (module docs, "Checkpoints"). Waits for a
    /// checkpoint being written in the background first.
    pub fn checkpoint(&mut self, image: &[u8]) -> Result<(), JournalError> {
        self.poll_checkpoint(true)?;
        self.write()?;
        let gen = self.gen + 1;
        let m = write_image(&self.ks, &self.meta, &self.images, gen, self.next, image)?;
        self.adopt(gen, m)
    }

    /// Starts a checkpoint at the current input: `make` builds the image of the
    /// server's state after every input appended so far (from a copy the caller took)
    /// and runs, with the writing and forcing, on a second thread. The previous
    /// checkpoint stays current until [`Journal::poll_checkpoint`] finds this one on
    /// disk. Does nothing while another is being written (returns `false`).
    pub fn start_checkpoint(&mut self, make: impl FnOnce() -> Vec<u8> + Send + 'static) -> Result<bool, JournalError> {
        if self.writing.is_some() {
            return Ok(false);
        }
        self.write()?;
        let (ks, meta, images) = (self.ks.clone(), self.meta.clone(), self.images.clone());
        let (gen, at) = (self.gen + 1, self.next);
        let handle = std::thread::Builder::new().name("checkpoint".into()).spawn(move || {
            let t0 = Instant::now();
            let image = make();
            let made = t0.elapsed();
            let meta = write_image(&ks, &meta, &images, gen, at, &image)?;
            Ok(Written {
                gen,
                meta,
                make: made,
                total: t0.elapsed(),
            })
        })?;
        self.writing = Some(Writing {
            inputs: self.since_checkpoint(),
            handle,
        });
        Ok(true)
    }

    /// Whether a checkpoint is being written in the background.
    pub fn checkpointing(&self) -> bool {
        self.writing.is_some()
    }

    /// If the checkpoint being written in the background is on disk (or, with
    /// `wait`, once it is), makes it the journal's and starts deleting what it
    /// replaced; returns what it was. A checkpoint that failed is an error, and the
    /// previous one stays current.
    pub fn poll_checkpoint(&mut self, wait: bool) -> Result<Option<CheckpointDone>, JournalError> {
        match &self.writing {
            Some(w) if wait || w.handle.is_finished() => {}
            _ => return Ok(None),
        }
        let w = self.writing.take().expect("checked above");
        let written = match w.handle.join() {
            Ok(r) => r?,
            Err(_) => {
                return Err(std::io::Error::other(
                    "the checkpoint thread panicked (the previous checkpoint stays current)",
                )
                .into())
            }
        };
        let done = CheckpointDone {
            bytes: written.meta.len,
            inputs_dropped: w.inputs,
            make: written.make,
            total: written.total,
        };
        self.adopt(written.gen, written.meta)?;
        Ok(Some(done))
    }

    /// Makes generation `gen`, on disk with image `m`, the journal's checkpoint.
    fn adopt(&mut self, gen: u64, m: ImageMeta) -> Result<(), JournalError> {
        // The checkpoint is on disk: what it replaced goes, on a second thread, off
        // the caller's event loop. A crash before that is done leaves it for the next
        // `open` to delete.
        self.gen = gen;
        self.image = Some(m);
        self.drop_replaced()
    }

    /// Deletes, on a second thread, the inputs before the current image and the images
    /// of earlier generations, if any are left.
    pub(super) fn drop_replaced(&mut self) -> Result<(), JournalError> {
        // What the last deletion recorded, once it is over (one that failed recorded
        // nothing, and this one starts where it did).
        self.join_dropping();
        let done = match self.meta.get("dropped")? {
            Some(b) => postcard::from_bytes::<Dropped>(&b).map_err(|e| JournalError::Header(e.to_string()))?,
            None => Dropped::default(),
        };
        let at = self.first();
        if done.inputs >= at && done.images >= self.gen {
            return Ok(());
        }
        let (ks, meta, inputs, images) = (
            self.ks.clone(),
            self.meta.clone(),
            self.part.clone(),
            self.images.clone(),
        );
        let (from, gen) = (done.inputs, self.gen);
        self.dropping = Some(std::thread::spawn(move || {
            if let Err(e) = drop_before(&ks, &meta, &inputs, &images, from, at, gen) {
                tracing::warn!("cannot delete the journal's inputs behind a checkpoint (the next one will): {e}");
            }
        }));
        Ok(())
    }

    /// Waits until what the last checkpoint replaced is deleted.
    pub(super) fn join_dropping(&mut self) {
        if let Some(h) = self.dropping.take() {
            let _ = h.join();
        }
    }

    /// Waits for both second threads: a checkpoint being written (left on disk,
    /// current for the next open if it got there) and a deletion.
    pub(super) fn join_all(&mut self) {
        if let Some(w) = self.writing.take() {
            let _ = w.handle.join();
        }
        self.join_dropping();
    }
}
