package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func intStr(s string) intstr.IntOrString { return intstr.FromString(s) }

// podSpec has what scheduling-aware workloads carry: pod affinity naming another namespace,
// anti-affinity selecting namespaces by name, tolerations, resources.
func podSpec(e *env, app string) corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/clientgo/app:1.0",
			Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: qty("10m"), corev1.ResourceMemory: qty("16Mi")}},
			Env:       []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
		}},
		TerminationGracePeriodSeconds: ptr(int64(0)),
		Affinity: &corev1.Affinity{
			PodAffinity: &corev1.PodAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 50,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cg-cache"}},
						Namespaces:    []string{e.ns2}, TopologyKey: "kubernetes.io/hostname",
					},
				}},
			},
			PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cg-noisy"}},
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": e.ns2}},
					TopologyKey:       "kubernetes.io/hostname",
				}},
			},
		},
		Tolerations: []corev1.Toleration{{Key: "clientgo.paddock.io/dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
	}
}

func affinityChecks(e *env, spec string) []check {
	return []check{
		chk(spec+"/affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution/0/podAffinityTerm/namespaces/0", e.ns2, nsName),
		chk(spec+"/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/0/namespaceSelector", e.ns2, selector),
		chk(spec+"/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/0/labelSelector/matchLabels/app", "cg-noisy", plain),
	}
}

func podTemplate(e *env, app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       podSpec(e, app),
	}
}

func selectorOf(t corev1.PodTemplateSpec) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: t.Labels}
}

