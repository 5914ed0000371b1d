//! The classification of programs: a table of risks plus flag-aware rules for programs that run
//! other programs or write files.
//!
//! Risk levels:
//! - **low**: reads state (`ls`, `cat`, `grep`, `git status`, `cargo metadata`);
//! - **medium**: changes the workspace recoverably, or runs code from the workspace (`mkdir`,
//!   `cp`, `sed -i`, `git commit`, `cargo build`, `python script.py`). **Programs not in the
//!   table are medium**: they may write anywhere the sandbox allows, so supervised mode asks;
//! - **high**: destroys data, reaches the network, gains privileges, or runs code given on the
//!   command line (`rm -r`, `curl`, `sudo`, `bash -c`, `python -c`, `find -exec rm`).

use tool_core::Risk;

use super::scripts;
use super::walk::Walker;
use super::words::Word;
use super::{TargetKind, Unknown};

/// Programs that only read, whatever their flags and arguments.
const READERS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "echo",
    "printf",
    "pwd",
    "stat",
    "du",
    "df",
    "cut",
    "tr",
    "diff",
    "cmp",
    "comm",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "true",
    "false",
    "test",
    "[",
    "whoami",
    "id",
    "uname",
    "nproc",
    "uptime",
    "which",
    "type",
    "base64",
    "base32",
    "od",
    "hexdump",
    "strings",
    "nl",
    "fold",
    "fmt",
    "expand",
    "unexpand",
    "paste",
    "join",
    "column",
    "rev",
    "tac",
    "seq",
    "sleep",
    "yes",
    "printenv",
    "locale",
    "jq",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "zcat",
    "bzcat",
    "xzcat",
    "zstdcat",
    "lscpu",
    "free",
    "groups",
    "tty",
    "arch",
    "getconf",
    "expr",
    "bc",
    "ps",
    "pgrep",
    "cal",
    "numfmt",
    "lsof",
    "wait",
    "read",
    "exit",
    "return",
    "shift",
    "unset",
    "umask",
    "ulimit",
    "getopts",
    "times",
    "break",
    "continue",
    ":",
    "jobs",
    "fg",
    "bg",
    "shopt",
    "[[",
    "lsblk",
];

/// Programs that change files in the workspace: medium, with their targets collected.
const FILE_CHANGERS: &[&str] = &[
    "mkdir", "touch", "cp", "mv", "ln", "rmdir", "install", "truncate", "chmod", "chown", "chgrp",
    "rm", "tee", "patch", "unzip", "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd",
];

/// Programs that build, test or run code from the workspace: medium.
const BUILDERS: &[&str] = &[
    "make",
    "gmake",
    "cmake",
    "ninja",
    "meson",
    "gcc",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "rustc",
    "rustfmt",
    "javac",
    "java",
    "mvn",
    "gradle",
    "dotnet",
    "swift",
    "swiftc",
    "zig",
    "pytest",
    "tox",
    "nox",
    "jest",
    "vitest",
    "mocha",
    "tsc",
    "eslint",
    "prettier",
    "black",
    "ruff",
    "mypy",
    "cargo-fmt",
    "go",
    "ctest",
    "just",
    "bazel",
];

/// Programs that reach the network.
const NETWORK: &[&str] = &[
    "curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "rsync",
    "rclone", "ftp", "aria2c", "lynx", "w3m", "links", "openssl", "npx", "httpie", "http", "xh",
];

/// Programs that look things up on the network without changing anything: medium.
const NETWORK_LOOKUPS: &[&str] = &[
    "ping",
    "ping6",
    "traceroute",
    "tracepath",
    "dig",
    "nslookup",
    "host",
    "whois",
    "mtr",
];

/// Programs that change the system, gain privileges, kill processes or destroy data: high.
const DANGEROUS: &[&str] = &[
    "sudo",
    "su",
    "doas",
    "pkexec",
    "chroot",
    "dd",
    "mount",
    "umount",
    "fdisk",
    "sfdisk",
    "parted",
    "mkswap",
    "swapon",
    "swapoff",
    "losetup",
    "kill",
    "killall",
    "pkill",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "systemctl",
    "service",
    "init",
    "telinit",
    "iptables",
    "ip6tables",
    "nft",
    "ip",
    "ifconfig",
    "route",
    "crontab",
    "at",
    "batch",
    "useradd",
    "userdel",
    "usermod",
    "passwd",
    "chpasswd",
    "groupadd",
    "visudo",
    "apt",
    "apt-get",
    "aptitude",
    "dpkg",
    "yum",
    "dnf",
    "rpm",
    "pacman",
    "apk",
    "snap",
    "flatpak",
    "brew",
    "docker",
    "podman",
    "kubectl",
    "nsenter",
    "unshare",
    "setcap",
    "insmod",
    "rmmod",
    "modprobe",
    "sysctl",
    "shred",
    "wipe",
    "strace",
    "ltrace",
    "gdb",
    "watch",
    "parallel",
    "script",
    "expect",
    "busybox",
    "runuser",
    "systemd-run",
    "firejail",
    "bwrap",
    "xdg-open",
];

/// Shells: `-c` runs code given as an argument; no script runs code from standard input.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash",
];

/// Variables whose value makes programs load or run other code, or changes how the shell parses.
const DANGEROUS_VARS: &[&str] = &[
    "PATH",
    "IFS",
    "ENV",
    "BASH_ENV",
    "CDPATH",
    "HOME",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
    "GLOBIGNORE",
    "PROMPT_COMMAND",
    "PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "LESSOPEN",
    "LESSCLOSE",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "NODE_OPTIONS",
    "NODE_PATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "CLASSPATH",
    "RUSTC_WRAPPER",
    "RUSTC",
    "RUSTDOC",
    "CC",
    "CXX",
    "LD",
    "SHELL",
    "MAKEFLAGS",
    "XDG_CONFIG_HOME",
    "GCONV_PATH",
    "LOCPATH",
    "NLSPATH",
    "HOSTALIASES",
    "TMPDIR_EXEC",
];

/// Variables that only change formatting or identities: exported to a command, they stay low.
const SAFE_VARS: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "COLUMNS",
    "LINES",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "CARGO_TERM_COLOR",
    "CI",
    "DEBUG",
    "VERBOSE",
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_DATE",
    "SOURCE_DATE_EPOCH",
    "TMPDIR",
    "USER",
    "LOGNAME",
];

/// Directories whose programs are looked up by base name (`/usr/bin/ls` is `ls`).
const SYSTEM_DIRS: &[&str] = &[
    "/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/sbin/",
    "/usr/sbin/",
];

/// Options of one program, split from its operands.
struct Opts<'a> {
    /// Option words (before `--`, starting with `-`).
    flags: Vec<&'a Word>,
    /// Operands.
    operands: Vec<&'a Word>,
}

/// Splits arguments at `--`; `takes_value(arg)` says whether an option consumes the next word.
fn split<'a>(args: &'a [Word], takes_value: impl Fn(&str) -> bool) -> Opts<'a> {
    let mut flags = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    let mut ended = false;
    while i < args.len() {
        let a = &args[i];
        let t = a.display();
        if ended || !t.starts_with('-') || t == "-" {
            operands.push(a);
        } else if t == "--" {
            ended = true;
        } else {
            flags.push(a);
            if takes_value(t)
                && !t.contains('=')
                && let Some(v) = args.get(i + 1)
            {
                flags.push(v);
                i += 1;
            }
        }
        i += 1;
    }
    Opts { flags, operands }
}

