//! The requirement declaration names what an adapter lacks.

use gpuport_testing::{Needs, gpu};

#[test]
fn unmet_needs_are_named() {
    let Some(gpu) = gpu() else { return };
    assert!(Needs::none().unmet(&gpu).is_empty());
    let huge = Needs::none().storage_binding(u64::MAX);
    let unmet = huge.unmet(&gpu);
    assert_eq!(unmet.len(), 1, "{unmet:?}");
    assert!(unmet[0].contains("storage binding"), "{unmet:?}");
    let all = wgpu::Features::all();
    let missing = Needs::none().features(all).unmet(&gpu);
    assert!(
        missing.iter().any(|m| m.starts_with("features")),
        "{missing:?}"
    );
    assert_eq!(
        Needs::none().subgroups().unmet(&gpu).is_empty(),
        gpu.has_subgroups()
    );
}
