//! The publish tool behind `gzip-disk-ng`: the command line (`run`,
//! `publish::cli`) and the engine's walks, workers, deltas and reports
//! (`publish`), over the rules and encoders of gdn-core. The binaries are
//! thin entry points in the workspace's root package.
#![deny(unsafe_code, unsafe_op_in_unsafe_fn)]

pub mod publish;
mod run;

pub use run::main;
