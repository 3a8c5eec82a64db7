//! A user's tuning table (`$XDG_CONFIG_HOME/gpuport/tuning.json`, `GPUPORT_TUNING`): any JSON
//! parses or is refused without panicking, and whatever the file names, the variants handed
//! to the kernels are ones the kernels define and the device can run.
#![no_main]

use gpuport_kernels::gemm::GemmTile;
use gpuport_kernels::gemv::GemvTunables;
use gpuport_kernels::quant::GgmlType;
use gpuport_runtime::tuning::{DeviceCaps, TuningTable, gemv_key, gemv_q8_key};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(table) = TuningTable::parse(text) else {
        return;
    };
    let all = GemvTunables::all();
    for a in &table.adapters {
        let info = wgpu::AdapterInfo {
            name: a.name.clone(),
            vendor: a.vendor,
            device: a.device,
            driver: a.driver.clone(),
            ..wgpu::AdapterInfo::new(wgpu::DeviceType::Other, wgpu::Backend::Noop)
        };
        for caps in [
            DeviceCaps {
                subgroups: false,
                max_invocations: 256,
                max_workgroup_bytes: 16_384,
            },
            DeviceCaps {
                subgroups: true,
                max_invocations: 1024,
                max_workgroup_bytes: 49_152,
            },
        ] {
            for ty in GgmlType::ALL {
                for key in [gemv_key(ty), gemv_q8_key(ty)] {
                    if let Some(t) = table.gemv_variant(&info, &key, caps) {
                        assert!(all.contains(&t));
                        assert!(t.wg <= caps.max_invocations);
                    }
                }
                if let Some(tile) = table.gemm_variant(&info, ty, caps) {
                    assert!(GemmTile::all().contains(&tile));
                    assert!(tile.workgroup_bytes() <= caps.max_workgroup_bytes);
                }
            }
        }
    }
});
