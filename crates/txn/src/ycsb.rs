//! The `ycsb` program: a list of reads and writes of named keys, as the YCSB workload
//! issues them. It lives here, next to the program model, so that the protocols' unit
//! tests and the workloads run the same program.

use crate::{arg_key, arg_u64, key_args, Arg, Program, Stop, Tx};
use meridian_core::{Key, Value};

/// Args: `U64(n)`, then `n` pairs `Key`, `Bytes` (empty = read, else write that value).
pub struct Ycsb;

impl Program for Ycsb {
    fn name(&self) -> &'static str {
        "ycsb"
    }
    fn declared_keys(&self, args: &[Arg]) -> Option<Vec<Key>> {
        Some(key_args(args))
    }
    fn declared_writes(&self, args: &[Arg]) -> Option<Vec<Key>> {
        Some(
            args.windows(2)
                .filter_map(|w| match w {
                    [Arg::Key(k), Arg::Bytes(b)] if !b.is_empty() => Some(k.clone()),
                    _ => None,
                })
                .collect(),
        )
    }
    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
        let n = arg_u64(args, 0, "op count")? as usize;
        for i in 0..n {
            let key = arg_key(args, 1 + 2 * i, "key")?.clone();
            match args.get(2 + 2 * i) {
                Some(Arg::Bytes(b)) if b.is_empty() => {
                    tx.read(&key)?;
                }
                Some(Arg::Bytes(b)) => tx.write(key, Value(b.clone())),
                _ => return Err(Stop::Fault(format!("argument {} must be bytes", 2 + 2 * i))),
            }
        }
        Ok(())
    }
}
