//! `paddock tenant suspend|resume|protect|ttl` (docs/operations.md "Suspend, protection and
//! TTL") and `paddock tenant sleep|wake` ("Sleep and wake"), on the admin API's
//! `tenants/<id>/suspension`, `tenants/<id>/protection` and `tenants/<id>/sleep` (paddock-api
//! `lifecycle`).

use anyhow::Result;
use clap::Subcommand;
use http::Method;
use paddock_api::lifecycle::{
    PROTECTION, ProtectionPatch, SLEEP, SUSPENSION, SuspendRequest, tenant_path,
};
use paddock_api::tenant::Tenant;

use crate::Output;
use crate::admin_client::{AdminClient, check_as};

/// A tenant's suspension, deletion protection and time-to-live.
#[derive(Subcommand)]
pub enum LifeCommand {
    /// Suspend a tenant. Its users' writes through paddock are refused (403 naming the
    /// suspension); reads still work. Its own identities' writes straight at the apiserver
    /// (its pods' service-account tokens) and new pods in its namespaces are refused by the
    /// admission guard, so its controllers stop too. Its workloads keep running unless
    /// --stop-workloads.
    Suspend {
        id: String,
        /// Also stop its workloads: Deployments, StatefulSets and ReplicaSets scaled to zero,
        /// DaemonSets given a node selector no node has, Jobs and CronJobs suspended; what was
        /// changed is recorded on each object and brought back by `tenant resume`.
        #[arg(long)]
        stop_workloads: bool,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Resume a suspended tenant: writes allowed again, the workloads its suspension stopped
    /// brought back, and its controllers short of pods touched so that they create them at once.
    Resume {
        id: String,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Put a tenant to sleep now: its Deployments, StatefulSets and standalone ReplicaSets
    /// scaled to zero and its CronJobs suspended upstream, what was changed recorded on each
    /// object. Its users still see their replica counts; their next request wakes it.
    /// Answers once the leader has stopped its workloads.
    Sleep {
        id: String,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Wake a sleeping tenant: what its sleep stopped is brought back. Answers once it is.
    Wake {
        id: String,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Protect a tenant from deletion: `tenant delete` is refused, and so is the deletion its
    /// TTL would start, until --unprotect lifts it.
    Protect {
        id: String,
        /// Lift the protection.
        #[arg(long)]
        unprotect: bool,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Give a tenant a time-to-live counted from now (30m, 2h, 7d), or remove it with
    /// --clear. The leader deletes the tenant when it runs out, unless it is protected;
    /// `tenant list` warns in its last tenth (at least its last hour).
    Ttl {
        id: String,
        /// 30s, 15m, 2h, 7d.
        #[arg(required_unless_present = "clear")]
        duration: Option<String>,
        /// Remove the TTL.
        #[arg(long, conflicts_with = "duration")]
        clear: bool,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
}

/// Runs one of the commands and prints the tenant as it is after it.
pub async fn run(client: &AdminClient, command: LifeCommand) -> Result<()> {
    let (tenant, output) = match command {
        LifeCommand::Suspend {
            id,
            stop_workloads,
            output,
        } => {
            let body = serde_json::to_value(SuspendRequest { stop_workloads })?;
            let path = tenant_path(&id, SUSPENSION);
            let a = client.call(Method::POST, &path, Some(&body)).await?;
            let t: Tenant = check_as(a, &format!("suspending tenant {id}"))?;
            eprintln!("tenant {id} suspended");
            (t, output)
        }
        LifeCommand::Resume { id, output } => {
            let path = tenant_path(&id, SUSPENSION);
            let a = client.call(Method::DELETE, &path, None).await?;
            let t: Tenant = check_as(a, &format!("resuming tenant {id}"))?;
            eprintln!("tenant {id} resumed");
            (t, output)
        }
        LifeCommand::Sleep { id, output } => (sleep(client, &id, true).await?, output),
        LifeCommand::Wake { id, output } => (sleep(client, &id, false).await?, output),
        LifeCommand::Protect {
            id,
            unprotect,
            output,
        } => {
            let patch = ProtectionPatch {
                deletion_protection: Some(!unprotect),
                ttl: None,
            };
            (protection(client, &id, &patch).await?, output)
        }
        LifeCommand::Ttl {
            id,
            duration,
            clear,
            output,
        } => {
            let ttl = match (duration, clear) {
                (Some(d), false) => {
                    // Checked here too, so that a typo is refused before any request.
                    paddock_api::duration::parse_duration(&d).map_err(anyhow::Error::msg)?;
                    serde_json::Value::String(d)
                }
                _ => serde_json::Value::Null,
            };
            let patch = ProtectionPatch {
                deletion_protection: None,
                ttl: Some(ttl),
            };
            (protection(client, &id, &patch).await?, output)
        }
    };
    crate::output::print_tenants(&[tenant], output)
}

async fn protection(client: &AdminClient, id: &str, patch: &ProtectionPatch) -> Result<Tenant> {
    let path = tenant_path(id, PROTECTION);
    let body = serde_json::to_value(patch)?;
    let a = client.call(Method::PATCH, &path, Some(&body)).await?;
    check_as(a, &format!("changing the protection of tenant {id}"))
}

/// `tenant sleep` (`asleep`) or `tenant wake`.
async fn sleep(client: &AdminClient, id: &str, asleep: bool) -> Result<Tenant> {
    let path = tenant_path(id, SLEEP);
    let (method, what) = if asleep {
        (Method::POST, "putting tenant {id} to sleep")
    } else {
        (Method::DELETE, "waking tenant {id}")
    };
    let a = client.call(method, &path, None).await?;
    let t: Tenant = check_as(a, &what.replace("{id}", id))?;
    let phase = t.status.as_ref().and_then(|s| s.sleep.as_ref());
    match (asleep, phase.map(|s| s.phase.as_str())) {
        (true, Some("Asleep")) => eprintln!("tenant {id} asleep"),
        (false, None) => eprintln!("tenant {id} awake"),
        (_, p) => eprintln!(
            "tenant {id}: asked; the leader has not finished yet ({})",
            p.unwrap_or("awake")
        ),
    }
    Ok(t)
}
