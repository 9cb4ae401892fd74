//! The input of `agent!`, as written: every key read, each mistake kept as an error spanned
//! on its token (so that one mistake does not hide the next).

use super::audit::{AUDIT_TAKES, parse_audit};
use super::expose::{EXPOSE_TAKES, parse_expose};
use super::knowledge::{KnowledgeDecl, parse_knowledge};
use super::skill_io::{SkillTypes, parse_types};
use super::surface::{parse_budget, parse_models};
use crate::util::suggest;
use agents_core::Limits;
use agents_core::budget::BudgetEntry;
use proc_macro2::TokenTree;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, LitInt, LitStr, Token, Type, Visibility};

/// Every key `agent!` takes after `struct Name;`, as the macro's rustdoc lists them.
const KEYS: &[&str] = &[
    "name",
    "input",
    "output",
    "tools",
    "skills",
    "ceiling",
    "limits",
    "models",
    "budget",
    "unskilled",
    "knowledge",
    "audit",
    "expose",
    "agents",
];
/// Every limit `limits: { ... }` takes: the fields of `agents_core::Limits`.
const LIMIT_KEYS: &[&str] = &[
    "max_iterations",
    "provider_timeout_secs",
    "confirm_timeout_secs",
    "max_concurrent_runs",
    "token_ttl_secs",
    "history_messages",
];

/// `agent! { ... }` as written: read once by `agent!` (for the type and the chain) and again
/// by the finishing macro, which receives these tokens back with the tools' entries.
pub(crate) struct AgentInput {
    /// The doc comment (the agent's description) and other attributes of `struct Name;`.
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    /// The agent's type.
    pub(crate) ident: Ident,
    /// `name: "..."`: the agent's name (default: the type's name).
    pub(crate) name: Option<LitStr>,
    /// `input: Type` (default: `String`).
    pub(crate) input: Option<Type>,
    /// `output: Type` (default: `String`).
    pub(crate) output: Option<Type>,
    /// `tools: [...]`: the granted tools' paths, in order.
    pub(crate) tools: Vec<syn::Path>,
    /// `skills: { name: [...] }`.
    pub(crate) skills: Vec<(Ident, Vec<syn::Path>)>,
    /// Each skill's own types (`name(Input -> Output): [...]`), by the skill's position in
    /// `skills`; `None` for a skill that takes and returns the agent's.
    pub(crate) skill_io: Vec<Option<SkillTypes>>,
    /// `ceiling: [...]`: the permissions' paths; `None` without a ceiling.
    pub(crate) ceiling: Option<Vec<syn::Path>>,
    /// `limits: { name: value }`, checked against each limit's type by the model.
    pub(crate) limits: Vec<(Ident, LitInt)>,
    /// `models: [...]`: the providers it may run on; `None` when not given (any provider).
    pub(crate) models: Option<Vec<agents_core::models::ModelEntry>>,
    /// `budget: { ... }`: its caps per run.
    pub(crate) budget: BudgetEntry,
    /// `unskilled: none | shared`: the tools no skill lists; `None` when not given (`none`).
    pub(crate) unskilled: Option<(Ident, agents_core::skill::Unskilled)>,
    /// `knowledge: [...]`: its knowledge sources, as written.
    pub(crate) knowledge: Vec<KnowledgeDecl>,
    /// `audit: { values: ... }`: the most of a call's values its records may keep.
    pub(crate) audit_values: agents_core::audit::AuditValues,
    /// `expose: { mcp: [...] }`: the ways it may be served over MCP.
    pub(crate) expose_mcp: Vec<agents_core::expose::McpExposure>,
    /// Errors found while parsing, reported with the expansion.
    pub(crate) errors: Vec<syn::Error>,
    /// `agents: [...]`: the granted agents' paths, in order.
    pub(crate) agents: Vec<syn::Path>,
}

/// `[a, b::c]`: paths in square brackets, separated by commas.
fn path_list(input: ParseStream<'_>) -> syn::Result<Vec<syn::Path>> {
    let content;
    syn::bracketed!(content in input);
    Ok(content.parse_terminated(syn::Path::parse_mod_style, Token![,])?.into_iter().collect())
}

