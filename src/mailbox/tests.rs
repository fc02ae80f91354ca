//! The mailbox's tests: each operation, the wrap of positions and laps,
//! panicking drops, a model under proptest, and threads racing.

use super::queue::Mailbox;
use super::word::TAIL;
use super::*;
use crate::sync::{Arc, Ordering};
use proptest::prelude::*;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

/// Counts how often each item was dropped.
#[derive(Default)]
struct Drops(Mutex<Vec<usize>>);

impl Drops {
    fn item(self: &Arc<Self>, panics: bool) -> Item {
        let mut drops = self.0.lock().unwrap();
        drops.push(0);
        Item {
            id: drops.len() - 1,
            panics,
            drops: Arc::clone(self),
        }
    }

    fn of(&self, id: usize) -> usize {
        self.0.lock().unwrap()[id]
    }

    fn all(&self) -> Vec<usize> {
        self.0.lock().unwrap().clone()
    }
}

#[derive(Debug)]
struct Boom;

struct Item {
    id: usize,
    panics: bool,
    drops: Arc<Drops>,
}

impl Drop for Item {
    fn drop(&mut self) {
        self.drops.0.lock().unwrap()[self.id] += 1;
        if self.panics && !std::thread::panicking() {
            std::panic::panic_any(Boom);
        }
    }
}

impl fmt::Debug for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Item({})", self.id)
    }
}

fn id(popped: Popped<Item>) -> Option<usize> {
    match popped {
        Popped::Item(item) => Some(item.id),
        Popped::Empty => None,
        Popped::Closed => panic!("closed"),
    }
}

/// A mailbox whose positions start at `start`, with its consumer.
fn starting_at<T>(capacity: usize, start: u64) -> (Arc<Mailbox<T>>, Consumer<T>) {
    let mailbox = Arc::new(Mailbox::new(capacity, start).unwrap());
    let consumer = Consumer {
        mailbox: Arc::clone(&mailbox),
    };
    (mailbox, consumer)
}

#[test]
fn first_in_first_out_refused_at_exactly_the_capacity() {
    // 3 items in a ring of 4 slots: the bound is the capacity, not the ring.
    let (mailbox, mut consumer) = Mailbox::with_capacity(3).unwrap();
    assert_eq!(mailbox.capacity(), 3);
    assert_eq!(consumer.pop(), Popped::Empty);
    for i in 0..3 {
        assert_eq!(mailbox.push(i), Pushed::Queued);
    }
    assert_eq!(mailbox.len(), 3);
    assert_eq!(mailbox.push(3), Pushed::Full(3));
    assert_eq!(consumer.pop(), Popped::Item(0));
    assert_eq!(mailbox.push(3), Pushed::Queued);
    assert_eq!(mailbox.push(4).into_inner(), Some(4));
    for i in 1..4 {
        assert_eq!(consumer.pop(), Popped::Item(i));
    }
    assert_eq!(consumer.pop(), Popped::Empty);
    assert!(mailbox.is_empty() && !mailbox.is_closed());
}

#[test]
fn bad_capacities_are_refused_with_a_reason() {
    let zero = Mailbox::<u8>::with_capacity(0).unwrap_err();
    assert_eq!(zero, CapacityError::Zero);
    assert!(zero.to_string().contains("at least 1"), "{zero}");
    let big = Mailbox::<u8>::with_capacity(MAX_CAPACITY + 1).unwrap_err();
    assert_eq!(big, CapacityError::TooLarge(MAX_CAPACITY + 1));
    assert!(big.to_string().contains("maximum"), "{big}");
    let (mailbox, mut consumer) = Mailbox::<()>::with_capacity(MAX_CAPACITY).unwrap();
    for _ in 0..MAX_CAPACITY {
        assert!(mailbox.push(()).is_queued());
    }
    assert_eq!(mailbox.push(()), Pushed::Full(()));
    assert_eq!(mailbox.len(), MAX_CAPACITY);
    assert_eq!(consumer.pop(), Popped::Item(()));
}

