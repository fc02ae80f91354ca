//! The secret part of session ids: drawn from a thread-local CSPRNG in
//! batches, never repeated by a forked child, and compared in constant time.
//!
//! Why a batch, and what happens after `fork`, is in the design notes
//! (`src/docs/design.md`, "Ids"). `benches/registry.rs` (`floor/secret`)
//! repeats this draw through `rand` to measure it: keep the two alike.

use crate::sync::CacheRefCell;

/// Secrets drawn ahead, per thread, so that minting an id costs a
/// thread-local read rather than a trip through the generator.
struct Secrets {
    bytes: [u8; 8 * SECRETS_AHEAD],
    next: usize,
    /// [`fork::count`] when the batch was drawn.
    forks: u64,
}

const SECRETS_AHEAD: usize = 32;

crate::sync::cache_thread_local! {
    static SECRETS: CacheRefCell<Secrets> = const {
        CacheRefCell::new(Secrets {
            bytes: [0; 8 * SECRETS_AHEAD],
            next: SECRETS_AHEAD,
            forks: 0,
        })
    };
}

/// A fresh 64-bit secret from the thread-local CSPRNG (`rand`'s ThreadRng:
/// ChaCha, seeded and periodically reseeded from the OS): no syscall per id.
/// Drawn 32 at a time in one `fill_bytes`; each is wiped from the buffer as
/// it is handed out.
///
/// After `fork`, the child's copy of the batch (and of the generator) is the
/// parent's: a child that used it would mint the very secrets its parent
/// mints next. So a batch remembers how many forks the process had seen when
/// it was drawn, and a child throws it away and reseeds the generator from
/// the OS before drawing again (see [`fork`]).
#[inline]
pub(crate) fn fresh_secret() -> u64 {
    SECRETS.with(|secrets| {
        let mut secrets = secrets.borrow_mut();
        if secrets.next == SECRETS_AHEAD || secrets.forks != fork::count() {
            secrets.refill();
        }
        let at = 8 * secrets.next;
        secrets.next += 1;
        let word: &mut [u8; 8] = (&mut secrets.bytes[at..at + 8])
            .try_into()
            .expect("8 bytes");
        u64::from_le_bytes(std::mem::take(word))
    })
}

impl Secrets {
    /// Draws the next batch: once per `SECRETS_AHEAD` ids, so out of line.
    #[cold]
    #[inline(never)]
    fn refill(&mut self) {
        use rand::Rng as _;
        fork::watch();
        let forks = fork::count();
        let mut rng = rand::rng();
        if forks != self.forks {
            // The first batch since a fork: the generator's state is the
            // parent's.
            if let Err(error) = rng.reseed() {
                panic!("could not reseed the secret generator after fork: {error}");
            }
            self.forks = forks;
        }
        rng.fill_bytes(&mut self.bytes);
        self.next = 0;
    }
}

/// Telling a forked child from its parent, without a syscall per id.
pub(crate) mod fork {
    use crate::sync::{Ordering, ProcessAtomicU64, ProcessOnce};

    /// How many times this process is a fork's child of the process that
    /// first minted an id (bumped in each child).
    static FORKS: ProcessAtomicU64 = ProcessAtomicU64::new(0);

    /// The fork count: a plain load of a word nobody writes but a child
    /// right after `fork`. Relaxed: the child's handler runs on the one
    /// thread the child has, before `fork` returns there.
    #[inline]
    pub(crate) fn count() -> u64 {
        FORKS.load(Ordering::Relaxed)
    }

    /// Registers the child handler, once per process (it is inherited by
    /// children).
    pub(crate) fn watch() {
        #[cfg(unix)]
        {
            static ONCE: ProcessOnce = ProcessOnce::new();
            ONCE.call_once(|| {
                // SAFETY: `child` is async-signal-safe (one atomic add), as
                // a handler running in a child of a multithreaded process
                // must be. Registration can fail only for lack of memory;
                // then fork protection is off, which we cannot remedy.
                let _ = unsafe { libc::pthread_atfork(None, None, Some(child)) };
            });
        }
    }

    #[cfg(unix)]
    extern "C" fn child() {
        FORKS.fetch_add(1, Ordering::Relaxed);
    }
}

/// Compares two secrets without a data-dependent branch or early exit.
///
/// A `u64` comparison is a single instruction; `black_box` keeps the
/// optimiser from turning the XOR into anything that depends on where the two
/// values first differ.
#[inline]
pub(crate) fn secrets_match(a: u64, b: u64) -> bool {
    std::hint::black_box(a ^ b) == 0
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn secrets_differ() {
        let a = fresh_secret();
        let b = fresh_secret();
        assert_ne!(a, b);
        assert!(secrets_match(a, a));
        assert!(!secrets_match(a, b));
    }
}
