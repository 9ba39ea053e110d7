//! The billing key: labels and annotations a platform admin sets on a tenant, stamped on every
//! upstream namespace of the tenant and kept there (docs/metering.md).
//!
//! Which keys a namespace holds for billing is written on the namespace itself, in two
//! annotations ([`BILLING_LABELS_ANNOTATION`], [`BILLING_ANNOTATIONS_ANNOTATION`]: the keys,
//! comma-separated). The admission guard reads them from the old object and refuses a tenant's
//! write that changes or removes any of those keys, or the two annotations themselves; so the
//! guard needs no knowledge of any tenant record.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Annotation holding the comma-separated keys of the billing labels of a namespace.
pub const BILLING_LABELS_ANNOTATION: &str = "paddock.io/billing-labels";
/// Annotation holding the comma-separated keys of the billing annotations of a namespace.
pub const BILLING_ANNOTATIONS_ANNOTATION: &str = "paddock.io/billing-annotations";
/// The server-side-apply field manager that owns the billing key on a namespace: separate
/// from paddock's other namespace fields, so that dropping a key from the tenant's billing
/// key removes it upstream (and only it).
pub const BILLING_FIELD_MANAGER: &str = "paddock-billing";
/// Most labels plus annotations one billing key may hold (each is stamped on every namespace
/// of the tenant, and one series label of nothing: they never reach `/metrics`).
pub const MAX_BILLING_ENTRIES: usize = 32;
/// Longest annotation value of a billing key (a label value is at most 63, as upstream).
pub const MAX_ANNOTATION_VALUE: usize = 1024;

/// Why a billing key is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BillingError {
    #[error(
        "spec.billing.{field}: key {key:?} is not a valid qualified name ([prefix/]name, name at most 63 characters of [A-Za-z0-9-_.], prefix a DNS subdomain)"
    )]
    BadKey { field: &'static str, key: String },
    #[error(
        "spec.billing.{field}: key {key:?} is reserved (paddock.io, kubernetes.io and k8s.io keys belong to the platform)"
    )]
    ReservedKey { field: &'static str, key: String },
    #[error(
        "spec.billing.labels: value {value:?} of {key:?} is not a valid label value (at most 63 characters of [A-Za-z0-9-_.], alphanumeric at both ends)"
    )]
    BadLabelValue { key: String, value: String },
    #[error(
        "spec.billing.annotations: value of {key:?} is longer than {MAX_ANNOTATION_VALUE} bytes"
    )]
    LongAnnotation { key: String },
    #[error("spec.billing: at most {MAX_BILLING_ENTRIES} labels and annotations in all")]
    TooMany,
    #[error("spec.billing: {0}")]
    Shape(String),
}

