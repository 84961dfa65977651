"""Func's Python API, on top of Func in Rust (the `func` program does the work)."""
