//! Rate limits per principal (`Builder::rate_limit`), over real sockets: a
//! principal's requests within its burst are served, the next gets 429
//! with `Retry-After`, `RateLimit-Policy`, `RateLimit` and a JSON-RPC
//! error with its id naming the limit, in both eras; another principal is
//! served throughout; the refusals are counted in `/metrics` by limit.
//!
//! No timing threshold: the rate is 100 an hour, so the burst (100) is
//! all a principal has during the test (one more each 36 s).
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::{with_meta, Answer, Client, Server};
use serde_json::json;
use sessionreg::http::{BearerTokens, KeyedRateLimit, Rate};

fn tokens() -> BearerTokens {
    BearerTokens::new(BearerTokens::parse("ada=token-ada\nbob=token-bob\n").unwrap()).unwrap()
}

/// `echo` at 2026-07-28, with request id `id`.
async fn echo_modern(client: &Client, id: u64) -> Answer {
    let body = with_meta(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                                 "params": { "name": "echo", "arguments": {} } }));
    client
        .post_modern(&body, &[("mcp-method", "tools/call"), ("mcp-name", "echo")])
        .await
}

fn header<'a>(answer: &'a Answer, name: &str) -> &'a str {
    answer
        .headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name}: {:?}", answer.headers))
        .to_str()
        .unwrap()
}

#[tokio::test]
async fn a_principal_past_its_rate_gets_429_with_the_headers_and_no_one_else_notices() {
    let server = Server::start_with(|b| {
        b.authenticator(tokens())
            .rate_limit(Some(Rate::per_hour(100)))
    })
    .await;
    let ada = Client::with_bearer(&server.url, "token-ada");
    for id in 0..100 {
        let answer = echo_modern(&ada, id).await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "call {id}: {:?}",
            answer.body
        );
    }
    let refused = echo_modern(&ada, 100).await;
    assert_eq!(
        refused.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{:?}",
        refused.body
    );
    let retry_after: u64 = header(&refused, "retry-after").parse().unwrap();
    // One request more every 36 s.
    assert!((1..=36).contains(&retry_after), "{retry_after}");
    assert_eq!(
        header(&refused, "ratelimit-policy"),
        r#""principal";q=100;w=3600"#
    );
    assert_eq!(
        header(&refused, "ratelimit"),
        format!(r#""principal";r=0;t={retry_after}"#)
    );
    let error = &refused.json()["error"];
    assert_eq!(refused.json()["id"], 100);
    assert_eq!(error["data"]["limit"], "principal");
    assert_eq!(error["data"]["rate"], "100/h");
    assert!(
        error["message"].as_str().unwrap().contains("100/h"),
        "{error}"
    );

    // The same principal in a session: refused too (one limit for all its
    // requests), with the request's id.
    let answer = ada
        .post(None, &http_support::initialize_body("client"))
        .await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        header(&answer, "ratelimit-policy"),
        r#""principal";q=100;w=3600"#
    );

    // Another principal is served, in both eras.
    let bob = Client::with_bearer(&server.url, "token-bob");
    let answer = echo_modern(&bob, 1).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let session = bob.initialize().await;
    let answer = bob.call(&session, "echo", json!({})).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);

    let metrics = server.manager.metrics();
    assert!(
        metrics.contains("sessionreg_rate_limited_total{limit=\"principal\"} 2\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("sessionreg_rate_limit_principals{limit=\"principal\"} 2\n"),
        "{metrics}"
    );
    assert!(!metrics.contains("ada"), "no principal in the metrics");
}

/// A tool's own limit, per principal: past it that tool's calls get 429
/// naming the tool (`"tool"` in the headers); the principal's other tools
/// and another principal's calls of it are served.
#[tokio::test]
async fn a_tools_limit_refuses_that_tool_only_and_names_it() {
    let server = Server::start_with(|b| {
        b.authenticator(tokens())
            .tool_rate_limit("echo", Rate::per_hour(3))
    })
    .await;
    let ada = Client::with_bearer(&server.url, "token-ada");
    for id in 0..3 {
        let answer = echo_modern(&ada, id).await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "call {id}: {:?}",
            answer.body
        );
    }
    let refused = echo_modern(&ada, 3).await;
    assert_eq!(
        refused.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{:?}",
        refused.body
    );
    assert_eq!(header(&refused, "ratelimit-policy"), r#""tool";q=3;w=3600"#);
    let retry_after = header(&refused, "retry-after");
    assert_eq!(
        header(&refused, "ratelimit"),
        format!(r#""tool";r=0;t={retry_after}"#)
    );
    let error = &refused.json()["error"];
    assert_eq!(refused.json()["id"], 3);
    assert_eq!(error["data"]["tool"], "echo");
    assert_eq!(error["data"]["rate"], "3/h");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("tool echo is 3/h"),
        "{error}"
    );
    // In a session too, and only for that tool.
    let session = ada.initialize().await;
    let answer = ada.call(&session, "echo", json!({})).await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        ada.call(&session, "whoami", json!({})).await.status,
        StatusCode::OK
    );
    let bob = Client::with_bearer(&server.url, "token-bob");
    assert_eq!(echo_modern(&bob, 1).await.status, StatusCode::OK);
    let metrics = server.manager.metrics();
    assert!(
        metrics.contains("sessionreg_rate_limited_total{limit=\"tool\",tool=\"echo\"} 2\n"),
        "{metrics}"
    );
}

