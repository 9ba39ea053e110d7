//! OpenID Connect per tenant (issue 40): the vocabulary of a tenant's JWT issuers, in the shape
//! of kube-apiserver's structured `AuthenticationConfiguration` (`jwt:` entries), and the pure
//! decisions about a bearer token: what kind of token it is, which tenant its connection
//! chose, whether its claims pass and what user they map to. No I/O and no clock: the server
//! fetches the issuers' keys, checks the signature and passes the time in
//! (paddock-server `auth/oidc.rs`). docs/security.md "Identities" has the model.

mod cel_eval;
pub mod claims;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::tenant::TenantId;

/// The DNS suffix of the tenants' server names: a kubeconfig context of tenant `<tid>` sets
/// `tls-server-name: <tid>.tenants.paddock.internal`, so the TLS handshake's SNI names the
/// tenant (the connection's tenant, never a claim's). `paddock ca init` puts
/// `*.tenants.paddock.internal` in the serving certificate. The names are never resolved:
/// kubectl connects to the server URL and only verifies and sends this name.
pub const TENANT_SERVER_SUFFIX: &str = "tenants.paddock.internal";

/// `<tid>.tenants.paddock.internal`.
pub fn tenant_server_name(t: &TenantId) -> String {
    format!("{}.{TENANT_SERVER_SUFFIX}", t.as_str())
}

/// The tenant a connection's SNI chose: `None` when the name is not under
/// [`TENANT_SERVER_SUFFIX`] (the plain server name), `Some(Err)` when it is but its first label
/// is not a tenant id (such a connection's requests are refused, never served without one).
pub fn context_tenant(sni: &str) -> Option<Result<TenantId, String>> {
    let sni = sni.trim_end_matches('.').to_ascii_lowercase();
    let label = sni.strip_suffix(TENANT_SERVER_SUFFIX)?.strip_suffix('.')?;
    Some(TenantId::parse(label).map_err(|_| {
        format!(
            "the server name {sni:?} does not name a tenant (<tenant id>.{TENANT_SERVER_SUFFIX})"
        )
    }))
}

/// A tenant's JWT authenticator: kube-apiserver's `AuthenticationConfiguration.jwt[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JwtAuthenticator {
    pub issuer: Issuer,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claim_validation_rules: Vec<ClaimValidationRule>,
    pub claim_mappings: ClaimMappings,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_validation_rules: Vec<UserValidationRule>,
}

/// Who issues the tokens and for whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Issuer {
    /// `https://...`, equal to the tokens' `iss` claim.
    pub url: String,
    /// Where the discovery document is, when not under `url` (as kube-apiserver's
    /// `discoveryURL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery_url: Option<String>,
    /// At least one of these must be in the token's `aud`.
    pub audiences: Vec<String>,
    /// `MatchAny` (the only policy; required by kube-apiserver with several audiences).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience_match_policy: Option<String>,
    /// PEM bundle that verifies the issuer's TLS certificate (discovery and JWKS); required
    /// (paddock has no system trust store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<String>,
}

/// One `claimValidationRules` entry: a claim with a required value, or a CEL expression.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimValidationRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How claims become the tenant's user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimMappings {
    pub username: PrefixedClaimOrExpression,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<PrefixedClaimOrExpression>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<ClaimOrExpression>,
}

/// A claim (with a prefix, required, may be `""`) or a CEL expression (no prefix).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrefixedClaimOrExpression {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
}

/// A claim or a CEL expression.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimOrExpression {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
}

/// One `userValidationRules` entry: a CEL expression over `user`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserValidationRule {
    pub expression: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Most issuers one tenant may trust (each is a JWKS kept in memory).
pub const MAX_ISSUERS: usize = 8;

