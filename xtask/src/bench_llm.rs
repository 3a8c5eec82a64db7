//! `cargo xtask bench-llm MODEL.gguf`: end-to-end LLM speed on this adapter, in the figures
//! llama.cpp's `llama-bench` reports (prefill tok/s over a prompt of N tokens, decode tok/s over
//! M tokens from an empty context), plus time to first token, GPU time per decoded token, and
//! weight bytes per token ÷ time per token as a fraction of the streaming-read ceiling measured
//! in the same run. Decode runs once per steps-per-submit value so K is chosen by measurement.
//! Token ids are random (seeded) and stop tokens are ignored: speed does not depend on them,
//! which is also why a rebuilt skeleton (random weights of the real layout) measures the same.

use std::path::PathBuf;
use std::time::Instant;

use std::sync::Arc;

use gpuport_llm::{Batch, BatchShape, DecodeItem, Model, PrefillItem, Request, Sampling, Session};
use gpuport_llm::{EngineShape, GenJob, LlmEngine, Tokenizer};
use gpuport_runtime::bench::stream_ceiling;
use gpuport_runtime::gguf::Gguf;
use gpuport_runtime::{Gpu, GpuOptions};
use gpuport_scheduler::{Engine, JobId, Progress};
use serde::Serialize;

/// Options of `bench-llm`.
pub struct Options {
    /// The model.
    pub model: PathBuf,
    /// Prompt tokens for the prefill figure.
    pub prompt_tokens: usize,
    /// Tokens decoded per decode run.
    pub gen_tokens: usize,
    /// Steps-per-submit values to measure.
    pub steps: Vec<usize>,
    /// Write the results here as JSON.
    pub json: Option<PathBuf>,
    /// How the decode runs sample (greedy: the two-stage argmax; otherwise the sampler).
    pub sampling: Sampling,
    /// Sequence counts to decode at once through `Batch`.
    pub batch: Vec<usize>,
    /// Stream counts to run at once through the engine (`LlmEngine`).
    pub parallel: Vec<usize>,
}

/// Streams run at once through the engine (`--parallel`), as llama-batched-bench reports
/// them.
#[derive(Serialize)]
struct ParallelRun {
    streams: usize,
    prompt_tokens: usize,
    gen_tokens: usize,
    steps_per_submit: usize,
    /// Prompt tokens of all streams ÷ the time until every stream has its first token.
    prefill_tokens_per_s: f64,
    /// Generated tokens of all streams ÷ the time from then until the last finished.
    decode_tokens_per_s: f64,
    /// Seconds of the two phases.
    prefill_s: f64,
    decode_s: f64,
    /// Inter-token latency (ms) over every stream's tokens after its first: each chunk's
    /// interval since the stream's previous chunk, spread over its tokens.
    itl_p50_ms: f64,
    itl_p99_ms: f64,
    /// Pipelines compiled during the measured round (0 when the warm-up round covered it: a
    /// compile inside it is a stall of its own, 1–45 ms a variant on lavapipe).
    compiled_while_measured: usize,
    /// Pipelines the engine's precompile compiled at start (`LlmEngine::precompile`), its
    /// wall time, and the pipelines compiled after it in both rounds (0 when it covered every
    /// shape the runs reached).
    precompiled_pipelines: usize,
    precompile_s: f64,
    compiled_after_precompile: usize,
    /// `decode_tokens_per_s` over the one-stream run's, when `--parallel` has one (issue 15's
    /// "8 streams ≥ 4× one stream").
    /// FNV-1a over every stream's ids of the measured round, stream by stream: equal between
    /// two builds or settings exactly when every stream generated the same tokens (what an
    /// A/B of two ways to the same bits checks end to end).
    ids_digest: String,
    over_one_stream: Option<f64>,
}

/// Each run's aggregate decode over the one-stream run's, where the runs have one.
fn set_over_one_stream(runs: &mut [ParallelRun]) {
    let one = runs
        .iter()
        .find(|r| r.streams == 1)
        .map(|r| r.decode_tokens_per_s);
    for r in runs {
        r.over_one_stream = one
            .filter(|one| *one > 0.0)
            .map(|one| r.decode_tokens_per_s / one);
    }
}

