//! The namespace view of a sandboxed child on Linux: a new user, mount, PID and IPC namespace
//! (and a network namespace when the run may not use the network), in which the filesystem is
//! built from an allow list.
//!
//! The view holds: the system directories read-only (`/usr`, `/etc`, the `/bin` and `/lib`
//! links or directories, `/opt`), the readable roots read-only, the writable roots read-write
//! with their protected paths (`.git`, `toolshed.toml`, …) read-only on top, a private `/tmp`,
//! an empty private `$HOME`, a fresh `/proc` of the new PID namespace (the parent is not in it),
//! and a `/dev` with `null`, `zero`, `full`, `random` and `urandom` only (no terminal). Programs
//! on the deny list are masked by `/dev/null` mounted over them. Everything else of the machine
//! does not exist for the child.
//!
//! The namespaces are made in-process, in the forked child, with no helper program: the child
//! joins a user and a network namespace made once per process ([`shared`]; where that fails it
//! makes its own with `unshare` and the id maps), unshares the mount, PID and IPC namespaces,
//! and clones the new PID namespace's init, which shares its memory (so making it costs no copy
//! of Toolshed's page tables). The init does the mounts and two `pivot_root`s, the way
//! bubblewrap builds its root, then waits to be killed; the child forks the command (PID 2 of
//! the namespace), waits for it, kills the init (which ends whatever else is left in the
//! namespace) and exits as the command did. All paths and map lines are prepared in the parent
//! ([`prepare`]): between fork and exec only raw syscalls run, on memory allocated before the
//! fork.
//!
//! Inside the view the command keeps its path names (the workspace is mounted at the same
//! absolute path), so output and error messages mean the same inside and out.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// System directories (or the links that stand for them) mounted read-only in the view.
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// The init's stack: [`Prepared::build`] and a few syscalls run on it.
const INIT_STACK: usize = 64 * 1024;

/// Memory for the init's stack, allocated before the fork; only the init writes it.
#[derive(Debug)]
struct Stack {
    base: *mut u8,
    len: usize,
}

// SAFETY: the memory is written only by the init, a process of its own (it shares the
// memory of a post-fork child, never of Toolshed's threads).
#[allow(unsafe_code)]
unsafe impl Send for Stack {}
// SAFETY: as above.
#[allow(unsafe_code)]
unsafe impl Sync for Stack {}

impl Stack {
    fn new(len: usize) -> Stack {
        let base = Box::into_raw(vec![0u8; len].into_boxed_slice()).cast::<u8>();
        Stack { base, len }
    }

    /// The highest 16-byte aligned address of the stack (it grows down).
    fn top(&self) -> *mut libc::c_void {
        ((self.base as usize + self.len) & !0xf) as *mut libc::c_void
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are those of the boxed slice made in `new`.
        #[allow(unsafe_code)]
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.base, self.len,
            )));
        }
    }
}

/// Device nodes bound into the view's `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// What the view is made of, in host paths.
#[derive(Debug, Clone, Default)]
pub(crate) struct View {
    /// Read-write directories (the writable roots).
    pub(crate) writable: Vec<PathBuf>,
    /// Extra read-only directories or files (the readable roots).
    pub(crate) readable: Vec<PathBuf>,
    /// Paths inside the writable ones that are mounted read-only on top (existing ones only).
    pub(crate) protected: Vec<PathBuf>,
    /// Files replaced by `/dev/null` (denied programs, files no tool may read) and directories
    /// replaced by an empty read-only one.
    pub(crate) masked: Vec<PathBuf>,
    /// The host directory mounted as the view's `/tmp`.
    pub(crate) tmp: PathBuf,
    /// The host directory mounted at `home` (empty, private), and the path it is mounted at.
    pub(crate) home: Option<(PathBuf, PathBuf)>,
    /// The working directory inside the view.
    pub(crate) cwd: PathBuf,
    /// Give the child a network namespace of its own (no interfaces but loopback, down).
    pub(crate) new_network: bool,
}

/// One step of building the view, with every path already a C string.
#[derive(Debug)]
enum Op {
    /// `mkdir`, where an existing directory is fine.
    Mkdir(CString),
    /// Create an empty file to mount a file over.
    Touch(CString),
    /// A symbolic link.
    Symlink { target: CString, link: CString },
    /// A recursive bind mount, made read-only (recursively) when asked.
    Bind {
        src: CString,
        dst: CString,
        readonly: bool,
        devices: bool,
    },
    /// A symbolic link bound onto itself (not followed), so it cannot be removed or renamed.
    BindLink { src: CString, dst: CString },
    /// A fresh `proc` of the new PID namespace.
    Proc(CString),
    /// An empty `tmpfs`.
    Tmpfs(CString),
    /// An empty, read-only `tmpfs` over a directory that must not be seen.
    Hide(CString),
}

