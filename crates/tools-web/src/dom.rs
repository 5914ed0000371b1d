//! Untrusted HTML as a tree whose depth is bounded.
//!
//! html5ever builds its tree without recursion, but everything that reads the tree afterwards
//! (htmd's Markdown writer, the result-page readers) recurses once per level, so a 30 KB page of
//! 5,000 nested `<div>` would overflow the stack and abort the process — over MCP, the server of
//! every client. [`parse`] cuts the tree at [`MAX_DEPTH`] levels before anyone walks it: an
//! element at the limit keeps the text of everything below it, in document order, as one text
//! child. The structure below the cut is lost; the words are not. Nothing here recurses.
//!
//! The size of the input is bounded before it gets here: bodies are read to the network
//! layer's byte cap.

use std::cell::RefCell;
use std::rc::Rc;

use markup5ever_rcdom::{Node, NodeData};

/// The deepest level kept (real pages stay well under 40; the limit leaves room for the
/// readers' recursion on a 2 MiB thread stack, in debug builds too).
pub(crate) const MAX_DEPTH: usize = 128;

/// The document tree of `html`, cut at [`MAX_DEPTH`], and whether anything was cut.
pub(crate) fn parse(
    converter: &htmd::HtmlToMarkdown,
    html: &str,
) -> std::io::Result<(Rc<Node>, bool)> {
    let tree = converter.html_to_tree(html)?;
    let cut = cut_at(&tree, MAX_DEPTH);
    Ok((tree, cut))
}

/// Replaces the children of every element `max` levels below `root` with one text node of
/// their text; whether any was replaced.
fn cut_at(root: &Rc<Node>, max: usize) -> bool {
    let mut cut = false;
    let mut pending: Vec<(Rc<Node>, usize)> = vec![(Rc::clone(root), 0)];
    while let Some((node, depth)) = pending.pop() {
        if depth >= max {
            let deeper = node
                .children
                .borrow()
                .iter()
                .any(|c| matches!(c.data, NodeData::Element { .. }));
            if deeper {
                let text = text_below(&node);
                let leaf = Node::new(NodeData::Text {
                    contents: RefCell::new(text.into()),
                });
                leaf.parent.set(Some(Rc::downgrade(&node)));
                // The old subtree is dropped here; rcdom drops nodes without recursion.
                *node.children.borrow_mut() = vec![leaf];
                cut = true;
            }
            continue;
        }
        for child in node.children.borrow().iter() {
            pending.push((Rc::clone(child), depth + 1));
        }
    }
    cut
}

/// The text of every node below `node`, in document order, without scripts and styles; text
/// from separate nodes is kept apart by a space.
fn text_below(node: &Rc<Node>) -> String {
    let mut out = String::new();
    let mut pending: Vec<Rc<Node>> = node.children.borrow().iter().rev().cloned().collect();
    while let Some(n) = pending.pop() {
        match &n.data {
            NodeData::Text { contents } => {
                let t = contents.borrow();
                if !out.is_empty()
                    && !out.ends_with(char::is_whitespace)
                    && !t.starts_with(char::is_whitespace)
                {
                    out.push(' ');
                }
                out.push_str(&t);
            }
            NodeData::Element { name, .. } if matches!(&*name.local, "script" | "style") => {}
            _ => pending.extend(n.children.borrow().iter().rev().cloned()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(root: &Rc<Node>) -> usize {
        let mut deepest = 0;
        let mut pending = vec![(Rc::clone(root), 0)];
        while let Some((n, d)) = pending.pop() {
            deepest = deepest.max(d);
            for c in n.children.borrow().iter() {
                pending.push((Rc::clone(c), d + 1));
            }
        }
        deepest
    }

    /// (page, cut, text that must survive): each bomb beside an ordinary page of the same
    /// words that is left as it is.
    #[test]
    fn nesting_bombs_are_cut_and_their_words_kept() {
        let divs = |n: usize| format!("{}deep words{}", "<div>".repeat(n), "</div>".repeat(n));
        let unclosed = |tag: &str, n: usize| format!("{}deep words", format!("<{tag}>").repeat(n));
        // `</b>` after a block keeps the block open and nests the next one deeper.
        let misnested = format!("{}deep words", "<b><div></b>".repeat(3000));
        let rows: Vec<(String, bool)> = vec![
            (divs(5000), true),
            (divs(20), false),
            (unclosed("div", 5000), true),
            (unclosed("span", 5000), true),
            (unclosed("b", 5000), true),
            (unclosed("p", 5000), false),
            (misnested, true),
            ("<ul><li>deep words</li></ul>".into(), false),
        ];
        let converter = htmd::HtmlToMarkdown::new();
        for (html, cut) in rows {
            let (tree, was_cut) = parse(&converter, &html).unwrap();
            let label = &html[..html.len().min(40)];
            assert_eq!(was_cut, cut, "{label}");
            assert!(depth(&tree) <= MAX_DEPTH + 1, "{label}: {}", depth(&tree));
            assert!(
                converter.tree_to_markdown(&tree).contains("deep words"),
                "{label}"
            );
        }
    }
}
