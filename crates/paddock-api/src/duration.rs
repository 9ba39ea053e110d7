//! Durations as the admin API and the CLI write them: a whole number with `s`, `m`, `h` or `d`
//! (`30s`, `15m`, `24h`, `7d`; a bare number is seconds).

use std::time::Duration;

/// The longest duration accepted (ten years): deadlines are computed as now + a setting,
/// which must not overflow the clock.
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 365 * 86400);

/// Parses `30s`, `15m`, `24h`, `7d` (a bare number is seconds); the error says what is
/// expected.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: expected e.g. 30s, 15m, 24h, 7d"))?;
    let unit_secs = match unit {
        "s" | "" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(format!("invalid duration unit in {s:?}: use s, m, h or d")),
    };
    n.checked_mul(unit_secs)
        .map(Duration::from_secs)
        .filter(|d| *d <= MAX_DURATION)
        .ok_or_else(|| format!("duration {s:?} is longer than ten years"))
}

/// A number of seconds as people read it, in its two largest units: `45s`, `12m`, `1h30m`,
/// `2d3h` (the inverse of [`parse_duration`] for a single unit).
pub fn format_duration(secs: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(86400, "d"), (3600, "h"), (60, "m"), (1, "s")];
    let Some(first) = UNITS.iter().position(|(u, _)| secs >= *u) else {
        return "0s".into();
    };
    let (u1, n1) = UNITS[first];
    let mut out = format!("{}{n1}", secs / u1);
    if let Some((u2, n2)) = UNITS.get(first + 1) {
        let rest = (secs % u1) / u2;
        if rest > 0 {
            out.push_str(&format!("{rest}{n2}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_format_in_two_units() {
        for (secs, text) in [
            (0, "0s"),
            (45, "45s"),
            (60, "1m"),
            (125, "2m5s"),
            (5400, "1h30m"),
            (7200, "2h"),
            (183_600, "2d3h"),
        ] {
            assert_eq!(format_duration(secs), text);
        }
        assert_eq!(
            parse_duration(&format_duration(7200)),
            Ok(Duration::from_secs(7200))
        );
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86400)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172800)));
        assert!(parse_duration("1y").is_err());
        assert!(parse_duration("h").is_err());
        // Deadlines are now + a setting: nothing that could overflow the clock is taken.
        assert!(parse_duration("200000000000000d").is_err());
        assert!(parse_duration("18446744073709551615s").is_err());
        assert_eq!(parse_duration("3650d"), Ok(MAX_DURATION));
    }
}
