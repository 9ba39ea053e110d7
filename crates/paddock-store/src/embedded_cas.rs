//! The embedded store's two compare-and-swap shapes, written once: a swap on a versioned value
//! (quota ledgers, namespace templates) and a first-writer-wins entry (cluster-wide claims,
//! spanning namespaces' clusters). One process holds the store, so the state mutex is what
//! makes each atomic.

use std::collections::BTreeMap;

use super::{EmbeddedStore, State};
use crate::StoreError;

/// Replaces the value at `key` (with `None`, removes it) if its version is `expected`, 0 for
/// an absent key; the version counts the writes since the key was created. Whether it did.
pub(super) fn swap_versioned<T>(
    map: &mut BTreeMap<String, (i64, T)>,
    key: String,
    expected: i64,
    value: Option<T>,
) -> bool {
    let current = map.get(&key).map_or(0, |(v, _)| *v);
    if current != expected {
        return false;
    }
    if let Some(v) = value {
        map.insert(key, (current + 1, v));
    } else {
        map.remove(&key);
    }
    true
}

/// The map of the state a first-writer-wins entry is in.
pub(crate) type Entries = fn(&mut State) -> &mut BTreeMap<String, String>;

impl EmbeddedStore {
    /// Sets `key` of the map `entries` picks to `value` unless it has one: the first writer
    /// wins, and every writer gets the value that is there. Read first, under the lock, so a
    /// repeat (the common case: a retry, another create in the same place) writes nothing.
    pub(crate) async fn first_writer(
        &self,
        entries: Entries,
        key: String,
        value: &str,
    ) -> Result<String, StoreError> {
        if let Some(holder) = entries(&mut self.inner.state.lock()).get(&key) {
            return Ok(holder.clone());
        }
        let value = value.to_string();
        self.mutate(move |st| Ok(entries(st).entry(key).or_insert(value).clone()))
            .await
    }
}
