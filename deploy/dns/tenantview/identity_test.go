package tenantview

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

type podOpt func(*corev1.Pod)

func phase(p corev1.PodPhase) podOpt { return func(x *corev1.Pod) { x.Status.Phase = p } }
func hostNet() podOpt                { return func(x *corev1.Pod) { x.Spec.HostNetwork = true } }
func deleting() podOpt {
	return func(x *corev1.Pod) { now := metav1.NewTime(time.Now()); x.DeletionTimestamp = &now }
}

func pod(ns, name string, ips []string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, ip := range ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(ips) > 0 {
		p.Status.PodIP = ips[0]
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
		Annotations: map[string]string{"big": "dropped"}}}
}

func stores(t *testing.T, pods []*corev1.Pod, nss []*corev1.Namespace) (cache.Indexer, cache.Store) {
	t.Helper()
	pi := cache.NewIndexer(cache.MetaNamespaceKeyFunc, PodIndexers())
	for _, p := range pods {
		o, _ := TrimPod(p)
		if err := pi.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	ni := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, n := range nss {
		o, _ := TrimNamespace(n)
		if err := ni.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return pi, ni
}

func tenantNS(tid, view string) *corev1.Namespace {
	return namespace(tid+"-"+view, map[string]string{TenantLabel: tid})
}

func TestIdentify(t *testing.T) {
	nss := []*corev1.Namespace{
		tenantNS("abcdef", "web"), tenantNS("zyxwvu", "web"),
		namespace("kube-system", nil),
		namespace("abcdef-sys", nil),                                     // named like a tenant's, no label
		namespace("other-web", map[string]string{TenantLabel: "abcdef"}), // label, name not <tid>-
		namespace("bad-web", map[string]string{TenantLabel: "Bad"}),
		namespace("abcdef-", map[string]string{TenantLabel: "abcdef"}),
	}
	cases := []struct {
		name string
		pods []*corev1.Pod
		ip   string
		want Client
		why  Refusal
	}{
		{"tenant pod", []*corev1.Pod{pod("abcdef-web", "a", []string{"10.244.0.5"})}, "10.244.0.5",
			Client{Tenant: "abcdef", Namespace: "web", Pod: "abcdef-web/a"}, ""},
		{"second address (dual stack)", []*corev1.Pod{pod("abcdef-web", "a", []string{"10.244.0.5", "fd00::5"})}, "fd00::5",
			Client{Tenant: "abcdef", Namespace: "web", Pod: "abcdef-web/a"}, ""},
		{"pending pod with its address", []*corev1.Pod{pod("abcdef-web", "a", []string{"10.244.0.5"}, phase(corev1.PodPending))}, "10.244.0.5",
			Client{Tenant: "abcdef", Namespace: "web", Pod: "abcdef-web/a"}, ""},
		{"unknown address", []*corev1.Pod{pod("abcdef-web", "a", []string{"10.244.0.5"})}, "10.244.0.6", Client{}, RefuseNoPod},
		{"finished pod only (its address is free)", []*corev1.Pod{pod("abcdef-web", "a", []string{"10.244.0.5"}, phase(corev1.PodSucceeded))}, "10.244.0.5", Client{}, RefuseNoPod},
		{"failed pod only", []*corev1.Pod{pod("abcdef-web", "a", []string{"10.244.0.5"}, phase(corev1.PodFailed))}, "10.244.0.5", Client{}, RefuseNoPod},
		{"finished pod's address reused by another tenant", []*corev1.Pod{
			pod("abcdef-web", "old", []string{"10.244.0.5"}, phase(corev1.PodSucceeded)),
			pod("zyxwvu-web", "new", []string{"10.244.0.5"}),
		}, "10.244.0.5", Client{Tenant: "zyxwvu", Namespace: "web", Pod: "zyxwvu-web/new"}, ""},
		{"finished pod's address reused by a platform pod", []*corev1.Pod{
			pod("abcdef-web", "old", []string{"10.244.0.5"}, phase(corev1.PodFailed)),
			pod("kube-system", "new", []string{"10.244.0.5"}),
		}, "10.244.0.5", Client{}, RefuseNotTenant},
		{"hostNetwork pod in a tenant namespace", []*corev1.Pod{pod("abcdef-web", "h", []string{"10.243.0.2"}, hostNet())}, "10.243.0.2", Client{}, RefuseNoPod},
		{"two live pods, one address", []*corev1.Pod{
			pod("abcdef-web", "a", []string{"10.244.0.5"}), pod("zyxwvu-web", "b", []string{"10.244.0.5"}),
		}, "10.244.0.5", Client{}, RefuseAmbiguous},
		{"two live pods of one tenant, one address", []*corev1.Pod{
			pod("abcdef-web", "a", []string{"10.244.0.5"}), pod("abcdef-web", "b", []string{"10.244.0.5"}),
		}, "10.244.0.5", Client{}, RefuseAmbiguous},
		{"a pod being deleted and its address's new owner", []*corev1.Pod{
			pod("abcdef-web", "old", []string{"10.244.0.5"}, deleting()), pod("zyxwvu-web", "new", []string{"10.244.0.5"}),
		}, "10.244.0.5", Client{Tenant: "zyxwvu", Namespace: "web", Pod: "zyxwvu-web/new"}, ""},
		{"a pod being deleted alone keeps its address", []*corev1.Pod{
			pod("abcdef-web", "old", []string{"10.244.0.5"}, deleting()),
		}, "10.244.0.5", Client{Tenant: "abcdef", Namespace: "web", Pod: "abcdef-web/old"}, ""},
		{"two pods being deleted", []*corev1.Pod{
			pod("abcdef-web", "a", []string{"10.244.0.5"}, deleting()), pod("zyxwvu-web", "b", []string{"10.244.0.5"}, deleting()),
		}, "10.244.0.5", Client{}, RefuseAmbiguous},
		{"platform namespace", []*corev1.Pod{pod("kube-system", "a", []string{"10.244.0.5"})}, "10.244.0.5", Client{}, RefuseNotTenant},
		{"tenant-like name without the label", []*corev1.Pod{pod("abcdef-sys", "a", []string{"10.244.0.5"})}, "10.244.0.5", Client{}, RefuseNotTenant},
		{"label value not a tenant id", []*corev1.Pod{pod("bad-web", "a", []string{"10.244.0.5"})}, "10.244.0.5", Client{}, RefuseNotTenant},
		{"label, but the name is not <tid>-<ns>", []*corev1.Pod{pod("other-web", "a", []string{"10.244.0.5"})}, "10.244.0.5", Client{}, RefuseNameTenant},
		{"label, empty view namespace", []*corev1.Pod{pod("abcdef-", "a", []string{"10.244.0.5"})}, "10.244.0.5", Client{}, RefuseNameTenant},
		{"namespace not known", []*corev1.Pod{pod("qqqqqq-web", "a", []string{"10.244.0.5"})}, "10.244.0.5", Client{}, RefuseNoNS},
		{"pod without an address", []*corev1.Pod{pod("abcdef-web", "a", nil)}, "", Client{}, RefuseNoPod},
	}
	for _, c := range cases {
		pi, ni := stores(t, c.pods, nss)
		got, why := Identify(pi, ni, c.ip)
		if got != c.want || why != c.why {
			t.Errorf("%s: Identify(%s) = %+v, %q; want %+v, %q", c.name, c.ip, got, why, c.want, c.why)
		}
	}
}

func TestTrim(t *testing.T) {
	p := pod("abcdef-web", "a", []string{"10.244.0.5"}, deleting())
	o, _ := TrimPod(p)
	tp := o.(*corev1.Pod)
	if len(tp.Spec.Containers) != 0 || tp.Labels != nil || tp.Status.PodIP != "10.244.0.5" ||
		tp.DeletionTimestamp == nil || tp.Name != "a" || tp.Namespace != "abcdef-web" || tp.Status.Phase != corev1.PodRunning {
		t.Errorf("TrimPod kept the wrong fields: %+v", tp)
	}
	o, _ = TrimNamespace(namespace("abcdef-web", map[string]string{TenantLabel: "abcdef"}))
	tn := o.(*corev1.Namespace)
	if tn.Annotations != nil || tn.Labels[TenantLabel] != "abcdef" || tn.Name != "abcdef-web" {
		t.Errorf("TrimNamespace kept the wrong fields: %+v", tn)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "x/y"}
	if o, _ := TrimPod(tomb); o != tomb {
		t.Errorf("TrimPod changed a tombstone")
	}
}
