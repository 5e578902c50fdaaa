//! Keys and values are byte strings.
//!
//! In JSON a key is a string: printable ASCII other than `%` is kept as is, every other
//! byte is written `%XX`, so any byte string round-trips and readable keys stay readable.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::Arc;

/// A key: an arbitrary byte string. Immutable and shared, so cloning a key into a
/// message, a lock entry or a history record costs a reference count, not a copy.
/// Equality and order are the bytes'; two clones of one key (the common case: a
/// workload hands out one allocation per key) compare equal without reading them.
#[derive(Clone, Eq, Default)]
pub struct Key(Arc<[u8]>);

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // What `#[derive(Hash)]` did: the bytes, so equal keys hash alike.
        self.0.hash(state)
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        if Arc::ptr_eq(&self.0, &other.0) {
            std::cmp::Ordering::Equal
        } else {
            self.0.cmp(&other.0)
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
    /// Builds a key from anything byte-like.
    pub fn new(b: impl Into<Vec<u8>>) -> Key {
        Key(Arc::from(b.into()))
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether the key is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
    /// A stable 64-bit FNV-1a hash, used for sharding (stable across runs and platforms).
    pub fn stable_hash(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.0.iter() {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h
    }
    /// Encodes as the escaped text form described in the module docs.
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(self.0.len());
        for &b in self.0.iter() {
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
        Key::new(s.as_bytes())
    }
}

impl From<String> for Key {
    fn from(s: String) -> Key {
        Key::new(s.into_bytes())
    }
}

impl From<&String> for Key {
    fn from(s: &String) -> Key {
        Key::new(s.as_bytes())
    }
}

impl From<Vec<u8>> for Key {
    fn from(b: Vec<u8>) -> Key {
        Key::new(b)
    }
}

impl From<&[u8]> for Key {
    fn from(b: &[u8]) -> Key {
        Key(Arc::from(b))
    }
}

impl<const N: usize> From<&[u8; N]> for Key {
    fn from(b: &[u8; N]) -> Key {
        Key(Arc::from(&b[..]))
    }
}

impl From<&Key> for Key {
    fn from(k: &Key) -> Key {
        k.clone()
    }
}

impl AsRef<[u8]> for Key {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl std::borrow::Borrow<[u8]> for Key {
    fn borrow(&self) -> &[u8] {
        &self.0
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

thread_local! {
    /// The keys decoded so far on this thread while an [`InternKeys`] guard lives.
    static INTERN: std::cell::RefCell<Option<rustc_hash::FxHashSet<Key>>> = const { std::cell::RefCell::new(None) };
}

/// While this guard lives, keys decoded from text on this thread are interned: a key
/// named by many records of a history is one allocation, shared (a history of a
/// million transactions names each key many times). Dropping it forgets the table.
pub struct InternKeys(());

impl InternKeys {
    /// Starts interning on this thread.
    pub fn start() -> InternKeys {
        INTERN.with(|i| *i.borrow_mut() = Some(Default::default()));
        InternKeys(())
    }
}

impl Drop for InternKeys {
    fn drop(&mut self) {
        INTERN.with(|i| *i.borrow_mut() = None);
    }
}

/// The key of these bytes: the interned one if interning is on and it was seen.
fn interned(b: &[u8]) -> Key {
    INTERN.with(|i| match i.borrow_mut().as_mut() {
        None => Key(Arc::from(b)),
        Some(set) => match set.get(b) {
            Some(k) => k.clone(),
            None => {
                let k = Key(Arc::from(b));
                set.insert(k.clone());
                k
            }
        },
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
            s.serialize_bytes(&self.0)
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
        Ok(Key(Arc::from(v)))
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
        /// Equality and order are the bytes', whether two keys share an allocation or not.
        #[test]
        fn keys_compare_by_their_bytes(a in proptest::collection::vec(any::<u8>(), 0..6), b in proptest::collection::vec(any::<u8>(), 0..6)) {
            let (ka, kb) = (Key::new(a.clone()), Key::new(b.clone()));
            prop_assert_eq!(ka == kb, a == b);
            prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            prop_assert_eq!(ka.partial_cmp(&kb), Some(a.cmp(&b)));
            let same = ka.clone();
            prop_assert!(same == ka);
            prop_assert_eq!(same.cmp(&ka), std::cmp::Ordering::Equal);
            prop_assert!(Key::new(a.clone()) == ka);
        }
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
