//! A legacy session's `resources/subscribe` racing the session's end, as
//! the HTTP layer builds it out of the core (`src/http/legacy/subscriptions.rs`,
//! `src/http/session/entry.rs`): each session is an entry of a [`Registry`]
//! whose value holds its subscriptions behind a lock, with a `closed` mark;
//! the terminate winner's close callback, under that lock, marks it closed
//! and leaves every URI it had joined; a subscribe that found the session
//! live takes the same lock and joins the URI's topic (and records it) only
//! while the session is not closed. Under every interleaving loom explores:
//!
//! * a subscribe racing a `DELETE` (a terminate by another thread): once
//!   both are done, the topic index holds nothing of the session (no join
//!   survives the session's cleanup), and the cleanup ran once.
//!
//! The model fails under the mutation of dropping the `closed` check (the
//! subscribe joins whenever it found the session live): a subscribe whose
//! lock comes after the cleanup took the list leaves the session in the
//! topic for good.
#![cfg(sessionreg_loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use loom_tests::{model, race_point};
use sessionreg::{Reason, Registry, SessionId};

/// What a session keeps of its subscriptions (the layer's `Subscriptions`).
#[derive(Default)]
struct Subscriptions {
    closed: bool,
    uris: Vec<u32>,
}

/// A session, as its registry entry holds it (the layer's `SessionEntry`,
/// its subscriptions alone).
#[derive(Default)]
struct Session {
    subscriptions: Mutex<Subscriptions>,
}

/// The topic index: who joined which URI (the layer's `Topics`, whose own
/// joins and leaves are each one step under its locks).
type Topics = Arc<Mutex<Vec<(SessionId, u32)>>>;

/// A registry of sessions whose close callback (the layer's
/// `session::entry::close`) marks the subscriptions closed and leaves
/// every URI under their lock, and counts the cleanups.
fn sessions(topics: &Topics, cleanups: &Arc<AtomicUsize>) -> Registry<Session> {
    let (topics, cleanups) = (Arc::clone(topics), Arc::clone(cleanups));
    Registry::builder()
        .capacity(2)
        .shards(1)
        .on_close(move |id: &SessionId, session: &Session, _: Reason| {
            let mut subscriptions = session.subscriptions.lock().unwrap();
            subscriptions.closed = true;
            let mut joined = topics.lock().unwrap();
            for uri in subscriptions.uris.drain(..) {
                joined.retain(|member| *member != (*id, uri));
            }
            cleanups.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap()
}

/// The layer's `subscribe`: the session found live (its request in flight),
/// then, under its subscriptions' lock, the URI joined only while the
/// session is not closed.
fn subscribe(registry: &Registry<Session>, topics: &Topics, id: &SessionId, uri: u32) {
    let Some(session) = registry.get(id) else {
        return;
    };
    let mut subscriptions = session.subscriptions.lock().unwrap();
    if subscriptions.closed {
        return;
    }
    topics.lock().unwrap().push((*id, uri));
    subscriptions.uris.push(uri);
}

/// A subscribe racing the session's end: whatever their order, nothing of
/// the session stays in the topics once both are done.
#[test]
fn no_subscription_survives_the_sessions_cleanup() {
    model(|| {
        let topics: Topics = Arc::default();
        let cleanups = Arc::new(AtomicUsize::new(0));
        let registry = Arc::new(sessions(&topics, &cleanups));
        let id = registry.insert(Session::default()).ok().unwrap();
        let subscriber = {
            let (registry, topics) = (Arc::clone(&registry), Arc::clone(&topics));
            thread::spawn(move || subscribe(&registry, &topics, &id, 7))
        };
        race_point();
        assert!(registry.terminate(&id, Reason::Deleted).is_won());
        subscriber.join().unwrap();
        assert_eq!(cleanups.load(Ordering::SeqCst), 1);
        assert!(
            topics.lock().unwrap().is_empty(),
            "a subscription outlived its session's cleanup"
        );
    });
}
