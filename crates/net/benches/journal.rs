use std::time::Instant;
fn main() {
    let dir = std::env::args().nth(1).unwrap_or("/tmp/jbdata".into());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let val = vec![7u8; 200];
    for &(batch, sync) in &[(1usize, true), (16, true), (64, false)] {
        let batches = if sync { 300 } else { 2000 };
        // fjall
        let p = format!("{dir}/fjall-{batch}-{sync}");
        let ks = fjall::Config::new(&p).open().unwrap();
        let part = ks
            .open_partition("j", fjall::PartitionCreateOptions::default())
            .unwrap();
        let t = Instant::now();
        let mut seq = 0u64;
        for _ in 0..batches {
            let mut b = ks.batch();
            for _ in 0..batch {
                seq += 1;
                b.insert(&part, seq.to_be_bytes(), &val);
            }
            b.commit().unwrap();
            ks.persist(if sync {
                fjall::PersistMode::SyncAll
            } else {
                fjall::PersistMode::Buffer
            })
            .unwrap();
        }
        let f = t.elapsed().as_secs_f64() / batches as f64 * 1e6;
        // redb
        const T: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("j");
        let db = redb::Database::create(format!("{dir}/redb-{batch}-{sync}")).unwrap();
        let t = Instant::now();
        let mut seq = 0u64;
        for _ in 0..batches {
            let mut w = db.begin_write().unwrap();
            w.set_durability(if sync {
                redb::Durability::Immediate
            } else {
                redb::Durability::None
            });
            {
                let mut tb = w.open_table(T).unwrap();
                for _ in 0..batch {
                    seq += 1;
                    tb.insert(seq, val.as_slice()).unwrap();
                }
            }
            w.commit().unwrap();
        }
        let r = t.elapsed().as_secs_f64() / batches as f64 * 1e6;
        println!(
            "batch {batch:3} sync {sync:5}: fjall {f:8.1} us/batch  redb {r:8.1} us/batch  redb/fjall {:.2}",
            r / f
        );
    }
}
