//! A tiny random `llama` model written with the GGUF writer (F32, Q8_0 and Q4_K tensors),
//! run by the executor on the adapter at hand and by an independent f64 CPU forward pass in
//! this file: logits agree at every position, greedy generation equals the CPU's argmax chain,
//! and the decode loop's control flow (steps per submit, stop tokens, cancellation, a full
//! context, cache reuse across calls) is exact. The same model as `qwen2` (q, k, v biases,
//! NEOX RoPE) checks that architecture's blocks the same way.

#![allow(clippy::unwrap_used)]

use gpuport_testing as support;

use gpuport_kernels::quant::GgmlType;
use gpuport_llm::model::INT8_MIN_STACK_BYTES;
use gpuport_llm::{Model, Program, Request, Sampling, Session, StopReason};
use gpuport_runtime::Gpu;
use gpuport_runtime::gguf::Gguf;

use gpuport_testing::tiny_llm::{
    BASE, EMBD, EPS, FF, HD, HEADS, KV_HEADS, LAYERS, VOCAB, build, build_as,
};

fn matvec(w: &[f32], x: &[f64], rows: usize) -> Vec<f64> {
    let cols = x.len();
    (0..rows)
        .map(|r| {
            w[r * cols..(r + 1) * cols]
                .iter()
                .zip(x)
                .map(|(a, b)| f64::from(*a) * b)
                .sum()
        })
        .collect()
}

fn rmsnorm(x: &[f64], w: &[f32]) -> Vec<f64> {
    let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let inv = 1.0 / (ms + f64::from(EPS)).sqrt();
    x.iter()
        .zip(w)
        .map(|(v, g)| v * inv * f64::from(*g))
        .collect()
}

/// RoPE: GGUF's "normal" llama layout rotates pairs (2i, 2i + 1), NEOX (qwen2) pairs
/// (i, i + HD / 2).
fn rope(x: &mut [f64], heads: usize, pos: usize, neox: bool) {
    for h in 0..heads {
        for i in 0..HD / 2 {
            let theta = pos as f64 * f64::from(BASE).powf(-2.0 * i as f64 / HD as f64);
            let (c, s) = (theta.cos(), theta.sin());
            let (ia, ib) = if neox {
                (h * HD + i, h * HD + i + HD / 2)
            } else {
                (h * HD + 2 * i, h * HD + 2 * i + 1)
            };
            let (a, b) = (x[ia], x[ib]);
            x[ia] = a * c - b * s;
            x[ib] = a * s + b * c;
        }
    }
}

/// The CPU forward pass over `tokens`: the logits after each position.
fn cpu_logits(v: &std::collections::HashMap<String, Vec<f32>>, tokens: &[u32]) -> Vec<Vec<f64>> {
    cpu_logits_cached(v, tokens, GgmlType::F32)
}

/// [`cpu_logits`] with a KV cache of `kv` values: each key and value rounded to f16 as an f16
/// cache stores it, or kept exact.
fn cpu_logits_cached(
    v: &std::collections::HashMap<String, Vec<f32>>,
    tokens: &[u32],
    kv: GgmlType,
) -> Vec<Vec<f64>> {
    let table = &v["token_embd.weight"];
    let rows: Vec<Vec<f32>> = tokens
        .iter()
        .map(|&t| table[t as usize * EMBD..(t as usize + 1) * EMBD].to_vec())
        .collect();
    cpu_logits_of_rows(v, &rows, kv)
}

/// The CPU forward pass from embedding rows (one per position), over a KV cache of `kv` values.
fn cpu_logits_of_rows(
    v: &std::collections::HashMap<String, Vec<f32>>,
    rows: &[Vec<f32>],
    kv: GgmlType,
) -> Vec<Vec<f64>> {
    let cached = |x: Vec<f64>| -> Vec<f64> {
        match kv {
            GgmlType::F16 => x
                .into_iter()
                .map(|v| half::f16::from_f64(v).to_f64())
                .collect(),
            _ => x,
        }
    };
    let g = |n: &str| &v[n];
    // The qwen2 build: biases on q, k, v and NEOX RoPE.
    let qwen2 = v.contains_key("blk.0.attn_q.bias");
    let add_bias = |x: &mut Vec<f64>, l: usize, which: &str| {
        if qwen2 {
            let bias = &v[&format!("blk.{l}.{which}.bias")];
            x.iter_mut()
                .zip(bias)
                .for_each(|(a, b)| *a += f64::from(*b));
        }
    };
    let mut keys: Vec<Vec<Vec<f64>>> = vec![Vec::new(); LAYERS];
    let mut vals: Vec<Vec<Vec<f64>>> = vec![Vec::new(); LAYERS];
    let mut out = Vec::new();
    for (pos, emb) in rows.iter().enumerate() {
        let mut x: Vec<f64> = emb.iter().map(|e| f64::from(*e)).collect();
        for l in 0..LAYERS {
            let b = |s: &str| format!("blk.{l}.{s}.weight");
            let h = rmsnorm(&x, g(&b("attn_norm")));
            let mut q = matvec(g(&b("attn_q")), &h, HEADS * HD);
            let mut k = matvec(g(&b("attn_k")), &h, KV_HEADS * HD);
            let mut vv = matvec(g(&b("attn_v")), &h, KV_HEADS * HD);
            add_bias(&mut q, l, "attn_q");
            add_bias(&mut k, l, "attn_k");
            add_bias(&mut vv, l, "attn_v");
            rope(&mut q, HEADS, pos, qwen2);
            rope(&mut k, KV_HEADS, pos, qwen2);
            keys[l].push(cached(k));
            vals[l].push(cached(vv));
            let mut attn = vec![0.0; HEADS * HD];
            for hq in 0..HEADS {
                let kvh = hq / (HEADS / KV_HEADS);
                let qh = &q[hq * HD..(hq + 1) * HD];
                let scores: Vec<f64> = keys[l]
                    .iter()
                    .map(|kr| {
                        qh.iter()
                            .zip(&kr[kvh * HD..(kvh + 1) * HD])
                            .map(|(a, b)| a * b)
                            .sum::<f64>()
                            / (HD as f64).sqrt()
                    })
                    .collect();
                let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
                let sum: f64 = e.iter().sum();
                for (j, w) in e.iter().enumerate() {
                    for d in 0..HD {
                        attn[hq * HD + d] += w / sum * vals[l][j][kvh * HD + d];
                    }
                }
            }
            let o = matvec(g(&b("attn_output")), &attn, EMBD);
            x.iter_mut().zip(&o).for_each(|(a, b)| *a += b);
            let h = rmsnorm(&x, g(&b("ffn_norm")));
            let gate = matvec(g(&b("ffn_gate")), &h, FF);
            let up = matvec(g(&b("ffn_up")), &h, FF);
            let act: Vec<f64> = gate
                .iter()
                .zip(&up)
                .map(|(a, u)| a / (1.0 + (-a).exp()) * u)
                .collect();
            let d = matvec(g(&b("ffn_down")), &act, EMBD);
            x.iter_mut().zip(&d).for_each(|(a, b)| *a += b);
        }
        let h = rmsnorm(&x, g("output_norm.weight"));
        out.push(matvec(g("output.weight"), &h, VOCAB));
    }
    out
}

