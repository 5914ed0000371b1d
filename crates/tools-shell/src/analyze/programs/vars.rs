//! Variables: which names are dangerous to set, and every builtin that sets or removes one
//! (`read`, `unset`, `export`, `declare`, `printf -v`, `getopts`, `mapfile`, `let` …), checked
//! exactly like `NAME=value`. Also the builtins that change how later commands run (`set`,
//! `shopt`, `trap`, `alias`, `hash -p`, `enable`, `complete -C`, `bind -x`, `fc`).

use tool_core::Risk;

use super::super::arith::{runs_code, var_name};
use super::super::walk::Walker;
use super::super::words::Word;
use super::super::{Reach, Unknown};
use super::getopt::{Spec, parse};
use super::{Class, low};

/// Variables whose value makes programs load or run other code, or changes how the shell parses.
const DANGEROUS_VARS: &[&str] = &[
    // bash's tables of where commands are (`BASH_CMDS[ls]=/usr/bin/tar` runs tar as `ls`;
    // found in round 11) and of aliases.
    "BASH_CMDS",
    "BASH_ALIASES",
    "PATH",
    "IFS",
    "ENV",
    "BASH_ENV",
    "BASH_XTRACEFD",
    "BASH_LOADABLES_PATH",
    "BASH_COMPAT",
    "CDPATH",
    "HOME",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
    "GLOBIGNORE",
    "EXECIGNORE",
    "PROMPT_COMMAND",
    "INPUTRC",
    "HISTFILE",
    "PAGER",
    "MANPAGER",
    "MANOPT",
    "SYSTEMD_PAGER",
    "BROWSER",
    "EDITOR",
    "VISUAL",
    "LESS",
    "LESSOPEN",
    "LESSCLOSE",
    "LESSKEY",
    "MORE",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "NODE_OPTIONS",
    "NODE_PATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC",
    "RUSTDOC",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CC",
    "CXX",
    "LD",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "GOFLAGS",
    "GOROOT",
    "SHELL",
    "MAKEFLAGS",
    "MAKEFILES",
    "TAR_OPTIONS",
    "GZIP",
    "XZ_OPT",
    "ZIPOPT",
    "UNZIP",
    "RSYNC_RSH",
    "PARALLEL",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "GCONV_PATH",
    "LOCPATH",
    "NLSPATH",
    "HOSTALIASES",
    "TMPDIR_EXEC",
    "SUDO_ASKPASS",
    "OPTIND",
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

/// Where a variable's value came from, for the places bash evaluates values as arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Value {
    /// Written on the command line, harmless as arithmetic: a number, an expression of numbers,
    /// or nothing.
    Plain,
    /// Written on the command line, naming variables (`y=x`, `y='x + 1'`, `for v in a b`):
    /// arithmetic over it evaluates those variables in turn, through any chain of names and
    /// subscripts, so it is judged as a value from outside would be.
    Text,
    /// From outside the command line (`read`, a loop over file names, a substitution).
    Outside,
    /// Written on the command line with a command substitution in it (`'a[$(id)]'`).
    Code,
}

impl Value {
    /// The value of a word assigned to a variable.
    pub(crate) fn of(word: &Word) -> Value {
        match word.literal() {
            Some(t) if runs_code(t) => Value::Code,
            Some(t) => {
                let a = super::super::arith::scan(t);
                if a.reads.is_empty() && a.assigns.is_empty() {
                    Value::Plain
                } else {
                    Value::Text
                }
            }
            None if word.raw.starts_with("$((")
                && word.raw.ends_with("))")
                && !word.raw[3..word.raw.len() - 2].contains("))") =>
            {
                Value::Plain
            }
            None => Value::Outside,
        }
    }
}

fn dangerous(name: &str) -> bool {
    DANGEROUS_VARS.contains(&name)
        || name.starts_with("LD_")
        || name.starts_with("DYLD_")
        || name.starts_with("BASH_FUNC")
        || (name.starts_with("GIT_") && !SAFE_VARS.contains(&name))
        || (name.starts_with("CARGO_") && name != "CARGO_TERM_COLOR")
        || name.starts_with("RUSTUP_")
        || name.starts_with("SSH_")
        || name.starts_with("NPM_CONFIG")
        || name.starts_with("npm_config")
        || name.starts_with("PIP_")
        || name.starts_with("UV_")
        || name.starts_with("POETRY_")
        || name.starts_with("GEM_")
        || name.starts_with("BUNDLE_")
        || name.starts_with("DOCKER_")
        || name.starts_with("KUBE")
}

