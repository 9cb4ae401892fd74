//! The KYC reviewer: `cargo run -p examples --example kyc` (or `-- --demo`) plays the offline
//! demo (add `--keep-log` to keep its audit log); `-- manifest` prints the permission manifest
//! exactly, `-- manifest-sha256` its hash. See [`examples::kyc`].

fn main() {
    // First thing: when the runtime starts this executable as an isolated tool's worker, it is
    // confined here, serves its one call and exits.
    agents_runtime::isolate::init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Err(e) = examples::kyc::main_with(&args, &mut out) {
        eprintln!("kyc: {e}");
        std::process::exit(1);
    }
}
