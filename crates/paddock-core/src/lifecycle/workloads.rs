//! Stopping a tenant's workloads and bringing them back, as merge patches of the workload
//! objects, for two reasons ([`Mark`]): a suspension's `--stop-workloads` (brought back at
//! resume) and a tenant's sleep (brought back when it wakes, docs/operations.md "Sleep and
//! wake"). What paddock changed is recorded on the object itself, in the reason's annotation
//! ([`STOPPED_ANNOTATION`], [`SLEPT_ANNOTATION`]), so that resume or wake puts back exactly
//! that and nothing else, and the two never undo each other.
//!
//! | kind | stopped by | recorded | suspension | sleep |
//! |---|---|---|---|---|
//! | Deployment, StatefulSet, ReplicaSet without a controller | `spec.replicas: 0` | the replicas before | yes | yes |
//! | DaemonSet | a node selector no node has (`paddock.io/suspended: "true"`) | `nodeSelector` | yes | no |
//! | Job that has not finished | `spec.suspend: true` | `false` | yes | no |
//! | CronJob | `spec.suspend: true` | `false` | yes | yes |
//!
//! Sleep leaves DaemonSets and Jobs alone: a Job that runs is work in progress, not idleness,
//! and stopping a DaemonSet changes its pod template (a new revision the tenant would see).
//!
//! An object already at zero or already suspended is left as it is (and not touched at
//! resume). Pods without a controller are left running: a deleted pod could not be brought
//! back. While the tenant is suspended no pod is created in its namespaces anyway (the guard,
//! `provision::suspended`): a controller that lost a pod meanwhile cannot replace it, and
//! retries with a backoff that grows with the suspension (kube-controller-manager's: up to
//! 1000 s). At resume, every controller short of pods is touched ([`kick_patch`]: an
//! annotation), which queues it at once.
//!
//! The annotations are the tenant's to read (and, once resumed or awake, to write: they only
//! change its own replica counts, which it may anyway); their values are only ever read as a
//! number or one of two words, never applied as a patch. A sleep's record that no longer
//! describes the object (the tenant, awake, wrote it back with a count that is not zero, or
//! unsuspended it) is stale: it is neither restored nor does it keep the object from being
//! stopped again. A suspension's record stands until resume.

use serde_json::{Value, json};

use crate::provision::suspended::SUSPENDED_LABEL;

/// What a suspension changed to stop a workload (the value it had).
pub const STOPPED_ANNOTATION: &str = "paddock.io/stopped";
/// What a sleep changed to stop a workload (the value it had; read back on the way down).
pub use crate::rules::asleep::SLEPT_ANNOTATION;

/// Why paddock stopped a workload: each reason has its annotation and its kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// `tenant suspend --stop-workloads`.
    Suspension,
    /// The tenant's sleep.
    Sleep,
}

impl Mark {
    /// Where the reason records what it changed.
    pub fn annotation(self) -> &'static str {
        match self {
            Mark::Suspension => STOPPED_ANNOTATION,
            Mark::Sleep => SLEPT_ANNOTATION,
        }
    }

    /// The kinds the reason stops, parents first.
    pub fn kinds(self) -> &'static [Workload] {
        match self {
            Mark::Suspension => &Workload::ALL,
            Mark::Sleep => &Workload::SLEEPING,
        }
    }
}
/// When a resume touched a controller short of pods.
pub const RESUMED_ANNOTATION: &str = "paddock.io/resumed";

/// The workload kinds a tenant's suspension stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Deployment,
    StatefulSet,
    ReplicaSet,
    DaemonSet,
    Job,
    CronJob,
}

impl Workload {
    /// Every kind, parents before children (a Deployment is stopped before its ReplicaSets
    /// are looked at; its ReplicaSets have a controller and are not stopped themselves).
    pub const ALL: [Workload; 6] = [
        Workload::Deployment,
        Workload::StatefulSet,
        Workload::ReplicaSet,
        Workload::DaemonSet,
        Workload::CronJob,
        Workload::Job,
    ];

    /// The kinds a sleep stops (the module's table).
    pub const SLEEPING: [Workload; 4] = [
        Workload::Deployment,
        Workload::StatefulSet,
        Workload::ReplicaSet,
        Workload::CronJob,
    ];

    /// The collection of this kind in upstream namespace `ns`.
    pub fn collection(self, ns: &str) -> String {
        let (group, resource) = match self {
            Workload::Deployment => ("apps", "deployments"),
            Workload::StatefulSet => ("apps", "statefulsets"),
            Workload::ReplicaSet => ("apps", "replicasets"),
            Workload::DaemonSet => ("apps", "daemonsets"),
            Workload::Job => ("batch", "jobs"),
            Workload::CronJob => ("batch", "cronjobs"),
        };
        format!("/apis/{group}/v1/namespaces/{ns}/{resource}")
    }

