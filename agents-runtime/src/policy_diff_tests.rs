//! The manifest diff against the runtime's own matchers: whenever `diff` calls a change of a
//! tool's policy not widening, nothing the runtime's capability handles admit after it was
//! refused before.
//!
//! A unit test of the crate: the handles are built from a spec only inside the runtime.
//!
//! Entries are generated from a small grammar (ASCII and non-ASCII characters, runs of
//! stars, classes, braces, escapes, `.` and `..`, empty components, ports, wildcards,
//! addresses, names that read like patterns) together with entries derived from them, most of
//! them narrower, so that many changes are classified as not widening. Probes (paths, URLs
//! and variable names) are drawn from what the new entries admit and from near misses. The
//! verdicts come from `FsAccess`, `NetAccess` and `EnvAccess` themselves.

use crate::{EnvAccess, FsAccess, NetAccess};
use agents_core::diff::diff;
use agents_core::manifest::{AgentEntry, Manifest, ToolEntry};
use agents_core::{PolicySpec, Risk, Tier, ToolSpec};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Cases (one change of one policy list each); every case checks several probes.
const CASES: usize = 30_000;
/// The (change, probe) pairs that must be checked under a change the diff calls not widening.
const MIN_PAIRS: usize = 100_000;

const CHARS: &[char] = &['a', 'b', 'x', '.', '-', 'é', 'ü', '漢', 'A'];

/// A piece of a generated glob, kept so that paths it matches can be drawn from it.
#[derive(Clone, Debug)]
enum Piece {
    Lit(String),
    Star,
    Stars(usize),
    One,
    Class { negated: bool, members: Vec<char> },
    Range(char, char),
    Brace(Vec<Vec<Piece>>),
    Escaped(char),
    Slash,
}

fn render(pieces: &[Piece], out: &mut String) {
    for p in pieces {
        match p {
            Piece::Lit(s) => out.push_str(s),
            Piece::Star => out.push('*'),
            Piece::Stars(n) => out.push_str(&"*".repeat(*n)),
            Piece::One => out.push('?'),
            Piece::Class { negated, members } => {
                out.push('[');
                if *negated {
                    out.push('!');
                }
                out.extend(members);
                out.push(']');
            }
            Piece::Range(a, b) => {
                out.push('[');
                out.push(*a);
                out.push('-');
                out.push(*b);
                out.push(']');
            }
            Piece::Brace(alts) => {
                out.push('{');
                for (i, a) in alts.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    render(a, out);
                }
                out.push('}');
            }
            Piece::Escaped(c) => {
                out.push('\\');
                out.push(*c);
            }
            Piece::Slash => out.push('/'),
        }
    }
}

fn text(pieces: &[Piece]) -> String {
    let mut s = String::new();
    render(pieces, &mut s);
    s
}

fn lit(rng: &mut StdRng) -> String {
    (0..rng.gen_range(1..=3)).map(|_| CHARS[rng.gen_range(0..CHARS.len())]).collect()
}

fn component(rng: &mut StdRng, depth: usize) -> Vec<Piece> {
    let mut out = Vec::new();
    for _ in 0..rng.gen_range(1..=3) {
        out.push(match rng.gen_range(0..20) {
            0..=6 => Piece::Lit(lit(rng)),
            7..=9 => Piece::Star,
            10 => Piece::Stars(rng.gen_range(2..=3)),
            11 | 12 => Piece::One,
            13 => Piece::Class {
                negated: rng.gen_bool(0.3),
                members: (0..rng.gen_range(1..=3)).map(|_| CHARS[rng.gen_range(0..CHARS.len())]).collect(),
            },
            14 => {
                let (a, b) = (CHARS[rng.gen_range(0..CHARS.len())], CHARS[rng.gen_range(0..CHARS.len())]);
                Piece::Range(a.min(b), a.max(b))
            }
            15 | 16 if depth < 2 => {
                Piece::Brace((0..rng.gen_range(1..=3)).map(|_| component(rng, depth + 1)).collect())
            }
            17 => Piece::Escaped(['*', '?', '[', '{', 'a', '\\'][rng.gen_range(0..6)]),
            18 => Piece::Lit(["..", ".", ""][rng.gen_range(0..3)].to_owned()),
            _ => Piece::Lit(lit(rng)),
        });
    }
    out
}

