//! The graph memory pool: the allocator logic (`logic/`: pure, no CUDA
//! calls; its module doc tells the rules), the device-backed [`Pool`]
//! over it (`device.rs`: the reserved address range, page mapping, graph
//! memory holds, peer access), and the range checks copies and sets make
//! against live pool blocks (`range.rs`).

mod device;
mod logic;
mod range;

pub(crate) use device::{GraphMemory, PoolCapture};
pub use device::{Pool, PoolOptions};
#[cfg(any(test, feature = "model"))]
pub use logic::model;
pub use logic::{
    AllocPlan, Allocator, CaptureId, Footprint, Owner, PagePlan, PageRange, PoolConfig, PoolError,
    PoolStats,
};
pub(crate) use range::{check_device_range, check_pool_range, device_range};
