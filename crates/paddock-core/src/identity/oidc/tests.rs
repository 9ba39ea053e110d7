use serde_json::{Value, json};

use super::claims::check_and_map;
use super::*;
use crate::identity::{As, impersonation};

const ISS: &str = "https://127.0.0.1:8443/";
const NOW: i64 = 1_800_000_000;
const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

fn auth(v: Value) -> JwtAuthenticator {
    let a: JwtAuthenticator = serde_json::from_value(v).expect("authenticator");
    validate(std::slice::from_ref(&a)).expect("valid");
    a
}

fn plain() -> JwtAuthenticator {
    auth(json!({
        "issuer": {"url": ISS, "audiences": ["paddock"], "certificateAuthority": CA},
        "claimMappings": {"username": {"claim": "email", "prefix": ""},
                          "groups": {"claim": "groups", "prefix": ""}}
    }))
}

fn claims(extra: Value) -> Value {
    let mut c = json!({"iss": ISS, "aud": "paddock", "sub": "id1", "email": "alice@example.com",
                       "email_verified": true, "exp": NOW + 600, "iat": NOW - 5, "nbf": NOW - 5});
    if let (Some(m), Value::Object(e)) = (c.as_object_mut(), extra) {
        m.extend(e);
    }
    c
}

#[test]
fn a_good_token_maps_to_the_tenants_user() {
    let u = check_and_map(&plain(), &claims(json!({"groups": ["devs"]})), NOW).unwrap();
    assert_eq!(u.username, "alice@example.com");
    assert_eq!(u.groups, vec!["devs".to_string()]);
    // Absent groups claim: no groups, not an error (as kube-apiserver).
    assert!(
        check_and_map(&plain(), &claims(json!({})), NOW)
            .unwrap()
            .groups
            .is_empty()
    );
}

#[test]
fn standard_claims_are_checked_each_with_a_control() {
    let a = plain();
    let cases = [
        (json!({"exp": NOW}), "expired"),
        (json!({"exp": Value::Null}), "no expiry"),
        (json!({"nbf": NOW + 3600}), "not valid for another"),
        (json!({"iat": NOW + 3600}), "in the future"),
        (json!({"aud": "someone-else"}), "audience"),
        (json!({"aud": ["x", "y"]}), "audience"),
        (json!({"iss": "https://127.0.0.1:8443"}), "issuer"),
        (json!({"email_verified": false}), "email_verified"),
        (json!({"email": 7}), "not a non-empty string"),
    ];
    for (extra, why) in cases {
        let err = check_and_map(&a, &claims(extra.clone()), NOW).unwrap_err();
        assert!(err.0.contains(why), "{extra}: {err}");
    }
    // Controls: within the skew, and an audience list with ours in it.
    check_and_map(
        &a,
        &claims(json!({"nbf": NOW + 30, "aud": ["x", "paddock"]})),
        NOW,
    )
    .unwrap();
}

#[test]
fn reserved_user_names_are_refused_whatever_the_mapping() {
    for name in [
        "system:admin",
        "system:serviceaccount:default:x",
        "paddock:bbbbbb:alice",
    ] {
        let err = check_and_map(&plain(), &claims(json!({"email": name})), NOW).unwrap_err();
        assert!(err.0.contains("reserved"), "{name}: {err}");
    }
}

#[test]
fn injected_groups_stay_inside_the_tenant_upstream() {
    // A mapping that yields system:masters, another tenant's group or paddock's own groups:
    // the identity translation prefixes every one into the tenant, as for certificates.
    let injected = [
        "system:masters",
        "paddock:tenant:bbbbbb",
        "paddock:bbbbbb:admins",
        "bbbbbb-admins",
    ];
    let u = check_and_map(&plain(), &claims(json!({"groups": injected})), NOW).unwrap();
    let t = TenantId::parse("aaaaaa").unwrap();
    for who in [As::Real, As::Shadow] {
        let imp = impersonation(&t, &u.username, &u.groups, who);
        assert!(
            imp.user.contains("paddock:aaaaaa:alice@example.com"),
            "{}",
            imp.user
        );
        for g in &imp.groups {
            let inside = g.starts_with("paddock:aaaaaa:")
                || g.starts_with("paddock:cluster:aaaaaa:")
                || [
                    "paddock:tenant:aaaaaa",
                    "paddock:tenants",
                    "system:authenticated",
                ]
                .contains(&g.as_str());
            assert!(inside, "{who:?}: group {g} leaves the tenant");
        }
        assert!(
            !imp.groups
                .iter()
                .any(|g| g == "system:masters" || g == "paddock:tenant:bbbbbb")
        );
    }
}

