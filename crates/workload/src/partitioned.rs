//! Workloads whose keys are partitioned across DCs: the synthetic chains of
//! crossstitch.md §5.2 (`chain`) and the TPC-C-like transactions of §5.3 (`tpcc`).
//!
//! # Placing keys in DCs
//!
//! A key spelled `#S/...` lives on shard `S` (see `meridian_core::shard_of`), and with
//! the default home rule (`HomeRule::Spread`) shard `S` lives in DC `S mod #DCs`. A
//! partitioned workload is told the [`Site`] of each call (the client's DC, the number
//! of DCs and of shards) and so can put a key in a chosen DC and order a transaction's
//! operations "local first" (§5.2.3: "the client performs local key operations before
//! performing remote operations"; §3.4: "keys co-located at the same geographical
//! location are adjacent"). Under another home rule (all shards in one DC) the keys
//! still spread over shards; only their DCs change.
//!
//! # TPC-C data model (§5.3.1)
//!
//! One table row is one key holding little-endian `u64` fields. Warehouse rows are
//! partitioned by warehouse id; district, customer, order, new-order, order-line and
//! history rows by district id; item and stock rows by item id. Rows that no
//! transaction has written yet read as their deterministic *initial population*
//! (districts start with 3000 orders, customer `c` placed order `c`, ...), so no load
//! phase is needed and every protocol sees the same database.
//!
//! Simplifications, all deliberate: customers are picked uniformly (no NURand), an
//! order line stores item and quantity (its amount is computed by readers from the
//! item's price), `stock-level` is the single-item form of §5.3.2, and the `standard`
//! mix leaves out delivery (new-order 45, payment 43, order-status 4, stock-level 4,
//! renormalised).

use crate::{Params, Workload, WorkloadError};
use meridian_core::{Key, Rng, Value};
use meridian_txn::{arg_u64, key_range, Arg, Call, Program, Stop, Tx};
use rand::Rng as _;

/// Where a call is issued (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    /// The client's DC index.
    pub client_dc: u32,
    /// Number of DCs.
    pub dcs: u32,
    /// Number of shards.
    pub shards: u32,
}

impl Site {
    /// A site that knows nothing about the deployment (one DC, one shard).
    pub const ANY: Site = Site {
        client_dc: 0,
        dcs: 1,
        shards: 1,
    };

    /// The shard for slot `j` of DC `dc`: one of the shards `dc, dc + #DCs, ...`.
    pub fn shard_in(&self, dc: u32, j: u64) -> u32 {
        let dcs = self.dcs.max(1);
        let shards = self.shards.max(1);
        if shards < dcs {
            return dc % shards;
        }
        let per = (shards / dcs).max(1) as u64;
        (dc % dcs) + dcs * (j % per) as u32
    }

    /// The DC that shard `s` lives in under `HomeRule::Spread`.
    pub fn dc_of_shard(&self, s: u32) -> u32 {
        s % self.dcs.max(1)
    }

    /// How far DC `dc` is from the client in the "local first" order: 0 for the
    /// client's own DC, then the others in index order after it.
    pub fn rank(&self, dc: u32) -> u32 {
        let dcs = self.dcs.max(1);
        (dc + dcs - self.client_dc % dcs) % dcs
    }
}

/// `#shard/name`.
fn pkey(shard: u32, name: std::fmt::Arguments<'_>) -> Key {
    Key::new(format!("#{shard}/{name}"))
}

/// Encodes row fields.
pub fn enc(fields: &[u64]) -> Value {
    let mut b = Vec::with_capacity(8 * fields.len());
    for f in fields {
        b.extend_from_slice(&f.to_le_bytes());
    }
    Value(b)
}

