//! What the runtime's integration tests share: the servers' log, captured.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// Where the tracing subscriber of a test binary writes: the servers' log lines.
#[derive(Clone, Default)]
pub struct LogBuf(Arc<Mutex<Vec<u8>>>);

impl Write for LogBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogBuf {
    /// Installs a subscriber (once per test binary) that writes here; returns the
    /// buffer.
    pub fn capture() -> LogBuf {
        let logs = LogBuf::default();
        let w = logs.clone();
        let _ = tracing_subscriber::fmt()
            .with_writer(move || w.clone())
            .with_ansi(false)
            .try_init();
        logs
    }
    /// Everything logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}
