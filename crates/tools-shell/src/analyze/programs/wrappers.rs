//! Programs that run another program: `env`, `timeout`, `nice`, `xargs`, `find -exec`, `sudo`
//! … Each reads its own options with their arities first, so that an option's value is never
//! taken for the program (`timeout -s KILL 5 rm -rf d` runs `rm`, not `KILL` or `5`), and an
//! option it does not know refuses the command, since what runs can then not be told.

use tool_core::Risk;

use super::super::walk::Walker;
use super::super::words::Word;
use super::super::{Reach, TargetKind, Unknown};
use super::getopt::{Parsed, Spec, parse};
use super::vars::Value;
use super::{Class, low};

const ENV: Spec = Spec::new(
    "0C:S:iu:v",
    "block-signal? chdir= debug default-signal? help ignore-environment ignore-signal? list-signal-handling null split-string= unset= version",
)
.in_order();
const TIMEOUT: Spec = Spec::new(
    "k:s:v",
    "foreground help kill-after= preserve-status signal= verbose version",
)
.in_order();
const NICE: Spec = Spec::new("n:#", "adjustment= help version").in_order();
const NOHUP: Spec = Spec::new("", "help version").in_order();
const STDBUF: Spec = Spec::new("e:i:o:", "error= help input= output= version").in_order();
const SETSID: Spec = Spec::new("Vcfhw", "ctty fork help version wait").in_order();
const IONICE: Spec = Spec::new(
    "P:Vc:hn:p:tu:",
    "class= classdata= help ignore pgid= pid= uid= version",
)
.in_order();
const CHRT: Spec = Spec::new(
    "D:P:RT:Vabdefhimoprv",
    "all-tasks batch deadline fifo help idle max other pid reset-on-fork rr sched-deadline= sched-period= sched-runtime= verbose version",
)
.in_order();
const TASKSET: Spec = Spec::new("Vachp", "all-tasks cpu-list help pid version").in_order();
const FLOCK: Spec = Spec::new(
    "E:FVc:hnosuw:x",
    "close command= conflict-exit-code= exclusive help no-fork nonblock shared timeout= unlock verbose version",
)
.in_order();
const TIME: Spec = Spec::new(
    "af:o:pqvV",
    "append format= help output= portability quiet verbose version",
)
.in_order();
const UNBUFFER: Spec = Spec::new("p", "").in_order();
const COMMAND: Spec = Spec::new("pvV", "").in_order();
const EXEC: Spec = Spec::new("a:cl", "").in_order();
const SUDO: Spec = Spec::new(
    "AbBEeHhiKklnPSsVvg:p:r:t:C:D:R:T:U:u:",
    "askpass background bell chdir= chroot= close-from= command-timeout= edit group= help host= list login non-interactive other-user= preserve-env? preserve-groups prompt= remove-timestamp reset-timestamp role= set-home shell stdin type= user= validate version",
)
.in_order();
const DOAS: Spec = Spec::new("a:C:Lnsu:", "").in_order();
const RUNUSER: Spec = Spec::new(
    "c:fg:G:lmpPs:u:w:",
    "command= fast group= help login preserve-environment pty session-command= shell= supp-group= user= version whitelist-environment=",
)
.in_order();
const XARGS: Spec = Spec::new(
    "0E:I:L:P:a:d:e::i::l::n:oprs:tx",
    "arg-file= delimiter= eof? exit help interactive max-args= max-chars= max-lines= max-procs= no-run-if-empty null open-tty process-slot-var= replace? show-limits verbose version",
)
.in_order();

fn refuse(key: &str, p: &Parsed<'_>) -> Unknown {
    let why = p
        .problem
        .as_ref()
        .map(|pr| pr.describe(key))
        .unwrap_or_default();
    Unknown(format!(
        "{why}, so Toolshed cannot tell which command it runs; write the options in full or run the command directly"
    ))
}

