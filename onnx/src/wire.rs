//! The protobuf wire format, read and written by hand.
//!
//! Hand-written rather than generated (prost): a generated decoder copies every `bytes` field
//! into its own `Vec`, where this one hands out [`Span`]s into the memory-mapped file, so a
//! 100 MB initializer is never copied before upload; and every length here is checked against
//! the bytes that remain before anything is allocated.
//!
//! A message is a sequence of `(tag, value)` pairs, `tag = field << 3 | wire type`:
//! 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32. Wire types 3 and 4 (groups) are
//! deprecated and not part of ONNX's schema; they are refused.

use crate::error::{At, OnnxError};

/// A byte range of the file: where a `bytes` field's payload lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// Offset from the start of the file.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
}

impl Span {
    /// The bytes of this span in `file` (the bytes the span was read from).
    pub fn of<'f>(&self, file: &'f [u8]) -> &'f [u8] {
        &file[self.offset..self.offset + self.len]
    }
}

/// One field's value as it is on the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value {
    Varint(u64),
    Fixed64(u64),
    Bytes(Span),
    Fixed32(u32),
}

impl Value {
    fn wire_name(&self) -> &'static str {
        match self {
            Value::Varint(_) => "varint",
            Value::Fixed64(_) => "fixed64",
            Value::Bytes(_) => "length-delimited",
            Value::Fixed32(_) => "fixed32",
        }
    }
}

/// Reads the fields of one message: `file[span]`.
pub(crate) struct Reader<'f> {
    file: &'f [u8],
    pos: usize,
    end: usize,
}

impl<'f> Reader<'f> {
    /// The fields of the message that fills `span` of `file`.
    pub(crate) fn new(file: &'f [u8], span: Span) -> Reader<'f> {
        Reader {
            file,
            pos: span.offset,
            end: span.offset + span.len,
        }
    }

    /// The next field, or `None` at the end of the message.
    pub(crate) fn next(&mut self, at: &At) -> Result<Option<(u32, Value)>, OnnxError> {
        if self.pos == self.end {
            return Ok(None);
        }
        let tag_at = self.pos;
        let tag = self.varint(at)?;
        let field = tag >> 3;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            return Err(at.malformed(format!("field number {field} at byte {tag_at}")));
        }
        let value = match tag & 7 {
            0 => Value::Varint(self.varint(at)?),
            1 => Value::Fixed64(u64::from_le_bytes(self.fixed::<8>(at)?)),
            2 => {
                let len = self.varint(at)?;
                let left = (self.end - self.pos) as u64;
                if len > left {
                    return Err(at.truncated(self.pos, len, left));
                }
                let span = Span {
                    offset: self.pos,
                    len: len as usize,
                };
                self.pos += len as usize;
                Value::Bytes(span)
            }
            5 => Value::Fixed32(u32::from_le_bytes(self.fixed::<4>(at)?)),
            wire => {
                return Err(at.malformed(format!(
                    "wire type {wire} of field {field} at byte {tag_at} (groups are not ONNX)"
                )));
            }
        };
        Ok(Some((field as u32, value)))
    }

