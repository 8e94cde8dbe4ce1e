//! The descriptor limit a server raises for its connection cap (a test binary of its own: it
//! changes the process's soft `RLIMIT_NOFILE`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ask_user_http::{HttpLimits, raise_descriptor_limit};
use nix::sys::resource::{Resource, getrlimit, setrlimit};

#[test]
fn the_soft_descriptor_limit_is_raised_for_the_cap_never_lowered_nor_past_the_hard_one() {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert!(
        hard >= 400,
        "this test needs a hard limit of 400 at least, not {hard}"
    );
    // A low soft limit, as many systems start processes with (1,024; here 200).
    setrlimit(Resource::RLIMIT_NOFILE, 200, hard).unwrap();
    let limits = HttpLimits {
        max_connections: 300,
        ..HttpLimits::default()
    };
    assert_eq!(limits.connection_cap(), 136, "200 descriptors less 64");
    assert_eq!(raise_descriptor_limit(364), Some(364));
    assert_eq!(getrlimit(Resource::RLIMIT_NOFILE).unwrap(), (364, hard));
    assert_eq!(limits.connection_cap(), 300);
    // Never lowered.
    assert_eq!(raise_descriptor_limit(250), Some(364));
    assert_eq!(getrlimit(Resource::RLIMIT_NOFILE).unwrap().0, 364);
    // Never past the hard limit (nor past what the kernel takes: `fs.nr_open`).
    let most = raise_descriptor_limit(usize::MAX).unwrap();
    assert!((364..=usize::try_from(hard).unwrap_or(usize::MAX)).contains(&most));
    assert_eq!(
        usize::try_from(getrlimit(Resource::RLIMIT_NOFILE).unwrap().0).unwrap(),
        most
    );
    setrlimit(Resource::RLIMIT_NOFILE, soft, hard).unwrap();
}
