//! The replica's tenant-fair work queue: the waiting around paddock-core's `fair_queue`
//! decisions (who goes next). A tenant's request takes its work seats before it is planned,
//! translated or sent, and gives them back when its response body ends, charging its tenant
//! the time its polls took (its work); under contention the seats go to the tenant that has
//! used the least work (docs/fairshare.md "Fair queue").

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use paddock_core::TenantId;
use paddock_core::fair::queue::{Arrival, Cancelled, FairQueue, Ticket};
use paddock_core::fair::refusal::Refusal;
use parking_lot::Mutex;
use tokio::sync::{Notify, oneshot};

use crate::config::FairQueueConfig;
use crate::observe::metrics::QueueMetrics;
use paddock_upstream::error::ServerError;
use paddock_upstream::tap::Tap;

struct Shared {
    queue: FairQueue<TenantId>,
    /// Where to tell a waiting request it was admitted.
    waiters: HashMap<Ticket, oneshot::Sender<()>>,
    metrics: QueueMetrics,
    revoked_seen: u64,
    /// When the pacer task will next poke the queue (None: it waits to be told, or has not
    /// been started).
    pacer_at: Option<Duration>,
    pacer_started: bool,
}

impl Shared {
    fn publish(&mut self) {
        let (in_use, waiting) = self.queue.load();
        self.metrics.seats_in_use.set(i64::from(in_use));
        self.metrics.waiting.set(waiting as i64);
        let revoked = self.queue.revoked();
        if revoked > self.revoked_seen {
            self.metrics.revoked.inc_by(revoked - self.revoked_seen);
            self.revoked_seen = revoked;
        }
    }

    fn wake(&mut self, admitted: paddock_core::fair::queue::Admitted<TenantId>) {
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
    lease: Duration,
    /// The origin of the `now` the core's decisions take (tokio's clock: the same as the
    /// system's monotonic clock, but pausable in tests).
    epoch: tokio::time::Instant,
    /// Wakes the pacer task: a tenant held back by its pace may go earlier than it sleeps.
    pacer: Arc<Notify>,
    /// The runtime the queue was made on (the main one), where the pacer task is spawned:
    /// not on a per-core serving thread (`serve_threads`), whichever request comes first.
    runtime: Option<tokio::runtime::Handle>,
}

impl Drop for WorkQueue {
    fn drop(&mut self) {
        // The pacer holds only a weak reference: woken, it finds the queue gone and ends.
        self.pacer.notify_one();
    }
}

impl WorkQueue {
    pub fn new(config: FairQueueConfig, metrics: QueueMetrics) -> Arc<Self> {
        Arc::new(WorkQueue {
            shared: Mutex::new(Shared {
                queue: FairQueue::new(config.seats, config.lease)
                    .with_reserve(config.reserve)
                    .unbounded_when_alone()
                    .with_pace(config.pace),
                waiters: HashMap::new(),
                metrics,
                revoked_seen: 0,
                pacer_at: None,
                pacer_started: false,
            }),
            timeout: config.timeout,
            lease: config.lease,
            epoch: tokio::time::Instant::now(),
            pacer: Arc::new(Notify::new()),
            runtime: tokio::runtime::Handle::try_current().ok(),
        })
    }

