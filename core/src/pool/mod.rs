//! The graph memory pool's allocator logic (pure: no CUDA calls).
