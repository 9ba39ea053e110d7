//! Output for people (aligned tables) and for scripts (`-o json|yaml`).

use anyhow::{Result, bail};
use paddock_api::certificate::IssuedCertificate;
use paddock_api::quota::QuotaPatch;
use paddock_api::tenant::Tenant;
use paddock_api::user::TenantUser;
use serde::Serialize;
use serde_json::Value;

use crate::Output;

/// `k=v` pairs.
pub fn parse_labels(labels: &[String]) -> Result<serde_json::Map<String, Value>> {
    let mut m = serde_json::Map::new();
    for l in labels {
        let Some((k, v)) = l.split_once('=') else {
            bail!("label {l:?} is not k=v")
        };
        m.insert(k.to_string(), Value::String(v.to_string()));
    }
    Ok(m)
}

/// Parses fair-share overrides: `name=N` sets one (`apfFlow=tenant`: a word, for the one
/// that is not a count), `name-` returns it to the default (a JSON null in the merge patch).
/// The server checks the names and values.
pub fn parse_limits(limits: &[String]) -> Result<serde_json::Map<String, Value>> {
    let mut m = serde_json::Map::new();
    for l in limits {
        if let Some(k) = l.strip_suffix('-') {
            m.insert(k.to_string(), Value::Null);
            continue;
        }
        let Some((k, v)) = l.split_once('=') else {
            bail!("limit {l:?} is not name=value or name-")
        };
        let value = match v.parse::<u32>() {
            Ok(n) => Value::from(n),
            Err(_) if k == "apfFlow" => Value::from(v),
            Err(_) => bail!("limit {k}: {v:?} is not a whole number"),
        };
        m.insert(k.to_string(), value);
    }
    Ok(m)
}

/// Quota pairs `pods=10,requests.cpu=2` (comma-separated or repeated) into a map; with
/// `removals`, `name-` is a removal (JSON null in a merge patch).
pub fn parse_quota_pairs(s: &str) -> Result<std::collections::BTreeMap<String, String>> {
    let mut m = std::collections::BTreeMap::new();
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = p.split_once('=') else {
            bail!("quota {p:?} is not resource=quantity")
        };
        m.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(m)
}

/// `paddock tenant quota set` arguments: `pods=10` sets, `pods-` removes a limit.
pub fn parse_quota_patch(args: &[String]) -> Result<QuotaPatch> {
    let mut m = std::collections::BTreeMap::new();
    for a in args
        .iter()
        .flat_map(|a| a.split(','))
        .map(str::trim)
        .filter(|a| !a.is_empty())
    {
        if let Some(k) = a.strip_suffix('-').filter(|k| !k.contains('=')) {
            m.insert(k.to_string(), None);
            continue;
        }
        let Some((k, v)) = a.split_once('=') else {
            bail!("quota {a:?} is not resource=quantity or resource-")
        };
        m.insert(k.to_string(), Some(v.to_string()));
    }
    Ok(QuotaPatch {
        hard: m,
        ..QuotaPatch::default()
    })
}

pub(crate) fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.len());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<String>, out: &mut String| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        out.push_str(parts.join("   ").trim_end());
        out.push('\n');
    };
    line(headers.iter().map(|h| h.to_string()).collect(), &mut out);
    for r in rows {
        line(r, &mut out);
    }
    out
}

pub(crate) fn s(v: &Value) -> String {
    match v {
        Value::Null => "<none>".into(),
        Value::String(x) => x.clone(),
        other => other.to_string(),
    }
}

/// `<none>` for an absent string, as [`s`] for `null`.
pub(crate) fn opt<S: AsRef<str>>(v: Option<S>) -> String {
    v.map_or_else(|| "<none>".into(), |x| x.as_ref().to_string())
}

/// Prints `items` as JSON or YAML (one item alone, several as a list); false for a table.
pub(crate) fn structured<T: Serialize>(items: &[T], output: Output) -> Result<bool> {
    let v = match items {
        [one] => serde_json::to_value(one)?,
        all => serde_json::to_value(all)?,
    };
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&v)?),
        Output::Yaml => print!("{}", serde_norway::to_string(&v)?),
        Output::Table => return Ok(false),
    }
    Ok(true)
}

