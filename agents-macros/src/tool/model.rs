//! What [`super::check`] returns and [`super::codegen`] reads: the tool as decided, with every
//! rule applied. Nothing here is re-checked by codegen, and nothing codegen needs is left to
//! be recomputed from the tokens.

use super::parse::{Policy, ToolFn};
use crate::util::permission_name;
use agents_core::manifest::{EnvPolicyEntry, FsPolicyEntry, NetPolicyEntry, ParamEntry, PolicyEntry, ToolEntry};
use agents_core::{Risk, Tier};
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Ident, LitStr, Type};

/// A tool as the checks leave it.
pub(crate) struct Tool<'f> {
    /// The function as written.
    pub(crate) func: &'f ToolFn,
    /// The name the model calls it by.
    pub(crate) name: String,
    /// The function's name without `r#`.
    pub(crate) plain_name: String,
    /// The doc comment without its `# Arguments` section (empty only after an error).
    pub(crate) description: String,
    pub(crate) title: Option<String>,
    pub(crate) permission: Permission,
    pub(crate) tier: Tier,
    pub(crate) risk: Risk,
    pub(crate) policy: Policy,
    pub(crate) isolated: bool,
    pub(crate) egress: bool,
    /// Every parameter, in order, with its kind.
    pub(crate) params: Vec<Param>,
    /// The JSON arguments, in order: the fields of the arguments type.
    pub(crate) args: Vec<ArgField>,
    /// The agent type parameter of a tool that invokes other tools.
    pub(crate) agent: Option<&'f syn::TypeParam>,
    /// The tools it invokes, from its `Grants<...>` bounds: the names as written (for the
    /// manifest; `agent!` maps them to tool names) and the types (for the spec).
    pub(crate) uses: Vec<String>,
    pub(crate) use_types: Vec<syn::TypePath>,
    /// `handoff = Target`: the agent a call hands the run to (see [`super::handoff`]).
    pub(crate) handoff: Option<syn::Path>,
    /// What the expansion keeps of the function after an error was reported.
    pub(crate) emit: Emit,
}

/// The tool's permission: `public`, or a declared one by its path and its `area.action` name.
pub(crate) enum Permission {
    Public,
    Declared { path: syn::Path, name: String },
}

impl Permission {
    /// `public`, or the path of a declared permission; `None` for a path that cannot name one.
    pub(crate) fn of(path: &syn::Path) -> Option<Permission> {
        if path.is_ident("public") {
            return Some(Permission::Public);
        }
        permission_name(path).map(|name| Permission::Declared { path: path.clone(), name })
    }

    /// The name the manifest gives it.
    pub(crate) fn name(&self) -> &str {
        match self {
            Permission::Public => "public",
            Permission::Declared { name, .. } => name,
        }
    }
}

/// What a parameter is given. The macro tells only whether the model gives it (a JSON
/// argument) or the runtime does; what the runtime gives is decided by the compiler, through
/// `agents_runtime::tool::Supplied` on the parameter's type (see [`ParamKind::of`]).
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum ParamKind {
    /// The call's context, `&ToolContext<'_>` under any name.
    Context,
    /// A capability handle for the tool's declared policy.
    Capability(Capability),
    /// A JSON argument the model sends.
    Arg,
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Capability {
    Fs,
    Net,
    Env,
}

impl Capability {
    /// The handle's type name, what it reaches, and the policy that declares it.
    pub(crate) fn describe(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Capability::Fs => ("FsAccess", "filesystem", "policy(fs(read = [\"/var/app/uploads/**\"]))"),
            Capability::Net => ("NetAccess", "network", "policy(net(hosts = [\"api.example.com:443\"]))"),
            Capability::Env => ("EnvAccess", "environment", "policy(env(vars = [\"APP_REGION\"]))"),
        }
    }
}

impl ParamKind {
    /// The kind of a parameter's type. The context is told by its shape: a borrow of a type
    /// whose first argument is a lifetime, `&Name<'_, ...>`, which no JSON argument can be (an
    /// argument is owned, `&T` or `Option<&T>` with `T` owned), so an alias or a renamed
    /// import of `ToolContext` is the context too; the compiler then checks that the type is
    /// one the runtime supplies. A capability handle is told by its name (`FsAccess`,
    /// `NetAccess`, `EnvAccess`): under another name it is read as a JSON argument, which the
    /// compiler refuses (a handle is not `Deserialize`), so no alias can turn the context or a
    /// handle into a value the model sends.
    pub(crate) fn of(ty: &Type) -> ParamKind {
        let elem = match ty {
            Type::Reference(r) => &*r.elem,
            other => other,
        };
        let Type::Path(p) = elem else { return ParamKind::Arg };
        let Some(last) = p.path.segments.last() else { return ParamKind::Arg };
        match last.ident.to_string().as_str() {
            "ToolContext" => ParamKind::Context,
            "FsAccess" => ParamKind::Capability(Capability::Fs),
            "NetAccess" => ParamKind::Capability(Capability::Net),
            "EnvAccess" => ParamKind::Capability(Capability::Env),
            _ if matches!(ty, Type::Reference(_)) && context_shaped(last) => ParamKind::Context,
            _ => ParamKind::Arg,
        }
    }
}

