//! What a load run reports, and the verdict on it: what a client would have noticed.

use std::collections::BTreeMap;
use std::time::Duration;

/// One failed request.
#[derive(Debug, Clone)]
pub struct FailedRequest {
    /// When it was sent, since the load started.
    pub at: Duration,
    /// How long until the answer (or the failure).
    pub latency: Duration,
    /// The HTTP status, when there was an answer.
    pub status: Option<u16>,
    /// Method, path and what went wrong.
    pub what: String,
    /// The answer's body (a `Status`), when there was one.
    pub body: String,
}

/// What one watch saw.
#[derive(Debug, Default, Clone)]
pub struct WatchLog {
    /// name -> resourceVersion of the last event seen for it (removed on DELETED).
    pub seen: BTreeMap<String, String>,
    pub events: u64,
    /// Times the watch was started again from its last resourceVersion.
    pub resumes: u64,
    /// `ERROR` events received (with their messages, first few).
    pub error_events: u64,
    pub error_messages: Vec<String>,
    /// 410 Gone: the watch could not resume and had to re-list (events may have been missed).
    pub relists: u64,
}

/// The outcome of a run.
#[derive(Debug, Default)]
pub struct Report {
    pub elapsed: Duration,
    pub requests: u64,
    pub failures: Vec<FailedRequest>,
    /// Transparent retries of requests never processed.
    pub retries: u64,
    pub creates_acked: usize,
    pub patches_acked: usize,
    /// Acknowledged writes missing upstream (creates absent, patches overwritten by older).
    pub lost_writes: Vec<String>,
    /// Creates present more than once upstream.
    pub duplicated_writes: Vec<String>,
    pub watches: Vec<WatchLog>,
    /// Objects whose final resourceVersion some watch never saw.
    pub missed_events: Vec<String>,
    /// The slowest answer of any request (watches: until their headers).
    pub max_latency: Duration,
}

impl Report {
    pub fn failed(&self) -> usize {
        self.failures.len()
    }
    pub fn failure_rate(&self) -> f64 {
        if self.requests == 0 {
            return 0.0;
        }
        self.failures.len() as f64 / self.requests as f64
    }
    pub fn watch_events(&self) -> u64 {
        self.watches.iter().map(|w| w.events).sum()
    }
    pub fn watch_resumes(&self) -> u64 {
        self.watches.iter().map(|w| w.resumes).sum()
    }
    pub fn watch_error_events(&self) -> u64 {
        self.watches.iter().map(|w| w.error_events).sum()
    }
    pub fn relists(&self) -> u64 {
        self.watches.iter().map(|w| w.relists).sum()
    }
    /// One line for the test's output and docs/testing.md.
    pub fn summary(&self) -> String {
        format!(
            "{} requests in {:.1} s, {} failed ({:.3} %), {} transparent retries; {} creates and {} patches acknowledged, {} lost, {} duplicated; {} watch events, {} resumes ({} after an ERROR event), {} re-lists, {} missed events",
            self.requests,
            self.elapsed.as_secs_f64(),
            self.failed(),
            self.failure_rate() * 100.0,
            self.retries,
            self.creates_acked,
            self.patches_acked,
            self.lost_writes.len(),
            self.duplicated_writes.len(),
            self.watch_events(),
            self.watch_resumes(),
            self.watch_error_events(),
            self.relists(),
            self.missed_events.len()
        )
    }
}

/// Adds to `failures` what a client would have noticed in `r`: more than `max_failures` failed
/// requests, lost or duplicated writes, missed watch events, watches that had to re-list, or a
/// load that did nothing.
pub fn check(name: &str, r: &Report, max_failures: usize, failures: &mut Vec<String>) {
    if r.failed() > max_failures {
        failures.push(format!(
            "{name}: {} failed requests (at most {max_failures} allowed), first: {:?}",
            r.failed(),
            r.failures.iter().take(5).collect::<Vec<_>>()
        ));
    }
    if !r.lost_writes.is_empty() {
        failures.push(format!("{name}: lost writes {:?}", r.lost_writes));
    }
    if !r.duplicated_writes.is_empty() {
        failures.push(format!(
            "{name}: duplicated writes {:?}",
            r.duplicated_writes
        ));
    }
    if !r.missed_events.is_empty() {
        failures.push(format!(
            "{name}: {} missed watch events, first {:?}",
            r.missed_events.len(),
            r.missed_events.iter().take(5).collect::<Vec<_>>()
        ));
    }
    if r.relists() > 0 {
        failures.push(format!(
            "{name}: {} watches could not resume (410) and re-listed",
            r.relists()
        ));
    }
    if r.creates_acked == 0 || r.watch_events() == 0 {
        failures.push(format!("{name}: the load did nothing: {}", r.summary()));
    }
}
