//! `meridian explore`: bounded exhaustive search of one small configuration
//! (see `meridian_explore`), with the shortest counterexample printed as steps that
//! `--replay` runs again.

use anyhow::{bail, Result};
use clap::Args;
use meridian_explore::{Budget, Config, Step};
use std::process::ExitCode;

/// Flags of `meridian explore`.
#[derive(Args, Debug)]
pub struct ExploreArgs {
    /// Protocol (one of `meridian sim`'s, with its parameters).
    #[arg(long, value_parser = crate::names::PROTOCOLS, hide_possible_values = true)]
    protocol: String,
    /// Shards.
    #[arg(long, default_value_t = 2)]
    shards: u32,
    /// DCs (the replicated protocols keep one replica of each shard in each).
    #[arg(long, default_value_t = 3)]
    dcs: u32,
    /// Clients (spread over the DCs).
    #[arg(long, default_value_t = 2)]
    clients: u32,
    /// Transactions in all, dealt to the clients in turn.
    #[arg(long, default_value_t = 2)]
    txns: u32,
    /// Workload the transactions are drawn from (small key sets make them conflict).
    #[arg(long, default_value = "ycsb:keys=4,ops=2")]
    workload: String,
    /// Fault budget per path: crash=N,drop=N,dup=N,timeouts=N,reorder=N|any, or none.
    /// timeouts: timers that fire while messages are still in flight; reorder:
    /// messages delivered before an older one (unbounded unless given: every order).
    #[arg(long, default_value = "none")]
    faults: String,
    /// Steps per path.
    #[arg(long, default_value_t = 200)]
    depth: u32,
    /// Timer steps that move the clock, per path (periodic timers would otherwise make
    /// paths endless); after them a path goes on with deliveries (and faults) only, and
    /// where nothing is left to deliver it ends and is judged.
    #[arg(long, default_value_t = 6)]
    clock_steps: u32,
    /// Distinct states at most; the search stops there and says it was not exhaustive.
    #[arg(long, default_value_t = 200_000)]
    states: u64,
    /// Seed for the workload's draws, the actors' random generators and the random
    /// walks.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How to search: bfs (exhaustive, shortest counterexample), dfs (exhaustive within
    /// the depth, less memory, not the shortest counterexample) or random (--walks
    /// random walks: not exhaustive, reaches deeper schedules).
    #[arg(long, default_value = "bfs")]
    strategy: String,
    /// With --strategy random: walks to take.
    #[arg(long, default_value_t = 1000)]
    walks: u64,
    /// Run only these steps (as a counterexample prints them, comma-separated), with
    /// every step described, then check the path's end.
    #[arg(long)]
    replay: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `meridian explore`. Exit 0: nothing found; 3: a violation (printed).
pub fn explore(a: &ExploreArgs) -> Result<ExitCode> {
    let faults = Budget::parse(&a.faults).map_err(anyhow::Error::msg)?;
    let cfg = Config {
        protocol: a.protocol.clone(),
        shards: a.shards,
        dcs: a.dcs,
        clients: a.clients,
        txns: a.txns,
        workload: a.workload.clone(),
        faults,
        depth: a.depth,
        clock_steps: a.clock_steps,
        max_states: a.states,
        seed: a.seed,
        strategy: match a
            .strategy
            .parse::<meridian_explore::Strategy>()
            .map_err(anyhow::Error::msg)?
        {
            meridian_explore::Strategy::Random { .. } => meridian_explore::Strategy::Random { walks: a.walks },
            s => s,
        },
        ..Config::default()
    };
    if a.walks == 0 {
        bail!("--walks must be at least 1");
    }
    if a.states == 0 {
        bail!("--states must be at least 1");
    }
    let replay: Option<Vec<Step>> = match &a.replay {
        None => None,
        Some(s) => Some(
            s.split(',')
                .filter(|x| !x.trim().is_empty())
                .map(|x| x.parse::<Step>().map_err(|e| anyhow::anyhow!("--replay: {e}")))
                .collect::<Result<_>>()?,
        ),
    };
    let r = meridian_explore::explore(&cfg, replay.as_deref())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!("explore {}", r.config);
        println!(
            "states {} ({:.0}/s)  transitions {}  path ends checked {}  depth {}  {}",
            r.states,
            r.states as f64 / r.wall_s.max(1e-9),
            r.transitions,
            r.ends_checked,
            r.depth_reached,
            if replay.is_some() {
                "(replay)".to_string()
            } else if r.violation.is_some() {
                "(stopped at the first violation)".to_string()
            } else if let meridian_explore::Strategy::Random { walks } = cfg.strategy {
                format!("{walks} random walks")
            } else if r.exhaustive {
                format!(
                    "exhaustive to depth {} ({} paths cut by the depth bound, their ends checked)",
                    a.depth, r.cut_by_depth
                )
            } else {
                format!("NOT exhaustive: the limit of {} states was reached", a.states)
            }
        );
        if r.beyond_tolerance > 0 {
            println!(
                "{} path ends had more crashes than the protocol tolerates: judged for serializability and atomicity only",
                r.beyond_tolerance
            );
        }
        for line in &r.replayed {
            println!("  {line}");
        }
        match &r.violation {
            None => println!("no violation found ({:.1} s)", r.wall_s),
            Some(v) => {
                println!("VIOLATION ({}): {}", v.kind, v.what);
                if r.replayed.is_empty() {
                    println!("path ({} steps):", v.steps.len());
                    for line in &v.trace {
                        println!("  {line}");
                    }
                }
                println!("replay: meridian explore {} --replay {}", r.config, v.steps.join(","));
            }
        }
    }
    Ok(if r.violation.is_some() {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}
