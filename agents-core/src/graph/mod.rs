//! A composite's graph manifest: the agents a composition runs, the combinators between them
//! (branch, loop, parallel, forum, wrap) and the edges that connect them, as canonical JSON.
//!
//! A composite (agents composed with then/branch/loop/parallel/forum/wrap) carries this
//! manifest as its `MANIFEST` constant, the way an agent carries its permission manifest. A
//! reviewer reads it ([`GraphManifest::parse`]), diffs two of them ([`diff()`]: which changes
//! let a run reach more) and draws it (`agents manifest render`).
//!
//! The format (keys sorted, no whitespace, [`crate::canonical`] rules; every list sorted:
//! nodes by id, edges by from, to, kind, names in byte order):
//!
//! ```text
//! {"capabilities":{"actions":[..],"handoffs":[..],"permissions":[..],"tools":[..]},
//!  "composite":{"description":"..","input":"..","name":"..","output":".."},
//!  "edges":[{"from":"<id>","kind":"then|arm|default|body|member|moderator|inner|tool|handoff","to":"<id>"}],
//!  "format":"agents.composite-manifest",
//!  "nodes":[{"actions":[..],"agent":"..","handoffs":[..],"id":"..","kind":"agent","manifest_sha256":"<hex>",
//!            "permissions":[..],"reaches":"none|read|action|handoff","tools":[..]},
//!           {"id":"..","kind":"branch","router":"code|model"},
//!           {"id":"..","kind":"loop","max_iterations":3},
//!           {"id":"..","kind":"parallel","join":"..","on_failure":"fail_fast|collect"},
//!           {"id":"..","kind":"forum","rounds":2},
//!           {"id":"..","kind":"wrap","steps":[".."]}],
//!  "version":1}
//! ```
//!
//! Reading is strict where leniency could hide a capability: an unknown kind, a missing or
//! unknown field, a repeated key, a duplicate node id or edge, an edge to an unknown node or
//! of a kind its source cannot have, a cycle, a `reaches` that contradicts the node's lists
//! and a `capabilities` that is not the union of the agent nodes' lists are each refused
//! with an error that says what is wrong, where, and what to do.
//!
//! ```
//! use agents_core::graph::{GraphManifest, Reaches};
//!
//! let text = r#"{"capabilities":{"actions":["approve"],"handoffs":[],"permissions":["kyc.write"],"tools":["approve"]},"composite":{"description":"Reviews a request.","input":"RawRequest","name":"kyc","output":"Decision"},"edges":[],"format":"agents.composite-manifest","nodes":[{"actions":["approve"],"agent":"kyc-reviewer","handoffs":[],"id":"review","kind":"agent","manifest_sha256":"0000000000000000000000000000000000000000000000000000000000000000","permissions":["kyc.write"],"reaches":"action","tools":["approve"]}],"version":1}"#;
//! let graph = GraphManifest::parse(text).unwrap();
//! assert!(graph.is_canonical_text(text.as_bytes()));
//! assert_eq!(graph.reach_from("review"), Reaches::Action);
//! ```

mod diff;
mod parse;
mod reach;
mod write;

pub use diff::{NodeManifests, diff};

use std::fmt;

/// The `format` of a composite's graph manifest.
pub const FORMAT: &str = "agents.composite-manifest";

/// The version this build reads and writes.
pub const VERSION: u64 = 1;

/// A composite's graph manifest, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphManifest {
    /// What the composite is.
    pub composite: CompositeEntry,
    /// The union of the agent nodes' lists.
    pub capabilities: NameLists,
    /// The nodes, sorted by id.
    pub nodes: Vec<Node>,
    /// The edges, sorted by from, to, kind.
    pub edges: Vec<Edge>,
}

/// The composite's name, description and types.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompositeEntry {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The input type's name.
    pub input: String,
    /// The output type's name.
    pub output: String,
    /// The id of the node a run starts at, when the manifest names it (`composite!` always
    /// does).
    pub entry: Option<String>,
}

/// Four sorted lists of names: an agent node's tools, and the composite's union of them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NameLists {
    /// Action tools (each call waits for a person).
    pub actions: Vec<String>,
    /// Handoff tools.
    pub handoffs: Vec<String>,
    /// Permissions the tools require.
    pub permissions: Vec<String>,
    /// Every tool.
    pub tools: Vec<String>,
}

