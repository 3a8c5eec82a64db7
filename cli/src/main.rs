//! `gpuport`: run model bundles on any GPU. This binary is a thin layer over the library crates:
//! argument parsing and printing only.

mod annotate;
mod can_run;
mod chat;
mod generate;
mod hash;
mod host;
mod inspect;
mod inspect_gguf;
mod llm;
mod onnx_run;
mod output;
mod preprocess;
mod probe;
mod recommend;
mod serve;
mod store;
mod validate;
mod vision;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code for a valid run.
const EXIT_OK: u8 = 0;
/// Exit code for an invalid document (every problem was printed).
const EXIT_INVALID: u8 = 1;
/// Exit code for a usage or I/O error.
const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "gpuport",
    version,
    about = "Run model bundles on any GPU through WebGPU"
)]
struct Cli {
    /// Store folder, for the store commands and for MODEL given as a store id (default:
    /// $GPUPORT_STORE, else $XDG_DATA_HOME/gpuport). Accepted before or after the subcommand.
    #[arg(long, global = true, value_name = "DIR")]
    store: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a ModelPort bundle or manifest, an MLC package folder or sidecar, or a
    /// compiled-program document. Exit 0 valid, 1 invalid (every problem listed with its JSON
    /// pointer), 2 usage or I/O error.
    Validate {
        /// Bundle folder, manifest file, MLC package folder, or program document.
        path: PathBuf,
        /// Print a JSON report on stdout.
        #[arg(long)]
        json: bool,
        /// Check the document alone: skip local file existence, size and SHA-256 checks.
        #[arg(long)]
        no_files: bool,
        /// A compiled-program document to match against the MLC package at PATH.
        #[arg(long, value_name = "FILE")]
        program: Option<PathBuf>,
    },
    /// Summarize a bundle or package: task, variants (and which one this machine would choose),
    /// inputs, outputs, files and sizes.
    Inspect {
        /// Bundle folder, manifest file, MLC package folder, program document, or GGUF model.
        path: PathBuf,
        /// For a GGUF model: print the `mlc.compiled-program` document gpuport's LLM executor
        /// satisfies for it (JSON) instead of the summary.
        #[arg(long)]
        program: bool,
        /// Pretend these runtimes have executors (repeatable), to see which variant another
        /// host would choose. Default: the runtimes this build of gpuport executes.
        #[arg(long = "runtime", value_name = "RUNTIME")]
        runtimes: Vec<String>,
        /// Pretend the device has this much RAM (MiB). Default: this machine's.
        #[arg(long, value_name = "MIB")]
        ram_mb: Option<u64>,
    },
    /// Show the GPU adapter: backend, driver, features, limits; `--bench` measures its
    /// streaming-read bandwidth.
    Probe {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Measure the streaming-read ceiling (GB/s).
        #[arg(long)]
        bench: bool,
    },
    /// Generate text from a prompt with an LLM (a .gguf file or a ModelPort text-generation
    /// bundle). Text streams to stdout; load and speed figures go to stderr.
    Generate {
        /// A .gguf file or a ModelPort text-generation bundle.
        model: PathBuf,
        /// The prompt.
        #[arg(
            long,
            conflicts_with = "prompt_file",
            required_unless_present = "prompt_file"
        )]
        prompt: Option<String>,
        /// Read the prompt from this file.
        #[arg(long, value_name = "FILE")]
        prompt_file: Option<PathBuf>,
        /// Tokenize the prompt as-is (BOS added by the model's rule; control-token text such
        /// as `<|im_start|>` becomes the control token) instead of rendering it as one user
        /// message with the chat template.
        #[arg(long)]
        raw: bool,
        #[command(flatten)]
        sampling: generate::SamplingArgs,
        /// Print a final line `ids: …` with the generated token ids.
        #[arg(long)]
        print_token_ids: bool,
        /// Print one JSON report instead of streaming text.
        #[arg(long)]
        json: bool,
    },
    /// Chat with an LLM interactively (needs a chat template in the model).
    Chat {
        /// A .gguf file or a ModelPort text-generation bundle.
        model: PathBuf,
        /// A system message to start every conversation with.
        #[arg(long)]
        system: Option<String>,
        #[command(flatten)]
        sampling: generate::SamplingArgs,
    },
    /// Rank the catalog's models for this adapter: can-run verdict (blockers and warnings),
    /// bytes, and decode speed — projected from weight bytes and the streaming-read ceiling
    /// measured now, or the figure measured here once the model has decoded on this adapter.
    Recommend {
        /// Memory budget for a model (MiB); models needing more are blocked.
        #[arg(long, value_name = "MIB")]
        max_vram_mb: Option<u64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check whether an LLM fits this adapter: sizes against limits, blockers and warnings.
    CanRun {
        /// A .gguf file or a ModelPort text-generation bundle.
        model: PathBuf,
        /// KV cache positions to plan for.
        #[arg(long)]
        ctx: Option<usize>,
        /// KV cache element type to plan for: f32 or f16 (default: `GPUPORT_KV_TYPE`, else f16
        /// on a GPU and f32 on a CPU adapter).
        #[arg(long, value_name = "TYPE", value_parser = llm::parse_kv_type)]
        kv_type: Option<gpuport_runtime::gguf::GgmlType>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Build one input tensor exactly as the runtime would: a ModelPort image input (resize,
    /// crop, normalize, layout, dtype) or an MLC package input (`image_decode`,
    /// `audio_decode`). Prints dtype and shape (and the inverse transform for ModelPort);
    /// `-o FILE` writes raw little-endian bytes (the golden-file format), or `.npy` when FILE
    /// ends in `.npy`. Nothing is written on failure.
    Preprocess {
        /// ModelPort bundle folder or `modelport.json`, or MLC package folder or sidecar.
        path: PathBuf,
        /// The image (same as --image).
        #[arg(value_name = "IMAGE", conflicts_with = "image")]
        image_arg: Option<PathBuf>,
        /// The image for an image input.
        #[arg(long, value_name = "FILE")]
        image: Option<PathBuf>,
        /// The WAV file for an MLC audio input.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["image", "image_arg"])]
        audio: Option<PathBuf>,
        /// Input name (default: the only preprocessed input).
        #[arg(long, value_name = "NAME")]
        input: Option<String>,
        /// MLC task (default: the only task).
        #[arg(long, value_name = "TASK")]
        task: Option<String>,
        /// MLC compiled program whose `adapter_dtypes` may widen the image tensor (uint32).
        #[arg(long, value_name = "FILE")]
        program: Option<PathBuf>,
        /// Output file: raw little-endian bytes, or NumPy `.npy` by extension.
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: Option<PathBuf>,
        /// Also print min, max and mean.
        #[arg(long)]
        print: bool,
        /// Print one JSON object instead.
        #[arg(long)]
        json: bool,
    },
    /// Serve models over an OpenAI-compatible HTTP API (chat and text completions, streamed or
    /// not, /v1/models, /health, /metrics, cancellation), many requests batched per engine by
    /// the scheduler: priority bands, sessions, preemption, a pool that grows on demand.
    Serve(serve::ServeArgs),
    #[command(flatten)]
    Store(store::StoreCommand),
    /// Classify or detect with a ModelPort image bundle (its `onnx` variant): preprocess each
    /// image exactly as the manifest says, run, post-process. Prints the top classes or the
    /// boxes (in original-image pixels); `--json` prints one JSON object per image,
    /// `{"image", "results": [{"index", "label", "score"}]}` or
    /// `{"image", "detections": [{"index", "label", "score", "box": [x0, y0, x1, y1]}]}`.
    Run {
        /// Bundle folder or `modelport.json`.
        bundle: PathBuf,
        /// Images (PNG, JPEG, WebP, BMP, GIF).
        #[arg(required = true)]
        images: Vec<PathBuf>,
        /// Print JSON lines.
        #[arg(long)]
        json: bool,
        /// How many classes to print (default: the manifest's `top_k`).
        #[arg(long)]
        top_k: Option<usize>,
        /// Run this variant instead of the one selection picks.
        #[arg(long)]
        variant: Option<String>,
        /// Where the graph runs.
        #[arg(long, value_enum, default_value = "gpu")]
        device: vision::DeviceArg,
        /// Also write each image's raw outputs as `DIR/<image index>.<output name>.npy`.
        #[arg(long, value_name = "DIR")]
        save_outputs: Option<PathBuf>,
        /// Draw the detections (or the ranked labels) onto a copy of the image, as PNG: this
        /// file for one image, `OUT/<image stem>.png` for several.
        #[arg(long, value_name = "OUT")]
        annotate: Option<PathBuf>,
        /// Images per call when the graph's batch dim is symbolic (else one per call).
        #[arg(long, default_value_t = 8)]
        batch: usize,
    },
    /// Run a bundle's golden inputs and compare each golden output with
    /// `|got − expected| ≤ atol + rtol·|expected|` (the variant's tolerance over the manifest's).
    /// Prints max abs/rel error and the first failing element; exit 0 pass, 1 fail.
    Golden {
        /// Bundle folder or `modelport.json`.
        bundle: PathBuf,
        /// Test this variant instead of the one selection picks.
        #[arg(long)]
        variant: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Where the graph runs.
        #[arg(long, value_enum, default_value = "gpu")]
        device: vision::DeviceArg,
    },
    /// Run a bare ONNX graph on `.npy` inputs (every graph input that no initializer provides,
    /// once each) and write each output as `DIR/<output name>.npy` in its own type and shape.
    /// Exit 0 done, 1 invalid model, input or node, 2 usage or I/O error, 3 an op,
    /// attribute or type outside the supported set ("unsupported").
    OnnxRun {
        /// The `.onnx` file (external data is read from beside it).
        model: PathBuf,
        /// A graph input: `NAME=FILE.npy` (repeatable).
        #[arg(long = "input", value_name = "NAME=FILE.npy")]
        inputs: Vec<String>,
        /// Where the outputs are written (created if missing).
        #[arg(long, value_name = "DIR")]
        output_dir: PathBuf,
        /// Where the graph runs: `gpu` (f32 values on the device) or `cpu` (the host reference
        /// evaluator, every supported type).
        #[arg(long, value_enum, default_value = "gpu")]
        device: vision::DeviceArg,
    },
    /// Print the canonical ids and sizes an MLC package should carry, so a producer can fill
    /// them in (see docs/spec/hashes.md).
    Hash {
        /// Which value to compute.
        #[arg(value_enum)]
        what: hash::HashKind,
        /// MLC package folder or `mlc-model-manifest.json`.
        path: PathBuf,
    },
}

/// clap requires `--prompt` unless `--prompt-file` is given, so this is never reached; it
/// exits with a usage error rather than panicking all the same.
fn unreachable_prompt() -> String {
    eprintln!("error: give --prompt or --prompt-file");
    std::process::exit(i32::from(EXIT_USAGE));
}

/// Mesa's implicit Vulkan layer `VK_LAYER_MESA_device_select` connects to the window system
/// to order devices, and on a headless machine libwayland then prints `error: XDG_RUNTIME_DIR
/// is invalid or not set in the environment.` twice before a successful run. gpuport chooses
/// its adapter itself (wgpu's power preference, `--adapter`-style options in the runtime), so
/// the layer is switched off through its documented `NODEVICE_SELECT=1` — unless the user
/// asked for its choice with `MESA_VK_DEVICE_SELECT` or set `NODEVICE_SELECT` themselves.
#[allow(unsafe_code)]
fn quiet_headless_vulkan() {
    let asked = |v: &str| std::env::var_os(v).is_some();
    if !asked("MESA_VK_DEVICE_SELECT") && !asked("NODEVICE_SELECT") {
        // SAFETY: called first thing in `main`, before this process starts any thread, so
        // nothing can read the environment concurrently.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}

fn main() -> ExitCode {
    quiet_headless_vulkan();
    let cli = Cli::parse();
    store::set_store_dir(cli.store);
    let code = match cli.command {
        Command::Validate {
            path,
            json,
            no_files,
            program,
        } => validate::run(&path, json, !no_files, program),
        Command::Inspect {
            path,
            program,
            runtimes,
            ram_mb,
        } => {
            if inspect_gguf::is_gguf(&path) {
                inspect_gguf::run(&path, program)
            } else if program {
                eprintln!("error: --program takes a GGUF model");
                EXIT_USAGE
            } else {
                inspect::run(&path, &runtimes, ram_mb)
            }
        }
        Command::Hash { what, path } => hash::run(what, &path),
        Command::Run {
            bundle,
            images,
            json,
            top_k,
            variant,
            device,
            save_outputs,
            annotate,
            batch,
        } => vision::run(vision::RunArgs {
            bundle,
            images,
            json,
            top_k,
            variant,
            device,
            save_outputs,
            annotate,
            batch,
        }),
        Command::Golden {
            bundle,
            variant,
            json,
            device,
        } => vision::golden(&bundle, variant.as_deref(), json, device),
        Command::OnnxRun {
            model,
            inputs,
            output_dir,
            device,
        } => onnx_run::run(&model, &inputs, &output_dir, device),
        Command::Probe { json, bench } => probe::run(json, bench),
        Command::Generate {
            model,
            prompt,
            prompt_file,
            raw,
            sampling,
            print_token_ids,
            json,
        } => {
            let prompt = match (prompt, prompt_file) {
                (Some(p), _) => p,
                (None, Some(f)) => match std::fs::read_to_string(&f) {
                    Ok(p) => p,
                    Err(e) => {
                        eprintln!("error: {}: {e}", f.display());
                        return ExitCode::from(EXIT_USAGE);
                    }
                },
                (None, None) => unreachable_prompt(),
            };
            generate::run(generate::GenerateArgs {
                model,
                prompt,
                raw,
                sampling,
                print_ids: print_token_ids,
                json,
            })
        }
        Command::Chat {
            model,
            system,
            sampling,
        } => chat::run(model, system, sampling),
        Command::CanRun {
            model,
            ctx,
            kv_type,
            json,
        } => can_run::run(&model, (ctx, kv_type), json),
        Command::Recommend { max_vram_mb, json } => recommend::run(max_vram_mb, json),
        Command::Preprocess {
            path,
            image_arg,
            image,
            audio,
            input,
            task,
            program,
            out,
            print,
            json,
        } => preprocess::run(preprocess::PreprocessArgs {
            path,
            image: image.or(image_arg),
            audio,
            input,
            task,
            program,
            out,
            print,
            json,
        }),
        Command::Serve(args) => serve::run(args),
        Command::Store(command) => store::run(command),
    };
    ExitCode::from(code)
}
