//! A session as the `try_` methods know it ([`Session`]: its id and its
//! node), and one kept alive across the loss of its node ([`Resilient`]).
//!
//! The spec asks of a client whose session is gone ("Session Management": a
//! client that gets 404 to a request with a session id MUST start a new
//! session) what the official SDKs do not yet do (python-sdk #1676,
//! typescript-sdk #1708): on a 404 to a request that carried a session id,
//! start a new session with `initialize` and send the request again in it.
//! Behind a fleet this is what keeps a client working when the node that
//! owned its session died: the balancer sends the request to another node,
//! which answers 404, and [`Resilient::call`] re-initializes there.

use crate::client::Client;
use crate::error::Error;
use serde_json::Value;
use std::fmt;

/// An open session: its id, and the node that owns it (the id's first two
/// hex digits).
#[derive(Clone, PartialEq, Eq)]
pub struct Session {
    id: String,
}

impl Session {
    /// The session that `id` names (the `MCP-Session-Id` value).
    pub fn new(id: String) -> Session {
        Session { id }
    }

    /// The `MCP-Session-Id` header value. It grants access to the session:
    /// never log it whole.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The node that minted the id: its first two hex digits.
    pub fn node(&self) -> Option<u8> {
        node_of(&self.id)
    }
}

/// The node that minted an id (a session's or a task's): its first two hex
/// digits.
pub(crate) fn node_of(id: &str) -> Option<u8> {
    id.get(..2).and_then(|h| u8::from_str_radix(h, 16).ok())
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The node and a few digits: enough to tell sessions apart in a
        // log, not enough to use one.
        write!(f, "Session({}…)", self.id.get(..6).unwrap_or(&self.id))
    }
}

/// A session kept alive across the loss of its node: every call that finds
/// the session gone (404) starts a new one and is sent again in it, once.
pub struct Resilient {
    client: Client,
    session: Session,
    next_id: u64,
    /// Sessions started because the previous one was gone.
    pub reinitialized: Vec<Reinit>,
}

/// One re-initialization: the node of the session that was gone, and the
/// node of the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reinit {
    /// The node of the lost session.
    pub from: Option<u8>,
    /// The node that took the new session.
    pub to: Option<u8>,
}

/// How often a (re-)initialization is tried while the answer invites a
/// retry (see [`Client::open_retrying`]).
const ATTEMPTS: u32 = 20;

impl Resilient {
    /// Starts a session.
    pub async fn start(client: Client) -> Result<Resilient, Error> {
        let (session, _) = client.open_retrying(ATTEMPTS).await?;
        Ok(Resilient {
            client,
            session,
            next_id: 1,
            reinitialized: Vec::new(),
        })
    }

    /// The current session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Calls a tool; if the session is gone, starts a new one and calls it
    /// there. A tool with side effects would need the application's own
    /// idempotency here: this client sends the call again only after a 404,
    /// which the server answers before running anything.
    pub async fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, Error> {
        self.next_id += 1;
        match self
            .client
            .try_call(&self.session, self.next_id, tool, arguments.clone())
            .await
        {
            Err(Error::SessionGone) => {
                let (session, _) = self.client.open_retrying(ATTEMPTS).await?;
                self.reinitialized.push(Reinit {
                    from: self.session.node(),
                    to: session.node(),
                });
                self.session = session;
                self.next_id += 1;
                self.client
                    .try_call(&self.session, self.next_id, tool, arguments)
                    .await
            }
            other => other,
        }
    }

    /// Ends the session.
    pub async fn delete(self) -> Result<(), Error> {
        self.client.try_delete(&self.session).await
    }
}
