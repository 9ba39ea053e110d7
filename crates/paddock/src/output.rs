//! Output for people (aligned tables) and for scripts (`-o json|yaml`).

use anyhow::{Result, bail};
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

/// Parses fair-share overrides: `name=N` sets one, `name-` returns it to the default (a
/// JSON null in the merge patch). The server checks the names.
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
        let n: u32 = v
            .parse()
            .map_err(|_| anyhow::anyhow!("limit {k}: {v:?} is not a whole number"))?;
        m.insert(k.to_string(), Value::from(n));
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
pub fn parse_quota_patch(args: &[String]) -> Result<serde_json::Map<String, Value>> {
    let mut m = serde_json::Map::new();
    for a in args
        .iter()
        .flat_map(|a| a.split(','))
        .map(str::trim)
        .filter(|a| !a.is_empty())
    {
        if let Some(k) = a.strip_suffix('-').filter(|k| !k.contains('=')) {
            m.insert(k.to_string(), Value::Null);
            continue;
        }
        let Some((k, v)) = a.split_once('=') else {
            bail!("quota {a:?} is not resource=quantity or resource-")
        };
        m.insert(k.to_string(), Value::String(v.to_string()));
    }
    Ok(m)
}

/// A TenantQuota as `RESOURCE USED HARD` rows.
pub fn print_quota(q: &Value, output: Output) -> Result<()> {
    if structured(std::slice::from_ref(q), output)? {
        return Ok(());
    }
    let rows = q["status"]["hard"]
        .as_object()
        .map(|hard| {
            hard.iter()
                .map(|(k, h)| vec![k.clone(), s(&q["status"]["used"][k]), s(h)])
                .collect()
        })
        .unwrap_or_default();
    print!("{}", table(&["RESOURCE", "USED", "HARD"], rows));
    Ok(())
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

pub(crate) fn structured(items: &[Value], output: Output) -> Result<bool> {
    let v = if items.len() == 1 {
        items[0].clone()
    } else {
        Value::Array(items.to_vec())
    };
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&v)?),
        Output::Yaml => print!("{}", serde_norway::to_string(&v)?),
        Output::Table => return Ok(false),
    }
    Ok(true)
}

/// Tenants.
pub fn print_tenants(items: &[Value], output: Output) -> Result<()> {
    if structured(items, output)? {
        return Ok(());
    }
    let rows = items
        .iter()
        .map(|t| {
            vec![
                s(&t["metadata"]["name"]),
                s(&t["status"]["phase"]),
                s(&t["spec"]["displayName"]),
                s(&t["metadata"]["creationTimestamp"]),
                limits_cell(&t["spec"]["limits"]),
                t["status"]["progress"].as_str().unwrap_or("").to_string(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "NAME",
                "PHASE",
                "DISPLAY NAME",
                "CREATED",
                "LIMITS",
                "PROGRESS"
            ],
            rows
        )
    );
    Ok(())
}

/// `readQPS=20,maxWatches=5`, or `default`.
fn limits_cell(v: &Value) -> String {
    let parts: Vec<String> = v
        .as_object()
        .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
        .unwrap_or_default();
    if parts.is_empty() {
        "default".into()
    } else {
        parts.join(",")
    }
}

/// Certificates.
pub fn print_certs(items: &[Value], output: Output) -> Result<()> {
    if structured(items, output)? {
        return Ok(());
    }
    let rows = items
        .iter()
        .map(|c| {
            vec![
                s(&c["metadata"]["name"]),
                s(&c["spec"]["tenant"]),
                s(&c["spec"]["user"]),
                c["spec"]["groups"]
                    .as_array()
                    .map(|g| g.iter().map(s).collect::<Vec<_>>().join(","))
                    .unwrap_or_default(),
                s(&c["status"]["notAfter"]),
                if c["status"]["revoked"].as_bool() == Some(true) {
                    "yes".into()
                } else {
                    "no".into()
                },
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
