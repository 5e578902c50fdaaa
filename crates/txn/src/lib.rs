//! Transaction programs (docs/DESIGN.md, "Transactions").
//!
//! A program is deterministic code over `read(key)` / `write(key, value)` with
//! arguments, registered by name so every node can run it. It is executed by
//! **replay**: [`Execution::step`] runs the program from the top against the reads
//! made so far; the first read whose value is not yet known stops the run with
//! [`Step::Read`]. The caller fetches that value however its protocol does and calls
//! [`Execution::supply`]. This serves the three execution styles:
//!
//! - *interactive* (2PC, Replicated Commit, ...): a client steps, reads remotely,
//!   supplies, and commits the buffered writes when the program finishes;
//! - *shipped* (CrossStitch): the [`Execution`] (call + reads so far) is plain data
//!   that travels from server to server, each running one more step;
//! - *pre-declared* (Catenae): [`Program::declared_keys`] gives the key set up front.
//!   A program whose rows are named by a value it reads (TPC-C new-order inserts its
//!   order under the district's next order id) declares the *range* those rows fall in
//!   ([`key_range`]), as transaction chains declare a hop by the table fragment it
//!   touches rather than by row.
//!
//! Reads of a key the transaction already wrote return the buffered write, and a
//! second read of a key returns the first read's value (repeatable reads); neither
//! goes to a server. A program may abort itself with [`Tx::abort`].
//!
//! Two refinements serve protocols that need more than "the next read":
//!
//! - [`Tx::read_batch`] reads keys that do not depend on each other (the "futures" of
//!   crossstitch.md §5.1). The run still stops at the first unknown key, and
//!   [`Execution::batch`] lists the other unknown keys of that batch, so an interactive
//!   client can fetch them all in one round trip; a client that ignores it simply reads
//!   them one after another.
//! - [`Execution::step_ops`] also returns the writes the program made *before* it
//!   stopped, so a shipped execution can perform each write at its key's server in
//!   program order (a CrossStitch "put" state) instead of buffering all of them.
//!
//! Interactive transactions, whose operations come one by one from a caller, are the
//! [`script`] program: its arguments are the operations sent so far, and when it runs
//! out of them it stops with [`Stop::NeedInput`] ([`Step::Wait`]). A client role that
//! supports them pauses there and resumes when the caller's next operations are
//! appended to the call; replay makes the earlier reads repeat their first values.

pub mod script;
pub mod ycsb;

use meridian_core::{AbortReason, Key, Value};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// A program argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Arg {
    /// An integer.
    U64(u64),
    /// A key.
    Key(Key),
    /// Raw bytes.
    Bytes(Vec<u8>),
}

/// A request to run a registered program with arguments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Call {
    /// Registered program name.
    pub program: String,
    /// Arguments.
    pub args: Vec<Arg>,
}

/// Why a program run stopped early.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The value of this key is needed and not yet known.
    NeedRead(Key),
    /// The program aborted itself.
    Abort(String),
    /// The program was called wrongly (bad arguments) or behaved non-deterministically.
    Fault(String),
    /// The program has run out of its caller's input: an interactive transaction
    /// ([`script`]) waits for the next operations.
    NeedInput,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::NeedRead(k) => write!(f, "needs read of {k}"),
            Stop::Abort(r) => write!(f, "user abort: {r}"),
            Stop::Fault(r) => write!(f, "program fault: {r}"),
            Stop::NeedInput => write!(f, "needs the caller's next operations"),
        }
    }
}

/// The handle a program reads and writes through.
pub struct Tx<'a> {
    known: &'a [(Key, Option<Value>)],
    index: &'a HashMap<Key, usize>,
    writes: Vec<(Key, Value)>,
    output: Option<Value>,
    batch: Vec<Key>,
}

impl Tx<'_> {
    /// Reads a key: own write, else an earlier read, else stops with `NeedRead`.
    pub fn read(&mut self, key: &Key) -> Result<Option<Value>, Stop> {
        if let Some((_, v)) = self.writes.iter().rev().find(|(k, _)| k == key) {
            return Ok(Some(v.clone()));
        }
        match self.index.get(key) {
            Some(&i) => Ok(self.known[i].1.clone()),
            None => Err(Stop::NeedRead(key.clone())),
        }
    }
    /// Reads keys that do not depend on each other. If any is unknown the run stops at
    /// the first unknown one, and the others are offered through [`Execution::batch`].
    pub fn read_batch(&mut self, keys: &[Key]) -> Result<Vec<Option<Value>>, Stop> {
        let mut missing: Vec<Key> = Vec::new();
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            match self.read(k) {
                Ok(v) => out.push(v),
                Err(_) => {
                    if !missing.contains(k) {
                        missing.push(k.clone());
                    }
                }
            }
        }
        match missing.first() {
            None => Ok(out),
            Some(first) => {
                let first = first.clone();
                self.batch = missing;
                Err(Stop::NeedRead(first))
            }
        }
    }
    /// Reads a key holding a little-endian u64 (missing or malformed reads as `default`).
    pub fn read_u64(&mut self, key: &Key, default: u64) -> Result<u64, Stop> {
        Ok(self.read(key)?.and_then(|v| v.as_u64()).unwrap_or(default))
    }
    /// Buffers a write.
    pub fn write(&mut self, key: Key, value: Value) {
        self.writes.push((key, value));
    }
    /// Sets the value returned to the client.
    pub fn set_output(&mut self, v: Value) {
        self.output = Some(v);
    }
    /// Builds a user-abort stop: `return Err(tx.abort("reason"))`.
    pub fn abort(&self, reason: impl Into<String>) -> Stop {
        Stop::Abort(reason.into())
    }
}

