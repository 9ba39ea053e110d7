package main

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The fixtures: one object per creatable built-in kind, with the fields that matter to
// paddock's translation filled in the way real clients fill them.
func allFixtures() []fixture {
	var fs []fixture
	fs = append(fs, coreFixtures()...)
	fs = append(fs, workloadFixtures()...)
	fs = append(fs, clusterFixtures()...)
	fs = append(fs, platformFixtures()...)
	fs = append(fs, reviewFixtures()...)
	return fs
}

func om(name, ns string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/part-of": "clientgo"}}
}

func ptr[T any](v T) *T { return &v }

func qty(s string) resource.Quantity { return resource.MustParse(s) }

const nsPath = "/metadata/namespace"

func coreFixtures() []fixture {
	return []fixture{
		{"", "v1", "configmaps", func(e *env) subject {
			return typed[*corev1.ConfigMap, *corev1.ConfigMapList](e.c.kube.CoreV1().ConfigMaps(e.ns), &corev1.ConfigMap{
				ObjectMeta: om("cg-config", e.ns), Data: map[string]string{"app.properties": "color=blue\n"},
				BinaryData: map[string][]byte{"blob": {0, 1, 2}},
			}, chk(nsPath, e.ns, nsName))
		}},
		{"", "v1", "secrets", func(e *env) subject {
			return typed[*corev1.Secret, *corev1.SecretList](e.c.kube.CoreV1().Secrets(e.ns), &corev1.Secret{
				ObjectMeta: om("cg-secret", e.ns), Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{"password": []byte("s3cr3t")},
			}, chk(nsPath, e.ns, nsName))
		}},
		{"", "v1", "serviceaccounts", func(e *env) subject {
			return typed[*corev1.ServiceAccount, *corev1.ServiceAccountList](e.c.kube.CoreV1().ServiceAccounts(e.ns), &corev1.ServiceAccount{
				ObjectMeta: om("cg-sa", e.ns), AutomountServiceAccountToken: ptr(false),
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "cg-pull"}},
			}, chk(nsPath, e.ns, nsName))
		}},
		{"", "v1", "services", func(e *env) subject {
			return typed[*corev1.Service, *corev1.ServiceList](e.c.kube.CoreV1().Services(e.ns), &corev1.Service{
				ObjectMeta: om("cg-svc", e.ns),
				Spec: corev1.ServiceSpec{
					Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "cg-web"},
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intStr("http"), Protocol: corev1.ProtocolTCP}},
				},
			}, chk(nsPath, e.ns, nsName), chk("/spec/selector/app", "cg-web", plain))
		}},
		{"", "v1", "endpoints", func(e *env) subject {
			return typed[*corev1.Endpoints, *corev1.EndpointsList](e.c.kube.CoreV1().Endpoints(e.ns), &corev1.Endpoints{
				ObjectMeta: om("cg-external", e.ns),
				Subsets: []corev1.EndpointSubset{{
					Addresses: []corev1.EndpointAddress{{IP: "10.0.0.10", NodeName: ptr(e.node),
						TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: e.ns, Name: "cg-pod", APIVersion: "v1"}}},
					NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.11",
						TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: e.ns, Name: "cg-pod-2"}}},
					Ports: []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}},
				}},
			}, chk(nsPath, e.ns, nsName),
				chk("/subsets/0/addresses/0/targetRef/namespace", e.ns, nsName),
				chk("/subsets/0/notReadyAddresses/0/targetRef/namespace", e.ns, nsName),
				chk("/subsets/0/addresses/0/nodeName", e.node, plain))
		}},
		{"discovery.k8s.io", "v1", "endpointslices", func(e *env) subject {
			m := om("cg-slice", e.ns)
			m.Labels[discoveryv1.LabelServiceName] = "cg-svc"
			return typed[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList](e.c.kube.DiscoveryV1().EndpointSlices(e.ns), &discoveryv1.EndpointSlice{
				ObjectMeta: m, AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints: []discoveryv1.Endpoint{{
					Addresses:  []string{"10.0.0.12"},
					Conditions: discoveryv1.EndpointConditions{Ready: ptr(true), Serving: ptr(true)},
					TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: e.ns, Name: "cg-pod"},
					NodeName:   ptr(e.node),
				}},
				Ports: []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}},
			}, chk(nsPath, e.ns, nsName), chk("/endpoints/0/targetRef/namespace", e.ns, nsName))
		}},
		{"", "v1", "events", func(e *env) subject {
			now := metav1.NewTime(time.Now().Truncate(time.Second))
			return typed[*corev1.Event, *corev1.EventList](e.c.kube.CoreV1().Events(e.ns), &corev1.Event{
				ObjectMeta: om("cg-pod.1", e.ns),
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: e.ns, Name: "cg-pod", APIVersion: "v1",
					FieldPath: "spec.containers{app}"},
				Reason: "Pulled", Message: "Container image already present on machine", Type: corev1.EventTypeNormal,
				Source: corev1.EventSource{Component: "clientgo-e2e", Host: e.node}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
				ReportingController: "clientgo.paddock.io/e2e", ReportingInstance: "clientgo-1",
			}, chk(nsPath, e.ns, nsName), chk("/involvedObject/namespace", e.ns, nsName), chk("/involvedObject/name", "cg-pod", plain))
		}},
		{"events.k8s.io", "v1", "events", func(e *env) subject {
			return typed[*eventsv1.Event, *eventsv1.EventList](e.c.kube.EventsV1().Events(e.ns), &eventsv1.Event{
				ObjectMeta: om("cg-deploy.2", e.ns), EventTime: metav1.NewMicroTime(time.Now()),
				ReportingController: "clientgo.paddock.io/e2e", ReportingInstance: "clientgo-1",
				Action: "Scaling", Reason: "ScalingReplicaSet", Type: corev1.EventTypeNormal, Note: "Scaled up replica set cg-deploy-1 to 1",
				Regarding: corev1.ObjectReference{Kind: "Deployment", Namespace: e.ns, Name: "cg-deploy", APIVersion: "apps/v1"},
				Related:   &corev1.ObjectReference{Kind: "ReplicaSet", Namespace: e.ns, Name: "cg-deploy-1", APIVersion: "apps/v1"},
			}, chk(nsPath, e.ns, nsName), chk("/regarding/namespace", e.ns, nsName), chk("/related/namespace", e.ns, nsName))
		}},
		{"", "v1", "limitranges", func(e *env) subject {
			return typed[*corev1.LimitRange, *corev1.LimitRangeList](e.c.kube.CoreV1().LimitRanges(e.ns), &corev1.LimitRange{
				ObjectMeta: om("cg-limits", e.ns),
				Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
					Default:        corev1.ResourceList{corev1.ResourceMemory: qty("256Mi")},
					DefaultRequest: corev1.ResourceList{corev1.ResourceMemory: qty("64Mi")}}}},
			}, chk(nsPath, e.ns, nsName))
		}},
		{"", "v1", "resourcequotas", func(e *env) subject {
			return typed[*corev1.ResourceQuota, *corev1.ResourceQuotaList](e.c.kube.CoreV1().ResourceQuotas(e.ns), &corev1.ResourceQuota{
				ObjectMeta: om("cg-quota", e.ns),
				Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": qty("100"), corev1.ResourcePods: qty("100")}},
			}, chk(nsPath, e.ns, nsName))
		}},
		{"", "v1", "persistentvolumeclaims", func(e *env) subject {
			return typed[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList](e.c.kube.CoreV1().PersistentVolumeClaims(e.ns), &corev1.PersistentVolumeClaim{
				ObjectMeta: om("cg-claim", e.ns), Spec: pvcSpec(e.name("pv")),
			}, chk(nsPath, e.ns, nsName), chk("/spec/volumeName", e.name("pv"), clusterName))
		}},
		{"", "v1", "persistentvolumes", func(e *env) subject {
			return typed[*corev1.PersistentVolume, *corev1.PersistentVolumeList](e.c.kube.CoreV1().PersistentVolumes(), &corev1.PersistentVolume{
				ObjectMeta: om(e.name("pv"), ""),
				Spec: corev1.PersistentVolumeSpec{
					Capacity:    corev1.ResourceList{corev1.ResourceStorage: qty("1Gi")},
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: "",
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
						Driver: "cg.csi.example.com", VolumeHandle: "vol-" + e.tag}},
					ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: e.ns, Name: "cg-claim"},
				},
			}, chk("/spec/claimRef/namespace", e.ns, nsName), chk("/spec/claimRef/name", "cg-claim", plain))
		}},
		{"", "v1", "namespaces", func(e *env) subject {
			name := e.tag + "-extra"
			return typed[*corev1.Namespace, *corev1.NamespaceList](e.c.kube.CoreV1().Namespaces(), &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"owner": "clientgo"}},
			}, chk("/metadata/labels/kubernetes.io~1metadata.name", name, nsName), chk("/metadata/labels/team", "a", plain))
		}},
		{"", "v1", "pods", func(e *env) subject {
			return typed[*corev1.Pod, *corev1.PodList](e.c.kube.CoreV1().Pods(e.ns), &corev1.Pod{
				ObjectMeta: om("cg-pod", e.ns), Spec: podSpec(e, "cg-pod"),
			}, append(affinityChecks(e, "/spec"), chk(nsPath, e.ns, nsName))...)
		}},
		{"", "v1", "podtemplates", func(e *env) subject {
			return typed[*corev1.PodTemplate, *corev1.PodTemplateList](e.c.kube.CoreV1().PodTemplates(e.ns), &corev1.PodTemplate{
				ObjectMeta: om("cg-template", e.ns), Template: podTemplate(e, "cg-template"),
			}, append(affinityChecks(e, "/template/spec"), chk(nsPath, e.ns, nsName))...)
		}},
		{"", "v1", "replicationcontrollers", func(e *env) subject {
			t := podTemplate(e, "cg-rc")
			return typed[*corev1.ReplicationController, *corev1.ReplicationControllerList](e.c.kube.CoreV1().ReplicationControllers(e.ns), &corev1.ReplicationController{
				ObjectMeta: om("cg-rc", e.ns),
				Spec:       corev1.ReplicationControllerSpec{Replicas: ptr(int32(1)), Selector: t.Labels, Template: &t},
			}, append(affinityChecks(e, "/spec/template/spec"), chk(nsPath, e.ns, nsName))...)
		}},
		{"", "v1", "bindings", func(e *env) subject { return bindingSubject(e) }},
	}
}

func pvcSpec(volume string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: qty("1Gi")}},
		StorageClassName: ptr(""), VolumeName: volume,
	}
}
