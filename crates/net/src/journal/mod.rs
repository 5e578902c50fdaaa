//! A server's durable journal: every input its actor handled, in order, in a
//! [fjall](https://crates.io/crates/fjall) keyspace (an embedded LSM store).
//!
//! # Why an input journal
//!
//! Protocols are deterministic state machines, and what survives their crash is
//! defined by their own `on_crash` (the synced log, the checkpointed store, a watermark;
//! nothing for HACommit). So the runtime keeps, for each server, the sequence of inputs
//! (messages with their send-chain hops, timer firings, each with the time it was
//! handled) and, at restart, feeds them again to a fresh actor with every effect
//! discarded, then calls `on_crash` and `on_recover`. The node comes back with exactly
//! the state the protocol says survives a crash, the same rule the simulator applies,
//! without a line of per-protocol persistence code.
//!
//! The exception is a protocol whose replicas are designed to forget (HACommit,
//! CrossStitch): a journalled server of those resumes with the replayed state instead
//! of forgetting it, because a cluster whose servers all restarted at once would
//! otherwise have no one to re-sync from (`host::serve`, docs/CLUSTER.md). It does so
//! only if the machine has not rebooted since the node last started (same kernel boot
//! id): then the OS kept every write, and nothing the node told anyone is missing from
//! what it resumes with.
//!
//! # When it reaches the disk
//!
//! Inputs are written to the journal as they are handled. At the end of each batch of
//! inputs the journal is handed to the OS (`PersistMode::Buffer`, which survives a
//! killed process), and **fsynced** (`SyncAll`) if any handler in the batch charged a
//! forced log write, before any message the batch produced leaves. That is the
//! protocols' own write-ahead rule: what they force before answering is on disk before
//! the answer goes out; what they append lazily may be lost by a machine crash, never
//! by a process kill.
//!
//! # Why fjall, not redb
//!
//! `cargo bench -p meridian-net --bench journal` appends 200-byte records in batches on
//! this machine: fjall was 1.6x faster than redb for one synced record per batch, 2.0x
//! for 16, and 2.8x for 64 unsynced. A journal is append-only, which suits an LSM's
//! write path better than a copy-on-write B-tree. And fjall's unsynced persist reaches
//! the OS, so a killed process loses nothing, where redb's non-durable commits are
//! rolled back on reopen.
//!
//! # Format version
//!
//! A journal's `meta` partition holds a [`Header`]: the journal's layout version
//! ([`FORMAT`]), the wire version its messages are encoded in ([`crate::VERSION`]: the
//! journal stores protocol messages exactly as frames carry them), the protocol, the
//! node and the cluster id. [`Journal::open`] compares it with what the opening server
//! expects and refuses a mismatch with one error naming both sides, so a journal is
//! never replayed by a build, protocol, node or cluster that would misread it. A
//! journal written before headers existed (entries but no `meta`) is read as format 1,
//! wire 1, the only format there was, and so refused by this build; an empty one is
//! given this build's header.
//!
//! # Damage
//!
//! Every input is stored with a CRC-32 of its bytes, under consecutive sequence
//! numbers; replay stops at the first input that fails its checksum or at a gap, with
//! an error naming it, and the server refuses to start. The store's own recovery takes
//! a bad batch in its write-ahead log for a torn tail and drops everything after it in
//! silence, which would leave a prefix that replays cleanly; so after each forced write
//! the journal notes how far the inputs reached the disk in a small file beside the
//! store (`synced-through`, the sequence number and its CRC-32), and an open that finds
//! fewer inputs than that refuses ([`JournalError::Damaged`]) rather than serve part of
//! what the node acknowledged. Unforced inputs lost that way are what a machine crash
//! may lose anyway (the protocols force what they must). A checkpoint image carries its
//! CRC-32 too.
//!
//! # Checkpoints
//!
//! A journal holds at most one checkpoint: an opaque image of the server at some input
//! (the runtime's `Checkpoint`: the protocol's server image, its random generator and
//! its armed timers), followed by the inputs handled since. Restart rebuilds the server
//! from the image and replays only those inputs, so it costs the state's size plus the
//! inputs since the last checkpoint, not the node's age.
//!
//! The journal has two partitions, both created at its first open: `meta` and `inputs`
//! (keyed by the input's sequence number, which never restarts). A checkpoint's image
//! is a plain file beside the store, `image-G` for generation G, written to
//! `image-G.tmp`, forced, renamed and the rename forced; only then is the small
//! `checkpoint` file beside it (the current generation, the image's position, length
//! and CRC-32, and a CRC-32 of its own) replaced the same way, which makes it current.
//! Only after that are the inputs before the image and the previous generation's file
//! deleted, on a second thread, which records how far it got (`meta`'s `dropped`). A
//! crash before the `checkpoint` file is replaced leaves the previous generation
//! current and complete (and maybe a file of the next one, which the next checkpoint
//! overwrites); one after it leaves inputs and a file that are no longer needed,
//! which the next [`Journal::open`] deletes.
//!
//! Images were kept in an `images` partition, in 1 MiB chunks, and the current
//! generation in `meta`, up to format 14. The image's batch and the fsync forcing it
//! held the store's write-ahead-log lock, so the event loop's next append waited for
//! them even with the image written on a second thread; files of our own are written
//! and forced without that lock, and the image is written once rather than to the
//! log and again at the flush.
//!
//! Format 3 kept each generation in partitions of its own and dropped them whole. Two
//! bugs of the storage engine (fjall 2.11) made that unsafe: a `kill -9` while a
//! partition was being created left one that no later open could read, and dropping
//! a partition while its memtable was being flushed panicked the flush thread and
//! poisoned the keyspace (both seen on a cluster under frequent checkpoints). Format
//! 4 never creates or drops a partition after the first open; formats 5 to 8 keep that
//! layout and changed only server images and journalled messages ([`FORMAT`] says which).
//!
//! A server's checkpoint is written in the background ([`Journal::start_checkpoint`],
//! `checkpoint.rs`): the event loop copies the server and goes on; a second thread
//! encodes the copy, writes and forces it; the previous generation stays current
//! until then, so a crash meanwhile costs only a longer replay.
//!
//! A protocol without an image (`Protocol::image` is `None`) never checkpoints: its
//! journal grows with the node's age, and restart replays all of it.

