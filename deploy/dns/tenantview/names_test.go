package tenantview

import (
	"strings"
	"testing"
)

const zone = "cluster.local."

func TestToUpstream(t *testing.T) {
	long57 := strings.Repeat("n", 56) // abcdef- + 56 = 63: the longest label
	for _, c := range []struct{ in, want string }{
		{"web.shop.svc.cluster.local.", "web.abcdef-shop.svc.cluster.local."},
		{"WeB.sHoP.SvC.ClUsTeR.LoCaL.", "web.abcdef-shop.svc.cluster.local."},
		{"web.shop.svc.cluster.local", "web.abcdef-shop.svc.cluster.local."},
		{"web-0.web.shop.svc.cluster.local.", "web-0.web.abcdef-shop.svc.cluster.local."},
		{"_http._tcp.web.shop.svc.cluster.local.", "_http._tcp.web.abcdef-shop.svc.cluster.local."},
		{"10-244-0-5.shop.pod.cluster.local.", "10-244-0-5.abcdef-shop.pod.cluster.local."},
		{"shop.svc.cluster.local.", "abcdef-shop.svc.cluster.local."},
		{"shop.pod.cluster.local.", "abcdef-shop.pod.cluster.local."},
		// no namespace label: unchanged
		{"cluster.local.", "cluster.local."},
		{"svc.cluster.local.", "svc.cluster.local."},
		{"pod.cluster.local.", "pod.cluster.local."},
		{"dns-version.cluster.local.", "dns-version.cluster.local."},
		{"ns.dns.cluster.local.", "ns.dns.cluster.local."},
		{"web.shop.cluster.local.", "web.shop.cluster.local."},
		// wildcards stay literal inside the tenant's prefix
		{"web.*.svc.cluster.local.", "web.abcdef-*.svc.cluster.local."},
		{"web.any.svc.cluster.local.", "web.abcdef-any.svc.cluster.local."},
		{"*.*.svc.cluster.local.", "*.abcdef-*.svc.cluster.local."},
		// another tenant's or the platform's namespace named directly: inside the prefix too
		{"web.zyxwvu-shop.svc.cluster.local.", "web.abcdef-zyxwvu-shop.svc.cluster.local."},
		{"kubernetes.default.svc.cluster.local.", "kubernetes.abcdef-default.svc.cluster.local."},
		{"web.abcdef-shop.svc.cluster.local.", "web.abcdef-abcdef-shop.svc.cluster.local."},
		{"x." + long57 + ".svc.cluster.local.", "x.abcdef-" + long57 + ".svc.cluster.local."},
	} {
		got, ok := ToUpstream(c.in, zone, "abcdef")
		if !ok || got != c.want {
			t.Errorf("ToUpstream(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
	for _, in := range []string{
		"x." + long57 + "n.svc.cluster.local.", // 64 characters upstream
		`web.sh\.op.svc.cluster.local.`,
		`web.shop.svc\.x.svc.cluster.local.`,
		`w\065b.shop.svc.cluster.local.`,
	} {
		if got, ok := ToUpstream(in, zone, "abcdef"); ok {
			t.Errorf("ToUpstream(%q) = %q; want NXDOMAIN", in, got)
		}
	}
}

func TestToView(t *testing.T) {
	owns := func(ns string) bool { return ns != "abcdef-system" } // made by the platform, unlabelled
	for _, c := range []struct{ in, want string }{
		{"web.abcdef-shop.svc.cluster.local.", "web.shop.svc.cluster.local."},
		{"web-0.web.abcdef-shop.svc.cluster.local.", "web-0.web.shop.svc.cluster.local."},
		{"_http._tcp.web.abcdef-shop.svc.cluster.local.", "_http._tcp.web.shop.svc.cluster.local."},
		{"10-244-0-5.abcdef-shop.pod.cluster.local.", "10-244-0-5.shop.pod.cluster.local."},
		{"cluster.local.", "cluster.local."},
		{"ns.dns.cluster.local.", "ns.dns.cluster.local."},
		{"example.com.", "example.com."},
		{"web.zyxwvu-shop.svc.example.com.", "web.zyxwvu-shop.svc.example.com."},
		{"in-addr.arpa.", "in-addr.arpa."},
	} {
		got, keep := ToView(c.in, zone, "abcdef", owns)
		if !keep || got != c.want {
			t.Errorf("ToView(%q) = %q, %v; want %q", c.in, got, keep, c.want)
		}
	}
	for _, in := range []string{
		"web.zyxwvu-shop.svc.cluster.local.",
		"kubernetes.default.svc.cluster.local.",
		"kube-dns.kube-system.svc.cluster.local.",
		"web.abcdef-.svc.cluster.local.",
		"web.abcdefshop.svc.cluster.local.",
		"x.abcdef-system.svc.cluster.local.",
		`web.abcdef-sh\.op.svc.cluster.local.`,
	} {
		if got, keep := ToView(in, zone, "abcdef", owns); keep {
			t.Errorf("ToView(%q) = %q; want dropped", in, got)
		}
	}
	// round trip
	up, _ := ToUpstream("_p._tcp.web.shop.svc.cluster.local.", zone, "abcdef")
	if back, keep := ToView(up, zone, "abcdef", nil); !keep || back != "_p._tcp.web.shop.svc.cluster.local." {
		t.Errorf("round trip: %q, %v", back, keep)
	}
}
