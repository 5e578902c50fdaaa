//! Keys and values are byte strings.
//!
//! In JSON a key is a string: printable ASCII other than `%` is kept as is, every other
//! byte is written `%XX`, so any byte string round-trips and readable keys stay readable.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::Arc;

/// A key: an arbitrary byte string, immutable. A short key (up to [`Key::INLINE`]
/// bytes, as every workload's keys are) is held inline, so cloning it into a message,
/// a lock entry or a history record is a copy of 24 bytes with no allocation and no
/// reference count, and comparing two reads no other memory; a longer one is shared
/// (`Arc`), so a clone costs a reference count. Equality, order and hash are the
/// bytes', whichever way a key is held.
#[derive(Clone)]
pub struct Key(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; Key::INLINE] },
    Shared(Arc<[u8]>),
}

impl Default for Key {
    fn default() -> Key {
        Key::from_bytes(&[])
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        match (&self.0, &other.0) {
            (Repr::Shared(a), Repr::Shared(b)) if Arc::ptr_eq(a, b) => true,
            _ => self.as_bytes() == other.as_bytes(),
        }
    }
}

impl Eq for Key {}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // What `#[derive(Hash)]` on the `Arc<[u8]>` did: the bytes, so equal keys hash
        // alike.
        self.as_bytes().hash(state)
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        match (&self.0, &other.0) {
            (Repr::Shared(a), Repr::Shared(b)) if Arc::ptr_eq(a, b) => std::cmp::Ordering::Equal,
            _ => self.as_bytes().cmp(other.as_bytes()),
        }
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A value: an arbitrary byte string.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct Value(pub Vec<u8>);

impl Key {
    /// The longest key held inline (longer ones are shared behind a reference count).
    pub const INLINE: usize = 22;

    /// Builds a key from anything byte-like.
    pub fn new(b: impl Into<Vec<u8>>) -> Key {
        let b = b.into();
        if b.len() <= Key::INLINE {
            Key::from_bytes(&b)
        } else {
            Key(Repr::Shared(Arc::from(b)))
        }
    }
    /// The key of these bytes.
    fn from_bytes(b: &[u8]) -> Key {
        if b.len() <= Key::INLINE {
            let mut bytes = [0u8; Key::INLINE];
            bytes[..b.len()].copy_from_slice(b);
            Key(Repr::Inline {
                len: b.len() as u8,
                bytes,
            })
        } else {
            Key(Repr::Shared(Arc::from(b)))
        }
    }
    /// Whether the key is held inline (short), not shared.
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }
    /// Whether the key is empty.
    pub fn is_empty(&self) -> bool {
        self.as_bytes().is_empty()
    }
    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..*len as usize],
            Repr::Shared(b) => b,
        }
    }
    /// A stable 64-bit FNV-1a hash, used for sharding (stable across runs and platforms).
    pub fn stable_hash(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.as_bytes() {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h
    }
    /// Encodes as the escaped text form described in the module docs.
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(self.len());
        for &b in self.as_bytes() {
            if (0x20..0x7f).contains(&b) && b != b'%' {
                s.push(b as char);
            } else {
                s.push_str(&format!("%{b:02X}"));
            }
        }
        s
    }
    /// Decodes the escaped text form.
    pub fn from_text(s: &str) -> Result<Key, String> {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                let hex = s
                    .get(i + 1..i + 3)
                    .ok_or_else(|| format!("bad key `{s}`: truncated %XX escape"))?;
                let b =
                    u8::from_str_radix(hex, 16).map_err(|_| format!("bad key `{s}`: `%{hex}` is not a hex byte"))?;
                out.push(b);
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        Ok(Key::new(out))
    }
}

impl From<&str> for Key {
    fn from(s: &str) -> Key {
        Key::from_bytes(s.as_bytes())
    }
}

impl From<String> for Key {
    fn from(s: String) -> Key {
        Key::new(s.into_bytes())
    }
}

impl From<&String> for Key {
    fn from(s: &String) -> Key {
        Key::from_bytes(s.as_bytes())
    }
}

