//! `agents manifest render`: one self-contained HTML file with the capability graph (inline
//! SVG), the tools, every policy, the role reachability table and, with a previous manifest,
//! the classified changes. No scripts and no external resources: a strict
//! Content-Security-Policy (`default-src 'none'`) forbids the page from fetching anything,
//! and every value from the manifest is HTML-escaped.

use agents_core::diff::{Change, ChangeKind, ManifestDiff};
use agents_core::manifest::{Manifest, ToolEntry};
use agents_core::{Public, Risk, RoleMap, Tier};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// What goes into a report.
pub(crate) struct Report<'a> {
    /// The manifest shown.
    pub(crate) manifest: &'a Manifest,
    /// Where it was read from.
    pub(crate) source: &'a str,
    /// Its canonical SHA-256.
    pub(crate) sha256: &'a str,
    /// The changes from a previous manifest, and that manifest's file name.
    pub(crate) diff: Option<(&'a ManifestDiff, String)>,
    /// Roles and their permissions, when declared.
    pub(crate) roles: Option<&'a RoleMap>,
}

/// The Content-Security-Policy of every report: nothing may be fetched; inline styles only.
pub(crate) const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; font-src 'none'; base-uri 'none'; form-action 'none'";

/// Escapes text, then shows `quoted` spans as code. Backticks are not special in HTML, so
/// the escaping is unaffected.
fn esc_code(s: &str) -> String {
    let e = esc(s);
    let parts: Vec<&str> = e.split('`').collect();
    if parts.len() < 3 || parts.len().is_multiple_of(2) {
        return e;
    }
    let mut out = String::with_capacity(e.len() + 16);
    for (i, p) in parts.iter().enumerate() {
        if i % 2 == 1 {
            out.push_str("<code>");
            out.push_str(p);
            out.push_str("</code>");
        } else {
            out.push_str(p);
        }
    }
    out
}

