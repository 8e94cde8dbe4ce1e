//! The platforms a release names: each Rust target, the npm package that carries its binary
//! (with npm's `os`, `cpu` and `libc`), its wheel tag and its Claude Desktop platform.

/// One platform of the release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Platform {
    /// The Rust target triple.
    pub target: &'static str,
    /// The npm platform package's name after the scope (`linux-x64-gnu`).
    pub npm: &'static str,
    /// npm's `os` (Node's `process.platform`).
    pub os: &'static str,
    /// npm's `cpu` (Node's `process.arch`).
    pub cpu: &'static str,
    /// npm's `libc` (`glibc`, `musl`), for Linux only.
    pub libc: Option<&'static str>,
    /// The binary's file name.
    pub exe: &'static str,
    /// maturin's `--compatibility` for the wheel (`manylinux2014`: glibc 2.17), if any.
    pub wheel: Option<&'static str>,
}

/// Every platform the npm launcher declares. The ones this machine builds are the Linux ones
/// with a Rust target installed; the others are built on their own machines (docs/release.md).
pub const PLATFORMS: &[Platform] = &[
    Platform {
        target: "x86_64-unknown-linux-gnu",
        npm: "linux-x64-gnu",
        os: "linux",
        cpu: "x64",
        libc: Some("glibc"),
        exe: "ask-user",
        wheel: Some("manylinux2014"),
    },
    Platform {
        target: "aarch64-unknown-linux-gnu",
        npm: "linux-arm64-gnu",
        os: "linux",
        cpu: "arm64",
        libc: Some("glibc"),
        exe: "ask-user",
        wheel: Some("manylinux2014"),
    },
    Platform {
        target: "x86_64-unknown-linux-musl",
        npm: "linux-x64-musl",
        os: "linux",
        cpu: "x64",
        libc: Some("musl"),
        exe: "ask-user",
        wheel: Some("musllinux_1_2"),
    },
    Platform {
        target: "aarch64-unknown-linux-musl",
        npm: "linux-arm64-musl",
        os: "linux",
        cpu: "arm64",
        libc: Some("musl"),
        exe: "ask-user",
        wheel: Some("musllinux_1_2"),
    },
    Platform {
        target: "x86_64-apple-darwin",
        npm: "darwin-x64",
        os: "darwin",
        cpu: "x64",
        libc: None,
        exe: "ask-user",
        wheel: None,
    },
    Platform {
        target: "aarch64-apple-darwin",
        npm: "darwin-arm64",
        os: "darwin",
        cpu: "arm64",
        libc: None,
        exe: "ask-user",
        wheel: None,
    },
    Platform {
        target: "x86_64-pc-windows-msvc",
        npm: "win32-x64",
        os: "win32",
        cpu: "x64",
        libc: None,
        exe: "ask-user.exe",
        wheel: None,
    },
];

/// The platform of a target triple.
#[must_use]
pub fn of_target(target: &str) -> Option<&'static Platform> {
    PLATFORMS.iter().find(|p| p.target == target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_platform_has_one_package_and_one_target() {
        for (i, a) in PLATFORMS.iter().enumerate() {
            for b in &PLATFORMS[i + 1..] {
                assert_ne!(a.npm, b.npm);
                assert_ne!(a.target, b.target);
            }
            // The launcher finds a package by `${process.platform}-${process.arch}`, and on
            // Linux its C library.
            let suffix = match a.libc {
                Some("glibc") => "-gnu",
                Some(_) => "-musl",
                None => "",
            };
            assert_eq!(a.npm, format!("{}-{}{suffix}", a.os, a.cpu));
        }
        assert_eq!(
            of_target("x86_64-unknown-linux-gnu").unwrap().npm,
            "linux-x64-gnu"
        );
    }
}
