//! The container deployment: `scripts/docker-image.sh` builds the image (this test's
//! own `meridian` binary on an empty base), `meridian cluster compose` writes a 3-DC
//! HACommit cluster of six containers, and the tools container runs `cluster status
//! --wait` and `bench` inside the compose network. One server container is killed
//! and started again, then the whole cluster is taken down and brought up again (the
//! containers re-created); each time a bench runs and its history checks clean.
//!
//! Skipped, with the reason printed, where no Docker engine or no Compose tool answers
//! (set `MERIDIAN_REQUIRE_DOCKER=1` to make that a failure instead).

mod common;

use common::docker::{compose_cmd, image, run, unavailable};
use common::text;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A compose project: taken down (containers, network) on drop.
struct Project {
    compose: Vec<String>,
    name: String,
    file: PathBuf,
}

impl Project {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.compose[0]);
        c.args(&self.compose[1..])
            .args(["-p", &self.name, "-f"])
            .arg(&self.file)
            .args(args);
        c
    }
    /// Runs `meridian ARGS` in the tools container (in the cluster's directory).
    fn meridian(&self, args: &[&str]) -> Output {
        run(self.cmd(&["run", "--rm", "-T", "meridian"]).args(args))
    }
    fn ok(&self, args: &[&str]) {
        let o = run(&mut self.cmd(args));
        assert!(o.status.success(), "compose {args:?}: {}", text(&o));
    }
    /// `down`, retried: Docker may still be detaching a just-exited `run --rm`
    /// container from the project network, and then refuses to remove the network
    /// ("has active endpoints") although every container is gone. Seen in CI.
    fn down(&self) {
        let mut last = None;
        for _ in 0..10 {
            let o = run(&mut self.cmd(&["down", "--remove-orphans", "-t", "5"]));
            if o.status.success() {
                return;
            }
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            assert!(err.contains("active endpoints"), "compose down: {}", text(&o));
            last = Some(o);
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        panic!("compose down kept failing: {}", text(&last.expect("tried")));
    }
    fn wait_ready(&self) {
        let o = self.meridian(&["cluster", "status", "--cluster", "cluster.toml", "--wait", "120s"]);
        assert!(o.status.success(), "cluster status --wait: {}", text(&o));
    }
    /// A bench in the tools container; returns its report after checking that it and
    /// its history (checked again on the host) are clean.
    fn bench(&self, dir: &Path, history: &str) -> serde_json::Value {
        let o = self.meridian(&[
            "bench",
            "--cluster",
            "cluster.toml",
            "--workload",
            "bank",
            "--clients",
            "4",
            "--duration",
            "2s",
            "--settle",
            "2s",
            "--json",
            "--history",
            history,
        ]);
        assert!(o.status.success(), "bench: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        let line = out.lines().rev().find(|l| l.starts_with('{')).unwrap_or("");
        let r: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
        assert!(r["committed"].as_u64().unwrap_or(0) >= 10, "{r}");
        assert_eq!(r["check"]["anomalies"].as_array().map(Vec::len), Some(0), "{r}");
        assert!(r["check"]["durable"].as_bool().unwrap_or(false), "{r}");
        let chk = run(Command::new(env!("CARGO_BIN_EXE_meridian"))
            .arg("check")
            .arg(dir.join(history)));
        assert!(chk.status.success(), "meridian check {history}: {}", text(&chk));
        r
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = self.cmd(&["down", "--remove-orphans", "-t", "5"]).output();
    }
}

#[test]
fn compose_cluster_in_containers_runs_a_bench_and_survives_restarts() {
    if let Some(why) = unavailable() {
        if std::env::var_os("MERIDIAN_REQUIRE_DOCKER").is_some() {
            panic!("MERIDIAN_REQUIRE_DOCKER is set but Docker is unavailable: {why}");
        }
        eprintln!("skipped: {why}");
        return;
    }
    let pid = std::process::id();
    let image = image(&format!("meridian-test:{pid}"));
    let dir = tempfile::tempdir().expect("temp dir");
    // A /24 of its own for each run; another project's network may hold one already.
    let mut project = None;
    for k in 0..8u32 {
        let sub = format!("10.{}.{}.0/24", 200 + (pid + k) % 50, (pid / 50 + k * 37) % 250);
        let d = dir.path().join(format!("c{k}"));
        let o = run(Command::new(env!("CARGO_BIN_EXE_meridian")).args([
            "cluster",
            "compose",
            "--protocol",
            "hacommit",
            "--topology",
            "us3",
            "--no-delay",
            "--image",
            &image.0,
            "--subnet",
            &sub,
            "--dir",
            d.to_str().expect("utf-8 temp dir"),
        ]));
        assert!(o.status.success(), "cluster compose: {}", text(&o));
        let p = Project {
            compose: compose_cmd().expect("compose"),
            name: format!("meridian-test-{pid}-{k}"),
            file: d.join("compose.yml"),
        };
        let up = run(&mut p.cmd(&["up", "-d"]));
        if up.status.success() {
            project = Some((p, d));
            break;
        }
        let err = String::from_utf8_lossy(&up.stderr).to_string();
        assert!(err.contains("overlap"), "compose up: {}", text(&up));
        drop(p);
    }
    let (p, d) = project.expect("a free subnet in 8 tries");
    p.wait_ready();
    p.bench(&d, "h1.jsonl");
    // One server killed (SIGKILL) and started again: it replays its journal.
    p.ok(&["kill", "n2"]);
    p.ok(&["start", "n2"]);
    p.wait_ready();
    p.bench(&d, "h2.jsonl");
    // Every container removed and created again: the journals in the mounted
    // directory bring the whole cluster back.
    p.down();
    p.ok(&["up", "-d"]);
    p.wait_ready();
    p.bench(&d, "h3.jsonl");
}
