package tenantview

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
)

// upstream answers like the kubernetes plugin would for the upstream names of a small cluster:
// tenants abcdef (shop, web) and zyxwvu (shop), and the platform's default namespace.
type upstream struct {
	seen []string
	sent []*dns.Msg
}

func rr(s string) dns.RR {
	r, err := dns.NewRR(s)
	if err != nil {
		panic(err)
	}
	return r
}

var records = map[string][]string{
	"web.abcdef-shop.svc.cluster.local.":           {"web.abcdef-shop.svc.cluster.local. 5 IN A 10.96.0.10"},
	"web.zyxwvu-shop.svc.cluster.local.":           {"web.zyxwvu-shop.svc.cluster.local. 5 IN A 10.96.0.20"},
	"kubernetes.abcdef-default.svc.cluster.local.": nil,
	"web-0.web.abcdef-shop.svc.cluster.local.":     {"web-0.web.abcdef-shop.svc.cluster.local. 5 IN A 10.244.0.7"},
	// an ExternalName Service of abcdef pointing at zyxwvu's Service, chased by the plugin
	"ext.abcdef-shop.svc.cluster.local.": {
		"ext.abcdef-shop.svc.cluster.local. 5 IN CNAME web.zyxwvu-shop.svc.cluster.local.",
		"web.zyxwvu-shop.svc.cluster.local. 5 IN A 10.96.0.20",
	},
	"out.abcdef-shop.svc.cluster.local.": {"out.abcdef-shop.svc.cluster.local. 5 IN CNAME example.com."},
	"10.0.96.10.in-addr.arpa.":           {"10.0.96.10.in-addr.arpa. 5 IN PTR web.abcdef-shop.svc.cluster.local."},
	"20.0.96.10.in-addr.arpa.":           {"20.0.96.10.in-addr.arpa. 5 IN PTR web.zyxwvu-shop.svc.cluster.local."},
	"1.0.96.10.in-addr.arpa.":            {"1.0.96.10.in-addr.arpa. 5 IN PTR kubernetes.default.svc.cluster.local."},
	"8.8.8.8.in-addr.arpa.":              {"8.8.8.8.in-addr.arpa. 5 IN PTR dns.google."},
	"example.com.":                       {"example.com. 5 IN A 192.0.2.1"},
}

func (u *upstream) Name() string { return "upstream" }
func (u *upstream) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	q := r.Question[0]
	u.seen = append(u.seen, q.Name)
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	name := strings.ToLower(q.Name)
	if q.Qtype == dns.TypeSRV && name == "_http._tcp.web.abcdef-shop.svc.cluster.local." {
		m.Answer = []dns.RR{rr(q.Name + " 5 IN SRV 0 100 80 web-0.web.abcdef-shop.svc.cluster.local.")}
		m.Extra = []dns.RR{rr("web-0.web.abcdef-shop.svc.cluster.local. 5 IN A 10.244.0.7")}
	} else if rs, ok := records[name]; ok {
		for _, s := range rs {
			r := rr(s)
			if strings.EqualFold(r.Header().Name, name) {
				r.Header().Name = q.Name // the kubernetes plugin answers with the name as asked
			}
			m.Answer = append(m.Answer, r)
		}
	} else {
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{rr("cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5")}
	}
	u.sent = append(u.sent, m.Copy())
	w.WriteMsg(m)
	return m.Rcode, nil
}

func testView(t *testing.T) (*TenantView, *upstream) {
	pi, ni := stores(t, []*corev1.Pod{
		pod("abcdef-web", "client", []string{"10.244.0.5"}),
		pod("zyxwvu-shop", "client", []string{"10.244.0.6"}),
		pod("default", "platform", []string{"10.244.0.9"}),
	}, []*corev1.Namespace{
		tenantNS("abcdef", "web"), tenantNS("abcdef", "shop"), tenantNS("zyxwvu", "shop"),
		namespace("default", nil), namespace("abcdef-system", nil),
	})
	u := &upstream{}
	return &TenantView{Next: u, Zone: zone, pods: pi, namespaces: ni}, u
}

