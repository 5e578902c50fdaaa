//! The command line: the JSON contract of `meridian sim`, one-line errors, `check`.

mod common;

use common::{run as meridian, stderr};
use std::process::{Command, Output};

#[test]
fn test_cli_sim_json_has_every_contract_key() {
    let o = meridian(&[
        "sim",
        "--protocol",
        "2pc-2pl",
        "--topology",
        "rc5",
        "--workload",
        "ycsb",
        "--txns",
        "300",
        "--seed",
        "7",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for k in [
        "protocol",
        "topology",
        "workload",
        "seed",
        "committed",
        "aborted",
        "throughput_tps",
        "wall_s",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    for (k, sub) in [
        ("latency_ms", &["mean", "p50", "p99"][..]),
        ("commit_latency_ms", &["mean", "p50", "p99"]),
        ("wan_trips", &["mean", "max"]),
        ("messages", &["total", "wan"]),
        ("check", &["serializable", "atomic", "durable", "anomalies"]),
    ] {
        for s in sub {
            assert!(v[k].get(*s).is_some(), "missing {k}.{s}");
        }
    }
    assert_eq!(v["check"]["serializable"], true);
    assert!(v["committed"].as_u64().unwrap() > 250);
}

/// A run goes on until every transaction asked for is answered (no hidden one-hour
/// cap); a limit the user sets that stops it early is said, and the exit is 4.
#[test]
fn test_cli_sim_runs_to_the_end_or_says_which_limit_stopped_it() {
    let base = [
        "sim",
        "--protocol",
        "2pc-2pl",
        "--txns",
        "400",
        "--clients",
        "1",
        "--think",
        "10s",
        "--json",
    ];
    // 400 transactions 10 s apart: over an hour of virtual time.
    let o = meridian(&base);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["committed"], 400, "every transaction asked for ran");
    assert!(v["virtual_s"].as_f64().unwrap() > 3600.0);
    assert!(v.get("cut_short").is_none());
    let o = meridian(&[&base[..], &["--max-time", "10min"]].concat());
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["committed"].as_u64().unwrap() < 400);
    let why = v["cut_short"].as_str().expect("cut_short says why");
    assert!(why.contains("virtual-time limit") && why.contains("of 400"), "{why}");
    assert!(
        stderr(&o).contains("run cut short: the virtual-time limit"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn test_cli_bad_input_is_one_clear_error() {
    let cases: [(&[&str], &str); 26] = [
        (&["sim", "--protocol", "crossstitch:copies=x"], "`copies` must be 1..=8"),
        (&["sim", "--protocol", "2pc-2pl:replicas=2"], "no parameter `replicas`"),
        (
            &["sim", "--protocol", "crossstitch:copies=3", "--topology", "us3"],
            "replicas per shard in its home DC",
        ),
        (
            &["sim", "--protocol", "crossstitch", "--workload", "tpcc:txn=delivery"],
            "not a transaction",
        ),
        (&["sim", "--protocol", "hacommit:replicas=x"], "replicas=x"),
        (
            &["sim", "--protocol", "hacommit:quorum=2"],
            "unknown parameter `quorum`",
        ),
        (
            &["sim", "--protocol", "hacommit:replicas=9", "--topology", "lan"],
            "replicas per shard",
        ),
        (
            &["sim", "--protocol", "replog:leaders=C/V"],
            "names 2 DCs but the topology has 3 shards",
        ),
        (&["sim", "--protocol", "replog:leaders=C/V/Q"], "unknown DC `Q`"),
        (&["sim", "--protocol", "replog:locks=maybe"], "locks=maybe"),
        (&["sim", "--protocol", "replog:lease=2"], "needs a unit"),
        (&["sim", "--protocol", "replog:lease=0s"], "longer than zero"),
        (
            &["sim", "--protocol", "rc:fast=1"],
            "rc: unknown parameter `fast` (known: forget)",
        ),
        (&["sim", "--protocol", "rc:forget=2"], "needs a unit"),
        (&["sim", "--protocol", "rc:forget=0s"], "longer than zero"),
        (&["sim", "--protocol", "pc-2pl:fast=1"], "takes no parameters"),
        (&["sim", "--protocol", "2pc-2pl", "--fsync", "slow"], "--fsync"),
        (&["sim", "--protocol", "2pc-2pl", "--bogus"], "--bogus"),
        (&["sim", "--protocol", "nope"], "unknown protocol `nope`"),
        (
            &["sim", "--protocol", "2pc-2pl", "--topology", "mars9"],
            "unknown topology `mars9`",
        ),
        (
            &["sim", "--protocol", "2pc-2pl", "--workload", "ycsb:opz=1"],
            "no parameter `opz`",
        ),
        (&["sim", "--protocol", "2pc-2pl", "--faults", "loss:p=7"], "probability"),
        (&["sim", "--protocol", "2pc-2pl", "--client-dc", "Q"], "unknown DC `Q`"),
        (&["compare", "--experiment", "nope"], "unknown experiment `nope`"),
        (
            &["sim", "--protocol", "2pc-2pl", "--clients", "4000000000"],
            "--clients must be at most 1000000",
        ),
        (&["sim", "--protocol", "2pc-2pl", "--max-time", "0s"], "--max-time"),
    ];
    for (args, needle) in cases {
        let o = meridian(args);
        assert!(!o.status.success(), "{args:?} should fail");
        let e = stderr(&o);
        // One error (clap's argument errors add a tip and the usage line after it).
        assert_eq!(
            e.lines().filter(|l| l.starts_with("error")).count(),
            1,
            "{args:?}: one error, got {e:?}"
        );
        assert!(e.lines().next().unwrap_or("").starts_with("error"), "{args:?}: {e:?}");
        assert!(e.contains(needle), "{args:?}: {e:?}");
    }
}

#[test]
fn test_cli_bad_topology_file_names_the_problem() {
    let dir = std::env::temp_dir().join(format!("meridian-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.toml");
    std::fs::write(
        &f,
        "dcs=[\"A\",\"B\"]\nnodes_per_dc=1\nshards=2\nrtt_ms=[[0,10],[12,0]]\n",
    )
    .unwrap();
    let o = meridian(&["sim", "--protocol", "2pc-2pl", "--topology", f.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("asymmetric RTT: A->B is 10 ms but B->A is 12 ms"),
        "{}",
        stderr(&o)
    );
    let good = dir.join("good.toml");
    std::fs::write(
        &good,
        "dcs=[\"A\",\"B\"]\nnodes_per_dc=1\nshards=2\nrtt_ms=[[0,10],[10,0]]\n",
    )
    .unwrap();
    let o = meridian(&[
        "sim",
        "--protocol",
        "2pc-occ",
        "--topology",
        good.to_str().unwrap(),
        "--txns",
        "50",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Issue 23: `--json` on `compare`, shell completions.
#[test]
fn test_cli_compare_json_and_completions() {
    let o = meridian(&["compare", "--json", "--topology", "us3", "--txns", "60"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON array");
    let reports = v.as_array().expect("array");
    assert!(reports.len() >= 10, "{v}");
    assert!(reports.iter().all(|r| r["check"]["serializable"].is_boolean()), "{v}");
    let o = meridian(&["compare", "--json", "--experiment", "rc-fig3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--json prints the default comparison"),
        "{}",
        stderr(&o)
    );
    let o = meridian(&["completions", "bash"]);
    assert!(o.status.success());
    let script = String::from_utf8_lossy(&o.stdout);
    assert!(script.contains("_meridian"));
    // Issue 59: protocol and workload names complete too (a topology may be a file,
    // whose path the shell completes).
    for name in ["hacommit-rc", "2pc-deferred", "dependent-reads", "tpcc"] {
        assert!(script.contains(name), "completions lack {name}");
    }
}

#[test]
fn test_cli_compare_runs_every_protocol() {
    let o = meridian(&["compare", "--txns", "200"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for p in meridian_protocols::PROTOCOLS {
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().next() == Some(p) && l.trim_end().ends_with("ok")),
            "{p}: {out}"
        );
    }
    // The table lines up: every row's verdict in the header's `check` column.
    let col = out.lines().find_map(|l| l.find("  check")).expect("header") + 2;
    for p in meridian_protocols::PROTOCOLS {
        let row = out.lines().find(|l| l.split_whitespace().next() == Some(p)).unwrap();
        assert_eq!(
            row.find("  ok").map(|i| i + 2),
            Some(col),
            "{p}'s row is out of line:\n{out}"
        );
    }
    let o = meridian(&["compare", "--experiment", "2pc-round-trips", "--txns", "50"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("1.000"));
    // A paper experiment end to end (the fastest one); every run in it must check clean.
    let o = meridian(&["compare", "--experiment", "rc-fig4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("C/C/C") && out.contains("V/O/I") && !out.contains("FAIL"),
        "{out}"
    );
    // HACommit's client-crash experiment: recovery leaves nothing locked.
    let o = meridian(&["compare", "--experiment", "hacommit-fig5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("keys locked at the end: 0; check: ok"), "{out}");
    // CrossStitch's Fig. 12, end to end: 2 round trips against 2PC's 4 and 5.
    let o = meridian(&["compare", "--experiment", "cs-fig12"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .any(|l| l.starts_with("order-status") && l.contains(" 4.0 ") && l.contains(" 2.0 ")),
        "{out}"
    );
    assert!(!out.contains("FAIL"), "{out}");
}

/// The fsync cost is a real input: forcing the log costs 2PC commit latency on one DC.
#[test]
fn test_cli_fsync_cost_shows_in_commit_latency() {
    let run = |fsync: &str| {
        let o = meridian(&[
            "sim",
            "--protocol",
            "2pc-2pl",
            "--topology",
            "lan",
            "--txns",
            "300",
            "--fsync",
            fsync,
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["commit_latency_ms"]["p50"].as_f64().unwrap()
    };
    let (cheap, dear) = (run("0us"), run("5ms"));
    // prepare and commit decision are forced on the critical path: at least 2 x 5 ms more
    assert!(dear > cheap + 10.0, "fsync 0: {cheap} ms, fsync 5ms: {dear} ms");
}

/// clap's whole message reaches the user: the missing argument's name, the
/// suggestion for a typo.
#[test]
fn test_cli_argument_errors_name_the_argument_and_suggest() {
    let o = meridian(&["sim"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--protocol"), "{}", stderr(&o));
    let o = meridian(&["sim", "--protocl", "rc"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("similar argument") && e.contains("'--protocol'"), "{e}");
}

/// `meridian sim --help` names every protocol the parser knows and every parameter each
/// one takes (the parser's own "known:" list, read from its error for an unknown one).
#[test]
fn test_cli_sim_help_names_every_protocol_and_parameter() {
    let o = meridian(&["sim", "--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    for t in meridian_core::Topology::PRESETS {
        let listed = [" ", "("]
            .iter()
            .any(|b| [",", ")"].iter().any(|a| help.contains(&format!("{b}{t}{a}"))));
        assert!(listed, "topology {t}: {help}");
    }
    // The workload parser's own list of names, from its error for an unknown one.
    let o = meridian(&["sim", "--protocol", "rc", "--workload", "no-such-workload"]);
    let e = stderr(&o);
    let known = e
        .split("known: ")
        .nth(1)
        .and_then(|k| k.split(')').next())
        .expect("known workloads");
    let readme = include_str!("../../../README.md");
    for w in known.split(", ") {
        let listed = [" ", "("]
            .iter()
            .any(|b| [",", ")"].iter().any(|a| help.contains(&format!("{b}{w}{a}"))));
        assert!(listed, "workload {w}: {help}");
        assert!(
            readme.contains(&format!("| `{w}` |")),
            "workload {w} has no row in README.md's table"
        );
    }
    for name in meridian_protocols::PROTOCOLS {
        assert!(
            help.contains(&format!(" {name},")) || help.contains(&format!(" {name}.")),
            "{name}: {help}"
        );
        let spec = format!("{name}:no-such-parameter=1");
        let o = meridian(&["sim", "--protocol", &spec, "--txns", "1"]);
        assert_eq!(o.status.code(), Some(2), "{spec}");
        let e = stderr(&o);
        if e.contains("takes no parameters") {
            continue;
        }
        let known = e
            .split("known: ")
            .nth(1)
            .and_then(|k| k.split(')').next())
            .unwrap_or_else(|| panic!("{spec}: no known list in {e}"));
        for k in known.split(", ") {
            assert!(
                help.contains(&format!("{k}=")),
                "{name}'s parameter `{k}` is not in --help: {help}"
            );
        }
    }
}

/// A bare number is not a duration: `--think 5` could mean seconds or milliseconds.
#[test]
fn test_cli_durations_need_a_unit() {
    let o = meridian(&["sim", "--protocol", "2pc-2pl", "--think", "5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs a unit"), "{}", stderr(&o));
    let o = meridian(&["bench", "--cluster", "/nonexistent/c.toml", "--duration", "5"]);
    assert!(stderr(&o).contains("needs a unit"), "{}", stderr(&o));
    // A bench of no time is refused before anything is read (it would pass on nothing).
    let o = meridian(&["bench", "--cluster", "/nonexistent/c.toml", "--duration", "0s"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--duration must be longer than 0"),
        "{}",
        stderr(&o)
    );
}

/// A bench baseline that is not a saved report gets one error naming the flag, before
/// the bench connects anywhere; a `--save` path that cannot be written fails first too.
#[test]
fn test_cli_bench_baseline_and_save_are_checked_before_the_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "not json").expect("write");
    let b = bad.to_str().unwrap();
    let o = meridian(&["bench", "--cluster", "/nonexistent/c.toml", "--baseline", b]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("--baseline") && e.contains("not a report"), "{e}");
    assert_eq!(e.lines().count(), 1, "one error line: {e}");
    let o = meridian(&[
        "bench",
        "--cluster",
        "/nonexistent/c.toml",
        "--save",
        "/nonexistent/dir/r.json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot write /nonexistent/dir/r.json"),
        "{}",
        stderr(&o)
    );
}

/// An output file that cannot be written fails before the run, not after it.
#[test]
fn test_cli_bad_output_path_fails_before_the_run() {
    let o = meridian(&[
        "sim",
        "--protocol",
        "2pc-2pl",
        "--txns",
        "100000",
        "--history",
        "/nonexistent/dir/h.jsonl",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/dir/h.jsonl"), "{}", stderr(&o));
    assert!(
        o.stdout.is_empty(),
        "nothing ran: {}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// The text between a generated block's markers in `md`.
fn generated<'a>(md: &'a str, name: &str) -> &'a str {
    let begin = md
        .find(&format!("<!-- BEGIN GENERATED {name}:"))
        .unwrap_or_else(|| panic!("no block {name}"));
    let end = md[begin..]
        .find(&format!("<!-- END GENERATED {name} -->"))
        .expect("end")
        + begin;
    &md[begin..end]
}

/// `meridian report --quick`: every simulated experiment runs at a small scale, checks
/// clean, fills its block of EVALUATION.md and draws its figures; a second run of some
/// of them writes the same blocks and the same figures.
#[test]
fn test_cli_report_quick_runs_every_experiment_and_is_repeatable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("a");
    let o = meridian(&["report", "--quick", "--out", out.to_str().expect("utf-8")]);
    assert!(o.status.success(), "report --quick failed: {}", stderr(&o));
    let md = std::fs::read_to_string(out.join("EVALUATION.md")).expect("EVALUATION.md");
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("evaluation.json")).expect("json")).expect("parses");
    let exps = data["experiments"].as_array().expect("experiments");
    let list = meridian(&["compare", "--experiment", "list"]);
    let sims: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| !n.starts_with("cluster-"))
        .map(String::from)
        .collect();
    assert_eq!(exps.len(), sims.len(), "every simulated experiment ran");
    let mut figures = 0;
    for e in exps {
        let name = e["name"].as_str().expect("name");
        assert_eq!(e["failed"], false, "{name} checked clean");
        let block = generated(&md, name);
        assert!(
            block.contains('|') || block.contains("Claims:"),
            "{name}'s block has a table or claims"
        );
        assert!(!block.contains("FAIL"), "{name}: {block}");
        for b in e["blocks"].as_array().expect("blocks") {
            if let Some(f) = b.get("Figure") {
                let file = out
                    .join("figures")
                    .join(format!("{}.svg", f["file"].as_str().expect("file")));
                let svg = std::fs::read_to_string(&file).expect("figure written");
                assert!(svg.starts_with("<svg") && svg.contains("</svg>"), "{}", file.display());
                roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
                // Issue 59: every figure shows the paper's values or says why not.
                let series = f["series"].as_array().expect("series");
                let paper = series.iter().any(|s| s["source"] != "Ours");
                let note = f.get("note").and_then(|n| n.as_str()).is_some_and(|n| !n.is_empty());
                assert!(paper || note, "{}: no paper series and no note", file.display());
                figures += 1;
            }
        }
    }
    assert!(figures >= 20, "only {figures} figures");
    let summary = generated(&md, "summary");
    assert!(
        summary.contains("reproduced") && summary.contains("not built"),
        "{summary}"
    );
    assert!(!summary.contains("| measured |"), "no status says measured");

    // Again, some of them, one job: the same blocks and figures.
    let out2 = dir.path().join("b");
    let o = meridian(&[
        "report",
        "--quick",
        "--only",
        "2pc,cs-fig8,hv-analysis",
        "--jobs",
        "1",
        "--out",
        out2.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "report --only failed: {}", stderr(&o));
    let md2 = std::fs::read_to_string(out2.join("EVALUATION.md")).expect("EVALUATION.md");
    for name in ["2pc-round-trips", "cs-fig8", "hv-analysis"] {
        assert_eq!(
            generated(&md, name),
            generated(&md2, name),
            "{name} differs between runs"
        );
    }
    for f in ["2pc-round-trips.svg", "cs-fig8.svg"] {
        assert_eq!(
            std::fs::read(out.join("figures").join(f)).expect("a"),
            std::fs::read(out2.join("figures").join(f)).expect("b"),
            "{f} differs between runs"
        );
    }
    let bad = meridian(&[
        "report",
        "--quick",
        "--only",
        "rc-fig99",
        "--out",
        out2.to_str().expect("utf-8"),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("unknown experiment or paper `rc-fig99`"),
        "{}",
        stderr(&bad)
    );
}

/// `cluster compose` writes a cluster file whose servers sit at fixed addresses of the
/// compose network, and a compose file with one service per server; bad input is one
/// clear error, and it never overwrites a cluster it wrote before.
#[test]
fn test_cli_cluster_compose_writes_files_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("c");
    let d = d.to_str().unwrap();
    let o = meridian(&[
        "cluster",
        "compose",
        "--protocol",
        "hacommit",
        "--topology",
        "us3",
        "--dir",
        d,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let toml = std::fs::read_to_string(format!("{d}/cluster.toml")).unwrap();
    let yml = std::fs::read_to_string(format!("{d}/compose.yml")).unwrap();
    for i in 0..6 {
        assert!(toml.contains(&format!("addr = \"10.213.7.{}:7400\"", 10 + i)), "{toml}");
        assert!(yml.contains(&format!("  n{i}:\n")), "{yml}");
        assert!(yml.contains(&format!("ipv4_address: 10.213.7.{}", 10 + i)), "{yml}");
        // A server's container mounts its own key, not the cluster's every key.
        assert!(
            yml.contains(&format!("\"./node-certs/n{i}:/cluster/certs:ro\"")),
            "{yml}"
        );
        let mine: Vec<String> = std::fs::read_dir(format!("{d}/node-certs/n{i}"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let mut mine = mine;
        mine.sort();
        assert_eq!(
            mine,
            ["ca.pem", &format!("node-{i}.key"), &format!("node-{i}.pem")],
            "n{i}"
        );
    }
    assert_eq!(
        yml.matches("\"./:/cluster\"").count(),
        1,
        "only the tools container mounts DIR whole: {yml}"
    );
    assert!(toml.contains("tls_dir = \"certs\""), "TLS by default: {toml}");
    assert!(toml.contains("data_dir = \"data\""), "journals by default: {toml}");
    assert!(
        yml.contains("subnet: 10.213.7.0/24") && yml.contains("ip_range: 10.213.7.128/25"),
        "{yml}"
    );
    // The client slots are the flag's.
    let f = dir.path().join("slots");
    let o = meridian(&[
        "cluster",
        "compose",
        "--protocol",
        "rc",
        "--client-slots",
        "600",
        "--dir",
        f.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = std::fs::read_to_string(f.join("cluster.toml")).unwrap();
    assert!(t.contains("client_slots = 600"), "{t}");
    // Again into the same directory: refused, the first cluster's files kept.
    let o = meridian(&["cluster", "compose", "--protocol", "rc", "--dir", d]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(format!("{d}/cluster.toml")).unwrap(), toml);
    let e = dir.path().join("e");
    let e = e.to_str().unwrap();
    for (args, want) in [
        (vec!["--subnet", "10.1.2.0/16"], "bad --subnet"),
        (vec!["--subnet", "nowhere"], "bad --subnet"),
        (vec!["--protocol", "nope"], "nope"),
        (vec!["--topology", "mars9"], "mars9"),
        (vec!["--client-slots", "0"], "client_slots must be 1..=1024"),
        (vec!["--client-slots", "5000"], "client_slots must be 1..=1024"),
    ] {
        let mut a = vec!["cluster", "compose", "--dir", e];
        if !args.contains(&"--protocol") {
            a.extend(["--protocol", "hacommit"]);
        }
        a.extend(args.iter().copied());
        let o = meridian(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{a:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{a:?}: {}", stderr(&o));
        assert!(!std::path::Path::new(&format!("{e}/cluster.toml")).exists(), "{a:?}");
    }
}

/// A report template without an experiment's block is refused before anything runs,
/// and the hint names the experiment's markers (it named the template path once).
#[test]
fn test_cli_report_missing_block_names_the_experiment() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("EVALUATION.md"), "# prose only\n").expect("write");
    let o = meridian(&["report", "--only", "rc-fig3", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("<!-- BEGIN GENERATED rc-fig3 -->") && e.contains("<!-- END GENERATED rc-fig3 -->"),
        "{e}"
    );
}

/// A bench against a cluster whose servers are all down fails at once with one clear
/// error (every dial is refused: nothing to wait for) and leaves no history file.
#[test]
fn test_cli_bench_against_a_down_cluster_fails_fast_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = common::free_base(15).to_string();
    let d = dir.path().to_str().unwrap();
    let o = meridian(&[
        "cluster",
        "up",
        "--protocol",
        "2pc-2pl",
        "--topology",
        "us3",
        "--dir",
        d,
        "--base-port",
        &base,
    ]);
    assert!(o.status.success(), "{}", common::text(&o));
    let o = meridian(&["cluster", "down", "--dir", d]);
    assert!(o.status.success(), "{}", common::text(&o));
    let file = dir.path().join("cluster.toml");
    let history = dir.path().join("h.jsonl");
    let o = meridian(&[
        "bench",
        "--cluster",
        file.to_str().unwrap(),
        "--duration",
        "1s",
        "--history",
        history.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    let e = stderr(&o);
    assert!(e.contains("every dial refused") && e.contains("cluster status"), "{e}");
    assert!(!history.exists(), "no history of a bench that never ran");
}

/// Sends SIGINT to a child process.
fn interrupt(child: &std::process::Child) {
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(ok.success());
}

/// Waits (with a generous deadline) for a child to exit; its output.
fn wait_exit(child: std::process::Child, what: &str) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(600)) {
        Ok(o) => o.expect("wait"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{what} did not exit within 600 s of its interrupt");
        }
    }
}

/// Ctrl-C during a long simulation: it stops issuing, gives what is in flight the
/// liveness phase, writes the whole history of what ran (which checks clean), prints
/// the report with why it ended, and exits 130.
#[test]
fn test_cli_sim_interrupted_reports_what_ran_and_exits_130() {
    let dir = tempfile::tempdir().expect("temp dir");
    let h = dir.path().join("h.jsonl");
    let child = Command::new(env!("CARGO_BIN_EXE_meridian"))
        .args([
            "sim",
            "--protocol",
            "2pc-2pl",
            "--txns",
            "100000000",
            "--json",
            "--history",
        ])
        .arg(&h)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run sim");
    // The handler is in place before the history file is created.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while !h.exists() {
        assert!(std::time::Instant::now() < deadline, "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    interrupt(&child);
    let o = wait_exit(child, "sim");
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["cut_short"].as_str().unwrap_or("").starts_with("interrupted"), "{v}");
    assert!(v["committed"].as_u64().unwrap() < 100_000_000);
    assert_eq!(v["check"]["serializable"], true, "{v}");
    let c = meridian(&["check", h.to_str().unwrap()]);
    assert_eq!(c.status.code(), Some(0), "{}", stderr(&c));
}

/// A local `us3` cluster of `protocol` without added delay, in a temporary directory.
fn cluster_up(protocol: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = common::free_base(15).to_string();
    let d = dir.path().to_str().unwrap();
    let up = [
        "cluster",
        "up",
        "--protocol",
        protocol,
        "--topology",
        "us3",
        "--no-delay",
    ];
    let o = meridian(&[&up[..], &["--dir", d, "--base-port", &base]].concat());
    assert!(o.status.success(), "{}", common::text(&o));
    dir
}

/// Ctrl-C during a bench: the clients stop issuing, the transactions in flight finish,
/// the history and the partial report are written, and the exit is 130.
#[test]
fn test_cli_bench_interrupted_reports_what_ran_and_exits_130() {
    let dir = cluster_up("2pc-2pl");
    let d = dir.path().to_str().unwrap();
    let h = dir.path().join("h.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_meridian"))
        .args([
            "bench",
            "--clients",
            "4",
            "--duration",
            "600s",
            "--settle",
            "1s",
            "--json",
            "--cluster",
        ])
        .arg(dir.path().join("cluster.toml"))
        .arg("--history")
        .arg(&h)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run bench");
    // Interrupt once it is running: its first progress line (every 5 s off a terminal).
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut err, &mut line).unwrap();
        assert!(n > 0, "the bench ended before its first progress line: {seen}");
        seen.push_str(&line);
        if line.starts_with("bench ") {
            break;
        }
    }
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    interrupt(&child);
    let o = wait_exit(child, "bench");
    let e = rest.join().unwrap();
    let _ = meridian(&["cluster", "down", "--dir", d]);
    assert_eq!(o.status.code(), Some(130), "{seen}{e}");
    assert!(e.contains("bench cut short: interrupted after"), "{e}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["committed"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["check"]["serializable"], true, "{v}");
    let c = meridian(&["check", h.to_str().unwrap()]);
    assert_eq!(c.status.code(), Some(0), "{}", stderr(&c));
}

/// `cluster down` stops every server of the cluster, one restarted by hand after a
/// crash included (each server leaves its process id beside the cluster file).
#[test]
fn test_cli_cluster_down_stops_a_server_restarted_by_hand() {
    let dir = cluster_up("hacommit");
    let d = dir.path().to_str().unwrap();
    let pids = std::fs::read_to_string(dir.path().join("pids")).unwrap();
    let first = pids.lines().next().unwrap().trim().to_string();
    assert!(Command::new("kill").args(["-9", &first]).status().unwrap().success());
    // kill returns before the process is gone: wait until it is (a bench started
    // sooner met its dying listener mid-handshake).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::path::Path::new(&format!("/proc/{first}")).exists()
        && !std::fs::read_to_string(format!("/proc/{first}/stat")).is_ok_and(|s| s.contains(") Z "))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "node 0 (pid {first}) outlived kill -9"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // A bench of the degraded cluster runs, with a warning (HACommit keeps every group
    // a majority with one server down).
    let file = dir.path().join("cluster.toml");
    let o = meridian(&[
        "bench",
        "--clients",
        "2",
        "--duration",
        "2s",
        "--settle",
        "1s",
        "--cluster",
        file.to_str().unwrap(),
    ]);
    assert!(stderr(&o).contains("benchmarking it degraded"), "{}", common::text(&o));
    assert_ne!(o.status.code(), Some(2), "{}", common::text(&o));
    let log = std::fs::File::create(dir.path().join("by-hand.log")).unwrap();
    let mut by_hand = Command::new(env!("CARGO_BIN_EXE_meridian"))
        .args(["server", "--node", "0", "--cluster"])
        .arg(dir.path().join("cluster.toml"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("restart node 0");
    // It has started once its process id is beside the cluster file.
    let pid_file = dir.path().join("run/n0.pid");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !std::fs::read_to_string(&pid_file).is_ok_and(|s| s.starts_with(&format!("{} ", by_hand.id()))) {
        assert!(
            std::time::Instant::now() < deadline,
            "the restarted server never wrote its pid"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = meridian(&["cluster", "down", "--dir", d]);
    assert!(o.status.success(), "{}", common::text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("stopped 6 processes"),
        "{}",
        common::text(&o)
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        if by_hand.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server restarted by hand still runs"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!pid_file.exists(), "a server that stopped removes its pid file");
}
