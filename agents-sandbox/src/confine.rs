//! The kernel's confinement of a worker, set by the worker on itself while it is still the
//! only thread of a freshly started process and before it reads the call: namespaces, limits,
//! Landlock, `no_new_privs`, seccomp. No `unsafe`: `nix`, `landlock` and `seccompiler` wrap
//! each system call safely. (The descriptors it inherited are closed before, in `worker`.)

use crate::protocol::{Confinement, Header};
use agents_core::ToolSpec;
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use nix::sched::CloneFlags;
use nix::sys::resource::{Resource, setrlimit};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};
use std::collections::BTreeMap;

/// The system calls an isolated tool is refused (`EPERM`): tracing other processes, mounting
/// and changing the root, namespaces, kernel modules, kexec and reboot, BPF, keyrings,
/// performance counters, swap, clocks, raising limits, leaving the worker's process group,
/// running another program, and a few legacy or privileged calls. `clone` with a namespace
/// flag is refused as well, and `clone3` answers `ENOSYS` (see the crate docs).
pub const DENIED_SYSCALLS: &[(&str, i64)] = &[
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("kcmp", libc::SYS_kcmp),
    ("pidfd_getfd", libc::SYS_pidfd_getfd),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("reboot", libc::SYS_reboot),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("acct", libc::SYS_acct),
    ("quotactl", libc::SYS_quotactl),
    ("syslog", libc::SYS_syslog),
    ("settimeofday", libc::SYS_settimeofday),
    ("clock_settime", libc::SYS_clock_settime),
    ("clock_adjtime", libc::SYS_clock_adjtime),
    ("adjtimex", libc::SYS_adjtimex),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("fanotify_init", libc::SYS_fanotify_init),
    ("personality", libc::SYS_personality),
    ("setrlimit", libc::SYS_setrlimit),
    ("prlimit64", libc::SYS_prlimit64),
    ("setsid", libc::SYS_setsid),
    ("setpgid", libc::SYS_setpgid),
    ("execve", libc::SYS_execve),
    ("execveat", libc::SYS_execveat),
    ("vhangup", libc::SYS_vhangup),
    ("sethostname", libc::SYS_sethostname),
    ("setdomainname", libc::SYS_setdomainname),
];

/// `setxattrat` and `removexattrat` (Linux 6.13): numbered alike on every architecture (the
/// kernel's common table), and not yet named by the `libc` crate.
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;
/// `file_setattr` (Linux 6.17): a file's attribute flags and project, by path; numbered alike
/// on every architecture.
const SYS_FILE_SETATTR: i64 = 469;
/// `FS_IOC_FSSETXATTR` (`_IOW('X', 32, struct fsxattr)`), not named by the `libc` crate.
const FS_IOC_FSSETXATTR: u64 = 0x401c_5820;

/// The `ioctl` requests that change a file's attribute flags (what `chattr` sets: no dump, no
/// access time, append only, ...) through a descriptor: refused with the calls of
/// [`METADATA_BY_DESCRIPTOR_SYSCALLS`], by the request number (`ioctl`'s second argument).
#[allow(
    clippy::unnecessary_cast,
    reason = "the C library's request type is `c_ulong` with glibc and `c_int` with musl"
)]
const METADATA_IOCTLS: &[(&str, u64)] = &[
    ("FS_IOC_SETFLAGS", libc::FS_IOC_SETFLAGS as u64),
    ("FS_IOC32_SETFLAGS", libc::FS_IOC32_SETFLAGS as u64),
    ("FS_IOC_FSSETXATTR", FS_IOC_FSSETXATTR),
];

