//! The process's isolation ([`init`], [`settings`], [`prewarm`]), a runtime's own
//! ([`Isolation`]), and carrying out one isolated call ([`call_isolated`]).

use crate::parent::{Pools, refused};
use crate::protocol::Call;
use crate::settings::{Settings, WORKER_ENV};
use crate::tools::{IsolatedTool, Named, named};
use agents_core::{Tool, ToolSpec};
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// What [`init`] recorded in the application process.
static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// The warm workers of runtimes that use the settings of [`init`].
fn default_pools() -> Option<&'static Pools> {
    static POOLS: OnceLock<Pools> = OnceLock::new();
    let settings = SETTINGS.get()?;
    Some(POOLS.get_or_init(|| Pools::new(settings.clone())))
}

/// [`init_with`] the default [`Settings`].
pub fn init() {
    init_with(Settings::default());
}

/// Call first thing in `main`, before any thread or async runtime starts.
///
/// - In a worker process (started by the runtime, with [`WORKER_ENV`] set): confines the
///   process, runs the one call it is sent, writes the result and exits. **Never returns.**
/// - Otherwise: records `settings` (the first call wins) and that workers are available, and
///   returns. Isolated tools are refused in a process that did not call it.
pub fn init_with(settings: Settings) {
    if std::env::var_os(WORKER_ENV).is_some() {
        crate::worker::serve();
    }
    let _ = SETTINGS.set(settings);
}

/// The settings [`init`] recorded, or `None` when this process did not call it.
pub fn settings() -> Option<&'static Settings> {
    SETTINGS.get()
}

/// Starts the warm workers of `T` now (they are otherwise started at its first call), so the
/// first call does not wait for one. Does nothing without [`init`] or warm workers.
pub fn prewarm<T: Tool>() {
    if let Some(pools) = default_pools() {
        pools.prewarm(&T::SPEC);
    }
}

/// Carries out an isolated call of the tool `spec` with the runtime's own [`Isolation`], or the
/// process's settings when it has none: its result (the tool's value, or the text of its
/// error) and the audit notice's reason (`isolated: ...`).
pub async fn call_isolated(
    isolation: Option<&Isolation>,
    spec: &'static ToolSpec,
    call: Call,
    runtime_deadline: Duration,
) -> (Result<Value, String>, String) {
    let pools = match isolation {
        Some(i) if SETTINGS.get().is_some() => Some(&*i.pools),
        Some(_) => None,
        None => default_pools(),
    };
    let Some(pools) = pools else {
        let why = "this process did not call `agents_runtime::isolate::init()` at the top of `main`, so no worker can be started";
        return refused(spec.name, why);
    };
    let (result, mut ended) = crate::parent::call(pools, spec, call, runtime_deadline).await;
    if !spec.policy.isolated {
        ended.push_str(
            "; isolated by the runtime's setting (the tool is not marked `isolated`, so its manifest does not show it)",
        );
    }
    (result, ended)
}

/// A runtime's own isolation (`agents_runtime::RuntimeBuilder::isolation`):
/// its [`Settings`], its own warm workers (two runtimes never share a worker), and the tools
/// it isolates although their code does not mark them `isolated`.
///
/// Isolation can only be **added** at run time: a tool marked `isolated` in code is isolated
/// by every runtime, and nothing here can take that away. A tool isolated by this setting
/// alone is not shown as isolated by its manifest (whose hash is fixed by the code), so every
/// such call's audit notice says that the runtime's setting isolated it.
///
/// ```no_run
/// use agents_sandbox::{Isolation, Settings};
///
/// // In `main`, after `agents_sandbox::init()`:
/// let mut isolation = Isolation::new(Settings::default().warm_workers(2));
/// isolation.isolate_tool("convert_document").expect("an isolable tool");
/// // Runtime::builder(audit, provider).isolation(isolation).build()
/// ```
#[derive(Clone)]
pub struct Isolation {
    pools: Arc<Pools>,
    added: Vec<&'static str>,
}

