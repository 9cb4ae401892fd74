//! The capability report: one HTML page with the capability graph (inline SVG: agent →
//! skills → tools, filled by tier, bordered by risk), the tools, every policy, the role ×
//! tool reachability table and, with a previous manifest, the classified changes. No
//! scripts, and nothing fetched from elsewhere. `agents manifest render` writes it to a
//! file; the service's console serves it live for each agent it serves. (Feature `report`.)
//!
//! Two ways to style it, one page otherwise ([`Report::stylesheet`]):
//!
//! - **Self-contained** (`None`, the CLI's file): the style sheet is inline and the page's
//!   Content-Security-Policy ([`CSP`]) forbids every fetch.
//! - **Linked** (`Some(href)`, a server): the page links the style sheet [`STYLE`] at
//!   `href`, served by the same origin, and its policy ([`LINKED_CSP`]) allows that and
//!   nothing else, so a server can keep `style-src 'self'` without `'unsafe-inline'`.
//!
//! The page is the askama template `templates/report.html`, which HTML-escapes every value it
//! prints unless the template marks it `|safe`, and it marks none: markup comes only from the
//! template, text from the manifest is always text. This module computes what the page shows
//! (rows, classes, the graph's geometry) as plain values.

use crate::diff::{ChangeKind, ManifestDiff};
use crate::manifest::{AgentEntry, Manifest, ParamEntry, PolicyEntry, ToolEntry};
use crate::{Public, Risk, RoleMap, Tier};
use askama::Template;
use graph::{Graph, graph};
use std::collections::BTreeSet;
use widened::Widened;

mod composite;
mod graph;
mod widened;

pub use composite::{CompositeReport, render_composite};

/// What goes into a report.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    /// The manifest shown.
    pub manifest: &'a Manifest,
    /// Where it was read from (a file name, or what a server calls the agent's manifest).
    pub source: &'a str,
    /// Its canonical SHA-256.
    pub sha256: &'a str,
    /// The changes from a previous manifest, and that manifest's name.
    pub diff: Option<(&'a ManifestDiff, &'a str)>,
    /// Roles and their permissions, when declared.
    pub roles: Option<&'a RoleMap>,
    /// `None`: the style sheet inline, a self-contained file. `Some(href)`: a link to
    /// [`STYLE`] served at `href` by the page's own origin.
    pub stylesheet: Option<&'a str>,
    /// A link back to where the page is served from (shown first in the page's navigation).
    pub home: Option<&'a str>,
    /// The input and output schemas, when the report is of a reviewed document
    /// ([`crate::reviewed`]): shown in their own section.
    pub io: Option<&'a crate::reviewed::IoSchemas>,
}

impl<'a> Report<'a> {
    /// A self-contained report of `manifest`: no diff, no roles, the style sheet inline.
    pub fn new(manifest: &'a Manifest, source: &'a str, sha256: &'a str) -> Self {
        Report { manifest, source, sha256, diff: None, roles: None, stylesheet: None, home: None, io: None }
    }
}

/// The Content-Security-Policy of a self-contained report: nothing may be fetched; inline
/// styles only.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; font-src 'none'; base-uri 'none'; form-action 'none'";

/// The Content-Security-Policy of a report that links its style sheet: the page's own
/// origin's style sheets, nothing else.
pub const LINKED_CSP: &str =
    "default-src 'none'; style-src 'self'; img-src 'none'; font-src 'none'; base-uri 'none'; form-action 'none'";

/// The report's style sheet, for a server to serve at [`Report::stylesheet`].
pub const STYLE: &str = include_str!("../../templates/report.css");

/// The whole page, as the template reads it.
#[derive(Template)]
#[template(path = "report.html")]
struct Page<'a> {
    csp: &'static str,
    stylesheet: Option<&'a str>,
    home: Option<&'a str>,
    agent: &'a AgentEntry,
    source: &'a str,
    sha256: &'a str,
    format: &'a str,
    version: u32,
    tools_count: String,
    ceiling: String,
    skills: String,
    limits: String,
    models: String,
    budget: String,
    knowledge: String,
    audit_values: &'static str,
    changes: Option<Changes<'a>>,
    graph: Graph<'a>,
    tier_legend: Vec<(&'static str, String)>,
    risk_legend: Vec<(&'static str, String)>,
    tool_rows: Vec<ToolRow<'a>>,
    roles: Option<Reach<'a>>,
    /// The input and output schemas, pretty-printed.
    schemas: Option<(String, String)>,
}

struct Changes<'a> {
    widening: usize,
    old_name: &'a str,
    summary: String,
    old_sha256: &'a str,
    new_sha256: &'a str,
    rows: Vec<ChangeRow<'a>>,
}

