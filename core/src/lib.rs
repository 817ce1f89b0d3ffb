//! graphcore: a CUDA Graph runtime.
//!
//! A one-way stack of modules (docs/architecture.md draws it; the suite's
//! tests/architecture.rs keeps it): `driver` is the only module that calls
//! CUDA and owns every driver handle; the pool's allocator logic and a
//! graph's description are pure; the rest (contexts, streams, events, pools,
//! copies, modules, graphs, capture, execs, runners) is the safe API the C
//! library wraps. Objects are reference counted: a graph keeps the
//! functions, pool memory and events it uses alive, an exec its graph,
//! everything its context, so nothing in use can be freed.

pub mod arg;
mod bind;
mod builtins;
mod cache;
mod capture;
mod context;
mod copy;
mod driver;
pub mod error;
mod event;
mod exec;
pub mod graph;
mod lock;
mod module;
pub mod pool;
mod runner;
mod stream;
mod timing;
pub mod vendor;

pub use arg::{ArgDecl, Binding};
pub use builtins::{programmatic_launch, set_programmatic_launch};
pub use cache::{
    Cache, CacheOptions, CacheRecord, CacheStats, EntryInfo, Outcome, DEFAULT_NODE_BYTES,
    EXEC_BASE_BYTES,
};
pub use capture::{
    begin_capture, begin_capture_into, declare_capture_arg, declare_capture_rows_arg,
    declare_capture_scalar_arg, end_capture,
};
pub use context::{device_count, driver_version, Context};
pub use copy::{copy_async, set_async, set_elements_async};
pub use driver::conditional::CondType;
pub use driver::stream::CaptureMode;
pub use driver::HostFn;
pub use error::{Error, ErrorKind, Result};
pub use event::Event;
pub use exec::{flags as instantiate_flags, ArgUse, ArgUseKind, Exec};
pub use graph::{ConditionalHandle, Graph, Node};
pub use graphcore_kernels as kernels;
pub use lock::backoff;
pub use module::{launch_op, Function, LaunchConfig, Module};
pub use pool::{Pool, PoolOptions};
pub use runner::{disabled_by_env, Bucket, Fallback, Record, RecordRows, Runner};
pub use stream::Stream;