/// Decodes row fields (missing trailing fields read as 0).
pub fn dec(v: &Value, n: usize) -> Vec<u64> {
    (0..n)
        .map(|i| {
            v.0.get(8 * i..8 * i + 8)
                .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        })
        .collect()
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

// ---------------------------------------------------------------------------------
// chain

/// `chain:ops=10,reads=0.8,keys=100000,value=1024`: `ops` dependent operations on
/// distinct uniformly chosen keys, each a read with probability `reads`, sorted so the
/// client's DC comes first and each shard's operations are adjacent.
pub(crate) struct ChainWl {
    pub ops: u32,
    pub reads: f64,
    pub keys: u64,
    pub value: usize,
}

impl ChainWl {
    pub(crate) fn build(p: &mut Params) -> Result<ChainWl, WorkloadError> {
        let ops: u32 = p.get("ops", 10)?;
        let reads: f64 = p.get("reads", 0.8)?;
        let keys: u64 = p.get("keys", 100_000)?;
        let value: usize = p.get("value", 1024)?;
        p.fail_if(ops == 0 || ops > 1000, "ops", "must be 1..=1000")?;
        p.fraction("reads", reads)?;
        p.fail_if(keys < ops as u64, "keys", format!("must be at least ops ({ops})"))?;
        p.fail_if(value == 0 || value > 1 << 20, "value", "must be 1..=1048576 bytes")?;
        Ok(ChainWl {
            ops,
            reads,
            keys,
            value,
        })
    }
}

/// The key of chain item `i` (on shard `i mod shards`).
pub fn chain_item_key(i: u64, shards: u32) -> Key {
    pkey((i % shards.max(1) as u64) as u32, format_args!("k{i}"))
}

impl Workload for ChainWl {
    fn spec(&self) -> String {
        format!(
            "chain:ops={},reads={},keys={},value={}",
            self.ops, self.reads, self.keys, self.value
        )
    }
    fn next_call(&mut self, rng: &mut Rng) -> Call {
        self.next_call_at(rng, &Site::ANY)
    }
    fn next_call_at(&mut self, rng: &mut Rng, site: &Site) -> Call {
        let mut chosen: Vec<u64> = Vec::with_capacity(self.ops as usize);
        while chosen.len() < self.ops as usize {
            let i = rng.gen_range(0..self.keys);
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        let shards = site.shards.max(1);
        let mut ops: Vec<(u32, u32, u64, bool)> = chosen
            .into_iter()
            .map(|i| {
                let s = (i % shards as u64) as u32;
                (site.rank(site.dc_of_shard(s)), s, i, rng.gen_bool(self.reads))
            })
            .collect();
        // Local DC first, then each remote DC; within a DC, one shard's operations
        // together (a stable sort keeps the drawn order otherwise).
        ops.sort_by_key(|&(rank, s, _, _)| (rank, s));
        let mut args = Vec::with_capacity(2 + 2 * ops.len());
        args.push(Arg::U64(ops.len() as u64));
        args.push(Arg::U64(shards as u64));
        for (_, _, i, read) in ops {
            args.push(Arg::U64(i));
            if read {
                args.push(Arg::Bytes(vec![]));
            } else {
                let mut v = vec![0u8; self.value];
                rng.fill(&mut v[..]);
                args.push(Arg::Bytes(v));
            }
        }
        Call {
            program: "chain-ops".into(),
            args,
        }
    }
}

/// Args: `U64(n)`, `U64(shards)`, then `n` pairs `U64(item)`, `Bytes` (empty: read,
/// else write). Operations depend on each other: every write mixes a digest of all
/// values read before it into its first bytes.
pub(crate) struct ChainOps;
impl Program for ChainOps {
    fn name(&self) -> &'static str {
        "chain-ops"
    }
    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
        let n = arg_u64(args, 0, "op count")? as usize;
        let shards = arg_u64(args, 1, "shards")? as u32;
        let mut digest = 0u64;
        for i in 0..n {
            let item = arg_u64(args, 2 + 2 * i, "item")?;
            let key = chain_item_key(item, shards);
            match args.get(3 + 2 * i) {
                Some(Arg::Bytes(b)) if b.is_empty() => {
                    let v = tx.read(&key)?;
                    let head = v.as_ref().map_or(0, |v| dec(v, 1)[0]);
                    digest = mix(digest ^ head ^ item);
                }
                Some(Arg::Bytes(b)) => {
                    let mut v = b.clone();
                    for (j, x) in digest.to_le_bytes().iter().enumerate() {
                        if let Some(y) = v.get_mut(j) {
                            *y ^= x;
                        }
                    }
                    tx.write(key, Value(v));
                }
                _ => return Err(Stop::Fault(format!("argument {} must be bytes", 3 + 2 * i))),
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------
// tpcc

/// Which TPC-C-like transaction(s) to issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpccTxn {
    /// Order-status (read-only: customer → last order → its order lines).
    OrderStatus,
    /// Stock-level, single-item form (read-only: district → order → line → stock).
    StockLevel,
    /// New-order.
    NewOrder,
    /// Payment.
    Payment,
}

impl TpccTxn {
    const ALL: [(&'static str, TpccTxn); 4] = [
        ("order-status", TpccTxn::OrderStatus),
        ("stock-level", TpccTxn::StockLevel),
        ("new-order", TpccTxn::NewOrder),
        ("payment", TpccTxn::Payment),
    ];
    fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, t)| *t == self).expect("listed").0
    }
    fn program(self) -> &'static str {
        match self {
            TpccTxn::OrderStatus => "tpcc-order-status",
            TpccTxn::StockLevel => "tpcc-stock-level",
            TpccTxn::NewOrder => "tpcc-new-order",
            TpccTxn::Payment => "tpcc-payment",
        }
    }
}

