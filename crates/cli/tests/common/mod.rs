//! What the integration tests that run `meridian` processes share.

pub mod cluster;
pub mod docker;

use std::process::Output;

/// Runs `meridian` with `args` to its end.
#[allow(dead_code)] // not every test binary runs it this way
pub fn run(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_meridian"))
        .args(args)
        .output()
        .expect("run meridian")
}

/// A finished process's stderr.
#[allow(dead_code)]
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A finished process's status, stdout and stderr, for an assertion's message.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A base port with `n` free ports after it, different for each test of this run.
#[allow(dead_code)] // not every test binary starts clusters
pub fn free_base(n: u16) -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let pid = std::process::id();
    loop {
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Below Linux's ephemeral range (32768..), where the clusters' own outgoing
        // connections take their source ports.
        let base = 20_000 + ((pid % 97) * 311 + k * 40) % 12_000;
        let free = (0..n as u32).all(|i| std::net::TcpListener::bind(("127.0.0.1", (base + i) as u16)).is_ok());
        if free {
            return base as u16;
        }
    }
}
