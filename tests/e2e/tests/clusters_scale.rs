//! The multi-cluster scale figure (docs/performance/clusters.md "Several clusters"): paddock's
//! memory and start-up time with two clusters and N tenants placed over both (least loaded), N
//! from `PADDOCK_SCALE_TENANTS` (default 1,000). Slow (tenant creation is most of it), so ignored:
//! `make clusters-scale`, or
//! `cargo test -p paddock-e2e --test clusters_scale -- --ignored --nocapture`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_e2e::{ControlPlane, Paddock, StoreKind};

fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .context("no VmRSS")
}

fn cluster_tenants(p: &Paddock) -> Result<Vec<(String, u64, bool)>> {
    let v: serde_json::Value = serde_json::from_str(&p.cli(&["cluster", "list", "-o", "json"])?)?;
    Ok(v.as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c["metadata"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        c["status"]["tenants"].as_u64().unwrap_or(0),
                        c["status"]["ready"] == true,
                    )
                })
                .collect()
        })
        .unwrap_or_default())
}

#[test]
#[ignore = "slow: creates 1,000 tenants (make clusters-scale)"]
fn two_clusters_thousand_tenants() -> Result<()> {
    let n: usize = std::env::var("PADDOCK_SCALE_TENANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let mut planes = ControlPlane::start_many(2)?;
    let b = planes.pop().context("second plane")?;
    let a = planes.pop().context("first plane")?;
    let p = Paddock::start(&a, StoreKind::Etcd)?;
    let pid = p.pid().context("paddock pid")?;
    // Per-cluster cost: RSS with the default cluster only, then with east registered and ready.
    std::thread::sleep(Duration::from_secs(10));
    let rss_one_cluster = rss_kib(pid)?;
    let kb = b.admin_kubeconfig();
    p.cli(&[
        "cluster",
        "add",
        "east",
        "--from-kubeconfig",
        kb.to_str().context("path")?,
    ])?;
    let t_ready = Instant::now();
    while !cluster_tenants(&p)?.iter().all(|(_, _, ready)| *ready) {
        ensure!(
            t_ready.elapsed() < Duration::from_secs(300),
            "east never became ready"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(10));
    let rss_empty = rss_kib(pid)?;
    eprintln!(
        "SCALE RSS with 1 cluster {rss_one_cluster} KiB, with 2 clusters {rss_empty} KiB (no tenants)"
    );
    let rss_quarter = std::sync::Mutex::new(0u64);

    // N tenants, 4 creations at a time, each placed on the least loaded cluster.
    let next = AtomicUsize::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| -> Result<()> {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| -> Result<()> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            return Ok(());
                        }
                        let id = format!("s{i:05}");
                        let args: Vec<String> = ["tenant", "create", &id]
                            .iter()
                            .map(|s| s.to_string())
                            .collect();
                        // Creation is idempotent (a repair), so one refused by a store or
                        // apiserver starved on a loaded machine is tried again, at most 10 times.
                        let mut tries = 0;
                        loop {
                            let (line, out) = p.cli_raw(&args, Duration::from_secs(120))?;
                            if out.success() {
                                break;
                            }
                            tries += 1;
                            ensure!(tries < 10, "{line} (try {tries}): {}", out.stderr);
                            eprintln!("{line} refused (try {tries}), again: {}", out.stderr.trim());
                            std::thread::sleep(Duration::from_secs(2 * tries));
                        }
                        if i + 1 == n / 4
                            && let Ok(mut q) = rss_quarter.lock()
                        {
                            *q = rss_kib(pid)?;
                            eprintln!(
                                "SCALE RSS after {} tenants {} KiB ({:?})",
                                n / 4,
                                *q,
                                t0.elapsed()
                            );
                        }
                        if (i + 1).is_multiple_of(100) {
                            eprintln!("{} tenants after {:?}", i + 1, t0.elapsed());
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().map_err(|_| anyhow::anyhow!("worker panicked"))??;
        }
        Ok(())
    })?;
    let created = t0.elapsed();
    let placed = cluster_tenants(&p)?;
    let rss_loaded = rss_kib(pid)?;
    let rss_quarter = rss_quarter
        .into_inner()
        .map_err(|_| anyhow::anyhow!("poisoned"))?;
    eprintln!(
        "SCALE RSS after creating {} tenants {rss_quarter} KiB, after {n} {rss_loaded} KiB",
        n / 4
    );
    eprintln!(
        "{n} tenants created in {created:?} ({:.0} ms each, 4 at a time); placed: {placed:?}",
        created.as_millis() as f64 / n as f64
    );
    for (name, count, _) in &placed {
        ensure!(
            (*count as usize) * 2 + 2 >= n,
            "least-loaded placement left cluster {name} with {count} of {n}"
        );
    }

    // Restart: time to /readyz, then to both clusters ready (every tenant repaired on each).
    p.terminate(Duration::from_secs(30))?;
    let to_ready = p.restart()?;
    let t1 = Instant::now();
    loop {
        let c = cluster_tenants(&p)?;
        if c.iter().all(|(_, _, ready)| *ready) {
            break;
        }
        ensure!(
            t1.elapsed() < Duration::from_secs(600),
            "clusters not ready: {c:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let both_ready = to_ready + t1.elapsed();
    // Let the start-up repair of every tenant run its course before reading memory.
    std::thread::sleep(Duration::from_secs(30));
    let pid = p.pid().context("paddock pid")?;
    let rss_restarted = rss_kib(pid)?;
    eprintln!(
        "SCALE clusters=2 tenants={n}: RSS empty {rss_empty} KiB, after creating {rss_loaded} KiB, \
         after restart {rss_restarted} KiB; restart to /readyz {to_ready:?}, to both clusters ready {both_ready:?}"
    );
    Ok(())
}
