//! Options read the way `getopt_long` reads them.
//!
//! GNU programs accept any unique prefix of a long option (`--sp` is `--split-string` for `env`),
//! take a long option's value as `--name=value` or as the next word, and read short options in
//! clusters where a letter that takes a value swallows the rest of the word (`-i.bak`, `-oFILE`)
//! or the next word. Comparing option words with names would miss all of that, so every program
//! the analysis trusts has a table ([`Spec`]) and its options are read with it. What the table
//! does not know (an unknown or ambiguous option, a word computed at run time where an option may
//! stand) is reported as a [`Problem`], and the caller fails closed.

use super::super::words::Word;

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arity {
    /// A flag.
    No,
    /// A value: attached (`-oFILE`, `--out=FILE`) or the next word.
    Required,
    /// A value only when attached (`-i.bak`, `--color=never`).
    Optional,
}

/// A program's options.
///
/// `shorts` uses getopt's notation: a letter, followed by `:` when it takes a value and `::`
/// when the value is optional; a `#` anywhere means `-NUM` is accepted (`head -5`). `longs` lists
/// long names separated by blanks, each ending in `=` (takes a value) or `?` (optional value).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    pub(crate) shorts: &'static str,
    pub(crate) longs: &'static str,
    /// Options end at the first operand (wrappers: what follows is the command they run).
    pub(crate) in_order: bool,
    /// A word computed at run time where an option may stand is taken as an operand (for
    /// programs none of whose options runs a program or names a file to write).
    pub(crate) dynamic_operands: bool,
}

impl Spec {
    pub(crate) const fn new(shorts: &'static str, longs: &'static str) -> Spec {
        Spec {
            shorts,
            longs,
            in_order: false,
            dynamic_operands: false,
        }
    }

    /// The same options, taking words computed at run time as operands.
    pub(crate) const fn dynamic_operands(mut self) -> Spec {
        self.dynamic_operands = true;
        self
    }

    /// The same options, ending at the first operand.
    pub(crate) const fn in_order(mut self) -> Spec {
        self.in_order = true;
        self
    }

    fn short(&self, c: char) -> Option<Arity> {
        if c == ':' || c == '#' {
            return None;
        }
        let b = self.shorts.as_bytes();
        let i = self.shorts.find(c)?;
        let after = &b[i + c.len_utf8()..];
        Some(match after {
            [b':', b':', ..] => Arity::Optional,
            [b':', ..] => Arity::Required,
            _ => Arity::No,
        })
    }

    fn numbers(&self) -> bool {
        self.shorts.contains('#')
    }

    fn longs(&self) -> impl Iterator<Item = (&'static str, Arity)> {
        self.longs.split_whitespace().map(|l| {
            if let Some(n) = l.strip_suffix('=') {
                (n, Arity::Required)
            } else if let Some(n) = l.strip_suffix('?') {
                (n, Arity::Optional)
            } else {
                (l, Arity::No)
            }
        })
    }

    /// Resolves a long option name as getopt_long does: an exact match, else a unique prefix.
    pub(crate) fn long(&self, name: &str) -> Result<(&'static str, Arity), Problem> {
        if let Some(hit) = self.longs().find(|(n, _)| *n == name) {
            return Ok(hit);
        }
        let hits: Vec<_> = self.longs().filter(|(n, _)| n.starts_with(name)).collect();
        match hits.as_slice() {
            [one] => Ok(*one),
            [] => Err(Problem::Unknown(format!("--{name}"))),
            many => Err(Problem::Ambiguous(
                format!("--{name}"),
                many.iter().map(|(n, _)| format!("--{n}")).collect(),
            )),
        }
    }
}

/// An option's name: a short letter or a (resolved, full) long name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Name {
    Short(char),
    Long(&'static str),
}

/// One option as read.
#[derive(Debug, Clone)]
pub(crate) struct Opt {
    pub(crate) name: Name,
    /// Its value, when it has one (attached values become static words).
    pub(crate) value: Option<Word>,
}

impl Opt {
    /// Whether this is the short option `short` or the long option `long` (either may be empty).
    pub(crate) fn is(&self, short: char, long: &str) -> bool {
        match self.name {
            Name::Short(c) => c == short,
            Name::Long(l) => !long.is_empty() && l == long,
        }
    }
}

/// Why the options could not be read with certainty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// An option the table does not have.
    Unknown(String),
    /// A long-option prefix that fits several options.
    Ambiguous(String, Vec<String>),
    /// A word computed at run time where an option may stand.
    Dynamic(String),
    /// An option that needs a value is the last word.
    MissingValue(String),
}

