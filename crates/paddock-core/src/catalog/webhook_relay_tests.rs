#![allow(clippy::unwrap_used)]
use super::*;

fn target(path: Option<&str>, ca: &[u8]) -> RelayTarget {
    RelayTarget {
        tenant: TenantId::parse("foofoo").unwrap(),
        namespace: "cert-manager".into(),
        name: "cert-manager-webhook".into(),
        port: 443,
        path: path.map(str::to_owned),
        ca_bundle: ca.to_vec(),
    }
}

#[test]
fn a_target_reads_back_from_its_path() {
    let big = vec![b'x'; 1200];
    for path in [
        None,
        Some("/"),
        Some("/mutate"),
        Some("/a/b/"),
        Some("/v1.a-b"),
    ] {
        for ca in [
            &b""[..],
            b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
            &big,
        ] {
            let t = target(path, ca);
            let p = t.to_path();
            assert_eq!(RelayTarget::parse(&p).unwrap(), t, "{p}");
            // behind a prefix of paddock's admission URL too
            assert_eq!(RelayTarget::parse(&format!("/base{p}")).unwrap(), t);
        }
    }
}

#[test]
fn every_segment_is_a_dns_subdomain() {
    // the apiserver demands it of a service path
    let t = target(Some("/mutate"), &[0xAB; 3000]);
    let p = t.to_path();
    assert!(p.len() < 7000, "{}", p.len());
    for seg in p.trim_start_matches('/').split('/') {
        assert!(!seg.is_empty() && seg.len() <= 253, "{seg}");
        assert!(
            seg.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'),
            "{seg}"
        );
    }
}

#[test]
fn malformed_paths_are_refused() {
    for p in [
        "/admission/mutate",
        "/tenant-webhook/v1/",
        "/tenant-webhook/v1/foofoo/ns/name/443",
        "/tenant-webhook/v1/FOO/ns/name/443/ca0",
        "/tenant-webhook/v1/foofoo/ns/name/99999/ca0",
        "/tenant-webhook/v1/foofoo/ns/name/443/ca2/ab",
        "/tenant-webhook/v1/foofoo/ns/name/443/ca1/zz",
        "/tenant-webhook/v1/foofoo//name/443/ca0",
        "/tenant-webhook/v1/foofoo/ns/name/443/x0",
    ] {
        assert!(RelayTarget::parse(p).is_err(), "{p}");
    }
}

#[test]
fn the_tenant_sees_its_own_client_config() {
    let t = target(Some("/mutate"), b"PEM");
    assert_eq!(t.server_name(), "cert-manager-webhook.cert-manager.svc");
    assert_eq!(t.upstream_namespace(), "foofoo-cert-manager");
    assert_eq!(
        Value::Object(t.tenant_client_config()),
        json!({"service": {"namespace": "cert-manager", "name": "cert-manager-webhook", "port": 443, "path": "/mutate"}, "caBundle": "UEVN"})
    );
    let none = target(None, b"");
    assert_eq!(
        Value::Object(none.tenant_client_config()),
        json!({"service": {"namespace": "cert-manager", "name": "cert-manager-webhook", "port": 443}})
    );
}

#[test]
fn a_service_url_becomes_a_service_reference() {
    let cc = |url| paddock_client_config(url, "/admission/validate", "PEM");
    assert_eq!(
        cc("https://paddock.paddock.svc:9443")["service"],
        json!({"namespace": "paddock", "name": "paddock", "port": 9443, "path": "/admission/validate"})
    );
    let s = cc("https://hook.ns.svc/base/");
    assert_eq!(s["service"]["port"], 443);
    assert_eq!(s["service"]["path"], "/base/admission/validate");
    assert!(s.get("url").is_none());
    assert_eq!(s["caBundle"], "UEVN");
    // anything else stays a URL
    for url in [
        "https://paddock.example.com:9443",
        "https://a.b.svc.cluster.local:443",
        "https://10.0.0.1:9443",
        "https://x.svc:443",
        "https://paddock.paddock.svc:notaport",
    ] {
        let c = cc(url);
        assert!(c.get("service").is_none(), "{url}: {c}");
        assert_eq!(c["url"], format!("{url}/admission/validate"));
    }
}

#[test]
fn a_copy_for_a_cluster_without_the_relay_names_the_tenants_service_upstream() {
    let t = target(Some("/validate"), b"PEM");
    let relayed = paddock_client_config(
        "https://paddock-admission.paddock-system.svc:443",
        &t.to_path(),
        "PADDOCK CA",
    );
    let mut obj = json!({"webhooks": [
        {"name": "a.example.com", "clientConfig": relayed},
        {"name": "b.example.com", "clientConfig": {"service": {"namespace": "foofoo-web", "name": "hook", "port": 443}}}
    ]});
    let untouched = obj["webhooks"][1].clone();
    assert!(unrelay_configuration(&mut obj));
    assert_eq!(
        obj["webhooks"][0]["clientConfig"],
        json!({"service": {"namespace": "foofoo-cert-manager", "name": "cert-manager-webhook", "port": 443, "path": "/validate"},
               "caBundle": b64_encode(b"PEM")})
    );
    assert_eq!(obj["webhooks"][1], untouched);
    // Nothing relayed: nothing changed.
    assert!(!unrelay_configuration(&mut obj));
    assert!(!unrelay_configuration(&mut json!({"kind": "ClusterRole"})));
}
