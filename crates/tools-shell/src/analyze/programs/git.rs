//! `git`: global options, subcommands, and the options that make git run programs or write
//! files. Git's parse-options accepts any unique prefix of a long option (`git diff --ext` is
//! `--ext-diff`, `git log --out=x` is `--output`), so a long option counts as dangerous when it
//! is a prefix of a dangerous one, and a read-only subcommand stays low only with options from
//! its table.

use tool_core::Risk;

use super::super::walk::Walker;
use super::super::words::Word;
use super::super::{Reach, TargetKind, Unknown};
use super::{Class, dynamic_flag, low};

/// Long options that run programs, whatever the subcommand.
const RUNS_PROGRAMS: &[&str] = &[
    "upload-pack",
    "receive-pack",
    "exec",
    "template",
    "separate-git-dir",
    "open-files-in-pager",
    "config",
    "ext-diff",
    "textconv",
    "run",
    "extcmd",
    "tool",
];

/// Long options that write files.
const WRITES: &[&str] = &["output", "output-directory"];

/// Options of the log, diff and show family that only change what is shown.
const SHOW_OPTS: &str = "text oneline graph decorate decorate-refs decorate-refs-exclude source abbrev-commit abbrev pretty format date relative-date stat shortstat numstat name-only name-status raw patch no-patch patch-with-stat patch-with-raw all branches tags remotes glob exclude author committer grep all-match invert-grep regexp-ignore-case basic-regexp extended-regexp fixed-strings perl-regexp since after until before max-count skip merges min-parents max-parents first-parent not reverse topo-order date-order author-date-order follow full-diff log-size color word-diff word-diff-regex color-words unified function-context ignore-all-space ignore-space-change ignore-blank-lines ignore-space-at-eol ignore-cr-at-eol diff-filter find-renames find-copies find-copies-harder relative cached staged merge-base check summary dirstat cumulative full-index binary src-prefix dst-prefix default-prefix line-prefix histogram patience minimal diff-algorithm anchored indent-heuristic exit-code quiet submodule ignore-submodules full-history simplify-merges ancestry-path simplify-by-decoration show-signature show-notes notes expand-tabs encoding mailmap use-mailmap boundary left-right cherry-pick cherry-mark cherry walk-reflogs merge do-walk pickaxe-all pickaxe-regex ignore-missing children parents timestamp compact-summary break-rewrites irreversible-delete rotate-to skip-to remerge-diff diff-merges combined-all-paths dense-combined cc ws-error-highlight color-moved color-moved-ws inter-hunk-context output-indicator-new output-indicator-old output-indicator-context ita-invisible-in-index ita-visible-in-index numbered-files count objects objects-edge unpacked missing filter no-filter in-commit-order sparse bisect reflog single-worktree alternate-refs exclude-hidden stdin porcelain short branch long verbose untracked-files ignored column ahead-behind renames show-stash null show-origin show-scope get get-all get-regexp get-urlmatch list name-only type bool int bool-or-int path expiry-date default local worktree includes heads sort contains merged points-at format-string show-current ignore-case others modified deleted killed stage directory empty-directory error-unmatch with-tree full-name recurse-submodules eol deduplicate abbrev exclude-standard exclude-from exclude-per-directory name-only name-status long-names full-tree max-depth line-number column heading break function-context word-regexp invert-match files-with-matches files-without-match only-matching context after-context before-context threads untracked no-index textconv-cache show-toplevel show-cdup show-prefix git-dir git-common-dir absolute-git-dir is-inside-git-dir is-inside-work-tree is-bare-repository is-shallow-repository show-superproject-working-tree shared-index-path show-object-format show-ref-format symbolic symbolic-full-name verify short sq sq-quote local-env-vars resolve-git-dir since-until revs-only no-revs flags no-flags default prefix parseopt keep-dashdash stop-at-non-option stuck-long tags contains exact-match candidates dirty broken match first-parent always long batch batch-check batch-all-objects batch-command buffer follow-symlinks unordered allow-unknown-type textconv filters path expire stale-fix dry-run head heads dereference hash exclude-existing all-match incremental porcelain line-porcelain root show-stats show-name show-number score-debug show-email minimal contents ignore-rev ignore-revs-file color-lines color-by-age progress independent octopus is-ancestor fork-point refs name-only annotate no-undefined always help";