/// The model on the float input path that the f64 CPU forward pass checks: the tiny stacks
/// stay below [`INT8_MIN_STACK_BYTES`] on every adapter (a CPU adapter's default puts every
/// normed stack on int8 input, the path `int8_projections_give_batched_rows_the_session_ids`
/// holds to the session's ids), on an f32 KV cache whatever `GPUPORT_KV_TYPE` says.
fn float_model(gpu: &Gpu, g: &Gguf, ctx: usize) -> Model {
    Model::load_with_kv(gpu, g, ctx, GgmlType::F32)
        .unwrap()
        .with_int8_min_bytes(INT8_MIN_STACK_BYTES)
}

/// The logits after every prefix of `prompt`, with the prompt in batches and token by token,
/// against the CPU forward pass.
fn assert_every_prefix(
    session: &mut Session<'_>,
    values: &std::collections::HashMap<String, Vec<f32>>,
    prompt: &[u32],
) {
    assert_every_prefix_cached(session, values, prompt, GgmlType::F32);
}

/// [`assert_every_prefix`] against the CPU pass over a KV cache of `kv` values.
fn assert_every_prefix_cached(
    session: &mut Session<'_>,
    values: &std::collections::HashMap<String, Vec<f32>>,
    prompt: &[u32],
    kv: GgmlType,
) {
    let cpu = cpu_logits_cached(values, prompt, kv);
    for batched in [true, false] {
        session.batched_prefill = Some(batched);
        for n in 1..=prompt.len() {
            session.reset();
            let got = session.logits(&prompt[..n]).unwrap();
            let what = format!("{} cache, prefix {n}, batched {batched}", kv.name());
            assert_logits_close(&got, &cpu[n - 1], &what);
        }
    }
}

/// GPU logits within 1e-3 of the largest CPU logit's magnitude of the f64 CPU forward pass.
fn assert_logits_close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(*a) - b).abs() <= 1e-3 * scale.max(1.0),
            "{what}, logit {i}: GPU {a}, CPU {b}"
        );
    }
}

fn argmax(x: &[f64]) -> u32 {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if *v > x[best] {
            best = i;
        }
    }
    best as u32
}

