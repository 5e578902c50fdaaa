use super::*;

fn header() -> Header {
    Header::new("rc", NodeId(3), 77)
}

/// A journal of another format, wire version, protocol, node or cluster is refused
/// with one sentence naming both sides, and left as it was (opening it again with
/// the right header reads every entry).
#[test]
fn a_journal_of_another_version_protocol_node_or_cluster_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut j = Journal::open(dir.path(), &header()).unwrap();
        j.append(&Entry::<u32>::Start { now: 1 }).unwrap();
        j.sync().unwrap();
    }
    let written_in = format!("journal format {FORMAT} with wire version");
    let cases: Vec<(Header, &str)> = vec![
        (
            Header {
                format: FORMAT + 1,
                ..header()
            },
            &written_in,
        ),
        (
            Header {
                wire: crate::VERSION + 1,
                ..header()
            },
            "this build reads format",
        ),
        (
            Header {
                protocol: "replog".into(),
                ..header()
            },
            "belongs to a `rc` server, not `replog`",
        ),
        (Header { node: 4, ..header() }, "belongs to node 3, not node 4"),
        (
            Header {
                cluster: 78,
                ..header()
            },
            "belongs to cluster 77, not this cluster (78)",
        ),
    ];
    for (want, says) in cases {
        match Journal::open(dir.path(), &want) {
            Err(JournalError::Mismatch(why)) => {
                assert!(why.contains(says), "{want:?}: {why}");
                assert_eq!(why.lines().count(), 1, "{why}");
            }
            other => panic!("{want:?}: {:?}", other.map(|j| j.len())),
        }
    }
    let j = Journal::open(dir.path(), &header()).unwrap();
    assert_eq!(j.raw_entries().unwrap().len(), 1);
}

/// A journal from before headers (entries, no `meta`) reads as format 1 and is
/// refused by this build, never misread.
#[test]
fn a_journal_without_a_header_is_the_first_format() {
    let dir = tempfile::tempdir().unwrap();
    {
        let ks = fjall::Config::new(dir.path()).open().unwrap();
        let part = ks
            .open_partition("inputs", fjall::PartitionCreateOptions::default())
            .unwrap();
        part.insert(
            0u64.to_be_bytes(),
            postcard::to_stdvec(&Entry::<u32>::Start { now: 1 }).unwrap(),
        )
        .unwrap();
        ks.persist(fjall::PersistMode::SyncAll).unwrap();
    }
    match Journal::open(dir.path(), &header()) {
        Err(JournalError::Mismatch(why)) => assert!(why.contains("journal format 1 with wire version 1"), "{why}"),
        other => panic!("{:?}", other.map(|j| j.len())),
    }
}

#[test]
fn entries_survive_reopening_in_order() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut j = Journal::open(dir.path(), &header()).unwrap();
        assert!(j.raw_entries().unwrap().is_empty());
        assert_eq!(j.replay(|_: Entry<u32>| panic!("nothing to replay")), Ok(0));
        j.append(&Entry::<u32>::Start { now: 1 }).unwrap();
        for i in 0..300u32 {
            j.append(&Entry::Msg {
                from: NodeId(i % 3),
                hops: i,
                now: 10 + i as u64,
                msg: i * 7,
            })
            .unwrap();
            if i % 50 == 0 {
                j.sync().unwrap();
            }
        }
        j.flush().unwrap();
    }
    let mut j = Journal::open(dir.path(), &header()).unwrap();
    assert_eq!(j.len(), 301);
    let old = j.raw_entries().unwrap();
    assert_eq!(old.len(), 301);
    // Replay hands over the same entries, decoded, in order.
    let mut replayed = vec![];
    assert_eq!(j.replay(|e: Entry<u32>| replayed.push(e)), Ok(301));
    assert_eq!(
        replayed
            .iter()
            .map(|e| postcard::to_stdvec(e).unwrap())
            .collect::<Vec<_>>(),
        old
    );
    assert!(matches!(
        Journal::decode::<u32>(&old[0]).unwrap(),
        Entry::Start { now: 1 }
    ));
    for (i, b) in old[1..].iter().enumerate() {
        match Journal::decode::<u32>(b).unwrap() {
            Entry::Msg { hops, msg, .. } => assert_eq!((hops, msg), (i as u32, i as u32 * 7)),
            e => panic!("entry {i}: {e:?}"),
        }
    }
    j.append(&Entry::<u32>::Restart { now: 5 }).unwrap();
    j.sync().unwrap();
    assert_eq!(j.len(), 302);
    assert!(Journal::decode::<u32>(&[0xff, 0xff]).is_err());
}

