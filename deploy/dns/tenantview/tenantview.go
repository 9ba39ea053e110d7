// Package tenantview is a CoreDNS plugin that serves each tenant pod of a paddock platform its
// tenant's view of the cluster DNS: namespace <ns> of the view is <tid>-<ns> upstream. It only
// maps names; the kubernetes plugin after it answers, cache between them keeps upstream names.
// docs/dns.md describes the design.
package tenantview

import (
	"context"
	"reflect"
	"strings"
	"time"

	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

const pluginName = "tenantview"

var log = clog.NewWithPlugin(pluginName)

// reverseZones: PTR lookups; the kubernetes plugin answers them, the view keeps only PTRs into
// the tenant's own namespaces.
var reverseZones = []string{"in-addr.arpa.", "ip6.arpa."}

// TenantView is the plugin.
type TenantView struct {
	Next plugin.Handler
	Zone string // the cluster zone, lower case, fully qualified (cluster.local.)

	pods       cache.Indexer // pods by address (TrimPod), from the informer
	namespaces cache.Store   // namespaces by name (TrimNamespace)
	synced     func() bool   // both informers have listed once

	// UnknownWait: how long a query from an address no pod has (yet) waits for the informer.
	UnknownWait time.Duration
	waiting     chan struct{} // a slot per waiting query
}

// maxWaiting bounds the queries waiting for an unknown address at once.
const maxWaiting = 256

// defaultUnknownWait: a new pod's address reaches the informer within about a second.
const defaultUnknownWait = 2 * time.Second

// Name implements plugin.Handler.
func (tv *TenantView) Name() string { return pluginName }

// Ready implements the ready plugin's Readiness: the pod and namespace caches are filled.
func (tv *TenantView) Ready() bool { return tv.synced == nil || tv.synced() }

// ServeDNS implements plugin.Handler.
func (tv *TenantView) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	state := request.Request{W: w, Req: r}
	if tv.synced != nil && !tv.synced() {
		requests.WithLabelValues("not_synced").Inc()
		return dns.RcodeServerFailure, nil // transient: the caches are not filled yet
	}
	client, why := tv.identify(ctx, state.IP())
	if why != "" {
		requests.WithLabelValues("refused_" + string(why)).Inc()
		log.Infof("REFUSED %s %s %s: %s", state.IP(), state.Type(), state.Name(), why)
		return dns.RcodeRefused, nil // the server writes the REFUSED answer
	}
	if len(r.Question) != 1 || state.QType() == dns.TypeAXFR || state.QType() == dns.TypeIXFR {
		requests.WithLabelValues("refused_query").Inc()
		return dns.RcodeRefused, nil
	}
	qname := r.Question[0].Name
	v := View{Zone: tv.Zone, Tenant: client.Tenant, Owns: tv.owns(client.Tenant)}
	rw := &viewWriter{ResponseWriter: w, req: r, view: v}
	switch {
	case inZone(qname, tv.Zone):
		up, ok := ToUpstream(qname, tv.Zone, client.Tenant)
		if ns := UpstreamNS(up, tv.Zone); ok && ns != "" && !v.Owns(ns) {
			ok = false // <tid>-<ns> is not (or no longer) a namespace of the tenant
		}
		if !ok {
			requests.WithLabelValues("nxdomain").Inc()
			m := new(dns.Msg)
			m.SetRcode(r, dns.RcodeNameError)
			m.Authoritative = true
			m.Ns = []dns.RR{soa(tv.Zone, tv.Zone)}
			w.WriteMsg(m)
			return dns.RcodeNameError, nil
		}
		requests.WithLabelValues("zone").Inc()
		r2 := r.Copy()
		r2.Question[0].Name = up
		rw.upstream = up
		return rw.result(plugin.NextOrFailure(tv.Name(), tv.Next, ctx, rw, r2))
	case reverseZone(qname) != "":
		requests.WithLabelValues("reverse").Inc()
		rw.upstream = strings.ToLower(qname)
		rw.reverse = reverseZone(qname)
		return rw.result(plugin.NextOrFailure(tv.Name(), tv.Next, ctx, rw, r))
	default:
		// Other zones go on unchanged; the answer still loses any record naming another tenant's
		// (or the platform's) namespace in the cluster zone, should an upstream produce one.
		requests.WithLabelValues("other").Inc()
		rw.upstream = strings.ToLower(qname)
		return rw.result(plugin.NextOrFailure(tv.Name(), tv.Next, ctx, rw, r))
	}
}

