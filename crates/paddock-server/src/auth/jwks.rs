//! The issuers' signing keys: discovery document and JWKS fetched over TLS with the issuer's
//! own CA (bounded in size and time), kept per issuer and refreshed when older than
//! [`MAX_AGE`] or when a token names a key id not in the set, at most once per
//! [`MIN_REFETCH`] per issuer (a stream of tokens with made-up `kid`s costs one fetch per
//! interval, not one per token). A key the issuer removed from its JWKS is refused within
//! [`MAX_AGE`]. Then the JWS check: `jsonwebtoken` with ring, the workspace's one provider.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, StatusCode, Uri, header};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use parking_lot::Mutex;
use serde_json::Value;

use paddock_core::identity::oidc::Issuer;
use paddock_upstream::limit::collect_limited;

/// How long a fetched key set is used before it is fetched again.
pub const MAX_AGE: Duration = Duration::from_secs(30);
/// Least time between two fetches of one issuer's keys for unknown key ids.
pub const MIN_REFETCH: Duration = Duration::from_secs(5);
/// A fetched set is still used this long when the issuer cannot be reached.
const STALE_MAX: Duration = Duration::from_secs(600);
/// Time for one discovery + JWKS fetch.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest discovery document or JWKS read.
const MAX_DOC_BYTES: usize = 256 * 1024;
/// Most keys kept of one issuer.
const MAX_KEYS: usize = 32;

/// Asymmetric algorithms only: an HMAC "key" would be public, and `none` is no signature.
const ALLOWED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

struct Key {
    kid: Option<String>,
    /// The JWK's `alg`, when it names one: the token's must be the same.
    alg: Option<String>,
    key: DecodingKey,
}

struct KeySet {
    keys: Vec<Key>,
    fetched: Instant,
}

struct Entry {
    set: Option<Arc<KeySet>>,
    last_try: Option<Instant>,
}

fn cache() -> &'static Mutex<HashMap<String, Entry>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Entry>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The cache key: the issuer and the CA it is fetched with (two tenants naming one issuer
/// with different CAs never share what one of them fetched).
fn cache_key(issuer: &Issuer) -> String {
    use sha2::{Digest, Sha256};
    let ca = Sha256::digest(issuer.certificate_authority.as_deref().unwrap_or_default());
    format!("{} {}", issuer.url, hex::encode(&ca[..8]))
}

/// Verifies `token`'s signature with `issuer`'s keys and returns its claims (unchecked: the
/// claims are judged by paddock-core's `oidc::claims`). `Err` is the 401's message.
pub async fn verify(issuer: &Issuer, token: &str) -> Result<Value, String> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|e| format!("the token's header is not a supported JWS header: {e}"))?;
    if !ALLOWED.contains(&header.alg) {
        return Err(format!(
            "the token's algorithm {:?} is not accepted",
            header.alg
        ));
    }
    let kid = header.kid.as_deref();
    let set = keys(issuer, kid).await?;
    let key = find(&set, kid).ok_or_else(|| {
        format!(
            "the issuer has no key {:?} (rotated away, or never its)",
            kid.unwrap_or("")
        )
    })?;
    if let Some(alg) = &key.alg
        && *alg != format!("{:?}", header.alg)
    {
        return Err(format!(
            "the token's algorithm {:?} is not its key's ({alg})",
            header.alg
        ));
    }
    let mut v = Validation::new(header.alg);
    // Expiry, not-before, issuer and audience are the core's (one place, with the tenant's
    // authenticator); here only the signature.
    v.validate_exp = false;
    v.validate_nbf = false;
    v.validate_aud = false;
    v.required_spec_claims.clear();
    jsonwebtoken::decode::<Value>(token, &key.key, &v)
        .map(|d| d.claims)
        .map_err(|e| format!("the token's signature does not verify: {e}"))
}

fn find<'a>(set: &'a KeySet, kid: Option<&str>) -> Option<&'a Key> {
    match kid {
        Some(k) => set.keys.iter().find(|key| key.kid.as_deref() == Some(k)),
        // No kid: only an issuer with one key can be meant.
        None if set.keys.len() == 1 => set.keys.first(),
        None => None,
    }
}

