//! The inbox's socket protocol: any bytes from a peer as the lines of one link, through the
//! inbox's real reader and handlers. Nothing may panic or hang; when the peer's stream ends the
//! link is gone.
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ask_user_inbox::Inbox;
use libfuzzer_sys::fuzz_target;
use pending_answer::NoSessions;
use tokio::io::AsyncWriteExt as _;

struct Fixture {
    runtime: tokio::runtime::Runtime,
    inbox: Inbox,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let inbox = runtime
            .block_on(async { Inbox::new(Arc::new(NoSessions)) })
            .expect("an inbox");
        Fixture { runtime, inbox }
    })
}

fuzz_target!(|data: &[u8]| {
    let fixture = fixture();
    fixture.runtime.block_on(async {
        let (mut peer, theirs) = tokio::io::duplex(4 * 1024 * 1024);
        let served = tokio::spawn({
            let inbox = fixture.inbox.clone();
            async move { inbox.serve_link(theirs).await }
        });
        let _ = peer.write_all(data).await;
        let _ = peer.write_all(b"\n").await;
        let _ = peer.shutdown().await;
        tokio::time::timeout(Duration::from_secs(30), served)
            .await
            .expect("the link ends with its stream")
            .expect("no panic");
        drop(peer);
        assert_eq!(fixture.inbox.links(), 0, "the link is gone");
    });
});
