//! Response side: one [`ChunkRewriter`] per upstream response, chosen by the plan's
//! [`ResponseKind`], the upstream status and Content-Type.
//!
//! - non-2xx JSON: a Status; message and details rewritten, other tenants' names scrubbed;
//! - Object / Status: buffered (objects are at most a few MiB), rewritten whole;
//! - List / Table: streamed through the collection framer, item by item, row by row;
//! - Watch / TableWatch: streamed event by event, each flushed as soon as it is complete;
//! - Discovery / OpenApi: buffered, rewritten whole, deterministic (for ETags);
//! - PassThrough: bytes unchanged (logs, exec, proxy, /version).
//!
//! The dispatch also looks at the body itself where the plan cannot know: a GET may come
//! back as a Table, a DELETE as a Status, a deletecollection as a List.

pub mod discovery;
pub mod framer;
pub mod list;
pub mod members;
pub mod merge;
pub mod openapi;
pub mod openapi_pb;
pub mod openapi_yaml;
pub mod splice;
pub mod table;
pub mod views;
pub mod watch;
pub mod wsframe;

use std::sync::Arc;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::catalog::ResourceInfo;
use crate::catalog::context::TenantContext;
use crate::error::TranslateError;
use crate::request::{Plan, ResponseKind};
use crate::response::discovery::discovery_down;
use crate::response::list::{Collection, CollectionRewriter, api_version_raw_down, list_meta_down};
use crate::response::openapi::openapi_down;
use crate::response::splice::{Fast, Splicer};
use crate::response::table::{Columns, TableScope, TableState, row_down, table_down};
use crate::response::watch::{Events, WatchRewriter};
use crate::rules::api_version_down;
use crate::rules::{Disposition, object_down, status_down, text_down};

/// Cap on buffered bodies (objects, Status, discovery, OpenAPI). OpenAPI v2 of a cluster with
/// many CRDs is the largest at tens of MiB; anything beyond this is refused, not buffered.
pub const MAX_BUFFERED: usize = 128 << 20;

/// Streaming response rewriter; one per response. `feed` may emit zero or more bytes per
/// chunk; the server forwards every non-empty output at once (watch events are flushed one by
/// one). Memory is bounded by the largest item/event, never the whole body, except for
/// Discovery/OpenApi/Status/Object which are small and may buffer until `finish`.
pub trait ChunkRewriter: Send {
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError>;
    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), TranslateError>;
}

/// Per-tenant ETag for buffered documents (discovery, openapi): hex sha256 of the output.
pub fn etag(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// `status` is the upstream HTTP status, `content_type` the upstream Content-Type.
/// Non-2xx JSON bodies are Status objects and are rewritten as such (names un-prefixed,
/// other tenants' names scrubbed).
pub fn response_rewriter(
    ctx: &TenantContext,
    plan: &Plan,
    status: u16,
    content_type: &str,
) -> Box<dyn ChunkRewriter> {
    let ctx = ctx.clone();
    let json = is_json(content_type);
    if status == 101 || status == 304 || status == 204 {
        // No body of ours to translate: an upgraded stream, or an empty body.
        return Box::new(PassThrough);
    }
    if !(200..300).contains(&status) {
        return Box::new(Buffered::new(ctx, Whole::Error { json }, None, false));
    }
    let scope = TableScope {
        resource: plan.resource.clone(),
        cluster_wide: plan.cluster_wide,
    };
    match plan.response {
        ResponseKind::PassThrough => Box::new(PassThrough),
        // Always JSON whatever the Content-Type says (1.33 serves the /openapi/v3 index as
        // text/plain); parsing decides.
        ResponseKind::Discovery => Box::new(Buffered::new(ctx, Whole::Discovery, None, false)),
        ResponseKind::OpenApi => Box::new(Buffered::new(ctx, Whole::OpenApi, None, false)),
        _ if !json => Box::new(Refuse(content_type.to_owned())),
        ResponseKind::Object | ResponseKind::Status => Box::new(Buffered::new(
            ctx,
            Whole::Object,
            scope.resource.clone(),
            scope.cluster_wide,
        )),
        ResponseKind::List | ResponseKind::Table => {
            Box::new(CollectionRewriter::new(DomCollection::new(ctx, scope)))
        }
        ResponseKind::Watch | ResponseKind::TableWatch => {
            Box::new(WatchRewriter::new(DomEvents::new(ctx, scope)))
        }
    }
}

/// JSON media types, including `application/json;as=Table;…`, `…;stream=watch` and the
/// aggregated discovery parameters. An absent Content-Type is treated as JSON and parsing
/// decides.
fn is_json(content_type: &str) -> bool {
    let mt = content_type.split(';').next().unwrap_or("").trim();
    let ends_json = mt.len() >= 5
        && mt
            .get(mt.len() - 5..)
            .is_some_and(|end| end.eq_ignore_ascii_case("+json"));
    mt.is_empty() || mt.eq_ignore_ascii_case("application/json") || ends_json
}

struct PassThrough;

impl ChunkRewriter for PassThrough {
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError> {
        out.extend_from_slice(chunk);
        Ok(())
    }
    fn finish(&mut self, _out: &mut Vec<u8>) -> Result<(), TranslateError> {
        Ok(())
    }
}

/// A body we cannot translate (protobuf or CBOR where paddock negotiated JSON): refused, never
/// forwarded untranslated.
struct Refuse(String);

impl ChunkRewriter for Refuse {
    fn feed(&mut self, _chunk: &[u8], _out: &mut Vec<u8>) -> Result<(), TranslateError> {
        Err(TranslateError::Upstream(format!(
            "upstream answered with {:?}, which paddock cannot translate",
            self.0
        )))
    }
    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), TranslateError> {
        self.feed(&[], out)
    }
}