use meridian_core::{NodeId, Time};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One journalled input.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Entry<M> {
    /// The node started for the first time.
    Start {
        /// When.
        now: Time,
    },
    /// A message was delivered.
    Msg {
        /// Sender.
        from: NodeId,
        /// WAN hops of its chain, on arrival.
        hops: u32,
        /// When.
        now: Time,
        /// The message.
        msg: M,
    },
    /// A timer fired.
    Timer {
        /// The timer.
        id: u64,
        /// When.
        now: Time,
    },
    /// The node restarted after a crash (`on_crash`, then `on_recover`).
    Restart {
        /// When.
        now: Time,
    },
}

/// The layout of the journal (its partitions, keys and [`Entry`]) and of the server
/// images its checkpoints hold (each protocol's server state, as
/// `meridian_protocols::kit::image` encodes it: postcard, which names no field, so a
/// reordered or added field misreads silently): bump on any change of either.
///
/// 5: Replicated Commit's coordinator state keeps its commit round in the shared
/// `kit::vote::Round` (its fields moved ahead of the coordinator shard). 6: a replog
/// transaction's share notes since when it blocks another (`PTxn::blocking`); and
/// replog's messages (journalled inputs) gain `Wound`. 7: a 2PC coordinator keeps each
/// undecided transaction's PREPAREs (`CTxn::shares`), to send again to a participant
/// that has not voted. 8: a Replicated Commit coordinator notes when it last sent
/// PREPARE to its DC's silent cohorts (`CTxn::asked`). 9: a HACommit replica notes the
/// client whose ballot-0 proposal it refused (`Txn::refused_client`), and HACommit's
/// messages (journalled inputs) gain `VoteQuery`. 10: replog's messages gain
/// `VoteQuery`, and its vote `Prepared::again`; a coordinator notes when it last asked
/// (`CTxn::asked`); hierarchical validation's `Query` gains `decide`, and its log
/// `Rec::Frozen`. 11: every input carries a CRC-32 of its bytes and replay requires
/// consecutive sequence numbers; an image carries its CRC-32; the `synced-through`
/// file beside the store names how far the inputs were forced to disk; Replicated
/// Commit's servers note released readers (`Server::released`). 12: a CrossStitch
/// server keeps per-client acceptor marks (`acc_marks`, `acc_floor`, `acc_forgot`,
/// `acc_forgot_floor`), in the middle of its image (stop 67; a review found the image
/// changed without this bump, so a format-11 checkpoint would have misread). 13: those
/// marks are renamed `client_marks` etc. and now guard every role a CrossStitch server
/// plays, not only the acceptor's (stop 68): a format-12 image's marks would say the
/// server never executed or held puts for transactions it did. Catenae's chain servers
/// also keep the read-only reads they hold for an incomplete epoch (`ro_parked`), and
/// Catenae's coordinators count speculation and waits (`Stats`, `held_pending`,
/// `Comp::blocked_since`), and a pc-2pl home keeps a pre-declared transaction's first
/// round (`HPhase::Prelocking`, `HTxn::pre`, `xlocked`, `Holder::waiting`'s `Want`).
/// A HACommit replica keeps its own acceptance apart from adopted ones (`Txn::own`).
/// All of it is in FORMAT 13: no build between these changes was released. 14: version
/// GC (stop 74): every server's store keeps each version's install time
/// (`Version::at`), what was collected from each chain (`Collected`) and its clock and
/// counts; and Catenae's chains keep speculative values (stop 73). 15 (stop 75, never
/// released: images still in the store): a HACommit replica's decided transactions
/// are a persistent map with a queue of those that still keep their writes
/// (`Server::expiring`), after the map. 16: checkpoint images are files beside the
/// store (`image-G`), named by the `checkpoint` file, no longer an `images` partition
/// and `meta`'s `current` and `image` keys. 17 (stop 76): a Catenae coordinator
/// keeps when it last heard each chain server of its DC and which it suspects down
/// (`heard`, `suspects`), and which transactions it gave up executing
/// (`CoTxn::unexecuted`); journalled Catenae aborts carry their epoch (wire 16).
/// 18 (stop 77): a Replicated Commit server forgets decisions (`forgetting`,
/// `forgot_ts`, `forget_after`, `aborting`; `CTxn::confirmed`/`ts`, `Prep::ts`; log
/// records `Forgot`, `Decided::forget`, `Voted::ts`, `Ended::forget`), and keeps
/// its decisions and tombstones in persistent maps (`done`, `applied`, `released` as
/// `Aging`); its journalled votes and queries name the commit timestamp (wire 17).
/// 19 (stop 78): a CrossStitch server collects versions (`gc_floor`) and keeps its
/// outcomes and acceptor state in persistent maps (`done`, `acceptors` as `Aging`,
/// `applied` as an `imbl::OrdMap`; `Done::at` and `Acceptor::since` gone); its sync
/// state says what the sender collected (wire 18).
/// 20 (stop 79): a HACommit server forgets settled decisions (`settling`,
/// `forget_after`, `Group::forgot_ts`, `Done::ts`/`shards`; wire 19).
/// 21 (stop 80): a replog server truncates its logs and keeps its decisions in a
/// record of their own (`Group::log_start`, `decided`, `forgot_ts`, `forgetting`,
/// `settle_asked`, `quiet_until`; `keep`, `forget`, `snapshots_taken`; `done` gone;
/// wire 20).
pub const FORMAT: u32 = 21;

