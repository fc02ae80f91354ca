//! A node's rate limits ([`RateLimits`]): each principal's and each
//! limited tool's, checked per request (by the fleet's store when the node
//! has one, else or meanwhile by the node), refused with the 429, written
//! to `/metrics`.

use super::fleet::{FleetDecided, FleetRates};
use super::policy::RatePolicy;
use crate::http::wire::config::Config;
use crate::http::wire::jsonrpc::Message;
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The name of the per-principal limit, in the headers, the error and the
/// metrics' `limit` label.
pub(crate) const PRINCIPAL_LIMIT: &str = "principal";
/// The name of a tool's limit.
pub(crate) const TOOL_LIMIT: &str = "tool";

/// The rate limits of one node: each principal's, and each limited tool's
/// (per principal).
pub(crate) struct RateLimits {
    principal: Option<RatePolicy>,
    tools: HashMap<Box<str>, RatePolicy>,
    /// The fleet's store, with a bus: it decides while it can.
    fleet: Option<Arc<dyn FleetRates>>,
    /// Whether the last decision was the fleet's (a change is said once).
    by_fleet: AtomicBool,
    /// Times the node fell back to its shares.
    fallbacks: AtomicU64,
}

/// The member of `tools/call` params naming the tool.
#[derive(Deserialize)]
struct ToolName<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

/// A limit a request meets: its policy, and its tool for a tool's limit.
type Met<'a> = (&'a RatePolicy, Option<&'a Box<str>>);

impl RateLimits {
    /// The limits `config` sets, if it sets any (validated: counts from 1,
    /// a burst from 1), decided by `fleet` while it can.
    pub(crate) fn new(config: &Config, fleet: Option<Arc<dyn FleetRates>>) -> Option<RateLimits> {
        let cells = config.rate_limited_principals;
        let principal = config
            .rate_limit
            .and_then(|rate| RatePolicy::new(rate, config.rate_burst, cells));
        let tools: HashMap<Box<str>, RatePolicy> = config
            .tool_rate_limits
            .iter()
            .filter_map(|(tool, rate)| {
                Some((tool.as_str().into(), RatePolicy::new(*rate, None, cells)?))
            })
            .collect();
        (principal.is_some() || !tools.is_empty()).then_some(RateLimits {
            principal,
            tools,
            fleet,
            by_fleet: AtomicBool::new(true),
            fallbacks: AtomicU64::new(0),
        })
    }

    /// Counts one message of `principal` (requests only); past a limit,
    /// the 429. With a fleet, one decision of its store for all the limits
    /// the request meets; while the store cannot decide, the node's share
    /// of each.
    pub(crate) async fn check(
        &self,
        principal: &Principal,
        message: &Message,
    ) -> Result<(), Reject> {
        let Message::Request(request) = message else {
            return Ok(());
        };
        let principal_limit = self.principal.as_ref().map(|policy| (policy, None));
        let tool_limit = match self.tools.is_empty() || request.method != "tools/call" {
            true => None,
            false => self.tool_limit(request.params.as_deref()),
        };
        let met: [Option<Met<'_>>; 2] = [principal_limit, tool_limit];
        let mut nodes = 1;
        if let Some(fleet) = &self.fleet {
            if met.iter().all(Option::is_none) {
                return Ok(());
            }
            if fleet.is_up() {
                let cells = met
                    .iter()
                    .flatten()
                    .map(|(policy, tool)| match tool {
                        Some(tool) => policy.fleet_cell(&[TOOL_LIMIT, tool], principal),
                        None => policy.fleet_cell(&[PRINCIPAL_LIMIT], principal),
                    })
                    .collect();
                match fleet.decide(cells).await {
                    FleetDecided::Allowed => {
                        self.decided_by_fleet(true, fleet.nodes());
                        return Ok(());
                    }
                    FleetDecided::Refused { cell, wait } => {
                        self.decided_by_fleet(true, fleet.nodes());
                        let refused = met.iter().flatten().nth(cell).copied();
                        return match refused {
                            Some(refused) => Err(refusal(refused, wait)),
                            None => Ok(()),
                        };
                    }
                    FleetDecided::Unavailable => {}
                }
            }
            nodes = fleet.nodes();
            self.decided_by_fleet(false, nodes);
        }
        for met in met.into_iter().flatten() {
            met.0
                .check(principal, nodes)
                .map_err(|wait| refusal(met, wait))?;
        }
        Ok(())
    }

    /// The limit of the tool `params` names, if it has one.
    fn tool_limit(&self, params: Option<&serde_json::value::RawValue>) -> Option<Met<'_>> {
        let raw = params.map_or("null", |raw| raw.get());
        let Ok(Some(ToolName { name: Some(name) })) =
            serde_json::from_str::<Option<ToolName<'_>>>(raw)
        else {
            // Params the application will refuse: nothing to count.
            return None;
        };
        let (tool, policy) = self.tools.get_key_value(name.as_ref())?;
        Some((policy, Some(tool)))
    }