struct ChangeRow<'a> {
    kind: &'static str,
    widening: bool,
    rule: &'static str,
    tool: Option<&'a str>,
    field: &'a str,
    old: Option<&'a str>,
    new: Option<&'a str>,
    /// The reason in pieces; `true` for a piece the reason quoted in backticks (shown as code).
    reason: Vec<(&'a str, bool)>,
}

/// Which cells of a tool's rows a diff widened.
#[derive(Default)]
struct WidenedCells {
    tier: bool,
    risk: bool,
    permission: bool,
    mutating: bool,
    parameters: bool,
    uses: bool,
    fs_read: bool,
    fs_write: bool,
    net_hosts: bool,
    env_vars: bool,
}

struct ToolRow<'a> {
    name: &'a str,
    widened: bool,
    is_new: bool,
    cells: WidenedCells,
    tier: &'static str,
    tier_class: &'static str,
    risk: &'static str,
    risk_class: &'static str,
    permission: &'a str,
    mutating: bool,
    title: Option<&'a str>,
    parameters: &'a [ParamEntry],
    uses: &'a [String],
    description: &'a str,
    policy: &'a PolicyEntry,
    /// A network host entry allows any host (`*`): shown in red whatever the diff says.
    any_host: bool,
}

struct Reach<'a> {
    names: Vec<&'a str>,
    rows: Vec<ReachRow<'a>>,
    reached: Vec<usize>,
    unheld: Vec<&'a str>,
}

struct ReachRow<'a> {
    tool: &'a str,
    permission: &'a str,
    widened: bool,
    /// Per role: the badge (class, text) when the role reaches the tool.
    cells: Vec<Option<(&'static str, &'static str)>>,
}

fn tier_class(t: Tier) -> &'static str {
    match t {
        Tier::Read => "tier-read",
        Tier::Action => "tier-action",
        Tier::Handoff => "tier-handoff",
    }
}

fn risk_class(r: Risk) -> &'static str {
    match r {
        Risk::Low => "risk-low",
        Risk::Medium => "risk-medium",
        Risk::High => "risk-high",
        Risk::Critical => "risk-critical",
    }
}

fn tier_meaning(t: Tier) -> &'static str {
    match t {
        Tier::Read => "runs on its own",
        Tier::Action => "runs after a person approves",
        Tier::Handoff => "never runs; becomes a handoff record",
    }
}

fn reach_text(t: &ToolEntry) -> &'static str {
    match t.tier {
        Tier::Read => "runs",
        Tier::Action => "after approval",
        Tier::Handoff => "handoff only",
    }
}

/// Splits a reason into text and the spans it quotes in backticks (an odd number of
/// backticks, or none, leaves it all text).
fn code_spans(s: &str) -> Vec<(&str, bool)> {
    let parts: Vec<&str> = s.split('`').collect();
    if parts.len() < 3 || parts.len().is_multiple_of(2) {
        return vec![(s, false)];
    }
    parts.into_iter().enumerate().map(|(i, p)| (p, i % 2 == 1)).collect()
}