func workloadFixtures() []fixture {
	return []fixture{
		{"apps", "v1", "deployments", func(e *env) subject {
			t := podTemplate(e, "cg-deploy")
			return typed[*appsv1.Deployment, *appsv1.DeploymentList](e.c.kube.AppsV1().Deployments(e.ns), &appsv1.Deployment{
				ObjectMeta: om("cg-deploy", e.ns),
				Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: selectorOf(t), Template: t,
					Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}},
			}, append(affinityChecks(e, "/spec/template/spec"), chk(nsPath, e.ns, nsName))...)
		}},
		{"apps", "v1", "replicasets", func(e *env) subject {
			t := podTemplate(e, "cg-rs")
			return typed[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](e.c.kube.AppsV1().ReplicaSets(e.ns), &appsv1.ReplicaSet{
				ObjectMeta: om("cg-rs", e.ns),
				Spec:       appsv1.ReplicaSetSpec{Replicas: ptr(int32(1)), Selector: selectorOf(t), Template: t},
			}, append(affinityChecks(e, "/spec/template/spec"), chk(nsPath, e.ns, nsName))...)
		}},
		{"apps", "v1", "statefulsets", func(e *env) subject {
			t := podTemplate(e, "cg-sts")
			t.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			return typed[*appsv1.StatefulSet, *appsv1.StatefulSetList](e.c.kube.AppsV1().StatefulSets(e.ns), &appsv1.StatefulSet{
				ObjectMeta: om("cg-sts", e.ns),
				Spec: appsv1.StatefulSetSpec{
					Replicas: ptr(int32(1)), Selector: selectorOf(t), Template: t, ServiceName: "cg-svc",
					VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
						ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: pvcSpec(e.name("sts-pv")),
					}},
					PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
						WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
				},
			}, append(affinityChecks(e, "/spec/template/spec"), chk(nsPath, e.ns, nsName),
				chk("/spec/volumeClaimTemplates/0/spec/volumeName", e.name("sts-pv"), clusterName))...)
		}},
		{"apps", "v1", "daemonsets", func(e *env) subject {
			t := podTemplate(e, "cg-ds")
			return typed[*appsv1.DaemonSet, *appsv1.DaemonSetList](e.c.kube.AppsV1().DaemonSets(e.ns), &appsv1.DaemonSet{
				ObjectMeta: om("cg-ds", e.ns),
				Spec:       appsv1.DaemonSetSpec{Selector: selectorOf(t), Template: t},
			}, append(affinityChecks(e, "/spec/template/spec"), chk(nsPath, e.ns, nsName))...)
		}},
		{"apps", "v1", "controllerrevisions", func(e *env) subject {
			raw, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": podTemplate(e, "cg-sts")}})
			return typed[*appsv1.ControllerRevision, *appsv1.ControllerRevisionList](e.c.kube.AppsV1().ControllerRevisions(e.ns), &appsv1.ControllerRevision{
				ObjectMeta: om("cg-sts-7d9f8b6c5", e.ns), Revision: 1, Data: runtime.RawExtension{Raw: raw},
			}, chk(nsPath, e.ns, nsName))
		}},
		{"batch", "v1", "jobs", func(e *env) subject {
			t := podTemplate(e, "cg-job")
			t.Spec.RestartPolicy = corev1.RestartPolicyNever
			return typed[*batchv1.Job, *batchv1.JobList](e.c.kube.BatchV1().Jobs(e.ns), &batchv1.Job{
				ObjectMeta: om("cg-job", e.ns),
				Spec:       batchv1.JobSpec{BackoffLimit: ptr(int32(1)), Completions: ptr(int32(1)), Template: t},
			}, append(affinityChecks(e, "/spec/template/spec"), chk(nsPath, e.ns, nsName))...)
		}},
		{"batch", "v1", "cronjobs", func(e *env) subject {
			t := podTemplate(e, "cg-cron")
			t.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			return typed[*batchv1.CronJob, *batchv1.CronJobList](e.c.kube.BatchV1().CronJobs(e.ns), &batchv1.CronJob{
				ObjectMeta: om("cg-cron", e.ns),
				Spec: batchv1.CronJobSpec{Schedule: "*/30 * * * *", Suspend: ptr(true), ConcurrencyPolicy: batchv1.ForbidConcurrent,
					JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: t}}},
			}, append(affinityChecks(e, "/spec/jobTemplate/spec/template/spec"), chk(nsPath, e.ns, nsName))...)
		}},
		{"autoscaling", "v2", "horizontalpodautoscalers", func(e *env) subject {
			return typed[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList](e.c.kube.AutoscalingV2().HorizontalPodAutoscalers(e.ns), &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: om("cg-hpa", e.ns),
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "cg-deploy"},
					MinReplicas:    ptr(int32(1)), MaxReplicas: 3,
					Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
						Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(70))}}}},
				},
			}, chk(nsPath, e.ns, nsName), chk("/spec/scaleTargetRef/name", "cg-deploy", plain))
		}},
		{"policy", "v1", "poddisruptionbudgets", func(e *env) subject {
			return typed[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList](e.c.kube.PolicyV1().PodDisruptionBudgets(e.ns), &policyv1.PodDisruptionBudget{
				ObjectMeta: om("cg-pdb", e.ns),
				Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(1)),
					Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"cg-deploy", "cg-sts"}}}}},
			}, chk(nsPath, e.ns, nsName), chk("/spec/selector/matchExpressions/0/values/1", "cg-sts", plain))
		}},
		{"coordination.k8s.io", "v1", "leases", func(e *env) subject {
			now := metav1.NewMicroTime(time.Now())
			return typed[*coordinationv1.Lease, *coordinationv1.LeaseList](e.c.kube.CoordinationV1().Leases(e.ns), &coordinationv1.Lease{
				ObjectMeta: om("cg-leader", e.ns),
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("cg-controller-0_" + e.tag), LeaseDurationSeconds: ptr(int32(15)),
					AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr(int32(0))},
			}, chk(nsPath, e.ns, nsName))
		}},
	}
}

// bindingSubject: POST .../bindings (what a scheduler does) for a pod nobody schedules.
func bindingSubject(e *env) subject {
	b := &corev1.Binding{ObjectMeta: om("cg-manual", e.ns), Target: corev1.ObjectReference{Kind: "Node", Name: e.node}}
	pods := e.c.kube.CoreV1().Pods(e.ns)
	do := func(ctx context.Context, b *corev1.Binding, _ metav1.CreateOptions) (*corev1.Binding, error) {
		pod := &corev1.Pod{ObjectMeta: om(b.Name, e.ns), Spec: corev1.PodSpec{
			SchedulerName: "clientgo-manual", TerminationGracePeriodSeconds: ptr(int64(0)),
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/clientgo/app:1.0"}}}}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating the pod to bind: %w", err)
		}
		err := e.c.kube.CoreV1().RESTClient().Post().Namespace(e.ns).Resource("bindings").Body(b).Do(ctx).Error()
		if err != nil {
			return nil, err
		}
		got, err := pods.Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if got.Spec.NodeName != e.node {
			return nil, checkError{fmt.Errorf("pod bound to %q, want %q", got.Spec.NodeName, e.node)}
		}
		return b, pods.Delete(ctx, b.Name, metav1.DeleteOptions{})
	}
	return createOnly(do, b, nil)
}
