//! Who a request acts for: an [`Authenticator`] maps a request's headers to a [`Principal`].
//! There is no service principal: a request the authenticator does not map is refused (401).

use crate::error::ApiError;
use agents_runtime::Principal;
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use futures::future::BoxFuture;

/// Maps a request to the principal it acts for, or refuses it.
///
/// Implement it for your own identity provider; [`JwtAuthenticator`](crate::JwtAuthenticator)
/// checks OIDC-style JWTs, and [`DevAuthenticator`] is for local development only.
pub trait Authenticator: Send + Sync + 'static {
    /// The principal of this request, or a refusal (401 with a stable code, e.g.
    /// `missing_token`, `token_expired`).
    fn authenticate<'a>(&'a self, request: &'a Parts) -> BoxFuture<'a, Result<Principal, ApiError>>;

    /// Who `held` (a principal this authenticator named) is now, read from the user store
    /// or role table behind it: `Ok(Some)` with their current role, `Ok(None)` when they were
    /// deactivated, `Err` when it cannot say. A runtime given
    /// [`AuthenticatorSource`](crate::AuthenticatorSource) asks it before each tool call, each
    /// decision and each resumption of a run this authenticator's principal started (see
    /// [`agents_runtime::authority`]).
    ///
    /// The default answers `Err`: an authenticator that reads only the request's token
    /// ([`JwtAuthenticator`](crate::JwtAuthenticator), [`DevAuthenticator`]) cannot read a
    /// principal again, so a runtime that asks it refuses every call, saying so. Implement it
    /// where your authenticator has a user store.
    fn current<'a>(&'a self, held: &'a Principal) -> BoxFuture<'a, Result<Option<Principal>, String>> {
        let _ = held;
        Box::pin(async {
            Err("this authenticator cannot read a principal again: implement `Authenticator::current` against \
                 your user store, or do not give the runtime `AuthenticatorSource`"
                .to_owned())
        })
    }
}

/// A 401 refusal with this code and message.
pub fn unauthorized(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, code, message)
}

/// The token of an `Authorization: Bearer <token>` header. The scheme is matched without
/// regard to case (RFC 7235); a missing header, another scheme, an empty token or more than
/// one `Authorization` header is refused.
pub fn bearer_token(request: &Parts) -> Result<&str, ApiError> {
    let mut values = request.headers.get_all(header::AUTHORIZATION).iter();
    let value = values.next().ok_or_else(|| {
        unauthorized("missing_token", "send `Authorization: Bearer <token>` with a token from your identity provider")
    })?;
    if values.next().is_some() {
        return Err(unauthorized("invalid_token", "send exactly one Authorization header"));
    }
    let text = value.to_str().map_err(|_| unauthorized("invalid_token", "the Authorization header is not ASCII"))?;
    let (scheme, token) = text.split_once(' ').unwrap_or((text, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(unauthorized("missing_token", "use the Bearer scheme: `Authorization: Bearer <token>`"));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(unauthorized("missing_token", "the bearer token is empty"));
    }
    Ok(token)
}

/// **For development only.** Takes the principal from the request's `X-Dev-Principal` header,
/// `user/organisation/role` (e.g. `alice/acme/employee`), with no proof of anything: whoever
/// can reach the service can act as anyone. It refuses every request (401
/// `dev_login_disabled`) unless it was made with [`DevAuthenticator::enabled`], and it logs a
/// warning when it is. Never use it in a deployment; use
/// [`JwtAuthenticator`](crate::JwtAuthenticator) or your own [`Authenticator`].
#[derive(Debug, Clone)]
pub struct DevAuthenticator {
    enabled: bool,
}

/// The header [`DevAuthenticator`] reads.
pub const DEV_PRINCIPAL_HEADER: &str = "x-dev-principal";

impl DevAuthenticator {
    /// A development login that refuses every request: the safe default when a flag was not
    /// given.
    pub fn disabled() -> Self {
        DevAuthenticator { enabled: false }
    }

    /// A development login that believes the `X-Dev-Principal` header. Logs a warning.
    pub fn enabled() -> Self {
        tracing::warn!(
            "the development login is enabled: any client can act as any user; never expose this service beyond your machine"
        );
        DevAuthenticator { enabled: true }
    }
}

impl Authenticator for DevAuthenticator {
    fn authenticate<'a>(&'a self, request: &'a Parts) -> BoxFuture<'a, Result<Principal, ApiError>> {
        Box::pin(async move {
            if !self.enabled {
                return Err(unauthorized(
                    "dev_login_disabled",
                    "the development login is disabled; configure a real authenticator, or enable the development login explicitly for local use",
                ));
            }
            let value = request.headers.get(DEV_PRINCIPAL_HEADER).ok_or_else(|| {
                unauthorized("missing_token", "send `X-Dev-Principal: user/organisation/role` (development login)")
            })?;
            let text = value.to_str().map_err(|_| unauthorized("invalid_token", "X-Dev-Principal is not ASCII"))?;
            let mut parts = text.split('/');
            let (Some(user), Some(org), Some(role), None) = (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(unauthorized("invalid_token", "X-Dev-Principal must be `user/organisation/role`"));
            };
            Principal::try_new(user, org, role).map_err(|e| unauthorized("invalid_principal", e.to_string()))
        })
    }
}
