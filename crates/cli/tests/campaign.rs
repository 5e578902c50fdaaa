//! `meridian campaign`: a clean smoke run, refusals, and the mutants it must catch.

mod common;

use common::{run as meridian, stderr};

/// Issue 19's CI smoke run: a few seeds of every protocol under drawn faults, in
/// parallel; every run must be safe, and live within its protocol's tolerance.
#[test]
fn test_cli_campaign_smoke_run_is_clean() {
    let o = meridian(&["campaign", "--seeds", "3", "--txns", "120", "--jobs", "2", "--json"]);
    assert!(
        o.status.success(),
        "{}\n{}",
        stderr(&o),
        String::from_utf8_lossy(&o.stdout)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let protocols = v["protocols"].as_object().unwrap();
    assert!(protocols.len() >= 15, "{v}");
    for (p, row) in protocols {
        assert_eq!(row["runs"], 3, "{p}: {row}");
        // Not vacuous: every protocol committed something in its runs.
        assert!(row["committed"].as_u64().unwrap() > 0, "{p}: {row}");
        for col in ["unsafe", "stalled", "b_unsafe", "error"] {
            assert_eq!(row[col], 0, "{p}: {row}");
        }
    }
    assert_eq!(v["failures"].as_array().unwrap().len(), 0);
}

#[test]
fn test_cli_campaign_refuses_an_unknown_protocol_before_running() {
    let o = meridian(&["campaign", "--protocol", "2pc-2pl,nope", "--seeds", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("unknown protocol `nope`"), "{}", stderr(&o));
}

/// Issue 19's mutation check: each deliberately broken protocol variant (built only
/// with the `mutants` feature, which the tests enable) is caught by the campaign
/// within the stated number of seeds, counted from seed 1. The bounds are the first
/// failing seed of each, rounded up (docs/MEASUREMENTS.md, "Fault campaign").
#[test]
fn test_cli_campaign_catches_every_mutant() {
    for (protocol, seeds) in [
        ("2pc-2pl:mutant=early-release", 5),
        ("crossstitch:mutant=no-ack", 10),
        ("hacommit:mutant=minority", 40),
        ("replog:mutant=early-abort", 250),
        ("hacommit:mutant=lead-before-merge", 20),
    ] {
        let o = meridian(&[
            "campaign",
            "--protocol",
            protocol,
            "--seeds",
            &seeds.to_string(),
            "--max-failures",
            "1",
            "--no-shrink",
            "--jobs",
            "2",
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(3), "{protocol}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            !v["failures"].as_array().unwrap().is_empty(),
            "{protocol} not caught in {seeds} seeds"
        );
    }
}

#[test]
fn test_cli_mutants_exist_only_in_test_builds_and_name_their_protocol() {
    // The test binary has them (the `mutants` feature); a mutant names its protocol.
    let o = meridian(&["sim", "--protocol", "rc:mutant=early-release", "--txns", "10"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("mutant `early-release` is a mutant of `2pc-2pl`"),
        "{}",
        stderr(&o)
    );
}