#[derive(Serialize)]
struct BatchRun {
    sequences: usize,
    steps_per_submit: usize,
    /// Tokens of all sequences per second.
    tokens_per_s: f64,
    /// Wall time of one step of every sequence.
    ms_per_step: f64,
    /// One step's dispatches by kernel: (kernel, count, µs), slowest first (empty where the
    /// adapter has no timestamps inside passes).
    step_profile: Vec<(String, usize, f64)>,
    /// The prompts' forward (every sequence's 64 tokens as rows of forwards of up to 512):
    /// wall seconds, and its dispatches by kernel as `step_profile` (timed in a second,
    /// profiled run of the same prompts on fresh sequences).
    prefill_s: f64,
    prefill_profile: Vec<(String, usize, f64)>,
}

#[derive(Serialize)]
struct DecodeRun {
    steps_per_submit: usize,
    tokens: usize,
    tokens_per_s: f64,
    gpu_ms_per_token: f64,
    wall_ms_per_token: f64,
    gbps: f64,
    ratio: f64,
}

#[derive(Serialize)]
struct Report {
    model: String,
    adapter: String,
    driver: String,
    weight_bytes: u64,
    /// The KV cache's element type (`GPUPORT_KV_TYPE`: f32 or f16).
    kv_type: String,
    ceiling_gbps: f64,
    prompt_tokens: usize,
    /// Sampling of the decode runs (temperature, top_k, top_p).
    sampling: (f32, u32, f32),
    prefill_tokens_per_s: f64,
    time_to_first_token_ms: f64,
    decode: Vec<DecodeRun>,
    /// Several sequences decoded at once (`--batch`).
    batched: Vec<BatchRun>,
    /// Streams through the engine (`--parallel`).
    parallel: Vec<ParallelRun>,
    /// One decode step at position `prompt_tokens`, per kernel family: (kernel, dispatches,
    /// total microseconds).
    step_profile: Vec<(String, usize, f64)>,
    /// The prompt's last submit (the whole prompt when it fits one forward), per kernel, as
    /// `step_profile`.
    prefill_profile: Vec<(String, usize, f64)>,
}

fn ids(n: usize, vocab: usize, seed: u64) -> Vec<u32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % vocab as u64) as u32
        })
        .collect()
}