fn class_of_option(sub: &str, t: &str) -> Option<Class> {
    let long = t.strip_prefix("--")?;
    let name = long.split('=').next().unwrap_or(long);
    if name.is_empty() || name.starts_with("no-") {
        return None;
    }
    // An exact name wins over the longer names it abbreviates (`--text` is not `--textconv`).
    if !RUNS_PROGRAMS.contains(&name)
        && !WRITES.contains(&name)
        && SHOW_OPTS.split_whitespace().any(|o| o == name)
    {
        return None;
    }
    if let Some(full) = RUNS_PROGRAMS.iter().find(|o| o.starts_with(name)) {
        return Some(Class::new(
            Risk::High,
            Reach::Unknown,
            format!("`git {sub} {t}` (--{full}) can run other programs"),
        ));
    }
    if let Some(full) = WRITES.iter().find(|o| o.starts_with(name)) {
        return Some(Class::new(
            Risk::Medium,
            Reach::Contained,
            format!("`git {sub} --{full}` writes files"),
        ));
    }
    None
}

fn known(name: &str) -> bool {
    let name = name.strip_prefix("no-").unwrap_or(name);
    let hits: Vec<&str> = SHOW_OPTS
        .split_whitespace()
        .filter(|o| o.starts_with(name))
        .collect();
    hits.contains(&name) || hits.len() == 1
}

impl Walker {
    pub(crate) fn git(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let mut c = low();
        if let Some(d) = dynamic_flag(args) {
            return Ok(Class::new(
                Risk::High,
                Reach::Unknown,
                format!(
                    "`{}` is computed at run time and could be a git option such as --upload-pack or -c",
                    d.raw
                ),
            ));
        }
        let mut i = 0;
        let mut changes_dir = false;
        // Global options: git reads them itself, by exact name.
        while i < args.len() {
            let t = args[i].display();
            if !t.starts_with('-') {
                break;
            }
            match t {
                "-c" => {
                    return Ok(Class::new(
                        Risk::High,
                        Reach::Unknown,
                        "`git -c` sets configuration, which can name programs to run",
                    ));
                }
                "-C" => {
                    changes_dir = true;
                    i += 1;
                }
                "--version" | "--exec-path" | "--html-path" | "--man-path" | "--info-path"
                | "-P" | "--no-pager" | "--no-replace-objects" | "--no-lazy-fetch"
                | "--literal-pathspecs" | "--glob-pathspecs" | "--noglob-pathspecs"
                | "--icase-pathspecs" | "--no-optional-locks" | "--no-advice" => {}
                "-p" | "--paginate" => c.raise(
                    Risk::Medium,
                    Reach::Unknown,
                    "`git -p` runs a pager",
                ),
                "--help" | "-h" => c.raise(
                    Risk::Medium,
                    Reach::Unknown,
                    "`git --help` runs man or a browser",
                ),
                _ if t.starts_with("--list-cmds=") => {}
                _ if t.starts_with("--config-env") || t.starts_with("--exec-path=") => {
                    return Ok(Class::new(
                        Risk::High,
                        Reach::Unknown,
                        format!("`git {t}` makes git run other programs"),
                    ));
                }
                _ if t.starts_with("--git-dir") => {
                    return Ok(Class::new(
                        Risk::High,
                        Reach::Unknown,
                        format!(
                            "`git {t}` points git at another repository, whose configuration can run programs"
                        ),
                    ));
                }
                "--bare" => c.raise(
                    Risk::Medium,
                    Reach::Unknown,
                    "`git --bare` takes the directory for a repository, whose configuration can run programs",
                ),
                _ if t.starts_with("--work-tree")
                    || t.starts_with("--namespace")
                    || t.starts_with("--super-prefix") =>
                {
                    if !t.contains('=') {
                        i += 1;
                    }
                    c.raise(
                        Risk::Medium,
                        Reach::Unknown,
                        format!("`git {t}` works on another tree or namespace"),
                    );
                }
                _ => c.raise(
                    Risk::Medium,
                    Reach::Unknown,
                    format!("`git {t}` is a global option Toolshed does not know"),
                ),
            }
            i += 1;
        }
        let Some(sub) = args.get(i) else {
            return Ok(c);
        };
        let rest = &args[i + 1..];
        let sub = sub.display();
        for a in rest {
            let t = a.display();
            if let Some(o) = class_of_option(sub, t) {
                c.merge(o);
            }
            if (sub == "grep" && t.starts_with('-') && !t.starts_with("--") && t.contains('O'))
                || t.contains("ext::")
                || t.contains("fd::")
            {
                return Ok(Class::new(
                    Risk::High,
                    Reach::Unknown,
                    format!("`git {sub} {t}` can run other programs"),
                ));
            }
        }
        if let Some(why) = runs_programs(sub, rest) {
            // Still classified as the subcommand below (a clone needs the network).
            c.raise(Risk::High, Reach::Unknown, why);
            c.opaque = true;
            c.merge(self.git_sub(sub, rest));
            return Ok(c);
        }
        if c.risk == Risk::High {
            return Ok(c);
        }
        // `--output=FILE`, `--output FILE` and `format-patch -o DIR`: the file is a write target.
        for (k, a) in rest.iter().enumerate() {
            let t = a.display();
            let Some(long) = t.strip_prefix("--") else {
                if sub == "format-patch"
                    && t == "-o"
                    && let Some(f) = rest.get(k + 1)
                {
                    self.target(f, TargetKind::Write)?;
                }
                continue;
            };
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            if name.is_empty() || !WRITES.iter().any(|o| o.starts_with(name)) {
                continue;
            }
            match value {
                Some(v) => self.target(&Word::fixed(v), TargetKind::Write)?,
                None => {
                    if let Some(f) = rest.get(k + 1) {
                        self.target(f, TargetKind::Write)?;
                    }
                }
            }
        }
        let class = self.git_sub(sub, rest);
        c.merge(class);
        if changes_dir && c.risk >= Risk::Medium {
            c.raise(
                Risk::High,
                Reach::Unknown,
                "`git -C` with a command that writes works in another directory",
            );
        }
        Ok(c)
    }

