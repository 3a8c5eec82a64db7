//! `gpuport generate`: one prompt in, streamed text out; load and speed figures on stderr.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use gpuport_llm::recommend::{SpeedRecord, adapter_key, speed_key};

use gpuport_llm::{Message, Request, Sampling, Session, StopReason, Utf8Stream};
use serde::Serialize;

use crate::llm::{self, Loaded};
use crate::{EXIT_OK, EXIT_USAGE};

/// Sampling flags shared by `generate` and `chat`; unset ones take the model's defaults.
#[derive(clap::Args, Debug, Clone)]
pub struct SamplingArgs {
    /// Temperature (0 = greedy).
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Nucleus sampling mass (1 = off).
    #[arg(long)]
    pub top_p: Option<f32>,
    /// Keep the k most likely tokens (0 = off).
    #[arg(long)]
    pub top_k: Option<u32>,
    /// Repetition penalty over the last 64 tokens (1 = off).
    #[arg(long)]
    pub repeat_penalty: Option<f32>,
    /// RNG seed (default: from the clock; printed with --json).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Most tokens to generate.
    #[arg(long)]
    pub max_tokens: Option<usize>,
    /// KV cache positions (default: the bundle's, else min(4096, the model's)).
    #[arg(long)]
    pub ctx: Option<usize>,
    /// KV cache element type: f32, or f16 for half the cache memory (default:
    /// `GPUPORT_KV_TYPE`, else f16 on a GPU and f32 on a CPU adapter).
    #[arg(long, value_name = "TYPE", value_parser = crate::llm::parse_kv_type)]
    pub kv_type: Option<gpuport_runtime::gguf::GgmlType>,
    /// Decode steps recorded per GPU submit.
    #[arg(long, default_value_t = gpuport_llm::session::DEFAULT_STEPS_PER_SUBMIT)]
    pub steps_per_submit: usize,
}

impl SamplingArgs {
    /// The sampling settings: flags over the model's defaults.
    pub fn sampling(&self, d: &gpuport_manifest_core::modelport::GenerationDefaults) -> Sampling {
        let seed = self.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |t| t.as_nanos() as u64)
        });
        Sampling {
            temperature: self.temperature.unwrap_or(d.temperature as f32),
            top_k: self.top_k.unwrap_or(d.top_k.unwrap_or(0) as u32),
            top_p: self.top_p.unwrap_or(d.top_p as f32),
            repeat_penalty: self
                .repeat_penalty
                .unwrap_or(d.repeat_penalty.unwrap_or(1.0) as f32),
            penalty_last_n: 64,
            seed,
        }
    }
}

/// Everything `generate` takes.
pub struct GenerateArgs {
    /// MODEL.
    pub model: PathBuf,
    /// The prompt text.
    pub prompt: String,
    /// Tokenize as-is instead of rendering one user message.
    pub raw: bool,
    /// Sampling.
    pub sampling: SamplingArgs,
    /// Print `ids: …` at the end.
    pub print_ids: bool,
    /// JSON on stdout instead of streamed text.
    pub json: bool,
}

#[derive(Serialize)]
struct Report {
    text: String,
    ids: Vec<u32>,
    stop_reason: &'static str,
    prompt_tokens: usize,
    seed: u64,
    time_to_first_token_s: f64,
    prefill_tokens_per_s: f64,
    /// `null` when the reply was too short to measure a steady rate.
    decode_tokens_per_s: Option<f64>,
    adapter: String,
}

fn reason_name(r: StopReason) -> &'static str {
    match r {
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ContextFull => "context_full",
        StopReason::Cancelled => "cancelled",
    }
}

/// The prompt's token ids: raw text with BOS and control-token parsing, or one user message
/// through the chat template.
pub fn prompt_ids(loaded: &Loaded, text: &str, raw: bool) -> Result<Vec<u32>, String> {
    let tok = &loaded.tokenizer;
    if raw {
        return Ok(tok.encode(text, true, true));
    }
    let Some(template) = &loaded.template else {
        return Err(format!(
            "{}; use `generate --raw` to send the text as-is",
            llm::NO_TEMPLATE
        ));
    };
    let rendered = template
        .render(&[Message::new("user", text)], true)
        .map_err(|e| e.to_string())?;
    Ok(encode_rendered(loaded, &rendered))
}

/// Tokenizes a rendered chat: control tokens parsed, BOS added by the model's rule unless the
/// template already wrote it.
pub fn encode_rendered(loaded: &Loaded, rendered: &str) -> Vec<u32> {
    let tok = &loaded.tokenizer;
    let bos_text = tok.bos.and_then(|b| tok.text(b)).unwrap_or_default();
    let has_bos = !bos_text.is_empty() && rendered.starts_with(bos_text);
    tok.encode(rendered, !has_bos, true)
}

