//! Paper experiments (`meridian compare --experiment NAME`), one file per paper (or
//! baseline), each declaring its [`EXPERIMENTS`](rc::EXPERIMENTS); [`all`] is the
//! registry `--experiment list` reads. Adding a paper's figures is adding one file
//! here and one line to [`all`]. This module also holds what every experiment shares:
//! a checked run and its verdict column.

pub mod catenae;
pub mod cluster;
pub mod crossstitch;
pub mod hacommit;
pub mod hierval;
pub mod rc;
pub mod twopc;

use crate::{progress, RunArgs};
use anyhow::Result;
use meridian_core::Topology;
use meridian_sim::{SimConfig, SimOutput};
use std::process::ExitCode;

/// A named experiment: what `--experiment NAME` runs.
pub struct Experiment {
    /// Its `--experiment` name.
    pub name: &'static str,
    /// What it reproduces (paper, figure, what is compared).
    pub about: &'static str,
    /// Runs it with the command's flags; exit 3 if any run's check failed.
    pub run: fn(&RunArgs) -> Result<ExitCode>,
}

/// Every experiment, in `--experiment list` order.
pub fn all() -> Vec<&'static Experiment> {
    [
        twopc::EXPERIMENTS,
        rc::EXPERIMENTS,
        hacommit::EXPERIMENTS,
        crossstitch::EXPERIMENTS,
        hierval::EXPERIMENTS,
        catenae::EXPERIMENTS,
        cluster::EXPERIMENTS,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Runs `f` as an experiment: its checked runs set the exit code.
pub fn with_ctx(args: &RunArgs, f: fn(&mut Ctx) -> Result<()>) -> Result<ExitCode> {
    let mut cx = Ctx::new(args);
    f(&mut cx)?;
    Ok(cx.exit_code())
}

/// An experiment in progress: the run flags and whether any check failed.
pub struct Ctx<'a> {
    pub args: &'a RunArgs,
    pub failed: bool,
}

impl<'a> Ctx<'a> {
    pub fn new(args: &'a RunArgs) -> Self {
        Ctx { args, failed: false }
    }

    /// A config on `topo` with `clients` spread over `client_dcs` (names; empty: all).
    pub fn cfg(
        &self,
        topo: &Topology,
        workload: &str,
        txns: u64,
        clients: u32,
        client_dcs: &[&str],
    ) -> Result<SimConfig> {
        config(self.args, topo, workload, txns, clients, client_dcs)
    }

    /// A checked run (a failed check makes the experiment exit 3).
    pub fn run(&mut self, protocol: &str, cfg: &SimConfig) -> Result<SimOutput> {
        run_checked(protocol, cfg, &mut self.failed)
    }

    /// 0, or 3 if any check failed.
    pub fn exit_code(&self) -> ExitCode {
        if self.failed {
            ExitCode::from(3)
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// The run flags' config on `topo` with `workload`, `txns` and `clients`, clients spread
/// over `client_dcs` (names; empty: every DC), and no faults (an experiment sets its own).
pub fn config(
    args: &RunArgs,
    topo: &Topology,
    workload: &str,
    txns: u64,
    clients: u32,
    client_dcs: &[&str],
) -> Result<SimConfig> {
    let mut c = args.config()?;
    c.topology = topo.clone();
    c.workload = workload.to_string();
    c.txns = txns;
    c.clients = clients;
    c.client_dcs = client_dcs.iter().map(|d| topo.dc(d)).collect::<Result<_, _>>()?;
    c.faults = String::new();
    Ok(c)
}

/// Runs `protocol` on `cfg`; a failed check prints its first anomalies and sets `failed`
/// (the experiment then exits 3).
pub fn run_checked(protocol: &str, cfg: &SimConfig, failed: &mut bool) -> Result<SimOutput> {
    let out = meridian_sim::run_named(protocol, cfg, &mut progress(protocol))?;
    if !out.report.check.ok() {
        *failed = true;
        eprintln!("{protocol}: check FAILED on {}:", cfg.topology.name);
        for a in out.report.check.anomalies.iter().take(5) {
            eprintln!("  {a}");
        }
    }
    Ok(out)
}

/// The verdict column: `ok` or `FAIL`.
pub fn ok(o: &SimOutput) -> &'static str {
    if o.report.check.ok() {
        "ok"
    } else {
        "FAIL"
    }
}
