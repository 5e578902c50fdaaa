//! Workloads: generators of program calls, named with one syntax everywhere,
//! `NAME:key=value,...` (e.g. `ycsb:ops=5,reads=0.5,keys=3000,theta=0.99,value=10`).
//!
//! | name | keys (defaults) | programs |
//! |---|---|---|
//! | `ycsb` | `ops=5, reads=0.5, keys=3000, theta=0, value=10` | `ycsb`: `ops` distinct keys, each read or blind-written; `theta>0` picks keys zipfian(θ) |
//! | `bank` | `accounts=100, initial=1000, max=100` | `transfer`: move up to `max` between two accounts, user-abort on insufficient funds; total balance is invariant |
//! | `dependent-reads` | `k=3, keys=1000` | `chain`: `k` reads, each key computed from the previous value, then one write |
//! | `chain` | `ops=10, reads=0.8, keys=100000, value=1024` | `chain-ops`: crossstitch.md §5.2's synthetic chain: `ops` dependent reads/writes on distinct keys, the client's DC first |
//! | `script` | `ops=4, reads=0.5, keys=1000, partial=0` | `interactive` ([`meridian_txn::script`]): `ops` reads or writes of uniform keys, then `Commit`; a fraction `partial` of scripts stop without it, as an interactive transaction whose caller is gone (they abort) |
//! | `rmw` | `ops=8, keys=800000, value=1000, distinct-shards=1, span=0` | `rmw`: hierarchical-validation.md §IV-A2/B1: `ops` read-modify-writes (read a key, then write `value` bytes to it) of uniform keys, on `ops` distinct shards when `distinct-shards=1` (and there are that many); `span=S`: the shards of one transaction come from one aligned group of S shards |
//! | `micro` | `records=100000, parts=1-5, dist=uniform, reads=0.5, value=10` | `micro`: catenae.md §VII-C's microbenchmark: each transaction accesses a uniform number in `parts` (`A-B` or `N`) of distinct records drawn `uniform`, `zipf1` or `zipf2` (zipfian with exponent 1 or 2); each access is a read with probability `reads`, else an update (read, then write) |
//! | `tpcc` | `txn=order-status\|stock-level\|new-order\|payment` or `mix=standard`; `districts=10, customers=3000, items=100000` | `tpcc-*`: TPC-C-like transactions on rows partitioned across DCs (§5.3) |
//!
//! `chain` and `tpcc` place keys in DCs; see [`partitioned`].
//!
//! Every program is in [`registry`], so any node can run any workload.

pub mod partitioned;
mod programs;

pub use partitioned::{Site, Tpcc, TpccTxn};
pub use programs::registry;

use meridian_core::{Key, Rng, Value};
use meridian_txn::{Arg, Call};
use rand::Rng as _;
use rand_distr::{Distribution, Zipf};
use std::collections::BTreeMap;

/// A bad workload name or parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    /// Unknown workload name.
    #[error("unknown workload `{0}` (known: ycsb, bank, dependent-reads, chain, tpcc, script, rmw, micro)")]
    UnknownName(String),
    /// Unknown parameter for this workload.
    #[error("workload `{name}` has no parameter `{key}` (known: {known})")]
    UnknownKey {
        /// Workload.
        name: String,
        /// Parameter given.
        key: String,
        /// Parameters it has.
        known: String,
    },
    /// A malformed or out-of-range value.
    #[error("workload `{name}`: bad value for `{key}`: {msg}")]
    BadValue {
        /// Workload.
        name: String,
        /// Parameter.
        key: String,
        /// What is wrong.
        msg: String,
    },
    /// The spec is not `NAME:key=value,...`.
    #[error("bad workload spec `{0}`: expected NAME or NAME:key=value,...")]
    Syntax(String),
}

