//! A forked child must not seal `requestState`s with its parent's next
//! nonces: AES-GCM under one key with a repeated nonce gives away its
//! authentication key. The nonces come from the same fork-aware generator
//! as id secrets (`tests/fork.rs`), so a child reseeds before it draws.
//!
//! Its own test binary, with one test: it forks, and a child of a process
//! with other test threads running would be a riskier place to run code.
//! Parent and child each serve the one manager built before the fork, on a
//! current-thread runtime of their own (so every seal happens on the thread
//! that forked, whose generator the child inherits), over a real socket.
#![cfg(all(unix, feature = "http"))]

mod http_support;

use base64::Engine as _;
use http_support::{with_meta, Client};
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{self, Message, RpcError};
use sessionreg::http::modern::{InputRequests, RequestStateKeys};
use sessionreg::http::{App, Context, HandlerError, Reply, SessionManager};

const STATES: usize = 16;
/// A sealed state: base64url of key id (1), nonce (12), ciphertext, tag.
const NONCE: std::ops::Range<usize> = 1..13;

/// `ask` answers every call with an input request and a state to seal.
struct Ask;

impl App for Ask {
    type Session = ();

    fn open(&self, _: &jsonrpc::Request, _: &http::request::Parts) -> Result<(), RpcError> {
        Ok(())
    }

    async fn handle(&self, ctx: Context<()>, message: Message) -> Result<Reply, HandlerError> {
        let Message::Request(_) = message else {
            return Ok(Reply::Accepted);
        };
        let modern = ctx.modern().expect("2026-07-28");
        let asked = InputRequests::new().request_state(b"round 1".to_vec());
        Ok(match modern.input_required(asked) {
            Ok(asked) => Reply::InputRequired(asked),
            Err(error) => Reply::Error(error),
        })
    }
}

/// Serves `manager` on a current-thread runtime of this thread and seals
/// `n` states through it; returns their nonces.
fn nonces(manager: &SessionManager<Ask>, n: usize) -> Vec<[u8; 12]> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let url = http_support::serve_manager(manager).await;
        let client = Client::new(&url);
        let body = with_meta(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                     "params": { "name": "ask", "arguments": {} } }));
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let answer = client
                .post_modern(&body, &[("mcp-method", "tools/call"), ("mcp-name", "ask")])
                .await;
            let result: Value = answer.json()["result"].clone();
            let token = result["requestState"].as_str().expect("a sealed state");
            let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(token)
                .unwrap();
            out.push(raw[NONCE].try_into().unwrap());
        }
        out
    })
}

#[test]
fn a_forked_child_seals_with_other_nonces_than_its_parent() {
    let manager = SessionManager::builder(Ask)
        .request_state_keys(RequestStateKeys::new(1, [7; 32]))
        .build()
        .unwrap();
    // Seal before forking: the child inherits a generator in use.
    assert_eq!(nonces(&manager, 2).len(), 2);
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe` writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child serves and seals on a runtime of its own, writes to
    // the pipe and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let sealing = std::panic::AssertUnwindSafe(|| nonces(&manager, STATES));
        let code = match std::panic::catch_unwind(sealing) {
            Ok(sealed) => {
                let bytes: Vec<u8> = sealed.concat();
                // SAFETY: writes `bytes.len()` bytes from a live buffer.
                let written = unsafe { libc::write(fds[1], bytes.as_ptr().cast(), bytes.len()) };
                i32::from(written != bytes.len() as isize)
            }
            Err(_) => 2,
        };
        // SAFETY: ends the child without running the parent's atexit or
        // test-harness code.
        unsafe { libc::_exit(code) };
    }
    let parent = nonces(&manager, STATES);
    let mut bytes = [0u8; 12 * STATES];
    let mut read = 0;
    while read < bytes.len() {
        // SAFETY: reads into the unread rest of a live buffer.
        let n = unsafe {
            libc::read(
                fds[0],
                bytes[read..].as_mut_ptr().cast(),
                bytes.len() - read,
            )
        };
        assert!(n > 0, "the child wrote {read} of {} bytes", bytes.len());
        read += n as usize;
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{status}"
    );
    let child: Vec<[u8; 12]> = bytes.chunks(12).map(|c| c.try_into().unwrap()).collect();
    for nonce in &child {
        assert!(
            !parent.contains(nonce),
            "the child sealed with a nonce its parent also used"
        );
    }
}
