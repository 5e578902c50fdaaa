//! The history file reader (jsonl.rs): round trips, records in another field order,
//! files cut short, many batches on several threads, duplicate records, and the
//! checker's reading without the replicas' values.

use super::tests::{hist, kinds, txn, v};
use super::*;

#[test]
fn jsonl_round_trip_and_errors() {
    let h = hist(vec![txn(1, &[("x", None)], &["x"])], &[("x", &[v(1, 0)])]);
    let mut buf = vec![];
    jsonl::write(&h, &mut buf).unwrap();
    let text = String::from_utf8(buf.clone()).unwrap();
    assert!(text.starts_with("{\"type\":\"meta\""), "{text}");
    assert_eq!(jsonl::read(&buf[..]).unwrap(), h);
    // Records whose tag is not first (fields in another order, as another writer may
    // put them) read the same: the fast path for `write()`'s lines changes nothing.
    let shuffled: String = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let l = serde_json::to_string(&v).unwrap(); // keys sorted: `type` late
            assert!(!l.starts_with("{\"type\""), "{l}");
            l + "\n"
        })
        .collect();
    assert_eq!(jsonl::read(shuffled.as_bytes()).unwrap(), h);
    let err = jsonl::read(&b"{\"type\":\"meta\",\"protocol\":1}\n"[..]).unwrap_err();
    assert!(err.to_string().starts_with("history line 1:"), "{err}");
    assert!(matches!(jsonl::read(&b"\n"[..]), Err(jsonl::HistoryError::NoMeta)));
}