const READ: Spec = Spec::new("Ea:d:ei:n:N:p:rst:u:", "").in_order();
const MAPFILE: Spec = Spec::new("C:c:d:n:O:s:tu:", "").in_order();
const UNSET: Spec = Spec::new("fnv", "").in_order();

impl Walker {
    /// Checks a variable assignment (`NAME=value cmd`, `NAME=value`, `export NAME=value`, and
    /// every builtin that sets or removes `NAME`).
    pub(crate) fn assignment(
        &mut self,
        name: &str,
        value: Value,
        exported: bool,
    ) -> Result<(), Unknown> {
        // bash's command and alias tables map a name to another program, as `hash -p` does:
        // `BASH_CMDS[ls]=/usr/bin/tar; ls …` runs tar under a name the rules do not see
        // (round 16: asked, so `--yes` ran a denied program). Refused in every spelling that
        // sets it (`declare`, `read`, `printf -v`, a nameref …).
        if matches!(name, "BASH_CMDS" | "BASH_ALIASES") {
            return Err(Unknown(format!(
                "setting `{name}` maps a command name to another program; call the program by path instead"
            )));
        }
        self.vars.push((name.to_string(), value));
        let (risk, reason) = if dangerous(name) {
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
            self.push_command(
                &format!("{name}="),
                &[],
                Class::new(risk, Reach::Unknown, reason),
            );
        }
        Ok(())
    }

    /// Checks a word that a builtin takes as a variable name (`read NAME`, `unset 'a[1]'`).
    pub(crate) fn set_var(
        &mut self,
        key: &str,
        word: &Word,
        value: Value,
        exported: bool,
    ) -> Result<(), Unknown> {
        let name = self.var_word(key, word)?;
        self.assignment(&name, value, exported)
    }

    /// The variable a word names, with its subscript checked as arithmetic.
    pub(crate) fn var_word(&mut self, key: &str, word: &Word) -> Result<String, Unknown> {
        let Some(text) = word.literal() else {
            return Err(Unknown(format!(
                "`{key} {}` names a variable computed at run time; write the name literally",
                word.raw
            )));
        };
        let Some((name, sub)) = var_name(text) else {
            return Err(Unknown(format!(
                "`{key} {text}` does not name a variable Toolshed can read; write a plain name"
            )));
        };
        if let Some(sub) = sub {
            self.arith(sub, &format!("the subscript of `{text}`"))?;
        }
        Ok(name.to_string())
    }