// identify is Identify, waiting up to UnknownWait for an address no pod has yet: a new pod's
// containers start, and resolve, before the kubelet's status with the pod's address has
// reached the informer (about a second on the test bed's node). At most maxWaiting queries
// wait at once; beyond that an unknown address is refused at once.
func (tv *TenantView) identify(ctx context.Context, ip string) (Client, Refusal) {
	client, why := Identify(tv.pods, tv.namespaces, ip)
	if (why != RefuseNoPod && why != RefuseNoNS) || tv.UnknownWait <= 0 {
		return client, why
	}
	select {
	case tv.waiting <- struct{}{}:
		defer func() { <-tv.waiting }()
	default:
		return client, why
	}
	deadline := time.NewTimer(tv.UnknownWait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return client, why
		case <-deadline.C:
			return client, why
		case <-tick.C:
			if client, why = Identify(tv.pods, tv.namespaces, ip); why != RefuseNoPod && why != RefuseNoNS {
				requests.WithLabelValues("waited").Inc()
				return client, why
			}
		}
	}
}

func reverseZone(name string) string {
	l := strings.ToLower(dns.Fqdn(name))
	for _, z := range reverseZones {
		if dns.IsSubDomain(z, l) {
			return z
		}
	}
	return ""
}

// soa is the SOA the view puts in the authority section of an NXDOMAIN of its own, shaped as
// the kubernetes plugin's (names without any namespace).
func soa(owner, zone string) dns.RR {
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: owner, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 5},
		Ns:      "ns.dns." + zone,
		Mbox:    "hostmaster." + zone,
		Serial:  1,
		Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: 5,
	}
}

// owns: whether upstream namespace ns is one of tenant tid's (exists with the tenant label).
// A namespace named <tid>-... that the platform made without the label is not the tenant's.
func (tv *TenantView) owns(tid string) func(string) bool {
	return func(ns string) bool {
		o, exists, err := tv.namespaces.GetByKey(ns)
		if err != nil || !exists {
			return false
		}
		n, ok := o.(*corev1.Namespace)
		return ok && n.Labels[TenantLabel] == tid
	}
}

// View is a tenant's view of the cluster zone.
type View struct {
	Zone   string            // lower case, fully qualified
	Tenant string            // the tenant id
	Owns   func(string) bool // whether an upstream namespace <tid>-<ns> is the tenant's (nil: any)
}

// viewWriter rewrites an upstream answer into the tenant's view before it is sent.
type viewWriter struct {
	dns.ResponseWriter
	req      *dns.Msg // the query as the client sent it
	upstream string   // the question's name as sent on (lower case)
	reverse  string   // the reverse zone of a PTR lookup, else ""
	view     View
	written  *dns.Msg // the answer as sent
}

// WriteMsg implements dns.ResponseWriter.
func (w *viewWriter) WriteMsg(res *dns.Msg) error {
	w.written = Rewrite(res, w.req, w.upstream, w.reverse, w.view)
	return w.ResponseWriter.WriteMsg(w.written)
}

// result: the rcode the next plugins returned, or the one of the answer as rewritten and sent
// (the view may have turned it into NXDOMAIN).
func (w *viewWriter) result(rc int, err error) (int, error) {
	if w.written != nil && plugin.ClientWrite(rc) {
		return w.written.Rcode, err
	}
	return rc, err
}