#[test]
fn a_history_cut_short_is_incomplete_not_anomalous() {
    // T2 read T1's x, but the file was cut before T1's line and the replicas'.
    let full = hist(vec![txn(1, &[], &["x"]), txn(2, &[("x", Some(v(1, 0)))], &[])], &[]);
    let mut buf = vec![];
    jsonl::write(&full, &mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.remove(1); // T1's line is missing (the file lists transactions out of order)
    let cut_at = lines[1].len() / 2;
    let cut = format!(
        "{}\n{}\n{}",
        lines[0],
        lines[1],
        &lines[2][..cut_at.min(lines[2].len() / 2)]
    );
    let (h, why) = jsonl::read_lenient(cut.as_bytes()).unwrap();
    assert!(why.unwrap().contains("cut short"));
    assert!(jsonl::read(cut.as_bytes()).is_err(), "read() refuses a cut file");
    let r = check_incomplete(&h);
    assert!(r.ok(), "{:?}", r.anomalies);
    assert!(
        r.unknown.iter().any(|u| u.to_string().contains("does not list")),
        "{:?}",
        r.unknown
    );
    assert!(r.order_unknown());
    // The same history checked as complete: T2 read a write nobody made.
    assert_eq!(kinds(&h), vec![Kind::G1a]);
}

/// The reader parses batches of lines on several threads: a history of many batches
/// reads back in order and equal, its long keys shared (one allocation per key, whichever
/// thread decoded it; short ones are held inline),
/// a record that ends early is a cut only at the end, and line numbers in errors are
/// the file's, across batches.
#[test]
fn a_large_history_reads_back_in_order_with_its_keys_shared() {
    let n = 9_000; // over four batches of 2048 lines
                   // Longer than a key held inline, so that each is an allocation.
    let keys = [
        "a-key-longer-than-22-bytes",
        "b-key-longer-than-22-bytes",
        "c-key-longer-than-22-bytes",
    ];
    let txns: Vec<TxnRecord> = (1..=n)
        .map(|c| txn(c, &[(keys[c as usize % 3], None)], &[keys[(c as usize + 1) % 3]]))
        .collect();
    let h = hist(txns, &[]);
    let mut buf = vec![];
    jsonl::write(&h, &mut buf).unwrap();
    let back = jsonl::read(&buf[..]).unwrap();
    assert_eq!(back, h);
    let distinct: std::collections::HashSet<*const u8> = back
        .txns
        .iter()
        .flat_map(|t| t.reads.iter().map(|r| r.key.as_bytes().as_ptr()))
        .collect();
    assert_eq!(distinct.len(), 3, "{} allocations for 3 keys", distinct.len());

    let text = String::from_utf8(buf).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // A record cut in the middle of the file is an error naming its line.
    let mut bad = lines.clone();
    let half = &lines[5000][..lines[5000].len() / 2];
    bad[5000] = half;
    let e = jsonl::read_lenient(bad.join("\n").as_bytes()).unwrap_err().to_string();
    assert!(e.contains("line 5001"), "{e}");
    // At the end it is a cut.
    let mut cut = lines.clone();
    let last = cut.len() - 1;
    let half = &lines[last][..lines[last].len() / 2];
    cut[last] = half;
    let (h2, why) = jsonl::read_lenient(cut.join("\n").as_bytes()).unwrap();
    assert!(why.unwrap().contains(&format!("line {}", last + 1)));
    assert_eq!(
        h2.txns.len() + h2.replicas.len(),
        lines.len() - 2,
        "all but the meta and the cut line"
    );
    // A transaction recorded twice, far apart: both lines named.
    let mut dup = lines.clone();
    dup.push(lines[7]);
    let e = jsonl::read(dup.join("\n").as_bytes()).unwrap_err().to_string();
    assert!(e.contains(&format!("lines 8 and {}", lines.len() + 1)), "{e}");
}

/// The checker's reader drops the replicas' values (no verdict uses them) and keeps
/// everything else: the same history with every value `None`, and the same verdict.
#[test]
fn the_checkers_reader_keeps_all_but_the_values() {
    let h = hist(
        vec![
            txn(1, &[("x", None)], &["x", "y"]),
            txn(2, &[("y", Some(v(1, 1)))], &["x"]),
        ],
        &[("x", &[v(1, 0), v(2, 0)]), ("y", &[v(1, 1)])],
    );
    assert!(h
        .replicas
        .iter()
        .flat_map(|r| r.keys.values())
        .all(|s| s.value.is_some()));
    let mut buf = vec![];
    jsonl::write(&h, &mut buf).unwrap();
    let (back, cut) = jsonl::read_for_check(&buf[..]).unwrap();
    assert!(cut.is_none());
    let mut expect = h.clone();
    for r in &mut expect.replicas {
        for s in r.keys.values_mut() {
            s.value = None;
        }
    }
    assert_eq!(back, expect);
    assert_eq!(check(&back), check(&h));
    // Vectors hold no spare room (read from JSON they grow by doubling from four).
    assert!(back
        .txns
        .iter()
        .all(|t| t.reads.capacity() == t.reads.len() && t.writes.capacity() == t.writes.len()));
    assert!(back
        .replicas
        .iter()
        .flat_map(|r| r.keys.values())
        .all(|s| s.versions.capacity() == s.versions.len()));
    // A replica line with its fields in another order reads the same way.
    let text = String::from_utf8(buf).unwrap();
    let sorted: String = text
        .lines()
        .map(|l| serde_json::to_string(&serde_json::from_str::<serde_json::Value>(l).unwrap()).unwrap() + "\n")
        .collect();
    assert_eq!(jsonl::read_for_check(sorted.as_bytes()).unwrap().0, back);
    // And with a replica's keys listed out of order (another writer's map).
    let replica_line = text.lines().find(|l| l.contains("\"type\":\"replica\"")).unwrap();
    let v: serde_json::Value = serde_json::from_str(replica_line).unwrap();
    let keys: Vec<String> = v["keys"]
        .as_object()
        .unwrap()
        .iter()
        .rev()
        .map(|(k, s)| format!("{}:{}", serde_json::to_string(k).unwrap(), s))
        .collect();
    assert_eq!(keys.len(), 2);
    let reversed = format!(
        "{{\"type\":\"replica\",\"node\":{},\"keys\":{{{}}}}}",
        v["node"],
        keys.join(",")
    );
    let text2 = text.replace(replica_line, &reversed);
    assert_ne!(text2, text);
    assert_eq!(jsonl::read_for_check(text2.as_bytes()).unwrap().0, back);
}
