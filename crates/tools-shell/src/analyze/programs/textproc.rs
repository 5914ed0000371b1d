//! Text processors whose scripts can run programs or write files: sed, awk, ripgrep.

use tool_core::Risk;

use super::super::scripts;
use super::super::walk::Walker;
use super::super::words::Word;
use super::super::{Reach, TargetKind, Unknown};
use super::getopt::{Spec, parse};
use super::specs::SED;
use super::{Class, contained, dynamic_flag, low};

const AWK: Spec = Spec::new(
    "F:f:v:e:i:l:E:bcCd::D::ghLMnNo::Op::PrsStVW:",
    "field-separator= file= assign= source= include= load= exec= characters-as-bytes traditional copyright dump-variables? debug? gen-pot help lint? bignum use-lc-numeric non-decimal-data optimize pretty-print? profile? posix re-interval no-optimize sandbox lint-old version csv",
);

impl Walker {
    /// sed, awk and rg; `None` when `key` is none of them.
    pub(crate) fn text_program(
        &mut self,
        key: &str,
        args: &[Word],
    ) -> Result<Option<Class>, Unknown> {
        Ok(Some(match key {
            "sed" | "gsed" => self.sed(args)?,
            "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => self.awk(args)?,
            "rg" => rg(args),
            _ => return Ok(None),
        }))
    }

    fn sed(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let mut c = low();
        let p = parse(&SED, args);
        if let Some(problem) = &p.problem {
            return Ok(Class::problem("sed", problem, Risk::High));
        }
        let mut scripts_given: Vec<&Word> = p.values('e', "expression");
        let script_file = p.has('f', "file");
        let sandbox = p.has('\0', "sandbox");
        let in_place = p.has('i', "in-place");
        let mut operands = p.operands.clone();
        if scripts_given.is_empty() && !script_file {
            if operands.is_empty() {
                return Err(Unknown("sed has no script; give one".into()));
            }
            scripts_given.push(operands.remove(0));
        }
        if script_file && !sandbox {
            c.raise(
                Risk::High,
                Reach::Unknown,
                "`sed -f` runs a script file Toolshed cannot inspect (it may run commands with `e`)",
            );
        }
        for s in scripts_given {
            match s.literal() {
                None if !sandbox => c.raise(
                    Risk::High,
                    Reach::Unknown,
                    "the sed script is computed at run time",
                ),
                None => {}
                Some(text) => {
                    let effects = scripts::sed(text);
                    if let Some(why) = effects.danger
                        && !sandbox
                    {
                        // The embedded command is a shell string Toolshed does not analyse:
                        // inside the sandbox it still asks (unlike an interpreter's code,
                        // this is a command line, and ordinary sed/awk never need it).
                        c.raise(Risk::High, Reach::Unknown, why);
                    }
                    for w in effects.writes {
                        self.target(&Word::fixed(&w), TargetKind::Write)?;
                        c.raise(
                            Risk::Medium,
                            Reach::Contained,
                            "the sed script writes a file",
                        );
                    }
                }
            }
        }
        if in_place {
            let suffix = p
                .values('i', "in-place")
                .first()
                .map(|w| w.display().to_string());
            if suffix.as_deref().is_some_and(|s| s.contains(['/', '*'])) {
                return Err(Unknown(
                    "the `sed -i` backup suffix names another file or directory; use a plain suffix such as -i.bak".into(),
                ));
            }
            for f in &operands {
                self.target(f, TargetKind::Write)?;
                if let (Some(s), Some(name)) = (&suffix, f.literal()) {
                    self.target(&Word::fixed(&format!("{name}{s}")), TargetKind::Write)?;
                }
            }
            c.raise(
                Risk::Medium,
                Reach::Contained,
                "`sed -i` edits files in place",
            );
        }
        Ok(c)
    }

    fn awk(&mut self, args: &[Word]) -> Result<Class, Unknown> {
        let mut c = low();
        let p = parse(&AWK, args);
        if let Some(problem) = &p.problem {
            return Ok(Class::problem("awk", problem, Risk::High));
        }
        let sandbox = p.has('S', "sandbox");
        let from_file = p.has('f', "file") || p.has('E', "exec") || p.has('i', "include");
        if p.has('l', "load")
            || p.values('W', "")
                .iter()
                .any(|w| w.display().starts_with("exec"))
        {
            return Ok(Class::new(
                Risk::High,
                Reach::Contained,
                "awk loads program code or an extension Toolshed cannot inspect",
            )
            .opaque());
        }
        if from_file && !sandbox {
            // Code from a file can call system() unseen (found in round 10).
            c.raise(
                Risk::High,
                Reach::Contained,
                "awk loads program code from a file Toolshed cannot inspect",
            );
            c.opaque = true;
        }
        for (short, long, default) in [
            ('d', "dump-variables", "awkvars.out"),
            ('o', "pretty-print", "awkprof.out"),
            ('p', "profile", "awkprof.out"),
        ] {
            if p.has(short, long) {
                let file = p
                    .values(short, long)
                    .first()
                    .map_or(Word::fixed(default), |w| (*w).clone());
                self.target(&file, TargetKind::Write)?;
                c.raise(
                    Risk::Medium,
                    Reach::Contained,
                    format!("`awk --{long}` writes a file"),
                );
            }
        }
        let mut programs: Vec<&Word> = p.values('e', "source");
        if programs.is_empty() && !from_file {
            match p.operands.first() {
                Some(w) => programs.push(w),
                None => return Err(Unknown("awk has no program; give one".into())),
            }
        }
        for program in programs {
            match program.literal() {
                None => c.raise(
                    Risk::High,
                    Reach::Unknown,
                    "the awk program is computed at run time",
                ),
                Some(text) => {
                    let effects = scripts::awk(text);
                    if let Some(why) = effects.danger
                        && !sandbox
                    {
                        // The embedded command is a shell string Toolshed does not analyse:
                        // inside the sandbox it still asks (unlike an interpreter's code,
                        // this is a command line, and ordinary sed/awk never need it).
                        c.raise(Risk::High, Reach::Unknown, why);
                    }
                    for w in effects.writes {
                        self.target(&Word::fixed(&w), TargetKind::Write)?;
                        c.raise(
                            Risk::Medium,
                            Reach::Contained,
                            "the awk program writes a file",
                        );
                    }
                }
            }
        }
        if c.risk == Risk::Low && !c.reason.is_empty() {
            return Ok(contained(c.reason));
        }
        Ok(c)
    }
}

/// ripgrep reads its long options by exact name, so prefixes are not a concern; `--pre` and
/// `--hostname-bin` run programs.
fn rg(args: &[Word]) -> Class {
    for a in args {
        let t = a.display();
        if t.starts_with("--pre") || t.starts_with("--hostname-bin") {
            return Class::new(
                Risk::High,
                Reach::Unknown,
                format!("`rg {t}` runs a program on every file"),
            );
        }
    }
    if let Some(d) = dynamic_flag(args) {
        return Class::new(
            Risk::High,
            Reach::Unknown,
            format!(
                "`{}` is computed at run time and could be `--pre`, which runs a program",
                d.raw
            ),
        );
    }
    low()
}
