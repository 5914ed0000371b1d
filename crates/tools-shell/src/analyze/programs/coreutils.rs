//! Core utilities: programs that only read (low when every option is known), and programs that
//! change files in the workspace (medium, with their targets collected).

use tool_core::Risk;

use super::super::walk::Walker;
use super::super::words::Word;
use super::super::{Reach, TargetKind, Unknown};
use super::getopt::{Spec, parse};
use super::specs as s;
use super::{Class, contained, dynamic_flag, low};

/// The option table of a program that only reads, whatever its options.
fn reader_spec(key: &str) -> Option<Spec> {
    Some(match key {
        "ls" => s::LS,
        "cat" => s::CAT,
        "head" => s::HEAD,
        "tail" => s::TAIL,
        "wc" => s::WC,
        "grep" | "egrep" | "fgrep" => s::GREP,
        "cut" => s::CUT,
        "tr" => s::TR,
        "diff" => s::DIFF,
        "cmp" => s::CMP,
        "comm" => s::COMM,
        "basename" => s::BASENAME,
        "dirname" => s::DIRNAME,
        "realpath" => s::REALPATH,
        "readlink" => s::READLINK,
        "stat" => s::STAT,
        "du" => s::DU,
        "df" => s::DF,
        "nl" => s::NL,
        "fold" => s::FOLD,
        "fmt" => s::FMT,
        "expand" => s::EXPAND,
        "unexpand" => s::UNEXPAND,
        "paste" => s::PASTE,
        "join" => s::JOIN,
        "tac" => s::TAC,
        "seq" => s::SEQ,
        "printenv" => s::PRINTENV,
        "base64" => s::BASE64,
        "base32" => s::BASE32,
        "od" => s::OD,
        "md5sum" => s::MD5SUM,
        "sha1sum" => s::SHA1SUM,
        "sha224sum" => s::SHA224SUM,
        "sha256sum" => s::SHA256SUM,
        "sha384sum" => s::SHA384SUM,
        "sha512sum" => s::SHA512SUM,
        "b2sum" => s::B2SUM,
        "cksum" => s::CKSUM,
        "sum" => s::SUM,
        "uname" => s::UNAME,
        "nproc" => s::NPROC,
        "uptime" => s::UPTIME,
        "id" => s::ID,
        "whoami" => s::WHOAMI,
        "groups" => s::GROUPS,
        "tty" => s::TTY,
        "arch" => s::ARCH,
        "zcat" => s::ZCAT,
        "strings" => s::STRINGS,
        "hexdump" => s::HEXDUMP,
        "column" => s::COLUMN,
        "rev" => s::REV,
        "numfmt" => s::NUMFMT,
        "free" => s::FREE,
        "lsblk" => s::LSBLK,
        "pgrep" => s::PGREP,
        "lscpu" => s::LSCPU,
        _ => return None,
    })
}

/// Programs that only read and have no option table: short options are harmless, long ones
/// other than `--help` and `--version` ask.
const READERS_WITHOUT_TABLE: &[&str] = &[
    "pwd",
    "which",
    "expr",
    "bc",
    "ps",
    "cal",
    "lsof",
    "locale",
    "getconf",
    "yes",
    "sleep",
    "bzcat",
    "xzcat",
    "zstdcat",
    "mountpoint",
    "whereis",
    "dircolors",
    "tsort",
    "factor",
];

