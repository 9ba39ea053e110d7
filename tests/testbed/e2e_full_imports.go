// paddock: the extra test sources of the wide conformance binary (build.sh --e2e-full): every
// package of k8s.io/kubernetes@v1.33.13 test/e2e that holds a [Conformance] test (see
// test/conformance/testdata/conformance.yaml), added to e2e_main_test.go's api-machinery import.
// Packages without conformance tests (autoscaling, cloud, dra, lifecycle, storage/csimock,
// storage/external, windows) are left out to keep the build smaller.

package e2e

import (
	_ "k8s.io/kubernetes/test/e2e/apps"
	_ "k8s.io/kubernetes/test/e2e/architecture"
	_ "k8s.io/kubernetes/test/e2e/auth"
	_ "k8s.io/kubernetes/test/e2e/common"
	_ "k8s.io/kubernetes/test/e2e/instrumentation"
	_ "k8s.io/kubernetes/test/e2e/kubectl"
	_ "k8s.io/kubernetes/test/e2e/network"
	_ "k8s.io/kubernetes/test/e2e/node"
	_ "k8s.io/kubernetes/test/e2e/scheduling"
	_ "k8s.io/kubernetes/test/e2e/storage"
)