/// Builds the whole HTML document.
pub fn render(r: &Report<'_>) -> String {
    let m = r.manifest;
    let widened = Widened::from(r.diff.map(|(d, _)| d));
    let page = Page {
        csp: if r.stylesheet.is_some() { LINKED_CSP } else { CSP },
        stylesheet: r.stylesheet,
        home: r.home,
        agent: &m.agent,
        source: r.source,
        sha256: r.sha256,
        format: &m.format,
        version: m.version,
        tools_count: tools_count_text(m),
        ceiling: ceiling_text(m),
        skills: skills_text(m),
        limits: limits_text(m),
        models: crate::models::models_text(m.agent.models.as_deref()),
        budget: m.agent.budget.text(),
        knowledge: knowledge_text(m),
        audit_values: m.agent.audit_values.meaning(),
        changes: r.diff.map(|(d, old_name)| changes(d, old_name)),
        graph: graph(m, &widened),
        tier_legend: [Tier::Read, Tier::Action, Tier::Handoff]
            .into_iter()
            .map(|t| (tier_class(t), format!("{t}: {}", tier_meaning(t))))
            .collect(),
        risk_legend: [Risk::Low, Risk::Medium, Risk::High, Risk::Critical]
            .into_iter()
            .map(|rk| (risk_class(rk), format!("risk {rk}")))
            .collect(),
        tool_rows: m.tools.iter().map(|t| tool_row(t, &widened)).collect(),
        roles: r.roles.map(|roles| reach(m, roles, &widened)),
        schemas: r.io.map(|io| (pretty(&io.input), pretty(&io.output))),
    };
    // Rendering writes into a String and every value is a plain field: it cannot fail.
    page.render().unwrap_or_else(|e| unreachable!("the report template failed: {e}"))
}

fn pretty(schema: &serde_json::Value) -> String {
    serde_json::to_string_pretty(schema).expect("a schema always serializes")
}

/// The knowledge sources, each with its path, size and SHA-256, or `none declared`.
pub fn knowledge_text(m: &Manifest) -> String {
    if m.agent.knowledge.is_empty() {
        return "none declared (no documents reach the model)".to_owned();
    }
    let list: Vec<String> = m
        .agent
        .knowledge
        .iter()
        .map(|k| format!("{} ({}, {} bytes, sha256 {})", k.name, k.path, k.bytes, k.sha256))
        .collect();
    list.join("; ")
}

/// The tools count with its split by tier, e.g. `3 (1 read, 2 action, 0 handoff)`.
pub fn tools_count_text(m: &Manifest) -> String {
    let count = |tier| m.tools.iter().filter(|t| t.tier == tier).count();
    format!(
        "{} ({} read, {} action, {} handoff)",
        m.tools.len(),
        count(Tier::Read),
        count(Tier::Action),
        count(Tier::Handoff)
    )
}

/// The agent's permission ceiling, in words.
pub fn ceiling_text(m: &Manifest) -> String {
    match &m.agent.ceiling {
        Some(c) if c.is_empty() => "declared, empty".to_owned(),
        Some(c) => c.join(", "),
        None => "none declared (tools of any permission may be granted)".to_owned(),
    }
}

/// The agent's skills and what the tools in no skill serve, in words: a run works within one
/// skill and is offered its tools only (see [`crate::skill`]).
fn skills_text(m: &Manifest) -> String {
    if m.agent.skills.is_empty() {
        return "none declared (every run is offered every tool)".to_owned();
    }
    let skills: Vec<String> = m.agent.skills.iter().map(|s| format!("{}: {}", s.label(), s.tools.join(", "))).collect();
    let unskilled = match m.agent.unskilled {
        crate::skill::Unskilled::None => "offered under no skill",
        crate::skill::Unskilled::Shared => "shared by every skill",
    };
    format!(
        "{}; a run works within one and is offered its tools only; tools in no skill: {unskilled}",
        skills.join("; ")
    )
}

/// The agent's limits, in one line.
pub fn limits_text(m: &Manifest) -> String {
    let l = &m.agent.limits;
    format!(
        "{} iterations, {} s per provider call, {} s confirmation wait, {} concurrent runs per user, {} s token lifetime, {} history messages",
        l.max_iterations,
        l.provider_timeout_secs,
        l.confirm_timeout_secs,
        l.max_concurrent_runs,
        l.token_ttl_secs,
        l.history_messages
    )
}

fn changes<'a>(d: &'a ManifestDiff, old_name: &'a str) -> Changes<'a> {
    let rows = [ChangeKind::Widening, ChangeKind::Narrowing, ChangeKind::Neutral]
        .into_iter()
        .flat_map(|kind| d.of_kind(kind).map(move |c| (kind, c)))
        .map(|(kind, c)| ChangeRow {
            kind: kind.as_str(),
            widening: kind == ChangeKind::Widening,
            rule: c.rule.as_str(),
            tool: c.tool.as_deref(),
            field: &c.field,
            old: c.old.as_deref(),
            new: c.new.as_deref(),
            reason: code_spans(&c.reason),
        })
        .collect();
    Changes {
        widening: d.count(ChangeKind::Widening),
        old_name,
        summary: d.summary(),
        old_sha256: &d.old_sha256,
        new_sha256: &d.new_sha256,
        rows,
    }
}

