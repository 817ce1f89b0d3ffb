//! libgraphcore: the C ABI of graphcore.
//!
//! Every export is a thin wrapper over `graphcore-core`: it checks handles
//! and pointers, runs inside `status::boundary` (errors become statuses
//! and this thread's last error; panics never cross), and writes
//! out-parameters only on success.

#![allow(non_camel_case_types)]
// Exports check every pointer they dereference (NULL → an error), so they are
// safe for C callers that pass valid or NULL pointers, as documented.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod alloc;
mod args;
pub mod cache;
pub mod capture;
pub mod conditional;
pub mod context;
pub mod event;
pub mod exec;
pub mod graph;
mod handle;
pub mod launch;
pub mod memory;
pub mod module;
pub mod ops;
pub mod pool;
pub mod runner;
pub mod status;
pub mod stream;
pub mod version;