#[test]
fn tiny_llama_matches_the_cpu_forward_pass_and_decodes_exactly() {
    let Some(gpu) = support::gpu() else { return };
    let (bytes, values) = build();
    let g = Gguf::parse(bytes).unwrap();
    let ctx = 24;
    let model = float_model(&gpu, &g, ctx);
    let mut session = Session::new(&gpu, &model, ctx).unwrap();
    let prompt = [5u32, 77, 123, 9, 250];

    // Logits after each prefix, on the GPU and on the CPU, with the prompt in batches and
    // token by token.
    assert_every_prefix(&mut session, &values, &prompt);
    session.batched_prefill = None;

    // Greedy continuation: the CPU's argmax chain (checked for clear margins), for every
    // number of steps per submit.
    let mut seq = prompt.to_vec();
    for _ in 0..12 {
        let l = cpu_logits(&values, &seq);
        seq.push(argmax(l.last().unwrap()));
    }
    let want = &seq[prompt.len()..];
    let greedy = |session: &mut Session<'_>, stop: &[u32], max: usize| {
        session
            .generate(
                &Request {
                    prompt: &prompt,
                    max_tokens: max,
                    stop,
                    sampling: Sampling::GREEDY,
                },
                |_| true,
            )
            .unwrap()
    };
    for k in [1usize, 3, 8] {
        session.reset();
        session.steps_per_submit = k;
        let got = greedy(&mut session, &[], 12);
        assert_eq!(got.tokens, want, "steps per submit {k}");
        assert_eq!(got.reason, StopReason::Length);
        assert_eq!(got.prefilled, prompt.len());
    }

    // A stop token ends generation exactly there, whatever was sampled past it.
    let stop_at = 6;
    let stop = [want[stop_at]];
    let first = want.iter().position(|t| *t == want[stop_at]).unwrap();
    session.steps_per_submit = 8;
    let got = greedy(&mut session, &stop, 12);
    assert_eq!(got.tokens, want[..=first]);
    assert_eq!(got.reason, StopReason::Stop);

    // Cache reuse: the prompt plus that reply plus a new turn prefills only the new part.
    let mut next = prompt.to_vec();
    next.extend_from_slice(&got.tokens);
    next.extend_from_slice(&[42, 43]);
    let again = greedy(&mut session, &[], 1);
    assert_eq!(again.reused, prompt.len() - 1);
    let cont = session
        .generate(
            &Request {
                prompt: &next,
                max_tokens: 3,
                stop: &[],
                sampling: Sampling::GREEDY,
            },
            |_| true,
        )
        .unwrap();
    assert_eq!(cont.prefilled + cont.reused, next.len());
    assert!(cont.reused >= prompt.len(), "reused {}", cont.reused);
    let mut expect = next.clone();
    for _ in 0..3 {
        let l = cpu_logits(&values, &expect);
        expect.push(argmax(l.last().unwrap()));
    }
    assert_eq!(cont.tokens, expect[next.len()..]);

    // Cancellation after two tokens, and a context that fills up.
    session.reset();
    let mut seen = 0;
    let cancelled = session
        .generate(
            &Request {
                prompt: &prompt,
                max_tokens: 12,
                stop: &[],
                sampling: Sampling::GREEDY,
            },
            |_| {
                seen += 1;
                seen < 2
            },
        )
        .unwrap();
    assert_eq!(cancelled.reason, StopReason::Cancelled);
    assert_eq!(cancelled.tokens, want[..2]);
    session.reset();
    let full = greedy(&mut session, &[], 100);
    assert_eq!(full.reason, StopReason::ContextFull);
    // A context of 24 positions holds 24 run tokens; the 25th is sampled from the last.
    assert_eq!(prompt.len() + full.tokens.len(), ctx + 1);
    assert_eq!(full.tokens[..12], *want);

    // Bad requests are typed errors.
    let err = session
        .generate(
            &Request {
                prompt: &[VOCAB as u32],
                max_tokens: 1,
                stop: &[],
                sampling: Sampling::GREEDY,
            },
            |_| true,
        )
        .unwrap_err();
    assert_eq!(err.code(), "BAD_REQUEST");
    assert_eq!(session.logits(&[]).unwrap_err().code(), "BAD_REQUEST");
    assert_eq!(
        session.logits(&vec![1; ctx + 1]).unwrap_err().code(),
        "BAD_REQUEST"
    );
}

/// The qwen2 blocks (q, k, v biases through the decode GEMVs' epilogue and the prefill GEMM's
/// bias row; NEOX RoPE) against the CPU: logits after every prefix, batched and token by
/// token, and the greedy chain.
#[test]
fn tiny_qwen2_matches_the_cpu_forward_pass() {
    let Some(gpu) = support::gpu() else { return };
    let (bytes, values) = build_as("qwen2");
    let g = Gguf::parse(bytes).unwrap();
    let model = float_model(&gpu, &g, 24);
    assert_eq!(model.cfg.arch, gpuport_llm::Arch::Qwen2);
    let mut session = Session::new(&gpu, &model, 24).unwrap();
    let prompt = [5u32, 77, 123, 9, 250];
    assert_every_prefix(&mut session, &values, &prompt);
    let got = session
        .generate(
            &Request {
                prompt: &prompt,
                max_tokens: 6,
                stop: &[],
                sampling: Sampling::GREEDY,
            },
            |_| true,
        )
        .unwrap();
    assert_eq!(got.tokens, cpu_greedy(&values, &prompt, 6));
}

