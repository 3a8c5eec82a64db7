//! The document reader: walks a parsed `serde_json::Value`, builds typed values and records
//! every problem with its JSON pointer instead of stopping at the first one.
//!
//! Hand-written rather than `#[derive(Deserialize)]` because serde stops at the first error and
//! cannot switch unknown-field handling at run time (ModelPort ignores unknown fields only from a
//! newer minor version). Each typed section has one `read_*` function built from these pieces.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::problem::{Pointer, ProblemKind, Problems};

/// What to do with a field the spec does not define.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnknownFields {
    /// Report it as a problem (the document's own version).
    Reject,
    /// Skip it and note it (a newer minor version may add optional fields).
    Ignore,
}

/// Collects problems while typed values are read out of a JSON document.
pub(crate) struct Reader {
    pub(crate) problems: Problems,
    unknown: UnknownFields,
    /// Unknown fields skipped under [`UnknownFields::Ignore`].
    pub(crate) ignored: Vec<Pointer>,
}

/// A JSON object being read, with the pointer where it sits.
pub(crate) struct Obj<'v> {
    pub(crate) map: &'v Map<String, Value>,
    pub(crate) at: Pointer,
}

/// The JSON type name used in messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Reader {
    pub(crate) fn new(unknown: UnknownFields) -> Self {
        Self {
            problems: Problems::default(),
            unknown,
            ignored: Vec::new(),
        }
    }

    /// Records a problem.
    pub(crate) fn problem(&mut self, at: &Pointer, kind: ProblemKind, msg: impl Into<String>) {
        self.problems.push(at, kind, msg);
    }

    fn wrong_type(&mut self, at: &Pointer, expected: &str, found: &Value) {
        let msg = format!("must be {expected}, found {}", type_name(found));
        self.problem(at, ProblemKind::Type, msg);
    }

    /// Reads `v` as an object whose only allowed members are `fields`.
    pub(crate) fn object<'v>(
        &mut self,
        v: &'v Value,
        at: &Pointer,
        fields: &[&str],
    ) -> Option<Obj<'v>> {
        let Some(map) = v.as_object() else {
            self.wrong_type(at, "an object", v);
            return None;
        };
        for key in map.keys() {
            if !fields.contains(&key.as_str()) {
                let field_at = at.key(key);
                match self.unknown {
                    UnknownFields::Reject => {
                        let known = fields.join(", ");
                        let msg = format!("unknown field `{key}` (allowed: {known})");
                        self.problem(&field_at, ProblemKind::UnknownField, msg);
                    }
                    UnknownFields::Ignore => self.ignored.push(field_at),
                }
            }
        }
        Some(Obj {
            map,
            at: at.clone(),
        })
    }

    /// Reads `v` as an object used as a map (any keys, e.g. tensor or task names), each value
    /// with `item`. `empty` is the message for an empty map when one is not allowed. `None` if
    /// the object or any value is bad (every bad value is reported).
    pub(crate) fn entries<T>(
        &mut self,
        v: &Value,
        at: &Pointer,
        empty: Option<&str>,
        mut item: impl FnMut(&mut Self, &str, &Value, &Pointer) -> Option<T>,
    ) -> Option<BTreeMap<String, T>> {
        let Some(map) = v.as_object() else {
            self.wrong_type(at, "an object", v);
            return None;
        };
        if let (true, Some(msg)) = (map.is_empty(), empty) {
            self.problem(at, ProblemKind::Value, msg);
            return None;
        }
        let mut out = BTreeMap::new();
        let mut ok = true;
        for (key, value) in map {
            match item(self, key, value, &at.key(key)) {
                Some(x) => {
                    out.insert(key.clone(), x);
                }
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// A required member: records `Missing` when absent.
    pub(crate) fn required<'v>(
        &mut self,
        obj: &Obj<'v>,
        key: &str,
    ) -> Option<(&'v Value, Pointer)> {
        match obj.map.get(key) {
            Some(v) => Some((v, obj.at.key(key))),
            None => {
                let msg = format!("missing required field `{key}`");
                self.problem(&obj.at.key(key), ProblemKind::Missing, msg);
                None
            }
        }
    }

    /// An optional member (absent is fine; `null` is a type error, since no field is nullable).
    pub(crate) fn optional<'v>(obj: &Obj<'v>, key: &str) -> Option<(&'v Value, Pointer)> {
        obj.map.get(key).map(|v| (v, obj.at.key(key)))
    }

    pub(crate) fn string<'v>(&mut self, v: &'v Value, at: &Pointer) -> Option<&'v str> {
        let s = v.as_str();
        if s.is_none() {
            self.wrong_type(at, "a string", v);
        }
        s
    }

    pub(crate) fn boolean(&mut self, v: &Value, at: &Pointer) -> Option<bool> {
        let b = v.as_bool();
        if b.is_none() {
            self.wrong_type(at, "a boolean (true or false)", v);
        }
        b
    }

    /// A JSON integer (`1.0` is not one: integers are written without a fraction).
    pub(crate) fn integer(&mut self, v: &Value, at: &Pointer) -> Option<i64> {
        match v {
            Value::Number(n) if n.is_i64() => n.as_i64(),
            Value::Number(n) if n.is_u64() => {
                self.problem(at, ProblemKind::Value, "integer is too large");
                None
            }
            _ => {
                self.wrong_type(at, "an integer", v);
                None
            }
        }
    }

    /// A JSON integer that must be greater than zero.
    pub(crate) fn positive(&mut self, v: &Value, at: &Pointer) -> Option<u64> {
        match v {
            Value::Number(n) if n.is_u64() => match n.as_u64() {
                Some(0) => {
                    self.problem(at, ProblemKind::Value, "must be greater than 0");
                    None
                }
                other => other,
            },
            _ => {
                let i = self.integer(v, at)?;
                self.problem(
                    at,
                    ProblemKind::Value,
                    format!("must be greater than 0, found {i}"),
                );
                None
            }
        }
    }

    /// A JSON integer that must be zero or more.
    pub(crate) fn natural(&mut self, v: &Value, at: &Pointer) -> Option<u64> {
        if let Some(n) = v.as_u64() {
            return Some(n);
        }
        let i = self.integer(v, at)?;
        self.problem(
            at,
            ProblemKind::Value,
            format!("must be 0 or more, found {i}"),
        );
        None
    }

    /// A JSON number (integer or not), as f64.
    pub(crate) fn number(&mut self, v: &Value, at: &Pointer) -> Option<f64> {
        let n = v.as_f64();
        if n.is_none() {
            self.wrong_type(at, "a number", v);
        }
        n
    }

    /// A number checked against a closed/open range, e.g. `0 <= x <= 2`.
    pub(crate) fn number_in(&mut self, v: &Value, at: &Pointer, range: NumberRange) -> Option<f64> {
        let x = self.number(v, at)?;
        if range.contains(x) {
            Some(x)
        } else {
            self.problem(
                at,
                ProblemKind::Value,
                format!("must be {range}, found {x}"),
            );
            None
        }
    }

    pub(crate) fn array<'v>(&mut self, v: &'v Value, at: &Pointer) -> Option<&'v [Value]> {
        let a = v.as_array().map(Vec::as_slice);
        if a.is_none() {
            self.wrong_type(at, "an array", v);
        }
        a
    }

    /// Reads each element of an array with `item`; `None` if the array or any element is bad.
    pub(crate) fn list<T>(
        &mut self,
        v: &Value,
        at: &Pointer,
        mut item: impl FnMut(&mut Self, &Value, &Pointer) -> Option<T>,
    ) -> Option<Vec<T>> {
        let items = self.array(v, at)?;
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, element) in items.iter().enumerate() {
            match item(self, element, &at.index(i)) {
                Some(x) => out.push(x),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// An array of exactly `N` elements read with `item`.
    pub(crate) fn fixed<T, const N: usize>(
        &mut self,
        v: &Value,
        at: &Pointer,
        item: impl FnMut(&mut Self, &Value, &Pointer) -> Option<T>,
    ) -> Option<[T; N]> {
        let items = self.list(v, at, item)?;
        let found = items.len();
        match <[T; N]>::try_from(items) {
            Ok(array) => Some(array),
            Err(_) => {
                let msg = format!("must have exactly {N} elements, found {found}");
                self.problem(at, ProblemKind::Value, msg);
                None
            }
        }
    }

    /// A string that must be one of `E`'s names.
    pub(crate) fn choice<E: Choice>(&mut self, v: &Value, at: &Pointer) -> Option<E> {
        let s = self.string(v, at)?;
        let found = E::ALL.iter().find(|e| e.name() == s).copied();
        if found.is_none() {
            let names: Vec<String> = E::ALL.iter().map(|e| format!("`{}`", e.name())).collect();
            let msg = format!("`{s}` is not one of {}", names.join(", "));
            self.problem(at, ProblemKind::Value, msg);
        }
        found
    }
}

/// A closed set of string values (a JSON enum).
pub trait Choice: Copy + 'static {
    /// Every value, in the spec's order.
    const ALL: &'static [Self];
    /// The JSON spelling.
    fn name(self) -> &'static str;
}