    /// Stopped by scaling to zero.
    pub fn scaled(self) -> bool {
        matches!(
            self,
            Workload::Deployment | Workload::StatefulSet | Workload::ReplicaSet
        )
    }
}

fn recorded(m: Mark, obj: &Value) -> Option<&str> {
    obj["metadata"]["annotations"][m.annotation()].as_str()
}

/// Whether a record on `obj` still describes it: the object is still stopped (at zero, or
/// suspended). A sleep's record that does not is stale ([`stop_patch`] stops it again).
fn still_stopped(w: Workload, obj: &Value) -> bool {
    match w {
        _ if w.scaled() => obj["spec"]["replicas"].as_u64() == Some(0),
        Workload::DaemonSet => true,
        _ => suspended(obj),
    }
}

/// `spec.replicas`, 1 when absent (the apiserver's default).
fn replicas(obj: &Value) -> u64 {
    obj["spec"]["replicas"].as_u64().unwrap_or(1)
}

fn has_controller(obj: &Value) -> bool {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| refs.iter().any(|r| r["controller"] == json!(true)))
}

fn finished(job: &Value) -> bool {
    !job["status"]["completionTime"].is_null()
        || job["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter().any(|c| {
                matches!(c["type"].as_str(), Some("Complete" | "Failed")) && c["status"] == "True"
            })
        })
}

fn suspended(obj: &Value) -> bool {
    obj["spec"]["suspend"] == json!(true)
}

fn annotate(m: Mark, value: Value) -> Value {
    json!({"annotations": {m.annotation(): value}})
}

/// The merge patch that stops `obj` of kind `w` for reason `m`, recording what it was; `None`
/// when there is nothing to stop (at zero, suspended, finished, a ReplicaSet of a Deployment,
/// stopped already, or a kind the reason leaves alone).
pub fn stop_patch(m: Mark, w: Workload, obj: &Value) -> Option<Value> {
    // A suspension's record stands until resume (a count a platform autoscaler set meanwhile
    // is kept then); a sleep's that no longer describes the object is stale.
    let stands = m == Mark::Suspension || still_stopped(w, obj);
    if !m.kinds().contains(&w) || recorded(m, obj).is_some() && stands {
        return None;
    }
    let annotate = |v| annotate(m, v);
    match w {
        _ if w.scaled() => {
            let n = replicas(obj);
            (n > 0 && !(w == Workload::ReplicaSet && has_controller(obj))).then(
                || json!({"metadata": annotate(json!(n.to_string())), "spec": {"replicas": 0}}),
            )
        }
        Workload::DaemonSet => Some(json!({
            "metadata": annotate(json!("nodeSelector")),
            "spec": {"template": {"spec": {"nodeSelector": {SUSPENDED_LABEL: "true"}}}}
        })),
        Workload::Job if finished(obj) => None,
        _ => (!suspended(obj))
            .then(|| json!({"metadata": annotate(json!("false")), "spec": {"suspend": true}})),
    }
}

/// The merge patch that brings back what [`stop_patch`] recorded for `m` on `obj`; `None` when
/// paddock did not stop it. A count changed by someone else meanwhile (not zero any more) is
/// kept; a value paddock did not write only loses the annotation.
pub fn restore_patch(m: Mark, w: Workload, obj: &Value) -> Option<Value> {
    let was = recorded(m, obj)?;
    let mut patch = json!({"metadata": annotate(m, Value::Null)});
    match w {
        _ if w.scaled() => {
            if let Ok(n) = was.parse::<u32>()
                && obj["spec"]["replicas"].as_u64() == Some(0)
            {
                patch["spec"] = json!({"replicas": n});
            }
        }
        Workload::DaemonSet => {
            if was == "nodeSelector" {
                patch["spec"] =
                    json!({"template": {"spec": {"nodeSelector": {SUSPENDED_LABEL: null}}}});
            }
        }
        _ => {
            if was == "false" && suspended(obj) {
                patch["spec"] = json!({"suspend": false});
            }
        }
    }
    Some(patch)
}

/// Whether `obj` is a controller of pods that has fewer than it wants (it may be waiting out
/// a backoff after pod creations the suspension refused).
pub fn short_of_pods(w: Workload, obj: &Value) -> bool {
    let status = &obj["status"];
    let count = |k: &str| status[k].as_u64().unwrap_or(0);
    match w {
        Workload::ReplicaSet | Workload::StatefulSet => replicas(obj) > count("replicas"),
        Workload::DaemonSet => count("desiredNumberScheduled") > count("currentNumberScheduled"),
        Workload::Job => !finished(obj) && !suspended(obj),
        Workload::Deployment | Workload::CronJob => false,
    }
}