fn tool_row<'a>(t: &'a ToolEntry, w: &Widened<'_>) -> ToolRow<'a> {
    let n = t.name.as_str();
    let cell = |field| w.field(n, field);
    ToolRow {
        name: n,
        widened: w.tool(n),
        is_new: w.new_tools.contains(n),
        cells: WidenedCells {
            tier: cell("tier"),
            risk: cell("risk"),
            permission: cell("permission"),
            mutating: cell("mutating"),
            parameters: cell("parameters"),
            uses: cell("uses"),
            fs_read: cell("policy.fs.read"),
            fs_write: cell("policy.fs.write"),
            net_hosts: cell("policy.net.hosts"),
            env_vars: cell("policy.env.vars"),
        },
        tier: t.tier.as_str(),
        tier_class: tier_class(t.tier),
        risk: t.risk.as_str(),
        risk_class: risk_class(t.risk),
        permission: &t.permission,
        mutating: t.mutating,
        title: t.title.as_deref(),
        parameters: &t.parameters,
        uses: &t.uses,
        description: &t.description,
        policy: &t.policy,
        any_host: t
            .policy
            .net
            .hosts
            .iter()
            .any(|h| crate::policy::HostPattern::parse(h).is_ok_and(|p| p.is_any_host())),
    }
}

