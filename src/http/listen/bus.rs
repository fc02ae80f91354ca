//! The seam a fleet's bus plugs into: what a [`Publisher`](super::Publisher)
//! hands to it ([`Outbound`]), and the state and counts of the link it
//! keeps ([`BusLink`]).
//!
//! Without a bus (the default) a publication reaches this node's listeners
//! only, as it always did. With one (`crate::http::bus`, Redis, feature
//! `redis`), the publisher still delivers every publication to this node's
//! listeners at once, on the publisher's thread, and *also* hands it to the
//! bus ([`Outbound::send`], which never waits: a bounded queue, past it the
//! publication is dropped and counted); the bus carries it, its audience
//! with it, to every other node, whose publisher delivers it to its own
//! listeners exactly as a local one ([`Publisher::receive`](super::Publisher::receive)).
//! A node hears its own publications once: the bus drops its own echo.
//!
//! A listener on a node whose bus is down would miss what other nodes
//! publish, silently. So while the link is down, the node's listen streams
//! are ended gracefully ([`Reason::Unavailable`](crate::Reason::Unavailable):
//! their clients re-listen and refetch, as the spec says) and new listens
//! are refused (503 with `Retry-After`) until it is up again.

// Without a bus (feature `redis`), only the listen path's reads are used.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use super::change::Shared;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What carries this node's publications to the other nodes.
pub(crate) trait Outbound: Send + Sync {
    /// Hands a publication made on this node to the bus. Never waits: a
    /// publication the bus cannot take now (its queue is full, or its link
    /// is down) is dropped, and counted in [`BusLink::dropped`].
    fn send(&self, publication: &Shared);
}

/// The state of a publisher's link to its bus, and its counts (the
/// `sessionreg_bus_*` metrics). Written by the bus, read by the listen
/// streams (may a listener open?) and the metrics.
#[derive(Debug, Default)]
pub(crate) struct BusLink {
    /// Whether the bus carries publications both ways now.
    up: AtomicBool,
    /// Times the link came up again after it was down (not its first).
    reconnects: AtomicU64,
    /// Publications of this node handed to the bus.
    published: AtomicU64,
    /// Publications of other nodes delivered here.
    received: AtomicU64,
    /// Publications of this node the bus could not carry.
    dropped: AtomicU64,
    /// Times the fleet's record of used single-use states was found lost
    /// or replaced (its epoch changed).
    record_resets: AtomicU64,
    /// Frames from the bus's channel dropped, by cause
    /// ([`FrameRejection::index`]).
    frames_rejected: [AtomicU64; FrameRejection::ALL.len()],
    /// The fleet's nodes as last counted (0: never counted).
    nodes: AtomicU64,
}

/// Why a frame from the bus's channel was dropped (the label of
/// `sessionreg_bus_frames_rejected_total{cause}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameRejection {
    /// Not a frame of this bus at all (too short, another version, or what
    /// it carries does not read).
    Malformed,
    /// Sealed under a key id this node does not hold.
    UnknownKey,
    /// Its tag does not verify: forged, changed, or sealed for another
    /// channel or under another key of the same id.
    Unauthenticated,
    /// Sent longer ago (or further ahead) than the bus's frame age allows.
    Stale,
    /// Its sender's sequence number was heard already: a frame published
    /// again.
    Replayed,
}

impl FrameRejection {
    /// Every cause, in label order.
    pub(crate) const ALL: [FrameRejection; 5] = [
        FrameRejection::Malformed,
        FrameRejection::UnknownKey,
        FrameRejection::Unauthenticated,
        FrameRejection::Stale,
        FrameRejection::Replayed,
    ];

    /// The metric label.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            FrameRejection::Malformed => "malformed",
            FrameRejection::UnknownKey => "unknown_key",
            FrameRejection::Unauthenticated => "unauthenticated",
            FrameRejection::Stale => "stale",
            FrameRejection::Replayed => "replayed",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// A snapshot of a [`BusLink`]'s counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BusCounts {
    pub(crate) up: bool,
    pub(crate) reconnects: u64,
    pub(crate) published: u64,
    pub(crate) received: u64,
    pub(crate) dropped: u64,
    pub(crate) record_resets: u64,
    pub(crate) frames_rejected: [u64; FrameRejection::ALL.len()],
    pub(crate) nodes: u64,
}

impl BusLink {
    /// Whether the link is up.
    pub(crate) fn is_up(&self) -> bool {
        // SeqCst: paired with the listen path, which registers a listener
        // and then reads this; the bus stores `false` and then ends every
        // listener (`Publisher::bus_down`). In the one total order, either
        // the sweep sees the new listener or the listener sees `false` and
        // ends itself: none stays open on a link that is down.
        self.up.load(Ordering::SeqCst)
    }

    /// Marks the link up or down; whether that changed it.
    pub(crate) fn set_up(&self, up: bool) -> bool {
        // SeqCst: see `is_up`.
        self.up.swap(up, Ordering::SeqCst) != up
    }

    /// Counts a reconnection.
    pub(crate) fn reconnected(&self) {
        // Relaxed, here and below: counts for the metrics, ordering nothing.
        self.reconnects.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `n` publications handed to the bus.
    pub(crate) fn published(&self, n: u64) {
        self.published.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a publication of another node delivered here.
    pub(crate) fn received(&self) {
        self.received.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `n` publications the bus could not carry.
    pub(crate) fn dropped(&self, n: u64) {
        self.dropped.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a change of the record's epoch.
    pub(crate) fn record_reset(&self) {
        self.record_resets.fetch_add(1, Ordering::Relaxed);
    }

    /// The fleet's nodes as last counted (0: never counted).
    pub(crate) fn nodes(&self) -> u64 {
        // Relaxed: a count read alone; a stale one gives a node's share of
        // a rate limit a heartbeat late.
        self.nodes.load(Ordering::Relaxed)
    }

    /// The fleet's nodes, counted now.
    pub(crate) fn set_nodes(&self, nodes: u64) {
        // Relaxed: see `nodes`.
        self.nodes.store(nodes, Ordering::Relaxed);
    }

    /// Counts a frame dropped for `cause`.
    pub(crate) fn frame_rejected(&self, cause: FrameRejection) {
        self.frames_rejected[cause.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now.
    pub(crate) fn counts(&self) -> BusCounts {
        BusCounts {
            up: self.is_up(),
            reconnects: self.reconnects.load(Ordering::Relaxed),
            published: self.published.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            record_resets: self.record_resets.load(Ordering::Relaxed),
            nodes: self.nodes(),
            frames_rejected: std::array::from_fn(|i| {
                self.frames_rejected[i].load(Ordering::Relaxed)
            }),
        }
    }
}
