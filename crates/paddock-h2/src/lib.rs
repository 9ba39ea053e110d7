//! paddock's lean HTTP/2 client of the short upstream requests to kube-apiserver (a trusted
//! peer: Go's HTTP/2 server); clients' HTTP/2 is served by hyper and the h2 crate.
//!
//! - [`frame`] and [`hpack`]: the frame codec and header compression.
//! - [`client`]: the short upstream requests.
//! - `fuzzing` (hidden): the entry points of the fuzz targets (`fuzz/`) and their corpus replay.
//!
//! Module layers (no cycles): `frame`, `hpack` (leaves) <- `client`.

pub mod client;
pub mod frame;
#[doc(hidden)]
pub mod fuzzing;
pub mod hpack;
mod shared;
