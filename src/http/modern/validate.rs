//! The checks of a 2026-07-28 request's headers and per-request fields
//! against its body (the transport page's "Server Validation", SEP-2243),
//! before the application sees it.

use crate::http::wire::header_rules;
use crate::http::wire::headers::{MCP_METHOD, MCP_NAME};
use crate::http::wire::jsonrpc::{self, Message, RpcError};
use crate::http::wire::meta::{META_CAPABILITIES, META_VERSION};
use crate::http::wire::one_walk::{MemberExtents, META_READ, PARAMS_READ};
use crate::http::wire::protocol::MODERN_VERSION;
use crate::http::wire::raw_text::{MemberWalk, RawText};
use crate::http::wire::request_headers::{McpHeaders, SingleValued};
use http::HeaderMap;
use std::borrow::Cow;

/// The members of a 2026-07-28 message's params the layer reads (its checks
/// here, and the handler's view in `read`), as raw text borrowed from the
/// message: found once, the rest passed over, nothing built. A member that
/// is there is `Some`, even as `null`.
#[derive(Default, Debug, PartialEq)]
pub(super) struct CheckedParams<'a> {
    pub(super) name: Option<RawText<'a>>,
    pub(super) uri: Option<RawText<'a>>,
    pub(super) task_id: Option<RawText<'a>>,
    pub(super) arguments: Option<RawText<'a>>,
    pub(super) input_responses: Option<RawText<'a>>,
    pub(super) request_state: Option<RawText<'a>>,
}

/// The members of `params._meta` the layer reads.
#[derive(Default, Debug, PartialEq)]
pub(super) struct Meta<'a> {
    version: Option<RawText<'a>>,
    pub(super) capabilities: Option<RawText<'a>>,
    pub(super) log_level: Option<RawText<'a>>,
    pub(super) progress_token: Option<RawText<'a>>,
}

/// What the layer reads of one message's params, read once.
#[derive(Default, Debug, PartialEq)]
pub(super) struct Fields<'a> {
    pub(super) params: CheckedParams<'a>,
    pub(super) meta: Meta<'a>,
    /// Whether `params._meta` is there as an object.
    meta_is_object: bool,
}

/// Reads the members the layer needs out of a message's params (a
/// response has none): where the read of the body found them (`extents`,
/// [`one_walk`](crate::http::wire::one_walk)), or found here; `-32602` if
/// one of them is given twice (the application might read the other). The
/// params' text ([`Params`](crate::http::jsonrpc::Params)) was checked when
/// the message was read: their members are found without a second parse
/// (`raw_text.rs`).
pub(super) fn fields<'a>(
    message: &'a Message,
    extents: Option<&MemberExtents>,
) -> Result<Fields<'a>, RpcError> {
    let raw = match message {
        Message::Request(request) => request.params.as_ref(),
        Message::Notification(note) => note.params.as_ref(),
        Message::Response(_) => None,
    };
    let Some(raw) = raw else {
        return Ok(Fields::default());
    };
    if let Some(extents) = extents {
        let text = raw.get();
        return Ok(Fields {
            params: CheckedParams::of(extents.params(text)),
            meta: Meta::of(extents.meta(text)),
            meta_is_object: extents.meta_is_object(),
        });
    }
    let mut fields = Fields::default();
    let Some(mut members) = RawText::of_params(raw).members() else {
        return Ok(fields);
    };
    let mut params = [None; PARAMS_READ.len()];
    let mut meta = [None; META_READ.len()];
    let mut meta_seen = false;
    while let Some(name) = members.name() {
        let name = name.text();
        if name == "_meta" {
            if std::mem::replace(&mut meta_seen, true) {
                return Err(twice(&name));
            }
            // An object is walked once, for its members, and passed.
            match members.value_members() {
                Some(mut walk) => {
                    fields.meta_is_object = true;
                    read_meta(&mut walk, &mut meta)?;
                    members.resume_after(walk);
                }
                None => _ = members.value(),
            }
            continue;
        }
        let Some(value) = members.value() else { break };
        if let Some(at) = PARAMS_READ.iter().position(|read| *read == name) {
            once(&mut params[at], value, &name)?;
        }
    }
    fields.params = CheckedParams::of(params);
    fields.meta = Meta::of(meta);
    Ok(fields)
}

