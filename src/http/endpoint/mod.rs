//! The endpoint: the [`SessionManager`](manager::SessionManager) and its
//! [`Builder`](builder::Builder), the pipeline every request takes
//! (`router.rs`), and what runs beside the requests: the idle reaper, a
//! drain, shutdown.

pub(crate) mod builder;
pub(crate) mod drain;
pub(crate) mod manager;
pub(crate) mod reaper;
pub(crate) mod router;
pub(crate) mod shutdown;
