//! The secret part of session ids: 128 bits, drawn from a thread-local
//! CSPRNG in batches, never repeated by a forked child, and compared in
//! constant time; and the same fork-aware generator for any other random
//! bytes the crate needs ([`fill_random`]: the HTTP layer's nonces and keys).
//!
//! Why a batch, and what happens after `fork`, is in the design notes
//! (`src/docs/design.md`, "Ids"). `benches/registry.rs` (`floor/secret`)
//! repeats this draw through `rand` to measure it: keep the two alike.

use crate::sync::CacheRefCell;

/// The secret of one id: 128 bits, as two words (so that nothing holding
/// one, an id or a slot, needs the 16-byte alignment of a `u128`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Secret {
    /// The high 64 bits: the first half of the secret in the text form.
    pub(crate) high: u64,
    /// The low 64 bits.
    pub(crate) low: u64,
}

impl Secret {
    /// Whether two secrets are the same, without a data-dependent branch
    /// or early exit: both words are compared, always.
    ///
    /// The two XORs are ORed into one word before the one comparison;
    /// `black_box` keeps the optimiser from turning that into anything that
    /// depends on which word, or where in it, the two first differ.
    #[inline]
    pub(crate) fn matches(self, other: Secret) -> bool {
        std::hint::black_box((self.high ^ other.high) | (self.low ^ other.low)) == 0
    }

    /// 64 bits that depend on both words, what a slot keeps of its previous
    /// session's secret (`Slot::ended_digest`): two secrets that differ in
    /// either word have different digests (the low word goes through a
    /// multiplication by an odd constant, a bijection), so a secret guessed
    /// without knowing the real one matches a digest with probability
    /// 2^-64. Not a MAC: whoever knows a secret can make another with the
    /// same digest, and learns nothing by it. No branch on either word.
    #[inline]
    pub(crate) fn digest(self) -> u64 {
        self.high ^ self.low.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}

/// Secrets drawn ahead, per thread, so that minting an id costs a
/// thread-local read rather than a trip through the generator.
struct Secrets {
    /// Each secret's two words, as `Secret { high, low }` takes them.
    words: [[u64; 2]; SECRETS_AHEAD],
    next: usize,
    /// [`fork::count`] when the batch was drawn.
    forks: u64,
}

const SECRETS_AHEAD: usize = 32;

crate::sync::cache_thread_local! {
    static SECRETS: CacheRefCell<Secrets> = const {
        CacheRefCell::new(Secrets {
            words: [[0; 2]; SECRETS_AHEAD],
            next: SECRETS_AHEAD,
            forks: 0,
        })
    };
}

/// A fresh 128-bit secret from the thread-local CSPRNG (`rand`'s ThreadRng:
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
pub(crate) fn fresh_secret() -> Secret {
    SECRETS.with(|secrets| {
        let mut secrets = secrets.borrow_mut();
        if secrets.next == SECRETS_AHEAD || secrets.forks != fork::count() {
            secrets.refill();
        }
        let at = secrets.next;
        secrets.next += 1;
        let [high, low] = std::mem::take(&mut secrets.words[at]);
        Secret { high, low }
    })
}

impl Secrets {
    /// Draws the next batch: once per `SECRETS_AHEAD` ids, so out of line.
    #[cold]
    #[inline(never)]
    fn refill(&mut self) {
        use rand::RngExt as _;
        let mut rng = self.generator();
        // One `fill_bytes` over the whole batch (rand's `fill` of a `u64`
        // slice; words are little-endian on every machine).
        rng.fill(self.words.as_flattened_mut());
        self.next = 0;
    }