/// A KV cache of f16 values (`Model::load_with_kv`): the logits after every prefix (prompts in
/// batches and token by token) match the f64 CPU forward pass whose keys and values are
/// rounded to f16 as the cache stores them; greedy decoding equals that pass's argmax chain;
/// and sequences of different lengths decoded in shared forwards (the per-row causal pass over
/// the pool) give each the session's ids (the one-row decode kernel, which scores the new key
/// as the cache will hold it), their pages back in the pool after.
#[test]
fn tiny_llama_on_an_f16_cache_matches_the_cpu_forward_pass() {
    use gpuport_llm::{Batch, BatchShape, PrefillItem};
    let Some(gpu) = support::gpu() else { return };
    let (bytes, values) = build();
    let g = Gguf::parse(bytes).unwrap();
    let ctx = 32;
    let model = Model::load_with_kv(&gpu, &g, ctx, GgmlType::F16)
        .unwrap()
        .with_int8_min_bytes(INT8_MIN_STACK_BYTES);
    assert_eq!(model.kv_type(), GgmlType::F16);
    // A cache of any other type is refused, naming the ones it takes.
    let refused = gpuport_llm::KvPool::new(&gpu, &model.cfg, (1, ctx), 1, (64, GgmlType::Q8_0));
    let e = refused.err().unwrap();
    assert_eq!(e.code(), "BAD_REQUEST");
    assert!(e.to_string().contains("f32 or f16"), "{e}");
    assert!(Model::load_with_kv(&gpu, &g, ctx, GgmlType::Q4K).is_err());
    let mut session = Session::new(&gpu, &model, ctx).unwrap();
    let prompt = [5u32, 77, 123, 9, 250];
    assert_every_prefix_cached(&mut session, &values, &prompt, GgmlType::F16);
    session.batched_prefill = None;
    let greedy = |session: &mut Session<'_>, prompt: &[u32], n: usize| {
        session.reset();
        let request = Request {
            prompt,
            max_tokens: n,
            stop: &[],
            sampling: Sampling::GREEDY,
        };
        session.generate(&request, |_| true).unwrap().tokens
    };
    let want = cpu_greedy_cached(&values, &prompt, 8, GgmlType::F16);
    assert_eq!(greedy(&mut session, &prompt, 8), want, "f16 cache, greedy");

    let shape = BatchShape {
        slots: 4,
        seq_capacity: ctx,
        pages: 4,
        max_rows: 16,
    };
    let mut batch = Batch::new(&gpu, &model, shape).unwrap();
    assert_eq!(batch.pool().kv_type(), GgmlType::F16);
    let ps = prompts(3, 19);
    let seqs: Vec<_> = ps.iter().map(|_| batch.open().unwrap()).collect();
    let ids = greedy_in_batch(&mut batch, &seqs, &ps, 5);
    for (i, (p, got)) in ps.iter().zip(ids).enumerate() {
        assert_eq!(got, greedy(&mut session, p, 6), "f16 cache, sequence {i}");
    }
    for s in seqs {
        batch.close(s).unwrap();
    }
    assert_eq!(batch.pool().free_pages(), shape.pages, "pages returned");

    // A 20-position prefix shared by a fork that then writes into its partly filled page: the
    // page is copied first (half the bytes of an f32 page), and both continue as the CPU does.
    let prefix: Vec<u32> = (0..20).map(|i| (i * 37 + 11) % VOCAB as u32).collect();
    let sample = Some(Sampling::GREEDY);
    let p = batch.open().unwrap();
    let items = [PrefillItem {
        seq: p,
        tokens: &prefix,
        sample,
    }];
    // p's sampled token is pending (its next prefill appends after it); the fork has none.
    let pending = batch.prefill(&items).unwrap()[0].unwrap();
    let q = batch.fork(p, prefix.len()).unwrap();
    for (seq, head, suffix) in [(q, None, [3u32, 141, 59]), (p, Some(pending), [7, 8, 9])] {
        let items = [PrefillItem {
            seq,
            tokens: &suffix,
            sample,
        }];
        let next = batch.prefill(&items).unwrap()[0].unwrap();
        let mut all = prefix.clone();
        all.extend(head);
        all.extend(suffix);
        let want = cpu_greedy_cached(&values, &all, 1, GgmlType::F16)[0];
        assert_eq!(next, want, "f16 cache, after suffix {suffix:?}");
    }
    let (pt, qt) = (
        batch.pool().page_table(p).unwrap(),
        batch.pool().page_table(q).unwrap(),
    );
    assert_ne!(pt[0], qt[0], "the shared partial page was copied");
    for s in [p, q] {
        batch.close(s).unwrap();
    }
    assert_eq!(batch.pool().free_pages(), shape.pages, "pages returned");
}

/// Past `FOLD_MAX_BLOCKS` (16) key blocks per head (512 keys of 64-element heads) decode
/// attention's combining pass runs on its own instead of inside the output projection: logits
/// at a context on each side of that switch (the cache carried across, so the second call
/// runs only the new tokens) agree with the CPU forward pass.
#[test]
fn tiny_llama_long_context_matches_on_both_sides_of_the_fused_combine() {
    let Some(gpu) = support::gpu() else { return };
    let (bytes, values) = build();
    let g = Gguf::parse(bytes).unwrap();
    let ctx = 600;
    let model = float_model(&gpu, &g, ctx);
    let mut session = Session::new(&gpu, &model, ctx).unwrap();
    // Token by token whatever the adapter: every position, the last included, takes the
    // decode step (a batched prompt's last token runs in its batch).
    session.batched_prefill = Some(false);
    let prompt: Vec<u32> = support::random_f32(560, 31)
        .iter()
        .map(|v| ((v + 1.0) * 0.5 * VOCAB as f32) as u32 % VOCAB as u32)
        .collect();
    let cpu = cpu_logits(&values, &prompt);
    for n in [500, 560] {
        let got = session.logits(&prompt[..n]).unwrap();
        assert_logits_close(&got, &cpu[n - 1], &format!("context {n}"));
    }
}