/// Declares a `Choice` enum with its JSON spellings, serde and `Display` support.
macro_rules! choice_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        pub enum $name { $($(#[$vmeta])* #[serde(rename = $text)] $variant),+ }
        impl $crate::read::Choice for $name {
            const ALL: &'static [Self] = &[$(Self::$variant),+];
            fn name(self) -> &'static str { match self { $(Self::$variant => $text),+ } }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($crate::read::Choice::name(*self))
            }
        }
    };
}
pub(crate) use choice_enum;

/// A numeric range with inclusive or exclusive ends, for messages and checks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NumberRange {
    pub(crate) min: Option<(f64, bool)>,
    pub(crate) max: Option<(f64, bool)>,
}

impl NumberRange {
    /// `min <= x <= max`.
    pub(crate) const fn closed(min: f64, max: f64) -> Self {
        Self {
            min: Some((min, true)),
            max: Some((max, true)),
        }
    }
    /// `x >= min`.
    pub(crate) const fn at_least(min: f64) -> Self {
        Self {
            min: Some((min, true)),
            max: None,
        }
    }
    /// `x > min`.
    pub(crate) const fn above(min: f64) -> Self {
        Self {
            min: Some((min, false)),
            max: None,
        }
    }
    /// `min < x <= max`.
    pub(crate) const fn above_up_to(min: f64, max: f64) -> Self {
        Self {
            min: Some((min, false)),
            max: Some((max, true)),
        }
    }

    fn contains(self, x: f64) -> bool {
        let lo = match self.min {
            Some((m, true)) => x >= m,
            Some((m, false)) => x > m,
            None => true,
        };
        let hi = match self.max {
            Some((m, true)) => x <= m,
            Some((m, false)) => x < m,
            None => true,
        };
        lo && hi && x.is_finite()
    }
}

impl std::fmt::Display for NumberRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some((m, incl)) = self.min {
            parts.push(format!("{} {m}", if incl { ">=" } else { ">" }));
        }
        if let Some((m, incl)) = self.max {
            parts.push(format!("{} {m}", if incl { "<=" } else { "<" }));
        }
        f.write_str(&parts.join(" and "))
    }
}