impl Walker {
    /// Readers and file changers; `None` when `key` is neither.
    pub(crate) fn coreutil(&mut self, key: &str, args: &[Word]) -> Result<Option<Class>, Unknown> {
        if let Some(spec) = reader_spec(key) {
            // A reader's options cannot run programs or write files: a word computed at run time
            // (a loop's file name) is fine.
            let p = parse(&spec.dynamic_operands(), args);
            return Ok(Some(match &p.problem {
                None => low(),
                Some(problem) => Class::problem(key, problem, Risk::Medium),
            }));
        }
        if READERS_WITHOUT_TABLE.contains(&key) || key == "jq" {
            let long = args.iter().find(|a| {
                a.literal().is_some_and(|t| {
                    t.starts_with("--") && t.len() > 2 && !matches!(t, "--help" | "--version")
                })
            });
            return Ok(Some(match long {
                // jq reads its options by exact name, and none of them runs a program.
                Some(a) if key != "jq" => Class::new(
                    Risk::Medium,
                    Reach::Unknown,
                    format!(
                        "`{key} {}` is a long option Toolshed has no table for",
                        a.display()
                    ),
                ),
                _ => low(),
            }));
        }
        let class = match key {
            "sort" => self.sort(args)?,
            "uniq" => self.uniq(args)?,
            "xxd" => self.xxd(args)?,
            "date" => {
                let p = parse(&s::DATE, args);
                match &p.problem {
                    _ if p.has('s', "set") => Class::new(
                        Risk::High,
                        Reach::OutsideWrites,
                        "`date -s` sets the system clock",
                    ),
                    Some(problem) => Class::problem("date", problem, Risk::High),
                    None => low(),
                }
            }
            "hostname" => {
                if args.iter().any(|a| {
                    !a.display().starts_with('-')
                        || a.display().starts_with("--")
                            && !matches!(
                                a.display(),
                                "--short"
                                    | "--long"
                                    | "--fqdn"
                                    | "--all-fqdns"
                                    | "--ip-address"
                                    | "--all-ip-addresses"
                                    | "--domain"
                                    | "--help"
                                    | "--version"
                            )
                        || a.display().contains(['F', 'b'])
                }) {
                    Class::new(
                        Risk::High,
                        Reach::OutsideWrites,
                        "`hostname NAME` renames the machine",
                    )
                } else {
                    low()
                }
            }
            "file" => {
                let p = parse(&s::FILE.dynamic_operands(), args);
                match &p.problem {
                    _ if p.has('C', "compile") => {
                        contained("`file -C` writes a compiled magic file")
                    }
                    None => low(),
                    Some(problem) => Class::problem("file", problem, Risk::Medium),
                }
            }
            "tree" => {
                let mut c = low();
                let mut i = 0;
                while i < args.len() {
                    let t = args[i].display();
                    if t == "-o" {
                        if let Some(f) = args.get(i + 1) {
                            self.target(f, TargetKind::Write)?;
                        }
                        c.raise(Risk::Medium, Reach::Contained, "`tree -o` writes a file");
                    }
                    if matches!(
                        t,
                        "-o" | "-L"
                            | "-P"
                            | "-I"
                            | "--filelimit"
                            | "--timefmt"
                            | "-H"
                            | "--charset"
                            | "--sort"
                            | "--fromfile"
                            | "--gitfile"
                            | "--infofile"
                    ) {
                        i += 1;
                    }
                    i += 1;
                }
                c
            }
            "mkdir" | "touch" | "cp" | "mv" | "ln" | "rmdir" | "install" | "truncate" | "chmod"
            | "chown" | "chgrp" | "rm" | "tee" | "patch" => self.file_changer(key, args)?,
            _ => return Ok(None),
        };
        Ok(Some(class))
    }

    fn sort(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let p = parse(&s::SORT, args);
        if let Some(problem) = &p.problem {
            return Ok(Class::problem("sort", problem, Risk::High));
        }
        if p.has('\0', "compress-program") {
            return Ok(Class::new(
                Risk::High,
                Reach::Unknown,
                "`sort --compress-program` runs a program",
            ));
        }
        for f in p.values('o', "output") {
            self.target(f, TargetKind::Write)?;
        }
        Ok(low())
    }

    /// `uniq IN OUT`: the second operand is written.
    fn uniq(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let p = parse(&s::UNIQ, args);
        if let Some(problem) = &p.problem {
            return Ok(Class::problem("uniq", problem, Risk::High));
        }
        if let Some(out) = p.operands.get(1) {
            self.target(out, TargetKind::Write)?;
        }
        Ok(low())
    }

