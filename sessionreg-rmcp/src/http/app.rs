//! The [`App`] over an rmcp handler ([`HandlerApp`]): what a legacy session
//! keeps ([`HandlerSession`]), and how each message reaches the handler and
//! its answer the layer.

use super::exchange::{is_answer, Answers, Exchange, Replies};
use futures_core::Stream;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ClientResult, ErrorCode, ErrorData,
    GetExtensions, InitializeRequestParams, JsonRpcNotification, JsonRpcRequest, ProtocolVersion,
    RequestId, ServerJsonRpcMessage, ServerResult, SubscriptionFilter,
};
use rmcp::service::{serve_directly_with_ct, RunningService};
use rmcp::{RoleServer, ServerHandler};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{Message, Request, RpcError};
use sessionreg::http::modern::{Discovery, InputRequests, MirroredParams};
use sessionreg::http::{
    App, Audience, ClientAnswer, Context, HandlerError, ListenFilter, ModernRequest, Publisher,
    Reply,
};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

/// Makes a handler: for each legacy session, and for each 2026-07-28
/// request (as rmcp's factory is called for each stateless request).
pub(crate) type Factory<S> = dyn Fn() -> Result<S, std::io::Error> + Send + Sync;

/// An rmcp [`ServerHandler`] as a [`sessionreg::http::App`]: what
/// [`StreamableHttpService`](super::StreamableHttpService) serves, and what
/// its [`builder`](super::StreamableHttpService::builder) configures.
pub struct HandlerApp<S: ServerHandler> {
    factory: Box<Factory<S>>,
    /// One handler made when the service is built: asked for the server's
    /// description (`get_info`) and its tools' schemas (`get_tool`).
    described: S,
    /// Where the handlers' list changes and resource updates go: the
    /// manager's (the service's builder gives it to the layer).
    publisher: Publisher,
}

/// What a legacy session keeps: its handler, and the client's `initialize`
/// params (the peer info every request of the session is served with).
pub struct HandlerSession<S: ServerHandler> {
    handler: Arc<S>,
    client: InitializeRequestParams,
}

impl<S: ServerHandler> HandlerSession<S> {
    /// The session's handler, as the factory made it.
    pub fn handler(&self) -> &S {
        &self.handler
    }

    /// The client's `initialize` params, as it sent them.
    pub fn client(&self) -> &InitializeRequestParams {
        &self.client
    }
}

impl<S: ServerHandler> fmt::Debug for HandlerSession<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerSession")
            .field("client", &self.client.client_info)
            .finish_non_exhaustive()
    }
}

impl<S: ServerHandler> HandlerApp<S> {
    /// The app over the handlers `factory` makes; calls it once, for the
    /// handler that describes the server.
    pub(crate) fn new(
        factory: Box<Factory<S>>,
        publisher: Publisher,
    ) -> Result<HandlerApp<S>, std::io::Error> {
        let described = factory()?;
        Ok(HandlerApp {
            factory,
            described,
            publisher,
        })
    }

    /// Whether the handler speaks 2026-07-28 (its
    /// `supported_protocol_versions` name it): if not, the layer serves
    /// it the legacy era only.
    pub(crate) fn serves_modern(&self) -> bool {
        self.described
            .supported_protocol_versions()
            .contains(&ProtocolVersion::V_2026_07_28)
    }

    fn make(&self) -> Result<S, RpcError> {
        (self.factory)().map_err(|error| {
            tracing::warn!(%error, "the handler factory failed");
            RpcError::new(-32603, "the server could not make a handler")
        })
    }
}

impl<S: ServerHandler> App for HandlerApp<S> {
    type Session = HandlerSession<S>;

    fn open(
        &self,
        initialize: &Request,
        _request: &http::request::Parts,
    ) -> Result<HandlerSession<S>, RpcError> {
        let client: InitializeRequestParams = initialize.params_as()?;
        Ok(HandlerSession {
            handler: Arc::new(self.make()?),
            client,
        })
    }

