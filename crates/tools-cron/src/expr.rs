//! Schedule expressions: crontab lines (5 fields), the `cron` crate's 6/7-field form (seconds
//! first, optional year), macros (`@hourly`…), one-shot delays (`30s`, `10m`, `2h`, `1d`), and
//! time zones.
//!
//! One dialect everywhere: day-of-week numbers follow crontab in every form (0 or 7 = Sunday,
//! 1 = Monday … 6 = Saturday; names work too). The `cron` crate itself counts 1 = Sunday, so a
//! day-of-week field is expanded here and handed to it as names. When both day-of-month and
//! day-of-week are restricted, a day matches if either matches, as in Vixie cron and cronie.

use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

/// A parsed, recurring schedule in a time zone.
#[derive(Debug, Clone)]
pub struct CronExpr {
    source: String,
    normalized: String,
    tz: Tz,
    /// One schedule, or two whose union is the crontab meaning (day-of-month OR day-of-week).
    schedules: Vec<cron::Schedule>,
}

const DAY_NAMES: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

impl CronExpr {
    /// Parses `expression` in the time zone `timezone` (an IANA name such as `Europe/Berlin`;
    /// `None` is UTC). Errors are sentences for the model.
    pub fn parse(expression: &str, timezone: Option<&str>) -> Result<CronExpr, String> {
        let tz = parse_tz(timezone)?;
        let source = expression.trim().to_string();
        if source.is_empty() {
            return Err("the expression is empty; give five crontab fields such as `0 9 * * 1-5`, or a macro such as `@daily`".into());
        }
        let fields: Vec<String> = if let Some(name) = source.strip_prefix('@') {
            let six = match name.to_ascii_lowercase().as_str() {
                "yearly" | "annually" => "0 0 0 1 1 *",
                "monthly" => "0 0 0 1 * *",
                "weekly" => "0 0 0 * * 0",
                "daily" | "midnight" => "0 0 0 * * *",
                "hourly" => "0 0 * * * *",
                "reboot" => {
                    return Err("`@reboot` is not supported: jobs run on a schedule, not at start-up; use `delay` for a one-shot run".into());
                }
                _ => {
                    return Err(format!(
                        "`@{name}` is not a known macro; use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly"
                    ));
                }
            };
            six.split(' ').map(str::to_string).collect()
        } else {
            let given: Vec<&str> = source.split_whitespace().collect();
            match given.len() {
                5 => std::iter::once("0")
                    .chain(given.iter().copied())
                    .map(str::to_string)
                    .collect(),
                6 | 7 => given.iter().map(|s| s.to_string()).collect(),
                n => {
                    return Err(format!(
                        "the expression has {n} fields; give 5 (minute hour day-of-month month day-of-week), 6 (seconds first) or 7 (seconds first, year last)"
                    ));
                }
            }
        };
        let dow = expand_day_of_week(&fields[5])?;
        let dom_restricted = !matches!(fields[3].as_str(), "*" | "?");
        let dow_restricted = dow.is_some();
        let render = |dom: &str, dow: &str| {
            let mut f = fields.clone();
            f[3] = dom.to_string();
            f[5] = dow.to_string();
            f.join(" ")
        };
        let dow_text = dow.clone().unwrap_or_else(|| "*".into());
        let variants = if dom_restricted && dow_restricted {
            vec![render(&fields[3], "*"), render("*", &dow_text)]
        } else {
            vec![render(&fields[3], &dow_text)]
        };
        let mut schedules = Vec::with_capacity(variants.len());
        for v in &variants {
            schedules.push(cron::Schedule::from_str(v).map_err(|e| {
                format!("`{source}` is not a valid schedule ({e}); fields are minute hour day-of-month month day-of-week, e.g. `30 2 * * 1-5`")
            })?);
        }
        Ok(CronExpr {
            normalized: variants.join(" | "),
            source,
            tz,
            schedules,
        })
    }

    /// The expression as given.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The form handed to the `cron` crate (seconds first, day-of-week as names).
    pub fn normalized(&self) -> &str {
        &self.normalized
    }

    /// The time zone.
    pub fn timezone(&self) -> Tz {
        self.tz
    }

