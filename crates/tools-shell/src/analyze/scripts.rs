//! Small scanners for the programs that sed and awk are given: enough to find the commands that
//! run programs or write files. When a script cannot be read with certainty, the scanners say so
//! and the caller treats the script as dangerous.

/// What a sed or awk script does besides filtering text.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ScriptEffects {
    /// Why the script is dangerous (runs commands, or cannot be read), if it is.
    pub(crate) danger: Option<String>,
    /// Files the script writes (literal names only).
    pub(crate) writes: Vec<String>,
}

impl ScriptEffects {
    fn danger(why: impl Into<String>) -> ScriptEffects {
        ScriptEffects {
            danger: Some(why.into()),
            writes: Vec::new(),
        }
    }
}

/// Scans a sed script (GNU syntax). `e` commands and the `e` flag run commands; `w`/`W` commands
/// and the `w` flag write files.
pub(crate) fn sed(script: &str) -> ScriptEffects {
    match sed_inner(script) {
        Ok(writes) => ScriptEffects {
            danger: None,
            writes,
        },
        Err(why) => ScriptEffects::danger(why),
    }
}

fn sed_inner(script: &str) -> Result<Vec<String>, String> {
    let c: Vec<char> = script.chars().collect();
    let mut i = 0;
    let mut writes = Vec::new();
    let rest_of_line = |i: &mut usize| -> String {
        let start = *i;
        while *i < c.len() && c[*i] != '\n' {
            *i += 1;
        }
        c[start..*i].iter().collect::<String>().trim().to_string()
    };
    // Skips a delimited part (regex or replacement), honouring backslash escapes.
    let delimited = |i: &mut usize, delim: char| -> Result<(), String> {
        while *i < c.len() {
            if c[*i] == '\\' {
                *i += 2;
                continue;
            }
            if c[*i] == delim {
                *i += 1;
                return Ok(());
            }
            if c[*i] == '\n' && delim != '\n' {
                return Err("a sed expression is not terminated".into());
            }
            *i += 1;
        }
        Err("a sed expression is not terminated".into())
    };
    while i < c.len() {
        // Separators and blanks.
        if c[i].is_whitespace() || c[i] == ';' || c[i] == '{' || c[i] == '}' {
            i += 1;
            continue;
        }
        if c[i] == '#' {
            rest_of_line(&mut i);
            continue;
        }
        // Addresses: numbers, $, /re/, \cREc, ranges and steps, negation.
        loop {
            if i >= c.len() {
                break;
            }
            match c[i] {
                '0'..='9' | '$' | ',' | '~' | '+' | '!' | ' ' | '\t' => i += 1,
                '/' => {
                    i += 1;
                    delimited(&mut i, '/')?;
                    while i < c.len() && matches!(c[i], 'I' | 'M') {
                        i += 1;
                    }
                }
                '\\' if i + 1 < c.len() => {
                    let d = c[i + 1];
                    i += 2;
                    delimited(&mut i, d)?;
                }
                _ => break,
            }
        }
        if i >= c.len() {
            break;
        }
        let cmd = c[i];
        i += 1;
        match cmd {
            '{' | '}' | ';' => {}
            's' => {
                let Some(&d) = c.get(i) else {
                    return Err("a sed `s` command is cut short".into());
                };
                if d == '\n' || d == '\\' {
                    return Err("a sed `s` command uses an unusual delimiter".into());
                }
                i += 1;
                delimited(&mut i, d)?;
                delimited(&mut i, d)?;
                // Flags.
                while i < c.len() {
                    match c[i] {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                        'e' => {
                            return Err(
                                "the sed `s///e` flag runs the pattern space as a command".into()
                            );
                        }
                        'w' => {
                            i += 1;
                            let file = rest_of_line(&mut i);
                            writes.push(file);
                        }
                        _ => break,
                    }
                }
            }
            'y' => {
                let Some(&d) = c.get(i) else {
                    return Err("a sed `y` command is cut short".into());
                };
                i += 1;
                delimited(&mut i, d)?;
                delimited(&mut i, d)?;
            }
            'e' => return Err("the sed `e` command runs a shell command".into()),
            'w' | 'W' => {
                let file = rest_of_line(&mut i);
                writes.push(file);
            }
            'a' | 'i' | 'c' => {
                // GNU one-liner text (or a backslash-newline block): up to the end of the line,
                // continued by trailing backslashes.
                loop {
                    let line = rest_of_line(&mut i);
                    if line.ends_with('\\') && i < c.len() {
                        i += 1;
                        continue;
                    }
                    break;
                }
            }
            'r' | 'R' => {
                // A file name: up to the end of the line.
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            'b' | 't' | 'T' | ':' | 'v' => {
                // A label: after blanks, up to a blank, `;` or the end of the line. GNU sed
                // ends it at a blank and reads what follows as commands (round 14: `:x e tar …`
                // ran tar, read as one long label), so that is read as commands here too.
                while i < c.len() && (c[i] == ' ' || c[i] == '\t') {
                    i += 1;
                }
                while i < c.len() && !matches!(c[i], '\n' | ';' | ' ' | '\t') {
                    i += 1;
                }
            }
            'q' | 'Q' | 'l' | 'L' => {
                while i < c.len() && (c[i].is_ascii_digit() || c[i] == ' ') {
                    i += 1;
                }
            }
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'z' | 'F' => {}
            other => {
                return Err(format!(
                    "the sed script has a command `{other}` that Toolshed does not recognise"
                ));
            }
        }
    }
    if writes.iter().any(|w| w.is_empty()) {
        return Err("a sed `w` command has no file name".into());
    }
    Ok(writes)
}

/// Scans an awk program: `system()`, pipes to or from commands (`|`, `|&`) and `@load` run
/// programs; `print … > "file"` writes files (literal names are returned; anything else is
/// dangerous because the target is unknown).
pub(crate) fn awk(program: &str) -> ScriptEffects {
    match awk_inner(program) {
        Ok(writes) => ScriptEffects {
            danger: None,
            writes,
        },
        Err(why) => ScriptEffects::danger(why),
    }
}

fn awk_inner(p: &str) -> Result<Vec<String>, String> {
    let c: Vec<char> = p.chars().collect();
    let mut i = 0;
    let mut writes = Vec::new();
    // The last significant character outside strings, to tell a regex `/` from a division.
    let mut prev: char = '\n';
    // Inside a print statement: the paren depth at which it started.
    let mut in_print: Option<i32> = None;
    let mut depth: i32 = 0;
    let mut word = String::new();
    while i < c.len() {
        let ch = c[i];
        if ch.is_alphanumeric() || ch == '_' {
            word.push(ch);
            i += 1;
            prev = ch;
            continue;
        }
        if !word.is_empty() {
            match word.as_str() {
                "system" => {
                    return Err("the awk program calls system(), which runs a shell command".into());
                }
                "print" | "printf" => in_print = Some(depth),
                _ => {}
            }
            word.clear();
        }
        match ch {
            '"' => {
                i += 1;
                while i < c.len() && c[i] != '"' {
                    if c[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i >= c.len() {
                    return Err("the awk program has an unterminated string".into());
                }
                i += 1;
                prev = '"';
                continue;
            }
            '/' if matches!(
                prev,
                '(' | ',' | '!' | '~' | '{' | '}' | ';' | '&' | '|' | '=' | '\n' | '?' | ':'
            ) =>
            {
                // A regular expression literal.
                i += 1;
                while i < c.len() && c[i] != '/' {
                    if c[i] == '\\' {
                        i += 1;
                    } else if c[i] == '\n' {
                        return Err("the awk program has an unterminated regular expression".into());
                    }
                    i += 1;
                }
                i += 1;
                prev = '/';
                continue;
            }
            '#' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '@' => {
                return Err(
                    "the awk program uses a gawk directive (@load, @include), which loads code"
                        .into(),
                );
            }
            '|' => {
                if c.get(i + 1) == Some(&'|') {
                    i += 2;
                    prev = '|';
                    continue;
                }
                return Err(
                    "the awk program pipes to or from a command with `|`, which runs a shell"
                        .into(),
                );
            }
            '(' => depth += 1,
            ')' => depth -= 1,
            ';' | '}' | '\n' | '{' => in_print = None,
            '>' if in_print == Some(depth) => {
                // Output redirection of print/printf.
                let mut j = i + 1;
                if c.get(j) == Some(&'>') {
                    j += 1;
                }
                while j < c.len() && (c[j] == ' ' || c[j] == '\t') {
                    j += 1;
                }
                if c.get(j) == Some(&'"') {
                    let start = j + 1;
                    let mut k = start;
                    while k < c.len() && c[k] != '"' && c[k] != '\\' {
                        k += 1;
                    }
                    if c.get(k) == Some(&'"') {
                        writes.push(c[start..k].iter().collect());
                        i = k + 1;
                        prev = '"';
                        continue;
                    }
                }
                return Err("the awk program prints to a file whose name is computed, so Toolshed cannot check it; use a shell redirection instead".into());
            }
            _ => {}
        }
        if !ch.is_whitespace() {
            prev = ch;
        } else if ch == '\n' {
            prev = '\n';
        }
        i += 1;
    }
    if word == "system" {
        return Err("the awk program calls system(), which runs a shell command".into());
    }
    Ok(writes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_table() {
        // (script, dangerous, writes)
        let cases: &[(&str, bool, &[&str])] = &[
            ("s/a/b/", false, &[]),
            ("s/a/b/g", false, &[]),
            ("s|a/b|c|g;p", false, &[]),
            ("1d;$d", false, &[]),
            ("/x/,/y/ { s/q/r/ }", false, &[]),
            ("s/a;e/b/", false, &[]),
            ("s/a/b\\/e/", false, &[]),
            ("e rm x", true, &[]),
            ("1e rm x", true, &[]),
            ("s/a/b/e", true, &[]),
            ("s/x/rm -rf ~/e", true, &[]),
            ("w out.txt", false, &["out.txt"]),
            ("s/a/b/w out.txt", false, &["out.txt"]),
            ("/x/W out", false, &["out"]),
            ("a hello; e world", false, &[]),
            ("r /etc/passwd", false, &[]),
            ("s/a/b", true, &[]),
            ("K", true, &[]),
            ("w", true, &[]),
        ];
        for (script, dangerous, writes) in cases {
            let e = sed(script);
            assert_eq!(e.danger.is_some(), *dangerous, "{script}: {e:?}");
            if !dangerous {
                assert_eq!(e.writes, *writes, "{script}");
            }
        }
    }

    #[test]
    fn awk_table() {
        let cases: &[(&str, bool, &[&str])] = &[
            ("{print $1}", false, &[]),
            ("$3 > 100 {print $1}", false, &[]),
            ("{ if (a || b) print }", false, &[]),
            ("/foo|bar/ {print}", false, &[]),
            ("{print \"a|b\"}", false, &[]),
            ("{print (a > b)}", false, &[]),
            ("{n += $1} END {print n / 2}", false, &[]),
            ("BEGIN{system(\"rm x\")}", true, &[]),
            ("{print | \"sh\"}", true, &[]),
            ("{\"date\" | getline d}", true, &[]),
            ("{print $1 > \"out.txt\"}", false, &["out.txt"]),
            ("{print $1 >> \"log\"}", false, &["log"]),
            ("{print $1 > $2}", true, &[]),
            ("@load \"x\"", true, &[]),
            ("{x = a / b | \"sh\"}", true, &[]),
        ];
        for (prog, dangerous, writes) in cases {
            let e = awk(prog);
            assert_eq!(e.danger.is_some(), *dangerous, "{prog}: {e:?}");
            if !dangerous {
                assert_eq!(e.writes, *writes, "{prog}");
            }
        }
    }
}
