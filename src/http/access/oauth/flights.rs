//! Introspections in flight, shared by token digest: the requests with one
//! token that arrive while it is being asked about wait for that answer
//! instead of asking again, so a burst of one token (a client's first
//! requests, or a flood of one bad token) costs one introspection however
//! many arrive at once.
//!
//! A flight is in the map only while a request is in it: the request that
//! leaves it first (with the answer, or cancelled) takes it out, so the map
//! holds at most one entry per request waiting. What a flight learns is
//! kept by its asker in the caches (`cache.rs`, `refusals.rs`) before the
//! flight is taken out; a request that comes after looks there first, and
//! so does the asker of a new flight (it may have missed the last one by a
//! hair).

use super::cache::Digest;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::OnceCell;

type Flight<T> = Arc<OnceCell<T>>;

/// The flights, by digest.
pub(crate) struct Flights<T> {
    map: Mutex<HashMap<Digest, Flight<T>>>,
}

impl<T> Default for Flights<T> {
    fn default() -> Flights<T> {
        Flights {
            map: Mutex::new(HashMap::new()),
        }
    }
}

/// Takes the flight out of the map when its request leaves it, unless
/// another flight took its place.
struct Leave<'a, T> {
    flights: &'a Flights<T>,
    digest: Digest,
    flight: Flight<T>,
}

impl<T> Drop for Leave<'_, T> {
    fn drop(&mut self) {
        let mut map = self.flights.map.lock().unwrap_or_else(|e| e.into_inner());
        if map
            .get(&self.digest)
            .is_some_and(|held| Arc::ptr_eq(held, &self.flight))
        {
            map.remove(&self.digest);
        }
    }
}

impl<T: Clone> Flights<T> {
    /// The answer of the flight of `digest`: joined if one is in the air,
    /// else made by `ask` (if the request that runs `ask` is cancelled, a
    /// request still waiting runs its own); and whether this request ran
    /// `ask`.
    pub(crate) async fn join<F, Fut>(&self, digest: Digest, ask: F) -> (T, bool)
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        let flight = Arc::clone(
            self.map
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(digest)
                .or_default(),
        );
        let leave = Leave {
            flights: self,
            digest,
            flight,
        };
        let mut asked = false;
        let answer = leave
            .flight
            .get_or_init(|| {
                asked = true;
                ask()
            })
            .await
            .clone();
        (answer, asked)
    }

    /// Flights in the air.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Requests in the flight of `digest`.
    #[cfg(test)]
    fn riders(&self, digest: &Digest) -> usize {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.get(digest)
            .map_or(0, |flight| Arc::strong_count(flight) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::access::digest::digest;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn requests_in_one_flight_ask_once_and_leave_nothing_behind() {
        let flights = Arc::new(Flights::<u32>::default());
        let asked = Arc::new(AtomicUsize::new(0));
        let (release, released) = tokio::sync::watch::channel(false);
        let mut waiting = Vec::new();
        for _ in 0..8 {
            let (flights, asked, mut released) =
                (Arc::clone(&flights), Arc::clone(&asked), released.clone());
            waiting.push(tokio::spawn(async move {
                flights
                    .join(digest("t"), || async move {
                        asked.fetch_add(1, Ordering::SeqCst);
                        let _ = released.wait_for(|go| *go).await;
                        7
                    })
                    .await
            }));
        }
        // Every request in the flight before it lands.
        while flights.riders(&digest("t")) != 8 {
            tokio::task::yield_now().await;
        }
        release.send(true).unwrap();
        let mut askers = 0;
        for request in waiting {
            let (answer, asked) = request.await.unwrap();
            assert_eq!(answer, 7);
            askers += usize::from(asked);
        }
        assert_eq!(askers, 1);
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        assert_eq!(flights.len(), 0);
        // Another token is another flight; a cancelled asker leaves none.
        let other = flights.join(digest("u"), || async { 8 }).await;
        assert_eq!(other, (8, true));
        let cancelled = tokio::time::timeout(
            std::time::Duration::from_millis(1),
            flights.join(digest("v"), std::future::pending::<u32>),
        )
        .await;
        assert!(cancelled.is_err());
        assert_eq!(flights.len(), 0);
    }
}
