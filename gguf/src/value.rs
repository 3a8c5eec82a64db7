//! GGUF metadata values and the typed lookups executors use.

use super::GgufError;

/// One metadata value. Arrays keep their element type so an empty array still says what it is.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Type 0.
    U8(u8),
    /// Type 1.
    I8(i8),
    /// Type 2.
    U16(u16),
    /// Type 3.
    I16(i16),
    /// Type 4.
    U32(u32),
    /// Type 5.
    I32(i32),
    /// Type 6.
    F32(f32),
    /// Type 7.
    Bool(bool),
    /// Type 8.
    String(String),
    /// Type 9: element type id and elements.
    Array(u32, Vec<Value>),
    /// Type 10.
    U64(u64),
    /// Type 11.
    I64(i64),
    /// Type 12.
    F64(f64),
}

impl Value {
    /// The spec's name of this value's type.
    pub fn type_name(&self) -> String {
        match self {
            Value::U8(_) => "u8".into(),
            Value::I8(_) => "i8".into(),
            Value::U16(_) => "u16".into(),
            Value::I16(_) => "i16".into(),
            Value::U32(_) => "u32".into(),
            Value::I32(_) => "i32".into(),
            Value::F32(_) => "f32".into(),
            Value::Bool(_) => "bool".into(),
            Value::String(_) => "string".into(),
            Value::Array(t, v) => format!("array of {} {}", v.len(), type_id_name(*t)),
            Value::U64(_) => "u64".into(),
            Value::I64(_) => "i64".into(),
            Value::F64(_) => "f64".into(),
        }
    }

    /// The value as an integer, whatever integer type stores it.
    pub fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            Value::U8(v) => v.into(),
            Value::I8(v) => v.into(),
            Value::U16(v) => v.into(),
            Value::I16(v) => v.into(),
            Value::U32(v) => v.into(),
            Value::I32(v) => v.into(),
            Value::U64(v) => v.into(),
            Value::I64(v) => v.into(),
            _ => return None,
        })
    }

    /// The value as a float (f32 or f64 storage).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v.into()),
            Value::F64(v) => Some(v),
            _ => None,
        }
    }

    /// A short human rendering (arrays summarized) for `inspect`.
    pub fn summary(&self) -> String {
        match self {
            Value::String(s) if s.chars().count() > 60 => {
                format!(
                    "{:?}… ({} bytes)",
                    s.chars().take(60).collect::<String>(),
                    s.len()
                )
            }
            Value::String(s) => format!("{s:?}"),
            Value::Array(..) => self.type_name(),
            Value::Bool(b) => b.to_string(),
            Value::F32(v) => v.to_string(),
            Value::F64(v) => v.to_string(),
            other => other.as_i128().map(|v| v.to_string()).unwrap_or_default(),
        }
    }
}

/// The spec's name of a value type id.
pub fn type_id_name(id: u32) -> &'static str {
    match id {
        0 => "u8",
        1 => "i8",
        2 => "u16",
        3 => "i16",
        4 => "u32",
        5 => "i32",
        6 => "f32",
        7 => "bool",
        8 => "string",
        9 => "array",
        10 => "u64",
        11 => "i64",
        12 => "f64",
        _ => "unknown",
    }
}

/// Typed lookups over a file's metadata.
pub trait Metadata {
    /// The raw value of `key`.
    fn value(&self, key: &str) -> Option<&Value>;

    /// `key` as a u64 (any integer type that holds a non-negative value).
    fn u64(&self, key: &str) -> Result<u64, GgufError> {
        let v = self.require(key)?;
        v.as_i128()
            .and_then(|i| u64::try_from(i).ok())
            .ok_or_else(|| mismatch(key, "a non-negative integer", v))
    }

    /// `key` as a u32.
    fn u32(&self, key: &str) -> Result<u32, GgufError> {
        let v = self.require(key)?;
        v.as_i128()
            .and_then(|i| u32::try_from(i).ok())
            .ok_or_else(|| mismatch(key, "an integer in u32 range", v))
    }

    /// `key` as an f32 (f32 or f64 storage).
    fn f32(&self, key: &str) -> Result<f32, GgufError> {
        let v = self.require(key)?;
        v.as_f64()
            .map(|f| f as f32)
            .ok_or_else(|| mismatch(key, "a float", v))
    }

    /// `key` as a bool.
    fn bool(&self, key: &str) -> Result<bool, GgufError> {
        match self.require(key)? {
            Value::Bool(b) => Ok(*b),
            v => Err(mismatch(key, "a bool", v)),
        }
    }

    /// `key` as a string.
    fn str(&self, key: &str) -> Result<&str, GgufError> {
        match self.require(key)? {
            Value::String(s) => Ok(s),
            v => Err(mismatch(key, "a string", v)),
        }
    }

    /// `key` as an array of strings.
    fn str_array(&self, key: &str) -> Result<Vec<&str>, GgufError> {
        let v = self.require(key)?;
        let Value::Array(_, items) = v else {
            return Err(mismatch(key, "an array of strings", v));
        };
        items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.as_str()),
                _ => Err(mismatch(key, "an array of strings", v)),
            })
            .collect()
    }

    /// `key` as an array of numbers, as f32.
    fn f32_array(&self, key: &str) -> Result<Vec<f32>, GgufError> {
        let v = self.require(key)?;
        let Value::Array(_, items) = v else {
            return Err(mismatch(key, "an array of numbers", v));
        };
        items
            .iter()
            .map(|i| {
                i.as_f64()
                    .or_else(|| i.as_i128().map(|x| x as f64))
                    .map(|f| f as f32)
                    .ok_or_else(|| mismatch(key, "an array of numbers", v))
            })
            .collect()
    }

    /// `key` as an array of integers, as i64.
    fn int_array(&self, key: &str) -> Result<Vec<i64>, GgufError> {
        let v = self.require(key)?;
        let Value::Array(_, items) = v else {
            return Err(mismatch(key, "an array of integers", v));
        };
        items
            .iter()
            .map(|i| {
                i.as_i128()
                    .and_then(|x| i64::try_from(x).ok())
                    .ok_or_else(|| mismatch(key, "an array of integers", v))
            })
            .collect()
    }

    /// `key`, or `Ok(None)` when absent (a present key of the wrong type is still an error).
    fn optional<T>(
        &self,
        key: &str,
        get: impl FnOnce(&Self, &str) -> Result<T, GgufError>,
    ) -> Result<Option<T>, GgufError> {
        if self.value(key).is_none() {
            return Ok(None);
        }
        get(self, key).map(Some)
    }

    /// The value of `key` or a [`GgufError::MissingKey`].
    fn require(&self, key: &str) -> Result<&Value, GgufError> {
        self.value(key)
            .ok_or_else(|| GgufError::MissingKey(key.to_string()))
    }
}

fn mismatch(key: &str, expected: &'static str, found: &Value) -> GgufError {
    GgufError::KeyType {
        key: key.to_string(),
        expected,
        found: found.type_name(),
    }
}