/// Initial orders per district; customer `c` placed order `c`.
pub const INITIAL_ORDERS: u64 = 3000;

/// The scale of a TPC-C database and where its rows live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tpcc {
    /// Number of DCs rows are partitioned over.
    pub dcs: u32,
    /// Number of shards.
    pub shards: u32,
    /// Districts (per warehouse; one warehouse).
    pub districts: u64,
    /// Customers per district.
    pub customers: u64,
    /// Items.
    pub items: u64,
}

impl Tpcc {
    fn from_args(args: &[Arg]) -> Result<Tpcc, Stop> {
        Ok(Tpcc {
            dcs: arg_u64(args, 0, "dcs")? as u32,
            shards: arg_u64(args, 1, "shards")? as u32,
            districts: arg_u64(args, 2, "districts")?.max(1),
            customers: arg_u64(args, 3, "customers")?.max(1),
            items: arg_u64(args, 4, "items")?.max(1),
        })
    }
    fn args(&self) -> Vec<Arg> {
        vec![
            Arg::U64(self.dcs as u64),
            Arg::U64(self.shards as u64),
            Arg::U64(self.districts),
            Arg::U64(self.customers),
            Arg::U64(self.items),
        ]
    }
    fn site(&self) -> Site {
        Site {
            client_dc: 0,
            dcs: self.dcs,
            shards: self.shards,
        }
    }
    /// The DC district `d` lives in.
    pub fn district_dc(&self, d: u64) -> u32 {
        (d % self.dcs.max(1) as u64) as u32
    }
    /// The DC item `i` (and its stock) lives in.
    pub fn item_dc(&self, i: u64) -> u32 {
        (mix(i) % self.dcs.max(1) as u64) as u32
    }
    fn dshard(&self, d: u64) -> u32 {
        self.site().shard_in(self.district_dc(d), d / self.dcs.max(1) as u64)
    }
    fn ishard(&self, i: u64) -> u32 {
        self.site().shard_in(self.item_dc(i), mix(i ^ 0x5bd1))
    }
    /// Warehouse row: `[ytd]`.
    pub fn warehouse(&self) -> Key {
        pkey(self.site().shard_in(0, 0), format_args!("w1"))
    }
    /// District row: `[next_o_id, ytd]`.
    pub fn district(&self, d: u64) -> Key {
        pkey(self.dshard(d), format_args!("d1.{d}"))
    }
    /// Customer row: `[last_order, balance, payments]`.
    pub fn customer(&self, d: u64, c: u64) -> Key {
        pkey(self.dshard(d), format_args!("c1.{d}.{c}"))
    }
    /// Order row: `[customer, line_count]`.
    pub fn order(&self, d: u64, o: u64) -> Key {
        pkey(self.dshard(d), format_args!("o1.{d}.{o}"))
    }
    /// New-order row: `[1]`.
    pub fn new_order(&self, d: u64, o: u64) -> Key {
        pkey(self.dshard(d), format_args!("no1.{d}.{o}"))
    }
    /// Order-line row: `[item, quantity]`.
    pub fn order_line(&self, d: u64, o: u64, n: u64) -> Key {
        pkey(self.dshard(d), format_args!("ol1.{d}.{o}.{n}"))
    }
    /// History row: `[amount]`.
    pub fn history(&self, d: u64, c: u64, nonce: u64) -> Key {
        pkey(self.dshard(d), format_args!("h1.{d}.{c}.{nonce}"))
    }
    /// The range of district `d`'s order rows (a declaration: every order id).
    pub fn orders(&self, d: u64) -> Key {
        key_range(&pkey(self.dshard(d), format_args!("o1.{d}.")))
    }
    /// The range of district `d`'s new-order rows.
    pub fn new_orders(&self, d: u64) -> Key {
        key_range(&pkey(self.dshard(d), format_args!("no1.{d}.")))
    }
    /// The range of district `d`'s order-line rows.
    pub fn order_lines(&self, d: u64) -> Key {
        key_range(&pkey(self.dshard(d), format_args!("ol1.{d}.")))
    }
    /// Item row: `[price]` (read-only).
    pub fn item(&self, i: u64) -> Key {
        pkey(self.ishard(i), format_args!("i{i}"))
    }
    /// Stock row: `[quantity, ytd, order_count]`.
    pub fn stock(&self, i: u64) -> Key {
        pkey(self.ishard(i), format_args!("s1.{i}"))
    }

    // Initial population.
    fn init_lines(&self, d: u64, o: u64) -> u64 {
        5 + mix(d << 32 ^ o) % 11
    }
    fn init_item_of_line(&self, d: u64, o: u64, n: u64) -> u64 {
        1 + mix((d << 40) ^ (o << 8) ^ n) % self.items
    }
    fn init_stock(&self, i: u64) -> u64 {
        10 + mix(i ^ 0xabc) % 91
    }
    fn init_price(&self, i: u64) -> u64 {
        1 + mix(i ^ 0x1234) % 100
    }

