//! Why a bus could not start ([`BusError`]).

use std::fmt;

/// Why a bus could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum BusError {
    /// The URL is not a Redis URL (`redis://HOST:PORT[/DB]`, with an
    /// optional `USER:PASSWORD@`).
    Url(String),
    /// Not called inside a tokio runtime (the bus's task runs on it).
    NoRuntime,
    /// The publisher has a bus already.
    AlreadyAttached,
    /// No keys were given ([`RedisBusBuilder::keys`](super::RedisBusBuilder::keys)): a bus does not
    /// start without them, since any client of the Redis could then speak
    /// for every node.
    NoKeys,
}

impl fmt::Display for BusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BusError::Url(why) => write!(f, "not a Redis URL: {why}"),
            BusError::NoRuntime => f.write_str("the bus starts inside a tokio runtime"),
            BusError::AlreadyAttached => f.write_str("this publisher has a bus already"),
            BusError::NoKeys => f.write_str(
                "the bus needs the fleet's keys (RedisBusBuilder::keys): its frames are \
                 sealed under them",
            ),
        }
    }
}

impl std::error::Error for BusError {}
