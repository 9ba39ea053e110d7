//! A sleeping tenant sees its workloads as it left them (docs/operations.md "Sleep and
//! wake"), on the way down: upstream a sleep scales its Deployments, StatefulSets and standalone ReplicaSets to
//! zero and suspends its CronJobs, recording what they were in [`SLEPT_ANNOTATION`]; on the
//! way down paddock shows the recorded value instead, so that `kubectl get deploy` says
//! `0/3`, `-o yaml` says `replicas: 3`, and the tenant's tools (Helm, GitOps) see no drift to
//! fight.
//!
//! - `spec.replicas` reads the recorded count while upstream's is still zero, a CronJob's
//!   `spec.suspend` reads `false` while upstream's is still `true` (a record that no longer
//!   describes the object, written back by the tenant, changes nothing: `workloads`).
//! - `status` is upstream's: no pod runs while the tenant sleeps, and the status says so
//!   (READY `0/3`, AVAILABLE 0), which is also what the tenant sees for the few seconds after
//!   it wakes.
//! - In a Table (`kubectl get`) the cells that show the spec follow: a Deployment's and a
//!   StatefulSet's READY `<ready>/<replicas>`, a ReplicaSet's DESIRED, a CronJob's SUSPEND.
//!
//! The record stays visible (`metadata.annotations`): it is the tenant's to read, and a
//! tenant's write wakes the tenant before it is forwarded, so it never meets a sleeping object.

use serde_json::{Map, Value};

/// What a sleep changed to stop a workload (the value it had). Declared here, with the kinds
/// a sleep stops, because the way down reads it; `lifecycle::workloads` writes it.
pub const SLEPT_ANNOTATION: &str = "paddock.io/slept";

/// The kinds a sleep stops, by upstream group and kind, and whether each is scaled to zero
/// (or, a CronJob, suspended). `lifecycle::workloads::Workload::SLEEPING` names the same
/// kinds (a test there checks that they agree).
pub const SLEEPING_KINDS: [(&str, &str, bool); 4] = [
    ("apps", "Deployment", true),
    ("apps", "StatefulSet", true),
    ("apps", "ReplicaSet", true),
    ("batch", "CronJob", false),
];

/// What a sleep recorded on one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// Scaled to zero from this count.
    Replicas(u64),
    /// A CronJob suspended from `suspend: false`.
    Unsuspended,
}

/// Whether the kind is scaled to zero by a sleep (`Some(true)`), suspended (`Some(false)`),
/// or left alone (`None`).
fn scaled(group: &str, kind: &str) -> Option<bool> {
    SLEEPING_KINDS
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map(|(_, _, scaled)| *scaled)
}

/// Whether objects of this kind may carry a sleep's record (the splice fast path leaves
/// those that do to the DOM path).
pub fn sleeps(group: &str, kind: &str) -> bool {
    scaled(group, kind).is_some()
}

/// What a sleep recorded in `metadata` of an object of `group`/`kind`, if anything (whether
/// the object is still asleep is for the caller to check against its spec or its cells).
pub fn recorded(group: &str, kind: &str, metadata: Option<&Value>) -> Option<Left> {
    let scaled = scaled(group, kind)?;
    let rec = metadata?
        .get("annotations")?
        .get(SLEPT_ANNOTATION)?
        .as_str()?;
    if scaled {
        rec.parse::<u32>()
            .ok()
            .map(|n| Left::Replicas(u64::from(n)))
    } else {
        (rec == "false").then_some(Left::Unsuspended)
    }
}

/// The object of `group`/`kind` as the tenant left it (the module's comment).
pub fn object_as_left(group: &str, kind: &str, o: &mut Map<String, Value>) {
    let Some(left) = recorded(group, kind, o.get("metadata")) else {
        return;
    };
    let Some(Value::Object(spec)) = o.get_mut("spec") else {
        return;
    };
    match left {
        Left::Replicas(n) => {
            if spec.get("replicas").and_then(Value::as_u64) == Some(0) {
                spec.insert("replicas".into(), Value::from(n));
            }
        }
        Left::Unsuspended => {
            if spec.get("suspend") == Some(&Value::Bool(true)) {
                spec.insert("suspend".into(), Value::Bool(false));
            }
        }
    }
}

/// Where a Table's cells show a workload's spec.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpecCells {
    /// READY, `<ready>/<replicas>` (Deployments, StatefulSets).
    pub ready: Option<usize>,
    /// DESIRED (ReplicaSets).
    pub desired: Option<usize>,
    /// SUSPEND (CronJobs).
    pub suspend: Option<usize>,
}

