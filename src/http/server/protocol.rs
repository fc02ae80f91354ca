//! Which protocol a connection speaks, and the connection of that protocol
//! alone ([`Serving`]).
//!
//! hyper-util's auto connection keeps an HTTP/1 and an HTTP/2 connection's
//! state in one value: 1,584 bytes, which every connection's task carries
//! (and writes whole when it is spawned), where hyper's HTTP/1 connection
//! is 656 bytes and its HTTP/2 connection 1,504. A connection here reads
//! its first bytes, tells HTTP/2's preface (prior knowledge, as h2c clients
//! send it) from anything else, and only then makes the one connection it
//! needs: an HTTP/1.1 connection's state in place, an HTTP/2 connection's
//! in an allocation of its own (there are few: each carries many streams).
//! So an idle HTTP/1.1 connection, a listen stream's say, holds about
//! 0.9 KiB less than it did through the auto connection.
//!
//! The bytes read to decide are handed to the protocol first ([`Prefixed`]),
//! as hyper-util's own detection does; nothing is peeked, so a client that
//! sends the preface a byte at a time is waited for without spinning.

use super::connections::Connections;
use crate::http::wire::body::SendBody;
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper::service::HttpService;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use pin_project_lite::pin_project;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What an HTTP/2 client with prior knowledge sends first (RFC 9113, 3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The two protocols' connection builders, configured once for `serve`.
pub(crate) struct Protocols {
    http1: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
}

impl Protocols {
    /// The builders for `connections`: hyper's timers, the HTTP/1 header
    /// read timeout, HTTP/2's cap on concurrent streams and its keep-alive.
    pub(crate) fn new(connections: &Connections) -> Protocols {
        let mut http1 = http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .header_read_timeout(connections.header_read_timeout);
        let mut http2 = http2::Builder::new(TokioExecutor::new());
        http2
            .timer(TokioTimer::new())
            .max_concurrent_streams(connections.http2_max_concurrent_streams)
            .keep_alive_interval(connections.http2_keep_alive);
        if let Some(period) = connections.http2_keep_alive {
            http2.keep_alive_timeout(period);
        }
        Protocols { http1, http2 }
    }

    /// Serves `io` with `service`, in whichever protocol its first bytes
    /// say.
    pub(crate) fn serve<I, S>(self: &Arc<Self>, io: I, service: S) -> Serving<I, S>
    where
        S: HttpService<Incoming>,
    {
        Serving::Reading {
            io,
            service,
            protocols: Arc::clone(self),
            seen: [0; PREFACE.len()],
            len: 0,
        }
    }
}

/// The protocol a connection's first bytes say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

/// Reads into `seen` (holding `len` bytes) until they differ from HTTP/2's
/// preface (HTTP/1, whose first line never starts with it) or hold it
/// whole (HTTP/2). A connection that ends first is handed to HTTP/1, which
/// ends it as it ends any connection closed before its request.
fn poll_protocol<I: AsyncRead + Unpin>(
    io: &mut I,
    seen: &mut [u8; PREFACE.len()],
    len: &mut usize,
    cx: &mut Context<'_>,
) -> Poll<io::Result<Protocol>> {
    loop {
        if seen[..*len] != PREFACE[..*len] {
            return Poll::Ready(Ok(Protocol::Http1));
        }
        if *len == PREFACE.len() {
            return Poll::Ready(Ok(Protocol::Http2));
        }
        let mut buf = ReadBuf::new(&mut seen[*len..]);
        ready!(Pin::new(&mut *io).poll_read(cx, &mut buf))?;
        let read = buf.filled().len();
        if read == 0 {
            return Poll::Ready(Ok(Protocol::Http1));
        }
        *len += read;
    }
}

pin_project! {
    /// One connection: reading its first bytes, then served by hyper in the
    /// protocol they say, until it ends.
    #[project = ServingProj]
    #[project_replace = ServingOwn]
    pub(crate) enum Serving<I, S>
    where
        S: HttpService<Incoming>,
    {
        Reading {
            io: I,
            service: S,
            protocols: Arc<Protocols>,
            seen: [u8; PREFACE.len()],
            len: usize,
        },
        Http1 {
            #[pin]
            connection: http1::Connection<TokioIo<Prefixed<I>>, S>,
        },
        Http2 {
            connection: Pin<Box<http2::Connection<TokioIo<Prefixed<I>>, S, TokioExecutor>>>,
        },
        /// Ended before a protocol was chosen (a graceful shutdown while
        /// reading, or a read that failed).
        Done,
    }
}

impl<I, S, B> Serving<I, S>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: HttpService<Incoming, ResBody = B> + Send + 'static,
    S::Future: Send + 'static,
    B: SendBody,
{
    /// Finishes what is in flight and takes nothing new; a connection still
    /// reading its first bytes has started nothing, and ends.
    pub(crate) fn graceful_shutdown(mut self: Pin<&mut Self>) {
        match self.as_mut().project() {
            ServingProj::Reading { .. } => self.set(Serving::Done),
            ServingProj::Http1 { connection } => connection.graceful_shutdown(),
            ServingProj::Http2 { connection } => connection.as_mut().graceful_shutdown(),
            ServingProj::Done => {}
        }
    }
}

impl<I, S, B> Future for Serving<I, S>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: HttpService<Incoming, ResBody = B> + Send + 'static,
    S::Future: Send + 'static,
    B: SendBody,
{
    type Output = Result<(), Box<dyn std::error::Error + Send + Sync>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let next = match self.as_mut().project() {
                ServingProj::Reading { io, seen, len, .. } => {
                    let protocol = match ready!(poll_protocol(io, seen, len, cx)) {
                        Ok(protocol) => protocol,
                        Err(error) => {
                            self.set(Serving::Done);
                            return Poll::Ready(Err(error.into()));
                        }
                    };
                    // The protocol is known: the reading state's parts move
                    // into its connection.
                    let ServingOwn::Reading {
                        io,
                        service,
                        protocols,
                        seen,
                        len,
                    } = self.as_mut().project_replace(Serving::Done)
                    else {
                        unreachable!("projected as Reading above");
                    };
                    let io = TokioIo::new(Prefixed::new(io, seen, len));
                    match protocol {
                        Protocol::Http1 => Serving::Http1 {
                            connection: protocols.http1.serve_connection(io, service),
                        },
                        Protocol::Http2 => Serving::Http2 {
                            connection: Box::pin(protocols.http2.serve_connection(io, service)),
                        },
                    }
                }
                ServingProj::Http1 { connection } => {
                    return connection.poll(cx).map_err(Into::into)
                }
                ServingProj::Http2 { connection } => {
                    return connection.as_mut().poll(cx).map_err(Into::into)
                }
                ServingProj::Done => return Poll::Ready(Ok(())),
            };
            self.set(next);
        }
    }
}

