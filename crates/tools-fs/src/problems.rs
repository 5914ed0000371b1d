//! What went wrong during a walk, counted, with a few examples for the model.

/// How many problems are kept as examples for the model.
const PROBLEM_EXAMPLES: usize = 3;

/// Things that went wrong on the way, counted, with a few examples.
#[derive(Debug, Default, Clone)]
pub(crate) struct Problems {
    /// How many.
    pub(crate) count: usize,
    /// The first few, as `path: reason`.
    pub(crate) examples: Vec<String>,
}

impl Problems {
    pub(crate) fn add(&mut self, what: String) {
        self.count += 1;
        if self.examples.len() < PROBLEM_EXAMPLES {
            self.examples.push(what);
        }
    }

    pub(crate) fn merge(&mut self, other: Problems) {
        self.count += other.count;
        for e in other.examples {
            if self.examples.len() < PROBLEM_EXAMPLES {
                self.examples.push(e);
            }
        }
    }

    /// A sentence for the output, or `None` when nothing went wrong.
    pub(crate) fn notice(&self, what: &str) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        Some(format!(
            "[{} {what} could not be read and were skipped, e.g. {}]",
            self.count,
            self.examples.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_keep_a_few_examples() {
        let mut p = Problems::default();
        for i in 0..10 {
            p.add(format!("f{i}: denied"));
        }
        assert_eq!(p.count, 10);
        assert_eq!(p.examples.len(), PROBLEM_EXAMPLES);
        assert!(p.notice("files").unwrap().starts_with("[10 files"));
        assert!(Problems::default().notice("files").is_none());
    }
}
