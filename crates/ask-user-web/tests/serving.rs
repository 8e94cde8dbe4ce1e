//! Serving the page on a real loopback port: a taken default port gives way to a free one, an
//! address a person asked for never does, and the server's notification links point at it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::Ipv4Addr;

use common::Fixture;

#[tokio::test]
async fn a_taken_default_port_gives_way_to_a_free_one_and_an_asked_for_one_does_not() {
    let fixture = Fixture::new(30);
    let taken = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = taken.local_addr().unwrap();
    let error = fixture.web.bind(addr).await.unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse);
    let server = fixture.web.bind_or_free_port(addr).await.unwrap();
    assert_eq!(server.local_addr().ip(), addr.ip());
    assert_ne!(server.local_addr().port(), addr.port());
    // Its page answers, with the surface's token.
    let page = reqwest::get(server.url()).await.unwrap();
    assert!(page.status().is_success(), "{}", page.status());
    server.stop().await;
}

#[tokio::test]
async fn a_free_port_is_served_as_asked() {
    let fixture = Fixture::new(30);
    let free = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = free.local_addr().unwrap();
    drop(free);
    let server = fixture.web.bind_or_free_port(addr).await.unwrap();
    assert_eq!(server.local_addr(), addr);
    // The links a notification carries point at the page served, or at the public URL.
    let links = server.links(None);
    assert_eq!(links.card_url(), Some(format!("http://{addr}/")));
    let public = server.links(Some("https://phone.example/inbox/"));
    assert_eq!(
        public.card_url().as_deref(),
        Some("https://phone.example/inbox/")
    );
    server.stop().await;
}
