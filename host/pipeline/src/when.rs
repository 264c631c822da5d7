//! Times as people write and read them: UTC timestamps for output, and
//! `30s`, `10m`, `2h`, `7d` (ago) or epoch milliseconds for input. Used by
//! every front end (the CLI, the console), so they agree.

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

/// `30s`, `10m`, `2h`, `7d` ago, or milliseconds since the epoch.
pub fn since_ms(text: &str) -> Option<i64> {
    if let Ok(ms) = text.parse::<i64>() {
        return Some(ms);
    }
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    now_ms.checked_sub(age_ms(text)?)
}

/// `30s`, `10m`, `2h`, `7d` as milliseconds.
pub fn age_ms(text: &str) -> Option<i64> {
    let unit = text.chars().last()?;
    let n: i64 = text[..text.len() - unit.len_utf8()].parse().ok()?;
    let seconds = match unit {
        's' => n,
        'm' => n.checked_mul(60)?,
        'h' => n.checked_mul(3600)?,
        'd' => n.checked_mul(86400)?,
        _ => return None,
    };
    seconds.checked_mul(1000).filter(|ms| *ms >= 0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn relative_times_read_what_people_type_and_refuse_the_rest() {
        let now = super::since_ms("0s").unwrap();
        let hour_ago = super::since_ms("1h").unwrap();
        assert!((now - hour_ago - 3_600_000).abs() < 1000);
        assert_eq!(super::since_ms("1795000000000"), Some(1_795_000_000_000));
        for bad in ["", "h", "1é", "é", "9999999999999999d", "1w", "-"] {
            assert_eq!(super::since_ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn timestamps_are_utc_dates() {
        assert_eq!(super::timestamp(0), "1970-01-01 00:00:00Z");
        assert_eq!(super::timestamp(1_795_957_509_000), "2026-11-29 13:05:09Z");
        assert_eq!(super::timestamp(951_782_400_000), "2000-02-29 00:00:00Z");
    }
}
