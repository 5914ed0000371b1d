//! The walk over brush-parser's syntax tree.

use brush_parser::ast;
use tool_core::Risk;

use super::words::{Word, heredoc_substitutions, parse_word};
use super::{Analysis, Command, Target, TargetKind, Unknown};

/// How deep substitutions may nest before the command is refused.
const MAX_DEPTH: usize = 16;

/// Analyses a command line as `/bin/sh -c` will run it.
pub fn analyze(command: &str) -> Result<Analysis, Unknown> {
    let mut w = Walker::new();
    w.script(command)?;
    Ok(w.finish())
}

pub(crate) struct Walker {
    pub(crate) options: brush_parser::ParserOptions,
    commands: Vec<Command>,
    targets: Vec<Target>,
    /// The directories the shell may be in (relative to where it started); `None` when unknown.
    pub(crate) cwd: Option<Vec<String>>,
    depth: usize,
}

impl Walker {
    pub(crate) fn new() -> Walker {
        Walker {
            options: brush_parser::ParserOptions {
                // `/bin/sh`: POSIX grammar, no extglob, no bash-only syntax (`[[`, `((`, `<(…)`
                // and `&>` mean what dash makes of them, or fail to parse and are refused).
                enable_extended_globbing: false,
                posix_mode: true,
                sh_mode: true,
                ..Default::default()
            },
            commands: Vec::new(),
            targets: Vec::new(),
            cwd: Some(vec![String::new()]),
            depth: 0,
        }
    }

    fn finish(self) -> Analysis {
        let risk = self
            .commands
            .iter()
            .map(|c| c.risk)
            .max()
            .unwrap_or(Risk::Low);
        let network = self.commands.iter().any(|c| c.network);
        Analysis {
            commands: self.commands,
            targets: self.targets,
            risk,
            network,
        }
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
                "the command could not be parsed as POSIX sh ({e}); bash-only syntax such as <(…), [[ ]] or (( )) is not supported, so rewrite it for sh"
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
        for c in &p.seq {
            self.command(c)?;
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
            ast::Command::ExtendedTest(..) => Err(Unknown(
                "`[[ … ]]` is bash syntax; use `[ … ]` (test) with /bin/sh".into(),
            )),
        }
    }

    fn compound(&mut self, cc: &ast::CompoundCommand) -> Result<(), Unknown> {
        match cc {
            ast::CompoundCommand::BraceGroup(g) => self.compound_list(&g.list),
            ast::CompoundCommand::Subshell(s) => self.compound_list(&s.list),
            ast::CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value)?;
                }
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
            ast::CompoundCommand::Arithmetic(_) | ast::CompoundCommand::ArithmeticForClause(_) => {
                Err(Unknown(
                    "`(( … ))` is bash syntax; use $(( … )) inside a POSIX command".into(),
                ))
            }
            ast::CompoundCommand::Coprocess(_) => Err(Unknown(
                "coprocesses are not supported; run the command in the background instead".into(),
            )),
        }
    }

    /// Parses a word, analyses its substitutions, and returns it.
    pub(crate) fn word(&mut self, raw: &str) -> Result<Word, Unknown> {
        let (word, subs) = parse_word(raw, &self.options)?;
        for s in subs {
            self.script(&s)?;
        }
        Ok(word)
    }

    fn simple(&mut self, s: &ast::SimpleCommand) -> Result<(), Unknown> {
        let mut assignments: Vec<(String, Word)> = Vec::new();
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
            self.assignment(name, Some(value), exported)?;
        }
        if words.is_empty() {
            return Ok(());
        }
        let program = words.remove(0);
        self.classify(&program, &words)
    }

    fn item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        in_prefix: bool,
        assignments: &mut Vec<(String, Word)>,
        words: &mut Vec<Word>,
    ) -> Result<(), Unknown> {
        match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r),
            ast::CommandPrefixOrSuffixItem::Word(w) => {
                words.push(self.word(&w.value)?);
                Ok(())
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                if !in_prefix {
                    // `export A=b`, `local x=1`: an argument of the builtin.
                    words.push(self.word(&w.value)?);
                    return Ok(());
                }
                let value = match &a.value {
                    ast::AssignmentValue::Scalar(v) => self.word(&v.value)?,
                    ast::AssignmentValue::Array(_) => {
                        return Err(Unknown(
                            "array assignments are bash syntax; use plain variables".into(),
                        ));
                    }
                };
                let name = match &a.name {
                    ast::AssignmentName::VariableName(n) => n.clone(),
                    ast::AssignmentName::ArrayElementName(n, _) => {
                        return Err(Unknown(format!(
                            "`{n}[…]=` is bash array syntax; use plain variables"
                        )));
                    }
                };
                assignments.push((name, value));
                Ok(())
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(..) => Err(Unknown(
                "process substitution <(…) is bash syntax, not sh; write to a temporary file instead".into(),
            )),
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
                                    Risk::High,
                                    "reads from a network socket (/dev/tcp)",
                                    true,
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
                ast::IoFileRedirectTarget::ProcessSubstitution(..) => Err(Unknown(
                    "process substitution >(…) is bash syntax, not sh; write to a temporary file instead".into(),
                )),
            },
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    for s in heredoc_substitutions(&doc.doc.value, &self.options)? {
                        self.script(&s)?;
                    }
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
    pub(crate) fn push_command(
        &mut self,
        what: &str,
        args: &[Word],
        risk: Risk,
        reason: &str,
        network: bool,
    ) {
        self.commands.push(Command {
            program: what.to_string(),
            args: args.iter().map(|a| a.display().to_string()).collect(),
            risk,
            reason: reason.to_string(),
            network,
            synthetic: true,
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
            network: false,
            synthetic: false,
        });
        self.commands.len() - 1
    }

    pub(crate) fn set_class(&mut self, index: usize, risk: Risk, reason: String, network: bool) {
        if let Some(c) = self.commands.get_mut(index) {
            c.risk = risk;
            c.reason = reason;
            c.network = network;
        }
    }
}
