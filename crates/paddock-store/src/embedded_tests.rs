//! The embedded store's tests.
use super::*;
use crate::{Store, TenantPhase};
use paddock_core::TenantId;

fn tenant(id: &str) -> TenantRecord {
    TenantRecord::new(TenantId::parse(id).unwrap(), format!("Tenant {id}"))
}

fn cert(serial: &str, t: Option<&str>) -> CertRecord {
    CertRecord {
        serial_hex: serial.into(),
        tenant: t.map(|t| TenantId::parse(t).unwrap()),
        user: "alice".into(),
        groups: vec!["devs".into()],
        not_after: "2999-01-01T00:00:00Z".into(),
        revoked: false,
        revoked_at: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_ledger_swaps_are_exact_and_persist() {
    use paddock_core::quota::{Admission, Milli, admit, parse_hard};
    let dir = tempfile::tempdir().unwrap();
    let s = std::sync::Arc::new(Store::open_embedded(dir.path()).await.unwrap());
    let tid = TenantId::parse("foofoo").unwrap();
    let hard = std::sync::Arc::new(parse_hard(&[("pods".into(), "20".into())].into()).unwrap());
    let mut tasks = Vec::new();
    for i in 0..50 {
        let (s, tid, hard) = (s.clone(), tid.clone(), hard.clone());
        tasks.push(tokio::spawn(async move {
            let charge = [("pods".to_string(), Milli::units(1))].into();
            loop {
                let cur = s.get_quota_ledger(&tid).await.unwrap();
                match admit(&hard, &cur.ledger, &format!("u{i}"), "x", &charge, 1) {
                    Admission::Reserve(n) => {
                        if s.swap_quota_ledger(&tid, &n, cur.version).await.unwrap() {
                            return true;
                        }
                    }
                    _ => return false,
                }
            }
        }));
    }
    let mut admitted = 0;
    for t in tasks {
        admitted += usize::from(t.await.unwrap());
    }
    assert_eq!(admitted, 20);
    // every task has ended: close the store (its lock) and open it again
    drop(std::sync::Arc::try_unwrap(s).unwrap());
    let s = Store::open_embedded(dir.path()).await.unwrap();
    let l = s.get_quota_ledger(&tid).await.unwrap();
    assert_eq!(l.ledger.reservations.len(), 20);
    assert!(
        !s.swap_quota_ledger(&tid, &l.ledger, l.version + 1)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn prune_deletes_only_long_expired_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open_embedded(dir.path()).await.unwrap();
    let mut old = cert("0a", Some("foofoo"));
    old.not_after = "2020-01-01T00:00:00Z".into();
    old.revoked = true;
    let mut recent = cert("0b", None);
    // expired an hour ago: within a day's grace
    let hour_ago = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    recent.not_after = hour_ago
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    recent.revoked = true;
    let valid = cert("0c", Some("foofoo"));
    for c in [&old, &recent, &valid] {
        s.record_cert(c).await.unwrap();
    }
    let day = std::time::Duration::from_secs(86400);
    let now = std::time::SystemTime::now();
    assert_eq!(s.prune(now, day).await.unwrap(), 1);
    let left: Vec<String> = s
        .list_certs(None)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.serial_hex)
        .collect();
    assert_eq!(left, vec!["0b".to_string(), "0c".to_string()]);
    assert!(s.cache().is_revoked("0b"));
    assert!(!s.cache().is_revoked("0a"));
    // again: nothing more; without grace the recent one goes too
    assert_eq!(s.prune(now, day).await.unwrap(), 0);
    assert_eq!(s.prune(now, std::time::Duration::ZERO).await.unwrap(), 1);
    drop(s);
    let s = Store::open_embedded(dir.path()).await.unwrap();
    assert_eq!(s.list_certs(None).await.unwrap().len(), 1);
}

#[tokio::test]
async fn claims_first_wins_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = EmbeddedStore::open(dir.path()).await.unwrap();
        assert_eq!(
            s.claim("ingress-host", "shop.example.com", "acme01")
                .await
                .unwrap(),
            "acme01"
        );
        assert_eq!(
            s.claim("ingress-host", "shop.example.com", "other1")
                .await
                .unwrap(),
            "acme01"
        );
        assert_eq!(
            s.claim("ingress-host", "shop.example.com", "acme01")
                .await
                .unwrap(),
            "acme01"
        );
        assert!(s.claim("ingress-host", "Bad/Key", "acme01").await.is_err());
    }
    let s = EmbeddedStore::open(dir.path()).await.unwrap();
    assert_eq!(
        s.claim("ingress-host", "shop.example.com", "other1")
            .await
            .unwrap(),
        "acme01"
    );
    assert_eq!(s.release_claims("acme01").await.unwrap(), 1);
    assert_eq!(
        s.claim("ingress-host", "shop.example.com", "other1")
            .await
            .unwrap(),
        "other1"
    );
}

#[tokio::test]
async fn one_claim_released_only_while_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(dir.path()).await.unwrap();
    s.claim("ingress-host", "a.example.com", "acme01")
        .await
        .unwrap();
    s.claim("ingress-host", "b.example.com", "acme01")
        .await
        .unwrap();
    let mut seen = s.list_claims("ingress-host").await.unwrap();
    seen.sort_by(|x, y| x.key.cmp(&y.key));
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[0].key.as_str(), seen[0].tenant.as_str()),
        ("a.example.com", "acme01")
    );
    assert!(s.list_claims("other-kind").await.unwrap().is_empty());
    assert!(s.release_claim("ingress-host", &seen[0]).await.unwrap());
    // Released, then taken by another tenant: the stale entry must not release it again.
    s.claim("ingress-host", "a.example.com", "other1")
        .await
        .unwrap();
    assert!(!s.release_claim("ingress-host", &seen[0]).await.unwrap());
    assert_eq!(
        s.claim("ingress-host", "a.example.com", "acme01")
            .await
            .unwrap(),
        "other1"
    );
    assert_eq!(
        s.claim("ingress-host", "b.example.com", "other1")
            .await
            .unwrap(),
        "acme01"
    );
}

