//! The pure half of a reflector, as client-go's informers and kube-runtime's reflectors have
//! it: LIST, then WATCH from the list's `resourceVersion` (with bookmarks), re-list when the
//! apiserver answers 410 Gone. Here: decoding a watch event, the cache (object by namespace
//! and name) an event or a re-list updates and what changed in it, the retry delay after a
//! failure, and a deduplicating work queue. The I/O loop is `paddock_upstream::reflector`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use serde_json::Value;

/// A watch event that could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("watch event: {0}")]
pub struct EventError(pub String);

/// One event of a watch stream (`{"type": ..., "object": ...}`, one per line).
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent {
    Added(Value),
    Modified(Value),
    Deleted(Value),
    /// Progress only: the stream has seen everything up to this resourceVersion.
    Bookmark(String),
    /// The apiserver ended the watch; `code` 410 means the resourceVersion is too old.
    Error {
        code: u16,
        message: String,
    },
}

/// Reads one line of a watch stream.
pub fn parse_event(line: &[u8]) -> Result<WatchEvent, EventError> {
    let mut v: Value = serde_json::from_slice(line).map_err(|e| EventError(e.to_string()))?;
    let object = v.get_mut("object").map(Value::take).unwrap_or(Value::Null);
    match v["type"].as_str() {
        Some("ADDED") => Ok(WatchEvent::Added(object)),
        Some("MODIFIED") => Ok(WatchEvent::Modified(object)),
        Some("DELETED") => Ok(WatchEvent::Deleted(object)),
        Some("BOOKMARK") => Ok(WatchEvent::Bookmark(
            resource_version(&object).unwrap_or_default().to_string(),
        )),
        Some("ERROR") => Ok(WatchEvent::Error {
            code: object["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(0),
            message: object["message"].as_str().unwrap_or("").to_string(),
        }),
        other => Err(EventError(format!("unknown type {other:?}"))),
    }
}

impl WatchEvent {
    /// The resourceVersion a watch resumes from after this event (none for an error).
    pub fn resource_version(&self) -> Option<&str> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                resource_version(o)
            }
            WatchEvent::Bookmark(rv) => Some(rv.as_str()).filter(|r| !r.is_empty()),
            WatchEvent::Error { .. } => None,
        }
    }
}

/// `metadata.resourceVersion` of an object or a list.
pub fn resource_version(v: &Value) -> Option<&str> {
    v["metadata"]["resourceVersion"].as_str()
}

/// An object's place in a cache: namespace (empty when cluster-scoped) and name.
pub type Key = (String, String);

fn key_of(o: &Value) -> Option<Key> {
    let m = &o["metadata"];
    Some((
        m["namespace"].as_str().unwrap_or("").to_string(),
        m["name"].as_str()?.to_string(),
    ))
}

/// What an event or a re-list changed: the object at `key` was added or changed (`Upserted`)
/// or is gone (`Removed`, with its last state).
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Upserted(Key),
    Removed(Key, Value),
}

impl Change {
    pub fn key(&self) -> &Key {
        match self {
            Change::Upserted(k) | Change::Removed(k, _) => k,
        }
    }
}

/// The objects one watch sees, by namespace and name.
#[derive(Debug, Default)]
pub struct Cache {
    objects: BTreeMap<Key, Value>,
    /// Set by the first list: before it, absence from the cache means nothing.
    pub synced: bool,
}

impl Cache {
    /// A re-list: the cache becomes `items`; returns what differs from before (an object
    /// whose resourceVersion did not move is unchanged).
    pub fn replace(&mut self, items: Vec<Value>) -> Vec<Change> {
        let mut old = std::mem::take(&mut self.objects);
        let mut changes = Vec::new();
        for o in items {
            let Some(k) = key_of(&o) else { continue };
            let same = old
                .remove(&k)
                .is_some_and(|prev| resource_version(&prev) == resource_version(&o));
            if !same {
                changes.push(Change::Upserted(k.clone()));
            }
            self.objects.insert(k, o);
        }
        changes.extend(old.into_iter().map(|(k, v)| Change::Removed(k, v)));
        self.synced = true;
        changes
    }

