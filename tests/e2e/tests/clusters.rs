//! Several upstream clusters (docs/clusters.md): two control planes on loopback, paddock in
//! front of the first (the `default` cluster), the second registered with
//! `paddock cluster add`; one tenant placed on each (by name and by label selector). Each
//! works through paddock with real kubectl, its objects are on its own cluster and absent
//! from the other, neither tenant sees the other's, a tenant deleted from the second cluster
//! leaves nothing there, and with the second cluster's apiserver killed the first cluster's
//! tenant keeps working while the second's gets a 503 naming its cluster, until it returns
//! (no restart of paddock). A third tenant spans both clusters (`clusters_span/`).

mod clusters_span;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

/// `paddock tenant create <id> --clusters <placement>`; kubectl as its admin.
fn tenant_on(p: &Paddock, id: &str, placement: &str) -> Result<Kubectl> {
    let kc = p.cli(&["tenant", "create", id, "--clusters", placement])?;
    let path: PathBuf = p.dir().join(format!("{id}.kubeconfig"));
    std::fs::write(&path, kc)?;
    Ok(Kubectl::new(path)?
        .cache_dir(p.dir().join("kubectl-cache").join(id))
        .log(p.log_path()))
}

fn upstream_has(k: &Kubectl, args: &[&str]) -> Result<bool> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (_, out) = k.run_raw(&args, None, &Default::default(), None)?;
    Ok(out.success())
}

