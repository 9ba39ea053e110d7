//! The replica's tenant-fair work queue: the waiting around paddock-core's `fair_queue`
//! decisions (who goes next). A tenant's request takes its work seats before it is planned,
//! translated or sent, and gives them back when its response body ends; under contention
//! the seats go to the tenant holding the fewest (docs/fairshare.md "Fair queue").

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use paddock_core::TenantId;
use paddock_core::fair_queue::{Arrival, Cancelled, FairQueue, Ticket};
use parking_lot::Mutex;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::oneshot;

use crate::error::ServerError;

/// The limit's name in refusals and `paddock_fairshare_refusals_total{limit}`.
pub const LIMIT_NAME: &str = "fairQueueWait";

/// Settings of the work queue (config keys `fair_queue_seats`, `fair_queue_timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FairQueueConfig {
    /// Work seats of this replica shared among tenants; 0 turns the queue off.
    pub seats: u32,
    /// Longest wait for seats; past it the request is refused with a 429.
    pub timeout: Duration,
}

/// Off unless the operator sets `fair_queue_seats` (lead's decision, docs/fairshare.md): a
/// seat is held until the answer's last byte, so a small default budget would cap one busy
/// tenant alone on a replica at three quarters of it, and slow readers of two tenants could
/// hold every seat; the per-tenant limits stay the default defence.
impl Default for FairQueueConfig {
    fn default() -> Self {
        FairQueueConfig {
            seats: 0,
            timeout: Duration::from_secs(15),
        }
    }
}

/// The queue's metrics: two gauges and two counters, no labels (docs/fairshare.md).
#[derive(Clone, Default)]
pub struct QueueMetrics {
    seats_in_use: Gauge,
    waiting: Gauge,
    queued: Counter,
    timed_out: Counter,
}

impl QueueMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let m = QueueMetrics::default();
        registry.register(
            "fair_queue_seats_in_use",
            "Work seats held by tenants' requests in this replica's fair queue",
            m.seats_in_use.clone(),
        );
        registry.register(
            "fair_queue_waiting",
            "Tenant requests waiting for work seats",
            m.waiting.clone(),
        );
        registry.register(
            "fair_queue_queued",
            "Tenant requests that had to wait for work seats",
            m.queued.clone(),
        );
        registry.register(
            "fair_queue_timeouts",
            "Tenant requests refused with 429 after waiting fair_queue_timeout for work seats",
            m.timed_out.clone(),
        );
        m
    }
}

struct Shared {
    queue: FairQueue<TenantId>,
    /// Where to tell a waiting request it was admitted.
    waiters: HashMap<Ticket, oneshot::Sender<()>>,
    metrics: QueueMetrics,
}

impl Shared {
    fn publish(&self) {
        let (in_use, waiting) = self.queue.load();
        self.metrics.seats_in_use.set(i64::from(in_use));
        self.metrics.waiting.set(waiting as i64);
    }

    fn wake(&mut self, admitted: Vec<(TenantId, Ticket)>) {
        for (_, ticket) in admitted {
            if let Some(tx) = self.waiters.remove(&ticket) {
                // A receiver gone means its wait is being dropped right now, behind this lock:
                // it finds its ticket admitted and releases the seats itself.
                let _ = tx.send(());
            }
        }
    }
}

/// The queue of one replica.
pub struct WorkQueue {
    shared: Mutex<Shared>,
    timeout: Duration,
}

impl WorkQueue {
    pub fn new(config: FairQueueConfig, metrics: QueueMetrics) -> Arc<Self> {
        Arc::new(WorkQueue {
            shared: Mutex::new(Shared {
                queue: FairQueue::new(config.seats),
                waiters: HashMap::new(),
                metrics,
            }),
            timeout: config.timeout,
        })
    }

    /// Seats in use and requests waiting.
    pub fn load(&self) -> (u32, usize) {
        self.shared.lock().queue.load()
    }

    /// Asks for `seats` for a request of `tenant`; the future resolves to the held seats, or
    /// to a 429 when the wait passes the queue's timeout. Dropping it gives up its place.
    pub fn acquire(self: &Arc<Self>, tenant: &TenantId, seats: u32) -> SeatWait {
        let mut s = self.shared.lock();
        let seats = s.queue.weight(seats);
        let asked = Asked {
            queue: self.clone(),
            tenant: tenant.clone(),
            seats,
        };
        let arrival = s.queue.arrive(tenant, seats);
        s.publish();
        match arrival {
            Arrival::Admitted => SeatWait::Ready(Some(asked.held())),
            Arrival::Queued(ticket) => {
                let (tx, rx) = oneshot::channel();
                s.waiters.insert(ticket, tx);
                s.metrics.queued.inc();
                SeatWait::Waiting(Waiting {
                    asked: Some(asked),
                    ticket,
                    rx,
                    deadline: Box::pin(tokio::time::sleep(self.timeout)),
                })
            }
        }
    }

    fn release(&self, tenant: &TenantId, seats: u32) {
        let mut s = self.shared.lock();
        let admitted = s.queue.release(tenant, seats);
        s.wake(admitted);
        s.publish();
    }

