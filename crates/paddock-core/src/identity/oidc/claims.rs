//! A verified token's claims against one tenant's authenticator: issuer, audience, expiry and
//! not-before (the time is passed in), the claim validation rules, the claim mappings, the
//! user validation rules. The outcome is the tenant's own name for the user and its groups,
//! which the identity translation then moves into the tenant upstream like a certificate's.

use serde_json::{Value, json};

use super::cel_eval;
use super::{JwtAuthenticator, PrefixedClaimOrExpression};

/// How far a token's `nbf` and `iat` may lie in the future (clocks of issuer and paddock
/// differ a little); `exp` gets no grace: an expired token is refused at once.
pub const CLOCK_SKEW_SECS: i64 = 60;

/// Why a token's claims are refused (answered as a 401 `Status`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClaimsError(pub String);

fn refuse<T>(why: impl Into<String>) -> Result<T, ClaimsError> {
    Err(ClaimsError(why.into()))
}

/// The tenant's user a token maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedUser {
    pub username: String,
    pub groups: Vec<String>,
    pub uid: Option<String>,
}

/// Checks `claims` (of a token whose signature the server verified with the issuer's keys)
/// against `auth` at `now` (seconds since the epoch) and maps them.
pub fn check_and_map(
    auth: &JwtAuthenticator,
    claims: &Value,
    now: i64,
) -> Result<MappedUser, ClaimsError> {
    check_standard(auth, claims, now)?;
    for rule in &auth.claim_validation_rules {
        match (&rule.claim, &rule.expression) {
            (Some(claim), _) => {
                let want = rule.required_value.as_deref().unwrap_or_default();
                if claims[claim.as_str()].as_str() != Some(want) {
                    return refuse(format!("claim {claim:?} must be {want:?}"));
                }
            }
            (None, Some(e)) => {
                if !cel_eval::holds(e, "claims", claims).map_err(ClaimsError)? {
                    let msg = rule
                        .message
                        .clone()
                        .unwrap_or_else(|| format!("{e:?} is false"));
                    return refuse(format!("claim validation failed: {msg}"));
                }
            }
            (None, None) => return refuse("claim validation rule without claim or expression"),
        }
    }
    let m = &auth.claim_mappings;
    let username = one_string(&m.username, claims, "username")?;
    if m.username.claim.as_deref() == Some("email")
        && let Some(v) = claims.get("email_verified")
        && v != &Value::Bool(true)
    {
        // As kube-apiserver: an unverified address is not a user name.
        return refuse("claim \"email\" is the user name but email_verified is not true");
    }
    check_username(&username)?;
    let groups = match &m.groups {
        Some(g) => strings(g, claims, "groups")?,
        None => Vec::new(),
    };
    if let Some(g) = groups.iter().find(|g| g.is_empty()) {
        return refuse(format!("the claim mapping gave an empty group {g:?}"));
    }
    let uid = match &m.uid {
        Some(u) => Some(match (&u.claim, &u.expression) {
            (Some(c), _) => claim_string(claims, c, "uid")?,
            (None, Some(e)) => expression_string(e, claims, "uid")?,
            (None, None) => return refuse("uid mapping without claim or expression"),
        }),
        None => None,
    };
    let user = MappedUser {
        username,
        groups,
        uid,
    };
    let user_json = json!({"username": user.username, "groups": user.groups,
                           "uid": user.uid.clone().unwrap_or_default(), "extra": {}});
    for rule in &auth.user_validation_rules {
        if !cel_eval::holds(&rule.expression, "user", &user_json).map_err(ClaimsError)? {
            let msg = rule
                .message
                .clone()
                .unwrap_or_else(|| format!("{:?} is false", rule.expression));
            return refuse(format!("user validation failed: {msg}"));
        }
    }
    Ok(user)
}

