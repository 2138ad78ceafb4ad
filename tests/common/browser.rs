//! Headless Chromium for the browser tests: a certificate for 127.0.0.1,
//! the flag that makes Chromium trust exactly it (as it must before it
//! keeps or uses compression dictionaries), a bounded run dumping the
//! DOM, and text that is a JavaScript string as it is.

use super::data::page;
use super::harness::{skip, Apache};
use std::path::Path;
use std::process::Command;

pub const CHROMIUM: &str = "/usr/bin/chromium";

/// A self-signed certificate and its key for 127.0.0.1 and localhost,
/// written in `dir`: their paths.
pub fn make_cert(dir: &Path) -> (String, String) {
    let key = dir.join("key.pem");
    let cert = dir.join("cert.pem");
    let st = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
        ])
        .args([
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    (cert.display().to_string(), key.display().to_string())
}

/// Headless Chromium loading `url` with the given profile and extra flags;
/// bounded, so a hung browser fails the test instead of the run.
pub fn chromium(profile: &Path, flags: &[&str], url: &str) -> std::process::Output {
    Command::new("timeout")
        .args(["-k", "10", "120", CHROMIUM])
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--dump-dom",
        ])
        .args(flags)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .output()
        .expect("run chromium")
}

/// The flag that makes Chromium trust exactly this certificate, as it
/// must before it keeps or uses compression dictionaries: the base64
/// SHA-256 of its public key.
pub fn trust_flag(cert: &str) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl x509 -in '{cert}' -pubkey -noout | openssl pkey -pubin -outform der \
             | openssl dgst -sha256 -binary | base64"
        ))
        .output()
        .expect("openssl");
    assert!(out.status.success());
    format!(
        "--ignore-certificate-errors-spki-list={}",
        String::from_utf8_lossy(&out.stdout).trim()
    )
}

pub fn chromium_missing() -> bool {
    if Path::new(CHROMIUM).exists() {
        return false;
    }
    // scripts/test installs Debian's chromium; only a bare dev box lacks it.
    skip(&format!(
        "{CHROMIUM} not installed (scripts/test installs it)"
    ));
    true
}

/// Letters and spaces only, so the text is a JavaScript string as it is.
pub fn script_text(seed: u64) -> String {
    page(60_000, seed)
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() {
                b as char
            } else {
                ' '
            }
        })
        .collect()
}

/// Loads `page` in Chromium trusting the test certificate; the DOM.
pub fn load(a: &Apache, profile: &Path, trust: &str, page: &str) -> String {
    let url = format!("https://127.0.0.1:{}/{page}", a.port);
    let out = chromium(profile, &[trust, "--virtual-time-budget=5000"], &url);
    String::from_utf8_lossy(&out.stdout).into_owned()
}