impl Parse for AgentInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input
            .parse::<Token![struct]>()
            .map_err(|e| syn::Error::new(e.span(), "an agent starts with its type: `pub struct MyAgent;`"))?;
        let ident: Ident = input.parse()?;
        input.parse::<Token![;]>()?;
        let mut out = AgentInput {
            attrs,
            vis,
            ident,
            name: None,
            input: None,
            output: None,
            tools: Vec::new(),
            skills: Vec::new(),
            skill_io: Vec::new(),
            ceiling: None,
            limits: Vec::new(),
            models: None,
            budget: BudgetEntry::default(),
            unskilled: None,
            knowledge: Vec::new(),
            audit_values: Default::default(),
            expose_mcp: Vec::new(),
            errors: Vec::new(),
            agents: Vec::new(),
        };
        let mut seen: Vec<String> = Vec::new();
        while !input.is_empty() {
            let key: Ident = input.call(syn::ext::IdentExt::parse_any).map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected a key of `agent!`, written `key: value`, e.g. `tools: [list_athletes]`",
                )
            })?;
            let k = key.to_string();
            input.parse::<Token![:]>().map_err(|e| {
                syn::Error::new(e.span(), format!("write `{k}: ...` with a colon; `{k}` takes {}", key_takes(&k)))
            })?;
            if KEYS.contains(&k.as_str()) {
                if seen.contains(&k) {
                    out.errors
                        .push(syn::Error::new(key.span(), format!("duplicate `agent!` key `{k}`; give each key once")));
                }
                seen.push(k.clone());
            }
            out.parse_value(&key, input)?;
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        if !seen.iter().any(|k| k == "tools") {
            out.errors.push(syn::Error::new(
                out.ident.span(),
                format!("agent `{}` grants no tools: add `tools: [...]`", out.ident),
            ));
        }
        Ok(out)
    }
}

impl AgentInput {
    /// The value of the key `key`; a value of another shape is refused with what it takes.
    fn parse_value(&mut self, key: &Ident, input: ParseStream<'_>) -> syn::Result<()> {
        let k = key.to_string();
        let wrong = |e: syn::Error| syn::Error::new(e.span(), format!("`{k}` takes {}", key_takes(&k)));
        match k.as_str() {
            "name" => self.name = Some(input.parse().map_err(wrong)?),
            "input" => self.input = Some(input.parse().map_err(wrong)?),
            "output" => self.output = Some(input.parse().map_err(wrong)?),
            "tools" => self.tools = path_list(input).map_err(wrong)?,
            "ceiling" => self.ceiling = Some(path_list(input).map_err(wrong)?),
            "agents" => self.agents = path_list(input).map_err(wrong)?,
            "models" => {
                if !input.peek(syn::token::Bracket) {
                    return Err(wrong(input.error("")));
                }
                self.models = Some(parse_models(input, &mut self.errors)?);
            }
            "knowledge" => {
                if !input.peek(syn::token::Bracket) {
                    return Err(wrong(input.error("")));
                }
                self.knowledge = parse_knowledge(input)?;
            }
            "budget" | "audit" | "expose" => {
                if !input.peek(syn::token::Brace) {
                    return Err(wrong(input.error("")));
                }
                match k.as_str() {
                    "budget" => self.budget = parse_budget(input, &mut self.errors)?,
                    "audit" => self.audit_values = parse_audit(input, &mut self.errors)?,
                    _ => self.expose_mcp = parse_expose(input, &mut self.errors)?,
                }
            }
            "skills" | "limits" => {
                if !input.peek(syn::token::Brace) {
                    return Err(wrong(input.error("")));
                }
                let content;
                syn::braced!(content in input);
                while !content.is_empty() {
                    let entry: Ident = content.parse().map_err(wrong)?;
                    let io = if k == "skills" { parse_types(&content).map_err(wrong)? } else { None };
                    content.parse::<Token![:]>().map_err(wrong)?;
                    if k == "skills" {
                        let tools = path_list(&content).map_err(wrong)?;
                        self.skills.push((entry, tools));
                        self.skill_io.push(io);
                    } else {
                        let v: LitInt = content.parse().map_err(wrong)?;
                        self.check_limit(&entry, &v);
                        self.limits.push((entry, v));
                    }
                    if !content.is_empty() {
                        content.parse::<Token![,]>()?;
                    }
                }
            }
            "unskilled" => {
                let value: Ident = input.call(syn::ext::IdentExt::parse_any).map_err(wrong)?;
                match value.to_string().as_str() {
                    "none" => self.unskilled = Some((value, agents_core::skill::Unskilled::None)),
                    "shared" => self.unskilled = Some((value, agents_core::skill::Unskilled::Shared)),
                    _ => {
                        self.errors.push(syn::Error::new(value.span(), format!("`unskilled` takes {}", key_takes(&k))))
                    }
                }
            }
            other => {
                self.errors.push(syn::Error::new(
                    key.span(),
                    format!("unknown `agent!` key `{other}`{}", suggest(other, KEYS)),
                ));
                // Skip the value up to the next top-level comma.
                while !input.is_empty() && !input.peek(Token![,]) {
                    input.parse::<TokenTree>()?;
                }
            }
        }
        Ok(())
    }