/// What a journal says about itself (its `meta` partition).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Journal layout version ([`FORMAT`]).
    pub format: u32,
    /// Wire version of the messages in it ([`crate::VERSION`]).
    pub wire: u8,
    /// Protocol spec of the cluster.
    pub protocol: String,
    /// The node whose inputs these are.
    pub node: u32,
    /// The cluster's id.
    pub cluster: u64,
}

impl Header {
    /// The header this build writes for `node` of a cluster.
    pub fn new(protocol: &str, node: NodeId, cluster: u64) -> Header {
        Header {
            format: FORMAT,
            wire: crate::VERSION,
            protocol: protocol.to_string(),
            node: node.0,
            cluster,
        }
    }
}

/// Why a journal could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The storage engine failed.
    #[error(transparent)]
    Store(#[from] fjall::Error),
    /// The journal's header is unreadable.
    #[error("unreadable journal header: {0}")]
    Header(String),
    /// The journal was written by another build, protocol, node or cluster.
    #[error("{0}")]
    Mismatch(String),
    /// The journal lacks inputs it once forced to disk, or holds a damaged one: the
    /// node must not serve what is left (a prefix of what it acknowledged).
    #[error("{0}")]
    Damaged(String),
}

/// What a damaged journal's error tells the operator to do.
pub const DAMAGED_ADVICE: &str = "the node refuses to start rather than serve part of what it \
    acknowledged: restore the directory from a backup, or move it aside and rebuild the node \
    from its peers where the protocol keeps other copies (docs/CLUSTER.md, \"A damaged journal\")";

