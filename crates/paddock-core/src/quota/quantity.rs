//! Kubernetes resource quantities (`500m`, `2`, `1Gi`, `1.5e3`) as exact integers of
//! thousandths ("milli-units"), the unit every quota sum here is kept in. Parsing rounds up,
//! as the apiserver's quota does (`MilliValue` of a quantity finer than a milli-unit is the
//! next milli-unit up).

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

/// A quantity in milli-units (1 CPU = 1000, 1 byte = 1000, 1 object = 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Milli(pub i128);

/// A quantity that is not a Kubernetes quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {0:?}"
)]
pub struct QuantityError(pub String);

/// The largest magnitude accepted (far beyond any real resource; keeps sums from overflowing).
const MAX: i128 = 1_000_000_000_000_000_000_000_000_000;

impl Milli {
    /// `n` whole units (objects, pods).
    pub const fn units(n: i64) -> Milli {
        Milli(n as i128 * 1000)
    }

    /// Parses a Kubernetes quantity string.
    pub fn parse(s: &str) -> Result<Milli, QuantityError> {
        let err = || QuantityError(s.to_string());
        let t = s.trim();
        if t.is_empty() || t.len() > 64 {
            return Err(err());
        }
        let (neg, t) = match t.as_bytes()[0] {
            b'-' => (true, &t[1..]),
            b'+' => (false, &t[1..]),
            _ => (false, t),
        };
        let num_end = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, suffix) = t.split_at(num_end);
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return Err(err());
        }
        // mantissa as an integer over 10^scale
        let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
        let digits = format!("{int_part}{frac_part}");
        if digits.len() > 30 {
            return Err(err());
        }
        let mantissa: i128 = digits.parse().map_err(|_| err())?;
        let scale = frac_part.len() as i32;
        // (multiplier numerator, power of ten) of the suffix
        let (mul, pow10): (i128, i32) = match suffix {
            "" => (1, 0),
            "n" => (1, -9),
            "u" => (1, -6),
            "m" => (1, -3),
            "k" => (1, 3),
            "M" => (1, 6),
            "G" => (1, 9),
            "T" => (1, 12),
            "P" => (1, 15),
            "E" => (1, 18),
            "Ki" => (1 << 10, 0),
            "Mi" => (1 << 20, 0),
            "Gi" => (1 << 30, 0),
            "Ti" => (1 << 40, 0),
            "Pi" => (1 << 50, 0),
            "Ei" => (1 << 60, 0),
            e if e.starts_with(['e', 'E']) => {
                let exp: i32 = e[1..].parse().map_err(|_| err())?;
                if !(-30..=30).contains(&exp) {
                    return Err(err());
                }
                (1, exp)
            }
            _ => return Err(err()),
        };
        // value in milli = mantissa * mul * 10^(pow10 + 3 - scale), rounded up
        let exp = pow10 + 3 - scale;
        let base = mantissa.checked_mul(mul).ok_or_else(err)?;
        let value = if exp >= 0 {
            let p = 10i128.checked_pow(exp as u32).ok_or_else(err)?;
            base.checked_mul(p).ok_or_else(err)?
        } else {
            let p = 10i128.checked_pow((-exp) as u32).ok_or_else(err)?;
            // Rounded up without `base + p - 1`, which overflows for a base near the limit.
            base / p + i128::from(base % p != 0)
        };
        if value > MAX {
            return Err(err());
        }
        Ok(Milli(if neg { -value } else { value }))
    }

    /// Saturating sum (quota sums never wrap).
    pub fn plus(self, o: Milli) -> Milli {
        Milli(self.0.saturating_add(o.0).min(MAX * 1000))
    }

    /// The quantity written as Kubernetes writes it back: `500m`, `2`, binary suffixes for
    /// whole multiples of 1024 when `binary` (memory, storage).
    pub fn display(self, binary: bool) -> String {
        let v = self.0;
        if v % 1000 != 0 {
            return format!("{v}m");
        }
        let units = v / 1000;
        if binary && units != 0 {
            for (suffix, shift) in [
                ("Ei", 60),
                ("Pi", 50),
                ("Ti", 40),
                ("Gi", 30),
                ("Mi", 20),
                ("Ki", 10),
            ] {
                let m = 1i128 << shift;
                if units % m == 0 {
                    return format!("{}{suffix}", units / m);
                }
            }
        }
        units.to_string()
    }
}