/// A registered, deterministic transaction program.
pub trait Program: Send + Sync {
    /// Registered name.
    fn name(&self) -> &'static str;
    /// The key set, when it can be known before execution (pre-declared protocols).
    ///
    /// An entry may be a range ([`key_range`]): it covers every key with its prefix.
    /// Contract: every program that may touch a key inside a range declares that range
    /// (never the key alone), so that two transactions touching the same rows always
    /// share a declared entry; a pre-declared protocol orders them by it.
    fn declared_keys(&self, _args: &[Arg]) -> Option<Vec<Key>> {
        None
    }
    /// The declared keys the program may write (a subset of [`Program::declared_keys`];
    /// by default all of them). Empty means the transaction is read-only.
    fn declared_writes(&self, args: &[Arg]) -> Option<Vec<Key>> {
        self.declared_keys(args)
    }
    /// Runs the program; must be a pure function of `args` and the values read.
    fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop>;
}

/// The last byte of a declared range ([`key_range`]).
pub const RANGE_MARK: u8 = b'*';

/// A declared range: every key that starts with `prefix` (`prefix` followed by `*`).
/// Keys of the form `#shard/name` keep their shard, so a range and the keys it covers
/// live on the same shard.
pub fn key_range(prefix: &Key) -> Key {
    let mut b = prefix.as_bytes().to_vec();
    b.push(RANGE_MARK);
    Key::new(b)
}

/// Whether the declared entry `decl` covers `key`: the same key, or a range
/// ([`key_range`]) whose prefix `key` starts with.
pub fn covers(decl: &Key, key: &Key) -> bool {
    if decl == key {
        return true;
    }
    match decl.as_bytes().split_last() {
        Some((&RANGE_MARK, prefix)) => key.as_bytes().starts_with(prefix),
        _ => false,
    }
}

/// Whether `decl` is a range ([`key_range`]) rather than one key.
pub fn is_range(decl: &Key) -> bool {
    decl.as_bytes().last() == Some(&RANGE_MARK)
}

/// Programs by name.
#[derive(Clone, Default)]
pub struct Registry {
    programs: HashMap<String, Arc<dyn Program>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&String> = self.programs.keys().collect();
        names.sort();
        write!(f, "Registry{names:?}")
    }
}

/// An error running a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxnError {
    /// No program with that name.
    #[error("unknown program `{0}`")]
    UnknownProgram(String),
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }
    /// Registers a program under its name (replacing one of the same name).
    pub fn register(&mut self, p: Arc<dyn Program>) {
        self.programs.insert(p.name().to_string(), p);
    }
    /// Looks a program up.
    pub fn get(&self, name: &str) -> Result<&Arc<dyn Program>, TxnError> {
        self.programs
            .get(name)
            .ok_or_else(|| TxnError::UnknownProgram(name.to_string()))
    }
}

/// What an execution needs next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Read this key and [`Execution::supply`] its value.
    Read(Key),
    /// The program finished; commit these writes (program order; the last write to a
    /// key wins).
    Done {
        /// Writes in program order.
        writes: Vec<(Key, Value)>,
        /// The program's output, if any.
        output: Option<Value>,
    },
    /// The program aborted itself (or faulted); nothing may be written.
    Abort(AbortReason),
    /// An interactive transaction ([`script`]) has run every operation its caller sent
    /// so far and waits for more: the client reports `output` (the value of the last
    /// read) to its caller and resumes when the call's arguments grow.
    Wait {
        /// The program's output so far (for a script: the last read's value).
        output: Option<Value>,
    },
}

/// A program run in progress: the call plus the reads made so far. Plain data, so it
/// can be shipped between servers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Execution {
    /// What is being run.
    pub call: Call,
    reads: Vec<(Key, Option<Value>)>,
    #[serde(skip)]
    index: HashMap<Key, usize>,
    #[serde(skip)]
    batch: Vec<Key>,
}

