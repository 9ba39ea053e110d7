//! paddock-upstream: how paddock talks to the upstream apiserver, shared by the gateway
//! (`paddock-server`) and the reconciler (`paddock-reconciler`): paddock's credential and the
//! connection pools ([`upstream`]), the body types and the bounded body reader ([`body`],
//! [`limit`]), the one wrapper for what rides along a response body ([`tap`]), small JSON
//! calls as paddock itself ([`upjson`]), and the error type of the server crates with its one
//! mapping to a Kubernetes `Status` ([`error`]), and the leader election that picks the replica
//! doing the once-per-fleet work ([`lease`]).
//!
//! Module layers (no cycles): `rare` (a leaf; the HTTP/2 client is `paddock_h2::client`);
//! `answer_body` <- `body` <- `tap`; `body` <- `error` <- `limit`, `h2_conn` <- `short_set`, `watch_pool`, `front_proxy` <-
//! `upstream` <- `upjson` <- `reflector` <- `lease`.

pub mod answer_body;
pub mod bearer;
pub mod body;
pub mod error;
pub mod front_proxy;
pub mod h2_conn;
pub mod lease;
pub mod limit;
pub mod rare;
pub mod reflector;
pub mod res_body;
pub mod serving;
pub mod short_set;
pub mod tap;
pub mod upjson;
pub mod upstream;
pub mod watch_pool;

pub use error::ServerError;
