//! Path confinement: every path a tool touches is resolved here.
//!
//! A [`Workspace`] has one or more roots (the workspace itself first, then configured extra
//! roots) and a [`Backend`] that stores the files: the local directory ([`LocalFs`]) or another
//! implementation such as a SQLite virtual filesystem. Tools never open a path themselves: they
//! turn the model's string into a [`WsPath`] with [`Workspace::resolve`], then ask the workspace to
//! read, write or list it.
//!
//! The string check in `resolve` is only the first gate (it refuses NUL and control bytes, a
//! `..` that would climb above a root, and absolute paths outside every root; a `..` that stays
//! inside, as in `docs/../README.md`, is resolved there). The local backend then opens every
//! path with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` relative to a directory
//! descriptor held for the root, so the kernel itself refuses symbolic links that lead out, and a
//! link swapped in between a check and a use cannot redirect the open.

// This module is the confinement layer itself: it is where paths are opened.
#![allow(clippy::disallowed_methods)]

mod local;

use std::fmt;
use std::io::{self, Read, Seek};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

pub use local::LocalFs;

use crate::error::ToolError;

/// A readable, seekable file handle.
pub trait ReadSeek: Read + Seek + Send {}
impl<T: Read + Seek + Send> ReadSeek for T {}

/// What kind of filesystem object a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (only reported where links are not followed, as in listings).
    Symlink,
    /// A FIFO, socket or device node.
    Special,
}

/// Metadata a backend reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// The object's kind.
    pub kind: FileKind,
    /// Size in bytes.
    pub len: u64,
    /// Unix permission bits.
    pub mode: u32,
    /// Number of hard links.
    pub nlink: u64,
    /// Modification time, seconds since the epoch.
    pub modified: i64,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's file name.
    pub name: String,
    /// Its kind, not following links.
    pub kind: FileKind,
}

/// One root of a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// Absolute, canonical path of the root (for a virtual backend, `/`).
    pub path: PathBuf,
    /// Whether writes are allowed under it.
    pub writable: bool,
}

/// Storage behind a workspace. All methods are blocking; tools call them through
/// [`crate::blocking`]. Paths given to a backend have passed [`Workspace::resolve`].
pub trait Backend: Send + Sync + fmt::Debug {
    /// A short name: `local`, `sqlite`.
    fn kind(&self) -> &'static str;
    /// A stable name of where a virtual backend keeps its files (`sqlite:/srv/ws.db`,
    /// `postgres:SCHEMA/VOLUME`), so that state kept per workspace elsewhere (cron jobs) tells
    /// two virtual workspaces apart although both have the root `/`. `None` for the local
    /// filesystem, whose root path already is such a name.
    fn identity(&self) -> Option<String> {
        None
    }
    /// The real directory of root `root`, when files live on the local disk.
    fn local_dir(&self, root: usize) -> Option<&Path>;
    /// Where `path` really is, with symbolic links inside the root resolved (absolute), when the
    /// backend can tell. `resolve` uses it so that the policy judges the real location: a link
    /// `hooks -> .git/hooks` is judged as `.git/hooks`.
    fn real_path(&self, _path: &WsPath) -> io::Result<Option<PathBuf>> {
        Ok(None)
    }
    /// Where a read of `path` really lands when its last component is a symbolic link that
    /// stays inside the root (absolute, every link resolved); `None` when it is not a link, or
    /// the backend has none.
    fn link_target(&self, _path: &WsPath) -> io::Result<Option<PathBuf>> {
        Ok(None)
    }
    /// Metadata, following symbolic links that stay inside the root.
    fn metadata(&self, path: &WsPath) -> io::Result<Metadata>;
    /// Opens a regular file for reading. Anything else is refused without blocking.
    fn open_read(&self, path: &WsPath) -> io::Result<(Box<dyn ReadSeek>, Metadata)>;
    /// Lists a directory (not sorted).
    fn read_dir(&self, path: &WsPath) -> io::Result<Vec<DirEntry>>;
    /// Replaces (or creates) a file atomically: the old content or the new one, never a mix.
    fn write_atomic(&self, path: &WsPath, data: &[u8]) -> io::Result<()>;
    /// Appends to a file, creating it if missing.
    fn append(&self, path: &WsPath, data: &[u8]) -> io::Result<()>;
    /// Creates a directory and its missing parents.
    fn create_dir_all(&self, path: &WsPath) -> io::Result<()>;
    /// Removes a file or a symbolic link (never its target).
    fn remove_file(&self, path: &WsPath) -> io::Result<()>;
    /// Removes a directory; with `recursive`, everything under it, never following links.
    fn remove_dir(&self, path: &WsPath, recursive: bool) -> io::Result<()>;
}

