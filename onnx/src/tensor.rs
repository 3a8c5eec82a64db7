//! `TensorProto`: a tensor's shape, type and where its values are, and those values decoded
//! into the raw layout (fixed-width little-endian, sub-byte types packed), the layout the
//! executor uploads.

use std::borrow::Cow;
use std::path::Path;

use crate::dtype::{DataType, TypedField};
use crate::error::{At, OnnxError};
use crate::wire::{Reader, Scalar, Span, push_repeated};

/// `TensorProto.DataLocation.EXTERNAL`.
const LOCATION_EXTERNAL: i32 = 1;

/// Where a tensor's values are stored.
#[derive(Debug, Clone, PartialEq)]
pub enum Storage {
    /// No values (a tensor with no elements).
    Empty,
    /// `raw_data`: the raw layout, borrowed from the file.
    Raw(Span),
    /// `float_data`.
    Floats(Vec<f32>),
    /// `int32_data`.
    Int32s(Vec<i32>),
    /// `string_data`.
    Strings(Vec<Vec<u8>>),
    /// `int64_data`.
    Int64s(Vec<i64>),
    /// `double_data`.
    Doubles(Vec<f64>),
    /// `uint64_data`.
    Uint64s(Vec<u64>),
    /// A file beside the model.
    External(ExternalData),
}

/// The `external_data` entries of a tensor stored outside the model file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalData {
    /// `location`: a path relative to the model's directory.
    pub location: String,
    /// `offset`: where the bytes begin in that file.
    pub offset: u64,
    /// `length`: how many bytes, when given.
    pub length: Option<u64>,
    /// `checksum` (SHA-1 of the file), when given; kept, not checked.
    pub checksum: Option<String>,
}

/// One `TensorProto`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Its name (`name`, empty when unset).
    pub name: String,
    /// `dims`, outermost first.
    pub dims: Vec<u64>,
    /// Its element type.
    pub data_type: DataType,
    /// Elements (the product of `dims`).
    pub elems: u64,
    /// Where its values are.
    pub storage: Storage,
    /// `segment` (begin, end), which this reader does not assemble.
    pub segment: Option<(i64, i64)>,
    /// `doc_string`.
    pub doc_string: String,
}

