//! The operating-system sandbox of child processes on Linux, in layers:
//!
//! 1. a namespace view (module `namespace`): new user, mount, PID and IPC namespaces (and a
//!    network namespace when the run may not use the network) whose filesystem is an allow list:
//!    system directories and readable roots read-only, writable roots read-write with protected
//!    paths read-only, a private `/tmp` and `$HOME`, a `/proc` without the parent, no terminal;
//! 2. Landlock inside it (writes only beneath the allowed directories);
//! 3. a seccomp filter: no terminal injection (`TIOCSTI`, `TIOCLINUX`), and no network sockets
//!    unless the run may use the network.
//!
//! Every child also gets a session of its own (no controlling terminal) and `RLIMIT_FSIZE`; see
//! `process::command`.
//!
//! Everything that allocates or can fail in an interesting way (opening the paths, building the
//! ruleset, assembling the BPF program, laying out the view) happens in the parent before the
//! fork, in [`prepare`]. The child only makes raw syscalls between fork and exec.

use std::path::PathBuf;

use serde::Serialize;

/// What a sandboxed child may do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sandbox {
    /// Directories (and files) beneath which the child may create, change and delete files. A
    /// private temporary directory is added by the process helper and exported as `TMPDIR`.
    pub writable: Vec<PathBuf>,
    /// Whether the child may open Internet sockets (IPv4, IPv6, packet). Unix sockets always work.
    pub allow_network: bool,
    /// Run in the namespace view where the kernel allows unprivileged user namespaces: the
    /// filesystem is the allow list described in the module documentation.
    pub namespaces: bool,
    /// Extra directories (or files) the child may read, read-only (the view shows nothing else
    /// outside the system directories).
    pub readable: Vec<PathBuf>,
    /// Paths inside `writable` that stay read-only (`.git`, `toolshed.toml`, …). Only paths
    /// that exist are covered.
    pub protected: Vec<PathBuf>,
    /// Files (denied programs) replaced by an empty device in the view, so no indirection can
    /// run them.
    pub masked: Vec<PathBuf>,
}

impl Sandbox {
    /// Writes beneath `writable` only, the network as given, the namespace view on, nothing
    /// else readable, protected or masked.
    pub fn new(writable: Vec<PathBuf>, allow_network: bool) -> Sandbox {
        Sandbox {
            writable,
            allow_network,
            namespaces: true,
            readable: Vec::new(),
            protected: Vec::new(),
            masked: Vec::new(),
        }
    }
}

/// What the sandbox actually enforced for one child, in words a model or a human can read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxStatus {
    /// `enforced (ABI v5)`, `partially enforced (ABI v2: …)` or `not available on this kernel: …`.
    pub landlock: String,
    /// `network blocked`, `network allowed by policy` or `not available …`.
    pub seccomp: String,
    /// `user, mount, pid, ipc[, net]`, `not requested` or `not available: …`.
    pub namespaces: String,
    /// Whether the namespace view holds (the filesystem is the allow list, the parent is
    /// invisible, there is no terminal).
    pub namespaces_enforced: bool,
    /// Whether writes outside the allowed directories are refused by the kernel.
    pub filesystem_enforced: bool,
    /// Whether network sockets are refused by the kernel (always true when network is allowed,
    /// since there is nothing to enforce then).
    pub network_enforced: bool,
}

impl SandboxStatus {
    /// Whether every layer holds: the namespace view, Landlock and the network filter.
    pub fn fully_enforced(&self) -> bool {
        self.filesystem_enforced && self.network_enforced && self.namespaces_enforced
    }

    /// One line: `namespaces: …; landlock: …; seccomp: …`.
    pub fn summary(&self) -> String {
        format!(
            "namespaces: {}; landlock: {}; seccomp: {}",
            self.namespaces, self.landlock, self.seccomp
        )
    }
}

/// What the kernel offers, probed without restricting this process (the namespace probe runs
/// `true` in a view of its own once, and the answer is kept).
pub fn probe() -> SandboxStatus {
    imp::probe()
}

/// Where a sandboxed child runs, worked out by the process helper.
#[derive(Debug, Clone)]
pub(crate) struct Placement {
    /// The working directory.
    pub(crate) cwd: PathBuf,
    /// The private temporary directory (host path); in the view, `tmp/` in it is `/tmp` and
    /// `home/` is `$HOME`.
    pub(crate) private_tmp: Option<PathBuf>,
    /// The child's `$HOME`, when it has one.
    pub(crate) home: Option<PathBuf>,
}

