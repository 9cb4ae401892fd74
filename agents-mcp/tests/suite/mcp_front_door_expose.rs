//! The front door an application mounts in its own router checks the agent's
//! `expose: { mcp: [...] }` as the entry points do: it serves only an agent whose manifest
//! names `http(auth = service)`.

use agents_mcp::{FrontDoor, FrontDoorOptions, McpError};
use agents_runtime::audit::MemorySink;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Runtime, agent, permissions, tool};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

permissions! {
    pub mod perms { desk.read }
}

/// Reads a ticket.
#[tool(permission = perms::desk::read)]
async fn read_ticket(id: u32) -> Result<String, String> {
    Ok(format!("ticket {id}"))
}

agent! {
    /// Behind the application's own authentication.
    pub struct ServiceDesk;
    tools: [read_ticket],
    expose: { mcp: [http(auth = service)] },
}

agent! {
    /// Over HTTP with this crate's bearer tokens and stdio only.
    pub struct BearerDesk;
    tools: [read_ticket],
    expose: { mcp: [stdio, http(auth = bearer)] },
}

agent! {
    /// Not served over MCP.
    pub struct PrivateDesk;
    tools: [read_ticket],
}

fn rt() -> Runtime {
    Runtime::builder(Arc::new(MemorySink::new()), Arc::new(ScriptedProvider::new([]))).build()
}

#[tokio::test]
async fn the_front_door_refuses_an_agent_not_declared_behind_an_applications_authentication() {
    let refused = |r: Result<_, McpError>| match r {
        Err(McpError::NotExposed { agent, reason }) => (agent, reason),
        Err(other) => panic!("expected NotExposed, got {other}"),
        Ok(_) => panic!("the door was built for an agent whose manifest does not name `http(auth = service)`"),
    };
    let (agent, reason) =
        refused(FrontDoor::<BearerDesk>::new(rt(), FrontDoorOptions::default(), CancellationToken::new()).map(|_| ()));
    assert_eq!(agent, "BearerDesk");
    assert!(
        reason.contains("not `http(auth = service)`") && reason.contains("expose: { mcp: [http(auth = service)] }"),
        "{reason}"
    );
    let (_, reason) =
        refused(FrontDoor::<PrivateDesk>::new(rt(), FrontDoorOptions::default(), CancellationToken::new()).map(|_| ()));
    assert!(reason.contains("declares no way"), "{reason}");
    let door = FrontDoor::<ServiceDesk>::new(rt(), FrontDoorOptions::default(), CancellationToken::new());
    assert!(door.is_ok(), "{:?}", door.err());
}
