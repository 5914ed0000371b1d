//! Path confinement with real filesystem objects: every hostile path beside a benign twin.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tool_core::ErrorKind;
use tool_core::workspace::FileKind;

use super::{Fixture, SECRET, assert_kind, read};

/// What a row expects from `resolve` and then from reading the path.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Resolves, and reading it returns the inside content.
    Reads,
    /// Refused by `resolve` with this kind.
    Refused(ErrorKind),
    /// Resolves to the workspace root itself.
    Root,
}

/// Traversal in many spellings, control bytes, odd-but-legal names: resolve, then read.
#[test]
fn resolve_table_traversal_and_control_bytes() {
    let fx = Fixture::new();
    let root = fx.root.display().to_string();
    let outside = fx.outside.display().to_string();
    let inside = "inside content";
    // The benign files the twins name.
    for name in [
        "x",
        "a/x",
        "...",
        "..x",
        "x..",
        "..../x",
        "..\\x",
        "%2e%2e/x",
        "a b",
        "ünï cödé.txt",
        "日本/語.txt",
        "passwd",
        "etc/passwd",
        "README.md",
        "docs/guide.md",
    ] {
        fx.file(name, inside);
    }
    let cases: Vec<(&str, String, Expect)> = vec![
        // Traversal spellings, each beside a twin that stays inside.
        ("parent", "../x".into(), Expect::Refused(ErrorKind::Denied)),
        ("plain twin", "x".into(), Expect::Reads),
        (
            "down then up twice",
            "a/../../x".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        ("down twin", "a/x".into(), Expect::Reads),
        (
            "dot then parent",
            "./../x".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        ("dot twin", "./x".into(), Expect::Reads),
        (
            "bare parent",
            "..".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        ("three dots is a name", "...".into(), Expect::Reads),
        ("parent at the end is the root", "a/..".into(), Expect::Root),
        // A `..` that stays inside resolves; one that climbs above the root is refused.
        (
            "down and back up",
            "docs/../README.md".into(),
            Expect::Reads,
        ),
        (
            "down and up past the root",
            "docs/../../x".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        (
            "down and up to /etc/passwd",
            "a/../../etc/passwd".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        ("down, dot, and back up", "a/./../x".into(), Expect::Reads),
        (
            "down twice, up twice",
            "docs/sub/../../README.md".into(),
            Expect::Reads,
        ),
        (
            "back up to the root, then past it",
            "docs/../docs/../../README.md".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        (
            "a name that does not exist, then back up",
            "missing/../x".into(),
            Expect::Reads,
        ),
        ("dotdot prefix is a name", "..x".into(), Expect::Reads),
        ("dotdot suffix is a name", "x..".into(), Expect::Reads),
        ("dots dir", "..../x".into(), Expect::Reads),
        (
            "parent behind doubled slashes",
            "a//..//../x".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        (
            "parent behind dots",
            "a/./../../x".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        (
            "padded parent",
            "  ../x  ".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        ("backslash is a name on Unix", "..\\x".into(), Expect::Reads),
        (
            "percent-encoding is a name",
            "%2e%2e/x".into(),
            Expect::Reads,
        ),
        (
            "absolute outside",
            "/etc/passwd".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        (
            "relative twin of /etc/passwd",
            "etc/passwd".into(),
            Expect::Reads,
        ),
        (
            "double-slash absolute",
            "//etc/passwd".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        (
            "filesystem root",
            "/".into(),
            Expect::Refused(ErrorKind::Denied),
        ),
        (
            "absolute into the outside dir",
            format!("{outside}/secret"),
            Expect::Refused(ErrorKind::Denied),
        ),
        (
            "absolute through the root with parent",
            format!("{root}/../outside/secret"),
            Expect::Refused(ErrorKind::Denied),
        ),
        ("absolute inside", format!("{root}/a/x"), Expect::Reads),
        (
            "absolute inside, down and back up",
            format!("{root}/docs/../README.md"),
            Expect::Reads,
        ),
        (
            "absolute, up out of the root and back in",
            format!("{root}/../ws/x"),
            Expect::Refused(ErrorKind::Denied),
        ),
        (
            "absolute, parent outside every root",
            format!("{outside}/../ws/x"),
            Expect::Refused(ErrorKind::Denied),
        ),
        (
            "absolute inside, doubled slashes",
            format!("/{root}//a/./x"),
            Expect::Reads,
        ),
        // Control characters, each beside a printable twin.
        ("NUL", "x\0".into(), Expect::Refused(ErrorKind::InvalidArgs)),
        (
            "NUL hiding a suffix",
            "x\0/../../etc/passwd".into(),
            Expect::Refused(ErrorKind::InvalidArgs),
        ),
        (
            "newline",
            "a\nb".into(),
            Expect::Refused(ErrorKind::InvalidArgs),
        ),
        (
            "tab",
            "a\tb".into(),
            Expect::Refused(ErrorKind::InvalidArgs),
        ),
        (
            "escape",
            "\u{1b}[31mx".into(),
            Expect::Refused(ErrorKind::InvalidArgs),
        ),
        (
            "DEL",
            "x\u{7f}".into(),
            Expect::Refused(ErrorKind::InvalidArgs),
        ),
        (
            "C1 control",
            "x\u{85}".into(),
            Expect::Refused(ErrorKind::InvalidArgs),
        ),
        ("space twin", "a b".into(), Expect::Reads),
        ("non-ASCII twin", "ünï cödé.txt".into(), Expect::Reads),
        ("CJK twin", "日本/語.txt".into(), Expect::Reads),
    ];
    for (case, input, expect) in cases {
        let got = fx.ws.resolve(&input);
        match expect {
            Expect::Refused(kind) => {
                assert_kind(&got, kind, case);
                // The message names the offending input so the model can correct it.
                let msg = got.unwrap_err().to_string();
                assert!(!msg.is_empty(), "{case}");
                if input.split('/').any(|c| c == "..") && !input.contains('\0') {
                    assert!(msg.contains(input.trim()), "{case}: {msg}");
                }
            }
            Expect::Root => {
                let p = got.unwrap_or_else(|e| panic!("{case}: {input:?} refused: {e}"));
                assert!(p.is_root(), "{case}: {p:?}");
            }
            Expect::Reads => {
                let p = got.unwrap_or_else(|e| panic!("{case}: {input:?} refused: {e}"));
                assert_eq!(p.root(), 0, "{case}");
                assert!(p.rel().split('/').all(|c| c != ".."), "{case}: {p:?}");
                let content = read(&fx.ws, &input).unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_eq!(content, inside, "{case}");
            }
        }
    }
    fx.assert_outside_intact();
}

/// Absolute paths name roots component by component: a sibling sharing the prefix is outside.
#[test]
fn sibling_with_shared_prefix_is_outside() {
    let fx = Fixture::new();
    let evil = fx.base.join("ws-evil");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(evil.join("secret"), SECRET).unwrap();
    fx.file("ok", "fine");
    let root = fx.root.display().to_string();
    let cases: Vec<(String, Option<&str>)> = vec![
        (format!("{}/secret", evil.display()), None),
        (format!("{root}-evil/secret"), None),
        (format!("{root}/../ws-evil/secret"), None),
        (format!("{root}/ok"), Some("fine")),
        (format!("{root}/./ok"), Some("fine")),
    ];
    for (input, expect) in cases {
        match expect {
            None => assert_kind(&fx.ws.resolve(&input), ErrorKind::Denied, &input),
            Some(content) => {
                let p = fx.ws.resolve(&input).unwrap();
                assert_eq!(p.rel(), "ok");
                assert_eq!(read(&fx.ws, &input).unwrap(), content, "{input}");
            }
        }
    }
    // The root itself, spelled absolutely, is the root.
    for spelling in [root.clone(), format!("{root}/"), ".".into(), "".into()] {
        let p = fx.ws.resolve(&spelling).unwrap();
        assert!(p.is_root(), "{spelling:?} -> {p:?}");
    }
}

/// An operation a row runs through the workspace.
#[derive(Debug, Clone, Copy)]
enum Op {
    Read,
    Metadata,
    List,
    Write,
    Append,
    Mkdir,
    RemoveFile,
}

fn run_op(fx: &Fixture, op: Op, path: &str) -> Result<(), tool_core::ToolError> {
    let p = fx.ws.resolve(path)?;
    match op {
        Op::Read => {
            let s = read(&fx.ws, path)?;
            assert_ne!(s, SECRET, "read returned the outside secret through {path}");
            Ok(())
        }
        Op::Metadata => fx.ws.metadata(&p).map(|_| ()),
        Op::List => fx.ws.read_dir(&p).map(|_| ()),
        Op::Write => fx.ws.write_atomic(&p, b"written"),
        Op::Append => fx.ws.append(&p, b"appended"),
        Op::Mkdir => fx.ws.create_dir_all(&p),
        Op::RemoveFile => fx.ws.remove_file(&p),
    }
}

/// Symbolic links that lead out are refused for every operation (kind Denied); links that stay
/// inside work.
#[test]
fn symlink_table() {
    let fx = Fixture::new();
    fx.file("real.txt", "inside");
    fx.file("sub/inner.txt", "inner");
    let outside_secret = fx.outside.join("secret");
    // Links that lead out: relative, absolute, to a directory, and chained through an inside link.
    fx.symlink("../outside/secret", "out_rel");
    fx.symlink(&outside_secret, "out_abs");
    fx.symlink("../outside/dir", "out_dir");
    fx.symlink(&fx.outside, "out_dir_abs");
    fx.symlink("out_rel", "chain_out");
    fx.symlink("../../outside/secret", "sub/out_up");
    fx.symlink("/proc/self/root/etc/passwd", "magic");
    fx.symlink("../outside/missing", "dangling_out");
    // Links that stay inside.
    fx.symlink("real.txt", "in_file");
    fx.symlink("sub", "in_dir");
    fx.symlink("../real.txt", "sub/in_up");
    fx.symlink("in_file", "chain_in");
    let denied = Err(ErrorKind::Denied);
    let cases: Vec<(&str, Op, Result<(), ErrorKind>)> = vec![
        ("out_rel", Op::Read, denied),
        ("out_rel", Op::Metadata, denied),
        ("out_rel", Op::Write, denied),
        ("out_rel", Op::Append, denied),
        ("out_abs", Op::Read, denied),
        ("out_abs", Op::Write, denied),
        ("out_abs", Op::Append, denied),
        ("chain_out", Op::Read, denied),
        ("chain_out", Op::Write, denied),
        ("sub/out_up", Op::Read, denied),
        ("sub/out_up", Op::Write, denied),
        ("magic", Op::Read, denied),
        ("dangling_out", Op::Write, denied),
        ("dangling_out", Op::Append, denied),
        ("out_dir", Op::List, denied),
        ("out_dir/secret", Op::Read, denied),
        ("out_dir/secret", Op::Metadata, denied),
        ("out_dir/secret", Op::Write, denied),
        ("out_dir/secret", Op::Append, denied),
        ("out_dir/new.txt", Op::Write, denied),
        ("out_dir/new/deeper.txt", Op::Write, denied),
        ("out_dir/newdir", Op::Mkdir, denied),
        ("out_dir/secret", Op::RemoveFile, denied),
        ("out_dir_abs/secret", Op::Read, denied),
        ("out_dir_abs/dir", Op::List, denied),
        // A `..` after a link is taken where the link leads, as the kernel takes it.
        ("out_dir/../secret", Op::Read, denied),
        ("out_dir/../new.txt", Op::Write, denied),
        ("sub/out_up/../secret", Op::Read, denied),
        // Benign twins.
        ("real.txt", Op::Read, Ok(())),
        ("in_file", Op::Read, Ok(())),
        ("in_file", Op::Metadata, Ok(())),
        ("chain_in", Op::Read, Ok(())),
        ("sub/in_up", Op::Read, Ok(())),
        ("in_dir", Op::List, Ok(())),
        ("in_dir/inner.txt", Op::Read, Ok(())),
        ("in_dir/new.txt", Op::Write, Ok(())),
        ("in_dir/newdir", Op::Mkdir, Ok(())),
        ("in_dir/../real.txt", Op::Read, Ok(())),
        ("sub/../in_dir/inner.txt", Op::Read, Ok(())),
        ("sub/new.txt", Op::Append, Ok(())),
        // Removing a link removes the link, never its target.
        ("out_rel", Op::RemoveFile, Ok(())),
    ];
    for (path, op, expect) in cases {
        let got = run_op(&fx, op, path);
        match expect {
            Ok(()) => {
                if let Err(e) = got {
                    panic!("{op:?} {path}: refused: {e}");
                }
            }
            Err(kind) => assert_kind(&got, kind, &format!("{op:?} {path}")),
        }
        fx.assert_outside_intact();
    }
    // The benign writes landed inside, through the inside link.
    assert_eq!(
        std::fs::read_to_string(fx.root.join("sub/new.txt")).unwrap(),
        "writtenappended"
    );
    assert!(fx.root.join("sub/newdir").is_dir());
    // The removed link is gone; its target is not.
    assert!(fx.root.join("out_rel").symlink_metadata().is_err());
    fx.assert_outside_intact();
}

/// A `..` after a directory link goes to the parent of the link's target, as the kernel's
/// lookup does, so the policy judges the file the shell would reach: `h -> .git/hooks` makes
/// `h/../config` the repository's config, not `config` at the root. A real directory's twin
/// resolves lexically.
#[test]
fn dotdot_after_a_link_is_judged_where_the_kernel_goes() {
    let fx = Fixture::new();
    fx.file(".git/config", "[core]");
    fx.file(".git/hooks/README", "hooks");
    fx.file("config", "top-level config");
    fx.dir("plain/sub");
    fx.symlink(".git/hooks", "h");
    fx.symlink("plain/sub", "deep");
    // (input, the relative path it must resolve to)
    let cases = [
        ("h/../config", ".git/config"),
        ("h/../../config", "config"),
        ("deep/../x.txt", "plain/x.txt"),
        ("deep/../../config", "config"),
        // Twins without links: lexical.
        ("plain/../config", "config"),
        ("plain/sub/../../config", "config"),
    ];
    for (input, want) in cases {
        let p = fx
            .ws
            .resolve(input)
            .unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(p.rel(), want, "{input}");
        assert_eq!(p.is_git_internal(), want.starts_with(".git"), "{input}");
    }
    assert_eq!(read(&fx.ws, "h/../config").unwrap(), "[core]");
    assert_eq!(read(&fx.ws, "plain/../config").unwrap(), "top-level config");
    // Through the link and past the root: refused like any climb.
    assert_kind(
        &fx.ws.resolve("deep/../../../x"),
        ErrorKind::Denied,
        "deep/../../../x",
    );
}

/// An absolute symbolic link is refused even when it points inside: `RESOLVE_BENEATH` cannot
/// follow absolute links, so the workspace fails closed. Its relative twin works.
#[test]
fn absolute_link_inside_fails_closed() {
    let fx = Fixture::new();
    fx.file("real.txt", "inside");
    fx.symlink(fx.root.join("real.txt"), "abs_in");
    fx.symlink("real.txt", "rel_in");
    assert_kind(&read(&fx.ws, "abs_in"), ErrorKind::Denied, "absolute link");
    assert_eq!(read(&fx.ws, "rel_in").unwrap(), "inside");
}

/// Writing through a symbolic link is refused even when it stays inside; the target is unchanged.
#[test]
fn write_atomic_and_append_refuse_links() {
    let fx = Fixture::new();
    let target = fx.file("target.txt", "original");
    fx.symlink("target.txt", "link.txt");
    for (case, op) in [("write", Op::Write), ("append", Op::Append)] {
        assert_kind(&run_op(&fx, op, "link.txt"), ErrorKind::Denied, case);
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "original",
            "{case}"
        );
        assert!(
            fx.root
                .join("link.txt")
                .symlink_metadata()
                .unwrap()
                .file_type()
                .is_symlink(),
            "{case}: the link was replaced"
        );
    }
    // Twin: the target itself takes the write.
    run_op(&fx, Op::Write, "target.txt").unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "written");
}

/// A hard link to a file outside: write_atomic replaces the name (the outside file keeps its
/// content), append is refused because it would change the outside file in place.
#[test]
fn hard_link_to_outside_file() {
    let fx = Fixture::new();
    let link = fx.root.join("hl.txt");
    std::fs::hard_link(fx.outside.join("secret"), &link).unwrap();
    fx.file("plain.txt", "plain");

    let p = fx.ws.resolve("hl.txt").unwrap();
    let appended = fx.ws.append(&p, b"appended");
    assert_kind(&appended, ErrorKind::Denied, "append to a hard-linked file");
    assert!(appended.unwrap_err().to_string().contains("hard link"));
    fx.assert_outside_intact();

    fx.ws.write_atomic(&p, b"replaced").unwrap();
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "replaced");
    fx.assert_outside_intact();
    // The rename broke the link: the inside name is now its own file.
    assert_eq!(
        std::fs::metadata(&link).unwrap().len(),
        b"replaced".len() as u64
    );
    let meta = fx.ws.metadata(&p).unwrap();
    assert_eq!(meta.nlink, 1);

    // Twin: append to an ordinary file works.
    let plain = fx.ws.resolve("plain.txt").unwrap();
    fx.ws.append(&plain, b"+more").unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.root.join("plain.txt")).unwrap(),
        "plain+more"
    );
    // And append to the now-unlinked name works too.
    fx.ws.append(&p, b"+more").unwrap();
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "replaced+more");
    // Removing a hard link removes only the inside name.
    let link2 = fx.root.join("hl2.txt");
    std::fs::hard_link(fx.outside.join("secret"), &link2).unwrap();
    fx.ws
        .remove_file(&fx.ws.resolve("hl2.txt").unwrap())
        .unwrap();
    assert!(!link2.exists());
    fx.assert_outside_intact();
}

/// Check, then swap a directory for a link to outside, then use: the open is refused.
#[test]
fn swap_between_check_and_use() {
    for swap in [true, false] {
        let fx = Fixture::new();
        fx.file("d/secret", "inside d");
        let p = fx.ws.resolve("d/secret").unwrap();
        let meta = fx.ws.metadata(&p).unwrap();
        assert_eq!(meta.kind, FileKind::File);
        let target = fx.ws.resolve("d/new.txt").unwrap();
        if swap {
            std::fs::rename(fx.root.join("d"), fx.root.join("d.moved")).unwrap();
            fx.symlink("../outside/dir", "d");
        }
        let got = read(&fx.ws, "d/secret");
        let wrote = fx.ws.write_atomic(&target, b"planted");
        let appended = fx.ws.append(&target, b"planted");
        let listed = fx.ws.read_dir(&fx.ws.resolve("d").unwrap());
        if swap {
            assert_kind(&got, ErrorKind::Denied, "read after swap");
            assert_kind(&wrote, ErrorKind::Denied, "write after swap");
            assert_kind(&appended, ErrorKind::Denied, "append after swap");
            assert_kind(&listed, ErrorKind::Denied, "list after swap");
        } else {
            assert_eq!(got.unwrap(), "inside d");
            wrote.unwrap();
            appended.unwrap();
            assert_eq!(listed.unwrap().len(), 2);
        }
        fx.assert_outside_intact();
    }
}

/// One thread flips `d` between a real directory and a link to outside (an atomic exchange);
/// another reads `d/secret` and writes `d/new` many times. No read ever returns the outside
/// content and no write ever lands outside.
#[test]
fn racing_swap_never_escapes() {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    let fx = Fixture::new();
    fx.file("d/secret", "inside d");
    std::os::unix::fs::symlink("../outside/dir", fx.root.join("flip")).unwrap();
    // Resolved before the race starts: `resolve` itself refuses a path through the link.
    let target = fx.ws.resolve("d/new.txt").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = Arc::clone(&stop);
        let (a, b) = (fx.root.join("d"), fx.root.join("flip"));
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).expect("exchange");
                flips += 1;
            }
            flips
        })
    };
    let (mut ok, mut refused, mut iterations) = (0u64, 0u64, 0u64);
    let started = Instant::now();
    while iterations < 20_000
        && !(ok > 50 && refused > 50 && iterations > 2_000)
        && started.elapsed() < Duration::from_millis(1500)
    {
        iterations += 1;
        match read(&fx.ws, "d/secret") {
            Ok(s) => {
                assert_eq!(s, "inside d", "a read escaped after {iterations} tries");
                ok += 1;
            }
            Err(e) => {
                // Refused (the link) or not found (mid-exchange): never anything else.
                assert!(
                    matches!(e.kind(), ErrorKind::Denied | ErrorKind::NotFound),
                    "unexpected error {e}"
                );
                refused += 1;
            }
        }
        let _ = fx.ws.write_atomic(&target, b"planted");
        let _ = fx.ws.append(&target, b"planted");
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(flips > 0, "the flipper never ran");
    assert!(
        ok > 0,
        "no read succeeded: the benign side of the race never ran"
    );
    assert!(refused > 0, "no read was refused: the race never happened");
    fx.assert_outside_intact();
}

/// Renames anywhere on the system make `RESOLVE_BENEATH` refuse a `..` with `EAGAIN`; the
/// workspace retries, so reading through a link with `..` in its target keeps working while
/// another thread renames files elsewhere. The twin without `..` never needed the retry.
#[test]
fn dotdot_links_survive_concurrent_renames() {
    let fx = Fixture::new();
    fx.file("real.txt", "inside");
    fx.symlink("../real.txt", "sub/up");
    fx.symlink("real.txt", "flat");
    let churn = fx.base.join("churn");
    std::fs::create_dir_all(&churn).unwrap();
    std::fs::write(churn.join("a"), "a").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let renamer = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let (from, to) = if n.is_multiple_of(2) {
                    ("a", "b")
                } else {
                    ("b", "a")
                };
                std::fs::rename(churn.join(from), churn.join(to)).unwrap();
                n += 1;
            }
            n
        })
    };
    let started = Instant::now();
    let mut reads = 0;
    let mut failures = Vec::new();
    while reads < 3000 && started.elapsed() < Duration::from_millis(1000) {
        for path in ["sub/up", "flat"] {
            if let Err(e) = read(&fx.ws, path) {
                failures.push(format!("{path}: {e}"));
            }
        }
        reads += 1;
    }
    stop.store(true, Ordering::Relaxed);
    assert!(renamer.join().unwrap() > 0);
    assert!(
        failures.is_empty(),
        "{} of {reads} rounds failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(3)]
    );
}

