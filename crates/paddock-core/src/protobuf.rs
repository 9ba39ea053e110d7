//! Protobuf request bodies.
