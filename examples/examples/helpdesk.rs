//! DeskLoop, the IT and HR helpdesk: `cargo run -p examples --example helpdesk` chats on a
//! terminal; `-- --demo` (or stdin that is not a terminal) plays the scripted session with
//! the bypass attempts; `-- manifest` prints the permission manifest exactly. See
//! [`examples::helpdesk`].

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Err(e) = examples::helpdesk::main_with(&args, &mut out) {
        eprintln!("helpdesk: {e}");
        std::process::exit(1);
    }
}
