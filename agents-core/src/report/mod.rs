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
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

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
}

impl<'a> Report<'a> {
    /// A self-contained report of `manifest`: no diff, no roles, the style sheet inline.
    pub fn new(manifest: &'a Manifest, source: &'a str, sha256: &'a str) -> Self {
        Report { manifest, source, sha256, diff: None, roles: None, stylesheet: None, home: None }
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
pub const STYLE: &str = include_str!("../templates/report.css");

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
    limits: String,
    changes: Option<Changes<'a>>,
    graph: Graph<'a>,
    tier_legend: Vec<(&'static str, String)>,
    risk_legend: Vec<(&'static str, String)>,
    tool_rows: Vec<ToolRow<'a>>,
    roles: Option<Reach<'a>>,
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

/// A coordinate printed with one decimal, as SVG attributes take it.
#[derive(Clone, Copy)]
struct Px(f64);

impl fmt::Display for Px {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1}", self.0)
    }
}

/// A size printed as a whole number.
#[derive(Clone, Copy)]
struct Whole(f64);

impl fmt::Display for Whole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.0}", self.0)
    }
}

struct Graph<'a> {
    width: Whole,
    height: Whole,
    node_h: f64,
    columns: Vec<(&'static str, Px)>,
    edges: Vec<Edge>,
    agent: NodeText<'a>,
    skills: Vec<SkillNode<'a>>,
    tools: Vec<ToolNode<'a>>,
}

struct Edge {
    /// The path's `d`: numbers only.
    d: String,
    widened: bool,
}

/// A node's box and its two lines of text.
struct NodeText<'a> {
    x: Px,
    y: Px,
    w: Px,
    text_x: Px,
    main_y: Px,
    sub_y: Px,
    main: &'a str,
    sub: String,
}

struct SkillNode<'a> {
    node: NodeText<'a>,
    pseudo: bool,
}

struct Outline {
    x: Px,
    y: Px,
    w: Px,
    h: Px,
}

struct Flag {
    x: Px,
    y: Px,
    w: Px,
    text_x: Px,
    text_y: Px,
    label: &'static str,
}

struct ToolNode<'a> {
    node: NodeText<'a>,
    tier: &'static str,
    risk: &'static str,
    description: &'a str,
    fill: &'static str,
    text_color: &'static str,
    stroke: &'static str,
    stroke_width: f64,
    outline: Option<Outline>,
    flag: Option<Flag>,
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

/// Which tool fields a diff widened: tool name → field names.
struct Widened<'a> {
    fields: BTreeMap<&'a str, BTreeSet<&'a str>>,
    new_tools: BTreeSet<&'a str>,
}

impl<'a> Widened<'a> {
    fn from(diff: Option<&'a ManifestDiff>) -> Self {
        let mut fields: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut new_tools = BTreeSet::new();
        for c in diff.into_iter().flat_map(|d| d.of_kind(ChangeKind::Widening)) {
            if let Some(t) = c.tool.as_deref() {
                if c.rule == crate::diff::Rule::ToolAdded {
                    new_tools.insert(t);
                }
                let field = c.field.split('.').take(if c.field.starts_with("policy.") { 3 } else { 1 });
                let field = field.collect::<Vec<_>>().join(".");
                let stored: &str = match field.as_str() {
                    "policy.fs.read" => "policy.fs.read",
                    "policy.fs.write" => "policy.fs.write",
                    "policy.net.hosts" => "policy.net.hosts",
                    "policy.env.vars" => "policy.env.vars",
                    "permission" => "permission",
                    "tier" => "tier",
                    "mutating" => "mutating",
                    "risk" => "risk",
                    "parameters" => "parameters",
                    "uses" => "uses",
                    _ => "tool",
                };
                fields.entry(t).or_default().insert(stored);
            }
        }
        Widened { fields, new_tools }
    }

    fn tool(&self, name: &str) -> bool {
        self.fields.contains_key(name)
    }

    fn field(&self, name: &str, field: &str) -> bool {
        self.fields.get(name).is_some_and(|f| f.contains(field) || f.contains("tool"))
    }
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
        limits: limits_text(m),
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
    };
    // Rendering writes into a String and every value is a plain field: it cannot fail.
    page.render().unwrap_or_else(|e| unreachable!("the report template failed: {e}"))
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

// ---- the SVG graph ----

