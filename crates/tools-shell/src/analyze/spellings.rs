//! Other spellings of one simple command's options, for rules that refuse or ask.
//!
//! A rule such as `shell(rm -rf*)` is a pattern over the words as written, but programs read
//! options in many spellings that mean the same: `rm -fr`, `rm -r -f`, `rm --recursive --force`,
//! `rm --rec --for`, `rm x -rf`. [`spellings`] gives a command's line in each such spelling
//! (bounded), so that a `deny` or `ask` rule written in one of them holds for all. The spellings
//! only ever widen what restricting rules match; allow rules never see them.

/// Long option names and the short letter each means (`'\0'`: none, but the full name).
type Longs = &'static [(&'static str, char)];

/// Long options that mean a short one, per program (the programs' own manuals).
const LONG_AS_SHORT: &[(&[&str], Longs)] = &[
    (
        &["rm"],
        &[
            ("recursive", 'r'),
            ("force", 'f'),
            ("dir", 'd'),
            ("verbose", 'v'),
            ("one-file-system", '\0'),
        ],
    ),
    (
        &["cp"],
        &[
            ("recursive", 'r'),
            ("force", 'f'),
            ("archive", 'a'),
            ("verbose", 'v'),
            ("no-clobber", 'n'),
            ("update", 'u'),
            ("link", 'l'),
            ("symbolic-link", 's'),
            ("dereference", 'L'),
            ("no-dereference", 'P'),
        ],
    ),
    (
        &["mv"],
        &[
            ("force", 'f'),
            ("verbose", 'v'),
            ("no-clobber", 'n'),
            ("update", 'u'),
        ],
    ),
    (
        &["ln"],
        &[
            ("force", 'f'),
            ("symbolic", 's'),
            ("verbose", 'v'),
            ("no-dereference", 'n'),
        ],
    ),
    (
        &["chmod", "chown", "chgrp"],
        &[
            ("recursive", 'R'),
            ("verbose", 'v'),
            ("changes", 'c'),
            ("silent", 'f'),
            ("quiet", 'f'),
        ],
    ),
    (
        &["shred"],
        &[
            ("force", 'f'),
            ("remove", 'u'),
            ("zero", 'z'),
            ("verbose", 'v'),
        ],
    ),
    (
        &["git"],
        &[
            ("force", 'f'),
            ("delete", 'd'),
            ("all", 'a'),
            ("quiet", 'q'),
            ("hard", '\0'),
            ("soft", '\0'),
            ("mixed", '\0'),
            ("keep", '\0'),
            ("merge", '\0'),
        ],
    ),
    (
        &["tar"],
        &[("extract", 'x'), ("create", 'c'), ("file", 'f')],
    ),
    (
        &["sed"],
        &[
            ("in-place", 'i'),
            ("quiet", 'n'),
            ("silent", 'n'),
            ("regexp-extended", 'E'),
            ("separate", 's'),
            ("null-data", 'z'),
        ],
    ),
    (&["kill", "pkill", "killall"], &[("signal", 's')]),
];

/// Letters that are the same option in upper and lower case, per program.
const SAME_LETTERS: &[(&str, char, char)] = &[("rm", 'R', 'r'), ("cp", 'R', 'r')];

/// At most this many option letters are permuted (4! = 24 orders); beyond it, see [`orders`].
const MAX_PERMUTED: usize = 4;

/// At most this many spellings per command.
const MAX_SPELLINGS: usize = 2_000;

