//! Who may reach the endpoint, wherever it is mounted: DNS-rebinding
//! protection and the idle reaper without `serve`, allow-lists swapped at
//! run time, CORS for allowed browser origins, and the headers of SSE
//! responses.
#![cfg(feature = "http")]

mod http_support;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::Full;
use http_support::{
    assert_refused_initialize, eventually, initialize_body, test_manager, with_headers, Client,
    Server, ACCEPT_BOTH,
};
use serde_json::json;
use sessionreg::http::RebindingProtection;
use std::time::Duration;

fn initialize_request(host: &str, origin: Option<&str>) -> http::Request<Full<Bytes>> {
    let mut request = http::Request::post("/mcp")
        .header("host", host)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH);
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request
        .body(Full::new(Bytes::from(initialize_body("c").to_string())))
        .unwrap()
}

/// Mounted without `serve` (as in axum), nobody has told the manager where
/// it listens: `Host` is still restricted to loopback names, as rmcp does.
#[tokio::test]
async fn rebinding_protection_holds_without_serve() {
    let (manager, _, _) = test_manager(|b| b);
    let status = |host: &'static str, origin: Option<&'static str>| {
        let manager = manager.clone();
        async move {
            manager
                .handle(initialize_request(host, origin))
                .await
                .status()
        }
    };
    assert_eq!(status("evil.example", None).await, StatusCode::FORBIDDEN);
    assert_eq!(
        status("localhost:1", Some("https://evil.example")).await,
        StatusCode::FORBIDDEN
    );
    for host in ["localhost:8080", "127.0.0.1:3000", "[::1]:80"] {
        assert_eq!(status(host, None).await, StatusCode::OK, "{host}");
    }
    // An allow-list lets a public name in, swapped in at run time.
    manager.set_allowed_hosts(vec!["mcp.example".into()]);
    assert_eq!(status("mcp.example", None).await, StatusCode::OK);
    assert_eq!(status("evil.example", None).await, StatusCode::FORBIDDEN);
    // Told it is served on a public address, Auto lifts the loopback rule
    // (the allow-list still holds).
    manager.set_allowed_hosts(Vec::new());
    manager.set_bind_address("192.0.2.7:443".parse().unwrap());
    assert_eq!(status("evil.example", None).await, StatusCode::OK);
    // Off is off, On is on, whatever the address.
    let (off, _, _) = test_manager(|b| b.rebinding_protection(RebindingProtection::Off));
    let answer = off.handle(initialize_request("evil.example", None)).await;
    assert_eq!(answer.status(), StatusCode::OK);
    let (on, _, _) = test_manager(|b| b.rebinding_protection(RebindingProtection::On));
    on.set_bind_address("192.0.2.7:443".parse().unwrap());
    let answer = on.handle(initialize_request("evil.example", None)).await;
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn origin_allow_list_swaps_at_run_time() {
    let server = Server::start().await;
    let client = Client::new(&server.url).with_header("origin", "https://app.example");
    let answer = client.post(None, &initialize_body("c")).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    server
        .manager
        .set_allowed_origins(vec!["https://app.example".into()]);
    assert_eq!(
        server.manager.allowed().origins,
        vec!["https://app.example".to_string()]
    );
    let id = client.initialize().await;
    server.manager.set_allowed_origins(Vec::new());
    assert_eq!(
        client.call(&id, "echo", json!({})).await.status,
        StatusCode::FORBIDDEN
    );
}

/// The reaper runs without hand wiring: it starts with the first request
/// served inside a runtime, and stops when the manager is dropped.
#[tokio::test]
async fn the_reaper_starts_with_the_first_request_and_stops_with_the_manager() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let (manager, closes, _) = test_manager(|b| {
        b.idle_timeout(Some(Duration::from_millis(50)))
            .reap_interval(Duration::from_millis(10))
    });
    assert_eq!(metrics.num_alive_tasks(), 0);
    let answer = manager.handle(initialize_request("localhost", None)).await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(metrics.num_alive_tasks(), 1, "the reaper runs");
    // Nothing else looks the session up: only the reaper can end it.
    assert!(eventually(|| closes.count() == 1).await);
    assert_eq!(manager.stats().live, 0);
    drop(manager);
    assert!(
        eventually(|| metrics.num_alive_tasks() == 0).await,
        "the reaper stops with the manager"
    );
}