    /// Makes sure the pacer task pokes the queue when the next tenant held back by its pace
    /// may go (called under the lock after every change). One task and one timer for the
    /// whole queue: the waiting requests themselves only wait for their admission.
    fn schedule(self: &Arc<Self>, s: &mut Shared, now: Duration) {
        let Some(due) = s.queue.next_due(now) else {
            return;
        };
        if s.pacer_at.is_some_and(|at| at <= due) {
            return;
        }
        if !s.pacer_started {
            let Some(rt) = self
                .runtime
                .clone()
                .or_else(|| tokio::runtime::Handle::try_current().ok())
            else {
                return; // no runtime: the waits' own pokes (every lease) still admit them
            };
            s.pacer_started = true;
            rt.spawn(pace(Arc::downgrade(self), self.pacer.clone()));
        }
        s.pacer_at = Some(due);
        self.pacer.notify_one();
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Seats in use and requests waiting.
    pub fn load(&self) -> (u32, usize) {
        self.shared.lock().queue.load()
    }

    /// Asks for `seats` for a request of `tenant`; the future resolves to the held seats, or
    /// to a 429 when the wait passes the queue's timeout. Dropping it gives up its place.
    pub fn acquire(self: &Arc<Self>, tenant: &TenantId, seats: u32) -> SeatWait {
        let now = self.now();
        let mut s = self.shared.lock();
        let (arrival, others) = s.queue.arrive(tenant, seats, now);
        s.wake(others);
        s.publish();
        if matches!(arrival, Arrival::Queued(_)) {
            self.schedule(&mut s, now);
        }
        let asked = Asked {
            queue: self.clone(),
            tenant: tenant.clone(),
            ticket: arrival.ticket(),
        };
        match arrival {
            Arrival::Admitted(_) => SeatWait::Ready(Some(asked.held())),
            Arrival::Queued(ticket) => {
                let (tx, rx) = oneshot::channel();
                s.waiters.insert(ticket, tx);
                s.metrics.queued.inc();
                SeatWait::Waiting(Waiting {
                    asked: Some(asked),
                    rx,
                    deadline: Box::pin(tokio::time::sleep(self.timeout)),
                    poke: Box::pin(tokio::time::sleep(self.lease)),
                })
            }
        }
    }

    fn release(self: &Arc<Self>, ticket: Ticket, work: Duration) {
        let now = self.now();
        let mut s = self.shared.lock();
        let admitted = s.queue.release(ticket, work, now);
        s.wake(admitted);
        s.publish();
        self.schedule(&mut s, now);
    }

    /// Lets the queue revoke expired leases, and admit paced tenants whose time has come.
    fn poke(self: &Arc<Self>) {
        let now = self.now();
        let mut s = self.shared.lock();
        let admitted = s.queue.poke(now);
        s.wake(admitted);
        s.publish();
        self.schedule(&mut s, now);
    }

    /// Gives up a waiting ticket; true when it had been admitted meanwhile (the seats are
    /// the caller's).
    fn cancel(&self, tenant: &TenantId, ticket: Ticket) -> bool {
        let now = self.now();
        let mut s = self.shared.lock();
        s.waiters.remove(&ticket);
        let admitted = match s.queue.cancel(tenant, ticket, now) {
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

/// The pacer: sleeps until the next tenant held back by its pace may go, pokes the queue,
/// and waits to be told when nobody is held back. Ends when the queue is dropped.
async fn pace(queue: Weak<WorkQueue>, told: Arc<Notify>) {
    loop {
        let notified = told.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let due = {
            let Some(q) = queue.upgrade() else { return };
            let now = q.now();
            let mut s = q.shared.lock();
            let due = s.queue.next_due(now);
            s.pacer_at = due;
            due.map(|at| q.epoch + at)
        };
        match due {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {
                        let Some(q) = queue.upgrade() else { return };
                        q.poke();
                    }
                    () = &mut notified => {}
                }
            }
            None => notified.await,
        }
    }
}

/// Seats asked for, not (yet) held.
struct Asked {
    queue: Arc<WorkQueue>,
    tenant: TenantId,
    ticket: Ticket,
}

impl Asked {
    fn held(self) -> Seat {
        Seat {
            asked: self,
            work: Duration::ZERO,
        }
    }
}

/// Held work seats and the work done under them; dropping them charges the work to the
/// tenant and gives the seats to the next tenant in line.
pub struct Seat {
    asked: Asked,
    work: Duration,
}

impl Seat {
    /// Runs `poll` (a poll of the request's handling or of its answer's body) and charges
    /// its time to the seat: time on a worker thread, which is the replica's scarce resource
    /// (waits for the apiserver or the client are not in a poll).
    pub fn timed<T>(&mut self, poll: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let r = poll();
        self.work += start.elapsed();
        r
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.asked.queue.release(self.asked.ticket, self.work);
    }
}

/// A response body holds its seats until its last byte (`paddock_upstream::tap::hold`), the
/// time of its polls charged. A small complete body has no more work to charge: its seats end
/// with its headers.
impl Tap for Seat {
    fn poll<R>(&mut self, poll: impl FnOnce() -> R) -> R {
        self.timed(poll)
    }
}

/// A request's wait for its seats.
pub enum SeatWait {
    Ready(Option<Seat>),
    Waiting(Waiting),
}

/// See [`SeatWait`]. The timers are boxed: only a request that has to wait pays for them.
pub struct Waiting {
    /// Taken when the wait resolves (then dropping the wait does nothing).
    asked: Option<Asked>,
    rx: oneshot::Receiver<()>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// Every lease, the queue is poked: seats held past their lease may be revoked for us.
    poke: Pin<Box<tokio::time::Sleep>>,
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
        let Some(lease) = w.asked.as_ref().map(|a| a.queue.lease) else {
            return Poll::Ready(Err(polled_twice()));
        };
        if Pin::new(&mut w.rx).poll(cx).is_ready() {
            return Poll::Ready(w.asked.take().map(Asked::held).ok_or_else(polled_twice));
        }
        if w.deadline.as_mut().poll(cx).is_pending() {
            while w.poke.as_mut().poll(cx).is_ready() {
                w.poke.as_mut().reset(tokio::time::Instant::now() + lease);
                if let Some(asked) = &w.asked {
                    asked.queue.poke();
                }
                if Pin::new(&mut w.rx).poll(cx).is_ready() {
                    return Poll::Ready(w.asked.take().map(Asked::held).ok_or_else(polled_twice));
                }
            }
            return Poll::Pending;
        }
        let Some(asked) = w.asked.take() else {
            return Poll::Ready(Err(polled_twice()));
        };
        if asked.queue.cancel(&asked.tenant, asked.ticket) {
            // Admitted just as the deadline passed: serve it.
            return Poll::Ready(Ok(asked.held()));
        }
        asked.queue.shared.lock().metrics.timed_out.inc();
        let (tenant, waited) = (asked.tenant, asked.queue.timeout.as_secs());
        Poll::Ready(Err(ServerError::TooManyRequests(Refusal::fair_queue_wait(
            tenant.as_str(),
            waited,
        ))))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        // Still waiting (the client went away): give up the place, or the seats if they were
        // handed over meanwhile.
        if let Some(asked) = self.asked.take()
            && asked.queue.cancel(&asked.tenant, asked.ticket)
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
    use paddock_core::fair::refusal::Limit;

    fn tid(s: &str) -> TenantId {
        TenantId::parse(s).unwrap()
    }

    fn queue(seats: u32, timeout: Duration) -> Arc<WorkQueue> {
        WorkQueue::new(
            FairQueueConfig {
                seats,
                timeout,
                lease: Duration::from_secs(60),
                reserve: 0,
                pace: 0,
            },
            QueueMetrics::default(),
        )
    }

    #[tokio::test]
    async fn a_waiting_tenant_gets_the_next_seat_before_the_flood() {
        let q = queue(3, Duration::from_secs(60));
        let (a, b) = (tid("noisya"), tid("quietb"));
        // B holds a seat throughout: A is not alone, so the budget applies to it.
        let b_first = q.acquire(&b, 1).await.unwrap();
        let mut first = q.acquire(&a, 1).await.unwrap();
        // A has done some work: it is behind B, which has done none, in the line.
        first.timed(|| std::thread::sleep(Duration::from_millis(1)));
        let second = q.acquire(&a, 1).await.unwrap();
        let mut flood: Vec<SeatWait> = (0..5).map(|_| q.acquire(&a, 1)).collect();
        let quiet = tokio::spawn(q.acquire(&b, 1));
        tokio::task::yield_now().await;
        assert_eq!(q.load(), (3, 6));
        drop(first);
        let held = quiet.await.unwrap().unwrap();
        assert_eq!(q.load(), (3, 5));
        // The flood's waits resolve one by one as seats free.
        drop(held);
        let next = (&mut flood[0]).await.unwrap();
        drop((next, second, b_first));
        drop(flood);
        assert_eq!(q.load(), (0, 0));
    }

    #[tokio::test]
    async fn a_lone_tenant_is_admitted_past_the_budget() {
        let q = queue(2, Duration::from_secs(60));
        let a = tid("noisya");
        let mut held = Vec::new();
        for _ in 0..5 {
            held.push(q.acquire(&a, 1).await.unwrap());
        }
        assert_eq!(q.load(), (5, 0));
        drop(held);
        assert_eq!(q.load(), (0, 0));
    }

    /// Paused time: it moves only when every task waits on a timer, so the steps below
    /// take no time and the pacer's sleep is what moves it.
    #[tokio::test(start_paused = true)]
    async fn the_pacer_admits_a_paced_tenant_without_any_release() {
        let q = WorkQueue::new(
            FairQueueConfig {
                seats: 64,
                timeout: Duration::from_secs(60),
                lease: Duration::from_secs(60),
                reserve: 0,
                pace: 100,
            },
            QueueMetrics::default(),
        );
        let (a, b) = (tid("noisya"), tid("quietb"));
        // A alone holds 30 seats for 200 ms: 6 seat-seconds, far over its pace of one seat.
        let mut held = Vec::new();
        for _ in 0..30 {
            held.push(q.acquire(&a, 1).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(held);
        // B, light, becomes active: A's next request waits for its pace, with seats to
        // spare and no request ending; only the pacer's timer admits it.
        let quiet = q.acquire(&b, 1).await.unwrap();
        let t0 = tokio::time::Instant::now();
        let wait = q.acquire(&a, 1);
        assert!(matches!(wait, SeatWait::Waiting(_)), "A was not paced");
        let next = tokio::time::timeout(Duration::from_secs(30), wait)
            .await
            .expect("the pacer never admitted A")
            .unwrap();
        // A's schedule was PACE_MEMORY (100 ms) ahead; it may start PACE_SLACK (20 ms) early.
        assert_eq!(t0.elapsed(), Duration::from_millis(80));
        drop((next, quiet));
        assert_eq!(q.load(), (0, 0));
    }

    #[tokio::test]
    async fn seats_held_past_the_lease_go_to_a_waiting_tenant() {
        let q = WorkQueue::new(
            FairQueueConfig {
                seats: 1,
                timeout: Duration::from_secs(60),
                lease: Duration::from_millis(50),
                reserve: 0,
                pace: 0,
            },
            QueueMetrics::default(),
        );
        // A's request holds the only seat and never ends (a client that stops reading).
        let stuck = q.acquire(&tid("noisya"), 1).await.unwrap();
        // B's wait is not woken by any release: the poke after the lease admits it.
        let held = q.acquire(&tid("quietb"), 1).await.unwrap();
        assert_eq!(q.load(), (1, 0));
        assert_eq!(q.shared.lock().queue.revoked(), 1);
        drop(stuck);
        assert_eq!(q.load(), (1, 0), "a revoked seat is not freed twice");
        drop(held);
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
            matches!(&err, ServerError::TooManyRequests(r)
                if r.limit == Limit::FairQueueWait && r.message.contains("quietb")),
            "{err:?}"
        );
        assert_eq!(q.load(), (1, 0));
        drop(held);
        assert_eq!(q.load(), (0, 0));
    }

    #[tokio::test]
    async fn a_dropped_wait_gives_back_its_place_or_its_seats() {
        let q = queue(1, Duration::from_secs(60));
        let (a, b) = (tid("noisya"), tid("quietb"));
        let held = q.acquire(&b, 1).await.unwrap();
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