    /// Notes who decided; a change is said in one log line, and a fall
    /// back to the node's shares counted.
    fn decided_by_fleet(&self, by_fleet: bool, nodes: u32) {
        // Relaxed: a flag read and swapped alone; two threads may both see
        // a change, and only one swap finds the old value.
        if self.by_fleet.load(Ordering::Relaxed) == by_fleet
            || self.by_fleet.swap(by_fleet, Ordering::Relaxed) == by_fleet
        {
            return;
        }
        if by_fleet {
            tracing::info!("rate limits: decided by the fleet again (Redis answers)");
        } else {
            // Relaxed: a counter read by /metrics only.
            self.fallbacks.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                nodes,
                "rate limits: the fleet's store cannot decide (Redis away or slow); this node \
                 keeps its share of each limit (the rate and the burst divided by the nodes \
                 last seen) until it can"
            );
        }
    }

    /// `sessionreg_rate_limited_total{limit,tool}`,
    /// `sessionreg_rate_limit_principals{limit,tool}` and
    /// `sessionreg_rate_limit_overflow_total{limit,tool}`, in Prometheus
    /// text (tool names are the operator's; no principal is named); with a
    /// fleet, `sessionreg_rate_limit_fleet` and
    /// `sessionreg_rate_limit_fallbacks_total`.
    pub(crate) fn write_metrics(&self, out: &mut String) {
        let mut limits: Vec<(String, &RatePolicy)> = Vec::new();
        if let Some(limit) = &self.principal {
            limits.push((format!("limit=\"{PRINCIPAL_LIMIT}\""), limit));
        }
        let mut tools: Vec<_> = self.tools.iter().collect();
        tools.sort_by(|a, b| a.0.cmp(b.0));
        for (tool, limit) in tools {
            let tool = tool.replace(['\\', '"', '\n'], "_");
            limits.push((format!("limit=\"{TOOL_LIMIT}\",tool=\"{tool}\""), limit));
        }
        let families: [Family; 3] = [
            (
                "sessionreg_rate_limited_total",
                "counter",
                "Requests refused 429 past a rate limit, by limit.",
                RatePolicy::limited,
            ),
            (
                "sessionreg_rate_limit_principals",
                "gauge",
                "Principals with a rate-limit cell of their own on this node, by limit.",
                RatePolicy::cells,
            ),
            (
                "sessionreg_rate_limit_overflow_total",
                "counter",
                "Decisions made on the shared cell of principals past rate_limited_principals, by limit.",
                RatePolicy::overflowed,
            ),
        ];
        for (name, kind, help, read) in families {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, limit) in &limits {
                let _ = writeln!(out, "{name}{{{labels}}} {}", read(limit));
            }
        }
        if self.fleet.is_some() {
            // Relaxed: values read alone.
            let by_fleet = u8::from(self.by_fleet.load(Ordering::Relaxed));
            let fallbacks = self.fallbacks.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "# HELP sessionreg_rate_limit_fleet 1 while the fleet's store decides the rate limits, 0 while this node decides on its shares.\n\
                 # TYPE sessionreg_rate_limit_fleet gauge\n\
                 sessionreg_rate_limit_fleet {by_fleet}\n\
                 # HELP sessionreg_rate_limit_fallbacks_total Times this node fell back to its shares of the rate limits.\n\
                 # TYPE sessionreg_rate_limit_fallbacks_total counter\n\
                 sessionreg_rate_limit_fallbacks_total {fallbacks}"
            );
        }
    }
}