/// The file beside the store that names how far the inputs were forced to disk: the
/// sequence number after the last synced input (u64, little-endian) and its CRC-32.
/// Written after each forced write returns, so a journal that holds fewer inputs when
/// it is opened again lost some it had forced (a damaged or truncated store file, which
/// the store's own recovery cuts off in silence as if it were a torn tail).
const SYNCED_FILE: &str = "synced-through";

/// Reads the `synced-through` mark of `dir` (0 without one).
fn read_synced(dir: &Path) -> Result<u64, JournalError> {
    let path = dir.join(SYNCED_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    // Created at the first open, written at the first forced write.
    if bytes.is_empty() {
        return Ok(0);
    }
    let ok = bytes.len() == 12 && crc32fast::hash(&bytes[..8]).to_le_bytes() == bytes[8..12];
    if !ok {
        return Err(JournalError::Damaged(format!(
            "{} is damaged ({} bytes, checksum {}): {DAMAGED_ADVICE}",
            path.display(),
            bytes.len(),
            if bytes.len() == 12 { "wrong" } else { "missing" }
        )));
    }
    Ok(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")))
}

/// An input's bytes as stored: its encoding, then the CRC-32 of it.
fn seal(mut bytes: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

/// The encoding inside a stored input, if its CRC-32 matches.
fn unseal(stored: &[u8]) -> Option<&[u8]> {
    let (body, crc) = stored.split_at_checked(stored.len().checked_sub(4)?)?;
    (crc32fast::hash(body).to_le_bytes() == crc).then_some(body)
}

impl From<std::io::Error> for JournalError {
    fn from(e: std::io::Error) -> Self {
        JournalError::Store(e.into())
    }
}

/// Compares a journal's header with the one expected; one sentence naming both sides.
fn mismatch(found: &Header, want: &Header) -> Option<String> {
    if (found.format, found.wire) != (want.format, want.wire) {
        return Some(format!(
            "it was written in journal format {} with wire version {}, and this build reads format {} with \
             wire version {}: start the node with the build that wrote it, or move the directory aside to \
             start the node without it",
            found.format, found.wire, want.format, want.wire
        ));
    }
    if found.protocol != want.protocol {
        return Some(format!(
            "it belongs to a `{}` server, not `{}`: each cluster needs its own data directory",
            found.protocol, want.protocol
        ));
    }
    if found.node != want.node {
        return Some(format!(
            "it belongs to node {}, not node {}: each server needs its own data directory",
            found.node, want.node
        ));
    }
    if found.cluster != want.cluster {
        return Some(format!(
            "it belongs to cluster {}, not this cluster ({}): a new cluster needs fresh data directories",
            found.cluster, want.cluster
        ));
    }
    None
}

/// Where the current generation's image is (in the `checkpoint` file).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ImageMeta {
    /// Sequence number of the first input after the image.
    at: u64,
    /// Its length in bytes.
    len: u64,
    /// CRC-32 of the whole image.
    crc: u32,
}

/// What was in the journal before the current checkpoint and is not deleted yet.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Dropped {
    /// Inputs below this sequence number are deleted.
    inputs: u64,
    /// Images of generations below this are deleted.
    images: u64,
}

/// A server's journal.
pub struct Journal {
    ks: fjall::Keyspace,
    meta: fjall::PartitionHandle,
    /// The inputs, keyed by sequence number.
    part: fjall::PartitionHandle,
    /// The journal's folder (image files: [`checkpoint::image_path`]).
    dir: std::path::PathBuf,
    /// The current generation (see the module docs' "Checkpoints").
    gen: u64,
    /// Where its image is, if it has one.
    image: Option<ImageMeta>,
    next: u64,
    pending: Vec<(u64, Vec<u8>)>,
    /// The `synced-through` file (see [`SYNCED_FILE`]).
    synced: std::fs::File,
    /// The thread deleting what the last checkpoint replaced.
    dropping: Option<std::thread::JoinHandle<()>>,
    /// A checkpoint being written on a second thread.
    writing: Option<checkpoint::Writing>,
    /// Bytes of inputs appended since the journal was opened, and that count when the
    /// current image was taken (0 for one found at the open): what the inputs after
    /// the image weigh, for [`Journal::checkpoint_due`].
    appended: u64,
    image_from: u64,
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.join_all();
    }
}