/// `iss`, `aud`, `exp`, `nbf`, `iat`.
fn check_standard(auth: &JwtAuthenticator, claims: &Value, now: i64) -> Result<(), ClaimsError> {
    if claims["iss"].as_str() != Some(auth.issuer.url.as_str()) {
        return refuse(format!(
            "the token's issuer {} is not {:?}",
            claims["iss"], auth.issuer.url
        ));
    }
    let auds: Vec<&str> = match &claims["aud"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !auds
        .iter()
        .any(|a| auth.issuer.audiences.iter().any(|w| w == a))
    {
        return refuse(format!(
            "the token's audience {} is not one of {:?}",
            claims["aud"], auth.issuer.audiences
        ));
    }
    let Some(exp) = number(&claims["exp"]) else {
        return refuse("the token has no expiry (exp)");
    };
    if now >= exp {
        return refuse(format!("the token expired {} s ago", now - exp));
    }
    if let Some(nbf) = number(&claims["nbf"])
        && nbf > now + CLOCK_SKEW_SECS
    {
        return refuse(format!(
            "the token is not valid for another {} s (nbf)",
            nbf - now
        ));
    }
    if let Some(iat) = number(&claims["iat"])
        && iat > now + CLOCK_SKEW_SECS
    {
        return refuse("the token was issued in the future (iat)");
    }
    Ok(())
}

/// A NumericDate (seconds; a fraction is cut).
fn number(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

/// User names paddock's identity translation gives a meaning of their own
/// (`system:serviceaccount:...` is impersonated as the tenant's service account) or reserves
/// are never an OIDC user's, whatever the mapping.
fn check_username(name: &str) -> Result<(), ClaimsError> {
    if name.is_empty() {
        return refuse("the claim mapping gave an empty user name");
    }
    if name.starts_with("system:") || name.starts_with("paddock:") {
        return refuse(format!(
            "the claim mapping gave the user name {name:?}: system: and paddock: names are reserved"
        ));
    }
    Ok(())
}

fn one_string(
    m: &PrefixedClaimOrExpression,
    claims: &Value,
    what: &str,
) -> Result<String, ClaimsError> {
    match (&m.claim, &m.expression) {
        (Some(c), _) => Ok(format!(
            "{}{}",
            m.prefix.as_deref().unwrap_or_default(),
            claim_string(claims, c, what)?
        )),
        (None, Some(e)) => expression_string(e, claims, what),
        (None, None) => refuse(format!("{what} mapping without claim or expression")),
    }
}

fn claim_string(claims: &Value, claim: &str, what: &str) -> Result<String, ClaimsError> {
    match &claims[claim] {
        Value::String(s) if !s.is_empty() => Ok(s.clone()),
        Value::Null => refuse(format!("the token has no claim {claim:?} ({what})")),
        other => refuse(format!(
            "claim {claim:?} ({what}) is not a non-empty string: {other}"
        )),
    }
}

fn expression_string(e: &str, claims: &Value, what: &str) -> Result<String, ClaimsError> {
    match cel_eval::eval(e, "claims", claims).map_err(ClaimsError)? {
        Value::String(s) if !s.is_empty() => Ok(s),
        other => refuse(format!(
            "the {what} expression gave {other}, not a non-empty string"
        )),
    }
}

/// Groups: a claim holding a string or a list of strings (absent: none), each prefixed; or
/// an expression giving a string or a list of strings.
fn strings(
    m: &PrefixedClaimOrExpression,
    claims: &Value,
    what: &str,
) -> Result<Vec<String>, ClaimsError> {
    let (value, prefix) = match (&m.claim, &m.expression) {
        (Some(c), _) => (
            claims[c.as_str()].clone(),
            m.prefix.as_deref().unwrap_or_default(),
        ),
        (None, Some(e)) => (
            cel_eval::eval(e, "claims", claims).map_err(ClaimsError)?,
            "",
        ),
        (None, None) => return refuse(format!("{what} mapping without claim or expression")),
    };
    let items: Vec<String> = match value {
        Value::Null => Vec::new(),
        Value::String(s) => vec![s],
        Value::Array(a) => a
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                other => refuse(format!("{what}: {other} is not a string")),
            })
            .collect::<Result<_, _>>()?,
        other => {
            return refuse(format!(
                "{what}: {other} is neither a string nor a list of strings"
            ));
        }
    };
    Ok(items.into_iter().map(|g| format!("{prefix}{g}")).collect())
}
