//! Real clusters: one `meridian server` process per node on loopback, started with
//! `meridian cluster up`, driven by `meridian bench`, checked by the history checker:
//! every protocol end to end, and the operator's surface (status, metrics, bad files
//! and flags). Faults done to the processes are in `cluster_faults.rs`.

mod common;

use common::cluster::*;
use common::{free_base, text};
use std::path::Path;
use std::time::Duration;

fn e2e(protocol: &str) {
    let c = Local::up(protocol, "us3", &["--no-delay"]);
    // Read committed allows lost updates, which break the bank's invariant.
    let workload = if protocol.ends_with("-rc") { "ycsb" } else { "bank" };
    let r = finish(&c, c.workload_bench(workload, 6, "2s", "1s"));
    assert_eq!(r["protocol"], protocol.split(':').next().unwrap());
    assert!(r["committed"].as_u64().unwrap() >= 20, "{r}");
    assert_eq!(r["check"]["anomalies"].as_array().unwrap().len(), 0, "{r}");
    assert_eq!(r["check"]["invariant"], serde_json::Value::Null, "{r}");
    assert!(r["messages"]["total"].as_u64().unwrap() > 0, "{r}");
    // `cluster up` wrote the servers' pids: the bench reads their CPU from /proc.
    assert!(
        r["protocol_stats"]["server_cpu_ms_per_committed"].as_f64().unwrap() > 0.0,
        "{r}"
    );
    assert!(r["protocol_stats"]["server_processes"].as_f64().unwrap() >= 3.0, "{r}");
    if let Some(s) = r.get("split_decisions") {
        assert_eq!(s, 0, "{r}");
    }
}

#[test]
fn e2e_2pc_2pl() {
    e2e("2pc-2pl");
}

#[test]
fn e2e_2pc_occ() {
    e2e("2pc-occ");
}

#[test]
fn e2e_rc() {
    e2e("rc");
}

#[test]
fn e2e_replog() {
    e2e("replog");
}

#[test]
fn e2e_hacommit() {
    e2e("hacommit");
}

#[test]
fn e2e_hacommit_rc() {
    e2e("hacommit-rc");
}

#[test]
fn e2e_crossstitch() {
    e2e("crossstitch");
}
// The protocols of wave 2 on a real cluster too (they had only run in the simulator).

#[test]
fn e2e_pc_2pl() {
    e2e("pc-2pl");
}

#[test]
fn e2e_pc_occ() {
    e2e("pc-occ");
}

#[test]
fn e2e_hier_lock() {
    e2e("hier-lock");
}

#[test]
fn e2e_hier_ts() {
    e2e("hier-ts");
}

#[test]
fn e2e_2pc_deferred() {
    e2e("2pc-deferred");
}

#[test]
fn e2e_catenae() {
    e2e("catenae");
}

/// Users re-run benchmarks against the same cluster: the second run's history lists
/// what earlier runs left as written by earlier transactions, and checks clean too.
#[test]
fn two_benches_in_a_row_on_one_cluster_both_check_clean() {
    let c = Local::up("2pc-2pl", "us3", &["--no-delay"]);
    for run in 0..2 {
        let r = finish(&c, c.bank_bench(4, "1s", "1s"));
        assert!(r["committed"].as_u64().unwrap() >= 10, "run {run}: {r}");
        assert_eq!(r["check"]["anomalies"].as_array().unwrap().len(), 0, "run {run}: {r}");
        assert_eq!(r["check"]["invariant"], serde_json::Value::Null, "run {run}: {r}");
    }
}

#[test]
fn bad_cluster_files_and_flags_are_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.toml");
    let lan_nodes: String = (0..8)
        .map(|i| format!("[[node]]\nid = {i}\ndc = \"L\"\naddr = \"127.0.0.1:{}\"\n", 1000 + i))
        .collect();
    let bad_protocol = format!("protocol = \"zz\"\ntopology = \"lan\"\nepoch_ns = 1\n{lan_nodes}");
    let cases: [(&str, &str); 4] = [
        ("protocol = \"rc\"\n", "missing field"),
        (
            "protocol = \"rc\"\ntopology = \"mars\"\nepoch_ns = 1\n",
            "unknown topology `mars`",
        ),
        (&bad_protocol, "unknown protocol `zz`"),
        ("protocol = [\n", "cluster file"),
    ];
    for (body, want) in cases {
        std::fs::write(&f, body).unwrap();
        for args in [
            vec!["server", "--node", "0", "--cluster"],
            vec!["bench", "--duration", "1s", "--cluster"],
        ] {
            let o = meridian().args(&args).arg(&f).output().unwrap();
            let e = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{args:?} {body}");
            assert!(e.contains(want), "{args:?} with {body:?}: want `{want}` in {e}");
            assert!(!e.contains("panicked"), "{e}");
        }
    }
    // `cluster up` of an unknown protocol (in `x`), `cluster down` where none runs.
    let up: &[&str] = &["up", "--protocol", "nope", "--topology", "us3"];
    for (args, sub, want) in [
        (up, "x", "unknown protocol `nope`"),
        (&["down"], "none", "no cluster to stop"),
    ] {
        let o = meridian()
            .arg("cluster")
            .args(args)
            .arg("--dir")
            .arg(dir.path().join(sub))
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&o.stderr).contains(want), "{}", text(&o));
    }
    assert!(!Path::new(&dir.path().join("x/pids")).exists(), "no process may start");
}

