//! The classification of programs: tables of risks plus option-aware rules for programs that
//! run other programs, write files or set variables, one module per family.
//!
//! Risk levels (used when nothing but this analysis confines the command):
//! - **low**: reads state (`ls`, `cat`, `grep`, `git status`, `cargo metadata`);
//! - **medium**: changes the workspace recoverably, runs code from the workspace, or uses an
//!   option or form Toolshed does not fully know (`mkdir`, `sed -i`, `git commit`,
//!   `cargo build`, `ls --frobnicate`). **Programs not in the tables are medium**;
//! - **high**: destroys data, reaches the network, gains privileges, or runs code given on the
//!   command line (`rm -r`, `curl`, `sudo`, `bash -c`, `python -c`, `find -exec rm`).
//!
//! Each class also carries a [`Reach`]: what the command can touch beyond the workspace when
//! the kernel sandbox holds (see [`Reach::sandboxed_risk`]).
//!
//! Options are read with per-program tables ([`getopt`]), the way the programs read them, so
//! that abbreviations (`env --sp`), attached values (`-oFILE`) and option values that look
//! like commands (`timeout -s KILL 5 …`) mean what they mean to the program.

mod archives;
mod builders;
mod coreutils;
mod editors;
pub(crate) mod getopt;
mod git;
mod interpreters;
mod specs;
mod system;
mod textproc;
mod vars;
mod wrappers;

use tool_core::Risk;

use super::walk::Walker;
use super::words::Word;
use super::{Reach, Unknown};
use getopt::Problem;

pub(crate) use vars::Value;

/// Directories whose programs are looked up by base name (`/usr/bin/ls` is `ls`).
const SYSTEM_DIRS: &[&str] = &[
    "/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/sbin/",
    "/usr/sbin/",
];

/// A classification in progress.
#[derive(Debug, Clone)]
pub(crate) struct Class {
    pub(crate) risk: Risk,
    pub(crate) reason: String,
    pub(crate) reach: Reach,
    pub(crate) reach_reason: String,
    pub(crate) network: bool,
    /// Runs code it reads from standard input (`sh`, `python3 -`).
    pub(crate) stdin_code: bool,
    /// Runs code named or given in its arguments (`sh -c`, `bash FILE`).
    pub(crate) arg_code: bool,
    /// Runs code this analysis cannot see into (a script, `python3 -c`, `make`): rules on
    /// commands cannot be checked inside it. A reach of [`Reach::Unknown`] or worse counts too.
    pub(crate) opaque: bool,
}

impl Class {
    pub(crate) fn new(risk: Risk, reach: Reach, reason: impl Into<String>) -> Class {
        let reason = reason.into();
        Class {
            risk,
            reach_reason: if reach == Reach::Contained {
                String::new()
            } else {
                reason.clone()
            },
            reason,
            reach,
            network: false,
            stdin_code: false,
            arg_code: false,
            opaque: false,
        }
    }

    /// The same class, marked as running code this analysis cannot see into.
    pub(crate) fn opaque(mut self) -> Class {
        self.opaque = true;
        self
    }

    /// Whether rules on commands cannot be checked inside what this class runs.
    pub(crate) fn is_opaque(&self) -> bool {
        self.opaque || self.reach >= Reach::Unknown
    }

    /// A class that talks to the network.
    pub(crate) fn net(mut self) -> Class {
        self.network = true;
        let why = self.reason.clone();
        self.reach(Reach::Network, why);
        self
    }

    /// Raises the risk and the reach (each keeping the first reason of its highest level).
    pub(crate) fn raise(&mut self, risk: Risk, reach: Reach, reason: impl Into<String>) {
        let reason = reason.into();
        if risk > self.risk || (risk == self.risk && self.reason.is_empty()) {
            self.risk = risk;
            self.reason = reason.clone();
        }
        self.reach(reach, reason);
    }