impl<C: Collection> ChunkRewriter for CollectionRewriter<C> {
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError> {
        CollectionRewriter::feed(self, chunk, out)
    }
    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), TranslateError> {
        CollectionRewriter::finish(self, out)
    }
}

impl<E: Events> ChunkRewriter for WatchRewriter<E> {
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError> {
        WatchRewriter::feed(self, chunk, out)
    }
    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), TranslateError> {
        WatchRewriter::finish(self, out)
    }
}

#[derive(Debug, Clone, Copy)]
enum Whole {
    /// A non-2xx body.
    Error {
        json: bool,
    },
    Object,
    Discovery,
    OpenApi,
}

/// Buffers the whole body and rewrites it in `finish`.
struct Buffered {
    ctx: TenantContext,
    what: Whole,
    resource: Option<Arc<ResourceInfo>>,
    cluster_wide: bool,
    buf: Vec<u8>,
}

impl Buffered {
    fn new(
        ctx: TenantContext,
        what: Whole,
        resource: Option<Arc<ResourceInfo>>,
        cluster_wide: bool,
    ) -> Self {
        Buffered {
            ctx,
            what,
            resource,
            cluster_wide,
            buf: Vec::new(),
        }
    }
}

impl ChunkRewriter for Buffered {
    fn feed(&mut self, chunk: &[u8], _out: &mut Vec<u8>) -> Result<(), TranslateError> {
        if self.buf.len() + chunk.len() > MAX_BUFFERED {
            return Err(TranslateError::Upstream(format!(
                "upstream response exceeds {MAX_BUFFERED} bytes"
            )));
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), TranslateError> {
        let body = std::mem::take(&mut self.buf);
        match self.what {
            Whole::Error { json } => error_body_down(&self.ctx, &body, json, out),
            Whole::Object => object_whole_down(
                &self.ctx,
                self.resource.as_deref(),
                self.cluster_wide,
                &body,
                out,
            ),
            Whole::Discovery => {
                out.extend_from_slice(&discovery_down(&self.ctx.tenant, &self.ctx.catalog, &body)?);
                Ok(())
            }
            Whole::OpenApi => {
                out.extend_from_slice(&openapi_down(&self.ctx.tenant, &self.ctx.catalog, &body)?);
                Ok(())
            }
        }
    }
}

/// A whole upstream answer held in memory (the server's short answers): the same bytes as
/// [`response_rewriter`] fed `raw` at once and finished, but an object (a GET of one object,
/// the answer to a write) is rewritten straight from `raw`: no boxed rewriter, no copy of the
/// body, no clone of the plan's resource unless the DOM path runs.
pub fn rewrite_whole_into(
    ctx: &TenantContext,
    plan: &Plan,
    status: u16,
    content_type: &str,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), TranslateError> {
    let object = matches!(plan.response, ResponseKind::Object | ResponseKind::Status);
    // The cases `response_rewriter` answers with `Buffered(Whole::Object)`.
    if object && (200..300).contains(&status) && status != 204 && is_json(content_type) {
        if raw.len() > MAX_BUFFERED {
            return Err(TranslateError::Upstream(format!(
                "upstream response exceeds {MAX_BUFFERED} bytes"
            )));
        }
        return object_whole_down(ctx, plan.resource.as_deref(), plan.cluster_wide, raw, out);
    }
    let mut rw = response_rewriter(ctx, plan, status, content_type);
    rw.feed(raw, out)?;
    rw.finish(out)
}

/// One whole object (or a Status, a List or a Table a write or GET answered with). Objects of
/// the simple built-in kinds take the list items' splice path; the rest a DOM.
fn object_whole_down(
    ctx: &TenantContext,
    resource: Option<&ResourceInfo>,
    cluster_wide: bool,
    body: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), TranslateError> {
    // A single object outside the tenant: as far as the tenant knows, it does not exist.
    let not_found =
        || TranslateError::NotFound("the server could not find the requested resource".into());
    match Splicer::new(&ctx.tenant).object(body, None, out) {
        Fast::Keep => return Ok(()),
        Fast::Drop => return Err(not_found()),
        Fast::Fallback => {}
    }
    let mut v: Value = serde_json::from_slice(body)
        .map_err(|e| TranslateError::Upstream(format!("upstream object: {e}")))?;
    let scope = TableScope {
        resource: resource.cloned().map(Arc::new),
        cluster_wide,
    };
    if any_down(ctx, &scope, &mut v)? == Disposition::Drop {
        return Err(not_found());
    }
    write_value(out, &v)
}

fn write_value(out: &mut Vec<u8>, v: &Value) -> Result<(), TranslateError> {
    serde_json::to_writer(&mut *out, v).map_err(|e| TranslateError::Internal(format!("json: {e}")))
}

/// A non-2xx body. JSON: a Status (rewritten as such); anything else that is text goes through
/// `text_down`; binary error bodies are replaced by a generic Status, since paddock cannot
/// tell what they name.
fn error_body_down(
    ctx: &TenantContext,
    body: &[u8],
    json: bool,
    out: &mut Vec<u8>,
) -> Result<(), TranslateError> {
    if body.is_empty() {
        return Ok(());
    }
    if json && let Ok(mut v) = serde_json::from_slice::<Value>(body) {
        {
            if v.get("kind").and_then(Value::as_str) == Some("Status") {
                status_down(ctx, &mut v);
            } else {
                // Not a Status (an aggregated API's own error document): no structure to
                // trust, so every string in it is scrubbed.
                strings_down(ctx, &mut v);
            }
            return write_value(out, &v);
        }
    }
    match std::str::from_utf8(body) {
        Ok(s) => out.extend_from_slice(text_down(ctx, s).as_bytes()),
        Err(_) => out.extend_from_slice(&crate::error::status::status_body(
            502,
            "InternalError",
            "upstream returned an error paddock cannot translate",
        )),
    }
    Ok(())
}

/// Every string value in a document through `text_down` (keys are left alone).
fn strings_down(ctx: &TenantContext, v: &mut Value) {
    match v {
        Value::String(s) => *s = text_down(ctx, s),
        Value::Array(a) => a.iter_mut().for_each(|x| strings_down(ctx, x)),
        Value::Object(o) => o.values_mut().for_each(|x| strings_down(ctx, x)),
        _ => {}
    }
}

/// Rewrites any complete upstream document that is not discovery or OpenAPI: a Status, a
/// Table, a List, or a single object.
pub fn any_down(
    ctx: &TenantContext,
    scope: &TableScope,
    v: &mut Value,
) -> Result<Disposition, TranslateError> {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or_default();
    let av = v
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind == "Status" && (av == "v1" || av.is_empty()) {
        status_down(ctx, v);
        return Ok(Disposition::Keep);
    }
    if kind == "Table" && av.starts_with("meta.k8s.io/") {
        table_down(ctx, scope, &mut TableState::default(), v, false)?;
        return Ok(Disposition::Keep);
    }
    if kind.ends_with("List") && v.get("items").is_some_and(Value::is_array) {
        list_down(ctx, scope, v)?;
        return Ok(Disposition::Keep);
    }
    object_down(ctx, v)
}

/// A List held in memory (deletecollection answers, lists inside other documents).
fn list_down(ctx: &TenantContext, scope: &TableScope, v: &mut Value) -> Result<(), TranslateError> {
    let Some(o) = v.as_object_mut() else {
        return Ok(());
    };
    let item_type = ItemType::from_list(
        scope.resource.as_deref(),
        o.get("apiVersion").and_then(Value::as_str),
        o.get("kind").and_then(Value::as_str),
    );
    if let Some(Value::String(av)) = o.get_mut("apiVersion") {
        *av = api_version_down(&ctx.tenant, av)?;
    }
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("remainingItemCount");
    }
    if let Some(items) = o.get_mut("items").and_then(Value::as_array_mut) {
        let mut kept = Vec::with_capacity(items.len());
        for mut it in items.drain(..) {
            if item_value_down(ctx, &item_type, &mut it)? == Disposition::Keep {
                kept.push(it);
            }
        }
        *items = kept;
    }
    Ok(())
}

