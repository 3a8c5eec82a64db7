//! Variant selection: the first variant whose runtime has an adapter, whose backend the platform
//! supports, and whose `min_ram_mb` fits.

#![allow(clippy::unwrap_used)]

mod support;

use gpuport_manifest_core::modelport::{
    Runtime, RuntimeSupport, SkipReason, read_manifest, select_variant,
};

fn example(name: &str) -> gpuport_manifest_core::modelport::Manifest {
    let path = support::repo_root().join(format!("examples/modelport/{name}.json"));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    read_manifest(&doc).unwrap().document
}

#[test]
fn first_fitting_variant_wins() {
    let m = example("image-classification");
    let both = [
        RuntimeSupport::any_backend(Runtime::Onnx),
        RuntimeSupport::any_backend(Runtime::Executorch),
    ];
    assert_eq!(
        select_variant(&m.variants, &both, Some(4096)).chosen,
        Some(0)
    );
}

#[test]
fn runtime_without_adapter_is_skipped() {
    let m = example("image-classification");
    let s = select_variant(
        &m.variants,
        &[RuntimeSupport::any_backend(Runtime::Executorch)],
        None,
    );
    assert_eq!(s.chosen, Some(1));
    assert_eq!(
        s.skipped[0].reason,
        SkipReason::NoAdapter {
            runtime: Runtime::Onnx
        }
    );
}

#[test]
fn unsupported_backend_is_skipped() {
    let m = example("image-classification");
    let only_coreml = RuntimeSupport {
        runtime: Runtime::Executorch,
        backends: Some(vec!["coreml".into()]),
    };
    let s = select_variant(&m.variants, &[only_coreml], None);
    assert_eq!(s.chosen, None);
    assert_eq!(
        s.skipped[1].reason,
        SkipReason::BackendUnsupported {
            backend: "xnnpack".into()
        }
    );
}

#[test]
fn ram_decides_between_quantizations() {
    let m = example("text-generation");
    let llama = [RuntimeSupport::any_backend(Runtime::Llamacpp)];
    assert_eq!(
        select_variant(&m.variants, &llama, Some(4096)).chosen,
        Some(0)
    );
    assert_eq!(
        select_variant(&m.variants, &llama, Some(1024)).chosen,
        Some(0)
    );
    let s = select_variant(&m.variants, &llama, Some(1023));
    assert_eq!(s.chosen, None);
    assert_eq!(s.skipped.len(), 2);
    assert_eq!(
        s.skipped[0].reason,
        SkipReason::NotEnoughRam {
            min_ram_mb: 1024,
            device_ram_mb: 1023
        }
    );
    // Unknown RAM rules nothing out.
    assert_eq!(select_variant(&m.variants, &llama, None).chosen, Some(0));
    // Nothing registered: nothing chosen, every variant explained.
    assert_eq!(
        select_variant(&m.variants, &[], Some(1 << 20))
            .skipped
            .len(),
        2
    );
}
