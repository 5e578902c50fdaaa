//! Virtual time: nanoseconds since the start of a run.

/// A point in (virtual or real) time, in nanoseconds since the run started.
pub type Time = u64;

/// Converts milliseconds (possibly fractional) to [`Time`].
pub fn ms(v: f64) -> Time {
    (v * 1_000_000.0).round().max(0.0) as Time
}

/// Converts seconds (possibly fractional) to [`Time`].
pub fn secs(v: f64) -> Time {
    (v * 1_000_000_000.0).round().max(0.0) as Time
}

/// Converts a [`Time`] to fractional milliseconds, for reports.
pub fn to_ms(t: Time) -> f64 {
    t as f64 / 1_000_000.0
}

/// Parses a duration such as `250ms`, `2s`, `1.5s`, `90us`, `10m` into [`Time`]; the
/// unit is required.
pub fn parse_duration(s: &str) -> Result<Time, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => (&s[..i], &s[i..]),
        // A bare number is ambiguous (pgbench's -T is seconds, sleep(3) too, many
        // configs use ms): a unit is required.
        None => return Err(format!("duration `{s}` needs a unit: e.g. {s}s or {s}ms")),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad duration `{s}`: expected e.g. 250ms, 2s, 1.5s"))?;
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        _ => return Err(format!("bad duration unit in `{s}`: use ns, us, ms, s or m")),
    };
    Ok((v * scale).round() as Time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("250ms").unwrap(), 250_000_000);
        assert_eq!(parse_duration("1.5s").unwrap(), 1_500_000_000);
        assert!(parse_duration("7").unwrap_err().contains("needs a unit"));
        assert_eq!(parse_duration("2m").unwrap(), 120_000_000_000);
        assert!(parse_duration("2 parsecs").is_err());
        assert!(parse_duration("x").is_err());
    }
}
