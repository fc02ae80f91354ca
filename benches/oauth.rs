//! What an OAuth access token costs a request before it reaches the
//! application: the resource server's own check
//! (`src/http/access/oauth/`, reached through the hidden hook
//! `sessionreg::http::oauth::__bench`, feature `bench-hooks`), one thread,
//! the authorization server's keys already in force (installed from a JWKS
//! document, as a fetch puts them).
//!
//! Group `oauth`:
//!
//! * `verify/RS256`, `verify/ES256`: a token verified with a key in force,
//!   every time (the cache of accepted tokens off): its digest, the header,
//!   the key lookup, the signature, the claims (`iss`, `aud`, `exp`,
//!   `nbf`, `sub`, `scope`), the principal and scopes built. What a token's
//!   first request costs.
//! * `cached/RS256`, `cached/ES256`: the same token again with the cache on
//!   (the default): its SHA-256 and a lookup. What its next requests cost.
//!
//! Tokens as the interop's authorization server issues them (about 600
//! bytes for RS256 with 2048-bit keys, 420 for ES256).
//!
//! `cargo bench --bench oauth --features bench-hooks,oauth`; instruction
//! counts (deterministic, unlike the times on a shared machine): the bench
//! binary under `valgrind --tool=callgrind` with `OAUTH_BENCH_COUNT=N` and
//! `OAUTH_BENCH_ONLY=verify/RS256` (say), at N = 1000 and N = 0: the
//! difference over 1000 (see `counted`; BENCHMARKS.md, "OAuth").

use criterion::{criterion_group, BenchmarkId, Criterion};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use sessionreg::http::oauth::{__bench, ResourceServer};
use std::hint::black_box;
use std::time::{SystemTime, UNIX_EPOCH};

const ISSUER: &str = "http://127.0.0.1:9";
const RESOURCE: &str = "https://mcp.example.com/mcp";

fn key(file: &str, alg: Algorithm, kid: &str) -> (EncodingKey, serde_json::Value) {
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
    let mut jwk = Jwk::from_encoding_key(&key, alg).expect("a JWK");
    jwk.common.key_id = Some(kid.to_string());
    (key, serde_json::to_value(jwk).unwrap())
}

fn token(key: &EncodingKey, alg: Algorithm, kid: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_string());
    let claims = json!({
        "iss": ISSUER, "sub": "johndoe", "aud": RESOURCE, "scope": "mcp:tools",
        "iat": now, "nbf": now - 10, "exp": now + 3600, "amr": ["pwd"],
        "client_id": "sessionreg-interop",
    });
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

fn server(cache: usize, jwks: &str) -> ResourceServer {
    let server = ResourceServer::builder(ISSUER, RESOURCE)
        .required_scope("mcp:tools")
        .token_cache(cache)
        .build()
        .expect("a valid configuration");
    assert_eq!(__bench::install_keys(&server, jwks), 2);
    server
}

fn oauth(c: &mut Criterion) {
    let (rsa, rsa_jwk) = key("rsa-a.pem", Algorithm::RS256, "rsa-a");
    let (ec, ec_jwk) = key("ec-a.pem", Algorithm::ES256, "ec-a");
    let jwks = json!({ "keys": [rsa_jwk, ec_jwk] }).to_string();
    let tokens = [
        ("RS256", token(&rsa, Algorithm::RS256, "rsa-a")),
        ("ES256", token(&ec, Algorithm::ES256, "ec-a")),
    ];
    let uncached = server(0, &jwks);
    let cached = server(1024, &jwks);
    let mut group = c.benchmark_group("oauth");
    for (alg, token) in &tokens {
        assert!(__bench::check(&uncached, token), "{alg} verifies");
        group.bench_with_input(BenchmarkId::new("verify", alg), token, |b, token| {
            b.iter(|| black_box(__bench::check(&uncached, black_box(token))))
        });
        assert!(__bench::check(&cached, token), "{alg} verifies");
        group.bench_with_input(BenchmarkId::new("cached", alg), token, |b, token| {
            b.iter(|| black_box(__bench::check(&cached, black_box(token))))
        });
    }
    group.finish();
}

criterion_group!(benches, oauth);

/// With `OAUTH_BENCH_COUNT=N` (and `OAUTH_BENCH_ONLY=verify/RS256`, say),
/// the function runs exactly N times and criterion not at all: under
/// callgrind, the difference between N and 0 divided by N is the
/// function's instructions per call (BENCHMARKS.md, "OAuth").
fn counted(n: usize, only: &str) {
    let (rsa, rsa_jwk) = key("rsa-a.pem", Algorithm::RS256, "rsa-a");
    let (ec, ec_jwk) = key("ec-a.pem", Algorithm::ES256, "ec-a");
    let jwks = json!({ "keys": [rsa_jwk, ec_jwk] }).to_string();
    let (kind, alg) = only
        .split_once('/')
        .expect("OAUTH_BENCH_ONLY=verify|cached/RS256|ES256");
    let token = match alg {
        "RS256" => token(&rsa, Algorithm::RS256, "rsa-a"),
        "ES256" => token(&ec, Algorithm::ES256, "ec-a"),
        other => panic!("no {other}"),
    };
    let server = server(if kind == "cached" { 1024 } else { 0 }, &jwks);
    // The first check fills the cache: not counted in either run's
    // difference.
    assert!(__bench::check(&server, &token));
    for _ in 0..n {
        assert!(black_box(__bench::check(&server, black_box(&token))));
    }
    println!("{only}: {n} checks");
}

fn main() {
    if let Ok(n) = std::env::var("OAUTH_BENCH_COUNT") {
        let only = std::env::var("OAUTH_BENCH_ONLY").unwrap_or_else(|_| "verify/RS256".into());
        counted(n.parse().expect("a count"), &only);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