impl Walker {
    /// Wrappers; `None` when `key` is not one.
    pub(crate) fn wrapper(&mut self, key: &str, args: &[Word]) -> Result<Option<Class>, Unknown> {
        let spec = match key {
            "env" => return self.env(args).map(Some),
            "xargs" => return self.xargs(args).map(Some),
            "find" => return self.find(args).map(Some),
            "timeout" => TIMEOUT,
            "nice" => NICE,
            "nohup" => NOHUP,
            "stdbuf" => STDBUF,
            "setsid" => SETSID,
            "ionice" => IONICE,
            "chrt" => CHRT,
            "taskset" => TASKSET,
            "flock" => FLOCK,
            "time" => TIME,
            "unbuffer" => UNBUFFER,
            "command" => COMMAND,
            "builtin" => Spec::new("", "").in_order(),
            "exec" => EXEC,
            "sudo" | "sudoedit" => SUDO,
            "doas" => DOAS,
            "runuser" => RUNUSER,
            _ => return Ok(None),
        };
        let p = parse(&spec, args);
        if p.problem.is_some() {
            return Err(refuse(key, &p));
        }
        let mut c = low();
        let mut rest = &args[p.rest..];
        match key {
            "command" if p.has('v', "") || p.has('V', "") => return Ok(Some(low())),
            "exec" if rest.is_empty() => {
                return Err(Unknown(
                    "`exec` without a command rewires the shell's file descriptors; run the command without exec".into(),
                ));
            }
            "ionice" | "chrt" | "taskset"
                if p.has('p', "pid") || p.has('P', "pgid") || p.has('u', "uid") =>
            {
                return Ok(Some(Class::new(
                    Risk::Medium,
                    Reach::OutsideWrites,
                    format!("`{key} -p` changes another process"),
                )));
            }
            "chrt" if p.has('m', "max") => return Ok(Some(low())),
            "timeout" | "chrt" | "taskset" => rest = rest.get(1..).unwrap_or(&[]),
            "flock" => {
                if let Some(cmd) = p.values('c', "command").first() {
                    // `flock FILE -c STRING` runs STRING with sh -c.
                    let mut inner = vec![Word::fixed("sh"), Word::fixed("-c")];
                    inner.push((*cmd).clone());
                    return self.wrapped(&inner).map(|()| Some(low()));
                }
                // `flock FD` locks a descriptor and runs nothing.
                if rest.len() <= 1 {
                    return Ok(Some(low()));
                }
                // `flock FILE -c STRING`: flock looks for -c after the file itself.
                if rest[1].is("-c") || rest[1].is("--command") {
                    let mut inner = vec![Word::fixed("sh"), Word::fixed("-c")];
                    inner.extend(rest.get(2).cloned());
                    return self.wrapped(&inner).map(|()| Some(low()));
                }
                rest = &rest[1..];
            }
            "time" => {
                for f in p.values('o', "output") {
                    self.target(f, TargetKind::Write)?;
                }
            }
            "sudo" | "sudoedit" | "doas" | "runuser" => {
                c = Class::new(
                    Risk::High,
                    Reach::OutsideWrites,
                    format!("`{key}` runs a command with other privileges"),
                );
                if key == "sudoedit" || p.has('e', "edit") {
                    c.raise(
                        Risk::High,
                        Reach::OutsideWrites,
                        "`sudo -e` opens files in an editor as another user",
                    );
                    return Ok(Some(c));
                }
                if p.has('s', "shell") || p.has('i', "login") {
                    if rest.is_empty() {
                        return Ok(Some(c));
                    }
                    // `sudo -s CMD` runs CMD with the shell's -c.
                    let mut inner = vec![Word::fixed("sh"), Word::fixed("-c")];
                    inner.extend(rest.iter().cloned());
                    self.wrapped(&inner)?;
                    return Ok(Some(c));
                }
                if let Some(cmd) = p.values('c', "command").first() {
                    let inner = vec![Word::fixed("sh"), Word::fixed("-c"), (*cmd).clone()];
                    self.wrapped(&inner)?;
                    return Ok(Some(c));
                }
            }
            _ => {}
        }
        if key == "builtin"
            && rest
                .first()
                .is_some_and(|w| w.literal().is_some_and(|n| !is_builtin(n)))
        {
            return Err(Unknown(format!(
                "`builtin {}` names no builtin; call the program directly",
                rest[0].display()
            )));
        }
        self.wrapped(rest)?;
        Ok(Some(c))
    }

