//! `paddock tenant export|import|move` (docs/operations.md "Export, import and move"), on the
//! admin API's `tenants/<id>/export`, `/import` and `/move` (paddock-api `portable`). The
//! archive passes through as bytes: stdout for an export, stdin for an import; paddock checks
//! it, not the CLI.

use std::io::{Read, Write};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use clap::Subcommand;
use http::{Method, Request, header};
use paddock_api::lifecycle::tenant_path;
use paddock_api::portable::{
    ARCHIVE_TYPE, EXPORT, IMPORT, ImportSummary, MOVE, MoveRequest, MoveSummary,
};
use paddock_upstream::upstream::Route;

use crate::admin_client::AdminClient;

/// A tenant's objects exported, imported, moved.
#[derive(Subcommand)]
pub enum PortableCommand {
    /// Write every object the tenant owns, in its own names, as a tar archive on stdout
    /// (CRDs first, in apply order; a manifest with a sha256 per object). Volumes' data is
    /// not included.
    Export {
        id: String,
        /// Include Secrets (marked in the manifest): Helm releases are Secrets.
        #[arg(long)]
        secrets: bool,
        /// How long the export may take.
        #[arg(long, default_value = "10m")]
        timeout: String,
    },
    /// Create the objects of an archive (stdin) in tenant <id>, as its admin would: every
    /// guard, quota and policy applies. The whole archive is checked first (checksums,
    /// kinds, a server-side dry run of every object); a refused one writes nothing.
    Import {
        id: String,
        /// Only check the archive.
        #[arg(long)]
        dry_run: bool,
        #[arg(long, default_value = "10m")]
        timeout: String,
    },
    /// Move a tenant to another cluster: its objects copied there, its routing switched,
    /// the source cleaned; its kubeconfig keeps working, its writes meanwhile are answered
    /// 503 with Retry-After.
    Move {
        id: String,
        /// The cluster to move it to.
        #[arg(long)]
        to: String,
        #[arg(long, default_value = "10m")]
        timeout: String,
    },
}

/// Runs one of the commands.
pub async fn run(client: &AdminClient, command: PortableCommand) -> Result<()> {
    match command {
        PortableCommand::Export {
            id,
            secrets,
            timeout,
        } => {
            let mut path = tenant_path(&id, EXPORT);
            if secrets {
                path.push_str("?secrets=true");
            }
            let tar = send(client, Method::GET, &path, None, &timeout)
                .await
                .with_context(|| format!("exporting tenant {id}"))?;
            let mut out = std::io::stdout().lock();
            out.write_all(&tar)?;
            out.flush()?;
            eprintln!("tenant {id} exported ({} bytes)", tar.len());
            Ok(())
        }
        PortableCommand::Import {
            id,
            dry_run,
            timeout,
        } => {
            let mut tar = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut tar)
                .context("reading the archive from stdin")?;
            let mut path = tenant_path(&id, IMPORT);
            if dry_run {
                path.push_str("?dryRun=true");
            }
            let body = send(
                client,
                Method::POST,
                &path,
                Some((ARCHIVE_TYPE, tar)),
                &timeout,
            )
            .await
            .with_context(|| format!("importing into tenant {id}"))?;
            let s: ImportSummary = serde_json::from_slice(&body).context("the import's answer")?;
            println!("{}", serde_json::to_string_pretty(&s)?);
            let verb = if s.dry_run { "would create" } else { "created" };
            eprintln!(
                "tenant {id}: {verb} {} of {} objects from {}'s archive",
                s.created, s.objects, s.source_tenant
            );
            Ok(())
        }
        PortableCommand::Move { id, to, timeout } => {
            let ask = serde_json::to_vec(&MoveRequest { to })?;
            let body = send(
                client,
                Method::POST,
                &tenant_path(&id, MOVE),
                Some(("application/json", ask)),
                &timeout,
            )
            .await
            .with_context(|| format!("moving tenant {id}"))?;
            let s: MoveSummary = serde_json::from_slice(&body).context("the move's answer")?;
            println!("{}", serde_json::to_string_pretty(&s)?);
            eprintln!(
                "tenant {id} moved from {} to {} ({} objects; writes paused {:.1} s)",
                s.from, s.to, s.objects, s.writes_paused_seconds
            );
            Ok(())
        }
    }
}

/// One request with a body of bytes; the answer's bytes, or the `Status` message.
async fn send(
    client: &AdminClient,
    method: Method,
    path: &str,
    body: Option<(&str, Vec<u8>)>,
    timeout: &str,
) -> Result<Bytes> {
    let limit: Duration =
        paddock_api::duration::parse_duration(timeout).map_err(anyhow::Error::msg)?;
    let up = client.upstream();
    let mut b = Request::builder().method(method).uri(up.uri(path)?);
    let bytes = match body {
        Some((ct, bytes)) => {
            b = b.header(header::CONTENT_TYPE, ct);
            Bytes::from(bytes)
        }
        None => Bytes::new(),
    };
    let req = b.body(paddock_upstream::body::full_up(bytes))?;
    let deadline = tokio::time::Instant::now() + limit;
    let resp = up.send_until(req, Route::Bulk, deadline).await?;
    let status = resp.status();
    let raw = up
        .collect_until(resp.into_body(), 1 << 30, deadline)
        .await?;
    if !status.is_success() {
        let v: serde_json::Value = serde_json::from_slice(&raw).unwrap_or_default();
        let msg = v["message"]
            .as_str()
            .map_or_else(|| String::from_utf8_lossy(&raw).into_owned(), str::to_owned);
        bail!("{msg} ({status})");
    }
    Ok(raw)
}