impl<'a> CheckedParams<'a> {
    /// The members of [`PARAMS_READ`], in its order.
    fn of(read: [Option<RawText<'a>>; PARAMS_READ.len()]) -> CheckedParams<'a> {
        let [name, uri, task_id, arguments, input_responses, request_state] = read;
        CheckedParams {
            name,
            uri,
            task_id,
            arguments,
            input_responses,
            request_state,
        }
    }
}

impl<'a> Meta<'a> {
    /// The members of [`META_READ`], in its order.
    fn of(read: [Option<RawText<'a>>; META_READ.len()]) -> Meta<'a> {
        let [version, capabilities, log_level, progress_token] = read;
        Meta {
            version,
            capabilities,
            log_level,
            progress_token,
        }
    }
}

/// Reads the members of `params._meta` the layer needs.
fn read_meta<'a>(
    members: &mut MemberWalk<'a>,
    meta: &mut [Option<RawText<'a>>; META_READ.len()],
) -> Result<(), RpcError> {
    for (name, value) in members {
        let name = name.text();
        if let Some(at) = META_READ.iter().position(|read| *read == name) {
            once(&mut meta[at], value, &name)?;
        }
    }
    Ok(())
}

/// Puts a member in its slot, or refuses it given twice.
fn once<'a>(
    slot: &mut Option<RawText<'a>>,
    value: RawText<'a>,
    name: &str,
) -> Result<(), RpcError> {
    match slot.replace(value) {
        None => Ok(()),
        Some(_) => Err(twice(name)),
    }
}

fn twice(name: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "invalid params: member `{name}` given more than once"
    ))
}

/// The checks of "Server Validation" on a 2026-07-28 message.
pub(super) fn check_headers(
    headers: &HeaderMap,
    mcp: &McpHeaders,
    message: &Message,
    fields: &Fields<'_>,
) -> Result<(), RpcError> {
    let method = match message {
        Message::Request(request) => &request.method,
        Message::Notification(note) => &note.method,
        Message::Response(_) => {
            return Err(RpcError::new(
                jsonrpc::RpcError::INVALID_REQUEST,
                "a client must not send JSON-RPC responses at protocol version 2026-07-28",
            ))
        }
    };
    let is_request = matches!(message, Message::Request(_));
    if let Some(name) = repeated_param_header(headers) {
        return Err(header_mismatch(format!(
            "{name} header given more than once"
        )));
    }
    match header_text(&mcp.method, MCP_METHOD)? {
        Some(value) if value != method.as_str() => {
            return Err(mismatch("Mcp-Method", value, method));
        }
        Some(_) => {}
        None if is_request => return Err(missing("Mcp-Method")),
        None => {}
    }
    if let Some(target) = named_target(method, &fields.params) {
        match header_text(&mcp.name, MCP_NAME)? {
            Some(value) => {
                let value = decode_sentinel(value)?;
                if value != target {
                    return Err(mismatch("Mcp-Name", &value, &target));
                }
            }
            None if is_request => return Err(missing("Mcp-Name")),
            None => {}
        }
    }
    if let Some(body_version) = fields.meta.version {
        let body_version = body_version
            .string()
            .unwrap_or_else(|| "<not a string>".into());
        if body_version != MODERN_VERSION {
            return Err(mismatch(
                "MCP-Protocol-Version",
                MODERN_VERSION,
                &body_version,
            ));
        }
    }
    Ok(())
}

/// The per-request protocol fields every 2026-07-28 request carries in
/// `params._meta` (the `basic` page: "A request missing any required field
/// is malformed").
pub(super) fn check_meta(message: &Message, fields: &Fields<'_>) -> Result<(), RpcError> {
    if !matches!(message, Message::Request(_)) {
        return Ok(());
    }
    if !fields.meta_is_object {
        return Err(RpcError::invalid_params(
            "params._meta is required at protocol version 2026-07-28",
        ));
    }
    let meta = &fields.meta;
    if !meta.version.is_some_and(|v| v.starts_with(b"\"")) {
        return Err(RpcError::invalid_params(format!(
            "params._meta needs \"{META_VERSION}\" (a string)"
        )));
    }
    if !meta.capabilities.is_some_and(|c| c.starts_with(b"{")) {
        return Err(RpcError::invalid_params(format!(
            "params._meta needs \"{META_CAPABILITIES}\" (an object)"
        )));
    }
    Ok(())
}

/// The first `Mcp-Param-*` header given more than once, mirrored by the
/// called tool or not: one copy checked here while a gateway in front acts
/// on the other is the mismatch "Server Validation" exists to stop.
fn repeated_param_header(headers: &HeaderMap) -> Option<&str> {
    if !header_rules::any_repeated(headers) {
        return None;
    }
    headers
        .keys()
        .map(|name| name.as_str())
        .filter(|name| name.starts_with(MCP_PARAM_PREFIX))
        .find(|name| headers.get_all(*name).iter().nth(1).is_some())
}

/// The lowercase prefix of a mirrored parameter's header.
const MCP_PARAM_PREFIX: &str = "mcp-param-";

/// The body value `Mcp-Name` mirrors, for the methods that have one.
fn named_target<'a>(method: &str, checked: &CheckedParams<'a>) -> Option<Cow<'a, str>> {
    let field = match method {
        "tools/call" | "prompts/get" => checked.name,
        "resources/read" => checked.uri,
        // The tasks extension routes its requests by task id.
        "tasks/get" | "tasks/update" | "tasks/cancel" => checked.task_id,
        _ => return None,
    };
    field?.string()
}

