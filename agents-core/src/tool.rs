//! Tool metadata: what a tool is, what it may touch and how it is confirmed.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How a tool call is carried out.
///
/// Non-exhaustive: a new way of carrying out a call may be added. Code outside this crate that
/// matches on a tier needs an arm for the others, and should refuse (or treat as the strictest)
/// a tier it does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Tier {
    /// Runs on its own; nothing changes.
    Read,
    /// Changes something: runs only after a person approved these exact arguments.
    Action,
    /// Has no execution path: the call becomes a record for a human queue.
    Handoff,
}

impl Tier {
    /// The lowercase name used in manifests and audit records.
    pub const fn as_str(self) -> &'static str {
        match self {
            Tier::Read => "read",
            Tier::Action => "action",
            Tier::Handoff => "handoff",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A coarse statement of blast radius, shown to reviewers and to the person confirming.
///
/// Non-exhaustive: a finer grade may be added. Code outside this crate that matches on a risk
/// needs an arm for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Risk {
    /// Reversible, local.
    Low,
    /// The default.
    Medium,
    /// Hard to reverse or wide in effect.
    High,
    /// Irreversible or safety-relevant.
    Critical,
}

impl Risk {
    /// The lowercase name used in manifests and audit records.
    pub const fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
            Risk::Critical => "critical",
        }
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tool declares it may touch: filesystem globs, network hosts, environment variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PolicySpec {
    /// Globs the tool may read (`*` never crosses `/`).
    pub fs_read: &'static [&'static str],
    /// Globs the tool may write.
    pub fs_write: &'static [&'static str],
    /// Hosts (`host` or `host:port`) the tool may reach.
    pub net_hosts: &'static [&'static str],
    /// Environment variables the tool may read.
    pub env_vars: &'static [&'static str],
    /// Enforced from outside the process (`#[tool(isolated)]`): each call runs in a child
    /// process that the kernel confines to this policy (Landlock rules from the globs' literal
    /// roots and the hosts' ports, a seccomp deny list, resource limits). Without it the
    /// policy binds cooperating tool code only (the capability handles).
    pub isolated: bool,
    /// Its arguments leave the application (`#[tool(egress)]`): a request to another server, an
    /// address a browser opens, a query another service logs. Like a declared host, it makes
    /// the runtime check each call's arguments for values copied from tool results (the
    /// egress provenance check of the gate): a read call carrying one waits for a person.
    pub egress: bool,
}

impl PolicySpec {
    /// A policy that touches nothing.
    pub const NONE: PolicySpec =
        PolicySpec { fs_read: &[], fs_write: &[], net_hosts: &[], env_vars: &[], isolated: false, egress: false };

    /// Whether calls reach the outside world: the tool declares a network host or is marked
    /// `egress`. The gate checks such calls' arguments for where their values came from.
    ///
    /// ```
    /// use agents_core::PolicySpec;
    /// assert!(!PolicySpec::NONE.reaches_out());
    /// assert!(PolicySpec { net_hosts: &["api.example.com"], ..PolicySpec::NONE }.reaches_out());
    /// assert!(PolicySpec { egress: true, ..PolicySpec::NONE }.reaches_out());
    /// ```
    pub const fn reaches_out(&self) -> bool {
        self.egress || !self.net_hosts.is_empty()
    }
}

/// One parameter of a tool, as the model sees it and as the reviewer reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// The parameter's name (the JSON key).
    pub name: &'static str,
    /// The Rust type as written in the function signature.
    pub rust_type: &'static str,
    /// Marked `#[secret]`: masked in audit records, confirm cards and manifests never hold it.
    pub secret: bool,
}