/// An I/O object whose first reads yield the bytes read from it to choose
/// its protocol, then its own.
#[derive(Debug)]
pub(crate) struct Prefixed<I> {
    io: I,
    prefix: [u8; PREFACE.len()],
    /// The prefix's bytes not yet read are `prefix[at..len]`.
    at: u8,
    len: u8,
}

impl<I> Prefixed<I> {
    fn new(io: I, prefix: [u8; PREFACE.len()], len: usize) -> Prefixed<I> {
        debug_assert!(len <= PREFACE.len());
        Prefixed {
            io,
            prefix,
            at: 0,
            len: len as u8,
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Prefixed<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let (at, len) = (self.at as usize, self.len as usize);
        if at < len {
            let n = (len - at).min(buf.remaining());
            buf.put_slice(&self.prefix[at..at + n]);
            self.at += n as u8;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Prefixed<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::{BodyExt, Empty, Full};
    use std::convert::Infallible;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    /// Answers every request with its HTTP version.
    #[derive(Clone)]
    struct Version;

    impl hyper::service::Service<http::Request<Incoming>> for Version {
        type Response = http::Response<Full<Bytes>>;
        type Error = Infallible;
        type Future = std::future::Ready<Result<Self::Response, Infallible>>;

        fn call(&self, request: http::Request<Incoming>) -> Self::Future {
            let version = format!("{:?}", request.version());
            std::future::ready(Ok(http::Response::new(Full::new(Bytes::from(version)))))
        }
    }

    /// A served connection on one end of a pipe; the other end.
    fn served() -> (DuplexStream, tokio::task::JoinHandle<bool>) {
        let (client, server) = tokio::io::duplex(1 << 16);
        let protocols = Arc::new(Protocols::new(&Connections::default()));
        let serving = protocols.serve(server, Version);
        (client, tokio::spawn(async move { serving.await.is_ok() }))
    }

    /// Writes that go through a byte at a time, each after a yield: a
    /// client whose preface arrives in pieces.
    struct Trickle(DuplexStream);

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let one = &buf[..buf.len().min(1)];
            Pin::new(&mut self.0).poll_write(cx, one)
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_shutdown(cx)
        }
    }

    #[tokio::test]
    async fn a_preface_that_arrives_a_byte_at_a_time_is_served_as_http2() {
        let (client, server) = served();
        let (mut sender, connection) = hyper::client::conn::http2::handshake(
            TokioExecutor::new(),
            TokioIo::new(Trickle(client)),
        )
        .await
        .unwrap();
        tokio::spawn(connection);
        let request = http::Request::builder()
            .uri("http://localhost/")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, "HTTP/2.0");
        drop(sender);
        assert!(server.await.unwrap(), "the connection ended cleanly");
    }