/// Changes of a file's mode, owner, times or extended attributes **by path**: refused (`EPERM`)
/// to every isolated tool, whatever its policy. Landlock has no right for metadata, and a
/// seccomp filter cannot read the path, so none of these is allowed even beneath a write root:
/// it could as well name a file outside the roots that the worker's user owns. (`utimensat`
/// is refused when it names a path; without one it is `futimens`, a change through a
/// descriptor, see [`METADATA_BY_DESCRIPTOR_SYSCALLS`].)
pub const METADATA_BY_PATH_SYSCALLS: &[(&str, i64)] = &[
    #[cfg(target_arch = "x86_64")]
    ("chmod", libc::SYS_chmod),
    ("fchmodat", libc::SYS_fchmodat),
    ("fchmodat2", libc::SYS_fchmodat2),
    #[cfg(target_arch = "x86_64")]
    ("chown", libc::SYS_chown),
    #[cfg(target_arch = "x86_64")]
    ("lchown", libc::SYS_lchown),
    ("fchownat", libc::SYS_fchownat),
    #[cfg(target_arch = "x86_64")]
    ("utime", libc::SYS_utime),
    #[cfg(target_arch = "x86_64")]
    ("utimes", libc::SYS_utimes),
    #[cfg(target_arch = "x86_64")]
    ("futimesat", libc::SYS_futimesat),
    ("utimensat", libc::SYS_utimensat),
    ("setxattr", libc::SYS_setxattr),
    ("lsetxattr", libc::SYS_lsetxattr),
    ("removexattr", libc::SYS_removexattr),
    ("lremovexattr", libc::SYS_lremovexattr),
    ("setxattrat", SYS_SETXATTRAT),
    ("removexattrat", SYS_REMOVEXATTRAT),
    ("file_setattr", SYS_FILE_SETATTR),
];

/// Changes of metadata **through a descriptor** (`fchmod`, `fchown`, `fsetxattr`,
/// `fremovexattr`, `utimensat` without a path, which is `futimens`, and the `ioctl` requests
/// that set a file's attribute flags, `FS_IOC_SETFLAGS` and `FS_IOC_FSSETXATTR`): refused
/// (`EPERM`) unless the tool's policy declares a write root. A descriptor reaches only a file Landlock
/// let the worker open for reading or writing (an `O_PATH` descriptor is refused by these
/// calls), so what such a tool can change is the metadata of files beneath its roots; it needs
/// that for ordinary writing (`std::fs::copy` sets the copy's mode with `fchmod`). A tool
/// without a write root changes no metadata at all.
pub const METADATA_BY_DESCRIPTOR_SYSCALLS: &[(&str, i64)] = &[
    ("fchmod", libc::SYS_fchmod),
    ("fchown", libc::SYS_fchown),
    ("fsetxattr", libc::SYS_fsetxattr),
    ("fremovexattr", libc::SYS_fremovexattr),
    ("utimensat", libc::SYS_utimensat),
];

/// Files a resolver reads: granted (read only) when the policy declares hosts.
const RESOLVER_FILES: &[&str] =
    &["/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf"];