impl NameLists {
    /// The lists by their field names, in the order of the format.
    pub fn fields(&self) -> [(&'static str, &[String]); 4] {
        [
            ("actions", &self.actions),
            ("handoffs", &self.handoffs),
            ("permissions", &self.permissions),
            ("tools", &self.tools),
        ]
    }

    /// The most dangerous tier these lists hold: handoff, then action, then read (any tool).
    pub fn reaches(&self) -> Reaches {
        if !self.handoffs.is_empty() {
            Reaches::Handoff
        } else if !self.actions.is_empty() {
            Reaches::Action
        } else if !self.tools.is_empty() {
            Reaches::Read
        } else {
            Reaches::None
        }
    }
}

/// The most dangerous tier a node reaches, ordered `None < Read < Action < Handoff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reaches {
    /// No tool.
    None,
    /// Read tools only.
    Read,
    /// An action tool.
    Action,
    /// A handoff tool.
    Handoff,
}

impl Reaches {
    /// The name in the format.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reaches::None => "none",
            Reaches::Read => "read",
            Reaches::Action => "action",
            Reaches::Handoff => "handoff",
        }
    }

    /// Whether a run that reaches it may change something or hand off (action or handoff).
    pub const fn is_action(self) -> bool {
        matches!(self, Reaches::Action | Reaches::Handoff)
    }
}

impl fmt::Display for Reaches {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One node: an agent or a combinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Unique within the manifest.
    pub id: String,
    /// What it is.
    pub kind: NodeKind,
}

/// What a node is, with its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    /// An agent, pinned by its permission manifest's SHA-256.
    Agent(AgentNode),
    /// Runs one of its arms, chosen by code or by a model.
    Branch {
        /// Who chooses the arm.
        router: Router,
    },
    /// Runs its body up to a bound.
    Loop {
        /// The most iterations.
        max_iterations: u64,
    },
    /// Runs its members side by side.
    Parallel {
        /// How the results are joined (a name).
        join: String,
        /// What one member's failure does.
        on_failure: OnFailure,
    },
    /// Members speak in turns, under a moderator.
    Forum {
        /// The number of rounds.
        rounds: u64,
    },
    /// Runs its inner node inside guard steps.
    Wrap {
        /// The steps' names, in the order they run (before the inner node, then after it).
        steps: Vec<String>,
    },
}

impl NodeKind {
    /// The kind's name in the format.
    pub const fn name(&self) -> &'static str {
        match self {
            NodeKind::Agent(a) if a.is_composite => "composite",
            NodeKind::Agent(_) => "agent",
            NodeKind::Branch { .. } => "branch",
            NodeKind::Loop { .. } => "loop",
            NodeKind::Parallel { .. } => "parallel",
            NodeKind::Forum { .. } => "forum",
            NodeKind::Wrap { .. } => "wrap",
        }
    }
}

/// An agent node's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentNode {
    /// The agent's name (a nested composite's, when [`AgentNode::is_composite`]).
    pub agent: String,
    /// Whether the node is a composite nested in this one (`"kind":"composite"`, its name under
    /// `"composite"` and its graph manifest's SHA-256 in `manifest_sha256`) rather than an agent.
    pub is_composite: bool,
    /// Its permission manifest's SHA-256 (lowercase hex).
    pub manifest_sha256: String,
    /// The most dangerous tier among its tools (checked against `lists`).
    pub reaches: Reaches,
    /// Its tools, actions, handoffs and permissions.
    pub lists: NameLists,
}

/// Who chooses a branch's arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Router {
    /// Code: the choice is the application's.
    Code,
    /// A model: text the model read may steer it.
    Model,
}

impl Router {
    /// The name in the format.
    pub const fn as_str(self) -> &'static str {
        match self {
            Router::Code => "code",
            Router::Model => "model",
        }
    }
}

/// What one parallel member's failure does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// The others are stopped.
    FailFast,
    /// The others run on; failures are collected.
    Collect,
}

impl OnFailure {
    /// The name in the format.
    pub const fn as_str(self) -> &'static str {
        match self {
            OnFailure::FailFast => "fail_fast",
            OnFailure::Collect => "collect",
        }
    }
}

/// An edge between two nodes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Edge {
    /// The source node's id.
    pub from: String,
    /// The target node's id.
    pub to: String,
    /// What the edge means.
    pub kind: EdgeKind,
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -{}-> {}", self.from, self.kind.as_str(), self.to)
    }
}

/// What an edge means. Ordered by name, as the format sorts edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeKind {
    /// A branch's arm.
    Arm,
    /// A loop's body.
    Body,
    /// A branch's default arm.
    Default,
    /// An agent hands off to another.
    Handoff,
    /// A wrap's inner node.
    Inner,
    /// A parallel's or forum's member.
    Member,
    /// A forum's moderator.
    Moderator,
    /// Runs after its source, on its output.
    Then,
    /// An agent calls another as a tool.
    Tool,
}

