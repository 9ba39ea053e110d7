//! Bounds on the connections of strangers: a connection holds a place from its accept until
//! its TLS handshake shows a client certificate of paddock's CA, and for its whole life if it
//! shows none (bearer tokens, or nothing). Places are counted in all and per source address;
//! a connection that finds none is closed at once, before any TLS or HTTP work is done for it.
//! Certificate-authenticated connections are bounded per tenant instead (`limits`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::Mutex;

/// The places of one listener.
pub struct PreAuth {
    max_total: usize,
    max_per_source: usize,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    total: usize,
    by_source: HashMap<IpAddr, usize>,
}

/// Why a connection got no place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `max_unauthenticated` connections are open.
    Total,
    /// `max_unauthenticated_per_source` connections are open from this address.
    Source,
}

/// One connection's place; given back when dropped.
pub struct PreAuthSlot {
    owner: Arc<PreAuth>,
    source: IpAddr,
}

impl PreAuth {
    /// Bounds of `max_total` in all and `max_per_source` per address (0: no bound).
    pub fn new(max_total: usize, max_per_source: usize) -> Arc<Self> {
        Arc::new(PreAuth {
            max_total,
            max_per_source,
            held: Mutex::new(Held::default()),
        })
    }

    /// A place for a connection from `source`, if one is free.
    pub fn admit(self: &Arc<Self>, source: IpAddr) -> Result<PreAuthSlot, Refused> {
        let mut held = self.held.lock();
        if self.max_total != 0 && held.total >= self.max_total {
            return Err(Refused::Total);
        }
        let from_source = held.by_source.entry(source).or_insert(0);
        if self.max_per_source != 0 && *from_source >= self.max_per_source {
            return Err(Refused::Source);
        }
        *from_source += 1;
        held.total += 1;
        Ok(PreAuthSlot {
            owner: self.clone(),
            source,
        })
    }

    /// Places held now (metrics, tests).
    pub fn held(&self) -> usize {
        self.held.lock().total
    }
}

impl Drop for PreAuthSlot {
    fn drop(&mut self) {
        let mut held = self.owner.held.lock();
        held.total = held.total.saturating_sub(1);
        if let Some(n) = held.by_source.get_mut(&self.source) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.by_source.remove(&self.source);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn per_source_bound_leaves_other_sources_their_places() {
        let p = PreAuth::new(10, 2);
        let a1 = p.admit(ip(1)).expect("first");
        let _a2 = p.admit(ip(1)).expect("second");
        assert_eq!(p.admit(ip(1)).err(), Some(Refused::Source));
        let _b = p.admit(ip(2)).expect("another source");
        drop(a1);
        let _a3 = p.admit(ip(1)).expect("a place given back is free again");
        assert_eq!(p.held(), 3);
    }

    #[test]
    fn total_bound_holds_across_sources_and_zero_means_none() {
        let p = PreAuth::new(2, 0);
        let _a = p.admit(ip(1)).expect("a");
        let _b = p.admit(ip(2)).expect("b");
        assert_eq!(p.admit(ip(3)).err(), Some(Refused::Total));
        let unbounded = PreAuth::new(0, 0);
        let slots: Vec<_> = (0..100)
            .map(|_| unbounded.admit(ip(1)).expect("no bound"))
            .collect();
        assert_eq!(unbounded.held(), 100);
        drop(slots);
        assert_eq!(unbounded.held(), 0);
        assert!(unbounded.held.lock().by_source.is_empty());
    }
}
