//! The days a query names: "on 4 December 2023", "December 4th, 2023",
//! "in October 2023", "summer 2023", "2023-10-04", "in 2022".
//!
//! A search prefers drawers filed on the days a query names (see
//! `fusion::DATE_WEIGHT`): an agent asking "what did we decide on 4
//! December 2023" means the conversation of that day, whose words alone
//! may not say so. Only explicit dates are read: relative ones
//! ("yesterday", "last week") depend on when the conversation happened,
//! which a query does not carry. The most precise date wins (a day over a
//! month over a season over a year); a query naming none gets `None`.

use std::sync::OnceLock;

use chrono::{Datelike, NaiveDate};
use regex::Regex;

use crate::Timestamp;

/// Days either side of a named span that still count: an event and the
/// conversation that mentions it are rarely on the same day.
pub const SLACK_DAYS: i64 = 3;

/// A span of whole days, first and last included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DaySpan {
    /// The first day.
    pub first: NaiveDate,
    /// The last day.
    pub last: NaiveDate,
}

impl DaySpan {
    /// The span widened by [`SLACK_DAYS`] on each side, as the first
    /// instant and the last instant (UTC) it covers.
    pub fn with_slack(&self) -> (Timestamp, Timestamp) {
        let first = self.first - chrono::Duration::days(SLACK_DAYS);
        let after = self.last + chrono::Duration::days(SLACK_DAYS + 1);
        let start = first.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc();
        let end = after.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc() - chrono::Duration::nanoseconds(1);
        (start, end)
    }

    /// Whether `at` falls in the span widened by [`SLACK_DAYS`].
    pub fn covers(&self, at: Timestamp) -> bool {
        let (start, end) = self.with_slack();
        start <= at && at <= end
    }
}

const MONTHS: &str = "january|february|march|april|may|june|july|august|september|october|november|december|\
                      jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec";

fn month_number(name: &str) -> Option<u32> {
    let prefix: String = name.chars().take(3).collect::<String>().to_lowercase();
    let index = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .iter()
        .position(|m| *m == prefix)?;
    u32::try_from(index + 1).ok()
}

struct Patterns {
    iso_day: Regex,
    day_month_year: Regex,
    month_day_year: Regex,
    iso_month: Regex,
    month_year: Regex,
    season_year: Regex,
    year: Regex,
}

fn patterns() -> &'static Patterns {
    static COMPILED: OnceLock<Patterns> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let build = |pattern: String| Regex::new(&pattern).expect("a valid date pattern");
        let year = r"((?:19|20)\d\d)";
        Patterns {
            iso_day: build(format!(r"\b{year}-(\d\d)-(\d\d)\b")),
            day_month_year: build(format!(r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? ({MONTHS})\.?,? {year}\b")),
            month_day_year: build(format!(r"(?i)\b({MONTHS})\.? (\d{{1,2}})(?:st|nd|rd|th)?,? {year}\b")),
            iso_month: build(format!(r"\b{year}-(\d\d)\b")),
            month_year: build(format!(r"(?i)\b({MONTHS})\.?,? (?:of )?{year}\b")),
            season_year: build(format!(r"(?i)\b(spring|summer|autumn|fall|winter) (?:of )?{year}\b")),
            year: build(format!(r"\b{year}\b")),
        }
    })
}

fn day(year: &str, month: u32, day: &str) -> Option<DaySpan> {
    let date = NaiveDate::from_ymd_opt(year.parse().ok()?, month, day.parse().ok()?)?;
    Some(DaySpan { first: date, last: date })
}

fn month(year: i32, month: u32) -> Option<DaySpan> {
    let first = NaiveDate::from_ymd_opt(year, month, 1)?;
    let next = if month == 12 { NaiveDate::from_ymd_opt(year + 1, 1, 1)? } else { first.with_month(month + 1)? };
    Some(DaySpan { first, last: next.pred_opt()? })
}

