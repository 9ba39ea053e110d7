package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// xform says how paddock translates a field on the way up (the tenant always reads back what it
// wrote); see docs/translation.md.
type xform int

const (
	plain       xform = iota // unchanged
	nsName                   // a namespace: <tenant>-<ns>
	clusterName              // a tenant-owned cluster-scoped name: <tenant>-<name>
	crdGroup                 // a tenant API group: <tenant>-<group>
	userName                 // an RBAC user or group: paddock:<tenant>:<name>
	selector                 // a LabelSelector: namespace names mapped, the tenant term ANDed
)

// check is one field of an object (a JSON pointer, RFC 6901) and the value the client wrote.
type check struct {
	path string
	val  string
	x    xform
	// where: 0 everywhere; viewOnly: what the client reads (and the stored object directly),
	// where the stored object has another shape through paddock; upOnly: the stored object
	// through paddock only, val being the literal upstream value.
	where int
}

const (
	viewOnly = 1
	upOnly   = 2
)

func chk(path, val string, x xform) check { return check{path: path, val: val, x: x} }

// view is a check of the client's view only (the upstream shape differs).
func view(path, val string) check { return check{path: path, val: val, where: viewOnly} }

// stored is a check of the object stored through paddock only, with its literal value.
func stored(path, val string) check { return check{path: path, val: val, where: upOnly} }

// toMap turns a typed object into its JSON form.
func toMap(o runtime.Object) (map[string]any, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// pointer evaluates a JSON pointer.
func pointer(doc any, path string) (any, error) {
	cur := doc
	for _, raw := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		tok := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, fmt.Errorf("%s: no %q", path, tok)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, fmt.Errorf("%s: no index %q", path, tok)
			}
			cur = v[i]
		default:
			return nil, fmt.Errorf("%s: %q is not inside an object or a list", path, tok)
		}
	}
	return cur, nil
}

// verify runs the checks against an object. upstream says whether it is the stored object read
// by the admin (translated in mode paddock) or the client's own view.
func verify(e *env, doc map[string]any, cs []check, upstream bool) error {
	var problems []string
	translated := upstream && e.paddock()
	for _, c := range cs {
		if (c.where == viewOnly && translated) || (c.where == upOnly && !translated) {
			continue
		}
		got, err := pointer(doc, c.path)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if c.x == selector {
			if p := verifySelector(e, got, c, translated); p != "" {
				problems = append(problems, p)
			}
			continue
		}
		want := c.val
		if translated {
			switch c.x {
			case nsName, clusterName, crdGroup:
				want = e.o.tenant + "-" + c.val
			case userName:
				want = "paddock:" + e.o.tenant + ":" + c.val
			}
		}
		if s, _ := got.(string); s != want {
			problems = append(problems, fmt.Sprintf("%s = %v, want %q", c.path, got, want))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

const tenantLabel = "paddock.io/tenant"

// verifySelector: upstream a tenant's selector names upstream namespaces and is ANDed with the
// tenant's label; the tenant sees neither.
func verifySelector(e *env, got any, c check, translated bool) string {
	b, _ := json.Marshal(got)
	s := string(b)
	want := c.val
	if translated {
		if c.val != "" {
			want = e.o.tenant + "-" + c.val
		}
		if !strings.Contains(s, tenantLabel) || !strings.Contains(s, `"`+e.o.tenant+`"`) {
			return fmt.Sprintf("%s = %s: no %s term for %s", c.path, s, tenantLabel, e.o.tenant)
		}
	} else if strings.Contains(s, tenantLabel) {
		return fmt.Sprintf("%s = %s: the tenant term is visible", c.path, s)
	}
	if want != "" && !strings.Contains(s, `"`+want+`"`) {
		return fmt.Sprintf("%s = %s, want it to name %q", c.path, s, want)
	}
	return ""
}
