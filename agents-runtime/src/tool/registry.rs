//! The registry `agent!` generates, its entries, the check that it is exactly what the
//! agent's `MANIFEST` states, and the link-time list of every tool in a binary.

use super::args::{ErasedArgs, ParseArgs};
use super::exec::{Dispatch, Handler};
use agents_core::ToolSpec;
use agents_core::compose::{Capabilities, CapabilityLists};
use serde_json::Value;
use std::fmt;

/// A registry entry: the spec, a strict typed parse, and the handler.
///
/// Built only by [`RegisteredTool::of`], from one tool's own `#[tool]` declaration: an entry cannot
/// pair one tool's spec with another tool's handler, parse or schema.
pub struct RegisteredTool<A> {
    /// The tool's spec.
    pub(crate) spec: &'static ToolSpec,
    /// The cached input schema.
    pub(crate) schema: fn() -> &'static Value,
    /// Typed deserialization of already-strictly-parsed arguments (borrowed: no copy).
    pub(crate) parse: ParseArgs,
    /// The parse for a worker process (keeps the checked JSON): a runtime setting may isolate
    /// a tool its code does not mark `isolated` (see `crate::isolate::Isolation`).
    pub(crate) parse_isolated: ParseArgs,
    /// How to carry it out.
    pub(crate) handler: Handler<A>,
}

impl<A> fmt::Debug for RegisteredTool<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredTool").field("tool", &self.spec.name).field("handler", &self.handler).finish()
    }
}

impl<A> RegisteredTool<A> {
    /// The tool's spec.
    pub fn spec(&self) -> &'static ToolSpec {
        self.spec
    }

    /// The tool's cached input schema.
    pub fn schema(&self) -> &'static Value {
        (self.schema)()
    }

    /// Typed deserialization of already-strictly-parsed arguments.
    pub fn parse(&self, args: &Value) -> Result<ErasedArgs, String> {
        (self.parse)(args)
    }

    /// How the tool is carried out (callable only with a [`CallContext`](super::CallContext),
    /// which only the runtime makes).
    pub fn handler(&self) -> &Handler<A> {
        &self.handler
    }

    /// The tool's tier, as its handler carries it out.
    pub fn tier(&self) -> agents_core::Tier {
        match self.handler {
            Handler::Read(_) => agents_core::Tier::Read,
            Handler::Action(_) => agents_core::Tier::Action,
            Handler::Handoff(_) => agents_core::Tier::Handoff,
        }
    }

    /// The entry of tool `T`, which the agent must grant.
    pub fn of<T: Dispatch<A>>() -> Self
    where
        A: agents_core::Grants<T>,
    {
        RegisteredTool {
            spec: &T::SPEC,
            schema: T::input_schema,
            parse: T::PARSE,
            parse_isolated: T::PARSE_KEEPING_JSON,
            handler: T::handler(),
        }
    }
}

/// The registry `agent!` generates: a `match` on the tool's position in
/// [`Agent::tools`](agents_core::Agent::tools).
///
/// Sealed (a hand-written impl does not compile), and checked: `Runtime::start` and
/// `Runtime::direct` refuse, once per agent type, an agent whose registry does not produce
/// exactly its `MANIFEST` bytes (see [`verify_registry`]).
pub trait Registry: agents_core::Agent + Sized {
    /// The entry of the tool at `index` in `tools()`.
    fn entry_at(index: usize) -> Option<RegisteredTool<Self>>;
    /// The entry of a granted tool, by name.
    fn entry(name: &str) -> Option<RegisteredTool<Self>> {
        Self::tool_index(name).and_then(Self::entry_at)
    }
    /// The entry of the agent at `index` in [`Agent::AGENTS`](agents_core::Agent::AGENTS):
    /// how the run offers it to its model and calls it. `None` (the default) beyond them.
    fn agent_at(index: usize) -> Option<crate::run::GrantedAgent> {
        let _ = index;
        None
    }
    /// The agent the handoff tool named `tool` hands the run to (`#[tool(handoff = Target)]`):
    /// how the run starts it. `None` (the default) for every other tool.
    fn handoff_to(tool: &str) -> Option<crate::run::GrantedAgent> {
        let _ = tool;
        None
    }
}