impl EdgeKind {
    /// Every kind, in order.
    pub const ALL: [EdgeKind; 9] = [
        EdgeKind::Arm,
        EdgeKind::Body,
        EdgeKind::Default,
        EdgeKind::Handoff,
        EdgeKind::Inner,
        EdgeKind::Member,
        EdgeKind::Moderator,
        EdgeKind::Then,
        EdgeKind::Tool,
    ];

    /// The name in the format.
    pub const fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Arm => "arm",
            EdgeKind::Body => "body",
            EdgeKind::Default => "default",
            EdgeKind::Handoff => "handoff",
            EdgeKind::Inner => "inner",
            EdgeKind::Member => "member",
            EdgeKind::Moderator => "moderator",
            EdgeKind::Then => "then",
            EdgeKind::Tool => "tool",
        }
    }

    /// Whether a node of `source` kind may have an edge of this kind (`then` from any).
    pub fn allowed_from(self, source: &NodeKind) -> bool {
        match self {
            EdgeKind::Then => true,
            EdgeKind::Arm | EdgeKind::Default => matches!(source, NodeKind::Branch { .. }),
            EdgeKind::Body => matches!(source, NodeKind::Loop { .. }),
            EdgeKind::Member => matches!(source, NodeKind::Parallel { .. } | NodeKind::Forum { .. }),
            EdgeKind::Moderator => matches!(source, NodeKind::Forum { .. }),
            EdgeKind::Inner => matches!(source, NodeKind::Wrap { .. }),
            EdgeKind::Tool | EdgeKind::Handoff => matches!(source, NodeKind::Agent(_)),
        }
    }
}

/// Why a graph manifest cannot be read: what is wrong, where, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// The text is not JSON, or a key repeats.
    #[error("not a composite manifest: {0}")]
    NotJson(String),
    /// The `format` is another one.
    #[error("unknown manifest format `{0}`; expected `{FORMAT}`")]
    WrongFormat(String),
    /// Another version.
    #[error("composite manifest version {0} is not supported; this build reads version {VERSION}")]
    WrongVersion(String),
    /// A field is missing, unknown, of the wrong type, or contradicts another.
    #[error("{at}: {problem}; {fix}")]
    Invalid {
        /// Where: `nodes[2] (id `review`).reaches`, `edges[0]`, ...
        at: String,
        /// What is wrong.
        problem: String,
        /// What to do.
        fix: String,
    },
}

impl GraphManifest {
    /// Reads a graph manifest and checks it (see the module's documentation). Lists are
    /// sorted on the way in, so a file not in canonical order reads, and
    /// [`GraphManifest::is_canonical_text`] says whether it was canonical.
    pub fn parse(text: &str) -> Result<Self, GraphError> {
        parse::parse(text)
    }

    /// Builds a manifest from its parts: sorts every list, computes `capabilities` as the
    /// union of the agent nodes' lists, and checks it as [`GraphManifest::parse`] does.
    pub fn from_parts(composite: CompositeEntry, nodes: Vec<Node>, edges: Vec<Edge>) -> Result<Self, GraphError> {
        parse::build(composite, nodes, edges)
    }

    /// The canonical text: what the composite's `MANIFEST` holds, byte for byte.
    pub fn to_canonical_string(&self) -> String {
        write::canonical(self)
    }

    /// SHA-256 of the canonical text, lowercase hex.
    pub fn sha256(&self) -> String {
        crate::canonical::sha256_hex(self.to_canonical_string().as_bytes())
    }

    /// Whether `text` is exactly this manifest's canonical text.
    pub fn is_canonical_text(&self, text: &[u8]) -> bool {
        text == self.to_canonical_string().as_bytes()
    }

    /// A node by id.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The most dangerous tier a run entering node `id` may reach: its own, and that of every
    /// node reachable from it by edges. [`Reaches::None`] for an unknown id.
    pub fn reach_from(&self, id: &str) -> Reaches {
        reach::Reach::new(self).from(id)
    }
}

/// Whether `text` declares the composite manifest's format (a JSON object whose `format` is
/// [`FORMAT`]), so a reader can choose between this format and an agent's manifest before
/// reading either.
pub fn declares_format(text: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Head {
        format: Option<serde_json::Value>,
    }
    serde_json::from_str::<Head>(text).ok().and_then(|h| h.format).is_some_and(|f| f == FORMAT)
}
