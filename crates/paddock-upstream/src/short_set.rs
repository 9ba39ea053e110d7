//! Short requests on a small set of upstream HTTP/2 connections, one tenant always on the
//! same one (docs/fairshare.md "Noisy neighbour"). On one shared connection every tenant's
//! small requests are streams read by one hyper connection task and share one flow-control
//! window: a noisy tenant's frames queue ahead of everyone else's. With the tenants hashed
//! onto [`SHORT_CONNECTIONS`] connections, a tenant shares its connection with about 1/N of
//! the others; N is fixed, so paddock still opens few connections upstream.

use std::hash::{DefaultHasher, Hash, Hasher};

use http::Request;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;

use crate::body::UpBody;

/// Upstream HTTP/2 connections for short requests (each its own hyper pool).
pub const SHORT_CONNECTIONS: usize = 8;

/// The group paddock asserts on every upstream request of tenant `<tid>`
/// (`paddock_core::identity::TENANT_GROUP_PREFIX`; paddock-upstream does not depend on core).
const TENANT_GROUP_PREFIX: &str = "paddock:tenant:";

/// One client (pool) per connection; requests pick theirs by tenant.
pub struct ShortSet {
    clients: Vec<Client<HttpsConnector<HttpConnector>, UpBody>>,
}

impl ShortSet {
    /// `SHORT_CONNECTIONS` clients built by `build` (each builds a pool of its own; a clone
    /// would share the pool, and so the one connection).
    pub fn new(build: impl Fn() -> Client<HttpsConnector<HttpConnector>, UpBody>) -> Self {
        ShortSet {
            clients: (0..SHORT_CONNECTIONS).map(|_| build()).collect(),
        }
    }

    /// The client of `req`'s tenant: chosen by the tenant group among its `Impersonate-Group`
    /// headers; paddock's own requests (no tenant) use the first.
    pub fn pick(&self, req: &Request<UpBody>) -> &Client<HttpsConnector<HttpConnector>, UpBody> {
        let i = tenant_of(req).map_or(0, |t| shard(t, self.clients.len()));
        &self.clients[i.min(self.clients.len().saturating_sub(1))]
    }
}

/// The tenant id of an impersonated request, from its tenant group.
fn tenant_of(req: &Request<UpBody>) -> Option<&str> {
    req.headers()
        .get_all("impersonate-group")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|g| g.strip_prefix(TENANT_GROUP_PREFIX))
}

/// A stable shard of `tenant` among `n` (SipHash with fixed keys: the same in every replica
/// and run, which only matters for reading measurements).
fn shard(tenant: &str, n: usize) -> usize {
    let mut h = DefaultHasher::new();
    tenant.hash(&mut h);
    (h.finish() % n.max(1) as u64) as usize
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn req(groups: &[&str]) -> Request<UpBody> {
        let mut b = Request::builder().uri("https://127.0.0.1:6443/api");
        for g in groups {
            b = b.header("Impersonate-Group", *g);
        }
        b.body(crate::body::empty_up()).unwrap()
    }

    #[test]
    fn tenant_from_its_group() {
        let r = req(&["paddock:acme01:dev", "paddock:tenant:acme01"]);
        assert_eq!(tenant_of(&r), Some("acme01"));
        assert_eq!(tenant_of(&req(&[])), None);
        assert_eq!(tenant_of(&req(&["system:masters"])), None);
    }

    #[test]
    fn shards_are_stable_and_spread() {
        assert_eq!(shard("acme01", 8), shard("acme01", 8));
        let used: std::collections::HashSet<usize> = (0..64)
            .map(|i| shard(&format!("t{i:05}"), SHORT_CONNECTIONS))
            .collect();
        assert!(used.len() > SHORT_CONNECTIONS / 2, "{used:?}");
        assert!(used.iter().all(|i| *i < SHORT_CONNECTIONS));
    }
}
