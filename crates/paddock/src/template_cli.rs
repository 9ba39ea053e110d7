//! `paddock template ...`: namespace templates (docs/templates.md).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use http::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Output;
use crate::admin_client::{AdminClient, check};
use crate::output::{structured, table};

use paddock_api::paths::NAMESPACE_TEMPLATES as PATH;

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
    Ok(json!({
        "apiVersion": paddock_api::GROUP_VERSION, "kind": "NamespaceTemplate",
        "metadata": {"name": spec.name},
        "spec": {"mandatory": spec.mandatory, "tenants": spec.tenants, "manifests": read_manifests(&spec.file)?}
    }))
}

pub async fn run(client: &AdminClient, command: TemplateCommand) -> Result<()> {
    match command {
        TemplateCommand::Create(spec) => {
            let t = check(
                client.call(Method::POST, PATH, Some(&body(&spec)?)).await?,
                &format!("creating template {}", spec.name),
            )?;
            eprintln!(
                "namespacetemplate {} created (generation {})",
                spec.name, t["metadata"]["generation"]
            );
            Ok(())
        }
        TemplateCommand::Apply(spec) => {
            let t = check(
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
                spec.name, t["metadata"]["generation"]
            );
            Ok(())
        }
        TemplateCommand::List { output } => {
            print_templates(&client.list_items(PATH, "listing templates").await?, output)
        }
        TemplateCommand::Get { name, output } => {
            let path = format!("{PATH}/{name}");
            let v = client
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

fn print_templates(items: &[Value], output: Output) -> Result<()> {
    if structured(items, output)? {
        return Ok(());
    }
    let rows = items
        .iter()
        .map(|t| {
            let tenants = t["spec"]["tenants"]
                .as_array()
                .filter(|a| !a.is_empty())
                .map_or("*".to_string(), |a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(",")
                });
            let ns = &t["status"]["namespaces"];
            let sync = if ns.is_object() {
                format!("{}/{}", ns["inSync"], ns["wanted"])
            } else {
                "-".into()
            };
            vec![
                t["metadata"]["name"].as_str().unwrap_or("").to_string(),
                if t["spec"]["mandatory"] == true {
                    "mandatory"
                } else {
                    "optional"
                }
                .to_string(),
                tenants,
                t["metadata"]["generation"].to_string(),
                t["spec"]["manifests"]
                    .as_array()
                    .map_or(0, Vec::len)
                    .to_string(),
                if t["status"]["builtin"] == true {
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
