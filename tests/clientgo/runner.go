package main

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
)

// crud is the method set every typed client of client-go has (gentype.ClientWithList).
type crud[T runtime.Object, L runtime.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

// subject is one object of one kind, driven through its typed client.
type subject interface {
	meta() metav1.Object
	create(context.Context) (runtime.Object, error)
	get(context.Context) (runtime.Object, error)
	list(context.Context) (runtime.Object, error)
	watch(context.Context, metav1.ListOptions) (watch.Interface, error)
	// update re-reads the object, labels it and writes it back (retrying on conflicts, as
	// controllers do); returns what the server answered.
	update(context.Context) (runtime.Object, error)
	delete(context.Context) error
	// replace writes the fixture object as it is, without reading it first (for kinds whose
	// create was refused by policy: the name does not exist, so nothing changes even if the
	// write went through).
	replace(context.Context) error
	checks() []check
	createOnly() bool
}

type typedSubject[T runtime.Object, L runtime.Object] struct {
	c   crud[T, L]
	obj T
	cs  []check
}

// typed wraps a typed client and the object to drive through it.
func typed[T runtime.Object, L runtime.Object](c crud[T, L], obj T, cs ...check) subject {
	return &typedSubject[T, L]{c: c, obj: obj, cs: cs}
}

func accessor(o runtime.Object) metav1.Object {
	m, err := meta.Accessor(o)
	if err != nil {
		panic(fmt.Sprintf("fixture object without metadata: %v", err))
	}
	return m
}

func (s *typedSubject[T, L]) meta() metav1.Object { return accessor(s.obj) }
func (s *typedSubject[T, L]) checks() []check     { return s.cs }
func (s *typedSubject[T, L]) createOnly() bool    { return false }

func (s *typedSubject[T, L]) create(ctx context.Context) (runtime.Object, error) {
	return s.c.Create(ctx, s.obj.DeepCopyObject().(T), metav1.CreateOptions{})
}

func (s *typedSubject[T, L]) get(ctx context.Context) (runtime.Object, error) {
	return s.c.Get(ctx, s.meta().GetName(), metav1.GetOptions{})
}

func (s *typedSubject[T, L]) list(ctx context.Context) (runtime.Object, error) {
	return s.c.List(ctx, metav1.ListOptions{})
}

func (s *typedSubject[T, L]) watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return s.c.Watch(ctx, o)
}

func (s *typedSubject[T, L]) update(ctx context.Context) (runtime.Object, error) {
	var out T
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := s.c.Get(ctx, s.meta().GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		m := accessor(cur)
		labels := m.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[updatedLabel] = "true"
		m.SetLabels(labels)
		out, err = s.c.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	return out, err
}

func (s *typedSubject[T, L]) replace(ctx context.Context) error {
	_, err := s.c.Update(ctx, s.obj.DeepCopyObject().(T), metav1.UpdateOptions{})
	return err
}

func (s *typedSubject[T, L]) delete(ctx context.Context) error {
	bg := metav1.DeletePropagationBackground
	return s.c.Delete(ctx, s.meta().GetName(), metav1.DeleteOptions{PropagationPolicy: &bg})
}

const updatedLabel = "clientgo.paddock.io/updated"

// createOnlySubject is a review kind (or Binding): discovery lists only create; the answer is
// checked instead of a stored object.
type createOnlySubject[T runtime.Object] struct {
	do    func(context.Context, T, metav1.CreateOptions) (T, error)
	obj   T
	check func(T) error
}

func createOnly[T runtime.Object](do func(context.Context, T, metav1.CreateOptions) (T, error), obj T, check func(T) error) subject {
	return &createOnlySubject[T]{do: do, obj: obj, check: check}
}

func (s *createOnlySubject[T]) meta() metav1.Object { return accessor(s.obj) }
func (s *createOnlySubject[T]) checks() []check     { return nil }
func (s *createOnlySubject[T]) createOnly() bool    { return true }
func (s *createOnlySubject[T]) create(ctx context.Context) (runtime.Object, error) {
	out, err := s.do(ctx, s.obj.DeepCopyObject().(T), metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if s.check != nil {
		if cerr := s.check(out); cerr != nil {
			return out, checkError{cerr}
		}
	}
	return out, nil
}
func (s *createOnlySubject[T]) get(context.Context) (runtime.Object, error)  { return nil, errNA }
func (s *createOnlySubject[T]) list(context.Context) (runtime.Object, error) { return nil, errNA }
func (s *createOnlySubject[T]) watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, errNA
}
func (s *createOnlySubject[T]) update(context.Context) (runtime.Object, error) { return nil, errNA }
func (s *createOnlySubject[T]) delete(context.Context) error                   { return errNA }
func (s *createOnlySubject[T]) replace(context.Context) error                  { return errNA }

var errNA = fmt.Errorf("not applicable")

// checkError is a call that succeeded but whose answer is wrong.
type checkError struct{ err error }

func (c checkError) Error() string { return c.err.Error() }

// statusOf extracts the Kubernetes Status of a failed call.
func statusOf(err error) (int32, string, string) {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		st := s.Status()
		return st.Code, string(st.Reason), st.Message
	}
	return 0, "", err.Error()
}