/// Confines the calling process (which must be single-threaded) to `spec`'s policy.
pub(crate) fn confine(spec: &ToolSpec, header: &Header) -> Result<Confinement, String> {
    let policy = &spec.policy;
    let mut report = Confinement::default();
    let degrade = |what: String, report: &mut Confinement| {
        if header.allow_degraded {
            report.degraded = true;
            Ok(())
        } else {
            Err(format!(
                "{what}; the isolated tool was refused and nothing ran (the application may allow degraded mode explicitly)"
            ))
        }
    };

    // 0. An application running as root starts its workers as root: the worker becomes the
    //    unprivileged user of the settings first (the kernel exempts real uid 0 from the
    //    process limit, and root's files would stay its own).
    if nix::unistd::getuid().is_root() {
        let (uid, gid) = header.worker_user;
        let (uid, gid) = (nix::unistd::Uid::from_raw(uid), nix::unistd::Gid::from_raw(gid));
        nix::unistd::setgroups(&[]).map_err(|e| format!("dropping the worker's groups failed: {e}"))?;
        nix::unistd::setresgid(gid, gid, gid).map_err(|e| format!("setting the worker's group failed: {e}"))?;
        nix::unistd::setresuid(uid, uid, uid).map_err(|e| format!("setting the worker's user failed: {e}"))?;
    }

    // The parent-death signal, again: a change of credentials clears it.
    tie_to_parent()?;

    // 1. Namespaces: no capability in the parent's user namespace; no network unless declared.
    let no_network = policy.net_hosts.is_empty();
    let mut flags = CloneFlags::CLONE_NEWUSER;
    if no_network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    match nix::sched::unshare(flags) {
        Ok(()) => {
            report.user_namespace = true;
            report.network_namespace = no_network;
        }
        Err(e) => degrade(format!("the kernel refused a user namespace for the worker ({e})"), &mut report)?,
    }

    // And once more: the new user namespace is a change of credentials too.
    tie_to_parent()?;

    // 2. Resource limits (hard = soft, but CPU: SIGXCPU first, SIGKILL one second later).
    let l = &header.limits;
    let set = |r: Resource, soft: u64, hard: u64| {
        setrlimit(r, soft, hard).map_err(|e| format!("setting the worker's limit {r:?} failed: {e}"))
    };
    set(Resource::RLIMIT_CPU, l.cpu_seconds, l.cpu_seconds + 1)?;
    set(Resource::RLIMIT_AS, l.memory_bytes, l.memory_bytes)?;
    set(Resource::RLIMIT_NOFILE, l.open_files, l.open_files)?;
    set(Resource::RLIMIT_NPROC, l.processes, l.processes)?;
    set(Resource::RLIMIT_FSIZE, l.file_bytes, l.file_bytes)?;
    set(Resource::RLIMIT_CORE, 0, 0)?;

    // 3. Landlock.
    match landlock_rules(spec, &mut report.missing_roots) {
        Ok(abi) => report.landlock_abi = Some(abi),
        Err(e) => degrade(format!("the kernel cannot confine the worker with Landlock ABI 4 ({e})"), &mut report)?,
    }

    // 4. No new privileges (Landlock set it already when it is in force; said again for the
    //    degraded path and for seccomp).
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("PR_SET_NO_NEW_PRIVS failed: {e}"))?;

    // 5. seccomp.
    let by_descriptor = !policy.fs_write.is_empty();
    seccomp(by_descriptor).map_err(|e| format!("installing the worker's seccomp filter failed: {e}"))?;
    report.seccomp = true;
    report.metadata_by_descriptor = by_descriptor;
    Ok(report)
}

/// The Landlock domain of `spec`'s policy, in force on return; the ABI the kernel enforces.
fn landlock_rules(spec: &ToolSpec, missing: &mut Vec<String>) -> Result<i32, String> {
    let err = |e: landlock::RulesetError| e.to_string();
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let mut write = AccessFs::from_all(ABI::V4);
    write.remove(AccessFs::Execute | AccessFs::MakeChar | AccessFs::MakeBlock);
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V4))
        .map_err(err)?
        .handle_access(AccessNet::from_all(ABI::V4))
        .map_err(err)?
        // Newer rights and scopes where the kernel has them; granted nowhere.
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI::V6))
        .map_err(err)?
        .scope(Scope::from_all(ABI::V6))
        .map_err(err)?
        .create()
        .map_err(err)?;
    let mut rules: Vec<PathBeneath<PathFd>> = Vec::new();
    let mut grant = |path: &str, access: landlock::BitFlags<AccessFs>| match PathFd::new(path) {
        Ok(fd) => {
            // A file gets only the rights that apply to files.
            let is_dir = std::path::Path::new(path).is_dir();
            let access = if is_dir { access } else { access & AccessFs::from_file(ABI::V4) };
            rules.push(PathBeneath::new(fd, access));
        }
        Err(_) => missing.push(path.to_owned()),
    };
    for glob in spec.policy.fs_read {
        if let Some(root) = agents_core::policy::glob_literal_root(glob) {
            grant(root, read);
        }
    }
    for glob in spec.policy.fs_write {
        if let Some(root) = agents_core::policy::glob_literal_root(glob) {
            grant(root, write);
        }
    }
    if !spec.policy.net_hosts.is_empty() {
        for file in RESOLVER_FILES {
            if std::path::Path::new(file).exists() {
                grant(file, AccessFs::ReadFile.into());
            }
        }
    }
    let mut ruleset = ruleset.add_rules(rules.into_iter().map(Ok::<_, landlock::RulesetError>)).map_err(err)?;
    let mut ports: Vec<u16> =
        spec.policy.net_hosts.iter().filter_map(|h| h.rsplit_once(':').and_then(|(_, p)| p.parse().ok())).collect();
    ports.sort_unstable();
    ports.dedup();
    for port in ports {
        ruleset = ruleset.add_rule(NetPort::new(port, AccessNet::ConnectTcp)).map_err(err)?;
    }
    let status = ruleset.restrict_self().map_err(err)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("the kernel enforced none of the rules".to_owned());
    }
    Ok(match status.landlock {
        landlock::LandlockStatus::Available { kernel_abi: Some(v), .. } => v,
        landlock::LandlockStatus::Available { effective_abi, .. } => effective_abi as i32,
        _ => 0,
    })
}

