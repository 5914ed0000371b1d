//! A repository whose git config names nobody: commits and stashes use the fallback identity,
//! and say so. (The test binary hides the machine's global config from libgit2.)

use super::Fixture;

#[tokio::test]
async fn commits_fall_back_to_the_toolshed_identity_and_say_so() {
    let f = Fixture::empty();
    f.git(&["init", "-q", "-b", "main"]);
    f.write("a.txt", "a\n");
    f.ok(r#"{"operation":"add","paths":["a.txt"]}"#).await;
    let out = f
        .output(r#"{"operation":"commit","message":"anonymous"}"#)
        .await;
    let text = out.joined_text();
    assert!(
        text.contains("Author: Toolshed <toolshed@localhost>"),
        "{text}"
    );
    assert!(text.contains("fallback identity"), "{text}");
    assert_eq!(out.structured.unwrap()["fallback_identity"], true);
    assert_eq!(
        f.git(&["log", "-1", "--format=%an <%ae>|%cn <%ce>"]),
        "Toolshed <toolshed@localhost>|Toolshed <toolshed@localhost>\n"
    );

    f.write("a.txt", "b\n");
    let text = f.ok(r#"{"operation":"stash"}"#).await;
    assert!(text.contains("Toolshed <toolshed@localhost>"), "{text}");
    assert_eq!(
        f.git(&["log", "-1", "--format=%an", "refs/stash"]),
        "Toolshed\n"
    );
}
