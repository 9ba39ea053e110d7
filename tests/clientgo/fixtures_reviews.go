package main

import (
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Create-only kinds: access reviews (what kubectl auth can-i, k9s and controllers ask) and
// TokenReview. Their answers are checked: the tenant reads back its own names.
func reviewFixtures() []fixture {
	return []fixture{
		{"authorization.k8s.io", "v1", "selfsubjectaccessreviews", func(e *env) subject {
			return createOnly(e.c.kube.AuthorizationV1().SelfSubjectAccessReviews().Create, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: e.ns, Verb: "create", Resource: "configmaps"}},
			}, func(r *authorizationv1.SelfSubjectAccessReview) error {
				if !r.Status.Allowed {
					return fmt.Errorf("the admin may not create configmaps in %s: %+v", e.ns, r.Status)
				}
				return sameNamespace(r.Spec.ResourceAttributes, e.ns)
			})
		}},
		{"authorization.k8s.io", "v1", "subjectaccessreviews", func(e *env) subject {
			return createOnly(e.c.kube.AuthorizationV1().SubjectAccessReviews().Create, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", Groups: []string{"developers"},
					ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: e.ns, Verb: "get", Resource: "pods"}},
			}, func(r *authorizationv1.SubjectAccessReview) error {
				if r.Spec.User != "alice" {
					return fmt.Errorf("answer names user %q", r.Spec.User)
				}
				return sameNamespace(r.Spec.ResourceAttributes, e.ns)
			})
		}},
		{"authorization.k8s.io", "v1", "localsubjectaccessreviews", func(e *env) subject {
			return createOnly(e.c.kube.AuthorizationV1().LocalSubjectAccessReviews(e.ns).Create, &authorizationv1.LocalSubjectAccessReview{
				ObjectMeta: metav1.ObjectMeta{Namespace: e.ns},
				Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
					ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: e.ns, Verb: "list", Resource: "secrets"}},
			}, func(r *authorizationv1.LocalSubjectAccessReview) error {
				if r.Namespace != e.ns || r.Spec.User != "alice" {
					return fmt.Errorf("answer in namespace %q for user %q", r.Namespace, r.Spec.User)
				}
				return sameNamespace(r.Spec.ResourceAttributes, e.ns)
			})
		}},
		{"authorization.k8s.io", "v1", "selfsubjectrulesreviews", func(e *env) subject {
			return createOnly(e.c.kube.AuthorizationV1().SelfSubjectRulesReviews().Create, &authorizationv1.SelfSubjectRulesReview{
				Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: e.ns},
			}, func(r *authorizationv1.SelfSubjectRulesReview) error {
				// The apiserver answers with the status only.
				if len(r.Status.ResourceRules) == 0 || r.Status.Incomplete {
					return fmt.Errorf("%d resource rules, incomplete %v", len(r.Status.ResourceRules), r.Status.Incomplete)
				}
				return nil
			})
		}},
		{"authentication.k8s.io", "v1", "selfsubjectreviews", func(e *env) subject {
			return createOnly(e.c.kube.AuthenticationV1().SelfSubjectReviews().Create, &authenticationv1.SelfSubjectReview{},
				func(r *authenticationv1.SelfSubjectReview) error {
					u := r.Status.UserInfo.Username
					if u == "" || (e.paddock() && strings.Contains(u, e.o.tenant)) {
						return fmt.Errorf("user %q", u)
					}
					return nil
				})
		}},
		{"authentication.k8s.io", "v1", "tokenreviews", func(e *env) subject {
			return createOnly(e.c.kube.AuthenticationV1().TokenReviews().Create, &authenticationv1.TokenReview{
				Spec: authenticationv1.TokenReviewSpec{Token: "clientgo-not-a-token"},
			}, func(r *authenticationv1.TokenReview) error {
				if r.Status.Authenticated {
					return fmt.Errorf("a made-up token was authenticated")
				}
				return nil
			})
		}},
	}
}

func sameNamespace(a *authorizationv1.ResourceAttributes, ns string) error {
	if a == nil || a.Namespace != ns {
		return fmt.Errorf("resourceAttributes %+v, want namespace %q", a, ns)
	}
	return nil
}
