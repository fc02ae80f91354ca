//! The listen mailbox (`sessionreg::mailbox`) beside crossbeam's
//! `ArrayQueue` (bounded, lock-free, MPMC, no close), on the same workloads
//! in the same group, both holding 64 `usize`s:
//!
//! * `push_pop_1t/*`: one thread pushes 32 items, then pops them, over and
//!   over: each operation uncontended, on a queue neither empty nor full.
//!   Time per item (one push and one pop).
//! * `mpsc_2p1c/*`: two producer threads push into one queue that a third
//!   thread pops, all started together on a barrier; a producer that finds
//!   it full, and the consumer that finds it empty, yield and try again.
//!   Wall time from the first start to the last finish ÷ items. (On a
//!   2-core machine three threads share two cores: the figure includes
//!   their scheduling.)
//!
//! `cargo bench --bench mailbox` runs the group. Untimed, for callgrind:
//! `cargo bench --bench mailbox -- --count <mailbox|array_queue> <n>` runs
//! `n` pushes and `n` pops (in rounds of 32), each through a function of
//! its own that is never inlined (`push_one`, `pop_one`), so that
//! `callgrind_annotate --inclusive=yes` shows each one's instructions; two
//! sizes, subtracted, give instructions per push and per pop free of setup:
//!
//! ```text
//! cargo bench --bench mailbox --no-run   # prints the binary's path
//! valgrind --tool=callgrind --callgrind-out-file=cg.1 $BIN --count mailbox 100000
//! valgrind --tool=callgrind --callgrind-out-file=cg.2 $BIN --count mailbox 200000
//! callgrind_annotate --inclusive=yes cg.N | grep -E 'push_one|pop_one'
//! ```

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use crossbeam_queue::ArrayQueue;
use sessionreg::mailbox::{Consumer, Mailbox, Popped, Pushed};
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Items each queue holds: the listen streams' default.
const CAPACITY: usize = 64;
/// Items pushed before they are popped, in `push_pop_1t` and `--count`.
const ROUND: u64 = 32;

/// A bounded queue: its producers' side (shared) and its consumer's.
trait Peer {
    type Tx: Send + Sync + 'static;
    type Rx: Send + 'static;
    fn new() -> (Arc<Self::Tx>, Self::Rx);
    /// Whether the item was queued (not full).
    fn push(tx: &Self::Tx, item: usize) -> bool;
    fn pop(rx: &mut Self::Rx) -> Option<usize>;
}

struct Ours;

impl Peer for Ours {
    type Tx = Mailbox<usize>;
    type Rx = Consumer<usize>;

    fn new() -> (Arc<Mailbox<usize>>, Consumer<usize>) {
        Mailbox::with_capacity(CAPACITY).unwrap()
    }

    #[inline]
    fn push(tx: &Mailbox<usize>, item: usize) -> bool {
        match tx.push(item) {
            Pushed::Queued => true,
            Pushed::Full(_) => false,
            Pushed::Closed(_) => unreachable!("never closed"),
        }
    }

    #[inline]
    fn pop(rx: &mut Consumer<usize>) -> Option<usize> {
        match rx.pop() {
            Popped::Item(item) => Some(item),
            Popped::Empty => None,
            Popped::Closed => unreachable!("never closed"),
        }
    }
}

struct Crossbeam;

impl Peer for Crossbeam {
    type Tx = ArrayQueue<usize>;
    type Rx = Arc<ArrayQueue<usize>>;

    fn new() -> (Arc<ArrayQueue<usize>>, Arc<ArrayQueue<usize>>) {
        let queue = Arc::new(ArrayQueue::new(CAPACITY));
        (Arc::clone(&queue), queue)
    }

    #[inline]
    fn push(tx: &ArrayQueue<usize>, item: usize) -> bool {
        tx.push(item).is_ok()
    }

    #[inline]
    fn pop(rx: &mut Arc<ArrayQueue<usize>>) -> Option<usize> {
        rx.pop()
    }
}

fn push_pop_1t<P: Peer>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str) {
    let (tx, mut rx) = P::new();
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            let mut left = iters;
            while left > 0 {
                let n = left.min(ROUND);
                for i in 0..n {
                    assert!(P::push(&tx, black_box(i as usize)));
                }
                for _ in 0..n {
                    black_box(P::pop(&mut rx).expect("pushed"));
                }
                left -= n;
            }
            start.elapsed()
        })
    });
}

/// Two producers, one consumer, `iters` items in all.
fn mpsc<P: Peer>(iters: u64) -> Duration {
    let (tx, mut rx) = P::new();
    let barrier = Barrier::new(3);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let producers: Vec<_> = (0..2u64)
            .map(|t| {
                let (tx, barrier) = (&tx, &barrier);
                let n = iters / 2 + u64::from(t < iters % 2);
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    for i in 0..n {
                        while !P::push(tx, black_box(i as usize)) {
                            std::thread::yield_now();
                        }
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        let consumer = {
            let barrier = &barrier;
            let rx = &mut rx;
            s.spawn(move || {
                barrier.wait();
                let start = Instant::now();
                for _ in 0..iters {
                    loop {
                        match P::pop(rx) {
                            Some(item) => {
                                black_box(item);
                                break;
                            }
                            None => std::thread::yield_now(),
                        }
                    }
                }
                (start, Instant::now())
            })
        };
        let mut spans: Vec<_> = producers.into_iter().map(|p| p.join().unwrap()).collect();
        spans.push(consumer.join().unwrap());
        spans
    });
    assert!(P::pop(&mut rx).is_none(), "every item popped");
    let start = spans.iter().map(|s| s.0).min().unwrap();
    let end = spans.iter().map(|s| s.1).max().unwrap();
    end - start
}

fn mpsc_2p1c<P: Peer>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str) {
    group.bench_function(id, |b| b.iter_custom(mpsc::<P>));
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("mailbox");
    push_pop_1t::<Ours>(&mut group, "push_pop_1t/sessionreg");
    push_pop_1t::<Crossbeam>(&mut group, "push_pop_1t/array_queue");
    mpsc_2p1c::<Ours>(&mut group, "mpsc_2p1c/sessionreg");
    mpsc_2p1c::<Crossbeam>(&mut group, "mpsc_2p1c/array_queue");
    group.finish();
}

#[inline(never)]
fn push_one<P: Peer>(tx: &P::Tx, item: usize) -> bool {
    P::push(tx, item)
}

#[inline(never)]
fn pop_one<P: Peer>(rx: &mut P::Rx) -> Option<usize> {
    P::pop(rx)
}

/// `n` pushes and `n` pops, in rounds of [`ROUND`], untimed.
fn count<P: Peer>(n: u64) {
    let (tx, mut rx) = P::new();
    let mut left = n;
    while left > 0 {
        let k = left.min(ROUND);
        for i in 0..k {
            assert!(push_one::<P>(&tx, black_box(i as usize)));
        }
        for _ in 0..k {
            black_box(pop_one::<P>(&mut rx).expect("pushed"));
        }
        left -= k;
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--count") {
        let (who, n) = match &args[at + 1..] {
            [who, n, ..] => (who.as_str(), n.parse().expect("a count")),
            _ => panic!("--count <mailbox|array_queue> <n>"),
        };
        match who {
            "mailbox" => count::<Ours>(n),
            "array_queue" => count::<Crossbeam>(n),
            other => panic!("unknown peer {other}"),
        }
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
