//! One tool and one agent. Start here: rename them, add your own tools, and grant them to the
//! agent; `cargo test` then fails until the reviewed manifest (`manifests/`) is updated.

use agents_runtime::{ToolContext, agent, permissions, tool};

// Every permission the application knows; a misspelt one does not compile.
permissions! {
    /// The permissions of the shop's back office.
    pub mod perms { order.refund }
}

/// Refunds an order to the customer's original payment method.
///
/// # Arguments
///
/// * `order_id` - the order's number, as the customer gives it
/// * `reason` - why the refund is given, in the clerk's words
#[tool(permission = perms::order::refund, mutating, title = "Refund order", risk = medium)]
pub async fn refund_order(cx: &ToolContext<'_>, order_id: u64, reason: String) -> Result<String, String> {
    // Call your own services here, with the authority of the person the run is for.
    Ok(format!("order {order_id} refunded for {} ({reason})", cx.principal().user_id))
}

agent! {
    /// Helps back-office clerks with refunds.
    pub struct Assistant;
    name: "assistant",
    tools: [refund_order],
    ceiling: [perms::order::refund],
}
