//! Where tenant B's time goes in the noisy-neighbour benchmark: B's small GETs as
//! paddock and the apiserver each measured them, from their own Prometheus histograms scraped
//! at the phases' boundaries. During a phase B is the only client making GETs (A lists,
//! patches and opens watches), so `paddock_request_duration_seconds{verb="get"}` (paddock's
//! front, to the answer's headers) and `apiserver_request_duration_seconds{verb="GET",
//! resource="configmaps"}` (the apiserver, APF's wait included) are B's alone; set against
//! B's own latency at the client they split B's tail into the apiserver's, paddock's and the
//! rest (the client, the front connection, the machine's scheduling).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;
use http::Method;

use crate::client::Api;
use crate::stats::ms;

/// A histogram's cumulative counts by upper bound (seconds; `+Inf` last).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hist(BTreeMap<Bound, f64>);

/// A bucket's upper bound, ordered (`f64` is not `Ord`).
#[derive(Debug, Clone, Copy)]
pub struct Bound(f64);
impl PartialEq for Bound {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for Bound {}
impl PartialOrd for Bound {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Bound {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

fn label<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    labels
        .split(',')
        .find_map(|kv| kv.trim().strip_prefix(name)?.strip_prefix("=\""))
        .map(|v| v.trim_end_matches('"'))
}

impl Hist {
    /// The buckets of `name` in an exposition `text`, summed over every series whose labels
    /// include all of `want`.
    pub fn parse(text: &str, name: &str, want: &[(&str, &str)]) -> Hist {
        let prefix = format!("{name}_bucket{{");
        let mut out = BTreeMap::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix(&prefix) else {
                continue;
            };
            let Some((labels, value)) = rest.rsplit_once("} ") else {
                continue;
            };
            if !want.iter().all(|&(k, v)| label(labels, k) == Some(v)) {
                continue;
            }
            let Some(le) = label(labels, "le") else {
                continue;
            };
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap_or(f64::NAN)
            };
            // Some exporters add a timestamp after the value.
            let v: f64 = value
                .split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0);
            if le.is_nan() {
                continue;
            }
            *out.entry(Bound(le)).or_default() += v;
        }
        Hist(out)
    }

    /// What was observed between `before` and `self`.
    pub fn since(&self, before: &Hist) -> Hist {
        Hist(
            self.0
                .iter()
                .map(|(b, v)| (*b, v - before.0.get(b).copied().unwrap_or(0.0)))
                .collect(),
        )
    }

    pub fn count(&self) -> f64 {
        self.0.values().copied().fold(0.0, f64::max)
    }

    /// The `q` quantile in ms, interpolated within its bucket as Prometheus'
    /// `histogram_quantile` does (a quantile in the `+Inf` bucket is the last finite bound).
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let total = self.count();
        if total <= 0.0 {
            return f64::NAN;
        }
        let rank = q * total;
        let (mut lo, mut below) = (0.0, 0.0);
        for (Bound(le), cum) in &self.0 {
            if *cum >= rank {
                if le.is_infinite() {
                    return lo * 1e3;
                }
                let inside = cum - below;
                let frac = if inside > 0.0 {
                    (rank - below) / inside
                } else {
                    1.0
                };
                return (lo + (le - lo) * frac) * 1e3;
            }
            (lo, below) = (*le, *cum);
        }
        lo * 1e3
    }

    /// Observations above the smallest bucket bound at or over `ms`: (that bound in ms, count).
    pub fn over_ms(&self, ms: f64) -> (f64, f64) {
        let total = self.count();
        self.0
            .iter()
            .find(|(Bound(le), _)| *le * 1e3 >= ms - 1e-9)
            .map_or((f64::NAN, 0.0), |(Bound(le), cum)| (le * 1e3, total - cum))
    }
}

/// B's GETs as one measurer saw them.
pub struct Measurer {
    pub what: &'static str,
    pub metric: &'static str,
    pub want: &'static [(&'static str, &'static str)],
}

