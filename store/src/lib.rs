//! Content-addressed model store (see README.md).
