//! A namespace create's body as paddock reads it before anything else happens to the request
//! (docs/clusters.md "Namespaces created with generateName"): its name, its `generateName`,
//! a label, read from JSON, YAML or protobuf; and the name paddock generates for a
//! `generateName` create, as the apiserver would, so that every later step (the tenant's
//! prefix, the admission webhook, the quota, the cluster a spanning tenant's namespace is
//! placed on, the set-up after the create) sees the namespace's real name.

use serde_json::Value;

use super::body::{CT_JSON, CT_PROTOBUF, CT_YAML, media_type, parse_json, parse_yaml};
use crate::error::TranslateError;
use crate::tenant::NameKind;

/// The apiserver's alphabet for generated names (`k8s.io/apimachinery/pkg/util/rand`: no
/// vowels, no confusable digits).
pub const GENERATED_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Random characters the apiserver appends to `generateName`.
pub const GENERATED_LEN: usize = 5;
/// Attempts of a `generateName` create whose generated name exists already: the apiserver's
/// (its RetryGenerateName feature: "up to a limit of 8 total attempts").
pub const GENERATE_ATTEMPTS: usize = 8;

/// A namespace create's body: JSON (YAML is read into JSON) or protobuf.
#[derive(Debug, Clone, PartialEq)]
pub enum NamespaceBody {
    Json(Value),
    Protobuf(Vec<u8>),
}

impl NamespaceBody {
    /// Reads a namespace create's body by its content type (none is JSON, as the translation
    /// reads it). A body paddock cannot read is refused (415), never sent on unread: the
    /// namespace would lack its set-up, and a spanning tenant's its cluster.
    pub fn read(content_type: Option<&str>, raw: &[u8]) -> Result<NamespaceBody, TranslateError> {
        let mt = content_type.map(media_type).unwrap_or_default();
        match mt.as_str() {
            "" | CT_JSON => parse_json(raw).map(NamespaceBody::Json),
            CT_YAML => parse_yaml(raw).map(NamespaceBody::Json),
            CT_PROTOBUF if super::protobuf::is_protobuf(raw) => {
                Ok(NamespaceBody::Protobuf(raw.to_vec()))
            }
            CT_PROTOBUF => Err(TranslateError::BadRequest(
                "malformed protobuf request body: missing k8s\\0 prefix".into(),
            )),
            _ => Err(TranslateError::UnsupportedMediaType(format!(
                "paddock reads a namespace create's body to set the namespace up (its name, \
                 labels and cluster): it must be JSON, YAML or protobuf, not {:?}",
                content_type.unwrap_or_default()
            ))),
        }
    }

    /// `metadata.name`, when set and not empty.
    pub fn name(&self) -> Option<String> {
        self.meta_str("name", super::pb_label::protobuf_name)
    }

    /// `metadata.generateName`, when set and not empty.
    pub fn generate_name(&self) -> Option<String> {
        self.meta_str("generateName", super::pb_label::protobuf_generate_name)
    }

    fn meta_str(
        &self,
        field: &str,
        pb: fn(&[u8]) -> Result<Option<String>, TranslateError>,
    ) -> Option<String> {
        match self {
            NamespaceBody::Json(v) => v["metadata"][field]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            NamespaceBody::Protobuf(b) => pb(b).ok().flatten(),
        }
    }

    /// Sets `metadata.name` (`generateName` stays, as the apiserver keeps it).
    pub fn set_name(&mut self, name: &str) -> Result<(), TranslateError> {
        match self {
            NamespaceBody::Json(v) => {
                metadata(v)?.insert("name".into(), Value::String(name.into()));
            }
            NamespaceBody::Protobuf(b) => *b = super::pb_label::set_protobuf_name(b, name)?,
        }
        Ok(())
    }

    /// Sets one label, replacing its value.
    pub fn set_label(&mut self, key: &str, value: &str) -> Result<(), TranslateError> {
        match self {
            NamespaceBody::Json(v) => {
                let labels = metadata(v)?
                    .entry("labels")
                    .or_insert_with(|| Value::Object(Default::default()));
                match labels {
                    Value::Object(m) => {
                        m.insert(key.into(), Value::String(value.into()));
                    }
                    _ => return Err(TranslateError::bad("metadata.labels must be an object")),
                }
            }
            NamespaceBody::Protobuf(b) => {
                *b = super::pb_label::set_protobuf_label(b, key, value)?;
            }
        }
        Ok(())
    }

    /// The body to send, and its content type (a YAML body goes on as JSON).
    pub fn encoded(&self) -> Result<(Vec<u8>, &'static str), TranslateError> {
        match self {
            NamespaceBody::Json(v) => serde_json::to_vec(v)
                .map(|b| (b, CT_JSON))
                .map_err(|e| TranslateError::Internal(e.to_string())),
            NamespaceBody::Protobuf(b) => Ok((b.clone(), CT_PROTOBUF)),
        }
    }

