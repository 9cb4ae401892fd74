//! The graph of a composite as const-constructible values: its nodes (agents, nested
//! composites, combinators), its edges and each agent's capability summary.

use crate::tool::Tier;

/// The most dangerous tier among a node's tools: `handoff` > `action` > `read` > `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reach {
    /// No tool.
    None,
    /// Read tools only.
    Read,
    /// At least one action tool (each call waits for a person's decision).
    Action,
    /// At least one handoff tool.
    Handoff,
}

impl Reach {
    /// The lowercase name written in a composite manifest.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reach::None => "none",
            Reach::Read => "read",
            Reach::Action => "action",
            Reach::Handoff => "handoff",
        }
    }

    /// The reach of one tool of `tier`.
    pub const fn of_tier(tier: Tier) -> Reach {
        match tier {
            Tier::Read => Reach::Read,
            Tier::Action => Reach::Action,
            Tier::Handoff => Reach::Handoff,
        }
    }

    /// The more dangerous of two reaches.
    pub const fn max(self, other: Reach) -> Reach {
        if (other as u8) > (self as u8) { other } else { self }
    }
}

/// What an agent can reach, in a few names: `agent!` writes it as `Agent::CAPABILITIES`, each
/// list sorted in byte order without repeats. It covers the agent's own tools and, in turn,
/// the tools of every agent it grants and of every target of its handoff tools: a run
/// entering the agent may reach each of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The action tools it reaches (each call waits for a person's decision).
    pub actions: &'static [&'static str],
    /// The handoff tools it reaches.
    pub handoffs: &'static [&'static str],
    /// The permissions of all the tools it reaches.
    pub permissions: &'static [&'static str],
    /// All the tools it reaches: its own, its granted agents' and its handoff targets'.
    pub tools: &'static [&'static str],
    /// The most dangerous tier among the tools it reaches.
    pub reaches: Reach,
    /// The ways it may be served over MCP (its `expose: { mcp: [...] }`, as
    /// `AgentSpec::expose_mcp`): a composite is served over MCP only in a way every agent
    /// node admits. Not part of the graph manifest's text.
    pub expose_mcp: &'static [crate::expose::McpExposure],
}

impl Capabilities {
    /// An agent without tools (served over MCP in no way).
    pub const NONE: Capabilities = Capabilities {
        actions: &[],
        handoffs: &[],
        permissions: &[],
        tools: &[],
        reaches: Reach::None,
        expose_mcp: &[],
    };

    /// One list, by its key in the manifest.
    pub(crate) const fn list(&self, list: List) -> &'static [&'static str] {
        match list {
            List::Actions => self.actions,
            List::Handoffs => self.handoffs,
            List::Permissions => self.permissions,
            List::Tools => self.tools,
        }
    }
}

/// The four lists of a capability summary, in the order of their keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum List {
    Actions,
    Handoffs,
    Permissions,
    Tools,
}

impl List {
    pub(crate) const ALL: [List; 4] = [List::Actions, List::Handoffs, List::Permissions, List::Tools];

    pub(crate) const fn key(self) -> &'static str {
        match self {
            List::Actions => "actions",
            List::Handoffs => "handoffs",
            List::Permissions => "permissions",
            List::Tools => "tools",
        }
    }
}

/// How a branch chooses its arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Router {
    /// A function of the application's code.
    Code,
    /// A model's choice, validated against the arms' names; anything else takes the default.
    Model,
}

/// What a parallel node does when one member fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// The other members are cancelled and the node fails.
    FailFast,
    /// Every member runs to its end; the join receives each result or failure.
    Collect,
}

/// What a node is. (`AgentNode`, not `Agent`: a second item named `Agent` would make the
/// compiler print the trait's full path in every message that names it.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// An agent declared with `agent!`.
    AgentNode {
        /// Its name (`Agent::SPEC.name`).
        agent: &'static str,
        /// Its `MANIFEST_SHA256`.
        manifest_sha256: &'static str,
        /// Its capability summary.
        capabilities: Capabilities,
    },
    /// A composite used as one node of another.
    CompositeNode {
        /// Its name.
        composite: &'static str,
        /// Its `MANIFEST_SHA256`.
        manifest_sha256: &'static str,
        /// Its graph (its capabilities are its nodes' union).
        graph: &'static Graph,
    },
    /// One of several arms, with a default.
    Branch {
        /// Who chooses.
        router: Router,
    },
    /// A body repeated until its stop condition holds, at most `max_iterations` times.
    Loop {
        /// The bound.
        max_iterations: u32,
    },
    /// The members run on the same input at once; a join combines their outputs.
    Parallel {
        /// The join's name.
        join: &'static str,
        /// What one member's failure does.
        on_failure: OnFailure,
    },
    /// Members answer, a moderator decides, for at most `rounds` rounds.
    Forum {
        /// The bound on rounds.
        rounds: u32,
    },
    /// An inner node between steps before and after it.
    Wrap {
        /// The steps' names, in the order they run.
        steps: &'static [&'static str],
    },
}

impl NodeKind {
    /// The `kind` written in the manifest.
    pub const fn as_str(&self) -> &'static str {
        match self {
            NodeKind::AgentNode { .. } => "agent",
            NodeKind::CompositeNode { .. } => "composite",
            NodeKind::Branch { .. } => "branch",
            NodeKind::Loop { .. } => "loop",
            NodeKind::Parallel { .. } => "parallel",
            NodeKind::Forum { .. } => "forum",
            NodeKind::Wrap { .. } => "wrap",
        }
    }
}

/// One node of the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    /// Unique in its graph.
    pub id: &'static str,
    /// What it is.
    pub kind: NodeKind,
}

/// How two nodes are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeKind {
    /// The output of `from` is the input of `to`.
    Then,
    /// `to` is an arm of the branch `from`.
    Arm,
    /// `to` is the default arm of the branch `from`.
    Default,
    /// `to` is the body of the loop `from`.
    Body,
    /// `to` is a member of the parallel or forum node `from`.
    Member,
    /// `to` is the moderator of the forum `from`.
    Moderator,
    /// `to` is the inner node of the wrap `from`.
    Inner,
    /// `to` is granted to `from` as a tool.
    Tool,
    /// `from` may hand off to `to`.
    Handoff,
}

impl EdgeKind {
    /// The `kind` written in the manifest.
    pub const fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Then => "then",
            EdgeKind::Arm => "arm",
            EdgeKind::Default => "default",
            EdgeKind::Body => "body",
            EdgeKind::Member => "member",
            EdgeKind::Moderator => "moderator",
            EdgeKind::Inner => "inner",
            EdgeKind::Tool => "tool",
            EdgeKind::Handoff => "handoff",
        }
    }
}

/// One edge of the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// The node it leaves.
    pub from: &'static str,
    /// The node it reaches.
    pub to: &'static str,
    /// How they are joined.
    pub kind: EdgeKind,
}

/// A composite's graph: what its manifest is written from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Graph {
    /// The composite's name.
    pub name: &'static str,
    /// What it is for.
    pub description: &'static str,
    /// Its input type, as written.
    pub input: &'static str,
    /// Its output type, as written.
    pub output: &'static str,
    /// The node a run starts at.
    pub entry: &'static str,
    /// Every node, in any order (the manifest sorts them).
    pub nodes: &'static [Node],
    /// Every edge, in any order (the manifest sorts them).
    pub edges: &'static [Edge],
}
