//! Capability handles (in-process enforcement, level 2): a tool receives only what its
//! policy declares. A tool parameter of type [`FsAccess`], [`NetAccess`] or [`EnvAccess`] is
//! injected by the runtime, and `#[tool]` refuses to compile one whose policy lacks the
//! matching section. The handles check every path, host and variable against the declared
//! globs, hosts and names. This binds cooperating tool code; for code you do not trust, run
//! the tool in a sandboxed subprocess.

use agents_core::ToolSpec;
use agents_core::policy::{GlobSet, lexical_path};
use std::path::{Path, PathBuf};

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

/// The matcher of one declared glob list: `agents_core::policy` defines the dialect once, for
/// this matcher, the macros' validation and the manifest diff.
fn globset(globs: &[&str]) -> GlobSet {
    GlobSet::new(globs)
}

/// The directory a glob's matches all lie beneath: its leading components without a glob
/// character (`/var/kyc/uploads` for `/var/kyc/uploads/*.pdf`; the parent of a literal path).
/// A glob that starts with a pattern (`**/reports/*.pdf`) matches absolute paths anywhere, so
/// its directory is `/`: the handle then confines nothing beyond what the glob itself says,
/// and the manifest shows such a glob as it is.
fn glob_root(glob: &str) -> PathBuf {
    let mut root = PathBuf::new();
    let mut components = Path::new(glob).components().peekable();
    while let Some(c) = components.next() {
        let literal = !c.as_os_str().to_string_lossy().contains(['*', '?', '[', ']', '{', '}', '\\']);
        // The last component is a file name pattern even when it is literal.
        if !literal || components.peek().is_none() {
            break;
        }
        root.push(c.as_os_str());
    }
    if root.as_os_str().is_empty() { PathBuf::from("/") } else { root }
}

/// Filesystem access confined to the declared globs.
///
/// A path is checked lexically against the globs (after `.` and `..` are resolved as text),
/// then opened beneath a handle of the directory its glob starts in (the glob's literal
/// leading directories), with `cap-std`: every component, symlinks included, is resolved
/// beneath that directory (by `openat2` with `RESOLVE_BENEATH` where the kernel has it), so
/// neither a symlink nor a rename between the check and the open reaches a file outside it.
/// A symlink that stays beneath the directory is followed.
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

    /// The directory to open beneath and the path relative to it, when the policy allows `path`.
    fn resolve(
        &self,
        path: &Path,
        set: &GlobSet,
        verb: &str,
        declared: &[&str],
    ) -> Result<(PathBuf, PathBuf), CapabilityError> {
        let err = || CapabilityError {
            tool: self.tool,
            what: format!("{verb} `{}`", path.display()),
            declared: format!("fs {verb}: {declared:?}"),
        };
        let lexical = lexical_path(path).ok_or_else(err)?;
        if !set.is_match(&lexical) {
            return Err(err());
        }
        // The deepest declared root the path lies beneath: the narrowest confinement.
        let root = declared
            .iter()
            .map(|g| glob_root(g))
            .filter(|r| r.has_root() && lexical.starts_with(r) && lexical != *r)
            .max_by_key(|r| r.components().count())
            .ok_or_else(err)?;
        let relative = lexical.strip_prefix(&root).map_err(|_| err())?.to_path_buf();
        Ok((root, relative))
    }

    fn open_root(root: &Path) -> std::io::Result<cap_std::fs::Dir> {
        cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority())
    }

    /// Whether the policy lets the tool read `path` (by its text; the open itself may still
    /// refuse a symlink that leads outside).
    pub fn may_read(&self, path: impl AsRef<Path>) -> bool {
        self.resolve(path.as_ref(), &self.read, "read", self.declared_read).is_ok()
    }

    /// Whether the policy lets the tool write `path` (by its text).
    pub fn may_write(&self, path: impl AsRef<Path>) -> bool {
        self.resolve(path.as_ref(), &self.write, "write", self.declared_write).is_ok()
    }

    /// Reads a file the policy allows, opened beneath its declared directory.
    pub fn read(&self, path: impl AsRef<Path>) -> Result<Vec<u8>, FsError> {
        let (root, relative) = self.resolve(path.as_ref(), &self.read, "read", self.declared_read)?;
        Ok(Self::open_root(&root)?.read(relative)?)
    }

    /// Writes a file the policy allows, created or truncated beneath its declared directory.
    pub fn write(&self, path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> Result<(), FsError> {
        let (root, relative) = self.resolve(path.as_ref(), &self.write, "write", self.declared_write)?;
        Ok(Self::open_root(&root)?.write(relative, contents)?)
    }
}

