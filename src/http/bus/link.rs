//! The bus's task ([`LinkTask`]): it makes the two connections a node needs
//! (one multiplexed connection for `PUBLISH`, `SET` and `PING`, one
//! subscribed to the fleet's channel), keeps them while they work, and
//! makes them again, with backoff, when they do not.
//!
//! While they work it does four things, one at a time: delivers what the
//! channel brings (another node's publication to this node's listeners;
//! its own echo dropped), hands the queued publications of this node to
//! Redis (a pipeline of `PUBLISH`es, as many as are waiting, up to a
//! batch), checks both connections every heartbeat (a `PING` on the
//! subscription's, a read of the record's epoch and a count of the fleet's
//! nodes on the other, each
//! answered within the timeout), so a Redis that went away without a word
//! is found too, and reads the record's epoch again when a redemption
//! found this node's copy behind.
//!
//! The record's epoch (`epoch.rs`): before the link is marked up, the task
//! reads it, making a new one if there is none or if it is another Redis
//! instance's (every node of the fleet reads the same). A change from the
//! one it had is said in one log line and counted
//! (`sessionreg_bus_record_resets_total`): states sealed before are refused
//! (`record.rs`, which does not wait for this task to find out).
//!
//! The link's state is one for all uses (publishing, listening, the
//! record of used states) and changes only here: up once both connections
//! work and the channel is subscribed (then listen streams may open); down
//! at the first failure of either (then every listen stream is ended,
//! gracefully, and no new one opens, and single-use states are refused).
//! Each change is one log line; attempts in between are DEBUG.

use super::epoch::{self, Adopted};
use super::fleet_rates;
use super::parts::BusParts;
use super::wire::{self, Heard, Replays, Sender};
use crate::http::listen::bus::FrameRejection;
use crate::http::listen::{Shared, WeakPublisher};
use crate::http::wire::unix_time::unix_ms;
use crate::Reason;
use futures_util::StreamExt;
use redis::aio::{MultiplexedConnection, PubSubSink, PubSubStream};
use redis::AsyncConnectionConfig;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{timeout, Instant, MissedTickBehavior};

/// Publications handed to Redis in one pipeline, at most.
const BATCH: usize = 64;

/// The bus's task: everything it owns.
pub(super) struct LinkTask {
    pub(super) client: redis::Client,
    pub(super) shared: Arc<BusParts>,
    /// The task ends when the publisher is gone.
    pub(super) publisher: WeakPublisher,
    pub(super) queue: mpsc::Receiver<Shared>,
    /// This node's frames: its origin and sequence numbers (`wire.rs`).
    pub(super) sender: Sender,
    /// The other nodes' frames heard: replays are told by them.
    pub(super) replays: Replays,
    /// The causes of dropped frames already said at WARN (each once).
    pub(super) said_rejected: Vec<FrameRejection>,
    pub(super) backoff: (Duration, Duration),
    pub(super) heartbeat: Duration,
    /// The Redis URL without its password, for the log lines.
    pub(super) url: String,
}

/// The two connections of a link that is up.
struct Connected {
    commands: MultiplexedConnection,
    sink: PubSubSink,
    stream: PubSubStream,
}

/// Why a link that was up ended.
enum LinkEnd {
    /// The publisher (every clone) is gone: so is the bus.
    PublisherGone,
    /// A connection failed; why.
    Down(String),
}

