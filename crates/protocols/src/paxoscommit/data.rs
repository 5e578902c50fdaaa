//! The data-server role: reads of the newest committed version for a home
//! coordinator, and installing committed writes (force-logged, acknowledged).

use super::*;

impl Server {
    /// The commit timestamp of `key`'s newest installed version here.
    pub(super) fn stored_ts(&self, key: &Key) -> u64 {
        self.store.versions(key).last().map_or(0, |v| v.wts)
    }

    pub(super) fn on_read(&mut self, txn: TxnId, key: Key, home: NodeId, cx: &mut Ctx<'_, Msg>) {
        cx.charge_ops(1);
        let (version, value) = self.store.latest(&key);
        let (version, value) = (version, value.cloned());
        let ts = self.stored_ts(&key);
        cx.send(
            home,
            Msg::ReadReply(ReadReply {
                txn,
                key,
                version,
                ts,
                value,
            }),
        );
    }

    /// Installs a commit's writes in timestamp order, forces the record, acknowledges.
    /// Idempotent: a re-sent install finds its versions in place (or collected).
    pub(super) fn on_install(
        &mut self,
        from: NodeId,
        txn: TxnId,
        ts: u64,
        writes: Vec<(Key, VersionId, Value)>,
        cx: &mut Ctx<'_, Msg>,
    ) {
        let fresh = writes.iter().any(|(k, v, _)| !self.store.has_or_collected(k, *v, ts));
        if fresh {
            cx.charge_ops(writes.len() as u32);
            for (k, v, val) in &writes {
                self.store.install(k, *v, val.clone(), ts);
            }
            self.log.append_sync(Rec::Installed { txn, ts, writes }, cx);
        } else {
            // Every version is here, or falls where version GC collected: newer ones
            // superseded it long ago, so nothing is installed; a store that records
            // collected ids still notes one it never held.
            for (k, v, val) in writes {
                self.store.install(&k, v, val, ts);
            }
        }
        cx.send(from, Msg::Installed { txn });
    }
}
