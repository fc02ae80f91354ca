//! The scopes one call needs beyond those every request needs: per method
//! (`tools/list`, say), per tool (`tools/call` of a name), per prompt
//! (`prompts/get`) and per resource (`resources/read` of a URI), as the
//! MCP authorization page's "Scope Challenge Handling" lets a server ask
//! for more than its 401 named (least privilege: a client asks for a
//! scope when a call needs it, and steps up on the 403).
//!
//! Checked once the message is read, in both eras, on the scopes the
//! resource server put into the request's extensions; a request admitted
//! by the manager's own authenticator (static tokens) carries none and is
//! not checked here, as it is not checked against the required scopes.
//! The check costs two map lookups when a call has entries, none when the
//! server has none; the refusal's challenge is built on the refusal path.

use crate::http::access::scopes::Scopes;
use crate::http::wire::jsonrpc::{Message, RpcError};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;

/// What a scope is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Target {
    /// A tool, by name (`tools/call`).
    Tool,
    /// A prompt, by name (`prompts/get`).
    Prompt,
    /// A resource, by URI (`resources/read`).
    Resource,
}

impl Target {
    /// The target kind a method names, if it names one.
    fn of(method: &str) -> Option<Target> {
        match method {
            "tools/call" => Some(Target::Tool),
            "prompts/get" => Some(Target::Prompt),
            "resources/read" => Some(Target::Resource),
            _ => None,
        }
    }
}

/// The scopes each method and each target needs (beyond the required ones).
#[derive(Debug, Clone, Default)]
pub(crate) struct CallScopes {
    methods: HashMap<String, Vec<String>>,
    targets: HashMap<(Target, String), Vec<String>>,
}

/// What a call needs that its token lacks: every scope the call needs,
/// the required ones first, and what asked for them.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Shortfall {
    pub(crate) needed: Vec<String>,
    pub(crate) what: String,
}

/// The members of params naming a call's target.
#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uri: Option<Cow<'a, str>>,
}

impl CallScopes {
    /// Adds `scope` to what `method` needs.
    pub(crate) fn method(&mut self, method: String, scope: String) {
        push_once(self.methods.entry(method).or_default(), scope);
    }

    /// Adds `scope` to what `target` `name` needs.
    pub(crate) fn target(&mut self, target: Target, name: String, scope: String) {
        push_once(self.targets.entry((target, name)).or_default(), scope);
    }

    /// Every scope named here, in no particular order.
    pub(crate) fn all(&self) -> impl Iterator<Item = &String> {
        self.methods.values().chain(self.targets.values()).flatten()
    }

    /// Whether a call with `scopes` may go on: `Ok(None)` yes, `Ok(Some)`
    /// what it lacks, `Err` params that name no target readably (refused
    /// rather than let through unchecked).
    pub(crate) fn check(
        &self,
        required: &[String],
        scopes: &Scopes,
        message: &Message,
    ) -> Result<Option<Shortfall>, RpcError> {
        if self.methods.is_empty() && self.targets.is_empty() {
            return Ok(None);
        }
        let Message::Request(request) = message else {
            return Ok(None);
        };
        let method = request.method.as_str();
        let by_method = self.methods.get(method);
        let mut by_target = None;
        if let Some(target) = Target::of(method).filter(|_| !self.targets.is_empty()) {
            let raw = request.params_text().unwrap_or("null");
            let named: Option<Named<'_>> = serde_json::from_str(raw)
                .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))?;
            let name = named.and_then(|named| match target {
                Target::Resource => named.uri,
                _ => named.name,
            });
            if let Some(name) = name {
                by_target = self
                    .targets
                    .get_key_value(&(target, name.into_owned()))
                    .map(|((_, name), scopes)| (name, scopes));
            }
        }
        let lacks = |list: Option<&Vec<String>>| {
            list.is_some_and(|list| !scopes.contains_all(list.iter().map(String::as_str)))
        };
        if !lacks(by_method) && !lacks(by_target.map(|(_, scopes)| scopes)) {
            return Ok(None);
        }
        let mut needed: Vec<String> = required.to_vec();
        for scope in by_method
            .into_iter()
            .chain(by_target.map(|(_, scopes)| scopes))
            .flatten()
        {
            push_once(&mut needed, scope.clone());
        }
        let what = match by_target {
            Some((name, _)) => format!("{method} of {name}"),
            None => method.to_string(),
        };
        Ok(Some(Shortfall { needed, what }))
    }
}

impl CallScopes {
    /// Whether a `tools/call` of `tool` would pass with `scopes` (the
    /// required ones passed already: the request got here).
    pub(crate) fn allows_tool(&self, scopes: &Scopes, tool: &str) -> bool {
        let lacks = |list: Option<&Vec<String>>| {
            list.is_some_and(|list| !scopes.contains_all(list.iter().map(String::as_str)))
        };
        !lacks(self.methods.get("tools/call"))
            && !lacks(self.targets.get(&(Target::Tool, tool.to_string())))
    }
}

fn push_once(list: &mut Vec<String>, scope: String) {
    if !list.contains(&scope) {
        list.push(scope);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::wire::jsonrpc::{Params, Request};

    fn call(method: &str, params: &str) -> Message {
        Message::Request(Request {
            id: 1.into(),
            method: method.into(),
            params: Some(Params::new(params).unwrap()),
        })
    }

    #[test]
    fn a_call_needs_the_required_its_methods_and_its_targets_scopes() {
        let mut needs = CallScopes::default();
        needs.target(Target::Tool, "basket_add".into(), "baskets:write".into());
        needs.method("tools/call".into(), "tools:call".into());
        needs.target(Target::Resource, "file:///a".into(), "files:read".into());
        let required = ["mcp".to_string()];
        let add = call("tools/call", r#"{"name":"basket_add","arguments":{}}"#);
        let lacking = needs
            .check(&required, &Scopes::parse("mcp tools:call"), &add)
            .unwrap()
            .unwrap();
        assert_eq!(lacking.needed, ["mcp", "tools:call", "baskets:write"]);
        assert_eq!(lacking.what, "tools/call of basket_add");
        let all = Scopes::parse("baskets:write tools:call mcp");
        assert_eq!(needs.check(&required, &all, &add).unwrap(), None);
        // Another tool needs the method's scope only.
        let other = call("tools/call", r#"{"name":"basket_list"}"#);
        assert_eq!(
            needs.check(&required, &Scopes::parse("mcp tools:call"), &other),
            Ok(None)
        );
        // A resource by its URI, escapes read.
        let read = call("resources/read", r#"{"uri":"file:\/\/\/a"}"#);
        let lacking = needs
            .check(&required, &Scopes::parse("mcp"), &read)
            .unwrap()
            .unwrap();
        assert_eq!(lacking.needed, ["mcp", "files:read"]);
        // Params that cannot be read are refused, not let through.
        let twice = call("tools/call", r#"{"name":"x","name":"basket_add"}"#);
        assert!(needs.check(&required, &all, &twice).is_err());
    }
}
