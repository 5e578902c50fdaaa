//! Experiments on real local clusters (one process per node on loopback, started by
//! `meridian cluster up`, driven by `meridian bench`'s code):
//!
//! - `cluster-loopback`: every protocol with no added delay, on one DC (`lan`, 8
//!   nodes) and on three (`us3`, 6 nodes): throughput and p50/p99 latency.
//! - `cluster-rc5`: every protocol on `rc5` with the topology's delays emulated, next
//!   to the simulator on the same topology, workload and clients: commit latency
//!   measured / simulated.

use super::{f, Ctx, Experiment};
use crate::bench::{run_bench, BenchArgs};
use crate::RunArgs;
use anyhow::{bail, Context, Result};
use meridian_protocols::PROTOCOLS;
use meridian_sim::SimReport;
use std::path::Path;

/// A base port with `n` free ports after it.
fn free_base(n: u16) -> u16 {
    let mut base = 17_000u16;
    loop {
        if (0..n).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
        base += n + 10;
    }
}

/// A local cluster for one run, stopped when dropped.
struct Up {
    dir: tempfile::TempDir,
}

impl Up {
    fn start(protocol: &str, topology: &str, delay: bool) -> Result<Up> {
        let dir = tempfile::tempdir()?;
        let exe = std::env::current_exe()?;
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["cluster", "up", "--protocol", protocol, "--topology", topology, "--dir"])
            .arg(dir.path())
            .args(["--base-port", &free_base(16).to_string()]);
        if !delay {
            cmd.arg("--no-delay");
        }
        let o = cmd.output().context("running cluster up")?;
        if !o.status.success() {
            bail!(
                "cluster up {protocol} on {topology} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        Ok(Up { dir })
    }
    fn file(&self) -> std::path::PathBuf {
        self.dir.path().join("cluster.toml")
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        if let Ok(exe) = std::env::current_exe() {
            let _ = std::process::Command::new(exe)
                .args(["cluster", "down", "--dir"])
                .arg(self.dir.path())
                .output();
        }
    }
}

fn bench_args(file: &Path, workload: &str, clients: u32, secs: u32, seed: u64) -> BenchArgs {
    BenchArgs {
        cluster: file.to_path_buf(),
        workload: workload.to_string(),
        clients,
        duration: format!("{secs}s"),
        client_dc: None,
        first_slot: 0,
        seed,
        settle: "2s".into(),
        drain: "30s".into(),
        history: None,
        json: false,
        save: None,
        baseline: None,
        metrics: None,
    }
}

/// `protocol` on a fresh local cluster of `topology` (its delays emulated if `delay`),
/// benched for `secs` s with the run flags' workload, clients and seed; the cluster is
/// stopped before this returns.
fn bench(args: &RunArgs, protocol: &str, topology: &str, delay: bool, secs: u32) -> Result<SimReport> {
    let up = Up::start(protocol, topology, delay)?;
    let out = run_bench(
        &bench_args(&up.file(), &args.workload, args.clients, secs, args.seed),
        false,
        None,
    )?;
    Ok(out.report)
}

/// This paper's experiments, as `--experiment list` shows them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "cluster-loopback",
        about: "real local clusters, no added delay: throughput and p50/p99 per protocol, one DC and three",
        run: |cx| loopback(cx),
        sim: false,
    },
    Experiment {
        name: "cluster-rc5",
        about: "real local clusters with rc5's delays emulated: commit latency next to the simulator's",
        run: |cx| rc5(cx),
        sim: false,
    },
];

fn loopback(cx: &mut Ctx) -> Result<()> {
    let args = cx.args;
    let secs = 5;
    cx.say(format!(
        "real clusters on loopback, no added delay: {} closed-loop clients, {secs} s each, workload {}",
        args.clients, args.workload
    ));
    cx.table(&[
        "protocol",
        "DCs",
        "nodes",
        "committed",
        "aborted",
        "tput/s",
        "p50 ms",
        "p99 ms",
        "check",
    ]);
    for topo in ["lan", "us3"] {
        for p in PROTOCOLS {
            let r = bench(args, p, topo, false, secs)?;
            let t = meridian_core::Topology::preset(topo).expect("preset");
            cx.row(vec![
                p.to_string(),
                t.num_dcs().to_string(),
                (t.num_dcs() as u32 * t.nodes_per_dc).to_string(),
                r.committed.to_string(),
                r.aborted.to_string(),
                f(r.throughput_tps, 1),
                f(r.latency_ms.p50, 2),
                f(r.latency_ms.p99, 2),
                if r.check.ok() { "ok" } else { "FAIL" }.into(),
            ]);
            cx.failed |= !r.check.ok();
        }
    }
    Ok(())
}

fn rc5(cx: &mut Ctx) -> Result<()> {
    let args = cx.args;
    let secs = 20;
    cx.say(format!(
        "rc5 with WAN delay emulated (one machine) vs the simulator: {} clients, workload {}, {secs} s per cluster run",
        args.clients, args.workload
    ));
    cx.table(&[
        "protocol",
        "committed",
        "real p50",
        "sim p50",
        "ratio",
        "real mean",
        "sim mean",
        "ratio",
        "check",
    ]);
    for p in PROTOCOLS {
        let real = bench(args, p, "rc5", true, secs)?;
        let topo = meridian_core::Topology::preset("rc5").expect("preset");
        let mut cfg = cx.cfg(&topo, &args.workload, 0, args.clients, &[])?;
        // As many transactions as the cluster committed, unscaled even in quick mode.
        cfg.txns = real.committed.max(200);
        cfg.seed = args.seed;
        let sim = cx.run(p, &cfg)?.report;
        let (a, b) = (&real.commit_latency_ms, &sim.commit_latency_ms);
        cx.row(vec![
            p.to_string(),
            real.committed.to_string(),
            f(a.p50, 1),
            f(b.p50, 1),
            f(a.p50 / b.p50.max(1e-9), 3),
            f(a.mean, 1),
            f(b.mean, 1),
            f(a.mean / b.mean.max(1e-9), 3),
            if real.check.ok() && sim.check.ok() {
                "ok"
            } else {
                "FAIL"
            }
            .into(),
        ]);
        cx.failed |= !real.check.ok();
    }
    Ok(())
}
