//! The canonical hashes of the MLC package contract, defined in `docs/spec/hashes.md` and
//! implemented here only:
//!
//! - `interface_id = "sha256:" + hex(sha256(JCS(tasks)))`
//! - `parameter_schema_id = "sha256:" + hex(sha256(JCS(params)))`, `params` being the list of
//!   `{"name", "shape", "dtype"}` of the weights manifest's parameters, sorted by name.
//!
//! JCS is RFC 8785 JSON canonicalization (sorted keys by UTF-16 code units, minimal escapes,
//! ECMAScript number formatting), done by the `serde_json_canonicalizer` crate. Integers outside
//! ±2^53 are refused: JCS formats numbers as IEEE doubles, so such an integer would hash as a
//! different number than it was written.

use serde::Serialize;
use serde_json::Value;

use crate::digest::sha256_hex;

/// Largest integer an IEEE double holds exactly (I-JSON, RFC 7493).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a value cannot be canonicalized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// An integer that JCS would round.
    #[error("integer {0} is outside ±2^53 and cannot be canonicalized exactly (RFC 8785)")]
    UnsafeInteger(String),
    /// The canonicalizer refused the value.
    #[error("cannot canonicalize: {0}")]
    Canonicalizer(String),
}

fn check_safe(v: &Value) -> Result<(), CanonicalError> {
    match v {
        Value::Number(n) => {
            let unsafe_int = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u > MAX_SAFE_INTEGER,
                (None, Some(i)) => i.unsigned_abs() > MAX_SAFE_INTEGER,
                _ => false,
            };
            if unsafe_int {
                return Err(CanonicalError::UnsafeInteger(n.to_string()));
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(check_safe),
        Value::Object(map) => map.values().try_for_each(check_safe),
        _ => Ok(()),
    }
}

/// RFC 8785 canonical JSON text of `value`.
pub fn canonical_json(value: &Value) -> Result<String, CanonicalError> {
    check_safe(value)?;
    serde_json_canonicalizer::to_string(value)
        .map_err(|e| CanonicalError::Canonicalizer(e.to_string()))
}

/// `"sha256:" + hex(sha256(JCS(value)))`.
pub fn canonical_id(value: &Value) -> Result<String, CanonicalError> {
    Ok(format!(
        "sha256:{}",
        sha256_hex(canonical_json(value)?.as_bytes())
    ))
}

/// The package's `interface_id`: the canonical id of its `tasks` object, exactly as written.
pub fn interface_id(tasks: &Value) -> Result<String, CanonicalError> {
    canonical_id(tasks)
}

/// One quantized parameter as the parameter schema sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParamSchema {
    /// Parameter name.
    pub name: String,
    /// Resolved dimensions.
    pub shape: Vec<u64>,
    /// Element type name as the weights manifest writes it (e.g. `uint32`, `float16`).
    pub dtype: String,
}

/// The package's `parameter_schema_id`: the canonical id of the parameter list sorted by name.
pub fn parameter_schema_id(params: &[ParamSchema]) -> Result<String, CanonicalError> {
    let mut sorted: Vec<&ParamSchema> = params.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let value =
        serde_json::to_value(&sorted).map_err(|e| CanonicalError::Canonicalizer(e.to_string()))?;
    canonical_id(&value)
}

/// Whether `s` looks like `sha256:` followed by 64 lowercase hex digits.
pub fn is_canonical_id(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(crate::fileref::is_sha256_hex)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc8785_examples() {
        // RFC 8785 section 3.2.2 / appendix: key order by UTF-16 code units and number forms.
        let v: Value = serde_json::from_str(
            r#"{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}"#,
        )
        .unwrap();
        assert_eq!(
            canonical_json(&v).unwrap(),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
        let sorted: Value = serde_json::from_str(
            r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#,
        )
        .unwrap();
        let keys: Vec<String> = serde_json::from_str::<serde_json::Map<String, Value>>(
            &canonical_json(&sorted).unwrap(),
        )
        .unwrap()
        .values()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
        assert_eq!(
            keys,
            [
                "Carriage Return",
                "One",
                "Control",
                "Latin Small Letter O With Diaeresis",
                "Euro Sign",
                "Emoji: Grinning Face",
                "Hebrew Letter Dalet With Dagesh"
            ]
        );
    }

    #[test]
    fn refuses_unsafe_integers() {
        assert!(canonical_json(&json!({"a": 9007199254740991u64})).is_ok());
        assert!(matches!(
            canonical_json(&json!({"a": 9007199254740993u64})),
            Err(CanonicalError::UnsafeInteger(_))
        ));
    }

    #[test]
    fn parameter_order_does_not_matter() {
        let a = ParamSchema {
            name: "a".into(),
            shape: vec![2, 3],
            dtype: "float16".into(),
        };
        let b = ParamSchema {
            name: "b".into(),
            shape: vec![4],
            dtype: "uint32".into(),
        };
        let id = parameter_schema_id(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(id, parameter_schema_id(&[b, a]).unwrap());
        // Pinned: sha256 of [{"dtype":"float16","name":"a","shape":[2,3]},{"dtype":"uint32","name":"b","shape":[4]}]
        assert_eq!(
            id,
            format!(
                "sha256:{}",
                sha256_hex(br#"[{"dtype":"float16","name":"a","shape":[2,3]},{"dtype":"uint32","name":"b","shape":[4]}]"#)
            )
        );
    }
}
