//! A server's Prometheus metrics endpoint (`meridian server --metrics ADDR`,
//! `meridian cluster up --metrics-base-port P`): `GET /metrics` answers OpenMetrics text
//! ([`CONTENT_TYPE`]), built with `prometheus-client` from the node's status, taken
//! from its event loop at each scrape (the same answer `meridian cluster status`
//! gets). Counters: inputs handled, messages sent (and to other DCs), dropped, outcomes
//! applied by outcome; gauges: peers connected, inputs queued, keys locked, journal
//! entries, uptime. Transaction latencies and abort causes are measured by clients,
//! not servers: `meridian bench --metrics` serves them through [`serve_text`].

use crate::host::Event;
use crate::wire::{Status, Wire};
use meridian_core::NodeId;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tracing::debug;

/// What `prometheus-client` writes, named as such: OpenMetrics text (`# EOF`, counter
/// families typed without their `_total` suffix). It was served as Prometheus text
/// 0.0.4, whose parser turned every counter into an untyped series (issue 53);
/// Prometheus asks for OpenMetrics first and parses it as such.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A bearer token: its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(pub String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// Reads a token from a file others cannot read (mode 0600, as a key), trimmed.
    pub fn from_file(path: &std::path::Path) -> Result<Token, String> {
        crate::tls::check_private(path).map_err(|e| e.to_string())?;
        let t = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let t = t.trim();
        if t.is_empty() || t.contains(char::is_whitespace) {
            return Err(format!("{}: want one token (no spaces) in the file", path.display()));
        }
        Ok(Token(t.to_string()))
    }
}

/// Who may scrape a server's endpoint: anyone who reaches it (the default), or one who
/// shows the bearer token, and over HTTPS with the node's certificate if `tls`.
#[derive(Clone, Default)]
pub struct MetricsAuth {
    /// `Authorization: Bearer TOKEN` required (`meridian server --metrics-token-file`).
    pub token: Option<Token>,
    /// Serve HTTPS with the node's certificate (`--metrics-tls`): Prometheus checks it
    /// with the cluster's `ca.pem` and `server_name: node-N.meridian`.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

impl std::fmt::Debug for MetricsAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        write!(
            f,
            "MetricsAuth {{ token: {}, tls: {} }}",
            self.token.is_some(),
            self.tls.is_some()
        )
    }
}

/// Accepts scrapes until the process ends.
pub(crate) async fn serve<M: Send + 'static>(
    l: TcpListener,
    inbox: mpsc::Sender<Event<M>>,
    node: NodeId,
    auth: MetricsAuth,
) {
    loop {
        let Ok((s, peer)) = l.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let (inbox, auth) = (inbox.clone(), auth.clone());
        tokio::spawn(async move {
            let body = || async move { status(&inbox).await.map(|st| render(node, &st)) };
            let token = auth.token.as_ref().map(|t| t.0.as_str());
            let r = match &auth.tls {
                None => answer_authorized(s, token, body).await,
                Some(acc) => match tokio::time::timeout(crate::tls::HANDSHAKE_TIMEOUT, acc.accept(s)).await {
                    Ok(Ok(t)) => answer_authorized(t, token, body).await,
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(std::io::Error::other("no TLS handshake in time")),
                },
            };
            if let Err(e) = r {
                debug!(%peer, "metrics scrape: {e}");
            }
        });
    }
}

/// Serves `GET /metrics` with whatever `body` renders at each scrape (text exposition
/// format), until the process ends: the endpoint of a process that is not a server
/// (`meridian bench --metrics`).
pub async fn serve_text(l: TcpListener, body: std::sync::Arc<dyn Fn() -> String + Send + Sync>) {
    accept(l, move |s| {
        let body = body.clone();
        async move { answer_with(s, || async move { Some(body()) }).await }
    })
    .await
}

/// Accepts connections until the process ends, answering each on its own task.
async fn accept<F, Fut>(l: TcpListener, answer: F)
where
    F: Fn(TcpStream) -> Fut,
    Fut: std::future::Future<Output = std::io::Result<()>> + Send + 'static,
{
    loop {
        let Ok((s, _)) = l.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let fut = answer(s);
        tokio::spawn(async move {
            if let Err(e) = fut.await {
                debug!("metrics scrape: {e}");
            }
        });
    }
}

