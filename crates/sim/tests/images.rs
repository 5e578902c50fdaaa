//! Server images (`Protocol::image`/`restore`, what the TCP runtime checkpoints): a run
//! whose servers are rebuilt from their images every few inputs is identical to one
//! whose servers never are. An image that forgets a field, or restores one wrongly,
//! changes some later decision, and so the report or the history. So does a server
//! that acts in its hash tables' order (a rebuilt table iterates in another).

use meridian_core::{ClientId, HomeRule, NodeId, Placement, Topology};
use meridian_protocols::twopc::{Cc, TwoPc};
use meridian_protocols::{Env, Protocol};
use meridian_sim::{run, run_named, SimConfig, SimReport};

fn strip(r: &SimReport) -> String {
    let mut r = r.clone();
    r.wall_s = 0.0;
    serde_json::to_string(&r).unwrap()
}

/// Crashes, partitions, loss, duplication and reordering, with contention: the servers
/// hold locks, prepared transactions, queued reads, logs with a synced prefix and
/// re-syncs in progress when they are rebuilt, at every input and at every 7th.
fn images_change_nothing(p: &str) {
    // Catenae's servers handle hundreds of inputs per transaction (epochs) and hold
    // ~100 KB each: an image at every input would take minutes.
    let catenae = p.starts_with("catenae");
    for (topo, seed) in [("rc5", 1), ("us3", 2)] {
        let mut c = SimConfig::new(Topology::preset(topo).unwrap(), "ycsb:theta=0.9,keys=200");
        c.txns = if catenae { 150 } else { 300 };
        c.clients = 24;
        c.seed = seed;
        c.faults = "random:crashes=3,partitions=1,loss=0.02,dup=0.02,reorder=0.1".into();
        let plain = run_named(p, &c, &mut |_, _| {}).unwrap();
        assert!(plain.report.committed >= 10, "{p} {topo}: {}", strip(&plain.report));
        for every in if catenae { vec![61] } else { vec![1, 7] } {
            c.image_every = every;
            let imaged = run_named(p, &c, &mut |_, _| {}).unwrap();
            assert_eq!(strip(&plain.report), strip(&imaged.report), "{p} {topo} every {every}");
            assert_eq!(plain.history, imaged.history, "{p} {topo} every {every}");
        }
    }
}

/// Protocols without a server image (their journals are never checkpointed): none
/// today. CrossStitch was here until it stopped acting in its hash tables' order.
const WITHOUT_IMAGE: [&str; 0] = [];

macro_rules! each_protocol {
    ($($test:ident: $p:expr,)*) => {
        $(
            #[test]
            fn $test() {
                images_change_nothing($p);
            }
        )*
        /// Every protocol has a test here, or is known to have no image (and is
        /// refused by `image_every`).
        #[test]
        fn every_protocol_is_covered() {
            let covered = [$($p),*];
            for p in meridian_protocols::PROTOCOLS {
                if WITHOUT_IMAGE.contains(&p) {
                    let mut c = SimConfig::new(Topology::preset("lan").unwrap(), "ycsb");
                    c.image_every = 1;
                    let err = run_named(p, &c, &mut |_, _| {}).unwrap_err().to_string();
                    assert!(err.contains("has no server image"), "{p}: {err}");
                } else {
                    assert!(covered.contains(&p), "{p} has no image test");
                }
            }
        }
    };
}

each_protocol! {
    images_change_nothing_2pc_2pl: "2pc-2pl",
    images_change_nothing_2pc_2pl_two_copies: "2pc-2pl:copies=2",
    images_change_nothing_2pc_occ: "2pc-occ",
    images_change_nothing_rc: "rc",
    images_change_nothing_rc_forgetting: "rc:forget=1s",
    images_change_nothing_replog: "replog",
    images_change_nothing_replog_truncating: "replog:keep=20,forget=1s",
    images_change_nothing_hacommit: "hacommit",
    images_change_nothing_hacommit_rc: "hacommit-rc",
    images_change_nothing_hacommit_forgetting: "hacommit:forget=1s",
    images_change_nothing_crossstitch: "crossstitch",
    images_change_nothing_pc_2pl: "pc-2pl",
    images_change_nothing_pc_occ: "pc-occ",
    images_change_nothing_hier_lock: "hier-lock",
    images_change_nothing_hier_ts: "hier-ts",
    images_change_nothing_2pc_deferred: "2pc-deferred",
    images_change_nothing_catenae: "catenae",
    images_change_nothing_catenae_secondary: "catenae:secondary=on",
    images_change_nothing_catenae_majority: "catenae:majority=on",
}

/// 2PC without its image (`Protocol::image` left at its default).
#[derive(Clone)]
struct NoImage(TwoPc);

impl Protocol for NoImage {
    type Msg = <TwoPc as Protocol>::Msg;
    type Server = <TwoPc as Protocol>::Server;
    type Client = <TwoPc as Protocol>::Client;
    fn name(&self) -> &'static str {
        "no-image"
    }
    fn strict(&self) -> bool {
        true
    }
    fn client_may_send(&self, m: &Self::Msg) -> meridian_protocols::ClientSend {
        self.0.client_may_send(m)
    }
    fn placement(&self, home: HomeRule) -> Placement {
        self.0.placement(home)
    }
    fn server(&self, env: &Env, node: NodeId) -> Self::Server {
        self.0.server(env, node)
    }
    fn client(&self, env: &Env, node: NodeId, id: ClientId) -> Self::Client {
        self.0.client(env, node, id)
    }
}

/// A protocol without an image is refused, not silently run without one.
#[test]
fn a_protocol_without_an_image_is_refused() {
    let mut c = SimConfig::new(Topology::preset("lan").unwrap(), "ycsb");
    c.txns = 50;
    assert!(run(NoImage(TwoPc::new(Cc::Locking)), &c, &mut |_, _| {}).is_ok());
    c.image_every = 5;
    let err = run(NoImage(TwoPc::new(Cc::Locking)), &c, &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("no-image has no server image"), "{err}");
}
