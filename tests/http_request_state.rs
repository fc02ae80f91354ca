//! Multi-round-trip requests at 2026-07-28 (`input_required`, SEP-2322)
//! over real sockets: the round trip, and every way a client can present a
//! `requestState` the server must refuse (tampered, expired, sealed with a
//! key rotated out, another principal's, another request's, replayed). A
//! refusal is 400 with `-32602`, runs nothing, keeps nothing and is
//! counted in `sessionreg_request_state_rejected_total{cause}`. Also the
//! `x-mcp-header` parameters (SEP-2243) of a tool, checked before it runs.
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::{with_meta, Answer, Client};
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{self, Message, RpcError};
use sessionreg::http::modern::{InputRequests, MirroredParams, RequestStateKeys, StateRejection};
use sessionreg::http::SessionManager;
use sessionreg::http::{App, BearerTokens, Builder, Context, HandlerError, Reply};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// `confirm {n}` asks for a confirmation (`ok`), with state `"asked n"`,
/// single use unless `reusable` is set; answered, it says what its state
/// was. `regional {region}` mirrors its region in `Mcp-Param-Region`.
struct Confirm {
    /// Calls that reached the handler with a verified state.
    opened: AtomicUsize,
    regional: Arc<MirroredParams>,
}

impl App for Confirm {
    type Session = ();

    fn open(&self, _: &jsonrpc::Request, _: &http::request::Parts) -> Result<(), RpcError> {
        Ok(())
    }

    fn mirrored_params(&self, tool: &str) -> Option<Arc<MirroredParams>> {
        (tool == "regional").then(|| Arc::clone(&self.regional))
    }

    async fn handle(&self, ctx: Context<()>, message: Message) -> Result<Reply, HandlerError> {
        let Message::Request(request) = message else {
            return Ok(Reply::Accepted);
        };
        let params = request.params_value().unwrap_or(Value::Null);
        let modern = ctx.modern().expect("these tests speak 2026-07-28");
        let text =
            |text: String| Reply::Result(json!({ "content": [{ "type": "text", "text": text }] }));
        Ok(match params["name"].as_str() {
            Some("regional") => text(format!("region {}", params["arguments"]["region"])),
            Some("confirm") => match (modern.request_state(), modern.input_response("ok")) {
                (Some(state), Some(answer)) => {
                    self.opened.fetch_add(1, Ordering::SeqCst);
                    text(format!(
                        "{} -> {}",
                        String::from_utf8_lossy(state),
                        answer["action"]
                    ))
                }
                _ => {
                    let n = &params["arguments"]["n"];
                    let asked = InputRequests::new()
                        .elicit("ok", "Sure?", json!({ "type": "object", "properties": {} }))
                        .request_state(format!("asked {n}").into_bytes());
                    let asked = if params["arguments"]["reusable"] == true {
                        asked
                    } else {
                        asked.single_use()
                    };
                    match modern.input_required(asked) {
                        Ok(asked) => Reply::InputRequired(asked),
                        Err(error) => Reply::Error(error),
                    }
                }
            },
            _ => Reply::Error(RpcError::method_not_found("no such tool")),
        })
    }
}

struct Served {
    url: String,
    manager: SessionManager<Confirm>,
}

impl Served {
    /// Calls that reached the application with a verified state.
    fn opened(&self) -> usize {
        self.manager.app().opened.load(Ordering::SeqCst)
    }

    fn rejected(&self, cause: StateRejection) -> u64 {
        self.manager.http_stats().request_states_rejected(cause)
    }

    fn unused(&self) -> u64 {
        self.manager.http_stats().request_states_unused
    }
}

async fn serve(configure: impl FnOnce(Builder<Confirm>) -> Builder<Confirm>) -> Served {
    let schema = json!({ "type": "object", "properties": {
        "region": { "type": "string", "x-mcp-header": "Region" } } });
    let app = Confirm {
        opened: AtomicUsize::new(0),
        regional: Arc::new(MirroredParams::from_input_schema(&schema).unwrap()),
    };
    let manager = configure(SessionManager::builder(app)).build().unwrap();
    let url = http_support::serve_manager(&manager).await;
    Served { url, manager }
}

/// A 2026-07-28 `tools/call` of `tool` with `arguments`, and with `retry`
/// (input responses, request state) merged into its params.
async fn call(
    client: &Client,
    tool: &str,
    arguments: Value,
    retry: Value,
    headers: &[(&str, &str)],
) -> Answer {
    let mut body = with_meta(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                     "params": { "name": tool, "arguments": arguments } }));
    // A client that can answer elicitations (the layer leaves out the input
    // requests a client did not declare it can answer).
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "elicitation": {} });
    if let Value::Object(retry) = retry {
        for (key, value) in retry {
            body["params"][key] = value;
        }
    }
    let mut all = vec![("mcp-method", "tools/call"), ("mcp-name", tool)];
    all.extend_from_slice(headers);
    client.post_modern(&body, &all).await
}

