//! Interactive transactions (`Client::begin`) against in-process TCP clusters of every
//! protocol that offers them: reads through the protocol, own writes, repeatable
//! reads, commit, abort, drop, and concurrent read-modify-write transactions that
//! must not lose an update. CrossStitch refuses them by name.

mod common;

use common::{cluster, serve_all};
use meridian_client::{Client, Error, Options, Retry};
use meridian_core::{Key, Outcome, Value};
use meridian_txn::script::{self, Op};
use std::sync::Arc;
use std::time::Duration;

fn v(n: u64) -> Option<Value> {
    Some(Value::from_u64(n))
}

async fn connect(protocol: &str, clients: u32) -> Client {
    let c = cluster(protocol);
    serve_all(&c);
    let opts = Options {
        clients,
        timeout: Duration::from_secs(5),
        ..Options::default()
    };
    Client::connect_to(c, opts).await.unwrap()
}

/// Adds 1 to `key` in an interactive transaction, retrying aborts; returns attempts.
async fn increment(db: &Client, key: &Key) -> u32 {
    for attempt in 1..=200 {
        let mut t = db.begin().await.unwrap();
        let n = match t.read(key).await {
            Ok(x) => x.and_then(|x| x.as_u64()).unwrap_or(0),
            Err(Error::Aborted { .. }) => continue,
            Err(e) => panic!("read: {e}"),
        };
        tokio::time::sleep(Duration::from_millis(2)).await; // think time
        t.write(key.clone(), Value::from_u64(n + 1));
        match t.commit().await {
            Ok(_) => return attempt,
            Err(Error::Aborted { .. }) => {
                tokio::time::sleep(Duration::from_millis(5 * attempt as u64)).await;
            }
            Err(e) => panic!("commit: {e}"),
        }
    }
    panic!("an increment did not commit in 200 attempts");
}