func ask(t *testing.T, tv *TenantView, from, name string, qtype uint16) (*dns.Msg, int) {
	t.Helper()
	req := new(dns.Msg)
	req.SetQuestion(name, qtype)
	rec := dnstest.NewRecorder(&test.ResponseWriter{RemoteIP: from})
	rc, err := tv.ServeDNS(context.Background(), rec, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !plugin.ClientWrite(rc) {
		return nil, rc // the server writes this rcode
	}
	if rec.Msg == nil {
		t.Fatalf("%s: no answer written (rc %d)", name, rc)
	}
	if len(rec.Msg.Question) != 1 || rec.Msg.Question[0].Name != name || rec.Msg.Question[0].Qtype != qtype {
		t.Errorf("%s: question not restored: %v", name, rec.Msg.Question)
	}
	return rec.Msg, rc
}

func answers(m *dns.Msg) []string {
	var s []string
	for _, r := range m.Answer {
		s = append(s, r.String())
	}
	return s
}

const tenant = "10.244.0.5" // abcdef-web/client

func TestServeForward(t *testing.T) {
	tv, u := testView(t)
	m, _ := ask(t, tv, tenant, "WeB.sHoP.SvC.cluster.local.", dns.TypeA)
	if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 || m.Answer[0].Header().Name != "WeB.sHoP.SvC.cluster.local." ||
		m.Answer[0].(*dns.A).A.String() != "10.96.0.10" {
		t.Errorf("A web.shop: %v", m)
	}
	if u.seen[0] != "web.abcdef-shop.svc.cluster.local." {
		t.Errorf("sent on as %q", u.seen[0])
	}
	m, _ = ask(t, tv, tenant, "web-0.web.shop.svc.cluster.local.", dns.TypeA)
	if got := answers(m); len(got) != 1 || !strings.HasPrefix(got[0], "web-0.web.shop.svc.cluster.local.\t5\tIN\tA\t10.244.0.7") {
		t.Errorf("StatefulSet pod: %v", got)
	}
	m, _ = ask(t, tv, tenant, "_http._tcp.web.shop.svc.cluster.local.", dns.TypeSRV)
	if srv, ok := m.Answer[0].(*dns.SRV); !ok || srv.Target != "web-0.web.shop.svc.cluster.local." ||
		m.Extra[0].Header().Name != "web-0.web.shop.svc.cluster.local." {
		t.Errorf("SRV: %v", m)
	}
	m, _ = ask(t, tv, tenant, "out.shop.svc.cluster.local.", dns.TypeA)
	if m.Rcode != dns.RcodeSuccess || m.Answer[0].(*dns.CNAME).Target != "example.com." {
		t.Errorf("ExternalName out of the zone: %v", m)
	}
	// The upstream answers stay as they were (the cache below keeps their records).
	for _, sent := range u.sent {
		for _, r := range sent.Answer {
			if strings.Contains(r.Header().Name, ".shop.svc") && !strings.Contains(r.Header().Name, "-shop.svc") {
				t.Errorf("upstream answer modified in place: %v", r)
			}
		}
	}
}

func TestServeIsolation(t *testing.T) {
	tv, u := testView(t)
	for _, name := range []string{
		"web.zyxwvu-shop.svc.cluster.local.",    // another tenant's upstream name
		"web.abcdef-shop.svc.cluster.local.",    // the tenant's own upstream name
		"kubernetes.default.svc.cluster.local.", // the platform
		"web.*.svc.cluster.local.",
		"web.any.svc.cluster.local.",
		"x.system.svc.cluster.local.", // abcdef-system: tenant-shaped name, no label
		"ext.shop.svc.cluster.local.", // CNAME into another tenant: dropped, NXDOMAIN
		"x." + strings.Repeat("n", 57) + ".svc.cluster.local.",
	} {
		m, rc := ask(t, tv, tenant, name, dns.TypeA)
		if rc != dns.RcodeNameError || m.Rcode != dns.RcodeNameError || len(m.Answer) != 0 {
			t.Errorf("%s: rc %d, %v; want NXDOMAIN", name, rc, m)
		}
		for _, r := range append(append([]dns.RR{}, m.Ns...), m.Extra...) {
			if strings.Contains(r.String(), "zyxwvu") || strings.Contains(r.String(), "default") {
				t.Errorf("%s: leaked %v", name, r)
			}
		}
	}
	for _, s := range u.seen {
		if !strings.Contains(s, "abcdef-") {
			t.Errorf("sent on a name outside the tenant's prefix: %s", s)
		}
	}
}

func TestServeReverse(t *testing.T) {
	tv, _ := testView(t)
	m, _ := ask(t, tv, tenant, "10.0.96.10.in-addr.arpa.", dns.TypePTR)
	if m.Rcode != dns.RcodeSuccess || m.Answer[0].(*dns.PTR).Ptr != "web.shop.svc.cluster.local." {
		t.Errorf("own PTR: %v", m)
	}
	for _, name := range []string{"20.0.96.10.in-addr.arpa.", "1.0.96.10.in-addr.arpa.", "99.0.96.10.in-addr.arpa."} {
		m, _ := ask(t, tv, tenant, name, dns.TypePTR)
		if m.Rcode != dns.RcodeNameError || len(m.Answer) != 0 || (name != "99.0.96.10.in-addr.arpa." && m.Ns[0].Header().Name != "in-addr.arpa.") {
			t.Errorf("%s: %v; want NXDOMAIN", name, m)
		}
	}
	m, _ = ask(t, tv, tenant, "8.8.8.8.in-addr.arpa.", dns.TypePTR)
	if m.Rcode != dns.RcodeSuccess || m.Answer[0].(*dns.PTR).Ptr != "dns.google." {
		t.Errorf("PTR outside the cluster: %v", m)
	}
}

func TestServeClients(t *testing.T) {
	tv, u := testView(t)
	// the other tenant sees its own shop, never abcdef's
	m, _ := ask(t, tv, "10.244.0.6", "web.shop.svc.cluster.local.", dns.TypeA)
	if m.Answer[0].(*dns.A).A.String() != "10.96.0.20" {
		t.Errorf("zyxwvu's web.shop: %v", m)
	}
	n := len(u.seen)
	for _, from := range []string{"10.244.0.9", "10.244.0.99", "127.0.0.1"} {
		if _, rc := ask(t, tv, from, "web.shop.svc.cluster.local.", dns.TypeA); rc != dns.RcodeRefused {
			t.Errorf("from %s: rc %d; want REFUSED", from, rc)
		}
		if _, rc := ask(t, tv, from, "example.com.", dns.TypeA); rc != dns.RcodeRefused {
			t.Errorf("from %s, other zone: rc %d; want REFUSED", from, rc)
		}
	}
	if _, rc := ask(t, tv, tenant, "cluster.local.", dns.TypeAXFR); rc != dns.RcodeRefused {
		t.Errorf("AXFR: rc %d; want REFUSED", rc)
	}
	if len(u.seen) != n {
		t.Errorf("refused queries were sent on: %v", u.seen[n:])
	}
	m, _ = ask(t, tv, tenant, "Example.COM.", dns.TypeA)
	if m.Rcode != dns.RcodeSuccess || m.Answer[0].Header().Name != "Example.COM." || u.seen[len(u.seen)-1] != "Example.COM." {
		t.Errorf("other zone: %v (sent %v)", m, u.seen)
	}
	tv.synced = func() bool { return false }
	if _, rc := ask(t, tv, tenant, "web.shop.svc.cluster.local.", dns.TypeA); rc != dns.RcodeServerFailure {
		t.Errorf("before the caches are filled: rc %d; want SERVFAIL", rc)
	}
}

// Every RDATA name of every record type passes through the view's mapping.
func TestRewriteAllNameFields(t *testing.T) {
	v := View{Zone: zone, Tenant: "abcdef"}
	req := new(dns.Msg)
	req.SetQuestion("Q.shop.svc.cluster.local.", dns.TypeANY)
	up := "q.abcdef-shop.svc.cluster.local."
	res := new(dns.Msg)
	res.SetReply(req)
	res.Answer = []dns.RR{
		rr(up + " 5 IN MX 10 mx.abcdef-shop.svc.cluster.local."),
		rr(up + " 5 IN NS ns.abcdef-shop.svc.cluster.local."),
		rr(up + " 5 IN DNAME d.abcdef-shop.svc.cluster.local."),
		rr(up + " 5 IN SVCB 1 s.abcdef-shop.svc.cluster.local."),
		rr(up + " 5 IN NAPTR 100 10 \"\" \"\" \"\" n.abcdef-shop.svc.cluster.local."),
		rr(up + " 5 IN MX 10 mx.zyxwvu-shop.svc.cluster.local."),
		rr(up + " 5 IN SVCB 1 s.default.svc.cluster.local."),
		rr(up + " 5 IN TYPE65300 \\# 2 0102"),
	}
	out := Rewrite(res, req, up, "", v)
	want := []string{"mx.shop.svc.cluster.local.", "ns.shop.svc.cluster.local.", "d.shop.svc.cluster.local.",
		"s.shop.svc.cluster.local.", "n.shop.svc.cluster.local."}
	if len(out.Answer) != len(want) {
		t.Fatalf("kept %v", out.Answer)
	}
	for i, r := range out.Answer {
		if r.Header().Name != "Q.shop.svc.cluster.local." || !strings.Contains(r.String(), want[i]) {
			t.Errorf("record %d: %v; want a name %s", i, r, want[i])
		}
	}
}

// A new pod resolves before its address has reached the informer: the query waits for it.
func TestAQueryFromAnUnknownAddressWaitsForThePod(t *testing.T) {
	tv, _ := testView(t)
	tv.UnknownWait = 2 * time.Second
	tv.waiting = make(chan struct{}, maxWaiting)
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = tv.pods.Add(pod("abcdef-web", "late", []string{"10.244.0.7"}))
	}()
	start := time.Now()
	m, rc := ask(t, tv, "10.244.0.7", "web.shop.svc.cluster.local.", dns.TypeA)
	if m == nil || rc != dns.RcodeSuccess {
		t.Fatalf("the late pod's query: rcode %d", rc)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond || waited > time.Second {
		t.Fatalf("waited %v for a pod that appeared after 200ms", waited)
	}
	// An address that stays unknown is refused once the wait is over.
	tv.UnknownWait = 300 * time.Millisecond
	start = time.Now()
	if _, rc := ask(t, tv, "10.244.0.99", "web.shop.svc.cluster.local.", dns.TypeA); rc != dns.RcodeRefused {
		t.Fatalf("unknown address: rcode %d", rc)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("refused after %v, before the wait was over", waited)
	}
	// With every slot taken, an unknown address is refused at once.
	tv.waiting = make(chan struct{})
	start = time.Now()
	if _, rc := ask(t, tv, "10.244.0.98", "web.shop.svc.cluster.local.", dns.TypeA); rc != dns.RcodeRefused {
		t.Fatalf("no slot: rcode %d", rc)
	}
	if waited := time.Since(start); waited > 100*time.Millisecond {
		t.Fatalf("no slot, yet waited %v", waited)
	}
}