/// Why a registry is refused: it does not produce exactly its agent's `MANIFEST`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "agent `{agent}` is refused: its registry does not match its `MANIFEST` ({reason}); declare agents only with `agent!`, which builds both from one source"
)]
pub struct RegistryMismatch {
    /// The agent's name.
    pub agent: &'static str,
    /// What differs.
    pub reason: String,
}

/// Checks that `A`'s registry is exactly what its `MANIFEST` states: the manifest rebuilt from
/// the specs the registry runs (each entry's own spec, in `tools()` order, with its handler's
/// tier) has the same bytes as `A::MANIFEST`, `A::MANIFEST_SHA256` is their SHA-256, and
/// `A::CAPABILITIES` is their capability summary merged with the `CAPABILITIES` of each agent
/// it grants ([`Registry::agent_at`]) and of each handoff tool's target
/// ([`Registry::handoff_to`]): a summary that leaves out what a callee reaches is refused, and
/// so is an agent whose callee's own registry is refused (its summary could understate too).
/// The runtime calls this once per agent type before the first run or direct session.
pub fn verify_registry<A: Registry>() -> Result<(), RegistryMismatch> {
    let refuse = |reason: String| Err(RegistryMismatch { agent: A::SPEC.name, reason });
    let tools = A::tools();
    let mut specs: Vec<&'static ToolSpec> = Vec::with_capacity(tools.len());
    for (i, listed) in tools.iter().enumerate() {
        let Some(entry) = A::entry_at(i) else {
            return refuse(format!("no registry entry for the listed tool `{}`", listed.name));
        };
        if entry.spec != *listed {
            return refuse(format!("entry {i} runs `{}` where `tools()` lists `{}`", entry.spec.name, listed.name));
        }
        if entry.tier() != entry.spec.tier {
            return refuse(format!(
                "`{}` is declared {} but its handler is {}",
                entry.spec.name,
                entry.spec.tier,
                entry.tier()
            ));
        }
        specs.push(entry.spec);
    }
    if A::entry_at(tools.len()).is_some() {
        return refuse("the registry has entries beyond the listed tools".to_owned());
    }
    let callees = match callees::<A>(&specs) {
        Ok(c) => c,
        Err(reason) => return refuse(reason),
    };
    if tools.windows(2).any(|w| w[0].name >= w[1].name) {
        return refuse("`tools()` is not sorted by name without duplicates".to_owned());
    }
    let manifest = match agents_core::manifest::Manifest::from_specs_granting(&A::SPEC, A::AGENTS, &specs) {
        Ok(m) => m,
        Err(e) => return refuse(e.to_string()),
    };
    let rebuilt = manifest.to_canonical_string();
    if rebuilt != A::MANIFEST {
        let at = rebuilt
            .bytes()
            .zip(A::MANIFEST.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(rebuilt.len().min(A::MANIFEST.len()));
        let near = |s: &str| s.get(at.saturating_sub(40)..(at + 40).min(s.len())).unwrap_or_default().to_owned();
        return refuse(format!(
            "the manifest the registry produces differs from `MANIFEST` at byte {at}: registry `…{}…`, MANIFEST `…{}…`",
            near(&rebuilt),
            near(A::MANIFEST)
        ));
    }
    if agents_core::canonical::sha256_hex(A::MANIFEST.as_bytes()) != A::MANIFEST_SHA256 {
        return refuse("`MANIFEST_SHA256` is not the SHA-256 of `MANIFEST`".to_owned());
    }
    // What every callee reaches is part of what `A` reaches.
    let expected =
        callees.iter().fold(CapabilityLists::of(&manifest), |lists, c| lists.merge(&CapabilityLists::of_summary(c)));
    if !summarises::<A>(&expected) {
        return refuse(
            "`CAPABILITIES` is not the capability summary of `MANIFEST` merged with its granted agents' and handoff targets'"
                .to_owned(),
        );
    }
    Ok(())
}

/// The summaries of the agents `A`'s registry runs for it, each checked against what `AGENTS`
/// and the specs name and each accepted by its own registry check: each granted agent
/// ([`Registry::agent_at`]) and each handoff tool's target ([`Registry::handoff_to`]).
/// `A::CAPABILITIES` must merge them (see [`verify_registry`]).
fn callees<A: Registry>(specs: &[&'static ToolSpec]) -> Result<Vec<Capabilities>, String> {
    let mut callees = Vec::new();
    for (i, listed) in A::AGENTS.iter().enumerate() {
        match A::agent_at(i) {
            Some(g) if g.name == listed.name && g.sha256 == listed.sha256 => callees.push(g),
            _ => {
                return Err(format!(
                    "the registry does not run the granted agent `{}` that `AGENTS` lists",
                    listed.name
                ));
            }
        }
    }
    for spec in specs {
        let target = A::handoff_to(spec.name);
        if target.as_ref().map(|g| (g.name, g.sha256)) != spec.handoff.map(|t| (t.name, t.sha256)) {
            return Err(format!("the registry does not hand the tool `{}` to the agent its spec names", spec.name));
        }
        callees.extend(target);
    }
    if A::agent_at(A::AGENTS.len()).is_some() {
        return Err("the registry runs agents beyond the granted ones".to_owned());
    }
    // Each callee's summary counts only once its own registry is accepted. Agents that call
    // each other in a circle (only hand-written impls can) are refused, not followed forever.
    let _checking = CheckInProgress::enter::<A>()
        .ok_or_else(|| "it calls, through the agents it grants or hands off to, an agent that calls it".to_owned())?;
    for g in &callees {
        (g.verify)().map_err(|e| format!("the agent `{}` it calls is refused: {e}", g.name))?;
    }
    Ok(callees.into_iter().map(|g| g.capabilities).collect())
}

/// The agent types whose callees this thread is checking: one met again is in a circle.
struct CheckInProgress(std::any::TypeId);

thread_local! {
    static CHECKING: std::cell::RefCell<Vec<std::any::TypeId>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl CheckInProgress {
    /// `None` when `A`'s callees are already being checked further up this thread's stack.
    fn enter<A: 'static>() -> Option<CheckInProgress> {
        let id = std::any::TypeId::of::<A>();
        CHECKING.with(|c| {
            let mut c = c.borrow_mut();
            (!c.contains(&id)).then(|| {
                c.push(id);
                CheckInProgress(id)
            })
        })
    }
}

impl Drop for CheckInProgress {
    fn drop(&mut self) {
        CHECKING.with(|c| c.borrow_mut().retain(|id| *id != self.0));
    }
}

/// Whether `A::CAPABILITIES` (what a composite's graph manifest names for `A`) is `lists`.
fn summarises<A: Registry>(lists: &CapabilityLists) -> bool {
    let c = A::CAPABILITIES;
    lists.actions == c.actions
        && lists.handoffs == c.handoffs
        && lists.permissions == c.permissions
        && lists.tools == c.tools
        && lists.reach() == c.reaches
}

/// [`verify_registry`], remembered per agent type for the life of the process.
pub(crate) fn verified_registry<A: Registry>() -> Result<(), RegistryMismatch> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static VERIFIED: Mutex<Option<HashMap<std::any::TypeId, Result<(), RegistryMismatch>>>> = Mutex::new(None);
    let id = std::any::TypeId::of::<A>();
    if let Some(known) = VERIFIED.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).get(&id) {
        return known.clone();
    }
    let result = verify_registry::<A>();
    if let Err(e) = &result {
        tracing::error!(agent = A::SPEC.name, "{e}");
    }
    VERIFIED.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).insert(id, result.clone());
    result
}

/// Link-time registration of every tool in a binary.
#[derive(Debug)]
pub struct ToolRegistration {
    /// The tool's spec.
    pub spec: &'static ToolSpec,
}

inventory::collect!(ToolRegistration);

/// Every tool linked into this binary, sorted by name.
pub fn linked_tools() -> Vec<&'static ToolSpec> {
    let mut v: Vec<_> = inventory::iter::<ToolRegistration>.into_iter().map(|r| r.spec).collect();
    v.sort_by(|a, b| a.name.cmp(b.name));
    v
}
