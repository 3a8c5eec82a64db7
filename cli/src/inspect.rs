//! `gpuport inspect`: a human summary of a bundle, package or program.

use std::path::Path;

use gpuport_manifest_core::Choice;
use gpuport_manifest_core::document::Opened;
use gpuport_manifest_core::fileref::{FileLocation, FileRef};
use gpuport_manifest_core::mlc::{self, CompiledProgram, ModelPackage, Processor};
use gpuport_manifest_core::modelport::{
    Dim, ImagePreprocess, Manifest, Postprocess, ResizeTarget, Runtime, SkipReason, select_variant,
};

use crate::output::{bytes, open_valid};
use crate::{EXIT_OK, EXIT_USAGE, host};

pub fn run(path: &Path, runtime_names: &[String], ram_mb: Option<u64>) -> u8 {
    let mut runtimes = Vec::new();
    for name in runtime_names {
        match Runtime::ALL.iter().find(|r| r.name() == name) {
            Some(r) => runtimes.push(*r),
            None => {
                let known: Vec<&str> = Runtime::ALL.iter().map(|r| r.name()).collect();
                eprintln!(
                    "error: unknown runtime `{name}` (known: {})",
                    known.join(", ")
                );
                return EXIT_USAGE;
            }
        }
    }
    let opened = match open_valid(path) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    match opened {
        Opened::Modelport { manifest, root } => {
            let ram = ram_mb.or_else(host::ram_mb);
            modelport(&manifest, &root, &runtimes, ram);
        }
        Opened::Package { package, root } => mlc_package(&package, &root),
        Opened::Program(program) => mlc_program(&program),
    }
    EXIT_OK
}

fn shape(s: &[Dim]) -> String {
    let dims: Vec<String> = s
        .iter()
        .map(|d| d.fixed().map_or("?".to_owned(), |n| n.to_string()))
        .collect();
    format!("[{}]", dims.join(", "))
}

fn file_line(root: &Path, f: &FileRef) -> String {
    match &f.location {
        FileLocation::Path(p) => {
            let state = match std::fs::metadata(root.join(p)) {
                Ok(m) if m.len() == f.size => "present",
                Ok(_) => "WRONG SIZE",
                Err(_) => "missing",
            };
            format!(
                "{p}  {}  sha256 {}…  {state}",
                bytes(f.size),
                &f.sha256[..12]
            )
        }
        FileLocation::Url(u) => format!(
            "{u}  {}  sha256 {}…  remote",
            bytes(f.size),
            &f.sha256[..12]
        ),
    }
}

fn preprocess_line(p: &ImagePreprocess) -> String {
    let resize = match p.resize.target {
        ResizeTarget::ShorterSide(n) => format!("shorter side → {n}"),
        ResizeTarget::Size([h, w]) => format!("{h}×{w}"),
    };
    let aa = if p.resize.antialias {
        "antialiased"
    } else {
        "no antialias"
    };
    let crop = p
        .center_crop
        .map(|[h, w]| format!(", center crop {h}×{w}"))
        .unwrap_or_default();
    format!(
        "resize {resize} {} ({aa}){crop}, {}, scale {}, mean {:?}, std {:?}",
        p.resize.method, p.color, p.scale, p.mean, p.std
    )
}

