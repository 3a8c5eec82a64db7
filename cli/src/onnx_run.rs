//! `gpuport onnx-run MODEL.onnx --input NAME=FILE.npy … --output-dir DIR`: a bare ONNX graph
//! on `.npy` inputs, each output written as `DIR/<name>.npy` in its own type and shape.
//!
//! Exit codes: 0 done; 1 the model, an input or a node is invalid; 2 a usage or I/O error;
//! 3 an op, attribute, mode or type outside the supported set (the message says
//! "unsupported").

use std::path::{Path, PathBuf};

use gpuport_onnx::bundle::Executor;
use gpuport_onnx::{EvalError, HostTensor, OnnxModel, npy};

use crate::vision::DeviceArg;

use crate::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};

/// Exit code for a graph outside the supported set.
pub const EXIT_UNSUPPORTED: u8 = 3;

pub fn run(model: &Path, inputs: &[String], output_dir: &Path, device: DeviceArg) -> u8 {
    let m = match OnnxModel::open(model) {
        Ok(m) => m,
        Err(gpuport_onnx::OnnxError::Io { path, source }) => {
            eprintln!("error: {}: {source}", path.display());
            return EXIT_USAGE;
        }
        Err(e) => {
            eprintln!("error: {}: {e}", model.display());
            return EXIT_INVALID;
        }
    };
    let mut given: Vec<(String, HostTensor)> = Vec::new();
    for arg in inputs {
        let Some((name, file)) = arg.split_once('=') else {
            eprintln!("error: --input {arg:?} must be NAME=FILE.npy");
            return EXIT_USAGE;
        };
        if given.iter().any(|(n, _)| n == name) {
            eprintln!("error: --input `{name}` is given twice");
            return EXIT_USAGE;
        }
        match npy::read(Path::new(file)) {
            Ok(t) => given.push((name.to_string(), t)),
            Err(e @ npy::NpyError::Io { .. }) => {
                eprintln!("error: --input {name}: {e}");
                return EXIT_USAGE;
            }
            Err(e) => {
                eprintln!("error: --input {name}: {file}: {e}");
                return EXIT_INVALID;
            }
        }
    }
    let device = match crate::vision::device(device) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let outputs = match Executor::new(m, &device).run(&given) {
        Ok(o) => o,
        Err(e @ EvalError::Unsupported { .. }) => {
            eprintln!("error: {}: {e}", model.display());
            return EXIT_UNSUPPORTED;
        }
        Err(e) => {
            eprintln!("error: {}: {e}", model.display());
            return EXIT_INVALID;
        }
    };
    if let Err(e) = std::fs::create_dir_all(output_dir) {
        eprintln!("error: {}: {e}", output_dir.display());
        return EXIT_USAGE;
    }
    let mut written: Vec<PathBuf> = Vec::new();
    for (name, t) in &outputs {
        let path = output_dir.join(format!("{}.npy", file_stem(name)));
        if written.contains(&path) {
            eprintln!(
                "error: outputs `{name}` and another map to {}",
                path.display()
            );
            return EXIT_INVALID;
        }
        match npy::write(&path, t) {
            Ok(()) => written.push(path),
            Err(e @ npy::NpyError::Type(_)) => {
                eprintln!("error: output `{name}`: {e}");
                return EXIT_UNSUPPORTED;
            }
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_USAGE;
            }
        }
        eprintln!(
            "{name}: {:?} {} -> {}",
            t.shape,
            t.data.dtype(),
            written[written.len() - 1].display()
        );
    }
    EXIT_OK
}

/// An output name as a file name: ONNX names are free text, so anything but letters, digits,
/// `.`, `_` and `-` becomes `_` (and a name of dots alone gets a leading `_`).
pub fn file_stem(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        format!("_{s}")
    } else {
        s
    }
}
