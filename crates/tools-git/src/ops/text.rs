//! Text shared by the operations: dates, patches, file lists.

use git2::{Delta, Diff, DiffFormat, DiffStatsFormat, Oid, Repository, Signature, Time};
use serde_json::{Value, json};
use tool_core::{CancellationToken, ToolError};

use super::git_error;

/// A patch larger than this stops being collected (the output is cut far below it anyway).
pub(crate) const MAX_PATCH_BYTES: usize = 16 * 1024 * 1024;
/// The most entries a structured list carries.
pub(crate) const MAX_STRUCTURED: usize = 1000;

/// A Unix time as UTC ISO-8601: `2026-01-02T03:04:05Z`.
pub(crate) fn iso_utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A signature's time as UTC ISO-8601.
pub(crate) fn when(time: Time) -> String {
    iso_utc(time.seconds())
}

/// `Name <email>` of a signature (lossy for non-UTF-8 bytes).
pub(crate) fn person(sig: &Signature<'_>) -> String {
    format!(
        "{} <{}>",
        String::from_utf8_lossy(sig.name_bytes()),
        String::from_utf8_lossy(sig.email_bytes())
    )
}

/// A signature as JSON.
pub(crate) fn person_json(sig: &Signature<'_>) -> Value {
    json!({
        "name": String::from_utf8_lossy(sig.name_bytes()),
        "email": String::from_utf8_lossy(sig.email_bytes()),
        "date": when(sig.when()),
    })
}

/// The shortest unambiguous abbreviation of an object id (at least 7 characters).
pub(crate) fn short(repo: &Repository, id: Oid) -> String {
    repo.find_object(id, None)
        .ok()
        .and_then(|o| o.short_id().ok())
        .and_then(|b| b.as_str().ok().map(str::to_string))
        .unwrap_or_else(|| id.to_string()[..7].to_string())
}

/// The unified patch text of `diff`, as `git diff` prints it.
pub(crate) fn patch_text(
    diff: &Diff<'_>,
    cancel: &CancellationToken,
    readable: &dyn Fn(&str) -> bool,
) -> Result<(String, bool), ToolError> {
    let mut out: Vec<u8> = Vec::new();
    let mut stopped = false;
    let mut withheld: Vec<String> = Vec::new();
    let result = diff.print(DiffFormat::Patch, |delta, _hunk, line| {
        if cancel.is_cancelled() {
            return false;
        }
        // A file the policy keeps from being read (a rule such as `read(secrets/**)`) is named,
        // never printed: the call declared only the paths it was given.
        let hidden = [delta.old_file().path(), delta.new_file().path()]
            .into_iter()
            .flatten()
            .map(|p| p.to_string_lossy().into_owned())
            .find(|p| !readable(p));
        if let Some(p) = hidden {
            if !withheld.contains(&p) {
                out.extend_from_slice(
                    format!(
                        "[the changes to {p} are withheld: the policy keeps it from being read]\n"
                    )
                    .as_bytes(),
                );
                withheld.push(p);
            }
            return true;
        }
        if out.len() > MAX_PATCH_BYTES {
            stopped = true;
            return false;
        }
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        true
    });
    super::check_cancel(cancel)?;
    if let Err(e) = result
        && !stopped
    {
        return Err(git_error(e, "print the diff"));
    }
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if stopped {
        text.push_str(&format!(
            "\n[the patch was longer than {} MiB and stopped here; pass paths to narrow it]\n",
            MAX_PATCH_BYTES / (1024 * 1024)
        ));
    }
    Ok((text, stopped))
}

/// ` 2 files changed, 3 insertions(+), 1 deletion(-)`, or empty for an empty diff.
pub(crate) fn stats_line(diff: &Diff<'_>) -> Result<(String, Value), ToolError> {
    let stats = diff
        .stats()
        .map_err(|e| git_error(e, "count the changes"))?;
    let json = json!({
        "files_changed": stats.files_changed(),
        "insertions": stats.insertions(),
        "deletions": stats.deletions(),
    });
    if stats.files_changed() == 0 {
        return Ok((String::new(), json));
    }
    let buf = stats
        .to_buf(DiffStatsFormat::SHORT, 80)
        .map_err(|e| git_error(e, "count the changes"))?;
    Ok((
        String::from_utf8_lossy(&buf).trim_end().to_string() + "\n",
        json,
    ))
}

/// The files of a diff as JSON: path, status and line counts.
pub(crate) fn files_json(diff: &Diff<'_>) -> Value {
    let mut files = Vec::new();
    for (i, delta) in diff.deltas().enumerate() {
        if i >= MAX_STRUCTURED {
            break;
        }
        let (add, del) = git2::Patch::from_diff(diff, i)
            .ok()
            .flatten()
            .and_then(|p| p.line_stats().ok())
            .map(|(_, a, d)| (a, d))
            .unwrap_or((0, 0));
        let path = |f: git2::DiffFile<'_>| f.path().map(|p| p.to_string_lossy().into_owned());
        files.push(json!({
            "path": path(delta.new_file()).or_else(|| path(delta.old_file())),
            "old_path": path(delta.old_file()),
            "status": delta_name(delta.status()),
            "additions": add,
            "deletions": del,
            "binary": delta.flags().is_binary(),
        }));
    }
    Value::Array(files)
}

/// A delta's status in words.
pub(crate) fn delta_name(delta: Delta) -> &'static str {
    match delta {
        Delta::Added => "added",
        Delta::Deleted => "deleted",
        Delta::Modified => "modified",
        Delta::Renamed => "renamed",
        Delta::Copied => "copied",
        Delta::Ignored => "ignored",
        Delta::Untracked => "untracked",
        Delta::Typechange => "typechange",
        Delta::Unreadable => "unreadable",
        Delta::Conflicted => "conflicted",
        Delta::Unmodified => "unmodified",
    }
}

/// The first line of a commit message.
pub(crate) fn subject(commit: &git2::Commit<'_>) -> String {
    String::from_utf8_lossy(commit.summary_bytes().unwrap_or(b""))
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        let cases = [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_700_000_000, "2023-11-14T22:13:20Z"),
            (-1, "1969-12-31T23:59:59Z"),
            (4_102_444_800, "2100-01-01T00:00:00Z"),
            (1_709_210_096, "2024-02-29T12:34:56Z"),
        ];
        for (secs, want) in cases {
            assert_eq!(iso_utc(secs), want, "{secs}");
        }
    }
}
