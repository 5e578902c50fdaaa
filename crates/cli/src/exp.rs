//! What every paper experiment shares: a checked run and its verdict column.

use crate::progress;
use anyhow::Result;
use meridian_sim::{SimConfig, SimOutput};

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
