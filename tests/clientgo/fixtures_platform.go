package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"hash/fnv"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Platform kinds: shared read-only or forbidden for tenants (docs/security.md). Directly, the
// admin creates them; through paddock their writes must be refused with a Status. None of
// them can disturb the test bed: the node is tainted, the priority level and flow schema
// match one unused user, the APIService is deleted before any client needs discovery again.
func platformFixtures() []fixture {
	return []fixture{
		{"", "v1", "nodes", func(e *env) subject {
			return typed[*corev1.Node, *corev1.NodeList](e.c.kube.CoreV1().Nodes(), &corev1.Node{
				ObjectMeta: om(e.name("node"), ""),
				Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{
					Key: "clientgo.paddock.io/test-node", Effect: corev1.TaintEffectNoSchedule}}},
			})
		}},
		{"storage.k8s.io", "v1", "storageclasses", func(e *env) subject {
			return typed[*storagev1.StorageClass, *storagev1.StorageClassList](e.c.kube.StorageV1().StorageClasses(), &storagev1.StorageClass{
				ObjectMeta: om(e.name("fast"), ""), Provisioner: "cg.csi.example.com",
				Parameters: map[string]string{"tier": "fast"}, ReclaimPolicy: ptr(corev1.PersistentVolumeReclaimDelete),
				VolumeBindingMode: ptr(storagev1.VolumeBindingWaitForFirstConsumer), AllowVolumeExpansion: ptr(true),
			})
		}},
		{"storage.k8s.io", "v1", "csidrivers", func(e *env) subject {
			return typed[*storagev1.CSIDriver, *storagev1.CSIDriverList](e.c.kube.StorageV1().CSIDrivers(), &storagev1.CSIDriver{
				ObjectMeta: om(e.tag+".csi.example.com", ""),
				Spec: storagev1.CSIDriverSpec{AttachRequired: ptr(false), PodInfoOnMount: ptr(true),
					VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}},
			})
		}},
		{"storage.k8s.io", "v1", "csinodes", func(e *env) subject {
			return typed[*storagev1.CSINode, *storagev1.CSINodeList](e.c.kube.StorageV1().CSINodes(), &storagev1.CSINode{
				ObjectMeta: om(e.name("node"), ""),
				Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "cg.csi.example.com", NodeID: e.name("node"),
					TopologyKeys: []string{"topology.cg.csi.example.com/zone"}}}},
			})
		}},
		{"storage.k8s.io", "v1", "volumeattachments", func(e *env) subject {
			return typed[*storagev1.VolumeAttachment, *storagev1.VolumeAttachmentList](e.c.kube.StorageV1().VolumeAttachments(), &storagev1.VolumeAttachment{
				ObjectMeta: om(e.name("attach"), ""),
				Spec: storagev1.VolumeAttachmentSpec{Attacher: "cg.csi.example.com", NodeName: e.node,
					Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr(e.name("pv"))}},
			})
		}},
		{"scheduling.k8s.io", "v1", "priorityclasses", func(e *env) subject {
			return typed[*schedulingv1.PriorityClass, *schedulingv1.PriorityClassList](e.c.kube.SchedulingV1().PriorityClasses(), &schedulingv1.PriorityClass{
				ObjectMeta: om(e.name("batch"), ""), Value: 1000, Description: "clientgo e2e",
				PreemptionPolicy: ptr(corev1.PreemptNever),
			})
		}},
		{"networking.k8s.io", "v1", "ingressclasses", func(e *env) subject {
			return typed[*networkingv1.IngressClass, *networkingv1.IngressClassList](e.c.kube.NetworkingV1().IngressClasses(), &networkingv1.IngressClass{
				ObjectMeta: om(e.name("class"), ""), Spec: networkingv1.IngressClassSpec{Controller: "clientgo.example.com/ingress"},
			})
		}},
		{"networking.k8s.io", "v1", "ipaddresses", func(e *env) subject {
			// An IPAddress is named by its address; one per run and mode.
			h := fnv.New32a()
			h.Write([]byte(e.tag))
			ip := fmt.Sprintf("10.96.%d.%d", 200+h.Sum32()%50, 1+h.Sum32()/50%250)
			return typed[*networkingv1.IPAddress, *networkingv1.IPAddressList](e.c.kube.NetworkingV1().IPAddresses(), &networkingv1.IPAddress{
				ObjectMeta: om(ip, ""),
				Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{
					Group: "", Resource: "services", Namespace: e.ns, Name: "cg-svc"}},
			})
		}},
		{"networking.k8s.io", "v1", "servicecidrs", func(e *env) subject {
			return typed[*networkingv1.ServiceCIDR, *networkingv1.ServiceCIDRList](e.c.kube.NetworkingV1().ServiceCIDRs(), &networkingv1.ServiceCIDR{
				ObjectMeta: om(e.name("cidr"), ""), Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.250.0.0/24"}},
			})
		}},
		{"node.k8s.io", "v1", "runtimeclasses", func(e *env) subject {
			return typed[*nodev1.RuntimeClass, *nodev1.RuntimeClassList](e.c.kube.NodeV1().RuntimeClasses(), &nodev1.RuntimeClass{
				ObjectMeta: om(e.name("gvisor"), ""), Handler: "runsc",
				Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"runtime": "gvisor"}},
			})
		}},
		{"flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations", func(e *env) subject {
			return typed[*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.PriorityLevelConfigurationList](e.c.kube.FlowcontrolV1().PriorityLevelConfigurations(), &flowcontrolv1.PriorityLevelConfiguration{
				ObjectMeta: om(e.name("level"), ""),
				Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
					Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr(int32(1)),
						LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
			})
		}},
		{"flowcontrol.apiserver.k8s.io", "v1", "flowschemas", func(e *env) subject {
			return typed[*flowcontrolv1.FlowSchema, *flowcontrolv1.FlowSchemaList](e.c.kube.FlowcontrolV1().FlowSchemas(), &flowcontrolv1.FlowSchema{
				ObjectMeta: om(e.name("flow"), ""),
				Spec: flowcontrolv1.FlowSchemaSpec{
					PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload-low"},
					MatchingPrecedence:         9000,
					Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
						Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "clientgo-nobody"}}},
						ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"*"},
							Resources: []string{"*"}, Namespaces: []string{"*"}}},
					}},
				},
			})
		}},
		{"apiregistration.k8s.io", "v1", "apiservices", func(e *env) subject {
			return typed[*apiregv1.APIService, *apiregv1.APIServiceList](e.c.agg.ApiregistrationV1().APIServices(), &apiregv1.APIService{
				ObjectMeta: om("v1alpha1."+e.tag+".clientgo.example.com", ""),
				Spec: apiregv1.APIServiceSpec{Group: e.tag + ".clientgo.example.com", Version: "v1alpha1",
					Service:              &apiregv1.ServiceReference{Namespace: e.ns, Name: "cg-api", Port: ptr(int32(443))},
					GroupPriorityMinimum: 1000, VersionPriority: 15, InsecureSkipTLSVerify: true},
			})
		}},
		{"certificates.k8s.io", "v1", "certificatesigningrequests", func(e *env) subject {
			return typed[*certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequestList](e.c.kube.CertificatesV1().CertificateSigningRequests(), &certificatesv1.CertificateSigningRequest{
				ObjectMeta: om(e.name("csr"), ""),
				Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM(e.tag), SignerName: "clientgo.example.com/signer",
					ExpirationSeconds: ptr(int32(3600)),
					Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}},
			})
		}},
		{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", func(e *env) subject {
			return typed[*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyList](e.c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies(), &admissionv1.ValidatingAdmissionPolicy{
				ObjectMeta: om(e.name("policy"), ""),
				Spec: admissionv1.ValidatingAdmissionPolicySpec{
					FailurePolicy: ptr(admissionv1.Fail),
					MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
						RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Create},
							Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
					Validations: []admissionv1.Validation{{Expression: "object.metadata.name != 'clientgo-forbidden'"}},
				},
			})
		}},
		{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", func(e *env) subject {
			return typed[*admissionv1.ValidatingAdmissionPolicyBinding, *admissionv1.ValidatingAdmissionPolicyBindingList](e.c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings(), &admissionv1.ValidatingAdmissionPolicyBinding{
				ObjectMeta: om(e.name("policy-binding"), ""),
				Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: e.name("policy"),
					ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
					MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
						MatchLabels: map[string]string{"kubernetes.io/metadata.name": e.ns}}}},
			})
		}},
	}
}

// csrPEM is a real PKCS#10 request for a client certificate.
func csrPEM(cn string) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "clientgo-" + cn, Organization: []string{"clientgo"}}}, key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}