/// A sandbox ready to apply in a forked child.
pub(crate) struct Prepared {
    pub(crate) status: SandboxStatus,
    /// Whether the child sees the namespace view (then `/tmp` is its private directory).
    pub(crate) in_view: bool,
    #[cfg(target_os = "linux")]
    inner: imp::Inner,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// Lays out the view and builds the Landlock ruleset and the seccomp program, in the parent.
pub(crate) fn prepare(sandbox: &Sandbox, place: &Placement) -> Prepared {
    imp::prepare(sandbox, place)
}

impl Prepared {
    /// Installs the sandbox in the calling process. Runs in the child between fork and exec, so
    /// it only makes raw syscalls on data prepared earlier: no allocation, no locks.
    #[cfg(target_os = "linux")]
    pub(crate) fn child_hook(&self) -> impl Fn() -> std::io::Result<()> + Send + Sync + 'static {
        self.inner.child_hook()
    }

    /// The hook that enters the namespace view, when the child gets one. It must run before
    /// [`Prepared::child_hook`] (Landlock forbids mounting).
    #[cfg(target_os = "linux")]
    pub(crate) fn view_hook(
        &self,
    ) -> Option<impl Fn() -> std::io::Result<()> + Send + Sync + 'static> {
        self.inner.view_hook()
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::sync::Arc;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope, path_beneath_rules,
    };

    use std::sync::OnceLock;

    use super::super::namespace;
    use super::{Placement, Prepared, Sandbox, SandboxStatus};

    /// Device files every program expects to write (`> /dev/null`). No terminal: children have
    /// none (they run in a session of their own).
    const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

    pub(super) struct Inner {
        view: Option<Arc<namespace::Prepared>>,
        landlock_fd: Option<Arc<OwnedFd>>,
        seccomp: Option<Arc<Vec<libc::sock_filter>>>,
    }

    /// Whether this kernel lets us build the namespace view: `true` runs in a view of its own,
    /// once per process.
    pub(super) fn namespaces() -> &'static Result<(), String> {
        static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
        PROBE.get_or_init(|| {
            let tmp = std::env::temp_dir().join(format!(
                "toolshed-probe-{}-{:x}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.subsec_nanos())
                    .unwrap_or(0)
            ));
            std::fs::create_dir(&tmp).map_err(|e| format!("no temporary directory: {e}"))?;
            for sub in ["tmp", "shm"] {
                let _ = std::fs::create_dir(tmp.join(sub));
            }
            let view = namespace::View {
                tmp: tmp.join("tmp"),
                cwd: "/".into(),
                ..namespace::View::default()
            };
            let result = namespace::prepare(&view).and_then(|prepared| {
                let program = ["/usr/bin/true", "/bin/true"]
                    .into_iter()
                    .find(|p| std::path::Path::new(p).exists())
                    .ok_or("there is no `true` program to probe with")?;
                let mut cmd = std::process::Command::new(program);
                cmd.stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null());
                // SAFETY: `enter` only makes raw syscalls on data prepared above.
                #[allow(unsafe_code)]
                unsafe {
                    use std::os::unix::process::CommandExt as _;
                    cmd.pre_exec(move || prepared.enter());
                }
                match cmd.status() {
                    Ok(s) if s.success() => Ok(()),
                    Ok(s) => Err(format!("a probe in the view failed ({s})")),
                    Err(e) => Err(namespace_error(&e)),
                }
            });
            let _ = std::fs::remove_dir_all(&tmp);
            result
        })
    }

    /// Why the namespaces could not be made, with the usual causes.
    fn namespace_error(e: &io::Error) -> String {
        let mut why = format!("making the namespaces failed: {e}");
        if e.raw_os_error() == Some(libc::EPERM) || e.raw_os_error() == Some(libc::EACCES) {
            let read = |p: &str| {
                std::fs::read_to_string(p)
                    .ok()
                    .map(|s| s.trim().to_string())
            };
            if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref()
                == Some("1")
            {
                why.push_str(
                    " (AppArmor restricts unprivileged user namespaces: kernel.apparmor_restrict_unprivileged_userns=1)",
                );
            } else if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
                why.push_str(" (kernel.unprivileged_userns_clone=0)");
            } else {
                why.push_str(
                    " (a container's seccomp profile or a hardened kernel may forbid user namespaces or mounting /proc)",
                );
            }
        } else if e.raw_os_error() == Some(libc::ENOSPC) {
            why.push_str(" (user.max_user_namespaces is reached or 0)");
        }
        why
    }

    /// The Landlock ABI version of the running kernel, or why there is none.
    fn landlock_abi() -> Result<i32, String> {
        // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the VERSION flag only
        // returns the ABI version (or -1 with errno); it reads and writes no memory.
        #[allow(unsafe_code)]
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                1u32,
            )
        };
        if v >= 1 {
            Ok(v as i32)
        } else {
            let e = io::Error::last_os_error();
            Err(match e.raw_os_error() {
                Some(libc::EOPNOTSUPP) => "Landlock is built into the kernel but not enabled (add `landlock` to the lsm= boot parameter)".to_string(),
                Some(libc::ENOSYS) => "the kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK is needed)".to_string(),
                _ => format!("the Landlock probe failed: {e}"),
            })
        }
    }

    pub(super) fn probe() -> SandboxStatus {
        let (landlock, fs) = match landlock_abi() {
            Ok(v) if v >= 3 => (format!("available (ABI v{v})"), true),
            Ok(v) => (
                format!("available (ABI v{v}, truncation of outside files not covered)"),
                true,
            ),
            Err(why) => (format!("not available on this kernel: {why}"), false),
        };
        let (namespaces, ns) = match namespaces() {
            Ok(()) => ("available (user, mount, pid, ipc, net)".to_string(), true),
            Err(why) => (format!("not available: {why}"), false),
        };
        SandboxStatus {
            landlock,
            seccomp: "available".into(),
            namespaces,
            namespaces_enforced: ns,
            filesystem_enforced: fs,
            network_enforced: true,
        }
    }

    /// Landlock and seccomp for one child, made for a run in the view or outside it.
    struct Layers {
        landlock_fd: Option<Arc<OwnedFd>>,
        landlock: String,
        fs_enforced: bool,
        seccomp: Option<Arc<Vec<libc::sock_filter>>>,
        seccomp_text: String,
        net_enforced: bool,
    }

    impl Layers {
        fn new(sandbox: &Sandbox, place: &Placement, in_view: bool) -> Layers {
            let mut sandbox = sandbox.clone();
            if let Some(tmp) = &place.private_tmp {
                if in_view {
                    // Landlock follows the view's paths, where each of these is a mount of its
                    // own: the rule must name each, not the directory above them.
                    sandbox
                        .writable
                        .extend(["tmp", "home", "shm"].map(|sub| tmp.join(sub)));
                } else {
                    sandbox.writable.push(tmp.clone());
                }
            }
            let sandbox = &sandbox;
            let (landlock_fd, landlock, fs_enforced) = match landlock_abi() {
                Err(why) => (None, format!("not available on this kernel: {why}"), false),
                Ok(version) => match ruleset(version, sandbox, in_view) {
                    Ok(fd) => {
                        let text = if version >= 3 {
                            format!("enforced (ABI v{version})")
                        } else {
                            format!(
                                "partially enforced (ABI v{version}: truncating files outside the workspace is not covered)"
                            )
                        };
                        (Some(Arc::new(fd)), text, true)
                    }
                    Err(why) => (None, format!("not applied: {why}"), false),
                },
            };
            let (seccomp, seccomp_text, net_enforced) = match bpf_program(!sandbox.allow_network) {
                Some(prog) if sandbox.allow_network => (
                    Some(Arc::new(prog)),
                    "network allowed by policy; terminal injection blocked".to_string(),
                    true,
                ),
                Some(prog) => (
                    Some(Arc::new(prog)),
                    "network blocked; terminal injection blocked".to_string(),
                    true,
                ),
                None => (
                    None,
                    "not available on this architecture: network and terminal injection are not blocked"
                        .to_string(),
                    sandbox.allow_network,
                ),
            };
            Layers {
                landlock_fd,
                landlock,
                fs_enforced,
                seccomp,
                seccomp_text,
                net_enforced,
            }
        }
    }

    pub(super) fn prepare(sandbox: &Sandbox, place: &Placement) -> Prepared {
        // The view as planned (its network namespace is settled below, once the layers that
        // could stand in for it are known), or why there is none.
        let planned: Result<namespace::View, String> = if !sandbox.namespaces {
            Err("not requested".to_string())
        } else {
            match (namespaces(), &place.private_tmp) {
                (Err(why), _) => Err(format!("not available: {why}")),
                (Ok(()), None) => {
                    Err("not applied: no private temporary directory could be made".to_string())
                }
                (Ok(()), Some(tmp)) => Ok(namespace::View {
                    writable: sandbox.writable.clone(),
                    readable: sandbox.readable.clone(),
                    protected: sandbox.protected.clone(),
                    masked: sandbox.masked.clone(),
                    tmp: tmp.join("tmp"),
                    home: place.home.clone().map(|h| (tmp.join("home"), h)),
                    cwd: place.cwd.clone(),
                    new_network: !sandbox.allow_network,
                }),
            }
        };
        let mut layers = Layers::new(sandbox, place, planned.is_ok());
        let (view, namespaces, ns_enforced) = match planned {
            Err(why) => (None, why, false),
            Ok(mut view) => {
                // Without the network, the run gets a network namespace of its own. Landlock's
                // scope and seccomp keep it from connecting out, but not from taking a free
                // abstract Unix socket name and accepting a host program's connection (round
                // 17: an X client handed its cookie to a listener on `@/tmp/.X11-unix/X77`):
                // abstract names are per network namespace.
                view.new_network = !sandbox.allow_network;
                match namespace::prepare(&view) {
                    Ok(p) => {
                        let mut kinds = "user, mount, pid, ipc".to_string();
                        if view.new_network {
                            kinds.push_str(", net");
                        }
                        (Some(Arc::new(p)), kinds, true)
                    }
                    Err(why) => {
                        layers = Layers::new(sandbox, place, false);
                        (None, format!("not applied: {why}"), false)
                    }
                }
            }
        };
        Prepared {
            status: SandboxStatus {
                landlock: layers.landlock,
                seccomp: layers.seccomp_text,
                namespaces,
                namespaces_enforced: ns_enforced,
                filesystem_enforced: layers.fs_enforced,
                network_enforced: layers.net_enforced,
            },
            in_view: view.is_some(),
            inner: Inner {
                view,
                landlock_fd: layers.landlock_fd,
                seccomp: layers.seccomp,
            },
        }
    }

    /// The Landlock ruleset. Outside the view it handles every access: reads everywhere,
    /// writes beneath the writable directories. Inside the view, whose root and `/proc` are
    /// mounts the parent cannot name, it handles writes only (the view already decides what
    /// can be read): its rules name host directories, which are the same inodes in the view.
    fn ruleset(version: i32, sandbox: &Sandbox, in_view: bool) -> Result<OwnedFd, String> {
        let abi = ABI::from(version);
        let handled = if in_view {
            AccessFs::from_write(abi)
        } else {
            AccessFs::from_all(abi)
        };
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(handled)
            .map_err(|e| e.to_string())?;
        // ABI 6: no signals to processes outside the command (toolshed itself, other jobs,
        // the user's shell), whether or not a PID namespace hides them.
        ruleset = ruleset.scope(Scope::Signal).map_err(|e| e.to_string())?;
        if !sandbox.allow_network {
            // Landlock ABI 4 also refuses TCP bind/connect: a second fence beside seccomp. ABI 6
            // refuses abstract Unix sockets made outside the command (an X server's, D-Bus's),
            // which seccomp's socket filter lets through and only a network namespace hides.
            ruleset = ruleset
                .handle_access(AccessNet::from_all(abi))
                .map_err(|e| e.to_string())?
                .scope(Scope::AbstractUnixSocket)
                .map_err(|e| e.to_string())?;
        }
        let mut created = ruleset.create().map_err(|e| e.to_string())?;
        if !in_view {
            created = created
                .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
                .map_err(|e| e.to_string())?;
        }
        let created = created
            .add_rules(path_beneath_rules(&sandbox.writable, handled))
            .map_err(|e| e.to_string())?
            .add_rules(path_beneath_rules(DEVICES, handled))
            .map_err(|e| e.to_string())?;
        let fd: Option<OwnedFd> = created.into();
        fd.ok_or_else(|| "the kernel accepted no ruleset".to_string())
    }

    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 0xC000_003E;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 0xC000_00B7;

    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JEQ_K: u16 = 0x15;
    const BPF_JSET_K: u16 = 0x45;
    const BPF_RET_K: u16 = 0x06;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_KILL_PROCESS: u32 = 0x8000_0000;

    fn stmt(code: u16, k: u32) -> libc::sock_filter {
        libc::sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
        libc::sock_filter { code, jt, jf, k }
    }

    /// Always: ioctl(TIOCSTI) and ioctl(TIOCLINUX), which type into a terminal, fail with EPERM.
    /// With `block_network`: socket() with any family but AF_UNIX fails with EACCES and io_uring
    /// (which can open sockets without the socket syscall) with ENOSYS. On x86_64 the x32
    /// syscall range fails with EPERM; a foreign architecture's syscall ABI kills the process.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn bpf_program(block_network: bool) -> Option<Vec<libc::sock_filter>> {
        const TIOCSTI: u32 = 0x5412;
        const TIOCLINUX: u32 = 0x541C;
        let ioctl = libc::SYS_ioctl as u32;
        let socket = libc::SYS_socket as u32;
        let uring = libc::SYS_io_uring_setup as u32;
        let errno = |e: i32| stmt(BPF_RET_K, RET_ERRNO | e as u32);
        let mut prog = vec![
            /* 0 */ stmt(BPF_LD_W_ABS, 4), // seccomp_data.arch
            /* 1 */ jump(BPF_JEQ_K, AUDIT_ARCH, 1, 0),
            /* 2 */ stmt(BPF_RET_K, RET_KILL_PROCESS),
            /* 3 */ stmt(BPF_LD_W_ABS, 0), // seccomp_data.nr
            /* 4 */ jump(BPF_JSET_K, 0x4000_0000, 0, 1),
            /* 5 */ errno(libc::EPERM),
            /* 6 */ jump(BPF_JEQ_K, ioctl, 0, 5),
            /* 7 */
            stmt(BPF_LD_W_ABS, 24), // low half of seccomp_data.args[1]: the request
            /* 8 */ jump(BPF_JEQ_K, TIOCSTI, 2, 0),
            /* 9 */ jump(BPF_JEQ_K, TIOCLINUX, 1, 0),
            /* 10 */ stmt(BPF_RET_K, RET_ALLOW),
            /* 11 */ errno(libc::EPERM),
        ];
        if block_network {
            prog.extend([
                /* 12 */ jump(BPF_JEQ_K, uring, 0, 1),
                /* 13 */ errno(libc::ENOSYS),
                /* 14 */ jump(BPF_JEQ_K, socket, 1, 0),
                /* 15 */ stmt(BPF_RET_K, RET_ALLOW),
                /* 16 */
                stmt(BPF_LD_W_ABS, 16), // low half of seccomp_data.args[0]: the family
                /* 17 */ jump(BPF_JEQ_K, libc::AF_UNIX as u32, 0, 1),
                /* 18 */ stmt(BPF_RET_K, RET_ALLOW),
                /* 19 */ errno(libc::EACCES),
            ]);
        } else {
            prog.push(/* 12 */ stmt(BPF_RET_K, RET_ALLOW));
        }
        Some(prog)
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn bpf_program(_block_network: bool) -> Option<Vec<libc::sock_filter>> {
        None
    }

    impl Inner {
        /// Enters the namespace view (the hook forks there: see `namespace::Prepared::enter`).
        pub(super) fn view_hook(
            &self,
        ) -> Option<impl Fn() -> io::Result<()> + Send + Sync + 'static> {
            let view = self.view.clone()?;
            Some(move || view.enter())
        }

        pub(super) fn child_hook(&self) -> impl Fn() -> io::Result<()> + Send + Sync + 'static {
            let landlock = self.landlock_fd.clone();
            let seccomp = self.seccomp.clone();
            // The view drops every capability once it is built; without it, drop them here.
            let drop_caps = self.view.is_none();
            move || {
                if drop_caps {
                    namespace::drop_capabilities()?;
                }
                if landlock.is_none() && seccomp.is_none() {
                    return Ok(());
                }
                // SAFETY: this runs in the forked child before exec. It only makes raw syscalls
                // (prctl, landlock_restrict_self, seccomp) on a file descriptor and a filter
                // array that the parent prepared before forking and that stay alive (the `Arc`s
                // are owned by this closure). Nothing here allocates, locks or unwinds; errors
                // are returned as raw OS errors, which `io::Error` stores without allocating.
                #[allow(unsafe_code)]
                unsafe {
                    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    if let Some(fd) = &landlock
                        && libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32)
                            != 0
                    {
                        return Err(io::Error::last_os_error());
                    }
                    if let Some(filter) = &seccomp {
                        let prog = libc::sock_fprog {
                            len: filter.len() as u16,
                            filter: filter.as_ptr() as *mut libc::sock_filter,
                        };
                        if libc::syscall(
                            libc::SYS_seccomp,
                            1u32, // SECCOMP_SET_MODE_FILTER
                            0u32,
                            &prog as *const libc::sock_fprog,
                        ) != 0
                        {
                            return Err(io::Error::last_os_error());
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Placement, Prepared, Sandbox, SandboxStatus};

    pub(super) fn probe() -> SandboxStatus {
        SandboxStatus {
            landlock: "not available on this operating system".into(),
            seccomp: "not available on this operating system".into(),
            namespaces: "not available on this operating system".into(),
            namespaces_enforced: false,
            filesystem_enforced: false,
            network_enforced: false,
        }
    }

    pub(super) fn prepare(sandbox: &Sandbox, _place: &Placement) -> Prepared {
        let mut status = probe();
        status.network_enforced = sandbox.allow_network;
        Prepared {
            status,
            in_view: false,
        }
    }
}
