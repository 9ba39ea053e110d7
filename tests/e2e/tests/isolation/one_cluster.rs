//! The one-cluster run of the isolation suite, in either way paddock asserts tenant
//! identities upstream (`upstream_identity_mode`): `isolation.rs` impersonates (the default),
//! `isolation_front_proxy.rs` runs the same cases with paddock as the apiserver's
//! authenticating front proxy, its bypass asserting the attacker's identity the same way.

use super::*;

/// Starts a control plane and paddock in `mode`, runs the suite, copies the component logs
/// to target/ when it fails.
pub(crate) fn isolation_in(front_proxy: bool) -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    // With the admission webhook: the tenant policy is part of what the attacks meet.
    let mut args = cp.admission_args()?;
    let files = if front_proxy {
        let files = (
            PathBuf::from(cp.var("FRONT_PROXY_CLIENT_CERT")?),
            PathBuf::from(cp.var("FRONT_PROXY_CLIENT_KEY")?),
        );
        args.extend(front_proxy_args(&files));
        Some(files)
    } else {
        None
    };
    let paddock = Paddock::start_with_args(&cp, StoreKind::Etcd, "paddock", &args)
        .context("starting paddock")?;
    let result = run_all(&cp, &paddock, files);
    if result.is_err() {
        let dest = workspace_root().join("target").join(if front_proxy {
            "e2e-logs-isolation-front-proxy"
        } else {
            "e2e-logs-isolation"
        });
        let _ = std::fs::create_dir_all(&dest);
        if let Ok(rd) = std::fs::read_dir(cp.dir().join("logs")) {
            for e in rd.flatten() {
                let _ = std::fs::copy(e.path(), dest.join(e.file_name()));
            }
        }
        eprintln!("component logs copied to {}", dest.display());
    }
    result
}

/// paddock's flags for front-proxy mode with the test bed's front-proxy client certificate.
fn front_proxy_args((cert, key): &(PathBuf, PathBuf)) -> Vec<String> {
    vec![
        "--upstream-identity-mode".into(),
        "front-proxy".into(),
        "--front-proxy-client-cert".into(),
        cert.display().to_string(),
        "--front-proxy-client-key".into(),
        key.display().to_string(),
    ]
}

fn run_all(
    cp: &ControlPlane,
    paddock: &Paddock,
    front_proxy: Option<(PathBuf, PathBuf)>,
) -> Result<()> {
    let up = cp.kubectl_admin()?;
    let front = front_proxy.is_some();
    let arena = Arena {
        paddock,
        up: up.clone(),
        direct_kubeconfig: cp.admin_kubeconfig(),
        bypass_at: vec![("up", up.clone())],
        place_on: None,
        extra_cases: Vec::new(),
        report: if front {
            "isolation-front-proxy-report.md"
        } else {
            "isolation-report.md"
        },
        front_proxy,
    };
    run_suite(&arena, || deletion_test(cp, paddock, &up))
}