/// The MCP Inspector and other browser clients: CORS for allowed origins.
#[tokio::test]
async fn cors_for_origins_allowed_by_name() {
    let server = Server::start_with(|b| b.allow_origin("https://app.example")).await;
    let port = server.addr.port();
    let local = format!("http://localhost:{port}");
    for origin in ["https://app.example", local.as_str()] {
        let client = Client::new(&server.url).with_header("origin", origin);
        let answer = client.post(None, &initialize_body("c")).await;
        assert_eq!(answer.status, StatusCode::OK, "{origin}");
        assert_eq!(answer.headers["access-control-allow-origin"], origin);
        let expose = answer.headers["access-control-expose-headers"]
            .to_str()
            .unwrap();
        assert!(expose.contains("Mcp-Session-Id"), "{expose}");
        assert_eq!(answer.headers["vary"], "Origin");
        // Preflight.
        let preflight = client
            .send(
                client
                    .request(Method::OPTIONS)
                    .header("access-control-request-method", "POST")
                    .header(
                        "access-control-request-headers",
                        "content-type, mcp-session-id, mcp-param-region",
                    )
                    .body(Full::default())
                    .unwrap(),
            )
            .await;
        assert_eq!(preflight.status, StatusCode::NO_CONTENT);
        assert_eq!(preflight.headers["access-control-allow-origin"], origin);
        assert_eq!(
            preflight.headers["access-control-allow-methods"],
            "GET, POST, DELETE"
        );
        assert_eq!(
            preflight.headers["access-control-allow-headers"],
            "content-type, mcp-session-id, mcp-param-region"
        );
    }
    // A foreign origin: 403, preflight too, and no CORS headers.
    let foreign = Client::new(&server.url).with_header("origin", "https://evil.example");
    let preflight = foreign
        .send(
            foreign
                .request(Method::OPTIONS)
                .header("access-control-request-method", "POST")
                .body(Full::default())
                .unwrap(),
        )
        .await;
    assert_eq!(preflight.status, StatusCode::FORBIDDEN);
    assert!(!preflight
        .headers
        .contains_key("access-control-allow-origin"));
    // No Origin (not a browser): no CORS headers.
    let plain = Client::new(&server.url)
        .post(None, &initialize_body("c"))
        .await;
    assert!(!plain.headers.contains_key("access-control-allow-origin"));
    // Protection off lifts the Host rule only: a foreign page's origin is
    // still refused (an Origin is validated on every bind), and
    // gets no CORS headers.
    let open = Server::start_with(|b| b.rebinding_protection(RebindingProtection::Off)).await;
    let answer = Client::new(&open.url)
        .with_header("origin", "https://evil.example")
        .post(None, &initialize_body("c"))
        .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(!answer.headers.contains_key("access-control-allow-origin"));
}

/// SSE responses tell proxies not to buffer or transform them.
#[tokio::test]
async fn sse_responses_are_neither_buffered_nor_transformed() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let stream = client.open_stream(&id, None).await;
    let post = client.call(&id, "stream", json!({})).await;
    for headers in [stream.headers(), &post.headers] {
        assert_eq!(headers["content-type"], "text/event-stream");
        assert_eq!(headers["cache-control"], "no-cache, no-transform");
        assert_eq!(headers["x-accel-buffering"], "no");
    }
}

