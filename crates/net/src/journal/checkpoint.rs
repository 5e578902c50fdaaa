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

use super::{Dropped, ImageMeta, Journal, JournalError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A checkpoint being written on a second thread.
pub(super) struct Writing {
    /// Inputs appended since the last checkpoint when this one was taken.
    inputs: u64,
    /// `Journal::appended` when it was taken.
    appended: u64,
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

/// Generation `gen`'s image file in the journal's folder `dir`.
pub(super) fn image_path(dir: &Path, gen: u64) -> PathBuf {
    dir.join(format!("image-{gen}"))
}

/// The generation of an image file's name (`image-G` or `image-G.tmp`).
fn image_gen(name: &str) -> Option<u64> {
    let g = name.strip_prefix("image-")?;
    g.strip_suffix(".tmp").unwrap_or(g).parse().ok()
}

/// The file beside the store that names the current checkpoint: its generation and
/// [`ImageMeta`] (postcard), then a CRC-32 of those bytes (little-endian).
pub(super) const CHECKPOINT_FILE: &str = "checkpoint";

/// Replaces `path` with `bytes` atomically and durably: written under a temporary
/// name, forced, renamed, and the rename forced.
fn replace_file(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

/// Reads the [`CHECKPOINT_FILE`] of `dir`: the current generation and its image
/// (generation 0 and none without one).
pub(super) fn read_current(dir: &Path) -> Result<(u64, Option<ImageMeta>), JournalError> {
    let path = dir.join(CHECKPOINT_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, None)),
        Err(e) => return Err(e.into()),
    };
    let damaged = || {
        JournalError::Damaged(format!(
            "{} (which names the journal's checkpoint) is damaged: {}",
            path.display(),
            super::DAMAGED_ADVICE
        ))
    };
    let (body, crc) = bytes
        .split_at_checked(bytes.len().wrapping_sub(4))
        .ok_or_else(damaged)?;
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(damaged());
    }
    let (gen, m) = postcard::from_bytes::<(u64, ImageMeta)>(body).map_err(|_| damaged())?;
    Ok((gen, Some(m)))
}

/// Writes `image` as generation `gen`'s, positioned at input `at`, and makes it
/// current: the image file, then the [`CHECKPOINT_FILE`] naming it, each replaced
/// atomically and forced (module docs, "Checkpoints"). Nothing here takes the store's
/// locks, so the event loop's appends meanwhile never wait for it.
fn write_image(dir: &Path, gen: u64, at: u64, image: &[u8]) -> Result<ImageMeta, JournalError> {
    replace_file(dir, &image_path(dir, gen), image)?;
    let m = ImageMeta {
        at,
        len: image.len() as u64,
        crc: crc32fast::hash(image),
    };
    let mut bytes = postcard::to_stdvec(&(gen, &m)).expect("image headers serialize");
    bytes.extend_from_slice(&crc32fast::hash(&bytes).to_le_bytes());
    replace_file(dir, &dir.join(CHECKPOINT_FILE), &bytes)?;
    Ok(m)
}

/// Deletes inputs `from..to` and the image files of generations before `gen`, then
/// records it in `meta` (unsynced: a crash before it is durable only means the next
/// open deletes them again).
fn drop_before(
    ks: &fjall::Keyspace,
    meta: &fjall::PartitionHandle,
    inputs: &fjall::PartitionHandle,
    dir: &Path,
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
    // Never the current generation's, nor a later one being written meanwhile.
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_name().to_str().and_then(image_gen).is_some_and(|g| g < gen) {
            std::fs::remove_file(e.path())?;
        }
    }
    std::fs::File::open(dir)?.sync_all()?;
    let mut b = ks.batch();
    let done = Dropped {
        inputs: to,
        images: gen,
    };
    b.insert(meta, "dropped", postcard::to_stdvec(&done).expect("numbers serialize"));
    b.commit()?;
    ks.persist(fjall::PersistMode::Buffer)?;
    // Seal the memtables (inputs, their tombstones) so that they are
    // flushed and the store's write-ahead log behind them can go: fjall's open
    // replays that log, so without this a restart read every input and tombstone
    // since the last flush (0.5 s after 30 s of load) however recent the checkpoint.
    // `rotate_memtable` is fjall's hidden API (the crate's tests use it); the lock
    // file pins the version.
    for p in [inputs, meta] {
        p.rotate_memtable()?;
    }
    Ok(())
}

impl Journal {
    /// Makes `image` (the server's state after every input appended so far) the
    /// journal's checkpoint, written and forced on this thread, and then drops the
    /// inputs before it and the previous image on a second one (module docs,
    /// "Checkpoints"). Waits for a checkpoint being written in the background first.
    pub fn checkpoint(&mut self, image: &[u8]) -> Result<(), JournalError> {
        self.poll_checkpoint(true)?;
        self.write()?;
        let gen = self.gen + 1;
        let m = write_image(&self.dir, gen, self.next, image)?;
        self.image_from = self.appended;
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
        let dir = self.dir.clone();
        let (gen, at) = (self.gen + 1, self.next);
        let handle = std::thread::Builder::new().name("checkpoint".into()).spawn(move || {
            let t0 = Instant::now();
            let image = make();
            let made = t0.elapsed();
            let meta = write_image(&dir, gen, at, &image)?;
            Ok(Written {
                gen,
                meta,
                make: made,
                total: t0.elapsed(),
            })
        })?;
        self.writing = Some(Writing {
            inputs: self.since_checkpoint(),
            appended: self.appended,
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
    /// replaced; returns what it was. A checkpoint that failed is an error (the node
    /// must stop: whether the `checkpoint` file was replaced is not known).
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
        self.image_from = w.appended;
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
        let (ks, meta, inputs, dir) = (self.ks.clone(), self.meta.clone(), self.part.clone(), self.dir.clone());
        let (from, gen) = (done.inputs, self.gen);
        self.dropping = Some(std::thread::spawn(move || {
            if let Err(e) = drop_before(&ks, &meta, &inputs, &dir, from, at, gen) {
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