/// A workload: produces calls and knows its end-of-run invariant.
pub trait Workload: Send {
    /// Canonical spec with every parameter (defaults filled in).
    fn spec(&self) -> String;
    /// The next call to run.
    fn next_call(&mut self, rng: &mut Rng) -> Call;
    /// The next call to run from `site` (partitioned workloads place keys and order
    /// operations by it; the others ignore it).
    fn next_call_at(&mut self, rng: &mut Rng, _site: &Site) -> Call {
        self.next_call(rng)
    }
    /// Checks the workload's invariant on the final committed values
    /// (`lookup(key)` = latest committed value at the key's primary replica).
    fn check_final(&self, _lookup: &dyn Fn(&Key) -> Option<Value>) -> Result<(), String> {
        Ok(())
    }
}

struct Params {
    name: String,
    given: BTreeMap<String, String>,
    used: Vec<&'static str>,
}

impl Params {
    fn get<T: std::str::FromStr>(&mut self, key: &'static str, default: T) -> Result<T, WorkloadError> {
        self.used.push(key);
        match self.given.get(key) {
            None => Ok(default),
            Some(s) => s.parse().map_err(|_| WorkloadError::BadValue {
                name: self.name.clone(),
                key: key.into(),
                msg: format!("`{s}` is not a valid {}", std::any::type_name::<T>()),
            }),
        }
    }
    fn bad(&self, key: &str, msg: impl Into<String>) -> WorkloadError {
        WorkloadError::BadValue {
            name: self.name.clone(),
            key: key.into(),
            msg: msg.into(),
        }
    }
    /// Refuses parameter `key` with `msg` if `bad` (a check on a value already read).
    fn fail_if(&self, bad: bool, key: &str, msg: impl Into<String>) -> Result<(), WorkloadError> {
        if bad {
            return Err(self.bad(key, msg));
        }
        Ok(())
    }
    /// Refuses parameter `key` unless its value `v` is a fraction in [0, 1].
    fn fraction(&self, key: &str, v: f64) -> Result<(), WorkloadError> {
        self.fail_if(!(0.0..=1.0).contains(&v), key, "must be a fraction in [0, 1]")
    }
    /// A Zipf distribution over `n` keys with `exponent` (parameter `key`), or none for
    /// an exponent of 0 (uniform).
    fn zipf(&self, key: &str, n: u64, exponent: f64) -> Result<Option<Zipf<f64>>, WorkloadError> {
        if exponent > 0.0 {
            return Zipf::new(n, exponent)
                .map(Some)
                .map_err(|e| self.bad(key, e.to_string()));
        }
        Ok(None)
    }
    fn finish(self) -> Result<(), WorkloadError> {
        for k in self.given.keys() {
            if !self.used.contains(&k.as_str()) {
                return Err(WorkloadError::UnknownKey {
                    name: self.name.clone(),
                    key: k.clone(),
                    known: self.used.join(", "),
                });
            }
        }
        Ok(())
    }
}

fn parse_spec(spec: &str) -> Result<Params, WorkloadError> {
    use meridian_core::spec::{parse_spec, SpecError};
    let parsed = parse_spec(spec).map_err(|e| match e {
        SpecError::Duplicate(key) => WorkloadError::BadValue {
            name: spec.split(':').next().unwrap_or(spec).trim().into(),
            key,
            msg: "given twice".into(),
        },
        SpecError::EmptyName | SpecError::NotKeyValue(_) => WorkloadError::Syntax(spec.into()),
    })?;
    Ok(Params {
        name: parsed.name.to_string(),
        given: parsed
            .params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        used: vec![],
    })
}

/// The workloads [`build`] knows, by name.
pub const WORKLOADS: [&str; 8] = [
    "ycsb",
    "bank",
    "dependent-reads",
    "chain",
    "tpcc",
    "script",
    "rmw",
    "micro",
];

