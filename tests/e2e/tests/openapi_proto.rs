//! OpenAPI v2 in protobuf, against the real apiserver:
//! - paddock's encoder, given the apiserver's own JSON document, writes the apiserver's own
//!   protobuf bytes (so what a tenant gets is what kube-apiserver would give for the tenant's
//!   filtered document);
//! - through paddock, `/openapi/v2` asked in protobuf answers the tenant's document in
//!   protobuf (Content-Type, ETag shared with the JSON form, 304 on If-None-Match, Vary), and
//!   it is exactly the encoding of the tenant's JSON document;
//! - the clients that need it (kubectl 1.27 and 1.28 `apply`, `diff`, `explain`; `explain
//!   --output=plaintext-openapiv2` on every version) run in the kubectl matrix of clients.rs.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use paddock_core::response::openapi_pb::{OPENAPI_V2_PROTOBUF, openapi_v2_protobuf};
use paddock_e2e::http::Tls;
use paddock_e2e::{ControlPlane, Paddock, StoreKind};

const TENANT: &str = "oapipb";
const PB_ACCEPT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const T: Duration = Duration::from_secs(60);

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("tokio runtime")
}

/// Where two encodings first differ: the path of field numbers down to the first differing
/// field that is not itself a message, with both values.
fn first_difference(a: &[u8], b: &[u8]) -> String {
    fn fields(mut b: &[u8]) -> Option<Vec<(u64, Vec<u8>)>> {
        let mut out = Vec::new();
        let varint = |b: &mut &[u8]| -> Option<u64> {
            let mut v = 0u64;
            for shift in (0..64).step_by(7) {
                let (first, rest) = b.split_first()?;
                *b = rest;
                v |= u64::from(first & 0x7f) << shift;
                if first & 0x80 == 0 {
                    return Some(v);
                }
            }
            None
        };
        while !b.is_empty() {
            let key = varint(&mut b)?;
            let n = match key & 7 {
                0 => {
                    varint(&mut b)?;
                    out.push((key, Vec::new()));
                    continue;
                }
                1 => 8,
                5 => 4,
                2 => usize::try_from(varint(&mut b)?).ok()?,
                _ => return None,
            };
            if b.len() < n {
                return None;
            }
            out.push((key, b[..n].to_vec()));
            b = &b[n..];
        }
        Some(out)
    }
    let mut path = Vec::new();
    let (mut x, mut y) = (a.to_vec(), b.to_vec());
    while let (Some(fx), Some(fy)) = (fields(&x), fields(&y)) {
        let Some(i) = (0..fx.len().max(fy.len())).find(|&i| fx.get(i) != fy.get(i)) else {
            break;
        };
        match (fx.get(i), fy.get(i)) {
            (Some((kx, vx)), Some((ky, vy))) if kx == ky && kx & 7 == 2 => {
                path.push(format!("{}[{i}]", kx >> 3));
                (x, y) = (vx.clone(), vy.clone());
            }
            (p, q) => {
                let show = |f: Option<&(u64, Vec<u8>)>| {
                    f.map(|(k, v)| format!("field {} {:?}", k >> 3, String::from_utf8_lossy(v)))
                };
                return format!(
                    "at {}: ours {:?}, apiserver {:?}",
                    path.join("/"),
                    show(p),
                    show(q)
                );
            }
        }
    }
    format!(
        "at {}: ours {:?}\n  apiserver {:?}",
        path.join("/"),
        String::from_utf8_lossy(&x),
        String::from_utf8_lossy(&y)
    )
}

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.pbtest.example.com
spec:
  group: pbtest.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: the widget's wishes
            properties:
              size: {type: string, default: small, enum: [small, large]}
              count: {type: integer, minimum: 0, maximum: 10}
            x-kubernetes-validations:
            - rule: "self.size != 'large' || self.count <= 5"
              message: "a large widget comes in fives at most"
"#;