/// The command `name args…` in every spelling of its options that means the same (the written
/// one first), bounded by [`MAX_SPELLINGS`].
pub(crate) fn spellings(name: &str, args: &[String]) -> Vec<String> {
    let written = join(name, args.iter().map(String::as_str));
    let mut out = vec![written];
    // find's arguments are an expression, not options; without a start path it starts at `.`
    // (`find -delete` is `find . -delete`; found in round 10).
    if name == "find" {
        if args
            .first()
            .is_none_or(|a| a.starts_with('-') && a.len() > 1)
        {
            out.push(join(
                name,
                std::iter::once(".").chain(args.iter().map(String::as_str)),
            ));
        }
        return out;
    }
    let longs = LONG_AS_SHORT
        .iter()
        .find(|(programs, _)| programs.contains(&name))
        .map(|(_, l)| *l)
        .unwrap_or(&[]);
    // Split the words into option letters, other options, and the rest (in order), noting
    // where the first option stood.
    let mut letters: Vec<char> = Vec::new();
    let mut other_options: Vec<String> = Vec::new();
    let mut operands: Vec<&str> = Vec::new();
    let mut first_option: Option<usize> = None;
    let mut ended = false;
    for a in args {
        let is_option = !ended && a.starts_with('-') && a.len() > 1;
        if !ended && a == "--" {
            ended = true;
            continue;
        }
        if !is_option {
            operands.push(a);
            continue;
        }
        first_option.get_or_insert(operands.len());
        if let Some(long) = a.strip_prefix("--") {
            let (key, value) = match long.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (long, None),
            };
            // Any unique-looking prefix of a known long option, as getopt_long reads it; with a
            // value, the short letter takes it attached (`--in-place=.b` is `-i.b`).
            let hit = (!key.is_empty())
                .then(|| longs.iter().find(|(l, _)| l.starts_with(key)))
                .flatten();
            match (hit, value) {
                (Some((_, c)), None) if *c != '\0' => push_letter(&mut letters, *c),
                (Some((_, c)), Some(v)) if *c != '\0' => other_options.push(format!("-{c}{v}")),
                (Some((l, _)), None) => other_options.push(format!("--{l}")),
                (Some((l, _)), Some(v)) => other_options.push(format!("--{l}={v}")),
                (None, _) => other_options.push(a.clone()),
            }
        } else if a[1..].chars().all(|c| c.is_ascii_alphanumeric()) {
            for c in a[1..].chars() {
                push_letter(&mut letters, c);
            }
        } else {
            other_options.push(a.clone());
        }
    }
    // Letters that other words mean (found in round 8): without a terminal `rm` never prompts,
    // so a recursive `rm` is `rm -rf` whatever it says (`--interactive=never` included); a
    // `git push` of a `+refspec`, or with `--mirror`/`--force-with-lease`, forces.
    let mut implied = letters.clone();
    match name {
        // `cp -a` is `cp -dR --preserve=all`.
        "cp" if letters.contains(&'a') => {
            push_letter(&mut implied, 'r');
        }
        // With a path, `git clean` removes untracked directories there without `-d`.
        "git" if operands.first() == Some(&"clean") && operands.len() > 1 => {
            push_letter(&mut implied, 'd');
        }
        "rm" if letters.iter().any(|c| matches!(c, 'r' | 'R'))
            || other_options
                .iter()
                .any(|o| o.starts_with("--inter") && o.contains('=')) =>
        {
            push_letter(&mut implied, 'f');
        }
        "git"
            if operands.first() == Some(&"push")
                && (operands[1..].iter().any(|o| o.starts_with('+'))
                    || other_options.iter().any(|o| {
                        ["--mirror", "--force-with-lease", "--force-if-includes"]
                            .iter()
                            .any(|l| {
                                o.split('=')
                                    .next()
                                    .is_some_and(|k| k.len() > 3 && l.starts_with(k))
                            })
                    })) =>
        {
            push_letter(&mut implied, 'f');
        }
        _ => {}
    }
    if implied.is_empty() && other_options.is_empty() {
        return out;
    }
    // The same letters with upper/lower equivalents folded (`rm -R` is `rm -r`).
    let fold = |letters: &[char]| -> Vec<char> {
        let mut f = Vec::new();
        for c in letters {
            let c = SAME_LETTERS
                .iter()
                .find(|(p, from, _)| *p == name && from == c)
                .map(|(_, _, to)| *to)
                .unwrap_or(*c);
            push_letter(&mut f, c);
        }
        f
    };
    let mut sets: Vec<Vec<char>> = Vec::new();
    for set in [
        letters.clone(),
        fold(&letters),
        implied.clone(),
        fold(&implied),
    ] {
        if !sets.contains(&set) {
            sets.push(set);
        }
    }
    // Options go right after the program, after its first word (a subcommand: `git push -f`),
    // or where the first one was written.
    let mut positions = vec![0];
    for at in [(!operands.is_empty()).then_some(1), first_option]
        .into_iter()
        .flatten()
    {
        if !positions.contains(&at) {
            positions.push(at);
        }
    }
    let mut seen: std::collections::HashSet<String> = out.iter().cloned().collect();
    // One cluster first (the usual way rules are written), then separate words, then long names.
    for form in 0..3 {
        for set in &sets {
            for order in orders(set) {
                let options: Vec<String> = match form {
                    0 if order.is_empty() => Vec::new(),
                    0 => vec![format!("-{}", order.iter().collect::<String>())],
                    1 => order.iter().map(|c| format!("-{c}")).collect(),
                    _ => order
                        .iter()
                        .map(|c| {
                            longs
                                .iter()
                                .find(|(_, s)| s == c)
                                .map(|(l, _)| format!("--{l}"))
                                .unwrap_or_else(|| format!("-{c}"))
                        })
                        .collect(),
                };
                // Other options after the letters, or one of them first (`git reset -q --hard`
                // is `git reset --hard -q`; found in round 9).
                for lead in std::iter::once(None).chain((0..other_options.len()).map(Some)) {
                    for &at in &positions {
                        let mut words: Vec<&str> = Vec::new();
                        let at = at.min(operands.len());
                        words.extend(operands[..at].iter().copied());
                        if let Some(l) = lead {
                            words.push(&other_options[l]);
                        }
                        words.extend(options.iter().map(String::as_str));
                        words.extend(
                            other_options
                                .iter()
                                .enumerate()
                                .filter(|(k, _)| Some(*k) != lead)
                                .map(|(_, o)| o.as_str()),
                        );
                        words.extend(operands[at..].iter().copied());
                        let line = join(name, words.into_iter());
                        if seen.insert(line.clone()) {
                            out.push(line);
                        }
                        if out.len() >= MAX_SPELLINGS {
                            return out;
                        }
                    }
                }
            }
        }
    }
    out
}

