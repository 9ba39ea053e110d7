//! Single sign-on per tenant with OpenID Connect (issue 40, acceptance 1, and the isolation
//! cases of its new surfaces, acceptance 3). One control plane, one paddock, a real OIDC
//! provider on loopback with TLS (zitadel/oidc's example provider from the Go module proxy,
//! tests/testbed/oidc-provider) with two test users, and three tenants:
//!
//! - `ssoaaa` trusts the provider: user name = `sub` with prefix `sso:`, groups = the `groups`
//!   claim;
//! - `ssobbb` trusts it too with CEL: user name `'b-' + claims.sub`, groups `['leads']`, and a
//!   claim validation rule that lets only carol in;
//! - `ssoccc` trusts nothing.
//!
//! kubectl signs the users in with the `oidc-login` plugin (int128/kubelogin v1.34.2) through
//! the kubeconfig `paddock user oidc-kubeconfig` writes, the provider's login form driven by
//! tests/testbed/oidc-login.sh in place of a browser. Checked: alice works in A; her token is
//! refused by C (and by the apiserver itself, straight); carol, in A and B, switches contexts
//! and sees each tenant's objects only; expired, wrong-audience, wrong-issuer, tampered and
//! `alg: none` tokens get a 401 `Status`; after the provider's key rotation new tokens work
//! and old-key tokens stop once the old key is gone from its JWKS. Then the isolation cases
//! (tests/e2e/tests/isolation/oidc_cases.rs), each with a control.
//!
//! Prints a table; fails if a check failed.

#[path = "isolation/oidc_cases.rs"]
mod oidc_cases;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use paddock_e2e::oidc::{self, Answer, Provider};
use paddock_e2e::process::Output;
use paddock_e2e::tools::{go_program, kubelogin};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};
use serde_json::{Value, json};

pub const A: &str = "ssoaaa";
pub const B: &str = "ssobbb";
pub const C: &str = "ssoccc";
const USERS: &str = r#"{
 "alice": {"ID": "alice", "Username": "alice", "Password": "alice-pw", "FirstName": "Alice", "LastName": "A",
           "Email": "alice@example.com", "EmailVerified": true, "PreferredLanguage": "en"},
 "carol": {"ID": "carol", "Username": "carol", "Password": "carol-pw", "FirstName": "Carol", "LastName": "C",
           "Email": "carol@example.com", "EmailVerified": true, "PreferredLanguage": "en"}
}"#;
pub const CM_PATH: &str = "/api/v1/namespaces/team/configmaps";

/// Everything a check needs.
pub struct Bed {
    pub cp: ControlPlane,
    pub paddock: Paddock,
    pub provider: Provider,
    pub kubelogin: PathBuf,
    pub dir: PathBuf,
    pub rows: Vec<(String, bool, String)>,
}

impl Bed {
    pub fn check(&mut self, case: &str, ok: bool, detail: impl Into<String>) {
        let detail = detail.into();
        eprintln!("{} {case}: {detail}", if ok { "ok  " } else { "FAIL" });
        self.rows.push((case.to_owned(), ok, detail));
    }

    pub fn paddock_ca(&self) -> PathBuf {
        self.paddock.certs_dir().join("ca.crt")
    }

    /// A bearer GET at paddock with the server name of tenant `t` (or `name` as given).
    pub fn get_as(&self, name: &str, path: &str, token: &str) -> Result<Answer> {
        let sni = if name.len() == 6 {
            format!("{name}.tenants.paddock.internal")
        } else {
            name.to_owned()
        };
        oidc::bearer_get(self.paddock.port(), &self.paddock_ca(), &sni, path, token)
    }

    /// kubectl with the OIDC kubeconfig `kc`, signing `user` in when needed.
    pub fn kubectl(&self, kc: &Path, user: &str, args: &[&str]) -> Result<Output> {
        let k = Kubectl::new(kc)?.cache_dir(self.dir.join("kubectl-cache").join(user));
        let env = oidc::login_env(
            &self.provider,
            &self.kubelogin,
            k.bin(),
            user,
            &format!("{user}-pw"),
        );
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        Ok(k.run_raw(&args, None, &env, Some(Duration::from_secs(60)))?
            .1)
    }

