//! `.npy` files against NumPy: arrays NumPy writes read back as the same values, and what
//! gpuport writes NumPy loads as the same array.

#![allow(clippy::unwrap_used)]

use gpuport_onnx::{Data, HostTensor, npy};

const CASES: &str = r#"
import numpy as np, sys, os
d = sys.argv[1]
cases = {
    "f32_2x3": np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
    "f64_scalar": np.array(3.25, dtype=np.float64),
    "i64_vec": np.array([-(2**62), -1, 0, 5], dtype=np.int64),
    "i8_3d": np.arange(-12, 12, dtype=np.int8).reshape(2, 3, 4),
    "u8_empty": np.zeros((0, 4), dtype=np.uint8),
    "bool_vec": np.array([True, False, True]),
    "u16": np.array([1, 65535], dtype=np.uint16),
    "i32_col": np.arange(5, dtype=np.int32).reshape(5, 1),
}
for k, v in cases.items():
    np.save(os.path.join(d, k + ".npy"), v)
"#;

const CHECK: &str = r#"
import numpy as np, sys, os
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    if f.startswith("back_"):
        a, b = np.load(os.path.join(d, f)), np.load(os.path.join(d, f[5:]))
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), f
        print(f)
"#;

fn python(script: &str, dir: &std::path::Path) -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn numpy_round_trips() {
    if !gpuport_testing::python_modules_available(&["numpy"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    python(CASES, dir.path());
    let t = npy::read(&dir.path().join("f32_2x3.npy")).unwrap();
    assert_eq!(t.shape, [2, 3]);
    assert_eq!(t.data, Data::F32((0..6).map(|i| i as f32 / 7.0).collect()));
    let t = npy::read(&dir.path().join("f64_scalar.npy")).unwrap();
    assert_eq!((t.shape.len(), t.data.clone()), (0, Data::F64(vec![3.25])));
    let t = npy::read(&dir.path().join("i64_vec.npy")).unwrap();
    assert_eq!(t.data, Data::I64(vec![-(1 << 62), -1, 0, 5]));
    let t = npy::read(&dir.path().join("bool_vec.npy")).unwrap();
    assert_eq!(t.data, Data::Bool(vec![true, false, true]));
    let mut n = 0;
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let t = npy::read(&p).unwrap();
        npy::write(&dir.path().join(format!("back_{name}")), &t).unwrap();
        n += 1;
    }
    let checked = python(CHECK, dir.path());
    assert_eq!(checked.lines().count(), n, "{checked}");
}

#[test]
fn bad_npy_files_are_refused() {
    let good = npy::to_bytes(&HostTensor::f32(vec![2], vec![1.0, 2.0]).unwrap()).unwrap();
    assert!(npy::parse(&good).is_ok());
    let e = npy::parse(&good[..good.len() - 1]).unwrap_err().to_string();
    assert!(e.contains("7 data bytes for shape [2]"), "{e}");
    let e = npy::parse(b"PK\x03\x04not npy").unwrap_err().to_string();
    assert!(e.contains("magic"), "{e}");
    let edit = |from: &str, to: &str| {
        let at = good
            .windows(from.len())
            .position(|w| w == from.as_bytes())
            .unwrap();
        let mut b = good.clone();
        b.splice(at..at + from.len(), to.bytes());
        b
    };
    let e = npy::parse(&edit("False", "True ")).unwrap_err().to_string();
    assert!(e.contains("fortran_order"), "{e}");
    let e = npy::parse(&edit("<f4", "|O8")).unwrap_err().to_string();
    assert!(e.contains("dtype \"|O8\""), "{e}");
}
