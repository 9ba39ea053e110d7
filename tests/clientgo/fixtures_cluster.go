package main

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Tenant-owned kinds with references: RBAC, network policies, ingresses, webhooks, CRDs.
func clusterFixtures() []fixture {
	return []fixture{
		{"rbac.authorization.k8s.io", "v1", "roles", func(e *env) subject {
			return typed[*rbacv1.Role, *rbacv1.RoleList](e.c.kube.RbacV1().Roles(e.ns), &rbacv1.Role{
				ObjectMeta: om("cg-role", e.ns),
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
					{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/scale"}, Verbs: []string{"get", "update"}},
				},
			}, chk(nsPath, e.ns, nsName), chk("/rules/1/apiGroups/0", "apps", plain))
		}},
		{"rbac.authorization.k8s.io", "v1", "rolebindings", func(e *env) subject {
			return typed[*rbacv1.RoleBinding, *rbacv1.RoleBindingList](e.c.kube.RbacV1().RoleBindings(e.ns), &rbacv1.RoleBinding{
				ObjectMeta: om("cg-binding", e.ns),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: e.name("reader")},
				Subjects: []rbacv1.Subject{
					{Kind: rbacv1.ServiceAccountKind, Name: "cg-sa", Namespace: e.ns2},
					{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"},
					{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "developers"},
				},
			}, chk(nsPath, e.ns, nsName), chk("/roleRef/name", e.name("reader"), clusterName),
				chk("/subjects/0/namespace", e.ns2, nsName), chk("/subjects/1/name", "alice", userName),
				chk("/subjects/2/name", "developers", userName))
		}},
		{"rbac.authorization.k8s.io", "v1", "clusterroles", func(e *env) subject {
			return typed[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](e.c.kube.RbacV1().ClusterRoles(), &rbacv1.ClusterRole{
				ObjectMeta: om(e.name("reader"), ""),
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"get", "list", "watch"}},
					{APIGroups: []string{"widgets.clientgo.example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list"}},
				},
			}, chk("/rules/0/resources/1", "services", plain), chk("/rules/1/apiGroups/0", "widgets.clientgo.example.com", crdGroup))
		}},
		{"rbac.authorization.k8s.io", "v1", "clusterrolebindings", func(e *env) subject {
			return typed[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList](e.c.kube.RbacV1().ClusterRoleBindings(), &rbacv1.ClusterRoleBinding{
				ObjectMeta: om(e.name("readers"), ""),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: e.name("reader")},
				Subjects: []rbacv1.Subject{
					{Kind: rbacv1.ServiceAccountKind, Name: "cg-sa", Namespace: e.ns},
					{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "auditors"},
				},
			},
				// Upstream a tenant ClusterRoleBinding names shadow identities only, which no
				// real identity holds (docs/security.md).
				chk("/roleRef/name", e.name("reader"), clusterName),
				view("/subjects/0/namespace", e.ns), view("/subjects/1/name", "auditors"),
				stored("/subjects/0/name", fmt.Sprintf("paddock:cluster:%s:system:serviceaccount:%s:cg-sa", e.o.tenant, e.up(e.ns))),
				stored("/subjects/1/name", fmt.Sprintf("paddock:cluster:%s:paddock:%s:auditors", e.o.tenant, e.o.tenant)))
		}},
		{"networking.k8s.io", "v1", "networkpolicies", func(e *env) subject {
			return typed[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList](e.c.kube.NetworkingV1().NetworkPolicies(e.ns), &networkingv1.NetworkPolicy{
				ObjectMeta: om("cg-netpol", e.ns),
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "cg-deploy"}},
					PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
					Ingress: []networkingv1.NetworkPolicyIngressRule{{
						From: []networkingv1.NetworkPolicyPeer{{
							NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": e.ns2}},
							PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"role": "frontend"}},
						}},
						Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr(corev1.ProtocolTCP), Port: ptr(intstr.FromInt32(8080))}},
					}},
					Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}}},
				},
			}, chk(nsPath, e.ns, nsName), chk("/spec/ingress/0/from/0/namespaceSelector", e.ns2, selector),
				chk("/spec/egress/0/to/0/namespaceSelector", "", selector))
		}},
		{"networking.k8s.io", "v1", "ingresses", func(e *env) subject {
			pt := networkingv1.PathTypePrefix
			return typed[*networkingv1.Ingress, *networkingv1.IngressList](e.c.kube.NetworkingV1().Ingresses(e.ns), &networkingv1.Ingress{
				ObjectMeta: om("cg-ingress", e.ns),
				Spec: networkingv1.IngressSpec{
					IngressClassName: ptr("cg-class"),
					TLS:              []networkingv1.IngressTLS{{Hosts: []string{"cg.example.com"}, SecretName: "cg-tls"}},
					Rules: []networkingv1.IngressRule{{Host: "cg.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
						Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pt, Backend: networkingv1.IngressBackend{
							Service: &networkingv1.IngressServiceBackend{Name: "cg-svc", Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}},
				},
			}, chk(nsPath, e.ns, nsName), chk("/spec/ingressClassName", "cg-class", plain))
		}},
		{"storage.k8s.io", "v1", "csistoragecapacities", func(e *env) subject {
			return typed[*storagev1.CSIStorageCapacity, *storagev1.CSIStorageCapacityList](e.c.kube.StorageV1().CSIStorageCapacities(e.ns), &storagev1.CSIStorageCapacity{
				ObjectMeta: om("cg-capacity", e.ns), StorageClassName: "cg-fast",
				NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/hostname": e.node}},
				Capacity:     ptr(qty("10Gi")),
			}, chk(nsPath, e.ns, nsName))
		}},
		{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", func(e *env) subject {
			return typed[*admissionv1.ValidatingWebhookConfiguration, *admissionv1.ValidatingWebhookConfigurationList](e.c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations(), &admissionv1.ValidatingWebhookConfiguration{
				ObjectMeta: om(e.name("validate"), ""),
				Webhooks: []admissionv1.ValidatingWebhook{{
					Name: "validate.clientgo.example.com", ClientConfig: webhookClient(e), Rules: webhookRules(),
					FailurePolicy: ptr(admissionv1.Ignore), SideEffects: ptr(admissionv1.SideEffectClassNone),
					AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr(int32(2)),
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": e.ns}},
					ObjectSelector:    neverSelector(),
				}},
			}, webhookChecks(e)...)
		}},
		{"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", func(e *env) subject {
			return typed[*admissionv1.MutatingWebhookConfiguration, *admissionv1.MutatingWebhookConfigurationList](e.c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations(), &admissionv1.MutatingWebhookConfiguration{
				ObjectMeta: om(e.name("mutate"), ""),
				Webhooks: []admissionv1.MutatingWebhook{{
					Name: "mutate.clientgo.example.com", ClientConfig: webhookClient(e), Rules: webhookRules(),
					FailurePolicy: ptr(admissionv1.Ignore), SideEffects: ptr(admissionv1.SideEffectClassNone),
					AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr(int32(2)),
					ReinvocationPolicy: ptr(admissionv1.NeverReinvocationPolicy),
					NamespaceSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": e.ns}},
					ObjectSelector:     neverSelector(),
				}},
			}, webhookChecks(e)...)
		}},
		{"apiextensions.k8s.io", "v1", "customresourcedefinitions", func(e *env) subject {
			group := e.tag + ".clientgo.example.com"
			return typed[*apiextv1.CustomResourceDefinition, *apiextv1.CustomResourceDefinitionList](e.c.apiext.ApiextensionsV1().CustomResourceDefinitions(), &apiextv1.CustomResourceDefinition{
				ObjectMeta: om("widgets."+group, ""),
				Spec: apiextv1.CustomResourceDefinitionSpec{
					Group: group, Scope: apiextv1.NamespaceScoped,
					Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
					Versions: []apiextv1.CustomResourceDefinitionVersion{{
						Name: "v1", Served: true, Storage: true,
						Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
							Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
								"spec": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{"size": {Type: "integer"}}},
							}}},
						Subresources: &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}},
					}},
				},
			}, chk("/spec/group", group, crdGroup))
		}},
	}
}

// The webhooks call a Service in the tenant's namespace; their object selector matches
// nothing, so the apiserver never calls them.
func webhookClient(e *env) admissionv1.WebhookClientConfig {
	return admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{
		Namespace: e.ns, Name: "cg-webhook", Path: ptr("/admit"), Port: ptr(int32(443))}}
}

func webhookRules() []admissionv1.RuleWithOperations {
	return []admissionv1.RuleWithOperations{{
		Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
		Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
			Scope: ptr(admissionv1.NamespacedScope)},
	}}
}

func neverSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"clientgo.paddock.io/never": "match"}}
}

func webhookChecks(e *env) []check {
	return []check{
		chk("/webhooks/0/clientConfig/service/namespace", e.ns, nsName),
		chk("/webhooks/0/clientConfig/service/name", "cg-webhook", plain),
		chk("/webhooks/0/namespaceSelector", e.ns, selector),
	}
}