    /// [`encoded`](Self::encoded), for a body changed from `before`, read from the JSON `raw`:
    /// a JSON body that repeats a key keeps its repeats (they are the apiserver's to report
    /// under `fieldValidation`, as for any other create).
    pub fn encoded_over(
        &self,
        raw: &[u8],
        before: &NamespaceBody,
    ) -> Result<(Vec<u8>, &'static str), TranslateError> {
        if let (NamespaceBody::Json(after), NamespaceBody::Json(before)) = (self, before)
            && super::dupkeys::has_duplicate_keys(raw)
            && let Some(spliced) = super::dupkeys::splice_changes(raw, before, after)
        {
            return Ok((spliced, CT_JSON));
        }
        self.encoded()
    }
}

fn metadata(v: &mut Value) -> Result<&mut serde_json::Map<String, Value>, TranslateError> {
    let Value::Object(obj) = v else {
        return Err(TranslateError::bad("a namespace must be a JSON object"));
    };
    match obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()))
    {
        Value::Object(m) => Ok(m),
        _ => Err(TranslateError::bad("metadata must be an object")),
    }
}

/// The name the apiserver would generate for a tenant's namespace from `generate_name`:
/// [`GENERATED_LEN`] characters of [`GENERATED_ALPHABET`] (picked by `random`) after the base,
/// which is cut so that the whole fits the tenant's namespace name limit (56: the upstream
/// name carries `<tid>-`), as the apiserver cuts it to fit 63.
pub fn generated_name(generate_name: &str, mut random: impl FnMut() -> u32) -> String {
    let max_base = NameKind::Namespace.tenant_limit() - GENERATED_LEN;
    let mut cut = generate_name.len().min(max_base);
    while !generate_name.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut name = String::with_capacity(cut + GENERATED_LEN);
    name.push_str(&generate_name[..cut]);
    for _ in 0..GENERATED_LEN {
        let i = random() as usize % GENERATED_ALPHABET.len();
        name.push(char::from(GENERATED_ALPHABET[i]));
    }
    name
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn counter() -> impl FnMut() -> u32 {
        let mut n = 0;
        move || {
            n += 1;
            n
        }
    }

    #[test]
    fn generated_names_have_the_apiservers_shape_and_fit_the_tenants_limit() {
        assert_eq!(generated_name("dev-", counter()), "dev-cdfgh");
        assert_eq!(generated_name("", || 26), "99999");
        let long = "a".repeat(80);
        let name = generated_name(&long, || 0);
        assert_eq!(name.len(), 56);
        assert!(name.ends_with("abbbbb"));
        // Never cut inside a character (the apiserver refuses such a name; paddock must not panic).
        let odd = format!("{}é", "a".repeat(50));
        assert_eq!(
            generated_name(&odd, || 0),
            format!("{}bbbbb", "a".repeat(50))
        );
    }

    #[test]
    fn json_and_yaml_bodies_are_read_named_and_labelled() {
        let raw = br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"generateName":"dev-"}}"#;
        let mut b = NamespaceBody::read(Some("application/json"), raw).unwrap();
        assert_eq!(
            (b.name(), b.generate_name().as_deref()),
            (None, Some("dev-"))
        );
        b.set_name("dev-bcdfg").unwrap();
        b.set_label("paddock.io/cluster", "east").unwrap();
        let (bytes, ct) = b.encoded().unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(ct, "application/json");
        assert_eq!(
            v["metadata"],
            json!({"generateName": "dev-", "name": "dev-bcdfg", "labels": {"paddock.io/cluster": "east"}})
        );
        let yaml = b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n  labels: {a: b}\n";
        let b = NamespaceBody::read(Some("application/yaml"), yaml).unwrap();
        assert_eq!(b.name().as_deref(), Some("web"));
        assert_eq!(b.encoded().unwrap().1, "application/json");
        // No content type is JSON, as the translation reads it.
        assert!(NamespaceBody::read(None, br#"{"metadata":{"name":"x"}}"#).is_ok());
        // An empty name is no name.
        let b = NamespaceBody::read(None, br#"{"metadata":{"name":""}}"#).unwrap();
        assert_eq!(b.name(), None);
    }

    #[test]
    fn a_named_json_body_keeps_its_repeated_keys() {
        let raw = br#"{"metadata":{"generateName":"dev-","labels":{"a":"1","a":"2"}}}"#;
        let before = NamespaceBody::read(None, raw).unwrap();
        let mut b = before.clone();
        b.set_name("dev-bcdfg").unwrap();
        let (bytes, _) = b.encoded_over(raw, &before).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            text.contains(r#""a":"1","a":"2""#) && text.contains("dev-bcdfg"),
            "{text}"
        );
    }

    #[test]
    fn a_body_paddock_cannot_read_is_refused_with_a_status() {
        let e = NamespaceBody::read(Some("application/cbor"), b"\xa1\x64").unwrap_err();
        assert_eq!((e.http_code(), e.reason()), (415, "UnsupportedMediaType"));
        assert!(e.to_string().contains("JSON, YAML or protobuf"), "{e}");
        for (ct, raw) in [
            ("application/json", &b"{not json"[..]),
            ("application/vnd.kubernetes.protobuf", b"not protobuf"),
            ("application/yaml", b"a: [b"),
        ] {
            let e = NamespaceBody::read(Some(ct), raw).unwrap_err();
            assert_eq!(e.http_code(), 400, "{ct}: {e}");
        }
        let mut not_object = NamespaceBody::read(None, b"[1]").unwrap();
        assert!(not_object.set_name("x").is_err());
    }
}
