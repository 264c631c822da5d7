//! Masks secrets in arguments and outputs before they reach the audit log.

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
        }
    }

    fn secret(&self, key: &str) -> bool {
        let key = key.to_lowercase();
        self.keys.iter().any(|k| key.contains(k.as_str()))
    }

    pub fn redact(&self, value: &Value) -> Value {
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
            r.redact(&json!({"SSN": 1, "password": 2})),
            json!({"SSN": "[REDACTED]", "password": 2})
        );
    }
}
