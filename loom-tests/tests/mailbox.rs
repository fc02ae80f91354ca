//! A listener's mailbox (`sessionreg::mailbox`): many producers push, one
//! consumer pops, and the listener's end closes it, all at once. Under every
//! interleaving loom explores:
//!
//! * two producers racing for a mailbox's last place: exactly one fits, the
//!   other gets its own item back, and the consumer pops both items in order;
//! * a push racing a pop and a close: the item is popped (whole, not dropped
//!   under the consumer) or dropped, by the close or with the mailbox, or
//!   handed back to its producer; exactly once, never lost;
//! * a pop racing a close: a pop the close happened before yields nothing,
//!   and an item popped was not also dropped by the close;
//! * a close racing a close: one winner; both find the mailbox closed;
//! * a ring of one slot, lapped three times by a producer while the consumer
//!   pops: every item comes out once, in order;
//! * a panicking item `Drop` in a close racing a push: every item is still
//!   dropped once and the panic comes out of the close;
//! * a signal raised while the consumer takes and the mailbox closes: taken
//!   at most once, only if the raise put it up, never after the close has
//!   returned; a raise racing a push: both land (the push's CAS sees the
//!   raise's `fetch_or`), the item popped whole and the signal taken.
//!
//! Items are [`Tracked`]: every drop is counted, a second drop or a read
//! after the drop fails, and loom's cell flags a read racing the drop. The
//! ring of `Tracked` items is aligned like a registry page, so
//! [`StorageWatch`] sees it freed with the mailbox.
#![cfg(sessionreg_loom)]

use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;
use loom::thread;
use loom_tests::{
    assert_planned, model, quiet_planned_panics, race_point, Fate, Log, StorageWatch, Tracked,
};
use sessionreg::mailbox::{Closing, Consumer, Mailbox, Popped, Pushed, Raised, Signal, Taken};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::{Acquire, Release};

/// What a push came to: the item's serial if it was queued; if it was
/// handed back, checks that it is the caller's own item, whole, and drops
/// it.
fn push(mailbox: &Mailbox<Tracked>, item: Tracked) -> Result<u32, Refused> {
    let serial = item.serial();
    let refused = match mailbox.push(item) {
        Pushed::Queued => return Ok(serial),
        Pushed::Full(back) => (Refused::Full, back),
        Pushed::Closed(back) => (Refused::Closed, back),
    };
    assert_eq!(refused.1.serial(), serial, "another item handed back");
    assert_eq!(refused.1.read(), serial);
    Err(refused.0)
}

/// Why a push was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refused {
    Full,
    Closed,
}

/// What a pop came to, with the item read whole (which fails if it was
/// dropped, and loom flags a read racing its drop) and dropped.
fn pop(consumer: &mut Consumer<Tracked>) -> Popped<u32> {
    match consumer.pop() {
        Popped::Item(item) => Popped::Item(item.read()),
        Popped::Empty => Popped::Empty,
        Popped::Closed => Popped::Closed,
    }
}

/// A mailbox of `capacity` with `serials` queued (new values from `log`).
fn mailbox_with(
    log: &std::sync::Arc<Log>,
    capacity: usize,
    queued: usize,
) -> (std::sync::Arc<Mailbox<Tracked>>, Consumer<Tracked>) {
    let (mailbox, consumer) = Mailbox::with_capacity(capacity).unwrap();
    for _ in 0..queued {
        assert!(push(&mailbox, log.value()).is_ok());
    }
    (mailbox, consumer)
}

/// Two producers race for the one place left in a mailbox of two (item 0
/// queued): exactly one is queued, the other is refused `Full` with its own
/// item back; the consumer then pops item 0 and the winner's, in order.
///
/// Fails if the reservation is a load and a store rather than a CAS (both
/// fit, and write one slot: loom flags the two writes).
#[test]
fn of_two_producers_racing_for_the_last_place_one_fits() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let (mailbox, mut consumer) = mailbox_with(&log, 2, 1);
        let producers: Vec<_> = (0..2)
            .map(|_| {
                let (mailbox, item) = (mailbox.clone(), log.value());
                thread::spawn(move || push(&mailbox, item))
            })
            .collect();
        race_point();
        let results: Vec<_> = producers.into_iter().map(|p| p.join().unwrap()).collect();

        let queued: Vec<u32> = results.iter().filter_map(|r| r.ok()).collect();
        assert_eq!(queued.len(), 1, "{results:?}");
        assert!(results.contains(&Err(Refused::Full)), "{results:?}");
        assert_eq!(pop(&mut consumer), Popped::Item(0));
        assert_eq!(pop(&mut consumer), Popped::Item(queued[0]));
        assert_eq!(pop(&mut consumer), Popped::Empty);
        drop((mailbox, consumer));
        log.assert_all_dropped_once();
        watch.assert_freed();
    });
}

