//! Readiness with hysteresis: the decision whether the upstream counts as answering, from the
//! outcomes of periodic probes. Pure (the prober in paddock-server supplies the outcomes).
//!
//! One slow or failed probe never flips the state: it takes [`Hysteresis::fall`] failures in a
//! row to turn unhealthy and [`Hysteresis::rise`] successes in a row to turn healthy again
//! (HAProxy's `fall`/`rise` model, which operators already know from their load balancers).

/// The hysteresis state machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hysteresis {
    fall: u32,
    rise: u32,
    healthy: bool,
    /// Outcomes in a row that disagree with the current state.
    streak: u32,
    /// Whether any outcome was recorded: the very first success counts as a full rise, so a
    /// replica starting against a healthy upstream is ready after one probe, not `rise`.
    seen: bool,
}

impl Hysteresis {
    /// Starts unhealthy (nothing has answered yet); the first outcome, if a success, makes it
    /// healthy; after that `fall` failures in a row make it unhealthy and `rise` successes in
    /// a row healthy again. Zero counts are treated as one.
    pub fn new(fall: u32, rise: u32) -> Self {
        Hysteresis {
            fall: fall.max(1),
            rise: rise.max(1),
            healthy: false,
            streak: 0,
            seen: false,
        }
    }

    /// Failures in a row that turn a healthy state unhealthy.
    pub fn fall(&self) -> u32 {
        self.fall
    }

    /// Successes in a row that turn an unhealthy state healthy.
    pub fn rise(&self) -> u32 {
        self.rise
    }

    /// The current state.
    pub fn healthy(&self) -> bool {
        self.healthy
    }

    /// Healthy, with no failure counted towards a fall: nothing is in doubt.
    pub fn settled(&self) -> bool {
        self.seen && self.healthy && self.streak == 0
    }

    /// Records one outcome; returns the new state when it changed.
    pub fn record(&mut self, ok: bool) -> Option<bool> {
        let first = !self.seen;
        self.seen = true;
        if first && ok {
            self.healthy = true;
            self.streak = 0;
            return Some(true);
        }
        if ok == self.healthy {
            self.streak = 0;
            return None;
        }
        self.streak += 1;
        let needed = if self.healthy { self.fall } else { self.rise };
        if self.streak >= needed {
            self.healthy = ok;
            self.streak = 0;
            Some(ok)
        } else {
            None
        }
    }
}

/// Whether the prober should ask the upstream now. While anything is in doubt (not
/// settled) or tenants are using the replica (`busy`: requests finished since the last
/// probe, or watches open), every tick, so that a lost upstream is judged within `fall`
/// ticks; when idle and settled only every `idle_interval`: nobody waits on the answer, and
/// the first failure brings the fast pace back.
pub fn probe_due(
    settled: bool,
    busy: bool,
    since_last: std::time::Duration,
    idle_interval: std::time::Duration,
) -> bool {
    !settled || busy || since_last >= idle_interval
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_and_settled_probes_slowly_anything_else_every_tick() {
        use std::time::Duration;
        let idle = Duration::from_secs(10);
        let mut h = Hysteresis::new(3, 2);
        assert!(!h.settled(), "nothing seen yet");
        h.record(true);
        assert!(h.settled());
        assert!(!probe_due(h.settled(), false, Duration::from_secs(1), idle));
        assert!(probe_due(h.settled(), false, idle, idle));
        assert!(probe_due(h.settled(), true, Duration::from_secs(1), idle));
        h.record(false);
        assert!(
            h.healthy() && !h.settled(),
            "one failure: still healthy, in doubt"
        );
        assert!(probe_due(h.settled(), false, Duration::from_secs(1), idle));
        h.record(true);
        assert!(h.settled());
    }

    #[test]
    fn first_success_makes_it_healthy() {
        let mut h = Hysteresis::new(3, 2);
        assert!(!h.healthy());
        assert_eq!(h.record(true), Some(true));
        assert!(h.healthy());
    }

    #[test]
    fn starts_unhealthy_and_after_a_failure_rises_after_rise_successes() {
        let mut h = Hysteresis::new(3, 2);
        assert_eq!(h.record(false), None);
        assert_eq!(h.record(true), None);
        assert_eq!(h.record(true), Some(true));
    }

    #[test]
    fn one_or_two_failures_do_not_flap() {
        let mut h = Hysteresis::new(3, 2);
        h.record(true);
        for _ in 0..10 {
            assert_eq!(h.record(false), None);
            assert_eq!(h.record(false), None);
            assert_eq!(h.record(true), None, "a success resets the failure streak");
        }
        assert!(h.healthy());
        h.record(false);
        h.record(false);
        assert_eq!(h.record(false), Some(false));
        assert!(!h.healthy());
    }

    #[test]
    fn one_success_while_unhealthy_does_not_flap() {
        let mut h = Hysteresis::new(3, 2);
        h.record(true);
        for _ in 0..3 {
            h.record(false);
        }
        assert!(!h.healthy());
        assert_eq!(h.record(true), None);
        assert_eq!(h.record(false), None);
        assert_eq!(h.record(true), None);
        assert!(!h.healthy());
        assert_eq!(h.record(true), Some(true));
    }

    #[test]
    fn zero_thresholds_mean_one() {
        let mut h = Hysteresis::new(0, 0);
        assert_eq!(h.record(true), Some(true));
        assert_eq!(h.record(false), Some(false));
    }
}