/// A glob: mostly `/`-rooted components, sometimes `**` components, empty components or a
/// relative start.
fn glob(rng: &mut StdRng) -> Vec<Piece> {
    let mut out = Vec::new();
    if rng.gen_ratio(1, 20) {
        out.push(Piece::Stars(2));
    } else if rng.gen_ratio(1, 30) {
        out.extend(component(rng, 0));
    }
    for _ in 0..rng.gen_range(1..=3) {
        out.push(Piece::Slash);
        if rng.gen_ratio(1, 5) {
            out.push(Piece::Stars(2));
        } else if !rng.gen_ratio(1, 40) {
            out.extend(component(rng, 0));
        }
    }
    if rng.gen_ratio(1, 40) {
        out.push(Piece::Slash);
    }
    out
}

/// A glob derived from `g`, usually narrower: one piece made more specific.
fn narrower(rng: &mut StdRng, g: &[Piece]) -> Vec<Piece> {
    let mut out = g.to_vec();
    for _ in 0..rng.gen_range(1..=2) {
        if out.is_empty() {
            break;
        }
        let i = rng.gen_range(0..out.len());
        let replacement: Vec<Piece> = match &out[i] {
            Piece::Star => match rng.gen_range(0..3) {
                0 => vec![Piece::Lit(lit(rng))],
                1 => vec![Piece::One],
                _ => vec![Piece::Star, Piece::Lit(lit(rng))],
            },
            Piece::Stars(2) => match rng.gen_range(0..3) {
                0 => vec![Piece::Star],
                1 => vec![Piece::Lit(lit(rng))],
                _ => vec![Piece::Stars(2), Piece::Slash, Piece::Lit(lit(rng))],
            },
            Piece::One | Piece::Range(..) => vec![Piece::Lit(CHARS[rng.gen_range(0..CHARS.len())].to_string())],
            Piece::Class { negated: false, members } => {
                vec![Piece::Lit(members[rng.gen_range(0..members.len())].to_string())]
            }
            Piece::Class { negated: true, members } => {
                let mut more = members.clone();
                more.push(CHARS[rng.gen_range(0..CHARS.len())]);
                vec![Piece::Class { negated: true, members: more }]
            }
            Piece::Brace(alts) => alts[rng.gen_range(0..alts.len())].clone(),
            Piece::Lit(s) => vec![Piece::Lit(format!("{s}{}", lit(rng)))],
            other => vec![other.clone()],
        };
        out.splice(i..=i, replacement);
    }
    out
}

/// A path the glob probably matches (exactly, when the glob is valid and the draw fits).
fn sample(rng: &mut StdRng, pieces: &[Piece], out: &mut String) {
    for p in pieces {
        match p {
            Piece::Lit(s) => out.push_str(s),
            Piece::Star => {
                for _ in 0..rng.gen_range(0..3) {
                    out.push(CHARS[rng.gen_range(0..CHARS.len())]);
                }
            }
            Piece::Stars(_) => {
                let n = rng.gen_range(0..3);
                for k in 0..n {
                    if k > 0 {
                        out.push('/');
                    }
                    out.push_str(&lit(rng));
                }
            }
            Piece::One => out.push(CHARS[rng.gen_range(0..CHARS.len())]),
            Piece::Class { members, .. } => out.push(members[rng.gen_range(0..members.len())]),
            Piece::Range(a, b) => out.push(if rng.gen_bool(0.5) { *a } else { *b }),
            Piece::Brace(alts) => {
                let pick = rng.gen_range(0..alts.len());
                sample(rng, &alts[pick], out)
            }
            Piece::Escaped(c) => out.push(*c),
            Piece::Slash => out.push('/'),
        }
    }
}

/// A path near `p`: `.`/`..` components, repeated or trailing slashes, another character.
fn near(rng: &mut StdRng, p: &str) -> String {
    match rng.gen_range(0..6) {
        0 => format!("{p}/.."),
        1 => p.replacen('/', "//", 1),
        2 => format!("{p}/"),
        3 => p.replacen('/', "/./", 1),
        4 => format!("{p}{}", CHARS[rng.gen_range(0..CHARS.len())]),
        _ => format!("/x/..{p}"),
    }
}

#[derive(Clone, Debug)]
struct HostGen {
    wild: bool,
    labels: Vec<String>,
    port: Option<u16>,
}

impl HostGen {
    fn text(&self) -> String {
        let mut s = String::new();
        if self.wild {
            s.push_str("*.");
        }
        s.push_str(&self.labels.join("."));
        if let Some(p) = self.port {
            s.push_str(&format!(":{p}"));
        }
        s
    }
}

const LABELS: &[&str] = &["a", "b", "api", "x-y", "A", "0", "10", "127", "ä", "-a", ""];
const PORTS: &[u16] = &[0, 1, 80, 443, 8443];

