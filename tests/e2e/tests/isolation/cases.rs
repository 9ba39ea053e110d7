//! The attack table: each attack with its positive control and its bypass.

use super::*;

pub(crate) fn pod(name: &str, spec_extra: &str, container_extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  {spec_extra}\n  containers:\n  - name: c\n    image: registry.example/app:1\n    {container_extra}\n"
    )
}

pub(crate) const PLAIN: &str = "restartPolicy: Always";
pub(crate) const NOOP: &str = "imagePullPolicy: IfNotPresent";

pub(crate) fn cases() -> Vec<Case> {
    use Expect::*;
    use Who::*;
    let mut v = vec![
        // ---- cross-tenant reads (MTB-PL1-CC-TI-2) -------------------------------------------
        case("read-secret-by-upstream-ns", "MTB-PL1-CC-TI-2", "get the victim's secret naming its upstream namespace")
            .attack(step(A, "get secret crown-jewels -n bravoo-vault-ns"), Refused)
            .control(step(A, "get secret own-secret -n web"), OkWith("own-secret"))
            .bypass(step(Bypass, "get secret crown-jewels -n bravoo-vault-ns")),
        case("read-secret-tenant-view-ns", "MTB-PL1-CC-TI-2", "get a secret in a namespace named like the victim's")
            .attack(step(A, "get secret crown-jewels -n vault-ns"), Refused)
            .control(step(A, "get secret own-secret -n web -o name"), OkWith("own-secret")),
        case("list-secrets-all-ns", "MTB-PL1-CC-TI-2, §7.2 identity cluster-admin", "kubectl get secrets -A")
            .attack(step(A, "get secrets -A"), NoLeak)
            .control(step(A, "get secrets -A"), OkWith("own-secret"))
            .bypass(step(Bypass, "get secrets -A")),
        case("list-pods-all-ns-wide", "MTB-PL1-CC-TI-2", "kubectl get pods -A -o wide")
            .attack(step(A, "get pods -A -o wide"), NoLeak)
            .control(step(A, "get pods -A -o wide"), OkWith("a-pod"))
            .bypass(step(Bypass, "get pods -A")),
        case("list-configmaps-json", "MTB-PL1-CC-TI-2", "list configmaps of all namespaces as JSON")
            .attack(step(A, "get configmaps -A -o json"), NoLeak)
            .control(step(A, "get configmaps -A -o json"), OkWith("own-cm"))
            .bypass(step(Bypass, "get configmaps -A -o json")),
        case("raw-list-secrets-cluster", "MTB-PL1-CC-TI-2", "GET /api/v1/secrets")
            .attack(step(A, "get --raw /api/v1/secrets"), NoLeak)
            .control(step(A, "get --raw /api/v1/secrets"), OkWith("own-secret"))
            .bypass(step(Bypass, "get --raw /api/v1/secrets")),
        case("watch-configmaps-all-ns", "watches", "kubectl get configmaps -A --watch")
            .attack(step(A, "get configmaps -A --watch --request-timeout=4s"), NoLeak)
            .control(step(A, "get configmaps -A --watch --request-timeout=4s"), Shows("own-cm"))
            .bypass(step(Bypass, "get configmaps -A --watch --request-timeout=4s")),
        case("raw-watch-secrets", "watches", "GET /api/v1/secrets?watch=1")
            .attack(step(A, "get --raw /api/v1/secrets?watch=1&timeoutSeconds=3"), NoLeak)
            .control(step(A, "get --raw /api/v1/namespaces/web/secrets?watch=1&timeoutSeconds=2"), OkWith("own-secret"))
            .bypass(step(Bypass, "get --raw /api/v1/secrets?watch=1&timeoutSeconds=3")),
        case("watch-namespaces", "watches, cluster-scoped", "GET /api/v1/namespaces?watch=1")
            .attack(step(A, "get --raw /api/v1/namespaces?watch=1&timeoutSeconds=3"), NoLeak)
            .control(step(A, "get --raw /api/v1/namespaces?watch=1&timeoutSeconds=2"), OkWith("\"web\""))
            .bypass(step(Bypass, "get --raw /api/v1/namespaces?watch=1&timeoutSeconds=3")),
        case("table-namespaces", "tables", "kubectl get namespaces (as=Table)")
            .attack(step(A, "get namespaces -o wide"), NoLeak)
            .control(step(A, "get namespaces -o wide"), OkWith("web"))
            .bypass(step(Bypass, "get namespaces")),
        case("get-victim-namespace", "cluster-scoped", "get the victim's namespace by upstream name")
            .attack(step(A, "get namespace bravoo-vault-ns"), Refused)
            .control(step(A, "get namespace web"), OkWith("web"))
            .bypass(step(Bypass, "get namespace bravoo-vault-ns")),
        case("get-platform-namespace", "cluster-scoped", "get the platform namespace")
            .attack(step(A, "get namespace plat-core"), Refused)
            .control(step(A, "get namespace default"), OkWith("default"))
            .bypass(step(Bypass, "get namespace plat-core")),
        // ---- selectors ------------------------------------------------------------------------
        case("label-selector-tenant-label", "label selectors", "select namespaces by the victim's tenant label")
            .attack(step(A, "get namespaces -l paddock.io/tenant=bravoo"), Refused)
            .control(step(A, "get namespaces -l team=alpha"), OkWith("web"))
            .bypass(step(Bypass, "get namespaces -l paddock.io/tenant=bravoo")),
        case("label-selector-not-tenant", "label selectors", "select namespaces without a tenant label")
            .attack(step(A, "get namespaces -l !paddock.io/tenant"), Refused)
            .control(step(A, "get namespaces -l !nothing"), OkWith("web"))
            .bypass(step(Bypass, "get namespaces -l !paddock.io/tenant")),
        case("metadata-name-label", "§7.2 kubernetes.io/metadata.name", "select the victim's namespace by kubernetes.io/metadata.name")
            .attack(step(A, "get namespaces -l kubernetes.io/metadata.name=bravoo-vault-ns"), NoLeak)
            .control(step(A, "get namespaces -l kubernetes.io/metadata.name=web"), OkWith("web")),
        case("field-selector-ns-name", "§7.2 field selectors", "namespaces with metadata.name=<victim's upstream name>")
            .attack(step(A, "get namespaces --field-selector metadata.name=bravoo-vault-ns"), NoLeak)
            .control(step(A, "get namespaces --field-selector metadata.name=web"), OkWith("web"))
            .bypass(step(Bypass, "get namespaces --field-selector metadata.name=bravoo-vault-ns")),
        case("field-selector-metadata-namespace", "§7.2 field selectors", "secrets -A with metadata.namespace=<victim's>")
            .attack(step(A, "get secrets -A --field-selector metadata.namespace=bravoo-vault-ns"), NoLeak)
            .control(step(A, "get secrets -A --field-selector metadata.namespace=web"), OkWith("own-secret"))
            .bypass(step(Bypass, "get secrets -A --field-selector metadata.namespace=bravoo-vault-ns")),
        case("field-selector-events", "§7.2 field selectors", "events -A with involvedObject.namespace=<victim's>")
            .attack(step(A, "get events -A --field-selector involvedObject.namespace=bravoo-vault-ns"), NoLeak)
            .control(step(A, "get events -A --field-selector involvedObject.namespace=web"), Ok)
            .bypass(step(Bypass, "get events -A --field-selector involvedObject.namespace=bravoo-vault-ns")),
        // ---- error messages, remainingItemCount -------------------------------------------------
        case("error-messages", "error messages", "errors never show upstream names")
            .attack(step(A, "get configmap nothing-here -n web"), RefusedWith("configmaps \"nothing-here\" not found"))
            .control(step(A, "get configmap own-cm -n web"), OkWith("own-cm")),
        case("error-no-prefix", "error messages", "an error about one's own namespace shows no upstream name")
            .attack(step(A, "create namespace web"), RefusedWith("namespaces \"web\" already exists"))
            .control(step(A, "create namespace scratch"), Ok),
        case("remaining-item-count-ns", "§7.2 remainingItemCount", "paged namespace list reveals no cluster-wide count")
            .attack(step(A, "get --raw /api/v1/namespaces?limit=1"), NoLeak)
            .control(step(A, "get --raw /api/v1/namespaces?limit=1"), OkWithout("remainingItemCount"))
            .bypass(step(Bypass, "get --raw /api/v1/namespaces?limit=1")),
        case("remaining-item-count-secrets", "§7.2 remainingItemCount", "paged cluster-wide secret list reveals no count")
            .attack(step(A, "get --raw /api/v1/secrets?limit=1"), NoLeak)
            .control(step(A, "get --raw /api/v1/secrets?limit=1"), OkWithout("remainingItemCount"))
            .bypass(step(Bypass, "get --raw /api/v1/secrets?limit=1")),
        // ---- discovery, OpenAPI, CRDs (MTB-PL3-BC-CPV-1) --------------------------------------------
        case("discovery", "discovery", "kubectl api-resources shows only one's own CRD groups")
            .attack(step(A, "api-resources"), NoLeak)
            .control(step(A, "api-resources"), OkWith("example.com")),
        case("discovery-raw-apis", "discovery", "GET /apis")
            .attack(step(A, "get --raw /apis"), NoLeak)
            .control(step(A, "get --raw /apis"), OkWith("example.com")),
        case("discovery-victim-group", "discovery", "GET /apis/bravoo-example.com/v1")
            .attack(step(A, "get --raw /apis/bravoo-example.com/v1"), Refused)
            .control(step(A, "get --raw /apis/example.com/v1"), OkWith("gadgets"))
            .bypass_note(step(Bypass, "get --raw /apis/bravoo-example.com/v1"), "discovery is readable by every authenticated user upstream (system:discovery); it names the group's resources, not objects"),
        case("openapi-v2", "§7.2 OpenAPI v2 leak", "GET /openapi/v2")
            .attack(step(A, "get --raw /openapi/v2"), NoLeak)
            .control(step(A, "get --raw /openapi/v2"), OkWith("Gadget")),
        case("openapi-v3-root", "§7.2 /openapi/v3", "GET /openapi/v3")
            .attack(step(A, "get --raw /openapi/v3"), NoLeak)
            .control(step(A, "get --raw /openapi/v3"), OkWith("apis/example.com/v1")),
        case("openapi-v3-victim", "OpenAPI", "GET /openapi/v3/apis/bravoo-example.com/v1")
            .attack(step(A, "get --raw /openapi/v3/apis/bravoo-example.com/v1"), Refused)
            .control(step(A, "get --raw /openapi/v3/apis/example.com/v1"), OkWith("Gadget")),
        case("crds-listed", "MTB-PL3-BC-CPV-1", "kubectl get crds shows only one's own")
            .attack(step(A, "get crds"), NoLeak)
            .control(step(A, "get crds"), OkWith("gadgets.example.com"))
            .bypass(step(Bypass, "get crds")),
        case("crs-all-ns", "MTB-PL3-BC-CPV-1", "same CRD in two tenants: objects stay apart")
            .attack(step(A, "get gadgets -A"), NoLeak)
            .control(step(A, "get gadgets -A"), OkWith("a-gadget"))
            .bypass(step(Bypass, "get --raw /apis/bravoo-example.com/v1/gadgets")),
        case("crd-in-builtin-group", "CRDs", "create a CRD in the rbac.authorization.k8s.io group")
            .attack(step_in(A, "create -f -", &crd("shadows", "rbac.authorization.k8s.io", "Namespaced")), Refused)
            .control(step_in(A, "apply -f -", &crd("doohickeys", "tools.example.org", "Namespaced")), Ok),
        case("crd-victim-group", "CRDs", "delete the victim's CRD by upstream name")
            .attack(step(A, "delete crd gadgets.bravoo-example.com"), Refused)
            .control(step(A, "get crd gadgets.example.com"), OkWith("gadgets.example.com"))
            .bypass(step(Bypass, "delete crd gadgets.bravoo-example.com")),
        // ---- cluster-scoped RBAC objects ----------------------------------------------------------
        case("clusterroles-listed", "MTB-PL1-CC-CPI-1", "kubectl get clusterroles shows only one's own")
            .attack(step(A, "get clusterroles"), NoLeak)
            .control(step(A, "get clusterroles"), OkWith("a-role"))
            .bypass(step(Bypass, "get clusterroles")),
        case("clusterrole-victim", "MTB-PL1-CC-CPI-1", "get the victim's ClusterRole by upstream name")
            .attack(step(A, "get clusterrole bravoo-b-role"), Refused)
            .control(step(A, "get clusterrole a-role"), OkWith("a-role"))
            .bypass(step(Bypass, "get clusterrole bravoo-b-role")),
        case("clusterrole-cluster-admin", "MTB-PL1-CC-CPI-1", "change cluster-admin (the tenant's read-only copy; the platform's is never named)")
            .attack(step(A, "label clusterrole cluster-admin pwned=yes"), RefusedWith("paddock-tenant-guard"))
            .control(step(A, "get clusterrole cluster-admin -o name"), OkWith("cluster-admin"))
            .bypass(step(Bypass, "label clusterrole cluster-admin pwned=yes")),
        case("builtin-role-platform-untouched", "MTB-PL1-CC-CPI-1", "aggregate into or edit the platform's view role through the tenant's copy")
            .attack(step(A, "patch clusterrole view --type=merge -p '{\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"verbs\":[\"*\"]}]}'"), RefusedWith("paddock-tenant-guard"))
            .control(step(A, "get clusterrole view -o name"), OkWith("clusterrole.rbac.authorization.k8s.io/view"))
            .bypass(step(Bypass, "patch clusterrole alphaa-view --type=merge -p '{\"rules\":[]}'")),
        case("clusterrolebindings-listed", "MTB-PL1-CC-CPI-1", "kubectl get clusterrolebindings shows only one's own")
            .attack(step(A, "get clusterrolebindings"), NoLeak)
            .control(step(A, "get clusterrolebindings"), OkWith("robot-secrets"))
            .bypass(step(Bypass, "get clusterrolebindings")),
        // ---- nodes, APIs of the platform ---------------------------------------------------------
        case("nodes-proxy", "§7.2 nodes/proxy", "GET /api/v1/nodes/<node>/proxy/pods")
            .attack(step(A, "get --raw /api/v1/nodes/kwok-node-0/proxy/pods"), Refused)
            .control(step(A, "get nodes"), OkWith("kwok-node-0"))
            .bypass(step(Bypass, "get --raw /api/v1/nodes/kwok-node-0/proxy/pods")),
        case("nodes-label", "§7.2 nodes writable, MTB-PL1-CC-CPI-1", "label a shared node")
            .attack(step(A, "label node kwok-node-0 pwned=yes"), Refused)
            .control(step(A, "get node kwok-node-0 -o name"), OkWith("kwok-node-0"))
            .bypass(step(Bypass, "label node kwok-node-0 pwned=yes")),
        case("nodes-cordon", "MTB-PL1-CC-CPI-1", "cordon a shared node")
            .attack(step(A, "cordon kwok-node-1"), Says("forbidden"))
            .control(step(A, "get nodes -o name"), OkWith("kwok-node-1"))
            .bypass(step(Bypass, "cordon kwok-node-1")),
        case("nodes-delete", "MTB-PL1-CC-CPI-1", "delete a shared node")
            .attack(step(A, "delete node kwok-node-1 --wait=false"), Refused)
            .control(step(A, "get nodes -o name"), OkWith("kwok-node-1"))
            .bypass(step(Bypass, "delete node kwok-node-1 --wait=false")),
        case("apiservices", "MTB-PL1-CC-CPI-1", "list APIServices: built-in groups' and one's own CRD groups' only")
            .attack(step(A, "get apiservices"), NoLeak)
            .control(step(A, "get apiservices"), OkWith("v1.example.com"))
            .bypass(step(Bypass, "get apiservices")),
        case("apiservice-victim", "MTB-PL1-CC-CPI-1", "get and delete the victim's APIService by upstream name")
            .attack(step(A, "get apiservice v1.bravoo-example.com -o yaml"), RefusedWith("NotFound"))
            .control(step(A, "get apiservice v1.example.com -o name"), OkWith("v1.example.com"))
            .bypass(step(Bypass, "delete apiservice v1.bravoo-example.com")),
        case("apiservice-write", "MTB-PL1-CC-CPI-1", "delete a built-in group's APIService")
            .attack(step(A, "delete apiservice v1.apps"), RefusedWith("shared read-only"))
            .control(step(A, "get apiservice v1.apps -o name"), OkWith("v1.apps"))
            .bypass(step(Bypass, "delete apiservice v1.apps")),
        case("admission-policy-delete", "guard", "delete paddock's admission guard")
            .attack(step(A, "delete validatingadmissionpolicy paddock-tenant-guard"), Refused)
            .control(step(A, "get namespaces -o name"), OkWith("web"))
            .bypass(step(Bypass, "delete validatingadmissionpolicy paddock-tenant-guard")),
        case("tenant-api", "§7.2 no authz on the Tenant API", "read the tenant list / the victim's record")
            .attack(step(A, "get --raw /apis/paddock.io/v1alpha1/tenants/bravoo"), Refused)
            .control(step(A, "get --raw /apis/paddock.io/v1alpha1/tenants/alphaa"), OkWith("alphaa")),
        // ---- cross-tenant and platform writes -------------------------------------------------------
        case("write-victim-namespace", "MTB-PL1-CC-TI-2", "create a configmap in the victim's namespace")
            .attack(step(A, "create configmap x -n bravoo-vault-ns --from-literal=a=b"), Refused)
            .control(step(A, "create configmap ctl-x -n web --from-literal=a=b"), Ok)
            .bypass(step(Bypass, "create configmap x -n bravoo-vault-ns --from-literal=a=b")),
        case("delete-victim-namespace", "MTB-PL1-CC-TI-2", "delete the victim's namespace")
            .attack(step(A, "delete namespace bravoo-vault-ns --wait=false"), Refused)
            .control(step(A, "delete namespace scratch --wait=false"), Ok)
            .bypass(step(Bypass, "delete namespace bravoo-vault-ns --wait=false")),
        case("write-platform-namespace", "MTB-PL1-CC-CPI-1", "create a secret in the platform namespace")
            .attack(step(A, "create secret generic x -n plat-core --from-literal=a=b"), Refused)
            .control(step(A, "create secret generic ctl-s -n web --from-literal=a=b"), Ok)
            .bypass(step(Bypass, "create secret generic x -n plat-core --from-literal=a=b")),
        case("delete-victim-clusterrole", "cluster-scoped writes", "delete the victim's ClusterRole")
            .attack(step(A, "delete clusterrole bravoo-b-role"), Refused)
            .control(step(A, "create clusterrole ctl-role --verb=get --resource=configmaps"), Ok)
            .bypass(step(Bypass, "delete clusterrole bravoo-b-role")),
        case("create-unprefixed-clusterrole", "cluster-scoped writes", "create a ClusterRole outside one's prefix")
            .attack(step(A, "create clusterrole x --verb=get --resource=pods --dry-run=server -o name"), OkWithout("bravoo"))
            .control(step(A, "get clusterrole ctl-role -o name"), OkWith("ctl-role"))
            .bypass(step(Bypass, "create clusterrole plat-evil --verb=get --resource=pods")),
        case("guard-rbac-hole", "guard rule 2 (second wall)", "write in a platform namespace where upstream RBAC wrongly grants the attacker edit (bypass: the guard alone refuses)")
            .attack(step(A, "create configmap x -n plat-hole --from-literal=a=b"), Refused)
            // The positive control: the hole is real, so the bypass's refusal is the guard's.
            .control(step(Up, "auth can-i create configmaps -n plat-hole --as=paddock:alphaa:admin"), OkWith("yes"))
            .bypass(step(Bypass, "create configmap x -n plat-hole --from-literal=a=b")),
        case("namespace-unlabelled", "guard", "create a namespace under one's prefix without the tenant label (bypass)")
            .attack(step(A, "create namespace unlabelled --dry-run=server -o name"), OkWithout("bravoo"))
            .control(step(A, "get namespace web -o name"), OkWith("web"))
            .bypass(step(Bypass, "create namespace alphaa-unlabelled")),
        // ---- RBAC escalation (MTB-PL2-CC-TI-1, §7.2 group subjects) ------------------------------------
        case("crb-system-masters", "MTB-PL2-CC-TI-1, §7.2 group subjects", "bind system:masters")
            .attack(step(A, "create clusterrolebinding pwn --clusterrole=a-role --group=system:masters"), Refused)
            .control(step(A, "create clusterrolebinding ctl-crb --clusterrole=a-role --group=devs"), Ok)
            .bypass(step(Bypass, "create clusterrolebinding alphaa-pwn --clusterrole=alphaa-a-role --group=system:masters")),
        case("rb-system-authenticated", "§7.2 group subjects", "bind system:authenticated in one's namespace")
            .attack(step(A, "create rolebinding pwn -n web --clusterrole=view --group=system:authenticated"), Refused)
            .control(step(A, "create rolebinding ctl-rb -n web --clusterrole=view --group=devs"), Ok)
            .bypass(step(Bypass, "create rolebinding pwn -n alphaa-web --clusterrole=view --group=system:authenticated")),
        case("rb-other-tenant-user", "§7.2 group subjects", "bind another tenant's user")
            .attack(step(A, "create rolebinding pwn2 -n web --clusterrole=view --user=paddock:bravoo:admin"), Refused)
            .control(step(A, "create rolebinding ctl-rb2 -n web --clusterrole=view --user=alice"), Ok)
            .bypass(step(Bypass, "create rolebinding pwn2 -n alphaa-web --clusterrole=view --user=paddock:bravoo:admin")),
        case("rb-platform-clusterrole", "MTB-PL2-CC-TI-1", "bind a platform ClusterRole (not admin/edit/view)")
            .then(step(A, "create rolebinding pwn3 -n web --clusterrole=plat-reader --user=alice"))
            .attack(step(Up, "get rolebinding pwn3 -n alphaa-web -o jsonpath={.roleRef.name}"), OkWith("alphaa-plat-reader"))
            .control(step(A, "create rolebinding ctl-rb3 -n web --clusterrole=edit --user=alice"), Ok)
            .bypass(step(Bypass, "create rolebinding pwn3 -n alphaa-web --clusterrole=plat-reader --user=paddock:alphaa:alice")),
        case("crb-cluster-admin", "MTB-PL2-CC-TI-1, §2.3 cluster-admin via CRB", "ClusterRoleBinding to cluster-admin")
            .then(step(A, "create clusterrolebinding pwn4 --clusterrole=cluster-admin --serviceaccount=web:robot"))
            .attack(step(Up, "get clusterrolebinding alphaa-pwn4 -o jsonpath={.roleRef.name}"), OkWith("alphaa-cluster-admin"))
            .control(step(A, "get clusterrolebinding robot-secrets -o name"), OkWith("robot-secrets"))
            .bypass(step(Bypass, "create clusterrolebinding alphaa-pwn5 --clusterrole=cluster-admin --user=paddock:alphaa:admin")),
        case("crb-is-inert-upstream", "hole (1): tenant CRB reaches every namespace", "a tenant CRB grants its SA nothing outside the tenant")
            .attack(step(ASaDirect, "get secrets -n bravoo-vault-ns"), Refused)
            .control(step(ASaPaddock, "get secrets -A"), OkWith("own-secret"))
            .bypass(step(ASaDirect, "get secrets -A")),
        case("crb-mirrors-in-own-ns", "hole (1)", "the CRB's namespaced meaning holds only in the tenant's namespaces")
            .attack(step(ASaDirect, "get secrets -n plat-core"), Refused)
            .control(step(ASaDirect, "get secrets -n alphaa-web -o name"), OkWith("own-secret")),
        case("escalate-clusterrole-bypass", "MTB-PL2-CC-TI-1", "create a ClusterRole with the real identity")
            .attack(step(A, "create clusterrole esc --verb=* --resource=* --dry-run=server -o name"), OkWithout("bravoo"))
            .control(step(A, "get clusterroles -o name"), OkWith("a-role"))
            .bypass(step(Bypass, "create clusterrole alphaa-esc2 --verb=* --resource=*")),
        // The label is accepted (renamed upstream, issue 13 item 2): it extends the tenant's own
        // `edit` (waited for, so the platform's role has been through the same aggregation
        // round), never the platform's, checked upstream as the cluster admin.
        case("aggregate-into-edit", "§2.3 aggregation labels", "ClusterRole labelled aggregate-to-edit extends only the tenant's edit")
            .then(step_in(A, "apply -f -", AGG_EDIT))
            .then(step(A, "wait clusterrole/edit --for=jsonpath={.rules[?(@.resources[0]==\"nodes\")].verbs[0]}=update --timeout=60s"))
            .attack(step(Up, "get clusterrole edit admin -o jsonpath={.items[*].rules[*].resources}"), OkWithout("nodes"))
            .control_pre(step_in(A, "apply -f -", AGG_OWN))
            .control(step(A, "get clusterrole edit admin -o jsonpath={.items[*].rules[*].resources}"), OkWith("nodes"))
            .bypass(step_in(Bypass, "create -f -", &AGG_EDIT.replace("name: sneaky", "name: alphaa-sneaky").replace("labels: {", "labels: {paddock.io/tenant: alphaa, "))),
        case("aggregate-all-roles", "§2.3 aggregation", "an aggregating ClusterRole collects only one's own roles")
            .setup(step_in(A, "apply -f -", AGG_ALL))
            .attack(step(A, "get clusterrole collect-all -o yaml"), NoLeak)
            .control(step(A, "get clusterrole collect-all -o yaml"), OkWith("configmaps"))
            .bypass(step_in(Bypass, "create -f -", AGG_ALL_UP)),
        case("impersonate-user", "impersonation", "kubectl --as=system:admin")
            .attack(step(A, "get pods -n web --as=system:admin"), Refused)
            .control(step(A, "get pods -n web"), OkWith("a-pod")),
        case("impersonate-group", "impersonation", "kubectl --as-group=system:masters")
            .attack(step(A, "get secrets -A --as=admin --as-group=system:masters"), Refused)
            .control(step(A, "get secrets -n web -o name"), OkWith("own-secret")),
        // ---- identity claims in front-proxy headers (issue 37): a client's `X-Remote-*` headers
        // (user system:admin, group system:masters, the victim's tenant extra) never reach
        // the apiserver, whichever way paddock asserts identities upstream ------------------
        case("x-remote-user", "front proxy", "X-Remote-User: system:admin (and group, extra) through paddock: whoami")
            .attack(step(AXRemote, "auth whoami -o jsonpath={.status.userInfo.username}"), OkExactly("admin"))
            .control(step(A, "auth whoami -o jsonpath={.status.userInfo.username}"), OkExactly("admin")),
        case("x-remote-group", "front proxy", "X-Remote-Group: system:masters through paddock: whoami's groups")
            .attack(step(AXRemote, "auth whoami -o jsonpath={.status.userInfo.groups}"), OkWithout("system:masters"))
            .control(step(A, "auth whoami -o jsonpath={.status.userInfo.groups}"), OkWith("tenant-admins")),
        case("x-remote-secrets", "front proxy, MTB-PL1-CC-TI-2", "X-Remote-* claims through paddock: every secret")
            .attack(step(AXRemote, "get secrets -A -o name"), NoLeak)
            .control(step(A, "get secrets -n web -o name"), OkWith("own-secret")),
        case("x-remote-can-i", "front proxy, MTB-PL1-CC-CPI-1", "X-Remote-* claims through paddock: can-i update nodes")
            .attack(step(AXRemote, "auth can-i update nodes"), Refused)
            .control(step(A, "auth can-i list namespaces"), OkWith("yes")),
        case("x-remote-nodes-proxy", "front proxy, §7.2 nodes/proxy", "X-Remote-* claims through paddock: nodes/proxy")
            .attack(step(AXRemote, "get --raw /api/v1/nodes/kwok-node-0/proxy/pods"), Refused)
            .control(step(A, "get nodes"), OkWith("kwok-node-0")),
        case("sar-other-user", "§7.2 SAR / can-i", "SubjectAccessReview about another tenant's user")
            .attack(step_in(A, "create --validate=false -f - -o yaml", SAR_OTHER), RefusedWith("cannot be used"))
            .control(step_in(A, "create --validate=false -o jsonpath={.status.allowed} -f -", SAR_OWN_SA), OkWith("true")),
        case("sar-victim-sa", "SAR / can-i", "SubjectAccessReview about the victim's service account in its namespace (upstream names)")
            .attack(step_in(A, "create --validate=false -o jsonpath={.status.allowed} -f -", SAR_VICTIM_SA), OkWithout("true"))
            .control(step_in(A, "create --validate=false -o jsonpath={.status.allowed} -f -", SAR_OWN_SA), OkWith("true"))
            .bypass(step_in(Bypass, "create --validate=false -o yaml -f -", SAR_VICTIM_SA)),
        // `system:serviceaccounts` is asked as it is (every service account of the tenant's
        // cluster; no tenant can bind it); the victim's namespace group beside it is still
        // mapped into the attacker's names. The victim binds its namespace's service accounts,
        // so a group passed through unmapped would answer "true".
        case("sar-all-serviceaccounts", "SAR / can-i", "SubjectAccessReview with group system:serviceaccounts and the victim's namespace group")
            .setup(step(B, "create rolebinding b-sa-group-view -n vault-ns --clusterrole=view --group=system:serviceaccounts:vault-ns"))
            .setup(step(A, "create rolebinding a-sa-group-view -n web --clusterrole=view --group=system:serviceaccounts:web"))
            .attack(step_in(A, "create --validate=false -o jsonpath={.status.allowed} -f -", SAR_ALL_SA_VICTIM), OkWithout("true"))
            .control(step_in(A, "create --validate=false -o jsonpath={.status.allowed} -f -", LSAR_ALL_SA_OWN), OkWith("true"))
            .bypass(step_in(Bypass, "create --validate=false -o yaml -f -", SAR_ALL_SA_VICTIM)),
        case("can-i-nodes", "MTB-PL1-CC-CPI-1", "kubectl auth can-i update nodes")
            .attack(step(A, "auth can-i update nodes"), Refused)
            .control(step(A, "auth can-i list namespaces"), OkWith("yes")),
        // ---- impersonation inside the tenant (issue 13 item 5) --------------------------------
        case("impersonate-other-tenant-user", "impersonation", "kubectl --as=<another tenant's upstream user>")
            .attack(step(A, "get secrets -n web --as=paddock:bravoo:admin"), RefusedWith("impersonation refused"))
            .control(step(A, "get secrets -n web -o name --as=someone --as-group=tenant-admins"), OkWith("own-secret")),
        case("impersonate-shadow", "impersonation", "kubectl --as=<one's own cluster shadow identity>")
            .attack(step(A, "get namespaces --as=paddock:cluster:alphaa:paddock:alphaa:admin"), RefusedWith("impersonation refused"))
            .control(step(A, "get namespaces -o name --as=someone --as-group=tenant-admins"), OkWith("namespace/web")),
        case("impersonate-tenant-group", "impersonation", "kubectl --as-group=paddock:tenant:bravoo (the victim's marker group)")
            .attack(step(A, "get secrets -A --as=someone --as-group=paddock:tenant:bravoo"), RefusedWith("impersonation refused"))
            .control(step(A, "auth whoami --as=someone --as-group=devs"), OkWith("devs")),
        case("impersonate-victim-sa", "impersonation", "kubectl --as=<the victim's service account, upstream name>")
            .attack(step(A, "get secret crown-jewels -n bravoo-vault-ns --as=system:serviceaccount:bravoo-vault-ns:b-sa"), Refused)
            .control(step(A, "auth whoami --as=system:serviceaccount:web:default"), OkWith("system:serviceaccount:web:default")),
        case("impersonate-sa-rights", "impersonation", "an impersonated service account has only its own rights")
            .attack(step(A, "get secrets -n web --as=system:serviceaccount:web:default"), RefusedWith("forbidden"))
            .control(step(A, "auth can-i get secrets -n web --as=system:serviceaccount:web:default"), Says("no")),
        // ---- a refusal never hides a NotFound, and NotFound probes reveal nothing (item 1, 4) ----
        case("absent-ns-probe", "NotFound probes", "create in the victim's namespace (tenant view and upstream name): the same answer as a name nobody has")
            .attack(step(A, "create configmap x -n vault-ns --from-literal=a=b"), RefusedWith("namespaces \"vault-ns\" not found"))
            .control(step(A, "create configmap x -n never-made --from-literal=a=b"), Says("namespaces \"never-made\" not found")),
        case("absent-ns-probe-upstream", "NotFound probes", "list in the victim's upstream namespace name: an empty list of one's own")
            .attack(step(A, "get secrets -n bravoo-vault-ns -o name"), NoLeak)
            .control(step(A, "get secrets -n web -o name"), OkWith("own-secret")),
        case("shared-notfound", "refusal hides NotFound", "delete a shared IngressClass that does not exist, and one that does")
            .attack(step(A, "delete priorityclass system-node-critical"), RefusedWith("shared read-only"))
            .control(step(A, "delete ingressclass nothing-here --ignore-not-found"), Ok),
        // ---- webhooks -------------------------------------------------------------------------------
        case("webhook-url", "§7.2 cluster-wide webhooks", "a webhook calling an arbitrary URL")
            .attack(step_in(A, "create -f -", &webhook("hook-url", "url: https://127.0.0.1:1/x", "Namespaced")), Refused)
            .control(step_in(A, "create -f -", &webhook("hook-ok", "service: {name: hooksvc, namespace: web, port: 443}", "Namespaced")), Ok)
            .bypass(step_in(Bypass, "create -f -", &webhook("alphaa-hook-url", "url: https://127.0.0.1:1/x", "Namespaced"))),
        case("webhook-cluster-scope", "§7.2 cluster-wide webhooks", "a webhook on cluster-scoped objects")
            .attack(step_in(A, "create -f -", &webhook("hook-cluster", "service: {name: hooksvc, namespace: web, port: 443}", "Cluster")), Refused)
            .control(step(A, "get validatingwebhookconfiguration hook-ok -o name"), OkWith("hook-ok"))
            .bypass(step_in(Bypass, "create -f -", &webhook_up("alphaa-hook-cluster", "alphaa-web", "Cluster", true))),
        case("webhook-confined", "§7.2 cluster-wide webhooks", "a webhook's namespaceSelector is confined upstream")
            .attack(step(Up, "get validatingwebhookconfiguration alphaa-hook-ok -o jsonpath={.webhooks[0].namespaceSelector}"), OkWith("paddock.io/tenant"))
            .control(step(A, "get validatingwebhookconfiguration hook-ok -o name"), OkWith("hook-ok"))
            .bypass(step_in(Bypass, "create -f -", &webhook_up("alphaa-hook-wide", "alphaa-web", "Namespaced", false))),
        case("webhook-victim-service", "§7.2 cluster-wide webhooks", "a webhook calling a service in the victim's namespace (bypass)")
            .attack(step_in(A, "create -f - --dry-run=server -o yaml", &webhook("hook-b", "service: {name: hooksvc, namespace: bravoo-vault-ns, port: 443}", "Namespaced")), NoLeak)
            .control(step(A, "get validatingwebhookconfiguration hook-ok -o name"), OkWith("hook-ok"))
            .bypass(step_in(Bypass, "create -f -", &webhook_up("alphaa-hook-b", "bravoo-vault-ns", "Namespaced", true))),
        // ---- pod security (MTB-PL1-BC-CPI-3/5, HI-1..5), services, quotas ------------------------
        case("pod-privileged", "MTB-PL1-BC-CPI-5", "privileged container")
            .attack(step_in(A, "create -n web -f -", &pod("priv", PLAIN, "securityContext: {privileged: true}")), RefusedWith("privileged"))
            .control(step_in(A, "create -n web -f -", &pod("ctl-plain", PLAIN, NOOP)), Ok)
            .bypass(step_in(Bypass, "create -n alphaa-web -f -", &pod("priv", PLAIN, "securityContext: {privileged: true}"))),
        case("pod-hostpath", "MTB-PL1-BC-HI-1", "hostPath volume")
            .attack(step_in(A, "create -n web -f -", &pod("hp", "volumes: [{name: h, hostPath: {path: /etc}}]", NOOP)), RefusedWith("hostPath"))
            .control(step_in(A, "create -n web -f -", &pod("ctl-vol", "volumes: [{name: h, emptyDir: {}}]", NOOP)), Ok)
            .bypass(step_in(Bypass, "create -n alphaa-web -f -", &pod("hp", "volumes: [{name: h, hostPath: {path: /etc}}]", NOOP))),
        case("pod-hostnetwork", "MTB-PL1-BC-HI-3", "hostNetwork")
            .attack(step_in(A, "create -n web -f -", &pod("hn", "hostNetwork: true", NOOP)), RefusedWith("host"))
            .control(step_in(A, "create -n web -f -", &pod("ctl-net", "hostNetwork: false", NOOP)), Ok)
            .bypass(step_in(Bypass, "create -n alphaa-web -f -", &pod("hn", "hostNetwork: true", NOOP))),
        case("pod-hostport", "MTB-PL1-BC-HI-3", "hostPort")
            .attack(step_in(A, "create -n web -f -", &pod("hport", PLAIN, "ports: [{containerPort: 80, hostPort: 80}]")), RefusedWith("hostPort"))
            .control(step_in(A, "create -n web -f -", &pod("ctl-port", PLAIN, "ports: [{containerPort: 80}]")), Ok)
            .bypass(step_in(Bypass, "create -n alphaa-web -f -", &pod("hport", PLAIN, "ports: [{containerPort: 80, hostPort: 80}]"))),
        case("pod-hostpid", "MTB-PL1-BC-HI-4", "hostPID")
            .attack(step_in(A, "create -n web -f -", &pod("hpid", "hostPID: true", NOOP)), RefusedWith("host"))
            .control(step_in(A, "create -n web -f -", &pod("ctl-pid", "hostPID: false", NOOP)), Ok)
            .bypass(step_in(Bypass, "create -n alphaa-web -f -", &pod("hpid", "hostPID: true", NOOP))),
        case("pod-hostipc", "MTB-PL1-BC-HI-5", "hostIPC")
            .attack(step_in(A, "create -n web -f -", &pod("hipc", "hostIPC: true", NOOP)), RefusedWith("host"))
            .control(step_in(A, "create -n web -f -", &pod("ctl-ipc", "hostIPC: false", NOOP)), Ok)
            .bypass(step_in(Bypass, "create -n alphaa-web -f -", &pod("hipc", "hostIPC: true", NOOP))),
        case("pod-caps", "MTB-PL1-BC-CPI-3", "add capability SYS_ADMIN")
            .attack(step_in(A, "create -n web -f -", &pod("caps", PLAIN, "securityContext: {capabilities: {add: [SYS_ADMIN]}}")), RefusedWith("SYS_ADMIN"))
            .control(step_in(A, "create -n web -f -", &pod("ctl-caps", PLAIN, "securityContext: {capabilities: {drop: [ALL]}}")), Ok)
            .bypass(step_in(Bypass, "create -n alphaa-web -f -", &pod("caps", PLAIN, "securityContext: {capabilities: {add: [SYS_ADMIN]}}"))),
        case("psa-label-change", "§7.2 PSA labels tenant-controllable", "relabel one's namespace privileged")
            .attack(step(A, "label namespace web pod-security.kubernetes.io/enforce=privileged --overwrite"), Refused)
            .control(step(A, "label namespace web team2=alpha --overwrite"), Ok)
            .bypass(step(Bypass, "label namespace alphaa-web pod-security.kubernetes.io/enforce=privileged --overwrite")),
        case("psa-label-remove", "§7.2 PSA labels", "remove the pod-security label")
            .attack(step(A, "label namespace web pod-security.kubernetes.io/enforce-"), Refused)
            .control(step(A, "label namespace web team2-"), Ok)
            .bypass(step(Bypass, "label namespace alphaa-web pod-security.kubernetes.io/enforce-")),
        case("psa-new-namespace-privileged", "§7.2 PSA labels", "create a namespace asking for privileged, then a privileged pod in it")
            .setup(step_in(A, "apply -f -", "apiVersion: v1\nkind: Namespace\nmetadata: {name: privns, labels: {pod-security.kubernetes.io/enforce: privileged}}\n"))
            .attack(step_in(A, "create -n privns -f -", &pod("priv2", PLAIN, "securityContext: {privileged: true}")), RefusedWith("privileged"))
            .control(step_in(A, "create -n privns -f -", &pod("ctl-p2", PLAIN, NOOP)), Ok)
            .bypass(step_in(Bypass, "create -f -", "apiVersion: v1\nkind: Namespace\nmetadata: {name: alphaa-privns2, labels: {paddock.io/tenant: alphaa, pod-security.kubernetes.io/enforce: privileged}}\n")),
        case("svc-nodeport", "MTB-PL1-BC-HI-2", "NodePort Service")
            .attack(step(A, "create service nodeport np -n web --tcp=80:80"), Refused)
            .control(step(A, "create service clusterip ctl-svc -n web --tcp=80:80"), Ok)
            .bypass(step(Bypass, "create service nodeport np -n alphaa-web --tcp=80:80")),
        case("svc-loadbalancer", "MTB-PL1-BC-HI-2", "LoadBalancer Service")
            .attack(step(A, "create service loadbalancer lb -n web --tcp=80:80"), Refused)
            .control(step(A, "get service ctl-svc -n web -o name"), OkWith("ctl-svc"))
            .bypass(step(Bypass, "create service loadbalancer lb -n alphaa-web --tcp=80:80")),
        case("svc-externalips", "CVE-2020-8554", "Service with externalIPs")
            .attack(step_in(A, "create -n web -f -", "apiVersion: v1\nkind: Service\nmetadata: {name: extip}\nspec: {ports: [{port: 80}], externalIPs: [192.0.2.1]}\n"), Refused)
            .control(step_in(A, "create -n web -f -", "apiVersion: v1\nkind: Service\nmetadata: {name: ctl-noext}\nspec: {ports: [{port: 80}]}\n"), Ok)
            .bypass(step_in(Bypass, "create -n alphaa-web -f -", "apiVersion: v1\nkind: Service\nmetadata: {name: extip}\nspec: {ports: [{port: 80}], externalIPs: [192.0.2.1]}\n")),
        // A tenant may add quotas of its own (every quota in a namespace applies, so one more
        // can only restrict further; the e2e framework's ResourceQuota tests need it); what it
        // must never do is raise or remove the platform's.
        case("quota-raise", "MTB-PL1-CC-TI-1, §7.2 quota bypass", "raise the platform's quota")
            .attack(
                step(A, "patch resourcequota paddock-tenant-limits -n web --type=merge -p '{\"spec\":{\"hard\":{\"services.nodeports\":\"100\"}}}'"),
                Refused,
            )
            .control(step(A, "create quota mine -n web --hard=pods=1000"), Ok)
            .bypass(step(
                Bypass,
                "patch resourcequota paddock-tenant-limits -n alphaa-web --type=merge -p '{\"spec\":{\"hard\":{\"services.nodeports\":\"100\"}}}'",
            )),
        case("quota-delete", "MTB-PL1-CC-TI-1", "delete the platform's quota")
            .attack(step(A, "delete resourcequota paddock-tenant-limits -n web"), Refused)
            .control(step(A, "describe resourcequota paddock-tenant-limits -n web"), OkWith("persistentvolumeclaims"))
            .bypass(step(Bypass, "delete resourcequota paddock-tenant-limits -n alphaa-web")),
        case("managed-rolebinding", "MTB-PL1-BC-CPI-2", "delete the platform's RoleBinding")
            .attack(step(A, "delete rolebinding paddock-tenant-admins -n web"), Refused)
            .control(step(A, "create role ctl-role -n web --verb=get --resource=pods"), Ok)
            .bypass(step(Bypass, "delete rolebinding paddock-tenant-admins -n alphaa-web")),
        case("managed-networkpolicy", "MTB-PL1-BC-CPI-2, MTB-PL1-BC-NI-1, MTB-PL2-BC-OPS-4", "delete the platform's NetworkPolicy")
            .attack(step(A, "delete networkpolicy paddock-tenant-isolation -n web"), Refused)
            .control_pre(step_in(A, "create -n web -f -", "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: ctl-np}\nspec: {podSelector: {}, policyTypes: [Ingress]}\n"))
            .control(step(A, "delete networkpolicy ctl-np -n web"), Ok)
            .bypass(step(Bypass, "delete networkpolicy paddock-tenant-isolation -n alphaa-web")),
        case("managed-label-forge", "MTB-PL1-BC-CPI-2", "forge the platform's managed-for label")
            .attack(step_in(A, "create -n web -f -", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: forged, labels: {paddock.io/managed-for: bravoo}}\n"), Refused)
            .control(step_in(A, "create -n web -f -", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ctl-labelled, labels: {team: alpha}}\n"), Ok)
            .bypass(step_in(Bypass, "create -n alphaa-web -f -", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: forged, labels: {paddock.io/managed-for: bravoo}}\n")),
        case("tenant-label-forge", "tenant label", "set the reserved paddock.io/tenant label")
            .attack(step(A, "label configmap own-cm -n web paddock.io/tenant=bravoo"), Refused)
            .control(step(A, "label configmap own-cm -n web mine=yes"), Ok)
            .bypass(step(Bypass, "label namespace alphaa-web paddock.io/tenant=bravoo --overwrite")),
        // ---- PVs (§7.2 PV write-only / shared) ----------------------------------------------------
        case("pv-list", "§7.2 PV write-only, MTB pending (existing PVs)", "PVs: own visible, others' not")
            .attack(step(A, "get pv"), NoLeak)
            .control(step(A, "get pv"), OkWith("a-pv"))
            .bypass(step(Bypass, "get pv")),
        case("pv-victim", "MTB pending: block use of existing PVs", "claim the victim's PV by upstream name")
            .then(step_in(A, "create -n web -f -", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: steal}\nspec: {volumeName: bravoo-b-pv, accessModes: [ReadWriteOnce], storageClassName: '', resources: {requests: {storage: 1Gi}}}\n"))
            .attack(step(Up, "get pvc steal -n alphaa-web -o jsonpath={.spec.volumeName}"), OkWith("alphaa-bravoo-b-pv"))
            .control(step(A, "get pv a-pv -o name"), OkWith("a-pv"))
            .bypass(step(Bypass, "delete pv bravoo-b-pv")),
        // ---- service accounts and tenant pods (§7.2 tenant pods reach upstream) -------------------
        case("sa-token-platform", "TokenReview", "a platform service account's token at paddock")
            .attack(step(PlatSaPaddock, "get configmaps -n web"), Refused)
            .control(step(ASaPaddock, "get configmaps -n web -o name"), OkWith("own-cm")),
        // Through paddock `-n bravoo-vault-ns` is the attacker's own namespace `alphaa-bravoo-vault-ns`,
        // which does not exist: the robot (cluster-admin of its tenant since `crb-cluster-admin`)
        // gets a cluster admin's answer there, an empty list or a NotFound, never the victim's secret.
        case("sa-token-cross-ns", "TokenReview", "a tenant pod's token reaching for the victim's secret")
            .attack(step(ASaPaddock, "get secret crown-jewels -n bravoo-vault-ns -o yaml"), Refused)
            .control(step(ASaPaddock, "get configmaps -n web -o name"), OkWith("own-cm"))
            .bypass(step(ASaDirect, "get secret crown-jewels -n bravoo-vault-ns -o yaml")),
        case("sa-token-cross-ns-list", "TokenReview, NotFound probes", "a tenant pod's token listing the victim's namespace")
            .attack(step(ASaPaddock, "get secrets -n bravoo-vault-ns -o yaml"), NoLeak)
            .control(step(ASaPaddock, "get secrets -n web -o name"), OkWith("own-secret"))
            .bypass(step(ASaDirect, "get secrets -n bravoo-vault-ns -o yaml")),
        case("sa-token-direct-cluster", "§7.2 tenant pods reach upstream", "a tenant pod's token straight at the apiserver, cluster-wide")
            .attack(step(ASaDirect, "get namespaces"), Refused)
            .control(step(ASaDirect, "get configmaps -n alphaa-web -o name"), OkWith("own-cm"))
            .bypass(step(ASaDirect, "get nodes")),
        case("sa-token-victim", "service accounts", "mint a token for the victim's service account")
            .attack(step(A, "create token b-sa -n bravoo-vault-ns"), Refused)
            .control(step(A, "create token robot -n web"), Ok)
            .bypass(step(Bypass, "create token b-sa -n bravoo-vault-ns")),
        case("victim-untouched", "MTB-PL1-CC-TI-2", "delete the victim's secret; the victim still has it")
            .attack(step(A, "delete secret crown-jewels -n bravoo-vault-ns"), Refused)
            .control(step(B, "get secret crown-jewels -n vault-ns -o name"), OkWith("crown-jewels"))
            .bypass(step(Bypass, "delete secret crown-jewels -n bravoo-vault-ns")),
    ];
    v.extend(admission_policy_cases());
    v.extend(flowcontrol_cases());
    v.extend(pod_security_setting_cases());
    v.retain(|c| selected(c.id));
    v
}

/// TokenReview (issue 13): a tenant's review authenticates only its own service accounts'
/// tokens; another tenant's or the platform's valid token is `authenticated: false` and names
/// no one. The tokens are minted upstream when the world is built, so these cases are built
/// then. The bypass: the tenant identity straight at the apiserver holds no `create
/// tokenreviews` (only its shadow does, which only paddock asserts).
pub(crate) fn token_review_cases(a_token: &str, b_token: &str, plat_token: &str) -> Vec<Case> {
    use Expect::*;
    use Who::*;
    let review = |tok: &str| {
        format!(
            "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec: {{token: '{tok}'}}\n"
        )
    };
    let own = review(a_token);
    let mut v = vec![
        case(
            "tokenreview-victim-sa",
            "TokenReview",
            "TokenReview of the victim's service-account token",
        )
        .attack(
            step_in(A, "create --validate=false -o yaml -f -", &review(b_token)),
            OkWithout("authenticated: true"),
        )
        .control(
            step_in(A, "create --validate=false -o yaml -f -", &own),
            OkWith("username: system:serviceaccount:web:robot"),
        )
        .bypass(step_in(
            Bypass,
            "create --validate=false -o yaml -f -",
            &review(b_token),
        )),
        case(
            "tokenreview-platform-sa",
            "TokenReview",
            "TokenReview of a platform service account's token",
        )
        .attack(
            step_in(
                A,
                "create --validate=false -o yaml -f -",
                &review(plat_token),
            ),
            OkWithout("authenticated: true"),
        )
        .control(
            step_in(A, "create --validate=false -o yaml -f -", &own),
            OkWith("authenticated: true"),
        )
        .bypass(step_in(
            ASaDirect,
            "create --validate=false -o yaml -f -",
            &review(plat_token),
        )),
    ];
    v.retain(|c| selected(c.id));
    v
}

/// Each user's own view (issue 40 acceptance 2, docs/security.md "Each user's own view"):
/// `ann`, a user of the attacker who is not a tenant admin (group `auditors`, admin of `web`),
/// lists namespaces and objects across all namespaces. The victim binds its own group
/// `auditors` as admin of its `vault-ns`: a group of the same name in another tenant grants
/// ann nothing, and her view shows the attacker's namespaces only (`web`, and any other the
/// attacker's ClusterRoleBindings give her). The controls: the same reads show
/// `web` and its objects. The bypass: the attacker's identity straight at the apiserver holds
/// no cluster-wide read. Only where the attacker lives on one cluster (a spanning tenant's
/// non-admins keep the cluster's 403 for `get ns`).
pub(crate) fn user_view_cases() -> Vec<Case> {
    use Expect::*;
    use Who::*;
    let binding = |name: &str, ns: &str, subject: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: {name}, namespace: {ns}}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}}\nsubjects: [{subject}]\n"
        )
    };
    let ann = binding("ann-web", "web", "{kind: User, name: ann}");
    let victims = binding("b-auditors", "vault-ns", "{kind: Group, name: auditors}");
    let with_setup = |c: Case| {
        c.setup(step_in(A, "apply -f -", &ann))
            .setup(step_in(B, "apply -f -", &victims))
    };
    let mut v = vec![
        with_setup(case(
            "user-view-namespaces",
            "issue 40: each user's own view",
            "a non-admin's get ns",
        ))
        .attack(step(AUser, "get ns"), NoLeak)
        .control(step(AUser, "get ns -o name"), OkWith("namespace/web"))
        .bypass(step(Bypass, "get ns")),
        with_setup(case(
            "user-view-namespaces-watch",
            "issue 40: each user's own view",
            "a non-admin's get ns -w",
        ))
        .attack(step(AUser, "get ns -w --request-timeout=4s"), NoLeak)
        .control(step(AUser, "get ns -w --request-timeout=4s"), Shows("web"))
        .bypass(step(Bypass, "get ns -w --request-timeout=3s")),
        with_setup(case(
            "user-view-secrets-all-ns",
            "issue 40: each user's own view",
            "a non-admin's get secrets -A (the victim's auditors are admins of vault-ns)",
        ))
        .attack(step(AUser, "get secrets -A"), NoLeak)
        .control(step(AUser, "get secrets -A"), OkWith("own-secret"))
        .bypass(step(Bypass, "get secrets -A")),
        with_setup(case(
            "user-view-configmaps-watch-all-ns",
            "issue 40: each user's own view",
            "a non-admin's get configmaps -A --watch",
        ))
        .attack(
            step(AUser, "get configmaps -A --watch --request-timeout=4s"),
            NoLeak,
        )
        .control(
            step(AUser, "get configmaps -A --watch --request-timeout=4s"),
            Shows("own-cm"),
        )
        .bypass(step(
            Bypass,
            "get configmaps -A --watch --request-timeout=3s",
        )),
    ];
    v.retain(|c| selected(c.id));
    v
}
