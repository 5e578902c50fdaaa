//! The client library against a cluster of in-process servers on loopback (each a
//! full TCP server, as `meridian server` runs it): commits, typed errors, retries,
//! slot conflicts, an unreachable cluster. Interactive transactions: `interactive.rs`.

mod common;

use common::{cluster, serve_all, serve_but};
use meridian_client::{AbortReason, Client, Error, Options, Retry};
use meridian_core::{Key, Outcome};
use meridian_txn::{Arg, Call};
use std::sync::Arc;
use std::time::Duration;

fn transfer(from: &str, to: &str, amount: u64) -> Vec<Arg> {
    vec![
        Arg::Key(Key::new(from)),
        Arg::Key(Key::new(to)),
        Arg::U64(amount),
        Arg::U64(100),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_typed_errors_and_retries() {
    let c = cluster("2pc-2pl");
    serve_all(&c);
    let opts = Options {
        clients: 2,
        ..Options::default()
    };
    let db = Client::connect_to(c.clone(), opts.clone()).await.unwrap();
    assert_eq!(db.info().name, "2pc-2pl");

    let done = db.run("transfer", transfer("a", "b", 30)).await.unwrap();
    assert_eq!(done.attempts, 1);
    assert_eq!(done.record.outcome, Outcome::Committed);
    assert_eq!(done.record.writes.len(), 2);

    // The program aborts itself: a typed abort with the program's reason.
    match db.run("transfer", transfer("a", "b", 500)).await {
        Err(Error::Aborted { reason, attempts, .. }) => {
            assert!(
                matches!(&reason, AbortReason::User(m) if m.contains("insufficient funds")),
                "{reason}"
            );
            assert!(
                !reason.retry_helps(),
                "the program decided: running it again aborts again"
            );
            assert_eq!(attempts, 1);
        }
        other => panic!("expected an abort, got {other:?}"),
    }
    // With retries, a transaction that aborted itself is not retried (it would abort
    // again): reported after one attempt.
    let retrying = Client::connect_to(
        c.clone(),
        Options {
            first_slot: 10,
            retry: Some(Retry {
                attempts: 3,
                backoff: Duration::from_millis(5),
            }),
            ..Options::default()
        },
    )
    .await
    .unwrap();
    match retrying.run("transfer", transfer("a", "b", 500)).await {
        Err(Error::Aborted { attempts, .. }) => assert_eq!(attempts, 1),
        other => panic!("expected an abort after 1 attempt, got {other:?}"),
    }
    // Unknown programs never reach the cluster.
    match db.run("no-such-program", vec![]).await {
        Err(Error::Invalid(m)) => assert!(m.contains("unknown program"), "{m}"),
        other => panic!("{other:?}"),
    }

    // Concurrent calls share the two slots; the balance is conserved.
    let db = Arc::new(db);
    let mut tasks = vec![];
    for i in 0..8u64 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let (f, t) = if i % 2 == 0 { ("a", "b") } else { ("b", "a") };
            db.run_call(Call {
                program: "transfer".into(),
                args: transfer(f, t, 1),
            })
            .await
            .unwrap()
        }));
    }
    for t in tasks {
        let r = t.await.unwrap();
        assert_ne!(r.outcome, Outcome::Unknown);
    }

    // A second process asking for exactly the slots in use is refused, by name.
    let exact = Options {
        exact_slots: true,
        ..opts.clone()
    };
    match Client::connect_to(c.clone(), exact).await {
        Err(Error::Unavailable(m)) => assert!(m.contains("client slot"), "{m}"),
        Err(e) => panic!("expected Unavailable, got {e}"),
        Ok(_) => panic!("expected Unavailable, got a client"),
    }
    // By default it moves on to free slots and runs.
    let other = Client::connect_to(c.clone(), opts).await.expect("free slots taken");
    let done = other.run("transfer", transfer("c", "d", 1)).await.unwrap();
    assert_eq!(done.record.outcome, Outcome::Committed);
}

/// Issue 23: two application processes (here two clients of one test) connect at
/// once with default options, no slot arguments: both get slots and run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_connect_at_once_without_slot_arguments() {
    let c = cluster("2pc-2pl");
    serve_all(&c);
    let (a, b) = tokio::join!(
        Client::connect_to(c.clone(), Options::default()),
        Client::connect_to(c.clone(), Options::default())
    );
    let (a, b) = (a.expect("first client"), b.expect("second client"));
    for db in [&a, &b] {
        let done = db.run("transfer", transfer("x", "y", 1)).await.unwrap();
        assert_eq!(done.record.outcome, Outcome::Committed);
    }
}

