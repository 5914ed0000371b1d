//! Shell words: what a word's value is when it is static, and what could be in it when not.

use brush_parser::word::{
    Parameter, ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource,
};

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

    /// A word with a static value (an option value cut from a longer word, a file name a script
    /// names).
    pub(crate) fn fixed(text: &str) -> Word {
        Word {
            raw: text.to_string(),
            text: Some(text.to_string()),
            may_be_flag: text.starts_with('-'),
            glob: false,
            prefix: text.to_string(),
            pattern: Some(text.to_string()),
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

/// What a word makes the shell do besides producing its value.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    /// Command substitutions, to be analysed as commands of their own.
    pub(crate) subs: Vec<String>,
    /// Variables the word assigns (`${NAME:=value}`).
    pub(crate) assigns: Vec<String>,
    /// Texts bash evaluates as arithmetic (`$((…))`, `${a[i]}`, `${x:off:len}`).
    pub(crate) arith: Vec<String>,
}

/// Parses a word, returning it with the command substitutions it contains.
pub(crate) fn parse_word(
    raw: &str,
    options: &brush_parser::ParserOptions,
) -> Result<(Word, Effects), Unknown> {
    let pieces = brush_parser::word::parse(raw, options).map_err(|e| {
        Unknown(format!(
            "the word `{raw}` could not be parsed ({e}); quote it plainly"
        ))
    })?;
    let mut b = Builder::new(options);
    b.pieces(raw, &pieces, false)?;
    let effects = std::mem::take(&mut b.effects);
    Ok((b.finish(raw), effects))
}

/// Parses the body of an unquoted here-document for the substitutions it runs.
pub(crate) fn heredoc_substitutions(
    body: &str,
    options: &brush_parser::ParserOptions,
) -> Result<Effects, Unknown> {
    let pieces = brush_parser::word::parse_heredoc(body, options).map_err(|e| {
        Unknown(format!(
            "a here-document could not be parsed ({e}); quote its delimiter (<<'EOF') so nothing in it runs"
        ))
    })?;
    let mut b = Builder::new(options);
    b.pieces(body, &pieces, true)?;
    Ok(b.effects)
}

struct Builder<'o> {
    options: &'o brush_parser::ParserOptions,
    text: String,
    dynamic: bool,
    glob: bool,
    prefix: Option<String>,
    effects: Effects,
}

