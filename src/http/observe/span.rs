//! The one SERVER span of each request or notification, in both eras, as
//! the MCP semantic conventions name and describe it: a `tracing` span
//! (INFO, named `mcp.server`) whose fields are the conventions' attributes,
//! so any subscriber sees them, and which the OTLP export's layer
//! (`span_layer.rs`) exports as an OpenTelemetry span (`otel.name`,
//! `otel.kind` and the status are its fields for the span's name, kind and
//! status, as tracing-opentelemetry names them too).
//!
//! ```text
//! name        {mcp.method.name} {target}   tools/call echo, prompts/get greet; else the method
//! kind        SERVER
//! attributes  mcp.method.name, mcp.protocol.version, jsonrpc.request.id (a string; none for a
//!             notification), mcp.session.id (a legacy session's public part: never its secret),
//!             gen_ai.operation.name = execute_tool and gen_ai.tool.name (tools/call),
//!             gen_ai.prompt.name (prompts/get), mcp.resource.uri (resources/read, subscribe,
//!             unsubscribe), network.transport = tcp, network.protocol.name = http,
//!             network.protocol.version, server.address and server.port (from Host)
//! failure     error.type and rpc.response.status_code: the JSON-RPC code as a string, read
//!             off the response (`wire/answered.rs`: marked where every refusal and error is
//!             made); error.type = tool_error for a tools/call result with isError; the status
//!             ERROR, described by the error's message
//! parent      the trace context in params._meta, else the traceparent header (both: _meta is
//!             the parent and the header a link); with feature `otel` (`parent.rs`)
//! ```
//!
//! Nothing is read, formatted or allocated for the span unless a
//! subscriber wants it (`Span::is_disabled`); the duration histograms,
//! which are always kept, read only the method, the tool's or the
//! prompt's name and the version (`durations.rs`).

use crate::http::observe::durations::{Durations, Ending, OperationTimer};
use crate::http::observe::methods;
use crate::http::wire::answered::{self, within, Failure};
use crate::http::wire::body::Body;
use crate::http::wire::jsonrpc::Message;
use crate::http::wire::raw_text::RawText;
use bytes::Bytes;
use http::request::Parts;
use http::Response;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use serde_json::Value;
use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use tracing::field::{display, Empty};

/// The longest method, target or URI a span carries (a client's text,
/// exported with every span): cut there.
const TEXT_BYTES: usize = 256;

/// What the observers read of a message's params: its target (`name`,
/// `uri`) and its trace context (`_meta`), found by a walk of the params'
/// checked text (`wire/raw_text.rs`), not a second parse.
#[derive(Default)]
pub(crate) struct Observed<'a> {
    pub(crate) name: Option<RawText<'a>>,
    pub(crate) uri: Option<RawText<'a>>,
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) meta: Option<RawText<'a>>,
}

impl<'a> Observed<'a> {
    /// The members of `message`'s params (none if they are not an object,
    /// or if one of the three is given twice: the application answers
    /// those).
    pub(crate) fn of(message: &'a Message) -> Observed<'a> {
        let params = match message {
            Message::Request(request) => request.params.as_ref(),
            Message::Notification(note) => note.params.as_ref(),
            Message::Response(_) => None,
        };
        let Some(members) = params.and_then(|raw| RawText::of_params(raw).members()) else {
            return Observed::default();
        };
        let mut observed = Observed::default();
        for (name, value) in members {
            let slot = match &*name.text() {
                "name" => &mut observed.name,
                "uri" => &mut observed.uri,
                "_meta" => &mut observed.meta,
                _ => continue,
            };
            if slot.replace(value).is_some() {
                return Observed::default();
            }
        }
        observed
    }
}

/// A JSON string member as text (borrowed unless it has escapes); `None`
/// for anything else.
fn text(raw: Option<RawText<'_>>) -> Option<Cow<'_, str>> {
    raw?.string()
}

/// The span's name: the method, and the target when there is one.
struct SpanName<'a>(&'a str, Option<&'a str>);

impl fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)?;
        if let Some(target) = self.1 {
            write!(f, " {target}")?;
        }
        Ok(())
    }
}

/// A JSON-RPC id as the conventions type it: a string (`"7"` for `7`).
struct RequestId<'a>(&'a Value);

impl fmt::Display for RequestId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::String(text) => f.write_str(within(text, TEXT_BYTES)),
            other => write!(f, "{other}"),
        }
    }
}

