//! The overlord's command-line doors, over the engine (`overlord`): each
//! decodes its input, asks the engine, and shows the answer; none is
//! imported by the engine or by another crate's door.
//!
//! - [`cli`] (clap's definition of `func`), [`parse`] (argv into a plan and
//!   a command, Func's and Salt's spellings said) and [`commands`] (one file
//!   per `func` subcommand): `func`.
//! - [`func_transmit`]: Func's JSON/YAML program interface, `func-transmit`
//!   (and `func transmit`).
//! - [`inventory`]: Func's inventory in a git tree, `func-inventory`.
//! - [`build_map`]: the map of relays for `--delegate`, `func-build-map`.

pub mod build_map;
pub mod cli;
pub mod commands;
pub mod display;
pub mod func_transmit;
pub mod globals;
pub mod inventory;
pub mod parse;
