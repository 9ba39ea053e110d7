//! A tenant's life between creation and deletion (docs/operations.md "Suspend, protection and
//! TTL"), the pure half: which requests a suspended tenant may no longer send through paddock
//! ([`door`]), how a tenant's workloads are stopped and brought back ([`workloads`]), and when
//! a tenant's time-to-live deletes it or warns ([`expiry`]), when an idle tenant sleeps and
//! what wakes it ([`sleep`]); how a sleeping tenant sees its workloads as it left them is a
//! rule of the way down (`rules::asleep`). The guard that holds a suspended
//! tenant's own identities upstream is `provision::suspended`; the I/O is paddock-reconciler's
//! `suspend.rs` and paddock-server's `lifecycle/`.

pub mod door;
pub mod expiry;
pub mod sleep;
pub mod workloads;
