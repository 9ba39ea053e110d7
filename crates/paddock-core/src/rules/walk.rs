//! The one walker over JSON objects: applies the table's field rules of a kind, up or down.
//! Protobuf bodies are lifted into the same partial JSON (`wire::protobuf`) and walked here
//! too, and json-patch values are walked inside a skeleton object (`wire::patch`), so every
//! encoding gets the same rules.

use serde_json::{Map, Value};

use super::modes::{Disposition, UpMode};
use super::{apiservice, cel, flowcontrol, policy, rbac, refs, relay, reviews, selectors, text};
use crate::catalog::context::TenantContext;
use crate::error::TranslateError;
use crate::rules::schema::Check;
use crate::rules::schema::FieldRule;
use crate::rules::schema::Holds;
use crate::rules::schema::KindRules;
use crate::rules::schema::Step;

type Visit<'a> = dyn FnMut(&mut Value) -> Result<(), TranslateError> + 'a;

/// Calls `f` on the value at `path` (the whole list for a repeated last step); repeated
/// intermediate steps visit every element. Missing or null steps are skipped (patches are
/// partial). With `create`, a missing or null last field is made `{}` first.
pub(crate) fn visit(
    v: &mut Value,
    path: &[Step],
    create: bool,
    f: &mut Visit<'_>,
) -> Result<(), TranslateError> {
    let Some((step, rest)) = path.split_first() else {
        return if v.is_null() { Ok(()) } else { f(v) };
    };
    let Value::Object(m) = v else { return Ok(()) };
    if rest.is_empty() && create && m.get(step.json).is_none_or(Value::is_null) {
        m.insert(step.json.into(), Value::Object(Map::new()));
    }
    let Some(next) = m.get_mut(step.json) else {
        return Ok(());
    };
    if rest.is_empty() {
        return if next.is_null() { Ok(()) } else { f(next) };
    }
    match (step.repeated, next) {
        (true, Value::Array(a)) => {
            for e in a {
                visit(e, rest, create, f)?;
            }
            Ok(())
        }
        (false, next @ Value::Object(_)) => visit(next, rest, create, f),
        _ => Ok(()),
    }
}