/// Issue 23: `meridian cluster status` shows every server's state, role and counters;
/// the counters move under a bench, and a killed server is shown down (exit non-zero).
#[test]
fn cluster_status_shows_roles_counters_and_a_down_node() {
    let c = Local::up("replog", "us3", &["--no-delay"]);
    let status = || c.status();
    let (ok, before) = status();
    assert!(ok, "{before}");
    let nodes = before.as_array().unwrap();
    assert_eq!(nodes.len(), 6);
    assert!(nodes.iter().all(|n| n["up"] == true), "{before}");
    assert!(
        nodes
            .iter()
            .any(|n| n["status"]["role"].as_str().unwrap_or("").contains("leader of")),
        "{before}"
    );
    finish(&c, c.bench(&["--clients", "3", "--duration", "1s", "--settle", "1s"]));
    let (_, after) = status();
    let inputs = |v: &serde_json::Value| -> u64 {
        v.as_array()
            .unwrap()
            .iter()
            .map(|n| n["status"]["counters"]["inputs"].as_u64().unwrap_or(0))
            .sum()
    };
    assert!(inputs(&after) > inputs(&before), "{before}\n{after}");
    signal("-9", &c.pid(1));
    // Wait (generously) until the kill shows.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (ok, v) = status();
        if !ok && v[1]["up"] == false {
            assert!(v[1]["error"].as_str().is_some(), "{v}");
            assert_eq!(v[0]["up"], true, "{v}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "node 1 still shown up: {v}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Issue 23: `cluster up` on a busy port: one clear error naming the node and port,
/// nothing else (it used to leak `kill: (N): No such process` for the node that had
/// already exited).
#[test]
fn cluster_up_on_a_busy_port_is_one_clear_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = free_base(6);
    let _busy = std::net::TcpListener::bind(("127.0.0.1", base + 2)).expect("bind");
    let o = meridian()
        .args(["cluster", "up", "--protocol", "rc", "--topology", "us3", "--dir"])
        .arg(dir.path())
        .args(["--base-port", &base.to_string()])
        .output()
        .expect("cluster up");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{}", text(&o));
    assert!(
        err.contains("Address already in use") && err.contains("node 2"),
        "{}",
        text(&o)
    );
    assert!(o.stdout.is_empty(), "{}", text(&o));
    assert!(!dir.path().join("pids").exists(), "the started nodes are stopped");
}

/// Issue 23: each server's Prometheus endpoint (`cluster up --metrics-base-port`):
/// scraped before and after a bench, its counters move.
#[test]
fn metrics_endpoint_counters_move_under_a_bench() {
    let mbase = free_base(6);
    // CrossStitch reports the outcomes it applied (not every protocol does).
    let c = Local::up(
        "crossstitch",
        "us3",
        &["--no-delay", "--metrics-base-port", &mbase.to_string()],
    );
    let scrape = |node: u16| -> String {
        let out = get_metrics(mbase + node).expect("metrics port");
        assert!(out.starts_with("HTTP/1.1 200 OK"), "{out}");
        out
    };
    let value = |text: &str, metric: &str| -> u64 {
        text.lines()
            .filter(|l| l.starts_with(metric))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    let before: u64 = (0..6).map(|n| value(&scrape(n), "meridian_inputs_total")).sum();
    finish(&c, c.bench(&["--clients", "3", "--duration", "1s", "--settle", "1s"]));
    let texts: Vec<String> = (0..6).map(scrape).collect();
    let after: u64 = texts.iter().map(|t| value(t, "meridian_inputs_total")).sum();
    assert!(after > before, "{before} -> {after}");
    let committed: u64 = texts
        .iter()
        .map(|t| value(t, "meridian_outcomes_applied_total{node"))
        .sum();
    assert!(committed > 0, "{}", texts[0]);
}

/// Issue 23: `bench --metrics ADDR` serves the run's client-side metrics while it runs:
/// transactions by outcome and abort cause, and latency histograms; a busy address
/// fails before the run with one error.
#[test]
fn bench_metrics_endpoint_counts_outcomes_and_latencies() {
    let c = Local::up("2pc-2pl", "us3", &["--no-delay"]);
    let port = free_base(1);
    let addr = format!("127.0.0.1:{port}");
    let b = c.bench(&[
        "--clients",
        "3",
        "--workload",
        "bank",
        "--duration",
        "10s",
        "--settle",
        "1s",
        "--metrics",
        &addr,
    ]);
    let scrape = || get_metrics(port).ok();
    let value = |text: &str, prefix: &str| -> f64 {
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    // Poll while the bench runs (its endpoint goes with it) until a commit shows.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut seen = None;
    while std::time::Instant::now() < deadline {
        if let Some(t) = scrape() {
            if value(&t, "meridian_client_transactions_total{outcome=\"committed\"") > 0.0 {
                seen = Some(t);
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let t = seen.expect("no scrape showed a committed transaction while the bench ran");
    assert!(t.starts_with("HTTP/1.1 200 OK"), "{t}");
    assert!(
        value(&t, "meridian_client_latency_seconds_count{outcome=\"committed\"}") > 0.0,
        "{t}"
    );
    assert!(
        t.contains("meridian_client_latency_seconds_bucket{le=\"0.0005\",outcome=\"committed\"}"),
        "{t}"
    );
    finish(&c, b);
    // A busy address: one error, before any work.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let o = meridian()
        .args(["bench", "--duration", "30s", "--cluster"])
        .arg(c.file())
        .args(["--metrics", &busy.local_addr().unwrap().to_string()])
        .output()
        .expect("bench");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--metrics") && err.contains("cannot listen"), "{err}");
}

/// `cluster partition` refuses what it cannot do with one clear error: an unknown DC
/// (naming the cluster's DCs), a DC cut from itself, no link named.
#[test]
fn cluster_partition_bad_arguments_are_one_clear_error() {
    let c = Local::up("2pc-2pl", "us3", &["--no-delay"]);
    for (args, want) in [
        (
            vec!["--isolate", "MARS"],
            "unknown DC `MARS` (the cluster's DCs: NY, CA, TX)",
        ),
        (vec!["--between", "NY,NY"], "cannot be cut from itself"),
        (vec!["--between", "NY"], "bad --between"),
        (vec![], "say which links to cut"),
    ] {
        let o = meridian()
            .args(["cluster", "partition", "--dir"])
            .arg(c.dir.path())
            .args(&args)
            .output()
            .expect("partition");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want) && err.trim().lines().count() == 1, "{args:?}: {err}");
    }
    let o = meridian()
        .args(["cluster", "heal", "--dir"])
        .arg(c.dir.path())
        .output()
        .expect("heal");
    assert!(o.status.success(), "cluster heal: {}", text(&o));
}

/// The whole suite runs with mutual TLS (the default); this one runs `--insecure`:
/// it works, and every place says so (the `up` warning, the cluster file, `status`).
#[test]
fn an_insecure_cluster_runs_and_says_so_everywhere() {
    let c = Local::up("hacommit", "us3", &["--no-delay", "--insecure"]);
    let toml = std::fs::read_to_string(c.file()).unwrap();
    assert!(toml.contains("insecure = true") && !toml.contains("tls_dir"), "{toml}");
    assert!(
        !c.dir.path().join("certs").exists(),
        "certificates made for an insecure cluster"
    );
    let o = meridian()
        .args(["cluster", "status", "--cluster"])
        .arg(c.file())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("security: INSECURE"),
        "{}",
        text(&o)
    );
    let log = std::fs::read_to_string(c.dir.path().join("n0.log")).unwrap();
    assert!(log.contains("INSECURE: no TLS and no authentication"), "{log}");
    let r = finish(&c, c.bank_bench(4, "1s", "1s"));
    assert!(r["committed"].as_u64().unwrap() >= 10, "{r}");
    assert_eq!(r["check"]["anomalies"].as_array().unwrap().len(), 0, "{r}");
}

/// `cluster certs` issues a role's certificate from the cluster's CA (0600 key), a new
/// CA with every certificate, and says clearly what it cannot do.
#[test]
fn cluster_certs_issues_and_refuses_clearly() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("cluster.toml");
    let nodes: String = (0..6)
        .map(|i| {
            format!(
                "[[node]]\nid = {i}\ndc = \"{}\"\naddr = \"127.0.0.1:{}\"\n",
                ["NY", "CA", "TX"][i / 2],
                3000 + i
            )
        })
        .collect();
    std::fs::write(
        &f,
        format!("protocol = \"rc\"\ntopology = \"us3\"\nepoch_ns = 5\ntls_dir = \"certs\"\n{nodes}"),
    )
    .unwrap();
    let certs = |args: &[&str]| {
        meridian()
            .args(["cluster", "certs", "--cluster"])
            .arg(&f)
            .args(args)
            .output()
            .unwrap()
    };
    // No CA yet: one clear error naming the file.
    let o = certs(&["--role", "client"]);
    assert!(!o.status.success() && text(&o).contains("ca.key"), "{}", text(&o));
    let o = certs(&["--new-ca"]);
    assert!(o.status.success(), "{}", text(&o));
    for n in ["ca", "node-0", "node-5", "client", "observer", "admin"] {
        assert!(dir.path().join(format!("certs/{n}.pem")).exists(), "{n}");
        let k = dir.path().join(format!("certs/{n}.key"));
        assert_eq!(
            std::fs::metadata(&k).unwrap().permissions().mode() & 0o777,
            0o600,
            "{n}"
        );
    }
    let o = certs(&["--role", "observer", "--days", "30"]);
    assert!(o.status.success() && text(&o).contains("observer.pem"), "{}", text(&o));
    assert!(!text(&o).contains("PRIVATE KEY"), "{}", text(&o));
    for (args, want) in [
        (vec!["--role", "node-6"], "server nodes 0..5"),
        (vec!["--role", "root"], "expected node-N, client, observer or admin"),
        (vec![], "nothing to issue"),
    ] {
        let o = certs(&args);
        assert!(!o.status.success() && text(&o).contains(want), "{args:?}: {}", text(&o));
        assert!(!text(&o).contains("panicked"), "{}", text(&o));
    }
    // A file of an earlier build names no certificates: a server says what to do, and
    // `--new-ca` gives it a CA and names it in the file.
    let old = dir.path().join("old/cluster.toml");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::write(
        &old,
        format!("protocol = \"rc\"\ntopology = \"us3\"\nepoch_ns = 6\n{nodes}"),
    )
    .unwrap();
    let o = meridian()
        .args(["server", "--node", "0", "--cluster"])
        .arg(&old)
        .output()
        .unwrap();
    assert!(!o.status.success() && text(&o).contains("--new-ca"), "{}", text(&o));
    let o = meridian()
        .args(["cluster", "certs", "--new-ca", "--cluster"])
        .arg(&old)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::read_to_string(&old).unwrap().contains("tls_dir = \"certs\""));
    assert!(dir.path().join("old/certs/node-5.key").exists());
    // A server whose key others can read refuses to start, saying what to do.
    let k = dir.path().join("certs/node-0.key");
    std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = meridian()
        .args(["server", "--node", "0", "--cluster"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(!o.status.success() && text(&o).contains("chmod 600"), "{}", text(&o));
}

/// `cluster up --metrics-secure`: every node serves its metrics over HTTPS to a scrape
/// with the bearer token `up` wrote (0600); plain HTTP gets no metrics.
#[test]
fn secure_metrics_take_https_and_a_token() {
    use std::os::unix::fs::PermissionsExt;
    let mbase = free_base(6);
    let c = Local::up(
        "2pc-2pl",
        "us3",
        &[
            "--no-delay",
            "--metrics-base-port",
            &mbase.to_string(),
            "--metrics-secure",
        ],
    );
    let token = c.dir.path().join("certs/metrics.token");
    assert_eq!(std::fs::metadata(&token).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&token).unwrap().trim().len(), 64);
    let log = c.log(0);
    assert!(
        log.contains("metrics on https://") && log.contains("bearer_token=true"),
        "{log}"
    );
    assert!(
        !log.contains(std::fs::read_to_string(&token).unwrap().trim()),
        "the token is in the log"
    );
    // An error (the TLS server dropped the plaintext request) is right too.
    if let Ok(out) = get_metrics(mbase) {
        assert!(!out.contains("meridian_inputs_total"), "served over plain HTTP: {out}");
    }
}
