//! The example servers as OAuth 2.1 resource servers (`--oauth-issuer`,
//! `--resource`; the library's feature `oauth`): what an operator of
//! Keycloak, Auth0 or Entra ID sets is in the README ("OAuth").

use clap::Args;
use sessionreg::http::{self as mcp, App};

/// The flags of the resource server.
#[derive(Args, Debug, Clone, Default)]
pub struct OAuthFlags {
    /// The authorization server's issuer, exactly as its tokens' `iss`
    /// spells it (e.g. https://auth.example.com/realms/mcp): every /mcp
    /// request then needs one of its access tokens for --resource
    /// (feature `oauth`).
    #[arg(long, value_name = "URL", requires = "resource")]
    pub oauth_issuer: Option<String>,
    /// This endpoint's public URL (e.g. https://mcp.example.com/mcp): the
    /// `aud` its tokens must carry, the `resource` of its metadata.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub resource: Option<String>,
    /// A scope every token must grant (repeatable); 403
    /// `insufficient_scope` without it.
    #[arg(long = "required-scope", value_name = "SCOPE")]
    pub required_scopes: Vec<String>,
    /// A scope a tool's calls need besides the required ones, as
    /// TOOL=SCOPE (repeatable; e.g. basket_add=baskets:write): a call
    /// without it gets 403 `insufficient_scope` naming every scope the
    /// call needs, and the client steps up. Listed in the metadata's
    /// `scopes_supported`, not in the 401 challenge.
    #[arg(long = "tool-scope", value_name = "TOOL=SCOPE", value_parser = tool_scope)]
    pub tool_scopes: Vec<(String, String)>,
    /// `tools/list` leaves out the tools the token cannot call (their
    /// --tool-scope). Off by default: clients see every tool and step up
    /// when they call one.
    #[arg(long)]
    pub oauth_hide_tools_without_scope: bool,
    /// Another `aud` value accepted besides --resource (repeatable): an
    /// API identifier, never an OAuth client's id (the `aud` of its ID
    /// tokens); with it, require a scope (--required-scope).
    #[arg(long = "oauth-audience", value_name = "AUD")]
    pub audiences: Vec<String>,
    /// Accept only JWT access tokens typed `at+jwt` (RFC 9068): any other
    /// `typ` gets 401. For an authorization server that types them
    /// (Auth0's RFC 9068 profile, say); many type theirs `JWT`.
    #[arg(long)]
    pub oauth_require_at_jwt: bool,
    /// The JWKS URL, instead of the one the issuer's metadata names.
    #[arg(long, value_name = "URL")]
    pub oauth_jwks_uri: Option<String>,
    /// Accept opaque tokens through RFC 7662 introspection as this client
    /// id; its secret is read from the environment variable
    /// OAUTH_CLIENT_SECRET.
    #[arg(long, value_name = "CLIENT_ID")]
    pub oauth_introspection_client: Option<String>,
    /// Allow plain http to an authorization server that is not on
    /// loopback (keys fetched in the clear can be swapped on the way).
    #[arg(long)]
    pub oauth_allow_http: bool,
}

/// The resource server of the flags, if they ask for one.
#[cfg(feature = "oauth")]
pub type ResourceServer = mcp::oauth::ResourceServer;

/// Without the feature there is none to have.
#[cfg(not(feature = "oauth"))]
#[derive(Clone, Debug)]
pub enum ResourceServer {}

impl OAuthFlags {
    /// Mounts the resource server the flags ask for on `builder`.
    pub fn apply<A: App>(
        &self,
        builder: mcp::Builder<A>,
    ) -> Result<(mcp::Builder<A>, Option<ResourceServer>), Box<dyn std::error::Error>> {
        let (Some(issuer), Some(resource)) = (&self.oauth_issuer, &self.resource) else {
            return Ok((builder, None));
        };
        self.build(builder, issuer, resource)
    }

    #[cfg(feature = "oauth")]
    fn build<A: App>(
        &self,
        builder: mcp::Builder<A>,
        issuer: &str,
        resource: &str,
    ) -> Result<(mcp::Builder<A>, Option<ResourceServer>), Box<dyn std::error::Error>> {
        let mut server = ResourceServer::builder(issuer, resource)
            .allow_http(self.oauth_allow_http)
            .require_at_jwt(self.oauth_require_at_jwt)
            .hide_tools_without_scope(self.oauth_hide_tools_without_scope)
            .resource_name("sessionreg example");
        for scope in &self.required_scopes {
            server = server.required_scope(scope);
        }
        for (tool, scope) in &self.tool_scopes {
            server = server.tool_scope(tool, scope);
        }
        for audience in &self.audiences {
            server = server.audience(audience);
        }
        if let Some(url) = &self.oauth_jwks_uri {
            server = server.jwks_uri(url);
        }
        if let Some(client) = &self.oauth_introspection_client {
            let secret = std::env::var("OAUTH_CLIENT_SECRET")
                .map_err(|_| "--oauth-introspection-client needs OAUTH_CLIENT_SECRET set")?;
            server = server.introspection(client, secret);
        }
        let server = server.build()?;
        tracing::info!(
            issuer = server.issuer(),
            resource = server.resource(),
            metadata = server.metadata_url(),
            "OAuth access tokens required"
        );
        Ok((builder.resource_server(server.clone()), Some(server)))
    }

    #[cfg(not(feature = "oauth"))]
    fn build<A: App>(
        &self,
        _: mcp::Builder<A>,
        _: &str,
        _: &str,
    ) -> Result<(mcp::Builder<A>, Option<ResourceServer>), Box<dyn std::error::Error>> {
        Err(
            "--oauth-issuer needs the `oauth` feature: cargo run --features oauth --example ..."
                .into(),
        )
    }
}

/// The paths of the resource's metadata, which the example's router sends
/// to the manager (none without a resource server).
pub fn metadata_paths(server: Option<&ResourceServer>) -> Vec<String> {
    #[cfg(feature = "oauth")]
    {
        server.map_or_else(Vec::new, |s| {
            s.metadata_paths().into_iter().map(String::from).collect()
        })
    }
    #[cfg(not(feature = "oauth"))]
    {
        match server {
            None => Vec::new(),
            Some(never) => match *never {},
        }
    }
}

/// Fetches the authorization server's keys in the background, so that a
/// misconfiguration shows in the log at start rather than at the first
/// client's 401.
pub fn prefetch(server: Option<&ResourceServer>) {
    #[cfg(feature = "oauth")]
    if let Some(server) = server.cloned() {
        tokio::spawn(async move {
            match server.refresh().await {
                Ok(keys) => tracing::info!(keys, "the authorization server's keys are loaded"),
                Err(error) => {
                    tracing::warn!(%error, "the authorization server's keys could not be loaded yet; they are fetched again with the first token")
                }
            }
        });
    }
    #[cfg(not(feature = "oauth"))]
    let _ = server;
}

/// `--tool-scope TOOL=SCOPE`.
fn tool_scope(flag: &str) -> Result<(String, String), String> {
    match flag.split_once('=') {
        Some((tool, scope)) if !tool.is_empty() && !scope.is_empty() => {
            Ok((tool.to_string(), scope.to_string()))
        }
        _ => Err(format!("{flag:?} is not TOOL=SCOPE")),
    }
}