#[test]
fn close_has_one_winner_drops_what_is_queued_and_refuses_after() {
    let drops = Arc::new(Drops::default());
    let (mailbox, mut consumer) = Mailbox::with_capacity(4).unwrap();
    for _ in 0..3 {
        assert!(mailbox.push(drops.item(false)).is_queued());
    }
    assert_eq!(id(consumer.pop()), Some(0));
    assert_eq!(drops.all(), [1, 0, 0], "a popped item is the caller's");
    assert_eq!(mailbox.close(), Closing::Won);
    assert_eq!(drops.all(), [1, 1, 1], "the close dropped what was queued");
    assert_eq!(mailbox.close(), Closing::AlreadyClosed);
    assert!(mailbox.is_closed() && mailbox.is_empty());
    assert!(matches!(consumer.pop(), Popped::Closed));
    let Pushed::Closed(back) = mailbox.push(drops.item(false)) else {
        panic!("a push after the close was queued");
    };
    assert_eq!(back.id, 3);
    drop(back);
    drop((mailbox, consumer));
    assert_eq!(drops.all(), [1, 1, 1, 1], "nothing dropped twice");
}

#[test]
fn dropping_the_mailbox_drops_what_is_queued_once() {
    let drops = Arc::new(Drops::default());
    let (mailbox, mut consumer) = Mailbox::with_capacity(2).unwrap();
    assert!(mailbox.push(drops.item(false)).is_queued());
    assert!(mailbox.push(drops.item(false)).is_queued());
    assert_eq!(id(consumer.pop()), Some(0));
    assert!(mailbox.push(drops.item(false)).is_queued());
    drop(consumer);
    assert_eq!(drops.all(), [1, 0, 0]);
    drop(mailbox);
    assert_eq!(drops.all(), [1, 1, 1]);
}

#[test]
fn slot_laps_wrap_past_the_stamps_byte() {
    // One slot: every push is a new lap of it; 1000 laps wrap the
    // stamp's byte several times.
    for capacity in [1, 2, 3] {
        let (mailbox, mut consumer) = Mailbox::with_capacity(capacity).unwrap();
        let mut next = 0;
        for i in 0..1000 {
            assert_eq!(mailbox.push(i), Pushed::Queued);
            if mailbox.len() == capacity {
                assert_eq!(mailbox.push(i), Pushed::Full(i));
                while let Popped::Item(got) = consumer.pop() {
                    assert_eq!(got, next);
                    next += 1;
                }
            }
        }
        while let Popped::Item(got) = consumer.pop() {
            assert_eq!(got, next);
            next += 1;
        }
        assert_eq!(next, 1000);
    }
}

#[test]
fn positions_wrap_at_the_tail_fields_end() {
    // Start a few positions before the 39-bit tail wraps to zero, and go
    // across it: pushes, pops, a close and the drop all find their
    // items on the other side.
    for capacity in [1, 3, 4] {
        let drops = Arc::new(Drops::default());
        let (mailbox, mut consumer) = starting_at(capacity, TAIL.max() - 4);
        let mut popped = Vec::new();
        for round in 0..6 {
            for _ in 0..=round % capacity {
                assert!(mailbox.push(drops.item(false)).is_queued());
            }
            while let Some(id) = id(consumer.pop()) {
                popped.push(id);
            }
        }
        assert!(
            TAIL.get(mailbox.state.load(Ordering::Relaxed)) < 100,
            "wrapped"
        );
        assert_eq!(popped, (0..popped.len()).collect::<Vec<_>>());
        // Queued across the wrap, then closed: dropped once, by the close.
        for _ in 0..capacity {
            assert!(mailbox.push(drops.item(false)).is_queued());
        }
        let n = drops.all().len();
        assert_eq!(mailbox.close(), Closing::Won);
        assert!(drops.all().iter().all(|d| *d == 1), "{:?}", drops.all());
        drop((mailbox, consumer));
        assert_eq!(drops.all(), vec![1; n]);
    }
    // The same, left to `Drop`.
    let drops = Arc::new(Drops::default());
    let (mailbox, consumer) = starting_at::<Item>(4, TAIL.max() - 1);
    for _ in 0..4 {
        assert!(mailbox.push(drops.item(false)).is_queued());
    }
    drop((mailbox, consumer));
    assert_eq!(drops.all(), [1, 1, 1, 1]);
}

#[test]
fn a_panicking_drop_in_close_leaves_none_behind() {
    let drops = Arc::new(Drops::default());
    let (mailbox, mut consumer) = Mailbox::with_capacity(4).unwrap();
    for panics in [false, true, false, true] {
        assert!(mailbox.push(drops.item(panics)).is_queued());
    }
    assert_eq!(id(consumer.pop()), Some(0));
    let panic = catch_unwind(AssertUnwindSafe(|| mailbox.close())).unwrap_err();
    assert!(panic.is::<Boom>());
    assert_eq!(drops.all(), [1, 1, 1, 1], "the rest still dropped");
    assert!(mailbox.is_closed());
    assert!(matches!(consumer.pop(), Popped::Closed));
    assert_eq!(mailbox.close(), Closing::AlreadyClosed);
    drop((mailbox, consumer));
    assert_eq!(drops.all(), [1, 1, 1, 1], "and not again by the drop");
}

