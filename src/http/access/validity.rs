//! What a request's credential is good for ([`Validity`]): until when (an
//! access token's `exp`, plus the leeway it is verified with), and whether
//! it has been withdrawn since ([`Withdrawal`]: a static token removed by a
//! reload of the token set). The authenticator says it beside the
//! principal; the router puts it into the request's extensions; what a
//! request opens that outlives the request (a listen stream, a legacy
//! session's `GET` stream) holds it as a [`Term`], and ends when it runs
//! out, as the credential's next request would be refused.
//!
//! **What a stream pays.** The expiry is one more deadline on the timer the
//! stream's body already has for its keep-alive comments (`sse/beat.rs`):
//! no timer of its own, and it is read from the clock reading each frame
//! already takes. A withdrawal is a flag shared by every request of the
//! token: each frame reads it (a load of a line of its own, which nobody
//! writes until the withdrawal), and a stream going quiet registers its
//! waker with it, under the flag's lock, only when the waker differs from
//! the one registered before (once per stream, on a connection's one
//! task). The withdrawal
//! sets the flag and wakes the streams that registered: the work is the
//! reload's (a rare admin action), in the number of streams of the tokens
//! withdrawn. Nothing is on the publisher's path, and no request walks the
//! streams.

use crossbeam_utils::CachePadded;
use http::request::Parts;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;
use tokio::time::Instant;

/// What the credential of a request is good for: until when, and whether it
/// has been withdrawn. An [`Authenticator`](crate::http::Authenticator) says
/// it with
/// [`authenticate_with_validity`](crate::http::Authenticator::authenticate_with_validity);
/// the manager keeps it in the request's extensions, beside the
/// [`Principal`](crate::http::Principal), and a stream the request opens
/// (a listen stream, a legacy session's `GET` stream) ends when it runs
/// out. The default is good for ever.
///
/// ```
/// use sessionreg::http::{Validity, Withdrawal};
/// use std::time::{Duration, SystemTime};
///
/// let withdrawal = Withdrawal::new();
/// let exp = SystemTime::now() + Duration::from_secs(3600);
/// let validity = Validity::new().until(exp).withdrawn_by(withdrawal.clone());
/// assert_eq!(validity.expires_at(), Some(exp));
/// assert!(!validity.is_withdrawn());
/// withdrawal.withdraw();
/// assert!(validity.is_withdrawn());
/// ```
#[derive(Clone, Default)]
pub struct Validity {
    expires_at: Option<SystemTime>,
    withdrawal: Option<Withdrawal>,
}

impl Validity {
    /// Good for ever, and never withdrawn (what
    /// [`until`](Validity::until) and [`withdrawn_by`](Validity::withdrawn_by)
    /// narrow).
    pub fn new() -> Validity {
        Validity::default()
    }

    /// Good until `at` at most (the earlier of `at` and any expiry given
    /// before).
    pub fn until(mut self, at: SystemTime) -> Validity {
        self.expires_at = Some(self.expires_at.map_or(at, |before| before.min(at)));
        self
    }

    /// Withdrawn when `withdrawal` is.
    pub fn withdrawn_by(mut self, withdrawal: Withdrawal) -> Validity {
        self.withdrawal = Some(withdrawal);
        self
    }