    async fn handle(
        &self,
        ctx: Context<HandlerSession<S>>,
        message: Message,
    ) -> Result<Reply, HandlerError> {
        match message {
            Message::Request(request) => Ok(self.request(ctx, request).await),
            Message::Notification(note) => {
                // A 2026-07-28 notification has no session to reach, and rmcp's
                // own service drops them too.
                let Some(legacy) = ctx.legacy() else {
                    return Ok(Reply::Accepted);
                };
                let text = wire_text(None, &note.method, note.params_text());
                let Ok(notification) =
                    serde_json::from_str::<JsonRpcNotification<ClientNotification>>(&text)
                else {
                    return Ok(Reply::Accepted);
                };
                let (exchange, _replies, _answers) = Exchange::new(
                    ClientJsonRpcMessage::Notification(notification),
                    self.publisher.clone(),
                    audience(&ctx),
                );
                let peer = legacy.state().peer_info(legacy.version());
                let running = serve_directly_with_ct(
                    Arc::clone(&legacy.state().handler),
                    exchange,
                    Some(peer),
                    ctx.cancellation().child_token(),
                );
                // The loop hands the notification to the handler and ends, as
                // the exchange closes at once; wait for that, not for the
                // handler's own task.
                let _ = running.waiting().await;
                Ok(Reply::Accepted)
            }
            // Server-to-client requests are not made through this service
            // (see the crate's README): an answer has nothing to reach.
            Message::Response(_) => Ok(Reply::Accepted),
        }
    }

    fn discovery(&self) -> Discovery {
        let info = self.described.get_info();
        Discovery {
            capabilities: serde_json::to_value(&info.capabilities).unwrap_or_default(),
            server_info: serde_json::to_value(&info.server_info).ok(),
            instructions: info.instructions,
            ..Discovery::default()
        }
    }

    /// As rmcp's own service: the handler's
    /// `accepted_subscription_filter` (`None`: no listening, -32601), then
    /// what its `get_info` advertises (a kind of list only with its
    /// `listChanged`, resource URIs only with `resources.subscribe`); the
    /// layer's stream honours what is left of the layer's filter. The
    /// handler's `listen` is not called: rmcp builds its
    /// `SubscriptionContext` only inside its own service (no public
    /// constructor); what the handler publishes reaches the stream through
    /// the layer's `Publisher` instead.
    fn listen_filter(
        &self,
        mut filter: ListenFilter,
        _request: &http::request::Parts,
    ) -> Option<ListenFilter> {
        let requested = subscription_filter(&filter);
        let candidate = self.described.accepted_subscription_filter(&requested)?;
        let advertised = requested.supported_by(&self.described.get_info().capabilities);
        let accepted = requested.intersection(&candidate).intersection(&advertised);
        if accepted.tools_list_changed != Some(true) {
            filter.drop_tools_list_changed();
        }
        if accepted.prompts_list_changed != Some(true) {
            filter.drop_prompts_list_changed();
        }
        if accepted.resources_list_changed != Some(true) {
            filter.drop_resources_list_changed();
        }
        let uris = accepted.resource_subscriptions.unwrap_or_default();
        let kept: std::collections::HashSet<&str> = uris.iter().map(String::as_str).collect();
        filter.retain_resource_uris(|uri| kept.contains(uri));
        Some(filter)
    }

    fn mirrored_params(&self, tool: &str) -> Option<Arc<MirroredParams>> {
        let tool = self.described.get_tool(tool)?;
        let schema = Value::Object((*tool.input_schema).clone());
        MirroredParams::from_input_schema(&schema)
            .ok()
            .map(Arc::new)
    }
}

