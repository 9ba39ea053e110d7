package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Outcomes of one verb on one kind.
const (
	ok      = "ok"
	fail    = "fail"
	policy  = "policy"  // refused with a Status, and the client's discovery does not offer the verb
	blocked = "blocked" // not tried: create failed
	na      = "n/a"     // discovery does not list the verb upstream
)

type cell struct {
	Outcome string `json:"outcome"`
	Code    int32  `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

type kindResult struct {
	Key        string          `json:"key"` // group/resource
	Version    string          `json:"version"`
	Kind       string          `json:"kind"`
	Namespaced bool            `json:"namespaced"`
	Offered    []string        `json:"offered"` // verbs the client's discovery lists
	Cells      map[string]cell `json:"cells"`
}

type fixture struct {
	group, version, resource string
	make                     func(e *env) subject
}

func noFixture(key string, served map[string]map[string]apiResource) kindResult {
	r := kindResult{Key: key, Cells: map[string]cell{}}
	for v, a := range served[key] {
		r.Version, r.Kind, r.Namespaced = v, a.kind, a.namespaced
	}
	r.Cells["create"] = cell{Outcome: fail, Message: "no fixture in tests/clientgo for this creatable kind: add one"}
	return r
}

// runner holds one kind's run.
type runner struct {
	e       *env
	res     apiResource
	offered []string
	out     kindResult
}

func (r *runner) set(verb string, err error) cell {
	c := classify(r.e, has(r.offered, verb), err)
	r.out.Cells[verb] = c
	return c
}

// classify: success, or a refusal by policy, or a failure. A refusal by policy is a 403/404/405
// Status for a verb the client's discovery does not offer, or a 403 whose message names
// paddock's policy: discovery lists the kinds refused to tenants with their verbs, as a cluster
// lists every kind to every user (docs/translation.md, "Discovery").
func classify(e *env, offered bool, err error) cell {
	var ce checkError
	switch {
	case err == nil && e.paddock() && !offered:
		return cell{Outcome: fail, Message: "allowed although the tenant's discovery does not offer this verb"}
	case err == nil:
		return cell{Outcome: ok}
	case errors.As(err, &ce):
		return cell{Outcome: fail, Message: "wrong answer: " + ce.Error()}
	}
	code, reason, msg := statusOf(err)
	if e.paddock() && (code == 403 || code == 404 || code == 405) && (!offered || namesPolicy(code, msg)) {
		return cell{Outcome: policy, Code: code, Reason: reason, Message: msg}
	}
	return cell{Outcome: fail, Code: code, Reason: reason, Message: msg}
}

func runFixture(ctx context.Context, e *env, f fixture, served, offered map[string]map[string]apiResource) kindResult {
	key := f.group + "/" + f.resource
	res, found := served[key][f.version]
	r := &runner{e: e, res: res, out: kindResult{Key: key, Version: f.version, Cells: map[string]cell{}}}
	if !found {
		var vs []string
		for v := range served[key] {
			vs = append(vs, v)
		}
		r.out.Cells["create"] = cell{Outcome: fail, Message: fmt.Sprintf("fixture is for %s, upstream serves %v", f.version, vs)}
		return r.out
	}
	r.out.Kind, r.out.Namespaced = res.kind, res.namespaced
	if e.paddock() {
		r.offered = offered[key][f.version].verbs
	} else {
		r.offered = res.verbs
	}
	r.out.Offered = r.offered
	for _, v := range allVerbs {
		if v != "stored" && !has(res.verbs, v) {
			r.out.Cells[v] = cell{Outcome: na}
		}
	}
	s := f.make(e)
	if s.createOnly() {
		c, cancel := e.ctx(ctx)
		_, err := s.create(c)
		cancel()
		r.set("create", err)
		r.out.Cells["stored"] = cell{Outcome: na}
		return r.out
	}
	r.lifecycle(ctx, s)
	return r.out
}

func (r *runner) lifecycle(ctx context.Context, s subject) {
	e, name := r.e, s.meta().GetName()
	// A watch from the current list's resourceVersion, on this object's name, started before
	// the create: it must report the object as ADDED.
	c, cancel := e.ctx(ctx)
	l0, lerr := s.list(c)
	cancel()
	rv := ""
	if lerr == nil {
		if la, err := meta.ListAccessor(l0); err == nil {
			rv = la.GetResourceVersion()
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*e.o.timeout)
	defer wcancel()
	w, werr := s.watch(wctx, metav1.ListOptions{ResourceVersion: rv, FieldSelector: "metadata.name=" + name})
	if w != nil {
		defer w.Stop()
	}

	c, cancel = e.ctx(ctx)
	_, cerr := s.create(c)
	cancel()
	created := r.set("create", cerr)
	if created.Outcome == policy {
		r.refusedLifecycle(ctx, s, lerr, werr)
		return
	}
	if created.Outcome != ok {
		for _, v := range []string{"get", "update", "list", "watch", "delete", "stored"} {
			if _, done := r.out.Cells[v]; !done {
				r.out.Cells[v] = cell{Outcome: blocked}
			}
		}
		return
	}
	if werr != nil {
		r.set("watch", werr)
	} else {
		r.set("watch", waitFor(w, name, e.o.timeout))
	}

	c, cancel = e.ctx(ctx)
	got, gerr := s.get(c)
	cancel()
	if gerr == nil {
		gerr = viewCheck(e, got, s.checks())
	}
	r.set("get", gerr)
	r.out.Cells["stored"] = r.stored(ctx, s)

	c, cancel = e.ctx(ctx)
	l1, lerr := s.list(c)
	cancel()
	if lerr == nil {
		lerr = listed(l1, name)
	}
	r.set("list", lerr)

	c, cancel = e.ctx(ctx)
	upd, uerr := s.update(c)
	cancel()
	if uerr == nil && accessor(upd).GetLabels()[updatedLabel] != "true" {
		uerr = checkError{fmt.Errorf("the answer to the update lacks the new label")}
	}
	r.set("update", uerr)

	c, cancel = e.ctx(ctx)
	r.set("delete", s.delete(c))
	cancel()
}

// refusedLifecycle: the create was refused by policy. Reads go on where discovery offers them;
// writes to the (non-existent) fixture name must be refused too.
func (r *runner) refusedLifecycle(ctx context.Context, s subject, lerr, werr error) {
	e := r.e
	r.set("list", lerr)
	r.set("watch", werr)
	c, cancel := e.ctx(ctx)
	_, gerr := s.get(c)
	cancel()
	if apierrors.IsNotFound(gerr) && has(r.offered, "get") {
		gerr = nil // the name does not exist: NotFound is the right answer
	}
	r.set("get", gerr)
	c, cancel = e.ctx(ctx)
	r.set("update", s.replace(c))
	cancel()
	c, cancel = e.ctx(ctx)
	r.set("delete", s.delete(c))
	cancel()
	r.out.Cells["stored"] = cell{Outcome: policy, Message: "nothing stored: the create was refused by policy"}
}

func viewCheck(e *env, got runtime.Object, cs []check) error {
	m, err := toMap(got)
	if err != nil {
		return checkError{err}
	}
	if err := verify(e, m, cs, false); err != nil {
		return checkError{fmt.Errorf("as the client reads it: %w", err)}
	}
	return nil
}

// stored reads the object as the upstream admin and checks the translated fields.
func (r *runner) stored(ctx context.Context, s subject) cell {
	e, m := r.e, s.meta()
	gvr := schema.GroupVersionResource{Group: r.res.group, Version: r.res.version, Resource: r.res.resource}
	name := m.GetName()
	if r.res.namespaced {
		// names of namespaced objects are kept
	} else if r.res.group == "apiextensions.k8s.io" {
		plural, group, _ := strings.Cut(name, ".")
		name = plural + "." + e.up(group)
	} else {
		name = e.up(name)
	}
	c, cancel := e.ctx(ctx)
	defer cancel()
	var u map[string]any
	var err error
	if r.res.namespaced {
		obj, gerr := e.admin.Resource(gvr).Namespace(e.up(m.GetNamespace())).Get(c, name, metav1.GetOptions{})
		err = gerr
		if obj != nil {
			u = obj.Object
		}
	} else {
		obj, gerr := e.admin.Resource(gvr).Get(c, name, metav1.GetOptions{})
		err = gerr
		if obj != nil {
			u = obj.Object
		}
	}
	if err != nil {
		code, reason, msg := statusOf(err)
		return cell{Outcome: fail, Code: code, Reason: reason, Message: "reading the stored object: " + msg}
	}
	cs := s.checks()
	if e.paddock() && !r.res.namespaced {
		cs = append(cs, chk("/metadata/labels/paddock.io~1tenant", e.o.tenant, plain))
	}
	if err := verify(e, u, cs, true); err != nil {
		return cell{Outcome: fail, Message: "stored object: " + err.Error()}
	}
	return cell{Outcome: ok}
}

// waitFor waits for an event that carries the object `name`.
func waitFor(w watch.Interface, name string, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				return checkError{fmt.Errorf("the watch ended before the object was reported")}
			}
			if ev.Type == watch.Error {
				return apierrors.FromObject(ev.Object)
			}
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetName() == name {
				return nil
			}
		case <-deadline:
			return checkError{fmt.Errorf("no watch event for %q within %s", name, timeout)}
		}
	}
}

func listed(l runtime.Object, name string) error {
	items, err := meta.ExtractList(l)
	if err != nil {
		return checkError{err}
	}
	var names []string
	for _, it := range items {
		n := accessor(it).GetName()
		if n == name {
			return nil
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return checkError{fmt.Errorf("%q is not among the %d listed items %v", name, len(names), names)}
}

// namesPolicy: the 403 is paddock's isolation policy speaking ("... not available to tenants of
// this cluster", "... shared read-only in this cluster"), not an RBAC denial.
func namesPolicy(code int32, msg string) bool {
	return code == 403 && (strings.Contains(msg, "not available to tenants of this cluster") ||
		strings.Contains(msg, "shared read-only in this cluster"))
}
