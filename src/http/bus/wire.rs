//! What travels on the bus's channel: one JSON frame per message, tagged
//! with the sending node's random origin id (so a node drops its own echo),
//! carrying a publication (its change and its audience: a node that does
//! not hold the resource still decides who may hear it) or the word that
//! the sender lost publications (its listeners everywhere must refetch).
//!
//! ```text
//! {"origin":"3f9c0a5e1b2d4c68","publication":{"change":{"kind":"resource_updated","uri":"basket://00ab.."},
//!  "audience":{"audience":"principals","principals":["ada"]}}}
//! {"origin":"3f9c0a5e1b2d4c68","lost":true}
//! ```
//!
//! A frame that does not parse (another program on the channel, a newer
//! version) is skipped.

use crate::http::listen::Publication;
use serde::{Deserialize, Serialize};

/// A node's id on the bus: random, drawn when its bus starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Origin(pub(crate) u64);

impl Origin {
    /// A fresh random origin.
    pub(crate) fn random() -> Origin {
        let mut bytes = [0u8; 8];
        crate::secret::fill_random(&mut bytes);
        Origin(u64::from_be_bytes(bytes))
    }

    fn hex(self) -> String {
        format!("{:016x}", self.0)
    }

    fn parse(text: &str) -> Option<Origin> {
        u64::from_str_radix(text, 16).ok().map(Origin)
    }
}

/// A frame as it is sent (borrowing what it carries).
#[derive(Serialize)]
struct Outgoing<'a> {
    origin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    publication: Option<&'a Publication>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    lost: bool,
}

/// A frame as it is received.
#[derive(Deserialize)]
struct Incoming {
    origin: String,
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
    /// Not a frame of ours.
    Unreadable,
}

/// The frame of a publication of `origin`.
pub(crate) fn publication(origin: Origin, publication: &Publication) -> Vec<u8> {
    encode(&Outgoing {
        origin: origin.hex(),
        publication: Some(publication),
        lost: false,
    })
}

/// The frame that says `origin` lost publications.
pub(crate) fn lost(origin: Origin) -> Vec<u8> {
    encode(&Outgoing {
        origin: origin.hex(),
        publication: None,
        lost: true,
    })
}

fn encode(frame: &Outgoing<'_>) -> Vec<u8> {
    // A frame of strings and enums always serializes.
    serde_json::to_vec(frame).unwrap_or_default()
}

/// Reads a frame received by node `me`.
pub(crate) fn read(me: Origin, payload: &[u8]) -> Heard {
    let Ok(frame) = serde_json::from_slice::<Incoming>(payload) else {
        return Heard::Unreadable;
    };
    match (Origin::parse(&frame.origin), frame.publication, frame.lost) {
        (None, _, _) => Heard::Unreadable,
        (Some(origin), _, _) if origin == me => Heard::Echo,
        (Some(_), Some(publication), _) => Heard::Publication(publication),
        (Some(_), None, true) => Heard::Lost,
        (Some(_), None, false) => Heard::Unreadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::listen::{Audience, Change};
    use crate::http::Principal;

    #[test]
    fn a_publication_travels_with_its_audience_and_a_node_knows_its_own_echo() {
        let (me, other) = (Origin(0x1234), Origin(0xfeed_0000_0000_0001));
        let sent = Publication {
            change: Change::ResourceUpdated {
                uri: "basket://00ab".into(),
            },
            audience: Audience::principal(Principal::new("ada")),
        };
        let frame = publication(other, &sent);
        assert_eq!(read(me, &frame), Heard::Publication(sent.clone()));
        assert_eq!(read(other, &frame), Heard::Echo);
        let everyone = Publication {
            change: Change::ToolsListChanged,
            audience: Audience::Everyone,
        };
        assert_eq!(
            read(me, &publication(other, &everyone)),
            Heard::Publication(everyone)
        );
        assert_eq!(read(me, &lost(other)), Heard::Lost);
        assert_eq!(read(other, &lost(other)), Heard::Echo);
        for junk in [
            &b"hello"[..],
            b"{}",
            br#"{"origin":"zz","lost":true}"#,
            br#"{"origin":"01"}"#,
        ] {
            assert_eq!(read(me, junk), Heard::Unreadable, "{junk:?}");
        }
    }
}
