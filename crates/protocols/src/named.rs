//! Protocols by `--protocol` name: parsing a spec such as `replog:leaders=C/V/O` into a
//! protocol value and applying something generic over [`Protocol`] to it. The simulator
//! and the TCP runtime share this one parser.

use crate::twopc::{Cc, TwoPc};
use crate::Protocol;
use meridian_core::{HomeRule, Topology, TopologyError};

/// A `--protocol` spec that names no protocol or has bad parameters.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// Unknown protocol name.
    #[error("unknown protocol `{0}` (known: {known})", known = crate::PROTOCOLS.join(", "))]
    Unknown(String),
    /// Bad parameters.
    #[error("{0}")]
    Invalid(String),
    /// A parameter names a DC the topology lacks.
    #[error(transparent)]
    Topology(#[from] TopologyError),
}

/// Something generic over the protocol, applied by [`with_protocol`] to the protocol a
/// `--protocol` spec names (how the simulator and the TCP runtime share one parser).
pub trait WithProtocol {
    /// What applying it produces.
    type Out;
    /// Applies it to protocol `p`.
    fn with<P: Protocol>(self, p: P) -> Self::Out;
}

/// Parses a `--protocol` spec (name and parameters) for a topology and home rule, and
/// applies `w` to the protocol it names.
pub fn with_protocol<W: WithProtocol>(
    name: &str,
    topology: &Topology,
    home: HomeRule,
    w: W,
) -> Result<W::Out, ProtocolError> {
    let mut spec =
        meridian_core::spec::parse_spec(name).map_err(|e| ProtocolError::Invalid(format!("--protocol: {e}")))?;
    let mutant = take_mutant(&mut spec)?;
    if !matches!(
        spec.name,
        "replog"
            | "hacommit"
            | "hacommit-rc"
            | "2pc-2pl"
            | "2pc-occ"
            | "crossstitch"
            | "hier-lock"
            | "hier-ts"
            | "2pc-deferred"
            | "catenae"
            | "rc"
    ) {
        if let Some(k) = spec.params.keys().next() {
            return Err(ProtocolError::Invalid(format!(
                "--protocol: `{}` takes no parameters (got `{k}`)",
                spec.name
            )));
        }
    }
    Ok(match spec.name {
        "2pc-2pl" => w.with(TwoPc {
            cc: Cc::Locking,
            copies: copies_for(&spec, 1)?,
            mutant,
        }),
        "2pc-occ" => w.with(TwoPc {
            cc: Cc::Optimistic,
            copies: copies_for(&spec, 1)?,
            mutant,
        }),
        "rc" => w.with(rc_for(&spec)?),
        "pc-2pl" => w.with(crate::paxoscommit::PaxosCommit {
            cc: crate::paxoscommit::Cc::Locking,
        }),
        "pc-occ" => w.with(crate::paxoscommit::PaxosCommit {
            cc: crate::paxoscommit::Cc::Optimistic,
        }),
        "replog" => w.with(crate::replog::ReplicatedLog {
            mutant,
            ..replog_for(&spec, topology, home)?
        }),
        "hacommit" | "hacommit-rc" => w.with(crate::hacommit::HaCommit {
            mutant,
            ..hacommit_for(&spec)?
        }),
        "crossstitch" => w.with(crate::crossstitch::CrossStitch {
            copies: copies_for(&spec, 2)?,
            mutant,
        }),
        "hier-lock" | "hier-ts" | "2pc-deferred" => w.with(hierval_for(&spec)?),
        "catenae" => {
            let c = crate::catenae::Catenae::from_params(spec.params.iter().map(|(k, v)| (*k, *v)))
                .map_err(ProtocolError::Invalid)?;
            if c.secondary && topology.nodes_per_dc < 2 {
                return Err(ProtocolError::Invalid(format!(
                    "catenae: secondary=on needs at least two servers per DC (the coordinator and its \
                     secondary); topology `{}` has {}",
                    topology.name, topology.nodes_per_dc
                )));
            }
            w.with(c)
        }
        other => return Err(ProtocolError::Unknown(other.to_string())),
    })
}

/// Takes the `mutant=` parameter out of `spec` (see [`crate::Mutant`]): only builds
/// with the `mutants` feature know it; elsewhere it stays, and is refused as unknown.
fn take_mutant(spec: &mut meridian_core::spec::Spec<'_>) -> Result<crate::Mutant, ProtocolError> {
    if !cfg!(feature = "mutants") {
        return Ok(crate::Mutant::None);
    }
    let Some(v) = spec.params.remove("mutant") else {
        return Ok(crate::Mutant::None);
    };
    match crate::Mutant::ALL.iter().find(|(name, _, _)| *name == v) {
        Some((_, p, m)) if *p == spec.name => Ok(*m),
        Some((_, p, _)) => Err(ProtocolError::Invalid(format!(
            "--protocol: mutant `{v}` is a mutant of `{p}`"
        ))),
        None => Err(ProtocolError::Invalid(format!("--protocol: unknown mutant `{v}`"))),
    }
}

/// The `copies=N` parameter of `2pc-2pl`, `2pc-occ` and `crossstitch` (the only one
/// they take): copies of each shard in its home DC.
fn copies_for(spec: &meridian_core::spec::Spec<'_>, default: u32) -> Result<u32, ProtocolError> {
    let mut copies = default;
    for (k, v) in &spec.params {
        match *k {
            "copies" => match v.parse::<u32>() {
                Ok(n) if (1..=8).contains(&n) => copies = n,
                _ => {
                    return Err(ProtocolError::Invalid(format!(
                        "--protocol: {}: `copies` must be 1..=8, got `{v}`",
                        spec.name
                    )))
                }
            },
            other => {
                return Err(ProtocolError::Invalid(format!(
                    "--protocol: {} has no parameter `{other}` (known: copies)",
                    spec.name
                )))
            }
        }
    }
    Ok(copies)
}