/// A path that has passed the workspace's checks: a root and a normalised relative path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WsPath {
    root: usize,
    rel: String,
    writable: bool,
    display: String,
}

impl WsPath {
    /// Index of the root (0 is the workspace).
    pub fn root(&self) -> usize {
        self.root
    }

    /// The normalised relative path, `/`-separated, empty for the root itself.
    pub fn rel(&self) -> &str {
        &self.rel
    }

    /// Whether this is the root directory itself.
    pub fn is_root(&self) -> bool {
        self.rel.is_empty()
    }

    /// Whether the root allows writes.
    pub fn root_writable(&self) -> bool {
        self.writable
    }

    /// Whether any component is `.git` (in any ASCII case: on a case-insensitive mount `.GIT`
    /// is the same directory): writes there can plant hooks or config.
    pub fn is_git_internal(&self) -> bool {
        self.rel.split('/').any(|c| c.eq_ignore_ascii_case(".git"))
    }

    /// Whether the path is git's data by its name, wherever it is kept: inside a `.git`, a bare
    /// repository (`backup.git/`), an object store (`objects/d0/…`, `objects/pack/…`), or a
    /// pack, pack index or bundle file. It holds committed copies of the working tree's files,
    /// so while read rules hold the policy keeps the file tools out of it.
    pub fn is_git_data(&self) -> bool {
        let parts: Vec<&str> = self.rel.split('/').filter(|c| !c.is_empty()).collect();
        let lower: Vec<String> = parts.iter().map(|c| c.to_ascii_lowercase()).collect();
        if lower
            .iter()
            .any(|c| c == ".git" || (c.len() > 4 && c.ends_with(".git")))
        {
            return true;
        }
        if lower.last().is_some_and(|n| {
            [".pack", ".idx", ".bundle", ".rev", ".midx"]
                .iter()
                .any(|e| n.ends_with(e))
        }) {
            return true;
        }
        lower.windows(2).any(|w| {
            w[0] == "objects"
                && (w[1] == "pack"
                    || w[1] == "info"
                    || (w[1].len() == 2 && w[1].bytes().all(|b| b.is_ascii_hexdigit())))
        })
    }

    /// The last component, if any.
    pub fn file_name(&self) -> Option<&str> {
        if self.rel.is_empty() {
            None
        } else {
            self.rel.rsplit('/').next()
        }
    }

    /// The parent directory (the root's parent is `None`).
    pub fn parent(&self) -> Option<WsPath> {
        if self.rel.is_empty() {
            return None;
        }
        let rel = match self.rel.rfind('/') {
            Some(i) => self.rel[..i].to_string(),
            None => String::new(),
        };
        Some(self.with_rel(rel))
    }

    /// A child path. `name` must be one component (no `/`, not `.` or `..`).
    pub fn join(&self, name: &str) -> Result<WsPath, ToolError> {
        if name.is_empty()
            || name == "."
            || name == ".."
            || name.contains('/')
            || name.contains('\0')
        {
            return Err(ToolError::invalid(
                "",
                format!("`{name}` is not a single file name"),
            ));
        }
        let rel = if self.rel.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.rel)
        };
        Ok(self.with_rel(rel))
    }

    /// The path relative to `base` when it lies under it (same root).
    pub fn strip_prefix(&self, base: &WsPath) -> Option<&str> {
        if self.root != base.root {
            return None;
        }
        if base.rel.is_empty() {
            return Some(&self.rel);
        }
        let rest = self.rel.strip_prefix(&base.rel)?;
        if rest.is_empty() {
            Some("")
        } else {
            rest.strip_prefix('/')
        }
    }

    fn with_rel(&self, rel: String) -> WsPath {
        let display = display_for(self.root, &self.display_root(), &rel);
        WsPath {
            root: self.root,
            rel,
            writable: self.writable,
            display,
        }
    }

    fn display_root(&self) -> String {
        if self.root == 0 {
            String::new()
        } else {
            // The display of a non-workspace root path starts with the root's absolute path.
            let cut = self.display.len() - self.rel.len();
            self.display[..cut].trim_end_matches('/').to_string()
        }
    }
}

