//! The programs behind the workloads.

use meridian_core::{Key, Value};
use meridian_txn::{arg_key, arg_u64, key_args, Arg, Program, Registry, Stop, Tx};
use std::sync::Arc;

/// Every program of every workload.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.register(Arc::new(meridian_txn::ycsb::Ycsb));
    r.register(Arc::new(Rmw));
    r.register(Arc::new(Micro));
    r.register(Arc::new(Transfer));
    r.register(Arc::new(Chain));
    r.register(Arc::new(crate::partitioned::ChainOps));
    r.register(Arc::new(crate::partitioned::OrderStatus));
    r.register(Arc::new(crate::partitioned::StockLevel));
    r.register(Arc::new(crate::partitioned::NewOrder));
    r.register(Arc::new(crate::partitioned::Payment));
    r.register(Arc::new(meridian_txn::script::Script));
    r
}

/// Args: `U64(n)`, `U64(value bytes)`, then `n` keys: each is read, then written with a
/// value of that many bytes whose first 8 hold the old value's counter plus one.
struct Rmw;
impl Program for Rmw {
    fn name(&self) -> &'static str {
        "rmw"
    }
    fn declared_keys(&self, args: &[Arg]) -> Option<Vec<Key>> {
        Some(key_args(args))
    }
    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
        let n = arg_u64(args, 0, "op count")? as usize;
        let len = (arg_u64(args, 1, "value bytes")? as usize).max(8);
        for i in 0..n {
            let key = arg_key(args, 2 + i, "key")?.clone();
            let old = tx.read(&key)?;
            tx.write(key, bumped(old.as_ref(), len));
        }
        Ok(())
    }
}

/// Args: `U64(n)`, `U64(value bytes)`, then `n` pairs `Key`, `U64(kind)`: kind 0 reads
/// the key, kind 1 updates it (catenae.md §VII-C: "an update is translated to a read
/// followed by a write on the same data partition"; the value's first 8 bytes hold the
/// old value's counter plus one).
struct Micro;
impl Micro {
    fn ops(args: &[Arg]) -> impl Iterator<Item = (&Key, bool)> {
        args.get(2..).unwrap_or(&[]).chunks(2).filter_map(|c| match c {
            [Arg::Key(k), Arg::U64(kind)] => Some((k, *kind == 1)),
            _ => None,
        })
    }
}
impl Program for Micro {
    fn name(&self) -> &'static str {
        "micro"
    }
    fn declared_keys(&self, args: &[Arg]) -> Option<Vec<Key>> {
        Some(Self::ops(args).map(|(k, _)| k.clone()).collect())
    }
    fn declared_writes(&self, args: &[Arg]) -> Option<Vec<Key>> {
        Some(Self::ops(args).filter(|(_, w)| *w).map(|(k, _)| k.clone()).collect())
    }
    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
        let n = arg_u64(args, 0, "op count")? as usize;
        let len = (arg_u64(args, 1, "value bytes")? as usize).max(8);
        for i in 0..n {
            let key = arg_key(args, 2 + 2 * i, "key")?.clone();
            let update = match args.get(3 + 2 * i) {
                Some(Arg::U64(0)) => false,
                Some(Arg::U64(1)) => true,
                _ => {
                    return Err(Stop::Fault(format!(
                        "argument {} must be 0 (read) or 1 (update)",
                        3 + 2 * i
                    )))
                }
            };
            let old = tx.read(&key)?;
            if update {
                tx.write(key, bumped(old.as_ref(), len));
            }
        }
        Ok(())
    }
}

/// A value of `len` (at least 8) bytes whose first 8 hold `old`'s counter plus one
/// (an absent or short value counts 0): the write of a read-modify-write.
fn bumped(old: Option<&Value>, len: usize) -> Value {
    let c = old
        .and_then(|v| v.0.get(..8))
        .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    let mut v = vec![0u8; len.max(8)];
    v[..8].copy_from_slice(&(c + 1).to_le_bytes());
    Value(v)
}

/// Args: from, to, amount, initial balance. Aborts itself on insufficient funds.
struct Transfer;
impl Program for Transfer {
    fn name(&self) -> &'static str {
        "transfer"
    }
    fn declared_keys(&self, args: &[Arg]) -> Option<Vec<Key>> {
        Some(vec![
            arg_key(args, 0, "from").ok()?.clone(),
            arg_key(args, 1, "to").ok()?.clone(),
        ])
    }
    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
        let from = arg_key(args, 0, "from")?.clone();
        let to = arg_key(args, 1, "to")?.clone();
        let amount = arg_u64(args, 2, "amount")?;
        let initial = arg_u64(args, 3, "initial")?;
        let a = tx.read_u64(&from, initial)?;
        let b = tx.read_u64(&to, initial)?;
        if a < amount {
            return Err(tx.abort("insufficient funds"));
        }
        tx.write(from, Value::from_u64(a - amount));
        tx.write(to, Value::from_u64(b + amount));
        Ok(())
    }
}

/// Key `x` of level `level` of the dependent-read chain.
pub fn chain_key(level: u64, x: u64) -> Key {
    Key::new(format!("dep{level}:{x}"))
}

/// Args: start, k, keys, fresh. Reads level-0 key `start`; each value (or, if unset,
/// the index) picks the next level's key; after `k` reads writes a new pointer
/// (derived from `fresh`) into the level-0 key. Levels keep the `k` keys distinct.
struct Chain;
impl Program for Chain {
    fn name(&self) -> &'static str {
        "chain"
    }
    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
        let start = arg_u64(args, 0, "start")?;
        let k = arg_u64(args, 1, "k")?;
        let keys = arg_u64(args, 2, "keys")?.max(1);
        let fresh = arg_u64(args, 3, "fresh")?;
        let first = chain_key(0, start);
        let mut x = start;
        for level in 0..k {
            let v = tx.read_u64(&chain_key(level, x), x)?;
            x = v.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(level + 1) % keys;
        }
        tx.write(first, Value::from_u64(fresh ^ x));
        Ok(())
    }
}
