//! The examples serve every connection with `TCP_NODELAY` (`listen.rs`),
//! read back from the kernel on the socket the server accepted, not
//! inferred from a timing: without it, an SSE answer's last chunk waits for
//! the client's delayed ACK (about 40 ms a keep-alive `tools/call`).

mod support;

use mcp_test_client::accepted_nodelay;
use support::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test]
async fn the_examples_set_nodelay_on_every_connection_they_accept() {
    let server = Server::start(|b| b).await;
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        // One whole request and its answer: the connection is being served.
        let request = format!("GET /metrics HTTP/1.1\r\nhost: {addr}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = [0u8; 12];
        stream.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"HTTP/1.1 200");
        let client = stream.into_std().unwrap();
        assert!(
            accepted_nodelay(&client).unwrap(),
            "the accepted socket has TCP_NODELAY"
        );
        // The control: the client's own end was never set.
        assert!(!client.nodelay().unwrap());
    }
    server.stop().await;
}
