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
use sessionreg::http::{BearerTokens, Principal, Refusal};
use sessionreg::{Reason, Rejection};

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
                Some("mallory") => Err(Refusal::Forbidden),
                Some(user) => Ok(Principal::new(user)),
                None => Err(Refusal::bearer(false)),
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

    let before = server.manager.stats().rejected(Rejection::Principal);
    let stolen = bob.call(&id, "echo", json!({})).await;
    assert_eq!(stolen.status, StatusCode::NOT_FOUND);
    // Exactly the answer to an unknown id: no oracle.
    assert_eq!(stolen.body, unknown_answer.body);
    assert_eq!(
        bob.open_stream(&id, None).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(bob.delete(&id).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        server.manager.stats().rejected(Rejection::Principal),
        before + 3
    );
    let metrics = server.manager.metrics();
    assert!(
        metrics.lines().any(|l| l
            == format!(
                "sessionreg_lookups_rejected_total{{cause=\"principal\"}} {}",
                before + 3
            )),
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
    let server = Server::start_with(|b| b.authenticator(tokens()).stateless(true)).await;
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