/// Special files: open_read returns promptly with an error instead of blocking.
#[test]
fn fifo_and_special_files_do_not_hang() {
    use rustix::fs::{CWD, FileType, Mode, mknodat};
    let fx = Fixture::new();
    fx.file("regular", "regular");
    mknodat(
        CWD,
        fx.root.join("fifo"),
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(fx.root.join("sock")).unwrap();
    // A copy of /dev/zero: reading it would never end. Containers may forbid mknod of devices.
    let have_device = mknodat(
        CWD,
        fx.root.join("zero"),
        FileType::CharacterDevice,
        Mode::from_raw_mode(0o644),
        rustix::fs::makedev(1, 5),
    )
    .is_ok();
    let mut cases = vec![
        ("fifo", Op::Read, false),
        ("fifo", Op::Append, false),
        ("fifo", Op::Write, false),
        ("sock", Op::Read, false),
        ("regular", Op::Read, true),
        ("regular", Op::Append, true),
    ];
    if have_device {
        cases.push(("zero", Op::Read, false));
        cases.push(("zero", Op::Write, false));
    }
    for (path, op, ok) in cases {
        let (tx, rx) = std::sync::mpsc::channel();
        let ws = fx.ws.clone();
        let path_owned = path.to_string();
        std::thread::spawn(move || {
            let p = ws.resolve(&path_owned).unwrap();
            let r = match op {
                Op::Read => ws.read_to_end(&p, 1 << 20).map(|_| ()),
                Op::Append => ws.append(&p, b"x"),
                Op::Write => ws.write_atomic(&p, b"x"),
                _ => unreachable!(),
            };
            let _ = tx.send(r);
        });
        let got = rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("{op:?} {path} hung"));
        assert_eq!(got.is_ok(), ok, "{op:?} {path}: {got:?}");
        if !ok {
            assert_kind(&got, ErrorKind::Failed, &format!("{op:?} {path}"));
        }
    }
    // The FIFO is still a FIFO (write_atomic did not replace it).
    let meta = fx.ws.metadata(&fx.ws.resolve("fifo").unwrap()).unwrap();
    assert_eq!(meta.kind, FileKind::Special);
}

