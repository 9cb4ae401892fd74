use agents_runtime::tool;

/// Logs a message.
#[tool(permission = public)]
async fn log_message(text: String) {
    println!("{text}");
}

fn main() {}
