//! The local-disk backend: every open is `openat2(RESOLVE_BENEATH)` relative to a root descriptor.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{
    AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags, Stat, fstat, fsync, mkdirat, openat,
    openat2, renameat, statat, unlinkat,
};
use rustix::io::Errno;

use super::{Backend, DirEntry, FileKind, FsRefusal, Metadata, ReadSeek, Root, WsPath};

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// The local filesystem, confined by the kernel to each root.
#[derive(Debug)]
pub struct LocalFs {
    roots: Vec<(PathBuf, OwnedFd)>,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl LocalFs {
    /// Opens a descriptor for every root.
    pub fn open(roots: &[Root]) -> io::Result<LocalFs> {
        let mut out = Vec::with_capacity(roots.len());
        for root in roots {
            let fd = rustix::fs::open(
                &root.path,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            out.push((root.path.clone(), fd));
        }
        Ok(LocalFs { roots: out })
    }

    fn root_fd(&self, path: &WsPath) -> io::Result<&OwnedFd> {
        self.roots
            .get(path.root)
            .map(|(_, fd)| fd)
            .ok_or_else(|| io::Error::other(FsRefusal::Escapes))
    }

    /// Opens `rel` beneath the root with `flags`; the kernel refuses any escape.
    fn open_beneath(&self, path: &WsPath, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
        let root = self.root_fd(path)?;
        let rel = if path.rel.is_empty() {
            "."
        } else {
            path.rel.as_str()
        };
        openat2_beneath(root, rel, flags | OFlags::CLOEXEC, mode)
    }

    /// The parent directory (opened for reading, so it can be fsynced) and the final name.
    fn parent_and_name(&self, path: &WsPath) -> io::Result<(OwnedFd, CString)> {
        let parent = path
            .parent()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the root has no parent"))?;
        let name = path.file_name().unwrap_or_default();
        let dir = self.open_beneath(&parent, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())?;
        let name = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        Ok((dir, name))
    }
}

/// How often an open is retried when the kernel reports a concurrent rename.
const EAGAIN_RETRIES: usize = 64;

/// `openat2(RESOLVE_BENEATH)`, retried on `EAGAIN`: with `RESOLVE_BENEATH` the kernel refuses to
/// resolve a `..` (from a link's target) while *any* rename runs on the system, because it
/// cannot then prove the `..` stays beneath the root. A busy machine (a build renaming files)
/// would otherwise make such opens fail at random. The retry is safe: every attempt is checked
/// afresh, and after the last one the error is returned.
fn openat2_beneath(root: &OwnedFd, rel: &str, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let mut attempts = 0;
    loop {
        match openat2(root, rel, flags, mode, RESOLVE) {
            Err(Errno::AGAIN) if attempts < EAGAIN_RETRIES => {
                attempts += 1;
                std::thread::yield_now();
            }
            other => return other.map_err(map_errno),
        }
    }
}

fn map_errno(e: Errno) -> io::Error {
    if e == Errno::XDEV {
        FsRefusal::Escapes.into()
    } else {
        e.into()
    }
}

fn kind_of(st: &Stat) -> FileKind {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => FileKind::File,
        FileType::Directory => FileKind::Dir,
        FileType::Symlink => FileKind::Symlink,
        _ => FileKind::Special,
    }
}

fn special_name(st: &Stat) -> &'static str {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        _ => "special file",
    }
}

fn meta_of(st: &Stat) -> Metadata {
    Metadata {
        kind: kind_of(st),
        len: st.st_size as u64,
        mode: st.st_mode & 0o7777,
        nlink: st.st_nlink,
        modified: st.st_mtime,
    }
}

