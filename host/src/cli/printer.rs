//! The one place the CLI writes to stdout and stderr. Writing errors (a
//! closed pipe, say) are ignored: there is nobody left to tell.

use std::fmt::Display;
use std::io::Write;

#[derive(Clone, Copy, Debug, Default)]
pub struct Printer;

impl Printer {
    /// A line of the command's output.
    pub fn out(&self, line: impl Display) {
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }

    /// A JSON document on stdout.
    pub fn json(&self, value: &impl serde::Serialize) {
        match serde_json::to_string_pretty(value) {
            Ok(text) => self.out(text),
            Err(e) => self.error(format!("cannot encode the output as JSON: {e}"), None),
        }
    }

    /// A side note for the person at the terminal (stderr, not the output).
    pub fn note(&self, line: impl Display) {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    /// An error for the person at the terminal, with what to do about it.
    pub fn error(&self, message: impl Display, hint: Option<&str>) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "toolwarden: {message}");
        if let Some(hint) = hint {
            let _ = writeln!(err, "hint: {hint}");
        }
    }
}

/// A UTC time for people: `2026-11-29 13:05:09Z`.
pub fn timestamp(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_are_utc_dates() {
        assert_eq!(super::timestamp(0), "1970-01-01 00:00:00Z");
        assert_eq!(super::timestamp(1_795_957_509_000), "2026-11-29 13:05:09Z");
        assert_eq!(super::timestamp(951_782_400_000), "2000-02-29 00:00:00Z");
    }
}
