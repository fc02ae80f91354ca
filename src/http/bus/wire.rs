//! What travels on the bus's channel: one sealed frame per message, from
//! one node to every other, carrying a publication (its change and its
//! audience: a node that does not hold the resource still decides who may
//! hear it) or the word that the sender lost publications (its listeners
//! everywhere must refetch).
//!
//! ```text
//! frame = version (1: now 1) | kid (1) | origin (8) | seq (4)            the head, in clear
//!       | AES-256-GCM(key[kid], nonce = origin | seq, body, aad) | tag (16)
//! aad   = "sessionreg bus\0" | channel | "\0" | head
//! body  = {"sent":1767225600000,"publication":{"change":{"kind":"resource_updated","uri":"basket://00ab.."},
//!          "audience":{"audience":"principals","principals":["ada"]}}}
//!       | {"sent":1767225600000,"lost":true}
//! ```
//!
//! * **Authenticated**: a frame opens only under a key of the fleet's
//!   (`keys.rs`) and on the channel it was sealed for; anything else on the
//!   channel (another program's, a forgery, a frame of another fleet
//!   sharing the Redis) is dropped unread and counted, by cause
//!   (`sessionreg_bus_frames_rejected_total`).
//! * **Opaque**: the body, audience and URI included, is encrypted, so a
//!   client of the same Redis learns no principal's name and no resource
//!   from it: only which node sent how many frames, and their sizes.
//! * **Not replayed**: the origin is the sender's, random, drawn when its
//!   bus starts; `seq` counts its frames from 1 (a sender that would wrap
//!   it draws a new origin), so origin and seq never repeat under one key
//!   (they are the nonce: no nonce is used twice, whatever the number of
//!   frames, short of two senders drawing one 64-bit origin). A receiver
//!   keeps, per origin, the last `seq` it heard ([`Replays`]), and drops a
//!   frame at or below it; it also drops a frame whose `sent` (the
//!   sender's wall clock) is further than the frame age from its own, so
//!   it can forget an origin silent for long. What remains: a frame
//!   recorded from the channel and published again within the frame age
//!   reaches a node that had not heard it (one that subscribed since)
//!   once.
//!
//! A node drops its own frames (its echo) by their origin.

use super::keys::FrameKeys;
use crate::http::listen::bus::FrameRejection;
use crate::http::listen::Publication;
use aes_gcm::aead::AeadInPlace;
use aes_gcm::Nonce;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Duration;

/// The frame's version.
const VERSION: u8 = 1;
/// version, kid, origin, seq.
const HEAD: usize = 1 + 1 + 8 + 4;
const TAG: usize = 16;
/// The associated data's label.
const LABEL: &[u8] = b"sessionreg bus\0";

/// A node's id on the bus: random, drawn when its bus starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Origin(pub(crate) u64);

impl Origin {
    /// A fresh random origin.
    pub(crate) fn random() -> Origin {
        let mut bytes = [0u8; 8];
        crate::secret::fill_random(&mut bytes);
        Origin(u64::from_be_bytes(bytes))
    }
}

/// A frame's body as it is sent (borrowing what it carries).
#[derive(Serialize)]
struct Outgoing<'a> {
    sent: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    publication: Option<&'a Publication>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    lost: bool,
}

/// A frame's body as it is received.
#[derive(Deserialize)]
struct Incoming {
    sent: u64,
    #[serde(default)]
    publication: Option<Publication>,
    #[serde(default)]
    lost: bool,
}

/// What a received frame says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Heard {
    /// This node's own frame, back from the channel: dropped.
    Echo,
    /// A publication of another node.
    Publication(Publication),
    /// Another node lost publications (it could not hand them to the bus):
    /// this node's listeners may have missed one.
    Lost,
    /// Not a frame to act on: dropped, and counted for this cause.
    Rejected(FrameRejection),
}

/// The sending side of a node: its origin and its next sequence number.
pub(crate) struct Sender {
    origin: Origin,
    /// The origin before the last one drawn, whose echoes may still come.
    previous: Option<Origin>,
    next: u32,
}

impl Sender {
    /// A sender of a fresh random origin.
    pub(crate) fn new() -> Sender {
        Sender {
            origin: Origin::random(),
            previous: None,
            next: 1,
        }
    }