fn msg(i: u32) -> Entry<u32> {
    Entry::Msg {
        from: NodeId(0),
        hops: 0,
        now: i as u64,
        msg: i,
    }
}

fn replayed(j: &Journal) -> Vec<u32> {
    let mut seen = vec![];
    j.replay(|e: Entry<u32>| match e {
        Entry::Msg { msg, .. } => seen.push(msg),
        e => panic!("{e:?}"),
    })
    .unwrap();
    seen
}

/// Keys of a partition, decoded as sequence numbers.
fn keys(p: &fjall::PartitionHandle) -> Vec<u64> {
    p.iter()
        .map(|kv| u64::from_be_bytes(kv.unwrap().0[..8].try_into().unwrap()))
        .collect()
}

/// The image files in a journal's folder (their names).
fn image_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("image-"))
        .collect();
    v.sort();
    v
}

/// A checkpoint keeps its image and only the inputs after it, across reopening; a
/// second one replaces the first; numbering continues; what a checkpoint replaced
/// is deleted, and what a crash left undeleted is deleted at the next open.
#[test]
fn a_checkpoint_is_due_after_enough_inputs_and_an_images_worth_of_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path(), &header()).unwrap();
    assert!(!j.checkpoint_due(10));
    for i in 0..10 {
        j.append(&msg(i)).unwrap();
    }
    assert!(j.checkpoint_due(10), "no image yet: the count alone");
    assert!(!j.checkpoint_due(0), "0: never");
    let one = {
        let before = j.appended;
        j.append(&msg(10)).unwrap();
        j.appended - before
    };
    // An image the size of 100 inputs: ten more inputs are not enough, a hundred are.
    j.checkpoint(&vec![7u8; 100 * one as usize]).unwrap();
    for i in 0..99 {
        j.append(&msg(i)).unwrap();
        assert!(!j.checkpoint_due(10), "after {} inputs", i + 1);
    }
    j.append(&msg(99)).unwrap();
    assert!(j.checkpoint_due(10));
    // The same in the background: the bytes count from where the image was taken.
    let image = vec![7u8; 50 * one as usize];
    assert!(j.start_checkpoint(move || image).unwrap());
    for i in 0..20 {
        j.append(&msg(i)).unwrap();
    }
    j.poll_checkpoint(true).unwrap().expect("written");
    assert!(!j.checkpoint_due(10), "20 inputs since, 50 inputs' worth of image");
    for i in 0..30 {
        j.append(&msg(i)).unwrap();
    }
    assert!(j.checkpoint_due(10));
}

