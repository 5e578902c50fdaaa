//! Identifiers for datacenters, nodes, shards, clients, transactions and versions.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A datacenter, by index into the topology's DC list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DcId(pub u16);

/// A process in the system (data server or client), unique across the deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeId(pub u32);

/// A shard (partition of the key space).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ShardId(pub u32);

/// A client session; transaction ids are scoped by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ClientId(pub u32);

/// A transaction: the client that runs it and that client's sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxnId {
    /// The client that started the transaction.
    pub client: u32,
    /// Per-client sequence number, starting at 1.
    pub seq: u32,
}

/// One written version: the writing transaction and the index of the write within it
/// (so intermediate writes of a transaction are distinguishable from its final one).
/// Every version in a history is unique, which is what the checker relies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VersionId {
    /// The writer.
    pub txn: TxnId,
    /// Index of this write among the writer's writes.
    pub seq: u32,
}

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.client, self.seq)
    }
}

impl fmt::Display for VersionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.txn, self.seq)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

fn parse_u32(s: &str, what: &str) -> Result<u32, String> {
    s.parse().map_err(|_| format!("bad {what} `{s}`"))
}

impl FromStr for TxnId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (c, q) = s
            .split_once(':')
            .ok_or_else(|| format!("bad transaction id `{s}` (want CLIENT:SEQ)"))?;
        Ok(TxnId {
            client: parse_u32(c, "client")?,
            seq: parse_u32(q, "sequence")?,
        })
    }
}

impl FromStr for VersionId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (t, w) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("bad version id `{s}` (want CLIENT:SEQ:WRITE)"))?;
        Ok(VersionId {
            txn: t.parse()?,
            seq: parse_u32(w, "write index")?,
        })
    }
}

/// A visitor that parses a value from its text, borrowed where the format lends it.
pub(crate) struct FromText<T>(pub(crate) std::marker::PhantomData<T>);

impl<T: FromStr<Err = String>> serde::de::Visitor<'_> for FromText<T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an id as text")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
        v.parse().map_err(E::custom)
    }
}

/// In a human-readable format (JSON histories) an id is its text (`3:17`, `3:17:2`); in
/// a binary one (the wire, the journal) it is its numbers as a tuple, so a message
/// costs no formatting or parsing per id.
macro_rules! string_serde {
    ($t:ty, $bin:ty, $to:expr, $from:expr) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                if s.is_human_readable() {
                    s.collect_str(self)
                } else {
                    let to: fn(&$t) -> $bin = $to;
                    to(self).serialize(s)
                }
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                if d.is_human_readable() {
                    // Parsed from the borrowed text where the format lends it: no
                    // string is allocated per id.
                    d.deserialize_str(FromText::<$t>(std::marker::PhantomData))
                } else {
                    let from: fn($bin) -> $t = $from;
                    Ok(from(<$bin>::deserialize(d)?))
                }
            }
        }
    };
}
string_serde!(TxnId, (u32, u32), |t| (t.client, t.seq), |(client, seq)| TxnId {
    client,
    seq
});
string_serde!(VersionId, (u32, u32, u32), |v| (v.txn.client, v.txn.seq, v.seq), |(
    client,
    seq,
    w,
)| {
    VersionId {
        txn: TxnId { client, seq },
        seq: w,
    }
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_strings() {
        let v = VersionId {
            txn: TxnId { client: 3, seq: 17 },
            seq: 2,
        };
        assert_eq!(v.to_string(), "3:17:2");
        assert_eq!("3:17:2".parse::<VersionId>().unwrap(), v);
        assert!("3-17".parse::<TxnId>().is_err());
        assert!("a:b:c".parse::<VersionId>().is_err());
    }

    /// JSON keeps the text form; a binary format gets the numbers, and both round-trip.
    #[test]
    fn ids_are_text_in_json_and_numbers_in_binary() {
        let v = VersionId {
            txn: TxnId { client: 3, seq: 17 },
            seq: 2,
        };
        assert_eq!(serde_json::to_string(&v).unwrap(), "\"3:17:2\"");
        assert_eq!(serde_json::to_string(&v.txn).unwrap(), "\"3:17\"");
        assert_eq!(serde_json::from_str::<VersionId>("\"3:17:2\"").unwrap(), v);
        let bin = postcard::to_stdvec(&v).unwrap();
        assert_eq!(bin, vec![3, 17, 2]);
        assert_eq!(postcard::from_bytes::<VersionId>(&bin).unwrap(), v);
        let bin = postcard::to_stdvec(&v.txn).unwrap();
        assert_eq!(postcard::from_bytes::<TxnId>(&bin).unwrap(), v.txn);
    }
}