/// A producer pushes item 0 while the consumer pops (twice) and the main
/// thread closes the mailbox. The item is queued and then popped (whole: not
/// dropped under the consumer), or queued and dropped (by the close, or with
/// the mailbox when its push was still writing it as the close looked), or
/// handed back `Closed`; in every case dropped exactly once.
///
/// Fails if the close drops an item a pop committed first, or a pop
/// returns one the close dropped (loom flags the read racing the drop, or
/// `Tracked` its second drop), or if the drop forgets an item written after
/// the close (a leak: dropped zero times).
#[test]
fn a_push_racing_a_pop_and_a_close_delivers_or_drops_its_item_once() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let (mailbox, mut consumer) = mailbox_with(&log, 2, 0);
        let producer = {
            let (mailbox, item) = (mailbox.clone(), log.value());
            thread::spawn(move || push(&mailbox, item))
        };
        let popper = thread::spawn(move || {
            let popped = [pop(&mut consumer), pop(&mut consumer)];
            (popped, consumer)
        });
        race_point();
        assert_eq!(mailbox.close(), Closing::Won);
        let pushed = producer.join().unwrap();
        let (popped, consumer) = popper.join().unwrap();

        let delivered = popped.contains(&Popped::Item(0));
        match pushed {
            Ok(0) => {}
            Err(Refused::Closed) => assert!(!delivered, "popped an item handed back"),
            other => panic!("push: {other:?}"),
        }
        // Never an item after `Closed`, never one twice.
        assert!(
            !matches!(
                popped,
                [Popped::Closed, Popped::Item(_)] | [Popped::Item(_), Popped::Item(_)]
            ),
            "{popped:?}"
        );
        assert!(mailbox.is_closed() && mailbox.is_empty());
        drop((mailbox, consumer));
        log.assert_all_dropped_once();
        watch.assert_freed();
    });
}

/// Item 0 is queued; the consumer pops while the main thread closes the
/// mailbox and then raises a flag. A pop that saw the flag (so the close
/// happened before it) yields `Closed`; the item is popped or dropped by
/// the close, once.
///
/// Fails if a pop's commit is not ordered against the close (a plain store
/// of the consumer's position: the close drops the item the pop returns).
#[test]
fn after_a_close_no_pop_yields_an_item() {
    model(|| {
        let log = Log::new();
        let (mailbox, mut consumer) = mailbox_with(&log, 1, 1);
        let closed = Arc::new(AtomicBool::new(false));
        let popper = {
            let closed = closed.clone();
            thread::spawn(move || {
                let first = pop(&mut consumer);
                let saw_close = closed.load(Acquire);
                let second = pop(&mut consumer);
                if saw_close {
                    assert_eq!(second, Popped::Closed, "popped after the close returned");
                }
                ([first, second], consumer)
            })
        };
        race_point();
        assert_eq!(mailbox.close(), Closing::Won);
        closed.store(true, Release);
        let (popped, consumer) = popper.join().unwrap();

        let items = popped.iter().filter(|p| **p == Popped::Item(0)).count();
        assert!(items <= 1, "{popped:?}");
        if items == 1 {
            assert_eq!(popped[0], Popped::Item(0), "{popped:?}");
        }
        assert_eq!(
            log.drops(0),
            1,
            "popped and dropped, or dropped by the close"
        );
        assert_eq!(push(&mailbox, log.value()), Err(Refused::Closed));
        drop((mailbox, consumer));
        log.assert_all_dropped_once();
    });
}

/// Two threads close a mailbox holding two items: one `Won`, the other
/// `AlreadyClosed`; once each has returned the mailbox is closed to both
/// ends; both items are dropped exactly once.
#[test]
fn of_two_closes_one_wins() {
    model(|| {
        let log = Log::new();
        let (mailbox, mut consumer) = mailbox_with(&log, 2, 2);
        let other = {
            let (mailbox, item) = (mailbox.clone(), log.value());
            thread::spawn(move || {
                let closing = mailbox.close();
                assert!(mailbox.is_closed());
                assert_eq!(push(&mailbox, item), Err(Refused::Closed));
                closing
            })
        };
        race_point();
        let here = mailbox.close();
        assert_eq!(pop(&mut consumer), Popped::Closed);
        assert_eq!(push(&mailbox, log.value()), Err(Refused::Closed));
        let there = other.join().unwrap();
        let won = [here, there].iter().filter(|c| c.is_won()).count();
        assert_eq!(won, 1, "{here:?}, {there:?}");
        assert_eq!(
            (log.drops(0), log.drops(1)),
            (1, 1),
            "dropped by the winner"
        );
        drop((mailbox, consumer));
        log.assert_all_dropped_once();
    });
}

/// A ring of one slot: a producer pushes items 0, 1, 2 (trying again while
/// the mailbox is full) while the consumer pops (trying again while it is
/// empty). Each push takes the slot on a new lap; the consumer gets all
/// three, in order, each once, and never reads a slot being written (loom's
/// cell would flag it).
#[test]
fn a_ring_of_one_slot_lapped_keeps_order() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let (mailbox, mut consumer) = mailbox_with(&log, 1, 0);
        let items: Vec<Tracked> = (0..3).map(|_| log.value()).collect();
        let producer = {
            let mailbox = mailbox.clone();
            thread::spawn(move || {
                for mut item in items {
                    loop {
                        match mailbox.push(item) {
                            Pushed::Queued => break,
                            Pushed::Full(back) => {
                                item = back;
                                thread::yield_now();
                            }
                            Pushed::Closed(_) => panic!("never closed"),
                        }
                    }
                }
            })
        };
        race_point();
        for expected in 0..3 {
            loop {
                match pop(&mut consumer) {
                    Popped::Item(serial) => {
                        assert_eq!(serial, expected);
                        break;
                    }
                    Popped::Empty => thread::yield_now(),
                    Popped::Closed => panic!("never closed"),
                }
            }
        }
        producer.join().unwrap();
        assert_eq!(pop(&mut consumer), Popped::Empty);
        drop((mailbox, consumer));
        log.assert_all_dropped_once();
        watch.assert_freed();
    });
}

