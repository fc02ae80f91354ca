//! Reading a `POST` body: bounded in size (413, [`Reject::BodyTooLarge`])
//! and in time (408, [`Reject::BodyTimedOut`]), with a
//! batch (a top-level JSON array) recognised from its first byte and never
//! buffered: the rest of it is read and thrown away, within the same
//! bounds, so that the client (still sending) gets its 400 rather than a
//! connection reset.
//!
//! A body that arrives in one frame (most do) is kept as that frame, with
//! no copy; one in several frames is gathered into one buffer, sized up
//! front from a `Content-Length` within the limit.

use crate::http::wire::jsonrpc::first_token;
use crate::http::wire::reject::Reject;
use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Body as HttpBody;
use std::future::Future;
use std::task::Poll;
use std::time::Duration;

/// Reads `body` whole: at most `limit` bytes, within `timeout`.
/// `declared` is the request's `Content-Length`, if it had one.
pub(crate) async fn read<B>(
    body: B,
    declared: Option<u64>,
    limit: usize,
    timeout: Option<Duration>,
) -> Result<Bytes, Reject>
where
    B: HttpBody,
{
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(Reject::BodyTooLarge);
    }
    let reading = gather(body, declared, limit);
    let Some(timeout) = timeout else {
        return reading.await;
    };
    tokio::pin!(reading);
    // Most bodies are in by the time the head is parsed (one frame, or a
    // few already buffered): poll once without a timer, and arm one (a
    // clock read, and an entry in and out of the timer wheel) only for a
    // body still arriving.
    let first = std::future::poll_fn(|cx| Poll::Ready(reading.as_mut().poll(cx))).await;
    match first {
        Poll::Ready(read) => read,
        Poll::Pending => tokio::time::timeout(timeout, reading)
            .await
            .unwrap_or(Err(Reject::BodyTimedOut)),
    }
}

async fn gather<B: HttpBody>(
    body: B,
    declared: Option<u64>,
    limit: usize,
) -> Result<Bytes, Reject> {
    tokio::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut gathered: Option<BytesMut> = None;
    let mut len = 0usize;
    let mut looked = false;
    let mut batch = false;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Err(Reject::BodyUnreadable);
        };
        let Ok(mut data) = frame.into_data() else {
            continue; // trailers
        };
        let chunk = data.copy_to_bytes(data.remaining());
        if chunk.is_empty() {
            continue;
        }
        len += chunk.len();
        if len > limit {
            return Err(Reject::BodyTooLarge);
        }
        if batch {
            continue;
        }
        if !looked {
            match first_token(&chunk) {
                Some(b'[') => {
                    // Kept nowhere from here on.
                    batch = true;
                    first = None;
                    gathered = None;
                    continue;
                }
                Some(_) => looked = true,
                None => {} // whitespace so far
            }
        }
        match (&mut first, &mut gathered) {
            (None, None) => first = Some(chunk),
            (Some(one), None) => {
                let capacity = declared
                    .map_or(0, |d| d as usize)
                    .max(one.len() + chunk.len());
                let mut buf = BytesMut::with_capacity(capacity.min(limit));
                buf.extend_from_slice(one);
                buf.extend_from_slice(&chunk);
                first = None;
                gathered = Some(buf);
            }
            (_, Some(buf)) => buf.extend_from_slice(&chunk),
        }
    }
    if batch {
        return Err(Reject::Batch);
    }
    Ok(match (first, gathered) {
        (_, Some(buf)) => buf.freeze(),
        (Some(one), None) => one,
        (None, None) => Bytes::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use futures_util::stream;
    use http_body_util::StreamBody;
    use hyper::body::Frame;
    use std::convert::Infallible;

    fn chunks(parts: &[&'static str]) -> impl HttpBody<Data = Bytes, Error = Infallible> {
        StreamBody::new(stream::iter(
            parts
                .iter()
                .map(|p| Ok::<_, Infallible>(Frame::data(Bytes::from_static(p.as_bytes()))))
                .collect::<Vec<_>>(),
        ))
    }

    #[tokio::test]
    async fn gathers_frames_within_the_limit() {
        let body = read(chunks(&["{\"a\":", "1}"]), None, 100, None).await;
        assert_eq!(body.unwrap(), "{\"a\":1}");
        let body = read(chunks(&["{}"]), Some(2), 2, None).await;
        assert_eq!(body.unwrap(), "{}");
        let body = read(chunks(&["{\"a\":", "1}"]), None, 6, None).await;
        assert_eq!(body.unwrap_err(), Reject::BodyTooLarge);
        let body = read(chunks(&["{}"]), Some(7), 6, None).await;
        assert_eq!(body.unwrap_err(), Reject::BodyTooLarge);
    }

    #[tokio::test]
    async fn a_batch_is_read_to_its_end_but_never_kept() {
        let body = read(chunks(&[" \n", "  [0,", "0,0,0]"]), None, 100, None).await;
        assert_eq!(body.unwrap_err(), Reject::Batch);
        // The limit holds for a batch too.
        let long = read(chunks(&[" \n", "  [0,", "0,0,0,0,0,0,0,0]"]), None, 8, None).await;
        assert_eq!(long.unwrap_err(), Reject::BodyTooLarge);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_body_times_out() {
        let slow = StreamBody::new(stream::pending::<Result<Frame<Bytes>, Infallible>>());
        let body = read(slow, None, 100, Some(Duration::from_secs(30))).await;
        assert_eq!(body.unwrap_err(), Reject::BodyTimedOut);
    }
}
