//! The batched engine ([`LlmEngine`]) on the tiny random model: jobs of different lengths
//! joining and leaving a running batch (continuous batching, chunked prompts beside decode
//! rows, shared prefixes) each produce exactly their solo session's ids; stop tokens and stop
//! strings end a job where a solo run would; an evicted job's pages come back; a pool too
//! small for a job makes it wait, and a job that can never run is refused naming its field.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;

use gpuport_testing as support;
use gpuport_testing::tiny_llm::{CONTEXT, EOS, VOCAB, build};

use gpuport_kernels::quant::GgmlType;
use gpuport_llm::{
    Batch, EngineShape, Finish, GenJob, GenOutput, LlmEngine, Model, Request, Sampling, Session,
    Tokenizer,
};
use gpuport_runtime::gguf::Gguf;
use gpuport_runtime::{Gpu, GpuOptions};
use gpuport_scheduler::{Engine, JobId, Progress, Refusal};

struct Tiny {
    gpu: Arc<Gpu>,
    model: Arc<Model>,
    tokenizer: Arc<Tokenizer>,
}

fn tiny() -> Option<Tiny> {
    tiny_on(support::gpu()?)
}

/// [`tiny`] on a device whose every product is f32 (no tensor-core paths).
fn tiny_f32() -> Option<Tiny> {
    tiny_on(support::gpu_with(&support::Needs::none().f32_products())?)
}

fn tiny_on(gpu: Gpu) -> Option<Tiny> {
    let (bytes, _) = build();
    let g = Gguf::parse(bytes).unwrap();
    let model = Model::load(&gpu, &g, 2 * CONTEXT).unwrap();
    let tokenizer = Tokenizer::from_gguf(&g).unwrap();
    Some(Tiny {
        gpu: Arc::new(gpu),
        model: Arc::new(model),
        tokenizer: Arc::new(tokenizer),
    })
}

fn engine(t: &Tiny, shape: EngineShape) -> LlmEngine {
    let batch = shape.batch_shape(&t.gpu);
    let b = Batch::shared(Arc::clone(&t.gpu), Arc::clone(&t.model), batch).unwrap();
    LlmEngine::new(b, Arc::clone(&t.tokenizer), shape)
}

/// The solo session's ids for `job`.
fn solo(t: &Tiny, job: &GenJob) -> Vec<u32> {
    let mut session = Session::new(&t.gpu, &t.model, 2 * CONTEXT).unwrap();
    session
        .generate(
            &Request {
                prompt: &job.prompt,
                max_tokens: job.max_tokens,
                stop: &job.stop_tokens,
                sampling: job.sampling,
            },
            |_| true,
        )
        .unwrap()
        .tokens
}

fn ids(len: usize, seed: u64) -> Vec<u32> {
    let mut r = support::Rng::new(seed);
    // Word and byte tokens (not the control ids).
    (0..len)
        .map(|_| 3 + r.below(VOCAB as u64 - 3) as u32)
        .collect()
}

fn job(prompt: Vec<u32>, max_tokens: usize, sampling: Sampling) -> GenJob {
    GenJob {
        prompt,
        max_tokens,
        sampling,
        stop_tokens: vec![],
        stop_text: vec![],
    }
}

fn sampled(seed: u64) -> Sampling {
    Sampling {
        temperature: 0.9,
        top_k: 40,
        top_p: 0.95,
        seed,
        ..Sampling::GREEDY
    }
}

/// Steps `e` (4 decode steps per boundary) until `queue` is empty and nothing runs (`running`
/// jobs were admitted before), admitting queued jobs whenever the engine takes them; the
/// outputs by job, with the streamed chunks' ids and text concatenated.
fn run_all(
    e: &mut LlmEngine,
    mut running: usize,
    mut queue: Vec<(JobId, GenJob)>,
) -> HashMap<JobId, (GenOutput, Vec<u32>, String)> {
    let mut streamed: HashMap<JobId, (Vec<u32>, String)> = HashMap::new();
    let mut done = HashMap::new();
    loop {
        while running < e.slots() && !queue.is_empty() {
            let (id, j) = queue.remove(0);
            match e.admit(id, j) {
                Ok(()) => running += 1,
                Err((j, Refusal::Busy)) => {
                    queue.insert(0, (id, j));
                    break;
                }
                Err((_, r)) => panic!("{id}: {r:?}"),
            }
        }
        if running == 0 {
            assert!(queue.is_empty(), "nothing runs and {} wait", queue.len());
            return done;
        }
        for p in e.step(4).unwrap() {
            match p {
                Progress::Chunk(id, c) => {
                    let s = streamed.entry(id).or_default();
                    s.0.extend(c.ids);
                    s.1.push_str(&c.text);
                }
                Progress::Finished(id, out) => {
                    running -= 1;
                    let (ids, text) = streamed.remove(&id).unwrap_or_default();
                    done.insert(id, (out, ids, text));
                }
            }
        }
    }
}