impl std::fmt::Debug for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Isolation").field("settings", self.pools.settings()).field("added", &self.added).finish()
    }
}

/// Why [`Isolation::isolate_tool`] refused a tool (nothing was changed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IsolationError {
    /// No tool of that name can run in a worker of this executable.
    #[error(
        "no tool `{0}` in this executable can be isolated: check the name; a handoff tool, or one that takes the agent parameter to call other tools, cannot run in a worker process"
    )]
    Unknown(String),
    /// Two linked tools have that name: a worker could not tell which to run.
    #[error("two tools in this executable are named `{0}`: rename one before isolating it")]
    Ambiguous(String),
    /// A glob of the tool's policy has no literal directory root for the kernel's rules.
    #[error(
        "tool `{tool}`: the glob `{glob}` has no literal directory root, so the kernel cannot confine it; begin the glob with an absolute directory"
    )]
    NoLiteralRoot {
        /// The tool.
        tool: String,
        /// The glob.
        glob: String,
    },
    /// A host of the tool's policy has no port for the kernel's per-port rules.
    #[error(
        "tool `{tool}`: the host `{host}` has no port, and the kernel's network rules are per TCP port; declare one, e.g. `{host}:443`"
    )]
    NoPort {
        /// The tool.
        tool: String,
        /// The host.
        host: String,
    },
}

impl Isolation {
    /// A runtime's isolation with `settings` and its own pools of warm workers. The process
    /// must still call [`init`] first thing in `main` (that is what lets it serve as a worker).
    pub fn new(settings: Settings) -> Self {
        Isolation { pools: Arc::new(Pools::new(settings)), added: Vec::new() }
    }

    /// Also isolates the tool `name`, which its code does not mark `isolated`. Refused when
    /// no single tool of that name can run in a worker, or when its policy cannot be expressed
    /// as the kernel's rules (the same checks `#[tool(isolated)]` makes at compile time); a
    /// refusal changes nothing. A runtime built earlier keeps what it was given.
    pub fn isolate_tool(&mut self, name: &str) -> Result<&mut Self, IsolationError> {
        let tool = unique(name)?;
        let policy = &tool.spec.policy;
        for glob in policy.fs_read.iter().chain(policy.fs_write) {
            if agents_core::policy::glob_literal_root(glob).is_none() {
                return Err(IsolationError::NoLiteralRoot { tool: name.to_owned(), glob: (*glob).to_owned() });
            }
        }
        for host in policy.net_hosts {
            if host.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).is_none() {
                return Err(IsolationError::NoPort { tool: name.to_owned(), host: (*host).to_owned() });
            }
        }
        if !policy.isolated && !self.added.contains(&tool.spec.name) {
            self.added.push(tool.spec.name);
        }
        Ok(self)
    }

    /// Whether this runtime isolates the tool of `spec` (marked in code, or added here).
    pub fn isolates(&self, spec: &ToolSpec) -> bool {
        spec.policy.isolated || self.adds(spec.name)
    }

    /// Whether `tool` is isolated by this setting although its code does not mark it.
    pub fn adds(&self, tool: &str) -> bool {
        self.added.contains(&tool)
    }

    /// Starts the warm workers of `T` now (they are otherwise started after its first call).
    pub fn prewarm<T: Tool>(&self) {
        if SETTINGS.get().is_some() && self.isolates(&T::SPEC) {
            self.pools.prewarm(&T::SPEC);
        }
    }

    /// How many started and confined workers of `tool` wait for a call.
    pub fn warm(&self, tool: &str) -> usize {
        self.pools.warm(tool)
    }
}

/// The one tool named `name` that can run in a worker of this executable.
fn unique(name: &str) -> Result<&'static IsolatedTool, IsolationError> {
    match named(name) {
        Named::One(tool) => Ok(tool),
        Named::Several => Err(IsolationError::Ambiguous(name.to_owned())),
        Named::None => Err(IsolationError::Unknown(name.to_owned())),
    }
}
