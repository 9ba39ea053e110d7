//! paddock's end-to-end harness: a real control plane on loopback (tests/testbed), paddock as a
//! real process, the pinned kubectl and the `kube` crate as clients, scenarios as data.
//!
//! - [`testbed::ControlPlane`]: build.sh + up.sh in a temp dir; down.sh on drop; a reaper tears
//!   it down if the test process dies.
//! - [`paddock::Paddock`]: `paddock ca init` + `paddock serve`, tenants via the CLI.
//! - [`etcd_cluster::EtcdCluster`]: three etcd members with TLS and client certificates for
//!   paddock's store, members killed and restarted one at a time.
//! - [`kubectl::Kubectl`]: kubectl with one kubeconfig; failures show command, output, log tail.
//! - [`scenario`]: `tests/e2e/scenarios/*.yaml` and their runner.
//! - [`tools`]: Go programs of the repository, helm and h2spec, built cache-aware.
//! - [`real_node`], [`operators`]: the test bed's real node (bridges, images, the egress guard,
//!   paddock with the in-cluster path) and the operators test's helpers.
//! - [`h2_attack`]: a raw-frame HTTP/2 client over TLS for the front door's abuse test.

pub mod crd_first;
pub mod cred;
pub mod etcd_cluster;
pub mod forwarder;
pub mod guard_check;
pub mod h2_attack;
pub mod ha;
pub mod http;
pub mod identity_check;
pub mod kube_client;
pub mod kubectl;
pub mod load;
pub mod ns_bodies;
pub mod oidc;
pub mod operators;
pub mod paddock;
pub mod portable;
pub mod process;
pub mod real_node;
pub mod running;
pub mod scenario;
pub mod testbed;
pub mod token;
pub mod tools;

pub use etcd_cluster::EtcdCluster;
pub use kubectl::Kubectl;
pub use paddock::{Paddock, StoreKind};
pub use testbed::ControlPlane;
