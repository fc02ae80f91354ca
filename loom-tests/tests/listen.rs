//! A listen stream's life, as the HTTP layer builds it out of the core
//! (`src/http/listen/`): each listener is an entry of a [`Registry`] whose
//! value holds its [`Mailbox`]; the terminate winner's close callback
//! closes the mailbox; a topic holds the listener's mailbox itself (the
//! layer's `Tap`), and a publisher pushes into it with no lookup by id, so
//! nothing but the mailbox's close stands between a publication and an
//! ended listener; the listener's stream pops. Under every interleaving loom
//! explores:
//!
//! * a publisher racing the listener's end (a terminate by another path):
//!   the close callback runs exactly once; once the terminate that won has
//!   returned (its cleanup ran), the stream pops nothing more, so no event
//!   is delivered after the cleanup; the event is popped or dropped exactly
//!   once, never both, never lost;
//! * a list change (a kind's signal, raised rather than pushed) racing the
//!   listener's end: once the terminate that won has returned, the stream
//!   takes no signal; a signal it took was raised before the end;
//! * two ends racing (the client going away, the server shutting down):
//!   one winner, one cleanup, its reason the winner's.
#![cfg(sessionreg_loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use loom_tests::{model, race_point, Log, Tracked};
use sessionreg::mailbox::{Consumer, Mailbox, Popped, Pushed, Raised, Signal, Taken};
use sessionreg::{Reason, Registry, SessionId};

/// A listener: its mailbox (the layer's `Inbox`, without the waker).
struct Listener {
    mailbox: std::sync::Arc<Mailbox<Tracked>>,
}

/// A registry of listeners whose close callback closes the mailbox and
/// counts the cleanups, as `Listeners::new` does.
fn listeners(cleanups: &Arc<AtomicUsize>) -> Registry<Listener> {
    let cleanups = Arc::clone(cleanups);
    Registry::builder()
        .capacity(2)
        .shards(1)
        .on_close(move |_: &SessionId, listener: &Listener, _: Reason| {
            let _ = listener.mailbox.close();
            cleanups.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap()
}

/// What a topic holds of a listener: its mailbox (the layer's `Tap`).
type Tap = std::sync::Arc<Mailbox<Tracked>>;

/// One listener, registered: its id, its topic's hold on it and its
/// stream's consumer.
fn open(registry: &Registry<Listener>) -> (SessionId, Tap, Consumer<Tracked>) {
    let (mailbox, consumer) = Mailbox::with_capacity(2).unwrap();
    let tap = std::sync::Arc::clone(&mailbox);
    let id = registry.insert(Listener { mailbox }).ok().unwrap();
    (id, tap, consumer)
}

/// What the layer's `Listeners::offer` does with a topic's member: push
/// into its mailbox. Whether the event was queued.
fn publish(tap: &Tap, event: Tracked) -> bool {
    matches!(tap.push(event), Pushed::Queued)
}

/// A publisher pushes an event while another thread ends the listener.
/// After the end that won has returned, the stream's pops find the
/// mailbox closed: nothing is delivered after the cleanup. The event is
/// popped at most once and dropped once; the cleanup ran once.
#[test]
fn no_event_is_delivered_after_the_listeners_cleanup_ran() {
    model(|| {
        let log = Log::new();
        let cleanups = Arc::new(AtomicUsize::new(0));
        let registry = Arc::new(listeners(&cleanups));
        let (id, tap, mut consumer) = open(&registry);
        let publisher = {
            let event = log.value();
            thread::spawn(move || publish(&tap, event))
        };
        let ender = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || registry.terminate(&id, Reason::Disconnected).is_won())
        };
        race_point();
        let won = ender.join().unwrap();
        assert!(won, "nothing else ended it");
        // The cleanup has run: the stream gets nothing more, ever.
        assert_eq!(cleanups.load(Ordering::SeqCst), 1);
        assert!(matches!(consumer.pop(), Popped::Closed));
        let queued = publisher.join().unwrap();
        assert!(matches!(consumer.pop(), Popped::Closed));
        let _ = queued;
        drop(consumer);
        drop(registry);
        assert_eq!(cleanups.load(Ordering::SeqCst), 1);
        log.assert_all_dropped_once();
    });
}

/// The stream pops while a publisher pushes and the listener ends: an
/// event the stream popped was pushed before the end won (the pop came
/// first), and once the end has returned no pop yields one.
#[test]
fn a_stream_popping_during_the_end_gets_an_event_only_before_it() {
    model(|| {
        let log = Log::new();
        let cleanups = Arc::new(AtomicUsize::new(0));
        let registry = Arc::new(listeners(&cleanups));
        let (id, tap, mut consumer) = open(&registry);
        let publisher = {
            let event = log.value();
            thread::spawn(move || publish(&tap, event))
        };
        let stream = thread::spawn(move || {
            let first = match consumer.pop() {
                Popped::Item(event) => Some(event.read()),
                _ => None,
            };
            (first, consumer)
        });
        race_point();
        assert!(registry.terminate(&id, Reason::Shutdown).is_won());
        let (_, mut consumer) = stream.join().unwrap();
        assert!(
            matches!(consumer.pop(), Popped::Closed),
            "nothing after the end"
        );
        publisher.join().unwrap();
        drop(consumer);
        drop(registry);
        assert_eq!(cleanups.load(Ordering::SeqCst), 1);
        log.assert_all_dropped_once();
    });
}

/// A publisher raises a kind's signal (the layer's list changes coalesce:
/// `Inbox::signal`) while the stream takes and another thread ends the
/// listener. Once the end that won has returned, its cleanup ran once and
/// the stream takes nothing more; a signal it took was raised (`Up`).
#[test]
fn no_list_change_is_taken_after_the_listeners_cleanup_ran() {
    model(|| {
        let cleanups = Arc::new(AtomicUsize::new(0));
        let registry = Arc::new(listeners(&cleanups));
        let (id, tap, mut consumer) = open(&registry);
        let tools = Signal::new(0).unwrap();
        let publisher = thread::spawn(move || tap.raise(tools));
        let stream = thread::spawn(move || {
            let first = consumer.take_signals();
            (first, consumer)
        });
        race_point();
        assert!(registry.terminate(&id, Reason::Drained).is_won());
        assert_eq!(cleanups.load(Ordering::SeqCst), 1);
        let (first, mut consumer) = stream.join().unwrap();
        assert_eq!(
            consumer.take_signals(),
            Taken::Closed,
            "nothing after the end"
        );
        let raised = publisher.join().unwrap();
        if matches!(first, Taken::Signals(_)) {
            assert_eq!(raised, Raised::Up);
        }
        assert_eq!(consumer.take_signals(), Taken::Closed);
        drop(consumer);
        drop(registry);
        assert_eq!(cleanups.load(Ordering::SeqCst), 1);
    });
}

/// The client going away and the server shutting down end one listener at
/// once: one winner, one cleanup.
#[test]
fn two_ends_of_one_listener_have_one_winner_and_one_cleanup() {
    model(|| {
        let cleanups = Arc::new(AtomicUsize::new(0));
        let registry = Arc::new(listeners(&cleanups));
        let (id, _tap, consumer) = open(&registry);
        let disconnect = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || registry.terminate(&id, Reason::Disconnected).is_won())
        };
        let shutdown = registry.terminate_all(Reason::Shutdown);
        let won = usize::from(disconnect.join().unwrap()) + shutdown;
        assert_eq!(won, 1);
        assert_eq!(cleanups.load(Ordering::SeqCst), 1);
        drop(consumer);
    });
}