#[test]
fn a_checkpoint_keeps_its_image_and_only_the_inputs_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let big: Vec<u8> = (0..(3 << 20) + 17).map(|i| (i * 7 % 251) as u8).collect();
    {
        let mut j = Journal::open(dir.path(), &header()).unwrap();
        assert_eq!(j.image().unwrap(), None);
        for i in 0..100 {
            j.append(&msg(i)).unwrap();
        }
        assert_eq!(j.since_checkpoint(), 100);
        j.checkpoint(b"first").unwrap();
        assert_eq!(j.since_checkpoint(), 0);
        for i in 100..150 {
            j.append(&msg(i)).unwrap();
        }
        j.flush().unwrap();
    }
    {
        let mut j = Journal::open(dir.path(), &header()).unwrap();
        assert_eq!(j.image().unwrap().as_deref(), Some(&b"first"[..]));
        assert_eq!(replayed(&j), (100..150).collect::<Vec<_>>());
        assert_eq!((j.len(), j.since_checkpoint()), (150, 50));
        j.join_dropping();
        assert_eq!(keys(&j.part), (100..150).collect::<Vec<_>>());
        j.checkpoint(&big).unwrap();
        j.sync().unwrap();
    }
    let mut j = Journal::open(dir.path(), &header()).unwrap();
    assert_eq!(j.image().unwrap(), Some(big.clone()));
    assert!(replayed(&j).is_empty());
    assert_eq!((j.len(), j.since_checkpoint()), (150, 0));
    j.join_dropping();
    assert!(keys(&j.part).is_empty(), "the inputs before the image are deleted");
    assert_eq!(image_files(dir.path()), ["image-2"], "only the current image is kept");
    // A crash between a checkpoint's `checkpoint` file and the deletion of what it replaced:
    // an input and an image of before it are still there, and `dropped` says not.
    j.part
        .insert(3u64.to_be_bytes(), postcard::to_stdvec(&msg(3)).unwrap())
        .unwrap();
    std::fs::write(dir.path().join("image-1"), b"old").unwrap();
    std::fs::write(dir.path().join("image-0.tmp"), b"older").unwrap();
    // And a crash while the next one was being written (before and after its
    // rename): its files stay, unnamed, for the next checkpoint to overwrite.
    std::fs::write(dir.path().join("image-3.tmp"), b"next").unwrap();
    std::fs::write(dir.path().join("image-3"), b"next").unwrap();
    j.meta
        .insert(
            "dropped",
            postcard::to_stdvec(&Dropped { inputs: 0, images: 1 }).unwrap(),
        )
        .unwrap();
    j.ks.persist(fjall::PersistMode::SyncAll).unwrap();
    drop(j);
    let mut j = Journal::open(dir.path(), &header()).unwrap();
    assert_eq!(j.image().unwrap(), Some(big));
    assert!(replayed(&j).is_empty());
    j.join_dropping();
    assert!(keys(&j.part).is_empty());
    assert_eq!(image_files(dir.path()), ["image-2", "image-3", "image-3.tmp"]);
    j.checkpoint(b"third").unwrap();
    j.join_dropping();
    drop(j);
    let j = Journal::open(dir.path(), &header()).unwrap();
    assert_eq!(j.image().unwrap().as_deref(), Some(&b"third"[..]));
    assert_eq!(image_files(dir.path()), ["image-3"]);
    // The file that names the checkpoint, gone after inputs were deleted behind it:
    // refused (replay would begin at the wrong input).
    drop(j);
    std::fs::remove_file(dir.path().join(checkpoint::CHECKPOINT_FILE)).unwrap();
    let e = Journal::open(dir.path(), &header()).err().expect("refused").to_string();
    assert!(
        e.contains("is missing, but the inputs before input 150 were deleted"),
        "{e}"
    );
}