/// Item 0, whose `Drop` panics, and item 1 are queued; a producer pushes
/// item 2 while the main thread closes. The close drops every item it finds
/// written, goes on past the panic and then raises it; item 2 is queued
/// (and dropped by the close or with the mailbox) or handed back. Every item
/// is dropped exactly once.
#[test]
fn a_panicking_drop_in_a_close_racing_a_push() {
    quiet_planned_panics();
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let (mailbox, consumer) = Mailbox::with_capacity(3).unwrap();
        assert!(push(&mailbox, log.value_that(Fate::PanicsOnDrop)).is_ok());
        assert!(push(&mailbox, log.value()).is_ok());
        let producer = {
            let (mailbox, item) = (mailbox.clone(), log.value());
            thread::spawn(move || push(&mailbox, item))
        };
        race_point();
        assert_planned(catch_unwind(AssertUnwindSafe(|| mailbox.close())));
        assert_eq!((log.drops(0), log.drops(1)), (1, 1));
        let pushed = producer.join().unwrap();
        assert!(matches!(pushed, Ok(2) | Err(Refused::Closed)), "{pushed:?}");
        assert_eq!(mailbox.close(), Closing::AlreadyClosed);
        drop((mailbox, consumer));
        log.assert_all_dropped_once();
        watch.assert_freed();
    });
}

/// Signal 0 is raised while the consumer takes (twice) and the main thread
/// closes. A take returns the signal only if the raise put it up
/// (`Raised::Up`), at most once over both takes, and a take that begins
/// after the close has returned finds the mailbox closed. A raise after the
/// close is refused.
///
/// Fails if a take clears the signals with a load and a store rather than
/// one RMW: the store undoes a close (or a raise) that came between.
#[test]
fn a_raise_racing_a_take_and_a_close_is_taken_once_and_never_after_the_close() {
    model(|| {
        let (mailbox, mut consumer) = Mailbox::<Tracked>::with_capacity(1).unwrap();
        let signal = Signal::new(0).unwrap();
        let closed = Arc::new(AtomicBool::new(false));
        let raiser = {
            let mailbox = mailbox.clone();
            thread::spawn(move || mailbox.raise(signal))
        };
        let taker = {
            let closed = closed.clone();
            thread::spawn(move || {
                let first = consumer.take_signals();
                let saw_close = closed.load(Acquire);
                let second = consumer.take_signals();
                if saw_close {
                    assert_eq!(second, Taken::Closed, "taken after the close returned");
                }
                [first, second]
            })
        };
        race_point();
        assert_eq!(mailbox.close(), Closing::Won);
        closed.store(true, Release);
        let raised = raiser.join().unwrap();
        let taken = taker.join().unwrap();

        let times = taken
            .iter()
            .filter(|t| matches!(t, Taken::Signals(up) if up.contains(signal)))
            .count();
        assert!(times <= 1, "{taken:?}");
        if times == 1 {
            assert_eq!(raised, Raised::Up, "{taken:?}");
        }
        assert_ne!(raised, Raised::AlreadyUp, "nobody else raised it");
        assert_eq!(mailbox.raise(signal), Raised::Closed);
    });
}

/// A raise races a push into an empty mailbox of one: the push's CAS
/// expects the whole word, which the raise changes, so it tries again; both
/// land. The consumer then pops the item whole and takes the signal, once.
///
/// Fails if a push writes its reservation with a plain store (it would
/// overwrite the raised bit: the signal is lost).
#[test]
fn a_raise_racing_a_push_keeps_both() {
    model(|| {
        let log = Log::new();
        let (mailbox, mut consumer) = mailbox_with(&log, 1, 0);
        let signal = Signal::new(2).unwrap();
        let raiser = {
            let mailbox = mailbox.clone();
            thread::spawn(move || mailbox.raise(signal))
        };
        race_point();
        assert_eq!(push(&mailbox, log.value()), Ok(0));
        assert_eq!(raiser.join().unwrap(), Raised::Up);
        let Taken::Signals(up) = consumer.take_signals() else {
            panic!("the signal was lost");
        };
        assert_eq!(up.iter().collect::<Vec<_>>(), [signal]);
        assert_eq!(consumer.take_signals(), Taken::None);
        assert_eq!(pop(&mut consumer), Popped::Item(0));
        assert_eq!(pop(&mut consumer), Popped::Empty);
        drop((mailbox, consumer));
        log.assert_all_dropped_once();
    });
}