/// Extra roots: readable everywhere, writable only when configured so.
#[test]
fn read_only_extra_root() {
    let fx = Fixture::new();
    let ro = fx.base.join("ro");
    let rw = fx.base.join("rw");
    for d in [&ro, &rw] {
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("f.txt"), "extra").unwrap();
    }
    let ws = tool_core::Workspace::local_with_roots(
        &fx.root,
        vec![(ro.clone(), false), (rw.clone(), true)],
    )
    .unwrap();
    for (dir, writable) in [(&ro, false), (&rw, true)] {
        let file = format!("{}/f.txt", dir.display());
        let p = ws.resolve(&file).unwrap();
        assert_eq!(p.root_writable(), writable);
        assert_eq!(
            String::from_utf8(ws.read_to_end(&p, 100).unwrap()).unwrap(),
            "extra"
        );
        let attempts: Vec<(&str, Result<(), tool_core::ToolError>)> = vec![
            ("write", ws.write_atomic(&p, b"changed")),
            ("append", ws.append(&p, b"+")),
            (
                "mkdir",
                ws.create_dir_all(&ws.resolve(&format!("{}/new", dir.display())).unwrap()),
            ),
            (
                "remove file",
                ws.remove_file(&ws.resolve(&format!("{}/f.txt", dir.display())).unwrap()),
            ),
            (
                "remove dir",
                ws.remove_dir(
                    &ws.resolve(&format!("{}/sub", dir.display())).unwrap(),
                    true,
                ),
            ),
        ];
        for (case, got) in attempts {
            if writable {
                got.unwrap_or_else(|e| panic!("{case} in a writable root: {e}"));
            } else {
                assert_kind(&got, ErrorKind::Denied, case);
            }
        }
        assert_eq!(dir.join("f.txt").exists(), !writable);
        assert_eq!(dir.join("sub").exists(), !writable);
    }
    assert_eq!(std::fs::read_to_string(ro.join("f.txt")).unwrap(), "extra");
}