/// The apiVersion and kind of a list's items. Items of built-in lists carry neither (only CR
/// lists' items do), but `object_down` needs them to know the kind's rules.
#[derive(Debug, Clone, Default)]
pub struct ItemType {
    api_version: Option<String>,
    kind: Option<String>,
}

impl ItemType {
    /// (group, kind) for the splice fast path.
    fn group_kind(&self) -> Option<(&str, &str)> {
        let av = self.api_version.as_deref()?;
        let kind = self.kind.as_deref()?;
        Some((av.rsplit_once('/').map_or("", |(g, _)| g), kind))
    }

    pub fn from_list(
        resource: Option<&ResourceInfo>,
        list_api_version: Option<&str>,
        list_kind: Option<&str>,
    ) -> Self {
        if let Some(r) = resource.filter(|r| !r.kind.is_empty()) {
            return ItemType {
                api_version: Some(r.upstream_api_version()),
                kind: Some(r.kind.clone()),
            };
        }
        ItemType {
            api_version: list_api_version.map(str::to_owned),
            kind: list_kind
                .and_then(|k| k.strip_suffix("List"))
                .map(str::to_owned),
        }
    }
}

/// Rewrites one list item held as a DOM, filling in apiVersion and kind for the rules and
/// taking them out again if upstream had left them out.
pub fn item_value_down(
    ctx: &TenantContext,
    ty: &ItemType,
    item: &mut Value,
) -> Result<Disposition, TranslateError> {
    let Some(o) = item.as_object_mut() else {
        return Err(TranslateError::Upstream(
            "list item is not an object".into(),
        ));
    };
    let mut injected = Vec::new();
    for (k, v) in [("apiVersion", &ty.api_version), ("kind", &ty.kind)] {
        if !o.contains_key(k)
            && let Some(v) = v
        {
            o.insert(k.into(), Value::String(v.clone()));
            injected.push(k);
        }
    }
    let d = object_down(ctx, item)?;
    if !injected.is_empty()
        && let Some(o) = item.as_object_mut()
    {
        for k in injected {
            o.shift_remove(k);
        }
    }
    Ok(d)
}

