//! kseg's one version number is `__version__` in kseg/__init__.py (pyproject.toml reads it too):
//! the kernel reports the same one (`VERSION`, in `kseg --version`), taken from there at build
//! time, so a kernel built from other sources than the Python beside it shows it.

use std::fs;

fn main() {
    let init = "../kseg/__init__.py";
    println!("cargo:rerun-if-changed={init}");
    let text = fs::read_to_string(init).expect("kseg/__init__.py beside kernel/");
    let version = text
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix("__version__ = \"")?;
            Some(rest.split('"').next()?.to_string())
        })
        .expect("__version__ = \"...\" in kseg/__init__.py");
    println!("cargo:rustc-env=KSEG_VERSION={version}");
}