/// Whether a short option bundle (`-rf`) holds `c`, or a long option is `long` (or `long=…`).
fn has(word: &Word, shorts: &str, longs: &[&str]) -> bool {
    let t = word.display();
    if let Some(long) = t.strip_prefix("--") {
        let name = long.split('=').next().unwrap_or(long);
        return longs.contains(&name);
    }
    if let Some(bundle) = t.strip_prefix('-') {
        return bundle.chars().any(|c| shorts.contains(c));
    }
    false
}

fn any_has(args: &[&Word], shorts: &str, longs: &[&str]) -> bool {
    args.iter().any(|a| has(a, shorts, longs))
}

/// The first argument that is not static and could be an option, if any.
fn dynamic_flag(args: &[Word]) -> Option<&Word> {
    args.iter().find(|a| a.text.is_none() && a.may_be_flag)
}

/// A classification in progress.
struct Class {
    risk: Risk,
    reason: String,
    network: bool,
}

impl Class {
    fn new(risk: Risk, reason: impl Into<String>) -> Class {
        Class {
            risk,
            reason: reason.into(),
            network: false,
        }
    }

    fn net(mut self) -> Class {
        self.network = true;
        self
    }

    /// Raises the risk (keeping the first reason of the highest level).
    fn raise(&mut self, risk: Risk, reason: impl Into<String>) {
        if risk > self.risk || (risk == self.risk && self.reason.is_empty()) {
            self.risk = risk;
            self.reason = reason.into();
        }
    }
}

fn low() -> Class {
    Class::new(Risk::Low, "")
}

impl Walker {
    /// Checks a variable assignment (`NAME=value cmd`, `NAME=value`, `export NAME=value`).
    pub(crate) fn assignment(
        &mut self,
        name: &str,
        _value: Option<&Word>,
        exported: bool,
    ) -> Result<(), Unknown> {
        let dangerous = DANGEROUS_VARS.contains(&name)
            || name.starts_with("LD_")
            || name.starts_with("DYLD_")
            || name.starts_with("BASH_FUNC")
            || (name.starts_with("GIT_") && !SAFE_VARS.contains(&name))
            || (name.starts_with("CARGO_") && name != "CARGO_TERM_COLOR")
            || name.starts_with("SSH_")
            || name.starts_with("NPM_CONFIG")
            || name.starts_with("npm_config");
        let (risk, reason) = if dangerous {
            (
                Risk::High,
                format!("sets {name}, which can make programs load or run other code"),
            )
        } else if exported && !SAFE_VARS.contains(&name) && !name.starts_with("LC_") {
            (
                Risk::Medium,
                format!("passes {name} to the program, and variables can change what it does"),
            )
        } else {
            (Risk::Low, String::new())
        };
        if risk > Risk::Low {
            self.push_command(&format!("{name}="), &[], risk, &reason, false);
        }
        Ok(())
    }

    /// Classifies one simple command and records it (and whatever it runs in turn).
    pub(crate) fn classify(&mut self, program: &Word, args: &[Word]) -> Result<(), Unknown> {
        let Some(name) = program.literal() else {
            return Err(Unknown(format!(
                "the program name `{}` is computed at run time, so Toolshed cannot tell what runs; write the program name literally",
                program.raw
            )));
        };
        if name.is_empty() {
            return Err(Unknown(
                "the program name is empty; write the program name literally".into(),
            ));
        }
        let key = if name.contains('/') {
            SYSTEM_DIRS
                .iter()
                .find_map(|d| name.strip_prefix(d))
                .filter(|rest| !rest.contains('/') && !rest.is_empty())
        } else {
            Some(name)
        };
        let index = self.push_program(name, args);
        let class = match key {
            None => Class::new(
                Risk::Medium,
                "runs a program by path (a script or binary from the workspace)",
            ),
            Some(key) => self.class_of(name, key, args)?,
        };
        self.set_class(index, class.risk, class.reason, class.network);
        Ok(())
    }

    /// Classifies the command that a wrapper (`env`, `nice`, `xargs`, `find -exec` …) runs.
    fn wrapped(&mut self, args: &[Word]) -> Result<(), Unknown> {
        match args.split_first() {
            None => Ok(()),
            Some((program, rest)) => self.classify(program, rest),
        }
    }

