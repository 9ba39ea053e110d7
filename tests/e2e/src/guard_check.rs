//! The admission guard where paddock serves no admission webhook: the Service rule is then
//! the guard's own policy (`paddock-tenant-guard-services`, prefiltered: its rule is also its
//! match condition, negated). A tenant's identity sent straight at the apiserver (the bypass)
//! is refused a NodePort Service by that policy and allowed a ClusterIP one (the positive
//! control: the refusal is the rule's, not RBAC's).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, ensure};
use http::HeaderMap;
use paddock_core::TenantId;
use paddock_core::identity::As;

use crate::{ControlPlane, Paddock};

/// Runs the check with tenant `tid` (created through `p` if needed).
pub fn services_rule_without_webhook(cp: &ControlPlane, p: &Paddock, tid: &str) -> Result<()> {
    p.kubectl_tenant(tid)?
        .run(&["get", "namespace", "default"])?;
    let t = TenantId::parse(tid).map_err(|e| anyhow!("{e}"))?;
    let mut h = HeaderMap::new();
    paddock_server::proxy::outbound::add_impersonation_as(
        &mut h,
        &t,
        "admin",
        &["tenant-admins".to_owned()],
        As::Real,
    )
    .map_err(|e| anyhow!("{e}"))?;
    let mut as_tenant = Vec::new();
    for v in h.get_all("impersonate-user") {
        as_tenant.push(format!("--as={}", v.to_str()?));
    }
    for v in h.get_all("impersonate-group") {
        as_tenant.push(format!("--as-group={}", v.to_str()?));
    }
    let up = cp.kubectl_admin()?;
    let ns = format!("{tid}-default");
    let create = |kind: &str, name: &str| -> Result<(bool, String)> {
        let mut args: Vec<String> = ["create", "service", kind, name, "-n", &ns]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        args.extend(["--tcp=80:80".into(), "--dry-run=server".into()]);
        args.extend(as_tenant.iter().cloned());
        let (_, out) = up.run_raw(&args, None, &BTreeMap::new(), None)?;
        Ok((out.success(), format!("{}{}", out.stdout, out.stderr)))
    };
    let (ok, said) = create("clusterip", "guard-ctl")?;
    ensure!(
        ok,
        "a ClusterIP Service as the tenant upstream was refused: {said}"
    );
    // The apiserver takes up a new policy from its informer a moment after paddock wrote it
    // (paddock is ready once it is written): until then the namespace's quota, which allows
    // no NodePort either, answers first.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (ok, said) = create("nodeport", "guard-np")?;
        if !ok && said.contains("paddock-tenant-guard-services") {
            return Ok(());
        }
        ensure!(
            !ok && Instant::now() < deadline,
            "a NodePort Service as the tenant upstream: want a refusal by paddock-tenant-guard-services, got {}: {said}",
            if ok { "success" } else { "another refusal" }
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}
