//! The only place with `unsafe`: httpd/APR bindings, safe wrappers for
//! request, pool, table, brigade, file and log, and the module symbol.
pub mod ffi;