fn display_for(root: usize, root_display: &str, rel: &str) -> String {
    if root == 0 {
        if rel.is_empty() {
            ".".to_string()
        } else {
            rel.to_string()
        }
    } else if rel.is_empty() {
        root_display.to_string()
    } else {
        format!("{root_display}/{rel}")
    }
}

impl fmt::Display for WsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display)
    }
}

/// The confined view of the filesystem that tools get.
#[derive(Debug, Clone)]
pub struct Workspace {
    roots: Arc<[Root]>,
    backend: Arc<dyn Backend>,
}

impl Workspace {
    /// A workspace on the local disk at `root`, without extra roots.
    pub fn local(root: impl AsRef<Path>) -> io::Result<Workspace> {
        Workspace::local_with_roots(root, Vec::new())
    }

    /// A workspace on the local disk at `root`, plus extra roots `(path, writable)`.
    pub fn local_with_roots(
        root: impl AsRef<Path>,
        extra: Vec<(PathBuf, bool)>,
    ) -> io::Result<Workspace> {
        let mut roots = vec![Root {
            path: std::fs::canonicalize(root.as_ref())?,
            writable: true,
        }];
        for (path, writable) in extra {
            roots.push(Root {
                path: std::fs::canonicalize(&path)?,
                writable,
            });
        }
        let backend = LocalFs::open(&roots)?;
        Ok(Workspace {
            roots: roots.into(),
            backend: Arc::new(backend),
        })
    }

    /// A workspace over any backend. `roots[0]` is the workspace itself.
    pub fn with_backend(roots: Vec<Root>, backend: Arc<dyn Backend>) -> Workspace {
        assert!(!roots.is_empty(), "a workspace needs at least one root");
        Workspace {
            roots: roots.into(),
            backend,
        }
    }

    /// The roots, the workspace first.
    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// The backend.
    pub fn backend(&self) -> &dyn Backend {
        &*self.backend
    }

    /// The workspace root on disk, when the backend is the local filesystem.
    pub fn local_root(&self) -> Option<&Path> {
        self.backend.local_dir(0)
    }

    /// The real location of `path` on disk, for the local backend. For display and for tools
    /// that must hand a directory to another program; never use it to open files.
    pub fn local_path(&self, path: &WsPath) -> Option<PathBuf> {
        let dir = self.backend.local_dir(path.root)?;
        Some(if path.rel.is_empty() {
            dir.to_path_buf()
        } else {
            dir.join(&path.rel)
        })
    }

    /// The workspace root as a [`WsPath`].
    pub fn root_path(&self) -> WsPath {
        WsPath {
            root: 0,
            rel: String::new(),
            writable: self.roots[0].writable,
            display: ".".into(),
        }
    }