#[test]
fn jobs_joining_and_leaving_a_batch_equal_their_solo_runs() {
    let Some(t) = tiny() else { return };
    // 7 jobs through 3 slots: prompts of 1–30 tokens (longer than a step's 8 prompt rows, so
    // they run in chunks beside the decoding rows), greedy and sampled, three sharing a
    // 24-token head (forked from one another's pages).
    let head = ids(24, 5);
    let mut jobs = Vec::new();
    for i in 0..7u64 {
        let mut prompt = if i % 3 == 0 { head.clone() } else { Vec::new() };
        prompt.extend(ids(1 + (i as usize * 7) % 30, 100 + i));
        let sampling = if i % 2 == 0 {
            Sampling::GREEDY
        } else {
            sampled(i)
        };
        jobs.push((JobId(i), job(prompt, 3 + (i as usize * 5) % 14, sampling)));
    }
    // Pages for the running jobs and the two retained sequences.
    let shape = EngineShape {
        prefill_rows: 8,
        retained: 2,
        pages: 5,
        ..EngineShape::new(3, CONTEXT)
    };
    let mut e = engine(&t, shape);
    let done = run_all(&mut e, 0, jobs.clone());
    assert_eq!(done.len(), jobs.len());
    let mut shared = 0;
    for (id, j) in &jobs {
        let (out, streamed, text) = &done[id];
        let want = solo(&t, j);
        assert_eq!(out.ids, want, "{id} against its solo run");
        assert_eq!(streamed, &want, "{id}: the chunks carry every id once");
        assert_eq!(out.finish, Finish::Length);
        assert_eq!(out.prompt_tokens, j.prompt.len());
        let solo_text = String::from_utf8_lossy(&t.tokenizer.decode(&want, false)).into_owned();
        assert_eq!(&out.text, &solo_text, "{id}: text");
        assert_eq!(text, &out.text, "{id}: streamed text");
        shared += out.cached_tokens;
    }
    assert!(
        shared >= 2 * 24,
        "the shared head was prefilled once ({shared} cached tokens)"
    );
    e.drop_retained();
    let pool = e.batch().pool();
    assert_eq!(pool.free_pages(), pool.total_pages(), "every page back");
}

#[test]
fn a_precompiled_engine_compiles_nothing_while_it_runs() {
    let Some(t) = tiny() else { return };
    // Prompts of 1-40 tokens in chunks of 8 rows beside 1-4 decoding rows, greedy and
    // sampled, decoded up to the whole context (the row tables' split path and its combine).
    let mut jobs = Vec::new();
    for i in 0..9u64 {
        let prompt = ids(1 + (i as usize * 11) % 40, 300 + i);
        let max_tokens = CONTEXT - prompt.len() - (i as usize % 3);
        let sampling = if i % 3 == 1 {
            sampled(i)
        } else {
            Sampling::GREEDY
        };
        jobs.push((JobId(i), job(prompt, max_tokens, sampling)));
    }
    let shape = EngineShape {
        prefill_rows: 8,
        retained: 0,
        ..EngineShape::new(4, CONTEXT)
    };
    let mut e = engine(&t, shape);
    let done = e.precompile().unwrap();
    assert!(done.pipelines > 0 && done.forwards > 0, "{done:?}");
    let compiled = t.gpu.pipelines.len();
    let finished = run_all(&mut e, 0, jobs.clone());
    assert_eq!(finished.len(), jobs.len());
    assert_eq!(
        t.gpu.pipelines.len(),
        compiled,
        "pipelines compiled after precompile ({done:?})"
    );
    // Precompiling touched no sequence or page: the jobs still equal their solo runs.
    for (id, j) in jobs.iter().take(3) {
        assert_eq!(finished[id].0.ids, solo(&t, j), "{id} against its solo run");
    }
}