    /// A token signed by the provider's current key with standard claims for `sub` plus `extra`.
    pub fn mint(&self, sub: &str, extra: Value) -> Result<String> {
        let now = now();
        let mut claims = json!({"iss": self.provider.issuer, "aud": ["paddock"], "sub": sub,
                                "iat": now - 5, "exp": now + 600});
        if let (Some(m), Value::Object(e)) = (claims.as_object_mut(), extra) {
            m.extend(e);
        }
        self.provider.mint(&claims)
    }
}

pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

fn policy(bed: &Bed, t: &str, jwt: Value) -> Result<()> {
    bed.paddock.tenant(t)?;
    let f = bed.dir.join(format!("{t}-policy.json"));
    std::fs::write(&f, json!({"jwt": jwt}).to_string())?;
    bed.paddock.cli(&[
        "tenant",
        "policy",
        t,
        "--patch-file",
        &f.display().to_string(),
    ])?;
    Ok(())
}

/// Tenants, their policies and objects: a configmap `<t>-marker` in namespace `team` of A and
/// B, readable by sso:alice and sso:carol in A and by group `leads` in B.
fn tenants(bed: &Bed) -> Result<()> {
    let issuer = json!({"url": bed.provider.issuer, "audiences": ["paddock"],
                        "certificateAuthority": bed.provider.ca_pem()?});
    policy(
        bed,
        A,
        json!([{"issuer": issuer,
        "claimMappings": {"username": {"claim": "sub", "prefix": "sso:"},
                          "groups": {"claim": "groups", "prefix": ""}}}]),
    )?;
    policy(
        bed,
        B,
        json!([{"issuer": issuer,
        "claimValidationRules": [{"expression": "claims.sub in ['carol']", "message": "only carol may use tenant B"}],
        "claimMappings": {"username": {"expression": "'b-' + claims.sub"},
                          "groups": {"expression": "['leads']"}}}]),
    )?;
    bed.paddock.tenant(C)?;
    for (t, subjects) in [
        (A, "--user=sso:alice --user=sso:carol"),
        (B, "--group=leads"),
    ] {
        let k = bed.paddock.kubectl_tenant(t)?;
        k.run(&["create", "namespace", "team"])?;
        k.run(&[
            "-n",
            "team",
            "create",
            "configmap",
            &format!("{t}-marker"),
            "--from-literal=t=x",
        ])?;
        k.run(&[
            "-n",
            "team",
            "create",
            "role",
            "cm-reader",
            "--verb=get,list,watch",
            "--resource=configmaps",
        ])?;
        let mut args = vec![
            "-n",
            "team",
            "create",
            "rolebinding",
            "cm-reader",
            "--role=cm-reader",
        ];
        args.extend(subjects.split(' '));
        k.run(&args)?;
    }
    Ok(())
}

/// `paddock user oidc-kubeconfig` for `tenants`, with the test's stand-in for a browser.
fn kubeconfig(bed: &mut Bed, user: &str, tenants: &[&str]) -> Result<PathBuf> {
    let mut args = vec!["user", "oidc-kubeconfig"];
    for t in tenants {
        args.extend(["--tenant", t]);
    }
    let text = bed.paddock.cli(&args)?;
    let secretless = ![
        "token:",
        "client-key-data",
        "id-token",
        "refresh-token",
        "client-secret",
    ]
    .iter()
    .any(|s| text.contains(s));
    let contexts = tenants
        .iter()
        .all(|t| text.contains(&format!("tls-server-name: {t}.tenants.paddock.internal")));
    bed.check(
        &format!("kubeconfig of {user}"),
        secretless && contexts && text.contains("oidc-login"),
        format!(
            "{} contexts, exec plugin kubectl oidc-login, no secret embedded",
            tenants.len()
        ),
    );
    let path = bed.dir.join(format!("{user}.kubeconfig"));
    std::fs::write(&path, text)?;
    oidc::add_test_login(
        &path,
        &bed.provider,
        &bed.dir.join(format!("{user}-tokens")),
    )?;
    Ok(path)
}