/// A header's value as text; `Err` if it is not visible ASCII (plus space
/// and tab), which "Server Validation" counts as a failure.
fn header_text<'h>(header: &'h SingleValued, name: &str) -> Result<Option<&'h str>, RpcError> {
    let value = match header {
        SingleValued::Absent => return Ok(None),
        SingleValued::One(value) => value,
        SingleValued::Repeated => {
            return Err(header_mismatch(format!(
                "{name} header given more than once"
            )))
        }
    };
    match value.to_str() {
        // Optional whitespace (spaces, tabs) around a field value is not
        // part of it; `to_str` let through no other ASCII whitespace, so
        // `trim_ascii` trims just those, as bytes (a `char` pattern costs
        // a request's two look-ups about a hundred instructions).
        Ok(text) => Ok(Some(text.trim_ascii())),
        Err(_) => Err(header_mismatch(format!(
            "{name} header contains invalid characters"
        ))),
    }
}

/// Decodes the Base64 sentinel `=?base64?...?=` of "Value Encoding"; any
/// other value is taken as it is.
fn decode_sentinel(value: &str) -> Result<Cow<'_, str>, RpcError> {
    crate::http::wire::mirror::decode(value)
        .ok_or_else(|| header_mismatch("Mcp-Name header has an invalid Base64 value".into()))
}

fn header_mismatch(message: String) -> RpcError {
    RpcError::new(
        jsonrpc::RpcError::HEADER_MISMATCH,
        format!("Header mismatch: {message}"),
    )
}

fn missing(header: &str) -> RpcError {
    header_mismatch(format!(
        "the {header} header is required at protocol version 2026-07-28"
    ))
}