/// Runs `gpuport generate`.
pub fn run(a: GenerateArgs) -> u8 {
    let source = match llm::resolve(&a.model) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return EXIT_USAGE;
        }
    };
    let loaded = match llm::load(&source, (a.sampling.ctx, a.sampling.kv_type), false, !a.raw) {
        Ok(l) => l,
        Err(e) => return llm::report(&e, "use `generate --raw` to send the text as-is"),
    };
    let ids = match prompt_ids(&loaded, &a.prompt, a.raw) {
        Ok(ids) => ids,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let sampling = a.sampling.sampling(&source.defaults);
    let max_tokens = a
        .sampling
        .max_tokens
        .unwrap_or(source.defaults.max_tokens as usize);
    let mut session = match Session::new(&loaded.gpu, &loaded.model, loaded.context) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return crate::EXIT_INVALID;
        }
    };
    session.steps_per_submit = a.sampling.steps_per_submit;
    let started = Instant::now();
    // Until the first token: the prompt's prefill (and, on a first run, compiling the GPU
    // kernels, which on a CPU adapter takes most of the wait).
    let stage =
        crate::output::Stage::start(&format!("prefilling {} prompt tokens", ids.len()), a.json);
    let mut first_at = None;
    let mut stream = Utf8Stream::new();
    let mut text = String::new();
    let mut stdout = std::io::stdout().lock();
    let result = session.generate(
        &Request {
            prompt: &ids,
            max_tokens,
            stop: &loaded.stop,
            sampling,
        },
        |id| {
            first_at.get_or_insert_with(|| {
                stage.done();
                Instant::now()
            });
            let mut bytes = Vec::new();
            loaded.tokenizer.piece(id, false, &mut bytes);
            let piece = stream.push(&bytes);
            if !a.json {
                let _ = stdout.write_all(piece.as_bytes());
                let _ = stdout.flush();
            }
            text.push_str(&piece);
            true
        },
    );
    // An error before the first token: clear the spinner before it is printed.
    stage.done();
    let done = Instant::now();
    let generated = match result {
        Ok(g) => g,
        Err(e) => {
            eprintln!("\nerror [{}]: {e}", e.code());
            return crate::EXIT_INVALID;
        }
    };
    text.push_str(&stream.finish());
    let first = first_at.unwrap_or(done);
    let ttft = (first - started).as_secs_f64();
    let decoded = generated.tokens.len().saturating_sub(1);
    let report = Report {
        text: text.clone(),
        ids: generated.tokens.clone(),
        stop_reason: reason_name(generated.reason),
        prompt_tokens: ids.len(),
        seed: sampling.seed,
        time_to_first_token_s: ttft,
        prefill_tokens_per_s: generated.prefilled as f64 / ttft.max(1e-9),
        decode_tokens_per_s: generated.decode.map(|d| d.tokens_per_s()),
        adapter: loaded.gpu.info().name.clone(),
    };
    if a.json {
        let _ = writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        let _ = writeln!(stdout);
        if a.print_ids {
            let ids: Vec<String> = generated.tokens.iter().map(u32::to_string).collect();
            let _ = writeln!(stdout, "ids: {}", ids.join(" "));
        }
    }
    if let (Some(d), Some(path)) = (generated.decode, SpeedRecord::default_path()) {
        // What `gpuport recommend` shows instead of a projection; a cache, so a failure to
        // write it only costs that.
        let size = std::fs::metadata(&source.gguf)
            .map(|m| m.len())
            .unwrap_or(0);
        let _ = SpeedRecord::record(
            &path,
            &adapter_key(loaded.gpu.info()),
            &speed_key(size),
            d.tokens_per_s(),
        );
    }
    let decode = match generated.decode {
        Some(d) => format!("{:.1} tok/s over {} tokens", d.tokens_per_s(), d.tokens),
        // Fewer than two decode batches: nothing steady to measure (see DecodeTiming).
        None => "n/a".to_owned(),
    };
    eprintln!(
        "{} prompt tokens ({} prefilled) · time to first token {:.3} s · prefill {:.1} tok/s · \
         decode {decode} ({decoded} tokens, {} submits) · stop: {}",
        ids.len(),
        generated.prefilled,
        ttft,
        report.prefill_tokens_per_s,
        generated.submits,
        report.stop_reason
    );
    EXIT_OK
}
