//! Capability handles (in-process enforcement, level 2): a tool receives only what its
//! policy declares. A tool parameter of type [`FsAccess`], [`NetAccess`] or [`EnvAccess`] is
//! injected by the runtime, and `#[tool]` refuses to compile one whose policy lacks the
//! matching section. The handles check every path, host and variable against the declared
//! globs, hosts and names. This binds cooperating tool code; for code you do not trust, run
//! the tool in a sandboxed subprocess.

use crate::core::ToolSpec;
use globset::{GlobSet, GlobSetBuilder};
use std::path::{Component, Path, PathBuf};

/// A use of a capability outside the declared policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}` may not {what}: not in its declared policy ({declared})")]
pub struct CapabilityError {
    /// The tool.
    pub tool: &'static str,
    /// What it tried.
    pub what: String,
    /// What the policy declares.
    pub declared: String,
}

fn globset(globs: &[&str]) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        if let Ok(g) = globset::GlobBuilder::new(g).literal_separator(true).build() {
            b.add(g);
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

/// Lexically normalizes an absolute path; refuses relative paths and `..` above the root.
fn normalize(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(p) => out.push(p),
        }
    }
    Some(out)
}

/// Filesystem access confined to the declared globs.
#[derive(Debug, Clone)]
pub struct FsAccess {
    tool: &'static str,
    read: GlobSet,
    write: GlobSet,
    declared_read: &'static [&'static str],
    declared_write: &'static [&'static str],
}

impl FsAccess {
    /// The handle for a tool's declared policy; only the runtime makes one, for the tool it runs.
    pub(crate) fn for_spec(spec: &'static ToolSpec) -> Self {
        FsAccess {
            tool: spec.name,
            read: globset(spec.policy.fs_read),
            write: globset(spec.policy.fs_write),
            declared_read: spec.policy.fs_read,
            declared_write: spec.policy.fs_write,
        }
    }

    fn resolve(&self, path: &Path, set: &GlobSet, verb: &str, declared: &[&str]) -> Result<PathBuf, CapabilityError> {
        let err = || CapabilityError {
            tool: self.tool,
            what: format!("{verb} `{}`", path.display()),
            declared: format!("fs {verb}: {declared:?}"),
        };
        let lexical = normalize(path).ok_or_else(err)?;
        // Resolve symlinks of the existing part so a link cannot lead outside the globs.
        let resolved = match std::fs::canonicalize(&lexical) {
            Ok(p) => p,
            Err(_) => match (lexical.parent().and_then(|p| std::fs::canonicalize(p).ok()), lexical.file_name()) {
                (Some(parent), Some(name)) => parent.join(name),
                _ => lexical.clone(),
            },
        };
        if set.is_match(&lexical) && set.is_match(&resolved) { Ok(resolved) } else { Err(err()) }
    }

    /// Whether the policy lets the tool read `path`.
    pub fn may_read(&self, path: impl AsRef<Path>) -> bool {
        self.resolve(path.as_ref(), &self.read, "read", self.declared_read).is_ok()
    }

    /// Whether the policy lets the tool write `path`.
    pub fn may_write(&self, path: impl AsRef<Path>) -> bool {
        self.resolve(path.as_ref(), &self.write, "write", self.declared_write).is_ok()
    }

    /// Reads a file the policy allows.
    pub fn read(&self, path: impl AsRef<Path>) -> Result<Vec<u8>, FsError> {
        let p = self.resolve(path.as_ref(), &self.read, "read", self.declared_read)?;
        Ok(std::fs::read(p)?)
    }

    /// Writes a file the policy allows.
    pub fn write(&self, path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> Result<(), FsError> {
        let p = self.resolve(path.as_ref(), &self.write, "write", self.declared_write)?;
        Ok(std::fs::write(p, contents)?)
    }
}

/// A filesystem call refused by the policy or failed.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// Outside the policy.
    #[error(transparent)]
    Denied(#[from] CapabilityError),
    /// I/O failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Network access limited to the declared hosts.
#[derive(Debug, Clone)]
pub struct NetAccess {
    tool: &'static str,
    hosts: &'static [&'static str],
}

impl NetAccess {
    /// The handle for a tool's declared policy; only the runtime makes one, for the tool it runs.
    pub(crate) fn for_spec(spec: &'static ToolSpec) -> Self {
        NetAccess { tool: spec.name, hosts: spec.policy.net_hosts }
    }

