//! The walk over brush-parser's syntax tree.

use brush_parser::ast;
use tool_core::Risk;

use super::programs::{Class, Value};
use super::words::{Effects, Word, heredoc_substitutions, parse_word};
use super::{Analysis, Command, Reach, Target, TargetKind, Unknown};

/// How deep substitutions may nest before the command is refused.
const MAX_DEPTH: usize = 16;

/// Analyses a command line as `bash -c` will run it.
pub fn analyze(command: &str) -> Result<Analysis, Unknown> {
    super::nesting::check(command)?;
    deep_stack(|| {
        let mut w = Walker::new();
        w.script(command)?;
        w.finish()
    })
}

/// The stack the parse and the walk run on: they recurse once per level of nesting, and
/// [`super::nesting`]'s bound is a count that a here-document can fool, so the stack is large
/// enough for the deepest command the size limit lets through (16 KiB of `{ `, in a debug
/// build). It is reserved, not used: pages are only touched as deep as the command goes.
const ANALYSIS_STACK: usize = 512 << 20;

/// Runs `f` on a thread with [`ANALYSIS_STACK`] of stack; where no such thread can be made
/// (strict overcommit, a small `ulimit -v`), on the caller's, which [`super::nesting`]'s bound
/// keeps safe for all but commands built to fool it.
pub(crate) fn deep_stack<T: Send>(
    f: impl FnOnce() -> Result<T, Unknown> + Send,
) -> Result<T, Unknown> {
    let f = std::sync::Mutex::new(Some(f));
    let take = || f.lock().ok().and_then(|mut g| g.take());
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("shell-analysis".into())
            .stack_size(ANALYSIS_STACK)
            .spawn_scoped(s, || take().map(|f| f()));
        match spawned {
            Ok(handle) => handle
                .join()
                .map_err(|_| Unknown("its analysis failed; split it into simpler commands".into()))?
                .unwrap_or_else(|| Err(Unknown("its analysis did not run; try again".into()))),
            Err(_) => match take() {
                Some(f) => f(),
                None => Err(Unknown("its analysis did not run; try again".into())),
            },
        }
    })
}

/// A command that runs code from its input or its arguments, so that code fetched from the
/// network and fed to it can be told apart.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CodeRunner {
    pub(crate) index: usize,
    pub(crate) stdin: bool,
    pub(crate) args: bool,
}

/// Variables bash itself gives the integer attribute (or evaluates as arithmetic when they are
/// assigned).
const SPECIAL_INTEGERS: &[&str] = &[
    "RANDOM",
    "SRANDOM",
    "HISTCMD",
    "OPTIND",
    "SECONDS",
    "LINENO",
    "BASH_XTRACEFD",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "BASHPID",
    "BASH_SUBSHELL",
    "HISTSIZE",
    "HISTFILESIZE",
    "TMOUT",
    "OPTERR",
    "COLUMNS",
    "LINES",
];

/// Whether `c` makes a symbolic link: `ln -s` / `--symbolic` (any cluster or prefix), `cp -s` /
/// `--symbolic-link`.
fn makes_symlink(c: &Command) -> bool {
    let name = c.program.rsplit('/').next().unwrap_or(&c.program);
    let (short, long): (char, &str) = match name {
        "ln" | "gln" => ('s', "--symbolic"),
        "cp" | "gcp" => ('s', "--symbolic-link"),
        _ => return false,
    };
    c.args.iter().take_while(|a| a.as_str() != "--").any(|a| {
        if let Some(l) = a.strip_prefix("--") {
            l.len() >= 2 && long[2..].starts_with(l)
        } else {
            a.starts_with('-') && a[1..].contains(short)
        }
    })
}

/// Variables bash itself keeps as numbers, which a command line may read in arithmetic without
/// setting them (`(( EUID == 0 ))`).
const BASH_OWN_INTEGERS: &[&str] = &[
    "RANDOM",
    "SRANDOM",
    "SECONDS",
    "EPOCHSECONDS",
    "LINENO",
    "HISTCMD",
    "OPTIND",
    "OPTERR",
    "BASHPID",
    "BASH_SUBSHELL",
    "UID",
    "EUID",
    "PPID",
    "SHLVL",
];

