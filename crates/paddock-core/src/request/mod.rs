//! Request side: parse what the tenant asked for (method + path + query), then plan the
//! upstream request (translated path and query, how to treat the response).
//!
//! - [`parse`]: method + path + query -> [`ParsedRequest`];
//! - [`plan`]: [`ParsedRequest`] -> [`Plan`], the whole decision about the upstream request;
//! - [`actions`]: the upstream identity and the follow-ups a plan asks of the server;
//! - [`selectors`]: query parameters, label and field selectors.

pub mod absent;
pub mod actions;
pub mod parse;
pub mod plan;
pub mod platform_get;
pub mod selectors;

pub use actions::{Actions, Identity, Route};
pub use parse::*;
pub use plan::*;
pub use selectors::*;

#[cfg(test)]
mod selector_tests;
#[cfg(test)]
mod tests;
