//! The merge of a cluster-wide list answered one namespace at a time (the gateway's fan-out):
//! the envelope of the first part, the items (or Table rows) of every part in order, and the
//! smallest resourceVersion. Items stay raw JSON: nothing is parsed twice.

use serde_json::value::RawValue;

use crate::error::TranslateError;

/// The pieces of a rewritten list (or Table) that the merge needs; items stay raw JSON.
#[derive(serde::Deserialize)]
struct ListPieces<'a> {
    #[serde(borrow)]
    kind: Option<&'a RawValue>,
    #[serde(borrow, rename = "apiVersion")]
    api_version: Option<&'a RawValue>,
    #[serde(default)]
    metadata: ListMeta,
    #[serde(borrow, rename = "columnDefinitions")]
    column_definitions: Option<&'a RawValue>,
    #[serde(borrow, default)]
    items: Vec<&'a RawValue>,
    #[serde(borrow, default)]
    rows: Vec<&'a RawValue>,
}

#[derive(serde::Deserialize, Default)]
struct ListMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
}

/// The merged list being written: the envelope from the first part, the items of every part
/// in namespace order, and `metadata` last, once the resourceVersion is known.
pub struct ListMerger {
    table: bool,
    started: bool,
    first_item: bool,
    /// The smallest resourceVersion of the parts: a watch from it may repeat an event of a
    /// namespace listed later, but never misses one of a namespace listed earlier.
    resource_version: Option<(u64, String)>,
    /// A resourceVersion that is not a number (never seen from kube-apiserver): the first one.
    opaque_version: Option<String>,
    /// Used when no part has a resourceVersion.
    fallback_version: Option<String>,
}

impl ListMerger {
    pub fn new(table: bool) -> Self {
        ListMerger {
            table,
            started: false,
            first_item: true,
            resource_version: None,
            opaque_version: None,
            fallback_version: None,
        }
    }

    /// Makes `rv` the merged list's resourceVersion, whatever the parts say (a list merged
    /// across clusters carries a vector of theirs: `span::encode_versions`).
    pub fn set_resource_version(&mut self, rv: String) {
        self.opaque_version = Some(rv);
    }

    /// Appends one successful part's items to `out` (the envelope first, from the first part).
    pub fn push(&mut self, doc: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError> {
        let pieces: ListPieces<'_> = serde_json::from_slice(doc)
            .map_err(|e| TranslateError::Internal(format!("merging lists: {e}")))?;
        if !self.started {
            self.started = true;
            out.push(b'{');
            if let Some(k) = pieces.kind {
                out.extend_from_slice(b"\"kind\":");
                out.extend_from_slice(k.get().as_bytes());
                out.push(b',');
            }
            if let Some(a) = pieces.api_version {
                out.extend_from_slice(b"\"apiVersion\":");
                out.extend_from_slice(a.get().as_bytes());
                out.push(b',');
            }
            if self.table {
                out.extend_from_slice(b"\"columnDefinitions\":");
                out.extend_from_slice(
                    pieces
                        .column_definitions
                        .map_or("[]", |c| c.get())
                        .as_bytes(),
                );
                out.extend_from_slice(b",\"rows\":[");
            } else {
                out.extend_from_slice(b"\"items\":[");
            }
        }
        if let Some(rv) = pieces.metadata.resource_version {
            match rv.parse::<u64>() {
                Ok(n) if self.resource_version.as_ref().is_none_or(|(m, _)| n < *m) => {
                    self.resource_version = Some((n, rv));
                }
                Ok(_) => {}
                Err(_) => {
                    self.opaque_version.get_or_insert(rv);
                }
            }
        }
        let items = if self.table {
            &pieces.rows
        } else {
            &pieces.items
        };
        for item in items {
            if !self.first_item {
                out.push(b',');
            }
            self.first_item = false;
            out.extend_from_slice(item.get().as_bytes());
        }
        Ok(())
    }

    /// The merged list's resourceVersion when no part has one (every part an empty stand-in).
    pub fn fallback_resource_version(&mut self, rv: String) {
        self.fallback_version = Some(rv);
    }

    /// Closes the items and writes `metadata`.
    pub fn finish(self, out: &mut Vec<u8>) {
        let rv = self
            .opaque_version
            .or(self.resource_version.map(|(_, s)| s))
            .or(self.fallback_version)
            .unwrap_or_else(|| "0".to_string());
        out.extend_from_slice(b"],\"metadata\":{\"resourceVersion\":");
        // A resourceVersion is a plain string; serde_json quotes and escapes it.
        out.extend_from_slice(
            serde_json::to_string(&rv)
                .unwrap_or_else(|_| "\"0\"".to_string())
                .as_bytes(),
        );
        out.extend_from_slice(b"}}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn merged(table: bool, parts: &[&str]) -> Value {
        let mut m = ListMerger::new(table);
        let mut out = Vec::new();
        for p in parts {
            m.push(p.as_bytes(), &mut out).expect("push");
        }
        m.finish(&mut out);
        serde_json::from_slice(&out).expect("the merged list is JSON")
    }

    #[test]
    fn merges_items_in_order_with_the_smallest_resource_version() {
        let v = merged(
            false,
            &[
                r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"120"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#,
                r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[]}"#,
                r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"130","continue":"x"},"items":[{"metadata":{"name":"c"}}]}"#,
            ],
        );
        assert_eq!(v["kind"], "ConfigMapList");
        assert_eq!(v["apiVersion"], "v1");
        // The smallest: a watch from it can repeat an event, never miss one.
        assert_eq!(v["metadata"], serde_json::json!({"resourceVersion": "100"}));
        let names: Vec<&str> = v["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn a_part_without_resource_version_does_not_lower_it() {
        // A namespace gone or not yet bound contributes an empty part without one.
        let v = merged(
            false,
            &[
                r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}"#,
                r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"120"},"items":[]}"#,
            ],
        );
        assert_eq!(v["metadata"], serde_json::json!({"resourceVersion": "120"}));
    }

    #[test]
    fn merges_table_rows_under_the_first_column_definitions() {
        let v = merged(
            true,
            &[
                r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"columnDefinitions":[{"name":"Name"}],"rows":[{"cells":["a"]}]}"#,
                r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"columnDefinitions":[{"name":"Name"}],"rows":[{"cells":["b"]}]}"#,
            ],
        );
        assert_eq!(v["kind"], "Table");
        assert_eq!(
            v["columnDefinitions"],
            serde_json::json!([{"name": "Name"}])
        );
        assert_eq!(
            v["rows"],
            serde_json::json!([{"cells": ["a"]}, {"cells": ["b"]}])
        );
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        assert!(v.get("items").is_none());
    }

    #[test]
    fn refuses_a_part_that_is_not_a_list() {
        let mut m = ListMerger::new(false);
        let mut out = Vec::new();
        assert!(m.push(b"{not json", &mut out).is_err());
    }
}
