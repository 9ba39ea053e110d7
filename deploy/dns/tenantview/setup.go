package tenantview

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func init() { plugin.Register(pluginName, setup) }

// config is the Corefile stanza:
//
//	tenantview [ZONE] {
//	    kubeconfig PATH [CONTEXT]   # else the in-cluster configuration
//	    unknown_wait DURATION       # how long a query from an address no pod has yet waits
//	                                # for the pod informer (default 2s, at most 4s; 0: none)
//	}
//
// ZONE is the cluster zone (default cluster.local).
type config struct {
	zone        string
	kubeconfig  string
	context     string
	unknownWait time.Duration
}

func parse(c *caddy.Controller) (config, error) {
	cfg := config{zone: "cluster.local.", unknownWait: defaultUnknownWait}
	i := 0
	for c.Next() {
		if i > 0 {
			return cfg, plugin.ErrOnce
		}
		i++
		args := c.RemainingArgs()
		switch len(args) {
		case 0:
		case 1:
			cfg.zone = strings.ToLower(dns.Fqdn(args[0]))
			if _, ok := dns.IsDomainName(cfg.zone); !ok || cfg.zone == "." {
				return cfg, c.Errf("invalid zone %q", args[0])
			}
		default:
			return cfg, c.ArgErr()
		}
		for c.NextBlock() {
			switch c.Val() {
			case "kubeconfig":
				a := c.RemainingArgs()
				if len(a) < 1 || len(a) > 2 {
					return cfg, c.ArgErr()
				}
				cfg.kubeconfig = a[0]
				if len(a) == 2 {
					cfg.context = a[1]
				}
			case "unknown_wait":
				a := c.RemainingArgs()
				if len(a) != 1 {
					return cfg, c.ArgErr()
				}
				d, err := time.ParseDuration(a[0])
				if err != nil || d < 0 || d > 4*time.Second {
					return cfg, c.Errf("unknown_wait %q: a duration from 0s to 4s", a[0])
				}
				cfg.unknownWait = d
			default:
				return cfg, c.Errf("unknown property %q", c.Val())
			}
		}
	}
	return cfg, nil
}

func setup(c *caddy.Controller) error {
	cfg, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	rc, err := restConfig(cfg)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	tv := &TenantView{Zone: cfg.zone, UnknownWait: cfg.unknownWait, waiting: make(chan struct{}, maxWaiting)}
	podInf, nsInf := informers(client)
	tv.pods = podInf.GetIndexer()
	tv.namespaces = nsInf.GetStore()
	tv.synced = func() bool { return podInf.HasSynced() && nsInf.HasSynced() }

	stop := make(chan struct{})
	c.OnStartup(func() error {
		go podInf.Run(stop)
		go nsInf.Run(stop)
		// Wait a little for the first lists (as the kubernetes plugin does), so that the first
		// queries are answered; until then the view answers SERVFAIL and ready says not ready.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if !cache.WaitForCacheSync(ctx.Done(), podInf.HasSynced, nsInf.HasSynced) {
			log.Warning("pods and namespaces not listed yet; answering SERVFAIL until they are")
		}
		return nil
	})
	c.OnShutdown(func() error { close(stop); return nil })

	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		tv.Next = next
		return tv
	})
	return nil
}

func restConfig(cfg config) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if cfg.kubeconfig != "" {
		rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: cfg.context},
		).ClientConfig()
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.UserAgent = "paddock-tenant-dns/tenantview"
	return rc, nil
}

// informers: every pod (trimmed to the identity's fields, indexed by address) and every
// namespace (name and labels). No resync: the watch keeps them current.
func informers(client kubernetes.Interface) (cache.SharedIndexInformer, cache.SharedIndexInformer) {
	pods := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Pods(metav1.NamespaceAll).List(context.Background(), o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Pods(metav1.NamespaceAll).Watch(context.Background(), o)
		},
	}, &corev1.Pod{}, 0, PodIndexers())
	_ = pods.SetTransform(TrimPod)
	nss := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Namespaces().List(context.Background(), o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Namespaces().Watch(context.Background(), o)
		},
	}, &corev1.Namespace{}, 0, cache.Indexers{})
	_ = nss.SetTransform(TrimNamespace)
	return pods, nss
}