const NODE_H: f64 = 46.0;
const GAP_Y: f64 = 14.0;
const TOP: f64 = 44.0;
const COL_GAP: f64 = 90.0;
const LEFT: f64 = 16.0;
const MAIN_CHAR: f64 = 8.0;
const SUB_CHAR: f64 = 6.8;

fn node_width(main: &str, sub: &str) -> f64 {
    let w = (main.chars().count() as f64 * MAIN_CHAR).max(sub.chars().count() as f64 * SUB_CHAR) + 28.0;
    w.max(120.0)
}

fn tier_fill(t: Tier) -> (&'static str, &'static str) {
    match t {
        Tier::Read => ("#dcfce7", "#14532d"),
        Tier::Action => ("#fef3c7", "#78350f"),
        Tier::Handoff => ("#ede9fe", "#4c1d95"),
    }
}

fn risk_stroke(r: Risk) -> (&'static str, f64) {
    match r {
        Risk::Low => ("#94a3b8", 1.5),
        Risk::Medium => ("#3b82f6", 2.0),
        Risk::High => ("#f97316", 3.0),
        Risk::Critical => ("#dc2626", 4.0),
    }
}

struct Node {
    x: f64,
    y: f64,
    w: f64,
}

impl Node {
    fn right(&self) -> (f64, f64) {
        (self.x + self.w, self.y + NODE_H / 2.0)
    }
    fn left(&self) -> (f64, f64) {
        (self.x, self.y + NODE_H / 2.0)
    }
    fn text<'a>(&self, main: &'a str, sub: String) -> NodeText<'a> {
        NodeText {
            x: Px(self.x),
            y: Px(self.y),
            w: Px(self.w),
            text_x: Px(self.x + 12.0),
            main_y: Px(self.y + 19.0),
            sub_y: Px(self.y + 36.0),
            main,
            sub,
        }
    }
}

fn edge(from: (f64, f64), to: (f64, f64), widened: bool) -> Edge {
    let dx = (to.0 - from.0) / 2.0;
    let d = format!(
        "M{:.1} {:.1} C{:.1} {:.1}, {:.1} {:.1}, {:.1} {:.1}",
        from.0,
        from.1,
        from.0 + dx,
        from.1,
        to.0 - dx,
        to.1,
        to.0,
        to.1
    );
    Edge { d, widened }
}