    /// Whether `origin` is this node's.
    fn is_mine(&self, origin: Origin) -> bool {
        origin == self.origin || Some(origin) == self.previous
    }

    /// The frame of a publication, sealed under `keys` for `channel`, sent
    /// at `now` (ms since the Unix epoch).
    pub(crate) fn publication(
        &mut self,
        keys: &FrameKeys,
        channel: &str,
        publication: &Publication,
        now: u64,
    ) -> Vec<u8> {
        let body = Outgoing {
            sent: now,
            publication: Some(publication),
            lost: false,
        };
        self.seal(keys, channel, &body)
    }

    /// The frame that says this node lost publications.
    pub(crate) fn lost(&mut self, keys: &FrameKeys, channel: &str, now: u64) -> Vec<u8> {
        let body = Outgoing {
            sent: now,
            publication: None,
            lost: true,
        };
        self.seal(keys, channel, &body)
    }

    fn seal(&mut self, keys: &FrameKeys, channel: &str, body: &Outgoing<'_>) -> Vec<u8> {
        let (origin, seq) = (self.origin, self.next);
        self.next = seq.checked_add(1).unwrap_or_else(|| {
            // Never the same nonce twice: a new origin, counting from 1.
            self.previous = Some(self.origin);
            self.origin = Origin::random();
            1
        });
        let (kid, cipher) = keys.sealing();
        let mut frame = Vec::with_capacity(HEAD + 256 + TAG);
        frame.push(VERSION);
        frame.push(kid);
        frame.extend_from_slice(&origin.0.to_be_bytes());
        frame.extend_from_slice(&seq.to_be_bytes());
        // A body of strings, numbers and enums always serializes.
        serde_json::to_writer(&mut frame, body).expect("a frame's body serializes");
        let (head, sealed) = frame.split_at_mut(HEAD);
        let tag = cipher
            .encrypt_in_place_detached(
                Nonce::from_slice(&head[2..]),
                &associated(channel, head),
                sealed,
            )
            .expect("AES-GCM seals any frame of this size");
        frame.extend_from_slice(&tag);
        frame
    }
}

/// The last sequence number heard from each origin, and when: what a
/// frame published again is told by.
pub(crate) struct Replays {
    /// The frame age, in ms: a frame sent further from now is stale.
    age: u64,
    heard: HashMap<Origin, (u32, u64)>,
}

impl Replays {
    /// Nothing heard yet; frames sent within `age` of now are read.
    pub(crate) fn new(age: Duration) -> Replays {
        Replays {
            age: u64::try_from(age.as_millis()).unwrap_or(u64::MAX),
            heard: HashMap::new(),
        }
    }

    /// Forgets the origins not heard for three frame ages (a frame of
    /// theirs would be stale now, with room for the clocks' drift).
    pub(crate) fn forget(&mut self, now: u64) {
        let horizon = now.saturating_sub(self.age.saturating_mul(3));
        self.heard.retain(|_, (_, at)| *at >= horizon);
    }

    /// Origins remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.heard.len()
    }
}

/// Reads a frame received from `channel` at `now`, by the node that sends
/// as `me`.
pub(crate) fn read(
    keys: &FrameKeys,
    channel: &str,
    me: &Sender,
    replays: &mut Replays,
    payload: &[u8],
    now: u64,
) -> Heard {
    let reject = Heard::Rejected;
    if payload.len() < HEAD + TAG || payload[0] != VERSION {
        return reject(FrameRejection::Malformed);
    }
    let Some(cipher) = keys.cipher(payload[1]) else {
        return reject(FrameRejection::UnknownKey);
    };
    let (head, sealed) = payload.split_at(HEAD);
    let (body, tag) = sealed.split_at(sealed.len() - TAG);
    let mut body = body.to_vec();
    if cipher
        .decrypt_in_place_detached(
            Nonce::from_slice(&head[2..]),
            &associated(channel, head),
            &mut body,
            tag.into(),
        )
        .is_err()
    {
        return reject(FrameRejection::Unauthenticated);
    }
    let origin = Origin(u64::from_be_bytes(head[2..10].try_into().expect("8 bytes")));
    let seq = u32::from_be_bytes(head[10..14].try_into().expect("4 bytes"));
    if me.is_mine(origin) {
        return Heard::Echo;
    }
    let Ok(frame) = serde_json::from_slice::<Incoming>(&body) else {
        return reject(FrameRejection::Malformed);
    };
    if frame.sent.abs_diff(now) > replays.age {
        return reject(FrameRejection::Stale);
    }
    match replays.heard.get(&origin) {
        Some(&(last, _)) if seq <= last => return reject(FrameRejection::Replayed),
        _ => {}
    }
    let heard = match (frame.publication, frame.lost) {
        (Some(publication), _) => Heard::Publication(publication),
        (None, true) => Heard::Lost,
        (None, false) => return reject(FrameRejection::Malformed),
    };
    replays.heard.insert(origin, (seq, now));
    heard
}