/// The touch that queues a controller at once: an annotation with the resume's time.
pub fn kick_patch(now: &str) -> Value {
    json!({"metadata": {"annotations": {RESUMED_ANNOTATION: now}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop_then_restore(w: Workload, obj: Value) -> (Value, Value) {
        let stop = stop_patch(Mark::Suspension, w, &obj).unwrap();
        let mut stopped = obj.clone();
        merge(&mut stopped, &stop);
        assert!(
            stop_patch(Mark::Suspension, w, &stopped).is_none(),
            "stopped twice: {stopped}"
        );
        let restore = restore_patch(Mark::Suspension, w, &stopped).unwrap();
        let mut back = stopped.clone();
        merge(&mut back, &restore);
        (stopped, back)
    }

    /// RFC 7386.
    fn merge(target: &mut Value, patch: &Value) {
        let Some(p) = patch.as_object() else {
            *target = patch.clone();
            return;
        };
        if !target.is_object() {
            *target = json!({});
        }
        for (k, v) in p {
            if v.is_null() {
                target.as_object_mut().map(|t| t.remove(k));
            } else {
                merge(&mut target[k.as_str()], v);
            }
        }
    }

    #[test]
    fn a_scaled_workload_goes_to_zero_and_back_to_its_count() {
        let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 3}});
        let (stopped, back) = stop_then_restore(Workload::Deployment, d.clone());
        assert_eq!(stopped["spec"]["replicas"], 0);
        assert_eq!(stopped["metadata"]["annotations"][STOPPED_ANNOTATION], "3");
        assert_eq!(back["spec"]["replicas"], 3);
        assert!(
            back["metadata"]["annotations"]
                .as_object()
                .unwrap()
                .is_empty()
        );
        // No replicas written: the default, one.
        let (_, back) = stop_then_restore(Workload::StatefulSet, json!({"spec": {}}));
        assert_eq!(back["spec"]["replicas"], 1);
        // At zero, or a Deployment's ReplicaSet: nothing to stop.
        assert!(
            stop_patch(
                Mark::Suspension,
                Workload::Deployment,
                &json!({"spec": {"replicas": 0}})
            )
            .is_none()
        );
        let owned = json!({"metadata": {"ownerReferences": [{"kind": "Deployment", "controller": true}]}, "spec": {"replicas": 2}});
        assert!(stop_patch(Mark::Suspension, Workload::ReplicaSet, &owned).is_none());
        // Scaled by someone else meanwhile: kept, the record dropped.
        let moved = json!({"metadata": {"annotations": {STOPPED_ANNOTATION: "3"}}, "spec": {"replicas": 5}});
        assert_eq!(
            restore_patch(Mark::Suspension, Workload::Deployment, &moved),
            Some(json!({"metadata": {"annotations": {STOPPED_ANNOTATION: null}}}))
        );
        // A value paddock never wrote is never applied.
        let forged = json!({"metadata": {"annotations": {STOPPED_ANNOTATION: "{\"spec\":{}}"}}, "spec": {"replicas": 0}});
        assert_eq!(
            restore_patch(Mark::Suspension, Workload::Deployment, &forged),
            Some(json!({"metadata": {"annotations": {STOPPED_ANNOTATION: null}}}))
        );
    }

    #[test]
    fn daemonsets_lose_their_nodes_and_jobs_are_suspended() {
        let ds = json!({"spec": {"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}}});
        let (stopped, back) = stop_then_restore(Workload::DaemonSet, ds.clone());
        assert_eq!(
            stopped["spec"]["template"]["spec"]["nodeSelector"],
            json!({"disk": "ssd", "paddock.io/suspended": "true"})
        );
        assert_eq!(
            back["spec"]["template"]["spec"]["nodeSelector"],
            json!({"disk": "ssd"})
        );
        for w in [Workload::Job, Workload::CronJob] {
            let (stopped, back) = stop_then_restore(w, json!({"spec": {"suspend": false}}));
            assert_eq!(stopped["spec"]["suspend"], true);
            assert_eq!(back["spec"]["suspend"], false);
            // Suspended by its owner already: left alone, then and at resume.
            assert!(stop_patch(Mark::Suspension, w, &json!({"spec": {"suspend": true}})).is_none());
        }
        let done =
            json!({"spec": {}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        assert!(stop_patch(Mark::Suspension, Workload::Job, &done).is_none());
        assert!(restore_patch(Mark::Suspension, Workload::Job, &done).is_none());
    }

    #[test]
    fn sleep_records_apart_from_a_suspension_and_only_its_kinds() {
        let d = json!({"spec": {"replicas": 3}});
        let slept = stop_patch(Mark::Sleep, Workload::Deployment, &d).unwrap();
        assert_eq!(
            slept,
            json!({"metadata": {"annotations": {SLEPT_ANNOTATION: "3"}}, "spec": {"replicas": 0}})
        );
        let mut asleep = d.clone();
        merge(&mut asleep, &slept);
        // A suspension finds it at zero: nothing of its own to stop, nor to restore.
        assert!(stop_patch(Mark::Suspension, Workload::Deployment, &asleep).is_none());
        assert!(restore_patch(Mark::Suspension, Workload::Deployment, &asleep).is_none());
        assert_eq!(
            restore_patch(Mark::Sleep, Workload::Deployment, &asleep),
            Some(
                json!({"metadata": {"annotations": {SLEPT_ANNOTATION: null}}, "spec": {"replicas": 3}})
            )
        );
        // DaemonSets and Jobs keep running; CronJobs are suspended.
        assert!(stop_patch(Mark::Sleep, Workload::DaemonSet, &json!({"spec": {}})).is_none());
        assert!(stop_patch(Mark::Sleep, Workload::Job, &json!({"spec": {}})).is_none());
        assert!(stop_patch(Mark::Sleep, Workload::CronJob, &json!({"spec": {}})).is_some());
    }

    #[test]
    fn the_way_down_knows_the_kinds_a_sleep_stops() {
        let named = |w: Workload| match w {
            Workload::Deployment => ("apps", "Deployment"),
            Workload::StatefulSet => ("apps", "StatefulSet"),
            Workload::ReplicaSet => ("apps", "ReplicaSet"),
            Workload::DaemonSet => ("apps", "DaemonSet"),
            Workload::Job => ("batch", "Job"),
            Workload::CronJob => ("batch", "CronJob"),
        };
        let sleeping: Vec<(&str, &str, bool)> = Workload::SLEEPING
            .iter()
            .map(|w| (named(*w).0, named(*w).1, w.scaled()))
            .collect();
        assert_eq!(sleeping, crate::rules::asleep::SLEEPING_KINDS);
        for w in Workload::ALL {
            assert_eq!(
                crate::rules::asleep::sleeps(named(w).0, named(w).1),
                Workload::SLEEPING.contains(&w)
            );
        }
    }

    #[test]
    fn a_stale_record_does_not_keep_an_object_from_being_stopped_again() {
        // The tenant wrote its object back, annotation and all, once awake: 4 replicas.
        let back =
            json!({"metadata": {"annotations": {SLEPT_ANNOTATION: "3"}}, "spec": {"replicas": 4}});
        assert_eq!(
            stop_patch(Mark::Sleep, Workload::Deployment, &back),
            Some(
                json!({"metadata": {"annotations": {SLEPT_ANNOTATION: "4"}}, "spec": {"replicas": 0}})
            )
        );
        let cron = json!({"metadata": {"annotations": {SLEPT_ANNOTATION: "false"}}, "spec": {"suspend": false}});
        assert!(stop_patch(Mark::Sleep, Workload::CronJob, &cron).is_some());
        // A suspension's record stands (resume keeps the count an autoscaler set meanwhile).
        let scaled = json!({"metadata": {"annotations": {STOPPED_ANNOTATION: "3"}}, "spec": {"replicas": 2}});
        assert!(stop_patch(Mark::Suspension, Workload::Deployment, &scaled).is_none());
    }

    #[test]
    fn controllers_short_of_pods_are_touched_at_resume() {
        let rs = |want: u64, have: u64| json!({"spec": {"replicas": want}, "status": {"replicas": have}});
        assert!(short_of_pods(Workload::ReplicaSet, &rs(3, 1)));
        assert!(!short_of_pods(Workload::ReplicaSet, &rs(3, 3)));
        assert!(short_of_pods(
            Workload::StatefulSet,
            &json!({"spec": {"replicas": 1}, "status": {}})
        ));
        assert!(short_of_pods(
            Workload::DaemonSet,
            &json!({"status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 1}})
        ));
        assert!(short_of_pods(Workload::Job, &json!({"spec": {}})));
        assert!(!short_of_pods(Workload::Deployment, &rs(3, 0)));
        assert_eq!(
            kick_patch("2026-01-02T03:04:05Z"),
            json!({"metadata": {"annotations": {"paddock.io/resumed": "2026-01-02T03:04:05Z"}}})
        );
    }
}
