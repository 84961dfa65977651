//! Test-support code shared by the integration tests and the tools in
//! `src/bin` (test PKI, benchmarks): where the built binaries are, and a
//! guard that owns a running `funcd` and ends it on drop.

pub mod fixture;
pub mod store_conformance;
pub mod swarm;
