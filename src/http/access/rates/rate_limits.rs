//! A node's rate limits ([`RateLimits`]): each principal's, each limited
//! tool's and the application's keyed ones, checked per request (by the fleet's store when the node
//! has one, else or meanwhile by the node), refused with the 429, written
//! to `/metrics`.

use super::fleet::{FleetCell, FleetDecided, FleetRates};
use super::policy::RatePolicy;
use crate::http::wire::config::Config;
use crate::http::wire::jsonrpc::Message;
use crate::http::wire::keyed_rate_limit::{KeyedRateLimit, RateSubject};
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use http::request::Parts;
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

/// The rate limits of one node: each principal's, each limited tool's
/// (per principal), and the application's keyed ones; with a fleet's
/// store, decided there while it can.
pub(crate) struct RateLimits {
    principal: Option<RatePolicy>,
    tools: HashMap<Box<str>, RatePolicy>,
    /// The application's keyed limits.
    keyed: Vec<(KeyedRateLimit, RatePolicy)>,
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

/// Which limit a request meets.
#[derive(Clone, Copy)]
enum Which<'a> {
    Principal,
    Tool(&'a str),
    Keyed(&'a Arc<str>),
}

/// A limit a request meets: its policy, which it is, and the key the
/// request counts under.
struct Met<'a> {
    policy: &'a RatePolicy,
    which: Which<'a>,
    key: Cow<'a, str>,
}

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
        let keyed: Vec<(KeyedRateLimit, RatePolicy)> = config
            .keyed_rate_limits
            .iter()
            .filter_map(|limit| {
                let policy = RatePolicy::new(limit.rate, limit.burst, cells)?;
                Some((limit.clone(), policy))
            })
            .collect();
        let any = principal.is_some() || !tools.is_empty() || !keyed.is_empty();
        any.then_some(RateLimits {
            principal,
            tools,
            keyed,
            fleet,
            by_fleet: AtomicBool::new(true),
            fallbacks: AtomicU64::new(0),
        })
    }

    /// Counts one message (requests only) of the request `parts`; past a
    /// limit, the 429. The principal's and its tool's limits count a
    /// request with a principal; a keyed limit, a request it finds a key
    /// for. With a fleet, one decision of its store for all the limits the
    /// request meets; while the store cannot decide, the node's share of
    /// each.
    pub(crate) async fn check(&self, parts: &Parts, message: &Message) -> Result<(), Reject> {
        let Message::Request(request) = message else {
            return Ok(());
        };
        let principal = Principal::of(parts);
        let wants_tool = !self.tools.is_empty() || !self.keyed.is_empty();
        let tool = match wants_tool && request.method == "tools/call" {
            true => tool_name(request.params_text()),
            false => None,
        };
        // The principal's and its tool's limits in place; the keyed ones
        // (only if there are any) in a vector.
        let mut fixed: [Option<Met<'_>>; 2] = [None, None];
        if let (Some(policy), Some(principal)) = (&self.principal, principal) {
            fixed[0] = Some(Met {
                policy,
                which: Which::Principal,
                key: Cow::Borrowed(principal.as_str()),
            });
        }
        if let (Some(name), Some(principal)) = (&tool, principal) {
            if let Some((tool, policy)) = self.tools.get_key_value(name.as_ref()) {
                fixed[1] = Some(Met {
                    policy,
                    which: Which::Tool(tool),
                    key: Cow::Borrowed(principal.as_str()),
                });
            }
        }
        let mut keyed: Vec<Met<'_>> = Vec::new();
        if !self.keyed.is_empty() {
            let subject = RateSubject {
                parts,
                method: &request.method,
                tool: tool.as_deref(),
            };
            for (limit, policy) in &self.keyed {
                if let Some(key) = (limit.key)(&subject) {
                    let which = Which::Keyed(&limit.name);
                    keyed.push(Met {
                        policy,
                        which,
                        key: Cow::Owned(key),
                    });
                }
            }
        }
        let met = || fixed.iter().flatten().chain(&keyed);
        if met().next().is_none() {
            return Ok(());
        }
        let mut nodes = 1;
        if let Some(fleet) = &self.fleet {
            if fleet.is_up() {
                let cells = met().map(Met::fleet_cell).collect();
                match fleet.decide(cells).await {
                    FleetDecided::Allowed => {
                        self.decided_by_fleet(true, fleet.nodes());
                        return Ok(());
                    }
                    FleetDecided::Refused { cell, wait } => {
                        self.decided_by_fleet(true, fleet.nodes());
                        return match met().nth(cell) {
                            Some(refused) => Err(refused.refusal(wait)),
                            None => Ok(()),
                        };
                    }
                    FleetDecided::Unavailable => {}
                }
            }
            nodes = fleet.nodes();
            self.decided_by_fleet(false, nodes);
        }
        for met in met() {
            met.policy
                .check(&met.key, nodes)
                .map_err(|wait| met.refusal(wait))?;
        }
        Ok(())
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

    /// The samples of [`write_metrics`], one line per limit (and, with a
    /// fleet, who decides).
    fn samples(&self) -> Samples<'_> {
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
        for (keyed, limit) in &self.keyed {
            // Names are checked at build: nothing to escape.
            limits.push((format!("limit=\"{}\"", keyed.name), limit));
        }
        // Relaxed: values read alone.
        let fleet = self.fleet.as_ref().map(|_| {
            let by_fleet = u8::from(self.by_fleet.load(Ordering::Relaxed));
            (by_fleet, self.fallbacks.load(Ordering::Relaxed))
        });
        (limits, fleet)
    }
}

