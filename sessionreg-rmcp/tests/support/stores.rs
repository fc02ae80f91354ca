//! rmcp's two external stores, in memory, as a fleet would share them (a
//! database, Redis): the session store rmcp writes at `initialize` and
//! reads to restore a session it does not hold, and an SSE event store.

use futures::stream;
use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::{
    EventStore, EventStoreError, EventStream, ServerSseMessage, SessionState, SessionStore,
    SessionStoreError,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// rmcp's `SessionStore` in memory; counts the loads (restore attempts).
#[derive(Default)]
pub struct Sessions {
    states: Mutex<HashMap<String, SessionState>>,
    pub loads: AtomicUsize,
}

impl Sessions {
    pub fn ids(&self) -> Vec<String> {
        self.states.lock().unwrap().keys().cloned().collect()
    }
}

#[async_trait::async_trait]
impl SessionStore for Sessions {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        self.loads.fetch_add(1, Ordering::Relaxed);
        Ok(self.states.lock().unwrap().get(id).cloned())
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        self.states
            .lock()
            .unwrap()
            .insert(id.to_owned(), state.clone());
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        self.states.lock().unwrap().remove(id);
        Ok(())
    }
}

/// One stored event: its stream, and the event with the id it was given.
#[derive(Clone)]
struct Stored {
    stream: String,
    event: ServerSseMessage,
}

/// rmcp's `EventStore` in memory, ids `ev-N`. A replay is what a
/// distributed log gives (rmcp's docs allow it): the stream's events after
/// the one named, and then the ones stored later, until the stream's
/// JSON-RPC answer (a response or an error) has gone out. It counts
/// replays. Clones share the store.
#[derive(Clone)]
pub struct Events(Arc<Log>);

pub struct Log {
    log: Mutex<Vec<Stored>>,
    /// How many events are stored, for replays waiting for more.
    stored: watch::Sender<usize>,
    pub replays: AtomicUsize,
}

impl Default for Events {
    fn default() -> Self {
        Events(Arc::new(Log {
            log: Mutex::default(),
            stored: watch::Sender::new(0),
            replays: AtomicUsize::new(0),
        }))
    }
}

impl std::ops::Deref for Events {
    type Target = Log;

    fn deref(&self) -> &Log {
        &self.0
    }
}

impl Log {
    /// The id of every stored event and whether it is an answer.
    pub fn ids(&self) -> Vec<(String, bool)> {
        let log = self.log.lock().unwrap();
        log.iter()
            .map(|s| (s.event.event_id.clone().unwrap(), is_answer(&s.event)))
            .collect()
    }

    /// The stream of the event `id`, and the next position after it.
    fn find(&self, id: &str) -> Option<(String, usize)> {
        let log = self.log.lock().unwrap();
        let at = log
            .iter()
            .position(|s| s.event.event_id.as_deref() == Some(id))?;
        Some((log[at].stream.clone(), at + 1))
    }

    /// The first event of `stream` at or after `from`, and its position.
    fn next_of(&self, stream: &str, from: usize) -> Option<(ServerSseMessage, usize)> {
        let log = self.log.lock().unwrap();
        (from..log.len())
            .find(|&i| log[i].stream == stream)
            .map(|i| (log[i].event.clone(), i + 1))
    }
}

fn is_answer(event: &ServerSseMessage) -> bool {
    matches!(
        event.message.as_deref(),
        Some(ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))
    )
}

#[async_trait::async_trait]
impl EventStore for Events {
    async fn store_event(
        &self,
        stream: &str,
        event: &ServerSseMessage,
    ) -> Result<String, EventStoreError> {
        let mut log = self.log.lock().unwrap();
        let id = format!("ev-{}", log.len());
        let mut event = event.clone();
        event.event_id = Some(id.clone());
        log.push(Stored {
            stream: stream.to_owned(),
            event,
        });
        self.stored.send_replace(log.len());
        Ok(id)
    }

    async fn replay_events_after(&self, last: &str) -> Result<EventStream, EventStoreError> {
        self.replays.fetch_add(1, Ordering::Relaxed);
        let Some((stream, from)) = self.find(last) else {
            return Err("no such event".into());
        };
        let events = self.clone();
        let more = self.stored.subscribe();
        let replay = stream::unfold(
            (events, stream, from, more, false),
            |(events, stream, from, mut more, done)| async move {
                if done {
                    return None;
                }
                loop {
                    if let Some((event, next)) = events.next_of(&stream, from) {
                        let done = is_answer(&event);
                        return Some((event, (events, stream, next, more, done)));
                    }
                    more.changed().await.ok()?;
                }
            },
        );
        Ok(Box::pin(replay))
    }
}
