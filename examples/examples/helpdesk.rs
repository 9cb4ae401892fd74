//! DeskLoop, the IT and HR helpdesk: `cargo run -p examples --example helpdesk` chats on a
//! terminal; `-- --demo` (or stdin that is not a terminal) plays the scripted session with
//! the bypass attempts (add `--keep-log` to keep its audit log); `-- mcp` serves it over MCP
//! on stdio, `-- mcp --http` over streamable HTTP (see the README); `-- eval SET --out DIR`
//! runs a probe set of `examples/eval/`; `-- manifest` prints the permission manifest exactly.
//! See [`examples::helpdesk`].

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Spans and metrics go to an OpenTelemetry collector when OTEL_EXPORTER_OTLP_ENDPOINT is
    // set; nothing is installed otherwise. Kept until exit: dropping it flushes.
    let _telemetry = match agents_telemetry::init_from_env() {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("helpdesk: {e}");
            std::process::exit(1);
        }
    };
    // Not locked: `mcp` writes JSON-RPC to stdout from the server's own writer.
    let mut out = std::io::stdout();
    let done = match args.first().map(String::as_str) {
        Some("eval") => examples::helpdesk::eval::command(&args[1..], &mut out),
        _ => examples::helpdesk::main_with(&args, &mut out),
    };
    if let Err(e) = done {
        eprintln!("helpdesk: {e}");
        std::process::exit(1);
    }
}