impl fmt::Display for Milli {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display(false))
    }
}

/// Resource name -> amount charged.
pub type Usage = BTreeMap<String, Milli>;

/// Why an object could not be charged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Adds `amount` to `name` in `u`.
pub(super) fn add(u: &mut Usage, name: &str, amount: Milli) {
    let slot = u.entry(name.to_string()).or_default();
    *slot = slot.plus(amount);
}

/// A quantity field of an object (absent: zero).
pub(super) fn quantity_at(v: &Value) -> Result<Milli, UsageError> {
    match v {
        Value::Null => Ok(Milli(0)),
        Value::String(s) => Milli::parse(s).map_err(|e| UsageError(e.to_string())),
        Value::Number(n) => Milli::parse(&n.to_string()).map_err(|e| UsageError(e.to_string())),
        other => Err(UsageError(format!("a quantity must be a string: {other}"))),
    }
}

/// Whether quantities of the resource `name` (a quota key) read best with binary suffixes.
pub fn is_binary_resource(name: &str) -> bool {
    name.contains("memory") || name.contains("storage") || name.contains("hugepages")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_kubernetes_accepts() {
        for (s, m) in [
            ("1", 1000),
            ("0", 0),
            ("500m", 500),
            ("0.5", 500),
            ("1.5", 1500),
            ("2k", 2_000_000),
            ("1Ki", 1_024_000),
            ("1Gi", 1_073_741_824_000),
            ("1e3", 1_000_000),
            ("1E-3", 1),
            ("100n", 1),
            ("1u", 1),
            ("+3", 3000),
            ("-2", -2000),
            (".5", 500),
            ("10M", 10_000_000_000),
        ] {
            assert_eq!(Milli::parse(s), Ok(Milli(m)), "{s}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_quantity() {
        for s in [
            "",
            "abc",
            "1x",
            "1..2",
            ".",
            "1Kii",
            "--1",
            "1e",
            "1e99",
            "99999999999999999999999999999999",
        ] {
            assert!(Milli::parse(s).is_err(), "{s}");
        }
    }

    /// A mantissa times `Ei` just under `i128::MAX` with a fraction to round away: the
    /// rounding once overflowed (a panic in a debug build, a wrapped negative quantity in a
    /// release one).
    #[test]
    fn rounding_up_a_huge_quantity_does_not_overflow() {
        let s = "0.0147573952589676412927Ei";
        let base = (1u128 << 127) - (1u128 << 60);
        let want = i128::try_from(base.div_ceil(10u128.pow(19))).unwrap();
        assert_eq!(Milli::parse(s), Ok(Milli(want)));
        assert!(Milli::parse("-0.0147573952589676412927Ei").is_ok_and(|m| m.0 == -want));
    }

    #[test]
    fn displays_as_kubernetes_does() {
        assert_eq!(Milli(500).display(false), "500m");
        assert_eq!(Milli(2000).display(false), "2");
        assert_eq!(Milli::parse("1Gi").unwrap().display(true), "1Gi");
        assert_eq!(Milli::parse("1536Mi").unwrap().display(true), "1536Mi");
        assert_eq!(Milli(1000).display(true), "1");
        assert_eq!(Milli(0).display(true), "0");
        assert!(is_binary_resource("requests.memory"));
        assert!(!is_binary_resource("pods"));
    }

    #[test]
    fn sums_saturate() {
        assert_eq!(Milli(1).plus(Milli(2)), Milli(3));
        let big = Milli(MAX * 1000);
        assert_eq!(big.plus(big), big);
    }
}