#[test]
fn stop_tokens_and_stop_strings_end_a_job_as_a_solo_run_would() {
    let Some(t) = tiny() else { return };
    let prompt = ids(9, 77);
    let free = solo(&t, &job(prompt.clone(), 12, Sampling::GREEDY));
    let mut e = engine(&t, EngineShape::new(2, CONTEXT));
    // A stop token: the third id the free run produces.
    let mut by_token = job(prompt.clone(), 12, Sampling::GREEDY);
    by_token.stop_tokens = vec![free[2], EOS];
    // A stop string: the text of the fifth and sixth ids (it may span both tokens).
    let tail = String::from_utf8_lossy(&t.tokenizer.decode(&free[4..6], false)).into_owned();
    let mut by_text = job(prompt.clone(), 12, Sampling::GREEDY);
    by_text.stop_text = vec![tail.clone()];
    let done = run_all(
        &mut e,
        0,
        vec![(JobId(0), by_token.clone()), (JobId(1), by_text)],
    );
    let (out, _, _) = &done[&JobId(0)];
    assert_eq!(out.finish, Finish::Stop);
    assert_eq!(
        out.ids,
        solo(&t, &by_token),
        "stopped where the session stops"
    );
    let at = free.iter().position(|x| *x == free[2]).unwrap();
    assert_eq!(out.ids, free[..=at]);
    let (out, _, streamed) = &done[&JobId(1)];
    assert_eq!(out.finish, Finish::Stop);
    let full = String::from_utf8_lossy(&t.tokenizer.decode(&free, false)).into_owned();
    let cut = full.find(&tail).unwrap();
    assert_eq!(out.text, full[..cut], "the text before the stop string");
    assert_eq!(streamed, &out.text, "held-back text never leaked");
}

#[test]
fn an_evicted_job_returns_its_pages_and_leaves_its_neighbours_exact() {
    let Some(t) = tiny() else { return };
    let shape = EngineShape {
        retained: 0,
        ..EngineShape::new(3, CONTEXT)
    };
    let mut e = engine(&t, shape);
    let jobs: Vec<GenJob> = (0..3)
        .map(|i| job(ids(5 + 3 * i, 40 + i as u64), 20, Sampling::GREEDY))
        .collect();
    for (i, j) in jobs.iter().enumerate() {
        e.admit(JobId(i as u64), j.clone()).unwrap();
    }
    let total = e.batch().pool().total_pages();
    e.step(4).unwrap(); // the prompts
    e.step(4).unwrap(); // 4 decode steps
    let out = e.evict(JobId(1));
    assert_eq!(out.finish, Finish::Evicted);
    let alone = solo(&t, &jobs[1]);
    assert!(
        !out.ids.is_empty() && alone.starts_with(&out.ids),
        "a prefix of its solo run"
    );
    let mut rest: HashMap<JobId, Vec<u32>> = HashMap::new();
    while rest.len() < 2 {
        for p in e.step(4).unwrap() {
            if let Progress::Finished(id, o) = p {
                rest.insert(id, o.ids);
            }
        }
    }
    assert_eq!(rest[&JobId(0)], solo(&t, &jobs[0]));
    assert_eq!(rest[&JobId(2)], solo(&t, &jobs[2]));
    assert_eq!(e.batch().pool().free_pages(), total, "every page back");
}

#[test]
fn a_full_pool_makes_jobs_wait_and_bad_jobs_are_refused_by_field() {
    let Some(t) = tiny() else { return };
    // One page of 64 positions: one job at a time.
    let shape = EngineShape {
        pages: 1,
        retained: 0,
        ..EngineShape::new(2, CONTEXT)
    };
    let mut e = engine(&t, shape);
    let a = job(ids(10, 1), 40, Sampling::GREEDY);
    let b = job(ids(12, 2), 30, Sampling::GREEDY);
    e.admit(JobId(0), a.clone()).unwrap();
    let Err((b, Refusal::Busy)) = e.admit(JobId(1), b) else {
        panic!("the second job should wait for pages");
    };
    let done = run_all(&mut e, 1, vec![(JobId(1), b.clone())]);
    assert_eq!(done[&JobId(0)].0.ids, solo(&t, &a));
    assert_eq!(done[&JobId(1)].0.ids, solo(&t, &b));
    // Bad requests name their field.
    let mut e = engine(&t, EngineShape::new(1, CONTEXT));
    for (bad, field) in [
        (job(vec![], 4, Sampling::GREEDY), "prompt"),
        (job(vec![VOCAB as u32], 4, Sampling::GREEDY), "prompt"),
        (job(ids(4, 3), 0, Sampling::GREEDY), "max_tokens"),
        (job(ids(40, 3), 30, Sampling::GREEDY), "max_tokens"),
    ] {
        let Err((_, Refusal::Invalid { field: f, reason })) = e.admit(JobId(9), bad) else {
            panic!("{field}: refused");
        };
        assert_eq!(f.as_deref(), Some(field), "{reason}");
    }
}