/// Builds a workload from its spec.
pub fn build(spec: &str) -> Result<Box<dyn Workload>, WorkloadError> {
    let mut p = parse_spec(spec)?;
    let w: Box<dyn Workload> = match p.name.as_str() {
        "ycsb" => {
            let ops: u32 = p.get("ops", 5)?;
            let reads: f64 = p.get("reads", 0.5)?;
            let keys: u64 = p.get("keys", 3000)?;
            let theta: f64 = p.get("theta", 0.0)?;
            let value: usize = p.get("value", 10)?;
            p.fail_if(ops == 0 || ops > 10_000, "ops", "must be 1..=10000")?;
            p.fraction("reads", reads)?;
            p.fail_if(keys < ops as u64, "keys", format!("must be at least ops ({ops})"))?;
            p.fail_if(!(0.0..10.0).contains(&theta), "theta", "must be in [0, 10)")?;
            p.fail_if(value > 1 << 20, "value", "at most 1 MiB")?;
            let zipf = p.zipf("theta", keys, theta)?;
            Box::new(Ycsb {
                ops,
                reads,
                keys,
                theta,
                value,
                zipf,
                interned: Vec::new(),
            })
        }
        "bank" => {
            let accounts: u64 = p.get("accounts", 100)?;
            let initial: u64 = p.get("initial", 1000)?;
            let max: u64 = p.get("max", 100)?;
            p.fail_if(accounts < 2, "accounts", "need at least 2")?;
            p.fail_if(max == 0, "max", "must be at least 1")?;
            Box::new(Bank { accounts, initial, max })
        }
        "dependent-reads" => {
            let k: u64 = p.get("k", 3)?;
            let keys: u64 = p.get("keys", 1000)?;
            p.fail_if(k == 0 || k > 1000, "k", "must be 1..=1000")?;
            p.fail_if(keys == 0, "keys", "must be at least 1")?;
            Box::new(DependentReads { k, keys })
        }
        "chain" => Box::new(partitioned::ChainWl::build(&mut p)?),
        "script" => {
            let ops: u32 = p.get("ops", 4)?;
            let reads: f64 = p.get("reads", 0.5)?;
            let keys: u64 = p.get("keys", 1000)?;
            let partial: f64 = p.get("partial", 0.0)?;
            p.fail_if(ops == 0 || ops > 10_000, "ops", "must be 1..=10000")?;
            p.fraction("reads", reads)?;
            p.fraction("partial", partial)?;
            p.fail_if(keys == 0, "keys", "must be at least 1")?;
            Box::new(Scripts {
                ops,
                reads,
                keys,
                partial,
            })
        }
        "tpcc" => Box::new(partitioned::TpccWl::build(&mut p)?),
        "rmw" => {
            let ops: u32 = p.get("ops", 8)?;
            let keys: u64 = p.get("keys", 800_000)?;
            let value: usize = p.get("value", 1000)?;
            let distinct: u32 = p.get("distinct-shards", 1)?;
            let span: u32 = p.get("span", 0)?;
            p.fail_if(ops == 0 || ops > 1000, "ops", "must be 1..=1000")?;
            p.fail_if(keys < ops as u64, "keys", format!("must be at least ops ({ops})"))?;
            p.fail_if(value == 0 || value > 1 << 20, "value", "must be 1..=1048576 bytes")?;
            p.fail_if(distinct > 1, "distinct-shards", "must be 0 or 1")?;
            Box::new(Rmw {
                ops,
                keys,
                value,
                distinct: distinct == 1,
                span,
            })
        }
        "micro" => {
            let records: u64 = p.get("records", 100_000)?;
            let parts: String = p.get("parts", "1-5".to_string())?;
            let dist: String = p.get("dist", "uniform".to_string())?;
            let reads: f64 = p.get("reads", 0.5)?;
            let value: usize = p.get("value", 10)?;
            let (lo, hi) = match parts.split_once('-') {
                Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
                None => (parts.trim().parse::<u32>(), parts.trim().parse::<u32>()),
            };
            let (lo, hi) = match (lo, hi) {
                (Ok(lo), Ok(hi)) if 1 <= lo && lo <= hi && hi <= 1000 => (lo, hi),
                _ => {
                    return Err(p.bad(
                        "parts",
                        format!("`{parts}`: expected N or A-B with 1 <= A <= B <= 1000"),
                    ))
                }
            };
            p.fail_if(
                records < hi as u64,
                "records",
                format!("must be at least the most parts ({hi})"),
            )?;
            p.fraction("reads", reads)?;
            p.fail_if(value > 1 << 20, "value", "at most 1 MiB")?;
            let exponent = match dist.as_str() {
                "uniform" => 0.0,
                "zipf1" => 1.0,
                "zipf2" => 2.0,
                other => return Err(p.bad("dist", format!("`{other}`: expected uniform, zipf1 or zipf2"))),
            };
            let zipf = p.zipf("dist", records, exponent)?;
            Box::new(Micro {
                records,
                lo,
                hi,
                dist,
                reads,
                value,
                zipf,
            })
        }
        other => return Err(WorkloadError::UnknownName(other.to_string())),
    };
    p.finish()?;
    Ok(w)
}