impl Problem {
    /// The problem as a clause (`` `--frob` is an option Toolshed does not know ``).
    pub(crate) fn describe(&self, program: &str) -> String {
        match self {
            Problem::Unknown(o) => {
                format!("`{o}` is an option of {program} that Toolshed does not know")
            }
            Problem::Ambiguous(o, c) => format!(
                "`{o}` abbreviates more than one option of {program} ({})",
                c.join(", ")
            ),
            Problem::Dynamic(w) => {
                format!("`{w}` is computed at run time and could be an option of {program}")
            }
            Problem::MissingValue(o) => format!("`{program} {o}` is missing its value"),
        }
    }
}

/// Options and operands of one command.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parsed<'a> {
    pub(crate) opts: Vec<Opt>,
    pub(crate) operands: Vec<&'a Word>,
    /// With [`Spec::in_order`]: the index of the first operand (the command a wrapper runs).
    pub(crate) rest: usize,
    /// The first thing that could not be read; reading stops there.
    pub(crate) problem: Option<Problem>,
}

impl<'a> Parsed<'a> {
    pub(crate) fn has(&self, short: char, long: &str) -> bool {
        self.opts.iter().any(|o| o.is(short, long))
    }

    /// The values given to an option, in order.
    pub(crate) fn values(&self, short: char, long: &str) -> Vec<&Word> {
        self.opts
            .iter()
            .filter(|o| o.is(short, long))
            .filter_map(|o| o.value.as_ref())
            .collect()
    }
}

