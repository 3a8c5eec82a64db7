//! Exact preprocessing and post-processing (see README.md).