fn modelport(m: &Manifest, root: &Path, runtimes: &[Runtime], ram_mb: Option<u64>) {
    let name = m
        .name
        .as_deref()
        .map(|n| format!(" — {n}"))
        .unwrap_or_default();
    println!("{} {}{name}", m.id, m.version);
    println!("  schema    {}", m.schema);
    println!("  task      {}", m.task);
    println!("  license   {}", m.license);
    if let Some(s) = &m.source {
        println!("  source    {s}");
    }
    if let Some(d) = &m.description {
        println!("  about     {d}");
    }
    let registered = host::registered(runtimes);
    let selection = select_variant(&m.variants, &registered, ram_mb);
    let host_desc = format!(
        "runtimes [{}], RAM {}",
        registered
            .iter()
            .map(|r| r.runtime.name())
            .collect::<Vec<_>>()
            .join(", "),
        ram_mb.map_or("unknown".to_owned(), |r| format!("{r} MiB"))
    );
    match selection.chosen {
        Some(i) => println!("variants (chosen here: {}; {host_desc})", m.variants[i].id),
        None => println!("variants (chosen here: none; {host_desc})"),
    }
    for (i, v) in m.variants.iter().enumerate() {
        let mark = if selection.chosen == Some(i) {
            "*"
        } else {
            " "
        };
        let backend = v
            .backend
            .as_deref()
            .map(|b| format!("/{b}"))
            .unwrap_or_default();
        let ram = v
            .min_ram_mb
            .map(|r| format!(", min RAM {r} MiB"))
            .unwrap_or_default();
        let why = selection
            .skipped
            .iter()
            .find(|s| s.index == i)
            .map(|s| match &s.reason {
                SkipReason::NoAdapter { runtime } => {
                    format!("  [skipped: no executor for {runtime}]")
                }
                SkipReason::BackendUnsupported { backend } => {
                    format!("  [skipped: backend {backend} unsupported]")
                }
                SkipReason::NotEnoughRam {
                    min_ram_mb,
                    device_ram_mb,
                } => {
                    format!("  [skipped: needs {min_ram_mb} MiB, device has {device_ram_mb}]")
                }
            });
        println!(
            "  {mark} {}  {}{backend} {}{ram}{}",
            v.id,
            v.runtime,
            v.precision,
            why.unwrap_or_default()
        );
    }
    if !m.inputs.is_empty() {
        println!("inputs");
        for i in &m.inputs {
            let layout = i.layout.map(|l| format!(" {l}")).unwrap_or_default();
            println!("  {}  {} {}{layout}", i.name, i.dtype, shape(&i.shape));
            if let Some(p) = &i.preprocess {
                println!("      image: {}", preprocess_line(p));
            }
        }
    }
    if !m.outputs.is_empty() {
        println!("outputs");
        for o in &m.outputs {
            println!("  {}  {} {}", o.name, o.dtype, shape(&o.shape));
            match &o.postprocess {
                Some(Postprocess::Classification(c)) => {
                    println!("      classification: {}, top {}", c.activation, c.top_k)
                }
                Some(Postprocess::Detection(d)) => println!(
                    "      detection: {} {}{}, score ≥ {}, IoU {}, at most {}",
                    d.format,
                    d.box_format,
                    if d.normalized { " normalized" } else { "" },
                    d.score_threshold,
                    d.iou_threshold,
                    d.max_detections
                ),
                None => {}
            }
        }
    }
    if let Some(llm) = &m.llm {
        let d = &llm.defaults;
        println!("llm");
        println!(
            "  context {}, chat template {}, temperature {}, top_p {}, max_tokens {}{}{}",
            llm.context_length,
            llm.chat_template,
            d.temperature,
            d.top_p,
            d.max_tokens,
            d.top_k.map(|k| format!(", top_k {k}")).unwrap_or_default(),
            d.repeat_penalty
                .map(|r| format!(", repeat_penalty {r}"))
                .unwrap_or_default()
        );
    }
    if let Some(g) = &m.golden {
        println!(
            "golden: {} input(s), {} output(s), atol {}, rtol {}",
            g.inputs.len(),
            g.outputs.len(),
            g.tolerance.atol,
            g.tolerance.rtol
        );
    }
    let files = m.files();
    let total: u64 = files.iter().map(|(_, f)| f.size).sum();
    println!("files ({}, {})", files.len(), bytes(total));
    for (at, f) in &files {
        println!("  {}  {at}", file_line(root, f));
    }
}

fn mlc_package(p: &ModelPackage, root: &Path) {
    println!("MLC model package (schema_version {})", mlc::SCHEMA_VERSION);
    println!("  interface_id         {}", p.interface_id);
    println!("  parameter_schema_id  {}", p.weights.parameter_schema_id);
    println!("  chat config          {}", p.chat_config);
    println!("  weights manifest     {}", p.weights.manifest);
    println!("tasks");
    for (name, t) in &p.tasks {
        println!("  {name} → program `{}`, output {}", t.executor, t.output);
        for (input, i) in &t.inputs {
            let what = match &i.processor {
                Processor::Tokenizer => "tokenizer".to_owned(),
                Processor::AudioDecode(a) => format!(
                    "audio_decode {} {} Hz × {} ch, {}..={} samples",
                    a.format, a.sample_rate_hz, a.channels, a.min_samples, a.max_samples
                ),
                Processor::ImageDecode(im) => format!(
                    "image_decode {} {} {} {}×{}, {} embeddings",
                    im.format,
                    im.layout,
                    im.resize.mode,
                    im.resize.height,
                    im.resize.width,
                    im.num_embeddings
                ),
            };
            let adapter = i
                .adapter
                .as_deref()
                .map(|a| format!(" → adapter `{a}`"))
                .unwrap_or_default();
            println!("    {input}: {what}{adapter}");
        }
    }
    match mlc::check_package_files(root, p, false) {
        Ok(files) => {
            println!("weights: {} parameters", files.params.len());
            println!(
                "  total            {}",
                bytes(files.estimated_device_memory_bytes)
            );
            println!(
                "  largest binding  {}",
                bytes(files.max_storage_buffer_binding_size)
            );
            let state = if files.parameter_schema_id == p.weights.parameter_schema_id {
                "matches"
            } else {
                "DOES NOT MATCH"
            };
            println!("  parameter schema {} ({state})", files.parameter_schema_id);
        }
        Err(problems) => {
            println!("weights: not readable here");
            for pr in &problems {
                println!("    {pr}");
            }
        }
    }
}

fn mlc_program(p: &CompiledProgram) {
    println!(
        "MLC compiled program (schema_version {})",
        mlc::SCHEMA_VERSION
    );
    println!("  interface_id         {}", p.interface_id);
    println!("  parameter_schema_id  {}", p.parameter_schema_id);
    for (name, prog) in &p.programs {
        println!("program `{name}` ({})", prog.kind);
        for (role, f) in &prog.exports {
            println!("  {role:<16} → {f}");
        }
        for (adapter, f) in &prog.adapters {
            let dtype = prog
                .adapter_dtypes
                .get(adapter)
                .map(|d| format!(" (input as {d})"))
                .unwrap_or_default();
            println!("  adapter {adapter:<8} → {f}{dtype}");
        }
    }
    let r = &p.resources;
    println!("resources");
    println!("  features        [{}]", r.required_features.join(", "));
    println!(
        "  largest binding {}",
        bytes(r.max_storage_buffer_binding_size)
    );
    println!(
        "  parameters      {}",
        bytes(r.estimated_device_memory_bytes)
    );
}