/// Runs the benchmark.
pub fn run(o: Options) -> anyhow::Result<()> {
    let gpu = Gpu::new(&GpuOptions::default())?;
    let ceiling = stream_ceiling(&gpu, 1 << 30, false)?;
    let g = Gguf::open(&o.model)?;
    let ctx = (o.prompt_tokens + o.gen_tokens + 8).next_power_of_two();
    let model = Model::load(&gpu, &g, ctx)?;
    let plan = Model::plan(&gpu, &g, &model.cfg, (ctx, model.kv_type()));
    let vocab = model.cfg.vocab;
    let mut session = Session::new(&gpu, &model, ctx)?;
    // Prefill: the prompt, then one sampled token (time to first token); warm once first.
    let prompt = ids(o.prompt_tokens, vocab, 7);
    let first = |session: &mut Session<'_>| -> anyhow::Result<f64> {
        session.reset();
        let t = Instant::now();
        session.generate(
            &Request {
                prompt: &prompt,
                max_tokens: 1,
                stop: &[],
                sampling: Sampling::GREEDY,
            },
            |_| true,
        )?;
        Ok(t.elapsed().as_secs_f64())
    };
    first(&mut session)?;
    let ttft = first(&mut session)?;
    let mut decode = Vec::new();
    for &k in &o.steps {
        session.steps_per_submit = k;
        let start = ids(1, vocab, 11);
        // Wall time without profiling (a profiling submit waits for its timestamps, which
        // would serialize the pipelined batches), then GPU time in a profiled run.
        let mut run_once = |profile: bool| -> anyhow::Result<(f64, f64, usize)> {
            session.reset();
            session.profile = profile;
            session.gpu_seconds = 0.0;
            let mut first_at = None;
            let got = session.generate(
                &Request {
                    prompt: &start,
                    max_tokens: o.gen_tokens + 1,
                    stop: &[],
                    sampling: o.sampling,
                },
                |_| {
                    first_at.get_or_insert_with(Instant::now);
                    true
                },
            )?;
            session.profile = false;
            let wall = first_at.map_or(0.0, |t| t.elapsed().as_secs_f64());
            Ok((wall, session.gpu_seconds, got.tokens.len() - 1))
        };
        run_once(false)?;
        let (wall, _, n) = run_once(false)?;
        let gpu_s = if gpu.has_timestamps() {
            run_once(true)?.1
        } else {
            0.0
        };
        let tps = n as f64 / wall;
        let gbps = plan.weight_bytes as f64 * tps / 1e9;
        decode.push(DecodeRun {
            steps_per_submit: k,
            tokens: n,
            tokens_per_s: tps,
            gpu_ms_per_token: gpu_s * 1e3 / n as f64,
            wall_ms_per_token: wall * 1e3 / n as f64,
            gbps,
            ratio: gbps / ceiling.gbps,
        });
    }
    let (step_profile, prefill_profile) = if gpu
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES)
    {
        (
            profile_step(&mut session, &prompt, 2)?,
            profile_step(&mut session, &prompt, 1)?,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    drop(session);
    let batched = o
        .batch
        .iter()
        .map(|&n| batch_decode(&gpu, &model, n, o.gen_tokens, &o.sampling))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (gpu, model) = (Arc::new(gpu), Arc::new(model));
    let tokenizer = Arc::new(Tokenizer::from_gguf(&g).map_err(|e| anyhow::anyhow!(e.0))?);
    let mut parallel = o
        .parallel
        .iter()
        .map(|&n| parallel_run(&gpu, &model, &tokenizer, n, &o))
        .collect::<anyhow::Result<Vec<_>>>()?;
    set_over_one_stream(&mut parallel);
    let report = Report {
        model: o.model.display().to_string(),
        adapter: gpu.info().name.clone(),
        driver: gpu.info().driver_info.clone(),
        weight_bytes: plan.weight_bytes,
        kv_type: model.kv_type().name().to_owned(),
        ceiling_gbps: ceiling.gbps,
        prompt_tokens: o.prompt_tokens,
        sampling: (o.sampling.temperature, o.sampling.top_k, o.sampling.top_p),
        prefill_tokens_per_s: o.prompt_tokens as f64 / ttft,
        time_to_first_token_ms: ttft * 1e3,
        decode,
        batched,
        parallel,
        step_profile,
        prefill_profile,
    };
    println!(
        "{} on {} ({}): weights {:.1} MB, {} KV cache, ceiling {:.0} GB/s",
        report.model,
        report.adapter,
        report.driver,
        report.weight_bytes as f64 / 1e6,
        report.kv_type,
        report.ceiling_gbps
    );
    println!(
        "prefill {} tokens: {:.0} tok/s, time to first token {:.1} ms",
        o.prompt_tokens, report.prefill_tokens_per_s, report.time_to_first_token_ms
    );
    let (t, k, p) = report.sampling;
    println!("decode sampling: temperature {t}, top-k {k}, top-p {p}");
    println!("steps/submit  tok/s  wall ms/tok  gpu ms/tok   GB/s  ratio");
    for d in &report.decode {
        println!(
            "{:>12} {:>6.1} {:>12.3} {:>11.3} {:>6.0} {:>6.3}",
            d.steps_per_submit,
            d.tokens_per_s,
            d.wall_ms_per_token,
            d.gpu_ms_per_token,
            d.gbps,
            d.ratio
        );
    }
    for (what, profile) in [
        ("one decode step", &report.step_profile),
        ("the prompt", &report.prefill_profile),
    ] {
        if profile.is_empty() {
            continue;
        }
        let total: f64 = profile.iter().map(|p| p.2).sum();
        println!("{what}, per kernel (total {total:.1} us):");
        for (kernel, n, us) in profile {
            println!(
                "  {kernel:<40} {n:>5} dispatches {us:>9.1} us {:>7.2} us each",
                us / *n as f64
            );
        }
    }
    for b in &report.batched {
        println!(
            "batch of {:>3}: {:>8.1} tok/s ({:.3} ms per step of all, {} steps per submit)",
            b.sequences, b.tokens_per_s, b.ms_per_step, b.steps_per_submit
        );
        print_top("one step", &b.step_profile, 4);
        println!(
            "  the prompts ({} × 64 tokens): {:.3} s wall",
            b.sequences, b.prefill_s
        );
        print_top("their forward", &b.prefill_profile, 6);
    }
    for p in &report.parallel {
        println!(
            "{:>3} streams (pp {}, tg {}): S_PP {:>9.1} tok/s, S_TG {:>8.1} tok/s, inter-token \
             p50 {:.2} ms p99 {:.2} ms",
            p.streams,
            p.prompt_tokens,
            p.gen_tokens,
            p.prefill_tokens_per_s,
            p.decode_tokens_per_s,
            p.itl_p50_ms,
            p.itl_p99_ms
        );
        println!(
            "    precompiled {} pipelines in {:.2} s; {} compiled after it; ids {}",
            p.precompiled_pipelines, p.precompile_s, p.compiled_after_precompile, p.ids_digest
        );
        if let Some(x) = p.over_one_stream.filter(|_| p.streams > 1) {
            println!("    S_TG {x:.2}× one stream's");
        }
        if p.compiled_while_measured > 0 {
            println!(
                "    ({} pipelines compiled during the measured round: its figures include \
                 those stalls)",
                p.compiled_while_measured
            );
        }
    }
    if let Some(path) = o.json {
        std::fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")?;
    }
    Ok(())
}

/// Steps per submit of the engine runs.
const ENGINE_STEPS: u32 = 8;

/// `n` streams of `o.prompt_tokens` random prompt tokens and `o.gen_tokens` generated tokens
/// each, admitted together into one engine and stepped to the end (a warm-up round of the
/// same length first).
fn parallel_run(
    gpu: &Arc<Gpu>,
    model: &Arc<Model>,
    tokenizer: &Arc<Tokenizer>,
    n: usize,
    o: &Options,
) -> anyhow::Result<ParallelRun> {
    let context = o.prompt_tokens + o.gen_tokens + ENGINE_STEPS as usize;
    let shape = EngineShape {
        prefill_rows: (n * o.prompt_tokens).clamp(1, 2048),
        retained: 0,
        ..EngineShape::new(n, context)
    };
    let batch = Batch::shared(Arc::clone(gpu), Arc::clone(model), shape.batch_shape(gpu))?;
    let mut engine = LlmEngine::new(batch, Arc::clone(tokenizer), shape);
    let precompiled = engine.precompile()?;
    let after_precompile = gpu.pipelines.len();
    let vocab = model.cfg.vocab;
    let mut round = |seed: u64, tokens: usize| -> anyhow::Result<(f64, f64, Vec<f64>, String)> {
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); n];
        for i in 0..n {
            let job = GenJob {
                prompt: ids(o.prompt_tokens, vocab, seed * 1000 + i as u64),
                max_tokens: tokens,
                sampling: Sampling {
                    seed: i as u64,
                    ..o.sampling
                },
                stop_tokens: vec![],
                stop_text: vec![],
            };
            engine
                .admit(JobId(i as u64), job)
                .map_err(|(_, r)| anyhow::anyhow!("stream {i} refused: {r:?}"))?;
        }
        let start = Instant::now();
        let mut last: Vec<Option<Instant>> = vec![None; n];
        let mut prefilled = None;
        let mut finished = 0;
        let mut gaps = Vec::new();
        while finished < n {
            let progress = engine.step(ENGINE_STEPS)?;
            let now = Instant::now();
            for p in progress {
                match p {
                    Progress::Chunk(id, c) => {
                        let i = id.0 as usize;
                        out[i].extend_from_slice(&c.ids);
                        if let Some(t) = last[i] {
                            let per = (now - t).as_secs_f64() * 1e3 / c.ids.len().max(1) as f64;
                            gaps.extend(std::iter::repeat_n(per, c.ids.len()));
                        }
                        last[i] = Some(now);
                    }
                    Progress::Finished(..) => finished += 1,
                }
            }
            if prefilled.is_none() && last.iter().all(Option::is_some) {
                prefilled = Some(now);
            }
        }
        let end = Instant::now();
        let prefilled = prefilled.unwrap_or(end);
        Ok((
            (prefilled - start).as_secs_f64(),
            (end - prefilled).as_secs_f64(),
            gaps,
            ids_digest(&out),
        ))
    };
    // A first round as long as the measured one compiles every pipeline it needs: kernels
    // change with the keys a row holds (the row tables' splits and their combine start only
    // at some length), and a pipeline compiled inside the measured round stalls it (v40: a
    // first run of Gemma 3's 8 streams on an H100 read 2,792 tok/s after a 16-token warm-up,
    // 3,959–4,018 with its pipelines cached).
    round(1, o.gen_tokens)?;
    let compiled = gpu.pipelines.len();
    let (prefill_s, decode_s, mut gaps, digest) = round(2, o.gen_tokens)?;
    let compiled_while_measured = gpu.pipelines.len() - compiled;
    let compiled_after_precompile = gpu.pipelines.len() - after_precompile;
    gaps.sort_by(f64::total_cmp);
    let pct = |q: f64| {
        gaps.get(((gaps.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    Ok(ParallelRun {
        streams: n,
        prompt_tokens: o.prompt_tokens,
        gen_tokens: o.gen_tokens,
        steps_per_submit: ENGINE_STEPS as usize,
        prefill_tokens_per_s: (n * o.prompt_tokens) as f64 / prefill_s,
        // The first token of each stream came with the prefill.
        decode_tokens_per_s: (n * (o.gen_tokens - 1)) as f64 / decode_s,
        prefill_s,
        decode_s,
        itl_p50_ms: pct(0.5),
        itl_p99_ms: pct(0.99),
        compiled_while_measured,
        precompiled_pipelines: precompiled.pipelines,
        precompile_s: precompiled.seconds,
        compiled_after_precompile,
        // Set once every run is in (set_over_one_stream).
        over_one_stream: None,
        ids_digest: digest,
    })
}

/// FNV-1a (64-bit) over the streams' ids, each stream's count first.
fn ids_digest(streams: &[Vec<u32>]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let words = streams
        .iter()
        .flat_map(|s| std::iter::once(s.len() as u32).chain(s.iter().copied()));
    for word in words {
        for b in word.to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// `n` sequences with 64-token prompts decoded together, `tokens` steps each at 8 steps per
/// submit (one warm-up round first).
fn batch_decode(
    gpu: &Gpu,
    model: &Model,
    n: usize,
    tokens: usize,
    sampling: &Sampling,
) -> anyhow::Result<BatchRun> {
    const PROMPT: usize = 64;
    const STEPS: usize = 8;
    let capacity = PROMPT + 2 * tokens + 2 * STEPS;
    let pages = n * capacity.div_ceil(gpuport_llm::kv_cache::DEFAULT_PAGE);
    let shape = BatchShape {
        slots: n,
        seq_capacity: capacity,
        pages,
        max_rows: (n * PROMPT).min(512),
    };
    let mut batch = Batch::new(gpu, model, shape)?;
    let seqs: Vec<_> = (0..n).map(|_| batch.open()).collect::<Result<_, _>>()?;
    let prompts: Vec<Vec<u32>> = (0..n)
        .map(|i| ids(PROMPT, model.cfg.vocab, 100 + i as u64))
        .collect();
    let t = Instant::now();
    batch.prefill(&prefill_items(&seqs, &prompts, sampling))?;
    let prefill_s = t.elapsed().as_secs_f64();
    let all: Vec<_> = seqs
        .iter()
        .map(|s| DecodeItem {
            seq: *s,
            sample: *sampling,
            stop: &[],
        })
        .collect();
    let rounds = tokens.div_ceil(STEPS).max(1);
    for _ in 0..rounds {
        batch.decode(&all, STEPS)?;
    }
    let t = Instant::now();
    for _ in 0..rounds {
        batch.decode(&all, STEPS)?;
    }
    let wall = t.elapsed().as_secs_f64();
    let steps = rounds * STEPS;
    let mut step_profile = Vec::new();
    let mut prefill_profile = Vec::new();
    if gpu.has_timestamps() {
        batch.profile_dispatches = true;
        batch.decode(&all, 1)?;
        step_profile = by_kernel(&batch.dispatch_profile);
        // The same prompts again on fresh sequences, each dispatch timed.
        for s in &seqs {
            batch.close(*s)?;
        }
        let again: Vec<_> = (0..n).map(|_| batch.open()).collect::<Result<_, _>>()?;
        batch.prefill(&prefill_items(&again, &prompts, sampling))?;
        prefill_profile = by_kernel(&batch.dispatch_profile);
    }
    Ok(BatchRun {
        sequences: n,
        steps_per_submit: STEPS,
        tokens_per_s: (n * steps) as f64 / wall,
        ms_per_step: wall * 1e3 / steps as f64,
        step_profile,
        prefill_s,
        prefill_profile,
    })
}

/// `what`'s GPU time and its `most` slowest kernels from a per-kernel profile (nothing where the
/// profile is empty: no timestamps inside passes).
fn print_top(what: &str, profile: &[(String, usize, f64)], most: usize) {
    let total: f64 = profile.iter().map(|k| k.2).sum();
    if total > 0.0 {
        let top: Vec<String> = profile
            .iter()
            .take(most)
            .map(|(k, n, us)| format!("{k} {n}× {us:.0} µs"))
            .collect();
        println!("  {what} {total:.0} µs of GPU time: {}", top.join(", "));
    }
}

/// Each of `seqs` with its prompt, its next token sampled with `sampling`.
fn prefill_items<'a>(
    seqs: &[gpuport_llm::SeqId],
    prompts: &'a [Vec<u32>],
    sampling: &Sampling,
) -> Vec<PrefillItem<'a>> {
    seqs.iter()
        .zip(prompts)
        .map(|(s, p)| PrefillItem {
            seq: *s,
            tokens: p,
            sample: Some(*sampling),
        })
        .collect()
}

/// Times every dispatch of one decode step after `prompt`, summed per kernel variant.
/// The dispatches of the last submit of a `max_tokens` request on `prompt` (2: the second
/// token's decode step; 1: the prompt's forward), by kernel.
fn profile_step(
    session: &mut Session<'_>,
    prompt: &[u32],
    max_tokens: usize,
) -> anyhow::Result<Vec<(String, usize, f64)>> {
    session.reset();
    session.steps_per_submit = 1;
    session.profile_dispatches = true;
    session.generate(
        &Request {
            prompt,
            max_tokens,
            stop: &[],
            sampling: Sampling::GREEDY,
        },
        |_| true,
    )?;
    session.profile_dispatches = false;
    Ok(by_kernel(&session.dispatch_profile))
}

/// Dispatch times summed per kernel: (kernel, count, µs), slowest first.
fn by_kernel(dispatches: &[(String, f64)]) -> Vec<(String, usize, f64)> {
    let mut out: Vec<(String, usize, f64)> = Vec::new();
    for (label, ns) in dispatches {
        match out.iter_mut().find(|k| &k.0 == label) {
            Some(k) => {
                k.1 += 1;
                k.2 += ns / 1e3;
            }
            None => out.push((label.clone(), 1, ns / 1e3)),
        }
    }
    out.sort_by(|a, b| b.2.total_cmp(&a.2));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(streams: usize, decode_tokens_per_s: f64) -> ParallelRun {
        ParallelRun {
            streams,
            prompt_tokens: 128,
            gen_tokens: 128,
            steps_per_submit: 8,
            prefill_tokens_per_s: 1.0,
            decode_tokens_per_s,
            prefill_s: 1.0,
            decode_s: 1.0,
            itl_p50_ms: 1.0,
            itl_p99_ms: 1.0,
            compiled_while_measured: 0,
            precompiled_pipelines: 0,
            precompile_s: 0.0,
            compiled_after_precompile: 0,
            over_one_stream: None,
            ids_digest: String::new(),
        }
    }

    /// The digest tells streams' ids apart, their order and where one stream ends.
    #[test]
    fn ids_digest_tells_streams_apart() {
        let d = |s: &[&[u32]]| ids_digest(&s.iter().map(|s| s.to_vec()).collect::<Vec<_>>());
        assert_eq!(d(&[&[1, 2], &[3]]), d(&[&[1, 2], &[3]]));
        assert_ne!(d(&[&[1, 2], &[3]]), d(&[&[1], &[2, 3]]));
        assert_ne!(d(&[&[1, 2], &[3]]), d(&[&[3], &[1, 2]]));
        assert_ne!(d(&[&[1, 2]]), d(&[&[1, 3]]));
        assert_eq!(d(&[]).len(), 16);
    }

    /// Runs are divided by the one-stream run wherever it stands in the list; without one
    /// (or with a zero rate) no ratio is claimed.
    #[test]
    fn aggregate_decode_is_reported_over_one_stream() {
        let mut runs = vec![run(8, 4000.0), run(1, 1000.0), run(32, 9000.0)];
        set_over_one_stream(&mut runs);
        let ratios: Vec<_> = runs.iter().map(|r| r.over_one_stream).collect();
        assert_eq!(ratios, [Some(4.0), Some(1.0), Some(9.0)]);
        let mut runs = vec![run(8, 4000.0), run(32, 9000.0)];
        set_over_one_stream(&mut runs);
        assert!(runs.iter().all(|r| r.over_one_stream.is_none()));
        let mut runs = vec![run(1, 0.0), run(8, 4000.0)];
        set_over_one_stream(&mut runs);
        assert!(runs.iter().all(|r| r.over_one_stream.is_none()));
    }
}
