//! The explorer's fault budget and the steps of a path, as `--faults` and `--replay`
//! spell them.

use meridian_core::NodeId;
use std::fmt;

/// Faults the explorer may inject along one path, each at most this many times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Budget {
    /// Server crashes (each crashed server may be restarted at any later step, and is
    /// restarted at the end).
    pub crash: u32,
    /// Messages lost.
    pub drop: u32,
    /// Messages duplicated (the copy joins the messages in flight as the newest).
    pub dup: u32,
    /// Timers that fire while messages are in flight and before the clock has reached
    /// their deadline: a node timing out on messages that are merely slow. A timer
    /// that is due, or the earliest timer of a quiet network, fires for free.
    pub timeouts: u32,
    /// Messages delivered while an older message is still in flight ([`ANY`]: no
    /// bound, every order). A small bound is delay-bounded search (Emmi, Qadeer and
    /// Rakamarić, POPL 2011): few reorderings reach most bugs, at a fraction of the
    /// states.
    pub reorder: u32,
}

/// No bound on reorderings.
pub const ANY: u32 = u32::MAX;

impl Default for Budget {
    fn default() -> Self {
        Budget {
            crash: 0,
            drop: 0,
            dup: 0,
            timeouts: 0,
            reorder: ANY,
        }
    }
}

impl Budget {
    /// Parses `crash=1,drop=2,dup=1,timeouts=1,reorder=2` (omitted kinds are 0, but
    /// reorderings are unbounded unless given; `none`: no faults).
    pub fn parse(s: &str) -> Result<Budget, String> {
        let mut b = Budget::default();
        let s = s.trim();
        if s.is_empty() || s == "none" {
            return Ok(b);
        }
        for part in s.split(',') {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("--faults: `{part}` is not KIND=N (kinds: {KINDS})"))?;
            let n: u32 = match v.trim() {
                "any" if k.trim() == "reorder" => ANY,
                v => v
                    .parse()
                    .ok()
                    .filter(|n| *n < ANY)
                    .ok_or_else(|| format!("--faults: `{v}` in `{part}` is not a count"))?,
            };
            match k.trim() {
                "crash" | "crashes" => b.crash = n,
                "drop" | "drops" => b.drop = n,
                "dup" | "dups" => b.dup = n,
                "timeouts" | "timeout" => b.timeouts = n,
                "reorder" | "reorders" => b.reorder = n,
                other => return Err(format!("--faults: unknown fault kind `{other}` (kinds: {KINDS})")),
            }
        }
        Ok(b)
    }
}

const KINDS: &str = "crash, drop, dup, timeouts, reorder";

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "crash={},drop={},dup={},timeouts={},reorder=",
            self.crash, self.drop, self.dup, self.timeouts
        )?;
        match self.reorder {
            ANY => write!(f, "any"),
            n => write!(f, "{n}"),
        }
    }
}

/// One step out of a state. Messages are named by the sequence number the explorer
/// gave them when they were sent (the same on every replay of a path).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// Deliver message `n`.
    Deliver(u64),
    /// Fire the node's earliest armed timer.
    Timer(NodeId),
    /// Crash the server.
    Crash(NodeId),
    /// Restart the crashed server (its protocol's recovery).
    Restart(NodeId),
    /// Lose message `n`.
    Drop(u64),
    /// Duplicate message `n`.
    Dup(u64),
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Deliver(n) => write!(f, "d{n}"),
            Step::Timer(n) => write!(f, "t{}", n.0),
            Step::Crash(n) => write!(f, "x{}", n.0),
            Step::Restart(n) => write!(f, "r{}", n.0),
            Step::Drop(n) => write!(f, "l{n}"),
            Step::Dup(n) => write!(f, "u{n}"),
        }
    }
}

impl std::str::FromStr for Step {
    type Err = String;
    fn from_str(s: &str) -> Result<Step, String> {
        let s = s.trim();
        let bad = || {
            format!(
                "`{s}` is not a step (d<msg> deliver, t<node> timer, x<node> crash, r<node> restart, l<msg> lose, u<msg> duplicate)"
            )
        };
        let (k, n) = s.split_at(s.char_indices().nth(1).map(|(i, _)| i).ok_or_else(bad)?);
        let n: u64 = n.parse().map_err(|_| bad())?;
        let node = || u32::try_from(n).map(NodeId).map_err(|_| bad());
        Ok(match k {
            "d" => Step::Deliver(n),
            "t" => Step::Timer(node()?),
            "x" => Step::Crash(node()?),
            "r" => Step::Restart(node()?),
            "l" => Step::Drop(n),
            "u" => Step::Dup(n),
            _ => return Err(bad()),
        })
    }
}