    /// Whether `host` (and `port`) is declared. A declared `host` without a port allows any
    /// port; `*.example.com` allows subdomains, not `example.com` itself.
    pub fn allows(&self, host: &str, port: Option<u16>) -> bool {
        let host = host.to_ascii_lowercase();
        self.hosts.iter().any(|d| {
            let (dh, dp) = match d.rsplit_once(':') {
                Some((h, p)) if !d.ends_with(']') => (h, p.parse::<u16>().ok()),
                _ => (*d, None),
            };
            let dh = dh.to_ascii_lowercase();
            let host_ok = match dh.strip_prefix("*.") {
                Some(suffix) => host.ends_with(&format!(".{suffix}")),
                None => host == dh,
            };
            host_ok && (dp.is_none() || dp == port)
        })
    }

    /// Checks a URL (`scheme://host[:port]/...`) against the declared hosts.
    pub fn check_url(&self, url: &str) -> Result<(), CapabilityError> {
        let err = || CapabilityError {
            tool: self.tool,
            what: format!("reach `{url}`"),
            declared: format!("net hosts: {:?}", self.hosts),
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(err)?;
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let authority = authority.rsplit_once('@').map(|(_, a)| a).unwrap_or(authority);
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !authority.ends_with(']') => (h, Some(p.parse::<u16>().map_err(|_| err())?)),
            _ => (authority, None),
        };
        let default_port = match scheme {
            "https" => Some(443),
            "http" => Some(80),
            _ => None,
        };
        if self.allows(host, port.or(default_port)) { Ok(()) } else { Err(err()) }
    }
}

/// Environment access limited to the declared variables.
#[derive(Debug, Clone)]
pub struct EnvAccess {
    tool: &'static str,
    vars: &'static [&'static str],
}

impl EnvAccess {
    /// The handle for a tool's declared policy; only the runtime makes one, for the tool it runs.
    pub(crate) fn for_spec(spec: &'static ToolSpec) -> Self {
        EnvAccess { tool: spec.name, vars: spec.policy.env_vars }
    }

    /// The value of a declared variable (`Ok(None)` when unset); an undeclared name is refused.
    pub fn var(&self, name: &str) -> Result<Option<String>, CapabilityError> {
        if self.vars.contains(&name) {
            Ok(std::env::var(name).ok())
        } else {
            Err(CapabilityError {
                tool: self.tool,
                what: format!("read `${name}`"),
                declared: format!("env vars: {:?}", self.vars),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{PolicySpec, Risk, Tier};

    static SPEC: ToolSpec = ToolSpec {
        name: "t",
        title: None,
        description: "d",
        permission: "public",
        tier: Tier::Read,
        risk: Risk::Low,
        policy: PolicySpec {
            fs_read: &["/var/kyc/uploads/*.pdf"],
            fs_write: &[],
            net_hosts: &["api.example.com:443", "*.internal"],
            env_vars: &["APP_REGION"],
        },
        params: &[],
        uses: &[],
    };

    #[test]
    fn fs_globs_do_not_cross_separators_or_escape() {
        let fs = FsAccess::for_spec(&SPEC);
        assert!(fs.may_read("/var/kyc/uploads/a.pdf"));
        assert!(!fs.may_read("/var/kyc/uploads/x/a.pdf"));
        assert!(!fs.may_read("/var/kyc/uploads/../../../etc/passwd"));
        assert!(!fs.may_read("relative/a.pdf"));
        assert!(!fs.may_write("/var/kyc/uploads/a.pdf"));
    }

    #[test]
    fn net_hosts_and_ports() {
        let net = NetAccess::for_spec(&SPEC);
        assert!(net.check_url("https://api.example.com/v1").is_ok());
        assert!(net.check_url("http://api.example.com/v1").is_err());
        assert!(net.check_url("https://evil.com/?h=api.example.com").is_err());
        assert!(net.check_url("https://a.internal:8080/").is_ok());
        assert!(net.check_url("https://internal/").is_err());
        assert!(net.check_url("https://user@evil.com/").is_err());
    }

    #[test]
    fn env_only_declared() {
        let env = EnvAccess::for_spec(&SPEC);
        assert!(env.var("APP_REGION").is_ok());
        assert!(env.var("HOME").is_err());
    }
}