/// YCSB-T: `ops` operations on distinct keys, each a read with probability `reads`,
/// else a blind write of `value` bytes.
struct Ycsb {
    ops: u32,
    reads: f64,
    keys: u64,
    theta: f64,
    value: usize,
    zipf: Option<Zipf<f64>>,
    /// Each item's key, made once and shared by every operation on it (a run of a
    /// million transactions otherwise holds millions of copies of the same names in
    /// its history). Only for key spaces up to `INTERN_MAX` items.
    interned: Vec<Option<Key>>,
}

/// Key spaces up to this many items have their keys interned (16 bytes per item).
const INTERN_MAX: u64 = 1 << 24;

impl Ycsb {
    fn key(&mut self, i: u64) -> Key {
        if self.keys > INTERN_MAX {
            return ycsb_key(i);
        }
        if self.interned.is_empty() {
            self.interned = vec![None; self.keys as usize];
        }
        self.interned[i as usize].get_or_insert_with(|| ycsb_key(i)).clone()
    }
}

/// The key name YCSB uses for item `i`.
pub fn ycsb_key(i: u64) -> Key {
    // Hand-rolled `format!("user{i}")`: this runs for every operation generated.
    let mut digits = [0u8; 20];
    let mut n = i;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut k = Vec::with_capacity(4 + digits.len() - at);
    k.extend_from_slice(b"user");
    k.extend_from_slice(&digits[at..]);
    Key::new(k)
}

