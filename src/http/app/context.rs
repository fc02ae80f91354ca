//! What a handler knows about the request it serves: [`Context`], and the
//! view of the request its era gives ([`Era`]).

use super::legacy_request::LegacyRequest;
use super::modern_request::ModernRequest;
use crate::http::access::scopes::Scopes;
use crate::http::wire::principal::Principal;
use crate::http::wire::protocol::Version;
use crate::SessionId;
use http::request::Parts;
use std::fmt;
use std::future::Future;
use tokio_util::sync::CancellationToken;

/// What a handler knows about the request it serves: the HTTP request's
/// head, its principal, its cancellation, and its era's view of it
/// ([`Context::era`]).
pub struct Context<S: Send + Sync + 'static> {
    pub(crate) request: Parts,
    /// Cancelled when this request's work must stop (see `running.rs`).
    pub(crate) cancel: CancellationToken,
    era: In<S>,
}

/// The era a request is in, with what it brings there.
enum In<S: Send + Sync + 'static> {
    Legacy(LegacyRequest<S>),
    Modern(ModernRequest),
}

/// Which era a request is in, and its view of the request there.
#[derive(Debug)]
pub enum Era<'a, S: Send + Sync + 'static> {
    /// A legacy request (protocol versions up to 2025-11-25), in its
    /// session.
    Legacy(&'a LegacyRequest<S>),
    /// A 2026-07-28 request: no session; what it carries.
    Modern(&'a ModernRequest),
}

impl<S: Send + Sync + 'static> Context<S> {
    /// The context of a request in a session.
    pub(crate) fn for_legacy(
        request: Parts,
        cancel: CancellationToken,
        legacy: LegacyRequest<S>,
    ) -> Self {
        Context {
            request,
            cancel,
            era: In::Legacy(legacy),
        }
    }

    /// The context of a 2026-07-28 request.
    pub(crate) fn for_modern(
        request: Parts,
        cancel: CancellationToken,
        modern: ModernRequest,
    ) -> Self {
        Context {
            request,
            cancel,
            era: In::Modern(modern),
        }
    }

    /// Which era the request is in, and its view of the request there.
    pub fn era(&self) -> Era<'_, S> {
        match &self.era {
            In::Legacy(legacy) => Era::Legacy(legacy),
            In::Modern(modern) => Era::Modern(modern),
        }
    }

    /// The request's session, when it is a legacy one.
    pub fn legacy(&self) -> Option<&LegacyRequest<S>> {
        match &self.era {
            In::Legacy(legacy) => Some(legacy),
            In::Modern(_) => None,
        }
    }

    /// What a 2026-07-28 request carries (its client capabilities, log
    /// level, input responses...); `None` for a request in a session.
    pub fn modern(&self) -> Option<&ModernRequest> {
        match &self.era {
            In::Legacy(_) => None,
            In::Modern(modern) => Some(modern),
        }
    }

    /// The session's id; `None` for a modern (2026-07-28) request.
    pub fn id(&self) -> Option<SessionId> {
        self.legacy().map(LegacyRequest::id)
    }

    /// The application's state of this session; `None` for a modern
    /// request.
    pub fn state(&self) -> Option<&S> {
        self.legacy().map(LegacyRequest::state)
    }

    /// The HTTP request's head: headers and extensions (see
    /// [`App::open`](crate::http::App::open)).
    pub fn request(&self) -> &Parts {
        &self.request
    }

    /// The principal of the request, as the
    /// [authenticator](crate::http::Builder::authenticator) (or a middleware
    /// in front) put it into its extensions: the session's owner. `None`
    /// without one.
    pub fn principal(&self) -> Option<&Principal> {
        Principal::of(&self.request)
    }

    /// The scopes the request's access token grants, as the OAuth
    /// resource server (feature `oauth`), a middleware in front or an
    /// authenticator put them into its extensions; `None` when nothing did
    /// (static bearer tokens grant no scopes).
    pub fn scopes(&self) -> Option<&Scopes> {
        Scopes::of(&self.request)
    }

    /// The protocol version the request was sent at (for the `initialize`
    /// that opens a session, the version the layer negotiated for it).
    pub fn version(&self) -> Version {
        match &self.era {
            In::Legacy(legacy) => Version::Legacy(legacy.version()),
            In::Modern(_) => Version::Modern,
        }
    }

    /// Resolves when this request's work must stop: its session ended (by
    /// any path: `DELETE`, idle timeout, a failed handler, shutdown), the
    /// client cancelled it (`notifications/cancelled`), it ran past the
    /// [handler timeout](crate::http::Builder::handler_timeout), or, at
    /// 2026-07-28, the client went away. (A client that merely disconnects
    /// from a request in a session does not cancel it: at 2025-11-25
    /// disconnection is not cancellation.)
    ///
    /// The handler's own future is dropped then, wherever it waits: a
    /// handler needs this only for work it handed elsewhere, such as a
    /// spawned task (see [`cancellation`](Context::cancellation)).
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + '_ {
        self.cancel.cancelled()
    }

    /// Whether this request has been cancelled (see
    /// [`cancelled`](Context::cancelled)).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// This request's cancellation token, to hand to work the handler
    /// spawns: it is cancelled when [`cancelled`](Context::cancelled)
    /// resolves.
    pub fn cancellation(&self) -> CancellationToken {
        self.cancel.clone()
    }
}

impl<S: Send + Sync + 'static> fmt::Debug for Context<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.id())
            .field("version", &self.version())
            .field("principal", &self.principal())
            .finish()
    }
}