    /// The first occurrence strictly after `t`.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = t.with_timezone(&self.tz);
        self.schedules
            .iter()
            .filter_map(|s| s.after(&local).next())
            .min()
            .map(|d| d.with_timezone(&Utc))
    }

    /// The shortest gap between two consecutive occurrences among the next `samples` after `t`.
    /// Several second values in one minute count as a gap under a minute at once.
    pub fn min_gap(&self, t: DateTime<Utc>, samples: usize) -> Option<Duration> {
        use cron::TimeUnitSpec;
        if self.schedules.iter().any(|s| s.seconds().count() > 1) {
            return Some(Duration::seconds(59));
        }
        let mut prev: Option<DateTime<Utc>> = None;
        let mut min: Option<Duration> = None;
        let mut at = t;
        for _ in 0..samples {
            let Some(next) = self.next_after(at) else {
                break;
            };
            if let Some(p) = prev {
                let gap = next - p;
                min = Some(min.map_or(gap, |m: Duration| m.min(gap)));
            }
            prev = Some(next);
            at = next;
        }
        min
    }
}

/// Parses an IANA time zone name (`None`: UTC).
pub(crate) fn parse_tz(timezone: Option<&str>) -> Result<Tz, String> {
    match timezone.map(str::trim) {
        None | Some("") => Ok(Tz::UTC),
        Some(name) => Tz::from_str(name).map_err(|_| {
            format!("`{name}` is not a known time zone; use an IANA name such as `UTC`, `Europe/Berlin` or `America/New_York`")
        }),
    }
}