/// The engine under the scheduler, on threads: five streams through three slots each equal
/// their solo runs; an interactive request preempts a preemptible background job (partial
/// output, a prefix of its solo run) and itself runs exactly; a newer request of a session
/// supersedes the older mid-generation; afterwards every KV page is free. Both sides run every
/// product in f32 (`GpuOptions::tensor_cores` off; nothing changes on adapters without tensor
/// cores): the sampled streams are held to their solo runs draw for draw.
#[test]
fn scheduled_streams_preemption_and_supersession_on_the_engine() {
    use gpuport_llm::LlmLoader;
    use gpuport_scheduler::{Config, End, Priority, Request as Req, Scheduler};
    let Some(t) = tiny_f32() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.gguf");
    std::fs::write(&path, build().0).unwrap();
    let shape = EngineShape {
        retained: 0,
        ..EngineShape::new(3, CONTEXT)
    };
    let config = Config {
        engines: 1,
        decode_steps: 4,
        ..Config::default()
    };
    // Every product in f32 on both sides (here and in `tiny_f32`'s solo runs): a row of a
    // batch of 32 or more takes f16 tensor cores where the adapter has them, and a sampled
    // stream's draws are then its solo run's only up to f16 rounding.
    let loader = LlmLoader::for_file("tiny", path, shape).with_gpu(GpuOptions {
        tensor_cores: Some(false),
        ..GpuOptions::default()
    });
    let s = Scheduler::new(loader, config).unwrap();
    s.load("tiny").unwrap();

    let jobs: Vec<GenJob> = (0..5)
        .map(|i| {
            let sampling = if i % 2 == 0 {
                Sampling::GREEDY
            } else {
                sampled(i)
            };
            job(
                ids(2 + 5 * i as usize, 60 + i),
                6 + 3 * i as usize,
                sampling,
            )
        })
        .collect();
    let tickets: Vec<_> = jobs
        .iter()
        .map(|j| s.complete(Req::new(j.clone()), |_| {}).unwrap())
        .collect();
    for (i, (ticket, j)) in tickets.into_iter().zip(&jobs).enumerate() {
        let out = ticket.wait();
        assert_eq!(out.end, End::Finished, "stream {i}");
        assert_eq!(
            out.output.unwrap().ids,
            solo(&t, j),
            "stream {i} against its solo run"
        );
    }

    // Three long preemptible background jobs fill the slots; an interactive one takes one.
    let long: Vec<GenJob> = (0..3)
        .map(|i| job(ids(4, 80 + i), 50, Sampling::GREEDY))
        .collect();
    let background: Vec<_> = long
        .iter()
        .map(|j| {
            let r = Req::new(j.clone())
                .priority(Priority::Background)
                .preemptible(true);
            s.complete(r, |_| {}).unwrap()
        })
        .collect();
    while s.status().models[0].engines[0].running < 3 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let urgent = job(ids(6, 90), 5, Sampling::GREEDY);
    let interactive = s
        .complete(
            Req::new(urgent.clone()).priority(Priority::Interactive),
            |_| {},
        )
        .unwrap();
    let out = interactive.wait();
    assert_eq!(out.end, End::Finished);
    assert_eq!(
        out.output.unwrap().ids,
        solo(&t, &urgent),
        "the interactive request"
    );
    let mut preempted = 0;
    for (ticket, j) in background.into_iter().zip(&long) {
        let out = ticket.wait();
        let ids = out.output.unwrap().ids;
        let alone = solo(&t, j);
        match out.end {
            End::Preempted { .. } => {
                preempted += 1;
                assert!(alone.starts_with(&ids), "a preempted job's partial output");
            }
            End::Finished => assert_eq!(ids, alone),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(preempted, 1, "exactly one background job gave up its slot");

    // Supersession: the second request of a session replaces the first mid-generation.
    let first = job(ids(5, 95), 50, Sampling::GREEDY);
    let older = s
        .complete(Req::new(first.clone()).session("ghost"), |_| {})
        .unwrap();
    while s.status().models[0].engines[0].running < 1 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let second = job(ids(7, 96), 6, Sampling::GREEDY);
    let newer = s
        .complete(Req::new(second.clone()).session("ghost"), |_| {})
        .unwrap();
    let out = older.wait();
    assert!(matches!(out.end, End::Superseded { .. }), "{:?}", out.end);
    let partial = out.output.map(|o| o.ids).unwrap_or_default();
    assert!(solo(&t, &first).starts_with(&partial));
    assert_eq!(newer.wait().output.unwrap().ids, solo(&t, &second));
    let engine = &s.status().models[0].engines[0];
    let (used, total) = engine.kv_pages.unwrap();
    assert_eq!((used, engine.running), (0, 0), "every page back of {total}");
}

/// A prompt repeated after its first run finished forks the retained sequence's pages (all
/// but the last prompt token cached: `UNSHARED_TAIL`) and must reply exactly as the first
/// time — for a prompt shorter than a page and one longer.
#[test]
fn a_repeated_prompt_reuses_the_cache_and_replies_the_same() {
    let Some(t) = tiny() else { return };
    for len in [30usize, 100] {
        let mut e = engine(&t, EngineShape::new(2, 2 * CONTEXT));
        let j = job(ids(len, 7 + len as u64), 8, Sampling::GREEDY);
        let first = run_all(&mut e, 0, vec![(JobId(0), j.clone())]);
        let again = run_all(&mut e, 0, vec![(JobId(1), j.clone())]);
        let (a, b) = (&first[&JobId(0)].0, &again[&JobId(1)].0);
        assert_eq!(
            b.cached_tokens,
            len - 1,
            "{len}: all but the last prompt token shared"
        );
        assert_eq!(a.ids, solo(&t, &j), "{len}: first run");
        assert_eq!(b.ids, a.ids, "{len}: the repeat from the cache");
    }
}

/// `file`'s tokens of `text`, the model on a cache of `kv` values with its projections on
/// float input (`Model::with_int8_min_bytes(u64::MAX)`: int8 input only for a tied output
/// head, past `SEPARATE_INPUT_ROWS`) unless `int8`, every product in f32 (no tensor-core
/// paths, whose f16 products part from the one-row path's f32 ones); `None` without the model
/// or an adapter.
fn chat_model(file: &str, text: &str, kv: GgmlType, int8: bool) -> Option<(Tiny, Vec<u32>)> {
    let path = support::model(file)?;
    let gpu = support::gpu_with(&support::Needs::none().f32_products())?;
    let g = Gguf::open(&path).unwrap();
    let model = Model::load_with_kv(&gpu, &g, 384, kv).unwrap();
    let model = if int8 {
        model
    } else {
        model.with_int8_min_bytes(u64::MAX)
    };
    let tokenizer = Tokenizer::from_gguf(&g).unwrap();
    let prompt = tokenizer.encode(text, false, true);
    let t = Tiny {
        gpu: Arc::new(gpu),
        model: Arc::new(model),
        tokenizer: Arc::new(tokenizer),
    };
    Some((t, prompt))
}

/// SmolLM2's chat prompt (37 tokens) on [`chat_model`].
fn smollm2_chat(kv: GgmlType, int8: bool) -> Option<(Tiny, Vec<u32>)> {
    let text = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by \
                Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?\
                <|im_end|>\n<|im_start|>assistant\n";
    chat_model("SmolLM2-135M-Instruct.Q4_1.gguf", text, kv, int8)
}

/// The largest differences between the logits after `prompt` run three ways on `t`'s model —
/// batched; batched but its last token alone over the cache; every token alone — pairwise.
fn prompt_paths_spread(t: &Tiny, prompt: &[u32]) -> [f32; 3] {
    let mut s = Session::new(&t.gpu, &t.model, 384).unwrap();
    s.batched_prefill = Some(true);
    let batched = s.logits(prompt).unwrap();
    s.reset();
    s.logits(&prompt[..prompt.len() - 1]).unwrap();
    let last_alone = s.logits(prompt).unwrap();
    s.reset();
    s.batched_prefill = Some(false);
    let alone = s.logits(prompt).unwrap();
    let apart = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max)
    };
    [
        apart(&batched, &last_alone),
        apart(&batched, &alone),
        apart(&last_alone, &alone),
    ]
}