    /// `xxd [-r] IN OUT`: the second operand is written (xxd reads its own single-dash options).
    fn xxd(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        if let Some(d) = dynamic_flag(args) {
            return Ok(Class::new(
                Risk::High,
                Reach::Unknown,
                format!(
                    "`{}` is computed at run time, so Toolshed cannot tell which file xxd writes",
                    d.raw
                ),
            ));
        }
        let with_value = [
            "-c",
            "-g",
            "-l",
            "-o",
            "-s",
            "-n",
            "-C",
            "-R",
            "-cols",
            "-groupsize",
            "-len",
            "-offset",
            "-seek",
            "-name",
        ];
        let mut operands = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let t = args[i].display();
            if t.starts_with('-') && t != "-" {
                if with_value.contains(&t) {
                    i += 1;
                }
            } else {
                operands.push(&args[i]);
            }
            i += 1;
        }
        if let Some(out) = operands.get(1) {
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
                Reach::Unknown,
                format!("`{}` is computed at run time and could be -r", d.raw),
            ));
        }
        if key == "patch" {
            return Ok(Class::new(
                Risk::Medium,
                Reach::Unknown,
                "`patch` writes the files its input names",
            ));
        }
        // `chmod -x f`: a mode that starts with `-` is an operand, not an option.
        let mode_first;
        let args = if key == "chmod" {
            mode_first = args
                .iter()
                .map(|a| match a.literal() {
                    Some(t)
                        if t.len() > 1
                            && t.starts_with('-')
                            && !t.starts_with("--")
                            && t[1..].chars().all(|c| "rwxXstugoa=+-,01234567".contains(c))
                            && !t[1..].chars().any(|c| "Rcfv".contains(c)) =>
                    {
                        Word::fixed(&format!("mode:{t}"))
                    }
                    _ => a.clone(),
                })
                .collect::<Vec<_>>();
            &mode_first[..]
        } else {
            args
        };
        let spec = match key {
            "mkdir" => s::MKDIR,
            "touch" => s::TOUCH,
            "cp" => s::CP,
            "mv" => s::MV,
            "ln" => s::LN,
            "rmdir" => s::RMDIR,
            "install" => s::INSTALL,
            "truncate" => s::TRUNCATE,
            "chmod" => s::CHMOD,
            "chown" => s::CHOWN,
            "chgrp" => s::CHGRP,
            "rm" => s::RM,
            _ => s::TEE,
        };
        let p = parse(&spec.dynamic_operands(), args);
        if let Some(problem) = &p.problem {
            return Err(Unknown(format!(
                "{}, so Toolshed cannot tell which files it changes; write the options in full",
                problem.describe(key)
            )));
        }
        let recursive = p.has('r', "recursive") || p.has('R', "recursive");
        let o = &p.operands;
        match key {
            "rm" => {
                let kind = if recursive {
                    TargetKind::DeleteTree
                } else {
                    TargetKind::Delete
                };
                for t in o {
                    self.target(t, kind)?;
                }
                return Ok(if recursive {
                    Class::new(
                        Risk::High,
                        Reach::Destructive,
                        "`rm -r` deletes whole directory trees",
                    )
                } else {
                    contained("deletes files")
                });
            }
            "rmdir" => {
                for t in o {
                    self.target(t, TargetKind::Delete)?;
                }
            }
            "cp" | "ln" | "install" | "mv" if dynamic_flag(args).is_some() => {
                for t in o.iter().filter(|t| t.literal().is_some()) {
                    self.target(t, TargetKind::Write)?;
                }
                return Ok(Class::new(
                    Risk::Medium,
                    Reach::Unknown,
                    format!(
                        "`{}` is computed at run time and could be an option such as --target-directory, so Toolshed cannot tell where `{key}` writes",
                        dynamic_flag(args).map_or("", |d| d.raw.as_str())
                    ),
                ));
            }
            "install" if p.has('\0', "strip-program") => {
                return Ok(Class::new(
                    Risk::High,
                    Reach::Unknown,
                    "`install --strip-program` runs a program",
                ));
            }
            "cp" | "ln" | "install" | "mv" => {
                let target_dir = p
                    .values('t', "target-directory")
                    .into_iter()
                    .next()
                    .cloned();
                let directory_mode = key == "install" && p.has('d', "directory");
                if directory_mode {
                    for t in o {
                        self.target(t, TargetKind::Write)?;
                    }
                } else if let Some(dir) = &target_dir {
                    self.target(dir, TargetKind::Write)?;
                } else if let Some(last) = o.last() {
                    self.target(last, TargetKind::Write)?;
                }
                let n = o
                    .len()
                    .saturating_sub(if target_dir.is_some() { 0 } else { 1 });
                if key == "mv" {
                    for src in &o[..n] {
                        self.target(src, TargetKind::Delete)?;
                    }
                }
                // A hard link is the same file under a second name: a later write through the
                // new name writes the source (round 20: `ln sub/.git/config cfg` then
                // `cat evil >> cfg` planted a `core.fsmonitor`). The sources are written, so
                // the rules on writes (and git's own files) hold for them.
                let hard_link =
                    (key == "ln" && !p.has('s', "symbolic")) || (key == "cp" && p.has('l', "link"));
                // A hard-link copy of a whole tree gives every file in it a second name, git's
                // own files of a repository inside it too, which the rules cannot see by path
                // (round 21: `cp -rl zz/sub zz/c5`, then a copied `.git/config` moved out and
                // appended to, rewrote the real one). Refused: copy without `-l`.
                if key == "cp" && hard_link && (recursive || p.has('a', "archive")) {
                    return Err(Unknown(
                        "`cp -l` over a directory tree gives every file in it a second name, a repository's own files included; copy without `-l` (or link single files with `ln`)".into(),
                    ));
                }
                if hard_link {
                    for src in &o[..n] {
                        self.target(src, TargetKind::Write)?;
                    }
                }
            }
            "chmod" | "chown" | "chgrp" => {
                let skip = usize::from(!p.has('\0', "reference"));
                for t in o.iter().skip(skip) {
                    self.target(t, TargetKind::Write)?;
                }
                if recursive {
                    return Ok(Class::new(
                        Risk::High,
                        Reach::Destructive,
                        format!("`{key} -R` changes whole trees"),
                    ));
                }
            }
            "tee" => {
                for t in o {
                    self.target(t, TargetKind::Write)?;
                }
                return Ok(low());
            }
            "truncate" => {
                for t in o {
                    self.target(t, TargetKind::Write)?;
                }
                if o.len() > 1 || o.iter().any(|t| t.glob) {
                    return Ok(Class::new(
                        Risk::Medium,
                        Reach::Destructive,
                        "`truncate` cuts the contents of several files",
                    ));
                }
            }
            _ => {
                for t in o {
                    self.target(t, TargetKind::Write)?;
                }
            }
        }
        Ok(contained(format!("`{key}` changes files")))
    }
}
