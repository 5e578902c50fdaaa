//! What the integration tests that run `meridian` processes share.

use std::process::Output;

/// A finished process's status, stdout and stderr, for an assertion's message.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
