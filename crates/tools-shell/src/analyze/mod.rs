//! What a shell command will do, from a real parse of it.
//!
//! The command is parsed with brush-parser in bash mode (the shell runs it with `bash -c`) into
//! pipelines, lists, subshells, groups, loops, `[[ ]]`, `(( ))`, coprocesses and simple
//! commands. Every word is parsed again for substitutions (`$(…)`, backticks, `<(…)`,
//! here-documents), which are analysed as commands of their own, and for the places bash
//! evaluates further (array subscripts and arithmetic, which run the command substitutions in
//! them; `${!name}`; `${x@P}`). Each simple command is classified by its program and its
//! options, read with per-program tables the way the program reads them (module `programs`);
//! every builtin that sets a variable is checked like `NAME=value`; every file a command writes
//! (redirections, `tee`, `cp`, `sed -i` …) is collected so that the policy's write rules apply.
//!
//! Each command gets two judgements: its [`Risk`] when nothing but this analysis confines it,
//! and its [`Reach`] (what it can touch beyond the workspace), from which
//! [`Analysis::sandboxed_risk`] is the level when the kernel sandbox holds.
//!
//! Whatever cannot be fully understood — a program name computed at run time, `eval`, `source`,
//! function definitions, `trap`, aliases, substitutions inside `${…}` — makes the analysis fail
//! with [`Unknown`], and the command is refused rather than guessed; an option or variable that
//! is not fully known makes the command at least medium risk.

mod arith;
mod bash;
mod nesting;
mod programs;
mod scripts;
mod spellings;
mod walk;
mod words;

pub use walk::analyze;
pub use words::Word;

use tool_core::Risk;

/// At most this many spellings of a line's simple commands are given to the policy's rules
/// ([`Analysis::simple_commands`]); a line that would need more asks wherever a rule on
/// commands restricts.
pub const MAX_SPELLINGS: usize = 20_000;

/// Why a command could not be analysed, as a sentence for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown(pub String);

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One simple command the shell will run (nested ones — in substitutions, behind `env`,
/// `xargs`, `find -exec` — included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The program as written (`git`, `/bin/rm`, `./build.sh`).
    pub program: String,
    /// Its arguments: values when static, else as written.
    pub args: Vec<String>,
    /// How dangerous it is when nothing but this analysis confines it.
    pub risk: Risk,
    /// Why it has that risk (empty for plain reads).
    pub reason: String,
    /// What it can reach beyond the workspace (or destroy in it), for judging it when the kernel
    /// sandbox holds.
    pub reach: Reach,
    /// Why it has that reach (empty when [`Reach::Contained`]).
    pub reach_reason: String,
    /// Whether it talks to the network.
    pub network: bool,
    /// Whether this is not a program but another construct with a risk of its own (a variable
    /// assignment, a read from /dev/tcp).
    pub synthetic: bool,
    /// Whether it runs code this analysis cannot see into (a script, `python3 -c`, `make`, a
    /// `git` alias, a program or option Toolshed does not know): a rule on commands cannot be
    /// checked inside it.
    pub opaque: bool,
}

/// What a command can reach beyond the workspace (or destroy in it), for judging it when the
/// kernel sandbox holds. Ordered from the most confined to the least; every kind but
/// [`Reach::Contained`] asks in supervised mode, and [`Reach::FetchedCode`] is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Reach {
    /// Stays in the workspace and changes it recoverably: what the sandbox confines anyway
    /// (`mkdir -p build`, `rm out.txt`, `cargo build`, `python3 -c …`, whose code is opaque but
    /// confined).
    Contained,
    /// Writes git's own files (`git commit`, `add`, `checkout`, `merge`, `rebase`, `init`).
    GitInternals,
    /// Destroys work in the workspace that cannot be got back (`rm -r`, `find -delete`,
    /// `git reset --hard`, `git clean -f`, `git checkout -- .`, `git stash drop`).
    Destructive,
    /// Talks to the network.
    Network,
    /// Changes things outside the workspace: the system, other processes, the home directory,
    /// privileges (`sudo`, `date -s`, `kill`, package managers installing system-wide).
    OutsideWrites,
    /// Uses an option, variable or form the classifier does not fully know.
    Unknown,
    /// Runs code fetched from the network (`curl … | sh`): dangerous even inside the sandbox.
    FetchedCode,
}

impl Reach {
    /// The risk of a command with this reach when the kernel sandbox holds.
    pub fn sandboxed_risk(self) -> Risk {
        match self {
            Reach::Contained => Risk::Low,
            Reach::FetchedCode => Risk::High,
            _ => Risk::Medium,
        }
    }