/// Checks a tenant's `jwt` list as kube-apiserver validates its configuration: https issuer
/// URLs without query or fragment, distinct issuers, audiences, exactly one of claim and
/// expression, a prefix with a claim and none with an expression, CEL that compiles, a PEM
/// CA when one is given.
pub fn validate(jwt: &[JwtAuthenticator]) -> Result<(), String> {
    if jwt.len() > MAX_ISSUERS {
        return Err(format!("jwt: at most {MAX_ISSUERS} issuers per tenant"));
    }
    for (i, a) in jwt.iter().enumerate() {
        let at = format!("jwt[{i}]");
        check_url(&a.issuer.url, &format!("{at}.issuer.url"))?;
        if let Some(d) = &a.issuer.discovery_url {
            check_url(d, &format!("{at}.issuer.discoveryURL"))?;
        }
        if jwt[..i].iter().any(|b| b.issuer.url == a.issuer.url) {
            return Err(format!(
                "{at}.issuer.url: {:?} is listed twice",
                a.issuer.url
            ));
        }
        if a.issuer.audiences.is_empty() || a.issuer.audiences.iter().any(String::is_empty) {
            return Err(format!("{at}.issuer.audiences: at least one, none empty"));
        }
        match a.issuer.audience_match_policy.as_deref() {
            None | Some("MatchAny") => {}
            Some(p) => {
                return Err(format!(
                    "{at}.issuer.audienceMatchPolicy: {p:?} (only MatchAny)"
                ));
            }
        }
        // Required: paddock carries no system trust store (its one TLS stack trusts only
        // what it is given), so the issuer's CA is named, as for the upstream.
        match &a.issuer.certificate_authority {
            Some(ca) if ca.contains("-----BEGIN CERTIFICATE-----") => {}
            _ => {
                return Err(format!(
                    "{at}.issuer.certificateAuthority: a PEM CA bundle is required"
                ));
            }
        }
        for (j, r) in a.claim_validation_rules.iter().enumerate() {
            let at = format!("{at}.claimValidationRules[{j}]");
            match (&r.claim, &r.expression) {
                (Some(_), None) if r.message.is_none() => {}
                (None, Some(e)) if r.required_value.is_none() => cel_eval::compile(e, &at)?,
                _ => {
                    return Err(format!(
                        "{at}: either claim (with requiredValue) or expression (with message)"
                    ));
                }
            }
        }
        check_prefixed(
            &a.claim_mappings.username,
            &format!("{at}.claimMappings.username"),
        )?;
        if let Some(g) = &a.claim_mappings.groups {
            check_prefixed(g, &format!("{at}.claimMappings.groups"))?;
        }
        if let Some(u) = &a.claim_mappings.uid {
            let at = format!("{at}.claimMappings.uid");
            match (&u.claim, &u.expression) {
                (Some(_), None) => {}
                (None, Some(e)) => cel_eval::compile(e, &at)?,
                _ => return Err(format!("{at}: exactly one of claim and expression")),
            }
        }
        for (j, r) in a.user_validation_rules.iter().enumerate() {
            cel_eval::compile(&r.expression, &format!("{at}.userValidationRules[{j}]"))?;
        }
    }
    Ok(())
}

fn check_url(url: &str, at: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("{at}: {url:?} must be an https:// URL"))?;
    if rest.is_empty() || rest.starts_with('/') || url.contains(['?', '#', ' ']) {
        return Err(format!(
            "{at}: {url:?} must have a host and no query or fragment"
        ));
    }
    Ok(())
}

fn check_prefixed(m: &PrefixedClaimOrExpression, at: &str) -> Result<(), String> {
    match (&m.claim, &m.expression, &m.prefix) {
        (Some(c), None, Some(_)) if !c.is_empty() => Ok(()),
        (Some(_), None, None) => Err(format!(
            "{at}: prefix is required with claim (\"\" for none), as in kube-apiserver"
        )),
        (None, Some(e), None) => cel_eval::compile(e, at),
        _ => Err(format!(
            "{at}: exactly one of claim (with prefix) and expression"
        )),
    }
}

/// What a bearer token is, decided from its unverified payload before any upstream call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenKind {
    /// A Kubernetes service-account token (a `kubernetes.io` claim, or the legacy issuer
    /// `kubernetes/serviceaccount`): checked by the upstream's TokenReview.
    ServiceAccount,
    /// Any other JWT: an OIDC token with this `iss` (never sent upstream).
    Oidc { issuer: String },
    /// Not a JWT whose payload can be read, or one without an issuer.
    Unreadable,
}

/// Longest bearer token paddock reads (an ID token with many groups stays far below).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Reads the payload of a compact JWS (no signature check: only to route the token).
pub fn token_kind(token: &str) -> TokenKind {
    let Some(payload) = unverified_payload(token) else {
        return TokenKind::Unreadable;
    };
    let legacy = payload["iss"].as_str() == Some("kubernetes/serviceaccount");
    if legacy || payload.get("kubernetes.io").is_some_and(|v| v.is_object()) {
        return TokenKind::ServiceAccount;
    }
    match payload["iss"].as_str() {
        Some(iss) if !iss.is_empty() => TokenKind::Oidc {
            issuer: iss.to_owned(),
        },
        _ => TokenKind::Unreadable,
    }
}

/// The JSON payload of a compact JWS, unverified.
pub fn unverified_payload(token: &str) -> Option<serde_json::Value> {
    use base64::Engine as _;
    if token.len() > MAX_TOKEN_BYTES {
        return None;
    }
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&raw).ok()
}

/// The authenticator of tenant `jwt` list for a token of `issuer`, if the tenant trusts it.
pub fn trusted<'a>(jwt: &'a [JwtAuthenticator], issuer: &str) -> Option<&'a JwtAuthenticator> {
    jwt.iter().find(|a| a.issuer.url == issuer)
}