    /// One watch event; bookmarks and errors change nothing.
    pub fn apply(&mut self, ev: WatchEvent) -> Option<Change> {
        match ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                let k = key_of(&o)?;
                self.objects.insert(k.clone(), o);
                Some(Change::Upserted(k))
            }
            WatchEvent::Deleted(o) => {
                let k = key_of(&o)?;
                let last = self.objects.remove(&k).unwrap_or(o);
                Some(Change::Removed(k, last))
            }
            WatchEvent::Bookmark(_) | WatchEvent::Error { .. } => None,
        }
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<&Value> {
        self.objects.get(&(namespace.to_string(), name.to_string()))
    }

    /// The objects of one namespace.
    pub fn in_namespace<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = &'a Value> {
        self.objects
            .range((namespace.to_string(), String::new())..)
            .take_while(move |((ns, _), _)| ns == namespace)
            .map(|(_, v)| v)
    }

    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.objects.values()
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// What a reflector does after its watch ended with an error event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterError {
    /// 410 Gone (the resourceVersion was compacted away): list again, at once.
    Relist,
    /// Anything else: wait ([`backoff`]) and watch again from the last resourceVersion (a
    /// resourceVersion that has become too old turns into a 410).
    Retry,
}

pub fn after_error(code: u16) -> AfterError {
    if code == 410 {
        AfterError::Relist
    } else {
        AfterError::Retry
    }
}

/// The wait after `failures` failures in a row: 250 ms doubling up to 30 s, stretched by
/// `jitter` (0.0..1.0, up to +50 %) so that replicas restarted together do not retry together.
pub fn backoff(failures: u32, jitter: f64) -> Duration {
    let base = Duration::from_millis(250).saturating_mul(1u32 << failures.min(7));
    base.min(Duration::from_secs(30))
        .mul_f64(1.0 + 0.5 * jitter.clamp(0.0, 1.0))
}

/// A work queue keyed by object, as client-go's: a key is queued once however often it is
/// added; a key being worked on is not handed out twice, and one added meanwhile is queued
/// again when the work is done (so a change during the work is never lost).
#[derive(Debug)]
pub struct WorkQueue<K: Ord + Clone> {
    queue: VecDeque<K>,
    queued: BTreeSet<K>,
    active: BTreeSet<K>,
    again: BTreeSet<K>,
}

impl<K: Ord + Clone> Default for WorkQueue<K> {
    fn default() -> Self {
        WorkQueue {
            queue: VecDeque::new(),
            queued: BTreeSet::new(),
            active: BTreeSet::new(),
            again: BTreeSet::new(),
        }
    }
}

impl<K: Ord + Clone> WorkQueue<K> {
    pub fn add(&mut self, k: K) {
        if self.active.contains(&k) {
            self.again.insert(k);
        } else if self.queued.insert(k.clone()) {
            self.queue.push_back(k);
        }
    }

    /// The next key to work on (now active until [`WorkQueue::done`]).
    pub fn take(&mut self) -> Option<K> {
        let k = self.queue.pop_front()?;
        self.queued.remove(&k);
        self.active.insert(k.clone());
        Some(k)
    }

    pub fn done(&mut self, k: &K) {
        self.active.remove(k);
        if self.again.remove(k) {
            self.add(k.clone());
        }
    }

    /// Keys waiting (not counting active ones).
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn active(&self) -> usize {
        self.active.len()
    }
}

/// Keys that wait for their objects to go quiet before they are worked on: each change pushes
/// a key's turn to `quiet` after it, but never past `longest` after its first change. A
/// tenant being created changes for about a second (namespaces, bindings, Services, stamps
/// arrive one after the other); judged in the middle it would be found incomplete and
/// "repaired" beside its own creation, writing everything twice. A drift is one change: its
/// key's turn comes `quiet` later.
#[derive(Debug)]
pub struct Settle<K: Ord + Clone> {
    quiet: Duration,
    longest: Duration,
    /// Key -> (first change, turn).
    waiting: BTreeMap<K, (Duration, Duration)>,
}

impl<K: Ord + Clone> Settle<K> {
    pub fn new(quiet: Duration, longest: Duration) -> Self {
        Settle {
            quiet,
            longest,
            waiting: BTreeMap::new(),
        }
    }

    /// A change of `k` at `now` (time since any fixed start).
    pub fn changed(&mut self, k: K, now: Duration) {
        let first = self.waiting.get(&k).map_or(now, |(first, _)| *first);
        let turn = (now + self.quiet).min(first + self.longest);
        self.waiting.insert(k, (first, turn));
    }

    /// The keys whose turn has come by `now`, no longer waiting.
    pub fn due(&mut self, now: Duration) -> Vec<K> {
        let due: Vec<K> = self
            .waiting
            .iter()
            .filter(|(_, (_, turn))| *turn <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &due {
            self.waiting.remove(k);
        }
        due
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
#[path = "reflect_tests.rs"]
mod tests;