// Write implements dns.ResponseWriter: a raw answer is unpacked and rewritten like any other.
func (w *viewWriter) Write(buf []byte) (int, error) {
	m := new(dns.Msg)
	if err := m.Unpack(buf); err != nil {
		return 0, err
	}
	return len(buf), w.WriteMsg(m)
}

// Rewrite returns the tenant's view of the upstream answer res to the query req (whose question
// went on as upstream): the question exactly as asked (case too: resolvers randomise it), every
// owner name and every name in RDATA mapped back from <tid>-<ns> to <ns>, and every record
// naming a namespace that is not the tenant's dropped. When that leaves the answer section
// empty, the answer is NXDOMAIN. For a reverse lookup (reverse = its zone), only PTRs into the
// tenant's namespaces (or out of the cluster zone) stay, else NXDOMAIN.
// res is not modified: the cache below keeps its records.
func Rewrite(res, req *dns.Msg, upstream, reverse string, v View) *dns.Msg {
	out := res.Copy()
	out.Question = make([]dns.Question, len(req.Question))
	copy(out.Question, req.Question)
	qname := ""
	if len(req.Question) > 0 {
		qname = req.Question[0].Name
	}
	dropped := 0
	filter := func(rrs []dns.RR) []dns.RR {
		kept := rrs[:0]
		for _, rr := range rrs {
			if mapRR(rr, upstream, qname, v) {
				kept = append(kept, rr)
			} else {
				dropped++
			}
		}
		return kept
	}
	out.Answer = filter(out.Answer)
	answerDropped := dropped
	out.Ns = filter(out.Ns)
	out.Extra = filter(out.Extra)
	if answerDropped > 0 && len(out.Answer) == 0 && out.Rcode == dns.RcodeSuccess {
		owner := v.Zone
		if reverse != "" {
			owner = reverse
		}
		out.Rcode = dns.RcodeNameError
		out.Ns = []dns.RR{soa(owner, v.Zone)}
	}
	return out
}

// mapRR maps rr's names into the view in place; false: drop rr. The owner name that is the
// question as sent on becomes the question as asked; every RDATA field miekg/dns tags as a
// domain name (CNAME, DNAME, NS, PTR, MX, SRV and SVCB targets, SOA names, RRSIG signers, ...)
// is mapped like an owner name, so no record type can carry another tenant's name through.
// Records of unknown types (RFC 3597: opaque RDATA) are dropped.
func mapRR(rr dns.RR, upstream, qname string, v View) bool {
	h := rr.Header()
	if h.Rrtype == dns.TypeOPT {
		return true
	}
	if _, opaque := rr.(*dns.RFC3597); opaque {
		return false
	}
	if strings.EqualFold(h.Name, upstream) {
		h.Name = qname
	} else if name, keep := ToView(h.Name, v.Zone, v.Tenant, v.Owns); keep {
		h.Name = name
	} else {
		return false
	}
	rv := reflect.ValueOf(rr)
	if rv.Kind() != reflect.Ptr || rv.Elem().Kind() != reflect.Struct {
		return false
	}
	rv = rv.Elem()
	t := rv.Type()
	for i := 0; i < t.NumField(); i++ {
		switch t.Field(i).Tag.Get("dns") {
		case "domain-name", "cdomain-name":
		default:
			continue
		}
		f := rv.Field(i)
		switch {
		case f.Kind() == reflect.String:
			name, keep := ToView(f.String(), v.Zone, v.Tenant, v.Owns)
			if !keep {
				return false
			}
			f.SetString(name)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			for j := 0; j < f.Len(); j++ {
				name, keep := ToView(f.Index(j).String(), v.Zone, v.Tenant, v.Owns)
				if !keep {
					return false
				}
				f.Index(j).SetString(name)
			}
		default:
			return false // a name field of a shape not known here: do not pass it on
		}
	}
	return true
}
