//! Percentiles and medians.

/// Nearest-rank percentile of unsorted values (`p` in 0..=100); NaN when empty.
pub fn pct(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

pub fn median(values: &[f64]) -> f64 {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v;
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Milliseconds with a sensible number of digits.
pub fn ms(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

pub fn ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "–".into()
    }
}

/// A 95 % interval of `pct(with, 99) / pct(alone, 99)` by the bootstrap (`rounds` resamples
/// of both samples with replacement; a fixed seed, so a report reads the same twice): how
/// far one run's p99 ratio may be from the machine's, given the samples' spread. NaN when
/// either sample is empty.
pub fn p99_ratio_interval(with: &[f64], alone: &[f64], rounds: usize) -> (f64, f64) {
    if with.is_empty() || alone.is_empty() || rounds == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move |n: usize| {
        // xorshift64*: plenty for resampling indices.
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        (seed.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as usize % n
    };
    let mut ratios: Vec<f64> = (0..rounds)
        .map(|_| {
            let w: Vec<f64> = (0..with.len()).map(|_| with[next(with.len())]).collect();
            let a: Vec<f64> = (0..alone.len()).map(|_| alone[next(alone.len())]).collect();
            pct(&w, 99.0) / pct(&a, 99.0)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    (pct(&ratios, 2.5), pct(&ratios, 97.5))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_p99_ratio_interval_holds_the_ratio_and_widens_with_a_thin_tail() {
        let alone: Vec<f64> = (1..=1000).map(|i| f64::from(i % 100) + 1.0).collect();
        let (lo, hi) = p99_ratio_interval(&alone, &alone, 200);
        assert!(lo <= 1.0 && 1.0 <= hi, "{lo} {hi}");
        // Ten samples in a thousand far out: the p99 hangs on them, the interval is wide.
        let mut with = alone.clone();
        for x in with.iter_mut().take(10) {
            *x = 300.0;
        }
        let (lo2, hi2) = p99_ratio_interval(&with, &alone, 200);
        assert!(hi2 - lo2 > hi - lo, "{lo2} {hi2} against {lo} {hi}");
        assert!(p99_ratio_interval(&[], &alone, 10).0.is_nan());
    }

    #[test]
    fn percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(pct(&v, 50.0), 50.0);
        assert_eq!(pct(&v, 99.0), 99.0);
        assert_eq!(pct(&v, 100.0), 100.0);
        assert_eq!(pct(&[3.0], 99.0), 3.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