/// The capability graph: agent → skills → tools, laid out in columns.
fn graph<'a>(m: &'a Manifest, w: &Widened<'_>) -> Graph<'a> {
    // Skill groups; tools in no skill hang off a "(no skill)" group when skills exist, and
    // straight off the agent when none do.
    let grouped: BTreeSet<&str> = m.agent.skills.iter().flat_map(|s| s.tools.iter().map(String::as_str)).collect();
    let ungrouped: Vec<&ToolEntry> = m.tools.iter().filter(|t| !grouped.contains(t.name.as_str())).collect();
    let mut groups: Vec<(&str, Vec<&str>, bool)> =
        m.agent.skills.iter().map(|s| (s.name.as_str(), s.tools.iter().map(String::as_str).collect(), false)).collect();
    let has_skill_column = !groups.is_empty();
    if has_skill_column && !ungrouped.is_empty() {
        groups.push(("(no skill)", ungrouped.iter().map(|t| t.name.as_str()).collect(), true));
    }

    // Tool order: by first group, then the rest.
    let mut order: Vec<&ToolEntry> = Vec::new();
    for (_, tools, _) in &groups {
        for name in tools {
            if let Some(t) = m.tool(name)
                && !order.iter().any(|o| o.name == t.name)
            {
                order.push(t);
            }
        }
    }
    for t in &m.tools {
        if !order.iter().any(|o| o.name == t.name) {
            order.push(t);
        }
    }

    let agent_sub = format!("{} → {}", m.agent.input, m.agent.output);
    let agent_w = node_width(&m.agent.name, &agent_sub);
    let skill_w = groups.iter().map(|(n, t, _)| node_width(n, &format!("{} tool(s)", t.len()))).fold(0.0, f64::max);
    let tool_sub = |t: &ToolEntry| format!("{} · {} · {}", t.tier, t.risk, t.permission);
    let tool_w = order.iter().map(|t| node_width(&t.name, &tool_sub(t))).fold(120.0, f64::max);

    let agent_x = LEFT;
    let skill_x = agent_x + agent_w + COL_GAP;
    let tool_x = if has_skill_column { skill_x + skill_w + COL_GAP } else { skill_x };

    let mut tool_nodes: BTreeMap<&str, Node> = BTreeMap::new();
    for (i, t) in order.iter().enumerate() {
        tool_nodes.insert(&t.name, Node { x: tool_x, y: TOP + i as f64 * (NODE_H + GAP_Y), w: tool_w });
    }

    // Skills centred on their tools, pushed down to avoid overlaps.
    let mut skill_nodes: Vec<(usize, Node)> = Vec::new();
    let mut desired: Vec<(usize, f64)> = groups
        .iter()
        .enumerate()
        .map(|(i, (_, tools, _))| {
            let ys: Vec<f64> = tools.iter().filter_map(|t| tool_nodes.get(t)).map(|n| n.y).collect();
            let y = if ys.is_empty() { TOP } else { ys.iter().sum::<f64>() / ys.len() as f64 };
            (i, y)
        })
        .collect();
    desired.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let mut next_free = TOP;
    for (i, y) in desired {
        let y = y.max(next_free);
        next_free = y + NODE_H + GAP_Y;
        skill_nodes.push((i, Node { x: skill_x, y, w: skill_w }));
    }
    skill_nodes.sort_by_key(|(i, _)| *i);

    let bottom = tool_nodes
        .values()
        .chain(skill_nodes.iter().map(|(_, n)| n))
        .map(|n| n.y + NODE_H)
        .fold(TOP + NODE_H, f64::max);
    let agent = Node { x: agent_x, y: (TOP + bottom) / 2.0 - NODE_H / 2.0, w: agent_w };

    let mut columns = vec![("agent", Px(agent_x))];
    if has_skill_column {
        columns.push(("skills", Px(skill_x)));
    }
    columns.push(("tools", Px(tool_x)));

    // Edges are drawn first, so nodes sit on top.
    let mut edges = Vec::new();
    if has_skill_column {
        for (i, n) in &skill_nodes {
            edges.push(edge(agent.right(), n.left(), false));
            for t in &groups[*i].1 {
                if let Some(tn) = tool_nodes.get(t) {
                    edges.push(edge(n.right(), tn.left(), w.tool(t)));
                }
            }
        }
    } else {
        for (name, tn) in &tool_nodes {
            edges.push(edge(agent.right(), tn.left(), w.tool(name)));
        }
    }

    let skills = skill_nodes
        .iter()
        .map(|(i, n)| {
            let (name, tools, pseudo) = &groups[*i];
            SkillNode { node: n.text(name, format!("{} tool(s)", tools.len())), pseudo: *pseudo }
        })
        .collect();

    let tools = order
        .iter()
        .map(|t| {
            let n = &tool_nodes[t.name.as_str()];
            let (fill, text_color) = tier_fill(t.tier);
            let (stroke, stroke_width) = risk_stroke(t.risk);
            let widened = w.tool(&t.name);
            let flag = widened.then(|| {
                let label = if w.new_tools.contains(t.name.as_str()) { "NEW" } else { "WIDENED" };
                Flag {
                    x: Px(n.x + n.w + 10.0),
                    y: Px(n.y + NODE_H / 2.0 - 8.0),
                    w: Px(label.len() as f64 * 7.0 + 12.0),
                    text_x: Px(n.x + n.w + 16.0),
                    text_y: Px(n.y + NODE_H / 2.0 + 4.0),
                    label,
                }
            });
            ToolNode {
                node: n.text(&t.name, tool_sub(t)),
                tier: t.tier.as_str(),
                risk: t.risk.as_str(),
                description: &t.description,
                fill,
                text_color,
                stroke,
                stroke_width,
                outline: widened.then_some(Outline {
                    x: Px(n.x - 5.0),
                    y: Px(n.y - 5.0),
                    w: Px(n.w + 10.0),
                    h: Px(NODE_H + 10.0),
                }),
                flag,
            }
        })
        .collect();

    Graph {
        width: Whole(tool_x + tool_w + 90.0),
        height: Whole(bottom + 20.0),
        node_h: NODE_H,
        columns,
        edges,
        agent: agent.text(&m.agent.name, agent_sub),
        skills,
        tools,
    }
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
            }
        };
        let agent = AgentEntry {
            name: "web".into(),
            description: "Reads pages.".into(),
            input: "String".into(),
            output: "String".into(),
            skills: vec![],
            ceiling: None,
            limits: LimitsEntry::from(crate::Limits::DEFAULT),
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
}
