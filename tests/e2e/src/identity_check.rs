//! Which groups the apiserver gives the identity paddock impersonates. paddock leaves
//! `system:authenticated` out of its `Impersonate-Group` headers (every value costs the
//! apiserver an authorization check, and it adds that group to every impersonated
//! non-anonymous user by itself); this check shows the identity upstream is unchanged: the
//! headers paddock builds, sent by the upstream admin, give exactly the groups paddock means
//! (`paddock_core::identity::impersonation`), and a tenant's own `kubectl auth whoami` through
//! paddock still shows `system:authenticated`.

use anyhow::{Context, Result, ensure};
use http::HeaderMap;
use paddock_core::TenantId;
use paddock_core::identity::{As, impersonation};
use serde_json::Value;

use crate::{ControlPlane, Paddock};

/// The groups of a `kubectl auth whoami -o json` answer, sorted.
fn whoami_groups(out: &str) -> Result<Vec<String>> {
    let v: Value = serde_json::from_str(out).with_context(|| format!("whoami answer: {out}"))?;
    let mut g: Vec<String> = v["status"]["userInfo"]["groups"]
        .as_array()
        .context("no status.userInfo.groups")?
        .iter()
        .filter_map(|x| x.as_str().map(str::to_owned))
        .collect();
    g.sort();
    Ok(g)
}

/// kubectl's `--as`/`--as-group` flags for the identity paddock asserts upstream for `user`
/// of tenant `t` with (tenant-view) `groups`, built from the very headers paddock sends: a
/// scenario run straight at the apiserver as that identity.
pub fn as_flags(t: &TenantId, user: &str, groups: &[String], who: As) -> Result<Vec<String>> {
    let mut h = HeaderMap::new();
    paddock_server::proxy::outbound::add_impersonation_as(&mut h, t, user, groups, who)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut args = Vec::new();
    for v in h.get_all("impersonate-user") {
        args.push(format!("--as={}", v.to_str()?));
    }
    for v in h.get_all("impersonate-group") {
        args.push(format!("--as-group={}", v.to_str()?));
    }
    Ok(args)
}

/// Runs the check with tenant `tid` (created through `p` if needed).
pub fn impersonated_groups(cp: &ControlPlane, p: &Paddock, tid: &str) -> Result<()> {
    let through = p
        .kubectl_tenant(tid)?
        .run(&["auth", "whoami", "-o", "json"])?;
    let groups = whoami_groups(&through)?;
    ensure!(
        groups.iter().any(|g| g == "system:authenticated"),
        "a tenant's whoami through paddock lacks system:authenticated: {groups:?}"
    );
    let t = TenantId::parse(tid).map_err(|e| anyhow::anyhow!("{e}"))?;
    let up = cp.kubectl_admin()?;
    let cert_groups = vec!["tenant-admins".to_owned(), "dev".to_owned()];
    for (user, who) in [
        ("alice", As::Real),
        ("alice", As::Shadow),
        ("system:serviceaccount:web:builder", As::Real),
    ] {
        let mut h = HeaderMap::new();
        paddock_server::proxy::outbound::add_impersonation_as(&mut h, &t, user, &cert_groups, who)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut args = vec![
            "auth".to_owned(),
            "whoami".into(),
            "-o".into(),
            "json".into(),
        ];
        for v in h.get_all("impersonate-user") {
            args.push(format!("--as={}", v.to_str()?));
        }
        let mut sent = Vec::new();
        for v in h.get_all("impersonate-group") {
            sent.push(v.to_str()?.to_owned());
            args.push(format!("--as-group={}", v.to_str()?));
        }
        ensure!(
            !sent.iter().any(|g| g == "system:authenticated"),
            "{user} {who:?}: paddock sends system:authenticated again: {sent:?}"
        );
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = whoami_groups(&up.run(&refs)?)?;
        let mut want = impersonation(&t, user, &cert_groups, who).groups;
        want.sort();
        ensure!(
            got == want,
            "{user} {who:?}: the apiserver gives {got:?} for the headers {sent:?}, paddock means {want:?}"
        );
    }
    Ok(())
}
