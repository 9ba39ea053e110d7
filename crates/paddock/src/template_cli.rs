//! `paddock template ...`: namespace templates (docs/templates.md).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use http::Method;
use serde::Deserialize;
use serde_json::Value;

use crate::Output;
use crate::admin_client::{AdminClient, check_as};
use crate::output::{structured, table};

use paddock_api::paths::NAMESPACE_TEMPLATES as PATH;
use paddock_api::template::NamespaceTemplate;

/// What a template is made of (create and apply).
#[derive(Args)]
pub struct TemplateSpec {
    name: String,
    /// Manifests in the tenant's view (YAML or JSON, several documents or a List; no namespace).
    #[arg(short = 'f', long = "filename", required = true)]
    file: PathBuf,
    /// Stamped into every namespace of its tenants, locked.
    #[arg(
        long,
        conflicts_with = "optional",
        required_unless_present = "optional"
    )]
    mandatory: bool,
    /// Stamped only where the namespace asks (label templates.paddock.io/<name>: "true").
    #[arg(long)]
    optional: bool,
    /// Only for these tenants (repeatable); all tenants when none is named.
    #[arg(long = "tenant")]
    tenants: Vec<String>,
}

#[derive(Subcommand)]
pub enum TemplateCommand {
    /// Create a template (fails if it exists).
    Create(TemplateSpec),
    /// Create or replace a template (its generation rises when it changed).
    Apply(TemplateSpec),
    /// List templates.
    List {
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Show one template and how many namespaces carry it in step.
    Get {
        name: String,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Delete a template: its mandatory objects are removed, optional ones stay.
    Delete { name: String },
}

/// The objects of a manifest file: every YAML document, `List`s flattened.
pub fn read_manifests(path: &Path) -> Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    for doc in serde_norway::Deserializer::from_str(&text) {
        let v = Value::deserialize(doc).with_context(|| format!("parsing {}", path.display()))?;
        match v {
            Value::Null => {}
            Value::Object(ref o) if o.get("kind").and_then(Value::as_str) == Some("List") => {
                out.extend(
                    o.get("items")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                );
            }
            Value::Object(_) => out.push(v),
            _ => bail!("{}: every document must be an object", path.display()),
        }
    }
    if out.is_empty() {
        bail!("{}: no objects", path.display());
    }
    Ok(out)
}

fn body(spec: &TemplateSpec) -> Result<Value> {
    let t = NamespaceTemplate::request(
        &spec.name,
        spec.mandatory,
        spec.tenants.clone(),
        read_manifests(&spec.file)?,
    );
    Ok(serde_json::to_value(t)?)
}

/// The generation of a template as answered.
fn generation(t: &NamespaceTemplate) -> String {
    t.metadata
        .generation
        .map_or_else(|| "null".into(), |g| g.to_string())
}

pub async fn run(client: &AdminClient, command: TemplateCommand) -> Result<()> {
    match command {
        TemplateCommand::Create(spec) => {
            let t = check_as(
                client.call(Method::POST, PATH, Some(&body(&spec)?)).await?,
                &format!("creating template {}", spec.name),
            )?;
            eprintln!(
                "namespacetemplate {} created (generation {})",
                spec.name,
                generation(&t)
            );
            Ok(())
        }
        TemplateCommand::Apply(spec) => {
            let t = check_as(
                client
                    .call(
                        Method::PUT,
                        &format!("{PATH}/{}", spec.name),
                        Some(&body(&spec)?),
                    )
                    .await?,
                &format!("applying template {}", spec.name),
            )?;
            eprintln!(
                "namespacetemplate {} applied (generation {})",
                spec.name,
                generation(&t)
            );
            Ok(())
        }
        TemplateCommand::List { output } => {
            print_templates(&client.list_items(PATH, "listing templates").await?, output)
        }
        TemplateCommand::Get { name, output } => {
            let path = format!("{PATH}/{name}");
            let v: NamespaceTemplate = client
                .get_object(&path, &format!("getting template {name}"))
                .await?;
            print_templates(std::slice::from_ref(&v), output)
        }
        TemplateCommand::Delete { name } => {
            let path = format!("{PATH}/{name}");
            client
                .delete_object(&path, &format!("deleting template {name}"))
                .await?;
            eprintln!("namespacetemplate {name} deleted");
            Ok(())
        }
    }
}

fn print_templates(items: &[NamespaceTemplate], output: Output) -> Result<()> {
    if structured(items, output)? {
        return Ok(());
    }
    let rows = items
        .iter()
        .map(|t| {
            let tenants = if t.spec.tenants.is_empty() {
                "*".to_string()
            } else {
                t.spec.tenants.join(",")
            };
            let status = t.status.as_ref();
            let sync = status
                .and_then(|s| s.namespaces.as_ref())
                .map_or("-".into(), |ns| format!("{}/{}", ns.in_sync, ns.wanted));
            vec![
                t.metadata.name.clone().unwrap_or_default(),
                if t.spec.mandatory == Some(true) {
                    "mandatory"
                } else {
                    "optional"
                }
                .to_string(),
                tenants,
                generation(t),
                t.spec.manifests.as_ref().map_or(0, Vec::len).to_string(),
                if status.is_some_and(|s| s.builtin) {
                    "yes"
                } else {
                    "no"
                }
                .to_string(),
                sync,
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "NAME",
                "KIND",
                "TENANTS",
                "GENERATION",
                "OBJECTS",
                "BUILTIN",
                "IN-SYNC"
            ],
            rows
        )
    );
    Ok(())
}
