//! A node's rate limits ([`RateLimits`]): each principal's and each
//! limited tool's, checked per request, refused with the 429, written to
//! `/metrics`.

use super::limit::Limit;
use crate::http::wire::config::Config;
use crate::http::wire::jsonrpc::Message;
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write;
use std::time::Duration;

/// The name of the per-principal limit, in the headers, the error and the
/// metrics' `limit` label.
pub(crate) const PRINCIPAL_LIMIT: &str = "principal";
/// The name of a tool's limit.
pub(crate) const TOOL_LIMIT: &str = "tool";

/// The rate limits of one node: each principal's, and each limited tool's
/// (per principal).
pub(crate) struct RateLimits {
    principal: Option<Limit>,
    tools: HashMap<Box<str>, Limit>,
}

/// The member of `tools/call` params naming the tool.
#[derive(Deserialize)]
struct ToolName<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

impl RateLimits {
    /// The limits `config` sets, if it sets any (validated: counts from 1,
    /// a burst from 1).
    pub(crate) fn new(config: &Config) -> Option<RateLimits> {
        let cells = config.rate_limited_principals;
        let principal = config
            .rate_limit
            .and_then(|rate| Limit::new(rate, config.rate_burst, cells));
        let tools: HashMap<Box<str>, Limit> = config
            .tool_rate_limits
            .iter()
            .filter_map(|(tool, rate)| {
                Some((tool.as_str().into(), Limit::new(*rate, None, cells)?))
            })
            .collect();
        (principal.is_some() || !tools.is_empty()).then_some(RateLimits { principal, tools })
    }

    /// Counts one message of `principal` (requests only); past a limit,
    /// the 429.
    pub(crate) fn check(&self, principal: &Principal, message: &Message) -> Result<(), Reject> {
        let Message::Request(request) = message else {
            return Ok(());
        };
        if let Some(limit) = &self.principal {
            limit.check(principal).map_err(|wait| Reject::RateLimited {
                limit: PRINCIPAL_LIMIT,
                tool: None,
                rate: limit.rate,
                retry_after: whole_seconds(wait),
            })?;
        }
        if self.tools.is_empty() || request.method != "tools/call" {
            return Ok(());
        }
        let raw = request.params.as_deref().map_or("null", |raw| raw.get());
        let Ok(Some(ToolName { name: Some(name) })) =
            serde_json::from_str::<Option<ToolName<'_>>>(raw)
        else {
            // Params the application will refuse: nothing to count.
            return Ok(());
        };
        let Some((tool, limit)) = self.tools.get_key_value(name.as_ref()) else {
            return Ok(());
        };
        limit.check(principal).map_err(|wait| Reject::RateLimited {
            limit: TOOL_LIMIT,
            tool: Some(tool.clone()),
            rate: limit.rate,
            retry_after: whole_seconds(wait),
        })
    }

    /// `sessionreg_rate_limited_total{limit,tool}`,
    /// `sessionreg_rate_limit_principals{limit,tool}` and
    /// `sessionreg_rate_limit_overflow_total{limit,tool}`, in Prometheus
    /// text (tool names are the operator's; no principal is named).
    pub(crate) fn write_metrics(&self, out: &mut String) {
        let mut limits: Vec<(String, &Limit)> = Vec::new();
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
                Limit::limited,
            ),
            (
                "sessionreg_rate_limit_principals",
                "gauge",
                "Principals with a rate-limit cell of their own, by limit.",
                Limit::cells,
            ),
            (
                "sessionreg_rate_limit_overflow_total",
                "counter",
                "Decisions made on the shared cell of principals past rate_limited_principals, by limit.",
                Limit::overflowed,
            ),
        ];
        for (name, kind, help, read) in families {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, limit) in &limits {
                let _ = writeln!(out, "{name}{{{labels}}} {}", read(limit));
            }
        }
    }
}

/// A metric family: its name, type, help, and what it reads of a limit.
type Family = (&'static str, &'static str, &'static str, fn(&Limit) -> u64);

/// `Retry-After` seconds for a wait: rounded up, at least 1.
fn whole_seconds(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
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
        assert_eq!(rates.limited(), 3);
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