    /// Gives up a waiting ticket; true when it had been admitted meanwhile (the seats are
    /// the caller's).
    fn cancel(&self, tenant: &TenantId, ticket: Ticket) -> bool {
        let mut s = self.shared.lock();
        s.waiters.remove(&ticket);
        let admitted = match s.queue.cancel(tenant, ticket) {
            Cancelled::Removed(admitted) => {
                s.wake(admitted);
                false
            }
            Cancelled::WasAdmitted => true,
        };
        s.publish();
        admitted
    }
}

/// Seats asked for, not (yet) held.
struct Asked {
    queue: Arc<WorkQueue>,
    tenant: TenantId,
    seats: u32,
}

impl Asked {
    fn held(self) -> Seat {
        Seat(self)
    }
}

/// Held work seats; dropping them gives them to the next tenant in line.
pub struct Seat(Asked);

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.queue.release(&self.0.tenant, self.0.seats);
    }
}

/// A request's wait for its seats.
pub enum SeatWait {
    Ready(Option<Seat>),
    Waiting(Waiting),
}

/// See [`SeatWait`]. The deadline is boxed: only a request that has to wait pays for it.
pub struct Waiting {
    /// Taken when the wait resolves (then dropping the wait does nothing).
    asked: Option<Asked>,
    ticket: Ticket,
    rx: oneshot::Receiver<()>,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl Future for SeatWait {
    type Output = Result<Seat, ServerError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let w = match self.get_mut() {
            SeatWait::Ready(seat) => {
                return Poll::Ready(seat.take().ok_or_else(polled_twice));
            }
            SeatWait::Waiting(w) => w,
        };
        if Pin::new(&mut w.rx).poll(cx).is_ready() {
            return Poll::Ready(w.asked.take().map(Asked::held).ok_or_else(polled_twice));
        }
        if w.deadline.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let Some(asked) = w.asked.take() else {
            return Poll::Ready(Err(polled_twice()));
        };
        if asked.queue.cancel(&asked.tenant, w.ticket) {
            // Admitted just as the deadline passed: serve it.
            return Poll::Ready(Ok(asked.held()));
        }
        asked.queue.shared.lock().metrics.timed_out.inc();
        let (tenant, waited) = (asked.tenant, asked.queue.timeout.as_secs());
        Poll::Ready(Err(ServerError::TooManyRequests {
            message: format!(
                "tenant {tenant} waited {waited}s for a share of this paddock replica's work \
                 seats, busy with other requests (fair-share limit {LIMIT_NAME}); retry after 1s"
            ),
            retry_after: 1,
            limit: LIMIT_NAME,
        }))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        // Still waiting (the client went away): give up the place, or the seats if they were
        // handed over meanwhile.
        if let Some(asked) = self.asked.take()
            && asked.queue.cancel(&asked.tenant, self.ticket)
        {
            drop(asked.held());
        }
    }
}

fn polled_twice() -> ServerError {
    ServerError::Internal("fair queue wait polled after completion".into())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tid(s: &str) -> TenantId {
        TenantId::parse(s).unwrap()
    }

    fn queue(seats: u32, timeout: Duration) -> Arc<WorkQueue> {
        WorkQueue::new(FairQueueConfig { seats, timeout }, QueueMetrics::default())
    }

    #[tokio::test]
    async fn a_waiting_tenant_gets_the_next_seat_before_the_flood() {
        let q = queue(2, Duration::from_secs(60));
        let (a, b) = (tid("noisya"), tid("quietb"));
        let first = q.acquire(&a, 1).await.unwrap();
        let second = q.acquire(&a, 1).await.unwrap();
        let mut flood: Vec<SeatWait> = (0..5).map(|_| q.acquire(&a, 1)).collect();
        let quiet = tokio::spawn(q.acquire(&b, 1));
        tokio::task::yield_now().await;
        assert_eq!(q.load(), (2, 6));
        drop(first);
        let held = quiet.await.unwrap().unwrap();
        assert_eq!(q.load(), (2, 5));
        // The flood's waits resolve one by one as seats free.
        drop(held);
        let next = (&mut flood[0]).await.unwrap();
        drop((next, second));
        drop(flood);
        assert_eq!(q.load(), (0, 0));
    }

    #[tokio::test]
    async fn a_wait_past_the_timeout_is_a_429_and_holds_nothing() {
        let q = queue(1, Duration::from_millis(100));
        let a = tid("noisya");
        let held = q.acquire(&a, 1).await.unwrap();
        let err = match q.acquire(&tid("quietb"), 1).await {
            Err(e) => e,
            Ok(_) => panic!("admitted while the only seat was held"),
        };
        assert!(
            matches!(&err, ServerError::TooManyRequests { limit, message, .. }
                if *limit == LIMIT_NAME && message.contains("quietb")),
            "{err:?}"
        );
        assert_eq!(q.load(), (1, 0));
        drop(held);
        assert_eq!(q.load(), (0, 0));
    }

    #[tokio::test]
    async fn a_dropped_wait_gives_back_its_place_or_its_seats() {
        let q = queue(1, Duration::from_secs(60));
        let a = tid("noisya");
        let held = q.acquire(&a, 1).await.unwrap();
        drop(q.acquire(&a, 1));
        assert_eq!(q.load(), (1, 0));
        // Admitted but never polled again: dropping the wait releases the seat.
        let waiting = q.acquire(&a, 1);
        drop(held);
        assert_eq!(q.load(), (1, 0));
        drop(waiting);
        assert_eq!(q.load(), (0, 0));
    }
}
