fn main() {
    // The practice sites and bundled tasks are embedded with include_dir, which does not
    // tell cargo about the files it reads.
    println!("cargo:rerun-if-changed=sites");
    println!("cargo:rerun-if-changed=bundled");
}