impl<'o> Builder<'o> {
    fn new(options: &'o brush_parser::ParserOptions) -> Builder<'o> {
        Builder {
            options,
            text: String::new(),
            dynamic: false,
            glob: false,
            prefix: None,
            effects: Effects::default(),
        }
    }

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
                    // `$'…'` decodes escapes (`\x72m` is `rm`): its value is not the text as
                    // written, so it counts as computed (and cannot name a program).
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
                WordPiece::ParameterExpansion(expr) => {
                    if span.contains("$(") || span.contains('`') {
                        return Err(Unknown(format!(
                            "`{span}` runs a command inside a parameter expansion, which Toolshed does not analyse; use a plain $(…) instead"
                        )));
                    }
                    self.parameter(expr, span)?;
                    self.mark_dynamic();
                }
                WordPiece::CommandSubstitution(cmd)
                | WordPiece::BackquotedCommandSubstitution(cmd) => {
                    self.effects.subs.push(cmd.clone());
                    self.mark_dynamic();
                }
                WordPiece::ArithmeticExpression(expr) => {
                    let v = &expr.value;
                    if v.contains("$(") || v.contains('`') {
                        return Err(Unknown(format!(
                            "the arithmetic expression `{v}` contains a command substitution, and bash evaluates array subscripts in it again, which can run commands; compute it in separate steps"
                        )));
                    }
                    self.effects.arith.push(v.clone());
                    self.mark_dynamic();
                }
            }
        }
        Ok(())
    }

    /// Checks a parameter expansion for the forms bash evaluates further: indirection
    /// (`${!name}`), prompt expansion (`${x@P}`), assignments (`${x:=v}`), subscripts and
    /// substring offsets (arithmetic).
    fn parameter(&mut self, e: &ParameterExpr, span: &str) -> Result<(), Unknown> {
        use ParameterExpr as P;
        let (parameter, indirect) = match e {
            P::VariableNames { .. } | P::MemberKeys { .. } => return Ok(()),
            P::Parameter {
                parameter,
                indirect,
            }
            | P::UseDefaultValues {
                parameter,
                indirect,
                ..
            }
            | P::AssignDefaultValues {
                parameter,
                indirect,
                ..
            }
            | P::IndicateErrorIfNullOrUnset {
                parameter,
                indirect,
                ..
            }
            | P::UseAlternativeValue {
                parameter,
                indirect,
                ..
            }
            | P::ParameterLength {
                parameter,
                indirect,
            }
            | P::RemoveSmallestSuffixPattern {
                parameter,
                indirect,
                ..
            }
            | P::RemoveLargestSuffixPattern {
                parameter,
                indirect,
                ..
            }
            | P::RemoveSmallestPrefixPattern {
                parameter,
                indirect,
                ..
            }
            | P::RemoveLargestPrefixPattern {
                parameter,
                indirect,
                ..
            }
            | P::Substring {
                parameter,
                indirect,
                ..
            }
            | P::Transform {
                parameter,
                indirect,
                ..
            }
            | P::UppercaseFirstChar {
                parameter,
                indirect,
                ..
            }
            | P::UppercasePattern {
                parameter,
                indirect,
                ..
            }
            | P::LowercaseFirstChar {
                parameter,
                indirect,
                ..
            }
            | P::LowercasePattern {
                parameter,
                indirect,
                ..
            }
            | P::ReplaceSubstring {
                parameter,
                indirect,
                ..
            } => (parameter, *indirect),
        };
        if indirect {
            return Err(Unknown(format!(
                "`{span}` reads the variable named by another variable's value, and bash evaluates an array subscript in that name, which can run commands; name the variable directly"
            )));
        }
        let name = match parameter {
            Parameter::Named(n) => Some(n.clone()),
            Parameter::NamedWithIndex { name, index } => {
                if index.contains('$') || index.contains('`') {
                    return Err(Unknown(format!(
                        "the array subscript in `{span}` is computed, and bash evaluates it as arithmetic, which can run commands; use a literal subscript"
                    )));
                }
                self.effects.arith.push(index.clone());
                Some(name.clone())
            }
            _ => None,
        };
        let mut nested: Vec<&str> = Vec::new();
        match e {
            P::Transform {
                op: ParameterTransformOp::PromptExpand,
                ..
            } => {
                return Err(Unknown(format!(
                    "`{span}` expands the value as a prompt, which runs the commands in it; print the variable plainly"
                )));
            }
            P::AssignDefaultValues { default_value, .. } => {
                if let Some(n) = name {
                    self.effects.assigns.push(n);
                }
                nested.extend(default_value.as_deref());
            }
            P::UseDefaultValues { default_value, .. } => nested.extend(default_value.as_deref()),
            P::UseAlternativeValue {
                alternative_value, ..
            } => nested.extend(alternative_value.as_deref()),
            P::IndicateErrorIfNullOrUnset { error_message, .. } => {
                nested.extend(error_message.as_deref())
            }
            P::Substring { offset, length, .. } => {
                for a in std::iter::once(offset).chain(length.as_ref()) {
                    if a.value.contains('$') || a.value.contains('`') {
                        return Err(Unknown(format!(
                            "the offset in `{span}` is computed, and bash evaluates it as arithmetic; use literal numbers"
                        )));
                    }
                    self.effects.arith.push(a.value.clone());
                }
            }
            P::RemoveSmallestSuffixPattern { pattern, .. }
            | P::RemoveLargestSuffixPattern { pattern, .. }
            | P::RemoveSmallestPrefixPattern { pattern, .. }
            | P::RemoveLargestPrefixPattern { pattern, .. }
            | P::UppercaseFirstChar { pattern, .. }
            | P::UppercasePattern { pattern, .. }
            | P::LowercaseFirstChar { pattern, .. }
            | P::LowercasePattern { pattern, .. } => nested.extend(pattern.as_deref()),
            P::ReplaceSubstring {
                pattern,
                replacement,
                ..
            } => {
                nested.push(pattern);
                nested.extend(replacement.as_deref());
            }
            _ => {}
        }
        // Words inside the expansion are expanded in turn: check them the same way.
        for text in nested {
            let pieces = brush_parser::word::parse(text, self.options).map_err(|e| {
                Unknown(format!(
                    "the word `{text}` inside `{span}` could not be parsed ({e}); quote it plainly"
                ))
            })?;
            let mut inner = Builder::new(self.options);
            inner.pieces(text, &pieces, true)?;
            self.effects.subs.extend(inner.effects.subs);
            self.effects.assigns.extend(inner.effects.assigns);
            self.effects.arith.extend(inner.effects.arith);
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