impl SpecCells {
    /// Notes column `i` named `name` if it is one of those.
    pub fn note(&mut self, i: usize, name: &str) {
        let slot = match name {
            "Ready" => &mut self.ready,
            "Desired" => &mut self.desired,
            "Suspend" => &mut self.suspend,
            _ => return,
        };
        if slot.is_none() {
            *slot = Some(i);
        }
    }
}

/// The cells of a row whose object recorded `left`, as the tenant left it; a cell that does
/// not show the object asleep (a stale record) is kept.
pub fn cells_as_left(left: Left, at: SpecCells, cells: &mut [Value]) {
    fn cell(cells: &mut [Value], i: Option<usize>) -> Option<&mut Value> {
        i.and_then(|i| cells.get_mut(i))
    }
    match left {
        Left::Replicas(n) => {
            if let Some(c) = cell(cells, at.ready)
                && let Some(ready) = c.as_str().and_then(|s| s.strip_suffix("/0"))
            {
                *c = Value::String(format!("{ready}/{n}"));
            }
            if let Some(c) = cell(cells, at.desired)
                && c.as_u64() == Some(0)
            {
                *c = Value::from(n);
            }
        }
        Left::Unsuspended => {
            if let Some(c) = cell(cells, at.suspend)
                && c == &Value::Bool(true)
            {
                *c = Value::Bool(false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn an_asleep_workload_reads_as_it_was_left() {
        let meta = json!({"name": "web", "annotations": {SLEPT_ANNOTATION: "3"}});
        let mut d = obj(json!({"metadata": meta, "spec": {"replicas": 0}, "status": {}}));
        object_as_left("apps", "Deployment", &mut d);
        assert_eq!(d["spec"]["replicas"], 3);
        assert_eq!(d["status"], json!({}));
        // Stale (written back awake at 5): as it is.
        let mut back = obj(json!({"metadata": meta, "spec": {"replicas": 5}}));
        object_as_left("apps", "Deployment", &mut back);
        assert_eq!(back["spec"]["replicas"], 5);
        // A suspension's record is not a sleep's.
        let mut stopped = obj(
            json!({"metadata": {"annotations": {"paddock.io/stopped": "3"}}, "spec": {"replicas": 0}}),
        );
        object_as_left("apps", "Deployment", &mut stopped);
        assert_eq!(stopped["spec"]["replicas"], 0);
        // Another kind with the annotation: untouched.
        let mut cm = obj(json!({"metadata": meta, "spec": {"replicas": 0}}));
        object_as_left("", "ConfigMap", &mut cm);
        assert_eq!(cm["spec"]["replicas"], 0);
        let mut cron = obj(
            json!({"metadata": {"annotations": {SLEPT_ANNOTATION: "false"}}, "spec": {"suspend": true}}),
        );
        object_as_left("batch", "CronJob", &mut cron);
        assert_eq!(cron["spec"]["suspend"], false);
    }

    #[test]
    fn table_cells_follow() {
        let mut at = SpecCells::default();
        for (i, name) in ["Name", "Ready", "Up-to-date", "Available", "Age"]
            .iter()
            .enumerate()
        {
            at.note(i, name);
        }
        let mut cells = vec![json!("web"), json!("0/0"), json!(0), json!(0), json!("5m")];
        cells_as_left(Left::Replicas(3), at, &mut cells);
        assert_eq!(cells[1], "0/3");
        let mut awake = vec![json!("web"), json!("2/2"), json!(2), json!(2), json!("5m")];
        cells_as_left(Left::Replicas(3), at, &mut awake);
        assert_eq!(awake[1], "2/2");
        let rs = SpecCells {
            desired: Some(1),
            ..SpecCells::default()
        };
        let mut cells = vec![json!("web-1"), json!(0), json!(0)];
        cells_as_left(Left::Replicas(2), rs, &mut cells);
        assert_eq!(cells[1], 2);
        let cron = SpecCells {
            suspend: Some(2),
            ..SpecCells::default()
        };
        let mut cells = vec![json!("c"), json!("*/1 * * * *"), json!(true)];
        cells_as_left(Left::Unsuspended, cron, &mut cells);
        assert_eq!(cells[2], false);
        assert_eq!(
            recorded(
                "apps",
                "ReplicaSet",
                Some(&json!({"annotations": {SLEPT_ANNOTATION: "2"}}))
            ),
            Some(Left::Replicas(2))
        );
        assert_eq!(recorded("apps", "ReplicaSet", Some(&json!({}))), None);
    }
}
