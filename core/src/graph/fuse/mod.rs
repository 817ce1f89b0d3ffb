//! Elementwise fusion: the plan (pure, on a graph's description), the PTX
//! generated for long chains, and the fused copy of a graph that an exec is
//! instantiated from and updated through.

mod fused;
pub mod jit;
mod plan;

pub(crate) use fused::Fused;
pub use plan::{
    apply, elementwise, generated_args, plan, same_shape, segment_call, Chain, Elementwise,
    FusionPlan, Segment,
};