/// A filesystem call refused by the policy or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// Outside the policy.
    #[error(transparent)]
    Denied(#[from] CapabilityError),
    /// I/O failed, or a symlink led outside the declared directory.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Network access limited to the declared hosts.
///
/// URLs are read by the `url` crate, the parser of the HTTP client (`reqwest`), and the host,
/// port and scheme it resolves are what is checked: the check and the fetch read one URL the
/// same way. [`NetAccess::client`] gives a client that checks every request and every
/// redirect it follows.
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
    /// port; `*.example.com` allows subdomains, not `example.com` itself. `host` is read as a
    /// URL's host is (IDNA, case, one trailing dot, IP address forms).
    pub fn allows(&self, host: &str, port: Option<u16>) -> bool {
        match url::Host::parse(host) {
            Ok(h) => self.allows_host(&h, port),
            Err(_) => false,
        }
    }

    /// The one reading of a declared host ([`agents_core::policy`], shared with the manifest
    /// diff), applied to the host as the `url` crate resolved it; one trailing dot of a name
    /// is dropped, as DNS reads it.
    fn allows_host(&self, host: &url::Host<String>, port: Option<u16>) -> bool {
        let text = host.to_string();
        let text = match host {
            url::Host::Domain(_) => text.strip_suffix('.').unwrap_or(&text),
            _ => &text,
        };
        agents_core::policy::host_allowed(self.hosts, text, port)
    }

    /// Whether a parsed URL may be reached: `http` or `https`, no user name or password, and
    /// a host and port (the scheme's default when none is written) among the declared hosts.
    pub fn allows_url(&self, url: &url::Url) -> bool {
        matches!(url.scheme(), "http" | "https")
            && url.username().is_empty()
            && url.password().is_none()
            && match url.host() {
                Some(host) => self.allows_host(&host.to_owned(), url.port_or_known_default()),
                None => false,
            }
    }

    /// Parses a URL as the HTTP client does and checks it; the parsed URL is what to fetch.
    pub fn check_url(&self, url: &str) -> Result<url::Url, CapabilityError> {
        let err = || CapabilityError {
            tool: self.tool,
            what: format!("reach `{url}`"),
            declared: format!("net hosts: {:?}", self.hosts),
        };
        match url::Url::parse(url) {
            Ok(parsed) if self.allows_url(&parsed) => Ok(parsed),
            _ => Err(err()),
        }
    }

    /// An HTTP client that reaches only the declared hosts: each request's URL is checked
    /// before it is sent, each redirect before it is followed, and no proxy from the
    /// environment is used (a proxy would be the host actually connected to).
    #[cfg(feature = "http")]
    pub fn client(&self) -> Result<NetClient, CapabilityError> {
        let access = self.clone();
        let redirects = self.clone();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 10 {
                attempt.error("too many redirects")
            } else if redirects.allows_url(attempt.url()) {
                attempt.follow()
            } else {
                let refused = format!(
                    "tool `{}` may not follow a redirect to `{}`: not in its declared net hosts {:?}",
                    redirects.tool,
                    attempt.url(),
                    redirects.hosts
                );
                attempt.error(refused)
            }
        });
        let refused = |what: String| CapabilityError { tool: self.tool, what, declared: String::new() };
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
            .map_err(|e| refused(format!("load the system's TLS certificate verifier ({e})")))?;
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| refused(format!("configure TLS ({e})")))?
            .dangerous()
            .with_custom_certificate_verifier(std::sync::Arc::new(verifier))
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .redirect(policy)
            .no_proxy()
            .build()
            .map_err(|e| refused(format!("build an HTTP client ({e})")))?;
        Ok(NetClient { access, client })
    }
}

/// An HTTP client confined to a tool's declared hosts (see [`NetAccess::client`]).
#[cfg(feature = "http")]
#[derive(Debug, Clone)]
pub struct NetClient {
    access: NetAccess,
    client: reqwest::Client,
}

#[cfg(feature = "http")]
impl NetClient {
    /// A request to a declared host; refused before anything is sent otherwise.
    pub fn request(&self, method: reqwest::Method, url: &str) -> Result<reqwest::RequestBuilder, CapabilityError> {
        let url = self.access.check_url(url)?;
        Ok(self.client.request(method, url))
    }

    /// `GET` a declared host.
    pub fn get(&self, url: &str) -> Result<reqwest::RequestBuilder, CapabilityError> {
        self.request(reqwest::Method::GET, url)
    }

    /// Sends a built request after checking its URL again (a builder may have changed it).
    pub async fn execute(&self, request: reqwest::Request) -> Result<reqwest::Response, NetError> {
        if !self.access.allows_url(request.url()) {
            return Err(NetError::Denied(CapabilityError {
                tool: self.access.tool,
                what: format!("reach `{}`", request.url()),
                declared: format!("net hosts: {:?}", self.access.hosts),
            }));
        }
        Ok(self.client.execute(request).await?)
    }
}

/// A network call refused by the policy or failed.
#[cfg(feature = "http")]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// Outside the policy.
    #[error(transparent)]
    Denied(#[from] CapabilityError),
    /// The request failed (a refused redirect is reported here, naming the tool and the URL).
    #[error(transparent)]
    Http(#[from] reqwest::Error),
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
        if agents_core::policy::env_var_granted(self.vars, name) {
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
    use agents_core::{PolicySpec, Risk, Tier};

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
            isolated: false,
            egress: false,
        },
        params: &[],
        uses: &[],
        import: None,
        handoff: None,
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
        assert!(net.check_url(r"https://evil.example\@api.example.com/v1").is_err());
    }

    #[test]
    fn env_only_declared() {
        let env = EnvAccess::for_spec(&SPEC);
        assert!(env.var("APP_REGION").is_ok());
        assert!(env.var("HOME").is_err());
    }
}

#[cfg(test)]
#[path = "policy_diff_tests.rs"]
mod policy_diff_tests;

#[cfg(test)]
#[path = "capability_tests.rs"]
mod properties;
