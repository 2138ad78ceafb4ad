//! Generates the httpd/APR bindings and compiles the C shim for APR macros.
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn query(tool: &str, args: &[&str]) -> Vec<String> {
    let out = Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool} (install apache2-dev): {e}"));
    String::from_utf8_lossy(&out.stdout)
        .split([';', ' ', '\n'])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-changed=build.rs");
    let mut includes = Vec::new();
    for var in ["INCLUDEDIR", "APR_INCLUDEDIR", "APU_INCLUDEDIR"] {
        for dir in query("apxs", &["-q", var]) {
            if !includes.contains(&dir) {
                includes.push(dir);
            }
        }
    }
    let defines: Vec<String> = query("apr-1-config", &["--cppflags"])
        .into_iter()
        .filter(|d| d.starts_with("-D"))
        .collect();

    let mut cc = cc::Build::new();
    cc.file("csrc/shim.c")
        .file("csrc/access.c")
        .file("csrc/literal.c")
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
        .allowlist_var("ap_unixd_config")
        .layout_tests(false)
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