    fn class_of(&mut self, name: &str, key: &str, args: &[Word]) -> Result<Class, Unknown> {
        let key = key.to_ascii_lowercase();
        let key = key.as_str();
        if let Some(why) = unknown_builtin(key, args) {
            return Err(Unknown(why));
        }
        if key.starts_with("python")
            || matches!(
                key,
                "node"
                    | "nodejs"
                    | "ruby"
                    | "perl"
                    | "php"
                    | "lua"
                    | "luajit"
                    | "rscript"
                    | "tclsh"
                    | "pwsh"
                    | "deno"
                    | "bun"
                    | "irb"
                    | "jshell"
                    | "ipython"
            )
        {
            return Ok(interpreter(key, args));
        }
        if SHELLS.contains(&key) {
            return self.shell(args);
        }
        match key {
            "cd" | "pushd" | "popd" => return Ok(self.cd(key, args)),
            "export" | "readonly" | "local" | "declare" | "typeset" => {
                return self.declare(key, args);
            }
            "set" => {
                return Ok(
                    if args.iter().any(|a| {
                        a.display().starts_with(['-', '+']) && a.display().contains('a')
                            || a.is("allexport")
                    }) {
                        Class::new(Risk::Medium, "`set -a` exports every later assignment")
                    } else {
                        low()
                    },
                );
            }
            "hash" if args.iter().any(|a| has(a, "p", &[])) => {
                return Err(Unknown(
                    "`hash -p` maps a command name to another program; call the program by path instead".into(),
                ));
            }
            "trap" if args.iter().any(|a| !has(a, "lp", &[])) => {
                return Err(Unknown(
                    "`trap` runs a command later, which Toolshed cannot check; run it directly instead".into(),
                ));
            }
            "command" | "builtin" => {
                if key == "command" && args.iter().any(|a| has(a, "vV", &[])) {
                    return Ok(low());
                }
                let start = args
                    .iter()
                    .position(|a| !a.display().starts_with('-'))
                    .unwrap_or(args.len());
                self.wrapped(&args[start..])?;
                return Ok(low());
            }
            "env" => return self.env(args),
            "nice" | "nohup" | "timeout" | "stdbuf" | "setsid" | "ionice" | "time" | "chrt"
            | "taskset" | "flock" => return self.wrapper(key, args),
            "xargs" => return self.xargs(args),
            "find" => return self.find(args),
            "sed" | "gsed" => return self.sed(args),
            "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => return self.awk(args),
            "git" => return self.git(args),
            "cargo" => return Ok(cargo(args)),
            "npm" | "pnpm" | "yarn" => return Ok(npm(key, args)),
            "pip" | "pip3" | "uv" | "pipx" | "poetry" | "conda" => return Ok(pip(key, args)),
            "rg" => return Ok(rg(args)),
            "sort" => return self.sort(args),
            "uniq" | "xxd" => return self.output_operand(key, args),
            "date" => {
                return Ok(if args.iter().any(|a| has(a, "s", &["set"])) {
                    Class::new(Risk::High, "`date -s` sets the system clock")
                } else if dynamic_flag(args).is_some() {
                    Class::new(
                        Risk::High,
                        "an argument computed at run time could be `-s`, which sets the clock",
                    )
                } else {
                    low()
                });
            }
            "hostname" => {
                return Ok(
                    if args
                        .iter()
                        .any(|a| !a.display().starts_with('-') || has(a, "Fb", &["file", "boot"]))
                    {
                        Class::new(Risk::High, "`hostname NAME` renames the machine")
                    } else {
                        low()
                    },
                );
            }
            "file" => {
                return Ok(if args.iter().any(|a| has(a, "C", &["compile"])) {
                    Class::new(Risk::Medium, "`file -C` writes a compiled magic file")
                } else {
                    low()
                });
            }
            "tree" => {
                let o = split(args, |f| {
                    matches!(
                        f,
                        "-o" | "-L"
                            | "-P"
                            | "-I"
                            | "--filelimit"
                            | "--timefmt"
                            | "-H"
                            | "--charset"
                    )
                });
                let mut c = low();
                for (i, f) in o.flags.iter().enumerate() {
                    if f.is("-o")
                        && let Some(file) = o.flags.get(i + 1)
                    {
                        self.target(file, TargetKind::Write)?;
                        c.raise(Risk::Medium, "`tree -o` writes a file");
                    }
                }
                return Ok(c);
            }
            "tar" => return Ok(tar(args)),
            "zip" => {
                return Ok(
                    if args
                        .iter()
                        .any(|a| has(a, "", &["unzip-command"]) || a.is("-TT"))
                    {
                        Class::new(Risk::High, "`zip -TT` runs a command to test the archive")
                    } else {
                        Class::new(Risk::Medium, "writes an archive")
                    },
                );
            }
            "gzip" | "bzip2" | "xz" | "zstd" | "gunzip" | "bunzip2" | "unxz" | "unzstd"
                if args
                    .iter()
                    .any(|a| has(a, "clt", &["stdout", "to-stdout", "list", "test"])) =>
            {
                return Ok(low());
            }
            _ => {}
        }
        if FILE_CHANGERS.contains(&key) {
            return self.file_changer(key, args);
        }
        if READERS.contains(&key) {
            return Ok(low());
        }
        if NETWORK.contains(&key) {
            return Ok(Class::new(Risk::High, "reaches the network").net());
        }
        if NETWORK_LOOKUPS.contains(&key) {
            return Ok(Class::new(Risk::Medium, "sends network queries").net());
        }
        if DANGEROUS.contains(&key) || key.starts_with("mkfs") {
            if matches!(
                key,
                "sudo" | "doas" | "su" | "runuser" | "nsenter" | "chroot"
            ) {
                // Still look at what runs, so the deny list sees it.
                let start = args
                    .iter()
                    .position(|a| !a.display().starts_with('-'))
                    .unwrap_or(args.len());
                let _ = self.wrapped(&args[start..]);
            }
            return Ok(Class::new(
                Risk::High,
                format!("`{name}` changes the system, gains privileges, or destroys data"),
            ));
        }
        if BUILDERS.contains(&key) {
            if key == "go" {
                return Ok(go(args));
            }
            return Ok(Class::new(
                Risk::Medium,
                "builds, tests or formats code, which runs code from the workspace",
            ));
        }
        Ok(Class::new(
            Risk::Medium,
            format!("`{name}` is not a program Toolshed knows, so it may change files"),
        ))
    }

    fn cd(&mut self, key: &str, args: &[Word]) -> Class {
        let target = args.iter().find(|a| !a.display().starts_with('-'));
        match (key, target.and_then(|t| t.literal())) {
            ("popd", _) | (_, None) => self.cwd = None,
            (_, Some(dir)) => {
                if let Some(dirs) = &mut self.cwd {
                    let mut next = dirs.clone();
                    for d in dirs.iter() {
                        let joined = if dir.starts_with('/') || d.is_empty() {
                            dir.to_string()
                        } else {
                            format!("{d}/{dir}")
                        };
                        if !next.contains(&joined) {
                            next.push(joined);
                        }
                    }
                    *dirs = next;
                }
            }
        }
        low()
    }

