//! The checker's time on a saved history, without the simulation:
//! `cargo run --release -p meridian-check --example checkbench -- HISTORY.jsonl [RUNS]`.
//! Write a large history with e.g. `meridian sim --protocol 2pc-2pl --topology rc5
//! --workload ycsb:keys=1000000 --clients 256 --txns 1000000 --history h.jsonl`.

use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: checkbench HISTORY.jsonl [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {path}: {e}");
            std::process::exit(2);
        }
    };
    let t0 = Instant::now();
    let h = match meridian_check::jsonl::read_for_check(std::io::BufReader::new(file)).map(|(h, _)| h) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    println!("read {} txns in {:.2} s", h.txns.len(), t0.elapsed().as_secs_f64());
    for _ in 0..runs {
        let t = Instant::now();
        let r = meridian_check::check(&h);
        println!(
            "check {:.2} s, serializable={} ok={}",
            t.elapsed().as_secs_f64(),
            r.serializable,
            r.ok()
        );
    }
    // The process ends here; freeing the history first would only cost time.
    std::process::exit(0);
}
