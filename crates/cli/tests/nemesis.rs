//! `meridian cluster nemesis` against containers: for HACommit, Replicated Commit and
//! CrossStitch in turn, a us3 compose cluster meets a 40-second schedule of real faults
//! (TX cut off by nftables, a server killed with SIGKILL and started again, a server
//! frozen with `docker pause`), and the bench's history must check clean with nothing
//! lost, while the DCs that kept a majority went on committing through the cut. Then
//! a fourth run is interrupted (SIGINT) during its cut: it must heal, take its
//! containers down and exit 130 with the bench's partial history.
//!
//! The container test is `#[ignore]`d (about three minutes): `.ci/run` runs it with
//! `--ignored`. It skips, with the reason printed, where no Docker engine answers or
//! the test is not root (the nemesis enters the containers' network namespaces);
//! `MERIDIAN_REQUIRE_DOCKER=1` makes that a failure instead.

mod common;

use common::docker::{image, run, unavailable};
use common::text;
use std::process::Command;

fn meridian(args: &[&str]) -> std::process::Output {
    run(Command::new(env!("CARGO_BIN_EXE_meridian")).args(args))
}

/// A compose directory for `protocol` (no Docker needed to write it).
fn compose(dir: &std::path::Path, protocol: &str, image: &str, subnet: &str) {
    let o = meridian(&[
        "cluster",
        "compose",
        "--protocol",
        protocol,
        "--topology",
        "us3",
        "--image",
        image,
        "--subnet",
        subnet,
        "--dir",
        dir.to_str().expect("utf-8 temp dir"),
    ]);
    assert!(o.status.success(), "cluster compose: {}", text(&o));
}