fn push_letter(letters: &mut Vec<char>, c: char) {
    if !letters.contains(&c) {
        letters.push(c);
    }
}

fn join<'a>(name: &'a str, words: impl Iterator<Item = &'a str>) -> String {
    std::iter::once(name)
        .chain(words)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The orders to try the letters in: all of them for a few letters, else the written order,
/// the sorted one, and each letter and each ordered pair of letters moved first.
fn orders(letters: &[char]) -> Vec<Vec<char>> {
    if letters.len() <= MAX_PERMUTED {
        let mut out = Vec::new();
        permute(&mut letters.to_vec(), 0, &mut out);
        return out;
    }
    let mut out = vec![letters.to_vec()];
    let mut sorted = letters.to_vec();
    sorted.sort_unstable();
    out.push(sorted);
    let first = |lead: &[char]| -> Vec<char> {
        lead.iter()
            .copied()
            .chain(letters.iter().copied().filter(|c| !lead.contains(c)))
            .collect()
    };
    for &a in letters {
        out.push(first(&[a]));
    }
    for &a in letters {
        for &b in letters.iter().filter(|b| **b != a) {
            out.push(first(&[a, b]));
        }
    }
    out
}

fn permute(items: &mut Vec<char>, k: usize, out: &mut Vec<Vec<char>>) {
    if k + 1 >= items.len() {
        out.push(items.clone());
        return;
    }
    for i in k..items.len() {
        items.swap(k, i);
        permute(items, k + 1, out);
        items.swap(k, i);
    }
}

#[cfg(test)]
mod tests {
    use super::spellings;

    fn has(name: &str, args: &[&str], line: &str) -> bool {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        spellings(name, &args).iter().any(|s| s == line)
    }

