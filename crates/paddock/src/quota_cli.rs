//! `paddock tenant quota get|set|delete` (docs/quota.md): a tenant's quota over all its
//! namespaces, `tenant-quota` and its scoped entries (`--scoped <name>` with `--scopes` and
//! `--selector`, as a ResourceQuota's `spec.scopes` and `spec.scopeSelector`).

use anyhow::{Result, bail};
use clap::Subcommand;
use http::Method;
use serde_json::{Map, Value, json};

use crate::Output;
use crate::admin_client::{AdminClient, check_as};
use crate::output::{parse_quota_patch, structured, table};

use paddock_api::List;
use paddock_api::paths::TENANTS;
use paddock_api::quota::{QuotaPatch, TenantQuota};

#[derive(Subcommand)]
pub enum QuotaCommand {
    /// Show a tenant's quotas (tenant-quota and the scoped entries), or one by name: hard
    /// limits and what is used.
    Get {
        id: String,
        /// One quota: tenant-quota or a scoped entry's name.
        name: Option<String>,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Change a tenant's quota: resource=quantity sets a limit, resource- removes it; with
    /// --scoped, in that scoped entry (made when it does not exist).
    Set {
        id: String,
        /// pods=10 requests.cpu=2 requests.nvidia.com/gpu=2 services.loadbalancers- ...
        #[arg(required = true)]
        hard: Vec<String>,
        /// The scoped entry to change (a DNS label).
        #[arg(long)]
        scoped: Option<String>,
        /// Its scopes, comma-separated or repeated: BestEffort, NotBestEffort, Terminating,
        /// NotTerminating, PriorityClass, CrossNamespacePodAffinity (replaces the entry's).
        #[arg(long, requires = "scoped")]
        scopes: Vec<String>,
        /// A scope selector requirement, repeated: 'PriorityClass In high,low',
        /// 'PriorityClass NotIn low', 'PriorityClass Exists', 'PriorityClass DoesNotExist'
        /// (replaces the entry's selector).
        #[arg(long, requires = "scoped")]
        selector: Vec<String>,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Remove a scoped entry.
    Delete { id: String, name: String },
}

/// `PriorityClass In high,low` as a scope selector requirement.
fn parse_requirement(s: &str) -> Result<Value> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let (scope, op, values) = match parts.as_slice() {
        [scope, op] => (*scope, *op, Vec::new()),
        [scope, op, values] => (
            *scope,
            *op,
            values
                .split(',')
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .collect(),
        ),
        _ => bail!("--selector {s:?} is not '<scope> <operator> [value,...]'"),
    };
    let mut r = json!({"scopeName": scope, "operator": op});
    if !values.is_empty() {
        r["values"] = json!(values);
    }
    Ok(r)
}

/// The merge patch of `set`: `hard`, or one scoped entry's.
fn set_patch(
    hard: &[String],
    scoped: Option<&str>,
    scopes: &[String],
    selector: &[String],
) -> Result<Value> {
    let QuotaPatch { hard, .. } = parse_quota_patch(hard)?;
    let Some(name) = scoped else {
        return Ok(json!({ "hard": hard }));
    };
    let mut entry = Map::new();
    entry.insert("hard".into(), json!(hard));
    let scopes: Vec<&str> = scopes
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if !scopes.is_empty() {
        entry.insert("scopes".into(), json!(scopes));
    }
    if !selector.is_empty() {
        let reqs = selector
            .iter()
            .map(|s| parse_requirement(s))
            .collect::<Result<Vec<_>>>()?;
        entry.insert("scopeSelector".into(), json!({ "matchExpressions": reqs }));
    }
    Ok(json!({ "scoped": { name: entry } }))
}

/// Every quota object of a tenant.
async fn quotas(client: &AdminClient, id: &str) -> Result<Vec<TenantQuota>> {
    let list: List<TenantQuota> = check_as(
        client
            .call(Method::GET, &format!("{TENANTS}/{id}/quotas"), None)
            .await?,
        &format!("getting the quotas of tenant {id}"),
    )?;
    Ok(list.items)
}

async fn patch(client: &AdminClient, id: &str, body: &Value) -> Result<()> {
    check_as::<Value>(
        client
            .call(Method::PATCH, &format!("{TENANTS}/{id}/quota"), Some(body))
            .await?,
        &format!("setting the quota of tenant {id}"),
    )?;
    Ok(())
}

/// The scopes of a quota object as one cell: `BestEffort,PriorityClass In (high)`.
fn scopes_cell(q: &TenantQuota) -> String {
    let mut parts = q.spec.scopes.clone();
    for r in q
        .spec
        .scope_selector
        .iter()
        .flat_map(|s| &s.match_expressions)
    {
        parts.push(if r.values.is_empty() {
            format!("{} {}", r.scope_name, r.operator)
        } else {
            format!("{} {} ({})", r.scope_name, r.operator, r.values.join(","))
        });
    }
    parts.join(",")
}

/// Quota objects as `QUOTA SCOPES RESOURCE USED HARD` rows (or JSON/YAML: one alone, several
/// as a list).
fn print(objects: &[TenantQuota], output: Output) -> Result<()> {
    if structured(objects, output)? {
        return Ok(());
    }
    let mut rows = Vec::new();
    for q in objects {
        let scopes = scopes_cell(q);
        for (k, h) in &q.status.hard {
            let used = q.status.used.get(k).map_or("<unknown>", String::as_str);
            rows.push(vec![
                q.metadata.name.clone(),
                if scopes.is_empty() {
                    "<none>".into()
                } else {
                    scopes.clone()
                },
                k.clone(),
                used.to_string(),
                h.clone(),
            ]);
        }
    }
    print!(
        "{}",
        table(&["QUOTA", "SCOPES", "RESOURCE", "USED", "HARD"], rows)
    );
    Ok(())
}

/// Runs one `paddock tenant quota` command.
pub async fn run(client: &AdminClient, command: QuotaCommand) -> Result<()> {
    match command {
        QuotaCommand::Get { id, name, output } => {
            let mut all = quotas(client, &id).await?;
            if let Some(n) = name {
                all.retain(|q| q.metadata.name == n);
                if all.is_empty() {
                    bail!("tenant {id} has no quota {n:?}");
                }
            }
            print(&all, output)
        }
        QuotaCommand::Set {
            id,
            hard,
            scoped,
            scopes,
            selector,
            output,
        } => {
            patch(
                client,
                &id,
                &set_patch(&hard, scoped.as_deref(), &scopes, &selector)?,
            )
            .await?;
            let name = scoped.unwrap_or_else(|| paddock_core::quota::QUOTA_NAME.to_string());
            let mut all = quotas(client, &id).await?;
            all.retain(|q| q.metadata.name == name);
            print(&all, output)
        }
        QuotaCommand::Delete { id, name } => {
            patch(client, &id, &json!({"scoped": {name.clone(): null}})).await?;
            eprintln!("scoped quota {name} of tenant {id} removed");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| (*x).to_string()).collect()
    }

    #[test]
    fn set_builds_the_merge_patch() -> Result<()> {
        assert_eq!(
            set_patch(&strings(&["pods=3", "cpu-"]), None, &[], &[])?,
            json!({"hard": {"pods": "3", "cpu": null}})
        );
        assert_eq!(
            set_patch(
                &strings(&["pods=3"]),
                Some("be"),
                &strings(&["BestEffort,NotTerminating"]),
                &strings(&["PriorityClass In high,low", "PriorityClass Exists"]),
            )?,
            json!({"scoped": {"be": {"hard": {"pods": "3"},
                "scopes": ["BestEffort", "NotTerminating"],
                "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": ["high", "low"]},
                    {"scopeName": "PriorityClass", "operator": "Exists"}]}}}})
        );
        assert!(
            set_patch(
                &strings(&["pods=3"]),
                Some("be"),
                &[],
                &strings(&["PriorityClass"])
            )
            .is_err()
        );
        Ok(())
    }
}