/// Every address refuses (nothing listens): `connect` fails as soon as each has
/// refused a few dials, not after its `connect_timeout` (set far beyond the test's
/// generous deadline here), with an error that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_cluster_is_unavailable_not_a_hang() {
    let c = cluster("2pc-2pl"); // nothing serves it
    let r = Client::connect_to(
        c,
        Options {
            connect_timeout: Duration::from_secs(3600),
            ..Options::default()
        },
    );
    let r = tokio::time::timeout(Duration::from_secs(300), r)
        .await
        .expect("connect waited for its timeout although every server refused");
    match r {
        Err(Error::Unavailable(m)) => assert!(m.contains("none of the 6 servers accepts a connection"), "{m}"),
        Err(e) => panic!("expected Unavailable, got {e}"),
        Ok(_) => panic!("expected Unavailable, got a client"),
    }
    let bad = Client::connect_to(
        cluster("2pc-2pl"),
        Options {
            dc: Some("mars".into()),
            ..Options::default()
        },
    )
    .await;
    assert!(matches!(bad, Err(Error::Invalid(m)) if m.contains("mars")));
}

/// Issue 16: an application starts while one server is down: `connect` goes on with
/// the servers it reached as soon as the down one has refused a few dials (not after
/// its `connect_timeout`, set far beyond the test's deadline here), and a protocol that tolerates the failure commits (here
/// HACommit: every group keeps a majority; a group that lost its leader fails over).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_succeeds_with_one_server_down() {
    let c = cluster("hacommit");
    serve_but(&c, Some(5));
    let opts = Options {
        clients: 1,
        connect_timeout: Duration::from_secs(600),
        timeout: Duration::from_secs(20),
        retry: Some(Retry {
            attempts: 20,
            backoff: Duration::from_millis(100),
        }),
        ..Options::default()
    };
    let db = tokio::time::timeout(Duration::from_secs(120), Client::connect_to(c.clone(), opts))
        .await
        .expect("connect waited for the down server instead of going on without it")
        .expect("connect with a server down");
    let mut committed = 0;
    for i in 0..5 {
        // A timeout is ambiguous (the transfer may still commit): count commits only.
        if db
            .run("transfer", transfer(&format!("a{i}"), &format!("b{i}"), 1))
            .await
            .is_ok()
        {
            committed += 1;
        }
    }
    assert!(committed >= 1, "nothing committed with one server of six down");
}

/// A missing credential, one of another cluster, and a role that may not run
/// transactions each give one `Error::Credentials` naming the problem, not a hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_wrong_credential_is_one_clear_error() {
    use meridian_net::tls::{self, Credentials, Role, Validity};
    let c = cluster("2pc-2pl");
    serve_all(&c);
    let certs = c.tls_dir().unwrap();
    let with = |creds: Credentials| Options {
        credentials: Some(creds),
        connect_timeout: Duration::from_secs(60),
        ..Options::default()
    };
    // No such files.
    let missing = Credentials::in_dir(&certs.join("nowhere"), Role::Client);
    match Client::connect_to(c.clone(), with(missing)).await {
        Err(Error::Credentials(m)) => assert!(m.contains("nowhere") && m.contains("ca.pem"), "{m}"),
        other => panic!("{:?}", other.err()),
    }
    // A client certificate of another cluster (trusting its own CA).
    let other = tempfile::tempdir().unwrap();
    tls::issue_cluster(other.path(), 1, 6, Validity::days(1)).unwrap();
    let start = std::time::Instant::now();
    match Client::connect_to(c.clone(), with(Credentials::in_dir(other.path(), Role::Client))).await {
        Err(Error::Credentials(m)) => assert!(m.contains("UnknownIssuer") || m.contains("UnknownCA"), "{m}"),
        other => panic!("{:?}", other.err()),
    }
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "waited for the whole connect timeout"
    );
    // This cluster's observer certificate: it may not host client slots.
    match Client::connect_to(c.clone(), with(Credentials::in_dir(&certs, Role::Observer))).await {
        Err(Error::Credentials(m)) => assert!(m.contains("may not host client slots"), "{m}"),
        other => panic!("{:?}", other.err()),
    }
    // And the right one works.
    let db = Client::connect_to(c.clone(), with(Credentials::in_dir(&certs, Role::Client)))
        .await
        .unwrap();
    db.run("transfer", transfer("c", "d", 1)).await.unwrap();
}
