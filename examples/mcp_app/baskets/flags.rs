//! The flags of the baskets' bounds: how long one lives unused, how many
//! there may be. Every default is what `basket_create`'s description and
//! the README say.

use clap::Args;
use std::time::Duration;

/// Baskets kept at most, all principals together (`--max-baskets`).
pub const MAX_BASKETS: usize = 100_000;
/// Baskets one principal may keep at once (`--baskets-per-principal`): a
/// tenth of the store, as the layer's own stores.
pub const BASKETS_PER_PRINCIPAL: usize = MAX_BASKETS / 10;

/// The bounds of the baskets.
#[derive(Args, Debug, Clone)]
pub struct BasketFlags {
    /// How long a basket (the `basket_*` tools' handle) lives unused.
    #[arg(long, default_value_t = 3_600_000)]
    pub basket_lifetime_ms: u64,
    /// Baskets kept at most, all principals together; past it
    /// `basket_create` answers "too many baskets".
    #[arg(long, default_value_t = MAX_BASKETS)]
    pub max_baskets: usize,
    /// Baskets one principal may keep at once, however it was
    /// authenticated; past it `basket_create` answers "you keep N baskets
    /// already". Anonymous callers have --max-baskets alone.
    #[arg(long, default_value_t = BASKETS_PER_PRINCIPAL)]
    pub baskets_per_principal: usize,
}

impl BasketFlags {
    /// `--basket-lifetime-ms` as a duration.
    pub fn lifetime(&self) -> Duration {
        Duration::from_millis(self.basket_lifetime_ms)
    }

    /// The flags checked: a bound of zero would let nobody make a basket.
    pub fn validate(&self) -> Result<(), String> {
        for (flag, value) in [
            ("--max-baskets", self.max_baskets),
            ("--baskets-per-principal", self.baskets_per_principal),
        ] {
            if value == 0 {
                return Err(format!("{flag} must be at least 1"));
            }
        }
        Ok(())
    }
}