/// The same on SmolLM2 (30 layers, Q4_1), on an f32 and an f16 cache: the repeat runs its last
/// prompt token alone over the rows the first run prefilled, the first run that token among
/// the others. On float input the two agree to f32 rounding, or within the f16 cache's grid
/// (`smollm2_prompt_paths_agree`), and this prompt's greedy ids are the same. With int8 input
/// (the default for large stacks, as in llama.cpp) they need not be: where two paths' floats
/// differ in their last bits an input can land one level apart on the int8 grid, which moves
/// SmolLM2's logits by up to ~1 — a near tie may then go either way
/// (docs/design/batched-forward.md, "Which paths give the same numbers").
#[test]
fn smollm2_repeated_prompt_replies_the_same() {
    for kv in [GgmlType::F32, GgmlType::F16] {
        let Some((t, prompt)) = smollm2_chat(kv, false) else {
            return;
        };
        let mut e = engine(&t, EngineShape::new(4, 384));
        let j = job(prompt.clone(), 8, Sampling::GREEDY);
        let first = run_all(&mut e, 0, vec![(JobId(0), j.clone())]);
        let again = run_all(&mut e, 0, vec![(JobId(1), j.clone())]);
        let (a, b) = (&first[&JobId(0)].0, &again[&JobId(1)].0);
        eprintln!(
            "{kv:?}: first {:?} / again {:?} (cached {})",
            a.text, b.text, b.cached_tokens
        );
        assert_eq!(b.cached_tokens, prompt.len() - 1, "{kv:?}");
        assert_eq!(b.ids, a.ids, "{kv:?}: the repeat from the cache");
    }
}

