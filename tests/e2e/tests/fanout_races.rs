//! A cluster-wide list or watch opened right after the tenant created a namespace gets a
//! cluster admin's answer. The new namespace's RoleBindings are written before
//! the create is answered, but the apiserver's RBAC cache may not have seen them yet when the
//! fan-out asks that namespace: a cluster admin never gets a 403 there, so neither may the
//! tenant's admin. Straight at the apiserver as the control (the admin creates a namespace and
//! lists and watches at once), then through paddock. About 1 min.

use std::time::Duration;

use anyhow::{Result, bail};
use http::Method;
use paddock_e2e::http::Tls;
use paddock_e2e::{ControlPlane, Paddock, StoreKind};

const ROUNDS: usize = 30;
const TIMEOUT: Duration = Duration::from_secs(30);

/// Creates namespaces `race-<tag>-<i>` back to back, `ROUNDS` of them, while another loop
/// lists and watches ConfigMaps in all namespaces back to back until the creates are done (so
/// that some fan-outs meet a namespace in the moment between its create and its RoleBindings
/// taking effect); the answers that were not 200/201.
async fn rounds(client: &Tls, tag: &str) -> Vec<String> {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let creator = {
        let (client, tag, done) = (client.clone(), tag.to_owned(), done.clone());
        async move {
            let mut bad = Vec::new();
            for i in 0..ROUNDS {
                let ns = format!(
                    r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"race-{tag}-{i}"}}}}"#
                );
                let json = Some(("application/json", ns.into_bytes()));
                match client
                    .send(Method::POST, "/api/v1/namespaces", json, TIMEOUT)
                    .await
                {
                    Ok((s, _)) if s.as_u16() == 201 => {}
                    Ok((s, b)) => bad.push(format!(
                        "create namespace {i}: {s} {}",
                        String::from_utf8_lossy(&b)
                    )),
                    Err(e) => bad.push(format!("create namespace {i}: {e}")),
                }
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            bad
        }
    };
    let reader = {
        let (client, done) = (client.clone(), done.clone());
        async move {
            let mut bad = Vec::new();
            let mut reads = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let list = client
                    .send(Method::GET, "/api/v1/configmaps", None, TIMEOUT)
                    .await;
                // The watch's answer is decided at its head; it is dropped then.
                let watch = match tokio::time::timeout(
                    TIMEOUT,
                    client.start(Method::GET, "/api/v1/configmaps?watch=1", None),
                )
                .await
                {
                    Ok(Ok(resp)) if resp.status() == 200 => Ok((resp.status(), Default::default())),
                    Ok(Ok(resp)) => {
                        use http_body_util::BodyExt;
                        let status = resp.status();
                        let body = resp.into_body().collect().await.map(|b| b.to_bytes());
                        Ok((status, body.unwrap_or_default()))
                    }
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("no answer head within the timeout".to_owned()),
                };
                let list = list.map_err(|e| e.to_string());
                reads += 2;
                for (what, r) in [("list", list), ("watch", watch)] {
                    match r {
                        Ok((s, _)) if s.as_u16() == 200 => {}
                        Ok((s, b)) => bad.push(format!(
                            "{what}: {s} {}",
                            String::from_utf8_lossy(&b)
                                .chars()
                                .take(300)
                                .collect::<String>()
                        )),
                        Err(e) => bad.push(format!("{what}: {e}")),
                    }
                }
            }
            (reads, bad)
        }
    };
    let (mut bad, (reads, read_bad)) = tokio::join!(creator, reader);
    println!("  {tag}: {reads} cluster-wide reads during {ROUNDS} namespace creates");
    bad.extend(read_bad);
    bad
}

#[test]
fn cluster_wide_reads_right_after_a_namespace_create_are_answered() -> Result<()> {
    let cp = ControlPlane::start()?;
    let p = Paddock::start(&cp, StoreKind::Etcd)?;
    let kc = p.tenant("racers")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let direct = Tls::from_kubeconfig(&cp.admin_kubeconfig(), None)?;
    let tenant = Tls::from_kubeconfig(&kc, None)?;
    let direct_bad = rt.block_on(rounds(&direct, "d"));
    let through_bad = rt.block_on(rounds(&tenant, "p"));
    println!("\n== {ROUNDS} namespace creates beside cluster-wide lists and watches ==");
    println!("  direct: {} not 200 {:?}", direct_bad.len(), direct_bad);
    println!(
        "  through paddock: {} not 200 {:?}",
        through_bad.len(),
        through_bad
    );
    if !direct_bad.is_empty() {
        bail!("the control failed straight at the apiserver: {direct_bad:?}");
    }
    if !through_bad.is_empty() {
        bail!(
            "{} answers through paddock were not 200 (a cluster admin gets 200):\n  {}",
            through_bad.len(),
            through_bad.join("\n  ")
        );
    }
    Ok(())
}
