//! The capability graph, as inline SVG: agent → skills → tools in columns, each tool filled by
//! its tier and bordered by its risk, a tool the diff widened outlined and flagged. Computed
//! here as plain values (coordinates, labels, colours) the template prints.

use super::widened::Widened;
use crate::manifest::{Manifest, ToolEntry};
use crate::{Risk, Tier};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A coordinate printed with one decimal, as SVG attributes take it.
#[derive(Clone, Copy)]
pub(super) struct Px(pub(super) f64);

impl fmt::Display for Px {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1}", self.0)
    }
}

/// A size printed as a whole number.
#[derive(Clone, Copy)]
pub(super) struct Whole(pub(super) f64);

impl fmt::Display for Whole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.0}", self.0)
    }
}

pub(super) struct Graph<'a> {
    pub(super) width: Whole,
    pub(super) height: Whole,
    pub(super) node_h: f64,
    pub(super) columns: Vec<(&'static str, Px)>,
    pub(super) edges: Vec<Edge>,
    pub(super) agent: NodeText<'a>,
    pub(super) skills: Vec<SkillNode<'a>>,
    pub(super) tools: Vec<ToolNode<'a>>,
}

pub(super) struct Edge {
    /// The path's `d`: numbers only.
    pub(super) d: String,
    pub(super) widened: bool,
}

/// A node's box and its two lines of text.
pub(super) struct NodeText<'a> {
    pub(super) x: Px,
    pub(super) y: Px,
    pub(super) w: Px,
    pub(super) text_x: Px,
    pub(super) main_y: Px,
    pub(super) sub_y: Px,
    pub(super) main: &'a str,
    pub(super) sub: String,
}

pub(super) struct SkillNode<'a> {
    pub(super) node: NodeText<'a>,
    pub(super) pseudo: bool,
}

pub(super) struct Outline {
    pub(super) x: Px,
    pub(super) y: Px,
    pub(super) w: Px,
    pub(super) h: Px,
}

pub(super) struct Flag {
    pub(super) x: Px,
    pub(super) y: Px,
    pub(super) w: Px,
    pub(super) text_x: Px,
    pub(super) text_y: Px,
    pub(super) label: &'static str,
}

pub(super) struct ToolNode<'a> {
    pub(super) node: NodeText<'a>,
    pub(super) tier: &'static str,
    pub(super) risk: &'static str,
    pub(super) description: &'a str,
    pub(super) fill: &'static str,
    pub(super) text_color: &'static str,
    pub(super) stroke: &'static str,
    pub(super) stroke_width: f64,
    pub(super) outline: Option<Outline>,
    pub(super) flag: Option<Flag>,
}

pub(super) const NODE_H: f64 = 46.0;
pub(super) const GAP_Y: f64 = 14.0;
pub(super) const TOP: f64 = 44.0;
pub(super) const COL_GAP: f64 = 90.0;
pub(super) const LEFT: f64 = 16.0;
const MAIN_CHAR: f64 = 8.0;
const SUB_CHAR: f64 = 6.8;

pub(super) fn node_width(main: &str, sub: &str) -> f64 {
    let w = (main.chars().count() as f64 * MAIN_CHAR).max(sub.chars().count() as f64 * SUB_CHAR) + 28.0;
    w.max(120.0)
}

pub(super) fn tier_fill(t: Tier) -> (&'static str, &'static str) {
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

pub(super) struct Node {
    pub(super) x: f64,
    pub(super) y: f64,
    pub(super) w: f64,
}

impl Node {
    pub(super) fn right(&self) -> (f64, f64) {
        (self.x + self.w, self.y + NODE_H / 2.0)
    }
    pub(super) fn left(&self) -> (f64, f64) {
        (self.x, self.y + NODE_H / 2.0)
    }
    pub(super) fn text<'a>(&self, main: &'a str, sub: String) -> NodeText<'a> {
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

pub(super) fn edge(from: (f64, f64), to: (f64, f64), widened: bool) -> Edge {
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

/// A group of the skills column: its name, its tools, and whether it is the "(no skill)"
/// group of the tools in no skill.
type SkillGroup<'a> = (&'a str, Vec<&'a str>, bool);

/// The capability graph: agent → skills → tools, laid out in columns.
pub(super) fn graph<'a>(m: &'a Manifest, w: &Widened<'_>) -> Graph<'a> {
    let groups = skill_groups(m);
    let has_skill_column = !groups.is_empty();
    let order = tool_order(m, &groups);

    let agent_sub = format!("{} → {}", m.agent.input, m.agent.output);
    let agent_w = node_width(&m.agent.name, &agent_sub);
    let skill_w = groups.iter().map(|(n, t, _)| node_width(n, &format!("{} tool(s)", t.len()))).fold(0.0, f64::max);
    let tool_w = order.iter().map(|t| node_width(&t.name, &tool_sub(t))).fold(120.0, f64::max);

    let agent_x = LEFT;
    let skill_x = agent_x + agent_w + COL_GAP;
    let tool_x = if has_skill_column { skill_x + skill_w + COL_GAP } else { skill_x };

    let tool_nodes: BTreeMap<&str, Node> = order
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), Node { x: tool_x, y: TOP + i as f64 * (NODE_H + GAP_Y), w: tool_w }))
        .collect();
    let skill_nodes = place_skills(&groups, &tool_nodes, Node { x: skill_x, y: TOP, w: skill_w });

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

    let skills = skill_nodes
        .iter()
        .map(|(i, n)| {
            let (name, tools, pseudo) = &groups[*i];
            SkillNode { node: n.text(name, format!("{} tool(s)", tools.len())), pseudo: *pseudo }
        })
        .collect();

    Graph {
        width: Whole(tool_x + tool_w + 90.0),
        height: Whole(bottom + 20.0),
        node_h: NODE_H,
        columns,
        edges: edges(&agent, &groups, &skill_nodes, &tool_nodes, w),
        agent: agent.text(&m.agent.name, agent_sub),
        skills,
        tools: order.iter().map(|t| tool_node(t, &tool_nodes[t.name.as_str()], w)).collect(),
    }
}

