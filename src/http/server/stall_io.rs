//! A socket wrapper for [`serve`](super::serve): a write that makes no
//! progress for the stall timeout fails with `TimedOut`, which makes hyper
//! close the connection.
//!
//! A client that stops reading fills its socket buffers; from then on every
//! write of the server is pending, and hyper would wait on it forever,
//! holding the connection, its buffers and (for an SSE stream) its session
//! busy. Progress is any byte written (or a flush that completes), so a
//! slow but reading client is never cut off: only one that took nothing
//! for the whole timeout.
//!
//! The timer is armed only while a write is pending and is allocated once,
//! on the first stall; writes that complete at once (nearly all) only clear
//! a flag.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// An I/O object whose writes give up after `stall` without progress.
#[derive(Debug)]
pub(crate) struct StallIo<T> {
    io: T,
    stall: Option<Duration>,
    timer: Option<Pin<Box<Sleep>>>,
    /// Whether the timer runs for the write now pending.
    armed: bool,
}

impl<T> StallIo<T> {
    pub(crate) fn new(io: T, stall: Option<Duration>) -> StallIo<T> {
        StallIo {
            io,
            stall,
            timer: None,
            armed: false,
        }
    }

    /// A write is pending: starts the timer if it is not running, and fails
    /// once it has run out.
    fn pending<R>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        let Some(stall) = self.stall else {
            return Poll::Pending;
        };
        if !self.armed {
            let Some(deadline) = Instant::now().checked_add(stall) else {
                // A stall timeout too long to reach never fires.
                return Poll::Pending;
            };
            match &mut self.timer {
                Some(timer) => timer.as_mut().reset(deadline),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
            self.armed = true;
        }
        let timer = self.timer.as_mut().expect("armed above");
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the peer took no data for the stall timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progress<R>(
        &mut self,
        done: Poll<io::Result<R>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<R>> {
        match done {
            Poll::Ready(result) => {
                self.armed = false;
                Poll::Ready(result)
            }
            Poll::Pending => self.pending(cx),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for StallIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for StallIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let done = Pin::new(&mut self.io).poll_write(cx, buf);
        self.progress(done, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let done = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.progress(done, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let done = Pin::new(&mut self.io).poll_flush(cx);
        self.progress(done, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let done = Pin::new(&mut self.io).poll_shutdown(cx);
        self.progress(done, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test(start_paused = true)]
    async fn a_write_nobody_reads_fails_after_the_stall_timeout() {
        // A pipe of 64 bytes whose reader never reads.
        let (writer, _reader) = tokio::io::duplex(64);
        let mut io = StallIo::new(writer, Some(Duration::from_secs(60)));
        let started = Instant::now();
        let error = io.write_all(&[0; 1024]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_is_not_cut_off() {
        let (writer, mut reader) = tokio::io::duplex(64);
        let mut io = StallIo::new(writer, Some(Duration::from_secs(60)));
        let drain = tokio::spawn(async move {
            let mut buf = [0; 64];
            let mut total = 0;
            while total < 1024 {
                // Takes 64 bytes every 50 s: slower than the writer, never
                // stalled for 60 s.
                tokio::time::sleep(Duration::from_secs(50)).await;
                total += tokio::io::AsyncReadExt::read(&mut reader, &mut buf)
                    .await
                    .unwrap();
            }
        });
        io.write_all(&[0; 1024]).await.unwrap();
        drain.await.unwrap();
    }
}