/// Everything known about a tool without running it. `#[tool]` generates one per tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: &'static str,
    /// What a person reads in the confirm dialog (required for action tools).
    pub title: Option<&'static str>,
    /// The doc comment.
    pub description: &'static str,
    /// The permission, `area.action` or `public`.
    pub permission: &'static str,
    /// Read, action or handoff.
    pub tier: Tier,
    /// The declared risk.
    pub risk: Risk,
    /// What the tool may touch.
    pub policy: PolicySpec,
    /// The parameters in declaration order.
    pub params: &'static [ParamSpec],
    /// Other tools this tool invokes (each must also be granted by the agent).
    pub uses: &'static [&'static str],
    /// For a tool imported from an MCP server (`mcp_import!`): the server and the pin. `None`
    /// for a tool written in Rust.
    pub import: Option<&'static ImportSpec>,
    /// For a handoff tool that names the agent it hands to (`#[tool(handoff = Target)]`): that
    /// agent, by name and manifest SHA-256. `None` for every other tool, and for a handoff
    /// tool that only files a record.
    pub handoff: Option<crate::subagent::SubAgentSpec>,
}

/// Where an imported tool comes from and what it was pinned as: written by `mcp_import!` from
/// the checked-in lock file (see [`crate::mcp_lock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportSpec {
    /// The name the application gives the MCP server.
    pub server: &'static str,
    /// The tool's name on that server.
    pub tool: &'static str,
    /// The pin: [`crate::mcp_lock::pin_sha256`] of the name, description and input schema the
    /// server gave when the tool was pinned.
    pub sha256: &'static str,
    /// The pinned input schema, as canonical JSON.
    pub input_schema: &'static str,
    /// Why this server is the application's own, so that the tool's arguments are not egress
    /// (`mcp_import! { ..., own_server = "..."; }`). `None` (the default): the arguments leave
    /// for a third party, the tool's policy is `egress` and the gate checks their provenance.
    pub own_server: Option<&'static str>,
    /// Where the server is reached, as the manifest names it
    /// ([`crate::mcp_lock::endpoint`] of the lock file's `source`): the runtime refuses to call
    /// the server where the application reaches it at another endpoint.
    pub endpoint: &'static str,
}

impl ToolSpec {
    /// Whether the tool changes something (an action tool).
    pub const fn mutating(&self) -> bool {
        matches!(self.tier, Tier::Action)
    }

    /// Whether what the tool returns is untrusted content: true for a tool imported from an MCP
    /// server, whose results another party writes (a provenance check treats values copied
    /// from them as the model's, not the user's).
    pub const fn returns_untrusted(&self) -> bool {
        self.import.is_some()
    }

    /// Names of the parameters marked `#[secret]`.
    pub fn secret_params(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.params.iter().filter(|p| p.secret).map(|p| p.name)
    }
}

/// A tool, as generated by `#[tool]` on a function: a zero-sized marker type named like the
/// function, with its typed arguments and its static spec.
///
/// Sealed: a hand-written impl does not compile (it lacks the doc-hidden seal only `#[tool]`
/// writes), so a tool's spec, arguments and execution come from one declaration.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    label = "expected a function annotated with `#[tool(...)]`",
    note = "annotate the function with `#[tool(permission = ...)]` and name it here by its path"
)]
pub trait Tool: crate::seal::DeclaredByToolMacro + Send + Sync + 'static {
    /// The typed arguments (serde, unknown fields denied; schemars schema).
    type Args: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static;
    /// The permission type.
    type Permission: crate::Permission;
    /// The name the model calls.
    const NAME: &'static str;
    /// The static spec.
    const SPEC: ToolSpec;
    /// The JSON schema of the arguments, built once and cached.
    fn input_schema() -> &'static serde_json::Value;

    /// Reads the arguments from their JSON, with the errors `Args`' `Deserialize` gives.
    ///
    /// The default goes through `Deserialize`; `#[tool]` writes a direct reader of the object's
    /// fields, so that no serde visitor is compiled for each tool.
    fn parse_args(args: &serde_json::Value) -> Result<Self::Args, String> {
        match <Self::Args as serde::Deserialize>::deserialize(args) {
            Ok(args) => Ok(args),
            Err(e) => Err(e.to_string()),
        }
    }
}
