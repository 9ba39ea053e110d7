//! The serving mode other than the default still serves real clients: a few of the kubectl
//! scenarios (reads, writes of every patch type, discovery, logs, exec and attach) and the
//! kube crate's round trip, against a paddock started with `--serve-threads 0` (connections
//! served on the multi-thread runtime instead of per-core serving threads; architecture.md
//! "Per-core serving"). Every other suite runs the default.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use paddock_e2e::scenario::{self, Env, Status};
use paddock_e2e::{ControlPlane, Paddock, StoreKind, kube_client};

/// Scenario files run in the other mode (a sample: the whole suite runs on the default).
const SAMPLE: [&str; 4] = [
    "03-configmaps",
    "05-deployments",
    "09-discovery-and-reads",
    "12-streams-on-kwok",
];

#[test]
fn serving_on_the_multi_thread_runtime_serves_kubectl_and_kube_rs() -> Result<()> {
    sample_with(&["--serve-threads", "0"], "paddock-runtime-serving")
}

/// The sample scenarios and the kube crate's round trip through a paddock started with `flags`.
fn sample_with(flags: &[&str], name: &str) -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    let args: Vec<String> = flags.iter().map(|a| (*a).to_owned()).collect();
    let with = flags.join(" ");
    let p = Paddock::start_with_args(&cp, StoreKind::Etcd, name, &args)
        .with_context(|| format!("starting paddock with {with}"))?;
    let env = Env {
        cp: &cp,
        paddock: Ok(&p),
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut failed = Vec::new();
    let mut ran = 0;
    for name in SAMPLE {
        let sc = scenario::load_file(&dir.join(format!("{name}.yaml")))?;
        for o in env.run_all(&sc) {
            ran += 1;
            eprintln!(
                "{:?} {} ({} of {} steps)",
                o.status, o.name, o.steps_passed, o.steps_total
            );
            if o.status == Status::Failed {
                failed.push(format!("{}: {}", o.name, o.failure.unwrap_or_default()));
            }
        }
    }
    ensure!(ran >= SAMPLE.len(), "only {ran} scenario runs");
    let kc = p.tenant("kubers")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let rt_result = rt.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(60),
            kube_client::tenant_roundtrip(&kc, "from-kube-rs", &[]),
        )
        .await
        .context("timed out")?
    });
    if let Err(e) = rt_result {
        failed.push(format!("kube-client: {e:#}"));
    }
    if !failed.is_empty() {
        bail!("with {with}:\n{}", failed.join("\n"));
    }
    Ok(())
}