/// SmolLM2's logits after its chat prompt three ways over the same weights — the prompt
/// batched, the prompt batched but its last token alone over the cache, every token alone —
/// agree to f32 rounding with the projections on float input and an f32 cache (2e-5 – 4e-5
/// measured on lavapipe); within the f16 cache's grid on f16 (0.028–0.073: a key or value
/// whose two f32 forms straddle an f16 rounding edge is stored one ulp apart); and on the
/// default int8 inputs within the spread of one-level steps on that grid (0.52–1.10: an
/// input whose float lies within rounding of a level's edge lands on either side, and 30
/// layers carry the step). A path that read a wrong cache row or position would leave those
/// bounds.
#[test]
fn smollm2_prompt_paths_agree() {
    prompt_paths_agree(
        smollm2_chat,
        &[
            (GgmlType::F32, false, 1e-3),
            (GgmlType::F16, false, 0.25),
            (GgmlType::F32, true, 2.0),
            (GgmlType::F16, true, 2.0),
        ],
    );
}

/// [`prompt_paths_spread`] within `bound` for each (cache type, int8 input, bound) of `cases`
/// on the model and prompt `chat` gives.
fn prompt_paths_agree(
    chat: impl Fn(GgmlType, bool) -> Option<(Tiny, Vec<u32>)>,
    cases: &[(GgmlType, bool, f32)],
) {
    for &(kv, int8, bound) in cases {
        let Some((t, prompt)) = chat(kv, int8) else {
            return;
        };
        let spread = prompt_paths_spread(&t, &prompt);
        eprintln!("{kv:?}, int8 input {int8}: logits apart by {spread:?}");
        assert!(
            spread.iter().all(|d| *d <= bound),
            "{kv:?}, int8 {int8}: {spread:?} past {bound}"
        );
    }
}

/// The same for Gemma 3 (post-norms folded into the next input: on a CPU adapter its stacks
/// take int8 input through a pass of their own, `model::int8_behind_post_norms`, the
/// attention output's too): 4e-5 – 8e-5 on float input, 0.95 – 2.22 on int8 (lavapipe, v42;
/// Gemma's logits run larger than SmolLM2's).
#[test]
fn gemma3_prompt_paths_agree() {
    let text = "<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n\
                <start_of_turn>model\n";
    prompt_paths_agree(
        |kv, int8| chat_model("gemma-3-270m-q4_k_m.gguf", text, kv, int8),
        &[(GgmlType::F32, false, 1e-3), (GgmlType::F32, true, 3.0)],
    );
}
