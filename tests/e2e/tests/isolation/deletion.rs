//! Deletion of a tenant: nothing of it remains upstream, platform objects are unchanged.

use super::*;

/// Snapshot of upstream: every object of every listable kind, as `kind ns/name rv`.
pub(crate) fn snapshot(up: &Kubectl) -> Result<BTreeSet<String>> {
    let kinds = up.run(&["api-resources", "--verbs=list", "-o", "name"])?;
    let mut out = BTreeSet::new();
    let kinds: Vec<&str> = kinds
        .lines()
        .filter(|k| !k.is_empty() && !k.starts_with("events") && !k.starts_with("leases"))
        .collect();
    let (_, o) = up.run_raw(
        &[
            "get".to_owned(),
            kinds.join(","),
            "-A".to_owned(),
            "-o".to_owned(),
            "jsonpath={range .items[*]}{.kind} {.metadata.namespace}/{.metadata.name} {.metadata.uid}{\"\\n\"}{end}".to_owned(),
        ],
        None,
        &BTreeMap::new(),
        Some(Duration::from_secs(120)),
    )?;
    if !o.success() {
        bail!("snapshot failed: {}", o.stderr);
    }
    // A cluster-scoped IPAddress is the ClusterIP allocation of one Service: it belongs to
    // whoever owns that Service, so its line names the Service's namespace.
    let (_, ips) = up.run_raw(
        &[
            "get".to_owned(),
            "ipaddresses".to_owned(),
            "-o".to_owned(),
            "jsonpath={range .items[*]}{.metadata.name} {.spec.parentRef.namespace}/{.spec.parentRef.name}{\"\\n\"}{end}".to_owned(),
        ],
        None,
        &BTreeMap::new(),
        Some(Duration::from_secs(60)),
    )?;
    let parents: BTreeMap<String, String> = ips
        .stdout
        .lines()
        .filter_map(|l| {
            l.split_once(' ')
                .map(|(ip, parent)| (ip.to_owned(), parent.to_owned()))
        })
        .collect();
    for l in o.stdout.lines() {
        match l
            .strip_prefix("IPAddress /")
            .and_then(|rest| rest.split(' ').next())
        {
            Some(ip) if parents.contains_key(ip) => {
                out.insert(format!("{l} parent={}", parents[ip]));
            }
            _ => {
                out.insert(l.to_owned());
            }
        }
    }
    Ok(out)
}