    /// When it expires (`None`: never).
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.expires_at
    }

    /// Whether it has been withdrawn.
    pub fn is_withdrawn(&self) -> bool {
        self.withdrawal
            .as_ref()
            .is_some_and(Withdrawal::is_withdrawn)
    }

    /// Whether it is good for ever: no expiry, nothing to withdraw it.
    pub fn is_forever(&self) -> bool {
        self.expires_at.is_none() && self.withdrawal.is_none()
    }

    /// The validity of a request's credential, as its authentication found
    /// it (or as a middleware in front of the manager put it there); `None`
    /// is good for ever.
    ///
    /// ```
    /// use sessionreg::http::Validity;
    /// use std::time::{Duration, UNIX_EPOCH};
    ///
    /// let (mut parts, ()) = http::Request::new(()).into_parts();
    /// assert!(Validity::of(&parts).is_none());
    /// let exp = UNIX_EPOCH + Duration::from_secs(2_000_000_000);
    /// parts.extensions.insert(Validity::new().until(exp));
    /// assert_eq!(Validity::of(&parts).and_then(Validity::expires_at), Some(exp));
    /// ```
    pub fn of(request: &Parts) -> Option<&Validity> {
        request.extensions.get::<Validity>()
    }

    /// What an access token verified with `leeway` seconds is good for:
    /// until the second after `exp + leeway` (unix seconds) has begun, the
    /// first the verification refuses it in (it reads whole seconds, and
    /// accepts the token while they are at most `exp + leeway`).
    #[cfg(feature = "oauth")]
    pub(crate) fn of_token(exp: u64, leeway: u64) -> Validity {
        let refused = exp.saturating_add(leeway).saturating_add(1);
        let at = std::time::UNIX_EPOCH.checked_add(Duration::from_secs(refused));
        match at {
            Some(at) => Validity::new().until(at),
            // Beyond what the clock can say: never.
            None => Validity::new(),
        }
    }
}

impl fmt::Debug for Validity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Validity")
            .field("expires_at", &self.expires_at)
            .field("withdrawn", &self.is_withdrawn())
            .finish()
    }
}

/// A flag that withdraws a credential, shared by every request that
/// presented it: [`withdraw`](Withdrawal::withdraw) ends every stream they
/// opened (gracefully, counted `credential_withdrawn`). Cheap to clone:
/// clones share the flag. [`BearerTokens`](crate::http::BearerTokens) keeps
/// one per token, and withdraws it when a reload of the token set drops the
/// token (or gives it to another principal).
#[derive(Clone, Default)]
pub struct Withdrawal {
    flag: Arc<Flag>,
}

#[derive(Default)]
struct Flag {
    /// A line of its own: every request of the token clones and drops the
    /// `Arc` (writes to its counts), while every frame of its streams
    /// reads the flag.
    withdrawn: CachePadded<AtomicBool>,
    /// Wakes the streams waiting on the flag.
    notify: Notify,
}

impl Withdrawal {
    /// A credential not withdrawn (yet).
    pub fn new() -> Withdrawal {
        Withdrawal::default()
    }

    /// Withdraws the credential: every stream opened with it ends. Once;
    /// again does nothing.
    pub fn withdraw(&self) {
        // Release: pairs with the Acquire loads of `is_withdrawn`, so a
        // stream that sees the flag sees it for good; set before the
        // wake-up, so a woken stream finds it.
        if !self.flag.withdrawn.swap(true, Ordering::Release) {
            self.flag.notify.notify_waiters();
        }
    }

    /// Whether the credential has been withdrawn.
    pub fn is_withdrawn(&self) -> bool {
        self.flag.withdrawn.load(Ordering::Acquire)
    }

    /// Resolves once the credential is withdrawn: registered before the
    /// flag is read, so a withdrawal between the two is not missed.
    fn withdrawn(&self) -> impl Future<Output = ()> + Send + Sync + 'static {
        let flag = Arc::clone(&self.flag);
        async move {
            loop {
                let notified = flag.notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if flag.withdrawn.load(Ordering::Acquire) {
                    return;
                }
                notified.await;
            }
        }
    }
}

impl fmt::Debug for Withdrawal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Withdrawal")
            .field("withdrawn", &self.is_withdrawn())
            .finish()
    }
}

/// A stream's hold on its credential: the deadline its expiry sets (on the
/// runtime's clock) and the withdrawal it watches.
#[derive(Default)]
pub(crate) struct Term {
    deadline: Option<Instant>,
    watch: Option<WithdrawalWatch>,
}

/// Watching a withdrawal from a stream's body.
struct WithdrawalWatch {
    withdrawal: Withdrawal,
    /// Resolves at the withdrawal; polled (which takes the flag's lock)
    /// only when the body's waker is not the one it registered.
    wake: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
    registered: Option<Waker>,
}

