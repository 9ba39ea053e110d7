//! JSON patch translation.
