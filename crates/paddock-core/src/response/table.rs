//! `as=Table` responses (meta.k8s.io/v1 Table), in lists, single GETs and watches.
//!
//! A Table is `{kind, apiVersion, metadata, columnDefinitions, rows:[{cells, object?}]}`.
//! `rows[].object` is a PartialObjectMetadata by default, the full object with
//! `includeObject=Object`, absent with `includeObject=None`. Each row is rewritten like a list
//! item (dropped when its object is not the tenant's); the Name cell is replaced by the
//! rewritten object's name, the Namespace cell (CRD printer columns may have one) by its
//! namespace, and every other string cell goes through `text_down` (a RoleBinding's ROLE column
//! is `ClusterRole/<upstream name>`, an event's message names objects).
//!
//! In a Table watch, `columnDefinitions` come only with the first event; the column layout is
//! remembered for later events, and if the first event is dropped its definitions are carried
//! into the next event that is emitted, so kubectl still gets headers.

use serde_json::{Map, Value};

use crate::catalog::context::TenantContext;
use crate::catalog::{ResourceInfo, Scope};
use crate::error::TranslateError;
use crate::identity::names::name_down;
use crate::rules::asleep::{SpecCells, cells_as_left, recorded};
use crate::rules::{Disposition, object_down, text_down};

/// Where the Name and Namespace cells are, and the cells that show a workload's spec (a
/// sleeping tenant's workloads read as it left them: `rules::asleep`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Columns {
    pub name: Option<usize>,
    pub namespace: Option<usize>,
    pub spec: SpecCells,
}

impl Columns {
    /// From a `columnDefinitions` array. The apiserver marks the name column with
    /// `format: "name"` (server-side printers and CRD tables alike).
    pub fn from_defs(defs: &Value) -> Option<Columns> {
        let defs = defs.as_array().filter(|d| !d.is_empty())?;
        let mut c = Columns::default();
        for (i, d) in defs.iter().enumerate() {
            let name = d.get("name").and_then(Value::as_str).unwrap_or_default();
            let format = d.get("format").and_then(Value::as_str).unwrap_or_default();
            if c.name.is_none() && (format == "name" || name == "Name") {
                c.name = Some(i);
            } else if c.namespace.is_none() && name == "Namespace" {
                c.namespace = Some(i);
            } else {
                c.spec.note(i, name);
            }
        }
        Some(c)
    }
}

/// What the table's rows are about.
#[derive(Debug, Clone)]
pub struct TableScope {
    /// The resource listed, from the plan.
    pub resource: Option<std::sync::Arc<ResourceInfo>>,
    /// Upstream answered for the whole cluster (a namespaced kind listed across namespaces):
    /// rows that cannot be attributed to the tenant are dropped.
    pub cluster_wide: bool,
}

/// Rewrites one row in place.
pub fn row_down(
    ctx: &TenantContext,
    scope: &TableScope,
    cols: Option<&Columns>,
    row: &mut Value,
) -> Result<Disposition, TranslateError> {
    let Some(row) = row.as_object_mut() else {
        return Err(TranslateError::Upstream(
            "table row is not an object".into(),
        ));
    };
    let has_object = row.get("object").is_some_and(Value::is_object);
    let (mut name, mut namespace, mut left) = (None, None, None);
    if has_object && let Some(obj) = row.get_mut("object") {
        {
            if row_object_down(ctx, scope, obj)? == Disposition::Drop {
                return Ok(Disposition::Drop);
            }
            left = scope
                .resource
                .as_ref()
                .and_then(|r| recorded(&r.upstream_group, &r.kind, obj.get("metadata")));
            name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_owned);
            namespace = obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
    }
    let Some(cells) = row.get_mut("cells").and_then(Value::as_array_mut) else {
        return Ok(Disposition::Keep);
    };
    let cols = cols.cloned().unwrap_or_default();
    if !has_object {
        // No object to decide by (includeObject=None): decide by the cells, fail closed.
        match cell_fallback(ctx, scope, &cols, cells) {
            Some((n, ns)) => {
                name = n;
                namespace = ns;
            }
            None => return Ok(Disposition::Drop),
        }
    }
    cells_down(ctx, &cols, cells, name.as_deref(), namespace.as_deref());
    if let Some(left) = left {
        cells_as_left(left, cols.spec, cells);
    }
    Ok(Disposition::Keep)
}

/// Rewrites the cells of a row whose object reads, in the tenant's view, `name` in
/// `namespace`: the Name and Namespace cells become those, every other string cell goes
/// through `text_down`.
pub fn cells_down(
    ctx: &TenantContext,
    cols: &Columns,
    cells: &mut [Value],
    name: Option<&str>,
    namespace: Option<&str>,
) {
    for (i, cell) in cells.iter_mut().enumerate() {
        if Some(i) == cols.name
            && let Some(n) = name
        {
            *cell = Value::String(n.to_owned());
            continue;
        }
        if Some(i) == cols.namespace
            && let Some(ns) = namespace
        {
            *cell = Value::String(ns.to_owned());
            continue;
        }
        if let Value::String(s) = cell {
            let t = text_down(ctx, s);
            if t != *s {
                *s = t;
            }
        }
    }
}