    /// Turns a model-supplied path into a [`WsPath`], or refuses it.
    ///
    /// Accepted: relative paths (resolved under the workspace), and absolute paths under one of
    /// the roots. A `..` component is resolved before the path is judged, where it stays inside
    /// a root: `docs/../README.md` is `README.md`. It goes to the parent of where the directory
    /// before it really is, as the kernel would (a link `h -> .git/hooks` makes `h/../config`
    /// `.git/config`), so the policy judges the file the name reaches. Refused: NUL and other
    /// control characters, a `..` that would climb above its root (`../x`, `docs/../../x`) or
    /// that stands outside every root, and absolute paths outside every root. Symbolic links
    /// are checked again when the path is opened.
    pub fn resolve(&self, input: &str) -> Result<WsPath, ToolError> {
        if let Some(bad) = input.chars().find(|c| c.is_control()) {
            return Err(ToolError::invalid(
                "",
                format!(
                    "the path {input:?} contains the control character {:?}; give a plain path such as `src/main.rs`",
                    bad
                ),
            ));
        }
        let trimmed = input.trim();
        if trimmed.is_empty() || trimmed == "." {
            return Ok(self.root_path());
        }
        let path = Path::new(trimmed);
        // Both spellings become one absolute path, with every `..` resolved on the way.
        let mut normal: PathBuf = if path.is_absolute() {
            PathBuf::from("/")
        } else {
            self.roots[0].path.clone()
        };
        for comp in path.components() {
            match comp {
                Component::Normal(s) => normal.push(s),
                Component::CurDir | Component::RootDir => {}
                Component::ParentDir => normal = self.parent_dir(&normal, trimmed)?,
                Component::Prefix(_) => {
                    return Err(ToolError::Denied(format!(
                        "The path `{trimmed}` is not a Unix path; use a path relative to the workspace root."
                    )));
                }
            }
        }
        // The absolute path must lie under a root, compared component by component (so
        // `/ws-evil` is not under `/ws`). The most specific root wins, also for relative paths:
        // a read-only extra root nested inside the workspace stays read-only when it is named
        // relative to the workspace.
        let mut best: Option<(usize, usize)> = None;
        for (i, root) in self.roots.iter().enumerate() {
            if normal.starts_with(&root.path) {
                let depth = root.path.components().count();
                if best.is_none_or(|(_, d)| depth > d) {
                    best = Some((i, depth));
                }
            }
        }
        match best {
            Some((i, depth)) => {
                let rest = normal
                    .components()
                    .skip(depth)
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                let lexical = self.make(i, rest);
                // Judge the real location: links inside the roots are resolved by the kernel.
                match self.backend.real_path(&lexical) {
                    Ok(Some(real)) if real != normal => self.locate(&real).ok_or_else(|| {
                        ToolError::Denied(format!(
                            "The path `{trimmed}` leads outside the workspace through a symbolic link; use a path that stays inside."
                        ))
                    }),
                    Ok(_) => Ok(lexical),
                    Err(e) => Err(fs_error(e, &lexical, "resolve")),
                }
            }
            None => Err(ToolError::Denied(format!(
                "The path `{trimmed}` is outside the workspace ({}); use a path relative to the workspace root{}.",
                self.roots[0].path.display(),
                if self.roots.len() > 1 {
                    " or under one of the extra roots in policy.extra_roots"
                } else {
                    ""
                }
            ))),
        }
    }

    /// The directory a `..` after `dir` (absolute, `..`-free) names: the parent of where `dir`
    /// really is. Refused when `dir` is outside every root, or is the root that holds it (the
    /// `..` would climb above it).
    fn parent_dir(&self, dir: &Path, input: &str) -> Result<PathBuf, ToolError> {
        let climbs = || {
            ToolError::Denied(format!(
                "The path `{input}` contains `..` that climbs above the workspace root, which is not allowed; give a path that stays inside the workspace, e.g. `src/lib.rs` (a `..` inside it, as in `docs/../README.md`, is fine)."
            ))
        };
        let lexical = self.locate(dir).ok_or_else(|| {
            ToolError::Denied(format!(
                "The path `{input}` contains `..` outside the workspace; give a path inside it, relative to the workspace root, e.g. `src/lib.rs`."
            ))
        })?;
        if lexical.is_root() {
            return Err(climbs());
        }
        // The kernel follows a link before it takes `..`; so does this. The backend never
        // follows a path's last component, so ask where an entry inside `dir` is.
        let probe = lexical.with_rel(format!("{}/.", lexical.rel));
        let real: PathBuf = match self.backend.real_path(&probe) {
            Ok(Some(real)) => real.components().collect(),
            Ok(None) => dir.to_path_buf(),
            Err(e) => return Err(fs_error(e, &lexical, "resolve")),
        };
        let Some(inside) = self.locate(&real) else {
            return Err(ToolError::Denied(format!(
                "The path `{input}` leads outside the workspace through a symbolic link before its `..`; use a path that stays inside."
            )));
        };
        if inside.is_root() {
            return Err(climbs());
        }
        Ok(real.parent().map(Path::to_path_buf).unwrap_or(real))
    }

    /// The most specific root holding the absolute path `abs`, as a [`WsPath`].
    fn locate(&self, abs: &Path) -> Option<WsPath> {
        let (i, depth) = self
            .roots
            .iter()
            .enumerate()
            .filter(|(_, r)| abs.starts_with(&r.path))
            .map(|(i, r)| (i, r.path.components().count()))
            .max_by_key(|(_, d)| *d)?;
        let rest = abs
            .components()
            .skip(depth)
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        Some(self.make(i, rest))
    }

