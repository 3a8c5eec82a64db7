//! Validation problems: what is wrong, and the JSON pointer (RFC 6901) of where.
//!
//! Validation never stops at the first problem. Every check appends to a [`Problems`]
//! list, so a user fixing a manifest sees everything at once.

use std::fmt;

use serde::Serialize;

/// A JSON pointer (RFC 6901) into the document being validated, e.g. `/variants/1/file/sha256`.
///
/// The empty pointer names the whole document.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Pointer(String);

impl Pointer {
    /// The pointer to the whole document.
    pub fn root() -> Self {
        Self(String::new())
    }

    /// The pointer to member `key` of the object this pointer names (`~` and `/` escaped).
    pub fn key(&self, key: &str) -> Self {
        let escaped = key.replace('~', "~0").replace('/', "~1");
        Self(format!("{}/{}", self.0, escaped))
    }

    /// The pointer to element `index` of the array this pointer names.
    pub fn index(&self, index: usize) -> Self {
        Self(format!("{}/{}", self.0, index))
    }

    /// The pointer text, `""` for the document itself.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("(document)")
        } else {
            f.write_str(&self.0)
        }
    }
}

/// What kind of rule a [`Problem`] breaks, for callers that branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// The document is not well-formed JSON.
    Syntax,
    /// A required field is absent.
    Missing,
    /// A field has the wrong JSON type (string where a number belongs, ...).
    Type,
    /// A field the spec does not define.
    UnknownField,
    /// A value breaks a rule of its own field (pattern, range, enum, length).
    Value,
    /// Fields that are fine alone contradict each other or a task rule.
    Conflict,
    /// Something this reader deliberately does not support (a newer major version, an unknown
    /// processor kind).
    Unsupported,
    /// A referenced file is absent, has the wrong size or digest, or escapes the bundle.
    File,
    /// Two documents that must agree (MLC package and compiled program) do not.
    Mismatch,
}

/// One broken rule, located by JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Where the problem is.
    pub pointer: Pointer,
    /// Which kind of rule it breaks.
    pub kind: ProblemKind,
    /// What is wrong, in words, without the pointer.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pointer, self.message)
    }
}

/// Every problem found in one document, in the order the checks met them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Problems(Vec<Problem>);

impl Problems {
    /// Records a problem.
    pub fn push(&mut self, pointer: &Pointer, kind: ProblemKind, message: impl Into<String>) {
        self.0.push(Problem {
            pointer: pointer.clone(),
            kind,
            message: message.into(),
        });
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many problems were found.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The problems, in the order they were found.
    pub fn iter(&self) -> std::slice::Iter<'_, Problem> {
        self.0.iter()
    }

    /// Whether some problem sits exactly at `pointer`.
    pub fn has(&self, pointer: &str) -> bool {
        self.0.iter().any(|p| p.pointer.as_str() == pointer)
    }

    /// Appends all of `other`.
    pub fn extend(&mut self, other: Problems) {
        self.0.extend(other.0);
    }

    /// `Ok(value)` when nothing was found, else every problem.
    pub fn into_result<T>(self, value: T) -> Result<T, Problems> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl<'a> IntoIterator for &'a Problems {
    type Item = &'a Problem;
    type IntoIter = std::slice::Iter<'a, Problem>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Problems {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_escapes_rfc6901() {
        let p = Pointer::root().key("a/b").key("m~n").index(3);
        assert_eq!(p.as_str(), "/a~1b/m~0n/3");
        assert_eq!(Pointer::root().to_string(), "(document)");
    }
}