/// Everything the child needs, allocated before the fork.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The process that spawns the command (Toolshed).
    parent: libc::pid_t,
    flags: libc::c_int,
    /// The shared user namespace to join, and the shared network namespace when the run may
    /// not use the network ([`shared`]); `None` makes both anew.
    join: Option<(libc::c_int, Option<libc::c_int>)>,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    ops: Vec<Op>,
    cwd: CString,
    /// The init's stack (see [`Prepared::enter`]).
    init_stack: Stack,
    /// The view's root (device, inode) as the init saw it when it was built: written by the
    /// init, read by the command, in the memory they share.
    root: (std::sync::atomic::AtomicU64, std::sync::atomic::AtomicU64),
}

fn cstr(p: impl AsRef<[u8]>) -> Result<CString, String> {
    CString::new(p.as_ref().to_vec()).map_err(|_| "a path contains a NUL byte".to_string())
}

/// `/newroot` + an absolute host path.
fn inside(path: &Path) -> Result<CString, String> {
    let mut bytes = b"/newroot".to_vec();
    bytes.extend_from_slice(path.as_os_str().as_bytes());
    cstr(bytes)
}

/// `/oldroot` + an absolute host path: where the host's file is while the view is built.
fn outside(path: &Path) -> Result<CString, String> {
    let mut bytes = b"/oldroot".to_vec();
    bytes.extend_from_slice(path.as_os_str().as_bytes());
    cstr(bytes)
}

/// `mkdir -p` of every directory above `path` in the view (and of `path` when `dir`).
fn mkdirs(
    ops: &mut Vec<Op>,
    made: &mut Vec<PathBuf>,
    path: &Path,
    dir: bool,
) -> Result<(), String> {
    let mut chain: Vec<&Path> = path.ancestors().skip(usize::from(!dir)).collect();
    chain.reverse();
    for p in chain {
        if p == Path::new("/") || made.iter().any(|m| m == p) {
            continue;
        }
        made.push(p.to_path_buf());
        ops.push(Op::Mkdir(inside(p)?));
    }
    Ok(())
}

/// The host paths are canonical here: a link in a root is followed once, in the parent, so the
/// child never mounts through a link it did not see.
fn canonical(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok()
}

/// The entries from the writable root that holds `path` down to `path`, in host paths whose
/// parents are real directories: each directory above `path` (`false`) and each symbolic link,
/// `path` included (`true`). The walk follows each link to go on, and stops where a name is
/// missing or leads out of the root.
fn on_the_way(writable: &[(PathBuf, PathBuf)], path: &Path) -> Vec<(PathBuf, bool)> {
    let mut found = Vec::new();
    let Some((root, base)) = writable
        .iter()
        .filter(|(w, _)| path.starts_with(w))
        .max_by(|a, b| a.0.cmp(&b.0))
    else {
        return found;
    };
    let Ok(rest) = path.strip_prefix(root) else {
        return found;
    };
    let base = base.clone();
    let names: Vec<_> = rest.components().collect();
    let mut cur = base.clone();
    for (i, name) in names.iter().enumerate() {
        let std::path::Component::Normal(name) = name else {
            break;
        };
        let next = cur.join(name);
        let Ok(meta) = std::fs::symlink_metadata(&next) else {
            break;
        };
        let last = i + 1 == names.len();
        if meta.file_type().is_symlink() {
            found.push((next.clone(), true));
            match canonical(&next) {
                Some(to) if to.starts_with(&base) => cur = to,
                _ => break,
            }
        } else {
            if !last && meta.is_dir() {
                found.push((next.clone(), false));
            }
            cur = next;
        }
    }
    found
}

