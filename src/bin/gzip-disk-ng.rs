//! `gzip-disk-ng`: the publish tool that makes and checks siblings (the
//! code is crates/cli).

fn main() -> std::process::ExitCode {
    gdn_cli::main()
}
