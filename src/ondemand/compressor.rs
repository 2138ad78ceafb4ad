//! TEMPORARY STUB
use std::io::Read;
use std::path::PathBuf;
pub struct Settings {
    pub root: PathBuf,
    pub max_size: u64,
    pub workers: usize,
    pub levels: crate::publish::encode::Levels,
    pub min_saving: f64,
}
pub enum Level {
    Error,
    Warn,
    Notice,
    Info,
    Debug,
}
pub fn run<R: Read>(_settings: &Settings, _jobs: R, _log: &(dyn Fn(Level, &str) + Sync)) {}