    fn declare(&mut self, key: &str, args: &[Word]) -> Result<Class, Unknown> {
        if args.iter().any(|a| has(a, "f", &[])) {
            return Err(Unknown(format!(
                "`{key} -f` works with shell functions, which Toolshed cannot check"
            )));
        }
        let exported = key == "export" || args.iter().any(|a| has(a, "x", &[]));
        for a in args {
            let t = a.display();
            if t.starts_with('-') {
                continue;
            }
            let name = t.split('=').next().unwrap_or(t);
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(Unknown(format!(
                    "`{key} {t}` names a variable Toolshed cannot work out; write it literally"
                )));
            }
            self.assignment(name, Some(a), exported)?;
        }
        Ok(low())
    }

    fn shell(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let o = split(args, |f| matches!(f, "-o" | "+o" | "-O" | "+O"));
        if o.flags.iter().any(|f| has(f, "c", &[])) {
            // Look inside a literal script so the deny list sees its programs; the call stays
            // high risk whatever the script is.
            if let Some(script) = o.operands.first().and_then(|w| w.literal()) {
                let script = script.to_string();
                let _ = self.script(&script);
            }
            return Ok(Class::new(
                Risk::High,
                "runs shell code given on the command line",
            ));
        }
        if o.flags.iter().any(|f| has(f, "s", &[])) || o.operands.is_empty() {
            if o.flags.iter().any(|f| f.is("--version") || f.is("--help")) {
                return Ok(low());
            }
            return Ok(Class::new(
                Risk::High,
                "runs shell code read from standard input",
            ));
        }
        Ok(Class::new(Risk::Medium, "runs a shell script"))
    }

    fn env(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let mut i = 0;
        while i < args.len() {
            let t = args[i].display();
            if args[i].text.is_none() && args[i].may_be_flag {
                return Ok(Class::new(
                    Risk::High,
                    "an argument computed at run time could be an option of env",
                ));
            }
            if t == "--" {
                i += 1;
                break;
            }
            if has(&args[i], "S", &["split-string"]) {
                return Ok(Class::new(
                    Risk::High,
                    "`env -S` splits a string into a command",
                ));
            }
            if has(&args[i], "C", &["chdir"]) {
                return Ok(Class::new(
                    Risk::High,
                    "`env -C` runs the command in another directory",
                ));
            }
            if t == "-u" {
                i += 2;
                continue;
            }
            if t.starts_with('-') {
                i += 1;
                continue;
            }
            break;
        }
        while i < args.len() {
            let t = args[i].display();
            match t.split_once('=') {
                Some((name, _)) if !name.is_empty() && !name.contains('/') => {
                    self.assignment(name, Some(&args[i]), true)?;
                    i += 1;
                }
                _ => break,
            }
        }
        self.wrapped(&args[i..])?;
        Ok(low())
    }

    /// `nice`, `nohup`, `timeout`, `stdbuf`, `setsid`, `ionice`, `time`, `chrt`, `taskset`,
    /// `flock`: skip their own options (and fixed operands), classify the command they run.
    fn wrapper(&mut self, key: &str, args: &[Word]) -> Result<Class, Unknown> {
        if let Some(d) = dynamic_flag(args) {
            return Ok(Class::new(
                Risk::High,
                format!(
                    "`{}` is computed at run time and could be an option of {key}",
                    d.raw
                ),
            ));
        }
        let with_value: &[&str] = match key {
            "nice" => &["-n", "--adjustment"],
            "timeout" => &["-s", "--signal", "-k", "--kill-after"],
            "stdbuf" => &["-i", "-o", "-e", "--input", "--output", "--error"],
            "ionice" => &["-c", "-n", "--class", "--classdata"],
            "time" => &["-f", "--format", "-o", "--output"],
            "flock" => &["-w", "--timeout", "-E", "--conflict-exit-code"],
            _ => &[],
        };
        if key == "flock" && args.iter().any(|a| has(a, "c", &["command"])) {
            return Ok(Class::new(
                Risk::High,
                "`flock -c` runs a shell command string",
            ));
        }
        if matches!(key, "ionice" | "taskset" | "chrt")
            && args.iter().any(|a| has(a, "p", &["pid"]))
        {
            return Ok(Class::new(
                Risk::Medium,
                format!("`{key} -p` changes another process"),
            ));
        }
        let mut c = low();
        let mut i = 0;
        while i < args.len() {
            let t = args[i].display();
            if t == "--" {
                i += 1;
                break;
            }
            if !t.starts_with('-')
                || (key == "nice" && t.len() > 1 && t[1..].chars().all(|c| c.is_ascii_digit()))
            {
                if t.starts_with('-') {
                    i += 1;
                    continue;
                }
                break;
            }
            if key == "time" && (t == "-o" || t.starts_with("--output")) {
                let file = if t == "-o" { args.get(i + 1) } else { None };
                match file {
                    Some(f) => self.target(f, TargetKind::Write)?,
                    None => {
                        return Err(Unknown(
                            "`time --output=` names a file Toolshed cannot check; use -o FILE"
                                .into(),
                        ));
                    }
                }
                c.raise(Risk::Low, "");
            }
            if with_value.contains(&t) {
                i += 1;
            }
            i += 1;
        }
        // Fixed operands before the command.
        let skip = match key {
            "timeout" | "taskset" | "chrt" | "flock" => 1,
            _ => 0,
        };
        let rest = args.get(i + skip..).unwrap_or(&[]);
        self.wrapped(rest)?;
        Ok(c)
    }

    fn xargs(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let with_value = ["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "-e"];
        let mut i = 0;
        let mut replace: Option<String> = None;
        while i < args.len() {
            let a = &args[i];
            let t = a.display();
            if a.text.is_none() && a.may_be_flag {
                return Ok(Class::new(
                    Risk::High,
                    "an argument computed at run time could be an option of xargs",
                ));
            }
            if t == "--" {
                i += 1;
                break;
            }
            if !t.starts_with('-') {
                break;
            }
            if t == "-I" {
                replace = args.get(i + 1).map(|w| w.display().to_string());
            } else if let Some(r) = t.strip_prefix("--replace=") {
                replace = Some(r.to_string());
            } else if t == "-i" || t == "--replace" {
                replace = Some("{}".into());
            } else if let Some(r) = t.strip_prefix("-i") {
                replace = Some(r.to_string());
            }
            if with_value.contains(&t) {
                i += 1;
            }
            i += 1;
        }
        let mut inner: Vec<Word> = args[i..].to_vec();
        if inner.is_empty() {
            inner.push(Word::dynamic("echo", false));
            inner[0].text = Some("echo".into());
        }
        // The arguments xargs appends come from standard input: they can be anything,
        // including options.
        for w in inner.iter_mut().skip(1) {
            if let Some(r) = &replace
                && w.display().contains(r.as_str())
            {
                *w = Word::dynamic(&w.raw, true);
            }
        }
        inner.push(Word::dynamic("<input>", true));
        self.wrapped(&inner)?;
        Ok(low())
    }

    fn find(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let mut c = low();
        let mut i = 0;
        // Leading options (-H -L -P -D x -Ox) and starting points.
        let mut starts_literal = true;
        while i < args.len() {
            let t = args[i].display();
            if matches!(t, "-H" | "-L" | "-P") || t.starts_with("-O") {
                i += 1;
            } else if t == "-D" {
                i += 2;
            } else if t.starts_with('-') || t == "(" || t == "!" {
                break;
            } else {
                if args[i].text.is_none() && args[i].may_be_flag {
                    starts_literal = false;
                }
                i += 1;
            }
        }
        while i < args.len() {
            let a = &args[i];
            let t = a.display();
            if a.text.is_none() && a.may_be_flag {
                c.raise(
                    Risk::High,
                    format!("`{}` is computed at run time and could be a find action such as -exec or -delete", a.raw),
                );
                i += 1;
                continue;
            }
            match t {
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let end = args[i + 1..]
                        .iter()
                        .position(|w| w.is(";") || w.is("+"))
                        .map(|p| i + 1 + p)
                        .unwrap_or(args.len());
                    let inner: Vec<Word> = args[i + 1..end]
                        .iter()
                        .map(|w| {
                            if w.display().contains("{}") {
                                Word::dynamic(&w.raw, !starts_literal)
                            } else {
                                w.clone()
                            }
                        })
                        .collect();
                    if inner.is_empty() {
                        return Err(Unknown(format!(
                            "`find {t}` has no command; name the command to run"
                        )));
                    }
                    self.wrapped(&inner)?;
                    i = end + 1;
                }
                "-delete" => {
                    c.raise(Risk::High, "`find -delete` deletes every file it matches");
                    i += 1;
                }
                "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                    match args.get(i + 1) {
                        Some(f) => self.target(f, TargetKind::Write)?,
                        None => return Err(Unknown(format!("`find {t}` has no file name"))),
                    }
                    c.raise(Risk::Medium, format!("`find {t}` writes a file"));
                    i += if t == "-fprintf" { 3 } else { 2 };
                }
                _ => i += 1,
            }
        }
        Ok(c)
    }

    fn sed(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let mut c = low();
        let mut scripts: Vec<&Word> = Vec::new();
        let mut operands: Vec<&Word> = Vec::new();
        let mut in_place = false;
        let mut script_file = false;
        let mut sandbox = false;
        let mut i = 0;
        let mut ended = false;
        while i < args.len() {
            let a = &args[i];
            let t = a.display();
            if !ended && a.text.is_none() && a.may_be_flag {
                return Ok(Class::new(
                    Risk::High,
                    format!(
                        "`{}` is computed at run time and could be a sed option",
                        a.raw
                    ),
                ));
            }
            if ended || !t.starts_with('-') || t == "-" {
                operands.push(a);
            } else if t == "--" {
                ended = true;
            } else if let Some(long) = t.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                };
                match name {
                    "in-place" => in_place = true,
                    "sandbox" => sandbox = true,
                    "expression" | "file" | "line-length" => {
                        let w = if value.is_some() {
                            a
                        } else {
                            i += 1;
                            match args.get(i) {
                                Some(w) => w,
                                None => break,
                            }
                        };
                        if name == "expression" {
                            if value.is_some() {
                                return Ok(Class::new(
                                    Risk::High,
                                    "write the sed script as `-e SCRIPT` so Toolshed can check it",
                                ));
                            }
                            scripts.push(w);
                        } else if name == "file" {
                            script_file = true;
                        }
                    }
                    _ => {}
                }
            } else {
                // A bundle of short options; `e`, `f` and `l` take a value, `i` an optional suffix.
                let bundle: Vec<char> = t[1..].chars().collect();
                for (k, ch) in bundle.iter().enumerate() {
                    match ch {
                        'i' => {
                            in_place = true;
                            break;
                        }
                        'e' | 'f' | 'l' => {
                            let attached = k + 1 < bundle.len();
                            if *ch == 'e' {
                                if attached {
                                    return Ok(Class::new(
                                        Risk::High,
                                        "write the sed script as `-e SCRIPT` so Toolshed can check it",
                                    ));
                                }
                                i += 1;
                                if let Some(w) = args.get(i) {
                                    scripts.push(w);
                                }
                            } else {
                                if *ch == 'f' {
                                    script_file = true;
                                }
                                if !attached {
                                    i += 1;
                                }
                            }
                            break;
                        }
                        _ => {}
                    }
                }
            }
            i += 1;
        }
        if scripts.is_empty() && !script_file {
            if operands.is_empty() {
                return Err(Unknown("sed has no script; give one".into()));
            }
            scripts.push(operands.remove(0));
        }
        if script_file && !sandbox {
            c.raise(
                Risk::High,
                "`sed -f` runs a script file Toolshed cannot inspect",
            );
        }
        for s in scripts {
            match s.literal() {
                None if !sandbox => c.raise(Risk::High, "the sed script is computed at run time"),
                None => {}
                Some(text) => {
                    let effects = scripts::sed(text);
                    if let Some(why) = effects.danger
                        && !sandbox
                    {
                        c.raise(Risk::High, why);
                    }
                    for w in effects.writes {
                        self.target(&Word::dynamic(&w, false).with_text(&w), TargetKind::Write)?;
                        c.raise(Risk::Medium, "the sed script writes a file");
                    }
                }
            }
        }
        if in_place {
            for f in &operands {
                self.target(f, TargetKind::Write)?;
            }
            c.raise(Risk::Medium, "`sed -i` edits files in place");
        }
        Ok(c)
    }

    fn awk(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let mut c = low();
        let mut program: Option<&Word> = None;
        let mut from_file = false;
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            let t = a.display();
            if a.text.is_none() && a.may_be_flag {
                return Ok(Class::new(
                    Risk::High,
                    format!(
                        "`{}` is computed at run time and could be an awk option",
                        a.raw
                    ),
                ));
            }
            if t == "--" {
                i += 1;
                break;
            }
            if !t.starts_with('-') || t == "-" {
                break;
            }
            match t {
                "-F" | "-v" => i += 1,
                "-f" | "--file" | "-i" | "--include" | "-l" | "--load" | "-E" | "--exec" => {
                    from_file = true;
                    i += 1;
                }
                "-e" | "--source" => {
                    i += 1;
                    program = args.get(i);
                }
                "-W" => {
                    i += 1;
                    if args.get(i).is_some_and(|w| w.display().starts_with("exec")) {
                        from_file = true;
                    }
                }
                _ if t.starts_with("-f")
                    || t.starts_with("--file=")
                    || t.starts_with("--load=")
                    || t.starts_with("--include=")
                    || t.starts_with("-l") =>
                {
                    from_file = true
                }
                _ => {}
            }
            i += 1;
        }
        if from_file {
            c.raise(
                Risk::High,
                "awk loads program code from a file Toolshed cannot inspect",
            );
        }
        if program.is_none() && !from_file {
            program = args.get(i);
        }
        match program.map(|p| p.literal()) {
            None if from_file => {}
            None => return Err(Unknown("awk has no program; give one".into())),
            Some(None) => c.raise(Risk::High, "the awk program is computed at run time"),
            Some(Some(text)) => {
                let effects = scripts::awk(text);
                if let Some(why) = effects.danger {
                    c.raise(Risk::High, why);
                }
                for w in effects.writes {
                    self.target(&Word::dynamic(&w, false).with_text(&w), TargetKind::Write)?;
                    c.raise(Risk::Medium, "the awk program writes a file");
                }
            }
        }
        Ok(c)
    }

    fn git(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let mut c = low();
        if let Some(d) = dynamic_flag(args) {
            return Ok(Class::new(
                Risk::High,
                format!(
                    "`{}` is computed at run time and could be a git option such as --upload-pack or -c",
                    d.raw
                ),
            ));
        }
        let mut i = 0;
        let mut changes_dir = false;
        while i < args.len() {
            let t = args[i].display();
            if !t.starts_with('-') {
                break;
            }
            match t {
                "-c" => {
                    return Ok(Class::new(
                        Risk::High,
                        "`git -c` sets configuration, which can name programs to run",
                    ));
                }
                "-C" => {
                    changes_dir = true;
                    i += 1;
                }
                "--exec-path" | "--version" | "--help" | "-h" | "--html-path" | "--man-path"
                | "--info-path" => {}
                "-p"
                | "--paginate"
                | "-P"
                | "--no-pager"
                | "--no-replace-objects"
                | "--literal-pathspecs"
                | "--glob-pathspecs"
                | "--noglob-pathspecs"
                | "--icase-pathspecs"
                | "--no-optional-locks"
                | "--bare" => {}
                _ if t.starts_with("--config-env") || t.starts_with("--exec-path=") => {
                    return Ok(Class::new(
                        Risk::High,
                        format!("`git {t}` makes git run other programs"),
                    ));
                }
                _ if t.starts_with("--git-dir")
                    || t.starts_with("--work-tree")
                    || t.starts_with("--namespace")
                    || t.starts_with("--super-prefix") =>
                {
                    return Ok(Class::new(
                        Risk::High,
                        format!(
                            "`git {t}` points git at another repository, whose configuration can run programs"
                        ),
                    ));
                }
                _ => c.raise(
                    Risk::Medium,
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
        // Options that run programs, whatever the subcommand.
        for a in rest {
            let t = a.display();
            let name = t.split('=').next().unwrap_or(t);
            if matches!(
                name,
                "--upload-pack"
                    | "--receive-pack"
                    | "--exec"
                    | "--template"
                    | "--separate-git-dir"
                    | "--open-files-in-pager"
                    | "--config"
                    | "--ext-diff"
                    | "--run"
                    | "--extcmd"
                    | "--tool"
                    | "-x"
            ) || (sub == "grep" && (t.starts_with("-O") || has(a, "O", &[])))
                || t.contains("ext::")
                || t.contains("fd::")
            {
                return Ok(Class::new(
                    Risk::High,
                    format!("`git {sub} {t}` can run other programs"),
                ));
            }
            if matches!(name, "--output" | "-o" | "--output-directory") {
                c.raise(Risk::Medium, format!("`git {sub} {name}` writes files"));
            }
        }
        // `--output=FILE` and `-o FILE`: the file is a write target.
        for (k, a) in rest.iter().enumerate() {
            let t = a.display();
            if let Some(f) = t
                .strip_prefix("--output=")
                .or_else(|| t.strip_prefix("--output-directory="))
            {
                self.target(&Word::dynamic(f, false).with_text(f), TargetKind::Write)?;
            } else if (t == "-o" || t == "--output" || t == "--output-directory")
                && let Some(f) = rest.get(k + 1)
            {
                self.target(f, TargetKind::Write)?;
            }
        }
        let positional = rest
            .iter()
            .filter(|a| !a.display().starts_with('-'))
            .count();
        let flag = |s: &str, l: &[&str]| rest.iter().any(|a| has(a, s, l));
        let (risk, reason, net): (Risk, String, bool) = match sub {
            "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "ls-tree" | "blame"
            | "describe" | "shortlog" | "cat-file" | "grep" | "reflog" | "rev-list"
            | "merge-base" | "name-rev" | "for-each-ref" | "show-ref" | "count-objects"
            | "version" | "help" | "check-ignore" | "check-attr" | "whatchanged"
            | "show-branch" | "var" | "annotate" | "diff-tree" | "diff-files" | "diff-index"
            | "ls-remote-local" | "range-diff" | "cherry" => (Risk::Low, String::new(), false),
            "branch" => {
                if positional == 0
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
                    ) && !flag(
                        "dDmMcCfu",
                        &[
                            "delete",
                            "move",
                            "copy",
                            "force",
                            "set-upstream-to",
                            "unset-upstream",
                            "edit-description",
                        ],
                    )
                {
                    (Risk::Low, String::new(), false)
                } else if flag("D", &[]) || (flag("d", &["delete"]) && flag("f", &["force"])) {
                    (
                        Risk::High,
                        "force-deletes a branch and its unmerged commits".into(),
                        false,
                    )
                } else {
                    (Risk::Medium, "changes branches".into(), false)
                }
            }
            "tag" => {
                if positional == 0
                    || flag(
                        "l",
                        &["list", "contains", "points-at", "merged", "no-merged"],
                    ) && !flag("daf", &["delete", "annotate", "force"])
                {
                    (Risk::Low, String::new(), false)
                } else {
                    (Risk::Medium, "changes tags".into(), false)
                }
            }
            "remote" => match rest.first().map(|w| w.display()) {
                None | Some("-v" | "--verbose" | "show" | "get-url") => {
                    (Risk::Low, String::new(), false)
                }
                Some("update" | "prune") => {
                    (Risk::High, "contacts remote repositories".into(), true)
                }
                _ => (Risk::Medium, "changes remotes".into(), false),
            },
            "stash" => match rest.first().map(|w| w.display()) {
                Some("list" | "show") => (Risk::Low, String::new(), false),
                Some("drop" | "clear") => (Risk::High, "discards stashed changes".into(), false),
                _ => (
                    Risk::Medium,
                    "changes the stash and the working tree".into(),
                    false,
                ),
            },
            "config" => {
                if flag(
                    "l",
                    &[
                        "get",
                        "get-all",
                        "get-regexp",
                        "list",
                        "get-urlmatch",
                        "get-color",
                        "get-colorbool",
                        "show-origin",
                        "show-scope",
                    ],
                ) || matches!(rest.first().map(|w| w.display()), Some("get" | "list"))
                {
                    (Risk::Low, String::new(), false)
                } else {
                    (
                        Risk::High,
                        "changes git configuration, which can name programs to run".into(),
                        false,
                    )
                }
            }
            "worktree" => match rest.first().map(|w| w.display()) {
                Some("list") => (Risk::Low, String::new(), false),
                _ => (Risk::Medium, "changes worktrees".into(), false),
            },
            "reset" if flag("", &["hard", "merge", "keep"]) => (
                Risk::High,
                "`git reset --hard` discards uncommitted work".into(),
                false,
            ),
            "clean" if flag("fx", &["force"]) && !flag("n", &["dry-run"]) => (
                Risk::High,
                "`git clean -f` deletes untracked files".into(),
                false,
            ),
            "checkout" | "restore"
                if flag("f", &["force", "ours", "theirs"]) || rest.iter().any(|a| a.is(".")) =>
            {
                (
                    Risk::Medium,
                    "overwrites files in the working tree".into(),
                    false,
                )
            }
            "push"
                if flag(
                    "f",
                    &["force", "force-with-lease", "mirror", "delete", "prune"],
                ) =>
            {
                (
                    Risk::High,
                    "force-pushes or deletes remote refs".into(),
                    true,
                )
            }
            "add" | "commit" | "checkout" | "switch" | "restore" | "reset" | "merge" | "rebase"
            | "cherry-pick" | "revert" | "mv" | "rm" | "init" | "clean" | "apply" | "am"
            | "format-patch" | "gc" | "notes" | "bisect" | "prune" | "repack" | "pack-refs"
            | "update-index" | "read-tree" | "write-tree" | "commit-tree" | "update-ref"
            | "symbolic-ref" | "hash-object" | "sparse-checkout" | "maintenance" | "fsck"
            | "mktag" | "mktree" | "replace" | "rerere" => (
                Risk::Medium,
                format!("`git {sub}` changes the repository or the working tree"),
                false,
            ),
            "clone" | "fetch" | "pull" | "push" | "ls-remote" | "submodule" | "archive"
            | "send-email" | "request-pull" | "svn" | "p4" | "daemon" | "http-backend"
            | "instaweb" | "credential" | "credential-store" | "credential-cache"
            | "remote-ext" | "remote-fd" | "upload-pack" | "receive-pack" | "upload-archive"
            | "bundle" => (
                Risk::High,
                format!("`git {sub}` contacts other repositories or runs helpers"),
                true,
            ),
            "filter-branch" | "difftool" | "mergetool" | "web--browse" | "citool" | "gui"
            | "gitk" => (
                Risk::High,
                format!("`git {sub}` runs other programs"),
                false,
            ),
            _ => (
                Risk::Medium,
                format!(
                    "`git {sub}` is a subcommand Toolshed does not know (it may be an alias or a git-{sub} program)"
                ),
                false,
            ),
        };
        c.raise(risk, reason);
        if changes_dir && c.risk >= Risk::Medium {
            c.raise(
                Risk::High,
                "`git -C` with a command that writes works in another directory",
            );
        }
        c.network |= net;
        Ok(c)
    }

    fn sort(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        if let Some(d) = dynamic_flag(args) {
            return Ok(Class::new(
                Risk::High,
                format!(
                    "`{}` is computed at run time and could be a sort option such as --compress-program",
                    d.raw
                ),
            ));
        }
        let mut c = low();
        for (k, a) in args.iter().enumerate() {
            let t = a.display();
            if t.starts_with("--compress-program") {
                return Ok(Class::new(
                    Risk::High,
                    "`sort --compress-program` runs a program",
                ));
            }
            if let Some(f) = t.strip_prefix("--output=") {
                self.target(&Word::dynamic(f, false).with_text(f), TargetKind::Write)?;
                c.raise(Risk::Low, "");
            } else if t == "-o" || t == "--output" {
                if let Some(f) = args.get(k + 1) {
                    self.target(f, TargetKind::Write)?;
                }
            } else if let Some(f) = t
                .strip_prefix("-o")
                .filter(|f| !f.is_empty() && !t.starts_with("--"))
            {
                self.target(&Word::dynamic(f, false).with_text(f), TargetKind::Write)?;
            }
        }
        Ok(c)
    }

    /// `uniq IN OUT`, `xxd [-r] IN OUT`: the second operand is written.
    fn output_operand(&mut self, key: &str, args: &[Word]) -> Result<Class, Unknown> {
        if let Some(d) = dynamic_flag(args) {
            return Ok(Class::new(
                Risk::High,
                format!(
                    "`{}` is computed at run time, so Toolshed cannot tell which file {key} writes",
                    d.raw
                ),
            ));
        }
        let with_value: &[&str] = match key {
            "uniq" => &["-f", "-s", "-w"],
            _ => &["-c", "-g", "-l", "-o", "-s", "-n", "-C", "-R"],
        };
        let o = split(args, |f| with_value.contains(&f));
        if let Some(out) = o.operands.get(1) {
            self.target(out, TargetKind::Write)?;
        }
        Ok(low())
    }

    fn file_changer(&mut self, key: &str, args: &[Word]) -> Result<Class, Unknown> {
        if key == "rm"
            && let Some(d) = dynamic_flag(args)
        {
            return Ok(Class::new(
                Risk::High,
                format!("`{}` is computed at run time and could be -r", d.raw),
            ));
        }
        let with_value: &[&str] = match key {
            "cp" | "mv" | "ln" | "install" => &[
                "-t",
                "-S",
                "--target-directory",
                "--suffix",
                "-m",
                "-o",
                "-g",
                "--mode",
                "--owner",
                "--group",
            ],
            "touch" => &["-d", "-t", "-r", "--date", "--reference"],
            "mkdir" => &["-m", "--mode"],
            "truncate" => &["-s", "-r", "--size", "--reference"],
            "chmod" | "chown" | "chgrp" => &["--reference"],
            "patch" => &[
                "-p",
                "-i",
                "-o",
                "-d",
                "-r",
                "-B",
                "-D",
                "-F",
                "-V",
                "-z",
                "--input",
                "--output",
                "--directory",
            ],
            _ => &[],
        };
        let o = split(args, |f| with_value.contains(&f));
        let recursive = any_has(&o.flags, "rR", &["recursive"]);
        match key {
            "rm" => {
                let kind = if recursive {
                    TargetKind::DeleteTree
                } else {
                    TargetKind::Delete
                };
                for t in &o.operands {
                    self.target(t, kind)?;
                }
                return Ok(if recursive {
                    Class::new(Risk::High, "`rm -r` deletes whole directory trees")
                } else {
                    Class::new(Risk::Medium, "deletes files")
                });
            }
            "rmdir" => {
                for t in &o.operands {
                    self.target(t, TargetKind::Delete)?;
                }
            }
            "cp" | "ln" | "install" | "mv" => {
                let target_dir = o.flags.iter().enumerate().find_map(|(k, f)| {
                    if f.is("-t") || f.is("--target-directory") {
                        o.flags.get(k + 1).copied()
                    } else {
                        None
                    }
                });
                let long_dir = o.flags.iter().find_map(|f| {
                    f.display()
                        .strip_prefix("--target-directory=")
                        .map(str::to_string)
                });
                if let Some(dir) = long_dir {
                    self.target(
                        &Word::dynamic(&dir, false).with_text(&dir),
                        TargetKind::Write,
                    )?;
                } else if let Some(dir) = target_dir {
                    self.target(dir, TargetKind::Write)?;
                } else if let Some(last) = o.operands.last() {
                    self.target(last, TargetKind::Write)?;
                }
                if key == "mv" {
                    let n =
                        o.operands
                            .len()
                            .saturating_sub(if target_dir.is_some() { 0 } else { 1 });
                    for src in &o.operands[..n] {
                        self.target(src, TargetKind::Delete)?;
                    }
                }
            }
            "chmod" | "chown" | "chgrp" => {
                let skip = usize::from(
                    !o.flags
                        .iter()
                        .any(|f| f.display().starts_with("--reference")),
                );
                for t in o.operands.iter().skip(skip) {
                    self.target(t, TargetKind::Write)?;
                }
                if recursive {
                    return Ok(Class::new(
                        Risk::High,
                        format!("`{key} -R` changes whole trees"),
                    ));
                }
            }
            "tee" => {
                for t in &o.operands {
                    self.target(t, TargetKind::Write)?;
                }
                return Ok(low());
            }
            "gzip" | "bzip2" | "xz" | "zstd" | "gunzip" | "bunzip2" | "unxz" => {
                for t in &o.operands {
                    self.target(t, TargetKind::Write)?;
                }
            }
            "patch" | "unzip" => {}
            _ => {
                for t in &o.operands {
                    self.target(t, TargetKind::Write)?;
                }
            }
        }
        Ok(Class::new(Risk::Medium, format!("`{key}` changes files")))
    }
}

impl Word {
    fn with_text(mut self, text: &str) -> Word {
        self.text = Some(text.to_string());
        self.pattern = Some(text.to_string());
        self.may_be_flag = text.starts_with('-');
        self
    }
}

/// Builtins and constructs whose effect cannot be known before they run.
fn unknown_builtin(key: &str, args: &[Word]) -> Option<String> {
    match key {
        "eval" => Some("`eval` runs a string as shell code, which Toolshed cannot check before it runs; write the command directly".into()),
        "source" | "." => Some(format!("`{key}` runs the commands of a file, which Toolshed cannot check; run the file as a script (sh FILE) instead")),
        "exec" => Some("`exec` replaces the shell or rewires its file descriptors; run the command without exec".into()),
        "alias" | "unalias" if !args.is_empty() => Some("aliases change what later command names mean; call the program directly".into()),
        "fc" | "enable" | "coproc" | "function" => Some(format!("`{key}` is not supported; write the commands out instead")),
        _ => None,
    }
}

fn interpreter(key: &str, args: &[Word]) -> Class {
    if let Some(d) = args.first().filter(|a| a.text.is_none() && a.may_be_flag) {
        return Class::new(
            Risk::High,
            format!(
                "`{}` is computed at run time and could be an option such as -c",
                d.raw
            ),
        );
    }
    let eval_shorts = match key {
        k if k.starts_with("python") || k == "ipython" => "c",
        "node" | "nodejs" | "bun" => "ep",
        "ruby" | "lua" | "luajit" | "rscript" => "e",
        "perl" => "eE",
        "php" => "rRBE",
        _ => "",
    };
    let eval_longs: &[&str] = &["eval", "print", "command", "exec"];
    let with_value: &[&str] = &[
        "-W",
        "-X",
        "-I",
        "-r",
        "--require",
        "--import",
        "--loader",
        "-Q",
    ];
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let t = a.display();
        if !t.starts_with('-') || t == "-" {
            break;
        }
        if t == "--" {
            i += 1;
            break;
        }
        if has(a, eval_shorts, eval_longs) {
            return Class::new(Risk::High, "runs code given on the command line");
        }
        if matches!(t, "--version" | "-V" | "--help" | "-h") && args.len() == 1 {
            return low();
        }
        if t == "-m" {
            return Class::new(Risk::Medium, "runs a module, which may change files");
        }
        if matches!(key, "node" | "nodejs" | "deno" | "bun")
            && (t == "-r" || t == "--require" || t == "--import")
        {
            return Class::new(Risk::High, "preloads code given on the command line");
        }
        if with_value.contains(&t) {
            i += 1;
        }
        i += 1;
    }
    match args.get(i) {
        None => Class::new(Risk::High, "runs code read from standard input"),
        Some(a) if a.is("-") => Class::new(Risk::High, "runs code read from standard input"),
        Some(a) if key == "deno" && (a.is("eval") || a.is("repl")) => {
            Class::new(Risk::High, "runs code given on the command line")
        }
        Some(a) if key == "bun" && (a.is("x") || a.is("add") || a.is("install")) => {
            Class::new(Risk::High, "installs or runs packages from the network").net()
        }
        Some(_) => Class::new(Risk::Medium, "runs a script, which may change files"),
    }
}