#[tokio::test]
async fn tenants_crud() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_embedded(dir.path()).await.unwrap();
    assert_eq!(store.backend_name(), "embedded");
    let cache = store.cache();
    assert!(cache.is_synced());
    assert!(cache.is_connected());
    let mut rx = cache.subscribe();
    rx.borrow_and_update();

    let t = tenant("foofoo");
    store.create_tenant(&t).await.unwrap();
    // the cache is updated synchronously
    assert_eq!(
        cache.tenant("foofoo").unwrap().display_name,
        "Tenant foofoo"
    );
    assert!(rx.has_changed().unwrap());
    let err = store.create_tenant(&t).await.unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists(_)), "{err}");
    assert_eq!(err.to_string(), "tenant foofoo already exists");

    let mut t2 = t.clone();
    t2.phase = TenantPhase::Terminating;
    t2.progress = Some("deleting namespaces".into());
    store.put_tenant(&t2).await.unwrap();
    assert_eq!(
        cache.tenant("foofoo").unwrap().phase,
        TenantPhase::Terminating
    );
    assert_eq!(store.get_tenant("foofoo").await.unwrap(), Some(t2.clone()));

    let err = store.put_tenant(&tenant("barbar")).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err}");
    assert!(store.get_tenant("barbar").await.unwrap().is_none());

    store.create_tenant(&tenant("barbar")).await.unwrap();
    assert_eq!(
        cache
            .tenants()
            .iter()
            .map(|t| t.id.to_string())
            .collect::<Vec<_>>(),
        vec!["barbar", "foofoo"]
    );
    store.delete_tenant("foofoo").await.unwrap();
    assert!(cache.tenant("foofoo").is_none());
    assert!(store.get_tenant("foofoo").await.unwrap().is_none());
    let err = store.delete_tenant("foofoo").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err}");
    let err = store.delete_tenant("../etc").await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err}");
}

#[tokio::test]
async fn certs_and_revocation() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_embedded(dir.path()).await.unwrap();
    let cache = store.cache();
    store
        .record_cert(&cert("0A0B", Some("foofoo")))
        .await
        .unwrap();
    store
        .record_cert(&cert("0c0d", Some("barbar")))
        .await
        .unwrap();
    store.record_cert(&cert("0e0f", None)).await.unwrap();
    assert!(!cache.is_revoked("0a0b"));

    let err = store.revoke_cert("ffff").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err}");
    let err = store.revoke_cert("zz").await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err}");

    let rec = store.revoke_cert("0a0b").await.unwrap();
    assert!(rec.revoked);
    let at = rec.revoked_at.clone().unwrap();
    assert!(cache.is_revoked("0a0b"));
    assert!(cache.is_revoked("0A0B"));
    assert!(!cache.is_revoked("0c0d"));
    // idempotent
    let again = store.revoke_cert("0a0b").await.unwrap();
    assert_eq!(again.revoked_at.as_deref(), Some(at.as_str()));

    let foo = store.list_certs(Some("foofoo")).await.unwrap();
    assert_eq!(foo.len(), 1);
    assert_eq!(foo[0].serial_hex, "0a0b");
    assert!(foo[0].revoked);
    assert_eq!(store.list_certs(None).await.unwrap().len(), 3);
    assert!(store.list_certs(Some("nobody")).await.unwrap().is_empty());
}

#[tokio::test]
async fn reopen_keeps_data_and_second_open_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open_embedded(dir.path()).await.unwrap();
        store.create_tenant(&tenant("foofoo")).await.unwrap();
        store
            .record_cert(&cert("0a0b", Some("foofoo")))
            .await
            .unwrap();
        store.revoke_cert("0a0b").await.unwrap();

        let err = Store::open_embedded(dir.path()).await.unwrap_err();
        assert!(matches!(err, StoreError::Locked(_)), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("another paddock process"), "{msg}");
        assert!(msg.contains(&std::process::id().to_string()), "{msg}");
    }
    // the lock is released with the store
    let store = Store::open_embedded(dir.path()).await.unwrap();
    let cache = store.cache();
    assert!(cache.tenant("foofoo").is_some());
    assert!(cache.is_revoked("0a0b"));
    assert_eq!(store.list_certs(None).await.unwrap().len(), 1);
    assert!(store.get_tenant("foofoo").await.unwrap().is_some());
    // no temp file left
    assert!(!dir.path().join("store.json.tmp").exists());
}

#[tokio::test]
async fn corrupt_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(FILE), b"{ not json").unwrap();
    let err = Store::open_embedded(dir.path()).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
    assert!(err.to_string().contains("store.json"), "{err}");
}

#[tokio::test]
async fn failed_write_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_embedded(dir.path()).await.unwrap();
    store.create_tenant(&tenant("foofoo")).await.unwrap();
    // a directory where the temp file goes makes the write fail
    fs::create_dir(dir.path().join("store.json.tmp")).unwrap();
    let err = store.create_tenant(&tenant("barbar")).await.unwrap_err();
    assert!(matches!(err, StoreError::Io(_)), "{err}");
    assert!(store.cache().tenant("barbar").is_none());
    assert!(store.get_tenant("barbar").await.unwrap().is_none());
    fs::remove_dir(dir.path().join("store.json.tmp")).unwrap();
    store.create_tenant(&tenant("barbar")).await.unwrap();
    assert!(store.cache().tenant("barbar").is_some());
}