/// Variables bash sets from what commands saw, and `@` for the positional parameters.
const BASH_SET: &[&str] = &[
    "_",
    "@",
    "BASH_REMATCH",
    "BASH_ARGV",
    "BASH_ARGC",
    "BASH_ARGV0",
    "BASH_COMMAND",
    "BASH_SOURCE",
    "BASH_LINENO",
    "BASH_EXECUTION_STRING",
    "FUNCNAME",
    "PIPESTATUS",
    "COPROC",
    "REPLY",
    "MAPFILE",
    "OPTARG",
    "PWD",
    "OLDPWD",
    "DIRSTACK",
    "COMP_WORDS",
    "COMP_LINE",
    "READLINE_LINE",
];

pub(crate) struct Walker {
    pub(crate) options: brush_parser::ParserOptions,
    pub(crate) commands: Vec<Command>,
    targets: Vec<Target>,
    /// The directories the shell may be in (relative to where it started); `None` when unknown.
    pub(crate) cwd: Option<Vec<String>>,
    depth: usize,
    /// Every variable assignment, in order, with where its value came from.
    pub(crate) vars: Vec<(String, Value)>,
    /// Variables declared as integers (`declare -i`): bash evaluates what is assigned to them.
    pub(crate) integers: Vec<String>,
    /// Variables whose values bash evaluates as arithmetic, with where.
    pub(crate) arith_reads: Vec<(String, String)>,
    /// Namerefs (`declare -n r=x`) and the variable each stands for, and variables assigned
    /// another variable's name (`y=x`), which arithmetic follows the same way.
    pub(crate) namerefs: Vec<(String, String)>,
    pub(crate) runners: Vec<CodeRunner>,
}

impl Walker {
    pub(crate) fn new() -> Walker {
        Walker {
            options: brush_parser::ParserOptions {
                // `bash -c`: bash's grammar (`[[ ]]`, `(( ))`, `<(…)`, arrays, coprocesses), with
                // extglob off as in a non-interactive bash.
                enable_extended_globbing: false,
                posix_mode: false,
                sh_mode: false,
                ..Default::default()
            },
            commands: Vec::new(),
            targets: Vec::new(),
            cwd: Some(vec![String::new()]),
            depth: 0,
            vars: Vec::new(),
            integers: Vec::new(),
            arith_reads: Vec::new(),
            namerefs: Vec::new(),
            runners: Vec::new(),
        }
    }

    /// Notes that `name` was assigned `text`: when that names variables (`y=x`, `y='x[1] + z'`),
    /// arithmetic reading `name` evaluates them too (found in round 11:
    /// `x='a[$(cmd)]'; y=x; (( y ))` ran cmd).
    pub(crate) fn note_reference(&mut self, name: &str, text: &str) {
        // Every name the text would read as arithmetic (`y='x + 1'` reads x).
        for target in super::arith::scan(text).reads {
            if self.namerefs.len() < 4096
                && !self.namerefs.iter().any(|(r, g)| r == name && *g == target)
            {
                self.namerefs.push((name.to_string(), target));
            }
        }
    }

    /// The worst source of any value assigned to `name` (`Plain` when the command line never
    /// sets it).
    fn value(&self, name: &str) -> Value {
        let assigned = self
            .vars
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .max()
            .unwrap_or(Value::Plain);
        // Variables bash sets itself from what commands saw (`_`, the last argument;
        // `BASH_REMATCH`; the positional parameters, read as `@`) hold text from elsewhere
        // (found in round 10: `: 'a[$(cmd)]'; (( _ ))` ran cmd).
        if BASH_SET.contains(&name) {
            assigned.max(Value::Outside)
        } else {
            assigned
        }
    }