/// The issuer's key set, fetched when missing, old, or without `kid` (rate-bounded).
async fn keys(issuer: &Issuer, kid: Option<&str>) -> Result<Arc<KeySet>, String> {
    let ck = cache_key(issuer);
    let now = Instant::now();
    let (have, may_fetch) = {
        let mut c = cache().lock();
        let e = c.entry(ck.clone()).or_insert(Entry {
            set: None,
            last_try: None,
        });
        let have = e.set.clone();
        let fresh = have
            .as_ref()
            .is_some_and(|s| now.duration_since(s.fetched) < MAX_AGE);
        let known = have.as_ref().is_some_and(|s| find(s, kid).is_some());
        let allowed = e
            .last_try
            .is_none_or(|t| now.duration_since(t) >= MIN_REFETCH);
        let want = !fresh || !known;
        if want && allowed {
            e.last_try = Some(now);
        }
        (have, want && allowed)
    };
    if !may_fetch {
        return have.ok_or_else(|| "the issuer's keys could not be fetched lately".to_string());
    }
    match tokio::time::timeout(FETCH_TIMEOUT, fetch(issuer)).await {
        Ok(Ok(set)) => {
            let set = Arc::new(set);
            if let Some(e) = cache().lock().get_mut(&ck) {
                e.set = Some(set.clone());
            }
            tracing::info!(issuer = %issuer.url, keys = set.keys.len(), "OIDC issuer keys fetched");
            Ok(set)
        }
        failed => {
            let why = match failed {
                Ok(Err(e)) => e,
                _ => format!("no answer within {} s", FETCH_TIMEOUT.as_secs()),
            };
            tracing::warn!(issuer = %issuer.url, error = %why, "fetching OIDC issuer keys failed");
            match have {
                Some(s) if now.duration_since(s.fetched) < STALE_MAX => Ok(s),
                _ => Err(format!("the issuer's keys cannot be fetched: {why}")),
            }
        }
    }
}

/// Discovery, then the JWKS it names.
async fn fetch(issuer: &Issuer) -> Result<KeySet, String> {
    let ca = issuer.certificate_authority.as_deref().unwrap_or_default();
    let discovery = match &issuer.discovery_url {
        Some(d) => d.clone(),
        None => format!(
            "{}/.well-known/openid-configuration",
            issuer.url.trim_end_matches('/')
        ),
    };
    let doc: Value = serde_json::from_slice(&get(&discovery, ca).await?)
        .map_err(|e| format!("discovery document: {e}"))?;
    // As go-oidc: the document must name the configured issuer (unless it lives elsewhere).
    if issuer.discovery_url.is_none() && doc["issuer"].as_str() != Some(issuer.url.as_str()) {
        return Err(format!(
            "the discovery document names issuer {}, not {:?}",
            doc["issuer"], issuer.url
        ));
    }
    let jwks_uri = doc["jwks_uri"]
        .as_str()
        .filter(|u| u.starts_with("https://"))
        .ok_or("the discovery document has no https jwks_uri")?;
    let jwks: Value =
        serde_json::from_slice(&get(jwks_uri, ca).await?).map_err(|e| format!("JWKS: {e}"))?;
    let keys: Vec<Key> = jwks["keys"]
        .as_array()
        .ok_or("the JWKS has no keys")?
        .iter()
        .filter(|k| k["use"].as_str().is_none_or(|u| u == "sig") && k["kty"] != "oct")
        // A key paddock cannot read (another kty or alg) is skipped, not the whole set.
        .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
        .filter_map(|jwk| {
            Some(Key {
                kid: jwk.common.key_id.clone(),
                alg: jwk.common.key_algorithm.map(|a| format!("{a:?}")),
                key: DecodingKey::from_jwk(&jwk).ok()?,
            })
        })
        .take(MAX_KEYS)
        .collect();
    Ok(KeySet {
        keys,
        fetched: Instant::now(),
    })
}

/// One HTTPS GET verified with `ca_pem`, its body (bounded).
async fn get(url: &str, ca_pem: &str) -> Result<Bytes, String> {
    let uri: Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
    let host = uri.host().ok_or_else(|| format!("{url}: no host"))?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(443);
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let tls = paddock_pki::upstream_client_config(
        ca_pem.as_bytes(),
        None,
        None,
        vec![b"http/1.1".to_vec()],
    )
    .map_err(|e| format!("certificateAuthority: {e}"))?;
    let name =
        rustls_pki_types::ServerName::try_from(host.clone()).map_err(|e| format!("{url}: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("{url}: TLS: {e}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    tokio::spawn(conn);
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or(host);
    let req = Request::builder()
        .method(Method::GET)
        .uri(uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"))
        .header(header::HOST, authority)
        .header(header::ACCEPT, "application/json")
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    if resp.status() != StatusCode::OK {
        return Err(format!("{url}: HTTP {}", resp.status()));
    }
    collect_limited(resp.into_body(), MAX_DOC_BYTES)
        .await
        .map_err(|e| format!("{url}: {e}"))
}
