//! A request rate ([`Rate`]): so many requests per second, minute or hour,
//! as `--rate-limit 20/s` spells it; what a rate limit allows
//! (see [`Builder::rate_limit`](crate::http::Builder::rate_limit)).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// So many requests per window (a second, a minute or an hour).
///
/// ```
/// use sessionreg::http::Rate;
///
/// let rate: Rate = "20/s".parse().unwrap();
/// assert_eq!(rate, Rate::per_second(20));
/// assert_eq!(rate.to_string(), "20/s");
/// assert_eq!("100/m".parse::<Rate>().unwrap().window_secs(), 60);
/// assert!("0/s".parse::<Rate>().is_err());
/// assert!("20".parse::<Rate>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    count: u32,
    window_secs: u32,
}

impl Rate {
    /// `count` requests a second.
    pub const fn per_second(count: u32) -> Rate {
        Rate {
            count,
            window_secs: 1,
        }
    }

    /// `count` requests a minute.
    pub const fn per_minute(count: u32) -> Rate {
        Rate {
            count,
            window_secs: 60,
        }
    }

    /// `count` requests an hour.
    pub const fn per_hour(count: u32) -> Rate {
        Rate {
            count,
            window_secs: 3600,
        }
    }

    /// Requests per window.
    pub const fn count(&self) -> u32 {
        self.count
    }

    /// The window, in seconds (1, 60 or 3600).
    pub const fn window_secs(&self) -> u32 {
        self.window_secs
    }

    /// The window.
    pub fn window(&self) -> Duration {
        Duration::from_secs(u64::from(self.window_secs))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.window_secs {
            1 => "s",
            60 => "m",
            _ => "h",
        };
        write!(f, "{}/{unit}", self.count)
    }
}

/// Why a text is not a [`Rate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateParseError(String);

impl fmt::Display for RateParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a rate: COUNT/s, COUNT/m or COUNT/h, COUNT from 1",
            self.0
        )
    }
}

impl std::error::Error for RateParseError {}

impl FromStr for Rate {
    type Err = RateParseError;

    fn from_str(text: &str) -> Result<Rate, RateParseError> {
        let refused = || RateParseError(text.chars().take(64).collect());
        let (count, unit) = text.trim().split_once('/').ok_or_else(refused)?;
        let count: u32 = count.trim().parse().map_err(|_| refused())?;
        if count == 0 {
            return Err(refused());
        }
        match unit.trim() {
            "s" | "sec" | "second" => Ok(Rate::per_second(count)),
            "m" | "min" | "minute" => Ok(Rate::per_minute(count)),
            "h" | "hour" => Ok(Rate::per_hour(count)),
            _ => Err(refused()),
        }
    }
}
