//! `evolve-hud bench` and `cargo bench --bench throughput`: token throughput
//! measured the way llama.cpp's `llama-bench` measures it, plus what a user
//! of the HTTP API feels.
//!
//! - `pp<p>`: `p` random tokens decoded as prompt batches into an empty KV
//!   sequence; `tg<n>`: `n` single-token decodes. No tokenizing, no sampling.
//!   Warm-up runs first, then `reps` runs; t/s is mean ± sample sd over runs.
//! - end to end: streamed `/v1/chat/completions` requests against this
//!   process's own server on loopback: time to first token and decode rate.

use crate::cli::BenchArgs;
use crate::engine::local::{BenchTest, ModelHandle, ModelInfo};
use crate::engine::Engine;
use crate::logging::Progress;
use anyhow::Context;
use evolve_hud_api::openai::{ChatRequest, Content, Message, StreamOptions};
use futures_util::StreamExt;
use serde::Serialize;
use std::time::{Duration, Instant};

/// One test's throughput over the measured runs.
#[derive(Debug, Clone, Serialize)]
pub struct TestResult {
    /// `pp512`, `tg128`, as llama-bench names them.
    pub test: String,
    pub avg_ts: f64,
    pub stddev_ts: f64,
    pub samples_ts: Vec<f64>,
}

/// End-to-end numbers of streamed chat completions.
#[derive(Debug, Clone, Serialize)]
pub struct EndToEnd {
    pub requests: u32,
    pub prompt_tokens: u32,
    /// Mean time from sending the request to the first streamed text.
    pub ttft_ms: f64,
    /// Mean completion tokens per second after the first token.
    pub decode_ts: f64,
    pub completion_tokens: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub model: String,
    pub model_size: u64,
    pub model_n_params: u64,
    pub backend: String,
    pub n_threads: u32,
    pub n_gpu_layers: u32,
    pub layers: u32,
    /// What ggml's CPU back-end was compiled with (`AVX2`, `AVX512`, …): the
    /// kernels a ratio against another build is tied to.
    pub cpu_features: Vec<String>,
    /// The CPU module ggml chose, in the portable build (`zen4`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_variant: Option<String>,
    pub results: Vec<TestResult>,
    pub end_to_end: Option<EndToEnd>,
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n.max(1.0);
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}

/// Runs one test `warmup` times unmeasured, then `reps` times.
async fn measure(
    model: &ModelHandle,
    test: BenchTest,
    warmup: u32,
    reps: u32,
    progress: &Progress,
) -> anyhow::Result<TestResult> {
    let (name, tokens) = match test {
        BenchTest::Prompt(n) => (format!("pp{n}"), n),
        BenchTest::Generate(n) => (format!("tg{n}"), n),
    };
    for i in 0..warmup {
        progress.say(&format!("{name} warm-up {}/{warmup}", i + 1));
        model.bench(test).await?;
    }
    let mut samples = Vec::with_capacity(reps as usize);
    for i in 0..reps {
        progress.say(&format!("{name} run {}/{reps}", i + 1));
        let took = model.bench(test).await?;
        samples.push(tokens as f64 / took.as_secs_f64());
    }
    let (avg_ts, stddev_ts) = mean_sd(&samples);
    Ok(TestResult {
        test: name,
        avg_ts,
        stddev_ts,
        samples_ts: samples,
    })
}

/// Loads the model, runs the tests and (unless turned off) the end-to-end
/// requests, and returns the report.
pub async fn run(args: &BenchArgs) -> anyhow::Result<Report> {
    let local = args.model.local()?;
    let progress = Progress::new("bench: ");
    progress.say(&format!("loading {}", local.path.display()));
    let (model, thread) = ModelHandle::start(&local)
        .await
        .with_context(|| format!("cannot load {}", local.path.display()))?;
    let result = measure_all(args, &model, &progress).await;
    progress.done();
    thread.shutdown().await;
    result
}

async fn measure_all(args: &BenchArgs, model: &ModelHandle, progress: &Progress) -> anyhow::Result<Report> {
    let info: ModelInfo = model.model_info().clone();
    let mut results = Vec::new();
    if args.prompt > 0 {
        results.push(measure(model, BenchTest::Prompt(args.prompt), args.warmup, args.reps, progress).await?);
    }
    if args.gen > 0 {
        results.push(measure(model, BenchTest::Generate(args.gen), args.warmup, args.reps, progress).await?);
    }
    let end_to_end = if args.e2e_requests > 0 {
        Some(end_to_end(model, args.gen.max(16), args.e2e_requests, progress).await?)
    } else {
        None
    };
    Ok(Report {
        model: info.name.clone(),
        model_size: info.tensor_bytes,
        model_n_params: info.params,
        backend: info.backend.clone(),
        n_threads: info.threads,
        n_gpu_layers: info.gpu_layers,
        layers: info.layers,
        cpu_features: info.cpu_features.clone(),
        cpu_variant: info.cpu_variant.clone(),
        results,
        end_to_end,
    })
}

