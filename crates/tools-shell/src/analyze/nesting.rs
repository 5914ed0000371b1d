//! A bound on how deeply a command nests, checked before anything parses it.
//!
//! brush-parser and the walk over its tree recurse once per level of nesting: a 16 KB command
//! of nested `{ …; }`, `if …; fi`, `${a:-${a:-…}}` or `[[ ( ( … ) ) ]]` overflows the stack and
//! aborts the process (over MCP, the server of every client). This scan over-counts on purpose
//! (a bracket inside double quotes counts too), so that what it lets through is never deeper
//! than [`MAX_NESTING`] levels for the parser; commands people write stay far below it.

use super::Unknown;

/// The deepest nesting of brackets (`( { [`, so `$(`, `${`, `[[`) and compound commands (`if`,
/// `case`, `while`, `until`, `for`, `select`) a command may have.
pub(crate) const MAX_NESTING: usize = 32;

/// Refuses `command` when it nests deeper than [`MAX_NESTING`] levels.
pub(crate) fn check(command: &str) -> Result<(), Unknown> {
    let deepest = deepest(command);
    if deepest > MAX_NESTING {
        return Err(Unknown(format!(
            "it nests brackets or compound commands {deepest} levels deep, more than {MAX_NESTING}; split it into simpler commands"
        )));
    }
    Ok(())
}

/// What a nesting level was opened by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Paren,
    Brace,
    Bracket,
    If,
    Case,
    Loop,
    /// `$(` (and `$((`): code inside.
    Subst,
    /// `${`: a word inside, closed by `}`.
    Param,
    /// `"`: text inside, with `$(`, `${` and backticks.
    Double,
    Backtick,
}

/// The deepest nesting in `command`. Quotes are followed so that a quoted closer does not
/// close anything; an opener counts wherever it is, and a closer only closes what it matches,
/// so the count errs on the high side. (Here-document bodies are read as code; the analysis
/// also runs on a large stack, see [`super::walk::analyze`].)
fn deepest(command: &str) -> usize {
    let mut open: Vec<Open> = Vec::new();
    let mut deepest = 0usize;
    let mut word = String::new();
    let chars: Vec<char> = command.chars().collect();
    let mut i = 0;
    let push = |open: &mut Vec<Open>, deepest: &mut usize, o: Open| {
        open.push(o);
        *deepest = (*deepest).max(open.len());
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let top = open.last().copied();
        i += 1;
        if c == '\\' {
            i += 1;
            word.push('\\');
            continue;
        }
        if c == '$' && next == Some('(') {
            i += 1;
            push(&mut open, &mut deepest, Open::Subst);
            word.clear();
            continue;
        }
        if c == '$' && next == Some('{') {
            i += 1;
            push(&mut open, &mut deepest, Open::Param);
            word.clear();
            continue;
        }
        if c == '`' {
            if top == Some(Open::Backtick) {
                open.pop();
            } else {
                push(&mut open, &mut deepest, Open::Backtick);
            }
            word.clear();
            continue;
        }
        match top {
            Some(Open::Double) => {
                if c == '"' {
                    open.pop();
                }
                continue;
            }
            Some(Open::Param) => {
                // In `"${…}"`, a single quote is literal.
                let in_double = open.len() >= 2 && open[open.len() - 2] == Open::Double;
                match c {
                    '}' => {
                        open.pop();
                    }
                    '"' => push(&mut open, &mut deepest, Open::Double),
                    '\'' if !in_double => i = skip_single(&chars, i, false),
                    _ => {}
                }
                continue;
            }
            _ => {}
        }
        // Code.
        match c {
            '\'' => {
                let ansi = word.ends_with('$');
                i = skip_single(&chars, i, ansi);
                word.push('q');
                continue;
            }
            '"' => {
                push(&mut open, &mut deepest, Open::Double);
                word.push('q');
                continue;
            }
            '#' if word.is_empty() => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '(' => push(&mut open, &mut deepest, Open::Paren),
            '{' => push(&mut open, &mut deepest, Open::Brace),
            '[' => push(&mut open, &mut deepest, Open::Bracket),
            ')' if matches!(top, Some(Open::Paren | Open::Subst)) => {
                open.pop();
            }
            '}' if top == Some(Open::Brace) => {
                open.pop();
            }
            ']' if top == Some(Open::Bracket) => {
                open.pop();
            }
            _ => {}
        }
        if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>' | '{' | '}') {
            let kind = match word.as_str() {
                "if" => Some(Ok(Open::If)),
                "case" => Some(Ok(Open::Case)),
                "while" | "until" | "for" | "select" => Some(Ok(Open::Loop)),
                "fi" => Some(Err(Open::If)),
                "esac" => Some(Err(Open::Case)),
                "done" => Some(Err(Open::Loop)),
                _ => None,
            };
            match kind {
                Some(Ok(o)) => push(&mut open, &mut deepest, o),
                Some(Err(o)) if open.last() == Some(&o) => {
                    open.pop();
                }
                _ => {}
            }
            word.clear();
        } else {
            word.push(c);
        }
    }
    deepest
}

