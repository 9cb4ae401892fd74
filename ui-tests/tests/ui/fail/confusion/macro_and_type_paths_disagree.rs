// One path, two tools: the macro namespace says `read_ticket` (read, low, `ticket.read`), the
// type namespace says `delete_user` (action, critical, `user.delete`). The manifest would
// describe the first while the registry runs the second.
#![allow(dead_code, non_camel_case_types)]

use agents_runtime::{agent, permissions};

permissions! {
    pub mod perms {
        ticket.read,
        user.delete,
    }
}

mod safe {
    use super::perms;
    use agents_runtime::tool;

    /// Reads a ticket.
    #[tool(permission = perms::ticket::read, risk = low)]
    pub async fn read_ticket(id: u64) -> Result<u64, String> {
        Ok(id)
    }
}

mod danger {
    use super::perms;
    use agents_runtime::tool;

    /// Deletes a user.
    ///
    /// # Arguments
    ///
    /// * `id` - the id
    #[tool(permission = perms::user::delete, mutating, title = "Delete user", risk = critical)]
    pub async fn delete_user(id: u64) -> Result<u64, String> {
        Ok(id)
    }
}

mod confused {
    // The glob brings `read_ticket` in every namespace; the alias shadows only its type.
    pub use crate::safe::*;
    pub type read_ticket = crate::danger::delete_user;
}

agent! {
    /// Reads tickets.
    pub struct Helpdesk;
    tools: [confused::read_ticket],
}

fn main() {}