fn names(out: &Output) -> String {
    if out.success() {
        out.stdout.split_whitespace().collect::<Vec<_>>().join(",")
    } else {
        out.stderr.trim().to_owned()
    }
}

/// Alice in A; her token refused by C and by the apiserver; carol switching between A and B.
fn sign_on(bed: &mut Bed, alice: &Path, carol: &Path) -> Result<()> {
    let out = bed.kubectl(
        alice,
        "alice",
        &["-n", "team", "get", "configmaps", "-o", "name"],
    )?;
    let seen = names(&out);
    bed.check(
        "alice works in A",
        seen.contains(&format!("configmap/{A}-marker")) && !seen.contains(&format!("{B}-marker")),
        seen,
    );
    let who = bed.kubectl(
        alice,
        "alice",
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    )?;
    bed.check(
        "alice is A's user sso:alice",
        who.stdout.trim() == "sso:alice",
        names(&who),
    );
    let token = oidc::cached_id_token(&bed.dir.join("alice-tokens"))?;
    let at_a = bed.get_as(A, CM_PATH, &token)?;
    let at_c = bed.get_as(C, CM_PATH, &token)?;
    bed.check(
        "the same token refused by C",
        at_c.is_401_status() && at_a.code == 200,
        format!(
            "C {} {}; control A {}",
            at_c.code,
            excerpt(&at_c.body),
            at_a.code
        ),
    );
    let api = bed
        .cp
        .apiserver_url()?
        .trim_start_matches("https://")
        .to_owned();
    let (host, port) = api.split_once(':').context("apiserver URL")?;
    let straight = oidc::bearer_get(
        port.parse()?,
        &bed.cp.dir().join("pki").join("ca.crt"),
        host,
        CM_PATH,
        &token,
    )?;
    bed.check(
        "straight at the apiserver the token is nobody",
        straight.code == 401,
        format!(
            "apiserver {} (it trusts no such issuer: paddock is what accepts it)",
            straight.code
        ),
    );
    for (t, other) in [(A, B), (B, A)] {
        let out = bed.kubectl(
            carol,
            "carol",
            &[
                "--context",
                t,
                "-n",
                "team",
                "get",
                "configmaps",
                "-o",
                "name",
            ],
        )?;
        let seen = names(&out);
        bed.check(
            &format!("carol's context {t} shows {t} only"),
            seen.contains(&format!("configmap/{t}-marker"))
                && !seen.contains(&format!("{other}-marker")),
            seen,
        );
    }
    let who = bed.kubectl(
        carol,
        "carol",
        &["--context", B, "auth", "whoami", "-o", "json"],
    )?;
    let v: Value = serde_json::from_str(&who.stdout).unwrap_or_default();
    let groups = v["status"]["userInfo"]["groups"].to_string();
    bed.check(
        "carol in B is b-carol of group leads",
        v["status"]["userInfo"]["username"] == "b-carol" && groups.contains("\"leads\""),
        format!("{} {groups}", v["status"]["userInfo"]["username"]),
    );
    Ok(())
}

