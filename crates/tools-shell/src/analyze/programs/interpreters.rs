//! Interpreters and shells. Code given on the command line or read from standard input is high
//! risk when nothing but this analysis confines it; inside the kernel sandbox it is contained
//! (its code is opaque, but the kernel confines it), except when it came from the network.

use tool_core::Risk;

use super::super::walk::Walker;
use super::super::words::Word;
use super::super::{Reach, Unknown};
use super::getopt::{Spec, parse};
use super::{Class, contained, low};

/// Shells: `-c` runs code given as an argument; no script runs code from standard input.
pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash",
];

fn is_interpreter(key: &str) -> bool {
    (key.starts_with("python") && key[6..].chars().all(|c| c.is_ascii_digit() || c == '.'))
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
}

fn code(reason: &str) -> Class {
    let mut c = Class::new(Risk::High, Reach::Contained, reason);
    c.arg_code = true;
    c
}

fn stdin_code() -> Class {
    let mut c = Class::new(
        Risk::High,
        Reach::Contained,
        "runs code read from standard input",
    );
    c.stdin_code = true;
    c
}

/// `python3`, `node`, `perl` …; `None` when `key` is not an interpreter.
pub(crate) fn interpreter(key: &str, args: &[Word]) -> Option<Class> {
    if !is_interpreter(key) {
        return None;
    }
    if let Some(d) = args.first().filter(|a| a.text.is_none() && a.may_be_flag) {
        let mut c = code(&format!(
            "`{}` is computed at run time and could be an option such as -c",
            d.raw
        ));
        c.reach(Reach::Unknown, c.reason.clone());
        return Some(c);
    }
    let eval_shorts = match key {
        k if k.starts_with("python") || k == "ipython" => "c",
        "node" | "nodejs" | "bun" => "ep",
        "ruby" | "lua" | "luajit" | "rscript" => "e",
        "perl" => "eE",
        "php" => "rRBE",
        _ => "",
    };
    let eval_longs: &[&str] = &["--eval", "--print", "--command", "--exec"];
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
        let long = t.starts_with("--");
        let name = t.split('=').next().unwrap_or(t);
        if (!long && t[1..].chars().any(|c| eval_shorts.contains(c)))
            || (long
                && eval_longs
                    .iter()
                    .any(|l| l.starts_with(name) && name.len() > 3))
        {
            return Some(code("runs code given on the command line"));
        }
        if matches!(t, "--version" | "-V" | "--help" | "-h") && args.len() == 1 {
            return Some(low());
        }
        if t == "-m" {
            let mut c = contained("runs a module, which may change files");
            c.arg_code = args.get(i + 1).is_some_and(|m| m.literal().is_none());
            return Some(c);
        }
        if matches!(key, "node" | "nodejs" | "deno" | "bun")
            && (t == "-r" || t == "--require" || t == "--import")
        {
            return Some(code("preloads code given on the command line"));
        }
        if with_value.contains(&t) {
            i += 1;
        }
        i += 1;
    }
    Some(match args.get(i) {
        None => stdin_code(),
        Some(a) if a.is("-") => stdin_code(),
        Some(a) if key == "deno" && (a.is("eval") || a.is("repl")) => {
            code("runs code given on the command line")
        }
        Some(a) if key == "bun" && (a.is("x") || a.is("add") || a.is("install")) => Class::new(
            Risk::High,
            Reach::Network,
            "installs or runs packages from the network",
        )
        .net(),
        Some(a) => {
            let mut c = contained("runs a script, which may change files");
            c.arg_code = a.literal().is_none();
            c
        }
    })
}

const SHELL: Spec = Spec::new(
    "abcefhiklmnprstuvxBCEHPTo:O:",
    "debug debugger dump-po-strings dump-strings help init-file= rcfile= login noediting noprofile norc posix pretty-print protected restricted verbose version",
);

impl Walker {
    pub(crate) fn shell(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        // Shells read options up to the first operand (the script or the -c string).
        let p = parse(&SHELL.in_order(), args);
        if let Some(problem) = &p.problem {
            let mut c = Class::problem("the shell", problem, Risk::High);
            c.arg_code = true;
            return Ok(c);
        }
        if p.has('\0', "rcfile") || p.has('\0', "init-file") {
            return Ok(code("`--rcfile` runs a startup file Toolshed cannot check").opaque());
        }
        let operands = &args[p.rest..];
        if operands
            .first()
            .is_some_and(|w| w.display().starts_with('+'))
        {
            let mut c = Class::new(
                Risk::High,
                Reach::Unknown,
                format!(
                    "`{}` is a shell option form Toolshed does not read",
                    operands[0].display()
                ),
            );
            c.arg_code = true;
            return Ok(c);
        }
        if p.has('c', "") {
            // Look inside a literal script so its programs are judged (and the deny list sees
            // them); the call stays high risk whatever the script is.
            match operands.first() {
                Some(w) => match w.literal() {
                    Some(script) => {
                        let script = script.to_string();
                        if let Err(why) = self.script(&script) {
                            let mut c = code("runs shell code given on the command line");
                            c.reach(
                                Reach::Unknown,
                                format!("its script cannot be checked: {why}"),
                            );
                            return Ok(c);
                        }
                    }
                    None => {
                        let mut c = code("runs shell code computed at run time");
                        c.reach(Reach::Unknown, "runs shell code computed at run time");
                        return Ok(c);
                    }
                },
                None => return Err(Unknown("`sh -c` has no script; give one".into())),
            }
            return Ok(code("runs shell code given on the command line"));
        }
        if p.has('s', "") || operands.is_empty() {
            if p.has('\0', "version") || p.has('\0', "help") {
                return Ok(low());
            }
            return Ok(stdin_code().opaque());
        }
        let mut c = contained("runs a shell script").opaque();
        c.arg_code = operands[0].literal().is_none();
        Ok(c)
    }
}