/// Lays out the steps of the view.
pub(crate) fn prepare(view: &View) -> Result<Prepared, String> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    let join = shared();
    if join.is_none() {
        flags |= libc::CLONE_NEWUSER;
        if view.new_network {
            flags |= libc::CLONE_NEWNET;
        }
    }
    let mut ops = Vec::new();
    let mut made: Vec<PathBuf> = Vec::new();

    // System directories: links stay links (a merged /usr), directories are bound read-only.
    for sys in SYSTEM {
        let path = Path::new(sys);
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(path).map_err(|e| format!("{sys}: {e}"))?;
            ops.push(Op::Symlink {
                target: cstr(target.as_os_str().as_bytes())?,
                link: inside(path)?,
            });
        } else if meta.is_dir() {
            mkdirs(&mut ops, &mut made, path, true)?;
            ops.push(Op::Bind {
                src: outside(path)?,
                dst: inside(path)?,
                readonly: true,
                devices: false,
            });
        }
    }
    // A resolver configuration that lives under /run (systemd-resolved) is bound with its
    // directory, so that name lookups work where the network is allowed.
    if let Ok(target) = std::fs::read_link("/etc/resolv.conf") {
        let target = Path::new("/etc").join(target);
        if let Some(dir) = canonical(&target).and_then(|t| t.parent().map(Path::to_path_buf))
            && !SYSTEM.iter().any(|s| dir.starts_with(s))
        {
            mkdirs(&mut ops, &mut made, &dir, true)?;
            ops.push(Op::Bind {
                src: outside(&dir)?,
                dst: inside(&dir)?,
                readonly: true,
                devices: false,
            });
        }
    }

    // /dev: a few device nodes and the usual links, nothing else (no tty, no pts, no disks).
    let dev = Path::new("/dev");
    mkdirs(&mut ops, &mut made, dev, true)?;
    ops.push(Op::Tmpfs(inside(dev)?));
    for name in DEVICES {
        let node = dev.join(name);
        if std::fs::symlink_metadata(&node).is_err() {
            continue;
        }
        ops.push(Op::Touch(inside(&node)?));
        ops.push(Op::Bind {
            src: outside(&node)?,
            dst: inside(&node)?,
            readonly: false,
            devices: true,
        });
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        ops.push(Op::Symlink {
            target: cstr(target)?,
            link: inside(&dev.join(link))?,
        });
    }
    // /dev/shm is the private directory's `shm/`, so shared memory works and stays private.
    let shm = dev.join("shm");
    ops.push(Op::Mkdir(inside(&shm)?));
    if let Some(tmp_root) = view.tmp.parent()
        && tmp_root.join("shm").is_dir()
    {
        ops.push(Op::Bind {
            src: outside(&tmp_root.join("shm"))?,
            dst: inside(&shm)?,
            readonly: false,
            devices: false,
        });
    }

    let proc = Path::new("/proc");
    mkdirs(&mut ops, &mut made, proc, true)?;
    ops.push(Op::Proc(inside(proc)?));

    // The trees: /tmp, $HOME, readable and writable roots, parents before children, so a
    // writable root inside a readable one (or inside $HOME) is mounted on top of it.
    // Each writable root as given and canonical, resolved once.
    let roots: Vec<(PathBuf, PathBuf)> = view
        .writable
        .iter()
        .filter_map(|w| canonical(w).map(|c| (w.clone(), c)))
        .collect();
    let writable: Vec<PathBuf> = roots.iter().map(|(_, c)| c.clone()).collect();
    let mut trees: Vec<(PathBuf, PathBuf, bool)> = Vec::new(); // (host source, view path, readonly)
    trees.push((view.tmp.clone(), PathBuf::from("/tmp"), false));
    if let Some((host, at)) = &view.home
        && at.is_absolute()
        && at != Path::new("/")
        && !SYSTEM.iter().any(|s| at.starts_with(s))
    {
        trees.push((host.clone(), at.clone(), false));
    }
    for r in &view.readable {
        if let Some(c) = canonical(r) {
            trees.push((c.clone(), c, true));
        }
    }
    for c in &writable {
        trees.push((c.clone(), c.clone(), false));
    }
    trees.sort_by_key(|(_, at, _)| at.components().count());
    for (src, at, readonly) in &trees {
        let is_dir = std::fs::metadata(src).map(|m| m.is_dir()).unwrap_or(false);
        mkdirs(&mut ops, &mut made, at, is_dir)?;
        if !is_dir {
            ops.push(Op::Touch(inside(at)?));
        }
        ops.push(Op::Bind {
            src: outside(src)?,
            dst: inside(at)?,
            readonly: *readonly,
            devices: false,
        });
    }
    // The directories between a writable root and a protected path inside it are bound onto
    // themselves (still writable): a mount point cannot be renamed or removed (EBUSY), so
    // `mv config elsewhere` cannot carry `config/prod.yaml` out from under its protection and
    // leave the name free for a new file. A symbolic link on the way (`.git -> dotgit`, or the
    // protected path itself) is bound onto itself the same way: the read-only mount is on the
    // directory it leads to, and without its own mount the link is an entry in a writable
    // directory that a command could remove and replace with a real `.git` of its own.
    let mut anchors: std::collections::BTreeSet<(usize, PathBuf, bool)> =
        std::collections::BTreeSet::new();
    let mut anchor = |path: &Path, is_link: bool| {
        anchors.insert((path.components().count(), path.to_path_buf(), is_link));
    };
    for p in &view.protected {
        for (path, is_link) in on_the_way(&roots, p) {
            anchor(&path, is_link);
        }
        let Some(c) = canonical(p) else { continue };
        let Some(root) = writable.iter().filter(|w| c.starts_with(w)).max() else {
            continue;
        };
        let mut a = c.parent();
        while let Some(dir) = a {
            if dir == root.as_path() || !dir.starts_with(root) {
                break;
            }
            anchor(dir, false);
            a = dir.parent();
        }
    }
    for (_, a, is_link) in &anchors {
        ops.push(if *is_link {
            Op::BindLink {
                src: outside(a)?,
                dst: inside(a)?,
            }
        } else {
            Op::Bind {
                src: outside(a)?,
                dst: inside(a)?,
                readonly: false,
                devices: false,
            }
        });
    }
    // Protected paths on top, read-only; then the masks. Both must already exist in the view
    // (they are inside a bound tree), so nothing is created for them.
    for p in &view.protected {
        let Some(c) = canonical(p) else { continue };
        if !writable.iter().any(|w| c.starts_with(w)) {
            continue; // outside every writable root: read-only already
        }
        ops.push(Op::Bind {
            src: outside(&c)?,
            dst: inside(&c)?,
            readonly: true,
            devices: false,
        });
    }
    for m in &view.masked {
        let Some(c) = canonical(m) else { continue };
        // Only what the view shows needs masking (a program in the hidden real $HOME is not
        // there at all, and there would be nothing to mount over).
        let shown = SYSTEM.iter().any(|s| c.starts_with(s))
            || trees.iter().any(|(src, _, _)| c.starts_with(src));
        if !shown {
            continue;
        }
        match std::fs::metadata(&c) {
            Ok(meta) if meta.is_dir() => {
                ops.push(Op::Hide(inside(&c)?));
                continue;
            }
            Ok(_) => {}
            Err(_) => continue,
        }
        ops.push(Op::Bind {
            src: cstr(b"/oldroot/dev/null")?,
            dst: inside(&c)?,
            readonly: true,
            devices: true,
        });
    }

    Ok(Prepared {
        parent: rustix::process::getpid().as_raw_nonzero().get(),
        flags,
        join: join.map(|s| (s.user, view.new_network.then_some(s.net))),
        uid_map: format!("{uid} {uid} 1\n").into_bytes(),
        gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        ops,
        cwd: cstr(view.cwd.as_os_str().as_bytes())?,
        init_stack: Stack::new(INIT_STACK),
        root: Default::default(),
    })
}