    fn git_sub(&mut self, sub: &str, rest: &[Word]) -> Class {
        let positional = rest
            .iter()
            .filter(|a| !a.display().starts_with('-'))
            .count();
        let flag = |shorts: &str, longs: &[&str]| {
            rest.iter().any(|a| {
                let t = a.display();
                if let Some(l) = t.strip_prefix("--") {
                    let n = l.split('=').next().unwrap_or(l);
                    !n.is_empty() && longs.iter().any(|o| o.starts_with(n))
                } else if let Some(b) = t.strip_prefix('-') {
                    b.chars().any(|c| shorts.contains(c))
                } else {
                    false
                }
            })
        };
        let first = rest.first().map(|w| w.display());
        let git_internal = |why: String| Class::new(Risk::Medium, Reach::GitInternals, why);
        let reader = || {
            // A read-only subcommand with an option Toolshed does not know asks.
            let unknown = rest.iter().find(|a| {
                a.display()
                    .strip_prefix("--")
                    .map(|l| l.split('=').next().unwrap_or(l))
                    .is_some_and(|n| {
                        !n.is_empty()
                            && !known(n)
                            && !WRITES.iter().any(|o| o.starts_with(n))
                            && !n
                                .strip_prefix("no-")
                                .is_some_and(|r| RUNS_PROGRAMS.iter().any(|o| o.starts_with(r)))
                    })
            });
            match unknown {
                Some(a) => Class::new(
                    Risk::Medium,
                    Reach::Unknown,
                    format!(
                        "`git {sub} {}` is an option Toolshed does not know",
                        a.display()
                    ),
                ),
                None => low(),
            }
        };
        match sub {
            "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "ls-tree" | "blame"
            | "describe" | "shortlog" | "cat-file" | "grep" | "rev-list" | "merge-base"
            | "name-rev" | "for-each-ref" | "show-ref" | "count-objects" | "version"
            | "check-ignore" | "check-attr" | "whatchanged" | "show-branch" | "var"
            | "annotate" | "diff-tree" | "diff-files" | "diff-index" | "range-diff" | "cherry" => {
                reader()
            }
            "reflog"
                if matches!(first, None | Some("show" | "list"))
                    || first.is_some_and(|f| f.starts_with('-')) =>
            {
                reader()
            }
            "reflog" => git_internal("changes the reflog".into()),
            "help" => Class::new(
                Risk::Medium,
                Reach::Unknown,
                "`git help` runs man or a browser",
            ),
            "branch" => {
                if flag("D", &[]) || (flag("d", &["delete"]) && flag("f", &["force"])) {
                    Class::new(
                        Risk::High,
                        Reach::Destructive,
                        "force-deletes a branch and its unmerged commits",
                    )
                } else if (positional == 0
                    || flag(
                        "l",
                        &[
                            "list",
                            "contains",
                            "merged",
                            "no-merged",
                            "show-current",
                            "points-at",
                        ],
                    ))
                    && !flag(
                        "dDmMcCfue",
                        &[
                            "delete",
                            "move",
                            "copy",
                            "force",
                            "set-upstream-to",
                            "unset-upstream",
                            "edit-description",
                            "track",
                        ],
                    )
                {
                    reader()
                } else {
                    git_internal("changes branches".into())
                }
            }
            "tag" => {
                if (positional == 0
                    || flag(
                        "l",
                        &["list", "contains", "points-at", "merged", "no-merged"],
                    ))
                    && !flag(
                        "dafsuem",
                        &[
                            "delete",
                            "annotate",
                            "force",
                            "sign",
                            "local-user",
                            "edit",
                            "message",
                            "file",
                        ],
                    )
                {
                    reader()
                } else {
                    git_internal("changes tags".into())
                }
            }
            "remote" => match first {
                None | Some("-v" | "--verbose" | "show" | "get-url") => low(),
                Some("update" | "prune") => {
                    Class::new(Risk::High, Reach::Network, "contacts remote repositories").net()
                }
                _ => git_internal("changes remotes".into()),
            },
            "stash" => match first {
                Some("list" | "show") => reader(),
                Some("drop" | "clear") => {
                    Class::new(Risk::High, Reach::Destructive, "discards stashed changes")
                }
                _ => git_internal("changes the stash and the working tree".into()),
            },
            // A value written to git's configuration can name a program that a later git
            // command in the same line runs (`core.fsmonitor`, found in round 8).
            "config" => {
                let c = git_config(rest);
                if c.risk > Risk::Low { c.opaque() } else { c }
            }
            "worktree" => match first {
                Some("list") => low(),
                _ => git_internal("changes worktrees".into()),
            },
            "reset" if flag("", &["hard", "merge", "keep"]) => Class::new(
                Risk::High,
                Reach::Destructive,
                "`git reset --hard` discards uncommitted work",
            ),
            "clean" if flag("fx", &["force"]) && !flag("n", &["dry-run"]) => Class::new(
                Risk::High,
                Reach::Destructive,
                "`git clean -f` deletes untracked files",
            ),
            "checkout" | "restore"
                if flag("f", &["force", "ours", "theirs"])
                    || rest.iter().any(|a| a.is(".") || a.is("--"))
                    || (sub == "restore" && !flag("S", &["staged"])) =>
            {
                Class::new(
                    Risk::Medium,
                    Reach::Destructive,
                    "overwrites files in the working tree, discarding their changes",
                )
            }
            "push"
                if flag(
                    "f",
                    &["force", "force-with-lease", "mirror", "delete", "prune"],
                ) =>
            {
                Class::new(
                    Risk::High,
                    Reach::Network,
                    "force-pushes or deletes remote refs",
                )
                .net()
            }
            "commit"
                if !flag(
                    "mFC",
                    &["message", "file", "reuse-message", "no-edit", "fixup"],
                ) =>
            {
                git_internal(
                    "`git commit` without -m opens an editor and writes the repository".into(),
                )
            }
            "rebase" if flag("i", &["interactive", "edit-todo"]) => git_internal(
                "`git rebase -i` opens the sequence editor and rewrites history".into(),
            ),
            "add" | "commit" | "checkout" | "switch" | "reset" | "merge" | "rebase"
            | "cherry-pick" | "revert" | "mv" | "rm" | "init" | "clean" | "apply" | "am" | "gc"
            | "notes" | "bisect" | "prune" | "repack" | "pack-refs" | "update-index"
            | "read-tree" | "write-tree" | "commit-tree" | "update-ref" | "symbolic-ref"
            | "hash-object" | "sparse-checkout" | "maintenance" | "fsck" | "mktag" | "mktree"
            | "replace" | "rerere" | "restore" => git_internal(format!(
                "`git {sub}` changes the repository or the working tree"
            )),
            "format-patch" => Class::new(
                Risk::Medium,
                Reach::Contained,
                "`git format-patch` writes patch files",
            ),
            "clone" | "fetch" | "pull" | "push" | "ls-remote" | "submodule" | "archive"
            | "send-email" | "request-pull" | "svn" | "p4" | "daemon" | "http-backend"
            | "instaweb" | "credential" | "credential-store" | "credential-cache"
            | "remote-ext" | "remote-fd" | "upload-pack" | "receive-pack" | "upload-archive"
            | "bundle" => Class::new(
                Risk::High,
                Reach::Network,
                format!("`git {sub}` contacts other repositories or runs helpers"),
            )
            .net(),
            "filter-branch" | "difftool" | "mergetool" | "web--browse" | "citool" | "gui"
            | "gitk" | "hook" => Class::new(
                Risk::High,
                Reach::Unknown,
                format!("`git {sub}` runs other programs"),
            ),
            _ => Class::new(
                Risk::Medium,
                Reach::Unknown,
                format!(
                    "`git {sub}` is a subcommand Toolshed does not know (it may be an alias or a git-{sub} program)"
                ),
            ),
        }
    }
}