    /// Builtins and shell-level commands; `None` when `key` is not one.
    pub(crate) fn builtin(&mut self, key: &str, args: &[Word]) -> Result<Option<Class>, Unknown> {
        let refuse = |why: String| Err(Unknown(why));
        let class = match key {
            "eval" => return refuse("`eval` runs a string as shell code, which Toolshed cannot check before it runs; write the command directly".into()),
            "source" | "." => return refuse(format!("`{key}` runs the commands of a file, which Toolshed cannot check; run the file as a script (bash FILE) instead")),
            "fc" | "coproc" | "function" | "select" => return refuse(format!("`{key}` is not supported; write the commands out instead")),
            "alias" if args.iter().any(|a| !a.is("-p")) => return refuse("aliases change what later command names mean; call the program directly".into()),
            "trap" if !args.first().is_none_or(|a| a.is("-l") || a.is("-p")) => return refuse("`trap` runs a command later, which Toolshed cannot check; run it directly instead".into()),
            "hash" if args.iter().any(|a| a.display().starts_with('-') && a.display().contains('p')) => return refuse("`hash -p` maps a command name to another program; call the program by path instead".into()),
            "enable" if args.iter().any(|a| !(a.is("-a") || a.is("-p") || a.is("-s"))) => return refuse("`enable` loads or switches off builtins, which changes what later command names run; call the program directly".into()),
            "complete" | "compgen" | "compopt" if args.iter().any(|a| a.literal().is_none() || (a.display().starts_with('-') && a.display().contains(['C', 'F', 'W']))) => return refuse(format!("`{key} -C`/`-F`/`-W` runs commands or expands words, which Toolshed cannot check")),
            "bind" if args.iter().any(|a| a.display().starts_with('-') && a.display().contains('x')) => return refuse("`bind -x` runs a command on a key press; Toolshed cannot check it".into()),
            "history" if !args.is_empty() => return refuse("`history` with arguments adds, reads or writes history entries, which `fc` could run; leave history alone".into()),
            "alias" | "unalias" | "trap" | "hash" | "enable" | "complete" | "compgen" | "compopt" | "caller" | "true" | "false" | ":" | "exit" | "return" | "shift" | "break" | "continue" | "umask" | "ulimit" | "times" | "jobs" | "fg" | "bg" | "disown" | "suspend" | "dirs" | "help" | "type" | "logout" | "echo" => low(),
            "bind" => Class::new(Risk::Medium, Reach::Unknown, "`bind` changes key bindings"),
            "cd" | "pushd" | "popd" => self.cd(key, args),
            "export" | "readonly" | "local" | "declare" | "typeset" => self.declare(key, args)?,
            "read" => {
                let p = parse(&READ, args);
                if let Some(problem) = &p.problem {
                    return Ok(Some(Class::problem("read", problem, Risk::High)));
                }
                for a in p.values('a', "") {
                    self.set_var(key, a, Value::Outside, false)?;
                }
                for n in &args[p.rest..] {
                    self.set_var(key, n, Value::Outside, false)?;
                }
                if p.rest == args.len() && !p.has('a', "") {
                    self.assignment("REPLY", Value::Outside, false)?;
                }
                low()
            }
            "mapfile" | "readarray" => {
                let p = parse(&MAPFILE, args);
                if let Some(problem) = &p.problem {
                    return Ok(Some(Class::problem(key, problem, Risk::High)));
                }
                if p.has('C', "") {
                    return refuse(format!("`{key} -C` runs a callback as shell code; read the lines without it"));
                }
                match args.get(p.rest) {
                    Some(n) => self.set_var(key, n, Value::Outside, false)?,
                    None => self.assignment("MAPFILE", Value::Outside, false)?,
                }
                low()
            }
            "unset" => {
                let p = parse(&UNSET, args);
                if let Some(problem) = &p.problem {
                    return Ok(Some(Class::problem(key, problem, Risk::High)));
                }
                if !p.has('f', "") {
                    for n in &args[p.rest..] {
                        self.set_var(key, n, Value::Plain, false)?;
                    }
                }
                low()
            }
            "printf" => {
                let mut rest = args;
                if let Some(first) = args.first() {
                    if first.literal().is_none() && first.may_be_flag {
                        return refuse(format!("`printf {}` is computed at run time and could be `-v NAME`, which sets a variable; write the options literally", first.raw));
                    }
                    let t = first.display();
                    let name = if t == "-v" {
                        rest = &args[2.min(args.len())..];
                        args.get(1).cloned()
                    } else if let Some(n) = t.strip_prefix("-v") {
                        rest = &args[1..];
                        Some(Word::fixed(n))
                    } else {
                        None
                    };
                    if let Some(name) = name {
                        let rest = match rest.first() {
                            Some(w) if w.is("--") => &rest[1..],
                            _ => rest,
                        };
                        // printf builds its output from its format (escapes, `%b`, widths),
                        // so no argument tells what the variable will hold (`printf -v x
                        // 'a[$%s]' '(id)'` and `printf -v x '\141[\044(id)]'` hold a command
                        // substitution no argument shows).
                        let value = rest.iter().map(Value::of).max().unwrap_or(Value::Plain);
                        let plain_format = rest.first().is_none_or(|f| {
                            f.literal().is_some_and(|t| !t.contains(['\\', '%']))
                        });
                        let value = if rest.len() <= 1 && plain_format && value == Value::Plain {
                            value
                        } else {
                            value.max(Value::Outside)
                        };
                        self.set_var(key, &name, value, false)?;
                    }
                }
                low()
            }
            "getopts" => {
                if let Some(n) = args.get(1) {
                    self.set_var(key, n, Value::Outside, false)?;
                }
                self.assignment("OPTARG", Value::Outside, false)?;
                low()
            }
            "let" => {
                for a in args {
                    match a.literal() {
                        Some(t) => self.arith(t, "`let`")?,
                        None => self.arith(&a.raw, "`let`")?,
                    }
                }
                low()
            }
            "wait" => {
                let mut i = 0;
                while i < args.len() {
                    if args[i].is("-p") {
                        if let Some(n) = args.get(i + 1) {
                            self.set_var(key, n, Value::Plain, false)?;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                low()
            }
            "test" | "[" => {
                for (i, a) in args.iter().enumerate() {
                    if (a.is("-v") || a.is("-R"))
                        && let Some(n) = args.get(i + 1).filter(|n| !n.is("]"))
                    {
                        self.var_word(key, n)?;
                    }
                }
                low()
            }
            "set" => set(args)?,
            "shopt" => shopt(args)?,
            _ => return Ok(None),
        };
        Ok(Some(class))
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
        let mut flags = String::new();
        let mut unflags = String::new();
        let mut names: Vec<&Word> = Vec::new();
        let mut ended = false;
        for a in args {
            match a.literal() {
                Some("--") if !ended => ended = true,
                Some(t) if !ended && t.len() > 1 && t.starts_with('-') => flags.push_str(&t[1..]),
                Some(t) if !ended && t.len() > 1 && t.starts_with('+') => unflags.push_str(&t[1..]),
                None if !ended && a.may_be_flag && !a.prefix.contains('=') => {
                    return Err(Unknown(format!(
                        "`{key} {}` is computed at run time and could be an option such as -n; write it literally",
                        a.raw
                    )));
                }
                _ => names.push(a),
            }
        }
        if flags.contains('f') {
            return Err(Unknown(format!(
                "`{key} -f` works with shell functions, which Toolshed cannot check"
            )));
        }
        if flags.contains('p') || (flags.contains('F') && names.is_empty()) {
            return Ok(low());
        }
        let exported = (key == "export" && !flags.contains('n')) || flags.contains('x');
        for a in names {
            // `NAME`, `NAME=value`, `NAME[i]=value`, `NAME=(…)`; only the value may be computed.
            // bash re-reads a literal argument of these builtins as an assignment: a compound
            // value `(…)` and an array subscript `NAME[…]` are expanded again, so quoted
            // `$( … )` or backticks there run (`declare -a 'x=($(cmd))'`).
            if let Some(t) = a.literal() {
                let (n, v) = t.split_once('=').unwrap_or((t, ""));
                let expands = |s: &str| s.contains('$') || s.contains('`');
                if (v.trim_start().starts_with('(') && expands(v))
                    || (n.contains('[') && expands(n))
                {
                    return Err(Unknown(format!(
                        "`{key} {}` has expansions inside quotes that bash evaluates again (a compound value or an array subscript); assign the value in a separate step",
                        a.raw
                    )));
                }
            }
            let (name, value) = match a.literal() {
                Some(t) => match t.split_once('=') {
                    Some((n, v)) => (
                        n.trim_end_matches('+').to_string(),
                        Some(Value::of(&Word::fixed(v))),
                    ),
                    None => (t.to_string(), None),
                },
                None => match a.prefix.split_once('=') {
                    Some((n, _)) => (n.trim_end_matches('+').to_string(), Some(Value::Outside)),
                    None => {
                        return Err(Unknown(format!(
                            "`{key} {}` names a variable computed at run time; write the name literally",
                            a.raw
                        )));
                    }
                },
            };
            let base = self.var_word(key, &Word::fixed(&name))?;
            if flags.contains('n') {
                // A nameref: assigning to it assigns to the variable it names.
                let target = match a.literal().and_then(|t| t.split_once('=')) {
                    Some((_, target)) => target.to_string(),
                    None => {
                        return Err(Unknown(format!(
                            "`{key} -n {name}` makes a reference whose target is set later; name the target (`{key} -n {name}=VAR`)"
                        )));
                    }
                };
                self.set_var(key, &Word::fixed(&target), Value::Outside, exported)?;
                let target_name = target.split('[').next().unwrap_or(&target).to_string();
                self.namerefs.push((base.clone(), target_name));
                continue;
            }
            if flags.contains('i') {
                self.integers.push(base.clone());
            }
            if let Some((_, v)) = a.literal().and_then(|t| t.split_once('=')) {
                self.note_reference(&base, v);
            }
            self.assignment(&base, value.unwrap_or(Value::Plain), exported)?;
        }
        Ok(low())
    }
}

/// `set`: options that change how later commands are read or exported.
fn set(args: &[Word]) -> Result<Class, Unknown> {
    const LOW_LETTERS: &str = "befhmnuvxBCEHPT";
    const LOW_NAMES: &[&str] = &[
        "errexit",
        "nounset",
        "xtrace",
        "pipefail",
        "noclobber",
        "noglob",
        "verbose",
        "errtrace",
        "functrace",
        "hashall",
        "braceexpand",
        "physical",
        "monitor",
        "notify",
        "noexec",
        "ignoreeof",
        "interactive-comments",
        "nolog",
    ];
    let mut c = low();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let Some(t) = a.literal() else {
            if a.may_be_flag {
                return Err(Unknown(format!(
                    "`set {}` is computed at run time and could be an option such as -k; write it literally",
                    a.raw
                )));
            }
            break;
        };
        if t == "--" || t == "-" || !(t.starts_with('-') || t.starts_with('+')) {
            break;
        }
        for ch in t[1..].chars() {
            match ch {
                'o' => {
                    i += 1;
                    match args.get(i).and_then(|w| w.literal()) {
                        None => {}
                        Some(n) if LOW_NAMES.contains(&n) => {}
                        Some("allexport") => c.raise(Risk::Medium, Reach::Unknown, "`set -o allexport` exports every later assignment"),
                        Some("keyword") => return Err(Unknown("`set -o keyword` turns later arguments into variable assignments; leave it off".into())),
                        Some(n) => c.raise(Risk::Medium, Reach::Unknown, format!("`set -o {n}` changes how the shell runs later commands")),
                    }
                }
                'a' => c.raise(
                    Risk::Medium,
                    Reach::Unknown,
                    "`set -a` exports every later assignment",
                ),
                'k' => {
                    return Err(Unknown(
                        "`set -k` turns later arguments into variable assignments; leave it off"
                            .into(),
                    ));
                }
                _ if LOW_LETTERS.contains(ch) => {}
                _ => c.raise(
                    Risk::Medium,
                    Reach::Unknown,
                    format!("`set -{ch}` is a shell option Toolshed does not know"),
                ),
            }
        }
        i += 1;
    }
    Ok(c)
}

/// `shopt`: queries are reads; switching an option that changes parsing, aliases or debugging
/// is refused.
fn shopt(args: &[Word]) -> Result<Class, Unknown> {
    const LOW: &[&str] = &[
        "nullglob",
        "failglob",
        "dotglob",
        "globstar",
        "nocaseglob",
        "nocasematch",
        "lastpipe",
        "inherit_errexit",
        "globasciiranges",
        "checkwinsize",
        "xpg_echo",
        "patsub_replacement",
        "assoc_expand_once",
    ];
    let setting = args.iter().any(|a| a.is("-s") || a.is("-u"));
    if !setting {
        return Ok(low());
    }
    let mut c = low();
    for a in args.iter().filter(|a| !a.display().starts_with('-')) {
        match a.literal() {
            Some(n) if LOW.contains(&n) => {}
            Some(
                n @ ("extglob" | "expand_aliases" | "extdebug" | "sourcepath" | "progcomp"
                | "compat31" | "compat32" | "compat40" | "compat41" | "compat42" | "compat43"
                | "compat44"),
            ) => {
                return Err(Unknown(format!(
                    "`shopt {n}` changes how later commands are parsed or run (aliases, patterns, debugging traps), which Toolshed cannot follow; leave it alone"
                )));
            }
            Some(n) => c.raise(
                Risk::Medium,
                Reach::Unknown,
                format!("`shopt {n}` is a shell option Toolshed does not know"),
            ),
            None => {
                return Err(Unknown(format!(
                    "`shopt {}` names an option computed at run time",
                    a.raw
                )));
            }
        }
    }
    Ok(c)
}