/// The span of `message` at protocol `version`: disabled (and nothing
/// read for it) unless a subscriber wants it, and for a response (to one
/// of the server's requests: not an operation of its own). Enter it
/// (`Instrument`) for the request's whole way, from before anything is
/// read of it: its parent is set here, before anything is made within it
/// (a span made within it copies its trace when it begins).
pub(crate) fn open(message: &Message, version: &'static str, parts: &Parts) -> tracing::Span {
    let (method, id) = match message {
        Message::Request(request) => (request.method.as_str(), Some(&request.id)),
        Message::Notification(note) => (note.method.as_str(), None),
        Message::Response(_) => return tracing::Span::none(),
    };
    // What the span says, worked out once and only if a subscriber wants
    // the span: the macro evaluates its fields' values only then. Given at
    // its creation, not recorded one by one after it (each record is a
    // look-up of the span in every layer: about a thousand instructions
    // apiece with the OpenTelemetry layer).
    let said = std::cell::OnceCell::new();
    let said = || said.get_or_init(|| Said::of(message, method, id, parts));
    let span = tracing::info_span!(
        "mcp.server",
        otel.name = %said().name(),
        otel.kind = "server",
        otel.status_code = Empty,
        otel.status_description = Empty,
        mcp.method.name = said().method,
        mcp.protocol.version = version,
        mcp.session.id = Empty,
        mcp.resource.uri = said().uri.as_deref(),
        jsonrpc.request.id = said().id.map(|id| display(RequestId(id))),
        gen_ai.operation.name = said().operation(),
        gen_ai.tool.name = said().tool(),
        gen_ai.prompt.name = said().prompt(),
        "error.type" = Empty,
        rpc.response.status_code = Empty,
        network.transport = "tcp",
        network.protocol.name = "http",
        network.protocol.version = said().protocol,
        server.address = said().address,
        server.port = said().port,
    );
    #[cfg(feature = "otel")]
    if !span.is_disabled() {
        crate::http::observe::parent::adopt(&span, said().meta, &parts.headers);
    }
    span
}

/// Starts timing `message` at protocol `version` in its series, reading
/// the tool's or the prompt's name out of its params where the method
/// has one (the session era: nothing else reads them); `None` for a
/// response.
pub(crate) fn timer(
    durations: &Arc<Durations>,
    message: &Message,
    version: &'static str,
) -> Option<OperationTimer> {
    let method = match message {
        Message::Request(request) => request.method.as_str(),
        Message::Notification(note) => note.method.as_str(),
        Message::Response(_) => return None,
    };
    let name = match method {
        "tools/call" | "prompts/get" => Observed::of(message).name.map(RawText::get),
        _ => None,
    };
    Some(timer_named(durations, method, name, version))
}

/// Starts timing a request of `method` whose params' `name` member was
/// read already (`name`, that member's JSON text: the 2026-07-28 era's
/// checks read it).
pub(crate) fn timer_named(
    durations: &Arc<Durations>,
    method: &str,
    name: Option<&str>,
    version: &'static str,
) -> OperationTimer {
    let target = match method {
        "tools/call" | "prompts/get" => name.and_then(crate::http::wire::jsonrpc::text_of),
        _ => None,
    };
    durations.start(methods::label(method), target.as_deref(), version)
}

/// Polls `answering` with the request's `span` entered, as
/// [`tracing::Instrument`] does, but without owning it: the caller pins the
/// answer's future where it stands (`std::pin::pin!`, inside the caller's
/// own future). Wrapped by `Instrument` instead, the answer's future (with
/// the async block around it that finished the span) was copied whole
/// several times before its first poll: into the block, into
/// `Instrumented`, and by each `.await`'s `into_future`. Unlike
/// `Instrumented`, nothing enters the span when the caller drops the
/// answer unfinished (a client gone mid-request): its drop runs in the
/// caller's span.
pub(crate) fn polled_in<'a, F: Future>(
    span: &'a tracing::Span,
    mut answering: Pin<&'a mut F>,
) -> impl Future<Output = F::Output> + 'a {
    std::future::poll_fn(move |cx| {
        let _entered = span.enter();
        answering.as_mut().poll(cx)
    })
}

/// The response to a request, seen by its observers: how it was answered
/// (`wire/answered.rs`) recorded on the current span (the request's) and
/// on its `timer`, which counts when it is dropped: here for a whole
/// answer, at its stream's end for an SSE one (the body holds it).
pub(crate) fn finish(
    mut timer: Option<OperationTimer>,
    response: Response<Body>,
) -> Response<Body> {
    if let Some(failure) = answered::failure(&response) {
        let span = tracing::Span::current();
        let recorded = !span.is_disabled();
        match failure {
            Failure::Error { code, message } => {
                if let Some(timer) = &mut timer {
                    timer.end(Ending::Error(*code));
                }
                if recorded {
                    span.record("error.type", display(code));
                    span.record("rpc.response.status_code", display(code));
                    span.record("otel.status_code", "ERROR");
                    span.record("otel.status_description", &**message);
                }
            }
            Failure::ToolError => {
                if let Some(timer) = &mut timer {
                    timer.end(Ending::ToolError);
                }
                if recorded {
                    span.record("error.type", "tool_error");
                    span.record("otel.status_code", "ERROR");
                }
            }
        }
    }
    // A stream is a boxed body; a whole answer (`Full`, `Empty`) is not, so
    // its headers are not looked up (a hashed lookup on every request).
    let streamed = |response: &Response<Body>| {
        response.body().is_boxed()
            && response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"))
    };
    match timer {
        Some(timer) if streamed(&response) => response.map(|body| Body::new(Timed { body, timer })),
        _ => response,
    }
}

pin_project_lite::pin_project! {
    /// An SSE answer's body, holding its request's timer to its end.
    struct Timed {
        #[pin]
        body: Body,
        timer: OperationTimer,
    }
}

