//! The apiserver's API Priority and Fairness figures per FlowSchema over a phase of the
//! noisy-neighbour benchmark: evidence of whether one tenant's flow takes another's
//! upstream seats. Read from the apiserver's own `/metrics` as the upstream admin.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;
use http::Method;

use crate::client::Api;

/// Counter values by (metric, flow schema, priority level), summed over the other labels.
pub type Snapshot = BTreeMap<(String, String, String), f64>;

const METRICS: [&str; 4] = [
    "apiserver_flowcontrol_dispatched_requests_total",
    "apiserver_flowcontrol_rejected_requests_total",
    "apiserver_flowcontrol_request_wait_duration_seconds_sum",
    "apiserver_flowcontrol_request_wait_duration_seconds_count",
];

/// The paddock FlowSchemas' APF counters now.
pub async fn snapshot(admin: &Api) -> Result<Snapshot> {
    let text = admin.ok(Method::GET, "/metrics", None).await?;
    Ok(parse(&String::from_utf8_lossy(&text)))
}

/// The value of label `name` in a Prometheus sample's `k="v",...` list ("" when absent).
pub fn label<'a>(labels: &'a str, name: &str) -> &'a str {
    labels
        .split(',')
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix("=\""))
        .map_or("", |v| v.trim_end_matches('"'))
}

fn parse(text: &str) -> Snapshot {
    let mut out = Snapshot::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once('{') else {
            continue;
        };
        if !METRICS.contains(&name) {
            continue;
        }
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let fs = label(labels, "flow_schema");
        if !fs.starts_with("paddock") {
            continue;
        }
        let pl = label(labels, "priority_level");
        let v: f64 = value.trim().parse().unwrap_or(0.0);
        *out.entry((name.to_string(), fs.to_string(), pl.to_string()))
            .or_default() += v;
    }
    out
}

/// A table of what happened between `before` and `after`, one row per FlowSchema.
pub fn table(before: &Snapshot, after: &Snapshot) -> String {
    let mut rows: BTreeMap<(String, String), [f64; 4]> = BTreeMap::new();
    for ((m, fs, pl), v) in after {
        let d = v - before
            .get(&(m.clone(), fs.clone(), pl.clone()))
            .unwrap_or(&0.0);
        let i = METRICS.iter().position(|x| x == m).unwrap_or(0);
        rows.entry((fs.clone(), pl.clone())).or_default()[i] += d;
    }
    let mut out = String::from(
        "| FlowSchema (upstream) | priority level | dispatched | rejected | mean queue wait (ms) |\n|---|---|---|---|---|\n",
    );
    for ((fs, pl), [dispatched, rejected, wait_sum, wait_n]) in rows {
        if dispatched == 0.0 && rejected == 0.0 {
            continue;
        }
        let _ = writeln!(
            out,
            "| {fs} | {pl} | {dispatched:.0} | {rejected:.0} | {:.2} |",
            if wait_n > 0.0 {
                1e3 * wait_sum / wait_n
            } else {
                0.0
            }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_a_flow_schemas_series_and_skips_others() {
        let text = "\
apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"paddock-tenants-noisya-flow\",priority_level=\"paddock-tenants\"} 5
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute=\"true\",flow_schema=\"paddock-tenants-noisya-flow\",priority_level=\"paddock-tenants\"} 0.5
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute=\"false\",flow_schema=\"paddock-tenants-noisya-flow\",priority_level=\"paddock-tenants\"} 0.25
apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"exempt\",priority_level=\"exempt\"} 9
";
        let s = parse(text);
        assert_eq!(s.len(), 2);
        let key = |m: &str| {
            (
                m.to_string(),
                "paddock-tenants-noisya-flow".to_string(),
                "paddock-tenants".to_string(),
            )
        };
        assert_eq!(s[&key(METRICS[0])], 5.0);
        assert_eq!(s[&key(METRICS[2])], 0.75);
    }
}