/// The 429 of `met`'s limit, counted, the next request allowed in `wait`.
fn refusal((policy, tool): Met<'_>, wait: Duration) -> Reject {
    policy.refused();
    Reject::RateLimited {
        limit: if tool.is_some() {
            TOOL_LIMIT
        } else {
            PRINCIPAL_LIMIT
        },
        tool: tool.cloned(),
        rate: policy.rate,
        retry_after: whole_seconds(wait),
    }
}

/// A metric family: its name, type, help, and what it reads of a limit.
type Family = (
    &'static str,
    &'static str,
    &'static str,
    fn(&RatePolicy) -> u64,
);

/// `Retry-After` seconds for a wait: rounded up, at least 1.
fn whole_seconds(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::super::limit::Limit;
    use super::*;
    use crate::http::wire::rate::Rate;
    use std::sync::atomic::Ordering;
    use std::time::Instant;

    fn rates(rate: Rate, burst: u32, principals: usize) -> Limit {
        Limit::new(rate, Some(burst), principals).unwrap()
    }

    #[test]
    fn a_principal_flood_holds_a_bounded_number_of_cells_and_the_known_keep_theirs() {
        // One a minute: nothing refills during the test.
        let rates = rates(Rate::per_minute(1), 1, 2);
        let [ada, bob, carol, dave] = ["ada", "bob", "carol", "dave"].map(Principal::new);
        assert!(rates.check(&ada).is_ok());
        assert!(rates.check(&bob).is_ok());
        // Past the bound: newcomers share the overflow cell (burst 1).
        assert!(rates.check(&carol).is_ok());
        assert!(rates.check(&dave).is_err());
        assert_eq!(rates.cells.len(), 2);
        assert_eq!(rates.cells.overflowed.load(Ordering::Relaxed), 2);
        // Ada's and Bob's cells are theirs: both spent, neither dropped.
        assert!(rates.check(&ada).is_err());
        assert!(rates.check(&bob).is_err());
        assert!(!rates.holds(&carol) && !rates.holds(&dave));
    }

    #[test]
    fn cells_back_at_a_full_burst_are_pruned_and_a_newcomer_gets_its_own() {
        let rates = rates(Rate::per_second(1000), 1, 2);
        let [ada, bob, carol] = ["ada", "bob", "carol"].map(Principal::new);
        assert!(rates.check(&ada).is_ok());
        assert!(rates.check(&bob).is_ok());
        // Once the cells are back at a full burst a prune (at most once a
        // window) drops them, and a newcomer gets a cell of its own.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !rates.holds(&carol) {
            assert!(Instant::now() < deadline, "never pruned");
            let _ = rates.check(&carol);
            std::thread::yield_now();
        }
        assert!(rates.cells.len() <= 2);
    }

    proptest::proptest! {
        /// The limit against its model, at one request an hour (nothing
        /// refills during a case): each principal with a cell is allowed
        /// exactly its burst; at most `max` have a cell, the first ones
        /// seen; the newcomers past them share one burst.
        #[test]
        fn the_limit_keeps_to_its_model(
            burst in 1u32..4,
            max in 1usize..5,
            requests in proptest::collection::vec(0usize..6, 0..40),
        ) {
            let limit = rates(Rate::per_hour(1), burst, max);
            let principals: Vec<Principal> =
                (0..6).map(|i| Principal::new(format!("p{i}"))).collect();
            let mut left: HashMap<usize, u32> = HashMap::new();
            let mut overflow = burst;
            for who in requests {
                let budget = if left.contains_key(&who) || left.len() < max {
                    left.entry(who).or_insert(burst)
                } else {
                    &mut overflow
                };
                let allowed = *budget > 0;
                *budget = budget.saturating_sub(1);
                proptest::prop_assert_eq!(limit.check(&principals[who]).is_ok(), allowed);
                proptest::prop_assert_eq!(limit.cells.len(), left.len());
            }
        }
    }

    #[test]
    fn retry_after_is_rounded_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
        assert_eq!(whole_seconds(Duration::from_millis(1001)), 2);
        assert_eq!(whole_seconds(Duration::ZERO), 1);
    }
}
