package tenantview

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TenantLabel is the label paddock puts on every upstream namespace of a tenant (tenants cannot
// write it): its value is the tenant id, and the namespace is named <tid>-<viewns>.
const TenantLabel = "paddock.io/tenant"

var tenantID = regexp.MustCompile(`^[a-z][a-z0-9]{5}$`)

const ipIndex = "ip"

// Client is who sent a query: a live tenant pod, seen in its tenant's view.
type Client struct {
	Tenant    string // the tenant id, e.g. abcdef
	Namespace string // the pod's namespace in the tenant's view, e.g. web (upstream abcdef-web)
	Pod       string // the pod's upstream namespace/name (for logs)
}

// Refusal says why a client is not served (a metric label and a log line).
type Refusal string

const (
	RefuseNoPod      Refusal = "no_pod"       // no live pod has the address
	RefuseAmbiguous  Refusal = "ambiguous"    // more than one live pod has it
	RefuseNoNS       Refusal = "no_namespace" // the pod's namespace is not (yet) known
	RefuseNotTenant  Refusal = "not_tenant"   // the namespace carries no valid tenant label
	RefuseNameTenant Refusal = "name_mismatch"
)

// TrimPod keeps of a Pod only what the identity needs (the informer's transform): namespace,
// name, the pod's addresses, phase, hostNetwork and deletionTimestamp.
func TrimPod(obj interface{}) (interface{}, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a tombstone: the store keys it by its key only
	}
	t := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID,
			ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec:   corev1.PodSpec{HostNetwork: p.Spec.HostNetwork},
		Status: corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, PodIPs: p.Status.PodIPs},
	}
	return t, nil
}

// TrimNamespace keeps of a Namespace its name and labels.
func TrimNamespace(obj interface{}) (interface{}, error) {
	n, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels,
	}}, nil
}

// podIPs indexes a pod by each of its addresses.
func podIPs(obj interface{}) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var ips []string
	for _, a := range p.Status.PodIPs {
		if a.IP != "" {
			ips = append(ips, a.IP)
		}
	}
	if len(ips) == 0 && p.Status.PodIP != "" {
		ips = append(ips, p.Status.PodIP)
	}
	return ips, nil
}

// PodIndexers: the pod store's index by address.
func PodIndexers() cache.Indexers { return cache.Indexers{ipIndex: podIPs} }

// live: the pod may hold its address now. A finished pod (Succeeded, Failed) has given its
// address back and another pod may have it; a hostNetwork pod shares the node's address.
func live(p *corev1.Pod) bool {
	return !p.Spec.HostNetwork && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// Identify finds the client of address ip in the stores (the informers' caches): the one live
// pod having that address, whose namespace carries the tenant label <tid> and is named
// <tid>-<viewns>. Anything else is refused.
//
// Two live pods with one address: when exactly one of them is not being deleted, the other has
// already released it (IPAM hands out an address only once it is free; a pod being deleted keeps
// its object until its containers are gone), so the one not being deleted is the client.
// Otherwise the address is ambiguous and refused.
func Identify(pods cache.Indexer, namespaces cache.Store, ip string) (Client, Refusal) {
	objs, err := pods.ByIndex(ipIndex, ip)
	if err != nil {
		return Client{}, RefuseNoPod
	}
	var cands, current []*corev1.Pod
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok || !live(p) {
			continue
		}
		cands = append(cands, p)
		if p.DeletionTimestamp == nil {
			current = append(current, p)
		}
	}
	if len(cands) > 1 && len(current) == 1 {
		cands = current
	}
	switch {
	case len(cands) == 0:
		return Client{}, RefuseNoPod
	case len(cands) > 1:
		return Client{}, RefuseAmbiguous
	}
	p := cands[0]
	o, exists, err := namespaces.GetByKey(p.Namespace)
	if err != nil || !exists {
		return Client{}, RefuseNoNS
	}
	ns, ok := o.(*corev1.Namespace)
	if !ok {
		return Client{}, RefuseNoNS
	}
	tid := ns.Labels[TenantLabel]
	if !tenantID.MatchString(tid) {
		return Client{}, RefuseNotTenant
	}
	view, found := strings.CutPrefix(ns.Name, tid+"-")
	if !found || view == "" {
		return Client{}, RefuseNameTenant
	}
	return Client{Tenant: tid, Namespace: view, Pod: fmt.Sprintf("%s/%s", p.Namespace, p.Name)}, ""
}