/// The burst: `rate_burst` requests at once, then the rate's.
#[tokio::test]
async fn the_burst_is_what_rate_burst_says() {
    let server = Server::start_with(|b| {
        b.authenticator(tokens())
            .rate_limit(Some(Rate::per_hour(100)))
            .rate_burst(Some(3))
    })
    .await;
    let ada = Client::with_bearer(&server.url, "token-ada");
    for id in 0..3 {
        assert_eq!(echo_modern(&ada, id).await.status, StatusCode::OK);
    }
    assert_eq!(
        echo_modern(&ada, 3).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
}

/// A burst of 0, or more than the bound, is refused when the manager is
/// built, naming the setting.
#[test]
fn a_burst_out_of_range_is_refused_at_build() {
    for burst in [0, 1_000_001] {
        let app = http_support::TestApp {
            closes: Default::default(),
            probes: Default::default(),
            gate: Default::default(),
        };
        let built = sessionreg::http::SessionManager::builder(app)
            .rate_limit(Some(Rate::per_second(20)))
            .rate_burst(Some(burst))
            .build();
        assert_eq!(built.err().and_then(|e| e.setting()), Some("rate_burst"));
    }
}

/// A limit of the application's own key without a principal:
/// unauthenticated requests by their client address (the `ClientAddr`
/// `serve` puts in them); past it, 429 under the limit's name, the error
/// naming it, counted under it (the key nowhere in the metrics).
#[tokio::test]
async fn a_keyed_limit_by_client_address_limits_the_unauthenticated() {
    let server = Server::start_with(|b| {
        let by_address = KeyedRateLimit::new("address", Rate::per_hour(3), |request| match request
            .principal()
        {
            Some(_) => None,
            None => request.client_addr().map(|addr| addr.ip().to_string()),
        });
        b.keyed_rate_limit(by_address)
    })
    .await;
    // No principal (no authenticator): counted by address, 3 then 429.
    let anonymous = Client::new(&server.url);
    for id in 0..3 {
        assert_eq!(echo_modern(&anonymous, id).await.status, StatusCode::OK);
    }
    let refused = echo_modern(&anonymous, 3).await;
    assert_eq!(
        refused.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{:?}",
        refused.body
    );
    assert_eq!(
        header(&refused, "ratelimit-policy"),
        r#""address";q=3;w=3600"#
    );
    let error = &refused.json()["error"];
    assert_eq!(error["data"]["limit"], "address");
    assert!(
        error["message"].as_str().unwrap().contains("address"),
        "{error}"
    );
    let metrics = server.manager.metrics();
    assert!(
        metrics.contains("sessionreg_rate_limited_total{limit=\"address\"} 1\n"),
        "{metrics}"
    );
    assert!(!metrics.contains("127.0.0.1"), "no key in the metrics");
}

/// A tenant's own limit (a header the application reads), on requests
/// with a principal: one tenant past its 2 is refused under `tenant`,
/// another tenant of the same principal is served.
#[tokio::test]
async fn a_keyed_limit_by_a_header_refuses_that_key_only() {
    let server = Server::start_with(|b| {
        let by_tenant = KeyedRateLimit::new("tenant", Rate::per_hour(2), |request| {
            let tenant = request.parts().headers.get("x-tenant")?;
            (request.tool() == Some("echo"))
                .then(|| tenant.to_str().ok().map(str::to_string))
                .flatten()
        });
        b.authenticator(tokens()).keyed_rate_limit(by_tenant)
    })
    .await;
    let acme = Client::with_bearer(&server.url, "token-ada").with_header("x-tenant", "acme");
    let globex = Client::with_bearer(&server.url, "token-ada").with_header("x-tenant", "globex");
    assert_eq!(echo_modern(&acme, 1).await.status, StatusCode::OK);
    assert_eq!(echo_modern(&acme, 2).await.status, StatusCode::OK);
    let refused = echo_modern(&acme, 3).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        header(&refused, "ratelimit-policy"),
        r#""tenant";q=2;w=3600"#
    );
    assert_eq!(echo_modern(&globex, 4).await.status, StatusCode::OK);
}

/// A keyed limit's name goes into headers and labels: one that could not,
/// or that names another limit, is refused at build.
#[test]
fn a_keyed_limit_of_a_bad_or_taken_name_is_refused_at_build() {
    let limit = |name: &str| KeyedRateLimit::new(name, Rate::per_second(1), |_| None);
    let build = |limits: Vec<KeyedRateLimit>| {
        let app = http_support::TestApp {
            closes: Default::default(),
            probes: Default::default(),
            gate: Default::default(),
        };
        limits
            .into_iter()
            .fold(sessionreg::http::SessionManager::builder(app), |b, l| {
                b.keyed_rate_limit(l)
            })
            .build()
            .err()
            .and_then(|e| e.setting())
    };
    let long = "x".repeat(33);
    for bad in [
        "",
        "Has Caps",
        "quote\"",
        "principal",
        "tool",
        long.as_str(),
    ] {
        assert_eq!(build(vec![limit(bad)]), Some("keyed_rate_limit"), "{bad}");
    }
    let twice = build(vec![limit("ip"), limit("ip")]);
    assert_eq!(twice, Some("keyed_rate_limit"));
    assert_eq!(build(vec![limit("per-ip.v1"), limit("ip")]), None);
}