/// Polls `f` for up to `limit`; fails with the last error.
fn eventually(limit: Duration, mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
    let t0 = Instant::now();
    loop {
        match f() {
            Ok(()) => return Ok(t0.elapsed()),
            Err(e) if t0.elapsed() > limit => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

fn readyz(p: &Paddock) -> Result<(bool, String)> {
    let args = vec!["get".to_string(), "--raw".into(), "/readyz".into()];
    let (_, out) = p
        .kubectl_admin()?
        .run_raw(&args, None, &Default::default(), None)?;
    Ok((out.success(), format!("{}{}", out.stdout, out.stderr)))
}

#[test]
#[ignore = "about 5-6 min (two control planes, a spanning tenant, an apiserver restart): make test-clusters"]
fn two_clusters_one_tenant_each() -> Result<()> {
    let mut planes = ControlPlane::start_many(2).context("starting two control planes")?;
    let b = planes.pop().context("second plane")?;
    let a = planes.pop().context("first plane")?;
    eprintln!(
        "control planes up in {:.1}s and {:.1}s at {} and {}",
        a.startup.as_secs_f64(),
        b.startup.as_secs_f64(),
        a.apiserver_url()?,
        b.apiserver_url()?
    );
    ensure!(
        a.apiserver_url()? != b.apiserver_url()?,
        "the planes share an apiserver"
    );
    let p = Paddock::start(&a, StoreKind::Etcd)?;
    let (up_a, up_b) = (a.kubectl_admin()?, b.kubectl_admin()?);

    // Registering: bad input is refused with a reason; the good one appears without restart.
    let bad = p
        .cli(&["cluster", "add", "Bad_Name", "--from-kubeconfig"])
        .err();
    ensure!(
        bad.is_some(),
        "a cluster add without a kubeconfig succeeded"
    );
    let kb = b.admin_kubeconfig();
    let kb = kb.to_str().context("path")?;
    let dup = p.cli(&["cluster", "add", "default", "--from-kubeconfig", kb]);
    ensure!(
        format!(
            "{:#}",
            dup.as_ref()
                .err()
                .context("adding `default` twice succeeded")?
        )
        .contains("already exists"),
        "adding `default`: {dup:?}"
    );
    p.cli(&[
        "cluster",
        "add",
        "east",
        "--from-kubeconfig",
        kb,
        "--label",
        "env=prod",
        "--capacity",
        "100",
    ])?;
    let ready_after = eventually(Duration::from_secs(60), || {
        let list = p.cli(&["cluster", "list", "-o", "json"])?;
        let v: serde_json::Value = serde_json::from_str(&list)?;
        // `-o json` prints the list as an array (one item: the object itself).
        let east = v
            .as_array()
            .and_then(|i| i.iter().find(|c| c["metadata"]["name"] == "east"))
            .with_context(|| format!("east not listed: {list}"))?;
        ensure!(
            east["status"]["ready"] == true,
            "east not ready yet: {east}"
        );
        ensure!(
            !list.contains("BEGIN") && !list.contains("PRIVATE"),
            "the cluster list shows a credential: {list}"
        );
        Ok(())
    })?;
    eprintln!("cluster east registered and ready after {ready_after:?}");
    let (ok, body) = readyz(&p)?;
    ensure!(
        ok && body.contains("default=ready") && body.contains("east=ready"),
        "readyz with both clusters up: {body}"
    );

    // Placement: by name onto default, by selector onto east; a selector nothing matches is
    // refused with its reason.
    let ta = tenant_on(&p, "alphaa", "default")?;
    let tb = tenant_on(&p, "bravob", "env=prod")?;
    let none = p.cli(&["tenant", "create", "nonone", "--clusters", "env=staging"]);
    ensure!(
        format!(
            "{:#}",
            none.as_ref().err().context("unmatched selector placed")?
        )
        .contains("no cluster matches"),
        "{none:?}"
    );
    let rec: serde_json::Value =
        serde_json::from_str(&p.cli(&["tenant", "get", "bravob", "-o", "json"])?)?;
    ensure!(
        rec["spec"]["clusters"] == serde_json::json!(["east"]),
        "tenant record: {rec}"
    );

    // Each tenant works as on a cluster of its own; objects land on its own upstream only.
    for (k, ns) in [(&ta, "shop"), (&tb, "shop")] {
        k.run(&["create", "namespace", ns])?;
        k.run(&["-n", ns, "create", "configmap", "cfg", "--from-literal=a=b"])?;
        let got = k.run(&[
            "-n",
            ns,
            "get",
            "configmap",
            "cfg",
            "-o",
            "jsonpath={.data.a}",
        ])?;
        ensure!(got == "b", "configmap read back {got:?}");
        let all = k.run(&["get", "configmaps", "-A", "-o", "name"])?;
        ensure!(all.contains("configmap/cfg"), "get -A: {all}");
    }
    ensure!(
        upstream_has(&up_a, &["get", "ns", "alphaa-shop"])?,
        "alphaa's namespace missing on default"
    );
    ensure!(
        !upstream_has(&up_b, &["get", "ns", "alphaa-shop"])?,
        "alphaa's namespace on east"
    );

    // Namespace templates are kept on every cluster: a locked object deleted straight at
    // east's apiserver is put back by east's template sync, as one on default is by default's.
    for (up, ns, cluster) in [
        (&up_b, "bravob-shop", "east"),
        (&up_a, "alphaa-shop", "default"),
    ] {
        let np = ["-n", ns, "get", "networkpolicy", "paddock-tenant-isolation"];
        eventually(Duration::from_secs(30), || {
            ensure!(upstream_has(up, &np)?, "{ns} not stamped on {cluster} yet");
            Ok(())
        })?;
        up.run(&[
            "-n",
            ns,
            "delete",
            "networkpolicy",
            "paddock-tenant-isolation",
        ])?;
        let back = eventually(Duration::from_secs(20), || {
            ensure!(
                upstream_has(up, &np)?,
                "{ns}'s NetworkPolicy not back on {cluster}"
            );
            Ok(())
        })?;
        eprintln!("FIGURE template drift on {cluster}: deleted NetworkPolicy back after {back:?}");
    }
    ensure!(
        upstream_has(&up_b, &["get", "ns", "bravob-shop"])?,
        "bravob's namespace missing on east"
    );
    ensure!(
        !upstream_has(&up_a, &["get", "ns", "bravob-shop"])?,
        "bravob's namespace on default"
    );
    ensure!(
        upstream_has(&up_b, &["-n", "bravob-shop", "get", "configmap", "cfg"])?,
        "bravob's configmap missing on east"
    );

    // Isolation across clusters: each sees only its own namespaces, and naming the other's
    // gives what a cluster without it answers.
    let nss = tb.run(&["get", "ns", "-o", "name"])?;
    ensure!(!nss.contains("alphaa"), "bravob sees alphaa: {nss}");
    let cross = ta.run_raw(
        &[
            "-n".into(),
            "bravob-shop".into(),
            "get".into(),
            "configmap".into(),
            "cfg".into(),
        ],
        None,
        &Default::default(),
        None,
    )?;
    ensure!(!cross.1.success(), "alphaa read bravob's configmap");

    // A tenant spanning both clusters works as on one, and isolation holds on both.
    let ts = clusters_span::spanning_tenant(&p, &up_a, &up_b)?;
    clusters_span::isolation(&ts, &ta, &tb)?;

    // Removing a cluster that still holds a tenant is refused.
    let rm = p.cli(&["cluster", "remove", "east"]);
    ensure!(
        format!(
            "{:#}",
            rm.as_ref()
                .err()
                .context("east removed while holding bravob")?
        )
        .contains("still holds tenants"),
        "{rm:?}"
    );

    // Deleting a tenant of east removes its namespaces from east.
    let tc = tenant_on(&p, "charli", "east")?;
    tc.run(&["create", "namespace", "gone"])?;
    ensure!(
        upstream_has(&up_b, &["get", "ns", "charli-gone"])?,
        "charli's namespace missing on east"
    );
    let del: Vec<String> = ["tenant", "delete", "charli", "--wait"]
        .map(String::from)
        .to_vec();
    let (line, out) = p.cli_raw(&del, Duration::from_secs(300))?;
    ensure!(out.success(), "{line}: {}", out.stderr);
    ensure!(
        !upstream_has(&up_b, &["get", "ns", "charli-gone"])?,
        "charli's namespace left on east after its deletion"
    );

    // east's apiserver killed: alphaa keeps working with no failed request; bravob gets a 503
    // naming east; /readyz stays 200 and names east unreachable.
    let mut api_b = paddock_e2e::ha::Apiserver::of(&b)?;
    api_b.kill()?;
    let t0 = Instant::now();
    let mut served = 0;
    let mut bravob_answer = String::new();
    while t0.elapsed() < Duration::from_secs(30) && (served < 10 || !bravob_answer.contains("east"))
    {
        ta.run(&["-n", "shop", "get", "configmap", "cfg", "-o", "name"])
            .context("a request of the default cluster's tenant failed while east was down")?;
        served += 1;
        if bravob_answer.contains("east") {
            continue;
        }
        let (_, out) = tb.run_raw(
            &[
                "-n".into(),
                "shop".into(),
                "get".into(),
                "configmap".into(),
                "cfg".into(),
            ],
            None,
            &Default::default(),
            Some(Duration::from_secs(30)),
        )?;
        if !out.success() {
            bravob_answer = out.stderr.clone();
        }
    }
    eprintln!(
        "east down: alphaa served {served} requests, none failed; bravob got: {}",
        bravob_answer.trim()
    );
    if !bravob_answer.contains("cluster \"east\"") || !bravob_answer.contains("ServiceUnavailable")
    {
        bail!("bravob's answer with east down is not a 503 naming the cluster: {bravob_answer}");
    }
    let (ok, body) = readyz(&p)?;
    ensure!(
        ok && body.contains("east=unreachable") && body.contains("default=ready"),
        "readyz with east down: {body}"
    );
    clusters_span::with_east_down(&ts)?;

    // east returns: bravob works again, without a restart of paddock.
    api_b.start(&b)?;
    let back = eventually(Duration::from_secs(60), || {
        let got = tb.run(&[
            "-n",
            "shop",
            "get",
            "configmap",
            "cfg",
            "-o",
            "jsonpath={.data.a}",
        ])?;
        ensure!(got == "b", "read back {got:?}");
        Ok(())
    })
    .context("bravob did not work again after east returned")?;
    eprintln!("east back: bravob served again {back:?} after its apiserver was ready");
    let (ok, body) = readyz(&p)?;
    ensure!(
        ok && body.contains("east=ready"),
        "readyz after east returned: {body}"
    );
    clusters_span::after_east_returns(&ts, &up_b)?;
    clusters_span::deletion(&p, &up_a, &up_b)?;
    Ok(())
}
