# paddock: the two commands a newcomer needs are `make demo` and `make test`.
.PHONY: demo test testbed-build conformance testbed-up testbed-down fmt lint

## Build paddock, start a local control plane (unless PADDOCK_UPSTREAM_KUBECONFIG is set),
## start paddock, create tenant demo01 and print the kubectl line to use it.
demo:
	bash scripts/demo.sh

## Everything: fmt, clippy, unit tests, fuzz corpora, the end-to-end suite (builds what it needs).
test:
	bash scripts/test.sh

## Build (or reuse from cache) the control plane binaries.
testbed-build:
	bash tests/testbed/build.sh

fmt:
	cargo fmt --all

lint:
	cargo clippy --workspace --all-targets -- -D warnings