#[test]
fn openapi_v2_protobuf_directly_and_through_paddock() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    let paddock = Paddock::start(&cp, StoreKind::Etcd)?;
    let admin = cp.kubectl_admin()?;
    let tenant = paddock.kubectl_tenant(TENANT)?;
    // A CRD in both clusters, so the documents carry a CRD's schema (defaults, enums,
    // validations as vendor extensions) besides the built-in ones.
    admin.run_stdin(&["apply", "-f", "-"], Some(WIDGET_CRD))?;
    tenant.run_stdin(&["apply", "-f", "-"], Some(WIDGET_CRD))?;
    for k in [&admin, &tenant] {
        k.run(&[
            "wait",
            "--for=condition=Established",
            "crd/widgets.pbtest.example.com",
            "--timeout=60s",
        ])?;
    }
    let rt = runtime()?;
    let direct = Tls::from_kubeconfig(&cp.admin_kubeconfig(), None)?;
    let through = Tls::from_kubeconfig(&paddock.tenant(TENANT)?, None)?;
    let get = |c: &Tls, accept: &str, inm: Option<&str>| {
        let mut h = vec![("accept", accept)];
        if let Some(e) = inm {
            h.push(("if-none-match", e));
        }
        rt.block_on(c.get_with_headers("/openapi/v2", &h, T))
    };

    // 1. The encoder against the apiserver, on the apiserver's document. The CRD's schema
    // reaches the document a moment after Established: retry until both forms carry it.
    let mut last = String::new();
    let mut same = false;
    for _ in 0..20 {
        let (s1, h1, json) = get(&direct, "application/json", None)?;
        let (s2, h2, pb) = get(&direct, PB_ACCEPT, None)?;
        ensure!(s1 == 200 && s2 == 200, "direct: {s1} {s2}");
        ensure!(
            h2.get("content-type").and_then(|v| v.to_str().ok()) == Some(OPENAPI_V2_PROTOBUF),
            "apiserver's content type: {:?}",
            h2.get("content-type")
        );
        if h1.get("etag") != h2.get("etag") {
            last = "the document changed between the two reads".into();
        } else {
            let ours = openapi_v2_protobuf(&json)?;
            if ours == pb.as_ref() {
                same = true;
                eprintln!(
                    "encoder: {} bytes of JSON -> {} bytes of protobuf, identical to the apiserver's",
                    json.len(),
                    pb.len()
                );
                break;
            }
            last = first_difference(&ours, &pb);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    ensure!(
        same,
        "paddock's encoding differs from the apiserver's: {last}"
    );

    // 2. Through paddock.
    let (s, hj, json) = get(&through, "application/json", None)?;
    ensure!(s == 200, "tenant JSON: {s}");
    let (s, hp, pb) = get(&through, PB_ACCEPT, None)?;
    ensure!(
        s == 200,
        "tenant protobuf: {s} {}",
        String::from_utf8_lossy(&pb)
    );
    ensure!(
        hp.get("content-type").and_then(|v| v.to_str().ok()) == Some(OPENAPI_V2_PROTOBUF),
        "content type through paddock: {:?}",
        hp.get("content-type")
    );
    ensure!(
        pb.as_ref() == openapi_v2_protobuf(&json)?.as_slice(),
        "the tenant's protobuf document is not the encoding of its JSON document"
    );
    let text = String::from_utf8_lossy(&pb);
    ensure!(
        text.contains("com.example.pbtest.v1.Widget") && !text.contains(&format!("{TENANT}-")),
        "the tenant's document should name its own CRD group, unprefixed"
    );
    let etag = hp
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .context("no ETag on the protobuf answer")?
        .to_owned();
    ensure!(
        hj.get("etag").and_then(|v| v.to_str().ok()) == Some(etag.as_str()),
        "JSON and protobuf answers carry different ETags ({:?} and {etag})",
        hj.get("etag")
    );
    ensure!(
        hp.get("vary")
            .is_some_and(|v| v.to_str().is_ok_and(|v| v.contains("Accept"))),
        "no Vary: Accept"
    );
    let (s, _, body) = get(&through, PB_ACCEPT, Some(&etag))?;
    ensure!(s == 304 && body.is_empty(), "If-None-Match: {s}");
    let (s, _, _) = get(&through, PB_ACCEPT, Some("\"another\""))?;
    ensure!(s == 200, "a stale ETag: {s}");

    // kubectl 1.27/1.28 apply, diff and explain, and `explain --output=plaintext-openapiv2`
    // on every version, run in tests/e2e/tests/clients.rs (the kubectl matrix).
    Ok(())
}