fn first_operand(args: &[Word]) -> Option<&str> {
    args.iter()
        .map(|a| a.display())
        .find(|t| !t.starts_with('-') && !t.starts_with('+'))
}

fn cargo(args: &[Word]) -> Class {
    if args.iter().any(|a| a.display().starts_with("--config")) {
        return Class::new(Risk::High, "`cargo --config` can name programs to run");
    }
    if let Some(d) = dynamic_flag(args) {
        return Class::new(
            Risk::High,
            format!(
                "`{}` is computed at run time and could be a cargo option such as --config",
                d.raw
            ),
        );
    }
    if args
        .iter()
        .any(|a| a.is("--version") || a.is("-V") || a.is("--list"))
        && first_operand(args).is_none()
    {
        return low();
    }
    match first_operand(args) {
        None => low(),
        Some(
            "metadata" | "tree" | "version" | "locate-project" | "pkgid" | "read-manifest"
            | "verify-project" | "help",
        ) => low(),
        Some(
            "build" | "b" | "check" | "c" | "test" | "t" | "run" | "r" | "clippy" | "fmt" | "doc"
            | "d" | "bench" | "clean" | "fix" | "package" | "vendor" | "generate-lockfile"
            | "rustc" | "rustdoc" | "nextest" | "llvm-cov" | "miri" | "xtask" | "expand",
        ) => Class::new(Risk::Medium, "builds or runs code from the workspace"),
        Some("update" | "fetch" | "add" | "remove" | "search" | "info") => {
            Class::new(Risk::Medium, "downloads from the package registry").net()
        }
        Some(
            "install" | "uninstall" | "publish" | "login" | "logout" | "owner" | "yank" | "new"
            | "init",
        ) => Class::new(
            Risk::High,
            "installs, publishes or changes things outside the workspace",
        )
        .net(),
        Some(other) => Class::new(
            Risk::Medium,
            format!(
                "`cargo {other}` is not a subcommand Toolshed knows (it may be a cargo-{other} program)"
            ),
        ),
    }
}

