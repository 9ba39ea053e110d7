//! Tests of the etcd backend against a real etcd started by the test itself (127.0.0.1, free
//! ports, temporary data dir, `--unsafe-no-fsync`). The binary is taken from
//! `PADDOCK_ETCD_BIN`, else `~/.cache/paddock-testbed/etcd-v3.5.35/bin/etcd`, else `etcd` on
//! PATH. If none exists the tests are skipped with a message, unless `PADDOCK_REQUIRE_ETCD`
//! is set (CI), where a missing etcd fails them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use paddock_core::TenantId;
use paddock_store::{CertRecord, Store, StoreError, TenantPhase, TenantRecord};

const ETCD_VERSION_DIR: &str = "etcd-v3.5.35";

fn find_etcd() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PADDOCK_ETCD_BIN") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    if let Some(h) = std::env::var_os("HOME") {
        let p = PathBuf::from(h)
            .join(".cache/paddock-testbed")
            .join(ETCD_VERSION_DIR)
            .join("bin/etcd");
        if p.is_file() {
            return Some(p);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("etcd"))
        .find(|p| p.is_file())
}

/// The etcd binary, or None (skip) when it is missing and not required.
fn etcd_bin(test: &str) -> Option<PathBuf> {
    match find_etcd() {
        Some(p) => Some(p),
        None if std::env::var_os("PADDOCK_REQUIRE_ETCD").is_some() => {
            panic!(
                "{test}: etcd binary not found (PADDOCK_ETCD_BIN, ~/.cache/paddock-testbed/{ETCD_VERSION_DIR}/bin/etcd, PATH) and PADDOCK_REQUIRE_ETCD is set"
            )
        }
        None => {
            eprintln!(
                "SKIP {test}: etcd binary not found (set PADDOCK_ETCD_BIN or build it into ~/.cache/paddock-testbed/{ETCD_VERSION_DIR}/bin/etcd; set PADDOCK_REQUIRE_ETCD to make this a failure)"
            );
            None
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One etcd member on loopback; killed on drop.
struct Etcd {
    bin: PathBuf,
    data: tempfile::TempDir,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

impl Etcd {
    async fn start(bin: &Path) -> Etcd {
        let mut e = Etcd {
            bin: bin.to_path_buf(),
            data: tempfile::tempdir().unwrap(),
            client_port: free_port(),
            peer_port: free_port(),
            child: None,
        };
        // free_port() releases the port before etcd binds it, and the other tests of this
        // binary pick ports at the same time: a lost race is retried on fresh ports.
        for _ in 0..5 {
            match e.try_spawn().await {
                Ok(()) => return e,
                Err(log) if log.contains("address already in use") => {
                    e.client_port = free_port();
                    e.peer_port = free_port();
                }
                Err(log) => panic!("{log}"),
            }
        }
        panic!("etcd: no free ports after 5 attempts");
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    async fn spawn(&mut self) {
        if let Err(log) = self.try_spawn().await {
            panic!("{log}");
        }
    }

    async fn try_spawn(&mut self) -> Result<(), String> {
        assert!(self.child.is_none());
        let client = format!("http://127.0.0.1:{}", self.client_port);
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::File::create(self.data.path().join("etcd.log")).unwrap();
        let child = Command::new(&self.bin)
            .arg("--name=test")
            .arg(format!(
                "--data-dir={}",
                self.data.path().join("data").display()
            ))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=test={peer}"))
            .arg("--unsafe-no-fsync")
            .arg("--log-level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        self.wait_ready().await
    }

    /// Err with etcd's log when it exited before becoming ready.
    async fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                let log =
                    std::fs::read_to_string(self.data.path().join("etcd.log")).unwrap_or_default();
                self.child = None;
                return Err(format!("etcd exited early ({st}):\n{log}"));
            }
            let ok = tokio::time::timeout(Duration::from_secs(2), async {
                let mut c = etcd_client::Client::connect([self.endpoint()], None).await?;
                c.get("health-probe", None).await
            })
            .await;
            if matches!(ok, Ok(Ok(_))) {
                return Ok(());
            }
            assert!(Instant::now() < deadline, "etcd did not become ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sends a signal (STOP/CONT) to our etcd process, by pid.
    fn signal(&self, sig: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        let st = Command::new("kill")
            .args([format!("-{sig}"), pid])
            .status()
            .unwrap();
        assert!(st.success());
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // a stopped process must be continued to die cleanly
            let _ = Command::new("kill")
                .args(["-CONT".to_string(), c.id().to_string()])
                .status();
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
    }
}

fn tenant(id: &str) -> TenantRecord {
    TenantRecord::new(TenantId::parse(id).unwrap(), format!("Tenant {id}"))
}

fn cert(serial: &str, t: &str) -> CertRecord {
    CertRecord {
        serial_hex: serial.into(),
        tenant: Some(TenantId::parse(t).unwrap()),
        user: "alice".into(),
        groups: vec!["devs".into()],
        not_after: "2999-01-01T00:00:00Z".into(),
        revoked: false,
        revoked_at: None,
    }
}

/// Polls `f` every 10 ms until true or `limit`; returns the time it took.
async fn within(limit: Duration, what: &str, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    loop {
        if f() {
            return start.elapsed();
        }
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_see_each_others_writes() {
    let Some(bin) = etcd_bin("two_replicas_see_each_others_writes") else {
        return;
    };
    let etcd = Etcd::start(&bin).await;
    let eps = vec![etcd.endpoint()];
    let a = Store::open_etcd(&eps, "/paddock").await.unwrap();
    let b = Store::open_etcd(&eps, "/paddock/").await.unwrap();
    assert_eq!(a.backend_name(), "etcd");
    let (ca, cb) = (a.cache(), b.cache());
    assert!(ca.is_synced() && cb.is_synced());
    assert!(ca.tenants().is_empty());

    // A creates; A reads its own write from its cache at once, B within 1 s
    a.create_tenant(&tenant("foofoo")).await.unwrap();
    assert!(ca.tenant("foofoo").is_some());
    let t = within(Duration::from_secs(1), "B sees create", || {
        cb.tenant("foofoo").is_some()
    })
    .await;
    eprintln!("create visible in other replica after {t:?}");

    let err = b.create_tenant(&tenant("foofoo")).await.unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists(_)), "{err}");

    // B updates, A sees
    let mut rx = ca.subscribe();
    rx.borrow_and_update();
    let mut t2 = tenant("foofoo");
    t2.phase = TenantPhase::Suspended;
    t2.generation = 2;
    b.put_tenant(&t2).await.unwrap();
    within(Duration::from_secs(1), "A sees update", || {
        ca.tenant("foofoo")
            .is_some_and(|t| t.phase == TenantPhase::Suspended)
    })
    .await;
    // The cache's map and its change signal are updated one after the other: the signal may
    // follow the map by a moment, so it is awaited (bounded), not sampled.
    assert!(
        tokio::time::timeout(Duration::from_secs(1), rx.changed())
            .await
            .is_ok_and(|r| r.is_ok()),
        "subscribe() bumps on changes"
    );
    assert_eq!(a.get_tenant("foofoo").await.unwrap(), Some(t2.clone()));
    let err = a.put_tenant(&tenant("nonexi")).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err}");

    // a third replica opened later loads the state
    let c = Store::open_etcd(&eps, "/paddock").await.unwrap();
    assert_eq!(
        c.cache().tenant("foofoo").unwrap().phase,
        TenantPhase::Suspended
    );
    // another prefix is another store
    let other = Store::open_etcd(&eps, "/other").await.unwrap();
    assert!(other.cache().tenant("foofoo").is_none());
    assert!(other.get_tenant("foofoo").await.unwrap().is_none());

    // A deletes, B sees
    a.delete_tenant("foofoo").await.unwrap();
    within(Duration::from_secs(1), "B sees delete", || {
        cb.tenant("foofoo").is_none()
    })
    .await;
    let err = b.delete_tenant("foofoo").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err}");
    assert!(b.get_tenant("foofoo").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_reaches_the_other_replica_within_a_second() {
    let Some(bin) = etcd_bin("revocation_reaches_the_other_replica_within_a_second") else {
        return;
    };
    let etcd = Etcd::start(&bin).await;
    let eps = vec![etcd.endpoint()];
    let a = Store::open_etcd(&eps, "/paddock").await.unwrap();
    let b = Store::open_etcd(&eps, "/paddock").await.unwrap();
    let ca = a.cache();

    a.record_cert(&cert("0A1B2C", "foofoo")).await.unwrap();
    a.record_cert(&cert("0d0e0f", "barbar")).await.unwrap();
    assert!(!ca.is_revoked("0a1b2c"));

    let err = b.revoke_cert("ffffff").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err}");

    let start = Instant::now();
    let rec = b.revoke_cert("0a1b2c").await.unwrap();
    assert!(rec.revoked && rec.revoked_at.is_some());
    assert!(b.cache().is_revoked("0a1b2c"), "own cache has it on return");
    within(Duration::from_secs(1), "A sees revocation", || {
        ca.is_revoked("0a1b2c")
    })
    .await;
    eprintln!(
        "revocation visible in other replica after {:?}",
        start.elapsed()
    );
    assert!(!ca.is_revoked("0d0e0f"));
    let again = a.revoke_cert("0A1B2C").await.unwrap();
    assert_eq!(again.revoked_at, rec.revoked_at);

    let foo = a.list_certs(Some("foofoo")).await.unwrap();
    assert_eq!(foo.len(), 1);
    assert!(foo[0].revoked);
    assert_eq!(foo[0].serial_hex, "0a1b2c");
    assert_eq!(a.list_certs(None).await.unwrap().len(), 2);

    // a replica opened later knows the revocation from its initial list
    let c = Store::open_etcd(&eps, "/paddock").await.unwrap();
    assert!(c.cache().is_revoked("0a1b2c"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_outage_cache_serves_writes_fail_fast_then_recover() {
    let Some(bin) = etcd_bin("etcd_outage_cache_serves_writes_fail_fast_then_recover") else {
        return;
    };
    let mut etcd = Etcd::start(&bin).await;
    let eps = vec![etcd.endpoint()];
    let a = Store::open_etcd(&eps, "/paddock").await.unwrap();
    let ca = a.cache();
    a.create_tenant(&tenant("foofoo")).await.unwrap();
    a.record_cert(&cert("0a0a", "foofoo")).await.unwrap();
    assert!(ca.is_connected());

    etcd.stop();

    // the cache keeps answering
    assert!(ca.tenant("foofoo").is_some());
    assert!(ca.is_synced());
    within(Duration::from_secs(5), "watch notices the outage", || {
        !ca.is_connected()
    })
    .await;
    assert!(ca.tenant("foofoo").is_some());

    // writes and backend reads fail fast with a clear message, and write nothing
    for _ in 0..2 {
        let start = Instant::now();
        let err = a.create_tenant(&tenant("barbar")).await.unwrap_err();
        let took = start.elapsed();
        eprintln!("create_tenant with etcd down failed after {took:?}: {err}");
        assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
        assert!(err.to_string().contains("etcd at"), "{err}");
        assert!(err.to_string().contains("unreachable"), "{err}");
        assert!(took < Duration::from_secs(4), "took {took:?}");
    }
    let err = a.get_tenant("foofoo").await.unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    let err = a.revoke_cert("0a0a").await.unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(!ca.is_revoked("0a0a"));

    // opening a new store against the dead etcd fails fast too
    let start = Instant::now();
    let err = Store::open_etcd(&eps, "/paddock").await.unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(6));

    // restart on the same data dir
    etcd.spawn().await;
    let start = Instant::now();
    loop {
        match a.create_tenant(&tenant("barbar")).await {
            Ok(()) => break,
            Err(StoreError::Unavailable(e)) => {
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "writes do not recover: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    eprintln!("writes recovered {:?} after restart", start.elapsed());
    // nothing of the failed writes leaked; the data survived
    assert!(a.get_tenant("foofoo").await.unwrap().is_some());

    // another replica writes; A's cache catches up through the re-established watch
    let b = Store::open_etcd(&eps, "/paddock").await.unwrap();
    b.revoke_cert("0a0a").await.unwrap();
    b.delete_tenant("foofoo").await.unwrap();
    within(
        Duration::from_secs(10),
        "A catches up after restart",
        || ca.is_revoked("0a0a") && ca.tenant("foofoo").is_none() && ca.tenant("barbar").is_some(),
    )
    .await;
    within(
        Duration::from_secs(10),
        "A's watch is connected again",
        || ca.is_connected(),
    )
    .await;
    // and from now on within a second
    b.create_tenant(&tenant("bazbaz")).await.unwrap();
    within(Duration::from_secs(1), "A sees new writes", || {
        ca.tenant("bazbaz").is_some()
    })
    .await;
}

/// An etcd that accepts connections but never answers (SIGSTOP): writes still fail within
/// the request deadline, the cache serves, and everything resumes after SIGCONT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_etcd_writes_time_out() {
    let Some(bin) = etcd_bin("frozen_etcd_writes_time_out") else {
        return;
    };
    let etcd = Etcd::start(&bin).await;
    let eps = vec![etcd.endpoint()];
    let a = Store::open_etcd(&eps, "/paddock").await.unwrap();
    let b = Store::open_etcd(&eps, "/paddock").await.unwrap();
    a.create_tenant(&tenant("foofoo")).await.unwrap();

    etcd.signal("STOP");
    let start = Instant::now();
    let err = a.create_tenant(&tenant("barbar")).await.unwrap_err();
    let took = start.elapsed();
    eprintln!("create_tenant with etcd frozen failed after {took:?}: {err}");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert!(a.cache().tenant("foofoo").is_some());
    etcd.signal("CONT");

    // the failed create may or may not have reached etcd before the freeze was noticed;
    // either way the store answers consistently afterwards
    let start = Instant::now();
    loop {
        match b.create_tenant(&tenant("bazbaz")).await {
            Ok(()) => break,
            Err(StoreError::Unavailable(e)) => {
                assert!(start.elapsed() < Duration::from_secs(20), "{e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    let ca = a.cache();
    within(
        Duration::from_secs(10),
        "A sees B's write after the freeze",
        || ca.tenant("bazbaz").is_some(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_stores_are_listed_in_pages() {
    let Some(bin) = etcd_bin("large_stores_are_listed_in_pages") else {
        return;
    };
    let etcd = Etcd::start(&bin).await;
    let eps = vec![etcd.endpoint()];
    // write 1,234 certificate records and 700 tenants behind the store's back
    let mut raw = etcd_client::Client::connect(&eps, None).await.unwrap();
    for i in 0..1234u32 {
        let mut c = cert(&format!("{:06x}", i + 1), "foofoo");
        c.revoked = i % 100 == 7;
        raw.put(
            format!("/paddock/certs/{}", c.serial_hex),
            serde_json::to_vec(&c).unwrap(),
            None,
        )
        .await
        .unwrap();
    }
    for i in 0..700u32 {
        let id = format!("t{i:05}");
        raw.put(
            format!("/paddock/tenants/{id}"),
            serde_json::to_vec(&tenant(&id)).unwrap(),
            None,
        )
        .await
        .unwrap();
    }
    // garbage is skipped, not fatal
    raw.put("/paddock/tenants/zzzzzz", "not json", None)
        .await
        .unwrap();
    let s = Store::open_etcd(&eps, "/paddock").await.unwrap();
    let cache = s.cache();
    assert_eq!(cache.tenants().len(), 700);
    assert_eq!(cache.snapshot().revoked.len(), 13);
    assert!(cache.is_revoked("000008"));
    assert!(!cache.is_revoked("000009"));
    let all = s.list_certs(None).await.unwrap();
    assert_eq!(all.len(), 1234);
    assert!(all.windows(2).all(|w| w[0].serial_hex < w[1].serial_hex));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_against_nothing_fails_fast() {
    // no etcd needed: a port nobody listens on
    let eps = vec![format!("http://127.0.0.1:{}", free_port())];
    let start = Instant::now();
    let err = Store::open_etcd(&eps, "/paddock").await.unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(err.to_string().contains(&eps[0]), "{err}");
    assert!(start.elapsed() < Duration::from_secs(6));
    let err = Store::open_etcd(&[], "/paddock").await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_deletes_long_expired_certificates_on_every_replica() {
    let Some(bin) = etcd_bin("prune_deletes_long_expired_certificates_on_every_replica") else {
        return;
    };
    let etcd = Etcd::start(&bin).await;
    let eps = vec![etcd.endpoint()];
    let a = Store::open_etcd(&eps, "/paddock").await.unwrap();
    let b = Store::open_etcd(&eps, "/paddock").await.unwrap();
    let mut old = cert("0a01", "foofoo");
    old.not_after = "2020-01-01T00:00:00Z".into();
    let mut yesterday = cert("0a02", "foofoo");
    let t = time::OffsetDateTime::now_utc() - time::Duration::days(1);
    yesterday.not_after = t
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    for c in [&old, &yesterday, &cert("0a03", "foofoo")] {
        a.record_cert(c).await.unwrap();
        a.revoke_cert(&c.serial_hex).await.unwrap();
    }
    within(Duration::from_secs(1), "B sees the revocations", || {
        b.cache().is_revoked("0a03")
    })
    .await;
    let week = Duration::from_secs(7 * 86400);
    let now = std::time::SystemTime::now();
    // both replicas prune at once: each record is deleted once, by one of them
    let (na, nb) = tokio::join!(a.prune(now, week), b.prune(now, week));
    assert_eq!(na.unwrap() + nb.unwrap(), 1);
    let left: Vec<String> = a
        .list_certs(None)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.serial_hex)
        .collect();
    assert_eq!(left, vec!["0a02".to_string(), "0a03".to_string()]);
    within(
        Duration::from_secs(1),
        "B's cache drops the pruned revocation",
        || !b.cache().is_revoked("0a01") && b.cache().is_revoked("0a02"),
    )
    .await;
    assert_eq!(a.prune(now, week).await.unwrap(), 0);
    assert_eq!(a.prune(now, Duration::ZERO).await.unwrap(), 1);
    assert!(!a.cache().is_revoked("0a02") && a.cache().is_revoked("0a03"));
}

/// One create through the ledger, as the admission webhook does it: read, decide, swap;
/// retried on a lost swap. Returns whether it was admitted.
async fn admit_one(store: &Store, tid: &TenantId, uid: String) -> bool {
    use paddock_core::quota::{Admission, Milli, admit, parse_hard};
    let hard = parse_hard(&[("pods".to_string(), "20".to_string())].into()).unwrap();
    let charge = [("pods".to_string(), Milli::units(1))].into();
    loop {
        let cur = store.get_quota_ledger(tid).await.unwrap();
        match admit(&hard, &cur.ledger, &uid, "pods x/y", &charge, 1) {
            Admission::Reserve(next) => {
                if store
                    .swap_quota_ledger(tid, &next, cur.version)
                    .await
                    .unwrap()
                {
                    return true;
                }
            }
            Admission::Exceeded(_) => return false,
            Admission::Untouched => return true,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_ledger_swaps_are_exact_across_replicas() {
    let Some(bin) = etcd_bin("quota_ledger_swaps_are_exact_across_replicas") else {
        return;
    };
    let etcd = Etcd::start(&bin).await;
    let eps = vec![etcd.endpoint()];
    let a = std::sync::Arc::new(Store::open_etcd(&eps, "/paddock").await.unwrap());
    let b = std::sync::Arc::new(Store::open_etcd(&eps, "/paddock").await.unwrap());
    let tid = TenantId::parse("foofoo").unwrap();
    assert_eq!(a.get_quota_ledger(&tid).await.unwrap().version, 0);
    // 50 creates at once, half through each replica, against `pods: 20`
    let mut tasks = Vec::new();
    for i in 0..50 {
        let s = if i % 2 == 0 { a.clone() } else { b.clone() };
        let tid = tid.clone();
        tasks.push(tokio::spawn(async move {
            admit_one(&s, &tid, format!("uid-{i}")).await
        }));
    }
    let mut admitted = 0;
    for t in tasks {
        admitted += usize::from(t.await.unwrap());
    }
    assert_eq!(admitted, 20);
    let l = b.get_quota_ledger(&tid).await.unwrap();
    assert_eq!(l.ledger.reservations.len(), 20);
    // a stale version never wins
    assert!(
        !a.swap_quota_ledger(&tid, &l.ledger, l.version - 1)
            .await
            .unwrap()
    );
    a.delete_quota_ledger(&tid).await.unwrap();
    assert_eq!(b.get_quota_ledger(&tid).await.unwrap().version, 0);
    // the cache ignores ledger keys: no tenant appeared
    assert!(a.cache().tenants().is_empty());
}

/// The conditional writes of claims, namespace placement, templates and clusters
/// (etcd_txn.rs): the first writer wins, a stale version loses, a create does not overwrite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_writes() {
    let Some(bin) = etcd_bin("conditional_writes") else {
        return;
    };
    let etcd = Etcd::start(&bin).await;
    let s = Store::open_etcd(&[etcd.endpoint()], "/paddock")
        .await
        .unwrap();

    assert_eq!(
        s.claim("ingress-host", "a.example", "acme01")
            .await
            .unwrap(),
        "acme01"
    );
    assert_eq!(
        s.claim("ingress-host", "a.example", "other1")
            .await
            .unwrap(),
        "acme01"
    );
    let entries = s.list_claims("ingress-host").await.unwrap();
    assert_eq!(entries.len(), 1);
    let mut stale = entries[0].clone();
    stale.version -= 1;
    assert!(!s.release_claim("ingress-host", &stale).await.unwrap());
    assert!(s.release_claim("ingress-host", &entries[0]).await.unwrap());
    s.claim("ingress-host", "b.example", "acme01")
        .await
        .unwrap();
    assert_eq!(s.release_claims("acme01").await.unwrap(), 1);

    assert_eq!(
        s.place_namespace("acme01", "web", "east").await.unwrap(),
        "east"
    );
    assert_eq!(
        s.place_namespace("acme01", "web", "west").await.unwrap(),
        "east"
    );

    let t = paddock_core::templates::NamespaceTemplate {
        name: "netpol".into(),
        mandatory: true,
        tenants: vec![],
        manifests: vec![],
        generation: 1,
        created: String::new(),
        builtin: false,
    };
    assert!(s.swap_template(&t, 0).await.unwrap());
    assert!(
        !s.swap_template(&t, 0).await.unwrap(),
        "create only if absent"
    );
    let (_, v) = s.get_template("netpol").await.unwrap().unwrap();
    assert!(!s.delete_template("netpol", v - 1).await.unwrap());
    assert!(s.delete_template("netpol", v).await.unwrap());

    let c = paddock_store::ClusterRecord {
        name: "east".into(),
        server: "https://127.0.0.1:6443".into(),
        ..Default::default()
    };
    s.create_cluster(&c).await.unwrap();
    let again = s.create_cluster(&c).await.unwrap_err();
    assert!(matches!(again, StoreError::AlreadyExists(_)), "{again}");
    s.delete_cluster("east").await.unwrap();
    let gone = s.delete_cluster("east").await.unwrap_err();
    assert!(matches!(gone, StoreError::NotFound(_)), "{gone}");
}