/// The MLC roles: `embed_tokens` gives the table's rows, `prefill_embeds` of them gives the
/// logits a token prompt gives, rows no token has (an adapter's) run through the same layers
/// as the CPU forward pass from those rows, `decode_embeds` continues one position at a time,
/// and the paged cache reuses its pages in another order after a truncation. Bad shapes,
/// a full cache and a cache of another model are refused before anything runs.
#[test]
fn tiny_llama_roles_match_the_cpu_forward_pass() {
    let Some(gpu) = support::gpu() else { return };
    let (bytes, values) = build();
    let g = Gguf::parse(bytes).unwrap();
    let ctx = 200;
    let model = float_model(&gpu, &g, ctx);
    let mut program = Program::new(&gpu, &model, ctx).unwrap();
    program.batched_prefill = Some(true);

    // embed_tokens: the dequantized table rows (Q8_0, no embedding scale for llama).
    let ids: Vec<u32> = (0..140).map(|i| (i * 37 + 11) % VOCAB as u32).collect();
    let embeds = program.embed_tokens(&ids).unwrap();
    assert_eq!(embeds.shape, vec![ids.len(), EMBD]);
    let table = &values["token_embd.weight"];
    let got = gpu.readback_f32(&embeds).unwrap();
    for (i, &t) in ids.iter().enumerate() {
        let want = &table[t as usize * EMBD..(t as usize + 1) * EMBD];
        assert_eq!(&got[i * EMBD..(i + 1) * EMBD], want, "row {i}");
    }

    // prefill_embeds of the token rows: the token prompt's logits (140 positions: 3 pages).
    let cpu = cpu_logits(&values, &ids);
    let mut kv = program.create_kv_cache(ctx).unwrap();
    let logits = program.prefill_embeds(&embeds, &mut kv).unwrap();
    assert_logits_close(
        &gpu.readback_f32(&logits).unwrap(),
        &cpu[139],
        "prefill_embeds",
    );
    assert_eq!(kv.len(), 140);
    assert_eq!(kv.page_table(), &[0, 1, 2]);

    // Rows no token has, prefilled after a truncation to 70 (the pages past the first two
    // come back in another order), then decoded one at a time.
    let mixed: Vec<Vec<f32>> = (0..75)
        .map(|i| {
            support::random_f32(EMBD, 500 + i)
                .iter()
                .map(|x| 0.5 * x)
                .collect()
        })
        .collect();
    let mut rows: Vec<Vec<f32>> = (0..70)
        .map(|i| got[i * EMBD..(i + 1) * EMBD].to_vec())
        .collect();
    rows.extend(mixed.iter().cloned());
    let cpu = cpu_logits_of_rows(&values, &rows, GgmlType::F32);
    kv.truncate(0);
    // Token by token this time (the embeddings rows are views either way).
    program.batched_prefill = Some(false);
    let first: Vec<f32> = rows[..140].concat();
    let first = gpu.upload_f32(&first, &[1, 140, EMBD], "rows").unwrap();
    let logits = program.prefill_embeds(&first, &mut kv).unwrap();
    assert_eq!(kv.page_table(), &[2, 1, 0]);
    assert_logits_close(
        &gpu.readback_f32(&logits).unwrap(),
        &cpu[139],
        "adapter rows",
    );
    for (pos, row) in rows.iter().enumerate().skip(140) {
        let one = gpu.upload_f32(row, &[1, 1, EMBD], "row").unwrap();
        let logits = program.decode_embeds(&one, &mut kv).unwrap();
        let what = format!("decode_embeds at {pos}");
        assert_logits_close(&gpu.readback_f32(&logits).unwrap(), &cpu[pos], &what);
    }
    assert_eq!(kv.len(), 145);

    // Refused: a row of the wrong width, two rows to decode, u32 rows, positions past the
    // cache, a cache larger than the program's, ids outside the vocabulary; the cache is
    // unchanged.
    let bad = |r: Result<gpuport_runtime::Tensor, gpuport_llm::LlmError>| {
        let Err(e) = r else { panic!("accepted") };
        assert_eq!(e.code(), "BAD_REQUEST");
    };
    let narrow = gpu.zeros_f32(&[1, EMBD - 4], "narrow").unwrap();
    bad(program.decode_embeds(&narrow, &mut kv));
    let two = gpu.zeros_f32(&[2, EMBD], "two").unwrap();
    bad(program.decode_embeds(&two, &mut kv));
    let ints = gpu
        .upload(
            &vec![0u8; 4 * EMBD],
            gpuport_runtime::Elem::U32,
            &[1, EMBD],
            "ints",
        )
        .unwrap();
    bad(program.decode_embeds(&ints, &mut kv));
    let many = gpu.zeros_f32(&[60, EMBD], "many").unwrap();
    bad(program.prefill_embeds(&many, &mut kv));
    assert!(program.create_kv_cache(ctx + 1).is_err());
    assert!(program.embed_tokens(&[VOCAB as u32]).is_err());
    assert_eq!(kv.len(), 145);
}

/// Issue 18: limits and device loss are typed errors and the process stays usable.
#[test]
fn oversized_requests_and_device_loss_are_typed_errors() {
    let Some(gpu) = support::gpu() else { return };
    let (bytes, _) = build();
    let g = Gguf::parse(bytes).unwrap();

    // A KV cache past the adapter's limits (lavapipe: 128 MiB per binding): refused before
    // anything is allocated, with the sizes, and the model still serves a small session.
    let model = float_model(&gpu, &g, 16);
    let huge = 1 << 24;
    let err = Session::new(&gpu, &model, huge).map(drop).unwrap_err();
    assert!(
        matches!(err.code(), "OUT_OF_MEMORY" | "TOO_LARGE" | "BAD_REQUEST"),
        "{}: {err}",
        err.code()
    );
    let err = Model::load(&gpu, &g, huge).map(drop).unwrap_err();
    assert!(!err.to_string().is_empty());
    // A tensor larger than the largest buffer the adapter allows.
    let limit = gpu.limits().max_buffer_size;
    let elems = (limit / 4 + 1) as usize;
    let err = gpu.zeros_f32(&[elems], "too big").map(drop).unwrap_err();
    assert!(
        matches!(err, gpuport_runtime::GpuError::TooLarge { .. }),
        "{err}"
    );
    let mut session = Session::new(&gpu, &model, 16).unwrap();
    let request = |sampling| Request {
        prompt: &[5u32, 77, 123],
        max_tokens: 6,
        stop: &[],
        sampling,
    };
    let first = session
        .generate(&request(Sampling::GREEDY), |_| true)
        .unwrap();
    assert_eq!(first.tokens.len(), 6);

    // The device is lost in the middle of a generation: the call fails with DEVICE_LOST,
    // and so does every later call; nothing panics and no tokens come from a dead device.
    let mut seen = 0;
    let err = session
        .generate(&request(Sampling::GREEDY), |_| {
            seen += 1;
            if seen == 1 {
                gpu.destroy();
            }
            true
        })
        .unwrap_err();
    assert_eq!(err.code(), "DEVICE_LOST", "{err}");
    assert_eq!(seen, 1, "no token after the loss");
    let again = session
        .generate(&request(Sampling::GREEDY), |_| true)
        .unwrap_err();
    assert_eq!(again.code(), "DEVICE_LOST", "{again}");
    let err = Session::new(&gpu, &model, 16).map(drop).unwrap_err();
    assert_eq!(err.code(), "DEVICE_LOST", "{err}");
    assert!(gpu.check().is_err());
}

