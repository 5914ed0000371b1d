//! Bash's arithmetic, read for what it can do besides computing: the variables it assigns
//! (`(( PATH = 1 ))`, `let x++`) and the variables whose values it evaluates in turn. Bash
//! evaluates a variable's value as an expression, and an array subscript in that value runs the
//! command substitutions in it (`x='a[$(id)]'; echo $((x))` runs `id`), so a variable whose value
//! came from outside the command line is a way to run code.

/// What an arithmetic text reads and writes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Arith {
    /// Variables read (their values are evaluated as expressions in turn).
    pub(crate) reads: Vec<String>,
    /// Variables assigned (`=`, `+=`, `++` …).
    pub(crate) assigns: Vec<String>,
}

/// Scans an arithmetic text (before expansion; `$x` and `${x}` count as reads of `x`).
pub(crate) fn scan(text: &str) -> Arith {
    let c: Vec<char> = text.chars().collect();
    let mut out = Arith::default();
    scan_into(&c, &mut out);
    out
}

fn scan_into(c: &[char], out: &mut Arith) {
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        // `$1`, `${10}`, `$@`, `$*`: positional parameters, whose values come from elsewhere
        // (`set -- 'a[$(cmd)]'; (( $1 ))` runs cmd; found in round 10). Read as `@`.
        if ch == '$' {
            let mut k = i + 1;
            if k < c.len() && c[k] == '{' {
                k += 1;
            }
            if k < c.len() && (c[k].is_ascii_digit() || c[k] == '@' || c[k] == '*') {
                if !out.reads.iter().any(|r| r == "@") {
                    out.reads.push("@".into());
                }
                i = k + 1;
                continue;
            }
        }
        if ch.is_ascii_digit() {
            // A number, in any base (`0x1f`, `16#ff`, `2#1010`): letters here are digits.
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '#' || c[i] == '_') {
                i += 1;
            }
            continue;
        }
        if !(ch.is_ascii_alphabetic() || ch == '_') {
            i += 1;
            continue;
        }
        let start = i;
        while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_') {
            i += 1;
        }
        let name: String = c[start..i].iter().collect();
        // Increments before the name.
        let before: String = c[..start]
            .iter()
            .rev()
            .skip_while(|c| c.is_whitespace() || **c == '$' || **c == '{')
            .take(2)
            .collect();
        let mut j = i;
        if j < c.len() && c[j] == '}' {
            j += 1;
        }
        while j < c.len() && c[j].is_whitespace() {
            j += 1;
        }
        if j < c.len() && c[j] == '[' {
            // A subscript: arithmetic of its own.
            let mut depth = 0;
            let open = j;
            while j < c.len() {
                if c[j] == '[' {
                    depth += 1;
                } else if c[j] == ']' {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                j += 1;
            }
            scan_into(&c[open + 1..j.min(c.len())], out);
            j += 1;
            while j < c.len() && c[j].is_whitespace() {
                j += 1;
            }
        }
        let rest: String = c[j.min(c.len())..].iter().take(3).collect();
        let assigned = before == "++"
            || before == "--"
            || rest.starts_with("++")
            || rest.starts_with("--")
            || (rest.starts_with('=') && !rest.starts_with("=="))
            || ["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="]
                .iter()
                .any(|op| rest.starts_with(op));
        if assigned && !out.assigns.contains(&name) {
            out.assigns.push(name.clone());
        }
        if !out.reads.contains(&name) {
            out.reads.push(name);
        }
        i = j.max(i);
    }
}

/// Whether `text` would run a command if bash evaluated it as arithmetic (or as a subscript).
pub(crate) fn runs_code(text: &str) -> bool {
    text.contains("$(") || text.contains('`') || text.contains("<(") || text.contains(">(")
}

/// A variable name as the builtins that set or test variables take it: `NAME` or
/// `NAME[SUBSCRIPT]`. Returns the name and the subscript.
pub(crate) fn var_name(text: &str) -> Option<(&str, Option<&str>)> {
    let (name, sub) = match text.find('[') {
        Some(i) if text.ends_with(']') => (&text[..i], Some(&text[i + 1..text.len() - 1])),
        Some(_) => return None,
        None => (text, None),
    };
    let mut chars = name.chars();
    let first = chars.next()?;
    if !(first.is_ascii_alphabetic() || first == '_')
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    Some((name, sub))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_assigns() {
        let a = scan("PATH = 1");
        assert_eq!(a.assigns, ["PATH"]);
        let a = scan("x++ + y");
        assert_eq!(a.assigns, ["x"]);
        assert_eq!(a.reads, ["x", "y"]);
        let a = scan("++n");
        assert_eq!(a.assigns, ["n"]);
        let a = scan("a[i] += 0x1f + 16#ff");
        assert_eq!(a.assigns, ["a"]);
        assert_eq!(a.reads, ["i", "a"]);
        let a = scan("$x == ${y}");
        assert!(a.assigns.is_empty());
        assert_eq!(a.reads, ["x", "y"]);
        assert_eq!(scan("1 + 2"), Arith::default());
        let a = scan("x<<=2");
        assert_eq!(a.assigns, ["x"]);
    }

    #[test]
    fn names() {
        assert_eq!(var_name("x"), Some(("x", None)));
        assert_eq!(var_name("a[1]"), Some(("a", Some("1"))));
        assert_eq!(var_name("a[$(id)]"), Some(("a", Some("$(id)"))));
        assert_eq!(var_name("1x"), None);
        assert_eq!(var_name("a-b"), None);
        assert_eq!(var_name("a[1"), None);
        assert!(runs_code("a[$(id)]"));
        assert!(runs_code("a[`id`]"));
        assert!(!runs_code("a[i+1]"));
    }
}