impl From<Vec<u8>> for Key {
    fn from(b: Vec<u8>) -> Key {
        Key::new(b)
    }
}

impl From<&[u8]> for Key {
    fn from(b: &[u8]) -> Key {
        Key::from_bytes(b)
    }
}

impl<const N: usize> From<&[u8; N]> for Key {
    fn from(b: &[u8; N]) -> Key {
        Key::from_bytes(&b[..])
    }
}

impl From<&Key> for Key {
    fn from(k: &Key) -> Key {
        k.clone()
    }
}

impl AsRef<[u8]> for Key {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl std::borrow::Borrow<[u8]> for Key {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl std::str::FromStr for Key {
    type Err = std::convert::Infallible;
    /// The key of these bytes (not the escaped text form: see [`Key::from_text`]).
    fn from_str(s: &str) -> Result<Key, Self::Err> {
        Ok(Key::from(s))
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_text())
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_text())
    }
}

/// Readable: text as a quoted string, other bytes in hex; long values cut after 32
/// bytes with their length.
impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOW: usize = 32;
        let b = &self.0;
        let cut = b.len() > SHOW;
        match std::str::from_utf8(b) {
            Ok(t) if !t.chars().any(char::is_control) => {
                let mut end = b.len().min(SHOW);
                while !t.is_char_boundary(end) {
                    end -= 1;
                }
                write!(f, "Value({:?}", &t[..end])?;
            }
            _ => {
                f.write_str("Value(0x")?;
                for x in b.iter().take(SHOW) {
                    write!(f, "{x:02x}")?;
                }
            }
        }
        if cut {
            write!(f, "… {}B", b.len())?;
        }
        f.write_str(")")
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value(s.as_bytes().to_vec())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value(s.into_bytes())
    }
}

impl From<Vec<u8>> for Value {
    fn from(b: Vec<u8>) -> Value {
        Value(b)
    }
}

impl From<&[u8]> for Value {
    fn from(b: &[u8]) -> Value {
        Value(b.to_vec())
    }
}

impl<const N: usize> From<&[u8; N]> for Value {
    fn from(b: &[u8; N]) -> Value {
        Value(b.to_vec())
    }
}

impl From<u64> for Value {
    /// A little-endian u64, as [`Value::from_u64`].
    fn from(v: u64) -> Value {
        Value::from_u64(v)
    }
}

impl AsRef<[u8]> for Value {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl From<Value> for Vec<u8> {
    fn from(v: Value) -> Vec<u8> {
        v.0
    }
}

impl Value {
    /// A value holding a little-endian u64 (used by counters and balances).
    pub fn from_u64(v: u64) -> Value {
        Value(v.to_le_bytes().to_vec())
    }
    /// The value as text, if it is UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }
    /// Reads the value as a little-endian u64 if it is exactly eight bytes.
    pub fn as_u64(&self) -> Option<u64> {
        let b: [u8; 8] = self.0.as_slice().try_into().ok()?;
        Some(u64::from_le_bytes(b))
    }
}

/// Interned keys, shared by the threads that decode one history: sharded by hash so
/// that parsing threads rarely wait on one another.
pub struct KeyTable {
    shards: Box<[std::sync::Mutex<rustc_hash::FxHashSet<Key>>]>,
}

const KEY_TABLE_SHARDS: usize = 64;

impl Default for KeyTable {
    fn default() -> Self {
        KeyTable {
            shards: (0..KEY_TABLE_SHARDS).map(|_| Default::default()).collect(),
        }
    }
}

impl KeyTable {
    /// The key of these bytes, the one allocation for them in this table.
    fn intern(&self, b: &[u8]) -> Key {
        use std::hash::BuildHasher;
        let shard = (rustc_hash::FxBuildHasher.hash_one(b) >> 58) as usize % KEY_TABLE_SHARDS;
        // A poisoned shard only means another thread panicked mid-insert of a key;
        // the set itself is still a valid set.
        let mut set = self.shards[shard].lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = set.get(b) {
            return k.clone();
        }
        let k = Key(Repr::Shared(Arc::from(b)));
        set.insert(k.clone());
        k
    }
}

thread_local! {
    /// The table keys decoded on this thread go to while an [`InternKeys`] guard lives.
    static INTERN: std::cell::RefCell<Option<Arc<KeyTable>>> = const { std::cell::RefCell::new(None) };
}

/// While this guard lives, keys decoded from text on this thread are interned: a key
/// named by many records of a history is one allocation, shared (a history of a
/// million transactions names each key many times). Short keys, held inline, need no
/// table. Dropping it stops interning on
/// this thread; the table lives as long as a guard or a caller holds it.
pub struct InternKeys(());

impl InternKeys {
    /// Starts interning on this thread, into a table of its own.
    pub fn start() -> InternKeys {
        InternKeys::into(&Arc::new(KeyTable::default()))
    }

