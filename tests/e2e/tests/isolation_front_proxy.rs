//! The isolation suite (`isolation.rs`: the same attack table, controls, bypass and deletion)
//! with paddock as the upstream apiserver's authenticating front proxy
//! (`upstream_identity_mode = "front-proxy"`, the test bed's front-proxy client certificate):
//! tenant identities go upstream as `X-Remote-*` headers, and the bypass asserts the
//! attacker's identity straight at the apiserver the same way (a forwarder with that
//! certificate), so upstream RBAC and the admission guard are what refuse it.
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
fn isolation_front_proxy() -> Result<()> {
    isolation_in(true)
}
