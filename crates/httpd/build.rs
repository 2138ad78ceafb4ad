//! Generates the httpd/APR bindings and compiles the C shim for APR macros.
//!
//! The httpd it builds against is named by one thing: `APXS`, the path of
//! that httpd's `apxs` (default: `apxs` on PATH). `apxs -q` gives the
//! include directories and the APR configuration script, so an httpd built
//! from source (`APXS=/usr/local/apache2/bin/apxs`) needs nothing else.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What to install when there is no `apxs`, for each family of systems.
const INSTALL_HINT: &str = "install httpd's development files: `apt-get install apache2-dev` \
    (Debian, Ubuntu) or `dnf install httpd-devel` (RHEL, AlmaLinux, Rocky, Fedora), or name \
    another httpd's apxs with APXS=/path/to/apxs";

/// The words `tool args` prints, split at spaces, newlines and `;`.
fn query(tool: &str, args: &[&str]) -> Result<Vec<String>, String> {
    let out = Command::new(tool)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {tool}: {e}; {INSTALL_HINT}"))?;
    if !out.status.success() {
        return Err(format!(
            "{tool} {} failed: {}; {INSTALL_HINT}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split([';', ' ', '\n'])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect())
}

/// The `apxs` named by APXS (a path, or a name looked up on PATH), else
/// the first `apxs` on PATH; as a path when it can be found, so that cargo
/// re-runs this script when it changes.
fn apxs() -> String {
    let name = env::var("APXS")
        .ok()
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| "apxs".to_owned());
    if name.contains('/') {
        return name;
    }
    env::var_os("PATH")
        .iter()
        .flat_map(env::split_paths)
        .map(|d| d.join(&name))
        .find(|p| p.is_file())
        .map_or(name, |p| p.to_string_lossy().into_owned())
}

/// The APR configuration script of the httpd `apxs` names: APR_CONFIG, or
/// apr-1-config beside APR_BINDIR, or the one on PATH.
fn apr_config(apxs: &str) -> String {
    let named = query(apxs, &["-q", "APR_CONFIG"]).unwrap_or_default();
    if let Some(c) = named.first().filter(|c| Path::new(c).is_file()) {
        return c.clone();
    }
    let bindir = query(apxs, &["-q", "APR_BINDIR"]).unwrap_or_default();
    bindir
        .first()
        .map(|d| Path::new(d).join("apr-1-config"))
        .filter(|p| p.is_file())
        .map_or_else(
            || "apr-1-config".to_owned(),
            |p| p.to_string_lossy().into_owned(),
        )
}

/// A build that cannot find httpd says so in one line, without Debug quotes.
fn main() {
    if let Err(e) = generate() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// The include directories and the APR defines of the httpd that `apxs`
/// names, and the files whose change makes new bindings.
fn httpd_flags() -> Result<(Vec<String>, Vec<String>), String> {
    println!("cargo:rerun-if-env-changed=APXS");
    let apxs = apxs();
    if Path::new(&apxs).is_file() {
        println!("cargo:rerun-if-changed={apxs}");
    }
    let mut includes = Vec::new();
    for var in ["INCLUDEDIR", "APR_INCLUDEDIR", "APU_INCLUDEDIR"] {
        for dir in query(&apxs, &["-q", var])? {
            if !includes.contains(&dir) {
                includes.push(dir);
            }
        }
    }
    // New headers (an httpd or APR update) make new bindings: cargo scans
    // each directory named here for changes.
    for dir in &includes {
        println!("cargo:rerun-if-changed={dir}");
    }
    let defines = query(&apr_config(&apxs), &["--cppflags"])?
        .into_iter()
        .filter(|d| d.starts_with("-D"))
        .collect();
    Ok((includes, defines))
}

fn generate() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-changed=build.rs");
    let (includes, defines) = httpd_flags()?;

    let mut cc = cc::Build::new();
    cc.file("csrc/shim.c")
        .file("csrc/access.c")
        .file("csrc/sections.c")
        .include("csrc")
        .warnings(true);
    for dir in &includes {
        cc.include(dir);
    }
    for d in &defines {
        let body = &d[2..];
        match body.split_once('=') {
            Some((k, v)) => cc.define(k, v),
            None => cc.define(body, None),
        };
    }
    cc.compile("gdn_shim");

    let mut builder = bindgen::Builder::default()
        .header("csrc/wrapper.h")
        .clang_arg("-Icsrc")
        .allowlist_function("(ap|apr|gdn)_.*")
        .allowlist_type("(request_rec|module|command_rec|cmd_parms|etag_rec)")
        .allowlist_var("(AP|APR|APLOG|HTTP|M|OK|DECLINED|DONE|MODULE|OPT|ACCESS|RSRC|OR|ENABLE)_.*")
        .allowlist_var("(OK|DECLINED|DONE)")
        .allowlist_var("ap_unixd_config|ap_conftree|ap_top_module")
        // Each struct's size, alignment and field offsets, as clang laid
        // them out from httpd's headers, asserted where the crate builds.
        .layout_tests(true)
        .derive_default(true)
        .generate_comments(false);
    for dir in &includes {
        builder = builder.clang_arg(format!("-I{dir}"));
    }
    for d in &defines {
        builder = builder.clang_arg(d.clone());
    }
    let bindings = builder
        .generate()
        .map_err(|e| format!("bindgen failed on httpd headers: {e}"))?;
    let out = PathBuf::from(env::var("OUT_DIR")?);
    bindings.write_to_file(out.join("bindings.rs"))?;
    Ok(())
}
