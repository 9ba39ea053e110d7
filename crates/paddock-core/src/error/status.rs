//! `metav1.Status` bodies built by paddock itself (errors it raises before reaching upstream).

use serde_json::json;

/// A `metav1.Status` JSON body: `{"kind":"Status","apiVersion":"v1","metadata":{},
/// "status":"Failure","message":...,"reason":...,"code":...}`. kubectl prints `message`.
pub fn status_body(code: u16, reason: &str, message: &str) -> Vec<u8> {
    let v = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": if (200..300).contains(&code) { "Success" } else { "Failure" },
        "message": message,
        "reason": reason,
        "code": code,
    });
    // Serialising a Value built from strings and integers cannot fail; fall back to a fixed
    // body rather than panicking if it ever did.
    serde_json::to_vec(&v).unwrap_or_else(|_| {
        br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":500}"#
            .to_vec()
    })
}

/// A watch `ERROR` event carrying a `Status`, as kube-apiserver sends when it ends a watch
/// because of a failure: `{"type":"ERROR","object":{...Status...}}` and a newline. client-go's
/// reflector retries the watch from its last resourceVersion on an `InternalError` (500) and
/// re-lists on `Expired`/`Gone` (410).
pub fn watch_error_event(code: u16, reason: &str, message: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(br#"{"type":"ERROR","object":"#);
    out.extend_from_slice(&status_body(code, reason, message));
    out.extend_from_slice(b"}\n");
    out
}

/// A 429 `Status` with `details.retryAfterSeconds`, as kube-apiserver's own throttling
/// answers carry it (client-go reads the `Retry-After` header; the field is for humans).
pub fn status_body_retry(code: u16, reason: &str, message: &str, retry_after: u64) -> Vec<u8> {
    let v = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {"retryAfterSeconds": retry_after},
        "code": code,
    });
    serde_json::to_vec(&v).unwrap_or_else(|_| status_body(code, reason, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_error_event_is_one_json_line() {
        let e = watch_error_event(500, "InternalError", "gone");
        assert_eq!(e.last(), Some(&b'\n'));
        assert_eq!(e.iter().filter(|b| **b == b'\n').count(), 1);
        let v: serde_json::Value = serde_json::from_slice(&e).unwrap();
        assert_eq!(v["type"], "ERROR");
        assert_eq!(v["object"]["kind"], "Status");
        assert_eq!(v["object"]["code"], 500);
        assert_eq!(v["object"]["reason"], "InternalError");
    }

    #[test]
    fn status_body_shape_and_key_order() {
        let b = status_body(403, "Forbidden", "no \"quotes\" problem");
        let s = String::from_utf8(b).unwrap();
        assert_eq!(
            s,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"no \"quotes\" problem","reason":"Forbidden","code":403}"#
        );
    }
}
