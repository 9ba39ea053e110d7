package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// env is what every fixture needs: the clients, the names of this run, and how a tenant's name
// looks upstream.
type env struct {
	o         options
	c         clients // the client under test (protobuf)
	disc      discovery.DiscoveryInterface
	adminDisc discovery.DiscoveryInterface
	admin     dynamic.Interface // the upstream admin (JSON), reads stored objects
	ns, ns2   string            // namespaces of this run, as the client names them
	tag       string            // "cgd<run>" / "cgp<run>": unique part of cluster-scoped names
	node      string            // a node to refer to (shared)
}

func newEnv(o options, cfg, adminCfg *rest.Config) (*env, error) {
	c, err := newClients(cfg)
	if err != nil {
		return nil, err
	}
	adminClients, err := newClients(adminCfg)
	if err != nil {
		return nil, err
	}
	dyn, err := newDynamic(adminCfg)
	if err != nil {
		return nil, err
	}
	tag := "cgd" + o.run
	if o.mode == "paddock" {
		tag = "cgp" + o.run
	}
	return &env{
		o: o, c: c, disc: c.kube.Discovery(), adminDisc: adminClients.kube.Discovery(), admin: dyn,
		ns: tag, ns2: tag + "-peer", tag: tag,
	}, nil
}

func (e *env) paddock() bool { return e.o.mode == "paddock" }

// up maps a tenant-view namespace or cluster-scoped name to its upstream name.
func (e *env) up(name string) string {
	if e.paddock() {
		return e.o.tenant + "-" + name
	}
	return name
}

// name gives a cluster-scoped object of this run a unique name.
func (e *env) name(s string) string { return e.tag + "-" + s }

func (e *env) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, e.o.timeout)
}

// setUp creates the run's two namespaces and picks a node.
func (e *env) setUp(ctx context.Context) error {
	for _, n := range []string{e.ns, e.ns2} {
		c, cancel := e.ctx(ctx)
		_, err := e.c.kube.CoreV1().Namespaces().Create(c, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"clientgo.paddock.io/run": e.tag}},
		}, metav1.CreateOptions{})
		cancel()
		if err != nil {
			return fmt.Errorf("namespace %s: %w", n, err)
		}
	}
	c, cancel := e.ctx(ctx)
	defer cancel()
	nodes, err := e.c.kube.CoreV1().Nodes().List(c, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("no nodes")
	}
	e.node = nodes.Items[0].Name
	// The default ServiceAccount appears a moment after the namespace; pods need it.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c2, cancel2 := e.ctx(ctx)
		_, err = e.c.kube.CoreV1().ServiceAccounts(e.ns).Get(c2, "default", metav1.GetOptions{})
		cancel2()
		if err == nil {
			return nil
		}
		time.Sleep(300 * time.Millisecond)
	}
	return fmt.Errorf("no default ServiceAccount in %s: %w", e.ns, err)
}

// tearDown deletes the run's namespaces (without waiting).
func (e *env) tearDown(ctx context.Context) {
	for _, n := range []string{e.ns, e.ns2} {
		c, cancel := e.ctx(ctx)
		_ = e.c.kube.CoreV1().Namespaces().Delete(c, n, metav1.DeleteOptions{})
		cancel()
	}
}
