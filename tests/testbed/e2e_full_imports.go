// paddock: the extra test sources of the wide conformance binary (build.sh --e2e-full): every
// package of k8s.io/kubernetes@v1.33.13 test/e2e that holds a [Conformance] test (see
// test/conformance/testdata/conformance.yaml), added to e2e_main_test.go's api-machinery import.
// Packages without conformance tests (autoscaling, cloud, dra, lifecycle, storage/csimock,
// storage/external, windows) are left out to keep the build smaller.

package e2e

import (
	"os"
	"reflect"
	"time"
	"unsafe"

	"k8s.io/kubernetes/test/e2e/framework"

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

// PADDOCK_E2E_POD_START (a Go duration, e.g. 90s), set by conformance.sh --full: how long the
// framework waits for a pod to start or finish (framework.TimeoutContext PodStart, default
// 5 min; PodStartShort the same, PodStartSlow twice). kwok runs no containers, so every test
// that waits for a container's output or exit waits the whole timeout and fails, directly and
// through paddock alike; at 5 min each the whole suite takes many hours on this test bed.
// Tests that pass here see their pods start within seconds. The framework has no flag for it
// and keeps the defaults in an unexported field, hence reflect and unsafe.
func init() {
	d, err := time.ParseDuration(os.Getenv("PADDOCK_E2E_POD_START"))
	if err != nil || d <= 0 {
		return
	}
	f := reflect.ValueOf(&framework.TestContext).Elem().FieldByName("timeouts")
	if !f.IsValid() || f.Type() != reflect.TypeOf(framework.TimeoutContext{}) {
		panic("PADDOCK_E2E_POD_START: framework.TestContext.timeouts not found")
	}
	t := (*framework.TimeoutContext)(unsafe.Pointer(f.UnsafeAddr()))
	t.PodStart, t.PodStartShort, t.PodStartSlow = d, d, 2*d
}
