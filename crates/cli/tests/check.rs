//! `meridian check`: histories from `sim`, Jepsen's format, damaged and cut-short files.

mod common;

use common::{run as meridian, stderr};

#[test]
fn test_cli_history_file_checks_and_corruption_is_reported() {
    let h = sim_history(&scratch("hist"), "2pc-occ", "200");
    let o = meridian(&["check", h.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("serializable=true"));
    let mut text = std::fs::read_to_string(&h).unwrap();
    text.push_str("{\"type\":\"txn\",\"id\":\"oops\"}\n");
    std::fs::write(&h, text).unwrap();
    let o = meridian(&["check", h.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("history line"), "{}", stderr(&o));
}

/// Issue 20: `meridian check` reads other tools' histories (here Jepsen EDN, detected
/// by its text), finds a write skew in one, and names the line and field of a
/// malformed one in a single error.
#[test]
fn test_cli_check_reads_a_jepsen_history() {
    let dir = std::env::temp_dir().join(format!("meridian-jepsen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let h = dir.join("history.edn");
    std::fs::write(
        &h,
        "{:type :invoke, :f :txn, :value [[:r :x nil] [:r :y nil] [:w :x 1]], :process 0, :time 10}\n\
         {:type :invoke, :f :txn, :value [[:r :x nil] [:r :y nil] [:w :y 1]], :process 1, :time 11}\n\
         {:type :ok, :f :txn, :value [[:r :x nil] [:r :y nil] [:w :x 1]], :process 0, :time 20}\n\
         {:type :ok, :f :txn, :value [[:r :x nil] [:r :y nil] [:w :y 1]], :process 1, :time 21}\n",
    )
    .unwrap();
    let o = meridian(&["check", h.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("serializable=false") && out.contains("G2:"), "{out}");
    assert!(out.contains("durable=unknown"), "{out}");
    std::fs::write(&h, "{:type :ok, :f :txn, :value [[:r 1]], :process 0}\n").unwrap();
    let o = meridian(&["check", h.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("line 1, field :value"), "{}", stderr(&o));
    let o = meridian(&["check", "--format", "xml", h.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown history format 'xml'"), "{}", stderr(&o));
}

/// A scratch directory for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("meridian-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A history of `txns` transactions of `protocol`, written by `sim --history` into
/// `dir`.
fn sim_history(dir: &std::path::Path, protocol: &str, txns: &str) -> std::path::PathBuf {
    let h = dir.join("h.jsonl");
    let o = meridian(&[
        "sim",
        "--protocol",
        protocol,
        "--txns",
        txns,
        "--history",
        h.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    h
}

/// Issue 52, 5: a history cut mid-record printed `serializable=unknown` in the text and
/// `"serializable":true` in the JSON. Every verdict field of the JSON is now `true`,
/// `false` or `"unknown"`, equal to the text, and an undecided claim exits 4.
#[test]
fn test_cli_check_json_says_unknown_where_the_text_does() {
    let dir = scratch("check-cut");
    let h = sim_history(&dir, "2pc-2pl", "50");
    let full = std::fs::read(&h).unwrap();
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, &full[..full.len() - 100]).unwrap();
    let o = meridian(&["check", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains("serializable=unknown") && text.contains("durable=unknown"),
        "{text}"
    );
    let o = meridian(&["check", "--json", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for f in ["serializable", "strict_serializable", "durable"] {
        assert_eq!(v[f], "unknown", "{f}: {v}");
    }
    assert_eq!(v["outcome"], "unknown");
    assert!(
        v["levels"].as_array().unwrap().iter().all(|l| l["holds"] == "unknown"),
        "{v}"
    );
    // The whole file: every verdict a boolean, and it holds.
    let o = meridian(&["check", "--json", h.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["serializable"].clone(), v["durable"].clone()),
        (true.into(), true.into()),
        "{v}"
    );
    assert_eq!(v["outcome"], "holds");
}

/// Issue 52, 6: an empty file printed `0 transactions: serializable=true`, exit 0 (a
/// Ctrl-C'd run leaves exactly such a file). Nothing checked is never a pass.
#[test]
fn test_cli_check_an_empty_history_is_nothing_checked() {
    let dir = scratch("check-empty");
    let e = dir.join("empty.jsonl");
    std::fs::write(&e, "").unwrap();
    let o = meridian(&["check", e.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing checked"));
    // A meta line and nothing else.
    let h = sim_history(&dir, "2pc-2pl", "50");
    let meta = std::fs::read_to_string(&h).unwrap().lines().next().unwrap().to_string();
    std::fs::write(&e, meta + "\n").unwrap();
    let o = meridian(&["check", e.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
}

/// Issue 52, 2: a transaction recorded twice was accepted (the last record won, and a
/// lost update could hide behind it). The file is refused, naming both lines.
#[test]
fn test_cli_check_refuses_a_transaction_recorded_twice() {
    let dir = scratch("check-dup");
    let h = sim_history(&dir, "2pc-2pl", "50");
    let text = std::fs::read_to_string(&h).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let dup = dir.join("dup.jsonl");
    let mut out = vec![lines[0], lines[1]];
    out.extend(&lines[1..]);
    std::fs::write(&dup, out.join("\n") + "\n").unwrap();
    let o = meridian(&["check", dup.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(stderr(&o).contains("recorded twice (lines 2 and 3)"), "{}", stderr(&o));
}

/// Issue 52, 3: operations without `:f :txn` were skipped, and the empty result passed.
/// As in Elle, an operation is a transaction by its value's shape; a file whose
/// operations are all something else is nothing checked.
#[test]
fn test_cli_check_takes_jepsen_transactions_by_their_shape() {
    let dir = scratch("check-shape");
    let h = dir.join("history.edn");
    // A lost update, with no :f at all.
    std::fs::write(
        &h,
        "{:type :invoke, :value [[:r :x nil] [:w :x 1]], :process 0, :time 10}\n\
         {:type :invoke, :value [[:r :x nil] [:w :x 2]], :process 1, :time 11}\n\
         {:type :ok, :value [[:r :x nil] [:w :x 1]], :process 0, :time 20}\n\
         {:type :ok, :value [[:r :x nil] [:w :x 2]], :process 1, :time 21}\n",
    )
    .unwrap();
    let o = meridian(&["check", h.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stdout));
    std::fs::write(
        &h,
        "{:type :invoke, :f :read, :value nil, :process 0}\n{:type :ok, :f :read, :value 3, :process 0}\n",
    )
    .unwrap();
    let o = meridian(&["check", h.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(5), "{}", String::from_utf8_lossy(&o.stdout));
}
