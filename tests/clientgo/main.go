// Command clientgo drives every creatable built-in kind of a Kubernetes API server through
// client-go's typed clients with protobuf bodies (what controllers send), against the upstream
// apiserver directly (mode "direct", the admin kubeconfig) or through paddock (mode "paddock", a
// tenant kubeconfig). Per kind it runs create, get, update, list, watch and delete (as far as
// discovery lists those verbs), checks what comes back, and reads the stored object with the
// admin kubeconfig to check the fields paddock translates (namespaces and references prefixed).
// It prints a per-kind, per-verb table and writes a JSON summary; docs/testing.md describes it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"os"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	aggclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggscheme "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/scheme"
)

const protobuf = "application/vnd.kubernetes.protobuf"

// The verbs tried on every kind, in this order of columns.
var allVerbs = []string{"create", "get", "update", "list", "watch", "delete", "stored"}

type options struct {
	kubeconfig, adminKubeconfig, mode, tenant, run, out, only string
	timeout                                                   time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the client under test (admin upstream, or a paddock tenant)")
	flag.StringVar(&o.adminKubeconfig, "admin-kubeconfig", "", "upstream admin kubeconfig, to read stored objects (default: --kubeconfig)")
	flag.StringVar(&o.mode, "mode", "direct", "direct | paddock")
	flag.StringVar(&o.tenant, "tenant", "", "tenant id (mode paddock): upstream names are <tenant>-<name>")
	flag.StringVar(&o.run, "run", "", "short run id that makes names unique (default: from the clock)")
	flag.StringVar(&o.out, "json", "", "write the JSON summary here (default: stdout after the table)")
	flag.StringVar(&o.only, "only", "", "comma-separated group/resource filter (e.g. apps/deployments,/pods)")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Second, "per-call timeout and watch wait")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "clientgo: %v\n", err)
		os.Exit(2)
	}
}

func restConfig(path string, proto bool) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	if proto {
		// What kube-controller-manager and most controllers do: protobuf bodies, protobuf
		// preferred in answers with JSON as the fallback.
		cfg.ContentType = protobuf
		cfg.AcceptContentTypes = protobuf + ",application/json"
	}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "paddock-clientgo-e2e"
	// Deprecation warnings (v1 Endpoints) would drown the table.
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg, nil
}

func run(o options) error {
	if o.mode != "direct" && o.mode != "paddock" {
		return fmt.Errorf("--mode must be direct or paddock")
	}
	if o.mode == "paddock" && o.tenant == "" {
		return fmt.Errorf("--tenant is required with --mode paddock")
	}
	if o.adminKubeconfig == "" {
		o.adminKubeconfig = o.kubeconfig
	}
	if o.run == "" {
		o.run = fmt.Sprintf("%x", time.Now().Unix()%0xfffff)
	}
	cfg, err := restConfig(o.kubeconfig, true)
	if err != nil {
		return err
	}
	adminCfg, err := restConfig(o.adminKubeconfig, false)
	if err != nil {
		return err
	}
	e, err := newEnv(o, cfg, adminCfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	served, err := servedResources(e.adminDisc)
	if err != nil {
		return fmt.Errorf("upstream discovery: %w", err)
	}
	offered, _ := servedResources(e.disc) // partial discovery still lists what it can
	// OpenAPI v2 in protobuf (gnostic's openapi_v2.Document), what kubectl's validation and
	// older clients read.
	schema, err := e.disc.OpenAPISchema()
	if err != nil {
		return fmt.Errorf("OpenAPISchema: %w", err)
	}
	if !hasDefinition(schema.GetDefinitions().GetAdditionalProperties(), "io.k8s.api.core.v1.Pod") {
		return fmt.Errorf("OpenAPISchema: no definition io.k8s.api.core.v1.Pod")
	}
	if err := e.setUp(ctx); err != nil {
		return fmt.Errorf("setting up namespaces: %w", err)
	}
	defer e.tearDown(ctx)

	fixtures := allFixtures()
	byKey := map[string]fixture{}
	for _, f := range fixtures {
		byKey[f.group+"/"+f.resource] = f
	}
	var results []kindResult
	for _, key := range creatableBuiltins(served) {
		if !selected(o.only, key) {
			continue
		}
		f, ok := byKey[key]
		if !ok {
			results = append(results, noFixture(key, served))
			continue
		}
		results = append(results, runFixture(ctx, e, f, served, offered))
	}
	sum := summarize(o, results)
	printTable(os.Stdout, sum)
	return writeJSON(o.out, sum)
}

func selected(only, key string) bool {
	if only == "" {
		return true
	}
	for _, w := range strings.Split(only, ",") {
		if strings.TrimSpace(w) == key {
			return true
		}
	}
	return false
}

// apiResource is one served resource: "group/version/resource" -> verbs, scope, kind.
type apiResource struct {
	group, version, resource, kind string
	namespaced                     bool
	verbs                          []string
}

// servedResources maps "group/resource" -> version -> resource, from legacy discovery (the
// same on both sides; paddock filters it per tenant).
func servedResources(d discovery.DiscoveryInterface) (map[string]map[string]apiResource, error) {
	_, lists, err := d.ServerGroupsAndResources()
	out := map[string]map[string]apiResource{}
	for _, l := range lists {
		gv, perr := parseGV(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			key := gv[0] + "/" + r.Name
			if out[key] == nil {
				out[key] = map[string]apiResource{}
			}
			out[key][gv[1]] = apiResource{gv[0], gv[1], r.Name, r.Kind, r.Namespaced, r.Verbs}
		}
	}
	if err != nil && len(out) == 0 {
		return nil, err
	}
	return out, nil
}

func parseGV(s string) ([2]string, error) {
	gv, err := schema.ParseGroupVersion(s)
	return [2]string{gv.Group, gv.Version}, err
}

// creatableBuiltins lists "group/resource" of every served resource of a built-in group (one
// that client-go's, apiextensions' or the aggregator's scheme knows) whose verbs include create.
func creatableBuiltins(served map[string]map[string]apiResource) []string {
	var keys []string
	for key, versions := range served {
		group := strings.SplitN(key, "/", 2)[0]
		if !scheme.Scheme.IsGroupRegistered(group) && !apiextscheme.Scheme.IsGroupRegistered(group) &&
			!aggscheme.Scheme.IsGroupRegistered(group) {
			continue
		}
		for _, r := range versions {
			if has(r.verbs, "create") {
				keys = append(keys, key)
				break
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// clients of one identity.
type clients struct {
	kube   kubernetes.Interface
	apiext apiextclient.Interface
	agg    aggclient.Interface
}

func newClients(cfg *rest.Config) (clients, error) {
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return clients{}, err
	}
	x, err := apiextclient.NewForConfig(cfg)
	if err != nil {
		return clients{}, err
	}
	a, err := aggclient.NewForConfig(cfg)
	if err != nil {
		return clients{}, err
	}
	return clients{k, x, a}, nil
}

func writeJSON(path string, sum summary) error {
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if path == "" {
		_, err = os.Stdout.Write(append(b, '\n'))
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// newDynamic is the admin's JSON client for stored objects.
func newDynamic(cfg *rest.Config) (dynamic.Interface, error) { return dynamic.NewForConfig(cfg) }

func hasDefinition(defs []*openapi_v2.NamedSchema, name string) bool {
	for _, d := range defs {
		if d.GetName() == name {
			return true
		}
	}
	return false
}