/// Parses a one-shot delay: a positive whole number with a unit `s`, `m`, `h` or `d`
/// (`90s`, `10m`, `2h`, `1d`), at most 366 days.
pub fn parse_delay(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{text}` is not a delay; write a whole number and a unit: `30s`, `10m`, `2h` or `1d`"
        )
    };
    if t.len() < 2 || !t.is_ascii() {
        return Err(bad());
    }
    let (num, unit) = t.split_at(t.len() - 1);
    let n: i64 = num.parse().map_err(|_| bad())?;
    if n <= 0 {
        return Err(format!("the delay `{text}` must be positive"));
    }
    let secs = match unit {
        "s" => n,
        "m" => n.checked_mul(60).ok_or_else(bad)?,
        "h" => n.checked_mul(3600).ok_or_else(bad)?,
        "d" => n.checked_mul(86_400).ok_or_else(bad)?,
        _ => return Err(bad()),
    };
    if secs > 366 * 86_400 {
        return Err(format!(
            "the delay `{text}` is longer than a year; use a cron expression for far-off dates"
        ));
    }
    Ok(Duration::seconds(secs))
}

/// Expands a crontab day-of-week field into the `cron` crate's form (names), or `None` when it
/// means every day.
fn expand_day_of_week(field: &str) -> Result<Option<String>, String> {
    if matches!(field, "*" | "?") {
        return Ok(None);
    }
    let mut days = [false; 7];
    for item in field.split(',') {
        let (base, step) = match item.split_once('/') {
            Some((b, s)) => {
                let step: usize = s.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                    format!("`{item}` in the day-of-week field has a bad step; write e.g. `*/2` or `1-5/2`")
                })?;
                (b, Some(step))
            }
            None => (item, None),
        };
        let (lo, hi) = if matches!(base, "*" | "?") {
            (0, 6)
        } else if let Some((a, b)) = base.split_once('-') {
            let (a, b) = (day_number(a)?, day_number(b)?);
            if a > b {
                return Err(format!(
                    "the day-of-week range `{base}` runs backwards; write it low to high (0 or 7 = Sunday), e.g. `5-7` for Friday to Sunday"
                ));
            }
            (a, b)
        } else {
            let d = day_number(base)?;
            (d, if step.is_some() { 6 } else { d })
        };
        let mut d = lo;
        while d <= hi {
            days[d % 7] = true;
            d += step.unwrap_or(1);
        }
    }
    if days.iter().all(|d| *d) {
        return Ok(None);
    }
    Ok(Some(
        days.iter()
            .enumerate()
            .filter(|(_, on)| **on)
            .map(|(i, _)| DAY_NAMES[i])
            .collect::<Vec<_>>()
            .join(","),
    ))
}

/// A crontab day number (0–7, 0 and 7 both Sunday) or a name (`sun`, `monday`…).
fn day_number(text: &str) -> Result<usize, String> {
    if let Ok(n) = text.parse::<usize>() {
        if n <= 7 {
            return Ok(n);
        }
        return Err(format!(
            "day of week `{n}` is out of range; use 0–7 (0 and 7 are Sunday) or a name such as `mon`"
        ));
    }
    let lower = text.to_ascii_lowercase();
    let names = [
        ("sun", "sunday"),
        ("mon", "monday"),
        ("tue", "tuesday"),
        ("wed", "wednesday"),
        ("thu", "thursday"),
        ("fri", "friday"),
        ("sat", "saturday"),
    ];
    names
        .iter()
        .position(|(short, long)| lower == *short || lower == *long)
        .ok_or_else(|| {
            format!(
                "`{text}` is not a day of the week; use 0–7 (0 and 7 are Sunday) or a name such as `mon` (`L`, `W` and `#` are not supported)"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Datelike, TimeZone, Timelike, Weekday};

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// (expression, time zone, after, expected next occurrence). 2026-11-30 is a Monday.
    #[test]
    fn next_run_table() {
        let cases: &[(&str, Option<&str>, &str, &str)] = &[
            // Five crontab fields: seconds are 0.
            (
                "*/15 * * * *",
                None,
                "2026-11-30T10:07:00Z",
                "2026-11-30T10:15:00Z",
            ),
            (
                "0 9 * * *",
                None,
                "2026-11-30T09:00:00Z",
                "2026-12-01T09:00:00Z",
            ),
            // Day-of-week: 1 is Monday, 0 and 7 are Sunday.
            (
                "0 9 * * 1",
                None,
                "2026-11-30T10:00:00Z",
                "2026-12-07T09:00:00Z",
            ),
            (
                "0 9 * * 0",
                None,
                "2026-11-30T10:00:00Z",
                "2026-12-06T09:00:00Z",
            ),
            (
                "0 9 * * 7",
                None,
                "2026-11-30T10:00:00Z",
                "2026-12-06T09:00:00Z",
            ),
            (
                "0 9 * * sun",
                None,
                "2026-11-30T10:00:00Z",
                "2026-12-06T09:00:00Z",
            ),
            // Ranges and steps.
            (
                "0 9 * * 1-5",
                None,
                "2026-12-04T10:00:00Z",
                "2026-12-07T09:00:00Z",
            ),
            (
                "0 9 * * 5-7",
                None,
                "2026-11-30T10:00:00Z",
                "2026-12-04T09:00:00Z",
            ),
            (
                "0 9 * * 1-5/2",
                None,
                "2026-12-01T10:00:00Z",
                "2026-12-02T09:00:00Z",
            ),
            (
                "0 0-23/6 * * *",
                None,
                "2026-11-30T07:00:00Z",
                "2026-11-30T12:00:00Z",
            ),
            (
                "30 2 1,15 * *",
                None,
                "2026-11-30T00:00:00Z",
                "2026-12-01T02:30:00Z",
            ),
            // Day-of-month OR day-of-week when both are restricted (the 13th, or any Friday).
            (
                "0 0 13 * 5",
                None,
                "2026-11-30T00:00:00Z",
                "2026-12-04T00:00:00Z",
            ),
            (
                "0 0 13 * 5",
                None,
                "2026-12-11T01:00:00Z",
                "2026-12-13T00:00:00Z",
            ),
            // Six and seven fields, seconds first.
            (
                "0 30 9 * * *",
                None,
                "2026-11-30T10:00:00Z",
                "2026-12-01T09:30:00Z",
            ),
            (
                "0 0 12 1 1 * 2028",
                None,
                "2026-11-30T00:00:00Z",
                "2028-01-01T12:00:00Z",
            ),
            // Macros.
            (
                "@hourly",
                None,
                "2026-11-30T10:07:00Z",
                "2026-11-30T11:00:00Z",
            ),
            (
                "@daily",
                None,
                "2026-11-30T10:07:00Z",
                "2026-12-01T00:00:00Z",
            ),
            (
                "@weekly",
                None,
                "2026-11-30T10:07:00Z",
                "2026-12-06T00:00:00Z",
            ),
            (
                "@monthly",
                None,
                "2026-11-30T10:07:00Z",
                "2026-12-01T00:00:00Z",
            ),
            (
                "@yearly",
                None,
                "2026-11-30T10:07:00Z",
                "2027-01-01T00:00:00Z",
            ),
            // Time zones: 09:00 in Berlin is 08:00 UTC in winter, 07:00 UTC in summer.
            (
                "0 9 * * *",
                Some("Europe/Berlin"),
                "2026-11-30T10:00:00Z",
                "2026-12-01T08:00:00Z",
            ),
            (
                "0 9 * * *",
                Some("Europe/Berlin"),
                "2026-07-01T10:00:00Z",
                "2026-07-02T07:00:00Z",
            ),
            (
                "0 9 * * *",
                Some("America/New_York"),
                "2026-11-30T10:00:00Z",
                "2026-11-30T14:00:00Z",
            ),
        ];
        for (expr, tz, after, want) in cases {
            let e = CronExpr::parse(expr, *tz).unwrap_or_else(|err| panic!("{expr}: {err}"));
            assert_eq!(
                e.next_after(at(after)),
                Some(at(want)),
                "{expr} in {tz:?} after {after} (normalized: {})",
                e.normalized()
            );
        }
    }

    #[test]
    fn weekday_numbers_match_chrono() {
        // Every crontab number lands on the weekday chrono calls it.
        let monday = Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap();
        assert_eq!(monday.weekday(), Weekday::Mon);
        for n in 0..=7u32 {
            let e = CronExpr::parse(&format!("0 12 * * {n}"), None).unwrap();
            let next = e.next_after(monday).unwrap();
            assert_eq!(next.weekday().num_days_from_sunday(), n % 7, "day {n}");
            assert_eq!(next.hour(), 12);
        }
    }

    #[test]
    fn bad_expressions_are_refused_with_a_reason() {
        let cases: &[(&str, Option<&str>, &str)] = &[
            ("", None, "empty"),
            ("* * *", None, "3 fields"),
            ("* * * * * * * *", None, "8 fields"),
            ("61 * * * *", None, "not a valid schedule"),
            ("0 9 * * 8", None, "out of range"),
            ("0 9 * * 5-1", None, "backwards"),
            ("0 9 * * 1#2", None, "not a day of the week"),
            ("0 9 * * L", None, "not a day of the week"),
            ("0 9 * * */0", None, "bad step"),
            ("@reboot", None, "not supported"),
            ("@often", None, "not a known macro"),
            ("0 9 * * *", Some("Mars/Olympus"), "not a known time zone"),
        ];
        for (expr, tz, want) in cases {
            let err = CronExpr::parse(expr, *tz).expect_err(expr);
            assert!(err.contains(want), "{expr}: {err}");
        }
    }

    #[test]
    fn min_gap_sees_sub_minute_and_dense_hours() {
        let now = at("2026-11-30T10:00:00Z");
        let gap = |e: &str| CronExpr::parse(e, None).unwrap().min_gap(now, 500).unwrap();
        assert!(gap("*/10 * * * * *") < Duration::seconds(60));
        assert_eq!(gap("* * * * *"), Duration::seconds(60));
        assert_eq!(gap("*/5 * * * *"), Duration::seconds(300));
        // Dense only at 03:00: the sample starts at the next 03:00 and sees it.
        assert_eq!(gap("* 3 * * *"), Duration::seconds(60));
        assert_eq!(gap("@daily"), Duration::seconds(86_400));
    }

    #[test]
    fn delays() {
        assert_eq!(parse_delay("30s").unwrap(), Duration::seconds(30));
        assert_eq!(parse_delay("10m").unwrap(), Duration::seconds(600));
        assert_eq!(parse_delay("2h").unwrap(), Duration::seconds(7200));
        assert_eq!(parse_delay("1d").unwrap(), Duration::seconds(86_400));
        for bad in [
            "",
            "s",
            "10",
            "-5m",
            "0s",
            "1w",
            "1.5h",
            "99999999999999999d",
            "400d",
            "١٠m",
        ] {
            assert!(parse_delay(bad).is_err(), "{bad}");
        }
    }
}
