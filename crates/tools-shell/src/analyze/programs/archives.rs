//! Archivers and compressors. Extracting writes the files the archive names (which may be
//! anywhere, `.git/hooks` included), so it is never counted as contained; several tar and zip
//! options run programs.

use tool_core::Risk;

use super::super::Reach;
use super::super::words::Word;
use super::getopt::parse;
use super::specs::TAR;
use super::{Class, contained, low};

/// Archivers and compressors; `None` when `key` is neither.
pub(crate) fn archive(key: &str, args: &[Word]) -> Option<Class> {
    Some(match key {
        "tar" | "gtar" => tar(args),
        "zip" => zip(args),
        "unzip" => {
            if args.iter().any(|a| {
                matches!(
                    a.display(),
                    "-l" | "-t" | "-v" | "-p" | "-c" | "-Z" | "-z" | "-lv" | "-tq"
                )
            }) {
                low()
            } else {
                extracts("`unzip` writes the files the archive names")
            }
        }
        "gzip" | "bzip2" | "xz" | "zstd" | "gunzip" | "bunzip2" | "unxz" | "unzstd" | "lzma"
        | "unlzma" => compressor(key, args),
        _ => return None,
    })
}

fn extracts(reason: &str) -> Class {
    Class::new(Risk::Medium, Reach::Unknown, reason)
}

fn compressor(key: &str, args: &[Word]) -> Class {
    let reads_only = args.iter().any(|a| {
        let t = a.display();
        if let Some(l) = t.strip_prefix("--") {
            let n = l.split('=').next().unwrap_or(l);
            n.len() >= 3
                && ["stdout", "to-stdout", "list", "test"]
                    .iter()
                    .any(|o| o.starts_with(n))
                && !["stdin", "status"].iter().any(|o| o.starts_with(n))
        } else {
            t.strip_prefix('-')
                .is_some_and(|b| !b.is_empty() && b.chars().any(|c| "clt".contains(c)))
        }
    });
    if reads_only {
        return low();
    }
    contained(format!(
        "`{key}` replaces files with their (de)compressed form"
    ))
}

/// Long options of tar that run a program.
const TAR_RUNS: &[&str] = &[
    "to-command",
    "use-compress-program",
    "checkpoint-action",
    "info-script",
    "new-volume-script",
    "rsh-command",
    "rmt-command",
];

fn tar(args: &[Word]) -> Class {
    // Old-style options: a first word without a dash is a cluster whose letters take their
    // values from the following words in order (`tar xzfC a.tgz dir`).
    let mut words: Vec<Word> = Vec::new();
    let mut rest = args;
    if let Some(first) = args.first().and_then(|w| w.literal())
        && !first.starts_with('-')
    {
        rest = &args[1..];
        let mut values = rest.iter();
        let mut taken = 0;
        for ch in first.chars() {
            words.push(Word::fixed(&format!("-{ch}")));
            let takes_value = TAR
                .shorts
                .find(ch)
                .is_some_and(|i| TAR.shorts[i + ch.len_utf8()..].starts_with(':'));
            if takes_value && let Some(v) = values.next() {
                words.push(v.clone());
                taken += 1;
            }
        }
        rest = &rest[taken..];
    }
    words.extend(rest.iter().cloned());
    let p = parse(&TAR, &words);
    if let Some(problem) = &p.problem {
        return Class::problem("tar", problem, Risk::High);
    }
    for o in &p.opts {
        if let super::getopt::Name::Long(l) = o.name
            && TAR_RUNS.contains(&l)
        {
            return Class::new(
                Risk::High,
                Reach::Unknown,
                format!("`tar --{l}` runs a program"),
            );
        }
    }
    if p.has('I', "") || p.has('F', "") {
        return Class::new(Risk::High, Reach::Unknown, "`tar -I`/`-F` runs a program");
    }
    let files = p.values('f', "file");
    if !p.has('\0', "force-local")
        && files.iter().any(|f| {
            f.display()
                .split('/')
                .next()
                .is_some_and(|h| h.contains(':'))
        })
    {
        return Class::new(
            Risk::High,
            Reach::Network,
            "a tar archive name with `host:` reaches another machine",
        )
        .net();
    }
    let extracts_files = p.has('x', "extract") || p.has('\0', "get");
    let writes = extracts_files
        || ["c", "r", "u", "A"]
            .iter()
            .any(|s| p.has(s.chars().next().unwrap_or('\0'), ""))
        || [
            "create",
            "append",
            "update",
            "catenate",
            "concatenate",
            "delete",
        ]
        .iter()
        .any(|l| p.has('\0', l));
    if p.has('\0', "remove-files") {
        return Class::new(
            Risk::Medium,
            Reach::Destructive,
            "`tar --remove-files` deletes the files it archives",
        );
    }
    if extracts_files {
        let mut c = extracts("`tar -x` writes the files the archive names");
        if p.has('P', "absolute-names") {
            c.raise(
                Risk::High,
                Reach::OutsideWrites,
                "`tar -P` extracts to absolute paths",
            );
        }
        return c;
    }
    if writes {
        contained("writes an archive")
    } else {
        low()
    }
}

fn zip(args: &[Word]) -> Class {
    for a in args {
        let t = a.display();
        let runs = if let Some(l) = t.strip_prefix("--") {
            let n = l.split('=').next().unwrap_or(l);
            n.len() >= 2 && "unzip-command".starts_with(n)
        } else {
            t.starts_with('-') && t.contains("TT")
        };
        if runs {
            return Class::new(
                Risk::High,
                Reach::Unknown,
                "`zip -TT` runs a command to test the archive",
            );
        }
        if a.literal().is_none() && a.may_be_flag {
            return Class::new(
                Risk::High,
                Reach::Unknown,
                format!(
                    "`{}` is computed at run time and could be `-TT`, which runs a command",
                    a.raw
                ),
            );
        }
    }
    contained("writes an archive")
}