impl Execution {
    /// Starts running a call.
    pub fn new(call: Call) -> Self {
        Execution {
            call,
            reads: Vec::new(),
            index: HashMap::default(),
            batch: Vec::new(),
        }
    }

    /// Runs the program from the top against the known reads.
    pub fn step(&mut self, reg: &Registry) -> Result<Step, TxnError> {
        self.run(reg, false).map(|(s, _)| s)
    }

    /// Like [`Self::step`], and also returns the writes made before the run stopped
    /// (for [`Step::Done`] they are the same as its `writes`; for [`Step::Abort`] they
    /// are empty, since an aborting program writes nothing).
    pub fn step_ops(&mut self, reg: &Registry) -> Result<(Step, Vec<(Key, Value)>), TxnError> {
        self.run(reg, true)
    }

    /// One run of the program; the writes made are also returned when `ops` (a copy for
    /// [`Step::Done`], whose `writes` are the same).
    fn run(&mut self, reg: &Registry, ops: bool) -> Result<(Step, Vec<(Key, Value)>), TxnError> {
        let prog = reg.get(&self.call.program)?;
        if self.index.len() != self.reads.len() {
            self.reindex();
        }
        let mut tx = Tx {
            known: &self.reads,
            index: &self.index,
            writes: Vec::new(),
            output: None,
            batch: Vec::new(),
        };
        let r = prog.run(&self.call.args, &mut tx);
        self.batch = std::mem::take(&mut tx.batch);
        Ok(match r {
            Ok(()) => {
                let made = if ops { tx.writes.clone() } else { Vec::new() };
                (
                    Step::Done {
                        writes: tx.writes,
                        output: tx.output,
                    },
                    made,
                )
            }
            Err(Stop::NeedRead(k)) => {
                if self.batch.first() != Some(&k) {
                    self.batch.clear();
                }
                (Step::Read(k), tx.writes)
            }
            Err(Stop::Abort(r)) => (Step::Abort(AbortReason::User(r)), vec![]),
            Err(Stop::Fault(r)) => (Step::Abort(AbortReason::ProgramFault(r)), vec![]),
            Err(Stop::NeedInput) => (Step::Wait { output: tx.output }, tx.writes),
        })
    }

    /// After a step that returned [`Step::Read`] from inside [`Tx::read_batch`]: every
    /// unknown key of that batch, the one returned first. Empty otherwise.
    pub fn batch(&self) -> &[Key] {
        &self.batch
    }

    /// Supplies the value of a read the last step asked for. A second value for a key
    /// already known is ignored (the first read stands).
    pub fn supply(&mut self, key: Key, value: Option<Value>) {
        if self.index.len() != self.reads.len() {
            self.reindex();
        }
        if !self.index.contains_key(&key) {
            self.index.insert(key.clone(), self.reads.len());
            self.reads.push((key, value));
        }
    }

    /// The reads made so far, in order.
    pub fn reads(&self) -> &[(Key, Option<Value>)] {
        &self.reads
    }

    fn reindex(&mut self) {
        self.index = self
            .reads
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), i))
            .collect();
    }
}

/// Reads a `U64` argument or reports which one is missing.
pub fn arg_u64(args: &[Arg], i: usize, what: &str) -> Result<u64, Stop> {
    match args.get(i) {
        Some(Arg::U64(v)) => Ok(*v),
        _ => Err(Stop::Fault(format!("argument {i} ({what}) must be an integer"))),
    }
}

/// Every `Key` argument, in order: the declared keys of a program whose arguments
/// name each key it touches.
pub fn key_args(args: &[Arg]) -> Vec<Key> {
    args.iter()
        .filter_map(|a| match a {
            Arg::Key(k) => Some(k.clone()),
            _ => None,
        })
        .collect()
}