    fn read_district(&self, tx: &mut Tx<'_>, d: u64) -> Result<[u64; 2], Stop> {
        Ok(match tx.read(&self.district(d))? {
            Some(v) => {
                let f = dec(&v, 2);
                [f[0], f[1]]
            }
            None => [INITIAL_ORDERS + 1, 0],
        })
    }
    fn read_customer(&self, tx: &mut Tx<'_>, d: u64, c: u64) -> Result<[u64; 3], Stop> {
        Ok(match tx.read(&self.customer(d, c))? {
            Some(v) => {
                let f = dec(&v, 3);
                [f[0], f[1], f[2]]
            }
            None => [c.min(INITIAL_ORDERS), 0, 0],
        })
    }
    fn read_order(&self, tx: &mut Tx<'_>, d: u64, o: u64) -> Result<Option<[u64; 2]>, Stop> {
        Ok(match tx.read(&self.order(d, o))? {
            Some(v) => {
                let f = dec(&v, 2);
                Some([f[0], f[1]])
            }
            None if (1..=INITIAL_ORDERS).contains(&o) => Some([o, self.init_lines(d, o)]),
            None => None,
        })
    }
    fn line_item(&self, d: u64, o: u64, n: u64, v: Option<Value>) -> u64 {
        match v {
            Some(v) => dec(&v, 1)[0],
            None => self.init_item_of_line(d, o, n),
        }
    }
}

/// The `tpcc:` workload.
pub(crate) struct TpccWl {
    pub txn: Option<TpccTxn>,
    pub districts: u64,
    pub customers: u64,
    pub items: u64,
    /// The site of the calls issued (all share `dcs` and `shards`).
    pub seen: Option<Site>,
}

impl TpccWl {
    pub(crate) fn build(p: &mut Params) -> Result<TpccWl, WorkloadError> {
        let txn: String = p.get("txn", String::new())?;
        let mix: String = p.get("mix", String::new())?;
        let districts: u64 = p.get("districts", 10)?;
        let customers: u64 = p.get("customers", 3000)?;
        let items: u64 = p.get("items", 100_000)?;
        let txn = match (txn.as_str(), mix.as_str()) {
            ("", "") => None,
            ("", "standard") => None,
            ("", other) => return Err(p.bad("mix", format!("`{other}` is not a mix (known: standard)"))),
            (t, "") => match TpccTxn::ALL.iter().find(|(n, _)| *n == t) {
                Some((_, t)) => Some(*t),
                None => {
                    return Err(p.bad(
                        "txn",
                        format!("`{t}` is not a transaction (known: order-status, stock-level, new-order, payment)"),
                    ))
                }
            },
            (_, _) => return Err(p.bad("mix", "give either txn= or mix=, not both")),
        };
        p.fail_if(districts == 0 || districts > 1000, "districts", "must be 1..=1000")?;
        p.fail_if(
            customers == 0 || customers > INITIAL_ORDERS,
            "customers",
            format!("must be 1..={INITIAL_ORDERS}"),
        )?;
        p.fail_if(items < 15, "items", "must be at least 15")?;
        Ok(TpccWl {
            txn,
            districts,
            customers,
            items,
            seen: None,
        })
    }

    fn db(&self, site: &Site) -> Tpcc {
        Tpcc {
            dcs: site.dcs.max(1),
            shards: site.shards.max(1),
            districts: self.districts,
            customers: self.customers,
            items: self.items,
        }
    }
}

