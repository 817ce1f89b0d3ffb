//! The header's thread-safety promises as one table, and the tests that
//! run them.
//!
//! [`TABLE`] holds every sentence of every "Thread safety:" paragraph of
//! include/graphcore.h and include/graphcore_ops.h (each named by a quoted
//! fragment of it) with the pairs of calls it lets run at once: (call A,
//! call B, which handle they share). A sentence that permits nothing (a
//! prohibition, or an order the caller keeps) says so in place of pairs.
//! [`every_thread_safety_sentence_has_a_row`] (CPU, runs in CI) parses the
//! headers and fails on a sentence no entry quotes, on an entry quoting no
//! sentence, on a call the header does not declare, and on a row whose test
//! is not in this file, so a new sentence without a row fails.
//!
//! Each GPU test runs its rows: the two calls in two threads, in a loop,
//! for `GC_STRESS_SECS` seconds each (default 1, fractions allowed), under
//! the [`race`] watchdog, then checks the results and that the pool
//! statistics are back where they started. Calls the header names are made
//! through graphcore_core (what the C function wraps), except where the C
//! layer itself carries the promise (the per-thread last error, the
//! allocator exports, a runner's capture excluding its replays): those go
//! through the C ABI of the library under test (`dlopen` of
//! libgraphcore.so, as tests/c_abi.rs finds it).

use super::foundation::{add_one, AddOneLaunch, USER_PTX};
use super::*;
use graphcore_core::kernels::ops;
use graphcore_core::{
    begin_capture, begin_capture_into, end_capture, launch_op, Binding, CaptureMode, CondType,
    ErrorKind, Event, Exec, Graph, Module,
};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// One pair of calls a sentence lets run at once.
pub(crate) struct Row {
    /// The two calls (C names, as the header spells them).
    pub(crate) a: &'static str,
    pub(crate) b: &'static str,
    /// What they share: "same <handle>", "different <handles>", ...
    pub(crate) shared: &'static str,
    /// The test of this file that runs the pair.
    pub(crate) test: &'static str,
}

/// One thread-safety sentence of the headers.
pub(crate) struct Sentence {
    /// A fragment of the sentence (whitespace-normalized), unique to it
    /// (sentences repeated word for word share one entry).
    pub(crate) quote: &'static str,
    /// The pairs it lets run at once.
    pub(crate) rows: &'static [Row],
    /// Why there are no rows (empty when there are).
    pub(crate) no_rows: &'static str,
}

const fn row(a: &'static str, b: &'static str, shared: &'static str, test: &'static str) -> Row {
    Row { a, b, shared, test }
}

const PROHIBITION: &str = "a prohibition: nothing may run at once with it";