// The child side: raw syscalls only, on the data above.

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;
const MOUNT_ATTR_NOSUID: u64 = 0x0000_0002;
const MOUNT_ATTR_NODEV: u64 = 0x0000_0004;
const AT_RECURSIVE: libc::c_uint = 0x8000;

fn last() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Runs a syscall-returning expression and turns -1 into the errno.
macro_rules! sys {
    ($e:expr) => {{
        // SAFETY: see `Prepared::enter`: a raw syscall on prepared, live data.
        #[allow(unsafe_code)]
        let r = unsafe { $e };
        if r == -1 { Err(last()) } else { Ok(r) }
    }};
}

/// Writes `data` to the file at `path` (a `/proc/self/…` map).
fn write_file(path: &[u8], data: &[u8]) -> std::io::Result<()> {
    let fd = sys!(libc::open(
        path.as_ptr().cast(),
        libc::O_WRONLY | libc::O_CLOEXEC
    ))?;
    let n = sys!(libc::write(fd, data.as_ptr().cast(), data.len()));
    // SAFETY: closing the descriptor opened above.
    #[allow(unsafe_code)]
    unsafe {
        libc::close(fd);
    }
    n.map(|_| ())
}

fn mkdir(path: &std::ffi::CStr) -> std::io::Result<()> {
    match sys!(libc::mkdir(path.as_ptr(), 0o755)) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
        Err(e) => Err(e),
    }
}

fn mount(
    src: *const libc::c_char,
    dst: *const libc::c_char,
    fstype: *const libc::c_char,
    flags: libc::c_ulong,
    data: *const libc::c_char,
) -> std::io::Result<()> {
    sys!(libc::mount(src, dst, fstype, flags, data.cast())).map(|_| ())
}

fn null() -> *const libc::c_char {
    std::ptr::null()
}

