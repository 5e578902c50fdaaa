//! A local cluster for the integration tests: `meridian cluster up` on loopback, one
//! `meridian server` process per node, benches against it, faults done to the
//! processes (`kill -9` and a restart, SIGSTOP).
#![allow(dead_code)] // each test binary uses part of it

use super::{free_base, text};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

pub fn meridian() -> Command {
    Command::new(env!("CARGO_BIN_EXE_meridian"))
}

/// `GET /metrics` on a local port: the whole HTTP answer.
pub fn get_metrics(port: u16) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

/// A running local cluster; stopped when dropped.
pub struct Local {
    pub dir: tempfile::TempDir,
    /// Servers this test restarted (children of the test process, reaped on drop).
    pub restarted: std::sync::Mutex<Vec<std::process::Child>>,
}

impl Local {
    pub fn up(protocol: &str, topology: &str, extra: &[&str]) -> Local {
        let dir = tempfile::tempdir().expect("temp dir");
        let base = free_base(15).to_string();
        let o = meridian()
            .args(["cluster", "up", "--protocol", protocol, "--topology", topology, "--dir"])
            .arg(dir.path())
            .args(["--base-port", &base])
            .args(extra)
            .output()
            .expect("run cluster up");
        assert!(o.status.success(), "cluster up {protocol}: {}", text(&o));
        Local {
            dir,
            restarted: Default::default(),
        }
    }
    pub fn file(&self) -> PathBuf {
        self.dir.path().join("cluster.toml")
    }
    /// `meridian cluster status --json`: whether it exited 0, and its JSON.
    pub fn status(&self) -> (bool, serde_json::Value) {
        let o = meridian()
            .args(["cluster", "status", "--json", "--cluster"])
            .arg(self.file())
            .output()
            .expect("status");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
        (o.status.success(), v)
    }
    pub fn pid(&self, node: u32) -> String {
        let pids = std::fs::read_to_string(self.dir.path().join("pids")).expect("pids");
        pids.lines().nth(node as usize).expect("pid").trim().to_string()
    }
    pub fn bench(&self, args: &[&str]) -> std::process::Child {
        meridian()
            .arg("bench")
            .arg("--cluster")
            .arg(self.file())
            .args(["--json", "--history"])
            .arg(self.dir.path().join("history.jsonl"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run bench")
    }
    /// `bench --workload W` with `clients` clients for `duration`, then `settle`.
    pub fn workload_bench(&self, workload: &str, clients: u32, duration: &str, settle: &str) -> std::process::Child {
        let clients = clients.to_string();
        self.bench(&[
            "--clients",
            &clients,
            "--duration",
            duration,
            "--workload",
            workload,
            "--settle",
            settle,
        ])
    }
    /// [`Local::workload_bench`] of `bank`.
    pub fn bank_bench(&self, clients: u32, duration: &str, settle: &str) -> std::process::Child {
        self.workload_bench("bank", clients, duration, settle)
    }
    /// Waits `after` (into a bench), then `kill -9` of server `node`; returns when it was
    /// killed (Unix ns).
    pub fn kill9_after(&self, node: u32, after: Duration) -> u64 {
        std::thread::sleep(after);
        signal("-9", &self.pid(node));
        unix_ns()
    }
    /// `kill -9` of server `node` 1.5 s into a bench, and its restart with extra
    /// environment variables `env` 0.7 s later.
    pub fn kill9_and_restart(&self, node: u32, env: &[(&str, &str)]) {
        self.kill9_after(node, Duration::from_millis(1500));
        std::thread::sleep(Duration::from_millis(700));
        self.restart_with(node, env);
    }
    /// Restarts server `node` (its old process is gone) and records the new pid.
    pub fn restart(&self, node: u32) {
        self.restart_with(node, &[]);
    }
    /// Restarts server `node` with extra environment variables.
    pub fn restart_with(&self, node: u32, env: &[(&str, &str)]) {
        self.restart_full(node, env, &[]);
    }
    /// Restarts server `node` with extra environment variables and arguments.
    pub fn restart_full(&self, node: u32, env: &[(&str, &str)], args: &[&str]) {
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.path().join(format!("n{node}.log")))
            .expect("log");
        let child = meridian()
            .args(["server", "--cluster"])
            .arg(self.file())
            .args(["--node", &node.to_string()])
            .args(args)
            .envs(env.iter().copied())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("restart server");
        let path = self.dir.path().join("pids");
        let pids = std::fs::read_to_string(&path).expect("pids");
        let new: String = pids
            .lines()
            .enumerate()
            .map(|(i, p)| {
                if i == node as usize {
                    format!("{}\n", child.id())
                } else {
                    format!("{p}\n")
                }
            })
            .collect();
        std::fs::write(path, new).expect("pids");
        self.restarted.lock().unwrap().push(child);
    }
    /// The last lines of every node's log (for a failure's message).
    pub fn log_tails(&self) -> String {
        let mut out = String::new();
        for node in 0.. {
            if !self.dir.path().join(format!("n{node}.log")).exists() {
                break;
            }
            let log = self.log(node);
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            out += &format!("--- n{node}.log (last 15 lines)\n{tail}\n");
        }
        out
    }
    /// The cluster's time origin (Unix ns) from its file: history times are relative
    /// to it.
    pub fn epoch_ns(&self) -> u64 {
        let file = std::fs::read_to_string(self.file()).expect("cluster file");
        file.lines()
            .find_map(|l| l.strip_prefix("epoch_ns = "))
            .and_then(|v| v.trim().parse().ok())
            .expect("epoch_ns in the cluster file")
    }
    pub fn log(&self, node: u32) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("n{node}.log"))).unwrap_or_default()
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        let _ = meridian()
            .args(["cluster", "down", "--dir"])
            .arg(self.dir.path())
            .output();
    }
}

