//! Timestamps: one type, one canonical text form, tolerant parsing.
//!
//! Core never reads the clock; callers pass `now` in. The canonical text form
//! (`2026-11-22T01:09:32.123456Z`) has a fixed width, so in SQL it sorts in
//! time order as plain text. Parsing accepts what users and older palaces
//! hand us: RFC 3339 with any offset, naive ISO date-times (taken as UTC, as
//! the Python MemPalace writes them) and bare dates.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, TimeZone, Utc};

use crate::error::ValidationError;

/// A point in time, always UTC.
pub type Timestamp = DateTime<Utc>;

/// Which end of a day a bare `YYYY-MM-DD` stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayEdge {
    /// 00:00:00 — used for starts of validity windows and lower bounds.
    Start,
    /// 23:59:59.999999 — used for ends of validity windows and upper bounds.
    End,
}

/// The canonical, fixed-width text form used in storage and on the wire.
pub fn format_timestamp(ts: &Timestamp) -> String {
    ts.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Parses RFC 3339, a naive ISO date-time (UTC assumed) or a bare date.
///
/// `what` names the value in the error message; `edge` decides what a bare
/// date means.
pub fn parse_timestamp(text: &str, what: &'static str, edge: DayEdge) -> Result<Timestamp, ValidationError> {
    let text = text.trim();
    if let Ok(ts) = DateTime::parse_from_rfc3339(text) {
        return Ok(ts.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(text, format) {
            return Ok(Utc.from_utc_datetime(&naive));
        }
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let time = match edge {
            DayEdge::Start => NaiveTime::MIN,
            DayEdge::End => {
                NaiveTime::from_hms_micro_opt(23, 59, 59, 999_999).expect("23:59:59.999999 is a valid time of day")
            }
        };
        return Ok(Utc.from_utc_datetime(&date.and_time(time)));
    }
    Err(ValidationError::BadTime {
        what,
        reason: format!("{text:?} is not a date; use YYYY-MM-DD or RFC 3339 such as 2025-01-15T09:30:00Z"),
    })
}

/// The last instant before `ts` at storage precision (one microsecond),
/// which turns an exclusive upper bound into an inclusive one.
pub fn just_before(ts: Timestamp) -> Timestamp {
    ts - chrono::TimeDelta::microseconds(1)
}

/// Converts seconds since the Unix epoch (as file mtimes are kept) to a
/// timestamp, or `None` when out of range.
pub fn timestamp_from_unix(seconds: f64) -> Option<Timestamp> {
    if !seconds.is_finite() {
        return None;
    }
    let whole = seconds.floor();
    let micros = ((seconds - whole) * 1e6).round() as u32;
    Utc.timestamp_opt(whole as i64, micros.min(999_999) * 1000).single()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_form_is_fixed_width_and_round_trips() {
        let ts = parse_timestamp("2025-01-15T09:30:00+02:00", "t", DayEdge::Start).unwrap();
        let text = format_timestamp(&ts);
        assert_eq!(text, "2025-01-15T07:30:00.000000Z");
        assert_eq!(parse_timestamp(&text, "t", DayEdge::Start).unwrap(), ts);
    }

    #[test]
    fn bare_dates_map_to_the_requested_edge_of_the_day() {
        let start = parse_timestamp("2025-01-14", "t", DayEdge::Start).unwrap();
        let end = parse_timestamp("2025-01-14", "t", DayEdge::End).unwrap();
        assert_eq!(format_timestamp(&start), "2025-01-14T00:00:00.000000Z");
        assert_eq!(format_timestamp(&end), "2025-01-14T23:59:59.999999Z");
    }

    #[test]
    fn naive_python_timestamps_are_taken_as_utc() {
        let ts = parse_timestamp("2026-11-22T00:44:14.381530", "filed_at", DayEdge::Start).unwrap();
        assert_eq!(format_timestamp(&ts), "2026-11-22T00:44:14.381530Z");
    }

    #[test]
    fn garbage_is_refused_with_the_value_in_the_message() {
        let err = parse_timestamp("last tuesday", "valid_from", DayEdge::Start).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("last tuesday"), "{message}");
        assert!(message.starts_with("valid_from"), "{message}");
    }

    #[test]
    fn unix_seconds_keep_microseconds() {
        let ts = timestamp_from_unix(1_795_306_322.990_698).unwrap();
        assert_eq!(format_timestamp(&ts), "2026-11-22T00:12:02.990698Z");
        assert!(timestamp_from_unix(f64::NAN).is_none());
    }
}
