//! paddock's lean HTTP/2 (issue 19): just what paddock's two HTTP/2 sides need, in place of
//! the h2 crate on the request path.
//!
//! - [`frame`] and [`hpack`]: the frame codec and header compression, shared by both sides.
//! - [`client`]: the short upstream requests to kube-apiserver (Go's HTTP/2 server).
//! - [`server`]: the front connections of kubectl, client-go and helm.
//!
//! Module layers (no cycles): `frame`, `hpack` (leaves) <- `client`, `server`.

pub mod client;
pub mod frame;
pub mod hpack;
pub mod server;
mod shared;