impl HttpBody for Timed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The host and port of an authority (`host`, `host:port`, `[v6]:port`,
/// after any userinfo) as the request wrote them; `None` for a text that
/// names no host (a host is at most 253 bytes, as a DNS name is, of the
/// characters RFC 3986 allows it). No copy is made: it is read in place.
fn host_and_port(text: &str) -> Option<(&str, Option<u16>)> {
    let text = &text[text.rfind('@').map_or(0, |at| at + 1)..];
    let (host, port) = match text.strip_prefix('[') {
        Some(inner) => {
            let close = inner.find(']')? + 2;
            let ip = &inner[..close - 2];
            if ip.is_empty()
                || !ip
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || b":.".contains(&b))
            {
                return None;
            }
            match &text[close..] {
                "" => (&text[..close], None),
                rest => (&text[..close], Some(rest.strip_prefix(':')?)),
            }
        }
        None => {
            let (host, port) = match text.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (text, None),
            };
            let allowed = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%".contains(&b);
            if !host.bytes().all(allowed) {
                return None;
            }
            (host, port)
        }
    };
    if host.is_empty() || host.len() > 253 {
        return None;
    }
    let port = match port {
        None | Some("") => None,
        Some(digits) if digits.bytes().all(|b| b.is_ascii_digit()) => Some(digits.parse().ok()?),
        Some(_) => return None,
    };
    Some((host, port))
}

/// What a request's span says of it ([`open`]), read once.
struct Said<'a> {
    method: &'a str,
    /// The tool's or the prompt's name (`tools/call`, `prompts/get`).
    target: Option<Cow<'a, str>>,
    /// A resource method's URI.
    uri: Option<Cow<'a, str>>,
    id: Option<&'a Value>,
    protocol: &'static str,
    address: Option<&'a str>,
    port: Option<u16>,
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    meta: Option<RawText<'a>>,
}

impl<'a> Said<'a> {
    fn of(
        message: &'a Message,
        method: &'a str,
        id: Option<&'a Value>,
        parts: &'a Parts,
    ) -> Said<'a> {
        let observed = Observed::of(message);
        let bounded = |text: Cow<'a, str>| match text {
            Cow::Borrowed(text) => Cow::Borrowed(within(text, TEXT_BYTES)),
            Cow::Owned(text) => Cow::Owned(within(&text, TEXT_BYTES).to_owned()),
        };
        let target = match method {
            "tools/call" | "prompts/get" => text(observed.name).map(bounded),
            _ => None,
        };
        let uri = match method {
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
                text(observed.uri).map(bounded)
            }
            _ => None,
        };
        let protocol = match parts.version {
            http::Version::HTTP_10 => "1.0",
            http::Version::HTTP_11 => "1.1",
            http::Version::HTTP_2 => "2",
            http::Version::HTTP_3 => "3",
            _ => "0.9",
        };
        let authority = parts.uri.authority().map(|a| a.as_str()).or_else(|| {
            parts
                .headers
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok())
        });
        let (address, port) = authority.and_then(host_and_port).unzip();
        Said {
            method: within(method, TEXT_BYTES),
            target,
            uri,
            id: id.filter(|id| !id.is_null()),
            protocol,
            address,
            port: port.flatten(),
            meta: observed.meta,
        }
    }

    /// The span's name.
    fn name(&self) -> SpanName<'_> {
        SpanName(self.method, self.target.as_deref())
    }

    /// `execute_tool` for a `tools/call`.
    fn operation(&self) -> Option<&'static str> {
        (self.method == "tools/call").then_some("execute_tool")
    }

    fn tool(&self) -> Option<&str> {
        self.target
            .as_deref()
            .filter(|_| self.method == "tools/call")
    }

    fn prompt(&self) -> Option<&str> {
        self.target
            .as_deref()
            .filter(|_| self.method == "prompts/get")
    }
}

/// Records the session a legacy request is in, by its public part (never
/// its secret), on the current span.
pub(crate) fn record_session(id: crate::SessionId) {
    let span = tracing::Span::current();
    if !span.is_disabled() {
        span.record("mcp.session.id", display(id.public_part()));
    }
}

#[cfg(test)]
mod tests {
    use super::host_and_port;

    #[test]
    fn an_authority_gives_its_host_and_port_in_place() {
        assert_eq!(host_and_port("example.com"), Some(("example.com", None)));
        assert_eq!(
            host_and_port("example.com:8080"),
            Some(("example.com", Some(8080)))
        );
        assert_eq!(host_and_port("user:pw@host:1"), Some(("host", Some(1))));
        assert_eq!(host_and_port("[::1]:3000"), Some(("[::1]", Some(3000))));
        assert_eq!(host_and_port("[::1]"), Some(("[::1]", None)));
        assert_eq!(host_and_port("host:"), Some(("host", None)));
        for bad in [
            "",
            ":80",
            "host:99999",
            "host:8x",
            "[::1",
            "[zz]:1",
            "a b",
            "h/x",
        ] {
            assert_eq!(host_and_port(bad), None, "{bad}");
        }
        assert_eq!(host_and_port(&"a".repeat(254)), None);
    }
}
