package tenantview

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// requests counts queries by what the view did with them: zone, reverse, other (served),
// nxdomain (a name the view cannot map), refused_<reason>, not_synced.
var requests = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: plugin.Namespace,
	Subsystem: pluginName,
	Name:      "requests_total",
	Help:      "Queries seen by the tenant view, by outcome.",
}, []string{"outcome"})
