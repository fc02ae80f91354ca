//! What a `subscriptions/listen` stream will hear, as the application sees
//! it before the stream opens ([`ListenFilter`], [`App::listen_filter`]):
//! the part of the client's filter the layer honours, which the
//! application may only narrow.
//!
//! [`App::listen_filter`]: crate::http::App::listen_filter

use super::filter::Filter;
use super::kind::ListKind;

/// The filter of a 2026-07-28 `subscriptions/listen` request as the layer
/// honours it (every kind of list asked for; the resource URIs within the
/// listen bounds), handed to [`App::listen_filter`] before the stream
/// opens. The application can only take away: a kind of change it never
/// publishes, a URI the request's principal may not read. What is left is
/// what the acknowledgement echoes and the stream hears.
///
/// ```
/// # #[cfg(feature = "http")] {
/// use sessionreg::http::ListenFilter;
///
/// // A server without prompts, whose resources live under `basket://`.
/// fn narrow(mut filter: ListenFilter) -> Option<ListenFilter> {
///     filter.drop_prompts_list_changed();
///     filter.retain_resource_uris(|uri| uri.starts_with("basket://"));
///     Some(filter)
/// }
/// # }
/// ```
///
/// [`App::listen_filter`]: crate::http::App::listen_filter
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenFilter(pub(crate) Filter);

impl ListenFilter {
    /// Whether the stream will hear `notifications/tools/list_changed`.
    pub fn tools_list_changed(&self) -> bool {
        self.0.lists[ListKind::Tools.index()]
    }

    /// Whether the stream will hear `notifications/prompts/list_changed`.
    pub fn prompts_list_changed(&self) -> bool {
        self.0.lists[ListKind::Prompts.index()]
    }

    /// Whether the stream will hear `notifications/resources/list_changed`.
    pub fn resources_list_changed(&self) -> bool {
        self.0.lists[ListKind::Resources.index()]
    }

    /// The resources whose `notifications/resources/updated` the stream
    /// will hear, in the order the client gave them.
    pub fn resource_uris(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.0.uris.iter().map(|uri| &**uri)
    }

    /// The stream will not hear of the tools list's changes.
    pub fn drop_tools_list_changed(&mut self) {
        self.0.lists[ListKind::Tools.index()] = false;
    }

    /// The stream will not hear of the prompts list's changes.
    pub fn drop_prompts_list_changed(&mut self) {
        self.0.lists[ListKind::Prompts.index()] = false;
    }

    /// The stream will not hear of the resources list's changes.
    pub fn drop_resources_list_changed(&mut self) {
        self.0.lists[ListKind::Resources.index()] = false;
    }

    /// Keeps the resource URIs `keep` says yes to, in their order.
    pub fn retain_resource_uris(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.0.uris.retain(|uri| keep(uri));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn everything() -> ListenFilter {
        ListenFilter(Filter {
            lists: [true; 3],
            uris: vec!["a://1".into(), "b://2".into(), "a://3".into()],
        })
    }

    #[test]
    fn each_kind_is_dropped_alone() {
        let mut filter = everything();
        filter.drop_prompts_list_changed();
        assert!(filter.tools_list_changed());
        assert!(!filter.prompts_list_changed());
        assert!(filter.resources_list_changed());
        filter.drop_tools_list_changed();
        filter.drop_resources_list_changed();
        assert!(!filter.tools_list_changed() && !filter.resources_list_changed());
        assert_eq!(filter.resource_uris().len(), 3);
    }

    #[test]
    fn uris_are_retained_in_their_order() {
        let mut filter = everything();
        filter.retain_resource_uris(|uri| uri.starts_with("a://"));
        assert_eq!(
            filter.resource_uris().collect::<Vec<_>>(),
            ["a://1", "a://3"]
        );
        assert!(filter.tools_list_changed());
    }
}