/// paddock's front: from the request's arrival at the access layer to the answer's headers
/// (the fair-share gate, the work queue, planning, the upstream round trip included).
pub const PADDOCK_GETS: Measurer = Measurer {
    what: "paddock (arrival to answer headers)",
    metric: "paddock_request_duration_seconds",
    want: &[("verb", "get")],
};

/// The apiserver: from the request's arrival to its answer, APF's queue included.
pub const APISERVER_GETS: Measurer = Measurer {
    what: "apiserver (GET configmaps, APF wait included)",
    metric: "apiserver_request_duration_seconds",
    want: &[("verb", "GET"), ("resource", "configmaps")],
};

/// The apiserver's execution of B's flow (every request of tenant B: its FlowSchema
/// `paddock-tenants-quietb-flow`), after APF's queue.
pub const APISERVER_B_FLOW: Measurer = Measurer {
    what: "apiserver execution, B's APF flow (queue wait excluded)",
    metric: "apiserver_flowcontrol_request_execution_seconds",
    want: &[("flow_schema", "paddock-tenants-quietb-flow")],
};

/// Both servers' metrics at one moment (paddock's absent when the run bypasses it).
pub struct Scrape {
    paddock: Option<String>,
    apiserver: String,
}

/// Scrapes paddock's `/metrics` (as the platform admin) and the apiserver's (as its admin).
pub async fn scrape(padmin: Option<&Api>, admin: &Api) -> Result<Scrape> {
    let apiserver = admin.ok(Method::GET, "/metrics", None).await?;
    let paddock = match padmin {
        Some(p) => {
            Some(String::from_utf8_lossy(&p.ok(Method::GET, "/metrics", None).await?).into())
        }
        None => None,
    };
    Ok(Scrape {
        paddock,
        apiserver: String::from_utf8_lossy(&apiserver).into(),
    })
}

impl Scrape {
    fn hist(&self, m: &Measurer) -> Option<Hist> {
        let text = if m.metric.starts_with("paddock") {
            self.paddock.as_deref()?
        } else {
            &self.apiserver
        };
        Some(Hist::parse(text, m.metric, m.want))
    }

    /// A plain counter of paddock's (summed over its series), for the fair queue's counts.
    fn counter(&self, name: &str) -> Option<f64> {
        Some(counter(self.paddock.as_deref()?, name))
    }
}

