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
//! paddock impersonates tenant identities here (the default); `isolation_front_proxy.rs` runs
//! the same suite with paddock as the apiserver's authenticating front proxy.

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
#[path = "isolation/one_cluster.rs"]
mod one_cluster;
#[path = "isolation/policy_cases.rs"]
mod policy_cases;
#[path = "isolation/suite.rs"]
mod suite;

use cases::*;
use deletion::*;
use judge::*;
use model::*;
use objects::*;
use one_cluster::*;
use policy_cases::*;
use suite::*;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use paddock_e2e::process::Output;
use paddock_e2e::testbed::workspace_root;
use paddock_e2e::token::token_kubeconfig;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

#[test]
fn isolation() -> Result<()> {
    isolation_in(false)
}