fn npm(key: &str, args: &[Word]) -> Class {
    match first_operand(args) {
        None if key == "yarn" => Class::new(Risk::High, "installs packages from the network").net(),
        None => low(),
        Some("ls" | "list" | "help" | "config" | "root" | "prefix" | "bin" | "why" | "explain") => {
            low()
        }
        Some("view" | "info" | "show" | "outdated" | "search") => {
            Class::new(Risk::Medium, "queries the package registry").net()
        }
        Some(
            "test" | "t" | "run" | "run-script" | "start" | "build" | "stop" | "restart" | "lint"
            | "exec-local",
        ) => Class::new(Risk::Medium, "runs a package script from the workspace"),
        Some(_) => Class::new(
            Risk::High,
            "installs, publishes or runs packages from the network",
        )
        .net(),
    }
}

fn pip(key: &str, args: &[Word]) -> Class {
    match first_operand(args) {
        None => low(),
        Some(
            "list" | "show" | "freeze" | "check" | "help" | "config" | "debug" | "inspect" | "env"
            | "version",
        ) => low(),
        Some("run") if key == "uv" || key == "poetry" => {
            Class::new(Risk::Medium, "runs code from the workspace")
        }
        Some(_) => Class::new(Risk::High, "installs or removes packages, from the network").net(),
    }
}

