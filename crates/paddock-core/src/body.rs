//! Request body translation.

use crate::error::TranslateError;
use crate::request::{Plan, TenantContext};

pub fn translate_request_body(
    _ctx: &TenantContext,
    _plan: &Plan,
    content_type: &str,
    body: &[u8],
) -> Result<(Vec<u8>, String), TranslateError> {
    Ok((body.to_vec(), content_type.to_owned()))
}