    /// What the reach means, as a clause.
    pub fn describe(self) -> &'static str {
        match self {
            Reach::Contained => "stays in the workspace",
            Reach::GitInternals => "writes git's own files",
            Reach::Destructive => "destroys work that cannot be got back",
            Reach::Network => "reaches the network",
            Reach::OutsideWrites => "changes things outside the workspace",
            Reach::Unknown => "uses a form Toolshed does not fully know",
            Reach::FetchedCode => "runs code fetched from the network",
        }
    }
}

/// A file a command writes or deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The path (or glob pattern) as the shell will see it.
    pub path: String,
    /// The directories, relative to the command's working directory, that a relative `path` may
    /// be relative to (more than one after a `cd`); `None` when a `cd` made it unknowable.
    pub bases: Option<Vec<String>>,
    /// What happens to it.
    pub kind: TargetKind,
}

/// What happens to a [`Target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// Created or changed.
    Write,
    /// Removed (a directory only when empty).
    Delete,
    /// Removed with everything under it.
    DeleteTree,
}

/// The result of analysing a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    /// Every simple command, in order of appearance.
    pub commands: Vec<Command>,
    /// Files written or deleted.
    pub targets: Vec<Target>,
    /// The highest risk of any command: the level used when the kernel sandbox does not hold.
    pub risk: Risk,
    /// The highest [`Reach::sandboxed_risk`] of any command: the level used when the kernel
    /// sandbox holds.
    pub sandboxed_risk: Risk,
    /// Whether any command talks to the network.
    pub network: bool,
}

impl Analysis {
    /// The programs, in order, without duplicates.
    pub fn programs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in self.commands.iter().filter(|c| !c.synthetic) {
            if !out.contains(&c.program) {
                out.push(c.program.clone());
            }
        }
        out
    }

    /// Each program the line runs with its arguments, as policy rules on commands see them:
    /// the program's base name (`/bin/tar` is `tar`) and its arguments, space-separated; and
    /// again under the name `real_name` gives for the program (the file a link such as
    /// `gmake -> make` leads to), when it gives one; each also in the other spellings of its
    /// options that mean the same (`rm -fr` is also `rm -rf`; module `spellings`).
    ///
    /// The second value is false when the line has so many commands that not every spelling
    /// was given (more than [`MAX_SPELLINGS`] in all); the written ones always are.
    pub fn simple_commands(
        &self,
        real_name: impl Fn(&str) -> Option<String>,
    ) -> (Vec<String>, bool) {
        let mut out: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut names = Vec::new();
        for c in self.commands.iter().filter(|c| !c.synthetic) {
            let base = c
                .program
                .rsplit('/')
                .next()
                .unwrap_or(&c.program)
                .to_owned();
            let real = real_name(&c.program).filter(|r| *r != base);
            for name in std::iter::once(base).chain(real) {
                let line = std::iter::once(name.as_str())
                    .chain(c.args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" ");
                if seen.insert(line.clone()) {
                    out.push(line);
                }
                names.push((name, c));
            }
        }
        let mut complete = true;
        for (name, c) in names {
            for line in spellings::spellings(&name, &c.args).into_iter().skip(1) {
                if out.len() >= MAX_SPELLINGS {
                    complete = false;
                    break;
                }
                if seen.insert(line.clone()) {
                    out.push(line);
                }
            }
        }
        (out, complete)
    }

    /// The programs that run code this analysis cannot see into ([`Command::opaque`]), in
    /// order, without duplicates.
    pub fn opaque_programs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        // Synthetic ones count: `PATH=./bin ls` runs whatever `./bin/ls` is.
        for c in self.commands.iter().filter(|c| c.opaque) {
            if !out.contains(&c.program) {
                out.push(c.program.clone());
            }
        }
        out
    }

    /// The reasons for the overall risk, one per command that has it.
    pub fn reasons(&self) -> Vec<String> {
        self.commands
            .iter()
            .filter(|c| c.risk == self.risk && !c.reason.is_empty())
            .map(|c| format!("{}: {}", c.program, c.reason))
            .collect()
    }

    /// The reasons for [`Analysis::sandboxed_risk`], one per command that has it.
    pub fn sandboxed_reasons(&self) -> Vec<String> {
        self.commands
            .iter()
            .filter(|c| {
                c.reach.sandboxed_risk() == self.sandboxed_risk && c.reach != Reach::Contained
            })
            .map(|c| format!("{}: {} ({})", c.program, c.reach_reason, c.reach.describe()))
            .collect()
    }
}

#[cfg(test)]
mod tests;