#[test]
fn a_panicking_drop_in_drop_leaves_none_behind() {
    let drops = Arc::new(Drops::default());
    let (mailbox, consumer) = Mailbox::with_capacity(3).unwrap();
    for panics in [true, false, true] {
        assert!(mailbox.push(drops.item(panics)).is_queued());
    }
    drop(consumer);
    let panic = catch_unwind(AssertUnwindSafe(|| drop(mailbox))).unwrap_err();
    assert!(panic.is::<Boom>());
    assert_eq!(drops.all(), [1, 1, 1]);
}

#[test]
fn a_mailbox_dropped_while_unwinding_swallows_its_items_panics() {
    let drops = Arc::new(Drops::default());
    let result = catch_unwind(AssertUnwindSafe(|| {
        let (mailbox, _consumer) = Mailbox::with_capacity(2).unwrap();
        // `Item` skips its planned panic while the thread unwinds; one
        // that panics regardless is what reaches `Drop` here.
        struct Always {
            _item: Item,
        }
        impl Drop for Always {
            fn drop(&mut self) {
                std::panic::panic_any(Boom);
            }
        }
        assert!(mailbox
            .push(Always {
                _item: drops.item(false)
            })
            .is_queued());
        assert!(mailbox
            .push(Always {
                _item: drops.item(false)
            })
            .is_queued());
        panic!("unwinding");
    }));
    // Not aborted: the items' panics were caught and swallowed, and the
    // first panic is the one that comes out.
    let panic = result.unwrap_err();
    assert_eq!(panic.downcast_ref::<&str>(), Some(&"unwinding"));
    assert_eq!(drops.all(), [1, 1]);
}

#[test]
fn two_producers_one_consumer_lose_and_duplicate_nothing_in_order() {
    const EACH: usize = 20_000;
    let (mailbox, mut consumer) = Mailbox::with_capacity(8).unwrap();
    let producers: Vec<_> = (0..2)
        .map(|who| {
            let mailbox = Arc::clone(&mailbox);
            std::thread::spawn(move || {
                let mut full = 0;
                for i in 0..EACH {
                    let mut item = (who, i);
                    loop {
                        match mailbox.push(item) {
                            Pushed::Queued => break,
                            Pushed::Full(back) => {
                                full += 1;
                                item = back;
                                std::thread::yield_now();
                            }
                            Pushed::Closed(_) => panic!("never closed"),
                        }
                    }
                }
                full
            })
        })
        .collect();
    let mut next = [0; 2];
    while next != [EACH; 2] {
        match consumer.pop() {
            Popped::Item((who, i)) => {
                assert_eq!(i, next[who], "producer {who}'s items out of order");
                next[who] += 1;
            }
            Popped::Empty => std::thread::yield_now(),
            Popped::Closed => panic!("never closed"),
        }
    }
    for producer in producers {
        producer.join().unwrap();
    }
    assert_eq!(consumer.pop(), Popped::Empty);
}

#[test]
fn close_racing_pushes_and_pops_no_item_after_it_each_once() {
    for round in 0..50 {
        let drops = Arc::new(Drops::default());
        let (mailbox, mut consumer) = Mailbox::with_capacity(4).unwrap();
        let closed = Arc::new(AtomicBool::new(false));
        let producers: Vec<_> = (0..2)
            .map(|_| {
                let (mailbox, drops) = (Arc::clone(&mailbox), Arc::clone(&drops));
                std::thread::spawn(move || {
                    let mut queued = Vec::new();
                    loop {
                        let item = drops.item(false);
                        let id = item.id;
                        match mailbox.push(item) {
                            Pushed::Queued => queued.push(id),
                            Pushed::Full(back) => {
                                drop(back);
                                std::thread::yield_now();
                            }
                            Pushed::Closed(back) => {
                                assert_eq!(back.id, id);
                                return queued;
                            }
                        }
                    }
                })
            })
            .collect();
        let consumer = {
            let (closed, drops) = (Arc::clone(&closed), Arc::clone(&drops));
            std::thread::spawn(move || {
                let mut popped = Vec::new();
                loop {
                    let after_close = closed.load(Ordering::Acquire);
                    match consumer.pop() {
                        Popped::Item(item) => {
                            assert!(!after_close, "an item popped after the close");
                            assert_eq!(drops.of(item.id), 0);
                            popped.push(item.id);
                        }
                        Popped::Empty => std::thread::yield_now(),
                        Popped::Closed => return (popped, consumer),
                    }
                }
            })
        };
        std::thread::sleep(std::time::Duration::from_micros(50 * (round % 5)));
        assert_eq!(mailbox.close(), Closing::Won);
        closed.store(true, Ordering::Release);
        let queued: Vec<usize> = producers
            .into_iter()
            .flat_map(|p| p.join().unwrap())
            .collect();
        let (popped, consumer) = consumer.join().unwrap();
        drop((mailbox, consumer));
        // Every item was dropped once: popped ones by the consumer (after
        // it recorded them), queued ones by the close or the drop,
        // refused ones by their producers.
        assert!(drops.all().iter().all(|d| *d == 1), "round {round}");
        let mut both: Vec<usize> = popped.clone();
        both.retain(|id| !queued.contains(id));
        assert!(both.is_empty(), "popped but never queued: {both:?}");
    }
}