/// Bound to `0.0.0.0` (what every container does), a
/// foreign `Origin` was let in, because any non-loopback bind switched the
/// rebinding protection off. An unspecified or private bind is not public:
/// the loopback rule stays, and a present `Origin` that is not allowed is
/// refused on every bind.
#[tokio::test]
async fn a_foreign_origin_is_refused_on_every_bind() {
    for bind in ["0.0.0.0:0", "127.0.0.1:0"] {
        let server =
            Server::start_on(bind, |b| b, Default::default(), Duration::from_secs(5)).await;
        let attacker =
            Client::new(&server.url).with_header("origin", "http://rebind.attacker.example");
        let answer = attacker.post(None, &initialize_body("c")).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "bound to {bind}");
        assert!(answer.session_id().is_none());
        // A foreign Host is refused too: the bind is not a public one.
        let answer = server
            .manager
            .handle(initialize_request("rebind.attacker.example", None))
            .await;
        assert_eq!(answer.status(), StatusCode::FORBIDDEN, "bound to {bind}");
        // Loopback clients are served as ever.
        let client = Client::new(&server.url);
        let id = client.initialize().await;
        assert_eq!(client.delete(&id).await.status, StatusCode::OK);
        assert_eq!(server.created(), 1);
    }
}

/// Served on a public address, `Host` is not restricted (a public server is
/// reached by names nobody listed), but an `Origin` still has to be on the
/// allow-list: a browser page of another site gets 403.
#[tokio::test]
async fn a_public_bind_lets_any_host_in_but_no_foreign_origin() {
    let (manager, _, _) = test_manager(|b| b);
    manager.set_bind_address("192.0.2.7:443".parse().unwrap());
    let status = |host: &'static str, origin: Option<&'static str>| {
        let manager = manager.clone();
        async move {
            manager
                .handle(initialize_request(host, origin))
                .await
                .status()
        }
    };
    assert_eq!(status("mcp.example", None).await, StatusCode::OK);
    assert_eq!(
        status("mcp.example", Some("https://evil.example")).await,
        StatusCode::FORBIDDEN
    );
    manager.set_allowed_origins(vec!["https://app.example".into()]);
    assert_eq!(
        status("mcp.example", Some("https://app.example")).await,
        StatusCode::OK
    );
}

#[tokio::test]
async fn foreign_host_or_origin_is_403_by_default_on_loopback() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let answer = with_headers(&client, &[("host", "evil.example.com")]).await;
    assert_refused_initialize(&server, &answer, StatusCode::FORBIDDEN).await;
    let answer = with_headers(&client, &[("origin", "https://evil.example.com")]).await;
    assert_refused_initialize(&server, &answer, StatusCode::FORBIDDEN).await;
    let answer = with_headers(&client, &[("origin", "null")]).await;
    assert_refused_initialize(&server, &answer, StatusCode::FORBIDDEN).await;
    // Loopback hosts and origins are fine.
    let port = server.addr.port().to_string();
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ] {
        assert_eq!(
            with_headers(&client, &[("host", &host)]).await.status,
            StatusCode::OK,
            "{host}"
        );
    }
    let origin = format!("http://localhost:{port}");
    assert_eq!(
        with_headers(&client, &[("origin", &origin)]).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn allow_lists_and_protection_off() {
    let server = Server::start_with(|b| b.allow_origin("https://app.example")).await;
    let client = Client::new(&server.url);
    assert_eq!(
        with_headers(&client, &[("origin", "https://app.example")])
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        with_headers(&client, &[("origin", "https://other.example")])
            .await
            .status,
        StatusCode::FORBIDDEN
    );

    let server = Server::start_with(|b| b.rebinding_protection(RebindingProtection::Off)).await;
    let client = Client::new(&server.url);
    assert_eq!(
        with_headers(&client, &[("host", "evil.example.com")])
            .await
            .status,
        StatusCode::OK
    );

    let server = Server::start_with(|b| {
        b.rebinding_protection(RebindingProtection::Off)
            .allow_host("mcp.example")
    })
    .await;
    let client = Client::new(&server.url);
    assert_eq!(
        with_headers(&client, &[("host", "mcp.example:443")])
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        with_headers(&client, &[("host", "evil.example.com")])
            .await
            .status,
        StatusCode::FORBIDDEN
    );
}
