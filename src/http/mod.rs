//! The streamable-HTTP session layer (feature `http`): MCP over hyper 1
//! and tokio, both eras on one endpoint: legacy sessions (protocol versions
//! up to 2025-11-25), every one of them kept in a
//! [`Registry`](crate::Registry), and modern requests (2026-07-28), which
//! have no session.
//!
//! A [`SessionManager`] serves one MCP endpoint. The application implements
//! [`App`]: it opens a session from an `initialize` request, handles one
//! JSON-RPC message at a time ([`Context`] says which request, in which
//! era), and hears, exactly once, that a session ended and why. The
//! manager does the rest.
//!
//! The layer's layout (one home for each concern, as a tree) and one
//! request followed through it are in the design notes:
//! [`docs::design`](crate::docs::design), "The HTTP layer".
//!
//! ## The rules, each with its test
//!
//! Every request:
//!
//! * A present `Origin` not allowed: 403, on every bind; `Host` kept to
//!   loopback names unless bound to a public address or allowed
//!   ([`RebindingProtection`]). `http_access::a_foreign_origin_is_refused_on_every_bind`,
//!   `::a_public_bind_lets_any_host_in_but_no_foreign_origin`,
//!   `::foreign_host_or_origin_is_403_by_default_on_loopback`,
//!   `::allow_lists_and_protection_off`, `::rebinding_protection_holds_without_serve`,
//!   `::origin_allow_list_swaps_at_run_time`.
//! * Origins allowed by name get CORS headers and preflights:
//!   `http_access::cors_for_origins_allowed_by_name`.
//! * A second `MCP-Session-Id`, `Authorization`, `MCP-Protocol-Version`,
//!   `Last-Event-ID`, `Mcp-Method`, `Mcp-Name`, `Origin` or `Host`: 400
//!   (a second `Mcp-Param-*`, at 2026-07-28: 400 with `-32020`).
//!   `http_auth::duplicated_authorization_and_version_headers_get_400`,
//!   `http_legacy::malformed_oversized_non_ascii_and_duplicated_session_ids`,
//!   `http_security::a_second_origin_header_is_400`,
//!   `::a_second_mcp_param_header_is_400`.
//! * Authentication: 401 with `WWW-Authenticate`, or 403.
//!   `http_auth::requests_without_valid_credentials_are_401_with_a_challenge`,
//!   `::an_authenticator_may_answer_403`, `::rotated_tokens_apply_to_the_next_request`,
//!   `::stateless_requests_are_authenticated`; tokens kept as digests:
//!   `bearer::tests::tokens_are_kept_and_compared_as_digests`.
//! * A stream holds its credential: a listen stream ends gracefully (with
//!   its result) and a legacy session's `GET` stream ends (the session
//!   stays: it belongs to the principal) when the credential it was opened
//!   with expires (an OAuth token's `exp`, plus the leeway, has passed) or
//!   is withdrawn (a static token that a reload of the set drops or gives
//!   to another principal), counted by reason
//!   (`credential_expired`, `credential_withdrawn`); a stream of another
//!   token stays. `http_listen::a_withdrawn_token_ends_its_streams_and_no_other_ones`,
//!   `http_oauth::a_listen_stream_ends_with_its_result_when_its_token_expires`,
//!   `::a_get_stream_ends_when_its_token_expires_and_its_session_stays`;
//!   `bearer::tests::a_replacement_withdraws_the_tokens_it_drops_and_no_other`,
//!   `validity::tests::a_withdrawal_wakes_the_stream_that_waits_on_it_once_registered`,
//!   `beat::tests::keep_alives_come_after_a_quiet_period_and_the_deadline_once`,
//!   `beat::tests::a_busy_stream_still_finds_its_deadline_and_none_has_no_timer`.
//! * OAuth (feature `oauth`, module `oauth`): the metadata at the well-known
//!   paths, 401 with `resource_metadata`, 403 `insufficient_scope`, JWTs
//!   checked against the issuer's keys, rotation and its bound, an issuer
//!   that is down, the cache of accepted tokens, introspection:
//!   `http_oauth` (each test named for what it shows). Access tokens
//!   only: an ID token gets 401 whatever its audience
//!   (`http_oauth::an_id_token_gets_401_even_for_an_accepted_audience`),
//!   `typ: at+jwt` when required
//!   (`::with_at_jwt_required_only_tokens_typed_at_jwt_pass`), an extra
//!   audience without a required scope warned of
//!   (`::an_extra_audience_without_a_required_scope_is_warned_of_once`).
//!   A tool's own scope: 403 `insufficient_scope` naming every scope the
//!   call needs, in both eras, a session usable after the step-up
//!   (`http_oauth::a_tools_own_scope_is_asked_for_with_a_step_up_challenge_in_both_eras`,
//!   `needs::tests::a_call_needs_the_required_its_methods_and_its_targets_scopes`;
//!   `tools/list` leaving out what the token cannot call, when asked:
//!   `http_oauth::tools_list_leaves_out_tools_the_token_cannot_call_only_when_asked`);
//!   `verify::tests::at_jwt_is_told_by_its_media_type_in_any_case`,
//!   `verify::tests::id_token_claims_are_seen_whatever_their_value`.
//!   Bounded work toward the authorization server: one discovery per
//!   interval while its metadata is down
//!   (`http_oauth::discovery_while_the_metadata_is_down_costs_a_bounded_number_of_gets`),
//!   one introspection per refusal TTL for a flood of one inactive token
//!   (`::a_flood_of_one_inactive_token_costs_one_introspection_per_refusal_ttl`),
//!   keys past `keys_max_age` not trusted, 503
//!   (`::keys_past_their_max_age_are_not_trusted_while_the_jwks_fails`), the
//!   bounds' ranges (`::bad_configurations_are_refused`);
//!   `paced::tests::one_start_per_interval`,
//!   `flights::tests::requests_in_one_flight_ask_once_and_leave_nothing_behind`,
//!   `refusals::tests::a_refusal_stands_for_its_ttl_and_no_longer`.
//! * An unsupported `MCP-Protocol-Version`: 400 with an
//!   `UnsupportedProtocolVersionError` listing the versions served; any
//!   served version passes; absent means 2025-03-26.
//!   `http_legacy::unsupported_protocol_version_is_400_and_supported_ones_pass`.
//! * `POST` bodies: `Accept` without both types 406, `Content-Type` not
//!   JSON 415, over the limit 413 (declared or sent), slower than the body
//!   read timeout 408, bad JSON 400 with `-32700`, a batch 400.
//!   `http_legacy::insufficient_accept_is_406_and_creates_nothing`,
//!   `::wrong_content_type_is_415_and_creates_nothing`,
//!   `::oversized_body_is_413_and_creates_nothing`, `::bad_json_is_400_with_a_parse_error`,
//!   `http_hostile::slow_bodies_get_408_and_are_shed`,
//!   `::large_bodies_cost_their_size_and_the_limit_holds`. A body is read
//!   in one walk (jiter) that also finds the params' members the layer
//!   reads, and only when that walk reads it as serde_json does; any other
//!   body (a response, nesting past 200 levels, any error) is serde_json's,
//!   so every refusal says what serde_json says.
//!   `one_walk::tests::the_walk_agrees_with_serde_json`,
//!   `validate::tests::the_members_the_read_found_are_those_found_here`,
//!   `http_hostile::deeply_nested_json_is_refused_or_kept_raw_never_recursed`.
//! * Other methods: 405 with `Allow`. `http_legacy::other_methods_are_405_with_allow`.
//!
//! The session era (legacy versions):
//!
//! * `initialize` without a session id is checked first (its shape, the
//!   application's [`open`](App::open)) and only then creates a session,
//!   answered with `MCP-Session-Id`; a refused or rejected first request
//!   creates nothing that outlives it and shows no id.
//!   `http_legacy::initialize_answers_with_a_session_id`,
//!   `::initialize_without_a_protocol_version_is_400_and_creates_nothing`,
//!   `::refused_open_creates_nothing`,
//!   `::initialize_answered_with_an_error_ends_the_session_rejected`,
//!   `http_failures::panic_in_initialize_leaves_nothing_and_shows_no_id`.
//! * Any other request without a session id 400; `initialize` with one 400.
//!   `http_legacy::requests_without_a_session_id_are_400`, `::initialize_with_a_session_id_is_400`.
//! * An id that is malformed, unknown, stale, forged, expired, terminated,
//!   or another principal's: 404 with a JSON-RPC error, counted by cause
//!   (another principal's as unknown in `/metrics`).
//!   `http_legacy::bad_ids_are_404_with_a_json_rpc_error`,
//!   `http_auth::another_principals_requests_with_a_session_id_find_nothing`,
//!   `::metrics_do_not_tell_a_foreign_live_id_from_an_unknown_one`,
//!   `::a_principal_from_middleware_binds_the_session`.
//! * Notifications and responses: 202; requests: JSON or an SSE stream.
//!   `http_legacy::notifications_and_responses_are_202`, `::a_request_may_be_answered_with_an_sse_stream`.
//! * `DELETE`: the session ends (`Deleted`), 200; again 404.
//!   `http_legacy::delete_is_200_then_404`.
//! * `GET`: the session's one standalone stream (409 for a second), with
//!   keep-alives; it counts in flight, and its end starts the idle clock.
//!   `http_legacy::standalone_stream_second_is_409_and_keep_alives_flow`,
//!   `::dropped_stream_keeps_the_session_but_starts_its_idle_clock`,
//!   `::stream_survives_a_dropped_stream_and_posts_still_work`.
//! * Resumption with `Last-Event-ID` where the event log is on (stream-tagged
//!   ids, the named stream only, 409 while connected, 400 for another
//!   session's stream, a priming event first at 2025-11-25).
//!   `http_resume::server_messages_have_unique_ids_and_resume_with_last_event_id`
//!   and the other tests of `http_resume`.
//! * At capacity 503 with `Retry-After`; draining 503 for `initialize` only.
//!   `http_legacy::capacity_is_503_with_retry_after_and_creates_nothing`,
//!   `http_drain::a_draining_node_takes_no_new_session_and_serves_its_own`.
//! * A session's work ends with it, by any path: its running requests are
//!   cancelled (404, 503 at shutdown); `notifications/cancelled` stops one;
//!   a disconnect alone does not; a handler error or panic ends the session
//!   `Failed` (500) and no other.
//!   `http_hostile::running_handlers_end_with_their_session`,
//!   `::failure_and_shutdown_end_the_running_handlers`,
//!   `::notifications_cancelled_ends_the_named_request`,
//!   `http_failures::a_client_that_disconnects_does_not_cancel_its_handler`,
//!   `::handler_panic_ends_only_its_session`, `::handler_error_ends_its_session_failed`.
//! * Idle sessions are reaped, never under a running request.
//!   `http_failures::the_reaper_never_cancels_a_running_handler`,
//!   `http_access::the_reaper_starts_with_the_first_request_and_stops_with_the_manager`.
//!
//! The modern era (2026-07-28; [`Builder::serve_modern`]): `http_modern`,
//! whose test names cite the transport page's sections; and what no client
//! can take from another (`http_security`):
//!
//! * Every store the principals share has a global bound and a share per
//!   principal below it, on by default (a tenth): past its share a
//!   principal gets 429 naming the bound and nobody else notices; a full
//!   store 503 saying so; each with a `Retry-After` of when a place frees
//!   (tasks, running and retained together: `::a_principal_past_its_task_share_gets_429_and_no_other_principal_notices`,
//!   `::retention_counts_against_its_owners_share_until_it_frees`,
//!   `::a_full_task_store_says_so_with_a_retry_after_that_comes_true`;
//!   single-use `requestState`s: `::a_principal_past_its_single_use_share_gets_429_and_no_other_principal_notices`).
//!   Without principals, the global bounds only:
//!   `::anonymous_servers_keep_their_global_bounds_only`.
//! * How fast a principal asks is bounded too, when a rate is set
//!   (`Builder::rate_limit`): past its burst, 429 with `Retry-After`,
//!   `RateLimit-Policy` and `RateLimit`, a JSON-RPC error with the
//!   request's id naming the limit, in both eras; another principal is
//!   served; the cells are bounded in count
//!   (`http_rates::a_principal_past_its_rate_gets_429_with_the_headers_and_no_one_else_notices`,
//!   `::the_burst_is_what_rate_burst_says`; a tool's own limit refuses
//!   that tool only and names it: `::a_tools_limit_refuses_that_tool_only_and_names_it`,
//!   `rate_limits::tests::a_principal_flood_holds_a_bounded_number_of_cells_and_the_known_keep_theirs`, `rate_limits::tests::cells_back_at_a_full_burst_are_pruned_and_a_newcomer_gets_its_own`, `rate_limits::tests::the_limit_keeps_to_its_model`).
//!   A limit of the application's own key, with or without a principal
//!   (`Builder::keyed_rate_limit`: a client address, a header), refuses
//!   that key only, under its name
//!   (`http_rates::a_keyed_limit_by_client_address_limits_the_unauthenticated`,
//!   `::a_keyed_limit_by_a_header_refuses_that_key_only`,
//!   `::a_keyed_limit_of_a_bad_or_taken_name_is_refused_at_build`).
//! * With a fleet's bus, a principal's limit is the fleet's: two nodes on
//!   one Redis allow it its burst in all, and while Redis is away each
//!   node keeps its share, never none and never all
//!   (`http_bus::two_nodes_hold_a_principals_combined_limit`,
//!   `::redis_away_each_node_keeps_its_share_and_back_the_fleet_decides`;
//!   through nginx and HAProxy:
//!   `fleet_redis::nginx_fleet_holds_a_principals_rate`,
//!   `::haproxy_fleet_holds_a_principals_rate`;
//!   `policy::tests::a_node_keeps_its_share_of_the_burst_among_the_nodes_seen`).
//! * A task waits for input a bounded time, then fails saying so:
//!   `http_security::a_task_waiting_for_input_fails_after_its_input_timeout`.
//! * A sealed `requestState` opens only for the principal and the request it
//!   was sealed for, over an encoding no two requests share:
//!   `::a_state_sealed_for_a_crafted_request_opens_for_no_other`,
//!   `::a_state_opens_for_its_own_retry`; sealed with nonces a forked child
//!   does not repeat: `fork_sealing`.
//! * Mirrored integers compare exactly: `http_security::mirrored_integers_compare_exactly`.
//! * A task created while the server shuts down is answered 503, cleanly:
//!   `::tasks_created_while_the_server_shuts_down_get_clean_answers`; no
//!   log line carries a whole task id: `::no_log_line_carries_a_whole_task_id`.
//! * A setting out of range is a [`ConfigError`] naming it, never a panic:
//!   `::a_request_state_ttl_too_long_is_a_typed_error_not_a_panic`,
//!   `::the_example_says_why_a_setting_is_out_of_range_and_exits_2`,
//!   `http_connections::the_longest_bounds_serve_and_longer_ones_are_refused`.
//!
//! Listen streams (`subscriptions/listen`, 2026-07-28, SEP-2575): `http_listen`,
//! whose tests cite the subscriptions page's sections; against the official
//! clients, `tests/interop/run.sh listen`:
//!
//! * The acknowledgement first, with the honoured filter; then only the
//!   kinds asked for (a kind or a URI not asked for, published first, never
//!   arrives before the one asked for), each stamped with the listen
//!   request's id:
//!   `http_listen::acknowledges_first_then_sends_only_what_was_asked_stamped_with_its_id`.
//! * A resource's update reaches only the principals of its audience:
//!   `::an_update_reaches_only_its_audience`.
//! * Shutdown and drain end every stream gracefully, with the listen
//!   request's result, each end counted once; a draining node refuses new
//!   streams (503): `::shutdown_ends_every_stream_gracefully_with_its_result`,
//!   `::serves_shutdown_ends_listen_streams_with_their_result_and_drains`,
//!   `::a_draining_node_ends_its_streams_and_refuses_new_ones`.
//! * A client that closes its stream ends its listener (`disconnected`),
//!   once; nothing is delivered to it after:
//!   `::a_client_that_closes_its_stream_ends_its_listener_once`. The
//!   handler timeout does not end a stream:
//!   `::the_handler_timeout_does_not_end_a_listen_stream`.
//! * Bounded: one principal past its share gets 429 and nobody else
//!   notices (`::a_listen_flood_by_one_principal_is_429_and_nobody_else_notices`);
//!   past the capacity 503 naming it
//!   (`::a_full_listen_store_is_503_naming_its_bound_and_an_ended_stream_makes_room`);
//!   a listener that does not read is ended when its queue of a
//!   resource's updates fills (`lagged`), never waited for, and slows
//!   nobody (`::a_listener_that_never_reads_is_ended_and_slows_nobody`);
//!   list changes take no place in the queue: each kind is one signal,
//!   and a burst of them merges, heard once, ending nobody
//!   (`::a_burst_of_list_changes_merges_and_ends_nobody`); a filter
//!   is honoured for its first `listen_uris` URIs
//!   (`::ten_thousand_uris_in_one_filter_are_bounded`) that fit in
//!   `listen_filter_bytes` (`http_listen_bytes::a_filter_is_honoured_for_the_uris_that_fit_its_bytes`);
//!   a URI past `listen_uri_bytes` refuses it and keeps nothing
//!   (`http_listen_bytes::filters_of_long_uris_are_refused_and_keep_nothing`);
//!   the URIs' bytes are a store with a share per principal
//!   (`http_listen_bytes::a_principal_past_its_share_of_uri_bytes_is_429_and_nobody_else_notices`);
//!   a listen request's id is bounded
//!   (`http_listen_bytes::a_listen_id_past_its_bound_is_refused`).
//! * A legacy `resources/subscribe` has a filter's bounds, refused by the
//!   layer past them (`http_listen_bytes::a_legacy_subscribe_past_its_bounds_is_refused_and_keeps_nothing`);
//!   one that races its session's `DELETE` leaves nothing in the index
//!   (`http_listen_bytes::a_subscribe_racing_delete_leaves_nothing_in_the_index`;
//!   under every interleaving: the loom model `loom-tests/tests/subscriptions.rs`).
//! * The same publication reaches legacy sessions as their revision has
//!   it (the `GET` stream, `resources/subscribe`):
//!   `http_listen::legacy_sessions_hear_the_same_publications_as_their_revision_has_it`.
//! * The filter and the topic index:
//!   `filter::tests::honours_every_kind_and_a_bounded_list_of_uris`,
//!   `filter::tests::an_empty_filter_hears_nothing_and_a_bad_one_is_refused`,
//!   `filter::tests::a_uri_past_its_bound_refuses_the_filter_and_the_bytes_bound_the_rest`,
//!   `topics::tests::members_join_and_leave_kinds_and_uris`,
//!   `topics::tests::joins_and_leaves_of_one_uri_racing_keep_every_member_that_stays`,
//!   `topics::tests::a_uri_is_kept_once_whoever_names_it`,
//!   `roster::tests::joins_and_leaves_match_a_model_at_every_height`,
//!   `roster::tests::walks_racing_leaves_see_every_member_that_stays`; a publication
//!   racing a listener's end (nothing delivered after its cleanup ran,
//!   cleanup once; a list change's signal too): the loom model
//!   `loom-tests/tests/listen.rs`.
//!
//! The fleet's bus on Redis (feature `redis`, module `bus`): `http_bus`, on a
//! real `redis-server`:
//!
//! * A publication reaches the matching listeners of every node once, and
//!   only its audience: `http_bus::a_publication_reaches_every_nodes_listeners_once_and_only_its_audience`.
//! * A single-use `requestState` opens on any node once:
//!   `::a_single_use_state_opens_on_any_node_once`; and stays used when
//!   Redis loses data (the record's epoch, with the Redis process's
//!   `run_id`, checked in the script that records the use):
//!   `::a_flush_refuses_a_used_state_at_once`,
//!   `::a_restart_from_a_snapshot_refuses_a_state_used_after_it`,
//!   `::redis_away_and_back`.
//! * Every frame is sealed under the fleet's keys; a frame forged, sealed
//!   under other keys or published again reaches no listener and is
//!   counted by cause: `::a_forged_update_reaches_no_listener_and_is_counted`,
//!   `::a_forged_lost_frame_ends_no_stream`, `::a_replayed_frame_is_heard_once`,
//!   `wire::tests::forged_changed_foreign_and_unknown_frames_are_rejected_by_cause`,
//!   `wire::tests::a_frame_is_heard_once_and_only_within_its_age`; keys
//!   rotate: `http_bus::a_rotation_keeps_the_nodes_hearing_each_other`; no
//!   bus starts without them: `bus::tests::a_bus_without_keys_does_not_start`.
//!
//! Bounds: the table below, each at work in `http_hostile`,
//! `http_connections`, `http_memory` and `http_emfile`; shutdown in
//! `http_failures::graceful_shutdown_ends_sessions_and_waits_for_requests`
//! and `::shutdown_waits_only_up_to_its_deadline`; ids never logged whole:
//! `http_logs::no_log_line_carries_a_whole_session_id`; metrics names:
//! `http_legacy::metrics_text_has_the_stable_names`.
//!
//! ## Bounds
//!
//! Every bound has a production default, a [`Builder`] method and a flag of
//! the example servers (`examples/mcp_server.rs`); this table is the one
//! source, which the README copies (CI checks the copy: `.ci/rule-tests`).
//! A bound that may be off takes an `Option` (`None`: none);
//! [`Builder::build`] refuses any value out of its range (zero where zero
//! means nothing, a duration past [`Defaults::DURATION_LIMIT`](crate::http::Defaults::DURATION_LIMIT), a share past its
//! store) with a [`ConfigError`] naming the setting and what it allows.
//!
//! | bound | default | `Builder` method | flag |
//! |---|---|---|---|
//! | request headers (and, on HTTP/1, the next request of an idle connection) | 10 s, then closed | `Connections::header_read_timeout` | `--header-read-timeout-ms` |
//! | a whole `POST` body | 30 s, then 408 | `body_read_timeout` | `--body-read-timeout-ms` |
//! | a connection with nothing in flight | 60 s, then closed | `Connections::idle_timeout` | `--connection-idle-timeout-ms` |
//! | open connections | 10 000; past it, no accepting | `Connections::max_connections` | `--max-connections` |
//! | HTTP/2 keep-alive | a ping every 20 s, 20 s to answer | `Connections::http2_keep_alive` | `--http2-keep-alive-ms` |
//! | HTTP/2 streams per connection | 100 | `Connections::http2_max_concurrent_streams` | `--http2-max-streams` |
//! | requests in flight per session | 100; then 429 + `Retry-After` | `max_requests_per_session` | `--max-requests-per-session` |
//! | handlers in flight overall | 10 000; then 503 + `Retry-After` | `max_handlers` | `--max-handlers` |
//! | a request's work (its handler, then its streamed reply) | 300 s; then dropped, and the request gets a JSON-RPC error (-32603); it also ends with its session, by any path | `handler_timeout` | `--handler-timeout-ms` |
//! | request body | 4 MiB; then 413 (params kept as raw JSON: a request costs its size) | `max_body_bytes` | `--max-body-bytes` |
//! | an SSE stream's queue | 64 messages and 256 KiB; a notification that does not fit is dropped and counted | `stream_queue` | `--stream-queue-messages`, `--stream-queue-bytes` |
//! | a write that makes no progress | 60 s; then the stream (and in `serve`, the connection) ends | `stall_timeout` | `--stall-timeout-ms` |
//! | event logs (for resumable SSE streams) | per stream, its event count (`event_log_events`: none by default, 256 in the examples); per session, all its streams together, 256 KiB; all sessions together, 128 MiB; a stream nobody opened keeps none | `event_log_events`, `event_log_session_bytes`, `event_log_total_bytes` | `--event-log`, `--event-log-bytes`, `--event-log-total-bytes` |
//! | live sessions | 65 536 (the example: 10 000); then 503 + `Retry-After` | `capacity` | `--max-sessions` |
//! | tasks (the tasks extension, 2026-07-28), running or ended and retained, all principals together | 10 000; then 503 saying the store is full, `Retry-After` when the soonest retained task is freed | `task_capacity` | — |
//! | the same, per principal | a tenth of the store (1 000); then 429 naming the bound, `Retry-After` when one of that principal's frees; nobody else notices | `task_share` (`None`: off) | — |
//! | an ended task's result, unread | 600 s after its work ends (its `ttlMs`; it counts against its principal's share meanwhile); running work is never cut short unless `task_ttl_ends_work` | `task_retention` | — |
//! | a task's wait for input | 300 s; then the task fails, its status message saying so | `task_input_timeout` (`None`: no bound) | — |
//! | a sealed `requestState` (2026-07-28 multi-round-trip requests) | opens for 600 s | `request_state_ttl` | `--request-state-ttl-ms` (`conformance_server`) |
//! | single-use `requestState`s not used yet, all principals together | 100 000; then 503 saying the record is full, `Retry-After` when the soonest expires | `single_use_states` | — |
//! | the same, per principal | a tenth (10 000); then 429 naming the bound; nobody else notices | `single_use_share` (`None`: off) | — |
//! | listen streams (`subscriptions/listen`, 2026-07-28), all principals together | 10 000; then 503 + `Retry-After` | `listen_capacity` | — |
//! | the same, per principal | a tenth (1 000); then 429 naming the bound; nobody else notices | `listen_share` (`None`: off) | — |
//! | resource updates waiting for one listen stream (list changes wait as one flag per kind, merged) | 64; then the stream is ended with its result (the client re-listens and refetches), counted `lagged`; the publisher never waits | `listen_queue` | — |
//! | resource URIs in one listen filter, or in one legacy session's `resources/subscribe`s | 256; a filter's first ones are honoured, and the acknowledgement lists them; a subscribe past them -32602 | `listen_uris` | — |
//! | one resource URI (a filter's, a subscribe's) | 2 KiB; past it the listen or the subscribe is refused, -32602 naming the bound | `listen_uri_bytes` | — |
//! | the URIs of one filter (or one session's subscriptions) together | 64 KiB; a filter's first URIs that fit are honoured; a subscribe past it -32602 | `listen_filter_bytes` | — |
//! | bytes of resource URIs kept, every filter and every session's subscriptions together (each URI its bytes and 512 more: what the topic index keeps of it) | 64 MiB; then 503 + `Retry-After` naming the bound | `listen_bytes` | — |
//! | the same, per principal | a tenth (6.4 MiB); then 429 naming the bound; nobody else notices | `listen_bytes_share` (`None`: off) | — |
//! | a listen request's id, which its stream keeps | 256 bytes of its JSON; past it the listen is refused, -32600 | fixed (`Defaults::LISTEN_ID_BYTES`) | — |
//! | requests per principal (JSON-RPC requests, both eras; this node's count, the fleet's with a bus: Redis decides, each node its share while it cannot) | none; with a rate (`20/s`, `100/m`, `1000/h`), past it 429 + `Retry-After`, `RateLimit-Policy`/`RateLimit` and a JSON-RPC error naming the limit; nobody else notices; counted `sessionreg_rate_limited_total{limit}` | `rate_limit` | `--rate-limit` |
//! | the same, a burst | one window's worth (the rate's count); 1 to 1 000 000 | `rate_burst` | `--rate-burst` |
//! | a tool's calls per principal | none; with a rate, past it that tool's calls get 429 as above, `"tool"` in the headers and the tool named in the error; burst one window's worth | `tool_rate_limit` | `--tool-rate-limit TOOL=RATE` |
//! | requests per key the application derives (client address, method, tool, a header; with or without a principal) | none; with a `KeyedRateLimit`, past it 429 as above under the limit's name (1 to 32 of `a-z0-9_-.`, checked at build); burst one window's worth unless set; the fleet's with a bus | `keyed_rate_limit` | — |
//! | principals with a rate-limit cell of their own, per limit | 100 000; past it newcomers share one cell (same rate) until the idle cells are pruned (at most once a window); counted `sessionreg_rate_limit_overflow_total` | `rate_limited_principals` | — |
//! | the duration histograms' series (`mcp_server_operation_duration_seconds`: each tool's or prompt's name is a label, and clients choose names) | 1 000 names; a new name past them, or a name past 128 bytes, is counted as `_OTHER` (one series more per method and version at most), and so is a method outside MCP's | `operation_series` | — |
//!
//! The connection bounds (header read, idle connection, open connections,
//! HTTP/2: [`Connections`], and the socket half of stalled writes) are
//! applied by [`serve`] and [`serve_with`];
//! a server that mounts the manager on a stack of its own sets that
//! stack's (or serves its router through `serve`, as `examples/axum_server`
//! does); all the others hold wherever the manager is mounted. A server on
//! the open network should also sit behind a proxy that limits connections
//! per client address: these bounds protect the process, not one client
//! from another.
//!
//! The OAuth resource server's, set on its `ResourceServerBuilder` (module
//! `oauth`, feature `oauth`; it refuses a duration out of its range with an
//! `OAuthConfigError::OutOfRange` naming it): what it keeps, and what it
//! asks of its authorization server however many requests need it.
//!
//! | the OAuth resource server (feature `oauth`) | default | `ResourceServerBuilder` method | flag |
//! |---|---|---|---|
//! | how long the authorization server's keys are trusted after they were last fetched | 5 min (fetched again in the background from 2.5 min); past it every JWT gets 503 + `Retry-After` until a fetch succeeds | `keys_max_age` (at most a day) | — |
//! | fetches of the keys, and discoveries of the metadata | one at a time each, and at most one start per 10 s each, however many requests need one (an unknown `kid`, an opaque token while the metadata is down) | `min_refresh_interval` (at most `keys_max_age`) | — |
//! | one exchange with the authorization server | 5 s; 1 MiB read at most | `fetch_timeout` | — |
//! | accepted tokens kept | 10 000, each until its `exp` (an introspected one 60 s at most) | `token_cache`, `introspection_ttl` | — |
//! | opaque tokens' refusals kept (a refused token is not asked about again meanwhile) | 10 000, each 5 s (60 s at most) | `refusal_cache`, `refusal_ttl` | — |
//! | introspections in flight | one per token (its other requests wait for it); 64 in all, past which a request waits up to the fetch timeout, then gets 401 | — | — |
//!
//! ## How each end path reaches the registry
//!
//! | path | who | registry call |
//! |---|---|---|
//! | `DELETE` | request handler | `terminate_session(Deleted)` |
//! | idle | reaper task / any lookup | `reap_idle()` / `lookup` → `IdleTimeout` |
//! | handler error or panic | the handler's task | `terminate_session(Failed)` |
//! | `initialize` answered with an error | the initialize request | `terminate(Rejected)` |
//! | shutdown | [`SessionManager::shutdown`] | `terminate_all(Shutdown)` |
//!
//! In all of them the close callback (work stopped, streams closed, reason
//! logged, [`App::closed`]) runs inside the winning call, once.
//!
//! ## Choices and limits
//!
//! * **An open `GET` stream counts as in flight.** The client is
//!   demonstrably there while it holds the stream, so the session is not
//!   reaped under it; keep-alive comments find out when the peer is gone,
//!   the body is dropped, and with it the in-flight guard, which stamps the
//!   activity: the idle clock runs from that moment.
//! * The event log covers the standalone `GET` stream (from its first
//!   opening) and the `POST` reply streams of clients at 2025-11-25 or
//!   later (older clients get no priming event, so their `POST` streams
//!   stay unlogged and end with their connection); at most 16 finished
//!   `POST` streams per session keep their logs.
//! * JSON-RPC batches are refused (400) at every version, including
//!   2025-03-26 (which allowed them): no MCP SDK client sends them, MCP
//!   2025-06-18 removed them, and a batch would need one answer assembled
//!   from several handlers' replies (some streamed).
//! * A message's params stay the client's JSON text
//!   ([`RawValue`](serde_json::value::RawValue)) until the application asks
//!   for them ([`jsonrpc::Request::params_as`],
//!   [`jsonrpc::Request::params_value`]): a request costs about its body's
//!   size.
//! * SSE connections have bounded queues. A server notification that does
//!   not fit is dropped and counted, never waited for (it stays in the event
//!   log, when there is one); a streamed reply waits for room.
//! * In a session, a client that disconnects does not cancel its handler
//!   (2025-11-25: disconnection is not cancellation); at 2026-07-28 it does.
//! * `initialize` creates its session with that request already in flight,
//!   so a session cannot idle out before its first request has started.
//! * Each request runs in a `tracing` span `mcp` with the session, named by
//!   the `Debug` form of its id (index, generation, node: never the secret,
//!   which grants access); the close reason is logged once, by the
//!   terminate winner. [`SessionManager::metrics`] renders the registry's
//!   metrics followed by the layer's, all striped by thread.