/// The associated data of a frame's `head` on `channel`.
fn associated(channel: &str, head: &[u8]) -> Vec<u8> {
    let mut aad = Vec::with_capacity(LABEL.len() + channel.len() + 1 + HEAD);
    aad.extend_from_slice(LABEL);
    aad.extend_from_slice(channel.as_bytes());
    aad.push(0);
    aad.extend_from_slice(head);
    aad
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::bus::keys::BusKeys;
    use crate::http::listen::{Audience, Change};
    use crate::http::Principal;

    const CHANNEL: &str = "sessionreg:publications";
    const AGE: Duration = Duration::from_secs(30);
    const NOW: u64 = 1_767_225_600_000;

    fn keys() -> FrameKeys {
        FrameKeys::new(&BusKeys::new(1, [7; 32]))
    }

    fn update(uri: &str, principal: &str) -> Publication {
        Publication {
            change: Change::ResourceUpdated { uri: uri.into() },
            audience: Audience::principal(Principal::new(principal)),
        }
    }

    #[test]
    fn a_publication_travels_sealed_with_its_audience_and_a_node_knows_its_own_echo() {
        let (keys, mut me, mut other) = (keys(), Sender::new(), Sender::new());
        let mut replays = Replays::new(AGE);
        let sent = update("basket://00ab", "ada");
        let frame = other.publication(&keys, CHANNEL, &sent, NOW);
        // Opaque: neither the principal nor the URI shows.
        let text = String::from_utf8_lossy(&frame);
        assert!(!text.contains("ada") && !text.contains("basket"), "{text}");
        let heard = read(&keys, CHANNEL, &me, &mut replays, &frame, NOW);
        assert_eq!(heard, Heard::Publication(sent.clone()));
        let mine = me.publication(&keys, CHANNEL, &sent, NOW);
        assert_eq!(
            read(&keys, CHANNEL, &me, &mut replays, &mine, NOW),
            Heard::Echo
        );
        let everyone = Publication {
            change: Change::ToolsListChanged,
            audience: Audience::Everyone,
        };
        let frame = other.publication(&keys, CHANNEL, &everyone, NOW);
        assert_eq!(
            read(&keys, CHANNEL, &me, &mut replays, &frame, NOW),
            Heard::Publication(everyone)
        );
        let lost = other.lost(&keys, CHANNEL, NOW);
        assert_eq!(
            read(&keys, CHANNEL, &me, &mut replays, &lost, NOW),
            Heard::Lost
        );
    }

    #[test]
    fn forged_changed_foreign_and_unknown_frames_are_rejected_by_cause() {
        let (keys, me, mut other) = (keys(), Sender::new(), Sender::new());
        let mut replays = Replays::new(AGE);
        let rejected = |cause| Heard::Rejected(cause);
        let frame = other.publication(&keys, CHANNEL, &update("a://b", "ada"), NOW);
        for junk in [
            &b""[..],
            b"hello",
            br#"{"origin":"0123456789abcdef","lost":true}"#,
            &[0u8; 64],
        ] {
            let heard = read(&keys, CHANNEL, &me, &mut replays, junk, NOW);
            assert_eq!(heard, rejected(FrameRejection::Malformed), "{junk:?}");
        }
        // Each bit of the frame is covered: the head, the body, the tag.
        for at in [1, 5, 12, HEAD + 3, frame.len() - 1] {
            let mut changed = frame.clone();
            changed[at] ^= 1;
            let heard = read(&keys, CHANNEL, &me, &mut replays, &changed, NOW);
            let cause = if at == 1 {
                FrameRejection::UnknownKey
            } else {
                FrameRejection::Unauthenticated
            };
            assert_eq!(heard, rejected(cause), "bit flipped at {at}");
        }
        // Another channel (another fleet's namespace), another key of the
        // same id, a key id not held.
        let heard = read(&keys, "other:publications", &me, &mut replays, &frame, NOW);
        assert_eq!(heard, rejected(FrameRejection::Unauthenticated));
        let stranger = FrameKeys::new(&BusKeys::new(1, [8; 32]));
        let heard = read(&stranger, CHANNEL, &me, &mut replays, &frame, NOW);
        assert_eq!(heard, rejected(FrameRejection::Unauthenticated));
        let elsewhere = FrameKeys::new(&BusKeys::new(9, [7; 32]));
        let heard = read(&elsewhere, CHANNEL, &me, &mut replays, &frame, NOW);
        assert_eq!(heard, rejected(FrameRejection::UnknownKey));
        // None of them counted as heard: the frame itself still reads.
        let heard = read(&keys, CHANNEL, &me, &mut replays, &frame, NOW);
        assert!(matches!(heard, Heard::Publication(_)));
    }

    #[test]
    fn a_frame_is_heard_once_and_only_within_its_age() {
        let (keys, me, mut other) = (keys(), Sender::new(), Sender::new());
        let mut replays = Replays::new(AGE);
        let age = u64::try_from(AGE.as_millis()).unwrap();
        let first = other.lost(&keys, CHANNEL, NOW);
        let second = other.lost(&keys, CHANNEL, NOW);
        assert_eq!(
            read(&keys, CHANNEL, &me, &mut replays, &second, NOW),
            Heard::Lost
        );
        // Again, or an older one of the same sender after it: replayed.
        for frame in [&second, &first] {
            let heard = read(&keys, CHANNEL, &me, &mut replays, frame, NOW);
            assert_eq!(heard, Heard::Rejected(FrameRejection::Replayed));
        }
        // Sent further than the age from now, either way: stale.
        let old = other.lost(&keys, CHANNEL, NOW - age - 1);
        let ahead = other.lost(&keys, CHANNEL, NOW + age + 1);
        for frame in [&old, &ahead] {
            let heard = read(&keys, CHANNEL, &me, &mut replays, frame, NOW);
            assert_eq!(heard, Heard::Rejected(FrameRejection::Stale));
        }
        let edge = other.lost(&keys, CHANNEL, NOW - age);
        assert_eq!(
            read(&keys, CHANNEL, &me, &mut replays, &edge, NOW),
            Heard::Lost
        );
        // A sender silent for three ages is forgotten; its frames of then
        // are stale by now.
        replays.forget(NOW + 3 * age);
        assert_eq!(replays.len(), 1);
        replays.forget(NOW + 3 * age + 1);
        assert_eq!(replays.len(), 0);
        let later = NOW + 3 * age + 1;
        let heard = read(&keys, CHANNEL, &me, &mut replays, &second, later);
        assert_eq!(heard, Heard::Rejected(FrameRejection::Stale));
    }

    #[test]
    fn a_sender_that_would_wrap_its_sequence_draws_a_new_origin() {
        let keys = keys();
        let mut sender = Sender::new();
        let first = sender.origin;
        sender.next = u32::MAX;
        let last = sender.lost(&keys, CHANNEL, NOW);
        assert_eq!(&last[2..10], &first.0.to_be_bytes());
        assert_eq!(&last[10..14], &u32::MAX.to_be_bytes());
        assert_ne!(sender.origin, first);
        assert_eq!(sender.next, 1);
        // Both are its own: the echo of the last frame of the old one too.
        let mut replays = Replays::new(AGE);
        assert_eq!(
            read(&keys, CHANNEL, &sender, &mut replays, &last, NOW),
            Heard::Echo
        );
        let next = sender.lost(&keys, CHANNEL, NOW);
        assert_eq!(&next[10..14], &1u32.to_be_bytes());
        // And to another node, the new origin's first frame is new.
        let other = Sender::new();
        assert_eq!(
            read(&keys, CHANNEL, &other, &mut replays, &last, NOW),
            Heard::Lost
        );
        assert_eq!(
            read(&keys, CHANNEL, &other, &mut replays, &next, NOW),
            Heard::Lost
        );
    }
}
