//! Rate limits per principal and per tool, on one node ([`RateLimits`]):
//! how fast a principal may *ask*, beside the shares that bound what it
//! *holds*.
//!
//! Each principal has a GCRA cell (governor's: one compare-and-swap per
//! decision, no lock, no timer): `rate` requests per window, bursts of up
//! to `burst` (one window's worth unless configured). A JSON-RPC request
//! past it gets 429 with `Retry-After`, the IETF `RateLimit-Policy` and
//! `RateLimit` headers (draft-ietf-httpapi-ratelimit-headers -08 and
//! later: `"principal";q=20;w=1`, `"principal";r=0;t=1`) and a JSON-RPC
//! error with the request's id naming the limit; counted in `/metrics` by
//! limit, never by principal. A principal at its limit costs the others
//! nothing: its refusals are decided on its own cell.
//!
//! Checked once the message is read (`run/opening.rs`), in both eras, on
//! requests only (a notification or a client's response is not refused: a
//! `notifications/cancelled` must get through). A request without a
//! principal (no authenticator) is not limited here. A tool may have a
//! limit of its own too (`Builder::tool_rate_limit`): each principal's
//! `tools/call`s of it, counted the same way (`"tool"` in the headers, the
//! tool named in the error and the metrics' `tool` label). One limit is
//! one GCRA limiter (`limit.rs`); its cells are bounded in count and, keyed
//! by a digest of the principal, in bytes (`store.rs`).
//!
//! Across a fleet (`fleet.rs`; a bus on Redis, `Builder::bus`): each
//! decision is one atomic script in Redis for all the limits a request
//! meets, on Redis's clock, so a principal's combined rate through any
//! number of nodes holds to its limit plus its burst. While Redis cannot
//! decide (the link is down, or it does not answer within the bus's
//! timeout), each node keeps its share of each limit (`policy.rs`: the
//! rate and the burst divided by the nodes last seen, at least 1): never
//! no limit, never refusing everyone; each change said once in the log and
//! counted (`sessionreg_rate_limit_fleet`,
//! `sessionreg_rate_limit_fallbacks_total`).

mod fleet;
mod limit;
mod policy;
mod rate_limits;
mod store;

pub(crate) use fleet::FleetRates;
#[cfg(feature = "redis")]
pub(crate) use fleet::{FleetCell, FleetDecided, FleetDecision};
pub(crate) use rate_limits::{write_metrics, RateLimits};