/// Greedy continuation of `seq` by `n` tokens on the CPU.
fn cpu_greedy(
    values: &std::collections::HashMap<String, Vec<f32>>,
    seq: &[u32],
    n: usize,
) -> Vec<u32> {
    cpu_greedy_cached(values, seq, n, GgmlType::F32)
}

/// [`cpu_greedy`] over a KV cache of `kv` values.
fn cpu_greedy_cached(
    values: &std::collections::HashMap<String, Vec<f32>>,
    seq: &[u32],
    n: usize,
    kv: GgmlType,
) -> Vec<u32> {
    let mut s = seq.to_vec();
    for _ in 0..n {
        let l = cpu_logits_cached(values, &s, kv);
        s.push(argmax(l.last().unwrap()));
    }
    s[seq.len()..].to_vec()
}

/// Prompts of different lengths from a seeded generator.
fn prompts(n: usize, seed: u64) -> Vec<Vec<u32>> {
    let r = support::random_f32(64 * n, seed);
    (0..n)
        .map(|i| {
            let len = 1 + (i * 5 + 3) % 9;
            (0..len)
                .map(|j| ((r[i * 64 + j].abs() * 997.0) as u32) % VOCAB as u32)
                .collect()
        })
        .collect()
}

/// Each of `seqs` prefilled with its prompt and greedily decoded `steps` tokens further in
/// shared forwards: its first token and the steps' ids.
fn greedy_in_batch(
    batch: &mut gpuport_llm::Batch<'_>,
    seqs: &[gpuport_llm::SeqId],
    prompts: &[Vec<u32>],
    steps: usize,
) -> Vec<Vec<u32>> {
    use gpuport_llm::{DecodeItem, PrefillItem};
    let items: Vec<PrefillItem<'_>> = seqs
        .iter()
        .zip(prompts)
        .map(|(s, p)| PrefillItem {
            seq: *s,
            tokens: p,
            sample: Some(Sampling::GREEDY),
        })
        .collect();
    let first = batch.prefill(&items).unwrap();
    let items: Vec<DecodeItem<'_>> = seqs
        .iter()
        .map(|s| DecodeItem {
            seq: *s,
            sample: Sampling::GREEDY,
            stop: &[],
        })
        .collect();
    let decoded = batch.decode(&items, steps).unwrap();
    first
        .into_iter()
        .zip(decoded)
        .map(|(f, d)| std::iter::once(f.unwrap()).chain(d.ids).collect())
        .collect()
}

/// N = 1, 3, 8 sequences of different prompt lengths through shared forward passes (prompt
/// rows of all of them in one call, split across forwards of 16 rows, then 5 decode steps of
/// all in one submit, the last sequence with a stop token): the first token's logits match
/// the f64 CPU forward pass, and every sequence's greedy ids equal the CPU's argmax chain and
/// the single-sequence session's (N = 1 runs the one-row GEMV path), the stopped one's up to
/// its stop with the steps past it dropped from the pool.
#[test]
fn batched_rows_match_the_cpu_and_the_single_sequence_path() {
    use gpuport_llm::{Batch, BatchShape, DecodeItem, PrefillItem};
    let Some(gpu) = support::gpu() else { return };
    let (bytes, values) = build();
    let g = Gguf::parse(bytes).unwrap();
    let model = float_model(&gpu, &g, 32);
    let mut session = Session::new(&gpu, &model, 32).unwrap();
    let shape = BatchShape {
        slots: 8,
        seq_capacity: 32,
        pages: 8,
        max_rows: 16,
    };
    let mut batch = Batch::new(&gpu, &model, shape).unwrap();
    for n in [1usize, 3, 8] {
        let ps = prompts(n, 7 + n as u64);
        let seqs: Vec<_> = (0..n).map(|_| batch.open().unwrap()).collect();
        let items: Vec<PrefillItem<'_>> = seqs
            .iter()
            .zip(&ps)
            .map(|(s, p)| PrefillItem {
                seq: *s,
                tokens: p,
                sample: Some(Sampling::GREEDY),
            })
            .collect();
        let first = batch.prefill(&items).unwrap();
        let total: usize = ps.iter().map(Vec::len).sum();
        if total <= shape.max_rows {
            // One forward: its logits are every sequence's.
            let logits = batch.last_logits(n).unwrap();
            for (i, p) in ps.iter().enumerate() {
                let cpu = cpu_logits(&values, p);
                assert_logits_close(&logits[i], cpu.last().unwrap(), &format!("N {n} seq {i}"));
            }
        }
        let wants: Vec<Vec<u32>> = ps.iter().map(|p| cpu_greedy(&values, p, 6)).collect();
        // The last sequence stops at its third decoded token (the others run all 5 steps).
        let stop = [wants[n - 1][3]];
        let items: Vec<DecodeItem<'_>> = seqs
            .iter()
            .enumerate()
            .map(|(i, s)| DecodeItem {
                seq: *s,
                sample: Sampling::GREEDY,
                stop: if i == n - 1 { &stop } else { &[] },
            })
            .collect();
        let decoded = batch.decode(&items, 5).unwrap();
        for (i, p) in ps.iter().enumerate() {
            let mut got = vec![first[i].unwrap()];
            got.extend(&decoded[i].ids);
            let mut want = wants[i].clone();
            if i == n - 1 {
                let at = want[1..].iter().position(|t| *t == stop[0]).unwrap();
                want.truncate(at + 2);
                assert!(decoded[i].stopped, "N {n}: the stop token ended it");
                assert_eq!(batch.pending(seqs[i]).unwrap(), Some(stop[0]));
                let held = p.len() + decoded[i].ids.len();
                assert_eq!(batch.cached(seqs[i]).unwrap().len(), held);
                assert_eq!(
                    batch.pool().len(seqs[i]).unwrap(),
                    held,
                    "steps past it dropped"
                );
            }
            assert_eq!(
                got, want,
                "N {n}, sequence {i} (prompt {p:?}) against the CPU"
            );
            session.reset();
            let alone = session
                .generate(
                    &Request {
                        prompt: p,
                        max_tokens: 6,
                        stop: items[i].stop,
                        sampling: Sampling::GREEDY,
                    },
                    |_| true,
                )
                .unwrap();
            assert_eq!(got, alone.tokens, "N {n}, sequence {i} against the session");
            if i < n - 1 {
                assert_eq!(batch.cached(seqs[i]).unwrap().len(), p.len() + 5);
            }
        }
        for s in seqs {
            batch.close(s).unwrap();
        }
        assert_eq!(
            batch.pool().free_pages(),
            shape.pages,
            "N {n}: pages returned"
        );
    }
}