impl<S: ServerHandler> HandlerApp<S> {
    /// Serves one request: hands it to the session's handler (a new one
    /// for a 2026-07-28 request), and answers with what it sends.
    async fn request(&self, ctx: Context<HandlerSession<S>>, request: Request) -> Reply {
        let retried = ctx
            .modern()
            .and_then(|modern| retried_params(modern, &request));
        let params = match &retried {
            Some(Ok(params)) => Some(params.get()),
            Some(Err(error)) => return Reply::Error(error.clone()),
            None => request.params_text(),
        };
        let text = wire_text(Some(&request.id), &request.method, params);
        let mut decoded = match decode(&text, &request.method) {
            Ok(decoded) => decoded,
            Err(error) => {
                return Reply::Error(RpcError::invalid_params(format!("invalid params: {error}")))
            }
        };
        decoded
            .request
            .extensions_mut()
            .insert(ctx.request().clone());
        let (handler, peer) = match ctx.legacy() {
            Some(legacy) => (
                Arc::clone(&legacy.state().handler),
                Some(legacy.state().peer_info(legacy.version())),
            ),
            None => match self.make() {
                Ok(handler) => (Arc::new(handler), None),
                Err(error) => return Reply::Error(error),
            },
        };
        let initialize = matches!(decoded.request, ClientRequest::InitializeRequest(_));
        let (exchange, mut replies, answers) = Exchange::new(
            ClientJsonRpcMessage::Request(decoded),
            self.publisher.clone(),
            audience(&ctx),
        );
        // A child: the loop's end (its drop guard) must not cancel the
        // layer's token of the request.
        let running =
            serve_directly_with_ct(handler, exchange, peer, ctx.cancellation().child_token());
        let Some(first) = replies.recv().await else {
            return Reply::Error(RpcError::new(-32603, "the handler ended without an answer"));
        };
        if is_answer(&first) {
            let version = initialize.then(|| ctx.version().as_str());
            return answer(first, version, ctx.modern());
        }
        // Progress, logging or other messages before the answer: an SSE
        // reply, which keeps the service loop until the answer is out.
        Reply::Stream(Box::pin(Answering {
            first: Some(first),
            replies,
            running: Some(running),
            ctx,
            answers,
            asked: Vec::new(),
        }))
    }
}

impl<S: ServerHandler> HandlerSession<S> {
    /// The peer info a request of this session is served with: the
    /// client's `initialize` params at the version the session runs.
    fn peer_info(&self, version: &str) -> InitializeRequestParams {
        let mut client = self.client.clone();
        if let Ok(version) =
            serde_json::from_value::<ProtocolVersion>(Value::String(version.into()))
        {
            client.protocol_version = version;
        }
        client
    }
}

/// Who hears a resource's update a request's handler sends: its
/// principal's listeners, or everyone on a server without authentication.
fn audience<S: Send + Sync + 'static>(ctx: &Context<S>) -> Audience {
    match ctx.principal() {
        Some(principal) => Audience::principal(principal.clone()),
        None => Audience::Everyone,
    }
}

/// The layer's honoured filter as rmcp's [`SubscriptionFilter`], what a
/// handler's `accepted_subscription_filter` is asked with.
fn subscription_filter(filter: &ListenFilter) -> SubscriptionFilter {
    let uris: Vec<String> = filter.resource_uris().map(str::to_owned).collect();
    let mut requested = SubscriptionFilter::new();
    requested.tools_list_changed = filter.tools_list_changed().then_some(true);
    requested.prompts_list_changed = filter.prompts_list_changed().then_some(true);
    requested.resources_list_changed = filter.resources_list_changed().then_some(true);
    requested.resource_subscriptions = (!uris.is_empty()).then_some(uris);
    requested
}