impl LinkTask {
    /// Runs the bus until its publisher is gone.
    pub(super) async fn run(mut self) {
        let mut wait = self.backoff.0;
        // Whether the link has been up before (its next coming up is a
        // reconnection) and whether its being down was said (a link that
        // was up and failed says so in `went_down`).
        let (mut ever_up, mut said_down) = (false, false);
        loop {
            if self.publisher.upgrade().is_none() {
                return;
            }
            match self.connect().await {
                Ok(connections) => {
                    wait = self.backoff.0;
                    match self.serve(connections, &mut ever_up).await {
                        LinkEnd::PublisherGone => return,
                        LinkEnd::Down(why) => {
                            self.went_down(&why);
                            said_down = true;
                        }
                    }
                }
                Err(why) if !said_down => {
                    said_down = true;
                    tracing::warn!(
                        url = %self.url,
                        %why,
                        "fleet bus down: cannot reach Redis; listen streams and single-use \
                         requestStates are refused (503) until it is back; retrying with backoff"
                    );
                }
                Err(why) => tracing::debug!(url = %self.url, %why, "fleet bus: still down"),
            }
            tokio::time::sleep(jittered(wait)).await;
            wait = (wait * 2).min(self.backoff.1);
        }
    }

    /// Makes both connections and subscribes to the channel.
    async fn connect(&self) -> Result<Connected, String> {
        let limit = self.shared.timeout;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(limit))
            .set_response_timeout(Some(limit));
        let commands = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| e.to_string())?;
        let pubsub = within(limit, self.client.get_async_pubsub()).await?;
        let (mut sink, stream) = pubsub.split();
        within(limit, sink.subscribe(&self.shared.channel)).await?;
        Ok(Connected {
            commands,
            sink,
            stream,
        })
    }

    /// Serves a link that just came up, until it ends.
    async fn serve(&mut self, mut connections: Connected, ever_up: &mut bool) -> LinkEnd {
        // What this node lost while it was down is said before its own
        // listeners may open again.
        if let Err(why) = self.say_lost(&mut connections.commands).await {
            return LinkEnd::Down(why);
        }
        if let Err(why) = self.read_epoch(&mut connections.commands).await {
            return LinkEnd::Down(why);
        }
        if let Err(why) = self.count_nodes(&mut connections.commands).await {
            return LinkEnd::Down(why);
        }
        let loaded = within(
            self.shared.timeout,
            fleet_rates::load_script(&self.shared, &mut connections.commands),
        );
        if let Err(why) = loaded.await {
            return LinkEnd::Down(format!("loading the rate limits' script: {why}"));
        }
        self.check_eviction(&mut connections.commands).await;
        self.shared
            .commands
            .store(Some(Arc::new(connections.commands.clone())));
        let Some(publisher) = self.publisher.upgrade() else {
            return LinkEnd::PublisherGone;
        };
        if publisher.bus_up() {
            if *ever_up {
                self.shared.link.reconnected();
                tracing::info!(url = %self.url, channel = %self.shared.channel, "fleet bus up again");
            } else {
                tracing::info!(url = %self.url, channel = %self.shared.channel, "fleet bus up");
            }
            *ever_up = true;
        }
        drop(publisher);
        let ended = self.pump(&mut connections).await;
        self.shared.commands.store(None);
        ended
    }

    /// The link went down: listen streams end and are refused until it is
    /// back (one log line).
    fn went_down(&self, why: &str) {
        let Some(publisher) = self.publisher.upgrade() else {
            return;
        };
        let ended = publisher.bus_down().unwrap_or(0);
        tracing::warn!(
            url = %self.url,
            %why,
            listen_streams_ended = ended,
            "fleet bus down: listen streams ended and, with single-use requestStates, \
             refused (503) until it is back; reconnecting with backoff"
        );
    }

    /// Delivers, publishes and checks, until a connection fails or the
    /// publisher is gone.
    async fn pump(&mut self, connections: &mut Connected) -> LinkEnd {
        let start = Instant::now() + self.heartbeat;
        let mut heartbeat = tokio::time::interval_at(start, self.heartbeat);
        heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            tokio::select! {
                message = connections.stream.next() => match message {
                    Some(message) => self.heard(message.get_payload_bytes()),
                    None => return LinkEnd::Down("the subscription's connection closed".into()),
                },
                n = self.queue.recv_many(&mut batch, BATCH) => {
                    if n == 0 {
                        return LinkEnd::PublisherGone;
                    }
                    let keys = self.shared.keys.load();
                    let now = unix_ms();
                    let frames: Vec<Vec<u8>> = batch
                        .drain(..)
                        .map(|p| {
                            self.sender
                                .publication(&keys, &self.shared.channel, &p.publication, now)
                        })
                        .collect();
                    drop(keys);
                    if let Err(why) = self.publish(&mut connections.commands, &frames).await {
                        self.shared.link.dropped(n as u64);
                        self.shared.lost.store(true, Ordering::Relaxed);
                        return LinkEnd::Down(why);
                    }
                    self.shared.link.published(n as u64);
                    if let Err(why) = self.say_lost(&mut connections.commands).await {
                        return LinkEnd::Down(why);
                    }
                },
                () = self.shared.epoch_behind.notified() => {
                    if let Err(why) = self.read_epoch(&mut connections.commands).await {
                        return LinkEnd::Down(why);
                    }
                },
                _ = heartbeat.tick() => {
                    self.replays.forget(unix_ms());
                    if let Err(why) = self.check(connections).await {
                        return LinkEnd::Down(why);
                    }
                    if let Err(why) = self.say_lost(&mut connections.commands).await {
                        return LinkEnd::Down(why);
                    }
                },
            }
        }
    }

    /// What a frame from the channel says, done.
    fn heard(&mut self, payload: &[u8]) {
        let heard = wire::read(
            &self.shared.keys.load(),
            &self.shared.channel,
            &self.sender,
            &mut self.replays,
            payload,
            unix_ms(),
        );
        match heard {
            Heard::Echo => {}
            Heard::Publication(publication) => {
                if let Some(publisher) = self.publisher.upgrade() {
                    publisher.receive(publication);
                }
            }
            Heard::Lost => {
                if let Some(publisher) = self.publisher.upgrade() {
                    let ended = publisher.end_listeners(Reason::Unavailable);
                    tracing::info!(
                        listen_streams_ended = ended,
                        "fleet bus: another node lost publications; listen streams ended so \
                         that their clients re-listen and refetch"
                    );
                }
            }
            Heard::Rejected(cause) => {
                self.shared.link.frame_rejected(cause);
                if self.said_rejected.contains(&cause) {
                    tracing::debug!(
                        cause = cause.as_str(),
                        bytes = payload.len(),
                        "fleet bus: a frame dropped unread"
                    );
                } else {
                    self.said_rejected.push(cause);
                    tracing::warn!(
                        cause = cause.as_str(),
                        bytes = payload.len(),
                        "fleet bus: a frame on the channel was dropped unread (not sealed under \
                         the fleet's keys, sent too long ago, or heard already): another client \
                         of the Redis publishes on it, or a node holds other keys; counted in \
                         sessionreg_bus_frames_rejected_total, said once per cause"
                    );
                }
            }
        }
    }

    /// Hands `frames` to Redis, in one pipeline.
    async fn publish(
        &self,
        commands: &mut MultiplexedConnection,
        frames: &[Vec<u8>],
    ) -> Result<(), String> {
        let mut pipe = redis::pipe();
        for frame in frames {
            pipe.cmd("PUBLISH")
                .arg(&self.shared.channel)
                .arg(frame.as_slice())
                .ignore();
        }
        within(self.shared.timeout, pipe.query_async::<()>(commands)).await
    }

    /// If this node lost publications, tells every node (their listeners
    /// may have missed one); marked lost again if that fails.
    async fn say_lost(&mut self, commands: &mut MultiplexedConnection) -> Result<(), String> {
        if !self.shared.lost.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        let frame = self
            .sender
            .lost(&self.shared.keys.load(), &self.shared.channel, unix_ms());
        let said = self.publish(commands, &[frame]).await;
        match &said {
            Ok(()) => tracing::warn!(
                "fleet bus: this node could not hand publications to Redis; every node's \
                 listen streams are told to end so that their clients refetch"
            ),
            Err(_) => self.shared.lost.store(true, Ordering::Relaxed),
        }
        said
    }

    /// Reads the record's epoch (making a new one if there is none, or if
    /// it is another instance's): the one in force from now on. A change
    /// is said in one log line and counted.
    async fn read_epoch(&self, commands: &mut MultiplexedConnection) -> Result<(), String> {
        let adopted = within(
            self.shared.timeout,
            epoch::adopt(commands, &self.shared.epoch_key),
        )
        .await??;
        let now = adopted.epoch();
        // Relaxed: the record reads it alone (see `Record::epoch`); the link
        // is marked up (SeqCst) after the first store.
        let before = self.shared.epoch.swap(now, Ordering::Relaxed);
        if before == 0 || before == now {
            return Ok(());
        }
        self.shared.link.record_reset();
        let why = match adopted {
            Adopted::Made(_) => "its epoch key was gone (flushed, or a Redis without the data)",
            Adopted::Replaced(_) => {
                "its epoch was another Redis process's (restarted from a snapshot or an AOF, \
                 or failed over to a replica)"
            }
            Adopted::Kept(_) => "another node found it lost first",
        };
        tracing::warn!(
            url = %self.url,
            why,
            "fleet bus: the record of used single-use requestStates may have lost entries; \
             every state sealed before is refused (expired), and new ones are sealed in a new epoch"
        );
        Ok(())
    }

    /// Says this node alive in the fleet's set of nodes (for three
    /// heartbeats and a timeout) and counts the nodes there (`fleet_rates.rs`).
    async fn count_nodes(&self, commands: &mut MultiplexedConnection) -> Result<(), String> {
        let alive = self.heartbeat * 3 + self.shared.timeout;
        within(
            self.shared.timeout,
            fleet_rates::count_nodes(&self.shared, commands, alive),
        )
        .await
        .map(drop)
        .map_err(|why| format!("counting the fleet's nodes: {why}"))
    }

    /// Warns (once per link up) if Redis may evict keys: a used state's key
    /// evicted early would let its state open again.
    async fn check_eviction(&self, commands: &mut MultiplexedConnection) {
        let info = within(
            self.shared.timeout,
            redis::cmd("INFO")
                .arg("memory")
                .query_async::<String>(commands),
        )
        .await;
        let policy = info.ok().and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("maxmemory_policy:"))
                .map(|policy| policy.trim().to_string())
        });
        match policy.as_deref() {
            Some("noeviction") => {}
            Some(policy) => tracing::warn!(
                url = %self.url,
                policy,
                "fleet bus: Redis may evict keys (maxmemory-policy is not noeviction): a used \
                 single-use requestState's key evicted early lets its state open again"
            ),
            None => tracing::debug!(
                url = %self.url,
                "fleet bus: Redis's maxmemory-policy could not be read"
            ),
        }
    }

    /// Checks each connection within the timeout: the record's epoch read
    /// on the commands connection (still the one in force, and this
    /// instance's?), a `PING` on the subscription's.
    async fn check(&self, connections: &mut Connected) -> Result<(), String> {
        self.read_epoch(&mut connections.commands).await?;
        self.count_nodes(&mut connections.commands).await?;
        within(self.shared.timeout, connections.sink.ping::<redis::Value>())
            .await
            .map_err(|why| format!("the subscription's connection: {why}"))?;
        Ok(())
    }
}

/// `future`'s value, or why not: its error, or that Redis did not answer
/// within `limit`.
async fn within<T>(
    limit: Duration,
    future: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, String> {
    match timeout(limit, future).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(format!("Redis did not answer within {limit:?}")),
    }
}

/// `wait` and up to a quarter more, at random: the nodes of a fleet that
/// lost Redis together do not all knock at the same instant.
fn jittered(wait: Duration) -> Duration {
    let mut bytes = [0u8; 4];
    crate::secret::fill_random(&mut bytes);
    let quarter = wait / 4;
    let extra = quarter.mul_f64(f64::from(u32::from_be_bytes(bytes)) / f64::from(u32::MAX));
    wait + extra
}