/// Reads `args` with `spec`.
pub(crate) fn parse<'a>(spec: &Spec, args: &'a [Word]) -> Parsed<'a> {
    let mut p = Parsed {
        rest: args.len(),
        ..Parsed::default()
    };
    let mut i = 0;
    let mut ended = false;
    while i < args.len() {
        let w = &args[i];
        let Some(t) = w.literal() else {
            if !ended && w.may_be_flag {
                // `--name=$X`: the option is known, only its value is not.
                if let Some(name) = w
                    .prefix
                    .strip_prefix("--")
                    .and_then(|n| n.split_once('='))
                    .map(|(n, _)| n)
                {
                    match spec.long(name) {
                        Ok((n, a)) if a != Arity::No => {
                            p.opts.push(Opt {
                                name: Name::Long(n),
                                value: Some(w.clone()),
                            });
                            i += 1;
                            continue;
                        }
                        _ => {}
                    }
                }
                if spec.dynamic_operands && !spec.in_order {
                    p.operands.push(w);
                    i += 1;
                    continue;
                }
                p.problem = Some(Problem::Dynamic(w.raw.clone()));
                p.rest = i;
                return p;
            }
            if spec.in_order && !ended {
                p.rest = i;
                p.operands.extend(args[i..].iter());
                return p;
            }
            p.operands.push(w);
            i += 1;
            continue;
        };
        if ended || !t.starts_with('-') || t == "-" {
            if spec.in_order {
                p.rest = i;
                p.operands.extend(args[i..].iter());
                return p;
            }
            p.operands.push(w);
            i += 1;
            continue;
        }
        if t == "--" {
            ended = true;
            if spec.in_order {
                p.rest = i + 1;
                p.operands.extend(args[i + 1..].iter());
                return p;
            }
            i += 1;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let (full, arity) = match spec.long(name) {
                Ok(hit) => hit,
                Err(problem) => {
                    p.problem = Some(problem);
                    p.rest = i;
                    return p;
                }
            };
            let value = match (arity, attached) {
                (Arity::No, Some(_)) => {
                    p.problem = Some(Problem::Unknown(t.to_string()));
                    p.rest = i;
                    return p;
                }
                (_, Some(v)) => Some(Word::fixed(v)),
                (Arity::Required, None) => {
                    i += 1;
                    match args.get(i) {
                        Some(v) => Some(v.clone()),
                        None => {
                            p.problem = Some(Problem::MissingValue(format!("--{full}")));
                            p.rest = i;
                            return p;
                        }
                    }
                }
                _ => None,
            };
            p.opts.push(Opt {
                name: Name::Long(full),
                value,
            });
            i += 1;
            continue;
        }
        // A cluster of short options.
        let cluster = &t[1..];
        if spec.numbers() && cluster.chars().all(|c| c.is_ascii_digit()) {
            p.opts.push(Opt {
                name: Name::Short('#'),
                value: Some(Word::fixed(cluster)),
            });
            i += 1;
            continue;
        }
        for (k, c) in cluster.char_indices() {
            let Some(arity) = spec.short(c) else {
                p.problem = Some(Problem::Unknown(format!("-{c}")));
                p.rest = i;
                return p;
            };
            let rest = &cluster[k + c.len_utf8()..];
            match arity {
                Arity::No => p.opts.push(Opt {
                    name: Name::Short(c),
                    value: None,
                }),
                Arity::Optional => {
                    p.opts.push(Opt {
                        name: Name::Short(c),
                        value: (!rest.is_empty()).then(|| Word::fixed(rest)),
                    });
                    break;
                }
                Arity::Required => {
                    let value = if rest.is_empty() {
                        i += 1;
                        match args.get(i) {
                            Some(v) => v.clone(),
                            None => {
                                p.problem = Some(Problem::MissingValue(format!("-{c}")));
                                p.rest = i;
                                return p;
                            }
                        }
                    } else {
                        Word::fixed(rest)
                    };
                    p.opts.push(Opt {
                        name: Name::Short(c),
                        value: Some(value),
                    });
                    break;
                }
            }
        }
        i += 1;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<Word> {
        args.iter().map(|a| Word::fixed(a)).collect()
    }

    const ENV: Spec = Spec::new(
        "0C:S:iu:v",
        "chdir= debug ignore-environment null split-string= unset= version help",
    )
    .in_order();
    const SED: Spec = Spec::new(
        "Ee:f:i::l:nrsuz",
        "debug expression= file= in-place? line-length= null-data posix quiet regexp-extended sandbox separate silent unbuffered",
    );

    #[test]
    fn long_prefixes_resolve_like_getopt_long() {
        let a = words(&["--sp=rm -rf x", "ls"]);
        let p = parse(&ENV, &a);
        assert!(p.has('S', "split-string"), "{p:?}");
        assert_eq!(p.rest, 1);
        let a = words(&["--u", "X", "ls"]);
        let p = parse(&ENV, &a);
        assert_eq!(p.values('u', "unset")[0].display(), "X");
        assert_eq!(p.rest, 2);
        // `--s` fits --split-string only; `--d` is --debug; `--x` is nothing.
        assert!(parse(&ENV, &words(&["--s", "ls"])).has('S', "split-string"));
        assert_eq!(
            parse(&ENV, &words(&["--x"])).problem,
            Some(Problem::Unknown("--x".into()))
        );
        let w1 = words(&["--s", "p"]);
        let p = parse(&SED, &w1);
        assert!(matches!(p.problem, Some(Problem::Ambiguous(..))), "{p:?}");
        // An exact name wins over longer names it is a prefix of.
        let spec = Spec::new("", "out output");
        assert!(parse(&spec, &words(&["--out"])).has('\0', "out"));
        // A flag given a value is an error for getopt_long, and unknown here.
        assert!(parse(&ENV, &words(&["--debug=1"])).problem.is_some());
    }

    #[test]
    fn short_clusters_take_values() {
        let w2 = words(&["-ne", "p", "-i.bak", "f"]);
        let p = parse(&SED, &w2);
        assert!(p.has('n', ""));
        assert_eq!(p.values('e', "")[0].display(), "p");
        assert_eq!(p.values('i', "")[0].display(), ".bak");
        assert_eq!(p.operands.len(), 1);
        let w3 = words(&["-i", "s/a/b/", "f"]);
        let p = parse(&SED, &w3);
        assert!(p.values('i', "").is_empty());
        assert_eq!(p.operands.len(), 2);
        let w4 = words(&["-nes/a/b/"]);
        let p = parse(&SED, &w4);
        assert_eq!(p.values('e', "")[0].display(), "s/a/b/");
        assert_eq!(
            parse(&SED, &words(&["-e"])).problem,
            Some(Problem::MissingValue("-e".into()))
        );
        assert_eq!(
            parse(&SED, &words(&["-K"])).problem,
            Some(Problem::Unknown("-K".into()))
        );
    }

    #[test]
    fn in_order_stops_at_the_command_and_permutes_otherwise() {
        let w5 = words(&["-u", "X", "ls", "-l"]);
        let p = parse(&ENV, &w5);
        assert_eq!(p.rest, 2);
        assert!(p.problem.is_none());
        let w6 = words(&["-i", "--", "-x"]);
        let p = parse(&ENV, &w6);
        assert_eq!(p.rest, 2);
        let w7 = words(&["p", "f", "-n"]);
        let p = parse(&SED, &w7);
        assert!(p.has('n', ""));
        assert_eq!(p.operands.len(), 2);
        let w8 = words(&["--", "-n"]);
        let p = parse(&SED, &w8);
        assert!(!p.has('n', ""));
        assert_eq!(p.operands.len(), 1);
    }
}
