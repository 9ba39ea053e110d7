"""The Python client (`kubernetes` from PyPI) against one cluster: CRUD, list/watch and a custom
resource through the dynamic client. Run by tests/e2e/tests/clients.rs directly (the upstream
admin) and through paddock (a tenant admin). Usage: python_client.py <kubeconfig> <namespace>.
Prints one line per step; exits non-zero at the first failing step."""

import sys
import threading
import time

from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException


def step(name):
    print(f"step {name}", flush=True)


def main(kubeconfig, ns):
    api_client = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api_client)

    step("version")
    v = client.VersionApi(api_client).get_code()
    assert v.major == "1", v

    step("namespace-create")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))

    step("configmap-create")
    cm = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="py-cm", labels={"app": "py"}), data={"k": "v1"}
    )
    core.create_namespaced_config_map(ns, cm)

    step("configmap-read")
    got = core.read_namespaced_config_map("py-cm", ns)
    assert got.data == {"k": "v1"}, got.data
    assert got.metadata.namespace == ns, got.metadata.namespace

    step("configmap-patch")
    core.patch_namespaced_config_map("py-cm", ns, {"data": {"k": "v2"}})
    assert core.read_namespaced_config_map("py-cm", ns).data["k"] == "v2"

    step("configmap-replace")
    got = core.read_namespaced_config_map("py-cm", ns)
    got.data = {"k": "v3"}
    core.replace_namespaced_config_map("py-cm", ns, got)

    step("configmap-list-selector")
    items = core.list_namespaced_config_map(ns, label_selector="app=py").items
    assert [i.metadata.name for i in items] == ["py-cm"], [i.metadata.name for i in items]

    step("configmap-list-all-namespaces")
    names = {(i.metadata.namespace, i.metadata.name) for i in core.list_config_map_for_all_namespaces().items}
    assert (ns, "py-cm") in names, sorted(names)[:20]

    step("configmap-not-found")
    try:
        core.read_namespaced_config_map("nope", ns)
        raise AssertionError("expected 404")
    except ApiException as e:
        assert e.status == 404, e.status

    step("watch")
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    seen = []
    w = watch.Watch()

    def create_later():
        time.sleep(1)
        core.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-watched"))
        )

    t = threading.Thread(target=create_later)
    t.start()
    for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=30):
        seen.append((ev["type"], ev["object"].metadata.name))
        if ("ADDED", "py-watched") in seen:
            w.stop()
    t.join()
    assert ("ADDED", "py-watched") in seen, seen

    step("configmap-delete")
    core.delete_namespaced_config_map("py-cm", ns)

    step("dynamic-custom-resource")
    dyn = dynamic.DynamicClient(api_client)
    res = dyn.resources.get(api_version="pyclient.example.com/v1", kind="Sprocket")
    body = {
        "apiVersion": "pyclient.example.com/v1",
        "kind": "Sprocket",
        "metadata": {"name": "s1", "namespace": ns},
        "spec": {"teeth": 12},
    }
    res.create(body=body, namespace=ns)
    got = res.get(name="s1", namespace=ns)
    assert got.spec.teeth == 12, got
    assert got.apiVersion == "pyclient.example.com/v1", got.apiVersion
    res.patch(
        name="s1",
        namespace=ns,
        body={"spec": {"teeth": 14}},
        content_type="application/merge-patch+json",
    )
    listed = res.get(namespace=ns)
    assert [i.metadata.name for i in listed.items] == ["s1"], listed
    assert listed.items[0].spec.teeth == 14
    res.delete(name="s1", namespace=ns)

    step("namespace-delete")
    core.delete_namespace(ns)
    print("OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