/// Streams chat completions from this process's own server on loopback.
async fn end_to_end(
    model: &ModelHandle,
    max_tokens: u32,
    requests: u32,
    progress: &Progress,
) -> anyhow::Result<EndToEnd> {
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .build_recorder()
        .handle();
    let hud = crate::hud::Hud::new(
        crate::hud::HudConfig::default(),
        crate::hud::TokenCounter::words(),
        None,
    );
    let listener = crate::server::listen::Listeners::bind("127.0.0.1:0".parse()?).await?;
    let address = listener.local_addr()?;
    // A secret of this run's own: the server proves it and takes it.
    let secret = crate::secret::Secret::parse(&crate::secret::nonce()).map_err(anyhow::Error::msg)?;
    let access = crate::server::access::Access {
        credentials: crate::cli::Credentials {
            token: Some(secret.clone()),
            identity: Some(secret.clone()),
        },
        ..Default::default()
    };
    let state = crate::server::AppState {
        engine: Engine::new(model.clone()),
        access: std::sync::Arc::new(access),
        hud,
        model_name: Some("bench".into()),
        metrics,
        started: 0,
        queue_timeout: std::time::Duration::from_secs(600),
        shutdown: Default::default(),
    };
    let sidecar = crate::client::Sidecar::new(&format!("http://{address}"), Some(secret), Duration::from_secs(600))?;
    let stop = tokio_util::sync::CancellationToken::new();
    let server = tokio::spawn(crate::server::listen::serve(
        listener,
        crate::server::router(state, 1 << 20),
        true,
        stop.clone(),
    ));

    let mut ttft = Vec::new();
    let mut rates = Vec::new();
    let (mut prompt_tokens, mut completion_tokens) = (0, 0);
    for i in 0..requests {
        progress.say(&format!("end-to-end request {}/{requests}", i + 1));
        // A different first line each time, so no request reuses the last one's cache.
        let request = ChatRequest {
            messages: Some(vec![
                message(
                    "system",
                    format!("Request {i}. You are a helpful assistant for a software team."),
                ),
                message(
                    "user",
                    "Explain in detail how a hash map works, covering hashing, collisions, resizing and iteration \
order, with examples."
                        .to_owned(),
                ),
            ]),
            max_tokens: Some(i64::from(max_tokens)),
            temperature: Some(0.0),
            stream: true,
            stream_options: Some(StreamOptions { include_usage: true }),
            ..Default::default()
        };
        let sample = stream_once(&sidecar, &request).await?;
        ttft.push(sample.ttft.as_secs_f64() * 1000.0);
        if sample.tokens > 1 {
            rates.push((sample.tokens - 1) as f64 / sample.after_first.as_secs_f64());
        }
        prompt_tokens = sample.prompt_tokens;
        completion_tokens += sample.tokens;
    }
    server.abort();
    Ok(EndToEnd {
        requests,
        prompt_tokens,
        ttft_ms: mean_sd(&ttft).0,
        decode_ts: mean_sd(&rates).0,
        completion_tokens: completion_tokens / requests.max(1),
    })
}

struct Sample {
    ttft: Duration,
    after_first: Duration,
    tokens: u32,
    prompt_tokens: u32,
}

fn message(role: &str, text: String) -> Message {
    Message {
        role: role.to_owned(),
        content: Some(Content::Text(text)),
    }
}

/// One streamed request: time to the first text chunk, then to the end.
async fn stream_once(sidecar: &crate::client::Sidecar, request: &ChatRequest) -> anyhow::Result<Sample> {
    let started = Instant::now();
    let chunks = sidecar.chat_stream(request).await.context("the bench request failed")?;
    let mut chunks = std::pin::pin!(chunks);
    let mut first = None;
    let (mut tokens, mut prompt_tokens) = (0, 0);
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(anyhow::Error::msg)?;
        let text = chunk.choices.first().and_then(|c| c.delta.content.as_deref());
        if first.is_none() && text.is_some_and(|t| !t.is_empty()) {
            first = Some(started.elapsed());
        }
        if let Some(usage) = &chunk.usage {
            tokens = usage.completion_tokens.unwrap_or(0);
            prompt_tokens = usage.prompt_tokens.unwrap_or(0);
        }
    }
    let total = started.elapsed();
    let ttft = first.unwrap_or(total);
    Ok(Sample {
        ttft,
        after_first: total.saturating_sub(ttft).max(Duration::from_micros(1)),
        tokens,
        prompt_tokens,
    })
}

/// The report as a markdown table in llama-bench's layout, plus the
/// end-to-end line.
pub fn markdown(r: &Report) -> String {
    let size = format!("{:.2} MiB", r.model_size as f64 / (1024.0 * 1024.0));
    let params = format!("{:.2} M", r.model_n_params as f64 / 1e6);
    let backend = if r.n_gpu_layers > 0 {
        format!(
            "{} ({}/{} layers)",
            r.backend,
            r.n_gpu_layers.min(r.layers + 1),
            r.layers + 1
        )
    } else {
        r.backend.clone()
    };
    let mut out = String::from("| model | size | params | backend | threads | test | t/s |\n");
    out.push_str("| --- | ---: | ---: | --- | ---: | ---: | ---: |\n");
    for t in &r.results {
        out.push_str(&format!(
            "| {} | {size} | {params} | {backend} | {} | {} | {:.2} ± {:.2} |\n",
            r.model, r.n_threads, t.test, t.avg_ts, t.stddev_ts
        ));
    }
    if !r.cpu_features.is_empty() {
        let module = r
            .cpu_variant
            .as_ref()
            .map(|v| format!(" (module {v})"))
            .unwrap_or_default();
        out.push_str(&format!("\nggml CPU back-end{module}: {}\n", r.cpu_features.join(" ")));
    }
    if let Some(e) = &r.end_to_end {
        out.push_str(&format!(
            "\n/v1/chat/completions, streamed ({} requests, {}-token prompt, {} tokens generated): \
time to first token {:.0} ms, {:.1} tok/s after it\n",
            e.requests, e.prompt_tokens, e.completion_tokens, e.ttft_ms, e.decode_ts
        ));
    }
    out
}