async fn exercise(protocol: &str) {
    let db = connect(protocol, 4).await;
    assert!(db.info().interactive, "{protocol}");
    let (x, y) = (Key::from("x"), Key::from("y"));

    // Read an absent key, write, commit.
    let mut t = db.begin().await.unwrap();
    assert_eq!(t.read(&x).await.unwrap(), None, "{protocol}");
    t.write(x.clone(), Value::from_u64(1));
    t.write(y.clone(), Value::from_u64(10));
    let done = t.commit().await.unwrap();
    assert_eq!(done.record.outcome, Outcome::Committed);
    assert_eq!(done.record.program, script::NAME);
    assert_eq!(done.record.writes.len(), 2);

    // Reads see the commit; own writes; a second read repeats the first.
    let mut t = db.begin().await.unwrap();
    assert_eq!(t.read(&x).await.unwrap(), v(1), "{protocol}");
    t.write(x.clone(), Value::from_u64(2));
    assert_eq!(t.read(&x).await.unwrap(), v(2), "{protocol}: own write");
    assert_eq!(t.read(&y).await.unwrap(), v(10), "{protocol}");
    assert_eq!(t.read(&y).await.unwrap(), v(10), "{protocol}: repeatable");
    let id = t.id().expect("an id once a read was answered");
    let done = t.commit().await.unwrap();
    assert_eq!(done.txn, id);
    assert_eq!(done.record.reads.len(), 2, "{protocol}: two keys read, once each");

    // An aborted transaction's writes never appear.
    let mut t = db.begin().await.unwrap();
    assert_eq!(t.read(&x).await.unwrap(), v(2));
    t.write(x.clone(), Value::from_u64(99));
    t.abort().await.unwrap();
    // A dropped one is aborted too, and releases what it held: the next writer of x
    // commits well inside the 5 s timeout (the servers' idle abort takes 10 s).
    let mut t = db.begin().await.unwrap();
    assert_eq!(t.read(&x).await.unwrap(), v(2));
    t.write(x.clone(), Value::from_u64(98));
    drop(t);
    let mut t = db.begin().await.unwrap();
    assert_eq!(t.read(&x).await.unwrap(), v(2), "{protocol}: aborted writes invisible");
    t.write(x.clone(), Value::from_u64(3));
    t.commit().await.unwrap();
    // A transaction that never sent anything has nothing to do.
    db.begin().await.unwrap().abort().await.unwrap();

    // Concurrent read-modify-write: no update is lost.
    let db = Arc::new(db);
    let c = Key::from("counter");
    let mut tasks = vec![];
    for _ in 0..3 {
        let (db, c) = (db.clone(), c.clone());
        tasks.push(tokio::spawn(async move {
            let mut a = 0;
            for _ in 0..5 {
                a += increment(&db, &c).await;
            }
            a
        }));
    }
    let mut attempts = 0;
    for t in tasks {
        attempts += t.await.unwrap();
    }
    // Judge only a committed read (an uncommitted one promises nothing under OCC).
    let seen = loop {
        let mut t = db.begin().await.unwrap();
        let seen = t.read(&c).await.unwrap();
        if t.commit().await.is_ok() {
            break seen;
        }
    };
    assert_eq!(seen, v(15), "{protocol}: {attempts} attempts for 15 increments");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_2pc_2pl() {
    exercise("2pc-2pl").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_2pc_occ() {
    exercise("2pc-occ").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_rc() {
    exercise("rc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_replog() {
    exercise("replog").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_hacommit() {
    exercise("hacommit").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crossstitch_refuses_interactive_but_runs_whole_scripts() {
    let db = connect("crossstitch", 1).await;
    assert!(!db.info().interactive);
    assert!(matches!(db.begin().await, Err(Error::Unsupported(m)) if m.contains("crossstitch")));
    let x = Key::from("x");
    // A whole script is an ordinary program.
    let whole = script::encode(&[
        Op::Write(x.clone(), Value::from_u64(5)),
        Op::Read(x.clone()),
        Op::Commit,
    ]);
    let done = db.run(script::NAME, whole).await.unwrap();
    assert_eq!(done.record.outcome, Outcome::Committed);
    // One that stops for input aborts, with the reason.
    let partial = script::encode(&[Op::Read(x.clone())]);
    match db.run(script::NAME, partial).await {
        Err(e @ Error::Aborted { .. }) => {
            let Error::Aborted { reason, .. } = &e else {
                unreachable!()
            };
            assert!(reason.to_string().contains("interactive"), "{reason}");
            assert!(!e.retry_helps(), "the same script would stop again: {reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_run_whole_that_stops_for_input_aborts() {
    let db = connect("2pc-2pl", 1).await;
    let x = Key::from("x");
    match db.run(script::NAME, script::encode(&[Op::Read(x.clone())])).await {
        Err(Error::Aborted { reason, .. }) => assert!(reason.to_string().contains("no caller"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // Its read lock went with it.
    let w = script::encode(&[Op::Write(x, Value::from_u64(1)), Op::Commit]);
    assert_eq!(
        db.run(script::NAME, w).await.unwrap().record.outcome,
        Outcome::Committed
    );
}

/// `Client::transact`: concurrent read-modify-writes of one key through the retry
/// helper lose no update, and conflicts were retried inside it. A commit that times
/// out is ambiguous (it may have applied): counted apart, never retried.
async fn transact_increments(protocol: &str) {
    let c = cluster(protocol);
    serve_all(&c);
    let opts = Options {
        clients: 3,
        timeout: Duration::from_secs(30),
        retry: Some(Retry {
            attempts: 500,
            backoff: Duration::from_millis(2),
        }),
        ..Options::default()
    };
    let db = Arc::new(Client::connect_to(c, opts).await.unwrap());
    let key = Key::from("counter");
    let mut tasks = vec![];
    for _ in 0..3 {
        let (db, key) = (db.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            let (mut ok, mut ambiguous, mut attempts) = (0u64, 0u64, 0u32);
            for _ in 0..5 {
                let r = db
                    .transact(|t| {
                        let key = key.clone();
                        Box::pin(async move {
                            let n = t.read(&key).await?.and_then(|v| v.as_u64()).unwrap_or(0);
                            tokio::time::sleep(Duration::from_millis(2)).await; // think time
                            t.write(key, Value::from(n + 1));
                            Ok(n + 1)
                        })
                    })
                    .await;
                match r {
                    Ok((_, done)) => {
                        ok += 1;
                        attempts += done.attempts;
                        assert_eq!(done.record.outcome, Outcome::Committed);
                    }
                    Err(Error::TimedOut(_)) => ambiguous += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            (ok, ambiguous, attempts)
        }));
    }
    let (mut ok, mut ambiguous, mut attempts) = (0, 0, 0);
    for t in tasks {
        let (o, a, n) = t.await.unwrap();
        (ok, ambiguous, attempts) = (ok + o, ambiguous + a, attempts + n);
    }
    let (seen, _) = db
        .transact(|t| {
            let key = key.clone();
            Box::pin(async move { Ok(t.read(&key).await?.and_then(|v| v.as_u64()).unwrap_or(0)) })
        })
        .await
        .unwrap();
    assert!(
        (ok..=ok + ambiguous).contains(&seen),
        "{protocol}: {seen} increments seen, {ok} committed, {ambiguous} ambiguous ({attempts} attempts)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transact_retries_conflicts_2pc_2pl() {
    transact_increments("2pc-2pl").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transact_retries_conflicts_replog() {
    transact_increments("replog").await;
}

/// Arguments a program refuses are the caller's error (`Error::Invalid`), found before
/// anything is sent; so is an unknown program.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_program_argument_is_the_callers_error() {
    let db = connect("2pc-2pl", 1).await;
    let sent = db.host().counters().await.sent;
    let r = db.run("transfer", vec![meridian_client::Arg::U64(1)]).await;
    assert!(
        matches!(&r, Err(Error::Invalid(m)) if m.contains("must be a key")),
        "{r:?}"
    );
    let r = db.run("no-such-program", vec![]).await;
    assert!(
        matches!(&r, Err(Error::Invalid(m)) if m.contains("no-such-program")),
        "{r:?}"
    );
    assert_eq!(db.host().counters().await.sent, sent, "nothing was sent");
}
