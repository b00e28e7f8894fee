//! The only writer of stdout (and of user-facing stderr notes).
//!
//! Stdout carries CLI results and nothing else; logs go to stderr through
//! `tracing`. Writes report errors (a closed pipe included) instead of
//! panicking like `println!`; `main` treats a closed stdout as success.

use std::io::{self, Write};

use serde::Serialize;

/// Writes one line of text to stdout.
pub fn line(text: impl AsRef<str>) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_ref().as_bytes())?;
    stdout.write_all(b"\n")?;
    stdout.flush()
}

/// Writes text to stdout as is.
pub fn text(text: impl AsRef<str>) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_ref().as_bytes())?;
    stdout.flush()
}

/// Writes a value as pretty JSON followed by a newline.
pub fn json(value: &impl Serialize) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    serde_json::to_writer_pretty(&mut stdout, value).map_err(io::Error::other)?;
    stdout.write_all(b"\n")?;
    stdout.flush()
}

/// A short note for the person at the terminal (not a log line): goes to
/// stderr so stdout stays parseable.
pub fn note(text: impl AsRef<str>) {
    let mut stderr = io::stderr().lock();
    // Nothing useful can be done if stderr itself is closed.
    let _ = writeln!(stderr, "{}", text.as_ref());
}
