//! `meridian explore` from the command line: exit codes, the one-line errors, and a
//! printed replay command that runs.

use std::process::{Command, Output};

fn meridian(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_meridian"))
        .args(args)
        .output()
        .expect("run meridian")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn explore_reports_an_exhaustive_search_and_exits_zero() {
    let o = meridian(&["explore", "--protocol", "2pc-2pl", "--faults", "reorder=1,drop=1"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("exhaustive to depth 200"), "{out}");
    assert!(out.contains("no violation found"), "{out}");
    let o = meridian(&["explore", "--protocol", "rc", "--states", "50", "--json"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["exhaustive"], false, "a search cut by --states says so");
    assert_eq!(v["states"], 50);
    // Depth first covers the same states as breadth first; random walks say how many.
    let o = meridian(&[
        "explore",
        "--protocol",
        "2pc-2pl",
        "--faults",
        "reorder=1,drop=1",
        "--strategy",
        "dfs",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("exhaustive to depth 200"), "{out}");
    let o = meridian(&[
        "explore",
        "--protocol",
        "2pc-2pl",
        "--faults",
        "reorder=1,drop=1",
        "--strategy",
        "random",
        "--walks",
        "30",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("30 random walks"), "{out}");
}

#[test]
fn explore_bad_input_gets_one_line_and_exit_2() {
    for (args, want) in [
        (
            vec!["--protocol", "2pc-2pl", "--faults", "flood=1"],
            "unknown fault kind",
        ),
        (vec!["--protocol", "nope"], "unknown protocol"),
        (vec!["--protocol", "2pc-2pl", "--txns", "0"], "at least 1"),
        (vec!["--protocol", "2pc-2pl", "--replay", "d0,zz"], "is not a step"),
        (vec!["--protocol", "2pc-2pl", "--replay", "d999"], "no such message"),
        (vec!["--protocol", "2pc-2pl", "--states", "0"], "--states"),
        (vec!["--protocol", "2pc-2pl", "--strategy", "astar"], "unknown strategy"),
        (
            vec!["--protocol", "2pc-2pl", "--strategy", "random", "--walks", "0"],
            "--walks",
        ),
    ] {
        let mut a = vec!["explore"];
        a.extend(args.iter());
        let o = meridian(&a);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {out}{err}");
        assert!(err.contains(want), "{a:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{a:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_replayed_path_describes_every_step() {
    // The first steps of 2PC's only no-fault path: the clients' first messages.
    let o = meridian(&["explore", "--protocol", "2pc-2pl", "--replay", "d0,d1,d2"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("(replay)"), "{out}");
}