/// A read-only root nested inside the workspace stays read-only however the path is spelled.
#[test]
fn nested_read_only_root_cannot_be_reached_relatively() {
    let fx = Fixture::new();
    fx.file("vendor/lib.rs", "vendored");
    fx.file("src/lib.rs", "mine");
    let ws =
        tool_core::Workspace::local_with_roots(&fx.root, vec![(fx.root.join("vendor"), false)])
            .unwrap();
    let spellings = [
        "vendor/lib.rs".to_string(),
        "./vendor/lib.rs".to_string(),
        format!("{}/vendor/lib.rs", fx.root.display()),
    ];
    for s in &spellings {
        let p = ws.resolve(s).unwrap();
        assert!(
            !p.root_writable(),
            "{s} resolved into a writable root: {p:?}"
        );
        assert_kind(&ws.write_atomic(&p, b"changed"), ErrorKind::Denied, s);
    }
    assert_eq!(
        std::fs::read_to_string(fx.root.join("vendor/lib.rs")).unwrap(),
        "vendored"
    );
    // Twin: the rest of the workspace stays writable.
    let p = ws.resolve("src/lib.rs").unwrap();
    assert!(p.root_writable());
    ws.write_atomic(&p, b"changed").unwrap();
}

/// `.git` internals are recognised by component, not by substring.
#[test]
fn git_internal_detection() {
    let fx = Fixture::new();
    let root = fx.root.display();
    let cases: Vec<(String, bool)> = vec![
        (".git".into(), true),
        (".git/config".into(), true),
        (".git/hooks/pre-commit".into(), true),
        ("./.git/hooks/pre-commit".into(), true),
        ("sub/module/.git/config".into(), true),
        (format!("{root}/.git/HEAD"), true),
        (".git/".into(), true),
        (".gitignore".into(), false),
        (".github/workflows/ci.yml".into(), false),
        ("git/config".into(), false),
        ("a.git/config".into(), false),
        (".git.bak/config".into(), false),
        ("src/.gitkeep".into(), false),
        ("docs/dot.git".into(), false),
    ];
    for (path, internal) in cases {
        let p = fx.ws.resolve(&path).unwrap();
        assert_eq!(p.is_git_internal(), internal, "{path} -> {p:?}");
    }
}

