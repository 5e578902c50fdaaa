//! The one `NAME:key=value,...` syntax that workloads and fault plans share.

use std::collections::BTreeMap;

/// A parsed `NAME:key=value,...` item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec<'a> {
    /// The name before the colon.
    pub name: &'a str,
    /// Parameters, each given once.
    pub params: BTreeMap<&'a str, &'a str>,
}

/// Why a spec does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecError {
    /// Nothing before the colon.
    EmptyName,
    /// A parameter that is not `key=value`.
    NotKeyValue(String),
    /// A key given twice.
    Duplicate(String),
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpecError::EmptyName => write!(f, "no name before the colon"),
            SpecError::NotKeyValue(p) => write!(f, "`{p}` is not key=value"),
            SpecError::Duplicate(k) => write!(f, "`{k}` given twice"),
        }
    }
}

/// Parses `NAME` or `NAME:key=value,...` (whitespace around parts is ignored).
pub fn parse_spec(s: &str) -> Result<Spec<'_>, SpecError> {
    let (name, rest) = s.split_once(':').unwrap_or((s, ""));
    let name = name.trim();
    if name.is_empty() {
        return Err(SpecError::EmptyName);
    }
    let mut params = BTreeMap::new();
    for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| SpecError::NotKeyValue(part.to_string()))?;
        if params.insert(k.trim(), v.trim()).is_some() {
            return Err(SpecError::Duplicate(k.trim().to_string()));
        }
    }
    Ok(Spec { name, params })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_errors_are_named() {
        let s = parse_spec(" ycsb : ops=5, reads = 0.5 ").unwrap();
        assert_eq!(s.name, "ycsb");
        assert_eq!(s.params.get("reads"), Some(&"0.5"));
        assert_eq!(parse_spec("bank").unwrap().params.len(), 0);
        assert_eq!(parse_spec(":x=1"), Err(SpecError::EmptyName));
        assert_eq!(parse_spec("ycsb:ops"), Err(SpecError::NotKeyValue("ops".into())));
        assert_eq!(parse_spec("ycsb:ops=1,ops=2"), Err(SpecError::Duplicate("ops".into())));
    }
}