/// Escapes text for HTML element content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; margin: 0; color: #0f172a; background: #f8fafc; }
header { background: #0f172a; color: #f8fafc; padding: 20px 32px; }
header h1 { margin: 0 0 6px; font-size: 22px; }
header p { margin: 0; color: #cbd5e1; }
nav { padding: 8px 32px; background: #e2e8f0; font-size: 14px; }
nav a { margin-right: 16px; color: #1e3a8a; }
main { padding: 8px 32px 32px; }
section { margin: 24px 0; }
h2 { font-size: 18px; border-bottom: 2px solid #cbd5e1; padding-bottom: 4px; }
table { border-collapse: collapse; background: #fff; font-size: 13px; }
th, td { border: 1px solid #cbd5e1; padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: #f1f5f9; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 9px; font-size: 12px; font-weight: 600; white-space: nowrap; }
.tier-read { background: #dcfce7; color: #14532d; }
.tier-action { background: #fef3c7; color: #78350f; }
.tier-handoff { background: #ede9fe; color: #4c1d95; }
.risk-low { background: #f1f5f9; color: #334155; border: 1px solid #94a3b8; }
.risk-medium { background: #dbeafe; color: #1e3a8a; border: 1px solid #3b82f6; }
.risk-high { background: #ffedd5; color: #7c2d12; border: 2px solid #f97316; }
.risk-critical { background: #fee2e2; color: #7f1d1d; border: 2px solid #dc2626; }
.kind-widening { background: #fee2e2; }
.kind-narrowing { background: #dcfce7; }
.kind-neutral { background: #f8fafc; }
tr.widened > td:first-child { border-left: 5px solid #dc2626; }
td.widened { background: #fee2e2; font-weight: 600; }
.flag { color: #fff; background: #dc2626; }
.none { color: #94a3b8; }
.unreachable { color: #cbd5e1; text-align: center; }
.banner { padding: 10px 14px; border-radius: 6px; font-weight: 600; }
.banner.bad { background: #fee2e2; color: #7f1d1d; border: 1px solid #dc2626; }
.banner.good { background: #dcfce7; color: #14532d; border: 1px solid #16a34a; }
.legend span { margin-right: 10px; }
.graph { background: #fff; border: 1px solid #cbd5e1; overflow-x: auto; padding: 8px; }
svg text { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
footer { color: #64748b; font-size: 12px; padding: 0 32px 24px; }
"#;

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

fn badge(class: &str, text: &str) -> String {
    format!(r#"<span class="badge {class}">{}</span>"#, esc(text))
}

fn code_list(v: &[String]) -> String {
    if v.is_empty() {
        return r#"<span class="none">none</span>"#.to_owned();
    }
    v.iter().map(|s| format!("<code>{}</code>", esc(s))).collect::<Vec<_>>().join("<br>")
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
                if c.rule == agents_core::diff::Rule::ToolAdded {
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

    fn cell(&self, name: &str, field: &str) -> &'static str {
        if self.field(name, field) { r#" class="widened""# } else { "" }
    }
}

/// Builds the whole HTML document.
pub(crate) fn render(r: &Report<'_>) -> String {
    let m = r.manifest;
    let a = &m.agent;
    let widened = Widened::from(r.diff.as_ref().map(|(d, _)| *d));
    let mut h = String::new();
    let _ = write!(
        h,
        r##"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Capability report: {name}</title>
<style>{STYLE}</style>
</head>
<body>
<header>
<h1>Capability report: <span class="mono">{name}</span></h1>
<p>{desc}</p>
</header>
<nav><a href="#summary">Summary</a>{changes_link}<a href="#graph">Capability graph</a><a href="#tools">Tools</a><a href="#policies">Policies</a><a href="#roles">Roles</a></nav>
<main>
"##,
        csp = esc(CSP),
        name = esc(&a.name),
        desc = esc(&a.description),
        changes_link = if r.diff.is_some() { "<a href=\"#changes\">Changes</a>" } else { "" },
    );

    // Summary.
    h.push_str("<section id=\"summary\"><h2>Summary</h2>\n<table id=\"summary-table\">\n");
    let ceiling = crate::manifest_cmd::ceiling_text(m);
    let rows: Vec<(&str, String)> = vec![
        ("agent", format!("<code>{}</code>", esc(&a.name))),
        ("manifest file", format!("<code>{}</code>", esc(r.source))),
        ("sha256", format!("<code>{}</code>", esc(r.sha256))),
        ("format", format!("<code>{}</code> version {}", esc(&m.format), m.version)),
        ("input → output", format!("<code>{}</code> → <code>{}</code>", esc(&a.input), esc(&a.output))),
        ("tools", esc(&crate::manifest_cmd::tools_count_text(m))),
        ("permission ceiling", esc(&ceiling)),
        ("limits", esc(&crate::manifest_cmd::limits_text(m))),
    ];
    for (k, v) in rows {
        let _ = writeln!(h, "<tr><th>{}</th><td>{v}</td></tr>", esc(k));
    }
    h.push_str("</table></section>\n");

    if let Some((d, old_name)) = &r.diff {
        changes_section(&mut h, d, old_name);
    }

    // Graph.
    h.push_str("<section id=\"graph\"><h2>Capability graph</h2>\n<p>Agent → skills → tools. Fill: tier. Border: risk.");
    if r.diff.is_some() {
        h.push_str(" Red dashed outline: a tool with a widening change.");
    }
    h.push_str("</p>\n<div class=\"graph\">");
    h.push_str(&graph_svg(m, &widened));
    h.push_str("</div>\n<p class=\"legend\">");
    for t in [Tier::Read, Tier::Action, Tier::Handoff] {
        h.push_str(&badge(tier_class(t), &format!("{t}: {}", tier_meaning(t))));
    }
    h.push_str("<br><br>");
    for rk in [Risk::Low, Risk::Medium, Risk::High, Risk::Critical] {
        h.push_str(&badge(risk_class(rk), &format!("risk {rk}")));
    }
    h.push_str("</p></section>\n");

    tools_section(&mut h, m, &widened);
    policies_section(&mut h, m, &widened);
    roles_section(&mut h, m, r.roles, &widened);

    let _ = write!(
        h,
        "</main>\n<footer>Generated by <code>agents manifest render</code> from <code>{}</code>. The page is self-contained: no scripts, no external resources; its Content-Security-Policy forbids every fetch.</footer>\n</body>\n</html>\n",
        esc(r.source)
    );
    h
}

fn tier_meaning(t: Tier) -> &'static str {
    match t {
        Tier::Read => "runs on its own",
        Tier::Action => "runs after a person approves",
        Tier::Handoff => "never runs; becomes a handoff record",
    }
}

fn changes_section(h: &mut String, d: &ManifestDiff, old_name: &str) {
    h.push_str("<section id=\"changes\"><h2>Changes</h2>\n");
    if d.has_widening() {
        let _ = writeln!(
            h,
            "<p class=\"banner bad\" id=\"widening-banner\">{} widening change(s) since <code>{}</code>: a reviewer must approve them. ({})</p>",
            d.count(ChangeKind::Widening),
            esc(old_name),
            esc(&d.summary())
        );
    } else {
        let _ = writeln!(
            h,
            "<p class=\"banner good\">No widening since <code>{}</code>. ({})</p>",
            esc(old_name),
            esc(&d.summary())
        );
    }
    let _ = writeln!(
        h,
        "<p>Previous sha256 <code>{}</code><br>Current sha256 <code>{}</code></p>",
        esc(&d.old_sha256),
        esc(&d.new_sha256)
    );
    if d.is_empty() {
        h.push_str("<p>No differences.</p></section>\n");
        return;
    }
    h.push_str("<table id=\"changes-table\">\n<tr><th>kind</th><th>subject</th><th>field</th><th>old</th><th>new</th><th>reason</th></tr>\n");
    let opt = |v: &Option<String>| match v {
        Some(s) => format!("<code>{}</code>", esc(s)),
        None => "<span class=\"none\">–</span>".to_owned(),
    };
    for kind in [ChangeKind::Widening, ChangeKind::Narrowing, ChangeKind::Neutral] {
        for c in d.of_kind(kind) {
            let Change { rule, field, old, new, reason, .. } = c;
            let _ = writeln!(
                h,
                "<tr class=\"kind-{k}\"><td>{kb}<br><span class=\"mono\">{rule}</span></td><td>{subject}</td><td><code>{field}</code></td><td>{old}</td><td>{new}</td><td>{reason}</td></tr>",
                k = kind.as_str(),
                kb = badge(if kind == ChangeKind::Widening { "flag" } else { "" }, kind.as_str()),
                rule = esc(rule.as_str()),
                subject = match &c.tool {
                    Some(t) => format!("tool <code>{}</code>", esc(t)),
                    None => "agent".to_owned(),
                },
                field = esc(field),
                old = opt(old),
                new = opt(new),
                reason = esc_code(reason),
            );
        }
    }
    h.push_str("</table></section>\n");
}

fn tools_section(h: &mut String, m: &Manifest, w: &Widened<'_>) {
    h.push_str("<section id=\"tools\"><h2>Tools</h2>\n<table id=\"tools-table\">\n<tr><th>tool</th><th>tier</th><th>risk</th><th>permission</th><th>mutating</th><th>confirm title</th><th>parameters</th><th>uses</th><th>description</th></tr>\n");
    for t in &m.tools {
        let n = t.name.as_str();
        let mark = if w.new_tools.contains(n) {
            format!(" {}", badge("flag", "new"))
        } else if w.tool(n) {
            format!(" {}", badge("flag", "widened"))
        } else {
            String::new()
        };
        let params = if t.parameters.is_empty() {
            "<span class=\"none\">none</span>".to_owned()
        } else {
            t.parameters
                .iter()
                .map(|p| {
                    format!(
                        "<code>{}: {}</code>{}",
                        esc(&p.name),
                        esc(&p.rust_type),
                        if p.secret { format!(" {}", badge("risk-medium", "secret")) } else { String::new() }
                    )
                })
                .collect::<Vec<_>>()
                .join("<br>")
        };
        let _ = writeln!(
            h,
            "<tr{rowc} id=\"tool-{id}\"><td><code>{name}</code>{mark}</td><td{ct}>{tier}</td><td{cr}>{risk}</td><td{cp}><code>{perm}</code></td><td{cm}>{mutating}</td><td>{title}</td><td{cpa}>{params}</td><td{cu}>{uses}</td><td>{desc}</td></tr>",
            rowc = if w.tool(n) { " class=\"widened\"" } else { "" },
            id = esc(n),
            name = esc(n),
            ct = w.cell(n, "tier"),
            tier = badge(tier_class(t.tier), t.tier.as_str()),
            cr = w.cell(n, "risk"),
            risk = badge(risk_class(t.risk), t.risk.as_str()),
            cp = w.cell(n, "permission"),
            perm = esc(&t.permission),
            cm = w.cell(n, "mutating"),
            mutating = if t.mutating { "yes" } else { "no" },
            title = t.title.as_deref().map_or_else(|| "<span class=\"none\">–</span>".to_owned(), esc),
            cpa = w.cell(n, "parameters"),
            cu = w.cell(n, "uses"),
            uses = code_list(&t.uses),
            desc = esc(&t.description),
        );
    }
    h.push_str("</table></section>\n");
}

fn policies_section(h: &mut String, m: &Manifest, w: &Widened<'_>) {
    h.push_str("<section id=\"policies\"><h2>Policies</h2>\n<p>What each tool declares it may touch. A tool with no entry in a column may not use that capability.</p>\n<table id=\"policies-table\">\n<tr><th>tool</th><th>filesystem read</th><th>filesystem write</th><th>network hosts</th><th>environment variables</th></tr>\n");
    for t in &m.tools {
        let n = t.name.as_str();
        let p = &t.policy;
        let _ = writeln!(
            h,
            "<tr{rowc}><td><code>{name}</code></td><td{c1}>{r}</td><td{c2}>{wr}</td><td{c3}>{net}</td><td{c4}>{env}</td></tr>",
            rowc = if w.tool(n) { " class=\"widened\"" } else { "" },
            name = esc(n),
            c1 = w.cell(n, "policy.fs.read"),
            r = code_list(&p.fs.read),
            c2 = w.cell(n, "policy.fs.write"),
            wr = code_list(&p.fs.write),
            c3 = w.cell(n, "policy.net.hosts"),
            net = code_list(&p.net.hosts),
            c4 = w.cell(n, "policy.env.vars"),
            env = code_list(&p.env.vars),
        );
    }
    h.push_str("</table></section>\n");
}

fn roles_section(h: &mut String, m: &Manifest, roles: Option<&RoleMap>, w: &Widened<'_>) {
    h.push_str("<section id=\"roles\"><h2>Role × tool reachability</h2>\n");
    let Some(roles) = roles else {
        h.push_str("<p id=\"roles-missing\">No roles were given. The manifest holds permissions, not roles; pass <code>--roles roles.json</code> (role → permissions) to see which role reaches which tool.</p></section>\n");
        return;
    };
    let names: Vec<&str> = roles.roles().map(|(r, _)| r).collect();
    h.push_str("<p>A role reaches a tool when it holds the tool's permission (<code>public</code> is held by every role). At run time an administrator's disable list can only remove tools from this.</p>\n<table id=\"reachability-table\">\n<tr><th>tool</th><th>permission</th>");
    for r in &names {
        let _ = write!(h, "<th>{}</th>", esc(r));
    }
    h.push_str("</tr>\n");
    let mut reach_counts = vec![0usize; names.len()];
    for t in &m.tools {
        let _ = write!(
            h,
            "<tr{}><td><code>{}</code></td><td><code>{}</code></td>",
            if w.tool(&t.name) { " class=\"widened\"" } else { "" },
            esc(&t.name),
            esc(&t.permission)
        );
        for (i, r) in names.iter().enumerate() {
            if roles.has_permission(r, &t.permission) {
                reach_counts[i] += 1;
                let _ = write!(h, "<td>{}</td>", badge(tier_class(t.tier), reach_text(t)));
            } else {
                h.push_str("<td class=\"unreachable\">–</td>");
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("<tr><th colspan=\"2\">tools reached</th>");
    for n in reach_counts {
        let _ = write!(h, "<th>{n} of {}</th>", m.tools.len());
    }
    h.push_str("</tr>\n</table>\n");
    let unheld: Vec<&str> = m
        .tools
        .iter()
        .map(|t| t.permission.as_str())
        .filter(|p| *p != Public::NAME_STR && !names.iter().any(|r| roles.has_permission(r, p)))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !unheld.is_empty() {
        let _ = writeln!(
            h,
            "<p>Permissions no listed role holds (their tools are unreachable): {}</p>",
            unheld.iter().map(|p| format!("<code>{}</code>", esc(p))).collect::<Vec<_>>().join(", ")
        );
    }
    h.push_str("</section>\n");
}

fn reach_text(t: &ToolEntry) -> &'static str {
    match t.tier {
        Tier::Read => "runs",
        Tier::Action => "after approval",
        Tier::Handoff => "handoff only",
    }
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
}

fn edge(svg: &mut String, from: (f64, f64), to: (f64, f64), class: &str) {
    let dx = (to.0 - from.0) / 2.0;
    let _ = writeln!(
        svg,
        r#"<path class="{class}" d="M{:.1} {:.1} C{:.1} {:.1}, {:.1} {:.1}, {:.1} {:.1}" fill="none" stroke="{}" stroke-width="1.5"{}/>"#,
        from.0,
        from.1,
        from.0 + dx,
        from.1,
        to.0 - dx,
        to.1,
        to.0,
        to.1,
        if class.contains("widened") { "#dc2626" } else { "#94a3b8" },
        if class.contains("widened") { r#" stroke-dasharray="5 3""# } else { "" }
    );
}

fn two_line_text(svg: &mut String, n: &Node, main: &str, sub: &str, color: &str, bold: bool) {
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" font-size="13" fill="{color}"{}>{}</text><text x="{:.1}" y="{:.1}" font-size="11" fill="{color}">{}</text>"#,
        n.x + 12.0,
        n.y + 19.0,
        if bold { r#" font-weight="700""# } else { "" },
        esc(main),
        n.x + 12.0,
        n.y + 36.0,
        esc(sub)
    );
}

/// The capability graph as inline SVG: agent → skills → tools.
fn graph_svg(m: &Manifest, w: &Widened<'_>) -> String {
    // Skill groups; tools in no skill hang off a "(no skill)" group when skills exist, and
    // straight off the agent when none do.
    let grouped: BTreeSet<&str> = m.agent.skills.iter().flat_map(|s| s.tools.iter().map(String::as_str)).collect();
    let ungrouped: Vec<&ToolEntry> = m.tools.iter().filter(|t| !grouped.contains(t.name.as_str())).collect();
    let mut groups: Vec<(String, Vec<&str>, bool)> =
        m.agent.skills.iter().map(|s| (s.name.clone(), s.tools.iter().map(String::as_str).collect(), false)).collect();
    let has_skill_column = !groups.is_empty();
    if has_skill_column && !ungrouped.is_empty() {
        groups.push(("(no skill)".to_owned(), ungrouped.iter().map(|t| t.name.as_str()).collect(), true));
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
    let width = tool_x + tool_w + 90.0;
    let height = bottom + 20.0;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg id="capability-graph" role="img" aria-labelledby="capability-graph-title" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}">"#
    );
    let _ = writeln!(
        svg,
        r#"<title id="capability-graph-title">Capability graph of {}: {} tool(s)</title>"#,
        esc(&m.agent.name),
        m.tools.len()
    );
    for (label, x) in [("agent", agent_x), ("skills", skill_x), ("tools", tool_x)] {
        if label == "skills" && !has_skill_column {
            continue;
        }
        let _ = writeln!(
            svg,
            r##"<text x="{x:.1}" y="22" font-size="12" fill="#64748b" font-weight="700">{label}</text>"##
        );
    }

    // Edges first, so nodes sit on top.
    if has_skill_column {
        for (i, n) in &skill_nodes {
            let (_, tools, _) = &groups[*i];
            edge(&mut svg, agent.right(), n.left(), "edge");
            for t in tools {
                if let Some(tn) = tool_nodes.get(t) {
                    edge(&mut svg, n.right(), tn.left(), if w.tool(t) { "edge widened" } else { "edge" });
                }
            }
        }
    } else {
        for (name, tn) in &tool_nodes {
            edge(&mut svg, agent.right(), tn.left(), if w.tool(name) { "edge widened" } else { "edge" });
        }
    }

    // Agent.
    let _ = writeln!(svg, r#"<g class="node agent"><title>{}</title>"#, esc(&m.agent.description));
    let _ = writeln!(
        svg,
        r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{NODE_H}" rx="8" fill="#0f172a"/>"##,
        agent.x, agent.y, agent.w
    );
    two_line_text(&mut svg, &agent, &m.agent.name, &agent_sub, "#f8fafc", true);
    svg.push_str("</g>\n");

    // Skills.
    for (i, n) in &skill_nodes {
        let (name, tools, pseudo) = &groups[*i];
        let _ = writeln!(svg, r#"<g class="node skill"><title>skill {}</title>"#, esc(name));
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{NODE_H}" rx="8" fill="#f1f5f9" stroke="#475569" stroke-width="1.5"{}/>"##,
            n.x,
            n.y,
            n.w,
            if *pseudo { r#" stroke-dasharray="4 3""# } else { "" }
        );
        two_line_text(&mut svg, n, name, &format!("{} tool(s)", tools.len()), "#0f172a", true);
        svg.push_str("</g>\n");
    }

    // Tools.
    for t in &order {
        let n = &tool_nodes[t.name.as_str()];
        let (fill, text) = tier_fill(t.tier);
        let (stroke, sw) = risk_stroke(t.risk);
        let _ = writeln!(
            svg,
            r#"<g class="node tool tier-{} risk-{}" data-tool="{}"><title>{}: {}</title>"#,
            t.tier,
            t.risk,
            esc(&t.name),
            esc(&t.name),
            esc(&t.description)
        );
        if w.tool(&t.name) {
            let _ = writeln!(
                svg,
                r##"<rect class="widened-outline" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="10" fill="none" stroke="#dc2626" stroke-width="2" stroke-dasharray="6 3"/>"##,
                n.x - 5.0,
                n.y - 5.0,
                n.w + 10.0,
                NODE_H + 10.0
            );
        }
        let _ = writeln!(
            svg,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{NODE_H}" rx="6" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/>"#,
            n.x, n.y, n.w
        );
        two_line_text(&mut svg, n, &t.name, &tool_sub(t), text, true);
        if w.tool(&t.name) {
            let label = if w.new_tools.contains(t.name.as_str()) { "NEW" } else { "WIDENED" };
            let bw = label.len() as f64 * 7.0 + 12.0;
            let _ = writeln!(
                svg,
                r##"<rect x="{:.1}" y="{:.1}" width="{bw:.1}" height="16" rx="8" fill="#dc2626"/><text x="{:.1}" y="{:.1}" font-size="10" font-weight="700" fill="#ffffff">{label}</text>"##,
                n.x + n.w + 10.0,
                n.y + NODE_H / 2.0 - 8.0,
                n.x + n.w + 16.0,
                n.y + NODE_H / 2.0 + 4.0
            );
        }
        svg.push_str("</g>\n");
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_special_character() {
        assert_eq!(
            esc(r#"<a href="x" onclick='y'>&</a>"#),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
    }

    #[test]
    fn backticks_become_code_after_escaping() {
        assert_eq!(esc_code("glob `<a>` added"), "glob <code>&lt;a&gt;</code> added");
        assert_eq!(esc_code("one ` only"), "one ` only");
    }
}
