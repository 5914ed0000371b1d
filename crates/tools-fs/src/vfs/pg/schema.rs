//! The PostgreSQL layout of the virtual filesystem, applied by `PgPool::migrate` under the
//! store name [`STORE`].

/// The store name in `toolshed_migrations`.
pub(super) const STORE: &str = "vfs";

/// `MIGRATIONS[i]` takes the layout from version `i` to `i + 1`. Append, never edit.
pub(super) const MIGRATIONS: &[&str] = &[V1];

/// Version 1: the SQLite layout in PostgreSQL types, plus volumes and a generation per inode.
///
/// Every table is prefixed `vfs_`, since one schema holds the tables of several stores.
/// `vfs_inodes.volume` is the root inode of the volume the inode belongs to (a root's volume is
/// itself), so every query can be scoped to one volume without a join. Inode ids come from one
/// sequence for all volumes and are never reused, and a child is always created after its
/// parent, so a child's id is larger: locking rows in id order locks parents first.
/// `generation` grows whenever the bytes of a file are replaced (not when it is appended to):
/// readers compare it to tell whether what they read still belongs to one version.
/// `vfs_dentries.inode` is unique: there are no hard links.
const V1: &str = "
CREATE TABLE vfs_inodes (
    id         bigserial PRIMARY KEY,
    volume     bigint  NOT NULL,
    kind       text    NOT NULL CHECK (kind IN ('file', 'dir')),
    mode       integer NOT NULL,
    size       bigint  NOT NULL DEFAULT 0 CHECK (size >= 0),
    mtime      bigint  NOT NULL,
    nlink      bigint  NOT NULL DEFAULT 1,
    generation bigint  NOT NULL DEFAULT 0
);

CREATE TABLE vfs_volumes (
    name    text   PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$'),
    root    bigint NOT NULL UNIQUE REFERENCES vfs_inodes (id),
    created bigint NOT NULL
);

CREATE TABLE vfs_dentries (
    parent bigint NOT NULL REFERENCES vfs_inodes (id) ON DELETE CASCADE,
    name   text   NOT NULL CHECK (
        octet_length(name) BETWEEN 1 AND 255
        AND strpos(name, '/') = 0
        AND name NOT IN ('.', '..')
    ),
    inode  bigint NOT NULL UNIQUE REFERENCES vfs_inodes (id) ON DELETE CASCADE,
    PRIMARY KEY (parent, name)
);

CREATE TABLE vfs_chunks (
    inode bigint NOT NULL REFERENCES vfs_inodes (id) ON DELETE CASCADE,
    idx   bigint NOT NULL CHECK (idx >= 0),
    data  bytea  NOT NULL CHECK (octet_length(data) BETWEEN 1 AND 4096),
    PRIMARY KEY (inode, idx)
);
";
