//! Bash's own evaluation points: `[[ … ]]`, arithmetic (which evaluates variables' values and
//! array subscripts, and so can run the command substitutions in them), and code fetched from
//! the network and fed to a shell or an interpreter.

use brush_parser::ast;
use tool_core::Risk;

use super::arith::{runs_code, scan};
use super::programs::Value;
use super::walk::Walker;
use super::{Reach, Unknown};

impl Walker {
    /// Checks a text bash evaluates as arithmetic: no command substitution in it, the variables
    /// it assigns checked as assignments, the variables it reads noted.
    pub(crate) fn arith(&mut self, text: &str, context: &str) -> Result<(), Unknown> {
        if runs_code(text) {
            return Err(Unknown(format!(
                "{context} (`{text}`) is evaluated as arithmetic, and bash runs the command substitutions in its array subscripts; compute the value in separate steps"
            )));
        }
        let a = scan(text);
        for n in a.assigns {
            self.assignment(&n, Value::Plain, false)?;
        }
        for n in a.reads {
            self.arith_reads
                .push((n, format!("{context} (`{text}`) is arithmetic")));
        }
        Ok(())
    }

    /// Marks code runners among `commands[from..]` that were fed code from a network command
    /// among `commands[net_from..net_to]`.
    pub(crate) fn fetched_code(
        &mut self,
        net_from: usize,
        net_to: usize,
        from: usize,
        stdin: bool,
    ) {
        let fetched = self.commands[net_from..net_to.min(self.commands.len())]
            .iter()
            .find(|c| c.network)
            .map(|c| c.program.clone());
        let Some(source) = fetched else {
            return;
        };
        let runners: Vec<usize> = self
            .runners
            .iter()
            .filter(|r| r.index >= from && if stdin { r.stdin } else { r.args || r.stdin })
            .map(|r| r.index)
            .collect();
        for i in runners {
            let c = &mut self.commands[i];
            c.reach = Reach::FetchedCode;
            c.reach_reason = format!("runs code that `{source}` fetched from the network");
            c.risk = Risk::High;
            c.reason = c.reach_reason.clone();
        }
    }

    /// `[[ … ]]`: its words are expanded (substitutions run), `-v NAME` evaluates a subscript,
    /// and the operands of `-eq`, `-lt` … are evaluated as arithmetic.
    pub(crate) fn extended_test(&mut self, e: &ast::ExtendedTestExpr) -> Result<(), Unknown> {
        use ast::{BinaryPredicate as B, ExtendedTestExpr as E, UnaryPredicate as U};
        match e {
            E::And(a, b) | E::Or(a, b) => {
                self.extended_test(a)?;
                self.extended_test(b)
            }
            E::Not(a) | E::Parenthesized(a) => self.extended_test(a),
            E::UnaryTest(pred, w) => {
                let word = self.word(&w.value)?;
                if matches!(
                    pred,
                    U::ShellVariableIsSetAndAssigned | U::ShellVariableIsSetAndNameRef
                ) {
                    self.var_word("[[ -v", &word)?;
                }
                Ok(())
            }
            E::BinaryTest(pred, l, r) => {
                let arithmetic = matches!(
                    pred,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                );
                for w in [l, r] {
                    let word = self.word(&w.value)?;
                    if arithmetic {
                        let text = word.literal().unwrap_or(&word.raw).to_string();
                        self.arith(
                            &text,
                            &format!("the operand `{}` of `[[ … {pred} … ]]`", w.value),
                        )?;
                    }
                }
                Ok(())
            }
        }
    }
}