/// Makes the mount at `dst` and every mount below it read-only (and nosuid, and nodev unless it
/// holds devices). Falls back to a remount of the top mount on kernels without mount_setattr.
fn seal(dst: &CString, readonly: bool, devices: bool) -> std::io::Result<()> {
    let mut set = MOUNT_ATTR_NOSUID;
    if readonly {
        set |= MOUNT_ATTR_RDONLY;
    }
    if !devices {
        set |= MOUNT_ATTR_NODEV;
    }
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let r = sys!(libc::syscall(
        libc::SYS_mount_setattr,
        libc::AT_FDCWD,
        dst.as_ptr(),
        AT_RECURSIVE,
        &attr as *const MountAttr,
        std::mem::size_of::<MountAttr>()
    ));
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
            let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_NOSUID;
            if readonly {
                flags |= libc::MS_RDONLY;
            }
            if !devices {
                flags |= libc::MS_NODEV;
            }
            mount(null(), dst.as_ptr(), null(), flags, null())
        }
        Err(e) => Err(e),
    }
}

const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// Binds the link at `src` onto the link at `dst`, following neither (open_tree(2) and
/// move_mount(2): mount(2) would follow both).
fn bind_link(src: &CString, dst: &CString) -> std::io::Result<()> {
    let fd = sys!(libc::syscall(
        libc::SYS_open_tree,
        libc::AT_FDCWD,
        src.as_ptr(),
        OPEN_TREE_CLONE
            | libc::O_CLOEXEC as libc::c_uint
            | libc::AT_SYMLINK_NOFOLLOW as libc::c_uint
    ))? as libc::c_int;
    let moved = sys!(libc::syscall(
        libc::SYS_move_mount,
        fd,
        c"".as_ptr(),
        libc::AT_FDCWD,
        dst.as_ptr(),
        MOVE_MOUNT_F_EMPTY_PATH
    ));
    // SAFETY: closing the descriptor open_tree returned.
    #[allow(unsafe_code)]
    unsafe {
        libc::close(fd);
    }
    moved.map(|_| ())
}

