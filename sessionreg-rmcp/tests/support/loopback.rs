//! A router served on 127.0.0.1:0 for one test, as the examples serve
//! theirs (`crate::listen::serve`: `TCP_NODELAY`), until the test drops it.
//! Included by the tests that serve a handler of their own
//! (`#[path = "support/loopback.rs"] mod loopback;`, beside `mod listen;`).

use tokio_util::sync::CancellationToken;

/// A router being served; stops when dropped.
pub struct Loopback {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    stop: CancellationToken,
}

impl Loopback {
    /// Serves `router` on a free loopback port.
    pub async fn serve(router: axum::Router) -> Loopback {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let stop = CancellationToken::new();
        let stopped = stop.clone().cancelled_owned();
        tokio::spawn(async move {
            let _ = crate::listen::serve(listener, router, stopped).await;
        });
        Loopback { url, stop }
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