/// Runs the per-kind checks (refusals) of a row.
pub(crate) fn checks(o: &mut Value, row: &KindRules) -> Result<(), TranslateError> {
    for c in row.checks {
        match c {
            Check::Absent { path, reason } => {
                let mut found = false;
                visit(o, path, false, &mut |_| {
                    found = true;
                    Ok(())
                })?;
                if found {
                    let p: Vec<&str> = path.iter().map(|s| s.json).collect();
                    return Err(TranslateError::forbidden(format!(
                        "{} objects with {} are not allowed in this cluster: {reason}",
                        row.kind,
                        p.join(".")
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Tenant view -> upstream: every field rule of `fields` on `o`.
pub(crate) fn fields_up(
    ctx: &TenantContext,
    o: &mut Value,
    fields: &[FieldRule],
    mode: UpMode,
) -> Result<(), TranslateError> {
    for r in fields {
        let forced = matches!(r.holds, Holds::NamespaceSelector { forced: true });
        // A strategic-merge element without the confining selector keeps the stored one;
        // everywhere else it is forced (created if absent).
        let create = forced && mode != UpMode::StrategicMerge;
        if forced && mode == UpMode::StrategicMerge {
            refuse_null_at(o, r.path)?;
        }
        visit(o, r.path, create, &mut |v| holds_up(ctx, v, r.holds, mode))?;
    }
    Ok(())
}

/// A strategic merge patch's `null` deletes the field: a confining selector cannot go.
fn refuse_null_at(o: &mut Value, path: &[Step]) -> Result<(), TranslateError> {
    let Some((last, parent)) = path.split_last() else {
        return Ok(());
    };
    visit(o, parent, false, &mut |p| {
        let mut check = |e: &Value| {
            if e.get(last.json).is_some_and(Value::is_null) {
                return Err(TranslateError::forbidden(format!(
                    "{} cannot be removed in this cluster",
                    last.json
                )));
            }
            Ok(())
        };
        match p {
            Value::Array(a) => a.iter().try_for_each(&mut check),
            v => check(v),
        }
    })
}

fn holds_up(
    ctx: &TenantContext,
    v: &mut Value,
    holds: Holds,
    mode: UpMode,
) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    match holds {
        Holds::Namespace => refs::namespaces_up(t, v),
        Holds::VolumeName => refs::volume_name_up(t, v),
        Holds::ObjectRef => each(v, &mut |r| refs::objref_up(ctx, r)),
        Holds::NamespaceSelector { .. } => each(v, &mut |s| selectors::selector_up(ctx, s, true)),
        Holds::RoleSelector => each(v, &mut |s| {
            super::aggregate::role_selector_up(s)?;
            selectors::selector_up(ctx, s, false)
        }),
        Holds::Subjects { cluster } => rbac::subjects_up(t, v, cluster),
        Holds::RoleRef { cluster } => rbac::role_ref_up(t, v, cluster),
        Holds::PolicyRules { cluster } => rbac::rules_up(ctx, v, cluster),
        Holds::WebhookRules | Holds::PolicyRulesNamed => rbac::webhook_rules_up(ctx, v),
        Holds::ParamKind => policy::param_kind_up(ctx, v),
        Holds::PolicyName | Holds::PriorityLevelRef => policy::policy_name_up(ctx, v),
        Holds::FlowSubjects => flowcontrol::subjects_up(t, v),
        Holds::FlowNamespaces => flowcontrol::namespaces_up(t, v),
        Holds::PriorityLevel => flowcontrol::priority_level_up(v, mode),
        Holds::CelExpression => {
            cel::cel_up(t, v);
            Ok(())
        }
        Holds::ClientConfig => match ctx.catalog.webhook_relay() {
            Some(r) => each(v, &mut |c| relay::client_config_up(r, t, c, mode)),
            None => each(v, &mut |c| refs::client_config_up(t, c)),
        },
        Holds::ConversionClientConfig => each(v, &mut |c| refs::client_config_up(t, c)),
        Holds::CrdGroup => refs::crd_group_up(t, v),
        Holds::ServedGroup | Holds::ServedGroupName => {
            apiservice::served_up(ctx, v, holds);
            Ok(())
        }
        Holds::ResourceAttributes => reviews::resource_attributes_up(ctx, v),
        Holds::ReviewIdentity { writable } => {
            if writable {
                reviews::identity_up(t, v)
            } else {
                Ok(())
            }
        }
        // Shown to the tenant only: what a tenant writes there the apiserver ignores.
        Holds::RulesReviewStatus | Holds::UserInfo | Holds::TokenReviewStatus | Holds::FreeText => {
            Ok(())
        }
        Holds::Embed(s) => each(v, &mut |e| fields_up(ctx, e, s.fields, mode)),
    }
}

/// Applies `f` to a value, or to each element of a list.
fn each(v: &mut Value, f: &mut Visit<'_>) -> Result<(), TranslateError> {
    match v {
        Value::Array(a) => a.iter_mut().try_for_each(f),
        v => f(v),
    }
}

/// Upstream -> tenant view: every field rule of `fields` on `o`.
pub(crate) fn fields_down(
    ctx: &TenantContext,
    o: &mut Value,
    fields: &[FieldRule],
) -> Result<Disposition, TranslateError> {
    let mut disposition = Disposition::Keep;
    for r in fields {
        visit(o, r.path, false, &mut |v| {
            if holds_down(ctx, v, r.holds)? == Disposition::Drop {
                disposition = Disposition::Drop;
            }
            Ok(())
        })?;
        if disposition == Disposition::Drop {
            return Ok(Disposition::Drop);
        }
    }
    Ok(disposition)
}

fn holds_down(
    ctx: &TenantContext,
    v: &mut Value,
    holds: Holds,
) -> Result<Disposition, TranslateError> {
    let t = &ctx.tenant;
    match holds {
        Holds::Namespace | Holds::VolumeName => refs::names_down(ctx, v),
        Holds::ObjectRef => each(v, &mut |r| refs::objref_down(ctx, r))?,
        Holds::NamespaceSelector { .. } => each(v, &mut |s| {
            selectors::selector_down(ctx, s, true);
            Ok(())
        })?,
        Holds::RoleSelector => each(v, &mut |s| {
            selectors::selector_down(ctx, s, false);
            super::aggregate::role_selector_down(s);
            Ok(())
        })?,
        Holds::Subjects { cluster } => rbac::subjects_down(t, v, cluster),
        Holds::RoleRef { .. } => rbac::role_ref_down(ctx, v),
        Holds::PolicyRules { cluster } => rbac::rules_down(ctx, v, cluster),
        Holds::WebhookRules | Holds::PolicyRulesNamed => rbac::webhook_rules_down(ctx, v),
        Holds::ParamKind => policy::param_kind_down(ctx, v),
        Holds::PolicyName | Holds::PriorityLevelRef => policy::policy_name_down(ctx, v),
        Holds::FlowSubjects => flowcontrol::subjects_down(t, v),
        Holds::FlowNamespaces => flowcontrol::namespaces_down(t, v),
        Holds::PriorityLevel => flowcontrol::priority_level_down(v),
        Holds::CelExpression => cel::cel_down(t, v),
        Holds::ClientConfig | Holds::ConversionClientConfig => each(v, &mut |c| {
            if !relay::client_config_down(ctx, c) {
                refs::client_config_down(ctx, c);
            }
            Ok(())
        })?,
        Holds::CrdGroup => return Ok(refs::crd_group_down(t, v)),
        Holds::ServedGroup => return Ok(apiservice::served_group_down(ctx, v)),
        Holds::ServedGroupName => return Ok(apiservice::served_group_name_down(ctx, v)),
        Holds::ResourceAttributes => reviews::resource_attributes_down(ctx, v),
        Holds::ReviewIdentity { .. } => reviews::identity_down(t, v),
        Holds::RulesReviewStatus => reviews::rules_review_status_down(ctx, v),
        Holds::UserInfo => reviews::user_info_down(t, v),
        Holds::TokenReviewStatus => reviews::token_review_status_down(t, v),
        Holds::FreeText => {
            if let Value::String(s) = v {
                *s = text::text_down(ctx, s);
            }
        }
        Holds::Embed(s) => {
            let mut d = Disposition::Keep;
            match v {
                Value::Array(a) => {
                    for e in a {
                        if fields_down(ctx, e, s.fields)? == Disposition::Drop {
                            d = Disposition::Drop;
                        }
                    }
                }
                v => d = fields_down(ctx, v, s.fields)?,
            }
            return Ok(d);
        }
    }
    Ok(Disposition::Keep)
}
