//! Who a run acts for, read again while it runs.
//!
//! By default a run holds a snapshot: the [`Principal`] it started with (user, organisation,
//! role, linked subject) is its authority until it ends, and a role an administrator revokes
//! mid-run changes nothing before the next run. An application that must not trust a
//! snapshot gives the runtime a [`PrincipalSource`]
//! ([`RuntimeBuilder::reread_principal`](crate::RuntimeBuilder::reread_principal)); the
//! runtime then asks it again:
//!
//! - before each call the gate admits (right after the lookup, before anything is parsed);
//! - before a person's decision is recorded ([`Runtime::decide_async`](crate::Runtime::decide_async));
//! - before an approved action runs, on every channel and in a resumption
//!   ([`Runtime::resume_orphaned`](crate::Runtime::resume_orphaned)).
//!
//! The run's authority holds only while the source still names the same person as the run
//! started with, unchanged: the same user and organisation, role and linked subject. When the
//! source says the user is gone, names another role or subject, or cannot answer (fail
//! closed), the call is refused (`denied`, reason `authority changed: ...`), a decision is
//! refused ([`DecisionError::AuthorityChanged`](crate::run::DecisionError::AuthorityChanged))
//! and an approved action does not run (its final record `failed`, with the reason); the
//! user's proposals still waiting under the old role end (`skipped`, with the reason). A role
//! that grew is no exception: what a run offers was fixed when it started, so a new run is
//! the way to act with the new authority.

use crate::BoxFuture;
use agents_core::Principal;

/// The start of every reason a changed authority gives (a record's `reason`, an error's text).
pub const AUTHORITY_CHANGED: &str = "authority changed";

/// Where the runtime reads again who a run acts for: the application's user directory, role
/// table or identity provider.
///
/// ```
/// use agents_runtime::authority::PrincipalSource;
/// use agents_runtime::{BoxFuture, Principal};
/// use std::collections::HashMap;
/// use std::sync::Mutex;
///
/// /// Roles by user id; a user missing from the map was deactivated.
/// struct Directory(Mutex<HashMap<String, String>>);
///
/// impl PrincipalSource for Directory {
///     fn current<'a>(&'a self, held: &'a Principal) -> BoxFuture<'a, Result<Option<Principal>, String>> {
///         let role = self.0.lock().map_err(|e| e.to_string()).map(|m| m.get(&held.user_id).cloned());
///         Box::pin(async move {
///             Ok(role?.map(|role| Principal { role, ..held.clone() }))
///         })
///     }
/// }
/// ```
pub trait PrincipalSource: Send + Sync {
    /// The person `held` names (by its user and organisation id), as they are now: `Ok(Some)`
    /// with their current role and linked subject; `Ok(None)` when they are deactivated or
    /// unknown; `Err` with a text when the source cannot answer (the runtime then refuses, as
    /// for a changed authority).
    fn current<'a>(&'a self, held: &'a Principal) -> BoxFuture<'a, Result<Option<Principal>, String>>;
}

/// Why `held` no longer holds according to `source`, or `None` when it still does: the text
/// starts with [`AUTHORITY_CHANGED`] and says what to do.
pub(crate) async fn changed(source: &dyn PrincipalSource, held: &Principal) -> Option<String> {
    let now = match source.current(held).await {
        Ok(Some(now)) if now == *held => return None,
        Ok(Some(now)) => now,
        Ok(None) => {
            return Some(format!("{AUTHORITY_CHANGED}: user `{}` is no longer active", held.user_id));
        }
        Err(e) => {
            return Some(format!(
                "{AUTHORITY_CHANGED}: who the run acts for could not be read again ({e}); refused until it can be"
            ));
        }
    };
    let what = if now.user_id != held.user_id || now.org_id != held.org_id {
        "the principal source answered for another user".to_owned()
    } else if now.role != held.role {
        format!("role `{}` is now `{}`", held.role, now.role)
    } else {
        "the user's linked subject changed".to_owned()
    };
    Some(format!("{AUTHORITY_CHANGED}: {what}; a new run acts with the new authority"))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Result<Option<Principal>, String>);

    impl PrincipalSource for Fixed {
        fn current<'a>(&'a self, _: &'a Principal) -> BoxFuture<'a, Result<Option<Principal>, String>> {
            Box::pin(async move { self.0.clone() })
        }
    }

    fn held() -> Principal {
        Principal::new("u1", "acme", "doctor")
    }

    async fn reason(answer: Result<Option<Principal>, String>) -> Option<String> {
        changed(&Fixed(answer), &held()).await
    }

    #[tokio::test]
    async fn only_the_same_principal_holds() {
        assert_eq!(reason(Ok(Some(held()))).await, None);
        let gone = reason(Ok(None)).await.unwrap();
        assert!(gone.starts_with("authority changed: user `u1` is no longer active"), "{gone}");
        let nurse = reason(Ok(Some(Principal::new("u1", "acme", "nurse")))).await.unwrap();
        assert!(nurse.contains("role `doctor` is now `nurse`"), "{nurse}");
        let other = reason(Ok(Some(Principal::new("u2", "acme", "doctor")))).await.unwrap();
        assert!(other.contains("another user"), "{other}");
        let linked = reason(Ok(Some(held().with_subject("athlete-7")))).await.unwrap();
        assert!(linked.contains("linked subject"), "{linked}");
        let down = reason(Err("directory down".into())).await.unwrap();
        assert!(down.starts_with(AUTHORITY_CHANGED) && down.contains("directory down"), "{down}");
    }
}
