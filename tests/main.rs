//! The integration suite: one test binary for the whole workspace.
