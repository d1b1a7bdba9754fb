//! Where a watch starts, from its query: kube-apiserver 1.33's `ListOptions` defaulting and validation for a watch
//! (with the WatchList feature on, as in 1.32 and 1.34), as a pure function.
//!
//! * `sendInitialEvents=true` (with `resourceVersionMatch=NotOlderThan`): the current objects as ADDED events at a
//!   revision at least as new as `resourceVersion` (unset or `0`: the latest), then, if `allowWatchBookmarks`, a
//!   BOOKMARK annotated `k8s.io/initial-events-end: "true"`, then live events (a "watch-list").
//! * `sendInitialEvents=false`: no initial events; from `resourceVersion`, or from now when it is unset or `0`.
//! * neither, with `resourceVersion` unset or `0`: defaulted to `sendInitialEvents=true` (the legacy "state, then
//!   changes" watch); with any other `resourceVersion`: the events after it.

use crate::apis::query::go_query_bool;
use kspaces_storage::Position;

use crate::handlers::list::parse_position;
use crate::status::{ApiError, ApiResult, Cause};

/// The raw query parameters that decide a watch's start (empty values count as unset).
#[derive(Clone, Copy, Debug, Default)]
pub struct Params<'a> {
    pub resource_version: Option<&'a str>,
    pub resource_version_match: Option<&'a str>,
    pub send_initial_events: Option<&'a str>,
    pub allow_watch_bookmarks: Option<&'a str>,
    pub continue_token: Option<&'a str>,
}

/// Where the watch starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum From {
    /// Send the current objects first; their revision must be at least this one (0: any).
    Initial { at_least: Position },
    /// The events after this position (one revision, or one per storage cluster for a watch across them).
    After(Position),
    /// The events from now on.
    Now,
}

/// A validated watch start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Start {
    pub from: From,
    /// `allowWatchBookmarks`: progress bookmarks, and the initial-events-end bookmark of a watch-list.
    pub bookmarks: bool,
}

impl Start {
    /// A watch-list (kube's `isListWatchRequest`): initial events ended by a bookmark; Tables are refused.
    pub fn watch_list(&self) -> bool {
        matches!(self.from, From::Initial { .. }) && self.bookmarks
    }
}

const NOT_OLDER_THAN: &str = "NotOlderThan";

/// A watch's parameters, defaulted and validated, before its `resourceVersion` is read.
#[derive(Clone, Copy, Debug)]
pub struct Checked<'a> {
    send_initial_events: Option<bool>,
    bookmarks: bool,
    resource_version: Option<&'a str>,
}

/// Defaults and validates `params` as kube's `SetListOptionsDefaults` and `ValidateListOptions` do. The bools are
/// apimachinery's query bools: anything but `0` and `false` is true, so none of them fails to parse.
pub fn check(params: Params<'_>) -> ApiResult<Checked<'_>> {
    let mut send_initial_events = params.send_initial_events.map(go_query_bool);
    let bookmarks = params.allow_watch_bookmarks.is_some_and(go_query_bool);
    let mut matching = params.resource_version_match;
    let legacy = matches!(params.resource_version, None | Some("0"));
    if send_initial_events.is_none() && matching.is_none() && legacy {
        (send_initial_events, matching) = (Some(true), Some(NOT_OLDER_THAN));
    }
    validate(send_initial_events, matching, params.continue_token.is_some())?;
    Ok(Checked { send_initial_events, bookmarks, resource_version: params.resource_version })
}

impl Checked<'_> {
    /// Where the watch starts; a `resourceVersion` that does not parse is storage's 400.
    pub fn start(self) -> ApiResult<Start> {
        let position = self.resource_version.map(parse_position).transpose()?;
        let from = match (self.send_initial_events, position) {
            (Some(true), position) => From::Initial { at_least: position.unwrap_or_default() },
            (_, None) => From::Now,
            (_, Some(position)) if position == Position::default() => From::Now,
            (_, Some(position)) => From::After(position),
        };
        Ok(Start { from, bookmarks: self.bookmarks })
    }
}