/// The index after the `'` that ends a single-quoted string starting at `i` (after its opening
/// quote); in `$'…'`, a backslash escapes the next character.
fn skip_single(chars: &[char], mut i: usize, ansi: bool) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' if ansi => i += 2,
            '\'' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each bomb (which overflowed the stack before this check) beside a twin of the same
    /// construct nested as people write it, which must still be analysed; and the deepest
    /// accepted form of every construct is analysed on a 2 MiB thread (a tokio worker's).
    #[test]
    fn nesting_bombs_are_refused_and_ordinary_nesting_is_not() {
        let n = 800;
        #[rustfmt::skip]
        let rows: Vec<(&str, String, String)> = vec![
            ("braces", format!("{}:;{}", "{ ".repeat(n), "}".repeat(n)), "{ { :; }; }".into()),
            ("subshells", format!("{}:{}", "( ".repeat(n), " )".repeat(n)), "( ( : ) )".into()),
            ("if", format!("{}:{}", "if :;then ".repeat(n), ";fi".repeat(n)), "if :; then if :; then :; fi; fi".into()),
            ("case", format!("{}:{}", "case a in a)".repeat(n), ";;esac".repeat(n)), "case a in a) :;; esac".into()),
            ("while", format!("{}:{}", "while :;do ".repeat(n), ";done".repeat(n)), "while :; do break; done".into()),
            ("parameters", format!("echo {}x{}", "${a:-".repeat(n), "}".repeat(n)), "echo ${a:-${b:-x}}".into()),
            ("substitutions", format!("echo {}x{}", "\"$(".repeat(n), ")\"".repeat(n)), "echo \"$(echo \"$(date)\")\"".into()),
            ("conditions", format!("[[ {}a{} ]]", "( ".repeat(n), " )".repeat(n)), "[[ ( a && ( b ) ) ]]".into()),
            ("here-documents", format!("cat <<E\n{}x{}\nE", "$(".repeat(n), ")".repeat(n)), "cat <<E\n$(date)\nE".into()),
        ];
        for (label, bomb, twin) in &rows {
            let refused = crate::analyze::analyze(bomb).err().map(|e| e.0);
            assert!(
                refused
                    .as_deref()
                    .is_some_and(|m| m.contains("levels deep")),
                "{label}: {refused:?}"
            );
            assert!(check(twin).is_ok(), "{label} twin: {twin}");
        }
        // Quoted text is not nesting, and a quoted closer closes nothing.
        assert!(
            check(&format!(
                "echo '{}' \"{}\"",
                "(".repeat(200),
                "{".repeat(200)
            ))
            .is_ok()
        );
        assert_eq!(deepest("echo \"(\" x"), 1);
        let quoted_closers = format!(
            "{}:{}",
            "( echo ')' \")\" $')\\')' ".repeat(n / 4),
            " )".repeat(n / 4)
        );
        assert!(check(&quoted_closers).is_err());
        // Many expansions one after another are not nesting.
        assert!(check(&"echo \"$(date)\" ${HOME} `pwd` $((1+(2))) ".repeat(100)).is_ok());
        // At the limit, every construct is accepted (a `"$(` is two levels: the quote and the
        // substitution).
        let k = MAX_NESTING;
        for command in [
            format!("{}:;{}", "{ ".repeat(k), "}".repeat(k)),
            format!("{}:{}", "if :;then ".repeat(k), ";fi".repeat(k)),
            format!("{}:{}", "case a in a)".repeat(k), ";;esac".repeat(k)),
            format!("echo {}x{}", "${a:-".repeat(k), "}".repeat(k)),
            format!("[[ {}a{} ]]", "( ".repeat(k - 2), " )".repeat(k - 2)),
            format!("echo {}x{}", "\"$(".repeat(k / 2), ")\"".repeat(k / 2)),
        ] {
            assert!(check(&command).is_ok(), "{command}");
            assert!(check(&format!("( {command} )")).is_err(), "{command}");
        }
    }
}

#[cfg(test)]
mod backstop {
    /// The stack the analysis runs on holds the deepest command of the default size limit
    /// (16 KiB), for the constructs that cost the most stack per level, with the nesting check
    /// left out (as a here-document could fool it). Nested `${…}` is not among them: the check
    /// counts it soundly (a here-document's literal `}` can only close a `${` opened inside
    /// the same body), and the word parser is slow on it (44 s for 16 KiB in a debug build).
    #[test]
    fn the_analysis_stack_holds_the_deepest_command_the_size_limit_allows() {
        let limit = 16 * 1024;
        let fill = |open: &str, close: &str, inner: &str| {
            let n = (limit - inner.len()) / (open.len() + close.len());
            format!("{}{inner}{}", open.repeat(n), close.repeat(n))
        };
        for command in [
            fill("{ ", "}", ":;"),
            fill("if :;then ", ";fi", ":"),
            fill("case a in a)", ";;esac", ":"),
            fill("[[ (", ") ]]", "a"),
            fill("(", ")", ":"),
            fill("\"$(", ")\"", "x"),
        ] {
            let _ = super::super::walk::deep_stack(|| {
                let mut w = super::super::walk::Walker::new();
                w.script(&command)?;
                w.finish()
            });
        }
    }
}