pub(crate) fn deletion_test(cp: &ControlPlane, paddock: &Paddock, up: &Kubectl) -> Result<String> {
    const C: &str = "charly";
    let kc = paddock.kubectl_tenant(C)?;
    // A tenant adds no ClusterRoleBinding upstream until it has CRDs: its admins' cluster-scope
    // rights come from the one shared binding (each binding costs every request in the
    // cluster an RBAC match; docs/performance.md).
    let managed_crbs = || -> Result<String> {
        up.run(&[
            "get",
            "clusterrolebindings",
            "-l",
            "paddock.io/managed-for=charly",
            "-o",
            "name",
        ])
    };
    let fresh = managed_crbs()?;
    if !fresh.trim().is_empty() {
        bail!("a tenant without CRDs has ClusterRoleBindings of its own upstream: {fresh}");
    }
    let shared = up.run(&[
        "get",
        "clusterrolebinding",
        "paddock:tenant-cluster-scope",
        "-o",
        "jsonpath={.roleRef.name} {.subjects[*].kind}/{.subjects[*].name}",
    ])?;
    if shared.trim() != "paddock:tenant-cluster-scope Group/paddock:tenant-cluster-scope-admins" {
        bail!("the shared cluster-scope binding is not as expected: {shared:?}");
    }
    kc.run_stdin(
        &["apply", "-f", "-"],
        Some(&format!(
            "apiVersion: v1\nkind: Namespace\nmetadata: {{name: app}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: c-role}}\nrules: [{{apiGroups: [''], resources: [pods], verbs: [get]}}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: c-crb}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: c-role}}\nsubjects: [{{kind: User, name: carol}}]\n---\n{}",
            crd("widgets", "charly.example.com", "Namespaced")
        )),
    )?;
    kc.run(&[
        "create",
        "deployment",
        "web",
        "-n",
        "app",
        "--image=registry.example/app:1",
        "--replicas=2",
    ])?;
    wait_until("charly's pods Running", Duration::from_secs(90), || {
        let o = kc.run(&[
            "get",
            "pods",
            "-n",
            "app",
            "-o",
            "jsonpath={.items[*].status.phase}",
        ])?;
        Ok(o.split_whitespace().filter(|p| *p == "Running").count() == 2)
    })?;
    // With a CRD, exactly one: the binding of its custom-resources role.
    let with_crd = managed_crbs()?;
    if with_crd.trim()
        != "clusterrolebinding.rbac.authorization.k8s.io/paddock:tenant:charly:custom-resources"
    {
        bail!("with a CRD, the tenant's own ClusterRoleBindings upstream are: {with_crd:?}");
    }
    // The periodic resync (one read of the whole cluster every 30 s) puts back what it derives
    // when it goes missing behind paddock's back: a mirror RoleBinding and the
    // custom-resources binding, deleted here directly upstream.
    let mirror = [
        "rolebinding",
        "paddock:crb:charly-c-crb",
        "-n",
        "charly-app",
    ];
    let custom = [
        "clusterrolebinding",
        "paddock:tenant:charly:custom-resources",
    ];
    up.run(&[&["delete"][..], &mirror[..]].concat())?;
    up.run(&[&["delete"][..], &custom[..]].concat())?;
    let exists = |what: &[&str]| -> Result<bool> {
        let (_, o) = up.run_raw(
            &[&["get"][..], what, &["-o", "name"][..]]
                .concat()
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<Vec<_>>(),
            None,
            &BTreeMap::new(),
            None,
        )?;
        Ok(o.success())
    };
    let t_resync = Instant::now();
    wait_until(
        "the resync to restore charly's mirror and custom-resources binding",
        Duration::from_secs(75),
        || Ok(exists(&mirror)? && exists(&custom)?),
    )?;
    eprintln!(
        "resync restored a deleted mirror and custom-resources binding in {:.1} s",
        t_resync.elapsed().as_secs_f64()
    );
    // A platform object whose name merely starts with the id (no dash): must survive.
    up.run_stdin(&["apply", "-f", "-"], Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: charlyx-keep, namespace: plat-core}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: charlyx-platform}\n"))?;
    let is_charly = |l: &str| {
        l.contains("charly-") || l.contains(":charly:") || l.contains("paddock:tenant:charly")
    };
    let before = snapshot(up)?;
    let charly_before = before.iter().filter(|l| is_charly(l)).count();
    let t0 = Instant::now();
    let args: Vec<String> = ["tenant", "delete", C, "--wait", "--timeout", "240s"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let (line, out) = paddock.cli_raw(&args, Duration::from_secs(300))?;
    if !out.success() {
        bail!("{line} failed: {} {}", out.stdout, out.stderr);
    }
    let took = t0.elapsed();
    let after = snapshot(up)?;
    let left: Vec<&String> = after.iter().filter(|l| is_charly(l)).collect();
    if !left.is_empty() {
        bail!("after deletion, upstream still holds: {left:?}");
    }
    // Labelled objects by label, too.
    let labelled = up.run(&[
        "get",
        "namespaces,clusterroles,clusterrolebindings,crds,pv",
        "-l",
        "paddock.io/tenant=charly",
        "-o",
        "name",
    ])?;
    let managed = up.run(&[
        "get",
        "clusterroles,clusterrolebindings",
        "-l",
        "paddock.io/managed-for=charly",
        "-o",
        "name",
    ])?;
    if !labelled.trim().is_empty() || !managed.trim().is_empty() {
        bail!("labelled objects left: {labelled} {managed}");
    }
    // Nothing else changed: every object of the snapshot that was not charly's is still there
    // with the same uid (objects that come and go by themselves, events and leases, are not in it).
    let gone_all: Vec<&String> = before
        .iter()
        .filter(|l| !is_charly(l))
        .filter(|l| !after.contains(*l))
        .collect();
    if !gone_all.is_empty() {
        bail!("platform or other tenants' objects changed by the deletion: {gone_all:?}");
    }
    // Its certificate is refused.
    let (_, o) = kc.run_raw(&split("get namespaces"), None, &BTreeMap::new(), None)?;
    if o.success()
        || !(o.stderr.contains("Unauthorized")
            || o.stderr.contains("You must be logged in")
            || o.stderr.contains("provide credentials"))
    {
        bail!(
            "charly's certificate still works or is not refused with 401: {} {}",
            o.stdout,
            o.stderr
        );
    }
    let _ = cp;
    Ok(format!(
        "tenant charly with {charly_before} upstream objects (namespaces, CRD, ClusterRole, ClusterRoleBinding, 2 Running pods) deleted in {:.1}s; 0 objects with its label or prefix left; {} other objects unchanged; its certificate gets 401",
        took.as_secs_f64(),
        before.len() - charly_before
    ))
}