    /// Starts interning on this thread into `table`, which other threads may share: a
    /// key decoded on any of them is then one allocation.
    pub fn into(table: &Arc<KeyTable>) -> InternKeys {
        INTERN.with(|i| *i.borrow_mut() = Some(table.clone()));
        InternKeys(())
    }
}

impl Drop for InternKeys {
    fn drop(&mut self) {
        INTERN.with(|i| *i.borrow_mut() = None);
    }
}

/// The key of these bytes: inline if short, else the interned one if interning is on.
fn interned(b: &[u8]) -> Key {
    if b.len() <= Key::INLINE {
        return Key::from_bytes(b);
    }
    INTERN.with(|i| match i.borrow().as_deref() {
        None => Key::from_bytes(b),
        Some(table) => table.intern(b),
    })
}

/// In a human-readable format (JSON histories, reports) a key is its escaped text; in a
/// binary one (the wire, the journal) it is its raw bytes, so a message costs no text
/// encoding or parsing per key.
impl Serialize for Key {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&self.to_text())
        } else {
            s.serialize_bytes(self.as_bytes())
        }
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            // Decoded from the borrowed text where the format lends it (no string
            // allocated per key on the way).
            struct KeyText;
            impl serde::de::Visitor<'_> for KeyText {
                type Value = Key;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a key as text")
                }
                fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key, E> {
                    if !v.contains('%') {
                        return Ok(interned(v.as_bytes()));
                    }
                    Key::from_text(v).map(|k| interned(k.as_bytes())).map_err(E::custom)
                }
            }
            d.deserialize_str(KeyText)
        } else {
            d.deserialize_byte_buf(KeyBytes)
        }
    }
}

struct KeyBytes;

