//! What the tests that run containers share: whether Docker answers, the compose
//! command, and the test's own image.
#![allow(dead_code)] // not every test binary runs containers

use std::path::Path;
use std::process::{Command, Output};

/// Runs a command to its end.
pub fn run(c: &mut Command) -> Output {
    c.output().unwrap_or_else(|e| panic!("cannot run {c:?}: {e}"))
}

/// The compose command this machine has: `docker-compose` (v1) or `docker compose`.
pub fn compose_cmd() -> Option<Vec<String>> {
    let ok = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if ok(&["docker-compose", "version"]) {
        Some(vec!["docker-compose".into()])
    } else if ok(&["docker", "compose", "version"]) {
        Some(vec!["docker".into(), "compose".into()])
    } else {
        None
    }
}

/// Why this machine cannot run the test, if it cannot.
pub fn unavailable() -> Option<String> {
    match Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
    {
        Err(e) => return Some(format!("no docker command ({e})")),
        Ok(o) if !o.status.success() => {
            return Some(format!(
                "the Docker engine does not answer: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
        Ok(_) => {}
    }
    if compose_cmd().is_none() {
        return Some("neither `docker-compose` nor `docker compose` is installed".into());
    }
    None
}

/// The test's image, removed on drop.
pub struct Image(pub String);

impl Drop for Image {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rmi", "-f", &self.0]).output();
    }
}

/// Builds the image `tag` from this test build's `meridian` (scripts/docker-image.sh).
pub fn image(tag: &str) -> Image {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/docker-image.sh");
    let o = run(Command::new("bash")
        .arg(&script)
        .args(["--binary", env!("CARGO_BIN_EXE_meridian"), "--tag", tag]));
    assert!(o.status.success(), "docker-image.sh: {}", super::text(&o));
    Image(tag.to_string())
}
