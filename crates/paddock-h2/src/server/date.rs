//! The `Date` header of answers that lack one (as hyper's server adds it): IMF-fixdate,
//! formatted once a second per thread.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderValue, header};

thread_local! {
    static CACHED: RefCell<(u64, Option<HeaderValue>)> = const { RefCell::new((0, None)) };
}

/// Adds `Date: <now>` to `headers` unless it has one.
pub(super) fn add_if_absent(headers: &mut HeaderMap) {
    if headers.contains_key(header::DATE) {
        return;
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let value = CACHED.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != now || c.1.is_none() {
            *c = (now, HeaderValue::from_str(&imf_fixdate(now)).ok());
        }
        c.1.clone()
    });
    if let Some(v) = value {
        headers.insert(header::DATE, v);
    }
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` for `secs` since the Unix epoch (RFC 9110 §5.6.7).
pub(super) fn imf_fixdate(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_imf_fixdate() {
        assert_eq!(
            super::imf_fixdate(784_111_777),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(super::imf_fixdate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            super::imf_fixdate(1_709_164_800),
            "Thu, 29 Feb 2024 00:00:00 GMT"
        );
    }
}
