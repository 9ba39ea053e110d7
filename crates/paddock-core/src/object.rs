//! Object rules, shared by request and response sides.

use serde_json::Value;

use crate::error::TranslateError;
use crate::request::TenantContext;

/// Whether an upstream object belongs in the tenant's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Keep,
    /// The object is not the tenant's (list item / watch event removed).
    Drop,
}

pub fn object_down(_ctx: &TenantContext, _obj: &mut Value) -> Result<Disposition, TranslateError> {
    Ok(Disposition::Keep)
}

pub fn object_up(
    _ctx: &TenantContext,
    _obj: &mut Value,
    _path_namespace: Option<&str>,
) -> Result<(), TranslateError> {
    Ok(())
}

pub fn text_down(ctx: &TenantContext, s: &str) -> String {
    s.replace(&ctx.tenant.prefix(), "")
}
