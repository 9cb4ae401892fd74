//! The service's authenticator as the runtime's principal source: a run started through the
//! service re-checks its user against the authenticator's user store before each tool call,
//! each decision and each resumption (see [`agents_runtime::authority`]).

use crate::auth::Authenticator;
use agents_runtime::authority::PrincipalSource;
use agents_runtime::{BoxFuture, Principal};
use std::sync::Arc;

/// An [`Authenticator`] read again through [`Authenticator::current`]: give it to the
/// runtimes the service serves, so a user deactivated or a role changed mid-run stops the run's
/// next call (`denied`, reason `authority changed: ...`) and ends its waiting proposals,
/// instead of the run holding the principal it started with.
///
/// ```no_run
/// use agents_runtime::Runtime;
/// use agents_runtime::audit::MemorySink;
/// use agents_runtime::provider::ScriptedProvider;
/// use agents_service::{Authenticator, AuthenticatorSource, Service};
/// use std::sync::Arc;
///
/// # fn f(auth: Arc<dyn Authenticator>) {
/// let audit = Arc::new(MemorySink::new());
/// let runtime = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new([])))
///     .reread_principal(Arc::new(AuthenticatorSource::new(auth.clone())))
///     .build();
/// let service = Service::builder(auth, audit.clone(), audit);
/// # let _ = (runtime, service);
/// # }
/// ```
#[derive(Clone)]
pub struct AuthenticatorSource {
    auth: Arc<dyn Authenticator>,
}

impl AuthenticatorSource {
    /// Reads principals again through `auth` (the service's own authenticator).
    pub fn new(auth: Arc<dyn Authenticator>) -> Self {
        AuthenticatorSource { auth }
    }
}

impl std::fmt::Debug for AuthenticatorSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthenticatorSource").finish_non_exhaustive()
    }
}

impl PrincipalSource for AuthenticatorSource {
    fn current<'a>(&'a self, held: &'a Principal) -> BoxFuture<'a, Result<Option<Principal>, String>> {
        self.auth.current(held)
    }
}
