//! The ONNX backend node tests that the `onnx==1.22.0` wheel ships: where they are, their
//! tensors on the host, and the comparison rule (floats within 1e-4 + 1e-3·|want|, NaN equal
//! to NaN; integers and bools exact; type and shape always exact).

use std::path::{Path, PathBuf};

use gpuport_onnx::{Data, HostTensor, TensorFile};

/// `onnx/backend/test/data/node/` of the installed `onnx` package, when python3 imports it
/// (otherwise `None`, after [`crate::available`] said why).
pub fn root() -> Option<PathBuf> {
    if !crate::python_modules_available(&["onnx"]) {
        return None;
    }
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import onnx, os; print(os.path.dirname(onnx.__file__))",
        ])
        .output()
        .unwrap();
    let pkg = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    Some(pkg.join("backend/test/data/node"))
}

/// The tests named in `onnx/tests/node_allowlist.txt`: those the evaluator passes.
pub fn allowlist() -> Vec<String> {
    let text =
        std::fs::read_to_string(crate::repo_root().join("onnx/tests/node_allowlist.txt")).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The tensor in the `.pb` file at `path`, or the type it holds when that has no host form.
pub fn load(path: &Path) -> Result<HostTensor, String> {
    let f = TensorFile::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let t = f.tensor();
    let v = f.values().unwrap();
    HostTensor::from_values(t.data_type, t.shape().unwrap(), &v)
        .ok_or_else(|| format!("{} has no host form", t.data_type))
}

/// The data-set folders of one test, in order.
pub fn data_sets(test: &Path) -> Vec<PathBuf> {
    let mut sets: Vec<PathBuf> = std::fs::read_dir(test)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    sets.sort();
    sets
}

/// Why `got` is not `want`, if it is not.
pub fn mismatch(got: &HostTensor, want: &HostTensor) -> Option<String> {
    if got.shape != want.shape || got.data.dtype() != want.data.dtype() {
        return Some(format!(
            "got {:?} {}, want {:?} {}",
            got.shape,
            got.data.dtype(),
            want.shape,
            want.data.dtype()
        ));
    }
    let close = |g: f64, w: f64| {
        (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= 1e-4 + 1e-3 * w.abs()
    };
    match &want.data {
        Data::F32(_) | Data::F64(_) => {
            let (g, w) = (got.data.to_f64(), want.data.to_f64());
            let bad = g.iter().zip(&w).position(|(g, w)| !close(*g, *w))?;
            Some(format!("element {bad}: got {}, want {}", g[bad], w[bad]))
        }
        _ => (got.data != want.data).then(|| "integer values differ".to_string()),
    }
}