fn host(rng: &mut StdRng) -> String {
    if rng.gen_ratio(1, 10) {
        let odd = [
            "*",
            "*:443",
            "**",
            "[::1]",
            "[0::1]",
            "[::1]:443",
            "127.1",
            "127.0.0.1",
            "a.b.",
            "a.b:+1",
            "u@a.b",
            "A.B:080",
        ];
        return odd[rng.gen_range(0..odd.len())].to_owned();
    }
    host_gen(rng).text()
}

fn host_gen(rng: &mut StdRng) -> HostGen {
    HostGen {
        wild: rng.gen_ratio(1, 3),
        labels: (0..rng.gen_range(1..=3)).map(|_| LABELS[rng.gen_range(0..LABELS.len())].to_owned()).collect(),
        port: rng.gen_bool(0.5).then(|| PORTS[rng.gen_range(0..PORTS.len())]),
    }
}

fn narrower_host(rng: &mut StdRng, h: &HostGen) -> HostGen {
    let mut n = h.clone();
    match rng.gen_range(0..4) {
        0 => n.port = Some(PORTS[rng.gen_range(1..PORTS.len())]),
        1 => n.labels.insert(0, LABELS[rng.gen_range(0..4)].to_owned()),
        2 => n.wild = false,
        _ => n.labels = n.labels.iter().map(|l| l.to_uppercase()).collect(),
    }
    n
}

fn url_for(rng: &mut StdRng, h: &HostGen) -> String {
    let scheme = ["https", "http", "ftp"][rng.gen_range(0..3)];
    let mut host = h.labels.join(".");
    if h.wild {
        host = format!("{}.{host}", LABELS[rng.gen_range(0..4)]);
    }
    if rng.gen_ratio(1, 8) {
        host.push('.');
    }
    let port = match (h.port, rng.gen_range(0..3)) {
        (Some(p), 0 | 1) => format!(":{p}"),
        (_, 2) => format!(":{}", PORTS[rng.gen_range(0..PORTS.len())]),
        _ => String::new(),
    };
    let user = if rng.gen_ratio(1, 10) { "u@" } else { "" };
    format!("{scheme}://{user}{host}{port}/p?q=1")
}

const VARS: &[&str] = &["APP", "APP_REGION", "APP_*", "A1", "_X", "1A", "app", "APP-REGION", "Ä"];

fn leak(list: &[String]) -> &'static [&'static str] {
    let v: Vec<&'static str> = list.iter().map(|s| &*Box::leak(s.clone().into_boxed_str())).collect();
    Box::leak(v.into_boxed_slice())
}

#[derive(Clone, Copy, Debug)]
enum Field {
    FsRead,
    FsWrite,
    Net,
    Env,
}

fn spec(field: Field, list: &[String]) -> &'static ToolSpec {
    let entries = leak(list);
    let mut policy = PolicySpec::NONE;
    match field {
        Field::FsRead => policy.fs_read = entries,
        Field::FsWrite => policy.fs_write = entries,
        Field::Net => policy.net_hosts = entries,
        Field::Env => policy.env_vars = entries,
    }
    Box::leak(Box::new(ToolSpec {
        name: "t",
        title: None,
        description: "d",
        permission: "public",
        tier: Tier::Read,
        risk: Risk::Low,
        policy,
        params: &[],
        uses: &[],
        import: None,
        handoff: None,
    }))
}

fn manifest(spec: &ToolSpec) -> Manifest {
    let agent = AgentEntry::new("a", "d");
    Manifest::from_entries(agent, vec![ToolEntry::from_spec(spec)]).expect("one tool")
}

/// Whether the runtime admits `probe` under the policy of `spec` for `field`.
fn admits(field: Field, spec: &'static ToolSpec, probe: &str) -> bool {
    match field {
        Field::FsRead => FsAccess::for_spec(spec).may_read(probe),
        Field::FsWrite => FsAccess::for_spec(spec).may_write(probe),
        Field::Net => NetAccess::for_spec(spec).check_url(probe).is_ok(),
        Field::Env => EnvAccess::for_spec(spec).var(probe).is_ok(),
    }
}