impl Prepared {
    /// Enters the namespaces and builds the view. Called in the forked child before exec; only
    /// makes raw syscalls on data prepared before the fork.
    ///
    /// The calling process clones the namespace's init (which never returns: see
    /// [`init_main`]) and forks the command, which returns from here and goes on to exec as
    /// PID 2 of the new PID namespace; the calling process never returns ([`relay`]).
    pub(crate) fn enter(&self) -> std::io::Result<()> {
        // If Toolshed dies (even by SIGKILL, when nothing of it can clean up), this child dies,
        // then the init (which dies with this child), and with the init every process of the
        // namespace. (The signal follows the spawning thread: Toolshed spawns from its async
        // workers, which live as long as it does.)
        sys!(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
        if sys!(libc::getppid())? != self.parent {
            // Toolshed died before the line above took effect.
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        match self.join {
            Some((user, net)) => {
                sys!(libc::setns(user, libc::CLONE_NEWUSER))?;
                if let Some(net) = net {
                    sys!(libc::setns(net, libc::CLONE_NEWNET))?;
                }
                sys!(libc::unshare(self.flags))?;
            }
            None => {
                sys!(libc::unshare(self.flags))?;
                write_file(b"/proc/self/setgroups\0", b"deny")?;
                write_file(b"/proc/self/uid_map\0", &self.uid_map)?;
                write_file(b"/proc/self/gid_map\0", &self.gid_map)?;
            }
        }
        // The init of the new PID namespace shares this process's memory (a clone with
        // CLONE_VM, on a stack of its own): making it copies no page tables, and its exit
        // frees none. It builds the view (a fresh /proc must be mounted from inside the new
        // PID namespace), says so on this pipe, then only waits to be killed, reaping what is
        // orphaned in the namespace meanwhile.
        let mut ready: [libc::c_int; 2] = [-1, -1];
        sys!(libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC))?;
        let init_args = InitArgs {
            view: self,
            ready: ready[1],
        };
        let stack_top = self.init_stack.top();
        // SAFETY: glibc's clone wrapper (a raw syscall, no atfork handlers) with a stack that
        // lives as long as this process (it is never freed here: this process execs or
        // exits); `init_args` outlives the init's use of it, which ends before it writes to
        // the pipe read below.
        #[allow(unsafe_code)]
        let init = sys!(libc::clone(
            init_main,
            stack_top,
            libc::CLONE_VM | libc::SIGCHLD,
            (&init_args as *const InitArgs<'_>).cast_mut().cast(),
        ))?;
        // SAFETY: closing this side's copy of the write end.
        #[allow(unsafe_code)]
        unsafe {
            libc::close(ready[1]);
        }
        let mut code: i32 = 0;
        // SAFETY: reading four bytes into a local.
        #[allow(unsafe_code)]
        let n = unsafe { libc::read(ready[0], (&mut code as *mut i32).cast(), 4) };
        // SAFETY: closing the read end.
        #[allow(unsafe_code)]
        unsafe {
            libc::close(ready[0]);
        }
        if n != 4 || code != 0 {
            // SAFETY: the init is this process's child.
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(init, libc::SIGKILL);
                libc::waitpid(init, std::ptr::null_mut(), 0);
            }
            return Err(std::io::Error::from_raw_os_error(if n == 4 {
                code
            } else {
                libc::ECHILD
            }));
        }
        // The command: PID 2 of the namespace (its parent, this process, is outside it), so it
        // keeps the usual signal semantics (`kill $$` works).
        let pid = sys!(libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_long,
            0,
            0,
            0,
            0
        ))?;
        if pid != 0 {
            relay(pid as libc::pid_t, init);
        }
        sys!(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
        // The pivots moved this process's root with the init's (pivot_root moves every root
        // of the namespace that was the old one); the init wrote down the view's root, and a
        // command whose root is anything else does not run.
        let mut st: libc::stat = zeroed_stat();
        sys!(libc::stat(c"/".as_ptr(), &mut st))?;
        let (dev, ino) = (
            self.root.0.load(std::sync::atomic::Ordering::SeqCst),
            self.root.1.load(std::sync::atomic::Ordering::SeqCst),
        );
        if dev == 0 || st.st_dev != dev || st.st_ino != ino {
            return Err(std::io::Error::from_raw_os_error(libc::EPERM));
        }
        sys!(libc::chdir(self.cwd.as_ptr()))?;
        drop_capabilities()
    }

    fn build(&self) -> std::io::Result<()> {
        // Nothing done here propagates back to the host's mounts.
        mount(
            null(),
            c"/".as_ptr(),
            null(),
            libc::MS_REC | libc::MS_PRIVATE,
            null(),
        )?;
        // A tmpfs holds the new root while it is built; the old root stays reachable at
        // /oldroot after the first pivot (bubblewrap's layout).
        mount(
            c"tmpfs".as_ptr(),
            c"/tmp".as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=0755".as_ptr(),
        )?;
        sys!(libc::chdir(c"/tmp".as_ptr()))?;
        mkdir(c"newroot")?;
        mount(
            c"newroot".as_ptr(),
            c"newroot".as_ptr(),
            null(),
            libc::MS_BIND | libc::MS_REC,
            null(),
        )?;
        mkdir(c"oldroot")?;
        sys!(libc::syscall(
            libc::SYS_pivot_root,
            c"/tmp".as_ptr(),
            c"oldroot".as_ptr()
        ))?;
        sys!(libc::chdir(c"/".as_ptr()))?;

        for op in &self.ops {
            match op {
                Op::Mkdir(p) => mkdir(p)?,
                Op::Touch(p) => {
                    let fd = sys!(libc::open(
                        p.as_ptr(),
                        libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
                        0o644
                    ))?;
                    // SAFETY: closing the descriptor just opened.
                    #[allow(unsafe_code)]
                    unsafe {
                        libc::close(fd);
                    }
                }
                Op::Symlink { target, link } => {
                    match sys!(libc::symlink(target.as_ptr(), link.as_ptr())) {
                        Ok(_) => {}
                        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                        Err(e) => return Err(e),
                    }
                }
                Op::Bind {
                    src,
                    dst,
                    readonly,
                    devices,
                } => {
                    mount(
                        src.as_ptr(),
                        dst.as_ptr(),
                        null(),
                        libc::MS_BIND | libc::MS_REC,
                        null(),
                    )?;
                    seal(dst, *readonly, *devices)?;
                }
                Op::BindLink { src, dst } => bind_link(src, dst)?,
                Op::Proc(p) => mount(
                    c"proc".as_ptr(),
                    p.as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    null(),
                )?,
                Op::Tmpfs(p) => mount(
                    c"tmpfs".as_ptr(),
                    p.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID,
                    c"mode=0755,size=64m".as_ptr(),
                )?,
                Op::Hide(p) => mount(
                    c"tmpfs".as_ptr(),
                    p.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
                    c"mode=0555,size=4k".as_ptr(),
                )?,
            }
        }

        // Let the old root go, then make /newroot the root (the second pivot).
        mount(
            c"oldroot".as_ptr(),
            c"/oldroot".as_ptr(),
            null(),
            libc::MS_REC | libc::MS_PRIVATE,
            null(),
        )?;
        sys!(libc::umount2(c"/oldroot".as_ptr(), libc::MNT_DETACH))?;
        let old = sys!(libc::open(
            c"/".as_ptr(),
            libc::O_DIRECTORY | libc::O_RDONLY | libc::O_CLOEXEC
        ))?;
        sys!(libc::chdir(c"/newroot".as_ptr()))?;
        sys!(libc::syscall(
            libc::SYS_pivot_root,
            c".".as_ptr(),
            c".".as_ptr()
        ))?;
        sys!(libc::fchdir(old))?;
        sys!(libc::umount2(c".".as_ptr(), libc::MNT_DETACH))?;
        // SAFETY: closing the descriptor opened above.
        #[allow(unsafe_code)]
        unsafe {
            libc::close(old);
        }
        sys!(libc::chdir(c"/".as_ptr()))?;
        // The root itself (a directory of a tmpfs) is read-only: only the bound trees are
        // writable.
        mount(
            null(),
            c"/".as_ptr(),
            null(),
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
            null(),
        )?;
        let mut st: libc::stat = zeroed_stat();
        sys!(libc::stat(c"/".as_ptr(), &mut st))?;
        self.root
            .1
            .store(st.st_ino, std::sync::atomic::Ordering::SeqCst);
        self.root
            .0
            .store(st.st_dev, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// A zeroed `struct stat`, for stat(2) to fill.
fn zeroed_stat() -> libc::stat {
    // SAFETY: `struct stat` is plain integers; all zeroes is a valid value.
    #[allow(unsafe_code)]
    unsafe {
        std::mem::zeroed()
    }
}

/// What the init gets: the view to build and the pipe to report on.
struct InitArgs<'a> {
    view: &'a Prepared,
    ready: libc::c_int,
}

/// The init of the view's PID namespace (see [`Prepared::enter`]): builds the view, reports 0
/// or the errno on the pipe, then sleeps until it is killed. Orphans of the namespace are
/// reaped by the kernel (SIGCHLD ignored).
extern "C" fn init_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `InitArgs` of `enter`, alive until the pipe is written; raw
    // syscalls only afterwards.
    #[allow(unsafe_code)]
    unsafe {
        let args = &*(arg as *const InitArgs<'_>);
        let ready = args.ready;
        let mut code: i32 = 0;
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            code = *libc::__errno_location();
        } else if let Err(e) = args.view.build() {
            code = e.raw_os_error().unwrap_or(libc::EIO);
        }
        libc::write(ready, (&code as *const i32).cast(), 4);
        if code != 0 {
            libc::_exit(1);
        }
        libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
        libc::signal(libc::SIGCHLD, libc::SIG_IGN);
        loop {
            libc::pause();
        }
    }
}

/// The child outside the namespace once the command runs: closes every descriptor (so nothing
/// waits on it, and the exec-error pipe closes when the command execs), waits for the command,
/// then kills the init — which ends every process left in the namespace, and returns only
/// once they are gone — and exits as the command did.
fn relay(pid: libc::pid_t, init: libc::pid_t) -> ! {
    // SAFETY: raw syscalls only; this process never returns to Rust code that could allocate.
    #[allow(unsafe_code)]
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            for fd in 0..1024 {
                libc::close(fd);
            }
        }
        let mut status: libc::c_int = 0;
        loop {
            let r = libc::waitpid(pid, &mut status, 0);
            if r == pid {
                break;
            }
            if r == -1 && *libc::__errno_location() != libc::EINTR {
                libc::kill(init, libc::SIGKILL);
                libc::_exit(127);
            }
        }
        libc::kill(init, libc::SIGKILL);
        while libc::waitpid(init, std::ptr::null_mut(), 0) == -1
            && *libc::__errno_location() == libc::EINTR
        {}
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        libc::_exit(127)
    }
}

