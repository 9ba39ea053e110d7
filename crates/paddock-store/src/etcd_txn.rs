//! The compare-and-swap transactions of the etcd backend, written once: every conditional
//! write (a create that must not overwrite, a swap on the revision that was read, a delete of
//! what was read and nothing newer, a first-writer-wins claim) is one of these, sent with
//! `Shared::txn` (etcd.rs).

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse, TxnResponse};

use crate::StoreError;

/// The state of a key a conditional write needs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Expect {
    /// The key does not exist (a create).
    Absent,
    /// The key exists (an update or delete of something there).
    Present,
    /// The key was last written at this revision (its `mod_revision` as read; 0 for a key
    /// read as absent), so nothing written since is lost.
    Revision(i64),
}

impl Expect {
    fn compare(self, key: Vec<u8>) -> Compare {
        match self {
            Expect::Absent => Compare::create_revision(key, CompareOp::Equal, 0),
            Expect::Present => Compare::create_revision(key, CompareOp::Greater, 0),
            Expect::Revision(r) => Compare::mod_revision(key, CompareOp::Equal, r),
        }
    }
}

/// Puts `value` at `key` if the key is as `expect`ed.
pub(crate) fn put_if(key: impl Into<Vec<u8>>, value: Vec<u8>, expect: Expect) -> Txn {
    let key = key.into();
    Txn::new()
        .when([expect.compare(key.clone())])
        .and_then([TxnOp::put(key, value, None)])
}

/// Deletes `key` if it is as `expect`ed.
pub(crate) fn delete_if(key: impl Into<Vec<u8>>, expect: Expect) -> Txn {
    let key = key.into();
    Txn::new()
        .when([expect.compare(key.clone())])
        .and_then([TxnOp::delete(key, None)])
}

/// Puts `value` at `key` if absent, else reads what is there: the first writer wins, and a
/// later one (another replica, a retry) learns who did, in the same round trip.
pub(crate) fn create_or_get(key: &str, value: &str) -> Txn {
    put_if(key, value.as_bytes().to_vec(), Expect::Absent).or_else([TxnOp::get(key, None)])
}

/// The value a [`create_or_get`] left at its key: `value` if it created it, else the one it
/// found. `what` names the key for the error of a key neither created nor found (deleted in
/// between).
pub(crate) fn holder(resp: &TxnResponse, value: &str, what: &str) -> Result<String, StoreError> {
    if resp.succeeded() {
        return Ok(value.to_string());
    }
    resp.op_responses()
        .into_iter()
        .find_map(|r| match r {
            TxnOpResponse::Get(g) => g
                .kvs()
                .first()
                .map(|kv| String::from_utf8_lossy(kv.value()).into_owned()),
            _ => None,
        })
        .ok_or_else(|| StoreError::Backend(format!("{what}: neither created nor found")))
}
