//! Shell words: what a word's value is when it is static, and what could be in it when not.

use brush_parser::word::{WordPiece, WordPieceWithSource};

use super::Unknown;

/// One word of a command, after quote removal when its value is static.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word as written.
    pub raw: String,
    /// Its value, when it does not depend on anything at run time (no `$`, no substitution, no
    /// unquoted glob or brace pattern, no `$'…'`, whose meaning differs between shells).
    pub text: Option<String>,
    /// Whether its value could start with `-` (and so be taken as an option).
    pub may_be_flag: bool,
    /// Whether it holds an unquoted glob pattern (`*`, `?`, `[`), which expands to file names.
    pub glob: bool,
    /// The static text before the first dynamic part.
    pub prefix: String,
    /// The pattern (quotes removed), when globbing is its only dynamic part.
    pub pattern: Option<String>,
}

impl Word {
    /// A word whose value comes from elsewhere (a loop variable, `{}` in `find -exec`, the
    /// arguments `xargs` appends).
    pub(crate) fn dynamic(raw: &str, may_be_flag: bool) -> Word {
        Word {
            raw: raw.to_string(),
            text: None,
            may_be_flag,
            glob: false,
            prefix: String::new(),
            pattern: None,
        }
    }

    /// The static value, if any.
    pub fn literal(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// The value when static, else the word as written.
    pub fn display(&self) -> &str {
        self.text.as_deref().unwrap_or(&self.raw)
    }

    /// Whether the value is static and equal to `s`.
    pub(crate) fn is(&self, s: &str) -> bool {
        self.text.as_deref() == Some(s)
    }
}

/// Substitutions found in a word, to be analysed as commands of their own.
pub(crate) type Substitutions = Vec<String>;

/// Parses a word, returning it with the command substitutions it contains.
pub(crate) fn parse_word(
    raw: &str,
    options: &brush_parser::ParserOptions,
) -> Result<(Word, Substitutions), Unknown> {
    let pieces = brush_parser::word::parse(raw, options).map_err(|e| {
        Unknown(format!(
            "the word `{raw}` could not be parsed ({e}); quote it plainly"
        ))
    })?;
    let mut b = Builder::default();
    b.pieces(raw, &pieces, false)?;
    let subs = std::mem::take(&mut b.subs);
    Ok((b.finish(raw), subs))
}

/// Parses the body of an unquoted here-document for the substitutions it runs.
pub(crate) fn heredoc_substitutions(
    body: &str,
    options: &brush_parser::ParserOptions,
) -> Result<Substitutions, Unknown> {
    let pieces = brush_parser::word::parse_heredoc(body, options).map_err(|e| {
        Unknown(format!(
            "a here-document could not be parsed ({e}); quote its delimiter (<<'EOF') so nothing in it runs"
        ))
    })?;
    let mut b = Builder::default();
    b.pieces(body, &pieces, true)?;
    Ok(b.subs)
}

#[derive(Default)]
struct Builder {
    text: String,
    dynamic: bool,
    glob: bool,
    prefix: Option<String>,
    subs: Substitutions,
}

impl Builder {
    fn mark_dynamic(&mut self) {
        if self.prefix.is_none() {
            self.prefix = Some(self.text.clone());
        }
        self.dynamic = true;
    }

    fn finish(self, raw: &str) -> Word {
        let prefix = self.prefix.clone().unwrap_or_else(|| self.text.clone());
        let fixed = !self.dynamic && !self.glob;
        let may_be_flag = if fixed {
            self.text.starts_with('-')
        } else {
            prefix.is_empty() || prefix.starts_with('-')
        };
        Word {
            raw: raw.to_string(),
            pattern: (!self.dynamic).then(|| self.text.clone()),
            text: fixed.then_some(self.text),
            may_be_flag,
            glob: self.glob,
            prefix,
        }
    }

    fn pieces(
        &mut self,
        source: &str,
        pieces: &[WordPieceWithSource],
        quoted: bool,
    ) -> Result<(), Unknown> {
        for p in pieces {
            let span = source.get(p.start_index..p.end_index).unwrap_or(source);
            match &p.piece {
                WordPiece::Text(t) => {
                    if !quoted {
                        self.unquoted_text(t);
                    }
                    self.text.push_str(t);
                }
                WordPiece::SingleQuotedText(t) => self.text.push_str(t),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    if matches!(p.piece, WordPiece::GettextDoubleQuotedSequence(_)) {
                        self.mark_dynamic();
                    }
                    self.pieces(source, inner, true)?;
                }
                WordPiece::AnsiCQuotedText(_) => {
                    // `$'…'` is an escape-decoding string in bash and a literal `$` followed by a
                    // single-quoted string in dash: the value depends on which shell runs it.
                    self.mark_dynamic();
                }
                WordPiece::EscapeSequence(e) => {
                    let c = e.strip_prefix('\\').unwrap_or(e);
                    if c == "\n" {
                        // A line continuation.
                    } else if quoted && !matches!(c, "$" | "`" | "\"" | "\\") {
                        self.text.push_str(e);
                    } else {
                        self.text.push_str(c);
                    }
                }
                WordPiece::TildeExpansion(_) => self.mark_dynamic(),
                WordPiece::ParameterExpansion(_) => {
                    if span.contains("$(") || span.contains('`') {
                        return Err(Unknown(format!(
                            "`{span}` runs a command inside a parameter expansion, which Toolshed does not analyse; use a plain $(…) instead"
                        )));
                    }
                    self.mark_dynamic();
                }
                WordPiece::CommandSubstitution(cmd)
                | WordPiece::BackquotedCommandSubstitution(cmd) => {
                    self.subs.push(cmd.clone());
                    self.mark_dynamic();
                }
                WordPiece::ArithmeticExpression(expr) => {
                    let v = &expr.value;
                    if v.contains("$(") || v.contains('`') || v.contains('[') {
                        return Err(Unknown(format!(
                            "the arithmetic expression `{v}` contains a substitution or an array subscript, which some shells execute; compute it in separate steps"
                        )));
                    }
                    self.mark_dynamic();
                }
            }
        }
        Ok(())
    }

    fn unquoted_text(&mut self, t: &str) {
        let bracket = t.find('[').filter(|i| t[*i..].contains(']'));
        if t.contains(['*', '?']) || bracket.is_some() {
            // Pathname expansion: the value is whatever file names match.
            let cut = [t.find(['*', '?']), bracket]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(t.len());
            if self.prefix.is_none() {
                self.prefix = Some(format!("{}{}", self.text, &t[..cut]));
            }
            self.glob = true;
        }
        if t.contains('{') && t.contains('}') && (t.contains(',') || t.contains("..")) {
            // Brace expansion (bash, zsh; dash keeps it literal): treat it as unknown text.
            let cut = t.find('{').unwrap_or(t.len());
            if self.prefix.is_none() {
                self.prefix = Some(format!("{}{}", self.text, &t[..cut]));
            }
            self.dynamic = true;
        }
    }
}
