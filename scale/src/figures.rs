//! Figures: percentiles, the resident set, and the benches' arguments.

use std::time::Duration;

/// The `p` percentile (0.0 to 1.0) of `sorted` (nearest rank). Panics on an empty slice.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Milliseconds, for printing.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The process's resident set in bytes (`VmRSS` of `/proc/self/status`; Linux).
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("the benches read /proc/self/status (Linux)");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS in /proc/self/status");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmRSS in kB");
    kib * 1024
}

/// The value of `--<name>=<value>` on the command line, else `default`. A value that does
/// not parse stops the bench with a message that names the argument.
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    arg_in(std::env::args(), name, default).unwrap_or_else(|e| panic!("{e}"))
}

/// [`arg`] over the given arguments.
///
/// ```
/// let args = ["bench", "--runs=200"].map(String::from);
/// assert_eq!(scale::figures::arg_in(args.clone(), "runs", 10_000usize), Ok(200));
/// assert_eq!(scale::figures::arg_in(args, "decide", 5usize), Ok(5));
/// let bad = ["bench", "--runs=many"].map(String::from);
/// assert!(scale::figures::arg_in(bad, "runs", 1usize).is_err());
/// ```
pub fn arg_in<T: std::str::FromStr>(
    args: impl IntoIterator<Item = String>,
    name: &str,
    default: T,
) -> Result<T, String> {
    let prefix = format!("--{name}=");
    match args.into_iter().find_map(|a| a.strip_prefix(&prefix).map(str::to_owned)) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| format!("--{name}={v}: not a number; give e.g. --{name}=100")),
    }
}

/// Whether `--<flag>` is on the command line.
pub fn flag(name: &str) -> bool {
    let want = format!("--{name}");
    std::env::args().any(|a| a == want)
}

/// A line about the machine and the build, printed first by every bench.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let build = if cfg!(debug_assertions) { "debug build" } else { "optimised build" };
    format!("{cpus} CPUs ({model}), load average {load}, {build}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&v, 0.5), Duration::from_millis(51));
        assert_eq!(percentile(&v, 0.99), Duration::from_millis(99));
        assert_eq!(percentile(&v, 1.0), Duration::from_millis(100));
        assert_eq!(percentile(&v, 0.0), Duration::from_millis(1));
    }

    #[test]
    fn the_resident_set_is_read() {
        assert!(rss_bytes() > 1024 * 1024);
    }
}
