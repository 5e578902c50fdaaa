//! The interactive-transaction program: a transaction whose operations come from its
//! caller one at a time (`read`, `write`, then `commit` or `abort`).
//!
//! The program named [`NAME`] runs the operations encoded in its arguments
//! ([`encode`]) in order. If they end with [`Op::Commit`] it finishes and the
//! transaction commits as any program would. Without it, the program has run out of
//! input and stops with [`Stop::NeedInput`]: the client role reports the last read's
//! value to its caller ([`crate::Step::Wait`]) and waits for the next operations, which
//! it appends to the call's arguments before stepping again. Replay runs the script
//! from the top each time; earlier reads return their first values (repeatable reads),
//! so the caller sees the same values it saw before.
//!
//! A complete script (ending in `Commit`) is an ordinary program: any protocol can run
//! it with one round of requests, including those that ship programs to the servers.

use crate::{Arg, Program, Stop, Tx};
use meridian_core::{Key, Value};

/// The registered name of the script program.
pub const NAME: &str = "interactive";

const READ: u64 = 0;
const WRITE: u64 = 1;
const COMMIT: u64 = 2;
const ABORT: u64 = 3;

/// One operation of an interactive transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Read a key; its value becomes the program's output.
    Read(Key),
    /// Buffer a write.
    Write(Key, Value),
    /// Commit: must be the last operation.
    Commit,
    /// Abort with a reason: must be the last operation.
    Abort(String),
}

/// The arguments that append `ops` to a script.
pub fn encode(ops: &[Op]) -> Vec<Arg> {
    let mut v = Vec::new();
    for op in ops {
        match op {
            Op::Read(k) => v.extend([Arg::U64(READ), Arg::Key(k.clone())]),
            Op::Write(k, val) => v.extend([Arg::U64(WRITE), Arg::Key(k.clone()), Arg::Bytes(val.0.clone())]),
            Op::Commit => v.push(Arg::U64(COMMIT)),
            Op::Abort(r) => v.extend([Arg::U64(ABORT), Arg::Bytes(r.as_bytes().to_vec())]),
        }
    }
    v
}

/// The program (register it where every node's registry is built).
pub struct Script;

impl Program for Script {
    fn name(&self) -> &'static str {
        NAME
    }

    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
        let mut i = 0;
        let mut last: Option<Option<Value>> = None;
        while i < args.len() {
            let key = |j: usize| match args.get(j) {
                Some(Arg::Key(k)) => Ok(k.clone()),
                _ => Err(Stop::Fault(format!("script argument {j} must be a key"))),
            };
            let bytes = |j: usize| match args.get(j) {
                Some(Arg::Bytes(b)) => Ok(b.clone()),
                _ => Err(Stop::Fault(format!("script argument {j} must be bytes"))),
            };
            match &args[i] {
                Arg::U64(READ) => {
                    last = Some(tx.read(&key(i + 1)?)?);
                    i += 2;
                }
                Arg::U64(WRITE) => {
                    tx.write(key(i + 1)?, Value(bytes(i + 2)?));
                    i += 3;
                }
                Arg::U64(COMMIT) if i + 1 == args.len() => return Ok(()),
                Arg::U64(ABORT) if i + 2 == args.len() => {
                    return Err(tx.abort(String::from_utf8_lossy(&bytes(i + 1)?).into_owned()));
                }
                Arg::U64(COMMIT) | Arg::U64(ABORT) => {
                    return Err(Stop::Fault(
                        "commit or abort must be the script's last operation".into(),
                    ))
                }
                a => return Err(Stop::Fault(format!("script argument {i}: {a:?} is not an operation"))),
            }
        }
        if let Some(Some(v)) = last {
            tx.set_output(v);
        }
        Err(Stop::NeedInput)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Call, Execution, Registry, Step};
    use std::sync::Arc;

    fn reg() -> Registry {
        let mut r = Registry::new();
        r.register(Arc::new(Script));
        r
    }

    #[test]
    fn pauses_for_input_and_resumes_with_repeatable_reads() {
        let r = reg();
        let (a, b) = (Key::from("a"), Key::from("b"));
        let mut e = Execution::new(Call {
            program: NAME.into(),
            args: encode(&[Op::Read(a.clone())]),
        });
        assert_eq!(e.step(&r).unwrap(), Step::Read(a.clone()));
        e.supply(a.clone(), Some(Value::from_u64(7)));
        assert_eq!(
            e.step(&r).unwrap(),
            Step::Wait {
                output: Some(Value::from_u64(7))
            }
        );
        // The caller writes b, reads a again (first value) and b (own write).
        e.call
            .args
            .extend(encode(&[Op::Write(b.clone(), Value::from_u64(8)), Op::Read(a.clone())]));
        assert_eq!(
            e.step(&r).unwrap(),
            Step::Wait {
                output: Some(Value::from_u64(7))
            }
        );
        e.call.args.extend(encode(&[Op::Read(b.clone())]));
        assert_eq!(
            e.step(&r).unwrap(),
            Step::Wait {
                output: Some(Value::from_u64(8))
            }
        );
        e.call.args.extend(encode(&[Op::Commit]));
        match e.step(&r).unwrap() {
            Step::Done { writes, .. } => assert_eq!(writes, vec![(b, Value::from_u64(8))]),
            s => panic!("unexpected {s:?}"),
        }
    }

    #[test]
    fn absent_keys_abort_and_malformed_scripts() {
        let r = reg();
        let a = Key::from("a");
        let mut e = Execution::new(Call {
            program: NAME.into(),
            args: encode(&[Op::Read(a.clone())]),
        });
        e.supply(a.clone(), None);
        assert_eq!(e.step(&r).unwrap(), Step::Wait { output: None });
        e.call.args.extend(encode(&[Op::Abort("changed my mind".into())]));
        assert_eq!(
            e.step(&r).unwrap(),
            Step::Abort(meridian_core::AbortReason::User("changed my mind".into()))
        );

        for bad in [
            encode(&[Op::Commit, Op::Read(a.clone())]),
            vec![Arg::U64(9)],
            vec![Arg::U64(READ)],
            vec![Arg::U64(WRITE), Arg::Key(a.clone())],
            vec![Arg::Bytes(vec![1])],
        ] {
            let mut e = Execution::new(Call {
                program: NAME.into(),
                args: bad.clone(),
            });
            assert!(
                matches!(
                    e.step(&r).unwrap(),
                    Step::Abort(meridian_core::AbortReason::ProgramFault(_))
                ),
                "{bad:?}"
            );
        }
        // A complete script is an ordinary program.
        let mut e = Execution::new(Call {
            program: NAME.into(),
            args: encode(&[Op::Write(a.clone(), Value::from_u64(1)), Op::Commit]),
        });
        assert!(matches!(e.step(&r).unwrap(), Step::Done { writes, .. } if writes.len() == 1));
    }
}
