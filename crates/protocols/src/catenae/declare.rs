//! Where a call's keys live and what it declares (§VI-B: transactions are
//! pre-declared; a program without a declaration is refused).

use super::*;

/// The chain server of `key` in DC `dc`.
pub(super) fn server_of(env: &Env, dc: DcId, key: &Key) -> NodeId {
    env.layout.replicas(env.layout.shard_of(key))[dc.0 as usize]
}

/// The declared keys of a call with their mode (true = may write), or why it cannot
/// run under Catenae.
pub(super) fn declared(env: &Env, call: &Call) -> Result<Vec<(Key, bool)>, AbortReason> {
    let prog = env
        .registry
        .get(&call.program)
        .map_err(|e| AbortReason::Unrunnable(e.to_string()))?;
    let keys = prog.declared_keys(&call.args).ok_or(AbortReason::Undeclared)?;
    let writes: BTreeSet<Key> = prog
        .declared_writes(&call.args)
        .ok_or(AbortReason::Undeclared)?
        .into_iter()
        .collect();
    let mut out: BTreeMap<Key, bool> = BTreeMap::new();
    for k in keys {
        let w = writes.contains(&k);
        *out.entry(k).or_insert(false) |= w;
    }
    for k in writes {
        out.insert(k, true);
    }
    Ok(out.into_iter().collect())
}