impl Backend for LocalFs {
    fn kind(&self) -> &'static str {
        "local"
    }

    fn local_dir(&self, root: usize) -> Option<&Path> {
        self.roots.get(root).map(|(p, _)| p.as_path())
    }

    fn real_path(&self, path: &WsPath) -> io::Result<Option<PathBuf>> {
        // The kernel resolves the longest existing prefix of the parent beneath the root; /proc
        // tells where it really is. The final component is never followed (operations on a link
        // act on the link, and writes refuse links), and components that do not exist yet are
        // appended as given.
        let root = self.root_fd(path)?;
        let comps: Vec<&str> = if path.rel.is_empty() {
            Vec::new()
        } else {
            path.rel.split('/').collect()
        };
        for keep in (0..comps.len()).rev() {
            if keep == 0 {
                // Nothing but the root (canonical when the workspace was opened) precedes the
                // path: it is where it says.
                return Ok(None);
            }
            let prefix = comps[..keep].join("/");
            // The common case first, without /proc: a prefix with no symbolic link in it is
            // where it says. A link (ELOOP) takes the full resolution below.
            match openat2(
                root,
                prefix.as_str(),
                OFlags::PATH | OFlags::CLOEXEC,
                Mode::empty(),
                RESOLVE.union(ResolveFlags::NO_SYMLINKS),
            ) {
                Ok(_) => return Ok(None),
                Err(Errno::NOENT | Errno::NOTDIR) => continue,
                Err(Errno::LOOP | Errno::AGAIN) => {}
                Err(e) => return Err(map_errno(e)),
            }
            match openat2_beneath(root, &prefix, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) {
                Ok(fd) => {
                    let proc_link = format!("/proc/self/fd/{}", fd.as_raw_fd());
                    let Ok(mut real) = std::fs::read_link(proc_link) else {
                        // No /proc: the lexical path is all we have.
                        return Ok(None);
                    };
                    real.extend(&comps[keep..]);
                    return Ok(Some(real));
                }
                Err(e)
                    if e.kind() == io::ErrorKind::NotFound
                        || e.raw_os_error() == Some(Errno::NOTDIR.raw_os_error()) =>
                {
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    fn link_target(&self, path: &WsPath) -> io::Result<Option<PathBuf>> {
        if path.rel.is_empty() {
            return Ok(None);
        }
        let root = self.root_fd(path)?;
        // The entry itself, not followed: most are no link, and that costs one open.
        let entry = match openat2(
            root,
            path.rel.as_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            RESOLVE,
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::XDEV) => return Ok(None),
            Err(e) => return Err(map_errno(e)),
        };
        if !FileType::from_raw_mode(fstat(&entry)?.st_mode).is_symlink() {
            return Ok(None);
        }
        // Followed beneath the root: where a read lands (a link leading out fails here, and the
        // read would too).
        let Ok(fd) = openat2_beneath(
            root,
            &path.rel,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return Ok(None);
        };
        Ok(std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok())
    }

    fn metadata(&self, path: &WsPath) -> io::Result<Metadata> {
        let fd = self.open_beneath(path, OFlags::PATH, Mode::empty())?;
        Ok(meta_of(&fstat(&fd)?))
    }

    fn open_read(&self, path: &WsPath) -> io::Result<(Box<dyn ReadSeek>, Metadata)> {
        // Extra roots may hold device nodes, whose open can have side effects (a tape rewinds,
        // a modem line rises): look before opening there. Inside the workspace a device node
        // cannot be made without CAP_MKNOD, so one open is enough; O_NONBLOCK keeps a FIFO from
        // hanging and O_NOCTTY keeps a terminal from becoming ours.
        if path.root() != 0 {
            let probe = self.open_beneath(path, OFlags::PATH, Mode::empty())?;
            let before = fstat(&probe)?;
            if kind_of(&before) != FileKind::File {
                return Err(FsRefusal::NotRegular(special_name(&before)).into());
            }
        }
        let fd = self.open_beneath(
            path,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        )?;
        let st = fstat(&fd)?;
        // Whatever was opened must be a regular file (this also catches a swap after a probe).
        if kind_of(&st) != FileKind::File {
            return Err(FsRefusal::NotRegular(special_name(&st)).into());
        }
        Ok((Box::new(File::from(fd)), meta_of(&st)))
    }

    fn read_dir(&self, path: &WsPath) -> io::Result<Vec<DirEntry>> {
        let fd = self.open_beneath(path, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())?;
        let dir = Dir::read_from(&fd)?;
        let mut out = Vec::new();
        for entry in dir {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::RegularFile => FileKind::File,
                FileType::Directory => FileKind::Dir,
                FileType::Symlink => FileKind::Symlink,
                FileType::Unknown => {
                    match statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) => kind_of(&st),
                        Err(_) => continue,
                    }
                }
                _ => FileKind::Special,
            };
            out.push(DirEntry {
                name: String::from_utf8_lossy(name).into_owned(),
                kind,
            });
        }
        Ok(out)
    }

    fn write_atomic(&self, path: &WsPath, data: &[u8]) -> io::Result<()> {
        let (dir, name) = self.parent_and_name(path)?;
        let mode = match statat(&dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => match kind_of(&st) {
                FileKind::File => st.st_mode & 0o7777,
                FileKind::Symlink => return Err(FsRefusal::Symlink.into()),
                FileKind::Dir => return Err(Errno::ISDIR.into()),
                FileKind::Special => return Err(FsRefusal::NotRegular(special_name(&st)).into()),
            },
            Err(Errno::NOENT) => 0o644,
            Err(e) => return Err(e.into()),
        };
        let tmp = CString::new(format!(
            ".toolshed-{}-{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ))
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let fd = openat(
            &dir,
            tmp.as_c_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )?;
        let result = (|| {
            // The umask may have narrowed the mode; set it exactly as the old file had it.
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?;
            let mut file = File::from(fd);
            file.write_all(data)?;
            file.sync_all()?;
            drop(file);
            renameat(&dir, tmp.as_c_str(), &dir, name.as_c_str())?;
            fsync(&dir)?;
            Ok(())
        })();
        if result.is_err() {
            let _ = unlinkat(&dir, tmp.as_c_str(), AtFlags::empty());
        }
        result
    }

    fn append(&self, path: &WsPath, data: &[u8]) -> io::Result<()> {
        let (dir, name) = self.parent_and_name(path)?;
        if let Ok(st) = statat(&dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
            && kind_of(&st) == FileKind::Symlink
        {
            return Err(FsRefusal::Symlink.into());
        }
        let fd = openat(
            &dir,
            name.as_c_str(),
            OFlags::WRONLY
                | OFlags::APPEND
                | OFlags::CREATE
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::NOCTTY
                | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| {
            if e == Errno::LOOP {
                FsRefusal::Symlink.into()
            } else {
                io::Error::from(e)
            }
        })?;
        let st = fstat(&fd)?;
        if kind_of(&st) != FileKind::File {
            return Err(FsRefusal::NotRegular(special_name(&st)).into());
        }
        if st.st_nlink > 1 {
            return Err(FsRefusal::HardLinked(st.st_nlink).into());
        }
        let mut file = File::from(fd);
        file.write_all(data)?;
        file.sync_data()?;
        Ok(())
    }

    fn create_dir_all(&self, path: &WsPath) -> io::Result<()> {
        if path.rel.is_empty() {
            return Ok(());
        }
        let root = self.root_fd(path)?;
        let mut prefix = String::new();
        for comp in path.rel.split('/') {
            let parent = if prefix.is_empty() {
                "."
            } else {
                prefix.as_str()
            };
            let dir = openat2_beneath(
                root,
                parent,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            match mkdirat(&dir, comp, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(comp);
        }
        // The last component must now be a directory beneath the root.
        self.open_beneath(path, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
        Ok(())
    }

    fn remove_file(&self, path: &WsPath) -> io::Result<()> {
        let (dir, name) = self.parent_and_name(path)?;
        let st = statat(&dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)?;
        if kind_of(&st) == FileKind::Dir {
            return Err(Errno::ISDIR.into());
        }
        unlinkat(&dir, name.as_c_str(), AtFlags::empty())?;
        Ok(())
    }

    fn remove_dir(&self, path: &WsPath, recursive: bool) -> io::Result<()> {
        let (dir, name) = self.parent_and_name(path)?;
        let st = statat(&dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)?;
        if kind_of(&st) != FileKind::Dir {
            return Err(Errno::NOTDIR.into());
        }
        if recursive {
            remove_tree(&dir, &name, 0)?;
        } else {
            unlinkat(&dir, name.as_c_str(), AtFlags::REMOVEDIR)?;
        }
        Ok(())
    }
}

/// Removes `name` under `parent` and everything in it, never following a link.
fn remove_tree(parent: &OwnedFd, name: &CString, depth: usize) -> io::Result<()> {
    if depth > 256 {
        return Err(io::Error::other(
            "the directory tree is nested too deeply to delete",
        ));
    }
    let fd = openat(
        parent,
        name.as_c_str(),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut children = Vec::new();
    for entry in Dir::read_from(&fd)? {
        let entry = entry?;
        let n = entry.file_name();
        if n.to_bytes() == b"." || n.to_bytes() == b".." {
            continue;
        }
        let is_dir = match entry.file_type() {
            FileType::Directory => true,
            FileType::Unknown => statat(&fd, n, AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| kind_of(&st) == FileKind::Dir)
                .unwrap_or(false),
            _ => false,
        };
        children.push((n.to_owned(), is_dir));
    }
    for (child, is_dir) in children {
        if is_dir {
            remove_tree(&fd, &child, depth + 1)?;
        } else {
            unlinkat(&fd, child.as_c_str(), AtFlags::empty())?;
        }
    }
    unlinkat(parent.as_fd(), name.as_c_str(), AtFlags::REMOVEDIR)?;
    Ok(())
}
