//! Hostile arguments, each with the refusal it must get and a benign twin that must still work;
//! and a repository whose config, attributes and hooks try to make git run programs.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tool_core::ErrorKind;

use super::{Fixture, git_command};

/// `Err((kind, substring of the message))` or `Ok(substring of the output)`.
type Want = Result<&'static str, (ErrorKind, &'static str)>;

#[tokio::test]
async fn hostile_arguments_are_refused_and_twins_succeed() {
    let f = Fixture::repo();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "secret\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), f.path("link")).unwrap();
    let out = outside.path().display().to_string();

    let dash = (ErrorKind::InvalidArgs, "starts with `-`");
    let control = (ErrorKind::InvalidArgs, "control character");
    let escape = (ErrorKind::Denied, "outside the workspace");
    let cases: Vec<(String, Want)> = vec![
        // Revisions that read as options, and their twins.
        (
            format!(r#"{{"operation":"diff","rev":"--output={out}/x"}}"#),
            Err(dash),
        ),
        (
            r#"{"operation":"diff","rev":"HEAD~1"}"#.into(),
            Ok("+fn b() {}"),
        ),
        (
            format!(r#"{{"operation":"log","rev":"--output={out}/x"}}"#),
            Err(dash),
        ),
        (r#"{"operation":"log","rev":"HEAD~1"}"#.into(), Ok("first")),
        (r#"{"operation":"show","rev":"-p"}"#.into(), Err(dash)),
        (r#"{"operation":"show","rev":"HEAD~1"}"#.into(), Ok("first")),
        (
            r#"{"operation":"diff","rev":"HEAD..--upload-pack=evil"}"#.into(),
            Err(dash),
        ),
        (
            r#"{"operation":"log","rev":"HEAD~1..HEAD"}"#.into(),
            Ok("second"),
        ),
        (
            r#"{"operation":"blame","paths":["src/a.rs"],"rev":"--since=1"}"#.into(),
            Err(dash),
        ),
        (
            r#"{"operation":"stash","action":"drop","rev":"--index"}"#.into(),
            Err(dash),
        ),
        (
            r#"{"operation":"diff","rev":"HEAD\u0000"}"#.into(),
            Err(control),
        ),
        (
            r#"{"operation":"diff","rev":"HEAD\n--output=x"}"#.into(),
            Err(control),
        ),
        // Branch names.
        (
            r#"{"operation":"branch","branch":"-D","create":true}"#.into(),
            Err(dash),
        ),
        (
            r#"{"operation":"branch","branch":"--upload-pack=evil","create":true}"#.into(),
            Err(dash),
        ),
        (
            r#"{"operation":"branch","branch":"feature-1","create":true}"#.into(),
            Ok("Created branch feature-1"),
        ),
        (
            r#"{"operation":"checkout","branch":"-D"}"#.into(),
            Err(dash),
        ),
        (
            r#"{"operation":"checkout","branch":"--orphan","create":true}"#.into(),
            Err(dash),
        ),
        (
            r#"{"operation":"checkout","branch":"feature-1"}"#.into(),
            Ok("Switched to branch feature-1"),
        ),
        (
            r#"{"operation":"checkout","branch":"main"}"#.into(),
            Ok("Switched to branch main"),
        ),
        // Deleting: option-like, current, qualified, remote and malformed names; the twin
        // deletes the merged feature-1.
        (
            r#"{"operation":"branch","branch":"-D","delete":true}"#.into(),
            Err(dash),
        ),
        (
            r#"{"operation":"branch","branch":"--force","delete":true,"force":true}"#.into(),
            Err(dash),
        ),
        (
            r#"{"operation":"branch","branch":"main","delete":true,"force":true}"#.into(),
            Err((ErrorKind::Failed, "current branch")),
        ),
        (
            r#"{"operation":"branch","branch":"refs/heads/main","delete":true,"force":true}"#
                .into(),
            Err((
                ErrorKind::NotFound,
                "no local branch named `refs/heads/main`",
            )),
        ),
        (
            r#"{"operation":"branch","branch":"origin/main","delete":true}"#.into(),
            Err((ErrorKind::NotFound, "no local branch")),
        ),
        (
            r#"{"operation":"branch","branch":"../main","delete":true}"#.into(),
            Err((ErrorKind::InvalidArgs, "not a valid branch name")),
        ),
        (
            r#"{"operation":"branch","branch":"main@{1}","delete":true}"#.into(),
            Err((ErrorKind::InvalidArgs, "not a valid branch name")),
        ),
        (
            r#"{"operation":"branch","branch":"HEAD","delete":true}"#.into(),
            Err((ErrorKind::InvalidArgs, "not a valid branch name")),
        ),
        (
            r#"{"operation":"branch","branch":"main\n","delete":true}"#.into(),
            Err(control),
        ),
        (
            r#"{"operation":"branch","branch":"feature-1","delete":true}"#.into(),
            Ok("Deleted branch feature-1"),
        ),
        (
            r#"{"operation":"branch","branch":"a..b","create":true}"#.into(),
            Err((ErrorKind::InvalidArgs, "not a valid branch name")),
        ),
        (
            r#"{"operation":"branch","branch":"HEAD","create":true}"#.into(),
            Err((ErrorKind::InvalidArgs, "not a valid branch name")),
        ),
        (
            r#"{"operation":"branch","branch":"a\u0001","create":true}"#.into(),
            Err(control),
        ),
        // Paths.
        (
            r#"{"operation":"status","paths":["../outside"]}"#.into(),
            Err((ErrorKind::Denied, "contains `..`")),
        ),
        (
            r#"{"operation":"status","paths":["src/a.rs"]}"#.into(),
            Ok("## main"),
        ),
        (
            r#"{"operation":"add","paths":["../outside/x"]}"#.into(),
            Err((ErrorKind::Denied, "contains `..`")),
        ),
        (
            r#"{"operation":"diff","paths":["-rf"]}"#.into(),
            Err((ErrorKind::InvalidArgs, "./-rf")),
        ),
        (
            r#"{"operation":"diff","paths":["docs"]}"#.into(),
            Ok("no differences"),
        ),
        (
            r#"{"operation":"add","paths":["--all"]}"#.into(),
            Err((ErrorKind::InvalidArgs, "starts with `-`")),
        ),
        (
            r#"{"operation":"status","paths":["/etc/passwd"]}"#.into(),
            Err(escape),
        ),
        (
            r#"{"operation":"blame","paths":["/etc/passwd"]}"#.into(),
            Err(escape),
        ),
        (
            r#"{"operation":"status","paths":["link/secret"]}"#.into(),
            Err((ErrorKind::Denied, "leads outside the workspace")),
        ),
        (
            r#"{"operation":"add","paths":["link/secret"]}"#.into(),
            Err((ErrorKind::Denied, "leads outside the workspace")),
        ),
        (
            r#"{"operation":"add","paths":[".git/hooks/pre-commit"]}"#.into(),
            Err((ErrorKind::Denied, "inside a .git directory")),
        ),
        (
            r#"{"operation":"checkout","paths":[".git/config"]}"#.into(),
            Err((ErrorKind::Denied, "inside a .git directory")),
        ),
        (
            r#"{"operation":"status","paths":["a\u0000b"]}"#.into(),
            Err(control),
        ),
        // Arguments the tool does not have, and operations it does not offer.
        (
            r#"{"operation":"status","exec":"touch x"}"#.into(),
            Err((ErrorKind::InvalidArgs, "exec")),
        ),
        (
            r#"{"operation":"push"}"#.into(),
            Err((ErrorKind::InvalidArgs, "operation")),
        ),
        (
            r#"{"operation":"status","message":"x"}"#.into(),
            Err((ErrorKind::InvalidArgs, "does not apply")),
        ),
    ];
    for (args, want) in &cases {
        match (f.call(args).await, want) {
            (Ok(out), Ok(needle)) => {
                let text = out.joined_text();
                assert!(text.contains(needle), "{args}: {text}");
            }
            (Err(e), Err((kind, needle))) => {
                assert_eq!(e.kind(), *kind, "{args}: {e}");
                assert!(e.to_string().contains(needle), "{args}: {e}");
            }
            (got, _) => panic!("{args}: want {want:?}, got {got:?}"),
        }
    }
    // Nothing appeared outside, and the symbolic link's target was left alone.
    let names: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("secret")]);
    assert_eq!(f.git(&["branch", "--show-current"]).trim(), "main");
    assert_eq!(
        f.git(&["branch", "--list"]),
        "* main\n",
        "main survived, feature-1 is gone"
    );
    assert!(!f.git(&["ls-files"]).contains("link"));
}

const HOOKS: &[&str] = &[
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-checkout",
    "post-index-change",
    "reference-transaction",
    "pre-auto-gc",
    "post-rewrite",
];

/// Plants config entries, attributes and hooks that each make `git` run `touch <markers>/NAME`.
fn plant(f: &Fixture, markers: &Path) {
    let m = markers.display();
    // The attributes first, committed while the config is still harmless.
    f.write(".gitattributes", "* filter=pwn diff=pwn\n");
    f.git(&["add", ".gitattributes"]);
    f.git(&["commit", "-q", "-m", "attributes"]);
    let config = format!(
        r#"
[core]
	fsmonitor = touch {m}/fsmonitor
	pager = touch {m}/pager
	editor = touch {m}/editor
	askPass = touch {m}/askpass
	sshCommand = touch {m}/ssh
[diff]
	external = touch {m}/diff-external
[diff "pwn"]
	textconv = touch {m}/textconv
	command = touch {m}/diff-command
[filter "pwn"]
	clean = touch {m}/clean
	smudge = touch {m}/smudge
	process = touch {m}/filter-process
[commit]
	gpgsign = true
[gpg]
	program = touch {m}/gpg
[pager]
	diff = touch {m}/pager-diff
	log = touch {m}/pager-log
[sequence]
	editor = touch {m}/sequence-editor
[credential]
	helper = !touch {m}/credential
[uploadpack]
	packObjectsHook = touch {m}/pack-objects
"#
    );
    let path = f.path(".git/config");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&config);
    std::fs::write(&path, text).unwrap();
    std::fs::create_dir_all(f.path(".git/hooks")).unwrap();
    for hook in HOOKS {
        let p = f.path(&format!(".git/hooks/{hook}"));
        std::fs::write(&p, format!("#!/bin/sh\ntouch {m}/hook-{hook}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn markers_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn no_hook_filter_pager_or_config_program_ever_runs() {
    let f = Fixture::repo();
    f.git(&["branch", "other", "HEAD~1"]);
    let markers = tempfile::tempdir().unwrap();
    plant(&f, markers.path());

    f.write("src/a.rs", "fn a() { 42 }\n");
    std::fs::remove_file(f.path("docs/guide.md")).unwrap();
    let calls = [
        r#"{"operation":"status"}"#,
        r#"{"operation":"diff"}"#,
        r#"{"operation":"checkout","paths":["docs/guide.md"]}"#,
        r#"{"operation":"add","paths":["src/a.rs"]}"#,
        r#"{"operation":"diff","cached":true}"#,
        r#"{"operation":"commit","message":"through libgit2"}"#,
        r#"{"operation":"log","limit":5}"#,
        r#"{"operation":"show"}"#,
        r#"{"operation":"blame","paths":["src/a.rs"]}"#,
        r#"{"operation":"branch","branch":"made-here","create":true}"#,
        r#"{"operation":"checkout","branch":"other"}"#,
        r#"{"operation":"checkout","branch":"main"}"#,
        r#"{"operation":"checkout","branch":"fresh","create":true,"rev":"HEAD~1"}"#,
        r#"{"operation":"checkout","branch":"main"}"#,
    ];
    for args in calls {
        f.ok(args).await;
    }
    f.write("src/a.rs", "fn a() { 43 }\n");
    for args in [
        r#"{"operation":"stash","message":"hostile"}"#,
        r#"{"operation":"stash","action":"apply"}"#,
        r#"{"operation":"diff","rev":"HEAD~2"}"#,
        r#"{"operation":"stash","action":"drop"}"#,
    ] {
        f.ok(args).await;
    }
    // The file content round-tripped untouched by any filter.
    assert_eq!(f.read("src/a.rs"), "fn a() { 43 }\n");
    assert_eq!(f.read("docs/guide.md"), "# Guide\n");
    assert_eq!(
        markers_in(markers.path()),
        Vec::<String>::new(),
        "a program ran"
    );
    // The commit is an ordinary unsigned commit (no gpg program ran).
    assert!(!f.git(&["cat-file", "commit", "HEAD~0"]).contains("gpgsig"));

    // Control: the real git does run these programs, so the setup above was live.
    let _ = git_command(f.root(), &["status"]).output().unwrap();
    let _ = git_command(f.root(), &["hook", "run", "pre-commit"])
        .output()
        .unwrap();
    let ran = markers_in(markers.path());
    assert!(ran.contains(&"fsmonitor".to_string()), "{ran:?}");
    assert!(ran.contains(&"hook-pre-commit".to_string()), "{ran:?}");
}

#[tokio::test]
async fn checkout_never_writes_through_a_tracked_symbolic_link() {
    let f = Fixture::repo();
    let outside = tempfile::tempdir().unwrap();
    // Branch `links`: `evil` is a link to a directory outside the workspace.
    f.git(&["checkout", "-q", "-b", "links"]);
    std::os::unix::fs::symlink(outside.path(), f.path("evil")).unwrap();
    f.git(&["add", "evil"]);
    f.git(&["commit", "-q", "-m", "link"]);
    // Branch `files`: `evil/pwned.txt` is a file in a directory of the same name.
    f.git(&["checkout", "-q", "main"]);
    f.git(&["checkout", "-q", "-b", "files"]);
    f.write("evil/pwned.txt", "pwned\n");
    f.git(&["add", "evil"]);
    f.git(&["commit", "-q", "-m", "file"]);
    f.git(&["checkout", "-q", "links"]);
    assert!(f.path("evil").is_symlink());

    f.ok(r#"{"operation":"checkout","branch":"files"}"#).await;
    assert!(!outside.path().join("pwned.txt").exists());
    assert!(f.path("evil").is_dir() && !f.path("evil").is_symlink());
    assert_eq!(f.read("evil/pwned.txt"), "pwned\n");
    f.ok(r#"{"operation":"checkout","branch":"links"}"#).await;
    assert!(f.path("evil").is_symlink());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    // Restoring the file from the other branch while the link is checked out.
    let r = f
        .call(r#"{"operation":"checkout","paths":["evil/pwned.txt"],"rev":"files"}"#)
        .await;
    let e = r.unwrap_err();
    assert_eq!(e.kind(), tool_core::ErrorKind::Denied, "{e}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

/// A branch, a stash or an old commit that carries its own `toolshed.toml` (or a file under a
/// `policy.protected_paths` entry) must not replace the user's: every checkout, stash push and
/// stash apply is checked against the protected paths before anything is written. Each attack
/// beside its benign twin on an ordinary file.
#[tokio::test]
async fn git_never_writes_protected_paths() {
    use tool_core::{ErrorKind, Limits, Policy, ToolContext, Workspace};
    let f = Fixture::repo();
    f.write("toolshed.toml", "[policy]\nautonomy = \"read_only\"\n");
    f.write("secrets/key", "user\n");
    f.git(&["add", "."]);
    f.git(&["commit", "-q", "-m", "config"]);
    // A branch whose toolshed.toml widens, and one that changes only an ordinary file.
    f.git(&["checkout", "-q", "-b", "evil"]);
    f.write("toolshed.toml", "[policy]\nautonomy = \"full\"\n");
    f.git(&["commit", "-q", "-am", "widen"]);
    f.git(&["checkout", "-q", "-b", "keyswap", "main"]);
    f.write("secrets/key", "attacker\n");
    f.git(&["commit", "-q", "-am", "swap the key"]);
    f.git(&["checkout", "-q", "-b", "docs", "main"]);
    f.write("docs/guide.md", "# Guide, v2\n");
    f.git(&["commit", "-q", "-am", "docs"]);
    f.git(&["checkout", "-q", "main"]);
    let mut policy = Policy::supervised();
    policy.protected_paths = vec!["secrets".into()];
    let ctx = ToolContext::new(
        Workspace::local(f.root()).unwrap(),
        std::sync::Arc::new(policy),
        std::sync::Arc::new(Limits::default()),
    );
    let call = |args: &'static str| {
        let ctx = ctx.clone();
        async move {
            super::stack()
                .call_json("git_operations", args, ctx.for_call())
                .await
        }
    };
    let untouched = |f: &Fixture| {
        assert_eq!(
            f.read("toolshed.toml"),
            "[policy]\nautonomy = \"read_only\"\n"
        );
        assert_eq!(f.read("secrets/key"), "user\n");
    };
    #[rustfmt::skip]
    let attacks: &[&str] = &[
        r#"{"operation":"checkout","branch":"evil"}"#,
        r#"{"operation":"checkout","rev":"evil"}"#,
        r#"{"operation":"checkout","branch":"evil2","create":true,"rev":"evil"}"#,
        r#"{"operation":"checkout","rev":"evil","paths":["."]}"#,
        r#"{"operation":"checkout","rev":"evil","paths":["toolshed.toml"]}"#,
        r#"{"operation":"checkout","branch":"keyswap"}"#,
        r#"{"operation":"checkout","rev":"keyswap","paths":["secrets"]}"#,
    ];
    for args in attacks {
        let e = call(args).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Denied, "{args}: {e}");
        untouched(&f);
        assert_eq!(
            f.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
            "main",
            "{args}"
        );
    }
    // Twins: the ordinary branch and an ordinary restore work.
    call(r#"{"operation":"checkout","rev":"docs","paths":["docs"]}"#)
        .await
        .unwrap();
    assert_eq!(f.read("docs/guide.md"), "# Guide, v2\n");
    f.git(&["checkout", "-q", "--", "."]);
    f.git(&["reset", "-q", "--hard", "main"]);
    call(r#"{"operation":"checkout","branch":"docs"}"#)
        .await
        .unwrap();
    assert_eq!(f.read("docs/guide.md"), "# Guide, v2\n");
    call(r#"{"operation":"checkout","branch":"main"}"#)
        .await
        .unwrap();
    untouched(&f);

    // From a branch without the file, switching to one that adds it is refused too.
    f.git(&["checkout", "-q", "-b", "bare", "main~1"]);
    assert!(!f.path("toolshed.toml").exists());
    for args in [
        r#"{"operation":"checkout","branch":"evil"}"#,
        r#"{"operation":"checkout","branch":"main"}"#,
    ] {
        let e = call(args).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Denied, "{args}: {e}");
        assert!(!f.path("toolshed.toml").exists(), "{args}");
    }
    f.git(&["checkout", "-q", "main"]);
    untouched(&f);

    // Stash push would reset a locally edited toolshed.toml to the committed one.
    f.write(
        "toolshed.toml",
        "[policy]\nautonomy = \"read_only\"\ndenied_commands = [\"curl\"]\n",
    );
    let e = call(r#"{"operation":"stash"}"#).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Denied, "{e}");
    assert!(f.read("toolshed.toml").contains("curl"));
    f.git(&["checkout", "-q", "--", "toolshed.toml"]);
    // A stash (made outside Toolshed) that changes toolshed.toml is not applied.
    f.write("toolshed.toml", "[policy]\nautonomy = \"full\"\n");
    f.git(&["stash", "-q"]);
    untouched(&f);
    for args in [
        r#"{"operation":"stash","action":"apply"}"#,
        r#"{"operation":"stash","action":"pop"}"#,
    ] {
        let e = call(args).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Denied, "{args}: {e}");
        untouched(&f);
    }
    f.git(&["stash", "drop", "-q"]);
    // Twin: stashing and popping an ordinary change works.
    f.write("docs/guide.md", "# Guide, local\n");
    call(r#"{"operation":"stash"}"#).await.unwrap();
    assert_eq!(f.read("docs/guide.md"), "# Guide\n");
    call(r#"{"operation":"stash","action":"pop"}"#)
        .await
        .unwrap();
    assert_eq!(f.read("docs/guide.md"), "# Guide, local\n");
    untouched(&f);
}

/// Found by the adversary: a rule such as `write(src/**)` = deny held for the file tools but
/// not for a whole-tree checkout. Every file a checkout or stash changes is judged; an `ask` on
/// a file the call did not name is refused (nobody was asked about it). Twins: other paths.
#[tokio::test]
async fn git_respects_path_rules_on_every_file_it_changes() {
    use tool_core::{Decision, ErrorKind, Limits, Policy, ToolContext, Workspace};
    let f = Fixture::repo();
    f.write("src/a.txt", "v1\n");
    f.git(&["add", "."]);
    f.git(&["commit", "-q", "-m", "a"]);
    f.git(&["checkout", "-q", "-b", "ev"]);
    f.write("src/a.txt", "EVIL\n");
    f.write("docs/guide.md", "# Guide, ev\n");
    f.git(&["commit", "-q", "-am", "evil"]);
    f.git(&["checkout", "-q", "main"]);
    for decision in [Decision::Deny, Decision::Ask] {
        let policy = Policy::supervised()
            .rule("write(src/**)", decision)
            .unwrap();
        let ctx = ToolContext::new(
            Workspace::local(f.root()).unwrap(),
            std::sync::Arc::new(policy),
            std::sync::Arc::new(Limits::default()),
        );
        for args in [
            r#"{"operation":"checkout","rev":"ev","paths":["."]}"#,
            r#"{"operation":"checkout","branch":"ev"}"#,
            r#"{"operation":"checkout","rev":"ev"}"#,
        ] {
            let e = super::stack()
                .call_json("git_operations", args, ctx.for_call())
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Denied, "{decision:?} {args}: {e}");
            assert_eq!(f.read("src/a.txt"), "v1\n", "{decision:?} {args}");
        }
        // Twin: a path the rule does not cover is restored.
        super::stack()
            .call_json(
                "git_operations",
                r#"{"operation":"checkout","rev":"ev","paths":["docs"]}"#,
                ctx.for_call(),
            )
            .await
            .unwrap();
        assert_eq!(f.read("docs/guide.md"), "# Guide, ev\n");
        f.git(&["checkout", "-q", "main", "--", "docs"]);
        if decision == Decision::Ask {
            // Named in `paths`, the asked-about file is restored once the user approves (the
            // test stack approves every ask).
            super::stack()
                .call_json(
                    "git_operations",
                    r#"{"operation":"checkout","rev":"ev","paths":["src/a.txt"]}"#,
                    ctx.for_call(),
                )
                .await
                .unwrap();
            assert_eq!(f.read("src/a.txt"), "EVIL\n");
            f.git(&["checkout", "-q", "main", "--", "src"]);
        }
    }
}

/// Found by the adversary: with `read(src/**)` refused, `show` and `diff` of the whole tree
/// printed the refused file's changes. They name it and withhold its lines; twins: the other
/// files' changes print, and without the rule the file's do too.
#[tokio::test]
async fn show_and_diff_withhold_files_the_rules_keep_from_reading() {
    use tool_core::{Decision, Limits, Policy, ToolContext, Workspace};
    let f = Fixture::repo();
    f.write("src/a.txt", "v1\n");
    f.git(&["add", "."]);
    f.git(&["commit", "-q", "-m", "a"]);
    f.git(&["checkout", "-q", "-b", "ev"]);
    f.write("src/a.txt", "SECRET-CHANGE\n");
    f.write("docs/guide.md", "# Guide, visible\n");
    f.git(&["commit", "-q", "-am", "ev"]);
    f.git(&["checkout", "-q", "main"]);
    for (rule, hidden) in [
        (Some(Decision::Deny), true),
        (Some(Decision::Ask), true),
        (None, false),
    ] {
        let mut policy = Policy::supervised();
        if let Some(d) = rule {
            policy = policy.rule("read(src/**)", d).unwrap();
        }
        let ctx = ToolContext::new(
            Workspace::local(f.root()).unwrap(),
            std::sync::Arc::new(policy),
            std::sync::Arc::new(Limits::default()),
        );
        for args in [
            r#"{"operation":"show","rev":"ev"}"#,
            r#"{"operation":"diff","rev":"main..ev"}"#,
        ] {
            let out = super::stack()
                .call_json("git_operations", args, ctx.for_call())
                .await
                .unwrap()
                .joined_text();
            assert!(out.contains("Guide, visible"), "{rule:?} {args}: {out}");
            assert_eq!(
                !out.contains("SECRET-CHANGE"),
                hidden,
                "{rule:?} {args}: {out}"
            );
            assert_eq!(out.contains("withheld"), hidden, "{rule:?} {args}: {out}");
        }
    }
}

/// blame prints a file's lines, so it names the file it reads and meets its read rules, at any
/// revision; log prints no file's content, and naming a read-denied tree in its paths meets
/// the rule too. Each refusal beside a twin on a readable file.
#[tokio::test]
async fn blame_and_log_meet_the_read_rules_of_the_files_they_name() {
    use tool_core::{Limits, Policy, ToolContext, Workspace};
    let f = Fixture::repo();
    f.write("secrets/key.txt", "SECRET-LINE\n");
    f.write("src/a.txt", "open line\n");
    f.git(&["add", "."]);
    f.git(&["commit", "-q", "-m", "both"]);
    let policy = Policy::supervised()
        .rule("read(secrets/**)", tool_core::Decision::Deny)
        .unwrap();
    let ctx = ToolContext::new(
        Workspace::local(f.root()).unwrap(),
        std::sync::Arc::new(policy),
        std::sync::Arc::new(Limits::default()),
    );
    // (arguments, refused)
    let rows = [
        (r#"{"operation":"blame","paths":["secrets/key.txt"]}"#, true),
        (
            r#"{"operation":"blame","paths":["secrets/key.txt"],"rev":"HEAD"}"#,
            true,
        ),
        (
            r#"{"operation":"blame","paths":["./secrets/../secrets/key.txt"]}"#,
            true,
        ),
        (r#"{"operation":"blame","paths":["src/a.txt"]}"#, false),
        (r#"{"operation":"log","paths":["secrets"]}"#, true),
        (r#"{"operation":"log","paths":["src"]}"#, false),
        (r#"{"operation":"log"}"#, false),
    ];
    for (args, refused) in rows {
        let result = super::stack()
            .call_json("git_operations", args, ctx.for_call())
            .await;
        match result {
            Ok(out) => {
                assert!(!refused, "{args}: {}", out.joined_text());
                assert!(!out.joined_text().contains("SECRET-LINE"), "{args}");
            }
            Err(e) => {
                assert!(refused, "{args}: {e}");
                assert_eq!(e.kind(), tool_core::ErrorKind::Denied, "{args}: {e}");
            }
        }
    }
}

/// Found in round 12: with `read(secrets/**)` = deny, `add ["."]` staged `secrets/key.txt`
/// into the object store (from where a commit and a push would carry it away), though `add
/// ["secrets"]` was refused. A wide add skips, and counts without naming, the files the policy
/// keeps from git_operations, new or changed; twins: the other files are staged, and without
/// the rule everything is.
#[tokio::test]
async fn add_skips_files_the_read_rules_keep() {
    use tool_core::{Limits, Policy, ToolContext, Workspace};
    for ruled in [true, false] {
        let f = Fixture::repo();
        f.write("secrets/old.txt", "OLD\n");
        f.write("src/a.txt", "open line\n");
        f.git(&["add", "."]);
        f.git(&["commit", "-q", "-m", "first"]);
        f.write("secrets/old.txt", "CHANGED-SECRET\n");
        f.write("secrets/key.txt", "NEW-SECRET\n");
        f.write("src/b.txt", "another\n");
        // A deletion not yet staged: it is staged too.
        f.git(&["rm", "-q", "src/a.txt"]);
        f.git(&["reset", "-q"]);
        let mut policy = Policy::supervised();
        if ruled {
            policy = policy
                .rule("read(secrets/**)", tool_core::Decision::Deny)
                .unwrap();
        }
        let ctx = ToolContext::new(
            Workspace::local(f.root()).unwrap(),
            std::sync::Arc::new(policy),
            std::sync::Arc::new(Limits::default()),
        );
        for paths in [r#"["."]"#, r#"["secrets/../."]"#] {
            let args = format!(r#"{{"operation":"add","paths":{paths}}}"#);
            let out = super::stack()
                .call_json("git_operations", &args, ctx.for_call())
                .await
                .unwrap()
                .joined_text();
            let staged = f.git(&["diff", "--cached", "--name-only"]);
            assert!(staged.contains("src/b.txt"), "{args}: {staged}");
            assert!(staged.contains("src/a.txt"), "{args}: {staged}");
            if ruled {
                assert!(!staged.contains("secrets/"), "{args}: {staged}\n{out}");
                assert!(out.contains("2 files not staged"), "{args}: {out}");
                assert!(
                    !out.contains("key.txt") && !out.contains("old.txt"),
                    "{out}"
                );
            } else {
                assert!(staged.contains("secrets/key.txt"), "{args}: {staged}");
                assert!(staged.contains("secrets/old.txt"), "{args}: {staged}");
            }
        }
    }
}

/// A branch whose tree shapes a directory like git's own (`q/HEAD`, `q/objects/`, `q/refs/`
/// and a `q/config` with `core.fsmonitor`) is not checked out: git takes `q` for a repository
/// and runs its config when the user's git next works there (round 19). Nothing is changed.
/// Twin: a branch with the same files under other names checks out.
#[tokio::test]
async fn checkout_does_not_shape_a_directory_like_git() {
    let f = Fixture::repo();
    for (branch, head) in [("evil", "HEAD"), ("fine", "HEAD.md")] {
        f.git(&["checkout", "-q", "-b", branch, "main"]);
        f.write(&format!("q/{head}"), "ref: refs/heads/main\n");
        f.write("q/objects/k", "x\n");
        f.write("q/refs/heads/k", "x\n");
        f.write("q/config", "[core]\n\tfsmonitor = touch PWN\n");
        f.git(&["add", "."]);
        f.git(&["commit", "-q", "-m", branch]);
        f.git(&["checkout", "-q", "main"]);
        std::fs::remove_dir_all(f.path("q")).ok();
    }
    let e = f.err(r#"{"operation":"checkout","branch":"evil"}"#).await;
    assert_eq!(e.kind(), tool_core::ErrorKind::Denied, "{e}");
    assert!(e.to_string().contains("git's own directory"), "{e}");
    assert!(!f.path("q").exists());
    assert_eq!(f.git(&["rev-parse", "--abbrev-ref", "HEAD"]), "main\n");
    f.ok(r#"{"operation":"checkout","branch":"fine"}"#).await;
    assert!(f.path("q/HEAD.md").exists());
}
