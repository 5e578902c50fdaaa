//! A small application on the client library: transfers between two accounts, then an
//! interactive read-modify-write, against a cluster started with `meridian cluster up`.
//!
//! ```sh
//! cargo run --release -- cluster up --protocol 2pc-2pl --topology us3 --dir /tmp/mc
//! cargo run --release -p meridian-client --example bank -- /tmp/mc/cluster.toml
//! cargo run --release -- cluster down --dir /tmp/mc
//! ```
//!
//! Any number of copies may run at once: each claims free client slots on its own.

use meridian_client::{AbortReason, Arg, Client, Error, Key, Options, Retry, Value};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "meridian-cluster/cluster.toml".into());
    let opts = Options {
        clients: 2,
        retry: Some(Retry::default()),
        ..Options::default()
    };
    let db = Client::connect(&path, opts).await?;
    println!("connected to a {} cluster ({path})", db.info().name);

    // `transfer FROM TO AMOUNT INITIAL`: accounts start at INITIAL; the program aborts
    // itself if FROM would go negative.
    let (a, b) = (Key::from("alice"), Key::from("bob"));
    for amount in [10, 20, 30, 500] {
        let args = vec![
            Arg::Key(a.clone()),
            Arg::Key(b.clone()),
            Arg::U64(amount),
            Arg::U64(100),
        ];
        match db.run("transfer", args).await {
            Ok(done) => println!(
                "transfer {amount}: committed as {} in {:?} ({} attempt(s))",
                done.txn, done.latency, done.attempts
            ),
            Err(Error::Aborted {
                reason: AbortReason::User(why),
                ..
            }) => println!("transfer {amount}: refused by the program: {why}"),
            Err(e) if e.retry_helps() => println!("transfer {amount}: gave up after retries: {e}"),
            Err(e) => return Err(e.into()),
        }
    }

    // An interactive transaction, where the protocol's client role runs it.
    if db.info().interactive {
        let visits = Key::from("visits");
        let mut t = db.begin().await?;
        let n = t.read(&visits).await?.and_then(|v| v.as_u64()).unwrap_or(0);
        t.write(visits, Value::from_u64(n + 1));
        let done = t.commit().await?;
        println!("visits: {} -> {} (committed as {})", n, n + 1, done.txn);
    } else {
        println!("{} ships whole programs: no interactive transactions", db.info().name);
    }
    Ok(())
}