/// The deny list, metadata changes (through a descriptor too unless `metadata_by_descriptor`),
/// Unix sockets, and `clone3` answered `ENOSYS`.
fn seccomp(metadata_by_descriptor: bool) -> Result<(), String> {
    let arch = std::env::consts::ARCH.try_into().map_err(|e: seccompiler::BackendError| e.to_string())?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED_SYSCALLS.iter().map(|&(_, nr)| (nr, Vec::new())).collect();
    // Metadata: by path always; through a descriptor unless a write root is declared. An empty
    // rule list refuses the call whatever its arguments.
    for &(_, nr) in METADATA_BY_PATH_SYSCALLS {
        rules.insert(nr, Vec::new());
    }
    if metadata_by_descriptor {
        // `utimensat(fd, NULL, ...)` is `futimens`: refused only when it names a path.
        let path = SeccompCondition::new(1, SeccompCmpArgLen::Qword, SeccompCmpOp::Ne, 0).map_err(|e| e.to_string())?;
        rules.insert(libc::SYS_utimensat, vec![SeccompRule::new(vec![path]).map_err(|e| e.to_string())?]);
    } else {
        for &(_, nr) in METADATA_BY_DESCRIPTOR_SYSCALLS {
            rules.insert(nr, Vec::new());
        }
        let mut ioctls = Vec::new();
        for &(_, request) in METADATA_IOCTLS {
            // The kernel reads the request as a 32-bit number.
            let cond = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
                .map_err(|e| e.to_string())?;
            ioctls.push(SeccompRule::new(vec![cond]).map_err(|e| e.to_string())?);
        }
        rules.insert(libc::SYS_ioctl, ioctls);
    }
    // Unix sockets: Landlock does not govern `connect` to a socket file, so the worker gets no
    // `AF_UNIX` socket to connect with (abstract names included). `socketpair` stays: its two
    // ends are joined to each other and reach nothing outside the worker (the async runtime's
    // signal driver uses one).
    let unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64)
        .map_err(|e| e.to_string())?;
    rules.insert(libc::SYS_socket, vec![SeccompRule::new(vec![unix]).map_err(|e| e.to_string())?]);
    let namespaces = [
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWCGROUP,
    ];
    let mut clone_rules = Vec::new();
    for flag in namespaces {
        let flag = flag as u64;
        let cond = SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(flag), flag)
            .map_err(|e| e.to_string())?;
        clone_rules.push(SeccompRule::new(vec![cond]).map_err(|e| e.to_string())?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    let deny = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
        .map_err(|e| e.to_string())?;
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    for filter in [deny, clone3] {
        let program: BpfProgram = filter.try_into().map_err(|e: seccompiler::BackendError| e.to_string())?;
        seccompiler::apply_filter(&program).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Sets the worker's parent-death signal (`SIGKILL`), then checks that its parent is still the
/// runtime that started it: a runtime that ended before the signal was set left the worker to
/// another parent, which the signal does not cover, and the worker exits. Set again after each
/// change of credentials (the kernel clears it then).
pub(crate) fn tie_to_parent() -> Result<(), String> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| format!("setting the worker's parent-death signal failed: {e}"))?;
    let expected = std::env::var(crate::settings::WORKER_ENV).ok().and_then(|v| v.parse::<i32>().ok());
    let parent = nix::unistd::getppid().as_raw();
    if expected != Some(parent) {
        return Err(format!("the runtime that started the worker is gone (parent {parent}, expected {expected:?})"));
    }
    Ok(())
}