/// Reads a `Key` argument or reports which one is missing.
pub fn arg_key<'a>(args: &'a [Arg], i: usize, what: &str) -> Result<&'a Key, Stop> {
    match args.get(i) {
        Some(Arg::Key(k)) => Ok(k),
        _ => Err(Stop::Fault(format!("argument {i} ({what}) must be a key"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_covers_its_prefix_and_nothing_else() {
        let r = key_range(&Key::from("#3/o1.1."));
        assert!(is_range(&r));
        assert!(!is_range(&Key::from("#3/o1.1.7")));
        assert!(covers(&r, &Key::from("#3/o1.1.7")));
        assert!(covers(&r, &r));
        assert!(!covers(&r, &Key::from("#3/o1.10.7")), "district 10 is not district 1");
        assert!(!covers(&r, &Key::from("#4/o1.1.7")), "another shard");
        assert!(!covers(&r, &Key::from("#3/no1.1.7")));
        let k = Key::from("#3/o1.1.7");
        assert!(covers(&k, &k));
        assert!(!covers(&k, &Key::from("#3/o1.1.70")), "a key is not a prefix");
    }

    /// Reads `a`; if it is >= 10 aborts; else writes `a+1` to `a` and to the key named
    /// by argument 0, then reads `a` again (own write).
    struct Incr;
    impl Program for Incr {
        fn name(&self) -> &'static str {
            "incr"
        }
        fn run(&self, args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
            let other = arg_key(args, 0, "other")?.clone();
            let a = Key::from("a");
            let v = tx.read_u64(&a, 0)?;
            if v >= 10 {
                return Err(tx.abort("too big"));
            }
            tx.write(a.clone(), Value::from_u64(v + 1));
            tx.write(other, Value::from_u64(v + 1));
            let again = tx.read_u64(&a, 0)?;
            tx.set_output(Value::from_u64(again));
            Ok(())
        }
    }

    fn reg() -> Registry {
        let mut r = Registry::new();
        r.register(Arc::new(Incr));
        r
    }

    #[test]
    fn replay_asks_for_each_read_once_and_reads_own_writes() {
        let r = reg();
        let mut e = Execution::new(Call {
            program: "incr".into(),
            args: vec![Arg::Key(Key::from("b"))],
        });
        assert_eq!(e.step(&r).unwrap(), Step::Read(Key::from("a")));
        e.supply(Key::from("a"), Some(Value::from_u64(4)));
        match e.step(&r).unwrap() {
            Step::Done { writes, output } => {
                assert_eq!(writes.len(), 2);
                assert_eq!(output, Some(Value::from_u64(5)));
            }
            s => panic!("unexpected {s:?}"),
        }
        assert_eq!(e.reads().len(), 1);
    }

    #[test]
    fn user_abort_and_bad_args_and_unknown_program() {
        let r = reg();
        let mut e = Execution::new(Call {
            program: "incr".into(),
            args: vec![Arg::Key(Key::from("b"))],
        });
        e.supply(Key::from("a"), Some(Value::from_u64(10)));
        assert_eq!(e.step(&r).unwrap(), Step::Abort(AbortReason::User("too big".into())));
        let mut bad = Execution::new(Call {
            program: "incr".into(),
            args: vec![],
        });
        assert!(matches!(bad.step(&r).unwrap(), Step::Abort(AbortReason::ProgramFault(m)) if m.contains("argument 0")));
        let mut none = Execution::new(Call {
            program: "nope".into(),
            args: vec![],
        });
        assert_eq!(none.step(&r), Err(TxnError::UnknownProgram("nope".into())));
    }

    /// Reads `a` and `b` together, then writes `c` = a + b and reads `d`.
    struct Batch;
    impl Program for Batch {
        fn name(&self) -> &'static str {
            "batch"
        }
        fn run(&self, _args: &[Arg], tx: &mut Tx<'_>) -> Result<(), Stop> {
            let vs = tx.read_batch(&[Key::from("a"), Key::from("b")])?;
            let sum: u64 = vs
                .iter()
                .map(|v| v.as_ref().and_then(|v| v.as_u64()).unwrap_or(0))
                .sum();
            tx.write(Key::from("c"), Value::from_u64(sum));
            tx.read(&Key::from("d"))?;
            Ok(())
        }
    }

    #[test]
    fn batch_reads_offer_every_missing_key_and_step_ops_returns_earlier_writes() {
        let mut r = Registry::new();
        r.register(Arc::new(Batch));
        let mut e = Execution::new(Call {
            program: "batch".into(),
            args: vec![],
        });
        let (s, w) = e.step_ops(&r).unwrap();
        assert_eq!(s, Step::Read(Key::from("a")));
        assert!(w.is_empty());
        assert_eq!(e.batch(), &[Key::from("a"), Key::from("b")]);
        e.supply(Key::from("a"), Some(Value::from_u64(2)));
        assert_eq!(e.step(&r).unwrap(), Step::Read(Key::from("b")));
        assert_eq!(e.batch(), &[Key::from("b")]);
        e.supply(Key::from("b"), Some(Value::from_u64(3)));
        let (s, w) = e.step_ops(&r).unwrap();
        assert_eq!(s, Step::Read(Key::from("d")));
        assert!(e.batch().is_empty(), "a plain read is not a batch");
        assert_eq!(w, vec![(Key::from("c"), Value::from_u64(5))]);
    }

    #[test]
    fn execution_survives_serialization_for_shipping() {
        let r = reg();
        let mut e = Execution::new(Call {
            program: "incr".into(),
            args: vec![Arg::Key(Key::from("b"))],
        });
        e.supply(Key::from("a"), Some(Value::from_u64(1)));
        let json = serde_json::to_string(&e).unwrap();
        let mut back: Execution = serde_json::from_str(&json).unwrap();
        assert_eq!(back.reads(), e.reads());
        assert!(matches!(back.step(&r).unwrap(), Step::Done { .. }));
    }
}
