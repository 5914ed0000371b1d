//! Editors and pagers: interactive programs that can run commands (`!` in less, `:!` in vim).
//! Without a terminal they do little, and the runtime sets `EDITOR`, `VISUAL` and `GIT_EDITOR`
//! to `false` and `PAGER` to `cat`, but they still ask; options that run commands at start-up
//! are high.

use tool_core::Risk;

use super::super::Reach;
use super::super::words::Word;
use super::Class;

/// Editors and pagers; `None` when `key` is neither.
pub(crate) fn editor(key: &str, args: &[Word]) -> Option<Class> {
    let runs = |why: String| Class::new(Risk::High, Reach::Unknown, why);
    let asks = |why: &str| Class::new(Risk::Medium, Reach::Unknown, why);
    Some(match key {
        "less" | "more" | "most" | "pg" => {
            if let Some(a) = args.iter().find(|a| {
                let t = a.display();
                t.starts_with('+')
                    || t.starts_with("-k")
                    || t.starts_with("--lesskey")
                    || t.starts_with("--cmd")
                    || (a.literal().is_none() && a.may_be_flag)
            }) {
                runs(format!(
                    "`{key} {}` runs pager commands, which can run programs",
                    a.display()
                ))
            } else {
                asks("a pager can run commands (`!`, `v`, `|`)")
            }
        }
        "man" => {
            if let Some(a) = args.iter().find(|a| {
                let t = a.display();
                t.starts_with("-P")
                    || t.starts_with("-H")
                    || t.starts_with("--pager")
                    || t.starts_with("--html")
                    || t.starts_with("--pr")
                    || t.starts_with("-p")
                    || (a.literal().is_none() && a.may_be_flag)
            }) {
                runs(format!("`man {}` names a program to run", a.display()))
            } else {
                asks("`man` runs a formatter and a pager")
            }
        }
        "vi" | "vim" | "nvim" | "view" | "gvim" | "ex" | "nano" | "emacs" | "pico" | "micro"
        | "joe" | "mcedit" | "code" | "subl" | "gedit" | "kate" | "ed" | "red" => {
            if let Some(a) = args.iter().find(|a| {
                let t = a.display();
                t.starts_with('+')
                    || matches!(
                        t,
                        "-c" | "-S"
                            | "-s"
                            | "--cmd"
                            | "-l"
                            | "--load"
                            | "--batch"
                            | "-batch"
                            | "--script"
                            | "-x"
                            | "-f"
                            | "-u"
                            | "--init-directory"
                    )
                    || t.starts_with("--eval")
                    || t.starts_with("-es")
                    || t.starts_with("-Es")
                    || (a.literal().is_none() && a.may_be_flag)
            }) {
                runs(format!(
                    "`{key} {}` runs editor commands, which can run programs",
                    a.display()
                ))
            } else if matches!(key, "ed" | "red" | "ex") {
                let mut c = Class::new(
                    Risk::High,
                    Reach::Contained,
                    format!(
                        "`{key}` reads editing commands, which can run programs, from standard input"
                    ),
                );
                c.stdin_code = true;
                c
            } else {
                asks("an editor can run commands")
            }
        }
        _ => return None,
    })
}