/// The days `text` names, the most precise date first; `None` when it
/// names no date.
pub fn named_span(text: &str) -> Option<DaySpan> {
    let p = patterns();
    let iso_day = || {
        let c = p.iso_day.captures(text)?;
        day(&c[1], c[2].parse().ok()?, &c[3])
    };
    let day_month_year = || {
        let c = p.day_month_year.captures(text)?;
        day(&c[3], month_number(&c[2])?, &c[1])
    };
    let month_day_year = || {
        let c = p.month_day_year.captures(text)?;
        day(&c[3], month_number(&c[1])?, &c[2])
    };
    let iso_month = || {
        let c = p.iso_month.captures(text)?;
        month(c[1].parse().ok()?, c[2].parse().ok()?)
    };
    let month_year = || {
        let c = p.month_year.captures(text)?;
        month(c[2].parse().ok()?, month_number(&c[1])?)
    };
    let season_year = || {
        let c = p.season_year.captures(text)?;
        let year: i32 = c[2].parse().ok()?;
        let (from, to) = match c[1].to_lowercase().as_str() {
            "spring" => ((year, 3), (year, 5)),
            "summer" => ((year, 6), (year, 8)),
            "autumn" | "fall" => ((year, 9), (year, 11)),
            _ => ((year, 12), (year + 1, 2)),
        };
        Some(DaySpan { first: month(from.0, from.1)?.first, last: month(to.0, to.1)?.last })
    };
    let year = || {
        let year: i32 = p.year.captures(text)?[1].parse().ok()?;
        Some(DaySpan { first: NaiveDate::from_ymd_opt(year, 1, 1)?, last: NaiveDate::from_ymd_opt(year, 12, 31)? })
    };
    iso_day()
        .or_else(day_month_year)
        .or_else(month_day_year)
        .or_else(iso_month)
        .or_else(month_year)
        .or_else(season_year)
        .or_else(year)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(text: &str) -> Option<(String, String)> {
        named_span(text).map(|s| (s.first.to_string(), s.last.to_string()))
    }

    fn days(first: &str, last: &str) -> Option<(String, String)> {
        Some((first.to_string(), last.to_string()))
    }

    #[test]
    fn reads_the_dates_people_write() {
        assert_eq!(span("What was Sam doing on December 4, 2023?"), days("2023-12-04", "2023-12-04"));
        assert_eq!(span("Which RPG game is John playing on 10 August, 2022?"), days("2022-08-10", "2022-08-10"));
        assert_eq!(span("what happened on the 3rd of March 2024"), days("2024-03-03", "2024-03-03"));
        assert_eq!(span("deploy notes for Sept. 21st, 2025"), days("2025-09-21", "2025-09-21"));
        assert_eq!(span("status on 2026-11-27 please"), days("2026-11-27", "2026-11-27"));
        assert_eq!(span("Which new activity does Sam take up in October 2023?"), days("2023-10-01", "2023-10-31"));
        assert_eq!(span("the February 2024 outage"), days("2024-02-01", "2024-02-29"));
        assert_eq!(span("invoices from 2025-12"), days("2025-12-01", "2025-12-31"));
        assert_eq!(span("Dec 2023 planning"), days("2023-12-01", "2023-12-31"));
        assert_eq!(span("a trip towards the end of summer 2023"), days("2023-06-01", "2023-08-31"));
        assert_eq!(span("winter 2023 plans"), days("2023-12-01", "2024-02-29"));
        assert_eq!(span("What charity event did John organize in 2024?"), days("2024-01-01", "2024-12-31"));
    }

    #[test]
    fn the_most_precise_date_wins() {
        assert_eq!(span("in 2023, what did we do on 5 May 2023?"), days("2023-05-05", "2023-05-05"));
        assert_eq!(span("summer 2023: the July 2023 release"), days("2023-07-01", "2023-07-31"));
    }

    #[test]
    fn an_impossible_day_falls_back_to_what_is_left() {
        assert_eq!(span("on 31 February 2023"), days("2023-02-01", "2023-02-28"));
        assert_eq!(span("2023-13-01"), days("2023-01-01", "2023-12-31"));
    }

    #[test]
    fn names_nothing_where_no_date_is_named() {
        for text in [
            "which database did we pick and why",
            "E4471 firmware error",
            "port 8080 on host 10.0.0.2",
            "may I ask what Caroline decided",
            "March forward with the migration",
            "error 404 at 12:30",
            "",
        ] {
            assert_eq!(span(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_slack_covers_days_around_the_span() {
        let span = named_span("on 10 August 2022").unwrap();
        let at = |text: &str| crate::time::parse_timestamp(text, "t", crate::time::DayEdge::Start).unwrap();
        assert!(span.covers(at("2022-08-10T13:56:00Z")));
        assert!(span.covers(at("2022-08-07T00:00:00Z")));
        assert!(span.covers(at("2022-08-13T23:59:59Z")));
        assert!(!span.covers(at("2022-08-06T23:59:59Z")));
        assert!(!span.covers(at("2022-08-14T00:00:00Z")));
    }
}