    /// A limit's name is known, given once, and its value in range for its type.
    fn check_limit(&mut self, lk: &Ident, v: &LitInt) {
        let name = lk.to_string();
        let mut refuse = |span, msg: String| self.errors.push(syn::Error::new(span, msg));
        if !LIMIT_KEYS.contains(&name.as_str()) {
            return refuse(lk.span(), format!("unknown limit `{name}`{}", suggest(&name, LIMIT_KEYS)));
        }
        if self.limits.iter().any(|(k, _)| k == lk) {
            return refuse(lk.span(), format!("limit `{name}` is given twice; give each limit once"));
        }
        let (max, ty) = limit_range(&name);
        if !v.suffix().is_empty() && v.suffix() != ty {
            return refuse(
                v.span(),
                format!("limit `{name}` is a `{ty}`: write the number without the `{}` suffix", v.suffix()),
            );
        }
        if !matches!(v.base10_parse::<u128>(), Ok(n) if n != 0 && n <= max) {
            refuse(
                v.span(),
                format!(
                    "limit `{name}` is {}, out of range for its type `{ty}`: write an integer from 1 to {max}",
                    v.base10_digits()
                ),
            );
        }
    }

    /// The limits, the defaults overridden by the ones given.
    pub(crate) fn limits(&self) -> Limits {
        let mut l = Limits::DEFAULT;
        for (k, v) in &self.limits {
            // In range: checked when parsed (an out-of-range limit never reaches here).
            let wide: u64 = v.base10_parse().unwrap_or(0);
            let narrow = || u32::try_from(wide).unwrap_or(0);
            match k.to_string().as_str() {
                "max_iterations" => l.max_iterations = narrow(),
                "provider_timeout_secs" => l.provider_timeout_secs = wide,
                "confirm_timeout_secs" => l.confirm_timeout_secs = wide,
                "max_concurrent_runs" => l.max_concurrent_runs = narrow(),
                "token_ttl_secs" => l.token_ttl_secs = wide,
                "history_messages" => l.history_messages = narrow(),
                _ => {}
            }
        }
        l
    }
}

/// What a key of `agent!` takes, with an example of the right form (for the error of a value
/// of another shape).
fn key_takes(key: &str) -> &'static str {
    match key {
        "name" => "the agent's name as a string, e.g. `name: \"triage\"`",
        "input" => "the type of the agent's input, e.g. `input: String`",
        "output" => "the type of the agent's output, e.g. `output: Summary`",
        "tools" => {
            "the tools it grants, as paths in square brackets, e.g. `tools: [list_athletes, tools::record_injury]`"
        }
        "ceiling" => {
            "the permissions it may never exceed, as paths in square brackets (not strings), e.g. `ceiling: [perms::athlete::read]`"
        }
        "skills" => {
            "named groups of its tools in braces, each optionally with its own input and output types, e.g. `skills: { triage: [list_athletes], review(Request -> Decision): [record_injury] }`"
        }
        "limits" => "limits in braces, each a name and a positive integer, e.g. `limits: { max_iterations: 8 }`",
        "models" => {
            "the models it may run on, in square brackets, e.g. `models: [openai(\"gpt-4.1-mini\"), anthropic(\"claude-sonnet-4-5\"), openai_compatible(\"llama3.2\", host = \"localhost\"), offline]`"
        }
        "budget" => "its caps per run in braces, e.g. `budget: { tokens_per_run: 200_000, usd_per_run: 0.50 }`",
        "unskilled" => {
            "what happens to the granted tools no skill lists: `unskilled: none` (offered under no skill, the default) or `unskilled: shared` (offered under every skill)"
        }
        "knowledge" => {
            "its knowledge sources in square brackets, each path relative to the crate's root, e.g. `knowledge: [embedded(\"policies/leave.md\"), dir(\"policies\", name = \"hr\")]`"
        }
        "audit" => AUDIT_TAKES,
        "expose" => EXPOSE_TAKES,
        "agents" => {
            "the agents it may run as tools, as paths to types declared with `agent!`, in square brackets, e.g. `agents: [SecondReviewer]`"
        }
        _ => "a value",
    }
}

/// The largest value of a limit and its type's name, as `Limits` declares it.
fn limit_range(key: &str) -> (u128, &'static str) {
    match key {
        "provider_timeout_secs" | "confirm_timeout_secs" | "token_ttl_secs" => (u128::from(u64::MAX), "u64"),
        _ => (u128::from(u32::MAX), "u32"),
    }
}