/// A 2026-07-28 retry's params as the handler must see them: the
/// `requestState` the layer verified (its seal checked, the handler's own
/// state inside) replaced by that state, or removed when the handler had
/// none. `None`: not a retry, the params go as sent.
fn retried_params(
    modern: &ModernRequest,
    request: &Request,
) -> Option<Result<Box<RawValue>, RpcError>> {
    if modern.request_state().is_none() && modern.input_responses().is_none() {
        return None;
    }
    Some(request.params_value().and_then(|mut params| {
        if let Some(fields) = params.as_object_mut() {
            match modern.request_state() {
                Some(state) => {
                    let state = String::from_utf8_lossy(state).into_owned();
                    fields.insert("requestState".into(), state.into());
                }
                None => {
                    fields.remove("requestState");
                }
            }
        }
        serde_json::value::to_raw_value(&params)
            .map_err(|error| RpcError::invalid_params(format!("invalid params: {error}")))
    }))
}

/// A modern answer as the layer must be told it: a handler's
/// `InputRequiredResult` (`resultType: "input_required"`) becomes the
/// layer's input request, its `requestState` sealed inside the layer's
/// (so the client gets a state it cannot read or forge, and the handler
/// its own back on the retry); any other result goes as it is.
fn input_required(modern: &ModernRequest, result: Value) -> Reply {
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return Reply::Result(result);
    }
    let mut requests = InputRequests::new();
    if let Some(asked) = result.get("inputRequests").and_then(Value::as_object) {
        for (key, request) in asked {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default();
            // A request without params (`roots/list`) still has an object.
            let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
            requests = requests.request(key.clone(), method, params);
        }
    }
    if let Some(state) = result.get("requestState").and_then(Value::as_str) {
        requests = requests.request_state(state.as_bytes().to_vec());
    }
    match modern.input_required(requests) {
        Ok(asked) => Reply::InputRequired(asked),
        Err(error) => Reply::Error(error),
    }
}

/// A client request as rmcp's types, from its JSON-RPC text. rmcp's
/// `ClientRequest` is an untagged union of 22 kinds behind a flattened
/// field: serde buffers the message and tries each kind in turn, making
/// and dropping an error for every kind before the right one (13 for a
/// `tools/call`). The layer knows the method, so the common ones are read
/// as their own kind at once, by the same rmcp `Deserialize` (its `_meta`
/// into the extensions as rmcp puts it); should that fail, the union
/// decides as it would under rmcp's own service.
fn decode(text: &str, method: &str) -> serde_json::Result<JsonRpcRequest<ClientRequest>> {
    match known_kind(text, method) {
        Some(request) => Ok(request),
        None => serde_json::from_str(text),
    }
}

/// `text` read as the kind its `method` names, for the common methods;
/// `None` for another method, or params that kind refuses.
fn known_kind(text: &str, method: &str) -> Option<JsonRpcRequest<ClientRequest>> {
    match method {
        "tools/call" => as_kind(text, ClientRequest::CallToolRequest),
        "tools/list" => as_kind(text, ClientRequest::ListToolsRequest),
        "resources/read" => as_kind(text, ClientRequest::ReadResourceRequest),
        "prompts/get" => as_kind(text, ClientRequest::GetPromptRequest),
        _ => None,
    }
}

/// `text` read as the request kind `R`, made a `ClientRequest` by `kind`.
fn as_kind<R: serde::de::DeserializeOwned>(
    text: &str,
    kind: fn(R) -> ClientRequest,
) -> Option<JsonRpcRequest<ClientRequest>> {
    let request = serde_json::from_str::<JsonRpcRequest<R>>(text).ok()?;
    Some(JsonRpcRequest::new(request.id, kind(request.request)))
}