    #[test]
    fn options_that_mean_the_same_are_spelled_every_way() {
        // (program, words as written, a spelling that must be among the results)
        let rows: &[(&str, &[&str], &str)] = &[
            ("rm", &["-fr", "d"], "rm -rf d"),
            ("rm", &["-r", "-f", "d"], "rm -rf d"),
            ("rm", &["-f", "-r", "d"], "rm -rf d"),
            ("rm", &["--recursive", "--force", "d"], "rm -rf d"),
            ("rm", &["--rec", "--for", "d"], "rm -rf d"),
            ("rm", &["-R", "-f", "d"], "rm -rf d"),
            ("rm", &["d", "-rf"], "rm -rf d"),
            ("rm", &["-vfr", "d"], "rm -rfv d"),
            ("rm", &["-rf", "d"], "rm --recursive --force d"),
            ("rm", &["-r", "-f", "--", "d"], "rm -rf d"),
            ("git", &["push", "--force", "origin"], "git push -f origin"),
            ("git", &["push", "origin", "-f"], "git push -f origin"),
            ("chmod", &["--recursive", "777", "d"], "chmod -R 777 d"),
            // Found in round 8.
            (
                "rm",
                &["-r", "--interactive=never", "d"],
                "rm -rf --interactive=never d",
            ),
            ("rm", &["-r", "d"], "rm -rf d"),
            ("rm", &["--recursive", "d"], "rm -rf d"),
            (
                "git",
                &["push", "origin", "+master"],
                "git push -f origin +master",
            ),
            (
                "git",
                &["push", "--mirror", "origin"],
                "git push -f --mirror origin",
            ),
            (
                "git",
                &["push", "--force-with-lease=master:abc", "origin"],
                "git push -f --force-with-lease=master:abc origin",
            ),
            ("rm", &["-vdrif", "d"], "rm -rfvdi d"),
            // Found in round 10.
            ("sed", &["--in-place", "s/a/b/", "f"], "sed -i s/a/b/ f"),
            ("sed", &["--in-pl", "s/a/b/", "f"], "sed -i s/a/b/ f"),
            (
                "sed",
                &["--in-place=.b", "s/a/b/", "f"],
                "sed -i.b s/a/b/ f",
            ),
            ("cp", &["-a", "d1", "d2"], "cp -ra d1 d2"),
            ("cp", &["--archive", "d1", "d2"], "cp -ra d1 d2"),
            ("git", &["clean", "-f", "ud"], "git clean -fd ud"),
            ("find", &["-delete"], "find . -delete"),
            // Found in round 9.
            ("git", &["reset", "-q", "--hard"], "git reset --hard -q"),
            (
                "git",
                &["reset", "--no-quiet", "--hard"],
                "git reset --hard --no-quiet",
            ),
            ("git", &["reset", "--har"], "git reset --hard"),
            (
                "git",
                &["--no-pager", "reset", "--hard"],
                "git reset --hard --no-pager",
            ),
        ];
        for (name, args, line) in rows {
            assert!(
                has(name, args, line),
                "{name} {args:?} should also read as `{line}`: {:?}",
                spellings(
                    name,
                    &args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
                )
            );
        }
    }

    #[test]
    fn the_written_spelling_comes_first_and_plain_commands_have_only_it() {
        let args = vec!["-fr".to_string(), "d".to_string()];
        assert_eq!(spellings("rm", &args)[0], "rm -fr d");
        let plain = vec!["a.txt".to_string(), "b.txt".to_string()];
        assert_eq!(
            spellings("cat", &plain),
            vec!["cat a.txt b.txt".to_string()]
        );
    }

    #[test]
    fn many_letters_stay_bounded() {
        let args = vec!["-abcdefghijklmnopqrstuvwxyz".to_string(), "x".to_string()];
        let all = spellings("ls", &args);
        assert!(all.len() <= super::MAX_SPELLINGS, "{}", all.len());
        assert!(
            all.iter().any(|s| s.starts_with("ls -z")),
            "each letter first"
        );
    }
}
