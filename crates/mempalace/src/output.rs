//! The only writer of stdout (and of user-facing stderr notes).
//!
//! Stdout carries CLI results and nothing else; logs go to stderr through
//! `tracing`. Writes report errors (a closed pipe included) instead of
//! panicking like `println!`; `main` treats a closed stdout as success.

// The one module allowed to write to stdout.
#![allow(clippy::disallowed_methods)]

use std::io::{self, Write};

use serde::Serialize;

/// Stdout for a long stream of records (an export), buffered; the caller
/// flushes it at the end.
pub fn stream() -> io::BufWriter<io::StdoutLock<'static>> {
    io::BufWriter::new(io::stdout().lock())
}

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
    serde_json::to_writer_pretty(&mut stdout, value).map_err(json_error)?;
    stdout.write_all(b"\n")?;
    stdout.flush()
}

/// Writes a value as compact JSON on one line (a stream of records).
pub fn json_line(value: &impl Serialize) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    serde_json::to_writer(&mut stdout, value).map_err(json_error)?;
    stdout.write_all(b"\n")?;
    stdout.flush()
}

/// A JSON write error as an I/O error of the same kind, so a closed pipe
/// stays a closed pipe (`main` ends quietly on one).
fn json_error(error: serde_json::Error) -> io::Error {
    match error.io_error_kind() {
        Some(kind) => io::Error::new(kind, error),
        None => io::Error::other(error),
    }
}

/// A short note for the person at the terminal (not a log line): goes to
/// stderr so stdout stays parseable.
pub fn note(text: impl AsRef<str>) {
    let mut stderr = io::stderr().lock();
    // Nothing useful can be done if stderr itself is closed.
    let _ = writeln!(stderr, "{}", text.as_ref());
}

/// A one-line progress display on stderr, redrawn in place; silent when
/// stderr is not a terminal (logs and CI stay clean).
pub struct Progress {
    total: usize,
    started: std::time::Instant,
    enabled: bool,
}

impl Progress {
    /// Progress over `total` items.
    pub fn new(total: usize) -> Self {
        use std::io::IsTerminal;
        Self { total, started: std::time::Instant::now(), enabled: io::stderr().is_terminal() && total > 1 }
    }

    /// Shows `done` items and `drawers` filed so far.
    pub fn update(&self, done: usize, drawers: usize) {
        if !self.enabled {
            return;
        }
        let seconds = self.started.elapsed().as_secs_f64().max(0.001);
        let rate = drawers as f64 / seconds;
        let eta = if done == 0 { 0.0 } else { seconds / done as f64 * (self.total - done.min(self.total)) as f64 };
        let mut stderr = io::stderr().lock();
        let _ = write!(stderr, "\r\x1b[2Kfiles {done}/{}  drawers {drawers}  {rate:.0}/s  ETA {eta:.0} s", self.total);
        let _ = stderr.flush();
    }

    /// Ends the line.
    pub fn finish(&self) {
        if self.enabled {
            let _ = writeln!(io::stderr().lock());
        }
    }
}