    fn make(&self, root: usize, parts: Vec<String>) -> WsPath {
        let rel = parts.join("/");
        let root_display = self.roots[root].path.display().to_string();
        WsPath {
            root,
            display: display_for(root, root_display.trim_end_matches('/'), &rel),
            rel,
            writable: self.roots[root].writable,
        }
    }

    /// The file a read of `path` really reads when `path` is a symbolic link inside the
    /// workspace (`notes.txt -> secrets/db.txt` reads `secrets/db.txt`), so that the policy can
    /// judge that file too; `None` when `path` is no link (or leads outside, where reads fail).
    pub fn read_target(&self, path: &WsPath) -> Option<WsPath> {
        match self.backend.link_target(path) {
            Ok(Some(real)) => self.locate(&real).filter(|t| t != path),
            _ => None,
        }
    }

    /// The directory that is, or that writing `paths` would make, a git directory by its shape
    /// (`HEAD` with `objects` and `refs`, or `HEAD` with `commondir`, each of any kind: git
    /// accepts executable files and links for `objects` and `refs`), at or above a path's
    /// parent. git takes such a directory for a repository (a bare one, or the one it is in)
    /// before any `.git` above it, and runs programs from its `config` (`core.fsmonitor`) when
    /// the user's git next works there (round 18: `src/HEAD`, `src/objects/`, `src/refs/` and a
    /// `src/config` written by `file_write` ran a command on the user's `git status` in
    /// `src/`). An entry that any of `paths` creates counts as there (round 19: one patch made
    /// all four). `None` for roots that are not on the local disk.
    pub fn git_dir_among(&self, paths: &[&WsPath]) -> Option<WsPath> {
        for path in paths {
            // Only a directory on the machine's disk is one the user's git works in (and only
            // there is a look at it cheap enough for the caller's task).
            if self.backend.local_dir(path.root()).is_none() {
                continue;
            }
            let names: Vec<&str> = path.rel().split('/').filter(|c| !c.is_empty()).collect();
            for k in 0..names.len() {
                let dir = path.with_rel(names[..k].join("/"));
                // A directory that is not one here (a link out, a file, or not there yet but
                // made by this call) is looked at only through what the call makes in it.
                let real_dir = self
                    .backend
                    .metadata(&dir)
                    .is_ok_and(|m| m.kind == FileKind::Dir);
                let there = |name: &str| {
                    let Ok(entry) = dir.join(name) else {
                        return false;
                    };
                    let made = paths.iter().any(|p| {
                        p.root() == entry.root()
                            && (p.rel() == entry.rel()
                                || p.rel().starts_with(&format!("{}/", entry.rel())))
                    });
                    // An entry that cannot be looked at (a link out) counts as there.
                    made || real_dir
                        && match self.backend.metadata(&entry) {
                            Ok(_) => true,
                            Err(e) => !matches!(
                                e.kind(),
                                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                            ),
                        }
                };
                if there("HEAD") && ((there("objects") && there("refs")) || there("commondir")) {
                    return Some(dir);
                }
            }
        }
        None
    }

    /// [`Workspace::git_dir_among`] for one path.
    pub fn git_dir_at(&self, path: &WsPath) -> Option<WsPath> {
        self.git_dir_among(&[path])
    }

    /// What reading `path` touches: `path` itself, and the file it links to, if it is a link
    /// (see [`Workspace::read_target`]).
    pub fn read_accesses(&self, path: &WsPath) -> Vec<crate::policy::Access> {
        let mut out = vec![crate::policy::Access::Read(path.clone())];
        out.extend(self.read_target(path).map(crate::policy::Access::Read));
        out
    }

    /// Metadata of `path`.
    pub fn metadata(&self, path: &WsPath) -> Result<Metadata, ToolError> {
        self.backend
            .metadata(path)
            .map_err(|e| fs_error(e, path, "inspect"))
    }

    /// Whether `path` exists (a path that escapes counts as an error, not as absent).
    pub fn exists(&self, path: &WsPath) -> Result<bool, ToolError> {
        match self.backend.metadata(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(fs_error(e, path, "inspect")),
        }
    }