/// Answers one HTTP request: `GET /metrics` with `body()` (503 if it gives nothing),
/// anything else with 404.
async fn answer_with<S, F, Fut>(s: S, body: F) -> std::io::Result<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Option<String>>,
{
    answer_authorized(s, None, body).await
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// [`answer_with`], requiring `Authorization: Bearer TOKEN` if a token is set (401
/// without it).
async fn answer_authorized<S, F, Fut>(mut s: S, token: Option<&str>, body: F) -> std::io::Result<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Option<String>>,
{
    // The request head, up to 8 KiB.
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .map_err(|_| std::io::Error::other("request timed out"))??;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&head);
    let authorized = token.is_none_or(|t| {
        line.lines().skip(1).any(|h| {
            let Some((name, value)) = h.split_once(':') else {
                return false;
            };
            // Bytes, not `str` slices: a header is unauthenticated input, and a
            // multi-byte character across byte 7 must not panic.
            let v = value.trim().as_bytes();
            name.trim().eq_ignore_ascii_case("authorization")
                && v.len() > 7
                && v[..7].eq_ignore_ascii_case(b"bearer ")
                && same(v[7..].trim_ascii(), t.as_bytes())
        })
    });
    let (code, body) = if !authorized {
        (
            "401 Unauthorized\r\nWWW-Authenticate: Bearer",
            "a bearer token is required (Authorization: Bearer TOKEN)\n".to_string(),
        )
    } else if line.starts_with("GET /metrics ") || line.starts_with("GET /metrics?") {
        match body().await {
            Some(text) => ("200 OK", text),
            None => (
                "503 Service Unavailable",
                "the node's event loop did not answer\n".to_string(),
            ),
        }
    } else {
        ("404 Not Found", "only GET /metrics is served here\n".to_string())
    };
    let resp = format!(
        "HTTP/1.1 {code}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        if code.starts_with("200") {
            CONTENT_TYPE
        } else {
            "text/plain; charset=utf-8"
        },
        body.len()
    );
    s.write_all(resp.as_bytes()).await?;
    s.shutdown().await
}

/// The node's status, from its event loop.
async fn status<M>(inbox: &mpsc::Sender<Event<M>>) -> Option<Status> {
    let (tx, mut rx) = mpsc::channel(1);
    inbox.send(Event::Status(tx)).await.ok()?;
    let bytes = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.ok()??;
    // A whole frame: skip its 4-byte length.
    match crate::decode::<Wire<()>>(bytes.get(4..)?) {
        Ok(Wire::Status(s)) => Some(s),
        _ => None,
    }
}