fn go(args: &[Word]) -> Class {
    match first_operand(args) {
        Some("version" | "env" | "list" | "doc" | "vet" | "help") => low(),
        Some("get" | "install" | "mod") => {
            Class::new(Risk::High, "downloads and installs modules").net()
        }
        _ => Class::new(Risk::Medium, "builds or runs code from the workspace"),
    }
}

fn rg(args: &[Word]) -> Class {
    for a in args {
        let t = a.display();
        if t.starts_with("--pre") || t.starts_with("--hostname-bin") {
            return Class::new(Risk::High, format!("`rg {t}` runs a program on every file"));
        }
    }
    if let Some(d) = dynamic_flag(args) {
        return Class::new(
            Risk::High,
            format!(
                "`{}` is computed at run time and could be `--pre`, which runs a program",
                d.raw
            ),
        );
    }
    low()
}

fn tar(args: &[Word]) -> Class {
    if let Some(d) = dynamic_flag(args) {
        return Class::new(
            Risk::High,
            format!(
                "`{}` is computed at run time and could be a tar option that runs a program",
                d.raw
            ),
        );
    }
    let mut writes = false;
    for (k, a) in args.iter().enumerate() {
        let t = a.display();
        let bundle = if let Some(b) = t.strip_prefix('-').filter(|b| !b.starts_with('-')) {
            Some(b)
        } else if k == 0 && !t.starts_with('-') {
            Some(t)
        } else {
            None
        };
        if t.starts_with("--to-command")
            || t.starts_with("--use-compress-program")
            || t.starts_with("--checkpoint-action")
            || t.starts_with("--info-script")
            || t.starts_with("--new-volume-script")
            || t.starts_with("--rsh-command")
            || t.starts_with("--rmt-command")
            || t.starts_with("--index-file")
        {
            return Class::new(Risk::High, format!("`tar {t}` runs a program"));
        }
        if let Some(b) = bundle {
            if b.contains(['I', 'F']) {
                return Class::new(Risk::High, "`tar -I`/`-F` runs a program");
            }
            if b.contains(['x', 'c', 'r', 'u', 'A']) {
                writes = true;
            }
        }
        if matches!(
            t,
            "--extract"
                | "--get"
                | "--create"
                | "--append"
                | "--update"
                | "--catenate"
                | "--delete"
        ) {
            writes = true;
        }
        if t.contains(':') && !t.starts_with('-') && !args.iter().any(|a| a.is("--force-local")) {
            return Class::new(
                Risk::High,
                "a tar archive name with `host:` reaches another machine",
            )
            .net();
        }
    }
    if writes {
        Class::new(Risk::Medium, "writes an archive or extracts files")
    } else {
        low()
    }
}