    pub(crate) fn finish(mut self) -> Result<Analysis, Unknown> {
        // Values bash evaluates as arithmetic: integer variables and variables read by
        // arithmetic. Checked once the whole script is known, since loops run their bodies again
        // after later assignments.
        // bash's own integer variables evaluate what is assigned to them too (found in round 9:
        // `RANDOM='a[$(cmd)]'` runs cmd).
        let mut integers = self.integers.clone();
        for (n, _) in &self.vars {
            if SPECIAL_INTEGERS.contains(&n.as_str()) && !integers.contains(n) {
                integers.push(n.clone());
            }
        }
        let mut evaluated: Vec<(String, String)> = integers
            .iter()
            .map(|n| (n.clone(), format!("`{n}` is an integer variable")))
            .collect();
        evaluated.extend(self.arith_reads.iter().cloned());
        // What is assigned to an integer variable is itself arithmetic, which may name any other
        // variable (`declare -i y=x` evaluates x's value): with integers in the line, every
        // variable with a value from elsewhere counts (found in round 8).
        if let Some(first) = integers.first() {
            for (n, v) in &self.vars {
                if *v != Value::Plain && !evaluated.iter().any(|(e, _)| e == n) {
                    evaluated.push((
                        n.clone(),
                        format!("`{first}` is an integer variable, whose assignments are arithmetic that may name `{n}`"),
                    ));
                }
            }
        }
        // A nameref read as arithmetic reads the variable it stands for (`declare -n r=x;
        // $((r))` evaluates x's value), through any chain of them.
        let mut i = 0;
        while i < evaluated.len() && evaluated.len() < 4096 {
            let (name, context) = evaluated[i].clone();
            for (r, target) in &self.namerefs {
                if *r == name && !evaluated.iter().any(|(e, _)| e == target) {
                    evaluated.push((
                        target.clone(),
                        format!("{context}, and `{name}` stands for `{target}`"),
                    ));
                }
            }
            i += 1;
        }
        for (name, context) in evaluated {
            // A variable the line never sets holds what the environment gave it, and the
            // environment is Toolshed's own; but a variable set in a way Toolshed does not see
            // would look the same, so arithmetic over it fails closed, except bash's own
            // integers.
            let unset = !self.vars.iter().any(|(n, _)| *n == name)
                && !BASH_OWN_INTEGERS.contains(&name.as_str());
            let value = if unset {
                Value::Outside
            } else {
                self.value(&name)
            };
            match value {
                Value::Plain => {}
                Value::Code => {
                    return Err(Unknown(format!(
                        "{context}, so bash evaluates the value of `{name}` as arithmetic, and that value holds a command substitution in an array subscript, which runs; compute the value in separate steps"
                    )));
                }
                Value::Text | Value::Outside => {
                    let reason = if unset {
                        format!(
                            "{context}: bash evaluates the value of `{name}` as arithmetic, and the command line does not set `{name}`, so its value is not known; set it to a number first"
                        )
                    } else if value == Value::Text {
                        format!(
                            "{context}: bash evaluates the value of `{name}` as arithmetic, and that value names other variables, which bash evaluates in turn (where an array subscript would run commands); assign numbers, or compute the value in separate steps"
                        )
                    } else {
                        format!(
                            "{context}: bash evaluates the value of `{name}` as arithmetic, and it comes from outside the command line (read, a loop over files, a substitution), where an array subscript would run commands"
                        )
                    };
                    self.push_command(
                        &format!("(({name}))"),
                        &[],
                        Class::new(Risk::Medium, Reach::Unknown, reason),
                    );
                }
            }
        }
        // A symbolic link made in the line leads a later path of the line somewhere its name
        // does not say (round 13: `ln -s config c && echo x > c/new.yaml` wrote what
        // `write(config/*.yaml)` refuses; `ln -s /root h && cp … h/.cargo/bin/ls`). The paths
        // are judged by name before anything runs, so a line that makes one and writes
        // anything else asks.
        let links = self.commands.iter().filter(|c| makes_symlink(c)).count();
        if links > 0 && self.targets.len() > links {
            self.push_command(
                "ln -s",
                &[],
                Class::new(
                    Risk::Medium,
                    Reach::Unknown,
                    "the line makes a symbolic link and writes other paths, which the link may lead elsewhere; make the link in a call of its own",
                ),
            );
        }
        let risk = self
            .commands
            .iter()
            .map(|c| c.risk)
            .max()
            .unwrap_or(Risk::Low);
        let sandboxed_risk = self
            .commands
            .iter()
            .map(|c| c.reach.sandboxed_risk())
            .max()
            .unwrap_or(Risk::Low);
        let network = self.commands.iter().any(|c| c.network);
        Ok(Analysis {
            commands: self.commands,
            targets: self.targets,
            risk,
            sandboxed_risk,
            network,
        })
    }

    /// Parses and walks a script (the command line, or the text of a substitution).
    pub(crate) fn script(&mut self, text: &str) -> Result<(), Unknown> {
        if self.depth >= MAX_DEPTH {
            return Err(Unknown(format!(
                "substitutions nest more than {MAX_DEPTH} levels deep; split the command"
            )));
        }
        let mut parser =
            brush_parser::Parser::new(std::io::Cursor::new(text.as_bytes()), &self.options);
        let program = parser.parse_program().map_err(|e| {
            Unknown(format!(
                "the command could not be parsed as bash ({e}); fix the syntax, or put a long script in a file and run it"
            ))
        })?;
        self.depth += 1;
        let result = program
            .complete_commands
            .iter()
            .try_for_each(|list| self.compound_list(list));
        self.depth -= 1;
        result
    }