#[test]
fn signals_coalesce_are_taken_once_and_die_with_the_close() {
    let (mailbox, mut consumer) = Mailbox::with_capacity(1).unwrap();
    let [a, b, c] = [0, 1, 2].map(|i| Signal::new(i).unwrap());
    assert_eq!(Signal::new(SIGNALS), None);
    assert_eq!(consumer.take_signals(), Taken::None);
    assert_eq!(mailbox.raise(a), Raised::Up);
    assert_eq!(mailbox.raise(a), Raised::AlreadyUp, "coalesced");
    assert_eq!(mailbox.raise(c), Raised::Up);
    // A full queue does not refuse a signal, and a signal takes no
    // place in the queue.
    assert_eq!(mailbox.push(7), Pushed::Queued);
    assert_eq!(mailbox.push(8), Pushed::Full(8));
    assert_eq!(mailbox.len(), 1);
    let Taken::Signals(up) = consumer.take_signals() else {
        panic!("two signals were up");
    };
    assert!(up.contains(a) && !up.contains(b) && up.contains(c));
    assert_eq!(up.iter().collect::<Vec<_>>(), [a, c]);
    assert_eq!(consumer.take_signals(), Taken::None, "taken once");
    assert_eq!(consumer.pop(), Popped::Item(7), "the item is untouched");
    assert_eq!(mailbox.raise(b), Raised::Up);
    assert_eq!(mailbox.close(), Closing::Won);
    assert_eq!(
        consumer.take_signals(),
        Taken::Closed,
        "died with the close"
    );
    assert_eq!(mailbox.raise(a), Raised::Closed);
    assert_eq!(consumer.take_signals(), Taken::Closed);
    assert_eq!(consumer.pop(), Popped::Closed);
}

#[test]
fn signals_raised_between_pushes_and_pops_leave_the_queue_whole() {
    // Raises change the word under a push's CAS and around a pop's
    // commit: every item still comes out once, in order, across the
    // tail's wrap.
    let (mailbox, mut consumer) = starting_at(3, TAIL.max() - 5);
    let signal = Signal::new(1).unwrap();
    let mut next = 0;
    for i in 0..40u32 {
        assert!(mailbox.push(i).is_queued());
        let _ = mailbox.raise(signal);
        if i % 3 == 2 {
            assert!(matches!(consumer.take_signals(), Taken::Signals(_)));
            while let Popped::Item(got) = consumer.pop() {
                assert_eq!(got, next);
                next += 1;
                let _ = mailbox.raise(signal);
            }
        }
    }
    assert_eq!(next, 39);
    assert_eq!(consumer.pop(), Popped::Item(39));
    assert_eq!(mailbox.len(), 0);
}

