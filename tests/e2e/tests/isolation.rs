//! The isolation suite: one control plane, one paddock, two tenants (`alphaa` the
//! attacker, `bravoo` the victim) and a platform namespace with platform objects.
//!
//! 1. **Attack cases through paddock** (a table, [`cases`]): each a concrete kubectl command (or
//!    raw request) by the attacker, paired with a positive control (the same action inside its
//!    own space) that must succeed. Every attack must fail or show nothing of anyone else.
//! 2. **Bypass**: the same attacks with translation bypassed, sent straight to the apiserver as
//!    the attacker's impersonated identity (and as its pods' service-account token) with
//!    upstream names: upstream RBAC and the admission guard alone must refuse every
//!    cross-tenant write and every cluster-wide read.
//! 3. **Deletion**: a tenant with namespaces, CRDs, ClusterRoles and running pods is deleted;
//!    nothing with its label or prefix remains, platform objects are unchanged, its certificate
//!    gets 401.
//!
//! Prints a table of results; fails if any attack got through or any control failed.
//! `PADDOCK_ISOLATION_CASES=word,word` runs only cases whose id contains one of the words.

#[path = "isolation/cases.rs"]
mod cases;
#[path = "isolation/deletion.rs"]
mod deletion;
#[path = "isolation/judge.rs"]
mod judge;
#[path = "isolation/model.rs"]
mod model;
#[path = "isolation/objects.rs"]
mod objects;
#[path = "isolation/policy_cases.rs"]
mod policy_cases;
#[path = "isolation/suite.rs"]
mod suite;

use cases::*;
use deletion::*;
use judge::*;
use model::*;
use objects::*;
use policy_cases::*;
use suite::*;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use paddock_e2e::process::Output;
use paddock_e2e::testbed::workspace_root;
use paddock_e2e::token::token_kubeconfig;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

#[test]
fn isolation() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    // With the admission webhook: the tenant policy is part of what the attacks meet.
    let paddock = Paddock::start_with_args(&cp, StoreKind::Etcd, "paddock", &cp.admission_args()?)
        .context("starting paddock")?;
    let result = run_all(&cp, &paddock);
    if result.is_err() {
        let dest = workspace_root().join("target").join("e2e-logs-isolation");
        let _ = std::fs::create_dir_all(&dest);
        if let Ok(rd) = std::fs::read_dir(cp.dir().join("logs")) {
            for e in rd.flatten() {
                let _ = std::fs::copy(e.path(), dest.join(e.file_name()));
            }
        }
        eprintln!("component logs copied to {}", dest.display());
    }
    result
}

fn run_all(cp: &ControlPlane, paddock: &Paddock) -> Result<()> {
    let up = cp.kubectl_admin()?;
    let arena = Arena {
        paddock,
        up: up.clone(),
        direct_kubeconfig: cp.admin_kubeconfig(),
        bypass_at: vec![("up", up.clone())],
        place_on: None,
        extra_cases: Vec::new(),
        report: "isolation-report.md",
    };
    run_suite(&arena, || deletion_test(cp, paddock, &up))
}
