//! Encodings of request bodies: JSON and YAML objects, the object inside every patch type,
//! protobuf envelopes. Each reaches the same object rules (`crate::rules`).

pub mod body;
pub mod dupkeys;
pub mod namespace_body;
pub mod patch;
pub mod pb;
pub mod pb_label;
pub mod protobuf;
pub mod yaml_splice;