/// Parameter `key=v` of protocol `name` as a duration longer than zero (`2s`,
/// `250ms`): one error naming the parameter otherwise.
fn positive_duration(name: &str, key: &str, v: &str) -> Result<meridian_core::Time, ProtocolError> {
    let t = meridian_core::time::parse_duration(v)
        .map_err(|e| ProtocolError::Invalid(format!("{name}: {key}={v}: {e}")))?;
    if t == 0 {
        return Err(ProtocolError::Invalid(format!(
            "{name}: {key}={v}: must be longer than zero"
        )));
    }
    Ok(t)
}

/// The `rc` protocol for a spec's `forget=DUR` parameter (how long after every DC
/// confirmed it a coordinator forgets a decision; default the tombstone period).
fn rc_for(spec: &meridian_core::spec::Spec<'_>) -> Result<crate::rc::ReplicatedCommit, ProtocolError> {
    let mut p = crate::rc::ReplicatedCommit::default();
    for (k, v) in &spec.params {
        match *k {
            "forget" => p.forget = Some(positive_duration("rc", "forget", v)?),
            other => {
                return Err(ProtocolError::Invalid(format!(
                    "rc: unknown parameter `{other}` (known: forget)"
                )))
            }
        }
    }
    Ok(p)
}

/// The `replog` protocol for a spec's `leaders=` parameter (default: `--data-dc` if
/// given, else shard `s` in DC `s mod #DCs`).
fn replog_for(
    spec: &meridian_core::spec::Spec<'_>,
    t: &Topology,
    home: HomeRule,
) -> Result<crate::replog::ReplicatedLog, ProtocolError> {
    let mut leader_dcs = vec![];
    let mut no_wait = false;
    let mut lease = None;
    let mut keep = None;
    let mut forget = None;
    for (k, v) in &spec.params {
        match *k {
            "lease" => lease = Some(positive_duration("replog", "lease", v)?),
            "forget" => forget = Some(positive_duration("replog", "forget", v)?),
            "keep" => match v.parse::<u64>() {
                Ok(n) if n >= 1 => keep = Some(n),
                _ => {
                    return Err(ProtocolError::Invalid(format!(
                        "replog: keep={v} (expected a whole number of log slots, at least 1)"
                    )))
                }
            },
            "leaders" => {
                let names: Vec<&str> = v.split('/').map(str::trim).collect();
                if names.len() != t.shards as usize {
                    return Err(ProtocolError::Invalid(format!(
                        "replog: leaders={v} names {} DCs but the topology has {} shards (one leader DC per shard, e.g. C/V/O)",
                        names.len(),
                        t.shards
                    )));
                }
                for n in names {
                    leader_dcs.push(t.dc(n)?);
                }
            }
            "locks" => match *v {
                "wound-wait" => no_wait = false,
                "no-wait" => no_wait = true,
                _ => {
                    return Err(ProtocolError::Invalid(format!(
                        "replog: locks={v} (known: wound-wait, no-wait)"
                    )))
                }
            },
            other => {
                return Err(ProtocolError::Invalid(format!(
                    "replog: unknown parameter `{other}` (known: leaders, locks, lease, keep, forget)"
                )))
            }
        }
    }
    if leader_dcs.is_empty() {
        if let HomeRule::Dc(d) = home {
            leader_dcs = vec![d; t.shards as usize];
        }
    }
    Ok(crate::replog::ReplicatedLog {
        leader_dcs,
        no_wait,
        lease,
        keep,
        forget,
        mutant: crate::Mutant::None,
    })
}

/// The `hacommit` / `hacommit-rc` protocol for a spec's `replicas=` parameter
/// (replicas per shard group, default 3) and `forget=DUR` (how long after its decision
/// a replica forgets a transaction every replica settled; default the tombstone
/// period).
pub fn hacommit_for(spec: &meridian_core::spec::Spec<'_>) -> Result<crate::hacommit::HaCommit, ProtocolError> {
    let mut p = crate::hacommit::HaCommit {
        read_committed: spec.name == "hacommit-rc",
        ..Default::default()
    };
    for (k, v) in &spec.params {
        match *k {
            "replicas" => match v.parse::<u32>() {
                Ok(n) if n >= 1 => p.replicas = n,
                _ => {
                    return Err(ProtocolError::Invalid(format!(
                        "{}: replicas={v} (expected a whole number of replicas per shard, at least 1)",
                        spec.name
                    )))
                }
            },
            "forget" => p.forget = Some(positive_duration(spec.name, "forget", v)?),
            other => {
                return Err(ProtocolError::Invalid(format!(
                    "{}: unknown parameter `{other}` (known: replicas, forget)",
                    spec.name
                )))
            }
        }
    }
    Ok(p)
}

/// `hier-lock`, `hier-ts` and `2pc-deferred` with their parameters (`batch`, `fanout`,
/// `validate`, `flush`; see [`crate::hierval`]).
pub fn hierval_for(spec: &meridian_core::spec::Spec<'_>) -> Result<crate::hierval::HierVal, ProtocolError> {
    use crate::hierval::{HierVal, Mode};
    let mode = match spec.name {
        "hier-lock" => Mode::Lock,
        "hier-ts" => Mode::Ts,
        _ => Mode::TwoPc,
    };
    HierVal::new(mode)
        .with_params(spec.params.iter().map(|(k, v)| (*k, *v)))
        .map_err(|e| ProtocolError::Invalid(format!("--protocol: {e}")))
}
