//! Authentication and the binding of a session to its principal, over real
//! sockets: refusals (401 with a challenge, 403), another principal's
//! requests with a session's id (404 like an unknown id, counted as
//! `cause="principal"`, ending nothing), and what the application sees of
//! the request.
#![cfg(feature = "http")]

mod http_support;

use http::{Method, StatusCode};
use http_body_util::Full;
use http_support::{initialize_body, Client, Server};
use serde_json::json;
use sessionreg::http::{AuthError, BearerTokens, Principal};
use sessionreg::{Miss, Reason};

fn tokens() -> BearerTokens {
    BearerTokens::new(BearerTokens::parse("ada=token-ada\nbob=token-bob\n").unwrap()).unwrap()
}

async fn bearer_server() -> Server {
    Server::start_with(|b| b.authenticator(tokens())).await
}

#[tokio::test]
async fn requests_without_valid_credentials_are_401_with_a_challenge() {
    let server = bearer_server().await;
    for (client, challenge) in [
        (Client::new(&server.url), r#"Bearer realm="mcp""#),
        (
            Client::with_bearer(&server.url, "token-eve"),
            r#"Bearer realm="mcp", error="invalid_token""#,
        ),
        (
            Client::new(&server.url).with_header("authorization", "Basic YWRhOng="),
            r#"Bearer realm="mcp""#,
        ),
    ] {
        let answer = client.post(None, &initialize_body("client")).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        assert_eq!(answer.headers["www-authenticate"], challenge);
        assert!(answer.session_id().is_none());
        assert!(answer.json()["error"]["code"].is_i64());
        // GET and DELETE are authenticated too.
        let get = client
            .open_stream("0123456789abcdef0123456789abcdef0123456789abcdef", None)
            .await;
        assert_eq!(get.status(), StatusCode::UNAUTHORIZED);
        let delete = client
            .delete("0123456789abcdef0123456789abcdef0123456789abcdef")
            .await;
        assert_eq!(delete.status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(server.created(), 0);
}

#[tokio::test]
async fn an_authenticator_may_answer_403() {
    let server = Server::start_with(|b| {
        b.authenticator(|request: &http::request::Parts| {
            match request.headers.get("x-user").and_then(|v| v.to_str().ok()) {
                Some("mallory") => Err(AuthError::Forbidden),
                Some(user) => Ok(Principal::new(user)),
                None => Err(AuthError::bearer(false)),
            }
        })
    })
    .await;
    let mallory = Client::new(&server.url).with_header("x-user", "mallory");
    let answer = mallory.post(None, &initialize_body("client")).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(answer.session_id().is_none());
    let ada = Client::new(&server.url).with_header("x-user", "ada");
    let id = ada.initialize().await;
    assert_eq!(ada.delete(&id).await.status, StatusCode::OK);
    assert_eq!(server.created(), 1);
}

/// The MCP security best practices: bind session ids to user-specific
/// information. A leaked id is worth nothing to another principal.
#[tokio::test]
async fn another_principals_requests_with_a_session_id_find_nothing() {
    let server = bearer_server().await;
    let ada = Client::with_bearer(&server.url, "token-ada");
    let bob = Client::with_bearer(&server.url, "token-bob");
    let id = ada.initialize().await;
    let unknown = format!("000000000fffffff{}", &id[16..]);
    let unknown_answer = bob.call(&unknown, "echo", json!({})).await;

    let before = server.manager.stats().misses(Miss::Principal);
    let stolen = bob.call(&id, "echo", json!({})).await;
    assert_eq!(stolen.status, StatusCode::NOT_FOUND);
    // Exactly the answer to an unknown id: no oracle.
    assert_eq!(stolen.body, unknown_answer.body);
    assert_eq!(
        bob.open_stream(&id, None).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(bob.delete(&id).await.status, StatusCode::NOT_FOUND);
    assert_eq!(server.manager.stats().misses(Miss::Principal), before + 3);
    // Exported as unknown ids (no oracle in /metrics; see
    // `metrics_do_not_tell_a_foreign_live_id_from_an_unknown_one`).
    let metrics = server.manager.metrics();
    assert!(
        !metrics.contains("sessionreg_lookups_rejected_total{cause=\"principal\"}"),
        "{metrics}"
    );
    // Bob's DELETE ended nothing; Ada's session is as it was.
    assert_eq!(server.live(), 1);
    assert_eq!(server.closes.count(), 0);
    assert_eq!(
        ada.call(&id, "echo", json!({})).await.status,
        StatusCode::OK
    );
    assert_eq!(ada.delete(&id).await.status, StatusCode::OK);
    assert_eq!(server.closes.count_reason(Reason::Deleted), 1);
}

/// `App::open` and `App::handle` see the request's head: its headers and
/// the principal in its extensions.
#[tokio::test]
async fn the_application_sees_the_request_and_its_principal() {
    let server = bearer_server().await;
    let ada = Client::with_bearer(&server.url, "token-ada").with_header("x-tag", "blue");
    let id = ada.initialize_as("cli").await;
    let whoami = ada.call(&id, "whoami", json!({})).await;
    assert_eq!(whoami.status, StatusCode::OK);
    let result = &whoami.json()["result"];
    assert_eq!(result["state"], "cli@ada", "open saw the principal");
    assert_eq!(result["principal"], "ada");
    assert_eq!(result["tag"], "blue");
    let entry_owner = server
        .manager
        .registry()
        .get(&id.parse().unwrap())
        .and_then(|s| s.owner().map(Principal::to_string));
    assert_eq!(entry_owner.as_deref(), Some("ada"));

    // Without an authenticator there is no principal.
    let open = Server::start().await;
    let anyone = Client::new(&open.url);
    let id = anyone.initialize_as("cli").await;
    let result = anyone.call(&id, "whoami", json!({})).await.json();
    assert_eq!(result["result"]["state"], "cli");
    assert!(result["result"]["principal"].is_null());
}

/// Rotating the tokens (what SIGHUP does in the example) takes effect on
/// the next request; a session stays bound to its principal's name.
#[tokio::test]
async fn rotated_tokens_apply_to_the_next_request() {
    let tokens = tokens();
    let server = Server::start_with({
        let tokens = tokens.clone();
        |b| b.authenticator(tokens)
    })
    .await;
    let old = Client::with_bearer(&server.url, "token-ada");
    let id = old.initialize().await;
    tokens
        .replace(BearerTokens::parse("ada=rotated-ada").unwrap())
        .unwrap();
    assert_eq!(
        old.call(&id, "echo", json!({})).await.status,
        StatusCode::UNAUTHORIZED
    );
    let new = Client::with_bearer(&server.url, "rotated-ada");
    assert_eq!(
        new.call(&id, "echo", json!({})).await.status,
        StatusCode::OK
    );
}

/// 2026-07-28 requests go through the authenticator like every other.
#[tokio::test]
async fn stateless_requests_are_authenticated() {
    let server = Server::start_with(|b| b.authenticator(tokens()).serve_modern(true)).await;
    let call = |client: &Client| {
        client
            .request(Method::POST)
            .header("content-type", "application/json")
            .header("accept", http_support::ACCEPT_BOTH)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "whoami")
            .body(Full::new(
                http_support::with_meta(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": { "name": "whoami", "arguments": {} } }))
                .to_string()
                .into(),
            ))
            .unwrap()
    };
    let anonymous = Client::new(&server.url);
    assert_eq!(
        anonymous.send(call(&anonymous)).await.status,
        StatusCode::UNAUTHORIZED
    );
    let bob = Client::with_bearer(&server.url, "token-bob");
    let answer = bob.send(call(&bob)).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["result"]["principal"], "bob");
    assert!(answer.json()["result"]["state"].is_null());
    assert_eq!(server.created(), 0);
}

/// Another principal's id and an unknown id got the
/// same 404 but moved different counters of `/metrics`, which anyone who
/// can read it could tell apart. The exported text counts both as unknown;
/// `stats()` keeps the distinction for the operator.
#[tokio::test]
async fn metrics_do_not_tell_a_foreign_live_id_from_an_unknown_one() {
    let server = bearer_server().await;
    let ada = Client::with_bearer(&server.url, "token-ada");
    let bob = Client::with_bearer(&server.url, "token-bob");
    let id = ada.initialize().await;
    let unknown = format!("000000000fffffff{}", &id[16..]);
    let rejected = |metrics: &str| -> Vec<String> {
        metrics
            .lines()
            .filter(|l| l.starts_with("sessionreg_lookups_rejected_total{"))
            .map(String::from)
            .collect()
    };
    let before = server.manager.metrics();
    assert_eq!(bob.delete(&unknown).await.status, StatusCode::NOT_FOUND);
    let after_unknown = server.manager.metrics();
    assert_eq!(bob.delete(&id).await.status, StatusCode::NOT_FOUND);
    let after_foreign = server.manager.metrics();
    let moved = |a: &str, b: &str| -> Vec<String> {
        rejected(b)
            .into_iter()
            .filter(|line| !rejected(a).contains(line))
            .collect()
    };
    // One line moved each time, and it is the same line (by name).
    let by_unknown = moved(&before, &after_unknown);
    let by_foreign = moved(&after_unknown, &after_foreign);
    assert_eq!(by_unknown.len(), 1, "{by_unknown:?}");
    assert_eq!(by_foreign.len(), 1, "{by_foreign:?}");
    let name = |line: &str| line.split(' ').next().unwrap().to_string();
    assert_eq!(name(&by_unknown[0]), name(&by_foreign[0]));
    assert!(!after_foreign.contains("sessionreg_lookups_rejected_total{cause=\"principal\"}"));
    // The operator's own snapshot still tells them apart.
    assert_eq!(server.manager.stats().misses(Miss::Principal), 1);
    assert_eq!(ada.delete(&id).await.status, StatusCode::OK);
}

/// With two `Authorization` headers a proxy that
/// reads the last and a node that reads the first authenticate different
/// principals; two `MCP-Protocol-Version` headers are as ambiguous. Both
/// get 400, as two session ids already do, and create nothing.
#[tokio::test]
async fn duplicated_authorization_and_version_headers_get_400() {
    let server = bearer_server().await;
    let twice = |name: &str, a: &str, b: &str| {
        let mut request = Client::new(&server.url)
            .request(Method::POST)
            .header("content-type", "application/json")
            .header("accept", http_support::ACCEPT_BOTH);
        if name != "authorization" {
            request = request.header("authorization", "Bearer token-ada");
        }
        request
            .header(name, a)
            .header(name, b)
            .body(Full::new(bytes::Bytes::from(
                initialize_body("c").to_string(),
            )))
            .unwrap()
    };
    let client = Client::new(&server.url);
    for request in [
        twice("authorization", "Bearer token-ada", "Bearer token-bob"),
        twice("authorization", "Bearer token-ada", "Bearer token-ada"),
        twice("mcp-protocol-version", "2025-11-25", "2025-06-18"),
    ] {
        let answer = client.send(request).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{answer:?}");
        assert!(answer.session_id().is_none());
    }
    assert_eq!(server.created(), 0);
}

/// A principal that a tower middleware put into the
/// request's extensions (no authenticator configured) bound nothing: another
/// principal's requests found the session. The binding holds whenever a
/// principal is present, however it got there.
#[tokio::test]
async fn a_principal_from_middleware_binds_the_session() {
    let (manager, closes, _) = http_support::test_manager(|b| b);
    // The middleware: `x-user` names the principal.
    let service = {
        let manager = manager.clone();
        hyper::service::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
            let manager = manager.clone();
            async move {
                let user = request
                    .headers()
                    .get("x-user")
                    .and_then(|v| v.to_str().ok())
                    .map(Principal::new);
                if let Some(user) = user {
                    request.extensions_mut().insert(user);
                }
                Ok::<_, std::convert::Infallible>(manager.handle(request).await)
            }
        })
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(sessionreg::http::serve(
        listener,
        manager.clone(),
        service,
        async move {
            let _ = stopped.await;
        },
        std::time::Duration::from_secs(5),
    ));
    let ada = Client::new(&url).with_header("x-user", "ada");
    let bob = Client::new(&url).with_header("x-user", "bob");
    let nobody = Client::new(&url);
    let id = ada.initialize().await;
    for stranger in [&bob, &nobody] {
        let stolen = stranger.call(&id, "echo", json!({})).await;
        assert_eq!(stolen.status, StatusCode::NOT_FOUND);
        assert_eq!(stranger.delete(&id).await.status, StatusCode::NOT_FOUND);
    }
    assert_eq!(closes.count(), 0);
    assert_eq!(
        ada.call(&id, "echo", json!({})).await.status,
        StatusCode::OK
    );
    assert_eq!(ada.delete(&id).await.status, StatusCode::OK);
    let _ = stop.send(());
    served.await.unwrap().unwrap();
}