/// The text exposition of one status.
pub(crate) fn render(node: NodeId, st: &Status) -> String {
    let mut r = Registry::with_prefix_and_labels(
        "meridian",
        [
            (
                std::borrow::Cow::from("node"),
                std::borrow::Cow::from(node.0.to_string()),
            ),
            (
                std::borrow::Cow::from("protocol"),
                std::borrow::Cow::from(st.protocol.clone()),
            ),
        ]
        .into_iter(),
    );
    let counter = |r: &mut Registry, name: &str, help: &str, v: u64| {
        let c: Counter = Counter::default();
        c.inc_by(v);
        r.register(name, help, c);
    };
    let gauge = |r: &mut Registry, name: &str, help: &str, v: i64| {
        let g: Gauge = Gauge::default();
        g.set(v);
        r.register(name, help, g);
    };
    counter(&mut r, "inputs", "Messages and timers handled", st.counters.inputs);
    counter(&mut r, "messages_sent", "Messages sent", st.counters.sent);
    counter(
        &mut r,
        "messages_sent_wan",
        "Messages sent to another DC",
        st.counters.sent_wan,
    );
    counter(
        &mut r,
        "messages_dropped",
        "Messages dropped (queue full or no route)",
        st.counters.dropped,
    );
    counter(
        &mut r,
        "messages_cut",
        "Messages dropped because their link was cut (cluster partition)",
        st.counters.cut,
    );
    if let Some((c, a)) = st.applied {
        let f: Family<Vec<(String, String)>, Counter> = Family::default();
        f.get_or_create(&vec![("outcome".into(), "committed".into())]).inc_by(c);
        f.get_or_create(&vec![("outcome".into(), "aborted".into())]).inc_by(a);
        r.register("outcomes_applied", "Transaction outcomes this server applied", f);
    }
    gauge(
        &mut r,
        "peers_connected",
        "Other servers connected",
        st.peers_connected as i64,
    );
    gauge(
        &mut r,
        "queue_depth",
        "Messages and timers waiting in the event loop",
        st.queued as i64,
    );
    if let Some(l) = st.locked {
        gauge(
            &mut r,
            "locked_keys",
            "Keys locked or holding uncommitted versions",
            l as i64,
        );
    }
    if let Some((live, collected)) = st.versions {
        gauge(
            &mut r,
            "versions",
            "Versions its store holds (committed and tentative)",
            live as i64,
        );
        counter(
            &mut r,
            "versions_collected",
            "Versions version GC collected (carried across restarts by the journal)",
            collected,
        );
    }
    if let Some(j) = st.journal_entries {
        gauge(&mut r, "journal_entries", "Entries in the input journal", j as i64);
    }
    if let Some(n) = st.journal_syncs {
        counter(&mut r, "journal_syncs", "Times the input journal was fsynced", n);
    }
    gauge(
        &mut r,
        "uptime_seconds",
        "Seconds since the process started",
        (st.uptime_ms / 1000) as i64,
    );
    let mut out = String::new();
    let _ = encode(&mut out, &r);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Counters;

    /// Scrapes with a missing, wrong or malformed `Authorization` header (a multi-byte
    /// character across the scheme's end) get 401 and never a panic; the token gets 200.
    #[test]
    fn the_bearer_token_is_checked_on_bytes() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ask = |header: &str| -> String {
            let req = format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{header}\r\n");
            rt.block_on(async {
                let (mut c, s) = tokio::io::duplex(1 << 16);
                c.write_all(req.as_bytes()).await.unwrap();
                answer_authorized(s, Some("tok"), || async { Some("body\n".to_string()) })
                    .await
                    .unwrap();
                let mut out = String::new();
                c.read_to_string(&mut out).await.unwrap();
                out
            })
        };
        assert!(ask("Authorization: Bearer tok\r\n").starts_with("HTTP/1.1 200"));
        assert!(ask("authorization: bearer   tok  \r\n").starts_with("HTTP/1.1 200"));
        for bad in [
            "",
            "Authorization: Bearer tok2\r\n",
            "Authorization: Basic dG9r\r\n",
            "Authorization: Beare\u{e9}tok\r\n",
            "Authorization: \u{e9}\u{e9}\u{e9}\u{e9}tok\r\n",
        ] {
            let out = ask(bad);
            assert!(
                out.starts_with("HTTP/1.1 401") && !out.contains("body"),
                "{bad:?}: {out}"
            );
        }
    }

    /// A token file is read like a key: 0600 only, one word, never shown by `Debug`.
    #[test]
    fn a_token_file_must_be_private_and_one_word() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t");
        std::fs::write(&p, "abc123\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let t = Token::from_file(&p).unwrap();
        assert_eq!(t.0, "abc123");
        assert!(!format!("{t:?}").contains("abc123"));
        std::fs::write(&p, "two words").unwrap();
        assert!(Token::from_file(&p).unwrap_err().contains("one token"));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(Token::from_file(&p).unwrap_err().contains("chmod 600"));
    }

    #[test]
    fn renders_the_text_exposition_format() {
        let st = Status {
            node: NodeId(3),
            protocol: "replog".into(),
            peers_connected: 5,
            replayed: 0,
            role: None,
            locked: Some(2),
            queued: 7,
            uptime_ms: 12_000,
            counters: Counters {
                inputs: 100,
                sent: 90,
                sent_wan: 40,
                dropped: 0,
                cut: 0,
            },
            applied: Some((30, 4)),
            journal_entries: None,
            journal_syncs: None,
            versions: Some((1500, 68_000)),
        };
        let t = render(NodeId(3), &st);
        assert!(
            t.contains("meridian_versions_collected_total{node=\"3\",protocol=\"replog\"} 68000"),
            "{t}"
        );
        assert!(t.contains("# TYPE meridian_inputs counter"), "{t}");
        assert!(
            t.contains("meridian_inputs_total{node=\"3\",protocol=\"replog\"} 100"),
            "{t}"
        );
        assert!(t.contains("outcome=\"aborted\""), "{t}");
        assert!(
            t.contains("meridian_queue_depth{node=\"3\",protocol=\"replog\"} 7"),
            "{t}"
        );
        assert!(t.ends_with("# EOF\n"), "{t}");
        parses_as_openmetrics(&t);
    }

    /// Parses `text` with Python's `prometheus_client` OpenMetrics parser (a real
    /// parser, strict about types and suffixes) and checks the counters come out typed
    /// as counters; skipped, with the reason printed, where Python or the package is
    /// missing (`.ci/run` installs it).
    pub(crate) fn parses_as_openmetrics(text: &str) {
        let script = "import sys\n\
            from prometheus_client.openmetrics.parser import text_string_to_metric_families as p\n\
            fams = list(p(sys.stdin.read()))\n\
            kinds = {f.name: f.type for f in fams}\n\
            assert kinds.get('meridian_inputs') == 'counter', kinds\n\
            print(len(fams))\n";
        let child = std::process::Command::new("python3")
            .args(["-c", "import prometheus_client"])
            .output();
        match child {
            Ok(o) if o.status.success() => {}
            _ => {
                eprintln!("skipped: python3 with prometheus_client is not installed (pip install prometheus_client)");
                return;
            }
        }
        use std::io::Write;
        let mut c = std::process::Command::new("python3")
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "the OpenMetrics parser refused the text: {}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