/// A checkpoint written in the background: inputs appended meanwhile stay after it;
/// the previous checkpoint stays current until it is on disk; no second one starts
/// while it is written; and one whose image cannot be built leaves the previous one
/// current and the journal working.
#[test]
fn a_checkpoint_in_the_background_covers_what_came_before_it_and_nothing_after() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut j = Journal::open(dir.path(), &header()).unwrap();
        for i in 0..10 {
            j.append(&msg(i)).unwrap();
        }
        j.checkpoint(b"first").unwrap();
        for i in 10..100 {
            j.append(&msg(i)).unwrap();
        }
        let (go, wait) = std::sync::mpsc::channel::<()>();
        assert!(j
            .start_checkpoint(move || {
                wait.recv().unwrap();
                b"second".to_vec()
            })
            .unwrap());
        for i in 100..130 {
            j.append(&msg(i)).unwrap();
        }
        j.flush().unwrap();
        assert!(j.checkpointing());
        assert!(!j.start_checkpoint(|| b"third".to_vec()).unwrap(), "one at a time");
        assert!(j.poll_checkpoint(false).unwrap().is_none(), "still being built");
        assert_eq!(j.since_checkpoint(), 120, "the first stays current");
        assert_eq!(j.image().unwrap().as_deref(), Some(&b"first"[..]));
        go.send(()).unwrap();
        let done = j.poll_checkpoint(true).unwrap().expect("written");
        assert_eq!((done.bytes, done.inputs_dropped), (6, 90));
        assert_eq!(j.since_checkpoint(), 30);
        // An image that cannot be built: an error, the second stays current.
        assert!(j.start_checkpoint(|| panic!("no image")).unwrap());
        assert!(j.poll_checkpoint(true).is_err());
        assert!(!j.checkpointing());
        j.append(&msg(130)).unwrap();
        j.sync().unwrap();
    }
    let j = Journal::open(dir.path(), &header()).unwrap();
    assert_eq!(j.image().unwrap().as_deref(), Some(&b"second"[..]));
    assert_eq!(replayed(&j), (100..131).collect::<Vec<_>>());
}

/// A `kill -9` while fjall created a partition left a folder with the tree's
/// `manifest` and no `levels`; fjall then failed every later open (`No such file or
/// directory`), and the node could never restart (seen on a cluster test, when
/// format 3 created partitions at every checkpoint; format 4 on creates them at a
/// journal's first open only, where a kill can still cut one off). Such a folder
/// holds nothing: open drops it, creates the partition again and goes on.
#[test]
fn a_partition_whose_creation_a_crash_cut_off_does_not_stop_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    drop(Journal::open(dir.path(), &header()).unwrap());
    // What a kill between lsm-tree's `manifest` and `levels` leaves of `inputs`.
    let parts = dir.path().join("partitions");
    let cut = parts.join("inputs");
    let saved = dir.path().join("saved");
    std::fs::create_dir_all(&saved).unwrap();
    for f in ["config", "manifest"] {
        std::fs::copy(cut.join(f), saved.join(f)).unwrap();
    }
    std::fs::remove_dir_all(&cut).unwrap();
    std::fs::create_dir_all(cut.join("segments")).unwrap();
    for f in ["config", "manifest"] {
        std::fs::copy(saved.join(f), cut.join(f)).unwrap();
    }
    let mut j = Journal::open(dir.path(), &header()).expect("a cut-off partition must not stop the open");
    for i in 0..10 {
        j.append(&msg(i)).unwrap();
    }
    j.sync().unwrap();
    drop(j);
    let mut j = Journal::open(dir.path(), &header()).unwrap();
    assert_eq!(replayed(&j), (0..10).collect::<Vec<_>>());
    j.checkpoint(b"image").unwrap();
    drop(j);
    let j = Journal::open(dir.path(), &header()).unwrap();
    assert_eq!(j.image().unwrap().as_deref(), Some(&b"image"[..]));
}

/// Replay crosses the reading thread's chunks in order, and a corrupt entry stops
/// it with an error after the entries before it.
#[test]
fn replay_reads_every_chunk_in_order_and_stops_at_a_corrupt_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path(), &header()).unwrap();
    for i in 0..5000u32 {
        j.append(&Entry::Msg {
            from: NodeId(0),
            hops: 0,
            now: i as u64,
            msg: i,
        })
        .unwrap();
    }
    j.flush().unwrap();
    let mut seen = vec![];
    let n = j.replay(|e: Entry<u32>| match e {
        Entry::Msg { msg, .. } => seen.push(msg),
        e => panic!("{e:?}"),
    });
    assert_eq!(n, Ok(5000));
    assert_eq!(seen, (0..5000).collect::<Vec<_>>());
    j.part.insert(5000u64.to_be_bytes(), [0xffu8, 0xff]).unwrap();
    let mut count = 0;
    let err = j.replay(|_: Entry<u32>| count += 1).unwrap_err();
    assert!(err.contains("input 5000 fails its checksum"), "{err}");
    assert_eq!(count, 5000);
}

