//! The OAuth resource server (feature `oauth`) over real sockets: an
//! authorization server in the test (`Authority`: RFC 8414 / OpenID
//! metadata, a JWKS it can rotate, an introspection endpoint; it can go
//! down), tokens signed here with the keys of `tests/oauth_keys/`, and the
//! manager served by `sessionreg::http::serve`.
//!
//! What each test shows is in its name; the metadata document's content,
//! the 401/403 challenges, every way a token is refused, key rotation and
//! its bound, an authorization server that is down, the cache of accepted
//! tokens, introspection, and the principal and scopes the application
//! sees.
#![cfg(feature = "oauth")]

mod http_support;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Full};
use http_support::{initialize_body, with_meta, Answer, Client, Server};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_test_client::SseStream;
use serde_json::{json, Value};
use sessionreg::http::oauth::{OAuthConfigError, ResourceServer};
use sessionreg::http::BearerTokens;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::task::JoinHandle;

/// The resource the tokens are for (their `aud`).
const RESOURCE: &str = "https://mcp.example.com/mcp";
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

// --------------------------------------------------------------- keys

/// A signing key of the authority: its private half, and its JWK.
struct Signer {
    kid: String,
    alg: Algorithm,
    key: EncodingKey,
    jwk: Value,
}

fn signer(kid: &str, file: &str, alg: Algorithm) -> Signer {
    let pem = std::fs::read(format!(
        "{}/tests/oauth_keys/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("a test key");
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&pem),
        _ => EncodingKey::from_rsa_pem(&pem),
    }
    .expect("a PEM key");
    let mut jwk = Jwk::from_encoding_key(&key, alg).expect("a public JWK");
    jwk.common.key_id = Some(kid.to_string());
    let mut jwk = serde_json::to_value(&jwk).unwrap();
    jwk["use"] = json!("sig");
    Signer {
        kid: kid.to_string(),
        alg,
        key,
        jwk,
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Claims a good token for `issuer` has: `sub`, `aud` = the resource,
/// `exp` in an hour, the scopes given.
fn claims(issuer: &str, sub: &str, scope: &str) -> Value {
    static JTI: AtomicUsize = AtomicUsize::new(0);
    json!({
        "iss": issuer, "sub": sub, "aud": RESOURCE, "scope": scope,
        "iat": now(), "exp": now() + 3600,
        // Every token its own bytes, so none is answered from the cache of
        // accepted tokens unless a test means it to be.
        "jti": JTI.fetch_add(1, Ordering::Relaxed),
    })
}

fn sign(signer: &Signer, claims: &Value) -> String {
    let mut header = Header::new(signer.alg);
    header.kid = Some(signer.kid.clone());
    jsonwebtoken::encode(&header, claims, &signer.key).unwrap()
}

/// A token whose header's `typ` is `typ` (`None`: no `typ` at all).
fn sign_typed(signer: &Signer, typ: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(signer.alg);
    header.kid = Some(signer.kid.clone());
    header.typ = typ.map(str::to_string);
    jsonwebtoken::encode(&header, claims, &signer.key).unwrap()
}

/// A token with the header and signature given, as an attacker makes one.
fn forged(header: &Value, claims: &Value, signature: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    format!(
        "{}.{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes()),
        b64(signature)
    )
}

// --------------------------------------------------------------- the authority

/// The test's authorization server, on 127.0.0.1:0: OpenID metadata only
/// (the RFC 8414 URL answers 404, as Keycloak's and oauth2-mock-server's
/// do), its JWKS, and an introspection endpoint for the opaque tokens it
/// knows. Every answer closes its connection, so `stop` leaves nothing to
/// reach it by.
struct Authority {
    issuer: String,
    state: Arc<AuthorityState>,
    task: JoinHandle<()>,
}

#[derive(Default)]
struct AuthorityState {
    issuer: Mutex<String>,
    keys: Mutex<Vec<Value>>,
    jwks_fetches: AtomicUsize,
    /// GETs of the OpenID metadata answered 200.
    metadata_fetches: AtomicUsize,
    /// GETs of either well-known metadata path, whatever the answer.
    metadata_gets: AtomicUsize,
    /// The metadata answers 503 (its host stays up).
    metadata_down: AtomicBool,
    /// The JWKS answers 503.
    jwks_down: AtomicBool,
    introspections: AtomicUsize,
    /// Opaque token → its introspection answer.
    opaque: Mutex<HashMap<String, Value>>,
}

/// The credentials the resource server introspects with.
const CLIENT_ID: &str = "mcp-server";
const CLIENT_SECRET: &str = "s3cret";

impl Authority {
    async fn start(keys: &[&Signer]) -> Authority {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(AuthorityState::default());
        *state.issuer.lock().unwrap() = issuer.clone();
        *state.keys.lock().unwrap() = keys.iter().map(|k| k.jwk.clone()).collect();
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, std::convert::Infallible>(state.answer(request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Authority {
            issuer,
            state,
            task,
        }
    }

    /// Publishes these keys from now on.
    fn publish(&self, keys: &[&Signer]) {
        *self.state.keys.lock().unwrap() = keys.iter().map(|k| k.jwk.clone()).collect();
    }

    fn jwks_fetches(&self) -> usize {
        self.state.jwks_fetches.load(Ordering::SeqCst)
    }

    /// Goes down: the port is closed (connections are refused).
    fn stop(&self) {
        self.task.abort();
    }

    fn claims(&self, sub: &str, scope: &str) -> Value {
        claims(&self.issuer, sub, scope)
    }

    /// A resource server for this authority, as the tests configure it.
    fn resource_server(&self) -> sessionreg::http::oauth::ResourceServerBuilder {
        ResourceServer::builder(&self.issuer, RESOURCE)
    }
}

impl AuthorityState {
    async fn answer(&self, request: http::Request<Incoming>) -> http::Response<Full<Bytes>> {
        let issuer = self.issuer.lock().unwrap().clone();
        let down = |flag: &AtomicBool| flag.load(Ordering::SeqCst);
        let metadata = matches!(
            request.uri().path(),
            "/.well-known/openid-configuration" | "/.well-known/oauth-authorization-server"
        );
        if metadata {
            self.metadata_gets.fetch_add(1, Ordering::SeqCst);
        }
        let (status, body) = match (request.method(), request.uri().path()) {
            (&Method::GET, _) if metadata && down(&self.metadata_down) => {
                (StatusCode::SERVICE_UNAVAILABLE, json!({ "error": "down" }))
            }
            (&Method::GET, "/jwks") if down(&self.jwks_down) => {
                self.jwks_fetches.fetch_add(1, Ordering::SeqCst);
                (StatusCode::SERVICE_UNAVAILABLE, json!({ "error": "down" }))
            }
            (&Method::GET, "/.well-known/openid-configuration") => {
                self.metadata_fetches.fetch_add(1, Ordering::SeqCst);
                (
                    StatusCode::OK,
                    json!({
                        "issuer": issuer,
                        "jwks_uri": format!("{issuer}/jwks"),
                        "introspection_endpoint": format!("{issuer}/introspect"),
                        "response_types_supported": ["code"],
                    }),
                )
            }
            (&Method::GET, "/jwks") => {
                self.jwks_fetches.fetch_add(1, Ordering::SeqCst);
                (
                    StatusCode::OK,
                    json!({ "keys": *self.keys.lock().unwrap() }),
                )
            }
            (&Method::POST, "/introspect") => {
                self.introspections.fetch_add(1, Ordering::SeqCst);
                use base64::Engine as _;
                let expected = format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD
                        .encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
                );
                let authorized = request
                    .headers()
                    .get("authorization")
                    .is_some_and(|v| v == expected.as_str());
                let form = request.into_body().collect().await.unwrap().to_bytes();
                let form = String::from_utf8(form.to_vec()).unwrap();
                let token = form
                    .split('&')
                    .find_map(|pair| pair.strip_prefix("token="))
                    .unwrap_or("")
                    .to_string();
                if !authorized {
                    (
                        StatusCode::UNAUTHORIZED,
                        json!({ "error": "invalid_client" }),
                    )
                } else {
                    let answer = self.opaque.lock().unwrap().get(&token).cloned();
                    (StatusCode::OK, answer.unwrap_or(json!({ "active": false })))
                }
            }
            _ => (StatusCode::NOT_FOUND, json!({ "error": "not found" })),
        };
        let mut response = http::Response::new(Full::new(Bytes::from(body.to_string())));
        *response.status_mut() = status;
        response
            .headers_mut()
            .insert("content-type", "application/json".parse().unwrap());
        response
            .headers_mut()
            .insert("connection", "close".parse().unwrap());
        response
    }
}

// --------------------------------------------------------------- helpers

fn rsa_a() -> Signer {
    signer("rsa-a", "rsa-a.pem", Algorithm::RS256)
}

/// An authority publishing rsa-a, and a server requiring `mcp:tools`.
async fn setup() -> (Authority, Signer, Server) {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let oauth = authority
        .resource_server()
        .required_scope("mcp:tools")
        .build()
        .unwrap();
    let server = Server::start_with(|b| b.resource_server(oauth)).await;
    (authority, key, server)
}

async fn initialize_with(server: &Server, token: Option<&str>) -> Answer {
    let client = match token {
        Some(token) => Client::with_bearer(&server.url, token),
        None => Client::new(&server.url),
    };
    client.post(None, &initialize_body("client")).await
}

/// The whoami tool's result, at 2026-07-28 (no session).
async fn whoami_modern(server: &Server, token: &str) -> Answer {
    let client = Client::with_bearer(&server.url, token);
    let body = with_meta(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": { "name": "whoami", "arguments": {} } }));
    client
        .post_modern(
            &body,
            &[("mcp-method", "tools/call"), ("mcp-name", "whoami")],
        )
        .await
}

fn challenge(answer: &Answer) -> &str {
    answer
        .headers
        .get("www-authenticate")
        .expect("a challenge")
        .to_str()
        .unwrap()
}

/// A GET of `path` on the server's address.
async fn get_path(server: &Server, method: Method, path: &str) -> Answer {
    let client = Client::new(&format!("http://{}{path}", server.addr));
    client
        .send(
            client
                .request(method)
                .header("origin", "https://app.example")
                .body(Full::default())
                .unwrap(),
        )
        .await
}

fn assert_no_500(server: &Server) {
    let http = server.http();
    assert_eq!(http.responses(500), 0, "{http:?}");
}

// --------------------------------------------------------------- the tests

/// RFC 9728 §3: the document at the endpoint's well-known path (and the
/// root one), naming the resource, the issuer, the scopes and how a token
/// is sent; public (no token, any origin), `GET` only.
#[tokio::test]
async fn the_metadata_document_names_the_resource_its_issuer_and_scopes() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let oauth = authority
        .resource_server()
        .required_scope("mcp:tools")
        .supported_scope("files:read")
        .resource_name("test server")
        .build()
        .unwrap();
    assert_eq!(
        oauth.metadata_url(),
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(
        oauth.metadata_paths(),
        [METADATA_PATH, "/.well-known/oauth-protected-resource"]
    );
    let server = Server::start_with(|b| b.resource_server(oauth.clone())).await;
    for path in oauth.metadata_paths() {
        let answer = get_path(&server, Method::GET, path).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert_eq!(answer.headers["content-type"], "application/json");
        assert_eq!(answer.headers["access-control-allow-origin"], "*");
        assert_eq!(
            answer.json(),
            json!({
                "resource": RESOURCE,
                "authorization_servers": [authority.issuer],
                "scopes_supported": ["mcp:tools", "files:read"],
                "bearer_methods_supported": ["header"],
                "resource_name": "test server",
            })
        );
        assert_eq!(answer.body, oauth.metadata_document());
    }
    let post = get_path(&server, Method::POST, METADATA_PATH).await;
    assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
    let preflight = get_path(&server, Method::OPTIONS, METADATA_PATH).await;
    assert_eq!(preflight.status, StatusCode::NO_CONTENT);
    assert_eq!(preflight.headers["access-control-allow-origin"], "*");
    // Another well-known path is not the manager's to answer.
    let other = get_path(
        &server,
        Method::GET,
        "/.well-known/oauth-protected-resource/other",
    )
    .await;
    assert_ne!(other.status, StatusCode::OK);
    // Nothing was fetched from the authority to publish it.
    assert_eq!(authority.jwks_fetches(), 0);
}

/// The MCP authorization page: a request without a token gets 401 with
/// `resource_metadata` and the required scope; GET and DELETE too; nothing
/// is created.
#[tokio::test]
async fn a_request_without_a_token_gets_401_naming_the_metadata_and_scope() {
    let (_authority, _key, server) = setup().await;
    let expected = r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#;
    let answer = initialize_with(&server, None).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(challenge(&answer), expected);
    let basic = Client::new(&server.url).with_header("authorization", "Basic YWRhOng=");
    let answer = basic.post(None, &initialize_body("client")).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(challenge(&answer), expected);
    let client = Client::new(&server.url);
    let id = "0123456789abcdef0123456789abcdef0123456789abcdef";
    assert_eq!(client.delete(id).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        client.open_stream(id, None).await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(server.created(), 0);
}

/// A valid token serves both eras; the application sees the principal
/// (issuer and subject) and the token's scopes.
#[tokio::test]
async fn a_valid_token_serves_both_eras_as_its_issuer_and_subject_with_its_scopes() {
    let (authority, key, server) = setup().await;
    let token = sign(&key, &authority.claims("ada", "mcp:tools files:read"));
    let client = Client::with_bearer(&server.url, &token);
    let id = client.initialize().await;
    let whoami = client.call(&id, "whoami", json!({})).await;
    assert_eq!(whoami.status, StatusCode::OK);
    let principal = format!("{}#ada", authority.issuer);
    assert_eq!(whoami.json()["result"]["principal"], principal.as_str());
    assert_eq!(whoami.json()["result"]["scopes"], "mcp:tools files:read");
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);

    let modern = whoami_modern(&server, &token).await;
    assert_eq!(modern.status, StatusCode::OK, "{:?}", modern.body);
    assert_eq!(modern.json()["result"]["principal"], principal.as_str());
    assert_eq!(modern.json()["result"]["scopes"], "mcp:tools files:read");
    // `aud` as an array holding the resource, and `scp` as a list (Entra
    // ID's form) are accepted too.
    let mut claims = authority.claims("ada", "");
    claims["aud"] = json!(["https://other.example", RESOURCE]);
    claims.as_object_mut().unwrap().remove("scope");
    claims["scp"] = json!(["mcp:tools"]);
    let answer = whoami_modern(&server, &sign(&key, &claims)).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    assert_eq!(answer.json()["result"]["scopes"], "mcp:tools");
    // The keys were fetched once, through the OpenID metadata (the RFC
    // 8414 URL answered 404 first).
    assert_eq!(authority.jwks_fetches(), 1);
    assert_eq!(authority.state.metadata_fetches.load(Ordering::SeqCst), 1);
}

/// Sessions are bound to the token's subject: another subject's token
/// finds nothing with the id; a new token of the same subject does.
#[tokio::test]
async fn a_session_belongs_to_the_tokens_subject_not_to_the_token() {
    let (authority, key, server) = setup().await;
    let ada = Client::with_bearer(
        &server.url,
        &sign(&key, &authority.claims("ada", "mcp:tools")),
    );
    let id = ada.initialize().await;
    let bob = Client::with_bearer(
        &server.url,
        &sign(&key, &authority.claims("bob", "mcp:tools")),
    );
    assert_eq!(
        bob.call(&id, "echo", json!({})).await.status,
        StatusCode::NOT_FOUND
    );
    let ada_again = Client::with_bearer(
        &server.url,
        &sign(&key, &authority.claims("ada", "mcp:tools")),
    );
    assert_eq!(
        ada_again.call(&id, "echo", json!({})).await.status,
        StatusCode::OK
    );
    assert_eq!(ada_again.delete(&id).await.status, StatusCode::OK);
}

/// Every way a JWT is not valid here gets 401 `invalid_token` (never a
/// session, never a 500): another audience, another issuer, expired,
/// `nbf` to come, no `sub`, a key the authority never published, `alg:
/// none`, HMAC "signed" with the public key, a signature that does not
/// match, not a JWT at all.
#[tokio::test]
async fn tokens_that_are_not_valid_here_get_401_invalid_token() {
    let (authority, key, server) = setup().await;
    let good = authority.claims("ada", "mcp:tools");
    let with = |member: &str, value: Value| {
        let mut claims = good.clone();
        claims[member] = value;
        claims
    };
    let other = signer("rsa-a", "rsa-other.pem", Algorithm::RS256);
    let public_pem = std::fs::read(format!(
        "{}/tests/oauth_keys/rsa-a.pub.pem",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let hmac_with_public_key = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("rsa-a".into());
        jsonwebtoken::encode(&header, &good, &EncodingKey::from_secret(&public_pem)).unwrap()
    };
    let mut no_sub = good.clone();
    no_sub.as_object_mut().unwrap().remove("sub");
    let valid = sign(&key, &good);
    let (head, rest) = valid.split_once('.').unwrap();
    let (_, signature) = rest.split_once('.').unwrap();
    let tampered = format!("{head}.{}.{signature}", {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(with("sub", json!("root")).to_string())
    });
    let cases: Vec<(&str, String)> = vec![
        (
            "another audience",
            sign(&key, &with("aud", json!("https://other.example/mcp"))),
        ),
        (
            "an audience list without it",
            sign(&key, &with("aud", json!(["https://a", "https://b"]))),
        ),
        (
            "another issuer",
            sign(&key, &with("iss", json!("https://evil.example"))),
        ),
        ("expired", sign(&key, &with("exp", json!(now() - 120)))),
        (
            "nbf in the future",
            sign(&key, &with("nbf", json!(now() + 600))),
        ),
        (
            "nbf as a string",
            sign(&key, &with("nbf", json!("99999999999"))),
        ),
        ("no sub", sign(&key, &no_sub)),
        ("another key, same kid", sign(&other, &good)),
        (
            "alg none",
            forged(
                &json!({ "alg": "none", "kid": "rsa-a", "typ": "JWT" }),
                &good,
                b"",
            ),
        ),
        ("HMAC with the public key as secret", hmac_with_public_key),
        ("claims changed under the signature", tampered),
        ("not a JWT", "opaque-token-nobody-knows".to_string()),
    ];
    for (what, token) in cases {
        let answer = initialize_with(&server, Some(&token)).await;
        assert_eq!(
            answer.status,
            StatusCode::UNAUTHORIZED,
            "{what}: {:?}",
            answer.body
        );
        assert!(
            challenge(&answer).starts_with(r#"Bearer error="invalid_token", resource_metadata=""#),
            "{what}: {}",
            challenge(&answer)
        );
    }
    // The same claims, signed right, pass: the refusals were the tokens'.
    assert_eq!(
        initialize_with(&server, Some(&valid)).await.status,
        StatusCode::OK
    );
    assert_eq!(server.created(), 1);
    assert_no_500(&server);
}

/// `exp` and `nbf` have a small leeway (30 s by default): a token a few
/// seconds past its `exp`, or a few before its `nbf`, still passes.
#[tokio::test]
async fn exp_and_nbf_have_a_small_leeway() {
    let (authority, key, server) = setup().await;
    let mut late = authority.claims("ada", "mcp:tools");
    late["exp"] = json!(now() - 5);
    let mut early = authority.claims("ada", "mcp:tools");
    early["nbf"] = json!(now() + 5);
    for claims in [late, early] {
        let answer = whoami_modern(&server, &sign(&key, &claims)).await;
        assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    }
}

/// A valid token without a required scope: 403 `insufficient_scope`
/// naming every required scope and the metadata.
#[tokio::test]
async fn a_token_without_a_required_scope_gets_403_insufficient_scope() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let oauth = authority
        .resource_server()
        .required_scope("mcp:tools")
        .required_scope("files:read")
        .build()
        .unwrap();
    let server = Server::start_with(|b| b.resource_server(oauth)).await;
    for scope in ["", "mcp:tools", "files:read mcp", "MCP:TOOLS files:read"] {
        let answer =
            initialize_with(&server, Some(&sign(&key, &authority.claims("ada", scope)))).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{scope:?}");
        assert_eq!(
            challenge(&answer),
            r#"Bearer error="insufficient_scope", scope="mcp:tools files:read", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="the access token lacks a scope every request needs""#
        );
    }
    let answer = initialize_with(
        &server,
        Some(&sign(
            &key,
            &authority.claims("ada", "files:read other mcp:tools"),
        )),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(server.created(), 1);
}

/// The 403 a call without its tool's scope gets (`echo` needs `files:write`
/// here, besides the required `mcp:tools`).
const ECHO_STEP_UP: &str = r#"Bearer error="insufficient_scope", scope="mcp:tools files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="the access token lacks a scope tools/call of echo needs""#;

/// `echo` at 2026-07-28 with `token`.
async fn echo_modern(server: &Server, token: &str) -> Answer {
    let client = Client::with_bearer(&server.url, token);
    let body = with_meta(json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                 "params": { "name": "echo", "arguments": {} } }));
    client
        .post_modern(&body, &[("mcp-method", "tools/call"), ("mcp-name", "echo")])
        .await
}

/// A tool's own scope: a call without it gets 403 `insufficient_scope`
/// naming every scope the call needs (the required one too) and the
/// metadata, in both eras, with the request's id; other tools serve; the
/// 401 still names only the required scope; the metadata lists both; a
/// token with both scopes is served; and a legacy session goes on with the
/// step-up token of the same subject.
#[tokio::test]
async fn a_tools_own_scope_is_asked_for_with_a_step_up_challenge_in_both_eras() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let oauth = authority
        .resource_server()
        .required_scope("mcp:tools")
        .tool_scope("echo", "files:write")
        .build()
        .unwrap();
    let server = Server::start_with(|b| b.resource_server(oauth.clone())).await;
    let read_only = sign(&key, &authority.claims("ada", "mcp:tools"));
    let both = sign(&key, &authority.claims("ada", "mcp:tools files:write"));

    // 2026-07-28.
    let refused = echo_modern(&server, &read_only).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{:?}", refused.body);
    assert_eq!(challenge(&refused), ECHO_STEP_UP);
    assert_eq!(refused.json()["id"], 7);
    assert_eq!(
        whoami_modern(&server, &read_only).await.status,
        StatusCode::OK
    );
    let served = echo_modern(&server, &both).await;
    assert_eq!(served.status, StatusCode::OK, "{:?}", served.body);

    // A session: refused without the scope, and usable after the step-up.
    let client = Client::with_bearer(&server.url, &read_only);
    let id = client.initialize().await;
    let refused = client.call(&id, "echo", json!({})).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{:?}", refused.body);
    assert_eq!(challenge(&refused), ECHO_STEP_UP);
    assert!(refused.json()["id"].is_number(), "{:?}", refused.body);
    assert_eq!(
        client.call(&id, "whoami", json!({})).await.status,
        StatusCode::OK
    );
    let stepped_up = Client::with_bearer(&server.url, &both);
    let served = stepped_up.call(&id, "echo", json!({})).await;
    assert_eq!(served.status, StatusCode::OK, "{:?}", served.body);
    assert_eq!(stepped_up.delete(&id).await.status, StatusCode::OK);

    // The 401 names the required scope only; the metadata lists both.
    let answer = initialize_with(&server, None).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&answer),
        r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#
    );
    let metadata = get_path(&server, Method::GET, METADATA_PATH).await;
    assert_eq!(
        metadata.json()["scopes_supported"],
        json!(["mcp:tools", "files:write"])
    );
    assert_eq!(oauth.stats().insufficient_scope, 2);
    assert_no_500(&server);
}

/// The names `tools/list` answers with `token`, in a session.
async fn listed_tools(server: &Server, token: &str) -> Vec<String> {
    let client = Client::with_bearer(&server.url, token);
    let id = client.initialize().await;
    let body = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let answer = client.post(Some(&id), &body).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    answer.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect()
}

/// With `hide_tools_without_scope`, `tools/list` leaves out the tools the
/// token cannot call; off (the default), it lists them all.
#[tokio::test]
async fn tools_list_leaves_out_tools_the_token_cannot_call_only_when_asked() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let builder = || {
        authority
            .resource_server()
            .required_scope("mcp:tools")
            .tool_scope("echo", "files:write")
    };
    let read_only = sign(&key, &authority.claims("ada", "mcp:tools"));
    let both = sign(&key, &authority.claims("ada", "mcp:tools files:write"));
    let hiding = builder().hide_tools_without_scope(true).build().unwrap();
    let server = Server::start_with(|b| b.resource_server(hiding)).await;
    assert_eq!(listed_tools(&server, &read_only).await, ["whoami", "sleep"]);
    // At 2026-07-28 too.
    let body = with_meta(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" }));
    let modern = Client::with_bearer(&server.url, &read_only)
        .post_modern(&body, &[("mcp-method", "tools/list")])
        .await;
    assert_eq!(modern.status, StatusCode::OK, "{:?}", modern.body);
    assert_eq!(
        modern.json()["result"]["tools"],
        json!([{ "name": "whoami" }, { "name": "sleep" }])
    );
    assert_eq!(
        listed_tools(&server, &both).await,
        ["echo", "whoami", "sleep"]
    );
    let default = builder().build().unwrap();
    let server = Server::start_with(|b| b.resource_server(default)).await;
    assert_eq!(
        listed_tools(&server, &read_only).await,
        ["echo", "whoami", "sleep"]
    );
}

/// Key rotation: a token of a key published after the set was read makes
/// the server fetch the set again, once; the new key then serves without
/// fetching. A flood of tokens naming keys nobody published costs the
/// authority at most one fetch per minimum refresh interval, and every
/// one of them a 401; known keys are served throughout.
#[tokio::test]
async fn a_new_key_is_fetched_once_and_a_flood_of_unknown_kids_is_bounded() {
    const INTERVAL: Duration = Duration::from_secs(1);
    let a = rsa_a();
    let b = signer("rsa-b", "rsa-b.pem", Algorithm::RS256);
    let ec = signer("ec-a", "ec-a.pem", Algorithm::ES256);
    let authority = Authority::start(&[&a]).await;
    let oauth = authority
        .resource_server()
        .min_refresh_interval(INTERVAL)
        .build()
        .unwrap();
    let server = Server::start_with(|builder| builder.resource_server(oauth.clone())).await;
    let ok = |answer: &Answer| answer.status == StatusCode::OK;
    assert!(ok(&whoami_modern(
        &server,
        &sign(&a, &authority.claims("ada", ""))
    )
    .await));
    assert_eq!(authority.jwks_fetches(), 1);

    // Rotation: b and an EC key published; a's tokens still pass.
    authority.publish(&[&a, &b, &ec]);
    tokio::time::sleep(INTERVAL).await;
    assert!(ok(&whoami_modern(
        &server,
        &sign(&b, &authority.claims("ada", ""))
    )
    .await));
    assert_eq!(authority.jwks_fetches(), 2, "the new kid made one fetch");
    for signer in [&a, &b, &ec, &b, &ec] {
        let answer = whoami_modern(&server, &sign(signer, &authority.claims("ada", ""))).await;
        assert!(ok(&answer), "{}: {:?}", signer.kid, answer.body);
    }
    assert_eq!(authority.jwks_fetches(), 2, "known keys fetch nothing");

    // The flood: 300 tokens, each naming a key nobody published, 16 at a
    // time, with a known key's token among them.
    let started = Instant::now();
    let refused = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for worker in 0..16 {
        let url = server.url.clone();
        let refused = Arc::clone(&refused);
        let issuer = authority.issuer.clone();
        let fake = signer("x", "rsa-other.pem", Algorithm::RS256);
        tasks.push(tokio::spawn(async move {
            for i in 0..300 / 16 {
                let mut header = Header::new(Algorithm::RS256);
                header.kid = Some(format!("made-up-{worker}-{i}"));
                let token =
                    jsonwebtoken::encode(&header, &claims(&issuer, "eve", ""), &fake.key).unwrap();
                let answer = Client::with_bearer(&url, &token)
                    .post(None, &initialize_body("client"))
                    .await;
                if answer.status == StatusCode::UNAUTHORIZED {
                    refused.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    let known = whoami_modern(&server, &sign(&a, &authority.claims("ada", ""))).await;
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed = started.elapsed();
    assert!(ok(&known), "a known key's token during the flood");
    assert_eq!(refused.load(Ordering::SeqCst), 16 * (300 / 16));
    // The bound: one fetch per interval at most (plus the one that may
    // start at the flood's first request).
    let flood_fetches = authority.jwks_fetches() - 2;
    let allowed = 1 + (elapsed.as_secs_f64() / INTERVAL.as_secs_f64()).floor() as usize;
    assert!(
        flood_fetches <= allowed,
        "{flood_fetches} fetches in {elapsed:?} (at most {allowed})"
    );
    assert!(oauth.stats().refreshes >= 2);
    // The manager's metrics carry the resource server's.
    let metrics = server.manager.metrics();
    assert!(
        metrics.contains(&format!(
            "sessionreg_oauth_tokens_total{{outcome=\"invalid\"}} {}",
            oauth.stats().invalid
        )),
        "{metrics}"
    );
    assert!(metrics.contains("sessionreg_oauth_keys 3"), "{metrics}");
    assert_eq!(server.created(), 0);
    assert_no_500(&server);
}

/// An authorization server that is down: tokens of known keys keep
/// working (the set stays in force while it is younger than
/// `keys_max_age`, refreshes failing; past it, see
/// `keys_past_their_max_age_are_not_trusted_while_the_jwks_fails`); a token
/// of an unknown key gets 401, never a 500.
#[tokio::test]
async fn an_authorization_server_that_is_down_costs_known_keys_nothing() {
    let a = rsa_a();
    let b = signer("rsa-b", "rsa-b.pem", Algorithm::RS256);
    let authority = Authority::start(&[&a]).await;
    let oauth = authority
        .resource_server()
        .min_refresh_interval(Duration::ZERO)
        .fetch_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    assert_eq!(oauth.refresh().await, Ok(1));
    let server = Server::start_with(|builder| builder.resource_server(oauth.clone())).await;
    authority.stop();
    authority.publish(&[&a, &b]);
    for round in 0..5 {
        let answer = whoami_modern(&server, &sign(&a, &authority.claims("ada", ""))).await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "round {round}: {:?}",
            answer.body
        );
        let unknown = initialize_with(&server, Some(&sign(&b, &authority.claims("ada", "")))).await;
        assert_eq!(unknown.status, StatusCode::UNAUTHORIZED, "round {round}");
        assert!(challenge(&unknown).contains(r#"error="invalid_token""#));
    }
    // Each unknown key tried a refresh, and each failed.
    assert!(http_support::eventually(|| oauth.stats().refresh_failures >= 5).await);
    assert_eq!(oauth.stats().keys, 1);
    assert_no_500(&server);
}

/// The cache of accepted tokens: a token's next requests are answered
/// from it, but never past the token's `exp` (no leeway there: past it the
/// token is verified again, and refused).
#[tokio::test]
async fn cached_tokens_are_served_until_their_exp_and_not_after() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let oauth = authority
        .resource_server()
        .leeway(Duration::ZERO)
        .build()
        .unwrap();
    let server = Server::start_with(|b| b.resource_server(oauth.clone())).await;
    let mut claims = authority.claims("ada", "");
    claims["exp"] = json!(now() + 2);
    let token = sign(&key, &claims);
    for _ in 0..3 {
        assert_eq!(whoami_modern(&server, &token).await.status, StatusCode::OK);
    }
    let stats = oauth.stats();
    assert_eq!((stats.accepted, stats.cached), (3, 2));
    tokio::time::sleep(Duration::from_millis(3100)).await;
    let late = whoami_modern(&server, &token).await;
    assert_eq!(late.status, StatusCode::UNAUTHORIZED);
    assert_eq!(oauth.stats().cached, 2);
}

/// Opaque tokens through RFC 7662 introspection, with the server's client
/// credentials: an active token for this resource passes (and is not asked
/// about again within the TTL); an inactive one, or one for another
/// audience, gets 401.
#[tokio::test]
async fn opaque_tokens_are_introspected() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let active = json!({
        "active": true, "sub": "svc-1", "aud": RESOURCE, "iss": authority.issuer,
        "scope": "mcp:tools", "exp": now() + 600,
    });
    let mut other_audience = active.clone();
    other_audience["aud"] = json!("https://elsewhere.example");
    authority.state.opaque.lock().unwrap().extend([
        ("opaque-good".to_string(), active),
        ("opaque-elsewhere".to_string(), other_audience),
    ]);
    let oauth = authority
        .resource_server()
        .required_scope("mcp:tools")
        .introspection(CLIENT_ID, CLIENT_SECRET)
        .build()
        .unwrap();
    let server = Server::start_with(|b| b.resource_server(oauth)).await;
    for _ in 0..3 {
        let answer = whoami_modern(&server, "opaque-good").await;
        assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
        assert_eq!(
            answer.json()["result"]["principal"],
            format!("{}#svc-1", authority.issuer)
        );
    }
    assert_eq!(authority.state.introspections.load(Ordering::SeqCst), 1);
    for token in ["opaque-elsewhere", "opaque-unknown"] {
        assert_eq!(
            initialize_with(&server, Some(token)).await.status,
            StatusCode::UNAUTHORIZED,
            "{token}"
        );
    }
    // Without credentials, opaque tokens are not asked about.
    let plain =
        Server::start_with(|b| b.resource_server(authority.resource_server().build().unwrap()))
            .await;
    let before = authority.state.introspections.load(Ordering::SeqCst);
    assert_eq!(
        initialize_with(&plain, Some("opaque-good")).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        authority.state.introspections.load(Ordering::SeqCst),
        before
    );
}

/// Static tokens and the resource server side by side: a static token's
/// principal is its name; any other token goes to the resource server,
/// whose challenge the client gets.
#[tokio::test]
async fn static_tokens_are_asked_first() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let oauth = authority.resource_server().build().unwrap();
    let statics = BearerTokens::new([("ops".to_string(), "static-ops-token".to_string())]).unwrap();
    let server = Server::start_with(|b| b.authenticator(statics).resource_server(oauth)).await;
    let ops = whoami_modern(&server, "static-ops-token").await;
    assert_eq!(ops.status, StatusCode::OK);
    assert_eq!(ops.json()["result"]["principal"], "ops");
    assert_eq!(ops.json()["result"]["scopes"], Value::Null);
    let jwt = whoami_modern(&server, &sign(&key, &authority.claims("ada", ""))).await;
    assert_eq!(
        jwt.json()["result"]["principal"],
        format!("{}#ada", authority.issuer)
    );
    let missing = initialize_with(&server, None).await;
    assert!(challenge(&missing).starts_with("Bearer resource_metadata="));
}

// --------------------------------------------------------------- streams end with their tokens

/// Opens a 2026-07-28 listen stream (list changes of tools) with `token`:
/// the stream, once its acknowledgement is read.
async fn listen_with(server: &Server, token: &str, id: Value) -> SseStream {
    let client = Client::with_bearer(&server.url, token);
    let body = with_meta(json!({
        "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": { "notifications": { "toolsListChanged": true } },
    }));
    let response = client
        .send_raw(
            client.modern_request(body.to_string(), &[("mcp-method", "subscriptions/listen")]),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseStream::new(response.into_body());
    let ack = stream.next_within(STREAM_BOUND).await.unwrap().unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    stream
}

/// A safety bound on a stream's next event: never reached by a stream that
/// works (the tokens below expire within seconds), only by one that would
/// otherwise hang the test.
const STREAM_BOUND: Duration = Duration::from_secs(30);

/// The manager's metrics, by sample name (labels included).
fn samples(server: &Server) -> HashMap<String, f64> {
    mcp_test_client::samples(&server.manager.metrics())
}

/// A listen stream holds its token's term: when the token's `exp` (plus
/// the leeway, here 1 s) has passed, the stream ends gracefully with the
/// listen request's result, counted `credential_expired`, as every other
/// request with that token gets 401; a stream of a token still good stays.
#[tokio::test]
async fn a_listen_stream_ends_with_its_result_when_its_token_expires() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let oauth = authority
        .resource_server()
        .leeway(Duration::from_secs(1))
        .build()
        .unwrap();
    let server = Server::start_with(|b| b.resource_server(oauth)).await;
    let mut short = authority.claims("ada", "");
    short["exp"] = json!(now() + 3);
    let mut expiring = listen_with(&server, &sign(&key, &short), json!("short")).await;
    let mut lasting = listen_with(
        &server,
        &sign(&key, &authority.claims("ada", "")),
        json!("long"),
    )
    .await;
    let result = expiring
        .next_within(STREAM_BOUND)
        .await
        .expect("the stream ends within the bound once its token expires")
        .expect("a result before the end");
    assert_eq!(result["id"], "short");
    assert_eq!(result["result"]["resultType"], "complete");
    assert_eq!(expiring.next_within(STREAM_BOUND).await.unwrap(), None);
    let metrics = samples(&server);
    assert_eq!(
        metrics.get("sessionreg_listeners_ended_total{reason=\"credential_expired\"}"),
        Some(&1.0),
        "{metrics:?}"
    );
    assert_eq!(metrics["sessionreg_listeners_live"], 1.0);
    // The other stream still hears what it listens to.
    server.manager.publisher().tools_changed();
    let heard = lasting.next_within(STREAM_BOUND).await.unwrap().unwrap();
    assert_eq!(heard["method"], "notifications/tools/list_changed");
    // The stream ended when the token's requests are refused: at once, or
    // (the wall clock and the runtime's may differ by a little) soon.
    let refused = async {
        while whoami_modern(&server, &sign(&key, &short)).await.status != StatusCode::UNAUTHORIZED {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    assert!(tokio::time::timeout(STREAM_BOUND, refused).await.is_ok());
    assert_no_500(&server);
}

/// A legacy session's standalone `GET` stream holds the term of the token
/// it was opened with: it ends when that token expires (counted
/// `credential_expired` in `sessionreg_http_streams_ended_total`), while
/// the session, which belongs to the token's subject, stays: the same
/// subject's next token opens a new stream in it.
#[tokio::test]
async fn a_get_stream_ends_when_its_token_expires_and_its_session_stays() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let oauth = authority
        .resource_server()
        .leeway(Duration::ZERO)
        .build()
        .unwrap();
    let server = Server::start_with(|b| b.resource_server(oauth)).await;
    let lasting = Client::with_bearer(&server.url, &sign(&key, &authority.claims("ada", "")));
    let session = lasting.initialize().await;
    let mut short = authority.claims("ada", "");
    short["exp"] = json!(now() + 3);
    let expiring = Client::with_bearer(&server.url, &sign(&key, &short));
    let response = expiring
        .send_raw(expiring.get_request(&session, None))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseStream::new(response.into_body());
    assert_eq!(
        stream
            .next_within(STREAM_BOUND)
            .await
            .expect("the stream ends within the bound once its token expires"),
        None
    );
    let metrics = samples(&server);
    assert_eq!(
        metrics.get("sessionreg_http_streams_ended_total{reason=\"credential_expired\"}"),
        Some(&1.0),
        "{metrics:?}"
    );
    assert_eq!(server.live(), 1, "the session stays");
    let again = lasting.send_raw(lasting.get_request(&session, None)).await;
    assert_eq!(again.status(), StatusCode::OK, "a new token, a new stream");
    assert_no_500(&server);
}

/// A configuration that cannot work is refused when it is built.
#[test]
fn bad_configurations_are_refused() {
    for (issuer, resource) in [
        ("https://as.example", "mcp.example.com/mcp"),
        ("https://as.example", "https://mcp.example.com/mcp#x"),
        ("http://as.example", "https://mcp.example.com/mcp"),
        ("https://as.example#f", "https://mcp.example.com/mcp"),
    ] {
        let built = ResourceServer::builder(issuer, resource).build();
        assert!(built.is_err(), "{issuer} {resource}");
    }
    let bad_scope = ResourceServer::builder("http://127.0.0.1:9", RESOURCE)
        .required_scope("two words")
        .build();
    assert!(bad_scope.is_err());
    let allowed = ResourceServer::builder("http://as.internal", RESOURCE)
        .allow_http(true)
        .build();
    assert!(allowed.is_ok());
    // The bounds on trust and on what is asked of the authorization
    // server: a typed error naming the setting, never a panic.
    let builder = || ResourceServer::builder("http://127.0.0.1:9", RESOURCE);
    let refused = |built: Result<ResourceServer, OAuthConfigError>| match built {
        Err(OAuthConfigError::OutOfRange { setting, .. }) => setting,
        other => panic!("{other:?}"),
    };
    let day = Duration::from_secs(24 * 3600);
    for (setting, built) in [
        (
            "keys_max_age",
            builder().keys_max_age(Duration::ZERO).build(),
        ),
        ("keys_max_age", builder().keys_max_age(day * 2).build()),
        (
            "min_refresh_interval",
            builder()
                .keys_max_age(Duration::from_secs(5))
                .min_refresh_interval(Duration::from_secs(6))
                .build(),
        ),
        ("refusal_ttl", builder().refusal_ttl(Duration::ZERO).build()),
        (
            "refusal_ttl",
            builder().refusal_ttl(Duration::from_secs(61)).build(),
        ),
    ] {
        assert_eq!(refused(built), setting);
    }
    assert!(builder()
        .keys_max_age(day)
        .min_refresh_interval(day)
        .refusal_ttl(Duration::from_secs(60))
        .refusal_cache(0)
        .build()
        .is_ok());
}

// --------------------------------------------------------------- access tokens only

/// The client id an OpenID client is registered with at the authority.
const CLIENT: &str = "mcp-client";

/// The claims of an OpenID Connect ID token the authority issued to
/// `CLIENT` for `sub`, with `extra` members (`nonce`, `at_hash`, ...).
fn id_token_claims(issuer: &str, sub: &str, extra: Value) -> Value {
    let mut claims = json!({
        "iss": issuer, "sub": sub, "aud": CLIENT, "azp": CLIENT,
        "iat": now(), "auth_time": now(), "exp": now() + 3600,
        "name": "Ada", "email": "ada@example.com",
    });
    for (name, value) in extra.as_object().unwrap() {
        claims[name] = value.clone();
    }
    claims
}

/// An OpenID Connect ID token is not an access token. Signed by the
/// authority's key, `typ: JWT`, its `aud` the client id, which this server
/// accepts as an extra audience with no scope required (an operator's
/// answer to an authorization server that cannot put the resource's URL
/// in `aud`): with `nonce` and `at_hash` it gets 401
/// `invalid_token`, and so does one with `c_hash` alone or `nonce` alone;
/// nothing is created. An access token for that audience, without those
/// claims, passes. The refusals are counted by cause.
#[tokio::test]
async fn an_id_token_gets_401_even_for_an_accepted_audience() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let oauth = authority
        .resource_server()
        .audience(CLIENT)
        .build()
        .unwrap();
    let server = Server::start_with(|b| b.resource_server(oauth.clone())).await;
    let issuer = &authority.issuer;
    let id_tokens = [
        json!({ "nonce": "n-0S6_WzA2Mj", "at_hash": "77QmUPtjPfzWtF2AnpK9RQ" }),
        json!({ "c_hash": "LDktKdoQak3Pk0cnXxCltA" }),
        json!({ "nonce": "n-0S6_WzA2Mj" }),
    ];
    for extra in &id_tokens {
        let token = sign_typed(
            &key,
            Some("JWT"),
            &id_token_claims(issuer, "ada", extra.clone()),
        );
        for answer in [
            whoami_modern(&server, &token).await,
            initialize_with(&server, Some(&token)).await,
        ] {
            assert_eq!(
                answer.status,
                StatusCode::UNAUTHORIZED,
                "{extra}: {:?}",
                answer.body
            );
            assert!(
                challenge(&answer).starts_with(r#"Bearer error="invalid_token""#),
                "{extra}: {}",
                challenge(&answer)
            );
        }
    }
    assert_eq!(server.created(), 0);
    // An access token for the same audience, without an ID token's claims.
    let mut access = authority.claims("ada", "");
    access["aud"] = json!(CLIENT);
    let answer = whoami_modern(&server, &sign(&key, &access)).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    assert_eq!(
        answer.json()["result"]["principal"],
        format!("{issuer}#ada")
    );
    let stats = oauth.stats();
    assert_eq!((stats.id_tokens, stats.invalid), (6, 6), "{stats:?}");
    let metrics = server.manager.metrics();
    assert!(
        metrics.contains("sessionreg_oauth_invalid_total{cause=\"id_token\"} 6"),
        "{metrics}"
    );
    assert_no_500(&server);
}

/// RFC 9068 §4, when asked for (`require_at_jwt`): a JWT whose header's
/// `typ` is not `at+jwt` (nor `application/at+jwt`, in any case) gets 401
/// `invalid_token`, however good its signature and claims; off by
/// default, where a `typ: JWT` access token passes.
#[tokio::test]
async fn with_at_jwt_required_only_tokens_typed_at_jwt_pass() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    let oauth = authority
        .resource_server()
        .require_at_jwt(true)
        .build()
        .unwrap();
    let server = Server::start_with(|b| b.resource_server(oauth.clone())).await;
    for typ in [Some("JWT"), None, Some("jwt"), Some("at+jwt2")] {
        let token = sign_typed(&key, typ, &authority.claims("ada", ""));
        let answer = whoami_modern(&server, &token).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "typ {typ:?}");
        assert!(challenge(&answer).starts_with(r#"Bearer error="invalid_token""#));
    }
    for typ in ["at+jwt", "application/at+jwt", "AT+JWT"] {
        let token = sign_typed(&key, Some(typ), &authority.claims("ada", ""));
        let answer = whoami_modern(&server, &token).await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "typ {typ}: {:?}",
            answer.body
        );
    }
    let stats = oauth.stats();
    assert_eq!((stats.wrong_type, stats.accepted), (4, 3), "{stats:?}");
    assert!(server
        .manager
        .metrics()
        .contains("sessionreg_oauth_invalid_total{cause=\"token_type\"} 4"));
    // Off by default: a `typ: JWT` access token passes.
    let (authority, key, server) = setup().await;
    let token = sign_typed(&key, Some("JWT"), &authority.claims("ada", "mcp:tools"));
    assert_eq!(whoami_modern(&server, &token).await.status, StatusCode::OK);
}

/// Everything a `fmt` subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// What building `builder` logs at WARN.
fn warnings_of(builder: sessionreg::http::oauth::ResourceServerBuilder) -> String {
    use tracing_subscriber::util::SubscriberInitExt as _;
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(captured.clone())
        .with_ansi(false)
        .finish();
    {
        let _default = subscriber.set_default();
        builder.build().unwrap();
    }
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    text
}

/// An extra audience without a required scope lets in any token the
/// issuer made for that audience (an ID token for a client id, say): the
/// server says so once, when it is built; not when a scope is required,
/// nor without an extra audience.
#[test]
fn an_extra_audience_without_a_required_scope_is_warned_of_once() {
    let builder = || ResourceServer::builder("http://127.0.0.1:9", RESOURCE);
    let warned = warnings_of(builder().audience(CLIENT));
    assert_eq!(warned.matches(" WARN ").count(), 1, "{warned}");
    assert!(warned.contains(CLIENT), "{warned}");
    let scoped = warnings_of(builder().audience(CLIENT).required_scope("mcp:tools"));
    assert_eq!(scoped, "");
    assert_eq!(warnings_of(builder()), "");
}

// --------------------------------------------------------------- bounded work toward the authorization server

/// Sends what `send` makes until `done` holds of its answer (up to 30 s);
/// the last answer.
async fn until<F, Fut>(mut send: F, done: impl Fn(&Answer) -> bool) -> Answer
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Answer>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = send().await;
        if done(&answer) || Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// While the authority's metadata is down, opaque tokens (introspected,
/// the endpoint found through the metadata) do not each run discovery:
/// discovery is under the keys' rate bound (one at a time, one start per
/// `min_refresh_interval`), so 64 requests, 8 at a time, cost one
/// discovery (at most its 2 metadata GETs) and each gets 401. Once the
/// metadata is back, the next discovery the bound allows finds it.
#[tokio::test]
async fn discovery_while_the_metadata_is_down_costs_a_bounded_number_of_gets() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    authority.state.opaque.lock().unwrap().insert(
        "opaque-good".to_string(),
        json!({
            "active": true, "sub": "svc-1", "aud": RESOURCE, "iss": authority.issuer,
            "exp": now() + 600,
        }),
    );
    authority.state.metadata_down.store(true, Ordering::SeqCst);
    let oauth = authority
        .resource_server()
        .introspection(CLIENT_ID, CLIENT_SECRET)
        .keys_max_age(Duration::from_secs(3600))
        .min_refresh_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    let server = Server::start_with(|b| b.resource_server(oauth.clone())).await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let url = server.url.clone();
        tasks.push(tokio::spawn(async move {
            let mut statuses = Vec::new();
            for _ in 0..8 {
                let client = Client::with_bearer(&url, "opaque-good");
                statuses.push(client.post(None, &initialize_body("client")).await.status);
            }
            statuses
        }));
    }
    for task in tasks {
        for status in task.await.unwrap() {
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
    }
    let gets = authority.state.metadata_gets.load(Ordering::SeqCst);
    assert!(gets <= 2, "{gets} metadata GETs for 64 requests");
    assert_eq!(authority.state.introspections.load(Ordering::SeqCst), 0);
    assert_eq!(oauth.stats().discovery_failures, 1);
    assert_no_500(&server);

    // The metadata back, a bound of 1 s: a later request finds it.
    let quick = authority
        .resource_server()
        .introspection(CLIENT_ID, CLIENT_SECRET)
        .min_refresh_interval(Duration::from_secs(1))
        .build()
        .unwrap();
    let quick = Server::start_with(|b| b.resource_server(quick)).await;
    let first = whoami_modern(&quick, "opaque-good").await;
    assert_eq!(first.status, StatusCode::UNAUTHORIZED);
    authority.state.metadata_down.store(false, Ordering::SeqCst);
    let answer = until(
        || whoami_modern(&quick, "opaque-good"),
        |answer| answer.status == StatusCode::OK,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
}

/// An opaque token the authority says is inactive is refused, and the
/// refusal kept (by the token's digest) for `refusal_ttl`: 40 requests
/// with it, 8 at a time, cost one introspection, and each gets 401;
/// another inactive token costs its own one; an active token is not
/// refused by it. Past the TTL the token is asked about again.
#[tokio::test]
async fn a_flood_of_one_inactive_token_costs_one_introspection_per_refusal_ttl() {
    let key = rsa_a();
    let authority = Authority::start(&[&key]).await;
    authority.state.opaque.lock().unwrap().extend([
        ("opaque-revoked".to_string(), json!({ "active": false })),
        (
            "opaque-good".to_string(),
            json!({
                "active": true, "sub": "svc-1", "aud": RESOURCE, "iss": authority.issuer,
                "exp": now() + 600,
            }),
        ),
    ]);
    let introspections = || authority.state.introspections.load(Ordering::SeqCst);
    let oauth = authority
        .resource_server()
        .introspection(CLIENT_ID, CLIENT_SECRET)
        .introspection_endpoint(format!("{}/introspect", authority.issuer))
        .refusal_ttl(Duration::from_secs(60))
        .build()
        .unwrap();
    let server = Server::start_with(|b| b.resource_server(oauth.clone())).await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let url = server.url.clone();
        tasks.push(tokio::spawn(async move {
            let mut statuses = Vec::new();
            for _ in 0..5 {
                let client = Client::with_bearer(&url, "opaque-revoked");
                statuses.push(client.post(None, &initialize_body("client")).await.status);
            }
            statuses
        }));
    }
    for task in tasks {
        for status in task.await.unwrap() {
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
    }
    assert_eq!(introspections(), 1, "40 requests with one inactive token");
    assert_eq!(oauth.stats().refusals_cached, 39);
    assert_eq!(
        whoami_modern(&server, "opaque-unknown").await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(introspections(), 2, "another token is its own");
    assert_eq!(
        whoami_modern(&server, "opaque-good").await.status,
        StatusCode::OK
    );
    assert_eq!(introspections(), 3);
    assert!(server
        .manager
        .metrics()
        .contains("sessionreg_oauth_invalid_total{cause=\"refusal_cached\"} 39"));
    assert_eq!(server.created(), 0);

    // A TTL of 1 s: the token is asked about again once it has passed.
    let brief = authority
        .resource_server()
        .introspection(CLIENT_ID, CLIENT_SECRET)
        .introspection_endpoint(format!("{}/introspect", authority.issuer))
        .refusal_ttl(Duration::from_secs(1))
        .build()
        .unwrap();
    let brief = Server::start_with(|b| b.resource_server(brief)).await;
    let before = introspections();
    assert_eq!(
        whoami_modern(&brief, "opaque-revoked").await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(introspections(), before + 1);
    let answer = until(
        || whoami_modern(&brief, "opaque-revoked"),
        |_| introspections() > before + 1,
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(introspections(), before + 2);
}

/// `keys_max_age` bounds how long keys are trusted since they were last
/// fetched: with the JWKS endpoint failing, a known key's token passes
/// while the set is younger, and once it is older every JWT gets 503 with
/// a `Retry-After` (the server cannot tell a good token from a withdrawn
/// key's), a token accepted before included; never a 500. Once the
/// endpoint answers again, the next refresh brings the keys back.
#[tokio::test]
async fn keys_past_their_max_age_are_not_trusted_while_the_jwks_fails() {
    let a = rsa_a();
    let authority = Authority::start(&[&a]).await;
    let oauth = authority
        .resource_server()
        .keys_max_age(Duration::from_secs(4))
        .min_refresh_interval(Duration::from_secs(1))
        .build()
        .unwrap();
    assert_eq!(oauth.refresh().await, Ok(1));
    let server = Server::start_with(|b| b.resource_server(oauth.clone())).await;
    authority.state.jwks_down.store(true, Ordering::SeqCst);
    let reused = sign(&a, &authority.claims("ada", ""));
    assert_eq!(whoami_modern(&server, &reused).await.status, StatusCode::OK);
    let answer = until(
        || {
            let token = sign(&a, &authority.claims("ada", ""));
            let server = &server;
            async move { whoami_modern(server, &token).await }
        },
        |answer| answer.status != StatusCode::OK,
    )
    .await;
    assert_eq!(
        answer.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "a withdrawn key may still be trusted: {:?}",
        answer.body
    );
    assert!(answer.headers.get("retry-after").is_some());
    for token in [reused.clone(), sign(&a, &authority.claims("bob", ""))] {
        let answer = initialize_with(&server, Some(&token)).await;
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    }
    assert!(oauth.stats().unavailable >= 3);
    assert_eq!(oauth.stats().keys, 0, "no key in force");
    assert!(server
        .manager
        .metrics()
        .contains("sessionreg_oauth_tokens_total{outcome=\"unavailable\"}"));
    assert_eq!(server.created(), 0);
    assert_no_500(&server);

    // The endpoint back: a refresh brings the keys back.
    authority.state.jwks_down.store(false, Ordering::SeqCst);
    let answer = until(
        || whoami_modern(&server, &reused),
        |answer| answer.status == StatusCode::OK,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
}