/// Tenant view of the Name / Namespace cells of a row without object; None to drop the row.
#[allow(clippy::type_complexity)]
fn cell_fallback(
    ctx: &TenantContext,
    scope: &TableScope,
    cols: &Columns,
    cells: &[Value],
) -> Option<(Option<String>, Option<String>)> {
    let cell = |i: Option<usize>| i.and_then(|i| cells.get(i)).and_then(Value::as_str);
    let info = scope.resource.as_ref();
    let mut name = None;
    let mut namespace = None;
    if info.is_some_and(|i| crate::rules::apiservice::names_by_rule(i)) {
        // The name decides, as its object's rules would (an APIService's group part).
        let n = cell(cols.name)?;
        name = Some(crate::rules::apiservice::name_down(ctx, n)?);
    } else if let Some(info) = info.filter(|i| i.prefixes_name()) {
        let n = cell(cols.name)?;
        name = match name_down(&ctx.tenant, info, n) {
            Some(own) => Some(own),
            // A platform object beside the tenant's own; a name that may be another tenant's
            // is dropped (fail closed: the upstream list left paddock's plumbing out).
            None if info.lists_platform_objects()
                && !crate::tenant::tenant_of(n).is_some_and(|t| ctx.catalog.is_known_tenant(t)) =>
            {
                Some(n.to_owned())
            }
            None => return None,
        };
    }
    if let Some(ns) = cell(cols.namespace) {
        namespace = Some(ctx.tenant.strip(ns)?.to_owned());
    } else if scope.cluster_wide && info.is_none_or(|i| i.scope == Scope::Namespaced) {
        // Upstream answered for every namespace and nothing in the row says whose it is.
        return None;
    }
    Some((name, namespace))
}

/// Rewrites a row's object. A PartialObjectMetadata carries no kind of its own, so it is
/// rewritten as the listed kind (its metadata follows that kind's rules) and then restored.
pub fn row_object_down(
    ctx: &TenantContext,
    scope: &TableScope,
    obj: &mut Value,
) -> Result<Disposition, TranslateError> {
    let partial = obj.get("kind").and_then(Value::as_str) == Some("PartialObjectMetadata");
    match (&scope.resource, partial) {
        (Some(info), true) => {
            let Some(o) = obj.as_object_mut() else {
                return Ok(Disposition::Drop);
            };
            let av = o.insert(
                "apiVersion".into(),
                Value::String(info.upstream_api_version()),
            );
            let kind = o.insert("kind".into(), Value::String(info.kind.clone()));
            let d = object_down(ctx, obj)?;
            if let Some(o) = obj.as_object_mut() {
                restore(o, "apiVersion", av);
                restore(o, "kind", kind);
            }
            Ok(d)
        }
        _ => object_down(ctx, obj),
    }
}

fn restore(o: &mut Map<String, Value>, k: &str, v: Option<Value>) {
    match v {
        Some(v) => {
            o.insert(k.into(), v);
        }
        None => {
            o.remove(k);
        }
    }
}

/// Column state of one response (a Table body or a Table watch).
#[derive(Debug, Default)]
pub struct TableState {
    pub columns: Option<Columns>,
    /// Column definitions of an event that was dropped, not yet delivered.
    pending_defs: Option<Value>,
}

/// Rewrites a whole Table held in memory (a watch event's object, a buffered GET). Returns
/// Drop when no row is left and there are no column definitions to deliver.
pub fn table_down(
    ctx: &TenantContext,
    scope: &TableScope,
    state: &mut TableState,
    table: &mut Value,
    watch: bool,
) -> Result<Disposition, TranslateError> {
    let Some(t) = table.as_object_mut() else {
        return Err(TranslateError::Upstream("table is not an object".into()));
    };
    let mut defs_here = false;
    if let Some(c) = t.get("columnDefinitions").and_then(Columns::from_defs) {
        state.columns = Some(c);
        defs_here = true;
    }
    if !keeps_remaining(scope)
        && let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("remainingItemCount");
    }
    let mut kept_rows = 0usize;
    if let Some(rows) = t.get_mut("rows").and_then(Value::as_array_mut) {
        let mut kept = Vec::with_capacity(rows.len());
        for mut r in rows.drain(..) {
            if row_down(ctx, scope, state.columns.as_ref(), &mut r)? == Disposition::Keep {
                kept.push(r);
            }
        }
        kept_rows = kept.len();
        *rows = kept;
    }
    if !watch {
        return Ok(Disposition::Keep);
    }
    if kept_rows == 0 {
        if defs_here {
            state.pending_defs = t.get("columnDefinitions").cloned();
        }
        return Ok(Disposition::Drop);
    }
    if !defs_here {
        if let Some(defs) = state.pending_defs.take() {
            t.insert("columnDefinitions".into(), defs);
        }
    } else {
        state.pending_defs = None;
    }
    Ok(Disposition::Keep)
}

/// Whether a list's `remainingItemCount` may be shown: only for a namespaced kind listed in
/// one namespace (which the plan has mapped into the tenant).
pub fn keeps_remaining(scope: &TableScope) -> bool {
    !scope.cluster_wide
        && scope
            .resource
            .as_ref()
            .is_some_and(|r| matches!(r.scope, crate::catalog::Scope::Namespaced))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn columns() {
        let c = Columns::from_defs(&json!([
            {"name":"Name","type":"string","format":"name"},
            {"name":"Ready","type":"string","format":""},
            {"name":"Namespace","type":"string","format":""}
        ]))
        .unwrap();
        assert_eq!(c.name, Some(0));
        assert_eq!(c.namespace, Some(2));
        assert!(Columns::from_defs(&json!(null)).is_none());
        assert!(Columns::from_defs(&json!([])).is_none());
    }
}
