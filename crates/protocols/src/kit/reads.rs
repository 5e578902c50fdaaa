//! Reads waiting at a server for a shared lock.
//!
//! A lock-based participant that cannot grant a read at once queues it next to the lock
//! table and answers it when the lock is granted, or with an error when the transaction
//! aborts. A client may re-send a read (a retry, a duplicated message): the queue holds
//! at most one read per key, so the grant answers it once, never twice.

use meridian_core::{AbortReason, Ctx, Key, NodeId, Time, TxnId, Value, VersionId};
use meridian_storage::MvStore;
use serde::{Deserialize, Serialize};

/// A client's read under a shared lock at the server whose lock table holds the key
/// (2PC's participant, the replicated log's shard leader), with the transaction's
/// wound-wait priority.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LockedRead {
    /// Transaction.
    pub txn: TxnId,
    /// Priority (the transaction's start time) for wound-wait.
    pub ts: Time,
    /// Key.
    pub key: Key,
}

/// The answer to a [`LockedRead`]: the version and value read, or why the transaction
/// was aborted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadAnswer {
    /// Transaction.
    pub txn: TxnId,
    /// Key.
    pub key: Key,
    /// Version and value, or why not.
    pub result: Result<(Option<VersionId>, Option<Value>), AbortReason>,
}

impl ReadAnswer {
    /// The latest committed version of `key` in `store`.
    pub fn latest(txn: TxnId, key: Key, store: &MvStore) -> Self {
        let (v, val) = store.latest(&key);
        let result = Ok((v, val.cloned()));
        ReadAnswer { txn, key, result }
    }

    /// A refusal: the transaction was aborted, for `why`.
    pub fn refused(txn: TxnId, key: Key, why: AbortReason) -> Self {
        ReadAnswer {
            txn,
            key,
            result: Err(why),
        }
    }
}

/// One waiting read: who asked, for which key, on which causal chain (WAN hops).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WaitingRead {
    /// The client that asked.
    pub client: NodeId,
    /// The key.
    pub key: Key,
    /// The request's WAN-hop count, which the deferred reply continues.
    pub hops: u32,
}

/// The reads of one transaction waiting at one server.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PendingReads(Vec<WaitingRead>);

impl PendingReads {
    /// Queues a read of `key`; a read of the same key already waiting is answered by
    /// the same grant, so a duplicate is not queued again.
    pub fn wait(&mut self, client: NodeId, key: Key, hops: u32) {
        if !self.0.iter().any(|r| r.key == key) {
            self.0.push(WaitingRead { client, key, hops });
        }
    }

    /// The read waiting for `key`, if any, removed: the lock on it was granted.
    pub fn granted(&mut self, key: &Key) -> Option<WaitingRead> {
        let i = self.0.iter().position(|r| r.key == *key)?;
        Some(self.0.remove(i))
    }

    /// Answers every waiting read, in arrival order, because the transaction aborted:
    /// `reply` builds the answer to a read of its key, sent to the read's client on the
    /// read's causal chain.
    pub fn refuse_all<M>(self, cx: &mut Ctx<'_, M>, mut reply: impl FnMut(Key) -> M) {
        for WaitingRead { client, key, hops } in self.0 {
            cx.send_on_chain(client, reply(key), hops);
        }
    }

    /// Whether no read waits.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl IntoIterator for PendingReads {
    type Item = WaitingRead;
    type IntoIter = std::vec::IntoIter<WaitingRead>;
    /// Every waiting read, in arrival order (to answer them all when the transaction
    /// aborts).
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duplicate_read_is_answered_once() {
        let mut p = PendingReads::default();
        p.wait(NodeId(9), Key::from("x"), 1);
        p.wait(NodeId(9), Key::from("x"), 2);
        p.wait(NodeId(9), Key::from("y"), 3);
        let x = p.granted(&Key::from("x")).expect("waiting");
        assert_eq!(x.hops, 1, "the first request is the one answered");
        assert_eq!(p.granted(&Key::from("x")), None, "and only once");
        assert!(!p.is_empty());
        let rest: Vec<Key> = p.into_iter().map(|r| r.key).collect();
        assert_eq!(rest, vec![Key::from("y")]);
    }
}
