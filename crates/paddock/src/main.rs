//! The `paddock` binary: `paddock serve` and the admin CLI.

mod admin_client;
mod cluster_cli;
mod kubeconfig;
mod lifecycle_cli;
mod metering_cli;
mod oidc_cli;
mod output;
mod portable_cli;
mod quota_cli;
mod serve;
mod serve_in_cluster;
mod template_cli;

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand, ValueEnum};

/// paddock: a multi-tenant gateway for the Kubernetes API.
#[derive(Parser)]
#[command(name = "paddock", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve tenants' Kubernetes API and the admin API.
    Serve(Box<serve::ServeArgs>),
    /// Certificate authority.
    Ca {
        #[command(subcommand)]
        command: CaCommand,
    },
    /// Tenants.
    Tenant {
        #[command(flatten)]
        conn: AdminConn,
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Upstream clusters paddock fronts (docs/clusters.md).
    Cluster {
        #[command(flatten)]
        conn: AdminConn,
        #[command(subcommand)]
        command: cluster_cli::ClusterCommand,
    },
    /// Tenant users.
    User {
        #[command(flatten)]
        conn: AdminConn,
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Issued certificates.
    Cert {
        #[command(flatten)]
        conn: AdminConn,
        #[command(subcommand)]
        command: CertCommand,
    },
    /// Namespace templates (docs/templates.md).
    Template {
        #[command(flatten)]
        conn: AdminConn,
        #[command(subcommand)]
        command: template_cli::TemplateCommand,
    },
    /// Print a kubeconfig for a tenant user (issues a fresh certificate; same as `user issue`).
    Kubeconfig {
        #[command(flatten)]
        conn: AdminConn,
        #[command(flatten)]
        issue: IssueArgs,
    },
}

#[derive(Subcommand)]
enum CaCommand {
    /// Create the tenant CA, the serving certificate and the platform-admin credential.
    Init {
        /// Where to write ca.crt, ca.key, serving.crt, serving.key, admin.crt, admin.key, admin.kubeconfig.
        #[arg(long, env = "PADDOCK_CERTS_DIR", default_value = "certs")]
        dir: PathBuf,
        /// Extra DNS names or IPs for the serving certificate (localhost, 127.0.0.1, ::1 and kubernetes.default.svc.cluster.local with its shorter forms are always in).
        #[arg(long = "hostname")]
        hostnames: Vec<String>,
        /// Server URL written into admin.kubeconfig.
        #[arg(
            long,
            env = "PADDOCK_PUBLIC_URL",
            default_value = "https://127.0.0.1:8443"
        )]
        server_url: String,
        /// Replace an existing CA (every issued certificate stops working).
        #[arg(long)]
        force: bool,
    },
}

/// How admin commands reach a running paddock.
#[derive(clap::Args, Clone)]
pub struct AdminConn {
    /// Platform-admin kubeconfig (written by `paddock ca init`).
    #[arg(
        long = "kubeconfig",
        env = "PADDOCK_ADMIN_KUBECONFIG",
        default_value = "certs/admin.kubeconfig",
        global = true
    )]
    pub kubeconfig: PathBuf,
}