/// kube's `validateWatchOptions`.
fn validate(send_initial_events: Option<bool>, matching: Option<&str>, has_continue: bool) -> ApiResult<()> {
    let mut causes = Vec::new();
    if send_initial_events.is_some() && matching != Some(NOT_OLDER_THAN) {
        causes.push(Cause::forbidden("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
    }
    if let Some(matching) = matching {
        if send_initial_events.is_none() {
            causes.push(Cause::forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
        }
        if matching != NOT_OLDER_THAN {
            causes.push(Cause::not_supported("resourceVersionMatch", matching, &[NOT_OLDER_THAN]));
        }
        if has_continue {
            causes.push(Cause::forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"));
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_options("ListOptions", causes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kspaces_storage::Revision;

    fn rv(revision: u64) -> Position {
        Position::One(Revision(revision))
    }

    /// Defaults and validates `params` (422), then reads the `resourceVersion` (400), as the watch handler does.
    fn parse(params: Params<'_>) -> ApiResult<Start> {
        super::check(params)?.start()
    }

    /// (resourceVersion, resourceVersionMatch, sendInitialEvents, allowWatchBookmarks, continue) → start or error.
    type Row<'a> = (Option<&'a str>, Option<&'a str>, Option<&'a str>, Option<&'a str>, Option<&'a str>, Result<(From, bool), &'a str>);

    fn check(row: &Row<'_>) {
        let (resource_version, resource_version_match, send_initial_events, allow_watch_bookmarks, continue_token, ref expected) = *row;
        let params = Params { resource_version, resource_version_match, send_initial_events, allow_watch_bookmarks, continue_token };
        let got = parse(params).map(|start| (start.from, start.bookmarks)).map_err(|err| err.message);
        match (got, expected) {
            (Ok(got), Ok(expected)) => assert_eq!(&got, expected, "{row:?}"),
            (Err(message), Err(expected)) => assert_eq!(message, *expected, "{row:?}"),
            (got, _) => panic!("{row:?}: got {got:?}"),
        }
    }

    #[test]
    fn watch_starts() {
        let nto = Some("NotOlderThan");
        let rows: &[Row<'_>] = &[
            // Legacy watches: unset or "0" send the state first (defaulted to a watch-list), a revision resumes.
            (None, None, None, None, None, Ok((From::Initial { at_least: rv(0) }, false))),
            (Some("0"), None, None, Some("true"), None, Ok((From::Initial { at_least: rv(0) }, true))),
            (Some("42"), None, None, Some("1"), None, Ok((From::After(rv(42)), true))),
            // Watch-lists: a given resourceVersion means "at least as new as".
            (None, nto, Some("true"), Some("true"), None, Ok((From::Initial { at_least: rv(0) }, true))),
            (Some("0"), nto, Some("true"), Some("true"), None, Ok((From::Initial { at_least: rv(0) }, true))),
            (Some("42"), nto, Some("true"), Some("true"), None, Ok((From::Initial { at_least: rv(42) }, true))),
            // No initial events.
            (None, nto, Some("false"), None, None, Ok((From::Now, false))),
            (Some("0"), nto, Some("false"), None, None, Ok((From::Now, false))),
            (Some("42"), nto, Some("false"), None, None, Ok((From::After(rv(42)), false))),
            // Validation, as kube words it.
            (None, None, Some("true"), None, None, Err("ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")),
            (Some("42"), nto, None, None, None, Err("ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")),
            (Some("42"), Some("Exact"), Some("true"), None, None, Err("ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]")),
            (None, nto, Some("true"), None, Some("abc"), Err("ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided")),
            // Query bools are apimachinery's: anything but 0 and false is true.
            (None, nto, Some("yes"), Some(""), None, Ok((From::Initial { at_least: rv(0) }, true))),
            (None, nto, Some("False"), Some("0"), None, Ok((From::Now, false))),
            (Some("x"), None, None, None, None, Err("invalid resource version: resourceVersion: Invalid value: \"x\": strconv.ParseUint: parsing \"x\": invalid syntax")),
        ];
        for row in rows {
            check(row);
        }
    }

    #[test]
    fn only_initial_events_with_bookmarks_are_a_watch_list() {
        let start = |from, bookmarks| Start { from, bookmarks };
        assert!(start(From::Initial { at_least: rv(0) }, true).watch_list());
        assert!(!start(From::Initial { at_least: rv(0) }, false).watch_list());
        assert!(!start(From::After(rv(3)), true).watch_list());
    }
}
