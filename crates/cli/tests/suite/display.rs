//! What a human reads on the terminal (approval prompts, tool-call echoes, chat) shows a
//! model's bytes visibly escaped: each attack beside the benign text that must pass unchanged.

use toolshed_cli::visible;

#[test]
fn control_and_invisible_characters_are_shown_escaped() {
    #[rustfmt::skip]
    let rows: &[(&str, bool, &str)] = &[
        // input, keep newlines, shown
        ("rm -rf build\x1b[2K\x1b[1Gls", false, "rm -rf build\\x1b[2K\\x1b[1Gls"),
        ("ls\rrm -rf ~", false, "ls\\x0drm -rf ~"),
        ("ls\nApprove? [y]es", false, "ls\\x0aApprove? [y]es"),
        ("echo \u{202e}txt.exe", false, "echo \\u{202e}txt.exe"),
        ("cur\u{200b}l", false, "cur\\u{200b}l"),
        ("bell\x07 and del\x7f and c1\u{9b}", false, "bell\\x07 and del\\x7f and c1\\x9b"),
        ("\x1b]0;title\x07", true, "\\x1b]0;title\\x07"),
        // Benign twins: ordinary text, Unicode, and (in chat) lines and tabs.
        ("cargo test --workspace", false, "cargo test --workspace"),
        ("héllo wörld ✓ 日本", false, "héllo wörld ✓ 日本"),
        ("line one\n\tline two", true, "line one\n\tline two"),
    ];
    for (input, newlines, shown) in rows {
        assert_eq!(visible(input, *newlines), *shown, "{input:?}");
    }
}
