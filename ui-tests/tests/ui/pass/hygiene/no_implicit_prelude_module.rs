// Tools and an agent declared in a module without the prelude: the generated code names every
// std item by its absolute path.
#![allow(dead_code)]

#[no_implicit_prelude]
mod bare {
    use ::agents_runtime::{agent, tool};

    /// Reads a ticket.
    #[tool(permission = public)]
    async fn read_ticket(
        id: u64,
        note: ::std::option::Option<::std::string::String>,
    ) -> ::std::result::Result<u64, ::std::string::String> {
        let _ = note;
        ::std::result::Result::Ok(id)
    }

    /// Closes a ticket.
    ///
    /// # Arguments
    ///
    /// * `id` - the id
    #[tool(permission = public, mutating, title = "Close ticket")]
    fn close_ticket(id: u64) -> ::std::result::Result<u64, ::std::string::String> {
        ::std::result::Result::Ok(id)
    }

    /// Hands a ticket to a person.
    #[tool(permission = public, handoff)]
    fn escalate(id: u64);

    agent! {
        /// Helps.
        pub struct Helper;
        tools: [read_ticket, close_ticket, escalate],
        limits: { max_iterations: 4 },
    }
}

fn main() {
    assert_eq!(<bare::Helper as agents_runtime::Agent>::tools().len(), 3);
}