/// A counter or a summary's `_sum`/`_count` in an exposition `text`, summed over its series.
fn counter(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|r| r.starts_with(' ') || r.starts_with('{'))
        })
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// One table row per measurer and phase: B's GETs by the client, paddock and the apiserver.
/// `client` is (phase name, B's latencies at the client in ms); `phases` the scrapes at the
/// phases' boundaries (phase i is between scrapes i and i + 1).
pub fn table(client: &[(&str, &[f64])], scrapes: &[Scrape]) -> String {
    let mut out = String::from(
        "| phase | measured by | B's GETs | p50 ms | p90 ms | p99 ms | over 50 ms (bucket bound) |\n|---|---|---|---|---|---|---|\n",
    );
    for (i, (phase, lat)) in client.iter().enumerate() {
        let mut sorted = lat.to_vec();
        sorted.sort_by(f64::total_cmp);
        let over = sorted.iter().filter(|l| **l > 50.0).count();
        let _ = writeln!(
            out,
            "| {phase} | B's client (exact) | {} | {} | {} | {} | {over} (50) |",
            sorted.len(),
            ms(crate::stats::pct(&sorted, 50.0)),
            ms(crate::stats::pct(&sorted, 90.0)),
            ms(crate::stats::pct(&sorted, 99.0)),
        );
        let (Some(s0), Some(s1)) = (scrapes.get(i), scrapes.get(i + 1)) else {
            continue;
        };
        for m in [&PADDOCK_GETS, &APISERVER_GETS, &APISERVER_B_FLOW] {
            let (Some(a), Some(b)) = (s0.hist(m), s1.hist(m)) else {
                continue;
            };
            let h = b.since(&a);
            let (bound, n) = h.over_ms(50.0);
            let _ = writeln!(
                out,
                "| {phase} | {} | {:.0} | {} | {} | {} | {n:.0} ({}) |",
                m.what,
                h.count(),
                ms(h.quantile_ms(0.5)),
                ms(h.quantile_ms(0.9)),
                ms(h.quantile_ms(0.99)),
                ms(bound),
            );
        }
        let queued = [
            "paddock_fair_queue_queued_total",
            "paddock_fair_queue_revoked_total",
        ]
        .map(|c| Some(s1.counter(c)? - s0.counter(c)?));
        let gc = ["go_gc_duration_seconds_count", "go_gc_duration_seconds_sum"]
            .map(|c| counter(&s1.apiserver, c) - counter(&s0.apiserver, c));
        let _ = writeln!(
            out,
            "| {phase} | the apiserver's Go GC (all its work) | cycles: {:.0}, stop-the-world pauses: {} ms in all | | | | |",
            gc[0],
            ms(gc[1] * 1e3),
        );
        if let [Some(q), Some(r)] = queued {
            let _ = writeln!(
                out,
                "| {phase} | paddock's fair queue (both tenants) | requests that waited: {q:.0}, leases revoked: {r:.0} | | | | |",
            );
        }
    }
    out.push_str(
        "\n(The servers' quantiles are interpolated within their histograms' buckets, as Prometheus' histogram_quantile does: paddock's bounds double from 0.5 ms, the apiserver's request durations have 5, 25, 50, 100, 200 ms ...; so they locate a tail, they do not time it. One GET of paddock's /metrics per phase boundary is in paddock's count.)\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
apiserver_request_duration_seconds_bucket{component=\"apiserver\",resource=\"configmaps\",verb=\"GET\",le=\"0.005\"} 80
apiserver_request_duration_seconds_bucket{component=\"apiserver\",resource=\"configmaps\",verb=\"GET\",le=\"0.025\"} 98
apiserver_request_duration_seconds_bucket{component=\"apiserver\",resource=\"configmaps\",verb=\"GET\",le=\"0.05\"} 99
apiserver_request_duration_seconds_bucket{component=\"apiserver\",resource=\"configmaps\",verb=\"GET\",le=\"+Inf\"} 100
apiserver_request_duration_seconds_bucket{component=\"apiserver\",resource=\"configmaps\",verb=\"LIST\",le=\"+Inf\"} 7
apiserver_request_duration_seconds_bucket{component=\"apiserver\",resource=\"pods\",verb=\"GET\",le=\"+Inf\"} 9
";

    #[test]
    fn sums_matching_series_and_interpolates_quantiles() {
        let h = Hist::parse(TEXT, APISERVER_GETS.metric, APISERVER_GETS.want);
        assert_eq!(h.count(), 100.0);
        // The 50th of 100 is in the first bucket (0..5 ms), 50/80 of the way.
        assert!(
            (h.quantile_ms(0.5) - 3.125).abs() < 1e-9,
            "{}",
            h.quantile_ms(0.5)
        );
        // The 99th is the last of the 25-50 ms bucket.
        assert!((h.quantile_ms(0.99) - 50.0).abs() < 1e-9);
        let near = |(b, n): (f64, f64), (wb, wn): (f64, f64)| (b - wb).abs() < 1e-6 && n == wn;
        assert!(near(h.over_ms(50.0), (50.0, 1.0)), "{:?}", h.over_ms(50.0));
        assert!(near(h.over_ms(20.0), (25.0, 2.0)), "{:?}", h.over_ms(20.0));
        let before = Hist::parse(
            &TEXT
                .replace("} 80", "} 10")
                .replace("} 98", "} 20")
                .replace("} 99", "} 21")
                .replace("} 100", "} 22"),
            APISERVER_GETS.metric,
            APISERVER_GETS.want,
        );
        let d = h.since(&before);
        assert_eq!(d.count(), 78.0);
        assert!(near(d.over_ms(50.0), (50.0, 0.0)), "{:?}", d.over_ms(50.0));
    }
}
