//! What a step needs to read its own section of `toolwarden.toml`: numbers
//! bounded to a range, and the error a bad value reports.
//!
//! Each step owns its section (the table as written, its defaults, bounds
//! and messages) the way Spin's factors own their runtime config; `config`
//! reads the file, hands each table to its owner and adds the file name and
//! line to what the owner reports. This module owns no section itself and
//! must never import a step.

/// A value a section's owner refuses. `config` adds the file and line.
#[derive(Debug)]
pub struct SettingError {
    pub message: String,
    pub hint: String,
}

impl SettingError {
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> SettingError {
        SettingError {
            message: message.into(),
            hint: hint.into(),
        }
    }

    fn out_of_range(section: &str, key: &str, value: u64, max: u64) -> SettingError {
        SettingError::new(
            format!("`{section}.{key}` is {value}; it must be between 1 and {max}"),
            "choose a value inside the allowed range",
        )
    }
}

/// `[section] key`: `default` when left out, otherwise 1 to `max`. Zero is
/// never allowed: it would disable what the key limits.
pub fn bounded(
    section: &str,
    key: &str,
    value: Option<u64>,
    default: u64,
    max: u64,
) -> Result<u64, SettingError> {
    match value {
        None => Ok(default),
        Some(v) if (1..=max).contains(&v) => Ok(v),
        Some(v) => Err(SettingError::out_of_range(section, key, v, max)),
    }
}

/// A size written in KiB, bounded like [`bounded`], in bytes.
pub fn bounded_kb(
    section: &str,
    key: &str,
    value: Option<u64>,
    default_bytes: usize,
    max_kb: u64,
) -> Result<usize, SettingError> {
    let kb = bounded(section, key, value, (default_bytes >> 10) as u64, max_kb)?;
    Ok((kb << 10) as usize)
}