impl Workload for Ycsb {
    fn spec(&self) -> String {
        format!(
            "ycsb:ops={},reads={},keys={},theta={},value={}",
            self.ops, self.reads, self.keys, self.theta, self.value
        )
    }
    fn next_call(&mut self, rng: &mut Rng) -> Call {
        let mut chosen: Vec<u64> = Vec::with_capacity(self.ops as usize);
        while chosen.len() < self.ops as usize {
            let i = match &self.zipf {
                Some(z) => z.sample(rng) as u64 - 1,
                None => rng.gen_range(0..self.keys),
            };
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        let mut args = Vec::with_capacity(1 + 2 * chosen.len());
        args.push(Arg::U64(chosen.len() as u64));
        for i in chosen {
            args.push(Arg::Key(self.key(i)));
            if rng.gen_bool(self.reads) {
                args.push(Arg::Bytes(vec![]));
            } else {
                let mut v = vec![0u8; self.value.max(1)];
                rng.fill(&mut v[..]);
                v[0] |= 1; // a write carries at least one non-zero byte
                args.push(Arg::Bytes(v));
            }
        }
        Call {
            program: "ycsb".into(),
            args,
        }
    }
}

/// catenae.md §VII-C's microbenchmark (and §III-B's Fig. 1 setup): a uniform number of
/// distinct records in `lo..=hi`, each read or updated. Records are `ycsb_key(i)`.
struct Micro {
    records: u64,
    lo: u32,
    hi: u32,
    dist: String,
    reads: f64,
    value: usize,
    zipf: Option<Zipf<f64>>,
}

impl Workload for Micro {
    fn spec(&self) -> String {
        format!(
            "micro:records={},parts={}-{},dist={},reads={},value={}",
            self.records, self.lo, self.hi, self.dist, self.reads, self.value
        )
    }
    fn next_call(&mut self, rng: &mut Rng) -> Call {
        let n = rng.gen_range(self.lo..=self.hi) as usize;
        let mut chosen: Vec<u64> = Vec::with_capacity(n);
        while chosen.len() < n {
            let i = match &self.zipf {
                Some(z) => z.sample(rng) as u64 - 1,
                None => rng.gen_range(0..self.records),
            };
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        let mut args = Vec::with_capacity(2 + 2 * n);
        args.push(Arg::U64(n as u64));
        args.push(Arg::U64(self.value as u64));
        for i in chosen {
            args.push(Arg::Key(ycsb_key(i)));
            args.push(Arg::U64(u64::from(!rng.gen_bool(self.reads))));
        }
        Call {
            program: "micro".into(),
            args,
        }
    }
}

/// Read-modify-writes of uniform keys on distinct shards (hierarchical-validation.md
/// §IV: "8 update operations (read followed by a write on the same object), each in a
/// different data node", 800k objects of 1000 bytes). Object `j` lives in shard
/// `j mod shards` (key `#s/oj`); with `distinct-shards=1` the `ops` shards are distinct
/// when there are at least `ops` shards (otherwise they repeat as little as possible).
struct Rmw {
    ops: u32,
    keys: u64,
    value: usize,
    distinct: bool,
    /// Draw a transaction's shards from one aligned group of `span` consecutive shards
    /// (0: from all): `span=4` on 8 shards keeps each transaction under one level-1
    /// validator of a fanout-4 tree (§III-E's scenario).
    span: u32,
}

impl Workload for Rmw {
    fn spec(&self) -> String {
        format!(
            "rmw:ops={},keys={},value={},distinct-shards={},span={}",
            self.ops, self.keys, self.value, self.distinct as u32, self.span
        )
    }
    fn next_call(&mut self, rng: &mut Rng) -> Call {
        self.next_call_at(rng, &Site::ANY)
    }
    fn next_call_at(&mut self, rng: &mut Rng, site: &Site) -> Call {
        let shards = site.shards.max(1) as u64;
        let span = self.span as u64;
        let mut order: Vec<u64> = if span > 0 && span <= shards {
            let g = rng.gen_range(0..shards / span);
            (g * span..(g + 1) * span).collect()
        } else {
            (0..shards).collect()
        };
        let mut chosen: Vec<u64> = Vec::with_capacity(self.ops as usize);
        while chosen.len() < self.ops as usize {
            // A fresh random order of the shards for every `shards` operations.
            for i in (1..order.len()).rev() {
                order.swap(i, rng.gen_range(0..=i));
            }
            for &s in &order {
                if chosen.len() == self.ops as usize {
                    break;
                }
                let j = if self.distinct {
                    // a uniform object of shard s (objects j ≡ s mod shards)
                    let per = (self.keys - s).div_ceil(shards).max(1);
                    s + shards * rng.gen_range(0..per)
                } else {
                    rng.gen_range(0..self.keys)
                };
                if !chosen.contains(&j) {
                    chosen.push(j);
                }
            }
        }
        let mut args = Vec::with_capacity(2 + chosen.len());
        args.push(Arg::U64(chosen.len() as u64));
        args.push(Arg::U64(self.value as u64));
        for j in chosen {
            args.push(Arg::Key(Key::new(format!("#{}/o{j}", j % shards))));
        }
        Call {
            program: "rmw".into(),
            args,
        }
    }
}

/// Interactive-transaction scripts run whole (see [`meridian_txn::script`]).
struct Scripts {
    ops: u32,
    reads: f64,
    keys: u64,
    partial: f64,
}

impl Workload for Scripts {
    fn spec(&self) -> String {
        format!(
            "script:ops={},reads={},keys={},partial={}",
            self.ops, self.reads, self.keys, self.partial
        )
    }
    fn next_call(&mut self, rng: &mut Rng) -> Call {
        use meridian_txn::script::{encode, Op};
        let mut ops: Vec<Op> = (0..self.ops)
            .map(|_| {
                let k = ycsb_key(rng.gen_range(0..self.keys));
                if rng.gen_bool(self.reads) {
                    Op::Read(k)
                } else {
                    Op::Write(k, Value::from_u64(rng.gen()))
                }
            })
            .collect();
        if !rng.gen_bool(self.partial) {
            ops.push(Op::Commit);
        }
        Call {
            program: meridian_txn::script::NAME.into(),
            args: encode(&ops),
        }
    }
}

/// Money transfers between accounts; the total balance never changes.
struct Bank {
    accounts: u64,
    initial: u64,
    max: u64,
}

/// The key of bank account `i`.
pub fn account_key(i: u64) -> Key {
    Key::new(format!("acct{i}"))
}

impl Workload for Bank {
    fn spec(&self) -> String {
        format!(
            "bank:accounts={},initial={},max={}",
            self.accounts, self.initial, self.max
        )
    }
    fn next_call(&mut self, rng: &mut Rng) -> Call {
        let from = rng.gen_range(0..self.accounts);
        let mut to = rng.gen_range(0..self.accounts - 1);
        if to >= from {
            to += 1;
        }
        Call {
            program: "transfer".into(),
            args: vec![
                Arg::Key(account_key(from)),
                Arg::Key(account_key(to)),
                Arg::U64(rng.gen_range(1..=self.max)),
                Arg::U64(self.initial),
            ],
        }
    }
    fn check_final(&self, lookup: &dyn Fn(&Key) -> Option<Value>) -> Result<(), String> {
        let mut total: u128 = 0;
        for i in 0..self.accounts {
            let k = account_key(i);
            total += match lookup(&k) {
                None => self.initial as u128,
                Some(v) => {
                    v.as_u64()
                        .ok_or_else(|| format!("account {k} holds a malformed balance"))? as u128
                }
            };
        }
        let want = self.accounts as u128 * self.initial as u128;
        if total == want {
            Ok(())
        } else {
            Err(format!("bank invariant broken: total balance {total}, expected {want}"))
        }
    }
}

/// `k` dependent reads then a write: the shape the papers use to count round trips.
struct DependentReads {
    k: u64,
    keys: u64,
}

impl Workload for DependentReads {
    fn spec(&self) -> String {
        format!("dependent-reads:k={},keys={}", self.k, self.keys)
    }
    fn next_call(&mut self, rng: &mut Rng) -> Call {
        Call {
            program: "chain".into(),
            args: vec![
                Arg::U64(rng.gen_range(0..self.keys)),
                Arg::U64(self.k),
                Arg::U64(self.keys),
                Arg::U64(rng.gen()),
            ],
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn every_listed_workload_builds() {
        for name in WORKLOADS {
            assert!(build(name).is_ok(), "{name}");
        }
        let e = build("tpcx").err().expect("unknown").to_string();
        assert!(e.contains(&WORKLOADS.join(", ")), "{e}");
    }

    use super::*;
    use meridian_core::rng_for;
    use meridian_txn::{Execution, Step};

    #[test]
    fn specs_parse_with_defaults_and_errors_are_clear() {
        assert_eq!(
            build("ycsb").unwrap().spec(),
            "ycsb:ops=5,reads=0.5,keys=3000,theta=0,value=10"
        );
        assert_eq!(
            build("ycsb:ops=5,reads=0.5,keys=3000,theta=0.99,value=10")
                .unwrap()
                .spec(),
            "ycsb:ops=5,reads=0.5,keys=3000,theta=0.99,value=10"
        );
        let e = |s: &str| build(s).err().unwrap().to_string();
        assert_eq!(
            e("tpcx"),
            "unknown workload `tpcx` (known: ycsb, bank, dependent-reads, chain, tpcc, script, rmw, micro)"
        );
        assert!(e("ycsb:opz=3").contains("has no parameter `opz`"));
        assert!(e("ycsb:ops=x").contains("bad value for `ops`"));
        assert!(e("ycsb:reads=2").contains("fraction"));
        assert!(e("ycsb:ops").contains("expected NAME"));
        assert!(e("bank:accounts=1").contains("at least 2"));
        assert!(e("dependent-reads:k=0").contains("1..=1000"));
    }

    /// Runs a call serially against a map, applying its writes when it is done: the
    /// keys it read, the sequential read rounds (a batch is one round, as a client with
    /// futures would do it) and the final step.
    pub(crate) fn run_counting(call: Call, db: &mut BTreeMap<Key, Value>) -> (usize, usize, Step) {
        let reg = registry();
        let mut ex = Execution::new(call);
        let (mut reads, mut rounds) = (0, 0);
        loop {
            match ex.step(&reg).unwrap() {
                Step::Read(k) => {
                    rounds += 1;
                    let mut keys = ex.batch().to_vec();
                    if keys.is_empty() {
                        keys.push(k);
                    }
                    for k in keys {
                        reads += 1;
                        let v = db.get(&k).cloned();
                        ex.supply(k, v);
                    }
                }
                Step::Done { writes, output } => {
                    for (k, v) in writes.clone() {
                        db.insert(k, v);
                    }
                    return (reads, rounds, Step::Done { writes, output });
                }
                s => return (reads, rounds, s),
            }
        }
    }

    /// Runs a call to completion against a map, returning the number of remote reads.
    fn run(call: Call, db: &mut BTreeMap<Key, Value>) -> (usize, Step) {
        let (reads, _, step) = run_counting(call, db);
        (reads, step)
    }

    #[test]
    fn dependent_reads_do_k_distinct_reads_then_one_write() {
        let mut w = build("dependent-reads:k=4,keys=50").unwrap();
        let mut rng = rng_for(3, 0);
        let mut db = BTreeMap::new();
        for _ in 0..50 {
            let (reads, step) = run(w.next_call(&mut rng), &mut db);
            assert_eq!(reads, 4);
            assert!(matches!(step, Step::Done { ref writes, .. } if writes.len() == 1));
        }
    }

    #[test]
    fn bank_conserves_money_when_run_serially() {
        let mut w = build("bank:accounts=5,initial=10,max=8").unwrap();
        let mut rng = rng_for(4, 0);
        let mut db = BTreeMap::new();
        let mut aborts = 0;
        for _ in 0..200 {
            if let (_, Step::Abort(_)) = run(w.next_call(&mut rng), &mut db) {
                aborts += 1;
            }
        }
        assert!(aborts > 0, "insufficient-funds aborts should happen");
        w.check_final(&|k| db.get(k).cloned()).unwrap();
        db.insert(account_key(0), Value::from_u64(999));
        assert!(w.check_final(&|k| db.get(k).cloned()).is_err());
    }

    #[test]
    fn ycsb_keys_are_user_n() {
        for i in [0, 7, 10, 999, 1_000_000, u64::MAX] {
            assert_eq!(ycsb_key(i), Key::new(format!("user{i}")));
        }
    }

    #[test]
    fn ycsb_ops_and_ratio() {
        let mut w = build("ycsb:ops=10,reads=0.8,keys=100,theta=0.99").unwrap();
        let mut rng = rng_for(5, 0);
        let (mut r, mut wr) = (0, 0);
        let mut db = BTreeMap::new();
        for _ in 0..200 {
            let (reads, step) = run(w.next_call(&mut rng), &mut db);
            r += reads;
            if let Step::Done { writes, .. } = step {
                wr += writes.len();
            }
        }
        assert_eq!(r + wr, 2000);
        let frac = r as f64 / 2000.0;
        assert!((0.75..0.85).contains(&frac), "{frac}");
    }

    #[test]
    fn micro_accesses_parts_records_reading_or_updating_each() {
        let mut w = build("micro:records=1000,parts=1-4,dist=zipf1,reads=0.5").unwrap();
        assert_eq!(w.spec(), "micro:records=1000,parts=1-4,dist=zipf1,reads=0.5,value=10");
        let reg = registry();
        let prog = reg.get("micro").unwrap();
        let mut rng = rng_for(6, 0);
        let mut db = BTreeMap::new();
        let mut sizes = std::collections::BTreeSet::new();
        let (mut reads, mut writes) = (0, 0);
        for _ in 0..300 {
            let call = w.next_call(&mut rng);
            let keys = prog.declared_keys(&call.args).unwrap();
            let declared_writes = prog.declared_writes(&call.args).unwrap();
            assert!((1..=4).contains(&keys.len()));
            sizes.insert(keys.len());
            let (r, step) = run(call, &mut db);
            // every access reads; updates also write, and exactly the declared ones
            assert_eq!(r, keys.len());
            reads += r;
            match step {
                Step::Done { writes: ws, .. } => {
                    let mut got: Vec<Key> = ws.iter().map(|(k, _)| k.clone()).collect();
                    let mut want = declared_writes.clone();
                    got.sort();
                    want.sort();
                    assert_eq!(got, want);
                    writes += ws.len();
                }
                s => panic!("{s:?}"),
            }
        }
        assert_eq!(sizes.len(), 4, "1..=4 records per transaction: {sizes:?}");
        let frac = writes as f64 / reads as f64;
        assert!((0.4..0.6).contains(&frac), "{frac}");
        let e = |s: &str| build(s).err().unwrap().to_string();
        assert!(e("micro:parts=0-3").contains("1 <= A <= B"));
        assert!(e("micro:parts=5-2").contains("1 <= A <= B"));
        assert!(e("micro:dist=zipf3").contains("uniform, zipf1 or zipf2"));
        assert!(e("micro:records=3,parts=4").contains("at least"));
        assert_eq!(
            build("micro:parts=3").unwrap().spec(),
            "micro:records=100000,parts=3-3,dist=uniform,reads=0.5,value=10"
        );
    }

    #[test]
    fn rmw_touches_distinct_shards_within_its_span_and_increments() {
        let mut w = build("rmw:ops=4,span=4,keys=8000,value=16").unwrap();
        assert_eq!(w.spec(), "rmw:ops=4,keys=8000,value=16,distinct-shards=1,span=4");
        let site = Site {
            client_dc: 0,
            dcs: 1,
            shards: 8,
        };
        let reg = registry();
        let mut rng = rng_for(3, 0);
        for _ in 0..200 {
            let call = w.next_call_at(&mut rng, &site);
            let keys = meridian_txn::key_args(&call.args);
            let shards: std::collections::BTreeSet<u32> =
                keys.iter().map(|k| meridian_core::shard_of(k, 8).0).collect();
            assert_eq!(shards.len(), 4, "{keys:?}");
            assert!(
                shards.iter().all(|s| *s < 4) || shards.iter().all(|s| *s >= 4),
                "{shards:?}"
            );
            // Each key is read, then written with the old counter plus one.
            let mut exec = Execution::new(call);
            let mut writes = vec![];
            loop {
                match exec.step(&reg).unwrap() {
                    Step::Read(k) => exec.supply(k, Some(Value(7u64.to_le_bytes().to_vec()))),
                    Step::Done { writes: w, .. } => {
                        writes = w;
                        break;
                    }
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(writes.len(), 4);
            assert!(writes
                .iter()
                .all(|(_, v)| v.0.len() == 16 && v.0[..8] == 8u64.to_le_bytes()));
        }
        assert!(build("rmw:ops=0").is_err());
        assert!(build("rmw:distinct-shards=2").is_err());
    }
}