    fn env(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let p = parse(&ENV, args);
        if p.problem.is_some() {
            return Err(refuse("env", &p));
        }
        if p.has('S', "split-string") {
            return Ok(Class::new(
                Risk::High,
                Reach::Unknown,
                "`env -S` splits a string into a command, which Toolshed does not read",
            ));
        }
        if p.has('C', "chdir") {
            return Ok(Class::new(
                Risk::High,
                Reach::Unknown,
                "`env -C` runs the command in another directory",
            ));
        }
        for name in p.values('u', "unset") {
            self.set_var("env -u", name, Value::Plain, false)?;
        }
        let mut i = p.rest;
        while i < args.len() {
            let w = &args[i];
            let (name, value) = match (w.literal(), w.prefix.split_once('=')) {
                (Some(t), _) => match t.split_once('=') {
                    Some((n, v)) => (n.to_string(), Value::of(&Word::fixed(v))),
                    None => break,
                },
                (None, Some((n, _))) => (n.to_string(), Value::Outside),
                (None, None) if w.may_be_flag => {
                    return Ok(Class::new(
                        Risk::High,
                        Reach::Unknown,
                        format!(
                            "`{}` is computed at run time and could be an assignment or an option of env",
                            w.raw
                        ),
                    ));
                }
                (None, None) => break,
            };
            if name.is_empty() || name.contains('/') {
                break;
            }
            self.assignment(&name, value, true)?;
            i += 1;
        }
        self.wrapped(&args[i..])?;
        Ok(low())
    }

    fn xargs(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let p = parse(&XARGS, args);
        if p.problem.is_some() {
            return Err(refuse("xargs", &p));
        }
        let mut replace: Option<String> = None;
        for o in &p.opts {
            if o.is('I', "") {
                replace = o.value.as_ref().map(|v| v.display().to_string());
            } else if o.is('i', "replace") {
                replace = Some(
                    o.value
                        .as_ref()
                        .map_or("{}".to_string(), |v| v.display().to_string()),
                );
            }
        }
        for name in p.values('\0', "process-slot-var") {
            self.set_var("xargs --process-slot-var", name, Value::Plain, true)?;
        }
        let mut inner: Vec<Word> = args[p.rest..].to_vec();
        if inner.is_empty() {
            inner.push(Word::fixed("echo"));
        }
        // The arguments xargs appends come from standard input: they can be anything,
        // including options, and the replace string can stand anywhere, the program included.
        for w in inner.iter_mut() {
            if let Some(r) = &replace
                && (w.display().contains(r.as_str()) || w.raw.contains(r.as_str()))
            {
                *w = Word::dynamic(&w.raw, true);
            }
        }
        if replace.is_none() {
            inner.push(Word::dynamic("<input>", true));
        }
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
                    Reach::Unknown,
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
                    c.raise(
                        Risk::High,
                        Reach::Destructive,
                        "`find -delete` deletes every file it matches",
                    );
                    i += 1;
                }
                "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                    match args.get(i + 1) {
                        Some(f) => self.target(f, TargetKind::Write)?,
                        None => return Err(Unknown(format!("`find {t}` has no file name"))),
                    }
                    c.raise(
                        Risk::Medium,
                        Reach::Contained,
                        format!("`find {t}` writes a file"),
                    );
                    i += if t == "-fprintf" { 3 } else { 2 };
                }
                _ => i += 1,
            }
        }
        Ok(c)
    }
}

fn is_builtin(name: &str) -> bool {
    matches!(
        name,
        ":" | "."
            | "["
            | "alias"
            | "bg"
            | "bind"
            | "break"
            | "builtin"
            | "caller"
            | "cd"
            | "command"
            | "compgen"
            | "complete"
            | "compopt"
            | "continue"
            | "declare"
            | "dirs"
            | "disown"
            | "echo"
            | "enable"
            | "eval"
            | "exec"
            | "exit"
            | "export"
            | "false"
            | "fc"
            | "fg"
            | "getopts"
            | "hash"
            | "help"
            | "history"
            | "jobs"
            | "kill"
            | "let"
            | "local"
            | "logout"
            | "mapfile"
            | "popd"
            | "printf"
            | "pushd"
            | "pwd"
            | "read"
            | "readarray"
            | "readonly"
            | "return"
            | "set"
            | "shift"
            | "shopt"
            | "source"
            | "suspend"
            | "test"
            | "times"
            | "trap"
            | "true"
            | "type"
            | "typeset"
            | "ulimit"
            | "umask"
            | "unalias"
            | "unset"
            | "wait"
    )
}