    /// Opens a regular file for reading.
    pub fn open_read(&self, path: &WsPath) -> Result<(Box<dyn ReadSeek>, Metadata), ToolError> {
        self.backend
            .open_read(path)
            .map_err(|e| fs_error(e, path, "read"))
    }

    /// Reads a whole regular file, refusing files larger than `max_bytes`.
    pub fn read_to_end(&self, path: &WsPath, max_bytes: u64) -> Result<Vec<u8>, ToolError> {
        let (file, meta) = self.open_read(path)?;
        if meta.len > max_bytes {
            return Err(ToolError::Failed(format!(
                "{path} is {} bytes, more than the {max_bytes}-byte limit for this operation; read it in pages with file_read (offset/limit) instead.",
                meta.len
            )));
        }
        let mut buf = Vec::with_capacity(meta.len as usize);
        file.take(max_bytes + 1)
            .read_to_end(&mut buf)
            .map_err(|e| fs_error(e, path, "read"))?;
        if buf.len() as u64 > max_bytes {
            return Err(ToolError::Failed(format!(
                "{path} grew past the {max_bytes}-byte limit while being read; try again."
            )));
        }
        Ok(buf)
    }

    /// Lists a directory, sorted by name.
    pub fn read_dir(&self, path: &WsPath) -> Result<Vec<DirEntry>, ToolError> {
        let mut entries = self
            .backend
            .read_dir(path)
            .map_err(|e| fs_error(e, path, "list"))?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Writes a file atomically, creating missing parent directories.
    pub fn write_atomic(&self, path: &WsPath, data: &[u8]) -> Result<(), ToolError> {
        self.check_writable(path)?;
        if let Some(parent) = path.parent()
            && !parent.is_root()
        {
            self.backend
                .create_dir_all(&parent)
                .map_err(|e| fs_error(e, &parent, "create"))?;
        }
        self.backend
            .write_atomic(path, data)
            .map_err(|e| fs_error(e, path, "write"))
    }

    /// Appends to a file, creating it and its parents if missing.
    pub fn append(&self, path: &WsPath, data: &[u8]) -> Result<(), ToolError> {
        self.check_writable(path)?;
        if let Some(parent) = path.parent()
            && !parent.is_root()
        {
            self.backend
                .create_dir_all(&parent)
                .map_err(|e| fs_error(e, &parent, "create"))?;
        }
        self.backend
            .append(path, data)
            .map_err(|e| fs_error(e, path, "append to"))
    }

    /// Creates a directory and its parents.
    pub fn create_dir_all(&self, path: &WsPath) -> Result<(), ToolError> {
        self.check_writable(path)?;
        self.backend
            .create_dir_all(path)
            .map_err(|e| fs_error(e, path, "create"))
    }

    /// Removes a file or link.
    pub fn remove_file(&self, path: &WsPath) -> Result<(), ToolError> {
        self.check_writable(path)?;
        self.backend
            .remove_file(path)
            .map_err(|e| fs_error(e, path, "delete"))
    }

    /// Removes a directory (with `recursive`, its whole tree).
    pub fn remove_dir(&self, path: &WsPath, recursive: bool) -> Result<(), ToolError> {
        self.check_writable(path)?;
        if path.is_root() {
            return Err(ToolError::Denied(
                "The workspace root itself cannot be deleted; name a directory inside it.".into(),
            ));
        }
        self.backend
            .remove_dir(path, recursive)
            .map_err(|e| fs_error(e, path, "delete"))
    }

    fn check_writable(&self, path: &WsPath) -> Result<(), ToolError> {
        if !path.writable {
            return Err(ToolError::Denied(format!(
                "{path} is in a read-only root; write inside the workspace instead."
            )));
        }
        if path.is_root() {
            return Err(ToolError::invalid(
                "",
                "this operation needs a path inside the workspace, not the workspace root itself",
            ));
        }
        Ok(())
    }
}

/// A typed reason a backend refused something, carried inside an `io::Error`.
#[derive(Debug, thiserror::Error)]
pub enum FsRefusal {
    /// The path leads outside its root (through a link or otherwise).
    #[error("leads outside the workspace")]
    Escapes,
    /// The path is not a regular file where one is needed.
    #[error("is a {0}, not a regular file")]
    NotRegular(&'static str),
    /// The path is a symbolic link where the operation would write through it.
    #[error("is a symbolic link")]
    Symlink,
    /// The file has other hard links that an in-place change would also change.
    #[error("has {0} hard links")]
    HardLinked(u64),
}

impl From<FsRefusal> for io::Error {
    fn from(r: FsRefusal) -> io::Error {
        io::Error::other(r)
    }
}

/// Turns a backend error into a model-visible sentence about `path`.
pub fn fs_error(err: io::Error, path: &WsPath, op: &str) -> ToolError {
    if let Some(refusal) = err.get_ref().and_then(|e| e.downcast_ref::<FsRefusal>()) {
        return match refusal {
            FsRefusal::Escapes => ToolError::Denied(format!(
                "Cannot {op} {path}: it leads outside the workspace (through a symbolic link); use a path that stays inside."
            )),
            FsRefusal::NotRegular(what) => ToolError::Failed(format!(
                "Cannot {op} {path}: it is a {what}, not a regular file."
            )),
            FsRefusal::Symlink => ToolError::Denied(format!(
                "Cannot {op} {path}: it is a symbolic link, and Toolshed does not write through links; write to the file it points to."
            )),
            FsRefusal::HardLinked(n) => ToolError::Denied(format!(
                "Cannot {op} {path} in place: it has {n} hard links, so the change would also alter the other names; write the whole file with file_write instead."
            )),
        };
    }
    match err.raw_os_error() {
        Some(code) if code == rustix::io::Errno::XDEV.raw_os_error() => {
            return ToolError::Denied(format!(
                "Cannot {op} {path}: it leads outside the workspace (through a symbolic link or mount); use a path that stays inside."
            ));
        }
        Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => {
            return ToolError::Denied(format!(
                "Cannot {op} {path}: it is a symbolic link (or a loop of them) that cannot be followed here."
            ));
        }
        Some(code) if code == rustix::io::Errno::NXIO.raw_os_error() => {
            return ToolError::Failed(format!(
                "Cannot {op} {path}: it is a socket or a device with nothing behind it, not a regular file."
            ));
        }
        Some(code) if code == rustix::io::Errno::NOTEMPTY.raw_os_error() => {
            return ToolError::Failed(format!(
                "Cannot {op} {path}: the directory is not empty; pass recursive=true to delete it with everything in it."
            ));
        }
        Some(code) if code == rustix::io::Errno::ISDIR.raw_os_error() => {
            return ToolError::Failed(format!(
                "Cannot {op} {path}: it is a directory; use list_dir to see its contents."
            ));
        }
        Some(code) if code == rustix::io::Errno::NOTDIR.raw_os_error() => {
            return ToolError::Failed(format!(
                "Cannot {op} {path}: a component of the path is a file, not a directory."
            ));
        }
        _ => {}
    }
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::NotFound(format!(
            "{path} does not exist; check the name with list_dir or find_files."
        )),
        io::ErrorKind::PermissionDenied => ToolError::Denied(format!(
            "The operating system refused to {op} {path} (permission denied)."
        )),
        io::ErrorKind::AlreadyExists => ToolError::Failed(format!(
            "Cannot {op} {path}: something with that name already exists."
        )),
        _ => ToolError::Failed(format!("Cannot {op} {path}: {}", sentence_end(&err))),
    }
}

/// `err` as the end of a sentence: with a full stop, unless it already ends in one (a backend's
/// own sentence such as "…; try again.").
fn sentence_end(err: &io::Error) -> String {
    let text = err.to_string();
    if text.ends_with(['.', '!', '?']) {
        text
    } else {
        format!("{text}.")
    }
}

#[cfg(test)]
mod tests {
    use super::sentence_end;
    use std::io;

    #[test]
    fn backend_sentences_get_one_full_stop() {
        let cases = [
            ("the database failed", "the database failed."),
            (
                "the file changed; read it again.",
                "the file changed; read it again.",
            ),
            ("is it there?", "is it there?"),
        ];
        for (message, want) in cases {
            assert_eq!(sentence_end(&io::Error::other(message)), want);
        }
    }
}