fn reach<'a>(m: &'a Manifest, roles: &'a RoleMap, w: &Widened<'_>) -> Reach<'a> {
    let names: Vec<&str> = roles.roles().map(|(r, _)| r).collect();
    let mut reached = vec![0usize; names.len()];
    let rows = m
        .tools
        .iter()
        .map(|t| {
            let cells = names
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    roles.has_permission(r, &t.permission).then(|| {
                        reached[i] += 1;
                        (tier_class(t.tier), reach_text(t))
                    })
                })
                .collect();
            ReachRow { tool: &t.name, permission: &t.permission, widened: w.tool(&t.name), cells }
        })
        .collect();
    let unheld = m
        .tools
        .iter()
        .map(|t| t.permission.as_str())
        .filter(|p| *p != Public::NAME_STR && !names.iter().any(|r| roles.has_permission(r, p)))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    Reach { names, rows, reached, unheld }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool whose network policy allows any host is shown in red, with a badge that says
    /// so, even without a diff; a tool with a host list is not.
    #[test]
    fn any_host_is_shown_in_red() {
        use crate::manifest::{AgentEntry, LimitsEntry, ToolEntry};
        let tool = |name: &str, hosts: &[&str]| {
            let mut policy = PolicyEntry::default();
            policy.net.hosts = hosts.iter().map(|h| (*h).to_owned()).collect();
            ToolEntry {
                name: name.into(),
                title: None,
                description: format!("The {name} tool."),
                permission: "public".into(),
                tier: Tier::Read,
                mutating: false,
                risk: Risk::Low,
                policy,
                parameters: vec![],
                uses: vec![],
                import: None,
                handoff: None,
            }
        };
        let agent = AgentEntry {
            name: "web".into(),
            description: "Reads pages.".into(),
            input: "String".into(),
            output: "String".into(),
            skills: vec![],
            unskilled: Default::default(),
            ceiling: None,
            limits: LimitsEntry::from(crate::Limits::DEFAULT),
            models: None,
            budget: Default::default(),
            knowledge: Vec::new(),
            audit_values: Default::default(),
            expose: Default::default(),
            agents: Vec::new(),
        };
        let m =
            Manifest::from_entries(agent, vec![tool("browse", &["*"]), tool("docs", &["docs.example.com"])]).unwrap();
        let page = render(&Report::new(&m, "web.json", "0"));
        let row = |name: &str| {
            let policies = &page[page.find("id=\"policies\"").expect("a policies section")..];
            let start = policies.find(&format!("<code>{name}</code>")).unwrap();
            policies[start..start + policies[start..].find("</tr>").unwrap()].to_owned()
        };
        let browse = row("browse");
        assert!(browse.contains("class=\"widened any-host\"") && browse.contains("any host"), "{browse}");
        assert!(!row("docs").contains("any-host"), "{}", row("docs"));
    }

    #[test]
    fn backticks_split_into_code_spans() {
        assert_eq!(code_spans("glob `<a>` added"), [("glob ", false), ("<a>", true), (" added", false)]);
        assert_eq!(code_spans("one ` only"), [("one ` only", false)]);
    }

    #[test]
    fn the_models_and_the_budget_are_shown_with_keys_masked() {
        use crate::budget::BudgetEntry;
        use crate::manifest::{AgentEntry, LimitsEntry};
        use crate::models::{ModelEntry, ModelProvider};
        let agent = |models, budget| AgentEntry {
            name: "desk".into(),
            description: "Answers.".into(),
            input: "String".into(),
            output: "String".into(),
            skills: vec![],
            unskilled: Default::default(),
            ceiling: None,
            limits: LimitsEntry::from(crate::Limits::DEFAULT),
            models,
            budget,
            knowledge: Vec::new(),
            audit_values: Default::default(),
            expose: Default::default(),
            agents: Vec::new(),
        };
        let row = |page: &str, th: &str| {
            let start = page.find(&format!("<th>{th}</th>")).expect("a row");
            page[start..start + page[start..].find("</tr>").unwrap()].to_owned()
        };
        let declared = Manifest::from_entries(
            agent(
                Some(vec![
                    ModelEntry::new(ModelProvider::Anthropic, "claude-sonnet-4-5", "api.anthropic.com"),
                    ModelEntry::offline(),
                ]),
                BudgetEntry { tokens_per_run: Some(200_000), usd_per_run_micros: Some(500_000) },
            ),
            vec![],
        )
        .unwrap();
        let page = render(&Report::new(&declared, "desk.json", "0"));
        assert_eq!(
            row(&page, "models"),
            "<th>models</th><td>anthropic:claude-sonnet-4-5@api.anthropic.com (key: masked), offline (no network host)</td>"
        );
        assert_eq!(row(&page, "budget"), "<th>budget</th><td>200000 model tokens per run, 0.5 USD per run</td>");
        let open = Manifest::from_entries(agent(None, BudgetEntry::default()), vec![]).unwrap();
        let page = render(&Report::new(&open, "desk.json", "0"));
        assert!(row(&page, "models").contains("any (none declared"), "{}", row(&page, "models"));
        assert!(row(&page, "budget").contains("no caps per run declared"));
        assert!(row(&page, "knowledge").contains("none declared"));
        let mut with_docs = agent(None, BudgetEntry::default());
        with_docs.knowledge =
            vec![crate::knowledge::KnowledgeEntry::of_document("leave", "policies/<leave>.md", b"25")];
        let page = render(&Report::new(&Manifest::from_entries(with_docs, vec![]).unwrap(), "desk.json", "0"));
        let sha = crate::canonical::sha256_hex(b"25");
        assert_eq!(
            row(&page, "knowledge"),
            format!("<th>knowledge</th><td>leave (policies/&#60;leave&#62;.md, 2 bytes, sha256 {sha})</td>")
        );
    }

    #[test]
    fn the_audit_values_setting_is_shown() {
        use crate::audit::AuditValues;
        let row = |values| {
            let mut agent = crate::manifest::AgentEntry::from_spec(&crate::AgentSpec {
                name: "desk",
                description: "",
                input: "String",
                output: "String",
                skills: &[],
                ceiling: None,
                limits: crate::Limits::DEFAULT,
                models: None,
                budget: Default::default(),
                audit_values: AuditValues::Omitted,
                unskilled: Default::default(),
                knowledge: &[],
                expose_mcp: &[],
            });
            agent.audit_values = values;
            let page = render(&Report::new(&Manifest::from_entries(agent, vec![]).unwrap(), "desk.json", "0"));
            let start = page.find("<th>audit values</th>").expect("an audit values row");
            page[start..start + page[start..].find("</tr>").unwrap()].to_owned()
        };
        assert!(row(AuditValues::Omitted).contains("<td>omitted: "), "{}", row(AuditValues::Omitted));
        assert!(row(AuditValues::Masked).contains("<td>masked: "));
        assert!(row(AuditValues::Full).contains("<td>full: "));
    }
}
