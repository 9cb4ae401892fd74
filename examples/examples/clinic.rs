//! Kinetix, the clinical assistant: `cargo run -p examples --example clinic` plays the
//! offline demo; `-- chat` talks to it on a terminal; `-- manifest` prints the permission
//! manifest exactly, `-- manifest-sha256` its hash. See [`examples::clinic`].

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Spans and metrics go to an OpenTelemetry collector when OTEL_EXPORTER_OTLP_ENDPOINT is
    // set; nothing is installed otherwise. Kept until exit: dropping it flushes.
    let _telemetry = match agents_telemetry::init_from_env() {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("clinic: {e}");
            std::process::exit(1);
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Err(e) = examples::clinic::main_with(&args, &mut out) {
        eprintln!("clinic: {e}");
        std::process::exit(1);
    }
}