/// `paddock user list`: who acted in each tenant, how they signed in, their groups and
/// certificates; an identity shows only in the tenant it acted in.
fn who_is_who(bed: &mut Bed) -> Result<()> {
    let (a, b, c, table) = user_lists(&bed.paddock)?;
    let find = |items: &[Value], name: &str| {
        items
            .iter()
            .find(|u| u["metadata"]["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    let names = |items: &[Value]| -> Vec<String> {
        items
            .iter()
            .filter_map(|u| u["metadata"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    let dave = find(&a, "certificate:dave");
    let revoked: Vec<bool> = dave["status"]["certificates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["revoked"] == true)
        .collect();
    bed.check(
        "user list: a certificate user with its certificates",
        dave["status"]["signIn"] == "certificate"
            && dave["status"]["groups"] == json!(["devs"])
            && dave["status"]["lastSeen"].is_string()
            && revoked.len() == 2
            && revoked.iter().filter(|r| **r).count() == 1,
        format!("{}", dave["status"]),
    );
    let alice = find(&a, "oidc:sso:alice");
    bed.check(
        "user list: an OIDC user seen in A",
        alice["status"]["lastSeen"].is_string()
            && alice["status"]["credential"] == "sub alice"
            && alice["status"]["certificates"].is_null(),
        format!("{}", alice["status"]),
    );
    let carol_b = find(&b, "oidc:b-carol");
    bed.check(
        "user list: one person, each tenant's own name",
        !find(&a, "oidc:sso:carol").is_null()
            && carol_b["status"]["groups"] == json!(["leads"])
            && !names(&a).iter().any(|n| n.contains("b-carol"))
            && !names(&b).iter().any(|n| n.contains("sso:")),
        format!("A {:?}; B {:?}", names(&a), names(&b)),
    );
    bed.check(
        "user list: refused tokens leave no user",
        names(&c).iter().all(|n| !n.starts_with("oidc:")),
        format!("C {:?}", names(&c)),
    );
    bed.check(
        "user list: the table",
        table.starts_with("USER") && table.contains("dave") && table.contains("2 (1 revoked)"),
        table.lines().take(6).collect::<Vec<_>>().join(" | "),
    );
    Ok(())
}

/// A's, B's and C's users (`user list -o json`), and A's table.
type UserLists = (Vec<Value>, Vec<Value>, Vec<Value>, String);

/// dave acts in A with his second certificate (the first revoked); then the user lists of A,
/// B and C (JSON) and A's table.
fn user_lists(p: &Paddock) -> Result<UserLists> {
    p.cli(&["user", "issue", A, "dave", "--group", "old"])?;
    let certs: Value =
        serde_json::from_str(&p.cli(&["cert", "list", "--tenant", A, "-o", "json"])?)?;
    let first = match &certs {
        Value::Array(items) => items.iter().find(|c| c["spec"]["user"] == "dave"),
        one => Some(one).filter(|c| c["spec"]["user"] == "dave"),
    }
    .and_then(|c| c["metadata"]["name"].as_str())
    .context("dave's first certificate in `cert list`")?
    .to_owned();
    p.cli(&["cert", "revoke", &first])?;
    let dave = p.kubectl_user(A, "dave", &["devs".to_owned()])?;
    let _ = dave.run(&["get", "namespaces"]);
    let list = |t: &str| -> Result<Vec<Value>> {
        let v: Value =
            serde_json::from_str(&p.cli(&["user", "list", "--tenant", t, "-o", "json"])?)?;
        Ok(match v {
            Value::Array(items) => items,
            one => vec![one],
        })
    };
    // Written off the request's path: a moment later.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut a = list(A)?;
    while !a
        .iter()
        .any(|u| u["metadata"]["name"] == "certificate:dave" && u["status"]["lastSeen"].is_string())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(300));
        a = list(A)?;
    }
    let table = p.cli(&["user", "list", "--tenant", A])?;
    Ok((a, list(B)?, list(C)?, table))
}

pub fn excerpt(s: &str) -> String {
    let v: Value = serde_json::from_str(s).unwrap_or_default();
    match v["message"].as_str() {
        Some(m) => m.chars().take(110).collect(),
        None => s.chars().take(110).collect(),
    }
}

/// Each bad token gets a 401 `Status`; a good minted token is the control.
fn bad_tokens(bed: &mut Bed, real: &str) -> Result<()> {
    use base64::Engine as _;
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let parts: Vec<&str> = real.split('.').collect();
    let mut payload: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(parts[1])?,
    )?;
    payload["sub"] = "carol".into();
    let tampered = format!("{}.{}.{}", parts[0], b64(&payload), parts[2]);
    let unsigned = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        parts[1]
    );
    let now = now();
    let cases = [
        (
            "expired",
            bed.mint("alice", json!({"iat": now - 3600, "exp": now - 60}))?,
        ),
        (
            "wrong audience",
            bed.mint("alice", json!({"aud": ["someone-else"]}))?,
        ),
        (
            "wrong issuer",
            bed.mint("alice", json!({"iss": "https://127.0.0.1:1/"}))?,
        ),
        ("tampered", tampered),
        ("unsigned (alg: none)", unsigned),
    ];
    for (what, token) in cases {
        let a = bed.get_as(A, CM_PATH, &token)?;
        bed.check(
            &format!("{what} token: 401 Status"),
            a.is_401_status(),
            format!("{} {}", a.code, excerpt(&a.body)),
        );
    }
    let good = bed.get_as(A, CM_PATH, &bed.mint("alice", json!({}))?)?;
    bed.check(
        "control: a good minted token",
        good.code == 200,
        good.code.to_string(),
    );
    Ok(())
}

/// New tokens work after a rotation; old-key tokens stop once the old key is unpublished.
fn rotation(bed: &mut Bed) -> Result<()> {
    let old = bed.mint("alice", json!({}))?;
    let before = bed.get_as(A, CM_PATH, &old)?.code;
    let kid = bed.provider.rotate()?;
    let new = bed.mint("alice", json!({}))?;
    // paddock fetches the keys again for the unknown kid (at most every 5 s per issuer).
    let t0 = Instant::now();
    let mut new_code = 0;
    while t0.elapsed() < Duration::from_secs(15) {
        new_code = bed.get_as(A, CM_PATH, &new)?.code;
        if new_code == 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let took = t0.elapsed();
    let old_still = bed.get_as(A, CM_PATH, &old)?.code;
    bed.check(
        "rotation: new-key token works, old key still published",
        before == 200 && new_code == 200 && old_still == 200,
        format!(
            "new kid {kid}: {new_code} after {:.1} s; old {old_still}",
            took.as_secs_f64()
        ),
    );
    bed.provider.drop_old_keys()?;
    let t0 = Instant::now();
    let mut last = Answer {
        code: 0,
        body: String::new(),
    };
    while t0.elapsed() < Duration::from_secs(60) {
        last = bed.get_as(A, CM_PATH, &old)?;
        if last.code != 200 {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let new_after = bed.get_as(A, CM_PATH, &new)?.code;
    bed.check(
        "rotation: old-key token stops once the key is gone",
        last.is_401_status() && new_after == 200,
        format!(
            "old refused after {:.0} s ({}); new {new_after}",
            t0.elapsed().as_secs_f64(),
            excerpt(&last.body)
        ),
    );
    Ok(())
}

#[test]
fn oidc_sso() -> Result<()> {
    let t0 = Instant::now();
    let provider_bin = go_program("tests/testbed/oidc-provider", "oidc-provider")?;
    let kubelogin = kubelogin()?;
    let tools = t0.elapsed();
    let cp = ControlPlane::start()?;
    let paddock = Paddock::start(&cp, StoreKind::Embedded)?;
    let dir = cp.dir().join("oidc");
    let provider = Provider::start(&provider_bin, &dir, USERS)?;
    let mut bed = Bed {
        cp,
        paddock,
        provider,
        kubelogin,
        dir,
        rows: Vec::new(),
    };
    tenants(&bed)?;
    let alice = kubeconfig(&mut bed, "alice", &[A])?;
    let carol = kubeconfig(&mut bed, "carol", &[A, B])?;
    let t1 = Instant::now();
    sign_on(&mut bed, &alice, &carol)?;
    who_is_who(&mut bed)?;
    let real = oidc::cached_id_token(&bed.dir.join("alice-tokens"))?;
    bad_tokens(&mut bed, &real)?;
    oidc_cases::run(&mut bed, &alice, &real)?;
    rotation(&mut bed)?;
    let failed: Vec<&(String, bool, String)> = bed.rows.iter().filter(|r| !r.1).collect();
    eprintln!("\n{:<60} result", "check");
    for (case, ok, detail) in &bed.rows {
        eprintln!("{case:<60} {}  {detail}", if *ok { "ok" } else { "FAILED" });
    }
    eprintln!(
        "\ntools {:.1} s (provider and kubelogin builds, cached after the first), checks {:.1} s, total {:.1} s",
        tools.as_secs_f64(),
        t1.elapsed().as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        let log = BTreeMap::from([("paddock log", bed.paddock.log_path().display().to_string())]);
        bail!(
            "{} of {} checks failed: {:?} ({log:?})",
            failed.len(),
            bed.rows.len(),
            failed.iter().map(|r| &r.0).collect::<Vec<_>>()
        );
    }
    Ok(())
}