    /// Raises only the reach.
    pub(crate) fn reach(&mut self, reach: Reach, reason: impl Into<String>) {
        if reach > self.reach || (reach == self.reach && self.reach_reason.is_empty()) {
            self.reach = reach;
            if reach != Reach::Contained {
                self.reach_reason = reason.into();
            }
        }
    }

    /// Raises this class by another (the class of an option, of a wrapped part).
    pub(crate) fn merge(&mut self, other: Class) {
        self.raise(other.risk, Reach::Contained, other.reason);
        self.reach(other.reach, other.reach_reason);
        self.network |= other.network;
        self.stdin_code |= other.stdin_code;
        self.arg_code |= other.arg_code;
        self.opaque |= other.opaque;
    }

    /// The class of options that could not be read with certainty: at least medium, and high
    /// (`dynamic`) when a word computed at run time could be an option that runs programs.
    pub(crate) fn problem(program: &str, problem: &Problem, dynamic: Risk) -> Class {
        let risk = match problem {
            Problem::Dynamic(_) => dynamic.max(Risk::Medium),
            _ => Risk::Medium,
        };
        Class::new(risk, Reach::Unknown, problem.describe(program))
    }
}

pub(crate) fn low() -> Class {
    Class::new(Risk::Low, Reach::Contained, "")
}

/// A medium class that stays in the workspace.
pub(crate) fn contained(reason: impl Into<String>) -> Class {
    Class::new(Risk::Medium, Reach::Contained, reason)
}

/// The first argument that is not static and could be an option, if any.
pub(crate) fn dynamic_flag(args: &[Word]) -> Option<&Word> {
    args.iter().find(|a| a.text.is_none() && a.may_be_flag)
}

impl Walker {
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
            None if name.starts_with('/') => Class::new(
                Risk::Medium,
                Reach::Unknown,
                "runs a program by a path outside the system directories",
            ),
            None => {
                contained("runs a program by path (a script or binary from the workspace)").opaque()
            }
            Some(key) => self.class_of(name, key, args)?,
        };
        self.set_class(index, class);
        Ok(())
    }

    /// Classifies the command that a wrapper (`env`, `nice`, `xargs`, `find -exec` …) runs.
    pub(crate) fn wrapped(&mut self, args: &[Word]) -> Result<(), Unknown> {
        match args.split_first() {
            None => Ok(()),
            Some((program, rest)) => self.classify(program, rest),
        }
    }

    fn class_of(&mut self, name: &str, key: &str, args: &[Word]) -> Result<Class, Unknown> {
        let key = key.to_ascii_lowercase();
        let key = key.as_str();
        if let Some(class) = self.builtin(key, args)? {
            return Ok(class);
        }
        if let Some(class) = interpreters::interpreter(key, args) {
            return Ok(if class.risk > Risk::Low {
                class.opaque()
            } else {
                class
            });
        }
        if interpreters::SHELLS.contains(&key) {
            return self.shell(args);
        }
        if let Some(class) = self.wrapper(key, args)? {
            return Ok(class);
        }
        if let Some(class) = self.text_program(key, args)? {
            return Ok(class);
        }
        if key == "git" {
            return self.git(args);
        }
        if let Some(class) = builders::builder(key, args) {
            // Build scripts, Makefiles, package scripts and tests run whatever they contain.
            return Ok(if class.risk > Risk::Low {
                class.opaque()
            } else {
                class
            });
        }
        if let Some(class) = archives::archive(key, args) {
            return Ok(class);
        }
        if let Some(class) = editors::editor(key, args) {
            return Ok(if class.risk > Risk::Low {
                class.opaque()
            } else {
                class
            });
        }
        if let Some(class) = self.coreutil(key, args)? {
            return Ok(class);
        }
        if let Some(class) = self.system(name, key, args) {
            return Ok(class);
        }
        Ok(Class::new(
            Risk::Medium,
            Reach::Unknown,
            format!("`{name}` is not a program Toolshed knows, so it may change files"),
        ))
    }
}