    /// This thread's generator, reseeded from the OS first if the process
    /// has forked since this thread last drew: its state (and the batch)
    /// are then the parent's, and the batch is thrown away.
    fn generator(&mut self) -> rand::rngs::ThreadRng {
        fork::watch();
        let forks = fork::count();
        let mut rng = rand::rng();
        if forks != self.forks {
            if let Err(error) = rng.reseed() {
                panic!("could not reseed the secret generator after fork: {error}");
            }
            self.forks = forks;
            self.words = [[0; 2]; SECRETS_AHEAD];
            self.next = SECRETS_AHEAD;
        }
        rng
    }
}

/// Fills `bytes` from the same fork-aware thread-local CSPRNG as the
/// secrets (for the HTTP layer's `requestState` nonces and random keys): a
/// forked child reseeds before it draws, so it never repeats what its
/// parent draws next. A nonce repeated under one AES-GCM key gives its
/// authentication key away.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) fn fill_random(bytes: &mut [u8]) {
    use rand::Rng as _;
    SECRETS.with(|secrets| secrets.borrow_mut().generator().fill_bytes(bytes));
}

/// Telling a forked child from its parent, without a syscall per id.
pub(crate) mod fork {
    use crate::sync::{Ordering, ProcessAtomicU64};

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

    /// Registers the child handler before this thread draws its first batch
    /// (it is inherited by children).
    ///
    /// Without waiting for another thread: a `Once` would make a thread
    /// wait while another registers, and a child forked in between would
    /// wait forever on its first batch (the registering thread is not in
    /// the child). So a thread that does not see the registration done
    /// registers the handler itself: the few threads that race at the
    /// first draw may register it more than once, and each fork then bumps
    /// the count by more than one, which is all the count has to do
    /// (change).
    pub(crate) fn watch() {
        #[cfg(unix)]
        {
            static REGISTERED: crate::sync::ProcessAtomicBool =
                crate::sync::ProcessAtomicBool::new(false);
            // Acquire/Release: a thread that sees it set sees the handler
            // registered (a fork after that runs it).
            if !REGISTERED.load(Ordering::Acquire) {
                // SAFETY: `child` is async-signal-safe (one atomic add), as
                // a handler running in a child of a multithreaded process
                // must be. Registration can fail only for lack of memory;
                // then fork protection is off, which we cannot remedy.
                let _ = unsafe { libc::pthread_atfork(None, None, Some(child)) };
                REGISTERED.store(true, Ordering::Release);
            }
        }
    }

    #[cfg(unix)]
    extern "C" fn child() {
        FORKS.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn secrets_differ_in_both_words() {
        // Past a batch, so a refill is crossed too.
        let drawn: Vec<Secret> = (0..2 * SECRETS_AHEAD + 1).map(|_| fresh_secret()).collect();
        let mut highs: Vec<u64> = drawn.iter().map(|s| s.high).collect();
        let mut lows: Vec<u64> = drawn.iter().map(|s| s.low).collect();
        highs.sort_unstable();
        highs.dedup();
        lows.sort_unstable();
        lows.dedup();
        assert_eq!(highs.len(), drawn.len(), "a high word repeated");
        assert_eq!(lows.len(), drawn.len(), "a low word repeated");
        assert!(drawn.iter().all(|s| s.high != s.low));
    }

    #[test]
    fn random_bytes_differ_and_leave_the_secrets_alone() {
        let mut a = [0u8; 32];
        let mut b = [0u8; 32];
        fill_random(&mut a);
        let secret = fresh_secret();
        fill_random(&mut b);
        assert_ne!(a, b);
        assert_ne!(a, [0; 32]);
        assert!(!secret.matches(fresh_secret()));
    }

    #[test]
    fn the_digest_changes_with_any_bit_of_either_word() {
        let a = fresh_secret();
        for bit in 0..64 {
            let high = Secret {
                high: a.high ^ (1 << bit),
                ..a
            };
            let low = Secret {
                low: a.low ^ (1 << bit),
                ..a
            };
            assert_ne!(a.digest(), high.digest(), "high bit {bit}");
            assert_ne!(a.digest(), low.digest(), "low bit {bit}");
        }
    }

    #[test]
    fn a_match_needs_both_words() {
        let a = fresh_secret();
        assert!(a.matches(a));
        assert!(!a.matches(fresh_secret()));
        for bit in 0..64 {
            let high = Secret {
                high: a.high ^ (1 << bit),
                ..a
            };
            let low = Secret {
                low: a.low ^ (1 << bit),
                ..a
            };
            assert!(!a.matches(high), "high bit {bit} ignored");
            assert!(!a.matches(low), "low bit {bit} ignored");
        }
    }
}