/// Labels and annotations stamped on every upstream namespace of a tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BillingKey {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl BillingKey {
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.annotations.is_empty()
    }

    /// Parses `spec.billing` of a Tenant (null or absent: empty) and validates it.
    pub fn from_spec(v: &Value) -> Result<BillingKey, BillingError> {
        if v.is_null() {
            return Ok(BillingKey::default());
        }
        let key: BillingKey =
            serde_json::from_value(v.clone()).map_err(|e| BillingError::Shape(e.to_string()))?;
        key.validate()?;
        Ok(key)
    }

    /// Every key a qualified name outside the platform's domains, label values valid label
    /// values, annotation values bounded, at most [`MAX_BILLING_ENTRIES`] in all.
    pub fn validate(&self) -> Result<(), BillingError> {
        if self.labels.len() + self.annotations.len() > MAX_BILLING_ENTRIES {
            return Err(BillingError::TooMany);
        }
        for (field, map) in [("labels", &self.labels), ("annotations", &self.annotations)] {
            for key in map.keys() {
                check_key(field, key)?;
            }
        }
        for (key, value) in &self.labels {
            if !is_label_value(value) {
                return Err(BillingError::BadLabelValue {
                    key: key.clone(),
                    value: value.clone(),
                });
            }
        }
        if let Some(key) = self
            .annotations
            .iter()
            .find(|(_, v)| v.len() > MAX_ANNOTATION_VALUE)
            .map(|(k, _)| k.clone())
        {
            return Err(BillingError::LongAnnotation { key });
        }
        Ok(())
    }

    /// A JSON merge patch (RFC 7386) of `{"labels": {...}, "annotations": {...}}`: a `null`
    /// value removes a key; the result is validated.
    pub fn merge_patch(&self, patch: &Value) -> Result<BillingKey, BillingError> {
        let Some(fields) = patch.as_object() else {
            return Err(BillingError::Shape(
                "the body must be a JSON object, e.g. {\"labels\": {\"cost-center\": \"cc-1\", \"team\": null}}".into(),
            ));
        };
        let mut out = self.clone();
        for (field, change) in fields {
            let target = match field.as_str() {
                "labels" => &mut out.labels,
                "annotations" => &mut out.annotations,
                other => return Err(BillingError::Shape(format!("unknown field {other:?}"))),
            };
            if change.is_null() {
                target.clear();
                continue;
            }
            let Some(entries) = change.as_object() else {
                return Err(BillingError::Shape(format!("{field} must be an object")));
            };
            for (k, v) in entries {
                match v {
                    Value::Null => {
                        target.remove(k);
                    }
                    Value::String(s) => {
                        target.insert(k.clone(), s.clone());
                    }
                    _ => {
                        return Err(BillingError::Shape(format!(
                            "{field}.{k} must be a string or null"
                        )));
                    }
                }
            }
        }
        out.validate()?;
        Ok(out)
    }

    /// The server-side apply body that stamps this key on namespace `upstream_ns` (applied
    /// with [`BILLING_FIELD_MANAGER`], forced, so the fields it no longer lists are removed).
    /// An empty key stamps nothing, not even the key lists: namespaces of tenants without a
    /// billing key look as they always did.
    pub fn namespace_stamp(&self, upstream_ns: &str) -> Value {
        if self.is_empty() {
            return json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": upstream_ns}});
        }
        let mut annotations: BTreeMap<&str, String> = self
            .annotations
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        annotations.insert(BILLING_LABELS_ANNOTATION, join_keys(&self.labels));
        annotations.insert(BILLING_ANNOTATIONS_ANNOTATION, join_keys(&self.annotations));
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": upstream_ns, "labels": self.labels, "annotations": annotations}})
    }

    /// Does the upstream namespace `ns` carry exactly this key (values and the key lists)?
    pub fn is_stamped_on(&self, ns: &Value) -> bool {
        let meta = &ns["metadata"];
        let ann = |k: &str| meta["annotations"][k].as_str();
        if self.is_empty() {
            return ann(BILLING_LABELS_ANNOTATION).is_none()
                && ann(BILLING_ANNOTATIONS_ANNOTATION).is_none();
        }
        ann(BILLING_LABELS_ANNOTATION) == Some(join_keys(&self.labels).as_str())
            && ann(BILLING_ANNOTATIONS_ANNOTATION) == Some(join_keys(&self.annotations).as_str())
            && self
                .labels
                .iter()
                .all(|(k, v)| meta["labels"][k].as_str() == Some(v))
            && self
                .annotations
                .iter()
                .all(|(k, v)| ann(k) == Some(v.as_str()))
    }
}

fn join_keys(m: &BTreeMap<String, String>) -> String {
    m.keys().map(String::as_str).collect::<Vec<_>>().join(",")
}

/// The CEL validations of the admission guard's namespace policy that keep the billing key:
/// `oldAnn`/`newAnn`/`oldLabels`/`newLabels` are variables of that policy.
pub fn guard_validations() -> Value {
    let keep_list = |a: &str| {
        format!(
            "(('{a}' in variables.newAnn) == ('{a}' in variables.oldAnn)) && \
             (!('{a}' in variables.newAnn) || variables.newAnn['{a}'] == variables.oldAnn['{a}'])"
        )
    };
    // A key is billed when it appears in the old object's comma-separated list; label keys
    // hold no comma, so `,list,` containing `,key,` is exact.
    let kept = |list: &str, old: &str, new: &str| {
        format!(
            "!('{list}' in variables.oldAnn) || variables.{old}.all(k, \
               !((',' + variables.oldAnn['{list}'] + ',').contains(',' + k + ',')) || \
               (k in variables.{new} && variables.{new}[k] == variables.{old}[k]))"
        )
    };
    let msg = "paddock: the tenant's billing key (the labels and annotations listed in paddock.io/billing-labels and paddock.io/billing-annotations) is set by the platform admin and cannot be changed or removed";
    json!([
        {"expression": format!("({}) && ({})", keep_list(BILLING_LABELS_ANNOTATION), keep_list(BILLING_ANNOTATIONS_ANNOTATION)), "message": msg},
        {"expression": kept(BILLING_LABELS_ANNOTATION, "oldLabels", "newLabels"), "message": msg},
        {"expression": kept(BILLING_ANNOTATIONS_ANNOTATION, "oldAnn", "newAnn"), "message": msg}
    ])
}

