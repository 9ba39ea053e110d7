package tenantview

import (
	"strings"

	"github.com/miekg/dns"
)

// A name in the cluster zone is <labels...>.<ns>.svc.<zone> or <labels...>.<ns>.pod.<zone>
// (the kubernetes plugin's parseRequest reads it the same way, from the right): the namespace
// label is the one just before the svc or pod label under the zone. Names with no namespace
// label (the zone, svc.<zone>, pod.<zone>, dns-version.<zone>, ns.dns.<zone>, anything whose
// label under the zone is neither svc nor pod) name no tenant object and pass unchanged.

// maxLabel is the longest DNS label (RFC 1035).
const maxLabel = 63

// inZone reports whether name (any case) is zone or below it; zone is lower case, fully qualified.
func inZone(name, zone string) bool {
	return dns.IsSubDomain(zone, strings.ToLower(dns.Fqdn(name)))
}

// nsLabel splits a name in zone into its labels under the zone (lower case) and returns the
// index of the namespace label, or -1 when the name has none. ok is false for a name the tenant
// view never serves: one with an escaped character (a kubernetes name has none, and the view
// must split a name exactly as the kubernetes plugin does).
func nsLabel(name, zone string) (labels []string, idx int, ok bool) {
	lname := strings.ToLower(dns.Fqdn(name))
	if strings.ContainsRune(lname, '\\') {
		return nil, -1, false
	}
	base := strings.TrimSuffix(strings.TrimSuffix(lname, zone), ".")
	if base == "" {
		return nil, -1, true
	}
	labels = strings.Split(base, ".")
	n := len(labels)
	if n < 2 || (labels[n-1] != "svc" && labels[n-1] != "pod") {
		return labels, -1, true
	}
	return labels, n - 2, true
}

func join(labels []string, zone string) string {
	if len(labels) == 0 {
		return zone
	}
	return strings.Join(labels, ".") + "." + zone
}

// ToUpstream maps a query name of tenant tid in zone to the upstream name: the namespace label
// <ns> becomes <tid>-<ns>. ok is false when the name cannot name anything of the tenant
// (answer NXDOMAIN): the upstream label would exceed 63 characters, or the name holds an escape.
// A wildcard label stays literal: "*" becomes "<tid>-*", which names no namespace (namespace
// names are DNS-1123 labels), and the kubernetes plugin matches namespaces exactly.
// The result is lower case (cache keys and the kubernetes plugin ignore case anyway).
func ToUpstream(name, zone, tid string) (string, bool) {
	labels, idx, ok := nsLabel(name, zone)
	if !ok {
		return "", false
	}
	if idx < 0 {
		return join(labels, zone), true
	}
	ns := tid + "-" + labels[idx]
	if len(ns) > maxLabel {
		return "", false
	}
	labels[idx] = ns
	return join(labels, zone), true
}

// UpstreamNS returns the upstream namespace a name in zone names, or "" when it names none.
func UpstreamNS(name, zone string) string {
	labels, idx, ok := nsLabel(name, zone)
	if !ok || idx < 0 {
		return ""
	}
	return labels[idx]
}

// ToView maps an upstream name in zone back to tenant tid's view: <tid>-<ns> becomes <ns>.
// keep is false when the name belongs to another tenant or to the platform (a namespace label
// without the prefix <tid>-, or one that owns, when given, says is not the tenant's), or holds
// an escape: the record naming it must be dropped. Names outside the zone are returned unchanged.
func ToView(name, zone, tid string, owns func(upstreamNS string) bool) (string, bool) {
	if !inZone(name, zone) {
		return name, true
	}
	labels, idx, ok := nsLabel(name, zone)
	if !ok {
		return "", false
	}
	if idx < 0 {
		return join(labels, zone), true
	}
	prefix := tid + "-"
	if !strings.HasPrefix(labels[idx], prefix) || len(labels[idx]) == len(prefix) {
		return "", false
	}
	if owns != nil && !owns(labels[idx]) {
		return "", false
	}
	labels[idx] = labels[idx][len(prefix):]
	return join(labels, zone), true
}