/// One list item given as bytes: the per-item path of the streaming list rewriter.
/// (A splice fast path for common kinds can replace this without touching the framing.)
pub fn item_bytes_down(
    ctx: &TenantContext,
    ty: &ItemType,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<bool, TranslateError> {
    let mut v: Value = serde_json::from_slice(raw)
        .map_err(|e| TranslateError::Upstream(format!("list item: {e}")))?;
    if item_value_down(ctx, ty, &mut v)? == Disposition::Drop {
        return Ok(false);
    }
    write_value(out, &v)?;
    Ok(true)
}

/// The streaming collection policy: Lists and Tables. Items take the splice fast path where it
/// applies and a DOM otherwise; rows always a DOM (they are small).
pub struct DomCollection {
    ctx: TenantContext,
    splicer: Splicer,
    scope: TableScope,
    list_api_version: Option<String>,
    list_kind: Option<String>,
    item_type: Option<ItemType>,
    columns: Option<Columns>,
    /// A Table row's rewritten object, reused from row to row.
    row_scratch: Vec<u8>,
}

impl DomCollection {
    pub fn new(ctx: TenantContext, scope: TableScope) -> Self {
        DomCollection {
            splicer: Splicer::new(&ctx.tenant),
            ctx,
            scope,
            list_api_version: None,
            list_kind: None,
            item_type: None,
            columns: None,
            row_scratch: Vec::new(),
        }
    }
}

impl DomCollection {
    /// The fast path of a Table row (what `kubectl get` asks for): the row's object (a
    /// PartialObjectMetadata with managedFields, or the whole object) goes through the
    /// splicer as the listed kind; only the small `cells` array is parsed. `None` when the
    /// splicer is unsure (the DOM path then runs; nothing was written); `Some(keep)`
    /// otherwise. Equivalent to `row_down` (tests below, and on every captured Table).
    fn row_fast(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Option<bool> {
        let info = self.scope.resource.as_ref()?;
        if !crate::response::splice::is_fast_kind(&info.group, &info.kind) {
            return None;
        }
        let mut members = crate::response::members::Members::new(raw);
        let mut parts: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> =
            Vec::with_capacity(3);
        let (mut cells_at, mut object_at) = (None, None);
        while let Some((key, escaped)) = members.next_key().ok()? {
            if escaped {
                return None;
            }
            let value = members.value().ok()?;
            match &raw[key.clone()] {
                b"cells" => cells_at = Some(parts.len()),
                b"object" => object_at = Some(parts.len()),
                _ => {}
            }
            parts.push((key, value));
        }
        let (cells_at, object_at) = (cells_at?, object_at?);
        let object = &raw[parts[object_at].1.clone()];
        // One scratch buffer per response, not an allocation per row.
        let mut object_out = std::mem::take(&mut self.row_scratch);
        object_out.clear();
        let (fast, found) =
            self.splicer
                .object_as_found(object, (&info.group, &info.kind), &mut object_out);
        let kept = match fast {
            Fast::Keep => {
                self.write_row(raw, &parts, cells_at, object_at, &object_out, &found, out)
            }
            Fast::Drop => Some(false),
            Fast::Fallback => None,
        };
        self.row_scratch = object_out;
        kept
    }

    /// Writes a row whose object was spliced into `object_out` (`found` says where its name
    /// and namespace are there); None, with nothing written, when unsure.
    #[allow(clippy::too_many_arguments)]
    fn write_row(
        &self,
        raw: &[u8],
        parts: &[(std::ops::Range<usize>, std::ops::Range<usize>)],
        cells_at: usize,
        object_at: usize,
        object_out: &[u8],
        found: &crate::response::splice::Found,
        out: &mut Vec<u8>,
    ) -> Option<bool> {
        #[derive(serde::Deserialize)]
        struct Obj<'a> {
            #[serde(borrow, default)]
            metadata: Option<Meta<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Meta<'a> {
            #[serde(borrow, default)]
            name: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            namespace: Option<std::borrow::Cow<'a, str>>,
        }
        let text = |r: &std::ops::Range<usize>| std::str::from_utf8(&object_out[r.clone()]).ok();
        let (name, namespace) = match (&found.name, &found.namespace) {
            // Where the splice saw both (the usual order: name before namespace), no second
            // pass over the object (whose managedFields are most of it).
            (Some(n), Some(ns)) => (
                Some(std::borrow::Cow::Borrowed(text(n)?)),
                Some(std::borrow::Cow::Borrowed(text(ns)?)),
            ),
            _ => {
                let obj: Obj = serde_json::from_slice(object_out).ok()?;
                obj.metadata
                    .map(|m| (m.name, m.namespace))
                    .unwrap_or_default()
            }
        };
        let mut cells: Vec<Value> = serde_json::from_slice(&raw[parts[cells_at].1.clone()]).ok()?;
        let cols = self.columns.clone().unwrap_or_default();
        crate::response::table::cells_down(
            &self.ctx,
            &cols,
            &mut cells,
            name.as_deref(),
            namespace.as_deref(),
        );
        // Straight into `out`; on failure it is cut back to where this row began.
        let mark = out.len();
        out.push(b'{');
        for (i, (key, value)) in parts.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(&raw[key.clone()]);
            out.extend_from_slice(b"\":");
            if i == cells_at {
                if serde_json::to_writer(&mut *out, &cells).is_err() {
                    out.truncate(mark);
                    return None;
                }
            } else if i == object_at {
                out.extend_from_slice(object_out);
            } else {
                out.extend_from_slice(&raw[value.clone()]);
            }
        }
        out.push(b'}');
        Some(true)
    }
}