impl Workload for TpccWl {
    fn spec(&self) -> String {
        let what = match self.txn {
            Some(t) => format!("txn={}", t.name()),
            None => "mix=standard".to_string(),
        };
        format!(
            "tpcc:{what},districts={},customers={},items={}",
            self.districts, self.customers, self.items
        )
    }
    fn next_call(&mut self, rng: &mut Rng) -> Call {
        self.next_call_at(rng, &Site::ANY)
    }
    fn next_call_at(&mut self, rng: &mut Rng, site: &Site) -> Call {
        self.seen = Some(*site);
        let db = self.db(site);
        let t = self.txn.unwrap_or_else(|| match rng.gen_range(0..96) {
            0..=44 => TpccTxn::NewOrder,
            45..=87 => TpccTxn::Payment,
            88..=91 => TpccTxn::OrderStatus,
            _ => TpccTxn::StockLevel,
        });
        let d = rng.gen_range(1..=self.districts);
        let c = rng.gen_range(1..=self.customers);
        let mut args = db.args();
        args.push(Arg::U64(d));
        match t {
            TpccTxn::OrderStatus => args.push(Arg::U64(c)),
            TpccTxn::StockLevel => args.push(Arg::U64(rng.gen_range(10..=20))),
            TpccTxn::NewOrder => {
                args.push(Arg::U64(c));
                let n = rng.gen_range(5..=15);
                let mut items: Vec<u64> = Vec::with_capacity(n);
                while items.len() < n {
                    let i = rng.gen_range(1..=self.items);
                    if !items.contains(&i) {
                        items.push(i);
                    }
                }
                // 1% of new-orders name an unused item and roll back (TPC-C 2.4.1.4).
                if rng.gen_bool(0.01) {
                    items[n - 1] = self.items + 1;
                }
                // Items grouped by DC (the district's DC first) and shard, so the
                // transaction's remote states are adjacent.
                let home = db.district_dc(d);
                let rank = |i: u64| {
                    let dc = if i > self.items { home } else { db.item_dc(i) };
                    ((dc + db.dcs - home) % db.dcs, db.ishard(i))
                };
                items.sort_by_key(|&i| rank(i));
                args.push(Arg::U64(n as u64));
                for i in items {
                    args.push(Arg::U64(i));
                    args.push(Arg::U64(rng.gen_range(1..=10)));
                }
            }
            TpccTxn::Payment => {
                args.push(Arg::U64(c));
                args.push(Arg::U64(rng.gen_range(1..=5000)));
                args.push(Arg::U64(rng.gen()));
            }
        }
        Call {
            program: t.program().into(),
            args,
        }
    }
    /// TPC-C consistency conditions 1 and 2, adapted: the warehouse's year-to-date
    /// equals the sum of its districts', and each district's next order id is one past
    /// its newest order, which exists.
    fn check_final(&self, lookup: &dyn Fn(&Key) -> Option<Value>) -> Result<(), String> {
        // Rows were placed by the site of the calls made; with no call, nothing ran.
        let Some(site) = self.seen else {
            return Ok(());
        };
        let db = self.db(&site);
        let w = lookup(&db.warehouse()).map_or(0, |v| dec(&v, 1)[0]);
        let mut sum = 0;
        for d in 1..=self.districts {
            let [next, ytd] = match lookup(&db.district(d)) {
                Some(v) => {
                    let f = dec(&v, 2);
                    [f[0], f[1]]
                }
                None => [INITIAL_ORDERS + 1, 0],
            };
            sum += ytd;
            if next > INITIAL_ORDERS + 1 && lookup(&db.order(d, next - 1)).is_none() {
                return Err(format!(
                    "district {d}: next order id {next} but order {} is missing",
                    next - 1
                ));
            }
            if lookup(&db.order(d, next)).is_some() {
                return Err(format!("district {d}: order {next} exists but next order id is {next}"));
            }
        }
        if w != sum {
            return Err(format!("warehouse ytd {w} != sum of district ytd {sum}"));
        }
        Ok(())
    }
}

/// Args: db, `d`, `c`. Reads the customer, its last order, then that order's lines
/// together (one batch: they do not depend on each other).
pub(crate) struct OrderStatus;
impl Program for OrderStatus {
    fn name(&self) -> &'static str {
        "tpcc-order-status"
    }
    /// The customer, and the ranges of the district's orders and order lines (which
    /// order is the customer's last is read, not known up front).
    fn declared_keys(&self, args: &[Arg]) -> Option<Vec<Key>> {
        let db = Tpcc::from_args(args).ok()?;
        let d = arg_u64(args, 5, "district").ok()?;
        let c = arg_u64(args, 6, "customer").ok()?;
        Some(vec![db.customer(d, c), db.orders(d), db.order_lines(d)])
    }
    fn declared_writes(&self, _args: &[Arg]) -> Option<Vec<Key>> {
        Some(vec![])
    }
    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
        let db = Tpcc::from_args(args)?;
        let d = arg_u64(args, 5, "district")?;
        let c = arg_u64(args, 6, "customer")?;
        let [last, _, _] = db.read_customer(tx, d, c)?;
        let Some([_, lines]) = db.read_order(tx, d, last)? else {
            return Err(tx.abort("customer's last order is missing"));
        };
        let keys: Vec<Key> = (1..=lines).map(|n| db.order_line(d, last, n)).collect();
        let vals = tx.read_batch(&keys)?;
        let mut digest = last;
        for (n, v) in vals.into_iter().enumerate() {
            digest = mix(digest ^ db.line_item(d, last, n as u64 + 1, v));
        }
        tx.set_output(Value::from_u64(digest));
        Ok(())
    }
}