impl Journal {
    /// Opens (or creates) the journal in `dir` for the server `want` describes; read
    /// what it holds with [`Journal::replay`]. A journal whose header differs from
    /// `want` is refused ([`JournalError::Mismatch`]) and left untouched.
    pub fn open(dir: &Path, want: &Header) -> Result<Journal, JournalError> {
        std::fs::create_dir_all(dir)?;
        drop_cut_off_partitions(dir)?;
        // A smaller write-ahead log than fjall's default (512 MiB) bounds what an open
        // replays even when no checkpoint comes (a protocol without one, light load).
        // fjall panics on some damage to its own write-ahead log (a flipped byte in a
        // marker's compression field asserts; seen in journal_damage.rs): that is a
        // damaged journal, refused like any other, not a crash of the node.
        let opened = std::panic::catch_unwind(|| fjall::Config::new(dir).max_journaling_size(64 << 20).open());
        let ks = match opened {
            Ok(r) => r?,
            Err(p) => {
                let why = p
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| p.downcast_ref::<&str>().copied())
                    .unwrap_or("a panic");
                return Err(JournalError::Damaged(format!(
                    "the store in {} could not be opened ({}): {DAMAGED_ADVICE}",
                    dir.display(),
                    why.lines().next().unwrap_or(why)
                )));
            }
        };
        let meta = ks.open_partition("meta", fjall::PartitionCreateOptions::default())?;
        let found = match meta.get("header")? {
            Some(b) => Some(postcard::from_bytes::<Header>(&b).map_err(|e| JournalError::Header(e.to_string()))?),
            // Written before headers existed: the first format, if it holds anything.
            None if ks.partition_exists("inputs")
                && ks
                    .open_partition("inputs", fjall::PartitionCreateOptions::default())?
                    .first_key_value()?
                    .is_some() =>
            {
                Some(Header {
                    format: 1,
                    wire: 1,
                    ..want.clone()
                })
            }
            None => None,
        };
        match found {
            Some(h) => {
                if let Some(why) = mismatch(&h, want) {
                    return Err(JournalError::Mismatch(why));
                }
            }
            None => {
                meta.insert("header", postcard::to_stdvec(want).expect("headers serialize"))?;
                ks.persist(fjall::PersistMode::SyncAll)?;
            }
        }
        let (gen, image) = checkpoint::read_current(dir)?;
        if image.is_none() {
            // No checkpoint is named, yet inputs were deleted behind one: the file
            // that named it is gone, and with it where replay must begin.
            if let Some(b) = meta.get("dropped")? {
                let d = postcard::from_bytes::<Dropped>(&b).map_err(|e| JournalError::Header(e.to_string()))?;
                if d.inputs > 0 {
                    return Err(JournalError::Damaged(format!(
                        "{} is missing, but the inputs before input {} were deleted behind the checkpoint \
                         it named: {DAMAGED_ADVICE}",
                        dir.join(checkpoint::CHECKPOINT_FILE).display(),
                        d.inputs
                    )));
                }
            }
        }
        let opts = fjall::PartitionCreateOptions::default;
        let part = ks.open_partition("inputs", opts())?;
        // After the last input, and never before the checkpoint (inputs before it may
        // be left over, not yet deleted).
        let after_image = image.as_ref().map_or(0, |i| i.at);
        let next = match part.last_key_value()? {
            Some((k, _)) => (u64::from_be_bytes(k.as_ref().try_into().unwrap_or([0xff; 8])) + 1).max(after_image),
            None => after_image,
        };
        let forced = read_synced(dir)?;
        if next < forced {
            return Err(JournalError::Damaged(format!(
                "the journal in {} ends at input {next}, but inputs up to {forced} were forced to disk ({} \
                 says so): a store file is damaged or cut short, and {} acknowledged inputs are gone; \
                 {DAMAGED_ADVICE}",
                dir.display(),
                dir.join(SYNCED_FILE).display(),
                forced - next
            )));
        }
        let synced = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(SYNCED_FILE))?;
        let mut j = Journal {
            ks,
            meta,
            part,
            dir: dir.to_path_buf(),
            gen,
            image,
            next,
            pending: vec![],
            synced,
            dropping: None,
            writing: None,
            appended: 0,
            image_from: 0,
        };
        // A checkpoint that was on disk before what it replaced was deleted: delete
        // it now (on the second thread, as after a checkpoint).
        j.drop_replaced()?;
        Ok(j)
    }

    /// The image of the current checkpoint, if there is one (the inputs
    /// [`Journal::replay`] hands over are those after it).
    pub fn image(&self) -> Result<Option<Vec<u8>>, JournalError> {
        let Some(m) = &self.image else { return Ok(None) };
        let path = checkpoint::image_path(&self.dir, self.gen);
        let out = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(JournalError::Damaged(format!(
                    "the checkpoint image {} is missing: {DAMAGED_ADVICE}",
                    path.display()
                )))
            }
            Err(e) => return Err(e.into()),
        };
        if out.len() as u64 != m.len {
            return Err(JournalError::Damaged(format!(
                "checkpoint image is {} bytes, its header says {}: {DAMAGED_ADVICE}",
                out.len(),
                m.len
            )));
        }
        if crc32fast::hash(&out) != m.crc {
            return Err(JournalError::Damaged(format!(
                "checkpoint image (generation {}, {} bytes) fails its checksum: {DAMAGED_ADVICE}",
                self.gen, m.len
            )));
        }
        Ok(Some(out))
    }

    /// The sequence number of the first input after the checkpoint (0 without one).
    fn first(&self) -> u64 {
        self.image.as_ref().map_or(0, |i| i.at)
    }

    /// Inputs appended since the last checkpoint (or since the journal began).
    pub fn since_checkpoint(&self) -> u64 {
        self.next - self.first()
    }

    /// Whether a checkpoint is due: at least `every` inputs since the current one (0:
    /// never), and at least as many bytes of them as its image holds. The second rule
    /// keeps the cost of checkpoints proportional to the inputs, whatever the size of
    /// the state: an image ten times the size of `every` inputs is written a tenth as
    /// often, and a restart replays at most the larger of `every` inputs and an
    /// image's worth of them after loading the image. (Inputs replayed at the open
    /// are not counted, so the first checkpoint after a restart may come later.)
    pub fn checkpoint_due(&self, every: u64) -> bool {
        let image = self.image.as_ref().map_or(0, |m| m.len);
        every > 0 && self.since_checkpoint() >= every && self.appended - self.image_from >= image
    }

    /// Every entry the journal holds after its checkpoint, oldest first, still encoded
    /// (tests: a restart reads through [`Journal::replay`]).
    #[cfg(test)]
    fn raw_entries(&self) -> Result<Vec<Vec<u8>>, JournalError> {
        let mut out = vec![];
        for kv in self.part.range(self.first().to_be_bytes()..) {
            out.push(unseal(&kv?.1).expect("a sealed entry").to_vec());
        }
        Ok(out)
    }

    /// Hands every entry the journal holds after its checkpoint (if any), oldest first
    /// and decoded, to `each`;
    /// returns how many. Reading the store and decoding run on a second thread, a
    /// chunk of entries ahead of `each`, so a restart replays at the speed of the
    /// slower of the two rather than of both in turn. Stops at the first entry that
    /// does not decode (or a read error), with the error.
    pub fn replay<M: DeserializeOwned + Send>(&self, mut each: impl FnMut(Entry<M>)) -> Result<u64, String> {
        const CHUNK: usize = 1024;
        let part = self.part.clone();
        let first = self.first().to_be_bytes();
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Vec<Entry<M>>, String>>(8);
            scope.spawn(move || {
                let mut chunk = Vec::with_capacity(CHUNK);
                let mut want = u64::from_be_bytes(first);
                for kv in part.range(first..) {
                    let e = kv.map_err(|e| format!("reading the journal: {e}")).and_then(|(k, v)| {
                        let seq = u64::from_be_bytes(k.as_ref().try_into().unwrap_or([0xff; 8]));
                        if seq != want {
                            return Err(format!(
                                "the journal skips from input {} to input {seq}: {DAMAGED_ADVICE}",
                                want.wrapping_sub(1)
                            ));
                        }
                        want += 1;
                        let body =
                            unseal(&v).ok_or_else(|| format!("input {seq} fails its checksum: {DAMAGED_ADVICE}"))?;
                        Journal::decode(body).map_err(|e| format!("input {seq}: {e}: {DAMAGED_ADVICE}"))
                    });
                    match e {
                        Ok(e) => chunk.push(e),
                        Err(e) => {
                            // The entries before it first: they replay, as one by one.
                            let _ = tx.send(Ok(chunk));
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                    if chunk.len() == CHUNK
                        && tx
                            .send(Ok(std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK))))
                            .is_err()
                    {
                        return;
                    }
                }
                let _ = tx.send(Ok(chunk));
            });
            let mut n = 0;
            for chunk in rx {
                for e in chunk? {
                    n += 1;
                    each(e);
                }
            }
            Ok(n)
        })
    }

    /// Decodes one entry.
    pub fn decode<M: DeserializeOwned>(bytes: &[u8]) -> Result<Entry<M>, String> {
        postcard::from_bytes(bytes).map_err(|e| format!("corrupt journal entry: {e}"))
    }

    /// Appends an entry (written at the next [`Journal::flush`] or [`Journal::sync`]).
    pub fn append<M: Serialize>(&mut self, e: &Entry<M>) -> Result<(), JournalError> {
        let bytes = seal(postcard::to_stdvec(e).expect("journal entries serialize"));
        self.appended += bytes.len() as u64;
        self.pending.push((self.next, bytes));
        self.next += 1;
        Ok(())
    }

    fn write(&mut self) -> Result<(), JournalError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut b = self.ks.batch();
        for (seq, v) in self.pending.drain(..) {
            b.insert(&self.part, seq.to_be_bytes(), v);
        }
        Ok(b.commit()?)
    }

    /// Hands what was appended to the OS (survives the process, not the machine).
    pub fn flush(&mut self) -> Result<(), JournalError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.write()?;
        Ok(self.ks.persist(fjall::PersistMode::Buffer)?)
    }

    /// Writes what was appended and forces it to disk, then notes how far that goes
    /// in the `synced-through` file (module docs, "Damage"; not itself forced: a mark
    /// lost with the machine only checks less at the next open).
    pub fn sync(&mut self) -> Result<(), JournalError> {
        self.write()?;
        self.ks.persist(fjall::PersistMode::SyncAll)?;
        use std::os::unix::fs::FileExt;
        let mut mark = self.next.to_le_bytes().to_vec();
        mark.extend_from_slice(&crc32fast::hash(&mark).to_le_bytes());
        self.synced.write_all_at(&mark, 0)?;
        Ok(())
    }

    /// Entries written so far.
    pub fn len(&self) -> u64 {
        self.next
    }

    /// Whether nothing was ever written.
    pub fn is_empty(&self) -> bool {
        self.next == 0
    }
}

