//! The flags of the baskets' bounds: how long one lives unused, how many
//! there may be, how many bytes their items may hold; and the bounds of one
//! basket, which are no flags. Every default is what the tools'
//! descriptions and the README say.

use clap::Args;
use std::time::Duration;

/// Baskets kept at most, all principals together (`--max-baskets`).
pub const MAX_BASKETS: usize = 100_000;
/// Baskets one principal may keep at once (`--baskets-per-principal`): a
/// tenth of the store, as the layer's own stores.
pub const BASKETS_PER_PRINCIPAL: usize = MAX_BASKETS / 10;
/// Bytes the items of all baskets may hold together (`--basket-bytes`):
/// 64 MiB.
pub const BASKET_BYTES: usize = 64 * 1024 * 1024;
/// Bytes the items of one principal's baskets may hold together
/// (`--basket-bytes-per-principal`): a tenth of [`BASKET_BYTES`].
pub const BASKET_BYTES_PER_PRINCIPAL: usize = BASKET_BYTES / 10;
/// The longest item, in bytes (past it, `basket_add` is -32602).
pub const ITEM_BYTES: usize = 1024;
/// The most items one basket holds.
pub const ITEMS_PER_BASKET: usize = 1_000;
/// What an item costs besides its bytes: its `String` (pointer, length,
/// capacity) in the basket's list.
pub const ITEM_OVERHEAD: usize = std::mem::size_of::<String>();

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
    /// Bytes the items of all baskets may hold together (each item costs
    /// its bytes and 24 more); past it `basket_add` answers "the baskets
    /// hold all the bytes they may".
    #[arg(long, default_value_t = BASKET_BYTES)]
    pub basket_bytes: usize,
    /// Bytes the items of one principal's baskets may hold together; past
    /// it `basket_add` answers "your baskets hold N bytes already".
    /// Anonymous callers have --basket-bytes alone.
    #[arg(long, default_value_t = BASKET_BYTES_PER_PRINCIPAL)]
    pub basket_bytes_per_principal: usize,
}

impl BasketFlags {
    /// `--basket-lifetime-ms` as a duration.
    pub fn lifetime(&self) -> Duration {
        Duration::from_millis(self.basket_lifetime_ms)
    }

    /// The flags checked: a bound of zero would refuse every basket, or
    /// every item.
    pub fn validate(&self) -> Result<(), String> {
        for (flag, value) in [
            ("--max-baskets", self.max_baskets),
            ("--baskets-per-principal", self.baskets_per_principal),
            ("--basket-bytes", self.basket_bytes),
            (
                "--basket-bytes-per-principal",
                self.basket_bytes_per_principal,
            ),
        ] {
            if value == 0 {
                return Err(format!("{flag} must be at least 1"));
            }
        }
        Ok(())
    }
}