// The levels, read top down: each imports only what stands below it
// (`.ci/module-tree` checks the order).
mod access;
mod app;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod bus;
mod counters;
mod endpoint;
mod input;
mod legacy;
mod listen;
pub mod modern;
mod observe;
mod run;
mod server;
mod session;
mod sse;
mod tasks;
mod wire;

pub use access::auth::{AuthError, Authenticator};
pub use access::bearer::{BearerTokens, TokenFileError};
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use access::oauth;
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use access::oauth::ResourceServer;
pub use access::scopes::Scopes;
pub use access::validity::{Validity, Withdrawal};
pub use access::{AllowLists, RebindingProtection};
pub use app::{
    App, Call, Context, Era, HandlerError, LegacyRequest, ModernRequest, Reply, ToolText,
};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use bus::{BusError, BusKeys, RedisBus};
pub use counters::HttpStats;
pub use endpoint::builder::Builder;
pub use endpoint::drain::DrainReport;
pub use endpoint::manager::{ResponseFuture, SessionManager};
pub use endpoint::shutdown::ShutdownReport;
pub use listen::{Audience, Change, ListenFilter, Publisher};
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub use observe::otlp;
pub use observe::DurationMetrics;
pub use server::{serve, serve_with, Connections};
pub use session::asks::{ClientAnswer, ClientRequest};
pub use tasks::{TaskContext, TaskWork};
pub use wire::body::{Body, BoxError, SendBody};
pub use wire::config::Defaults;
pub use wire::config_error::ConfigError;
pub use wire::keyed_rate_limit::{ClientAddr, KeyedRateLimit, RateSubject};
pub use wire::principal::Principal;
pub use wire::protocol::Version;
pub use wire::rate::{Rate, RateParseError};
pub use wire::{headers, jsonrpc};
