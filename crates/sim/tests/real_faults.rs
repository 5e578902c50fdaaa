//! The simulator's faults that mirror the container nemesis's (`meridian cluster
//! nemesis`): a paused server (`docker pause`) and a cut between servers that leaves
//! clients reaching every server (nftables rules in the servers' namespaces), so the
//! nemesis's table can set the two side by side.

use meridian_core::{secs, HomeRule, Outcome, Topology};
use meridian_sim::{run_named, SimConfig, SimOutput};

mod common;

fn run(protocol: &str, c: &SimConfig) -> SimOutput {
    run_named(protocol, c, &mut |_, _| {}).unwrap()
}

/// Commits that ended in [a, b) seconds.
fn commits_between(o: &SimOutput, a: f64, b: f64) -> usize {
    o.history
        .txns
        .iter()
        .filter(|t| t.outcome == Outcome::Committed)
        .filter_map(|t| t.end)
        .filter(|e| *e >= secs(a) && *e < secs(b))
        .count()
}

#[test]
fn a_paused_server_keeps_its_state_and_what_waited_for_it_goes_on() {
    // Unreplicated 2PC: a transaction that touches the paused server waits for it
    // and, since the pause loses nothing, finishes once it resumes.
    let mut c = SimConfig::new(Topology::preset("us3").unwrap(), "bank");
    c.txns = 600;
    c.clients = 6;
    c.faults = "pause:node=0,at=2s,for=3s".into();
    let o = run("2pc-2pl", &c);
    common::assert_clean_and_live("2pc-2pl with node 0 paused", &o.report);
    // Something waited out the pause: a commit that began before it and ended after.
    let held = o
        .history
        .txns
        .iter()
        .filter(|t| t.outcome == Outcome::Committed)
        .any(|t| t.start < secs(2.0) && t.end.is_some_and(|e| e > secs(5.0)));
    assert!(held, "no transaction waited for the paused server");
    // Over the paused window nothing that needs node 0 can end: fewer commits end
    // there than in the same window of the same run without the pause.
    c.faults = String::new();
    let unpaused = run("2pc-2pl", &c);
    assert!(commits_between(&o, 2.2, 4.8) < commits_between(&unpaused, 2.2, 4.8));
}

#[test]
fn a_pause_ends_with_the_faults_and_frees_what_piled_up_at_no_cpu_cost() {
    // Where handling costs no CPU time, everything that waited for the paused node is
    // handled when it resumes (not one input, leaving the rest stranded).
    let mut c = SimConfig::new(Topology::preset("us3").unwrap(), "bank");
    c.txns = 600;
    c.clients = 6;
    c.cpu.per_msg = 0;
    c.cpu.per_op = 0;
    c.cpu.fsync = 0;
    c.faults = "pause:node=0,at=1s,for=2s".into();
    common::assert_clean_and_live("2pc-2pl, no CPU cost, node 0 paused", &run("2pc-2pl", &c).report);
    // A pause longer than the run ends when the faults heal, as a crash does.
    let mut c = SimConfig::new(Topology::preset("us3").unwrap(), "bank");
    c.txns = 100_000;
    c.clients = 6;
    c.max_time = secs(3.0);
    c.faults = "pause:node=0,at=1s,for=300s".into();
    let o = run("2pc-2pl", &c);
    common::assert_clean(&o.report);
    assert!(o.report.check.live, "{:?}", o.report.check.stalls);
}

#[test]
fn a_cut_between_servers_leaves_clients_reaching_every_server() {
    // HACommit with every shard's leader in CA and the clients in NY: a client drives
    // its own commit at the replicas, so with NY cut off from CA and TX for servers
    // only, NY's clients still reach CA's and TX's replicas and keep committing; cut
    // off together with their DC, they reach no majority and commit nothing.
    let topo = Topology::preset("us3").unwrap();
    let mut c = SimConfig::new(topo.clone(), "bank");
    c.txns = 100_000;
    c.clients = 6;
    c.client_dcs = vec![topo.dc("NY").unwrap()];
    c.home = HomeRule::Dc(topo.dc("CA").unwrap());
    c.max_time = secs(10.0);
    let cut = |clients: &str| {
        format!("partition:a=NY,b=CA,at=2s,for=5s,clients={clients};partition:a=NY,b=TX,at=2s,for=5s,clients={clients}")
    };
    c.faults = cut("no");
    let servers_only = run("hacommit", &c);
    c.faults = cut("yes");
    let whole_dc = run("hacommit", &c);
    for o in [&servers_only, &whole_dc] {
        common::assert_clean(&o.report);
    }
    let during = |o: &SimOutput| commits_between(o, 3.0, 7.0);
    assert!(
        during(&servers_only) > 0,
        "NY's clients reached the majority DCs' servers"
    );
    assert_eq!(during(&whole_dc), 0, "NY's clients were cut off with their DC");
    // The cut is written back the way it was given.
    assert!(
        servers_only.report.faults.contains("clients=no"),
        "{}",
        servers_only.report.faults
    );
}