/// Args: db, `d`, `threshold`. Single-item stock-level (§5.3.2): the district's next
/// order id → its newest order → that order's first line → the line's item's stock.
pub(crate) struct StockLevel;
impl Program for StockLevel {
    fn name(&self) -> &'static str {
        "tpcc-stock-level"
    }
    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
        let db = Tpcc::from_args(args)?;
        let d = arg_u64(args, 5, "district")?;
        let threshold = arg_u64(args, 6, "threshold")?;
        let [next, _] = db.read_district(tx, d)?;
        let o = next - 1;
        if db.read_order(tx, d, o)?.is_none() {
            return Err(tx.abort("newest order is missing"));
        }
        let v = tx.read(&db.order_line(d, o, 1))?;
        let item = db.line_item(d, o, 1, v);
        let qty = match tx.read(&db.stock(item))? {
            Some(v) => dec(&v, 1)[0],
            None => db.init_stock(item),
        };
        tx.set_output(Value::from_u64((qty < threshold) as u64));
        Ok(())
    }
}

/// Args: db, `d`, `c`, `n`, then `n` pairs item, quantity. District rows first
/// (district, customer, order, new-order, lines), then each item and its stock in
/// the order given (grouped by DC by the workload). An unused item id rolls back.
pub(crate) struct NewOrder;
impl Program for NewOrder {
    fn name(&self) -> &'static str {
        "tpcc-new-order"
    }
    /// The district and customer rows, the ranges its new order's rows fall in (their
    /// id is the district's next order id, read), and each item and its stock.
    fn declared_keys(&self, args: &[Arg]) -> Option<Vec<Key>> {
        let mut keys = self.declared_writes(args)?;
        let n = arg_u64(args, 7, "line count").ok()?;
        let db = Tpcc::from_args(args).ok()?;
        for j in 0..n {
            keys.push(db.item(arg_u64(args, 8 + 2 * j as usize, "item").ok()?));
        }
        Some(keys)
    }
    fn declared_writes(&self, args: &[Arg]) -> Option<Vec<Key>> {
        let db = Tpcc::from_args(args).ok()?;
        let d = arg_u64(args, 5, "district").ok()?;
        let c = arg_u64(args, 6, "customer").ok()?;
        let n = arg_u64(args, 7, "line count").ok()?;
        let mut keys = vec![
            db.district(d),
            db.customer(d, c),
            db.orders(d),
            db.new_orders(d),
            db.order_lines(d),
        ];
        for j in 0..n {
            keys.push(db.stock(arg_u64(args, 8 + 2 * j as usize, "item").ok()?));
        }
        Some(keys)
    }
    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
        let db = Tpcc::from_args(args)?;
        let d = arg_u64(args, 5, "district")?;
        let c = arg_u64(args, 6, "customer")?;
        let n = arg_u64(args, 7, "line count")?;
        let [next, ytd] = db.read_district(tx, d)?;
        tx.write(db.district(d), enc(&[next + 1, ytd]));
        let [_, balance, payments] = db.read_customer(tx, d, c)?;
        tx.write(db.customer(d, c), enc(&[next, balance, payments]));
        tx.write(db.order(d, next), enc(&[c, n]));
        tx.write(db.new_order(d, next), enc(&[1]));
        let mut lines = Vec::with_capacity(n as usize);
        for j in 0..n {
            let item = arg_u64(args, 8 + 2 * j as usize, "item")?;
            let qty = arg_u64(args, 9 + 2 * j as usize, "quantity")?;
            lines.push((item, qty));
            tx.write(db.order_line(d, next, j + 1), enc(&[item, qty]));
        }
        let mut total = 0;
        for (item, qty) in lines {
            if item > db.items {
                return Err(tx.abort("unused item id"));
            }
            let price = match tx.read(&db.item(item))? {
                Some(v) => dec(&v, 1)[0],
                None => db.init_price(item),
            };
            let [s_qty, s_ytd, s_cnt] = match tx.read(&db.stock(item))? {
                Some(v) => {
                    let f = dec(&v, 3);
                    [f[0], f[1], f[2]]
                }
                None => [db.init_stock(item), 0, 0],
            };
            let new_qty = if s_qty >= qty + 10 {
                s_qty - qty
            } else {
                s_qty + 91 - qty
            };
            tx.write(db.stock(item), enc(&[new_qty, s_ytd + qty, s_cnt + 1]));
            total += price * qty;
        }
        tx.set_output(Value::from_u64(total));
        Ok(())
    }
}

