//! FileRef (ModelPort "Files"): where a file is, how big it is and its SHA-256 digest.

use serde::Serialize;
use serde_json::Value;

use crate::problem::{Pointer, ProblemKind};
use crate::read::Reader;

/// A file that belongs to a model: exactly one of a bundle-relative `path` or an `https://`
/// `url`, plus its size and lowercase-hex SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileRef {
    /// Where the file is.
    #[serde(flatten)]
    pub location: FileLocation,
    /// Size in bytes (> 0).
    pub size: u64,
    /// Lowercase hex SHA-256 of the content.
    pub sha256: String,
}

/// Where a [`FileRef`] points.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileLocation {
    /// A POSIX path relative to the manifest, checked by [`check_relative_path`].
    Path(String),
    /// An absolute `https://` URL, checked by [`check_https_url`].
    Url(String),
}

impl FileRef {
    /// The bundle-relative path, if the file is local.
    pub fn path(&self) -> Option<&str> {
        match &self.location {
            FileLocation::Path(p) => Some(p),
            FileLocation::Url(_) => None,
        }
    }
}

/// Checks the ModelPort path rules: POSIX, relative, no leading `/`, no `\`, no drive letter,
/// no empty, `.` or `..` segment. Control characters are refused too (they are never part of a
/// portable file name).
pub fn check_relative_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("must not be empty".into());
    }
    if path.starts_with('/') {
        return Err(format!("`{path}` must be relative: no leading `/`"));
    }
    if path.contains('\\') {
        return Err(format!("`{path}` must use `/` as separator, never `\\`"));
    }
    let bytes = path.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(format!("`{path}` must not start with a drive letter"));
    }
    if path.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    if let Some(bad) = path
        .split('/')
        .find(|s| s.is_empty() || *s == "." || *s == "..")
    {
        let shown = if bad.is_empty() { "empty" } else { bad };
        return Err(format!(
            "`{path}` must not contain an {shown} segment (`.`, `..` and empty segments are refused)"
        ));
    }
    Ok(())
}

/// Checks that `url` is an absolute `https://` URL with a host and without credentials or
/// whitespace.
pub fn check_https_url(url: &str) -> Result<(), String> {
    if !url.starts_with("https://") {
        return Err(format!("`{url}` must be an absolute `https://` URL"));
    }
    // The url crate repairs `https:///x` into host `x`; the spec wants the host written.
    if url["https://".len()..].starts_with(['/', '?', '#']) || url.len() == "https://".len() {
        return Err(format!("`{url}` has no host"));
    }
    if url.chars().any(char::is_whitespace) {
        return Err("must not contain whitespace".into());
    }
    let parsed = url::Url::parse(url).map_err(|e| format!("`{url}` is not a valid URL: {e}"))?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{url}` has no host"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("must not carry credentials (user:password@)".into());
    }
    Ok(())
}

/// Whether `s` is 64 lowercase hex digits.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Reads a bundle-relative path string, recording a problem if it breaks the path rules.
pub(crate) fn read_relative_path(r: &mut Reader, v: &Value, at: &Pointer) -> Option<String> {
    let s = r.string(v, at)?;
    match check_relative_path(s) {
        Ok(()) => Some(s.to_owned()),
        Err(msg) => {
            r.problem(at, ProblemKind::Value, msg);
            None
        }
    }
}

/// Reads a FileRef object.
pub(crate) fn read_file_ref(r: &mut Reader, v: &Value, at: &Pointer) -> Option<FileRef> {
    let obj = r.object(v, at, &["path", "url", "size", "sha256"])?;
    let path = Reader::optional(&obj, "path");
    let url = Reader::optional(&obj, "url");
    let location = match (path, url) {
        (Some((v, p)), None) => read_relative_path(r, v, &p).map(FileLocation::Path),
        (None, Some((v, p))) => {
            let s = r.string(v, &p)?;
            match check_https_url(s) {
                Ok(()) => Some(FileLocation::Url(s.to_owned())),
                Err(msg) => {
                    r.problem(&p, ProblemKind::Value, msg);
                    None
                }
            }
        }
        (Some(_), Some(_)) => {
            r.problem(
                at,
                ProblemKind::Conflict,
                "set exactly one of `path` or `url`, not both",
            );
            None
        }
        (None, None) => {
            r.problem(
                at,
                ProblemKind::Missing,
                "set exactly one of `path` or `url`",
            );
            None
        }
    };
    let size = r
        .required(&obj, "size")
        .and_then(|(v, p)| r.positive(v, &p));
    let sha256 = r.required(&obj, "sha256").and_then(|(v, p)| {
        let s = r.string(v, &p)?;
        if is_sha256_hex(s) {
            Some(s.to_owned())
        } else {
            r.problem(&p, ProblemKind::Value, "must be 64 lowercase hex digits");
            None
        }
    });
    Some(FileRef {
        location: location?,
        size: size?,
        sha256: sha256?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_rules() {
        for ok in [
            "a",
            "onnx-fp32/model.onnx",
            "golden/x.bin",
            "a..b/c",
            ".hidden",
        ] {
            assert!(check_relative_path(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "/abs", "a\\b", "C:x", "c:/x", "a//b", "a/", "./a", "a/./b", "../a", "a/..", "a\0b",
        ] {
            assert!(check_relative_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn url_rules() {
        assert!(check_https_url("https://example.org/a.gguf").is_ok());
        for bad in [
            "http://example.org/a",
            "https://",
            "https:///path",
            "https://exa mple.org",
            "ftp://x",
            "https://user:pw@example.org/a",
            "example.org/a",
        ] {
            assert!(check_https_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sha_rules() {
        assert!(is_sha256_hex(&"a".repeat(64)));
        assert!(!is_sha256_hex(&"A".repeat(64)));
        assert!(!is_sha256_hex(&"a".repeat(63)));
        assert!(!is_sha256_hex(&"g".repeat(64)));
    }
}
