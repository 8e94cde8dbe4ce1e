//! The page's request bodies: any bytes as the body of an answer (`POST /cards/{call}/answer`,
//! with the page's token) and of a one-time answer button (`?grant=…`, without it), through the
//! page's real routes and guard. Nothing may panic; every request gets a status, 2xx or 4xx.
#![no_main]

use std::sync::OnceLock;

use ask_user_web::{TOKEN_HEADER, WebOptions, WebSurface};
use axum::body::Body;
use axum::http::Request;
use libfuzzer_sys::fuzz_target;
use user_questions::{HostBindings, UserQuestions, UserQuestionsConfig};

struct Fixture {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    token: String,
    _seam: UserQuestions,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let (seam, router, token) = runtime.block_on(async {
            let seam = UserQuestions::new(UserQuestionsConfig::default(), HostBindings::default())
                .expect("the default seam");
            let web = WebSurface::new(&seam, None, WebOptions::default()).expect("a surface");
            let token = web.token().to_owned();
            (seam, web.router(), token)
        });
        Fixture {
            runtime,
            router,
            token,
            _seam: seam,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let fixture = fixture();
    for (uri, token) in [
        ("/cards/call_1/answer", Some(fixture.token.as_str())),
        ("/cards/call_1/answer?grant=0123456789abcdef", None),
        ("/cards/call_1/hold", Some(fixture.token.as_str())),
    ] {
        let mut request = Request::builder()
            .method("POST")
            .uri(uri)
            .header("host", "127.0.0.1:8766")
            .header("content-type", "application/json");
        if let Some(token) = token {
            request = request.header(TOKEN_HEADER, token);
        }
        let request = request.body(Body::from(data.to_vec())).expect("a request");
        let response = fixture.runtime.block_on(tower::ServiceExt::oneshot(
            fixture.router.clone(),
            request,
        ));
        let status = response.expect("the router answers").status();
        assert!(
            status.is_success() || status.is_client_error(),
            "{uri}: {status}"
        );
    }
});