/// write_atomic keeps the permission bits of the file it replaces.
#[test]
fn write_atomic_keeps_mode() {
    let fx = Fixture::new();
    for mode in [0o600, 0o640, 0o755, 0o700, 0o444] {
        let name = format!("f{mode:o}");
        let path = fx.file(&name, "old");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let p = fx.ws.resolve(&name).unwrap();
        fx.ws.write_atomic(&p, b"new content").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new content");
        let got = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(got, mode, "{name}");
        assert_eq!(fx.ws.metadata(&p).unwrap().mode, mode, "{name}");
    }
    // No temporary files are left behind.
    let names: Vec<_> = fx
        .ws
        .read_dir(&fx.ws.root_path())
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.iter().all(|n| !n.contains("toolshed")), "{names:?}");
}

/// write_atomic creates missing parents and refuses directories and the root.
#[test]
fn write_atomic_targets_table() {
    let fx = Fixture::new();
    fx.dir("a_dir");
    let cases: Vec<(&str, Option<ErrorKind>)> = vec![
        ("new/deep/file.txt", None),
        ("top.txt", None),
        ("a_dir", Some(ErrorKind::Failed)),
        ("", Some(ErrorKind::InvalidArgs)),
        (".", Some(ErrorKind::InvalidArgs)),
    ];
    for (path, refusal) in cases {
        let p = fx.ws.resolve(path).unwrap();
        let got = fx.ws.write_atomic(&p, b"data");
        match refusal {
            None => {
                got.unwrap_or_else(|e| panic!("{path}: {e}"));
                assert_eq!(std::fs::read(fx.root.join(path)).unwrap(), b"data");
            }
            Some(kind) => assert_kind(&got, kind, path),
        }
    }
    assert!(fx.root.join("a_dir").is_dir());
}