/// Tenants.
pub fn print_tenants(items: &[Tenant], output: Output) -> Result<()> {
    if structured(items, output)? {
        return Ok(());
    }
    let rows = items
        .iter()
        .map(|t| {
            let status = t.status.as_ref();
            vec![
                opt(t.metadata.name.as_ref()),
                opt(status.map(|st| &st.phase)),
                sleep_cell(t),
                opt(t.spec.display_name.as_ref()),
                t.metadata
                    .creation_timestamp
                    .as_ref()
                    .map_or_else(|| "<none>".into(), s),
                if t.spec.deletion_protection == Some(true) {
                    "yes"
                } else {
                    "no"
                }
                .into(),
                expires_cell(status.and_then(|st| st.expires_in_seconds)),
                limits_cell(t.spec.limits.as_ref()),
                status
                    .and_then(|st| st.progress.as_str())
                    .unwrap_or("")
                    .to_string(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "NAME",
                "PHASE",
                "SLEEP",
                "DISPLAY NAME",
                "CREATED",
                "PROTECTED",
                "EXPIRES",
                "LIMITS",
                "PROGRESS"
            ],
            rows
        )
    );
    // The TTLs running out and the deletions protection holds, below the table (stderr, so
    // that the table stays what a script reads).
    for w in items
        .iter()
        .filter_map(|t| t.status.as_ref())
        .flat_map(|st| &st.warnings)
    {
        eprintln!("warning: {w}");
    }
    Ok(())
}

/// `Asleep`, `FallingAsleep` or `Waking` (docs/operations.md "Sleep and wake"); awake:
/// `after 30m` (its own policy's `sleepAfter`), or `-`.
fn sleep_cell(t: &Tenant) -> String {
    if let Some(s) = t.status.as_ref().and_then(|st| st.sleep.as_ref()) {
        return s.phase.clone();
    }
    t.spec
        .policy
        .as_ref()
        .and_then(|p| p["sleepAfter"].as_str())
        .map_or_else(|| "-".into(), |d| format!("after {d}"))
}

/// `in 42m`, `1m30s ago` (run out), or `-` (no TTL).
fn expires_cell(left: Option<i64>) -> String {
    use paddock_api::duration::format_duration;
    match left {
        None => "-".into(),
        Some(s) if s > 0 => format!("in {}", format_duration(s.unsigned_abs())),
        Some(s) => format!("{} ago", format_duration(s.unsigned_abs())),
    }
}

/// `readQPS=20,maxWatches=5`, or `default`.
fn limits_cell(v: Option<&Value>) -> String {
    let parts: Vec<String> = v
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| match v.as_str() {
                    Some(word) => format!("{k}={word}"),
                    None => format!("{k}={v}"),
                })
                .collect()
        })
        .unwrap_or_default();
    if parts.is_empty() {
        "default".into()
    } else {
        parts.join(",")
    }
}

/// Certificates.
pub fn print_certs(items: &[IssuedCertificate], output: Output) -> Result<()> {
    if structured(items, output)? {
        return Ok(());
    }
    let rows = items
        .iter()
        .map(|c| {
            vec![
                c.metadata.name.clone(),
                opt(c.spec.tenant.as_ref()),
                c.spec.user.clone(),
                c.spec.groups.join(","),
                c.status.not_after.clone(),
                if c.status.revoked { "yes" } else { "no" }.into(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &["SERIAL", "TENANT", "USER", "GROUPS", "NOT AFTER", "REVOKED"],
            rows
        )
    );
    Ok(())
}

/// A tenant's users (`paddock user list`).
pub fn print_users(items: &[TenantUser], output: Output) -> Result<()> {
    if structured(items, output)? {
        return Ok(());
    }
    let rows = items
        .iter()
        .map(|u| {
            let s = &u.status;
            let revoked = s.certificates.iter().filter(|c| c.revoked).count();
            let certs = match (s.certificates.len(), revoked) {
                (0, _) => "-".to_string(),
                (n, 0) => n.to_string(),
                (n, r) => format!("{n} ({r} revoked)"),
            };
            vec![
                s.user.clone(),
                s.sign_in.clone(),
                s.groups.join(","),
                certs,
                opt(s.last_seen.as_ref()),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &["USER", "SIGN-IN", "GROUPS", "CERTIFICATES", "LAST SEEN"],
            rows
        )
    );
    Ok(())
}

#[cfg(test)]
mod limit_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn limits_take_counts_removals_and_the_flow_word() {
        let m = parse_limits(&[
            "readQPS=20".into(),
            "maxWatches-".into(),
            "apfFlow=tenant".into(),
        ])
        .unwrap();
        assert_eq!(
            Value::Object(m.clone()),
            serde_json::json!({"readQPS": 20, "maxWatches": null, "apfFlow": "tenant"})
        );
        assert!(parse_limits(&["readQPS=fast".into()]).is_err());
        assert_eq!(
            limits_cell(Some(&Value::Object(m))),
            "readQPS=20,maxWatches=null,apfFlow=tenant"
        );
    }

    #[test]
    fn the_expires_column_counts_down_then_back() {
        assert_eq!(expires_cell(None), "-");
        assert_eq!(expires_cell(Some(2520)), "in 42m");
        assert_eq!(expires_cell(Some(0)), "0s ago");
        assert_eq!(expires_cell(Some(-90)), "1m30s ago");
    }
}