impl Collection for DomCollection {
    fn element(
        &mut self,
        key: &str,
        raw: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool, TranslateError> {
        match key {
            "items" => {
                let ty = self.item_type.get_or_insert_with(|| {
                    ItemType::from_list(
                        self.scope.resource.as_deref(),
                        self.list_api_version.as_deref(),
                        self.list_kind.as_deref(),
                    )
                });
                match self.splicer.object(raw, ty.group_kind(), out) {
                    Fast::Keep => Ok(true),
                    Fast::Drop => Ok(false),
                    Fast::Fallback => item_bytes_down(&self.ctx, ty, raw, out),
                }
            }
            _ => {
                if let Some(keep) = self.row_fast(raw, out) {
                    return Ok(keep);
                }
                let mut row: Value = serde_json::from_slice(raw)
                    .map_err(|e| TranslateError::Upstream(format!("table row: {e}")))?;
                if row_down(&self.ctx, &self.scope, self.columns.as_ref(), &mut row)?
                    == Disposition::Drop
                {
                    return Ok(false);
                }
                write_value(out, &row)?;
                Ok(true)
            }
        }
    }

    fn member(&mut self, key: &str, raw: &[u8], out: &mut Vec<u8>) -> Result<bool, TranslateError> {
        match key {
            "metadata" => list_meta_down(
                raw,
                out,
                crate::response::table::keeps_remaining(&self.scope),
            )?,
            "apiVersion" => {
                if let Ok(av) = serde_json::from_slice::<String>(raw) {
                    self.list_api_version = Some(av);
                }
                api_version_raw_down(&self.ctx.tenant, raw, out)?
            }
            "kind" => {
                self.list_kind = serde_json::from_slice::<String>(raw).ok();
                out.extend_from_slice(raw);
            }
            "columnDefinitions" => {
                let defs: Value = serde_json::from_slice(raw)
                    .map_err(|e| TranslateError::Upstream(format!("columnDefinitions: {e}")))?;
                self.columns = Columns::from_defs(&defs);
                out.extend_from_slice(raw);
            }
            // `items: null` and the like; any other member of a ListMeta-bearing collection
            // carries no names.
            _ => out.extend_from_slice(raw),
        }
        Ok(true)
    }
}

/// The streaming watch policy, for object and Table watches alike (a Table watch's events
/// carry a Table each).
pub struct DomEvents {
    ctx: TenantContext,
    splicer: Splicer,
    scope: TableScope,
    table: TableState,
}

impl DomEvents {
    pub fn new(ctx: TenantContext, scope: TableScope) -> Self {
        DomEvents {
            splicer: Splicer::new(&ctx.tenant),
            ctx,
            scope,
            table: TableState::default(),
        }
    }
}

impl Events for DomEvents {
    fn object(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<bool, TranslateError> {
        match self.splicer.object(raw, None, out) {
            Fast::Keep => return Ok(true),
            Fast::Drop => return Ok(false),
            Fast::Fallback => {}
        }
        let mut v: Value = serde_json::from_slice(raw)
            .map_err(|e| TranslateError::Upstream(format!("watch event object: {e}")))?;
        let is_table = v.get("kind").and_then(Value::as_str) == Some("Table")
            && v.get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|a| a.starts_with("meta.k8s.io/"));
        let d = if is_table {
            table_down(&self.ctx, &self.scope, &mut self.table, &mut v, true)?
        } else {
            object_down(&self.ctx, &mut v)?
        };
        if d == Disposition::Drop {
            return Ok(false);
        }
        write_value(out, &v)?;
        Ok(true)
    }

    fn bookmark(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError> {
        // A bookmark names no object: only its apiVersion (a CR group) needs the tenant view.
        let mut v: Map<String, Value> = serde_json::from_slice(raw)
            .map_err(|e| TranslateError::Upstream(format!("bookmark: {e}")))?;
        if let Some(Value::String(av)) = v.get_mut("apiVersion") {
            *av = api_version_down(&self.ctx.tenant, av)?;
        }
        serde_json::to_writer(&mut *out, &v)
            .map_err(|e| TranslateError::Internal(format!("json: {e}")))
    }

    fn error(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError> {
        let mut v: Value = serde_json::from_slice(raw)
            .map_err(|e| TranslateError::Upstream(format!("watch error event: {e}")))?;
        status_down(&self.ctx, &mut v);
        write_value(out, &v)
    }
}

#[cfg(test)]
#[path = "row_fast_tests.rs"]
mod row_fast_tests;