/// The JSON-RPC text of a client message, rebuilt from the layer's parts
/// (the params are the client's own text).
fn wire_text(id: Option<&Value>, method: &str, params: Option<&str>) -> String {
    let method = Value::String(method.into());
    let mut text = String::with_capacity(64 + params.map_or(0, str::len));
    text.push_str(r#"{"jsonrpc":"2.0","method":"#);
    text.push_str(&method.to_string());
    if let Some(id) = id {
        text.push_str(r#","id":"#);
        text.push_str(&id.to_string());
    }
    if let Some(params) = params {
        text.push_str(r#","params":"#);
        text.push_str(params);
    }
    text.push('}');
    text
}

/// The reply for the handler's answer; for `initialize`, with the version
/// the layer negotiated for the session (`version`); for a 2026-07-28
/// request (`modern`), an input request made the layer's.
///
/// A 2026-07-28 `CreateTaskResult` (a task of the handler's own manager)
/// is `Reply::TaskCreated`. Every other result is serialized once, as the layer writes it
/// (`Reply::Serialized`): no `Value` tree is built for it. Only the
/// results the layer must read or edit become a tree: `initialize`'s, an
/// `InputRequiredResult`, and a custom result (which may be one).
fn answer(
    message: ServerJsonRpcMessage,
    version: Option<&str>,
    modern: Option<&ModernRequest>,
) -> Reply {
    let result = match message {
        ServerJsonRpcMessage::Response(response) => response.result,
        ServerJsonRpcMessage::Error(error) => return Reply::Error(rpc_error(error.error)),
        _ => return Reply::Error(RpcError::new(-32603, "the handler sent no answer")),
    };
    if modern.is_some() && matches!(result, ServerResult::CreateTaskResult(_)) {
        // A task of the handler's own manager: the layer writes it as a
        // task (`resultType: "task"`) where the request may take one.
        return match Reply::serialized(&result) {
            Reply::Serialized(created) => Reply::TaskCreated(created),
            other => other,
        };
    }
    let read = version.is_some()
        || matches!(
            result,
            ServerResult::InputRequiredResult(_) | ServerResult::CustomResult(_)
        );
    if !read {
        return Reply::serialized(&result);
    }
    match serde_json::to_value(&result) {
        Ok(mut result) => {
            if let (Some(version), Some(fields)) = (version, result.as_object_mut()) {
                fields.insert("protocolVersion".into(), version.into());
            }
            match modern {
                Some(modern) => input_required(modern, result),
                None => Reply::Result(result),
            }
        }
        Err(error) => Reply::Error(RpcError::new(
            -32603,
            format!("the handler's result is not JSON: {error}"),
        )),
    }
}

fn rpc_error(error: ErrorData) -> RpcError {
    let mut rpc = RpcError::new(i64::from(error.code.0), error.message.into_owned());
    rpc.data = error.data;
    rpc
}

/// An SSE reply: the handler's messages as JSON, its answer last; holds the
/// service loop until then. In a legacy session, a request the handler
/// sends the client (sampling, elicitation, roots) goes out as the
/// session's own ([`LegacyRequest::ask`](sessionreg::http::LegacyRequest::ask):
/// an id of the session's, the pending ones bounded), and the client's
/// answer goes back to the handler under the id it used.
struct Answering<S: ServerHandler> {
    first: Option<ServerJsonRpcMessage>,
    replies: Replies,
    running: Option<RunningService<RoleServer, Arc<S>>>,
    ctx: Context<HandlerSession<S>>,
    answers: Answers,
    /// The session's requests awaiting the client's answer, by the id the
    /// handler gave each: polled with the stream, so they end with it.
    asked: Vec<(RequestId, ClientAnswer)>,
}

impl<S: ServerHandler> Answering<S> {
    /// What goes out for `message`: a request of the handler's in a
    /// session is asked as the session's own; `None` when it was refused
    /// (the handler then has its error).
    fn outgoing(&mut self, message: ServerJsonRpcMessage) -> Option<Value> {
        let (ServerJsonRpcMessage::Request(request), Some(legacy)) = (&message, self.ctx.legacy())
        else {
            return serde_json::to_value(&message).ok();
        };
        let id = request.id.clone();
        let wire = serde_json::to_value(request).unwrap_or(Value::Null);
        let method = wire["method"].as_str().unwrap_or_default();
        let params = wire.get("params").cloned().unwrap_or_else(|| json!({}));
        let answers = &self.answers;
        match legacy.ask(method, params) {
            Ok(asked) => {
                self.asked.push((id, asked.answer));
                Some(asked.message)
            }
            Err(error) => {
                let _ = answers.try_send(client_answer(id, Err(error)));
                None
            }
        }
    }
}

/// The client's answer (or the refusal) as rmcp's loop reads it: a
/// response to the id the handler's request had.
fn client_answer(id: RequestId, outcome: Result<Value, RpcError>) -> ClientJsonRpcMessage {
    let error = match outcome.map(serde_json::from_value::<ClientResult>) {
        Ok(Ok(result)) => return ClientJsonRpcMessage::response(result, id),
        Ok(Err(error)) => ErrorData::internal_error(format!("the client's answer: {error}"), None),
        Err(error) => ErrorData::new(
            ErrorCode(i32::try_from(error.code).unwrap_or(-32603)),
            error.message,
            error.data,
        ),
    };
    ClientJsonRpcMessage::error(error, Some(id))
}

impl<S: ServerHandler> Stream for Answering<S> {
    type Item = Value;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Value>> {
        let this = &mut *self;
        if this.running.is_none() {
            return Poll::Ready(None);
        }
        // The client's answers that came in go back to the handler.
        let mut index = 0;
        while index < this.asked.len() {
            if let Poll::Ready(outcome) = Pin::new(&mut this.asked[index].1).poll(cx) {
                let (id, _) = this.asked.swap_remove(index);
                let _ = this.answers.try_send(client_answer(id, outcome));
            } else {
                index += 1;
            }
        }
        let message = match this.first.take() {
            Some(first) => first,
            None => match this.replies.poll_recv(cx) {
                Poll::Ready(Some(message)) => message,
                Poll::Ready(None) => {
                    this.running = None;
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            },
        };
        if is_answer(&message) {
            // The exchange is over: the loop ends by itself.
            this.running = None;
        }
        match this.outgoing(message) {
            Some(value) => Poll::Ready(Some(value)),
            // Refused: the handler hears of it; look for what it sends next.
            None => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What rmcp's own service would make of `text`.
    fn by_union(text: &str) -> Value {
        let request: JsonRpcRequest<ClientRequest> = serde_json::from_str(text).unwrap();
        serde_json::to_value(request).unwrap()
    }

    #[test]
    fn a_known_method_is_read_as_its_own_kind_exactly_as_the_union_reads_it() {
        let meta = r#""_meta":{"progressToken":7,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}"#;
        for (method, params) in [
            (
                "tools/call",
                format!(r#"{{{meta},"name":"echo","arguments":{{"text":"hi"}}}}"#),
            ),
            ("tools/list", format!(r#"{{{meta},"cursor":"a"}}"#)),
            ("tools/list", "{}".to_string()),
            (
                "resources/read",
                format!(r#"{{{meta},"uri":"basket://1"}}"#),
            ),
            (
                "prompts/get",
                format!(r#"{{{meta},"name":"p","arguments":{{"a":"b"}}}}"#),
            ),
        ] {
            let text = wire_text(Some(&json!(3)), method, Some(params.as_str()));
            let known = known_kind(&text, method).is_some();
            let decoded = decode(&text, method).unwrap();
            assert_eq!(
                serde_json::to_value(&decoded).unwrap(),
                by_union(&text),
                "{text}"
            );
            assert_eq!(decoded.request.method(), method);
            assert!(known, "{method} read as its own kind");
        }
    }

    #[test]
    fn params_the_kind_refuses_fall_back_to_the_union() {
        // No `name`: not a CallToolRequest; rmcp's union makes it a custom
        // request, and so does the fallback.
        let text = wire_text(Some(&json!(1)), "tools/call", Some("{}"));
        assert!(known_kind(&text, "tools/call").is_none());
        let decoded = decode(&text, "tools/call").unwrap();
        assert!(matches!(decoded.request, ClientRequest::CustomRequest(_)));
        assert_eq!(serde_json::to_value(&decoded).unwrap(), by_union(&text));
    }
}
