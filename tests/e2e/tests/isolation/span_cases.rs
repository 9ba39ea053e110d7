//! Attack cases of the spanning surface (docs/clusters.md "Spanning tenants"): the
//! `paddock.io/cluster` label, the namespace map, objects replicated to every cluster of a
//! tenant, and the merged resourceVersion. Run by `clusters_isolation.rs` after the shared
//! table, with alphaa spanning `default,east`, bravoo spanning `east,default`, and `west` a
//! registered cluster of neither.

use super::*;

/// A namespace of the attacker, labelled to be placed on `cluster`.
fn ns_on(name: &str, cluster: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}, labels: {{paddock.io/cluster: {cluster}}}}}\n"
    )
}

/// A merged list's resourceVersion as paddock writes it (`span.` + hex of the JSON map).
fn forged_rv(json: &str) -> String {
    let hex: String = json.bytes().map(|b| format!("{b:02x}")).collect();
    format!("span.{hex}")
}

pub(crate) fn span_cases() -> Vec<Case> {
    use Expect::*;
    use Who::*;
    let only_west = forged_rv(r#"{"west":"1"}"#);
    let victim_names = forged_rv(r#"{"bravoo":"1","vault-ns":"1"}"#);
    let v = vec![
        // ---- the placement label ---------------------------------------------------------------
        case("span-label-foreign-cluster", "issue 17 placement", "create a namespace labelled with a registered cluster outside the tenant")
            .attack(step_in(A, "create -f -", &ns_on("to-west", "west")), RefusedWith("does not name a cluster of this tenant"))
            .control(step_in(A, "create -f -", &ns_on("to-default", "default")), Ok),
        case("span-label-unknown-cluster", "issue 17 placement", "create a namespace labelled with a cluster nobody registered")
            .attack(step_in(A, "create -f -", &ns_on("to-nowhere", "nowhere")), RefusedWith("does not name a cluster of this tenant"))
            .control(step(A, "get ns to-default -o jsonpath={.metadata.labels.paddock\\.io/cluster}"), OkWith("default")),
        case("span-move-by-label", "issue 17 namespace map", "move a namespace to the other cluster by changing its label")
            .attack(step(A, "label ns web paddock.io/cluster=default --overwrite"), RefusedWith("cannot be changed"))
            .control(step(A, "label ns web moved=no --overwrite"), Ok)
            .bypass(step(Bypass, "label ns alphaa-web paddock.io/cluster=default --overwrite")),
        case("span-unlabel", "issue 17 namespace map", "remove the placement label of a namespace")
            .attack(step(A, "label ns web paddock.io/cluster-"), RefusedWith("cannot be changed"))
            .control(step(A, "get ns web -o jsonpath={.metadata.labels.paddock\\.io/cluster}"), OkWith("east"))
            .bypass(step(Bypass, "label ns alphaa-web paddock.io/cluster-")),
        case("span-still-placed", "issue 17 namespace map", "after the refused moves the namespace still lives on east: objects written there land there")
            .setup(step(A, "create configmap after-move -n web"))
            .attack(step(Up, "get configmap after-move -n alphaa-web -o name"), OkWith("after-move"))
            .control(step(A, "get configmap after-move -n web -o name"), OkWith("after-move")),
        // ---- cluster-scoped objects replicated to every cluster -----------------------------------
        case("span-crd-other-tenant", "issue 17 replication", "a CRD the attacker wrote (home default, copied to east) is not in the victim's view on east")
            .setup(step_in(A, "create -f -", &crd("spanthings", "span.example.com", "Namespaced")))
            .attack(step(B, "get crd spanthings.span.example.com"), Refused)
            .control_pre(step(Up, "get crd spanthings.alphaa-span.example.com -o name"))
            .control(step(A, "get crd spanthings.span.example.com -o name"), OkWith("spanthings")),
        case("span-crd-other-tenant-cr", "issue 17 replication", "the victim cannot use the attacker's copied CRD's kind")
            .setup(step(A, "wait --for=condition=established crd/spanthings.span.example.com --timeout=60s"))
            .attack(step(B, "get --raw /apis/span.example.com/v1/spanthings"), Refused)
            .control(step(A, "get --raw /apis/span.example.com/v1/spanthings"), OkWith("SpanthingList")),
        case("span-clusterrole-other-tenant", "issue 17 replication", "a ClusterRole the attacker wrote reaches east but not the victim")
            .setup(step(A, "create clusterrole span-cr --verb=get --resource=pods"))
            .attack(step(B, "get clusterrole span-cr"), Refused)
            .control_pre(step(Up, "get clusterrole alphaa-span-cr -o name"))
            .control(step(B, "create clusterrole span-cr --verb=list --resource=configmaps"), Ok)
            .bypass(step(Bypass, "get clusterrole bravoo-span-cr")),
        case("span-clusterrole-same-name", "issue 17 replication", "the victim's ClusterRole of the same name did not overwrite the attacker's (on both clusters)")
            .attack(step(A, "get clusterrole span-cr -o jsonpath={.rules[0].verbs}"), OkWithout("list"))
            .control(step(B, "get clusterrole span-cr -o jsonpath={.rules[0].verbs}"), OkWith("list")),
        // ---- merged resourceVersions --------------------------------------------------------------
        case("span-rv-garbage", "issue 17 merged resourceVersion", "list namespaces from a garbage merged resourceVersion")
            .attack(step(A, "get --raw /api/v1/namespaces?resourceVersion=span.zz"), RefusedWith("too old resource version"))
            .control(step(A, "get --raw /api/v1/namespaces?resourceVersion=0"), OkWith("\"web\"")),
        case("span-rv-other-cluster", "issue 17 merged resourceVersion", "list configmaps from a vector naming only a cluster outside the tenant")
            .attack(step(A, &format!("get --raw /api/v1/configmaps?resourceVersion={only_west}")), RefusedWith("too old resource version"))
            .control(step(A, "get --raw /api/v1/configmaps"), OkWith("own-cm")),
        case("span-rv-victim-names", "issue 17 merged resourceVersion", "watch namespaces from a vector keyed by the victim's names")
            .attack(step(A, &format!("get --raw /api/v1/namespaces?watch=1&timeoutSeconds=2&resourceVersion={victim_names}")), RefusedWith("too old resource version"))
            .control(step(A, "get --raw /api/v1/namespaces?watch=1&timeoutSeconds=2"), OkWith("\"web\"")),
        // ---- the namespace map (last: the attacker's own vault-ns would show in later outputs) ---
        case("span-map-unplaced", "issue 17 namespace map", "a namespace the attacker never created (the victim's, on east) is absent: no entry in its map, answered by its home")
            .attack(step(A, "get secrets -n vault-ns -o name"), NoLeak)
            .control(step(A, "get secrets -n web -o name"), OkWith("own-secret")),
        case("span-map-same-name", "issue 17 namespace map", "the attacker's own vault-ns (on default) shows nothing of the victim's vault-ns (on east)")
            .setup(step_in(A, "create -f -", &ns_on("vault-ns", "default")))
            .attack(step(A, "get configmaps -n vault-ns -o name"), OkWithout("b-cm"))
            .control(step(A, "get configmaps -n web -o name"), OkWith("own-cm")),
        case("span-map-victim-object", "issue 17 namespace map", "get the victim's configmap in a namespace of the same name")
            .attack(step(A, "get configmap b-cm -n vault-ns"), Refused)
            .control(step(A, "get configmap own-cm -n web -o name"), OkWith("own-cm")),
    ];
    v.into_iter().filter(|c| selected(c.id)).collect()
}