    #[tokio::test]
    async fn a_request_that_starts_like_the_preface_is_http1_with_every_byte() {
        // "P" is the preface's first byte: the server must wait for the
        // second, then hand both to HTTP/1.
        let (mut client, server) = served();
        client.write_all(b"P").await.unwrap();
        tokio::task::yield_now().await;
        client
            .write_all(
                b"OST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await
            .unwrap();
        let mut response = String::new();
        client.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.ends_with("HTTP/1.1"), "{response}");
        assert!(server.await.unwrap());
    }

    #[tokio::test]
    async fn a_connection_closed_before_its_first_byte_or_mid_preface_ends() {
        let within = |server| tokio::time::timeout(std::time::Duration::from_secs(10), server);
        let (client, server) = served();
        drop(client);
        within(server).await.expect("ended").unwrap();
        // Part of the preface, then the end: handed to HTTP/1, which ends
        // the connection (with an error: it is not a request).
        let (mut client, server) = served();
        client.write_all(&PREFACE[..10]).await.unwrap();
        client.shutdown().await.unwrap();
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).await.unwrap();
        within(server).await.expect("ended").unwrap();
    }

    #[tokio::test]
    async fn a_graceful_shutdown_before_the_first_byte_ends_the_connection() {
        let (_client, server) = tokio::io::duplex(64);
        let protocols = Arc::new(Protocols::new(&Connections::default()));
        let serving = protocols.serve(server, Version);
        tokio::pin!(serving);
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(serving.as_mut().poll(&mut cx).is_pending(), "reading");
        serving.as_mut().graceful_shutdown();
        assert!(matches!(
            serving.as_mut().poll(&mut cx),
            Poll::Ready(Ok(()))
        ));
    }

    #[test]
    fn an_http1_connection_carries_no_http2_state() {
        type Io = tokio::io::DuplexStream;
        type Service = Version;
        let serving = std::mem::size_of::<Serving<Io, Service>>();
        let http2 =
            std::mem::size_of::<http2::Connection<TokioIo<Prefixed<Io>>, Service, TokioExecutor>>();
        let http1 = std::mem::size_of::<http1::Connection<TokioIo<Prefixed<Io>>, Service>>();
        assert!(
            serving < http1 + 128 && serving < http2,
            "a connection is {serving} bytes: HTTP/1's is {http1}, HTTP/2's {http2}"
        );
    }
}
