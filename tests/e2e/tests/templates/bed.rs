//! The test bed of the templates suite and its kubectl helpers: attempts, refusals, bypasses
//! straight at the apiserver, and what the templates stamped upstream.

use super::*;

pub(crate) fn within(
    limit: Duration,
    what: &str,
    f: impl FnMut() -> Result<bool>,
) -> Result<Duration> {
    paddock_e2e::process::poll_within(limit, Duration::from_millis(100), what, f)
}

/// Runs kubectl; (success, stdout + stderr).
pub(crate) fn attempt(k: &Kubectl, args: &[&str], stdin: Option<&str>) -> Result<(bool, String)> {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let (_, out) = k.run_raw(
        &args,
        stdin,
        &BTreeMap::new(),
        Some(Duration::from_secs(30)),
    )?;
    Ok((out.success(), format!("{}{}", out.stdout, out.stderr)))
}

/// Must fail, saying `says`.
pub(crate) fn refused(
    k: &Kubectl,
    args: &[&str],
    stdin: Option<&str>,
    says: &str,
) -> Result<String> {
    let (ok, out) = attempt(k, args, stdin)?;
    ensure!(
        !ok && out.contains(says),
        "expected a refusal saying {says:?}: {args:?}\n{out}"
    );
    Ok(out)
}

pub(crate) fn ok(k: &Kubectl, args: &[&str], stdin: Option<&str>) -> Result<String> {
    let (ok, out) = attempt(k, args, stdin)?;
    ensure!(ok, "expected success: {args:?}\n{out}");
    Ok(out)
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
    let p = dir.join(name);
    std::fs::write(&p, text)?;
    Ok(p)
}

/// The tenant's identity as paddock impersonates it, for the upstream admin's kubectl.
pub(crate) fn as_tenant(tid: &str) -> Vec<String> {
    vec![
        format!("--as=paddock:{tid}:admin"),
        format!("--as-group=paddock:{tid}:tenant-admins"),
        format!("--as-group=paddock:tenant:{tid}"),
        "--as-group=system:authenticated".into(),
    ]
}

pub(crate) fn with(prefix: &[String], args: &[&str]) -> Vec<String> {
    prefix
        .iter()
        .cloned()
        .chain(args.iter().map(|s| (*s).to_owned()))
        .collect()
}

/// Runs the upstream admin's kubectl as the tenant's identity (bypassing paddock).
pub(crate) fn bypass(
    up: &Kubectl,
    tid: &str,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<(bool, String)> {
    let a = with(&as_tenant(tid), args);
    let refs: Vec<&str> = a.iter().map(String::as_str).collect();
    attempt(up, &refs, stdin)
}

/// ConfigMaps of template `t` upstream, by namespace: data.version.
pub(crate) fn stamped(up: &Kubectl, t: &str) -> Result<BTreeMap<String, String>> {
    let v: Value = serde_json::from_str(&up.run(&[
        "get",
        "configmaps",
        "-A",
        "-l",
        &format!("paddock.io/template={t}"),
        "-o",
        "json",
    ])?)?;
    Ok(v["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|o| {
                    (
                        o["metadata"]["namespace"]
                            .as_str()
                            .unwrap_or("")
                            .to_string(),
                        o["data"]["version"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default())
}

/// Tenant namespaces upstream of the given tenants.
pub(crate) fn namespaces_of(up: &Kubectl, tids: &[&str]) -> Result<Vec<String>> {
    let out = up.run(&[
        "get",
        "namespaces",
        "-l",
        "paddock.io/tenant",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}",
    ])?;
    Ok(out
        .lines()
        .filter(|n| tids.iter().any(|t| n.starts_with(&format!("{t}-"))))
        .map(str::to_string)
        .collect())
}

pub(crate) fn platform_cm(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: platform-info}}\ndata: {{version: \"{version}\", support: platform@example.com}}\n---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {{name: allow-monitoring}}\nspec:\n  podSelector: {{}}\n  policyTypes: [Ingress]\n  ingress: [{{from: [{{podSelector: {{matchLabels: {{app: monitoring}}}}}}]}}]\n"
    )
}

pub(crate) const DEV_TOOLS: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: dev-tools}\nrules: [{apiGroups: [''], resources: [pods, pods/log], verbs: [get, list]}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: dev-tools}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: dev-tools}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: developers}]\n";

pub(crate) struct Bed {
    pub(crate) cp: ControlPlane,
    pub(crate) p: Paddock,
    pub(crate) up: Kubectl,
    pub(crate) dir: PathBuf,
}

pub(crate) fn start(extra: &[&str]) -> Result<Bed> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    let mut args = cp.admission_args()?;
    args.extend(["--template-sync-interval".into(), "1s".into()]);
    // The PL1 set is opt-in (docs/templates.md); this suite tests it.
    args.extend(["--default-templates".into(), "pl1".into()]);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let p = Paddock::start_with_args(&cp, StoreKind::Etcd, "paddock", &args)?;
    let up = cp.kubectl_admin()?;
    let dir = p.dir().join("templates");
    std::fs::create_dir_all(&dir)?;
    Ok(Bed { cp, p, up, dir })
}

pub(crate) fn tenant(bed: &Bed, tid: &str) -> Result<Kubectl> {
    Ok(Kubectl::new(bed.p.tenant(tid)?)?
        .cache_dir(bed.dir.join(format!("kc-{tid}")))
        .log(bed.p.log_path()))
}