    fn compound_list(&mut self, list: &ast::CompoundList) -> Result<(), Unknown> {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first)?;
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p)?,
                }
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, p: &ast::Pipeline) -> Result<(), Unknown> {
        let start = self.commands.len();
        for c in &p.seq {
            let stage = self.commands.len();
            self.command(c)?;
            // `curl … | sh`: code from the network, run by a later stage.
            self.fetched_code(start, stage, stage, true);
        }
        Ok(())
    }

    fn command(&mut self, c: &ast::Command) -> Result<(), Unknown> {
        match c {
            ast::Command::Simple(s) => self.simple(s),
            ast::Command::Compound(cc, redirects) => {
                self.compound(cc)?;
                if let Some(ast::RedirectList(list)) = redirects {
                    for r in list {
                        self.redirect(r)?;
                    }
                }
                Ok(())
            }
            ast::Command::Function(f) => Err(Unknown(format!(
                "the command defines a shell function (`{}`), whose later calls Toolshed cannot check; write the commands out instead",
                f.fname.value
            ))),
            ast::Command::ExtendedTest(t, redirects) => {
                self.extended_test(&t.expr)?;
                if let Some(ast::RedirectList(list)) = redirects {
                    for r in list {
                        self.redirect(r)?;
                    }
                }
                Ok(())
            }
        }
    }

    fn compound(&mut self, cc: &ast::CompoundCommand) -> Result<(), Unknown> {
        match cc {
            ast::CompoundCommand::BraceGroup(g) => self.compound_list(&g.list),
            ast::CompoundCommand::Subshell(s) => self.compound_list(&s.list),
            ast::CompoundCommand::ForClause(f) => {
                let mut value = Value::Plain;
                match &f.values {
                    Some(values) => {
                        for w in values {
                            let word = self.word(&w.value)?;
                            value = value.max(if word.glob {
                                Value::Outside
                            } else {
                                Value::of(&word)
                            });
                            if let Some(t) = word.literal() {
                                let t = t.to_string();
                                self.note_reference(&f.variable_name, &t);
                            }
                        }
                    }
                    // `for x; do`: the positional parameters.
                    None => value = Value::Outside,
                }
                self.set_var("for", &Word::fixed(&f.variable_name), value, false)?;
                self.compound_list(&f.body.list)
            }
            ast::CompoundCommand::CaseClause(c) => {
                self.word(&c.value.value)?;
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(&p.value)?;
                    }
                    if let Some(list) = &item.cmd {
                        self.compound_list(list)?;
                    }
                }
                Ok(())
            }
            ast::CompoundCommand::IfClause(i) => {
                self.compound_list(&i.condition)?;
                self.compound_list(&i.then)?;
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.compound_list(c)?;
                    }
                    self.compound_list(&e.body)?;
                }
                Ok(())
            }
            ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
                self.compound_list(&w.0)?;
                self.compound_list(&w.1.list)
            }
            ast::CompoundCommand::Arithmetic(a) => self.arith(&a.expr.value, "`(( … ))`"),
            ast::CompoundCommand::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arith(&e.value, "`for (( … ))`")?;
                }
                self.compound_list(&f.body.list)
            }
            ast::CompoundCommand::Coprocess(c) => {
                let name = c.name.as_ref().map_or("COPROC", |n| n.value.as_str());
                self.set_var("coproc", &Word::fixed(name), Value::Plain, false)?;
                self.command(&c.body)
            }
        }
    }

    /// Parses a word, analyses its substitutions, and returns it.
    pub(crate) fn word(&mut self, raw: &str) -> Result<Word, Unknown> {
        let (word, effects) = parse_word(raw, &self.options)?;
        self.effects(effects)?;
        Ok(word)
    }

    fn effects(&mut self, effects: Effects) -> Result<(), Unknown> {
        for s in effects.subs {
            self.script(&s)?;
        }
        for n in effects.assigns {
            self.assignment(&n, Value::Outside, false)?;
        }
        for a in effects.arith {
            self.arith(&a, "an arithmetic expansion")?;
        }
        Ok(())
    }

    fn simple(&mut self, s: &ast::SimpleCommand) -> Result<(), Unknown> {
        let start = self.commands.len();
        let mut assignments: Vec<(String, Value)> = Vec::new();
        let mut words: Vec<Word> = Vec::new();
        for item in s.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, true, &mut assignments, &mut words)?;
        }
        if let Some(name) = &s.word_or_name {
            words.push(self.word(&name.value)?);
        }
        for item in s.suffix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, false, &mut assignments, &mut words)?;
        }
        let exported = !words.is_empty();
        for (name, value) in &assignments {
            self.assignment(name, *value, exported)?;
        }
        if words.is_empty() {
            return Ok(());
        }
        let program = words.remove(0);
        let inputs = self.commands.len();
        self.classify(&program, &words)?;
        // `sh -c "$(curl …)"`, `bash <(curl …)`, `sh <<< "$(curl …)"`: code from the network
        // in the command's own words or redirections.
        self.fetched_code(start, inputs, inputs, false);
        Ok(())
    }

    fn item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        in_prefix: bool,
        assignments: &mut Vec<(String, Value)>,
        words: &mut Vec<Word>,
    ) -> Result<(), Unknown> {
        match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r),
            ast::CommandPrefixOrSuffixItem::Word(w) => {
                words.push(self.word(&w.value)?);
                Ok(())
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                let (name, subscript) = match &a.name {
                    ast::AssignmentName::VariableName(n) => (n.clone(), None),
                    ast::AssignmentName::ArrayElementName(n, i) => (n.clone(), Some(i.clone())),
                };
                if let Some(i) = &subscript {
                    self.arith(i, &format!("the subscript of `{name}[{i}]`"))?;
                }
                let mut static_value: Option<String> = None;
                let value = match &a.value {
                    ast::AssignmentValue::Scalar(v) => {
                        let v = self.word(&v.value)?;
                        static_value = v.text.clone();
                        Value::of(&v)
                    }
                    ast::AssignmentValue::Array(items) => {
                        let mut value = Value::Plain;
                        for (key, v) in items {
                            if let Some(k) = key {
                                let k = self.word(&k.value)?;
                                let text = k.literal().unwrap_or(&k.raw).to_string();
                                self.arith(&text, &format!("the key `{text}` of `{name}=(…)`"))?;
                            }
                            let v = self.word(&v.value)?;
                            value = value.max(if v.glob {
                                Value::Outside
                            } else {
                                Value::of(&v)
                            });
                        }
                        value
                    }
                };
                if !in_prefix || !words.is_empty() {
                    // `export A=b`, `local x=1`: an argument of the builtin, as `NAME=value`
                    // when the value is static.
                    let full = match &subscript {
                        Some(i) => format!("{name}[{i}]"),
                        None => name.clone(),
                    };
                    let word = match (&static_value, value) {
                        (Some(t), _) => Word::fixed(&format!("{full}={t}")),
                        (None, Value::Plain) => Word::fixed(&format!("{full}=")),
                        _ => {
                            let mut word = Word::dynamic(&w.value, false);
                            word.prefix = format!("{full}=");
                            word
                        }
                    };
                    words.push(word);
                    return Ok(());
                }
                if let Some(t) = &static_value {
                    self.note_reference(&name, t);
                }
                assignments.push((name, value));
                Ok(())
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                if words.is_empty() {
                    return Err(Unknown(
                        "a process substitution <(…) stands where the program name goes, so bash would run the pipe itself; name the program literally".into(),
                    ));
                }
                self.compound_list(&sub.list)?;
                words.push(Word::dynamic("<(…)", false));
                Ok(())
            }
        }
    }

    fn redirect(&mut self, r: &ast::IoRedirect) -> Result<(), Unknown> {
        match r {
            ast::IoRedirect::File(_, kind, target) => match target {
                ast::IoFileRedirectTarget::Filename(w) => {
                    let word = self.word(&w.value)?;
                    match kind {
                        ast::IoFileRedirectKind::Read => {
                            if word.display().starts_with("/dev/tcp/")
                                || word.display().starts_with("/dev/udp/")
                            {
                                self.push_command(
                                    "<",
                                    &[word],
                                    Class::new(
                                        Risk::High,
                                        Reach::Network,
                                        "reads from a network socket (/dev/tcp)",
                                    )
                                    .net(),
                                );
                            }
                            Ok(())
                        }
                        ast::IoFileRedirectKind::DuplicateInput => Ok(()),
                        _ => self.redirect_target(&word),
                    }
                }
                ast::IoFileRedirectTarget::Fd(_) => Ok(()),
                ast::IoFileRedirectTarget::Duplicate(w) => {
                    let word = self.word(&w.value)?;
                    match word.literal() {
                        Some(t) if t == "-" || t.chars().all(|c| c.is_ascii_digit()) => Ok(()),
                        _ if matches!(kind, ast::IoFileRedirectKind::DuplicateInput) => Ok(()),
                        // `>&file` is bash for "stdout and stderr to file".
                        _ => self.redirect_target(&word),
                    }
                }
                ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                    self.compound_list(&sub.list)
                }
            },
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let effects = heredoc_substitutions(&doc.doc.value, &self.options)?;
                    self.effects(effects)?;
                }
                Ok(())
            }
            ast::IoRedirect::HereString(_, w) => {
                self.word(&w.value)?;
                Ok(())
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let word = self.word(&w.value)?;
                self.redirect_target(&word)
            }
        }
    }

    fn redirect_target(&mut self, word: &Word) -> Result<(), Unknown> {
        match word.literal() {
            Some(
                "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/fd/1" | "/dev/fd/2"
                | "/dev/tty",
            ) => Ok(()),
            Some(_) => self.target(word, TargetKind::Write),
            None => Err(Unknown(format!(
                "the redirection target `{}` is computed at run time (or is a pattern), so Toolshed cannot check where it writes; write the file name literally",
                word.raw
            ))),
        }
    }

    /// Records a file the command writes or deletes. Globs are allowed in the last components
    /// unless they could match a hidden name such as `.git`.
    pub(crate) fn target(&mut self, word: &Word, kind: TargetKind) -> Result<(), Unknown> {
        let path = match (&word.text, &word.pattern) {
            (Some(t), _) => t.clone(),
            (None, Some(p)) if word.glob => {
                if p.split('/')
                    .any(|c| c.starts_with('.') && c.contains(['*', '?', '[']))
                {
                    return Err(Unknown(format!(
                        "the pattern `{p}` could match hidden files such as .git; name the files literally"
                    )));
                }
                p.clone()
            }
            _ => {
                return Err(Unknown(format!(
                    "`{}` is computed at run time, so Toolshed cannot check what it writes or deletes; write the path literally",
                    word.raw
                )));
            }
        };
        if path.is_empty() {
            return Err(Unknown(
                "a command writes to an empty file name; give a real path".into(),
            ));
        }
        self.targets.push(Target {
            path,
            bases: self.cwd.clone(),
            kind,
        });
        Ok(())
    }

    /// Records a construct that is not a program but has a risk (an assignment, a socket read).
    pub(crate) fn push_command(&mut self, what: &str, args: &[Word], class: Class) {
        let opaque = class.is_opaque();
        self.commands.push(Command {
            program: what.to_string(),
            args: args.iter().map(|a| a.display().to_string()).collect(),
            risk: class.risk,
            reason: class.reason,
            reach: class.reach,
            reach_reason: class.reach_reason,
            network: class.network,
            synthetic: true,
            opaque,
        });
    }

    /// Records a program in order of appearance; its class is filled in by [`Walker::set_class`]
    /// once the programs it runs in turn have been recorded after it.
    pub(crate) fn push_program(&mut self, program: &str, args: &[Word]) -> usize {
        self.commands.push(Command {
            program: program.to_string(),
            args: args.iter().map(|a| a.display().to_string()).collect(),
            risk: Risk::Low,
            reason: String::new(),
            reach: Reach::Contained,
            reach_reason: String::new(),
            network: false,
            synthetic: false,
            opaque: false,
        });
        self.commands.len() - 1
    }

    pub(crate) fn set_class(&mut self, index: usize, class: Class) {
        if class.stdin_code || class.arg_code {
            self.runners.push(CodeRunner {
                index,
                stdin: class.stdin_code,
                args: class.arg_code,
            });
        }
        if let Some(c) = self.commands.get_mut(index) {
            c.opaque = class.is_opaque();
            c.risk = class.risk;
            c.reason = class.reason;
            c.reach = class.reach;
            c.reach_reason = class.reach_reason;
            c.network = class.network;
        }
    }
}
