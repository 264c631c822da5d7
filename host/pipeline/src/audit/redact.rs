//! Masks secrets before they reach the audit log: values under secret-like
//! keys in arguments and outputs, and every credential the host injects,
//! wherever in a record it stands (see [`crate::egress::Secrets`]).

use serde_json::Value;

/// Object keys whose values are masked unless the config says otherwise
/// (`[audit] redact_keys`). A key matches when it contains one of these,
/// ignoring case (`DB_PASSWORD`, `x-api-key`).
pub const DEFAULT_REDACT_KEYS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "authorization",
    "credential",
    "private_key",
];

const MASK: &str = "[REDACTED]";

#[derive(Clone, Debug)]
pub struct Redactor {
    keys: Vec<String>,
    secrets: Option<std::sync::Arc<crate::egress::Secrets>>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(DEFAULT_REDACT_KEYS.iter().map(|k| k.to_string()))
    }
}

impl Redactor {
    pub fn new(keys: impl IntoIterator<Item = String>) -> Redactor {
        Redactor {
            keys: keys.into_iter().map(|k| k.to_lowercase()).collect(),
            secrets: None,
        }
    }

    /// Also masks these credentials wherever they stand in a record.
    pub fn with_secrets(mut self, secrets: Option<std::sync::Arc<crate::egress::Secrets>>) -> Self {
        self.secrets = secrets;
        self
    }

    /// A record's JSON text with every credential in it masked.
    pub fn masked_record(&self, json: String) -> String {
        match &self.secrets {
            Some(secrets) => secrets.mask_json(&json).unwrap_or(json),
            None => json,
        }
    }

    fn secret(&self, key: &str) -> bool {
        // Most keys are ASCII: compare without lowering a copy. Others are
        // lowered first, since lowering can turn them into ASCII (the
        // Kelvin sign becomes `k`).
        if key.is_ascii() {
            let key = key.as_bytes();
            self.keys
                .iter()
                .any(|k| contains_ignoring_case(key, k.as_bytes()))
        } else {
            let key = key.to_lowercase();
            self.keys.iter().any(|k| key.contains(k.as_str()))
        }
    }

    /// Whether anything in `value` would be masked.
    fn has_secrets(&self, value: &Value) -> bool {
        match value {
            Value::Object(map) => map
                .iter()
                .any(|(k, v)| self.secret(k) || self.has_secrets(v)),
            Value::Array(items) => items.iter().any(|v| self.has_secrets(v)),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
        }
    }

    /// `value` with its secrets masked, or `None` when it holds none (most
    /// values), so that the caller keeps what it has instead of a copy.
    pub fn masked(&self, value: &Value) -> Option<Value> {
        self.has_secrets(value).then(|| self.redact(value))
    }

    fn redact(&self, value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            if self.secret(k) {
                                Value::String(MASK.into())
                            } else {
                                self.redact(v)
                            },
                        )
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.redact(v)).collect()),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => value.clone(),
        }
    }
}

/// Whether `needle` (lower-case ASCII) occurs in `haystack`, ignoring ASCII
/// case. An empty needle occurs everywhere, as with `str::contains`.
fn contains_ignoring_case(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty()
        || haystack
            .windows(needle.len())
            .any(|window| window.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_masked_at_any_depth_and_case() {
        let r = Redactor::default();
        let v = json!({"path": "a", "API_KEY": "k", "nested": [{"db_password": "p", "ok": 1}], "Authorization": {"x": 1}});
        assert_eq!(
            r.redact(&v),
            json!({"path": "a", "API_KEY": "[REDACTED]", "nested": [{"db_password": "[REDACTED]", "ok": 1}], "Authorization": "[REDACTED]"})
        );
    }

    #[test]
    fn the_key_list_is_configurable() {
        let r = Redactor::new(["ssn".to_owned()]);
        assert_eq!(
            r.masked(&json!({"SSN": 1, "password": 2})),
            Some(json!({"SSN": "[REDACTED]", "password": 2}))
        );
    }

    #[test]
    fn a_value_without_secret_keys_needs_no_copy() {
        // Only keys are looked at: a value that reads "password" is no key.
        let r = Redactor::default();
        assert_eq!(
            r.masked(&json!({"path": "a", "items": [{"n": 1}], "x": "password"})),
            None
        );
    }

    #[test]
    fn keys_lowered_into_a_secret_are_masked() {
        // U+212A KELVIN SIGN lowers to an ASCII `k`.
        let r = Redactor::default();
        assert_eq!(
            r.masked(&json!({"TO\u{212A}EN": "t"})),
            Some(json!({"TO\u{212A}EN": "[REDACTED]"}))
        );
    }
}
