//! The CPU dequantization matches gguf-py (`gguf.quants.dequantize`, llama.cpp's reference in
//! Python) on random blocks of every type (`tools/make_quant_fixtures.py`). Where ggml computes
//! `a * b + c` in two roundings and gpuport in one `fma` (so that GPU and CPU agree bit for
//! bit), the two may differ by one rounding of the larger term; elsewhere they are identical.

#![allow(clippy::unwrap_used)]

use gpuport_kernels::quant::{GgmlType, dequantize};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn cpu_dequantization_matches_gguf_py() {
    let text = include_str!("fixtures/dequant_reference.json");
    let fixture: serde_json::Value = serde_json::from_str(text).unwrap();
    for ty in GgmlType::ALL {
        let entry = &fixture[ty.name()];
        let raw = hex(entry["raw"].as_str().unwrap());
        let want: Vec<f32> = entry["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let got = dequantize(ty, &raw);
        assert_eq!(got.len(), want.len(), "{}", ty.name());
        let fused = matches!(
            ty,
            GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q4K | GgmlType::Q5K
        );
        let mut exact = 0;
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            if g.to_bits() == w.to_bits() {
                exact += 1;
                continue;
            }
            assert!(
                fused,
                "{} element {i}: {g} != {w} (this type has no fused multiply-add)",
                ty.name()
            );
            // One rounding of a term no larger than the scale times the largest quant (63).
            let bound = f32::EPSILON * (w.abs() + 64.0 * g.abs().max(w.abs()).max(1e-3));
            assert!(
                (g - w).abs() <= bound,
                "{} element {i}: {g} vs {w}",
                ty.name()
            );
        }
        assert!(
            exact * 10 >= got.len() * 9,
            "{}: only {exact} of {} identical",
            ty.name(),
            got.len()
        );
    }
}
