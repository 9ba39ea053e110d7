//! Reading the admin API's request objects into paddock-api's types, with 400s that name the
//! field at fault.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use paddock_upstream::error::ServerError;

/// `v`, the part of a request at `path` (`spec`, `metadata`), as a `T` whose fields are all
/// optional (absent or `null`: `T::default()`). An error names the first field that does not
/// read: `spec.capacity: invalid value: ...`.
pub fn part<T: DeserializeOwned + Default>(v: &Value, path: &str) -> Result<T, ServerError> {
    if v.is_null() {
        return Ok(T::default());
    }
    serde_json::from_value(v.clone()).map_err(|e| {
        let field = v.as_object().and_then(|m| {
            m.iter()
                .find(|(k, x)| serde_json::from_value::<T>(json!({ k.as_str(): x })).is_err())
                .map(|(k, _)| k)
        });
        match field {
            Some(k) => ServerError::BadRequest(format!("{path}.{k}: {e}")),
            None => ServerError::BadRequest(format!("{path}: {e}")),
        }
    })
}

/// The first key of `object` that is not one of `known`.
pub fn unknown_field<'a>(object: &'a Map<String, Value>, known: &[&str]) -> Option<&'a str> {
    object
        .keys()
        .map(String::as_str)
        .find(|k| !known.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_api::cluster::ClusterRequestSpec;

    #[test]
    fn an_error_names_the_field() {
        let bad = json!({"server": "https://x", "capacity": -1});
        match part::<ClusterRequestSpec>(&bad, "spec") {
            Err(ServerError::BadRequest(m)) => assert!(m.starts_with("spec.capacity: "), "{m}"),
            other => panic!("{other:?}"),
        }
        let absent = part::<ClusterRequestSpec>(&Value::Null, "spec");
        assert!(matches!(absent, Ok(s) if s == ClusterRequestSpec::default()));
        match part::<ClusterRequestSpec>(&json!("no"), "spec") {
            Err(ServerError::BadRequest(m)) => assert!(m.starts_with("spec: "), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
