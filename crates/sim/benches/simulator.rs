//! Simulator throughput: events and simulated transactions per wall-clock second.
//! `cargo bench -p meridian-sim`; criterion reports time per run of a fixed workload,
//! and the throughput lines give events/s (elements = events processed).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use meridian_core::Topology;
use meridian_sim::{run_named, SimConfig};

/// The allocator the `meridian` binary uses, so the figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn config(topo: &str, workload: &str, txns: u64) -> SimConfig {
    let mut c = SimConfig::new(Topology::preset(topo).unwrap(), workload);
    c.txns = txns;
    c.clients = 64;
    c
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("simulator");
    g.sample_size(10);
    for (p, topo, w) in [
        ("2pc-2pl", "rc5", "ycsb"),
        ("2pc-occ", "rc5", "ycsb"),
        ("2pc-2pl", "lan", "ycsb:keys=100000"),
    ] {
        let cfg = config(topo, w, 20_000);
        let events = run_named(p, &cfg, &mut |_, _| {}).unwrap().report.events;
        g.throughput(Throughput::Elements(events));
        g.bench_with_input(
            BenchmarkId::new(format!("{p}/{topo}"), "20k-txns events"),
            &cfg,
            |b, cfg| b.iter(|| run_named(p, cfg, &mut |_, _| {}).unwrap().report.committed),
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