#[test]
fn a_change_the_diff_calls_not_widening_admits_nothing_new() {
    let seed: u64 = std::env::var("POLICY_DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x005e_ed26);
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut pairs, mut admitted_pairs, mut not_widening, mut covered_additions) = (0usize, 0usize, 0usize, 0usize);
    let mut by_field = [0usize; 4];
    for case in 0..CASES {
        let field = [Field::FsRead, Field::FsWrite, Field::Net, Field::Env][case % 4];
        let mut probes: Vec<String> = Vec::new();
        let (old, new): (Vec<String>, Vec<String>) = match field {
            Field::FsRead | Field::FsWrite => {
                let olds: Vec<Vec<Piece>> = (0..rng.gen_range(1..=3)).map(|_| glob(&mut rng)).collect();
                let mut news: Vec<Vec<Piece>> = olds.iter().filter(|_| rng.gen_bool(0.6)).cloned().collect::<Vec<_>>();
                for _ in 0..rng.gen_range(1..=2) {
                    let base = &olds[rng.gen_range(0..olds.len())];
                    news.push(match rng.gen_range(0..6) {
                        0 => glob(&mut rng),
                        1 => {
                            // A path the old glob matches, as a glob of literals.
                            let mut s = String::new();
                            sample(&mut rng, base, &mut s);
                            vec![Piece::Lit(s.replace('\\', "\\\\").replace(['*', '?', '[', '{', '}'], "x"))]
                        }
                        _ => narrower(&mut rng, base),
                    });
                }
                for g in news.iter().chain(&olds) {
                    for _ in 0..3 {
                        let mut p = String::new();
                        sample(&mut rng, g, &mut p);
                        if rng.gen_ratio(1, 4) {
                            p = near(&mut rng, &p);
                        }
                        probes.push(p);
                    }
                }
                (olds.iter().map(|g| text(g)).collect(), news.iter().map(|g| text(g)).collect())
            }
            Field::Net => {
                let olds: Vec<HostGen> = (0..rng.gen_range(1..=3)).map(|_| host_gen(&mut rng)).collect();
                let mut old: Vec<String> = olds.iter().map(HostGen::text).collect();
                if rng.gen_ratio(1, 4) {
                    old.push(host(&mut rng));
                }
                let mut news: Vec<HostGen> = olds.iter().filter(|_| rng.gen_bool(0.6)).cloned().collect();
                for _ in 0..rng.gen_range(1..=2) {
                    let base = &olds[rng.gen_range(0..olds.len())];
                    news.push(if rng.gen_ratio(1, 5) { host_gen(&mut rng) } else { narrower_host(&mut rng, base) });
                }
                let mut new: Vec<String> = news.iter().map(HostGen::text).collect();
                if rng.gen_ratio(1, 6) {
                    new.push(host(&mut rng));
                }
                for h in news.iter().chain(&olds) {
                    for _ in 0..3 {
                        probes.push(url_for(&mut rng, h));
                    }
                }
                probes.push("https://[::1]:443/".into());
                probes.push("http://127.0.0.1/".into());
                (old, new)
            }
            Field::Env => {
                let pick = |rng: &mut StdRng| VARS[rng.gen_range(0..VARS.len())].to_owned();
                let old: Vec<String> = (0..rng.gen_range(1..=3)).map(|_| pick(&mut rng)).collect();
                let mut new: Vec<String> = old.iter().filter(|_| rng.gen_bool(0.6)).cloned().collect();
                if rng.gen_bool(0.5) {
                    new.push(pick(&mut rng));
                }
                probes.extend(VARS.iter().map(|v| (*v).to_owned()));
                probes.push("APP_REGION_2".into());
                (old, new)
            }
        };
        let (old_spec, new_spec) = (spec(field, &old), spec(field, &new));
        let d = diff(&manifest(old_spec), &manifest(new_spec));
        if d.has_widening() {
            continue;
        }
        not_widening += 1;
        by_field[case % 4] += 1;
        if d.changes.iter().any(|c| c.new.is_some() && c.old.is_none()) {
            covered_additions += 1;
        }
        for probe in &probes {
            pairs += 1;
            if admits(field, new_spec, probe) {
                admitted_pairs += 1;
                assert!(
                    admits(field, old_spec, probe),
                    "counterexample (seed {seed}, case {case}, {field:?}): old {old:?}, new {new:?}; the diff says\n{d}\nbut `{probe}` is admitted only after the change"
                );
            }
        }
    }
    eprintln!(
        "{not_widening} of {CASES} changes not widening (fs read/write, net, env: {by_field:?}), {covered_additions} of them adding a covered entry; {pairs} (change, probe) pairs checked, {admitted_pairs} admitted after the change; 0 counterexamples"
    );
    assert!(pairs >= MIN_PAIRS, "only {pairs} pairs were checked; the generators no longer reach {MIN_PAIRS}");
    assert!(admitted_pairs >= MIN_PAIRS / 4, "only {admitted_pairs} probes were admitted after a change");
    assert!(covered_additions >= CASES / 20, "only {covered_additions} changes added a covered entry");
    assert!(by_field.iter().all(|n| *n >= CASES / 40), "some field is barely exercised: {by_field:?}");
}