impl<'de> serde::de::Visitor<'de> for KeyBytes {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key's bytes")
    }
    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Key, E> {
        Ok(Key::from_bytes(v))
    }
    fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Key, E> {
        Ok(Key::new(v))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Key, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(b) = seq.next_element::<u8>()? {
            out.push(b);
        }
        Ok(Key::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The conversions an application reaches for all make the same key.
    #[test]
    fn keys_and_values_convert_from_what_an_app_holds() {
        let k = Key::from("user/7");
        let owned = String::from("user/7");
        let parsed: Key = "user/7".parse().unwrap();
        for other in [
            Key::from(owned.clone()),
            Key::from(&owned),
            Key::from(b"user/7"),
            Key::from(&b"user/7"[..]),
            Key::from(b"user/7".to_vec()),
            Key::from(&k),
            parsed,
        ] {
            assert_eq!(other, k);
        }
        assert_eq!(k.as_ref(), b"user/7");
        let m: std::collections::HashMap<Key, u32> = [(k.clone(), 1)].into();
        assert_eq!(m.get(&b"user/7"[..]), Some(&1), "looked up by its bytes");
        assert_eq!(Value::from(7u64), Value::from_u64(7));
        assert_eq!(Value::from(b"ab"), Value::from("ab"));
        assert_eq!(Vec::<u8>::from(Value::from("ab")), b"ab".to_vec());
    }

    proptest! {
        /// Equality, order and hash are the bytes', whether two keys share an
        /// allocation or not and whether they are held inline or shared (lengths on
        /// both sides of `Key::INLINE`; a common prefix, so that order is decided past
        /// it).
        #[test]
        fn keys_compare_by_their_bytes(
            prefix in proptest::collection::vec(any::<u8>(), 0..30),
            a in proptest::collection::vec(any::<u8>(), 0..6),
            b in proptest::collection::vec(any::<u8>(), 0..6),
        ) {
            let (a, b) = ([prefix.clone(), a].concat(), [prefix, b].concat());
            let (ka, kb) = (Key::new(a.clone()), Key::new(b.clone()));
            prop_assert_eq!(ka.is_inline(), a.len() <= Key::INLINE);
            prop_assert_eq!(ka.as_bytes(), &a[..]);
            prop_assert_eq!(ka.len(), a.len());
            prop_assert_eq!(ka == kb, a == b);
            prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            prop_assert_eq!(ka.partial_cmp(&kb), Some(a.cmp(&b)));
            let hash = |k: &Key| {
                use std::hash::{BuildHasher, BuildHasherDefault};
                BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(k)
            };
            let hash_bytes = |x: &[u8]| {
                use std::hash::{BuildHasher, BuildHasherDefault};
                BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(x)
            };
            prop_assert_eq!(hash(&ka), hash_bytes(&a), "a key hashes as its bytes (Borrow<[u8]>)");
            let same = ka.clone();
            prop_assert!(same == ka);
            prop_assert_eq!(same.cmp(&ka), std::cmp::Ordering::Equal);
            prop_assert!(Key::new(a.clone()) == ka);
            prop_assert!(Key::from(&a[..]) == ka);
            let wire = postcard::to_stdvec(&ka).unwrap();
            prop_assert_eq!(&postcard::to_stdvec(&a).unwrap(), &wire, "on the wire a key is its bytes");
            prop_assert!(postcard::from_bytes::<Key>(&wire).unwrap() == ka);
            let text = serde_json::to_string(&ka).unwrap();
            prop_assert!(serde_json::from_str::<Key>(&text).unwrap() == ka);
        }
    }

    #[test]
    fn a_key_is_24_bytes_and_short_keys_allocate_nothing() {
        assert_eq!(std::mem::size_of::<Key>(), 24);
        assert!(Key::from("user123456789").is_inline());
        assert!(!Key::from("x".repeat(Key::INLINE + 1).as_str()).is_inline());
        assert_eq!(Key::default().as_bytes(), b"");
    }

    #[test]
    fn values_convert_and_show_their_bytes() {
        assert_eq!(format!("{:?}", Value::from("hello")), "Value(\"hello\")");
        assert_eq!(format!("{:?}", Value::from(vec![0u8, 255])), "Value(0x00ff)");
        assert_eq!(
            format!("{:?}", Value::from("x".repeat(40))),
            format!("Value({:?}… 40B)", "x".repeat(32))
        );
        assert_eq!(Value::from(String::from("a")).as_str(), Some("a"));
        assert_eq!(Value::from(&b"ab"[..]).0, b"ab".to_vec());
    }

    /// JSON keeps the escaped text; a binary format gets the raw bytes.
    #[test]
    fn keys_are_text_in_json_and_bytes_in_binary() {
        let k = Key::new(vec![b'a', 0, b'%']);
        assert_eq!(serde_json::to_string(&k).unwrap(), "\"a%00%25\"");
        assert_eq!(serde_json::from_str::<Key>("\"a%00%25\"").unwrap(), k);
        let bin = postcard::to_stdvec(&k).unwrap();
        assert_eq!(bin, vec![3, b'a', 0, b'%']);
        assert_eq!(postcard::from_bytes::<Key>(&bin).unwrap(), k);
    }

    proptest! {
        #[test]
        fn key_text_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let k = Key::new(bytes);
            prop_assert_eq!(Key::from_text(&k.to_text()).unwrap(), k);
        }
    }

    #[test]
    fn readable_keys_stay_readable() {
        assert_eq!(Key::from("user42").to_text(), "user42");
        assert_eq!(Key::new(vec![0, b'%']).to_text(), "%00%25");
        assert!(Key::from_text("%4").is_err());
        assert!(Key::from_text("%zz").is_err());
    }
}