/// `Name<'a, ...>`: a type whose first argument is a lifetime. `Cow`, the one such type a
/// JSON argument could be written as, is left to the refusal of borrowed arguments.
fn context_shaped(last: &syn::PathSegment) -> bool {
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return false };
    matches!(a.args.first(), Some(syn::GenericArgument::Lifetime(_))) && last.ident != "Cow"
}

/// One parameter of the function.
pub(crate) struct Param {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) kind: ParamKind,
}

/// A JSON argument: a field of the arguments type, a property of the schema, a parameter of
/// the manifest entry.
pub(crate) struct ArgField {
    pub(crate) ident: Ident,
    /// The type as written.
    pub(crate) ty: Type,
    /// The field's type: a borrowed parameter's owned form (`&str` becomes `String`).
    pub(crate) owned: TokenStream,
    /// The name the model, the schema and the manifest spell it by: without `r#`.
    pub(crate) key: String,
    /// From the doc comment's `# Arguments` section; empty when it has none.
    pub(crate) description: String,
    /// The type as text, for the manifest and the spec.
    pub(crate) rust_type: String,
    /// Marked `#[secret]`: its value is masked in `Debug`.
    pub(crate) marked_secret: bool,
    /// Secret however declared (`#[secret]`, or a type that names `Secret`): for the spec,
    /// the manifest and the schema.
    pub(crate) secret: bool,
}

/// What the expansion keeps of the function after a reported error, so that the compiler
/// adds no second error about the same mistake.
#[derive(Clone, Copy, Default)]
pub(crate) struct Emit {
    pub(crate) body: Body,
    pub(crate) handler: Handler,
}

/// The function's body in the expansion.
#[derive(Clone, Copy, Default, PartialEq)]
pub(crate) enum Body {
    /// As written.
    #[default]
    AsWritten,
    /// Replaced by `unimplemented!()`: it would repeat a reported error less clearly.
    Unimplemented,
}

/// The handler that the registry calls.
#[derive(Clone, Copy, Default, PartialEq)]
pub(crate) enum Handler {
    /// Calls the function.
    #[default]
    Calls,
    /// Fails the call: the function cannot be called as written (a context of the wrong
    /// type, no result). The function is kept, not called.
    Stub,
}

impl Tool<'_> {
    /// The tool's manifest entry: what `agent!` reads through the chain and the reviewer reads.
    pub(crate) fn entry(&self) -> ToolEntry {
        let values = |list: &[LitStr]| list.iter().map(LitStr::value).collect::<Vec<_>>();
        ToolEntry {
            name: self.name.clone(),
            title: self.title.clone(),
            description: self.description.clone(),
            permission: self.permission.name().to_owned(),
            tier: self.tier,
            mutating: self.tier == Tier::Action,
            risk: self.risk,
            policy: PolicyEntry {
                fs: FsPolicyEntry { read: values(&self.policy.fs_read), write: values(&self.policy.fs_write) },
                net: NetPolicyEntry { hosts: values(&self.policy.net_hosts) },
                env: EnvPolicyEntry { vars: values(&self.policy.env_vars) },
                isolated: self.isolated,
                egress: self.egress,
            },
            parameters: self
                .args
                .iter()
                .map(|a| ParamEntry { name: a.key.clone(), rust_type: a.rust_type.clone(), secret: a.secret })
                .collect(),
            uses: self.uses.clone(),
            import: None,
            // The target as written, without its hash: `agent!` writes its name and hash in
            // its place (and tells an agent handing off to itself by this name).
            handoff: self.handoff.as_ref().map(|t| agents_core::subagent::SubAgentEntry {
                name: t.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
                sha256: String::new(),
            }),
        }
        .normalized()
    }

    /// The permission's type, as `Tool::Permission` names it.
    pub(crate) fn permission_type(&self, rt: &TokenStream) -> TokenStream {
        match &self.permission {
            Permission::Declared { path, .. } => quote!(#path),
            Permission::Public => quote!(#rt::Public),
        }
    }
}