/// Recursive removal never follows a link: the outside tree and an inside target survive.
#[test]
fn remove_dir_recursive_does_not_follow_links() {
    let fx = Fixture::new();
    fx.file("keep/kept.txt", "kept");
    for tree in ["tree", "twin"] {
        fx.file(&format!("{tree}/a.txt"), "a");
        fx.file(&format!("{tree}/sub/b.txt"), "b");
        fx.file(&format!("{tree}/sub/deeper/c.txt"), "c");
    }
    // Hostile: links to outside (dir and file, relative and absolute) and to inside.
    fx.symlink("../../outside", "tree/sub/out_dir");
    fx.symlink(fx.outside.join("secret"), "tree/out_file_abs");
    fx.symlink("../outside/dir", "tree/out_dir2");
    fx.symlink("../keep", "tree/in_dir");
    std::fs::hard_link(fx.outside.join("secret"), fx.root.join("tree/hard")).unwrap();

    for tree in ["tree", "twin"] {
        let p = fx.ws.resolve(tree).unwrap();
        fx.ws.remove_dir(&p, true).unwrap();
        assert!(!fx.root.join(tree).exists(), "{tree} survived");
    }
    fx.assert_outside_intact();
    assert_eq!(
        std::fs::read_to_string(fx.root.join("keep/kept.txt")).unwrap(),
        "kept"
    );
}