fn check_key(field: &'static str, key: &str) -> Result<(), BillingError> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let bad = || BillingError::BadKey {
        field,
        key: key.to_owned(),
    };
    if !is_label_value(name) || name.is_empty() {
        return Err(bad());
    }
    if let Some(p) = prefix {
        if !is_dns_subdomain(p) {
            return Err(bad());
        }
        let reserved = ["paddock.io", "kubernetes.io", "k8s.io"]
            .iter()
            .any(|d| p == *d || p.ends_with(&format!(".{d}")));
        if reserved {
            return Err(BillingError::ReservedKey {
                field,
                key: key.to_owned(),
            });
        }
    }
    Ok(())
}

/// A label value: empty, or at most 63 of `[A-Za-z0-9-_.]` with alphanumerics at both ends.
fn is_label_value(v: &str) -> bool {
    let b = v.as_bytes();
    if b.is_empty() {
        return true;
    }
    b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns_subdomain(p: &str) -> bool {
    p.len() <= 253
        && p.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> BillingKey {
        let m = |xs: &[(&str, &str)]| {
            xs.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        BillingKey {
            labels: m(labels),
            annotations: m(annotations),
        }
    }

    #[test]
    fn validates_keys_and_values() {
        assert!(
            key(&[("cost-center", "cc-1"), ("acme.com/team", "a")], &[])
                .validate()
                .is_ok()
        );
        assert!(matches!(
            key(&[("paddock.io/tenant", "x")], &[]).validate(),
            Err(BillingError::ReservedKey { .. })
        ));
        assert!(matches!(
            key(&[], &[("pod-security.kubernetes.io/enforce", "x")]).validate(),
            Err(BillingError::ReservedKey { .. })
        ));
        assert!(matches!(
            key(&[("a,b", "x")], &[]).validate(),
            Err(BillingError::BadKey { .. })
        ));
        assert!(matches!(
            key(&[("team", "not a value")], &[]).validate(),
            Err(BillingError::BadLabelValue { .. })
        ));
        let long = "x".repeat(MAX_ANNOTATION_VALUE + 1);
        assert!(matches!(
            key(&[], &[("note", &long)]).validate(),
            Err(BillingError::LongAnnotation { .. })
        ));
        let many: Vec<(String, String)> = (0..=MAX_BILLING_ENTRIES)
            .map(|i| (format!("k{i}"), "v".into()))
            .collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(key(&many, &[]).validate(), Err(BillingError::TooMany));
    }

    #[test]
    fn merge_patch_sets_and_removes() {
        let k = key(&[("team", "a"), ("cc", "1")], &[("owner", "x")]);
        let p = k
            .merge_patch(&json!({"labels": {"team": null, "env": "prod"}}))
            .unwrap();
        assert_eq!(p, key(&[("cc", "1"), ("env", "prod")], &[("owner", "x")]));
        let cleared = k.merge_patch(&json!({"annotations": null})).unwrap();
        assert!(cleared.annotations.is_empty());
        assert!(k.merge_patch(&json!({"labelz": {}})).is_err());
        assert!(k.merge_patch(&json!({"labels": {"team": 3}})).is_err());
        assert!(
            k.merge_patch(&json!({"labels": {"paddock.io/x": "1"}}))
                .is_err()
        );
        assert!(k.merge_patch(&json!([1])).is_err());
    }

    #[test]
    fn stamp_round_trips_through_is_stamped_on() {
        let k = key(&[("team", "a"), ("cc", "1")], &[("owner", "x")]);
        let stamp = k.namespace_stamp("foofoo-default");
        assert_eq!(
            stamp["metadata"]["annotations"][BILLING_LABELS_ANNOTATION],
            "cc,team"
        );
        assert_eq!(
            stamp["metadata"]["annotations"][BILLING_ANNOTATIONS_ANNOTATION],
            "owner"
        );
        assert!(k.is_stamped_on(&stamp));
        let mut changed = stamp.clone();
        changed["metadata"]["labels"]["team"] = json!("b");
        assert!(!k.is_stamped_on(&changed));
        assert!(!key(&[("team", "a")], &[]).is_stamped_on(&stamp));
        let empty = BillingKey::default();
        assert!(empty.is_stamped_on(&empty.namespace_stamp("n")));
        assert!(empty.is_stamped_on(&json!({"metadata": {}})));
        assert!(!empty.is_stamped_on(&stamp));
    }

    #[test]
    fn from_spec_refuses_unknown_fields() {
        assert!(BillingKey::from_spec(&json!({"labels": {"a": "b"}, "x": 1})).is_err());
        assert_eq!(
            BillingKey::from_spec(&Value::Null).unwrap(),
            BillingKey::default()
        );
    }
}