/// Output format.
#[derive(Clone, Copy, ValueEnum, Default)]
pub enum Output {
    /// Aligned columns.
    #[default]
    Table,
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

#[derive(Subcommand)]
enum TenantCommand {
    /// Create a tenant and print its admin's kubeconfig on stdout.
    Create {
        /// Tenant id: 6 characters of [a-z0-9], starting with a letter.
        id: String,
        /// Human-readable name.
        #[arg(long)]
        display_name: Option<String>,
        /// Labels, k=v.
        #[arg(long = "label")]
        labels: Vec<String>,
        /// Validity of the admin's certificate (default: the server's).
        #[arg(long)]
        validity: Option<String>,
        /// Fair-share overrides, name=value (readQPS, readBurst, writeQPS, writeBurst,
        /// maxInflight, maxWatches, maxList, maxConnections; 0 = no limit; apfFlow=user|tenant), repeatable.
        #[arg(long = "limit")]
        limits: Vec<String>,
        /// Billing label stamped on every upstream namespace of the tenant, k=v, repeatable
        /// (docs/metering.md).
        #[arg(long = "billing-label")]
        billing_labels: Vec<String>,
        /// Billing annotation stamped on every upstream namespace of the tenant, k=v.
        #[arg(long = "billing-annotation")]
        billing_annotations: Vec<String>,
        /// Tenant-wide quota, resource=quantity, comma-separated or repeated (namespaces,
        /// pods, requests.cpu, limits.memory, requests.storage, services.loadbalancers,
        /// count/configmaps, ...; docs/quota.md). Default: the server's tenant_default_quota.
        #[arg(long = "quota")]
        quota: Vec<String>,
        /// Where to place the tenant: a label selector of clusters (env=prod) or cluster
        /// names; default: the least loaded cluster (docs/clusters.md).
        #[arg(long)]
        clusters: Option<String>,
        /// Clusters whose labels match this selector (region=eu) join the tenant, now and
        /// when registered later; one that stops matching drains (docs/clusters.md).
        #[arg(long)]
        span_selector: Option<String>,
        /// Time-to-live (30m, 2h, 7d): the leader deletes the tenant that long after its
        /// creation, unless it is protected (`tenant ttl` changes it).
        #[arg(long)]
        ttl: Option<String>,
        /// Refuse `tenant delete` (and the TTL's deletion) until `tenant protect --unprotect`.
        #[arg(long)]
        deletion_protection: bool,
    },
    /// Change a tenant's billing key: --label k=v sets one, --label k- removes it (same for
    /// --annotation); every upstream namespace is restamped before this returns.
    SetBilling {
        id: String,
        #[arg(long = "label")]
        labels: Vec<String>,
        #[arg(long = "annotation")]
        annotations: Vec<String>,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// A tenant's usage report: current figures taken upstream and this replica's counters.
    Usage {
        id: String,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// A tenant's quota over all its namespaces (docs/quota.md).
    Quota {
        #[command(subcommand)]
        command: quota_cli::QuotaCommand,
    },
    /// Change a tenant's fair-share overrides: name=value sets one, name- returns it to the
    /// server's default (docs/fairshare.md).
    SetLimits {
        id: String,
        /// readQPS=20, maxWatches=50, writeQPS-, apfFlow=tenant ...
        #[arg(required = true)]
        limits: Vec<String>,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Show a tenant's policy (docs/security.md "Tenant policy"), or change it with a JSON merge
    /// patch, e.g. --patch '{"services":{"allowNodePort":true}}', or return it to the
    /// server's default with --reset. Prints the policy in force as JSON.
    Policy {
        id: String,
        /// JSON merge patch over the policy in force (null removes a setting).
        #[arg(long, conflicts_with_all = ["reset", "patch_file"])]
        patch: Option<String>,
        /// The same, read from a file (e.g. an OIDC issuer with its CA: {"jwt": [...]}).
        #[arg(long, conflicts_with = "reset")]
        patch_file: Option<PathBuf>,
        /// Back to the server's default policy.
        #[arg(long)]
        reset: bool,
    },
    /// List tenants.
    List {
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Show one tenant.
    Get {
        id: String,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    #[command(flatten)]
    Life(lifecycle_cli::LifeCommand),
    #[command(flatten)]
    Portable(portable_cli::PortableCommand),
    /// Delete a tenant and everything it owns upstream (refused while it is protected).
    Delete {
        id: String,
        /// Wait until the tenant is gone, showing progress.
        #[arg(long)]
        wait: bool,
        /// How long to wait.
        #[arg(long, default_value = "300s")]
        timeout: String,
    },
}

/// Who to issue a certificate for.
#[derive(clap::Args)]
pub struct IssueArgs {
    /// Tenant id.
    pub tenant: String,
    /// User name (certificate CN).
    pub user: String,
    /// Groups (certificate O), repeatable.
    #[arg(long = "group")]
    pub groups: Vec<String>,
    /// Validity, e.g. 24h (default: the server's).
    #[arg(long)]
    pub validity: Option<String>,
    /// Use this PEM CSR instead of generating a key (the kubeconfig then has no key; pair it with yours).
    #[arg(long)]
    pub csr: Option<PathBuf>,
    /// Also write the generated private key here (0600).
    #[arg(long)]
    pub key_out: Option<PathBuf>,
}

#[derive(Subcommand)]
enum UserCommand {
    /// Issue a certificate for a tenant user and print a kubeconfig.
    Issue(IssueArgs),
    /// Print a kubeconfig for a person who signs in with OpenID Connect: one context per
    /// tenant, the `kubectl oidc-login` exec plugin, no secret embedded.
    OidcKubeconfig(oidc_cli::OidcArgs),
    /// List a tenant's users: certificates issued and identities seen acting (certificate,
    /// OIDC, pods' service accounts), with their groups and when they last acted.
    List {
        /// Tenant id.
        #[arg(long)]
        tenant: String,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
}

#[derive(Subcommand)]
enum CertCommand {
    /// List issued certificates.
    List {
        #[arg(long)]
        tenant: Option<String>,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Revoke a certificate by serial (hex).
    Revoke { serial: String },
}

fn main() -> std::process::ExitCode {
    paddock_pki::install_crypto_provider();
    let cli = Cli::parse();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Command::Serve(args) = &cli.command
        && let Some(n) = args.worker_threads
    {
        builder.worker_threads(usize::from(n));
    }
    let rt = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Serve(args) => serve::run(*args).await,
        Command::Ca {
            command:
                CaCommand::Init {
                    dir,
                    hostnames,
                    server_url,
                    force,
                },
        } => {
            let out = paddock_pki::init_ca(&dir, &hostnames, force, std::time::SystemTime::now())?;
            let kc = kubeconfig::admin_kubeconfig(
                &server_url,
                &out.ca_cert,
                &out.admin_cert,
                &out.admin_key,
            )?;
            let kc_path = dir.join("admin.kubeconfig");
            kubeconfig::write_private(&kc_path, kc.as_bytes())?;
            eprintln!(
                "wrote {}, {}, {}, {} and the private keys beside them (0600)",
                out.ca_cert.display(),
                out.serving_cert.display(),
                out.admin_cert.display(),
                kc_path.display(),
            );
            Ok(())
        }
        Command::Tenant { conn, command } => {
            let client = admin_client::AdminClient::new(&conn.kubeconfig)?;
            match command {
                TenantCommand::Create {
                    id,
                    display_name,
                    labels,
                    validity,
                    limits,
                    billing_labels,
                    billing_annotations,
                    quota,
                    clusters,
                    span_selector,
                    ttl,
                    deletion_protection,
                } => {
                    let labels = output::parse_labels(&labels)?;
                    let limits = output::parse_limits(&limits)?;
                    let billing =
                        metering_cli::billing_spec(&billing_labels, &billing_annotations)?;
                    let quota = output::parse_quota_pairs(&quota.join(","))?;
                    let mut body = admin_client::AdminClient::tenant_body(
                        &id,
                        display_name.as_deref(),
                        &labels,
                        &limits,
                        &billing,
                        &quota,
                    );
                    if let Some(c) = clusters {
                        // Placement (docs/clusters.md): a label selector or cluster names.
                        body.spec.clusters = Some(serde_json::json!(c));
                    }
                    if let Some(s) = span_selector {
                        body.spec.span = Some(serde_json::json!({ "selector": s }));
                    }
                    if let Some(t) = &ttl {
                        paddock_api::duration::parse_duration(t).map_err(anyhow::Error::msg)?;
                    }
                    body.spec.ttl = ttl;
                    body.spec.deletion_protection = deletion_protection.then_some(true);
                    client.create_tenant(&id, &body).await?;
                    let issue = IssueArgs {
                        tenant: id.clone(),
                        user: "admin".into(),
                        groups: vec![paddock_core::provision::TENANT_ADMIN_GROUP.to_string()],
                        validity,
                        csr: None,
                        key_out: None,
                    };
                    let kc = client.issue_kubeconfig(&issue).await?;
                    print!("{kc}");
                    eprintln!("tenant {id} created; the kubeconfig above belongs to its admin");
                    Ok(())
                }
                TenantCommand::SetLimits { id, limits, output } => {
                    let patch = output::parse_limits(&limits)?;
                    output::print_tenants(&[client.set_limits(&id, &patch).await?], output)
                }
                TenantCommand::SetBilling {
                    id,
                    labels,
                    annotations,
                    output,
                } => {
                    let t = metering_cli::set_billing(&client, &id, &labels, &annotations).await?;
                    output::print_tenants(&[t], output)
                }
                TenantCommand::Usage { id, output } => {
                    metering_cli::print_usage(&client.usage(&id).await?, output)
                }
                TenantCommand::Quota { command } => quota_cli::run(&client, command).await,
                TenantCommand::Policy {
                    id,
                    patch,
                    patch_file,
                    reset,
                } => {
                    let patch = match patch_file {
                        Some(f) => Some(
                            std::fs::read_to_string(&f)
                                .with_context(|| format!("reading --patch-file {}", f.display()))?,
                        ),
                        None => patch,
                    };
                    let patch = patch
                        .map(|p| serde_json::from_str::<serde_json::Value>(&p))
                        .transpose()
                        .map_err(|e| anyhow::anyhow!("--patch: not JSON: {e}"))?;
                    let v = client.tenant_policy(&id, patch.as_ref(), reset).await?;
                    println!("{}", serde_json::to_string_pretty(&v)?);
                    Ok(())
                }
                TenantCommand::List { output } => {
                    output::print_tenants(&client.list_tenants().await?, output)
                }
                TenantCommand::Get { id, output } => {
                    output::print_tenants(&[client.get_tenant(&id).await?], output)
                }
                TenantCommand::Life(command) => lifecycle_cli::run(&client, command).await,
                TenantCommand::Portable(command) => portable_cli::run(&client, command).await,
                TenantCommand::Delete { id, wait, timeout } => {
                    let timeout = paddock_api::duration::parse_duration(&timeout)
                        .map_err(anyhow::Error::msg)?;
                    client.delete_tenant(&id, wait, timeout).await
                }
            }
        }
        Command::User {
            conn,
            command: UserCommand::Issue(args),
        }
        | Command::Kubeconfig { conn, issue: args } => {
            let client = admin_client::AdminClient::new(&conn.kubeconfig)?;
            let kc = client.issue_kubeconfig(&args).await?;
            print!("{kc}");
            Ok(())
        }
        Command::User {
            conn,
            command: UserCommand::OidcKubeconfig(args),
        } => {
            let client = admin_client::AdminClient::new(&conn.kubeconfig)?;
            print!(
                "{}",
                oidc_cli::kubeconfig(&client, &conn.kubeconfig, &args).await?
            );
            Ok(())
        }
        Command::User {
            conn,
            command: UserCommand::List { tenant, output },
        } => {
            let client = admin_client::AdminClient::new(&conn.kubeconfig)?;
            output::print_users(&client.list_users(&tenant).await?, output)
        }
        Command::Template { conn, command } => {
            let client = admin_client::AdminClient::new(&conn.kubeconfig)?;
            template_cli::run(&client, command).await
        }
        Command::Cluster { conn, command } => {
            let client = admin_client::AdminClient::new(&conn.kubeconfig)?;
            cluster_cli::run(&client, command).await
        }
        Command::Cert { conn, command } => {
            let client = admin_client::AdminClient::new(&conn.kubeconfig)?;
            match command {
                CertCommand::List { tenant, output } => {
                    output::print_certs(&client.list_certs(tenant.as_deref()).await?, output)
                }
                CertCommand::Revoke { serial } => {
                    client.revoke(&serial).await?;
                    eprintln!("certificate {serial} revoked");
                    Ok(())
                }
            }
        }
    }
}