fn mismatch(header: &str, value: &str, body: &str) -> RpcError {
    // Both values are echoed back, as in the spec's example; bounded, since
    // either may be long.
    let short = |s: &str| -> String {
        match s.char_indices().nth(128) {
            Some((end, _)) => format!("{}...", &s[..end]),
            None => s.to_string(),
        }
    };
    header_mismatch(format!(
        "{header} header value '{}' does not match body value '{}'",
        short(value),
        short(body)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::wire::one_walk::{self, Find};
    use crate::http::wire::request_headers::RequestHeaders;
    use http::HeaderValue;
    use serde_json::json;
    use serde_json::Value;

    fn message(value: Value) -> Message {
        Message::from_slice(value.to_string().as_bytes()).unwrap()
    }

    /// The checks as `serve` runs them: the fields read once, then checked.
    fn check_headers(headers: &HeaderMap, message: &Message) -> Result<(), RpcError> {
        let mcp = McpHeaders::of(&RequestHeaders::scan(headers));
        super::check_headers(headers, &mcp, message, &fields(message, None)?)
    }

    fn check_meta(message: &Message) -> Result<(), RpcError> {
        super::check_meta(message, &fields(message, None)?)
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    fn call(name: &str) -> Message {
        message(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": { "name": name, "arguments": {} } }))
    }

    /// "Server Validation": missing, different and encoded headers.
    #[test]
    fn server_validation_of_mcp_method_and_mcp_name() {
        let ok = headers(&[("mcp-method", "tools/call"), ("mcp-name", "echo")]);
        assert_eq!(check_headers(&ok, &call("echo")), Ok(()));
        let spaced = headers(&[("mcp-method", " tools/call"), ("mcp-name", "  echo\t")]);
        assert_eq!(check_headers(&spaced, &call("echo")), Ok(()));
        for bad in [
            headers(&[("mcp-name", "echo")]),
            headers(&[("mcp-method", "tools/list"), ("mcp-name", "echo")]),
            headers(&[("mcp-method", "tools/call")]),
            headers(&[("mcp-method", "tools/call"), ("mcp-name", "other")]),
            headers(&[
                ("mcp-method", "tools/call"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "echo"),
            ]),
        ] {
            let error = check_headers(&bad, &call("echo")).unwrap_err();
            assert_eq!(error.code, jsonrpc::RpcError::HEADER_MISMATCH, "{bad:?}");
        }
        // "Value Encoding": the sentinel is decoded before comparing.
        let encoded = headers(&[
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ]);
        assert_eq!(check_headers(&encoded, &call("Hello, 世界")), Ok(()));
        assert!(check_headers(&encoded, &call("Hello")).is_err());
        // Methods without a target need no Mcp-Name.
        let list = message(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }));
        assert_eq!(
            check_headers(&headers(&[("mcp-method", "tools/list")]), &list),
            Ok(())
        );
        let read = message(
            json!({ "jsonrpc": "2.0", "id": 1, "method": "resources/read",
                                   "params": { "uri": "file:///a" } }),
        );
        let h = headers(&[("mcp-method", "resources/read"), ("mcp-name", "file:///a")]);
        assert_eq!(check_headers(&h, &read), Ok(()));
    }

    /// "Protocol Version Header": the header must match `_meta`'s version.
    #[test]
    fn protocol_version_must_match_the_body_meta() {
        let list = |version: &str| {
            message(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list",
                            "params": { "_meta": { META_VERSION: version } } }))
        };
        let h = headers(&[("mcp-method", "tools/list")]);
        assert_eq!(check_headers(&h, &list("2026-07-28")), Ok(()));
        let error = check_headers(&h, &list("2025-11-25")).unwrap_err();
        assert_eq!(error.code, jsonrpc::RpcError::HEADER_MISMATCH);
    }

    /// Per-request protocol fields: `_meta` with the version and the client
    /// capabilities, or -32602.
    #[test]
    fn requests_need_their_meta() {
        let with = |meta: Value| {
            message(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list",
                            "params": { "_meta": meta } }))
        };
        let good = json!({ META_VERSION: "2026-07-28", META_CAPABILITIES: {} });
        assert_eq!(check_meta(&with(good)), Ok(()));
        for bad in [
            json!(null),
            json!({ META_CAPABILITIES: {} }),
            json!({ META_VERSION: "2026-07-28" }),
            json!({ META_VERSION: 1, META_CAPABILITIES: {} }),
        ] {
            assert_eq!(
                check_meta(&with(bad)).unwrap_err().code,
                jsonrpc::RpcError::INVALID_PARAMS
            );
        }
        // `_meta` that is not an object is read past, and refused as missing.
        for not_object in [
            json!(null),
            json!([1, { "a": { "b": [] } }]),
            json!("x"),
            json!(true),
            json!(-1),
            json!(1.5),
        ] {
            let error = check_meta(&with(not_object.clone())).unwrap_err();
            assert_eq!(error.code, jsonrpc::RpcError::INVALID_PARAMS);
            assert!(
                error.message.contains("_meta is required"),
                "{not_object}: {}",
                error.message
            );
        }
        let bare = message(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }));
        assert!(check_meta(&bare).is_err());
        let note = message(json!({ "jsonrpc": "2.0", "method": "notifications/x" }));
        assert_eq!(check_meta(&note), Ok(()));
    }

    /// A member the layer reads, given twice, is refused rather than read
    /// one way here and another way by the application.
    #[test]
    fn members_given_twice_are_refused() {
        let meta = format!(r#"{{"{META_VERSION}":"2026-07-28","{META_CAPABILITIES}":{{}}}}"#);
        for params in [
            format!(r#"{{"name":"a","name":"b","_meta":{meta}}}"#),
            format!(r#"{{"name":"a","requestState":"x","requestState":"y","_meta":{meta}}}"#),
            format!(r#"{{"name":"a","_meta":{meta},"_meta":{meta}}}"#),
            format!(r#"{{"name":"a","_meta":1,"_meta":{meta}}}"#),
            format!(
                r#"{{"name":"a","_meta":{{"{META_VERSION}":"2026-07-28","{META_VERSION}":"2025-11-25"}}}}"#
            ),
        ] {
            let body =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
            let message = Message::from_slice(body.as_bytes()).unwrap();
            let error = fields(&message, None).expect_err("refused");
            assert_eq!(error.code, jsonrpc::RpcError::INVALID_PARAMS, "{params}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]
        /// The members the read of a body found are the members found
        /// here; where it found one given twice (no extents), this walk
        /// refuses it.
        #[test]
        fn the_members_the_read_found_are_those_found_here(
            body in one_walk::tests::body()
        ) {
            if let Some((message, extents)) = one_walk::read(body.as_bytes(), Find::ParamMembers) {
                let here = fields(&message, None);
                match extents {
                    Some(extents) => proptest::prop_assert_eq!(fields(&message, Some(&extents)), here),
                    None => proptest::prop_assert!(here.is_err()),
                }
            }
        }
    }

    /// Any `Mcp-Param-*` header given twice is a mismatch, whether a tool
    /// mirrors it or not.
    #[test]
    fn a_repeated_mcp_param_header_is_refused() {
        let ok = headers(&[
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
            ("mcp-param-a", "1"),
            ("mcp-param-b", "1"),
        ]);
        assert_eq!(check_headers(&ok, &call("echo")), Ok(()));
        let twice = headers(&[
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
            ("Mcp-Param-A", "1"),
            ("mcp-param-a", "1"),
        ]);
        let error = check_headers(&twice, &call("echo")).unwrap_err();
        assert_eq!(error.code, jsonrpc::RpcError::HEADER_MISMATCH);
        assert!(error.message.contains("mcp-param-a"), "{}", error.message);
    }

    /// "Sending Messages": notifications need no headers; responses are refused.
    #[test]
    fn notifications_and_responses() {
        let note = message(json!({ "jsonrpc": "2.0", "method": "notifications/x" }));
        assert_eq!(check_headers(&HeaderMap::new(), &note), Ok(()));
        let h = headers(&[("mcp-method", "notifications/y")]);
        assert!(check_headers(&h, &note).is_err());
        let response = message(json!({ "jsonrpc": "2.0", "id": 1, "result": {} }));
        let error = check_headers(&HeaderMap::new(), &response).unwrap_err();
        assert_eq!(error.code, jsonrpc::RpcError::INVALID_REQUEST);
    }
}
