//! What the registry holds for one rmcp session, and how the manager asks
//! its worker for something.

use rmcp::transport::streamable_http_server::session::local::{LocalSessionHandle, SessionError};
use std::future::Future;
use tokio_util::sync::CancellationToken;

/// A session's value in the registry: the handle to rmcp's per-session
/// worker, the token that stops that worker, and whether the session was
/// restored (its client's id is then an alias of its registry id).
///
/// The close callback (run once, by whichever path ended the session)
/// cancels `worker`; the worker then exits, and rmcp's serve loop ends with
/// it. Cancelling is synchronous, so it works from any thread, inside a
/// runtime or not (the registry's own drop included).
pub(crate) struct Entry {
    pub(crate) handle: LocalSessionHandle,
    pub(crate) worker: CancellationToken,
    /// Restored from rmcp's session store: the worker is named by the
    /// client's id, which [`Aliases`](crate::aliases::Aliases) maps to this
    /// entry until the session ends.
    pub(crate) restored: bool,
}

impl Entry {
    /// What the worker answers to `call`, a request made through this
    /// entry's [`handle`](Self::handle), or, once the worker has been told to stop,
    /// [`SessionError::SessionServiceTerminated`] without waiting further.
    ///
    /// rmcp's handle sends each request on the worker's event channel with
    /// a oneshot for the answer, and counts on the worker's exit to drop
    /// that oneshot with the channel. It need not: a send that began before
    /// the worker dropped its receiver can complete after it (tokio's
    /// receiver drains what it finds when dropped; a sender that got its
    /// permit first, then lost the CPU, pushes later). The request then sits
    /// in a channel nobody reads until the last sender goes, and this entry
    /// is a sender, kept alive by the very request that waits: the client's
    /// `tools/call` got no answer, ever. Seen in rmcp's own log as a send
    /// that completed 3 ms after the worker was dropped, when a `DELETE`
    /// landed as a call began (about once in five thousand sessions, with
    /// both cores busy). Whatever ends the session, or the worker, cancels
    /// the stop token, so every wait on the worker ends with it.
    pub(crate) async fn ask<'a, T, F>(
        &'a self,
        call: impl FnOnce(&'a LocalSessionHandle) -> F,
    ) -> Result<T, SessionError>
    where
        F: Future<Output = Result<T, SessionError>>,
    {
        let asked = call(&self.handle);
        tokio::select! {
            // An answer that is there wins over the stop seen at the same
            // time: the worker gave it before it exited.
            biased;
            answer = asked => answer,
            () = self.worker.cancelled() => Err(SessionError::SessionServiceTerminated),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::streamable_http_server::session::local::{
        create_local_session, SessionConfig,
    };
    use std::pin::{pin, Pin};
    use std::task::{Context, Poll, Waker};

    fn entry() -> Entry {
        // A worker that never runs: nothing answers on its channel.
        let (handle, _worker) = create_local_session("s", SessionConfig::default());
        Entry {
            handle,
            worker: CancellationToken::new(),
            restored: false,
        }
    }

    fn poll_once<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn a_request_nobody_answers_ends_when_the_worker_is_told_to_stop() {
        let entry = entry();
        let mut asked = pin!(entry.ask(|_| std::future::pending::<Result<(), SessionError>>()));
        assert!(
            poll_once(asked.as_mut()).is_pending(),
            "waits while the worker runs"
        );
        entry.worker.cancel();
        assert!(matches!(
            poll_once(asked.as_mut()),
            Poll::Ready(Err(SessionError::SessionServiceTerminated))
        ));
    }

    #[tokio::test]
    async fn an_answer_given_before_the_stop_is_kept() {
        let entry = entry();
        entry.worker.cancel();
        let answer = entry.ask(|_| async { Ok::<_, SessionError>(7) }).await;
        assert_eq!(answer.unwrap(), 7);
    }
}