/// The table: every thread-safety sentence of the two headers.
pub(crate) const TABLE: &[Sentence] = &[
    // Status section.
    Sentence {
        quote: "all calls of this section may run concurrently from any threads; the last error is per thread",
        rows: &[
            row("gc_last_error", "gc_last_error", "none (per thread)", "last_errors_are_per_thread"),
            row("gc_status_name", "gc_last_error", "none", "last_errors_are_per_thread"),
        ],
        no_rows: "",
    },
    // gc_context.
    Sentence {
        quote: "every call may run concurrently with any other on the same handle, except gc_context_destroy",
        rows: &[
            row("gc_context_synchronize", "gc_context_synchronize", "same context", "context_calls_at_once"),
            row("gc_stream_create", "gc_pool_create", "same context", "context_calls_at_once"),
            row("gc_host_alloc", "gc_context_synchronize", "same context", "context_calls_at_once"),
        ],
        no_rows: "",
    },
    // gc_stream.
    Sentence {
        quote: "work may be enqueued on one stream from several threads at once",
        rows: &[
            row("gc_op_add", "gc_op_add", "same stream", "work_enqueued_on_one_stream_from_threads"),
            row("gc_memset_async", "gc_exec_launch", "same stream", "work_enqueued_on_one_stream_from_threads"),
            row("gc_memcpy_async", "gc_stream_synchronize", "same stream", "work_enqueued_on_one_stream_from_threads"),
        ],
        no_rows: "",
    },
    Sentence {
        quote: "gc_capture_begin and gc_capture_end on a stream are serialized inside, but the caller orders them",
        rows: &[],
        no_rows: "an order the caller keeps: one capture at a time per stream",
    },
    Sentence {
        quote: "gc_stream_destroy must not race with other calls on the same handle",
        rows: &[],
        no_rows: PROHIBITION,
    },
    // gc_event.
    Sentence {
        quote: "every call may run concurrently with any other on the same event",
        rows: &[
            row("gc_event_record", "gc_event_record", "same event, two streams", "event_calls_at_once"),
            row("gc_event_record", "gc_event_synchronize", "same event", "event_calls_at_once"),
            row("gc_event_query", "gc_stream_wait_event", "same event", "event_calls_at_once"),
        ],
        no_rows: "",
    },
    // gc_pool.
    Sentence {
        quote: "every call may run concurrently with any other on the same pool",
        rows: &[
            row("gc_pool_alloc", "gc_pool_alloc", "same pool", "pool_calls_at_once"),
            row("gc_pool_free", "gc_pool_stats", "same pool", "pool_calls_at_once"),
            row("gc_pool_alloc", "gc_pool_trim", "same pool", "pool_calls_at_once"),
            row("gc_pool_alloc", "gc_pool_enable_peer_access", "same pool (two devices)", "pool_calls_at_once"),
        ],
        no_rows: "",
    },
    Sentence {
        quote: "Graphs sharing a pool must not run concurrently",
        rows: &[],
        no_rows: PROHIBITION,
    },
    // Allocator section and its exports.
    Sentence {
        quote: "every call may run from any thread at once; gc_allocator_set_pool may run concurrently with allocations",
        rows: &[
            row("gc_torch_alloc", "gc_torch_free", "same device's pool", "allocator_exports_at_once"),
            row("gc_engine_alloc", "gc_engine_free", "same pool", "allocator_exports_at_once"),
            row("gc_allocator_set_pool", "gc_torch_alloc", "same device", "allocator_exports_at_once"),
        ],
        no_rows: "",
    },
    Sentence {
        quote: "may run concurrently with allocations and frees",
        rows: &[row("gc_allocator_set_pool", "gc_torch_free", "same device", "allocator_exports_at_once")],
        no_rows: "",
    },
    Sentence {
        quote: "any thread, concurrently",
        rows: &[
            row("gc_torch_alloc", "gc_torch_alloc", "same device's pool", "allocator_exports_at_once"),
            row("gc_engine_alloc", "gc_engine_alloc", "same pool", "allocator_exports_at_once"),
        ],
        no_rows: "",
    },
    // Host memory and copies.
    Sentence {
        quote: "all calls may run concurrently, on any streams and contexts; the caller orders gc_host_free after the last work",
        rows: &[
            row("gc_host_alloc", "gc_host_free", "same context", "host_memory_and_copies_at_once"),
            row("gc_memcpy_async", "gc_memset_async", "same context, two streams", "host_memory_and_copies_at_once"),
        ],
        no_rows: "",
    },
    // gc_module, gc_function.
    Sentence {
        quote: "every call may run concurrently with any other on the same module, except gc_module_destroy",
        rows: &[row("gc_module_function", "gc_module_function", "same module", "module_and_function_calls_at_once")],
        no_rows: "",
    },
    Sentence {
        quote: "a function may be launched and added to graphs from many threads at once; gc_function_destroy must not race",
        rows: &[
            row("gc_launch", "gc_graph_add_kernel", "same function", "module_and_function_calls_at_once"),
            row("gc_launch", "gc_launch", "same function", "module_and_function_calls_at_once"),
        ],
        no_rows: "",
    },
    // Capture.
    Sentence {
        quote: "one capture at a time per stream",
        rows: &[],
        no_rows: "an order the caller keeps",
    },
    Sentence {
        quote: "End a capture on the thread that began it",
        rows: &[],
        no_rows: "an order the caller keeps (begin and end on one thread)",
    },
    Sentence {
        quote: "Different streams may capture concurrently on different threads",
        rows: &[row("gc_capture_begin", "gc_capture_begin", "different streams, same pool", "captures_on_two_streams_at_once")],
        no_rows: "",
    },
    Sentence {
        quote: "While any capture is open in a context, gc_context_synchronize and gc_pool_trim refuse to run",
        rows: &[
            row("gc_capture_begin", "gc_context_synchronize", "same context", "synchronize_and_trim_refuse_while_a_capture_is_open"),
            row("gc_capture_begin", "gc_pool_trim", "same context and pool", "synchronize_and_trim_refuse_while_a_capture_is_open"),
        ],
        no_rows: "",
    },
    // gc_graph.
    Sentence {
        quote: "building calls on one graph are serialized inside, but the order of the nodes is the caller's",
        rows: &[row("gc_graph_add_empty", "gc_graph_add_memset", "same graph", "graph_calls_at_once")],
        no_rows: "",
    },
    Sentence {
        quote: "Different graphs may be built concurrently",
        rows: &[
            row("gc_graph_add_kernel", "gc_graph_add_kernel", "different graphs", "graph_calls_at_once"),
            row("gc_graph_instantiate", "gc_graph_add_child", "different graphs (the instantiated one adopted)", "graph_calls_at_once"),
        ],
        no_rows: "",
    },
    Sentence {
        quote: "Reading calls (gc_graph_node_count, gc_graph_write_dot, gc_graph_instantiate...) may run concurrently with each other",
        rows: &[
            row("gc_graph_node_count", "gc_graph_write_dot", "same graph", "graph_calls_at_once"),
            row("gc_graph_instantiate", "gc_graph_instantiate", "same graph", "graph_calls_at_once"),
            row("gc_graph_instantiate", "gc_graph_write_dot", "same graph", "graph_calls_at_once"),
        ],
        no_rows: "",
    },
    Sentence {
        quote: "gc_graph_destroy must not race with other calls on the handle",
        rows: &[],
        no_rows: PROHIBITION,
    },
    // Conditional bodies.
    Sentence {
        quote: "Thread safety: as for gc_graph",
        rows: &[],
        no_rows: "refers to gc_graph's sentences (their rows)",
    },
    Sentence {
        quote: "Build a graph and its bodies from one thread",
        rows: &[],
        no_rows: "an order the caller keeps",
    },
    Sentence {
        quote: "While a capture into a body is open",
        rows: &[
            row("gc_capture_begin_into", "gc_graph_instantiate", "the body's holder", "calls_on_a_body_and_its_holder_during_a_capture_into_it"),
            row("gc_capture_begin_into", "gc_graph_node_count", "the body", "calls_on_a_body_and_its_holder_during_a_capture_into_it"),
            row("gc_capture_begin_into", "gc_graph_destroy", "the body's holder", "calls_on_a_body_and_its_holder_during_a_capture_into_it"),
        ],
        no_rows: "",
    },
    Sentence {
        quote: "Once the graph holding a body is destroyed, and no capture into the body is open",
        rows: &[],
        no_rows: "an order of calls, not calls at once (gpu::reliability::a_body_of_a_destroyed_holder_refuses_every_call)",
    },
    // gc_exec.
    Sentence {
        quote: "gc_exec_launch and gc_exec_launch_with may be called from several threads at once",
        rows: &[
            row("gc_exec_launch", "gc_exec_launch", "same exec", "exec_launches_at_once"),
            row("gc_exec_launch", "gc_exec_launch_with", "same exec", "exec_launches_at_once"),
        ],
        no_rows: "",
    },
    Sentence {
        quote: "Each launch runs with one whole set of bindings",
        rows: &[row("gc_exec_launch_with", "gc_exec_launch_with", "same exec, own bindings", "exec_launches_at_once")],
        no_rows: "",
    },
    Sentence {
        quote: "concurrently with gc_exec_launch_with of the same exec (both take the exec's argument lock)",
        rows: &[row("gc_exec_arg_uses", "gc_exec_launch_with", "same exec", "exec_launches_at_once")],
        no_rows: "",
    },
    Sentence {
        quote: "gc_exec_update and gc_exec_set_kernel_args must not race with a launch of the same exec",
        rows: &[],
        no_rows: PROHIBITION,
    },
    Sentence {
        quote: "gc_exec_destroy must not race with other calls on the handle",
        rows: &[],
        no_rows: PROHIBITION,
    },
    // gc_runner.
    Sentence {
        quote: "gc_runner_replay, gc_runner_replay_with and gc_runner_stats may run from several threads at once on one runner",
        rows: &[
            row("gc_runner_replay", "gc_runner_stats", "same runner", "runner_calls_at_once"),
            row("gc_runner_replay", "gc_runner_replay", "same runner, two buckets", "runner_calls_at_once"),
        ],
        no_rows: "",
    },
    Sentence {
        quote: "gc_runner_capture and gc_runner_capture_exact exclude them: they wait until it returns",
        rows: &[row("gc_runner_capture", "gc_runner_replay", "same runner", "runner_calls_at_once")],
        no_rows: "",
    },
    Sentence {
        quote: "The buckets share the runner's pool, so the GPU work of two replays must not overlap",
        rows: &[],
        no_rows: "an order the caller keeps (one stream, or ordered streams)",
    },
    Sentence {
        quote: "gc_runner_destroy must not race with other calls on the handle",
        rows: &[],
        no_rows: PROHIBITION,
    },
    // gc_cache.
    Sentence {
        quote: "gc_cache_launch may run from several threads at once; a hit takes a read lock for the lookup and the launch",
        rows: &[row("gc_cache_launch", "gc_cache_launch", "same cache, one key (hits)", "cache_launches_at_once")],
        no_rows: "",
    },
    Sentence {
        quote: "A miss records under the cache's recording lock",
        rows: &[row("gc_cache_launch", "gc_cache_launch", "same cache: misses of new keys, hits of another", "cache_launches_at_once")],
        no_rows: "",
    },
    Sentence {
        quote: "Entries share the pool, so the GPU work of two launches must not overlap",
        rows: &[],
        no_rows: "an order the caller keeps (one stream, or ordered streams)",
    },
    Sentence {
        quote: "gc_cache_destroy must not race with other calls on the handle",
        rows: &[],
        no_rows: PROHIBITION,
    },
    Sentence {
        quote: "Thread safety: see the section above",
        rows: &[],
        no_rows: "refers to the cache section's sentences (their rows)",
    },
    // graphcore_ops.h.
    Sentence {
        quote: "any number of threads may launch on any streams",
        rows: &[
            row("gc_op_add", "gc_op_scale", "same stream", "ops_from_threads_on_shared_and_own_streams"),
            row("gc_op_fill", "gc_op_fill", "different streams", "ops_from_threads_on_shared_and_own_streams"),
        ],
        no_rows: "",
    },
];

