# paddock: the two commands a newcomer needs are `make demo` and `make test`.
.PHONY: demo test test-static test-chart test-operators test-ha test-k9s testbed-build conformance conformance-fast conformance-full testbed-up testbed-down fmt lint bench bench-scale

## Build paddock, start a local control plane (unless PADDOCK_UPSTREAM_KUBECONFIG is set),
## start paddock, create tenant demo01 and print the kubectl line to use it.
demo:
	bash scripts/demo.sh

## Everything: fmt, clippy, unit tests, fuzz corpora, the end-to-end suite (builds what it needs).
test:
	bash scripts/test.sh

## The statically linked binary deploy/Dockerfile packages: built (x86_64-unknown-linux-gnu,
## crt-static, target/static), checked with file/ldd, and run against the test bed.
test-static:
	cargo test -p paddock-e2e --test deploy -- --ignored --nocapture static_binary_runs

## paddock as operators deploy it (docs/operations.md "The chart on the test bed"): the image
## built from deploy/Dockerfile with buildah, deploy/chart installed with helm on the real node
## (2 replicas, etcd store, admission webhook from the pods), helm upgrade and a pod deleted
## under load, the ServiceAccount token replaced by the kubelet (~20 min; not in `make test`).
test-chart:
	cargo test -p paddock-e2e --test chart -- --ignored --nocapture

## Third-party operators through paddock (docs/operators.md): tests/testbed/operators.sh builds
## cert-manager v1.11.5 and external-dns v0.21.0 from the Go module proxy (cached; ~10 min cold),
## two tenants install them with their own charts on the real node, each doing its job through
## paddock's in-cluster path; checks and figures (~10 min; not in `make test`).
test-operators:
	cargo test -p paddock-e2e --test operators -- --ignored --nocapture

## Only the HA tests (also in `make test`): replicas behind HAProxy under load, replica kill,
## rolling restart, etcd members down; the apiserver frozen, killed, restarted (~5 min).
test-ha:
	bash scripts/test-ha.sh

## k9s (built from the Go module proxy, cached) driven in tmux through its namespace,
## all-namespaces and cluster-scoped views, directly and through paddock (not in `make test`).
test-k9s:
	cargo test -p paddock-e2e --test k9s -- --ignored --nocapture

## Build (or reuse from cache) the control plane binaries.
testbed-build:
	bash tests/testbed/build.sh

## The node-free [sig-api-machinery] [Conformance] tests, directly and through paddock as a
## tenant; report in target/conformance/report.md. Fails if a test passes directly but not
## through paddock.
conformance:
	bash tests/testbed/conformance.sh

## A handful of quick conformance tests (a few minutes), both ways.
conformance-fast:
	bash tests/testbed/conformance.sh --fast --report target/conformance/fast.md

## Every [Conformance] test of the release (all sigs), in parallel: directly (pass list cached),
## then through paddock what passed directly; report in target/conformance/full.md. Hours.
conformance-full:
	bash tests/testbed/conformance.sh --full --report target/conformance/full.md

## A local control plane on loopback in $(TESTBED_DIR) (see docs/testing.md); `. $(TESTBED_DIR)/env`.
TESTBED_DIR ?= .paddock/testbed
testbed-up:
	bash tests/testbed/up.sh $(TESTBED_DIR)
	@echo "control plane up: . $(TESTBED_DIR)/env; kubectl --kubeconfig $(TESTBED_DIR)/admin.kubeconfig get nodes"

testbed-down:
	bash tests/testbed/down.sh $(TESTBED_DIR)

fmt:
	cargo fmt --all

lint:
	cargo clippy --workspace --all-targets -- -D warnings

## The benchmark set (docs/performance.md): release build, a local control plane, the load
## benchmark directly vs through paddock and the scale benchmarks; prints the goals table.
## `make bench ARGS=--quick` tries the harness with small counts.
bench:
	bash scripts/bench.sh $(ARGS)

## The scale benchmark (issue 37; docs/performance.md): its own control plane, 2 replicas,
## 1, 100 and 1,000 tenants; paddock's idle requests, the apiserver's and etcd's CPU, RSS per
## tenant, tenant creation and a platform ServiceAccount's GETs at each (~25 min on 2 cores).
## `make bench-scale ARGS="--scale-sizes 1,10 --scale-idle-seconds 20"` for a short try.
bench-scale:
	bash scripts/bench.sh --only scale $(ARGS)

## Tenant quota overshoot figure (docs/quota.md): 20 runs of 50 concurrent ConfigMap creates
## through three replicas against count/configmaps=20 (~6 min; `make test` runs one burst).
.PHONY: quota-overshoot
quota-overshoot:
	cargo test -p paddock-e2e --test quota -- --ignored --nocapture configmap_burst_overshoot_over_20_runs

# Namespace templates: time for a template change to reach 100 namespaces of 4 tenants
# (docs/templates.md); creates 84 namespaces, a few minutes.
.PHONY: templates-scale
templates-scale:
	cargo test -p paddock-e2e --test templates -- --ignored --nocapture template_change_reaches_100_namespaces
## Several upstream clusters (docs/clusters.md): two control planes, a tenant placed on each,
## isolation, deletion, one cluster's apiserver killed and restarted, then the isolation suite
## against tenants spanning both (clusters_isolation.rs), a tenant imported on the second cluster
## and moved between them under load (clusters_move.rs) (~15 min loaded; not in `make
## test`). `make clusters-scale`: memory and start-up with 2 clusters and 1,000 tenants
## (PADDOCK_SCALE_TENANTS to change; ~20 min).
.PHONY: test-clusters clusters-scale
test-clusters:
	cargo test -p paddock-e2e --test clusters --test clusters_isolation --test clusters_quota --test clusters_join --test clusters_move --test policy -- --ignored --nocapture
clusters-scale:
	cargo test -p paddock-e2e --test clusters_scale -- --ignored --nocapture
