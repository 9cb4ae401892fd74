//! Conversation session ids, scoped to the principal who names them.
//!
//! A client names its sessions (`session_id` of `POST /v1/runs`, `DELETE /v1/sessions/{id}`);
//! the runtime's state store holds them under an id the service derives from the caller's
//! organisation, user and role and the client's id. Two principals who both say `abc` name two
//! different sessions, so another principal's id answers exactly as an unused one (a new
//! session, or 404 on `DELETE`): nobody learns that an id is taken, and nobody can take an id
//! first. The runtime still binds every stored session to one principal (a second guard).

use agents_runtime::Principal;

/// Hex digits of the principal's digest in a stored session id: 96 bits, so two principals
/// share a prefix only by a deliberate SHA-256 collision.
const SCOPE_HEX: usize = 24;

/// The stored form of the session ids of one principal.
#[derive(Debug, Clone)]
pub(crate) struct SessionScope {
    prefix: String,
}

impl SessionScope {
    /// The scope of `p`: its organisation, user and role.
    pub(crate) fn of(p: &Principal) -> Self {
        // Length-prefixed fields: no two different principals give the same input.
        let input =
            format!("{}:{}|{}:{}|{}:{}", p.org_id.len(), p.org_id, p.user_id.len(), p.user_id, p.role.len(), p.role);
        let digest = agents_core::canonical::sha256_hex(input.as_bytes());
        SessionScope { prefix: format!("{}.", &digest[..SCOPE_HEX]) }
    }

    /// The id the state store holds for the client's `id`.
    pub(crate) fn stored(&self, id: &str) -> String {
        format!("{}{id}", self.prefix)
    }

    /// The client's id of a stored id of this scope, or `None` for any other stored id.
    pub(crate) fn client<'a>(&self, stored: &'a str) -> Option<&'a str> {
        stored.strip_prefix(&self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(org: &str, user: &str, role: &str) -> Principal {
        Principal::new(user, org, role)
    }

    #[test]
    fn each_principal_has_its_own_ids() {
        let a = SessionScope::of(&p("org-a", "alice", "nurse"));
        let b = SessionScope::of(&p("org-a", "bob", "nurse"));
        assert_ne!(a.stored("abc"), b.stored("abc"));
        assert_eq!(a.client(&a.stored("abc")), Some("abc"));
        assert_eq!(b.client(&a.stored("abc")), None);
        // Field boundaries count: `ab` + `c` is not `a` + `bc`.
        assert_ne!(SessionScope::of(&p("ab", "c", "r")).stored("x"), SessionScope::of(&p("a", "bc", "r")).stored("x"));
        assert_ne!(
            SessionScope::of(&p("o", "u", "nurse")).stored("x"),
            SessionScope::of(&p("o", "u", "doctor")).stored("x")
        );
    }
}
