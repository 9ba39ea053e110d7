//! Protobuf bodies of workloads and storage (pod specs of every workload, claim templates,
//! claims, volumes and their secrets), with the real generated types; helpers from the parent.

use std::collections::BTreeMap;

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::batch::v1 as batch;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::*;
fn claim_spec() -> core::PersistentVolumeClaimSpec {
    core::PersistentVolumeClaimSpec {
        volume_name: st("vol"),
        data_source_ref: Some(core::TypedObjectReference {
            kind: st("PersistentVolumeClaim"),
            name: st("src"),
            namespace: st("other"),
            ..Default::default()
        }),
        storage_class_name: st("standard"),
        ..Default::default()
    }
}

#[test]
fn claims_and_volumes() {
    let pvc = core::PersistentVolumeClaim {
        metadata: meta("data", Some("default")),
        spec: Some(claim_spec()),
        ..Default::default()
    };
    let up = both_ways("v1", "PersistentVolumeClaim", Some("default"), &pvc);
    let spec = up.spec.unwrap();
    assert_eq!(spec.volume_name.as_deref(), Some("foofoo-vol"));
    assert_eq!(
        spec.data_source_ref.unwrap().namespace.as_deref(),
        Some("foofoo-other")
    );
    assert_eq!(spec.storage_class_name.as_deref(), Some("standard"));

    let pv = core::PersistentVolume {
        metadata: meta("vol", None),
        spec: Some(core::PersistentVolumeSpec {
            claim_ref: objref("PersistentVolumeClaim", "default", "data"),
            persistent_volume_source: Some(core::PersistentVolumeSource {
                nfs: Some(core::NfsVolumeSource {
                    server: st("nfs"),
                    path: st("/x"),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let c = ctx();
    let up: core::PersistentVolume = unwrap(
        &translate_protobuf_body(&c, None, None, &wrap("v1", "PersistentVolume", &pv)).unwrap(),
    );
    assert_eq!(
        up.metadata.as_ref().unwrap().name.as_deref(),
        Some("foofoo-vol")
    );
    assert_eq!(
        up.metadata.as_ref().unwrap().labels["paddock.io/tenant"],
        "foofoo"
    );
    let spec = up.spec.unwrap();
    assert_eq!(
        spec.claim_ref.unwrap().namespace.as_deref(),
        Some("foofoo-default")
    );
    assert!(spec.persistent_volume_source.unwrap().nfs.is_some());
    for source in [
        core::PersistentVolumeSource {
            host_path: Some(core::HostPathVolumeSource {
                path: st("/etc"),
                ..Default::default()
            }),
            ..Default::default()
        },
        core::PersistentVolumeSource {
            local: Some(core::LocalVolumeSource {
                path: st("/mnt"),
                ..Default::default()
            }),
            ..Default::default()
        },
    ] {
        let mut bad = pv.clone();
        if let Some(s) = bad.spec.as_mut() {
            s.persistent_volume_source = Some(source);
        }
        assert_eq!(code("v1", "PersistentVolume", None, &bad), 403);
    }
}

fn affinity_spec() -> core::PodSpec {
    let term = |ns: &str| core::PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_labels: BTreeMap::from([("app".into(), "db".into())]),
            ..Default::default()
        }),
        namespaces: vec![ns.into()],
        topology_key: st("kubernetes.io/hostname"),
        namespace_selector: ns_selector(ns),
        ..Default::default()
    };
    let weighted = |ns: &str| core::WeightedPodAffinityTerm {
        weight: Some(10),
        pod_affinity_term: Some(term(ns)),
    };
    core::PodSpec {
        containers: vec![core::Container {
            name: st("c"),
            image: st("nginx"),
            ..Default::default()
        }],
        affinity: Some(core::Affinity {
            pod_affinity: Some(core::PodAffinity {
                required_during_scheduling_ignored_during_execution: vec![term("a")],
                preferred_during_scheduling_ignored_during_execution: vec![weighted("b")],
            }),
            pod_anti_affinity: Some(core::PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: vec![term("c")],
                preferred_during_scheduling_ignored_during_execution: vec![weighted("d")],
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Every affinity term of the (upstream) pod spec names only the tenant's namespaces.
fn assert_affinity_up(spec: &core::PodSpec) {
    let aff = spec.affinity.as_ref().unwrap();
    let pa = aff.pod_affinity.as_ref().unwrap();
    let paa = aff.pod_anti_affinity.as_ref().unwrap();
    let terms = pa
        .required_during_scheduling_ignored_during_execution
        .iter()
        .chain(&paa.required_during_scheduling_ignored_during_execution)
        .chain(
            pa.preferred_during_scheduling_ignored_during_execution
                .iter()
                .chain(&paa.preferred_during_scheduling_ignored_during_execution)
                .filter_map(|w| w.pod_affinity_term.as_ref()),
        );
    let mut n = 0;
    for t in terms {
        n += 1;
        assert!(
            t.namespaces.iter().all(|x| x.starts_with("foofoo-")),
            "{t:?}"
        );
        let sel = t.namespace_selector.as_ref().unwrap();
        assert!(sel.match_labels.values().all(|x| x.starts_with("foofoo-")));
        assert_eq!(sel.match_expressions, vec![tenant_term()]);
        assert_eq!(t.topology_key.as_deref(), Some("kubernetes.io/hostname"));
    }
    assert_eq!(n, 4);
    assert_eq!(spec.containers[0].image.as_deref(), Some("nginx"));
}

fn template() -> Option<core::PodTemplateSpec> {
    Some(core::PodTemplateSpec {
        metadata: Some(ObjectMeta::default()),
        spec: Some(affinity_spec()),
    })
}

#[test]
fn pod_specs_of_every_workload() {
    let ns = Some("default");
    let pod = core::Pod {
        metadata: meta("p", ns),
        spec: Some(affinity_spec()),
        ..Default::default()
    };
    assert_affinity_up(&both_ways("v1", "Pod", ns, &pod).spec.unwrap());
    let pt = core::PodTemplate {
        metadata: meta("t", ns),
        template: template(),
    };
    let up = both_ways("v1", "PodTemplate", ns, &pt);
    assert_affinity_up(&up.template.unwrap().spec.unwrap());
    let rc = core::ReplicationController {
        metadata: meta("rc", ns),
        spec: Some(core::ReplicationControllerSpec {
            template: template(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let up = both_ways("v1", "ReplicationController", ns, &rc);
    assert_affinity_up(&up.spec.unwrap().template.unwrap().spec.unwrap());
    let d = apps::Deployment {
        metadata: meta("d", ns),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(2),
            template: template(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let up = both_ways("apps/v1", "Deployment", ns, &d);
    let spec = up.spec.unwrap();
    assert_eq!(spec.replicas, Some(2));
    assert_affinity_up(&spec.template.unwrap().spec.unwrap());
    let rs = apps::ReplicaSet {
        metadata: meta("rs", ns),
        spec: Some(apps::ReplicaSetSpec {
            template: template(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let up = both_ways("apps/v1", "ReplicaSet", ns, &rs);
    assert_affinity_up(&up.spec.unwrap().template.unwrap().spec.unwrap());
    let ds = apps::DaemonSet {
        metadata: meta("ds", ns),
        spec: Some(apps::DaemonSetSpec {
            template: template(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let up = both_ways("apps/v1", "DaemonSet", ns, &ds);
    assert_affinity_up(&up.spec.unwrap().template.unwrap().spec.unwrap());
    let job = batch::Job {
        metadata: meta("j", ns),
        spec: Some(batch::JobSpec {
            template: template(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let up = both_ways("batch/v1", "Job", ns, &job);
    assert_affinity_up(&up.spec.unwrap().template.unwrap().spec.unwrap());
    let cj = batch::CronJob {
        metadata: meta("cj", ns),
        spec: Some(batch::CronJobSpec {
            schedule: st("* * * * *"),
            job_template: Some(batch::JobTemplateSpec {
                metadata: None,
                spec: job.spec.clone(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let up = both_ways("batch/v1", "CronJob", ns, &cj);
    let js = up.spec.unwrap().job_template.unwrap().spec.unwrap();
    assert_affinity_up(&js.template.unwrap().spec.unwrap());
}

#[test]
fn stateful_sets_with_claim_templates() {
    let ss = apps::StatefulSet {
        metadata: meta("db", Some("default")),
        spec: Some(apps::StatefulSetSpec {
            service_name: st("db"),
            template: template(),
            volume_claim_templates: vec![core::PersistentVolumeClaim {
                metadata: meta("data", None),
                spec: Some(claim_spec()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let up = both_ways("apps/v1", "StatefulSet", Some("default"), &ss);
    let spec = up.spec.unwrap();
    assert_eq!(spec.service_name.as_deref(), Some("db"));
    let claim = spec.volume_claim_templates[0].spec.clone().unwrap();
    assert_eq!(claim.volume_name.as_deref(), Some("foofoo-vol"));
    assert_eq!(
        claim.data_source_ref.unwrap().namespace.as_deref(),
        Some("foofoo-other")
    );
    assert_affinity_up(&spec.template.unwrap().spec.unwrap());
}

#[test]
fn controller_revisions_and_metadata_only_kinds() {
    let cr = apps::ControllerRevision {
        metadata: meta("web-1", Some("default")),
        revision: Some(3),
        ..Default::default()
    };
    let up = both_ways("apps/v1", "ControllerRevision", Some("default"), &cr);
    assert_eq!(
        up.metadata.unwrap().namespace.as_deref(),
        Some("foofoo-default")
    );
    assert_eq!(up.revision, Some(3));
    let cm = core::ConfigMap {
        metadata: meta("c", Some("default")),
        data: BTreeMap::from([("k".into(), "foofoo-v".into())]),
        ..Default::default()
    };
    let up = both_ways("v1", "ConfigMap", Some("default"), &cm);
    assert_eq!(up.data["k"], "foofoo-v");
}

#[test]
fn volume_secrets_ephemeral_claims_and_status_references() {
    // A volume plugin reads a PV's secrets with the platform's rights.
    let secret = |ns: &str| {
        Some(core::SecretReference {
            name: st("creds"),
            namespace: st(ns),
        })
    };
    let pv = core::PersistentVolume {
        metadata: meta("vol", None),
        spec: Some(core::PersistentVolumeSpec {
            persistent_volume_source: Some(core::PersistentVolumeSource {
                csi: Some(core::CSIPersistentVolumeSource {
                    driver: st("csi.example.com"),
                    volume_handle: st("h1"),
                    node_publish_secret_ref: secret("secrets"),
                    controller_expand_secret_ref: secret("secrets"),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let c = ctx();
    let up: core::PersistentVolume = unwrap(
        &translate_protobuf_body(&c, None, None, &wrap("v1", "PersistentVolume", &pv)).unwrap(),
    );
    let csi = up
        .spec
        .clone()
        .unwrap()
        .persistent_volume_source
        .unwrap()
        .csi
        .unwrap();
    assert_eq!(
        csi.node_publish_secret_ref.unwrap().namespace.as_deref(),
        Some("foofoo-secrets")
    );
    assert_eq!(
        csi.controller_expand_secret_ref
            .unwrap()
            .namespace
            .as_deref(),
        Some("foofoo-secrets")
    );
    assert_eq!(csi.volume_handle.as_deref(), Some("h1"));
    let down = protobuf_down(&c, None, &wrap("v1", "PersistentVolume", &up))
        .unwrap()
        .unwrap();
    let back: core::PersistentVolume = unwrap(&down);
    assert_eq!(back.spec, pv.spec);

    // An ephemeral volume's claim template is a claim.
    let mut spec = affinity_spec();
    spec.volumes = vec![core::Volume {
        name: st("scratch"),
        volume_source: Some(core::VolumeSource {
            ephemeral: Some(core::EphemeralVolumeSource {
                volume_claim_template: Some(core::PersistentVolumeClaimTemplate {
                    metadata: None,
                    spec: Some(claim_spec()),
                }),
            }),
            ..Default::default()
        }),
    }];
    let pod = core::Pod {
        metadata: meta("p", Some("default")),
        spec: Some(spec),
        ..Default::default()
    };
    let up = both_ways("v1", "Pod", Some("default"), &pod);
    let claim = up.spec.unwrap().volumes[0]
        .volume_source
        .clone()
        .unwrap()
        .ephemeral
        .unwrap()
        .volume_claim_template
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(claim.volume_name.as_deref(), Some("foofoo-vol"));
    assert_eq!(
        claim.data_source_ref.unwrap().namespace.as_deref(),
        Some("foofoo-other")
    );

    // A CronJob's status names its jobs; a ServiceAccount its token secrets.
    let stored = batch::CronJob {
        metadata: meta("cj", Some("foofoo-default")),
        status: Some(batch::CronJobStatus {
            active: vec![core::ObjectReference {
                kind: st("Job"),
                namespace: st("foofoo-default"),
                name: st("cj-1"),
                api_version: st("batch/v1"),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let down = protobuf_down(&c, None, &wrap("batch/v1", "CronJob", &stored))
        .unwrap()
        .unwrap();
    let cj: batch::CronJob = unwrap(&down);
    assert_eq!(
        cj.status.unwrap().active[0].namespace.as_deref(),
        Some("default")
    );
    let sa = core::ServiceAccount {
        metadata: meta("ci", Some("default")),
        secrets: vec![core::ObjectReference {
            name: st("ci-token"),
            namespace: st("default"),
            ..Default::default()
        }],
        ..Default::default()
    };
    let up = both_ways("v1", "ServiceAccount", Some("default"), &sa);
    assert_eq!(up.secrets[0].namespace.as_deref(), Some("foofoo-default"));
}