/// Now, in Unix ns (the clock of a cluster file's `epoch_ns`).
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as u64
}

pub fn signal(sig: &str, pid: &str) {
    let s = Command::new("kill").args([sig, pid]).status().expect("kill");
    assert!(s.success(), "kill {sig} {pid}");
}

/// Waits for a bench, asserts it passed its check, returns its report.
pub fn finish(c: &Local, b: std::process::Child) -> serde_json::Value {
    let o = b.wait_with_output().expect("bench");
    assert!(o.status.success(), "bench failed: {}\n{}", text(&o), c.log_tails());
    let stdout = String::from_utf8_lossy(&o.stdout);
    let r: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    // The history file checks clean on its own too.
    let chk = meridian()
        .arg("check")
        .arg(c.dir.path().join("history.jsonl"))
        .output()
        .expect("check");
    // Exit 4 only where a server that is down left no final state: durability is
    // then not decided for that replica, and `check` says so rather than pass.
    let undecided_dead = chk.status.code() == Some(4)
        && String::from_utf8_lossy(&chk.stderr).trim() == "not decided: durability"
        && String::from_utf8_lossy(&chk.stdout).contains("unknown: no final state recorded for replica(s)");
    assert!(chk.status.success() || undecided_dead, "meridian check: {}", text(&chk));
    r
}

/// Committed transactions of a bench's history whose end falls in `[from, to)` (cluster
/// time), by the DC of their client.
pub fn commits_between(c: &Local, from: u64, to: u64) -> Vec<u64> {
    let text = std::fs::read_to_string(c.dir.path().join("history.jsonl")).expect("history");
    let mut by_dc = vec![0u64; 3];
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).expect("history line");
        if r["type"] != "txn" || r["outcome"] != "committed" || r["program"] == "(earlier run)" {
            continue;
        }
        let (Some(end), Some(dc)) = (r["end"].as_u64(), r["dc"].as_u64()) else {
            continue;
        };
        if (from..to).contains(&end) {
            by_dc[dc as usize] += 1;
        }
    }
    by_dc
}
