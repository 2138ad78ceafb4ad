//! `gzip-disk-ng`: the publish tool that makes and checks siblings.
fn main() {
    eprintln!("gzip-disk-ng: not yet implemented");
    std::process::exit(2);
}