    fn varint(&mut self, at: &At) -> Result<u64, OnnxError> {
        let start = self.pos;
        let mut v = 0u64;
        for i in 0..10 {
            let Some(&b) = self.file[..self.end].get(self.pos) else {
                return Err(at.truncated(start, i + 1, i));
            };
            self.pos += 1;
            // The tenth byte may carry only the top bit of a u64.
            if i == 9 && b > 1 {
                return Err(at.malformed(format!("varint at byte {start} overflows 64 bits")));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(at.malformed(format!("varint at byte {start} is longer than 10 bytes")))
    }

    fn fixed<const N: usize>(&mut self, at: &At) -> Result<[u8; N], OnnxError> {
        let left = self.end - self.pos;
        if left < N {
            return Err(at.truncated(self.pos, N as u64, left as u64));
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&self.file[self.pos..self.pos + N]);
        self.pos += N;
        Ok(out)
    }
}

/// What a field's value must be, checked against the wire type it came with.
impl Value {
    pub(crate) fn int64(self, at: &At, field: &str) -> Result<i64, OnnxError> {
        match self {
            Value::Varint(v) => Ok(v as i64),
            other => Err(at.wire(field, "varint", other.wire_name())),
        }
    }

    /// An `int32` or enum field: protobuf writes negative ones as 10-byte varints, so the
    /// value is the low 32 bits of the varint, which must sign-extend back to it.
    pub(crate) fn int32(self, at: &At, field: &str) -> Result<i32, OnnxError> {
        let v = self.int64(at, field)?;
        i32::try_from(v).map_err(|_| at.invalid(format!("`{field}` {v} does not fit in int32")))
    }

    pub(crate) fn float(self, at: &At, field: &str) -> Result<f32, OnnxError> {
        match self {
            Value::Fixed32(v) => Ok(f32::from_bits(v)),
            other => Err(at.wire(field, "fixed32", other.wire_name())),
        }
    }

    pub(crate) fn bytes(self, at: &At, field: &str) -> Result<Span, OnnxError> {
        match self {
            Value::Bytes(s) => Ok(s),
            other => Err(at.wire(field, "length-delimited", other.wire_name())),
        }
    }

    pub(crate) fn string(self, file: &[u8], at: &At, field: &str) -> Result<String, OnnxError> {
        let span = self.bytes(at, field)?;
        String::from_utf8(span.of(file).to_vec())
            .map_err(|_| at.invalid(format!("`{field}` at byte {} is not UTF-8", span.offset)))
    }
}

/// How a repeated scalar field's elements are encoded, for [`push_repeated`].
pub(crate) enum Scalar {
    Varint,
    Fixed32,
    Fixed64,
}

/// Appends the element(s) of one occurrence of a repeated scalar field, packed (one
/// length-delimited run) or not (one element per occurrence), as raw 64-bit words: a varint's
/// value, or a fixed32/fixed64's bits. `decode` turns each into the element type.
pub(crate) fn push_repeated<T>(
    file: &[u8],
    value: Value,
    kind: Scalar,
    out: &mut Vec<T>,
    at: &At,
    field: &str,
    decode: impl Fn(u64) -> Result<T, OnnxError>,
) -> Result<(), OnnxError> {
    match (value, &kind) {
        (Value::Varint(v), Scalar::Varint) => out.push(decode(v)?),
        (Value::Fixed32(v), Scalar::Fixed32) => out.push(decode(u64::from(v))?),
        (Value::Fixed64(v), Scalar::Fixed64) => out.push(decode(v)?),
        (Value::Bytes(span), _) => {
            let run = span.of(file);
            match kind {
                Scalar::Fixed32 | Scalar::Fixed64 => {
                    let size = if matches!(kind, Scalar::Fixed32) {
                        4
                    } else {
                        8
                    };
                    if run.len() % size != 0 {
                        return Err(at.malformed(format!(
                            "packed `{field}` of {} bytes is not whole {size}-byte elements",
                            run.len()
                        )));
                    }
                    out.reserve(run.len() / size);
                    for chunk in run.chunks_exact(size) {
                        let mut word = [0u8; 8];
                        word[..size].copy_from_slice(chunk);
                        out.push(decode(u64::from_le_bytes(word))?);
                    }
                }
                Scalar::Varint => {
                    let mut r = Reader::new(file, span);
                    while r.pos < r.end {
                        out.push(decode(r.varint(at)?)?);
                    }
                }
            }
        }
        (other, _) => {
            let want = match kind {
                Scalar::Varint => "varint",
                Scalar::Fixed32 => "fixed32",
                Scalar::Fixed64 => "fixed64",
            };
            return Err(at.wire(field, want, other.wire_name()));
        }
    }
    Ok(())
}

/// Writes protobuf messages: for tests, tools and examples that build small ONNX files
/// without an exporter. Fields are written in call order.
#[derive(Debug, Default, Clone)]
pub struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    /// An empty message.
    pub fn new() -> Encoder {
        Encoder::default()
    }

    fn raw_varint(&mut self, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.buf.push(b);
                return;
            }
            self.buf.push(b | 0x80);
        }
    }

    fn tag(&mut self, field: u32, wire: u64) {
        self.raw_varint((u64::from(field) << 3) | wire);
    }

    /// A varint field (`int64`, `int32`, enum; negative values as 10-byte varints).
    pub fn varint(&mut self, field: u32, v: i64) -> &mut Encoder {
        self.tag(field, 0);
        self.raw_varint(v as u64);
        self
    }

    /// A `float` field.
    pub fn float(&mut self, field: u32, v: f32) -> &mut Encoder {
        self.tag(field, 5);
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A `bytes` or `string` field.
    pub fn bytes(&mut self, field: u32, v: &[u8]) -> &mut Encoder {
        self.tag(field, 2);
        self.raw_varint(v.len() as u64);
        self.buf.extend_from_slice(v);
        self
    }

    /// A nested message field.
    pub fn message(&mut self, field: u32, m: &Encoder) -> &mut Encoder {
        self.bytes(field, &m.buf)
    }

    /// A packed repeated varint field.
    pub fn packed_varints(&mut self, field: u32, vs: &[i64]) -> &mut Encoder {
        let mut run = Encoder::new();
        for v in vs {
            run.raw_varint(*v as u64);
        }
        self.bytes(field, &run.buf)
    }

    /// The encoded message.
    pub fn finish(&self) -> Vec<u8> {
        self.buf.clone()
    }
}
