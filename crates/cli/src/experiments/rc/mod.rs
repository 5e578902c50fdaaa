//! `meridian compare --experiment rc-figN`: replicated-commit.md §5 reproduced side by
//! side with the paper. Every run is a full simulation that ends with the checker; a
//! failed check makes the experiment exit 3.
//!
//! The paper's setup (§5): the `rc5` DCs (Table 1), 3 shards on 3 servers per DC, YCSB
//! transactions of 5 operations with reads:writes 1:1 on 3000 items, 2500 transactions,
//! 5 traffic generators per DC at 50 operations per second per DC (10 transactions/s).
//! Replicated Log clients live only in DCs that hold a leader (§5); `replog` uses the
//! leader placement the paper names for each figure (`V/O/I` by default).
//!
//! # The files
//!
//! This file holds the registry of the paper's experiments; `common.rs` what they share
//! (the paper's workload and load, rc beside replog); `dcs.rs` Figs. 3 and 4 (DC sets,
//! leader placements); `ops.rs` Figs. 5 and 6 (operations per transaction, clients);
//! `contention.rs` Fig. 7 (items); `mix.rs` Figs. 8 and 9 (shards, writes);
//! `outage.rs` Fig. 10 (a DC down); `reads.rs` Fig. 11 (read against commit latency).

mod common;
mod contention;
mod dcs;
mod mix;
mod ops;
mod outage;
mod reads;

use super::Experiment;
use contention::fig7;
use dcs::{fig3, fig4};
use mix::{fig8, fig9};
use ops::{fig5, fig6};
use outage::fig10;
use reads::fig11;

/// This paper's experiments, as `--experiment list` shows them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "rc-fig3",
        about: "replicated-commit.md Fig. 3: commit latency for DC sets C .. CVOIS, rc vs replog",
        run: fig3,
        sim: true,
    },
    Experiment {
        name: "rc-fig4",
        about: "replicated-commit.md Fig. 4: replog leader placements C/C/C, C/V/O, V/O/I, S/S/S vs rc",
        run: fig4,
        sim: true,
    },
    Experiment {
        name: "rc-fig5",
        about: "replicated-commit.md Fig. 5 and §4.3: transaction latency vs operations per transaction, crossover",
        run: fig5,
        sim: true,
    },
    Experiment {
        name: "rc-fig6",
        about: "replicated-commit.md Fig. 6: throughput (committed ops/s) vs number of clients",
        run: fig6,
        sim: true,
    },
    Experiment {
        name: "rc-fig7",
        about: "replicated-commit.md Fig. 7: contention, commits out of 2500 for 150..6000 items",
        run: fig7,
        sim: true,
    },
    Experiment {
        name: "rc-fig8",
        about: "replicated-commit.md Fig. 8: commit latency vs number of shards (1..3), rc vs replog",
        run: fig8,
        sim: true,
    },
    Experiment {
        name: "rc-fig9",
        about: "replicated-commit.md Fig. 9: commit and transaction latency, commits, vs write:read ratio",
        run: fig9,
        sim: true,
    },
    Experiment {
        name: "rc-fig10",
        about: "replicated-commit.md Fig. 10: DC C goes down for a minute; commit latency of C's clients",
        run: fig10,
        sim: true,
    },
    Experiment {
        name: "rc-fig11",
        about: "replicated-commit.md Fig. 11: read latency against commit latency, clients in V and I",
        run: fig11,
        sim: true,
    },
];
