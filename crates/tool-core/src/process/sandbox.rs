//! The operating-system sandbox of child processes on Linux: Landlock (writes only beneath the
//! allowed directories, reads everywhere) and a seccomp filter that refuses network sockets.
//!
//! Everything that allocates or can fail in an interesting way (opening the paths, building the
//! ruleset, assembling the BPF program) happens in the parent before the fork, in [`prepare`].
//! The child only makes three syscalls between fork and exec ([`Prepared::apply_in_child`]).

use std::path::PathBuf;

use serde::Serialize;

/// What a sandboxed child may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// Directories (and files) beneath which the child may create, change and delete files. A
    /// private temporary directory is added by the process helper and exported as `TMPDIR`.
    pub writable: Vec<PathBuf>,
    /// Whether the child may open Internet sockets (IPv4, IPv6, packet). Unix sockets always work.
    pub allow_network: bool,
}

/// What the sandbox actually enforced for one child, in words a model or a human can read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxStatus {
    /// `enforced (ABI v5)`, `partially enforced (ABI v2: …)` or `not available on this kernel: …`.
    pub landlock: String,
    /// `network blocked`, `network allowed by policy` or `not available …`.
    pub seccomp: String,
    /// Whether writes outside the allowed directories are refused by the kernel.
    pub filesystem_enforced: bool,
    /// Whether network sockets are refused by the kernel (always true when network is allowed,
    /// since there is nothing to enforce then).
    pub network_enforced: bool,
}

impl SandboxStatus {
    /// Whether both halves hold.
    pub fn fully_enforced(&self) -> bool {
        self.filesystem_enforced && self.network_enforced
    }

    /// One line: `landlock: …; seccomp: …`.
    pub fn summary(&self) -> String {
        format!("landlock: {}; seccomp: {}", self.landlock, self.seccomp)
    }
}

/// What the kernel offers, probed without restricting anything.
pub fn probe() -> SandboxStatus {
    imp::probe()
}

/// A sandbox ready to apply in a forked child.
pub(crate) struct Prepared {
    pub(crate) status: SandboxStatus,
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

/// Builds the Landlock ruleset and the seccomp program in the parent.
pub(crate) fn prepare(sandbox: &Sandbox) -> Prepared {
    imp::prepare(sandbox)
}

impl Prepared {
    /// Installs the sandbox in the calling process. Runs in the child between fork and exec, so
    /// it only makes raw syscalls on data prepared earlier: no allocation, no locks.
    #[cfg(target_os = "linux")]
    pub(crate) fn child_hook(&self) -> impl Fn() -> std::io::Result<()> + Send + Sync + 'static {
        self.inner.child_hook()
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::sync::Arc;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
        RulesetCreatedAttr, path_beneath_rules,
    };

    use super::{Prepared, Sandbox, SandboxStatus};

    /// Device files every program expects to write (`> /dev/null`).
    const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

    pub(super) struct Inner {
        landlock_fd: Option<Arc<OwnedFd>>,
        seccomp: Option<Arc<Vec<libc::sock_filter>>>,
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
        SandboxStatus {
            landlock,
            seccomp: "available".into(),
            filesystem_enforced: fs,
            network_enforced: true,
        }
    }

    pub(super) fn prepare(sandbox: &Sandbox) -> Prepared {
        let (landlock_fd, landlock, fs_enforced) = match landlock_abi() {
            Err(why) => (None, format!("not available on this kernel: {why}"), false),
            Ok(version) => match ruleset(version, sandbox) {
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
        let (seccomp, seccomp_text, net_enforced) = if sandbox.allow_network {
            (None, "network allowed by policy".to_string(), true)
        } else {
            match bpf_program() {
                Some(prog) => (Some(Arc::new(prog)), "network blocked".to_string(), true),
                None => (
                    None,
                    "not available on this architecture: network is not blocked".to_string(),
                    false,
                ),
            }
        };
        Prepared {
            status: SandboxStatus {
                landlock,
                seccomp: seccomp_text,
                filesystem_enforced: fs_enforced,
                network_enforced: net_enforced,
            },
            inner: Inner {
                landlock_fd,
                seccomp,
            },
        }
    }

    fn ruleset(version: i32, sandbox: &Sandbox) -> Result<OwnedFd, String> {
        let abi = ABI::from(version);
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(abi))
            .map_err(|e| e.to_string())?;
        if !sandbox.allow_network {
            // Landlock ABI 4 also refuses TCP bind/connect: a second fence beside seccomp.
            ruleset = ruleset
                .handle_access(AccessNet::from_all(abi))
                .map_err(|e| e.to_string())?;
        }
        let created = ruleset
            .create()
            .map_err(|e| e.to_string())?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
            .map_err(|e| e.to_string())?
            .add_rules(path_beneath_rules(
                &sandbox.writable,
                AccessFs::from_all(abi),
            ))
            .map_err(|e| e.to_string())?
            .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(abi)))
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

    /// socket() with any family but AF_UNIX fails with EACCES; io_uring (which can open sockets
    /// without the socket syscall) fails with ENOSYS; on x86_64 the x32 syscall range fails with
    /// EPERM; a foreign architecture's syscall ABI kills the process.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn bpf_program() -> Option<Vec<libc::sock_filter>> {
        let socket = libc::SYS_socket as u32;
        let uring = libc::SYS_io_uring_setup as u32;
        Some(vec![
            /* 0 */ stmt(BPF_LD_W_ABS, 4), // seccomp_data.arch
            /* 1 */ jump(BPF_JEQ_K, AUDIT_ARCH, 1, 0),
            /* 2 */ stmt(BPF_RET_K, RET_KILL_PROCESS),
            /* 3 */ stmt(BPF_LD_W_ABS, 0), // seccomp_data.nr
            /* 4 */ jump(BPF_JSET_K, 0x4000_0000, 0, 1),
            /* 5 */ stmt(BPF_RET_K, RET_ERRNO | libc::EPERM as u32),
            /* 6 */ jump(BPF_JEQ_K, uring, 0, 1),
            /* 7 */ stmt(BPF_RET_K, RET_ERRNO | libc::ENOSYS as u32),
            /* 8 */ jump(BPF_JEQ_K, socket, 1, 0),
            /* 9 */ stmt(BPF_RET_K, RET_ALLOW),
            /* 10 */
            stmt(BPF_LD_W_ABS, 16), // low half of seccomp_data.args[0]: the family
            /* 11 */ jump(BPF_JEQ_K, libc::AF_UNIX as u32, 0, 1),
            /* 12 */ stmt(BPF_RET_K, RET_ALLOW),
            /* 13 */ stmt(BPF_RET_K, RET_ERRNO | libc::EACCES as u32),
        ])
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn bpf_program() -> Option<Vec<libc::sock_filter>> {
        None
    }

    impl Inner {
        pub(super) fn child_hook(&self) -> impl Fn() -> io::Result<()> + Send + Sync + 'static {
            let landlock = self.landlock_fd.clone();
            let seccomp = self.seccomp.clone();
            move || {
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
    use super::{Prepared, Sandbox, SandboxStatus};

    pub(super) fn probe() -> SandboxStatus {
        SandboxStatus {
            landlock: "not available on this operating system".into(),
            seccomp: "not available on this operating system".into(),
            filesystem_enforced: false,
            network_enforced: false,
        }
    }

    pub(super) fn prepare(sandbox: &Sandbox) -> Prepared {
        let mut status = probe();
        status.network_enforced = sandbox.allow_network;
        Prepared { status }
    }
}
