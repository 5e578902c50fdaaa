//! Server images (`Protocol::image`/`restore`, what the TCP runtime checkpoints): a run
//! whose servers are rebuilt from their images every few inputs is identical to one
//! whose servers never are. An image that forgets a field, or restores one wrongly,
//! changes some later decision, and so the report or the history.

use meridian_core::Topology;
use meridian_sim::{run_named, SimConfig, SimReport};

/// The protocols whose servers have an image.
const WITH_IMAGES: [&str; 2] = ["2pc-2pl", "2pc-occ"];

fn strip(r: &SimReport) -> String {
    let mut r = r.clone();
    r.wall_s = 0.0;
    serde_json::to_string(&r).unwrap()
}

/// Crashes, partitions, loss, duplication and reordering, with contention: the servers
/// hold locks, prepared transactions, queued reads and a log with a synced prefix when
/// they are rebuilt.
#[test]
fn images_change_nothing() {
    for p in WITH_IMAGES {
        for (topo, seed) in [("rc5", 1), ("us3", 2), ("lan", 3)] {
            let mut c = SimConfig::new(Topology::preset(topo).unwrap(), "ycsb:theta=0.9,keys=200");
            c.txns = 800;
            c.clients = 24;
            c.seed = seed;
            c.faults = "random:crashes=3,partitions=1,loss=0.02,dup=0.02,reorder=0.1".into();
            let plain = run_named(p, &c, &mut |_, _| {}).unwrap();
            assert!(plain.report.committed > 100, "{p} {topo}: {}", strip(&plain.report));
            for every in [1, 7] {
                c.image_every = every;
                let imaged = run_named(p, &c, &mut |_, _| {}).unwrap();
                assert_eq!(strip(&plain.report), strip(&imaged.report), "{p} {topo} every {every}");
                assert_eq!(plain.history, imaged.history, "{p} {topo} every {every}");
            }
        }
    }
}

/// A protocol without an image is refused, not silently run without one.
#[test]
fn a_protocol_without_an_image_is_refused() {
    let mut c = SimConfig::new(Topology::preset("lan").unwrap(), "ycsb");
    c.image_every = 5;
    let err = run_named("hacommit", &c, &mut |_, _| {}).unwrap_err().to_string();
    assert!(err.contains("has no server image"), "{err}");
}
