//! libgraphcore: the C ABI.