/// `sessionreg_rate_limited_total{limit,tool}`,
/// `sessionreg_rate_limit_principals{limit,tool}`,
/// `sessionreg_rate_limit_overflow_total{limit,tool}`,
/// `sessionreg_rate_limit_fleet` and `sessionreg_rate_limit_fallbacks_total`
/// in Prometheus text: declared on every node (so a dashboard's names
/// exist everywhere), with samples where limits (and a fleet) are set.
/// Tool and limit names are the operator's; no principal or key is named.
pub(crate) fn write_metrics(rates: Option<&RateLimits>, out: &mut String) {
    let (limits, fleet) = rates.map(RateLimits::samples).unwrap_or_default();
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
    let _ = writeln!(
        out,
        "# HELP sessionreg_rate_limit_fleet 1 if the fleet's store decided the last rate-limited request (and before any), 0 if this node decided it on its shares (no sample: no fleet).\n\
         # TYPE sessionreg_rate_limit_fleet gauge\n\
         # HELP sessionreg_rate_limit_fallbacks_total Times this node fell back to its shares of the rate limits.\n\
         # TYPE sessionreg_rate_limit_fallbacks_total counter"
    );
    if let Some((by_fleet, fallbacks)) = fleet {
        let _ = writeln!(
            out,
            "sessionreg_rate_limit_fleet {by_fleet}\nsessionreg_rate_limit_fallbacks_total {fallbacks}"
        );
    }
}

impl Met<'_> {
    /// This limit's cell for the request, in the fleet's store.
    fn fleet_cell(&self) -> FleetCell {
        match self.which {
            Which::Principal => self.policy.fleet_cell(&[PRINCIPAL_LIMIT], &self.key),
            Which::Tool(tool) => self.policy.fleet_cell(&[TOOL_LIMIT, tool], &self.key),
            Which::Keyed(name) => self.policy.fleet_cell(&["keyed", name], &self.key),
        }
    }

    /// The 429 of this limit, counted, the next request allowed in
    /// `wait`.
    fn refusal(&self, wait: Duration) -> Reject {
        self.policy.refused();
        let (limit, tool) = match self.which {
            Which::Principal => (Cow::Borrowed(PRINCIPAL_LIMIT), None),
            Which::Tool(tool) => (Cow::Borrowed(TOOL_LIMIT), Some(tool.into())),
            Which::Keyed(name) => (Cow::Owned(name.to_string()), None),
        };
        Reject::RateLimited {
            limit,
            tool,
            rate: self.policy.rate,
            retry_after: whole_seconds(wait),
        }
    }
}

/// The tool `params` names, if they read.
fn tool_name(params: Option<&str>) -> Option<Cow<'_, str>> {
    let raw = params.unwrap_or("null");
    match serde_json::from_str::<Option<ToolName<'_>>>(raw) {
        Ok(Some(ToolName { name })) => name,
        // Params the application will refuse: nothing to count.
        _ => None,
    }
}

/// What `/metrics` reads of the limits: each limit's labels and policy,
/// and, with a fleet, whether it decided last and how often the node fell
/// back.
type Samples<'a> = (Vec<(String, &'a RatePolicy)>, Option<(u8, u64)>);

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
        let [ada, bob, carol, dave] = ["ada", "bob", "carol", "dave"];
        assert!(rates.check(ada).is_ok());
        assert!(rates.check(bob).is_ok());
        // Past the bound: newcomers share the overflow cell (burst 1).
        assert!(rates.check(carol).is_ok());
        assert!(rates.check(dave).is_err());
        assert_eq!(rates.cells.len(), 2);
        assert_eq!(rates.cells.overflowed.load(Ordering::Relaxed), 2);
        // Ada's and Bob's cells are theirs: both spent, neither dropped.
        assert!(rates.check(ada).is_err());
        assert!(rates.check(bob).is_err());
        assert!(!rates.holds(carol) && !rates.holds(dave));
    }

    #[test]
    fn cells_back_at_a_full_burst_are_pruned_and_a_newcomer_gets_its_own() {
        let rates = rates(Rate::per_second(1000), 1, 2);
        let [ada, bob, carol] = ["ada", "bob", "carol"];
        assert!(rates.check(ada).is_ok());
        assert!(rates.check(bob).is_ok());
        // Once the cells are back at a full burst a prune (at most once a
        // window) drops them, and a newcomer gets a cell of its own.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !rates.holds(carol) {
            assert!(Instant::now() < deadline, "never pruned");
            let _ = rates.check(carol);
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
            let principals: Vec<String> = (0..6).map(|i| format!("p{i}")).collect();
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