/// Issue 53: a store file damaged or cut short loses inputs in silence (the store's
/// recovery takes a bad batch for a torn tail and drops everything after it), and
/// the node served the prefix. Inputs it had forced to disk are missing: it refuses.
#[test]
fn a_journal_that_lost_forced_inputs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path(), &header()).unwrap();
    for i in 0..100u32 {
        j.append(&msg(i)).unwrap();
    }
    j.sync().unwrap();
    // The last 40 forced inputs vanish (as the store's recovery drops them).
    for seq in 60..100u64 {
        j.part.remove(seq.to_be_bytes()).unwrap();
    }
    j.ks.persist(fjall::PersistMode::SyncAll).unwrap();
    drop(j);
    let err = Journal::open(dir.path(), &header()).err().expect("refused");
    let text = err.to_string();
    assert!(matches!(err, JournalError::Damaged(_)), "{text}");
    assert!(
        text.contains("ends at input 60, but inputs up to 100 were forced"),
        "{text}"
    );
    assert!(text.contains("restore the directory from a backup"), "{text}");
    // A damaged mark is refused too.
    std::fs::write(dir.path().join(SYNCED_FILE), [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]).unwrap();
    assert!(matches!(
        Journal::open(dir.path(), &header()),
        Err(JournalError::Damaged(_))
    ));
}

/// A gap in the middle (an input gone, the ones after it kept) stops the replay
/// with an error naming where; the entries before it are handed over first.
#[test]
fn a_gap_in_the_inputs_stops_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path(), &header()).unwrap();
    for i in 0..10u32 {
        j.append(&msg(i)).unwrap();
    }
    j.flush().unwrap();
    j.part.remove(4u64.to_be_bytes()).unwrap();
    let mut count = 0;
    let err = j.replay(|_: Entry<u32>| count += 1).unwrap_err();
    assert!(err.contains("skips from input 3 to input 5"), "{err}");
    assert_eq!(count, 4);
}

/// An image whose bytes changed fails its checksum.
#[test]
fn a_damaged_image_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path(), &header()).unwrap();
    j.append(&msg(1)).unwrap();
    j.checkpoint(&[7u8; 3000]).unwrap();
    let file = checkpoint::image_path(dir.path(), j.gen);
    std::fs::write(&file, [8u8; 3000]).unwrap();
    let e = j.image().unwrap_err().to_string();
    assert!(e.contains("fails its checksum"), "{e}");
    std::fs::write(&file, [7u8; 2000]).unwrap();
    let e = j.image().unwrap_err().to_string();
    assert!(e.contains("2000 bytes, its header says 3000"), "{e}");
    std::fs::remove_file(&file).unwrap();
    let e = j.image().unwrap_err().to_string();
    assert!(e.contains("is missing"), "{e}");
    // The file that names the checkpoint, damaged: the journal is refused.
    drop(j);
    let named = dir.path().join(checkpoint::CHECKPOINT_FILE);
    let mut b = std::fs::read(&named).unwrap();
    b[0] ^= 1;
    std::fs::write(&named, &b).unwrap();
    let e = Journal::open(dir.path(), &header()).err().expect("refused").to_string();
    assert!(e.contains("names the journal's checkpoint) is damaged"), "{e}");
    std::fs::write(&named, &b[..2]).unwrap();
    assert!(matches!(
        Journal::open(dir.path(), &header()),
        Err(JournalError::Damaged(_))
    ));
}
