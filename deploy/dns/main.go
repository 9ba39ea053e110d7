// The tenant DNS of paddock (docs/dns.md): CoreDNS with a small plugin set and one plugin of our
// own, tenantview, which maps a tenant pod's names to the upstream names of its tenant and back.
// Every DNS wire detail stays with miekg/dns and CoreDNS; tenantview only rewrites names.
//
// The plugin chain is the order of dnsserver.Directives (CoreDNS's documented way of building
// with external plugins). tenantview runs before cache, so cache keys are the upstream names
// (web.abcdef-shop.svc.cluster.local): an upstream name means the same to every tenant, and no
// tenant is ever served an answer rewritten for another.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"

	_ "paddock.dev/dns/tenantview"
)

// directives: the plugins this binary knows, in chain order (a subset of CoreDNS's plugin.cfg,
// in its order, with tenantview placed just before cache).
var directives = []string{
	"reload",
	"bind",
	"ready",
	"health",
	"prometheus",
	"errors",
	"log",
	"tenantview",
	"cache",
	"kubernetes",
	"loop",
	"forward",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