/// Why `git SUB REST` runs a program or shell command it is given (`rebase -x`, `bisect run`,
/// `submodule foreach`), or one of the helpers git starts to talk to other repositories (ssh,
/// credential helpers, transports): code a rule on commands cannot see into.
fn runs_programs(sub: &str, rest: &[Word]) -> Option<String> {
    let words: Vec<&str> = rest.iter().map(|w| w.display()).collect();
    let short = |c: char| {
        words
            .iter()
            .any(|t| !t.starts_with("--") && t.starts_with('-') && t[1..].contains(c))
    };
    let long = |name: &str| {
        words.iter().any(|t| {
            t.strip_prefix("--")
                .map(|l| l.split('=').next().unwrap_or(l))
                .is_some_and(|n| n.len() >= 2 && name.starts_with(n))
        })
    };
    let runs = match sub {
        "rebase" => short('x') || long("exec"),
        "bisect" => words.first().is_some_and(|w| *w == "run"),
        "submodule" => words.contains(&"foreach"),
        "clone" | "fetch" | "pull" | "push" | "ls-remote" | "archive" | "send-email"
        | "request-pull" | "svn" | "p4" | "daemon" | "http-backend" | "instaweb" | "credential"
        | "credential-store" | "credential-cache" | "remote-ext" | "remote-fd" | "upload-pack"
        | "receive-pack" | "upload-archive" | "bundle" | "filter-branch" | "difftool"
        | "mergetool" | "web--browse" | "citool" | "gui" | "gitk" | "hook" => true,
        _ => false,
    };
    runs.then(|| format!("`git {sub}` runs programs or helpers Toolshed cannot see into"))
}

