//! Issue 53, 1: a damaged journal never loses acknowledged commits in silence. For
//! every protocol with a journal: a `--durable` cluster runs a bench, one server is
//! killed with SIGKILL, and its data directory is kept aside. Then, one at a time, the
//! journal file gets 16 bytes flipped at its start, its middle and its end, or is cut
//! to half its written length, and the server is started on the damaged copy the
//! documented way (`meridian server --cluster F --node N`). Each start must either
//! refuse (exit non-zero with one error that names the directory) or replay at least
//! every input the journal had forced to disk (`synced-through`): never serve a
//! prefix of what it acknowledged.

mod common;

use common::cluster::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The server whose journal is damaged (us3: 6 servers; the last one of DC TX).
const NODE: u32 = 4;

/// How one start on a damaged copy ended.
#[derive(Debug)]
enum Start {
    /// Exited with this code and log.
    Refused(Option<i32>, String),
    /// Replayed this many inputs (the log line's `inputs=`) and served.
    Replayed(u64),
    /// Served without replaying (its journal read as empty).
    Fresh(String),
}

/// The number after `inputs=` on the log's replay line.
fn replayed_inputs(log: &str) -> Option<u64> {
    let line = log.lines().find(|l| l.contains("replayed the journal"))?;
    let at = line.find("inputs=")? + "inputs=".len();
    line[at..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// Starts server `NODE` of `c` on whatever its data directory holds now, waits (60 s
/// deadline) until it exits or serves, and stops it.
fn start_once(c: &Local) -> Start {
    start_once_with(c, &[])
}

/// [`start_once`] with extra arguments.
fn start_once_with(c: &Local, args: &[&str]) -> Start {
    let log_path = c.dir.path().join("damaged-start.log");
    let log = std::fs::File::create(&log_path).expect("log");
    let mut child = meridian()
        .args(["server", "--cluster"])
        .arg(c.file())
        .args(["--node", &NODE.to_string()])
        .args(args)
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .expect("start server");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(status) = child.try_wait().expect("wait") {
            return Start::Refused(status.code(), text);
        }
        if text.contains("serving node") {
            let _ = child.kill();
            let _ = child.wait();
            return match replayed_inputs(&text) {
                Some(n) => Start::Replayed(n),
                None => Start::Fresh(text),
            };
        }
        assert!(Instant::now() < deadline, "server neither served nor exited:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The log of a start that must have been refused (exit non-zero); `what` names the
/// case in the failure's message.
fn refused(start: Start, what: &str) -> String {
    match start {
        Start::Refused(code, log) => {
            assert_ne!(code, Some(0), "{what}: refused with exit 0:\n{log}");
            log
        }
        other => panic!("{what}: not refused: {other:?}"),
    }
}

/// The journal file to damage: the largest file under `journals/`.
fn journal_file(data: &Path) -> PathBuf {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(data.join("journals"))
        .expect("journals dir")
        .map(|e| e.expect("entry").path())
        .map(|p| (std::fs::metadata(&p).map_or(0, |m| m.len()), p))
        .collect();
    files.sort();
    files.pop().expect("a journal file").1
}

/// Inputs the journal had forced to disk when the server was killed.
fn synced_through(data: &Path) -> u64 {
    let b = std::fs::read(data.join("synced-through")).expect("synced-through");
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// The damages, by name: each rewrites the journal file's bytes.
const DAMAGES: [&str; 4] = [
    "flip at the start",
    "flip in the middle",
    "flip at the end",
    "cut to half",
];

fn damage(bytes: &mut Vec<u8>, how: &str) {
    // The file is preallocated: what was written ends at the last non-zero byte.
    let end = bytes.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    assert!(end > 64, "the journal holds {end} bytes");
    let mut flip = |at: usize| {
        for b in &mut bytes[at..(at + 16).min(end)] {
            *b ^= 0xff;
        }
    };
    match how {
        "flip at the start" => flip(0),
        "flip in the middle" => flip(end / 2),
        "flip at the end" => flip(end - 16),
        "cut to half" => bytes.truncate(end / 2),
        _ => unreachable!("{how}"),
    }
}

/// Read committed (hacommit-rc) breaks the bank's invariant by design.
fn workload_of(protocol: &str) -> &'static str {
    if protocol == "hacommit-rc" {
        "ycsb"
    } else {
        "bank"
    }
}

/// `kill -9` of server `NODE`; returns when its process is gone (30 s deadline).
fn kill_node(c: &Local) {
    signal("-9", &c.pid(NODE));
    let gone = Instant::now() + Duration::from_secs(30);
    while Path::new(&format!("/proc/{}", c.pid(NODE))).exists() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (60 s deadline) until every server of `c` answers.
fn wait_all_up(c: &Local) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !c.status().0 {
        assert!(Instant::now() < deadline, "a server never came up:\n{}", c.log_tails());
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn damaged_journal(protocol: &str) {
    let c = Local::up(protocol, "us3", &["--no-delay", "--durable"]);
    let b = c.workload_bench(workload_of(protocol), 4, "3s", "1s");
    let _ = finish(&c, b);
    // Its process is gone before its files are copied.
    kill_node(&c);
    let data = c.dir.path().join(format!("data/n{NODE}"));
    let pristine = c.dir.path().join("pristine");
    copy_dir(&data, &pristine);
    let forced = synced_through(&pristine);
    assert!(forced > 0, "{protocol}: nothing forced to disk");
    let restore = || {
        std::fs::remove_dir_all(&data).expect("rm data");
        copy_dir(&pristine, &data);
    };
    match start_once(&c) {
        Start::Replayed(n) => assert!(n >= forced, "{protocol}: the intact journal replays {n} < {forced}"),
        other => panic!("{protocol}: the intact journal did not replay: {other:?}"),
    }
    for how in DAMAGES {
        restore();
        let file = journal_file(&data);
        let mut bytes = std::fs::read(&file).expect("read journal");
        damage(&mut bytes, how);
        std::fs::write(&file, &bytes).expect("write journal");
        match start_once(&c) {
            Start::Refused(code, log) => {
                assert_ne!(code, Some(0), "{protocol}, {how}: refused with exit 0:\n{log}");
                assert!(
                    log.contains(&format!("data/n{NODE}")),
                    "{protocol}, {how}: the error does not name the directory:\n{log}"
                );
            }
            Start::Replayed(n) => assert!(
                n >= forced,
                "{protocol}, {how}: served a prefix: replayed {n} inputs of {forced} forced to disk"
            ),
            Start::Fresh(log) => panic!("{protocol}, {how}: served as new, the journal ignored:\n{log}"),
        }
    }
}

#[test]
fn damaged_journal_2pc_2pl() {
    damaged_journal("2pc-2pl");
}
#[test]
fn damaged_journal_2pc_occ() {
    damaged_journal("2pc-occ");
}
#[test]
fn damaged_journal_rc() {
    damaged_journal("rc");
}
#[test]
fn damaged_journal_replog() {
    damaged_journal("replog");
}
#[test]
fn damaged_journal_hacommit() {
    damaged_journal("hacommit");
}
#[test]
fn damaged_journal_hacommit_rc() {
    damaged_journal("hacommit-rc");
}
#[test]
fn damaged_journal_crossstitch() {
    damaged_journal("crossstitch");
}
#[test]
fn damaged_journal_pc_2pl() {
    damaged_journal("pc-2pl");
}
#[test]
fn damaged_journal_pc_occ() {
    damaged_journal("pc-occ");
}
#[test]
fn damaged_journal_hier_lock() {
    damaged_journal("hier-lock");
}
#[test]
fn damaged_journal_hier_ts() {
    damaged_journal("hier-ts");
}
#[test]
fn damaged_journal_2pc_deferred() {
    damaged_journal("2pc-deferred");
}
#[test]
fn damaged_journal_catenae() {
    damaged_journal("catenae");
}

/// Issue 53, 1: a later bench does not trust the servers' current state for earlier
/// runs. A `--durable` 2PC cluster runs a bench; then server `NODE` is killed and
/// comes back with nothing (its data directory and its started marker removed, as
/// after a disk swap: it starts as new and serves). The next bench must find that
/// commits acknowledged to the first one are gone, from the ledger the first bench left
/// (`run/acknowledged.jsonl`); before the ledger it rebuilt earlier runs from what the
/// servers held and passed with `durable=true`.
#[test]
fn a_later_bench_finds_an_earlier_acknowledged_commit_gone() {
    let c = Local::up("2pc-2pl", "us3", &["--no-delay", "--durable"]);
    // ycsb: no invariant of its own to break, so only the durability check can fail.
    let first = finish(&c, c.workload_bench("ycsb", 4, "3s", "1s"));
    assert!(first["committed"].as_u64().unwrap_or(0) > 0, "{first}");
    let ledger = c.dir.path().join("run/acknowledged.jsonl");
    assert!(ledger.exists(), "the first bench left no ledger");
    signal("-9", &c.pid(NODE));
    let gone = Instant::now() + Duration::from_secs(30);
    while Path::new(&format!("/proc/{}", c.pid(NODE))).exists() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_dir_all(c.dir.path().join(format!("data/n{NODE}"))).expect("rm data");
    std::fs::remove_file(c.dir.path().join(format!("run/n{NODE}.started"))).expect("rm marker");
    c.restart(NODE);
    // Wait (60 s deadline) until every server answers again.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !c.status().0 {
        assert!(
            Instant::now() < deadline,
            "the emptied server never came up:\n{}",
            c.log_tails()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = c
        .workload_bench("ycsb", 2, "1s", "1s")
        .wait_with_output()
        .expect("bench");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "the check passed:\n{err}");
    assert!(
        err.contains(&format!("but replica n{NODE} lacks it")),
        "the check failed, but not on the emptied server:\n{err}"
    );
}

/// Issue 53, 1: a bench killed outright (SIGKILL, no report) has already written its
/// acknowledged commits to the ledger, a second at a time, so the next bench still
/// holds the servers to them. Before, the ledger was written once, at the run's end,
/// and a killed bench left nothing.
#[test]
fn a_bench_killed_outright_leaves_its_acknowledged_commits_in_the_ledger() {
    let c = Local::up("2pc-2pl", "us3", &["--no-delay", "--durable"]);
    let mut b = c.workload_bench("ycsb", 4, "600s", "1s");
    let ledger = c.dir.path().join("run/acknowledged.jsonl");
    let lines = || std::fs::read_to_string(&ledger).map_or(0, |t| t.lines().count());
    // Header and at least one acknowledged commit (60 s deadline).
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = b.id().to_string();
    signal("-9", &pid);
    let _ = b.wait();
    assert!(
        lines() >= 2,
        "a bench running for a minute left no acknowledged commit in the ledger"
    );
    // The next bench reads them back and finds every one on the servers.
    let next = finish(&c, c.workload_bench("ycsb", 2, "1s", "1s"));
    assert!(next["check"]["durable"].as_bool().unwrap_or(false), "{next}");
}

/// Issue 53, 1: where the protocol keeps other copies, `meridian server --resync`
/// rebuilds a node whose journal is damaged from its peers. The damaged start is
/// refused and names `--resync`; the `--resync` start moves the directory aside (kept)
/// and serves; the next bench checks clean, which (through the ledger of acknowledged
/// commits) includes every commit acknowledged before the damage on the rebuilt node.
fn resync_after_damage(protocol: &str) {
    let c = Local::up(protocol, "us3", &["--no-delay", "--durable"]);
    let _ = finish(&c, c.workload_bench(workload_of(protocol), 4, "3s", "1s"));
    kill_node(&c);
    let data = c.dir.path().join(format!("data/n{NODE}"));
    let file = journal_file(&data);
    let mut bytes = std::fs::read(&file).expect("read journal");
    damage(&mut bytes, "flip in the middle");
    std::fs::write(&file, &bytes).expect("write journal");
    let log = refused(start_once(&c), &format!("{protocol}, the damaged journal"));
    assert!(
        log.contains("--resync"),
        "{protocol}: the refusal does not name --resync:\n{log}"
    );
    c.restart_full(NODE, &[], &["--resync"]);
    wait_all_up(&c);
    let log = c.log(NODE);
    assert!(log.contains("moved the journal aside"), "{protocol}: {log}");
    let aside: Vec<String> = std::fs::read_dir(c.dir.path().join("data"))
        .expect("data dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("n{NODE}.resync-")))
        .collect();
    assert_eq!(aside.len(), 1, "{protocol}: the damaged directory was not kept aside");
    let r = finish(&c, c.workload_bench(workload_of(protocol), 4, "3s", "3s"));
    assert!(r["committed"].as_u64().unwrap_or(0) > 0, "{protocol}: {r}");
}

#[test]
fn resync_after_damage_hacommit() {
    resync_after_damage("hacommit");
}
#[test]
fn resync_after_damage_hacommit_rc() {
    resync_after_damage("hacommit-rc");
}
#[test]
fn resync_after_damage_crossstitch() {
    resync_after_damage("crossstitch");
}

/// `--resync` is refused for a protocol whose nodes need their own log, and leaves the
/// data directory where it was; and for a node that shows no sign of having run.
#[test]
fn resync_refused_where_a_node_needs_its_log() {
    let c = Local::up("2pc-2pl", "us3", &["--no-delay", "--durable"]);
    kill_node(&c);
    let log = refused(start_once_with(&c, &["--resync"]), "--resync of 2pc-2pl");
    assert!(
        log.contains("--resync: 2pc-2pl cannot rebuild a node from its peers"),
        "{log}"
    );
    assert!(c.dir.path().join(format!("data/n{NODE}")).exists());
    // A forgetful protocol's node with no sign of having run (its data directory and
    // started marker gone, as with a replaced disk that took `run/` too) is refused
    // too: started as new, it would serve as a replica that never voted.
    let c = Local::up("hacommit", "us3", &["--no-delay", "--durable"]);
    kill_node(&c);
    std::fs::remove_dir_all(c.dir.path().join(format!("data/n{NODE}"))).expect("rm data");
    std::fs::remove_file(c.dir.path().join(format!("run/n{NODE}.started"))).expect("rm marker");
    let log = refused(
        start_once_with(&c, &["--resync"]),
        "--resync of a node with no sign of having run",
    );
    assert!(log.contains("shows no sign of having run"), "{log}");
}