/// Removes the folders of partitions whose creation a crash cut off, which fjall 2.11
/// cannot open again. Creating a partition (`lsm-tree` 2.10's `Tree::create_new`)
/// writes the tree's `manifest`, the mark fjall's recovery takes for "initialized",
/// and only then its `levels` file; a `kill -9` between the two left a folder with the
/// first and not the second, and every later open of the keyspace failed on the
/// missing `levels` (`No such file or directory`), so the node could never restart.
/// Format 3 created two partitions at every checkpoint, so a kill during one hit this
/// (a cluster test, about one run in fifteen); format 4 creates partitions only at a
/// journal's first open, where a kill can still cut one off. Such a partition holds
/// nothing: no write reaches a partition before its creation returns. A folder marked
/// deleted is left to fjall, which finishes the deletion itself.
fn drop_cut_off_partitions(dir: &Path) -> std::io::Result<()> {
    let partitions = dir.join("partitions");
    let Ok(entries) = std::fs::read_dir(&partitions) else {
        return Ok(()); // a new journal
    };
    for e in entries {
        let path = e?.path();
        let cut_off = path.is_dir()
            && path.join("manifest").exists()
            && !path.join("levels").exists()
            && !path.join(".deleted").exists();
        if cut_off {
            tracing::warn!(partition = ?path, "dropping a journal partition whose creation a crash cut off (it holds nothing)");
            std::fs::remove_dir_all(&path)?;
        }
    }
    Ok(())
}

mod checkpoint;
pub use checkpoint::CheckpointDone;

#[cfg(test)]
mod tests;