/// Asks `confirm` with `arguments`; returns its sealed state.
async fn ask(client: &Client, arguments: Value) -> String {
    let answer = call(client, "confirm", arguments, json!(null), &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
    let result = &answer.json()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    assert_eq!(
        result["inputRequests"]["ok"]["method"],
        "elicitation/create"
    );
    result["requestState"]
        .as_str()
        .expect("a sealed state")
        .to_string()
}

fn retry(state: &str) -> Value {
    json!({ "inputResponses": { "ok": { "action": "accept", "content": {} } }, "requestState": state })
}

/// The answer is a refusal of the state: 400, `-32602`, the request's id.
fn assert_refused(answer: &Answer) {
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{:?}", answer.body);
    let body = answer.json();
    assert_eq!(body["id"], 3);
    assert_eq!(body["error"]["code"], jsonrpc::RpcError::INVALID_PARAMS);
    assert_eq!(body["error"]["message"], "Invalid requestState");
}

#[tokio::test]
async fn a_round_trip_gets_the_state_back_verified_and_uses_it_up() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let state = ask(&client, json!({ "n": 1 })).await;
    // Opaque: the application's bytes are not readable in it.
    assert!(!state.contains("asked"));
    assert_eq!(served.unused(), 1);
    let answer = call(&client, "confirm", json!({ "n": 1 }), retry(&state), &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
    let result = &answer.json()["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["content"][0]["text"], "asked 1 -> \"accept\"");
    assert_eq!(served.opened(), 1);
    // Used: nothing of it is kept.
    assert_eq!(served.unused(), 0);
    assert_eq!(served.manager.stats().created, 0);
}

#[tokio::test]
async fn a_single_use_state_presented_again_is_refused_as_replayed() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let state = ask(&client, json!({ "n": 1 })).await;
    let first = call(&client, "confirm", json!({ "n": 1 }), retry(&state), &[]).await;
    assert_eq!(first.status, StatusCode::OK);
    let again = call(&client, "confirm", json!({ "n": 1 }), retry(&state), &[]).await;
    assert_refused(&again);
    assert_eq!(served.rejected(StateRejection::Replayed), 1);
    assert_eq!(served.opened(), 1);
    // A state the application did not ask to be single use opens again.
    let reusable = ask(&client, json!({ "n": 2, "reusable": true })).await;
    assert_eq!(served.unused(), 0);
    for _ in 0..2 {
        let answer = call(
            &client,
            "confirm",
            json!({ "n": 2, "reusable": true }),
            retry(&reusable),
            &[],
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK);
    }
    assert_eq!(served.opened(), 3);
}

#[tokio::test]
async fn a_tampered_or_malformed_state_is_refused_and_not_used_up() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let state = ask(&client, json!({ "n": 1 })).await;
    // One character changed in the middle (the ciphertext).
    let mut bytes = state.clone().into_bytes();
    let mid = bytes.len() / 2;
    bytes[mid] = if bytes[mid] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    assert_refused(&call(&client, "confirm", json!({ "n": 1 }), retry(&tampered), &[]).await);
    assert_eq!(served.rejected(StateRejection::Tampered), 1);
    for malformed in ["", "not base64!", "AAAA"] {
        assert_refused(&call(&client, "confirm", json!({ "n": 1 }), retry(malformed), &[]).await);
    }
    assert_eq!(served.rejected(StateRejection::Malformed), 3);
    let not_a_string = json!({ "inputResponses": {}, "requestState": 7 });
    let answer = call(&client, "confirm", json!({ "n": 1 }), not_a_string, &[]).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(served.opened(), 0);
    // The genuine state was not used up by the forgeries.
    let answer = call(&client, "confirm", json!({ "n": 1 }), retry(&state), &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(served.opened(), 1);
}

#[tokio::test]
async fn a_state_presented_with_another_request_is_refused() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let state = ask(&client, json!({ "n": 1 })).await;
    assert_refused(&call(&client, "confirm", json!({ "n": 2 }), retry(&state), &[]).await);
    assert_eq!(served.rejected(StateRejection::Request), 1);
    assert_eq!(served.opened(), 0);
    assert_eq!(served.unused(), 1, "refused before it was used up");
}

