//! `gpuport probe`: the adapter, its backend, driver, features and limits; with `--bench`, the
//! streaming-read bandwidth this adapter achieves.

use gpuport_runtime::bench::stream_ceiling;
use gpuport_runtime::{Gpu, GpuOptions};

use crate::output::grouped;
use crate::{EXIT_OK, EXIT_USAGE};

pub fn run(json: bool, bench: bool) -> u8 {
    let gpu = match Gpu::new(&GpuOptions::default()) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return EXIT_USAGE;
        }
    };
    let report = gpu.report();
    let ceiling = if bench {
        match stream_ceiling(&gpu, 1 << 30, false) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("error [{}]: {e}", e.code());
                return EXIT_USAGE;
            }
        }
    } else {
        None
    };
    if json {
        let doc = serde_json::json!({
            "adapter": report,
            "streaming_read_gbps": ceiling.as_ref().map(|c| c.gbps),
            "streaming_read_points": ceiling.as_ref().map(|c| &c.points),
        });
        println!("{doc:#}");
        return EXIT_OK;
    }
    println!(
        "{} ({}, {})",
        report.name, report.backend, report.device_type
    );
    println!(
        "  driver                 {} {}",
        report.driver, report.driver_info
    );
    println!(
        "  pci                    {:04x}:{:04x}",
        report.vendor, report.device
    );
    println!("  features               {}", report.features.join(", "));
    println!(
        "  subgroup sizes         {}..={}",
        report.subgroup_sizes.0, report.subgroup_sizes.1
    );
    println!(
        "  max buffer             {} bytes",
        grouped(report.max_buffer_size)
    );
    println!(
        "  max storage binding    {} bytes",
        grouped(report.max_storage_buffer_binding_size)
    );
    println!(
        "  binding alignment      {} bytes",
        report.min_storage_buffer_offset_alignment
    );
    println!(
        "  workgroups / dimension {}",
        report.max_compute_workgroups_per_dimension
    );
    println!(
        "  threads / workgroup    {}",
        report.max_compute_invocations_per_workgroup
    );
    println!(
        "  workgroup memory       {} bytes",
        report.max_compute_workgroup_storage_size
    );
    if let Some(c) = ceiling {
        println!(
            "  streaming read         {:.1} GB/s (best of {} configurations)",
            c.gbps,
            c.points.len()
        );
    }
    EXIT_OK
}