/// Drops every capability, for good: the command runs with none, even as uid 0, so it cannot
/// unmount or remount the view, nor read the memory or environment of a non-dumpable process
/// of the same user. Without `CAP_SETPCAP` (an unprivileged caller outside a namespace) the
/// secure bits and the bounding set cannot be changed, and there is nothing in them to drop.
pub(crate) fn drop_capabilities() -> std::io::Result<()> {
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
    const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
    const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
    const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
    const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let bits = sys!(libc::prctl(
        libc::PR_SET_SECUREBITS,
        SECBIT_NOROOT
            | SECBIT_NOROOT_LOCKED
            | SECBIT_NO_SETUID_FIXUP
            | SECBIT_NO_SETUID_FIXUP_LOCKED
            | SECBIT_KEEP_CAPS_LOCKED
            | SECBIT_NO_CAP_AMBIENT_RAISE
            | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
        0,
        0,
        0
    ));
    match bits {
        Ok(_) => {}
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
        Err(e) => return Err(e),
    }
    for cap in 0..64 {
        // EINVAL past the last capability this kernel knows.
        // SAFETY: prctl with integer arguments.
        #[allow(unsafe_code)]
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            break;
        }
    }
    sys!(libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0
    ))?;
    let header = Header {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    sys!(libc::syscall(
        libc::SYS_capset,
        &header as *const Header,
        data.as_ptr()
    ))
    .map(|_| ())
}