#[test]
fn a_bad_schedule_is_one_clear_error_before_anything_starts() {
    let d = tempfile::tempdir().expect("temp dir");
    let dir = d.path().join("c");
    compose(&dir, "hacommit", "meridian:latest", "10.213.7.0/24");
    let dir = dir.to_str().expect("utf-8");
    for (sched, why) in [
        ("kill:node=9,at=1s,for=1s", "node 9 does not exist"),
        ("partition:dc=LON,at=1s,for=1s", "unknown DC `LON`"),
        ("pause:node=1,at=35s,for=10s", "after the bench"),
        ("flood:at=1s,for=1s", "unknown fault `flood`"),
    ] {
        let o = meridian(&[
            "cluster",
            "nemesis",
            "--dir",
            dir,
            "--duration",
            "40s",
            "--schedule",
            sched,
        ]);
        assert_eq!(o.status.code(), Some(2), "{sched}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(why), "{sched}: {err}");
        assert_eq!(err.lines().count(), 1, "{sched}: one line: {err}");
    }
    // A directory that `cluster compose` did not write.
    let o = meridian(&["cluster", "nemesis", "--dir", d.path().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("has no compose.yml"),
        "{}",
        text(&o)
    );
}

#[test]
#[ignore = "about three minutes of containers; .ci/run runs it with --ignored"]
fn real_partition_kill_and_pause_lose_nothing_for_hacommit_rc_and_crossstitch() {
    let why = unavailable().or_else(|| {
        // SAFETY: geteuid has no preconditions.
        (unsafe { libc::geteuid() } != 0).then(|| "not root: the nemesis enters network namespaces".to_string())
    });
    if let Some(why) = why {
        if std::env::var_os("MERIDIAN_REQUIRE_DOCKER").is_some() {
            panic!("MERIDIAN_REQUIRE_DOCKER is set but the nemesis cannot run: {why}");
        }
        eprintln!("skipped: {why}");
        return;
    }
    let pid = std::process::id();
    let image = image(&format!("meridian-nemesis-test:{pid}"));
    let tmp = tempfile::tempdir().expect("temp dir");
    let schedule = "partition:dc=TX,at=5s,for=8s;kill:node=2,at=16s,for=6s;pause:node=4,at=25s,for=5s";
    for (i, protocol) in ["hacommit", "rc", "crossstitch"].into_iter().enumerate() {
        // A /24 of its own; another project's network may hold one already.
        let mut out = None;
        for k in 0..6u32 {
            let sub = format!(
                "10.{}.{}.0/24",
                200 + (pid + k) % 50,
                (pid / 50 + 11 * i as u32 + k * 37) % 250
            );
            let dir = tmp.path().join(format!("{protocol}-{k}"));
            compose(&dir, protocol, &image.0, &sub);
            let o = meridian(&[
                "cluster",
                "nemesis",
                "--dir",
                dir.to_str().expect("utf-8"),
                "--duration",
                "40s",
                "--schedule",
                schedule,
                "--json",
            ]);
            if !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("overlap") {
                continue;
            }
            out = Some((o, dir));
            break;
        }
        let (o, dir) = out.expect("a free subnet in 6 tries");
        assert!(o.status.success(), "{protocol}: nemesis: {}", text(&o));
        let stdout = String::from_utf8_lossy(&o.stdout);
        let line = stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or("");
        let r: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{protocol}: {e}: {}", text(&o)));
        let b = &r["bench"];
        assert!(b["committed"].as_u64().unwrap_or(0) >= 20, "{protocol}: {r}");
        assert_eq!(
            b["check"]["anomalies"].as_array().map(Vec::len),
            Some(0),
            "{protocol}: {r}"
        );
        assert_eq!(b["check"]["durable"].as_bool(), Some(true), "{protocol}: {r}");
        // Every fault was applied and healed, and NY and CA, a majority, committed
        // while TX was cut off.
        let steps = r["steps"].as_array().expect("steps");
        assert_eq!(steps.len(), 3, "{protocol}: {r}");
        assert!(
            steps.iter().all(|s| s["healed"].as_u64() > s["applied"].as_u64()),
            "{protocol}: {r}"
        );
        let h = r["history"].as_str().expect("history path");
        let (from, to) = (
            steps[0]["applied"].as_u64().unwrap_or(0),
            steps[0]["healed"].as_u64().unwrap_or(0),
        );
        let majority_commits = std::fs::read_to_string(h)
            .expect("the history")
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|t| t["type"] == "txn" && t["outcome"] == "committed" && t["start"].as_u64() > Some(0))
            .filter(|t| matches!(t["dc"].as_u64(), Some(0 | 1)))
            .filter(|t| t["end"].as_u64().is_some_and(|e| e >= from && e < to))
            .count();
        assert!(
            majority_commits > 0,
            "{protocol}: NY's and CA's clients committed nothing during the cut: {r}"
        );
        // The history checks clean on the host too.
        let chk = meridian(&["check", h]);
        assert!(chk.status.success(), "{protocol}: meridian check {h}: {}", text(&chk));
        // Nothing of the cluster is left behind: the nemesis took its project down.
        let label = format!("label=com.docker.compose.project.working_dir={}", dir.display());
        let left = run(Command::new("docker").args(["ps", "-aq", "--filter", &label]));
        assert!(
            String::from_utf8_lossy(&left.stdout).trim().is_empty(),
            "{protocol}: containers left: {}",
            text(&left)
        );
    }
    // Ctrl-C in the middle of a cut: healed, taken down, the partial history kept.
    let dir = tmp.path().join("interrupted");
    let sub = format!("10.{}.{}.0/24", 200 + (pid + 7) % 50, (pid / 50 + 200) % 250);
    compose(&dir, "hacommit", &image.0, &sub);
    let mut child = Command::new(env!("CARGO_BIN_EXE_meridian"))
        .args([
            "cluster",
            "nemesis",
            "--dir",
            dir.to_str().expect("utf-8"),
            "--duration",
            "60s",
            "--schedule",
        ])
        .arg("partition:dc=TX,at=3s,for=50s")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the nemesis");
    // Read stderr to its end on a thread (a pipe left unread would block the nemesis),
    // saying when the cut has started.
    let stderr = child.stderr.take().expect("piped");
    let (started_tx, started) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            if line.contains(": partition:dc=TX") {
                let _ = started_tx.send(());
            }
            all += &line;
            all.push('\n');
        }
        all
    });
    let cut = started.recv().is_ok();
    if !cut {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the cut never started: {}", reader.join().unwrap_or_default());
    }
    // SAFETY: a signal to the child this test started and has not reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let o = child.wait_with_output().expect("the nemesis ends");
    let err = reader.join().unwrap_or_default();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(130), "{out}\n{err}");
    assert!(out.contains("committed"), "the bench's partial report: {out}\n{err}");
    let label = format!("label=com.docker.compose.project.working_dir={}", dir.display());
    let left = run(Command::new("docker").args(["ps", "-aq", "--filter", &label]));
    assert!(
        String::from_utf8_lossy(&left.stdout).trim().is_empty(),
        "containers left: {}",
        text(&left)
    );
}
