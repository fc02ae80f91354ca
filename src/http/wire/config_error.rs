//! Why [`Builder::build`](crate::http::Builder::build) refused a configuration
//! ([`ConfigError`]): the setting, the value given, and what it allows.
//! Every value of the builder is checked there, once; nothing out of range
//! reaches a panic, and nothing is quietly turned into something else.

use std::fmt;
use std::time::Duration;

/// A [`Builder`](crate::http::Builder) setting out of its range, or a registry
/// setting its registry refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// `setting` (the name of its `Builder` method) was given `given`; it
    /// must be `allowed`.
    OutOfRange {
        /// The setting, as its `Builder` method is named.
        setting: &'static str,
        /// The value given, as `Debug` writes it.
        given: String,
        /// What the setting allows.
        allowed: String,
    },
    /// The session registry refused its settings for a reason the layer
    /// does not check itself (see [`crate::BuildError`]).
    Registry(crate::BuildError),
}

impl ConfigError {
    /// The name of the setting that is out of range, if one is.
    pub fn setting(&self) -> Option<&'static str> {
        match self {
            ConfigError::OutOfRange { setting, .. } => Some(setting),
            ConfigError::Registry(_) => None,
        }
    }

    pub(crate) fn out_of_range(
        setting: &'static str,
        given: impl fmt::Debug,
        allowed: impl Into<String>,
    ) -> ConfigError {
        ConfigError::OutOfRange {
            setting,
            given: format!("{given:?}"),
            allowed: allowed.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::OutOfRange {
                setting,
                given,
                allowed,
            } => write!(f, "{setting} = {given} is out of range: {allowed}"),
            ConfigError::Registry(error) => write!(f, "the session registry: {error}"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Registry(error) => Some(error),
            ConfigError::OutOfRange { .. } => None,
        }
    }
}

/// A count of at least `min` and at most `max`.
pub(crate) fn count(
    setting: &'static str,
    value: usize,
    min: usize,
    max: usize,
) -> Result<usize, ConfigError> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::out_of_range(
            setting,
            value,
            format!("it must be from {min} to {max}"),
        ))
    }
}

/// A duration of at most `max`, and more than zero unless `zero` says zero
/// means something for this setting.
pub(crate) fn duration(
    setting: &'static str,
    value: Duration,
    zero: bool,
    max: Duration,
) -> Result<Duration, ConfigError> {
    let above = if zero {
        "at least zero"
    } else {
        "more than zero"
    };
    if (value.is_zero() && !zero) || value > max {
        Err(ConfigError::out_of_range(
            setting,
            value,
            format!(
                "it must be {above} and at most {max:?} (for no bound at all, where the \
                 setting allows one, give None)"
            ),
        ))
    } else {
        Ok(value)
    }
}

/// A bound that may be off: `None` is none; a duration as [`duration`].
pub(crate) fn bound(
    setting: &'static str,
    value: Option<Duration>,
    zero: bool,
    max: Duration,
) -> Result<Option<Duration>, ConfigError> {
    value.map(|v| duration(setting, v, zero, max)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_names_its_setting_and_what_it_allows() {
        let max = Duration::from_secs(10);
        assert_eq!(count("max_handlers", 1, 1, 5), Ok(1));
        let error = count("max_handlers", 0, 1, 5).unwrap_err();
        assert_eq!(error.setting(), Some("max_handlers"));
        assert_eq!(
            error.to_string(),
            "max_handlers = 0 is out of range: it must be from 1 to 5"
        );
        assert!(duration("stall_timeout", Duration::ZERO, false, max).is_err());
        assert!(duration("sse_retry", Duration::ZERO, true, max).is_ok());
        let long = duration("request_state_ttl", Duration::from_secs(11), false, max)
            .unwrap_err()
            .to_string();
        assert!(
            long.starts_with("request_state_ttl = 11s is out of range"),
            "{long}"
        );
        assert!(long.contains("at most 10s"), "{long}");
        assert_eq!(bound("stall_timeout", None, false, max), Ok(None));
        assert!(bound("stall_timeout", Some(Duration::MAX), false, max).is_err());
    }
}