/// A tensor's values in the raw layout: fixed-width little-endian elements (sub-byte types
/// packed), or a list of byte strings for `STRING`.
#[derive(Debug, Clone, PartialEq)]
pub enum Values<'f> {
    /// The raw layout, borrowed from the file when it was `raw_data`.
    Bytes(Cow<'f, [u8]>),
    /// `STRING` elements.
    Strings(&'f [Vec<u8>]),
}

impl Tensor {
    /// Decodes the `TensorProto` in `file[span]`.
    pub(crate) fn parse(file: &[u8], span: Span, at: &At) -> Result<Tensor, OnnxError> {
        let mut r = Reader::new(file, span);
        let mut name = String::new();
        let mut doc_string = String::new();
        let mut dims: Vec<i64> = Vec::new();
        let mut data_type = 0i32;
        let mut segment = None;
        let mut raw = None;
        let mut floats = Vec::new();
        let mut int32s = Vec::new();
        let mut strings = Vec::new();
        let mut int64s = Vec::new();
        let mut doubles = Vec::new();
        let mut uint64s = Vec::new();
        let mut external = Vec::new();
        let mut location = 0i32;
        while let Some((field, v)) = r.next(at)? {
            match field {
                1 => push_repeated(file, v, Scalar::Varint, &mut dims, at, "dims", |w| {
                    Ok(w as i64)
                })?,
                2 => data_type = v.int32(at, "data_type")?,
                3 => segment = Some(parse_segment(file, v.bytes(at, "segment")?, at)?),
                4 => push_repeated(
                    file,
                    v,
                    Scalar::Fixed32,
                    &mut floats,
                    at,
                    "float_data",
                    |w| Ok(f32::from_bits(w as u32)),
                )?,
                5 => push_repeated(
                    file,
                    v,
                    Scalar::Varint,
                    &mut int32s,
                    at,
                    "int32_data",
                    |w| {
                        i32::try_from(w as i64).map_err(|_| {
                            at.invalid(format!("int32_data value {w} overflows int32"))
                        })
                    },
                )?,
                6 => strings.push(v.bytes(at, "string_data")?.of(file).to_vec()),
                7 => push_repeated(
                    file,
                    v,
                    Scalar::Varint,
                    &mut int64s,
                    at,
                    "int64_data",
                    |w| Ok(w as i64),
                )?,
                8 => name = v.string(file, at, "name")?,
                9 => raw = Some(v.bytes(at, "raw_data")?),
                10 => push_repeated(
                    file,
                    v,
                    Scalar::Fixed64,
                    &mut doubles,
                    at,
                    "double_data",
                    |w| Ok(f64::from_bits(w)),
                )?,
                11 => push_repeated(file, v, Scalar::Varint, &mut uint64s, at, "uint64_data", Ok)?,
                12 => doc_string = v.string(file, at, "doc_string")?,
                13 => external.push(crate::model::parse_entry(
                    file,
                    v.bytes(at, "external_data")?,
                    &at.field("external_data"),
                )?),
                14 => location = v.int32(at, "data_location")?,
                _ => {}
            }
        }
        let at = if name.is_empty() {
            at.clone()
        } else {
            At(format!("{at}({name})"))
        };
        let data_type = DataType::from_id(data_type).ok_or_else(|| {
            at.invalid(format!("data_type {data_type} is not an ONNX element type"))
        })?;
        let mut elems = 1u64;
        let mut udims = Vec::with_capacity(dims.len());
        for d in &dims {
            let d = u64::try_from(*d)
                .map_err(|_| at.invalid(format!("dims {dims:?} has a negative dimension")))?;
            elems = elems
                .checked_mul(d)
                .ok_or_else(|| at.invalid(format!("dims {dims:?} overflow 64 bits")))?;
            udims.push(d);
        }
        let typed: [(TypedField, bool, &str); 6] = [
            (TypedField::Float, !floats.is_empty(), "float_data"),
            (TypedField::Int32, !int32s.is_empty(), "int32_data"),
            (TypedField::String, !strings.is_empty(), "string_data"),
            (TypedField::Int64, !int64s.is_empty(), "int64_data"),
            (TypedField::Double, !doubles.is_empty(), "double_data"),
            (TypedField::Uint64, !uint64s.is_empty(), "uint64_data"),
        ];
        let mut sources: Vec<&str> = typed.iter().filter(|t| t.1).map(|t| t.2).collect();
        if raw.is_some() {
            sources.push("raw_data");
        }
        if location == LOCATION_EXTERNAL {
            sources.push("external_data");
        } else if location != 0 {
            return Err(at.invalid(format!("data_location {location} is neither 0 nor 1")));
        }
        if sources.len() > 1 {
            return Err(at.invalid(format!(
                "values in more than one place: {}",
                sources.join(", ")
            )));
        }
        if let Some((field, _, fname)) = typed.iter().find(|t| t.1)
            && *field != data_type.typed_field()
        {
            return Err(at.invalid(format!("{fname} cannot hold {data_type} values")));
        }
        let expected_raw = data_type.raw_bytes(elems);
        let storage = if location == LOCATION_EXTERNAL {
            let ext = external_data(&external, &at)?;
            let Some(bytes) = expected_raw else {
                return Err(at.invalid(format!("{data_type} tensors cannot be external")));
            };
            if let Some(len) = ext.length
                && len != bytes
            {
                return Err(at.invalid(format!(
                    "external length {len} != {bytes} bytes of {elems} {data_type} elements"
                )));
            }
            Storage::External(ext)
        } else if let Some(span) = raw {
            let Some(bytes) = expected_raw else {
                return Err(at.invalid(format!("raw_data cannot hold {data_type} values")));
            };
            if span.len as u64 != bytes {
                return Err(at.invalid(format!(
                    "raw_data has {} bytes, {elems} {data_type} elements take {bytes}",
                    span.len
                )));
            }
            Storage::Raw(span)
        } else {
            let (count, storage) = if !floats.is_empty() {
                (floats.len(), Storage::Floats(floats))
            } else if !int32s.is_empty() {
                (int32s.len(), Storage::Int32s(int32s))
            } else if !strings.is_empty() {
                (strings.len(), Storage::Strings(strings))
            } else if !int64s.is_empty() {
                (int64s.len(), Storage::Int64s(int64s))
            } else if !doubles.is_empty() {
                (doubles.len(), Storage::Doubles(doubles))
            } else if !uint64s.is_empty() {
                (uint64s.len(), Storage::Uint64s(uint64s))
            } else {
                (0, Storage::Empty)
            };
            let want = typed_count(data_type, elems);
            if count as u64 != want && segment.is_none() {
                return Err(at.invalid(format!(
                    "{} values stored, {elems} {data_type} elements need {want}",
                    count
                )));
            }
            storage
        };
        Ok(Tensor {
            name,
            dims: udims,
            data_type,
            elems,
            storage,
            segment,
            doc_string,
        })
    }

    /// The shape as `usize`s, outermost first; `None` when a dimension does not fit.
    pub fn shape(&self) -> Option<Vec<usize>> {
        self.dims.iter().map(|d| usize::try_from(*d).ok()).collect()
    }

    /// The values in the raw layout. `file` is the bytes the tensor was read from;
    /// `model_dir` is where external data is looked up (`None`: external data is an error).
    pub fn values<'f>(
        &'f self,
        file: &'f [u8],
        model_dir: Option<&Path>,
    ) -> Result<Values<'f>, OnnxError> {
        let at = At::root(&format!("tensor `{}`", self.name));
        if self.segment.is_some() {
            return Err(at.unsupported("segmented tensors".into()));
        }
        let width = (self.data_type.bits() / 8).max(1) as usize;
        let bytes: Vec<u8> = match &self.storage {
            Storage::Strings(s) => return Ok(Values::Strings(s)),
            Storage::Raw(span) => return Ok(Values::Bytes(Cow::Borrowed(span.of(file)))),
            Storage::External(ext) => {
                return read_external(ext, self, model_dir, &at).map(Values::Bytes);
            }
            Storage::Empty => {
                if self.data_type == DataType::String {
                    return Ok(Values::Strings(&[]));
                }
                Vec::new()
            }
            Storage::Floats(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Storage::Doubles(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Storage::Int64s(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Storage::Uint64s(v) => {
                let mut out = Vec::with_capacity(v.len() * width);
                for x in v {
                    if width == 4 && *x > u64::from(u32::MAX) {
                        return Err(at.invalid(format!("uint64_data value {x} overflows UINT32")));
                    }
                    out.extend_from_slice(&x.to_le_bytes()[..width]);
                }
                out
            }
            Storage::Int32s(v) => {
                // Each int32 is one element of 8, 16 or 32 bits (sub-byte types: one packed
                // byte). Both the signed and the unsigned reading of the width are accepted
                // (writers differ for 16-bit floats); anything wider is an error.
                let bits = (width * 8) as u32;
                let (lo, hi) = if bits == 32 {
                    (i64::from(i32::MIN), i64::from(i32::MAX))
                } else {
                    (-(1i64 << (bits - 1)), (1i64 << bits) - 1)
                };
                let mut out = Vec::with_capacity(v.len() * width);
                for x in v {
                    let x64 = i64::from(*x);
                    if x64 < lo || x64 > hi {
                        return Err(at.invalid(format!(
                            "int32_data value {x} does not fit {}",
                            self.data_type
                        )));
                    }
                    if self.data_type == DataType::Bool && !(0..=1).contains(x) {
                        return Err(at.invalid(format!("int32_data value {x} is not a BOOL")));
                    }
                    out.extend_from_slice(&x.to_le_bytes()[..width]);
                }
                out
            }
        };
        Ok(Values::Bytes(Cow::Owned(bytes)))
    }
}

/// How many typed-field values `elems` elements of `t` take.
fn typed_count(t: DataType, elems: u64) -> u64 {
    match (t, t.bits()) {
        (DataType::Complex64 | DataType::Complex128, _) => elems.saturating_mul(2),
        (_, 4) => elems.div_ceil(2),
        (_, 2) => elems.div_ceil(4),
        _ => elems,
    }
}

fn parse_segment(file: &[u8], span: Span, at: &At) -> Result<(i64, i64), OnnxError> {
    let at = at.field("segment");
    let mut r = Reader::new(file, span);
    let (mut begin, mut end) = (0, 0);
    while let Some((field, v)) = r.next(&at)? {
        match field {
            1 => begin = v.int64(&at, "begin")?,
            2 => end = v.int64(&at, "end")?,
            _ => {}
        }
    }
    Ok((begin, end))
}

fn external_data(entries: &[(String, String)], at: &At) -> Result<ExternalData, OnnxError> {
    let get = |key: &str| {
        entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let location = get("location")
        .ok_or_else(|| at.invalid("external data without a `location` entry".into()))?
        .to_string();
    let number = |key: &str| -> Result<Option<u64>, OnnxError> {
        get(key)
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    at.external(&location, format!("`{key}` {v:?} is not a byte count"))
                })
            })
            .transpose()
    };
    gpuport_manifest_core::fileref::check_relative_path(&location)
        .map_err(|why| at.external(&location, format!("path {why}")))?;
    Ok(ExternalData {
        offset: number("offset")?.unwrap_or(0),
        length: number("length")?,
        checksum: get("checksum").map(str::to_string),
        location,
    })
}