/// `git config`: only its explicit read forms are reads.
fn git_config(rest: &[Word]) -> Class {
    const READ_OPTS: &[&str] = &[
        "get",
        "get-all",
        "get-regexp",
        "get-urlmatch",
        "get-color",
        "get-colorbool",
        "list",
        "null",
        "name-only",
        "show-origin",
        "show-scope",
        "type",
        "bool",
        "int",
        "bool-or-int",
        "path",
        "expiry-date",
        "default",
        "local",
        "all",
        "regexp",
        "value",
        "fixed-value",
    ];
    let mut read_form = false;
    let mut other: Option<String> = None;
    let mut scope_outside = false;
    for (k, a) in rest.iter().enumerate() {
        let t = a.display();
        if k == 0 && matches!(t, "get" | "list") {
            read_form = true;
            continue;
        }
        if k == 0 && !t.starts_with('-') && rest.len() == 1 {
            // `git config KEY` reads KEY.
            read_form = true;
            continue;
        }
        if let Some(l) = t.strip_prefix("--") {
            let n = l.split('=').next().unwrap_or(l);
            let hits: Vec<&&str> = READ_OPTS.iter().filter(|o| o.starts_with(n)).collect();
            let full = hits.iter().find(|o| ***o == n).or(if hits.len() == 1 {
                hits.first()
            } else {
                None
            });
            match full {
                Some(o) if o.starts_with("get") || **o == "list" => read_form = true,
                Some(_) => {}
                None => {
                    if matches!(n, "global" | "system") {
                        scope_outside = true;
                    }
                    other.get_or_insert_with(|| t.to_string());
                }
            }
        } else if let Some(b) = t.strip_prefix('-') {
            if b == "l" {
                read_form = true;
            } else if b == "z" {
            } else {
                other.get_or_insert_with(|| t.to_string());
            }
        }
    }
    match other {
        None if read_form => low(),
        Some(o) if read_form => Class::new(
            Risk::Medium,
            Reach::Unknown,
            format!("`git config {o}` reads another configuration file or scope"),
        ),
        _ if scope_outside => Class::new(
            Risk::High,
            Reach::OutsideWrites,
            "changes the user's or the system's git configuration, which can name programs to run",
        ),
        Some(o) if o.starts_with("-f") || o.starts_with("--f") || o.starts_with("--blob") => {
            Class::new(
                Risk::Medium,
                Reach::Unknown,
                format!("`git config {o}` works on another configuration file"),
            )
        }
        Some(o) if o == "-e" || o.starts_with("--e") => Class::new(
            Risk::Medium,
            Reach::Unknown,
            "`git config --edit` opens the configuration in an editor",
        ),
        _ => Class::new(
            Risk::High,
            Reach::GitInternals,
            "changes git configuration (.git/config), which can name programs to run",
        ),
    }
}