/// remove_dir on a link to a directory outside does not remove (or empty) the target.
#[test]
fn remove_dir_on_link_to_outside() {
    let fx = Fixture::new();
    fx.symlink("../outside/dir", "out_link");
    fx.dir("real_dir/x");
    for recursive in [true, false] {
        let p = fx.ws.resolve("out_link").unwrap();
        assert!(fx.ws.remove_dir(&p, recursive).is_err());
        fx.assert_outside_intact();
        assert!(fx.root.join("out_link").symlink_metadata().is_ok());
    }
    // Twins: a real directory goes; a non-empty one needs `recursive`.
    let p = fx.ws.resolve("real_dir").unwrap();
    assert_kind(&fx.ws.remove_dir(&p, false), ErrorKind::Failed, "non-empty");
    fx.ws.remove_dir(&p, true).unwrap();
    assert!(!fx.root.join("real_dir").exists());
    // The root itself cannot be removed.
    assert!(fx.ws.remove_dir(&fx.ws.root_path(), true).is_err());
    assert!(fx.root.exists());
}

/// Listings report links as links, not as what they point to.
#[test]
fn read_dir_reports_links_without_following() {
    let fx = Fixture::new();
    fx.file("f.txt", "f");
    fx.dir("d");
    fx.symlink("../outside/dir", "out");
    let entries = fx.ws.read_dir(&fx.ws.root_path()).unwrap();
    let kinds: Vec<(String, FileKind)> = entries.into_iter().map(|e| (e.name, e.kind)).collect();
    assert_eq!(
        kinds,
        vec![
            ("d".to_string(), FileKind::Dir),
            ("f.txt".to_string(), FileKind::File),
            ("out".to_string(), FileKind::Symlink),
        ]
    );
    // A path through a link that escapes is refused when it is resolved, before any use.
    assert_kind(
        &fx.ws.resolve("out/secret"),
        ErrorKind::Denied,
        "resolve through an escaping link",
    );
    assert!(!fx.ws.exists(&fx.ws.resolve("missing").unwrap()).unwrap());
    assert!(fx.ws.exists(&fx.ws.resolve("f.txt").unwrap()).unwrap());
}