/// Every int8-capable projection on int8 input (`with_int8_min_bytes(0)`: the normed stacks,
/// their norm writing the blocks; the attention output, its heads combined into blocks; the
/// down projection, its gated activation formed into blocks in one dispatch): N = 3
/// and 8 sequences through shared forwards of 16 rows give each sequence the greedy ids the
/// single-sequence session gives it, the one-row path quantizing what the many-row path rounds.
#[test]
fn int8_projections_give_batched_rows_the_session_ids() {
    use gpuport_llm::{Batch, BatchShape};
    let Some(gpu) = support::gpu() else { return };
    let (bytes, values) = build();
    let g = Gguf::parse(bytes).unwrap();
    let model = Model::load(&gpu, &g, 32).unwrap().with_int8_min_bytes(0);
    let mut session = Session::new(&gpu, &model, 32).unwrap();
    let shape = BatchShape {
        slots: 8,
        seq_capacity: 32,
        pages: 8,
        max_rows: 16,
    };
    let mut batch = Batch::new(&gpu, &model, shape).unwrap();
    for n in [3usize, 8] {
        let ps = prompts(n, 31 + n as u64);
        let seqs: Vec<_> = (0..n).map(|_| batch.open().unwrap()).collect();
        let ids = greedy_in_batch(&mut batch, &seqs, &ps, 5);
        assert_session_ids(&mut session, &ps, &ids, &format!("N {n}"));
        for (i, (p, got)) in ps.iter().zip(ids).enumerate() {
            // Int8 input moves the ids off the f64 forward only where its margins are thin.
            let cpu = cpu_greedy(&values, p, 6);
            assert_eq!(
                got[0], cpu[0],
                "N {n}, sequence {i}: first token against the CPU"
            );
        }
        for s in seqs {
            batch.close(s).unwrap();
        }
    }
    // Prompts of 10-24 tokens, 8 of them in forwards of up to 128 rows: past the few-row
    // kernel's 64, where a CPU adapter's int8 tiled kernel takes the rows as int8 blocks too
    // (`ops::q8_rows_fit`) and a GPU's rows round onto the same grid for the float GEMM.
    let shape = BatchShape {
        max_rows: 128,
        ..shape
    };
    let mut batch = Batch::new(&gpu, &model, shape).unwrap();
    let r = support::random_f32(8 * 24, 57);
    let ps: Vec<Vec<u32>> = (0..8)
        .map(|i| {
            (0..10 + (i * 7) % 15)
                .map(|j| ((r[i * 24 + j].abs() * 997.0) as u32) % VOCAB as u32)
                .collect()
        })
        .collect();
    assert!(ps.iter().map(Vec::len).sum::<usize>() > 64 + 8);
    let seqs: Vec<_> = (0..8).map(|_| batch.open().unwrap()).collect();
    let ids = greedy_in_batch(&mut batch, &seqs, &ps, 5);
    assert_session_ids(&mut session, &ps, &ids, "long prompts");
}

/// Each prompt's batched ids (`ids[i]`: its first token and 5 more) equal the session's
/// greedy run of it alone.
fn assert_session_ids(session: &mut Session<'_>, ps: &[Vec<u32>], ids: &[Vec<u32>], what: &str) {
    for (i, (p, got)) in ps.iter().zip(ids).enumerate() {
        session.reset();
        let request = Request {
            prompt: p,
            max_tokens: 6,
            stop: &[],
            sampling: Sampling::GREEDY,
        };
        let alone = session.generate(&request, |_| true).unwrap();
        assert_eq!(
            got, &alone.tokens,
            "{what}, sequence {i} against the session"
        );
    }
}