#[test]
fn raisers_racing_the_consumer_lose_no_signal_before_the_close() {
    // Each raiser raises its own signal again and again; the consumer
    // takes. A raise that found its signal down was taken afterwards,
    // unless the close came first: counted on both sides.
    let (mailbox, mut consumer) = Mailbox::<()>::with_capacity(1).unwrap();
    let raisers: Vec<_> = (0..SIGNALS)
        .map(|i| {
            let mailbox = Arc::clone(&mailbox);
            std::thread::spawn(move || {
                let signal = Signal::new(i).unwrap();
                let mut ups = 0u64;
                loop {
                    match mailbox.raise(signal) {
                        Raised::Up => ups += 1,
                        Raised::AlreadyUp => std::thread::yield_now(),
                        Raised::Closed => return ups,
                    }
                }
            })
        })
        .collect();
    let mut taken = [0u64; SIGNALS as usize];
    for _ in 0..20_000 {
        if let Taken::Signals(up) = consumer.take_signals() {
            for signal in up.iter() {
                taken[signal.index() as usize] += 1;
            }
        }
    }
    // Whatever is up at the close is lost with it; count it first.
    assert_eq!(mailbox.close(), Closing::Won);
    let ups: Vec<u64> = raisers.into_iter().map(|r| r.join().unwrap()).collect();
    for i in 0..SIGNALS as usize {
        assert!(
            ups[i] == taken[i] || ups[i] == taken[i] + 1,
            "signal {i}: up {} times, taken {}",
            ups[i],
            taken[i]
        );
    }
}

#[derive(Clone, Debug)]
enum Op {
    Push,
    Pop,
    Close,
    Raise(u32),
    Take,
}

proptest! {
    /// Random pushes, pops and closes on one thread, against a
    /// `VecDeque` that says what each must do: results, lengths, and
    /// which items are dropped when.
    #[test]
    fn behaves_as_a_bounded_deque(
        capacity in 1usize..6,
        start in prop_oneof![Just(0u64), Just(TAIL.max() - 7), any::<u64>()],
        ops in proptest::collection::vec(
            prop_oneof![
                6 => Just(Op::Push),
                5 => Just(Op::Pop),
                1 => Just(Op::Close),
                3 => (0..SIGNALS).prop_map(Op::Raise),
                2 => Just(Op::Take),
            ],
            0..80,
        ),
    ) {
        let drops = Arc::new(Drops::default());
        let (mailbox, mut consumer) = starting_at(capacity, start);
        let mut model: VecDeque<usize> = VecDeque::new();
        let mut closed = false;
        let mut up = [false; SIGNALS as usize];
        for op in ops {
            match op {
                Op::Push => {
                    let item = drops.item(false);
                    let id = item.id;
                    match mailbox.push(item) {
                        Pushed::Queued => {
                            prop_assert!(!closed && model.len() < capacity);
                            model.push_back(id);
                        }
                        Pushed::Full(back) => {
                            prop_assert!(!closed && model.len() == capacity);
                            prop_assert_eq!(back.id, id);
                        }
                        Pushed::Closed(back) => {
                            prop_assert!(closed);
                            prop_assert_eq!(back.id, id);
                        }
                    }
                }
                Op::Pop => match consumer.pop() {
                    Popped::Item(item) => {
                        prop_assert_eq!(Some(item.id), model.pop_front());
                        prop_assert_eq!(drops.of(item.id), 0);
                    }
                    Popped::Empty => prop_assert!(!closed && model.is_empty()),
                    Popped::Closed => prop_assert!(closed),
                },
                Op::Raise(i) => {
                    let raised = mailbox.raise(Signal::new(i).unwrap());
                    let expected = match (closed, up[i as usize]) {
                        (true, _) => Raised::Closed,
                        (false, true) => Raised::AlreadyUp,
                        (false, false) => Raised::Up,
                    };
                    prop_assert_eq!(raised, expected);
                    up[i as usize] |= !closed;
                }
                Op::Take => {
                    let taken = consumer.take_signals();
                    let expected: Vec<u32> =
                        (0..SIGNALS).filter(|i| up[*i as usize]).collect();
                    match taken {
                        Taken::Closed => prop_assert!(closed),
                        Taken::None => prop_assert!(!closed && expected.is_empty()),
                        Taken::Signals(set) => {
                            prop_assert!(!closed);
                            let got: Vec<u32> = set.iter().map(Signal::index).collect();
                            prop_assert_eq!(got, expected);
                        }
                    }
                    up = [false; SIGNALS as usize];
                }
                Op::Close => {
                    let won = mailbox.close().is_won();
                    prop_assert_eq!(won, !closed);
                    for id in model.drain(..) {
                        prop_assert_eq!(drops.of(id), 1, "dropped by the close");
                    }
                    closed = true;
                }
            }
            prop_assert_eq!(mailbox.len(), model.len());
            prop_assert_eq!(mailbox.is_closed(), closed);
            for id in &model {
                prop_assert_eq!(drops.of(*id), 0, "queued, not dropped");
            }
        }
        drop((mailbox, consumer));
        prop_assert!(drops.all().iter().all(|d| *d == 1), "{:?}", drops.all());
    }
}