/// read_to_end enforces its limit.
#[test]
fn read_to_end_limit() {
    let fx = Fixture::new();
    let content = "x".repeat(1000);
    fx.file("big", &content);
    let p = fx.ws.resolve("big").unwrap();
    assert_kind(
        &fx.ws.read_to_end(&p, 999),
        ErrorKind::Failed,
        "over the limit",
    );
    assert_eq!(fx.ws.read_to_end(&p, 1000).unwrap().len(), content.len());
}

/// The derived paths (parent, join, strip_prefix, display) never leave their root.
#[test]
fn ws_path_helpers() {
    let fx = Fixture::new();
    let p = fx.ws.resolve("a/b/c.txt").unwrap();
    assert_eq!(p.file_name(), Some("c.txt"));
    let parent = p.parent().unwrap();
    assert_eq!(parent.rel(), "a/b");
    assert_eq!(p.strip_prefix(&parent), Some("c.txt"));
    assert_eq!(p.strip_prefix(&fx.ws.resolve("a/bb").unwrap()), None);
    assert_eq!(p.strip_prefix(&fx.ws.root_path()), Some("a/b/c.txt"));
    assert!(fx.ws.root_path().parent().is_none());
    for bad in ["..", ".", "", "x/y", "x\0"] {
        assert_kind(&parent.join(bad), ErrorKind::InvalidArgs, bad);
    }
    let joined = parent.join("d.txt").unwrap();
    assert_eq!(joined.rel(), "a/b/d.txt");
    assert_eq!(joined.to_string(), "a/b/d.txt");
    assert_eq!(fx.ws.root_path().to_string(), ".");
    assert_eq!(
        fx.ws.local_path(&joined).unwrap(),
        fx.root.join("a/b/d.txt")
    );
}

/// `resolve` judges the real location: a link inside the workspace that points into `.git` or
/// into a read-only root is treated as that place (benign twin: a link to an ordinary dir).
#[test]
fn links_are_judged_by_where_they_lead() {
    let fx = Fixture::new();
    fx.dir(".git/hooks");
    fx.dir("src");
    fx.symlink(".git/hooks", "hooks");
    fx.symlink("src", "code");
    let via_hooks = fx.ws.resolve("hooks/pre-commit").unwrap();
    assert!(via_hooks.is_git_internal(), "{via_hooks}");
    assert_eq!(via_hooks.to_string(), ".git/hooks/pre-commit");
    let via_code = fx.ws.resolve("code/main.rs").unwrap();
    assert!(!via_code.is_git_internal());
    assert_eq!(via_code.to_string(), "src/main.rs");
    // The link itself, as a final component, is not followed.
    assert_eq!(fx.ws.resolve("hooks").unwrap().to_string(), "hooks");
}