/// The user namespace (our uid and gid mapped onto themselves) and the network namespace (no
/// interface but a loopback that is down) that every view joins, made once per process.
///
/// Making a network namespace costs about half a millisecond, and tearing one down keeps a
/// kernel worker busy after each command: joining one made once takes microseconds. The
/// commands that share them share nothing else (each has its own mount, PID and IPC
/// namespaces, and no capability in the user namespace once it runs): what two sandboxed
/// commands can reach of each other through them is the loopback (down) and abstract Unix
/// sockets, which only other sandboxed commands of the same Toolshed can see, never the host's.
#[derive(Debug, Clone, Copy)]
struct Shared {
    user: libc::c_int,
    net: libc::c_int,
}

/// [`Shared`], made on first use; `None` where it cannot be made (each view then makes its own).
fn shared() -> Option<Shared> {
    static SHARED: std::sync::OnceLock<Option<Shared>> = std::sync::OnceLock::new();
    *SHARED.get_or_init(|| match make_shared() {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::debug!("no shared namespaces ({e}); each command makes its own");
            None
        }
    })
}

/// Forks a child that makes the two namespaces and waits; opens them through its `/proc`
/// entries (the descriptors keep them alive, close-on-exec); lets the child go.
fn make_shared() -> std::io::Result<Shared> {
    use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let uid_map = format!("{uid} {uid} 1\n").into_bytes();
    let gid_map = format!("{gid} {gid} 1\n").into_bytes();
    let pair = || -> std::io::Result<(OwnedFd, OwnedFd)> {
        let mut fds: [libc::c_int; 2] = [-1, -1];
        sys!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC))?;
        // SAFETY: pipe2 returned two new descriptors that nothing else owns.
        #[allow(unsafe_code)]
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    };
    let (ready_r, ready_w) = pair()?;
    let (release_r, release_w) = pair()?;
    let parent = rustix::process::getpid().as_raw_nonzero().get();
    // A raw clone, not fork(): no atfork handlers; the child makes raw syscalls on the data
    // above and never returns.
    let pid = sys!(libc::syscall(
        libc::SYS_clone,
        libc::SIGCHLD as libc::c_long,
        0,
        0,
        0,
        0
    ))? as libc::pid_t;
    if pid == 0 {
        // SAFETY: raw syscalls only, on memory allocated before the clone.
        #[allow(unsafe_code)]
        unsafe {
            // The parent's ends: the release pipe's write end must be closed here too, or
            // the read below never ends.
            libc::close(release_w.as_raw_fd());
            libc::close(ready_r.as_raw_fd());
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            let ok = libc::getppid() == parent
                && libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) == 0
                && write_file(b"/proc/self/setgroups\0", b"deny").is_ok()
                && write_file(b"/proc/self/uid_map\0", &uid_map).is_ok()
                && write_file(b"/proc/self/gid_map\0", &gid_map).is_ok();
            let byte: u8 = if ok { b'y' } else { b'n' };
            libc::write(ready_w.as_raw_fd(), (&byte as *const u8).cast(), 1);
            let mut buf = 0u8;
            libc::read(release_r.as_raw_fd(), (&mut buf as *mut u8).cast(), 1);
            libc::_exit(0);
        }
    }
    drop(ready_w);
    drop(release_r);
    let mut byte = 0u8;
    let read = sys!(libc::read(
        ready_r.as_raw_fd(),
        (&mut byte as *mut u8).cast(),
        1
    ));
    let open = |ns: &str| -> std::io::Result<OwnedFd> {
        let path = CString::new(format!("/proc/{pid}/ns/{ns}"))
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let fd = sys!(libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC))?;
        // SAFETY: open returned a new descriptor that nothing else owns.
        #[allow(unsafe_code)]
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    };
    let result = match read {
        Ok(1) if byte == b'y' => open("user").and_then(|user| Ok((user, open("net")?))),
        Ok(_) => Err(std::io::Error::other(
            "the child could not make a user and network namespace",
        )),
        Err(e) => Err(e),
    };
    drop(release_w);
    let mut status = 0;
    // SAFETY: reaping the child made above.
    #[allow(unsafe_code)]
    unsafe {
        libc::waitpid(pid, &mut status, 0);
    }
    let (user, net) = result?;
    Ok(Shared {
        user: user.into_raw_fd(),
        net: net.into_raw_fd(),
    })
}