#[test]
fn cel_mappings_and_rules_as_kube_apiserver() {
    let a = auth(json!({
        "issuer": {"url": ISS, "audiences": ["paddock"], "certificateAuthority": CA},
        "claimValidationRules": [{"expression": "claims.email.endsWith('@example.com')", "message": "example.com only"}],
        "claimMappings": {
            "username": {"expression": "'b:' + claims.sub"},
            "groups": {"expression": "claims.email.startsWith('carol') ? ['leads', 'devs'] : ['devs']"},
            "uid": {"claim": "sub"}
        },
        "userValidationRules": [{"expression": "!user.username.startsWith('b:evil')", "message": "no evil"}]
    }));
    let u = check_and_map(&a, &claims(json!({"email": "carol@example.com"})), NOW).unwrap();
    assert_eq!(
        (u.username.as_str(), u.groups.len(), u.uid.as_deref()),
        ("b:id1", 2, Some("id1"))
    );
    let err = check_and_map(&a, &claims(json!({"email": "mallory@evil.com"})), NOW).unwrap_err();
    assert!(err.0.contains("example.com only"), "{err}");
    let err = check_and_map(&a, &claims(json!({"sub": "evil1"})), NOW).unwrap_err();
    assert!(err.0.contains("no evil"), "{err}");
    // A required claim value.
    let b = auth(json!({
        "issuer": {"url": ISS, "audiences": ["paddock"], "certificateAuthority": CA},
        "claimValidationRules": [{"claim": "hd", "requiredValue": "example.com"}],
        "claimMappings": {"username": {"claim": "sub", "prefix": "oidc:"}}
    }));
    assert!(check_and_map(&b, &claims(json!({})), NOW).is_err());
    assert_eq!(
        check_and_map(&b, &claims(json!({"hd": "example.com"})), NOW)
            .unwrap()
            .username,
        "oidc:id1"
    );
}

#[test]
fn configurations_are_validated_like_the_apiservers() {
    let bad = [
        json!({"issuer": {"url": "http://x", "audiences": ["a"], "certificateAuthority": CA}, "claimMappings": {"username": {"claim": "sub", "prefix": ""}}}),
        json!({"issuer": {"url": "https://x/?q", "audiences": ["a"], "certificateAuthority": CA}, "claimMappings": {"username": {"claim": "sub", "prefix": ""}}}),
        json!({"issuer": {"url": "https://x", "audiences": [], "certificateAuthority": CA}, "claimMappings": {"username": {"claim": "sub", "prefix": ""}}}),
        json!({"issuer": {"url": "https://x", "audiences": ["a"], "certificateAuthority": CA}, "claimMappings": {"username": {"claim": "sub"}}}),
        json!({"issuer": {"url": "https://x", "audiences": ["a"], "certificateAuthority": CA}, "claimMappings": {"username": {"expression": "claims.sub", "prefix": "x"}}}),
        json!({"issuer": {"url": "https://x", "audiences": ["a"], "certificateAuthority": CA}, "claimMappings": {"username": {"expression": "claims.sub +"}}}),
        json!({"issuer": {"url": "https://x", "audiences": ["a"], "certificateAuthority": "nope"}, "claimMappings": {"username": {"claim": "sub", "prefix": ""}}}),
    ];
    for b in bad {
        let a: Result<JwtAuthenticator, _> = serde_json::from_value(b.clone());
        let ok = a.map(|a| validate(&[a]).is_ok()).unwrap_or(false);
        assert!(!ok, "{b} was accepted");
    }
    let twice = plain();
    assert!(validate(&[twice.clone(), twice]).is_err());
}

fn jws(payload: Value) -> String {
    use base64::Engine as _;
    let e = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.c2ln", e(&json!({"alg": "RS256"})), e(&payload))
}

#[test]
fn tokens_are_told_apart_before_any_upstream_call() {
    let sa =
        jws(json!({"iss": "https://kubernetes.default.svc", "kubernetes.io": {"namespace": "x"}}));
    assert_eq!(token_kind(&sa), TokenKind::ServiceAccount);
    let legacy = jws(json!({"iss": "kubernetes/serviceaccount"}));
    assert_eq!(token_kind(&legacy), TokenKind::ServiceAccount);
    assert_eq!(
        token_kind(&jws(json!({"iss": ISS}))),
        TokenKind::Oidc { issuer: ISS.into() }
    );
    for bad in [
        "abc",
        "a.b.c",
        &jws(json!({"sub": "x"})),
        &jws(json!({"iss": ""})),
    ] {
        assert_eq!(token_kind(bad), TokenKind::Unreadable, "{bad}");
    }
}

#[test]
fn the_server_name_chooses_the_tenant() {
    assert_eq!(context_tenant("localhost"), None);
    assert_eq!(context_tenant("paddock.example.com"), None);
    let t = context_tenant("aaaaaa.tenants.paddock.internal")
        .unwrap()
        .unwrap();
    assert_eq!(t.as_str(), "aaaaaa");
    assert_eq!(tenant_server_name(&t), "aaaaaa.tenants.paddock.internal");
    assert!(
        context_tenant("AAAAAA.Tenants.Paddock.Internal.")
            .unwrap()
            .is_ok()
    );
    for bad in [
        "x.tenants.paddock.internal",
        "a.b.tenants.paddock.internal",
        "tenant.tenants.paddock.internal",
    ] {
        assert!(matches!(context_tenant(bad), Some(Err(_))), "{bad}");
    }
    assert_eq!(context_tenant("xtenants.paddock.internal"), None);
}