/// One forward with a sequence decoding (its pending token) beside another's prompt rows,
/// sampled sequences with their own seeds equal to the session's draws, a prefix shared by a
/// fork (the shared page copied before the fork writes into it, the original unharmed), and a
/// truncated sequence whose pages are reused.
#[test]
fn batched_rows_mix_prefill_and_decode_share_prefixes_and_reuse_pages() {
    use gpuport_llm::{Batch, BatchShape, DecodeItem, PrefillItem};
    let Some(gpu) = support::gpu() else { return };
    let (bytes, values) = build();
    let g = Gguf::parse(bytes).unwrap();
    let model = float_model(&gpu, &g, 96);
    let shape = BatchShape {
        slots: 4,
        seq_capacity: 96,
        pages: 6,
        max_rows: 96,
    };
    let mut batch = Batch::new(&gpu, &model, shape).unwrap();
    let ps = prompts(2, 99);
    let (a, b) = (batch.open().unwrap(), batch.open().unwrap());
    let greedy = Some(Sampling::GREEDY);
    let item = |seq, tokens, sample| PrefillItem {
        seq,
        tokens,
        sample,
    };
    let first_a = batch.prefill(&[item(a, &ps[0], greedy)]).unwrap()[0].unwrap();
    // Mixed: a's pending token (a decode row) and b's prompt in one forward.
    let mixed = batch
        .prefill(&[item(a, &[], greedy), item(b, &ps[1], greedy)])
        .unwrap();
    let want_a = cpu_greedy(&values, &ps[0], 2);
    assert_eq!(
        vec![first_a, mixed[0].unwrap()],
        want_a,
        "a decoding beside b's prompt"
    );
    assert_eq!(
        mixed[1].unwrap(),
        cpu_greedy(&values, &ps[1], 1)[0],
        "b's prompt beside a"
    );

    // Sampled, each with its own seed: the same draws as a session with that seed.
    let sampled = |seed| Sampling {
        temperature: 0.9,
        top_k: 40,
        top_p: 0.95,
        seed,
        ..Sampling::GREEDY
    };
    let c = batch.open().unwrap();
    let d = batch.open().unwrap();
    let got = batch
        .prefill(&[
            item(c, &ps[0], Some(sampled(11))),
            item(d, &ps[1], Some(sampled(12))),
        ])
        .unwrap();
    let decoding = |seq, seed| DecodeItem {
        seq,
        sample: sampled(seed),
        stop: &[],
    };
    let steps = batch
        .decode(&[decoding(c, 11), decoding(d, 12)], 4)
        .unwrap();
    let mut session = Session::new(&gpu, &model, 96).unwrap();
    for (i, (p, seed)) in [(&ps[0], 11), (&ps[1], 12)].into_iter().enumerate() {
        session.reset();
        let alone = session
            .generate(
                &Request {
                    prompt: p,
                    max_tokens: 5,
                    stop: &[],
                    sampling: sampled(seed),
                },
                |_| true,
            )
            .unwrap();
        let mut mine = vec![got[i].unwrap()];
        mine.extend(&steps[i].ids);
        assert_eq!(mine, alone.tokens, "seed {seed}: batch and session draws");
    }
    for s in [a, b, c, d] {
        batch.close(s).unwrap();
    }
    assert_eq!(batch.pool().free_pages(), shape.pages);

    // A 70-token prefix (one full page and 6 positions of the next) shared by a fork.
    let prefix: Vec<u32> = (0..70).map(|i| (i * 37 + 11) % VOCAB as u32).collect();
    let p = batch.open().unwrap();
    batch.prefill(&[item(p, &prefix, greedy)]).unwrap();
    let table = batch.pool().page_table(p).unwrap().to_vec();
    let q = batch.fork(p, prefix.len()).unwrap();
    assert_eq!(batch.pool().page_table(q).unwrap(), table.as_slice());
    assert!(table.iter().all(|pg| batch.pool().page_refs(*pg) == 2));
    // q writes into the shared partial page: it gets its own copy first.
    let suffix = [3u32, 141, 59];
    let q_next = batch.prefill(&[item(q, &suffix, greedy)]).unwrap()[0].unwrap();
    let q_table = batch.pool().page_table(q).unwrap().to_vec();
    assert_eq!(q_table[0], table[0], "the full page stays shared");
    assert_ne!(q_table[1], table[1], "the partial page was copied");
    let mut q_seq = prefix.clone();
    q_seq.extend(suffix);
    assert_eq!(
        q_next,
        cpu_greedy(&values, &q_seq, 1)[0],
        "the fork after its suffix"
    );
    // p continues from its own, untouched pages.
    let p_next = batch.prefill(&[item(p, &[7, 8], greedy)]).unwrap()[0].unwrap();
    let mut p_seq = prefix.clone();
    p_seq.extend([7, 8]);
    assert_eq!(
        p_next,
        cpu_greedy(&values, &p_seq, 1)[0],
        "the original after the fork"
    );

    // Truncation returns pages; the same sequence then takes a different continuation.
    batch.truncate(q, 10).unwrap();
    assert_eq!(batch.pool().page_table(q).unwrap().len(), 1);
    let r_next = batch.prefill(&[item(q, &[42, 43, 44], greedy)]).unwrap()[0].unwrap();
    let mut r_seq = prefix[..10].to_vec();
    r_seq.extend([42, 43, 44]);
    assert_eq!(
        r_next,
        cpu_greedy(&values, &r_seq, 1)[0],
        "after truncation"
    );
    batch.close(p).unwrap();
    batch.close(q).unwrap();
    assert_eq!(batch.pool().free_pages(), shape.pages);
}