/// Destroy sentences shared word for word by several handles' paragraphs
/// ("..., except gc_X_destroy, which must not race with other calls on
/// that handle") are part of the sentence that permits the rest: covered
/// by that sentence's entry. Other destroy sentences have their own.
///
/// Every sentence of every "Thread safety:" paragraph of the two headers.
fn header_sentences() -> Vec<String> {
    let mut out = Vec::new();
    for file in ["include/graphcore.h", "include/graphcore_ops.h"] {
        let text = std::fs::read_to_string(crate::support::repo().join(file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let body = comment_text(lines[i]);
            let Some(at) = body.find("Thread safety:") else {
                i += 1;
                continue;
            };
            // The paragraph: to the first empty comment line or the end of
            // the comment.
            let mut para = body[at..].to_string();
            let mut j = i + 1;
            while j < lines.len() {
                let l = lines[j].trim();
                if l.starts_with("*/") || l.starts_with("* ===") || l == "*" || !l.starts_with('*')
                {
                    break;
                }
                para.push(' ');
                para.push_str(comment_text(lines[j]).trim());
                j += 1;
            }
            out.extend(split_sentences(&normalize(&para)));
            i = j;
        }
    }
    out
}

/// A header line without its comment marks.
fn comment_text(line: &str) -> &str {
    let l = line.trim_start();
    l.strip_prefix("* ")
        .or_else(|| l.strip_prefix('*'))
        .unwrap_or(l)
}

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Splits at ". " before a capital letter or a call name.
fn split_sentences(p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    let b = p.as_bytes();
    for i in 0..b.len() {
        if b[i] == b'.' && b.get(i + 1) == Some(&b' ') {
            let next = p[i + 2..].chars().next().unwrap_or(' ');
            if next.is_ascii_uppercase() || p[i + 2..].starts_with("gc_") {
                out.push(p[start..=i].trim().to_string());
                start = i + 2;
            }
        }
    }
    if start < p.len() {
        out.push(p[start..].trim().to_string());
    }
    out
}

#[test]
fn every_thread_safety_sentence_has_a_row() {
    let sentences = header_sentences();
    assert!(
        sentences.len() >= 30,
        "{} sentences: the parser lost some",
        sentences.len()
    );
    let declared = crate::c_abi::header_functions();
    let source =
        std::fs::read_to_string(crate::support::repo().join("tests/gpu/conformance.rs")).unwrap();
    let mut problems = Vec::new();
    for s in &sentences {
        // The leading "Thread safety:" is part of the sentence; a quote may
        // include it.
        if !TABLE.iter().any(|e| s.contains(e.quote)) {
            problems.push(format!("no entry of TABLE quotes the sentence: {s:?}"));
        }
    }
    for e in TABLE {
        if !sentences.iter().any(|s| s.contains(e.quote)) {
            problems.push(format!(
                "TABLE quotes a sentence the headers do not have: {:?}",
                e.quote
            ));
        }
        if e.rows.is_empty() == e.no_rows.is_empty() {
            problems.push(format!(
                "{:?}: give rows, or say why there are none (not both)",
                e.quote
            ));
        }
        for r in e.rows {
            for call in [r.a, r.b] {
                if !declared.iter().any(|d| d == call) {
                    problems.push(format!(
                        "{:?}: {call} is not declared in the headers",
                        e.quote
                    ));
                }
            }
            if !source.contains(&format!("fn {}(", r.test)) {
                problems.push(format!("{:?}: no test {} in this file", e.quote, r.test));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let rows: usize = TABLE.iter().map(|e| e.rows.len()).sum();
    println!(
        "{} sentences, {} table entries, {rows} rows",
        sentences.len(),
        TABLE.len()
    );
    for r in TABLE.iter().flat_map(|e| e.rows) {
        println!("  {} x {} ({}): {}", r.a, r.b, r.shared, r.test);
    }
}

// ---------------------------------------------------------------------------
// Running the rows.

/// How long each pair runs: `GC_STRESS_SECS` (default 1).
fn stress() -> Duration {
    let secs = std::env::var("GC_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(1.0);
    Duration::from_secs_f64(secs.max(0.01))
}

/// Runs `a` and `b` in two threads, each in a loop (its iteration number
/// as argument) for [`stress`], under the watchdog. Returns how many times
/// each ran.
fn pair(
    row: &str,
    a: impl FnMut(usize) + Send + 'static,
    b: impl FnMut(usize) + Send + 'static,
) -> (usize, usize) {
    let counts = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let run = |mut f: Box<dyn FnMut(usize) + Send>, k: usize| {
        let counts = counts.clone();
        Box::new(move || {
            let end = Instant::now() + stress();
            let mut i = 0;
            while Instant::now() < end {
                f(i);
                i += 1;
            }
            counts[k].store(i, Ordering::Relaxed);
        }) as Box<dyn FnOnce() + Send>
    };
    race(row, vec![run(Box::new(a), 0), run(Box::new(b), 1)]);
    let n = (
        counts[0].load(Ordering::Relaxed),
        counts[1].load(Ordering::Relaxed),
    );
    assert!(n.0 > 0 && n.1 > 0, "{row}: a side never ran");
    n
}

fn op(s: &Stream, call: Result<graphcore_core::kernels::Call, graphcore_core::kernels::SizeError>) {
    // SAFETY: every buffer the tests pass is a live pool block holding the
    // elements the operation reads and writes, alive while the work runs.
    unsafe { launch_op(s, call) }.unwrap();
}

/// A pool's allocated bytes now.
fn allocated(p: &Pool) -> u64 {
    p.stats().allocated_bytes
}

/// Frees `blocks` and checks that `p` holds nothing more.
fn free_all(p: &Pool, blocks: &[u64]) {
    for &b in blocks {
        p.free(b).unwrap();
    }
    assert_eq!(allocated(p), 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn context_calls_at_once() {
    let c = ctx();
    let (c1, c2) = (c.clone(), c.clone());
    pair(
        "gc_context_synchronize x gc_context_synchronize",
        move |_| c1.synchronize().unwrap(),
        move |_| c2.synchronize().unwrap(),
    );
    let (c1, c2) = (c.clone(), c.clone());
    pair(
        "gc_stream_create x gc_pool_create",
        move |_| {
            let s = Stream::new(&c1).unwrap();
            s.synchronize().unwrap();
        },
        move |_| {
            let p = pool(&c2);
            let b = p.alloc(4096).unwrap();
            p.free(b).unwrap();
            assert_eq!(allocated(&p), 0);
        },
    );
    let (c1, c2) = (c.clone(), c.clone());
    pair(
        "gc_host_alloc x gc_context_synchronize",
        move |i| {
            let h = c1.host_alloc(4096 + i % 7 * 64).unwrap();
            c1.host_free(h).unwrap();
        },
        move |_| c2.synchronize().unwrap(),
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn work_enqueued_on_one_stream_from_threads() {
    let (c, s, p) = setup();
    let sms = c.sm_count();
    let n = 4096usize;
    let bytes = n as u64 * 4;
    let (ones, a, b, x) = (
        p.alloc(bytes).unwrap(),
        p.alloc(bytes).unwrap(),
        p.alloc(bytes).unwrap(),
        p.alloc(bytes).unwrap(),
    );
    upload(&s, ones, &vec![1.0; n]);
    for y in [a, b, x] {
        upload(&s, y, &vec![0.0; n]);
    }
    // Two threads each add ones into their own buffer on the one stream.
    let (s1, s2) = (s.clone(), s.clone());
    let (na, nb) = pair(
        "gc_op_add x gc_op_add (one stream)",
        move |_| op(&s1, ops::add(a, a, ones, n as u64, sms)),
        move |_| op(&s2, ops::add(b, b, ones, n as u64, sms)),
    );
    s.synchronize().unwrap();
    assert!(download(&s, a, n).iter().all(|&v| v == na as f32));
    assert!(download(&s, b, n).iter().all(|&v| v == nb as f32));
    // A memset and an exec adding ones into `x` on the one stream: the
    // exec's launches all count (the memset writes another buffer).
    begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
    op(&s, ops::add(x, x, ones, n as u64, sms));
    let e = Exec::new(&end_capture(&s).unwrap(), 0).unwrap();
    let (s1, s2) = (s.clone(), s.clone());
    let (_, launches) = pair(
        "gc_memset_async x gc_exec_launch (one stream)",
        move |i| {
            // SAFETY: `a` is a live block of `bytes` bytes.
            unsafe { graphcore_core::set_async(&s1, a, (i % 200) as u8, bytes as usize) }.unwrap()
        },
        move |_| e.launch(&s2).unwrap(),
    );
    s.synchronize().unwrap();
    assert!(download(&s, x, n).iter().all(|&v| v == launches as f32));
    // Copies racing synchronizes of the stream.
    let (s1, s2) = (s.clone(), s.clone());
    pair(
        "gc_memcpy_async x gc_stream_synchronize (one stream)",
        move |_| {
            // SAFETY: both are live blocks of `bytes` bytes.
            unsafe { graphcore_core::copy_async(&s1, b, ones, bytes as usize) }.unwrap()
        },
        move |_| s2.synchronize().unwrap(),
    );
    s.synchronize().unwrap();
    assert!(download(&s, b, n).iter().all(|&v| v == 1.0));
    free_all(&p, &[ones, a, b, x]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn event_calls_at_once() {
    let (c, s, _p) = setup();
    let ev = Event::new(&c, false).unwrap();
    let s2 = Stream::new(&c).unwrap();
    let (e1, e2, sa, sb) = (ev.clone(), ev.clone(), s.clone(), s2.clone());
    pair(
        "gc_event_record x gc_event_record (two streams)",
        move |_| sa.record_event(&e1, false).unwrap(),
        move |_| sb.record_event(&e2, false).unwrap(),
    );
    let (e1, e2, sa) = (ev.clone(), ev.clone(), s.clone());
    pair(
        "gc_event_record x gc_event_synchronize",
        move |_| sa.record_event(&e1, false).unwrap(),
        move |_| e2.synchronize().unwrap(),
    );
    let (e1, e2, sb) = (ev.clone(), ev.clone(), s2.clone());
    pair(
        "gc_event_query x gc_stream_wait_event",
        move |_| {
            e1.is_done().unwrap();
        },
        move |_| sb.wait_event(&e2, false).unwrap(),
    );
    s.synchronize().unwrap();
    s2.synchronize().unwrap();
    assert!(ev.is_done().unwrap());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pool_calls_at_once() {
    let (c, _s, p) = setup();
    let base = p.stats();
    assert_eq!(base.allocated_bytes, 0);
    let (p1, p2) = (p.clone(), p.clone());
    pair(
        "gc_pool_alloc x gc_pool_alloc",
        move |i| {
            let b = p1.alloc(256 << (i % 12)).unwrap();
            p1.free(b).unwrap();
        },
        move |i| {
            let b = p2.alloc(4096 + (i % 5) as u64 * 256).unwrap();
            p2.free(b).unwrap();
        },
    );
    assert_eq!(allocated(&p), 0);
    // Frees against statistics: each block's address is unique while live.
    let (p1, p2) = (p.clone(), p.clone());
    pair(
        "gc_pool_free x gc_pool_stats",
        move |_| {
            let blocks: Vec<u64> = (0..16).map(|k| p1.alloc(512 * (k + 1)).unwrap()).collect();
            let mut sorted = blocks.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(
                sorted.len(),
                blocks.len(),
                "two live blocks share an address"
            );
            for b in blocks {
                p1.free(b).unwrap();
            }
        },
        move |_| {
            let st = p2.stats();
            assert!(st.allocated_bytes <= st.reserved_bytes);
        },
    );
    assert_eq!(allocated(&p), 0);
    // Allocations (some growing the pool by pages) against trims.
    let (p1, p2) = (p.clone(), p.clone());
    pair(
        "gc_pool_alloc x gc_pool_trim",
        move |i| {
            let b = p1.alloc(if i % 3 == 0 { 5 << 20 } else { 4096 }).unwrap();
            p1.free(b).unwrap();
        },
        move |_| p2.trim().unwrap(),
    );
    p.trim().unwrap();
    assert_eq!(allocated(&p), 0);
    assert_eq!(p.stats().reserved_bytes, base.reserved_bytes);
    // Peer access needs a second device.
    if graphcore_core::device_count().unwrap() >= 2 {
        let peer = Context::new(1).unwrap();
        let (p1, p2) = (p.clone(), p.clone());
        pair(
            "gc_pool_alloc x gc_pool_enable_peer_access",
            move |i| {
                let b = p1.alloc(if i % 2 == 0 { 3 << 20 } else { 256 }).unwrap();
                p1.free(b).unwrap();
            },
            move |_| {
                let r = p2.enable_peer_access(&peer);
                assert!(
                    r.is_ok() || r.as_ref().unwrap_err().kind() == ErrorKind::NotSupported,
                    "{r:?}"
                );
            },
        );
    } else {
        eprintln!("gc_pool_alloc x gc_pool_enable_peer_access: one device, skipped");
    }
    assert_eq!(allocated(&p), 0);
    drop(c);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_memory_and_copies_at_once() {
    let (c, s, p) = setup();
    let s2 = Stream::new(&c).unwrap();
    let (c1, c2) = (c.clone(), c.clone());
    pair(
        "gc_host_alloc x gc_host_free",
        move |i| {
            let h = c1.host_alloc(1024 + i % 3 * 4096).unwrap();
            c1.host_free(h).unwrap();
        },
        move |_| {
            let h = c2.host_alloc(8192).unwrap();
            c2.host_free(h).unwrap();
        },
    );
    let n = 1 << 16;
    let (x, y, z) = (
        p.alloc(n as u64 * 4).unwrap(),
        p.alloc(n as u64 * 4).unwrap(),
        p.alloc(n as u64 * 4).unwrap(),
    );
    upload(&s, x, &vec![3.0; n]);
    let (sa, sb) = (s.clone(), s2.clone());
    pair(
        "gc_memcpy_async x gc_memset_async (two streams)",
        move |_| {
            // SAFETY: live blocks of n floats.
            unsafe { graphcore_core::copy_async(&sa, y, x, n * 4) }.unwrap()
        },
        move |i| {
            // SAFETY: a live block of n floats.
            unsafe { graphcore_core::set_async(&sb, z, (i % 2) as u8, n * 4) }.unwrap()
        },
    );
    s.synchronize().unwrap();
    s2.synchronize().unwrap();
    assert!(download(&s, y, n).iter().all(|&v| v == 3.0));
    free_all(&p, &[x, y, z]);
}

/// Launches add_one (`f`) over the `n` floats at `y` on `s`.
fn launch_add_one(f: &graphcore_core::Function, s: &Stream, y: u64, n: usize) {
    let mut l = AddOneLaunch::new(y, n);
    let mut a = l.args();
    // SAFETY: add_one(u64, u32) over a live block of n floats (every `y`
    // the tests pass).
    unsafe { f.launch(s, &l.cfg, a.as_mut_ptr()) }.unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn module_and_function_calls_at_once() {
    let (c, s, p) = setup();
    let m = Module::load(&c, USER_PTX.as_bytes()).unwrap();
    let (m1, m2) = (m.clone(), m.clone());
    pair(
        "gc_module_function x gc_module_function",
        move |_| assert_eq!(m1.function("add_one").unwrap().name(), "add_one"),
        move |_| assert_eq!(m2.function("add_one").unwrap().name(), "add_one"),
    );
    let f = m.function("add_one").unwrap();
    let n = 1024usize;
    let (y, z) = (
        p.alloc(n as u64 * 4).unwrap(),
        p.alloc(n as u64 * 4).unwrap(),
    );
    upload(&s, y, &vec![0.0; n]);
    upload(&s, z, &vec![0.0; n]);
    let (f1, f2, s1, c2) = (f.clone(), f.clone(), s.clone(), c.clone());
    let added = Arc::new(AtomicUsize::new(0));
    let added2 = added.clone();
    let (launched, _) = pair(
        "gc_launch x gc_graph_add_kernel (one function)",
        move |_| launch_add_one(&f1, &s1, y, n),
        move |_| {
            let g = Graph::new(&c2).unwrap();
            let mut l = AddOneLaunch::new(z, n);
            let mut a = l.args();
            // SAFETY: add_one(u64, u32) over a live block of n floats.
            unsafe { g.add_kernel(&f2, &l.cfg, a.as_mut_ptr(), &[]) }.unwrap();
            assert_eq!(g.node_count().unwrap(), 1);
            added2.fetch_add(1, Ordering::Relaxed);
        },
    );
    s.synchronize().unwrap();
    assert!(download(&s, y, n).iter().all(|&v| v == launched as f32));
    assert!(added.load(Ordering::Relaxed) > 0);
    let (f1, f2, s1, s2) = (f.clone(), f.clone(), s.clone(), Stream::new(&c).unwrap());
    let s2c = s2.clone();
    let (a, b) = pair(
        "gc_launch x gc_launch (one function)",
        move |_| launch_add_one(&f1, &s1, y, n),
        move |_| launch_add_one(&f2, &s2c, z, n),
    );
    s.synchronize().unwrap();
    s2.synchronize().unwrap();
    assert!(download(&s, y, n)
        .iter()
        .all(|&v| v == (launched + a) as f32));
    assert!(download(&s, z, n).iter().all(|&v| v == b as f32));
    free_all(&p, &[y, z]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn captures_on_two_streams_at_once() {
    let c = ctx();
    let p = pool(&c);
    let sms = c.sm_count();
    let side = |value: f32| {
        let (c, p) = (c.clone(), p.clone());
        move |i: usize| {
            let s = Stream::new(&c).unwrap();
            let n = 1000 + i % 64;
            begin_capture(&s, Some(&p), CaptureMode::ThreadLocal).unwrap();
            let y = p.alloc(n as u64 * 4).unwrap();
            op(&s, ops::fill(y, n as u64, value, sms));
            let scratch = p.alloc(4096).unwrap();
            op(&s, ops::fill(scratch, 1024, 0.0, sms));
            p.free(scratch).unwrap();
            let g = end_capture(&s).unwrap();
            let e = Exec::new(&g, 0).unwrap();
            e.launch(&s).unwrap();
            assert!(download(&s, y, n).iter().all(|&v| v == value));
            drop(e);
            drop(g);
            p.free(y).unwrap();
        }
    };
    pair(
        "gc_capture_begin x gc_capture_begin (two streams, one pool)",
        side(1.5),
        side(-2.0),
    );
    c.synchronize().unwrap();
    assert_eq!(allocated(&p), 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn synchronize_and_trim_refuse_while_a_capture_is_open() {
    let (c, s, p) = setup();
    let sms = c.sm_count();
    let refused = |r: graphcore_core::Result<()>| match r {
        Ok(()) => false,
        Err(e) if e.kind() == ErrorKind::InvalidState => true,
        Err(e) => panic!("neither done nor refused: {e}"),
    };
    for trim in [false, true] {
        let (s1, p1, c2, p2) = (s.clone(), p.clone(), c.clone(), p.clone());
        let refusals = Arc::new(AtomicU64::new(0));
        let r2 = refusals.clone();
        pair(
            if trim {
                "gc_capture_begin x gc_pool_trim"
            } else {
                "gc_capture_begin x gc_context_synchronize"
            },
            move |_| {
                begin_capture(&s1, Some(&p1), CaptureMode::ThreadLocal).unwrap();
                let y = p1.alloc(1 << 21).unwrap();
                op(&s1, ops::fill(y, 1024, 1.0, sms));
                p1.free(y).unwrap();
                // The capture survives whatever the other thread does.
                let g = end_capture(&s1).unwrap();
                Exec::new(&g, 0).unwrap().launch(&s1).unwrap();
                s1.synchronize().unwrap();
            },
            move |_| {
                let r = if trim { p2.trim() } else { c2.synchronize() };
                if refused(r) {
                    r2.fetch_add(1, Ordering::Relaxed);
                }
            },
        );
        eprintln!("trim={trim}: {} refusals", refusals.load(Ordering::Relaxed));
    }
    c.synchronize().unwrap();
    assert_eq!(allocated(&p), 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn graph_calls_at_once() {
    let (c, s, p) = setup();
    let sms = c.sm_count();
    let n = 2048usize;
    let y = p.alloc(n as u64 * 4).unwrap();
    let scratch = p.alloc(4096).unwrap();
    // Building calls on one graph from two threads: all land (the order is
    // the caller's, so only the count is checked).
    let g = Graph::new(&c).unwrap();
    let (g1, g2) = (g.clone(), g.clone());
    let (a, b) = pair(
        "gc_graph_add_empty x gc_graph_add_memset (one graph)",
        move |_| {
            g1.add_empty(&[]).unwrap();
        },
        move |_| {
            // SAFETY: `scratch` is a live 4096-byte block for the test.
            unsafe { g2.add_memset(scratch, 0, 256, &[]) }.unwrap();
        },
    );
    assert_eq!(g.node_count().unwrap(), a + b);
    drop(g);
    // Two graphs built at once (one function, one graph each).
    let f = add_one(&c);
    let build = |c: &Context, f: &graphcore_core::Function| {
        let (c, f) = (c.clone(), f.clone());
        move |i: usize| {
            let g = Graph::new(&c).unwrap();
            let mut prev = Vec::new();
            for _ in 0..1 + i % 4 {
                let mut l = AddOneLaunch::new(scratch, 1024);
                let mut a = l.args();
                // SAFETY: add_one(u64, u32) over a live block of 1024 floats.
                prev = vec![unsafe { g.add_kernel(&f, &l.cfg, a.as_mut_ptr(), &prev) }.unwrap()];
            }
            assert_eq!(g.node_count().unwrap(), 1 + i % 4);
        }
    };
    pair(
        "gc_graph_add_kernel x gc_graph_add_kernel (two graphs)",
        build(&c, &f),
        build(&c, &f),
    );
    let src = {
        begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
        op(&s, ops::fill(y, n as u64, 4.0, sms));
        op(&s, ops::scale(y, y, n as u64, 0.5, sms));
        end_capture(&s).unwrap()
    };
    let (g1, g2, c2) = (src.clone(), src.clone(), c.clone());
    pair(
        "gc_graph_instantiate x gc_graph_add_child",
        move |_| {
            Exec::new(&g1, 0).unwrap();
        },
        move |_| {
            let parent = Graph::new(&c2).unwrap();
            parent.add_child(&g2, &[]).unwrap();
            Exec::new(&parent, 0).unwrap();
        },
    );
    // Reading calls on one graph.
    let (g1, g2) = (src.clone(), src.clone());
    pair(
        "gc_graph_node_count x gc_graph_write_dot (one graph)",
        move |_| assert_eq!(g1.node_count().unwrap(), 2),
        move |_| assert!(g2.to_dot("g").unwrap().contains("digraph")),
    );
    let (g1, g2) = (src.clone(), src.clone());
    pair(
        "gc_graph_instantiate x gc_graph_instantiate (one graph)",
        move |_| {
            Exec::new(&g1, 0).unwrap();
        },
        move |i| {
            let flags = if i % 2 == 0 {
                0
            } else {
                graphcore_core::instantiate_flags::FUSE_ELEMENTWISE
            };
            Exec::new(&g2, flags).unwrap();
        },
    );
    let (g1, g2, s1) = (src.clone(), src.clone(), s.clone());
    pair(
        "gc_graph_instantiate x gc_graph_write_dot (one graph)",
        move |_| {
            let e = Exec::new(&g1, 0).unwrap();
            e.launch(&s1).unwrap();
        },
        move |_| assert!(g2.to_dot("g").unwrap().contains("digraph")),
    );
    s.synchronize().unwrap();
    assert!(download(&s, y, n).iter().all(|&v| v == 2.0));
    drop(src);
    c.synchronize().unwrap();
    p.free(y).unwrap();
    p.free(scratch).unwrap();
    assert_eq!(allocated(&p), 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn calls_on_a_body_and_its_holder_during_a_capture_into_it() {
    let (c, _s, p) = setup();
    if graphcore_core::driver_version().unwrap() < 12030 {
        eprintln!("conditional nodes need CUDA 12.3: skipped");
        return;
    }
    let sms = c.sm_count();
    let out = p.alloc(4096).unwrap();
    let holder_and_body = |c: &Context| {
        let g = Graph::new(c).unwrap();
        let h = g.conditional_handle(1, true).unwrap();
        let (_, bodies) = g.add_conditional(CondType::If, h, 1, &[]).unwrap();
        (g, bodies.into_iter().next().unwrap())
    };
    // A new holder and body each round, shared through `slot` while a
    // capture into the body is open: the other thread instantiates the
    // holder or counts the body's nodes, each done (the capture ended) or
    // refused with GC_ERROR_INVALID_STATE (it is open).
    let slot: Arc<std::sync::Mutex<Option<(Graph, Graph)>>> = Arc::default();
    let refused_or_ok = |r: graphcore_core::Result<()>| {
        if let Err(e) = r {
            assert_eq!(e.kind(), ErrorKind::InvalidState, "{e}");
        }
    };
    let (slot1, slot2, c1) = (slot.clone(), slot.clone(), c.clone());
    pair(
        "gc_capture_begin_into x gc_graph_instantiate / gc_graph_node_count",
        move |_| {
            let (g, body) = holder_and_body(&c1);
            let s = Stream::new(&c1).unwrap();
            begin_capture_into(&s, &body, None, CaptureMode::ThreadLocal).unwrap();
            // Shared once the capture is open: the other thread's calls
            // meet it open, or the body filled (one node) after its end.
            *slot1.lock().unwrap() = Some((g, body));
            op(&s, ops::fill(out, 1, 9.0, sms));
            end_capture(&s).unwrap();
        },
        move |i| {
            let Some((g, body)) = slot2.lock().unwrap().clone() else {
                return;
            };
            if i % 2 == 0 {
                refused_or_ok(Exec::new(&g, 0).map(drop));
            } else {
                refused_or_ok(body.node_count().map(drop));
            }
        },
    );
    *slot.lock().unwrap() = None;
    // The holder's handle destroyed while captures into its body come and
    // go: a capture keeps it to its end; then the body refuses.
    let c1 = c.clone();
    let (handles_tx, handles_rx) = std::sync::mpsc::sync_channel::<Graph>(4);
    let handles_rx = std::sync::Mutex::new(handles_rx);
    pair(
        "gc_capture_begin_into x gc_graph_destroy (the holder)",
        move |_| {
            let (g, body) = holder_and_body(&c1);
            let s = Stream::new(&c1).unwrap();
            begin_capture_into(&s, &body, None, CaptureMode::ThreadLocal).unwrap();
            let _ = handles_tx.try_send(g);
            op(&s, ops::fill(out, 1, 9.0, sms));
            end_capture(&s).unwrap();
            refused_or_ok(body.node_count().map(drop));
        },
        move |_| {
            if let Ok(g) = handles_rx
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_millis(10))
            {
                drop(g);
            }
        },
    );
    c.synchronize().unwrap();
    p.free(out).unwrap();
    assert_eq!(allocated(&p), 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exec_launches_at_once() {
    let (c, s, p) = setup();
    let sms = c.sm_count();
    let n = 256usize;
    let bytes = n as u64 * 4;
    let ones = p.alloc(bytes).unwrap();
    upload(&s, ones, &vec![1.0; n]);
    let home = p.alloc(bytes).unwrap();
    upload(&s, home, &vec![0.0; n]);
    begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
    op(&s, ops::add(home, home, ones, n as u64, sms));
    let g = end_capture(&s).unwrap();
    // Without arguments: plain launches from two threads all count.
    let plain = Exec::new(&g, 0).unwrap();
    let (e1, e2, s1, s2) = (
        plain.clone(),
        plain.clone(),
        s.clone(),
        Stream::new(&c).unwrap(),
    );
    let s2c = s2.clone();
    let (a, b) = pair(
        "gc_exec_launch x gc_exec_launch (one exec)",
        move |_| e1.launch(&s1).unwrap(),
        move |_| e2.launch(&s2c).unwrap(),
    );
    s.synchronize().unwrap();
    s2.synchronize().unwrap();
    assert!(download(&s, home, n).iter().all(|&v| v == (a + b) as f32));
    // With `home` declared: bound launches count in their own buffers,
    // plain ones in the last complete binding's.
    let g2 = g.duplicate().unwrap();
    assert_eq!(g2.declare_arg(home, n * 4, false).unwrap(), 0);
    let e = Exec::new(&g2, 0).unwrap();
    let bind = |ptr| Binding {
        index: 0,
        ptr,
        bytes: 0,
    };
    let (x, y) = (p.alloc(bytes).unwrap(), p.alloc(bytes).unwrap());
    upload(&s, x, &vec![0.0; n]);
    upload(&s, y, &vec![0.0; n]);
    let (e1, e2, s1, s2c) = (e.clone(), e.clone(), s.clone(), s2.clone());
    let (a, b) = pair(
        "gc_exec_launch_with x gc_exec_launch_with (one exec, own bindings)",
        move |_| e1.launch_with(&s1, &[bind(x)]).unwrap(),
        move |_| e2.launch_with(&s2c, &[bind(y)]).unwrap(),
    );
    s.synchronize().unwrap();
    s2.synchronize().unwrap();
    assert!(
        download(&s, x, n).iter().all(|&v| v == a as f32),
        "x: another thread's bindings ran"
    );
    assert!(
        download(&s, y, n).iter().all(|&v| v == b as f32),
        "y: another thread's bindings ran"
    );
    // Plain launches against bound ones: each plain launch counts in x or
    // y (whichever set was complete), each bound one in x.
    upload(&s, x, &vec![0.0; n]);
    upload(&s, y, &vec![0.0; n]);
    e.launch_with(&s, &[bind(y)]).unwrap();
    let (e1, e2, s1, s2c) = (e.clone(), e.clone(), s.clone(), s2.clone());
    let (plain_n, bound_n) = pair(
        "gc_exec_launch x gc_exec_launch_with (one exec)",
        move |_| e1.launch(&s1).unwrap(),
        move |_| e2.launch_with(&s2c, &[bind(x)]).unwrap(),
    );
    s.synchronize().unwrap();
    s2.synchronize().unwrap();
    let (gx, gy) = (download(&s, x, n), download(&s, y, n));
    assert!(
        gx.iter().all(|&v| v == gx[0]) && gy.iter().all(|&v| v == gy[0]),
        "a launch mixed bindings"
    );
    assert_eq!(
        (gx[0] + gy[0]) as usize,
        plain_n + bound_n + 1,
        "every launch counted once, in one whole binding"
    );
    assert!(gx[0] as usize >= bound_n);
    // Listing the uses while bound launches run: the same uses each time,
    // two parameters of node 0 (the add's output and first input are both
    // `home`).
    let (e1, e2, s2c) = (e.clone(), e.clone(), s2.clone());
    pair(
        "gc_exec_arg_uses x gc_exec_launch_with (one exec)",
        move |_| {
            let uses = e1.arg_use_list(0).unwrap();
            assert_eq!(uses.len(), 2, "{uses:?}");
            assert!(uses.iter().all(|u| u.node == 0), "{uses:?}");
        },
        move |_| e2.launch_with(&s2c, &[bind(x)]).unwrap(),
    );
    s2.synchronize().unwrap();
    drop((e, plain));
    for b in [ones, home, x, y] {
        p.free(b).unwrap();
    }
    c.synchronize().unwrap();
    assert_eq!(allocated(&p), 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ops_from_threads_on_shared_and_own_streams() {
    let (c, s, p) = setup();
    let sms = c.sm_count();
    let n = 8192usize;
    let bytes = n as u64 * 4;
    let (ones, a, b) = (
        p.alloc(bytes).unwrap(),
        p.alloc(bytes).unwrap(),
        p.alloc(bytes).unwrap(),
    );
    upload(&s, ones, &vec![1.0; n]);
    upload(&s, a, &vec![0.0; n]);
    upload(&s, b, &vec![1.0; n]);
    let (s1, s2) = (s.clone(), s.clone());
    let (na, _) = pair(
        "gc_op_add x gc_op_scale (one stream)",
        move |_| op(&s1, ops::add(a, a, ones, n as u64, sms)),
        move |_| op(&s2, ops::scale(b, b, n as u64, 1.0, sms)),
    );
    s.synchronize().unwrap();
    assert!(download(&s, a, n).iter().all(|&v| v == na as f32));
    assert!(download(&s, b, n).iter().all(|&v| v == 1.0));
    let (c1, c2) = (c.clone(), c.clone());
    pair(
        "gc_op_fill x gc_op_fill (own streams)",
        move |i| {
            let s = Stream::new(&c1).unwrap();
            op(&s, ops::fill(a, n as u64, i as f32, sms));
            s.synchronize().unwrap();
            assert_eq!(download(&s, a, 4), vec![i as f32; 4]);
        },
        move |i| {
            let s = Stream::new(&c2).unwrap();
            op(&s, ops::fill(b, n as u64, -(i as f32), sms));
            s.synchronize().unwrap();
            assert_eq!(download(&s, b, 4), vec![-(i as f32); 4]);
        },
    );
    free_all(&p, &[ones, a, b]);
}

// ---------------------------------------------------------------------------
// Through the C ABI.

/// The C ABI of the library under test, loaded with `dlopen`.
mod c {
    use std::ffi::{c_char, c_int, c_void};
    use std::sync::OnceLock;

    pub type Status = c_int;
    pub type Handle = *mut c_void;
    pub type RecordFn = Option<unsafe extern "C" fn(Handle, u32, *mut c_void) -> Status>;
    pub type CacheRecordFn =
        Option<unsafe extern "C" fn(Handle, *const c_void, usize, *mut c_void) -> Status>;

    /// gc_pool_statistics.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct PoolStats {
        pub struct_size: usize,
        pub allocated_bytes: u64,
        pub reserved_bytes: u64,
        pub peak_allocated_bytes: u64,
        pub peak_reserved_bytes: u64,
        pub segment_count: u64,
        pub block_count: u64,
        pub free_block_count: u64,
        pub alloc_count: u64,
        pub free_count: u64,
    }

    /// gc_runner_bucket.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct RunnerBucket {
        pub batch: u32,
        pub node_count: u32,
        pub capture_us: f64,
        pub pool_bytes: u64,
    }

    /// gc_runner_statistics.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct RunnerStats {
        pub struct_size: usize,
        pub bucket_count: u32,
        pub buckets: [RunnerBucket; 16],
        pub pool: PoolStats,
        pub eager_runs: u64,
    }

    macro_rules! api {
        ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
            /// The exports the tests call.
            #[allow(non_snake_case)]
            pub struct Api { $(pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)* }

            /// The library, loaded once.
            pub fn api() -> &'static Api {
                static API: OnceLock<Api> = OnceLock::new();
                API.get_or_init(|| {
                    let path = crate::support::lib_dir().join("libgraphcore.so");
                    let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
                    // SAFETY: a NUL-terminated path; the handle is kept for
                    // the process's life.
                    let lib = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW) };
                    assert!(!lib.is_null(), "dlopen {}", path.display());
                    Api {
                        $($name: {
                            let name = concat!(stringify!($name), "\0");
                            // SAFETY: a NUL-terminated symbol name.
                            let f = unsafe { libc::dlsym(lib, name.as_ptr() as *const c_char) };
                            assert!(!f.is_null(), "{} is not exported", stringify!($name));
                            // SAFETY: the export's C signature (include/graphcore.h)
                            // is the one spelled here.
                            unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(f) }
                        },)*
                    }
                })
            }
        };
    }

    api! {
        gc_status_name: fn(c_int) -> *const c_char;
        gc_last_error: fn() -> *const c_char;
        gc_context_create: fn(c_int, *mut Handle) -> Status;
        gc_context_destroy: fn(Handle) -> Status;
        gc_stream_create: fn(Handle, *mut Handle) -> Status;
        gc_stream_synchronize: fn(Handle) -> Status;
        gc_stream_destroy: fn(Handle) -> Status;
        gc_pool_create: fn(Handle, *const c_void, *mut Handle) -> Status;
        gc_pool_alloc: fn(Handle, usize, *mut *mut c_void) -> Status;
        gc_pool_free: fn(Handle, *mut c_void) -> Status;
        gc_pool_stats: fn(Handle, *mut PoolStats) -> Status;
        gc_pool_destroy: fn(Handle) -> Status;
        gc_host_alloc: fn(Handle, usize, *mut *mut c_void) -> Status;
        gc_host_free: fn(Handle, *mut c_void) -> Status;
        gc_memcpy_async: fn(Handle, *mut c_void, *const c_void, usize) -> Status;
        gc_allocator_set_pool: fn(c_int, Handle) -> Status;
        gc_torch_alloc: fn(usize, c_int, *mut c_void) -> *mut c_void;
        gc_torch_free: fn(*mut c_void, usize, c_int, *mut c_void);
        gc_engine_alloc: fn(*mut c_void, usize, c_int, *mut c_void) -> *mut c_void;
        gc_engine_free: fn(*mut c_void, *mut c_void, usize, c_int, *mut c_void);
        gc_op_fill: fn(Handle, *mut f32, u64, f32) -> Status;
        gc_runner_create: fn(Handle, Handle, *mut Handle) -> Status;
        gc_runner_capture: fn(Handle, *const u32, usize, RecordFn, *mut c_void, u32) -> Status;
        gc_runner_replay: fn(Handle, u32, Handle, *mut u32) -> Status;
        gc_runner_stats: fn(Handle, *mut RunnerStats) -> Status;
        gc_runner_destroy: fn(Handle) -> Status;
        gc_cache_create: fn(Handle, *const c_void, *mut Handle) -> Status;
        gc_cache_launch: fn(Handle, *const c_void, usize, Handle, *const c_void, usize, CacheRecordFn, *mut c_void, *mut c_int) -> Status;
        gc_cache_destroy: fn(Handle) -> Status;
    }

    /// A C string of the library's as a Rust string.
    pub fn text(p: *const c_char) -> String {
        assert!(!p.is_null());
        // SAFETY: the library returns NUL-terminated strings it keeps.
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    }

    /// Panics with the last error unless `s` is GC_SUCCESS.
    pub fn ok(s: Status, what: &str) {
        if s != 0 {
            // SAFETY: plain calls of the library.
            let (name, msg) = unsafe {
                (
                    text((api().gc_status_name)(s)),
                    text((api().gc_last_error)()),
                )
            };
            panic!("{what}: {name}: {msg}");
        }
    }

    /// A context on device 0.
    pub fn create_context() -> Handle {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: an out-pointer to a local.
        ok(
            unsafe { (api().gc_context_create)(0, &mut ctx) },
            "gc_context_create",
        );
        ctx
    }

    /// A pool of `ctx` with the default options.
    pub fn create_pool(ctx: Handle) -> Handle {
        let mut pool = std::ptr::null_mut();
        // SAFETY: a live context and an out-pointer to a local.
        ok(
            unsafe { (api().gc_pool_create)(ctx, std::ptr::null(), &mut pool) },
            "gc_pool_create",
        );
        pool
    }

    /// A pool's allocated bytes (gc_pool_stats).
    pub fn allocated(pool: Handle) -> u64 {
        let mut st = PoolStats {
            struct_size: std::mem::size_of::<PoolStats>(),
            ..Default::default()
        };
        // SAFETY: a live pool; `st` is a gc_pool_statistics.
        ok(
            unsafe { (api().gc_pool_stats)(pool, &mut st) },
            "gc_pool_stats",
        );
        st.allocated_bytes
    }

    /// Checks that `pool` holds no block (`why` otherwise), then destroys
    /// it.
    pub fn destroy_empty_pool(pool: Handle, why: &str) {
        assert_eq!(allocated(pool), 0, "{why}");
        // SAFETY: a live pool, destroyed once.
        ok(unsafe { (api().gc_pool_destroy)(pool) }, "gc_pool_destroy");
    }

    /// Destroys `ctx` (after everything made from it).
    pub fn destroy_context(ctx: Handle) {
        // SAFETY: a live context, destroyed once.
        ok(
            unsafe { (api().gc_context_destroy)(ctx) },
            "gc_context_destroy",
        );
    }

    /// What the C-ABI tests share: a context on device 0, a pool of it, a
    /// block of the pool and a stream.
    pub struct World {
        /// The context.
        pub ctx: Handle,
        /// Its pool.
        pub pool: Handle,
        /// A stream of the context.
        pub stream: Handle,
        /// A block of the pool.
        pub block: *mut c_void,
    }

    impl World {
        /// A world whose block holds `bytes` bytes.
        pub fn new(bytes: usize) -> World {
            let ctx = create_context();
            let pool = create_pool(ctx);
            let (mut block, mut stream) = (std::ptr::null_mut(), std::ptr::null_mut());
            // SAFETY: live handles and out-pointers to locals.
            unsafe {
                ok(
                    (api().gc_pool_alloc)(pool, bytes, &mut block),
                    "gc_pool_alloc",
                );
                ok(
                    (api().gc_stream_create)(ctx, &mut stream),
                    "gc_stream_create",
                );
            }
            World {
                ctx,
                pool,
                stream,
                block,
            }
        }

        /// The block's first `n` floats, copied on the stream through pinned
        /// host memory.
        pub fn read_floats(&self, n: usize) -> Vec<f32> {
            let mut host: *mut c_void = std::ptr::null_mut();
            // SAFETY: live handles; host holds n floats until it is freed,
            // after they are copied out.
            unsafe {
                ok(
                    (api().gc_host_alloc)(self.ctx, n * 4, &mut host),
                    "gc_host_alloc",
                );
                ok(
                    (api().gc_memcpy_async)(self.stream, host, self.block, n * 4),
                    "gc_memcpy_async",
                );
                ok(
                    (api().gc_stream_synchronize)(self.stream),
                    "gc_stream_synchronize",
                );
                let v = std::slice::from_raw_parts(host as *const f32, n).to_vec();
                ok((api().gc_host_free)(self.ctx, host), "gc_host_free");
                v
            }
        }

        /// Destroys the stream, frees the block, checks that the pool holds
        /// nothing more (`why` otherwise) and destroys the pool and the
        /// context.
        pub fn destroy(self, why: &str) {
            // SAFETY: live handles, each released once.
            unsafe {
                ok((api().gc_stream_destroy)(self.stream), "gc_stream_destroy");
                ok((api().gc_pool_free)(self.pool, self.block), "gc_pool_free");
            }
            destroy_empty_pool(self.pool, why);
            destroy_context(self.ctx);
        }
    }

    /// A pointer handle that may cross threads (the C ABI allows it).
    #[derive(Clone, Copy)]
    pub struct H(pub Handle);

    impl H {
        /// The handle (a method: a closure calling it captures the whole
        /// `H`, which may cross threads).
        pub fn get(self) -> Handle {
            self.0
        }
    }
    // SAFETY: graphcore's handles are usable from any thread (the header's
    // thread-safety sentences, which these tests exercise).
    unsafe impl Send for H {}
    // SAFETY: as above.
    unsafe impl Sync for H {}
}

/// Runs without a GPU: the C calls fail the same way with or without a
/// driver, and each thread's gc_last_error names its own call.
#[test]
fn last_errors_are_per_thread() {
    let api = c::api();
    let mine = |name: &'static str, call: fn() -> c::Status| {
        move |_| {
            let s = call();
            assert_ne!(s, 0);
            // SAFETY: plain calls of the library.
            let (status, msg) = unsafe {
                (
                    c::text((api.gc_status_name)(s)),
                    c::text((api.gc_last_error)()),
                )
            };
            assert!(status.starts_with("GC_ERROR_"), "{status}");
            assert!(
                msg.contains(name),
                "this thread's last error names {msg:?}, not {name}"
            );
        }
    };
    pair(
        "gc_last_error x gc_last_error / gc_status_name",
        // SAFETY: NULL handles, which the library refuses.
        mine("gc_pool_stats", || unsafe {
            (c::api().gc_pool_stats)(std::ptr::null_mut(), std::ptr::null_mut())
        }),
        // SAFETY: as above.
        mine("gc_stream_synchronize", || unsafe {
            (c::api().gc_stream_synchronize)(std::ptr::null_mut())
        }),
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn allocator_exports_at_once() {
    let api = c::api();
    let ctx = c::create_context();
    let (p1, p2) = (c::create_pool(ctx), c::create_pool(ctx));
    // SAFETY: a live pool.
    c::ok(
        unsafe { (api.gc_allocator_set_pool)(0, p1) },
        "gc_allocator_set_pool",
    );
    let (h1, h2) = (c::H(p1), c::H(p2));
    let torch = move |i: usize| {
        let bytes = 256 + (i % 9) * 1000;
        // SAFETY: a size, device 0 and the NULL stream.
        let ptr = unsafe { (c::api().gc_torch_alloc)(bytes, 0, std::ptr::null_mut()) };
        assert!(!ptr.is_null());
        // SAFETY: a block gc_torch_alloc just returned.
        unsafe { (c::api().gc_torch_free)(ptr, bytes, 0, std::ptr::null_mut()) };
    };
    pair("gc_torch_alloc x gc_torch_free", torch, torch);
    let engine = move |i: usize| {
        let bytes = 512 + (i % 5) * 4096;
        // SAFETY: the user pointer is a live pool handle.
        let ptr = unsafe { (c::api().gc_engine_alloc)(h2.get(), bytes, 0, std::ptr::null_mut()) };
        assert!(!ptr.is_null());
        // SAFETY: a block of that pool.
        unsafe { (c::api().gc_engine_free)(h2.get(), ptr, bytes, 0, std::ptr::null_mut()) };
    };
    pair("gc_engine_alloc x gc_engine_free", engine, engine);
    pair(
        "gc_allocator_set_pool x gc_torch_alloc / gc_torch_free",
        move |i| {
            let p = if i % 2 == 0 { h1.get() } else { h2.get() };
            // SAFETY: a live pool handle.
            c::ok(
                unsafe { (c::api().gc_allocator_set_pool)(0, p) },
                "gc_allocator_set_pool",
            );
        },
        torch,
    );
    // SAFETY: NULL unsets the allocator's pool.
    c::ok(
        unsafe { (api.gc_allocator_set_pool)(0, std::ptr::null_mut()) },
        "unset",
    );
    for p in [p1, p2] {
        c::destroy_empty_pool(p, "every block went back to the pool it came from");
    }
    c::destroy_context(ctx);
}

/// gc_runner_capture's record function: fills the buffer `user_data`
/// points to (a u64 address, 1024 floats) with the batch size.
unsafe extern "C" fn record_fill(
    stream: c::Handle,
    batch: u32,
    user_data: *mut c_void,
) -> c::Status {
    // SAFETY: user_data is the test's u64 holding a live block's address.
    let y = unsafe { *(user_data as *const u64) } as *mut f32;
    // SAFETY: a live stream handle and block.
    unsafe { (c::api().gc_op_fill)(stream, y, 1024, batch as f32) }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn runner_calls_at_once() {
    let api = c::api();
    let w = c::World::new(4096);
    let mut runner = std::ptr::null_mut();
    // SAFETY: a live context and pool; an out-pointer to a local.
    c::ok(
        unsafe { (api.gc_runner_create)(w.ctx, w.pool, &mut runner) },
        "gc_runner_create",
    );
    let y_addr: &'static u64 = Box::leak(Box::new(w.block as u64));
    let capture = move |r: c::H, sizes: &[u32]| {
        // SAFETY: a live runner; the record function fills the live block.
        let s = unsafe {
            (c::api().gc_runner_capture)(
                r.get(),
                sizes.as_ptr(),
                sizes.len(),
                Some(record_fill),
                y_addr as *const u64 as *mut c_void,
                0,
            )
        };
        c::ok(s, "gc_runner_capture");
    };
    let (r, s) = (c::H(runner), c::H(w.stream));
    capture(r, &[4, 8]);
    let replay = move |rows: u32| {
        let mut bucket = 0u32;
        // SAFETY: a live runner and stream.
        c::ok(
            unsafe { (c::api().gc_runner_replay)(r.get(), rows, s.get(), &mut bucket) },
            "gc_runner_replay",
        );
        assert!(bucket >= rows);
    };
    pair(
        "gc_runner_replay x gc_runner_stats",
        move |_| replay(3),
        move |_| {
            let mut st = c::RunnerStats {
                struct_size: std::mem::size_of::<c::RunnerStats>(),
                ..Default::default()
            };
            // SAFETY: a live runner; `st` is a gc_runner_statistics.
            c::ok(
                unsafe { (c::api().gc_runner_stats)(r.get(), &mut st) },
                "gc_runner_stats",
            );
            assert!(st.bucket_count >= 2);
        },
    );
    // Two buckets replayed at once on one stream (the pool's rule).
    pair(
        "gc_runner_replay x gc_runner_replay (two buckets)",
        move |_| replay(4),
        move |_| replay(7),
    );
    // Captures of new buckets while replays run: a replay waits for the
    // capture, never fails. At most 16 buckets: captures stop at 14.
    let next = Arc::new(AtomicU64::new(16));
    pair(
        "gc_runner_capture x gc_runner_replay",
        move |_| {
            let b = next.fetch_add(16, Ordering::Relaxed) as u32;
            if b <= 16 * 12 {
                capture(r, &[b]);
            }
        },
        move |i| replay(if i % 2 == 0 { 2 } else { 8 }),
    );
    // The last replay (bucket 8) filled y with 8.
    replay(8);
    let v = w.read_floats(1024);
    assert!(v.iter().all(|&x| x == 8.0), "{}", v[0]);
    // SAFETY: a live runner, destroyed once.
    c::ok(
        unsafe { (api.gc_runner_destroy)(runner) },
        "gc_runner_destroy",
    );
    w.destroy("the runner's graphs gave their memory back");
}

/// gc_cache_launch's record function: key `[k]` fills the 1024 floats at
/// `user_data` (a block's address) + k * 4096 bytes with k + 1.
unsafe extern "C" fn record_key(
    stream: c::Handle,
    key: *const c_void,
    _len: usize,
    user_data: *mut c_void,
) -> c::Status {
    // SAFETY: keys of this test are one byte.
    let k = unsafe { *(key as *const u8) } as usize;
    let y = (user_data as usize + k * 4096) as *mut f32;
    // SAFETY: a live stream handle; y lies in the test's live block.
    unsafe { (c::api().gc_op_fill)(stream, y, 1024, (k + 1) as f32) }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cache_launches_at_once() {
    const HIT: i32 = 0;
    const MISS: i32 = 1;
    let api = c::api();
    // 200 keys' buffers.
    let w = c::World::new(200 * 4096);
    let mut cache = std::ptr::null_mut();
    // SAFETY: a live context; an out-pointer to a local.
    c::ok(
        unsafe { (api.gc_cache_create)(w.ctx, std::ptr::null(), &mut cache) },
        "gc_cache_create",
    );
    let (ch, sh, yh) = (c::H(cache), c::H(w.stream), c::H(w.block));
    // Every launch on the one stream (the entries share the cache's pool).
    let launch = move |k: u8| -> i32 {
        let mut outcome = -1;
        // SAFETY: a live cache and stream; a one-byte key; the record
        // function writes the test's live block.
        let s = unsafe {
            (c::api().gc_cache_launch)(
                ch.get(),
                &k as *const u8 as *const c_void,
                1,
                sh.get(),
                std::ptr::null(),
                0,
                Some(record_key),
                yh.get(),
                &mut outcome,
            )
        };
        c::ok(s, "gc_cache_launch");
        outcome
    };
    assert_eq!(launch(0), MISS);
    pair(
        "gc_cache_launch x gc_cache_launch (hits of one key)",
        move |_| assert_eq!(launch(0), HIT),
        move |_| assert_eq!(launch(0), HIT),
    );
    let hits = Arc::new(AtomicUsize::new(0));
    let h2 = hits.clone();
    pair(
        "gc_cache_launch x gc_cache_launch (misses of new keys, hits of another)",
        // 199 keys through a cache of 64 entries: misses and evictions.
        move |i| {
            let o = launch(1 + (i % 199) as u8);
            assert!(o == HIT || o == MISS, "{o}");
        },
        move |_| {
            let o = launch(0);
            assert!(o == HIT || o == MISS, "{o}");
            if o == HIT {
                h2.fetch_add(1, Ordering::Relaxed);
            }
        },
    );
    assert!(
        hits.load(Ordering::Relaxed) > 0,
        "key 0 never hit while other keys missed"
    );
    // Key 0's 1024 floats.
    let v = w.read_floats(1024);
    assert!(v.iter().all(|&x| x == 1.0), "{}", v[0]);
    // SAFETY: a live cache, destroyed once.
    c::ok(unsafe { (api.gc_cache_destroy)(cache) }, "gc_cache_destroy");
    w.destroy("the cache's entries gave their memory back");
}
