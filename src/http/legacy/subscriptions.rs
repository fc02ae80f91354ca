//! What a legacy session listens to, so that an application publishes once
//! for both eras ([`Publisher`](crate::http::Publisher)): list changes on
//! its standalone `GET` stream while one is open ([`ListChanges`]), and a
//! resource's updates once it has `resources/subscribe`d to it
//! ([`subscribe`]), up to the same bound on URIs a listen filter has. The
//! request still goes to the application, which answers it as before.

use crate::http::listen::{Member, Topic, Topics};
use crate::http::session::entry::SessionEntry;
use crate::http::wire::jsonrpc::Request;
use crate::SessionId;
use std::sync::Arc;

/// A session's standalone stream joined the three list-change topics; it
/// leaves them when this (held by the stream) is dropped.
pub(super) struct ListChanges {
    topics: Arc<Topics>,
    member: Member,
}

const KINDS: [Topic; 3] = [Topic::Tools, Topic::Prompts, Topic::Resources];

impl ListChanges {
    pub(super) fn join(topics: &Arc<Topics>, id: SessionId) -> ListChanges {
        let member = Member::Session(id);
        for topic in &KINDS {
            topics.join(topic, &member);
        }
        ListChanges {
            topics: Arc::clone(topics),
            member,
        }
    }
}

impl Drop for ListChanges {
    fn drop(&mut self) {
        for topic in &KINDS {
            self.topics.leave(topic, &self.member);
        }
    }
}

/// `resources/subscribe` and `resources/unsubscribe`: the session joins or
/// leaves the resource's topic (at most `max` resources per session: past
/// it a subscribe is not recorded, and the application still answers it).
pub(super) fn subscribe<S>(
    topics: &Topics,
    id: SessionId,
    entry: &SessionEntry<S>,
    request: &Request,
    max: usize,
) {
    #[derive(serde::Deserialize)]
    struct Params {
        uri: String,
    }
    let joining = match request.method.as_str() {
        "resources/subscribe" => true,
        "resources/unsubscribe" => false,
        _ => return,
    };
    let Ok(Params { uri }) = request.params_as::<Params>() else {
        return;
    };
    let mut uris = entry.uris.lock().unwrap_or_else(|e| e.into_inner());
    let at = uris.iter().position(|u| **u == *uri);
    let topic = Topic::Uri(uri.into_boxed_str());
    match (joining, at) {
        (true, None) if uris.len() < max => {
            topics.join(&topic, &Member::Session(id));
            if let Topic::Uri(uri) = topic {
                uris.push(uri);
            }
        }
        (false, Some(at)) => {
            uris.swap_remove(at);
            topics.leave(&topic, &Member::Session(id));
        }
        _ => {}
    }
}
