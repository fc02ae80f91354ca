//! What a legacy session listens to, so that an application publishes once
//! for both eras ([`Publisher`](crate::http::Publisher)): list changes on
//! its standalone `GET` stream while one is open ([`ListChanges`]), and a
//! resource's updates once it has `resources/subscribe`d to it
//! ([`subscribe`]), within the bounds a listen filter has. The request
//! still goes to the application, which answers it as before, unless a
//! bound refuses it first.

use crate::http::listen::{subscribed_uri, ListKind, Listeners, Member, Topic, Topics};
use crate::http::session::entry::SessionEntry;
use crate::http::wire::config::Config;
use crate::http::wire::jsonrpc::{Request, RpcError};
use crate::http::wire::reject::Reject;
use crate::SessionId;
use std::sync::Arc;

/// A session's standalone stream joined the three list-change topics; it
/// leaves them when this (held by the stream) is dropped.
pub(super) struct ListChanges {
    topics: Arc<Topics>,
    member: Member,
}

impl ListChanges {
    pub(super) fn join(topics: &Arc<Topics>, id: SessionId) -> ListChanges {
        let member = Member::Session(id);
        for kind in ListKind::ALL {
            topics.join(&Topic::List(kind), &member);
        }
        ListChanges {
            topics: Arc::clone(topics),
            member,
        }
    }
}

impl Drop for ListChanges {
    fn drop(&mut self) {
        for kind in ListKind::ALL {
            self.topics.leave(&Topic::List(kind), &self.member);
        }
    }
}

/// `resources/subscribe` and `resources/unsubscribe`: the session joins or
/// leaves the resource's topic, within the bounds a listen filter has (one
/// URI's bytes, the URIs and their bytes per session; and the bytes every
/// filter and session keep, in all and per principal). Past a bound the
/// request is refused here, saying which (`Err`), and the application is
/// not asked; otherwise it answers the request as before. A session that
/// has ended joins nothing (see [`Subscriptions`](crate::http::session::entry::Subscriptions)).
///
/// `id` gives the session's id, asked for only by those two methods (a
/// handle rebuilds it from the slot: a few loads every other request need
/// not pay).
pub(super) fn subscribe<S>(
    listeners: &Listeners,
    id: impl FnOnce() -> SessionId,
    entry: &SessionEntry<S>,
    request: &Request,
    bounds: &Config,
) -> Result<(), Reject> {
    let joining = match request.method.as_str() {
        "resources/subscribe" => true,
        "resources/unsubscribe" => false,
        _ => return Ok(()),
    };
    let uri = subscribed_uri(request.params_text(), bounds.listen_uri_bytes)
        .map_err(Reject::Malformed)?;
    let topics = &listeners.topics;
    let member = Member::Session(id());
    let mut subscriptions = entry
        .subscriptions
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if subscriptions.closed {
        // Ended: its cleanup ran (or is running) and left every topic.
        return Ok(());
    }
    let at = subscriptions.uris.iter().position(|(u, _)| **u == *uri);
    match (joining, at) {
        (true, None) => {
            if subscriptions.uris.len() >= bounds.listen_uris {
                return Err(Reject::Malformed(RpcError::invalid_params(format!(
                    "this session subscribes to {} resources already (listen_uris)",
                    bounds.listen_uris
                ))));
            }
            if subscriptions.bytes + uri.len() > bounds.listen_filter_bytes {
                return Err(Reject::Malformed(RpcError::invalid_params(format!(
                    "this session's subscriptions would pass {} bytes of URIs (listen_filter_bytes)",
                    bounds.listen_filter_bytes
                ))));
            }
            let charge = listeners
                .budget
                .charge(entry.owner.as_ref(), 1, uri.len())?;
            let uri = topics.intern(&uri);
            topics.join(&Topic::Uri(Arc::clone(&uri)), &member);
            subscriptions.bytes += uri.len();
            subscriptions.uris.push((uri, charge));
        }
        (false, Some(at)) => {
            let (uri, charge) = subscriptions.uris.swap_remove(at);
            subscriptions.bytes -= uri.len();
            topics.leave(&Topic::Uri(uri), &member);
            drop(subscriptions);
            drop(charge);
        }
        _ => {}
    }
    Ok(())
}