impl Term {
    /// The term of a stream opened by a request whose credential has
    /// `validity` (`None`: good for ever).
    pub(crate) fn of(validity: Option<&Validity>) -> Term {
        let Some(validity) = validity else {
            return Term::default();
        };
        let deadline = validity.expires_at.and_then(|at| {
            let left = at
                .duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO);
            // An expiry too far to reach never comes.
            Instant::now().checked_add(left)
        });
        let watch = validity
            .withdrawal
            .as_ref()
            .map(|withdrawal| WithdrawalWatch {
                withdrawal: withdrawal.clone(),
                wake: Box::pin(withdrawal.withdrawn()),
                registered: None,
            });
        Term { deadline, watch }
    }

    /// When the credential expires, on the runtime's clock.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether the credential has been withdrawn (a flag read).
    pub(crate) fn is_withdrawn(&self) -> bool {
        self.watch
            .as_ref()
            .is_some_and(|watch| watch.withdrawal.is_withdrawn())
    }

    /// Ready once the credential is withdrawn; otherwise the body's task is
    /// woken when it is. For a body about to wait.
    pub(crate) fn poll_withdrawn(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(watch) = &mut self.watch else {
            return Poll::Pending;
        };
        if watch.withdrawal.is_withdrawn() {
            return Poll::Ready(());
        }
        if watch
            .registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            // Registered with this task's waker already: the withdrawal
            // wakes it, and the flag read above finds it.
            return Poll::Pending;
        }
        let polled = watch.wake.as_mut().poll(cx);
        watch.registered = Some(cx.waker().clone());
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    #[cfg(feature = "oauth")]
    #[test]
    fn a_token_is_good_until_its_exp_plus_the_leeway_has_passed() {
        let validity = Validity::of_token(1_000, 30);
        assert_eq!(
            validity.expires_at(),
            Some(std::time::UNIX_EPOCH + Duration::from_secs(1_031))
        );
        assert!(!validity.is_forever());
        // An `exp` the clock cannot reach never comes.
        assert!(Validity::of_token(u64::MAX, 30).is_forever());
        // The earlier expiry holds.
        let early = std::time::UNIX_EPOCH + Duration::from_secs(5);
        assert_eq!(
            Validity::of_token(1_000, 0).until(early).expires_at(),
            Some(early)
        );
    }

    #[tokio::test]
    async fn a_withdrawal_wakes_the_stream_that_waits_on_it_once_registered() {
        let withdrawal = Withdrawal::new();
        let validity = Validity::new().withdrawn_by(withdrawal.clone());
        let mut term = Term::of(Some(&validity));
        assert_eq!(term.deadline(), None);
        let woken = Arc::new(Woken::default());
        let waker = Waker::from(Arc::clone(&woken));
        let mut cx = Context::from_waker(&waker);
        assert!(term.poll_withdrawn(&mut cx).is_pending());
        // The same waker again: no second registration needed.
        assert!(term.poll_withdrawn(&mut cx).is_pending());
        assert!(!term.is_withdrawn());
        withdrawal.withdraw();
        withdrawal.withdraw();
        assert_eq!(
            woken.0.load(Ordering::SeqCst),
            1,
            "woken once, by the withdrawal"
        );
        assert!(term.poll_withdrawn(&mut cx).is_ready());
        assert!(term.is_withdrawn());
        assert!(validity.is_withdrawn());
    }

    #[tokio::test(start_paused = true)]
    async fn an_expiry_becomes_a_deadline_on_the_runtimes_clock() {
        let start = Instant::now();
        let validity = Validity::new().until(SystemTime::now() + Duration::from_secs(60));
        let deadline = Term::of(Some(&validity)).deadline().expect("a deadline");
        assert!(
            deadline > start + Duration::from_secs(59)
                && deadline <= start + Duration::from_secs(60)
        );
        // An expiry already past is a deadline now.
        let past = Validity::new().until(SystemTime::now() - Duration::from_secs(1));
        assert_eq!(Term::of(Some(&past)).deadline(), Some(start));
        // Good for ever: no deadline, nothing to withdraw.
        let forever = Term::of(None);
        assert_eq!(forever.deadline(), None);
        assert!(!forever.is_withdrawn());
        assert!(Validity::new().is_forever());
    }

    #[derive(Default)]
    struct Woken(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}
