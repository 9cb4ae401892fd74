//! `expose: { mcp: [stdio, http(auth = bearer), http(auth = service)] }`: the ways the agent
//! may be served over MCP (see `agents_core::expose`). It becomes the manifest's
//! `agent.expose.mcp` and `AgentSpec::expose_mcp`; an agent that declares none is not served
//! over MCP.

use agents_core::expose::McpExposure;
use syn::parse::ParseStream;
use syn::{Ident, Token};

/// What `expose` takes, for its errors.
pub(crate) const EXPOSE_TAKES: &str = "the ways it may be served over MCP, in braces, e.g. `expose: { mcp: [stdio, http(auth = bearer)] }` (each `stdio`, `http(auth = bearer)` or `http(auth = service)`)";

/// `{ mcp: [...] }`; each mistake kept as an error spanned on its token.
pub(crate) fn parse_expose(input: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> syn::Result<Vec<McpExposure>> {
    let content;
    syn::braced!(content in input);
    let mut mcp: Option<Vec<McpExposure>> = None;
    while !content.is_empty() {
        let key: Ident = content.parse()?;
        content.parse::<Token![:]>()?;
        let list;
        syn::bracketed!(list in content);
        let mut ways = Vec::new();
        while !list.is_empty() {
            if let Some(way) = parse_way(&list, errors)? {
                if ways.contains(&way) {
                    errors.push(list.error(format!("`{way}` is given twice; give each way once")));
                }
                ways.push(way);
            }
            if !list.is_empty() {
                list.parse::<Token![,]>()?;
            }
        }
        if key != "mcp" {
            errors.push(syn::Error::new(key.span(), format!("unknown `expose` key `{key}`; `expose` takes `mcp`")));
        } else if mcp.is_some() {
            errors.push(syn::Error::new(key.span(), "`mcp` is given twice; give it once"));
        } else {
            mcp = Some(ways);
        }
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(mcp.unwrap_or_default())
}

/// `stdio` or `http(auth = bearer | service)`; `None` (with an error kept) for another.
fn parse_way(list: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> syn::Result<Option<McpExposure>> {
    let transport: Ident = list.parse()?;
    let args = if list.peek(syn::token::Paren) {
        let inner;
        syn::parenthesized!(inner in list);
        let key: Ident = inner.parse()?;
        inner.parse::<Token![=]>()?;
        let value: Ident = inner.parse()?;
        Some((key, value))
    } else {
        None
    };
    let way = match (transport.to_string().as_str(), &args) {
        ("stdio", None) => Some(McpExposure::Stdio),
        ("stdio", Some((key, _))) => {
            errors.push(syn::Error::new(
                key.span(),
                "`stdio` takes no arguments: the application names the one principal a stdio server acts for",
            ));
            None
        }
        ("http", None) => {
            errors.push(syn::Error::new(
                transport.span(),
                "`http` needs the authentication that names each request's person: `http(auth = bearer)` or `http(auth = service)`",
            ));
            None
        }
        ("http", Some((key, value))) if key == "auth" => match value.to_string().as_str() {
            "bearer" => Some(McpExposure::HttpBearer),
            "service" => Some(McpExposure::HttpService),
            other => {
                errors.push(syn::Error::new(
                    value.span(),
                    format!("unknown MCP authentication `{other}`; expected `bearer` (tokens mapped to principals) or `service` (the service's authentication)"),
                ));
                None
            }
        },
        ("http", Some((key, _))) => {
            errors.push(syn::Error::new(key.span(), format!("unknown `http` argument `{key}`; `http` takes `auth`")));
            None
        }
        (other, _) => {
            errors.push(syn::Error::new(
                transport.span(),
                format!("unknown MCP transport `{other}`; expected `stdio` or `http(auth = ...)`"),
            ));
            None
        }
    };
    Ok(way)
}