/// Args: db, `d`, `c`, `amount`, `nonce`. District rows (district, customer, history)
/// first, then the warehouse.
pub(crate) struct Payment;
impl Program for Payment {
    fn name(&self) -> &'static str {
        "tpcc-payment"
    }
    fn declared_keys(&self, args: &[Arg]) -> Option<Vec<Key>> {
        let db = Tpcc::from_args(args).ok()?;
        let d = arg_u64(args, 5, "district").ok()?;
        let c = arg_u64(args, 6, "customer").ok()?;
        let nonce = arg_u64(args, 8, "nonce").ok()?;
        Some(vec![
            db.district(d),
            db.customer(d, c),
            db.history(d, c, nonce),
            db.warehouse(),
        ])
    }
    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
        let db = Tpcc::from_args(args)?;
        let d = arg_u64(args, 5, "district")?;
        let c = arg_u64(args, 6, "customer")?;
        let amount = arg_u64(args, 7, "amount")?;
        let nonce = arg_u64(args, 8, "nonce")?;
        let [next, ytd] = db.read_district(tx, d)?;
        tx.write(db.district(d), enc(&[next, ytd + amount]));
        let [last, balance, payments] = db.read_customer(tx, d, c)?;
        tx.write(
            db.customer(d, c),
            enc(&[last, balance.wrapping_sub(amount), payments + 1]),
        );
        tx.write(db.history(d, c, nonce), enc(&[amount]));
        let w = tx.read(&db.warehouse())?.map_or(0, |v| dec(&v, 1)[0]);
        tx.write(db.warehouse(), enc(&[w + amount]));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{build, registry};
    use meridian_core::{rng_for, shard_of};
    use meridian_txn::{Execution, Step};
    use std::collections::BTreeMap;

    /// Runs a call serially against a map; returns the sequential read rounds (a batch
    /// is one round, as a client with futures would do it) and the final step.
    fn run(call: Call, db: &mut BTreeMap<Key, Value>) -> (usize, Step) {
        let (_, rounds, step) = crate::tests::run_counting(call, db);
        (rounds, step)
    }

    const TWO: Site = Site {
        client_dc: 1,
        dcs: 2,
        shards: 8,
    };

    #[test]
    fn specs_and_errors() {
        assert_eq!(
            build("chain").unwrap().spec(),
            "chain:ops=10,reads=0.8,keys=100000,value=1024"
        );
        assert_eq!(
            build("tpcc:txn=stock-level").unwrap().spec(),
            "tpcc:txn=stock-level,districts=10,customers=3000,items=100000"
        );
        assert_eq!(
            build("tpcc").unwrap().spec(),
            "tpcc:mix=standard,districts=10,customers=3000,items=100000"
        );
        let e = |s: &str| build(s).err().unwrap().to_string();
        assert!(e("tpcc:txn=delivery").contains("not a transaction"));
        assert!(e("tpcc:mix=odd").contains("not a mix"));
        assert!(e("tpcc:txn=payment,mix=standard").contains("not both"));
        assert!(e("chain:reads=1.5").contains("fraction"));
        assert!(e("chain:ops=0").contains("1..=1000"));
    }

    #[test]
    fn chains_put_the_clients_dc_first_and_group_shards() {
        let mut w = build("chain:ops=10,reads=0.8,keys=1000,value=16").unwrap();
        let mut rng = rng_for(1, 0);
        let mut db = BTreeMap::new();
        for _ in 0..100 {
            let call = w.next_call_at(&mut rng, &TWO);
            let items: Vec<u64> = (0..10)
                .map(|i| match call.args[2 + 2 * i] {
                    Arg::U64(x) => x,
                    _ => panic!(),
                })
                .collect();
            let shards: Vec<u32> = items.iter().map(|i| shard_of(&chain_item_key(*i, 8), 8).0).collect();
            let ranks: Vec<u32> = shards.iter().map(|s| TWO.rank(s % 2)).collect();
            assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
            // one shard's operations are adjacent
            for (i, s) in shards.iter().enumerate() {
                if let Some(j) = shards[..i].iter().rposition(|x| x == s) {
                    assert!(shards[j..i].iter().all(|x| x == s), "{shards:?}");
                }
            }
            let (rounds, step) = run(call, &mut db);
            assert!(matches!(step, Step::Done { .. }));
            assert!(rounds <= 10);
        }
    }

    #[test]
    fn tpcc_read_rounds_match_fig12_and_rows_stay_in_their_partition() {
        let mut db = BTreeMap::new();
        let mut rng = rng_for(2, 0);
        let mut os = build("tpcc:txn=order-status").unwrap();
        let mut sl = build("tpcc:txn=stock-level").unwrap();
        for _ in 0..50 {
            let (r, s) = run(os.next_call_at(&mut rng, &TWO), &mut db);
            assert_eq!(r, 3, "customer, order, order lines");
            assert!(matches!(s, Step::Done { ref writes, .. } if writes.is_empty()));
            let (r, s) = run(sl.next_call_at(&mut rng, &TWO), &mut db);
            assert_eq!(r, 4, "district, order, order line, stock");
            assert!(matches!(s, Step::Done { ref writes, .. } if writes.is_empty()));
        }
        let t = Tpcc {
            dcs: 2,
            shards: 8,
            districts: 10,
            customers: 3000,
            items: 100,
        };
        for d in 1..=10 {
            let dc = t.district_dc(d);
            for k in [t.district(d), t.customer(d, 5), t.order(d, 9), t.order_line(d, 9, 3)] {
                assert_eq!(shard_of(&k, 8).0 % 2, dc, "{k}");
            }
        }
        for i in 1..=100 {
            assert_eq!(shard_of(&t.stock(i), 8).0 % 2, t.item_dc(i));
            assert_eq!(shard_of(&t.item(i), 8), shard_of(&t.stock(i), 8));
        }
    }

    #[test]
    fn tpcc_mix_keeps_its_consistency_conditions_when_run_serially() {
        let mut w = build("tpcc:mix=standard,items=200").unwrap();
        let mut rng = rng_for(3, 0);
        let mut db = BTreeMap::new();
        let (mut done, mut aborted) = (0, 0);
        for _ in 0..600 {
            match run(w.next_call_at(&mut rng, &TWO), &mut db).1 {
                Step::Done { .. } => done += 1,
                Step::Abort(_) => aborted += 1,
                Step::Read(_) | Step::Wait { .. } => unreachable!(),
            }
        }
        assert!(aborted > 0 && done > 500, "{done} {aborted}");
        w.check_final(&|k| db.get(k).cloned()).unwrap();
        // a lost order breaks condition 2; a lost payment breaks condition 1
        let t = Tpcc {
            dcs: 2,
            shards: 8,
            districts: 10,
            customers: 3000,
            items: 200,
        };
        let next = (1..=10)
            .map(|d| (d, dec(db.get(&t.district(d)).unwrap(), 2)[0]))
            .find(|(_, n)| *n > INITIAL_ORDERS + 1)
            .unwrap();
        let saved = db.remove(&t.order(next.0, next.1 - 1)).unwrap();
        assert!(w.check_final(&|k| db.get(k).cloned()).unwrap_err().contains("missing"));
        db.insert(t.order(next.0, next.1 - 1), saved);
        db.insert(t.warehouse(), enc(&[1]));
        assert!(w.check_final(&|k| db.get(k).cloned()).unwrap_err().contains("ytd"));
    }

    /// Catenae runs only declared programs: every key a TPC-C new-order, payment or
    /// order-status reads is covered by its declaration, every key it writes by its
    /// declared writes, and no program declares alone a key another covers by a range
    /// (the contract of `Program::declared_keys`). Stock-level's stock row depends on
    /// an item read from an order line, so it declares nothing.
    #[test]
    fn tpcc_declarations_cover_every_access() {
        use meridian_txn::{covers, is_range};
        let mut w = build("tpcc:mix=standard,items=200").unwrap();
        let reg = registry();
        let mut rng = rng_for(5, 0);
        let mut db = BTreeMap::new();
        let (mut ranges, mut exact) = (vec![], vec![]);
        let mut checked = std::collections::BTreeMap::<String, usize>::new();
        for _ in 0..800 {
            let call = w.next_call_at(&mut rng, &TWO);
            let prog = reg.get(&call.program).unwrap();
            let Some(decl) = prog.declared_keys(&call.args) else {
                assert_eq!(call.program, "tpcc-stock-level");
                run(call, &mut db);
                continue;
            };
            let dw = prog.declared_writes(&call.args).unwrap();
            assert!(
                dw.iter().all(|k| decl.contains(k)),
                "{}: writes outside keys",
                call.program
            );
            for k in &decl {
                if is_range(k) {
                    ranges.push(k.clone());
                } else {
                    exact.push(k.clone());
                }
            }
            let mut ex = Execution::new(call.clone());
            loop {
                match ex.step(&reg).unwrap() {
                    Step::Read(k) => {
                        assert!(decl.iter().any(|d| covers(d, &k)), "{}: read {k:?}", call.program);
                        let v = db.get(&k).cloned();
                        ex.supply(k, v);
                    }
                    Step::Done { writes, .. } => {
                        for (k, v) in writes {
                            assert!(dw.iter().any(|d| covers(d, &k)), "{}: write {k:?}", call.program);
                            db.insert(k, v);
                        }
                        break;
                    }
                    Step::Abort(_) => break,
                    s => panic!("{s:?}"),
                }
            }
            *checked.entry(call.program.clone()).or_default() += 1;
        }
        assert_eq!(checked.len(), 3, "{checked:?}");
        for k in &exact {
            assert!(
                !ranges.iter().any(|r| covers(r, k)),
                "{k:?} is declared alone and inside a range"
            );
        }
    }
}