fn read_external<'f>(
    ext: &ExternalData,
    t: &Tensor,
    model_dir: Option<&Path>,
    at: &At,
) -> Result<Cow<'f, [u8]>, OnnxError> {
    use std::io::{Read, Seek, SeekFrom};
    let Some(dir) = model_dir else {
        return Err(at.external(&ext.location, "no model directory to read it from".into()));
    };
    let want = t
        .data_type
        .raw_bytes(t.elems)
        .ok_or_else(|| at.invalid(format!("{} tensors cannot be external", t.data_type)))?;
    let path = dir.join(&ext.location);
    let fail = |what: String| at.external(&ext.location, what);
    let mut f = std::fs::File::open(&path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
    let size = f
        .metadata()
        .map_err(|e| fail(format!("{}: {e}", path.display())))?
        .len();
    if ext.offset.checked_add(want).is_none_or(|end| end > size) {
        return Err(fail(format!(
            "bytes {}..{} are outside the file's {size}",
            ext.offset,
            ext.offset.saturating_add(want)
        )));
    }
    let mut bytes = vec![0u8; want as usize];
    f.seek(SeekFrom::Start(ext.offset))
        .and_then(|_| f.read_exact(&mut bytes))
        .map_err(|e| fail(format!("{}: {e}", path.display())))?;
    Ok(Cow::Owned(bytes))
}