#[tokio::test]
async fn a_state_presented_by_another_principal_is_refused() {
    let tokens = BearerTokens::new(BearerTokens::parse("ada=t-ada\nbob=t-bob").unwrap()).unwrap();
    let served = serve(|b| b.authenticator(tokens)).await;
    let ada = Client::with_bearer(&served.url, "t-ada");
    let bob = Client::with_bearer(&served.url, "t-bob");
    let state = ask(&ada, json!({ "n": 1 })).await;
    assert_refused(&call(&bob, "confirm", json!({ "n": 1 }), retry(&state), &[]).await);
    assert_eq!(served.rejected(StateRejection::Principal), 1);
    assert_eq!(served.opened(), 0);
    let answer = call(&ada, "confirm", json!({ "n": 1 }), retry(&state), &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
}

#[tokio::test]
async fn an_expired_state_is_refused_and_its_record_swept() {
    let served = serve(|b| {
        b.request_state_ttl(Duration::from_millis(50))
            .reap_interval(Duration::from_millis(10))
    })
    .await;
    let client = Client::new(&served.url);
    let state = ask(&client, json!({ "n": 1 })).await;
    // Past the expiry (a wait for a deadline, not a timing assertion).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_refused(&call(&client, "confirm", json!({ "n": 1 }), retry(&state), &[]).await);
    // Expired on the wall clock, or its record already swept: either way
    // it is refused and nothing of it is left.
    assert_eq!(
        served.rejected(StateRejection::Expired) + served.rejected(StateRejection::Replayed),
        1
    );
    assert!(http_support::eventually(|| served.unused() == 0).await);
    assert_eq!(served.opened(), 0);
}

#[tokio::test]
async fn keys_rotate_at_run_time_and_a_key_rotated_out_opens_nothing() {
    let first = RequestStateKeys::new(1, [1; 32]);
    let served = serve(|b| b.request_state_keys(first.clone())).await;
    let client = Client::new(&served.url);
    let sealed_by_first = ask(&client, json!({ "n": 1, "reusable": true })).await;
    // Rotated, the previous key kept for opening: the old state still opens.
    served
        .manager
        .set_request_state_keys(first.clone().rotated(2, [2; 32], 2));
    let answer = call(
        &client,
        "confirm",
        json!({ "n": 1, "reusable": true }),
        retry(&sealed_by_first),
        &[],
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    let sealed_by_second = ask(&client, json!({ "n": 1, "reusable": true })).await;
    // The first key dropped: what it sealed is refused; the second's opens.
    served
        .manager
        .set_request_state_keys(RequestStateKeys::new(2, [2; 32]));
    let answer = call(
        &client,
        "confirm",
        json!({ "n": 1, "reusable": true }),
        retry(&sealed_by_first),
        &[],
    )
    .await;
    assert_refused(&answer);
    assert_eq!(served.rejected(StateRejection::UnknownKey), 1);
    let answer = call(
        &client,
        "confirm",
        json!({ "n": 1, "reusable": true }),
        retry(&sealed_by_second),
        &[],
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
}

/// Of two retries with one single-use state sent at once, exactly one is
/// served: the record's terminate CAS decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_retries_with_one_state_serve_exactly_one() {
    let served = serve(|b| b).await;
    let client = Arc::new(Client::new(&served.url));
    for n in 0..20 {
        let state = ask(&client, json!({ "n": n })).await;
        let retries: Vec<_> = (0..2)
            .map(|_| {
                let client = Arc::clone(&client);
                let state = state.clone();
                tokio::spawn(async move {
                    call(&client, "confirm", json!({ "n": n }), retry(&state), &[])
                        .await
                        .status
                })
            })
            .collect();
        let mut ok = 0;
        for retry in retries {
            ok += usize::from(retry.await.unwrap() == StatusCode::OK);
        }
        assert_eq!(ok, 1, "round {n}");
    }
    assert_eq!(served.opened(), 20);
    assert_eq!(served.rejected(StateRejection::Replayed), 20);
}

/// SEP-2243: a tool's `x-mcp-header` parameter must arrive as its
/// `Mcp-Param-*` header too, equal to the argument; otherwise 400 with
/// `HeaderMismatch` (-32020), and the tool does not run.
#[tokio::test]
async fn a_mirrored_parameter_contradicting_its_header_is_refused() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let args = json!({ "region": "eu-west" });
    let ok = call(
        &client,
        "regional",
        args.clone(),
        json!(null),
        &[("mcp-param-region", "eu-west")],
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(
        ok.json()["result"]["content"][0]["text"],
        "region \"eu-west\""
    );
    for headers in [&[("mcp-param-region", "us-east")][..], &[][..]] {
        let answer = call(&client, "regional", args.clone(), json!(null), headers).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{headers:?}");
        assert_eq!(
            answer.json()["error"]["code"],
            jsonrpc::RpcError::HEADER_MISMATCH
        );
    }
    // The base64 sentinel is decoded before comparing.
    let encoded = call(
        &client,
        "regional",
        args,
        json!(null),
        &[("mcp-param-region", "=?base64?ZXUtd2VzdA==?=")],
    )
    .await;
    assert_eq!(encoded.status, StatusCode::OK);
}