/// The skills column's groups; tools in no skill hang off a "(no skill: offered under none)"
/// group when skills exist (or "(no skill: shared by every skill)" under `unskilled: shared`),
/// and straight off the agent when none do (no group at all).
fn skill_groups(m: &Manifest) -> Vec<SkillGroup<'_>> {
    let grouped: BTreeSet<&str> = m.agent.skills.iter().flat_map(|s| s.tools.iter().map(String::as_str)).collect();
    let ungrouped: Vec<&ToolEntry> = m.tools.iter().filter(|t| !grouped.contains(t.name.as_str())).collect();
    let mut groups: Vec<SkillGroup<'_>> =
        m.agent.skills.iter().map(|s| (s.name.as_str(), s.tools.iter().map(String::as_str).collect(), false)).collect();
    if !groups.is_empty() && !ungrouped.is_empty() {
        let label = match m.agent.unskilled {
            crate::skill::Unskilled::None => "(no skill: offered under none)",
            crate::skill::Unskilled::Shared => "(no skill: shared by every skill)",
        };
        groups.push((label, ungrouped.iter().map(|t| t.name.as_str()).collect(), true));
    }
    groups
}

/// The tools column, top to bottom: by first group, then the rest.
fn tool_order<'a>(m: &'a Manifest, groups: &[SkillGroup<'_>]) -> Vec<&'a ToolEntry> {
    let mut order: Vec<&ToolEntry> = Vec::new();
    for (_, tools, _) in groups {
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
    order
}

/// A tool node's second line: tier, risk and permission.
fn tool_sub(t: &ToolEntry) -> String {
    format!("{} · {} · {}", t.tier, t.risk, t.permission)
}

/// The skill nodes, by group index: each centred on its tools, pushed down to avoid overlaps
/// (`column` gives their x, their width and the top).
fn place_skills(groups: &[SkillGroup<'_>], tool_nodes: &BTreeMap<&str, Node>, column: Node) -> Vec<(usize, Node)> {
    let mut skill_nodes: Vec<(usize, Node)> = Vec::new();
    let mut desired: Vec<(usize, f64)> = groups
        .iter()
        .enumerate()
        .map(|(i, (_, tools, _))| {
            let ys: Vec<f64> = tools.iter().filter_map(|t| tool_nodes.get(t)).map(|n| n.y).collect();
            let y = if ys.is_empty() { column.y } else { ys.iter().sum::<f64>() / ys.len() as f64 };
            (i, y)
        })
        .collect();
    desired.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let mut next_free = column.y;
    for (i, y) in desired {
        let y = y.max(next_free);
        next_free = y + NODE_H + GAP_Y;
        skill_nodes.push((i, Node { x: column.x, y, w: column.w }));
    }
    skill_nodes.sort_by_key(|(i, _)| *i);
    skill_nodes
}

/// The edges, agent → skills → tools (or agent → tools without skills); drawn first, so nodes
/// sit on top.
fn edges(
    agent: &Node,
    groups: &[SkillGroup<'_>],
    skill_nodes: &[(usize, Node)],
    tool_nodes: &BTreeMap<&str, Node>,
    w: &Widened<'_>,
) -> Vec<Edge> {
    let mut edges = Vec::new();
    if groups.is_empty() {
        for (name, tn) in tool_nodes {
            edges.push(edge(agent.right(), tn.left(), w.tool(name)));
        }
        return edges;
    }
    for (i, n) in skill_nodes {
        edges.push(edge(agent.right(), n.left(), false));
        for t in &groups[*i].1 {
            if let Some(tn) = tool_nodes.get(t) {
                edges.push(edge(n.right(), tn.left(), w.tool(t)));
            }
        }
    }
    edges
}

/// A tool's node `n`: filled by tier, outlined by risk, flagged when the diff widened it.
fn tool_node<'a>(t: &'a ToolEntry, n: &Node, w: &Widened<'_>) -> ToolNode<'a> {
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
}
