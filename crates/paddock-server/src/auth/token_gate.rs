//! What a bearer token must get past before paddock asks the upstream about it: a token that
//! cannot be a service account's (not a compact JWS) is refused here; a token seen lately is
//! answered from memory, refusals remembered longer than acceptances; and the TokenReviews of
//! tokens not seen lately are rate-bounded per replica, so that a stream of random tokens
//! becomes at most `token_review_qps` TokenReviews a second upstream, not one per request.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use paddock_core::TenantId;
use paddock_core::fair::refusal::retry_after_secs;
use paddock_core::fair::share::TokenBucket;
use parking_lot::Mutex;

/// How long an accepted token is taken on trust (a deleted pod's token stops working within
/// this).
const ACCEPTED_TTL: Duration = Duration::from_secs(5);
/// How long a refused token stays refused without asking again.
const REFUSED_TTL: Duration = Duration::from_secs(60);
/// Bound on each memory (dropped wholesale beyond it; refusals apart, so that a flood of
/// bad tokens never evicts the good ones).
const MEMORY_MAX: usize = 10_000;
/// Longest token looked at (a service account's JWT is about 1 KB; kube-apiserver reads any
/// header up to its 1 MiB limit, but no token it issues comes near this).
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The outcome of a TokenReview: the tenant and the tenant's name for the user, or why not.
pub type Review = Result<(TenantId, String), String>;

/// What to do with a token before any upstream call.
#[derive(Debug, PartialEq)]
pub enum Gate {
    /// Remembered: this outcome.
    Known(Review),
    /// Not remembered; a TokenReview may be sent.
    Review,
    /// Not remembered, and the replica's TokenReview rate is spent: retry after this many
    /// seconds.
    Busy(u64),
}

/// Whether `token` has the shape of a compact JWS (three base64url parts), the only form of
/// a Kubernetes service-account token.
pub fn looks_like_service_account_token(token: &str) -> bool {
    token.len() <= MAX_TOKEN_BYTES
        && token.split('.').count() == 3
        && token.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

struct Memory {
    accepted: HashMap<[u8; 32], (Review, Instant)>,
    refused: HashMap<[u8; 32], (Review, Instant)>,
    reviews: TokenBucket,
    origin: Instant,
}

fn memory() -> &'static Mutex<Memory> {
    static MEMORY: OnceLock<Mutex<Memory>> = OnceLock::new();
    MEMORY.get_or_init(|| {
        Mutex::new(Memory {
            accepted: HashMap::new(),
            refused: HashMap::new(),
            reviews: TokenBucket::full(1, Duration::ZERO),
            origin: Instant::now(),
        })
    })
}

/// Looks `key` (the token's SHA-256) up, and if it is unknown takes a TokenReview from the
/// bucket of `qps` a second with `burst` banked (`qps` 0: no bound).
pub fn check(key: &[u8; 32], qps: u32, burst: u32) -> Gate {
    let now = Instant::now();
    let mut guard = memory().lock();
    let m = &mut *guard;
    for (map, ttl) in [
        (&mut m.accepted, ACCEPTED_TTL),
        (&mut m.refused, REFUSED_TTL),
    ] {
        match map.get(key) {
            Some((review, at)) if now.duration_since(*at) < ttl => {
                return Gate::Known(review.clone());
            }
            Some(_) => {
                map.remove(key);
            }
            None => {}
        }
    }
    let since = now.duration_since(m.origin);
    match m.reviews.take(since, qps, burst) {
        Ok(()) => Gate::Review,
        Err(wait) => Gate::Busy(retry_after_secs(wait)),
    }
}

/// Remembers a TokenReview's outcome.
pub fn remember(key: [u8; 32], review: Review) {
    let mut m = memory().lock();
    let map = if review.is_ok() {
        &mut m.accepted
    } else {
        &mut m.refused
    };
    if map.len() >= MEMORY_MAX {
        map.clear();
    }
    map.insert(key, (review, Instant::now()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_compact_jws_shapes_are_service_account_tokens() {
        assert!(looks_like_service_account_token("eyJh.eyJz.c2ln-_"));
        for bad in [
            "",
            "random-token",
            "a.b",
            "a..c",
            "a.b.c.d",
            "a.b.c=",
            "a.b c.d",
            "abc.def.ghi/",
        ] {
            assert!(!looks_like_service_account_token(bad), "{bad:?}");
        }
        let long = format!("a.{}.c", "b".repeat(MAX_TOKEN_BYTES));
        assert!(!looks_like_service_account_token(&long));
    }

    #[test]
    fn unknown_tokens_are_rate_bounded_and_refusals_remembered() {
        // Keys of this test only (the memory is the process's).
        let key = |i: u8| {
            [
                i, 0xee, 0x7e, 0x57, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                0, 0, 0, 0, 0, 0, 1,
            ]
        };
        // A rate of 1 a second with 3 banked: at most a few reviews, then Busy.
        let outcomes: Vec<Gate> = (0..20).map(|i| check(&key(i), 1, 3)).collect();
        let reviews = outcomes.iter().filter(|g| **g == Gate::Review).count();
        assert!(
            (1..=4).contains(&reviews),
            "{reviews} reviews of 20 unknown tokens"
        );
        assert!(
            outcomes
                .iter()
                .any(|g| matches!(g, Gate::Busy(s) if *s >= 1))
        );
        remember(key(200), Err("the bearer token is not valid".into()));
        assert_eq!(
            check(&key(200), 1, 3),
            Gate::Known(Err("the bearer token is not valid".into())),
            "a refusal is answered from memory, whatever the rate"
        );
        // No bound at all with qps 0.
        assert!((0..50).all(|i| check(&key(100 + i), 0, 0) == Gate::Review));
    }
}
